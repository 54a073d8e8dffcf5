//! conv kernels.
