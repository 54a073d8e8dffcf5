//! Every message text of the lexer and parser, in one place. Messages are
//! lower-case with no trailing period; hints complete them.

/// What the parser expected, for "expected X, found Y" and
/// "unexpected Y after X".
pub(super) mod what {
    pub(in crate::parse) const FORMAT_VERSION: &str = "a format version";
    pub(in crate::parse) const MODEL_NAME: &str = "a model name";
    pub(in crate::parse) const ARENA_SIZE: &str = "the arena size in bytes";
    pub(in crate::parse) const ARENA_ALIGN: &str = "the arena alignment in bytes";
    pub(in crate::parse) const ALIGN_KEYWORD: &str = "`align`";
    pub(in crate::parse) const WEIGHTS_PATH: &str = "the weights path as a string";
    pub(in crate::parse) const SHA256_KEYWORD: &str = "`sha256`";
    pub(in crate::parse) const SHA256: &str = "the sha256 as a string";
    pub(in crate::parse) const NUMBER: &str = "a number";
    pub(in crate::parse) const BUFFER_NAME: &str = "a buffer name";
    pub(in crate::parse) const DTYPE: &str = "a dtype";
    pub(in crate::parse) const DIMENSION: &str = "a dimension";
    pub(in crate::parse) const SEGMENT: &str = "a segment";
    pub(in crate::parse) const BYTE_OFFSET: &str = "a byte offset";
    pub(in crate::parse) const THUNK_KIND: &str = "a thunk kind";
    pub(in crate::parse) const FIELD_NAME: &str = "a field name or `}`";
    pub(in crate::parse) const VALUE: &str = "a value";
    pub(in crate::parse) const BUFFER: &str = "buffer";
    pub(in crate::parse) const THUNK: &str = "thunk";
    pub(in crate::parse) const ENTRY_NAME: &str = "an entry name";
    pub(in crate::parse) const ENTRY: &str = "entry";
    pub(in crate::parse) const COLON: &str = "`:`";
    pub(in crate::parse) const AT: &str = "`@`";
    pub(in crate::parse) const PLUS: &str = "`+`";
    pub(in crate::parse) const LBRACE: &str = "`{`";
    pub(in crate::parse) const LBRACKET: &str = "`[`";
    pub(in crate::parse) const COMMA_OR_RBRACE: &str = "`,` or `}`";
    pub(in crate::parse) const COMMA_OR_RBRACKET: &str = "`,` or `]`";
    pub(in crate::parse) const COMMA_OR_RPAREN: &str = "`,` or `)`";
}

pub(super) const UNTERMINATED_STRING: &str = "unterminated string";
pub(super) const MISSING_HEADER: &str = "missing header: a .sched file starts with `rlx-sched 1`";
pub(super) const HEADER_HINT: &str = "the header is `rlx-sched 1`, `model NAME`, `arena SIZE align ALIGN`, \
     an optional `weights \"PATH\" sha256 \"HEX\"`, then `mask_threshold X`, `mask_neg_inf X`, `score_skip X`";
pub(super) const BUFFER_AFTER_THUNK_HINT: &str = "move the buffer above the first thunk";
pub(super) const BUFFER_AFTER_THUNK: &str = "buffers must be declared before the first thunk";
pub(super) const EXPECTED_LINE: &str = "a header line, a buffer or a thunk";
pub(super) const LINE_SHAPE_HINT: &str =
    "a buffer is `ROLE NAME: DTYPE[DIMS] @ SEGMENT+OFFSET`, a thunk is `Kind { field: value, ... }`";
pub(super) const BRACE_AFTER_KIND: &str = "`{` after the thunk kind";
pub(super) const INTERNAL_HEADER: &str = "internal error: the header was not assembled (please report this)";
pub(super) const SHA256_FORM: &str = "sha256 must be 64 lower-case hex digits";
pub(super) const SUPPORTED_VERSION_HINT: &str = "this parser reads format version 1";
pub(super) const END_OF_LINE: &str = "end of line";
pub(super) const SEGMENT_HINT: &str = "expected `arena` or `weights`";
pub(super) const ROLE_HINT: &str = "expected one of input, output, param, scratch, state";
pub(super) const ENTRY_SHAPE_HINT: &str = "an entry line is `entry NAME { inputs: [a, b], outputs: [c] }`";
pub(super) const THUNK_BEFORE_ENTRY: &str = "thunk before the first `entry` line";
pub(super) const THUNK_BEFORE_ENTRY_HINT: &str =
    "in a schedule with `entry` lines every thunk belongs to the entry above it; add an `entry` line above this thunk";

pub(super) fn unknown_entry_field(name: &str) -> String {
    format!("unknown entry field `{name}`")
}

pub(super) fn duplicate_entry_field(name: &str) -> String {
    format!("duplicate entry field `{name}`")
}

pub(super) fn missing_entry_field(name: &str) -> String {
    format!("entry has no `{name}` field")
}

pub(super) const ENTRY_LIST: &str = "expected a list of buffer names, `[a, b]`";
pub(super) const ENTRY_BUFFER_NAME: &str = "expected a buffer name";

pub(super) fn unexpected_char(c: char) -> String {
    if c.is_control() {
        format!("unexpected character U+{:04X}", c as u32)
    } else {
        format!("unexpected character `{c}`")
    }
}

pub(super) fn invalid_number(text: &str) -> String {
    format!("invalid number `{}`", shorten(text))
}

pub(super) fn one_of(names: &[&str]) -> String {
    format!("expected one of {}", names.join(", "))
}

pub(super) fn header_line(keyword: &str) -> String {
    format!("`{keyword}` line")
}

pub(super) fn expected_found(expected: &str, found: &str) -> String {
    format!("expected {expected}, found {found}")
}

pub(super) fn integer_too_large(text: &str) -> String {
    format!("integer `{}` is too large", shorten(text))
}

pub(super) fn unsupported_version(text: &str) -> String {
    format!("unsupported format version `{}`", shorten(text))
}

pub(super) fn duplicate_header(key: &str) -> String {
    format!("duplicate header line `{key}`")
}

pub(super) fn header_out_of_order(key: &str) -> String {
    format!("header line `{key}` is out of order")
}

pub(super) fn header_after_items(key: &str) -> String {
    format!("header line `{key}` must come before the buffers and thunks")
}

pub(super) fn missing_header_line(key: &str) -> String {
    format!("missing header line `{key}`")
}

pub(super) fn missing_header_label(example: &str) -> String {
    format!("expected `{example}` before this line")
}

pub(super) fn reserved_name(name: &str) -> String {
    format!("`{name}` is a reserved word and cannot name a buffer")
}

pub(super) const RESERVED_HINT: &str =
    "reserved words are none, true, false, inf, nan and in0, in1, ... (step arguments)";

pub(super) fn unknown_dtype(name: &str) -> String {
    format!("unknown dtype `{name}`")
}

pub(super) fn unknown_segment(name: &str) -> String {
    format!("unknown segment `{name}`")
}

pub(super) fn unknown_role(name: &str) -> String {
    format!("unknown role `{name}`")
}

pub(super) fn unknown_kind(name: &str) -> String {
    format!("unknown thunk kind `{name}`")
}

pub(super) fn unsupported_kind(name: &str) -> String {
    format!("thunk kind `{name}` is not supported by the .sched format yet")
}

pub(super) fn did_you_mean(name: &str) -> String {
    format!("did you mean `{name}`?")
}

pub(super) fn trailing_after(what: &str, found: &str) -> String {
    format!("unexpected {found} after {what}")
}

pub(super) fn too_deep(limit: usize) -> String {
    format!("value nested too deeply (more than {limit} levels)")
}

pub(super) fn reserved_operand(name: &str) -> String {
    format!("expected an operand, found reserved word `{name}`")
}

pub(super) const NONE_OPERAND_HINT: &str = "only optional operands (such as a bias) can be `none`";

/// Long lexemes (a megabyte of digits) are cut in messages.
pub(super) fn shorten(text: &str) -> String {
    const MAX: usize = 40;
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
}
