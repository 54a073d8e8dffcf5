//! Activations recognised by their values. Exporters write GELU, SiLU,
//! Mish or HardSwish as graphs of elementary ops, each in its own spelling
//! (the erf or the tanh form, the half first or last, `Pow` or products,
//! TF's `x * relu6(x + 3) / 6`, operands in any order). Rather than match
//! spellings, this pass evaluates them:
//!
//! 1. For each f32 tensor `x` read by an elementwise thunk, its **cone** is
//!    every later `Activation` or same-length `BinaryFull` computable from
//!    `x` and one-element constants alone (any shape of graph: `x` may be
//!    read by several of them).
//! 2. The cone is evaluated in f64 at fixed probe points: a dense grid over
//!    [-12, 12] and powers of two up to 2^127 of both signs.
//! 3. A value of the cone (the latest first) that equals a known
//!    activation of `x` at every probe, within what the f32 rounding of
//!    the exporters' constants moves it (`close`), becomes one
//!    `Activation { src: x, dst, act }` in place of the thunks computing it
//!    — when they are all the value needs and nothing else reads their
//!    intermediates.
//!
//! The f32 kernels then compute the activation in one pass within a few
//! ulp of the formula (`docs/kernels/activation.md`), and the producers
//! pass can fold it into the product or convolution before it. A cone
//! that matches nothing is left to the elementwise chains.
//!
//! Linear in the graph: a cone stops at [`MAX_CONE`] thunks (an
//! activation is a handful of ops, and a long elementwise chain would
//! otherwise make every tensor's cone the rest of the chain), and each cone
//! is first evaluated at a few of the probes ([`SCREEN`]): only a
//! cone with a value that matches a candidate there is evaluated at all of
//! them. The candidates' values at the probes are computed once.
//!
//! Probing decides equality of smooth functions beyond doubt (two
//! different compositions of these ops that agree at ~1,000 points
//! spread over the whole f32 range do not occur in exported graphs); a
//! piecewise cone (`Max`, `Min`, `Clip`, `Relu`) is compared at 1/32
//! spacing, which finds every breakpoint an exporter writes (they sit on
//! the constants, here ±3) but could in principle miss a pair of
//! breakpoints crafted closer together than that.

use rlx_sched::{ActKind, BinaryOp, Role, Thunk};

use super::{binary, fused_comment, Arg, Rewrite, Uses};
use crate::lower::{Lowered, LoweredThunk};
use rlx_sched::thunk::Activation;

/// The activations looked for, most specific first.
const CANDIDATES: [ActKind; 8] = [
    ActKind::Gelu,
    ActKind::GeluTanh,
    ActKind::Silu,
    ActKind::Mish,
    ActKind::HardSwish,
    ActKind::Sigmoid,
    ActKind::Softplus,
    ActKind::Tanh,
];

/// How far past the last thunk that joined a cone to look for more: the
/// ops of one activation sit together in every exported graph.
const LOOKAHEAD: usize = 32;

/// The most thunks a cone holds: more than any spelling of an activation
/// takes, and a bound on the work per tensor.
const MAX_CONE: usize = 64;

/// The screening probes: a few of the probes, where the candidates are far
/// from each other and from the ops' simple compositions.
const SCREEN: [f64; 6] = [-3.0, -1.0, -0.25, 0.5, 1.5, 2.75];

/// Runs the pass.
pub(super) fn recognise_activations(lowered: &mut Lowered) {
    let uses = Uses::new(lowered);
    let all = Probes::new(probes());
    let screen = Probes::new(SCREEN.to_vec());
    let mut rewrite = Rewrite::new(lowered.thunks.len());
    let mut tried = vec![false; lowered.storages.len()];
    for t in 0..lowered.thunks.len() {
        for x in elementwise_reads(lowered, t) {
            if std::mem::replace(&mut tried[x], true) {
                continue;
            }
            // A value matching a candidate at every probe matches it at
            // the screening ones: a cone failing there has no match.
            if !Cone::grow(lowered, &uses, x, t, &screen.points).may_match(&screen) {
                continue;
            }
            let cone = Cone::grow(lowered, &uses, x, t, &all.points);
            if let Some((members, y, act)) = cone.recognised(lowered, &uses, &rewrite, &all) {
                let comment = fused_comment(act.name(), &lowered.thunks, &members);
                rewrite.remove(&members);
                let thunk = Thunk::Activation(Activation { src: x, dst: y, len: cone.len, act });
                rewrite.insert_before(members[0], LoweredThunk { thunk, comment });
            }
        }
    }
    rewrite.apply(lowered);
}

/// The probe points: every 1/32 over [-12, 12], then ±2^k up to 2^127.
fn probes() -> Vec<f64> {
    let grid = (-384..=384).map(|i| f64::from(i) / 32.0);
    let powers = (4..=127).flat_map(|k| [2f64.powi(k), -(2f64.powi(k))]);
    grid.chain(powers).collect()
}

/// Probe points with every candidate's value at each, computed once.
struct Probes {
    points: Vec<f64>,
    /// `candidates[c][i]`: `CANDIDATES[c]` at `points[i]`.
    candidates: Vec<Vec<f64>>,
}

impl Probes {
    fn new(points: Vec<f64>) -> Self {
        let candidates = CANDIDATES
            .iter()
            .map(|&act| points.iter().map(|&x| f64_act(act, x).expect("candidates evaluate")).collect())
            .collect();
        Probes { points, candidates }
    }

    /// The first candidate `ys` (values at the points) equals.
    fn matching(&self, ys: &[f64]) -> Option<ActKind> {
        let xs = &self.points;
        CANDIDATES
            .into_iter()
            .zip(&self.candidates)
            .find(|(_, a)| xs.iter().zip(ys).zip(a.iter()).all(|((&x, &y), &a)| close(y, a, x)))
            .map(|(act, _)| act)
    }
}

/// The full-length f32 storages thunk `t` reads, if it is an elementwise
/// thunk a cone can hold.
fn elementwise_reads(l: &Lowered, t: usize) -> Vec<usize> {
    match &l.thunks[t].thunk {
        Thunk::Activation(a) if f64_act(a.act, 0.5).is_some() => vec![a.src],
        thunk => binary(l, thunk)
            .map_or(Vec::new(), |b| [b.lhs, b.rhs].iter().filter(|s| s.arg == Arg::Full).map(|s| s.id).collect()),
    }
}

/// The elementwise thunks computable from `x` and constants, with the
/// value of each at every probe.
struct Cone {
    x: usize,
    len: usize,
    /// Thunk indices, ascending, with the storage each writes.
    thunks: Vec<(usize, usize)>,
    /// Probes per value.
    points: usize,
    /// Storage -> its slot in `values` (`x` included).
    slots: std::collections::BTreeMap<usize, usize>,
    /// Each slot's value at every probe, slot after slot.
    values: Vec<f64>,
}

/// How a cone thunk computes its value from the cone's slots.
enum Eval {
    Act(ActKind, usize),
    Binary(BinaryOp, Operand, Operand),
}

impl Cone {
    /// Grows the cone of `x` from its first reader `first`.
    fn grow(l: &Lowered, uses: &Uses, x: usize, first: usize, probes: &[f64]) -> Cone {
        let mut cone = Cone {
            x,
            len: 0,
            thunks: Vec::new(),
            points: probes.len(),
            slots: Default::default(),
            values: probes.to_vec(),
        };
        cone.slots.insert(x, 0);
        let mut last_join = first;
        let mut t = first;
        while t < l.thunks.len() && t <= last_join + LOOKAHEAD && cone.thunks.len() < MAX_CONE {
            // `x` changing would change what the cone computes.
            if uses.written_within(x, t, t) {
                break;
            }
            if let Some((dst, len, eval)) = cone.joins(l, uses, t) {
                if cone.thunks.is_empty() {
                    cone.len = len;
                }
                if len == cone.len {
                    cone.evaluate(dst, eval);
                    cone.thunks.push((t, dst));
                    last_join = t;
                }
            }
            t += 1;
        }
        cone
    }

    /// The value of storage `id` at every probe, when it is in the cone.
    fn value(&self, id: usize) -> Option<&[f64]> {
        self.slots.get(&id).map(|&s| &self.values[s * self.points..(s + 1) * self.points])
    }

    /// Thunk `t`'s output, length and computation, when `t` is an
    /// elementwise thunk reading only the cone and constants and writing a
    /// storage nothing else writes.
    fn joins(&self, l: &Lowered, uses: &Uses, t: usize) -> Option<(usize, usize, Eval)> {
        let slot = |id: usize| self.slots.get(&id).copied();
        let (dst, len, eval) = match &l.thunks[t].thunk {
            Thunk::Activation(a) => {
                f64_act(a.act, 0.5)?;
                (a.dst, a.len, Eval::Act(a.act, slot(a.src)?))
            }
            thunk => {
                let b = binary(l, thunk)?;
                f64_binary(b.op, 0.5, 0.5)?;
                let side = |s: super::Side| match s.arg {
                    Arg::Full => slot(s.id).map(Operand::Slot),
                    Arg::Const(c) => Some(Operand::Const(f64::from(c))),
                    Arg::Other => None,
                };
                (b.dst, b.len, Eval::Binary(b.op, side(b.lhs)?, side(b.rhs)?))
            }
        };
        let fresh = uses.writers[dst] == [t] && !self.slots.contains_key(&dst);
        fresh.then_some((dst, len, eval))
    }

    /// Appends the value of `dst`, computed by `eval`, at every probe.
    fn evaluate(&mut self, dst: usize, eval: Eval) {
        let n = self.points;
        let at = |values: &[f64], o: &Operand, i: usize| match *o {
            Operand::Slot(s) => values[s * n + i],
            Operand::Const(c) => c,
        };
        self.slots.insert(dst, self.values.len() / n);
        self.values.reserve(n);
        for i in 0..n {
            let v = match &eval {
                Eval::Act(act, s) => f64_act(*act, self.values[s * n + i]),
                Eval::Binary(op, a, b) => f64_binary(*op, at(&self.values, a, i), at(&self.values, b, i)),
            };
            // Whether an op or activation evaluates does not depend on
            // the value: `joins` checked it.
            self.values.push(v.expect("checked by joins"));
        }
    }

    /// Whether some value of the cone equals a candidate at `probes`
    /// (the points it was grown at).
    fn may_match(&self, probes: &Probes) -> bool {
        self.thunks.iter().any(|(_, y)| self.value(*y).and_then(|v| probes.matching(v)).is_some())
    }

    /// The largest recognised activation of the cone (grown at `probes`'
    /// points): the thunks computing it (ascending), its storage and the
    /// activation.
    fn recognised(
        &self,
        l: &Lowered,
        uses: &Uses,
        rewrite: &Rewrite,
        probes: &Probes,
    ) -> Option<(Vec<usize>, usize, ActKind)> {
        for &(t, y) in self.thunks.iter().rev() {
            let Some(act) = self.value(y).and_then(|v| probes.matching(v)) else {
                continue;
            };
            let members = self.members(l, t);
            if members.len() >= 2 && rewrite.free(&members) && self.replaceable(l, uses, &members, y) {
                return Some((members, y, act));
            }
        }
        None
    }

    /// The thunks of the cone that the value written by thunk `t` depends
    /// on (`t` included), ascending.
    fn members(&self, l: &Lowered, t: usize) -> Vec<usize> {
        let writer: std::collections::BTreeMap<usize, usize> = self.thunks.iter().map(|&(t, d)| (d, t)).collect();
        let mut needed = vec![t];
        let mut out = Vec::new();
        while let Some(u) = needed.pop() {
            if out.contains(&u) {
                continue;
            }
            out.push(u);
            for (_, &id) in l.thunks[u].thunk.operands() {
                if let Some(&w) = writer.get(&id).filter(|&&w| w != u) {
                    needed.push(w);
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// Whether `members` can become one thunk at the first of them writing
    /// `y`: every intermediate is plain f32 scratch only they touch, `x`
    /// is not written while they run, and nothing between the first and
    /// the last touches `y`.
    fn replaceable(&self, l: &Lowered, uses: &Uses, members: &[usize], y: usize) -> bool {
        let (first, last) = (members[0], *members.last().expect("non-empty"));
        let private = members.iter().filter_map(|&m| self.thunks.iter().find(|&&(t, _)| t == m)).all(|&(_, d)| {
            let s = &l.storages[d];
            d == y || (s.role == Role::Scratch && s.is_plain() && uses.touches[d].iter().all(|u| members.contains(u)))
        });
        private
            && !uses.written_within(self.x, first, last)
            && uses.touches[y].iter().all(|&u| u == last || !(first..last).contains(&u))
    }
}

/// A binary's operand: a slot of the cone or a constant.
enum Operand {
    Slot(usize),
    Const(f64),
}

/// Whether the cone's `y` and an activation's `a` at probe `x` agree as
/// closely as an f32 evaluation of either could tell: within 1e-6 of the
/// value, plus half an ulp of 1 times `|x|`, the absolute error f32 makes
/// where these formulas cancel (`1 + erf(u)` or `1 + tanh(u)` for large
/// negative `u`, then scaled by `x`). The exporters' constants, each a
/// rounding or two from its exact value, stay inside this; GELU's erf and
/// tanh forms differ by over 1e-4 near |x| = 2 and by 1.2e-6 at x = -5,
/// outside it (`the_candidates_are_told_apart`).
fn close(y: f64, a: f64, x: f64) -> bool {
    let half_ulp_of_one = f64::from(f32::EPSILON) / 2.0;
    (y.is_nan() && a.is_nan()) || y == a || (y - a).abs() <= 1e-6 * a.abs() + half_ulp_of_one * x.abs()
}

/// `op(a, b)` in f64, for the ops a cone may hold.
fn f64_binary(op: BinaryOp, a: f64, b: f64) -> Option<f64> {
    Some(match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Pow => a.powf(b),
        BinaryOp::Max => a.max(b),
        BinaryOp::Min => a.min(b),
        _ => return None,
    })
}

/// `act(x)` in f64, for the activations a cone may hold (and every
/// candidate).
fn f64_act(act: ActKind, x: f64) -> Option<f64> {
    let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
    let softplus = |v: f64| v.max(0.0) + (-v.abs()).exp().ln_1p();
    Some(match act {
        ActKind::Identity => x,
        ActKind::Relu => x.max(0.0),
        ActKind::Gelu => 0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2)),
        ActKind::GeluTanh => {
            let c = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
        }
        ActKind::Silu => x * sigmoid(x),
        ActKind::Sigmoid => sigmoid(x),
        ActKind::Tanh => x.tanh(),
        ActKind::Exp => x.exp(),
        ActKind::Log => x.ln(),
        ActKind::Sqrt => x.sqrt(),
        ActKind::Rsqrt => 1.0 / x.sqrt(),
        ActKind::Neg => -x,
        ActKind::Abs => x.abs(),
        ActKind::Recip => 1.0 / x,
        ActKind::Square => x * x,
        ActKind::Erf => erf(x),
        ActKind::Softplus => softplus(x),
        ActKind::Mish => x * softplus(x).tanh(),
        ActKind::HardSwish => x * (x / 6.0 + 0.5).clamp(0.0, 1.0),
        ActKind::Softsign => x / (1.0 + x.abs()),
        ActKind::HardSigmoid { alpha, beta } => (f64::from(alpha) * x + f64::from(beta)).clamp(0.0, 1.0),
        ActKind::Clip { min, max } => x.max(f64::from(min)).min(f64::from(max)),
        ActKind::LeakyRelu { alpha } => {
            if x >= 0.0 {
                x
            } else {
                f64::from(alpha) * x
            }
        }
        _ => return None,
    })
}

/// The error function in f64, to ~1e-15: its Maclaurin series below 3,
/// the continued fraction of `erfc` above.
fn erf(x: f64) -> f64 {
    let a = x.abs();
    if a.is_nan() {
        return f64::NAN;
    }
    let v = if a < 3.0 {
        // 2/sqrt(pi) * sum (-1)^n a^(2n+1) / (n! (2n+1)).
        let (mut term, mut sum, mut n) = (a, a, 0.0);
        while term.abs() > 1e-17 * sum.abs() {
            n += 1.0;
            term *= -a * a / n;
            sum += term / (2.0 * n + 1.0);
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else if a < 27.0 {
        // erfc(a) = exp(-a^2) / sqrt(pi) / (a + 1/2 / (a + 1 / (a + 3/2 / (a + ...)))).
        let mut f = a;
        for k in (1..=60).rev() {
            f = a + f64::from(k) / 2.0 / f;
        }
        1.0 - (-a * a).exp() / std::f64::consts::PI.sqrt() / f
    } else {
        1.0
    };
    v.copysign(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        // erf(0.5), erf(1), erf(2), erf(3.5), from tables to 16 digits.
        for (x, want) in [
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (3.5, 0.999_999_256_901_627_7),
        ] {
            assert!((erf(x) - want).abs() < 1e-14, "erf({x}) = {}, want {want}", erf(x));
            assert!((erf(-x) + want).abs() < 1e-14);
        }
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(erf(40.0), 1.0);
    }

    #[test]
    fn the_screening_probes_are_probes() {
        // A cone that matches at every probe must match at these.
        let probes = probes();
        assert!(SCREEN.iter().all(|x| probes.contains(x)));
    }

    #[test]
    fn the_candidates_are_told_apart() {
        // Each pair differs at some probe.
        let probes = probes();
        let differ =
            |a: ActKind, b: ActKind| probes.iter().any(|&x| !close(f64_act(a, x).unwrap(), f64_act(b, x).unwrap(), x));
        for (i, &a) in CANDIDATES.iter().enumerate() {
            for &b in &CANDIDATES[i + 1..] {
                assert!(differ(a, b), "{a:?} and {b:?} look the same");
            }
        }
    }
}
