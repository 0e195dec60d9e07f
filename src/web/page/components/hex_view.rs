//! The bytes of a sector or block with every field of the structure there
//! outlined: hovering or selecting a field (in the list, or by clicking one
//! of its bytes) highlights its bytes and shows its name, offset, size,
//! value and meaning.

use crate::web::page::route::Route;
use crate::xfs::hexmap::{HexBlock, HexField, Link};
use std::rc::Rc;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub hex: Rc<HexBlock>,
    /// Views show the replayed state.
    pub replayed: bool,
    /// The log has been decoded (so `hex.logged` says all the log holds
    /// of this block).
    pub log_decoded: bool,
    /// Decode the log and look for this block in it.
    pub on_find_in_log: Callback<()>,
}

/// Bytes drawn at once: a larger block (a 64 KiB directory block) is drawn
/// a window of this many bytes at a time.
const WINDOW: usize = 16_384;
const PER_ROW: usize = 16;

#[function_component(HexView)]
pub fn hex_view(props: &Props) -> Html {
    let selected = use_state(|| None::<usize>);
    let hovered = use_state(|| None::<usize>);
    // Which logged copy's dirty runs are drawn over the bytes.
    let copy = use_state(|| 0usize);
    // Which window of WINDOW bytes is drawn.
    let window = use_state(|| 0usize);
    let hex = &props.hex;
    let windows = hex.bytes.len().div_ceil(WINDOW).max(1);
    let win = (*window).min(windows - 1);
    let first = win * WINDOW;
    let runs: Vec<(usize, usize)> = hex
        .logged
        .get(*copy)
        .map(|c| {
            c.runs
                .iter()
                .map(|(a, n)| {
                    (
                        usize::try_from(*a).unwrap_or(usize::MAX),
                        usize::try_from(*n).unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let dirty = |o: usize| {
        runs.iter()
            .any(|(a, n)| o >= *a && o < a.saturating_add(*n))
    };
    // The bytes drawn: [first, shown).
    let shown = hex.bytes.len().min(first.saturating_add(WINDOW));
    // Which field each drawn byte belongs to (the first that covers it),
    // indexed from `first`.
    let mut owner: Vec<Option<usize>> = vec![None; shown.saturating_sub(first)];
    for (i, f) in hex.fields.iter().enumerate() {
        let a = usize::try_from(f.offset).unwrap_or(usize::MAX);
        let b = a
            .saturating_add(usize::try_from(f.size).unwrap_or(0))
            .min(shown);
        for o in owner
            .iter_mut()
            .take(b.saturating_sub(first))
            .skip(a.saturating_sub(first))
        {
            if o.is_none() {
                *o = Some(i);
            }
        }
    }
    let owner_of = |o: usize| {
        o.checked_sub(first)
            .and_then(|k| owner.get(k).copied().flatten())
    };
    let active = (*hovered).or(*selected);
    // The window a field starts in.
    let window_of = |i: usize| {
        hex.fields
            .get(i)
            .and_then(|f| usize::try_from(f.offset).ok())
            .map(|o| o / WINDOW)
    };
    let pick = |i: Option<usize>| {
        let selected = selected.clone();
        let window = window.clone();
        let to = i.and_then(window_of);
        Callback::from(move |_: MouseEvent| {
            selected.set(i);
            if let Some(w) = to {
                window.set(w);
            }
        })
    };
    let hover = |i: Option<usize>| {
        let hovered = hovered.clone();
        Callback::from(move |_: MouseEvent| hovered.set(i))
    };
    let rows = shown.saturating_sub(first).div_ceil(PER_ROW);
    let grid = (0..rows).map(|r| {
        let base = first + r * PER_ROW;
        let cells = (base..(base + PER_ROW).min(shown)).map(|o| {
            let f = owner_of(o);
            let prev = o.checked_sub(1).and_then(owner_of);
            let next = owner_of(o + 1);
            let class = classes!(
                "b",
                f.map(|i| if i % 2 == 0 { "f0" } else { "f1" }),
                (f.is_some() && prev != f).then_some("fs"),
                (f.is_some() && next != f).then_some("fe"),
                (f.is_some() && f == active).then_some("hl"),
                dirty(o).then_some("dirty"),
            );
            let byte = hex.bytes.get(o).copied().unwrap_or(0);
            html! { <span {class} data-o={o.to_string()} onclick={pick(f)}>{ format!("{byte:02x}") }</span> }
        });
        let text: String = hex
            .bytes
            .get(base..(base + PER_ROW).min(shown))
            .unwrap_or(&[])
            .iter()
            .map(|c| if c.is_ascii_graphic() || *c == b' ' { char::from(*c) } else { '.' })
            .collect();
        html! {
            <div class="hrow">
                <span class="hoff">{ if hex.bytes.len() > 0x1_0000 { format!("{base:05x}") } else { format!("{base:04x}") } }</span>
                <span class="hbytes">{ for cells }</span>
                <span class="hascii">{ text }</span>
            </div>
        }
    });
    let detail = active.and_then(|i| hex.fields.get(i)).map(|f| {
        html! {
            <div class="hex-detail" data-testid="hex-detail" aria-live="polite">
                <strong><code>{ &f.name }</code></strong>
                <span class="muted">{ format!(" · {} · offset {} (0x{:x}), {} byte{}", f.group, f.offset, f.offset, f.size, if f.size == 1 { "" } else { "s" }) }</span>
                <div>{ "value: " }<code>{ &f.value }</code></div>
                <div>{ "raw: " }<code>{ raw_of(hex, f.offset, f.size) }</code></div>
                <div class="meaning">{ &f.meaning }</div>
            </div>
        }
    });
    let step = u64::try_from(hex.bytes.len() / 512).unwrap_or(1).max(1);
    // Sectors around this one, on the same device.
    let at = |d: u64| {
        if hex.log_device {
            Route::LogHex(d)
        } else {
            Route::Hex(d)
        }
        .href()
    };
    let device = if hex.log_device {
        "log device"
    } else {
        "device"
    };
    // Buffer items log data-device blocks only.
    let loggable = !hex.log_device;
    html! {
        <section class="hex" data-testid="hex-view" data-daddr={hex.daddr.to_string()}>
            <h2>{ format!("daddr {}: {}", hex.daddr, hex.structure) }
                <span class="muted">{ format!(" · {} bytes at byte {} of the {}{}", hex.bytes.len(), hex.daddr.saturating_mul(512), device, if props.replayed { " · replayed state" } else { " · on disk" }) }</span>
            </h2>
            if !hex.explanation.is_empty() { <p class="explain">{ &hex.explanation }</p> }
            { picture(hex) }
            <p class="hex-nav">
                if hex.daddr > 0 {
                    <a href={at(hex.daddr.saturating_sub(1))}>{ "◀ previous sector" }</a>{ " · " }
                }
                <a href={at(hex.daddr.saturating_add(1))}>{ "next sector ▶" }</a>
                if step > 1 { { " · " }<a href={at(hex.daddr.saturating_add(step))}>{ format!("after this block (daddr {}) ▶", hex.daddr.saturating_add(step)) }</a> }
            </p>
            { for hex.notes.iter().map(|n| html! { <p class="warn">{ n }</p> }) }
            if loggable && hex.logged.is_empty() && !props.log_decoded {
                <p class="muted">
                    <button data-testid="hex-find-in-log" onclick={ let cb = props.on_find_in_log.clone(); Callback::from(move |_: MouseEvent| cb.emit(())) }>{ "look for this block in the log" }</button>
                    { " (decodes the log: the buffer items that log this block, with their dirty runs)" }
                </p>
            }
            if loggable && hex.logged.is_empty() && props.log_decoded {
                <p class="muted" data-testid="hex-not-logged">{ "No buffer item of the log logs this block." }</p>
            }
            if !hex.logged.is_empty() {
                <div class="hex-logged" data-testid="hex-logged">
                    <strong>{ "In the log: " }</strong>
                    { format!("{} buffer item{} log this block. The underlined bytes are the 128-byte chunks the selected one marked dirty: only those were copied into the log, and replay writes only those back. ", hex.logged.len(), if hex.logged.len() == 1 { "" } else { "s" }) }
                    <span class="copies">
                    { for hex.logged.iter().enumerate().map(|(i, c)| {
                        let onclick = { let copy = copy.clone(); Callback::from(move |_: MouseEvent| copy.set(i)) };
                        html! { <button class={classes!((i == *copy).then_some("active"))} aria-pressed={(i == *copy).to_string()} {onclick}>{ format!("transaction #{} item {}", c.tx, c.item) }</button> }
                    }) }
                    </span>
                    if let Some(c) = hex.logged.get(*copy) {
                        <ul class="runs">
                        { for c.runs.iter().zip(c.labels.iter().map(Some).chain(std::iter::repeat(None))).map(|((a, n), l)| html! {
                            <li data-testid="hex-dirty-run" data-offset={a.to_string()} data-size={n.to_string()}>
                                { format!("bytes {}-{} (chunks {}-{})", a, a.saturating_add(*n).saturating_sub(1), a / 128, (a.saturating_add(*n) / 128).saturating_sub(1)) }
                                if let Some(l) = l { <span class="muted">{ format!(": {l}") }</span> }
                            </li>
                        }) }
                        </ul>
                        <a href={Route::Log(Some(c.tx)).href()}>{ format!("open transaction #{}", c.tx) }</a>
                    }
                </div>
            }
            <div class="hex-cols">
                <div class="hex-grid" role="grid" aria-label="bytes" onmouseleave={hover(None)}>
                    if windows > 1 {
                        <p class="hex-windows" data-testid="hex-windows">
                            { format!("{} bytes, drawn {WINDOW} at a time: ", hex.bytes.len()) }
                            { for (0..windows).map(|w| {
                                let a = w * WINDOW;
                                let b = hex.bytes.len().min(a + WINDOW).saturating_sub(1);
                                let onclick = { let window = window.clone(); Callback::from(move |_: MouseEvent| window.set(w)) };
                                html! { <button data-testid="hex-window" data-first={a.to_string()} class={classes!((w == win).then_some("active"))}
                                    aria-pressed={(w == win).to_string()} {onclick}>{ format!("{a}-{b}") }</button> }
                            }) }
                        </p>
                    }
                    { for grid }
                </div>
                <div class="hex-side">
                    { detail.unwrap_or_else(|| html! { <p class="muted hex-detail">{ "Hover a field or click a byte to see what it is." }</p> }) }
                    <table class="hex-fields" aria-label="fields" data-keynav="list">
                        <thead><tr><th>{ "field" }</th><th>{ "offset" }</th><th>{ "size" }</th><th>{ "value" }</th></tr></thead>
                        <tbody>
                        { for hex.fields.iter().enumerate().map(|(i, f)| html! {
                            <tr class={classes!((Some(i) == active).then_some("hl"))}
                                data-testid={format!("hex-field-{}", f.name)} data-offset={f.offset.to_string()} data-size={f.size.to_string()}
                                title={f.meaning.clone()} tabindex="0"
                                onmouseenter={hover(Some(i))} onmouseleave={hover(None)} onclick={pick(Some(i))}
                                onfocus={ let s = selected.clone(); let w = window.clone(); let to = window_of(i); Callback::from(move |_: FocusEvent| { s.set(Some(i)); if let Some(t) = to { w.set(t); } }) }>
                                <td><code>{ &f.name }</code></td>
                                <td class="num">{ f.offset }</td>
                                <td class="num">{ f.size }</td>
                                <td class="text">{ match f.link {
                                    Some(Link::Inode(i)) => html! { <a href={Route::Inode(i).href()} title={format!("open inode {i}")}>{ &f.value }</a> },
                                    Some(Link::Daddr(d)) => html! { <a href={Route::Hex(d).href()} title={format!("open daddr {d}")}>{ &f.value }</a> },
                                    None => html! { { &f.value } },
                                } }</td>
                            </tr>
                        }) }
                        </tbody>
                    </table>
                </div>
            </div>
        </section>
    }
}

fn raw_of(hex: &HexBlock, offset: u32, size: u32) -> String {
    let a = usize::try_from(offset).unwrap_or(usize::MAX);
    let b = a.saturating_add(usize::try_from(size.min(64)).unwrap_or(0));
    let s: String = hex
        .bytes
        .get(a..b.min(hex.bytes.len()))
        .unwrap_or(&[])
        .iter()
        .map(|x| format!("{x:02x} "))
        .collect();
    if size > 64 {
        format!("{s}…")
    } else {
        s.trim_end().to_string()
    }
}

/// What a field group is, for the picture of the block.
fn region(f: &HexField) -> (&'static str, &'static str) {
    let g = f.group.as_str();
    if g.contains("header")
        || g == "superblock"
        || g == "agf"
        || g == "agi"
        || g == "agfl"
        || g.ends_with(" core")
    {
        ("r-header", "header")
    } else if g == "unused" {
        ("r-free", "free space in the block")
    } else if g.contains("tail") {
        ("r-tail", "tail")
    } else if g == "pointers" {
        ("r-ptrs", "pointers")
    } else if g == "keys" || g.contains("leaf entries") || g.contains("node entries") {
        ("r-keys", "hashes and keys")
    } else if g.contains("forks") {
        ("r-fork", "fork")
    } else {
        ("r-entries", "entries and records")
    }
}

/// The block drawn as one bar: header, entries or records, keys,
/// pointers, free space and tail where the fields say they are.
#[allow(clippy::as_conversions, clippy::cast_precision_loss)]
fn picture(hex: &HexBlock) -> Html {
    const W: f64 = 960.0;
    let len = hex.bytes.len().max(1) as f64;
    let mut segs: Vec<(u32, u32, &'static str, &'static str, String)> = Vec::new();
    let mut fields: Vec<&HexField> = hex.fields.iter().collect();
    crate::xfs::sort::by_key(&mut fields, |f| u128::from(f.offset));
    for f in fields {
        let (class, label) = region(f);
        let end = f.offset.saturating_add(f.size);
        match segs.last_mut() {
            Some(last) if last.2 == class && last.1 >= f.offset.saturating_sub(8) => {
                last.1 = last.1.max(end)
            }
            _ => segs.push((f.offset, end, class, label, f.group.clone())),
        }
    }
    if segs.is_empty() {
        return html! {};
    }
    let mut seen: Vec<(&'static str, &'static str)> = Vec::new();
    for s in &segs {
        if !seen.iter().any(|(c, _)| *c == s.2) {
            seen.push((s.2, s.3));
        }
    }
    html! {
        <figure class="block-pic" data-testid="block-picture">
            <svg viewBox={format!("0 0 {W} 30")} preserveAspectRatio="none" role="img" aria-label="the block's regions">
                <rect class="r-none" x="0" y="0" width={W.to_string()} height="30" />
                { for segs.iter().map(|(a, b, class, label, group)| {
                    let x = f64::from(*a) / len * W;
                    let w = (f64::from(b.saturating_sub(*a)) / len * W).max(1.0);
                    html! { <rect class={*class} x={format!("{x:.2}")} y="0" width={format!("{w:.2}")} height="30">
                        <title>{ format!("{label} ({group}): bytes {a}-{}", b.saturating_sub(1)) }</title></rect> }
                }) }
            </svg>
            <figcaption>
                <ul class="legend">
                    { for seen.iter().map(|(c, l)| html! { <li><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true"><rect class={*c} width="10" height="10" /></svg>{ *l }</li> }) }
                    <li><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true"><rect class="r-none" width="10" height="10" /></svg>{ "no field (unused or not decoded)" }</li>
                </ul>
            </figcaption>
        </figure>
    }
}
