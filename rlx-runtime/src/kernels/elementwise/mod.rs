//! elementwise kernels.
