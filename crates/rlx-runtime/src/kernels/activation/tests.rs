//! Activation tests: `crate::math` against independent f64 references, and
//! every kernel path against the scalar kernel bit for bit.

use super::*;
use crate::math;
use rand::{Rng, SeedableRng};
use rlx_core::ActKind;

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
        ActKind::Selu { alpha: 1.673_263_2, gamma: 1.050_701 },
        ActKind::Selu { alpha: 2.0, gamma: 3.0 },
        ActKind::Celu { alpha: 1.0 },
        ActKind::Celu { alpha: 2.5 },
        ActKind::ThresholdedRelu { alpha: 1.0 },
        ActKind::ThresholdedRelu { alpha: -0.5 },
        ActKind::Shrink { bias: 0.0, lambd: 0.5 },
        ActKind::Shrink { bias: 1.5, lambd: 1.0 },
        ActKind::Shrink { bias: -0.25, lambd: -1.0 },
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

use crate::kernels::test_support::{check_variants, same, LENGTHS};

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
        ActKind::Tan => x.tan(),
        ActKind::Asin => x.asin(),
        ActKind::Acos => x.acos(),
        ActKind::Atan => x.atan(),
        ActKind::Sinh => x.sinh(),
        ActKind::Cosh => x.cosh(),
        ActKind::Asinh => x.asinh(),
        ActKind::Acosh => x.acosh(),
        ActKind::Atanh => x.atanh(),
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
        ActKind::Softsign => x / (1.0 + x.abs()),
        ActKind::Not => {
            if x == 0.0 {
                1.0
            } else {
                0.0
            }
        }
        ActKind::Selu { alpha, gamma } => {
            let (a, g) = (f64::from(alpha), f64::from(gamma));
            if x > 0.0 {
                g * x
            } else {
                g * a * x.exp_m1()
            }
        }
        ActKind::Celu { alpha } => {
            let a = f64::from(alpha);
            x.max(0.0) + (a * (x / a).exp_m1()).min(0.0)
        }
        ActKind::ThresholdedRelu { alpha } => {
            if x > f64::from(alpha) {
                x
            } else {
                0.0
            }
        }
        ActKind::Shrink { bias, lambd } => {
            let (b, l) = (f64::from(bias), f64::from(lambd));
            if x < -l {
                x + b
            } else if x > l {
                x - b
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
        | ActKind::ThresholdedRelu { .. }
        | ActKind::Shrink { .. }
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
        // f64 evaluation, one final rounding (plus the f64 function's own
        // error, a few f64 ulps).
        ActKind::Tan
        | ActKind::Asin
        | ActKind::Acos
        | ActKind::Atan
        | ActKind::Sinh
        | ActKind::Cosh
        | ActKind::Asinh
        | ActKind::Acosh
        | ActKind::Atanh => 0.5 * ulp + want.abs() * 1e-12,
        // glibc tanhf: within 2 ulp.
        ActKind::Tanh => 2.0 * ulp,
        // exp (1 ulp) + add + divide (or multiply).
        ActKind::Sigmoid | ActKind::Silu => 3.0 * ulp + subnormal,
        // exp_m1 (1 ulp) + multiply.
        ActKind::Elu { .. } => 2.0 * ulp + subnormal,
        // exp_m1 (1 ulp) + two multiplies (Selu), or a divide before it,
        // whose relative error exp_m1 scales by |x / alpha| (Celu).
        ActKind::Selu { .. } => 2.5 * ulp + subnormal,
        ActKind::Celu { alpha } => (2.5 + (x64 / f64::from(alpha)).abs()) * ulp + subnormal,
        // An add and a divide, both correctly rounded.
        ActKind::Softsign => 1.5 * ulp,
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
        (ActKind::Softsign, inf, 1.0),
        (ActKind::Softsign, ninf, -1.0),
        (ActKind::Softsign, -0.0, -0.0),
        (ActKind::Selu { alpha: 2.0, gamma: 3.0 }, ninf, -6.0),
        (ActKind::Selu { alpha: 2.0, gamma: 3.0 }, inf, inf),
        (ActKind::Celu { alpha: 2.0 }, ninf, -2.0),
        (ActKind::ThresholdedRelu { alpha: 1.0 }, 1.0, 0.0),
        (ActKind::ThresholdedRelu { alpha: 1.0 }, inf, inf),
        (ActKind::ThresholdedRelu { alpha: 1.0 }, f32::NAN, 0.0),
        (ActKind::Shrink { bias: 1.5, lambd: 1.0 }, -1.0, 0.0),
        (ActKind::Shrink { bias: 1.5, lambd: 1.0 }, ninf, ninf),
        (ActKind::Shrink { bias: 1.5, lambd: 1.0 }, f32::NAN, 0.0),
        // A negative lambd: both tests hold, x + bias wins.
        (ActKind::Shrink { bias: 1.0, lambd: -1.0 }, 0.0, 1.0),
    ];
    for &(act, x, want) in cases {
        let got = math::act_f32(act, x);
        assert!(same(got, want), "{}({x}) = {got}, want {want}", act.name());
    }
    // NaN propagates through every kind except `not` and the two whose
    // ONNX formulas send it to 0.
    for act in all_acts() {
        let got = math::act_f32(act, f32::NAN);
        let zeroes = matches!(act, ActKind::Not | ActKind::ThresholdedRelu { .. } | ActKind::Shrink { .. });
        assert_eq!(got.is_nan(), !zeroes, "{}(NaN) = {got}", act.name());
    }
}

/// Whether the dispatched kernel must give the scalar kernel's bits for
/// `act` on this CPU: every kind without a SIMD kernel here, and every
/// SIMD kernel but the approximations (the polynomial GELU and the
/// transcendental forms, each tested against its ulp bound instead).
fn dispatch_is_bit_exact(act: ActKind) -> bool {
    is_bit_exact_with(KERNELS.best(), act)
}

/// Every variant this CPU runs, best first, scalar last.
fn variants() -> Vec<(&'static str, Kernels)> {
    KERNELS.supported()
}

/// The variant called `name`, if this CPU runs it.
fn variant(name: &str) -> Option<Kernels> {
    variants().into_iter().find(|(n, _)| *n == name).map(|(_, k)| k)
}

/// `act` over `xs` through the variant `k`, out of place.
fn run_with(k: Kernels, act: ActKind, xs: &[f32]) -> Vec<f32> {
    let mut out = vec![0f32; xs.len()];
    // SAFETY: `xs` and `out` hold `xs.len()` f32 and are distinct; `k` is
    // one of the variants this CPU runs.
    unsafe { act_with(&k, act, xs.as_ptr(), out.as_mut_ptr(), xs.len()) };
    out
}

/// `act` over `xs` through the variant `k`, in place.
fn run_in_place_with(k: Kernels, act: ActKind, xs: &[f32]) -> Vec<f32> {
    let mut data = xs.to_vec();
    let p = data.as_mut_ptr();
    // SAFETY: `data` holds `xs.len()` f32, read and written in place; `k`
    // runs on this CPU.
    unsafe { act_with(&k, act, p, p, xs.len()) };
    data
}

/// Every variant whose path for `act` is bit-exact, out of place and in
/// place, against the scalar kernel; and every variant's `math` path.
fn check_variants_match_scalar(act: ActKind, data: &[f32]) {
    let mut want = vec![0f32; data.len()];
    // SAFETY: `data` and `want` hold `data.len()` f32 and are distinct.
    unsafe { scalar_act_f32(act, data.as_ptr(), want.as_mut_ptr(), data.len()) };
    let what = format!("{} over {}", act.name(), data.len());
    let exact: Vec<(&'static str, Kernels)> =
        variants().into_iter().filter(|(_, k)| is_bit_exact_with(k, act)).collect();
    check_variants(&want, &exact, same, &what, |k| run_with(k, act, data));
    check_variants(&want, &exact, same, &format!("{what} in place"), |k| run_in_place_with(k, act, data));
    let math_path = |k: Kernels, dst_is_src: bool| {
        let mut out = data.to_vec();
        let src = if dst_is_src { out.as_ptr() } else { data.as_ptr() };
        // SAFETY: `src` holds `data.len()` f32 and is `out` exactly or
        // distinct from it; `k` runs on this CPU.
        unsafe { act_math_with(&k, act, src, out.as_mut_ptr(), data.len()) };
        out
    };
    check_variants(&want, &variants(), same, &format!("{what} math path"), |k| math_path(k, false));
    check_variants(&want, &variants(), same, &format!("{what} math path in place"), |k| math_path(k, true));
}

/// Runs the dispatching kernel and the scalar kernel on the same data.
fn check_kernel_matches_scalar(act: ActKind, data: &[f32], par: bool) {
    let mut want = vec![0f32; data.len()];
    let mut got = vec![0f32; data.len()];
    // SAFETY: `data`, `want` and `got` hold `data.len()` f32 and are distinct
    // buffers.
    unsafe {
        scalar_act_f32(act, data.as_ptr(), want.as_mut_ptr(), data.len());
        act_f32_slice(act, data.as_ptr(), got.as_mut_ptr(), data.len(), par);
    }
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(same(*g, *w), "{} at {i} of {} (x = {}): {g} vs scalar {w}", act.name(), data.len(), data[i]);
    }
    // In place gives the same.
    let mut inplace = data.to_vec();
    // SAFETY: `inplace` holds `inplace.len()` f32.
    unsafe { act_in_place_f32(act, inplace.as_mut_ptr(), inplace.len(), par) };
    for (i, (g, w)) in inplace.iter().zip(&want).enumerate() {
        assert!(same(*g, *w), "{} in place at {i}: {g} vs scalar {w}", act.name());
    }
}

/// `act_f32_slice_math` (out of place and in place) against the scalar
/// kernel, bit for bit, for every kind.
fn check_math_path_matches_scalar(act: ActKind, data: &[f32]) {
    let mut want = vec![0f32; data.len()];
    let mut got = vec![0f32; data.len()];
    // SAFETY: `data`, `want` and `got` hold `data.len()` f32 and are distinct
    // buffers.
    unsafe {
        scalar_act_f32(act, data.as_ptr(), want.as_mut_ptr(), data.len());
        act_f32_slice_math(act, data.as_ptr(), got.as_mut_ptr(), data.len());
    }
    let mut inplace = data.to_vec();
    // SAFETY: `inplace` holds `inplace.len()` f32; source and destination are
    // the exact alias the kernel allows.
    unsafe { act_f32_slice_math(act, inplace.as_ptr(), inplace.as_mut_ptr(), inplace.len()) };
    for (i, w) in want.iter().enumerate() {
        assert!(same(got[i], *w), "{} math path at {i} (x = {}): {} vs {w}", act.name(), data[i], got[i]);
        assert!(same(inplace[i], *w), "{} math path in place at {i}: {} vs {w}", act.name(), inplace[i]);
    }
}

/// Every special value at every lane position of a vector.
fn shifted_specials() -> Vec<f32> {
    let specials = special_values();
    let mut shifted = Vec::new();
    for s in 0..9 {
        shifted.extend(specials.iter().cycle().skip(s).take(specials.len()));
    }
    shifted
}

#[test]
fn every_path_matches_scalar_over_simd_tail_lengths() {
    for act in all_acts() {
        for (k, &len) in LENGTHS.iter().enumerate() {
            let data = random_values(len, k as u64);
            check_math_path_matches_scalar(act, &data);
            check_variants_match_scalar(act, &data);
            if dispatch_is_bit_exact(act) {
                check_kernel_matches_scalar(act, &data, false);
            }
        }
        check_math_path_matches_scalar(act, &shifted_specials());
        check_variants_match_scalar(act, &shifted_specials());
        if dispatch_is_bit_exact(act) {
            check_kernel_matches_scalar(act, &shifted_specials(), false);
        }
    }
}

#[test]
fn the_scalar_kernel_applies_math_element_by_element() {
    let data = random_values(257, 99);
    for act in all_acts() {
        let mut out = vec![0f32; data.len()];
        // SAFETY: `data` and `out` hold `data.len()` f32 and are distinct.
        unsafe { scalar_act_f32(act, data.as_ptr(), out.as_mut_ptr(), data.len()) };
        for (x, y) in data.iter().zip(&out) {
            assert!(same(*y, math::act_f32(act, *x)), "{}({x})", act.name());
        }
    }
}

#[test]
fn parallel_runs_equal_serial_runs() {
    let data = random_values(100_003, 7);
    for act in [ActKind::Relu, ActKind::Gelu, ActKind::Clip { min: -1.0, max: 1.0 }, ActKind::Sigmoid, ActKind::Tanh] {
        let (mut serial, mut par) = (vec![0f32; data.len()], vec![0f32; data.len()]);
        // SAFETY: `data`, `serial` and `par` hold `data.len()` f32 and are
        // distinct buffers.
        unsafe {
            act_f32_slice(act, data.as_ptr(), serial.as_mut_ptr(), data.len(), false);
            act_f32_slice(act, data.as_ptr(), par.as_mut_ptr(), data.len(), true);
        }
        for (i, (p, s)) in par.iter().zip(&serial).enumerate() {
            assert!(same(*p, *s), "{} at {i}: par {p} vs serial {s}", act.name());
        }
        if dispatch_is_bit_exact(act) {
            check_kernel_matches_scalar(act, &data, true);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn simd_coverage_matches_the_documented_list() {
    // The AVX2 kernel covers the exact activations and the polynomial
    // GELU; other transcendental ones stay scalar.
    if variant("avx2").is_some() {
        assert!(act_has_simd(ActKind::Relu));
        assert!(act_has_simd(ActKind::Clip { min: 0.0, max: 6.0 }));
        assert!(act_has_simd(ActKind::Gelu));
        assert!(act_has_simd(ActKind::Softsign));
        assert!(act_has_simd(ActKind::Shrink { bias: 0.0, lambd: 0.5 }));
        assert!(act_has_simd(ActKind::ThresholdedRelu { alpha: 1.0 }));
        assert!(!dispatch_is_bit_exact(ActKind::Gelu));
        // The transcendental forms: vector approximations, never `math`'s
        // bits, so `act_f32_slice_math` does not use them.
        for act in trans_acts() {
            assert!(act_has_simd(act), "{act:?}");
            assert!(!dispatch_is_bit_exact(act), "{act:?}");
            assert!(!super::avx2::is_bit_exact(act), "{act:?}");
        }
        // Still scalar: no vector form, or a parameter outside its range.
        for act in [ActKind::Log, ActKind::Erf, ActKind::Sin, ActKind::Cos] {
            assert!(!act_has_simd(act), "{act:?}");
        }
        assert!(!act_has_simd(ActKind::Celu { alpha: -1.0 }));
    }
}

// ------------------------------------------------------- AVX2 gelu ----

/// The largest error of the AVX2 GELU against `math::gelu`, in f32 ulp at
/// the magnitude of `math::gelu`'s result (`ulp_at`, which is 2^-149
/// throughout the subnormal range, so there it is an absolute bound of
/// 4 * 2^-149 = 5.6e-45).
///
/// MEASURED (ad hoc, every 61st f32 bit pattern, 70.4M inputs): worst
/// 3.0 ulp, at x = -0.7531 (the `erfc` route just past the split, where
/// the f32 evaluation of `g` is least accurate, ~1.7e-7 relative); 2.0 in
/// the `erf` route (x = -0.3335, where `1 + erf` halves); 1.0 for x > 0;
/// 2.0 units of 2^-149 for subnormal results (x ~ -13.1). The tests below
/// measure a subset and print the worst. The budget behind it: `g` ~1.5
/// ulp, the vector `exp` ~1 ulp, one product 0.5, `math::gelu`'s own 0.5.
/// 4 is the measurement plus one ulp of margin, far below what a wrong
/// coefficient or branch costs (hundreds of ulp and more).
const GELU_MAX_ULP: f64 = 4.0;

/// Dense sweep: every 1/1024 in [-16, 16], every f32 within 2^-12 of the
/// route split at +-0.75, every 613th f32 bit pattern (all binades,
/// subnormals and NaN payloads included), powers of ten, specials.
fn gelu_sweep() -> Vec<f32> {
    let mut xs: Vec<f32> = (-16 * 1024..=16 * 1024).map(|i| i as f32 / 1024.0).collect();
    let split = 0.75f32.to_bits();
    for b in split - (1 << 11)..split + (1 << 11) {
        xs.extend([f32::from_bits(b), -f32::from_bits(b)]);
    }
    xs.extend((0..=u32::MAX / 613).map(|i| f32::from_bits(i * 613)));
    for k in -45..=38 {
        let m = 10f32.powi(k);
        xs.extend([m, -m, 1.7 * m, -1.7 * m, 3.3 * m, -3.3 * m]);
    }
    xs.extend(special_values());
    xs.extend([
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        -f32::from_bits(0x007f_ffff),
        -3.4e38,
        0.75,
        -0.75,
        0.749_999_94,
        -0.749_999_94,
        15.0,
        -15.0,
        -13.2,
        -14.0,
    ]);
    xs
}

/// The dispatched GELU of `xs` (AVX2 on this CPU).
fn gelu_kernel(xs: &[f32]) -> Vec<f32> {
    let mut out = vec![0f32; xs.len()];
    // SAFETY: `xs` and `out` hold `xs.len()` f32 and are distinct.
    unsafe { act_f32_slice(ActKind::Gelu, xs.as_ptr(), out.as_mut_ptr(), xs.len(), false) };
    out
}

#[test]
fn avx2_gelu_is_within_its_ulp_bound_of_math() {
    if !act_has_simd(ActKind::Gelu) {
        return;
    }
    let xs = gelu_sweep();
    let got = gelu_kernel(&xs);
    let mut worst = (0f64, 0f32);
    for (&x, &g) in xs.iter().zip(&got) {
        let w = math::gelu(x);
        if w.is_nan() {
            assert!(g.is_nan(), "gelu({x}) = {g}, want NaN");
            continue;
        }
        if w.is_infinite() || w == 0.0 {
            // Limits are exact, sign included: gelu(-inf) = -0, gelu(inf) = inf.
            assert!(same(g, w), "gelu({x}) = {g:e}, want {w:e}");
            continue;
        }
        let err = (f64::from(g) - f64::from(w)).abs() / ulp_at(w);
        assert!(err <= GELU_MAX_ULP, "gelu({x:e}) = {g:e}, math {w:e}: {err:.2} ulp");
        if err > worst.0 {
            worst = (err, x);
        }
    }
    println!("avx2 gelu: worst {:.3} ulp at x = {:e}", worst.0, worst.1);
}

#[test]
fn avx2_gelu_edge_values() {
    if !act_has_simd(ActKind::Gelu) {
        return;
    }
    let xs = [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        f32::MIN,
        -3.4e38,
        -1e30,
        -20.0,
        f32::from_bits(1),
        -f32::from_bits(1),
        1e-30,
        f32::NAN,
        -f32::NAN,
    ];
    let got = gelu_kernel(&xs);
    let want = [
        0.0,
        -0.0,
        f32::INFINITY,
        -0.0,
        f32::MAX,
        -0.0,
        -0.0,
        -0.0,
        -0.0,
        // 0.5 * 2^-149 rounds to even: 0 (as math::gelu).
        0.0,
        -0.0,
        5e-31,
        f32::NAN,
        f32::NAN,
    ];
    for ((x, g), w) in xs.iter().zip(&got).zip(&want) {
        assert!(same(*g, *w), "gelu({x:e}) = {g:e}, want {w:e}");
        assert!(same(*w, math::gelu(*x)), "math::gelu({x:e}) differs from the stated {w:e}");
    }
}

#[test]
fn avx2_gelu_does_not_depend_on_length_or_position() {
    if !act_has_simd(ActKind::Gelu) {
        return;
    }
    // Every element alone (a 1-element call: the masked tail) gives the
    // bits it gets inside any longer call, out of place and in place.
    for (k, &len) in LENGTHS.iter().enumerate() {
        let data = random_values(len, 1000 + k as u64);
        let got = gelu_kernel(&data);
        let mut inplace = data.clone();
        // SAFETY: `inplace` holds `len` f32.
        unsafe { act_in_place_f32(ActKind::Gelu, inplace.as_mut_ptr(), len, false) };
        let mut par = vec![0f32; len];
        // SAFETY: `data` and `par` hold `len` f32 and are distinct.
        unsafe { act_f32_slice(ActKind::Gelu, data.as_ptr(), par.as_mut_ptr(), len, true) };
        for i in 0..len {
            let alone = gelu_kernel(&data[i..i + 1])[0];
            assert!(same(got[i], alone), "len {len} at {i} (x = {}): {} vs alone {alone}", data[i], got[i]);
            assert!(same(inplace[i], alone), "len {len} in place at {i}");
            assert!(same(par[i], alone), "len {len} par at {i}");
            let w = math::gelu(data[i]);
            assert!(
                same(alone, w) || (f64::from(alone) - f64::from(w)).abs() <= GELU_MAX_ULP * ulp_at(w),
                "len {len} at {i}: gelu({}) = {alone:e}, math {w:e}",
                data[i]
            );
        }
    }
}

/// The variants wider than AVX2 (AVX-512), which must give its bits.
fn wider_than_avx2() -> Vec<(&'static str, Kernels)> {
    variants().into_iter().filter(|(name, _)| *name == "avx512").collect()
}

#[test]
fn avx512_gelu_gives_the_avx2_bits() {
    let Some(avx2) = variant("avx2") else { return };
    let xs = gelu_sweep();
    // Whole blocks and every tail length, at several offsets.
    for (start, len) in [(0, xs.len()), (0, 1), (3, 15), (5, 16), (7, 17), (11, 31), (13, 33)] {
        let x = &xs[start..start + len];
        let what = format!("gelu at {start}, {len} long");
        check_variants(&run_with(avx2, ActKind::Gelu, x), &wider_than_avx2(), same, &what, |k| {
            run_with(k, ActKind::Gelu, x)
        });
    }
}

/// `as_clamp` is exact: the clamp it names gives `math`'s bits for the
/// activation on every special value, and only clamps are named.
#[test]
fn clamps_are_their_activation() {
    for act in all_acts() {
        let Some((lo, hi)) = as_clamp(act) else {
            assert!(!matches!(act, ActKind::Relu | ActKind::Clip { .. }), "{act:?} is a clamp");
            continue;
        };
        for x in special_values() {
            let (want, got) = (math::act_f32(act, x), math::clip(x, lo, hi));
            assert_eq!(want.to_bits(), got.to_bits(), "{act:?} at {x:e}");
        }
    }
}

// ------------------------------------ transcendental vector forms ----

/// The largest error of each transcendental vector form against its f64
/// reference at the f32 input, in f32 ulp at the magnitude of the exact
/// result (`ulp_at`: in the subnormal range a bound in units of 2^-149).
/// MEASURED (ad hoc, `transcendental_bounds_over_a_wide_sweep` with
/// `STRIDE=7`: every 7th f32 bit pattern, 613M inputs per kind); each
/// constant is that measurement rounded up to the next half ulp above it.
/// The sweep the suite runs ([`trans_sweep`], 7.1M inputs) measured a
/// little less (noted per constant). Why each is what it is: the docs of
/// the forms and `docs/kernels/activation.md`.
///
/// Measured 1.008 (x = -5.854; sweep 0.989): the Cephes polynomial (about
/// 0.5) plus the rounding of `p` and of its scaling.
const EXP_MAX_ULP: f64 = 1.5;
/// Measured 2.330 (x = -3.462; sweep 2.088): `exp` (1), `1 + e` and the
/// divide.
const SIGMOID_MAX_ULP: f64 = 2.5;
/// Measured 3.191 (x = -3.221; sweep 2.993): sigmoid's roundings plus the
/// product `x p`.
const SILU_MAX_ULP: f64 = 3.5;
/// Measured 1.439 (x = 0.6329; sweep 1.338): just past the split, where
/// `2e / (1 + e)` still carries `exp`'s error into a result near 0.56.
const TANH_MAX_ULP: f64 = 1.5;
/// Measured 1.496 (alpha 0.3, x = -0.3745; sweep 1.414), where `expm1`'s
/// `2^n q + (2^n - 1)` first has `n = -1`; 0.858 with alpha 1. 1.5 would
/// leave no room, so 2.
const ELU_MAX_ULP: f64 = 2.0;
/// Measured 2.072 (x = -0.3338; sweep 1.902): `expm1` and two products.
const SELU_MAX_ULP: f64 = 2.5;
/// Measured 4.560 (x = -6.764, every 61st pattern; 4.482 with every 7th;
/// sweep 3.667): `exp`, `w + 2`, `N`, `N + 2`, the divide and the product
/// with `x`, none cancelling.
const MISH_MAX_ULP: f64 = 5.0;
/// Measured 1.672 (x = -1.260; sweep 1.579): `exp`'s error scaled by
/// `e / (1 + e)`, the `ln(1 + f)` polynomial, and the sum with `max(x, 0)`.
const SOFTPLUS_MAX_ULP: f64 = 2.0;
/// Measured 2.643 (x = -0.3322; sweep 2.495) where the argument is below 1
/// in size; see [`GELU_TANH_ULP_PER_ARG`] for the rest.
const GELU_TANH_MAX_ULP: f64 = 3.0;
/// Measured 1.942 (alpha 2.5, x = -1.267; sweep 1.910) where
/// `|x / alpha| < 1`.
const CELU_MAX_ULP: f64 = 2.0;
/// `gelu_tanh` and `celu` evaluate `exp` at a rounded argument (`2u =
/// 2c (x + 0.044715 x^3)`, `x / alpha`): an error `d` in the argument is a
/// relative error `d` in `exp`, so the result carries about `|arg|` times
/// the argument's relative error, in ulp. `math`'s own forms have the same
/// term (`tolerance`). Their bound is `MAX + PER_ARG * c`, `c` the
/// magnitude of the exp argument where it scales a result (`conditioning`);
/// measured as above: the worst error where `c < 1`, and the worst
/// `error / c` where `c >= 1`.
///
/// Measured 2.834 (x = -0.6286; sweep 2.511): `2u` carries about four
/// roundings.
const GELU_TANH_ULP_PER_ARG: f64 = 3.0;
/// Measured 1.669 (alpha 2.5, x = -2.501; sweep 1.542): the divide
/// `x / alpha`.
const CELU_ULP_PER_ARG: f64 = 2.0;

/// The transcendental kinds with a vector form, with typical parameters.
fn trans_acts() -> Vec<ActKind> {
    vec![
        ActKind::Exp,
        ActKind::Sigmoid,
        ActKind::Silu,
        ActKind::Tanh,
        ActKind::GeluTanh,
        ActKind::Mish,
        ActKind::Softplus,
        ActKind::Elu { alpha: 1.0 },
        ActKind::Elu { alpha: 0.3 },
        ActKind::Selu { alpha: 1.673_263_2, gamma: 1.050_701 },
        ActKind::Selu { alpha: 2.0, gamma: 3.0 },
        ActKind::Celu { alpha: 1.0 },
        ActKind::Celu { alpha: 2.5 },
    ]
}

/// The size of the `exp` argument whose rounding a result of `act` at `x`
/// carries (see [`GELU_TANH_ULP_PER_ARG`]); 0 for the exact arguments.
fn conditioning(act: ActKind, x: f32) -> f64 {
    let x = f64::from(x);
    match act {
        ActKind::GeluTanh => (-1.595_769_121_605_730_8 * (x + 0.044715 * x * x * x)).max(0.0),
        ActKind::Celu { alpha } => (x / f64::from(alpha)).min(0.0).abs(),
        _ => 0.0,
    }
}

/// The bound asserted for `act` at `x`, in ulp (see [`EXP_MAX_ULP`]).
fn trans_bound(act: ActKind, x: f32) -> f64 {
    let c = conditioning(act, x);
    match act {
        ActKind::Exp => EXP_MAX_ULP,
        ActKind::Sigmoid => SIGMOID_MAX_ULP,
        ActKind::Silu => SILU_MAX_ULP,
        ActKind::Tanh => TANH_MAX_ULP,
        ActKind::Mish => MISH_MAX_ULP,
        ActKind::Softplus => SOFTPLUS_MAX_ULP,
        ActKind::Elu { .. } => ELU_MAX_ULP,
        ActKind::Selu { .. } => SELU_MAX_ULP,
        ActKind::GeluTanh => GELU_TANH_MAX_ULP + GELU_TANH_ULP_PER_ARG * c,
        ActKind::Celu { .. } => CELU_MAX_ULP + CELU_ULP_PER_ARG * c,
        _ => unreachable!("{act:?} has no vector form"),
    }
}

/// Dense around 0 (every 1/1024 in [-16, 16]), every 613th f32 bit pattern
/// (all binades, subnormals, NaN payloads), powers of ten, the specials,
/// and 256 f32 either side of every edge of the forms: route splits,
/// where `exp` overflows, leaves the normal range, underflows to 0, where
/// results saturate, the clamps.
fn trans_sweep() -> Vec<f32> {
    let mut xs: Vec<f32> = (-16 * 1024..=16 * 1024).map(|i| i as f32 / 1024.0).collect();
    xs.extend((0..=u32::MAX / 613).map(|i| f32::from_bits(i * 613)));
    for k in -45..=38 {
        let m = 10f32.powi(k);
        xs.extend([m, -m, 1.7 * m, -1.7 * m, 3.3 * m, -3.3 * m]);
    }
    xs.extend(special_values());
    let edges = [
        0.346_573_6,
        0.625,
        9.01,
        10.1,
        11.6,
        16.6,
        17.33,
        20.0,
        30.0,
        75.0,
        87.336_55,
        88.722_84,
        89.0,
        103.278_93,
        103.972_08,
        110.0,
        120.0,
    ];
    for e in edges {
        let b = f32::to_bits(e);
        for v in b - 256..=b + 256 {
            xs.extend([f32::from_bits(v), -f32::from_bits(v)]);
        }
    }
    xs
}

/// `act` over `xs` through the dispatched kernel.
fn dispatched(act: ActKind, xs: &[f32]) -> Vec<f32> {
    let mut out = vec![0f32; xs.len()];
    // SAFETY: `xs` and `out` hold `xs.len()` f32 and are distinct.
    unsafe { act_f32_slice(act, xs.as_ptr(), out.as_mut_ptr(), xs.len(), false) };
    out
}

#[test]
fn transcendental_forms_are_within_their_ulp_bounds() {
    if !act_has_simd(ActKind::Sigmoid) {
        return;
    }
    let xs = trans_sweep();
    for act in trans_acts() {
        let got = dispatched(act, &xs);
        let (mut worst, mut per_arg) = ((0f64, 0f32), (0f64, 0f32));
        for (&x, &g) in xs.iter().zip(&got) {
            if !x.is_finite() {
                continue;
            }
            let c = conditioning(act, x);
            let want = reference(act, f64::from(x));
            let w32 = want as f32;
            if w32.is_infinite() {
                assert_eq!(g, w32, "{}({x:e}) overflows", act.name());
                continue;
            }
            let err = (f64::from(g) - want).abs() / ulp_at(w32);
            let bound = trans_bound(act, x);
            assert!(err <= bound, "{}({x:e}) = {g:e}, want {want:e}: {err:.2} ulp > {bound}", act.name());
            if c < 1.0 && err > worst.0 {
                worst = (err, x);
            }
            if c >= 1.0 && err / c > per_arg.0 {
                per_arg = (err / c, x);
            }
        }
        println!("{:>9} {act:?}: worst {:.3} ulp at x = {:e}", act.name(), worst.0, worst.1);
        if per_arg.0 > 0.0 {
            println!("{:>9} {act:?}: worst {:.3} ulp per unit of argument at x = {:e}", "", per_arg.0, per_arg.1);
        }
    }
}

#[test]
fn transcendental_limits_are_exact() {
    if !act_has_simd(ActKind::Sigmoid) {
        return;
    }
    let (inf, ninf, nan) = (f32::INFINITY, f32::NEG_INFINITY, f32::NAN);
    let elu = ActKind::Elu { alpha: 1.0 };
    let selu = ActKind::Selu { alpha: 2.0, gamma: 3.0 };
    let celu = ActKind::Celu { alpha: 2.0 };
    let cases: &[(ActKind, f32, f32)] = &[
        (ActKind::Exp, ninf, 0.0),
        (ActKind::Exp, inf, inf),
        (ActKind::Exp, 0.0, 1.0),
        (ActKind::Exp, -0.0, 1.0),
        (ActKind::Exp, 88.8, inf),
        (ActKind::Exp, 1e30, inf),
        (ActKind::Exp, -104.0, 0.0),
        (ActKind::Exp, -1e30, 0.0),
        (ActKind::Sigmoid, ninf, 0.0),
        (ActKind::Sigmoid, inf, 1.0),
        (ActKind::Sigmoid, -0.0, 0.5),
        (ActKind::Sigmoid, 17.5, 1.0),
        (ActKind::Sigmoid, f32::MAX, 1.0),
        (ActKind::Sigmoid, f32::MIN, 0.0),
        (ActKind::Silu, ninf, -0.0),
        (ActKind::Silu, inf, inf),
        (ActKind::Silu, -0.0, -0.0),
        (ActKind::Silu, f32::MAX, f32::MAX),
        (ActKind::Silu, f32::MIN, -0.0),
        (ActKind::Silu, -200.0, -0.0),
        (ActKind::Tanh, ninf, -1.0),
        (ActKind::Tanh, inf, 1.0),
        (ActKind::Tanh, -0.0, -0.0),
        (ActKind::Tanh, 9.1, 1.0),
        (ActKind::Tanh, -9.1, -1.0),
        (ActKind::Tanh, f32::MAX, 1.0),
        (ActKind::Tanh, f32::MIN, -1.0),
        (ActKind::Tanh, 1e-30, 1e-30),
        (ActKind::Tanh, -f32::from_bits(1), -f32::from_bits(1)),
        (ActKind::GeluTanh, ninf, -0.0),
        (ActKind::GeluTanh, inf, inf),
        (ActKind::GeluTanh, -0.0, -0.0),
        (ActKind::GeluTanh, f32::MAX, f32::MAX),
        (ActKind::GeluTanh, f32::MIN, -0.0),
        (ActKind::GeluTanh, -100.0, -0.0),
        (ActKind::Mish, ninf, -0.0),
        (ActKind::Mish, inf, inf),
        (ActKind::Mish, -0.0, -0.0),
        (ActKind::Mish, 30.0, 30.0),
        (ActKind::Mish, f32::MAX, f32::MAX),
        (ActKind::Mish, f32::MIN, -0.0),
        (ActKind::Softplus, ninf, 0.0),
        (ActKind::Softplus, inf, inf),
        (ActKind::Softplus, f32::MAX, f32::MAX),
        (ActKind::Softplus, f32::MIN, 0.0),
        (ActKind::Softplus, 0.0, std::f32::consts::LN_2),
        (ActKind::Softplus, 100.0, 100.0),
        (ActKind::Softplus, -1e-30, std::f32::consts::LN_2),
        (elu, ninf, -1.0),
        (elu, inf, inf),
        (elu, -0.0, -0.0),
        (elu, -20.0, -1.0),
        (selu, ninf, -6.0),
        (selu, inf, inf),
        (selu, -0.0, -0.0),
        (selu, 2.0, 6.0),
        (celu, ninf, -2.0),
        (celu, -0.0, -0.0),
        (celu, 3.0, 3.0),
    ];
    for &(act, x, want) in cases {
        let got = act_f32_fast(act, x);
        assert!(same(got, want), "{}({x:e}) = {got:e}, want {want:e}", act.name());
    }
    // NaN in, NaN out, whatever the payload or sign.
    for act in trans_acts() {
        for x in [nan, -nan, f32::from_bits(0xffc0_1234), f32::from_bits(0x7f80_0001)] {
            assert!(act_f32_fast(act, x).is_nan(), "{}(NaN)", act.name());
        }
    }
}

#[test]
fn transcendental_avx512_gives_the_avx2_bits() {
    let Some(avx2) = variant("avx2") else { return };
    let xs = trans_sweep();
    for act in trans_acts() {
        // Whole blocks and every tail length, at several offsets.
        for (start, len) in [(0, xs.len()), (0, 1), (3, 15), (5, 16), (7, 17), (11, 31), (13, 33)] {
            let x = &xs[start..start + len];
            let what = format!("{} at {start}, {len} long", act.name());
            check_variants(&run_with(avx2, act, x), &wider_than_avx2(), same, &what, |k| run_with(k, act, x));
        }
    }
}

#[test]
fn transcendental_forms_do_not_depend_on_length_position_or_alias() {
    let vector: Vec<(&'static str, Kernels)> = variants().into_iter().filter(|(_, k)| k.trans.is_some()).collect();
    if vector.is_empty() {
        return;
    }
    let data = random_values(64, 4242);
    for act in trans_acts() {
        let alone: Vec<f32> = data.iter().map(|&x| act_f32_fast(act, x)).collect();
        for len in LENGTHS.into_iter().filter(|&n| n <= 33) {
            // Unaligned starts: every offset of a 64-byte line.
            for start in 0..16.min(data.len() - len + 1) {
                let x = &data[start..start + len];
                let want = &alone[start..start + len];
                let what = format!("{} len {len} start {start}", act.name());
                check_variants(want, &vector, same, &what, |k| run_with(k, act, x));
                check_variants(want, &vector, same, &format!("{what} in place"), |k| run_in_place_with(k, act, x));
            }
        }
        // The dispatched entry, serial and split, out of place and in place.
        let long = random_values(100_003, 77);
        let serial = dispatched(act, &long);
        let mut par = vec![0f32; long.len()];
        let mut inplace = long.clone();
        // SAFETY: `long` and `par` hold `long.len()` f32 and are distinct;
        // `inplace` is read and written in place.
        unsafe {
            act_f32_slice(act, long.as_ptr(), par.as_mut_ptr(), long.len(), true);
            act_in_place_f32(act, inplace.as_mut_ptr(), inplace.len(), true);
        }
        for (i, &x) in long.iter().enumerate().step_by(97) {
            assert!(same(serial[i], act_f32_fast(act, x)), "{} serial at {i}", act.name());
        }
        for i in 0..long.len() {
            assert!(same(par[i], serial[i]), "{} par at {i}", act.name());
            assert!(same(inplace[i], serial[i]), "{} in place at {i}", act.name());
        }
    }
}

/// The bounds over a wider sweep than the suite's: every `STRIDE`-th f32
/// bit pattern (default 61: 70M inputs per kind, about 20 s; `STRIDE=7`,
/// 613M, is how the constants were measured, about 4 minutes). Prints the
/// worst errors; fails if any input exceeds its bound.
/// `cargo test -p rlx-runtime --release --lib transcendental_bounds_over_a_wide_sweep -- --ignored --nocapture`
#[test]
#[ignore = "minutes; run by hand to re-measure the bounds"]
fn transcendental_bounds_over_a_wide_sweep() {
    if !act_has_simd(ActKind::Sigmoid) {
        return;
    }
    let stride: u32 = std::env::var("STRIDE").ok().and_then(|v| v.parse().ok()).unwrap_or(61);
    let last = u32::MAX / stride;
    for act in trans_acts() {
        let (mut worst, mut per_arg, mut over) = ((0f64, 0f32), (0f64, 0f32), 0usize);
        // In chunks of 16M inputs, to keep the buffers small.
        for chunk in (0..=last).step_by(1 << 24) {
            let end = last.min(chunk + (1 << 24) - 1);
            let xs: Vec<f32> = (chunk..=end).map(|i| f32::from_bits(i * stride)).filter(|x| x.is_finite()).collect();
            for (&x, &g) in xs.iter().zip(&dispatched(act, &xs)) {
                let want = reference(act, f64::from(x));
                let w32 = want as f32;
                if w32.is_infinite() {
                    over += usize::from(g != w32);
                    continue;
                }
                let (err, c) = ((f64::from(g) - want).abs() / ulp_at(w32), conditioning(act, x));
                over += usize::from(err > trans_bound(act, x));
                if c < 1.0 && err > worst.0 {
                    worst = (err, x);
                } else if c >= 1.0 && err / c > per_arg.0 {
                    per_arg = (err / c, x);
                }
            }
        }
        println!(
            "{act:?}: worst {:.3} ulp at {:e}, {:.3} per unit of argument at {:e}; {over} over the bound",
            worst.0, worst.1, per_arg.0, per_arg.1
        );
        assert_eq!(over, 0, "{act:?}: {over} inputs over the bound");
    }
}

/// The exact GELU's vector results, pinned by a checksum over
/// `pinning_inputs` on every vector variant (both widths), so a rewrite
/// cannot change them unnoticed.
#[test]
fn vector_gelu_keeps_its_pinned_bits() {
    use crate::kernels::test_support::{bits_checksum, pinning_inputs};
    let x = pinning_inputs();
    for (name, k) in variants() {
        if k.exact.is_none() {
            continue;
        }
        let out = run_with(k, ActKind::Gelu, &x);
        assert_eq!(bits_checksum(&out), VECTOR_GELU_BITS, "{name} {:#018x}", bits_checksum(&out));
    }
}

/// See [`vector_gelu_keeps_its_pinned_bits`].
const VECTOR_GELU_BITS: u64 = 0x432c_807c_478e_e06d;
