//! This machine's memory copy bandwidth: the ceiling a memory-bound decode
//! step is compared with (`rlx-bench --decode`, `cargo xtask bench
//! --decode-vs-ort`).

use std::time::Instant;

/// Bytes copied per measurement: far more than any cache.
const BYTES: usize = 256 << 20;

/// Copy bandwidth in GB/s (bytes read + written), best of five copies of
/// 256 MiB, split into `threads` contiguous parts copied at once (each
/// thread its own part; 1: a plain `copy_from_slice`).
pub fn copy_bandwidth(threads: usize) -> f64 {
    let threads = threads.max(1);
    let src = vec![1u8; BYTES];
    let mut dst = vec![0u8; BYTES];
    let part = BYTES.div_ceil(threads);
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        if threads == 1 {
            dst.copy_from_slice(std::hint::black_box(&src));
        } else {
            std::thread::scope(|s| {
                for (d, from) in dst.chunks_mut(part).zip(src.chunks(part)) {
                    s.spawn(move || d.copy_from_slice(std::hint::black_box(from)));
                }
            });
        }
        best = best.min(t.elapsed().as_secs_f64());
        std::hint::black_box(&dst);
    }
    2.0 * BYTES as f64 / best / 1e9
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_bandwidth_is_a_positive_rate() {
        for threads in [1, 2] {
            let gbs = super::copy_bandwidth(threads);
            assert!(gbs.is_finite() && gbs > 0.0, "{threads}: {gbs}");
        }
    }
}
