//! Pooling, NCHW and blocked.

use super::Lower;
use crate::call::KernelCall as K;
use crate::operand::{Operand, Params};
use crate::plan::parallel;
use crate::shapes::Pool2dShape;
use crate::thunk::{BlockedPool2D, Pool2D};

impl Lower for Pool2D<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Pool2D { src, dst, n, c, h, w, h_out, w_out, kh, kw, sh, sw, ph, pw, kind, count_include_pad } = *self;
        let shape = Pool2dShape { n, c, h, w, h_out, w_out, kh, kw, sh, sw, ph, pw };
        let par = parallel(n * c * h_out * w_out * kh * kw);
        Some(K::Pool2dF32 { src, dst, shape, kind, count_include_pad, par })
    }
}

impl Lower for BlockedPool2D<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let BlockedPool2D { src, dst, n, c, h, w, h_out, w_out, kh, kw, sh, sw, ph, pw, kind, count_include_pad } =
            *self;
        let shape = Pool2dShape { n, c, h, w, h_out, w_out, kh, kw, sh, sw, ph, pw };
        let par = parallel(n * c * h_out * w_out * kh * kw);
        Some(K::Pool2dBlockedF32 { src, dst, shape, kind, count_include_pad, par })
    }
}
