//! Raw on-disk layouts, named after the kernel's headers and keeping the C
//! field names. Nothing here validates: see the modules one level up.

pub mod sb;
pub mod attr;
pub mod da;
pub mod dir2;
