//! rope kernels.
