//! Pure shape and constant arithmetic: broadcasting, strides, axes,
//! reshape targets and constant folding. Nothing here adds a storage or a
//! thunk.

pub(crate) mod fold;
pub(crate) mod shape;
