//! `rlx-bench`: generated code vs the interpreter on the bundled models, in
//! one process, interleaved, plus each model's GEMM efficiency. Run it with
//! `cargo xtask bench` (release build).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rlx_interp::Interpreter;
use rlx_runtime::model::GeneratedModel;
use rlx_sched::thunk::{FusedMmBiasAct, Sgemm, SgemmT};
use rlx_sched::{Schedule, Thunk};

#[path = "../../../models/mlp/src/generated.rs"]
#[rustfmt::skip]
#[allow(clippy::all, unused, missing_docs)]
mod mlp;
#[path = "../../../models/cnn/src/generated.rs"]
#[rustfmt::skip]
#[allow(clippy::all, unused, missing_docs)]
mod cnn;
#[path = "../../../models/bert_tiny/src/generated.rs"]
#[rustfmt::skip]
#[allow(clippy::all, unused, missing_docs)]
mod bert_tiny;
#[path = "../../../models/llama_tiny/src/generated.rs"]
#[rustfmt::skip]
#[allow(clippy::all, unused, missing_docs)]
mod llama_tiny;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The schedule and its weights' data section, 64-byte aligned like the
/// generated code's, so both sides read weights with the same alignment.
fn load(name: &str) -> (Schedule, rlx_runtime::arena::Arena) {
    let path = root().join("models").join(name).join("model.sched");
    let s = rlx_sched::load(&path).unwrap_or_else(|e| panic!("{e}")).schedule;
    let data = match &s.weights() {
        Some(wf) => std::fs::read(path.parent().unwrap().join(&wf.path)).unwrap()[wf.data_offset..].to_vec(),
        None => Vec::new(),
    };
    let mut w = rlx_runtime::arena::Arena::new(data.len());
    w.as_mut_slice().copy_from_slice(&data);
    (s, w)
}

/// One row of the latency table.
struct Row {
    model: &'static str,
    threads: usize,
    /// Median (generated, interpreter).
    times: (Duration, Duration),
}

fn bench_model<M: GeneratedModel>(rounds: usize) -> (Duration, Duration) {
    let dir = root().join("models").join(M::INFO.name);
    let samples = rlx_tests::models::load_samples::<M>(&dir);
    let (schedule, weights) = load(M::INFO.name);
    let mut model = M::new();
    rlx_tests::models::set_sample(&mut model, &samples, 0);
    let mut interp = Interpreter::new(schedule, weights.as_slice()).unwrap();
    for t in M::INFO.inputs {
        let bytes = model.arena()[t.offset..t.offset + t.bytes].to_vec();
        interp.set_bytes(t.name, &bytes).unwrap();
    }
    for _ in 0..rounds.div_ceil(10).max(3) {
        model.run();
        interp.run();
    }
    interleaved(rounds, &mut model, &mut interp, |_, _, _| {}, M::run, Interpreter::run)
}

/// Median times of `run_g(model)` and `run_i(interp)` over `rounds`
/// rounds, after an untimed `setup(model, interp, round)` each.
/// Interleaved, so drift in machine load hits both sides alike, and in
/// alternating order, so neither side always runs on a cache the other
/// just warmed.
fn interleaved<G, I>(
    rounds: usize,
    model: &mut G,
    interp: &mut I,
    mut setup: impl FnMut(&mut G, &mut I, usize),
    run_g: impl Fn(&mut G),
    run_i: impl Fn(&mut I),
) -> (Duration, Duration) {
    let (mut g, mut i) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        setup(model, interp, round);
        let mut time_generated = || {
            let t = Instant::now();
            run_g(model);
            g.push(t.elapsed());
        };
        let mut time_interp = || {
            let t = Instant::now();
            run_i(interp);
            i.push(t.elapsed());
        };
        if round % 2 == 0 {
            time_generated();
            time_interp();
        } else {
            time_interp();
            time_generated();
        }
    }
    (median(g), median(i))
}

/// Writes a decoder step's `tokens` (one token) and `pos` into an arena.
fn set_step(arena: &mut [u8], token: i64, pos: usize) {
    let info = llama_tiny::Model::INFO;
    for t in info.inputs {
        let value = if t.name == "pos" { pos as i64 } else { token };
        arena[t.offset..t.offset + 8].copy_from_slice(&value.to_le_bytes());
    }
}

/// One decode step of `llama_tiny` (generated vs interpreter, interleaved
/// as in `bench_model`): median step times after a 7-token prompt, the
/// positions cycling through the cache so every step attends to a
/// realistic prefix.
fn bench_decoder(rounds: usize) -> (Duration, Duration) {
    let (schedule, weights) = load("llama_tiny");
    let mut model = llama_tiny::Model::new();
    let mut interp = Interpreter::new(schedule, weights.as_slice()).unwrap();
    let prompt = 7;
    for pos in 0..prompt {
        set_step(model.arena_mut(), 1 + pos as i64, pos);
        model.run();
        interp.set_bytes("tokens", &(1 + pos as i64).to_le_bytes()).unwrap();
        interp.set_bytes("pos", &(pos as i64).to_le_bytes()).unwrap();
        interp.run();
    }
    let max_len = llama_tiny::Model::INFO.states[0].shape[0];
    let setup = |model: &mut llama_tiny::Model, interp: &mut Interpreter<'_>, round: usize| {
        let pos = prompt + round % (max_len - prompt);
        let token = (round % 500) as i64;
        set_step(model.arena_mut(), token, pos);
        interp.set_bytes("tokens", &token.to_le_bytes()).unwrap();
        interp.set_bytes("pos", &(pos as i64).to_le_bytes()).unwrap();
    };
    interleaved(rounds, &mut model, &mut interp, setup, llama_tiny::Model::run, Interpreter::run)
}

/// One `prefill` chunk of `llama_tiny` at position 0 (generated vs
/// interpreter, interleaved): median times of the chunk.
fn bench_prefill(rounds: usize) -> (Duration, Duration) {
    let (schedule, weights) = load("llama_tiny");
    let mut model = llama_tiny::Model::new();
    let mut interp = Interpreter::new(schedule, weights.as_slice()).unwrap();
    let entry = llama_tiny::Model::INFO.entry("prefill").expect("llama_tiny has a prefill entry");
    let tokens: Vec<i64> = (0..model.input_prefill_tokens().len() as i64).map(|t| 1 + t).collect();
    model.input_prefill_tokens().copy_from_slice(&tokens);
    model.input_pos()[0] = 0;
    let bytes: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
    interp.set_bytes("prefill.tokens", &bytes).unwrap();
    interp.set_bytes("pos", &0i64.to_le_bytes()).unwrap();
    let run_g = |m: &mut llama_tiny::Model| m.run_entry(entry);
    interleaved(rounds, &mut model, &mut interp, |_, _, _| {}, run_g, |i: &mut Interpreter<'_>| i.run_entry(entry))
}

/// (m, k, n) of every GEMM-shaped thunk with its node index.
fn gemms(s: &Schedule) -> Vec<(usize, usize, usize, usize)> {
    s.nodes()
        .iter()
        .enumerate()
        .filter_map(|(idx, n)| match &n.thunk {
            Thunk::Sgemm(Sgemm { m, k, n, .. })
            | Thunk::SgemmT(SgemmT { m, k, n, .. })
            | Thunk::FusedMmBiasAct(FusedMmBiasAct { m, k, n, .. }) => Some((idx, *m, *k, *n)),
            _ => None,
        })
        .collect()
}

/// Achieved GFLOP/s of the model's GEMM thunks (timed one by one in the
/// interpreter, which calls the same kernels as the generated code) and of
/// raw `sgemm` on the same shapes.
fn gemm_efficiency(name: &str, rounds: usize) -> Option<(f64, f64)> {
    let (schedule, weights) = load(name);
    let list = gemms(&schedule);
    if list.is_empty() {
        return None;
    }
    let mut interp = Interpreter::new(schedule.clone(), weights.as_slice()).unwrap();
    interp.run();
    let mut flops = 0.0;
    let mut model_time = Duration::ZERO;
    let mut raw_time = Duration::ZERO;
    for &(idx, m, k, n) in &list {
        let mut times = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            interp.run_node(idx);
            times.push(t.elapsed());
        }
        model_time += median(times);
        let a = vec![0.5f32; m * k];
        let b = vec![0.25f32; k * n];
        let mut c = vec![0.0f32; m * n];
        let mut times = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            // SAFETY: the buffers hold m*k, k*n and m*n elements.
            unsafe {
                rlx_runtime::blas::sgemm(
                    false,
                    false,
                    m,
                    n,
                    k,
                    1.0,
                    a.as_ptr(),
                    k,
                    b.as_ptr(),
                    n,
                    0.0,
                    c.as_mut_ptr(),
                    n,
                )
            };
            times.push(t.elapsed());
        }
        raw_time += median(times);
        flops += 2.0 * (m * k * n) as f64;
    }
    Some((flops / model_time.as_secs_f64() / 1e9, flops / raw_time.as_secs_f64() / 1e9))
}

/// Prints one markdown row per model for the thread count of this process
/// (`RLX_NUM_THREADS`; the pool is built once per process, so `cargo xtask
/// bench` runs this binary once per thread count), then the GEMM table.
/// Arguments: `[rounds] [--no-header]`.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(200);
    let header = !args.iter().any(|a| a == "--no-header");
    let threads = rlx_runtime::threads::num_threads();
    rlx_runtime::blas::set_blas_threads(threads);
    let rows = [
        Row { model: "mlp", threads, times: bench_model::<mlp::Model>(rounds) },
        Row { model: "cnn", threads, times: bench_model::<cnn::Model>(rounds) },
        Row { model: "bert_tiny", threads, times: bench_model::<bert_tiny::Model>(rounds) },
    ];
    if header {
        println!("| model | threads | generated | interpreter | generated / interpreter |");
        println!("|---|---|---|---|---|");
    }
    for r in &rows {
        let (g, i) = r.times;
        println!(
            "| {} | {} | {:.1} us | {:.1} us | {:.3} |",
            r.model,
            r.threads,
            g.as_secs_f64() * 1e6,
            i.as_secs_f64() * 1e6,
            g.as_secs_f64() / i.as_secs_f64()
        );
    }
    if args.iter().any(|a| a == "--decode") {
        let (g, i) = bench_decoder(rounds);
        let weights = llama_tiny::Model::INFO.weights_bytes as f64;
        println!();
        println!("| decoder | threads | step (generated) | step (interpreter) | generated / interpreter | tokens/s | weights read | GB/s | copy bandwidth |");
        println!("|---|---|---|---|---|---|---|---|---|");
        println!(
            "| llama_tiny | {threads} | {:.1} us | {:.1} us | {:.3} | {:.0} | {:.2} MB | {:.2} | {:.1} GB/s |",
            g.as_secs_f64() * 1e6,
            i.as_secs_f64() * 1e6,
            g.as_secs_f64() / i.as_secs_f64(),
            1.0 / g.as_secs_f64(),
            weights / 1e6,
            weights / g.as_secs_f64() / 1e9,
            rlx_tests::copy_bandwidth(1)
        );
        // The prompt's entry: a chunk of tokens per pass over the weights.
        let (pg, pi) = bench_prefill(rounds);
        let chunk =
            llama_tiny::Model::INFO.entries.iter().find(|e| e.name == "prefill").map_or(0, |e| e.inputs[0].shape[0]);
        println!();
        println!("| prefill | threads | chunk | chunk (generated) | chunk (interpreter) | generated / interpreter | tokens/s | vs decode steps |");
        println!("|---|---|---|---|---|---|---|---|");
        println!(
            "| llama_tiny | {threads} | {chunk} | {:.1} us | {:.1} us | {:.3} | {:.0} | {:.2}x |",
            pg.as_secs_f64() * 1e6,
            pi.as_secs_f64() * 1e6,
            pg.as_secs_f64() / pi.as_secs_f64(),
            chunk as f64 / pg.as_secs_f64(),
            chunk as f64 * g.as_secs_f64() / pg.as_secs_f64()
        );
    }
    if args.iter().any(|a| a == "--gemm") {
        println!();
        println!("| model | threads | GEMM thunks GFLOP/s | raw sgemm GFLOP/s (same shapes) | efficiency |");
        println!("|---|---|---|---|---|");
        for name in ["mlp", "cnn", "bert_tiny"] {
            if let Some((model, raw)) = gemm_efficiency(name, rounds.min(100)) {
                println!("| {name} | {threads} | {model:.2} | {raw:.2} | {:.0}% |", 100.0 * model / raw);
            }
        }
    }
}
