//! Shared helpers for the workspace integration tests.

use rlx_runtime::model::GeneratedModel;

// Shared with the model crates' tests, which must not build the generator.
pub use rlx_testkit::{allocations, copy_bandwidth, models, CountingAlloc};

/// A validated schedule and its weights' data section (empty without
/// weights), as the interpreter takes them.
pub fn load_with_weights(sched: &std::path::Path) -> (rlx_sched::Schedule, Vec<u8>) {
    let s = rlx_sched::load(sched).unwrap_or_else(|e| panic!("{}: {e}", sched.display())).schedule;
    let weights = match &s.weights() {
        Some(w) => std::fs::read(sched.parent().unwrap().join(&w.path)).unwrap()[w.data_offset..].to_vec(),
        None => Vec::new(),
    };
    (s, weights)
}

/// One run: the entry point to run (an index into `ModelInfo::entries`, 0
/// for `run`) and `(arena offset, bytes)` per input it reads.
pub type StepInputs = (usize, Vec<(usize, Vec<u8>)>);

/// Runs generated code once per step on one model (state persists from
/// step to step); returns the arena after each step, then once more after
/// `reset_state`.
pub type RunFn = fn(&[StepInputs]) -> Vec<Vec<u8>>;

/// A compiled run case: a `.sched` file from `sched/run/` and a function
/// that runs its generated code.
pub struct Case {
    pub name: &'static str,
    /// Absolute path of the `.sched` file.
    pub sched: &'static str,
    /// Builds the generated model and runs it on each step's inputs.
    pub run: RunFn,
}

/// Runs a generated model on each step's raw inputs, in order, on one
/// model; returns the arena after each step and after `reset_state`.
pub fn run_model<M: GeneratedModel>(steps: &[StepInputs]) -> Vec<Vec<u8>> {
    let mut m = M::new();
    let mut arenas = Vec::with_capacity(steps.len() + 1);
    for (entry, inputs) in steps {
        for (off, bytes) in inputs {
            m.arena_mut()[*off..*off + bytes.len()].copy_from_slice(bytes);
        }
        m.run_entry(*entry);
        arenas.push(m.arena().to_vec());
    }
    m.reset_state();
    arenas.push(m.arena().to_vec());
    arenas
}

mod cases {
    use super::{run_model, Case};
    include!(concat!(env!("OUT_DIR"), "/cases.rs"));
}

pub use cases::CASES;

/// The `mlp` model generated with its weights memory-mapped from a side
/// file instead of embedded.
#[allow(dead_code, unused_imports, clippy::all)]
pub mod mmap_mlp {
    include!(concat!(env!("OUT_DIR"), "/mmap_mlp.rs"));
}
