//! A cursor over the code tokens of one line.
//!
//! Every item of a `.sched` file is one line, so a syntax error abandons
//! the rest of its line and parsing resumes at the next one. The cursor's
//! methods return the first problem as a [`Diagnostic`].

use super::lexer::{describe, Tok, Token};
use super::messages as msg;
use crate::diag::Diagnostic;
use crate::span::Span;

pub(super) type PResult<T> = Result<T, Diagnostic>;

pub(super) struct Cursor<'t> {
    toks: &'t [Token],
    pos: usize,
    /// An empty span where the line's code ends (before any comment).
    end: Span,
}

impl<'t> Cursor<'t> {
    /// `toks` are the line's code tokens; `end` is where the code stops.
    pub(super) fn new(toks: &'t [Token], end: usize) -> Self {
        Cursor { toks, pos: 0, end: Span::new(end, end) }
    }

    pub(super) fn peek(&self) -> Option<&'t Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    pub(super) fn peek_at(&self, ahead: usize) -> Option<&'t Tok> {
        self.toks.get(self.pos + ahead).map(|t| &t.tok)
    }

    pub(super) fn next(&mut self) -> Option<&'t Token> {
        let t = self.toks.get(self.pos);
        self.pos += usize::from(t.is_some());
        t
    }

    /// Whether the next token is `tok`; consumes it if so.
    pub(super) fn eat(&mut self, tok: &Tok) -> Option<Span> {
        match self.toks.get(self.pos) {
            Some(t) if &t.tok == tok => {
                self.pos += 1;
                Some(t.span)
            }
            _ => None,
        }
    }

    /// The span of the next token, or the end of the line.
    pub(super) fn here(&self) -> Span {
        self.toks.get(self.pos).map_or(self.end, |t| t.span)
    }

    /// The span of the last consumed token.
    pub(super) fn prev_span(&self) -> Span {
        self.pos.checked_sub(1).and_then(|i| self.toks.get(i)).map_or(self.end, |t| t.span)
    }

    /// "expected `what`, found ..." at the next token. A token the lexer
    /// could not read reports its own message instead.
    pub(super) fn expected(&self, what: &str) -> Diagnostic {
        match self.toks.get(self.pos) {
            Some(Token { tok: Tok::Bad(m), span, .. }) => Diagnostic::error(*span, m.clone()),
            Some(t) => Diagnostic::error(t.span, msg::expected_found(what, &describe(&t.tok))),
            None => Diagnostic::error(self.end, msg::expected_found(what, msg::END_OF_LINE)),
        }
    }

    /// Consumes `tok` or reports that `what` was expected.
    pub(super) fn expect(&mut self, tok: &Tok, what: &str) -> PResult<Span> {
        self.eat(tok).ok_or_else(|| self.expected(what))
    }

    /// Consumes an identifier.
    pub(super) fn ident(&mut self, what: &str) -> PResult<(String, Span)> {
        match self.toks.get(self.pos) {
            Some(Token { tok: Tok::Ident(s), span, .. }) => {
                self.pos += 1;
                Ok((s.clone(), *span))
            }
            _ => Err(self.expected(what)),
        }
    }

    /// Consumes an integer lexeme (digits only) that fits in `u64`.
    pub(super) fn integer(&mut self, what: &str) -> PResult<(u64, Span)> {
        match self.toks.get(self.pos) {
            Some(Token { tok: Tok::Num(s), span, .. }) if s.bytes().all(|b| b.is_ascii_digit()) => {
                self.pos += 1;
                s.parse::<u64>().map(|n| (n, *span)).map_err(|_| Diagnostic::error(*span, msg::integer_too_large(s)))
            }
            _ => Err(self.expected(what)),
        }
    }

    /// An integer that fits in `usize`.
    pub(super) fn usize(&mut self, what: &str) -> PResult<(usize, Span)> {
        let (n, span) = self.integer(what)?;
        let n = usize::try_from(n).map_err(|_| Diagnostic::error(span, msg::integer_too_large(&n.to_string())))?;
        Ok((n, span))
    }

    /// Checks that nothing but a comment follows `what`.
    pub(super) fn end(&self, what: &str) -> PResult<()> {
        match self.toks.get(self.pos) {
            None => Ok(()),
            Some(Token { tok: Tok::Bad(m), span, .. }) => Err(Diagnostic::error(*span, m.clone())),
            Some(t) => Err(Diagnostic::error(t.span, msg::trailing_after(what, &describe(&t.tok)))),
        }
    }
}
