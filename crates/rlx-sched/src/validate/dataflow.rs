//! Which arena bytes hold data when a thunk reads them.
//!
//! The arena is zeroed once when a model is created and reused by every
//! run. Inputs are written by the caller before each run; thunk outputs as
//! the thunks run, in order. A read of bytes that no input and no earlier
//! thunk wrote therefore sees:
//! - zeros on the first run and stale data of the previous run afterwards,
//!   when the same or a later thunk writes them: the results differ from
//!   run to run, an **error**;
//! - always zeros, when nothing ever writes them: deterministic, perhaps
//!   meant (a zero bias), perhaps not, a **warning**.
//!
//! Every output must be entirely written by thunks. With several entry
//! points each is checked on its own: its inputs, the state, its thunks,
//! its outputs.

use super::intervals::{pattern_intersects, IntervalSet};
use super::messages;
use super::thunks::ArenaAccess;
use crate::ast::Ast;
use crate::diag::Diagnostic;
use crate::schedule::{Entry, Role, Segment};

/// Unwritten runs collected per read: enough for a message and to find a
/// later writer, bounded so a scattered read stays cheap.
const MAX_RUNS: usize = 4096;

/// Strided writes with more rows than this are recorded as their bounding
/// range: exact enough for real schedules, and bounded work for any input.
const MAX_WRITE_ROWS: usize = 1 << 16;

/// The arena accesses of one thunk.
#[derive(Clone, Debug)]
pub(crate) struct Flow {
    pub line: u32,
    pub accesses: Vec<ArenaAccess>,
}

fn record_write(set: &mut IntervalSet, a: &ArenaAccess) {
    let p = &a.pattern;
    if p.is_empty() {
        return;
    }
    let base = a.base + p.start;
    if p.is_contiguous() || p.rows > MAX_WRITE_ROWS {
        set.insert(base, a.base + p.end);
    } else {
        for row in 0..p.rows {
            let lo = base + row * p.stride;
            set.insert(lo, lo + p.chunk);
        }
    }
}

/// Thunks the search for a reader's writer may look at in one validation:
/// a hostile file where thousands of thunks read what a distant thunk
/// writes would otherwise cost their product. Past it the hint says "a
/// later thunk" without its line.
const MAX_WRITER_SCAN: usize = 1_000_000;

/// The line of the first thunk from `flows` that writes a byte of `run`,
/// looking at no more than `budget` thunks (and spending them): `Err` when
/// the budget ran out first.
fn first_writer(flows: &[Flow], (lo, hi): (usize, usize), budget: &mut usize) -> Result<Option<u32>, ()> {
    for f in flows {
        *budget = budget.checked_sub(1).ok_or(())?;
        let mut writes = f.accesses.iter().filter(|a| a.dir.writes());
        if writes.any(|a| pattern_intersects(a.base, &a.pattern, lo, hi)) {
            return Ok(Some(f.line));
        }
    }
    Ok(None)
}

/// Runs the read-before-write and output-coverage checks, per entry: each
/// starts from its own inputs and the state, and covers its own outputs.
pub(crate) fn check(
    ast: &Ast,
    bytes: &[Option<usize>],
    flows: &[Flow],
    entries: &[Entry],
    diags: &mut Vec<Diagnostic>,
) {
    // Bytes some thunk of any entry writes: a read of them that its own
    // entry has not written sees whatever the last run of any entry left.
    let mut by_thunks = IntervalSet::new();
    for a in flows.iter().flat_map(|f| &f.accesses).filter(|a| a.dir.writes()) {
        record_write(&mut by_thunks, a);
    }
    let extent = |i: usize| {
        let d = &ast.buffers[i];
        let end = d.offset.value.checked_add(bytes[i]?)?;
        (d.segment == Segment::Arena).then_some((d.offset.value, end))
    };
    let mut scan_budget = MAX_WRITER_SCAN;
    for entry in entries {
        let mut written = IntervalSet::new();
        // Inputs are written by the caller; state holds zeros or what the
        // previous run left, both defined.
        let states = (0..ast.buffers.len()).filter(|&i| ast.buffers[i].role == Role::State);
        for (lo, hi) in entry.inputs.iter().copied().chain(states).filter_map(extent) {
            written.insert(lo, hi);
        }
        let own = &flows[entry.nodes.clone()];
        for (i, flow) in own.iter().enumerate() {
            for a in flow.accesses.iter().filter(|a| a.dir.reads()) {
                let runs = written.uncovered(a.base, &a.pattern, MAX_RUNS);
                let Some(&(lo, hi)) = runs.first() else { continue };
                let missing: usize = runs.iter().map(|(lo, hi)| hi - lo).sum();
                // The first unwritten run some thunk writes, if any.
                let later = runs.iter().find(|&&(lo, hi)| by_thunks.intersects(lo, hi));
                let d = if let Some(&run) = later {
                    // No earlier thunk of the entry writes a byte of `run`
                    // (it is unwritten here): the writer is this thunk, a
                    // later one, or one of another entry.
                    let writer = match first_writer(&own[i..], run, &mut scan_budget) {
                        Ok(Some(w)) => Some(w),
                        Ok(None) => first_writer(flows, run, &mut scan_budget).ok().flatten(),
                        Err(()) => None,
                    };
                    Diagnostic::error(a.span, messages::read_before_write(&a.name, a.dir, lo, hi, missing))
                        .with_hint(messages::read_before_write_hint(writer, flow.line))
                } else {
                    Diagnostic::warning(a.span, messages::read_never_written(&a.name, a.dir, lo, hi, missing))
                        .with_hint(messages::READ_NEVER_WRITTEN_HINT)
                };
                diags.push(d);
            }
            for a in flow.accesses.iter().filter(|a| a.dir.writes()) {
                record_write(&mut written, a);
            }
        }
        let mut by_entry = IntervalSet::new();
        for a in own.iter().flat_map(|f| &f.accesses).filter(|a| a.dir.writes()) {
            record_write(&mut by_entry, a);
        }
        for &o in &entry.outputs {
            let Some((lo, hi)) = extent(o) else { continue };
            let decl = &ast.buffers[o];
            let gaps: Vec<(usize, usize)> = by_entry.gaps(lo, hi).take(MAX_RUNS).collect();
            if let Some(&(g0, g1)) = gaps.first() {
                let missing: usize = gaps.iter().map(|(a, b)| b - a).sum();
                let message = match &entry.name {
                    None => messages::output_not_written(&decl.name.value, g0, g1, missing, hi - lo),
                    Some(e) => messages::output_not_written_by(&decl.name.value, e, g0, g1, missing, hi - lo),
                };
                diags.push(Diagnostic::error(decl.name.span, message).with_hint(messages::OUTPUT_NOT_WRITTEN_HINT));
            }
        }
    }
}
