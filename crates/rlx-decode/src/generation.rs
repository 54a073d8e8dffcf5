//! What a checkpoint says about generation beyond its weights: the token
//! ids that end a reply and the chat template.
//!
//! `cargo xtask import-llama` reads them from the Hugging Face files
//! ([`GenerationConfig::from_checkpoint`]: `eos_token_id` of
//! `generation_config.json`, else of `config.json`, one id or a list; the
//! `chat_template`, `bos_token` and `eos_token` of `tokenizer_config.json`)
//! and writes them beside the schedule as `generation.json`
//! ([`GenerationConfig::to_json`]), which the decoder crate embeds. The
//! binary then stops where the model stops, whatever the end token is
//! called, and `--chat` formats a conversation the way the model was
//! trained on.

use serde_json::{Map, Value};

/// Why a generation config could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GenerationError {
    #[error("{file}: {message}")]
    Invalid { file: &'static str, message: String },
}

fn invalid(file: &'static str, message: impl Into<String>) -> GenerationError {
    GenerationError::Invalid { file, message: message.into() }
}

/// The checkpoint's end-of-reply ids and chat template.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GenerationConfig {
    /// Sampling any of these ends generation (the token is not printed).
    /// Empty: the tokenizer's special end-of-text token, if it has one
    /// ([`crate::tokenizer::END_OF_TEXT`]).
    pub eos_token_ids: Vec<u32>,
    /// The Jinja chat template (`tokenizer_config.json`'s
    /// `chat_template`), rendered by `--chat` with `messages`,
    /// `add_generation_prompt`, `bos_token` and `eos_token`.
    pub chat_template: Option<String>,
    /// The strings the template may name as `bos_token` / `eos_token`.
    pub bos_token: Option<String>,
    pub eos_token: Option<String>,
}

/// The name of the file written beside the schedule and embedded by the
/// decoder crate.
pub const FILE_NAME: &str = "generation.json";

impl GenerationConfig {
    /// Reads the Hugging Face files of a checkpoint: `config.json`
    /// (required), `generation_config.json` and `tokenizer_config.json`
    /// (optional). `generation_config.json`'s `eos_token_id` wins over
    /// `config.json`'s, as in `transformers`' `generate`.
    pub fn from_checkpoint(
        config_json: &str,
        generation_config_json: Option<&str>,
        tokenizer_config_json: Option<&str>,
    ) -> Result<Self, GenerationError> {
        let config = object("config.json", config_json)?;
        let mut eos_token_ids = eos_ids("config.json", &config)?;
        if let Some(text) = generation_config_json {
            let generation = object("generation_config.json", text)?;
            if generation.get("eos_token_id").is_some_and(|v| !v.is_null()) {
                eos_token_ids = eos_ids("generation_config.json", &generation)?;
            }
        }
        let mut out = GenerationConfig { eos_token_ids, ..GenerationConfig::default() };
        if let Some(text) = tokenizer_config_json {
            let tokenizer = object("tokenizer_config.json", text)?;
            out.chat_template = chat_template(&tokenizer)?;
            out.bos_token = token_text("tokenizer_config.json", &tokenizer, "bos_token")?;
            out.eos_token = token_text("tokenizer_config.json", &tokenizer, "eos_token")?;
        }
        Ok(out)
    }

    /// Reads a `generation.json` written by [`GenerationConfig::to_json`].
    /// Unknown fields are errors: the file is written by the importer, so
    /// a field it does not know is a mistake, not an extension.
    pub fn from_json(text: &str) -> Result<Self, GenerationError> {
        let file = FILE_NAME;
        let map = object(file, text)?;
        for key in map.keys() {
            if !["eos_token_ids", "chat_template", "bos_token", "eos_token"].contains(&key.as_str()) {
                return Err(invalid(file, format!("unknown field `{key}`")));
            }
        }
        let eos_token_ids = match map.get("eos_token_ids") {
            None => Vec::new(),
            Some(Value::Array(ids)) => {
                ids.iter().map(|v| token_id(file, "eos_token_ids", v)).collect::<Result<_, _>>()?
            }
            Some(other) => return Err(invalid(file, format!("`eos_token_ids` is {other}, expected a list of ids"))),
        };
        let string = |key: &str| match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(invalid(file, format!("`{key}` is {other}, expected a string"))),
        };
        Ok(GenerationConfig {
            eos_token_ids,
            chat_template: string("chat_template")?,
            bos_token: string("bos_token")?,
            eos_token: string("eos_token")?,
        })
    }

    /// The `generation.json` text: fields in a fixed order, absent ones
    /// left out, so the file is byte-identical across imports.
    pub fn to_json(&self) -> String {
        let mut map = Map::new();
        map.insert("eos_token_ids".into(), Value::from(self.eos_token_ids.clone()));
        for (key, value) in
            [("chat_template", &self.chat_template), ("bos_token", &self.bos_token), ("eos_token", &self.eos_token)]
        {
            if let Some(v) = value {
                map.insert(key.into(), Value::String(v.clone()));
            }
        }
        // serde_json's map keeps keys sorted: the order is stable.
        let mut text = serde_json::to_string_pretty(&Value::Object(map)).expect("a JSON value always serialises");
        text.push('\n');
        text
    }
}

fn object(file: &'static str, text: &str) -> Result<Map<String, Value>, GenerationError> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(invalid(file, "expected a JSON object")),
        Err(e) => Err(invalid(file, format!("not valid JSON: {e}"))),
    }
}

fn token_id(file: &'static str, key: &str, v: &Value) -> Result<u32, GenerationError> {
    v.as_u64()
        .and_then(|id| u32::try_from(id).ok())
        .ok_or_else(|| invalid(file, format!("`{key}` holds {v}, expected a token id (an integer from 0 to 2^32-1)")))
}

/// `eos_token_id`: absent or null (no id), one id, or a list of ids.
fn eos_ids(file: &'static str, map: &Map<String, Value>) -> Result<Vec<u32>, GenerationError> {
    let mut ids = match map.get("eos_token_id") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list.iter().map(|v| token_id(file, "eos_token_id", v)).collect::<Result<_, _>>()?,
        Some(v) => vec![token_id(file, "eos_token_id", v)?],
    };
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// `chat_template`: a string, or a list of `{name, template}` of which the
/// one named `default` is used.
fn chat_template(map: &Map<String, Value>) -> Result<Option<String>, GenerationError> {
    let file = "tokenizer_config.json";
    match map.get("chat_template") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Array(list)) => {
            for entry in list {
                let name = entry.get("name").and_then(Value::as_str);
                let template = entry.get("template").and_then(Value::as_str);
                match (name, template) {
                    (Some("default"), Some(t)) => return Ok(Some(t.to_string())),
                    (Some(_), Some(_)) => {}
                    _ => {
                        return Err(invalid(
                            file,
                            "`chat_template` lists an entry without a string `name` and `template`",
                        ))
                    }
                }
            }
            Ok(None)
        }
        Some(other) => Err(invalid(file, format!("`chat_template` is {other}, expected a string or a list"))),
    }
}

/// `bos_token` / `eos_token`: a string, or an added-token object whose
/// `content` is the string.
fn token_text(file: &'static str, map: &Map<String, Value>, key: &str) -> Result<Option<String>, GenerationError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Object(o)) => match o.get("content") {
            Some(Value::String(s)) => Ok(Some(s.clone())),
            _ => Err(invalid(file, format!("`{key}` is an object without a string `content`"))),
        },
        Some(other) => Err(invalid(file, format!("`{key}` is {other}, expected a string"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_config_wins_and_lists_are_allowed() {
        let g = GenerationConfig::from_checkpoint(
            r#"{"eos_token_id": 2}"#,
            Some(r#"{"eos_token_id": [7, 2, 7]}"#),
            Some(r#"{"chat_template": "{{ messages }}", "eos_token": {"content": "<|im_end|>"}, "bos_token": null}"#),
        )
        .unwrap();
        assert_eq!(g.eos_token_ids, vec![2, 7]);
        assert_eq!(g.chat_template.as_deref(), Some("{{ messages }}"));
        assert_eq!(g.eos_token.as_deref(), Some("<|im_end|>"));
        assert_eq!(g.bos_token, None);
        let only_config = GenerationConfig::from_checkpoint(r#"{"eos_token_id": 5}"#, Some("{}"), None).unwrap();
        assert_eq!(only_config.eos_token_ids, vec![5]);
    }

    #[test]
    fn a_named_template_list_uses_the_default_entry() {
        let g = GenerationConfig::from_checkpoint(
            "{}",
            None,
            Some(r#"{"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]}"#),
        )
        .unwrap();
        assert_eq!(g.chat_template.as_deref(), Some("D"));
    }

    #[test]
    fn the_file_round_trips_byte_for_byte() {
        let g = GenerationConfig {
            eos_token_ids: vec![2, 32000],
            chat_template: Some("{% for m in messages %}{{ m.content }}{% endfor %}".into()),
            bos_token: Some("<s>".into()),
            eos_token: None,
        };
        let text = g.to_json();
        let back = GenerationConfig::from_json(&text).unwrap();
        assert_eq!(back, g);
        assert_eq!(back.to_json(), text);
    }

    #[test]
    fn bad_values_name_the_file_and_the_field() {
        let cases = [
            (GenerationConfig::from_checkpoint(r#"{"eos_token_id": -1}"#, None, None), "config.json: `eos_token_id`"),
            (
                GenerationConfig::from_checkpoint("{}", Some(r#"{"eos_token_id": "2"}"#), None),
                "generation_config.json: `eos_token_id`",
            ),
            (
                GenerationConfig::from_checkpoint(r#"{"eos_token_id": 4294967296}"#, None, None),
                "config.json: `eos_token_id` holds 4294967296",
            ),
            (GenerationConfig::from_checkpoint("[]", None, None), "config.json: expected a JSON object"),
            (
                GenerationConfig::from_checkpoint("{}", None, Some(r#"{"chat_template": 3}"#)),
                "tokenizer_config.json: `chat_template` is 3",
            ),
            (GenerationConfig::from_json(r#"{"eos_ids": [1]}"#), "generation.json: unknown field `eos_ids`"),
            (GenerationConfig::from_json(r#"{"eos_token_ids": 1}"#), "generation.json: `eos_token_ids` is 1"),
        ];
        for (result, want) in cases {
            let msg = result.expect_err(want).to_string();
            assert!(msg.starts_with(want), "{msg:?} does not start with {want:?}");
        }
    }
}
