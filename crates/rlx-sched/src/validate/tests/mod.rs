//! Validator tests: `.sched` snippets through `parse` and `validate`,
//! asserting on the diagnostics (golden files of whole cases live in
//! `tests/sched/err`).

mod buffers;
mod dataflow;
mod kinds;
mod overlap;
mod weights;

use std::path::{Path, PathBuf};

use super::{validate, Checked, ValidateOptions};
use crate::diag::{Diagnostic, Diagnostics, Severity};
use crate::dtype::DType;
use crate::parse::parse;

/// The header every snippet gets unless it brings its own.
pub(super) fn header(arena: usize) -> String {
    format!("rlx-sched 1\nmodel t\narena {arena} align 64\nmask_threshold 0.5\nmask_neg_inf -1000000000.0\nscore_skip 0.0\n")
}

/// Validates `body` (buffers and thunks) under a 4096-byte arena.
pub(super) fn check(body: &str) -> Result<Checked, Diagnostics> {
    check_in(&format!("{}\n{body}", header(4096)), Path::new("."))
}

/// Validates a whole source, resolving the weights path from `dir`.
pub(super) fn check_in(src: &str, dir: &Path) -> Result<Checked, Diagnostics> {
    let ast = parse(src).unwrap_or_else(|d| panic!("snippet does not parse:\n{}", d.render("snippet", src)));
    validate(&ast, &ValidateOptions::new(crate::sha256_hex(src.as_bytes()), dir))
}

/// The error messages of an invalid snippet.
pub(super) fn errors(body: &str) -> Vec<String> {
    match check(body) {
        Ok(_) => panic!("expected errors, but the snippet is valid:\n{body}"),
        Err(d) => d.0.iter().filter(|d| d.is_error()).map(|d| d.message.clone()).collect(),
    }
}

/// The diagnostics of an invalid snippet.
pub(super) fn diagnostics(body: &str) -> Vec<Diagnostic> {
    match check(body) {
        Ok(_) => panic!("expected errors, but the snippet is valid:\n{body}"),
        Err(d) => d.0,
    }
}

/// Asserts the snippet is valid without warnings.
pub(super) fn assert_clean(body: &str) -> Checked {
    match check(body) {
        Ok(c) if c.warnings.is_empty() => c,
        Ok(c) => panic!("unexpected warnings:\n{}", c.warnings.render("snippet", body)),
        Err(d) => panic!("unexpected errors:\n{}", d.render("snippet", &format!("{}\n{body}", header(4096)))),
    }
}

/// Asserts exactly one error whose message contains every needle.
pub(super) fn assert_one_error(body: &str, needles: &[&str]) {
    let errs = errors(body);
    assert_eq!(errs.len(), 1, "expected one error, got {errs:#?}");
    for n in needles {
        assert!(errs[0].contains(n), "{:?} should contain {n:?}", errs[0]);
    }
}

/// Asserts some error contains every needle.
pub(super) fn assert_error(body: &str, needles: &[&str]) {
    let errs = errors(body);
    assert!(
        errs.iter().any(|e| needles.iter().all(|n| e.contains(n))),
        "no error contains all of {needles:?}: {errs:#?}"
    );
}

pub(super) fn warnings(c: &Checked) -> Vec<&Diagnostic> {
    c.warnings.0.iter().filter(|d| d.severity == Severity::Warning).collect()
}

/// A fresh directory for files a test writes.
pub(super) fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-sched-validate-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// One tensor of a safetensors file to write.
pub(super) struct TensorSpec<'a> {
    pub name: &'a str,
    pub dtype: DType,
    pub shape: &'a [usize],
}

/// Deterministic tensor bytes: small values, exactly representable in every
/// float dtype (so the file is the same on every machine).
fn tensor_bytes(dtype: DType, elems: usize) -> Vec<u8> {
    let value = |i: usize| ((i * 7 + 3) % 17) as i64 - 8;
    let mut out = Vec::with_capacity(elems * dtype.size());
    for i in 0..elems {
        let v = value(i);
        match dtype {
            DType::F32 => out.extend_from_slice(&(v as f32 / 8.0).to_le_bytes()),
            DType::F64 => out.extend_from_slice(&(v as f64 / 8.0).to_le_bytes()),
            // The high half of the f32 bits is the bf16 of a value whose
            // low mantissa bits are zero, as these are.
            DType::Bf16 => out.extend_from_slice(&(((v as f32 / 8.0).to_bits() >> 16) as u16).to_le_bytes()),
            DType::F16 => out.extend_from_slice(&f16_bits(v as f32 / 8.0).to_le_bytes()),
            DType::I64 => out.extend_from_slice(&v.to_le_bytes()),
            DType::I32 => out.extend_from_slice(&(v as i32).to_le_bytes()),
            DType::I16 => out.extend_from_slice(&(v as i16).to_le_bytes()),
            DType::U16 => out.extend_from_slice(&(v as u16).to_le_bytes()),
            DType::U32 => out.extend_from_slice(&(v as u32).to_le_bytes()),
            DType::U64 => out.extend_from_slice(&(v as u64).to_le_bytes()),
            DType::I8 => out.push(v as i8 as u8),
            DType::U8 => out.push(v.unsigned_abs() as u8),
            DType::Bool => out.push(u8::from(v > 0)),
        }
    }
    out
}

/// The f16 bits of `x`, for the values `k / 8` with `|k| <= 8` only.
fn f16_bits(x: f32) -> u16 {
    if x == 0.0 {
        return 0;
    }
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    let mantissa = ((bits >> 13) & 0x3ff) as u16;
    sign | ((exp as u16) << 10) | mantissa
}

/// A safetensors file: tensors at 64-byte aligned data offsets, the JSON
/// header padded with spaces so the data section starts at a multiple of
/// `data_align` (1 leaves it unpadded).
pub(super) fn safetensors(tensors: &[TensorSpec<'_>], data_align: usize) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for t in tensors {
        data.resize(data.len().div_ceil(64) * 64, 0);
        let begin = data.len();
        data.extend_from_slice(&tensor_bytes(t.dtype, t.shape.iter().product()));
        header.insert(
            t.name.to_string(),
            serde_json::json!({ "dtype": t.dtype.safetensors_name(), "shape": t.shape, "data_offsets": [begin, data.len()] }),
        );
    }
    let mut json = serde_json::to_string(&serde_json::Value::Object(header)).expect("json");
    while !(8 + json.len()).is_multiple_of(data_align) {
        json.push(' ');
    }
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(json.as_bytes());
    out.extend_from_slice(&data);
    out
}

/// The weights file the `ok/validate_weights_*` cases (and the err cases
/// that point at it) use.
pub(super) fn fixture_tensors() -> Vec<TensorSpec<'static>> {
    vec![
        TensorSpec { name: "fc1.weight", dtype: DType::F32, shape: &[4, 8] },
        TensorSpec { name: "fc1.bias", dtype: DType::F32, shape: &[8] },
        TensorSpec { name: "fc2.weight", dtype: DType::F16, shape: &[8, 3] },
        TensorSpec { name: "emb", dtype: DType::F32, shape: &[5, 4] },
        TensorSpec { name: "norm.g", dtype: DType::F32, shape: &[4] },
        TensorSpec { name: "unused", dtype: DType::Bf16, shape: &[2, 2] },
    ]
}

/// Where the case folders are.
pub(super) fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/sched")
}

/// The committed weights fixture must be what the generator above writes:
/// `UPDATE_EXPECT=1` rewrites it (then update the sha256 of the cases that
/// use it, which the check below names). `err/` has a copy of its own, as
/// weights paths may not leave the schedule's directory.
#[test]
fn weights_fixture_is_generated() {
    let bytes = safetensors(&fixture_tensors(), 64);
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1");
    for path in
        [cases_dir().join("ok/validate_weights.safetensors"), cases_dir().join("err/validate_weights.safetensors")]
    {
        if std::fs::read(&path).ok().as_deref() != Some(&bytes[..]) {
            assert!(update, "{} is stale: run with UPDATE_EXPECT=1", path.display());
            std::fs::write(&path, &bytes).expect("write the weights fixture");
        }
    }
    // The ok cases using it carry its sha256.
    let sha = crate::sha256_hex(&bytes);
    for entry in std::fs::read_dir(cases_dir().join("ok")).expect("ok folder") {
        let p = entry.expect("entry").path();
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        if p.extension().is_some_and(|e| e == "sched") && text.contains("validate_weights.safetensors") {
            assert!(text.contains(&sha), "{} must declare sha256 {sha}", p.display());
        }
    }
}

#[test]
fn f16_bits_of_eighths() {
    assert_eq!(f16_bits(1.0), 0x3c00);
    assert_eq!(f16_bits(-0.5), 0xb800);
    assert_eq!(f16_bits(0.125), 0x3000);
    assert_eq!(f16_bits(0.375), 0x3600);
}
