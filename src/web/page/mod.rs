//! The page: the root component and its state, the components, the
//! location hash's routes, the bridge to the worker, downloads, and the
//! stores of what was browsed with their caps.

#[cfg(target_arch = "wasm32")]
pub mod app;
#[cfg(target_arch = "wasm32")]
pub mod bridge;
pub mod caches;
#[cfg(target_arch = "wasm32")]
pub mod components;
#[cfg(target_arch = "wasm32")]
pub mod context;
#[cfg(target_arch = "wasm32")]
pub mod download;
pub mod lru;
pub mod route;
#[cfg(target_arch = "wasm32")]
pub mod state;
