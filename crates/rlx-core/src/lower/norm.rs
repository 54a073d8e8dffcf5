//! Normalisations: layer and RMS norms (with their fused residual
//! forms) and batch norm at inference.

use super::Lower;
use crate::call::KernelCall as K;
use crate::operand::{Operand, Params};
use crate::plan::parallel;
use crate::thunk::{BatchNormInference, FusedResidualLN, FusedResidualRmsNorm, LayerNorm, RmsNorm};

impl Lower for LayerNorm<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let LayerNorm { x, g, b, out, rows, h, eps } = *self;
        Some(K::LayerNormF32 { x, g, b, out, rows, h, eps, par: parallel(rows * h) })
    }
}

impl Lower for RmsNorm<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let RmsNorm { x, g, out, rows, h, eps } = *self;
        Some(K::RmsNormF32 { x, g, out, rows, h, eps, par: parallel(rows * h) })
    }
}

impl Lower for FusedResidualLN<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let FusedResidualLN { x, res, bias, g, b, out, rows, h, eps } = *self;
        Some(K::FusedResidualLnF32 { x, res, bias, g, b, out, rows, h, eps, par: parallel(rows * h) })
    }
}

impl Lower for FusedResidualRmsNorm<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let FusedResidualRmsNorm { x, res, bias, g, b, out, rows, h, eps } = *self;
        Some(K::FusedResidualRmsNormF32 { x, res, bias, g, b, out, rows, h, eps, par: parallel(rows * h) })
    }
}

impl Lower for BatchNormInference<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let BatchNormInference { x, scale, bias, mean, var, out, n, c, hw, eps } = *self;
        Some(K::BatchNormInferenceF32 { x, scale, bias, mean, var, out, n, c, hw, eps, par: parallel(n * c * hw) })
    }
}
