//! Constant tensors: initializers and `Constant` nodes, inline or external.

use std::path::Path;

use half::{bf16, f16};
use rlx_sched::DType;

use crate::error::ImportError;
use crate::proto::{data_type, TensorProto, DATA_LOCATION_EXTERNAL};

/// The element values of a constant tensor, one variant per element type
/// the importer carries (the types the runtime's thunks compute in).
#[derive(Clone, Debug, PartialEq)]
pub enum ConstData {
    /// ONNX `FLOAT`.
    F32(Vec<f32>),
    /// ONNX `INT64`: shapes, axes, indices, token ids.
    I64(Vec<i64>),
    /// ONNX `INT32`.
    I32(Vec<i32>),
    /// ONNX `BOOL`.
    Bool(Vec<bool>),
    /// ONNX `INT8`, `UINT8`, `INT16`, `UINT16`, `UINT32` and `UINT64`:
    /// stored in their own type, computed in i64 ([`compute_dtype`]). Each
    /// value is in its type's range (`UINT64` as its two's-complement
    /// bits), as [`wrap_int`] leaves it.
    Int(DType, Vec<i64>),
}

impl ConstData {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            ConstData::F32(v) => v.len(),
            ConstData::I64(v) => v.len(),
            ConstData::I32(v) => v.len(),
            ConstData::Bool(v) => v.len(),
            ConstData::Int(_, v) => v.len(),
        }
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            ConstData::F32(_) => DType::F32,
            ConstData::I64(_) => DType::I64,
            ConstData::I32(_) => DType::I32,
            ConstData::Bool(_) => DType::Bool,
            ConstData::Int(d, _) => *d,
        }
    }

    /// The values as integers (bool as 0/1), `None` for floats.
    pub fn ints(&self) -> Option<Vec<i64>> {
        match self {
            ConstData::F32(_) => None,
            ConstData::I64(v) => Some(v.clone()),
            ConstData::I32(v) => Some(v.iter().map(|&x| i64::from(x)).collect()),
            ConstData::Bool(v) => Some(v.iter().map(|&x| i64::from(x)).collect()),
            ConstData::Int(_, v) => Some(v.clone()),
        }
    }

    /// The values as f64 (exact for every f32 and i32, for i64 up to 2^53).
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            ConstData::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            ConstData::I64(v) => v.iter().map(|&x| x as f64).collect(),
            ConstData::I32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            ConstData::Bool(v) => v.iter().map(|&x| f64::from(u8::from(x))).collect(),
            ConstData::Int(DType::U64, v) => v.iter().map(|&x| x as u64 as f64).collect(),
            ConstData::Int(_, v) => v.iter().map(|&x| x as f64).collect(),
        }
    }

    /// Integers (bool as 0/1) as a tensor of `dtype`, wrapping as a cast
    /// to that type would; `None` when `dtype` is F32 or not carried.
    pub fn from_ints(dtype: DType, v: impl IntoIterator<Item = i64>) -> Option<ConstData> {
        let v = v.into_iter();
        Some(match dtype {
            DType::I64 => ConstData::I64(v.collect()),
            DType::I32 => ConstData::I32(v.map(|x| x as i32).collect()),
            DType::Bool => ConstData::Bool(v.map(|x| x != 0).collect()),
            d if is_carried_int(d) => ConstData::Int(d, v.map(|x| wrap_int(d, x)).collect()),
            _ => return None,
        })
    }

    /// The elements in little-endian bytes, as a buffer of `dtype()` holds
    /// them (bool as one byte, 0 or 1).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            ConstData::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ConstData::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ConstData::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ConstData::Bool(v) => v.iter().map(|&x| u8::from(x)).collect(),
            ConstData::Int(d, v) => v.iter().flat_map(|x| x.to_le_bytes().into_iter().take(d.size())).collect(),
        }
    }

    /// The values of a buffer of `dtype` from its little-endian bytes, as
    /// the importer holds them: f16, bf16 and f64 read as f32 (the type they
    /// are computed in), the integer types of [`is_carried_int`] as `Int`.
    /// `None` when `bytes` is not a whole number of elements.
    pub fn from_le_bytes(dtype: DType, bytes: &[u8]) -> Option<ConstData> {
        fn words<const N: usize>(bytes: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
            bytes.chunks_exact(N).map(|c| c.try_into().expect("chunks_exact yields N bytes"))
        }
        if !bytes.len().is_multiple_of(dtype.size()) {
            return None;
        }
        let int = |v: Vec<i64>| ConstData::Int(dtype, v);
        Some(match dtype {
            DType::F32 => ConstData::F32(words::<4>(bytes).map(f32::from_le_bytes).collect()),
            DType::F64 => ConstData::F32(words::<8>(bytes).map(|c| f64::from_le_bytes(c) as f32).collect()),
            DType::F16 => ConstData::F32(words::<2>(bytes).map(|c| f16::from_le_bytes(c).to_f32()).collect()),
            DType::Bf16 => ConstData::F32(words::<2>(bytes).map(|c| bf16::from_le_bytes(c).to_f32()).collect()),
            DType::I64 => ConstData::I64(words::<8>(bytes).map(i64::from_le_bytes).collect()),
            DType::I32 => ConstData::I32(words::<4>(bytes).map(i32::from_le_bytes).collect()),
            DType::Bool => ConstData::Bool(bytes.iter().map(|&b| b != 0).collect()),
            DType::I8 => int(bytes.iter().map(|&b| i64::from(b as i8)).collect()),
            DType::U8 => int(bytes.iter().map(|&b| i64::from(b)).collect()),
            DType::I16 => int(words::<2>(bytes).map(|c| i64::from(i16::from_le_bytes(c))).collect()),
            DType::U16 => int(words::<2>(bytes).map(|c| i64::from(u16::from_le_bytes(c))).collect()),
            DType::U32 => int(words::<4>(bytes).map(|c| i64::from(u32::from_le_bytes(c))).collect()),
            DType::U64 => int(words::<8>(bytes).map(i64::from_le_bytes).collect()),
        })
    }

    /// The elements at `indices`, same type.
    pub fn select(&self, indices: impl IntoIterator<Item = usize>) -> ConstData {
        let idx = indices.into_iter();
        match self {
            ConstData::F32(v) => ConstData::F32(idx.map(|i| v[i]).collect()),
            ConstData::I64(v) => ConstData::I64(idx.map(|i| v[i]).collect()),
            ConstData::I32(v) => ConstData::I32(idx.map(|i| v[i]).collect()),
            ConstData::Bool(v) => ConstData::Bool(idx.map(|i| v[i]).collect()),
            ConstData::Int(d, v) => ConstData::Int(*d, idx.map(|i| v[i]).collect()),
        }
    }
}

/// The element type of a buffer holding an ONNX `TensorProto.DataType`
/// inside the graph, or `None` for one the importer does not carry.
/// `FLOAT16`, `BFLOAT16` and `DOUBLE` are storage formats here: their
/// values are computed in f32 (see [`interface_dtype_of`] for graph inputs
/// and outputs). The other integer types keep their own type in buffers
/// and constants, and each op computes them in i64 ([`compute_dtype`]).
pub fn dtype_of(onnx_type: i32) -> Option<DType> {
    match onnx_type {
        data_type::FLOAT | data_type::FLOAT16 | data_type::BFLOAT16 | data_type::DOUBLE => Some(DType::F32),
        data_type::INT64 => Some(DType::I64),
        data_type::INT32 => Some(DType::I32),
        data_type::BOOL => Some(DType::Bool),
        data_type::INT8 => Some(DType::I8),
        data_type::UINT8 => Some(DType::U8),
        data_type::INT16 => Some(DType::I16),
        data_type::UINT16 => Some(DType::U16),
        data_type::UINT32 => Some(DType::U32),
        data_type::UINT64 => Some(DType::U64),
        _ => None,
    }
}

/// The element type of a graph input or output buffer: as [`dtype_of`],
/// but `FLOAT16`, `BFLOAT16` and `DOUBLE` keep their type at the model's
/// interface (widened or narrowed to f32 on the way in, converted back on
/// the way out).
pub fn interface_dtype_of(onnx_type: i32) -> Option<DType> {
    match onnx_type {
        data_type::FLOAT16 => Some(DType::F16),
        data_type::BFLOAT16 => Some(DType::Bf16),
        data_type::DOUBLE => Some(DType::F64),
        other => dtype_of(other),
    }
}

/// The ONNX `TensorProto.DataType` of a buffer type.
pub fn onnx_type_of(d: DType) -> i32 {
    match d {
        DType::F32 => data_type::FLOAT,
        DType::F64 => data_type::DOUBLE,
        DType::F16 => data_type::FLOAT16,
        DType::Bf16 => data_type::BFLOAT16,
        DType::I8 => data_type::INT8,
        DType::U8 => data_type::UINT8,
        DType::I16 => data_type::INT16,
        DType::U16 => data_type::UINT16,
        DType::I32 => data_type::INT32,
        DType::U32 => data_type::UINT32,
        DType::I64 => data_type::INT64,
        DType::U64 => data_type::UINT64,
        DType::Bool => data_type::BOOL,
    }
}

/// The integer types held in their own type and computed in i64.
pub fn is_carried_int(d: DType) -> bool {
    matches!(d, DType::I8 | DType::U8 | DType::I16 | DType::U16 | DType::U32 | DType::U64)
}

/// The type an op computes a buffer of `d` in: i64 for the integer types
/// of [`is_carried_int`], `d` itself otherwise.
pub fn compute_dtype(d: DType) -> DType {
    if is_carried_int(d) {
        DType::I64
    } else {
        d
    }
}

/// `x` converted to integer type `d` as a cast does (keeps the low bits),
/// held in an i64: sign-extended for signed types, zero-extended for
/// unsigned ones, `UINT64` as its bits.
pub fn wrap_int(d: DType, x: i64) -> i64 {
    match d {
        DType::I8 => i64::from(x as i8),
        DType::U8 => i64::from(x as u8),
        DType::I16 => i64::from(x as i16),
        DType::U16 => i64::from(x as u16),
        DType::I32 => i64::from(x as i32),
        DType::U32 => i64::from(x as u32),
        _ => x,
    }
}

/// A float converted to integer type `d` as a cast does (toward zero,
/// saturating at the type's bounds, NaN to 0), held as [`wrap_int`] holds it.
pub fn float_to_int(d: DType, x: f32) -> i64 {
    match d {
        DType::I8 => i64::from(x as i8),
        DType::U8 => i64::from(x as u8),
        DType::I16 => i64::from(x as i16),
        DType::U16 => i64::from(x as u16),
        DType::I32 => i64::from(x as i32),
        DType::U32 => i64::from(x as u32),
        DType::U64 => x as u64 as i64,
        _ => x as i64,
    }
}

/// The types [`dtype_of`] accepts, for messages.
pub const CARRIED_TYPES: &str = "FLOAT, FLOAT16, BFLOAT16 and DOUBLE (computed in f32), INT64, INT32, \
     INT16, INT8, UINT64, UINT32, UINT16, UINT8 (computed in i64), BOOL";

/// A constant tensor with a static shape.
#[derive(Clone, Debug, PartialEq)]
pub struct ConstTensor {
    pub shape: Vec<usize>,
    pub data: ConstData,
}

/// Converts ONNX dims (i64) to sizes, rejecting negative ones.
pub(crate) fn dims_to_shape(name: &str, dims: &[i64]) -> Result<Vec<usize>, ImportError> {
    dims.iter()
        .map(|&d| usize::try_from(d).map_err(|_| ImportError::tensor(name, format!("has a negative dim {d}"))))
        .collect()
}

fn elem_count(name: &str, shape: &[usize]) -> Result<usize, ImportError> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| ImportError::tensor(name, "has more elements than fit in memory"))
}

/// Reads the bytes of external data: `location`, `offset`, `length`
/// entries, `location` relative to the model file's directory.
fn read_external(t: &TensorProto, base_dir: &Path) -> Result<Vec<u8>, ImportError> {
    let name = &t.name;
    let mut location = None;
    let mut offset = 0u64;
    let mut length = None;
    for e in &t.external_data {
        let num = || {
            e.value.parse::<u64>().map_err(|_| {
                ImportError::tensor(name, format!("external data `{}` is not a number: `{}`", e.key, e.value))
            })
        };
        match e.key.as_str() {
            "location" => location = Some(e.value.clone()),
            "offset" => offset = num()?,
            "length" => length = Some(num()?),
            _ => {}
        }
    }
    let location = location.ok_or_else(|| ImportError::tensor(name, "external data has no `location`"))?;
    let rel = Path::new(&location);
    if rel.is_absolute() || rel.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Err(ImportError::tensor(
            name,
            format!("external data location `{location}` leaves the model directory"),
        ));
    }
    let path = base_dir.join(rel);
    let io = |source| ImportError::Io { path: path.clone(), source };
    let (mut file, file_len) = open_regular(&path).map_err(io)?;
    let start = offset;
    let end = match length {
        Some(l) => start.checked_add(l),
        None => Some(file_len),
    };
    let range = match end {
        Some(end) if start <= end && end <= file_len => usize::try_from(end - start).ok().map(|n| (start, n)),
        _ => None,
    };
    let Some((start, len)) = range else {
        return Err(ImportError::tensor(
            name,
            format!("external data {offset}+{length:?} lies outside `{location}` ({file_len} bytes)"),
        ));
    };
    // Only the tensor's range is read: a model's tensors usually share one
    // external file.
    use std::io::{Read, Seek, SeekFrom};
    let mut bytes = vec![0u8; len];
    file.seek(SeekFrom::Start(start)).and_then(|_| file.read_exact(&mut bytes)).map_err(io)?;
    Ok(bytes)
}

/// The regular file at `path`, opened, and its length; anything else
/// (a FIFO, a device) is refused before it is opened.
fn open_regular(path: &Path) -> std::io::Result<(std::fs::File, u64)> {
    let regular = |meta: std::fs::Metadata| match meta.is_file() {
        true => Ok(meta.len()),
        false => Err(std::io::Error::other("it is not a regular file")),
    };
    regular(std::fs::metadata(path)?)?;
    let file = std::fs::File::open(path)?;
    let len = regular(file.metadata()?)?;
    Ok((file, len))
}

fn from_le<const N: usize, T>(
    name: &str,
    bytes: &[u8],
    count: usize,
    f: impl Fn([u8; N]) -> T,
) -> Result<Vec<T>, ImportError> {
    if Some(bytes.len()) != count.checked_mul(N) {
        return Err(ImportError::tensor(
            name,
            format!("holds {} data bytes, its shape needs {} elements of {N} bytes", bytes.len(), count),
        ));
    }
    Ok(bytes.chunks_exact(N).map(|c| f(c.try_into().expect("chunks_exact gives N bytes"))).collect())
}

fn check_count<T>(name: &str, v: Vec<T>, count: usize) -> Result<Vec<T>, ImportError> {
    if v.len() != count {
        return Err(ImportError::tensor(name, format!("holds {} values, its shape needs {count}", v.len())));
    }
    Ok(v)
}

/// Decodes a `TensorProto` of a carried type ([`dtype_of`]) into a
/// [`ConstTensor`].
/// `base_dir` resolves external data.
pub fn read_tensor(t: &TensorProto, base_dir: &Path) -> Result<ConstTensor, ImportError> {
    let name = t.name.as_str();
    let shape = dims_to_shape(name, &t.dims)?;
    let count = elem_count(name, &shape)?;
    let raw = if t.data_location == DATA_LOCATION_EXTERNAL {
        Some(read_external(t, base_dir)?)
    } else if !t.raw_data.is_empty() {
        Some(t.raw_data.clone())
    } else {
        None
    };
    let data = match (t.data_type, raw) {
        (data_type::FLOAT, Some(b)) => ConstData::F32(from_le(name, &b, count, f32::from_le_bytes)?),
        (data_type::FLOAT, None) => ConstData::F32(check_count(name, t.float_data.clone(), count)?),
        (data_type::INT64, Some(b)) => ConstData::I64(from_le(name, &b, count, i64::from_le_bytes)?),
        (data_type::INT64, None) => ConstData::I64(check_count(name, t.int64_data.clone(), count)?),
        (data_type::INT32, Some(b)) => ConstData::I32(from_le(name, &b, count, i32::from_le_bytes)?),
        (data_type::INT32, None) => ConstData::I32(check_count(name, t.int32_data.clone(), count)?),
        (data_type::BOOL, Some(b)) => ConstData::Bool(from_le(name, &b, count, |[c]: [u8; 1]| c != 0)?),
        // 2-byte floats widen exactly; without raw data ONNX keeps their
        // bits one per `int32_data` entry.
        (data_type::FLOAT16, Some(b)) => ConstData::F32(from_le(name, &b, count, |c| f16::from_le_bytes(c).to_f32())?),
        (data_type::BFLOAT16, Some(b)) => {
            ConstData::F32(from_le(name, &b, count, |c| bf16::from_le_bytes(c).to_f32())?)
        }
        (data_type::FLOAT16, None) => ConstData::F32(check_count(
            name,
            stored_in_range(name, "int32_data", "float16 bits", &t.int32_data, 0, 0xffff)?
                .map(|v| f16::from_bits(v as u16).to_f32())
                .collect(),
            count,
        )?),
        (data_type::BFLOAT16, None) => ConstData::F32(check_count(
            name,
            stored_in_range(name, "int32_data", "bfloat16 bits", &t.int32_data, 0, 0xffff)?
                .map(|v| bf16::from_bits(v as u16).to_f32())
                .collect(),
            count,
        )?),
        (data_type::DOUBLE, Some(b)) => ConstData::F32(from_le(name, &b, count, |c| f64::from_le_bytes(c) as f32)?),
        (data_type::DOUBLE, None) => {
            ConstData::F32(check_count(name, t.double_data.iter().map(|&x| x as f32).collect(), count)?)
        }
        (data_type::INT8, Some(b)) => int(DType::I8, from_le(name, &b, count, |c: [u8; 1]| i64::from(c[0] as i8))?),
        (data_type::UINT8, Some(b)) => int(DType::U8, from_le(name, &b, count, |c: [u8; 1]| i64::from(c[0]))?),
        (data_type::INT16, Some(b)) => int(DType::I16, from_le(name, &b, count, |c| i64::from(i16::from_le_bytes(c)))?),
        (data_type::UINT16, Some(b)) => {
            int(DType::U16, from_le(name, &b, count, |c| i64::from(u16::from_le_bytes(c)))?)
        }
        (data_type::UINT32, Some(b)) => {
            int(DType::U32, from_le(name, &b, count, |c| i64::from(u32::from_le_bytes(c)))?)
        }
        (data_type::UINT64, Some(b)) => int(DType::U64, from_le(name, &b, count, |c| u64::from_le_bytes(c) as i64)?),
        // Without raw data, ONNX keeps 8- and 16-bit values one per
        // `int32_data` entry and UINT32/UINT64 in `uint64_data`.
        (data_type::INT8 | data_type::UINT8 | data_type::INT16 | data_type::UINT16, None) => {
            let d = dtype_of(t.data_type).expect("an integer type");
            let (lo, hi) = int_range(d);
            let values = stored_in_range(name, "int32_data", &d.to_string(), &t.int32_data, lo, hi)?;
            int(d, check_count(name, values.map(i64::from).collect(), count)?)
        }
        (data_type::UINT32, None) => {
            let values = stored_in_range(name, "uint64_data", "uint32", &t.uint64_data, 0, u64::from(u32::MAX))?;
            int(DType::U32, check_count(name, values.map(|v| v as i64).collect(), count)?)
        }
        // A uint64 is held as its bits.
        (data_type::UINT64, None) => {
            int(DType::U64, check_count(name, t.uint64_data.iter().map(|&v| v as i64).collect(), count)?)
        }
        // Bools without raw data are stored one per `int32_data` entry.
        (data_type::BOOL, None) => ConstData::Bool(check_count(
            name,
            stored_in_range(name, "int32_data", "bool", &t.int32_data, 0, 1)?.map(|v| v != 0).collect(),
            count,
        )?),
        (other, _) => {
            return Err(ImportError::tensor(
                name,
                format!("has ONNX data type {other} ({}); supported: {CARRIED_TYPES}", data_type_name(other)),
            ))
        }
    };
    Ok(ConstTensor { shape, data })
}

/// The values of a typed-data field holding a narrower type, each within
/// `lo..=hi`: a value outside is an error naming the tensor, never wrapped
/// into the type.
fn stored_in_range<'a, T: Copy + PartialOrd + std::fmt::Display>(
    name: &str,
    field: &str,
    what: &str,
    values: &'a [T],
    lo: T,
    hi: T,
) -> Result<impl Iterator<Item = T> + 'a, ImportError> {
    if let Some((i, v)) = values.iter().enumerate().find(|(_, &v)| v < lo || v > hi) {
        return Err(ImportError::tensor(
            name,
            format!("`{field}` holds {v} at index {i}, outside {what}'s range {lo}..={hi}"),
        ));
    }
    Ok(values.iter().copied())
}

/// The range of an 8- or 16-bit integer type, as `int32_data` holds it.
fn int_range(d: DType) -> (i32, i32) {
    match d {
        DType::I8 => (i8::MIN.into(), i8::MAX.into()),
        DType::U8 => (0, u8::MAX.into()),
        DType::I16 => (i16::MIN.into(), i16::MAX.into()),
        _ => (0, u16::MAX.into()),
    }
}

fn int(d: DType, v: Vec<i64>) -> ConstData {
    ConstData::Int(d, v)
}

/// The ONNX spelling of a `TensorProto.DataType` number.
pub fn data_type_name(dt: i32) -> &'static str {
    match dt {
        0 => "UNDEFINED",
        data_type::FLOAT => "FLOAT",
        data_type::UINT8 => "UINT8",
        data_type::INT8 => "INT8",
        data_type::UINT16 => "UINT16",
        data_type::INT16 => "INT16",
        data_type::INT32 => "INT32",
        data_type::INT64 => "INT64",
        data_type::STRING => "STRING",
        data_type::BOOL => "BOOL",
        data_type::FLOAT16 => "FLOAT16",
        data_type::DOUBLE => "DOUBLE",
        data_type::UINT32 => "UINT32",
        data_type::UINT64 => "UINT64",
        14 => "COMPLEX64",
        15 => "COMPLEX128",
        data_type::BFLOAT16 => "BFLOAT16",
        17..=20 => "FLOAT8",
        21 => "UINT4",
        22 => "INT4",
        23 => "FLOAT4E2M1",
        _ => "other",
    }
}
