//! `config.json` fields read by name, with errors that name them: every
//! value a family uses passes through here before anything is sized by it.

use crate::error::ImportError;

pub(super) fn config_err(message: impl Into<String>) -> ImportError {
    ImportError::Checkpoint { file: "config.json", message: message.into() }
}

pub(super) fn tensor_err(message: impl Into<String>) -> ImportError {
    ImportError::Checkpoint { file: "model.safetensors", message: message.into() }
}

/// A `config.json` object whose fields are read by name.
pub(super) struct Fields<'a>(pub(super) &'a serde_json::Value);

impl Fields<'_> {
    /// The field, `None` when absent or `null`.
    pub(super) fn get(&self, k: &str) -> Option<&serde_json::Value> {
        self.0.get(k).filter(|v| !v.is_null())
    }

    /// A positive integer field.
    pub(super) fn positive(&self, k: &str) -> Result<usize, ImportError> {
        self.0
            .get(k)
            .and_then(serde_json::Value::as_u64)
            .and_then(|x| usize::try_from(x).ok())
            .filter(|&x| x > 0)
            .ok_or_else(|| config_err(format!("`{k}` must be a positive integer")))
    }

    /// A positive integer field that may be absent or `null`.
    pub(super) fn optional_positive(&self, k: &str) -> Result<Option<usize>, ImportError> {
        self.get(k).map(|_| self.positive(k)).transpose()
    }

    /// A number stored as f32: finite there (a value beyond f32's range
    /// would become infinite) and, with `positive`, above zero there too
    /// (a tiny value would become 0).
    pub(super) fn f32_number(
        &self,
        k: &str,
        value: Option<&serde_json::Value>,
        default: f32,
        positive: bool,
    ) -> Result<f32, ImportError> {
        let Some(v) = value else { return Ok(default) };
        let x = v.as_f64().ok_or_else(|| config_err(format!("`{k}` must be a number")))?;
        let stored = x as f32;
        let ok = stored.is_finite() && if positive { stored > 0.0 } else { stored >= 0.0 };
        if !ok {
            let want = if positive { "a positive" } else { "a non-negative" };
            return Err(config_err(format!(
                "`{k}` must be {want} number that f32 holds; it is {v} (stored as {stored})"
            )));
        }
        Ok(stored)
    }

    /// A string field that must be one of `known` when present; returns it.
    pub(super) fn one_of(&self, k: &str, known: &[&str], required: bool) -> Result<Option<String>, ImportError> {
        match self.0.get(k) {
            None | Some(serde_json::Value::Null) if !required => Ok(None),
            Some(serde_json::Value::String(s)) if known.contains(&s.as_str()) => Ok(Some(s.clone())),
            Some(serde_json::Value::String(s)) => {
                Err(config_err(format!("`{k}` `{s}` is not supported; supported: {}", known.join(", "))))
            }
            None | Some(serde_json::Value::Null) => Err(config_err(format!("`{k}` is missing"))),
            Some(other) => Err(config_err(format!("`{k}` must be a string, found {other}"))),
        }
    }

    pub(super) fn flag(&self, k: &str, default: bool) -> Result<bool, ImportError> {
        match self.0.get(k) {
            None | Some(serde_json::Value::Null) => Ok(default),
            Some(v) => v.as_bool().ok_or_else(|| config_err(format!("`{k}` must be true or false"))),
        }
    }
}
