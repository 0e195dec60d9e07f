//! The log: a ring with the live part from tail to head (the wrap over the
//! physical end shows), totals, the transaction list (virtualised: a log can
//! hold hundreds of thousands), and one transaction's items with each
//! buffer's dirty bitmap drawn as a strip of 128-byte chunks, the runs
//! highlighted and named by the fields they cover.

use crate::web::page::context::use_worker_context;
use crate::web::page::route::Route;
use crate::web::protocol::{BitmapView, LogView, TxDetail, TxRow};
use crate::xfs::explain;
use std::collections::BTreeMap;
use std::f64::consts::PI;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use web_sys::HtmlElement;
use yew::prelude::*;

const ROW_PX: u32 = 24;
const VIEW_ROWS: u32 = 16;
const OVERSCAN: u32 = 30;
/// Rows asked for at once.
pub const PAGE: u32 = 200;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub log: Rc<LogView>,
    pub rows: Rc<BTreeMap<u32, TxRow>>,
    pub selected: Option<u32>,
    pub detail: Option<Rc<TxDetail>>,
}

fn point(frac: f64, r: f64) -> (f64, f64) {
    let a = frac * 2.0 * PI - PI / 2.0;
    // The browser's sine and cosine: Rust's bring libm's, with its
    // argument-reduction tables, into the wasm for this one drawing.
    (
        100.0 + r * js_sys::Math::cos(a),
        100.0 + r * js_sys::Math::sin(a),
    )
}

/// The ring: block 0 at the top, clockwise; the live part in colour.
fn ring(l: &LogView) -> Html {
    let len = f64::from(l.len_bbs.max(1));
    let t = f64::from(l.tail.1) / len;
    let h = f64::from(l.head.1) / len;
    let live = if l.head.0 > l.tail.0 || (l.head.0 == l.tail.0 && h >= t) {
        let d = if h >= t { h - t } else { 1.0 - t + h };
        d.min(1.0)
    } else {
        0.0
    };
    let r = 78.0;
    let (x0, y0) = point(t, r);
    let (x1, y1) = point(t + live, r);
    let large = if live > 0.5 { 1 } else { 0 };
    let arc = if live >= 0.999 {
        format!(
            "M {x0} {y0} A {r} {r} 0 1 1 {} {y0} A {r} {r} 0 1 1 {x0} {y0}",
            200.0 - x0
        )
    } else {
        format!("M {x0} {y0} A {r} {r} 0 {large} 1 {x1} {y1}")
    };
    let wraps = live > 0.0 && t + live > 1.0;
    let marker = |frac: f64, label: String, class: &'static str| {
        let (xa, ya) = point(frac, 66.0);
        let (xb, yb) = point(frac, 92.0);
        let (xt, yt) = point(frac, 52.0);
        html! { <g class={class}>
            <line x1={xa.to_string()} y1={ya.to_string()} x2={xb.to_string()} y2={yb.to_string()} />
            <text x={xt.to_string()} y={yt.to_string()}>{ label }</text>
        </g> }
    };
    html! {
        <svg class="log-ring" viewBox="0 0 200 200" role="img" data-testid="log-ring"
             aria-label={format!("log of {} blocks, live from block {} to {}{}", l.len_bbs, l.tail.1, l.head.1, if wraps { ", across the physical end" } else { "" })}>
            <circle cx="100" cy="100" r={r.to_string()} class="track" />
            if live > 0.0 { <path d={arc} class="live" /> }
            <line x1="100" y1="14" x2="100" y2="30" class="origin" />
            <text x="100" y="10" class="olbl">{ "block 0" }</text>
            { marker(t, format!("tail {}:{}", l.tail.0, l.tail.1), "tail") }
            { marker(h, format!("head {}:{}", l.head.0, l.head.1), "head") }
            if wraps { <text x="100" y="104" class="wrap">{ "wraps over the end" }</text> }
        </svg>
    }
}

/// One buffer's dirty bitmap as a strip of chunks.
fn strip(b: &BitmapView) -> Html {
    let chunks = b.chunks.max(1);
    let cell = (640.0 / f64::from(chunks)).clamp(1.0, 14.0);
    let width = cell * f64::from(chunks);
    let runs = b.runs.iter().enumerate().map(|(i, r)| {
        let x = f64::from(r.first) * cell;
        let w = f64::from(r.count) * cell;
        html! { <rect x={x.to_string()} y="0" width={w.to_string()} height="14" class={if i % 2 == 0 { "run" } else { "run alt" }}>
            <title>{ format!("chunks {}..{} (bytes {}..{}): {}", r.first, r.first + r.count, r.first * 128, (r.first + r.count) * 128, r.label) }</title>
        </rect> }
    });
    let grid: Vec<Html> = if chunks <= 160 {
        (1..chunks)
            .map(|c| {
                let x = (f64::from(c) * cell).to_string();
                html! { <line x1={x.clone()} x2={x} y1="0" y2="14" class="grid" /> }
            })
            .collect()
    } else {
        Vec::new()
    };
    html! {
        <div class="bitmap" data-testid="bitmap">
            <svg width={(width + 2.0).to_string()} height="16" class={classes!("strip", b.cancel.then_some("cancel"))}>
                <rect x="0" y="0" width={width.to_string()} height="14" class="bg" />
                { for runs }
                { for grid }
            </svg>
            <ul class="runs">
                { for b.runs.iter().map(|r| html! {
                    <li data-testid="bitmap-run" data-first={r.first.to_string()} data-count={r.count.to_string()}>
                        <code>{ format!("[{}+{}]", r.first, r.count) }</code>
                        <span class="muted">{ format!(" bytes {}..{} ", r.first * 128, (r.first + r.count) * 128) }</span>
                        { &r.label }
                    </li>
                }) }
            </ul>
            <div class="muted small">{ format!("{} chunks of 128 bytes, {} dirty in {} runs{}", chunks,
                b.runs.iter().map(|r| r.count).sum::<u32>(), b.runs.len(), if b.cancel { ", cancelled" } else { "" }) }</div>
        </div>
    }
}

/// What each kind of item in the transaction is, once per kind.
fn glossary(t: &TxDetail) -> Html {
    let mut kinds: Vec<&str> = t.items.iter().map(|i| i.kind.as_str()).collect();
    crate::xfs::sort::by(&mut kinds, Ord::cmp);
    kinds.dedup();
    html! {
        <details class="glossary" data-testid="log-glossary" open=true>
            <summary>{ "What these items are" }</summary>
            <dl>
            { for kinds.into_iter().map(|k| html! {
                <>
                    <dt data-kind={k.to_string()}><code>{ k }</code></dt>
                    <dd>{ explain::log_item(k) }</dd>
                </>
            }) }
            </dl>
        </details>
    }
}

fn detail(t: &TxDetail, log_daddr: u64, external: bool) -> Html {
    // The record the transaction starts in: its header's bytes.
    let start_block = t
        .row
        .start
        .split(':')
        .nth(1)
        .and_then(|b| b.parse::<u64>().ok());
    html! {
        <section class="tx" data-testid="log-detail">
            <h3>{ format!("Transaction #{} · tid {:#x} · start {} · commit {}", t.row.index, t.row.tid, t.row.start, t.row.commit) }
                if let Some(b) = start_block {
                    { " " }<a class="small" data-testid="log-record-bytes" href={if external { crate::web::page::route::Route::LogHex(log_daddr.saturating_add(b)) } else { crate::web::page::route::Route::Hex(log_daddr.saturating_add(b)) }.href()}>{ "its first record's header" }</a>
                }
            </h3>
            <p class="muted">{ format!("type {} · num_items {} · {} ops · {} items · {} regions · {} bytes",
                t.type_.map_or("?".into(), |v| v.to_string()), t.num_items.map_or("?".into(), |v| v.to_string()),
                t.ops, t.row.items, t.row.regions, t.row.bytes) }</p>
            if !t.problems.is_empty() { <ul class="problems">{ for t.problems.iter().map(|p| html! { <li class="bad">{ p }</li> }) }</ul> }
            <table class="items" aria-label="the transaction's items"><tbody>
            { for t.items.iter().enumerate().map(|(i, it)| html! {
                <tr data-testid="log-item" data-kind={it.kind.clone()} class={classes!(it.unfinished.then_some("unfinished"))}>
                    <td class="num">{ i }</td>
                    <td><code title={explain::log_item(&it.kind)}>{ &it.kind }</code></td>
                    <td class="num">{ it.regions }</td>
                    <td>{ &it.text }
                        if let Some(d) = it.daddr { { " · " }<a data-testid="log-item-bytes" href={crate::web::page::route::Route::Hex(d).href()}>{ "the block's bytes" }</a> }
                        if let Some(ino) = it.ino { { " · " }<a href={crate::web::page::route::Route::Inode(ino).href()}>{ format!("inode {ino}") }</a> }
                        { for it.bitmap.as_ref().map(strip) }</td>
                </tr>
            }) }
            </tbody></table>
            { glossary(t) }
        </section>
    }
}

#[function_component(LogPanel)]
pub fn log_panel(props: &Props) -> Html {
    let scroll_top = use_state(|| 0u32);
    let l = &props.log;
    let total = l.transactions;
    let first = (*scroll_top / ROW_PX).saturating_sub(OVERSCAN);
    let last = (first + VIEW_ROWS + 2 * OVERSCAN).min(total);
    {
        // Ask for the first missing row in view, a page at a time.
        let (rows, worker) = (Rc::clone(&props.rows), use_worker_context());
        // The rows kept change at the cap with their count the same: their
        // first and last say when.
        let kept = (
            rows.len(),
            rows.first_key_value().map(|(k, _)| *k),
            rows.last_key_value().map(|(k, _)| *k),
        );
        use_effect_with((first, last, kept), move |(first, last, _)| {
            if let Some(missing) = (*first..*last).find(|i| !rows.contains_key(i)) {
                worker.send(crate::web::protocol::Request::LogRows {
                    start: missing,
                    count: PAGE,
                });
            }
        });
    }
    let onscroll = {
        let scroll_top = scroll_top.clone();
        Callback::from(move |e: Event| {
            if let Some(el) = e.target().and_then(|t| t.dyn_into::<HtmlElement>().ok()) {
                scroll_top.set(u32::try_from(el.scroll_top()).unwrap_or(0));
            }
        })
    };
    let rows = (first..last).map(|i| {
        match props.rows.get(&i) {
            Some(r) => html! {
                <a class={classes!("txrow", r.unfinished_intent.then_some("unfinished"), (props.selected == Some(i)).then_some("selected"))}
                   href={Route::Log(Some(i)).href()} data-testid="log-transaction" data-index={i.to_string()}>
                    <span class="num">{ format!("#{i}") }</span>
                    <span>{ format!("{:#x}", r.tid) }</span>
                    <span>{ &r.start }</span><span>{ &r.commit }</span>
                    <span class="num">{ r.items }</span><span class="num">{ r.regions }</span><span class="num">{ r.bytes }</span>
                    <span class="kinds">{ &r.kinds }</span>
                </a>
            },
            None => html! { <div class="txrow"><span class="muted">{ format!("#{i} …") }</span></div> },
        }
    });
    // Rows in flow between two spacers that stand for the rows not drawn
    // (SVG height attributes: the page's CSP forbids inline styles).
    let above = (first * ROW_PX).to_string();
    let below = (total.saturating_sub(last) * ROW_PX).to_string();
    let state = if l.clean { "clean" } else { "dirty" };
    html! {
        <section class="log">
            <div class="log-top">
                { ring(l) }
                <div>
                    <div class="keys">
                        <div class="key"><span class="muted" title={explain::log_key("state")}>{ "state" }</span><strong data-testid="log-clean" class={if l.clean { "ok" } else { "bad" }}>{ state }</strong></div>
                        <div class="key"><span class="muted" title={explain::log_key("tail block")}>{ "tail block" }</span><strong data-testid="log-tail-block">{ l.tail.1 }</strong></div>
                        <div class="key"><span class="muted" title={explain::log_key("head block")}>{ "head block" }</span><strong data-testid="log-head-block">{ l.head.1 }</strong></div>
                        <div class="key"><span class="muted" title={explain::log_key("cycles")}>{ "cycles" }</span><strong>{ format!("{} → {}", l.tail.0, l.head.0) }</strong></div>
                        <div class="key"><span class="muted" title={explain::log_key("records")}>{ "records" }</span><strong data-testid="log-records">{ l.records }</strong></div>
                        <div class="key"><span class="muted" title={explain::log_key("transactions")}>{ "transactions" }</span><strong data-testid="log-transactions">{ l.transactions }</strong></div>
                    </div>
                    <p class="muted">{ format!("{} blocks of 512 bytes at daddr {} · {} of {} records with a correct CRC · {} incomplete transactions · decoded in {:.0} ms",
                        l.len_bbs, l.start_daddr, l.records_crc_ok, l.records, l.incomplete, l.decode_ms) }</p>
                    if !l.unfinished.is_empty() {
                        <div class="error" data-testid="log-unfinished">
                            <strong>{ format!("{} intents without a done item (recovery finishes them): ", l.unfinished.len()) }</strong>
                            <ul>{ for l.unfinished.iter().zip(l.unfinished_tx.iter().chain(std::iter::repeat(&0))).map(|(u, t)| html! {
                                <li><a href={Route::Log(Some(*t)).href()}>{ u }</a></li> }) }</ul>
                        </div>
                    }
                    for m in l.crc_mismatches.iter() { <p class="bad">{ m }</p> }
                    for p in l.problems.iter() { <p class="warn">{ p }</p> }
                </div>
            </div>
            <div class="log-stats">
                <table class="kv"><thead><tr><th>{ "item kind" }</th><th>{ "items" }</th><th>{ "regions" }</th><th>{ "bytes" }</th></tr></thead><tbody>
                { for l.by_kind.iter().map(|(k, i, r, b)| html! { <tr><td><code>{ k }</code></td><td class="num">{ i }</td><td class="num">{ r }</td><td class="num">{ b }</td></tr> }) }
                </tbody></table>
                <table class="kv" aria-label="buffer items in numbers"><tbody>
                { for l.buffers.iter().map(|k| html! { <tr><td>{ &k.name }</td><td class="num">{ &k.value }</td><td class="meaning">{ &k.meaning }</td></tr> }) }
                </tbody></table>
            </div>
            <h3>{ "Transactions" }</h3>
            <div class="txrow head"><span>{ "#" }</span>
                { for ["tid", "start", "commit", "items", "regions", "bytes"].into_iter().map(|k| html! { <span title={explain::log_key(k)}>{ k }</span> }) }
                <span>{ "kinds" }</span></div>
            <div class="vlist" {onscroll} data-testid="log-list" data-keynav="list" aria-label="transactions">
                <div class="vspace"><svg class="spacer" width="1" height={above} aria-hidden="true"></svg>{ for rows }<svg class="spacer" width="1" height={below} aria-hidden="true"></svg></div>
            </div>
            { for props.detail.as_ref().filter(|d| Some(d.row.index) == props.selected).map(|d| detail(d, l.start_daddr, l.external)) }
        </section>
    }
}
