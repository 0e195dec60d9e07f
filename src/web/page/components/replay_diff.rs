//! What replay changed: counts at the top, the replay's notes (work left
//! undone: unfinished intents, inodes on unlinked lists), then one part at a
//! time (paths, inodes, xattrs, block ranges) in pages of rows fetched from
//! the worker, so a log that changed a million inodes shows as easily as
//! one that changed ten. Paths and inodes link to the views: what exists
//! after replay opens in the replayed view, what replay removed in the view
//! of the disk.

use crate::web::page::route::Route;
use crate::web::protocol::{DiffRow, DiffRowsView, DiffSection, ReplayDiffView};
use std::rc::Rc;
use yew::prelude::*;

/// Rows asked for at once.
pub const PAGE: u32 = crate::web::page::route::DIFF_ROWS_PAGE;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub diff: Rc<ReplayDiffView>,
    pub rows: Option<Rc<DiffRowsView>>,
    pub section: DiffSection,
    pub filter: String,
    pub start: u32,
    /// Views show the replayed state.
    pub replayed: bool,
    pub on_replay: Callback<bool>,
}

fn title(s: DiffSection) -> &'static str {
    match s {
        DiffSection::Paths => "Paths",
        DiffSection::Inodes => "Inodes",
        DiffSection::Xattrs => "Extended attributes",
        DiffSection::Blocks => "Blocks",
    }
}

#[function_component(ReplayDiff)]
pub fn replay_diff(props: &Props) -> Html {
    let d = &props.diff;
    // A link that shows the replayed state (or the disk's) when followed.
    let link = |route: Route, replayed: bool, label: String, class: &'static str| {
        let (cb, now) = (props.on_replay.clone(), props.replayed);
        let onclick = Callback::from(move |_: MouseEvent| {
            if now != replayed {
                cb.emit(replayed);
            }
        });
        let title = if replayed {
            "opens in the replayed view"
        } else {
            "opens in the view of the disk (replay removed it)"
        };
        html! { <a class={class} href={route.href()} {onclick} {title}>{ label }</a> }
    };
    let key = |label: String, value: u64, testid: String| {
        html! {
            <div class="key"><span class="muted">{ label }</span><strong data-testid={testid}>{ value }</strong></div>
        }
    };
    let mut keys = Vec::new();
    for s in DiffSection::ALL {
        if s.changes().is_empty() {
            keys.push(key(
                "block ranges".to_string(),
                d.count(s, ""),
                format!("replay-diff-{}", s.name()),
            ));
        }
        for c in s.changes() {
            keys.push(key(
                format!("{} {c}", title(s).to_ascii_lowercase()),
                d.count(s, c),
                format!("replay-diff-{}-{c}", s.name()),
            ));
        }
    }
    keys.push(key(
        "sectors recovered".into(),
        d.sectors,
        "replay-diff-sectors".into(),
    ));
    let tabs = DiffSection::ALL.into_iter().map(|s| {
        let target = Route::Replay {
            section: s,
            filter: String::new(),
            start: 0,
        };
        let class = classes!("tab", (s == props.section).then_some("active"));
        html! { <a {class} href={target.href()} data-testid={format!("replay-diff-tab-{}", s.name())}>
            { format!("{} ({})", title(s), d.count(s, "")) }</a> }
    });
    let filters = if props.section.changes().is_empty() {
        html! {}
    } else {
        let one = |f: &str, label: String| {
            let target = Route::Replay {
                section: props.section,
                filter: f.to_string(),
                start: 0,
            };
            let class = classes!("filter", (props.filter == f).then_some("active"));
            html! { <a {class} href={target.href()}>{ label }</a> }
        };
        html! { <p class="filters">
            { one("", format!("all {}", d.count(props.section, ""))) }
            { for props.section.changes().iter().map(|c| one(c, format!("{c} {}", d.count(props.section, c)))) }
        </p> }
    };
    let rows = props.rows.as_ref().filter(|r| {
        r.section == props.section && r.filter == props.filter && r.start == props.start
    });
    let table = match rows {
        None => html! { <p class="muted">{ "reading rows…" }</p> },
        Some(r) => {
            let first = u64::from(r.start);
            let shown = u64::try_from(r.rows.len()).unwrap_or(0);
            let page = |start: u32, label: &str, testid: &str| {
                let target = Route::Replay {
                    section: props.section,
                    filter: props.filter.clone(),
                    start,
                };
                html! { <a class="pager" href={target.href()} data-testid={testid.to_string()}>{ label.to_string() }</a> }
            };
            let pager = html! {
                <p class="pager" data-testid="replay-diff-pager">
                    if r.start > 0 { { page(r.start.saturating_sub(PAGE), "← previous", "replay-diff-prev") } }
                    <span class="muted">{ if r.total == 0 { "no rows".to_string() } else {
                        format!(" rows {}–{} of {} ", first + 1, first + shown, r.total) } }</span>
                    if first + shown < r.total { { page(r.start.saturating_add(PAGE), "next →", "replay-diff-next") } }
                </p>
            };
            let body = r.rows.iter().map(|row| match props.section {
                DiffSection::Paths => path_row(row, &link),
                DiffSection::Inodes => inode_row(row, &link),
                DiffSection::Xattrs => xattr_row(row, &link),
                DiffSection::Blocks => html! {
                    <tr data-testid="replay-diff-block" data-daddr={row.daddr.to_string()}>
                        <td class="num">{ row.daddr }</td><td class="num">{ row.sectors }</td><td>{ &row.text }</td>
                    </tr>
                },
            });
            let head = match props.section {
                DiffSection::Paths => {
                    html! { <tr><th></th><th>{ "path" }</th><th>{ "inode" }</th></tr> }
                }
                DiffSection::Inodes => {
                    html! { <tr><th></th><th>{ "inode" }</th><th>{ "type" }</th><th>{ "fields: on disk → after replay" }</th></tr> }
                }
                DiffSection::Xattrs => {
                    html! { <tr><th></th><th>{ "inode" }</th><th>{ "name" }</th></tr> }
                }
                DiffSection::Blocks => {
                    html! { <tr><th>{ "daddr" }</th><th>{ "sectors" }</th><th>{ "holds (after replay)" }</th></tr> }
                }
            };
            html! { <>
                { pager.clone() }
                <table class="diff"><thead>{ head }</thead><tbody>{ for body }</tbody></table>
                if shown > 20 { { pager } }
            </> }
        }
    };
    html! {
        <section class="replay-diff" data-testid="replay-diff">
            <h2>{ "What replay changed" }</h2>
            <p class="muted">{ format!("The image on disk against the log replayed in memory with the mount-time work done ({:.0} ms to compare). {} directory entries added and {} removed; the paths below are every path one side has and the other has not, as a listing of each would show.",
                d.diff_ms, d.entries_added, d.entries_removed) }</p>
            <div class="keys">{ for keys }</div>
            if d.truncated {
                <p class="warn">{ "More inodes changed than were compared: the lists stop at the limit." }</p>
            }
            if !d.notes.is_empty() {
                <ul class="notes" data-testid="replay-diff-notes">
                    { for d.notes.iter().map(|n| {
                        let class = if n.starts_with("NOT ") || n.starts_with("warning") { "bad" } else { "muted" };
                        html! { <li class={class} data-testid="replay-diff-note">{ n }</li> }
                    }) }
                </ul>
            }
            if !d.problems.is_empty() {
                <ul class="problems">{ for d.problems.iter().map(|p| html! { <li class="warn">{ p }</li> }) }</ul>
            }
            if !d.block_kinds.is_empty() {
                <p class="muted small">{ "recovered blocks by kind: " }{ d.block_kinds.iter().map(|(k, r, s)| format!("{k} {s} sectors in {r} ranges")).collect::<Vec<_>>().join(" · ") }</p>
            }
            <div class="tabs">{ for tabs }</div>
            { filters }
            { table }
        </section>
    }
}

type Link<'a> = dyn Fn(Route, bool, String, &'static str) -> Html + 'a;

fn path_row(row: &DiffRow, link: &Link<'_>) -> Html {
    let added = row.change == "added";
    html! {
        <tr data-testid="replay-diff-entry" data-path={row.text.clone()} data-change={row.change.clone()} data-ino={row.ino.to_string()}
            class={row.change.clone()}>
            <td class="sign">{ if added { "+" } else { "−" } }</td>
            <td>{ link(Route::Path(row.text.clone()), added, row.text.clone(), "path") }</td>
            <td class="num">{ link(Route::Inode(row.ino), added, row.ino.to_string(), "") }</td>
        </tr>
    }
}

fn inode_row(row: &DiffRow, link: &Link<'_>) -> Html {
    let fields = row
        .fields
        .iter()
        .map(|(f, b, a)| html! { <span class="field"><code>{ f }</code>{ format!(" {b} → {a}") }</span> });
    html! {
        <tr data-testid="replay-diff-inode" data-ino={row.ino.to_string()} data-change={row.change.clone()} class={row.change.clone()}>
            <td>{ &row.change }</td>
            <td class="num">{ link(Route::Inode(row.ino), true, row.ino.to_string(), "") }</td>
            <td>{ &row.text }</td>
            <td class="fields">{ for fields }</td>
        </tr>
    }
}

fn xattr_row(row: &DiffRow, link: &Link<'_>) -> Html {
    let there = row.change != "removed";
    html! {
        <tr data-testid="replay-diff-xattr" data-ino={row.ino.to_string()} data-change={row.change.clone()} class={row.change.clone()}>
            <td>{ &row.change }</td>
            <td class="num">{ link(Route::Inode(row.ino), there, row.ino.to_string(), "") }</td>
            <td><code>{ &row.text }</code></td>
        </tr>
    }
}
