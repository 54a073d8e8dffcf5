//! `cargo xtask`: the project's developer commands. Thin: every verb calls
//! library code.

fn main() -> anyhow::Result<()> {
    Ok(())
}
