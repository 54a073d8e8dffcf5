//! `RotaryEmbedding` (opset 23) on the `Rope` kernel: the input brought to
//! `[batch, seq, heads, head_size]` (a view of the 3-D form, a `Transpose`
//! of the 4-D one), the rotated part sliced off when
//! `rotary_embedding_dim` is less than the head size, one `Rope` per batch
//! element with its own rows of the caches (gathered by `position_ids`,
//! or the caches' own batch rows without them), and the pieces put back.

use rlx_sched::{DType, Thunk};

use crate::error::ImportError;
use crate::lower::build::R;
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::proto::{AttributeProto, AttributeType};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::Rope;

fn ints(v: Vec<i64>) -> ConstTensor {
    ConstTensor { shape: vec![v.len()], data: ConstData::I64(v) }
}

fn ints_attr(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.to_string(),
        r#type: AttributeType::Ints as i32,
        ints: v.to_vec(),
        ..Default::default()
    }
}

fn int_attr(name: &str, i: i64) -> AttributeProto {
    AttributeProto { name: name.to_string(), r#type: AttributeType::Int as i32, i, ..Default::default() }
}

fn shape_of(lw: &Lowerer, ctx: &NodeCtx<'_>, name: &str) -> Result<Vec<usize>, ImportError> {
    Ok(match lw.value(ctx, name)? {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.clone(),
    })
}

pub(crate) fn rotary_embedding(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(3, 4)?;
    let (x, _) = lw.input(ctx, 0)?;
    let shape = shape_of(lw, ctx, &x)?;
    let out = ctx.node.output[0].clone();
    let num_heads = ctx.int_attr("num_heads", 0)?;
    // [batch, seq, heads, head]
    let (bshd, transposed) = match shape[..] {
        [b, h, s, d] => {
            if num_heads != 0 && num_heads as usize != h {
                return Err(ctx.bad_attr("num_heads", format!("is {num_heads}; the 4-D input has {h} heads")));
            }
            let t = lw.internal_name(&out, "bshd");
            lw.lower_part(ctx, "Transpose", &[&x], &[&t], vec![ints_attr("perm", &[0, 2, 1, 3])])?;
            ((b, s, h, d), Some(t))
        }
        [b, s, hidden] => {
            let h = usize::try_from(num_heads).ok().filter(|&h| h > 0 && hidden % h == 0).ok_or_else(|| {
                ctx.bad_attr("num_heads", format!("is {num_heads}; a 3-D input needs a positive divisor of {hidden}"))
            })?;
            ((b, s, h, hidden / h), None)
        }
        _ => return Err(ctx.err(format!("the input has shape {shape:?}; 3-D or 4-D is expected"))),
    };
    let (batch, seq, heads, head) = bshd;
    let rotary = match ctx.int_attr("rotary_embedding_dim", 0)? {
        0 => head,
        r => usize::try_from(r).ok().filter(|&r| r <= head && r % 2 == 0).ok_or_else(|| {
            ctx.bad_attr("rotary_embedding_dim", format!("is {r}; an even number up to the head size {head}"))
        })?,
    };
    let interleaved = ctx.int_attr("interleaved", 0)? != 0;
    let four = lw.internal_name(&out, "bshd_view");
    let four_shape = lw.constant(&out, "bshd_shape", ints(vec![batch as i64, seq as i64, heads as i64, head as i64]));
    lw.lower_part(ctx, "Reshape", &[transposed.as_deref().unwrap_or(&x), &four_shape], &[&four], Vec::new())?;
    let (rotated_in, kept) = if rotary < head {
        let (r, k) = (lw.internal_name(&out, "rotated_in"), lw.internal_name(&out, "kept"));
        let split = lw.constant(&out, "split", ints(vec![rotary as i64, (head - rotary) as i64]));
        lw.lower_part(ctx, "Split", &[&four, &split], &[&r, &k], vec![int_attr("axis", 3)])?;
        (r, Some(k))
    } else {
        (four.clone(), None)
    };

    let (cos, sin) = (ctx.node.input[1].clone(), ctx.node.input[2].clone());
    let positions = ctx.input_name(3).map(str::to_string);
    let half = rotary / 2;
    let want = match &positions {
        Some(_) => "[max_position, rotary_dim / 2]".to_string(),
        None => format!("[{batch}, {seq}, {half}]"),
    };
    for cache in [&cos, &sin] {
        let s = shape_of(lw, ctx, cache)?;
        let ok = match &positions {
            Some(_) => s.len() == 2 && s[1] == half,
            None => s == [batch, seq, half],
        };
        if !ok {
            return Err(ctx.err(format!("cache `{cache}` has shape {s:?}; {want} is expected")));
        }
    }
    let mut pieces = Vec::with_capacity(batch);
    for b in 0..batch {
        let at = lw.constant(
            &out,
            &format!("batch{b}"),
            ConstTensor { shape: vec![], data: ConstData::I64(vec![b as i64]) },
        );
        // The caches' rows for this batch element: by its positions, or
        // the caches' own batch row.
        let rows = match &positions {
            Some(p) => {
                let row = lw.internal_name(&out, &format!("positions{b}"));
                lw.lower_part(ctx, "Gather", &[p, &at], &[&row], Vec::new())?;
                row
            }
            None => at.clone(),
        };
        let mut tables = Vec::with_capacity(2);
        for (cache, what) in [(&cos, "cos"), (&sin, "sin")] {
            let table = lw.internal_name(&out, &format!("{what}{b}"));
            lw.lower_part(ctx, "Gather", &[cache, &rows], &[&table], Vec::new())?;
            tables.push(table);
        }
        let xb = lw.internal_name(&out, &format!("x{b}"));
        lw.lower_part(ctx, "Gather", &[&rotated_in, &at], &[&xb], Vec::new())?;
        let piece = lw.internal_name(&out, &format!("rotated{b}"));
        let (src, _) = data_of(lw, ctx, &xb)?;
        let (cos_t, _) = data_of(lw, ctx, &tables[0])?;
        let (sin_t, _) = data_of(lw, ctx, &tables[1])?;
        let dst = lw.scratch_storage(&piece, vec![1, seq, heads, rotary], DType::F32)?;
        lw.emit(
            ctx,
            Thunk::Rope(Rope {
                x: src,
                cos: cos_t,
                sin: sin_t,
                out: dst,
                batch: 1,
                seq,
                heads,
                head_dim: rotary,
                interleaved,
            }),
        );
        lw.values.insert(piece.clone(), Value::Data { storage: dst, shape: vec![1, seq, heads, rotary] });
        pieces.push(piece);
    }
    let rotated = lw.internal_name(&out, "rotated");
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    lw.lower_part(ctx, "Concat", &refs, &[&rotated], vec![int_attr("axis", 0)])?;
    let whole = match &kept {
        Some(k) => {
            let w = lw.internal_name(&out, "whole");
            lw.lower_part(ctx, "Concat", &[&rotated, k], &[&w], vec![int_attr("axis", 3)])?;
            w
        }
        None => rotated,
    };
    match transposed {
        Some(_) => lw.lower_part(ctx, "Transpose", &[&whole], &[&out], vec![ints_attr("perm", &[0, 2, 1, 3])]),
        None => {
            let back = lw.constant(&out, "shape", ints(shape.iter().map(|&d| d as i64).collect()));
            lw.lower_part(ctx, "Reshape", &[&whole, &back], &[&out], Vec::new())
        }
    }
}

/// A named f32 value in a storage (a constant becomes a param).
fn data_of(lw: &mut Lowerer, ctx: &NodeCtx<'_>, name: &str) -> Result<(usize, Vec<usize>), ImportError> {
    let node = crate::proto::NodeProto { input: vec![name.to_string()], ..ctx.node.clone() };
    lw.data_input(&NodeCtx { node: &node, label: ctx.label.clone() }, 0)
}
