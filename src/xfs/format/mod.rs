//! Raw on-disk layouts, named after the kernel's headers and keeping the C
//! field names. Nothing here validates: see the modules one level up.

pub mod ag;
pub mod attr;
pub mod btree;
pub mod da;
pub mod dinode;
pub mod dir2;
pub mod log;
pub mod sb;

/// log2 of [`BBSIZE`] (`xfs_fs.h`).
pub const BBSHIFT: u32 = 9;
/// Bytes per basic block: the unit of daddrs, log block numbers and
/// sector counts (`xfs_fs.h`).
pub const BBSIZE: u64 = 1 << BBSHIFT;
