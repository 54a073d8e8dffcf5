//! Elementwise chains: a run of f32 `Activation`s and `BinaryFull`s of one
//! length `len`, each reading the previous one's result element for
//! element, becomes one `ElementwiseRegion` (one pass over memory instead
//! of one per op, and no buffer for the intermediates).
//!
//! A step's other operand is another full-length tensor (a region input,
//! `StepArg::Input`) or a one-element constant (`StepArg::Const`); any
//! other broadcast ends the chain. Each intermediate must be f32 scratch
//! that only the next step touches. The region replaces the chain at its
//! last thunk, so every input it reads there must not be written between
//! the step that read it and that thunk. Chains of one thunk stay as they
//! are: a region of one step saves nothing.
//!
//! The region evaluates every step with the scalar `rlx_runtime::math`
//! functions, exactly as `BinaryFull` and the exact activation kernels do;
//! only `gelu`, whose `Activation` kernel is a vectorised approximation
//! within a few ulp, can round differently.

use rlx_sched::{BinaryOp, DType, Step, StepArg, Thunk};

use super::{binary, fused_comment, is_private, Arg, Rewrite, Uses};
use crate::lower::{Lowered, LoweredThunk};
use rlx_sched::thunk::{Activation, ElementwiseRegion};

/// A chain being grown.
#[derive(Clone, Debug)]
struct Chain {
    thunks: Vec<usize>,
    inputs: Vec<usize>,
    steps: Vec<Step>,
    /// The storage holding the chain's value after its last step.
    value: usize,
    len: usize,
    /// Each input read by the chain with the thunk that read it.
    reads: Vec<(usize, usize)>,
}

impl Chain {
    /// The region's argument for reading storage `id`: an existing input
    /// or a new one.
    fn input(&mut self, id: usize, at: usize) -> StepArg {
        self.reads.push((id, at));
        let k = self.inputs.iter().position(|&i| i == id).unwrap_or_else(|| {
            self.inputs.push(id);
            self.inputs.len() - 1
        });
        StepArg::Input(k)
    }

    /// Whether every input read by a step is still the same at the
    /// chain's last thunk, where the region will read it.
    fn inputs_stable(&self, uses: &Uses) -> bool {
        let last = *self.thunks.last().expect("a chain has a thunk");
        self.reads.iter().all(|&(id, at)| !uses.written_within(id, at, last))
    }
}

/// Runs the pass.
pub(super) fn fuse_chains(lowered: &mut Lowered) {
    let uses = Uses::new(lowered);
    let mut rewrite = Rewrite::new(lowered.thunks.len());
    for t in 0..lowered.thunks.len() {
        // A thunk already taken by an earlier chain cannot start one; a
        // thunk that could continue an earlier chain was taken by it.
        if !rewrite.free(&[t]) {
            continue;
        }
        let Some(mut chain) = start(lowered, t) else { continue };
        // Two chains can meet at a binary reading both their values: the
        // first one takes it, the other ends before it.
        while let Some(longer) = extend(lowered, &uses, &chain).filter(|c| rewrite.free(&c.thunks)) {
            chain = longer;
        }
        if chain.thunks.len() < 2 || !chain.inputs_stable(&uses) {
            continue;
        }
        let last = *chain.thunks.last().expect("checked length");
        let comment = fused_comment("elementwise", &lowered.thunks, &chain.thunks);
        rewrite.remove(&chain.thunks);
        let thunk = Thunk::ElementwiseRegion(ElementwiseRegion {
            inputs: chain.inputs,
            dst: chain.value,
            len: chain.len,
            steps: chain.steps,
        });
        rewrite.insert_before(last, LoweredThunk { thunk, comment });
    }
    rewrite.apply(lowered);
}

/// The `reversed` flag of a step applying `op` with the chain value as its
/// right operand when `value_on_right`: `op(arg, acc)`. The `.sched`
/// format writes reversed steps only for non-commutative ops; of the
/// commutative ones, `max`/`min` return their second operand on a
/// `+0`/`-0` tie, so swapping them could flip a zero's sign (and a later
/// division's infinity): such a step is not taken (`None`).
fn reversed(op: BinaryOp, value_on_right: bool) -> Option<bool> {
    match (value_on_right, op.is_commutative(), op) {
        (false, ..) => Some(false),
        (true, false, _) => Some(true),
        (true, true, BinaryOp::Max | BinaryOp::Min) => None,
        (true, true, _) => Some(false),
    }
}

/// The one-step chain of thunk `t`, when it can be a step.
fn start(l: &Lowered, t: usize) -> Option<Chain> {
    let chain =
        |len, value| Chain { thunks: vec![t], inputs: Vec::new(), steps: Vec::new(), value, len, reads: vec![] };
    match l.thunks[t].thunk {
        Thunk::Activation(Activation { src, dst, len, act }) => {
            let f32s = l.storages[src].dtype == DType::F32 && l.storages[dst].dtype == DType::F32;
            if !f32s {
                return None;
            }
            let mut c = chain(len, dst);
            c.input(src, t);
            c.steps.push(Step::Act(act));
            Some(c)
        }
        ref thunk @ Thunk::BinaryFull { .. } => {
            let b = binary(l, thunk)?;
            let mut c = chain(b.len, b.dst);
            let step = match (b.lhs.arg, b.rhs.arg) {
                (Arg::Full, Arg::Full) => {
                    c.input(b.lhs.id, t);
                    Step::Binary { op: b.op, arg: c.input(b.rhs.id, t), reversed: false }
                }
                (Arg::Full, Arg::Const(k)) => {
                    c.input(b.lhs.id, t);
                    Step::Binary { op: b.op, arg: StepArg::Const(k), reversed: false }
                }
                (Arg::Const(k), Arg::Full) => {
                    c.input(b.rhs.id, t);
                    Step::Binary { op: b.op, arg: StepArg::Const(k), reversed: reversed(b.op, true)? }
                }
                _ => return None,
            };
            c.steps.push(step);
            Some(c)
        }
        _ => None,
    }
}

/// `chain` with the thunk reading its value as one more step, when that
/// thunk can be a step and the value is private to the two.
fn extend(l: &Lowered, uses: &Uses, chain: &Chain) -> Option<Chain> {
    let prev = *chain.thunks.last()?;
    let value = chain.value;
    let next = uses.sole_reader(value, prev)?;
    if !is_private(l, uses, value, prev, next) {
        return None;
    }
    let mut c = chain.clone();
    c.thunks.push(next);
    match l.thunks[next].thunk {
        Thunk::Activation(Activation { src, dst, len, act }) if src == value && len == chain.len => {
            if l.storages[dst].dtype != DType::F32 {
                return None;
            }
            c.steps.push(Step::Act(act));
            c.value = dst;
        }
        ref thunk @ Thunk::BinaryFull { .. } => {
            let b = binary(l, thunk).filter(|b| b.len == chain.len)?;
            // `value op value` would need the accumulator twice.
            if b.lhs.id == value && b.rhs.id == value {
                return None;
            }
            let (other, flipped) = if b.lhs.id == value && b.lhs.arg == Arg::Full {
                (b.rhs, reversed(b.op, false)?)
            } else if b.rhs.id == value && b.rhs.arg == Arg::Full {
                (b.lhs, reversed(b.op, true)?)
            } else {
                return None;
            };
            let arg = match other.arg {
                Arg::Full => c.input(other.id, next),
                Arg::Const(k) => StepArg::Const(k),
                Arg::Other => return None,
            };
            c.steps.push(Step::Binary { op: b.op, arg, reversed: flipped });
            c.value = b.dst;
        }
        _ => return None,
    }
    c.inputs_stable(uses).then_some(c)
}
