//! Executes a lowered [`KernelCall`] against an interpreter's memory.
//!
//! [`execute`] is `rlx_core`'s kernel-call table expanded into one `match`:
//! each arm resolves the call's operands to pointers, binds its type
//! arguments (`with_type_arg!`) and calls the entry, exactly as the
//! generated code does at the same `.sched` line. There is no other
//! dispatch: what an interpreter runs per thunk was decided by
//! `rlx_core::lower` when the schedule was loaded.

use std::marker::PhantomData;

use rlx_core::{KernelCall, Operand, Segment};

/// Raw views of the arena, the weights' data section and the scratch
/// buffer that lowered calls address.
pub struct Memory<'a> {
    arena: *mut u8,
    arena_len: usize,
    weights: *const u8,
    weights_len: usize,
    scratch: *mut u8,
    scratch_len: usize,
    _borrow: PhantomData<&'a mut [u8]>,
}

impl<'a> Memory<'a> {
    pub fn new(arena: &'a mut [u8], weights: &'a [u8], scratch: &'a mut [u8]) -> Self {
        Memory {
            arena: arena.as_mut_ptr(),
            arena_len: arena.len(),
            weights: weights.as_ptr(),
            weights_len: weights.len(),
            scratch: scratch.as_mut_ptr(),
            scratch_len: scratch.len(),
            _borrow: PhantomData,
        }
    }

    /// Pointer to an operand's first byte, typed. The offset is checked
    /// against its segment in every build; the access extent is the
    /// caller's contract (see [`execute`]). Weights are never written (the
    /// validator rejects writes to them), so `*mut` for them is sound while
    /// kernels honour their read-only contract.
    fn ptr<T>(&self, op: Operand) -> *mut T {
        let (base, len) = match op.segment {
            Segment::Arena => (self.arena, self.arena_len),
            Segment::Weights => (self.weights.cast_mut(), self.weights_len),
        };
        assert!(op.offset <= len, "operand offset {} past the {} segment of {len} bytes", op.offset, op.segment.name());
        debug_assert!(
            op.offset.is_multiple_of(std::mem::align_of::<T>().min(8)),
            "misaligned operand offset {}",
            op.offset
        );
        // SAFETY: `offset <= len`, so the result is in or one past the
        // segment's allocation.
        unsafe { base.add(op.offset).cast() }
    }

    fn opt_ptr<T>(&self, op: Option<Operand>) -> Option<*const T> {
        op.map(|o| self.ptr::<T>(o).cast_const())
    }

    fn null_or_ptr<T>(&self, op: Option<Operand>) -> *mut T {
        op.map_or(std::ptr::null_mut(), |o| self.ptr(o))
    }

    /// The scratch buffer for a call that needs `bytes` of it. A hard
    /// check: scratch sized for another schedule would be overrun.
    fn scratch<T>(&self, bytes: usize) -> *mut T {
        assert!(
            bytes <= self.scratch_len,
            "a call needs {bytes} bytes of scratch, {} were allocated",
            self.scratch_len
        );
        self.scratch.cast()
    }
}

/// Operand lists (`Concat`, fused chains) up to this length resolve on the
/// stack; longer ones, never seen from the importer, on the heap.
const INLINE_PTRS: usize = 16;

/// Resolves an operand list and hands the pointers to `f`.
fn with_ptrs<T, R>(mem: &Memory<'_>, ops: &[Operand], f: impl FnOnce(&[*const T]) -> R) -> R {
    if ops.len() <= INLINE_PTRS {
        let mut ptrs = [std::ptr::null::<T>(); INLINE_PTRS];
        for (p, op) in ptrs.iter_mut().zip(ops) {
            *p = mem.ptr::<T>(*op).cast_const();
        }
        f(&ptrs[..ops.len()])
    } else {
        let ptrs: Vec<*const T> = ops.iter().map(|op| mem.ptr::<T>(*op).cast_const()).collect();
        f(&ptrs)
    }
}

/// Binds `$t` to the Rust type a type-argument value names.
macro_rules! define_with_type_arg {
    ($d:tt $( $(#[$doc:meta])* $how:ident $name:ident { $( $var:ident => $ty:ty ),* $(,)? } )*) => {
        macro_rules! with_type_arg {
            $( ($name, $d v:expr, $d t:ident => $d body:expr) => {
                match $d v {
                    $( rlx_core::$name::$var => {
                        type $d t = $ty;
                        $d body
                    } )*
                }
            }; )*
        }
    };
}
rlx_core::type_arg_table!(define_with_type_arg $);

/// Nests `with_type_arg!` over a call's type arguments.
macro_rules! bind_types {
    ([] => $body:expr) => {
        $body
    };
    ([$f:ident : $tp:ident = $tk:ident $(, $rf:ident : $rtp:ident = $rtk:ident)*] => $body:expr) => {
        with_type_arg!($tk, *$f, $tp => bind_types!([$($rf : $rtp = $rtk),*] => $body))
    };
}

/// One argument, resolved against `$mem`, in the entry's parameter type.
macro_rules! arg {
    ($mem:ident, $v:ident, In $t:ty) => {
        $mem.ptr::<$t>(*$v).cast_const()
    };
    ($mem:ident, $v:ident, Out $t:ty) => {
        $mem.ptr::<$t>(*$v)
    };
    ($mem:ident, $v:ident, OptIn $t:ty) => {
        $mem.opt_ptr::<$t>(*$v)
    };
    ($mem:ident, $v:ident, NullIn $t:ty) => {
        $mem.null_or_ptr::<$t>(*$v).cast_const()
    };
    ($mem:ident, $v:ident, NullOut $t:ty) => {
        $mem.null_or_ptr::<$t>(*$v)
    };
    ($mem:ident, $v:ident, Scratch $t:ty) => {
        $mem.scratch::<$t>(*$v)
    };
    ($mem:ident, $v:ident, Val $t:ty) => {
        *$v
    };
    ($mem:ident, $v:ident, Ref $t:ty) => {
        $v
    };
    ($mem:ident, $v:ident, Dims) => {
        &$v[..]
    };
    ($mem:ident, $v:ident, Steps) => {
        &$v[..]
    };
    ($mem:ident, $v:ident, usize) => {
        *$v
    };
    ($mem:ident, $v:ident, bool) => {
        *$v
    };
    ($mem:ident, $v:ident, f32) => {
        *$v
    };
}

/// The call itself. An `Ins` argument (at most one per entry) is resolved
/// into a stack list around the call.
macro_rules! call_entry {
    ($mem:ident, $($path:ident)::+, [$($tp:ident),*], [$( $arg:ident : $kind:ident $(<$t:ty>)? ),*]) => {
        call_entry!(@find $mem, $($path)::+, [$($tp),*], [$( $arg : $kind $(<$t>)? ),*], [$( $arg : $kind $(<$t>)? ),*])
    };
    (@find $mem:ident, $($path:ident)::+, [$($tp:ident),*], [$ins:ident : Ins<$it:ty> $(, $rest:ident : $rk:ident $(<$rt:ty>)?)*], [$( $arg:ident : $kind:ident $(<$t:ty>)? ),*]) => {
        with_ptrs::<$it, _>($mem, $ins, |$ins| {
            crate::kernels::$($path)::+::<$($tp),*>($( call_entry!(@arg $mem, $arg, $kind $(<$t>)?) ),*)
        })
    };
    (@find $mem:ident, $($path:ident)::+, [$($tp:ident),*], [$skip:ident : $sk:ident $(<$st:ty>)? $(, $rest:ident : $rk:ident $(<$rt:ty>)?)*], [$( $arg:ident : $kind:ident $(<$t:ty>)? ),*]) => {
        call_entry!(@find $mem, $($path)::+, [$($tp),*], [$($rest : $rk $(<$rt>)?),*], [$( $arg : $kind $(<$t>)? ),*])
    };
    (@find $mem:ident, $($path:ident)::+, [$($tp:ident),*], [], [$( $arg:ident : $kind:ident $(<$t:ty>)? ),*]) => {
        crate::kernels::$($path)::+::<$($tp),*>($( arg!($mem, $arg, $kind $($t)?) ),*)
    };
    (@arg $mem:ident, $v:ident, Ins<$t:ty>) => { $v };
    (@arg $mem:ident, $v:ident, $kind:ident $(<$t:ty>)?) => { arg!($mem, $v, $kind $($t)?) };
}

macro_rules! define_execute {
    ($d:tt $(
        $(#[$doc:meta])*
        $name:ident = $($path:ident)::+ < $($tf:ident : $tp:ident = $tk:ident),* > ( $( $arg:ident : $kind:ident $(<$t:ty>)? ),* $(,)? );
    )*) => {
        /// Runs one lowered call.
        ///
        /// # Safety
        ///
        /// `call` must be the lowering of a thunk of a schedule that
        /// `rlx_sched::validate` accepted, and `mem` must hold that
        /// schedule's arena (its `arena_size` bytes, aligned as the
        /// schedule requires), its weights' data section and at least the
        /// call's [`KernelCall::scratch_bytes`] of scratch. The validator
        /// checked every operand's extent and aliasing against those sizes;
        /// each entry's own `# Safety` section is met by that check.
        pub unsafe fn execute(call: &KernelCall, mem: &Memory<'_>) {
            match call {
                $( KernelCall::$name { $( $tf, )* $( $arg ),* } => {
                    bind_types!([$($tf : $tp = $tk),*] => {
                        // SAFETY: the function's contract: validated
                        // extents and aliasing for this memory.
                        unsafe { call_entry!(mem, $($path)::+, [$($tp),*], [$( $arg : $kind $(<$t>)? ),*]) }
                    })
                } )*
            }
        }
    };
}

rlx_core::kernel_call_table!(define_execute $);
