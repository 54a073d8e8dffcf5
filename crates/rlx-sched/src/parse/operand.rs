//! How an operand is written in a field: `name`, `name+bytes` or `@bytes`.

use super::is_reserved;
use super::messages as msg;
use crate::ast::{OperandRef, Target};
use crate::span::Span;
use crate::value::{describe, FieldError, FieldValue, Value, ValueKind};

fn buffer_name(name: &str, span: Span) -> Result<String, FieldError> {
    if is_reserved(name) {
        let e = FieldError::new(span, msg::reserved_operand(name));
        return Err(if name == "none" { e.with_hint(msg::NONE_OPERAND_HINT) } else { e });
    }
    Ok(name.to_string())
}

fn offset(bytes: u64, span: Span) -> Result<usize, FieldError> {
    usize::try_from(bytes).map_err(|_| FieldError::new(span, msg::integer_too_large(&bytes.to_string())))
}

impl FieldValue for OperandRef {
    const EXPECTED: &'static str = "an operand";

    fn from_value(v: &Value) -> Result<Self, FieldError> {
        let target = match &v.kind {
            ValueKind::Ident(name) => Target::Buffer { name: buffer_name(name, v.span)?, offset: 0 },
            ValueKind::View(name, bytes) => {
                Target::Buffer { name: buffer_name(name, v.span)?, offset: offset(*bytes, v.span)? }
            }
            ValueKind::Raw(bytes) => Target::Raw { offset: offset(*bytes, v.span)? },
            _ => return Err(FieldError::new(v.span, msg::expected_found(Self::EXPECTED, &describe(v)))),
        };
        Ok(OperandRef { target, span: v.span })
    }

    /// A view at offset 0 prints as the bare name.
    fn to_value(&self) -> Value {
        let kind = match &self.target {
            Target::Buffer { name, offset: 0 } => ValueKind::Ident(name.clone()),
            Target::Buffer { name, offset } => ValueKind::View(name.clone(), *offset as u64),
            Target::Raw { offset } => ValueKind::Raw(*offset as u64),
        };
        Value::synthetic(kind)
    }
}
