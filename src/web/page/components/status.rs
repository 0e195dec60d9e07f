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
    /// The last recovered image written: its name and size.
    #[prop_or_default]
    pub saved: Option<(String, u64)>,
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
        let frac = frac.map(|f| format!("{f:.4}")).unwrap_or_default();
        html! {
            <div class="busy" data-testid="progress" role="status" data-fraction={frac}>{ bar }<span data-testid="progress-stage">{ stage }</span>
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
    let saved = props.saved.as_ref().filter(|_| props.busy.is_none()).map(|(name, bytes)| {
        html! { <div class="muted" data-testid="saved" role="status" data-bytes={bytes.to_string()}>{ format!("Wrote {name} ({bytes} bytes).") }</div> }
    });
    html! { <>{ for busy }{ for cancelled }{ for saved }{ for error }{ for memory }</> }
}
