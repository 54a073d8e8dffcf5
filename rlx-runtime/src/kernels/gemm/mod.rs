//! gemm kernels.
