//! The header lines: `rlx-sched 1`, `model`, `arena`, `weights`,
//! `mask_threshold`, `mask_neg_inf`, `score_skip`, in that order.

use super::cursor::{Cursor, PResult};
use super::lexer::Tok;
use super::messages as msg;
use crate::ast::{Spanned, WeightsDecl};
use crate::diag::Diagnostic;
use crate::value::parse_f32;

/// Which header line; the declaration order is the required line order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum HeaderKey {
    Version,
    Model,
    Arena,
    Weights,
    MaskThreshold,
    MaskNegInf,
    ScoreSkip,
}

impl HeaderKey {
    pub(super) const ALL: [HeaderKey; 7] = [
        HeaderKey::Version,
        HeaderKey::Model,
        HeaderKey::Arena,
        HeaderKey::Weights,
        HeaderKey::MaskThreshold,
        HeaderKey::MaskNegInf,
        HeaderKey::ScoreSkip,
    ];

    /// The word that starts the line.
    pub(super) const fn keyword(self) -> &'static str {
        match self {
            HeaderKey::Version => "rlx-sched",
            HeaderKey::Model => "model",
            HeaderKey::Arena => "arena",
            HeaderKey::Weights => "weights",
            HeaderKey::MaskThreshold => "mask_threshold",
            HeaderKey::MaskNegInf => "mask_neg_inf",
            HeaderKey::ScoreSkip => "score_skip",
        }
    }

    /// What the line looks like, for messages.
    pub(super) const fn example(self) -> &'static str {
        match self {
            HeaderKey::Version => "rlx-sched 1",
            HeaderKey::Model => "model NAME",
            HeaderKey::Arena => "arena SIZE align ALIGN",
            HeaderKey::Weights => "weights \"PATH\" sha256 \"HEX\"",
            HeaderKey::MaskThreshold => "mask_threshold X",
            HeaderKey::MaskNegInf => "mask_neg_inf X",
            HeaderKey::ScoreSkip => "score_skip X",
        }
    }

    pub(super) fn from_keyword(word: &str) -> Option<HeaderKey> {
        HeaderKey::ALL.into_iter().find(|k| k.keyword() == word)
    }

    pub(super) fn required(self) -> bool {
        self != HeaderKey::Weights
    }

    pub(super) fn index(self) -> usize {
        self as usize
    }
}

/// The value of one header line.
#[derive(Clone, Debug)]
pub(super) enum HeaderValue {
    Version(Spanned<u32>),
    Model(Spanned<String>),
    Arena { size: Spanned<usize>, align: Spanned<usize> },
    Weights(WeightsDecl),
    Float(Spanned<f32>),
}

/// Parses the rest of a header line after its keyword.
pub(super) fn parse_header_line(key: HeaderKey, cur: &mut Cursor<'_>) -> PResult<HeaderValue> {
    let value = match key {
        HeaderKey::Version => {
            let (n, span) = cur.integer(msg::what::FORMAT_VERSION)?;
            if n != 1 {
                return Err(Diagnostic::error(span, msg::unsupported_version(&n.to_string()))
                    .with_hint(msg::SUPPORTED_VERSION_HINT));
            }
            HeaderValue::Version(Spanned::new(1, span))
        }
        HeaderKey::Model => {
            let (name, span) = cur.ident(msg::what::MODEL_NAME)?;
            HeaderValue::Model(Spanned::new(name, span))
        }
        HeaderKey::Arena => {
            let (size, size_span) = cur.usize(msg::what::ARENA_SIZE)?;
            match cur.peek() {
                Some(Tok::Ident(w)) if w == "align" => {
                    cur.next();
                }
                _ => return Err(cur.expected(msg::what::ALIGN_KEYWORD)),
            }
            let (align, align_span) = cur.usize(msg::what::ARENA_ALIGN)?;
            HeaderValue::Arena { size: Spanned::new(size, size_span), align: Spanned::new(align, align_span) }
        }
        HeaderKey::Weights => {
            let start = cur.prev_span();
            let path = string(cur, msg::what::WEIGHTS_PATH)?;
            match cur.peek() {
                Some(Tok::Ident(w)) if w == "sha256" => {
                    cur.next();
                }
                _ => return Err(cur.expected(msg::what::SHA256_KEYWORD)),
            }
            let sha256 = string(cur, msg::what::SHA256)?;
            let is_hex =
                sha256.value.len() == 64 && sha256.value.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
            if !is_hex {
                return Err(Diagnostic::error(sha256.span, msg::SHA256_FORM));
            }
            let span = start.join(sha256.span);
            HeaderValue::Weights(WeightsDecl { path, sha256, span })
        }
        HeaderKey::MaskThreshold | HeaderKey::MaskNegInf | HeaderKey::ScoreSkip => {
            let x = match cur.peek() {
                Some(Tok::Num(s) | Tok::Ident(s)) => parse_f32(s),
                _ => None,
            };
            match x {
                Some(x) => {
                    cur.next();
                    HeaderValue::Float(Spanned::new(x, cur.prev_span()))
                }
                None => return Err(cur.expected(msg::what::NUMBER)),
            }
        }
    };
    cur.end(&msg::header_line(key.keyword()))?;
    Ok(value)
}

fn string(cur: &mut Cursor<'_>, what: &str) -> PResult<Spanned<String>> {
    match cur.peek() {
        Some(Tok::Str(s)) => {
            cur.next();
            Ok(Spanned::new(s.clone(), cur.prev_span()))
        }
        _ => Err(cur.expected(what)),
    }
}
