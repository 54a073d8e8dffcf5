//! Sets of byte ranges, so the dataflow pass costs per range, not per
//! byte, however large the arena.

use std::collections::btree_map;
use std::collections::BTreeMap;

use super::access::Pattern;

/// Disjoint, non-adjacent half-open ranges `start -> end`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct IntervalSet {
    ranges: BTreeMap<usize, usize>,
}

impl IntervalSet {
    pub(crate) fn new() -> Self {
        IntervalSet::default()
    }

    /// Adds `[lo, hi)`, merging with the ranges it touches.
    pub(crate) fn insert(&mut self, lo: usize, hi: usize) {
        if lo >= hi {
            return;
        }
        // Ranges are sorted by start and disjoint, so their ends are sorted
        // too: walking back from the last one starting at or before `hi`,
        // they touch `[lo, hi)` until one ends before `lo`.
        let touching: Vec<(usize, usize)> =
            self.ranges.range(..=hi).rev().take_while(|(_, &end)| end >= lo).map(|(&s, &e)| (s, e)).collect();
        let (mut new_lo, mut new_hi) = (lo, hi);
        for (s, e) in touching {
            self.ranges.remove(&s);
            new_lo = new_lo.min(s);
            new_hi = new_hi.max(e);
        }
        self.ranges.insert(new_lo, new_hi);
    }

    /// Whether some byte of `[lo, hi)` is in the set.
    pub(crate) fn intersects(&self, lo: usize, hi: usize) -> bool {
        // The last range starting before `hi` reaches furthest.
        lo < hi && self.ranges.range(..hi).next_back().is_some_and(|(_, &end)| end > lo)
    }

    /// The parts of `[lo, hi)` not in the set, in order.
    pub(crate) fn gaps(&self, lo: usize, hi: usize) -> Gaps<'_> {
        // Start after the range covering `lo`, if any.
        let cur = match self.ranges.range(..=lo).next_back() {
            Some((_, &end)) if end > lo => end,
            _ => lo,
        };
        Gaps { iter: self.ranges.range(cur..), cur, hi }
    }

    /// The parts of `pattern` (at arena offset `base`) not in the set, at
    /// most `limit` runs of them.
    pub(crate) fn uncovered(&self, base: usize, pattern: &Pattern, limit: usize) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        if pattern.is_empty() {
            return out;
        }
        let lo = base + pattern.start;
        let hi = base + pattern.end;
        if pattern.is_contiguous() {
            out.extend(self.gaps(lo, hi).take(limit));
            return out;
        }
        // Clip each gap to the rows it crosses.
        let (stride, chunk) = (pattern.stride, pattern.chunk);
        for (g0, g1) in self.gaps(lo, hi) {
            let (rel0, rel1) = (g0 - lo, g1 - lo);
            // First row ending after the gap starts; last row starting
            // before it ends.
            let first = if rel0 < chunk { 0 } else { (rel0 - chunk) / stride + 1 };
            let last = ((rel1 - 1) / stride).min(pattern.rows - 1);
            for row in first..=last {
                let row_lo = lo + row * stride;
                let piece = (g0.max(row_lo), g1.min(row_lo + chunk));
                if piece.0 < piece.1 {
                    out.push(piece);
                    if out.len() >= limit {
                        return out;
                    }
                }
            }
        }
        out
    }
}

/// Iterator over the gaps of an [`IntervalSet`] inside a range.
#[derive(Debug)]
pub(crate) struct Gaps<'a> {
    iter: btree_map::Range<'a, usize, usize>,
    cur: usize,
    hi: usize,
}

impl Iterator for Gaps<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        while self.cur < self.hi {
            match self.iter.next() {
                Some((&start, &end)) if start < self.hi => {
                    let gap = (self.cur < start).then_some((self.cur, start));
                    self.cur = self.cur.max(end);
                    if gap.is_some() {
                        return gap;
                    }
                }
                _ => {
                    let gap = (self.cur, self.hi);
                    self.cur = self.hi;
                    return Some(gap);
                }
            }
        }
        None
    }
}

/// Whether `pattern` at `base` touches a byte of `[lo, hi)`.
pub(crate) fn pattern_intersects(base: usize, pattern: &Pattern, lo: usize, hi: usize) -> bool {
    if pattern.is_empty() || lo >= hi {
        return false;
    }
    let (p_lo, p_hi) = (base + pattern.start, base + pattern.end);
    if p_hi <= lo || hi <= p_lo {
        return false;
    }
    if pattern.is_contiguous() {
        return true;
    }
    // The first row that ends after `lo`; it touches the range if it
    // starts before `hi`.
    let rel = lo.saturating_sub(p_lo);
    let row = if rel < pattern.chunk { 0 } else { (rel - pattern.chunk) / pattern.stride + 1 };
    row < pattern.rows && p_lo + row * pattern.stride < hi
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: a byte bitmap.
    fn bitmap(ranges: &[(usize, usize)], size: usize) -> Vec<bool> {
        let mut bits = vec![false; size];
        for &(lo, hi) in ranges {
            bits[lo..hi].iter_mut().for_each(|b| *b = true);
        }
        bits
    }

    fn pattern_bits(base: usize, p: &Pattern, size: usize) -> Vec<bool> {
        let mut bits = vec![false; size];
        if !p.is_empty() {
            for r in 0..p.rows {
                let lo = base + p.start + r * p.stride;
                bits[lo..lo + p.chunk].iter_mut().for_each(|b| *b = true);
            }
        }
        bits
    }

    #[test]
    fn insert_merges_touching_ranges() {
        let mut s = IntervalSet::new();
        s.insert(10, 20);
        s.insert(30, 40);
        s.insert(20, 30);
        assert_eq!(s.ranges.len(), 1);
        assert_eq!(s.gaps(0, 50).collect::<Vec<_>>(), vec![(0, 10), (40, 50)]);
        s.insert(5, 5);
        assert_eq!(s.ranges.len(), 1);
    }

    #[test]
    fn matches_a_bitmap_on_random_operations() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        const SIZE: usize = 96;
        for _ in 0..300 {
            let mut set = IntervalSet::new();
            let mut inserted = Vec::new();
            for _ in 0..rng.gen_range(0..8) {
                let lo = rng.gen_range(0..SIZE);
                let hi = rng.gen_range(lo..=SIZE);
                set.insert(lo, hi);
                inserted.push((lo, hi));
            }
            let bits = bitmap(&inserted, SIZE);
            let lo = rng.gen_range(0..SIZE);
            let hi = rng.gen_range(lo..=SIZE);
            let want_gaps: Vec<usize> = (lo..hi).filter(|&i| !bits[i]).collect();
            let got_gaps: Vec<usize> = set.gaps(lo, hi).flat_map(|(a, b)| a..b).collect();
            assert_eq!(got_gaps, want_gaps);
            assert_eq!(set.intersects(lo, hi), (lo..hi).any(|i| bits[i]));

            let rows = rng.gen_range(0..5);
            let chunk = rng.gen_range(0..6);
            let stride = rng.gen_range(1..12);
            let Some(p) = Pattern::strided(rng.gen_range(0..4), rows, stride, chunk) else { continue };
            if p.end > SIZE - 8 {
                continue;
            }
            let base = rng.gen_range(0..8);
            let pbits = pattern_bits(base, &p, SIZE);
            let want: Vec<usize> = (0..SIZE).filter(|&i| pbits[i] && !bits[i]).collect();
            let got: Vec<usize> = set.uncovered(base, &p, usize::MAX).into_iter().flat_map(|(a, b)| a..b).collect();
            assert_eq!(got, want, "pattern {p:?} at {base}");
            assert_eq!(pattern_intersects(base, &p, lo, hi), (lo..hi).any(|i| pbits[i]), "pattern {p:?} at {base}");
        }
    }
}
