//! cast kernels.
