//! The SIMD level the kernels run at, and whether the compiler or the
//! loader chose it.
//!
//! Every kernel family picks its variant with `is_x86_feature_detected!` /
//! `is_aarch64_feature_detected!`, which std expands to
//! `cfg!(target_feature = "...") || <CPUID probe, cached>`. A binary built
//! with `-C target-cpu=CPU` (`cargo xtask build NAME --static --target-cpu
//! native`) whose CPU has a level's features therefore has the constant
//! `true` there: the compiler makes the choice and drops the probe and the
//! other branches. Built for the generic target, the probe runs once, at
//! the first call of each family.

use std::fmt;

/// A family of SIMD kernels, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// x86-64 AVX-512F (and AVX2 + FMA for the kernels that stop there).
    Avx512,
    /// x86-64 AVX2 + FMA.
    Avx2,
    /// aarch64 NEON.
    Neon,
    /// The scalar references.
    Scalar,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Avx512 => "avx512",
            Level::Avx2 => "avx2+fma",
            Level::Neon => "neon",
            Level::Scalar => "scalar",
        })
    }
}

/// The best level the build's target features guarantee: chosen by the
/// compiler, no probe.
pub const fn compiled() -> Level {
    if cfg!(all(target_arch = "x86_64", target_feature = "avx512f", target_feature = "avx2", target_feature = "fma")) {
        Level::Avx512
    } else if cfg!(all(target_arch = "x86_64", target_feature = "avx2", target_feature = "fma")) {
        Level::Avx2
    } else if cfg!(all(target_arch = "aarch64", target_feature = "neon")) {
        Level::Neon
    } else {
        Level::Scalar
    }
}

/// The cap `RLX_ISA` puts on the kernels' level, read once: `avx2` (no
/// AVX-512, no AVX-VNNI) or `scalar` (the portable code only); unset,
/// empty or `native`, none. Another value is ignored with one warning on
/// stderr, at the first kernel call. OpenBLAS is capped as well, through
/// its own `OPENBLAS_CORETYPE` (`docs/blas.md`).
pub fn cap() -> Option<Level> {
    static CAP: std::sync::OnceLock<Option<Level>> = std::sync::OnceLock::new();
    *CAP.get_or_init(|| {
        let value = std::env::var("RLX_ISA").unwrap_or_default();
        parse_cap(&value).unwrap_or_else(|()| {
            eprintln!("warning: RLX_ISA=`{value}` is not avx2, scalar or native; ignored");
            None
        })
    })
}

/// An `RLX_ISA` value as a cap; `Err` for an unknown one.
fn parse_cap(value: &str) -> Result<Option<Level>, ()> {
    match value {
        "" | "native" => Ok(None),
        "avx2" => Ok(Some(Level::Avx2)),
        "scalar" => Ok(Some(Level::Scalar)),
        _ => Err(()),
    }
}

/// The level the kernels run at on this CPU: never below [`compiled`],
/// unless `RLX_ISA` caps it ([`cap`]).
pub fn running() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::kernels::variants::cpu;
        if cpu::avx2_fma() {
            return if cpu::avx512f() { Level::Avx512 } else { Level::Avx2 };
        }
        if cap().is_some() {
            return Level::Scalar;
        }
    }
    #[cfg(target_arch = "aarch64")]
    if std::arch::is_aarch64_feature_detected!("neon") {
        return Level::Neon;
    }
    Level::Scalar
}

/// One line for `--info`: the level and who chose it.
pub fn describe() -> String {
    let (run, built) = (running(), compiled());
    if cfg!(not(any(target_arch = "x86_64", target_arch = "aarch64"))) {
        // No SIMD variants exist for this architecture (WebAssembly):
        // nothing is detected, the portable bodies are all there is.
        format!("{run} (the only kernels built for {})", std::env::consts::ARCH)
    } else if let Some(cap) = cap() {
        format!("{run} (capped at {cap} by RLX_ISA)")
    } else if built == Level::Scalar {
        format!("{run} (detected at load time)")
    } else if run == built {
        format!("{run} (chosen at compile time: the build's target features)")
    } else {
        format!("{run} (detected at load time; {built} guaranteed at compile time)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_runs_at_least_what_the_build_guarantees() {
        // A build for a CPU feature the machine lacks would not start; the
        // ordering is best first, so "at least" is `<=`. A cap lowers it.
        if cap().is_none() {
            assert!(running() <= compiled(), "running {} below compiled {}", running(), compiled());
        } else {
            assert!(running() >= cap().unwrap(), "running {} above the cap", running());
        }
    }

    #[test]
    fn isa_caps_are_read_by_name() {
        assert_eq!(parse_cap(""), Ok(None));
        assert_eq!(parse_cap("native"), Ok(None));
        assert_eq!(parse_cap("avx2"), Ok(Some(Level::Avx2)));
        assert_eq!(parse_cap("scalar"), Ok(Some(Level::Scalar)));
        assert_eq!(parse_cap("AVX2"), Err(()));
        assert_eq!(parse_cap("avx512"), Err(()));
    }

    #[test]
    fn the_description_names_who_chose() {
        let text = describe();
        assert!(text.starts_with(&running().to_string()), "{text}");
        if compiled() == running() && compiled() != Level::Scalar {
            assert!(text.contains("chosen at compile time"), "{text}");
        } else {
            assert!(text.contains("load time"), "{text}");
        }
    }
}
