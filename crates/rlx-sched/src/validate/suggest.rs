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

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn suggests_only_plausible_typos() {
        let names = ["h1", "fc1.weight", "fc1.bias"];
        assert_eq!(closest("h2", names), Some("h1"));
        assert_eq!(closest("fc1.weigth", names), Some("fc1.weight"));
        assert_eq!(closest("logits", names), None);
        assert_eq!(closest("x", Vec::<&str>::new()), None);
    }
}
