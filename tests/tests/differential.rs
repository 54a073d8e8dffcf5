//! Generated code vs the interpreter, bit for bit, on every run case.
//!
//! Each `tests/sched/run/*.sched` is compiled into this crate by the build
//! script; here each case runs through the interpreter and through its
//! generated code from the same zeroed arena and the same inputs, and the
//! whole arenas must be identical. Both paths call the same kernels with
//! the same plan decisions, so any difference is a code generator bug.

use std::collections::BTreeMap;
use std::path::Path;

use rand::{Rng, SeedableRng};
use rlx_interp::Interpreter;
use rlx_sched::{DType, Schedule, ThunkKind};
use rlx_tests::CASES;

/// Deterministic input bytes for a buffer. Integers stay in `0..4` so they
/// are valid indices for the small tables the cases use.
pub fn input_bytes(dtype: DType, elems: usize, seed: u64) -> Vec<u8> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(elems * dtype.size());
    for _ in 0..elems {
        match dtype {
            DType::F32 => out.extend_from_slice(&rng.gen_range(-2.0f32..2.0).to_le_bytes()),
            DType::F64 => out.extend_from_slice(&rng.gen_range(-2.0f64..2.0).to_le_bytes()),
            DType::F16 => out.extend_from_slice(&half::f16::from_f32(rng.gen_range(-2.0f32..2.0)).to_le_bytes()),
            DType::Bf16 => out.extend_from_slice(&half::bf16::from_f32(rng.gen_range(-2.0f32..2.0)).to_le_bytes()),
            DType::I64 => out.extend_from_slice(&rng.gen_range(0i64..4).to_le_bytes()),
            DType::I32 => out.extend_from_slice(&rng.gen_range(0i32..4).to_le_bytes()),
            DType::I16 => out.extend_from_slice(&rng.gen_range(0i16..4).to_le_bytes()),
            DType::U16 => out.extend_from_slice(&rng.gen_range(0u16..4).to_le_bytes()),
            DType::U32 => out.extend_from_slice(&rng.gen_range(0u32..4).to_le_bytes()),
            DType::U64 => out.extend_from_slice(&rng.gen_range(0u64..4).to_le_bytes()),
            DType::I8 => out.push(rng.gen_range(0i8..4) as u8),
            DType::U8 | DType::Bool => out.push(rng.gen_range(0u8..2)),
        }
    }
    out
}

fn first_difference(s: &Schedule, a: &[u8], b: &[u8]) -> String {
    let Some(i) = a.iter().zip(b).position(|(x, y)| x != y) else {
        return format!("arena lengths differ: {} vs {}", a.len(), b.len());
    };
    let owner = s
        .buffers()
        .iter()
        .find(|buf| buf.segment == rlx_sched::Segment::Arena && (buf.offset..buf.offset + buf.bytes()).contains(&i))
        .map_or("no buffer".to_string(), |buf| format!("buffer `{}` (+{})", buf.name, i - buf.offset));
    format!("first differing arena byte {i}, in {owner}")
}

/// Runs per case: one per entry point, or several when the case has
/// `state` (what one run leaves must be what the next reads, on both
/// sides).
const STATE_STEPS: usize = 4;

/// The entry point of each run: every entry in turn, twice round when the
/// case has state (so each entry reads what the others left).
fn entry_plan(s: &Schedule) -> Vec<usize> {
    let n = s.entries().len();
    let runs = if s.states().next().is_some() { STATE_STEPS.max(2 * n) } else { n };
    (0..runs).map(|step| step % n).collect()
}

/// The inputs of run `step` of entry `entry`: fresh values per run, and an
/// input named `pos` (a decoder step's position) set to `step`, so
/// consecutive runs fill consecutive cache rows until they run past the
/// cache.
fn step_inputs(s: &Schedule, entry: usize, step: usize) -> Vec<(usize, Vec<u8>)> {
    s.entries()[entry]
        .inputs
        .iter()
        .map(|&i| {
            let b = &s.buffers()[i];
            let bytes = if b.name == "pos" && b.dtype == DType::I64 && b.elems() == 1 {
                (step as i64).to_le_bytes().to_vec()
            } else {
                input_bytes(b.dtype, b.elems(), 0x5eed + i as u64 + 1000 * step as u64)
            };
            (b.offset, bytes)
        })
        .collect()
}

#[test]
fn generated_code_matches_the_interpreter_bit_for_bit() {
    assert!(!CASES.is_empty(), "no run cases were compiled");
    let mut failures = Vec::new();
    for case in CASES {
        let path = Path::new(case.sched);
        let (s, weights) = rlx_tests::load_with_weights(path);
        let plan = entry_plan(&s);
        let steps = plan.len();
        let inputs: Vec<_> = plan.iter().enumerate().map(|(step, &e)| (e, step_inputs(&s, e, step))).collect();
        let generated = (case.run)(&inputs);
        let mut interp = Interpreter::new(s.clone(), &weights).unwrap();
        for (step, (entry, step_inputs)) in inputs.iter().enumerate() {
            for (&b, (_, bytes)) in s.entries()[*entry].inputs.iter().zip(step_inputs) {
                interp.set_bytes(&s.buffers()[b].name, bytes).unwrap();
            }
            interp.run_entry(*entry);
            if interp.arena() != generated[step].as_slice() {
                let at = first_difference(&s, interp.arena(), &generated[step]);
                failures.push(format!("{} (run {}, entry {entry}): {at}", case.name, step + 1));
            }
        }
        interp.reset_state();
        if interp.arena() != generated[steps].as_slice() {
            failures.push(format!(
                "{} (reset_state): {}",
                case.name,
                first_difference(&s, interp.arena(), &generated[steps])
            ));
        }
        if s.states().any(|b| interp.bytes(&b.name).unwrap().iter().any(|&x| x != 0)) {
            failures.push(format!("{}: reset_state left a state buffer non-zero", case.name));
        }
    }
    eprintln!("{} run cases compared", CASES.len());
    assert!(failures.is_empty(), "generated code differs from the interpreter:\n{}", failures.join("\n"));
}

/// Every thunk kind is covered by at least three run cases.
#[test]
fn every_kind_has_three_run_cases() {
    let mut count: BTreeMap<ThunkKind, usize> = ThunkKind::ALL.iter().map(|k| (*k, 0)).collect();
    for case in CASES {
        let s = rlx_sched::load(Path::new(case.sched)).unwrap().schedule;
        let kinds: std::collections::BTreeSet<_> = s.nodes().iter().map(|n| n.thunk.kind()).collect();
        for k in kinds {
            *count.get_mut(&k).unwrap() += 1;
        }
    }
    let short: Vec<String> =
        count.iter().filter(|(_, n)| **n < 3).map(|(k, n)| format!("{} ({n})", k.name())).collect();
    assert!(short.is_empty(), "kinds with fewer than 3 run cases: {}", short.join(", "));
}
