//! The GGUF container (llama.cpp's `gguf.cpp`, `docs/gguf.md` there):
//! `GGUF`, version, tensor count, metadata count; the metadata, each a
//! key and a typed value (scalars, strings, arrays); the tensor infos
//! (name, dims innermost first, type, offset into the data section); the
//! data section at the next multiple of `general.alignment` (32 by
//! default). Everything little-endian.
//!
//! Read from one byte slice (a file read or mapped whole). Every read is
//! bounds-checked, every size computed with checked arithmetic, and every
//! count checked against the bytes left before anything is allocated by
//! it, so a hostile file gets an error naming what was being read.

use std::collections::BTreeMap;

use crate::error::{self, GgufError};
use crate::quants;
use crate::types::GgmlType;

/// The data section's alignment when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: usize = 32;

/// ggml's `GGML_MAX_DIMS`.
pub const MAX_DIMS: usize = 4;

/// Arrays of arrays deeper than this are refused (no real file nests at
/// all); it bounds the reader's recursion.
const MAX_ARRAY_DEPTH: usize = 4;

/// A metadata value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(Vec<Value>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Value {
    /// A non-negative integer of any width.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(x) => Some(x.into()),
            Value::U16(x) => Some(x.into()),
            Value::U32(x) => Some(x.into()),
            Value::U64(x) => Some(x),
            Value::I8(x) => u64::try_from(x).ok(),
            Value::I16(x) => u64::try_from(x).ok(),
            Value::I32(x) => u64::try_from(x).ok(),
            Value::I64(x) => u64::try_from(x).ok(),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(x) => Some(x.into()),
            Value::F64(x) => Some(x),
            _ => self.as_u64().map(|x| x as f64),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The value for a message: a scalar or a string as it is, an array
    /// by its length (a vocabulary would flood the message).
    pub fn describe(&self) -> String {
        match self {
            Value::String(s) if s.chars().count() > 80 => format!("{:?}...", s.chars().take(80).collect::<String>()),
            Value::String(s) => format!("{s:?}"),
            Value::Array(a) => format!("an ARRAY of {} values", a.len()),
            Value::U8(x) => x.to_string(),
            Value::I8(x) => x.to_string(),
            Value::U16(x) => x.to_string(),
            Value::I16(x) => x.to_string(),
            Value::U32(x) => x.to_string(),
            Value::I32(x) => x.to_string(),
            Value::U64(x) => x.to_string(),
            Value::I64(x) => x.to_string(),
            Value::F32(x) => x.to_string(),
            Value::F64(x) => x.to_string(),
            Value::Bool(x) => x.to_string(),
        }
    }

    /// ggml's name of the value's type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::U8(_) => "UINT8",
            Value::I8(_) => "INT8",
            Value::U16(_) => "UINT16",
            Value::I16(_) => "INT16",
            Value::U32(_) => "UINT32",
            Value::I32(_) => "INT32",
            Value::F32(_) => "FLOAT32",
            Value::Bool(_) => "BOOL",
            Value::String(_) => "STRING",
            Value::Array(_) => "ARRAY",
            Value::U64(_) => "UINT64",
            Value::I64(_) => "INT64",
            Value::F64(_) => "FLOAT64",
        }
    }
}

/// One tensor's info: where its bytes are and how to read them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    pub name: String,
    /// ggml order: the innermost (contiguous) axis first.
    pub dims: Vec<usize>,
    pub ty: GgmlType,
    /// Start of the tensor's bytes in the data section.
    pub offset: usize,
    /// Bytes of the tensor (whole blocks).
    pub bytes: usize,
}

impl TensorInfo {
    pub fn elements(&self) -> usize {
        // Checked when the info was read.
        self.dims.iter().product()
    }

    /// The dims outermost first, as torch and safetensors write a shape.
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().copied().collect()
    }
}

/// A parsed GGUF file over the bytes it was read from.
#[derive(Debug)]
pub struct Gguf<'a> {
    pub version: u32,
    metadata: BTreeMap<String, Value>,
    tensors: Vec<TensorInfo>,
    by_name: BTreeMap<String, usize>,
    pub alignment: usize,
    data: &'a [u8],
}

/// A bounds-checked little-endian reader.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn left(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn take(&mut self, n: u64, what: &dyn Fn() -> String) -> Result<&'a [u8], GgufError> {
        let truncated = || GgufError::Truncated { what: what(), at: self.at, need: n, len: self.bytes.len() };
        let n = usize::try_from(n).map_err(|_| truncated())?;
        if n > self.left() {
            return Err(truncated());
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &dyn Fn() -> String) -> Result<[u8; N], GgufError> {
        let b = self.take(N as u64, what)?;
        let mut out = [0; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    fn u32(&mut self, what: &dyn Fn() -> String) -> Result<u32, GgufError> {
        self.array(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: &dyn Fn() -> String) -> Result<u64, GgufError> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// A count of items, each at least `min_bytes` long: refused when
    /// they cannot fit in what is left, before anything is allocated.
    fn count(&mut self, min_bytes: usize, what: &dyn Fn() -> String) -> Result<usize, GgufError> {
        let count = self.u64(what)?;
        let fits = usize::try_from(count).ok().and_then(|c| c.checked_mul(min_bytes)).is_some_and(|n| n <= self.left());
        if !fits {
            return Err(GgufError::Count { what: what(), count, left: self.left() });
        }
        Ok(count as usize)
    }

    fn string(&mut self, what: &dyn Fn() -> String) -> Result<String, GgufError> {
        let len = self.u64(what)?;
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| GgufError::Model(format!("{}: not UTF-8 text", what())))
    }
}

/// Bytes the smallest value of type id `ty` takes (a string's length,
/// an array's type and count), for bounding counts.
fn min_value_bytes(ty: u32) -> usize {
    match ty {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        8 | 10..=12 => 8,
        9 => 12,
        _ => 1,
    }
}

fn read_value(c: &mut Cursor<'_>, ty: u32, key: &str, depth: usize) -> Result<Value, GgufError> {
    let what = || format!("the value of `{key}`");
    Ok(match ty {
        0 => Value::U8(c.array::<1>(&what)?[0]),
        1 => Value::I8(c.array::<1>(&what)?[0] as i8),
        2 => Value::U16(u16::from_le_bytes(c.array(&what)?)),
        3 => Value::I16(i16::from_le_bytes(c.array(&what)?)),
        4 => Value::U32(u32::from_le_bytes(c.array(&what)?)),
        5 => Value::I32(i32::from_le_bytes(c.array(&what)?)),
        6 => Value::F32(f32::from_le_bytes(c.array(&what)?)),
        7 => match c.array::<1>(&what)?[0] {
            0 => Value::Bool(false),
            1 => Value::Bool(true),
            other => return Err(error::metadata(key, format!("a BOOL must be 0 or 1, found {other}"))),
        },
        8 => Value::String(c.string(&what)?),
        9 => {
            if depth >= MAX_ARRAY_DEPTH {
                return Err(error::metadata(key, format!("arrays nested deeper than {MAX_ARRAY_DEPTH}")));
            }
            let item = c.u32(&what)?;
            let n = c.count(min_value_bytes(item), &|| format!("the array `{key}`"))?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(read_value(c, item, key, depth + 1)?);
            }
            Value::Array(items)
        }
        10 => Value::U64(c.u64(&what)?),
        11 => Value::I64(i64::from_le_bytes(c.array(&what)?)),
        12 => Value::F64(f64::from_le_bytes(c.array(&what)?)),
        other => return Err(error::metadata(key, format!("unknown value type {other}"))),
    })
}

/// Bytes the smallest tensor info takes: a name length, one dim count,
/// a type and an offset.
const MIN_TENSOR_INFO: usize = 8 + 4 + 4 + 8;

/// Bytes the smallest metadata entry takes: a key length and a type.
const MIN_KV: usize = 8 + 4 + 1;

impl<'a> Gguf<'a> {
    /// Parses the header, the metadata and the tensor infos of `bytes`
    /// and checks that every tensor lies inside the data section.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, GgufError> {
        let mut c = Cursor { bytes, at: 0 };
        let magic = c.take(4, &|| "the magic `GGUF`".to_string()).map_err(|_| GgufError::Magic(bytes.to_vec()))?;
        if magic != b"GGUF" {
            return Err(GgufError::Magic(magic.to_vec()));
        }
        let version = c.u32(&|| "the version".to_string())?;
        match version {
            2 | 3 => {}
            v if v.swap_bytes() == 2 || v.swap_bytes() == 3 => return Err(GgufError::BigEndian(v)),
            v => return Err(GgufError::Version(v)),
        }
        let tensor_count = c.count(MIN_TENSOR_INFO, &|| "the tensor count".to_string())?;
        let kv_count = c.count(MIN_KV, &|| "the metadata count".to_string())?;
        let mut metadata = BTreeMap::new();
        for i in 0..kv_count {
            let key = c.string(&|| format!("the key of metadata entry {i}"))?;
            let ty = c.u32(&|| format!("the type of `{key}`"))?;
            let value = read_value(&mut c, ty, &key, 0)?;
            if metadata.insert(key.clone(), value).is_some() {
                return Err(GgufError::DuplicateKey(key));
            }
        }
        let alignment = match metadata.get("general.alignment") {
            None => DEFAULT_ALIGNMENT,
            Some(Value::U32(a)) if a.is_power_of_two() => *a as usize,
            Some(Value::U32(a)) => return Err(GgufError::Alignment((*a).into())),
            Some(other) => {
                return Err(error::metadata(
                    "general.alignment",
                    format!("must be a UINT32, found {}", other.type_name()),
                ))
            }
        };
        let mut infos = Vec::with_capacity(tensor_count);
        for i in 0..tensor_count {
            infos.push(read_tensor_info(&mut c, i, alignment)?);
        }
        // The data section starts at the next multiple of the alignment;
        // a file without tensors may end before it.
        let start = c.at.div_ceil(alignment).saturating_mul(alignment).min(bytes.len());
        let data = &bytes[start..];
        let mut by_name = BTreeMap::new();
        for (i, t) in infos.iter().enumerate() {
            if by_name.insert(t.name.clone(), i).is_some() {
                return Err(GgufError::DuplicateTensor(t.name.clone()));
            }
            let end = t.offset.checked_add(t.bytes);
            if end.is_none_or(|end| end > data.len()) {
                return Err(error::tensor(
                    &t.name,
                    format!(
                        "its {} bytes at offset {} run past the data section's {} bytes (the file is truncated?)",
                        t.bytes,
                        t.offset,
                        data.len()
                    ),
                ));
            }
        }
        Ok(Gguf { version, metadata, tensors: infos, by_name, alignment, data })
    }

    pub fn metadata(&self) -> &BTreeMap<String, Value> {
        &self.metadata
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.get(key)
    }

    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.by_name.get(name).map(|&i| &self.tensors[i])
    }

    /// The tensor's bytes as stored (whole blocks of its type): what a
    /// kernel reading the blocks directly would take.
    pub fn raw(&self, t: &TensorInfo) -> &'a [u8] {
        // In bounds: checked by `parse` for every info it made.
        &self.data[t.offset..t.offset + t.bytes]
    }

    /// The tensor's values as f32 (`quants::dequantize`).
    pub fn dequantize(&self, t: &TensorInfo) -> Vec<f32> {
        let mut out = vec![0.0; t.elements()];
        quants::dequantize(t.ty, self.raw(t), &mut out);
        out
    }
}

fn read_tensor_info(c: &mut Cursor<'_>, index: usize, alignment: usize) -> Result<TensorInfo, GgufError> {
    let name = c.string(&|| format!("the name of tensor {index}"))?;
    let what = || format!("the info of tensor `{name}`");
    let n_dims = c.u32(&what)? as usize;
    if !(1..=MAX_DIMS).contains(&n_dims) {
        return Err(error::tensor(&name, format!("{n_dims} dims: 1 to {MAX_DIMS} are allowed")));
    }
    let mut dims = Vec::with_capacity(n_dims);
    for _ in 0..n_dims {
        let d = c.u64(&what)?;
        dims.push(usize::try_from(d).map_err(|_| error::tensor(&name, format!("dim {d} overflows")))?);
    }
    let ty = GgmlType::from_id(c.u32(&what)?).map_err(|m| error::tensor(&name, m))?;
    let offset = c.u64(&what)?;
    let elements = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    let elements =
        elements.ok_or_else(|| error::tensor(&name, format!("dims {dims:?}: the element count overflows")))?;
    let bytes = ty.tensor_bytes(dims[0], elements).ok_or_else(|| {
        error::tensor(
            &name,
            format!(
                "dims {dims:?} of type {ty}: the row of {} is not a whole number of {}-value blocks",
                dims[0],
                ty.block_len()
            ),
        )
    })?;
    let offset = usize::try_from(offset).map_err(|_| error::tensor(&name, format!("offset {offset} overflows")))?;
    if offset % alignment != 0 {
        return Err(error::tensor(&name, format!("offset {offset} is not a multiple of the alignment {alignment}")));
    }
    Ok(TensorInfo { name, dims, ty, offset, bytes })
}
