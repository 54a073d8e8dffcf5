//! The emitter's own names never collide with a buffer's constant,
//! `names::RESERVED` lists every module-level name the emitter defines, and
//! no generated method shadows one of the `GeneratedModel` trait.

use std::collections::BTreeSet;
use std::path::Path;

use crate::names::RESERVED;
use crate::{generate, Options, WeightsSource};

/// A schedule with weights (the validator's fixture) whose input buffer is
/// called `name`.
fn schedule_with_input(name: &str) -> rlx_sched::Schedule {
    let text = format!(
        "rlx-sched 1\nmodel t\narena 128 align 64\n\
         weights \"validate_weights.safetensors\" sha256 \"4099a9ebe2e650d1272a3054e357291a14f4fe6756c0f59d723cfd39a6a2796f\"\n\
         mask_threshold 0.5\nmask_neg_inf -1000000000.0\nscore_skip 0.0\n\n\
         input   {name}: f32[8] @ arena+0\nparam   fc1.bias: f32[8] @ weights+128\noutput  y: f32[8] @ arena+64\n\n\
         BiasAdd {{ src: {name}, bias: fc1.bias, dst: y, rows: 1, cols: 8 }}\n"
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/sched/ok");
    rlx_sched::check_source(&text, &dir).unwrap_or_else(|d| panic!("{}", d.render("t.sched", &text))).schedule
}

/// The generated file with the weights embedded, and with them mapped (the
/// two layouts define different items).
fn both_layouts(s: &rlx_sched::Schedule) -> [String; 2] {
    let embed = WeightsSource::Embed { path: "weights.safetensors".to_string() };
    let mmap = WeightsSource::Mmap { file_name: "weights.safetensors".to_string() };
    [embed, mmap].map(|w| generate(s, &Options::new("t.sched").with_weights(Some(w))))
}

/// Module-level names: the value namespace (constants, statics, functions)
/// and the type namespace, each with its duplicates.
fn item_names(code: &str) -> (Vec<String>, Vec<String>) {
    let file: syn::File = syn::parse_str(code).expect("generated code parses");
    let (mut values, mut types) = (Vec::new(), Vec::new());
    for item in file.items {
        match item {
            syn::Item::Const(c) if c.ident != "_" => values.push(c.ident.to_string()),
            syn::Item::Static(s) => values.push(s.ident.to_string()),
            syn::Item::Fn(f) => values.push(f.sig.ident.to_string()),
            syn::Item::Struct(s) => types.push(s.ident.to_string()),
            _ => {}
        }
    }
    (values, types)
}

fn duplicates(names: &[String]) -> Vec<&String> {
    let mut seen = BTreeSet::new();
    names.iter().filter(|n| !seen.insert(*n)).collect()
}

#[test]
fn a_buffer_named_like_an_emitted_item_gets_its_own_constant() {
    for reserved in RESERVED {
        for name in [reserved.to_string(), reserved.to_lowercase()] {
            for code in both_layouts(&schedule_with_input(&name)) {
                let (values, types) = item_names(&code);
                assert!(duplicates(&values).is_empty(), "buffer `{name}`: {:?} defined twice", duplicates(&values));
                assert!(duplicates(&types).is_empty(), "buffer `{name}`: {:?} defined twice", duplicates(&types));
                assert!(code.contains(&format!("/// `{name}`: f32[8]")), "buffer `{name}` has no constant");
            }
        }
    }
}

#[test]
fn reserved_names_cover_every_emitted_item() {
    let buffer_consts = ["X", "FC1_BIAS", "Y"];
    for code in both_layouts(&schedule_with_input("x")) {
        let (values, types) = item_names(&code);
        for name in values.iter().chain(&types) {
            let run_part = name.strip_prefix("run_part_").is_some_and(|n| n.parse::<usize>().is_ok());
            assert!(
                buffer_consts.contains(&name.as_str()) || run_part || RESERVED.contains(&name.as_str()),
                "the emitter defines `{name}`: add it to names::RESERVED"
            );
        }
    }
}

/// Every `.sched` file whose code is generated: the run cases and the
/// bundled models.
fn generated_schedules() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut scheds: Vec<_> = std::fs::read_dir(root.join("tests/sched/run"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "sched"))
        .collect();
    scheds.extend(crate::project::model_schedules(&root));
    scheds.sort();
    scheds
}

/// The statement above each call is the thunk as the `.sched` file's
/// canonical form prints it, so a reviewer can find it in the file.
#[test]
fn thunk_comments_print_the_thunk_as_parsed() {
    for sched in generated_schedules() {
        let text = std::fs::read_to_string(&sched).unwrap();
        let ast = rlx_sched::parse(&text).unwrap();
        let schedule = rlx_sched::load(&sched).unwrap_or_else(|e| panic!("{}: {e}", sched.display())).schedule;
        assert_eq!(ast.thunks.len(), schedule.nodes().len(), "{}", sched.display());
        for (decl, node) in ast.thunks.iter().zip(schedule.nodes()) {
            assert_eq!(
                rlx_sched::print::print_resolved_thunk(&node.thunk, schedule.buffers()),
                rlx_sched::print::print_thunk(&decl.thunk),
                "{}:{}",
                sched.display(),
                node.line
            );
        }
    }
}

#[test]
fn wrapped_statements_keep_every_character_and_fit_where_they_can() {
    let width = 40;
    for sched in generated_schedules() {
        let schedule = rlx_sched::load(&sched).unwrap().schedule;
        for node in schedule.nodes() {
            let statement = rlx_sched::print::print_resolved_thunk(&node.thunk, schedule.buffers());
            let lines = super::parts::wrap_statement(&statement, width);
            let rejoined: Vec<&str> = lines.iter().map(|l| l.trim_start()).collect();
            assert_eq!(rejoined.join(" "), statement);
            for (i, line) in lines.iter().enumerate() {
                assert_eq!(line.starts_with("    "), i > 0, "{line}");
                // A longer line holds one item that has no break inside.
                assert!(line.len() <= width || !line.trim().trim_end_matches(',').contains(", "), "{line}");
            }
        }
    }
}

/// The method names of the `GeneratedModel` trait, read from its source.
fn trait_methods() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rlx-runtime/src/model.rs");
    let file: syn::File = syn::parse_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let methods = file.items.iter().find_map(|item| match item {
        syn::Item::Trait(t) if t.ident == "GeneratedModel" => Some(
            t.items
                .iter()
                .filter_map(|i| match i {
                    syn::TraitItem::Fn(f) => Some(f.sig.ident.to_string()),
                    _ => None,
                })
                .collect::<Vec<_>>(),
        ),
        _ => None,
    });
    methods.expect("model.rs defines the trait GeneratedModel")
}

/// The methods of `impl Model` (accessors and entry methods).
fn inherent_methods(code: &str) -> Vec<String> {
    let file: syn::File = syn::parse_str(code).expect("generated code parses");
    let mut out = Vec::new();
    for item in file.items {
        if let syn::Item::Impl(imp) = item {
            if imp.trait_.is_none() {
                out.extend(imp.items.iter().filter_map(|i| match i {
                    syn::ImplItem::Fn(f) => Some(f.sig.ident.to_string()),
                    _ => None,
                }));
            }
        }
    }
    out
}

/// The entry names the validator refuses are exactly those whose `run_NAME`
/// is a trait method: nothing missing when the trait grows, nothing stale.
#[test]
fn reserved_entry_names_are_the_trait_methods_run_names() {
    let mut from_trait: Vec<String> =
        trait_methods().iter().filter_map(|m| m.strip_prefix("run_")).map(str::to_string).collect();
    from_trait.sort();
    let mut reserved: Vec<String> = rlx_sched::validate::RESERVED_ENTRY_NAMES.iter().map(|n| n.to_string()).collect();
    reserved.sort();
    assert_eq!(reserved, from_trait, "rlx_sched::validate::RESERVED_ENTRY_NAMES");
    for name in reserved {
        let text = format!(
            "rlx-sched 1\nmodel t\narena 128 align 64\nmask_threshold 0.5\nmask_neg_inf -1000000000.0\n\
             score_skip 0.0\n\ninput x: f32[4] @ arena+0\noutput y: f32[4] @ arena+64\n\n\
             entry {name} {{ inputs: [x], outputs: [y] }}\nCopy {{ src: x, dst: y, len: 4 }}\n"
        );
        let Err(diags) = rlx_sched::check_source(&text, Path::new(".")) else { panic!("entry `{name}` is accepted") };
        let rendered = diags.render("t.sched", &text);
        assert!(rendered.contains(&format!("t.sched:11:7: error: entry `{name}` would generate")), "{rendered}");
    }
}

/// No generated model's own method (accessor or entry method) has the
/// name of a trait method, and no module-level name is defined twice, for
/// every run case (`bias_add_keyword_names` has every keyword and every such
/// name as a buffer and entry name) and bundled model.
#[test]
fn generated_names_never_collide() {
    let trait_methods = trait_methods();
    for sched in generated_schedules() {
        let schedule = rlx_sched::load(&sched).unwrap_or_else(|e| panic!("{}: {e}", sched.display())).schedule;
        let code = generate(&schedule, &Options::new("t.sched"));
        let methods = inherent_methods(&code);
        for m in &methods {
            assert!(!trait_methods.contains(m), "{}: `Model::{m}` shadows the trait's", sched.display());
        }
        assert!(duplicates(&methods).is_empty(), "{}: {:?}", sched.display(), duplicates(&methods));
        let (values, types) = item_names(&code);
        assert!(duplicates(&values).is_empty(), "{}: {:?}", sched.display(), duplicates(&values));
        assert!(duplicates(&types).is_empty(), "{}: {:?}", sched.display(), duplicates(&types));
    }
}
