//! Tests of the elementwise kernels. References here are naive loops over
//! `crate::math` (the element definitions) with their own indexing, never
//! the kernels' paths.

mod binary;
mod broadcast;
mod compare;
mod fma;
mod region;
mod select;

pub(super) use crate::kernels::activation::tests::random_values;
pub(super) use crate::kernels::test_support::{same, LENGTHS};
