//! Diagnostics: what every phase reports, and their rendering.

use crate::span::Span;

/// The terminal writer types of [`Diagnostics::render_colored`], re-exported
/// so front ends need no direct dependency.
pub use codespan_reporting::term::termcolor;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Error,
}

/// One problem found in a `.sched` file (or its weights).
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Lower-case, no trailing period.
    pub message: String,
    /// Where in the `.sched` text; `None` for file-level problems.
    pub span: Option<Span>,
    /// Short text under the caret.
    pub label: Option<String>,
    /// `help: ...` line.
    pub hint: Option<String>,
}

impl Diagnostic {
    pub fn error(span: impl Into<Option<Span>>, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Error, message: message.into(), span: span.into(), label: None, hint: None }
    }

    pub fn warning(span: impl Into<Option<Span>>, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Warning, message: message.into(), span: span.into(), label: None, hint: None }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Diagnostic {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = Some(label.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// All diagnostics of a phase, in source order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(Diagnostic::is_error)
    }

    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

mod render {
    //! Text rendering with `codespan-reporting`: a `path:line:col:` header
    //! line of our own (so tools and golden files can match it), then
    //! codespan's source snippet with the caret, then `= help: ...`.

    use std::io;

    use codespan_reporting::diagnostic as cs;
    use codespan_reporting::files::{Files, SimpleFile};
    use codespan_reporting::term::termcolor::{Buffer, ColorSpec, NoColor, WriteColor};
    use codespan_reporting::term::{self, Chars, Config};

    use super::{Diagnostic, Diagnostics, Severity};
    use crate::span::Span;

    fn config() -> Config {
        // ASCII borders render the same in every terminal and golden file.
        Config { chars: Chars::ascii(), ..Config::default() }
    }

    /// Shrinks a span to the source and to char boundaries, so a
    /// diagnostic from any phase can be shown without panicking.
    fn clamp(span: Span, source: &str) -> Span {
        let fix = |mut i: usize| {
            i = i.min(source.len());
            while !source.is_char_boundary(i) {
                i -= 1;
            }
            i
        };
        let start = fix(span.start);
        Span::new(start, fix(span.end).max(start))
    }

    fn severity_name(s: Severity) -> &'static str {
        match s {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    /// The diagnostics in the order they are shown: file-level ones first,
    /// then by position; equal positions keep their order.
    pub(super) fn sorted(diags: &Diagnostics) -> Vec<&Diagnostic> {
        let mut v: Vec<&Diagnostic> = diags.0.iter().collect();
        v.sort_by_key(|d| d.span.map(|s| (s.start, s.end)));
        v
    }

    /// Writes one diagnostic; `w` may colour it.
    pub(super) fn write_one(d: &Diagnostic, path: &str, source: &str, w: &mut dyn WriteColor) -> io::Result<()> {
        let file = SimpleFile::new(path, source);
        let mut header_style = ColorSpec::new();
        header_style.set_bold(true);
        let sev = severity_name(d.severity);
        let Some(span) = d.span.map(|s| clamp(s, source)) else {
            writeln!(w, "{path}: {sev}: {}", d.message)?;
            if let Some(h) = &d.hint {
                writeln!(w, "  = help: {h}")?;
            }
            // A blank line ends every diagnostic, as codespan's snippets do.
            return writeln!(w);
        };
        let loc = file.location((), span.start).map_err(io::Error::other)?;
        w.set_color(&header_style)?;
        write!(w, "{path}:{}:{}: {sev}: {}", loc.line_number, loc.column_number, d.message)?;
        w.reset()?;
        writeln!(w)?;
        let label = cs::Label::primary((), span.range()).with_message(d.label.clone().unwrap_or_default());
        let notes = d.hint.iter().map(|h| format!("help: {h}")).collect();
        let severity = match d.severity {
            Severity::Warning => cs::Severity::Warning,
            Severity::Error => cs::Severity::Error,
        };
        // codespan prints its own `error: ` header line first: render into
        // a buffer of the same colour support and drop that line.
        let mut snippet = if w.supports_color() { Buffer::ansi() } else { Buffer::no_color() };
        let diag = cs::Diagnostic::new(severity).with_labels(vec![label]).with_notes(notes);
        term::emit(&mut snippet, &config(), &file, &diag).map_err(io::Error::other)?;
        let bytes = snippet.into_inner();
        let body = bytes.iter().position(|&b| b == b'\n').map_or(&bytes[..0], |i| &bytes[i + 1..]);
        w.write_all(body)
    }

    impl Diagnostics {
        /// Renders every diagnostic as plain text, sorted by position:
        /// `path:line:col: error: message`, the source line with a caret,
        /// then `= help: ...` when there is a hint. Diagnostics without a
        /// span render as `path: error: message`. A blank line follows each
        /// diagnostic.
        pub fn render(&self, path: &str, source: &str) -> String {
            let mut out = NoColor::new(Vec::new());
            // Writing into a Vec cannot fail, and spans are clamped.
            let _ = self.render_colored(path, source, &mut out);
            String::from_utf8_lossy(&out.into_inner()).into_owned()
        }

        /// Renders into a terminal writer, in colour when it supports it.
        pub fn render_colored(&self, path: &str, source: &str, w: &mut dyn WriteColor) -> io::Result<()> {
            for d in sorted(self) {
                write_one(d, path, source, w)?;
            }
            Ok(())
        }
    }

    impl Diagnostic {
        /// Renders this diagnostic alone, as [`Diagnostics::render`] does.
        pub fn render(&self, path: &str, source: &str) -> String {
            let mut out = NoColor::new(Vec::new());
            let _ = write_one(self, path, source, &mut out);
            String::from_utf8_lossy(&out.into_inner()).into_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "first line\nsecond é line\n";

    #[test]
    fn renders_header_snippet_and_help() {
        let d = Diagnostics(vec![Diagnostic::error(Span::new(11, 17), "bad word").with_hint("try another")]);
        let expected = "\
f.sched:2:1: error: bad word
  --> f.sched:2:1
  |
2 | second é line
  | ^^^^^^
  |
  = help: try another

";
        assert_eq!(d.render("f.sched", SRC), expected);
    }

    #[test]
    fn sorts_by_position_with_file_level_first() {
        let d = Diagnostics(vec![
            Diagnostic::warning(Span::new(11, 12), "later"),
            Diagnostic::error(Span::new(0, 5), "earlier"),
            Diagnostic::error(None, "whole file"),
        ]);
        let out = d.render("f", SRC);
        let heads: Vec<&str> = out.lines().filter(|l| l.starts_with("f:") || l.starts_with("f ")).collect();
        assert_eq!(heads, ["f: error: whole file", "f:1:1: error: earlier", "f:2:1: warning: later"]);
    }

    #[test]
    fn bad_spans_are_clamped_not_panics() {
        // Inside the two-byte `é` (bytes 18..20), and past the end.
        for span in [Span::new(19, 19), Span::new(19, 500), Span::new(500, 400), Span::new(5, 2)] {
            let out = Diagnostics(vec![Diagnostic::error(span, "m")]).render("f", SRC);
            assert!(out.starts_with("f:"), "{out}");
        }
        let out = Diagnostics(vec![Diagnostic::error(Span::new(3, 3), "m")]).render("f", "");
        assert!(out.starts_with("f:1:1: error: m"), "{out}");
    }

    #[test]
    fn labels_show_under_the_caret() {
        let out = Diagnostic::error(Span::new(0, 5), "m").with_label("here").render("f", SRC);
        assert!(out.contains("^^^^^ here"), "{out}");
    }
}
