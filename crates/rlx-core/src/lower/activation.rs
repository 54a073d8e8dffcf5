//! Activation family: one activation over a slice, in place when `dst`
//! is `src`.

use super::Lower;
use crate::call::KernelCall as K;
use crate::operand::{Operand, Params};
use crate::plan::parallel;
use crate::thunk::Activation;

impl Lower for Activation<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Activation { src, dst, len, act } = *self;
        Some(K::ActF32 { act, src, dst, len, par: parallel(len) })
    }
}
