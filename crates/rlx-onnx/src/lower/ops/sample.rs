//! Sampling grids: `GridSample` (one `GridSample` thunk: the coordinates
//! are run-time data) and `AffineGrid` (a composition: the base grid of
//! normalised positions is an import-time constant, and the output is
//! `base @ theta^T`, one batched product).

use rlx_sched::{DType, GridSampleMode, GridSamplePadding, Thunk};

use crate::error::ImportError;
use crate::lower::build::{define_if_empty, numel, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::proto::{AttributeProto, AttributeType};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::GridSample;

/// The spatial axes the `GridSample` kind samples.
const MAX_SPATIAL: usize = 3;

/// `align_corners` (default 0), which must be 0 or 1.
fn align_corners(ctx: &NodeCtx<'_>) -> Result<bool, ImportError> {
    match ctx.int_attr("align_corners", 0)? {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(ctx.bad_attr("align_corners", format!("is {v}; must be 0 or 1"))),
    }
}

/// `mode`, by the names of the node's opset: `bilinear`, `nearest`,
/// `bicubic` (default `bilinear`) before opset 20, `linear`, `nearest`,
/// `cubic` (default `linear`) from it.
fn sample_mode(lw: &Lowerer, ctx: &NodeCtx<'_>) -> Result<GridSampleMode, ImportError> {
    let (linear, cubic) = if lw.opset >= 20 { ("linear", "cubic") } else { ("bilinear", "bicubic") };
    let mode = ctx.string_attr("mode")?.unwrap_or_else(|| linear.to_string());
    match mode.as_str() {
        m if m == linear => Ok(GridSampleMode::Linear),
        "nearest" => Ok(GridSampleMode::Nearest),
        m if m == cubic => Ok(GridSampleMode::Cubic),
        other => Err(ctx
            .bad_attr("mode", format!("is `{other}`; at opset {} it is one of {linear}, nearest, {cubic}", lw.opset))),
    }
}

fn padding_mode(ctx: &NodeCtx<'_>) -> Result<GridSamplePadding, ImportError> {
    let name = ctx.string_attr("padding_mode")?.unwrap_or_else(|| "zeros".to_string());
    GridSamplePadding::from_name(&name)
        .ok_or_else(|| ctx.bad_attr("padding_mode", format!("is `{name}`; expected zeros, border or reflection")))
}

/// `GridSample`: `X` `[N, C, D1, ..., Dr]` (r from 1 to 3; 2 before opset
/// 20, whose spec takes 4-D inputs only) read at `grid` `[N, O1, ..., Or,
/// r]` into `[N, C, O1, ..., Or]`.
pub(crate) fn grid_sample(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let mode = sample_mode(lw, ctx)?;
    let padding = padding_mode(ctx)?;
    let align_corners = align_corners(ctx)?;
    let (src, x_shape) = lw.data_input(ctx, 0)?;
    let (grid, grid_shape) = lw.data_input(ctx, 1)?;
    let rank = x_shape.len().saturating_sub(2);
    if lw.opset < 20 && x_shape.len() != 4 {
        return Err(ctx.err(format!("X has shape {x_shape:?}; before opset 20 GridSample takes 4-D input")));
    }
    if !(1..=MAX_SPATIAL).contains(&rank) {
        return Err(ctx.err(format!("X has shape {x_shape:?}; supported: [N, C] and 1 to {MAX_SPATIAL} spatial axes")));
    }
    let (n, c, in_dims) = (x_shape[0], x_shape[1], x_shape[2..].to_vec());
    if grid_shape.len() != rank + 2 || grid_shape[0] != n || grid_shape[rank + 1] != rank {
        return Err(ctx.err(format!(
            "grid has shape {grid_shape:?}; for X of shape {x_shape:?} it must be [{n}, {rank} output dims..., {rank}]"
        )));
    }
    let out_dims = grid_shape[1..=rank].to_vec();
    let out_shape: Vec<usize> = [n, c].into_iter().chain(out_dims.iter().copied()).collect();
    if define_if_empty(lw, ctx, &out_shape, DType::F32)? {
        return Ok(());
    }
    if in_dims.contains(&0) {
        return Err(ctx.err(format!("X of shape {x_shape:?} has an empty spatial axis: there is no sample to read")));
    }
    numel(ctx, &x_shape)?;
    let dst = lw.output_storage(ctx, 0, out_shape.clone())?;
    lw.emit(
        ctx,
        Thunk::GridSample(GridSample { src, grid, dst, n, c, in_dims, out_dims, mode, padding, align_corners }),
    );
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out_shape })
}

/// The normalised position of sample `i` of an axis of `len`: the corner
/// samples' centres at -1 and 1 with `align_corners`, else their outer
/// edges. In f64, rounded once by the caller (the spec's reference builds
/// its base grid in f64).
fn base_coordinate(i: usize, len: usize, align_corners: bool) -> f64 {
    if align_corners {
        2.0 * i as f64 / (len - 1) as f64 - 1.0
    } else {
        (2.0 * i as f64 + 1.0) / len as f64 - 1.0
    }
}

/// The homogeneous base grid `[product(dims), rank + 1]`: per position
/// (row-major over `dims`), its coordinates last axis first (`x`, `y`,
/// `z`) and a 1.
fn base_grid(dims: &[usize], align_corners: bool) -> Vec<f32> {
    let rank = dims.len();
    let points: usize = dims.iter().product();
    let mut out = Vec::with_capacity(points * (rank + 1));
    let mut at = vec![0usize; rank];
    for _ in 0..points {
        for a in (0..rank).rev() {
            out.push(base_coordinate(at[a], dims[a], align_corners) as f32);
        }
        out.push(1.0);
        // The next position, last axis fastest.
        for a in (0..rank).rev() {
            at[a] += 1;
            if at[a] < dims[a] {
                break;
            }
            at[a] = 0;
        }
    }
    out
}

/// `AffineGrid`: `theta` `[N, 2, 3]` (2-D) or `[N, 3, 4]` (3-D), `size`
/// `[N, C, H, W]` or `[N, C, D, H, W]` known at import; the output `[N, H,
/// W, 2]` (`[N, D, H, W, 3]`) is `base @ theta^T` with the constant base
/// grid `[H * W, 3]` (`[D * H * W, 4]`): `theta` transposed, one batched
/// product, a reshape.
pub(crate) fn affine_grid(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let align_corners = align_corners(ctx)?;
    let (_, size) = lw.const_ints(ctx, 1)?;
    let (theta, theta_value) = lw.input(ctx, 0)?;
    let (theta_shape, theta_dtype) = match &theta_value {
        Value::Data { storage, shape } => (shape.clone(), lw.storages[*storage].dtype),
        Value::Const(c) => (c.shape.clone(), c.data.dtype()),
    };
    if theta_dtype != DType::F32 {
        return Err(ctx.err(format!("theta is {} data; this op supports f32 data only", theta_dtype.name())));
    }
    let rank = match size.len() {
        4 => 2,
        5 => 3,
        _ => return Err(ctx.err(format!("size {size:?} must be [N, C, H, W] or [N, C, D, H, W]"))),
    };
    let size: Vec<usize> = size
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| ctx.err(format!("size {size:?} has a negative entry"))))
        .collect::<Result<_, _>>()?;
    let n = size[0];
    if theta_shape != [n, rank, rank + 1] {
        return Err(ctx.err(format!(
            "theta has shape {theta_shape:?}; for size {size:?} it must be [{n}, {rank}, {}]",
            rank + 1
        )));
    }
    let dims = size[2..].to_vec();
    if align_corners && dims.contains(&1) {
        return Err(ctx.bad_attr(
            "align_corners",
            format!(
                "is 1 with a spatial size of 1 (size {size:?}): -1 and 1 would both be that sample's centre, \
                 which gives its position no value (the spec's reference divides by zero there)"
            ),
        ));
    }
    let out_shape: Vec<usize> = [n].into_iter().chain(dims.iter().copied()).chain([rank]).collect();
    if define_if_empty(lw, ctx, &out_shape, DType::F32)? {
        return Ok(());
    }
    let points = numel(ctx, &dims)?;
    numel(ctx, &out_shape)?;
    lw.reserve_table(ctx, "its base grid", &[points, rank + 1], 4)?;
    let output = ctx.node.output[0].clone();
    let base = ConstTensor { shape: vec![points, rank + 1], data: ConstData::F32(base_grid(&dims, align_corners)) };
    let base = lw.constant(&output, "base_grid", base);
    let flat_shape = ConstTensor {
        shape: vec![out_shape.len()],
        data: ConstData::I64(out_shape.iter().map(|&d| d as i64).collect()),
    };
    let flat_shape = lw.constant(&output, "shape", flat_shape);
    let (theta_t, flat) = (lw.internal_name(&output, "theta_t"), lw.internal_name(&output, "flat"));
    let perm = AttributeProto {
        name: "perm".to_string(),
        r#type: AttributeType::Ints as i32,
        ints: vec![0, 2, 1],
        ..Default::default()
    };
    lw.lower_part(ctx, "Transpose", &[&theta], &[&theta_t], vec![perm])?;
    lw.lower_part(ctx, "MatMul", &[&base, &theta_t], &[&flat], Vec::new())?;
    lw.lower_part(ctx, "Reshape", &[&flat, &flat_shape], &[&output], Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_grids_hold_centres_or_edges_last_axis_first() {
        // H = 2, W = 3 with align_corners: x in {-1, 0, 1}, y in {-1, 1}.
        let g = base_grid(&[2, 3], true);
        assert_eq!(g, [-1., -1., 1., 0., -1., 1., 1., -1., 1., -1., 1., 1., 0., 1., 1., 1., 1., 1.]);
        // Without: the samples' centres at (2i + 1) / len - 1.
        let g = base_grid(&[1, 2], false);
        assert_eq!(g, [-0.5, 0., 1., 0.5, 0., 1.]);
        // 3-D: (x, y, z, 1) with z outermost.
        let g = base_grid(&[2, 1, 1], false);
        assert_eq!(g, [0., 0., -0.5, 1., 0., 0., 0.5, 1.]);
        assert_eq!(base_coordinate(1, 3, false) as f32, 0.0);
        assert_eq!(base_coordinate(2, 3, false) as f32, (2.0f64 / 3.0) as f32);
    }
}
