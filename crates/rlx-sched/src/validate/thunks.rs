//! Per-thunk checks: operand resolution, field consistency (the extent
//! rules), bounds, alignment, dtypes, read-only weights and the in-place
//! policy.

use std::convert::Infallible;

use super::access::{Access, Alias, Dir, Issue, Pattern};
use super::extents;
use super::messages;
use super::table::Table;
use crate::ast::{OperandRef, Target, ThunkDecl};
use crate::diag::Diagnostic;
use crate::plan::ranges_overlap;
use crate::schedule::{Operand, Segment};
use crate::span::Span;
use crate::thunk::Thunk;

/// The sizes operands are checked against.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Segments {
    pub arena: usize,
    /// `(data_offset, data_len)` of the weights file, when it was read.
    pub weights: Option<(usize, usize)>,
}

/// An operand resolved to a segment offset, with what messages need.
#[derive(Clone, Debug)]
pub(crate) struct Res {
    pub operand: Operand,
    pub span: Span,
    /// Bytes into the named buffer (a view's offset), 0 for raw operands.
    pub view: usize,
}

/// One arena access of a checked thunk, in absolute arena bytes.
#[derive(Clone, Debug)]
pub(crate) struct ArenaAccess {
    pub dir: Dir,
    /// Arena offset of the operand; the pattern is relative to it.
    pub base: usize,
    pub pattern: Pattern,
    /// The operand as messages name it: `a`, `inputs[1]`.
    pub name: String,
    pub span: Span,
}

/// A thunk that resolved.
#[derive(Clone, Debug)]
pub(crate) struct CheckedThunk {
    pub thunk: Thunk<Operand>,
    /// Its arena accesses, or `None` when some access is unknown or out of
    /// bounds (the dataflow pass then cannot run).
    pub arena: Option<Vec<ArenaAccess>>,
}

/// Checks one thunk line. `None` when an operand did not resolve.
pub(crate) fn check(
    decl: &ThunkDecl,
    table: &Table,
    seg: &Segments,
    diags: &mut Vec<Diagnostic>,
) -> Option<CheckedThunk> {
    let resolved = decl.thunk.clone().map_operands(&mut |_, op| resolve(op, table, seg));
    let resolved = match resolved {
        Ok(t) => t,
        Err(errs) => {
            diags.extend(errs.into_iter().flatten());
            // The field rules do not depend on where operands live: report
            // their problems too.
            report_issues(decl, &extents::rules(&decl.thunk).issues, diags);
            return None;
        }
    };
    // Messages speak the spelling the line is written in.
    let kind = decl.alias.map_or(resolved.kind().name(), |a| a.name);
    let mut rules = extents::rules(&resolved);
    if let Some(alias) = decl.alias {
        for a in &mut rules.accesses {
            a.field = alias.written_field(a.field);
        }
    }
    report_issues(decl, &rules.issues, diags);
    // The absolute byte range of each access, `None` when out of bounds.
    let ranges: Vec<Option<(usize, usize)>> =
        rules.accesses.iter().map(|a| check_access(kind, a, table, seg, diags)).collect();
    check_overlaps(kind, &rules.accesses, &ranges, diags);
    // Every operand has exactly one access when the fields allowed
    // computing them all.
    let complete = rules.accesses.len() == decl.thunk.operands().len() && ranges.iter().all(Option::is_some);
    let arena = complete.then(|| {
        rules
            .accesses
            .iter()
            .filter(|a| a.op.operand.segment == Segment::Arena && !a.pattern.is_empty())
            .map(|a| ArenaAccess {
                dir: a.dir,
                base: a.op.operand.offset,
                pattern: a.pattern,
                name: a.name(),
                span: a.op.span,
            })
            .collect()
    });
    let Ok(thunk) = resolved.map_operands(&mut |_, r| Ok::<_, Infallible>(r.operand)) else {
        unreachable!("an infallible mapping failed")
    };
    Some(CheckedThunk { thunk, arena })
}

/// Reports field issues at their fields' spans.
fn report_issues(decl: &ThunkDecl, issues: &[Issue], diags: &mut Vec<Diagnostic>) {
    for issue in issues {
        let mut d = Diagnostic::error(decl.field_span(issue.field), issue.message.clone());
        if let Some(hint) = &issue.hint {
            d = d.with_hint(hint.clone());
        }
        diags.push(d);
    }
}

/// Resolves a written operand. `Err(None)` when the problem was already
/// reported (a buffer whose size overflowed).
fn resolve(op: OperandRef, table: &Table, seg: &Segments) -> Result<Res, Option<Diagnostic>> {
    match op.target {
        Target::Buffer { name, offset: view } => {
            let Some(i) = table.lookup(&name) else {
                let hint = match table.closest_name(&name) {
                    Some(c) => messages::did_you_mean(c),
                    None => messages::DECLARE_BUFFER_HINT.to_string(),
                };
                return Err(Some(Diagnostic::error(op.span, messages::unknown_buffer(&name)).with_hint(hint)));
            };
            let bytes = table.bytes[i].ok_or(None)?;
            if view > bytes {
                return Err(Some(Diagnostic::error(op.span, messages::view_past_end(&name, view, bytes))));
            }
            let buffer = &table.buffers[i];
            let offset = buffer
                .offset
                .checked_add(view)
                .ok_or_else(|| Some(Diagnostic::error(op.span, messages::operand_offset_overflow(&name, view))))?;
            Ok(Res { operand: Operand { segment: buffer.segment, offset, buffer: Some(i) }, span: op.span, view })
        }
        Target::Raw { offset } => {
            if offset > seg.arena {
                return Err(Some(Diagnostic::error(op.span, messages::raw_past_end(offset, seg.arena))));
            }
            Ok(Res { operand: Operand { segment: Segment::Arena, offset, buffer: None }, span: op.span, view: 0 })
        }
    }
}

/// Checks one access: writable segment, alignment, dtype, and bounds of
/// its buffer and segment. Returns the absolute byte range when in bounds.
fn check_access(
    kind: &str,
    a: &Access<'_, Res>,
    table: &Table,
    seg: &Segments,
    diags: &mut Vec<Diagnostic>,
) -> Option<(usize, usize)> {
    let r = a.op;
    let name = a.name();
    let segment = r.operand.segment;
    if a.dir.writes() && segment == Segment::Weights {
        diags
            .push(Diagnostic::error(r.span, messages::write_to_weights(&name)).with_hint(messages::WRITE_WEIGHTS_HINT));
        return None;
    }
    // Weights are included at `data_offset` of the file, so their
    // alignment is that of the file offset.
    let (place, at) = match (segment, seg.weights) {
        (Segment::Arena, _) => ("arena", Some(r.operand.offset)),
        (Segment::Weights, Some((data_offset, _))) => ("weights file", data_offset.checked_add(r.operand.offset)),
        (Segment::Weights, None) => ("weights", Some(r.operand.offset)),
    };
    let align = a.elem.align();
    if let Some(at) = at.filter(|at| at % align != 0) {
        diags.push(
            Diagnostic::error(
                r.span,
                messages::operand_misaligned(&name, place, at, align, &a.elem.describe_elements()),
            )
            .with_hint(messages::ALIGN_HINT),
        );
    }
    let extent_hint = || messages::extent_hint(kind, a.dir, a.formula, a.elems, &a.elem.describe(), &name);
    if let Some(i) = r.operand.buffer {
        let buffer = &table.buffers[i];
        if !a.elem.accepts(buffer.dtype) {
            diags.push(
                Diagnostic::error(
                    r.span,
                    messages::operand_dtype(&name, kind, &a.elem.describe(), &buffer.name, buffer.dtype),
                )
                .with_hint(extent_hint()),
            );
        }
        // `view <= bytes` was checked at resolution.
        let available = table.bytes[i].unwrap_or(0) - r.view;
        if a.pattern.end > available {
            diags.push(
                Diagnostic::error(
                    r.span,
                    messages::past_buffer(&name, a.dir, a.pattern.end, r.view, &buffer.name, available + r.view),
                )
                .with_hint(extent_hint()),
            );
            return None;
        }
    }
    let size = match segment {
        Segment::Arena => Some(seg.arena),
        Segment::Weights => seg.weights.map(|(_, len)| len),
    };
    let lo = r.operand.offset.checked_add(a.pattern.start);
    let hi = r.operand.offset.checked_add(a.pattern.end);
    match (lo, hi, size) {
        (Some(lo), Some(hi), Some(size)) if hi <= size => Some(if a.pattern.is_empty() { (lo, lo) } else { (lo, hi) }),
        // A weights file that could not be read was reported; its size is
        // unknown, so accesses cannot be checked against it.
        (Some(lo), Some(hi), None) => Some((lo, hi)),
        _ => {
            // Inside its buffer but past the segment: the buffer's own
            // placement error says so already.
            if r.operand.buffer.is_none() {
                diags.push(
                    Diagnostic::error(
                        r.span,
                        messages::past_segment(&name, a.dir, segment, r.operand.offset, hi, size),
                    )
                    .with_hint(extent_hint()),
                );
            }
            None
        }
    }
}

/// The in-place policy: an output may overlap an input only as the input's
/// [`Alias`] allows, and outputs never overlap each other.
fn check_overlaps(
    kind: &str,
    accesses: &[Access<'_, Res>],
    ranges: &[Option<(usize, usize)>],
    diags: &mut Vec<Diagnostic>,
) {
    let arena = |i: usize| {
        let (lo, hi) = ranges[i]?;
        (accesses[i].op.operand.segment == Segment::Arena).then_some((lo, hi - lo))
    };
    for (w, out) in accesses.iter().enumerate() {
        let Some((wo, wn)) = arena(w).filter(|_| out.dir.writes()) else { continue };
        for (i, input) in accesses.iter().enumerate() {
            if i == w {
                continue;
            }
            let Some((io, inn)) = arena(i) else { continue };
            if !ranges_overlap(wo, wn, io, inn) {
                continue;
            }
            let message = if input.dir.writes() {
                // Each pair of outputs once.
                if i < w {
                    continue;
                }
                messages::outputs_overlap(&out.name(), &input.name())
            } else {
                match input.alias {
                    Alias::Any => continue,
                    Alias::Exact if wo == io && wn == inn => continue,
                    Alias::Exact => messages::overlap_not_exact(&input.name(), &out.name(), kind),
                    Alias::No => messages::overlap_not_in_place(&input.name(), &out.name(), kind),
                }
            };
            diags.push(Diagnostic::error(input.op.span, message).with_label(messages::overlap_label(
                &out.name(),
                wo,
                wo + wn,
                io,
                io + inn,
            )));
        }
    }
}
