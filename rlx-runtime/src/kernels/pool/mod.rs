//! pool kernels.
