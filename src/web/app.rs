//! The root component: owns the state reducer and the worker bridge, and
//! lays out the page.

use crate::web::bridge::Bridge;
use crate::web::components::{open_panel::OpenPanel, status::Status, superblock::SuperblockTable};
use crate::web::protocol::Request;
use crate::web::state::{Action, State};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use yew::prelude::*;

/// Where the bundled sample image is served.
const SAMPLE_URL: &str = "sample.img";

/// Fetch the bundled sample as a Blob (the bytes stay in the browser's blob
/// store; the worker reads them lazily like any file).
async fn fetch_sample() -> Result<web_sys::Blob, String> {
    let window = web_sys::window().ok_or("no window")?;
    let resp = JsFuture::from(window.fetch_with_str(SAMPLE_URL))
        .await
        .map_err(|e| format!("cannot fetch the sample: {e:?}"))?;
    let resp: web_sys::Response = resp.dyn_into().map_err(|_| "not a response".to_string())?;
    if !resp.ok() {
        return Err(format!("cannot fetch the sample: HTTP {}", resp.status()));
    }
    let blob = JsFuture::from(resp.blob().map_err(|e| format!("{e:?}"))?)
        .await
        .map_err(|e| format!("cannot read the sample: {e:?}"))?;
    blob.dyn_into()
        .map_err(|_| "the sample is not a blob".to_string())
}

#[function_component(App)]
pub fn app() -> Html {
    let state = use_reducer(State::default);
    let bridge: Rc<RefCell<Option<Bridge>>> = use_mut_ref(|| None);

    {
        let dispatcher = state.dispatcher();
        let bridge = Rc::clone(&bridge);
        use_effect_with((), move |_| {
            let d2 = dispatcher.clone();
            match Bridge::new(Callback::from(move |r| d2.dispatch(Action::Response(r)))) {
                Ok(b) => *bridge.borrow_mut() = Some(b),
                Err(e) => dispatcher.dispatch(Action::Failed(e)),
            }
            move || {
                bridge.borrow_mut().take();
            }
        });
    }

    let open_blob = {
        let dispatcher = state.dispatcher();
        let bridge = Rc::clone(&bridge);
        Callback::from(move |(blob, name): (web_sys::Blob, String)| {
            dispatcher.dispatch(Action::Opening(name.clone()));
            let sent = match bridge.borrow().as_ref() {
                Some(b) => b.send(&Request::Open { blob, name }),
                None => Err("the worker is not running".to_string()),
            };
            if let Err(e) = sent {
                dispatcher.dispatch(Action::Failed(e));
            }
        })
    };

    let open_sample = {
        let dispatcher = state.dispatcher();
        let open_blob = open_blob.clone();
        Callback::from(move |_| {
            dispatcher.dispatch(Action::Opening("the sample image".into()));
            let (dispatcher, open_blob) = (dispatcher.clone(), open_blob.clone());
            wasm_bindgen_futures::spawn_local(async move {
                match fetch_sample().await {
                    Ok(blob) => open_blob.emit((blob, SAMPLE_URL.to_string())),
                    Err(e) => dispatcher.dispatch(Action::Failed(e)),
                }
            });
        })
    };

    let body = match &state.opened {
        Some(opened) => html! { <SuperblockTable opened={Rc::clone(opened)} /> },
        None => html! {},
    };

    html! {
        <main>
            <header>
                <h1>{ "xfs-explorer" }</h1>
                <p class="tagline">{ "Look inside an XFS filesystem image. It is read in this tab, lazily; nothing is uploaded." }</p>
            </header>
            <OpenPanel on_open={open_blob} on_sample={open_sample} ready={state.worker_ready} />
            <Status busy={state.busy.clone()} error={state.error.clone()} />
            { body }
        </main>
    }
}
