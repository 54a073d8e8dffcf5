//! [`StepModel`] for a generated model that follows the decoder-step
//! convention of `docs/decoding.md`: per entry point, inputs `tokens:
//! i64[S]` and `pos: i64[1]` and output `logits: f32[S, V]` (an entry's own
//! buffers may carry its name as a prefix, `prefill.tokens`), and the KV
//! cache in `state` buffers of `[max_len, ...]`.
//!
//! A schedule with entry points `decode` and `prefill` runs each call on
//! the entry specialised for it. One without entry points serves both calls
//! with its one step of `S` tokens: `prefill` runs a chunk of `S`, `decode`
//! runs one token padded to `S` (with `S = 1`, what a decode step is).

use rlx_runtime::model::{GeneratedModel, TensorInfo};
use rlx_runtime::DType;

use crate::StepModel;

/// A schedule that does not follow the decoder-step convention.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error("model `{model}`{entry} has no {role} `{name}`: a decoder step needs {want}")]
    Missing { model: &'static str, entry: String, role: &'static str, name: &'static str, want: &'static str },
    #[error("model `{model}`: `{name}` is {found}, a decoder step needs {want}")]
    Shape { model: &'static str, name: &'static str, found: String, want: String },
    #[error("model `{model}` has no `state` buffer: a decoder step keeps its KV cache in state")]
    NoState { model: &'static str },
    #[error("model `{model}` has entry points {found:?}: a decoder needs `decode` and `prefill` (or no entry points)")]
    Entries { model: &'static str, found: Vec<&'static str> },
    #[error("model `{model}`: the `decode` entry has {decode} logits per token, `prefill` {prefill}")]
    Vocab { model: &'static str, decode: usize, prefill: usize },
}

/// Where one entry point's step reads and writes.
#[derive(Clone, Copy, Debug)]
struct StepIo {
    /// Index for `run_entry`.
    entry: usize,
    tokens: usize,
    pos: usize,
    logits: usize,
    seq: usize,
    vocab: usize,
}

/// A generated decoder step driven as a [`StepModel`].
pub struct GeneratedStep<M> {
    model: M,
    decode: StepIo,
    prefill: StepIo,
    max_len: usize,
    /// The last step's logits, copied out of the arena (sized once).
    rows: Vec<f32>,
}

/// The buffer of `list` named `name` or `ENTRY.name`.
fn find(list: &'static [TensorInfo], name: &str) -> Option<&'static TensorInfo> {
    list.iter().find(|t| t.name == name || t.name.strip_suffix(name).is_some_and(|p| p.ends_with('.')))
}

/// Checks one entry point's buffers against the convention.
fn step_io<M: GeneratedModel>(
    entry: usize,
    inputs: &'static [TensorInfo],
    outputs: &'static [TensorInfo],
) -> Result<StepIo, StepError> {
    let info = M::INFO;
    let model = info.name;
    let entry_name = info.entries.get(entry).map_or(String::new(), |e| format!(" (entry `{}`)", e.name));
    let missing = |role, name, want| StepError::Missing { model, entry: entry_name.clone(), role, name, want };
    let shape_err = |t: &TensorInfo, want: String| StepError::Shape {
        model,
        name: t.name,
        found: rlx_runtime::npy::describe(t.dtype, t.shape),
        want,
    };
    let tokens = find(inputs, "tokens").ok_or_else(|| missing("input", "tokens", "i64[S] token ids"))?;
    let pos = find(inputs, "pos").ok_or_else(|| missing("input", "pos", "an i64[1] position"))?;
    let logits = find(outputs, "logits").ok_or_else(|| missing("output", "logits", "f32[S, vocab]"))?;
    let seq = match (tokens.dtype, tokens.shape) {
        (DType::I64, &[s]) if s > 0 => s,
        _ => return Err(shape_err(tokens, "i64[S], S > 0".into())),
    };
    if pos.dtype != DType::I64 || pos.shape != [1] {
        return Err(shape_err(pos, "i64[1]".into()));
    }
    let vocab = match (logits.dtype, logits.shape) {
        (DType::F32, &[s, v]) if s == seq && v > 0 => v,
        _ => return Err(shape_err(logits, format!("f32[{seq}, vocab]"))),
    };
    Ok(StepIo { entry, tokens: tokens.offset, pos: pos.offset, logits: logits.offset, seq, vocab })
}

impl<M: GeneratedModel> GeneratedStep<M> {
    /// Wraps `model` after checking its buffers against the convention.
    pub fn new(model: M) -> Result<Self, StepError> {
        let info = M::INFO;
        let (decode, prefill) = if info.entries.is_empty() {
            let io = step_io::<M>(0, info.inputs, info.outputs)?;
            (io, io)
        } else {
            let (Some(d), Some(p)) = (info.entry("decode"), info.entry("prefill")) else {
                let found = info.entries.iter().map(|e| e.name).collect();
                return Err(StepError::Entries { model: info.name, found });
            };
            let io = |i: usize| step_io::<M>(i, info.entries[i].inputs, info.entries[i].outputs);
            (io(d)?, io(p)?)
        };
        if decode.vocab != prefill.vocab {
            return Err(StepError::Vocab { model: info.name, decode: decode.vocab, prefill: prefill.vocab });
        }
        // Every cache holds `max_len` rows; the shortest one bounds the step.
        let max_len = info
            .states
            .iter()
            .map(|s| s.shape.first().copied().unwrap_or(0))
            .min()
            .ok_or(StepError::NoState { model: info.name })?;
        let rows = vec![0.0; decode.seq.max(prefill.seq) * decode.vocab];
        Ok(GeneratedStep { model, decode, prefill, max_len, rows })
    }

    /// The wrapped model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// Writes the step's inputs (`tokens` padded with 0) and runs its entry.
    fn run(&mut self, io: StepIo, tokens: &[i64], pos: usize) {
        let arena = self.model.arena_mut();
        for i in 0..io.seq {
            let t = tokens.get(i).copied().unwrap_or(0);
            let at = io.tokens + 8 * i;
            arena[at..at + 8].copy_from_slice(&t.to_le_bytes());
        }
        let pos = i64::try_from(pos).unwrap_or(i64::MAX);
        arena[io.pos..io.pos + 8].copy_from_slice(&pos.to_le_bytes());
        self.model.run_entry(io.entry);
    }

    /// Copies the logits of rows `0..rows` out of the arena.
    fn logits(&mut self, io: StepIo, rows: usize) -> &[f32] {
        let n = rows * io.vocab;
        let bytes = &self.model.arena()[io.logits..io.logits + n * 4];
        for (x, b) in self.rows[..n].iter_mut().zip(bytes.chunks_exact(4)) {
            *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        &self.rows[..n]
    }
}

impl<M: GeneratedModel> StepModel for GeneratedStep<M> {
    fn max_len(&self) -> usize {
        self.max_len
    }
    fn vocab(&self) -> usize {
        self.decode.vocab
    }
    fn prefill_chunk(&self) -> usize {
        self.prefill.seq
    }
    fn reset(&mut self) {
        self.model.reset_state();
    }
    fn prefill(&mut self, chunk: &[i64], pos: usize) -> &[f32] {
        let io = self.prefill;
        self.run(io, chunk, pos);
        self.logits(io, io.seq)
    }
    fn decode(&mut self, token: i64, pos: usize) -> &[f32] {
        let io = self.decode;
        self.run(io, &[token], pos);
        self.logits(io, 1)
    }
}
