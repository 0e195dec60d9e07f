//! The core: everything that reads and understands an XFS image.
//!
//! Nothing in here depends on the web or on the host; it builds for the host
//! and for wasm32. Every byte it reads comes from an untrusted image, so the
//! compiler is asked to refuse the constructs that could panic on bad input.
//!
//! Data flow: [`read::ReadAt`] (read exactly N bytes at an offset) ->
//! [`image::Image`] (bounds check -> overlay -> block cache -> reader) ->
//! parsers (`sb`, ...) -> serde views.
#![forbid(unsafe_code)]
#![deny(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::as_conversions,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap
)]

pub mod address;
pub mod ag;
pub mod agmap;
pub mod attr;
pub mod bmap;
pub mod bytes;
pub mod container;
pub mod dabtree;
pub mod dahash;
pub mod dir;
pub mod error;
pub mod explain;
pub mod file;
pub mod format;
pub mod fs;
pub mod hexmap;
pub mod image;
pub mod inode;
pub mod log;
pub mod ops;
pub mod read;
pub mod reflink;
pub mod replay;
pub mod sb;
pub mod sort;
#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) mod testutil;
pub mod tree;
pub mod types;

pub use error::{Error, Location, Result};
pub use image::Image;
pub use read::ReadAt;
