//! The thread pool: a rayon pool whose size is set once by API or by
//! `RLX_NUM_THREADS`, and a `par_for` that splits a range over it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

static REQUESTED: AtomicUsize = AtomicUsize::new(0);
static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();

/// The most worker threads a model may ask for, by `--threads` or
/// `RLX_NUM_THREADS`. A fixed number, so a thread count is valid on every
/// machine alike; far above any core count this runs on, and low enough
/// that a typo cannot start a hundred thousand threads.
pub const MAX_THREADS: usize = 1024;

/// The environment variable that sets the thread count.
pub const THREADS_ENV: &str = "RLX_NUM_THREADS";

/// Whether this target can start threads. WebAssembly without the
/// `atomics` feature (`wasm32-wasip1`) cannot: std's `thread::spawn`
/// returns `Unsupported` there, so a pool would fail to start. Such a
/// build runs every kernel on the calling thread and accepts one thread.
pub const THREADS_AVAILABLE: bool = !cfg!(all(target_family = "wasm", not(target_feature = "atomics")));

/// A thread count that is not one: not a number, 0, or above
/// [`MAX_THREADS`]. `what` names where it came from (`--threads`,
/// `RLX_NUM_THREADS`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ThreadsError {
    #[error("{what} `{text}` is not a number: give 1 to {MAX_THREADS} threads")]
    NotANumber { what: &'static str, text: String },
    #[error("{what} `{text}` is out of range: give 1 to {MAX_THREADS} threads")]
    OutOfRange { what: &'static str, text: String },
    #[error("{what} `{text}`: this build cannot start threads (a WebAssembly target without threads); give 1")]
    SingleThreaded { what: &'static str, text: String },
}

/// Checks a thread count: 1 to [`MAX_THREADS`], and 1 alone on a target
/// without threads ([`THREADS_AVAILABLE`]).
pub fn check_threads(what: &'static str, n: usize) -> Result<usize, ThreadsError> {
    if !(1..=MAX_THREADS).contains(&n) {
        Err(ThreadsError::OutOfRange { what, text: n.to_string() })
    } else if n > 1 && !THREADS_AVAILABLE {
        Err(ThreadsError::SingleThreaded { what, text: n.to_string() })
    } else {
        Ok(n)
    }
}

/// Parses a thread count (surrounding spaces allowed): 1 to [`MAX_THREADS`].
pub fn parse_threads(what: &'static str, text: &str) -> Result<usize, ThreadsError> {
    let t = text.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ThreadsError::NotANumber { what, text: text.to_string() });
    }
    // All digits: a parse failure is an overflow.
    let n = t.parse::<usize>().map_err(|_| ThreadsError::OutOfRange { what, text: t.to_string() })?;
    check_threads(what, n)
}

/// The thread count `RLX_NUM_THREADS` asks for: `None` when it is unset
/// or empty, an error when it is not a valid count. Front ends call this
/// first so a bad value is an error; the pool itself, which cannot fail,
/// warns once and uses every core.
pub fn threads_from_env() -> Result<Option<usize>, ThreadsError> {
    match std::env::var_os(THREADS_ENV) {
        None => Ok(None),
        Some(v) => {
            let text = v.to_string_lossy();
            if text.trim().is_empty() {
                return Ok(None);
            }
            parse_threads(THREADS_ENV, &text).map(Some)
        }
    }
}

/// Applies a front end's `--threads` value (`None`: not given) or else
/// `RLX_NUM_THREADS`; with neither, the pool keeps its default (every
/// core). A bad `RLX_NUM_THREADS` is an error even when `--threads`
/// overrides it: the environment should not hold a value that is silently
/// ignored.
pub fn configure_threads(flag: Option<&str>) -> Result<(), ThreadsError> {
    let from_env = threads_from_env()?;
    let threads = match flag {
        Some(t) => Some(parse_threads("--threads", t)?),
        None => from_env,
    };
    if let Some(n) = threads {
        set_num_threads(n)?;
    }
    Ok(())
}

/// Sets the number of worker threads (1 to [`MAX_THREADS`]; anything else
/// is an error, never clamped). Takes effect only before the first parallel
/// kernel runs (the pool is built once); returns whether it did. The BLAS
/// thread count follows at once, whatever the pool's state.
pub fn set_num_threads(n: usize) -> Result<bool, ThreadsError> {
    let n = check_threads("thread count", n)?;
    REQUESTED.store(n, Ordering::Relaxed);
    crate::blas::set_blas_threads(n);
    Ok(POOL.get().is_none())
}

fn requested() -> usize {
    match REQUESTED.load(Ordering::Relaxed) {
        0 => default_threads(),
        n => n,
    }
}

/// The environment's thread count (or every core), read once: reading the
/// environment allocates, and kernels ask on every run.
fn default_threads() -> usize {
    static DEFAULT: OnceLock<usize> = OnceLock::new();
    *DEFAULT.get_or_init(|| match threads_from_env() {
        Ok(Some(n)) => n,
        Ok(None) => all_cores(),
        Err(e) => {
            eprintln!("rlx: warning: {e}; using all {} cores", all_cores());
            all_cores()
        }
    })
}

fn all_cores() -> usize {
    if !THREADS_AVAILABLE {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Stack of each pool worker: the main thread's usual 8 MiB, not rayon's
/// 2 MiB. Kernels keep per-task buffers on the stack (a GEMM pass's 64 KiB
/// slice), and an unoptimised build spills every SIMD temporary: the
/// depthwise CNN's interpreter run in a debug build needed more than 2 MiB.
const WORKER_STACK_BYTES: usize = 8 << 20;

fn pool() -> &'static rayon::ThreadPool {
    POOL.get_or_init(|| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(requested())
            .thread_name(|i| format!("rlx-worker-{i}"))
            .stack_size(WORKER_STACK_BYTES)
            .build()
            .expect("failed to start the rlx thread pool");
        // Each worker takes one job now: the first steal of a thread
        // registers it with crossbeam's epoch collector (allocations),
        // which would otherwise happen inside whichever later run first
        // gets that worker to steal (a run on a loaded machine whose
        // warm-up ran on one worker only).
        pool.broadcast(|_| ());
        pool
    })
}

/// Runs `f` inside the rlx pool, so rayon-based code it calls (the
/// pure-Rust BLAS backend) uses these workers rather than a second pool.
#[cfg_attr(feature = "openblas", allow(dead_code))]
pub(crate) fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if !THREADS_AVAILABLE {
        return f();
    }
    pool().install(f)
}

/// Runs `f` on a worker of the rlx pool while the caller waits, when the
/// pool has more than one thread (else on the calling thread).
///
/// A model's `run()` goes through this once, so every parallel kernel it
/// calls forks from inside the pool: a `par_for` then splits with
/// `rayon::join` on the current worker instead of injecting a job from
/// outside and sleeping until a worker wakes, which on cheap thunks cost
/// more than the second core saved. Meanwhile the other workers spin
/// ([`spin`]): they take each fork at once instead of sleeping between
/// parallel thunks.
///
/// # Safety
///
/// `f` runs on another thread: it must be sound to call there, which holds
/// when it captures only raw pointers to memory the caller keeps alive and
/// unaliased until this returns (the arena, weights and scratch), and
/// `Sync` data.
pub unsafe fn run_in_pool(f: &mut (dyn FnMut() + '_)) {
    if !THREADS_AVAILABLE {
        f();
        return;
    }
    // `pool()`, not `num_threads()`: before the pool exists the latter
    // reads the environment, which allocates.
    let pool = pool();
    if pool.current_num_threads() <= 1 {
        f();
        return;
    }
    /// The closure, sent to the worker that runs it.
    struct Job<'a, 'f>(&'a mut (dyn FnMut() + 'f));
    // SAFETY: the caller's contract: `f` may run on another thread; the
    // caller blocks in `install` until it returns, so the borrow outlives
    // the call.
    unsafe impl Send for Job<'_, '_> {}
    impl Job<'_, '_> {
        /// Calls the closure; a method so the `install` closure captures
        /// the `Send` wrapper, not its field.
        fn call(self) {
            (self.0)()
        }
    }
    let job = Job(f);
    let spinners = pool.current_num_threads() - 1;
    let done = &AtomicBool::new(false);
    pool.install(move || {
        with_spinners(spinners, done, move || {
            // Set even if the model panics, so the spinners stop.
            let _stop = Stop(done);
            job.call();
        })
    });
}

/// Runs `main` on this worker while `spinners` other workers poll the
/// pool for work until `done` (see [`spin`]). Each spinner is the second
/// half of a `rayon::join` (on the stack: no allocation), pushed before
/// `main` runs, so idle workers steal the spinners first.
fn with_spinners(spinners: usize, done: &AtomicBool, main: impl FnOnce() + Send) {
    if spinners == 0 {
        main();
    } else {
        rayon::join(|| with_spinners(spinners - 1, done, main), || spin(done));
    }
}

/// Keeps a worker awake for one run: it runs whatever work the run's
/// kernels fork (stealing it as soon as it exists) instead of going to
/// sleep between two parallel thunks and paying a wake-up (tens of
/// microseconds on a VM) at the next one. onnxruntime's pool spins the
/// same way during a run.
fn spin(done: &AtomicBool) {
    while !done.load(Ordering::Acquire) {
        if rayon::yield_now() != Some(rayon::Yield::Executed) {
            // Back off a little between steal attempts: each one touches
            // the running worker's deque.
            for _ in 0..32 {
                std::hint::spin_loop();
            }
        }
    }
}

/// Sets its flag when dropped.
struct Stop<'a>(&'a AtomicBool);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Threads kernels may use.
pub fn num_threads() -> usize {
    if !THREADS_AVAILABLE {
        return 1;
    }
    match POOL.get() {
        Some(p) => p.current_num_threads(),
        None => requested(),
    }
}

/// Calls `f(start, len)` over disjoint chunks covering `0..n`, in parallel
/// when more than one thread is configured. A range of at most
/// `min_chunk` items stays on one thread; longer ones are cut into chunks
/// of about `min_chunk` or more, as many as a multiple of the threads.
///
/// The chunks are dealt out in contiguous shares, one per worker, in
/// worker order (the calling worker, which runs the model, has the
/// first). A worker claims its own share's chunks from the front; once
/// it is empty it takes chunks from the back of the others' shares. So:
///
/// - uneven chunks still balance at the end of the range (fixed halves did
///   not: a convolution's nine tasks of 192, 192, 8, 192, 192, 8, 96, 96
///   and 4 units ran as 584 + 396 where claiming gives 492 + 488);
/// - on an even load each worker runs the same contiguous part of every
///   kernel's range, so when one kernel reads what the previous one wrote
///   (a depthwise convolution's channel blocks after the pointwise one
///   that wrote them) the data is mostly in the reader's own cache. A
///   single shared counter dealt chunks to whichever worker asked first,
///   and half of each input crossed between cores.
///
/// Chunk edges depend only on `n`, `min_chunk` and the thread count, never
/// on timing; kernels give the same bits for any chunking anyway.
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
    // Sixteen chunks per thread: claims are one atomic operation each, and a
    // kernel that made a few tasks per thread gets one task per chunk. A
    // multiple of the thread count (chunks a little under `min_chunk` if
    // need be), so the shares are even: 49,152 floats at 16,384 per chunk
    // were three chunks, one share of one and one of two.
    let chunks = (threads * 16).min(n.div_ceil(min_chunk)).next_multiple_of(threads).min(n);
    let chunk = n.div_ceil(chunks);
    let shares = Shares::new(n.div_ceil(chunk), threads.min(MAX_SHARES));
    let run = |share: usize| {
        let own = share % shares.count;
        let claim = |c: usize| f(c * chunk, chunk.min(n - c * chunk));
        while let Some(c) = shares.take_front(own) {
            claim(c);
        }
        for other in (1..shares.count).map(|d| (own + d) % shares.count) {
            while let Some(c) = shares.take_back(other) {
                claim(c);
            }
        }
    };
    // `join`, not `scope` + `spawn`: its jobs live on the stack, so a
    // parallel kernel allocates nothing per call.
    pool().install(|| fan_out(0, threads, &run));
}

/// The most shares [`par_for`] deals (more workers share them).
const MAX_SHARES: usize = 64;

/// `count` contiguous shares of `chunks` chunk indices, each an atomic
/// `[front, back)` pair packed in one word so the owner (front) and
/// thieves (back) never take the same chunk. On the stack: no allocation.
struct Shares {
    count: usize,
    ranges: [AtomicU64; MAX_SHARES],
}

impl Shares {
    fn new(chunks: usize, count: usize) -> Shares {
        let ranges = std::array::from_fn(|i| {
            let (front, back) = (chunks * i / count, chunks * (i + 1) / count);
            AtomicU64::new(Self::pack(front, back))
        });
        Shares { count, ranges }
    }

    fn pack(front: usize, back: usize) -> u64 {
        // Chunk counts are at most `threads * 16`, far below 2^32.
        ((back as u64) << 32) | front as u64
    }

    /// Takes the first chunk left in share `i`.
    fn take_front(&self, i: usize) -> Option<usize> {
        self.take(i, |front, back| (front, Self::pack(front + 1, back)))
    }

    /// Takes the last chunk left in share `i`.
    fn take_back(&self, i: usize) -> Option<usize> {
        self.take(i, |front, back| (back - 1, Self::pack(front, back - 1)))
    }

    /// `pick(front, back)` gives the chunk taken and the share's new
    /// state, for a share with chunks left.
    fn take(&self, i: usize, pick: impl Fn(usize, usize) -> (usize, u64)) -> Option<usize> {
        let range = &self.ranges[i];
        let mut now = range.load(Ordering::Relaxed);
        loop {
            let (front, back) = ((now & 0xffff_ffff) as usize, (now >> 32) as usize);
            if front >= back {
                return None;
            }
            let (chunk, next) = pick(front, back);
            match range.compare_exchange_weak(now, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Some(chunk),
                Err(seen) => now = seen,
            }
        }
    }
}

/// Runs `work(i)` for `i` in `first..first + workers`, on up to `workers`
/// pool threads at once: `work(first)` on the calling one, the rest as the
/// second halves of `join`s, each offered to an idle worker; one that is
/// never taken runs after the first half, finding nothing left.
fn fan_out(first: usize, workers: usize, work: &(dyn Fn(usize) + Sync)) {
    if workers <= 1 {
        work(first);
    } else {
        let half = workers / 2;
        rayon::join(|| fan_out(first, workers - half, work), || fan_out(first + workers - half, half, work));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_counts_are_one_to_the_maximum() {
        assert_eq!(parse_threads("--threads", "4"), Ok(4));
        assert_eq!(parse_threads("--threads", " 1024 "), Ok(MAX_THREADS));
        for bad in ["0", "1025", "100000", "18446744073709551615", "99999999999999999999999"] {
            let e = parse_threads("--threads", bad).unwrap_err();
            assert_eq!(e, ThreadsError::OutOfRange { what: "--threads", text: bad.to_string() });
        }
        for bad in ["", "abc", "-1", "+2", "1.5", "4 threads"] {
            let e = parse_threads("RLX_NUM_THREADS", bad).unwrap_err();
            assert!(matches!(e, ThreadsError::NotANumber { .. }), "{bad}: {e}");
        }
        assert_eq!(
            parse_threads("RLX_NUM_THREADS", "abc").unwrap_err().to_string(),
            "RLX_NUM_THREADS `abc` is not a number: give 1 to 1024 threads"
        );
        assert_eq!(
            parse_threads("--threads", "0").unwrap_err().to_string(),
            "--threads `0` is out of range: give 1 to 1024 threads"
        );
        // Never clamped.
        assert!(set_num_threads(0).is_err());
        assert!(set_num_threads(MAX_THREADS + 1).is_err());
    }

    #[test]
    fn shares_hand_out_every_chunk_once_from_both_ends() {
        for (chunks, count) in [(1, 2), (16, 2), (7, 3), (3, 4), (0, 2), (1000, 64)] {
            let shares = Shares::new(chunks, count);
            let mut seen = vec![0; chunks];
            // Owners and thieves interleaved: front of share 0, back of the
            // last, and so on until nothing is left.
            loop {
                let mut took = false;
                for i in 0..count {
                    for c in [shares.take_front(i), shares.take_back(count - 1 - i)].into_iter().flatten() {
                        seen[c] += 1;
                        took = true;
                    }
                }
                if !took {
                    break;
                }
            }
            assert!(seen.iter().all(|&k| k == 1), "chunks {chunks} shares {count}: {seen:?}");
        }
        // Contiguous shares in order: share 0 starts at chunk 0.
        let shares = Shares::new(16, 2);
        assert_eq!((shares.take_front(0), shares.take_front(1), shares.take_back(0)), (Some(0), Some(8), Some(7)));
    }

    #[test]
    fn par_for_covers_the_range_once() {
        for (n, min_chunk) in [(1, 1), (9, 1), (100, 7), (1000, 1), (5, 10), (4097, 3), (100_000, 1)] {
            let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
            par_for(n, min_chunk, &|start, len| {
                for h in &hits[start..start + len] {
                    h.fetch_add(1, Ordering::Relaxed);
                }
            });
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1), "n {n} min_chunk {min_chunk}");
        }
    }
}
