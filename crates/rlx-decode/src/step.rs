//! [`StepModel`] for a generated model that follows the decoder-step
//! convention of `docs/decoding.md`: inputs `tokens: i64[S]` and `pos:
//! i64[1]`, output `logits: f32[S, V]`, and the KV cache in `state`
//! buffers of `[max_len, ...]`. One schedule of `S` tokens serves both
//! calls: `prefill` runs a chunk of `S`, `decode` runs one token padded to
//! `S` (with `S = 1`, what a decode step schedule is).

use rlx_runtime::model::{GeneratedModel, TensorInfo};
use rlx_runtime::DType;

use crate::StepModel;

/// A schedule that does not follow the decoder-step convention.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error("model `{model}` has no {role} `{name}`: a decoder step needs {want}")]
    Missing { model: &'static str, role: &'static str, name: &'static str, want: &'static str },
    #[error("model `{model}`: `{name}` is {found}, a decoder step needs {want}")]
    Shape { model: &'static str, name: &'static str, found: String, want: String },
    #[error("model `{model}` has no `state` buffer: a decoder step keeps its KV cache in state")]
    NoState { model: &'static str },
}

/// A generated decoder step driven as a [`StepModel`].
pub struct GeneratedStep<M> {
    model: M,
    tokens: usize,
    pos: usize,
    logits: usize,
    seq: usize,
    vocab: usize,
    max_len: usize,
    /// The last step's logits, copied out of the arena (sized once).
    rows: Vec<f32>,
}

fn find(list: &'static [TensorInfo], name: &str) -> Option<&'static TensorInfo> {
    list.iter().find(|t| t.name == name)
}

impl<M: GeneratedModel> GeneratedStep<M> {
    /// Wraps `model` after checking its buffers against the convention.
    pub fn new(model: M) -> Result<Self, StepError> {
        let info = M::INFO;
        let model_name = info.name;
        let missing = |role, name, want| StepError::Missing { model: model_name, role, name, want };
        let shape_err = |t: &TensorInfo, want: String| StepError::Shape {
            model: model_name,
            name: t.name,
            found: rlx_runtime::npy::describe(t.dtype, t.shape),
            want,
        };
        let tokens = find(info.inputs, "tokens").ok_or_else(|| missing("input", "tokens", "i64[S] token ids"))?;
        let pos = find(info.inputs, "pos").ok_or_else(|| missing("input", "pos", "an i64[1] position"))?;
        let logits = find(info.outputs, "logits").ok_or_else(|| missing("output", "logits", "f32[S, vocab]"))?;
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
        // Every cache holds `max_len` rows; the shortest one bounds the step.
        let max_len = info
            .states
            .iter()
            .map(|s| s.shape.first().copied().unwrap_or(0))
            .min()
            .ok_or(StepError::NoState { model: model_name })?;
        Ok(GeneratedStep {
            model,
            tokens: tokens.offset,
            pos: pos.offset,
            logits: logits.offset,
            seq,
            vocab,
            max_len,
            rows: vec![0.0; seq * vocab],
        })
    }

    /// The wrapped model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// Writes the step's inputs (`tokens` padded with 0) and runs it.
    fn run(&mut self, tokens: &[i64], pos: usize) {
        let arena = self.model.arena_mut();
        for i in 0..self.seq {
            let t = tokens.get(i).copied().unwrap_or(0);
            let at = self.tokens + 8 * i;
            arena[at..at + 8].copy_from_slice(&t.to_le_bytes());
        }
        let pos = i64::try_from(pos).unwrap_or(i64::MAX);
        arena[self.pos..self.pos + 8].copy_from_slice(&pos.to_le_bytes());
        self.model.run();
    }

    /// Copies the logits of rows `0..rows` out of the arena.
    fn logits(&mut self, rows: usize) -> &[f32] {
        let n = rows * self.vocab;
        let bytes = &self.model.arena()[self.logits..self.logits + n * 4];
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
        self.vocab
    }
    fn prefill_chunk(&self) -> usize {
        self.seq
    }
    fn reset(&mut self) {
        self.model.reset_state();
    }
    fn prefill(&mut self, chunk: &[i64], pos: usize) -> &[f32] {
        self.run(chunk, pos);
        self.logits(self.seq)
    }
    fn decode(&mut self, token: i64, pos: usize) -> &[f32] {
        self.run(&[token], pos);
        self.logits(1)
    }
}
