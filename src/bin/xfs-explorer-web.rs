//! The web page, built by Trunk for wasm32. The same module is also the
//! light worker (`www/worker-light.js` starts it in a worker): opening the
//! page fetches one wasm holding both, with one copy of the standard
//! library, the allocator and serde between them.
#[cfg(target_arch = "wasm32")]
fn main() {
    if web_sys::window().is_some() {
        yew::Renderer::<xfs_explorer::web::page::app::App>::new().render();
    } else {
        xfs_explorer::web::worker::start_light();
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("the web page is built with `trunk build`; natively, use `xfs-explorer`");
}
