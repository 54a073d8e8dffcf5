//! "Did you mean" for buffer and tensor names.

/// The candidate closest to `word` by edit distance, if close enough to be
/// a plausible typo: at most a third of the word's length (at least one
/// edit). Ties go to the first candidate, so the answer is deterministic.
pub(crate) fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    // Long words are never typos of a name; skip the quadratic work.
    if word.len() > 128 {
        return None;
    }
    let limit = (word.chars().count() / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        if c.len() > 128 {
            continue;
        }
        let d = strsim::levenshtein(word, c);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// Edit distances one validation may spend on "did you mean" hints.
/// Each hint costs one distance per candidate, so a hostile file with
/// thousands of unknown names among thousands of buffers would cost their
/// product; past the budget, hints fall back to their generic text.
#[derive(Clone, Debug)]
pub(crate) struct Budget(std::cell::Cell<usize>);

/// The distances [`Budget::default`] allows: thousands of hints on a real
/// schedule, well under a second of work on any.
const DISTANCES: usize = 1_000_000;

impl Default for Budget {
    fn default() -> Self {
        Budget(std::cell::Cell::new(DISTANCES))
    }
}

impl Budget {
    /// [`closest`] among `count` candidates, or `None` when the budget
    /// cannot pay for them.
    pub(crate) fn closest<'a>(
        &self,
        word: &str,
        candidates: impl IntoIterator<Item = &'a str>,
        count: usize,
    ) -> Option<&'a str> {
        let left = self.0.get().checked_sub(count)?;
        self.0.set(left);
        closest(word, candidates)
    }
}

#[cfg(test)]
mod tests {
    use super::{closest, Budget};

    #[test]
    fn suggests_only_plausible_typos() {
        let names = ["h1", "fc1.weight", "fc1.bias"];
        assert_eq!(closest("h2", names), Some("h1"));
        assert_eq!(closest("fc1.weigth", names), Some("fc1.weight"));
        assert_eq!(closest("logits", names), None);
        assert_eq!(closest("x", Vec::<&str>::new()), None);
    }

    #[test]
    fn a_spent_budget_gives_no_hint() {
        let b = Budget(std::cell::Cell::new(5));
        assert_eq!(b.closest("h2", ["h1", "h3"], 2), Some("h1"));
        assert_eq!(b.closest("h2", ["h1", "h3"], 2), Some("h1"));
        assert_eq!(b.closest("h2", ["h1", "h3"], 2), None);
    }
}
