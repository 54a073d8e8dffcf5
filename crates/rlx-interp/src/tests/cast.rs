//! Every `Cast` pair through `exec_thunk`, against Rust's `as` (which is
//! the documented rule for these pairs) and `half`; the pairs with an
//! entry of their own against the generic element loop.

use super::elementwise::{at, Arena};
use half::{bf16, f16};
use rlx_sched::call::CastElem;
use rlx_sched::thunk::Cast;
use rlx_sched::{DType, KernelCall, Params, Thunk};

const F32S: [f32; 8] = [1.9, -1.9, f32::NAN, f32::INFINITY, -3e9, 0.0, -0.0, 1.0 / 3.0];
const F64S: [f64; 6] = [2.5, -2.5, f64::NAN, 1e300, -0.0, 1e-310];
const I64S: [i64; 6] = [0, -1, i64::MAX, i64::MIN, 0x1_0000_0007, 16_777_217];
const I32S: [i32; 5] = [0, -1, i32::MAX, i32::MIN, 16_777_219];
const BOOLS: [u8; 4] = [0, 1, 2, 255];

/// Runs a `Cast` from `from` to `to` over `src`.
fn run<S: Copy, D: Copy + Default>(from: DType, to: DType, src: &[S]) -> Vec<D> {
    let mut a = Arena::new(512);
    a.put(0, src);
    a.run(Thunk::Cast(Cast { src: at(0), dst: at(256), len: src.len(), from, to }));
    a.get::<D>(256, src.len())
}

macro_rules! check {
    ($from:ident -> $to:ident, $src:expr, $d:ty, |$x:ident| $want:expr) => {{
        let got: Vec<$d> = run(DType::$from, DType::$to, &$src);
        for (g, $x) in got.iter().zip($src) {
            let w: $d = $want;
            assert!(
                format!("{g:?}") == format!("{w:?}"),
                "{} -> {}: {:?} -> {g:?}, want {w:?}",
                stringify!($from),
                stringify!($to),
                $x
            );
        }
    }};
}

#[test]
fn every_cast_pair_with_an_entry_of_its_own() {
    check!(F32 -> I64, F32S, i64, |x| x as i64);
    check!(F32 -> F64, F32S, f64, |x| f64::from(x));
    check!(F64 -> F32, F64S, f32, |x| x as f32);
    check!(F64 -> I64, F64S, i64, |x| x as i64);
    check!(F64 -> I32, F64S, i32, |x| x as i32);
    check!(F64 -> Bool, F64S, u8, |x| u8::from(x != 0.0));
    check!(I64 -> I32, I64S, i32, |x| x as i32);
    check!(I64 -> F64, I64S, f64, |x| x as f64);
    check!(I32 -> F64, I32S, f64, |x| f64::from(x));
    check!(F32 -> F16, F32S, u16, |x| f16::from_f32(x).to_bits());
    check!(F32 -> Bf16, F32S, u16, |x| bf16::from_f32(x).to_bits());
    check!(F32 -> I32, F32S, i32, |x| x as i32);
    check!(I64 -> F32, I64S, f32, |x| x as f32);
    check!(Bool -> I32, BOOLS, i32, |x| i32::from(x != 0));
    check!(I32 -> F32, I32S, f32, |x| x as f32);
    check!(I32 -> I64, I32S, i64, |x| i64::from(x));
    check!(I32 -> Bool, I32S, u8, |x| u8::from(x != 0));
    check!(I64 -> Bool, I64S, u8, |x| u8::from(x != 0));
    check!(Bool -> I64, BOOLS, i64, |x| i64::from(x != 0));
    check!(Bool -> F32, BOOLS, f32, |x| if x != 0 { 1.0 } else { 0.0 });
    check!(F32 -> Bool, F32S, u8, |x| u8::from(x != 0.0));
    let halves: Vec<u16> = F32S.iter().map(|&x| f16::from_f32(x).to_bits()).collect();
    check!(F16 -> F32, halves, f32, |x| f16::from_bits(x).to_f32());
    let bhalves: Vec<u16> = F32S.iter().map(|&x| bf16::from_f32(x).to_bits()).collect();
    check!(Bf16 -> F32, bhalves, f32, |x| bf16::from_bits(x).to_f32());
}

#[test]
fn casts_in_place_and_across_sizes() {
    let mut a = Arena::new(256);
    a.put(0, &[1.5f32, -7.9, f32::NAN]);
    a.run(Thunk::Cast(Cast { src: at(0), dst: at(0), len: 3, from: DType::F32, to: DType::I32 }));
    assert_eq!(a.get::<i32>(0, 3), [1, -7, 0]);
    a.put(0, &[300i16, -2, 255]);
    a.run(Thunk::Cast(Cast { src: at(0), dst: at(64), len: 3, from: DType::I16, to: DType::U8 }));
    assert_eq!(a.get::<u8>(64, 3), [44, 254, 255]);
    a.run(Thunk::Cast(Cast { src: at(64), dst: at(128), len: 3, from: DType::U8, to: DType::Bf16 }));
    assert_eq!(
        a.get::<u16>(128, 3),
        [bf16::from_f32(44.0), bf16::from_f32(254.0), bf16::from_f32(255.0)].map(|b| b.to_bits())
    );
}

fn cast_elem(d: DType) -> CastElem {
    match d {
        DType::F32 => CastElem::F32,
        DType::F64 => CastElem::F64,
        DType::F16 => CastElem::F16,
        DType::Bf16 => CastElem::Bf16,
        DType::I8 => CastElem::I8,
        DType::U8 => CastElem::U8,
        DType::I16 => CastElem::I16,
        DType::U16 => CastElem::U16,
        DType::I32 => CastElem::I32,
        DType::U32 => CastElem::U32,
        DType::I64 => CastElem::I64,
        DType::U64 => CastElem::U64,
        DType::Bool => CastElem::Bool,
    }
}

/// Whatever entry a pair lowers to, its bits are the generic loop's: so
/// the named entries are a speed choice only, and a schedule written with
/// any spelling computes the same.
#[test]
fn every_pair_gives_the_generic_loops_bits() {
    let params = Params { mask_threshold: 0.5, mask_neg_inf: -1e9, score_skip: 0.0 };
    // 64 bytes of varied patterns: every type reads some NaNs, infinities,
    // large, small and negative values out of them.
    let bytes: Vec<u8> = (0..64u32).map(|i| (i.wrapping_mul(0x9E37_79B9) >> 24) as u8 ^ (i as u8)).collect();
    let types = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::Bf16,
        DType::I8,
        DType::U8,
        DType::I16,
        DType::U16,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::U64,
        DType::Bool,
    ];
    for from in types {
        for to in types {
            let len = 64 / from.size().max(to.size());
            let mut src = bytes.clone();
            if from == DType::Bool {
                src.iter_mut().for_each(|b| *b &= 1);
            }
            let thunk = Cast { src: at(0), dst: at(64), len, from, to };
            let mut via_kind = Arena::new(128);
            via_kind.put(0, &src);
            via_kind.run(Thunk::Cast(thunk.clone()));
            let generic =
                KernelCall::CastSlice { from: cast_elem(from), to: cast_elem(to), src: at(0), dst: at(64), len };
            let mut via_loop = Arena::new(128);
            via_loop.put(0, &src);
            via_loop.call(&generic, params);
            assert_eq!(
                via_kind.get::<u8>(64, len * to.size()),
                via_loop.get::<u8>(64, len * to.size()),
                "{from:?} -> {to:?} lowers to {:?}",
                rlx_sched::lower(&Thunk::Cast(thunk), &params).map(|c| c.name())
            );
        }
    }
}
