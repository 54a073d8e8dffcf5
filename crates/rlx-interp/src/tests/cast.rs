//! Every cast kind through `exec_thunk`, against Rust's `as` (which is
//! the documented rule for these pairs) and `half`.

use super::elementwise::{at, Arena};
use half::{bf16, f16};
use rlx_sched::{DType, Operand, Thunk};

const F32S: [f32; 8] = [1.9, -1.9, f32::NAN, f32::INFINITY, -3e9, 0.0, -0.0, 1.0 / 3.0];
const F64S: [f64; 6] = [2.5, -2.5, f64::NAN, 1e300, -0.0, 1e-310];
const I64S: [i64; 6] = [0, -1, i64::MAX, i64::MIN, 0x1_0000_0007, 16_777_217];
const I32S: [i32; 5] = [0, -1, i32::MAX, i32::MIN, 16_777_219];
const BOOLS: [u8; 4] = [0, 1, 2, 255];

/// Runs a named cast kind over `src` and returns `n` output elements.
fn run<S: Copy, D: Copy + Default>(make: fn(Operand, Operand, usize) -> Thunk<Operand>, src: &[S]) -> Vec<D> {
    let mut a = Arena::new(512);
    a.put(0, src);
    a.run(make(at(0), at(256), src.len()));
    a.get::<D>(256, src.len())
}

macro_rules! check {
    ($kind:ident, $src:expr, $d:ty, |$x:ident| $want:expr) => {{
        let got: Vec<$d> = run(|src, dst, len| Thunk::$kind { src, dst, len }, &$src);
        for (g, $x) in got.iter().zip($src) {
            let w: $d = $want;
            assert!(format!("{g:?}") == format!("{w:?}"), "{}: {:?} -> {g:?}, want {w:?}", stringify!($kind), $x);
        }
    }};
}

#[test]
fn every_named_cast_kind() {
    check!(CastF32ToI64, F32S, i64, |x| x as i64);
    check!(CastF32ToF64, F32S, f64, |x| f64::from(x));
    check!(CastF64ToF32, F64S, f32, |x| x as f32);
    check!(CastF64ToI64, F64S, i64, |x| x as i64);
    check!(CastF64ToI32, F64S, i32, |x| x as i32);
    check!(CastF64ToBool, F64S, u8, |x| u8::from(x != 0.0));
    check!(CastI64ToI32, I64S, i32, |x| x as i32);
    check!(CastI64ToF64, I64S, f64, |x| x as f64);
    check!(CastI32ToF64, I32S, f64, |x| f64::from(x));
    check!(CastF32ToF16, F32S, u16, |x| f16::from_f32(x).to_bits());
    check!(CastF32ToBf16, F32S, u16, |x| bf16::from_f32(x).to_bits());
    check!(CastF32ToI32, F32S, i32, |x| x as i32);
    check!(CastI64ToF32, I64S, f32, |x| x as f32);
    check!(CastBoolToI32, BOOLS, i32, |x| i32::from(x != 0));
    check!(CastI32ToF32, I32S, f32, |x| x as f32);
    check!(CastI32ToI64, I32S, i64, |x| i64::from(x));
    check!(CastI32ToBool, I32S, u8, |x| u8::from(x != 0));
    check!(CastI64ToBool, I64S, u8, |x| u8::from(x != 0));
    check!(CastBoolToI64, BOOLS, i64, |x| i64::from(x != 0));
    check!(CastBoolToF32, BOOLS, f32, |x| if x != 0 { 1.0 } else { 0.0 });
    check!(CastF32ToBool, F32S, u8, |x| u8::from(x != 0.0));
    let halves: Vec<u16> = F32S.iter().map(|&x| f16::from_f32(x).to_bits()).collect();
    check!(CastF16ToF32, halves, f32, |x| f16::from_bits(x).to_f32());
    let bhalves: Vec<u16> = F32S.iter().map(|&x| bf16::from_f32(x).to_bits()).collect();
    check!(CastBf16ToF32, bhalves, f32, |x| bf16::from_bits(x).to_f32());
}

#[test]
fn cast_generic_in_place_and_across_sizes() {
    let mut a = Arena::new(256);
    a.put(0, &[1.5f32, -7.9, f32::NAN]);
    a.run(Thunk::CastGeneric { src: at(0), dst: at(0), len: 3, src_dtype: DType::F32, dst_dtype: DType::I32 });
    assert_eq!(a.get::<i32>(0, 3), [1, -7, 0]);
    a.put(0, &[300i16, -2, 255]);
    a.run(Thunk::CastGeneric { src: at(0), dst: at(64), len: 3, src_dtype: DType::I16, dst_dtype: DType::U8 });
    assert_eq!(a.get::<u8>(64, 3), [44, 254, 255]);
    a.run(Thunk::CastGeneric { src: at(64), dst: at(128), len: 3, src_dtype: DType::U8, dst_dtype: DType::Bf16 });
    assert_eq!(
        a.get::<u16>(128, 3),
        [bf16::from_f32(44.0), bf16::from_f32(254.0), bf16::from_f32(255.0)].map(|b| b.to_bits())
    );
}
