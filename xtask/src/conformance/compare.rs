//! Comparing an output with the expected tensor at ONNX's tolerances.

use rlx_onnx::tensor::{ConstData, ConstTensor};
use rlx_sched::DType;

/// ONNX's backend tests compare with `numpy.testing.assert_allclose` at
/// rtol 1e-3 and atol 1e-7 (`onnx/backend/test/runner`): the same here, so
/// a pass means what it means for every other backend.
pub(crate) const RTOL: f64 = 1e-3;
/// See [`RTOL`].
pub(crate) const ATOL: f64 = 1e-7;

/// Checks output `index` (`dtype[shape]`, little-endian `bytes`) against
/// `want`: same shape, same element type, floats within `ATOL + RTOL *
/// |expected|` (NaN matches NaN, an infinity only itself), integers and
/// bools exact. The error is one line naming the worst element.
pub(crate) fn check(
    index: usize,
    dtype: DType,
    shape: &[usize],
    bytes: &[u8],
    want: &ConstTensor,
) -> Result<(), String> {
    if shape != want.shape.as_slice() {
        return Err(format!("output {index}: shape {} != expected {}", dims(shape), dims(&want.shape)));
    }
    // 2-byte floats and f64: the expected values are read as f32 (2-byte
    // ones exactly), so the output is converted to f32 to compare.
    let widened = matches!(dtype, DType::F16 | DType::Bf16 | DType::F64) && want.data.dtype() == DType::F32;
    if dtype != want.data.dtype() && !widened {
        return Err(format!("output {index}: dtype {dtype} != expected {}", want.data.dtype()));
    }
    let got = decode(dtype, bytes).ok_or_else(|| format!("output {index}: cannot read {dtype} values"))?;
    if got.len() != want.data.len() {
        return Err(format!("output {index}: {} values != expected {}", got.len(), want.data.len()));
    }
    let result = match (&got, &want.data) {
        (ConstData::F32(g), ConstData::F32(w)) => close(g, w),
        // Same dtype (checked above), so both are integers or both bools.
        _ => match (exact_values(&got), exact_values(&want.data)) {
            (Some(g), Some(w)) => exact(&g, &w),
            _ => Err(format!("cannot compare {dtype} with {}", want.data.dtype())),
        },
    };
    result.map_err(|e| format!("output {index}: {e}"))
}

/// `[2,3]`, as shapes are printed in the report.
fn dims(shape: &[usize]) -> String {
    let d: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("[{}]", d.join(","))
}

/// The values of a buffer of `dtype`; `None` for a byte count that is
/// not a whole number of elements.
fn decode(dtype: DType, bytes: &[u8]) -> Option<ConstData> {
    ConstData::from_le_bytes(dtype, bytes)
}

/// One integer or bool element, compared exactly (an i64 does not fit an
/// f64 exactly).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Exact {
    Int(i64),
    Bool(bool),
}

impl std::fmt::Display for Exact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exact::Int(v) => write!(f, "{v}"),
            Exact::Bool(v) => write!(f, "{v}"),
        }
    }
}

/// The elements of integer or bool data; `None` for floats.
fn exact_values(data: &ConstData) -> Option<Vec<Exact>> {
    match data {
        ConstData::F32(_) => None,
        ConstData::I64(v) => Some(v.iter().map(|&x| Exact::Int(x)).collect()),
        ConstData::I32(v) => Some(v.iter().map(|&x| Exact::Int(i64::from(x))).collect()),
        ConstData::Bool(v) => Some(v.iter().map(|&x| Exact::Bool(x)).collect()),
        // UINT64 as its bits on both sides: equal exactly when the values are.
        ConstData::Int(_, v) => Some(v.iter().map(|&x| Exact::Int(x)).collect()),
    }
}

fn exact(got: &[Exact], want: &[Exact]) -> Result<(), String> {
    let differing: Vec<usize> = (0..got.len()).filter(|&i| got[i] != want[i]).collect();
    match differing.first() {
        None => Ok(()),
        Some(&i) => Err(format!(
            "{} of {} values differ, first at index {i} (got {}, expected {})",
            differing.len(),
            got.len(),
            got[i],
            want[i]
        )),
    }
}

/// Floats within tolerance; the error names the element with the largest
/// absolute error among those out of tolerance (a NaN or infinity mismatch
/// counts as infinitely far).
fn close(got: &[f32], want: &[f32]) -> Result<(), String> {
    let mut worst: Option<(usize, f64)> = None;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let (g64, w64) = (f64::from(g), f64::from(w));
        if (g.is_nan() && w.is_nan()) || g64 == w64 {
            continue;
        }
        // Unequal values of which one is NaN or infinite are never close
        // (the bound `ATOL + RTOL * |inf|` would admit anything).
        let finite = g.is_finite() && w.is_finite();
        let err = if finite { (g64 - w64).abs() } else { f64::INFINITY };
        if finite && err <= ATOL + RTOL * w64.abs() {
            continue;
        }
        if worst.is_none_or(|(_, e)| err > e) {
            worst = Some((i, err));
        }
    }
    match worst {
        None => Ok(()),
        Some((i, err)) => Err(format!("max abs err {err:.1e} at index {i} (got {}, expected {})", got[i], want[i])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(shape: &[usize], v: &[f32]) -> ConstTensor {
        ConstTensor { shape: shape.to_vec(), data: ConstData::F32(v.to_vec()) }
    }

    fn bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn floats_pass_within_onnx_tolerance_and_fail_beyond() {
        let want = f32s(&[3], &[1.0, 0.0, f32::NAN]);
        // 1.0009 is within 1e-7 + 1e-3 * 1.0 of 1.0.
        assert_eq!(check(0, DType::F32, &[3], &bytes(&[1.0009, 0.0, f32::NAN]), &want), Ok(()));
        assert_eq!(
            check(0, DType::F32, &[3], &bytes(&[1.0, 1e-6, f32::NAN]), &want),
            Err("output 0: max abs err 1.0e-6 at index 1 (got 0.000001, expected 0)".to_string())
        );
        assert_eq!(
            check(2, DType::F32, &[3], &bytes(&[1.2, 0.0, 3.0]), &want),
            Err("output 2: max abs err inf at index 2 (got 3, expected NaN)".to_string())
        );
    }

    #[test]
    fn the_worst_element_is_named() {
        let want = f32s(&[3], &[1.0, 2.0, 3.0]);
        assert_eq!(
            check(0, DType::F32, &[3], &bytes(&[1.1, 2.5, 3.2]), &want),
            Err("output 0: max abs err 5.0e-1 at index 1 (got 2.5, expected 2)".to_string())
        );
        let inf = f32s(&[1], &[f32::INFINITY]);
        assert_eq!(check(0, DType::F32, &[1], &bytes(&[f32::INFINITY]), &inf), Ok(()));
        assert!(check(0, DType::F32, &[1], &bytes(&[f32::NEG_INFINITY]), &inf).is_err());
        assert!(check(0, DType::F32, &[1], &bytes(&[1e30]), &inf).is_err());
    }

    #[test]
    fn shapes_and_dtypes_must_match() {
        let want = f32s(&[3, 2], &[0.0; 6]);
        assert_eq!(
            check(0, DType::F32, &[2, 3], &bytes(&[0.0; 6]), &want),
            Err("output 0: shape [2,3] != expected [3,2]".to_string())
        );
        let ints = ConstTensor { shape: vec![6], data: ConstData::I32(vec![0; 6]) };
        assert_eq!(check(1, DType::I64, &[6], &[0; 48], &ints), Err("output 1: dtype i64 != expected i32".to_string()));
    }

    #[test]
    fn two_byte_float_outputs_compare_widened() {
        let want = f32s(&[2], &[1.5, -0.333_251_95]);
        let half: Vec<u8> =
            [1.5f32, -0.333_251_95].iter().flat_map(|&x| rlx_runtime::half::f16::from_f32(x).to_le_bytes()).collect();
        assert_eq!(check(0, DType::F16, &[2], &half, &want), Ok(()));
        let off: Vec<u8> =
            [1.5f32, 0.5].iter().flat_map(|&x| rlx_runtime::half::f16::from_f32(x).to_le_bytes()).collect();
        assert!(check(0, DType::F16, &[2], &off, &want).is_err());
        // An f32 expectation is not met by an integer output.
        assert!(check(0, DType::I32, &[2], &[0; 8], &want).is_err());
    }

    #[test]
    fn integers_and_bools_are_exact() {
        let big = i64::MAX - 1;
        let want = ConstTensor { shape: vec![2], data: ConstData::I64(vec![big, 3]) };
        let got: Vec<u8> = [big, 3i64].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(check(0, DType::I64, &[2], &got, &want), Ok(()));
        // Differs by one in the last place of a value f64 cannot hold exactly.
        let off: Vec<u8> = [big - 1, 4i64].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(
            check(0, DType::I64, &[2], &off, &want),
            Err(format!("output 0: 2 of 2 values differ, first at index 0 (got {}, expected {big})", big - 1))
        );
        let bools = ConstTensor { shape: vec![2], data: ConstData::Bool(vec![true, false]) };
        assert_eq!(check(0, DType::Bool, &[2], &[1, 0], &bools), Ok(()));
        assert_eq!(
            check(0, DType::Bool, &[2], &[1, 1], &bools),
            Err("output 0: 1 of 2 values differ, first at index 1 (got true, expected false)".to_string())
        );
    }
}
