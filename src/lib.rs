//! xfs-explorer: look inside an XFS filesystem and its journal.
//!
//! - [`xfs`]: the core (no web dependencies; host and wasm32).
//! - `cli`: the native command-line tool (host only).
//! - `web`: the Yew page and the web worker (wasm32 only, but for the
//!   page's plain stores, tested natively).

pub mod xfs;

#[cfg(not(target_arch = "wasm32"))]
pub mod cli;

pub mod web;
