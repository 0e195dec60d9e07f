//! The search box: a path, an inode number, an AG block (`agno/agbno`), a
//! daddr (`d64`) or a filesystem block (`b100`); Enter goes there. `/`
//! anywhere on the page focuses it.

use crate::web::page::context::use_worker_context;
use crate::web::page::route::Route;
use crate::web::protocol::Request;
use crate::xfs::address::{AddrGeometry, Target};
use wasm_bindgen::JsCast;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    /// The open filesystem's geometry (none before an image is open).
    pub geo: Option<AddrGeometry>,
    /// Why the last path looked up cannot be reached.
    #[prop_or_default]
    pub path_error: Option<String>,
}

#[function_component(Search)]
pub fn search(props: &Props) -> Html {
    let error = use_state(|| None::<String>);
    let onkeydown = {
        let geo = props.geo;
        let error = error.clone();
        // A path is looked up in the worker; the page goes there when it
        // exists.
        let worker = use_worker_context();
        Callback::from(move |e: KeyboardEvent| {
            if e.key() != "Enter" {
                return;
            }
            let Some(input) = e
                .target()
                .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
            else {
                return;
            };
            let Some(g) = geo else {
                error.set(Some("open an image first".into()));
                return;
            };
            match g.resolve(&input.value()) {
                Ok(t) => {
                    error.set(None);
                    let route = match t {
                        // A path is looked up first; the page goes there
                        // only if it exists.
                        Target::Path(path) => return worker.send(Request::Lookup { path }),
                        Target::Inode(i) => Route::Inode(i),
                        Target::Daddr(d) => Route::Hex(d),
                        Target::Ag(a) => Route::AgMap(a),
                    };
                    if let Some(w) = web_sys::window() {
                        let _ = w.location().set_hash(&route.href());
                    }
                }
                Err(m) => error.set(Some(m)),
            }
        })
    };
    html! {
        <div class="search-box" role="search">
            <input type="search" class="search" data-testid="search" aria-label="go to a path, inode, agno/agbno, daddr or filesystem block"
                placeholder="/path · inode · agno/agbno · d<daddr> · b<fsblock>   (press /)" {onkeydown} />
            if let Some(m) = error.as_ref().or(props.path_error.as_ref()) { <div class="search-error" data-testid="search-error" role="alert">{ m }</div> }
        </div>
    }
}
