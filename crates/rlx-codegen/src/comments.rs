//! Per-thunk comments survive formatting as marker statements.
//!
//! prettyplease drops `//` comments, so the emitter writes
//! `__rlx_comment!("text");` before each thunk's call and this pass turns
//! every such line into `// text`. It is the only string rewrite of the
//! generated code.

use proc_macro2::TokenStream;
use quote::quote;

const MARKER: &str = "__rlx_comment!(\"";

/// A marker (a statement, or an item at module level) that becomes
/// `// text` after formatting, or a blank line when `text` is empty. `text`
/// must not contain `"` or `\` (the emitter passes only kind names,
/// indices, paths and fixed sentences).
pub fn marker(text: &str) -> TokenStream {
    debug_assert!(!text.contains(['"', '\\', '\n']), "marker text must be plain: {text}");
    quote! { __rlx_comment!(#text); }
}

/// Replaces every formatted marker line with a `//` comment at the same
/// indentation.
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
            None => out.push_str(line),
        }
        i += if text.is_some() { used } else { 1 };
    }
    out
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
    fn marker_round_trips_through_prettyplease() {
        let m = marker("#12 Sgemm  models/mlp/model.sched:40");
        let file: syn::File = syn::parse2(quote! { fn f() { #m g(); } }).unwrap();
        let text = rewrite_markers(&prettyplease::unparse(&file));
        assert!(text.contains("    // #12 Sgemm  models/mlp/model.sched:40\n"), "{text}");
    }
}
