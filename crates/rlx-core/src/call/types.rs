//! Type arguments of kernel entries: small enums whose values name Rust
//! types.
//!
//! [`type_arg_table!`] lists each enum with the type of every variant. It
//! is expanded here (the enums that are new, and [`TypeArg`] for all) and
//! in `rlx-runtime`, into `with_type_arg!`, which binds a type alias to a
//! value's type so the interpreter can call the generic entry. Each enum is
//! narrow on purpose: the interpreter instantiates the entry for every
//! variant, so an enum lists only the types its kernels take.

use crate::ops::{BinaryOp, CmpOp};

/// A value that names a Rust type.
pub trait TypeArg: Copy {
    /// The type as generated code writes it.
    fn rust_type(self) -> &'static str;
}

/// The table. Expands `$m! { $d rows }`; `new` rows declare their enum
/// here, `existing` rows map an enum declared elsewhere in this crate.
#[doc(hidden)]
#[macro_export]
macro_rules! type_arg_table {
    ($m:ident $d:tt) => {
        $m! { $d
            existing BinaryOp {
                Add => ::rlx_runtime::kernels::elementwise::ops::Add,
                Sub => ::rlx_runtime::kernels::elementwise::ops::Sub,
                Mul => ::rlx_runtime::kernels::elementwise::ops::Mul,
                Div => ::rlx_runtime::kernels::elementwise::ops::Div,
                Max => ::rlx_runtime::kernels::elementwise::ops::Max,
                Min => ::rlx_runtime::kernels::elementwise::ops::Min,
                Pow => ::rlx_runtime::kernels::elementwise::ops::Pow,
                Mod => ::rlx_runtime::kernels::elementwise::ops::Mod,
                Atan2 => ::rlx_runtime::kernels::elementwise::ops::Atan2,
                BitAnd => ::rlx_runtime::kernels::elementwise::ops::BitAnd,
                BitOr => ::rlx_runtime::kernels::elementwise::ops::BitOr,
                BitXor => ::rlx_runtime::kernels::elementwise::ops::BitXor,
                Shl => ::rlx_runtime::kernels::elementwise::ops::Shl,
                Shr => ::rlx_runtime::kernels::elementwise::ops::Shr,
                FloorMod => ::rlx_runtime::kernels::elementwise::ops::FloorMod,
            }
            existing CmpOp {
                Eq => ::rlx_runtime::kernels::elementwise::ops::Eq,
                Ne => ::rlx_runtime::kernels::elementwise::ops::Ne,
                Lt => ::rlx_runtime::kernels::elementwise::ops::Lt,
                Le => ::rlx_runtime::kernels::elementwise::ops::Le,
                Gt => ::rlx_runtime::kernels::elementwise::ops::Gt,
                Ge => ::rlx_runtime::kernels::elementwise::ops::Ge,
            }
            /// A `Compare`'s input elements.
            new CmpInput { U8 => u8, F32 => f32, I32 => i32, I64 => i64, F64 => f64 }
            /// A `Compare`'s output elements (bool bytes or 0.0/1.0).
            new CmpOutput { U8 => u8, F32 => f32 }
            /// A `Where`'s condition elements.
            new SelectCond { U8 => u8, F32 => f32, I64 => i64 }
            /// A `Where`'s values, moved as bits.
            new SelectValue { U32 => u32, U64 => u64 }
            /// Gather indices.
            new IndexElem { I32 => i32, I64 => i64, F32 => f32 }
            /// Elements a scatter combines: the types its reductions compute
            /// in, and unsigned words of each width for `none`, which only
            /// moves bits.
            new ScatterElem {
                F32 => f32,
                F64 => f64,
                I32 => i32,
                I64 => i64,
                Bool => ::rlx_runtime::kernels::cast::Bool,
                U8 => u8,
                U16 => u16,
                U32 => u32,
                U64 => u64,
            }
            /// Elements of a running sum or product.
            new CumElem { F32 => f32, I64 => i64 }
            /// The 8-bit integers of a quantized product.
            new QuantElem { U8 => u8, I8 => i8 }
            /// Elements a transpose moves, by width.
            new MoveElem { U8 => u8, U16 => u16, U32 => u32, U64 => u64, U128 => [u64; 2] }
            /// Element types of the generic cast.
            new CastElem {
                F32 => f32,
                F64 => f64,
                F16 => ::rlx_runtime::half::f16,
                Bf16 => ::rlx_runtime::half::bf16,
                I8 => i8,
                U8 => u8,
                I16 => i16,
                U16 => u16,
                I32 => i32,
                U32 => u32,
                I64 => i64,
                U64 => u64,
                Bool => ::rlx_runtime::kernels::cast::Bool,
            }
        }
    };
}

macro_rules! define_type_args {
    ($d:tt $( $(#[$doc:meta])* $how:ident $name:ident { $( $var:ident => $ty:ty ),* $(,)? } )*) => {
        $(
            define_type_args!(@decl $how $(#[$doc])* $name { $($var),* });

            impl TypeArg for $name {
                fn rust_type(self) -> &'static str {
                    match self { $( $name::$var => stringify!($ty), )* }
                }
            }
        )*
    };
    (@decl new $(#[$doc:meta])* $name:ident { $($var:ident),* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($var),* }
    };
    (@decl existing $(#[$doc:meta])* $name:ident { $($var:ident),* }) => {};
}

type_arg_table!(define_type_args $);
