//! The parameter structs and path enums kernels take.
//!
//! They live here, not in `rlx-runtime`, because the lowering builds them
//! (`crate::lower`) and the code generator prints them; `rlx-runtime`
//! re-exports each at the path generated code names.

use crate::expr::{unit_variants, ConstExpr, Expr};
use crate::ops::{ActKind, MaskKind, RecurrentCell, ResizeCoord, ResizeMode};

/// A struct whose generated-code form is a struct literal at `$path`.
macro_rules! const_struct {
    ($path:literal $(#[$m:meta])* pub struct $name:ident { $( $(#[$fm:meta])* pub $field:ident : $ty:ty ),* $(,)? }) => {
        $(#[$m])*
        pub struct $name { $( $(#[$fm])* pub $field: $ty ),* }

        impl ConstExpr for $name {
            fn const_expr(&self) -> Expr {
                Expr::Struct($path, vec![$( (stringify!($field), self.$field.const_expr()) ),*])
            }
        }
    };
}

const_struct! {
    "::rlx_runtime::kernels::conv::Conv2dShape"
    /// The `Conv2D` thunk's sizes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Conv2dShape {
        /// Images.
        pub n: usize,
        pub c_in: usize,
        pub h: usize,
        pub w_in: usize,
        pub c_out: usize,
        pub h_out: usize,
        pub w_out: usize,
        pub kh: usize,
        pub kw: usize,
        pub sh: usize,
        pub sw: usize,
        /// Leading padding.
        pub ph: usize,
        pub pw: usize,
        /// Dilation.
        pub dh: usize,
        pub dw: usize,
        pub groups: usize,
    }
}

/// `shape()` of the convolution kinds that carry every field of
/// [`Conv2dShape`] under the same names.
macro_rules! conv_shape {
    ($($kind:ident),*) => {$(
        impl<O> crate::thunk::$kind<O> {
            /// The convolution's geometry.
            pub fn shape(&self) -> Conv2dShape {
                let crate::thunk::$kind { n, c_in, h, w_in, c_out, h_out, w_out, kh, kw, sh, sw, ph, pw, dh, dw, groups, .. } = *self;
                Conv2dShape { n, c_in, h, w_in, c_out, h_out, w_out, kh, kw, sh, sw, ph, pw, dh, dw, groups }
            }
        }
    )*};
}

conv_shape!(Conv2D, BlockedConv2D, IntConv2D, QLinearConv2D);

impl<O> crate::thunk::BlockedConv2DHalf<O> {
    /// The convolution's geometry (always one group).
    pub fn shape(&self) -> Conv2dShape {
        let crate::thunk::BlockedConv2DHalf {
            n,
            c_in,
            h,
            w_in,
            c_out,
            h_out,
            w_out,
            kh,
            kw,
            sh,
            sw,
            ph,
            pw,
            dh,
            dw,
            ..
        } = *self;
        Conv2dShape { n, c_in, h, w_in, c_out, h_out, w_out, kh, kw, sh, sw, ph, pw, dh, dw, groups: 1 }
    }
}

impl<O> crate::thunk::Resize<O> {
    /// The resize's geometry and sampling rule, as its kernel takes them.
    pub fn shape(&self) -> ResizeShape {
        let crate::thunk::Resize {
            outer,
            in_len,
            out_len,
            inner,
            scale,
            by_size,
            mode,
            coord,
            cubic_a,
            exclude_outside,
            antialias,
            roi_start,
            roi_end,
            extrapolation,
            ..
        } = *self;
        ResizeShape {
            outer,
            in_len,
            out_len,
            inner,
            scale,
            by_size,
            mode,
            coord,
            cubic_a,
            exclude_outside,
            antialias,
            roi_start,
            roi_end,
            extrapolation,
        }
    }
}

impl<O> crate::thunk::Attention<O> {
    /// The attention's geometry.
    pub fn shape(&self) -> AttentionShape {
        let crate::thunk::Attention {
            batch,
            seq,
            kv_seq,
            heads,
            kv_heads,
            head_dim,
            v_head_dim,
            q_row_stride,
            k_row_stride,
            v_row_stride,
            bhsd,
            ..
        } = *self;
        AttentionShape {
            batch,
            seq,
            kv_seq,
            heads,
            kv_heads,
            head_dim,
            v_head_dim,
            q_row_stride,
            k_row_stride,
            v_row_stride,
            bhsd,
        }
    }
}

impl<O> crate::thunk::CachedAttention<O> {
    /// The geometry at the longest cache: the path and the scratch are
    /// fixed for it at gen time; each run narrows `kv_seq` to the rows
    /// written so far, which either path computes the same way.
    pub fn shape(&self) -> AttentionShape {
        let crate::thunk::CachedAttention { seq, max_len, heads, kv_heads, head_dim, q_row_stride, .. } = *self;
        cached_attention_shape(seq, max_len, heads, kv_heads, head_dim, q_row_stride)
    }
}

impl<O> crate::thunk::SlidingCachedAttention<O> {
    /// As `CachedAttention::shape`: each run narrows the rows further, to
    /// those inside the window.
    pub fn shape(&self) -> AttentionShape {
        let crate::thunk::SlidingCachedAttention { seq, max_len, heads, kv_heads, head_dim, q_row_stride, .. } = *self;
        cached_attention_shape(seq, max_len, heads, kv_heads, head_dim, q_row_stride)
    }
}

/// A decoder step's attention over a whole `[max_len, kv_heads *
/// head_dim]` cache.
fn cached_attention_shape(
    seq: usize,
    max_len: usize,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    q_row_stride: usize,
) -> AttentionShape {
    let kv_row = kv_heads.saturating_mul(head_dim);
    AttentionShape {
        batch: 1,
        seq,
        kv_seq: max_len,
        heads,
        kv_heads,
        head_dim,
        v_head_dim: head_dim,
        q_row_stride,
        k_row_stride: kv_row,
        v_row_stride: kv_row,
        bhsd: false,
    }
}

impl<O> crate::thunk::Thunk<O> {
    /// The shape of a 2-D convolution thunk (`Conv2D`, `BlockedConv2D`,
    /// `BlockedConv2DHalf`, `IntConv2D`, `QLinearConv2D`); `None` for any
    /// other kind.
    pub fn conv2d_shape(&self) -> Option<Conv2dShape> {
        use crate::thunk::Thunk;
        match self {
            Thunk::Conv2D(t) => Some(t.shape()),
            Thunk::BlockedConv2D(t) => Some(t.shape()),
            Thunk::IntConv2D(t) => Some(t.shape()),
            Thunk::QLinearConv2D(t) => Some(t.shape()),
            Thunk::BlockedConv2DHalf(t) => Some(t.shape()),
            _ => None,
        }
    }
}

impl Conv2dShape {
    /// The shape of a `WinogradConv2D`: a 3x3 window, stride 1, no
    /// dilation, one group.
    pub fn winograd(
        n: usize,
        c_in: usize,
        (h, w_in): (usize, usize),
        c_out: usize,
        (h_out, w_out): (usize, usize),
        (ph, pw): (usize, usize),
    ) -> Conv2dShape {
        Conv2dShape {
            n,
            c_in,
            h,
            w_in,
            c_out,
            h_out,
            w_out,
            kh: 3,
            kw: 3,
            sh: 1,
            sw: 1,
            ph,
            pw,
            dh: 1,
            dw: 1,
            groups: 1,
        }
    }

    pub fn c_in_g(&self) -> usize {
        self.c_in / self.groups.max(1)
    }

    pub fn c_out_g(&self) -> usize {
        self.c_out / self.groups.max(1)
    }

    /// Rows of the unfolded patch matrix (one group's reduction length).
    pub fn patch_len(&self) -> usize {
        self.c_in_g() * self.kh * self.kw
    }

    pub fn out_plane(&self) -> usize {
        self.h_out * self.w_out
    }

    /// The grid the convolution's product runs on (`kernels::conv`), or
    /// `None` when a size overflows.
    pub fn grid(&self) -> Option<ConvGrid> {
        let pitch = self.w_out.checked_add(self.kw.saturating_sub(1).checked_mul(self.dw)? / self.sw.max(1))?;
        let rows = self.h_out.checked_add(self.kh.saturating_sub(1).checked_mul(self.dh)? / self.sh.max(1))?;
        Some(ConvGrid {
            pitch,
            cols: self.h_out.checked_mul(pitch)?,
            plane_len: rows.checked_add(1)?.checked_mul(pitch)?,
            phases: self.sh.checked_mul(self.sw)?,
        })
    }
}

/// A convolution's output on a grid of `h_out` rows of `pitch >= w_out`
/// columns, flattened: column `f = ho * pitch + wo` of the product. The
/// input is split into `phases = sh * sw` zero-padded phase planes (phase
/// `(a, b)` holds padded input rows `r * sh + a` and columns `c * sw + b`,
/// `plane_len` values at row pitch `pitch`), so that each window position
/// `(ki, kj)` reads a contiguous run of one phase plane for every `f`:
/// the patch matrix is never built, only sliced pass by pass. Columns
/// `wo >= w_out` are computed and dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvGrid {
    /// Columns per grid row: `w_out + (kw - 1) * dw / sw`.
    pub pitch: usize,
    /// Columns of the product: `h_out * pitch`.
    pub cols: usize,
    /// Values per phase plane: `(h_out + (kh - 1) * dh / sh + 1) * pitch`.
    pub plane_len: usize,
    /// Phase planes per input channel: `sh * sw`.
    pub phases: usize,
}

/// How a `Conv2D` runs; decided by [`crate::plan::conv2d_path`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvPath {
    /// One GEMM per image and group on the phase-plane grid
    /// ([`Conv2dShape::grid`]): the input split once into phase planes in
    /// scratch, each pass's patches sliced from them.
    PhaseGemm,
    /// One GEMM per image and group, each pass's patches unfolded from the
    /// input (outputs too narrow for the grid's extra columns).
    Im2colGemm,
    /// 1x1, stride 1, no padding, same size: one GEMM per image and group
    /// on the input itself.
    Pointwise,
    /// One filter per channel: direct multiply-adds.
    Depthwise,
}

const_struct! {
    "::rlx_runtime::kernels::attention::AttentionShape"
    /// Sizes and layout of one attention call (the `Attention` thunk's
    /// fields).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct AttentionShape {
        pub batch: usize,
        /// Query rows.
        pub seq: usize,
        /// Key / value rows.
        pub kv_seq: usize,
        /// Query heads.
        pub heads: usize,
        /// Key / value heads; `heads / kv_heads` query heads share one (GQA).
        /// 0 is read as 1, so a kernel never divides by it (the validator
        /// rejects 0 anyway).
        pub kv_heads: usize,
        pub head_dim: usize,
        /// Width of a V head and of an output head.
        pub v_head_dim: usize,
        /// Elements between consecutive query rows (BSHD only).
        pub q_row_stride: usize,
        pub k_row_stride: usize,
        pub v_row_stride: usize,
        /// Dense `[batch, heads, rows, dim]` layout instead of BSHD.
        pub bhsd: bool,
    }
}

impl AttentionShape {
    /// Query heads per KV head, at least 1 whatever the fields hold.
    pub fn group(&self) -> usize {
        (self.heads / self.kv_heads.max(1)).max(1)
    }
}

const_struct! {
    "::rlx_runtime::kernels::attention::AttentionScores"
    /// How scores become probabilities: the thunk's mask kind, scale and
    /// softcap, and the schedule-level mask and skip parameters.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct AttentionScores {
        pub mask_kind: MaskKind,
        pub scale: f32,
        /// Logit cap; `<= 0` disables it.
        pub softcap: f32,
        /// A `Custom` mask entry below this hides the key.
        pub mask_threshold: f32,
        /// The score a `Custom` mask gives a hidden key.
        pub mask_neg_inf: f32,
        /// Value rows whose probability is not above this are skipped.
        pub score_skip: f32,
    }
}

/// How the two matrix products of one (batch, head) are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttentionPath {
    /// Strided SIMD dot products for `QK^T` and axpys for `PV`, skipping
    /// value rows with `p <= score_skip`. No call overhead: best for tiny
    /// heads.
    Direct,
    /// `crate::blas::sgemm` for both products. Probabilities `<=
    /// score_skip` (and NaN ones) are zeroed before the `PV` product, which
    /// is the same function as skipping the rows.
    Gemm,
}

const_struct! {
    "::rlx_runtime::kernels::pool::Pool2dShape"
    /// The `Pool2D` thunk's sizes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Pool2dShape {
        /// Images.
        pub n: usize,
        pub c: usize,
        pub h: usize,
        pub w: usize,
        pub h_out: usize,
        pub w_out: usize,
        pub kh: usize,
        pub kw: usize,
        pub sh: usize,
        pub sw: usize,
        /// Leading padding.
        pub ph: usize,
        pub pw: usize,
    }
}

const_struct! {
    "::rlx_runtime::kernels::movement::ResizeShape"
    /// The `Resize` thunk's fields other than its operands (see the thunk
    /// table for their meaning).
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct ResizeShape {
        pub outer: usize,
        pub in_len: usize,
        pub out_len: usize,
        pub inner: usize,
        pub scale: f32,
        pub by_size: bool,
        pub mode: ResizeMode,
        pub coord: ResizeCoord,
        pub cubic_a: f32,
        pub exclude_outside: bool,
        pub antialias: bool,
        pub roi_start: f32,
        pub roi_end: f32,
        pub extrapolation: f32,
    }
}

const_struct! {
    "::rlx_runtime::kernels::conv::Col2ImShape"
    /// The `Col2Im` thunk's sizes: the image (`n, c, h, w`), the column
    /// grid (`h_cols, w_cols`), the window, stride, leading padding and
    /// dilation.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Col2ImShape {
        pub n: usize,
        pub c: usize,
        pub h: usize,
        pub w: usize,
        pub h_cols: usize,
        pub w_cols: usize,
        pub kh: usize,
        pub kw: usize,
        pub sh: usize,
        pub sw: usize,
        pub ph: usize,
        pub pw: usize,
        pub dh: usize,
        pub dw: usize,
    }
}

const_struct! {
    "::rlx_runtime::kernels::recurrent::RecurrentShape"
    /// The `Recurrent` thunk's fields other than its operands: the cell,
    /// the sizes, which direction of how many, the layout, the clip and the
    /// activations.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct RecurrentShape {
        pub cell: RecurrentCell,
        pub seq: usize,
        pub batch: usize,
        pub hidden: usize,
        /// Directions the operands hold (1, or 2 when bidirectional).
        pub dirs: usize,
        /// The direction this call computes (`< dirs`).
        pub dir: usize,
        /// Walk the sequence from its last step to its first.
        pub reverse: bool,
        /// ONNX `layout = 1`: batch before sequence in `x` and `y`, and
        /// before directions in the states.
        pub batch_major: bool,
        /// Gate pre-activations are clamped to `[-clip, clip]`; `inf`
        /// clamps nothing.
        pub clip: f32,
        /// The gate activation (`f` of ONNX), the candidate's (`g`) and the
        /// cell output's (`h`, LSTM only).
        pub act_f: ActKind,
        pub act_g: ActKind,
        pub act_h: ActKind,
    }
}

impl RecurrentShape {
    /// Columns of gate values per batch row: `gates * hidden`.
    pub fn gate_cols(&self) -> usize {
        self.cell.gates() * self.hidden
    }

    /// Temporary rows of `hidden` values per batch row besides the gates:
    /// the state `H`, and for an LSTM the cell `C` and `h(C)`, for a GRU
    /// `r (.) H` or the `h` product.
    pub fn extra_rows(cell: RecurrentCell) -> usize {
        match cell {
            RecurrentCell::Lstm => 3,
            RecurrentCell::Gru | RecurrentCell::GruLinearBeforeReset => 2,
            RecurrentCell::Rnn => 1,
        }
    }

    /// f32 of scratch one call uses: `batch * hidden * (gates +
    /// extra_rows)`; `None` on overflow.
    pub fn scratch_elems(cell: RecurrentCell, batch: usize, hidden: usize) -> Option<usize> {
        batch.checked_mul(hidden)?.checked_mul(cell.gates() + Self::extra_rows(cell))
    }
}

unit_variants!(ConvPath at "::rlx_runtime::kernels::conv::ConvPath" { PhaseGemm, Im2colGemm, Pointwise, Depthwise });
unit_variants!(AttentionPath at "::rlx_runtime::kernels::attention::AttentionPath" { Direct, Gemm });
