//! Casts: `len` elements of `from` read, `len` of `to` written; in place
//! only when both have the same size.

use super::{Extents, Rules};
use crate::thunk::Cast;
use crate::validate::access::{Alias, Elem};

impl<O> Extents<O> for Cast<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Cast { src, dst, len, from, to } = self;
        let alias = if from.size() == to.size() { Alias::Exact } else { Alias::No };
        r.read_alias(alias, "src", src, Elem::Exact(*from), &[*len], "len");
        r.write("dst", dst, Elem::Exact(*to), &[*len], "len");
    }
}
