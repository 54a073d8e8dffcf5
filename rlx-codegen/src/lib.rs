//! Code generator (see issue 4).
