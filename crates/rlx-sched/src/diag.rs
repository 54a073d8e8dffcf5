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

/// How many diagnostics [`Diagnostics::render`] shows; the rest are
/// counted in one closing line (`and N more errors`).
pub const MAX_RENDERED: usize = 100;

/// Source lines longer than this many bytes are shown as a window around
/// the caret, so a hostile one-line file cannot make every diagnostic
/// print megabytes.
pub const MAX_LINE_BYTES: usize = 512;

mod render {
    //! Text rendering with `codespan-reporting`: a `path:line:col:` header
    //! line of our own (so tools and golden files can match it), then
    //! codespan's source snippet with the caret, then `= help: ...`.
    //!
    //! The source is indexed once per rendering (not per diagnostic), at
    //! most [`MAX_RENDERED`](super::MAX_RENDERED) diagnostics are written,
    //! and a long line is cut to a window around the span, so rendering
    //! costs time linear in the source plus the shown diagnostics.

    use std::io;
    use std::ops::Range;

    use codespan_reporting::diagnostic as cs;
    use codespan_reporting::files::{self, Files, SimpleFile};
    use codespan_reporting::term::termcolor::{Buffer, ColorSpec, NoColor, WriteColor};
    use codespan_reporting::term::{self, Chars, Config};

    use super::{Diagnostic, Diagnostics, Severity, MAX_LINE_BYTES, MAX_RENDERED};
    use crate::span::Span;

    /// Bytes of context kept on each side of the span on a long line.
    const CONTEXT_BYTES: usize = 80;
    /// Bytes of the span itself shown on a long line.
    const SPAN_BYTES: usize = 160;
    /// Marks text cut from a long line.
    const ELLIPSIS: &str = "...";

    fn config() -> Config {
        // ASCII borders render the same in every terminal and golden file.
        Config { chars: Chars::ascii(), ..Config::default() }
    }

    /// The largest char boundary of `s` not after `i` (and not past the end).
    fn floor_boundary(s: &str, i: usize) -> usize {
        let mut i = i.min(s.len());
        while !s.is_char_boundary(i) {
            i -= 1;
        }
        i
    }

    /// Shrinks a span to the source and to char boundaries, so a
    /// diagnostic from any phase can be shown without panicking.
    fn clamp(span: Span, source: &str) -> Span {
        let start = floor_boundary(source, span.start);
        Span::new(start, floor_boundary(source, span.end).max(start))
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

    /// One line of a long-lined source, cut to a window around a span:
    /// codespan sees only the window but reports the real line and column.
    struct Excerpt<'a> {
        name: &'a str,
        text: String,
        line_number: usize,
        /// Chars of the real line before the window.
        chars_before: usize,
        /// Bytes of `text` before the window (the leading ellipsis).
        prefix: usize,
    }

    impl<'a> Files<'a> for Excerpt<'a> {
        type FileId = ();
        type Name = &'a str;
        type Source = &'a str;

        fn name(&'a self, (): ()) -> Result<&'a str, files::Error> {
            Ok(self.name)
        }

        fn source(&'a self, (): ()) -> Result<&'a str, files::Error> {
            Ok(&self.text)
        }

        fn line_index(&'a self, (): (), _byte_index: usize) -> Result<usize, files::Error> {
            Ok(0)
        }

        fn line_number(&'a self, (): (), _line_index: usize) -> Result<usize, files::Error> {
            Ok(self.line_number)
        }

        fn column_number(&'a self, (): (), _line_index: usize, byte_index: usize) -> Result<usize, files::Error> {
            let from = self.prefix.min(self.text.len());
            let to = floor_boundary(&self.text, byte_index).max(from);
            Ok(self.chars_before + self.text[from..to].chars().count() + 1)
        }

        fn line_range(&'a self, (): (), line_index: usize) -> Result<Range<usize>, files::Error> {
            match line_index {
                0 => Ok(0..self.text.len()),
                given => Err(files::Error::LineTooLarge { given, max: 0 }),
            }
        }
    }

    /// The whole source, indexed once for every diagnostic it shows.
    struct Indexed<'a> {
        path: &'a str,
        source: &'a str,
        file: SimpleFile<&'a str, &'a str>,
    }

    impl<'a> Indexed<'a> {
        fn new(path: &'a str, source: &'a str) -> Self {
            Indexed { path, source, file: SimpleFile::new(path, source) }
        }

        /// The byte range of the line holding `byte` (without its newline).
        fn line_of(&self, byte: usize) -> (usize, Range<usize>) {
            // `line_index` of a SimpleFile cannot fail; fall back to line 0.
            let index = self.file.line_index((), byte).unwrap_or(0);
            let range = self.file.line_range((), index).unwrap_or(0..self.source.len());
            let text = &self.source[range.clone()];
            let len = text.trim_end_matches(['\n', '\r']).len();
            (index, range.start..range.start + len)
        }

        /// When the span's line is too long to show whole: the window of
        /// it codespan renders, and the span within that window.
        fn excerpt(&self, span: Span) -> Option<(Excerpt<'a>, Span)> {
            let (index, line) = self.line_of(span.start);
            if line.len() <= MAX_LINE_BYTES {
                return None;
            }
            let src = self.source;
            let span_end = floor_boundary(src, span.end.min(line.end).min(span.start + SPAN_BYTES)).max(span.start);
            let from = floor_boundary(src, span.start.saturating_sub(CONTEXT_BYTES).max(line.start));
            let to = floor_boundary(src, (span_end + CONTEXT_BYTES).min(line.end)).max(span_end);
            let mut text = String::new();
            if from > line.start {
                text.push_str(ELLIPSIS);
            }
            let prefix = text.len();
            text.push_str(&src[from..to]);
            if to < line.end {
                text.push_str(ELLIPSIS);
            }
            let shifted = Span::new(span.start - from + prefix, span_end - from + prefix);
            let chars_before = src[line.start..from].chars().count();
            let excerpt = Excerpt { name: self.path, text, line_number: index + 1, chars_before, prefix };
            Some((excerpt, shifted))
        }
    }

    /// Writes one diagnostic; `w` may colour it.
    fn write_one(d: &Diagnostic, src: &Indexed<'_>, w: &mut dyn WriteColor) -> io::Result<()> {
        let path = src.path;
        let mut header_style = ColorSpec::new();
        header_style.set_bold(true);
        let sev = severity_name(d.severity);
        let Some(span) = d.span.map(|s| clamp(s, src.source)) else {
            writeln!(w, "{path}: {sev}: {}", d.message)?;
            if let Some(h) = &d.hint {
                writeln!(w, "  = help: {h}")?;
            }
            // A blank line ends every diagnostic, as codespan's snippets do.
            return writeln!(w);
        };
        let excerpt = src.excerpt(span);
        let loc = match &excerpt {
            Some((e, s)) => e.location((), s.start),
            None => src.file.location((), span.start),
        }
        .map_err(io::Error::other)?;
        w.set_color(&header_style)?;
        write!(w, "{path}:{}:{}: {sev}: {}", loc.line_number, loc.column_number, d.message)?;
        w.reset()?;
        writeln!(w)?;
        let shown = excerpt.as_ref().map_or(span, |(_, s)| *s);
        let label = cs::Label::primary((), shown.range()).with_message(d.label.clone().unwrap_or_default());
        let notes = d.hint.iter().map(|h| format!("help: {h}")).collect();
        let severity = match d.severity {
            Severity::Warning => cs::Severity::Warning,
            Severity::Error => cs::Severity::Error,
        };
        // codespan prints its own `error: ` header line first: render into
        // a buffer of the same colour support and drop that line.
        let mut snippet = if w.supports_color() { Buffer::ansi() } else { Buffer::no_color() };
        let diag = cs::Diagnostic::new(severity).with_labels(vec![label]).with_notes(notes);
        match &excerpt {
            Some((e, _)) => term::emit(&mut snippet, &config(), e, &diag),
            None => term::emit(&mut snippet, &config(), &src.file, &diag),
        }
        .map_err(io::Error::other)?;
        let bytes = snippet.into_inner();
        let body = bytes.iter().position(|&b| b == b'\n').map_or(&bytes[..0], |i| &bytes[i + 1..]);
        w.write_all(body)
    }

    /// `and 3 more errors`, `and 1 more warning`, `and 2 more errors and 1 more warning`.
    fn more_line(rest: &[&Diagnostic]) -> String {
        let errors = rest.iter().filter(|d| d.is_error()).count();
        let warnings = rest.len() - errors;
        let part = |n: usize, what: &str| format!("{n} more {what}{}", if n == 1 { "" } else { "s" });
        match (errors, warnings) {
            (e, 0) => format!("and {}", part(e, "error")),
            (0, w) => format!("and {}", part(w, "warning")),
            (e, w) => format!("and {} and {}", part(e, "error"), part(w, "warning")),
        }
    }

    impl Diagnostics {
        /// Renders the diagnostics as plain text, sorted by position:
        /// `path:line:col: error: message`, the source line with a caret,
        /// then `= help: ...` when there is a hint. Diagnostics without a
        /// span render as `path: error: message`. A blank line follows each
        /// diagnostic. Only the first [`MAX_RENDERED`] are shown; one line
        /// `and N more errors` counts the rest.
        pub fn render(&self, path: &str, source: &str) -> String {
            let mut out = NoColor::new(Vec::new());
            // Writing into a Vec cannot fail, and spans are clamped.
            let _ = self.render_colored(path, source, &mut out);
            String::from_utf8_lossy(&out.into_inner()).into_owned()
        }

        /// Renders into a terminal writer, in colour when it supports it,
        /// as [`Diagnostics::render`] does.
        pub fn render_colored(&self, path: &str, source: &str, w: &mut dyn WriteColor) -> io::Result<()> {
            self.render_limited(path, source, MAX_RENDERED, w)
        }

        /// [`Diagnostics::render_colored`] showing at most `limit`
        /// diagnostics.
        pub fn render_limited(&self, path: &str, source: &str, limit: usize, w: &mut dyn WriteColor) -> io::Result<()> {
            let src = Indexed::new(path, source);
            let all = sorted(self);
            let (shown, rest) = all.split_at(limit.min(all.len()));
            for d in shown {
                write_one(d, &src, w)?;
            }
            if !rest.is_empty() {
                writeln!(w, "{}", more_line(rest))?;
            }
            Ok(())
        }
    }

    impl Diagnostic {
        /// Renders this diagnostic alone, as [`Diagnostics::render`] does.
        pub fn render(&self, path: &str, source: &str) -> String {
            let mut out = NoColor::new(Vec::new());
            let _ = write_one(self, &Indexed::new(path, source), &mut out);
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

    fn headers(out: &str, path: &str) -> usize {
        out.lines().filter(|l| l.starts_with(&format!("{path}:"))).count()
    }

    #[test]
    fn only_the_first_diagnostics_are_rendered() {
        let src = "x\n".repeat(300);
        let mut d = Diagnostics::default();
        for i in (0..250).rev() {
            d.push(Diagnostic::error(Span::new(2 * i, 2 * i + 1), format!("e{i}")));
        }
        d.push(Diagnostic::warning(Span::new(598, 599), "w"));
        let out = d.render("f", &src);
        assert_eq!(headers(&out, "f"), MAX_RENDERED, "{out}");
        // The shown ones are the first by position.
        assert!(out.starts_with("f:1:1: error: e0\n"), "{out}");
        assert!(out.contains("f:100:1: error: e99\n") && !out.contains("e100\n"), "{out}");
        assert!(out.ends_with("\nand 150 more errors and 1 more warning\n"), "{}", &out[out.len() - 80..]);
        let one_more = Diagnostics(d.0[..MAX_RENDERED + 1].to_vec()).render("f", &src);
        assert!(one_more.ends_with("\nand 1 more error\n"), "{one_more}");
        let exact = Diagnostics(d.0[..MAX_RENDERED].to_vec()).render("f", &src);
        assert!(!exact.contains("more error"), "{exact}");
    }

    #[test]
    fn long_lines_show_a_window_around_the_span() {
        // One 200 kB line with a two-byte char before the span.
        let src = format!("head\né{}TARGET{}\nlast\n", "a".repeat(100_000), "b".repeat(100_000));
        let at = src.find("TARGET").unwrap();
        let out = Diagnostics(vec![Diagnostic::error(Span::new(at, at + 6), "m").with_label("here")]).render("f", &src);
        assert!(out.len() < 1_000, "{} bytes", out.len());
        // Line 2, column: `é` is one char, then 100,000 `a`s.
        assert!(out.starts_with("f:2:100002: error: m\n"), "{out}");
        assert!(out.contains("--> f:2:100002"), "{out}");
        assert!(out.contains("2 | ...aaaa"), "{out}");
        assert!(out.contains("TARGETbbbb") && out.contains("bbb...\n"), "{out}");
        let caret = out.lines().find(|l| l.contains('^')).unwrap();
        let line = out.lines().find(|l| l.contains("TARGET")).unwrap();
        assert_eq!(caret.find('^'), line.find("TARGET"), "{out}");
        assert!(caret.ends_with("^^^^^^ here"), "{out}");
        // At the end of a long line, and a span longer than the window.
        let end = src.find("\nlast").unwrap();
        for span in [Span::new(end, end), Span::new(6, end)] {
            let out = Diagnostics(vec![Diagnostic::error(span, "m")]).render("f", &src);
            assert!(out.len() < 1_000 && out.starts_with("f:2:"), "{out}");
        }
    }
}
