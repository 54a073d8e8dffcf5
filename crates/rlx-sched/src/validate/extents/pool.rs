//! Pooling, NCHW and blocked.

use rlx_core::blocked::{channel_blocks, CHANNEL_BLOCK};

use super::conv::{pool_window, positive};
use super::{Extents, Rules};
use crate::ops::PoolKind;
use crate::thunk::{BlockedPool2D, Pool2D};
use crate::validate::access::F32;
use crate::validate::messages;

/// The pooling geometry: a window of positive size and stride
/// whose every position holds a real element.
#[allow(clippy::too_many_arguments)]
fn window<O>(
    r: &mut Rules<'_, O>,
    [h, w, h_out, w_out]: [usize; 4],
    [kh, kw, sh, sw, ph, pw]: [usize; 6],
    kind: PoolKind,
    count_include_pad: bool,
) {
    r.require(!count_include_pad || kind == PoolKind::Mean, "count_include_pad", messages::count_include_pad_max);
    positive(r, &[("kh", kh), ("kw", kw), ("sh", sh), ("sw", sw)]);
    pool_window(r, "h_out", h_out, h, "ph", ph, kh, sh, ["h_out", "h", "ph", "kh", "sh", "dh"]);
    pool_window(r, "w_out", w_out, w, "pw", pw, kw, sw, ["w_out", "w", "pw", "kw", "sw", "dw"]);
}

impl<O> Extents<O> for Pool2D<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Pool2D { src, dst, n, c, h, w, h_out, w_out, kh, kw, sh, sw, ph, pw, kind, count_include_pad } = self;
        window(r, [*h, *w, *h_out, *w_out], [*kh, *kw, *sh, *sw, *ph, *pw], *kind, *count_include_pad);
        r.read("src", src, F32, &[*n, *c, *h, *w], "n*c*h*w");
        r.write("dst", dst, F32, &[*n, *c, *h_out, *w_out], "n*c*h_out*w_out");
    }
}

impl<O> Extents<O> for BlockedPool2D<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let BlockedPool2D { src, dst, n, c, h, w, h_out, w_out, kh, kw, sh, sw, ph, pw, kind, count_include_pad } =
            self;
        window(r, [*h, *w, *h_out, *w_out], [*kh, *kw, *sh, *sw, *ph, *pw], *kind, *count_include_pad);
        let cb = channel_blocks(*c);
        r.read("src", src, F32, &[*n, cb, *h, *w, CHANNEL_BLOCK], "n*ceil(c/16)*h*w*16");
        r.write("dst", dst, F32, &[*n, cb, *h_out, *w_out, CHANNEL_BLOCK], "n*ceil(c/16)*h_out*w_out*16");
    }
}
