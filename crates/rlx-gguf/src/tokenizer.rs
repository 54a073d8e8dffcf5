//! The tokenizer of a GGUF as the Hugging Face files a decoder crate
//! embeds: a `tokenizer.json` (`rlx_decode::Tokenizer` loads byte-level
//! BPE ones) and a `tokenizer_config.json` (the chat template and its
//! special tokens), plus the end-of-reply ids for `config.json`.
//!
//! Supported: `tokenizer.ggml.model` `gpt2` (byte-level BPE) with
//! `tokenizer.ggml.pre` `gpt-2` (GPT-2's pre-tokenizer regex, under the
//! name llama.cpp's converter writes and its loader reads; `gpt2` is taken
//! as the same). Others, the sentencepiece `llama` model among them, are
//! refused naming the key: the decoder binary reads byte-level BPE only.

use serde_json::{json, Map, Value as Json};

use crate::error::{metadata, GgufError};
use crate::reader::{Gguf, Value};

/// llama.cpp's token types (`llama_token_type`).
const CONTROL: i64 = 3;
const USER_DEFINED: i64 = 4;

fn array<'g>(gguf: &'g Gguf<'_>, key: &str) -> Result<&'g [Value], GgufError> {
    let v = gguf.get(key).ok_or_else(|| metadata(key, "is missing"))?;
    v.as_array().ok_or_else(|| metadata(key, format!("must be an array, found {}", v.type_name())))
}

fn strings<'g>(gguf: &'g Gguf<'_>, key: &str) -> Result<Vec<&'g str>, GgufError> {
    array(gguf, key)?
        .iter()
        .enumerate()
        .map(|(i, v)| v.as_str().ok_or_else(|| metadata(key, format!("item {i} is a {}, not a string", v.type_name()))))
        .collect()
}

/// A token id key (`tokenizer.ggml.eos_token_id`), checked against the
/// vocabulary.
fn token_id(gguf: &Gguf<'_>, key: &str, vocab: usize) -> Result<Option<u32>, GgufError> {
    let Some(v) = gguf.get(key) else { return Ok(None) };
    let id = v.as_u64().and_then(|x| u32::try_from(x).ok());
    match id {
        Some(id) if (id as usize) < vocab => Ok(Some(id)),
        _ => Err(metadata(key, format!("{} is not a token id of the vocabulary of {vocab}", v.describe()))),
    }
}

fn vocab_len(gguf: &Gguf<'_>) -> Result<usize, GgufError> {
    Ok(array(gguf, "tokenizer.ggml.tokens")?.len())
}

/// The ids that end a reply: `eos_token_id`, then `eot_token_id` and
/// `eom_token_id` (Llama 3's end of turn and of message) where set.
pub fn eos_token_ids(gguf: &Gguf<'_>) -> Result<Vec<u32>, GgufError> {
    if gguf.get("tokenizer.ggml.tokens").is_none() {
        return Ok(Vec::new());
    }
    let vocab = vocab_len(gguf)?;
    let mut ids = Vec::new();
    for key in ["tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"] {
        if let Some(id) = token_id(gguf, key, vocab)? {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    Ok(ids)
}

/// Per token, its llama.cpp type (normal when the file has none).
fn token_types(gguf: &Gguf<'_>, vocab: usize) -> Result<Vec<i64>, GgufError> {
    let key = "tokenizer.ggml.token_type";
    if gguf.get(key).is_none() {
        return Ok(vec![1; vocab]);
    }
    let types = array(gguf, key)?;
    if types.len() != vocab {
        return Err(metadata(key, format!("{} types for {vocab} tokens", types.len())));
    }
    types
        .iter()
        .map(|v| match *v {
            Value::I32(t) => Ok(t.into()),
            _ => Err(metadata(key, format!("must hold INT32 values, found {}", v.type_name()))),
        })
        .collect()
}

/// The `tokenizer.json` of a byte-level BPE GGUF tokenizer.
pub fn tokenizer_json(gguf: &Gguf<'_>) -> Result<Vec<u8>, GgufError> {
    let model_key = "tokenizer.ggml.model";
    let model = gguf.get(model_key).and_then(Value::as_str).ok_or_else(|| metadata(model_key, "is missing"))?;
    if model != "gpt2" {
        return Err(metadata(
            model_key,
            format!("`{model}` is not supported: the decoder reads byte-level BPE tokenizers (`gpt2`) only"),
        ));
    }
    let pre_key = "tokenizer.ggml.pre";
    match gguf.get(pre_key).map(|v| v.as_str()) {
        Some(Some("gpt-2" | "gpt2")) => {}
        Some(Some(other)) => {
            return Err(metadata(pre_key, format!("pre-tokenizer `{other}` is not supported; supported: gpt-2")))
        }
        Some(None) => return Err(metadata(pre_key, "must be a string")),
        None => return Err(metadata(pre_key, "is missing (the pre-tokenizer; supported: gpt-2)")),
    }
    let tokens = strings(gguf, "tokenizer.ggml.tokens")?;
    let types = token_types(gguf, tokens.len())?;
    let mut vocab = Map::new();
    let mut added = Vec::new();
    for (id, (&token, &ty)) in tokens.iter().zip(&types).enumerate() {
        if vocab.insert(token.to_string(), json!(id)).is_some() {
            return Err(metadata("tokenizer.ggml.tokens", format!("token `{token}` appears twice (id {id})")));
        }
        if ty == CONTROL || ty == USER_DEFINED {
            added.push(json!({
                "id": id, "content": token, "single_word": false, "lstrip": false, "rstrip": false,
                "normalized": false, "special": ty == CONTROL,
            }));
        }
    }
    let merges_key = "tokenizer.ggml.merges";
    let merges = if gguf.get(merges_key).is_some() { strings(gguf, merges_key)? } else { Vec::new() };
    let merges: Vec<Json> = merges
        .iter()
        .enumerate()
        .map(|(i, m)| match m.split_once(' ') {
            Some((a, b)) if !a.is_empty() && !b.is_empty() => Ok(json!([a, b])),
            _ => Err(metadata(merges_key, format!("merge {i} `{m}` is not two tokens separated by a space"))),
        })
        .collect::<Result<_, _>>()?;
    let byte_level = |prefix: bool| json!({"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": true, "use_regex": true});
    let tokenizer = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": null,
        "pre_tokenizer": byte_level(false),
        "post_processor": null,
        "decoder": byte_level(true),
        "model": {
            "type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
            "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
            "vocab": vocab, "merges": merges,
        },
    });
    Ok(serde_json::to_vec_pretty(&tokenizer).expect("JSON serialises"))
}

/// The `tokenizer_config.json` of the GGUF: `tokenizer.chat_template`,
/// and as `bos_token` / `eos_token` the text of those ids when they are
/// control tokens (an ordinary token named as BOS is not what a template
/// means by `bos_token`).
pub fn tokenizer_config_json(gguf: &Gguf<'_>) -> Result<String, GgufError> {
    let mut config = Map::new();
    let key = "tokenizer.chat_template";
    if let Some(v) = gguf.get(key) {
        let template = v.as_str().ok_or_else(|| metadata(key, format!("must be a string, found {}", v.type_name())))?;
        config.insert("chat_template".into(), template.into());
    }
    if gguf.get("tokenizer.ggml.tokens").is_some() {
        let tokens = strings(gguf, "tokenizer.ggml.tokens")?;
        let types = token_types(gguf, tokens.len())?;
        for (name, key) in [("bos_token", "tokenizer.ggml.bos_token_id"), ("eos_token", "tokenizer.ggml.eos_token_id")]
        {
            if let Some(id) = token_id(gguf, key, tokens.len())? {
                if types[id as usize] == CONTROL {
                    config.insert(name.into(), tokens[id as usize].into());
                }
            }
        }
    }
    Ok(serde_json::to_string_pretty(&Json::Object(config)).expect("JSON serialises"))
}
