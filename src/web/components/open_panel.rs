//! The drop zone, the file picker and the sample button.

use wasm_bindgen::JsCast;
use web_sys::{DragEvent, HtmlInputElement};
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    /// A file was dropped or picked: its blob and name.
    pub on_open: Callback<(web_sys::Blob, String)>,
    pub on_sample: Callback<()>,
    pub ready: bool,
}

#[function_component(OpenPanel)]
pub fn open_panel(props: &Props) -> Html {
    let hover = use_state(|| false);

    let ondragover = {
        let hover = hover.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            hover.set(true);
        })
    };
    let ondragleave = {
        let hover = hover.clone();
        Callback::from(move |_: DragEvent| hover.set(false))
    };
    let ondrop = {
        let hover = hover.clone();
        let on_open = props.on_open.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            hover.set(false);
            if let Some(file) = e
                .data_transfer()
                .and_then(|dt| dt.files())
                .and_then(|f| f.get(0))
            {
                let name = file.name();
                on_open.emit((file.into(), name));
            }
        })
    };
    let onchange = {
        let on_open = props.on_open.clone();
        Callback::from(move |e: Event| {
            let Some(input) = e
                .target()
                .and_then(|t| t.dyn_into::<HtmlInputElement>().ok())
            else {
                return;
            };
            if let Some(file) = input.files().and_then(|f| f.get(0)) {
                let name = file.name();
                on_open.emit((file.into(), name));
            }
            // Let the same file be picked again.
            input.set_value("");
        })
    };
    let onsample = {
        let on_sample = props.on_sample.clone();
        Callback::from(move |_: MouseEvent| on_sample.emit(()))
    };

    let class = classes!("drop-zone", hover.then_some("hover"));
    html! {
        <section id="drop-zone" data-testid="drop-zone" {class} {ondragover} {ondragleave} {ondrop}>
            <p>{ "Drop an XFS image here, or " }
                <label class="picker">
                    { "choose a file" }
                    <input type="file" id="image-input" data-testid="image-input" {onchange} />
                </label>
                { ", or " }
                <button type="button" data-testid="sample-button" onclick={onsample}>
                    { "open the sample image" }
                </button>
            </p>
            <p class="hint">
                { if props.ready { "Ready. The image stays on your machine." } else { "Starting the reader…" } }
            </p>
        </section>
    }
}
