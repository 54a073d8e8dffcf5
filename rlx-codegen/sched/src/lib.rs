//! Frozen schedules: the types shared by the interpreter, the code
//! generator and the ONNX importer, the `.sched` text format and the
//! gen-time validator.
//!
//! The pipeline is `parse(text) -> Ast` (syntax only, every node spanned),
//! then `validate(&Ast) -> Schedule` (a separate, checked type). Each phase
//! reports all of its diagnostics at once and stops at its boundary.
//!
//! This crate is linked by shipped model binaries only through
//! `rlx-runtime`'s interpreter feature; it never depends on syn or quote.

pub mod ast;
pub mod diag;
pub mod dtype;
pub mod ops;
pub mod plan;
pub mod schedule;
pub mod span;
pub mod thunk;
pub mod value;

pub use ast::Ast;
pub use diag::{Diagnostic, Diagnostics, Severity};
pub use dtype::DType;
pub use ops::{ActKind, ArgOp, BinaryOp, CmpOp, MaskKind, ReduceOp, Step, StepArg};
pub use schedule::{Buffer, Node, Operand, Params, Role, Schedule, Segment, WeightsFile};
pub use span::Span;
pub use thunk::{FieldSpec, Thunk, ThunkKind};
