//! `.npy` files for model CLIs: read an input array as raw little-endian
//! bytes plus dtype and shape, write an output array back.
//!
//! The header is a Python dict literal of three keys (`'descr'`,
//! `'fortran_order'`, `'shape'`); [`parse_header`] reads exactly that
//! grammar and nothing else, with a one-line error naming the byte where
//! it stops. (A general Python-literal parser such as `npyz`'s pulls a PEG
//! parser into every model binary for these three keys; see
//! `docs/decisions.md`.) The data section is read as raw bytes
//! (byte-swapped from big-endian files), so arrays go straight into the
//! arena without a per-element detour.

use std::fmt;
use std::path::{Path, PathBuf};

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
    let (text, data) = split_header(&file).map_err(header_err)?;
    let header = parse_header(text).map_err(header_err)?;
    let unsupported = || NpyError::UnsupportedDType { path: path.to_path_buf(), descr: header.descr.clone() };
    let (dtype, big_endian) = dtype_of(&header.descr).ok_or_else(unsupported)?;
    if header.fortran_order && header.shape.iter().filter(|&&d| d > 1).count() > 1 {
        return Err(NpyError::FortranOrder { path: path.to_path_buf() });
    }
    let too_large = || NpyError::TooLarge { path: path.to_path_buf(), shape: header.shape.clone() };
    let shape: Vec<usize> =
        header.shape.iter().map(|&d| usize::try_from(d)).collect::<Result<_, _>>().map_err(|_| too_large())?;
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
    if big_endian {
        for elem in bytes.chunks_exact_mut(dtype.size()) {
            elem.reverse();
        }
    }
    Ok(NpyArray { dtype, shape, bytes })
}

const MAGIC: &[u8] = b"\x93NUMPY";

/// The header dict's text and the data after it.
fn split_header(file: &[u8]) -> Result<(&str, &[u8]), String> {
    let rest = file.strip_prefix(MAGIC).ok_or("it does not start with the .npy magic `\\x93NUMPY`")?;
    let short = || "the file ends inside its header".to_owned();
    let major = *rest.first().ok_or_else(short)?;
    let (len, start): (usize, usize) = match major {
        1 => (usize::from(u16::from_le_bytes(rest.get(2..4).ok_or_else(short)?.try_into().expect("2 bytes"))), 4),
        2 | 3 => {
            let len = u32::from_le_bytes(rest.get(2..6).ok_or_else(short)?.try_into().expect("4 bytes"));
            (usize::try_from(len).map_err(|_| short())?, 6)
        }
        v => return Err(format!("unknown format version {v}")),
    };
    let end = start.checked_add(len).ok_or_else(short)?;
    let text = rest.get(start..end).ok_or_else(short)?;
    let text = std::str::from_utf8(text).map_err(|e| format!("the header is not text (byte {})", e.valid_up_to()))?;
    Ok((text, &rest[end..]))
}

/// The three keys of a `.npy` header.
#[derive(Debug, PartialEq)]
struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<u64>,
}

/// Parses `{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }`
/// (keys in any order, single or double quotes, optional trailing commas,
/// trailing spaces and newline), the only form numpy writes. Errors name
/// the byte of the header where parsing stopped.
fn parse_header(text: &str) -> Result<Header, String> {
    let mut p = Cursor { text, at: 0 };
    let (mut descr, mut fortran_order, mut shape) = (None, None, None);
    p.expect('{')?;
    loop {
        if p.eat('}') {
            break;
        }
        p.skip_space();
        let key_at = p.at;
        let key = p.string()?;
        let at_key = |what: String| format!("{what} at byte {key_at} of the header");
        match key.as_str() {
            "descr" if descr.is_none() => {}
            "fortran_order" if fortran_order.is_none() => {}
            "shape" if shape.is_none() => {}
            "descr" | "fortran_order" | "shape" => return Err(at_key(format!("'{key}' is given twice"))),
            other => return Err(at_key(format!("unknown key '{other}'"))),
        }
        p.expect(':')?;
        match key.as_str() {
            "descr" => descr = Some(p.string()?),
            "fortran_order" => fortran_order = Some(p.boolean()?),
            _ => shape = Some(p.tuple()?),
        }
        if !p.eat(',') {
            p.expect('}')?;
            break;
        }
    }
    p.skip_space();
    if p.at != text.len() {
        return Err(p.error("text after the header dict"));
    }
    let missing = |key: &str| format!("the header has no '{key}'");
    Ok(Header {
        descr: descr.ok_or_else(|| missing("descr"))?,
        fortran_order: fortran_order.ok_or_else(|| missing("fortran_order"))?,
        shape: shape.ok_or_else(|| missing("shape"))?,
    })
}

/// A position in the header text.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl Cursor<'_> {
    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn error(&self, what: &str) -> String {
        format!("{what} at byte {} of the header", self.at)
    }

    fn skip_space(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_space();
        let hit = self.rest().starts_with(c);
        if hit {
            self.at += c.len_utf8();
        }
        hit
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.error(&format!("expected `{c}`")))
        }
    }

    /// A quoted string without escapes (numpy's keys and dtypes have none).
    fn string(&mut self) -> Result<String, String> {
        self.skip_space();
        let quote = match self.rest().chars().next() {
            Some(q @ ('\'' | '"')) => q,
            _ => return Err(self.error("expected a quoted string")),
        };
        let body = &self.rest()[1..];
        let Some(end) = body.find(quote) else { return Err(self.error("unterminated string")) };
        let s = body[..end].to_owned();
        if s.contains('\\') {
            return Err(self.error("escapes in a header string are not supported"));
        }
        self.at += end + 2;
        Ok(s)
    }

    fn boolean(&mut self) -> Result<bool, String> {
        self.skip_space();
        for (word, value) in [("True", true), ("False", false)] {
            if self.rest().starts_with(word) {
                self.at += word.len();
                return Ok(value);
            }
        }
        Err(self.error("expected True or False"))
    }

    /// `()`, `(n,)`, `(n, m)`, `(n, m,)`: decimal integers (a Python 2 `L`
    /// suffix allowed).
    fn tuple(&mut self) -> Result<Vec<u64>, String> {
        self.skip_space();
        if !self.eat('(') {
            return Err(self.error("'shape' is not a tuple of integers"));
        }
        let mut dims = Vec::new();
        loop {
            if self.eat(')') {
                return Ok(dims);
            }
            self.skip_space();
            let digits = self.rest().bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return Err(self.error("'shape' is not a tuple of integers"));
            }
            let dim = self.rest()[..digits].parse::<u64>().map_err(|_| self.error("a 'shape' dim is too large"))?;
            self.at += digits;
            if self.rest().starts_with('L') {
                self.at += 1;
            }
            dims.push(dim);
            if !self.eat(',') {
                self.expect(')')?;
                return Ok(dims);
            }
        }
    }
}

/// The dtype of a descr (`<f4`, `|b1`, ...) and whether its data is
/// big-endian.
fn dtype_of(descr: &str) -> Option<(DType, bool)> {
    let (order, code) = descr.split_at_checked(1)?;
    let big = match order {
        "<" | "|" | "=" => false,
        ">" => true,
        _ => return None,
    };
    let dtype = match code {
        "f4" => DType::F32,
        "f8" => DType::F64,
        "f2" => DType::F16,
        "i8" => DType::I64,
        "i4" => DType::I32,
        "i2" => DType::I16,
        "i1" => DType::I8,
        "u1" => DType::U8,
        "u2" => DType::U16,
        "u4" => DType::U32,
        "u8" => DType::U64,
        "b1" => DType::Bool,
        _ => return None,
    };
    // `=` is native order: little-endian on every target this builds for.
    Some((dtype, big && dtype.size() > 1))
}

/// The descr numpy writes for a dtype.
fn descr_of(dtype: DType) -> Option<&'static str> {
    Some(match dtype {
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::F16 => "<f2",
        DType::I64 => "<i8",
        DType::I32 => "<i4",
        DType::I16 => "<i2",
        DType::I8 => "|i1",
        DType::U8 => "|u1",
        DType::U16 => "<u2",
        DType::U32 => "<u4",
        DType::U64 => "<u8",
        DType::Bool => "|b1",
        DType::Bf16 => return None,
    })
}

/// Writes `bytes` (little-endian, C order) as a `.npy` array (format 1.0,
/// or 2.0 for a header over 64 KiB), the header padded so the data starts
/// at a multiple of 64 bytes, as numpy does.
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
    let descr = descr_of(dtype).ok_or(NpyError::NoNpyDType { path: path.to_path_buf(), dtype })?;
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let tuple = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple}, }}");
    let prefix = if dict.len() + 11 < 65536 { 10 } else { 12 };
    while (prefix + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = Vec::with_capacity(prefix + dict.len() + bytes.len());
    out.extend_from_slice(MAGIC);
    if prefix == 10 {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    if dtype == DType::Bool {
        out.extend(bytes.iter().map(|&b| u8::from(b != 0)));
    } else {
        out.extend_from_slice(bytes);
    }
    std::fs::write(path, out).map_err(|source| NpyError::Write { path: path.to_path_buf(), source })
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
            (DType::U16, vec![2, 2]),
            (DType::U32, vec![3]),
            (DType::U64, vec![1, 2]),
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
        check(&handmade("<U3", false, "(2,)", &[0; 24]), "unsupported dtype `<U3`");
        check(&handmade("<f4", true, "(2, 3)", &[0; 24]), "fortran-order arrays are not supported");
        check(
            &handmade("<f4", false, "(2, 3)", &[0; 20]),
            "data is truncated: f32[2, 3] needs 24 bytes, the file has 20",
        );
        check(&handmade("<f4", false, "(2, 3)", &[0; 20])[..30], "not a valid .npy file");
        check(&handmade("<f8", false, "(4294967296, 4294967296)", &[]), "is too large");
        check(&handmade("<f8", false, "(65536, 65536, 65536, 65536, 2)", &[]), "is too large");
        check(&handmade("<f8", false, "[2, 3]", &[]), "'shape' is not a tuple of integers");
        // A header dict that does not parse: one line naming the byte.
        let mut garbage = handmade("<f4", false, "(2,)", &[0; 8]);
        garbage[10..20].copy_from_slice(b"{'descr' ?");
        check(&garbage, "not a valid .npy file: expected `:` at byte 9 of the header");
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

    #[test]
    fn the_header_grammar_is_numpys_and_nothing_more() {
        let h = |shape: Vec<u64>| Header { descr: "<f4".into(), fortran_order: false, shape };
        assert_eq!(parse_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }   \n"), Ok(h(vec![2, 3])));
        assert_eq!(parse_header("{\"shape\": (), \"descr\": \"<f4\", \"fortran_order\": False}"), Ok(h(vec![])));
        assert_eq!(parse_header("{'descr':'<f4','fortran_order':False,'shape':(3L,)}"), Ok(h(vec![3])));
        let err = |text: &str| parse_header(text).unwrap_err();
        assert_eq!(err("{'descr': '<f4', 'descr': '<f4'}"), "'descr' is given twice at byte 17 of the header");
        assert_eq!(err("{'descr': '<f4', 'extra': 1}"), "unknown key 'extra' at byte 17 of the header");
        assert_eq!(err("{'descr': '<f4', 'fortran_order': False}"), "the header has no 'shape'");
        assert_eq!(err("{'descr': '<f4', 'fortran_order': 0}"), "expected True or False at byte 34 of the header");
        assert_eq!(err("{'shape': (2, -3)}"), "'shape' is not a tuple of integers at byte 14 of the header");
        assert_eq!(err("{'shape': (99999999999999999999,)}"), "a 'shape' dim is too large at byte 11 of the header");
        assert_eq!(err("{'descr': 'a\\b'}"), "escapes in a header string are not supported at byte 10 of the header");
        assert_eq!(err("{'descr': '<f4"), "unterminated string at byte 10 of the header");
        assert_eq!(err("{} x"), "text after the header dict at byte 3 of the header");
        assert_eq!(err(""), "expected `{` at byte 0 of the header");
    }

    #[test]
    fn descrs_map_to_dtypes_and_byte_order() {
        assert_eq!(dtype_of("<f4"), Some((DType::F32, false)));
        assert_eq!(dtype_of(">i8"), Some((DType::I64, true)));
        assert_eq!(dtype_of("|b1"), Some((DType::Bool, false)));
        assert_eq!(dtype_of(">u1"), Some((DType::U8, false)), "one byte has no order");
        assert_eq!(dtype_of(">u4"), Some((DType::U32, true)));
        assert_eq!(dtype_of("<u8"), Some((DType::U64, false)), "u8 is numpy's uint64");
        assert_eq!(dtype_of("<c16"), None);
        assert_eq!(dtype_of("<c8"), None);
        assert_eq!(dtype_of(""), None);
        for d in DType::ALL {
            if let Some(descr) = descr_of(d) {
                assert_eq!(dtype_of(descr), Some((d, false)), "{d}");
            }
        }
    }

    /// Headers the fuzzers found hanging a general Python-literal parser
    /// (`tests/fuzz-regressions/npy/`): a one-line error (the grammar is
    /// linear, so there is nothing to hang on).
    #[test]
    fn fuzzer_found_headers_are_quick_one_line_errors() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz-regressions/npy");
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let msg = read_npy(&path).unwrap_err().to_string();
            assert!(msg.contains("not a valid .npy file") && !msg.contains('\n'), "{msg}");
        }
    }
}
