//! The operations a log carries: counts per kind with the transactions they
//! cost, charts drawn from the numbers (operations and transactions per
//! kind, items per checkpoint, bytes per item type), the forkoff histogram
//! of the disk's state and of the replayed one, and a timeline of the
//! checkpoints in pages fetched from the worker, each operation linking to
//! the inode and the directory it touched.

use crate::web::page::route::Route;
use crate::web::protocol::{CheckpointRow, ForkoffView, OpRow, OpsTimelineView, OpsView};
use crate::xfs::explain;
use std::rc::Rc;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub ops: Rc<OpsView>,
    pub timeline: Option<Rc<OpsTimelineView>>,
    /// The page of the timeline the route asks for.
    pub start: u32,
    pub skip: u32,
    /// Views show the replayed state.
    pub replayed: bool,
    pub on_replay: Callback<bool>,
}

/// Colours of the operation kinds (the core's order), of item types and of
/// file types.
const KIND_COLOURS: [(&str, &str); 13] = [
    ("create", "#4e79a7"),
    ("mkdir", "#2b5d8c"),
    ("mknod", "#76b7b2"),
    ("symlink", "#59a14f"),
    ("link", "#8cd17d"),
    ("unlink", "#e15759"),
    ("rmdir", "#b0343a"),
    ("rename", "#f28e2b"),
    ("setxattr", "#b07aa1"),
    ("removexattr", "#d4a6c8"),
    ("write", "#edc948"),
    ("truncate", "#9c755f"),
    ("setattr", "#79706e"),
];
const SERIES: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];
const FILE_TYPES: [(&str, &str); 8] = [
    ("file", "#4e79a7"),
    ("dir", "#f28e2b"),
    ("symlink", "#59a14f"),
    ("chardev", "#b07aa1"),
    ("blockdev", "#9c755f"),
    ("fifo", "#76b7b2"),
    ("socket", "#edc948"),
    ("unknown", "#bab0ac"),
];
const OPS_COLOUR: &str = "#4e79a7";
const TX_COLOUR: &str = "#f28e2b";

fn kind_colour(kind: &str) -> &'static str {
    KIND_COLOURS
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or("#888", |(_, c)| c)
}

/// The class that colours an operation kind (style.css has one per kind;
/// no inline styles, which the page's Content-Security-Policy forbids).
fn kind_class(kind: &str) -> String {
    if KIND_COLOURS.iter().any(|(k, _)| *k == kind) {
        format!("kc-{kind}")
    } else {
        "kc-other".to_string()
    }
}

/// A colour sample drawn as SVG (a presentation attribute, not a style).
fn swatch(colour: &'static str) -> Html {
    html! { <svg class="swatch" viewBox="0 0 10 10" aria-hidden="true"><rect width="10" height="10" rx="2" fill={colour} /></svg> }
}

fn dot(colour: &'static str) -> Html {
    html! { <svg class="dot" viewBox="0 0 10 10" aria-hidden="true"><circle cx="5" cy="5" r="5" fill={colour} /></svg> }
}

fn series(i: usize) -> &'static str {
    SERIES.get(i % SERIES.len()).copied().unwrap_or("#888")
}

fn type_colour(t: &str) -> &'static str {
    FILE_TYPES
        .iter()
        .find(|(k, _)| *k == t)
        .map_or("#888", |(_, c)| c)
}

#[allow(clippy::as_conversions, clippy::cast_precision_loss)]
fn fl(n: u64) -> f64 {
    n as f64
}

/// Bytes for people: 1536 -> "1.5 KiB".
fn human(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = fl(n);
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    let unit = UNITS.get(u).copied().unwrap_or("B");
    if u == 0 {
        format!("{n} B")
    } else if v < 10.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.0} {unit}")
    }
}

/// Short counts for axis labels: 12500 -> "12.5k".
fn short(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if v >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// A round top for an axis reaching `max`, and the step between its ticks.
fn axis(max: f64) -> (f64, f64) {
    let raw = (max / 4.0).max(1.0);
    // The browser's pow and log10: Rust's bring libm's into the wasm.
    let p = js_sys::Math::pow(10.0, js_sys::Math::log10(raw).floor());
    let f = raw / p;
    let step = p * if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    let top = (max / step).ceil().max(1.0) * step;
    (top, step)
}

/// Horizontal grid lines and their labels from 0 to `top` on a plot from
/// `y0` (bottom) up `h`, between `x0` and `x1`.
fn grid(top: f64, step: f64, x0: f64, x1: f64, y0: f64, h: f64) -> Html {
    let n = (top / step).round().clamp(1.0, 20.0);
    let mut lines = Vec::new();
    let mut i = 0.0;
    while i <= n {
        let v = i * step;
        let y = y0 - h * v / top;
        lines.push(html! { <g class="tick">
            <line x1={x0.to_string()} x2={x1.to_string()} y1={y.to_string()} y2={y.to_string()} />
            <text x={(x0 - 6.0).to_string()} y={(y + 4.0).to_string()} class="ylbl">{ short(v) }</text>
        </g> });
        i += 1.0;
    }
    html! { <g class="grid">{ for lines }</g> }
}

/// A legend: a swatch and a label per entry, in a row that wraps.
fn legend(entries: &[(String, &'static str)]) -> Html {
    html! {
        <ul class="legend">
            { for entries.iter().map(|(label, colour)| html! {
                <li>{ swatch(colour) }{ label }</li>
            }) }
        </ul>
    }
}

/// Operations and transactions per kind, as grouped bars.
fn kinds_chart(o: &OpsView) -> Html {
    let (w, h, left, bottom, top_pad) = (660.0, 270.0, 48.0, 64.0, 22.0);
    let plot_h = h - bottom - top_pad;
    let y0 = h - bottom;
    let max = o
        .kinds
        .iter()
        .map(|k| k.operations.max(k.transactions))
        .max()
        .unwrap_or(0);
    let (top, step) = axis(fl(max));
    let n = o.kinds.len().max(1);
    #[allow(clippy::as_conversions, clippy::cast_precision_loss)]
    let group = (w - left - 8.0) / n as f64;
    let bar = (group * 0.36).min(26.0);
    let bars = o.kinds.iter().enumerate().map(|(i, k)| {
        #[allow(clippy::as_conversions, clippy::cast_precision_loss)]
        let cx = left + group * (i as f64 + 0.5);
        let one = |v: u64, x: f64, colour: &'static str, what: &str| {
            let bh = plot_h * fl(v) / top;
            html! { <g>
                <rect x={x.to_string()} y={(y0 - bh).to_string()} width={bar.to_string()} height={bh.to_string()} fill={colour}>
                    <title>{ format!("{}: {v} {what}", k.kind) }</title>
                </rect>
                <text x={(x + bar / 2.0).to_string()} y={(y0 - bh - 4.0).to_string()} class="val">{ short(fl(v)) }</text>
            </g> }
        };
        html! { <g>
            { one(k.operations, cx - bar - 1.0, OPS_COLOUR, "operations") }
            { one(k.transactions, cx + 1.0, TX_COLOUR, "transactions") }
            <text x={cx.to_string()} y={(y0 + 14.0).to_string()} class="xlbl rot"
                transform={format!("rotate(-30 {cx} {})", y0 + 14.0)}>{ &k.kind }</text>
        </g> }
    });
    html! {
        <figure class="chart" data-testid="ops-chart-kinds">
            <figcaption>{ "Operations and the transactions they cost, per kind" }</figcaption>
            { legend(&[("operations".into(), OPS_COLOUR), ("transactions".into(), TX_COLOUR)]) }
            <svg viewBox={format!("0 0 {w} {h}")} role="img" aria-label="operations and transactions per kind">
                { grid(top, step, left, w - 4.0, y0, plot_h) }
                { for bars }
                <line x1={left.to_string()} x2={(w - 4.0).to_string()} y1={y0.to_string()} y2={y0.to_string()} class="axis" />
            </svg>
        </figure>
    }
}

/// Items per checkpoint, stacked by item type; each bar links to its
/// checkpoints in the timeline.
fn checkpoints_chart(o: &OpsView) -> Html {
    let (w, h, left, bottom, top_pad) = (520.0, 230.0, 44.0, 36.0, 12.0);
    let plot_h = h - bottom - top_pad;
    let y0 = h - bottom;
    let max = o.checkpoint_bars.iter().map(|b| b.items).max().unwrap_or(0);
    let (top, step) = axis(fl(max));
    let n = o.checkpoint_bars.len().max(1);
    #[allow(clippy::as_conversions, clippy::cast_precision_loss)]
    let slot = (w - left - 8.0) / n as f64;
    let bw = (slot * 0.8).clamp(1.0, 48.0);
    let label_every = (n / 8).max(1);
    let bars = o.checkpoint_bars.iter().enumerate().map(|(i, b)| {
        #[allow(clippy::as_conversions, clippy::cast_precision_loss)]
        let x = left + slot * i as f64 + (slot - bw) / 2.0;
        let mut y = y0;
        let segs = b.items_by_type.iter().map(|(t, k)| {
            let hgt = plot_h * fl(*k) / top;
            y -= hgt;
            let colour = series(usize::try_from(*t).unwrap_or(0));
            html! { <rect x={x.to_string()} y={y.to_string()} width={bw.to_string()} height={hgt.to_string()} fill={colour} /> }
        }).collect::<Vec<_>>();
        let which = if b.first == b.last {
            format!("checkpoint {}", b.first)
        } else {
            format!("checkpoints {}–{}", b.first, b.last)
        };
        let types: Vec<String> = b
            .items_by_type
            .iter()
            .filter_map(|(t, k)| {
                o.item_types
                    .get(usize::try_from(*t).ok()?)
                    .map(|it| format!("{} {k}", it.name))
            })
            .collect();
        let tip = format!(
            "{which}: {} items ({}), {}, {} operations",
            b.items,
            types.join(", "),
            human(b.bytes),
            b.operations
        );
        let label = (i % label_every == 0 || i + 1 == n).then(|| {
            html! { <text x={(x + bw / 2.0).to_string()} y={(y0 + 14.0).to_string()} class="xlbl">{ b.first }</text> }
        });
        html! {
            <a href={Route::Ops { start: b.first, skip: 0 }.href()} data-testid="ops-checkpoint-bar" data-first={b.first.to_string()}>
                <title>{ tip }</title>
                <rect x={(left + slot * fl(u64::try_from(i).unwrap_or(0))).to_string()} y={top_pad.to_string()} width={slot.to_string()} height={plot_h.to_string()} class="hit" />
                { for segs }
                { for label }
            </a>
        }
    });
    let per = o
        .checkpoint_bars
        .first()
        .map_or(1, |b| b.last.saturating_sub(b.first).saturating_add(1));
    let unit = if o.log_form == "typed" {
        "transaction"
    } else {
        "checkpoint"
    };
    let caption = if per > 1 {
        format!("Log items per {unit} ({per} {unit}s a bar), by item type")
    } else {
        format!("Log items per {unit}, by item type")
    };
    let entries: Vec<(String, &'static str)> = o
        .item_types
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.clone(), series(i)))
        .collect();
    html! {
        <figure class="chart" data-testid="ops-chart-checkpoints">
            <figcaption>{ caption }<span class="muted">{ format!(" · a bar opens its {unit}s in the timeline") }</span></figcaption>
            { legend(&entries) }
            <svg viewBox={format!("0 0 {w} {h}")} role="img" aria-label="log items per checkpoint">
                { grid(top, step, left, w - 4.0, y0, plot_h) }
                { for bars }
                <line x1={left.to_string()} x2={(w - 4.0).to_string()} y1={y0.to_string()} y2={y0.to_string()} class="axis" />
                <text x={((left + w) / 2.0).to_string()} y={(h - 4.0).to_string()} class="xlbl">{ unit }</text>
            </svg>
        </figure>
    }
}

/// Bytes per item type, as horizontal bars.
fn item_types_chart(o: &OpsView) -> Html {
    let row = 24.0;
    let (w, left, right) = (520.0, 86.0, 150.0);
    let rows = o.item_types.len().max(1);
    let h = row * fl(u64::try_from(rows).unwrap_or(1)) + 8.0;
    let max = o
        .item_types
        .iter()
        .map(|t| t.bytes)
        .max()
        .unwrap_or(0)
        .max(1);
    let bars = o.item_types.iter().enumerate().map(|(i, t)| {
        let y = 4.0 + row * fl(u64::try_from(i).unwrap_or(0));
        let bw = ((w - left - right) * fl(t.bytes) / fl(max)).max(1.0);
        html! { <g data-testid="ops-item-type" data-type={t.name.clone()} data-bytes={t.bytes.to_string()}>
            <text x={(left - 8.0).to_string()} y={(y + 15.0).to_string()} class="ylbl">{ &t.name }</text>
            <rect x={left.to_string()} y={(y + 3.0).to_string()} width={bw.to_string()} height={(row - 6.0).to_string()} fill={series(i)}>
                <title>{ format!("{}: {} bytes in {} items", t.name, t.bytes, t.items) }</title>
            </rect>
            <text x={(left + bw + 6.0).to_string()} y={(y + 15.0).to_string()} class="val start">
                { format!("{} · {} items", human(t.bytes), t.items) }
            </text>
        </g> }
    });
    html! {
        <figure class="chart" data-testid="ops-chart-item-types">
            <figcaption>{ "Bytes logged per item type" }<span class="muted">{ " · bytes · items" }</span></figcaption>
            { legend(&o.item_types.iter().enumerate().map(|(i, t)| (t.name.clone(), series(i))).collect::<Vec<_>>()) }
            <svg viewBox={format!("0 0 {w} {h}")} role="img" aria-label="bytes per item type">
                { for bars }
                <line x1={left.to_string()} x2={left.to_string()} y1="2" y2={(h - 2.0).to_string()} class="axis" />
            </svg>
        </figure>
    }
}

/// A link to an inode that shows the replayed state (or the disk's) when
/// followed.
fn inode_link(
    ino: u64,
    replayed: bool,
    now: bool,
    on_replay: &Callback<bool>,
    label: String,
    testid: &'static str,
) -> Html {
    let cb = on_replay.clone();
    let onclick = Callback::from(move |_: MouseEvent| {
        if now != replayed {
            cb.emit(replayed);
        }
    });
    let title = if replayed {
        "opens in the replayed view"
    } else {
        "opens in the view of the disk"
    };
    html! { <a href={Route::Inode(ino).href()} {onclick} {title} data-testid={testid} data-ino={ino.to_string()}>{ label }</a> }
}

/// The histogram of `di_forkoff` over every inode in use, stacked by file
/// type, and the readings.
fn forkoff(
    f: &ForkoffView,
    state: &'static str,
    title: &str,
    now: bool,
    on_replay: &Callback<bool>,
) -> Html {
    let (w, h, left, bottom, top_pad) = (520.0, 240.0, 48.0, 44.0, 22.0);
    let plot_h = h - bottom - top_pad;
    let y0 = h - bottom;
    let max = f.by_value.iter().map(|(_, n)| *n).max().unwrap_or(0);
    let (top, step) = axis(fl(max));
    let n = f.by_value.len().max(1);
    #[allow(clippy::as_conversions, clippy::cast_precision_loss)]
    let slot = (w - left - 8.0) / n as f64;
    let bw = (slot * 0.6).min(44.0);
    let types: Vec<&str> = FILE_TYPES
        .iter()
        .map(|(t, _)| *t)
        .filter(|t| f.by_type.iter().any(|(x, _)| x == t))
        .chain(
            f.by_type
                .iter()
                .map(|(t, _)| t.as_str())
                .filter(|t| FILE_TYPES.iter().all(|(x, _)| x != t)),
        )
        .collect();
    let bars = f.by_value.iter().enumerate().map(|(i, (v, total))| {
        let x = left + slot * fl(u64::try_from(i).unwrap_or(0)) + (slot - bw) / 2.0;
        let mut y = y0;
        let segs = types
            .iter()
            .filter_map(|t| {
                let (_, m) = f.by_type.iter().find(|(x, _)| x == t)?;
                let (_, k) = m.iter().find(|(fv, _)| fv == v)?;
                let hgt = plot_h * fl(*k) / top;
                y -= hgt;
                Some(html! { <rect x={x.to_string()} y={y.to_string()} width={bw.to_string()} height={hgt.to_string()} fill={type_colour(t)}>
                    <title>{ format!("forkoff {v}: {k} {t}") }</title>
                </rect> })
            })
            .collect::<Vec<_>>();
        let bh = plot_h * fl(*total) / top;
        let mark = if *v == 0 {
            Some("no fork")
        } else if *v == f.default_forkoff {
            Some("default")
        } else if *v == f.max_forkoff {
            Some("small xattr")
        } else {
            None
        };
        let cx = x + bw / 2.0;
        html! { <g data-testid={format!("forkoff-bar-{state}")} data-forkoff={v.to_string()} data-inodes={total.to_string()}>
            { for segs }
            <text x={cx.to_string()} y={(y0 - bh - 4.0).to_string()} class="val">{ total }</text>
            <text x={cx.to_string()} y={(y0 + 14.0).to_string()} class="xlbl">{ v }</text>
            if let Some(m) = mark { <text x={cx.to_string()} y={(y0 + 27.0).to_string()} class="xlbl note">{ m }</text> }
        </g> }
    });
    let entries: Vec<(String, &'static str)> = types
        .iter()
        .map(|t| {
            let count: u64 = f
                .by_type
                .iter()
                .find(|(x, _)| x == t)
                .map_or(0, |(_, m)| m.iter().map(|(_, k)| *k).sum());
            (format!("{t} {count}"), type_colour(t))
        })
        .collect();
    let replayed = state == "replayed";
    html! {
        <figure class="chart forkoff" data-testid={format!("forkoff-{state}")}>
            <figcaption>{ title }{ ": " }
                <strong data-testid={format!("forkoff-inodes-{state}")}>{ f.inodes }</strong>{ " inodes in use, " }
                <strong data-testid={format!("forkoff-attr-{state}")}>{ f.with_attr_fork }</strong>{ " with an attribute fork" }
                <span class="muted">{ format!(" · default forkoff {}, {} after a small first xattr · read in {:.0} ms", f.default_forkoff, f.max_forkoff, f.ms) }</span>
            </figcaption>
            { legend(&entries) }
            <svg viewBox={format!("0 0 {w} {h}")} role="img" aria-label={format!("di_forkoff of {} inodes in use, by value and file type", f.inodes)}>
                { grid(top, step, left, w - 4.0, y0, plot_h) }
                { for bars }
                <line x1={left.to_string()} x2={(w - 4.0).to_string()} y1={y0.to_string()} y2={y0.to_string()} class="axis" />
                <text x={((left + w) / 2.0).to_string()} y={(h - 3.0).to_string()} class="xlbl">{ "di_forkoff (8-byte units after the core)" }</text>
            </svg>
            <table class="readings" data-testid={format!("forkoff-readings-{state}")}>
                <thead><tr><th>{ "reading" }</th><th class="num">{ "inodes" }</th><th>{ "for example" }</th></tr></thead>
                <tbody>
                { for f.by_reading.iter().map(|(r, n, ex)| html! {
                    <tr data-testid="forkoff-reading" data-reading={r.clone()} data-inodes={n.to_string()}>
                        <td>{ r.replace('_', " ") }</td>
                        <td class="num">{ n }</td>
                        <td class="examples">{ for ex.iter().map(|i| html! { <>{ inode_link(*i, replayed, now, on_replay, i.to_string(), "forkoff-example") }{ " " }</> }) }</td>
                    </tr>
                }) }
                </tbody>
            </table>
            if f.unreadable_count > 0 {
                <p class="warn">{ format!("{} inodes in use could not be read", f.unreadable_count) }
                    { for f.unreadable.iter().take(5).map(|(i, e)| html! { <span class="small">{ format!(" · {i}: {e}") }</span> }) }</p>
            }
            if f.crc_mismatch > 0 { <p class="warn">{ format!("{} inodes with a CRC that does not match", f.crc_mismatch) }</p> }
            for p in f.problems.iter() { <p class="warn">{ p }</p> }
        </figure>
    }
}

/// The entry an operation is about: `dir/name`, and where a rename took it.
fn entry_text(op: &OpRow) -> Option<String> {
    // The paths when the operation ran, where they are known.
    if let Some(p) = &op.path {
        let mut s = p.clone();
        if let Some(to) = &op.to_path {
            s.push_str(&format!(" → {to}"));
        } else if let Some(to) = &op.to_name {
            s.push_str(&format!(" → {to}"));
        }
        return Some(s);
    }
    if !op.links.is_empty() {
        return Some(op.links.join(", "));
    }
    let name = op.name.as_deref()?;
    let mut s = name.to_string();
    if let Some(to) = &op.to_name {
        let moved = match (op.to_dir, op.dir) {
            (Some(t), Some(d)) if t != d => format!(" (to directory {t})"),
            _ => String::new(),
        };
        s.push_str(&format!(" → {to}{moved}"));
    }
    Some(s)
}

fn op_row(op: &OpRow, now: bool, on_replay: &Callback<bool>) -> Html {
    // What exists after replay opens in the replayed view; what the
    // operation removed, in the view of the disk when it was there.
    let removal = matches!(op.kind.as_str(), "unlink" | "rmdir");
    let ino_replayed = !(removal && op.ino_on_disk == Some(true));
    let dir_replayed = !(removal && op.dir_on_disk == Some(true)) || op.dir_on_disk == Some(false);
    let why = op.why.join("; ");
    let later = if op.later_checkpoints.is_empty() {
        String::new()
    } else {
        format!(
            "finished in checkpoint {}",
            op.later_checkpoints
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    html! {
        <tr data-testid="ops-entry" data-kind={op.kind.clone()} data-ino={op.ino.to_string()} data-index={op.index.to_string()}
            data-path={op.path.clone().unwrap_or_default()} data-to-path={op.to_path.clone().unwrap_or_default()}>
            <td><span class={classes!("kind", kind_class(&op.kind))}>{ &op.kind }</span></td>
            <td class="entry">
                if let Some(d) = op.dir {
                    { inode_link(d, dir_replayed, now, on_replay, format!("dir {d}"), "ops-dir-link") }{ " / " }
                }
                if let Some(e) = entry_text(op) { <code>{ e }</code> }
            </td>
            <td class="num">{ inode_link(op.ino, ino_replayed, now, on_replay, op.ino.to_string(), "ops-ino-link") }</td>
            <td class="num">{ op.transactions }</td>
            <td class="num">{ op.items }</td>
            <td class="num" title={format!("{} bytes", op.bytes)}>{ human(op.bytes) }</td>
            <td class="why">{ why }{ if !later.is_empty() && !op.why.is_empty() { "; " } else { "" } }{ later }</td>
        </tr>
    }
}

fn checkpoint(cp: &CheckpointRow, now: bool, on_replay: &Callback<bool>) -> Html {
    let shown = u32::try_from(cp.operations.len()).unwrap_or(u32::MAX);
    let kinds = cp.kinds.iter().map(|(k, n)| {
        html! { <span class={classes!("chip", kind_class(k))}>
        { dot(kind_colour(k)) }{ format!("{k} {n}") }</span> }
    });
    let what = if cp.type_name.is_some() {
        "Transaction"
    } else {
        "Checkpoint"
    };
    html! {
        <section class="cp" data-testid="ops-checkpoint" data-index={cp.index.to_string()}>
            <h4>
                <span class="cpnum">{ format!("{what} #{}", cp.index) }</span>
                if let Some(t) = &cp.type_name { <code class="type">{ t }</code> }
                <span class="muted">{ format!(" lsn {} · tid {:#010x} · {} items · {} · {} inodes logged · {} items about no operation's inode",
                    cp.lsn, cp.tid, cp.items, human(cp.bytes), cp.inodes, cp.shared_items) }</span>
            </h4>
            <div class="chips">{ for kinds }</div>
            if cp.operations_total == 0 {
                <p class="muted small">{ "no operations found here" }</p>
            } else {
                <table class="ops-list" aria-label="the checkpoint's operations">
                    <colgroup><col class="c-kind" /><col class="c-entry" /><col class="c-ino" /><col class="c-n" /><col class="c-n" /><col class="c-bytes" /><col /></colgroup>
                    <thead><tr><th>{ "kind" }</th><th>{ "entry" }</th><th class="num">{ "inode" }</th><th class="num">{ "trans." }</th>
                        <th class="num">{ "items" }</th><th class="num">{ "bytes" }</th><th>{ "how counted" }</th></tr></thead>
                    <tbody>{ for cp.operations.iter().map(|op| op_row(op, now, on_replay)) }</tbody>
                </table>
                if shown < cp.operations_total {
                    <p class="muted small">{ format!("operations {}–{} of {} in this checkpoint",
                        cp.first_operation + 1, cp.first_operation + shown, cp.operations_total) }</p>
                }
            }
            if !cp.unexplained.is_empty() {
                <details class="unexplained" open={cp.unexplained.len() <= 5}>
                <summary class="warn small">{ format!("{} transactions on {} inodes that no operation found explains",
                    cp.unexplained.iter().map(|(_, n, _)| *n).sum::<u64>(), cp.unexplained.len()) }</summary>
                <ul class="unexplained" data-testid="ops-unexplained">
                { for cp.unexplained.iter().map(|(ino, n, why)| html! {
                    <li class="warn">{ format!("{n} transactions on inode ") }
                        { inode_link(*ino, true, now, on_replay, ino.to_string(), "ops-unexplained-link") }
                        { format!(" that no operation explains: {why}") }</li>
                }) }
                </ul>
                </details>
            }
        </section>
    }
}

fn timeline(t: &OpsTimelineView, now: bool, on_replay: &Callback<bool>) -> Html {
    let link = |to: (u32, u32), label: &str, testid: &str| {
        html! { <a href={Route::Ops { start: to.0, skip: to.1 }.href()} data-testid={testid.to_string()}>{ label.to_string() }</a> }
    };
    let range = match (t.checkpoints.first(), t.checkpoints.last()) {
        (Some(a), Some(b)) if a.index == b.index => {
            format!(" checkpoint {} of {} ", a.index, t.total)
        }
        (Some(a), Some(b)) => format!(" checkpoints {}–{} of {} ", a.index, b.index, t.total),
        _ => " no checkpoints ".to_string(),
    };
    let pager = html! {
        <p class="pager" data-testid="ops-pager">
            if let Some(p) = t.prev { { link(p, "← previous", "ops-prev") } }
            <span class="muted">{ range }</span>
            if let Some(n) = t.next { { link(n, "next →", "ops-next") } }
        </p>
    };
    html! {
        <div class="timeline" data-testid="ops-timeline" data-page={format!("{}/{}", t.start, t.skip)}>
            { pager.clone() }
            { for t.checkpoints.iter().map(|c| checkpoint(c, now, on_replay)) }
            if t.checkpoints.len() > 1 { { pager } }
        </div>
    }
}

#[function_component(OpsPanel)]
pub fn ops_panel(props: &Props) -> Html {
    let o = &props.ops;
    let now = props.replayed;
    let on_replay = &props.on_replay;
    let table = html! {
        <table class="op-kinds" data-testid="op-kinds">
            <thead><tr><th>{ "operation" }</th>
                { for ["count", "transactions", "items", "bytes"].into_iter().map(|c| html! { <th class="num" title={explain::operations_column(c)}>{ c }</th> }) }
                </tr></thead>
            <tbody>
            { for o.kinds.iter().map(|k| html! {
                <tr data-testid="op-kind" data-kind={k.kind.clone()}>
                    <td title={explain::operation(&k.kind)}>{ dot(kind_colour(&k.kind)) }{ &k.kind }</td>
                    <td class="num" data-testid={format!("op-count-{}", k.kind)}>{ k.operations }</td>
                    <td class="num" data-testid={format!("op-transactions-{}", k.kind)}>{ k.transactions }</td>
                    <td class="num">{ k.items }</td>
                    <td class="num" title={format!("{} bytes", k.bytes)}>{ human(k.bytes) }</td>
                </tr>
            }) }
            { for o.other_transactions.iter().map(|(name, n)| html! {
                <tr class="other" data-testid="op-other" data-type={name.clone()}>
                    <td class="muted">{ name.to_ascii_lowercase() }</td><td class="num muted">{ "–" }</td>
                    <td class="num">{ n }</td><td></td><td></td>
                </tr>
            }) }
            </tbody>
        </table>
    };
    let timeline_html = match &props.timeline {
        Some(t) if t.start == props.start && t.skip == props.skip => timeline(t, now, on_replay),
        _ => html! { <p class="muted">{ "reading the timeline…" }</p> },
    };
    let replay_hint = {
        let cb = on_replay.clone();
        let onclick = Callback::from(move |_: MouseEvent| cb.emit(true));
        html! { <p class="muted forkoff-hint">{ "The distribution after replay shows with the replayed view: " }
        <button {onclick} data-testid="ops-show-replayed">{ "replay the log" }</button></p> }
    };
    let (form, how) = match o.log_form.as_str() {
        "typed" => (
            "transactions that name their type",
            "counted by the type each transaction names",
        ),
        "mixed" => (
            "checkpoints and typed transactions",
            "counted by type where transactions name it, elsewhere from the inodes' change counts, directory entries and attribute names each checkpoint logged",
        ),
        _ => (
            "checkpoints (delayed logging)",
            "from the inodes' change counts, directory entries and attribute names each checkpoint logged",
        ),
    };
    html! {
        <section class="ops" data-testid="ops-view">
            <h2>{ "Operations in the log" }</h2>
            if let Some(e) = &o.error {
                <div class="error" data-testid="ops-error" role="alert">{ format!("The operations of the log could not be reconstructed: {e}") }</div>
            } else if o.clean {
                <p data-testid="ops-clean">{ "The log is clean: it carries no operations." }</p>
            } else {
                <p class="muted" data-testid="ops-summary">{ format!("{} {form} · {} operations · {} log items · {} · reconstructed in {:.0} ms, {how}",
                    o.checkpoints, o.operations, o.items, human(o.bytes), o.analyze_ms) }</p>
                <div class="ops-top">
                    <div>
                        { table }
                        <details class="glossary" data-testid="ops-glossary">
                            <summary>{ "What each operation is, and what it costs" }</summary>
                            <dl>
                            { for o.kinds.iter().map(|k| html! {
                                <>
                                    <dt data-kind={k.kind.clone()}>{ &k.kind }</dt>
                                    <dd>{ explain::operation(&k.kind) }</dd>
                                </>
                            }) }
                            </dl>
                        </details>
                        if o.unexplained_transactions > 0 {
                            <p class="warn small" data-testid="ops-unexplained-total">{ format!("{} transactions seen in change counts that no operation explains", o.unexplained_transactions) }</p>
                        }
                    </div>
                    { kinds_chart(o) }
                </div>
                <div class="ops-charts">
                    { checkpoints_chart(o) }
                    { item_types_chart(o) }
                </div>
                if !o.notes.is_empty() {
                    <ul class="notes" data-testid="ops-notes">{ for o.notes.iter().map(|n| html! { <li class="muted">{ n }</li> }) }</ul>
                }
            }
            <h3>{ "Where attribute forks start" }</h3>
            <div class="ops-charts">
                { for o.forkoff.as_ref().map(|f| forkoff(f, "disk", "On disk", now, on_replay)) }
                { match &o.forkoff_replayed {
                    Some(f) => forkoff(f, "replayed", "After replay", now, on_replay),
                    None if !o.clean => replay_hint,
                    None => html! {},
                } }
            </div>
            if o.error.is_none() && !o.clean {
                <h3>{ "Timeline" }</h3>
                { timeline_html }
            }
        </section>
    }
}
