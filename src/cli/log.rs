//! `xfs-explorer log`: the live part of the journal, every transaction and
//! item, and what each logged buffer's dirty bitmap covers.

use crate::xfs::log::bitmap::describe_run;
use crate::xfs::log::items::ItemBody;
use crate::xfs::log::{self, DecodeOptions, ItemContext, LogDecode, Transaction};
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
    let d = log::decode(&fs, opts).map_err(|e| format!("{}: {e}", path.display()))?;
    let ctx = ItemContext::of(&fs, opts);
    let ctx = o.detail.then_some(&ctx);
    let mut out = std::io::BufWriter::with_capacity(1 << 20, raw_stdout()?);
    if o.json {
        log::json::write_log_json_with(&mut out, &d, ctx, &mut |w, buf, ts| {
            transactions_parallel(w, buf, ts, ctx)
        })
        .map_err(|e| e.to_string())?;
        out.write_all(b"\n").map_err(|e| e.to_string())?;
    } else {
        write_text(&mut out, &d, ctx, o.brief).map_err(|e| e.to_string())?;
    }
    out.flush().map_err(|e| e.to_string())?;
    // The process ends here: freeing millions of items one by one would
    // only cost time.
    std::mem::forget(d);
    Ok(())
}

/// The committed transactions' JSON list, pieces of it formatted by a
/// second thread while this one formats and writes the others (in order).
fn transactions_parallel<W: std::io::Write>(
    w: &mut W,
    buf: &mut Vec<u8>,
    ts: &[Transaction],
    ctx: Option<&ItemContext>,
) -> std::io::Result<()> {
    // Transactions per piece: a few hundred kilobytes of JSON.
    transactions_in_pieces(w, buf, ts, ctx, 256)
}

fn transactions_in_pieces<W: std::io::Write>(
    w: &mut W,
    buf: &mut Vec<u8>,
    ts: &[Transaction],
    ctx: Option<&ItemContext>,
    piece: usize,
) -> std::io::Result<()> {
    use log::json::transactions_chunk;
    use std::sync::mpsc::sync_channel;
    let chunks: Vec<&[Transaction]> = ts.chunks(piece.max(1)).collect();
    buf.push(b'[');
    let two = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    let done = std::thread::scope(|s| -> std::io::Result<bool> {
        if !two || chunks.len() < 4 {
            return Ok(false);
        }
        // Pieces go out in order through a short queue; their buffers come
        // back for reuse.
        let (tx, rx) = sync_channel::<std::io::Result<Vec<u8>>>(2);
        let (back_tx, back_rx) = sync_channel::<Vec<u8>>(4);
        let theirs: Vec<&[Transaction]> = chunks.iter().skip(1).step_by(2).copied().collect();
        let spawned = std::thread::Builder::new().spawn_scoped(s, move || {
            for c in theirs {
                let mut v = back_rx.try_recv().unwrap_or_default();
                v.clear();
                let r = transactions_chunk(&mut v, c, ctx, false).map(|()| v);
                if tx.send(r).is_err() {
                    return;
                }
            }
        });
        if spawned.is_err() {
            return Ok(false);
        }
        for (i, c) in chunks.iter().enumerate() {
            if i % 2 == 0 {
                transactions_chunk(buf, c, ctx, i == 0)?;
            } else {
                let v = rx
                    .recv()
                    .map_err(|_| std::io::Error::other("JSON thread stopped"))??;
                w.write_all(buf)?;
                buf.clear();
                w.write_all(&v)?;
                // The queue back may be full: then the buffer is dropped.
                let _ = back_tx.try_send(v);
            }
            if buf.len() >= 1 << 20 {
                w.write_all(buf)?;
                buf.clear();
            }
        }
        Ok(true)
    })?;
    if !done {
        for (i, c) in chunks.iter().enumerate() {
            transactions_chunk(buf, c, ctx, i == 0)?;
            if buf.len() >= 1 << 20 {
                w.write_all(buf)?;
                buf.clear();
            }
        }
    }
    buf.push(b']');
    Ok(())
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

fn write_text(
    out: &mut impl std::io::Write,
    d: &LogDecode,
    ctx: Option<&ItemContext>,
    brief: bool,
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
        d.transactions.len(),
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
    for (i, t) in d.transactions.iter().enumerate() {
        write_transaction(out, i, t, ctx, brief)?;
    }
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
        let line = format!(
            "  {i:>4} {:<8} regions {}  {}",
            it.kind.name(),
            it.regions,
            it.describe()
        );
        writeln!(out, "{line}")?;
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

    /// The list written in pieces by two threads is the one written in one
    /// go, whatever the piece size.
    #[test]
    fn pieces_in_order() {
        let fs = crate::xfs::testutil::fixture_fs("log-1k-rmap");
        let d = log::decode(&fs, DecodeOptions::default()).unwrap();
        assert!(d.transactions.len() > 20);
        let mut one = Vec::new();
        log::json::write_log_json(&mut one, &d, None).unwrap();
        for piece in [1, 3, 7, 1000] {
            let mut out = Vec::new();
            log::json::write_log_json_with(&mut out, &d, None, &mut |w, buf, ts| {
                transactions_in_pieces(w, buf, ts, None, piece)
            })
            .unwrap();
            assert!(out == one, "piece size {piece}");
        }
    }
}
