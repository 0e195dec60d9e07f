//! The map of one allocation group, drawn from its headers and trees: each
//! row of the picture is a run of AG blocks, each range a coloured bar
//! that names itself on hover and opens its blocks (or its inodes) on a
//! click or Enter. Zoom shows fewer blocks per row.

use crate::web::page::route::Route;
use crate::xfs::agmap::{AgMap, Range, RangeKind};
use std::rc::Rc;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub map: Rc<AgMap>,
    /// The number of AGs, for the links to the others.
    pub agcount: u32,
}

/// Picture width in SVG units.
const W: f64 = 960.0;
const ROW_H: f64 = 16.0;
const GAP: f64 = 6.0;
/// Rows the whole AG takes at zoom 1.
const ROWS: u32 = 32;

fn kind_class(k: RangeKind) -> &'static str {
    match k {
        RangeKind::Headers => "k-headers",
        RangeKind::Free => "k-free",
        RangeKind::InodeChunk => "k-inodes",
        RangeKind::BtreeBlock => "k-btree",
        RangeKind::Agfl => "k-agfl",
        RangeKind::Log => "k-log",
        RangeKind::Owned => "k-owned",
        RangeKind::Shared => "k-shared",
    }
}

fn kind_label(k: RangeKind) -> &'static str {
    match k {
        RangeKind::Headers => "AG headers",
        RangeKind::Free => "free space (bnobt)",
        RangeKind::InodeChunk => "inode chunk (inobt)",
        RangeKind::BtreeBlock => "btree block",
        RangeKind::Agfl => "AGFL block",
        RangeKind::Log => "internal log",
        RangeKind::Owned => "owner (rmapbt)",
        RangeKind::Shared => "shared (refcountbt)",
    }
}

fn testid(k: RangeKind) -> &'static str {
    match k {
        RangeKind::Headers => "ag-map-headers",
        RangeKind::Free => "ag-map-free",
        RangeKind::InodeChunk => "ag-map-inode-chunk",
        RangeKind::BtreeBlock => "ag-map-btree-block",
        RangeKind::Agfl => "ag-map-agfl",
        RangeKind::Log => "ag-map-log",
        RangeKind::Owned => "ag-map-owned",
        RangeKind::Shared => "ag-map-shared",
    }
}

fn go(hash: String) {
    if let Some(w) = web_sys::window() {
        let _ = w.location().set_hash(&hash);
    }
}

/// Where a range leads: its inodes, or the hex of its first block.
fn target(map: &AgMap, r: &Range) -> String {
    match (r.kind, r.ino) {
        (RangeKind::InodeChunk | RangeKind::Owned, Some(ino)) => Route::Inode(ino).href(),
        _ => {
            let per_block = u64::from(map.blocksize / 512).max(1);
            Route::Hex(
                map.daddr
                    .saturating_add(u64::from(r.agbno).saturating_mul(per_block)),
            )
            .href()
        }
    }
}

/// The bars of one range over the rows of the window.
#[allow(clippy::as_conversions, clippy::cast_precision_loss)]
fn bars(r: &Range, first: u64, per_row: u64, rows: u32, y0: f64, h: f64) -> Html {
    let start = u64::from(r.agbno);
    let end = start.saturating_add(u64::from(r.len.max(1)));
    let win_end = first.saturating_add(per_row.saturating_mul(u64::from(rows)));
    if end <= first || start >= win_end {
        return html! {};
    }
    let (s, e) = (start.max(first), end.min(win_end));
    let mut out = Vec::new();
    let mut row = (s - first) / per_row;
    while row < u64::from(rows) {
        let row_start = first.saturating_add(row.saturating_mul(per_row));
        let row_end = row_start.saturating_add(per_row);
        if row_start >= e {
            break;
        }
        let a = s.max(row_start) - row_start;
        let b = e.min(row_end) - row_start;
        let x = a as f64 / per_row as f64 * W;
        let w = ((b - a) as f64 / per_row as f64 * W).max(1.5);
        let y = y0 + row as f64 * (ROW_H + GAP);
        out.push(html! { <rect x={format!("{x:.2}")} y={format!("{y:.2}")} width={format!("{w:.2}")} height={format!("{h:.2}")} /> });
        row += 1;
    }
    html! { { for out } }
}

#[function_component(AgMapView)]
pub fn ag_map_view(props: &Props) -> Html {
    let zoom = use_state(|| (1u32, 0u64));
    let map = &props.map;
    let length = u64::from(map.length.max(1));
    let (z, first) = *zoom;
    let per_row = length
        .div_ceil(u64::from(ROWS).saturating_mul(u64::from(z)))
        .max(1);
    let span = per_row.saturating_mul(u64::from(ROWS));
    let first = first.min(length.saturating_sub(1));
    let rows = u32::try_from(
        length
            .saturating_sub(first)
            .div_ceil(per_row)
            .min(u64::from(ROWS)),
    )
    .unwrap_or(ROWS)
    .max(1);
    #[allow(clippy::as_conversions, clippy::cast_precision_loss)]
    let height = f64::from(rows) * (ROW_H + GAP);
    let owners = map
        .ranges
        .iter()
        .any(|r| matches!(r.kind, RangeKind::Owned | RangeKind::Shared));
    let draw = |layer: &dyn Fn(RangeKind) -> bool, y0: f64, h: f64| -> Html {
        html! { { for map.ranges.iter().filter(|r| layer(r.kind)).map(|r| {
            let href = target(map, r);
            let onclick = { let href = href.clone(); Callback::from(move |_: MouseEvent| go(href.clone())) };
            let onkeydown = { let href = href.clone(); Callback::from(move |e: KeyboardEvent| if e.key() == "Enter" { go(href.clone()) }) };
            let label = format!("AG block {}{}: {}", r.agbno, if r.len > 1 { format!("-{}", u64::from(r.agbno) + u64::from(r.len) - 1) } else { String::new() }, r.label);
            html! {
                <g class={classes!("range", kind_class(r.kind), r.sparse.then_some("sparse"))}
                   data-testid={testid(r.kind)} data-agbno={r.chunk_agbno.to_string()} data-len={r.len.to_string()}
                   data-start={r.agbno.to_string()} tabindex="0" role="link" aria-label={label.clone()}
                   {onclick} {onkeydown}>
                    <title>{ label }</title>
                    { bars(r, first, per_row, rows, y0, h) }
                </g>
            }
        }) } }
    };
    let grid = {
        let mut v = Vec::new();
        for row in 0..rows {
            #[allow(clippy::as_conversions, clippy::cast_precision_loss)]
            let y = f64::from(row) * (ROW_H + GAP);
            let blk = first.saturating_add(u64::from(row).saturating_mul(per_row));
            v.push(html! { <>
                <rect class="row-bg" x="0" y={format!("{y:.2}")} width={W.to_string()} height={ROW_H.to_string()} />
                <text class="row-label" x={(W + 6.0).to_string()} y={format!("{:.2}", y + ROW_H - 4.0)}>{ blk.to_string() }</text>
            </> });
        }
        html! { { for v } }
    };
    let space = |k: RangeKind| !matches!(k, RangeKind::Owned | RangeKind::Shared);
    let zoom_in = {
        let zoom = zoom.clone();
        Callback::from(move |_: MouseEvent| {
            let (z, f) = *zoom;
            zoom.set((z.saturating_mul(2).min(4096), f));
        })
    };
    let zoom_out = {
        let zoom = zoom.clone();
        Callback::from(move |_: MouseEvent| {
            let (z, f) = *zoom;
            let z = (z / 2).max(1);
            zoom.set((z, if z == 1 { 0 } else { f }));
        })
    };
    let pan = |dir: i8| {
        let zoom = zoom.clone();
        Callback::from(move |_: MouseEvent| {
            let (z, f) = *zoom;
            let f = if dir < 0 {
                f.saturating_sub(span / 2)
            } else {
                f.saturating_add(span / 2).min(length.saturating_sub(1))
            };
            zoom.set((z, f));
        })
    };
    let mut counts: std::collections::BTreeMap<&'static str, (u64, u64)> = Default::default();
    for r in &map.ranges {
        let c = counts.entry(kind_label(r.kind)).or_insert((0, 0));
        c.0 += 1;
        c.1 += u64::from(r.len);
    }
    let legend = [
        RangeKind::Headers,
        RangeKind::Log,
        RangeKind::BtreeBlock,
        RangeKind::Agfl,
        RangeKind::InodeChunk,
        RangeKind::Free,
    ]
    .into_iter()
    .chain(
        owners
            .then_some([RangeKind::Owned, RangeKind::Shared])
            .into_iter()
            .flatten(),
    );
    #[allow(clippy::as_conversions, clippy::cast_precision_loss)]
    let svg_h = height + 4.0;
    html! {
        <section class="ag-map-view">
            <h2>{ format!("AG {} map", map.agno) }
                <span class="muted">{ format!(" · {} blocks of {} bytes · {} blocks per row", map.length, map.blocksize, per_row) }</span>
            </h2>
            <p class="explain">{ "Each row is a run of blocks of this allocation group, from its first block (the headers) on the left of the top row to its last. Free space comes from the bnobt, inode chunks from the inobt (a sparse chunk shows only the parts on disk), btree blocks from walking every tree of the AG. Hover a range to name it; click it (or Tab to it and press Enter) to open its inodes or its bytes." }</p>
            <div class="ag-nav">
                { for (0..props.agcount.min(64)).map(|a| html! {
                    <a class={classes!("tab", (a == map.agno).then_some("active"))} href={Route::AgMap(a).href()}>{ format!("AG {a}") }</a>
                }) }
                <span class="zoom">
                    <button data-testid="ag-map-zoom-out" onclick={zoom_out} disabled={z == 1}>{ "−" }</button>
                    <span class="muted">{ format!(" zoom {z}× ") }</span>
                    <button data-testid="ag-map-zoom-in" onclick={zoom_in}>{ "+" }</button>
                    <button onclick={pan(-1)} disabled={z == 1 || first == 0}>{ "◀" }</button>
                    <button onclick={pan(1)} disabled={z == 1 || first.saturating_add(span) >= length}>{ "▶" }</button>
                </span>
            </div>
            <ul class="legend" aria-label="legend">
                { for legend.map(|k| {
                    let (n, blocks) = counts.get(kind_label(k)).copied().unwrap_or((0, 0));
                    html! { <li><span class={classes!("swatch", kind_class(k))}></span>{ format!("{} ({n}, {blocks} blocks)", kind_label(k)) }</li> }
                }) }
            </ul>
            <svg class="ag-map" data-testid="ag-map" role="img" aria-label={format!("map of AG {}", map.agno)}
                 viewBox={format!("0 0 {} {svg_h:.0}", W + 70.0)} data-agno={map.agno.to_string()} data-length={map.length.to_string()}>
                { grid }
                { draw(&space, 0.0, ROW_H) }
            </svg>
            if owners {
                <h3>{ "Owners (rmapbt) and shared ranges (refcountbt)" }</h3>
                <svg class="ag-map owners" data-testid="ag-map-owners" role="img" aria-label={format!("owners in AG {}", map.agno)}
                     viewBox={format!("0 0 {} {svg_h:.0}", W + 70.0)}>
                    { grid_only(rows, first, per_row) }
                    { draw(&|k| k == RangeKind::Owned, 0.0, ROW_H) }
                    { draw(&|k| k == RangeKind::Shared, ROW_H * 0.6, ROW_H * 0.4) }
                </svg>
            }
            if !map.truncated.is_empty() {
                <p class="warn">{ format!("Only the first {} ranges of some kinds are drawn.", crate::xfs::agmap::MAX_RANGES_PER_KIND) }</p>
            }
            if !map.problems.is_empty() {
                <ul class="problems">{ for map.problems.iter().map(|p| html! { <li class="bad">{ p }</li> }) }</ul>
            }
            <p class="muted">
                { "Records of its btrees: " }
                { for ["bno", "cnt", "ino", "fino", "rmap", "refcount"].iter().map(|t| html! {
                    <><a data-testid="ag-map-tree-link" href={Route::AgTree { agno: map.agno, tree: (*t).to_string(), start: 0 }.href()}>{ *t }</a>{ " " }</>
                }) }
                { " · Headers as bytes: " }
                <a href={Route::Hex(map.daddr).href()}>{ "superblock" }</a>{ " · " }
                <a href={Route::Hex(map.daddr.saturating_add(hdr_step(map))).href()}>{ "AGF" }</a>{ " · " }
                <a href={Route::Hex(map.daddr.saturating_add(2 * hdr_step(map))).href()}>{ "AGI" }</a>{ " · " }
                <a href={Route::Hex(map.daddr.saturating_add(3 * hdr_step(map))).href()}>{ "AGFL" }</a>
            </p>
        </section>
    }
}

/// Sectors between AG headers (one sector each).
fn hdr_step(map: &AgMap) -> u64 {
    u64::from(map.sectsize / 512).max(1)
}

fn grid_only(rows: u32, first: u64, per_row: u64) -> Html {
    let mut v = Vec::new();
    for row in 0..rows {
        let y = f64::from(row) * (ROW_H + GAP);
        let blk = first.saturating_add(u64::from(row).saturating_mul(per_row));
        v.push(html! { <>
            <rect class="row-bg" x="0" y={format!("{y:.2}")} width={W.to_string()} height={ROW_H.to_string()} />
            <text class="row-label" x={(W + 6.0).to_string()} y={format!("{:.2}", y + ROW_H - 4.0)}>{ blk.to_string() }</text>
        </> });
    }
    html! { { for v } }
}
