//! attention kernels.
