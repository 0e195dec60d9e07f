//! The web worker that owns the opened image, built by Trunk for wasm32.
#[cfg(target_arch = "wasm32")]
fn main() {
    xfs_explorer::web::worker::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("the web worker is built with `trunk build`; natively, use `xfs-explorer`");
}
