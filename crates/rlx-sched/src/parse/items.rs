//! Buffer lines, thunk lines and field values.

use super::cursor::{Cursor, PResult};
use super::lexer::Tok;
use super::messages as msg;
use super::suggest;
use super::{is_reserved, MAX_DEPTH};
use crate::aliases;
use crate::ast::{BufferDecl, EntryDecl, OperandRef, Spanned, ThunkDecl};
use crate::diag::Diagnostic;
use crate::dtype::DType;
use crate::fields::FieldSyntax;
use crate::schedule::{Role, Segment};
use crate::span::Span;
use crate::thunk::{Thunk, ThunkKind};
use crate::value::{FieldError, Value, ValueKind};

/// `ROLE NAME: DTYPE[DIMS] @ SEGMENT+OFFSET`; the cursor is at the role.
pub(super) fn parse_buffer(cur: &mut Cursor<'_>, role: Role, line: u32) -> PResult<BufferDecl> {
    let start = cur.here();
    cur.next();
    let (name, name_span) = cur.ident(msg::what::BUFFER_NAME)?;
    if is_reserved(&name) {
        return Err(Diagnostic::error(name_span, msg::reserved_name(&name)).with_hint(msg::RESERVED_HINT));
    }
    cur.expect(&Tok::Colon, msg::what::COLON)?;
    let (dtype_name, dtype_span) = cur.ident(msg::what::DTYPE)?;
    let dtype = DType::from_name(&dtype_name).ok_or_else(|| {
        let names: Vec<_> = DType::ALL.iter().map(|d| d.name()).collect();
        Diagnostic::error(dtype_span, msg::unknown_dtype(&dtype_name)).with_hint(msg::one_of(&names))
    })?;
    let open = cur.expect(&Tok::LBracket, msg::what::LBRACKET)?;
    let mut dims = Vec::new();
    if cur.eat(&Tok::RBracket).is_none() {
        loop {
            dims.push(cur.usize(msg::what::DIMENSION)?.0);
            if cur.eat(&Tok::Comma).is_some() {
                continue;
            }
            cur.expect(&Tok::RBracket, msg::what::COMMA_OR_RBRACKET)?;
            break;
        }
    }
    let shape_span = open.join(cur.prev_span());
    cur.expect(&Tok::At, msg::what::AT)?;
    let (segment_name, segment_span) = cur.ident(msg::what::SEGMENT)?;
    let segment = match segment_name.as_str() {
        "arena" => Segment::Arena,
        "weights" => Segment::Weights,
        _ => {
            return Err(
                Diagnostic::error(segment_span, msg::unknown_segment(&segment_name)).with_hint(msg::SEGMENT_HINT)
            )
        }
    };
    cur.expect(&Tok::Plus, msg::what::PLUS)?;
    let (offset, offset_span) = cur.usize(msg::what::BYTE_OFFSET)?;
    cur.end(msg::what::BUFFER)?;
    Ok(BufferDecl {
        role,
        name: Spanned::new(name, name_span),
        dtype: Spanned::new(dtype, dtype_span),
        shape: Spanned::new(dims, shape_span),
        segment,
        offset: Spanned::new(offset, offset_span),
        span: start.join(cur.prev_span()),
        line,
        leading_comments: Vec::new(),
    })
}

/// `entry NAME { inputs: [a, b], outputs: [c] }`; the cursor is at
/// `entry`. Both fields are required (an entry without inputs writes
/// `inputs: []`), in either order.
pub(super) fn parse_entry(cur: &mut Cursor<'_>, line: u32, first_thunk: usize) -> PResult<EntryDecl> {
    let start = cur.here();
    cur.next();
    let (name, name_span) = cur.ident(msg::what::ENTRY_NAME)?;
    let fields = parse_fields(cur)?;
    cur.end(msg::what::ENTRY)?;
    let span = start.join(cur.prev_span());
    let (mut inputs, mut outputs) = (None, None);
    for (field, field_span, value) in fields {
        let slot = match field.as_str() {
            "inputs" => &mut inputs,
            "outputs" => &mut outputs,
            _ => {
                return Err(
                    Diagnostic::error(field_span, msg::unknown_entry_field(&field)).with_hint(msg::ENTRY_SHAPE_HINT)
                )
            }
        };
        if slot.is_some() {
            return Err(Diagnostic::error(field_span, msg::duplicate_entry_field(&field)));
        }
        let ValueKind::List(items) = value.kind else {
            return Err(Diagnostic::error(value.span, msg::ENTRY_LIST).with_hint(msg::ENTRY_SHAPE_HINT));
        };
        let names = items
            .into_iter()
            .map(|v| match v.kind {
                ValueKind::Ident(n) => Ok(Spanned::new(n, v.span)),
                _ => Err(Diagnostic::error(v.span, msg::ENTRY_BUFFER_NAME).with_hint(msg::ENTRY_SHAPE_HINT)),
            })
            .collect::<PResult<Vec<_>>>()?;
        *slot = Some(names);
    }
    let missing = |f| Diagnostic::error(span, msg::missing_entry_field(f)).with_hint(msg::ENTRY_SHAPE_HINT);
    Ok(EntryDecl {
        name: Spanned::new(name, name_span),
        inputs: inputs.ok_or_else(|| missing("inputs"))?,
        outputs: outputs.ok_or_else(|| missing("outputs"))?,
        first_thunk,
        span,
        line,
        leading_comments: Vec::new(),
    })
}

/// `Kind { field: value, ... }`; the cursor is at the kind. Field errors
/// come from the thunk table and may be several.
/// `memo` keeps the suggestions for unknown kind names.
pub(super) fn parse_thunk(
    cur: &mut Cursor<'_>,
    line: u32,
    memo: &mut suggest::Memo,
) -> Result<ThunkDecl, Vec<Diagnostic>> {
    let (name, kind_span) = cur.ident(msg::what::THUNK_KIND).map_err(|d| vec![d])?;
    let alias = aliases::find(&name);
    let Some(kind) = ThunkKind::from_name(&name).or(alias.map(|a| a.kind)) else {
        return Err(vec![unknown_kind(&name, kind_span, memo)]);
    };
    let fields = parse_fields(cur).map_err(|d| vec![d])?;
    let span = kind_span.join(cur.prev_span());
    cur.end(msg::what::THUNK).map_err(|d| vec![d])?;
    let field_errors = |errs: Vec<FieldError>| {
        errs.into_iter()
            .map(|e| {
                let d = Diagnostic::error(e.span, e.message);
                match e.hint {
                    Some(h) => d.with_hint(h),
                    None => d,
                }
            })
            .collect::<Vec<_>>()
    };
    let fields = match alias {
        Some(a) => a.translate(fields, span).map_err(field_errors)?,
        None => fields,
    };
    let thunk = Thunk::<OperandRef>::from_fields(kind, &fields, span).map_err(field_errors)?;
    let field_spans = kind
        .fields()
        .iter()
        .filter_map(|f| fields.iter().find(|(n, _, _)| n == f.name).map(|(_, _, v)| (f.name, v.span)))
        .collect();
    Ok(ThunkDecl { thunk, span, kind_span, field_spans, line, leading_comments: Vec::new(), alias })
}

fn unknown_kind(name: &str, span: Span, memo: &mut suggest::Memo) -> Diagnostic {
    if suggest::is_unsupported_kind(name) {
        return Diagnostic::error(span, msg::unsupported_kind(name));
    }
    let d = Diagnostic::error(span, msg::unknown_kind(name));
    match memo.get(name, suggest::closest_kind) {
        Some(k) => d.with_hint(msg::did_you_mean(k)),
        None => d,
    }
}

/// `{ name: value, ... }` with an optional trailing comma.
fn parse_fields(cur: &mut Cursor<'_>) -> PResult<Vec<(String, Span, Value)>> {
    cur.expect(&Tok::LBrace, msg::what::LBRACE)?;
    let mut fields = Vec::new();
    loop {
        if cur.eat(&Tok::RBrace).is_some() {
            return Ok(fields);
        }
        let (name, name_span) = cur.ident(msg::what::FIELD_NAME)?;
        cur.expect(&Tok::Colon, msg::what::COLON)?;
        let value = parse_value(cur, 0)?;
        fields.push((name, name_span, value));
        if cur.eat(&Tok::Comma).is_none() {
            cur.expect(&Tok::RBrace, msg::what::COMMA_OR_RBRACE)?;
            return Ok(fields);
        }
    }
}

/// One field value (the grammar of [`ValueKind`]), nested at most
/// [`MAX_DEPTH`] deep so hostile input cannot overflow the stack.
pub(super) fn parse_value(cur: &mut Cursor<'_>, depth: usize) -> PResult<Value> {
    if depth >= MAX_DEPTH {
        return Err(Diagnostic::error(cur.here(), msg::too_deep(MAX_DEPTH)));
    }
    let start = cur.here();
    let kind = match cur.peek() {
        Some(Tok::Num(s)) => {
            cur.next();
            ValueKind::Num(s.clone())
        }
        Some(Tok::Ident(name)) => {
            cur.next();
            if cur.eat(&Tok::LParen).is_some() {
                ValueKind::Call(name.clone(), parse_seq(cur, &Tok::RParen, msg::what::COMMA_OR_RPAREN, depth)?)
            } else if cur.eat(&Tok::Plus).is_some() {
                ValueKind::View(name.clone(), cur.integer(msg::what::BYTE_OFFSET)?.0)
            } else {
                ValueKind::Ident(name.clone())
            }
        }
        Some(Tok::LBracket) => {
            cur.next();
            ValueKind::List(parse_seq(cur, &Tok::RBracket, msg::what::COMMA_OR_RBRACKET, depth)?)
        }
        Some(Tok::At) => {
            cur.next();
            ValueKind::Raw(cur.integer(msg::what::BYTE_OFFSET)?.0)
        }
        _ => return Err(cur.expected(msg::what::VALUE)),
    };
    Ok(Value { kind, span: start.join(cur.prev_span()) })
}

/// Values separated by commas up to `close` (already past the opener).
fn parse_seq(cur: &mut Cursor<'_>, close: &Tok, expected: &str, depth: usize) -> PResult<Vec<Value>> {
    let mut items = Vec::new();
    if cur.eat(close).is_some() {
        return Ok(items);
    }
    loop {
        items.push(parse_value(cur, depth + 1)?);
        if cur.eat(&Tok::Comma).is_none() {
            cur.expect(close, expected)?;
            return Ok(items);
        }
    }
}
