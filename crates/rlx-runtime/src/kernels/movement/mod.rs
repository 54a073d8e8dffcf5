//! Data movement: copies, row slices (`Narrow`), concatenation, padding
//! (`Pad`), gathers, KV-cache appends and transposes.
//!
//! Everything here moves bits without arithmetic, so every path is exact
//! and the parallel and serial forms give identical bytes. Transposes take
//! the path `rlx_core::plan::transpose_path` chose at gen time; each path
//! is one entry, generic over the element type ([`Elem`]: `u8`, `u16`,
//! `u32`, `u64` and `[u64; 2]` stand for every 1-, 2-, 4-, 8- and 16-byte
//! dtype). Element pointers need not be aligned: transposes read and write
//! with unaligned accesses, because a 16-byte element may sit in an f32
//! buffer aligned to 4.

mod copy;
mod gather;
pub mod pad;
mod reorder;
mod resize;
mod scalar;
mod transpose;
mod walk;

#[cfg(target_arch = "x86_64")]
mod avx2;

#[cfg(test)]
mod tests;

pub use copy::{concat, copy_bytes, copy_f32, copy_f64, copy_i64, kv_append, kv_write, narrow};
pub use gather::{gather_axis, gather_f32, GatherIndex};
pub use pad::pad;
pub use reorder::{blocked_to_nchw_f32, nchw_to_blocked_f32};
pub use resize::{resize_f32, ResizeShape};
#[cfg(test)]
pub(crate) use transpose::transpose;
pub use transpose::{
    transpose_batched_swap, transpose_broadcast_runs, transpose_copy, transpose_general, transpose_inner_rows,
    transpose_rank2, transpose_splat,
};

use crate::kernels::variants::variants;

/// Work below this many elements (or bytes, for byte copies) stays in one
/// parallel chunk: smaller pieces cost more to hand out than to move.
pub(crate) const PAR_CHUNK: usize = 16 * 1024;

/// A raw pointer that may cross into `par_for` workers. Each worker writes
/// a disjoint part, which the kernels using it establish.
#[derive(Clone, Copy)]
pub(crate) struct SharedPtr<T>(pub(crate) *mut T);

// SAFETY: only used to hand disjoint output ranges (and read-only inputs)
// to the workers of one `par_for`, which joins before the kernel returns.
unsafe impl<T> Send for SharedPtr<T> {}
// SAFETY: a shared `SharedPtr` only yields a copy of the pointer; the
// disjoint-write discipline above makes concurrent use from workers sound.
unsafe impl<T> Sync for SharedPtr<T> {}

impl<T> SharedPtr<T> {
    pub(crate) fn get(self) -> *mut T {
        self.0
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for u16 {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
    impl Sealed for [u64; 2] {}
    impl Sealed for i64 {}
    impl Sealed for i32 {}
    impl Sealed for f32 {}
}

/// An element moved as opaque bits: `u8`, `u16`, `u32`, `u64` or
/// `[u64; 2]` for 1-, 2-, 4-, 8- and 16-byte dtypes.
pub trait Elem: Copy + Send + Sync + 'static + sealed::Sealed {
    /// `dst[i * dst_ld + j] = src[j * src_ld + i]` for `i < rows`,
    /// `j < cols`: the 2-D transpose the swap paths tile with.
    ///
    /// # Safety
    /// `src` must be readable and `dst` writable at every index the formula
    /// touches; the two must not overlap. No alignment is required.
    #[doc(hidden)]
    unsafe fn transpose_plane(
        src: *const Self,
        dst: *mut Self,
        rows: usize,
        cols: usize,
        src_ld: usize,
        dst_ld: usize,
    ) {
        // SAFETY: forwarded contract.
        unsafe { scalar::transpose_plane(src, dst, rows, cols, src_ld, dst_ld) }
    }
}

impl Elem for u8 {}
impl Elem for u16 {}
impl Elem for u64 {}
impl Elem for [u64; 2] {}

impl Elem for u32 {
    unsafe fn transpose_plane(src: *const u32, dst: *mut u32, rows: usize, cols: usize, src_ld: usize, dst_ld: usize) {
        // SAFETY: forwarded contract; the selected variant has the same one.
        unsafe { (plane_u32())(src, dst, rows, cols, src_ld, dst_ld) }
    }
}

/// The signature of a 2-D plane transpose of 4-byte elements.
type PlaneU32 = unsafe fn(*const u32, *mut u32, usize, usize, usize, usize);

variants! {
    /// The 4-byte plane transposes, best first.
    static PLANES_U32: PlaneU32 = [
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2() => avx2::avx2_transpose_plane_u32,
        "scalar" => scalar::transpose_plane::<u32>,
    ];
}

/// The 4-byte plane transpose for this CPU, chosen once.
#[inline]
fn plane_u32() -> PlaneU32 {
    *PLANES_U32.best()
}
