//! Transposes of transposes: a `Transpose` is a strided read, and a strided
//! read of what another `Transpose` wrote is, where the strides line up
//! with the first one's axes, one strided read of the first one's source.
//! Exporters write chains of them around attention (torch's
//! `nn.MultiheadAttention`: the stacked projection unflattened and moved
//! to `[3, seq, batch, heads * dim]`, each part moved again to
//! `[heads, seq, dim]`, the key once more to `[heads, dim, seq]`) and around
//! channels-last blocks; each link copies the whole tensor.
//!
//! For every `Transpose` B reading (all of, or through a view into) the
//! output of the one `Transpose` A that writes it, B's axes are mapped onto
//! A's output axes: an axis whose stride is a multiple `m` of one of A's
//! row-major strides moves along that axis `m` at a time; an axis of
//! stride 1 spanning several of A's axes is split into them. When every
//! axis maps and no axis carries past the end of A's axis it moves along
//! (checked from B's first element), B reads A's source directly with the
//! composed strides, and A, once nothing reads its output, is dropped. A's
//! source must not change between A and B. Copies only: same bits.
//!
//! A layout conversion of whole 16-channel blocks (`FromBlocked`,
//! `ToBlocked` with `c % 16 == 0`) is a permutation too, so after the
//! blocked-layout pass the same composition takes the conversions next to
//! a transpose: ConvNeXt's `FromBlocked` then `Transpose` to channels-last
//! (and back, then `ToBlocked`) become one strided read each way.

use rlx_sched::blocked::{channel_blocks, CHANNEL_BLOCK};
use rlx_sched::{Role, Thunk};

use super::{Rewrite, Uses};
use crate::lower::{push_view, Lowered};
use rlx_sched::thunk::{FromBlocked, ToBlocked, Transpose};

/// `thunk` as the strided read it is: a `Transpose`, or a layout
/// conversion of whole blocks (f32, no padded lanes).
fn as_transpose(thunk: &Thunk<usize>) -> Option<Transpose<usize>> {
    match *thunk {
        Thunk::Transpose(ref t) => Some(t.clone()),
        // NCHW `[n, cb, 16, hw]` from blocked `[n, cb, hw, 16]`.
        Thunk::FromBlocked(FromBlocked { src, dst, n, c, hw }) if c.is_multiple_of(CHANNEL_BLOCK) => {
            let cb = channel_blocks(c);
            let in_total = n.checked_mul(c)?.checked_mul(hw)?;
            let image = cb.checked_mul(hw)?.checked_mul(CHANNEL_BLOCK)?;
            let in_strides = vec![image, hw * CHANNEL_BLOCK, 1, CHANNEL_BLOCK];
            Some(Transpose { src, dst, in_total, out_dims: vec![n, cb, CHANNEL_BLOCK, hw], in_strides, elem_bytes: 4 })
        }
        // Blocked `[n, cb, hw, 16]` from NCHW `[n, cb, 16, hw]`.
        Thunk::ToBlocked(ToBlocked { src, dst, n, c, hw }) if c.is_multiple_of(CHANNEL_BLOCK) => {
            let cb = channel_blocks(c);
            let in_total = n.checked_mul(c)?.checked_mul(hw)?;
            let in_strides = vec![c.checked_mul(hw)?, CHANNEL_BLOCK * hw, 1, hw];
            Some(Transpose { src, dst, in_total, out_dims: vec![n, cb, hw, CHANNEL_BLOCK], in_strides, elem_bytes: 4 })
        }
        _ => None,
    }
}

/// Composes the layout conversions of the blocked-layout pass with the
/// transposes around them (see the module comment).
pub(super) fn compose_layout_conversions(lowered: &mut Lowered) {
    let uses = Uses::new(lowered);
    for b in 0..lowered.thunks.len() {
        let is_conversion = |t: &Thunk<usize>| matches!(t, Thunk::FromBlocked(_) | Thunk::ToBlocked(_));
        let b_thunk = &lowered.thunks[b].thunk;
        // Only pairs with a conversion in them: transposes of transposes
        // were composed before the layout pass.
        let a_is_conversion = uses_writer(lowered, &uses, b).is_some_and(|a| is_conversion(&lowered.thunks[a].thunk));
        if !(is_conversion(b_thunk) || a_is_conversion) {
            continue;
        }
        if let Some(composed) = composed(lowered, &uses, b) {
            lowered.thunks[b].thunk = Thunk::Transpose(composed);
        }
    }
    drop_unread_transposes(lowered);
}

/// The one thunk before `b` writing the storage `b` reads as a strided read.
fn uses_writer(lowered: &Lowered, uses: &Uses, b: usize) -> Option<usize> {
    let tb = as_transpose(&lowered.thunks[b].thunk)?;
    let root = lowered.storages[tb.src].view.map_or(tb.src, |(base, _)| base);
    match uses.root_writers[root].as_slice() {
        [a] if *a < b => Some(*a),
        _ => None,
    }
}

/// Runs the pass.
pub(super) fn compose_transposes(lowered: &mut Lowered) {
    let uses = Uses::new(lowered);
    for b in 0..lowered.thunks.len() {
        if let Some(composed) = composed(lowered, &uses, b) {
            lowered.thunks[b].thunk = Thunk::Transpose(composed);
        }
    }
    drop_unread_transposes(lowered);
}

/// Thunk `b` as a read of its source's source, when it is a `Transpose`
/// of a `Transpose`'s output and the strides compose.
fn composed(lowered: &mut Lowered, uses: &Uses, b: usize) -> Option<Transpose<usize>> {
    let tb = &as_transpose(&lowered.thunks[b].thunk)?;
    let eb = tb.elem_bytes;
    let (root, offset_bytes) = lowered.storages[tb.src].view.unwrap_or((tb.src, 0));
    let a = match uses.root_writers[root].as_slice() {
        [a] if *a < b => *a,
        _ => return None,
    };
    let ta = &as_transpose(&lowered.thunks[a].thunk)?;
    let written = &lowered.storages[root];
    if ta.dst != root || ta.elem_bytes != eb || written.role != Role::Scratch || offset_bytes % eb != 0 {
        return None;
    }
    // What A read is still there when B runs. (Its source may be a view
    // this pass made, newer than `uses`: ask about its base.)
    let a_src_root = lowered.storages[ta.src].view.map_or(ta.src, |(base, _)| base);
    if uses.written_within(a_src_root, a + 1, b) {
        return None;
    }
    let (dims, src_strides): (Vec<usize>, Vec<usize>) =
        ta.out_dims.iter().zip(&ta.in_strides).filter(|(&d, _)| d != 1).map(|(&d, &s)| (d, s)).unzip();
    let axes = AxesOf::new(&dims);
    // B's first element in A's output coordinates.
    let base = axes.coordinates(offset_bytes / eb)?;
    let mut out_dims = Vec::new();
    let mut in_strides = Vec::new();
    let mut reach = vec![0usize; dims.len()];
    for (&n, &s) in tb.out_dims.iter().zip(&tb.in_strides) {
        for (count, along) in axes.split(n, s)? {
            out_dims.push(count);
            match along {
                None => in_strides.push(0),
                Some((k, m)) => {
                    reach[k] += (count - 1) * m;
                    in_strides.push(m * src_strides[k]);
                }
            }
        }
    }
    if (0..dims.len()).any(|k| base[k] + reach[k] >= dims[k]) {
        return None;
    }
    // A's source element under B's first element.
    let first: usize = base.iter().zip(&src_strides).map(|(c, &s)| c * s).sum();
    let in_total = ta.in_total.checked_sub(first)?;
    let src_root = lowered.storages[ta.src].view.map_or(ta.src, |(base, _)| base);
    if lowered.storages[src_root].role == Role::Param {
        return None;
    }
    let (dst, elem_bytes, a_src) = (tb.dst, eb, ta.src);
    let src = if first == 0 { a_src } else { push_view(&mut lowered.storages, a_src, first * eb, vec![in_total]) };
    Some(Transpose { src, dst, in_total, out_dims, in_strides, elem_bytes })
}

/// Sub-axes `(count, along)`: `along` is `Some((axis, step))`, or `None`
/// for a stride of 0.
type SubAxes = Vec<(usize, Option<(usize, usize)>)>;

/// A's output axes (size-1 axes dropped) with their row-major strides.
struct AxesOf<'a> {
    dims: &'a [usize],
    strides: Vec<usize>,
}

impl<'a> AxesOf<'a> {
    fn new(dims: &'a [usize]) -> Self {
        let mut strides = vec![1; dims.len()];
        for k in (0..dims.len().saturating_sub(1)).rev() {
            strides[k] = strides[k + 1] * dims[k + 1];
        }
        AxesOf { dims, strides }
    }

    /// The coordinates of element `i` (`None` past the end).
    fn coordinates(&self, i: usize) -> Option<Vec<usize>> {
        let total: usize = self.dims.iter().product();
        if i >= total.max(1) {
            return None;
        }
        Some(self.strides.iter().zip(self.dims).map(|(&s, &d)| i / s % d).collect())
    }

    /// B's axis of `n` elements `s` apart as sub-axes `(count, along)`,
    /// outer first: `along` is `Some((k, m))` for a move of `m` along A's
    /// axis `k` per step, `None` for stride 0; `None` when it does not map.
    fn split(&self, n: usize, s: usize) -> Option<SubAxes> {
        if n <= 1 || s == 0 {
            return Some(vec![(n, None)]);
        }
        // The axis whose stride range holds `s`: strides[k] <= s < strides[k - 1].
        let k = (0..self.dims.len()).find(|&k| self.strides[k] <= s && (k == 0 || s < self.strides[k - 1]))?;
        if !s.is_multiple_of(self.strides[k]) {
            return None;
        }
        let m = s / self.strides[k];
        if (n - 1) * m < self.dims[k] {
            return Some(vec![(n, Some((k, m)))]);
        }
        // Whole rows of axis `k`, one after another: the outer part moves
        // along the axis before it.
        if m == 1 && k > 0 && n.is_multiple_of(self.dims[k]) {
            let mut outer = self.split(n / self.dims[k], self.strides[k - 1])?;
            outer.push((self.dims[k], Some((k, 1))));
            return Some(outer);
        }
        None
    }
}

/// Drops the `Transpose`s (and layout conversions) into scratch that
/// nothing reads any more.
fn drop_unread_transposes(lowered: &mut Lowered) {
    let uses = Uses::new(lowered);
    let root = |id: usize| lowered.storages[id].view.map_or(id, |(b, _)| b);
    let mut read = vec![false; lowered.storages.len()];
    for lt in &lowered.thunks {
        let written = super::written(&lt.thunk);
        for (_, &id) in lt.thunk.operands() {
            if !written.contains(&id) {
                read[root(id)] = true;
            }
        }
    }
    let mut rewrite = Rewrite::new(lowered.thunks.len());
    for (t, lt) in lowered.thunks.iter().enumerate() {
        let converts = matches!(lt.thunk, Thunk::FromBlocked(_) | Thunk::ToBlocked(_));
        if let Some(tr) =
            (matches!(lt.thunk, Thunk::Transpose(_)) || converts).then(|| as_transpose(&lt.thunk)).flatten()
        {
            let s = &lowered.storages[tr.dst];
            let only_writer = uses.root_writers[tr.dst] == [t];
            if tr.dst == root(tr.dst) && s.role == Role::Scratch && !read[tr.dst] && only_writer {
                rewrite.remove(&[t]);
            }
        }
    }
    rewrite.apply(lowered);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_map_onto_the_first_transposes_axes() {
        // A's output [4, 3] (row-major strides 3, 1).
        let axes = AxesOf::new(&[4, 3]);
        assert_eq!(axes.coordinates(7), Some(vec![2, 1]));
        assert_eq!(axes.coordinates(12), None);
        // Along one axis, one or several steps at a time.
        assert_eq!(axes.split(4, 3), Some(vec![(4, Some((0, 1)))]));
        assert_eq!(axes.split(2, 6), Some(vec![(2, Some((0, 2)))]));
        // Contiguous across whole rows: split into both axes.
        assert_eq!(axes.split(6, 1), Some(vec![(2, Some((0, 1))), (3, Some((1, 1)))]));
        // Stride 0 and single elements move nowhere.
        assert_eq!(axes.split(5, 0), Some(vec![(5, None)]));
        assert_eq!(axes.split(1, 7), Some(vec![(1, None)]));
        // Two at a time across a row of 3 wraps: no single axis.
        assert_eq!(axes.split(6, 2), None);
        // Not a multiple of the axis stride.
        assert_eq!(AxesOf::new(&[4, 6]).split(2, 9), None);
    }
}
