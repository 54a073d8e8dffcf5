//! A Hugging Face byte-level BPE `tokenizer.json`, loaded from bytes the
//! model binary embeds, and an incremental decoder that streams text as
//! tokens arrive.
//!
//! Encoding is the `tokenizers` crate's (built without its C regex
//! engine: `fancy-regex`, see docs/decisions.md). Decoding does not go
//! through it: each token's bytes are computed once at load (the inverse of
//! the byte-level alphabet), so a step copies bytes into a small buffer and
//! never allocates, and [`TextStream`] can hold back the bytes of a UTF-8
//! character that a token cuts in half.

use std::collections::HashMap;

use tokenizers::DecoderWrapper;

/// Contents of the special token that ends generation, in the order they
/// are looked for among the tokenizer's special added tokens.
pub const END_OF_TEXT: &[&str] = &["<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>", "<|eot_id|>"];

/// The most token ids a tokenizer may span: far beyond every released
/// vocabulary (a few hundred thousand), and small enough that the per-id
/// tables built at load stay a few tens of megabytes.
pub const MAX_VOCAB: usize = 1 << 22;

/// Why a tokenizer could not be loaded or used.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("cannot load tokenizer.json: {0}")]
    Load(String),
    #[error("the tokenizer's decoder is {0}, not ByteLevel: only byte-level BPE tokenizers are supported")]
    NotByteLevel(String),
    #[error("token {id} (`{token}`) holds the character {ch:?}, which is not in the byte-level alphabet")]
    NotByte { id: u32, token: String, ch: char },
    #[error("cannot encode the prompt: {0}")]
    Encode(String),
    #[error("cannot load tokenizer.json: tokens `{first}` and `{second}` both have id {id}")]
    DuplicateId { id: u64, first: String, second: String },
    #[error("token id {id} is outside the tokenizer's vocabulary of {vocab}")]
    UnknownId { id: i64, vocab: usize },
    #[error("cannot load tokenizer.json: token id {id} is beyond the {MAX_VOCAB} ids a vocabulary may span")]
    IdTooLarge { id: u32 },
    #[error("cannot load tokenizer.json: merge {index} (`{first}` `{second}`): {problem}")]
    BadMerge { index: usize, first: String, second: String, problem: String },
}

/// Every BPE merge joins two tokens of the vocabulary into a third:
/// `tokenizers` 0.23 checks that only after copying the joined bytes into
/// a buffer as long as the longest token, and panics (or, for a second
/// part shorter than the continuing-subword prefix, underflows) when the
/// join is longer. Merges it cannot parse are left to its own error.
fn check_merges(v: &serde_json::Value) -> Result<(), TokenizerError> {
    let Some(vocab) = v.pointer("/model/vocab").and_then(serde_json::Value::as_object) else { return Ok(()) };
    let Some(merges) = v.pointer("/model/merges").and_then(serde_json::Value::as_array) else { return Ok(()) };
    let prefix = v.pointer("/model/continuing_subword_prefix").and_then(serde_json::Value::as_str).unwrap_or("");
    for (index, merge) in merges.iter().enumerate() {
        let pair = match merge {
            serde_json::Value::String(s) => s.split_once(' '),
            serde_json::Value::Array(parts) => match parts.as_slice() {
                [serde_json::Value::String(a), serde_json::Value::String(b)] => Some((a.as_str(), b.as_str())),
                _ => None,
            },
            _ => None,
        };
        let Some((first, second)) = pair else { continue };
        let bad = |problem: String| TokenizerError::BadMerge {
            index,
            first: first.to_string(),
            second: second.to_string(),
            problem,
        };
        for part in [first, second] {
            if !vocab.contains_key(part) {
                return Err(bad(format!("`{part}` is not in the vocabulary")));
            }
        }
        let Some(rest) = second.strip_prefix(prefix) else {
            return Err(bad(format!("`{second}` does not start with the continuing-subword prefix `{prefix}`")));
        };
        let joined = format!("{first}{rest}");
        if !vocab.contains_key(&joined) {
            return Err(bad(format!("the merged token `{joined}` is not in the vocabulary")));
        }
    }
    Ok(())
}

/// Every id of the vocabulary names one token, and every added token's id
/// one content: `tokenizers` accepts a file where two tokens share an id,
/// and decoding that id would then print one of them at random.
fn check_ids_unique(v: &serde_json::Value) -> Result<(), TokenizerError> {
    let mut seen: HashMap<u64, &str> = HashMap::new();
    let vocab = v.pointer("/model/vocab").and_then(serde_json::Value::as_object);
    for (token, id) in vocab.into_iter().flatten() {
        if let Some(id) = id.as_u64() {
            if let Some(first) = seen.insert(id, token.as_str()) {
                return Err(TokenizerError::DuplicateId { id, first: first.to_string(), second: token.to_string() });
            }
        }
    }
    let mut added: HashMap<u64, &str> = HashMap::new();
    let added_tokens = v.get("added_tokens").and_then(serde_json::Value::as_array);
    for t in added_tokens.into_iter().flatten() {
        let (Some(id), Some(content)) =
            (t.get("id").and_then(serde_json::Value::as_u64), t.get("content").and_then(serde_json::Value::as_str))
        else {
            continue;
        };
        match added.insert(id, content) {
            Some(first) if first != content => {
                return Err(TokenizerError::DuplicateId { id, first: first.to_string(), second: content.to_string() });
            }
            _ => {}
        }
    }
    Ok(())
}

/// A byte-level BPE tokenizer: `tokenizers` for encoding, a byte table for
/// decoding.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    /// Bytes of token `i`: `bytes[offsets[i]..offsets[i + 1]]`.
    bytes: Vec<u8>,
    offsets: Vec<usize>,
    /// Special added tokens decode to no text.
    special: Vec<bool>,
    end_of_text: Option<u32>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("vocab", &self.vocab())
            .field("end_of_text", &self.end_of_text)
            .finish_non_exhaustive()
    }
}

impl Tokenizer {
    /// Loads a `tokenizer.json` (typically `include_bytes!` by the model
    /// crate).
    pub fn from_bytes(json: &[u8]) -> Result<Self, TokenizerError> {
        // Parsed and checked first, so that `tokenizers` only ever sees
        // well-formed JSON (its decoder deserialiser panics on a syntax
        // error inside the `decoder` object: `expect("Helper")`) and merges
        // it can build.
        let value: serde_json::Value = serde_json::from_slice(json).map_err(|e| TokenizerError::Load(e.to_string()))?;
        check_merges(&value)?;
        let inner = tokenizers::Tokenizer::from_bytes(json).map_err(|e| TokenizerError::Load(e.to_string()))?;
        check_ids_unique(&value)?;
        match inner.get_decoder() {
            Some(DecoderWrapper::ByteLevel(_)) => {}
            Some(other) => return Err(TokenizerError::NotByteLevel(decoder_name(other))),
            None => return Err(TokenizerError::NotByteLevel("missing".into())),
        }
        // Ids run to the largest one in the file. `get_vocab_size` counts
        // the tokens, which is less when the ids leave holes: an id past
        // the count would encode but not decode.
        let vocab = match inner.get_vocab(true).into_values().max() {
            Some(id) if id as usize >= MAX_VOCAB => return Err(TokenizerError::IdTooLarge { id }),
            Some(id) => id as usize + 1,
            None => 0,
        };
        let added = inner.get_added_tokens_decoder();
        let alphabet = byte_of_char();
        let mut bytes = Vec::new();
        let mut offsets = Vec::with_capacity(vocab + 1);
        let mut special = vec![false; vocab];
        offsets.push(0);
        for id in 0..vocab as u32 {
            if let Some(t) = added.get(&id) {
                // Added tokens are stored as plain text, not in the
                // byte-level alphabet.
                special[id as usize] = t.special;
                if !t.special {
                    bytes.extend_from_slice(t.content.as_bytes());
                }
            } else if let Some(token) = inner.id_to_token(id) {
                for ch in token.chars() {
                    match alphabet.get(&ch) {
                        Some(&b) => bytes.push(b),
                        None => return Err(TokenizerError::NotByte { id, token, ch }),
                    }
                }
            }
            // An id with no token at all (a hole in the vocabulary) decodes
            // to nothing.
            offsets.push(bytes.len());
        }
        let end_of_text = END_OF_TEXT.iter().find_map(|name| {
            let mut ids: Vec<u32> =
                added.iter().filter(|(_, t)| t.special && t.content == *name).map(|(&id, _)| id).collect();
            ids.sort_unstable();
            ids.first().copied()
        });
        Ok(Tokenizer { inner, bytes, offsets, special, end_of_text })
    }

    /// Number of token ids, added tokens included: the largest id plus
    /// one (an id of no token, a hole in the vocabulary, decodes to
    /// nothing).
    pub fn vocab(&self) -> usize {
        self.special.len()
    }

    /// The id that ends generation, if the tokenizer has one of
    /// [`END_OF_TEXT`] as a special token.
    pub fn end_of_text(&self) -> Option<u32> {
        self.end_of_text
    }

    /// The ids of `text`, without any template tokens (BOS and the like):
    /// the prompt is the text the user gave, nothing more.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        let enc = self.inner.encode(text, false).map_err(|e| TokenizerError::Encode(e.to_string()))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Length in bytes of the longest token.
    pub fn max_token_bytes(&self) -> usize {
        self.offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0)
    }

    /// The raw bytes of one token (empty for special tokens).
    pub fn token_bytes(&self, id: u32) -> Result<&[u8], TokenizerError> {
        let i = id as usize;
        if i >= self.vocab() {
            return Err(TokenizerError::UnknownId { id: id as i64, vocab: self.vocab() });
        }
        Ok(&self.bytes[self.offsets[i]..self.offsets[i + 1]])
    }

    /// Decodes a whole sequence at once (special tokens skipped); invalid
    /// UTF-8 becomes U+FFFD, as in `tokenizers`' own ByteLevel decoder.
    pub fn decode(&self, ids: &[u32]) -> Result<String, TokenizerError> {
        let mut all = Vec::new();
        for &id in ids {
            all.extend_from_slice(self.token_bytes(id)?);
        }
        Ok(String::from_utf8_lossy(&all).into_owned())
    }

    /// The `tokenizers` tokenizer underneath, for what this type does not
    /// wrap.
    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }
}

fn decoder_name(d: &DecoderWrapper) -> String {
    let name = match d {
        DecoderWrapper::BPE(_) => "BPEDecoder",
        DecoderWrapper::ByteLevel(_) => "ByteLevel",
        DecoderWrapper::WordPiece(_) => "WordPiece",
        DecoderWrapper::Metaspace(_) => "Metaspace",
        DecoderWrapper::CTC(_) => "CTC",
        DecoderWrapper::Sequence(_) => "Sequence",
        DecoderWrapper::Replace(_) => "Replace",
        DecoderWrapper::Fuse(_) => "Fuse",
        DecoderWrapper::Strip(_) => "Strip",
        DecoderWrapper::ByteFallback(_) => "ByteFallback",
    };
    name.into()
}

/// GPT-2's byte-level alphabet, inverted: the printable Latin-1 bytes stand
/// for themselves, the other 68 bytes for the characters from U+0100 on, in
/// byte order.
fn byte_of_char() -> HashMap<char, u8> {
    let mut map = HashMap::with_capacity(256);
    let mut next = 256u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        let ch = if printable {
            b as char
        } else {
            next += 1;
            char::from_u32(next - 1).expect("below U+0200")
        };
        map.insert(ch, b);
    }
    map
}

/// Turns a stream of token ids into text pieces, holding back the bytes of
/// a UTF-8 character until it is complete. Concatenating every piece and
/// [`TextStream::finish`] gives exactly [`Tokenizer::decode`] of the whole
/// sequence. Reuses its buffers: made by [`TextStream::for_tokenizer`], it
/// never allocates.
#[derive(Debug, Default)]
pub struct TextStream {
    pending: Vec<u8>,
    out: String,
}

impl TextStream {
    /// An empty stream (its buffers grow on first use).
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty stream with room for the worst case of `tokenizer`'s
    /// tokens: a held partial character (3 bytes) plus the longest token,
    /// every byte of which may turn into a 3-byte U+FFFD.
    pub fn for_tokenizer(tokenizer: &Tokenizer) -> Self {
        let most = tokenizer.max_token_bytes() + 3;
        TextStream { pending: Vec::with_capacity(most), out: String::with_capacity(3 * most) }
    }

    /// Adds one token; returns the text that became complete (often empty
    /// mid-character, sometimes more than the token itself).
    pub fn push(&mut self, tokenizer: &Tokenizer, id: u32) -> Result<&str, TokenizerError> {
        self.pending.extend_from_slice(tokenizer.token_bytes(id)?);
        self.out.clear();
        let mut start = 0;
        loop {
            match std::str::from_utf8(&self.pending[start..]) {
                Ok(s) => {
                    self.out.push_str(s);
                    start = self.pending.len();
                    break;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // The prefix was just checked; this cannot fail.
                    self.out.push_str(std::str::from_utf8(&self.pending[start..start + valid]).unwrap_or_default());
                    match e.error_len() {
                        // Bytes that can never become a character: one
                        // U+FFFD each maximal run, as `from_utf8_lossy` does.
                        Some(bad) => {
                            self.out.push(char::REPLACEMENT_CHARACTER);
                            start += valid + bad;
                        }
                        // A character cut at the end: wait for the next token.
                        None => {
                            start += valid;
                            break;
                        }
                    }
                }
            }
        }
        self.pending.drain(..start);
        Ok(&self.out)
    }

    /// Ends the stream: bytes still held (a character never completed)
    /// become U+FFFD.
    pub fn finish(&mut self) -> &str {
        self.out.clear();
        if !self.pending.is_empty() {
            self.out.push(char::REPLACEMENT_CHARACTER);
            self.pending.clear();
        }
        &self.out
    }
}
