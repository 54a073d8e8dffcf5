//! Exact GELU from its erf formula. The TorchScript exporter writes
//! `nn.GELU()` / `F.gelu` (opset < 20) as
//!
//! ```text
//! u = Div(x, 1.4142135) ; e = Erf(u) ; p = Add(e, 1.0) ; m = Mul(x, p) ; y = Mul(m, 0.5)
//! ```
//!
//! and Python formulas such as `x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))`
//! export with the half first (`h = Mul(x, 0.5) ; y = Mul(h, p)`) or with
//! `Mul(x, 0.70710677)` for the division. Both forms, with the operands of
//! each `Add`/`Mul` in either order and every constant within one ulp of
//! its exact value, become `Activation { src: x, dst: y, act: gelu }`
//! when each intermediate is f32 scratch that only the next step of the
//! pattern reads.

use rlx_sched::{ActKind, BinaryOp, Thunk};

use super::{binary, fused_comment, is_private, near, Arg, Binary, Rewrite, Uses};
use crate::lower::{Lowered, LoweredThunk};
use rlx_sched::thunk::Activation;

/// A matched pattern: the thunks it replaces and the activation.
struct Gelu {
    thunks: Vec<usize>,
    x: usize,
    y: usize,
    len: usize,
}

/// Runs the pass.
pub(super) fn fuse_gelu(lowered: &mut Lowered) {
    let uses = Uses::new(lowered);
    let mut rewrite = Rewrite::new(lowered.thunks.len());
    for t in 0..lowered.thunks.len() {
        let Some(g) = match_at(lowered, &uses, t) else { continue };
        if !rewrite.free(&g.thunks) {
            continue;
        }
        let first = *g.thunks.iter().min().expect("a pattern has thunks");
        let comment = fused_comment("gelu", &lowered.thunks, &g.thunks);
        rewrite.remove(&g.thunks);
        // At the first thunk of the pattern, right after `x` is computed,
        // so the activation fusion can fold it into `x`'s producer.
        let thunk = Thunk::Activation(Activation { src: g.x, dst: g.y, len: g.len, act: ActKind::Gelu });
        rewrite.insert_before(first, LoweredThunk { thunk, comment });
    }
    rewrite.apply(lowered);
}

/// The pattern whose `Erf` is thunk `erf_at`.
fn match_at(l: &Lowered, u: &Uses, erf_at: usize) -> Option<Gelu> {
    let Thunk::Activation(Activation { src: scaled, dst: erf, len, act: ActKind::Erf }) = l.thunks[erf_at].thunk else {
        return None;
    };
    let bin = |t: usize| binary(l, &l.thunks[t].thunk).filter(|b| b.len == len);
    // u = x / sqrt(2), or x * (1 / sqrt(2)).
    let pre_at = u.sole_writer(scaled)?;
    let pre = bin(pre_at)?;
    let x = divided_by_sqrt2(&pre)?;
    let add_at = u.sole_reader(erf, erf_at)?;
    let add = bin(add_at).filter(|b| b.op == BinaryOp::Add && b.const_with(erf).is_some_and(|c| near(c, 1.0)))?;
    let mul_at = u.sole_reader(add.dst, add_at)?;
    let mul = bin(mul_at).filter(|b| b.op == BinaryOp::Mul)?;
    let other = mul.both_ways().into_iter().find_map(|(this, other)| {
        (this.id == add.dst && this.arg == Arg::Full && other.arg == Arg::Full).then_some(other.id)
    })?;
    let mut thunks = vec![pre_at, erf_at, add_at, mul_at];
    let mut private = vec![(scaled, pre_at, erf_at), (erf, erf_at, add_at), (add.dst, add_at, mul_at)];
    let y = if other == x {
        // x * p, then * 0.5.
        let half_at = u.sole_reader(mul.dst, mul_at)?;
        let half = bin(half_at).filter(|b| is_half_of(b, mul.dst))?;
        thunks.push(half_at);
        private.push((mul.dst, mul_at, half_at));
        half.dst
    } else {
        // (x * 0.5) * p.
        let half_at = u.sole_writer(other)?;
        let half = bin(half_at)?;
        if !is_half_of(&half, x) {
            return None;
        }
        thunks.push(half_at);
        private.push((other, half_at, mul_at));
        mul.dst
    };
    if !private.iter().all(|&(id, p, c)| is_private(l, u, id, p, c)) || x == y {
        return None;
    }
    let (first, last) = (*thunks.iter().min()?, *thunks.iter().max()?);
    // `x` is read at `first` instead of where the pattern read it: nothing
    // may write it in between. `y` is written at `first` instead of `last`:
    // nothing may touch it before `last`.
    let y_untouched_before = u.touches[y].first() == Some(&last) && u.writers[y] == [last];
    if u.written_within(x, first, last) || !y_untouched_before {
        return None;
    }
    Some(Gelu { thunks, x, y, len })
}

/// When `b` is `x / sqrt(2)` or `x * (1 / sqrt(2))`: `x`.
fn divided_by_sqrt2(b: &Binary) -> Option<usize> {
    match b.op {
        BinaryOp::Div => match (b.lhs.arg, b.rhs.arg) {
            (Arg::Full, Arg::Const(c)) if near(c, std::f32::consts::SQRT_2) => Some(b.lhs.id),
            _ => None,
        },
        BinaryOp::Mul => b.both_ways().into_iter().find_map(|(this, other)| match (this.arg, other.arg) {
            (Arg::Full, Arg::Const(c)) if near(c, std::f32::consts::FRAC_1_SQRT_2) => Some(this.id),
            _ => None,
        }),
        _ => None,
    }
}

/// Whether `b` is `v * 0.5` (either order).
fn is_half_of(b: &Binary, v: usize) -> bool {
    b.op == BinaryOp::Mul && b.const_with(v).is_some_and(|c| near(c, 0.5))
}
