//! How a kernel family declares its instruction-set variants, once.
//!
//! A family lists its variants with [`variants!`](crate::kernels::variants!),
//! best first and the scalar reference last, each with the CPU features it
//! needs. The same list gives the kernels the best variant this CPU runs
//! (chosen on first use and cached, so a call costs one load) and gives the
//! tests every variant this CPU runs, so selection and tests cannot drift.
//! The CPU's features are detected once, in [`cpu`].

use std::sync::OnceLock;

/// One variant of a family: its name (for tests and benchmarks), whether
/// this CPU runs it, and what the family calls (a function pointer or a
/// table of them).
pub(crate) struct Variant<T: 'static> {
    pub(crate) name: &'static str,
    pub(crate) usable: fn() -> bool,
    pub(crate) value: T,
}

/// A family's variants, best first, and the best one this CPU runs.
pub(crate) struct Variants<T: 'static> {
    list: &'static [Variant<T>],
    best: OnceLock<T>,
}

impl<T: Copy> Variants<T> {
    /// `list` best first; its last entry is the reference, which every CPU
    /// runs.
    pub(crate) const fn new(list: &'static [Variant<T>]) -> Self {
        Self { list, best: OnceLock::new() }
    }

    /// The first variant of the list this CPU runs, chosen once per
    /// process, so the interpreter and generated code agree bit for bit.
    #[inline]
    pub(crate) fn best(&'static self) -> &'static T {
        self.best.get_or_init(|| match self.list.iter().find(|v| (v.usable)()) {
            Some(v) => v.value,
            None => self.list[self.list.len() - 1].value,
        })
    }

    /// `(name, value)` of every variant this CPU runs, best first, the
    /// reference last.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn supported(&'static self) -> Vec<(&'static str, T)> {
        self.list.iter().filter(|v| (v.usable)()).map(|v| (v.name, v.value)).collect()
    }
}

/// Declares a family's variants:
///
/// ```ignore
/// variants! {
///     /// Doc of the static.
///     pub(crate) static KERNELS: RowFn = [
///         #[cfg(target_arch = "x86_64")]
///         "avx2" if cpu::avx2_fma() => avx2::row,
///         "scalar" => scalar::row,
///     ];
/// }
/// ```
///
/// Entries go best first; an entry without `if` is always usable (the
/// reference, last); the conditions see [`cpu`] in scope. `KERNELS.best()` is the cached choice,
/// `KERNELS.supported()` what the tests iterate.
macro_rules! variants {
    (
        $(#[$doc:meta])*
        $vis:vis static $name:ident: $ty:ty = [
            $( $(#[cfg($cfg:meta)])? $label:literal $(if $cond:expr)? => $value:expr ),+ $(,)?
        ];
    ) => {
        $(#[$doc])*
        $vis static $name: $crate::kernels::variants::Variants<$ty> = $crate::kernels::variants::Variants::new(&[
            $(
                $(#[cfg($cfg)])?
                $crate::kernels::variants::Variant {
                    name: $label,
                    usable: $crate::kernels::variants::variants!(@usable $($cond)?),
                    value: $value,
                },
            )+
        ]);
    };
    (@usable $cond:expr) => {
        || {
            #[allow(unused_imports)]
            use $crate::kernels::variants::cpu;
            $cond
        }
    };
    (@usable) => { || true };
}
pub(crate) use variants;

/// The CPU features the kernels select on, detected once per process.
/// Each target has only its own.
pub(crate) mod cpu {
    use super::OnceLock;

    #[cfg(target_arch = "x86_64")]
    #[derive(Clone, Copy)]
    struct Features {
        avx2: bool,
        avx2_fma: bool,
        avx2_f16c: bool,
        avx512f: bool,
        avx512vl: bool,
        avx512_vnni: bool,
        avx_vnni: bool,
    }

    #[cfg(target_arch = "x86_64")]
    fn detect() -> Features {
        use crate::isa::Level;
        use std::arch::is_x86_feature_detected as has;
        // `RLX_ISA` caps what the kernels may use (an AVX2-only CPU's
        // kernels, timed on an AVX-512 machine).
        let cap = crate::isa::cap().unwrap_or(Level::Avx512);
        let avx2 = has!("avx2") && cap <= Level::Avx2;
        // Every AVX-512F kernel may also run AVX2+FMA code (tails, shared
        // helpers); every AVX-512 CPU has both.
        let avx512f = has!("avx512f") && avx2 && has!("fma") && cap <= Level::Avx512;
        Features {
            avx2,
            avx2_fma: avx2 && has!("fma"),
            avx2_f16c: avx2 && has!("f16c"),
            avx512f,
            avx512vl: avx512f && has!("avx512vl"),
            avx512_vnni: avx512f && has!("avx512bw") && has!("avx512vl") && has!("avx512vnni"),
            // AVX-VNNI came with AVX-512-less Intel cores (Alder Lake);
            // an AVX2 cap stands for the AVX2 CPUs before it.
            avx_vnni: avx2 && has!("avxvnni") && cap < Level::Avx2,
        }
    }

    #[cfg(target_arch = "aarch64")]
    #[derive(Clone, Copy)]
    struct Features {
        dotprod: bool,
    }

    #[cfg(target_arch = "aarch64")]
    fn detect() -> Features {
        Features { dotprod: std::arch::is_aarch64_feature_detected!("dotprod") }
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[inline]
    fn features() -> Features {
        static DETECTED: OnceLock<Features> = OnceLock::new();
        *DETECTED.get_or_init(detect)
    }

    /// AVX2.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    pub(crate) fn avx2() -> bool {
        features().avx2
    }

    /// AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    pub(crate) fn avx2_fma() -> bool {
        features().avx2_fma
    }

    /// AVX2 and F16C (the half-precision conversions).
    #[cfg(target_arch = "x86_64")]
    #[inline]
    pub(crate) fn avx2_f16c() -> bool {
        features().avx2_f16c
    }

    /// AVX-512F, with AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    pub(crate) fn avx512f() -> bool {
        features().avx512f
    }

    /// AVX-512F and VL (with AVX2 and FMA).
    #[cfg(target_arch = "x86_64")]
    #[inline]
    pub(crate) fn avx512vl() -> bool {
        features().avx512vl
    }

    /// AVX-512 F, BW, VL and VNNI.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    pub(crate) fn avx512_vnni() -> bool {
        features().avx512_vnni
    }

    /// AVX-VNNI, with AVX2.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    pub(crate) fn avx_vnni() -> bool {
        features().avx_vnni
    }

    /// NEON's dot-product extension.
    #[cfg(target_arch = "aarch64")]
    #[inline]
    pub(crate) fn dotprod() -> bool {
        features().dotprod
    }

    /// NEON: every aarch64 CPU has it (the target's baseline).
    #[cfg(target_arch = "aarch64")]
    #[inline]
    pub(crate) fn neon() -> bool {
        true
    }
}
