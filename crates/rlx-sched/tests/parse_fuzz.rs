//! The parser never panics: random bytes, random token soup and random
//! mutations of the example schedules. Whatever parses must print, and
//! the printed text must parse back to the same text. Whatever fails must
//! render its diagnostics. Seeded, so every run checks the same inputs.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rlx_sched::{parse, print};

/// One input: parse, then print or render; panics name the input.
/// Returns whether the input parsed.
fn check(text: &str, render: bool) -> bool {
    let outcome = catch_unwind(AssertUnwindSafe(|| match parse(text) {
        Ok(ast) => {
            let printed = print(&ast);
            let again = parse(&printed)
                .unwrap_or_else(|d| panic!("printed text does not parse:\n{}", d.render("printed", &printed)));
            assert_eq!(print(&again), printed, "printing is not a fixed point");
            true
        }
        Err(d) => {
            assert!(!d.is_empty(), "an error without diagnostics");
            if render {
                let _ = d.render("fuzz.sched", text);
            }
            false
        }
    }));
    outcome.unwrap_or_else(|e| {
        let what = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
        panic!("input {text:?}\nfailed: {}", what.unwrap_or_default())
    })
}

/// The example schedules, the seeds of the mutations.
fn corpus() -> Vec<String> {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/sched"));
    let mut files = Vec::new();
    for dir in ["ok", "err"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else { continue };
        let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths.iter().filter(|p| p.extension().is_some_and(|x| x == "sched")) {
            files.push(std::fs::read_to_string(p).expect("readable case"));
        }
    }
    assert!(!files.is_empty(), "no example schedules under {}", root.display());
    files
}

const VOCAB: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    ",",
    ":",
    "@",
    "+",
    "-",
    "//",
    "\"",
    "\n",
    "\r\n",
    "\t",
    " ",
    "rlx-sched",
    "1",
    "model",
    "arena",
    "align",
    "weights",
    "sha256",
    "mask_threshold",
    "mask_neg_inf",
    "score_skip",
    "input",
    "output",
    "param",
    "scratch",
    "f32",
    "i64",
    "bool",
    "Sgemm",
    "Copy",
    "Nop",
    "Attention",
    "ElementwiseRegion",
    "Conv3d",
    "a",
    "x",
    "fc1.weight",
    "none",
    "true",
    "inf",
    "-inf",
    "nan",
    "in1",
    "relu",
    "clip",
    "add",
    "sliding_window",
    "0",
    "64",
    "-1e9",
    "0.5",
    "1e",
    "18446744073709551616",
    "é",
    "→",
    "\u{0}",
    "$",
    ";",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    "m: 1",
    "len: 4",
    "src: x",
    "dst: y",
];

fn token_soup(rng: &mut StdRng) -> String {
    let n = rng.gen_range(0..40);
    (0..n).map(|_| VOCAB[rng.gen_range(0..VOCAB.len())]).collect::<Vec<_>>().join(if rng.gen() { " " } else { "" })
}

fn random_bytes(rng: &mut StdRng) -> String {
    let n = rng.gen_range(0..200);
    let bytes: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn mutate(rng: &mut StdRng, seed: &str) -> String {
    let mut bytes = seed.as_bytes().to_vec();
    for _ in 0..rng.gen_range(1..4) {
        let len = bytes.len();
        if len == 0 {
            break;
        }
        let at = rng.gen_range(0..len);
        let span = rng.gen_range(1..=(len - at).min(24));
        match rng.gen_range(0..7) {
            0 => bytes[at] = rng.gen(),
            1 => {
                bytes.drain(at..at + span);
            }
            2 => {
                let piece = bytes[at..at + span].to_vec();
                bytes.splice(at..at, piece);
            }
            3 => bytes.truncate(at),
            4 => {
                let tok = VOCAB[rng.gen_range(0..VOCAB.len())].as_bytes();
                bytes.splice(at..at, tok.iter().copied());
            }
            5 => {
                // Swap two whitespace-separated tokens.
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let mut toks: Vec<&str> = text.split(' ').collect();
                if toks.len() > 1 {
                    let (i, j) = (rng.gen_range(0..toks.len()), rng.gen_range(0..toks.len()));
                    toks.swap(i, j);
                }
                bytes = toks.join(" ").into_bytes();
            }
            _ => {
                // Swap two lines.
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let mut lines: Vec<&str> = text.split('\n').collect();
                let (i, j) = (rng.gen_range(0..lines.len()), rng.gen_range(0..lines.len()));
                lines.swap(i, j);
                bytes = lines.join("\n").into_bytes();
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = StdRng::seed_from_u64(0x5eed_0001);
    for i in 0..20_000 {
        check(&random_bytes(&mut rng), i % 8 == 0);
    }
}

#[test]
fn token_soup_never_panics() {
    let mut rng = StdRng::seed_from_u64(0x5eed_0002);
    for i in 0..20_000 {
        check(&token_soup(&mut rng), i % 8 == 0);
    }
}

#[test]
fn mutated_schedules_never_panic() {
    let corpus = corpus();
    let mut rng = StdRng::seed_from_u64(0x5eed_0003);
    let mut parsed = 0;
    for i in 0..25_000 {
        let seed = &corpus[rng.gen_range(0..corpus.len())];
        let text = mutate(&mut rng, seed);
        parsed += usize::from(check(&text, i % 8 == 0));
    }
    // Mutations must sometimes keep a file valid, or the print path above
    // would go untested.
    assert!(parsed > 100, "only {parsed} mutated files parsed");
}

#[test]
fn huge_inputs_do_not_overflow_the_stack() {
    let header = "rlx-sched 1\nmodel m\narena 64 align 64\nmask_threshold 0.5\nmask_neg_inf -1e9\nscore_skip 0.0\n";
    let deep = format!("{header}Copy {{ src: {}x{}, dst: y, len: 1 }}\n", "[".repeat(100_000), "]".repeat(100_000));
    assert!(parse(&deep).is_err());
    let calls = format!("{header}Copy {{ src: {}x{}, dst: y, len: 1 }}\n", "f(".repeat(100_000), ")".repeat(100_000));
    assert!(parse(&calls).is_err());
    let digits = format!("{header}Copy {{ src: x, dst: y, len: {} }}\n", "9".repeat(1_000_000));
    let d = parse(&digits).expect_err("overflowing integer");
    assert!(d.0[0].message.len() < 100, "messages cut long lexemes: {}", d.0[0].message);
    let rendered = d.render("big.sched", &digits);
    assert!(rendered.starts_with("big.sched:7:"), "{}", &rendered[..80]);
    let many_lines = format!("{header}{}", "Nop {}\n".repeat(100_000));
    assert_eq!(parse(&many_lines).expect("valid").thunks.len(), 100_000);
}
