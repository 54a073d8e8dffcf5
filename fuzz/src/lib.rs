//! AFL fuzz targets of the rlx front ends and input readers: one binary
//! per target in `src/bin/`, each a thin `afl::fuzz!` loop over
//! [`checks`]. Run them with `cargo xtask fuzz TARGET --time SECONDS`;
//! see `docs/fuzzing.md`.

pub mod checks;
pub mod seeds;

use std::sync::OnceLock;

/// The scratch directory of this fuzzer instance. Named after the parent
/// process: under AFL that is the fork server, which stays the same while
/// it forks fresh children, so every child reuses one directory.
pub fn workdir(target: &str) -> &'static checks::Workdir {
    static WORK: OnceLock<checks::Workdir> = OnceLock::new();
    WORK.get_or_init(|| {
        let work = checks::Workdir::new(&format!("rlx-fuzz-{target}-{}", std::os::unix::process::parent_id()));
        // Chat templates render in a child process running this binary
        // (the `tokenizer` target's `main` serves it).
        match std::env::current_exe() {
            Ok(program) => work.with_chat_renderer(program),
            Err(_) => work,
        }
    })
}
