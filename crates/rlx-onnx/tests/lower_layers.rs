//! The layers of `src/lower/`: an op family (a module of `src/lower/ops/`)
//! never reaches into another family. What families share lives in the
//! builders (`lower/build/`) or the pure arithmetic (`lower/arith/`), and an
//! op composed of other ops lowers them through the dispatcher
//! (`Lowerer::lower_part`). This test reads the sources, resolves every
//! `crate::`, `super::` and `self::` path of a family module (use groups and
//! inline `mod` blocks included) and fails on one that lands in another
//! family, or on the `ops` module itself, naming the file and line.

use std::path::{Path, PathBuf};

/// A path found in a source file: the line it starts on and its segments
/// resolved from the crate root (`["lower", "ops", "window", ...]`).
#[derive(Debug)]
struct FoundPath {
    line: usize,
    resolved: Vec<String>,
}

#[derive(Debug, PartialEq)]
enum Tok {
    Ident(String),
    Colons,
    Open,
    Close,
    Comma,
    Star,
    Other,
}

/// The tokens of `src` with their lines; comments, strings and chars
/// dropped.
fn tokens(src: &str) -> Vec<(usize, Tok)> {
    let b = src.as_bytes();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    line += usize::from(b[i] == b'\n');
                    i += 1;
                }
                i += 2;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    line += usize::from(b[i] == b'\n');
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            // A char literal ('x', '\n'); a lifetime ('a) is skipped as
            // its quote alone.
            b'\'' if b.get(i + 2) == Some(&b'\'') => i += 3,
            b'\'' if b.get(i + 1) == Some(&b'\\') => {
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            }
            b':' if b.get(i + 1) == Some(&b':') => {
                out.push((line, Tok::Colons));
                i += 2;
            }
            b'{' => {
                out.push((line, Tok::Open));
                i += 1;
            }
            b'}' => {
                out.push((line, Tok::Close));
                i += 1;
            }
            b',' => {
                out.push((line, Tok::Comma));
                i += 1;
            }
            b'*' => {
                out.push((line, Tok::Star));
                i += 1;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                out.push((line, Tok::Ident(src[start..i].to_string())));
            }
            _ => {
                if !c.is_ascii_whitespace() {
                    out.push((line, Tok::Other));
                }
                i += 1;
            }
        }
    }
    out
}

/// Every path of `src` that starts with `crate`, `super` or `self`,
/// resolved from `module` (the file's module path from the crate root) and
/// the inline `mod` blocks around it; a use group gives one path per item.
fn paths(src: &str, module: &[String]) -> Vec<FoundPath> {
    let toks = tokens(src);
    let mut found = Vec::new();
    // The inline modules open around the current token, with the brace
    // depth each one closes at.
    let mut inline: Vec<(usize, String)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].1 {
            Tok::Open => depth += 1,
            Tok::Close => {
                depth -= 1;
                if inline.last().is_some_and(|(d, _)| *d == depth) {
                    inline.pop();
                }
            }
            Tok::Ident(kw) if kw == "mod" => {
                if let (Some((_, Tok::Ident(name))), Some((_, Tok::Open))) = (toks.get(i + 1), toks.get(i + 2)) {
                    inline.push((depth, name.clone()));
                }
            }
            Tok::Ident(head) if matches!(head.as_str(), "crate" | "super" | "self") => {
                // Not the tail of a longer path (`a::super` cannot occur).
                if i > 0 && toks[i - 1].1 == Tok::Colons {
                    i += 1;
                    continue;
                }
                let mut here: Vec<String> = module.to_vec();
                here.extend(inline.iter().map(|(_, n)| n.clone()));
                let line = toks[i].0;
                i = walk(&toks, i, Vec::new(), &here, line, &mut found);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// Reads the path starting at token `i` after `prefix` (the segments read
/// before a group), pushes the resolved paths it names, and returns the
/// index of the first token after it.
fn walk(
    toks: &[(usize, Tok)],
    mut i: usize,
    mut prefix: Vec<String>,
    here: &[String],
    line: usize,
    found: &mut Vec<FoundPath>,
) -> usize {
    loop {
        match toks.get(i).map(|t| &t.1) {
            Some(Tok::Ident(s)) => {
                prefix.push(s.clone());
                i += 1;
            }
            Some(Tok::Star) => {
                prefix.push("*".to_string());
                i += 1;
            }
            Some(Tok::Open) => {
                // A use group: each item is a path of its own after `prefix`.
                i += 1;
                loop {
                    match toks.get(i).map(|t| &t.1) {
                        Some(Tok::Close) => return i + 1,
                        Some(Tok::Comma) => i += 1,
                        Some(_) => i = walk(toks, i, prefix.clone(), here, toks[i].0, found),
                        None => return i,
                    }
                }
            }
            _ => break,
        }
        if toks.get(i).map(|t| &t.1) == Some(&Tok::Colons) {
            i += 1;
        } else {
            break;
        }
    }
    // `as` renames keep the path; anything after it is no segment.
    found.push(FoundPath { line, resolved: resolve(here, &prefix) });
    i
}

/// `segments` (starting with `crate`, `super` or `self`, or relative to a
/// group's prefix that did) resolved from module `here`.
fn resolve(here: &[String], segments: &[String]) -> Vec<String> {
    let mut at: Vec<String> = here.to_vec();
    let mut rest = segments;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            at.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        _ => {}
    }
    while rest.first().map(String::as_str) == Some("super") {
        at.pop();
        rest = &rest[1..];
    }
    at.extend(rest.iter().cloned());
    at
}

/// The family modules under `src/lower/ops`: name and source files (a
/// folder family's every file).
fn families(ops: &Path) -> Vec<(String, Vec<PathBuf>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(ops).expect("src/lower/ops is readable") {
        let path = entry.expect("a directory entry").path();
        let name = path.file_stem().expect("a file name").to_string_lossy().into_owned();
        if path.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&path)
                .expect("a family folder is readable")
                .map(|e| e.expect("a directory entry").path())
                .filter(|p| p.extension().is_some_and(|e| e == "rs"))
                .collect();
            files.sort();
            out.push((name, files));
        } else if path.extension().is_some_and(|e| e == "rs") && name != "mod" {
            out.push((name, vec![path]));
        }
    }
    out.sort();
    out
}

/// The module path of a source file under `src/`.
fn module_of(src_root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src_root).expect("a file under src/");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// The offending paths of family `family`'s `src` (module `module`): each
/// as `line: path`.
fn offences(src: &str, module: &[String], family: &str, names: &[String]) -> Vec<(usize, String)> {
    paths(src, module)
        .into_iter()
        .filter(|p| match p.resolved.as_slice() {
            [lower, ops] => lower == "lower" && ops == "ops",
            [lower, ops, other, ..] => {
                lower == "lower" && ops == "ops" && other != family && (other == "*" || names.contains(other))
            }
            _ => false,
        })
        .map(|p| (p.line, p.resolved.join("::")))
        .collect()
}

#[test]
fn no_family_module_imports_another() {
    let src_root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let fams = families(&src_root.join("lower/ops"));
    assert!(fams.len() > 10, "expected the op families under src/lower/ops, found {}", fams.len());
    let names: Vec<String> = fams.iter().map(|(n, _)| n.clone()).collect();
    let mut bad = Vec::new();
    for (family, files) in &fams {
        for file in files {
            let src = std::fs::read_to_string(file).expect("a readable source file");
            for (line, path) in offences(&src, &module_of(&src_root, file), family, &names) {
                let rel = file.strip_prefix(src_root.parent().expect("the crate dir")).unwrap_or(file);
                bad.push(format!("{}:{line}: `{path}` reaches from family `{family}` into another", rel.display()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "op families import each other (share through lower/build or lower/arith, or lower a part through \
         the dispatcher with `Lowerer::lower_part`):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_checker_sees_every_form_of_reaching_across() {
    let names: Vec<String> = ["window", "conv_nd", "elementwise"].map(String::from).to_vec();
    let module: Vec<String> = ["lower", "ops", "conv_nd"].map(String::from).to_vec();
    let src = "use super::window::pads;\n\
               use super::{window, Lowerer};\n\
               use crate::lower::ops::elementwise::{a, b};\n\
               use crate::lower::{build::R, ops::window::Axis};\n\
               fn f() { super::super::ops::window::conv(); }\n\
               use super::*;\n\
               use crate::lower::ops;\n\
               // use super::window::in_a_comment;\n\
               const S: &str = \"super::window\";\n\
               use super::conv_nd::own;\n\
               use crate::lower::build::window::pads;\n\
               #[cfg(test)]\nmod tests {\n    use super::*;\n}\n";
    let lines: Vec<usize> = offences(src, &module, "conv_nd", &names).into_iter().map(|(l, _)| l).collect();
    assert_eq!(lines, [1, 2, 3, 3, 4, 5, 6, 7]);
    // A folder family's files reach their own family through `super`.
    let inner: Vec<String> = ["lower", "ops", "elementwise", "bitwise"].map(String::from).to_vec();
    assert!(offences("use super::arithmetic;", &inner, "elementwise", &names).is_empty());
    assert_eq!(offences("use super::super::window::x;", &inner, "elementwise", &names).len(), 1);
}
