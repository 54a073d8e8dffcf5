//! The header and the buffer table: names, sizes, segments, placement and
//! the overlaps the planner may and may not create.

use std::collections::BTreeMap;

use super::extents::product;
use super::messages;
use crate::ast::{Ast, BufferDecl, Header};
use crate::diag::Diagnostic;
use crate::schedule::{Buffer, Role, Segment, WeightsFile};

/// The only format version.
const VERSION: u32 = 1;
/// The smallest arena alignment: a cache line, enough for any SIMD load.
const MIN_ARENA_ALIGN: usize = 64;

/// The buffer table as declared, with sizes computed.
#[derive(Clone, Debug)]
pub(crate) struct Table {
    pub buffers: Vec<Buffer>,
    /// Byte size of each buffer; `None` when it overflowed (reported).
    pub bytes: Vec<Option<usize>>,
    /// The first declaration of each name.
    pub by_name: BTreeMap<String, usize>,
    /// What is left to spend on "did you mean" hints.
    pub suggest: super::suggest::Budget,
}

impl Table {
    pub(crate) fn lookup(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The declared name closest to a misspelt one, within the budget.
    pub(crate) fn closest_name(&self, word: &str) -> Option<&str> {
        self.suggest.closest(word, self.by_name.keys().map(String::as_str), self.by_name.len())
    }
}

/// Checks the header lines.
pub(crate) fn check_header(h: &Header, policy: &super::Policy, diags: &mut Vec<Diagnostic>) {
    if h.version.value != VERSION {
        diags.push(
            Diagnostic::error(h.version.span, messages::unsupported_version(h.version.value))
                .with_hint(messages::VERSION_HINT),
        );
    }
    if h.model.value.is_empty() {
        diags.push(Diagnostic::error(h.model.span, messages::EMPTY_MODEL));
    }
    let align = h.arena_align.value;
    if !align.is_power_of_two() || align < MIN_ARENA_ALIGN {
        diags.push(
            Diagnostic::error(h.arena_align.span, messages::bad_arena_align(align))
                .with_hint(messages::ARENA_ALIGN_HINT),
        );
    }
    // The arena is one allocation: Rust caps those at isize::MAX bytes.
    if h.arena_size.value.checked_add(align).is_none_or(|n| n > isize::MAX as usize) {
        diags.push(Diagnostic::error(h.arena_size.span, messages::arena_too_large(h.arena_size.value)));
    } else if h.arena_size.value > policy.max_arena {
        diags.push(
            Diagnostic::warning(h.arena_size.span, messages::arena_over_limit(h.arena_size.value, policy.max_arena))
                .with_hint(messages::ARENA_LIMIT_HINT),
        );
    }
    for (name, value) in
        [("mask_threshold", &h.mask_threshold), ("mask_neg_inf", &h.mask_neg_inf), ("score_skip", &h.score_skip)]
    {
        if value.value.is_nan() {
            diags.push(Diagnostic::error(value.span, messages::header_nan(name)).with_hint(messages::HEADER_NAN_HINT));
        }
    }
}

/// Builds the table: unique names, sizes that fit, roles in their segment.
pub(crate) fn build(ast: &Ast, diags: &mut Vec<Diagnostic>) -> Table {
    let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
    let mut buffers = Vec::with_capacity(ast.buffers.len());
    let mut bytes = Vec::with_capacity(ast.buffers.len());
    for (i, decl) in ast.buffers.iter().enumerate() {
        let name = &decl.name.value;
        match by_name.get(name) {
            Some(&first) => diags.push(
                Diagnostic::error(decl.name.span, messages::duplicate_buffer(name))
                    .with_label(messages::first_declared(ast.buffers[first].line)),
            ),
            None => {
                by_name.insert(name.clone(), i);
            }
        }
        let size = product(&decl.shape.value).and_then(|n| n.checked_mul(decl.dtype.value.size()));
        if size.is_none() {
            diags.push(Diagnostic::error(decl.shape.span, messages::buffer_too_large(name)));
        }
        match (decl.role, decl.segment) {
            (Role::Param, Segment::Arena) => diags.push(
                Diagnostic::error(decl.offset.span, messages::param_in_arena(name))
                    .with_hint(messages::PARAM_SEGMENT_HINT),
            ),
            (Role::Input | Role::Output | Role::Scratch | Role::State, Segment::Weights) => diags.push(
                Diagnostic::error(decl.offset.span, messages::not_param_in_weights(decl.role.name(), name))
                    .with_hint(messages::WEIGHTS_SEGMENT_HINT),
            ),
            _ => {}
        }
        bytes.push(size);
        buffers.push(Buffer {
            name: name.clone(),
            dtype: decl.dtype.value,
            shape: decl.shape.value.clone(),
            segment: decl.segment,
            offset: decl.offset.value,
            role: decl.role,
        });
    }
    Table { buffers, bytes, by_name, suggest: Default::default() }
}

/// Reports weights-segment buffers when the header has no `weights` line.
pub(crate) fn check_weights_line(ast: &Ast, diags: &mut Vec<Diagnostic>) {
    if ast.header.weights.is_some() {
        return;
    }
    let in_weights: Vec<&BufferDecl> = ast.buffers.iter().filter(|b| b.segment == Segment::Weights).collect();
    if let Some(first) = in_weights.first() {
        diags.push(
            Diagnostic::error(first.offset.span, messages::no_weights_line(&first.name.value, in_weights.len()))
                .with_hint(messages::WEIGHTS_LINE_HINT),
        );
    }
}

/// The byte ranges of arena buffers, for the overlap check.
fn arena_range(decl: &BufferDecl, bytes: Option<usize>) -> Option<(usize, usize)> {
    let n = bytes?;
    // A range whose end overflows is reported as past the arena.
    decl.offset.value.checked_add(n)?;
    (decl.segment == Segment::Arena).then_some((decl.offset.value, n))
}

/// Checks that every buffer lies inside its segment, is aligned, and that
/// only scratch buffers share arena bytes.
pub(crate) fn check_placement(ast: &Ast, table: &Table, weights: Option<&WeightsFile>, diags: &mut Vec<Diagnostic>) {
    let arena_size = ast.header.arena_size.value;
    let in_arena = ast.buffers.iter().filter(|b| b.segment == Segment::Arena).count();
    if arena_size == 0 && in_arena > 0 {
        diags.push(
            Diagnostic::error(ast.header.arena_size.span, messages::empty_arena(in_arena))
                .with_hint(messages::arena_size_hint(needed_arena(ast, table), ast.header.arena_align.value)),
        );
    }
    for (decl, bytes) in ast.buffers.iter().zip(&table.bytes) {
        let Some(bytes) = *bytes else { continue };
        let name = &decl.name.value;
        let offset = decl.offset.value;
        let align = decl.dtype.value.align();
        match decl.segment {
            Segment::Arena => {
                let end = offset.checked_add(bytes);
                if arena_size > 0 && end.is_none_or(|e| e > arena_size) {
                    diags.push(
                        Diagnostic::error(decl.offset.span, messages::buffer_past_arena(name, offset, end, arena_size))
                            .with_hint(messages::buffer_past_arena_hint(end)),
                    );
                }
                if offset % align != 0 {
                    diags.push(
                        Diagnostic::error(
                            decl.offset.span,
                            messages::buffer_misaligned(name, "arena", offset, align, decl.dtype.value),
                        )
                        .with_hint(messages::ALIGN_HINT),
                    );
                }
            }
            Segment::Weights => {
                // The data section is placed at `data_offset` in the
                // included file, so alignment is of the file offset.
                let (where_, at) = match weights {
                    Some(w) => ("weights file", w.data_offset.checked_add(offset)),
                    None => ("weights", Some(offset)),
                };
                if at.is_some_and(|at| at % align != 0) {
                    let at = at.unwrap_or(offset);
                    diags.push(
                        Diagnostic::error(
                            decl.offset.span,
                            messages::buffer_misaligned(name, where_, at, align, decl.dtype.value),
                        )
                        .with_hint(messages::WEIGHTS_ALIGN_HINT),
                    );
                }
            }
        }
    }
    check_overlaps(ast, table, diags);
}

/// The arena bytes the declared buffers need.
fn needed_arena(ast: &Ast, table: &Table) -> usize {
    ast.buffers
        .iter()
        .zip(&table.bytes)
        .filter_map(|(d, b)| arena_range(d, *b))
        .filter_map(|(o, n)| o.checked_add(n))
        .max()
        .unwrap_or(0)
}

/// Roles whose bytes belong to the caller or persist between runs: no other
/// buffer may share them.
fn is_io(role: Role) -> bool {
    matches!(role, Role::Input | Role::Output | Role::State)
}

/// Overlapping pairs reported at most: past this many the rest of a
/// hostile table is summed up in one error, so the check stays fast.
const MAX_OVERLAP_PAIRS: usize = 10_000;

/// Inputs, outputs and state own their bytes; scratch buffers may share
/// (the planner reuses memory of values that are dead).
///
/// A sweep over the buffers by offset, keeping the buffers still open
/// (inputs and outputs apart from all), finds only pairs that overlap and
/// involve an input or output, so the cost is `n log n` plus the pairs
/// reported. Each pair is reported once, at the later declaration, in the
/// order of the input or output it involves (the first one when both are).
fn check_overlaps(ast: &Ast, table: &Table, diags: &mut Vec<Diagnostic>) {
    use std::collections::BTreeSet;
    let ranges: Vec<Option<(usize, usize)>> =
        ast.buffers.iter().zip(&table.bytes).map(|(d, b)| arena_range(d, *b)).collect();
    let mut by_offset: Vec<(usize, usize, usize)> =
        ranges.iter().enumerate().filter_map(|(i, r)| r.filter(|&(_, n)| n > 0).map(|(o, n)| (o, o + n, i))).collect();
    by_offset.sort_unstable();
    // Open buffers as (end, index): every one overlaps the next start.
    let mut open_io: BTreeSet<(usize, usize)> = BTreeSet::new();
    let mut open_all: BTreeSet<(usize, usize)> = BTreeSet::new();
    // (the input or output, the other): the order pairs are reported in.
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let mut truncated = false;
    'sweep: for &(start, end, i) in &by_offset {
        for open in [&mut open_io, &mut open_all] {
            while open.first().is_some_and(|&(e, _)| e <= start) {
                open.pop_first();
            }
        }
        let io = is_io(ast.buffers[i].role);
        let partners = if io { &open_all } else { &open_io };
        for &(_, j) in partners {
            if pairs.len() == MAX_OVERLAP_PAIRS {
                truncated = true;
                break 'sweep;
            }
            let key = match (io, is_io(ast.buffers[j].role)) {
                (true, true) => (i.min(j), i.max(j)),
                (true, false) => (i, j),
                _ => (j, i),
            };
            pairs.push(key);
        }
        open_all.insert((end, i));
        if io {
            open_io.insert((end, i));
        }
    }
    pairs.sort_unstable();
    for (x, y) in pairs {
        let (first, later) = (x.min(y), x.max(y));
        let Some((fo, fnn)) = ranges[first] else { continue };
        let (decl_first, decl_later) = (&ast.buffers[first], &ast.buffers[later]);
        diags.push(
            Diagnostic::error(decl_later.offset.span, messages::buffers_overlap(decl_later, decl_first, fo, fo + fnn))
                .with_hint(messages::BUFFER_OVERLAP_HINT),
        );
    }
    if truncated {
        diags.push(
            Diagnostic::error(None, messages::too_many_overlaps(MAX_OVERLAP_PAIRS))
                .with_hint(messages::BUFFER_OVERLAP_HINT),
        );
    }
}
