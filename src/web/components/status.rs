//! Progress while work runs, and the last error.

use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub busy: Option<(String, Option<f64>)>,
    pub error: Option<String>,
    /// Stop the work under way (the worker is restarted and the same
    /// files opened again).
    pub on_cancel: Callback<()>,
    /// What the last cancel stopped.
    pub cancelled: Option<String>,
    /// The worker's memory, in bytes.
    #[prop_or_default]
    pub memory: Option<u64>,
}

#[function_component(Status)]
pub fn status(props: &Props) -> Html {
    let busy = props.busy.as_ref().map(|(stage, frac)| {
        let bar = match frac {
            Some(f) => html! { <progress max="1" value={f.to_string()} /> },
            None => html! { <progress /> },
        };
        let cancel = {
            let cb = props.on_cancel.clone();
            Callback::from(move |_: MouseEvent| cb.emit(()))
        };
        html! {
            <div class="busy" data-testid="progress" role="status">{ bar }<span>{ stage }</span>
                <button data-testid="cancel" onclick={cancel}>{ "cancel" }</button></div>
        }
    });
    let cancelled = props.cancelled.as_ref().filter(|_| props.busy.is_none()).map(|c| {
        html! { <div class="muted" data-testid="cancelled" role="status">{ format!("Cancelled: {c}. The worker was restarted and the file opened again.") }</div> }
    });
    let error = props.error.as_ref().map(|e| {
        html! { <div class="error" data-testid="error" role="alert">{ e }</div> }
    });
    let memory = props.memory.map(|b| {
        html! { <div class="muted small" data-testid="worker-memory" data-bytes={b.to_string()}
            title="the worker's wasm memory, which holds the image's decoded log, replay state and caches; it grows and is never given back">
            { format!("worker memory {} MiB", b.div_ceil(1 << 20)) }</div> }
    });
    html! { <>{ for busy }{ for cancelled }{ for error }{ for memory }</> }
}
