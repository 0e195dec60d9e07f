//! The light web worker the page starts with: the full worker without
//! replay and the operations analysis, which the page loads the full
//! worker for when first asked. Built by Trunk for wasm32.
#[cfg(target_arch = "wasm32")]
fn main() {
    xfs_explorer::web::worker::start_light();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("the web worker is built with `trunk build`; natively, use `xfs-explorer`");
}
