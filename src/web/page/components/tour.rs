//! A guided tour of the bundled sample: each step opens the real view and
//! says what to look at. The step is kept in `localStorage`, so the tour
//! can be left and resumed.

use crate::web::page::route::Route;
use yew::prelude::*;

/// One step: where it goes, what it says, and whether it needs the
/// replayed state (the sample's files are all still in its log).
pub struct Step {
    pub title: &'static str,
    pub hash: &'static str,
    pub text: &'static str,
    pub replayed: bool,
}

pub const STEPS: &[Step] = &[
    Step {
        title: "The superblock",
        hash: "#/",
        text: "Sector 0 of the filesystem. Look at blocksize, agcount and agblocks: the filesystem is cut into allocation groups (AGs) of agblocks blocks each, and every AG manages its own space and inodes. logstart says where the journal is; rootino is the root directory's inode. The features list says which on-disk formats apply (crc means v5: every metadata block carries a checksum and says who owns it).",
        replayed: false,
    },
    Step {
        title: "An allocation group",
        hash: "#/ag/0",
        text: "AG 0 drawn block by block. The headers sit in block 0; then come the roots of the AG's btrees (free space by block and by size, inodes, free inodes, reverse mappings, reference counts), the inode chunks (64 inodes each) and the internal log. Light blue is free space as the bnobt records it. Hover a range to name it, click to open it.",
        replayed: false,
    },
    Step {
        title: "The log",
        hash: "#/log",
        text: "The journal as a ring: the tail is the oldest record recovery still needs, the head the newest written. This image was shut down with work in the log that never reached its home blocks: the log is dirty. Every record holds checkpoints (delayed logging), each the items many transactions changed.",
        replayed: false,
    },
    Step {
        title: "One checkpoint",
        hash: "#/log/0",
        text: "The first checkpoint's items: buffers (metadata blocks, with which 128-byte chunks changed), inodes (core and forks), inode chunk creations (icreate) and intents. The counts at the top are the checkpoint's; the operations view later says which file operations made them.",
        replayed: false,
    },
    Step {
        title: "One buffer's dirty runs",
        hash: "#/hex/0",
        text: "The superblock's bytes, every field outlined: hover one to see its name, offset, size and meaning. The log holds a copy of this sector; the underlined bytes are the 128-byte chunks that copy marked dirty, as contiguous runs. Only those chunks were logged, and only those are written back by recovery.",
        replayed: false,
    },
    Step {
        title: "Replay",
        hash: "#/replay",
        text: "The log replayed in memory as the kernel's mount would do it (the file is never written). This view lists what changed: paths added and removed, inodes created or changed, xattrs, blocks. Every other view now reads the replayed state; the checkbox at the right of the tabs turns it off.",
        replayed: true,
    },
    Step {
        title: "A directory",
        hash: "#/path/dir1",
        text: "A directory in the replayed state: its entries with their inode numbers and types. Small directories live inside their inode (shortform); larger ones in directory blocks, which the hex view draws entry by entry.",
        replayed: true,
    },
    Step {
        title: "An inode and where its attr fork starts",
        hash: "#/inode/131",
        text: "Inode 131 (/dir1) drawn to scale: the core, then the literal area split between the data fork (its entries) and the attr fork, which starts at di_forkoff times 8 bytes. The reading under the picture says what that offset tells about how the inode got its xattr: whether the fork was made at create time or added later and moved.",
        replayed: true,
    },
    Step {
        title: "An xattr",
        hash: "#/path/after-sync/hardlink-to-seq1000",
        text: "A file with two xattrs: a short one kept in the attr fork and a 3000-byte one too large for the inode, kept in a remote value block. Click a name to see its value.",
        replayed: true,
    },
    Step {
        title: "Operations and what they cost",
        hash: "#/ops",
        text: "The file operations this log carries (creates, links, renames, setxattrs...) reconstructed from the checkpoints, with how many transactions each cost the kernel. Compare a create with a create that also set an xattr.",
        replayed: true,
    },
];

const KEY: &str = "xfs-explorer-tour-step";

/// The saved step, if a tour was left unfinished.
pub fn saved_step() -> Option<usize> {
    let s = web_sys::window()?.local_storage().ok()??;
    s.get_item(KEY).ok()??.parse().ok()
}

pub fn save_step(step: Option<usize>) {
    if let Some(Ok(Some(s))) = web_sys::window().map(|w| w.local_storage()) {
        let _ = match step {
            Some(i) => s.set_item(KEY, &i.to_string()),
            None => s.remove_item(KEY),
        };
    }
}

#[derive(Properties, PartialEq)]
pub struct Props {
    pub step: usize,
    pub route: Route,
    pub on_step: Callback<usize>,
    pub on_leave: Callback<()>,
}

#[function_component(TourPanel)]
pub fn tour_panel(props: &Props) -> Html {
    let Some(step) = STEPS.get(props.step) else {
        return html! {};
    };
    let n = STEPS.len();
    let here = Route::parse(step.hash) == props.route;
    let next = {
        let (cb, i) = (props.on_step.clone(), props.step);
        Callback::from(move |_: MouseEvent| cb.emit(i + 1))
    };
    let back = {
        let (cb, i) = (props.on_step.clone(), props.step);
        Callback::from(move |_: MouseEvent| cb.emit(i.saturating_sub(1)))
    };
    let again = {
        let (cb, i) = (props.on_step.clone(), props.step);
        Callback::from(move |_: MouseEvent| cb.emit(i))
    };
    let leave = {
        let cb = props.on_leave.clone();
        Callback::from(move |_: MouseEvent| cb.emit(()))
    };
    html! {
        <aside class="tour" data-testid="tour" data-step={props.step.to_string()} aria-label="guided tour" aria-live="polite">
            <h3>{ format!("Tour {}/{n}: {}", props.step + 1, step.title) }</h3>
            <p>{ step.text }</p>
            if !here {
                <p class="muted">{ "You have left this step's view. " }<button onclick={again}>{ "back to it" }</button></p>
            }
            <div class="buttons">
                <button data-testid="tour-back" onclick={back} disabled={props.step == 0}>{ "back" }</button>
                if props.step + 1 < n {
                    <button data-testid="tour-next" onclick={next.clone()}>{ "next" }</button>
                } else {
                    <button data-testid="tour-next" onclick={next}>{ "finish" }</button>
                }
                <button data-testid="tour-leave" onclick={leave}>{ "leave (Esc); resume later" }</button>
                <span class="steps">{ for STEPS.iter().enumerate().map(|(i, s)| html! {
                    <span title={s.title}>{ if i == props.step { "●" } else { "○" } }</span>
                }) }</span>
            </div>
        </aside>
    }
}
