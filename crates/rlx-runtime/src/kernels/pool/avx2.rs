//! The pooling plane compiled with AVX2 enabled: the reference body,
//! vectorised across `wo` by the compiler when `sw == 1`, with the same
//! operations in the same order (bit-identical to scalar).

use super::{scalar, Pool2dShape, PoolKind};

/// # Safety
///
/// AVX2+FMA; as [`scalar::pool_plane`].
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_pool_plane_f32(
    src: *const f32,
    dst: *mut f32,
    s: &Pool2dShape,
    kind: PoolKind,
    count_include_pad: bool,
) {
    // SAFETY: forwarded contract.
    unsafe { scalar::pool_plane(src, dst, s, kind, count_include_pad) }
}
