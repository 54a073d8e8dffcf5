//! Mutation fuzzing of the validator: random edits of the valid schedules in
//! `tests/sched/ok` (numbers made zero, huge or random, operand names
//! swapped, fields and lines deleted or duplicated) must never panic
//! `check_source`: bad input gets diagnostics, whatever it is.
//!
//! Deterministic (seeded), and sized to run in a few seconds at the test
//! profile's opt-level.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rlx_sched::check_source;

const CASES: usize = 50_000;
const SEED: u64 = 0x5eed_5c4e_d001;

fn ok_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/sched/ok")
}

fn ok_sources() -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(ok_dir())
        .expect("ok folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "sched"))
        .collect();
    files.sort();
    files.iter().map(|p| std::fs::read_to_string(p).expect("read ok case")).collect()
}

/// Byte ranges of the maximal runs of `pred` characters.
fn runs(text: &str, pred: impl Fn(u8) -> bool) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if pred(bytes[i]) {
            let start = i;
            while i < bytes.len() && pred(bytes[i]) {
                i += 1;
            }
            out.push((start, i));
        } else {
            i += 1;
        }
    }
    out
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'.'
}

/// A number chosen to hit edge cases: zero, one, small, around powers of
/// two and the integer limits, or anything.
fn interesting_number(rng: &mut StdRng) -> String {
    match rng.gen_range(0..10) {
        0 => "0".to_string(),
        1 => "1".to_string(),
        2 => rng.gen_range(2..20u64).to_string(),
        3 => (1u64 << rng.gen_range(0..64)).to_string(),
        4 => ((1u64 << rng.gen_range(1..64)) - 1).to_string(),
        5 => u64::MAX.to_string(),
        6 => (u64::MAX / rng.gen_range(1..5u64)).to_string(),
        7 => rng.gen_range(0..100_000u64).to_string(),
        8 => (rng.gen_range(0..64u64) * 64).to_string(),
        _ => rng.gen::<u64>().to_string(),
    }
}

fn replace(text: &str, (start, end): (usize, usize), with: &str) -> String {
    format!("{}{with}{}", &text[..start], &text[end..])
}

/// One random edit of `text`.
fn mutate(text: &str, rng: &mut StdRng) -> String {
    let lines: Vec<&str> = text.lines().collect();
    match rng.gen_range(0..100) {
        // Numbers: dims, offsets, sizes, header values.
        0..=54 => {
            let numbers = runs(text, |b| b.is_ascii_digit());
            if numbers.is_empty() {
                return text.to_string();
            }
            let at = numbers[rng.gen_range(0..numbers.len())];
            replace(text, at, &interesting_number(rng))
        }
        // An identifier replaced by another one of the file: operand
        // swaps, roles, dtypes, enum values, kinds.
        55..=74 => {
            let words: Vec<(usize, usize)> =
                runs(text, is_word).into_iter().filter(|&(s, _)| !text.as_bytes()[s].is_ascii_digit()).collect();
            if words.len() < 2 {
                return text.to_string();
            }
            let at = words[rng.gen_range(0..words.len())];
            let (s, e) = words[rng.gen_range(0..words.len())];
            replace(text, at, &text[s..e])
        }
        // A field of a thunk deleted (`name: value,`).
        75..=82 => {
            let commas: Vec<usize> = text.match_indices(", ").map(|(i, _)| i).collect();
            if commas.len() < 2 {
                return text.to_string();
            }
            let i = rng.gen_range(0..commas.len() - 1);
            let (a, b) = (commas[i], commas[i + 1]);
            if text[a..b].contains('\n') {
                return text.to_string();
            }
            replace(text, (a, b), "")
        }
        // A view or raw offset.
        83..=89 => {
            let words = runs(text, is_word);
            let at = words[rng.gen_range(0..words.len())];
            let suffix = format!("+{}", interesting_number(rng));
            let word = &text[at.0..at.1];
            if rng.gen_bool(0.5) {
                replace(text, at, &format!("{word}{suffix}"))
            } else {
                replace(text, at, &format!("@{}", interesting_number(rng)))
            }
        }
        // Whole lines: deleted, duplicated or swapped.
        _ => {
            let mut out: Vec<&str> = lines.clone();
            let i = rng.gen_range(0..out.len());
            match rng.gen_range(0..3) {
                0 => {
                    out.remove(i);
                }
                1 => out.insert(i, lines[i]),
                _ => out.swap(i, rng.gen_range(0..lines.len())),
            }
            let mut s = out.join("\n");
            s.push('\n');
            s
        }
    }
}

/// Most of the time, only a few consecutive thunk lines of a long source
/// (with its header and buffers): every kind still gets mutated, at a
/// fraction of the parsing cost of the whole file.
fn window(text: &str, rng: &mut StdRng) -> String {
    const MAX_THUNKS: usize = 6;
    let lines: Vec<&str> = text.lines().collect();
    let first_thunk = lines.iter().position(|l| l.contains(" {") && !l.starts_with("//"));
    let Some(first) = first_thunk else { return text.to_string() };
    let thunks = lines.len() - first;
    if thunks <= MAX_THUNKS || rng.gen_bool(0.1) {
        return text.to_string();
    }
    let start = first + rng.gen_range(0..=thunks - MAX_THUNKS);
    let mut out: Vec<&str> = lines[..first].to_vec();
    out.extend_from_slice(&lines[start..start + MAX_THUNKS]);
    let mut s = out.join("\n");
    s.push('\n');
    s
}

/// Runs `cases` mutants from one seed; `Err` holds a case that panicked.
fn run_stream(seed: u64, cases: usize, sources: &[String], dir: &Path) -> Result<(usize, usize), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut valid, mut invalid) = (0usize, 0usize);
    for case in 0..cases {
        let mut text = window(&sources[rng.gen_range(0..sources.len())], &mut rng);
        for _ in 0..rng.gen_range(1..=3) {
            text = mutate(&text, &mut rng);
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let result = check_source(&text, dir);
            // Rendering the validator's spans must not panic either; a
            // sample is enough (the parser's fuzz test renders all of its).
            if let Err(d) = &result {
                if case % 16 == 0 {
                    let _ = d.render("fuzz.sched", &text);
                }
            }
            result
        }));
        match outcome {
            Ok(Ok(_)) => valid += 1,
            Ok(Err(d)) if d.is_empty() => {
                return Err(format!("seed {seed} case {case}: an error without diagnostics:\n{text}"))
            }
            Ok(Err(_)) => invalid += 1,
            Err(_) => return Err(format!("seed {seed} case {case} panicked on:\n{text}")),
        }
    }
    Ok((valid, invalid))
}

#[test]
fn mutated_schedules_never_panic() {
    let sources = ok_sources();
    assert!(sources.len() >= 4, "expected the ok cases");
    let dir = ok_dir();
    // Two independent streams, one per core of the CI machine.
    let results: Vec<Result<(usize, usize), String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2u64)
            .map(|i| {
                let (sources, dir) = (&sources, &dir);
                scope.spawn(move || run_stream(SEED + i, CASES / 2, sources, dir))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("fuzz thread")).collect()
    });
    let (mut valid, mut invalid) = (0, 0);
    for r in results {
        let (v, i) = r.unwrap_or_else(|e| panic!("{e}"));
        valid += v;
        invalid += i;
    }
    assert_eq!(valid + invalid, CASES);
    // Both outcomes occur, so the mutations reach the validator and do not
    // only break the syntax.
    assert!(valid > CASES / 100, "only {valid} mutants were valid");
    assert!(invalid > CASES / 2, "only {invalid} mutants were invalid");
}
