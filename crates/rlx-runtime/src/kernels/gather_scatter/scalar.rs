//! The reference: every rule of the module docs one element at a time,
//! on slices, with indices widened to i64 and coordinates decomposed from
//! each flat position. Tests compare the entries with these.

use rlx_core::ScatterReduction;

use super::ScatterValue;

/// `i` on an axis of `len`, negative from the end; `None` out of range.
pub fn resolve(i: i64, len: usize) -> Option<usize> {
    let j = if i < 0 { i as i128 + len as i128 } else { i as i128 };
    (0..len as i128).contains(&j).then_some(j as usize)
}

/// The coordinates of flat position `at` over `dims`.
fn coords(mut at: usize, dims: &[usize]) -> Vec<usize> {
    let mut c = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        c[d] = at % dims[d];
        at /= dims[d];
    }
    c
}

/// The flat position of `c` over `dims`.
fn flat(c: &[usize], dims: &[usize]) -> usize {
    c.iter().zip(dims).fold(0, |acc, (&x, &d)| acc * d + x)
}

/// `GatherElements` on elements of `eb` bytes.
pub fn gather_elements(
    data: &[u8],
    indices: &[i64],
    data_dims: &[usize],
    index_dims: &[usize],
    axis: usize,
    eb: usize,
) -> Vec<u8> {
    let mut out = vec![0u8; indices.len() * eb];
    for (at, &i) in indices.iter().enumerate() {
        let mut c = coords(at, index_dims);
        if let Some(k) = resolve(i, data_dims[axis]) {
            c[axis] = k;
            let from = flat(&c, data_dims) * eb;
            out[at * eb..][..eb].copy_from_slice(&data[from..from + eb]);
        }
    }
    out
}

/// The flat slice a tuple selects over `data_dims`.
fn tuple_at(tuple: &[i64], data_dims: &[usize]) -> Option<usize> {
    let mut c = Vec::with_capacity(tuple.len());
    for (&i, &d) in tuple.iter().zip(data_dims) {
        c.push(resolve(i, d)?);
    }
    Some(flat(&c, data_dims))
}

/// `GatherND` on elements of `eb` bytes (shapes as the entry's).
pub fn gather_nd(
    data: &[u8],
    indices: &[i64],
    batch: usize,
    lookups: usize,
    data_dims: &[usize],
    slice_len: usize,
    eb: usize,
) -> Vec<u8> {
    let (depth, block) = (data_dims.len(), data_dims.iter().product::<usize>());
    let mut out = vec![0u8; batch * lookups * slice_len * eb];
    for b in 0..batch {
        for l in 0..lookups {
            let r = b * lookups + l;
            let tuple = &indices[r * depth..(r + 1) * depth];
            for j in 0..slice_len {
                if let Some(at) = tuple_at(tuple, data_dims) {
                    let from = ((b * block + at) * slice_len + j) * eb;
                    out[(r * slice_len + j) * eb..][..eb].copy_from_slice(&data[from..from + eb]);
                }
            }
        }
    }
    out
}

/// One combine of `reduction`.
pub fn combine<T: ScatterValue>(reduction: ScatterReduction, x: T, u: T) -> T {
    match reduction {
        ScatterReduction::None => u,
        ScatterReduction::Add => x.add(u),
        ScatterReduction::Mul => x.mul(u),
        ScatterReduction::Max => x.max(u),
        ScatterReduction::Min => x.min(u),
    }
}

/// `ScatterElements`.
pub fn scatter_elements<T: ScatterValue>(
    data: &[T],
    indices: &[i64],
    updates: &[T],
    data_dims: &[usize],
    index_dims: &[usize],
    axis: usize,
    reduction: ScatterReduction,
) -> Vec<T> {
    let mut out = data.to_vec();
    for (at, &i) in indices.iter().enumerate() {
        let mut c = coords(at, index_dims);
        if let Some(k) = resolve(i, data_dims[axis]) {
            c[axis] = k;
            let to = flat(&c, data_dims);
            out[to] = combine(reduction, out[to], updates[at]);
        }
    }
    out
}

/// `ScatterND`.
pub fn scatter_nd<T: ScatterValue>(
    data: &[T],
    indices: &[i64],
    updates: &[T],
    lookups: usize,
    data_dims: &[usize],
    slice_len: usize,
    reduction: ScatterReduction,
) -> Vec<T> {
    let mut out = data.to_vec();
    let depth = data_dims.len();
    for l in 0..lookups {
        if let Some(at) = tuple_at(&indices[l * depth..(l + 1) * depth], data_dims) {
            for j in 0..slice_len {
                let to = at * slice_len + j;
                out[to] = combine(reduction, out[to], updates[l * slice_len + j]);
            }
        }
    }
    out
}
