//! activation kernels.
