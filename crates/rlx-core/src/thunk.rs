//! The table of thunk kinds.
//!
//! `thunk_table!` below is the single list of kinds, their families and
//! their fields. From it come one struct per kind (`TopK<O> { src, dst,
//! .. }`, public fields), the `Thunk<O>` enum of them (generic over how
//! operands are represented: by name in the AST, by resolved location in a
//! validated schedule), `ThunkKind`, each kind's field list, family and
//! operand mapping, and the router of the lowering (`crate::lower`). The
//! front end (`rlx-sched`) expands the same table for the conversions to
//! and from the `.sched` field syntax and for the router of its extent
//! rules. Each router calls the kind's impl (`Lower`, `Extents`), so a new
//! kind is a compile error naming it until both exist.
//!
//! A kind's family (`Kind in family { .. }`) is the folder
//! `rlx_runtime::kernels::<family>` of the entries it lowers to and the
//! module of its lowering and extent rules.
//!
//! Field types in the table: `Op` (one operand), `Ops` (a list of
//! operands), `OptOp` (an operand or `none`), `Dims` (a list of integers),
//! `Steps` (a fused chain), and plain types (`usize`, `f32`, `bool`, and
//! the enums of [`crate::ops`] and [`crate::DType`]).
//!
//! All offsets are in bytes; all lengths, dims and strides are in elements.
//! Unless a kind says otherwise, its data is f32, row-major and contiguous.

use crate::dtype::DType;
// The table below names field types bare: the glob brings every enum of
// `crate::ops`, so a new field enum needs no edit here.
#[allow(clippy::wildcard_imports)]
use crate::ops::*;

/// One field of a kind, for hints and generated documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldSpec {
    pub name: &'static str,
    /// The field's type as written in the table (`Op`, `usize`, ...).
    pub ty: &'static str,
}

/// Operand field types of the table; transparent aliases, so the enum
/// reads naturally, while the macros below can still tell them apart.
pub type Op<O> = O;
pub type Ops<O> = Vec<O>;
pub type OptOp<O> = Option<O>;
/// A list of dims or strides.
pub type Dims = Vec<usize>;
/// The steps of a fused elementwise chain.
pub type Steps = Vec<Step>;

macro_rules! map_field {
    (Op, $v:expr, $name:expr, $f:expr, $errs:expr) => {
        match $f($name, $v) {
            Ok(p) => Some(p),
            Err(e) => {
                $errs.push(e);
                None
            }
        }
    };
    (Ops, $v:expr, $name:expr, $f:expr, $errs:expr) => {{
        let before = $errs.len();
        let mut out = Vec::new();
        for x in $v {
            match $f($name, x) {
                Ok(p) => out.push(p),
                Err(e) => $errs.push(e),
            }
        }
        (before == $errs.len()).then_some(out)
    }};
    (OptOp, $v:expr, $name:expr, $f:expr, $errs:expr) => {
        match $v {
            None => Some(None),
            Some(x) => match $f($name, x) {
                Ok(p) => Some(Some(p)),
                Err(e) => {
                    $errs.push(e);
                    None
                }
            },
        }
    };
    ($t:ident, $v:expr, $name:expr, $f:expr, $errs:expr) => {
        Some($v)
    };
}

macro_rules! visit_field {
    (Op, $v:expr, $name:expr, $out:expr) => {
        $out.push(($name, $v))
    };
    (Ops, $v:expr, $name:expr, $out:expr) => {
        for x in $v {
            $out.push(($name, x))
        }
    };
    (OptOp, $v:expr, $name:expr, $out:expr) => {
        if let Some(x) = $v {
            $out.push(($name, x))
        }
    };
    ($t:ident, $v:expr, $name:expr, $out:expr) => {{
        let _ = $v;
    }};
}

/// A kind's struct: its fields, public. A kind without fields is a plain
/// unit-like struct (it has no operand to be generic over).
macro_rules! kind_struct {
    ($(#[$doc:meta])* $kind:ident $family:ident {}) => {
        $(#[$doc])*
        ///
        #[doc = concat!("Family `", stringify!($family), "`.")]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $kind {}
    };
    ($(#[$doc:meta])* $kind:ident $family:ident { $( $field:ident : $ty:ident $(<$o:ident>)? ),+ }) => {
        $(#[$doc])*
        ///
        #[doc = concat!("Family `", stringify!($family), "`.")]
        #[derive(Clone, Debug, PartialEq)]
        pub struct $kind<O> { $( pub $field: $ty $(<$o>)? ),+ }
    };
}

/// The type of a kind's struct inside `Thunk<O>`.
macro_rules! kind_ty {
    ($kind:ident {}) => { $kind };
    ($kind:ident { $($f:ident)+ }) => { $kind<O> };
}

macro_rules! define_thunks {
    ($( $(#[$doc:meta])* $kind:ident in $family:ident { $( $field:ident : $ty:ident $(<$o:ident>)? ),* $(,)? } )*) => {
        $( kind_struct!($(#[$doc])* $kind $family { $( $field : $ty $(<$o>)? ),* }); )*

        /// A kernel call: one variant per kind, holding the kind's struct.
        /// `O` is how operands are represented.
        pub enum Thunk<O> {
            $( $(#[$doc])* $kind(kind_ty!($kind { $($field)* })), )*
        }

        // Written out rather than derived: a derive cannot see through the
        // variant types' macro. Each forwards to the kind's struct.
        impl<O: Clone> Clone for Thunk<O> {
            fn clone(&self) -> Self {
                match self { $( Thunk::$kind(t) => Thunk::$kind(t.clone()), )* }
            }
        }

        impl<O: std::fmt::Debug> std::fmt::Debug for Thunk<O> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self { $( Thunk::$kind(t) => std::fmt::Debug::fmt(t, f), )* }
            }
        }

        impl<O: PartialEq> PartialEq for Thunk<O> {
            fn eq(&self, other: &Self) -> bool {
                match (self, other) {
                    $( (Thunk::$kind(a), Thunk::$kind(b)) => a == b, )*
                    _ => false,
                }
            }
        }

        $(
            impl<O> From<kind_ty!($kind { $($field)* })> for Thunk<O> {
                fn from(t: kind_ty!($kind { $($field)* })) -> Thunk<O> {
                    Thunk::$kind(t)
                }
            }
        )*

        /// The kind of a [`Thunk`], without its fields.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ThunkKind { $( $kind, )* }

        impl ThunkKind {
            pub const ALL: &'static [ThunkKind] = &[$(ThunkKind::$kind),*];

            /// The kind's name as written in `.sched` files.
            pub const fn name(self) -> &'static str {
                match self { $( ThunkKind::$kind => stringify!($kind), )* }
            }

            pub fn from_name(s: &str) -> Option<ThunkKind> {
                match s { $( stringify!($kind) => Some(ThunkKind::$kind), )* _ => None }
            }

            /// The kernel family the kind belongs to: the folder
            /// `rlx_runtime::kernels::<family>` of the entries it lowers to,
            /// and the module of its lowering and extent rules.
            pub const fn family(self) -> &'static str {
                match self { $( ThunkKind::$kind => stringify!($family), )* }
            }

            /// The kind's fields, in canonical order.
            pub fn fields(self) -> &'static [FieldSpec] {
                match self {
                    $( ThunkKind::$kind => &[$( FieldSpec { name: stringify!($field), ty: stringify!($ty) } ),*], )*
                }
            }
        }

        impl<O> Thunk<O> {
            pub fn kind(&self) -> ThunkKind {
                match self { $( Thunk::$kind(_) => ThunkKind::$kind, )* }
            }

            /// Every operand with its field name, in field order.
            #[allow(unused_mut)]
            pub fn operands(&self) -> Vec<(&'static str, &O)> {
                let mut out = Vec::new();
                match self {
                    $( Thunk::$kind($kind { $( $field ),* }) => {
                        $( visit_field!($ty, $field, stringify!($field), out); )*
                    } )*
                }
                out
            }

            /// Rebuilds the thunk with every operand mapped by `f`, collecting
            /// every error rather than stopping at the first.
            #[allow(unused_mut, unused_variables)]
            pub fn map_operands<P, E>(
                self,
                f: &mut impl FnMut(&'static str, O) -> Result<P, E>,
            ) -> Result<Thunk<P>, Vec<E>> {
                let mut errs: Vec<E> = Vec::new();
                match self {
                    $( Thunk::$kind($kind { $( $field ),* }) => {
                        $( let $field = map_field!($ty, $field, stringify!($field), f, errs); )*
                        if errs.is_empty() {
                            Ok(Thunk::$kind($kind { $( $field: $field.expect("mapped without error") ),* }))
                        } else {
                            Err(errs)
                        }
                    } )*
                }
            }
        }
    };
}

/// The table itself: expands `$m! { ...every kind... }`, so the enum here
/// and the field syntax in `rlx-sched` are generated from one list.
#[doc(hidden)]
#[macro_export]
macro_rules! thunk_table {
    ($m:ident) => {
        $m! {
    /// `c[m,n] = a[m,k] @ b[k,n]`. `c` may overlap `a` or `b` (a temporary
    /// is used, decided at gen time).
    Sgemm in gemm { a: Op<O>, b: Op<O>, c: Op<O>, m: usize, k: usize, n: usize }
    /// `c[m,n] = op(a) @ op(b)` where `op` transposes when `ta`/`tb`: `a` is
    /// stored `[k,m]` when `ta`, `b` is stored `[n,k]` when `tb`.
    SgemmT in gemm { a: Op<O>, b: Op<O>, c: Op<O>, m: usize, k: usize, n: usize, ta: bool, tb: bool }
    /// `Sgemm` with `b` stored as f16.
    SgemmF16 in gemm { a: Op<O>, b: Op<O>, c: Op<O>, m: usize, k: usize, n: usize }
    /// `Sgemm` with `b` stored as bf16.
    SgemmBf16 in gemm { a: Op<O>, b: Op<O>, c: Op<O>, m: usize, k: usize, n: usize }
    /// `batch` independent `Sgemm`s over consecutive matrices; a broadcast
    /// operand (`a_bcast`/`b_bcast`) is one matrix reused for every batch.
    BatchedSgemm in gemm { a: Op<O>, b: Op<O>, c: Op<O>, batch: usize, m: usize, k: usize, n: usize, a_bcast: bool, b_bcast: bool }
    /// Integer product with i32 accumulation: per batch, `c[m,n] = sum over
    /// k of (a[m,k] - a_zero) * (b[k,n] - b_zero)`, exact (wrapping in i32).
    /// `a` and `b` are u8 or i8 (`a_dtype`, `b_dtype`); `a_zero` is one
    /// `a_dtype` element, `b_zero` 1 or `n` (`b_zero_len`, per column)
    /// `b_dtype` elements, both 0 when `none`; `b` is `[batch, k, n]`, or
    /// `[k, n]` for every batch when `b_bcast`; `c` is i32.
    IntGemm in quant {
        a: Op<O>, b: Op<O>, a_zero: OptOp<O>, b_zero: OptOp<O>, c: Op<O>, batch: usize, m: usize, k: usize,
        n: usize, a_dtype: DType, b_dtype: DType, b_zero_len: usize, b_bcast: bool,
    }
    /// `IntGemm` of one `[m, k]` matrix `a` (u8 or i8, `a_dtype`) by a
    /// constant i8 weight `[k, n]` the importer packed
    /// (`rlx_core::qconv::pack_qgemm_weight`): `sum[r, j] = sum over k of
    /// (a[r, k] - a_zero) * (w[k, j] - w_zero[j])` in wrapping i32.
    /// `a_zero` is one `a_dtype` element, `w_zero` one (`w_zero_len` 1) or
    /// `n` i32, both 0 when `none`. `w_sums` (i32, `n`) must hold `sum over
    /// k of w[k, j]` (the importer writes it; another value `s` adds `(a_zero
    /// + 128 if a is i8) * (true sum - s)`). Without `scale`, `c` is the i32
    /// `sum`; with it, `c` is f32 `f32(sum) * scale[j] + bias[j]` (`scale`
    /// one (`scale_len` 1) or `n` f32, `bias` `n` f32 or `none`): a dynamic
    /// quantization's product and its dequantization in one pass.
    IntGemmPacked in quant {
        a: Op<O>, w: Op<O>, w_sums: Op<O>, a_zero: OptOp<O>, w_zero: OptOp<O>, scale: OptOp<O>, bias: OptOp<O>,
        c: Op<O>, m: usize, k: usize, n: usize, a_dtype: DType, w_zero_len: usize, scale_len: usize,
    }
    /// ONNX `DynamicQuantizeLinear` of `len` f32: the range of `x` widened
    /// to include 0 (`x_min = min(min(x), 0)`, `x_max = max(max(x), 0)`, a
    /// NaN anywhere giving 0 for both), `scale = (x_max - x_min) / 255`,
    /// `zero = round_half_even(min(max(0 - x_min / scale, 0), 255))` as u8,
    /// and `y = min(max(round_half_even(x / scale) + zero, 0), 255)` as u8:
    /// the function body's steps in its order, in one thunk. `y` and
    /// `zero` are u8, `scale` one f32.
    DynamicQuantize in quant { x: Op<O>, y: Op<O>, scale: Op<O>, zero: Op<O>, len: usize }
    /// Requantizes i32 sums into 8-bit values, over `outer` blocks of
    /// `channels` rows of `inner`: `out = saturate(round_half_even(f32(acc
    /// + bias[c]) * scale[c]) + zero)`. `bias` is i32, one per channel (0
    /// when `none`; the sum wraps in i32); `scale` f32, one (`scale_len`
    /// 1) or one per channel; `zero` one `out_dtype` element (0 when
    /// `none`); `out_dtype` u8 or i8, saturating to its range. The end of
    /// `QLinearConv` and `QLinearMatMul` in one pass.
    Requantize in quant {
        acc: Op<O>, bias: OptOp<O>, scale: Op<O>, zero: OptOp<O>, out: Op<O>, outer: usize, channels: usize,
        inner: usize, scale_len: usize, out_dtype: DType,
    }
    /// `c[m,n] = act(a[m,k] @ w[k,n] + bias[n])`.
    FusedMmBiasAct in gemm { a: Op<O>, w: Op<O>, bias: Op<O>, c: Op<O>, m: usize, k: usize, n: usize, act: ActKind }
    /// `c[m,n] = act(a[m,k] @ B + bias[n])` where the weight `B` (`k x n`)
    /// is stored prepacked: `w` holds `pack::packed_len(k, n)` f32 in the
    /// panel layout of `rlx_core::pack`, in the weights file. `bias` is
    /// optional. What the importer writes for a product with a weight.
    PackedGemm in gemm { a: Op<O>, w: Op<O>, bias: OptOp<O>, c: Op<O>, m: usize, k: usize, n: usize, act: ActKind }
    /// `PackedGemm` with the packed weight stored in 16-bit floats:
    /// `w_dtype` is `f16` or `bf16`, widened to f32 as the product reads it
    /// (f32 compute, half the weight bytes).
    PackedGemmHalf in gemm { a: Op<O>, w: Op<O>, bias: OptOp<O>, c: Op<O>, m: usize, k: usize, n: usize, act: ActKind, w_dtype: DType }
    /// `PackedGemm` with the weight in 8 bits: `w` holds `q8::q8_len(k,
    /// n)` bytes, ggml's Q8_0 blocks (32 steps of `k` of one column, one
    /// f32 scale each) in the panel layout of `rlx_core::q8`; `k` is a
    /// multiple of 32. f32 compute, a quarter of the f32 weight bytes
    /// (and one eighth more for the scales).
    PackedGemmQ8 in gemm { a: Op<O>, w: Op<O>, bias: OptOp<O>, c: Op<O>, m: usize, k: usize, n: usize, act: ActKind }
    /// `dst[r,j] = src[r,j] + bias[j]`; in place when `dst == src`.
    BiasAdd in gemm { src: Op<O>, bias: Op<O>, dst: Op<O>, rows: usize, cols: usize }
    /// `dst[i] = op(lhs[li], rhs[ri])` over `len` elements of `elem_bytes`
    /// (4: f32, 8: i64). With `out_dims_bcast` empty, `li = i % lhs_len`
    /// (0 when `lhs_len == 1`) and likewise `ri`; otherwise `i` is
    /// decomposed over `out_dims_bcast` and dotted with the strides.
    BinaryFull in elementwise {
        lhs: Op<O>, rhs: Op<O>, dst: Op<O>, len: usize, lhs_len: usize, rhs_len: usize, op: BinaryOp,
        out_dims_bcast: Dims, bcast_lhs_strides: Dims, bcast_rhs_strides: Dims, elem_bytes: usize,
    }
    /// A fused chain: for each `i < len`, `acc = inputs[0][i]`, then each
    /// step in order, then `dst[i] = acc`. All f32, all `len` long.
    ElementwiseRegion in elementwise { inputs: Ops<O>, dst: Op<O>, len: usize, steps: Steps }
    /// `dst[i] = act(src[i])`; `dst` may equal `src`.
    Activation in activation { src: Op<O>, dst: Op<O>, len: usize, act: ActKind }
    /// `dst[i] = a[i] * b[i] + c[i]` with one rounding; `elem_bytes` 4 (f32)
    /// or 8 (f64).
    Fma in elementwise { a: Op<O>, b: Op<O>, c: Op<O>, dst: Op<O>, len: usize, elem_bytes: usize }
    /// `dst[i] = op(lhs[li], rhs[ri])` as 1/0. Inputs are u8/bool
    /// (`inputs_elem_bytes` 1), i64 (8 with `inputs_i64`) or f32 (4); `dst`
    /// is bool (`dst_elem_bytes` 1) or f32 (4). Indexing as `BinaryFull`
    /// when `out_dims_bcast` is given, else by the `*_scalar` flags.
    Compare in elementwise {
        lhs: Op<O>, rhs: Op<O>, dst: Op<O>, len: usize, op: CmpOp, inputs_i64: bool,
        inputs_elem_bytes: usize, dst_elem_bytes: usize, lhs_scalar: bool, rhs_scalar: bool,
        lhs_len: usize, rhs_len: usize, out_dims_bcast: Dims, bcast_lhs_strides: Dims,
        bcast_rhs_strides: Dims,
    }
    /// `dst[i] = cond[i] != 0 ? on_true[i] : on_false[i]`; `elem_bytes` 4 or
    /// 8, `cond_elem_bytes` 1 (bool), 4 (f32) or 8 (i64); a `*_scalar`
    /// operand is one element reused.
    Where in elementwise {
        cond: Op<O>, on_true: Op<O>, on_false: Op<O>, dst: Op<O>, len: usize, elem_bytes: usize,
        cond_elem_bytes: usize, cond_scalar: bool, true_scalar: bool, false_scalar: bool,
    }
    /// `dst[i] = to(src[i])` for `len` elements of `from` into `to`:
    /// float to float rounds to nearest even; float to int truncates toward
    /// zero, saturating, NaN to 0; int to int wraps; int to float rounds to
    /// nearest even; to bool is `!= 0`, from bool 1 or 0. In place when both
    /// types have the same size. The fixed-pair spellings (`CastF32ToI64`,
    /// ...) and `CastGeneric` are parser aliases (`docs/sched-format.md`).
    Cast in cast { src: Op<O>, dst: Op<O>, len: usize, from: DType, to: DType }
    /// Copies `len` f32 (memmove: overlap allowed).
    Copy in movement { src: Op<O>, dst: Op<O>, len: usize }
    /// Copies `len` 8-byte f64.
    CopyF64 in movement { src: Op<O>, dst: Op<O>, len: usize }
    /// Copies `len` 8-byte i64.
    CopyI64 in movement { src: Op<O>, dst: Op<O>, len: usize }
    /// Row copy: for `o < outer`, `inner` elements of `elem_bytes` from
    /// `src + o*src_stride` to `dst + o*dst_stride` (strides in elements).
    Narrow in movement { src: Op<O>, dst: Op<O>, outer: usize, src_stride: usize, dst_stride: usize, inner: usize, elem_bytes: usize }
    /// General permutation / broadcast: output element at coordinates `c`
    /// over `out_dims` reads input element `sum(c[d] * in_strides[d])`
    /// (stride 0 broadcasts). `elem_bytes` 1, 2, 4, 8 or 16.
    Transpose in movement { src: Op<O>, dst: Op<O>, in_total: usize, out_dims: Dims, in_strides: Dims, elem_bytes: usize }
    /// Concatenation along an axis: for each `o < outer`, the output row is
    /// the inputs' rows back to back; input `j` contributes `inner[j]`
    /// elements per row.
    Concat in movement { inputs: Ops<O>, dst: Op<O>, outer: usize, inner: Dims, elem_bytes: usize }
    /// ONNX `Pad` with pads of 0 or more: `src` (`dims`, row-major, rank 1
    /// to `plan::PAD_MAX_RANK`) sits at offset `before[d]` of every axis of
    /// `dst` (`dims[d] + before[d] + after[d]`); the positions around it
    /// take, per `mode`, `value` (one element, zero bits when `none`;
    /// `constant` only), the nearest edge element, the mirror image
    /// (`reflect`: pads below the axis length) or the source repeated
    /// (`wrap`). Elements of `elem_bytes` (1, 2, 4, 8 or 16), moved as bits.
    Pad in movement {
        src: Op<O>, value: OptOp<O>, dst: Op<O>, dims: Dims, before: Dims, after: Dims, mode: PadMode,
        elem_bytes: usize,
    }
    /// Embedding lookup: `dst[i, :] = table[indices[i], :]` with rows of
    /// `row_len` f32 from a `[vocab, row_len]` table. Indices are of
    /// `index_dtype` (i64, i32 or f32); negative ones count from the end;
    /// out-of-range ones give a zero row.
    Gather in movement { table: Op<O>, indices: Op<O>, dst: Op<O>, num_indices: usize, row_len: usize, vocab: usize, index_dtype: DType }
    /// ONNX `Gather` on a middle axis: `dst[o, j, i] = src[o, indices[j], i]`
    /// for a `[outer, axis_dim, inner]` source; index rules as `Gather`.
    GatherAxis in movement {
        src: Op<O>, indices: Op<O>, dst: Op<O>, outer: usize, axis_dim: usize, inner: usize,
        num_indices: usize, elem_bytes: usize, index_dtype: DType,
    }
    /// ONNX `GatherElements`: for every coordinate `c` of `index_dims`,
    /// `dst[c] = data[c']` where `c'` is `c` with `c'[axis] =
    /// indices[c]`. Same rank; every index dim but `axis` at most the
    /// data's. Index rules as `Gather` (an out-of-range index gives zero).
    GatherElements in gather_scatter {
        data: Op<O>, indices: Op<O>, dst: Op<O>, data_dims: Dims, index_dims: Dims, axis: usize,
        elem_bytes: usize, index_dtype: DType,
    }
    /// ONNX `GatherND`: `data` is `[batch, product(data_dims), slice_len]`,
    /// `indices` `[batch, lookups, data_dims.len()]`; each index tuple
    /// selects one slice of `slice_len` elements of its batch, which goes
    /// to `dst` `[batch, lookups, slice_len]`. Index rules as `Gather`,
    /// per tuple entry: one out-of-range entry gives a zero slice.
    GatherNd in gather_scatter {
        data: Op<O>, indices: Op<O>, dst: Op<O>, batch: usize, lookups: usize, data_dims: Dims,
        slice_len: usize, elem_bytes: usize, index_dtype: DType,
    }
    /// ONNX `ScatterElements`: `dst` is `data` (copied unless the same
    /// bytes), then for every coordinate `c` of `index_dims`, in row-major
    /// order, `dst[c'] = reduction(dst[c'], updates[c])` with `c'` as in
    /// `GatherElements`. An out-of-range index skips its update.
    ScatterElements in gather_scatter {
        data: Op<O>, indices: Op<O>, updates: Op<O>, dst: Op<O>, data_dims: Dims, index_dims: Dims,
        axis: usize, reduction: ScatterReduction, dtype: DType, index_dtype: DType,
    }
    /// ONNX `ScatterND`: `dst` is `data` `[product(data_dims), slice_len]`
    /// (copied unless the same bytes), then for each of `lookups` index
    /// tuples in order the slice it selects is combined with its row of
    /// `updates` `[lookups, slice_len]`. An out-of-range tuple skips its
    /// update.
    ScatterNd in gather_scatter {
        data: Op<O>, indices: Op<O>, updates: Op<O>, dst: Op<O>, lookups: usize, data_dims: Dims,
        slice_len: usize, reduction: ScatterReduction, dtype: DType, index_dtype: DType,
    }
    /// `out[r, :] = (x[r, :] - mean) / sqrt(var + eps) * g + b` over rows of
    /// `h`; `b: none` means no shift.
    LayerNorm in norm { x: Op<O>, g: Op<O>, b: OptOp<O>, out: Op<O>, rows: usize, h: usize, eps: f32 }
    /// `out[r, :] = x[r, :] / sqrt(mean(x^2) + eps) * g`.
    RmsNorm in norm { x: Op<O>, g: Op<O>, out: Op<O>, rows: usize, h: usize, eps: f32 }
    /// `LayerNorm(x + res + bias)`; `bias: none` adds nothing.
    FusedResidualLN in norm { x: Op<O>, res: Op<O>, bias: OptOp<O>, g: Op<O>, b: Op<O>, out: Op<O>, rows: usize, h: usize, eps: f32 }
    /// `RmsNorm(x + res + bias) + b`; `bias`/`b` may be `none`.
    FusedResidualRmsNorm in norm { x: Op<O>, res: Op<O>, bias: OptOp<O>, g: Op<O>, b: OptOp<O>, out: Op<O>, rows: usize, h: usize, eps: f32 }
    /// Per-channel `out = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c]`
    /// over an `[n, c, hw]` tensor.
    BatchNormInference in norm { x: Op<O>, scale: Op<O>, bias: Op<O>, mean: Op<O>, var: Op<O>, out: Op<O>, n: usize, c: usize, hw: usize, eps: f32 }
    /// Row softmax over `[rows, cols]`; in place when `dst == src`.
    Softmax in softmax { src: Op<O>, dst: Op<O>, rows: usize, cols: usize }
    /// Scaled dot-product attention. See `docs/sched-format.md` for layouts,
    /// masks, GQA (`kv_heads`), `softcap` and the row strides.
    Attention in attention {
        q: Op<O>, k: Op<O>, v: Op<O>, mask: OptOp<O>, out: Op<O>, batch: usize, seq: usize, kv_seq: usize,
        heads: usize, head_dim: usize, v_head_dim: usize, mask_kind: MaskKind, scale: f32,
        softcap: f32, q_row_stride: usize, k_row_stride: usize, v_row_stride: usize,
        bhsd: bool, kv_heads: usize,
    }
    /// Rotary embedding of `[batch, seq, heads, head_dim]` with `cos`/`sin`
    /// tables of `[seq, head_dim / 2]`; pairs are `(i, i + head_dim/2)`, or
    /// `(2i, 2i + 1)` when `interleaved`.
    Rope in rope { x: Op<O>, cos: Op<O>, sin: Op<O>, out: Op<O>, batch: usize, seq: usize, heads: usize, head_dim: usize, interleaved: bool }
    /// `Rope` of `[seq, heads, head_dim]` at positions `p..p + seq`, `p` the
    /// i64 in `pos` (read at run time): rows `p..p + seq` of `cos`/`sin`
    /// tables of `[max_len, head_dim / 2]`.
    RopeAt in rope { x: Op<O>, cos: Op<O>, sin: Op<O>, pos: Op<O>, out: Op<O>, seq: usize, heads: usize, head_dim: usize, max_len: usize, interleaved: bool }
    /// Causal attention of `seq` queries at positions `p..p + seq` (`p` the
    /// i64 in `pos`, read at run time) over rows `0..p + seq` of the key and
    /// value caches `k`/`v` `[max_len, kv_heads * head_dim]`; `q` rows are
    /// `q_row_stride` apart, `out` is `[seq, heads * head_dim]`.
    CachedAttention in attention {
        q: Op<O>, k: Op<O>, v: Op<O>, pos: Op<O>, out: Op<O>, seq: usize, max_len: usize, heads: usize,
        kv_heads: usize, head_dim: usize, scale: f32, q_row_stride: usize,
    }
    /// `CachedAttention` within a sliding window: query `i` (position `p +
    /// i`) sees cache rows `p + i - window ..= p + i` (itself and the
    /// `window` rows before it, as `mask_kind: sliding_window(window)`).
    SlidingCachedAttention in attention {
        q: Op<O>, k: Op<O>, v: Op<O>, pos: Op<O>, out: Op<O>, seq: usize, max_len: usize, heads: usize,
        kv_heads: usize, head_dim: usize, scale: f32, q_row_stride: usize, window: usize,
    }
    /// Reduces the middle axis of `[outer, axis_dim, inner]` to `[outer, inner]`.
    Reduce in reduce { src: Op<O>, dst: Op<O>, outer: usize, axis_dim: usize, inner: usize, op: ReduceOp }
    /// Index of the max/min along the middle axis; first occurrence unless
    /// `select_last`; written as i64 (`indices_i64`) or f32.
    ArgReduce in reduce { src: Op<O>, dst: Op<O>, outer: usize, axis_dim: usize, inner: usize, op: ArgOp, select_last: bool, indices_i64: bool }
    /// Running sum or product (`op`: `add` or `mul`) along the middle
    /// axis, of `dtype` elements (f32, or i64 with wrapping arithmetic,
    /// exact): `exclusive` starts from the identity and leaves the element
    /// itself out, `reverse` runs from the end.
    Cumulative in reduce { src: Op<O>, dst: Op<O>, outer: usize, axis_dim: usize, inner: usize, op: BinaryOp, dtype: DType, exclusive: bool, reverse: bool }
    /// The `k` largest (or smallest) of each row of `[outer, axis_dim]`:
    /// indices to `dst` (i64 or f32), values to `values` unless `none`.
    TopK in reduce { src: Op<O>, dst: Op<O>, values: OptOp<O>, outer: usize, axis_dim: usize, k: usize, largest: bool, indices_i64: bool }
    /// `TopK` of i64 data (values and ranking exact; equal values by lower
    /// index first); `values` is i64.
    TopKI64 in reduce { src: Op<O>, dst: Op<O>, values: OptOp<O>, outer: usize, axis_dim: usize, k: usize, largest: bool, indices_i64: bool }
    /// NCHW convolution with OIHW weights `[c_out, c_in/groups, kh, kw]`,
    /// stride, leading padding `ph`/`pw` (trailing padding is implied by
    /// `h_out`/`w_out`), dilation and groups; `bias: none` adds nothing;
    /// `act` applied to the result (`identity` for none).
    Conv2D in conv {
        x: Op<O>, w: Op<O>, bias: OptOp<O>, out: Op<O>, n: usize, c_in: usize, h: usize, w_in: usize,
        c_out: usize, h_out: usize, w_out: usize, kh: usize, kw: usize, sh: usize, sw: usize,
        ph: usize, pw: usize, dh: usize, dw: usize, groups: usize, act: ActKind,
    }
    /// The 8-bit integer convolution with i32 accumulation (ONNX
    /// `ConvInteger`), `Conv2D`'s geometry: `out[b, oc, oy, ox]` is the sum
    /// over the window of `(x - x_zero) * (w[oc, ..] - w_zero)`, positions
    /// outside `x` contributing 0 (padding with the zero point). `x` and
    /// `x_zero` are `x_dtype`, `w` and `w_zero` `w_dtype` (u8 or i8);
    /// `x_zero` is one element, `w_zero` one (`w_zero_len` 1) or one per
    /// output channel (`c_out`); `none` is 0. `out` is i32, wrapping as
    /// i32 accumulation does.
    IntConv2D in quant {
        x: Op<O>, w: Op<O>, x_zero: OptOp<O>, w_zero: OptOp<O>, out: Op<O>, n: usize, c_in: usize, h: usize,
        w_in: usize, c_out: usize, h_out: usize, w_out: usize, kh: usize, kw: usize, sh: usize, sw: usize,
        ph: usize, pw: usize, dh: usize, dw: usize, groups: usize, x_dtype: DType, w_dtype: DType, w_zero_len: usize,
    }
    /// ONNX `QLinearConv` with its requantization fused (one group or
    /// depthwise, u8 activations, i8 weights, constant scales): `out[b, oc,
    /// oy, ox] = saturate(round_half_even(f32(sum + bias[oc]) * scale[oc])
    /// + zero)`, `Requantize`'s steps, where `sum` runs over the window and
    /// the group's input channels of `xp * w[oc, ic, ky, kx]`, `xp` being
    /// `x` inside the image and `x_pad` (0 to 255) outside. The sum is of
    /// raw values: the importer folds `-x_zero * sum(w[oc])` into `bias`
    /// and pads with `x_zero`, which gives `QLinearConv`'s `(x - x_zero) *
    /// w`. `x` and `out` are u8 NCHW with `Conv2D`'s geometry (`groups` 1,
    /// or `c_in` and `c_out`); `w` is i8 packed by
    /// `rlx_core::qconv::pack_qconv_filter` (with the group's `c_in /
    /// groups` input channels); `bias` i32 per output channel (0 when
    /// `none`; the sum wraps in i32); `scale` f32, one (`scale_len` 1) or
    /// per output channel; `zero` one u8 (0 when `none`). With `x_nhwc`
    /// `x` is channels last (`[n, h, w_in, c_in]`), with `out_nhwc` `out`
    /// is (`[n, h_out, w_out, c_out]`): the importer chains convolutions
    /// that way, with no transposition between them.
    QLinearConv2D in quant {
        x: Op<O>, w: Op<O>, bias: OptOp<O>, scale: Op<O>, zero: OptOp<O>, out: Op<O>, n: usize, c_in: usize,
        h: usize, w_in: usize, c_out: usize, h_out: usize, w_out: usize, kh: usize, kw: usize, sh: usize,
        sw: usize, ph: usize, pw: usize, dh: usize, dw: usize, groups: usize, x_pad: usize, scale_len: usize,
        x_nhwc: bool, out_nhwc: bool,
    }
    /// Sums column rows into an NCHW image (the adjoint of im2col): row
    /// `(ch * kh + ki) * kw + kj` of batch `b`'s `[c * kh * kw, h_cols *
    /// w_cols]` columns adds its value at `(iy, ix)` to pixel `(iy * sh -
    /// ph + ki * dh, ix * sw - pw + kj * dw)` of channel `ch` when inside;
    /// every pixel starts at `bias[ch]` (0 with `bias: none`).
    Col2Im in conv {
        src: Op<O>, bias: OptOp<O>, dst: Op<O>, n: usize, c: usize, h: usize, w: usize, h_cols: usize,
        w_cols: usize, kh: usize, kw: usize, sh: usize, sw: usize, ph: usize, pw: usize, dh: usize, dw: usize,
    }
    /// Resizes the middle axis of `[outer, in_len, inner]` to `out_len`
    /// (ONNX `Resize` along one axis; several axes are several thunks):
    /// output index `o` maps to source coordinate `x` by `coord` with
    /// `scale` (with `by_size`, the exact ratio `out_len / in_len` instead,
    /// as ONNX `sizes` define it; `tf_crop_and_resize` with the axis'
    /// `roi_start`/`roi_end`, an `x` outside the source giving
    /// `extrapolation`), then `mode` reads the nearest source, interpolates
    /// the two around `x`, or the four of a cubic (`cubic_a`); with
    /// `antialias`, a downscale widens the linear or cubic filter by
    /// `1 / scale`; `exclude_outside` drops the taps outside the source and
    /// renormalizes, otherwise neighbours outside `[0, in_len)` are the edge
    /// ones.
    Resize in movement {
        src: Op<O>, dst: Op<O>, outer: usize, in_len: usize, out_len: usize, inner: usize, scale: f32,
        by_size: bool, mode: ResizeMode, coord: ResizeCoord, cubic_a: f32, exclude_outside: bool,
        antialias: bool, roi_start: f32, roi_end: f32, extrapolation: f32,
    }
    /// ONNX `GridSample`: `src` `[n, c, in_dims...]` (1 to 3 spatial
    /// axes) read at the points of `grid` `[n, out_dims..., rank]` into
    /// `dst` `[n, c, out_dims...]`. A point's coordinates are normalised to
    /// `[-1, 1]`, last spatial axis first (`x`, then `y`, then `z`), and
    /// mapped to source positions by `align_corners` (`-1`/`1` are the
    /// corner samples' centres, else their outer edges); `padding` says
    /// what lies outside and `mode` how the samples around a point are
    /// combined. Rules in `docs/kernels/sample.md`.
    GridSample in sample {
        src: Op<O>, grid: Op<O>, dst: Op<O>, n: usize, c: usize, in_dims: Dims, out_dims: Dims,
        mode: GridSampleMode, padding: GridSamplePadding, align_corners: bool,
    }
    /// NCHW max / mean pooling. Window positions outside the input
    /// (padding, or a ceil-mode overhang) are skipped; `mean` divides by the
    /// real elements, or with `count_include_pad` by the window positions
    /// inside the padded input.
    Pool2D in pool {
        src: Op<O>, dst: Op<O>, n: usize, c: usize, h: usize, w: usize, h_out: usize, w_out: usize,
        kh: usize, kw: usize, sh: usize, sw: usize, ph: usize, pw: usize, kind: PoolKind,
        count_include_pad: bool,
    }
    /// Convolution in the blocked channel layout (`x` `[n, ceil(c_in/16),
    /// h, w_in, 16]`, `out` likewise; `rlx_core::blocked`): one group with a
    /// filter packed by `pack_conv_filter`, or depthwise (`groups == c_in ==
    /// c_out`) with one packed by `pack_depthwise_filter`; `bias` padded to
    /// whole blocks. Same fields and bits as `Conv2D`; with `x_nchw`, `x`
    /// is NCHW instead (one group only: a network's first layer). A
    /// `residual` (one group only; blocked, shaped as `out`) is added to
    /// the convolution's result before `act`, rounding as a separate `Add`.
    BlockedConv2D in conv {
        x: Op<O>, w: Op<O>, bias: OptOp<O>, residual: OptOp<O>, out: Op<O>, n: usize, c_in: usize, h: usize, w_in: usize,
        c_out: usize, h_out: usize, w_out: usize, kh: usize, kw: usize, sh: usize, sw: usize,
        ph: usize, pw: usize, dh: usize, dw: usize, groups: usize, act: ActKind, x_nchw: bool,
    }
    /// `BlockedConv2D` of one group with its packed filter stored in 16-bit
    /// floats: `w_dtype` is `f16` or `bf16`, widened to f32 a pass at a
    /// time as the kernel reads it (f32 compute, the bits of
    /// `BlockedConv2D` over the widened filter, half the filter bytes).
    /// One pass's slice of the filter must fit the kernel's widening
    /// buffer (`rlx_core::blocked::half_filter_fits`).
    BlockedConv2DHalf in conv {
        x: Op<O>, w: Op<O>, bias: OptOp<O>, residual: OptOp<O>, out: Op<O>, n: usize, c_in: usize, h: usize, w_in: usize,
        c_out: usize, h_out: usize, w_out: usize, kh: usize, kw: usize, sh: usize, sw: usize,
        ph: usize, pw: usize, dh: usize, dw: usize, act: ActKind, x_nchw: bool, w_dtype: DType,
    }
    /// `BlockedConv2D` of one group with a 3x3 window, stride 1 and no
    /// dilation (leading padding at most 2, trailing at most 2: the shapes
    /// `rlx_core::winograd::winograd_applies` takes) by Winograd F(4x4,
    /// 3x3): `w` transformed by `transform_winograd_filter`
    /// (`[36, ceil(c_out/16), c_in, 16]`). Other fields as
    /// `BlockedConv2D`; rounds differently from it (a bound in
    /// `docs/kernels/conv-winograd.md`).
    WinogradConv2D in conv {
        x: Op<O>, w: Op<O>, bias: OptOp<O>, residual: OptOp<O>, out: Op<O>, n: usize, c_in: usize, h: usize,
        w_in: usize, c_out: usize, h_out: usize, w_out: usize, ph: usize, pw: usize, act: ActKind,
    }
    /// `Pool2D` in the blocked channel layout.
    BlockedPool2D in pool {
        src: Op<O>, dst: Op<O>, n: usize, c: usize, h: usize, w: usize, h_out: usize, w_out: usize,
        kh: usize, kw: usize, sh: usize, sw: usize, ph: usize, pw: usize, kind: PoolKind,
        count_include_pad: bool,
    }
    /// Converts `[n, c, hw]` into the blocked channel layout (padded lanes
    /// zero).
    ToBlocked in movement { src: Op<O>, dst: Op<O>, n: usize, c: usize, hw: usize }
    /// Converts a blocked `[n, c, hw]` back to NCHW.
    FromBlocked in movement { src: Op<O>, dst: Op<O>, n: usize, c: usize, hw: usize }
    /// One direction of an ONNX recurrent layer over a whole sequence:
    /// `cell` is `lstm` (gates `i, o, f, c`), `gru` or
    /// `gru_linear_before_reset` (`z, r, h`) or `rnn` (one gate), `G`
    /// gates of `hidden` units each. `x` holds the input projections with
    /// their biases, `X W^T + Wb (+ Rb)`, for every step, batch row and
    /// direction: `[seq, batch, dirs, G * hidden]` (`[batch, seq, ...]`
    /// when `batch_major`); this thunk reads direction `dir`'s columns.
    /// `r` is this direction's `R^T` packed (`RecurrentCell::packed_r_len`),
    /// `bias` (`[G * hidden]`, optional) is added to the product `H R^T`,
    /// `p` the LSTM's peepholes `[3 * hidden]` (`i, o, f`). States `h0`,
    /// `c0` (LSTM) and `y_h`, `y_c` (LSTM) are `[dirs, batch, hidden]`
    /// (`[batch, dirs, hidden]` when `batch_major`), `y` is `[seq, dirs,
    /// batch, hidden]` (`[batch, seq, dirs, hidden]`); the thunk reads and
    /// writes only direction `dir` of each. A missing initial state is
    /// zero; a missing output is not written. Steps run from the last to
    /// the first when `reverse`. Gate pre-activations are clamped to
    /// `[-clip, clip]` (`inf`: no clamp); `act_f`, `act_g`, `act_h` are
    /// ONNX's `f`, `g`, `h` (an RNN uses `act_f` only, a GRU `act_f` and
    /// `act_g`). Equations in `docs/kernels/recurrent.md`.
    Recurrent in recurrent {
        x: Op<O>, r: Op<O>, bias: OptOp<O>, p: OptOp<O>, h0: OptOp<O>, c0: OptOp<O>, y: OptOp<O>,
        y_h: OptOp<O>, y_c: OptOp<O>, cell: RecurrentCell, seq: usize, batch: usize, hidden: usize,
        dirs: usize, dir: usize, reverse: bool, batch_major: bool, clip: f32, act_f: ActKind,
        act_g: ActKind, act_h: ActKind,
    }
    /// Writes `src` `[batch, new_len, row]` into `cache` `[batch, max_len, row]`
    /// at sequence position `pos`.
    KvAppend in movement { src: Op<O>, cache: Op<O>, batch: usize, new_len: usize, max_len: usize, row: usize, pos: usize, elem_bytes: usize }
    /// Writes `src` `[new_len, row]` into rows `p..p + new_len` of `cache`
    /// `[max_len, row]`, where `p` is the i64 in `pos`, read at run time (a
    /// decoder step's position input).
    KvWrite in movement { src: Op<O>, cache: Op<O>, pos: Op<O>, new_len: usize, max_len: usize, row: usize, elem_bytes: usize }
    /// Does nothing.
    Nop in movement {}
        }
    };
}

thunk_table!(define_thunks);
