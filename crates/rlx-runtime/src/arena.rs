//! The arena: one zeroed, 64-byte aligned allocation a model owns and
//! addresses by constant byte offsets.

use std::alloc::{self, Layout};
use std::ptr::NonNull;

/// Alignment of every arena: a cache line, and enough for any SIMD load.
pub const ARENA_ALIGN: usize = 64;

/// A zeroed, 64-byte aligned block of `len` bytes, freed on drop.
///
/// Kernels get raw pointers into it (`as_mut_ptr() + offset`), so several
/// in-place kernels never need overlapping Rust references.
pub struct Arena {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: `Arena` uniquely owns its allocation, like a `Box<[u8]>`.
unsafe impl Send for Arena {}
// SAFETY: shared access only reads through `&self`.
unsafe impl Sync for Arena {}

impl Arena {
    /// Allocates `len` zeroed bytes. `len == 0` allocates nothing.
    ///
    /// # Panics
    ///
    /// When `len` rounded up to 64 overflows `isize`; aborts (as `Vec`
    /// does) when the allocator fails.
    pub fn new(len: usize) -> Arena {
        if len == 0 {
            // A dangling but aligned pointer: never dereferenced for a
            // zero-length arena, and slices of length 0 accept it.
            let ptr = NonNull::new(std::ptr::without_provenance_mut(ARENA_ALIGN)).expect("non-null constant");
            return Arena { ptr, len };
        }
        let layout = Self::layout(len);
        // SAFETY: `layout` has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else { alloc::handle_alloc_error(layout) };
        Arena { ptr, len }
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len, ARENA_ALIGN).expect("arena size overflows isize")
    }

    /// Bytes in the arena.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the arena has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first byte, 64-byte aligned.
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// The first byte, for kernels that write.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The whole arena as bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` initialised (zeroed) bytes owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The whole arena as mutable bytes.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as `as_slice`, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: allocated in `new` with exactly this layout.
            unsafe { alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) };
        }
    }
}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena").field("len", &self.len).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arenas_are_aligned_and_zeroed() {
        for len in [1, 3, 64, 65, 4096, 100_003] {
            let mut a = Arena::new(len);
            assert_eq!(a.as_ptr() as usize % ARENA_ALIGN, 0, "len {len}");
            assert_eq!(a.len(), len);
            assert!(a.as_slice().iter().all(|&b| b == 0));
            a.as_mut_slice()[len - 1] = 7;
            assert_eq!(a.as_slice()[len - 1], 7);
        }
    }

    #[test]
    fn empty_arena_is_fine() {
        let mut a = Arena::new(0);
        assert!(a.is_empty());
        assert!(a.as_slice().is_empty());
        assert!(a.as_mut_slice().is_empty());
        assert_eq!(a.as_ptr() as usize % ARENA_ALIGN, 0);
    }

    #[test]
    fn arena_moves_to_another_thread() {
        let mut a = Arena::new(128);
        a.as_mut_slice()[5] = 9;
        let got = std::thread::spawn(move || a.as_slice()[5]).join().unwrap();
        assert_eq!(got, 9);
    }
}
