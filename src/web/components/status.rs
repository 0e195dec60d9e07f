//! Progress while work runs, and the last error.

use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub busy: Option<(String, Option<f64>)>,
    pub error: Option<String>,
}

#[function_component(Status)]
pub fn status(props: &Props) -> Html {
    let busy = props.busy.as_ref().map(|(stage, frac)| {
        let bar = match frac {
            Some(f) => html! { <progress max="1" value={f.to_string()} /> },
            None => html! { <progress /> },
        };
        html! {
            <div class="busy" data-testid="progress" role="status">{ bar }<span>{ stage }</span></div>
        }
    });
    let error = props.error.as_ref().map(|e| {
        html! { <div class="error" data-testid="error" role="alert">{ e }</div> }
    });
    html! { <>{ for busy }{ for error }</> }
}
