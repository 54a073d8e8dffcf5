//! Constant folding: ops whose inputs are all known at import time are
//! evaluated here instead of becoming thunks. This is what turns the shape
//! arithmetic of exported graphs (`Shape` → `Gather` → `Mul` → `Concat` →
//! `Reshape`, `Equal`/`Where` chains feeding `Expand`, `ConstantOfShape`,
//! `Range`) into plain constants.
//!
//! Integer and boolean ops fold exactly. f32 folds only where IEEE
//! arithmetic gives the bits the kernel would (`+ - * /`, comparisons,
//! selects, casts to and from integers): everything transcendental runs
//! in the kernels, so a folded constant never differs from a computed one.

use rlx_sched::plan::{pad_out_dims, pad_source};
use rlx_sched::{ActKind, BinaryOp, CmpOp, DType, PadMode, ReduceOp};

use super::shape::{broadcast, broadcast_strides, row_major_strides};
use crate::tensor::{float_to_int, is_carried_int, ConstData, ConstTensor};

/// The most elements a folded constant may have (2^22: a 2048 x 2048
/// attention mask): folding a chain of a few ops over this many takes a
/// fraction of a second.
pub(crate) const MAX_FOLDED_ELEMS: usize = 1 << 22;

/// The most bytes a folded constant may have (32 MiB). A model that asks
/// for more (a `ConstantOfShape`, `Range` or broadcast of absurd size)
/// gets an error naming the node before anything is allocated, instead
/// of exhausting memory or time at import.
pub(crate) const MAX_FOLDED_BYTES: usize = 32 << 20;

/// Whether a constant of `shape` and `dtype` is small enough to fold.
pub(crate) fn fits(shape: &[usize], dtype: DType) -> bool {
    super::shape::checked_numel(shape)
        .is_some_and(|n| n <= MAX_FOLDED_ELEMS && n.saturating_mul(dtype.size()) <= MAX_FOLDED_BYTES)
}

/// Errors when a constant of `shape` and `dtype` is too large to fold
/// (for ops whose result must be a constant).
pub(crate) fn check_size(
    ctx: &crate::lower::NodeCtx<'_>,
    shape: &[usize],
    dtype: DType,
) -> Result<(), crate::error::ImportError> {
    if fits(shape, dtype) {
        Ok(())
    } else {
        Err(ctx.err(format!(
            "the {} constant it computes, of shape {shape:?}, is larger than the fold limit \
             ({MAX_FOLDED_ELEMS} elements, {MAX_FOLDED_BYTES} bytes)",
            dtype.name()
        )))
    }
}

/// The source element of each output element when `shape` is broadcast to
/// `out` (row-major order).
pub(crate) fn broadcast_indices(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let strides = broadcast_strides(shape, out);
    let total: usize = out.iter().product();
    let mut idx = vec![0usize; out.len()];
    let mut result = Vec::with_capacity(total);
    for _ in 0..total {
        result.push(idx.iter().zip(&strides).map(|(i, s)| i * s).sum());
        for d in (0..out.len()).rev() {
            idx[d] += 1;
            if idx[d] < out[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    result
}

/// Where each output element of a broadcast reads its operand: the common
/// cases (the same shape, one element) without an index table, which is
/// most of a fold's time on large constants.
enum Source {
    Same,
    One,
    Table(Vec<usize>),
}

impl Source {
    fn new(shape: &[usize], out: &[usize]) -> Source {
        if shape == out {
            Source::Same
        } else if shape.iter().product::<usize>() == 1 {
            Source::One
        } else {
            Source::Table(broadcast_indices(shape, out))
        }
    }

    /// The operand element output element `k` reads.
    fn at(&self, k: usize) -> usize {
        match self {
            Source::Same => k,
            Source::One => 0,
            Source::Table(t) => t[k],
        }
    }
}

/// `a` broadcast to `out` (which must be a broadcast of its shape).
pub(crate) fn expand(a: &ConstTensor, out: &[usize]) -> ConstTensor {
    ConstTensor { shape: out.to_vec(), data: a.data.select(broadcast_indices(&a.shape, out)) }
}

/// Integer `op`, as the i64 kernel computes it (wrapping; division and
/// remainder by zero give 0). `None` for an op that does not fold.
fn int_binary(op: BinaryOp, x: i64, y: i64) -> Option<i64> {
    Some(match op {
        BinaryOp::Add => x.wrapping_add(y),
        BinaryOp::Sub => x.wrapping_sub(y),
        BinaryOp::Mul => x.wrapping_mul(y),
        BinaryOp::Div => {
            if y == 0 {
                0
            } else {
                x.wrapping_div(y)
            }
        }
        BinaryOp::Mod | BinaryOp::FloorMod => {
            let r = if y == 0 { 0 } else { x.wrapping_rem(y) };
            if op == BinaryOp::FloorMod && r != 0 && (r < 0) != (y < 0) {
                r + y
            } else {
                r
            }
        }
        BinaryOp::Max => x.max(y),
        BinaryOp::Min => x.min(y),
        BinaryOp::BitAnd => x & y,
        BinaryOp::BitOr => x | y,
        BinaryOp::BitXor => x ^ y,
        _ => return None,
    })
}

fn f32_binary(op: BinaryOp, x: f32, y: f32) -> Option<f32> {
    Some(match op {
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x * y,
        BinaryOp::Div => x / y,
        _ => return None,
    })
}

/// Folds `op(a, b)` with numpy broadcasting; `None` when the op or the
/// types do not fold or the result is too large to (the caller emits a
/// thunk), or the shapes do not broadcast (the caller reports it).
pub(crate) fn binary(op: BinaryOp, a: &ConstTensor, b: &ConstTensor) -> Option<ConstTensor> {
    let out = broadcast(&a.shape, &b.shape).filter(|out| fits(out, a.data.dtype()))?;
    let (ia, ib, n) = (Source::new(&a.shape, &out), Source::new(&b.shape, &out), out.iter().product::<usize>());
    let data = match (&a.data, &b.data) {
        (ConstData::F32(x), ConstData::F32(y)) => {
            ConstData::F32((0..n).map(|k| f32_binary(op, x[ia.at(k)], y[ib.at(k)])).collect::<Option<_>>()?)
        }
        (x, y) if x.dtype() == y.dtype() && x.dtype() != DType::F32 => {
            let (x, y) = (x.ints()?, y.ints()?);
            let v: Vec<i64> = (0..n).map(|k| int_binary(op, x[ia.at(k)], y[ib.at(k)])).collect::<Option<_>>()?;
            ConstData::from_ints(a.data.dtype(), v)?
        }
        _ => return None,
    };
    Some(ConstTensor { shape: out, data })
}

/// Folds a reduction of integer constant `a` over `axes` (sorted, in
/// range) into `out_shape` (the kept dims, reduced ones as 1 or dropped):
/// `Sum`/`Prod` wrap as the integer kernels do, `Max`/`Min` exact. Shape
/// arithmetic (`ReduceProd` of a `Shape`) is the usual case. `None` for
/// f32 data, another reduction, or a reduction over no elements (whose
/// integer identity ONNX leaves unspecified for max/min).
pub(crate) fn reduce_ints(op: ReduceOp, a: &ConstTensor, axes: &[usize], out_shape: &[usize]) -> Option<ConstTensor> {
    let x = a.data.ints()?;
    if a.data.dtype() == DType::F32 || (x.is_empty() && matches!(op, ReduceOp::Max | ReduceOp::Min)) {
        return None;
    }
    let combine = |acc: i64, v: i64| match op {
        ReduceOp::Sum => Some(acc.wrapping_add(v)),
        ReduceOp::Prod => Some(acc.wrapping_mul(v)),
        ReduceOp::Max => Some(acc.max(v)),
        ReduceOp::Min => Some(acc.min(v)),
        _ => None,
    };
    let start = match op {
        ReduceOp::Sum => 0,
        ReduceOp::Prod => 1,
        ReduceOp::Max => i64::MIN,
        ReduceOp::Min => i64::MAX,
        _ => return None,
    };
    // Output index of every input element: its coordinates with the
    // reduced axes dropped, in row-major order over the kept dims.
    let kept: Vec<usize> = (0..a.shape.len()).filter(|d| !axes.contains(d)).collect();
    let mut acc = vec![start; kept.iter().map(|&d| a.shape[d]).product()];
    let mut coords = vec![0usize; a.shape.len()];
    for &v in &x {
        let at = kept.iter().fold(0usize, |i, &d| i * a.shape[d] + coords[d]);
        acc[at] = combine(acc[at], v)?;
        for d in (0..coords.len()).rev() {
            coords[d] += 1;
            if coords[d] < a.shape[d] {
                break;
            }
            coords[d] = 0;
        }
    }
    Some(ConstTensor { shape: out_shape.to_vec(), data: ConstData::from_ints(a.data.dtype(), acc)? })
}

/// Folds an f32 activation whose result IEEE 754 fixes exactly (square
/// root is correctly rounded everywhere; sign operations and clamps are
/// exact), so the constant equals what the kernel would compute. Integer
/// `Neg`/`Abs` fold too (wrapping). `None` for anything else.
pub(crate) fn unary(act: ActKind, a: &ConstTensor) -> Option<ConstTensor> {
    let data = match &a.data {
        ConstData::F32(v) => {
            // Only the exactly rounded functions, whose kernels give these
            // bits; NaN (whose sign and payload kernels may treat
            // differently under Relu) is left to the kernel.
            if act == ActKind::Relu && v.iter().any(|x| x.is_nan()) {
                return None;
            }
            // Two comparisons, as the kernel makes them (a NaN passes
            // through both).
            if let ActKind::Clip { min, max } = act {
                let clip = |x: f32| {
                    let t = if x < min { min } else { x };
                    if t > max {
                        max
                    } else {
                        t
                    }
                };
                return Some(ConstTensor {
                    shape: a.shape.clone(),
                    data: ConstData::F32(v.iter().map(|&x| clip(x)).collect()),
                });
            }
            let f: fn(f32) -> f32 = match act {
                ActKind::Sqrt => f32::sqrt,
                ActKind::Neg => |x| -x,
                ActKind::Abs => f32::abs,
                ActKind::Ceil => f32::ceil,
                ActKind::Floor => f32::floor,
                ActKind::Round => f32::round_ties_even,
                ActKind::Relu => |x| if x < 0.0 { 0.0 } else { x },
                _ => return None,
            };
            ConstData::F32(v.iter().map(|&x| f(x)).collect())
        }
        d => {
            let f: fn(i64) -> i64 = match act {
                ActKind::Neg => i64::wrapping_neg,
                ActKind::Abs => i64::wrapping_abs,
                ActKind::Relu => |x| x.max(0),
                ActKind::Sign => i64::signum,
                _ => return None,
            };
            ConstData::from_ints(d.dtype(), d.ints()?.into_iter().map(f))?
        }
    };
    Some(ConstTensor { shape: a.shape.clone(), data })
}

/// Folds a comparison to a bool tensor (`None` as for [`binary`]).
pub(crate) fn compare(op: CmpOp, a: &ConstTensor, b: &ConstTensor) -> Option<ConstTensor> {
    if a.data.dtype() != b.data.dtype() {
        return None;
    }
    let out = broadcast(&a.shape, &b.shape).filter(|out| fits(out, DType::Bool))?;
    let (ia, ib, n) = (Source::new(&a.shape, &out), Source::new(&b.shape, &out), out.iter().product::<usize>());
    fn cmp<T: PartialOrd>(op: CmpOp, x: T, y: T) -> bool {
        match op {
            CmpOp::Eq => x == y,
            CmpOp::Ne => x != y,
            CmpOp::Lt => x < y,
            CmpOp::Le => x <= y,
            CmpOp::Gt => x > y,
            CmpOp::Ge => x >= y,
        }
    }
    let v: Vec<bool> = match (&a.data, &b.data) {
        (ConstData::F32(x), ConstData::F32(y)) => (0..n).map(|k| cmp(op, x[ia.at(k)], y[ib.at(k)])).collect(),
        (x, y) => {
            let (x, y) = (x.ints()?, y.ints()?);
            (0..n).map(|k| cmp(op, x[ia.at(k)], y[ib.at(k)])).collect()
        }
    };
    Some(ConstTensor { shape: out, data: ConstData::Bool(v) })
}

/// Folds `Where(cond, x, y)` (`None` as for [`binary`]).
pub(crate) fn select(cond: &ConstTensor, x: &ConstTensor, y: &ConstTensor) -> Option<ConstTensor> {
    if x.data.dtype() != y.data.dtype() {
        return None;
    }
    let out = broadcast(&broadcast(&cond.shape, &x.shape)?, &y.shape).filter(|out| fits(out, x.data.dtype()))?;
    let c = cond.data.ints()?;
    let (ic, ix, iy) = (Source::new(&cond.shape, &out), Source::new(&x.shape, &out), Source::new(&y.shape, &out));
    let n = out.iter().product::<usize>();
    let pick = |k: usize| if c[ic.at(k)] != 0 { (0, ix.at(k)) } else { (1, iy.at(k)) };
    let data = match (&x.data, &y.data) {
        (ConstData::F32(a), ConstData::F32(b)) => ConstData::F32(
            (0..n)
                .map(|k| match pick(k) {
                    (0, i) => a[i],
                    (_, i) => b[i],
                })
                .collect(),
        ),
        (a, b) => {
            let (a, b) = (a.ints()?, b.ints()?);
            let v = (0..n).map(|k| match pick(k) {
                (0, i) => a[i],
                (_, i) => b[i],
            });
            ConstData::from_ints(x.data.dtype(), v)?
        }
    };
    Some(ConstTensor { shape: out, data })
}

/// Folds a `Cast` to `to`, with the casts' rules: float to int truncates
/// toward zero (saturating, NaN to 0), int to int wraps, to bool is `!= 0`.
pub(crate) fn cast(a: &ConstTensor, to: DType) -> Option<ConstTensor> {
    let data = match (&a.data, to) {
        (d, t) if d.dtype() == t => d.clone(),
        (ConstData::F32(v), DType::I64) => ConstData::I64(v.iter().map(|&x| x as i64).collect()),
        (ConstData::F32(v), DType::I32) => ConstData::I32(v.iter().map(|&x| x as i32).collect()),
        (ConstData::F32(v), DType::Bool) => ConstData::Bool(v.iter().map(|&x| x != 0.0).collect()),
        (ConstData::F32(v), t) if is_carried_int(t) => {
            ConstData::Int(t, v.iter().map(|&x| float_to_int(t, x)).collect())
        }
        (ConstData::Int(DType::U64, v), DType::F32) => ConstData::F32(v.iter().map(|&x| x as u64 as f32).collect()),
        (d, DType::F32) => ConstData::F32(d.ints()?.into_iter().map(|x| x as f32).collect()),
        (d, t) => ConstData::from_ints(t, d.ints()?)?,
    };
    Some(ConstTensor { shape: a.shape.clone(), data })
}

/// A tensor of `shape` with every element `value` (a one-element tensor).
pub(crate) fn fill(shape: &[usize], value: &ConstData) -> ConstTensor {
    let n: usize = shape.iter().product();
    ConstTensor { shape: shape.to_vec(), data: value.select(std::iter::repeat_n(0, n)) }
}

/// `Pad` of a constant, the rule the kernel follows: each output element
/// is the source element `plan::pad_source` names on every axis, or
/// `value` (one element of `a`'s type). `None` when the pads do not match
/// the rank or a copying mode would read an empty source.
pub(crate) fn pad(
    a: &ConstTensor,
    before: &[usize],
    after: &[usize],
    mode: PadMode,
    value: &ConstData,
) -> Option<ConstTensor> {
    let out = pad_out_dims(&a.shape, before, after)?;
    let total: usize = out.iter().product();
    let n = a.data.len();
    if n == 0 && total > 0 && mode != PadMode::Constant {
        return None;
    }
    // The value as element `n`, read wherever no source element is.
    let extended = ConstData::from_le_bytes(a.data.dtype(), &[a.data.to_le_bytes(), value.to_le_bytes()].concat())?;
    let strides = row_major_strides(&a.shape);
    let mut coord = vec![0usize; out.len()];
    let indices = (0..total).map(|i| {
        let mut rem = i;
        for d in (0..out.len()).rev() {
            coord[d] = rem % out[d];
            rem /= out[d];
        }
        (0..out.len())
            .try_fold(0, |at, d| Some(at + pad_source(mode, coord[d], before[d], a.shape[d])? * strides[d]))
            .unwrap_or(n)
    });
    let data = extended.select(indices.collect::<Vec<_>>());
    Some(ConstTensor { shape: out, data })
}

/// An empty tensor of `shape` (a zero dim) and `dtype`: known at import
/// time whatever computes it.
pub(crate) fn empty(shape: &[usize], dtype: DType) -> Option<ConstTensor> {
    let data = match dtype {
        DType::F32 => ConstData::F32(Vec::new()),
        other => ConstData::from_ints(other, [])?,
    };
    Some(ConstTensor { shape: shape.to_vec(), data })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(shape: &[usize], v: &[i64]) -> ConstTensor {
        ConstTensor { shape: shape.to_vec(), data: ConstData::I64(v.to_vec()) }
    }

    #[test]
    fn broadcast_indices_follow_numpy() {
        assert_eq!(broadcast_indices(&[3], &[2, 3]), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(broadcast_indices(&[2, 1], &[2, 3]), vec![0, 0, 0, 1, 1, 1]);
        assert_eq!(broadcast_indices(&[], &[2]), vec![0, 0]);
    }

    #[test]
    fn integer_arithmetic_folds_with_broadcast() {
        let r = binary(BinaryOp::Mul, &ints(&[1, 1], &[128]), &ints(&[3], &[0, 1, 2])).unwrap();
        assert_eq!(r, ints(&[1, 3], &[0, 128, 256]));
        assert_eq!(
            binary(BinaryOp::Div, &ints(&[2], &[7, -7]), &ints(&[], &[2])).unwrap().data,
            ConstData::I64(vec![3, -3])
        );
        assert_eq!(binary(BinaryOp::Div, &ints(&[1], &[7]), &ints(&[1], &[0])).unwrap().data, ConstData::I64(vec![0]));
        assert!(binary(BinaryOp::Pow, &ints(&[1], &[2]), &ints(&[1], &[2])).is_none());
        // Truncated and floored remainders, as `math::mod_i64` / `floor_mod_i64`.
        let (a, b) = (ints(&[4], &[7, -7, 7, -7]), ints(&[4], &[3, 3, -3, 0]));
        assert_eq!(binary(BinaryOp::Mod, &a, &b).unwrap().data, ConstData::I64(vec![1, -1, 1, 0]));
        assert_eq!(binary(BinaryOp::FloorMod, &a, &b).unwrap().data, ConstData::I64(vec![1, 2, -2, 0]));
        assert!(binary(BinaryOp::Add, &ints(&[2], &[1, 2]), &ints(&[3], &[1, 2, 3])).is_none());
    }

    #[test]
    fn a_broadcast_over_the_fold_limit_is_left_to_a_kernel() {
        // [65536, 1] op [1, 65536] is 2^32 elements: declined from the
        // shapes, before any index table is built.
        let col = ConstTensor { shape: vec![1 << 16, 1], data: ConstData::I64(vec![1; 1 << 16]) };
        let row = ConstTensor { shape: vec![1, 1 << 16], data: ConstData::I64(vec![2; 1 << 16]) };
        assert!(binary(BinaryOp::Add, &col, &row).is_none());
        assert!(compare(CmpOp::Eq, &col, &row).is_none());
        let cond = ConstTensor { shape: vec![1], data: ConstData::Bool(vec![true]) };
        assert!(select(&cond, &col, &row).is_none());
        // 2^22 i64 elements are 32 MiB: at both limits; one more is over.
        assert!(fits(&[1 << 22], DType::I64) && fits(&[1 << 22], DType::F32) && !fits(&[(1 << 22) + 1], DType::Bool));
    }

    #[test]
    fn compare_select_and_cast_fold() {
        let eq = compare(CmpOp::Eq, &ints(&[3], &[1, -1, 3]), &ints(&[], &[-1])).unwrap();
        assert_eq!(eq.data, ConstData::Bool(vec![false, true, false]));
        let w = select(&eq, &ints(&[], &[1]), &ints(&[3], &[1, -1, 3])).unwrap();
        assert_eq!(w, ints(&[3], &[1, 1, 3]));
        let f = ConstTensor { shape: vec![3], data: ConstData::F32(vec![-1.7, f32::NAN, 2.5]) };
        assert_eq!(cast(&f, DType::I64).unwrap().data, ConstData::I64(vec![-1, 0, 2]));
        assert_eq!(cast(&f, DType::Bool).unwrap().data, ConstData::Bool(vec![true, true, true]));
        assert_eq!(cast(&ints(&[2], &[0, 3]), DType::F32).unwrap().data, ConstData::F32(vec![0.0, 3.0]));
        assert_eq!(cast(&ints(&[1], &[1 << 33]), DType::I32).unwrap().data, ConstData::I32(vec![0]));
    }

    #[test]
    fn exact_unary_ops_fold() {
        let f = ConstTensor { shape: vec![3], data: ConstData::F32(vec![2.0, -0.0, 0.25]) };
        assert_eq!(unary(ActKind::Sqrt, &f).unwrap().data, ConstData::F32(vec![2f32.sqrt(), -0.0, 0.5]));
        assert_eq!(unary(ActKind::Neg, &ints(&[2], &[3, i64::MIN])).unwrap().data, ConstData::I64(vec![-3, i64::MIN]));
        // Transcendental functions stay in the kernels.
        assert!(unary(ActKind::Exp, &f).is_none());
    }

    #[test]
    fn integer_reductions_fold_over_any_axes() {
        let a = ints(&[2, 3], &[1, 2, 3, 4, 5, 6]);
        assert_eq!(reduce_ints(ReduceOp::Sum, &a, &[1], &[2]).unwrap(), ints(&[2], &[6, 15]));
        assert_eq!(reduce_ints(ReduceOp::Max, &a, &[0], &[1, 3]).unwrap(), ints(&[1, 3], &[4, 5, 6]));
        assert_eq!(reduce_ints(ReduceOp::Prod, &a, &[0, 1], &[]).unwrap(), ints(&[], &[720]));
        assert_eq!(reduce_ints(ReduceOp::Min, &a, &[0, 1], &[1, 1]).unwrap(), ints(&[1, 1], &[1]));
        // Products wrap as the integer kernels do; an empty max has no value.
        let big = ints(&[2], &[1 << 62, 4]);
        assert_eq!(reduce_ints(ReduceOp::Prod, &big, &[0], &[]).unwrap(), ints(&[], &[0]));
        assert!(reduce_ints(ReduceOp::Max, &ints(&[0], &[]), &[0], &[]).is_none());
        assert_eq!(reduce_ints(ReduceOp::Sum, &ints(&[0], &[]), &[0], &[]).unwrap(), ints(&[], &[0]));
        // f32 data and the other reductions stay in the kernels.
        let f = ConstTensor { shape: vec![2], data: ConstData::F32(vec![1.0, 2.0]) };
        assert!(reduce_ints(ReduceOp::Sum, &f, &[0], &[]).is_none());
        assert!(reduce_ints(ReduceOp::Mean, &a, &[0], &[3]).is_none());
    }
}
