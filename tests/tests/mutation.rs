//! Mutation testing of every file format the project reads, on the stable
//! toolchain, in CI: the fuzz targets of `fuzz/` (`.sched` text, `.npy`
//! arrays, safetensors weights, ONNX models, Llama checkpoints, tokenizer
//! and generation JSON, schedules run by the interpreter) run on seeded
//! mutants of the repository's own files, 100,000 per target unless its
//! test says fewer. No input may panic, none
//! may take longer than a second, and each target's properties hold (see
//! `fuzz/src/checks.rs`, shared with the AFL binaries, for what each
//! target runs and asserts; `fuzz/src/seeds.rs` for the seeds).
//!
//! The mutator is AFL-like (bit flips, byte inserts and deletes,
//! interesting integers, splices between seeds, ASCII numbers made huge)
//! plus token-level edits of `.sched` text (lines duplicated, deleted or
//! swapped, identifiers swapped, numbers replaced, fields deleted).
//! Deterministic: a fixed seed per target. A failing input is reported by
//! target, seed and index, escaped, and written to
//! `target/tmp/mutation-failures/`; `RLX_MUTATION_ONLY=INDEX` reruns one
//! index alone. `RLX_MUTATION_INPUTS=N` changes the count.

#[path = "../../fuzz/src/checks.rs"]
mod checks;
#[path = "../../fuzz/src/seeds.rs"]
mod seeds;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use checks::{Outcome, Workdir};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rlx_runtime::npy::write_npy;
use rlx_sched::DType;

/// Mutants per target and run.
const INPUTS: usize = 100_000;
/// One input taking longer than this is a hang.
const SLOW: Duration = Duration::from_secs(1);
/// An input still running after this is reported and the process exits:
/// the test cannot interrupt it.
const STUCK: Duration = Duration::from_secs(30);
/// The largest `llama` seed mutated here: the tiny checkpoints
/// (`seeds::tiny_llama`, a few kilobytes), not the bundled 498 KB one,
/// which AFL mutates. At the test profile each of its imports took about
/// 10 ms; it made most of the target's time, and its slowest mutants came
/// near the 1 s limit on a loaded machine, while the tiny ones reach the
/// same code (f32 and f16 weights, tied and separate `lm_head`).
const LLAMA_MAX_SEED: usize = 64 << 10;
/// Failures reported per target before the stream stops.
const MAX_FAILURES: usize = 5;

/// Inputs known to fail today, by (target, index), each with the reason
/// it fails. Only for the known classes being fixed elsewhere (hangs in
/// diagnostics rendering, huge arenas, weights paths); they are still run
/// and reported, but do not fail the test. Empty: nothing known fails.
const KNOWN_ISSUES: &[(&str, usize, &str)] = &[];

/// A target's scratch directory; chat templates render in the
/// `chat-renderer` process, as in a decoder binary.
fn workdir(name: &str) -> Workdir {
    Workdir::new(name).with_chat_renderer(PathBuf::from(env!("CARGO_BIN_EXE_chat-renderer")))
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ sits in the workspace").to_path_buf()
}

/// The seed inputs of `target`: the repository's files (`seeds::seed_inputs`),
/// and for `npy` one small array of every dtype the reader supports (the
/// samples are only f32 and i64).
fn seed_inputs(target: &str, work: &Workdir) -> Vec<Vec<u8>> {
    let seeds = seeds::seed_inputs(&root(), target).expect("a known target");
    let mut out: Vec<Vec<u8>> = seeds.into_iter().map(|(_, bytes)| bytes).collect();
    if target == "llama" {
        out.retain(|s| s.len() <= LLAMA_MAX_SEED);
    }
    if target == "npy" {
        for dtype in [DType::F64, DType::F16, DType::I32, DType::I16, DType::I8, DType::U8, DType::Bool] {
            let path = work.path().join("synthetic.npy");
            let bytes: Vec<u8> = (0..6 * dtype.size()).map(|i| (i % 2) as u8).collect();
            write_npy(&path, dtype, &[2, 3], &bytes).expect("write a synthetic seed");
            out.push(std::fs::read(&path).expect("read a synthetic seed"));
        }
    }
    out.sort();
    out.dedup();
    assert!(out.len() >= 3, "too few seeds for {target}: {}", out.len());
    out
}

/// A deterministic stream of mutants of a set of seeds.
struct Mutator<'a> {
    rng: StdRng,
    seeds: &'a [Vec<u8>],
    /// Cumulative selection weights: small seeds are picked more often
    /// (weight 1/sqrt(len)), as they are cheaper and reach the same code.
    cumulative: Vec<f64>,
    /// Token-level edits of `.sched` text too.
    text: bool,
}

const INTERESTING_8: &[u8] = &[0, 1, 0x7f, 0x80, 0xff, 16, 32, 64, 100];
const INTERESTING_64: &[u64] = &[
    0,
    1,
    0x7f,
    0x80,
    0xff,
    0x7fff,
    0x8000,
    0xffff,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0x1_0000_0000,
    0x7fff_ffff_ffff_ffff,
    0x8000_0000_0000_0000,
    u64::MAX,
    u64::MAX - 7,
    4096,
    1 << 20,
    100_000_000,
];
const INTERESTING_TEXT: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "7",
    "63",
    "64",
    "65",
    "4096",
    "65536",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e40",
    "-1e40",
    "1e-45",
    "nan",
    "inf",
    "-inf",
    "0.5",
    "-0",
];
/// Fragments of `.sched` syntax (and of the other formats' headers) for
/// token inserts.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    ":",
    ",",
    "@",
    "+",
    "\"",
    "//",
    "\n",
    " ",
    "arena+",
    "weights+",
    "none",
    "input ",
    "output ",
    "scratch ",
    "param ",
    "f32",
    "f16",
    "i64",
    "bool",
    "true",
    "'shape': (",
    "'descr': '<f4'",
    "'fortran_order': True",
    "\"dtype\":\"F32\"",
    "\"data_offsets\":[0,",
    "\"shape\":[",
    "\"__metadata__\":{}",
];

impl<'a> Mutator<'a> {
    fn new(seed: u64, seeds: &'a [Vec<u8>], text: bool) -> Self {
        let mut total = 0.0;
        let cumulative = seeds
            .iter()
            .map(|s| {
                total += 1.0 / (s.len().max(16) as f64).sqrt();
                total
            })
            .collect();
        Mutator { rng: StdRng::seed_from_u64(seed), seeds, cumulative, text }
    }

    fn pick_seed(&mut self) -> usize {
        let total = *self.cumulative.last().expect("seeds");
        let x = self.rng.gen::<f64>() * total;
        self.cumulative.iter().position(|&c| x < c).unwrap_or(self.seeds.len() - 1)
    }

    /// The next mutant: a seed with one to four edits.
    fn next_input(&mut self) -> Vec<u8> {
        let mut data = self.seeds[self.pick_seed()].clone();
        let edits = match self.rng.gen_range(0..10) {
            0..=4 => 1,
            5..=7 => 2,
            8 => 3,
            _ => 4,
        };
        for _ in 0..edits {
            if self.text && self.rng.gen_bool(0.6) {
                self.text_edit(&mut data);
            } else {
                self.byte_edit(&mut data);
            }
        }
        data
    }

    /// An offset into `len` bytes, half the time within the first 64 (the
    /// headers of npy, safetensors and protobuf files).
    fn offset(&mut self, len: usize) -> usize {
        if len == 0 {
            0
        } else if self.rng.gen_bool(0.5) {
            self.rng.gen_range(0..len.min(64))
        } else {
            self.rng.gen_range(0..len)
        }
    }

    fn range(&mut self, len: usize) -> (usize, usize) {
        let start = self.offset(len);
        let max = (len - start).min(if self.rng.gen_bool(0.9) { 32 } else { len });
        let n = if max == 0 { 0 } else { self.rng.gen_range(1..=max) };
        (start, start + n)
    }

    fn byte_edit(&mut self, data: &mut Vec<u8>) {
        let len = data.len();
        match self.rng.gen_range(0..12) {
            // Bit flips.
            0 | 1 if len > 0 => {
                for _ in 0..self.rng.gen_range(1..=4) {
                    let at = self.offset(len);
                    data[at] ^= 1 << self.rng.gen_range(0..8);
                }
            }
            // Random or interesting bytes.
            2 if len > 0 => {
                let at = self.offset(len);
                data[at] = if self.rng.gen_bool(0.5) {
                    self.rng.gen()
                } else {
                    INTERESTING_8[self.rng.gen_range(0..INTERESTING_8.len())]
                };
            }
            // Interesting integers, 1 to 8 bytes, either endianness.
            3 | 4 if len > 0 => {
                let width = [1, 2, 4, 8][self.rng.gen_range(0..4)];
                let mut v = INTERESTING_64[self.rng.gen_range(0..INTERESTING_64.len())];
                if self.rng.gen_bool(0.2) {
                    v = v.wrapping_neg();
                }
                // The value's low `width` bytes, in either byte order.
                let src = if self.rng.gen_bool(0.8) {
                    v.to_le_bytes()[..width].to_vec()
                } else {
                    v.to_be_bytes()[8 - width..].to_vec()
                };
                let at = self.offset(len);
                let end = (at + width).min(len);
                data[at..end].copy_from_slice(&src[..end - at]);
            }
            // Inserted bytes: random, repeated, or a token.
            5 => {
                let at = self.rng.gen_range(0..=len);
                let insert: Vec<u8> = match self.rng.gen_range(0..3) {
                    0 => (0..self.rng.gen_range(1..=16)).map(|_| self.rng.gen()).collect(),
                    1 => vec![self.rng.gen(); self.rng.gen_range(1..=256)],
                    _ => TOKENS[self.rng.gen_range(0..TOKENS.len())].as_bytes().to_vec(),
                };
                data.splice(at..at, insert);
            }
            // A deleted range.
            6 | 7 if len > 0 => {
                let (s, e) = self.range(len);
                data.drain(s..e);
            }
            // A range copied elsewhere.
            8 if len > 0 => {
                let (s, e) = self.range(len);
                let chunk = data[s..e].to_vec();
                let at = self.rng.gen_range(0..=len);
                data.splice(at..at, chunk);
            }
            // A splice: this input's head, another seed's tail.
            9 => {
                let other = &self.seeds[self.pick_seed()];
                let cut = self.rng.gen_range(0..=len);
                let from = self.rng.gen_range(0..=other.len());
                data.truncate(cut);
                data.extend_from_slice(&other[from..]);
            }
            // Truncated.
            10 if len > 0 => {
                let at = self.rng.gen_range(0..len);
                data.truncate(at);
            }
            // An ASCII number (npy and safetensors headers, .sched text)
            // made interesting.
            _ => self.replace_number(data),
        }
    }

    fn replace_number(&mut self, data: &mut Vec<u8>) {
        let numbers = runs(data, |b| b.is_ascii_digit());
        if numbers.is_empty() {
            return;
        }
        let (s, e) = numbers[self.rng.gen_range(0..numbers.len())];
        let with = self.interesting_number();
        data.splice(s..e, with.into_bytes());
    }

    fn interesting_number(&mut self) -> String {
        match self.rng.gen_range(0..4) {
            0 => INTERESTING_TEXT[self.rng.gen_range(0..INTERESTING_TEXT.len())].to_string(),
            1 => (1u64 << self.rng.gen_range(0..64)).to_string(),
            2 => self.rng.gen_range(0..100_000u64).to_string(),
            _ => self.rng.gen::<u64>().to_string(),
        }
    }

    /// Token-level edits of `.sched` text.
    fn text_edit(&mut self, data: &mut Vec<u8>) {
        let mut lines: Vec<Vec<u8>> = data.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
        let n = lines.len();
        match self.rng.gen_range(0..10) {
            // Numbers replaced: dims, offsets, sizes, header values.
            0..=2 => self.replace_number(data),
            // A line duplicated, deleted or swapped with another.
            3 => {
                let i = self.rng.gen_range(0..n);
                lines.insert(i, lines[i].clone());
                *data = lines.join(&b'\n');
            }
            4 => {
                lines.remove(self.rng.gen_range(0..n));
                *data = lines.join(&b'\n');
            }
            5 => {
                lines.swap(self.rng.gen_range(0..n), self.rng.gen_range(0..n));
                *data = lines.join(&b'\n');
            }
            // A block of lines repeated many times (long schedules).
            6 => {
                let i = self.rng.gen_range(0..n);
                let j = (i + self.rng.gen_range(1..=4)).min(n);
                let block = lines[i..j].to_vec();
                for _ in 0..self.rng.gen_range(1..=64) {
                    lines.splice(j..j, block.iter().cloned());
                }
                *data = lines.join(&b'\n');
            }
            // An identifier replaced by another one of the text: operand
            // swaps, roles, dtypes, enum values, kinds.
            7 => {
                let words: Vec<(usize, usize)> =
                    runs(data, is_word).into_iter().filter(|&(s, _)| !data[s].is_ascii_digit()).collect();
                if words.len() >= 2 {
                    let (s, e) = words[self.rng.gen_range(0..words.len())];
                    let (ws, we) = words[self.rng.gen_range(0..words.len())];
                    let with = data[ws..we].to_vec();
                    data.splice(s..e, with);
                }
            }
            // A thunk field deleted (`, name: value`).
            8 => {
                let commas: Vec<usize> =
                    data.windows(2).enumerate().filter(|(_, w)| w == b", ").map(|(i, _)| i).collect();
                if commas.len() >= 2 {
                    let i = self.rng.gen_range(0..commas.len() - 1);
                    let (a, b) = (commas[i], commas[i + 1]);
                    if !data[a..b].contains(&b'\n') {
                        data.drain(a..b);
                    }
                }
            }
            // A token inserted at a word boundary.
            _ => {
                let at = self.rng.gen_range(0..=data.len());
                let token = TOKENS[self.rng.gen_range(0..TOKENS.len())];
                data.splice(at..at, token.bytes());
            }
        }
    }
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'.'
}

/// Byte ranges of the maximal runs of `pred` bytes.
fn runs(data: &[u8], pred: impl Fn(u8) -> bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < data.len() {
        if pred(data[i]) {
            let start = i;
            while i < data.len() && pred(data[i]) {
                i += 1;
            }
            out.push((start, i));
        } else {
            i += 1;
        }
    }
    out
}

/// The panic payload's message.
fn message(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

/// Saves a failing input for reproduction and describes it.
fn report(target: &str, seed: u64, index: usize, input: &[u8], what: &str) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mutation-failures");
    let file = dir.join(format!("{target}-{seed:x}-{index}.bin"));
    let saved = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&file, input));
    let shown: String = input.escape_ascii().to_string().chars().take(3000).collect();
    format!(
        "{target}: input #{index} (seed {seed:#x}, {} bytes{}) {what}\n  input: b\"{shown}\"{}\n  rerun alone: RLX_MUTATION_ONLY={index} cargo test -p rlx-tests --test mutation {target}",
        input.len(),
        if saved.is_ok() { format!(", saved as {}", file.display()) } else { String::new() },
        if shown.len() >= 3000 { "..." } else { "" },
    )
}

/// What one target's stream found.
#[derive(Debug, Default)]
struct Tally {
    accepted: usize,
    rejected: usize,
    slowest: Duration,
    failures: Vec<String>,
    known: Vec<String>,
}

/// Runs the target's mutants; returns the tally.
fn run_target(target: &str, seed: u64, count: usize) -> Tally {
    let work = workdir(&format!("rlx-mutation-{target}-{}", std::process::id()));
    let inputs = std::env::var("RLX_MUTATION_INPUTS").ok().and_then(|n| n.parse().ok()).unwrap_or(count);
    let only: Option<usize> = std::env::var("RLX_MUTATION_ONLY").ok().and_then(|n| n.parse().ok());
    let seed_data = seed_inputs(target, &work);
    let mut mutator = Mutator::new(seed, &seed_data, is_text(target));

    // The watchdog: an input that never returns cannot be caught, so it
    // is reported (regenerated from its index) and the process exits.
    let current = Arc::new(AtomicUsize::new(usize::MAX));
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (current, done, target) = (Arc::clone(&current), Arc::clone(&done), target.to_owned());
        let seed_data = seed_data.clone();
        std::thread::spawn(move || {
            let mut last = (usize::MAX, Instant::now());
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let now = current.load(Ordering::Relaxed);
                if now != last.0 {
                    last = (now, Instant::now());
                } else if now != usize::MAX && last.1.elapsed() > STUCK {
                    let mut m = Mutator::new(seed, &seed_data, is_text(&target));
                    let input = (0..=now).map(|_| m.next_input()).last().expect("one input");
                    let what = format!("has run for more than {} s", STUCK.as_secs());
                    eprintln!("{}", report(&target, seed, now, &input, &what));
                    std::process::exit(101);
                }
            }
        })
    };

    let mut tally = Tally::default();
    for index in 0..inputs {
        let input = mutator.next_input();
        if only.is_some_and(|o| o != index) {
            continue;
        }
        current.store(index, Ordering::Relaxed);
        let start = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| checks::run(target, &work, &input).expect("a known target")));
        let took = start.elapsed();
        current.store(usize::MAX, Ordering::Relaxed);
        tally.slowest = tally.slowest.max(took);
        let failure = match outcome {
            Ok(Outcome::Accepted) => {
                tally.accepted += 1;
                None
            }
            Ok(Outcome::Rejected) => {
                tally.rejected += 1;
                None
            }
            Err(e) => Some(format!("panicked: {}", message(&*e))),
        };
        let failure = failure.or_else(|| (took > SLOW).then(|| format!("took {took:?} (limit {SLOW:?})")));
        if let Some(what) = failure {
            let text = report(target, seed, index, &input, &what);
            match KNOWN_ISSUES.iter().find(|(t, i, _)| *t == target && *i == index) {
                Some((_, _, issue)) => tally.known.push(format!("[known: {issue}] {text}")),
                None => tally.failures.push(text),
            }
            if tally.failures.len() >= MAX_FAILURES {
                break;
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    let _ = watchdog.join();
    tally
}

/// Whether `target` reads `.sched` text (and gets token-level edits too).
fn is_text(target: &str) -> bool {
    matches!(target, "sched" | "sched_run")
}

fn check_target(target: &str, seed: u64) {
    check_target_with(target, seed, INPUTS);
}

/// `check_target` with another count than [`INPUTS`], for a target whose
/// inputs cost more (its figure is in docs/fuzzing.md).
fn check_target_with(target: &str, seed: u64, count: usize) {
    assert!(seeds::TARGETS.contains(&target), "{target} is not a fuzz target");
    let start = Instant::now();
    let tally = run_target(target, seed, count);
    let total = tally.accepted + tally.rejected;
    eprintln!(
        "mutation {target}: {total} inputs in {:.1} s ({} accepted, {} rejected), slowest {:?}",
        start.elapsed().as_secs_f64(),
        tally.accepted,
        tally.rejected,
        tally.slowest,
    );
    for k in &tally.known {
        eprintln!("{k}");
    }
    assert!(tally.failures.is_empty(), "{} failing input(s):\n\n{}", tally.failures.len(), tally.failures.join("\n\n"));
    if std::env::var_os("RLX_MUTATION_ONLY").is_none() {
        // Both outcomes occur: the mutants reach past the first checks.
        assert!(tally.accepted > 0, "{target}: no mutant was accepted");
        assert!(tally.rejected > 0, "{target}: no mutant was rejected");
    }
}

#[test]
fn sched() {
    check_target("sched", 0x5c4e_d000_0001);
}

#[test]
fn npy() {
    check_target("npy", 0x5c4e_d000_0002);
}

#[test]
fn weights() {
    check_target("weights", 0x5c4e_d000_0003);
}

#[test]
fn onnx() {
    check_target("onnx", 0x5c4e_d000_0004);
}

#[test]
fn gguf() {
    check_target("gguf", 0x5c4e_d000_0008);
}

#[test]
fn llama() {
    check_target("llama", 0x5c4e_d000_0005);
}

#[test]
fn tokenizer() {
    check_target("tokenizer", 0x5c4e_d000_0006);
}

#[test]
fn sched_run() {
    check_target("sched_run", 0x5c4e_d000_0007);
}

/// The inputs AFL (or this test) once found failing, kept under
/// `tests/fuzz-regressions/TARGET/`: each must now be handled like any
/// other input, within the time limit.
#[test]
fn fuzz_regressions() {
    let dir = root().join("tests/fuzz-regressions");
    let mut failures = Vec::new();
    let mut count = 0;
    for target in seeds::TARGETS {
        let work = workdir(&format!("rlx-regressions-{target}-{}", std::process::id()));
        let Ok(entries) = std::fs::read_dir(dir.join(target)) else { continue };
        let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect();
        files.sort();
        for file in files {
            let input = std::fs::read(&file).expect("read a regression input");
            count += 1;
            let start = Instant::now();
            let outcome = catch_unwind(AssertUnwindSafe(|| checks::run(target, &work, &input)));
            let took = start.elapsed();
            let rel = file.strip_prefix(root()).unwrap_or(&file).display().to_string();
            match outcome {
                Err(e) => failures.push(format!("{rel}: panicked: {}", message(&*e))),
                Ok(_) if took > SLOW => failures.push(format!("{rel}: took {took:?} (limit {SLOW:?})")),
                Ok(_) => {}
            }
        }
    }
    eprintln!("fuzz regressions: {count} input(s), {} failing", failures.len());
    assert!(failures.is_empty(), "{} regression input(s) fail:\n\n{}", failures.len(), failures.join("\n\n"));
}
