//! The line-by-line driver: classifies each line, keeps the header in
//! order, attaches comments to the item below them and assembles the
//! [`Ast`] when no line had an error.

use super::cursor::Cursor;
use super::header::{parse_header_line, HeaderKey, HeaderValue};
use super::items::{parse_buffer, parse_entry, parse_thunk};
use super::lexer::{lex, Tok, Token};
use super::messages as msg;
use super::suggest;
use crate::ast::{Ast, BufferDecl, EntryDecl, Header, ThunkDecl};
use crate::diag::{Diagnostic, Diagnostics};
use crate::schedule::Role;
use crate::span::Span;

pub(super) fn parse_source(src: &str) -> Result<Ast, Diagnostics> {
    let tokens = lex(src);
    let mut p = Parser::default();
    let mut rest = tokens.as_slice();
    while let Some(nl) = rest.iter().position(|t| t.tok == Tok::Newline) {
        let (line, after) = rest.split_at(nl);
        p.line(line);
        rest = &after[1..];
    }
    p.finish()
}

const ROLES: [&str; 5] = ["input", "output", "param", "scratch", "state"];

#[derive(Default)]
struct Parser {
    diags: Vec<Diagnostic>,
    /// One slot per header key, in order.
    header: [Option<HeaderValue>; 7],
    /// Whether each header line appeared, even if it had an error.
    present: [Option<Span>; 7],
    /// The last header key seen, to check the order.
    last_key: Option<HeaderKey>,
    header_comments: Vec<String>,
    /// Start of the first buffer or thunk line.
    first_item: Option<Span>,
    seen_thunk: bool,
    buffers: Vec<BufferDecl>,
    thunks: Vec<ThunkDecl>,
    entries: Vec<EntryDecl>,
    /// Comment lines since the last item, for the next one.
    pending: Vec<String>,
    /// "Did you mean" answers for unknown kinds, and for unknown line words.
    kind_memo: suggest::Memo,
    word_memo: suggest::Memo,
}

impl Parser {
    /// Handles one line's tokens (without its newline).
    fn line(&mut self, toks: &[Token]) {
        let (code, comment) = match toks.split_last() {
            Some((Token { tok: Tok::Comment(c), span, .. }, code)) => (code, Some((c.clone(), span.start))),
            _ => (toks, None),
        };
        let Some(first) = code.first() else {
            if let Some((c, _)) = comment {
                self.pending.push(c);
            }
            return;
        };
        let end = comment.as_ref().map_or_else(|| code.last().map_or(first.span.end, |t| t.span.end), |c| c.1);
        let mut comments = std::mem::take(&mut self.pending);
        // An end-of-line comment moves above its item in canonical form.
        comments.extend(comment.map(|c| c.0));
        let mut cur = Cursor::new(code, end);
        let line = first.line;
        match &first.tok {
            Tok::Ident(word) => {
                if let Some(key) = HeaderKey::from_keyword(word) {
                    self.header_line(key, &mut cur, comments);
                } else if let Some(role) = Role::from_name(word) {
                    self.buffer_line(role, &mut cur, line, comments);
                } else if word == "entry" && matches!(cur.peek_at(1), Some(Tok::Ident(_))) {
                    self.entry_line(&mut cur, line, comments);
                } else if cur.peek_at(1) == Some(&Tok::LBrace) {
                    self.thunk_line(&mut cur, line, comments);
                } else {
                    self.diags.push(other_line(word, &mut cur, first.span, &mut self.word_memo));
                }
            }
            _ => self.diags.push(cur.expected(msg::EXPECTED_LINE).with_hint(msg::LINE_SHAPE_HINT)),
        }
    }

    fn header_line(&mut self, key: HeaderKey, cur: &mut Cursor<'_>, comments: Vec<String>) {
        let kw_span = cur.here();
        cur.next();
        let i = key.index();
        if self.first_item.is_some() {
            // Counted as present: "missing" would repeat this error.
            self.present[i].get_or_insert(kw_span);
            self.diags
                .push(Diagnostic::error(kw_span, msg::header_after_items(key.keyword())).with_hint(msg::HEADER_HINT));
            return;
        }
        if self.present[i].is_some() {
            self.diags.push(Diagnostic::error(kw_span, msg::duplicate_header(key.keyword())));
            return;
        }
        self.present[i] = Some(kw_span);
        if self.last_key.is_some_and(|last| last > key) {
            self.diags
                .push(Diagnostic::error(kw_span, msg::header_out_of_order(key.keyword())).with_hint(msg::HEADER_HINT));
        }
        self.last_key = self.last_key.max(Some(key));
        // Header comments all print above the header: the AST has no
        // place between its lines.
        self.header_comments.extend(comments);
        match parse_header_line(key, cur) {
            Ok(v) => self.header[i] = Some(v),
            Err(d) => self.diags.push(d),
        }
    }

    fn buffer_line(&mut self, role: Role, cur: &mut Cursor<'_>, line: u32, comments: Vec<String>) {
        let start = cur.here();
        self.first_item.get_or_insert(start);
        if self.seen_thunk {
            self.diags.push(Diagnostic::error(start, msg::BUFFER_AFTER_THUNK).with_hint(msg::BUFFER_AFTER_THUNK_HINT));
            return;
        }
        match parse_buffer(cur, role, line) {
            Ok(mut b) => {
                b.leading_comments = comments;
                self.buffers.push(b);
            }
            Err(d) => self.diags.push(d),
        }
    }

    fn thunk_line(&mut self, cur: &mut Cursor<'_>, line: u32, comments: Vec<String>) {
        self.first_item.get_or_insert(cur.here());
        self.seen_thunk = true;
        match parse_thunk(cur, line, &mut self.kind_memo) {
            Ok(mut t) => {
                t.leading_comments = comments;
                self.thunks.push(t);
            }
            Err(ds) => self.diags.extend(ds),
        }
    }

    fn entry_line(&mut self, cur: &mut Cursor<'_>, line: u32, comments: Vec<String>) {
        self.first_item.get_or_insert(cur.here());
        // Buffers come before entries as before thunks.
        self.seen_thunk = true;
        match parse_entry(cur, line, self.thunks.len()) {
            Ok(mut e) => {
                e.leading_comments = comments;
                self.entries.push(e);
            }
            Err(d) => self.diags.push(d),
        }
    }

    /// Reports required header lines that never appeared.
    fn check_missing_header(&mut self) {
        if self.present.iter().all(Option::is_none) {
            self.diags.push(Diagnostic::error(self.first_item, msg::MISSING_HEADER).with_hint(msg::HEADER_HINT));
            return;
        }
        for key in HeaderKey::ALL.into_iter().filter(|k| k.required() && self.present[k.index()].is_none()) {
            // Point at the line it should precede, else the end of the header.
            let later = self.present[key.index() + 1..].iter().flatten().next().copied();
            let d = match later.or(self.first_item) {
                Some(span) => Diagnostic::error(span, msg::missing_header_line(key.keyword()))
                    .with_label(msg::missing_header_label(key.example())),
                None => Diagnostic::error(None, msg::missing_header_line(key.keyword())),
            };
            self.diags.push(d.with_hint(msg::HEADER_HINT));
        }
    }

    fn finish(mut self) -> Result<Ast, Diagnostics> {
        self.check_missing_header();
        // With entries, every thunk belongs to one: none may precede the
        // first `entry` line.
        if let Some(first) = self.entries.first() {
            if let Some(orphan) = self.thunks.first().filter(|_| first.first_thunk > 0) {
                self.diags.push(
                    Diagnostic::error(orphan.kind_span, msg::THUNK_BEFORE_ENTRY)
                        .with_hint(msg::THUNK_BEFORE_ENTRY_HINT),
                );
            }
        }
        if !self.diags.is_empty() {
            let mut diags = self.diags;
            diags.sort_by_key(|d| d.span.map(|s| (s.start, s.end)));
            return Err(Diagnostics(diags));
        }
        let Some(header) = build_header(self.header, self.header_comments) else {
            // Every required line is present or reported above; this is
            // only a guard so that a parser bug cannot become a panic.
            return Err(Diagnostics(vec![Diagnostic::error(None, msg::INTERNAL_HEADER)]));
        };
        Ok(Ast {
            header,
            buffers: self.buffers,
            thunks: self.thunks,
            entries: self.entries,
            trailing_comments: self.pending,
        })
    }
}

/// A line starting with a word that is no keyword, role or kind.
fn other_line(word: &str, cur: &mut Cursor<'_>, span: Span, memo: &mut suggest::Memo) -> Diagnostic {
    // Capitalised words are thunk kinds missing their braces.
    if word.starts_with(|c: char| c.is_ascii_uppercase()) {
        cur.next();
        return cur.expected(msg::BRACE_AFTER_KIND);
    }
    if matches!(cur.peek_at(1), Some(Tok::Ident(_))) && cur.peek_at(2) == Some(&Tok::Colon) {
        let d = Diagnostic::error(span, msg::unknown_role(word));
        return match suggest::closest(word, ROLES) {
            Some(r) => d.with_hint(msg::did_you_mean(r)),
            None => d.with_hint(msg::ROLE_HINT),
        };
    }
    let d = Diagnostic::error(span, msg::expected_found(msg::EXPECTED_LINE, &format!("`{word}`")));
    let keywords = |w: &str| suggest::closest(w, HeaderKey::ALL.iter().map(|k| k.keyword()).chain(ROLES));
    match memo.get(word, keywords) {
        Some(k) => d.with_hint(msg::did_you_mean(k)),
        None => d.with_hint(msg::LINE_SHAPE_HINT),
    }
}

/// Assembles the header from its slots; `None` if a required one is empty.
fn build_header(slots: [Option<HeaderValue>; 7], leading_comments: Vec<String>) -> Option<Header> {
    let [version, model, arena, weights, threshold, neg_inf, skip] = slots;
    let (
        Some(HeaderValue::Version(version)),
        Some(HeaderValue::Model(model)),
        Some(HeaderValue::Arena { size, align }),
    ) = (version, model, arena)
    else {
        return None;
    };
    let (
        Some(HeaderValue::Float(mask_threshold)),
        Some(HeaderValue::Float(mask_neg_inf)),
        Some(HeaderValue::Float(score_skip)),
    ) = (threshold, neg_inf, skip)
    else {
        return None;
    };
    let weights = match weights {
        Some(HeaderValue::Weights(w)) => Some(w),
        _ => None,
    };
    Some(Header {
        version,
        model,
        arena_size: size,
        arena_align: align,
        weights,
        mask_threshold,
        mask_neg_inf,
        score_skip,
        leading_comments,
    })
}
