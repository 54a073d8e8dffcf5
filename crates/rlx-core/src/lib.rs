//! The layer every other crate builds on, and the only one of the
//! schedule crates a model binary links.
//!
//! - [`thunk`]: the table of thunk kinds (`Thunk<O>`), generic over how
//!   operands are written.
//! - [`operand`]: resolved operands (segment + byte offset).
//! - [`shapes`]: the parameter structs kernels take (`Conv2dShape`, ...).
//! - [`pack`]: the prepacked GEMM weight layout (shared by the importer,
//!   the validator and the kernels).
//! - [`q8`]: the 8-bit (ggml Q8_0) weight layout of `PackedGemmQ8`.
//! - [`plan`]: pure decisions from a thunk's fields (broadcast and
//!   transpose paths, aliasing, serial or parallel).
//! - [`call`]: the table of kernel entry points, [`KernelCall`], and the
//!   typed arguments a call carries.
//! - [`lower`]: a validated thunk to its one [`KernelCall`], written once
//!   per kind. The interpreter executes the call; the code generator prints
//!   it. Both therefore call the same entry with the same arguments.
//!
//! No parser, no syn, no dependencies: see `rlx-sched` for the `.sched`
//! front end.

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod blocked;
pub mod call;
pub mod dtype;
pub mod expr;
pub mod lower;
pub mod operand;
pub mod ops;
pub mod pack;
pub mod plan;
pub mod q8;
pub mod qconv;
pub mod shapes;
pub mod thunk;
pub mod winograd;

pub use call::{
    CastElem, CmpInput, CmpOutput, CumElem, IndexElem, KernelCall, MoveElem, QuantElem, ScatterElem, SelectCond,
    SelectValue, TypeArg,
};
pub use dtype::DType;
pub use expr::{ConstExpr, Expr};
pub use lower::lower;
pub use operand::{Operand, Params, Segment};
pub use ops::{ActKind, MaskKind, Step, StepArg};

/// Every enum of [`field_enum_table!`], re-exported without a list to keep.
macro_rules! reexport_field_enums {
    ($( $(#[$m:meta])* $name:ident as $what:literal { $($body:tt)* } )*) => {
        pub use ops::{$($name),*};
    };
}

field_enum_table!(reexport_field_enums);
pub use shapes::{
    AttentionPath, AttentionScores, AttentionShape, Col2ImShape, Conv2dShape, ConvPath, Pool2dShape, RecurrentShape,
    ResizeShape,
};
pub use thunk::{FieldSpec, Thunk, ThunkKind};
