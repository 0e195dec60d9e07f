//! The web worker: owns the opened image and answers the page's requests.
//! Reads are synchronous here (`FileReaderSync`), so the page never waits
//! on them and never freezes.

pub mod blob_reader;
mod limits;
pub mod log_views;
mod open;
mod ops;
pub mod ops_views;
mod progress;
mod read_ahead;
mod reads;
mod replay;
pub mod timing;
pub mod views;

pub use limits::{
    caps, set_caps, Caps, DECODED_LOG_CAP, DIFF_INODE_CAP, DIFF_ROWS_CAP, DIR_ENTRIES_CAP,
    REPLAY_OVERLAY_CAP,
};
use limits::{check_log_span, mib};
use progress::{with_read_progress, Ticker};
use reads::{ags, file_end, read_file};

use crate::web::protocol::{AgsView, ChoosePartition, Opened, Request, Response, METADUMP_LOG};
use crate::web::worker::blob_reader::{BlobReader, Disk};
use crate::xfs::container::{self, Layout};
use crate::xfs::fs::Fs;
use crate::xfs::image::Image;
use crate::xfs::read::ReadAt;
use crate::xfs::sb::read_superblock;
use crate::xfs::types::{AgNumber, Ino};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

/// Chunk size of the worker's block cache. A `FileReaderSync` call costs
/// about half a millisecond plus 4 ms per MiB (Chromium, BENCHMARKS.md):
/// 1 MiB chunks made each scattered metadata read cost 4-5 ms and let
/// only 64 places of the disk stay cached, so replay, which reads all over
/// the disk, reread the same megabytes (123 GB read to replay an 800 MiB
/// log). Sequential reads are made large by the reader's read-ahead
/// instead (`blob_reader`).
const WEB_CHUNK: u64 = 64 << 10;
/// Chunks kept (128 MiB at most): replay of a 379 MiB log of small
/// transactions touches more metadata than 64 MiB holds, and each chunk
/// read again costs a `FileReaderSync` call (12,265 reads with 1,024
/// chunks, 2,085 with 2,048: BENCHMARKS.md).
const WEB_CACHE_CHUNKS: usize = 2048;

/// Everything the worker holds about the open image, replaced whole
/// when another is opened.
#[derive(Default)]
struct Session {
    /// The opened file's layers and partition table (to open another
    /// partition of it), its name and size.
    disk: Option<(container::Disk<BlobReader>, String, u64)>,
    fs: Option<Fs<Disk>>,
    /// What the last `Opened` said, to say it again when a log device is
    /// added.
    opened: Option<Opened>,
    /// The open filesystem is a metadump's: it holds no file contents.
    metadump: bool,
    /// The decoded log of the open image, made on first request.
    log: Option<log_views::DecodedLog>,
    /// The replay of the open image's log: its summary and overlay, made
    /// the first time the replayed view is asked for.
    replay: Option<(
        crate::web::protocol::ReplayView,
        crate::xfs::replay::export::Plan,
    )>,
    /// What replay changed (inode fields and entries left out: a page of
    /// rows reads the fields again, entries show as paths), the
    /// milliseconds the comparison took, and the entries added and removed.
    diff: Option<StoredDiff>,
    /// The operations of the open image's log, made on first request.
    ops: Option<ops_views::StoredOps>,
    /// The forkoff distributions of the disk's state and of the replayed
    /// one, made on first request.
    forkoff: [Option<crate::web::protocol::ForkoffView>; 2],
}

thread_local! {
    static SESSION: RefCell<Session> = RefCell::new(Session::default());
}

/// What replay changed, the milliseconds it took, entries added and removed.
type StoredDiff = (crate::xfs::replay::diff::ReplayDiff, f64, (u64, u64));

/// Where responses go: the page (`postMessage`), or a test's collector.
pub type Out<'a> = &'a Rc<dyn Fn(&Response)>;

fn post(out: Out<'_>, resp: &Response) {
    out(resp);
}

/// Send `resp` to the page.
fn post_js(scope: &DedicatedWorkerGlobalScope, resp: &Response) {
    let t0 = timing::now();
    let encoded = crate::web::protocol::encode_response(resp);
    let t1 = timing::now();
    match encoded {
        Ok((msg, transfer)) => {
            if let Err(e) = scope.post_message_with_transfer(&msg, &transfer) {
                web_sys::console::error_2(&"worker: postMessage failed".into(), &e);
            }
            let t2 = timing::now();
            timing::add(|s| {
                s.encode_ms += t1 - t0;
                s.post_ms += t2 - t1;
            });
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

impl Session {
    /// Drop everything worked out for the open filesystem.
    fn forget_views(&mut self) {
        self.forget_log_views();
        self.fs = None;
        self.opened = None;
    }

    /// Drop everything worked out from the open filesystem's log.
    fn forget_log_views(&mut self) {
        self.log = None;
        self.replay = None;
        self.diff = None;
        self.ops = None;
        self.forkoff = [None, None];
    }
}

/// A name for the requests whose time is worth a look.
fn timed_name(req: &Request) -> &'static str {
    match req {
        Request::Open { .. } | Request::OpenPair { .. } => "open",
        Request::Log => "log",
        Request::LogRows { .. } => "log rows",
        Request::LogTransaction { .. } => "log transaction",
        Request::SetReplay { .. } => "replay",
        Request::ReplayDiff => "replay diff",
        Request::Ops => "ops",
        _ => "request",
    }
}

/// Answer one request, the responses going to `scope` (the page, or a
/// test's collector).
pub fn handle(scope: Out<'_>, req: Request) {
    handle_in::<true>(scope, req);
}

/// [`handle`] as the light worker answers it (see [`start_light`]).
pub fn handle_light(scope: Out<'_>, req: Request) {
    handle_in::<false>(scope, req);
}

/// [`handle`] in the full worker (`FULL`) or the light one.
fn handle_in<const FULL: bool>(scope: Out<'_>, req: Request) {
    let name = timed_name(&req);
    timing::take();
    let t0 = timing::now();
    let resp = SESSION.with(|s| s.borrow_mut().answer::<FULL>(scope, req));
    let Some(resp) = resp else {
        return;
    };
    post(scope, &resp);
    timing::report(name, timing::now() - t0, &timing::take());
    post(
        scope,
        &Response::Memory {
            wasm_bytes: wasm_memory_bytes(),
        },
    );
}

impl Session {
    /// The answer to `req` (`None` when it was sent already, in pieces).
    fn answer<const FULL: bool>(&mut self, scope: Out<'_>, req: Request) -> Option<Response> {
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
                self.open(blob, name)
            }
            Request::OpenPair {
                first,
                first_name,
                second,
                second_name,
            } => {
                post(
                    scope,
                    &Response::Progress {
                        stage: format!("reading {first_name} and {second_name}"),
                        done: 0,
                        total: 1,
                    },
                );
                self.open_pair(first, first_name, second, second_name)
            }
            Request::AddLogDevice { blob, name } => self.add_log_device(blob, name),
            Request::OpenPartition { number } => {
                post(
                    scope,
                    &Response::Progress {
                        stage: format!("opening partition {number}"),
                        done: 0,
                        total: 1,
                    },
                );
                self.open_partition(number)
            }
            Request::Inode { ino } => self.with_fs("inode", |fs| views::inode(fs, ino, None)),
            Request::Path { path } => self.with_fs("path", |fs| views::path(fs, &path)),
            Request::Lookup { path } => {
                self.with_fs("search", |fs| match fs.lookup_path(path.as_bytes()) {
                    Ok(i) => Response::Lookup {
                        path,
                        ino: Some(i.ino.0),
                        error: None,
                    },
                    Err(e) => Response::Lookup {
                        path,
                        ino: None,
                        error: Some(e.to_string()),
                    },
                })
            }
            Request::MetadirPath { path } => {
                self.with_fs("metadata directory", |fs| views::metadir_path(fs, &path))
            }
            Request::XattrValue { ino, name } => {
                self.with_fs("xattr", |fs| views::xattr_value(fs, ino, &name))
            }
            Request::ReadFile { ino } => {
                match self.fs.as_ref() {
                    Some(fs) => read_file(scope, fs, self.metadump, ino),
                    None => {
                        post(scope, &view_error("file", "no filesystem is open"));
                        post(scope, &file_end(ino, 0, true));
                    }
                }
                return None;
            }
            Request::Ags => self.with_fs("allocation groups", |fs| ags(scope, fs)),
            Request::AgMap { agno } => self.with_fs("AG map", |fs| {
                let stage = format!("mapping AG {agno}");
                match with_read_progress(scope, &stage, 0, || {
                    crate::xfs::agmap::ag_map(fs, AgNumber(agno))
                }) {
                    Ok(m) => Response::AgMap(Box::new(m)),
                    Err(e) => view_error(format!("AG {agno} map"), e),
                }
            }),
            Request::AgRecords {
                agno,
                tree,
                start,
                count,
            } => self.with_fs("AG btree records", |fs| {
                let Some(t) = crate::xfs::ag::btree::AgTree::from_name(&tree) else {
                    return view_error("AG btree records", format!("no AG btree is called {tree}"));
                };
                match crate::xfs::agmap::records_page(fs, AgNumber(agno), t, start, count) {
                    Ok(p) => Response::AgRecords(Box::new(p)),
                    Err(e) => view_error(format!("AG {agno} {tree} records"), e),
                }
            }),
            Request::Hex { daddr } => self.with_fs("hex view", |fs| {
                match crate::xfs::hexmap::describe(fs, daddr) {
                    Ok(mut h) => {
                        h.logged = self
                            .log
                            .as_ref()
                            .map(|l| log_views::logged_copies(fs, l, daddr, 64))
                            .unwrap_or_default();
                        Response::Hex(Box::new(h))
                    }
                    Err(e) => view_error(format!("daddr {daddr}"), e),
                }
            }),
            Request::LogHex { daddr } => self.with_fs("hex view", |fs| match &fs.logdev {
                Some(log) => match crate::xfs::hexmap::describe_log(log, daddr) {
                    Ok(h) => Response::Hex(Box::new(h)),
                    Err(e) => view_error(format!("log device daddr {daddr}"), e),
                },
                None => view_error(
                    format!("log device daddr {daddr}"),
                    "the log is not on a separate device, or that device was not given",
                ),
            }),
            Request::TreeChildren { path, metadir } => {
                self.with_fs("tree", |fs| views::tree_children(fs, &path, metadir))
            }
            Request::Log => {
                post(
                    scope,
                    &Response::Progress {
                        stage: "finding and decoding the log".into(),
                        done: 0,
                        total: 0,
                    },
                );
                self.with_log(scope, |_, l| log_views::summary(l))
            }
            Request::LogRows { start, count } => {
                self.with_log(scope, |_, l| log_views::rows(l, start, count))
            }
            Request::LogTransaction { index } => {
                self.with_log(scope, |fs, l| log_views::transaction(fs, l, index))
            }
            Request::SetReplay { on } if FULL => self.set_replay(scope, on),
            Request::ExportChunk { log_device, offset } if FULL => {
                self.export_chunk(scope, log_device, offset)
            }
            Request::ReplayDiff if FULL => self.replay_diff(scope),
            Request::ReplayDiffRows {
                section,
                filter,
                start,
                count,
            } if FULL => self.replay_diff_rows(section, filter, start, count),
            Request::Ops if FULL => self.ops(scope),
            Request::OpsTimeline { start, skip } if FULL => self.ops_timeline(scope, start, skip),
            // The light worker: the page sends these to the full one
            // (`Request::light_worker_answers`).
            other => view_error(
                timed_name(&other),
                "this worker does not replay the log or analyse its operations",
            ),
        };
        Some(resp)
    }
}

/// Bytes of the worker's wasm linear memory (the core's heap lives there).
fn wasm_memory_bytes() -> u64 {
    let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
    let buffer: js_sys::ArrayBuffer = memory.buffer().unchecked_into();
    u64::from(buffer.byte_length())
}

/// Answer one message from the page: decoded into a [`Request`] and
/// answered, or answered with an error when it is not one.
pub fn handle_message(out: Out<'_>, data: wasm_bindgen::JsValue) {
    handle_message_in::<true>(out, data);
}

/// [`handle_message`] in the full worker (`FULL`) or the light one.
fn handle_message_in<const FULL: bool>(out: Out<'_>, data: wasm_bindgen::JsValue) {
    match crate::web::protocol::request_from_js(&data) {
        Ok(req) => handle_in::<FULL>(out, req),
        Err(e) => post(
            out,
            &Response::Error {
                name: String::new(),
                message: format!("the worker did not understand a request: {e}"),
            },
        ),
    }
}

/// Entry point of the full worker's binary.
pub fn start() {
    start_in::<true>();
}

/// Entry point of the light worker's binary: the same worker without
/// replay and the operations analysis
/// ([`Request::light_worker_answers`]), a smaller wasm
/// for the page to start with.
pub fn start_light() {
    start_in::<false>();
}

fn start_in<const FULL: bool>() {
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let out: Rc<dyn Fn(&Response)> = {
        let scope = scope.clone();
        Rc::new(move |r: &Response| post_js(&scope, r))
    };
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        handle_message_in::<FULL>(&out, ev.data());
    });
    scope.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    onmessage.forget();
    post_js(&scope, &Response::Ready);
}
