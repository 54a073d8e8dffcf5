//! Shape arithmetic for inference: broadcasting, strides, reshape targets.

/// Numpy broadcast of two shapes, or `None` when incompatible.
pub(crate) fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let dim = |s: &[usize], d: usize| if d + s.len() < rank { 1 } else { s[d + s.len() - rank] };
    (0..rank)
        .map(|d| match (dim(a, d), dim(b, d)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// Row-major strides (in elements) of a shape. Saturating: a stride can
/// only exceed `usize` when another dim is 0 (the tensor is empty, its
/// strides unused), since every stride of a non-empty tensor is at most
/// its element count, which callers check.
pub(crate) fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1].saturating_mul(shape[d + 1]);
    }
    strides
}

/// The strides that read an operand of `shape` broadcast to `out`: a
/// size-1 (or missing leading) axis gets stride 0.
pub(crate) fn broadcast_strides(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let lead = out.len() - shape.len();
    let own = row_major_strides(shape);
    (0..out.len()).map(|d| if d < lead || shape[d - lead] == 1 { 0 } else { own[d - lead] }).collect()
}

/// Product of dims, `None` on overflow.
pub(crate) fn checked_numel(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
}

/// Normalizes an ONNX axis (negative counts from the end) for a rank;
/// `rank_extra` is 1 where an axis may equal the rank (Flatten, Unsqueeze).
pub(crate) fn normalize_axis(axis: i64, rank: usize, rank_extra: usize) -> Option<usize> {
    let limit = i64::try_from(rank + rank_extra).ok()?;
    let a = if axis < 0 { axis + limit } else { axis };
    (0..limit).contains(&a).then_some(a as usize)
}

/// The output shape of ONNX `Reshape`: `0` copies the input dim (unless
/// `allowzero`), one `-1` is inferred. Errors are messages.
pub(crate) fn reshape_target(input: &[usize], spec: &[i64], allowzero: bool) -> Result<Vec<usize>, String> {
    let total = checked_numel(input).ok_or("the input has too many elements")?;
    let mut out = Vec::with_capacity(spec.len());
    let mut infer = None;
    for (i, &s) in spec.iter().enumerate() {
        match s {
            -1 if infer.is_none() => {
                infer = Some(i);
                out.push(1);
            }
            -1 => return Err(format!("shape {spec:?} has more than one -1")),
            0 if !allowzero => out.push(*input.get(i).ok_or_else(|| {
                format!("shape {spec:?} copies dim {i} with 0 but the input has rank {}", input.len())
            })?),
            s if s >= 0 => out.push(usize::try_from(s).map_err(|_| format!("dim {s} is too large"))?),
            s => return Err(format!("shape {spec:?} has the invalid dim {s}")),
        }
    }
    let known = checked_numel(&out).ok_or("the target shape has too many elements")?;
    if let Some(i) = infer {
        if known == 0 || total % known != 0 {
            return Err(format!("cannot infer the -1 of {spec:?} for an input of {total} elements"));
        }
        out[i] = total / known;
    } else if known != total {
        return Err(format!("shape {out:?} holds {known} elements but the input {input:?} has {total}"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast(&[2, 3], &[3]), Some(vec![2, 3]));
        assert_eq!(broadcast(&[2, 1, 4], &[3, 1]), Some(vec![2, 3, 4]));
        assert_eq!(broadcast(&[], &[5]), Some(vec![5]));
        assert_eq!(broadcast(&[2, 3], &[2]), None);
        assert_eq!(broadcast_strides(&[3, 1], &[2, 3, 4]), vec![0, 1, 0]);
        assert_eq!(broadcast_strides(&[2, 3, 4], &[2, 3, 4]), vec![12, 4, 1]);
    }

    #[test]
    fn reshape_targets() {
        assert_eq!(reshape_target(&[2, 3, 4], &[0, -1], false), Ok(vec![2, 12]));
        assert_eq!(reshape_target(&[2, 3, 4], &[-1], false), Ok(vec![24]));
        assert_eq!(reshape_target(&[2, 3, 4], &[4, 0, 2], false), Ok(vec![4, 3, 2]));
        assert!(reshape_target(&[2, 3, 4], &[5, -1], false).is_err());
        assert!(reshape_target(&[2, 3, 4], &[-1, -1], false).is_err());
        assert!(reshape_target(&[2, 3, 4], &[2, 3], false).is_err());
        assert!(reshape_target(&[2, 3, 4], &[-2, 12], false).is_err());
    }

    #[test]
    fn axes_normalize() {
        assert_eq!(normalize_axis(-1, 3, 0), Some(2));
        assert_eq!(normalize_axis(3, 3, 0), None);
        assert_eq!(normalize_axis(3, 3, 1), Some(3));
        assert_eq!(normalize_axis(-4, 3, 0), None);
    }
}
