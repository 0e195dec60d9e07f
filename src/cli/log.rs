//! `xfs-explorer log`: the live part of the journal, every transaction and
//! item, and what each logged buffer's dirty bitmap covers.

use crate::xfs::log::items::ItemBody;
use crate::xfs::log::items::{IntentRef, Linker};
use crate::xfs::log::run_fields::describe_run;
use crate::xfs::log::stats::{LogStats, TransStats};
use crate::xfs::log::trans::{decode_raw, RawItems, RawSink};
use crate::xfs::log::{self, DecodeOptions, HeadTail, ItemContext, LogDecode, Transaction};
use std::io::Write as _;
use std::path::Path;

pub struct Options {
    pub json: bool,
    /// Name the fields (and directory entries) each buffer run covers and
    /// show the logged inode cores.
    pub detail: bool,
    /// Text only: per-transaction summary lines without items.
    pub brief: bool,
}

pub fn run(path: &Path, o: &Options) -> Result<(), String> {
    let fs = super::open_fs(path)?;
    let opts = if o.detail {
        DecodeOptions::DETAIL
    } else {
        DecodeOptions::default()
    };
    let ctx = ItemContext::of(&fs, opts);
    let ctx = o.detail.then_some(ctx);
    let out = std::io::BufWriter::with_capacity(1 << 20, raw_stdout()?);
    if o.json {
        let mut out = out;
        write_json_streamed(&fs, opts, ctx, &mut out)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        return out.flush().map_err(|e| e.to_string());
    }
    let mut out = out;
    write_text_streamed(&fs, opts, ctx.as_ref(), o.brief, &mut out)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    out.flush().map_err(|e| e.to_string())
}

/// Counts the committed transactions and drops them, undecoded.
struct CountSink(usize);

impl RawSink for CountSink {
    fn begin(&mut self, _: &HeadTail) {}
    fn transaction(&mut self, _: Transaction, raw: RawItems) -> Option<RawItems> {
        self.0 = self.0.saturating_add(1);
        Some(raw)
    }
}

/// The writing thread's side of a streamed walk: each piece's items
/// decoded and their intents linked, here and not on the reading thread.
struct Linking<'a> {
    ctx: &'a ItemContext,
    linker: Linker,
    /// Raw items decoded, back to the reading thread for reuse.
    back: std::sync::mpsc::SyncSender<Vec<RawItems>>,
}

impl Linking<'_> {
    /// The transactions of a piece that are ready, into `ready` (one held
    /// behind an intent waits for its done item or the end).
    fn take(
        &mut self,
        ts: Vec<Transaction>,
        mut raws: Vec<RawItems>,
        ready: &mut Vec<Transaction>,
    ) {
        for (mut t, raw) in ts.into_iter().zip(&raws) {
            decode_raw(&mut t, raw, self.ctx);
            self.linker.push(t, &mut |t| ready.push(t));
        }
        // Back all at once, but not a very large one.
        raws.retain(|r| r.capacity() <= RAW_KEPT);
        // Dropped here when the queue back is full.
        let _ = self.back.try_send(raws);
    }

    /// The end of the log: the transactions still held, into `ready`; the
    /// intents left unfinished and the done items without an intent.
    fn finish(self, ready: &mut Vec<Transaction>) -> (Vec<IntentRef>, u64) {
        self.linker.finish(&mut |t| ready.push(t))
    }
}

/// The text thread: each piece of transactions as it comes, counted into
/// `stats`; buffered and written a megabyte at a time.
fn write_text_pieces<W: std::io::Write>(
    w: &mut W,
    rx: std::sync::mpsc::Receiver<Msg>,
    mut linking: Linking<'_>,
    ctx: Option<&ItemContext>,
    brief: bool,
    stats: &mut LogStats,
) -> std::io::Result<(Vec<IntentRef>, u64)> {
    let mut buf: Vec<u8> = Vec::with_capacity(2 << 20);
    let mut st = TransStats::default();
    let mut index = 0usize;
    let mut ready = Vec::new();
    let mut write = |buf: &mut Vec<u8>, ready: &mut Vec<Transaction>| -> std::io::Result<()> {
        for t in ready.drain(..) {
            st.fill(&t, true);
            stats.add(&st);
            write_transaction(buf, index, &t, ctx, brief)?;
            index = index.saturating_add(1);
        }
        Ok(())
    };
    for m in rx {
        let Msg::Piece(ts, raws) = m else { continue };
        linking.take(ts, raws, &mut ready);
        write(&mut buf, &mut ready)?;
        if buf.len() >= 1 << 20 {
            w.write_all(&buf)?;
            buf.clear();
        }
    }
    let linked = linking.finish(&mut ready);
    write(&mut buf, &mut ready)?;
    w.write_all(&buf)?;
    Ok(linked)
}

/// The text listing with memory bounded by what is open at once in the
/// log, not by the log: a first streamed read counts the transactions for
/// the heading, a second hands them in pieces to a thread that writes
/// each as it is complete. The output is the one [`write_text`] makes
/// from a whole decode.
pub fn write_text_streamed<R: crate::xfs::read::ReadAt, W: std::io::Write + Send>(
    fs: &crate::xfs::fs::Fs<R>,
    opts: DecodeOptions,
    ctx: Option<&ItemContext>,
    brief: bool,
    out: &mut W,
) -> Result<(), String> {
    let mut count = CountSink(0);
    let first = log::decode_streaming_raw(fs, opts, &mut count).map_err(|e| e.to_string())?;
    write_text_head(out, &first, count.0).map_err(|e| e.to_string())?;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Msg>(PIECES_QUEUED);
    let (back_tx, back) = std::sync::mpsc::sync_channel::<Vec<RawItems>>(RAW_BACK);
    let dctx = ItemContext::of(fs, opts);
    std::thread::scope(|s| {
        let writer = s.spawn(move || {
            let mut stats = LogStats::default();
            let linking = Linking {
                ctx: &dctx,
                linker: Linker::new(),
                back: back_tx,
            };
            let r = write_text_pieces(&mut *out, rx, linking, ctx, brief, &mut stats);
            (out, r, stats)
        });
        let mut sink = PieceSink::new(tx, back);
        let d = log::decode_streaming_raw(fs, opts, &mut sink);
        sink.flush();
        drop(sink);
        let (out, r, stats) = writer
            .join()
            .map_err(|_| "the text writing thread stopped".to_string())?;
        let (unfinished, orphans) = r.map_err(|e| e.to_string())?;
        let mut d = d.map_err(|e| e.to_string())?;
        d.stats = stats;
        d.unfinished_intents = unfinished;
        d.orphan_dones = orphans;
        write_text_rest(out, &d, ctx, brief).map_err(|e| e.to_string())
    })
}

/// What the writing thread is sent.
enum Msg {
    Begin(Box<HeadTail>),
    /// Committed transactions, their items still raw (one for each).
    Piece(Vec<Transaction>, Vec<RawItems>),
}

/// Gathers committed transactions into pieces for the writing thread.
struct PieceSink {
    tx: std::sync::mpsc::SyncSender<Msg>,
    /// Raw items decoded, coming back a piece at a time to be reused here
    /// (memory freed by the thread that allocated it does not contend for
    /// the allocator's lock, and a buffer reused does not grow again).
    back: std::sync::mpsc::Receiver<Vec<RawItems>>,
    ts: Vec<Transaction>,
    raws: Vec<RawItems>,
    /// Items in `raws`.
    items: usize,
    /// Raw items come back, handed out one for each transaction taken.
    spare: Vec<RawItems>,
}

/// Pieces on their way to the writing thread: enough to keep it busy; each
/// more holds up to a piece's raw items in memory.
const PIECES_QUEUED: usize = 3;

/// Pieces of raw items on their way back to the reading thread.
const RAW_BACK: usize = 2;

/// The largest raw items sent back for reuse.
const RAW_KEPT: usize = 16 << 20;

/// Transactions per piece: up to about a hundred kilobytes of JSON.
const PIECE: usize = 256;

/// Items per piece: a piece also goes as soon as it holds this many items,
/// so that a log of a few large checkpoints is written while it is read
/// and no more than about one checkpoint is held at once.
const PIECE_ITEMS: usize = 8192;

impl PieceSink {
    fn new(
        tx: std::sync::mpsc::SyncSender<Msg>,
        back: std::sync::mpsc::Receiver<Vec<RawItems>>,
    ) -> Self {
        PieceSink {
            tx,
            back,
            ts: Vec::with_capacity(PIECE),
            raws: Vec::with_capacity(PIECE),
            items: 0,
            spare: Vec::new(),
        }
    }

    /// Send what is gathered.
    fn flush(&mut self) {
        self.items = 0;
        if !self.ts.is_empty() {
            let ts = std::mem::replace(&mut self.ts, Vec::with_capacity(PIECE));
            let raws = std::mem::replace(&mut self.raws, Vec::with_capacity(PIECE));
            // A closed queue: the writing thread has stopped and says why.
            let _ = self.tx.send(Msg::Piece(ts, raws));
        }
    }
}

impl RawSink for PieceSink {
    fn begin(&mut self, ht: &HeadTail) {
        let _ = self.tx.send(Msg::Begin(Box::new(ht.clone())));
    }
    fn transaction(&mut self, t: Transaction, raw: RawItems) -> Option<RawItems> {
        self.items = self.items.saturating_add(raw.len());
        self.ts.push(t);
        self.raws.push(raw);
        if self.ts.len() >= PIECE || self.items >= PIECE_ITEMS {
            self.flush();
        }
        if self.spare.is_empty() {
            if let Ok(v) = self.back.try_recv() {
                self.spare = v;
            }
        }
        self.spare.pop()
    }
}

/// The JSON thread: the head of the object, then each piece of
/// transactions as it comes. Returns whether the head was written.
fn write_pieces<W: std::io::Write>(
    w: &mut W,
    rx: std::sync::mpsc::Receiver<Msg>,
    mut linking: Linking<'_>,
    ctx: Option<&ItemContext>,
    stats: &mut LogStats,
) -> std::io::Result<(bool, Vec<IntentRef>, u64)> {
    let mut buf: Vec<u8> = Vec::with_capacity(2 << 20);
    let mut begun = false;
    let mut first = true;
    let mut ready = Vec::new();
    for m in rx {
        match m {
            Msg::Begin(ht) => {
                log::json::write_json_head(w, &ht)?;
                buf.push(b'[');
                begun = true;
            }
            Msg::Piece(ts, raws) => {
                linking.take(ts, raws, &mut ready);
                if !ready.is_empty() {
                    log::json::transactions_chunk(&mut buf, &ready, ctx, first, Some(&mut *stats))?;
                    first = false;
                    ready.clear();
                }
                if buf.len() >= 1 << 20 {
                    w.write_all(&buf)?;
                    buf.clear();
                }
            }
        }
    }
    let (unfinished, orphans) = linking.finish(&mut ready);
    if begun {
        if !ready.is_empty() {
            log::json::transactions_chunk(&mut buf, &ready, ctx, first, Some(&mut *stats))?;
        }
        buf.push(b']');
        w.write_all(&buf)?;
    }
    Ok((begun, unfinished, orphans))
}

/// `log --json` while the log is read: this thread reads, checks and
/// assembles the records into transactions, a second decodes their items,
/// links their intents and writes them as JSON as soon as each is
/// complete; then the rest of the object. (Reading and checking on a third
/// thread was slower on two cores: BENCHMARKS.md.)
pub fn write_json_streamed<R: crate::xfs::read::ReadAt, W: std::io::Write + Send>(
    fs: &crate::xfs::fs::Fs<R>,
    opts: DecodeOptions,
    ctx: Option<ItemContext>,
    w: &mut W,
) -> Result<(), String> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Msg>(PIECES_QUEUED);
    let (back_tx, back) = std::sync::mpsc::sync_channel::<Vec<RawItems>>(RAW_BACK);
    let dctx = ItemContext::of(fs, opts);
    std::thread::scope(|s| {
        let writer = s.spawn(move || {
            // The transactions are counted here, off the reading thread.
            let mut stats = LogStats::default();
            let linking = Linking {
                ctx: &dctx,
                linker: Linker::new(),
                back: back_tx,
            };
            let r = write_pieces(&mut *w, rx, linking, ctx.as_ref(), &mut stats);
            (w, r, stats)
        });
        let mut sink = PieceSink::new(tx, back);
        let d = log::decode_streaming_raw(fs, opts, &mut sink);
        sink.flush();
        drop(sink);
        let (w, r, stats) = writer
            .join()
            .map_err(|_| "the JSON writing thread stopped".to_string())?;
        let (begun, unfinished, orphans) = r.map_err(|e| e.to_string())?;
        let mut d = d.map_err(|e| e.to_string())?;
        d.stats = stats;
        d.unfinished_intents = unfinished;
        d.orphan_dones = orphans;
        if !begun {
            log::json::write_json_head(w, &d.head_tail).map_err(|e| e.to_string())?;
            w.write_all(b"[]").map_err(|e| e.to_string())?;
        }
        log::json::write_json_rest(w, &d, ctx.as_ref()).map_err(|e| e.to_string())?;
        w.write_all(b"\n").map_err(|e| e.to_string())
    })
}

/// Standard output without the line buffering of `std::io::stdout()`
/// (which looks for newlines in every write: slow for a big JSON object).
#[cfg(unix)]
fn raw_stdout() -> Result<std::fs::File, String> {
    use std::os::fd::AsFd;
    let fd = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| e.to_string())?;
    Ok(std::fs::File::from(fd))
}

#[cfg(not(unix))]
fn raw_stdout() -> Result<std::io::Stdout, String> {
    Ok(std::io::stdout())
}

fn lsn(l: crate::xfs::types::Lsn) -> String {
    format!("{}:{}", l.cycle, l.block)
}

/// The text listing of a whole decode.
#[cfg(test)]
fn write_text(
    out: &mut impl std::io::Write,
    d: &LogDecode,
    ctx: Option<&ItemContext>,
    brief: bool,
) -> std::io::Result<()> {
    write_text_head(out, d, d.transactions.len())?;
    for (i, t) in d.transactions.iter().enumerate() {
        write_transaction(out, i, t, ctx, brief)?;
    }
    write_text_rest(out, d, ctx, brief)
}

/// What the listing says before the transactions (`transactions` of them
/// committed).
fn write_text_head(
    out: &mut impl std::io::Write,
    d: &LogDecode,
    transactions: usize,
) -> std::io::Result<()> {
    let ht = &d.head_tail;
    writeln!(
        out,
        "log: daddr {} length {} blocks (512 bytes){}",
        d.location.start_daddr.0,
        d.location.len_bbs,
        if d.location.v2 { ", v2" } else { ", v1" }
    )?;
    writeln!(
        out,
        "state: {}   head: cycle {} block {}   tail: cycle {} block {}",
        if ht.clean { "clean" } else { "dirty" },
        ht.head.cycle,
        ht.head.block,
        ht.tail.cycle,
        ht.tail.block
    )?;
    if let Some(t) = &ht.torn_write {
        writeln!(
            out,
            "torn write: record at block {} failed its CRC; head moved back from {}",
            t.first_bad, t.old_head
        )?;
    }
    if let Some(t) = &ht.tail_moved {
        writeln!(out, "tail moved from {} to {}: {}", t.from, t.to, t.reason)?;
    }
    writeln!(
        out,
        "records: {} ({} CRC ok, {} without CRC, {} CRC mismatches)   transactions: {} committed, {} incomplete",
        d.records,
        d.records_crc_ok,
        d.records_no_crc,
        d.crc_mismatches.len(),
        transactions,
        d.incomplete.len()
    )?;
    for m in &d.crc_mismatches {
        writeln!(
            out,
            "  CRC mismatch: record {} at block {}: stored {:#010x}, computed {:#010x}",
            lsn(m.lsn),
            m.block,
            m.stored,
            m.computed
        )?;
    }
    Ok(())
}

/// What the listing says after the committed transactions.
fn write_text_rest(
    out: &mut impl std::io::Write,
    d: &LogDecode,
    ctx: Option<&ItemContext>,
    brief: bool,
) -> std::io::Result<()> {
    for t in &d.incomplete {
        writeln!(out, "incomplete (no commit record):")?;
        write_transaction(out, usize::MAX, t, ctx, brief)?;
    }
    if !d.unfinished_intents.is_empty() {
        writeln!(out, "unfinished intents (no done item in the live log):")?;
        for i in &d.unfinished_intents {
            writeln!(
                out,
                "  {} id {:#x} in transaction #{} (tid {:#x}) item {}",
                i.kind.name(),
                i.id,
                i.at.transaction,
                i.tid,
                i.at.item
            )?;
        }
    }
    let s = &d.stats;
    writeln!(
        out,
        "totals: {} transactions, {} ops, {} items, {} regions, {} bytes",
        s.transactions, s.ops, s.items, s.regions, s.bytes
    )?;
    for (k, v) in &s.by_kind {
        writeln!(
            out,
            "  {k:<9} {:>8} items {:>9} regions {:>12} bytes",
            v.items, v.regions, v.bytes
        )?;
    }
    if s.buffers.items > 0 {
        writeln!(
            out,
            "  buffers by type: items, dirty 128-byte chunks, runs, bytes logged, regions walked chunk-at-a-time vs run-at-a-time"
        )?;
        for (k, v) in &s.by_buf_type {
            writeln!(
                out,
                "  {k:<10} {:>7} {:>9} {:>8} {:>12}   {} vs {}",
                v.items,
                v.chunks_dirty,
                v.runs,
                v.bytes_logged,
                v.regions_chunkwise,
                v.regions_runwise
            )?;
        }
    }
    for p in &d.problems {
        match p.block {
            Some(b) => writeln!(out, "problem at log block {b}: {}", p.message)?,
            None => writeln!(out, "problem: {}", p.message)?,
        }
    }
    Ok(())
}

/// Text formatting (`std::fmt::Write`) into a byte writer; the first
/// error of the writer is kept.
struct IoFmt<'a, W: std::io::Write> {
    w: &'a mut W,
    err: Option<std::io::Error>,
}

impl<W: std::io::Write> std::fmt::Write for IoFmt<'_, W> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.w.write_all(s.as_bytes()).map_err(|e| {
            self.err = Some(e);
            std::fmt::Error
        })
    }
}

fn write_transaction(
    out: &mut impl std::io::Write,
    index: usize,
    t: &Transaction,
    ctx: Option<&ItemContext>,
    brief: bool,
) -> std::io::Result<()> {
    let h = t.header;
    let num = if index == usize::MAX {
        String::new()
    } else {
        format!("#{index} ")
    };
    writeln!(
        out,
        "transaction {num}tid {:#x}  start {}  commit {}  type {}  num_items {}  items {}  regions {}  ops {}  bytes {}",
        t.tid,
        lsn(t.start_lsn),
        t.commit_lsn.map_or("-".to_string(), lsn),
        h.map_or("?".to_string(), |h| h.type_.to_string()),
        h.map_or("?".to_string(), |h| h.num_items.to_string()),
        t.items.len(),
        t.regions(),
        t.ops,
        t.op_bytes
    )?;
    for p in &t.problems {
        writeln!(out, "  problem: {p}")?;
    }
    if brief {
        return Ok(());
    }
    for (i, it) in t.items.iter().enumerate() {
        write!(
            out,
            "  {i:>4} {:<8} regions {}  ",
            it.kind.name(),
            it.regions
        )?;
        let mut f = IoFmt { w: out, err: None };
        if it.describe_to(&mut f).is_err() {
            return Err(f
                .err
                .unwrap_or_else(|| std::io::Error::other("an item could not be described")));
        }
        out.write_all(b"\n")?;
        if let (ItemBody::Buf(b), Some(ctx)) = (&it.body, ctx) {
            for r in b.runs() {
                let f = describe_run(b, r, ctx);
                if !f.is_empty() {
                    let (lo, hi) = r.bytes();
                    writeln!(out, "         bytes {lo}..{hi}: {}", f.join(", "))?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Each fixture log decoded whole, with and without details: `f` gets
    /// the name, the filesystem, the options, the item context and the
    /// decode.
    fn each_decode(
        mut f: impl FnMut(
            &str,
            &crate::xfs::fs::Fs<crate::xfs::read::FileReader>,
            DecodeOptions,
            Option<&ItemContext>,
            &LogDecode,
        ),
    ) {
        for name in [
            "log-1k-rmap",
            "log-intents",
            "log-wrapped",
            "log-acrossend",
            "log-64kdir",
            "v5-4k-dirty",
            "v5-formats",
        ] {
            let fs = crate::xfs::testutil::fixture_fs(name);
            for detail in [false, true] {
                let opts = if detail {
                    DecodeOptions::DETAIL
                } else {
                    DecodeOptions::default()
                };
                let ctx = ItemContext::of(&fs, opts);
                let ctx = detail.then_some(ctx);
                let d = log::decode(&fs, opts).unwrap();
                f(name, &fs, opts, ctx.as_ref(), &d);
            }
        }
    }

    /// The text listing written while the log is read is the one written
    /// from the whole decode, with and without details, brief or not.
    #[test]
    fn streamed_text_is_the_whole_decode() {
        each_decode(|name, fs, opts, ctx, d| {
            for brief in [false, true] {
                let mut one = Vec::new();
                write_text(&mut one, d, ctx, brief).unwrap();
                let mut streamed = Vec::new();
                write_text_streamed(fs, opts, ctx, brief, &mut streamed).unwrap();
                assert!(streamed == one, "{name} {opts:?} brief {brief}");
                assert!(!d.transactions.is_empty() || name == "v5-formats", "{name}");
            }
        });
    }

    /// The object written while the log is read is the one written from
    /// the whole decode: same transactions, same intent links, same rest.
    #[test]
    fn streamed_json_is_the_whole_decode() {
        each_decode(|name, fs, opts, ctx, d| {
            let mut one = Vec::new();
            log::json::write_log_json(&mut one, d, ctx).unwrap();
            one.push(b'\n');
            let mut streamed = Vec::new();
            write_json_streamed(fs, opts, ctx.copied(), &mut streamed).unwrap();
            assert!(streamed == one, "{name} {opts:?}");
            let v: serde_json::Value = serde_json::from_slice(&streamed).unwrap();
            assert_eq!(
                v["transactions"].as_array().unwrap().len(),
                d.transactions.len(),
                "{name}"
            );
        });
    }
}
