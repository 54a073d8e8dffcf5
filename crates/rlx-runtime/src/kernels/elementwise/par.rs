//! Splitting elementwise work over threads, and the CPU feature checks
//! the elementwise, activation and cast families share (detected once, in
//! `kernels::variants::cpu`).

/// Elements per parallel chunk: large enough that a chunk's work dwarfs
/// the cost of scheduling it, small enough to balance two to 16 threads.
pub(crate) const PAR_CHUNK: usize = 16 * 1024;

/// A raw pointer that may cross threads. Kernels hand disjoint index
/// ranges of it to different threads; that disjointness is what makes
/// sharing sound.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct SyncPtr<T>(pub(crate) *mut T);

// SAFETY: only used to carry a pointer into `par_for` chunks that access
// disjoint output ranges (and shared read-only inputs).
unsafe impl<T> Send for SyncPtr<T> {}
// SAFETY: `&SyncPtr` only hands out a copy of the pointer; the same
// disjoint-write discipline as for `Send` above makes sharing it sound.
unsafe impl<T> Sync for SyncPtr<T> {}

impl<T> SyncPtr<T> {
    pub(crate) fn new_const(p: *const T) -> Self {
        SyncPtr(p as *mut T)
    }

    /// Views a slice of pointers as shareable ones (same layout:
    /// `SyncPtr` is a transparent wrapper).
    pub(crate) fn slice(ptrs: &[*const T]) -> &[SyncPtr<T>] {
        // SAFETY: `SyncPtr<T>` is `repr(transparent)` over `*mut T`, which
        // has the layout of `*const T`.
        unsafe { std::slice::from_raw_parts(ptrs.as_ptr().cast::<SyncPtr<T>>(), ptrs.len()) }
    }

    /// The pointer, read through a method so closures capture the whole
    /// `Sync` wrapper rather than its raw field.
    pub(crate) fn get(self) -> *mut T {
        self.0
    }
}

/// Calls `f(start, n)` over chunks covering `0..len`: all at once on the
/// calling thread unless `par`, else split over the thread pool.
#[inline]
pub(crate) fn split(len: usize, par: bool, f: &(dyn Fn(usize, usize) + Sync)) {
    if len == 0 {
        return;
    }
    if par {
        crate::threads::par_for(len, PAR_CHUNK, f);
    } else {
        f(0, len);
    }
}
