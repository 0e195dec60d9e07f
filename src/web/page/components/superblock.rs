//! The superblock: every field with its value and a one-line meaning.

use crate::web::protocol::{Opened, ReplayView};
use crate::xfs::sb::human_bytes;
use std::rc::Rc;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub opened: Rc<Opened>,
    /// The replayed view, when views show it: its superblock is shown, the
    /// fields replay and mount changed marked.
    #[prop_or_default]
    pub replayed: Option<Rc<ReplayView>>,
}

#[function_component(SuperblockTable)]
pub fn superblock_table(props: &Props) -> Html {
    let o = &props.opened;
    let disk = &o.superblock;
    let replayed = props
        .replayed
        .as_ref()
        .and_then(|r| r.superblock.as_ref().map(|s| (s, &r.sb_changed)));
    let sb = replayed.map_or(disk, |(s, _)| s);
    let changed = |name: &str| replayed.is_some_and(|(_, c)| c.iter().any(|n| n == name));
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
        let was = changed(&f.name).then(|| {
            disk.fields
                .iter()
                .find(|g| g.name == f.name)
                .map_or("-".to_string(), |g| g.value.clone())
        });
        html! {
            <tr class={classes!(was.is_some().then_some("changed"))} data-changed={was.is_some().to_string()}
                data-testid="sb-row" data-field={f.name.clone()}>
                <td class="name"><code>{ format!("sb_{}", f.name) }</code></td>
                <td class={value_class} data-testid={format!("sb-{}", f.name)}>{ &f.value }</td>
                <td class="note">
                    { f.note.clone().unwrap_or_default() }
                    if let Some(w) = &was { <span class="was" data-testid={format!("sb-was-{}", f.name)}>{ format!(" on disk: {w}") }</span> }
                </td>
                <td class="meaning">{ &f.meaning }</td>
                <td class="off">{ format!("{}+{}", f.offset, f.size) }</td>
            </tr>
        }
    });
    html! {
        <section class="superblock">
            <h2>{ "Superblock of " }<span data-testid="image-name">{ &o.name }</span>
                if replayed.is_some() { <span class="replayed" data-testid="sb-replayed">{ " after replay" }</span> }
                { " " }<a class="small" data-testid="sb-bytes" href={crate::web::page::route::Route::Hex(0).href()}>{ "its bytes, field by field" }</a>
            </h2>
            if let Some((_, c)) = replayed {
                <p class="muted" data-testid="sb-changed-count">{ format!("{} fields differ from the superblock on disk (marked): replay wrote some, the mount-time work the rest (counters summed from the AGs, quota inodes, the log-incompatible features, sb_lsn, the CRC).", c.len()) }</p>
            }
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
