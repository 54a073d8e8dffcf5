//! The generic value syntax of thunk fields, and the conversions between
//! it and each field type.
//!
//! The parser reads every field as a [`Value`] tree; [`FieldValue`] turns
//! it into the field's type (reporting a span on mismatch), and back for
//! the canonical printer. Keeping one value grammar means a new field type
//! needs an impl here, not a parser change.

use crate::dtype::DType;
// `named_fields` below names every field enum of `rlx_core::ops` bare:
// the glob keeps a new field enum from needing an edit here.
#[allow(clippy::wildcard_imports)]
use crate::ops::*;
use crate::span::Span;

/// A field value as written.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    pub kind: ValueKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ValueKind {
    /// A number lexeme, with its sign: `784`, `-1e9`, `0.5`, `-inf`.
    Num(String),
    /// A bare word: a buffer name, `true`, an enum spelling, `none`.
    Ident(String),
    /// `name(args)`: a parameterised enum value such as `leaky_relu(0.1)`.
    Call(String, Vec<Value>),
    /// `[a, b, c]`.
    List(Vec<Value>),
    /// `name+bytes`: a view into a buffer.
    View(String, u64),
    /// `@bytes`: a raw arena offset.
    Raw(u64),
}

impl Value {
    /// A value with no source position, for printing.
    pub fn synthetic(kind: ValueKind) -> Value {
        Value { kind, span: Span::default() }
    }
}

/// A field value that does not fit the field's type.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    pub span: Span,
    pub message: String,
    pub hint: Option<String>,
}

impl FieldError {
    pub fn new(span: Span, message: impl Into<String>) -> FieldError {
        FieldError { span, message: message.into(), hint: None }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> FieldError {
        self.hint = Some(hint.into());
        self
    }
}

/// A type that a thunk field can have.
pub trait FieldValue: Sized {
    /// What a value of this type looks like, for messages: "an integer".
    const EXPECTED: &'static str;
    fn from_value(v: &Value) -> Result<Self, FieldError>;
    fn to_value(&self) -> Value;
}

fn mismatch<T: FieldValue>(v: &Value) -> FieldError {
    FieldError::new(v.span, format!("expected {}, found {}", T::EXPECTED, describe(v)))
}

/// A short description of a value for "found ..." messages.
pub fn describe(v: &Value) -> String {
    match &v.kind {
        ValueKind::Num(s) => format!("number `{}`", shorten(s)),
        ValueKind::Ident(s) => format!("`{}`", shorten(s)),
        ValueKind::Call(s, _) => format!("`{}(...)`", shorten(s)),
        ValueKind::List(_) => "a list".to_string(),
        ValueKind::View(s, o) => format!("view `{s}+{o}`"),
        ValueKind::Raw(o) => format!("raw offset `@{o}`"),
    }
}

impl FieldValue for usize {
    const EXPECTED: &'static str = "a non-negative integer";
    fn from_value(v: &Value) -> Result<Self, FieldError> {
        match &v.kind {
            // All digits but no parse: the only failure left is overflow.
            ValueKind::Num(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => s
                .parse::<usize>()
                .map_err(|_| FieldError::new(v.span, format!("integer `{}` is too large", shorten(s)))),
            _ => Err(mismatch::<usize>(v)),
        }
    }
    fn to_value(&self) -> Value {
        Value::synthetic(ValueKind::Num(self.to_string()))
    }
}

/// Cuts a long lexeme (a megabyte of digits) for messages.
fn shorten(s: &str) -> String {
    const MAX: usize = 40;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// Formats an f32 so that parsing the text gives back the same bits.
pub fn format_f32(x: f32) -> String {
    if x.is_nan() {
        "nan".to_string()
    } else if x.is_infinite() {
        if x > 0.0 {
            "inf".to_string()
        } else {
            "-inf".to_string()
        }
    } else {
        // `{:?}` is the shortest text that round-trips, and always has a
        // `.` or an exponent, so the value reads as a float.
        format!("{x:?}")
    }
}

/// Parses the number syntax of `.sched` files as an f32.
pub fn parse_f32(s: &str) -> Option<f32> {
    match s {
        "inf" => Some(f32::INFINITY),
        "-inf" => Some(f32::NEG_INFINITY),
        "nan" => Some(f32::NAN),
        "-nan" => Some(-f32::NAN),
        _ => {
            let ok = s.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'));
            // A finite literal beyond f32's range is refused, not rounded
            // to infinity: `inf` is written as `inf`.
            match s.parse::<f32>() {
                Ok(x) if ok && x.is_finite() => Some(x),
                _ => None,
            }
        }
    }
}

impl FieldValue for f32 {
    const EXPECTED: &'static str = "a number";
    fn from_value(v: &Value) -> Result<Self, FieldError> {
        let text = match &v.kind {
            ValueKind::Num(s) | ValueKind::Ident(s) => s.as_str(),
            _ => return Err(mismatch::<f32>(v)),
        };
        parse_f32(text).ok_or_else(|| match text.parse::<f64>() {
            Ok(x) if x.is_finite() => FieldError::new(
                v.span,
                format!("`{text}` is outside the f32 range (largest finite magnitude {:e})", f32::MAX),
            )
            .with_hint("write `inf` or `-inf` for an infinite value"),
            _ => mismatch::<f32>(v),
        })
    }
    fn to_value(&self) -> Value {
        Value::synthetic(ValueKind::Num(format_f32(*self)))
    }
}

impl FieldValue for bool {
    const EXPECTED: &'static str = "`true` or `false`";
    fn from_value(v: &Value) -> Result<Self, FieldError> {
        match &v.kind {
            ValueKind::Ident(s) if s == "true" => Ok(true),
            ValueKind::Ident(s) if s == "false" => Ok(false),
            _ => Err(mismatch::<bool>(v)),
        }
    }
    fn to_value(&self) -> Value {
        Value::synthetic(ValueKind::Ident(self.to_string()))
    }
}

impl<T: FieldValue> FieldValue for Vec<T> {
    const EXPECTED: &'static str = "a list `[...]`";
    fn from_value(v: &Value) -> Result<Self, FieldError> {
        match &v.kind {
            ValueKind::List(items) => items.iter().map(T::from_value).collect(),
            _ => Err(mismatch::<Self>(v)),
        }
    }
    fn to_value(&self) -> Value {
        Value::synthetic(ValueKind::List(self.iter().map(T::to_value).collect()))
    }
}

/// `none`, or a value of `T`.
impl<T: FieldValue> FieldValue for Option<T> {
    const EXPECTED: &'static str = "an operand or `none`";
    fn from_value(v: &Value) -> Result<Self, FieldError> {
        match &v.kind {
            ValueKind::Ident(s) if s == "none" => Ok(None),
            _ => T::from_value(v).map(Some),
        }
    }
    fn to_value(&self) -> Value {
        match self {
            None => Value::synthetic(ValueKind::Ident("none".to_string())),
            Some(x) => x.to_value(),
        }
    }
}

/// Field impls for the fieldless named enums.
macro_rules! named_field {
    ($t:ty, $what:literal) => {
        impl FieldValue for $t {
            const EXPECTED: &'static str = $what;
            fn from_value(v: &Value) -> Result<Self, FieldError> {
                match &v.kind {
                    ValueKind::Ident(s) => <$t>::from_name(s).ok_or_else(|| {
                        FieldError::new(v.span, format!("unknown {} `{s}`", $what))
                            .with_hint(format!("expected one of {}", <$t>::names().join(", ")))
                    }),
                    _ => Err(mismatch::<$t>(v)),
                }
            }
            fn to_value(&self) -> Value {
                Value::synthetic(ValueKind::Ident(self.name().to_string()))
            }
        }
    };
}

/// [`named_field!`] for every enum of `rlx_core::field_enum_table!`.
macro_rules! named_fields {
    ($( $(#[$m:meta])* $name:ident as $what:literal { $($body:tt)* } )*) => {
        $( named_field!($name, $what); )*
    };
}

rlx_core::field_enum_table!(named_fields);
named_field!(DType, "dtype");

fn call_value(name: &str, params: &[f32]) -> Value {
    if params.is_empty() {
        Value::synthetic(ValueKind::Ident(name.to_string()))
    } else {
        let args = params.iter().map(|p| p.to_value()).collect();
        Value::synthetic(ValueKind::Call(name.to_string(), args))
    }
}

fn act_from_parts(v: &Value, name: &str, args: &[Value]) -> Result<ActKind, FieldError> {
    let Some(arity) = ActKind::arity(name) else {
        let names: Vec<_> = ActKind::SPELLINGS.iter().map(|(n, _)| *n).collect();
        return Err(FieldError::new(v.span, format!("unknown activation `{name}`"))
            .with_hint(format!("expected one of {}", names.join(", "))));
    };
    if arity != args.len() {
        return Err(FieldError::new(
            v.span,
            format!("activation `{name}` takes {arity} parameter(s), found {}", args.len()),
        ));
    }
    let params = args.iter().map(f32::from_value).collect::<Result<Vec<_>, _>>()?;
    Ok(ActKind::from_parts(name, &params).expect("arity checked above"))
}

impl FieldValue for ActKind {
    const EXPECTED: &'static str = "an activation";
    fn from_value(v: &Value) -> Result<Self, FieldError> {
        match &v.kind {
            ValueKind::Ident(s) => act_from_parts(v, s, &[]),
            ValueKind::Call(s, args) => act_from_parts(v, s, args),
            _ => Err(mismatch::<ActKind>(v)),
        }
    }
    fn to_value(&self) -> Value {
        call_value(self.name(), &self.params())
    }
}

impl FieldValue for MaskKind {
    const EXPECTED: &'static str = "a mask kind";
    fn from_value(v: &Value) -> Result<Self, FieldError> {
        let unknown = |s: &str| {
            FieldError::new(v.span, format!("unknown mask kind `{s}`"))
                .with_hint(format!("expected one of {}", MaskKind::NAMES.join(", ")))
        };
        match &v.kind {
            ValueKind::Ident(s) => match s.as_str() {
                "none" => Ok(MaskKind::None),
                "causal" => Ok(MaskKind::Causal),
                "custom" => Ok(MaskKind::Custom),
                "bias" => Ok(MaskKind::Bias),
                "sliding_window" => Err(FieldError::new(v.span, "`sliding_window` needs its window size")
                    .with_hint("write `sliding_window(W)`")),
                _ => Err(unknown(s)),
            },
            ValueKind::Call(s, args) if s == "sliding_window" => match args.as_slice() {
                [w] => Ok(MaskKind::SlidingWindow(usize::from_value(w)?)),
                _ => Err(FieldError::new(v.span, "`sliding_window` takes one window size")),
            },
            ValueKind::Call(s, _) => Err(unknown(s)),
            _ => Err(mismatch::<MaskKind>(v)),
        }
    }
    fn to_value(&self) -> Value {
        match self {
            MaskKind::SlidingWindow(w) => {
                Value::synthetic(ValueKind::Call("sliding_window".to_string(), vec![w.to_value()]))
            }
            other => Value::synthetic(ValueKind::Ident(other.name().to_string())),
        }
    }
}

fn step_arg(v: &Value) -> Result<StepArg, FieldError> {
    match &v.kind {
        // `in` and digits: `inf` is a number, not input `f`.
        ValueKind::Ident(s) if s.len() > 2 && s.starts_with("in") && s[2..].bytes().all(|b| b.is_ascii_digit()) => s
            [2..]
            .parse::<usize>()
            .map(StepArg::Input)
            .map_err(|_| FieldError::new(v.span, format!("expected `inN` or a number, found `{s}`"))),
        // A number keeps f32's own error (e.g. out of range).
        ValueKind::Num(_) => f32::from_value(v).map(StepArg::Const),
        _ => f32::from_value(v)
            .map(StepArg::Const)
            .map_err(|_| FieldError::new(v.span, format!("expected `inN` or a number, found {}", describe(v)))),
    }
}

impl FieldValue for Step {
    const EXPECTED: &'static str = "a step";
    fn from_value(v: &Value) -> Result<Self, FieldError> {
        if let ValueKind::Call(name, args) = &v.kind {
            let (op_name, reversed) = match BinaryOp::from_name(name) {
                Some(_) => (name.as_str(), false),
                None => match name.strip_prefix('r').and_then(BinaryOp::from_name) {
                    Some(op) if !op.is_commutative() => (&name[1..], true),
                    _ => ("", false),
                },
            };
            if let Some(op) = BinaryOp::from_name(op_name) {
                return match args.as_slice() {
                    [a] => Ok(Step::Binary { op, arg: step_arg(a)?, reversed }),
                    _ => Err(FieldError::new(v.span, format!("step `{name}` takes one argument"))),
                };
            }
        }
        ActKind::from_value(v).map(Step::Act).map_err(|e| {
            e.with_hint("a step is an activation (`relu`), a binary op with an argument (`add(in1)`, `mul(0.5)`), or a reversed one (`rsub(1.0)`)")
        })
    }
    fn to_value(&self) -> Value {
        match self {
            Step::Act(a) => a.to_value(),
            Step::Binary { op, arg, reversed } => {
                let name = if *reversed { format!("r{}", op.name()) } else { op.name().to_string() };
                let arg = match arg {
                    StepArg::Input(i) => Value::synthetic(ValueKind::Ident(format!("in{i}"))),
                    StepArg::Const(c) => c.to_value(),
                };
                Value::synthetic(ValueKind::Call(name, vec![arg]))
            }
        }
    }
}
