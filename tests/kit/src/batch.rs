//! The batch contract of the model CLI (`--input-dir DIR --output-dir
//! OUT`): many input sets through one process give the outputs of one
//! process per input set, and a bad input set fails alone.

use std::path::{Path, PathBuf};

use rlx_runtime::model::{GeneratedModel, TensorInfo};
use rlx_runtime::npy;

use crate::models::{load_samples, run_binary, Samples};

/// A fresh, empty temporary directory for one check.
fn fresh_dir(what: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-batch-{what}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes sample `i` of `samples` as input set `name` of `dir` in the
/// layout of the model's input count: `NAME.npy` for one input,
/// `NAME/INPUT.npy` for more.
fn write_input_set<M: GeneratedModel>(dir: &Path, name: &str, samples: &Samples, i: usize) {
    let inputs = M::INFO.inputs;
    for (t, all) in inputs.iter().zip(&samples.inputs) {
        let bytes = &all[i * t.bytes..(i + 1) * t.bytes];
        npy::write_npy(&input_path::<M>(dir, name, t), t.dtype, t.shape, bytes).unwrap();
    }
}

fn input_path<M: GeneratedModel>(dir: &Path, name: &str, t: &TensorInfo) -> PathBuf {
    if M::INFO.inputs.len() == 1 {
        dir.join(format!("{name}.npy"))
    } else {
        let set = dir.join(name);
        std::fs::create_dir_all(&set).unwrap();
        set.join(format!("{}.npy", t.name))
    }
}

/// Where the batch writes output `t` of input set `name`.
fn output_path<M: GeneratedModel>(out: &Path, name: &str, t: &TensorInfo) -> PathBuf {
    if M::INFO.inputs.len() == 1 {
        out.join(format!("{name}.{}.npy", t.name))
    } else {
        out.join(name).join(format!("{}.npy", t.name))
    }
}

fn run(bin: &str, args: &[&Path]) -> (i32, String, String) {
    let args: Vec<String> = args.iter().map(|a| a.display().to_string()).collect();
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    run_binary(bin, &refs)
}

/// Runs `count` input sets (the bundled samples, cycled) through one
/// process of `bin`; checks that every output is written, that a few of
/// them are bit for bit what a run of the binary on that input set alone
/// writes, and the summary line on stderr.
pub fn check_batch_cli<M: GeneratedModel>(bin: &str, dir: &Path, count: usize) {
    let tmp = fresh_dir("many", M::INFO.name);
    let (input_dir, output_dir) = (tmp.join("in"), tmp.join("out"));
    std::fs::create_dir_all(&input_dir).unwrap();
    let samples = load_samples::<M>(dir);
    assert!(samples.count > 1, "needs two samples at least");
    let name = |i: usize| format!("set{i:05}");
    for i in 0..count {
        write_input_set::<M>(&input_dir, &name(i), &samples, i % samples.count);
    }

    let (code, out, err) = run(bin, &["--input-dir".as_ref(), &input_dir, "--output-dir".as_ref(), &output_dir]);
    assert_eq!(code, 0, "batch run failed: {err}");
    assert!(out.is_empty(), "stdout: {out}");
    // stderr is not a terminal here: no progress bar, only the summary.
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "stderr: {err}");
    let summary = format!("{}: {count} inputs, 0 failed, ", M::INFO.name);
    assert!(lines[0].starts_with(&summary) && lines[0].ends_with(" inputs/s"), "stderr: {err}");
    for i in 0..count {
        for t in M::INFO.outputs {
            let p = output_path::<M>(&output_dir, &name(i), t);
            assert!(p.is_file(), "{} is missing", p.display());
        }
    }

    let single = tmp.join("single.npy");
    for i in [0, 1, count / 2, count - 1] {
        for t in M::INFO.outputs {
            let mut args: Vec<String> = Vec::new();
            for input in M::INFO.inputs {
                args.push("--input".into());
                args.push(format!("{}={}", input.name, input_path::<M>(&input_dir, &name(i), input).display()));
            }
            args.push("--output".into());
            args.push(format!("{}={}", t.name, single.display()));
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, _, err) = run_binary(bin, &refs);
            assert_eq!(code, 0, "single run failed: {err}");
            let alone = npy::read_npy(&single).unwrap();
            let batched = npy::read_npy(&output_path::<M>(&output_dir, &name(i), t)).unwrap();
            assert_eq!(batched, alone, "input set {i}, output `{}`: batch and single run differ", t.name);
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

/// A batch with bad entries among good ones: each bad one is one line on
/// stderr naming its file, the good ones are written, the exit code is 2;
/// with `--fail-fast` the batch stops at the first bad one. `--input-dir`
/// is refused with `--input` and without `--output-dir`.
pub fn check_batch_failures<M: GeneratedModel>(bin: &str, dir: &Path) {
    let tmp = fresh_dir("bad", M::INFO.name);
    let input_dir = tmp.join("in");
    std::fs::create_dir_all(&input_dir).unwrap();
    let samples = load_samples::<M>(dir);
    let good = ["a0", "a1", "c0", "c1"];
    for (i, name) in good.iter().enumerate() {
        write_input_set::<M>(&input_dir, name, &samples, i % samples.count);
    }
    // `b_shape`: the first input with an extra leading dimension of 2.
    write_input_set::<M>(&input_dir, "b_shape", &samples, 0);
    let t0 = M::INFO.inputs[0];
    let mut shape = vec![2];
    shape.extend_from_slice(t0.shape);
    let twice = [&samples.inputs[0][..t0.bytes], &samples.inputs[0][..t0.bytes]].concat();
    let bad = input_path::<M>(&input_dir, "b_shape", &t0);
    npy::write_npy(&bad, t0.dtype, &shape, &twice).unwrap();
    std::fs::write(input_dir.join("notes.txt"), "not an input").unwrap();

    let output_dir = tmp.join("out");
    let (code, _, err) = run(bin, &["--input-dir".as_ref(), &input_dir, "--output-dir".as_ref(), &output_dir]);
    assert_eq!(code, 2, "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "two error lines and the summary expected: {err}");
    let prefix = format!("{}: error: ", M::INFO.name);
    assert!(lines[0].starts_with(&prefix), "{err}");
    assert!(lines[0].contains(&bad.display().to_string()) && lines[0].contains("expects"), "{err}");
    assert!(lines[1].starts_with(&prefix) && lines[1].contains("notes.txt: not a .npy file"), "{err}");
    assert!(lines[2].starts_with(&format!("{}: 6 inputs, 2 failed, ", M::INFO.name)), "{err}");
    for name in good {
        for t in M::INFO.outputs {
            assert!(output_path::<M>(&output_dir, name, t).is_file(), "{name}: output `{}` is missing", t.name);
        }
    }
    for t in M::INFO.outputs {
        assert!(!output_path::<M>(&output_dir, "b_shape", t).exists(), "the bad input set has an output");
    }

    let output_dir = tmp.join("out-fail-fast");
    let (code, _, err) =
        run(bin, &["--input-dir".as_ref(), &input_dir, "--output-dir".as_ref(), &output_dir, "--fail-fast".as_ref()]);
    assert_eq!(code, 2, "stderr: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "one error line and the summary expected: {err}");
    assert!(lines[0].contains(&bad.display().to_string()), "{err}");
    assert!(
        lines[1].contains("3 inputs, 1 failed, ") && lines[1].ends_with("stopped at the first failure (3 not run)"),
        "{err}"
    );
    for (name, written) in [("a0", true), ("a1", true), ("c0", false), ("c1", false)] {
        let p = output_path::<M>(&output_dir, name, &M::INFO.outputs[0]);
        assert_eq!(p.is_file(), written, "{}", p.display());
    }

    // An output that cannot be written (a directory stands where the file
    // goes) fails its input set by the output's name; the others are written.
    let output_dir = tmp.join("out-unwritable");
    let blocked = output_path::<M>(&output_dir, "a1", &M::INFO.outputs[0]);
    std::fs::create_dir_all(&blocked).unwrap();
    let (code, _, err) = run(bin, &["--input-dir".as_ref(), &input_dir, "--output-dir".as_ref(), &output_dir]);
    assert_eq!(code, 2, "stderr: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 4, "three error lines and the summary expected: {err}");
    assert!(lines[0].contains(&format!("cannot write {}", blocked.display())), "{err}");
    assert!(lines[3].contains("6 inputs, 3 failed, "), "{err}");
    assert!(output_path::<M>(&output_dir, "c1", &M::INFO.outputs[0]).is_file(), "{err}");

    let exit_2 = |args: &[&Path], needle: &str| {
        let (code, _, err) = run(bin, args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: stderr `{err}` lacks `{needle}`");
    };
    let input = format!("{}={}", t0.name, bad.display());
    exit_2(
        &["--input-dir".as_ref(), &input_dir, "--output-dir".as_ref(), &output_dir, "--input".as_ref(), input.as_ref()],
        "cannot be used with",
    );
    exit_2(&["--input-dir".as_ref(), &input_dir], "--output-dir");
    exit_2(&["--input-dir".as_ref(), &input_dir, "--output-dir".as_ref(), &input_dir], "is the input directory");
    let empty = tmp.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    exit_2(&["--input-dir".as_ref(), &empty, "--output-dir".as_ref(), &output_dir], "no input sets");
    let _ = std::fs::remove_dir_all(&tmp);
}

/// Input sets given as directories (`DIR/NAME/INPUT.npy`, the layout of
/// every model, the only one of a model with several inputs): outputs in
/// `OUT/NAME/OUTPUT.npy`, equal to single runs; a stray file in a set's
/// directory fails that set, naming the file.
pub fn check_batch_dirs<M: GeneratedModel>(bin: &str, dir: &Path) {
    let tmp = fresh_dir("dirs", M::INFO.name);
    let (input_dir, output_dir) = (tmp.join("in"), tmp.join("out"));
    let samples = load_samples::<M>(dir);
    let write_set = |name: &str, i: usize| {
        let set = input_dir.join(name);
        std::fs::create_dir_all(&set).unwrap();
        for (t, all) in M::INFO.inputs.iter().zip(&samples.inputs) {
            let bytes = &all[i * t.bytes..(i + 1) * t.bytes];
            npy::write_npy(&set.join(format!("{}.npy", t.name)), t.dtype, t.shape, bytes).unwrap();
        }
        set
    };
    write_set("a", 0);
    write_set("b", 1 % samples.count);
    let stray = write_set("c", 0).join("extra.npy");
    std::fs::write(&stray, "stray").unwrap();

    let (code, _, err) = run(bin, &["--input-dir".as_ref(), &input_dir, "--output-dir".as_ref(), &output_dir]);
    assert_eq!(code, 2, "stderr: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "one error line and the summary expected: {err}");
    let want = format!("{}: error: {}: not an input of the model", M::INFO.name, stray.display());
    assert!(lines[0].starts_with(&want), "{err}");
    assert!(lines[1].starts_with(&format!("{}: 3 inputs, 1 failed, ", M::INFO.name)), "{err}");
    assert!(!output_dir.join("c").exists(), "the failed set has outputs");

    let single = tmp.join("single.npy");
    for name in ["a", "b"] {
        for t in M::INFO.outputs {
            let mut args: Vec<String> = Vec::new();
            for input in M::INFO.inputs {
                args.push("--input".into());
                args.push(format!(
                    "{}={}",
                    input.name,
                    input_dir.join(name).join(format!("{}.npy", input.name)).display()
                ));
            }
            args.push("--output".into());
            args.push(format!("{}={}", t.name, single.display()));
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, _, err) = run_binary(bin, &refs);
            assert_eq!(code, 0, "single run failed: {err}");
            let batched = npy::read_npy(&output_dir.join(name).join(format!("{}.npy", t.name))).unwrap();
            assert_eq!(batched, npy::read_npy(&single).unwrap(), "set {name}, output `{}`", t.name);
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
