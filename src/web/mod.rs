//! The web part (wasm32 only): the Yew page and the web worker that owns the
//! opened image. They talk through [`protocol`] messages; only the worker
//! touches the core.

pub mod app;
pub mod blob_reader;
pub mod bridge;
pub mod components;
pub mod download;
pub mod log_views;
pub mod ops_views;
pub mod protocol;
pub mod route;
pub mod state;
pub mod timing;
pub mod views;
pub mod worker;
