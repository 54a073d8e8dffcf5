//! `cargo xtask fuzz TARGET --time SECONDS`: coverage-guided fuzzing of one
//! target of `fuzz/` with AFL++ (cargo-afl, stable toolchain).
//!
//! Builds `fuzz/target/release/TARGET` with `cargo afl build --release`,
//! copies the target's seeds from the repository into `fuzz/corpus/TARGET/`,
//! runs `cargo afl fuzz` non-interactively for the given time with its
//! findings in `fuzz/out/TARGET/` (a previous run's are moved to
//! `fuzz/out/TARGET.prev/`), then prints the executions and the crashes and
//! hangs found. Exits 1 when it found any, or when cargo-afl is missing.
//! See docs/fuzzing.md.

#[path = "../../fuzz/src/seeds.rs"]
mod seeds;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use anyhow::{bail, Context};
use rlx_runtime::npy::write_npy;
use rlx_runtime::DType;

pub(crate) fn fuzz(root: &Path, target: &str, seconds: u64) -> anyhow::Result<ExitCode> {
    if !seeds::TARGETS.contains(&target) {
        bail!("unknown fuzz target `{target}` (targets: {})", seeds::TARGETS.join(", "));
    }
    if seconds == 0 {
        bail!("--time must be at least 1 second");
    }
    let afl_present = Command::new(env!("CARGO"))
        .args(["afl", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !afl_present {
        eprintln!("error: `cargo afl` is not installed. Install it with:");
        eprintln!("    cargo install cargo-afl");
        eprintln!("(it builds the AFL++ runtime on first use; see docs/fuzzing.md)");
        return Ok(ExitCode::FAILURE);
    }
    let dir = root.join("fuzz");
    let target_dir = dir.join("target");

    println!("fuzz: building {target} (cargo afl build --release)");
    let status = Command::new(env!("CARGO"))
        .args(["afl", "build", "--release", "--bin", target])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", &target_dir)
        .status()
        .context("running cargo afl build")?;
    if !status.success() {
        bail!("cargo afl build failed ({status})");
    }
    let exe = target_dir.join("release").join(target);

    let corpus = dir.join("corpus").join(target);
    let n = prepare_corpus(root, target, &corpus)?;
    println!("fuzz: {n} seed(s) in {}", corpus.display());

    let out_root = dir.join("out");
    let out = out_root.join(target);
    if out.exists() {
        let prev = out_root.join(format!("{target}.prev"));
        if prev.exists() {
            std::fs::remove_dir_all(&prev).with_context(|| format!("removing {}", prev.display()))?;
        }
        std::fs::rename(&out, &prev).with_context(|| format!("moving {} aside", out.display()))?;
        println!("fuzz: the previous run's findings are in {}", prev.display());
    }
    std::fs::create_dir_all(&out_root)?;

    println!("fuzz: running {target} for {seconds} s (findings in {})", out.display());
    let status = Command::new(env!("CARGO"))
        .arg("afl")
        .arg("fuzz")
        .arg("-i")
        .arg(&corpus)
        .arg("-o")
        .arg(&out)
        .args(["-V", &seconds.to_string(), "-t", "1000"])
        .arg(&exe)
        .current_dir(&dir)
        // Non-interactive, as root in a container: no status screen, no
        // CPU governor or core_pattern checks, no CPU pinning on shared
        // cores, and seeds that crash or time out are skipped, not fatal.
        .env("AFL_NO_UI", "1")
        .env("AFL_SKIP_CPUFREQ", "1")
        .env("AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES", "1")
        .env("AFL_NO_AFFINITY", "1")
        .env("AFL_IGNORE_SEED_PROBLEMS", "1")
        .env("AFL_SKIP_CRASHES", "1")
        .env("AFL_NO_WARN_INSTABILITY", "1")
        .stdin(Stdio::null())
        .status()
        .context("running cargo afl fuzz")?;
    remove_workdirs(target);
    if !status.success() {
        bail!("cargo afl fuzz failed ({status})");
    }

    let stats_path = out.join("default").join("fuzzer_stats");
    let stats = read_stats(&stats_path)?;
    let get = |key: &str| stats.get(key).map(String::as_str).unwrap_or("?");
    let crashes = findings(&out.join("default").join("crashes"));
    let hangs = findings(&out.join("default").join("hangs"));
    println!();
    println!(
        "fuzz {target}: {} executions in {} s ({} exec/s)",
        get("execs_done"),
        get("run_time"),
        get("execs_per_sec")
    );
    println!("  corpus {}, coverage {}, stability {}", get("corpus_count"), get("bitmap_cvg"), get("stability"));
    println!("  crashes: {} (saved_crashes {})", crashes.len(), get("saved_crashes"));
    println!("  hangs:   {} (saved_hangs {})", hangs.len(), get("saved_hangs"));
    for f in crashes.iter().chain(&hangs) {
        println!("    {}", f.display());
    }
    if crashes.is_empty() && hangs.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    println!("reproduce one with: {} < FILE", exe.display());
    Ok(ExitCode::FAILURE)
}

/// Fills `corpus` (emptied first) with the target's seeds, each once, named
/// after their paths in the repository. Returns how many it wrote.
fn prepare_corpus(root: &Path, target: &str, corpus: &Path) -> anyhow::Result<usize> {
    if corpus.exists() {
        std::fs::remove_dir_all(corpus).with_context(|| format!("emptying {}", corpus.display()))?;
    }
    std::fs::create_dir_all(corpus).with_context(|| format!("creating {}", corpus.display()))?;
    let inputs = seeds::seed_inputs(root, target).expect("a known target");
    let mut seen = HashSet::new();
    let mut n = 0;
    for (name, bytes) in inputs {
        if !seen.insert(bytes.clone()) {
            continue;
        }
        std::fs::write(corpus.join(name), &bytes)?;
        n += 1;
    }
    if target == "npy" {
        // The bundled samples are only f32 and i64: add one small array of
        // every other dtype the reader supports.
        for dtype in [DType::F64, DType::F16, DType::I32, DType::I16, DType::I8, DType::U8, DType::Bool] {
            let bytes: Vec<u8> = (0..6 * dtype.size()).map(|i| (i % 2) as u8).collect();
            write_npy(&corpus.join(format!("synthetic_{dtype}.npy")), dtype, &[2, 3], &bytes)?;
            n += 1;
        }
    }
    if n == 0 {
        bail!("no seed files for {target} below {}", root.display());
    }
    Ok(n)
}

/// `key : value` lines of AFL's `fuzzer_stats`.
fn read_stats(path: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect())
}

/// The inputs AFL saved in a crashes or hangs folder (not its README).
fn findings(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<PathBuf> =
        entries.flatten().map(|e| e.path()).filter(|p| p.file_name().is_some_and(|n| n != "README.txt")).collect();
    out.sort();
    out
}

/// Removes the scratch directories the target's processes made
/// (`rlx_fuzz::workdir`: `rlx-fuzz-TARGET-PID` in /dev/shm or the
/// temporary directory).
fn remove_workdirs(target: &str) {
    let prefix = format!("rlx-fuzz-{target}-");
    for root in [PathBuf::from("/dev/shm"), std::env::temp_dir()] {
        let Ok(entries) = std::fs::read_dir(&root) else { continue };
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}
