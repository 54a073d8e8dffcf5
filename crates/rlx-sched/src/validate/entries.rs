//! Entry points: `entry` lines split the thunks into runs that the
//! generated model exposes as separate methods over one arena, one set of
//! weights and one set of `state` buffers (a decoder's prefill and decode
//! steps). Each entry names the inputs the caller writes before it and the
//! outputs it writes; a thunk may touch no other entry's inputs or outputs.
//! The dataflow pass then checks each entry on its own.

use std::collections::BTreeMap;

use super::messages;
use super::table::Table;
use crate::ast::{Ast, EntryDecl, Spanned, Target};
use crate::diag::Diagnostic;
use crate::schedule::{Entry, Role};

/// An entry name becomes part of a method name (`run_NAME`): lower-case
/// ASCII letters, digits and `_`, not starting with a digit.
fn is_entry_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Entry names whose method `run_NAME` the `GeneratedModel` trait of
/// `rlx-runtime` defines (`run_entry(index)`): the generated inherent
/// method would shadow it. Refused rather than renamed, because an entry
/// name is also what callers look entries up by (`--entry NAME`,
/// `ModelInfo::entry`); `tests/tests/codegen.rs` checks the list against
/// the trait.
pub const RESERVED_ENTRY_NAMES: &[&str] = &["entry"];

/// Checks the `entry` lines and returns the entries (one implicit entry
/// over every thunk when there are none).
pub(crate) fn check(ast: &Ast, table: &Table, diags: &mut Vec<Diagnostic>) -> Vec<Entry> {
    let buffers_with = |role: Role| (0..ast.buffers.len()).filter(move |&i| ast.buffers[i].role == role);
    if ast.entries.is_empty() {
        return vec![Entry {
            name: None,
            inputs: buffers_with(Role::Input).collect(),
            outputs: buffers_with(Role::Output).collect(),
            nodes: 0..ast.thunks.len(),
            line: 0,
        }];
    }
    let mut first_line: BTreeMap<&str, u32> = BTreeMap::new();
    let mut entries = Vec::with_capacity(ast.entries.len());
    for (k, decl) in ast.entries.iter().enumerate() {
        let name = &decl.name.value;
        if !is_entry_name(name) {
            diags.push(
                Diagnostic::error(decl.name.span, messages::bad_entry_name(name)).with_hint(messages::ENTRY_NAME_HINT),
            );
        } else if RESERVED_ENTRY_NAMES.contains(&name.as_str()) {
            diags.push(
                Diagnostic::error(decl.name.span, messages::reserved_entry_name(name))
                    .with_hint(messages::RESERVED_ENTRY_NAME_HINT),
            );
        }
        if let Some(&line) = first_line.get(name.as_str()) {
            diags.push(
                Diagnostic::error(decl.name.span, messages::duplicate_entry(name))
                    .with_label(messages::first_declared(line)),
            );
        } else {
            first_line.insert(name, decl.line);
        }
        let end = ast.entries.get(k + 1).map_or(ast.thunks.len(), |next| next.first_thunk);
        entries.push(Entry {
            name: Some(name.clone()),
            inputs: resolve(decl, &decl.inputs, Role::Input, table, ast, diags),
            outputs: resolve(decl, &decl.outputs, Role::Output, table, ast, diags),
            nodes: decl.first_thunk..end,
            line: decl.line,
        });
    }
    // Every input and output belongs to some entry: one nobody lists would
    // be written by no caller, or read by no caller.
    for role in [Role::Input, Role::Output] {
        for i in buffers_with(role) {
            let listed = entries.iter().any(|e| {
                let list = if role == Role::Input { &e.inputs } else { &e.outputs };
                list.contains(&i)
            });
            if !listed {
                let b = &ast.buffers[i];
                diags.push(
                    Diagnostic::error(b.name.span, messages::in_no_entry(role.name(), &b.name.value))
                        .with_hint(messages::in_no_entry_hint(role.name())),
                );
            }
        }
    }
    for (decl, entry) in ast.entries.iter().zip(&entries) {
        check_operands(ast, table, decl, entry, diags);
    }
    entries
}

/// The buffer indices of an entry's `inputs` or `outputs` list.
fn resolve(
    entry: &EntryDecl,
    names: &[Spanned<String>],
    role: Role,
    table: &Table,
    ast: &Ast,
    diags: &mut Vec<Diagnostic>,
) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::with_capacity(names.len());
    for n in names {
        let Some(i) = table.lookup(&n.value) else {
            let d = Diagnostic::error(n.span, messages::unknown_buffer(&n.value));
            diags.push(match table.closest_name(&n.value) {
                Some(c) => d.with_hint(messages::did_you_mean(c)),
                None => d,
            });
            continue;
        };
        let found = ast.buffers[i].role;
        if found != role {
            diags.push(Diagnostic::error(n.span, messages::entry_wrong_role(&n.value, found.name(), role.name())));
        } else if out.contains(&i) {
            diags.push(Diagnostic::error(n.span, messages::listed_twice(&n.value, &entry.name.value)));
        } else {
            out.push(i);
        }
    }
    out
}

/// A thunk names only its own entry's inputs and outputs.
fn check_operands(ast: &Ast, table: &Table, decl: &EntryDecl, entry: &Entry, diags: &mut Vec<Diagnostic>) {
    for t in &ast.thunks[entry.nodes.clone()] {
        for (_, operand) in t.thunk.operands() {
            let Target::Buffer { name, .. } = &operand.target else { continue };
            let Some(i) = table.lookup(name) else { continue };
            let (role, listed) = match ast.buffers[i].role {
                Role::Input => (Role::Input, entry.inputs.contains(&i)),
                Role::Output => (Role::Output, entry.outputs.contains(&i)),
                _ => continue,
            };
            if !listed {
                diags.push(
                    Diagnostic::error(operand.span, messages::not_in_entry(role.name(), name, &decl.name.value))
                        .with_hint(messages::not_in_entry_hint(role.name(), &decl.name.value, decl.line)),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_entry_name;

    #[test]
    fn entry_names_are_method_suffixes() {
        for ok in ["prefill", "decode", "step_2", "_x"] {
            assert!(is_entry_name(ok), "{ok}");
        }
        for bad in ["", "2step", "Prefill", "pre.fill", "pre-fill", "é"] {
            assert!(!is_entry_name(bad), "{bad}");
        }
    }
}
