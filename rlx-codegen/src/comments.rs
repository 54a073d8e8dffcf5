//! Per-thunk comments survive formatting as marker statements.
//!
//! prettyplease drops `//` comments, so the emitter writes
//! `__rlx_comment!("text");` before each thunk's call and this pass turns
//! every such line into `// text`. It is the only string rewrite of the
//! generated code.

use proc_macro2::TokenStream;
use quote::quote;

const MARKER: &str = "__rlx_comment!(\"";

/// A marker statement that becomes `// text` after formatting. `text` must
/// not contain `"` or `\` (the emitter only passes kind names, indices and
/// paths).
pub fn marker(text: &str) -> TokenStream {
    debug_assert!(!text.contains(['"', '\\', '\n']), "marker text must be plain: {text}");
    quote! { __rlx_comment!(#text); }
}

/// Replaces every formatted marker line with a `//` comment at the same
/// indentation.
pub fn rewrite_markers(formatted: &str) -> String {
    let mut out = String::with_capacity(formatted.len());
    for line in formatted.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let body = trimmed.trim_end();
        match body.strip_prefix(MARKER).and_then(|rest| rest.strip_suffix("\");")) {
            Some(text) => {
                out.push_str(indent);
                out.push_str("// ");
                out.push_str(text);
                out.push('\n');
            }
            None => out.push_str(line),
        }
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
