//! Activation tests: `crate::math` against independent f64 references, and
//! every kernel path against the scalar kernel bit for bit.

use super::*;
use crate::math;
use rand::{Rng, SeedableRng};
use rlx_sched::ActKind;

/// Every activation, parameterised ones with typical parameters.
pub(crate) fn all_acts() -> Vec<ActKind> {
    let mut v: Vec<ActKind> = ActKind::SPELLINGS
        .iter()
        .filter(|(_, p)| p.is_empty())
        .map(|(n, _)| ActKind::from_parts(n, &[]).expect("spelled kind"))
        .collect();
    v.extend([
        ActKind::LeakyRelu { alpha: 0.01 },
        ActKind::LeakyRelu { alpha: -1.5 },
        ActKind::Elu { alpha: 1.0 },
        ActKind::Elu { alpha: 0.3 },
        ActKind::HardSigmoid { alpha: 0.2, beta: 0.5 },
        ActKind::HardSigmoid { alpha: 1.0 / 6.0, beta: 0.5 },
        ActKind::Clip { min: 0.0, max: 6.0 },
        ActKind::Clip { min: -1.0, max: 1.0 },
        ActKind::Clip { min: 2.0, max: -2.0 },
    ]);
    v
}

/// Inputs that stress every branch: signed zeros, tiny and huge values,
/// infinities, NaNs (two payloads), values near clip and rounding edges.
pub(crate) fn special_values() -> Vec<f32> {
    vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        3.0,
        -3.0,
        6.0,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        1e-45,
        -1e-45,
        1e-20,
        -1e-20,
        88.0,
        89.0,
        -88.0,
        -104.0,
        1e20,
        -1e20,
        f32::MAX,
        f32::MIN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::from_bits(0xffc0_1234),
        8_388_609.0,
        -0.499_999_97,
    ]
}

/// `n` values: mostly moderate, a share of specials.
pub(crate) fn random_values(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let specials = special_values();
    (0..n)
        .map(|_| {
            if rng.gen_ratio(1, 8) {
                specials[rng.gen_range(0..specials.len())]
            } else {
                rng.gen_range(-12.0f32..12.0)
            }
        })
        .collect()
}

/// Equal bits, or both NaN (the NaN payload chosen when an operation sees
/// two NaNs is not part of any contract).
pub(crate) fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

pub(crate) const LENGTHS: [usize; 12] = [0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 1023, 4097];

// ------------------------------------------------- f64 references ----

/// `erf` by its Taylor series below 3 (about 1e-13 relative there) and by
/// the continued fraction of `erfc` above.
fn erf_ref(x: f64) -> f64 {
    let z = x.abs();
    let r = if z < 3.0 {
        let (z2, mut term, mut sum) = (z * z, z, z);
        for n in 1..400 {
            term *= -z2 / n as f64;
            let t = term / (2 * n + 1) as f64;
            sum += t;
            if t.abs() < 1e-18 * sum.abs() {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        1.0 - erfc_cf(z)
    };
    r.copysign(x)
}

/// `erfc(z)` for `z >= 3`: `exp(-z^2)/sqrt(pi) / (z + (1/2)/(z + 1/(z + (3/2)/(z + ...))))`.
fn erfc_cf(z: f64) -> f64 {
    let mut t = z;
    for n in (1..=300).rev() {
        t = z + (n as f64 / 2.0) / t;
    }
    (-z * z).exp() / std::f64::consts::PI.sqrt() / t
}

fn erfc_ref(x: f64) -> f64 {
    if x >= 3.0 {
        erfc_cf(x)
    } else if x <= -3.0 {
        2.0 - erfc_cf(-x)
    } else {
        1.0 - erf_ref(x)
    }
}

fn sigmoid_ref(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn softplus_ref(x: f64) -> f64 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

/// The tanh-GELU as the identical `x * sigmoid(2u)`, which stays accurate
/// in f64 where `1 + tanh(u)` would cancel.
fn gelu_tanh_ref(x: f64) -> f64 {
    let u = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
    x * sigmoid_ref(2.0 * u)
}

/// The f64 reference of an activation at a finite `x`.
fn reference(act: ActKind, x: f64) -> f64 {
    match act {
        ActKind::Identity => x,
        ActKind::Relu => {
            if x < 0.0 {
                0.0
            } else {
                x
            }
        }
        ActKind::Gelu => 0.5 * x * erfc_ref(-x / std::f64::consts::SQRT_2),
        ActKind::GeluTanh => gelu_tanh_ref(x),
        ActKind::Silu => x * sigmoid_ref(x),
        ActKind::Sigmoid => sigmoid_ref(x),
        ActKind::Tanh => x.tanh(),
        ActKind::Exp => x.exp(),
        ActKind::Log => x.ln(),
        ActKind::Sqrt => x.sqrt(),
        ActKind::Rsqrt => 1.0 / x.sqrt(),
        ActKind::Neg => -x,
        ActKind::Abs => x.abs(),
        ActKind::Recip => 1.0 / x,
        ActKind::Square => x * x,
        ActKind::Erf => erf_ref(x),
        ActKind::Softplus => softplus_ref(x),
        ActKind::Mish => x * softplus_ref(x).tanh(),
        ActKind::HardSwish => x * (x / 6.0 + 0.5).clamp(0.0, 1.0),
        ActKind::Sin => x.sin(),
        ActKind::Cos => x.cos(),
        ActKind::Floor => x.floor(),
        ActKind::Ceil => x.ceil(),
        ActKind::Round => x.round_ties_even(),
        ActKind::Sign => {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                x
            }
        }
        ActKind::Not => {
            if x == 0.0 {
                1.0
            } else {
                0.0
            }
        }
        ActKind::LeakyRelu { alpha } => {
            if x < 0.0 {
                f64::from(alpha) * x
            } else {
                x
            }
        }
        ActKind::Elu { alpha } => {
            if x < 0.0 {
                f64::from(alpha) * x.exp_m1()
            } else {
                x
            }
        }
        ActKind::HardSigmoid { alpha, beta } => (f64::from(alpha) * x + f64::from(beta)).clamp(0.0, 1.0),
        ActKind::Clip { min, max } => {
            let t = if x < f64::from(min) { f64::from(min) } else { x };
            if t > f64::from(max) {
                f64::from(max)
            } else {
                t
            }
        }
    }
}

/// Spacing of f32 values at the magnitude of `w` (an f32 ulp).
fn ulp_at(w: f32) -> f64 {
    let w = w.abs();
    if w < f32::MIN_POSITIVE {
        return 2f64.powi(-149);
    }
    let e = w.to_bits() >> 23;
    2f64.powi(e as i32 - 127 - 23)
}

/// The error allowed for `act` at `x` (f32 input) against `want`, in
/// absolute terms. Each bound is the sum of the roundings the f32
/// evaluation performs, as explained per group.
fn tolerance(act: ActKind, x: f32, want: f64) -> f64 {
    let ulp = ulp_at(want as f32);
    let x64 = f64::from(x);
    // Where an intermediate (`exp(x)` for very negative `x`) falls below
    // f32::MIN_POSITIVE it keeps only an absolute precision of 2^-149 per
    // rounding, which a later multiply by `x` scales.
    let subnormal = (x64.abs() + 1.0) * 2f64.powi(-149) * 2.0;
    match act {
        // A single correctly rounded operation, or none.
        ActKind::Identity
        | ActKind::Relu
        | ActKind::Neg
        | ActKind::Abs
        | ActKind::Floor
        | ActKind::Ceil
        | ActKind::Round
        | ActKind::Sign
        | ActKind::Not
        | ActKind::Clip { .. }
        | ActKind::Sqrt
        | ActKind::Recip
        | ActKind::Square
        | ActKind::LeakyRelu { .. } => 0.5 * ulp,
        // f64 evaluation, one final rounding (plus ~1e-12 relative).
        ActKind::Erf | ActKind::Gelu => 0.5 * ulp + want.abs() * 1e-11,
        // Two correctly rounded operations.
        ActKind::Rsqrt => 1.5 * ulp,
        // glibc's f32 exp/log/sin/cos are below 1 ulp.
        ActKind::Exp | ActKind::Log | ActKind::Sin | ActKind::Cos => 1.0 * ulp,
        // glibc tanhf: within 2 ulp.
        ActKind::Tanh => 2.0 * ulp,
        // exp (1 ulp) + add + divide (or multiply).
        ActKind::Sigmoid | ActKind::Silu => 3.0 * ulp + subnormal,
        // exp_m1 (1 ulp) + multiply.
        ActKind::Elu { .. } => 2.0 * ulp + subnormal,
        // exp + ln_1p + add.
        ActKind::Softplus => 3.0 * ulp + subnormal,
        // softplus (3) + tanh (2) + multiply.
        ActKind::Mish => 6.0 * ulp + subnormal,
        // `u = 2c(x + 0.044715 x^3)` carries ~5 roundings; exp turns its
        // relative error into an absolute one of |u| * 5 ulp in the exponent,
        // which matters only where the result is x * exp(u) (u < 0).
        ActKind::GeluTanh => {
            let u = 1.595_769_121_605_730_8 * (x64 + 0.044715 * x64 * x64 * x64);
            (4.0 + 6.0 * (-u).max(0.0)) * ulp + subnormal
        }
        // `alpha * x + beta` rounds twice at the magnitudes of its terms, then
        // clamps (exact); near the zero crossing only an absolute bound holds.
        ActKind::HardSigmoid { alpha, beta } => {
            let terms = (f64::from(alpha) * x64).abs() + f64::from(beta).abs();
            terms * 2f64.powi(-24) * 2.0 + 0.5 * ulp
        }
        // As hard_sigmoid with alpha = 1/6 (itself rounded), times x.
        ActKind::HardSwish => {
            let terms = (x64 / 6.0).abs() + 0.5;
            x64.abs() * (terms * 2f64.powi(-24) * 3.0) + 0.5 * ulp
        }
    }
}

#[test]
fn math_matches_the_f64_references_over_a_dense_sweep() {
    let mut xs: Vec<f32> = (-3000..=3000).map(|i| i as f32 * 0.0137).collect();
    for k in -38..=38 {
        let m = 10f32.powi(k);
        xs.extend([m, -m, 1.7 * m, -1.7 * m]);
    }
    xs.extend(special_values().into_iter().filter(|x| x.is_finite()));
    for act in all_acts() {
        let mut worst = 0f64;
        for &x in &xs {
            let got = math::act_f32(act, x);
            let want = reference(act, f64::from(x));
            if want.is_nan() {
                assert!(got.is_nan(), "{} at {x:e}: got {got:e}, want NaN", act.name());
                continue;
            }
            let want32 = want as f32;
            if want32.is_infinite() {
                assert_eq!(got, want32, "{} at {x:e}: overflow", act.name());
                continue;
            }
            let err = (f64::from(got) - want).abs();
            let tol = tolerance(act, x, want);
            assert!(err <= tol, "{} at {x:e}: got {got:e}, want {want:e} (error {err:e} > {tol:e})", act.name());
            worst = worst.max(err / ulp_at(want32));
        }
        // Keep the measured accuracy visible in `--nocapture` runs.
        println!("{:>13}: worst error {worst:.3} ulp", act.name());
    }
}

#[test]
fn erf_is_within_one_ulp_across_its_whole_range() {
    // Dense over the range where erf is not yet +-1 in f32.
    for i in -50_000..=50_000 {
        let x = i as f32 * 1e-4;
        let got = f64::from(math::erf(x));
        let want = erf_ref(f64::from(x));
        // f64 evaluation then one rounding: 0.5 ulp + the fits' ~1e-12.
        let tol = 0.5 * ulp_at(want as f32) + want.abs() * 1e-11;
        assert!((got - want).abs() <= tol, "erf({x}) = {got}, want {want}");
    }
    // erfc keeps relative accuracy deep in the tail (where 1 - erf is 0).
    for i in 0..=1000 {
        let x = i as f32 * 0.0105;
        let got = f64::from(math::erfc(x));
        let want = erfc_ref(f64::from(x));
        let tol = 0.5 * ulp_at(want as f32) + want.abs() * 1e-11;
        assert!((got - want).abs() <= tol, "erfc({x}) = {got:e}, want {want:e}");
    }
    assert_eq!(math::erf(0.0).to_bits(), 0.0f32.to_bits());
    assert_eq!(math::erf(-0.0).to_bits(), (-0.0f32).to_bits());
    assert_eq!(math::erf(f32::INFINITY), 1.0);
    assert_eq!(math::erf(f32::NEG_INFINITY), -1.0);
    assert_eq!(math::erfc(f32::INFINITY), 0.0);
    assert_eq!(math::erfc(f32::NEG_INFINITY), 2.0);
    assert!(math::erf(f32::NAN).is_nan() && math::erfc(f32::NAN).is_nan());
    // Known values (Abramowitz & Stegun, table 7.1).
    assert_eq!(math::erf(1.0), 0.842_700_8);
    assert_eq!(math::erf(0.5), 0.520_499_9);
}

#[test]
fn activations_of_infinities_and_nans_follow_the_stated_conventions() {
    let (inf, ninf) = (f32::INFINITY, f32::NEG_INFINITY);
    let cases: &[(ActKind, f32, f32)] = &[
        (ActKind::Relu, ninf, 0.0),
        (ActKind::Relu, inf, inf),
        (ActKind::Gelu, ninf, -0.0),
        (ActKind::Gelu, inf, inf),
        (ActKind::GeluTanh, ninf, -0.0),
        (ActKind::GeluTanh, inf, inf),
        (ActKind::Silu, ninf, -0.0),
        (ActKind::Silu, inf, inf),
        (ActKind::Mish, ninf, -0.0),
        (ActKind::Mish, inf, inf),
        (ActKind::Sigmoid, ninf, 0.0),
        (ActKind::Sigmoid, inf, 1.0),
        (ActKind::Tanh, ninf, -1.0),
        (ActKind::Softplus, ninf, 0.0),
        (ActKind::Softplus, inf, inf),
        (ActKind::Exp, ninf, 0.0),
        (ActKind::Log, 0.0, ninf),
        (ActKind::Rsqrt, 0.0, inf),
        (ActKind::Recip, -0.0, ninf),
        (ActKind::Elu { alpha: 1.0 }, ninf, -1.0),
        (ActKind::HardSwish, ninf, -0.0),
        (ActKind::HardSwish, inf, inf),
        (ActKind::HardSigmoid { alpha: 0.2, beta: 0.5 }, ninf, 0.0),
        (ActKind::Clip { min: 0.0, max: 6.0 }, ninf, 0.0),
        (ActKind::Clip { min: 0.0, max: 6.0 }, inf, 6.0),
        (ActKind::Sign, -0.0, -0.0),
        (ActKind::Sign, ninf, -1.0),
        (ActKind::Not, -0.0, 1.0),
        (ActKind::Not, f32::NAN, 0.0),
        (ActKind::Round, 2.5, 2.0),
        (ActKind::Round, -0.5, -0.0),
        (ActKind::Round, 3.5, 4.0),
        (ActKind::Relu, -0.0, -0.0),
        (ActKind::Erf, -0.0, -0.0),
    ];
    for &(act, x, want) in cases {
        let got = math::act_f32(act, x);
        assert!(same(got, want), "{}({x}) = {got}, want {want}", act.name());
    }
    // NaN propagates through every kind except `not`.
    for act in all_acts() {
        let got = math::act_f32(act, f32::NAN);
        assert_eq!(got.is_nan(), act != ActKind::Not, "{}(NaN) = {got}", act.name());
    }
}

/// Runs the dispatching kernel and the scalar kernel on the same data.
fn check_kernel_matches_scalar(act: ActKind, data: &[f32], par: bool) {
    let mut want = vec![0f32; data.len()];
    let mut got = vec![0f32; data.len()];
    unsafe {
        scalar_act_f32(act, data.as_ptr(), want.as_mut_ptr(), data.len());
        act_f32_slice(act, data.as_ptr(), got.as_mut_ptr(), data.len(), par);
    }
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(same(*g, *w), "{} at {i} of {} (x = {}): {g} vs scalar {w}", act.name(), data.len(), data[i]);
    }
    // In place gives the same.
    let mut inplace = data.to_vec();
    unsafe { act_in_place_f32(act, inplace.as_mut_ptr(), inplace.len(), par) };
    for (i, (g, w)) in inplace.iter().zip(&want).enumerate() {
        assert!(same(*g, *w), "{} in place at {i}: {g} vs scalar {w}", act.name());
    }
}

#[test]
fn every_path_matches_scalar_over_simd_tail_lengths() {
    for act in all_acts() {
        for (k, &len) in LENGTHS.iter().enumerate() {
            check_kernel_matches_scalar(act, &random_values(len, k as u64), false);
        }
        // Every special value at every lane position of a vector.
        let specials = special_values();
        let mut shifted = Vec::new();
        for s in 0..9 {
            shifted.extend(specials.iter().cycle().skip(s).take(specials.len()));
        }
        check_kernel_matches_scalar(act, &shifted, false);
    }
}

#[test]
fn the_scalar_kernel_applies_math_element_by_element() {
    let data = random_values(257, 99);
    for act in all_acts() {
        let mut out = vec![0f32; data.len()];
        unsafe { scalar_act_f32(act, data.as_ptr(), out.as_mut_ptr(), data.len()) };
        for (x, y) in data.iter().zip(&out) {
            assert!(same(*y, math::act_f32(act, *x)), "{}({x})", act.name());
        }
    }
}

#[test]
fn parallel_runs_equal_serial_runs() {
    let data = random_values(100_003, 7);
    for act in [ActKind::Relu, ActKind::Gelu, ActKind::Clip { min: -1.0, max: 1.0 }] {
        check_kernel_matches_scalar(act, &data, true);
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn simd_coverage_matches_the_documented_list() {
    // The AVX2 kernel covers exactly the exact activations; transcendental
    // ones stay scalar so every path computes them identically.
    if crate::kernels::elementwise::par::has_avx2_fma() {
        assert!(act_has_simd(ActKind::Relu));
        assert!(act_has_simd(ActKind::Clip { min: 0.0, max: 6.0 }));
        assert!(!act_has_simd(ActKind::Gelu));
        assert!(!act_has_simd(ActKind::Exp));
    }
}
