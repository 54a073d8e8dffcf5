//! Sampling and text streaming allocate nothing per token. Its own test
//! binary, because it installs a global allocator; allocations are counted
//! per thread, so the harness's own threads do not disturb the count.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use rlx_decode::{Sampler, SamplerConfig, TextStream, Tokenizer};

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: a thread being torn down may still allocate.
    let _ = ALLOCS.try_with(|n| n.set(n.get() + 1));
}

fn allocs() -> usize {
    ALLOCS.with(Cell::get)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn sampling_and_streaming_do_not_allocate_per_token() {
    // The counter works: a Vec allocates once.
    let before = allocs();
    drop(std::hint::black_box(vec![0u8; 64]));
    assert_eq!(allocs() - before, 1);

    let vocab = 512;
    let logits: Vec<Vec<f32>> =
        (0..8).map(|r| (0..vocab).map(|i| ((i * 31 + r * 17) % 97) as f32 * 0.05).collect()).collect();
    let configs = [
        SamplerConfig::greedy(),
        SamplerConfig::with_temperature(0.8, 1),
        SamplerConfig::with_temperature(0.8, 2).top_k(40),
        SamplerConfig::with_temperature(0.8, 3).top_p(0.9),
        SamplerConfig::with_temperature(1.2, 4).top_k(50).top_p(0.95),
    ];
    let tok = Tokenizer::from_bytes(common::TOKENIZER_JSON).unwrap();
    let ids = tok.encode("naïve café 日本語 🦀 and some plain words to stream").unwrap();
    for config in configs {
        let mut s = Sampler::new(config.clone(), vocab).unwrap();
        let mut stream = TextStream::for_tokenizer(&tok);
        let before = allocs();
        let mut sink = 0usize;
        for row in logits.iter().cycle().take(64) {
            let id = s.sample(row).unwrap();
            sink += stream.push(&tok, id).unwrap().len();
        }
        for &id in &ids {
            sink += stream.push(&tok, id).unwrap().len();
        }
        let after = allocs();
        assert_eq!(after - before, 0, "{config:?} allocated ({sink} bytes of text)");
    }
}
