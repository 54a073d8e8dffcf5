//! The arena memory planner.
//!
//! Every buffer has a liveness interval over thunk indices (inclusive: from
//! the first thunk that touches it to the last). Pinned buffers (graph
//! inputs and outputs) live for the whole run and are never shared; they
//! are laid out first, back to back. Reusable buffers (scratch) are then
//! placed largest first; each goes into the smallest gap between buffers
//! whose intervals overlap its own that is big enough (best fit), or after
//! the last of them. Two buffers whose intervals share a thunk never
//! overlap, so a thunk's output never lands on one of its own inputs (the
//! validator allows that only for some kinds; the importer never relies on
//! it for planned buffers).

/// Alignment of every planned offset and size, in bytes.
pub const ALIGN: usize = 64;

/// One buffer to place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    /// Size in bytes (rounded up to [`ALIGN`] by the planner).
    pub bytes: usize,
    /// Index of the first thunk that touches the buffer.
    pub first: usize,
    /// Index of the last thunk that touches the buffer (`>= first`).
    pub last: usize,
    /// Pinned buffers live for the whole run and share memory with nothing.
    pub pinned: bool,
}

/// Where each buffer goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPlan {
    /// Byte offset of each buffer, in the order given.
    pub offsets: Vec<usize>,
    /// Bytes of arena the plan needs (a multiple of [`ALIGN`]).
    pub arena_bytes: usize,
    /// The lower bound no plan can beat: the largest sum of (aligned)
    /// sizes of buffers live at one thunk.
    pub peak_live_bytes: usize,
}

/// `n` rounded up to a multiple of [`ALIGN`].
pub fn align_up(n: usize) -> usize {
    n.div_ceil(ALIGN) * ALIGN
}

fn live_together(a: &Interval, b: &Interval) -> bool {
    a.pinned || b.pinned || (a.first <= b.last && b.first <= a.last)
}

/// Plans the arena for `items`. Sizes are aligned to [`ALIGN`]. Sums
/// saturate: a plan past `isize::MAX` bytes is the caller's error to report.
pub fn plan_memory(items: &[Interval]) -> MemoryPlan {
    let sizes: Vec<usize> = items.iter().map(|it| align_up(it.bytes)).collect();
    let mut offsets = vec![0usize; items.len()];
    let mut placed: Vec<usize> = Vec::with_capacity(items.len());
    let mut end = 0usize;
    for (i, it) in items.iter().enumerate() {
        if it.pinned {
            offsets[i] = end;
            end = end.saturating_add(sizes[i]);
            placed.push(i);
        }
    }
    let mut order: Vec<usize> = (0..items.len()).filter(|&i| !items[i].pinned).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(sizes[i]), items[i].first, i));
    for i in order {
        let mut conflicts: Vec<usize> =
            placed.iter().copied().filter(|&j| live_together(&items[i], &items[j])).collect();
        conflicts.sort_by_key(|&j| (offsets[j], j));
        let mut cursor = 0usize;
        let mut best: Option<(usize, usize)> = None; // (gap size, offset)
        for &j in &conflicts {
            if offsets[j] >= cursor {
                let gap = offsets[j] - cursor;
                if gap >= sizes[i] && best.is_none_or(|(g, _)| gap < g) {
                    best = Some((gap, cursor));
                }
            }
            cursor = cursor.max(offsets[j].saturating_add(sizes[j]));
        }
        offsets[i] = best.map_or(cursor, |(_, off)| off);
        end = end.max(offsets[i].saturating_add(sizes[i]));
        placed.push(i);
    }
    MemoryPlan { offsets, arena_bytes: end, peak_live_bytes: peak_live(items, &sizes) }
}

fn peak_live(items: &[Interval], sizes: &[usize]) -> usize {
    let pinned = items.iter().zip(sizes).filter(|(it, _)| it.pinned).fold(0usize, |acc, (_, s)| acc.saturating_add(*s));
    // The live set only grows at some buffer's first thunk, so the maximum
    // is reached at one of those.
    let peak_reusable = items
        .iter()
        .filter(|it| !it.pinned)
        .map(|at| {
            let t = at.first;
            items
                .iter()
                .zip(sizes)
                .filter(|(it, _)| !it.pinned && it.first <= t && t <= it.last)
                .fold(0usize, |acc, (_, s)| acc.saturating_add(*s))
        })
        .max()
        .unwrap_or(0);
    pinned.saturating_add(peak_reusable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(bytes: usize, first: usize, last: usize) -> Interval {
        Interval { bytes, first, last, pinned: false }
    }

    /// No two buffers that are live at the same thunk share a byte.
    fn assert_no_live_overlap(items: &[Interval], plan: &MemoryPlan) {
        for i in 0..items.len() {
            for j in i + 1..items.len() {
                if live_together(&items[i], &items[j]) {
                    let (a0, a1) = (plan.offsets[i], plan.offsets[i] + align_up(items[i].bytes));
                    let (b0, b1) = (plan.offsets[j], plan.offsets[j] + align_up(items[j].bytes));
                    assert!(a1 <= b0 || b1 <= a0, "buffers {i} and {j} are live together and overlap: {plan:?}");
                }
            }
        }
    }

    #[test]
    fn dead_buffer_memory_is_reused() {
        // A chain: each value is read by the next thunk only.
        let items = [scratch(1000, 0, 1), scratch(1000, 1, 2), scratch(1000, 2, 3), scratch(1000, 3, 4)];
        let plan = plan_memory(&items);
        assert_no_live_overlap(&items, &plan);
        // Two 1024-byte slots suffice and the lower bound is also two.
        assert_eq!(plan.peak_live_bytes, 2048);
        assert_eq!(plan.arena_bytes, 2048);
        assert_eq!(plan.offsets[0], plan.offsets[2]);
    }

    #[test]
    fn pinned_buffers_are_never_shared_and_come_first() {
        let items = [
            Interval { bytes: 100, first: 0, last: 0, pinned: true },
            scratch(64, 0, 0),
            scratch(64, 1, 1),
            Interval { bytes: 10, first: 1, last: 1, pinned: true },
        ];
        let plan = plan_memory(&items);
        assert_no_live_overlap(&items, &plan);
        assert_eq!(plan.offsets[0], 0);
        assert_eq!(plan.offsets[3], 128);
        assert_eq!(plan.offsets[1], 192);
        assert_eq!(plan.offsets[2], 192);
        assert_eq!(plan.arena_bytes, 256);
        assert_eq!(plan.peak_live_bytes, 256);
    }

    #[test]
    fn offsets_and_sizes_are_aligned() {
        let items = [scratch(3, 0, 2), scratch(65, 1, 3), scratch(7, 2, 4), scratch(130, 0, 4)];
        let plan = plan_memory(&items);
        assert_no_live_overlap(&items, &plan);
        assert!(plan.offsets.iter().all(|o| o % ALIGN == 0), "{plan:?}");
        assert_eq!(plan.arena_bytes % ALIGN, 0);
    }

    #[test]
    fn best_fit_picks_the_smallest_gap_that_fits() {
        // Long-lived P (192), R (128), T (64) with short-lived Q (128) and
        // S (64) between them: once Q and S die there is a 128-byte gap
        // (Q's) and a 64-byte gap (S's). A 64-byte buffer born then must
        // take S's slot (best fit), not Q's (first fit).
        let items = [
            scratch(192, 0, 9),
            scratch(128, 0, 1),
            scratch(128, 0, 9),
            scratch(64, 0, 1),
            scratch(64, 0, 9),
            scratch(64, 5, 6),
        ];
        let plan = plan_memory(&items);
        assert_no_live_overlap(&items, &plan);
        assert_eq!(plan.offsets[..5], [0, 192, 320, 448, 512], "{plan:?}");
        assert_eq!(plan.offsets[5], plan.offsets[3], "{plan:?}");
    }

    #[test]
    fn random_plans_never_overlap_live_buffers() {
        // A small deterministic generator (xorshift) keeps the test
        // reproducible without a dependency.
        let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |m: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % m
        };
        for _ in 0..200 {
            let n = 1 + next(12) as usize;
            let items: Vec<Interval> = (0..n)
                .map(|_| {
                    let first = next(10) as usize;
                    Interval { bytes: next(500) as usize, first, last: first + next(5) as usize, pinned: next(6) == 0 }
                })
                .collect();
            let plan = plan_memory(&items);
            assert_no_live_overlap(&items, &plan);
            assert!(plan.arena_bytes >= plan.peak_live_bytes);
            assert!(plan.offsets.iter().all(|o| o % ALIGN == 0));
            for (it, off) in items.iter().zip(&plan.offsets) {
                assert!(off + align_up(it.bytes) <= plan.arena_bytes);
            }
        }
    }
}
