//! Every way a GGUF file can be refused, each naming what it was reading.

/// Why a GGUF file could not be read or mapped.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GgufError {
    #[error("not a GGUF file: it starts with {0:02x?}, not `GGUF`")]
    Magic(Vec<u8>),
    #[error("GGUF version {0} is not supported (versions 2 and 3 are)")]
    Version(u32),
    #[error("GGUF version {0:#x} reads as a big-endian file: only little-endian GGUF files are supported")]
    BigEndian(u32),
    #[error("the file ends at byte {len} while reading {what} (at byte {at}, {need} bytes needed)")]
    Truncated { what: String, at: usize, need: u64, len: usize },
    #[error("{what}: a count of {count} cannot fit in the {left} bytes left in the file")]
    Count { what: String, count: u64, left: usize },
    #[error("metadata key `{key}`: {message}")]
    Metadata { key: String, message: String },
    #[error("metadata key `{0}` appears twice")]
    DuplicateKey(String),
    #[error("tensor `{name}`: {message}")]
    Tensor { name: String, message: String },
    #[error("tensor `{0}` appears twice")]
    DuplicateTensor(String),
    #[error("`general.alignment` {0} must be a power of two")]
    Alignment(u64),
    #[error("{0}")]
    Model(String),
}

pub(crate) fn metadata(key: &str, message: impl Into<String>) -> GgufError {
    GgufError::Metadata { key: key.to_string(), message: message.into() }
}

pub(crate) fn tensor(name: &str, message: impl Into<String>) -> GgufError {
    GgufError::Tensor { name: name.to_string(), message: message.into() }
}
