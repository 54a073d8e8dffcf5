//! The weights file: its sha256, its safetensors header, and the checks of
//! `param` buffers against the tensors it holds.
//!
//! A safetensors file is an 8-byte little-endian header length `N`, `N`
//! bytes of JSON `{name: {dtype, shape, data_offsets: [begin, end]}, ...}`
//! (plus an optional `__metadata__` entry), then the data section, which
//! tensor offsets are relative to. The header is parsed here with
//! serde_json: the only things needed are offsets, dtypes and shapes.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path};

use serde_json::Value as Json;
use sha2::{Digest, Sha256};

use super::messages;
use crate::ast::{Ast, WeightsDecl};
use crate::diag::Diagnostic;
use crate::dtype::DType;
use crate::schedule::{Role, Segment, WeightsFile};

/// Headers larger than this are refused (the limit the safetensors crate
/// uses), so a corrupt length cannot make us allocate gigabytes.
const MAX_HEADER_LEN: u64 = 100_000_000;

/// One tensor entry of a safetensors header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tensor {
    /// The safetensors dtype name (`F32`, `BF16`, ...).
    pub dtype: String,
    pub shape: Vec<usize>,
    /// Byte range in the data section.
    pub begin: usize,
    pub end: usize,
}

/// A parsed safetensors header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// `N`: bytes of JSON after the 8-byte length.
    pub json_len: usize,
    pub tensors: BTreeMap<String, Tensor>,
}

impl Header {
    /// Where the data section starts in the file.
    pub(crate) fn data_offset(&self) -> usize {
        8 + self.json_len
    }
}

/// A readable weights file whose header parsed.
#[derive(Clone, Debug)]
pub(crate) struct Weights {
    pub file: WeightsFile,
    pub tensors: BTreeMap<String, Tensor>,
}

/// The dtype a safetensors name stands for, if the format has it.
fn dtype_of(name: &str) -> Option<DType> {
    DType::ALL.into_iter().find(|d| d.safetensors_name() == name)
}

/// Parses a safetensors header from `reader` (positioned at the start of
/// a file of `file_len` bytes).
pub(crate) fn parse_header(reader: &mut impl Read, file_len: u64) -> Result<Header, String> {
    let mut len_bytes = [0u8; 8];
    reader.read_exact(&mut len_bytes).map_err(|_| messages::ST_TOO_SHORT.to_string())?;
    let json_len = u64::from_le_bytes(len_bytes);
    if json_len > MAX_HEADER_LEN || json_len > file_len - 8 {
        return Err(messages::st_header_len(json_len, file_len));
    }
    // Both bounds above keep this a small number.
    let json_len = json_len as usize;
    let mut json = vec![0u8; json_len];
    reader.read_exact(&mut json).map_err(|e| messages::io_reason(&e))?;
    let data_len = (file_len - 8) as usize - json_len;
    let root: Json = serde_json::from_slice(&json).map_err(|e| messages::st_json(&e.to_string()))?;
    let Json::Object(entries) = root else { return Err(messages::ST_NOT_OBJECT.to_string()) };
    let mut tensors = BTreeMap::new();
    for (name, entry) in entries {
        if name == "__metadata__" {
            continue;
        }
        let tensor = parse_tensor(&entry, data_len).map_err(|why| messages::st_tensor(&name, &why))?;
        tensors.insert(name, tensor);
    }
    Ok(Header { json_len, tensors })
}

fn parse_tensor(entry: &Json, data_len: usize) -> Result<Tensor, String> {
    let dtype = entry.get("dtype").and_then(Json::as_str).ok_or(messages::ST_NO_DTYPE)?.to_string();
    let shape = entry
        .get("shape")
        .and_then(Json::as_array)
        .ok_or(messages::ST_NO_SHAPE)?
        .iter()
        .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
        .collect::<Option<Vec<usize>>>()
        .ok_or(messages::ST_NO_SHAPE)?;
    let offsets = entry
        .get("data_offsets")
        .and_then(Json::as_array)
        .filter(|o| o.len() == 2)
        .and_then(|o| Some((o[0].as_u64()?, o[1].as_u64()?)))
        .ok_or(messages::ST_NO_OFFSETS)?;
    let (begin, end) = (usize::try_from(offsets.0), usize::try_from(offsets.1));
    let (Ok(begin), Ok(end)) = (begin, end) else { return Err(messages::ST_NO_OFFSETS.to_string()) };
    if begin > end || end > data_len {
        return Err(messages::st_offsets(begin, end, data_len));
    }
    if let Some(d) = dtype_of(&dtype) {
        let bytes = super::extents::product(&shape).and_then(|n| n.checked_mul(d.size()));
        if bytes != Some(end - begin) {
            return Err(messages::st_size(&dtype, &shape, end - begin));
        }
    }
    Ok(Tensor { dtype, shape, begin, end })
}

/// Lower-case hex sha256 of everything `reader` yields, streamed so large
/// weights are never held in memory.
fn sha256_stream(reader: &mut impl Read) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Reads the weights file a `weights` line names: its sha256 must match
/// and its header must parse. Returns what could be learnt (the header
/// even when the sha256 differs, so the tensors are still checked).
///
/// The path must stay in the schedule's directory or below it (no `..`)
/// unless `allow_parent` is set, and name a regular file: a FIFO or a
/// device (`/dev/zero`) would make reading it never end, so its metadata is
/// checked before it is opened.
pub(crate) fn read(
    decl: &WeightsDecl,
    source: WeightsSource<'_>,
    allow_parent: bool,
    diags: &mut Vec<Diagnostic>,
) -> Option<Weights> {
    let written = &decl.path.value;
    if Path::new(written).is_absolute() {
        diags.push(
            Diagnostic::error(decl.path.span, messages::weights_path_absolute(written))
                .with_hint(messages::WEIGHTS_PATH_HINT),
        );
        return None;
    }
    if !allow_parent && Path::new(written).components().any(|c| c == Component::ParentDir) {
        diags.push(
            Diagnostic::error(decl.path.span, messages::weights_path_parent(written))
                .with_hint(messages::WEIGHTS_PARENT_HINT),
        );
        return None;
    }
    let base_dir = match source {
        WeightsSource::Dir(dir) => dir,
        WeightsSource::Bytes(bytes) => {
            let len = bytes.len() as u64;
            return from_reader(decl, &mut std::io::Cursor::new(bytes), len, diags);
        }
    };
    let path = base_dir.join(written);
    let cannot_read = |e: &std::io::Error| {
        Diagnostic::error(decl.path.span, messages::weights_unreadable(written, &messages::io_reason(e)))
            .with_hint(messages::WEIGHTS_PATH_HINT)
    };
    let not_a_file = |kind: &str| {
        Diagnostic::error(decl.path.span, messages::weights_not_a_file(written, kind))
            .with_hint(messages::WEIGHTS_PATH_HINT)
    };
    // Before opening: opening a FIFO for reading blocks until a writer comes.
    match std::fs::metadata(&path) {
        Ok(m) if !m.is_file() => {
            diags.push(not_a_file(file_kind(&m.file_type())));
            return None;
        }
        Ok(_) => {}
        Err(e) => {
            diags.push(cannot_read(&e));
            return None;
        }
    }
    let opened = File::open(&path).and_then(|f| {
        let meta = f.metadata()?;
        Ok((f, meta))
    });
    let (mut file, len) = match opened {
        // Replaced since the check above: still only a regular file.
        Ok((_, meta)) if !meta.is_file() => {
            diags.push(not_a_file(file_kind(&meta.file_type())));
            return None;
        }
        Ok((f, meta)) => (f, meta.len()),
        Err(e) => {
            diags.push(cannot_read(&e));
            return None;
        }
    };
    from_reader(decl, &mut file, len, diags)
}

/// Where the validator finds the weights a `weights` line names.
#[derive(Clone, Copy, Debug)]
pub enum WeightsSource<'a> {
    /// A file, at the line's path relative to this directory (the
    /// `.sched` file's).
    Dir(&'a Path),
    /// These bytes, as the file will hold them: a front end checks the
    /// schedule it is about to write together with its weights.
    Bytes(&'a [u8]),
}

/// The sha256 and header of the weights in `reader` (`len` bytes).
fn from_reader(
    decl: &WeightsDecl,
    reader: &mut (impl Read + Seek),
    len: u64,
    diags: &mut Vec<Diagnostic>,
) -> Option<Weights> {
    let written = &decl.path.value;
    let cannot_read = |e: &std::io::Error| {
        Diagnostic::error(decl.path.span, messages::weights_unreadable(written, &messages::io_reason(e)))
            .with_hint(messages::WEIGHTS_PATH_HINT)
    };
    let header = parse_header(reader, len);
    let sha = reader.seek(SeekFrom::Start(0)).and_then(|_| sha256_stream(reader));
    let sha = match sha {
        Ok(sha) => sha,
        Err(e) => {
            diags.push(cannot_read(&e));
            return None;
        }
    };
    if sha != decl.sha256.value {
        diags.push(
            Diagnostic::error(decl.sha256.span, messages::weights_sha_mismatch(written))
                .with_label(messages::weights_sha_expected(&decl.sha256.value))
                .with_hint(messages::weights_sha_hint(written, &sha)),
        );
    }
    let header = match header {
        Ok(h) => h,
        Err(why) => {
            diags.push(Diagnostic::error(decl.path.span, messages::weights_malformed(written, &why)));
            return None;
        }
    };
    let data_offset = header.data_offset();
    // `len` fits: the header parsed, so it is at least 8 + N, and the data
    // length was computed as a `usize` there.
    let data_len = (len as usize) - data_offset;
    Some(Weights {
        file: WeightsFile { path: written.clone(), sha256: decl.sha256.value.clone(), data_offset, data_len },
        tensors: header.tensors,
    })
}

/// What a path that is not a regular file names, for messages.
pub(crate) fn file_kind(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

/// Checks every `param` buffer against the file's tensor of the same name:
/// dtype, shape and offset must agree.
pub(crate) fn check_params(ast: &Ast, weights: &Weights, budget: &super::suggest::Budget, diags: &mut Vec<Diagnostic>) {
    for decl in &ast.buffers {
        if decl.role != Role::Param || decl.segment != Segment::Weights {
            continue;
        }
        let name = &decl.name.value;
        let Some(tensor) = weights.tensors.get(name) else {
            let closest = budget.closest(name, weights.tensors.keys().map(String::as_str), weights.tensors.len());
            diags.push(
                Diagnostic::error(decl.name.span, messages::tensor_missing(name, &weights.file.path))
                    .with_hint(messages::tensor_missing_hint(closest, weights.tensors.len())),
            );
            continue;
        };
        let dtype = decl.dtype.value;
        if tensor.dtype != dtype.safetensors_name() {
            let fix = dtype_of(&tensor.dtype).map(|d| d.name());
            let mut d = Diagnostic::error(decl.dtype.span, messages::tensor_dtype(name, dtype, &tensor.dtype));
            if let Some(fix) = fix {
                d = d.with_hint(messages::write_instead(fix));
            }
            diags.push(d);
        }
        if tensor.shape != decl.shape.value {
            diags.push(
                Diagnostic::error(decl.shape.span, messages::tensor_shape(name, &decl.shape.value, &tensor.shape))
                    .with_hint(messages::write_instead(&messages::dims(&tensor.shape))),
            );
        }
        if tensor.begin != decl.offset.value {
            diags.push(
                Diagnostic::error(decl.offset.span, messages::tensor_offset(name, decl.offset.value, tensor.begin))
                    .with_hint(messages::write_instead(&format!("weights+{}", tensor.begin))),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A safetensors file with the given JSON header (unpadded) and data.
    fn file(json: &str, data: &[u8]) -> Vec<u8> {
        let mut out = (json.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(json.as_bytes());
        out.extend_from_slice(data);
        out
    }

    fn parse(bytes: &[u8]) -> Result<Header, String> {
        parse_header(&mut &bytes[..], bytes.len() as u64)
    }

    #[test]
    fn parses_tensors_and_skips_metadata() {
        let json = r#"{"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]},"b":{"dtype":"U16","shape":[3],"data_offsets":[8,14]}}"#;
        let h = parse(&file(json, &[0; 14])).unwrap();
        assert_eq!(h.json_len, json.len());
        assert_eq!(h.data_offset(), 8 + json.len());
        assert_eq!(h.tensors.len(), 2);
        assert_eq!(h.tensors["w"], Tensor { dtype: "F32".into(), shape: vec![2, 1], begin: 0, end: 8 });
        assert_eq!(h.tensors["b"].dtype, "U16");
    }

    #[test]
    fn rejects_malformed_headers_without_panicking() {
        let cases: &[(&[u8], &str)] = &[
            (b"\x01\x02", "shorter than"),
            (&file("{}", b"")[..4], "shorter than"),
            (&[0xff; 16], "header length"),
            (&file("[1]", b""), "not a json object"),
            (&file("{", b""), "json"),
            (&file(r#"{"w":{"shape":[1],"data_offsets":[0,4]}}"#, &[0; 4]), "dtype"),
            (&file(r#"{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}"#, &[0; 4]), "shape"),
            (&file(r#"{"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}}"#, &[0; 4]), "data_offsets"),
            (&file(r#"{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}}"#, &[0; 4]), "past the data"),
            (&file(r#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}"#, &[0; 4]), "4 bytes"),
        ];
        for (bytes, needle) in cases {
            let err = parse(bytes).unwrap_err();
            assert!(err.contains(needle), "{err:?} should mention {needle:?}");
        }
    }

    #[test]
    fn streams_sha256_like_the_one_shot_digest() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(sha256_stream(&mut &data[..]).unwrap(), crate::sha256_hex(&data));
    }
}
