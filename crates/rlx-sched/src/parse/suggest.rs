//! "Did you mean" suggestions, and the known kinds this format lacks.

use std::collections::HashMap;

use crate::thunk::ThunkKind;

/// Thunk kinds that larger interpreters of the same thunk model offer
/// (training, f64 and complex variants, solvers, ...) and the `.sched`
/// format does not: naming one gets a clearer message than "unknown".
const UNSUPPORTED_KINDS: &[&str] = &[
    "ActivationBackward",
    "ActivationBackwardF64",
    "ActivationC64",
    "ActivationF64",
    "AdaLayerNorm",
    "AdaLayerNormBackward",
    "AttentionBackward",
    "AttentionBackwardAll",
    "AxialRope2d",
    "BatchNormInferenceBackwardBeta",
    "BatchNormInferenceBackwardGamma",
    "BatchNormInferenceBackwardInput",
    "BatchedDenseSolveF32",
    "BatchedDenseSolveF64",
    "BatchedDgemmF64",
    "BinaryFullC64",
    "BinaryFullF64",
    "CgemmC64",
    "CholeskyF32",
    "ComplexNormSqBackwardF32",
    "ComplexNormSqF32",
    "ConcatF64",
    "ConjugateC64",
    "Conv2D1x1",
    "Conv2dBackwardInput",
    "Conv2dBackwardWeight",
    "Conv3d",
    "Conv3dBackwardInput",
    "Conv3dBackwardWeight",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "CumScan",
    "CumsumBackward",
    "CustomFn",
    "CustomOp",
    "DenseSolveF32",
    "DenseSolveF64",
    "DequantGroupedMatMulGguf",
    "DequantGroupedMatMulMlx",
    "DequantMatMul",
    "DequantMatMulFp8",
    "DequantMatMulGguf",
    "DequantMatMulInt4",
    "DequantMatMulMlx",
    "DequantMatMulMxFp4x2",
    "DequantMatMulNvfp4",
    "DequantMoEWeightsGguf",
    "Dequantize",
    "DetF32",
    "Dgemm",
    "FakeQuantize",
    "FakeQuantizeBackward",
    "FakeQuantizeLSQ",
    "FakeQuantizeLSQBackwardScale",
    "FakeQuantizeLSQBackwardX",
    "Fft1d",
    "Fft1dQ",
    "FftButterflyStage",
    "FusedAttnBlock",
    "FusedBertLayer",
    "FusedNomicLayer",
    "FusedSwiGLU",
    "GatedDeltaNet",
    "GatedDeltaNetBackward",
    "GatedResidual",
    "GatedResidualBackward",
    "GatherBackward",
    "GaussianSplatPrepare",
    "GaussianSplatRasterize",
    "GaussianSplatRender",
    "GaussianSplatRenderBackward",
    "GroupNorm",
    "GroupNormBackwardBeta",
    "GroupNormBackwardGamma",
    "GroupNormBackwardInput",
    "GroupedMatMul",
    "Gru",
    "Histogram",
    "Im2Col",
    "Interpolate3d",
    "LayerNorm2d",
    "LayerNormBackwardGamma",
    "LayerNormBackwardInput",
    "LogMel",
    "LogMelBackward",
    "LoraMatMul",
    "Lstm",
    "Mamba2",
    "MaxPool2dBackward",
    "MaxPool3dBackward",
    "Pool3D",
    "QConv2d",
    "QMatMul",
    "QrF32",
    "Quantize",
    "ReduceSumF64",
    "ReluBackward",
    "ReluBackwardF64",
    "ResizeNearest2x",
    "Reverse",
    "RmsNormBackwardBeta",
    "RmsNormBackwardGamma",
    "RmsNormBackwardInput",
    "RngNormal",
    "RngUniform",
    "Rnn",
    "RopeBackward",
    "Sample",
    "ScaledDequantize",
    "ScaledGroupedMatMul",
    "ScaledMatMul",
    "ScaledQuantScale",
    "ScaledQuantize",
    "Scan",
    "ScanBackward",
    "ScanBackwardXs",
    "ScatterAdd",
    "SelectiveScan",
    "SgdMomentum",
    "SoftmaxCrossEntropy",
    "SoftmaxCrossEntropyBackward",
    "SoftmaxCrossEntropyDense",
    "SortF32",
    "SplineActivation",
    "SvdF32",
    "SynthMatMul",
    "TransposeF64",
    "TriangularSolveF32",
    "WelchPeaks",
];

/// Whether `name` is one of those known kinds missing from the table.
pub(super) fn is_unsupported_kind(name: &str) -> bool {
    UNSUPPORTED_KINDS.contains(&name)
}

/// The candidate closest to `word` by edit distance (ignoring case; a swap of neighbours is one edit), if
/// close enough to be a plausible typo: at most a third of the word's
/// length, and at least one edit allowed.
pub(super) fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    // Long words are never typos of short names; skip the quadratic work.
    if word.len() > 64 {
        return None;
    }
    let lower = word.to_ascii_lowercase();
    let limit = (word.chars().count() / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = strsim::osa_distance(&lower, &c.to_ascii_lowercase());
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// The supported kind a misspelt kind name most likely meant.
pub(super) fn closest_kind(word: &str) -> Option<&'static str> {
    closest(word, ThunkKind::ALL.iter().map(|k| k.name()))
}

/// Suggestions already computed, by misspelt word: a file of many bad
/// lines repeats the same few words, and each suggestion costs an edit
/// distance per candidate.
#[derive(Default)]
pub(super) struct Memo(HashMap<String, Option<&'static str>>);

impl Memo {
    /// `compute(word)`, computed once per distinct word.
    pub(super) fn get(
        &mut self,
        word: &str,
        compute: impl FnOnce(&str) -> Option<&'static str>,
    ) -> Option<&'static str> {
        if let Some(&hit) = self.0.get(word) {
            return hit;
        }
        let answer = compute(word);
        self.0.insert(word.to_string(), answer);
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_kinds_only() {
        assert_eq!(closest_kind("Sgem"), Some("Sgemm"));
        assert_eq!(closest_kind("sgemm"), Some("Sgemm"));
        assert_eq!(closest_kind("LayerNrom"), Some("LayerNorm"));
        assert_eq!(closest_kind("Frobnicate"), None);
    }

    #[test]
    fn unsupported_kinds_are_not_in_the_table() {
        for name in UNSUPPORTED_KINDS {
            assert!(ThunkKind::from_name(name).is_none(), "{name} is in the table");
        }
    }
}
