//! `cargo xtask gen` and `cargo xtask check`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rlx_codegen::project;

/// Generates code for each schedule (or every bundled model with `all`),
/// writing only files whose bytes change.
pub fn gen(root: &Path, scheds: &[PathBuf], all: bool, out: Option<&Path>, policy: rlx_sched::Policy) -> Result<()> {
    let mut targets: Vec<PathBuf> = scheds.iter().map(|p| absolute(p)).collect();
    if all {
        targets.extend(project::model_schedules(root));
    }
    if targets.is_empty() {
        bail!("nothing to generate: give a .sched path or --all");
    }
    if out.is_some() && targets.len() > 1 {
        bail!("-o/--out takes one .sched file");
    }
    for sched in &targets {
        let out_path = match out {
            Some(o) => absolute(o),
            None => project::default_output(sched).with_context(|| {
                format!("{} is not in a crate directory; say where to write with -o", sched.display())
            })?,
        };
        let text = project::generate_file_with(sched, root, &out_path, policy).map_err(render)?;
        let shown = rlx_codegen::display_path(&out_path, root);
        if rlx_codegen::write_if_changed(&out_path, &text)? {
            println!("wrote {shown}");
        } else {
            println!("{shown} is up to date");
        }
    }
    Ok(())
}

/// Fails, naming the command to run, when a checked-in generated file is
/// stale.
pub fn check(root: &Path) -> Result<()> {
    let stale = project::stale_models(root).map_err(render)?;
    if stale.is_empty() {
        println!("all generated files are fresh");
        return Ok(());
    }
    let list: Vec<String> = stale
        .iter()
        .map(|s| {
            format!(
                "  {} (from {})",
                rlx_codegen::display_path(&s.generated, root),
                rlx_codegen::display_path(&s.sched, root)
            )
        })
        .collect();
    bail!("generated files are stale:\n{}\nrun `cargo xtask gen --all`", list.join("\n"))
}

fn render(e: rlx_codegen::GenError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}
