//! The canonical printer.
//!
//! Canonical form: the header lines in order with single spaces, a blank
//! line, the buffer table (role column padded to 8), a blank line, one
//! thunk per line with its fields in table order (each `entry` line after
//! a blank line, above its first thunk), then any trailing
//! comments after a blank line. Comments print as `// text` directly above
//! their item. `print(parse(print(ast))) == print(ast)` for every AST the
//! parser accepts, and the output ends with exactly one `\n`.

use crate::fields::FieldSyntax;
use std::fmt::Write as _;

use crate::ast::{Ast, BufferDecl, EntryDecl, Header, OperandRef, Spanned, Target};
use crate::schedule::Buffer;
use crate::span::Span;
use crate::thunk::Thunk;
use crate::value::{format_f32, FieldValue, Value, ValueKind};
use crate::Operand;

/// Prints an [`Ast`] in canonical form: `print(parse(s))` is stable.
pub fn print(ast: &Ast) -> String {
    let mut out = String::new();
    print_header(&mut out, &ast.header);
    if !ast.buffers.is_empty() {
        out.push('\n');
        for b in &ast.buffers {
            print_comments(&mut out, &b.leading_comments);
            out.push_str(&print_buffer(b));
            out.push('\n');
        }
    }
    let mut entries = ast.entries.iter().peekable();
    if !ast.thunks.is_empty() && entries.peek().is_none_or(|e| e.first_thunk > 0) {
        out.push('\n');
    }
    for (i, t) in ast.thunks.iter().enumerate() {
        while let Some(e) = entries.next_if(|e| e.first_thunk <= i) {
            print_entry(&mut out, e);
        }
        print_comments(&mut out, &t.leading_comments);
        out.push_str(&print_thunk(&t.thunk));
        out.push('\n');
    }
    // Entries without thunks, after the last thunk.
    for e in entries {
        print_entry(&mut out, e);
    }
    if !ast.trailing_comments.is_empty() {
        out.push('\n');
        print_comments(&mut out, &ast.trailing_comments);
    }
    out
}

fn print_comments(out: &mut String, comments: &[String]) {
    for c in comments {
        let c = c.trim();
        if c.is_empty() {
            out.push_str("//\n");
        } else {
            // One comment, one line: a newline (from an ONNX node name, say)
            // is written as `\n`, never raw.
            let _ = writeln!(out, "// {}", c.replace('\n', "\\n"));
        }
    }
}

fn print_header(out: &mut String, h: &Header) {
    print_comments(out, &h.leading_comments);
    let _ = writeln!(out, "rlx-sched {}", h.version.value);
    let _ = writeln!(out, "model {}", h.model.value);
    let _ = writeln!(out, "arena {} align {}", h.arena_size.value, h.arena_align.value);
    if let Some(w) = &h.weights {
        let _ = writeln!(out, "weights \"{}\" sha256 \"{}\"", w.path.value, w.sha256.value);
    }
    let _ = writeln!(out, "mask_threshold {}", format_f32(h.mask_threshold.value));
    let _ = writeln!(out, "mask_neg_inf {}", format_f32(h.mask_neg_inf.value));
    let _ = writeln!(out, "score_skip {}", format_f32(h.score_skip.value));
}

/// A blank line, the entry's comments and its line.
fn print_entry(out: &mut String, e: &EntryDecl) {
    out.push('\n');
    print_comments(out, &e.leading_comments);
    let names = |list: &[Spanned<String>]| list.iter().map(|n| n.value.as_str()).collect::<Vec<_>>().join(", ");
    let _ =
        writeln!(out, "entry {} {{ inputs: [{}], outputs: [{}] }}", e.name.value, names(&e.inputs), names(&e.outputs));
}

/// One buffer line, without the newline: `input   x: f32[1, 784] @ arena+0`.
pub fn print_buffer(b: &BufferDecl) -> String {
    let dims: Vec<String> = b.shape.value.iter().map(usize::to_string).collect();
    format!(
        "{:<8}{}: {}[{}] @ {}+{}",
        b.role.name(),
        b.name.value,
        b.dtype.value.name(),
        dims.join(", "),
        b.segment.name(),
        b.offset.value
    )
}

/// One thunk line, without the newline: `Kind { f1: v1, f2: v2 }`, fields
/// in table order; `Nop {}` when the kind has none.
pub fn print_thunk(t: &Thunk<OperandRef>) -> String {
    let fields = t.to_fields();
    if fields.is_empty() {
        return format!("{} {{}}", t.kind().name());
    }
    let body: Vec<String> = fields.iter().map(|(name, v)| format!("{name}: {}", print_value(v))).collect();
    format!("{} {{ {} }}", t.kind().name(), body.join(", "))
}

/// One validated thunk as its canonical line, each operand written as the
/// schedule names it (`name`, `name+bytes`, or `@bytes` when it names no
/// buffer), so the line reads as `print_thunk` of the thunk as parsed.
/// `buffers` are the schedule's (`Schedule::buffers`).
pub fn print_resolved_thunk(t: &Thunk<Operand>, buffers: &[Buffer]) -> String {
    let named = t.clone().map_operands(&mut |_, op: Operand| {
        let target = match op.buffer {
            Some(i) => Target::Buffer { name: buffers[i].name.clone(), offset: op.offset - buffers[i].offset },
            None => Target::Raw { offset: op.offset },
        };
        Ok::<_, std::convert::Infallible>(OperandRef { target, span: Span::default() })
    });
    match named {
        Ok(named) => print_thunk(&named),
        Err(never) => match never[0] {},
    }
}

/// A field value in the `.sched` value syntax.
pub fn print_value(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

fn write_value(out: &mut String, v: &Value) {
    match &v.kind {
        ValueKind::Num(s) | ValueKind::Ident(s) => out.push_str(s),
        ValueKind::Call(name, args) => {
            out.push_str(name);
            out.push('(');
            write_seq(out, args);
            out.push(')');
        }
        ValueKind::List(items) => {
            out.push('[');
            write_seq(out, items);
            out.push(']');
        }
        ValueKind::View(name, offset) => {
            let _ = write!(out, "{name}+{offset}");
        }
        ValueKind::Raw(offset) => {
            let _ = write!(out, "@{offset}");
        }
    }
}

fn write_seq(out: &mut String, items: &[Value]) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_value(out, item);
    }
}

/// An operand as written: `name`, `name+bytes` or `@bytes`.
pub fn print_operand(o: &OperandRef) -> String {
    print_value(&o.to_value())
}
