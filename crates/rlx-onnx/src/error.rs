//! Why an import failed. Every message names the node or tensor at fault.

use std::path::PathBuf;

/// An import error.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("not a valid ONNX model: {0}")]
    Decode(#[from] prost::DecodeError),
    #[error("the model has no graph")]
    NoGraph,
    #[error("the model imports opset {0} of the default domain; ONNX opsets start at 1")]
    BadOpset(i64),
    #[error("unsupported ONNX op `{op}` (node `{node}`); supported ops: {supported}")]
    UnsupportedOp { op: String, node: String, supported: String },
    #[error("ONNX op `{op}` (node `{node}`): attribute `{attr}` {message}")]
    BadAttribute { op: String, node: String, attr: String, message: String },
    #[error("ONNX op `{op}` (node `{node}`): {message}")]
    Node { op: String, node: String, message: String },
    /// Past the import budget (`ImportLimits`): the message says what
    /// needed how much, the limit and how to raise it.
    #[error("node `{node}` ({op}): {message}")]
    Budget { op: String, node: String, message: String },
    #[error("tensor `{name}`: {message}")]
    Tensor { name: String, message: String },
    #[error("--shape `{0}`: no graph input has this name")]
    UnknownShapeOverride(String),
    /// A `--shape` that does not fit the input's declared shape (only
    /// symbolic dims may be bound), or a second one for the same input.
    #[error("--shape `{text}`: {message}")]
    BadShapeOverride { text: String, message: String },
    #[error("the arena would need {0} bytes, more than memory can hold")]
    ArenaTooLarge(usize),
    #[error("cannot write the weights file: {0}")]
    Weights(String),
    /// A checkpoint file (`config.json`, `model.safetensors`) the Llama
    /// front end cannot use.
    #[error("{file}: {message}")]
    Checkpoint { file: &'static str, message: String },
    /// An import option outside what the model allows.
    #[error("{option}: {message}")]
    BadOption { option: &'static str, message: String },
    /// The schedule an import would write does not pass the validator: an
    /// importer bug, with the first pass whose output is invalid.
    #[error("internal error: the importer's `{pass}` pass wrote a schedule that does not validate (an importer bug; please report it with the model):\n{report}")]
    Invalid { pass: &'static str, report: String },
}

impl ImportError {
    /// A tensor-level error.
    pub(crate) fn tensor(name: &str, message: impl Into<String>) -> Self {
        ImportError::Tensor { name: name.to_string(), message: message.into() }
    }
}
