//! One component per file; each takes a `Properties` struct.

pub mod ag_map;
pub mod ag_records;
pub mod ag_view;
pub mod dir_list;
pub mod hex_view;
pub mod inode_view;
pub mod log_view;
pub mod nav;
pub mod open_panel;
pub mod ops_view;
pub mod partitions;
pub mod replay_diff;
pub mod search;
pub mod status;
pub mod superblock;
pub mod tour;
pub mod tree;
