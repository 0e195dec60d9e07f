//! The web part: the Yew page ([`page`]) and the web worker that owns the
//! opened image ([`worker`]), both wasm32 only. They talk through
//! [`protocol`] messages; only the worker touches the core. The protocol,
//! the page's routes (`page::route`: what each asks the worker for) and
//! its stores (`page::caches`, `page::lru`) are plain Rust and built
//! natively too, for their tests.

pub mod page;
pub mod protocol;
#[cfg(target_arch = "wasm32")]
pub mod worker;
