//! `Einsum` in the forms attention and linear layers use: one operand
//! (permutation, sums over dropped letters) or two operands whose letters
//! split into batch (both inputs and the output), rows (first input and
//! output), columns (second input and output) and contracted (both inputs,
//! not the output). Each operand is permuted into `[batch, rows, k]` /
//! `[batch, k, cols]` order (no thunk when it already is), multiplied by
//! one `Sgemm` or `BatchedSgemm`, and the product permuted into the
//! output's order. Ellipses, repeated letters (diagonals) and letters
//! summed out of a single input of a product are refused by name.

use rlx_sched::{DType, ReduceOp, Thunk};

use crate::error::ImportError;
use crate::lower::arith::shape::row_major_strides;
use crate::lower::build::{numel, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use rlx_sched::thunk::{BatchedSgemm, Reduce, Sgemm, Transpose};

/// A parsed equation: the letters of each input and of the output.
#[derive(Debug, PartialEq)]
struct Equation {
    inputs: Vec<Vec<char>>,
    output: Vec<char>,
}

fn parse(eq: &str) -> Result<Equation, String> {
    let eq: String = eq.chars().filter(|c| !c.is_whitespace()).collect();
    if eq.contains("...") {
        return Err("ellipses (`...`) are not supported".to_string());
    }
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (eq.as_str(), None),
    };
    let inputs: Vec<Vec<char>> = lhs.split(',').map(|t| t.chars().collect()).collect();
    for term in inputs.iter() {
        if let Some(c) = term.iter().find(|c| !c.is_ascii_alphabetic()) {
            return Err(format!("`{c}` is not a letter"));
        }
        let mut sorted = term.clone();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            return Err(format!(
                "`{}` repeats a letter (a diagonal), which is not supported",
                term.iter().collect::<String>()
            ));
        }
    }
    let output: Vec<char> = match rhs {
        Some(r) => r.chars().collect(),
        // Implicit output: the letters seen once, in alphabetical order.
        None => {
            let all: Vec<char> = inputs.iter().flatten().copied().collect();
            let mut once: Vec<char> =
                all.iter().copied().filter(|c| all.iter().filter(|d| *d == c).count() == 1).collect();
            once.sort_unstable();
            once
        }
    };
    if let Some(c) = output.iter().find(|c| !inputs.iter().any(|t| t.contains(c))) {
        return Err(format!("output letter `{c}` appears in no input"));
    }
    Ok(Equation { inputs, output })
}

/// Permutes `storage` (of `shape`, f32) so its letters run in `order`;
/// returns the storage holding that order (the input itself when it
/// already does).
fn permute(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    (storage, shape): (usize, &[usize]),
    letters: &[char],
    order: &[char],
    name: &str,
) -> Result<usize, ImportError> {
    let perm: Vec<usize> =
        order.iter().map(|c| letters.iter().position(|l| l == c).expect("a letter of the term")).collect();
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(storage);
    }
    let strides = row_major_strides(shape);
    let out_dims: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let dst = lw.scratch_storage(name, out_dims.clone(), DType::F32)?;
    lw.emit(
        ctx,
        Thunk::Transpose(Transpose {
            src: storage,
            dst,
            in_total: numel(ctx, shape)?,
            out_dims,
            in_strides: perm.iter().map(|&p| strides[p]).collect(),
            elem_bytes: 4,
        }),
    );
    Ok(dst)
}

pub(crate) fn einsum(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let text = ctx.string_attr("equation")?.ok_or_else(|| ctx.err("needs an equation"))?;
    let eq = parse(&text).map_err(|m| ctx.bad_attr("equation", format!("`{text}`: {m}")))?;
    if eq.inputs.len() != ctx.node.input.len() {
        return Err(ctx.err(format!("the equation has {} terms for {} inputs", eq.inputs.len(), ctx.node.input.len())));
    }
    let mut operands = Vec::new();
    let mut size_of = std::collections::BTreeMap::new();
    for (i, term) in eq.inputs.iter().enumerate() {
        let (id, shape) = lw.data_input(ctx, i)?;
        if shape.len() != term.len() {
            return Err(ctx.err(format!("input {i} has rank {} but its term has {} letters", shape.len(), term.len())));
        }
        for (c, &d) in term.iter().zip(&shape) {
            if *size_of.entry(*c).or_insert(d) != d {
                return Err(ctx.err(format!("letter `{c}` has sizes {} and {d}", size_of[c])));
            }
        }
        operands.push((id, shape));
    }
    let dims = |letters: &[char]| -> Vec<usize> { letters.iter().map(|c| size_of[c]).collect() };
    let out_shape = dims(&eq.output);
    let out_name = ctx.node.output.first().cloned().unwrap_or_default();
    match eq.inputs.as_slice() {
        [a] => {
            // Kept letters first (in output order), summed letters last.
            let summed: Vec<char> = a.iter().copied().filter(|c| !eq.output.contains(c)).collect();
            let order: Vec<char> = eq.output.iter().chain(&summed).copied().collect();
            if summed.is_empty() {
                let (id, shape) = &operands[0];
                let permuted = permute(lw, ctx, (*id, shape), a, &order, &format!("{out_name}.perm"))?;
                return lw.define(ctx, 0, Value::Data { storage: permuted, shape: out_shape });
            }
            let (id, shape) = &operands[0];
            let src = permute(lw, ctx, (*id, shape), a, &order, &format!("{out_name}.perm"))?;
            let outer = numel(ctx, &out_shape)?;
            let axis_dim = numel(ctx, &dims(&summed))?;
            let dst = lw.output_storage(ctx, 0, out_shape.clone())?;
            lw.emit(ctx, Thunk::Reduce(Reduce { src, dst, outer, axis_dim, inner: 1, op: ReduceOp::Sum }));
            lw.define(ctx, 0, Value::Data { storage: dst, shape: out_shape })
        }
        [a, b] => {
            let in_both = |c: &char| a.contains(c) && b.contains(c);
            let batch: Vec<char> = eq.output.iter().copied().filter(|c| in_both(c)).collect();
            let rows: Vec<char> = eq.output.iter().copied().filter(|c| a.contains(c) && !b.contains(c)).collect();
            let cols: Vec<char> = eq.output.iter().copied().filter(|c| b.contains(c) && !a.contains(c)).collect();
            let contracted: Vec<char> = a.iter().copied().filter(|c| b.contains(c) && !eq.output.contains(c)).collect();
            if let Some(c) = a.iter().chain(b).find(|c| !eq.output.contains(c) && !in_both(c)) {
                return Err(ctx.bad_attr(
                    "equation",
                    format!("`{text}`: letter `{c}` is summed out of one input of a product, which is not supported"),
                ));
            }
            let a_order: Vec<char> = batch.iter().chain(&rows).chain(&contracted).copied().collect();
            let b_order: Vec<char> = batch.iter().chain(&contracted).chain(&cols).copied().collect();
            let pa = permute(lw, ctx, (operands[0].0, &operands[0].1), a, &a_order, &format!("{out_name}.lhs"))?;
            let pb = permute(lw, ctx, (operands[1].0, &operands[1].1), b, &b_order, &format!("{out_name}.rhs"))?;
            let (nb, m, k, n) = (
                numel(ctx, &dims(&batch))?,
                numel(ctx, &dims(&rows))?,
                numel(ctx, &dims(&contracted))?,
                numel(ctx, &dims(&cols))?,
            );
            let product_order: Vec<char> = batch.iter().chain(&rows).chain(&cols).copied().collect();
            let direct = product_order == eq.output;
            let c = if direct {
                lw.output_storage(ctx, 0, out_shape.clone())?
            } else {
                lw.scratch_storage(&format!("{out_name}.product"), dims(&product_order), DType::F32)?
            };
            let thunk = if nb == 1 {
                Thunk::Sgemm(Sgemm { a: pa, b: pb, c, m, k, n })
            } else {
                Thunk::BatchedSgemm(BatchedSgemm {
                    a: pa,
                    b: pb,
                    c,
                    batch: nb,
                    m,
                    k,
                    n,
                    a_bcast: false,
                    b_bcast: false,
                })
            };
            lw.emit(ctx, thunk);
            if direct {
                return lw.define(ctx, 0, Value::Data { storage: c, shape: out_shape });
            }
            let product_shape = dims(&product_order);
            let strides = row_major_strides(&product_shape);
            let perm: Vec<usize> = eq
                .output
                .iter()
                .map(|l| product_order.iter().position(|p| p == l).expect("an output letter"))
                .collect();
            let dst = lw.output_storage(ctx, 0, out_shape.clone())?;
            lw.emit(
                ctx,
                Thunk::Transpose(Transpose {
                    src: c,
                    dst,
                    in_total: numel(ctx, &product_shape)?,
                    out_dims: out_shape.clone(),
                    in_strides: perm.iter().map(|&p| strides[p]).collect(),
                    elem_bytes: 4,
                }),
            );
            lw.define(ctx, 0, Value::Data { storage: dst, shape: out_shape })
        }
        _ => Err(ctx.err(format!("{} operands: only one or two are supported", eq.inputs.len()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equations_parse() {
        let e = parse("bhqd, bhkd -> bhqk").unwrap();
        assert_eq!(e.inputs, vec![vec!['b', 'h', 'q', 'd'], vec!['b', 'h', 'k', 'd']]);
        assert_eq!(e.output, vec!['b', 'h', 'q', 'k']);
        assert_eq!(parse("ij,jk").unwrap().output, vec!['i', 'k']);
        assert!(parse("...ij,jk").unwrap_err().contains("ellipses"));
        assert!(parse("ii->i").unwrap_err().contains("diagonal"));
        assert!(parse("ij->k").unwrap_err().contains("no input"));
    }
}
