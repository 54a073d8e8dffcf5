//! The op table of `docs/onnx.md` (between its `supported-ops` marker
//! comments) names exactly the ops of `rlx_onnx::SUPPORTED_OPS`, which the
//! dispatcher's table produces; a count of them in the README is right.

use std::collections::BTreeSet;
use std::path::Path;

const BEGIN: &str = "<!-- supported-ops:begin -->";
const END: &str = "<!-- supported-ops:end -->";

fn read(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The default-domain ops the table's first column names in backticks (a
/// `domain:Op` of another domain is not one).
fn documented_ops(doc: &str) -> BTreeSet<String> {
    let start = doc.find(BEGIN).unwrap_or_else(|| panic!("docs/onnx.md has no `{BEGIN}` marker"));
    let end = doc.find(END).unwrap_or_else(|| panic!("docs/onnx.md has no `{END}` marker"));
    assert!(start < end, "docs/onnx.md: `{END}` comes before `{BEGIN}`");
    let mut ops = BTreeSet::new();
    for row in doc[start + BEGIN.len()..end].lines().filter(|l| l.starts_with('|')) {
        let first = row.split('|').nth(1).unwrap_or_default();
        for (k, part) in first.split('`').enumerate() {
            // Odd parts lie between backticks.
            if k % 2 == 1 && !part.contains(':') && part.chars().all(|c| c.is_ascii_alphanumeric()) {
                ops.insert(part.to_string());
            }
        }
    }
    ops
}

#[test]
fn the_docs_list_every_supported_op_and_no_other() {
    let documented = documented_ops(&read("docs/onnx.md"));
    let supported: BTreeSet<String> = rlx_onnx::SUPPORTED_OPS.iter().map(|s| s.to_string()).collect();
    let missing: Vec<&String> = supported.difference(&documented).collect();
    let extra: Vec<&String> = documented.difference(&supported).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/onnx.md's op table disagrees with SUPPORTED_OPS (the dispatch table in src/lower/dispatch.rs):\n  \
         supported but not documented: {missing:?}\n  documented but not supported: {extra:?}"
    );
}

#[test]
fn a_count_of_the_supported_ops_in_the_readme_is_right() {
    let n = rlx_onnx::SUPPORTED_OPS.len();
    for line in read("README.md").lines() {
        for (before, _) in line.match_indices("supported ops").map(|(k, m)| (&line[..k], m)) {
            if let Some(Ok(count)) = before.split_whitespace().last().map(str::parse::<usize>) {
                assert_eq!(count, n, "README.md says {count} supported ops (`{line}`); there are {n}");
            }
        }
    }
}

#[test]
fn the_doc_parser_reads_the_first_column_only() {
    let doc = format!(
        "intro `Relu`\n{BEGIN}\n| ONNX op | lowering |\n|---|---|\n| `Add` `Sub` of two inputs | like `Mul` |\n\
         | `ai.onnx.preview:FlexAttention` | x |\n| `Attention` (opset 23) | y |\n{END}\n`Conv`"
    );
    let ops: Vec<String> = documented_ops(&doc).into_iter().collect();
    assert_eq!(ops, ["Add", "Attention", "Sub"]);
}
