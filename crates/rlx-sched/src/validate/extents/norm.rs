//! Normalisations.

use super::{Extents, Rules};
use crate::thunk::{BatchNormInference, FusedResidualLN, FusedResidualRmsNorm, LayerNorm, RmsNorm};
use crate::validate::access::{Alias, F32};

impl<O> Extents<O> for LayerNorm<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let LayerNorm { x, g, b, out, rows, h, eps } = self;
        r.finite("eps", *eps, true);
        r.read_alias(Alias::Exact, "x", x, F32, &[*rows, *h], "rows*h");
        r.read("g", g, F32, &[*h], "h");
        r.read_opt("b", b, F32, &[*h], "h");
        r.write("out", out, F32, &[*rows, *h], "rows*h");
    }
}

impl<O> Extents<O> for RmsNorm<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let RmsNorm { x, g, out, rows, h, eps } = self;
        r.finite("eps", *eps, true);
        r.read_alias(Alias::Exact, "x", x, F32, &[*rows, *h], "rows*h");
        r.read("g", g, F32, &[*h], "h");
        r.write("out", out, F32, &[*rows, *h], "rows*h");
    }
}

impl<O> Extents<O> for FusedResidualLN<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let FusedResidualLN { x, res, bias, g, b, out, rows, h, eps } = self;
        r.finite("eps", *eps, true);
        r.read_alias(Alias::Exact, "x", x, F32, &[*rows, *h], "rows*h");
        r.read_alias(Alias::Exact, "res", res, F32, &[*rows, *h], "rows*h");
        r.read_opt("bias", bias, F32, &[*h], "h");
        r.read("g", g, F32, &[*h], "h");
        r.read("b", b, F32, &[*h], "h");
        r.write("out", out, F32, &[*rows, *h], "rows*h");
    }
}

impl<O> Extents<O> for FusedResidualRmsNorm<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let FusedResidualRmsNorm { x, res, bias, g, b, out, rows, h, eps } = self;
        r.finite("eps", *eps, true);
        r.read_alias(Alias::Exact, "x", x, F32, &[*rows, *h], "rows*h");
        r.read_alias(Alias::Exact, "res", res, F32, &[*rows, *h], "rows*h");
        r.read_opt("bias", bias, F32, &[*h], "h");
        r.read("g", g, F32, &[*h], "h");
        r.read_opt("b", b, F32, &[*h], "h");
        r.write("out", out, F32, &[*rows, *h], "rows*h");
    }
}

impl<O> Extents<O> for BatchNormInference<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let BatchNormInference { x, scale, bias, mean, var, out, n, c, hw, eps } = self;
        r.finite("eps", *eps, true);
        r.read_alias(Alias::Exact, "x", x, F32, &[*n, *c, *hw], "n*c*hw");
        for (field, op) in [("scale", scale), ("bias", bias), ("mean", mean), ("var", var)] {
            r.read(field, op, F32, &[*c], "c");
        }
        r.write("out", out, F32, &[*n, *c, *hw], "n*c*hw");
    }
}
