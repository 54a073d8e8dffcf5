//! softmax kernels.
