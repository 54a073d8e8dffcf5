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

use std::collections::BTreeMap;

use rlx_sched::{ActKind, BinaryOp, DType, Step, StepArg, Thunk};

use super::{binary, fused_comment, is_private, Arg, Rewrite, Side, Uses};
use crate::lower::{Lowered, LoweredThunk};
use rlx_sched::thunk::{Activation, ElementwiseRegion};

/// A chain being grown. Growing it by one thunk costs a constant (or
/// logarithmic) amount of work, so the pass is linear in the thunks.
#[derive(Clone, Debug)]
struct Chain {
    thunks: Vec<usize>,
    inputs: Vec<usize>,
    /// Each input's index in `inputs`.
    input_index: BTreeMap<usize, usize>,
    steps: Vec<Step>,
    /// The storage holding the chain's value after its last step.
    value: usize,
    len: usize,
    /// The first thunk, at or after a step reading an input, that writes
    /// that input (`usize::MAX` for none): the region, which reads every
    /// input at the chain's last thunk, must end before it.
    stable_before: usize,
}

impl Chain {
    fn new(t: usize, len: usize, value: usize) -> Self {
        Chain {
            thunks: vec![t],
            inputs: Vec::new(),
            input_index: BTreeMap::new(),
            steps: Vec::new(),
            value,
            len,
            stable_before: usize::MAX,
        }
    }

    /// The region's argument for reading storage `id` at thunk `at`: an
    /// existing input or a new one.
    fn input(&mut self, uses: &Uses, id: usize, at: usize) -> StepArg {
        self.stable_before = self.stable_before.min(uses.next_write(id, at).unwrap_or(usize::MAX));
        let next = self.inputs.len();
        let k = *self.input_index.entry(id).or_insert(next);
        if k == next {
            self.inputs.push(id);
        }
        StepArg::Input(k)
    }

    /// Whether every input read by a step is still the same at the
    /// chain's last thunk, where the region will read it.
    fn inputs_stable(&self) -> bool {
        self.thunks.last().is_some_and(|&last| last < self.stable_before)
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
        let Some(mut chain) = start(lowered, &uses, t) else { continue };
        // Two chains can meet at a binary reading both their values: the
        // first one takes it, the other ends before it.
        while extend(lowered, &uses, &rewrite, &mut chain) {}
        if chain.thunks.len() < 2 || !chain.inputs_stable() {
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
fn start(l: &Lowered, uses: &Uses, t: usize) -> Option<Chain> {
    match l.thunks[t].thunk {
        Thunk::Activation(Activation { src, dst, len, act }) => {
            let f32s = l.storages[src].dtype == DType::F32 && l.storages[dst].dtype == DType::F32;
            if !f32s {
                return None;
            }
            let mut c = Chain::new(t, len, dst);
            c.input(uses, src, t);
            c.steps.push(Step::Act(act));
            Some(c)
        }
        ref thunk @ Thunk::BinaryFull { .. } => {
            let b = binary(l, thunk)?;
            let mut c = Chain::new(t, b.len, b.dst);
            let step = match (b.lhs.arg, b.rhs.arg) {
                (Arg::Full, Arg::Full) => {
                    c.input(uses, b.lhs.id, t);
                    Step::Binary { op: b.op, arg: c.input(uses, b.rhs.id, t), reversed: false }
                }
                (Arg::Full, Arg::Const(k)) => {
                    c.input(uses, b.lhs.id, t);
                    Step::Binary { op: b.op, arg: StepArg::Const(k), reversed: false }
                }
                (Arg::Const(k), Arg::Full) => {
                    c.input(uses, b.rhs.id, t);
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

/// The step a thunk adds to a chain, before its input is taken.
enum NextStep {
    Act(ActKind),
    /// The op, its other operand (full or a constant) and `reversed`.
    Binary(BinaryOp, Side, bool),
}

/// Grows `chain` by the thunk reading its value, when that thunk is free
/// in `rewrite`, can be a step, the value is private to the two and the
/// inputs stay stable; returns whether it did (`chain` is unchanged when
/// not).
fn extend(l: &Lowered, uses: &Uses, rewrite: &Rewrite, chain: &mut Chain) -> bool {
    let Some(&prev) = chain.thunks.last() else { return false };
    let value = chain.value;
    let Some(next) = uses.sole_reader(value, prev) else { return false };
    if !rewrite.free(&[next]) || !is_private(l, uses, value, prev, next) {
        return false;
    }
    // What the step applies, and the storage it writes.
    let (next_step, dst) = match l.thunks[next].thunk {
        Thunk::Activation(Activation { src, dst, len, act }) if src == value && len == chain.len => {
            if l.storages[dst].dtype != DType::F32 {
                return false;
            }
            (NextStep::Act(act), dst)
        }
        ref thunk @ Thunk::BinaryFull { .. } => {
            let Some(b) = binary(l, thunk).filter(|b| b.len == chain.len) else { return false };
            // `value op value` would need the accumulator twice.
            if b.lhs.id == value && b.rhs.id == value {
                return false;
            }
            let (other, flipped) = if b.lhs.id == value && b.lhs.arg == Arg::Full {
                (b.rhs, reversed(b.op, false))
            } else if b.rhs.id == value && b.rhs.arg == Arg::Full {
                (b.lhs, reversed(b.op, true))
            } else {
                return false;
            };
            let Some(flipped) = flipped else { return false };
            if other.arg == Arg::Other {
                return false;
            }
            (NextStep::Binary(b.op, other, flipped), b.dst)
        }
        _ => return false,
    };
    let stable_before = match next_step {
        NextStep::Binary(_, Side { id, arg: Arg::Full }, _) => {
            chain.stable_before.min(uses.next_write(id, next).unwrap_or(usize::MAX))
        }
        _ => chain.stable_before,
    };
    if next >= stable_before {
        return false;
    }
    let step = match next_step {
        NextStep::Act(act) => Step::Act(act),
        NextStep::Binary(op, other, reversed) => {
            let arg = match other.arg {
                Arg::Const(k) => StepArg::Const(k),
                _ => chain.input(uses, other.id, next),
            };
            Step::Binary { op, arg, reversed }
        }
    };
    chain.thunks.push(next);
    chain.steps.push(step);
    chain.value = dst;
    true
}
