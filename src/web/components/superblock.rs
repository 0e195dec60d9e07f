//! The superblock: every field with its value and a one-line meaning.

use crate::web::protocol::Opened;
use crate::xfs::sb::human_bytes;
use std::rc::Rc;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub opened: Rc<Opened>,
}

#[function_component(SuperblockTable)]
pub fn superblock_table(props: &Props) -> Html {
    let o = &props.opened;
    let sb = &o.superblock;
    let crc = match sb.crc_ok {
        Some(true) => html! { <span class="ok" data-testid="sb-crc-ok">{ "CRC correct" }</span> },
        Some(false) => html! { <span class="bad" data-testid="sb-crc-ok">{ "CRC BAD" }</span> },
        None => html! { <span data-testid="sb-crc-ok">{ "no CRC (version 4)" }</span> },
    };
    let read_note = format!(
        "{} of {} read from the file",
        human_bytes(o.stats.host_bytes),
        human_bytes(o.size)
    );
    let problems = sb.problems.iter().map(|p| {
        let class = if p.fatal { "bad" } else { "warn" };
        html! { <li class={class}>{ format!("sb_{}: {}", p.field, p.message) }</li> }
    });
    let rows = sb.fields.iter().map(|f| {
        let value_class = if f.is_number { "num" } else { "text" };
        html! {
            <tr>
                <td class="name"><code>{ format!("sb_{}", f.name) }</code></td>
                <td class={value_class} data-testid={format!("sb-{}", f.name)}>{ &f.value }</td>
                <td class="note">{ f.note.clone().unwrap_or_default() }</td>
                <td class="meaning">{ &f.meaning }</td>
                <td class="off">{ format!("{}+{}", f.offset, f.size) }</td>
            </tr>
        }
    });
    html! {
        <section class="superblock">
            <h2>{ "Superblock of " }<span data-testid="image-name">{ &o.name }</span></h2>
            <p class="summary">
                <span data-testid="sb-version">{ format!("version {}", sb.version) }</span>
                { " · " }{ crc }{ " · " }
                <span data-testid="bytes-read" data-bytes={o.stats.host_bytes.to_string()}>{ read_note }</span>
            </p>
            <ul class="features" data-testid="features">
                { for sb.features.iter().map(|f| html! { <li>{ f }</li> }) }
            </ul>
            if !sb.problems.is_empty() {
                <ul class="problems" data-testid="problems">{ for problems }</ul>
            }
            <table>
                <thead><tr><th>{ "field" }</th><th>{ "value" }</th><th>{ "reading" }</th><th>{ "meaning" }</th><th>{ "byte" }</th></tr></thead>
                <tbody>{ for rows }</tbody>
            </table>
        </section>
    }
}
