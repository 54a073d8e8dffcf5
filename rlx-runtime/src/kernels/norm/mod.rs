//! norm kernels.
