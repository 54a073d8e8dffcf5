//! `ElementwiseRegion`: chains against a naive per-element loop that
//! applies each step's unfused function in step order: `crate::math` for
//! binaries, the activation family's fast path (`act_f32_fast`, whose
//! accuracy the activation tests bound) for activations.

use super::{random_values, same};
use crate::kernels::activation::act_f32_fast;
use crate::kernels::elementwise::region_f32;
use crate::math;
use rlx_core::{ActKind, BinaryOp, Step, StepArg};

fn naive(inputs: &[Vec<f32>], steps: &[Step], i: usize) -> f32 {
    let mut acc = inputs[0][i];
    for step in steps {
        acc = match *step {
            Step::Act(act) => act_f32_fast(act, acc),
            Step::Binary { op, arg, reversed } => {
                let v = match arg {
                    StepArg::Input(n) => inputs[n][i],
                    StepArg::Const(c) => c,
                };
                if reversed {
                    math::binary_f32(op, v, acc)
                } else {
                    math::binary_f32(op, acc, v)
                }
            }
        };
    }
    acc
}

fn bin(op: BinaryOp, arg: StepArg, reversed: bool) -> Step {
    Step::Binary { op, arg, reversed }
}

fn chains() -> Vec<Vec<Step>> {
    vec![
        vec![],
        vec![Step::Act(ActKind::Relu)],
        vec![bin(BinaryOp::Add, StepArg::Input(1), false), Step::Act(ActKind::Gelu)],
        vec![
            bin(BinaryOp::Sub, StepArg::Const(1.0), true),
            bin(BinaryOp::Mul, StepArg::Input(2), false),
            bin(BinaryOp::Div, StepArg::Input(1), true),
            Step::Act(ActKind::Clip { min: -2.0, max: 2.0 }),
            bin(BinaryOp::Max, StepArg::Const(f32::NAN), false),
            bin(BinaryOp::Pow, StepArg::Const(2.0), false),
            Step::Act(ActKind::Silu),
            bin(BinaryOp::Min, StepArg::Input(0), true),
        ],
        vec![
            Step::Act(ActKind::Tanh),
            bin(BinaryOp::Atan2, StepArg::Input(2), true),
            Step::Act(ActKind::HardSwish),
            bin(BinaryOp::Mod, StepArg::Const(0.75), false),
            Step::Act(ActKind::LeakyRelu { alpha: 0.1 }),
        ],
    ]
}

#[test]
fn chains_match_the_naive_loop() {
    for len in [0usize, 1, 9, 255, 256, 257, 1000] {
        let inputs: Vec<Vec<f32>> = (0..3).map(|k| random_values(len, 10 * len as u64 + k)).collect();
        let ptrs: Vec<*const f32> = inputs.iter().map(|v| v.as_ptr()).collect();
        for steps in chains() {
            for par in [false, true] {
                let mut out = vec![0f32; len];
                // SAFETY: every input and `out` hold `len` f32, `out` is distinct from
                // them, and the chains only read inputs 0 to 2.
                unsafe { region_f32(&ptrs, out.as_mut_ptr(), len, &steps, par) };
                for (i, got) in out.iter().enumerate() {
                    let want = naive(&inputs, &steps, i);
                    assert!(same(*got, want), "{steps:?} at {i}/{len}: {got} vs {want}");
                }
            }
        }
    }
}

#[test]
fn dst_may_alias_any_input() {
    let len = 700;
    let inputs: Vec<Vec<f32>> = (0..3).map(|k| random_values(len, 50 + k)).collect();
    for steps in chains() {
        for alias in 0..3 {
            let mut buf = inputs[alias].clone();
            let mut ptrs: Vec<*const f32> = inputs.iter().map(|v| v.as_ptr()).collect();
            ptrs[alias] = buf.as_ptr();
            // SAFETY: every input holds `len` f32; `buf` is input `alias` exactly
            // (same offset), which `region_f32` allows, and overlaps no other input.
            unsafe { region_f32(&ptrs, buf.as_mut_ptr(), len, &steps, false) };
            for (i, got) in buf.iter().enumerate() {
                assert!(same(*got, naive(&inputs, &steps, i)), "alias {alias} {steps:?} at {i}");
            }
        }
    }
}

#[test]
fn a_region_without_inputs_writes_nothing() {
    let mut out = vec![3f32; 4];
    // SAFETY: with no inputs nothing is read or written; `out` holds 4 f32.
    unsafe { region_f32(&[], out.as_mut_ptr(), 4, &[Step::Act(ActKind::Neg)], false) };
    assert_eq!(out, vec![3f32; 4]);
}
