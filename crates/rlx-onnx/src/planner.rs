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
    /// Index of the last thunk that touches the buffer (`>= first`; the
    /// planner reads a smaller one as `first`).
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

/// Plans the arena for `items`. Sizes are aligned to [`ALIGN`]. Sums
/// saturate: a plan past `isize::MAX` bytes is the caller's error to report.
///
/// The buffers a buffer conflicts with are found through an index of the
/// placed intervals ([`Placed`]), not by testing every placed buffer, so a
/// long chain of short-lived buffers plans in `n log n`.
pub fn plan_memory(items: &[Interval]) -> MemoryPlan {
    let items: Vec<Interval> = items.iter().map(|it| Interval { last: it.last.max(it.first), ..*it }).collect();
    let items = items.as_slice();
    let sizes: Vec<usize> = items.iter().map(|it| align_up(it.bytes)).collect();
    let mut offsets = vec![0usize; items.len()];
    let mut pinned: Vec<usize> = Vec::new();
    let mut end = 0usize;
    for (i, it) in items.iter().enumerate() {
        if it.pinned {
            offsets[i] = end;
            end = end.saturating_add(sizes[i]);
            pinned.push(i);
        }
    }
    let mut order: Vec<usize> = (0..items.len()).filter(|&i| !items[i].pinned).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(sizes[i]), items[i].first, i));
    let mut placed = Placed::new(items.iter().map(|it| it.last).max().map_or(0, |t| t + 1));
    let mut conflicts = Vec::new();
    for i in order {
        conflicts.clear();
        conflicts.extend_from_slice(&pinned);
        placed.live_during(&items[i], &mut conflicts);
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
        placed.insert(i, &items[i]);
    }
    MemoryPlan { offsets, arena_bytes: end, peak_live_bytes: peak_live(items, &sizes) }
}

/// The placed reusable buffers, by liveness interval: a segment tree over
/// thunk indices holding each interval at the nodes that cover it (to find
/// the intervals live at one thunk), and the intervals by first thunk (to
/// find those starting within a range).
struct Placed {
    /// Leaves: a power of two, at least the number of thunk indices.
    leaves: usize,
    cover: Vec<Vec<usize>>,
    by_first: std::collections::BTreeSet<(usize, usize)>,
}

impl Placed {
    fn new(times: usize) -> Self {
        let leaves = times.next_power_of_two().max(1);
        Placed { leaves, cover: vec![Vec::new(); 2 * leaves], by_first: Default::default() }
    }

    fn insert(&mut self, id: usize, it: &Interval) {
        let (mut lo, mut hi) = (it.first + self.leaves, it.last + 1 + self.leaves);
        while lo < hi {
            if lo & 1 == 1 {
                self.cover[lo].push(id);
                lo += 1;
            }
            if hi & 1 == 1 {
                hi -= 1;
                self.cover[hi].push(id);
            }
            lo >>= 1;
            hi >>= 1;
        }
        self.by_first.insert((it.first, id));
    }

    /// Appends every placed buffer whose interval shares a thunk with
    /// `it`'s: those live at `it.first`, and those starting after it but
    /// no later than `it.last`.
    fn live_during(&self, it: &Interval, out: &mut Vec<usize>) {
        let mut node = it.first + self.leaves;
        while node >= 1 {
            out.extend_from_slice(&self.cover[node]);
            node >>= 1;
        }
        if it.last > it.first {
            out.extend(self.by_first.range((it.first + 1, 0)..=(it.last, usize::MAX)).map(|&(_, id)| id));
        }
    }
}

fn peak_live(items: &[Interval], sizes: &[usize]) -> usize {
    let pinned = items.iter().zip(sizes).filter(|(it, _)| it.pinned).fold(0usize, |acc, (_, s)| acc.saturating_add(*s));
    // The live set only grows at some buffer's first thunk, so the maximum
    // is reached at one of those: a sweep over the first and last thunks,
    // summed exactly (u128) and saturated once.
    let reusable: Vec<(&Interval, usize)> =
        items.iter().zip(sizes.iter().copied()).filter(|(it, _)| !it.pinned).collect();
    let mut starts: Vec<(usize, usize)> = reusable.iter().map(|(it, s)| (it.first, *s)).collect();
    let mut ends: Vec<(usize, usize)> = reusable.iter().map(|(it, s)| (it.last, *s)).collect();
    starts.sort_unstable();
    ends.sort_unstable();
    let (mut live, mut peak, mut e) = (0u128, 0u128, 0);
    for (k, &(t, size)) in starts.iter().enumerate() {
        live += size as u128;
        // Every buffer starting at `t` counts before the live set is read.
        if starts.get(k + 1).is_some_and(|&(next, _)| next == t) {
            continue;
        }
        while e < ends.len() && ends[e].0 < t {
            live -= ends[e].1 as u128;
            e += 1;
        }
        peak = peak.max(live);
    }
    let peak_reusable = usize::try_from(peak).unwrap_or(usize::MAX);
    pinned.saturating_add(peak_reusable)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether two buffers may not share bytes.
    fn live_together(a: &Interval, b: &Interval) -> bool {
        a.pinned || b.pinned || (a.first <= b.last && b.first <= a.last)
    }

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

    /// The plan as the planner defined it before its interval index:
    /// every placed buffer tested against each new one, and the peak
    /// summed at each first thunk.
    fn pairwise_plan(items: &[Interval]) -> MemoryPlan {
        let sizes: Vec<usize> = items.iter().map(|it| align_up(it.bytes)).collect();
        let mut offsets = vec![0usize; items.len()];
        let mut placed: Vec<usize> = Vec::new();
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
            let mut best: Option<(usize, usize)> = None;
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
        let pinned =
            items.iter().zip(&sizes).filter(|(it, _)| it.pinned).fold(0usize, |acc, (_, s)| acc.saturating_add(*s));
        let peak_reusable = items
            .iter()
            .filter(|it| !it.pinned)
            .map(|at| {
                items
                    .iter()
                    .zip(&sizes)
                    .filter(|(it, _)| !it.pinned && it.first <= at.first && at.first <= it.last)
                    .fold(0usize, |acc, (_, s)| acc.saturating_add(*s))
            })
            .max()
            .unwrap_or(0);
        MemoryPlan { offsets, arena_bytes: end, peak_live_bytes: pinned.saturating_add(peak_reusable) }
    }

    #[test]
    fn the_indexed_planner_makes_the_pairwise_plans() {
        let mut s: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |m: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % m
        };
        for round in 0..500 {
            let n = 1 + next(60) as usize;
            let span = 1 + next(40);
            let items: Vec<Interval> = (0..n)
                .map(|_| {
                    let first = next(span) as usize;
                    // Sizes from a few values, so ties and equal gaps occur.
                    let bytes = [0, 1, 64, 65, 128, 200, 1000][next(7) as usize];
                    Interval { bytes, first, last: first + next(8) as usize, pinned: next(10) == 0 }
                })
                .collect();
            assert_eq!(plan_memory(&items), pairwise_plan(&items), "round {round}: {items:?}");
        }
        // Saturating sizes give the same saturated figures.
        let huge = [scratch(usize::MAX / 2, 0, 3), scratch(usize::MAX / 2, 1, 2), scratch(usize::MAX / 2, 2, 5)];
        assert_eq!(plan_memory(&huge), pairwise_plan(&huge));
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
