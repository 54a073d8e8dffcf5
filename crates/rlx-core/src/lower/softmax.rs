//! Row softmax.

use super::Lower;
use crate::call::KernelCall as K;
use crate::operand::{Operand, Params};
use crate::plan::parallel;
use crate::thunk::Softmax;

impl Lower for Softmax<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Softmax { src, dst, rows, cols } = *self;
        Some(K::SoftmaxF32 { src, dst, rows, cols, par: parallel(rows * cols) })
    }
}
