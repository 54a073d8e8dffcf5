//! The `.sched` parser: text to an unchecked [`Ast`].
//!
//! A hand-written lexer and a recursive-descent parser. Every item of the
//! format is one line, so an error abandons its line and parsing resumes at
//! the next: one run reports every syntax error. Field names and values are
//! checked against the thunk table by `Thunk::from_fields`, so the parser
//! itself knows no kind's fields. The parser never panics, whatever the
//! input: integers that overflow and values nested deeper than
//! [`MAX_DEPTH`] are errors.

mod cursor;
mod header;
mod items;
mod lexer;
mod messages;
mod operand;
mod parser;
mod suggest;

use crate::ast::Ast;
use crate::diag::Diagnostics;

/// How deep lists and calls may nest in a field value. Real schedules
/// nest two levels (`[relu, mul(in1)]`); the limit keeps recursion bounded.
pub const MAX_DEPTH: usize = 32;

/// Parses `.sched` text into an unchecked [`Ast`], reporting every syntax
/// error at once, sorted by position.
pub fn parse(src: &str) -> Result<Ast, Diagnostics> {
    parser::parse_source(src)
}

/// Words that cannot name a buffer: the value keywords `none`, `true`,
/// `false`, `inf`, `nan`, and the step arguments `in0`, `in1`, ...
pub fn is_reserved(name: &str) -> bool {
    matches!(name, "none" | "true" | "false" | "inf" | "nan")
        || name.strip_prefix("in").is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests;
