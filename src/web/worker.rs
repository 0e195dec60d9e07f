//! The web worker: owns the opened image and answers the page's requests.
//! Reads are synchronous here (`FileReaderSync`), so the page never waits
//! on them and never freezes.

use crate::web::blob_reader::BlobReader;
use crate::web::protocol::{AgsView, Opened, Request, Response};
use crate::web::{log_views, views};
use crate::xfs::fs::Fs;
use crate::xfs::image::Image;
use crate::xfs::sb::read_superblock;
use crate::xfs::types::{AgNumber, Ino};
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

/// Chunk size of the worker's block cache: each `FileReaderSync` call costs
/// about a millisecond, so reads are large.
const WEB_CHUNK: u64 = 1 << 20;
/// Chunks kept (64 MiB at most).
const WEB_CACHE_CHUNKS: usize = 64;

thread_local! {
    static FS: RefCell<Option<Fs<BlobReader>>> = const { RefCell::new(None) };
    /// The decoded log of the open image, made on first request.
    static LOG: RefCell<Option<log_views::DecodedLog>> = const { RefCell::new(None) };
    /// The replay of the open image's log: its summary and overlay, made
    /// the first time the replayed view is asked for.
    static REPLAY: RefCell<Option<(crate::web::protocol::ReplayView, crate::xfs::replay::export::Plan)>> = const { RefCell::new(None) };
}

fn post(scope: &DedicatedWorkerGlobalScope, resp: &Response) {
    match crate::web::protocol::to_js(resp) {
        Ok(v) => {
            if let Err(e) = scope.post_message(&v) {
                web_sys::console::error_2(&"worker: postMessage failed".into(), &e);
            }
        }
        Err(e) => web_sys::console::error_1(&format!("worker: encode: {e}").into()),
    }
}

fn view_error(what: impl Into<String>, message: impl ToString) -> Response {
    Response::ViewError {
        what: what.into(),
        message: message.to_string(),
    }
}

fn open(blob: web_sys::Blob, name: String) -> Response {
    LOG.with(|l| *l.borrow_mut() = None);
    REPLAY.with(|r| *r.borrow_mut() = None);
    let reader = match BlobReader::new(blob) {
        Ok(r) => r,
        Err(message) => return Response::Error { name, message },
    };
    let img = Image::with_cache(reader, WEB_CHUNK, WEB_CACHE_CHUNKS);
    let sb = match read_superblock(&img) {
        Ok(sb) => sb,
        Err(e) => {
            FS.with(|f| *f.borrow_mut() = None);
            return Response::Error {
                name,
                message: e.to_string(),
            };
        }
    };
    let size = img.len();
    let stats = img.stats();
    let superblock = sb.view();
    let fs_error = match Fs::open(img) {
        Ok(fs) => {
            FS.with(|f| *f.borrow_mut() = Some(fs));
            None
        }
        Err(e) => {
            FS.with(|f| *f.borrow_mut() = None);
            Some(e.to_string())
        }
    };
    Response::Opened(Box::new(Opened {
        name,
        size,
        superblock,
        stats,
        fs_error,
    }))
}

fn with_fs(what: &str, f: impl FnOnce(&Fs<BlobReader>) -> Response) -> Response {
    FS.with(|cell| match cell.borrow().as_ref() {
        Some(fs) => f(fs),
        None => view_error(what, "no filesystem is open"),
    })
}

fn read_file(scope: &DedicatedWorkerGlobalScope, fs: &Fs<BlobReader>, ino: u64) {
    let i = match fs.inode(Ino(ino)) {
        Ok(i) => i,
        Err(e) => return post(scope, &view_error(format!("inode {ino}"), e)),
    };
    let total = i.core.size;
    let mut offset = 0u64;
    let result = fs.read_file(&i, &mut |chunk: &[u8]| {
        post(
            scope,
            &Response::FileChunk {
                ino,
                offset,
                bytes: chunk.to_vec(),
                last: false,
            },
        );
        offset = offset.saturating_add(u64::try_from(chunk.len()).unwrap_or(0));
        post(
            scope,
            &Response::Progress {
                stage: format!("reading inode {ino}"),
                done: offset,
                total,
            },
        );
        Ok(())
    });
    if let Err(e) = result {
        post(scope, &view_error(format!("reading inode {ino}"), e));
    }
    post(
        scope,
        &Response::FileChunk {
            ino,
            offset,
            bytes: Vec::new(),
            last: true,
        },
    );
}

/// Run `f` on the decoded log, decoding it first if needed.
fn with_log(f: impl FnOnce(&log_views::DecodedLog) -> Response) -> Response {
    let have = LOG.with(|l| l.borrow().is_some());
    if !have {
        let decoded = FS.with(|cell| cell.borrow().as_ref().map(log_views::decode));
        match decoded {
            Some(Ok(d)) => LOG.with(|l| *l.borrow_mut() = Some(d)),
            Some(Err(e)) => return view_error("log", e),
            None => return view_error("log", "no filesystem is open"),
        }
    }
    LOG.with(|l| match l.borrow().as_ref() {
        Some(d) => f(d),
        None => view_error("log", "the log could not be decoded"),
    })
}

/// Replay the log once (an overlay of recovered blocks; the file is never
/// written) and switch the reads of every view to it, or back.
fn set_replay(scope: &DedicatedWorkerGlobalScope, on: bool) -> Response {
    use crate::web::protocol::{Kv, ReplayView};
    if on && REPLAY.with(|r| r.borrow().is_none()) {
        let made = FS.with(|cell| {
            let b = cell.borrow();
            let fs = b
                .as_ref()
                .ok_or_else(|| "no filesystem is open".to_string())?;
            let mut last = 0.0f64;
            let (rep, plan) = crate::xfs::replay::replay_and_mount(fs, &mut |p| {
                let now = js_sys::Date::now();
                if now - last > 200.0 {
                    last = now;
                    post(
                        scope,
                        &Response::Progress {
                            stage: format!(
                                "replaying the log: pass {}, {} records, {} transactions, {} items",
                                p.pass, p.records, p.transactions, p.items
                            ),
                            done: p.blocks_done,
                            total: p.blocks_total,
                        },
                    );
                }
            })
            .map_err(|e| e.to_string())?;
            let kv = |n: &str, v: u64| Kv {
                name: n.into(),
                value: v.to_string(),
                meaning: String::new(),
            };
            let c = &rep.counts;
            let mut notes = rep.notes.clone();
            notes.extend(rep.warnings.iter().cloned());
            for u in &rep.unfinished_intents {
                notes.push(format!("unfinished intent: {u:?}"));
            }
            let view = ReplayView {
                on: true,
                summary: vec![
                    kv("records", rep.records),
                    kv("transactions", rep.transactions),
                    kv("items", rep.items),
                    kv("buffers replayed", c.buffers_replayed),
                    kv("buffers skipped (newer on disk)", c.buffers_skipped_lsn),
                    kv("buffers cancelled", c.buffers_cancelled),
                    kv("inodes replayed", c.inodes_replayed),
                    kv("recovered sectors", rep.overlay_sectors),
                ],
                notes,
                error: None,
            };
            Ok::<_, String>((view, plan))
        });
        match made {
            Ok(v) => REPLAY.with(|r| *r.borrow_mut() = Some(v)),
            Err(e) => {
                return Response::Replay(Box::new(ReplayView {
                    on: false,
                    summary: Vec::new(),
                    notes: Vec::new(),
                    error: Some(e),
                }))
            }
        }
    }
    let overlay = REPLAY.with(|r| r.borrow().as_ref().map(|(_, p)| p.overlay.clone()));
    FS.with(|cell| {
        if let Some(fs) = cell.borrow_mut().as_mut() {
            if let Some(o) = overlay {
                fs.img.set_overlay(o);
            }
            fs.img.set_use_overlay(on);
        }
    });
    let mut view = REPLAY
        .with(|r| r.borrow().as_ref().map(|(v, _)| v.clone()))
        .unwrap_or(ReplayView {
            on: false,
            summary: Vec::new(),
            notes: Vec::new(),
            error: None,
        });
    view.on = on;
    Response::Replay(Box::new(view))
}

/// Stream the recovered image to the page in 4 MiB pieces; nothing but the
/// piece in flight is held here.
fn download_recovered(scope: &DedicatedWorkerGlobalScope) {
    use crate::web::protocol::RECOVERED_IMAGE;
    const PIECE: u64 = 4 << 20;
    if REPLAY.with(|r| r.borrow().is_none()) {
        let r = set_replay(scope, true);
        post(scope, &r);
    }
    let result = FS.with(|cell| {
        let b = cell.borrow();
        let fs = b
            .as_ref()
            .ok_or_else(|| "no filesystem is open".to_string())?;
        REPLAY.with(|r| {
            let r = r.borrow();
            let (_, plan) = r
                .as_ref()
                .ok_or_else(|| "the log could not be replayed".to_string())?;
            let rec = crate::xfs::replay::export::Recovered {
                fs,
                overlay: &plan.overlay,
                log: plan.log,
            };
            let total = rec.len();
            let mut offset = 0u64;
            while offset < total {
                let n = PIECE.min(total.saturating_sub(offset));
                let mut buf = vec![0u8; usize::try_from(n).map_err(|e| e.to_string())?];
                rec.read_at(offset, &mut buf).map_err(|e| e.to_string())?;
                post(
                    scope,
                    &Response::FileChunk {
                        ino: RECOVERED_IMAGE,
                        offset,
                        bytes: buf,
                        last: false,
                    },
                );
                offset = offset.saturating_add(n);
                post(
                    scope,
                    &Response::Progress {
                        stage: "writing the recovered image".into(),
                        done: offset,
                        total,
                    },
                );
            }
            Ok::<(), String>(())
        })
    });
    if let Err(e) = result {
        post(scope, &view_error("recovered image", e));
    }
    post(
        scope,
        &Response::FileChunk {
            ino: RECOVERED_IMAGE,
            offset: 0,
            bytes: Vec::new(),
            last: true,
        },
    );
}

fn ags(fs: &Fs<BlobReader>) -> Response {
    let ags = (0..fs.geo.agcount)
        .map(|a| match crate::xfs::ag::summarize(fs, AgNumber(a)) {
            Ok(s) => views::ag_view(&s),
            Err(e) => crate::web::protocol::AgView {
                agno: a,
                summary: Vec::new(),
                agf: Vec::new(),
                agi: Vec::new(),
                problems: vec![e.to_string()],
            },
        })
        .collect();
    Response::Ags(Box::new(AgsView { ags }))
}

fn handle(scope: &DedicatedWorkerGlobalScope, req: Request) {
    let resp = match req {
        Request::Open { blob, name } => {
            post(
                scope,
                &Response::Progress {
                    stage: format!("reading the superblock of {name}"),
                    done: 0,
                    total: 1,
                },
            );
            open(blob, name)
        }
        Request::Inode { ino } => with_fs("inode", |fs| views::inode(fs, ino, None)),
        Request::Path { path } => with_fs("path", |fs| views::path(fs, &path)),
        Request::XattrValue { ino, name } => {
            with_fs("xattr", |fs| views::xattr_value(fs, ino, &name))
        }
        Request::ReadFile { ino } => {
            FS.with(|cell| match cell.borrow().as_ref() {
                Some(fs) => read_file(scope, fs, ino),
                None => post(scope, &view_error("file", "no filesystem is open")),
            });
            return;
        }
        Request::Ags => with_fs("allocation groups", ags),
        Request::TreeChildren { path } => with_fs("tree", |fs| views::tree_children(fs, &path)),
        Request::Log => {
            post(
                scope,
                &Response::Progress {
                    stage: "finding and decoding the log".into(),
                    done: 0,
                    total: 0,
                },
            );
            with_log(log_views::summary)
        }
        Request::LogRows { start, count } => with_log(|l| log_views::rows(l, start, count)),
        Request::LogTransaction { index } => with_log(|l| log_views::transaction(l, index)),
        Request::SetReplay { on } => set_replay(scope, on),
        Request::DownloadRecovered => {
            download_recovered(scope);
            return;
        }
    };
    post(scope, &resp);
}

/// Entry point of the worker binary.
pub fn start() {
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let scope2 = scope.clone();
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        match serde_wasm_bindgen::from_value::<Request>(ev.data()) {
            Ok(req) => handle(&scope2, req),
            Err(e) => post(
                &scope2,
                &Response::Error {
                    name: String::new(),
                    message: format!("the worker did not understand a request: {e}"),
                },
            ),
        }
    });
    scope.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    onmessage.forget();
    post(&scope, &Response::Ready);
}
