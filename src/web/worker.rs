//! The web worker: owns the opened image and answers the page's requests.
//! Reads are synchronous here (`FileReaderSync`), so the page never waits
//! on them and never freezes.

use crate::web::blob_reader::{BlobReader, Disk};
use crate::web::protocol::{AgsView, ChoosePartition, Opened, Request, Response, METADUMP_LOG};
use crate::web::{log_views, ops_views, timing, views};
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
/// Chunks kept (64 MiB at most).
const WEB_CACHE_CHUNKS: usize = 1024;

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

/// The live part of the log (tail to head) the page decodes and replays
/// at most: the decoded log holds every logged region of it, and replay
/// holds the blocks it recovers. A bigger log is refused with a message
/// (the command line has no such cap).
pub const DECODED_LOG_CAP: u64 = 1 << 30;
/// The recovered blocks replay holds at most (its overlay, in bytes); a
/// replay that recovers more is dropped and refused with a message.
pub const REPLAY_OVERLAY_CAP: u64 = 1 << 30;
/// Inodes compared at most by what replay changed (more are reported as
/// not compared).
pub const DIFF_INODE_CAP: usize = 1_000_000;
/// Rows of each part of what replay changed kept at most (paths, inodes,
/// xattrs, block ranges); the rest are counted, not kept.
pub const DIFF_ROWS_CAP: usize = 1_000_000;
/// Entries of one directory listed at most (each is an inode read).
pub const DIR_ENTRIES_CAP: usize = 100_000;

/// The caps in force (the constants above; tests set smaller ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    pub decoded_log: u64,
    pub replay_overlay: u64,
    pub diff_inodes: usize,
    pub diff_rows: usize,
    pub dir_entries: usize,
}

impl Default for Caps {
    fn default() -> Self {
        Caps {
            decoded_log: DECODED_LOG_CAP,
            replay_overlay: REPLAY_OVERLAY_CAP,
            diff_inodes: DIFF_INODE_CAP,
            diff_rows: DIFF_ROWS_CAP,
            dir_entries: DIR_ENTRIES_CAP,
        }
    }
}

thread_local! {
    static CAPS: std::cell::Cell<Caps> = std::cell::Cell::new(Caps::default());
}

/// Set the caps in force (for tests: small caps on small fixtures).
pub fn set_caps(c: Caps) {
    CAPS.with(|x| x.set(c));
}

pub fn caps() -> Caps {
    CAPS.with(std::cell::Cell::get)
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", to_f64(b) / 1_048_576.0)
}

#[allow(clippy::as_conversions, clippy::cast_precision_loss)]
fn to_f64(n: u64) -> f64 {
    n as f64
}

/// The bytes between the log's tail and head (0 for a clean log), refused
/// when over [`Caps::decoded_log`].
fn check_log_span(fs: &Fs<Disk>) -> Result<u64, String> {
    use crate::xfs::log::{find::find_head_tail, LogDev};
    // A log that cannot be read is left to the work itself to report.
    let Ok(dev) = LogDev::of_fs(fs) else {
        return Ok(0);
    };
    let Ok(ht) = find_head_tail(&dev) else {
        return Ok(0);
    };
    let span = if ht.clean {
        0
    } else {
        u64::from(dev.distance(ht.tail.block, ht.head.block)).saturating_mul(512)
    };
    let cap = caps().decoded_log;
    if span > cap {
        return Err(format!(
            "the live part of the log (tail {}:{} to head {}:{}) is {}, more than the {} the page decodes and replays (DECODED_LOG_CAP); the command line (xfs-explorer log, replay) has no such cap",
            ht.tail.cycle,
            ht.tail.block,
            ht.head.cycle,
            ht.head.block,
            mib(span),
            mib(cap)
        ));
    }
    Ok(span)
}

/// Where responses go: the page (`postMessage`), or a test's collector.
pub type Out<'a> = &'a Rc<dyn Fn(&Response)>;

fn post(out: Out<'_>, resp: &Response) {
    out(resp);
}

/// Send `resp` to the page.
fn post_js(scope: &DedicatedWorkerGlobalScope, resp: &Response) {
    let t0 = timing::now();
    let encoded = crate::web::protocol::to_js(resp);
    let t1 = timing::now();
    match encoded {
        Ok(v) => {
            if let Err(e) = scope.post_message(&v) {
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

/// The first four bytes of `blob`, big-endian (0 when it is shorter).
fn magic_of(blob: &web_sys::Blob) -> u32 {
    let Ok(r) = BlobReader::new(blob.clone()) else {
        return 0;
    };
    let mut b = [0u8; 4];
    if r.len() < 4 || r.read_exact_at(0, &mut b).is_err() {
        return 0;
    }
    u32::from_be_bytes(b)
}

impl Session {
    /// Open a data device and its external log device given in either order.
    fn open_pair(
        &mut self,
        first: web_sys::Blob,
        first_name: String,
        second: web_sys::Blob,
        second_name: String,
    ) -> Response {
        const XFSB: u32 = 0x5846_5342;
        const LOG_RECORD: u32 = crate::xfs::format::log::XLOG_HEADER_MAGIC_NUM;
        let (a, b) = (magic_of(&first), magic_of(&second));
        let first_is_data = a == XFSB || (b != XFSB && (b == LOG_RECORD || a != LOG_RECORD));
        let ((data, data_name), (log, log_name)) = if first_is_data {
            ((first, first_name), (second, second_name))
        } else {
            ((second, second_name), (first, first_name))
        };
        match self.open(data, data_name) {
            Response::Opened(_) => self.add_log_device(log, log_name),
            other => other,
        }
    }

    /// Read the open filesystem's external log from `blob`.
    fn add_log_device(&mut self, blob: web_sys::Blob, name: String) -> Response {
        let reader = match BlobReader::new(blob) {
            Ok(r) => r,
            Err(message) => return view_error(format!("log device {name}"), message),
        };
        let Some(mut opened) = self.opened.clone() else {
            return view_error(format!("log device {name}"), "no filesystem is open");
        };
        let Some(fs) = self.fs.take() else {
            return view_error(format!("log device {name}"), "no filesystem is open");
        };
        if fs.has_external_log() {
            self.forget_log_views();
            let log = Image::with_cache(
                container::Volume::whole(reader),
                WEB_CHUNK,
                WEB_CACHE_CHUNKS,
            );
            self.fs = Some(fs.with_logdev(log));
            opened.log_device = Some(name);
            opened.log_device_error = None;
        } else {
            self.fs = Some(fs);
            opened.log_device_error = Some(format!(
                "{name} is not used: the log of {} is internal",
                opened.name
            ));
        }
        self.opened = Some(opened.clone());
        Response::Opened(Box::new(opened))
    }

    /// Open an image: everything held about the last one is dropped first.
    fn open(&mut self, blob: web_sys::Blob, name: String) -> Response {
        *self = Session::default();
        let reader = match BlobReader::new(blob) {
            Ok(r) => r,
            Err(message) => return Response::Error { name, message },
        };
        let size = reader.len();
        let disk = match container::detect(reader) {
            Ok(d) => d,
            Err(e) => {
                return Response::Error {
                    name,
                    message: e.to_string(),
                }
            }
        };
        let chosen = disk.choose(None);
        let resp = match chosen {
            Ok((volume, layout)) => self.open_volume(volume, layout, name.clone(), size),
            Err(e) if disk.layout().table.is_some() => {
                Response::ChoosePartition(Box::new(ChoosePartition {
                    name: name.clone(),
                    size,
                    layout: disk.layout().clone(),
                    message: e.to_string(),
                }))
            }
            Err(e) => Response::Error {
                name: name.clone(),
                message: e.to_string(),
            },
        };
        self.disk = Some((disk, name, size));
        resp
    }

    /// Open partition `number` of the disk found by the last `Open`.
    fn open_partition(&mut self, number: u32) -> Response {
        let Some((disk, name, size)) = self.disk.as_ref() else {
            return Response::Error {
                name: String::new(),
                message: "no disk is open".into(),
            };
        };
        let (chosen, name, size) = (disk.choose(Some(number)), name.clone(), *size);
        match chosen {
            Ok((volume, layout)) => self.open_volume(volume, layout, name, size),
            Err(e) => Response::Error {
                name,
                message: e.to_string(),
            },
        }
    }

    /// Read the superblock of the filesystem in `volume` and keep it open.
    /// A metadump's own external log device is put beside it.
    fn open_volume(&mut self, volume: Disk, layout: Layout, name: String, size: u64) -> Response {
        self.forget_views();
        self.metadump = layout.metadump.is_some();
        let img = Image::with_cache(volume, WEB_CHUNK, WEB_CACHE_CHUNKS);
        let sb = match read_superblock(&img) {
            Ok(sb) => sb,
            Err(e) => {
                return Response::Error {
                    name,
                    message: e.to_string(),
                };
            }
        };
        let stats = img.stats();
        let superblock = sb.view();
        let external_log = sb.logstart == 0;
        let mut log_device = None;
        let fs_error = match Fs::open(img) {
            Ok(fs) => {
                // A metadump may hold the external log device itself.
                let fs = container::with_embedded_log(fs);
                if fs.logdev.is_some() {
                    log_device = Some(format!("{name}{METADUMP_LOG}"));
                }
                self.fs = Some(fs);
                None
            }
            Err(e) => Some(e.to_string()),
        };
        let opened = Opened {
            name,
            size,
            superblock,
            stats,
            fs_error,
            layout,
            external_log,
            log_device,
            log_device_error: None,
        };
        self.opened = Some(opened.clone());
        Response::Opened(Box::new(opened))
    }

    fn with_fs(&self, what: &str, f: impl FnOnce(&Fs<Disk>) -> Response) -> Response {
        match self.fs.as_ref() {
            Some(fs) => f(fs),
            None => view_error(what, "no filesystem is open"),
        }
    }
}

fn read_file(scope: Out<'_>, fs: &Fs<Disk>, metadump: bool, ino: u64) {
    let i = match fs.inode(Ino(ino)) {
        Ok(i) => i,
        Err(e) => return post(scope, &view_error(format!("inode {ino}"), e)),
    };
    let total = i.core.size;
    if metadump && i.file_type() == crate::xfs::inode::FileType::File && total > 0 {
        return post(
            scope,
            &view_error(
                format!("inode {ino}"),
                format!("its {total} bytes of content are not in the metadump (xfs_metadump copies metadata only)"),
            ),
        );
    }
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

/// When to post progress: at most every 200 ms.
#[derive(Default)]
struct Ticker {
    last: f64,
}

impl Ticker {
    /// A ticker whose first tick is 200 ms from now.
    fn started() -> Ticker {
        Ticker {
            last: js_sys::Date::now(),
        }
    }

    /// Whether progress is due now (the first time, at once).
    fn due(&mut self) -> bool {
        let now = js_sys::Date::now();
        let due = now - self.last > 200.0;
        if due {
            self.last = now;
        }
        due
    }
}

/// Run `f` while progress is reported from the bytes read from the file
/// (work with no progress of its own: decoding the log, mapping an AG):
/// `stage`, bytes read so far and `total` (0 when not known).
fn with_read_progress<T>(out: Out<'_>, stage: &str, total: u64, f: impl FnOnce() -> T) -> T {
    post(
        out,
        &Response::Progress {
            stage: format!("{stage}: {} read", mib(0)),
            done: 0,
            total,
        },
    );
    let (out2, stage2) = (Rc::clone(out), stage.to_string());
    let mut done = 0u64;
    let mut tick = Ticker::started();
    crate::web::blob_reader::set_read_hook(Some(Box::new(move |n: u64| {
        done = done.saturating_add(n);
        if tick.due() {
            post(
                &out2,
                &Response::Progress {
                    stage: format!("{stage2}: {} read", mib(done)),
                    done: if total > 0 { done.min(total) } else { done },
                    total,
                },
            );
        }
    })));
    let r = f();
    crate::web::blob_reader::set_read_hook(None);
    r
}

/// Run `f` on the decoded log, decoding it first if needed (refused when
/// its live part is over [`Caps::decoded_log`]).
impl Session {
    fn with_log(
        &mut self,
        out: Out<'_>,
        f: impl FnOnce(&log_views::DecodedLog) -> Response,
    ) -> Response {
        if self.log.is_none() {
            let decoded = self.fs.as_ref().map(|fs| {
                let span = check_log_span(fs)?;
                with_read_progress(out, "finding and decoding the log", span, || {
                    log_views::decode(fs)
                })
            });
            match decoded {
                Some(Ok(d)) => self.log = Some(d),
                Some(Err(e)) => return view_error("log", e),
                None => return view_error("log", "no filesystem is open"),
            }
        }
        match self.log.as_ref() {
            Some(d) => f(d),
            None => view_error("log", "the log could not be decoded"),
        }
    }

    /// Replay the log once (an overlay of recovered blocks; the file is never
    /// written) and lay the result under the image, leaving the reads of the
    /// views where they were.
    fn ensure_replayed(&mut self, scope: Out<'_>) -> Result<(), String> {
        use crate::web::protocol::{Kv, ReplayView};
        if self.replay.is_some() {
            return Ok(());
        }
        let made = {
            let fs = self
                .fs
                .as_mut()
                .ok_or_else(|| "no filesystem is open".to_string())?;
            check_log_span(fs)?;
            let mut tick = Ticker::default();
            let (rep, mut plan) = crate::xfs::replay::replay_and_mount(
                fs,
                crate::xfs::replay::RecoveryTime::from_millis(js_sys::Date::now()),
                &mut |p| {
                    if tick.due() {
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
                },
            )
            .map_err(|e| e.to_string())?;
            let held = rep.overlay_sectors.saturating_mul(512);
            let cap = caps().replay_overlay;
            if held > cap {
                return Err(format!(
                "replay recovered {} of blocks, more than the {} the page holds (REPLAY_OVERLAY_CAP); the command line (xfs-explorer replay -o) has no such cap",
                mib(held),
                mib(cap)
            ));
            }
            let kv = |n: &str, v: u64| Kv {
                name: n.into(),
                value: v.to_string(),
                meaning: String::new(),
            };
            let c = &rep.counts;
            let notes = crate::xfs::replay::notes::lines(&rep, plan.mount.as_ref());
            // The overlay moves under the image (one copy); the plan keeps the
            // rest (the clean log) for the download.
            let was = fs.img.uses_overlay();
            fs.img.set_overlay(std::mem::take(&mut plan.overlay));
            fs.img.set_use_overlay(false);
            let disk = read_superblock(&fs.img).map(|s| s.view());
            fs.img.set_use_overlay(true);
            let replayed = read_superblock(&fs.img).map(|s| s.view());
            fs.img.set_use_overlay(was);
            let (superblock, sb_changed) = match (disk, replayed) {
                (Ok(d), Ok(r)) => {
                    let changed = r
                        .fields
                        .iter()
                        .filter(|f| {
                            d.fields
                                .iter()
                                .find(|g| g.name == f.name)
                                .is_none_or(|g| g.value != f.value)
                        })
                        .map(|f| f.name.clone())
                        .collect();
                    (Some(r), changed)
                }
                (_, Ok(r)) => (Some(r), Vec::new()),
                _ => (None, Vec::new()),
            };
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
                superblock,
                sb_changed,
            };
            (view, plan)
        };
        self.replay = Some(made);
        Ok(())
    }

    /// Switch the reads of every view to the replayed state (replaying the
    /// first time), or back.
    fn set_replay(&mut self, scope: Out<'_>, on: bool) -> Response {
        use crate::web::protocol::ReplayView;
        if on {
            if let Err(e) = self.ensure_replayed(scope) {
                return Response::Replay(Box::new(ReplayView {
                    error: Some(e),
                    ..ReplayView::default()
                }));
            }
        }
        if let Some(fs) = self.fs.as_mut() {
            fs.img.set_use_overlay(on);
        }
        let mut view = self
            .replay
            .as_ref()
            .map(|(v, _)| v.clone())
            .unwrap_or_default();
        view.on = on;
        Response::Replay(Box::new(view))
    }

    /// What replay changed: compared once (the log replayed first if needed),
    /// then summarised.
    fn replay_diff(&mut self, scope: Out<'_>) -> Response {
        use crate::web::protocol::{DiffSection, ReplayDiffView};
        if let Err(e) = self.ensure_replayed(scope) {
            return view_error("replay", e);
        }
        if self.diff.is_none() {
            let t0 = js_sys::Date::now();
            let made = self.fs.as_mut().map(|fs| {
                let mut tick = Ticker::default();
                crate::xfs::replay::diff::diff_with(
                    fs,
                    crate::xfs::replay::diff::Options {
                        limit: caps().diff_inodes,
                        inode_fields: false,
                    },
                    &mut |p| {
                        if tick.due() {
                            post(
                                scope,
                                &Response::Progress {
                                    stage: format!("what replay changed: {}", p.stage),
                                    done: p.done,
                                    total: p.total,
                                },
                            );
                        }
                    },
                )
            });
            let Some(mut d) = made else {
                return view_error("replay", "no filesystem is open");
            };
            let ms = js_sys::Date::now() - t0;
            // The entries are shown as the paths they make; only their counts
            // are kept.
            let count = |c: &str| {
                u64::try_from(d.entries.iter().filter(|e| e.change == c).count())
                    .unwrap_or(u64::MAX)
            };
            let entries = (count("added"), count("removed"));
            d.entries = Vec::new();
            let cap = caps().diff_rows;
            let cut = |what: &str, n: usize| {
                (n > cap).then(|| {
                format!("{n} {what} rows: only the first {cap} are kept and counted here (DIFF_ROWS_CAP)")
            })
            };
            let notes: Vec<String> = [
                cut("path", d.paths.len()),
                cut("inode", d.inodes.len()),
                cut("xattr", d.xattrs.len()),
                cut("block range", d.blocks.len()),
            ]
            .into_iter()
            .flatten()
            .collect();
            d.paths.truncate(cap);
            d.inodes.truncate(cap);
            d.xattrs.truncate(cap);
            d.blocks.truncate(cap);
            d.problems.extend(notes);
            self.diff = Some((d, ms, entries));
        }
        let notes = self
            .replay
            .as_ref()
            .map(|(v, _)| v.notes.clone())
            .unwrap_or_default();
        {
            let Some((d, ms, (entries_added, entries_removed))) = self.diff.as_ref() else {
                return view_error("replay", "nothing was compared");
            };
            let mut counts: Vec<(DiffSection, String, u64)> = Vec::new();
            let mut add = |s: DiffSection, change: &str| match counts
                .iter_mut()
                .find(|(x, c, _)| *x == s && c == change)
            {
                Some(e) => e.2 = e.2.saturating_add(1),
                None => counts.push((s, change.to_string(), 1)),
            };
            for p in &d.paths {
                add(DiffSection::Paths, p.change);
            }
            for i in &d.inodes {
                add(DiffSection::Inodes, i.change);
            }
            for x in &d.xattrs {
                add(DiffSection::Xattrs, x.change);
            }
            for _ in &d.blocks {
                add(DiffSection::Blocks, "");
            }
            let mut kinds: Vec<(String, u64, u64)> = Vec::new();
            for r in &d.blocks {
                match kinds.iter_mut().find(|k| k.0 == r.what) {
                    Some(k) => {
                        k.1 = k.1.saturating_add(1);
                        k.2 = k.2.saturating_add(r.sectors);
                    }
                    None => kinds.push((r.what.to_string(), 1, r.sectors)),
                }
            }
            kinds.sort_by_key(|k| std::cmp::Reverse(k.2));
            Response::ReplayDiff(Box::new(ReplayDiffView {
                counts,
                entries_added: *entries_added,
                entries_removed: *entries_removed,
                sectors: d.blocks.iter().map(|b| b.sectors).sum(),
                block_kinds: kinds,
                truncated: d.truncated,
                problems: d.problems.clone(),
                notes,
                diff_ms: *ms,
            }))
        }
    }
}

/// The rows `start..start + take` of the items `keep` keeps, and how many
/// it keeps in all.
fn filtered_page<T, R>(
    items: &[T],
    keep: impl Fn(&T) -> bool,
    start: usize,
    take: usize,
    row: impl Fn(&T) -> R,
) -> (usize, Vec<R>) {
    let total = items.iter().filter(|x| keep(x)).count();
    let rows = items
        .iter()
        .filter(|x| keep(x))
        .skip(start)
        .take(take)
        .map(row)
        .collect();
    (total, rows)
}

impl Session {
    /// A page of rows of what replay changed.
    fn replay_diff_rows(
        &mut self,
        section: crate::web::protocol::DiffSection,
        filter: String,
        start: u32,
        count: u32,
    ) -> Response {
        use crate::web::protocol::{DiffRow, DiffRowsView, DiffSection};
        let count = count.min(1000);
        let start_at = usize::try_from(start).unwrap_or(usize::MAX);
        let take = usize::try_from(count).unwrap_or(0);
        let keep = |c: &str| filter.is_empty() || c == filter;
        let row = |change: &str, ino: u64, text: String| DiffRow {
            change: change.to_string(),
            ino,
            text,
            fields: Vec::new(),
            daddr: 0,
            sectors: 0,
        };
        let page = self.diff.as_ref().map(|(d, _, _)| match section {
            DiffSection::Paths => filtered_page(
                &d.paths,
                |p| keep(p.change),
                start_at,
                take,
                |p| row(p.change, p.ino, p.path.clone()),
            ),
            DiffSection::Inodes => filtered_page(
                &d.inodes,
                |i| keep(i.change),
                start_at,
                take,
                |i| row(i.change, i.ino, i.file_type.to_string()),
            ),
            DiffSection::Xattrs => filtered_page(
                &d.xattrs,
                |x| keep(x.change),
                start_at,
                take,
                |x| row(x.change, x.ino, x.name.clone()),
            ),
            DiffSection::Blocks => {
                let total = d.blocks.len();
                let rows = d
                    .blocks
                    .iter()
                    .skip(start_at)
                    .take(take)
                    .map(|r| DiffRow {
                        daddr: r.daddr,
                        sectors: r.sectors,
                        ..row("", 0, r.what.to_string())
                    })
                    .collect();
                (total, rows)
            }
        });
        let Some((total, mut rows)) = page else {
            return view_error("replay", "what replay changed is not computed yet");
        };
        if section == DiffSection::Inodes {
            // The fields, read again from both sides for this page only.
            if let Some(fs) = self.fs.as_mut() {
                for r in &mut rows {
                    r.fields = crate::xfs::replay::diff::inode_field_changes(fs, r.ino)
                        .into_iter()
                        .map(|f| (f.field.to_string(), f.before, f.after))
                        .collect();
                }
            }
        }
        Response::ReplayDiffRows(Box::new(DiffRowsView {
            section,
            filter,
            start,
            total: u64::try_from(total).unwrap_or(u64::MAX),
            rows,
        }))
    }

    /// One piece of the recovered image (or of the recovered log device) from
    /// `offset`, the log replayed first if needed. Nothing but this piece is
    /// made: the page asks for the next once it has written this one.
    fn export_chunk(&mut self, out: Out<'_>, log_device: bool, offset: u64) -> Response {
        use crate::web::protocol::EXPORT_PIECE;
        let what = if log_device {
            "recovered log device"
        } else {
            "recovered image"
        };
        if let Err(e) = self.ensure_replayed(out) {
            return view_error(what, e);
        }
        let result = self
            .fs
            .as_ref()
            .ok_or_else(|| "no filesystem is open".to_string())
            .and_then(|fs| {
                let (_, plan) = self
                    .replay
                    .as_ref()
                    .ok_or_else(|| "the log could not be replayed".to_string())?;
                let rec = crate::xfs::replay::export::Recovered {
                    fs,
                    overlay: fs.img.overlay(),
                    log: plan.log,
                };
                let total = if log_device {
                    rec.log_device_len()
                        .ok_or_else(|| "the log is internal: there is no log device".to_string())?
                } else {
                    rec.len()
                };
                let at = offset.min(total);
                let n = EXPORT_PIECE.min(total.saturating_sub(at));
                let mut buf = vec![0u8; usize::try_from(n).map_err(|e| e.to_string())?];
                if log_device {
                    rec.read_log_at(at, &mut buf)
                } else {
                    rec.read_at(at, &mut buf)
                }
                .map_err(|e| e.to_string())?;
                let end = at.saturating_add(n);
                post(
                    out,
                    &Response::Progress {
                        stage: format!("writing the {what}"),
                        done: end,
                        total,
                    },
                );
                Ok::<_, String>(Response::ExportChunk {
                    log_device,
                    offset: at,
                    total,
                    bytes: crate::web::protocol::JsBytes(js_sys::Uint8Array::from(buf.as_slice())),
                    last: end >= total,
                })
            });
        result.unwrap_or_else(|e| view_error(what, e))
    }

    /// Run `f` on the open filesystem read in the state `replayed` says (the
    /// disk's, or the replayed one), the views' state restored after.
    fn in_state<T>(&mut self, replayed: bool, f: impl FnOnce(&Fs<Disk>) -> T) -> Option<T> {
        let fs = self.fs.as_mut()?;
        let was = fs.img.uses_overlay();
        fs.img.set_use_overlay(replayed);
        let out = f(fs);
        fs.img.set_use_overlay(was);
        Some(out)
    }

    /// Reconstruct the operations of the log once per image.
    fn ensure_ops(&mut self, scope: Out<'_>) {
        if self.ops.is_some() {
            return;
        }
        let mut tick = Ticker::default();
        // The log as it is on disk, whatever state the views show.
        let made = self.in_state(false, |fs| {
            ops_views::analyze(fs, &mut |p| {
                if tick.due() {
                    post(
                        scope,
                        &Response::Progress {
                            stage: format!(
                                "reconstructing the operations of the log: {} checkpoints",
                                p.checkpoints
                            ),
                            done: p.blocks_done,
                            total: p.blocks_total,
                        },
                    );
                }
            })
        });
        if let Some(m) = made {
            self.ops = Some(m);
        }
    }

    /// The forkoff distribution of the disk's state or the replayed one, once
    /// per image.
    fn ensure_forkoff(&mut self, scope: Out<'_>, replayed: bool) {
        let slot = usize::from(replayed);
        if self.forkoff.get(slot).is_some_and(Option::is_some) {
            return;
        }
        let which = if replayed { "after replay" } else { "on disk" };
        let made = self.in_state(replayed, |fs| {
            let total = read_superblock(&fs.img)
                .map(|s| s.icount.saturating_sub(s.ifree))
                .unwrap_or(0);
            let t0 = js_sys::Date::now();
            let mut tick = Ticker::default();
            let d = crate::xfs::ops::forkoff::distribution(fs, &mut |n| {
                if tick.due() {
                    post(
                        scope,
                        &Response::Progress {
                            stage: format!("reading every inode in use {which}: {n}"),
                            done: n,
                            total,
                        },
                    );
                }
            });
            ops_views::forkoff_view(&d, js_sys::Date::now() - t0)
        });
        if let Some(s) = self.forkoff.get_mut(slot) {
            *s = made;
        }
    }

    /// The operations view: the log's operations in numbers, the forkoff
    /// distribution on disk and, when the views show it, after replay.
    fn ops(&mut self, scope: Out<'_>) -> Response {
        post(
            scope,
            &Response::Progress {
                stage: "reconstructing the operations of the log".into(),
                done: 0,
                total: 0,
            },
        );
        self.ensure_ops(scope);
        self.ensure_forkoff(scope, false);
        let replayed = self.fs.as_ref().is_some_and(|fs| fs.img.uses_overlay());
        if replayed {
            self.ensure_forkoff(scope, true);
        }
        let Some(mut view) = self.ops.as_ref().map(ops_views::summary) else {
            return view_error("operations", "no filesystem is open");
        };
        view.forkoff = self.forkoff.first().cloned().flatten();
        if replayed {
            view.forkoff_replayed = self.forkoff.get(1).cloned().flatten();
        }
        Response::Ops(Box::new(view))
    }

    /// A page of the operations timeline (the operations reconstructed first
    /// if needed).
    fn ops_timeline(&mut self, scope: Out<'_>, start: u32, skip: u32) -> Response {
        self.ensure_ops(scope);
        match self.ops.as_ref() {
            Some(s) => Response::OpsTimeline(Box::new(ops_views::timeline(s, start, skip))),
            None => view_error("operations", "no filesystem is open"),
        }
    }
}

fn ags(out: Out<'_>, fs: &Fs<Disk>) -> Response {
    let total = u64::from(fs.geo.agcount);
    let mut tick = Ticker::default();
    let ags = (0..fs.geo.agcount)
        .inspect(|a| {
            if tick.due() {
                post(
                    out,
                    &Response::Progress {
                        stage: format!("reading the headers of AG {a} of {total}"),
                        done: u64::from(*a),
                        total,
                    },
                );
            }
        })
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
    let name = timed_name(&req);
    timing::take();
    let t0 = timing::now();
    let resp = SESSION.with(|s| s.borrow_mut().answer(scope, req));
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
    fn answer(&mut self, scope: Out<'_>, req: Request) -> Option<Response> {
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
                    None => post(scope, &view_error("file", "no filesystem is open")),
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
                            .map(|l| log_views::logged_copies(l, daddr, 64))
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
                self.with_log(scope, log_views::summary)
            }
            Request::LogRows { start, count } => {
                self.with_log(scope, |l| log_views::rows(l, start, count))
            }
            Request::LogTransaction { index } => {
                self.with_log(scope, |l| log_views::transaction(l, index))
            }
            Request::SetReplay { on } => self.set_replay(scope, on),
            Request::ExportChunk { log_device, offset } => {
                self.export_chunk(scope, log_device, offset)
            }
            Request::ReplayDiff => self.replay_diff(scope),
            Request::ReplayDiffRows {
                section,
                filter,
                start,
                count,
            } => self.replay_diff_rows(section, filter, start, count),
            Request::Ops => self.ops(scope),
            Request::OpsTimeline { start, skip } => self.ops_timeline(scope, start, skip),
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

/// Entry point of the worker binary.
pub fn start() {
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let out: Rc<dyn Fn(&Response)> = {
        let scope = scope.clone();
        Rc::new(move |r: &Response| post_js(&scope, r))
    };
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        match serde_wasm_bindgen::from_value::<Request>(ev.data()) {
            Ok(req) => handle(&out, req),
            Err(e) => post(
                &out,
                &Response::Error {
                    name: String::new(),
                    message: format!("the worker did not understand a request: {e}"),
                },
            ),
        }
    });
    scope.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    onmessage.forget();
    post_js(&scope, &Response::Ready);
}
