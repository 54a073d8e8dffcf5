//! Row softmax, in place when `dst` is `src`.

use super::{Extents, Rules};
use crate::thunk::Softmax;
use crate::validate::access::{Alias, F32};

impl<O> Extents<O> for Softmax<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Softmax { src, dst, rows, cols } = self;
        r.read_alias(Alias::Exact, "src", src, F32, &[*rows, *cols], "rows*cols");
        r.write("dst", dst, F32, &[*rows, *cols], "rows*cols");
    }
}
