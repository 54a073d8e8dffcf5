//! The table of kernel entry points, and [`KernelCall`]: one call of one
//! entry with every argument decided.
//!
//! [`kernel_call_table!`] below is the single list of the entries a thunk
//! can lower to: each row names the variant, the entry's path under
//! `rlx_runtime::kernels`, its type arguments and its arguments in call
//! order. The table is expanded three times:
//!
//! - here, into the [`KernelCall`] enum (what `crate::lower` builds);
//! - in `rlx-runtime` (`exec`), into the one `match` that calls the entry
//!   on an interpreter's memory;
//! - in `rlx-codegen`, into the one `match` that prints the same call as
//!   Rust source.
//!
//! So the interpreter and the generated code call the same function with
//! the same arguments, and neither can grow a case the other lacks.
//!
//! Argument kinds (the word before `<...>` in a row):
//!
//! | kind | `KernelCall` field | entry parameter |
//! |---|---|---|
//! | `In<T>` | [`Operand`] | `*const T` |
//! | `Out<T>` | [`Operand`] | `*mut T` |
//! | `OptIn<T>` | `Option<Operand>` | `Option<*const T>` |
//! | `NullIn<T>` / `NullOut<T>` | `Option<Operand>` | `*const T` / `*mut T`, null for `None` |
//! | `Ins<T>` | `Vec<Operand>` | `&[*const T]` |
//! | `Scratch<T>` | `usize`: bytes the call needs | `*mut T` to the shared scratch |
//! | `usize`, `bool`, `f32` | the value | the value |
//! | `Dims` | `Vec<usize>` | `&[usize]` |
//! | `Steps` | `Vec<Step>` | `&[Step]` |
//! | `Val<T>` | `T` | `T` |
//! | `Ref<T>` | `T` | `&T` |
//!
//! A type argument (`<op: O = BinaryOp>`) is a value of a [`TypeArg`] enum
//! in the `KernelCall` and a type parameter of the entry: the generated
//! code names the type, the interpreter matches the value to it
//! (`rlx_runtime::exec`), once per call.

mod types;

pub use types::{
    CastElem, CmpInput, CmpOutput, CumElem, IndexElem, MoveElem, QuantElem, ScatterElem, SelectCond, SelectValue,
    TypeArg,
};

use crate::operand::Operand;
// The call table names value types bare; the glob brings every enum of
// `crate::ops`, so a new field enum needs no edit here.
#[allow(clippy::wildcard_imports)]
use crate::ops::*;
use crate::shapes::{
    AttentionPath, AttentionScores, AttentionShape, Col2ImShape, Conv2dShape, ConvPath, Pool2dShape, RecurrentShape,
    ResizeShape,
};
use crate::CmpOp;

/// The table. Expands `$m! { $d rows }`, where `$d` is a `$` token for
/// callers that generate macros. See the module docs.
#[doc(hidden)]
#[macro_export]
macro_rules! kernel_call_table {
    ($m:ident $d:tt) => {
        $m! { $d
            // ---- gemm ----
            /// `c = a @ b`.
            SgemmF32 = gemm::sgemm_f32 <> (a: In<f32>, b: In<f32>, c: Out<f32>, m: usize, k: usize, n: usize);
            /// `sgemm_f32` through a temporary: `c` overlaps an input.
            SgemmF32Via = gemm::sgemm_f32_via <> (scratch: Scratch<f32>, a: In<f32>, b: In<f32>, c: Out<f32>, m: usize, k: usize, n: usize);
            /// `c = op(a) @ op(b)`.
            SgemmTF32 = gemm::sgemm_t_f32 <> (a: In<f32>, b: In<f32>, c: Out<f32>, m: usize, k: usize, n: usize, ta: bool, tb: bool);
            SgemmTF32Via = gemm::sgemm_t_f32_via <> (scratch: Scratch<f32>, a: In<f32>, b: In<f32>, c: Out<f32>, m: usize, k: usize, n: usize, ta: bool, tb: bool);
            /// `c = a @ widen(b)` with f16 weights.
            SgemmF16w = gemm::sgemm_f16w <> (a: In<f32>, b: In<u16>, c: Out<f32>, m: usize, k: usize, n: usize, scratch: Scratch<f32>, par: bool);
            SgemmF16wVia = gemm::sgemm_f16w_via <> (scratch: Scratch<f32>, a: In<f32>, b: In<u16>, c: Out<f32>, m: usize, k: usize, n: usize, par: bool);
            /// `c = a @ widen(b)` with bf16 weights.
            SgemmBf16w = gemm::sgemm_bf16w <> (a: In<f32>, b: In<u16>, c: Out<f32>, m: usize, k: usize, n: usize, scratch: Scratch<f32>, par: bool);
            SgemmBf16wVia = gemm::sgemm_bf16w_via <> (scratch: Scratch<f32>, a: In<f32>, b: In<u16>, c: Out<f32>, m: usize, k: usize, n: usize, par: bool);
            BatchedSgemmF32 = gemm::batched_sgemm_f32 <> (a: In<f32>, b: In<f32>, c: Out<f32>, batch: usize, m: usize, k: usize, n: usize, a_bcast: bool, b_bcast: bool, par: bool);
            BatchedSgemmF32Via = gemm::batched_sgemm_f32_via <> (scratch: Scratch<f32>, a: In<f32>, b: In<f32>, c: Out<f32>, batch: usize, m: usize, k: usize, n: usize, a_bcast: bool, b_bcast: bool, par: bool);
            /// `c = act(a @ w + bias)`.
            FusedMmBiasActF32 = gemm::fused_mm_bias_act_f32 <> (a: In<f32>, w: In<f32>, bias: In<f32>, c: Out<f32>, m: usize, k: usize, n: usize, act: Val<ActKind>, par: bool);
            FusedMmBiasActF32Via = gemm::fused_mm_bias_act_f32_via <> (scratch: Scratch<f32>, a: In<f32>, w: In<f32>, bias: In<f32>, c: Out<f32>, m: usize, k: usize, n: usize, act: Val<ActKind>, par: bool);
            PackedGemmF32 = gemm::packed_gemm_f32 <> (a: In<f32>, w: In<f32>, bias: OptIn<f32>, c: Out<f32>, m: usize, k: usize, n: usize, act: Val<ActKind>, par: bool);
            PackedGemmF32Via = gemm::packed_gemm_f32_via <> (scratch: Scratch<f32>, a: In<f32>, w: In<f32>, bias: OptIn<f32>, c: Out<f32>, m: usize, k: usize, n: usize, act: Val<ActKind>, par: bool);
            /// `c = act(a @ widen(B) + bias)` with `B` packed in f16 / bf16 (`bf16`).
            PackedGemmHalf = gemm::packed_gemm_half <> (a: In<f32>, w: In<u16>, bias: OptIn<f32>, c: Out<f32>, m: usize, k: usize, n: usize, act: Val<ActKind>, bf16: bool, par: bool);
            PackedGemmHalfVia = gemm::packed_gemm_half_via <> (scratch: Scratch<f32>, a: In<f32>, w: In<u16>, bias: OptIn<f32>, c: Out<f32>, m: usize, k: usize, n: usize, act: Val<ActKind>, bf16: bool, par: bool);
            /// `c = act(a @ dequant(B) + bias)` with `B` in the Q8 layout of `rlx_core::q8`.
            PackedGemmQ8 = gemm::packed_gemm_q8 <> (a: In<f32>, w: In<u8>, bias: OptIn<f32>, c: Out<f32>, m: usize, k: usize, n: usize, act: Val<ActKind>, par: bool);
            PackedGemmQ8Via = gemm::packed_gemm_q8_via <> (scratch: Scratch<f32>, a: In<f32>, w: In<u8>, bias: OptIn<f32>, c: Out<f32>, m: usize, k: usize, n: usize, act: Val<ActKind>, par: bool);
            BiasAddF32 = gemm::bias_add_f32 <> (src: In<f32>, bias: In<f32>, dst: Out<f32>, rows: usize, cols: usize, par: bool);

            // ---- elementwise: one entry per broadcast path (`plan::BinaryPath`) ----
            BinarySameF32 = elementwise::binary_same_f32 <op: O = BinaryOp> (lhs: In<f32>, rhs: In<f32>, dst: Out<f32>, len: usize, par: bool);
            BinaryScalarLhsF32 = elementwise::binary_scalar_lhs_f32 <op: O = BinaryOp> (lhs: In<f32>, rhs: In<f32>, dst: Out<f32>, len: usize, par: bool);
            BinaryScalarRhsF32 = elementwise::binary_scalar_rhs_f32 <op: O = BinaryOp> (lhs: In<f32>, rhs: In<f32>, dst: Out<f32>, len: usize, par: bool);
            BinaryRowRhsF32 = elementwise::binary_row_rhs_f32 <op: O = BinaryOp> (lhs: In<f32>, rhs: In<f32>, dst: Out<f32>, len: usize, row: usize, par: bool);
            BinaryRowLhsF32 = elementwise::binary_row_lhs_f32 <op: O = BinaryOp> (lhs: In<f32>, rhs: In<f32>, dst: Out<f32>, len: usize, row: usize, par: bool);
            BinaryColRhsF32 = elementwise::binary_col_rhs_f32 <op: O = BinaryOp> (lhs: In<f32>, rhs: In<f32>, dst: Out<f32>, len: usize, row: usize, par: bool);
            BinaryColLhsF32 = elementwise::binary_col_lhs_f32 <op: O = BinaryOp> (lhs: In<f32>, rhs: In<f32>, dst: Out<f32>, len: usize, row: usize, par: bool);
            BinaryModularF32 = elementwise::binary_modular_f32 <op: O = BinaryOp> (lhs: In<f32>, rhs: In<f32>, dst: Out<f32>, len: usize, lhs_len: usize, rhs_len: usize, par: bool);
            BinaryStridedF32 = elementwise::binary_strided_f32 <op: O = BinaryOp> (lhs: In<f32>, rhs: In<f32>, dst: Out<f32>, len: usize, dims: Dims, lhs_strides: Dims, rhs_strides: Dims, par: bool);
            BinarySameI64 = elementwise::binary_same_i64 <op: O = BinaryOp> (lhs: In<i64>, rhs: In<i64>, dst: Out<i64>, len: usize, par: bool);
            BinaryScalarLhsI64 = elementwise::binary_scalar_lhs_i64 <op: O = BinaryOp> (lhs: In<i64>, rhs: In<i64>, dst: Out<i64>, len: usize, par: bool);
            BinaryScalarRhsI64 = elementwise::binary_scalar_rhs_i64 <op: O = BinaryOp> (lhs: In<i64>, rhs: In<i64>, dst: Out<i64>, len: usize, par: bool);
            BinaryRowRhsI64 = elementwise::binary_row_rhs_i64 <op: O = BinaryOp> (lhs: In<i64>, rhs: In<i64>, dst: Out<i64>, len: usize, row: usize, par: bool);
            BinaryRowLhsI64 = elementwise::binary_row_lhs_i64 <op: O = BinaryOp> (lhs: In<i64>, rhs: In<i64>, dst: Out<i64>, len: usize, row: usize, par: bool);
            BinaryColRhsI64 = elementwise::binary_col_rhs_i64 <op: O = BinaryOp> (lhs: In<i64>, rhs: In<i64>, dst: Out<i64>, len: usize, row: usize, par: bool);
            BinaryColLhsI64 = elementwise::binary_col_lhs_i64 <op: O = BinaryOp> (lhs: In<i64>, rhs: In<i64>, dst: Out<i64>, len: usize, row: usize, par: bool);
            BinaryModularI64 = elementwise::binary_modular_i64 <op: O = BinaryOp> (lhs: In<i64>, rhs: In<i64>, dst: Out<i64>, len: usize, lhs_len: usize, rhs_len: usize, par: bool);
            BinaryStridedI64 = elementwise::binary_strided_i64 <op: O = BinaryOp> (lhs: In<i64>, rhs: In<i64>, dst: Out<i64>, len: usize, dims: Dims, lhs_strides: Dims, rhs_strides: Dims, par: bool);
            CompareSame = elementwise::compare_same <op: C = CmpOp, input: T = CmpInput, output: D = CmpOutput> (lhs: In<T>, rhs: In<T>, dst: Out<D>, len: usize, par: bool);
            CompareScalarLhs = elementwise::compare_scalar_lhs <op: C = CmpOp, input: T = CmpInput, output: D = CmpOutput> (lhs: In<T>, rhs: In<T>, dst: Out<D>, len: usize, par: bool);
            CompareScalarRhs = elementwise::compare_scalar_rhs <op: C = CmpOp, input: T = CmpInput, output: D = CmpOutput> (lhs: In<T>, rhs: In<T>, dst: Out<D>, len: usize, par: bool);
            CompareRowRhs = elementwise::compare_row_rhs <op: C = CmpOp, input: T = CmpInput, output: D = CmpOutput> (lhs: In<T>, rhs: In<T>, dst: Out<D>, len: usize, row: usize, par: bool);
            CompareRowLhs = elementwise::compare_row_lhs <op: C = CmpOp, input: T = CmpInput, output: D = CmpOutput> (lhs: In<T>, rhs: In<T>, dst: Out<D>, len: usize, row: usize, par: bool);
            CompareColRhs = elementwise::compare_col_rhs <op: C = CmpOp, input: T = CmpInput, output: D = CmpOutput> (lhs: In<T>, rhs: In<T>, dst: Out<D>, len: usize, row: usize, par: bool);
            CompareColLhs = elementwise::compare_col_lhs <op: C = CmpOp, input: T = CmpInput, output: D = CmpOutput> (lhs: In<T>, rhs: In<T>, dst: Out<D>, len: usize, row: usize, par: bool);
            CompareModular = elementwise::compare_modular <op: C = CmpOp, input: T = CmpInput, output: D = CmpOutput> (lhs: In<T>, rhs: In<T>, dst: Out<D>, len: usize, lhs_len: usize, rhs_len: usize, par: bool);
            CompareStrided = elementwise::compare_strided <op: C = CmpOp, input: T = CmpInput, output: D = CmpOutput> (lhs: In<T>, rhs: In<T>, dst: Out<D>, len: usize, dims: Dims, lhs_strides: Dims, rhs_strides: Dims, par: bool);
            /// `dst = cond ? on_true : on_false`; a `*_scalar` operand is one element.
            Select = elementwise::select <cond_elem: C = SelectCond, value: V = SelectValue> (cond: In<C>, on_true: In<V>, on_false: In<V>, dst: Out<V>, len: usize, cond_scalar: bool, true_scalar: bool, false_scalar: bool, par: bool);
            FmaF32 = elementwise::fma_f32 <> (a: In<f32>, b: In<f32>, c: In<f32>, dst: Out<f32>, len: usize, par: bool);
            FmaF64 = elementwise::fma_f64 <> (a: In<f64>, b: In<f64>, c: In<f64>, dst: Out<f64>, len: usize, par: bool);
            /// A fused elementwise chain (`ElementwiseRegion`).
            RegionF32 = elementwise::region_f32 <> (inputs: Ins<f32>, dst: Out<f32>, len: usize, steps: Steps, par: bool);
            ActF32 = activation::act_f32_slice <> (act: Val<ActKind>, src: In<f32>, dst: Out<f32>, len: usize, par: bool);

            // ---- casts ----
            CastF32ToI64 = cast::cast_f32_to_i64 <> (src: In<f32>, dst: Out<i64>, len: usize);
            CastF32ToF64 = cast::cast_f32_to_f64 <> (src: In<f32>, dst: Out<f64>, len: usize);
            CastF64ToF32 = cast::cast_f64_to_f32 <> (src: In<f64>, dst: Out<f32>, len: usize);
            CastF64ToI64 = cast::cast_f64_to_i64 <> (src: In<f64>, dst: Out<i64>, len: usize);
            CastF64ToI32 = cast::cast_f64_to_i32 <> (src: In<f64>, dst: Out<i32>, len: usize);
            CastF64ToBool = cast::cast_f64_to_bool <> (src: In<f64>, dst: Out<u8>, len: usize);
            CastI64ToI32 = cast::cast_i64_to_i32 <> (src: In<i64>, dst: Out<i32>, len: usize);
            CastI64ToF64 = cast::cast_i64_to_f64 <> (src: In<i64>, dst: Out<f64>, len: usize);
            CastI32ToF64 = cast::cast_i32_to_f64 <> (src: In<i32>, dst: Out<f64>, len: usize);
            CastF32ToF16 = cast::cast_f32_to_f16 <> (src: In<f32>, dst: Out<::rlx_runtime::half::f16>, len: usize);
            CastF32ToU8 = cast::cast_f32_to_u8 <> (src: In<f32>, dst: Out<u8>, len: usize, par: bool);
            CastF32ToI8 = cast::cast_f32_to_i8 <> (src: In<f32>, dst: Out<i8>, len: usize, par: bool);
            CastF16ToF32 = cast::cast_f16_to_f32 <> (src: In<::rlx_runtime::half::f16>, dst: Out<f32>, len: usize);
            CastF32ToBf16 = cast::cast_f32_to_bf16 <> (src: In<f32>, dst: Out<::rlx_runtime::half::bf16>, len: usize);
            CastBf16ToF32 = cast::cast_bf16_to_f32 <> (src: In<::rlx_runtime::half::bf16>, dst: Out<f32>, len: usize);
            CastF32ToI32 = cast::cast_f32_to_i32 <> (src: In<f32>, dst: Out<i32>, len: usize);
            CastI64ToF32 = cast::cast_i64_to_f32 <> (src: In<i64>, dst: Out<f32>, len: usize);
            CastBoolToI32 = cast::cast_bool_to_i32 <> (src: In<u8>, dst: Out<i32>, len: usize);
            CastI32ToF32 = cast::cast_i32_to_f32 <> (src: In<i32>, dst: Out<f32>, len: usize, par: bool);
            CastI32ToI64 = cast::cast_i32_to_i64 <> (src: In<i32>, dst: Out<i64>, len: usize);
            CastI32ToBool = cast::cast_i32_to_bool <> (src: In<i32>, dst: Out<u8>, len: usize);
            CastI64ToBool = cast::cast_i64_to_bool <> (src: In<i64>, dst: Out<u8>, len: usize);
            CastBoolToI64 = cast::cast_bool_to_i64 <> (src: In<u8>, dst: Out<i64>, len: usize);
            CastBoolToF32 = cast::cast_bool_to_f32 <> (src: In<u8>, dst: Out<f32>, len: usize);
            CastF32ToBool = cast::cast_f32_to_bool <> (src: In<f32>, dst: Out<u8>, len: usize);
            /// Any other pair of element types.
            CastSlice = cast::cast_slice <from: S = CastElem, to: D = CastElem> (src: In<S>, dst: Out<D>, len: usize);

            // ---- movement ----
            CopyF32 = movement::copy_f32 <> (src: In<f32>, dst: Out<f32>, len: usize, par: bool);
            CopyF64 = movement::copy_f64 <> (src: In<f64>, dst: Out<f64>, len: usize, par: bool);
            CopyI64 = movement::copy_i64 <> (src: In<i64>, dst: Out<i64>, len: usize, par: bool);
            Narrow = movement::narrow <> (src: In<u8>, dst: Out<u8>, outer: usize, src_stride: usize, dst_stride: usize, inner: usize, elem_bytes: usize, par: bool);
            TransposeCopy = movement::transpose_copy <elem: T = MoveElem> (src: In<T>, dst: Out<T>, len: usize, par: bool);
            TransposeSplat = movement::transpose_splat <elem: T = MoveElem> (src: In<T>, dst: Out<T>, len: usize, par: bool);
            TransposeBroadcastRuns = movement::transpose_broadcast_runs <elem: T = MoveElem> (src: In<T>, dst: Out<T>, lead_dims: Dims, lead_strides: Dims, run: usize, par: bool);
            TransposeInnerRows = movement::transpose_inner_rows <elem: T = MoveElem> (src: In<T>, dst: Out<T>, lead_dims: Dims, lead_strides: Dims, row: usize, par: bool);
            TransposeBatchedSwap = movement::transpose_batched_swap <elem: T = MoveElem> (src: In<T>, dst: Out<T>, lead_dims: Dims, lead_strides: Dims, rows: usize, cols: usize, src_ld: usize, par: bool);
            TransposeRank2 = movement::transpose_rank2 <elem: T = MoveElem> (src: In<T>, dst: Out<T>, rows: usize, cols: usize, s0: usize, s1: usize, par: bool);
            TransposeGeneral = movement::transpose_general <elem: T = MoveElem> (src: In<T>, dst: Out<T>, dims: Dims, strides: Dims, par: bool);
            Concat = movement::concat <> (inputs: Ins<u8>, dst: Out<u8>, outer: usize, inner: Dims, elem_bytes: usize, par: bool);
            /// `Pad` in the canonical form of `plan::canonical_pad`.
            Pad = movement::pad <elem: T = MoveElem> (src: In<T>, value: NullIn<T>, dst: Out<T>, dims: Dims, before: Dims, after: Dims, unit: usize, mode: Val<PadMode>, par: bool);
            GatherF32 = movement::gather_f32 <index: I = IndexElem> (table: In<f32>, indices: In<I>, dst: Out<f32>, num_indices: usize, row_len: usize, vocab: usize, par: bool);
            GatherAxis = movement::gather_axis <index: I = IndexElem> (src: In<u8>, indices: In<I>, dst: Out<u8>, outer: usize, axis_dim: usize, inner: usize, num_indices: usize, elem_bytes: usize, par: bool);
            KvAppend = movement::kv_append <> (src: In<u8>, cache: Out<u8>, batch: usize, new_len: usize, max_len: usize, row: usize, pos: usize, elem_bytes: usize, par: bool);
            KvWrite = movement::kv_write <> (src: In<u8>, cache: Out<u8>, pos: In<i64>, new_len: usize, max_len: usize, row: usize, elem_bytes: usize, par: bool);

            // ---- gather and scatter ----
            GatherElements = gather_scatter::gather_elements <index: I = IndexElem> (data: In<u8>, indices: In<I>, dst: Out<u8>, data_dims: Dims, index_dims: Dims, axis: usize, elem_bytes: usize, par: bool);
            GatherNd = gather_scatter::gather_nd <index: I = IndexElem> (data: In<u8>, indices: In<I>, dst: Out<u8>, batch: usize, lookups: usize, data_dims: Dims, slice_len: usize, elem_bytes: usize, par: bool);
            ScatterElements = gather_scatter::scatter_elements <elem: T = ScatterElem, index: I = IndexElem> (data: In<T>, indices: In<I>, updates: In<T>, dst: Out<T>, data_dims: Dims, index_dims: Dims, axis: usize, reduction: Val<ScatterReduction>, par: bool);
            ScatterNd = gather_scatter::scatter_nd <elem: T = ScatterElem, index: I = IndexElem> (data: In<T>, indices: In<I>, updates: In<T>, dst: Out<T>, lookups: usize, data_dims: Dims, slice_len: usize, reduction: Val<ScatterReduction>, par: bool);

            // ---- sampling at run-time coordinates ----
            /// ONNX `GridSample` over 1 to 3 spatial axes.
            GridSampleF32 = sample::grid_sample_f32 <> (src: In<f32>, grid: In<f32>, dst: Out<f32>, n: usize, c: usize, in_dims: Dims, out_dims: Dims, mode: Val<GridSampleMode>, padding: Val<GridSamplePadding>, align_corners: bool, par: bool);

            // ---- norm, softmax, attention, rope ----
            LayerNormF32 = norm::layer_norm_f32 <> (x: In<f32>, g: In<f32>, b: OptIn<f32>, out: Out<f32>, rows: usize, h: usize, eps: f32, par: bool);
            RmsNormF32 = norm::rms_norm_f32 <> (x: In<f32>, g: In<f32>, out: Out<f32>, rows: usize, h: usize, eps: f32, par: bool);
            FusedResidualLnF32 = norm::fused_residual_ln_f32 <> (x: In<f32>, res: In<f32>, bias: OptIn<f32>, g: In<f32>, b: In<f32>, out: Out<f32>, rows: usize, h: usize, eps: f32, par: bool);
            FusedResidualRmsNormF32 = norm::fused_residual_rms_norm_f32 <> (x: In<f32>, res: In<f32>, bias: OptIn<f32>, g: In<f32>, b: OptIn<f32>, out: Out<f32>, rows: usize, h: usize, eps: f32, par: bool);
            BatchNormInferenceF32 = norm::batch_norm_inference_f32 <> (x: In<f32>, scale: In<f32>, bias: In<f32>, mean: In<f32>, var: In<f32>, out: Out<f32>, n: usize, c: usize, hw: usize, eps: f32, par: bool);
            SoftmaxF32 = softmax::softmax_f32 <> (src: In<f32>, dst: Out<f32>, rows: usize, cols: usize, par: bool);
            AttentionF32 = attention::attention_f32 <> (q: In<f32>, k: In<f32>, v: In<f32>, mask: NullIn<f32>, out: Out<f32>, shape: Ref<AttentionShape>, scores: Ref<AttentionScores>, path: Val<AttentionPath>, scratch: Scratch<f32>, par: bool);
            RopeF32 = rope::rope_f32 <> (x: In<f32>, cos: In<f32>, sin: In<f32>, out: Out<f32>, batch: usize, seq: usize, heads: usize, head_dim: usize, interleaved: bool, par: bool);
            RopeAtF32 = rope::rope_at_f32 <> (x: In<f32>, cos: In<f32>, sin: In<f32>, pos: In<i64>, out: Out<f32>, seq: usize, heads: usize, head_dim: usize, max_len: usize, interleaved: bool, par: bool);
            CachedAttentionF32 = attention::cached_attention_f32 <> (q: In<f32>, k: In<f32>, v: In<f32>, pos: In<i64>, out: Out<f32>, shape: Ref<AttentionShape>, scores: Ref<AttentionScores>, path: Val<AttentionPath>, scratch: Scratch<f32>, par: bool);

            // ---- recurrent ----
            /// One direction of an LSTM, GRU or RNN over the sequence.
            RecurrentF32 = recurrent::recurrent_f32 <> (x: In<f32>, r: In<f32>, bias: NullIn<f32>, p: NullIn<f32>, h0: NullIn<f32>, c0: NullIn<f32>, y: NullOut<f32>, y_h: NullOut<f32>, y_c: NullOut<f32>, shape: Ref<RecurrentShape>, scratch: Scratch<f32>, par: bool);

            // ---- reductions ----
            ReduceF32 = reduce::reduce_f32 <> (src: In<f32>, dst: Out<f32>, outer: usize, axis_dim: usize, inner: usize, op: Val<ReduceOp>, par: bool);
            ArgReduceF32 = reduce::arg_reduce_f32 <> (src: In<f32>, dst: Out<u8>, outer: usize, axis_dim: usize, inner: usize, op: Val<ArgOp>, select_last: bool, indices_i64: bool, par: bool);
            Cumulative = reduce::cumulative <elem: E = CumElem, op: P = BinaryOp> (src: In<E>, dst: Out<E>, outer: usize, axis_dim: usize, inner: usize, exclusive: bool, reverse: bool, par: bool);
            TopKF32 = reduce::top_k_f32 <> (src: In<f32>, dst: Out<u8>, values: NullOut<f32>, outer: usize, axis_dim: usize, k: usize, largest: bool, indices_i64: bool, scratch: Scratch<u32>);
            TopKI64 = reduce::top_k_i64 <> (src: In<i64>, dst: Out<u8>, values: NullOut<i64>, outer: usize, axis_dim: usize, k: usize, largest: bool, indices_i64: bool, scratch: Scratch<u32>);

            // ---- quantized ----
            IntGemm = quant::int_gemm <a_elem: A = QuantElem, b_elem: B = QuantElem> (scratch: Scratch<u8>, a: In<A>, b: In<B>, a_zero: NullIn<A>, b_zero: NullIn<B>, c: Out<i32>, batch: usize, m: usize, k: usize, n: usize, b_zero_len: usize, b_bcast: bool, par: bool);

            /// The 8-bit product on a prepacked weight, i32 sums or dequantized to f32.
            IntGemmPacked = quant::int_gemm_packed <a_elem: A = QuantElem> (scratch: Scratch<u8>, a: In<A>, w: In<i8>, w_sums: In<i32>, a_zero: NullIn<A>, w_zero: NullIn<i32>, c: Out<i32>, m: usize, k: usize, n: usize, w_zero_len: usize, par: bool);
            IntGemmPackedF32 = quant::int_gemm_packed_f32 <a_elem: A = QuantElem> (scratch: Scratch<u8>, a: In<A>, w: In<i8>, w_sums: In<i32>, a_zero: NullIn<A>, w_zero: NullIn<i32>, scale: In<f32>, bias: NullIn<f32>, c: Out<f32>, m: usize, k: usize, n: usize, w_zero_len: usize, scale_len: usize, par: bool);

            /// The 8-bit integer convolution (im2col + the packed product, or per channel when depthwise).
            IntConv2d = quant::int_conv2d <x_elem: X = QuantElem, w_elem: W = QuantElem> (scratch: Scratch<u8>, x: In<X>, w: In<W>, x_zero: NullIn<X>, w_zero: NullIn<W>, out: Out<i32>, shape: Ref<Conv2dShape>, w_zero_len: usize, par: bool);

            /// The 8-bit convolution with its requantization fused, on a prepacked filter.
            QLinearConv2d = quant::qlinear_conv2d <> (scratch: Scratch<u8>, x: In<u8>, w: In<i8>, bias: NullIn<i32>, scale: In<f32>, zero: NullIn<u8>, out: Out<u8>, shape: Ref<Conv2dShape>, x_pad: usize, scale_len: usize, x_nhwc: bool, out_nhwc: bool, par: bool);

            /// `DynamicQuantizeLinear`: the range, the scale and zero point, the u8 values.
            DynamicQuantize = quant::dynamic_quantize <> (x: In<f32>, y: Out<u8>, scale: Out<f32>, zero: Out<u8>, len: usize, par: bool);

            /// i32 sums requantized to 8 bits per channel.
            Requantize = quant::requantize <out_elem: Q = QuantElem> (acc: In<i32>, bias: NullIn<i32>, scale: In<f32>, zero: NullIn<Q>, out: Out<Q>, outer: usize, channels: usize, inner: usize, scale_len: usize, par: bool);

            // ---- convolution and pooling ----
            Conv2dF32 = conv::conv2d_f32 <> (x: In<f32>, w: In<f32>, bias: NullIn<f32>, out: Out<f32>, shape: Ref<Conv2dShape>, path: Val<ConvPath>, act: Val<ActKind>, scratch: Scratch<f32>, par: bool);
            Pool2dF32 = pool::pool2d_f32 <> (src: In<f32>, dst: Out<f32>, shape: Ref<Pool2dShape>, kind: Val<PoolKind>, count_include_pad: bool, par: bool);
            ResizeF32 = movement::resize_f32 <> (src: In<f32>, dst: Out<f32>, shape: Ref<ResizeShape>, scratch: Scratch<f64>, par: bool);
            Col2ImF32 = conv::col2im_f32 <> (src: In<f32>, bias: NullIn<f32>, dst: Out<f32>, shape: Ref<Col2ImShape>, par: bool);
            Conv2dBlockedF32 = conv::conv2d_blocked_f32 <> (x: In<f32>, w: In<f32>, bias: NullIn<f32>, residual: NullIn<f32>, out: Out<f32>, shape: Ref<Conv2dShape>, act: Val<ActKind>, scratch: Scratch<f32>, par: bool);
            Conv2dNchwBlockedF32 = conv::conv2d_nchw_blocked_f32 <> (x: In<f32>, w: In<f32>, bias: NullIn<f32>, residual: NullIn<f32>, out: Out<f32>, shape: Ref<Conv2dShape>, act: Val<ActKind>, scratch: Scratch<f32>, par: bool);
            Conv2dBlockedHalf = conv::conv2d_blocked_half <> (x: In<f32>, w: In<u16>, bias: NullIn<f32>, residual: NullIn<f32>, out: Out<f32>, shape: Ref<Conv2dShape>, act: Val<ActKind>, bf16: bool, x_nchw: bool, scratch: Scratch<f32>, par: bool);
            Conv2dWinogradF32 = conv::conv2d_winograd_f32 <> (x: In<f32>, u: In<f32>, bias: NullIn<f32>, residual: NullIn<f32>, out: Out<f32>, shape: Ref<Conv2dShape>, act: Val<ActKind>, scratch: Scratch<f32>, par: bool);
            DepthwiseBlockedF32 = conv::depthwise_blocked_f32 <> (x: In<f32>, w: In<f32>, bias: NullIn<f32>, out: Out<f32>, shape: Ref<Conv2dShape>, act: Val<ActKind>, scratch: Scratch<f32>, par: bool);
            Pool2dBlockedF32 = pool::pool2d_blocked_f32 <> (src: In<f32>, dst: Out<f32>, shape: Ref<Pool2dShape>, kind: Val<PoolKind>, count_include_pad: bool, par: bool);
            NchwToBlockedF32 = movement::nchw_to_blocked_f32 <> (src: In<f32>, dst: Out<f32>, n: usize, c: usize, hw: usize, par: bool);
            BlockedToNchwF32 = movement::blocked_to_nchw_f32 <> (src: In<f32>, dst: Out<f32>, n: usize, c: usize, hw: usize, par: bool);
        }
    };
}

/// The `KernelCall` field type of an argument kind.
macro_rules! field_type {
    (In $t:ty) => { Operand };
    (Out $t:ty) => { Operand };
    (OptIn $t:ty) => { Option<Operand> };
    (NullIn $t:ty) => { Option<Operand> };
    (NullOut $t:ty) => { Option<Operand> };
    (Ins $t:ty) => { Vec<Operand> };
    (Scratch $t:ty) => { usize };
    (Val $t:ty) => { $t };
    (Ref $t:ty) => { $t };
    (Dims) => { Vec<usize> };
    (Steps) => { Vec<Step> };
    (usize) => { usize };
    (bool) => { bool };
    (f32) => { f32 };
}

/// The bytes of scratch one argument needs (0 unless it is `Scratch`).
/// Whether an argument is a `par: bool` that is set.
macro_rules! parallel_of {
    (par, $v:ident) => {
        *$v
    };
    ($name:ident, $v:ident) => {{
        let _ = $v;
        false
    }};
}

macro_rules! scratch_of {
    ($v:ident, Scratch) => {
        *$v
    };
    ($v:ident, $kind:ident) => {{
        let _ = $v;
        0
    }};
}

macro_rules! define_kernel_calls {
    ($d:tt $(
        $(#[$doc:meta])*
        $name:ident = $($path:ident)::+ < $($tf:ident : $tp:ident = $tk:ident),* > ( $( $arg:ident : $kind:ident $(<$t:ty>)? ),* $(,)? );
    )*) => {
        /// One call of one kernel entry, with every argument decided. Built
        /// by [`crate::lower`]; see the module docs for the argument kinds.
        #[derive(Clone, Debug, PartialEq)]
        pub enum KernelCall {
            $( $(#[$doc])* $name { $( $tf: $tk, )* $( $arg: field_type!($kind $($t)?) ),* }, )*
        }

        impl KernelCall {
            /// The variant's name, for profiles and tests.
            pub fn name(&self) -> &'static str {
                match self { $( KernelCall::$name { .. } => stringify!($name), )* }
            }

            /// The entry's path under `rlx_runtime::kernels`.
            pub fn entry(&self) -> &'static str {
                match self { $( KernelCall::$name { .. } => stringify!($($path)::+), )* }
            }

            /// Whether the call may split its work over the thread pool.
            #[allow(unused_variables)]
            pub fn parallel(&self) -> bool {
                match self {
                    $( KernelCall::$name { $( $arg, )* .. } => false $( || parallel_of!($arg, $arg) )*, )*
                }
            }

            /// Bytes of the shared scratch buffer the call uses.
            #[allow(unused_variables)]
            pub fn scratch_bytes(&self) -> usize {
                match self {
                    $( KernelCall::$name { $( $arg, )* .. } => 0 $( + scratch_of!($arg, $kind) )*, )*
                }
            }
        }
    };
}

kernel_call_table!(define_kernel_calls $);
