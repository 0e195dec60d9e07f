//! Allocation group summaries with their AGF and AGI fields.

use crate::web::protocol::{AgsView, Kv};
use std::rc::Rc;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub ags: Rc<AgsView>,
}

fn kv_table(rows: &[Kv], prefix: &str) -> Html {
    html! {
        <table class="kv" aria-label="allocation groups">
            <tbody>
            { for rows.iter().map(|k| html! {
                <tr>
                    <td class="name"><code>{ &k.name }</code></td>
                    <td class="num" data-testid={format!("{prefix}-{}", k.name)}>{ &k.value }</td>
                    <td class="meaning">{ &k.meaning }</td>
                </tr>
            }) }
            </tbody>
        </table>
    }
}

#[function_component(AgList)]
pub fn ag_list(props: &Props) -> Html {
    html! {
        <section class="ags">
            <h2>{ format!("{} allocation groups", props.ags.ags.len()) }</h2>
            { for props.ags.ags.iter().map(|ag| html! {
                <details class="ag" data-testid="ag" open={ag.agno == 0}>
                    <summary>{ format!("AG {}", ag.agno) }
                        <a class="small" data-testid="ag-map-link" href={crate::web::page::route::Route::AgMap(ag.agno).href()}>{ " map " }</a>
                        { for ag.summary.iter().take(4).map(|k| html! { <span class="muted">{ format!(" · {} {}", k.name, k.value) }</span> }) }
                    </summary>
                    if !ag.problems.is_empty() {
                        <ul class="problems">{ for ag.problems.iter().map(|p| html! { <li class="bad">{ p }</li> }) }</ul>
                    }
                    <div class="ag-cols">
                        <div><h3>{ "Summary" }</h3>{ kv_table(&ag.summary, &format!("ag{}", ag.agno)) }</div>
                        <div><h3>{ "AGF" }</h3>{ kv_table(&ag.agf, &format!("ag{}-agf", ag.agno)) }</div>
                        <div><h3>{ "AGI" }</h3>{ kv_table(&ag.agi, &format!("ag{}-agi", ag.agno)) }</div>
                    </div>
                </details>
            }) }
        </section>
    }
}
