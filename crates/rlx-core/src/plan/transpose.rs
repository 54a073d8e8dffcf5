//! Decisions of the movement family: which kernel path a `Transpose` takes,
//! and when copies may split across threads.
//!
//! A `Transpose` reads output element `c` (coordinates over `out_dims`) from
//! input element `sum(c[d] * in_strides[d])`. Before choosing a path the
//! dims are put in canonical form: size-1 dims are dropped (their stride is
//! never used) and neighbours are merged when the outer stride equals the
//! inner stride times the inner dim (they walk the input as one dim; two
//! broadcast dims of stride 0 merge too). The canonical form makes the
//! classifier see an identity permutation as one contiguous copy and an
//! attention `[B, S, H, D] -> [B, H, S, D]` permute as rows of `D`.
//!
//! Kernels never wrap a source index modulo `in_total`: the validator
//! checks at gen time that the largest index read is below `in_total`
//! ([`transpose_reads_within`]).

use crate::operand::{Operand, Segment};

/// Rows at least this many bytes long are copied with `memcpy` rather than
/// an element loop: below it the call costs more than the copy.
pub const TRANSPOSE_MIN_ROW_BYTES: usize = 32;

/// How a `Transpose` runs. Every variant except [`TransposePath::Empty`]
/// and [`TransposePath::Copy`] describes the canonical dims (see the
/// module docs). "Lead" dims are walked as an odometer; for each lead
/// coordinate the kernel handles the innermost part in one tight loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransposePath {
    /// The output has no elements.
    Empty,
    /// The input is read in order: a plain copy of `len` elements.
    Copy { len: usize },
    /// Every output element is input element 0.
    Splat { len: usize },
    /// The innermost canonical stride is 0: for each lead coordinate one
    /// input element fills a run of `run` outputs (a per-channel bias
    /// broadcast to `[N, C, H, W]` is lead `[N, C]` with strides `[0, s]`).
    BroadcastRuns { lead_dims: Vec<usize>, lead_strides: Vec<usize>, run: usize },
    /// The innermost canonical stride is 1 and rows hold at least
    /// [`TRANSPOSE_MIN_ROW_BYTES`]: one `memcpy` of `row` elements per lead
    /// coordinate (attention head permutes, row broadcasts).
    InnerRows { lead_dims: Vec<usize>, lead_strides: Vec<usize>, row: usize },
    /// The last two canonical dims swap: per lead coordinate, output plane
    /// `[rows, cols]` (contiguous) reads input `base + i + j * src_ld`. A
    /// rank-2 transpose is this with no lead dims.
    BatchedSwap { lead_dims: Vec<usize>, lead_strides: Vec<usize>, rows: usize, cols: usize, src_ld: usize },
    /// A strided 2-D gather `out[i, j] = in[i * s0 + j * s1]` with neither
    /// stride 0 or 1, walked in cache tiles.
    Rank2 { rows: usize, cols: usize, s0: usize, s1: usize },
    /// Anything else: an odometer over all dims but the last, and a strided
    /// loop over the last.
    General { dims: Vec<usize>, strides: Vec<usize> },
}

impl TransposePath {
    /// A short name, for generated comments and tests.
    pub fn name(&self) -> &'static str {
        match self {
            TransposePath::Empty => "empty",
            TransposePath::Copy { .. } => "copy",
            TransposePath::Splat { .. } => "splat",
            TransposePath::BroadcastRuns { .. } => "broadcast_runs",
            TransposePath::InnerRows { .. } => "inner_rows",
            TransposePath::BatchedSwap { .. } => "batched_swap",
            TransposePath::Rank2 { .. } => "rank2",
            TransposePath::General { .. } => "general",
        }
    }
}

/// The canonical form of a transpose: size-1 dims dropped, mergeable
/// neighbours merged. Returns `None` when the output is empty; an output of
/// one element comes back as `([1], [0])`.
pub fn canonical_transpose(out_dims: &[usize], in_strides: &[usize]) -> Option<(Vec<usize>, Vec<usize>)> {
    if out_dims.contains(&0) {
        return None;
    }
    let mut dims: Vec<usize> = Vec::with_capacity(out_dims.len());
    let mut strides: Vec<usize> = Vec::with_capacity(out_dims.len());
    for (&d, &s) in out_dims.iter().zip(in_strides) {
        if d == 1 {
            continue;
        }
        // Merge into the previous (outer) dim when it steps exactly over
        // this one: outer stride == inner stride * inner dim.
        if let (Some(&pd), Some(&ps)) = (dims.last(), strides.last()) {
            if s.checked_mul(d) == Some(ps) {
                let last = dims.len() - 1;
                dims[last] = pd * d;
                strides[last] = s;
                continue;
            }
        }
        dims.push(d);
        strides.push(s);
    }
    if dims.is_empty() {
        dims.push(1);
        strides.push(0);
    }
    Some((dims, strides))
}

/// Whether every element a transpose reads lies below `in_total`; false on
/// overflow or when `out_dims` and `in_strides` differ in length. The
/// validator's rule, so kernels never need to wrap or check.
pub fn transpose_reads_within(out_dims: &[usize], in_strides: &[usize], in_total: usize) -> bool {
    if out_dims.len() != in_strides.len() {
        return false;
    }
    if out_dims.contains(&0) {
        return true;
    }
    let mut max = 0usize;
    for (&d, &s) in out_dims.iter().zip(in_strides) {
        let Some(step) = (d - 1).checked_mul(s) else { return false };
        let Some(m) = max.checked_add(step) else { return false };
        max = m;
    }
    max < in_total
}

/// Chooses the kernel path of a `Transpose` from its fields. Pure: the
/// interpreter and the code generator call it with the same fields and run
/// the same kernel. `in_total` only serves a debug check of the validator's
/// guarantee ([`transpose_reads_within`]).
pub fn transpose_path(out_dims: &[usize], in_strides: &[usize], elem_bytes: usize, in_total: usize) -> TransposePath {
    debug_assert!(
        transpose_reads_within(out_dims, in_strides, in_total),
        "transpose reads past in_total (the validator must reject this)"
    );
    let Some((dims, strides)) = canonical_transpose(out_dims, in_strides) else {
        return TransposePath::Empty;
    };
    let rank = dims.len();
    let last = rank - 1;
    let (n_last, s_last) = (dims[last], strides[last]);
    if rank == 1 {
        return match s_last {
            // A single element reads in[0] whatever its stride.
            _ if n_last == 1 => TransposePath::Copy { len: 1 },
            0 => TransposePath::Splat { len: n_last },
            1 => TransposePath::Copy { len: n_last },
            _ => TransposePath::General { dims, strides },
        };
    }
    let lead_dims = dims[..last].to_vec();
    let lead_strides = strides[..last].to_vec();
    match s_last {
        0 => TransposePath::BroadcastRuns { lead_dims, lead_strides, run: n_last },
        1 if n_last.saturating_mul(elem_bytes) >= TRANSPOSE_MIN_ROW_BYTES => {
            TransposePath::InnerRows { lead_dims, lead_strides, row: n_last }
        }
        1 => TransposePath::General { dims, strides },
        _ if strides[last - 1] == 1 => TransposePath::BatchedSwap {
            lead_dims: dims[..last - 1].to_vec(),
            lead_strides: strides[..last - 1].to_vec(),
            rows: dims[last - 1],
            cols: n_last,
            src_ld: s_last,
        },
        _ if rank == 2 && strides[0] != 0 => {
            TransposePath::Rank2 { rows: dims[0], cols: n_last, s0: strides[0], s1: s_last }
        }
        _ => TransposePath::General { dims, strides },
    }
}

/// Whether the byte ranges of two operands share a byte (operands in
/// different segments never do).
pub fn operands_overlap(a: &Operand, a_bytes: usize, b: &Operand, b_bytes: usize) -> bool {
    a.segment == b.segment && a.segment == Segment::Arena && super::ranges_overlap(a.offset, a_bytes, b.offset, b_bytes)
}

/// Whether a `Copy`/`CopyF64`/`CopyI64` of `len` elements of `elem_bytes`
/// splits across threads: large enough, and source and destination do not
/// overlap (an overlapping copy is a memmove, which must run in order).
pub fn copy_parallel(src: &Operand, dst: &Operand, len: usize, elem_bytes: usize) -> bool {
    let bytes = len.saturating_mul(elem_bytes);
    super::parallel(len) && !operands_overlap(src, bytes, dst, bytes)
}

/// Whether a `Narrow` splits its rows across threads: enough work, more
/// than one row, and destination rows that cannot overlap each other.
pub fn narrow_parallel(outer: usize, inner: usize, dst_stride: usize) -> bool {
    outer > 1 && dst_stride >= inner && super::parallel(outer.saturating_mul(inner))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(dims: &[usize], strides: &[usize], eb: usize) -> TransposePath {
        let total = dims.iter().zip(strides).map(|(d, s)| (d.max(&1) - 1) * s).sum::<usize>() + 1;
        transpose_path(dims, strides, eb, total)
    }

    #[test]
    fn identity_is_a_copy() {
        assert_eq!(path(&[2, 3, 4], &[12, 4, 1], 4), TransposePath::Copy { len: 24 });
        assert_eq!(path(&[1, 1], &[5, 7], 4), TransposePath::Copy { len: 1 });
        assert_eq!(path(&[2, 0, 3], &[3, 3, 1], 4), TransposePath::Empty);
    }

    #[test]
    fn broadcasts() {
        assert_eq!(path(&[4, 5], &[0, 0], 2), TransposePath::Splat { len: 20 });
        // A conv bias [C] broadcast to [N, C, H, W].
        assert_eq!(
            path(&[2, 3, 4, 5], &[0, 1, 0, 0], 4),
            TransposePath::BroadcastRuns { lead_dims: vec![2, 3], lead_strides: vec![0, 1], run: 20 }
        );
        // A bias row [H] broadcast over [B, S, H].
        assert_eq!(
            path(&[2, 7, 64], &[0, 0, 1], 4),
            TransposePath::InnerRows { lead_dims: vec![14], lead_strides: vec![0], row: 64 }
        );
    }

    #[test]
    fn swaps_and_permutes() {
        // [R, C] -> [C, R].
        assert_eq!(
            path(&[5, 3], &[1, 5], 4),
            TransposePath::BatchedSwap { lead_dims: vec![], lead_strides: vec![], rows: 5, cols: 3, src_ld: 5 }
        );
        // NCHW [2, 5, 3, 4] -> NHWC [2, 3, 4, 5]: canonically [N, HW, C].
        assert_eq!(
            path(&[2, 3, 4, 5], &[60, 4, 1, 12], 4),
            TransposePath::BatchedSwap { lead_dims: vec![2], lead_strides: vec![60], rows: 12, cols: 5, src_ld: 12 }
        );
        // [B, S, H, D] -> [B, H, S, D].
        assert_eq!(
            path(&[2, 4, 3, 16], &[192, 16, 64, 1], 4),
            TransposePath::InnerRows { lead_dims: vec![2, 4, 3], lead_strides: vec![192, 16, 64], row: 16 }
        );
        // The same with rows too short for memcpy.
        assert!(matches!(path(&[2, 4, 3, 2], &[24, 2, 8, 1], 4), TransposePath::General { .. }));
        assert_eq!(path(&[3, 4], &[2, 6], 4), TransposePath::Rank2 { rows: 3, cols: 4, s0: 2, s1: 6 });
        // Reversing the axes of [3, 4, 5] has no contiguous pair left.
        assert!(matches!(path(&[5, 4, 3], &[1, 5, 20], 4), TransposePath::General { .. }));
        // Strides that merge across a swap: [3, 4, 5] reading (1, 15, 3)
        // is the plane [3, 20] reading (1, 3).
        assert_eq!(
            path(&[3, 4, 5], &[1, 15, 3], 4),
            TransposePath::BatchedSwap { lead_dims: vec![], lead_strides: vec![], rows: 3, cols: 20, src_ld: 3 }
        );
    }

    #[test]
    fn reads_within() {
        assert!(transpose_reads_within(&[2, 3], &[3, 1], 6));
        assert!(!transpose_reads_within(&[2, 3], &[3, 1], 5));
        assert!(transpose_reads_within(&[2, 0], &[300, 1], 0));
        assert!(!transpose_reads_within(&[2, 3], &[usize::MAX, 1], 6));
        assert!(!transpose_reads_within(&[2, 3], &[1], 6));
    }

    #[test]
    fn copy_decisions() {
        let at = |offset| Operand { segment: Segment::Arena, offset, buffer: None };
        let w = Operand { segment: Segment::Weights, offset: 0, buffer: None };
        let n = super::super::PAR_MIN_ELEMS;
        assert!(copy_parallel(&at(0), &at(n * 4), n, 4));
        assert!(!copy_parallel(&at(0), &at(4), n, 4));
        assert!(copy_parallel(&w, &at(0), n, 4));
        assert!(!copy_parallel(&at(0), &at(n * 4), n - 1, 4));
        assert!(narrow_parallel(n, 2, 2));
        assert!(!narrow_parallel(n, 2, 1));
        assert!(!narrow_parallel(1, n, n));
    }
}
