//! The web page, built by Trunk for wasm32.
#[cfg(target_arch = "wasm32")]
fn main() {
    yew::Renderer::<xfs_explorer::web::page::app::App>::new().render();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("the web page is built with `trunk build`; natively, use `xfs-explorer`");
}
