//! A hint that a cache line is about to be read: [`prefetch_l2`] asks for
//! the line holding an address in L2 (x86 `prefetcht1`, aarch64 `prfm
//! pldl2keep`). The kernels that stream weights from memory call it for
//! the lines they read next (`docs/kernels/conv-blocked.md`,
//! `conv-winograd.md`, `gemm.md`). A prefetch reads nothing the program
//! sees, never faults and changes no value, so the address may lie
//! anywhere, past the end of an allocation included (it is computed with
//! wrapping arithmetic and never dereferenced).

/// Hints that the cache line holding `p` will be read soon.
#[inline(always)]
pub(crate) fn prefetch_l2(p: *const f32) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht1` (SSE, in every x86-64 CPU) only hints the
    // memory system: it never faults and changes no state the program
    // can observe.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(p.cast())
    };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: `prfm` only hints the memory system, as above; it reads no
    // register but `p` and writes none.
    unsafe {
        std::arch::asm!("prfm pldl2keep, [{0}]", in(reg) p, options(nostack, readonly, preserves_flags))
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = p;
}
