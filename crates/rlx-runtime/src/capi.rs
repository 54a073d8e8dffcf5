//! The C ABI of a generated model: what the `extern "C"` functions of a
//! model crate's generated `src/capi.rs` call (`docs/shipping.md`).
//!
//! Each function here runs its body under `catch_unwind`, so no panic
//! unwinds into C, and turns a null pointer or a wrong length into a
//! [`Status`] instead of undefined behaviour. The handle a C caller holds
//! is a `Box<M>` turned into a raw pointer.

use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::model::{GeneratedModel, TensorInfo};

/// What a C function of a generated model returns. The discriminants are
/// the values of the `NAME_status` enum of the generated header, which
/// rlx-codegen writes from its own copy of this list
/// (`rlx_codegen::c_api::STATUSES`; a test in `tests/` compares the two).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Status {
    Ok = 0,
    NullPointer = 1,
    Length = 2,
    ThreadCount = 3,
    ThreadsStarted = 4,
    Create = 5,
    Panic = 6,
}

impl Status {
    /// Every status, in discriminant order.
    pub const ALL: [Status; 7] = [
        Status::Ok,
        Status::NullPointer,
        Status::Length,
        Status::ThreadCount,
        Status::ThreadsStarted,
        Status::Create,
        Status::Panic,
    ];

    /// The enumerator's name after the model prefix (`MLP_` + this).
    pub fn c_suffix(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::NullPointer => "ERROR_NULL_POINTER",
            Status::Length => "ERROR_LENGTH",
            Status::ThreadCount => "ERROR_THREAD_COUNT",
            Status::ThreadsStarted => "ERROR_THREADS_STARTED",
            Status::Create => "ERROR_CREATE",
            Status::Panic => "ERROR_PANIC",
        }
    }

    /// What `NAME_error_message` returns for this status.
    pub fn message(self) -> &'static CStr {
        match self {
            Status::Ok => c"no error",
            Status::NullPointer => c"a pointer argument is null",
            Status::Length => c"the element count differs from the tensor's",
            Status::ThreadCount => c"the thread count is out of range (1 to 1024)",
            Status::ThreadsStarted => c"the worker threads already started: set the thread count before the first run",
            Status::Create => c"the model could not be created (weights or memory)",
            Status::Panic => c"internal error (a panic was caught; the model's outputs are undefined)",
        }
    }
}

/// Runs `body`, mapping a caught panic to [`Status::Panic`].
fn guard(body: impl FnOnce() -> Result<(), Status>) -> c_int {
    let status = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => Status::Ok,
        Ok(Err(status)) => status,
        Err(_) => Status::Panic,
    };
    status as c_int
}

/// `NAME_error_message`: a static, NUL-terminated text for `status`
/// (unknown values included).
pub fn error_message(status: c_int) -> *const c_char {
    let known = Status::ALL.iter().find(|s| **s as c_int == status);
    known.map_or(c"unknown status", |s| s.message()).as_ptr()
}

/// `NAME_set_threads`: the worker-thread count of the process (every
/// model in it shares one pool), while the pool has not started (it
/// starts at the first parallel kernel; `threads::set_num_threads`).
pub fn set_threads(threads: usize) -> c_int {
    guard(|| match crate::threads::set_num_threads(threads) {
        Ok(true) => Ok(()),
        Ok(false) => Err(Status::ThreadsStarted),
        Err(_) => Err(Status::ThreadCount),
    })
}

/// `NAME_create`: a new model (its own arena; the weights are shared)
/// written to `*out`, or null there and an error.
///
/// # Safety
///
/// `out` is null or valid for writing one pointer.
pub unsafe fn create<M: GeneratedModel>(out: *mut *mut M) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(Status::NullPointer);
        }
        // SAFETY: `out` is non-null and, by the contract, writable.
        unsafe { out.write(std::ptr::null_mut()) };
        let model = M::try_new().map_err(|_| Status::Create)?;
        // SAFETY: as above.
        unsafe { out.write(Box::into_raw(Box::new(model))) };
        Ok(())
    })
}

/// `NAME_destroy`: frees a model; null is ignored.
///
/// # Safety
///
/// `model` is null or a pointer from [`create`] not destroyed yet, used by
/// no other call meanwhile.
pub unsafe fn destroy<M: GeneratedModel>(model: *mut M) {
    if !model.is_null() {
        // SAFETY: by the contract, `model` came from `Box::into_raw`.
        let _ = catch_unwind(AssertUnwindSafe(|| drop(unsafe { Box::from_raw(model) })));
    }
}

/// `NAME_run`: runs the model once on the inputs in its arena.
///
/// # Safety
///
/// `model` is null or a live pointer from [`create`], used by no other
/// call meanwhile.
pub unsafe fn run<M: GeneratedModel>(model: *mut M) -> c_int {
    guard(|| {
        // SAFETY: by the contract, a live, unshared model.
        let model = unsafe { model.as_mut() }.ok_or(Status::NullPointer)?;
        model.run();
        Ok(())
    })
}

/// Input `index` of `M::INFO`, or [`Status::Panic`] (the generated code
/// passes only valid indices).
fn input_info<M: GeneratedModel>(index: usize) -> Result<&'static TensorInfo, Status> {
    M::INFO.inputs.get(index).ok_or(Status::Panic)
}

fn output_info<M: GeneratedModel>(index: usize) -> Result<&'static TensorInfo, Status> {
    M::INFO.outputs.get(index).ok_or(Status::Panic)
}

/// The bytes of `elements` elements of `t`, if that is the tensor's size.
fn checked_bytes(t: &TensorInfo, elements: usize) -> Result<usize, Status> {
    let expected: usize = t.shape.iter().product();
    if elements == expected {
        Ok(t.bytes)
    } else {
        Err(Status::Length)
    }
}

/// `NAME_input_X`: where input `index` lives in the arena (valid until
/// the model is destroyed), or null for a null model.
///
/// # Safety
///
/// `model` is null or a live pointer from [`create`].
pub unsafe fn input_ptr<M: GeneratedModel>(model: *mut M, index: usize) -> *mut u8 {
    let found = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: by the contract, a live model.
        let model = unsafe { model.as_mut() }?;
        let t = input_info::<M>(index).ok()?;
        Some(model.arena_mut()[t.offset..t.offset + t.bytes].as_mut_ptr())
    }));
    found.ok().flatten().unwrap_or(std::ptr::null_mut())
}

/// `NAME_output_X`: where output `index` lives in the arena (valid until
/// the model is destroyed), or null for a null model.
///
/// # Safety
///
/// `model` is null or a live pointer from [`create`].
pub unsafe fn output_ptr<M: GeneratedModel>(model: *const M, index: usize) -> *const u8 {
    let found = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: by the contract, a live model.
        let model = unsafe { model.as_ref() }?;
        let t = output_info::<M>(index).ok()?;
        Some(model.arena()[t.offset..t.offset + t.bytes].as_ptr())
    }));
    found.ok().flatten().unwrap_or(std::ptr::null())
}

/// `NAME_set_input_X`: copies `elements` elements from `data` into input
/// `index`; `elements` must be the tensor's element count.
///
/// # Safety
///
/// `model` is null or a live pointer from [`create`], used by no other
/// call meanwhile; `data` is null or valid for reading `elements`
/// elements of the input's type.
pub unsafe fn set_input<M: GeneratedModel>(model: *mut M, index: usize, data: *const u8, elements: usize) -> c_int {
    guard(|| {
        // SAFETY: by the contract, a live, unshared model.
        let model = unsafe { model.as_mut() }.ok_or(Status::NullPointer)?;
        if data.is_null() {
            return Err(Status::NullPointer);
        }
        let t = input_info::<M>(index)?;
        let bytes = checked_bytes(t, elements)?;
        // SAFETY: `data` holds `elements` elements, `bytes` bytes.
        let src = unsafe { std::slice::from_raw_parts(data, bytes) };
        model.arena_mut()[t.offset..t.offset + bytes].copy_from_slice(src);
        Ok(())
    })
}

/// `NAME_get_output_X`: copies output `index` into `data`, which holds
/// `elements` elements, the tensor's element count.
///
/// # Safety
///
/// `model` is null or a live pointer from [`create`]; `data` is null or
/// valid for writing `elements` elements of the output's type and does
/// not overlap the model's arena.
pub unsafe fn get_output<M: GeneratedModel>(model: *const M, index: usize, data: *mut u8, elements: usize) -> c_int {
    guard(|| {
        // SAFETY: by the contract, a live model.
        let model = unsafe { model.as_ref() }.ok_or(Status::NullPointer)?;
        if data.is_null() {
            return Err(Status::NullPointer);
        }
        let t = output_info::<M>(index)?;
        let bytes = checked_bytes(t, elements)?;
        // SAFETY: `data` has room for `bytes` bytes outside the arena.
        let dst = unsafe { std::slice::from_raw_parts_mut(data, bytes) };
        dst.copy_from_slice(&model.arena()[t.offset..t.offset + bytes]);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_listed_in_discriminant_order_with_distinct_names() {
        for (i, s) in Status::ALL.iter().enumerate() {
            assert_eq!(*s as usize, i);
        }
        let mut names: Vec<_> = Status::ALL.iter().map(|s| s.c_suffix()).collect();
        names.dedup();
        assert_eq!(names.len(), Status::ALL.len());
    }

    #[test]
    fn unknown_statuses_have_a_message_too() {
        // SAFETY: `error_message` returns static NUL-terminated text.
        let text = unsafe { CStr::from_ptr(error_message(99)) };
        assert_eq!(text, c"unknown status");
        // SAFETY: as above.
        let ok = unsafe { CStr::from_ptr(error_message(0)) };
        assert_eq!(ok, c"no error");
    }

    #[test]
    fn a_thread_count_of_zero_is_an_error() {
        assert_eq!(set_threads(0), Status::ThreadCount as c_int);
        assert_eq!(set_threads(100_000), Status::ThreadCount as c_int);
    }
}
