//! One activation over a slice, in place when `dst` is `src`.

use super::{Extents, Rules};
use crate::thunk::Activation;
use crate::validate::access::{Alias, F32};

impl<O> Extents<O> for Activation<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Activation { src, dst, len, act: _ } = self;
        r.read_alias(Alias::Exact, "src", src, F32, &[*len], "len");
        r.write("dst", dst, F32, &[*len], "len");
    }
}
