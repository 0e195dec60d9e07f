//! The drop zone, the file picker and the sample button. Two files at
//! once are a data device and its external log device, in either order.

use wasm_bindgen::JsCast;
use web_sys::{DragEvent, HtmlInputElement};
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    /// Files were dropped or picked (one, or two: a data device and its
    /// external log device): their blobs and names.
    pub on_open: Callback<Vec<(web_sys::Blob, String)>>,
    pub on_sample: Callback<()>,
    pub ready: bool,
}

/// The first two files of a list, with their names.
fn first_two(files: &web_sys::FileList) -> Vec<(web_sys::Blob, String)> {
    (0..files.length().min(2))
        .filter_map(|i| files.get(i))
        .map(|f| {
            let name = f.name();
            (f.into(), name)
        })
        .collect()
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
            if let Some(files) = e.data_transfer().and_then(|dt| dt.files()) {
                let picked = first_two(&files);
                if !picked.is_empty() {
                    on_open.emit(picked);
                }
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
            if let Some(files) = input.files() {
                let picked = first_two(&files);
                if !picked.is_empty() {
                    on_open.emit(picked);
                }
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
                    <input type="file" id="image-input" data-testid="image-input" multiple=true {onchange} />
                </label>
                { ", or " }
                <button type="button" data-testid="sample-button" onclick={onsample}>
                    { "open the sample image" }
                </button>
            </p>
            <p class="hint">{ "A filesystem with an external log: drop or choose both files (the data device and the log device)." }</p>
            <p class="hint">
                { if props.ready { "Ready. The image stays on your machine." } else { "Starting the reader…" } }
            </p>
        </section>
    }
}
