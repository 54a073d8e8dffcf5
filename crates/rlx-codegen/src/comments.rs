//! Comments survive formatting as markers.
//!
//! prettyplease drops `//` comments, so the emitter writes
//! `__rlx_comment!("text");` statements (a thunk's `.sched` line above its
//! call, section titles) and `__rlx_arg!(name = value)` arguments (a bare
//! scalar argument with its parameter's name), and this pass turns the
//! first into `// text` lines and the second into `value, // name`. It is
//! the only string rewrite of the generated code.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

const MARKER: &str = "__rlx_comment!(\"";
const ARG: &str = "__rlx_arg!(";

/// A marker (a statement, or an item at module level) that becomes
/// `// text` after formatting, or a blank line when `text` is empty. `text`
/// must not contain `"` or `\` (the emitter passes only kind names,
/// indices, paths and fixed sentences).
pub fn marker(text: &str) -> TokenStream {
    debug_assert!(!text.contains(['"', '\\', '\n']), "marker text must be plain: {text}");
    quote! { __rlx_comment!(#text); }
}

/// An argument marker: `value` as the call's argument, named `name` after
/// formatting. `value` must be a scalar literal or path (no parentheses),
/// as the bare `usize`, `bool` and `f32` arguments are.
pub fn arg_marker(name: &str, value: TokenStream) -> TokenStream {
    let name = format_ident!("{name}");
    quote! { __rlx_arg!(#name = #value) }
}

/// Replaces every formatted marker line with a `//` comment at the same
/// indentation, and every argument marker with its value and name.
pub fn rewrite_markers(formatted: &str) -> String {
    let lines: Vec<&str> = formatted.split_inclusive('\n').collect();
    let mut out = String::with_capacity(formatted.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let body = trimmed.trim_end();
        // prettyplease keeps a short marker on one line and wraps a long one
        // as `__rlx_comment!(` / `"text"` / `);`.
        let (text, used) = match body.strip_prefix(MARKER).and_then(|rest| rest.strip_suffix("\");")) {
            Some(text) => (Some(text), 1),
            None if body == "__rlx_comment!(" && i + 2 < lines.len() && lines[i + 2].trim() == ");" => {
                let lit = lines[i + 1].trim();
                (lit.strip_prefix('"').and_then(|l| l.strip_suffix('"')), 3)
            }
            None => (None, 1),
        };
        match text {
            // An empty marker is a blank line, to separate items and thunks.
            Some("") => out.push('\n'),
            Some(text) => {
                out.push_str(indent);
                out.push_str("// ");
                out.push_str(text);
                out.push('\n');
            }
            None => out.push_str(&rewrite_args(line)),
        }
        i += if text.is_some() { used } else { 1 };
    }
    out
}

/// An argument on its own line, `__rlx_arg!(name = value),`, becomes
/// `value, // name`. A call short enough to stay on one line keeps its
/// arguments inline, each as `value /* name */`.
fn rewrite_args(line: &str) -> String {
    let trimmed = line.trim_start();
    let indent = &line[..line.len() - trimmed.len()];
    let own_line = trimmed.trim_end().strip_prefix(ARG).and_then(|rest| rest.strip_suffix("),"));
    if let Some((name, value)) = own_line.and_then(split_arg) {
        return format!("{indent}{value}, // {name}\n");
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find(ARG) {
        let inner = &rest[at + ARG.len()..];
        let Some((arg, after)) = inner.find(')').map(|close| (&inner[..close], &inner[close + 1..])) else { break };
        let Some((name, value)) = split_arg(arg) else { break };
        out.push_str(&rest[..at]);
        out.push_str(&format!("{value} /* {name} */"));
        rest = after;
    }
    out.push_str(rest);
    out
}

/// `name = value` → (`name`, `value`). A negative literal prints as two
/// tokens inside a macro (`- 1f32`); it gets back its usual form.
fn split_arg(arg: &str) -> Option<(&str, String)> {
    let (name, value) = arg.split_once(" = ")?;
    let plain = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let value = value.strip_prefix("- ").map_or_else(|| value.to_string(), |v| format!("-{v}"));
    (plain && !value.contains(['(', ')'])).then_some((name, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_become_comments_at_their_indentation() {
        let src = "fn f() {\n    __rlx_comment!(\"#0 Sgemm  m.sched:3\");\n    g();\n}\n";
        assert_eq!(rewrite_markers(src), "fn f() {\n    // #0 Sgemm  m.sched:3\n    g();\n}\n");
    }

    #[test]
    fn wrapped_markers_become_comments() {
        let src = "    __rlx_comment!(\n        \"a long text\"\n    );\n    g();\n";
        assert_eq!(rewrite_markers(src), "    // a long text\n    g();\n");
    }

    #[test]
    fn empty_markers_become_blank_lines() {
        let src = "const A: u8 = 1;\n__rlx_comment!(\"\");\nconst B: u8 = 2;\n";
        assert_eq!(rewrite_markers(src), "const A: u8 = 1;\n\nconst B: u8 = 2;\n");
    }

    #[test]
    fn other_lines_are_untouched() {
        let src = "let s = \"__rlx_comment!(\\\"x\\\");\";\nfoo!(\"a\");\n";
        assert_eq!(rewrite_markers(src), src);
    }

    #[test]
    fn argument_markers_name_their_value() {
        let src = "    f(\n        a,\n        __rlx_arg!(m = 16),\n        __rlx_arg!(par = false),\n    );\n";
        assert_eq!(rewrite_markers(src), "    f(\n        a,\n        16, // m\n        false, // par\n    );\n");
        assert_eq!(rewrite_markers("g(__rlx_arg!(n = 8), x);\n"), "g(8 /* n */, x);\n");
    }

    #[test]
    fn argument_markers_round_trip_through_prettyplease() {
        let long = quote!(::rlx_runtime::kernels::some_family::some_long_kernel_name_f32);
        let args = [
            arg_marker("m", quote!(16)),
            arg_marker("x", quote!(-1000000000f32)),
            arg_marker("y", quote!(f32::NEG_INFINITY)),
            arg_marker("par", quote!(false)),
        ];
        let file: syn::File =
            syn::parse2(quote! { fn f() { #long(a.add(OFFSET).cast::<f32>(), #(#args),*); } }).unwrap();
        let text = rewrite_markers(&prettyplease::unparse(&file));
        for line in ["16, // m", "-1000000000f32, // x", "f32::NEG_INFINITY, // y", "false, // par"] {
            assert!(text.contains(&format!("        {line}\n")), "{text}");
        }
        assert!(!text.contains("__rlx"), "{text}");
    }

    #[test]
    fn marker_round_trips_through_prettyplease() {
        let m = marker("#12 Sgemm  models/mlp/model.sched:40");
        let file: syn::File = syn::parse2(quote! { fn f() { #m g(); } }).unwrap();
        let text = rewrite_markers(&prettyplease::unparse(&file));
        assert!(text.contains("    // #12 Sgemm  models/mlp/model.sched:40\n"), "{text}");
    }
}
