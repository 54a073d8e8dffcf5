//! Compiles every `sched/run/*.sched` case into the test crate: one module
//! of generated code per case plus a table of them, so a new case is a new
//! file and no code. The generated files live in OUT_DIR (never checked
//! in), so their weights are embedded by absolute path.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.parent().unwrap().to_path_buf();
    let run_dir = manifest.join("sched").join("run");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed={}", run_dir.display());

    let mut cases: Vec<PathBuf> = std::fs::read_dir(&run_dir)
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "sched")).collect())
        .unwrap_or_default();
    cases.sort();

    let mut table = String::from("pub static CASES: &[Case] = &[\n");
    let mut mods = String::new();
    for sched in &cases {
        println!("cargo:rerun-if-changed={}", sched.display());
        let stem = sched.file_stem().unwrap().to_string_lossy().replace(['-', '.'], "_");
        let module = format!("case_{stem}");
        let file = out_dir.join(format!("{module}.rs"));
        let code = match generate(sched, &root) {
            Ok(code) => code,
            Err(e) => panic!("run case {} does not generate:\n{e}", sched.display()),
        };
        std::fs::write(&file, code).unwrap();
        let _ = writeln!(
            mods,
            "#[allow(dead_code, unused_imports, clippy::all)]\npub mod {module} {{ include!({:?}); }}",
            file.display().to_string()
        );
        let _ = writeln!(
            table,
            "    Case {{ name: {:?}, sched: {:?}, run: |inputs| run_model::<{module}::Model>(inputs) }},",
            stem,
            sched.display().to_string()
        );
    }
    table.push_str("];\n");
    std::fs::write(out_dir.join("cases.rs"), format!("{mods}\n{table}")).unwrap();

    // The mlp model with its weights mapped from a side file (a threshold
    // of 0 forces the mmap path), for `tests/mmap.rs`.
    let mlp = root.join("models").join("mlp").join("model.sched");
    println!("cargo:rerun-if-changed={}", mlp.display());
    let out = out_dir.join("mmap_mlp.rs");
    let schedule = rlx_codegen::load_checked(&mlp, &root).unwrap_or_else(|e| panic!("{e}"));
    let opts = rlx_codegen::options_for_file_with(&schedule, &mlp, &root, &out, 0);
    std::fs::write(&out, rlx_codegen::generate(&schedule, &opts)).unwrap();
}

fn generate(sched: &Path, root: &Path) -> Result<String, String> {
    let schedule = rlx_codegen::load_checked(sched, root).map_err(|e| e.to_string())?;
    let opts = rlx_codegen::macro_options(&schedule, sched, root);
    Ok(rlx_codegen::generate(&schedule, &opts))
}
