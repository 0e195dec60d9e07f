//! What holds the filesystem: the qcow2 layers and the partition table,
//! the disk drawn to scale as a bar with its partitions on it (the opened
//! one highlighted), and a row per partition. XFS partitions can be opened
//! from here.

use crate::xfs::container::{Layout, Partition};
use crate::xfs::sb::human_bytes;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub layout: Layout,
    /// Why no partition is open yet (several XFS partitions, or none).
    #[prop_or_default]
    pub message: Option<String>,
    /// Open partition N.
    pub on_pick: Callback<u32>,
}

/// The drawing's width in SVG units.
const WIDTH: f64 = 1000.0;

#[allow(clippy::as_conversions, clippy::cast_precision_loss)]
fn frac(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        (n as f64 / of as f64).clamp(0.0, 1.0)
    }
}

fn kind(p: &Partition, opened: Option<u32>) -> &'static str {
    if opened == Some(p.number) {
        "part chosen"
    } else if p.xfs {
        "part xfs"
    } else if p.extended {
        "part extended"
    } else {
        "part other"
    }
}

#[function_component(PartitionMap)]
pub fn partition_map(props: &Props) -> Html {
    let l = &props.layout;
    let layers = l.qcow2.iter().map(|q| {
        html! {
            <li data-testid="qcow2-layer">
                { format!("qcow2 version {}: a {} guest disk in {}-byte clusters, {} in the file", q.version, human_bytes(q.virtual_size), q.cluster_size, human_bytes(q.file_size)) }
                if q.extended_l2 { { " (extended L2 entries)" } }
                { for q.notes.iter().map(|n| html! { <span class="warn">{ format!(" · {n}") }</span> }) }
            </li>
        }
    });
    let metadump = l.metadump.as_ref().map(|m| {
        let flag = |v: Option<bool>, yes: &str, no: &str| match v {
            Some(true) => yes.to_string(),
            Some(false) => no.to_string(),
            None => "flags unknown".to_string(),
        };
        html! {
            <li data-testid="metadump-layer" data-version={m.version.to_string()}
                data-obfuscated={m.obfuscated.map(|o| o.to_string()).unwrap_or_default()}
                data-dirty-log={m.dirty_log.map(|o| o.to_string()).unwrap_or_default()}>
                { format!("xfs_metadump version {}: {}, {} log; it holds {} of the filesystem's {}", m.version,
                    flag(m.obfuscated, "names obfuscated", "names as they were"), flag(m.dirty_log, "dirty", "clean"),
                    human_bytes(m.bytes_held), human_bytes(m.fs_size)) }
                { for m.notes.iter().map(|n| html! { <div class="warn">{ n }</div> }) }
            </li>
        }
    });
    let Some(t) = &l.table else {
        return html! {
            <section class="partitions" data-testid="partitions">
                <h2>{ "Image: " }<span data-testid="container-chain">{ l.chain() }</span></h2>
                <ul class="layers">{ for layers }{ for metadump }</ul>
            </section>
        };
    };
    let disk = t.disk_size;
    // Extended partitions under their logical ones.
    let mut order: Vec<&Partition> = t.partitions.iter().collect();
    crate::xfs::sort::by_key(&mut order, |p| u128::from(!p.extended));
    let bars = order.iter().map(|p| {
        let x = WIDTH * frac(p.start, disk);
        let w = (WIDTH * frac(p.size, disk)).max(2.0);
        let (y, h) = if p.extended { (6.0, 48.0) } else { (12.0, 36.0) };
        let number = p.number;
        let pick = props.on_pick.clone();
        let onclick = p.xfs.then(|| Callback::from(move |_: MouseEvent| pick.emit(number)));
        let title = format!(
            "partition {}: {}{} · {} at byte {}{}",
            p.number,
            p.type_name,
            if p.name.is_empty() { String::new() } else { format!(" \"{}\"", p.name) },
            human_bytes(p.size),
            p.start,
            if p.xfs { " · XFS" } else { "" }
        );
        html! {
            <g class={kind(p, l.partition)} data-testid={format!("partition-bar-{}", p.number)}
               data-chosen={(l.partition == Some(p.number)).to_string()} data-xfs={p.xfs.to_string()}
               data-x={format!("{x:.1}")} data-width={format!("{w:.1}")} {onclick}>
                <title>{ title }</title>
                <rect x={format!("{x:.2}")} y={y.to_string()} width={format!("{w:.2}")} height={h.to_string()} rx="3" />
                if w > 24.0 && !p.extended {
                    <text x={format!("{:.2}", x + w / 2.0)} y="35" class="plbl">{ p.number.to_string() }</text>
                }
            </g>
        }
    });
    let rows = t.partitions.iter().map(|p| {
        let number = p.number;
        let pick = props.on_pick.clone();
        let chosen = l.partition == Some(p.number);
        html! {
            <tr data-testid={format!("partition-row-{}", p.number)} class={classes!(chosen.then_some("chosen"))}>
                <td class="num">{ p.number }</td>
                <td>{ &p.type_name }<span class="muted">{ format!(" {}", p.type_id) }</span></td>
                <td>{ &p.name }</td>
                <td class="num">{ p.start.to_string() }</td>
                <td class="num">{ human_bytes(p.size) }</td>
                <td>
                    if chosen {
                        <strong data-testid="partition-opened">{ "XFS, open" }</strong>
                    } else if p.xfs {
                        <button data-testid={format!("open-partition-{}", p.number)}
                            onclick={Callback::from(move |_: MouseEvent| pick.emit(number))}>{ "open this XFS" }</button>
                    } else if p.extended {
                        { "extended" }
                    } else {
                        { "-" }
                    }
                    { for p.problems.iter().map(|x| html! { <div class="warn">{ x }</div> }) }
                </td>
            </tr>
        }
    });
    html! {
        <section class="partitions" data-testid="partitions">
            <h2>{ "Disk: " }<span data-testid="container-chain">{ l.chain() }</span></h2>
            <ul class="layers">{ for layers }</ul>
            <p class="muted" data-testid="partition-table">
                { format!("{} partition table, {}-byte sectors, a {} disk, id {}", t.scheme.name(), t.sector_size, human_bytes(disk), t.id) }
            </p>
            <svg class="disk-map" viewBox={format!("0 0 {WIDTH} 60")} preserveAspectRatio="none" role="img"
                 aria-label="the disk with its partitions to scale" data-testid="disk-map">
                <rect class="disk" x="0" y="12" width={WIDTH.to_string()} height="36" rx="3" />
                { for bars }
            </svg>
            if let Some(m) = &props.message {
                <p class="warn" data-testid="choose-partition">{ m }</p>
            }
            if let Some(n) = l.partition {
                <p data-testid="chosen-partition">{ format!("partition {n} is open: bytes {}..{} of the disk", l.offset, l.offset.saturating_add(l.size)) }</p>
            }
            <table class="partition-list">
                <thead><tr><th>{ "#" }</th><th>{ "type" }</th><th>{ "name" }</th><th>{ "start byte" }</th><th>{ "size" }</th><th>{ "filesystem" }</th></tr></thead>
                <tbody>{ for rows }</tbody>
            </table>
            { for t.notes.iter().map(|n| html! { <p class="warn">{ n }</p> }) }
        </section>
    }
}
