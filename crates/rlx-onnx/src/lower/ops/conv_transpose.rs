//! `ConvTranspose` (2-D; 1-D through the unit-height lift) and `Col2Im`.
//!
//! A transposed convolution is a product and a scatter: for each image and
//! group, `cols = W_g^T @ X_g` (`[c_out/g * kh * kw, h * w]`; the filter is
//! transposed at import), then `Col2Im` adds the columns into the output
//! with the bias as the starting value. Input pixel `(iy, ix)` and tap
//! `(ki, kj)` land on output pixel `(iy * sh - ph + ki * dh, ix * sw - pw +
//! kj * dw)`, which is the spec's definition.

use rlx_sched::{DType, Thunk};

use crate::lower::build::transposed::{geometry, pads4, Axis};
use crate::lower::build::window::{conv_bias, pair_attr};
use crate::lower::build::{numel, permute_thunk, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::{BatchedSgemm, Col2Im};

/// `ConvTranspose` of a 4-D input with a constant filter.
pub(crate) fn conv_transpose(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 3)?;
    let (x, xs) = lw.data_input(ctx, 0)?;
    if xs.len() != 4 {
        return Err(ctx.err(format!("X has shape {xs:?}; 1-D and 2-D transposed convolutions are supported")));
    }
    // A constant filter is transposed at import, one given at run time by
    // a `Transpose` thunk.
    let filter = lw.const_input(ctx, 1)?;
    let ws = match &filter {
        Some(f) => f.shape.clone(),
        None => lw.data_input(ctx, 1)?.1,
    };
    let (n, c_in, h, w) = (xs[0], xs[1], xs[2], xs[3]);
    let groups = ctx.int_attr("group", 1)?;
    let ws = &ws;
    let valid_groups = groups >= 1 && c_in % groups as usize == 0;
    if ws.len() != 4 || !valid_groups || ws[0] != c_in {
        return Err(ctx.err(format!(
            "W has shape {ws:?} for X {xs:?} and group {groups}; expected [C_in, C_out / group, kh, kw]"
        )));
    }
    let g = groups as usize;
    let (c_out_g, kh, kw) = (ws[1], ws[2], ws[3]);
    let c_out = c_out_g * g;
    if let Some(k) = ctx.ints_attr("kernel_shape")? {
        if k != [kh as i64, kw as i64] {
            return Err(ctx.bad_attr("kernel_shape", format!("is {k:?}; W's window is [{kh}, {kw}]")));
        }
    }
    let [sh, sw] = pair_attr(ctx, "strides")?;
    let [dh, dw] = pair_attr(ctx, "dilations")?;
    let output_padding = match ctx.ints_attr("output_padding")? {
        None => [0, 0],
        Some(&[a, b]) if a >= 0 && b >= 0 && (a as usize) < sh.max(dh) && (b as usize) < sw.max(dw) => {
            [a as usize, b as usize]
        }
        Some(v) => {
            return Err(
                ctx.bad_attr("output_padding", format!("is {v:?}; expected two values below stride or dilation"))
            )
        }
    };
    if n * c_in * h * w == 0 || c_out * kh * kw == 0 {
        return Err(ctx.err(format!("empty shapes X {xs:?}, W {ws:?} are not supported")));
    }
    let axes = [
        Axis { input: h, kernel: kh, stride: sh, dilation: dh, output_padding: output_padding[0] },
        Axis { input: w, kernel: kw, stride: sw, dilation: dw, output_padding: output_padding[1] },
    ];
    let geo = geometry(ctx, &axes)?;
    let [(ph, h_out), (pw, w_out)] = [geo[0], geo[1]];
    let bias = conv_bias(lw, ctx, c_out)?;

    // A_g = W_g^T: `[c_out/g * kh * kw, c_in/g]` per group, stacked.
    let (c_in_g, m, hw) = (c_in / g, c_out_g * kh * kw, h * w);
    let name = ctx.node.output[0].clone();
    let a = match &filter {
        Some(ConstTensor { data: ConstData::F32(wv), .. }) => {
            let mut at = vec![0.0f32; g * m * c_in_g];
            for gi in 0..g {
                for ci in 0..c_in_g {
                    for r in 0..m {
                        at[(gi * m + r) * c_in_g + ci] = wv[(gi * c_in_g + ci) * m + r];
                    }
                }
            }
            let t = ConstTensor { shape: vec![g, m, c_in_g], data: ConstData::F32(at) };
            lw.add_param(&format!("{name}.filter_t"), &t)?
        }
        Some(_) => return Err(ctx.err("W must be f32")),
        None => {
            let (wd, _) = lw.data_input(ctx, 1)?;
            let at = lw.scratch_storage(&format!("{name}.filter_t"), vec![g, m, c_in_g], DType::F32)?;
            let t = permute_thunk(ctx, wd, &[g, c_in_g, m], &[0, 2, 1], at)?;
            lw.emit(ctx, t);
            at
        }
    };
    let cols = lw.scratch_storage(&format!("{name}.cols"), vec![n, g * m, hw], DType::F32)?;
    if g == 1 {
        lw.emit(
            ctx,
            Thunk::BatchedSgemm(BatchedSgemm {
                a,
                b: x,
                c: cols,
                batch: n,
                m,
                k: c_in,
                n: hw,
                a_bcast: true,
                b_bcast: false,
            }),
        );
    } else {
        // Per image, one product per group over consecutive matrices.
        for b in 0..n {
            let xb = lw.add_view(x, b * c_in * hw * 4, vec![g, c_in_g, hw]);
            let cb = lw.add_view(cols, b * g * m * hw * 4, vec![g, m, hw]);
            lw.emit(
                ctx,
                Thunk::BatchedSgemm(BatchedSgemm {
                    a,
                    b: xb,
                    c: cb,
                    batch: g,
                    m,
                    k: c_in_g,
                    n: hw,
                    a_bcast: false,
                    b_bcast: false,
                }),
            );
        }
    }
    let shape = vec![n, c_out, h_out, w_out];
    let dst = lw.output_storage(ctx, 0, shape.clone())?;
    let (h_cols, w_cols) = (h, w);
    lw.emit(
        ctx,
        Thunk::Col2Im(Col2Im {
            src: cols,
            bias,
            dst,
            n,
            c: c_out,
            h: h_out,
            w: w_out,
            h_cols,
            w_cols,
            kh,
            kw,
            sh,
            sw,
            ph,
            pw,
            dh,
            dw,
        }),
    );
    lw.define(ctx, 0, Value::Data { storage: dst, shape })
}

/// ONNX `Col2Im` of a 2-D image: `input [N, C * kh * kw, L]`, constant
/// `image_shape` and `block_shape`; `L` must be the number of blocks.
pub(crate) fn col2im(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(3, 3)?;
    let (src, ss) = lw.data_input(ctx, 0)?;
    let (_, image) = lw.const_ints(ctx, 1)?;
    let (_, block) = lw.const_ints(ctx, 2)?;
    let (Ok([h, w]), Ok([kh, kw])) = (<[i64; 2]>::try_from(image.as_slice()), <[i64; 2]>::try_from(block.as_slice()))
    else {
        return Err(ctx.err(format!("image_shape {image:?} and block_shape {block:?}: only 2-D images are supported")));
    };
    if [h, w, kh, kw].iter().any(|&v| v < 1) {
        return Err(ctx.err(format!("image_shape {image:?} and block_shape {block:?} must be positive")));
    }
    let (h, w, kh, kw) = (h as usize, w as usize, kh as usize, kw as usize);
    let [sh, sw] = pair_attr(ctx, "strides")?;
    let [dh, dw] = pair_attr(ctx, "dilations")?;
    let pads = pads4(ctx)?;
    // Blocks per axis: (image + pads - dilated window) / stride + 1.
    let blocks = |size: usize, begin: usize, end: usize, k: usize, s: usize, d: usize| {
        let padded = size.checked_add(begin)?.checked_add(end)?;
        padded.checked_sub((k - 1).checked_mul(d)?.checked_add(1)?).map(|r| r / s + 1)
    };
    let (Some(h_cols), Some(w_cols)) =
        (blocks(h, pads[0], pads[2], kh, sh, dh), blocks(w, pads[1], pads[3], kw, sw, dw))
    else {
        return Err(ctx.err("the window is larger than the padded image (or a size overflows)"));
    };
    let (Some(per), Some(blocks)) = (kh.checked_mul(kw), h_cols.checked_mul(w_cols)) else {
        return Err(ctx.err(format!("block_shape {block:?} or the number of blocks overflows")));
    };
    if ss.len() != 3 || ss[1] % per != 0 || ss[2] != blocks {
        return Err(ctx.err(format!("input has shape {ss:?}; expected [N, C * {per}, {blocks}] for these blocks")));
    }
    let (n, c) = (ss[0], ss[1] / per);
    let shape = vec![n, c, h, w];
    if numel(ctx, &shape)? == 0 {
        return Err(ctx.err(format!("the output shape {shape:?} is empty")));
    }
    let dst = lw.output_storage(ctx, 0, shape.clone())?;
    let (ph, pw) = (pads[0], pads[1]);
    lw.emit(
        ctx,
        Thunk::Col2Im(Col2Im { src, bias: None, dst, n, c, h, w, h_cols, w_cols, kh, kw, sh, sw, ph, pw, dh, dw }),
    );
    lw.define(ctx, 0, Value::Data { storage: dst, shape })
}
