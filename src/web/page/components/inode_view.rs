//! The inode inspector: a picture of the inode (core, data fork, attr fork
//! drawn to scale at `di_forkoff`), what the fork offset says about the
//! inode's history, every core field, both forks, and the xattrs with their
//! values on demand.

use crate::web::page::route::Route;
use crate::web::protocol::{ForkView, InodeView};
use std::collections::BTreeMap;
use std::rc::Rc;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub inode: Rc<InodeView>,
    /// Values fetched so far, by xattr name.
    pub values: BTreeMap<String, Rc<Vec<u8>>>,
    pub on_download_xattr: Callback<String>,
    pub on_download_file: Callback<()>,
}

/// The inode drawn as a bar, bytes to scale.
fn picture(i: &InodeView) -> Html {
    let l = &i.layout;
    let w = 760.0f64;
    let total = f64::from(l.inode_bytes.max(1));
    let x = |b: u32| f64::from(b) / total * w;
    let core_w = x(l.core_bytes);
    let data_x = x(l.data_fork_offset);
    let data_w = x(l.data_fork_bytes);
    let used_w = l.data_fork_used_bytes.map(|u| x(u.min(l.data_fork_bytes)));
    let attr = l
        .attr_fork_offset
        .map(|off| (x(off), x(l.attr_fork_bytes), off));
    html! {
        <svg class="inode-pic" viewBox="0 0 780 86" role="img" data-testid="inode-picture"
             aria-label={format!("inode of {} bytes: core {} bytes, data fork {} bytes, attr fork {} bytes", l.inode_bytes, l.core_bytes, l.data_fork_bytes, l.attr_fork_bytes)}>
            <rect x="10" y="20" width={core_w.to_string()} height="36" class="core" />
            <text x={(10.0 + core_w / 2.0).to_string()} y="43" class="lbl">{ format!("core {}", l.core_bytes) }</text>
            <rect x={(10.0 + data_x).to_string()} y="20" width={data_w.to_string()} height="36" class="dfork" />
            if let Some(u) = used_w {
                <rect x={(10.0 + data_x).to_string()} y="50" width={u.to_string()} height="6" class="used" />
            }
            <text x={(10.0 + data_x + data_w / 2.0).to_string()} y="43" class="lbl">{ format!("data fork {} ({})", l.data_fork_bytes, i.format_name) }</text>
            if let Some((ax, aw, off)) = attr {
                <rect x={(10.0 + ax).to_string()} y="20" width={aw.to_string()} height="36" class="afork" />
                <text x={(10.0 + ax + aw / 2.0).to_string()} y="43" class="lbl">{ format!("attr fork {} ({})", l.attr_fork_bytes, i.aformat_name) }</text>
                <line x1={(10.0 + ax).to_string()} x2={(10.0 + ax).to_string()} y1="12" y2="64" class="tick" />
                <text x={(10.0 + ax).to_string()} y="10" class="tlbl">{ format!("forkoff {} → byte {}", l.forkoff, off) }</text>
            }
            <text x="10" y="78" class="tlbl">{ "0" }</text>
            <text x={(10.0 + core_w).to_string()} y="78" class="tlbl">{ l.core_bytes }</text>
            <text x="770" y="78" class="tlbl end">{ l.inode_bytes }</text>
        </svg>
    }
}

fn fork_table(f: &ForkView, which: &str) -> Html {
    let more = f.extent_count > u64::try_from(f.extents.len()).unwrap_or(u64::MAX);
    html! {
        <div class="fork">
            <h3>{ format!("{which} fork: {} (format {})", f.format_name, f.format) }
                if f.format == 2 || f.format == 3 { <span class="muted">{ format!(" · {} extents", f.extent_count) }</span> }
                if let Some(lv) = f.btree_level { <span class="muted">{ format!(" · bmbt root level {lv}") }</span> }
                if let Some(n) = f.local_len { <span class="muted">{ format!(" · {n} bytes inline") }</span> }
            </h3>
            if let Some(e) = &f.error { <p class="bad">{ e }</p> }
            if !f.local_bytes.is_empty() {
                <pre class="hexdump" data-testid={format!("{which}-fork-bytes")}>{ hexdump(&f.local_bytes) }</pre>
            }
            if !f.extents.is_empty() {
                <table class="extents">
                    <thead><tr><th>{ "file block" }</th><th>{ "start (fsblock)" }</th><th>{ "length" }</th><th>{ "state" }</th></tr></thead>
                    <tbody>
                    { for f.extents.iter().map(|e| html! {
                        <tr>
                            <td class="num">{ e.file_block }</td><td class="num">{ e.start }</td><td class="num">{ e.len }</td>
                            <td>{ match (e.unwritten, e.shared) { (true, _) => "unwritten", (false, Some(true)) => "shared", _ => "written" } }</td>
                        </tr>
                    }) }
                    </tbody>
                </table>
            }
            if more { <p class="muted">{ format!("{} of {} extents shown", f.extents.len(), f.extent_count) }</p> }
        </div>
    }
}

/// A classic hex dump: offset, 16 bytes in hex, then as ASCII.
pub fn hexdump(bytes: &[u8]) -> String {
    let mut out = String::new();
    for (i, row) in bytes.chunks(16).enumerate() {
        let hex: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
        let text: String = row
            .iter()
            .map(|b| {
                if b.is_ascii_graphic() || *b == b' ' {
                    char::from(*b)
                } else {
                    '.'
                }
            })
            .collect();
        out.push_str(&format!("{:04x}  {:<48}  {text}\n", i * 16, hex.join(" ")));
    }
    out
}

/// Text if the value is printable UTF-8, else hex.
fn show_value(v: &[u8]) -> (String, &'static str) {
    match std::str::from_utf8(v) {
        Ok(s) if s.chars().all(|c| !c.is_control() || c == '\n' || c == '\t') => {
            (s.to_string(), "text")
        }
        _ => {
            let hex: String = v.iter().take(4096).map(|b| format!("{b:02x}")).collect();
            let tail = if v.len() > 4096 { "…" } else { "" };
            (format!("0x{hex}{tail}"), "hex")
        }
    }
}

#[function_component(InodeInspector)]
pub fn inode_inspector(props: &Props) -> Html {
    let worker = crate::web::page::context::use_worker_context();
    let i = &props.inode;
    let l = &i.layout;
    let key = |label: &str, id: &str, value: String| {
        html! {
            <div class="key"><span class="muted">{ label.to_string() }</span><strong data-testid={id.to_string()}>{ value }</strong></div>
        }
    };
    let download = {
        let cb = props.on_download_file.clone();
        Callback::from(move |_: MouseEvent| cb.emit(()))
    };
    let xattrs = i.xattrs.iter().map(|x| {
        let name = x.name.clone();
        let show = {
            let (worker, ino, n) = (worker.clone(), i.ino, name.clone());
            Callback::from(move |_: MouseEvent| {
                worker.send(crate::web::protocol::Request::XattrValue {
                    ino,
                    name: n.clone(),
                })
            })
        };
        let save = {
            let (cb, n) = (props.on_download_xattr.clone(), name.clone());
            Callback::from(move |_: MouseEvent| cb.emit(n.clone()))
        };
        let value = props.values.get(&name).map(|v| {
            let (text, kind) = show_value(v);
            html! { <pre class={classes!("xval", kind)} data-testid="xattr-value">{ text }</pre> }
        });
        html! {
            <tr data-testid="xattr" data-name={name.clone()}>
                <td><code>{ &x.name }</code></td>
                <td class="num">{ x.value_len }</td>
                <td>{ if x.remote { "remote" } else { "local" } }</td>
                <td><button onclick={show}>{ "show" }</button>{ " " }<button onclick={save}>{ "download" }</button>{ for value }</td>
            </tr>
        }
    });
    html! {
        <section class="inode">
            <h2>{ format!("Inode {}", i.ino) }
                if let Some(p) = &i.path { <span class="muted">{ " · " }<a href={Route::Path(p.clone()).href()}>{ p }</a></span> }
                <span class="muted">{ format!(" · {} · {}", i.kind, i.location) }</span>
                { " " }<a class="small" data-testid="inode-bytes" href={Route::Hex(i.daddr).href()}>{ "its bytes" }</a>
            </h2>
            if !i.problems.is_empty() {
                <ul class="problems" data-testid="inode-problems">{ for i.problems.iter().map(|p| html! { <li class="bad">{ p }</li> }) }</ul>
            }
            <div class="keys">
                { key("forkoff", "inode-forkoff", l.forkoff.to_string()) }
                { key("attr fork at byte", "inode-attr-offset", l.attr_fork_offset.map(|o| o.to_string()).unwrap_or_else(|| "none".into())) }
                { key("format", "inode-format", i.format.to_string()) }
                { key("aformat", "inode-aformat", i.aformat.to_string()) }
                { key("nextents", "inode-nextents", i.nextents.to_string()) }
                { key("anextents", "inode-anextents", i.anextents.to_string()) }
                { key("size", "inode-size", i.size.to_string()) }
            </div>
            { picture(i) }
            <p class="reading" data-testid="inode-reading">
                <strong>{ format!("{}: ", l.reading_tag.replace('_', " ")) }</strong>{ &l.reading }
                <span class="muted">{ format!(" (default forkoff {}, maximum {}, literal area {} bytes)", l.default_forkoff, l.max_forkoff, l.literal_bytes) }</span>
            </p>
            if !i.parents.is_empty() {
                <h3>{ "Parent pointers" }</h3>
                <p class="explain">{ "With the parent pointer feature every link of an inode is also recorded in the inode itself, as an attribute in the parent namespace: the name, and the directory (inode and generation) that holds it. xfs_repair and online repair rebuild directories from them." }</p>
                <table class="parents"><thead><tr><th>{ "name" }</th><th>{ "directory" }</th><th>{ "generation" }</th></tr></thead><tbody>
                { for i.parents.iter().map(|p| html! {
                    <tr data-testid="parent-pointer" data-name={p.name.clone()} data-parent={p.parent.map(|x| x.to_string()).unwrap_or_default()}>
                        <td><code>{ &p.name }</code></td>
                        <td>{ match p.parent { Some(d) => html! { <a href={Route::Inode(d).href()}>{ d }</a> }, None => html! { <span class="bad">{ "not a parent record" }</span> } } }</td>
                        <td class="num">{ p.gen }</td>
                    </tr>
                }) }
                </tbody></table>
            }
            if let Some(t) = &i.symlink { <p>{ "symlink → " }<code data-testid="symlink-target">{ t }</code></p> }
            if let Some((ma, mi)) = i.rdev { <p>{ "device " }<code data-testid="rdev">{ format!("{ma}:{mi}") }</code></p> }
            if i.kind == "file" { <p><button onclick={download} data-testid="download-file">{ "download the file" }</button></p> }
            { fork_table(&i.data, "data") }
            if let Some(a) = &i.attr { { fork_table(a, "attr") } }
            <h3>{ format!("Extended attributes ({})", i.xattrs.len()) }</h3>
            if let Some(e) = &i.xattr_error { <p class="bad">{ e }</p> }
            if !i.xattrs.is_empty() {
                <table class="xattrs"><thead><tr><th>{ "name" }</th><th>{ "bytes" }</th><th>{ "where" }</th><th></th></tr></thead>
                <tbody>{ for xattrs }</tbody></table>
            }
            <h3>{ "Core" }</h3>
            <table class="kv" aria-label="inode core fields"><tbody>
            { for i.fields.iter().map(|k| html! {
                <tr><td class="name"><code>{ &k.name }</code></td><td class="num" data-testid={format!("core-{}", k.name)}>{ &k.value }</td><td class="meaning">{ &k.meaning }</td></tr>
            }) }
            </tbody></table>
        </section>
    }
}
