//! One kernel call per thunk. The `match` has no `_` arm: a new thunk kind
//! does not compile until it is emitted here.

mod attention;
mod cast;
mod conv;
mod elementwise;
mod gemm;
mod movement;
mod norm;
mod reduce;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use rlx_sched::{ActKind, DType, Node, Thunk};

pub(crate) use super::ctx::{f32_lit, lit};
use super::Ctx;

/// A list of `usize` literals: `1, 2, 3`.
pub(crate) fn lits(v: &[usize]) -> TokenStream {
    let items = v.iter().map(|&x| lit(x));
    quote!(#(#items),*)
}

/// An activation as a constant expression.
pub(crate) fn act(a: ActKind) -> TokenStream {
    let variant = format_ident!("{}", variant_name(a));
    match a {
        ActKind::LeakyRelu { alpha } | ActKind::Elu { alpha } => {
            let alpha = f32_lit(alpha);
            quote!(::rlx_runtime::ActKind::#variant { alpha: #alpha })
        }
        ActKind::HardSigmoid { alpha, beta } => {
            let (a, b) = (f32_lit(alpha), f32_lit(beta));
            quote!(::rlx_runtime::ActKind::#variant { alpha: #a, beta: #b })
        }
        ActKind::Clip { min, max } => {
            let (lo, hi) = (f32_lit(min), f32_lit(max));
            quote!(::rlx_runtime::ActKind::#variant { min: #lo, max: #hi })
        }
        _ => quote!(::rlx_runtime::ActKind::#variant),
    }
}

/// `leaky_relu` → `LeakyRelu`.
fn variant_name(a: ActKind) -> String {
    a.name()
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next().map_or(String::new(), |f| f.to_ascii_uppercase().to_string() + c.as_str())
        })
        .collect()
}

/// The call (or fused loop) for one thunk.
pub(crate) fn emit_thunk(cx: &Ctx<'_>, node: &Node) -> TokenStream {
    use DType::*;
    match &node.thunk {
        Thunk::Sgemm { a, b, c, m, k, n } => gemm::sgemm(cx, a, b, c, *m, *k, *n),
        Thunk::SgemmT { a, b, c, m, k, n, ta, tb } => gemm::sgemm_t(cx, a, b, c, *m, *k, *n, *ta, *tb),
        Thunk::SgemmF16 { a, b, c, m, k, n } => gemm::sgemm_half(cx, false, a, b, c, *m, *k, *n),
        Thunk::SgemmBf16 { a, b, c, m, k, n } => gemm::sgemm_half(cx, true, a, b, c, *m, *k, *n),
        Thunk::BatchedSgemm { a, b, c, batch, m, k, n, a_bcast, b_bcast } => {
            gemm::batched(cx, a, b, c, *batch, *m, *k, *n, *a_bcast, *b_bcast)
        }
        Thunk::FusedMmBiasAct { a, w, bias, c, m, k, n, act } => {
            gemm::fused_mm_bias_act(cx, a, w, bias, c, *m, *k, *n, *act)
        }
        Thunk::BiasAdd { src, bias, dst, rows, cols } => gemm::bias_add(cx, src, bias, dst, *rows, *cols),
        Thunk::BinaryFull {
            lhs,
            rhs,
            dst,
            len,
            lhs_len,
            rhs_len,
            op,
            out_dims_bcast,
            bcast_lhs_strides,
            bcast_rhs_strides,
            elem_bytes,
        } => elementwise::binary_full(
            cx,
            lhs,
            rhs,
            dst,
            *len,
            *lhs_len,
            *rhs_len,
            *op,
            out_dims_bcast,
            bcast_lhs_strides,
            bcast_rhs_strides,
            *elem_bytes,
        ),
        Thunk::ElementwiseRegion { inputs, dst, len, steps } => elementwise::region(cx, inputs, dst, *len, steps),
        Thunk::ActivationInPlace { data, len, act } => elementwise::activation(cx, data, None, *len, *act),
        Thunk::Activation { src, dst, len, act } => elementwise::activation(cx, src, Some(dst), *len, *act),
        Thunk::Fma { a, b, c, dst, len, elem_bytes } => elementwise::fma(cx, [a, b, c, dst], *len, *elem_bytes),
        Thunk::Compare {
            lhs,
            rhs,
            dst,
            len,
            op,
            inputs_i64,
            inputs_elem_bytes,
            dst_elem_bytes,
            lhs_scalar,
            rhs_scalar,
            lhs_len: _,
            rhs_len: _,
            out_dims_bcast,
            bcast_lhs_strides,
            bcast_rhs_strides,
        } => elementwise::compare(
            cx,
            lhs,
            rhs,
            dst,
            *len,
            *op,
            *inputs_i64,
            *inputs_elem_bytes,
            *dst_elem_bytes,
            (*lhs_scalar, *rhs_scalar),
            out_dims_bcast,
            bcast_lhs_strides,
            bcast_rhs_strides,
        ),
        Thunk::Where {
            cond,
            on_true,
            on_false,
            dst,
            len,
            elem_bytes,
            cond_elem_bytes,
            cond_scalar,
            true_scalar,
            false_scalar,
        } => elementwise::select(
            cx,
            cond,
            on_true,
            on_false,
            dst,
            *len,
            *elem_bytes,
            *cond_elem_bytes,
            (*cond_scalar, *true_scalar, *false_scalar),
        ),
        Thunk::CastF32ToI64 { src, dst, len } => cast::named(cx, src, dst, *len, F32, I64),
        Thunk::CastF32ToF64 { src, dst, len } => cast::named(cx, src, dst, *len, F32, F64),
        Thunk::CastF64ToF32 { src, dst, len } => cast::named(cx, src, dst, *len, F64, F32),
        Thunk::CastF64ToI64 { src, dst, len } => cast::named(cx, src, dst, *len, F64, I64),
        Thunk::CastF64ToI32 { src, dst, len } => cast::named(cx, src, dst, *len, F64, I32),
        Thunk::CastF64ToBool { src, dst, len } => cast::named(cx, src, dst, *len, F64, Bool),
        Thunk::CastI64ToI32 { src, dst, len } => cast::named(cx, src, dst, *len, I64, I32),
        Thunk::CastI64ToF64 { src, dst, len } => cast::named(cx, src, dst, *len, I64, F64),
        Thunk::CastI32ToF64 { src, dst, len } => cast::named(cx, src, dst, *len, I32, F64),
        Thunk::CastF32ToF16 { src, dst, len } => cast::named(cx, src, dst, *len, F32, F16),
        Thunk::CastF16ToF32 { src, dst, len } => cast::named(cx, src, dst, *len, F16, F32),
        Thunk::CastF32ToBf16 { src, dst, len } => cast::named(cx, src, dst, *len, F32, Bf16),
        Thunk::CastBf16ToF32 { src, dst, len } => cast::named(cx, src, dst, *len, Bf16, F32),
        Thunk::CastF32ToI32 { src, dst, len } => cast::named(cx, src, dst, *len, F32, I32),
        Thunk::CastI64ToF32 { src, dst, len } => cast::named(cx, src, dst, *len, I64, F32),
        Thunk::CastBoolToI32 { src, dst, len } => cast::named(cx, src, dst, *len, Bool, I32),
        Thunk::CastI32ToF32 { src, dst, len } => cast::named(cx, src, dst, *len, I32, F32),
        Thunk::CastI32ToI64 { src, dst, len } => cast::named(cx, src, dst, *len, I32, I64),
        Thunk::CastI32ToBool { src, dst, len } => cast::named(cx, src, dst, *len, I32, Bool),
        Thunk::CastI64ToBool { src, dst, len } => cast::named(cx, src, dst, *len, I64, Bool),
        Thunk::CastBoolToI64 { src, dst, len } => cast::named(cx, src, dst, *len, Bool, I64),
        Thunk::CastBoolToF32 { src, dst, len } => cast::named(cx, src, dst, *len, Bool, F32),
        Thunk::CastF32ToBool { src, dst, len } => cast::named(cx, src, dst, *len, F32, Bool),
        Thunk::CastGeneric { src, dst, len, src_dtype, dst_dtype } => {
            cast::generic(cx, src, dst, *len, *src_dtype, *dst_dtype)
        }
        Thunk::Copy { src, dst, len } => movement::copy(cx, src, dst, *len, "f32"),
        Thunk::CopyF64 { src, dst, len } => movement::copy(cx, src, dst, *len, "f64"),
        Thunk::CopyI64 { src, dst, len } => movement::copy(cx, src, dst, *len, "i64"),
        Thunk::Narrow { src, dst, outer, src_stride, dst_stride, inner, elem_bytes } => {
            movement::narrow(cx, src, dst, *outer, *src_stride, *dst_stride, *inner, *elem_bytes)
        }
        Thunk::Transpose { src, dst, in_total, out_dims, in_strides, elem_bytes } => {
            movement::transpose(cx, src, dst, *in_total, out_dims, in_strides, *elem_bytes)
        }
        Thunk::Concat { inputs, dst, outer, inner, elem_bytes } => {
            movement::concat(cx, inputs, dst, *outer, inner, *elem_bytes)
        }
        Thunk::Gather { table, indices, dst, num_indices, row_len, vocab, index_dtype } => {
            movement::gather(cx, table, indices, dst, *num_indices, *row_len, *vocab, *index_dtype)
        }
        Thunk::GatherAxis { src, indices, dst, outer, axis_dim, inner, num_indices, elem_bytes, index_dtype } => {
            movement::gather_axis(
                cx,
                src,
                indices,
                dst,
                *outer,
                *axis_dim,
                *inner,
                *num_indices,
                *elem_bytes,
                *index_dtype,
            )
        }
        Thunk::LayerNorm { x, g, b, out, rows, h, eps } => norm::layer_norm(cx, x, g, b, out, *rows, *h, *eps),
        Thunk::RmsNorm { x, g, out, rows, h, eps } => norm::rms_norm(cx, x, g, out, *rows, *h, *eps),
        Thunk::FusedResidualLN { x, res, bias, g, b, out, rows, h, eps } => {
            norm::fused_residual(cx, false, x, res, bias, g, &Some(*b), out, *rows, *h, *eps)
        }
        Thunk::FusedResidualRmsNorm { x, res, bias, g, b, out, rows, h, eps } => {
            norm::fused_residual(cx, true, x, res, bias, g, b, out, *rows, *h, *eps)
        }
        Thunk::BatchNormInference { x, scale, bias, mean, var, out, n, c, hw, eps } => {
            norm::batch_norm(cx, [x, scale, bias, mean, var, out], *n, *c, *hw, *eps)
        }
        Thunk::Softmax { src, dst, rows, cols } => attention::softmax(cx, src, dst, *rows, *cols),
        Thunk::Attention {
            q,
            k,
            v,
            mask,
            out,
            batch,
            seq,
            kv_seq,
            heads,
            head_dim,
            v_head_dim,
            mask_kind,
            scale,
            softcap,
            q_row_stride,
            k_row_stride,
            v_row_stride,
            bhsd,
            kv_heads,
        } => attention::attention(
            cx,
            [q, k, v],
            mask,
            out,
            &attention::AttentionDims {
                batch: *batch,
                seq: *seq,
                kv_seq: *kv_seq,
                heads: *heads,
                kv_heads: *kv_heads,
                head_dim: *head_dim,
                v_head_dim: *v_head_dim,
                strides: [*q_row_stride, *k_row_stride, *v_row_stride],
                bhsd: *bhsd,
                mask_kind: *mask_kind,
                scale: *scale,
                softcap: *softcap,
            },
            &cx.schedule.params,
        ),
        Thunk::Rope { x, cos, sin, out, batch, seq, heads, head_dim, interleaved } => {
            norm::rope(cx, x, cos, sin, out, *batch, *seq, *heads, *head_dim, *interleaved)
        }
        Thunk::Reduce { src, dst, outer, axis_dim, inner, op } => {
            reduce::reduce(cx, src, dst, [*outer, *axis_dim, *inner], *op)
        }
        Thunk::ArgReduce { src, dst, outer, axis_dim, inner, op, select_last, indices_i64 } => {
            reduce::arg_reduce(cx, src, dst, [*outer, *axis_dim, *inner], *op, *select_last, *indices_i64)
        }
        Thunk::Cumsum { src, dst, outer, axis_dim, inner, exclusive, reverse } => {
            reduce::cumsum(cx, src, dst, [*outer, *axis_dim, *inner], *exclusive, *reverse)
        }
        Thunk::TopK { src, dst, values, outer, axis_dim, k, largest, indices_i64 } => {
            reduce::top_k(cx, src, dst, values, *outer, *axis_dim, *k, *largest, *indices_i64)
        }
        Thunk::Conv2D {
            x,
            w,
            bias,
            out,
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
            groups,
        } => conv::conv2d(
            cx,
            x,
            w,
            bias,
            out,
            [*n, *c_in, *h, *w_in, *c_out, *h_out, *w_out, *kh, *kw, *sh, *sw, *ph, *pw, *dh, *dw, *groups],
        ),
        Thunk::Pool2D { src, dst, n, c, h, w, h_out, w_out, kh, kw, sh, sw, ph, pw, kind, count_include_pad } => {
            conv::pool2d(cx, src, dst, [*n, *c, *h, *w, *h_out, *w_out, *kh, *kw, *sh, *sw, *ph, *pw], *kind, *count_include_pad)
        }
        Thunk::KvAppend { src, cache, batch, new_len, max_len, row, pos, elem_bytes } => {
            movement::kv_append(cx, src, cache, *batch, *new_len, *max_len, *row, *pos, *elem_bytes)
        }
        Thunk::Nop {} => quote!(),
    }
}
