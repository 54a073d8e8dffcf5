//! Kind aliases: a schedule written with the older spellings parses to the
//! same thunks as its canonical form, and prints as that form.

use std::path::Path;

use rlx_sched::{aliases, parse, print};

fn read(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/sched/aliases").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

#[test]
fn aliased_schedule_is_the_canonical_one() {
    // Both validate: the fixture is a real schedule, not only a syntax sample.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/sched/aliases");
    for name in ["written.sched", "canonical.sched"] {
        rlx_sched::load(&dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let (aliased, canonical) = (read("written.sched"), read("canonical.sched"));
    let (a, c) = (parse(&aliased).expect("aliases parse"), parse(&canonical).expect("canonical parses"));
    let kinds = |ast: &rlx_sched::Ast| ast.thunks.iter().map(|t| t.thunk.kind()).collect::<Vec<_>>();
    assert_eq!(kinds(&a), kinds(&c));
    // The printed forms differ only in the header comment and the model name.
    let body = |text: &str| text.lines().skip_while(|l| !l.starts_with("input")).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&print(&a)), body(&canonical));
}

#[test]
fn the_fixture_uses_every_alias() {
    let aliased = read("written.sched");
    for a in aliases::all() {
        assert!(aliased.lines().any(|l| l.starts_with(&format!("{} {{", a.name))), "{} is not used", a.name);
    }
}

#[test]
fn an_alias_reports_its_own_fields() {
    let text = "rlx-sched 1\nmodel m\narena 64 align 64\n\ninput x: f32[4] @ arena+0\noutput y: i64[4] @ arena+32\n\n\
                CastF32ToI64 { src: x, dst: y, len: 4, to: i32 }\n";
    let errs = parse(text).expect_err("`to` is fixed by the alias");
    let shown = errs.render("m.sched", text);
    assert!(shown.contains("unknown field `to` in CastF32ToI64"), "{shown}");
    assert!(shown.contains("expected one of src, dst, len"), "{shown}");
}
