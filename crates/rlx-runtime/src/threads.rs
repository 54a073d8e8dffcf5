//! The thread pool: a rayon pool whose size is set once by API or by
//! `RLX_NUM_THREADS`, and a `par_for` that splits a range over it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

static REQUESTED: AtomicUsize = AtomicUsize::new(0);
static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();

/// Sets the number of worker threads. Takes effect only before the first
/// parallel kernel runs (the pool is built once); returns whether it did.
/// The BLAS thread count follows at once, whatever the pool's state.
pub fn set_num_threads(n: usize) -> bool {
    REQUESTED.store(n.max(1), Ordering::Relaxed);
    crate::blas::set_blas_threads(n.max(1));
    POOL.get().is_none()
}

fn requested() -> usize {
    match REQUESTED.load(Ordering::Relaxed) {
        0 => std::env::var("RLX_NUM_THREADS")
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        n => n,
    }
}

fn pool() -> &'static rayon::ThreadPool {
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(requested())
            .thread_name(|i| format!("rlx-worker-{i}"))
            .build()
            .expect("failed to start the rlx thread pool")
    })
}

/// Runs `f` inside the rlx pool, so rayon-based code it calls (the
/// pure-Rust BLAS backend) uses these workers rather than a second pool.
#[cfg_attr(feature = "openblas", allow(dead_code))]
pub(crate) fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    pool().install(f)
}

/// Threads kernels may use.
pub fn num_threads() -> usize {
    match POOL.get() {
        Some(p) => p.current_num_threads(),
        None => requested(),
    }
}

/// Calls `f(start, len)` over disjoint chunks covering `0..n`, in parallel
/// when more than one thread is configured. Chunks hold at least
/// `min_chunk` items, so tiny ranges stay on one thread.
pub fn par_for(n: usize, min_chunk: usize, f: &(dyn Fn(usize, usize) + Sync)) {
    if n == 0 {
        return;
    }
    let threads = num_threads();
    let min_chunk = min_chunk.max(1);
    if threads <= 1 || n <= min_chunk {
        f(0, n);
        return;
    }
    // A few chunks per thread smooth out uneven rows without many forks.
    let chunks = (threads * 4).min(n.div_ceil(min_chunk)).max(1);
    let chunk = n.div_ceil(chunks);
    // Recursive `join` rather than `scope` + `spawn`: join keeps its jobs on
    // the stack, so a parallel kernel allocates nothing per call.
    pool().install(|| split(0, n, chunk, f));
}

fn split(start: usize, len: usize, chunk: usize, f: &(dyn Fn(usize, usize) + Sync)) {
    if len <= chunk {
        f(start, len);
        return;
    }
    // Split on a chunk boundary so chunk edges do not depend on the depth.
    let half = len.div_ceil(2).div_ceil(chunk) * chunk;
    let half = half.min(len);
    rayon::join(|| split(start, half, chunk, f), || split(start + half, len - half, chunk, f));
}
