//! The arena: one zeroed, 64-byte aligned allocation a model owns and
//! addresses by constant byte offsets.

use std::alloc::{self, Layout};
use std::cell::RefCell;
use std::ptr::NonNull;

/// Alignment of every arena: a cache line, and enough for any SIMD load.
pub const ARENA_ALIGN: usize = 64;

/// Why an arena could not be allocated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArenaError {
    /// The allocator refused (not enough memory, or a limit like `ulimit -v`).
    #[error("cannot allocate {bytes} bytes ({}) of memory for the {what}", human(*bytes))]
    OutOfMemory { what: &'static str, bytes: usize },
    /// Larger than any allocation can be (`isize::MAX` bytes once aligned).
    #[error("cannot allocate {bytes} bytes ({}) of memory for the {what}: larger than any allocation can be", human(*bytes))]
    TooLarge { what: &'static str, bytes: usize },
}

/// `64.0 GiB`, `1.5 MiB`, `12 bytes`.
fn human(bytes: usize) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

thread_local! {
    /// Arenas allocated by [`reserve`], waiting for the `Arena::new` call
    /// of their length.
    static RESERVED: RefCell<Vec<Arena>> = const { RefCell::new(Vec::new()) };
}

/// Allocates, fallibly, arenas of these lengths (`(what, bytes)`, `what`
/// naming it in the error) and keeps them for this thread's next
/// [`Arena::new`] calls of the same lengths, which take them instead of
/// allocating.
///
/// Generated models allocate through `Arena::new`, which cannot report a
/// failure (the allocator's failure aborts the process); the model CLI
/// reserves their arena and scratch first, so too large an arena is an
/// error naming the bytes asked for instead.
pub fn reserve(lens: &[(&'static str, usize)]) -> Result<(), ArenaError> {
    let mut got = Vec::with_capacity(lens.len());
    for &(what, len) in lens {
        if len > 0 {
            got.push(Arena::try_new_for(what, len)?);
        }
    }
    RESERVED.with(|r| r.borrow_mut().extend(got));
    Ok(())
}

/// A reserved arena of exactly `len` bytes, if [`reserve`] made one.
fn take_reserved(len: usize) -> Option<Arena> {
    RESERVED
        .try_with(|r| {
            let mut r = r.borrow_mut();
            let i = r.iter().position(|a| a.len == len)?;
            Some(r.swap_remove(i))
        })
        .ok()
        .flatten()
}

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
    /// Allocates `len` zeroed bytes. `len == 0` allocates nothing. An
    /// arena of this length made by [`reserve`] on this thread is taken
    /// instead.
    ///
    /// # Panics
    ///
    /// When `len` rounded up to 64 overflows `isize`; aborts (as `Vec`
    /// does) when the allocator fails. [`Arena::try_new`] reports both.
    pub fn new(len: usize) -> Arena {
        if len == 0 {
            return Self::empty();
        }
        if let Some(a) = take_reserved(len) {
            return a;
        }
        let layout = Self::layout(len);
        // SAFETY: `layout` has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else { alloc::handle_alloc_error(layout) };
        Arena { ptr, len }
    }

    /// Allocates `len` zeroed bytes, or says why it could not: never
    /// aborts, never panics.
    pub fn try_new(len: usize) -> Result<Arena, ArenaError> {
        Self::try_new_for("arena", len)
    }

    /// [`Arena::try_new`] naming what the bytes are for in the error
    /// (`arena`, `scratch`).
    pub fn try_new_for(what: &'static str, len: usize) -> Result<Arena, ArenaError> {
        if len == 0 {
            return Ok(Self::empty());
        }
        let layout =
            Layout::from_size_align(len, ARENA_ALIGN).map_err(|_| ArenaError::TooLarge { what, bytes: len })?;
        // SAFETY: `layout` has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or(ArenaError::OutOfMemory { what, bytes: len })?;
        Ok(Arena { ptr, len })
    }

    fn empty() -> Arena {
        // A dangling but aligned pointer: never dereferenced for a
        // zero-length arena, and slices of length 0 accept it.
        let ptr = NonNull::new(std::ptr::without_provenance_mut(ARENA_ALIGN)).expect("non-null constant");
        Arena { ptr, len: 0 }
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

    #[test]
    fn too_large_arenas_are_errors_not_aborts() {
        let err = Arena::try_new(usize::MAX).unwrap_err();
        assert!(matches!(err, ArenaError::TooLarge { bytes: usize::MAX, .. }), "{err}");
        // More than any machine has: the allocator refuses (no overcommit
        // grants 2^62 bytes).
        let bytes = 1usize << 62;
        let err = Arena::try_new(bytes).unwrap_err();
        assert_eq!(err, ArenaError::OutOfMemory { what: "arena", bytes });
        assert_eq!(err.to_string(), "cannot allocate 4611686018427387904 bytes (4.0 EiB) of memory for the arena");
        assert!(Arena::try_new(0).unwrap().is_empty());
        assert_eq!(Arena::try_new(100).unwrap().as_slice(), &[0u8; 100][..]);
    }

    #[test]
    fn reserved_arenas_are_taken_by_new() {
        let err = reserve(&[("arena", 64), ("scratch", 1 << 62)]).unwrap_err();
        assert_eq!(err, ArenaError::OutOfMemory { what: "scratch", bytes: 1 << 62 });
        // A failed reservation keeps nothing.
        assert!(take_reserved(64).is_none());
        reserve(&[("arena", 4160), ("scratch", 0)]).unwrap();
        let mut a = Arena::new(4160);
        assert!(a.as_slice().iter().all(|&b| b == 0));
        a.as_mut_slice()[0] = 1;
        // Taken once: the next arena of that length is a fresh one.
        assert!(take_reserved(4160).is_none());
        assert_eq!(human(1023), "1023 bytes");
        assert_eq!(human(68_719_476_736), "64.0 GiB");
    }
}
