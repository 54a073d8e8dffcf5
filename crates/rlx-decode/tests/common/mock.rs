//! A deterministic bigram "decoder": the logits after token `t` put 1.0 on
//! `table[t]` and 0.0 elsewhere, whatever the position. It keeps a cache of
//! the token written at each position and records every call, so tests can
//! check chunking, padding and positions. Shared by the tests and the
//! `rlx-decode-mock` binary.

use rlx_decode::StepModel;

/// One call the loop made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    Reset,
    Prefill { chunk: Vec<i64>, pos: usize },
    Decode { token: i64, pos: usize },
}

pub struct Bigram {
    pub vocab: usize,
    pub chunk: usize,
    pub max_len: usize,
    /// The token that follows each token.
    pub table: Vec<i64>,
    pub calls: Vec<Call>,
    /// The token last written at each position (`None`: never written).
    pub cache: Vec<Option<i64>>,
    logits: Vec<f32>,
}

/// The default successor: a fixed permutation-like walk over the vocabulary.
pub fn successor(t: i64, vocab: usize) -> i64 {
    (t * 7 + 3) % vocab as i64
}

impl Bigram {
    pub fn new(vocab: usize, chunk: usize, max_len: usize) -> Self {
        let table = (0..vocab as i64).map(|t| successor(t, vocab)).collect();
        Bigram { vocab, chunk, max_len, table, calls: Vec::new(), cache: vec![None; max_len], logits: Vec::new() }
    }

    /// The greedy continuation of `last` for `n` tokens.
    pub fn greedy_after(&self, last: i64, n: usize) -> Vec<i64> {
        let mut out = Vec::new();
        let mut t = last;
        for _ in 0..n {
            t = self.table[t as usize];
            out.push(t);
        }
        out
    }

    fn write(&mut self, row: usize, token: i64, pos: usize) {
        assert!(pos < self.max_len, "position {pos} past the cache of {}", self.max_len);
        assert!((0..self.vocab as i64).contains(&token), "token {token} outside the vocabulary");
        self.cache[pos] = Some(token);
        let out = &mut self.logits[row * self.vocab..(row + 1) * self.vocab];
        out.fill(0.0);
        out[self.table[token as usize] as usize] = 1.0;
    }
}

impl StepModel for Bigram {
    fn max_len(&self) -> usize {
        self.max_len
    }
    fn vocab(&self) -> usize {
        self.vocab
    }
    fn prefill_chunk(&self) -> usize {
        self.chunk
    }
    fn reset(&mut self) {
        self.calls.push(Call::Reset);
        self.cache.fill(None);
    }
    fn prefill(&mut self, chunk: &[i64], pos: usize) -> &[f32] {
        assert_eq!(chunk.len(), self.chunk, "prefill takes exactly one chunk");
        self.calls.push(Call::Prefill { chunk: chunk.to_vec(), pos });
        self.logits.resize(self.chunk * self.vocab, 0.0);
        for (row, &t) in chunk.iter().enumerate() {
            self.write(row, t, pos + row);
        }
        &self.logits
    }
    fn decode(&mut self, token: i64, pos: usize) -> &[f32] {
        self.calls.push(Call::Decode { token, pos });
        // Attention is causal over 0..=pos: everything before must hold a
        // real token by now.
        assert!(self.cache[..pos].iter().all(Option::is_some), "decode at {pos} reads an unwritten position");
        self.logits.resize(self.vocab, 0.0);
        self.write(0, token, pos);
        &self.logits[..self.vocab]
    }
}
