//! The web part (wasm32 only): the Yew page and the web worker that owns the
//! opened image. They talk through [`protocol`] messages; only the worker
//! touches the core. The page's stores ([`caches`], [`lru`]) are plain Rust
//! and built natively too, for their tests.

#[cfg(target_arch = "wasm32")]
pub mod app;
#[cfg(target_arch = "wasm32")]
pub mod blob_reader;
#[cfg(target_arch = "wasm32")]
pub mod bridge;
pub mod caches;
#[cfg(target_arch = "wasm32")]
pub mod components;
#[cfg(target_arch = "wasm32")]
pub mod download;
#[cfg(target_arch = "wasm32")]
pub mod log_views;
pub mod lru;
#[cfg(target_arch = "wasm32")]
pub mod ops_views;
#[cfg(target_arch = "wasm32")]
pub mod protocol;
#[cfg(target_arch = "wasm32")]
pub mod route;
#[cfg(target_arch = "wasm32")]
pub mod state;
#[cfg(target_arch = "wasm32")]
pub mod timing;
#[cfg(target_arch = "wasm32")]
pub mod views;
#[cfg(target_arch = "wasm32")]
pub mod worker;
