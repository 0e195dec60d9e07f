//! One component per file; each takes a `Properties` struct.

pub mod open_panel;
pub mod status;
pub mod superblock;
