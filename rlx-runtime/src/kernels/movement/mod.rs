//! movement kernels.
