//! Cast tests: the named entries on edge values, the f16/bf16 SIMD paths
//! against `half`, every `CastGeneric` pair against an independent model of
//! the rules, and in-place casts.

use super::*;
use rand::{Rng, SeedableRng};

use crate::kernels::test_support::{check_variants, identical, LENGTHS};

fn run<S: Copy, D: Copy + Default>(f: unsafe fn(*const S, *mut D, usize), src: &[S]) -> Vec<D> {
    let mut out = vec![D::default(); src.len()];
    // SAFETY: every `f` passed is a cast entry; `src` and `out` hold
    // `src.len()` elements and are distinct.
    unsafe { f(src.as_ptr(), out.as_mut_ptr(), src.len()) };
    out
}

/// [`run`] for an entry that splits over the pool when `par`.
fn run_par<S: Copy, D: Copy + Default>(f: unsafe fn(*const S, *mut D, usize, bool), src: &[S], par: bool) -> Vec<D> {
    let mut out = vec![D::default(); src.len()];
    // SAFETY: as in `run`.
    unsafe { f(src.as_ptr(), out.as_mut_ptr(), src.len(), par) };
    out
}

#[test]
fn float_to_int_truncates_toward_zero_and_saturates() {
    let x = [1.9f32, -1.9, 0.5, -0.5, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e19, -1e19, 2147483648.0, -0.0];
    assert_eq!(run(cast_f32_to_i64, &x), [1, -1, 0, 0, 0, i64::MAX, i64::MIN, i64::MAX, i64::MIN, 2147483648, 0]);
    assert_eq!(run(cast_f32_to_i32, &x), [1, -1, 0, 0, 0, i32::MAX, i32::MIN, i32::MAX, i32::MIN, i32::MAX, 0]);
    let y = [2.999_999_9f64, -7.5, f64::NAN, 1e300, -3e9, 4e9];
    assert_eq!(run(cast_f64_to_i64, &y), [2, -7, 0, i64::MAX, -3_000_000_000, 4_000_000_000]);
    assert_eq!(run(cast_f64_to_i32, &y), [2, -7, 0, i32::MAX, i32::MIN, i32::MAX]);
}

#[test]
fn int_conversions_wrap_or_round_to_nearest_even() {
    assert_eq!(run(cast_i64_to_i32, &[0x1_0000_0005i64, -1, 0x8000_0000, i64::MIN]), [5, -1, i32::MIN, 0]);
    assert_eq!(run(cast_i32_to_i64, &[-5i32, i32::MIN]), [-5, i64::from(i32::MIN)]);
    // 2^24 + 1 is a tie between 2^24 and 2^24 + 2: even wins.
    assert_eq!(run(cast_i64_to_f32, &[16_777_217i64, 16_777_219, -3]), [16_777_216.0, 16_777_220.0, -3.0]);
    for par in [false, true] {
        assert_eq!(run_par(cast_i32_to_f32, &[16_777_217i32, i32::MAX], par), [16_777_216.0, 2_147_483_648.0]);
    }
    // Long enough to split: every element as `as` gives it.
    let ints: Vec<i32> = (0..100_003).map(|i: i32| i.wrapping_mul(2_654_435_761u32 as i32)).collect();
    let want: Vec<f32> = ints.iter().map(|&i| i as f32).collect();
    assert_eq!(run_par(cast_i32_to_f32, &ints, true), want);
    assert_eq!(run(cast_i64_to_f64, &[(1i64 << 53) + 1, -7]), [9_007_199_254_740_992.0, -7.0]);
    assert_eq!(run(cast_i32_to_f64, &[i32::MIN]), [-2_147_483_648.0]);
}

#[test]
fn float_widening_is_exact_and_narrowing_rounds() {
    let w = run(cast_f32_to_f64, &[0.1f32, -0.0, f32::INFINITY, 1e-45]);
    assert_eq!(w[0], f64::from(0.1f32));
    assert_eq!(w[1].to_bits(), (-0.0f64).to_bits());
    assert_eq!(w[2], f64::INFINITY);
    assert_eq!(w[3], f64::from(1e-45f32));
    let n = run(cast_f64_to_f32, &[0.1f64, 1e40, -1e40, 1e-50, f64::NAN]);
    assert_eq!(&n[..4], &[0.1f32, f32::INFINITY, f32::NEG_INFINITY, 0.0]);
    assert!(n[4].is_nan());
}

#[test]
fn bools_are_bytes_compared_with_zero() {
    let bytes = [0u8, 1, 2, 255];
    assert_eq!(run(cast_bool_to_i32, &bytes), [0, 1, 1, 1]);
    assert_eq!(run(cast_bool_to_i64, &bytes), [0, 1, 1, 1]);
    assert_eq!(run(cast_bool_to_f32, &bytes), [0.0, 1.0, 1.0, 1.0]);
    assert_eq!(run(cast_f32_to_bool, &[0.0f32, -0.0, f32::NAN, 1e-45, -3.0]), [0, 0, 1, 1, 1]);
    assert_eq!(run(cast_f64_to_bool, &[-0.0f64, f64::NAN, 5e-324]), [0, 1, 1]);
    assert_eq!(run(cast_i32_to_bool, &[0i32, -1, 256]), [0, 1, 1]);
    assert_eq!(run(cast_i64_to_bool, &[0i64, 1 << 40]), [0, 1]);
}

/// f32 bit patterns that stress rounding: ties, the last value before
/// overflow, subnormal results, NaNs with payloads, plus random patterns.
fn f32_patterns(n: usize) -> Vec<f32> {
    let mut v: Vec<u32> = vec![
        0,
        0x8000_0000,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0xffc0_0001,
        0x7f80_0001,
        0x7fbf_ffff,
        0x7f7f_ffff,
        0x477f_f000,
        0x477f_efff,
        0x477f_f001,
        0x3380_0000,
        0x3300_0000,
        0x3300_0001,
        0x0000_0001,
        0x3f80_8000,
        0x3f81_8000,
        0x3f80_8001,
        0x3f80_1000,
        0x3f80_3000,
        0x3f80_2fff,
        0x3880_0000,
        0x387f_ffff,
        0x3380_1000,
        0x7f7f_8000,
        0x7f7f_7fff,
    ];
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    // A sweep across every exponent, then random patterns.
    v.extend((0..65_536u32).map(|k| k.wrapping_mul(65_537).wrapping_add(k & 0x1fff)));
    while v.len() < n {
        v.push(rng.gen());
    }
    v.into_iter().map(f32::from_bits).collect()
}

/// The f16 conversions of every variant this CPU runs.
fn half_variants() -> Vec<(&'static str, HalfKernels)> {
    HALF_KERNELS.supported()
}

/// The bf16 and 8-bit conversions of every variant this CPU runs.
fn variants() -> Vec<(&'static str, Kernels)> {
    KERNELS.supported()
}

/// Every variant's f16 and bf16 conversions of `data` and of their
/// results back, against `half` bit for bit (NaN payloads included).
fn check_half_variants(data: &[f32], what: &str) {
    let want_h: Vec<f16> = data.iter().map(|&x| f16::from_f32(x)).collect();
    let want_b: Vec<bf16> = data.iter().map(|&x| bf16::from_f32(x)).collect();
    let back_h: Vec<f32> = want_h.iter().map(|h| h.to_f32()).collect();
    let back_b: Vec<f32> = want_b.iter().map(|b| b.to_f32()).collect();
    let (halves, others) = (half_variants(), variants());
    check_variants(
        &want_h,
        &halves,
        |g, w| g.to_bits() == w.to_bits(),
        &format!("f16 {what}"),
        |k| run(k.to_f16, data),
    );
    check_variants(&back_h, &halves, identical, &format!("from f16 {what}"), |k| run(k.from_f16, &want_h));
    check_variants(
        &want_b,
        &others,
        |g, w| g.to_bits() == w.to_bits(),
        &format!("bf16 {what}"),
        |k| run(k.to_bf16, data),
    );
    check_variants(&back_b, &others, identical, &format!("from bf16 {what}"), |k| run(k.from_bf16, &want_b));
}

#[test]
fn f16_and_bf16_paths_match_half_bit_for_bit() {
    let data = f32_patterns(200_000);
    check_half_variants(&data, "of the patterns");
    let h = run(cast_f32_to_f16, &data);
    let b = run(cast_f32_to_bf16, &data);
    for (i, &x) in data.iter().enumerate() {
        assert_eq!(h[i].to_bits(), f16::from_f32(x).to_bits(), "f16 of {:#010x}", x.to_bits());
        assert_eq!(b[i].to_bits(), bf16::from_f32(x).to_bits(), "bf16 of {:#010x}", x.to_bits());
    }
    // Every 16-bit pattern back to f32.
    let all: Vec<u16> = (0..=u16::MAX).collect();
    let hs: Vec<f16> = all.iter().map(|&p| f16::from_bits(p)).collect();
    let bs: Vec<bf16> = all.iter().map(|&p| bf16::from_bits(p)).collect();
    let (want_hf, want_bf): (Vec<f32>, Vec<f32>) =
        (hs.iter().map(|h| h.to_f32()).collect(), bs.iter().map(|b| b.to_f32()).collect());
    check_variants(&want_hf, &half_variants(), identical, "every f16 pattern", |k| run(k.from_f16, &hs));
    check_variants(&want_bf, &variants(), identical, "every bf16 pattern", |k| run(k.from_bf16, &bs));
    let hf = run(cast_f16_to_f32, &hs);
    let bf = run(cast_bf16_to_f32, &bs);
    for p in 0..all.len() {
        assert_eq!(hf[p].to_bits(), hs[p].to_f32().to_bits(), "f16 {p:#06x}");
        assert_eq!(bf[p].to_bits(), bs[p].to_f32().to_bits(), "bf16 {p:#06x}");
    }
    // Round to nearest even at the f16 and bf16 halfway points.
    assert_eq!(
        run(cast_f32_to_f16, &[1.0 + 2f32.powi(-11), 1.0 + 3.0 * 2f32.powi(-11)]),
        [f16::ONE, f16::from_f32(1.0 + 2f32.powi(-9))]
    );
    assert_eq!(
        run(cast_f32_to_bf16, &[f32::from_bits(0x3f80_8000), f32::from_bits(0x3f81_8000)]),
        [bf16::from_bits(0x3f80), bf16::from_bits(0x3f82)]
    );
    assert_eq!(run(cast_f32_to_f16, &[65_520.0f32])[0], f16::INFINITY);
}

#[test]
fn f32_to_8_bits_is_as_for_every_pattern_and_tail() {
    let data = f32_patterns(200_000);
    let special = [255.9f32, 256.0, -0.9, -1.0, 127.5, 128.0, -128.9, -129.0, 0.5, -0.0, 1e30, -1e30];
    for len in LENGTHS.into_iter().chain([data.len()]) {
        let mut x = special.to_vec();
        x.extend_from_slice(&data[..len]);
        let (want_u, want_s): (Vec<u8>, Vec<i8>) =
            (x.iter().map(|&v| v as u8).collect(), x.iter().map(|&v| v as i8).collect());
        check_variants(&want_u, &variants(), |g, w| g == w, &format!("u8, len {len}"), |k| run(k.to_u8, &x));
        check_variants(&want_s, &variants(), |g, w| g == w, &format!("i8, len {len}"), |k| run(k.to_i8, &x));
        for par in [false, true] {
            let (u, s) = (run_par(cast_f32_to_u8, &x, par), run_par(cast_f32_to_i8, &x, par));
            for (i, &v) in x.iter().enumerate() {
                assert_eq!(u[i], v as u8, "u8 of {:#010x} (len {len}, par {par})", v.to_bits());
                assert_eq!(s[i], v as i8, "i8 of {:#010x} (len {len}, par {par})", v.to_bits());
            }
        }
    }
}

#[test]
fn f16_and_bf16_paths_handle_every_tail_length() {
    for &len in &LENGTHS {
        let data = f32_patterns(len.max(70_000))[70_000 - len.min(70_000)..].to_vec();
        let data = &data[..len];
        check_half_variants(data, &format!("len {len}"));
        let h = run(cast_f32_to_f16, data);
        let b = run(cast_f32_to_bf16, data);
        let hb = run(cast_f16_to_f32, &h);
        let bb = run(cast_bf16_to_f32, &b);
        for i in 0..len {
            assert_eq!(h[i].to_bits(), f16::from_f32(data[i]).to_bits(), "len {len} at {i}");
            assert_eq!(b[i].to_bits(), bf16::from_f32(data[i]).to_bits(), "len {len} at {i}");
            assert_eq!(hb[i].to_bits(), h[i].to_f32().to_bits());
            assert_eq!(bb[i].to_bits(), b[i].to_f32().to_bits());
        }
    }
}

// ------------------------------------------- CastGeneric model ----

/// A decoded element: every dtype's value fits one of these exactly.
#[derive(Clone, Copy, Debug)]
enum Val {
    Float(f64),
    Int(i128),
    Bool(bool),
}

fn decode(dt: DType, b: &[u8]) -> Val {
    match dt {
        DType::F32 => Val::Float(f64::from(f32::from_le_bytes(b.try_into().unwrap()))),
        DType::F64 => Val::Float(f64::from_le_bytes(b.try_into().unwrap())),
        DType::F16 => Val::Float(f64::from(f16::from_le_bytes(b.try_into().unwrap()).to_f32())),
        DType::Bf16 => Val::Float(f64::from(bf16::from_le_bytes(b.try_into().unwrap()).to_f32())),
        DType::I8 => Val::Int(i128::from(b[0] as i8)),
        DType::U8 => Val::Int(i128::from(b[0])),
        DType::I16 => Val::Int(i128::from(i16::from_le_bytes(b.try_into().unwrap()))),
        DType::U16 => Val::Int(i128::from(u16::from_le_bytes(b.try_into().unwrap()))),
        DType::I32 => Val::Int(i128::from(i32::from_le_bytes(b.try_into().unwrap()))),
        DType::U32 => Val::Int(i128::from(u32::from_le_bytes(b.try_into().unwrap()))),
        DType::I64 => Val::Int(i128::from(i64::from_le_bytes(b.try_into().unwrap()))),
        DType::U64 => Val::Int(i128::from(u64::from_le_bytes(b.try_into().unwrap()))),
        DType::Bool => Val::Bool(b[0] != 0),
    }
}

/// The integer a value converts to before narrowing: floats truncate
/// toward zero, saturating at `[lo, hi]`, NaN to 0; ints wrap (taken mod
/// 2^bits by the caller); bools are 0/1.
fn to_int(v: Val, lo: i128, hi: i128) -> i128 {
    match v {
        Val::Float(f) if f.is_nan() => 0,
        Val::Float(f) => {
            let t = f.trunc();
            if t <= lo as f64 {
                lo
            } else if t >= hi as f64 {
                hi
            } else {
                t as i128
            }
        }
        Val::Int(i) => i,
        Val::Bool(b) => i128::from(b),
    }
}

/// The f32 a value reaches (one rounding from its exact value).
fn to_f32(v: Val) -> f32 {
    match v {
        Val::Float(f) => f as f32,
        Val::Int(i) => i as f32,
        Val::Bool(b) => f32::from(u8::from(b)),
    }
}

fn encode(dt: DType, v: Val) -> Vec<u8> {
    let wrap = |bits: u32, lo: i128, hi: i128| -> i128 {
        let i = to_int(v, lo, hi);
        let m = i.rem_euclid(1i128 << bits);
        if m >= 1i128 << (bits - 1) && lo < 0 {
            m - (1i128 << bits)
        } else {
            m
        }
    };
    match dt {
        DType::F32 => to_f32(v).to_le_bytes().to_vec(),
        DType::F64 => match v {
            Val::Float(f) => f,
            Val::Int(i) => i as f64,
            Val::Bool(b) => f64::from(u8::from(b)),
        }
        .to_le_bytes()
        .to_vec(),
        DType::F16 => f16::from_f32(to_f32(v)).to_le_bytes().to_vec(),
        DType::Bf16 => bf16::from_f32(to_f32(v)).to_le_bytes().to_vec(),
        DType::I8 => vec![wrap(8, i8::MIN.into(), i8::MAX.into()) as i8 as u8],
        DType::U8 => vec![wrap(8, 0, u8::MAX.into()) as u8],
        DType::I16 => (wrap(16, i16::MIN.into(), i16::MAX.into()) as i16).to_le_bytes().to_vec(),
        DType::U16 => (wrap(16, 0, u16::MAX.into()) as u16).to_le_bytes().to_vec(),
        DType::I32 => (wrap(32, i32::MIN.into(), i32::MAX.into()) as i32).to_le_bytes().to_vec(),
        DType::U32 => (wrap(32, 0, u32::MAX.into()) as u32).to_le_bytes().to_vec(),
        DType::I64 => (wrap(64, i64::MIN.into(), i64::MAX.into()) as i64).to_le_bytes().to_vec(),
        DType::U64 => (wrap(64, 0, u64::MAX.into()) as u64).to_le_bytes().to_vec(),
        DType::Bool => vec![u8::from(match v {
            Val::Float(f) => f != 0.0,
            Val::Int(i) => i != 0,
            Val::Bool(b) => b,
        })],
    }
}

/// Source elements of `dt` covering zero, signs, extremes, NaN, wrapping.
fn source_bytes(dt: DType) -> Vec<u8> {
    let mut out = Vec::new();
    match dt {
        DType::F32 | DType::F64 | DType::F16 | DType::Bf16 => {
            let vals = [
                0.0f64,
                -0.0,
                1.5,
                -1.5,
                2.5,
                -2.7,
                127.9,
                128.0,
                255.5,
                256.0,
                -129.0,
                32768.0,
                -40000.0,
                65504.0,
                1e5,
                3e9,
                -3e9,
                1e19,
                -1e19,
                1e-3,
                1e-40,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                0.1,
                16_777_217.0,
            ];
            for v in vals {
                match dt {
                    DType::F32 => out.extend((v as f32).to_le_bytes()),
                    DType::F64 => out.extend(v.to_le_bytes()),
                    DType::F16 => out.extend(f16::from_f64(v).to_le_bytes()),
                    _ => out.extend(bf16::from_f64(v).to_le_bytes()),
                }
            }
        }
        DType::Bool => out.extend([0u8, 1, 2, 255, 0, 7]),
        _ => {
            let vals: [i128; 14] = [
                0,
                1,
                -1,
                127,
                128,
                -129,
                255,
                256,
                32767,
                -32769,
                16_777_217,
                i32::MAX as i128,
                i64::MIN as i128,
                (1 << 53) + 1,
            ];
            for v in vals {
                let b = (v as i64).to_le_bytes();
                out.extend(&b[..dt.size()]);
            }
        }
    }
    out
}

#[test]
fn cast_generic_follows_the_rules_for_every_pair() {
    for src_dt in DType::ALL {
        let src = source_bytes(src_dt);
        let len = src.len() / src_dt.size();
        for dst_dt in DType::ALL {
            // u64 storage keeps every element aligned.
            let mut s64 = vec![0u64; src.len().div_ceil(8)];
            // SAFETY: `s64` holds at least `src.len()` bytes; `sbytes` is its only
            // live view.
            let sbytes: &mut [u8] = unsafe { std::slice::from_raw_parts_mut(s64.as_mut_ptr().cast(), src.len()) };
            sbytes.copy_from_slice(&src);
            let mut d64 = vec![0u64; (len * dst_dt.size()).div_ceil(8)];
            // SAFETY: `s64` holds `len` `src_dt` elements and `d64` room for `len`
            // `dst_dt` ones, both 8-byte aligned and distinct.
            unsafe { cast_generic(src_dt, dst_dt, s64.as_ptr().cast(), d64.as_mut_ptr().cast(), len) };
            // SAFETY: `d64` holds at least `len * dst_dt.size()` bytes, now written.
            let dbytes: &[u8] = unsafe { std::slice::from_raw_parts(d64.as_ptr().cast(), len * dst_dt.size()) };
            for i in 0..len {
                let v = decode(src_dt, &src[i * src_dt.size()..(i + 1) * src_dt.size()]);
                let want = encode(dst_dt, v);
                let got = &dbytes[i * dst_dt.size()..(i + 1) * dst_dt.size()];
                let both_nan = matches!(dst_dt, DType::F32 | DType::F64 | DType::F16 | DType::Bf16)
                    && matches!(decode(dst_dt, got), Val::Float(f) if f.is_nan())
                    && matches!(decode(dst_dt, &want), Val::Float(f) if f.is_nan());
                assert!(got == want.as_slice() || both_nan, "{src_dt} -> {dst_dt} of {v:?}: {got:?} want {want:?}");
            }
        }
    }
}

#[test]
fn same_size_casts_work_in_place() {
    let x = [1.9f32, -2.5, f32::NAN, 3e9, -0.0];
    let mut buf = x;
    // SAFETY: `buf` holds `buf.len()` 4-byte elements, cast in place (same
    // size, exact alias).
    unsafe { cast_f32_to_i32(buf.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    let ints: Vec<i32> = buf.iter().map(|f| f.to_bits() as i32).collect();
    assert_eq!(ints, [1, -2, 0, i32::MAX, 0]);
    let mut ibuf = [7i32, -16_777_217, 0];
    // SAFETY: `ibuf` holds 3 4-byte elements, cast in place (same size).
    unsafe { cast_i32_to_f32(ibuf.as_ptr(), ibuf.as_mut_ptr().cast(), 3, false) };
    assert_eq!(ibuf.map(|i| f32::from_bits(i as u32)), [7.0, -16_777_216.0, 0.0]);
    // In place over the pool: each chunk is an exact alias of its own.
    let mut long: Vec<i32> = (0..70_001).map(|i| i * 3 - 100_000).collect();
    // SAFETY: `long` holds its length of 4-byte elements, cast in place.
    unsafe { cast_i32_to_f32(long.as_ptr(), long.as_mut_ptr().cast(), long.len(), true) };
    assert!(long.iter().enumerate().all(|(i, &v)| f32::from_bits(v as u32) == (i as i32 * 3 - 100_000) as f32));
    // f64 <-> i64 and f16 <-> bf16 through cast_generic.
    let mut d = [2.75f64, -1e30];
    // SAFETY: `d` holds 2 8-byte elements, cast in place (same size).
    unsafe { cast_generic(DType::F64, DType::I64, d.as_ptr().cast(), d.as_mut_ptr().cast(), 2) };
    assert_eq!(d.map(|f| f.to_bits() as i64), [2, i64::MIN]);
    let mut h = [f16::from_f32(1.0 / 3.0), f16::from_f32(-70.0)];
    // SAFETY: `h` holds 2 2-byte elements, cast in place (same size).
    unsafe { cast_generic(DType::F16, DType::Bf16, h.as_ptr().cast(), h.as_mut_ptr().cast(), 2) };
    assert_eq!(
        h.map(|v| bf16::from_bits(v.to_bits())),
        [bf16::from_f32(f16::from_f32(1.0 / 3.0).to_f32()), bf16::from_f32(-70.0)]
    );
    let mut bytes = [0u8, 200, 1, 128];
    // SAFETY: `bytes` holds 4 one-byte elements, cast in place (same size).
    unsafe { cast_generic(DType::U8, DType::I8, bytes.as_ptr(), bytes.as_mut_ptr(), 4) };
    assert_eq!(bytes.map(|b| b as i8), [0, -56, 1, -128]);
    // SAFETY: as above: 4 one-byte elements in place.
    unsafe { cast_generic(DType::I8, DType::Bool, bytes.as_ptr(), bytes.as_mut_ptr(), 4) };
    assert_eq!(bytes, [0, 1, 1, 1]);
}

#[test]
fn named_entries_agree_with_cast_generic() {
    let f: Vec<f32> = f32_patterns(5000);
    let mut a = vec![0i64; f.len()];
    let mut b = vec![0i64; f.len()];
    // SAFETY: `f`, `a` and `b` hold `f.len()` elements and are distinct.
    unsafe {
        cast_f32_to_i64(f.as_ptr(), a.as_mut_ptr(), f.len());
        cast_generic(DType::F32, DType::I64, f.as_ptr().cast(), b.as_mut_ptr().cast(), f.len());
    }
    assert_eq!(a, b);
    assert_eq!(dtype_rust_type(DType::Bool), "::rlx_runtime::kernels::cast::Bool");
}
