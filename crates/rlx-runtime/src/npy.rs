//! `.npy` files for model CLIs: read an input array as raw little-endian
//! bytes plus dtype and shape, write an output array back.
//!
//! `npyz` parses and writes the headers; the data section is read as raw
//! bytes (byte-swapped from big-endian files) so arrays go straight into
//! the arena without a per-element detour.

use std::fmt;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use npyz::{TypeChar, WriterBuilder};
use rlx_core::DType;

/// An array read from a `.npy` file: C order, little-endian bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// `shape.product() * dtype.size()` bytes, little-endian.
    pub bytes: Vec<u8>,
}

impl NpyArray {
    /// Elements in the array.
    pub fn elems(&self) -> usize {
        self.shape.iter().product()
    }

    /// `dtype[d0, d1, ...]`, the form error messages use (`f32[1, 784]`).
    pub fn describe(&self) -> String {
        describe(self.dtype, &self.shape)
    }
}

/// `dtype[d0, d1, ...]`.
pub fn describe(dtype: DType, shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("{dtype}[{}]", dims.join(", "))
}

/// Why a `.npy` file could not be read or written. Every message names
/// the file.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{}: not a valid .npy file: {reason}", path.display())]
    Header { path: PathBuf, reason: String },
    #[error("{}: unsupported dtype `{descr}` (supported: f32, f64, f16, i64, i32, i16, i8, u8, bool)", path.display())]
    UnsupportedDType { path: PathBuf, descr: String },
    #[error("{}: fortran-order arrays are not supported; save a C-contiguous array", path.display())]
    FortranOrder { path: PathBuf },
    #[error("{}: shape {shape:?} is too large", path.display())]
    TooLarge { path: PathBuf, shape: Vec<u64> },
    #[error("{}: data is truncated: {array} needs {expected} bytes, the file has {found}", path.display())]
    Truncated { path: PathBuf, array: String, expected: u64, found: u64 },
    #[error("{}: {array} needs {expected} bytes, got {found}", path.display())]
    SizeMismatch { path: PathBuf, array: String, expected: usize, found: usize },
    #[error("{}: {dtype} has no .npy dtype", path.display())]
    NoNpyDType { path: PathBuf, dtype: DType },
}

/// Reads a whole `.npy` file.
pub fn read_npy(path: &Path) -> Result<NpyArray, NpyError> {
    let file = std::fs::read(path).map_err(|source| NpyError::Read { path: path.to_path_buf(), source })?;
    let header_err = |reason: String| NpyError::Header { path: path.to_path_buf(), reason };
    // npyz multiplies the dims without overflow checks (a panic in debug
    // builds), so an absurd shape is rejected before it parses the header.
    if let Some(dims) = header_text(&file).and_then(shape_dims) {
        let dims = dims.map_err(header_err)?;
        if dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d)).is_none() {
            return Err(NpyError::TooLarge { path: path.to_path_buf(), shape: dims });
        }
    }
    let mut reader = &file[..];
    let header = npyz::NpyHeader::from_reader(&mut reader).map_err(|e| header_err(one_line(&e.to_string())))?;
    let data = reader;
    let npyz::DType::Plain(ts) = header.dtype() else {
        return Err(NpyError::UnsupportedDType { path: path.to_path_buf(), descr: header.dtype().descr() });
    };
    let Some(dtype) = dtype_of(ts.type_char(), ts.size_field()) else {
        return Err(NpyError::UnsupportedDType { path: path.to_path_buf(), descr: ts.to_string() });
    };
    let shape_u64 = header.shape().to_vec();
    if header.order() == npyz::Order::Fortran && shape_u64.iter().filter(|&&d| d > 1).count() > 1 {
        return Err(NpyError::FortranOrder { path: path.to_path_buf() });
    }
    let too_large = || NpyError::TooLarge { path: path.to_path_buf(), shape: shape_u64.clone() };
    let shape: Vec<usize> =
        shape_u64.iter().map(|&d| usize::try_from(d)).collect::<Result<_, _>>().map_err(|_| too_large())?;
    let nbytes = shape.iter().try_fold(dtype.size(), |acc, &d| acc.checked_mul(d)).ok_or_else(too_large)?;
    if nbytes > data.len() {
        return Err(NpyError::Truncated {
            path: path.to_path_buf(),
            array: describe(dtype, &shape),
            expected: nbytes as u64,
            found: data.len() as u64,
        });
    }
    let mut bytes = data[..nbytes].to_vec();
    if ts.endianness() == npyz::Endianness::Big {
        for elem in bytes.chunks_exact_mut(dtype.size()) {
            elem.reverse();
        }
    }
    Ok(NpyArray { dtype, shape, bytes })
}

/// A parser's message on one line: npyz reports a header dict that does
/// not parse with a source excerpt and a caret over several lines
/// (`syntax error:  --> 1:8`, the excerpt, `= expected ...`); this keeps
/// the message, the position and the expectation.
fn one_line(message: &str) -> String {
    let mut lines = message.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or_default();
    let mut out = match first.split_once("-->") {
        Some((head, at)) => format!("{} at {}", head.trim_end().trim_end_matches(':'), at.trim()),
        None => first.to_string(),
    };
    if let Some(note) = lines.find_map(|l| l.strip_prefix("= ")) {
        out.push_str(&format!(" ({note})"));
    }
    out
}

/// The header dict's text, when the file starts like a `.npy` file.
fn header_text(file: &[u8]) -> Option<&str> {
    let rest = file.strip_prefix(b"\x93NUMPY")?;
    let (len, start): (usize, usize) = match *rest.first()? {
        1 => (usize::from(u16::from_le_bytes(rest.get(2..4)?.try_into().ok()?)), 4),
        _ => (usize::try_from(u32::from_le_bytes(rest.get(2..6)?.try_into().ok()?)).ok()?, 6),
    };
    std::str::from_utf8(rest.get(start..start.checked_add(len)?)?).ok()
}

/// The dims of the header's `'shape'` tuple: `None` when there is no such
/// key (npyz reports that), an error when it is not a tuple of decimal
/// integers (numpy writes nothing else).
fn shape_dims(header: &str) -> Option<Result<Vec<u64>, String>> {
    let at = header.find("'shape'").or_else(|| header.find("\"shape\""))?;
    let after = &header[at + "'shape'".len()..];
    let tuple = after.trim_start().strip_prefix(':')?.trim_start();
    let bad = || Err("'shape' is not a tuple of integers".to_owned());
    let Some(inner) = tuple.strip_prefix('(').and_then(|t| t.split_once(')')).map(|(inner, _)| inner) else {
        return Some(bad());
    };
    let mut dims = Vec::new();
    for part in inner.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.parse::<u64>() {
            Ok(d) => dims.push(d),
            Err(_) => return Some(bad()),
        }
    }
    Some(Ok(dims))
}

fn dtype_of(c: TypeChar, size: u64) -> Option<DType> {
    Some(match (c, size) {
        (TypeChar::Float, 4) => DType::F32,
        (TypeChar::Float, 8) => DType::F64,
        (TypeChar::Float, 2) => DType::F16,
        (TypeChar::Int, 8) => DType::I64,
        (TypeChar::Int, 4) => DType::I32,
        (TypeChar::Int, 2) => DType::I16,
        (TypeChar::Int, 1) => DType::I8,
        (TypeChar::Uint, 1) => DType::U8,
        (TypeChar::Bool, 1) => DType::Bool,
        _ => return None,
    })
}

/// Writes `bytes` (little-endian, C order) as a `.npy` array.
pub fn write_npy(path: &Path, dtype: DType, shape: &[usize], bytes: &[u8]) -> Result<(), NpyError> {
    let expected = shape.iter().try_fold(dtype.size(), |acc, &d| acc.checked_mul(d));
    if expected != Some(bytes.len()) {
        return Err(NpyError::SizeMismatch {
            path: path.to_path_buf(),
            array: describe(dtype, shape),
            expected: expected.unwrap_or(usize::MAX),
            found: bytes.len(),
        });
    }
    let write_err = |source| NpyError::Write { path: path.to_path_buf(), source };
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let file = File::create(path).map_err(write_err)?;
    let out = BufWriter::new(file);
    let result = match dtype {
        DType::F32 => {
            write_typed(out, &shape, bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())))
        }
        DType::F64 => {
            write_typed(out, &shape, bytes.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())))
        }
        DType::F16 => write_typed(
            out,
            &shape,
            bytes.chunks_exact(2).map(|b| half::f16::from_bits(u16::from_le_bytes(b.try_into().unwrap()))),
        ),
        DType::I64 => {
            write_typed(out, &shape, bytes.chunks_exact(8).map(|b| i64::from_le_bytes(b.try_into().unwrap())))
        }
        DType::I32 => {
            write_typed(out, &shape, bytes.chunks_exact(4).map(|b| i32::from_le_bytes(b.try_into().unwrap())))
        }
        DType::I16 => {
            write_typed(out, &shape, bytes.chunks_exact(2).map(|b| i16::from_le_bytes(b.try_into().unwrap())))
        }
        DType::I8 => write_typed(out, &shape, bytes.iter().map(|&b| b as i8)),
        DType::U8 => write_typed(out, &shape, bytes.iter().copied()),
        DType::Bool => write_typed(out, &shape, bytes.iter().map(|&b| b != 0)),
        DType::Bf16 => return Err(NpyError::NoNpyDType { path: path.to_path_buf(), dtype }),
    };
    result.map_err(write_err)
}

fn write_typed<T: npyz::AutoSerialize>(
    out: BufWriter<File>,
    shape: &[u64],
    values: impl Iterator<Item = T>,
) -> std::io::Result<()> {
    let mut writer = npyz::WriteOptions::new().default_dtype().shape(shape).writer(out).begin_nd()?;
    writer.extend(values)?;
    writer.finish()
}

impl fmt::Display for NpyArray {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rlx-npy-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A `.npy` file written by hand: version 1.0, header padded with
    /// spaces so the data starts at a multiple of 64, as numpy does.
    fn handmade(descr: &str, fortran: bool, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut dict = format!(
            "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
            if fortran { "True" } else { "False" }
        );
        while (10 + dict.len() + 1) % 64 != 0 {
            dict.push(' ');
        }
        dict.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        out.extend_from_slice(dict.as_bytes());
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn round_trips_every_supported_dtype() {
        let dir = temp_dir("roundtrip");
        let cases: Vec<(DType, Vec<usize>)> = vec![
            (DType::F32, vec![2, 3]),
            (DType::F64, vec![4]),
            (DType::F16, vec![3, 1]),
            (DType::I64, vec![2, 2]),
            (DType::I32, vec![5]),
            (DType::I16, vec![1, 1, 3]),
            (DType::I8, vec![7]),
            (DType::U8, vec![2, 4]),
            (DType::Bool, vec![6]),
            (DType::F32, vec![]),
            (DType::F32, vec![0, 3]),
        ];
        for (i, (dtype, shape)) in cases.into_iter().enumerate() {
            let n: usize = shape.iter().product::<usize>() * dtype.size();
            let bytes: Vec<u8> =
                (0..n).map(|j| if dtype == DType::Bool { (j % 2) as u8 } else { (j * 37 + i) as u8 }).collect();
            let path = dir.join(format!("{i}.npy"));
            write_npy(&path, dtype, &shape, &bytes).unwrap();
            let back = read_npy(&path).unwrap();
            assert_eq!(back, NpyArray { dtype, shape: shape.clone(), bytes }, "{dtype} {shape:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn reads_files_numpy_writes() {
        let dir = temp_dir("numpy");
        let data: Vec<u8> = [1.5f32, -2.0, 3.25].iter().flat_map(|x| x.to_le_bytes()).collect();
        let path = dir.join("a.npy");
        std::fs::write(&path, handmade("<f4", false, "(1, 3)", &data)).unwrap();
        let a = read_npy(&path).unwrap();
        assert_eq!(a.describe(), "f32[1, 3]");
        assert_eq!(a.bytes, data);
        // Big-endian data comes back little-endian.
        let be: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|x| x.to_be_bytes()).collect();
        std::fs::write(&path, handmade(">f4", false, "(2,)", &be)).unwrap();
        let a = read_npy(&path).unwrap();
        assert_eq!(a.bytes, [1.5f32, -2.0].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>());
        // Fortran order is the same as C order with one non-trivial dim.
        std::fs::write(&path, handmade("<f4", true, "(1, 3)", &data)).unwrap();
        assert_eq!(read_npy(&path).unwrap().bytes, data);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_files_are_one_line_errors_naming_the_file() {
        let dir = temp_dir("errors");
        let path = dir.join("x.npy");
        let p = path.display().to_string();
        let check = |contents: &[u8], want: &str| {
            std::fs::write(&path, contents).unwrap();
            let msg = read_npy(&path).unwrap_err().to_string();
            assert!(msg.starts_with(&format!("{p}: ")) && msg.contains(want) && !msg.contains('\n'), "{msg}");
        };
        check(b"not an npy file at all", "not a valid .npy file");
        check(&handmade("<c8", false, "(2,)", &[0; 16]), "unsupported dtype `<c8`");
        check(&handmade("<u4", false, "(2,)", &[0; 8]), "unsupported dtype `<u4`");
        check(&handmade("<f4", true, "(2, 3)", &[0; 24]), "fortran-order arrays are not supported");
        check(
            &handmade("<f4", false, "(2, 3)", &[0; 20]),
            "data is truncated: f32[2, 3] needs 24 bytes, the file has 20",
        );
        check(&handmade("<f4", false, "(2, 3)", &[0; 20])[..30], "not a valid .npy file");
        check(&handmade("<f8", false, "(4294967296, 4294967296)", &[]), "is too large");
        check(&handmade("<f8", false, "(65536, 65536, 65536, 65536, 2)", &[]), "is too large");
        check(&handmade("<f8", false, "[2, 3]", &[]), "'shape' is not a tuple of integers");
        // A header dict that does not parse: npyz's parser error spans
        // several lines (an excerpt with a caret); the message keeps one.
        let mut garbage = handmade("<f4", false, "(2,)", &[0; 8]);
        garbage[10..20].copy_from_slice(b"{'descr' ?");
        check(&garbage, "not a valid .npy file: could not parse Python expression: syntax error at 1:8 (expected ");
        let mut garbage = handmade("<f4", false, "(2,)", &[0; 8]);
        garbage[10..14].copy_from_slice(b"@@@@");
        check(&garbage, "not a valid .npy file");
        let missing = dir.join("missing.npy");
        let msg = read_npy(&missing).unwrap_err().to_string();
        assert!(msg.starts_with(&format!("cannot read {}: ", missing.display())), "{msg}");

        let msg = write_npy(&path, DType::F32, &[2, 2], &[0; 12]).unwrap_err().to_string();
        assert_eq!(msg, format!("{p}: f32[2, 2] needs 16 bytes, got 12"));
        let msg = write_npy(&path, DType::Bf16, &[1], &[0; 2]).unwrap_err().to_string();
        assert_eq!(msg, format!("{p}: bf16 has no .npy dtype"));
        let msg = write_npy(&dir.join("no/such/dir.npy"), DType::U8, &[1], &[0]).unwrap_err().to_string();
        assert!(msg.starts_with("cannot write "), "{msg}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
