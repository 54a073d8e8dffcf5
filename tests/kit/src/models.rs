//! Checks shared by the bundled models' own tests.

use std::path::Path;

use rlx_runtime::model::GeneratedModel;
use rlx_runtime::npy;

/// The samples of a bundled model: for each input, the `.npy` stacked as
/// `[N, ...shape]` in `samples/NAME.npy`.
pub struct Samples {
    pub count: usize,
    /// Per input (in `INFO.inputs` order): all samples' bytes back to back.
    pub inputs: Vec<Vec<u8>>,
}

/// Loads `dir/samples/NAME.npy` for every input of `M`, checking dtype and
/// per-sample shape.
pub fn load_samples<M: GeneratedModel>(dir: &Path) -> Samples {
    let mut count = None;
    let mut inputs = Vec::new();
    for t in M::INFO.inputs {
        let arr = npy::read_npy(&dir.join("samples").join(format!("{}.npy", t.name))).unwrap();
        assert_eq!(arr.dtype, t.dtype, "samples/{}.npy dtype", t.name);
        assert_eq!(&arr.shape[1..], t.shape, "samples/{}.npy shape", t.name);
        let n = arr.shape[0];
        assert!(count.is_none_or(|c| c == n), "samples disagree on their count");
        count = Some(n);
        inputs.push(arr.bytes);
    }
    Samples { count: count.unwrap_or(0), inputs }
}

/// Writes sample `i` into the model's inputs.
pub fn set_sample<M: GeneratedModel>(model: &mut M, samples: &Samples, i: usize) {
    for (t, all) in M::INFO.inputs.iter().zip(&samples.inputs) {
        let src = &all[i * t.bytes..(i + 1) * t.bytes];
        model.arena_mut()[t.offset..t.offset + t.bytes].copy_from_slice(src);
    }
}

/// The f32 values of output `name` of the current arena.
pub fn output_f32<M: GeneratedModel>(model: &M, name: &str) -> Vec<f32> {
    let t = M::INFO.outputs.iter().find(|t| t.name == name).expect("output exists");
    model.arena()[t.offset..t.offset + t.bytes]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Runs every sample and compares every f32 output with
/// `dir/expected/NAME.npy` (`[N, ...shape]`) within `atol + rtol * |expected|`.
/// Returns the largest absolute error seen.
pub fn check_expected<M: GeneratedModel>(dir: &Path, atol: f32, rtol: f32) -> f32 {
    let samples = load_samples::<M>(dir);
    assert!(samples.count > 0, "no samples");
    let mut model = M::new();
    let mut worst = 0.0f32;
    for t in M::INFO.outputs {
        let exp = npy::read_npy(&dir.join("expected").join(format!("{}.npy", t.name))).unwrap();
        assert_eq!(exp.shape[0], samples.count);
        let exp: Vec<f32> = exp.bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        let per = t.bytes / 4;
        for i in 0..samples.count {
            set_sample(&mut model, &samples, i);
            model.run();
            let got = output_f32(&model, t.name);
            for (j, (g, e)) in got.iter().zip(&exp[i * per..(i + 1) * per]).enumerate() {
                let err = (g - e).abs();
                worst = worst.max(err);
                assert!(
                    err <= atol + rtol * e.abs(),
                    "sample {i}, output `{}`[{j}]: got {g}, expected {e} (|err| {err} > {atol} + {rtol}*|e|)",
                    t.name
                );
            }
        }
    }
    worst
}

/// Accuracy of the argmax of output `name` against `samples/labels.npy`.
pub fn accuracy<M: GeneratedModel>(dir: &Path, name: &str) -> f64 {
    let samples = load_samples::<M>(dir);
    let labels = npy::read_npy(&dir.join("samples").join("labels.npy")).unwrap();
    let labels: Vec<i64> = labels.bytes.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect();
    let mut model = M::new();
    let mut correct = 0;
    for (i, label) in labels.iter().enumerate().take(samples.count) {
        set_sample(&mut model, &samples, i);
        model.run();
        let out = output_f32(&model, name);
        let pred = out.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(j, _)| j as i64);
        correct += usize::from(pred == Some(*label));
    }
    correct as f64 / samples.count as f64
}

/// Asserts that a run after warm-up makes no heap allocation. The calling
/// test binary must install [`crate::CountingAlloc`] as its global
/// allocator.
pub fn assert_run_allocates_nothing<M: GeneratedModel>() {
    let mut model = M::new();
    model.run(); // warm-up: thread pool, thread-locals
    let before = crate::allocations();
    model.run();
    model.run();
    let made = crate::allocations() - before;
    assert_eq!(made, 0, "{}: run() made {made} heap allocations", M::INFO.name);
}

/// Runs the model binary and returns (exit code, stdout, stderr).
pub fn run_binary(bin: &str, args: &[&str]) -> (i32, String, String) {
    run_binary_env(bin, args, &[])
}

/// [`run_binary`] with environment variables set.
pub fn run_binary_env(bin: &str, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = std::process::Command::new(bin);
    cmd.args(args).env_remove("RLX_NUM_THREADS");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("model binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The model CLI's contract: a good run succeeds, and every bad input is
/// one line on stderr with exit code 2, never a panic.
pub fn check_cli<M: GeneratedModel>(bin: &str, dir: &Path) {
    let tmp = std::env::temp_dir().join(format!("rlx-cli-{}-{}", M::INFO.name, std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let samples = load_samples::<M>(dir);
    let mut args: Vec<String> = Vec::new();
    for (t, all) in M::INFO.inputs.iter().zip(&samples.inputs) {
        let p = tmp.join(format!("{}.npy", t.name));
        npy::write_npy(&p, t.dtype, t.shape, &all[..t.bytes]).unwrap();
        args.push("--input".into());
        args.push(format!("{}={}", t.name, p.display()));
    }
    let out_path = tmp.join("out.npy");
    let first_out = M::INFO.outputs[0];
    let mut good = args.clone();
    good.push("--output".into());
    good.push(format!("{}={}", first_out.name, out_path.display()));
    let call = |v: &[String]| {
        let refs: Vec<&str> = v.iter().map(String::as_str).collect();
        run_binary(bin, &refs)
    };

    let (code, _, err) = call(&good);
    assert_eq!(code, 0, "good run failed: {err}");
    let written = npy::read_npy(&out_path).unwrap();
    assert_eq!(written.shape, first_out.shape);

    let (code, out, _) = call(&["--info".to_string()]);
    assert_eq!(code, 0);
    assert!(out.contains(M::INFO.name) && out.contains(first_out.name), "{out}");

    // `RLX_ISA` caps the kernels: the run still succeeds on the portable
    // code, and `--info` says who chose the level.
    let refs: Vec<&str> = good.iter().map(String::as_str).collect();
    let (code, _, err) = run_binary_env(bin, &refs, &[("RLX_ISA", "scalar")]);
    assert_eq!(code, 0, "scalar run failed: {err}");
    assert_eq!(npy::read_npy(&out_path).unwrap().shape, first_out.shape);
    let (code, out, _) = run_binary_env(bin, &["--info"], &[("RLX_ISA", "scalar")]);
    assert_eq!(code, 0);
    assert!(out.contains("scalar (capped at scalar by RLX_ISA)"), "{out}");
    let (code, _, err) = run_binary_env(bin, &["--info"], &[("RLX_ISA", "sse9")]);
    assert_eq!(code, 0);
    assert!(err.contains("RLX_ISA=`sse9` is not avx2, scalar or native; ignored"), "{err}");

    let one_line_exit_2 = |v: Vec<String>, needle: &str| {
        let (code, _, err) = call(&v);
        assert_eq!(code, 2, "expected exit 2 for {v:?}, stderr: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "expected one line, got: {err}");
        assert!(err.contains(needle), "stderr `{err}` lacks `{needle}`");
        assert!(!err.contains("panicked"), "{err}");
    };
    // Wrong shape: one extra leading dim.
    let t0 = M::INFO.inputs[0];
    let bad = tmp.join("bad_shape.npy");
    let mut shape = vec![2];
    shape.extend_from_slice(t0.shape);
    npy::write_npy(
        &bad,
        t0.dtype,
        &shape,
        &[samples.inputs[0][..t0.bytes].to_vec(), samples.inputs[0][..t0.bytes].to_vec()].concat(),
    )
    .unwrap();
    let mut v = args.clone();
    v[1] = format!("{}={}", t0.name, bad.display());
    one_line_exit_2(v, "expects");
    // Missing input.
    one_line_exit_2(args[2..].to_vec(), "missing input");
    // Unreadable file.
    let mut v = args.clone();
    v[1] = format!("{}={}", t0.name, tmp.join("does-not-exist.npy").display());
    one_line_exit_2(v, "does-not-exist.npy");
    // Unknown input name.
    let mut v = args.clone();
    v.push("--input".into());
    v.push(format!("nope={}", bad.display()));
    one_line_exit_2(v, "no input named `nope`");
    // The same input twice.
    let mut v = args.clone();
    v.extend_from_slice(&args[..2]);
    one_line_exit_2(v, "is given twice");
    // A `.npy` file whose header does not parse: one line, not the
    // parser's excerpt.
    let garbage = tmp.join("garbage.npy");
    let mut bytes = std::fs::read(args[1].split_once('=').map(|(_, p)| p).unwrap_or_default()).unwrap();
    bytes[10..14].copy_from_slice(b"{'d?");
    std::fs::write(&garbage, bytes).unwrap();
    let mut v = args.clone();
    v[1] = format!("{}={}", t0.name, garbage.display());
    one_line_exit_2(v, "garbage.npy: not a valid .npy file");
    // Thread counts: 1 to 1024, from --threads or RLX_NUM_THREADS.
    for bad in ["0", "100000", "18446744073709551615", "abc"] {
        let mut v = good.clone();
        v.extend(["--threads".to_string(), bad.to_string()]);
        one_line_exit_2(v, &format!("--threads `{bad}` is"));
    }
    for bad in ["0", "abc", "4096"] {
        let refs: Vec<&str> = good.iter().map(String::as_str).collect();
        let (code, _, err) = run_binary_env(bin, &refs, &[("RLX_NUM_THREADS", bad)]);
        assert_eq!(code, 2, "RLX_NUM_THREADS={bad}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(&format!("RLX_NUM_THREADS `{bad}` is")), "{err}");
    }
    let refs: Vec<&str> = good.iter().map(String::as_str).collect();
    let (code, _, err) = run_binary_env(bin, &refs, &[("RLX_NUM_THREADS", "2")]);
    assert_eq!(code, 0, "{err}");
    let _ = std::fs::remove_dir_all(&tmp);
}
