//! Splits `.sched` text into tokens, line by line.
//!
//! The lexer never fails: a character it cannot read becomes a
//! [`Tok::Bad`] token carrying the message, so the parser reports it in
//! place and recovers at the next line like any other syntax error.

use super::messages as msg;
use crate::span::Span;

/// What a token is.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    /// `[A-Za-z_][A-Za-z0-9_.]*`, and the format keyword `rlx-sched`.
    Ident(String),
    /// A number lexeme with its sign: `784`, `-1e9`, `0.5`, `-inf`.
    Num(String),
    /// A `"..."` string (no escapes).
    Str(String),
    LBrace,
    RBrace,
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    Colon,
    At,
    Plus,
    /// `// text` to the end of the line; the text is trimmed.
    Comment(String),
    /// The end of a line (`\n`, or `\r\n`).
    Newline,
    /// Text the lexer could not read; the message says why.
    Bad(String),
}

/// A token, its bytes and its 1-based line.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Token {
    pub tok: Tok,
    pub span: Span,
    pub line: u32,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

/// Tokenizes the whole source. The result always ends with a `Newline`.
pub(super) fn lex(src: &str) -> Vec<Token> {
    let mut lx = Lexer { src, pos: 0, line: 1, out: Vec::new() };
    lx.run();
    lx.out
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    line: u32,
    out: Vec<Token>,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek_at(&self, byte_offset: usize) -> Option<char> {
        self.src.get(self.pos + byte_offset..).and_then(|s| s.chars().next())
    }

    fn push(&mut self, tok: Tok, start: usize) {
        self.out.push(Token { tok, span: Span::new(start, self.pos), line: self.line });
    }

    /// Advances while `f` holds; returns the consumed text.
    fn eat_while(&mut self, f: impl Fn(char) -> bool) -> &str {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if !f(c) {
                break;
            }
            self.pos += c.len_utf8();
        }
        &self.src[start..self.pos]
    }

    fn run(&mut self) {
        while let Some(c) = self.peek() {
            let start = self.pos;
            match c {
                '\n' => {
                    self.pos += 1;
                    self.push(Tok::Newline, start);
                    self.line = self.line.saturating_add(1);
                }
                ' ' | '\t' | '\r' => self.pos += 1,
                '/' if self.peek_at(1) == Some('/') => {
                    self.pos += 2;
                    let text = self.eat_while(|c| c != '\n').trim().to_string();
                    self.push(Tok::Comment(text), start);
                }
                '"' => self.string(start),
                '-' | '0'..='9' => self.number(start),
                c if is_ident_start(c) => self.ident(start),
                _ => {
                    let tok = match c {
                        '{' => Tok::LBrace,
                        '}' => Tok::RBrace,
                        '(' => Tok::LParen,
                        ')' => Tok::RParen,
                        '[' => Tok::LBracket,
                        ']' => Tok::RBracket,
                        ',' => Tok::Comma,
                        ':' => Tok::Colon,
                        '@' => Tok::At,
                        '+' => Tok::Plus,
                        _ => Tok::Bad(msg::unexpected_char(c)),
                    };
                    self.pos += c.len_utf8();
                    self.push(tok, start);
                }
            }
        }
        let end = self.src.len();
        self.out.push(Token { tok: Tok::Newline, span: Span::new(end, end), line: self.line });
    }

    fn string(&mut self, start: usize) {
        self.pos += 1;
        let body = self.eat_while(|c| c != '"' && c != '\n' && c != '\r').to_string();
        if self.peek() == Some('"') {
            self.pos += 1;
            self.push(Tok::Str(body), start);
        } else {
            self.push(Tok::Bad(msg::UNTERMINATED_STRING.to_string()), start);
        }
    }

    fn ident(&mut self, start: usize) {
        self.eat_while(is_ident_char);
        // The format keyword is the one word with a hyphen.
        if &self.src[start..self.pos] == "rlx"
            && self.src[self.pos..].starts_with("-sched")
            && !self.src[self.pos + 6..].starts_with(is_ident_char)
        {
            self.pos += 6;
        }
        let text = self.src[start..self.pos].to_string();
        self.push(Tok::Ident(text), start);
    }

    /// `['-'] (digits ['.' digits] [('e'|'E') ['+'|'-'] digits] | 'inf' | 'nan')`.
    fn number(&mut self, start: usize) {
        if self.peek() == Some('-') {
            self.pos += 1;
            let word_len = self.src[self.pos..].find(|c: char| !is_ident_char(c)).unwrap_or(self.src.len() - self.pos);
            let word = &self.src[self.pos..self.pos + word_len];
            if word == "inf" || word == "nan" {
                self.pos += word_len;
                let text = self.src[start..self.pos].to_string();
                self.push(Tok::Num(text), start);
                return;
            }
            if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.push(Tok::Bad(msg::unexpected_char('-')), start);
                return;
            }
        }
        let ok = self.digits_part();
        // A number runs into letters (`12ab`) or a second dot (`1.2.3`):
        // swallow the whole word so the error names it.
        let ran_on = self.peek().is_some_and(is_ident_char);
        if ran_on {
            self.eat_while(is_ident_char);
        }
        let text = self.src[start..self.pos].to_string();
        let tok = if ok && !ran_on { Tok::Num(text) } else { Tok::Bad(msg::invalid_number(&text)) };
        self.push(tok, start);
    }

    /// Reads `digits ['.' digits] [exponent]`; false when a part is empty.
    fn digits_part(&mut self) -> bool {
        let mut ok = !self.eat_while(|c| c.is_ascii_digit()).is_empty();
        if self.peek() == Some('.') {
            self.pos += 1;
            ok &= !self.eat_while(|c| c.is_ascii_digit()).is_empty();
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some('+' | '-')) {
                self.pos += 1;
            }
            ok &= !self.eat_while(|c| c.is_ascii_digit()).is_empty();
        }
        ok
    }
}

/// A short description of a token for "found ..." messages.
pub(super) fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("`{}`", msg::shorten(s)),
        Tok::Num(s) => format!("number `{}`", msg::shorten(s)),
        Tok::Str(_) => "a string".to_string(),
        Tok::LBrace => "`{`".to_string(),
        Tok::RBrace => "`}`".to_string(),
        Tok::LParen => "`(`".to_string(),
        Tok::RParen => "`)`".to_string(),
        Tok::LBracket => "`[`".to_string(),
        Tok::RBracket => "`]`".to_string(),
        Tok::Comma => "`,`".to_string(),
        Tok::Colon => "`:`".to_string(),
        Tok::At => "`@`".to_string(),
        Tok::Plus => "`+`".to_string(),
        Tok::Comment(_) | Tok::Newline => msg::END_OF_LINE.to_string(),
        Tok::Bad(_) => "invalid text".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(s).into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn lexes_numbers_names_and_keyword() {
        use Tok::*;
        assert_eq!(
            toks("rlx-sched 1\nfc1.weight+64 -1e9 -inf 0.5e-3"),
            vec![
                Ident("rlx-sched".into()),
                Num("1".into()),
                Newline,
                Ident("fc1.weight".into()),
                Plus,
                Num("64".into()),
                Num("-1e9".into()),
                Num("-inf".into()),
                Num("0.5e-3".into()),
                Newline,
            ]
        );
    }

    #[test]
    fn bad_text_becomes_bad_tokens() {
        let t = toks("12ab 1. - $ é \"open");
        assert!(matches!(&t[0], Tok::Bad(m) if m.contains("12ab")));
        assert!(matches!(&t[1], Tok::Bad(m) if m.contains("1.")));
        assert!(matches!(&t[2], Tok::Bad(_)));
        assert!(matches!(&t[3], Tok::Bad(_)));
        assert!(matches!(&t[4], Tok::Bad(_)));
        assert!(matches!(&t[5], Tok::Bad(m) if m == msg::UNTERMINATED_STRING));
    }

    #[test]
    fn comments_and_lines() {
        let t = lex("a // hi there \r\n// x\nb");
        assert_eq!(t[1].tok, Tok::Comment("hi there".into()));
        assert_eq!(t[4].tok, Tok::Newline);
        assert_eq!(t[5].line, 3);
    }

    #[test]
    fn rlx_without_sched_is_an_ident() {
        assert_eq!(toks("rlx-schedx")[0], Tok::Ident("rlx".into()));
    }
}
