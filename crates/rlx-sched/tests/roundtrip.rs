//! Printing and parsing are inverse: for random syntactically valid ASTs
//! (every thunk kind, every field type), `parse(print(ast))` gives back the
//! AST modulo spans, and printing is a fixed point.

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, TestRunner};
use rlx_sched::FieldSyntax;

use rlx_sched::ast::{Ast, BufferDecl, Header, OperandRef, Spanned, ThunkDecl, WeightsDecl};
#[allow(clippy::wildcard_imports)]
use rlx_sched::ops::*;
use rlx_sched::parse::is_reserved;
use rlx_sched::thunk::LayerNorm;
use rlx_sched::value::{format_f32, parse_f32, Value, ValueKind};
use rlx_sched::{parse, print, DType, Role, Segment, Span, Thunk, ThunkKind};

/// The `.sched` spellings of each fieldless field enum, by type name: the
/// field enum table expanded once more, so a new enum is generated here
/// without an edit.
macro_rules! field_enum_spellings {
    ($( $(#[$m:meta])* $name:ident as $what:literal { $($body:tt)* } )*) => {
        fn field_enum_spellings(ty: &str) -> Option<Vec<&'static str>> {
            match ty {
                $( stringify!($name) => Some($name::names()), )*
                _ => None,
            }
        }
    };
}
rlx_core::field_enum_table!(field_enum_spellings);

fn num(s: impl Into<String>) -> Value {
    Value::synthetic(ValueKind::Num(s.into()))
}

fn ident(s: impl Into<String>) -> Value {
    Value::synthetic(ValueKind::Ident(s.into()))
}

fn call(name: impl Into<String>, args: Vec<Value>) -> Value {
    Value::synthetic(ValueKind::Call(name.into(), args))
}

fn list(items: Vec<Value>) -> Value {
    Value::synthetic(ValueKind::List(items))
}

fn name() -> impl Strategy<Value = String> {
    "[A-Za-z_][A-Za-z0-9_.]{0,10}".prop_filter("reserved word", |s| !is_reserved(s))
}

/// Any f32, by bits: NaNs, infinities, -0.0 and subnormals included.
fn any_f32() -> impl Strategy<Value = f32> {
    any::<u32>().prop_map(f32::from_bits)
}

/// A usize biased towards the edges.
fn any_usize() -> BoxedStrategy<usize> {
    prop_oneof![0..100usize, Just(usize::MAX), any::<usize>()].boxed()
}

fn f32_value() -> BoxedStrategy<Value> {
    any_f32().prop_map(|x| num(format_f32(x))).boxed()
}

fn comment() -> impl Strategy<Value = String> {
    // The parser trims comments, so generate them trimmed.
    "[^\n]{0,16}".prop_map(|s| s.trim().to_string())
}

fn comments() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(comment(), 0..3)
}

fn operand() -> BoxedStrategy<Value> {
    prop_oneof![
        name().prop_map(ident),
        (name(), 1..=u64::MAX).prop_map(|(n, o)| Value::synthetic(ValueKind::View(n, o))),
        any::<u64>().prop_map(|o| Value::synthetic(ValueKind::Raw(o))),
    ]
    .boxed()
}

fn act() -> BoxedStrategy<Value> {
    select(ActKind::SPELLINGS.to_vec())
        .prop_flat_map(|(name, params)| {
            prop::collection::vec(f32_value(), params.len()).prop_map(move |args| {
                if args.is_empty() {
                    ident(name)
                } else {
                    call(name, args)
                }
            })
        })
        .boxed()
}

fn step() -> BoxedStrategy<Value> {
    let arg = prop_oneof![(0..8usize).prop_map(|i| ident(format!("in{i}"))), f32_value()];
    let binary = (select(BinaryOp::ALL.to_vec()), any::<bool>(), arg).prop_map(|(op, rev, arg)| {
        let name = if rev && !op.is_commutative() { format!("r{}", op.name()) } else { op.name().to_string() };
        call(name, vec![arg])
    });
    prop_oneof![act(), binary].boxed()
}

fn names(all: Vec<&'static str>) -> BoxedStrategy<Value> {
    select(all).prop_map(ident).boxed()
}

/// A value of a field type of the thunk table, by its type name.
fn field_value(ty: &str) -> BoxedStrategy<Value> {
    match ty {
        "Op" => operand(),
        "Ops" => prop::collection::vec(operand(), 0..4).prop_map(list).boxed(),
        "OptOp" => prop_oneof![Just(ident("none")), operand()].boxed(),
        "Dims" => prop::collection::vec(any_usize(), 0..4)
            .prop_map(|d| list(d.into_iter().map(|x| num(x.to_string())).collect()))
            .boxed(),
        "Steps" => prop::collection::vec(step(), 0..4).prop_map(list).boxed(),
        "usize" => any_usize().prop_map(|x| num(x.to_string())).boxed(),
        "f32" => f32_value(),
        "bool" => any::<bool>().prop_map(|b| ident(b.to_string())).boxed(),
        "ActKind" => act(),
        "DType" => names(DType::ALL.iter().map(|d| d.name()).collect()),
        "MaskKind" => prop_oneof![
            names(vec!["none", "causal", "custom", "bias"]),
            any_usize().prop_map(|w| call("sliding_window", vec![num(w.to_string())])),
        ]
        .boxed(),
        other => match field_enum_spellings(other) {
            Some(spellings) => names(spellings),
            None => panic!("field type `{other}` has no generator: extend tests/roundtrip.rs"),
        },
    }
}

fn thunk_of(kind: ThunkKind) -> BoxedStrategy<ThunkDecl> {
    let values: Vec<BoxedStrategy<Value>> = kind.fields().iter().map(|f| field_value(f.ty)).collect();
    (values, comments())
        .prop_map(move |(values, leading_comments)| {
            let fields: Vec<(String, Span, Value)> =
                kind.fields().iter().zip(values).map(|(f, v)| (f.name.to_string(), Span::default(), v)).collect();
            let thunk = Thunk::<OperandRef>::from_fields(kind, &fields, Span::default())
                .unwrap_or_else(|e| panic!("generated {} fields do not convert: {e:?}", kind.name()));
            ThunkDecl {
                thunk,
                span: Span::default(),
                kind_span: Span::default(),
                field_spans: Vec::new(),
                line: 0,
                leading_comments,
                alias: None,
            }
        })
        .boxed()
}

fn any_thunk() -> BoxedStrategy<ThunkDecl> {
    select(ThunkKind::ALL.to_vec()).prop_flat_map(thunk_of).boxed()
}

fn spanned<T: std::fmt::Debug>(s: impl Strategy<Value = T>) -> impl Strategy<Value = Spanned<T>> {
    s.prop_map(|v| Spanned::new(v, Span::default()))
}

fn buffer() -> impl Strategy<Value = BufferDecl> {
    let role = select(vec![Role::Input, Role::Output, Role::Param, Role::Scratch]);
    let segment = select(vec![Segment::Arena, Segment::Weights]);
    (
        role,
        spanned(name()),
        spanned(select(DType::ALL.to_vec())),
        spanned(prop::collection::vec(any_usize(), 0..4)),
        segment,
        spanned(any_usize()),
        comments(),
    )
        .prop_map(|(role, name, dtype, shape, segment, offset, leading_comments)| BufferDecl {
            role,
            name,
            dtype,
            shape,
            segment,
            offset,
            span: Span::default(),
            line: 0,
            leading_comments,
        })
}

fn weights() -> impl Strategy<Value = Option<WeightsDecl>> {
    let decl = (spanned("[^\"\r\n]{0,20}"), spanned("[0-9a-f]{64}")).prop_map(|(path, sha256)| WeightsDecl {
        path,
        sha256,
        span: Span::default(),
    });
    prop::option::of(decl)
}

fn header() -> impl Strategy<Value = Header> {
    (
        spanned(name()),
        spanned(any_usize()),
        spanned(any_usize()),
        weights(),
        (spanned(any_f32()), spanned(any_f32()), spanned(any_f32())),
        comments(),
    )
        .prop_map(
            |(
                model,
                arena_size,
                arena_align,
                weights,
                (mask_threshold, mask_neg_inf, score_skip),
                leading_comments,
            )| {
                Header {
                    version: Spanned::new(1, Span::default()),
                    model,
                    arena_size,
                    arena_align,
                    weights,
                    mask_threshold,
                    mask_neg_inf,
                    score_skip,
                    leading_comments,
                }
            },
        )
}

fn ast_with(thunks: impl Strategy<Value = Vec<ThunkDecl>>) -> impl Strategy<Value = Ast> {
    (header(), prop::collection::vec(buffer(), 0..5), thunks, comments()).prop_map(
        |(header, buffers, thunks, trailing_comments)| Ast {
            header,
            buffers,
            thunks,
            entries: Vec::new(),
            trailing_comments,
        },
    )
}

fn any_ast() -> impl Strategy<Value = Ast> {
    ast_with(prop::collection::vec(any_thunk(), 0..8))
}

/// The AST without positions, printed with `{:?}` so that NaN compares
/// equal to NaN (f32 `==` would not).
fn without_spans(ast: &Ast) -> String {
    let s = |span: &mut Span| *span = Span::default();
    let mut a = ast.clone();
    let h = &mut a.header;
    s(&mut h.version.span);
    s(&mut h.model.span);
    s(&mut h.arena_size.span);
    s(&mut h.arena_align.span);
    s(&mut h.mask_threshold.span);
    s(&mut h.mask_neg_inf.span);
    s(&mut h.score_skip.span);
    if let Some(w) = &mut h.weights {
        s(&mut w.path.span);
        s(&mut w.sha256.span);
        s(&mut w.span);
    }
    for b in &mut a.buffers {
        s(&mut b.name.span);
        s(&mut b.dtype.span);
        s(&mut b.shape.span);
        s(&mut b.offset.span);
        s(&mut b.span);
        b.line = 0;
    }
    for t in &mut a.thunks {
        t.thunk = t
            .thunk
            .clone()
            .map_operands(&mut |_, o: OperandRef| Ok::<_, ()>(OperandRef { target: o.target, span: Span::default() }))
            .expect("infallible");
        s(&mut t.span);
        s(&mut t.kind_span);
        t.field_spans.clear();
        t.line = 0;
    }
    format!("{a:?}")
}

fn check_round_trip(ast: &Ast) -> Result<(), TestCaseError> {
    let text = print(ast);
    prop_assert!(text.ends_with('\n') && !text.ends_with("\n\n"), "output must end with exactly one newline");
    let parsed = match parse(&text) {
        Ok(a) => a,
        Err(d) => {
            return Err(TestCaseError::fail(format!("printed text does not parse:\n{}\n{text}", d.render("p", &text))))
        }
    };
    prop_assert_eq!(print(&parsed), text.clone(), "printing is not a fixed point");
    prop_assert_eq!(without_spans(&parsed), without_spans(ast), "parse(print(ast)) differs from ast:\n{}", text);
    Ok(())
}

proptest! {
    #![proptest_config(Config::with_cases(200))]

    #[test]
    fn print_then_parse_gives_the_ast_back(ast in any_ast()) {
        check_round_trip(&ast)?;
    }

    #[test]
    fn printed_floats_parse_to_the_same_bits(x in any_f32()) {
        let back = parse_f32(&format_f32(x)).expect("printed float parses");
        if x.is_nan() {
            prop_assert!(back.is_nan());
        } else {
            prop_assert_eq!(back.to_bits(), x.to_bits());
        }
    }
}

/// Random thunks rarely hit all kinds in one run; this walks every kind.
#[test]
fn every_kind_round_trips() {
    let mut runner = TestRunner::new(Config { cases: 8, ..Config::default() });
    for kind in ThunkKind::ALL {
        let ast = ast_with(prop::collection::vec(thunk_of(*kind), 1..3));
        runner.run(&ast, |a| check_round_trip(&a)).unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
    }
}

#[test]
fn special_floats_round_trip_bit_exactly() {
    let specials = [
        0.0f32,
        -0.0,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        f32::MAX,
        f32::MIN,
        f32::EPSILON,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -1e9,
        0.1,
        1.0 / 3.0,
    ];
    for x in specials {
        let line = format!("LayerNorm {{ x: a, g: b, b: none, out: c, rows: 1, h: 1, eps: {} }}", format_f32(x));
        let src = format!(
            "rlx-sched 1\nmodel m\narena 64 align 64\nmask_threshold {0}\nmask_neg_inf {0}\nscore_skip {0}\n\n{line}\n",
            format_f32(x)
        );
        let ast = parse(&src).unwrap_or_else(|d| panic!("{}", d.render("f", &src)));
        assert_eq!(print(&ast), src);
        assert_eq!(ast.header.mask_threshold.value.to_bits(), x.to_bits(), "{x:?}");
        let Thunk::LayerNorm(LayerNorm { eps, .. }) = ast.thunks[0].thunk else { panic!("not a LayerNorm") };
        assert_eq!(eps.to_bits(), x.to_bits(), "{x:?}");
    }
    // NaN keeps no sign or payload: every NaN prints as `nan`.
    for (text, printed) in [("nan", "nan"), ("-nan", "nan"), ("inf", "inf"), ("-inf", "-inf")] {
        let x = parse_f32(text).expect("special parses");
        assert_eq!(x.is_nan(), text.ends_with("nan"));
        assert_eq!(format_f32(x), printed);
    }
}
