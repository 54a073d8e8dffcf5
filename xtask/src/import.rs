//! `cargo xtask import model.onnx`: ONNX to `model.sched` + weights.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};

pub fn import(onnx: &Path, out_dir: Option<&Path>, name: Option<&str>, shapes: &[String]) -> Result<()> {
    let mut opts = rlx_onnx::ImportOptions::new("weights.safetensors");
    opts.model_name = name.map(str::to_string);
    for s in shapes {
        opts.shapes.push(rlx_onnx::parse_shape_override(s).map_err(|e| anyhow!("--shape {s}: {e}"))?);
    }
    let imported = rlx_onnx::import(onnx, &opts).map_err(|e| anyhow!("{e}"))?;
    let dir: PathBuf = match out_dir {
        Some(d) => d.to_path_buf(),
        None => onnx.parent().unwrap_or(Path::new(".")).to_path_buf(),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let sched = dir.join("model.sched");
    let weights = dir.join(&opts.weights_file);
    std::fs::write(&weights, &imported.weights).with_context(|| format!("writing {}", weights.display()))?;
    std::fs::write(&sched, &imported.sched_text).with_context(|| format!("writing {}", sched.display()))?;
    println!("wrote {} and {}", sched.display(), weights.display());
    println!("{}", imported.report);
    Ok(())
}
