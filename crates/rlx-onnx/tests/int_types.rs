//! The element types held in their own type and computed wider: `INT8`,
//! `UINT8`, `INT16`, `UINT16`, `UINT32`, `UINT64` (ops run on i64 copies,
//! results cast back) and `DOUBLE` (computed in f32). Each case is a small
//! ONNX graph imported, validated and run in the interpreter, compared with
//! the wrapping arithmetic of the narrow type written out here.

use crate::common::typed::*;
use crate::common::*;
use rlx_onnx::proto::*;
use rlx_onnx::ImportOptions;
use rlx_sched::DType;

fn data(name: &'static str, t: T) -> In {
    In::Data(name, t)
}

#[test]
fn narrow_arithmetic_wraps_in_its_own_type() {
    // (type, op, a, b, a op b in the type)
    type Case = (DType, &'static str, Vec<i64>, Vec<i64>, Vec<i64>);
    let cases: [Case; 5] = [
        (DType::U8, "Add", vec![250, 3, 255], vec![10, 4, 1], vec![4, 7, 0]),
        (DType::I8, "Mul", vec![100, -128, 7], vec![2, -1, -3], vec![-56, -128, -21]),
        (DType::U16, "Sub", vec![1, 65535, 9], vec![2, 0, 9], vec![65535, 65535, 0]),
        (DType::I16, "Div", vec![-7, 32767, -32768], vec![2, -1, -1], vec![-3, -32767, -32768]),
        (DType::U32, "Mul", vec![4_000_000_000, 3, 65536], vec![2, 5, 65536], vec![3_705_032_704, 15, 0]),
    ];
    for (d, op, a, b, want) in cases {
        let got = one(&format!("{d}-{op}"), op, vec![data("a", ints(d, &[3], a)), data("b", ints(d, &[3], b))], vec![]);
        assert_eq!(got, ints(d, &[3], want), "{d} {op}");
    }
}

#[test]
fn each_op_wraps_before_the_next_reads_it() {
    // (250 + 10) wraps to 4 in uint8, then halves to 2 (not 130).
    let out = run_graph(
        "u8-chain",
        vec![node("Add", "add", &["a", "b"], &["s"], vec![]), node("Div", "half", &["s", "two"], &["y"], vec![])],
        vec![
            data("a", ints(DType::U8, &[2], vec![250, 100])),
            data("b", ints(DType::U8, &[2], vec![10, 20])),
            In::Init("two", ints(DType::U8, &[], vec![2])),
        ],
        &["y", "s"],
    );
    assert_eq!(out[0], ints(DType::U8, &[2], vec![2, 60]));
    assert_eq!(out[1], ints(DType::U8, &[2], vec![4, 120]));
}

#[test]
fn comparisons_and_extremes_see_unsigned_values() {
    let big = ints(DType::U32, &[3], vec![4_000_000_000, 1, 7]);
    let got = one(
        "u32-greater",
        "Greater",
        vec![data("a", big.clone()), In::Init("b", ints(DType::U32, &[], vec![5]))],
        vec![],
    );
    assert_eq!(got, bools(&[3], vec![true, false, true]));
    let got = one("u32-max", "Max", vec![data("a", big), In::Init("b", ints(DType::U32, &[], vec![5]))], vec![]);
    assert_eq!(got, ints(DType::U32, &[3], vec![4_000_000_000, 5, 7]));
    let out = run_graph(
        "u8-topk",
        vec![node("TopK", "top", &["a", "k"], &["v", "i"], vec![])],
        vec![data("a", ints(DType::U8, &[3], vec![3, 200, 9])), In::Init("k", i64s(&[1], vec![2]))],
        &["v", "i"],
    );
    assert_eq!(out[0], ints(DType::U8, &[2], vec![200, 9]));
    assert_eq!(out[1], i64s(&[2], vec![1, 2]), "the indices keep their own type");
}

#[test]
fn shifts_by_the_width_or_more_give_zero() {
    let shift = |d: DType, dir: &str, x: Vec<i64>, by: Vec<i64>| {
        let n = x.len();
        one(
            &format!("shift-{d}-{dir}"),
            "BitShift",
            vec![data("x", ints(d, &[n], x)), data("y", ints(d, &[n], by))],
            vec![attr_s("direction", dir)],
        )
    };
    assert_eq!(
        shift(DType::U8, "LEFT", vec![1, 1, 3, 255, 1], vec![0, 7, 7, 8, 70]),
        ints(DType::U8, &[5], vec![1, 128, 128, 0, 0])
    );
    assert_eq!(
        shift(DType::U32, "RIGHT", vec![4_000_000_000, 4_000_000_000, 5], vec![31, 32, 100]),
        ints(DType::U32, &[3], vec![1, 0, 0])
    );
    assert_eq!(
        shift(DType::U64, "LEFT", vec![1, 1, 1, 3], vec![63, 64, 65, 62]),
        ints(DType::U64, &[4], vec![i64::MIN, 0, 0, (3u64 << 62) as i64])
    );
}

#[test]
fn bitwise_ops_keep_the_low_bits() {
    let a = ints(DType::U8, &[3], vec![0b1100, 255, 0]);
    let b = ints(DType::U8, &[3], vec![0b1010, 15, 0]);
    for (op, want) in [("BitwiseAnd", vec![8, 15, 0]), ("BitwiseOr", vec![14, 255, 0]), ("BitwiseXor", vec![6, 240, 0])]
    {
        let got = one(&format!("u8-{op}"), op, vec![data("a", a.clone()), data("b", b.clone())], vec![]);
        assert_eq!(got, ints(DType::U8, &[3], want), "{op}");
    }
    let got = one("i16-not", "BitwiseNot", vec![data("a", ints(DType::I16, &[2], vec![0, -2]))], vec![]);
    assert_eq!(got, ints(DType::I16, &[2], vec![-1, 1]));
    let got = one("u64-not", "BitwiseNot", vec![data("a", ints(DType::U64, &[1], vec![0]))], vec![]);
    assert_eq!(got, ints(DType::U64, &[1], vec![-1]), "u64::MAX as its bits");
}

#[test]
fn uint64_orders_as_unsigned_past_2_pow_63() {
    // As bits: 2^63 + 5 is negative in i64, u64::MAX is -1.
    let big = [(1u64 << 63) as i64 + 5, 3, -1, 1 << 40];
    let small = [7i64, (1u64 << 63) as i64, 2, 1 << 41];
    let u = |v: &[i64]| ints(DType::U64, &[v.len()], v.to_vec());
    let pair = || vec![data("a", u(&big)), data("b", u(&small))];
    let unsigned = |v: i64| v as u64;
    let less: Vec<bool> = big.iter().zip(&small).map(|(&a, &b)| unsigned(a) < unsigned(b)).collect();
    assert_eq!(one("u64-less", "Less", pair(), vec![]), bools(&[4], less.clone()));
    assert_eq!(less, vec![false, true, false, true]);
    let ge: Vec<bool> = less.iter().map(|l| !l).collect();
    assert_eq!(one("u64-ge", "GreaterOrEqual", pair(), vec![]), bools(&[4], ge));
    let max: Vec<i64> = big.iter().zip(&small).map(|(&a, &b)| if unsigned(a) > unsigned(b) { a } else { b }).collect();
    assert_eq!(one("u64-max", "Max", pair(), vec![]), u(&max));
    let min: Vec<i64> = big.iter().zip(&small).map(|(&a, &b)| if unsigned(a) < unsigned(b) { a } else { b }).collect();
    assert_eq!(one("u64-min", "Min", pair(), vec![]), u(&min));
    // u64::MAX (bits -1) is the largest.
    let top = run_graph(
        "u64-topk",
        vec![node("TopK", "n", &["a", "k"], &["v", "i"], vec![])],
        vec![data("a", u(&big)), In::Init("k", i64s(&[1], vec![2]))],
        &["v", "i"],
    );
    assert_eq!(top, vec![u(&[-1, big[0]]), i64s(&[2], vec![2, 0])]);
}

#[test]
fn uint64_is_refused_where_the_sign_bit_would_change_the_result() {
    let m = model(
        vec![node("Div", "div", &["a", "b"], &["y"], vec![])],
        vec![],
        vec![ints(DType::U64, &[2], vec![0; 2]).info("a"), ints(DType::U64, &[2], vec![0; 2]).info("b")],
        vec![ValueInfoProto { name: "y".to_string(), ..Default::default() }],
        18,
    );
    let e = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap_err().to_string();
    assert!(e.contains("UINT64 inputs are not supported") && e.contains("`div`"), "{e}");
}

#[test]
fn casts_reach_and_leave_every_integer_type() {
    let got = one("u8-to-f32", "Cast", vec![data("a", ints(DType::U8, &[2], vec![255, 7]))], vec![attr_i("to", 1)]);
    assert_eq!(got, f(&[2], vec![255.0, 7.0]));
    let got = one(
        "f32-to-i8",
        "Cast",
        vec![data("a", f(&[3], vec![-1.9, 300.0, 2.5]))],
        vec![attr_i("to", i64::from(data_type::INT8))],
    );
    assert_eq!(got, ints(DType::I8, &[3], vec![-1, 127, 2]), "toward zero, saturating");
    let got = one(
        "i64-to-u16",
        "Cast",
        vec![data("a", i64s(&[2], vec![-1, 65537]))],
        vec![attr_i("to", i64::from(data_type::UINT16))],
    );
    assert_eq!(got, ints(DType::U16, &[2], vec![65535, 1]), "int to int keeps the low bits");
}

#[test]
fn movement_and_selection_carry_narrow_values() {
    let x = ints(DType::I8, &[2, 2], vec![-1, 2, -3, 4]);
    let got = one("i8-transpose", "Transpose", vec![data("x", x.clone())], vec![attr_ints("perm", &[1, 0])]);
    assert_eq!(got, ints(DType::I8, &[2, 2], vec![-1, -3, 2, 4]));
    let got = one(
        "u16-where",
        "Where",
        vec![
            data("c", bools(&[2], vec![true, false])),
            data("a", ints(DType::U16, &[2], vec![60000, 1])),
            data("b", ints(DType::U16, &[2], vec![2, 50000])),
        ],
        vec![],
    );
    assert_eq!(got, ints(DType::U16, &[2], vec![60000, 50000]));
    let table = ints(DType::U8, &[3, 2], vec![250, 1, 2, 3, 4, 255]);
    let got = one("u8-gather", "Gather", vec![In::Init("t", table.clone()), data("i", i64s(&[2], vec![2, 0]))], vec![]);
    assert_eq!(got, ints(DType::U8, &[2, 2], vec![4, 255, 250, 1]), "a one-byte table, gathered as bytes");
    let got = one(
        "u16-concat",
        "Concat",
        vec![data("a", ints(DType::U16, &[1], vec![65535])), data("b", ints(DType::U16, &[2], vec![0, 7]))],
        vec![attr_i("axis", 0)],
    );
    assert_eq!(got, ints(DType::U16, &[3], vec![65535, 0, 7]));
    let got = one(
        "i8-slice",
        "Slice",
        vec![
            data("x", ints(DType::I8, &[4], vec![-1, -2, -3, -4])),
            In::Init("s", i64s(&[1], vec![1])),
            In::Init("e", i64s(&[1], vec![3])),
        ],
        vec![],
    );
    assert_eq!(got, ints(DType::I8, &[2], vec![-2, -3]));
    let got = one("i8-reshape", "Reshape", vec![data("x", x), In::Init("s", i64s(&[1], vec![4]))], vec![]);
    assert_eq!(got, ints(DType::I8, &[4], vec![-1, 2, -3, 4]), "a view, no copy of its own");
}

#[test]
fn doubles_are_computed_in_f32_at_an_f64_interface() {
    let (a, b) = (T::F64(vec![2], vec![1.5, 0.1]), T::F64(vec![2], vec![2.25, 0.2]));
    let m = model(
        vec![node("Add", "add", &["a", "b"], &["y"], vec![])],
        vec![],
        vec![a.info("a"), b.info("b")],
        vec![a.info("y")],
        18,
    );
    let sched = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap().sched_text;
    assert!(sched.contains("a: f64[2]") && sched.contains("y: f64[2]"), "{sched}");
    let got = run_model("f64-add", &m, &[("a", a.bytes()), ("b", b.bytes())], &["y"]).remove(0);
    // 0.1 and 0.2 are rounded to f32 on the way in and added in f32.
    let sum = f64::from(0.1f64 as f32 + 0.2f64 as f32);
    assert_eq!(got, T::F64(vec![2], vec![3.75, sum]));
}

#[test]
fn tile_repeats_and_bit_cast_reinterprets() {
    let got = one(
        "u8-tile",
        "Tile",
        vec![data("x", ints(DType::U8, &[1, 2], vec![7, 250])), In::Init("r", i64s(&[2], vec![2, 3]))],
        vec![],
    );
    assert_eq!(got, ints(DType::U8, &[2, 6], [7, 250].repeat(6)));
    let got = one(
        "f32-bits",
        "BitCast",
        vec![data("x", f(&[2], vec![1.0, -0.0]))],
        vec![attr_i("to", i64::from(data_type::INT32))],
    );
    assert_eq!(got, i32s(&[2], vec![1.0f32.to_bits() as i32, (-0.0f32).to_bits() as i32]));
    let got = one(
        "bool-bits",
        "BitCast",
        vec![data("x", bools(&[2], vec![true, false]))],
        vec![attr_i("to", i64::from(data_type::UINT8))],
    );
    assert_eq!(got, ints(DType::U8, &[2], vec![1, 0]));
    // FLOAT16 is computed in f32 here: its bits are not at hand.
    let m = model(
        vec![node("BitCast", "bc", &["x"], &["y"], vec![attr_i("to", i64::from(data_type::FLOAT16))])],
        vec![],
        vec![ints(DType::I16, &[2], vec![0; 2]).info("x")],
        vec![ValueInfoProto { name: "y".to_string(), ..Default::default() }],
        18,
    );
    let e = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap_err().to_string();
    assert!(e.contains("attribute `to` is FLOAT16"), "{e}");
}

#[test]
fn running_sums_and_products_are_exact_on_integers() {
    let axis = || In::Init("axis", i64s(&[], vec![1]));
    // i64 past 2^53, where an f32 or f64 running sum would round.
    let big = (1i64 << 53) + 1;
    let got = one("cumsum-i64", "CumSum", vec![data("x", i64s(&[1, 3], vec![big, 2, 2])), axis()], vec![]);
    assert_eq!(got, i64s(&[1, 3], vec![big, big + 2, big + 4]));
    // i32 wraps as the type would; reverse and exclusive.
    let got = one(
        "cumsum-i32",
        "CumSum",
        vec![data("x", i32s(&[1, 3], vec![i32::MAX, 1, 5])), axis()],
        vec![attr_i("reverse", 1), attr_i("exclusive", 1)],
    );
    assert_eq!(got, i32s(&[1, 3], vec![6, 5, 0]));
    let got = one("cumsum-i32-wrap", "CumSum", vec![data("x", i32s(&[1, 2], vec![i32::MAX, 1])), axis()], vec![]);
    assert_eq!(got, i32s(&[1, 2], vec![i32::MAX, i32::MIN]));
    // Products: f32, and u8 wrapping modulo 256 after each step.
    let got =
        one("cumprod-f32", "CumProd", vec![data("x", f(&[2, 3], vec![1.5, 2.0, -4.0, 0.5, 0.5, 8.0])), axis()], vec![]);
    assert_eq!(got, f(&[2, 3], vec![1.5, 3.0, -12.0, 0.5, 0.25, 2.0]));
    let got = one("cumprod-u8", "CumProd", vec![data("x", ints(DType::U8, &[1, 3], vec![16, 16, 3])), axis()], vec![]);
    assert_eq!(got, ints(DType::U8, &[1, 3], vec![16, 0, 0]));
}

#[test]
fn clip_of_integers_bounds_exactly() {
    let x = || data("x", ints(DType::I8, &[4], vec![-128, -3, 5, 127]));
    let lo = || In::Init("lo", ints(DType::I8, &[], vec![-4]));
    let hi = || In::Init("hi", ints(DType::I8, &[], vec![4]));
    assert_eq!(one("clip-i8", "Clip", vec![x(), lo(), hi()], vec![]), ints(DType::I8, &[4], vec![-4, -3, 4, 4]));
    let got = run_graph(
        "clip-i8-max",
        vec![node("Clip", "n", &["x", "", "hi"], &["out"], vec![])],
        vec![x(), hi()],
        &["out"],
    );
    assert_eq!(got, vec![ints(DType::I8, &[4], vec![-128, -3, 4, 4])]);
    let got = one("clip-i64-none", "Clip", vec![data("x", i64s(&[2], vec![i64::MIN, i64::MAX]))], vec![]);
    assert_eq!(got, i64s(&[2], vec![i64::MIN, i64::MAX]));
}
