//! Each thunk kind, lowered and executed, against a scalar reference
//! written from the kind's definition (awkward shapes: SIMD tails, size 1,
//! empty dims, aliasing), or against the kernels' own scalar reference.

mod attention;
mod cast;
mod common;
mod conv;
mod elementwise;
mod gather_scatter;
mod gemm;
mod movement;
mod norm;
mod recurrent;
mod reduce;
mod sample;
mod weights;
