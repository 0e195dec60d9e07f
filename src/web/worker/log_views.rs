//! Worker side of the log view: the log decoded once per image into a
//! compact index (what each transaction's row shows, intent links, the
//! buffer items by block), and the pieces of it the page asks for. A
//! transaction's items are decoded again when they are asked for, so the
//! worker's memory is bounded by the largest checkpoint, not by the log.

use crate::web::protocol::{BitmapView, ItemView, Kv, LogView, Response, RunView, TxDetail, TxRow};
use crate::web::worker::blob_reader::Disk;
use crate::xfs::fs::Fs;
use crate::xfs::log::index::{decode_indexed, LogIndex, TxSummary};
use crate::xfs::log::items::ItemBody;
use crate::xfs::log::run_fields::describe_run;
use crate::xfs::log::{DecodeOptions, ItemContext, LogDecode, Transaction};
use crate::xfs::types::Lsn;

/// Most rows sent in one page.
const MAX_ROWS: u32 = 1000;

/// Options the page's log view decodes with (entry names for directory runs).
const OPTS: DecodeOptions = DecodeOptions {
    dir_names: true,
    inode_cores: false,
};

pub struct DecodedLog {
    /// What the decode found, without its transactions and record list.
    pub d: LogDecode,
    /// The committed transactions, compactly.
    pub index: LogIndex,
    /// Transactions started but not committed before the head.
    incomplete: usize,
    pub ctx: ItemContext,
    /// The transactions of [`Self::unfinished_items`], sorted, once each.
    unfinished_tx: Vec<u32>,
    /// (transaction, item) of every intent with no done item, sorted.
    unfinished_items: Vec<(u32, u32)>,
    decode_ms: f64,
}

fn lsn(l: Lsn) -> String {
    format!("{}:{}", l.cycle, l.block)
}

/// Decode the log of `fs`, timing it.
pub fn decode(fs: &Fs<Disk>) -> Result<DecodedLog, String> {
    let t0 = js_sys::Date::now();
    let (mut d, index) = decode_indexed(fs, OPTS).map_err(|e| e.to_string())?;
    let decode_ms = js_sys::Date::now() - t0;
    let mut unfinished_items: Vec<(u32, u32)> = d
        .unfinished_intents
        .iter()
        .map(|i| (i.at.transaction, i.at.item))
        .collect();
    crate::xfs::sort::by_key(&mut unfinished_items, |&(t, i)| {
        crate::xfs::sort::pair(u64::from(t), u64::from(i))
    });
    let mut unfinished_tx: Vec<u32> = unfinished_items.iter().map(|&(t, _)| t).collect();
    unfinished_tx.dedup();
    // The views need neither the record list nor the incomplete
    // transactions' items.
    let incomplete = d.incomplete.len();
    d.incomplete = Vec::new();
    d.record_list = Vec::new();
    Ok(DecodedLog {
        d,
        index,
        incomplete,
        ctx: ItemContext::of(fs, OPTS),
        unfinished_tx,
        unfinished_items,
        decode_ms,
    })
}

pub fn summary(l: &DecodedLog) -> Response {
    let d = &l.d;
    let ht = &d.head_tail;
    let st = &d.stats;
    let b = &st.buffers;
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    let kv = |name: &str, value: u64, meaning: &str| Kv {
        name: name.into(),
        value: value.to_string(),
        meaning: meaning.into(),
    };
    Response::Log(Box::new(LogView {
        clean: ht.clean,
        head: (ht.head.cycle, ht.head.block),
        tail: (ht.tail.cycle, ht.tail.block),
        len_bbs: d.location.len_bbs,
        start_daddr: d.location.start_daddr.0,
        external: d.location.external,
        records: d.records,
        records_crc_ok: d.records_crc_ok,
        crc_mismatches: d
            .crc_mismatches
            .iter()
            .map(|m| {
                format!(
                    "record {}: stored {:#010x}, computed {:#010x}",
                    lsn(m.lsn),
                    m.stored,
                    m.computed
                )
            })
            .collect(),
        transactions: count(l.index.len()),
        incomplete: count(l.incomplete),
        unfinished: d
            .unfinished_intents
            .iter()
            .map(|i| {
                format!(
                    "{} id {:#x} in transaction #{} item {}",
                    i.kind.name(),
                    i.id,
                    i.at.transaction,
                    i.at.item
                )
            })
            .collect(),
        unfinished_tx: l.unfinished_tx.clone(),
        by_kind: st
            .by_kind
            .iter()
            .map(|(k, t)| ((*k).to_string(), t.items, t.regions, t.bytes))
            .collect(),
        buffers: vec![
            kv("buffer items", b.items, "buffer log items"),
            kv("cancelled", b.cancelled, "freed buffers: they log no data"),
            kv(
                "chunks dirty",
                b.chunks_dirty,
                "128-byte chunks marked in the dirty bitmaps",
            ),
            kv(
                "runs",
                b.runs,
                "contiguous runs of dirty chunks (one logged region each)",
            ),
            kv(
                "bytes logged",
                b.bytes_logged,
                "bytes of buffer data in the log",
            ),
            kv(
                "regions chunk by chunk",
                b.regions_chunkwise,
                "regions a chunk-at-a-time walk visits",
            ),
            kv(
                "regions run by run",
                b.regions_runwise,
                "regions a run-at-a-time walk visits",
            ),
        ],
        problems: d
            .problems
            .iter()
            .map(|p| match p.block {
                Some(b) => format!("log block {b}: {}", p.message),
                None => p.message.clone(),
            })
            .collect(),
        decode_ms: l.decode_ms,
    }))
}

fn row(l: &DecodedLog, index: u32, t: &TxSummary) -> TxRow {
    TxRow {
        index,
        tid: t.tid,
        start: lsn(t.start_lsn),
        commit: t.commit_lsn.map_or("-".into(), lsn),
        items: t.items,
        regions: t.regions,
        bytes: t.op_bytes,
        kinds: l
            .index
            .kinds(t)
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        unfinished_intent: l.unfinished_tx.binary_search(&index).is_ok(),
    }
}

pub fn rows(l: &DecodedLog, start: u32, count: u32) -> Response {
    let first = usize::try_from(start).unwrap_or(usize::MAX);
    let n = usize::try_from(count.min(MAX_ROWS)).unwrap_or(0);
    let rows = l
        .index
        .summaries()
        .iter()
        .enumerate()
        .skip(first)
        .take(n)
        .map(|(i, t)| row(l, u32::try_from(i).unwrap_or(u32::MAX), t))
        .collect();
    Response::LogRows { start, rows }
}

/// Transaction `index` of the index, decoded again from the log.
fn decode_again(
    fs: &Fs<Disk>,
    l: &DecodedLog,
    index: u32,
) -> Result<(TxSummary, Transaction), String> {
    let Some(s) = l.index.summary(index) else {
        return Err("no such transaction".into());
    };
    match l.index.transaction(fs, index, OPTS) {
        Ok(Some(t)) => Ok((*s, t)),
        Ok(None) => Err("the log no longer holds it".into()),
        Err(e) => Err(e.to_string()),
    }
}

pub fn transaction(fs: &Fs<Disk>, l: &DecodedLog, index: u32) -> Response {
    let (s, t) = match decode_again(fs, l, index) {
        Ok(x) => x,
        Err(message) => {
            return Response::ViewError {
                what: format!("transaction #{index}"),
                message,
            }
        }
    };
    let items = t
        .items
        .iter()
        .enumerate()
        .map(|(ii, it)| {
            let bitmap = match &it.body {
                ItemBody::Buf(b) => Some(BitmapView {
                    chunks: u32::from(b.len).saturating_mul(4),
                    runs: b
                        .runs()
                        .into_iter()
                        .map(|r| RunView {
                            first: r.first,
                            count: r.count,
                            label: describe_run(b, r, &l.ctx).join(", "),
                        })
                        .collect(),
                    cancel: b.cancel(),
                }),
                _ => None,
            };
            ItemView {
                kind: it.kind.name().to_string(),
                regions: it.regions,
                text: it.describe(),
                intent: it.kind.is_intent(),
                unfinished: it.kind.is_intent()
                    && l.unfinished_items
                        .binary_search(&(index, u32::try_from(ii).unwrap_or(u32::MAX)))
                        .is_ok(),
                bitmap,
                daddr: match &it.body {
                    ItemBody::Buf(b) => u64::try_from(b.blkno).ok(),
                    _ => None,
                },
                ino: match &it.body {
                    ItemBody::Inode(i) => Some(i.ino),
                    _ => None,
                },
            }
        })
        .collect();
    Response::LogTransaction(Box::new(TxDetail {
        row: row(l, index, &s),
        type_: t.header.map(|h| h.type_),
        num_items: t.header.map(|h| h.num_items),
        ops: t.ops,
        problems: t.problems.clone(),
        items,
    }))
}

/// The buffer items of the log that log the block at `daddr`, with their
/// dirty runs in bytes, at most `cap` of them: found in the index, their
/// transactions decoded again (each once).
pub fn logged_copies(
    fs: &Fs<Disk>,
    l: &DecodedLog,
    daddr: u64,
    cap: usize,
) -> Vec<crate::xfs::hexmap::LoggedCopy> {
    let mut out = Vec::new();
    let mut current: Option<(u32, Transaction)> = None;
    for r in l.index.buffers_at(daddr).iter().take(cap) {
        if current.as_ref().map(|c| c.0) != Some(r.transaction) {
            current = decode_again(fs, l, r.transaction)
                .ok()
                .map(|(_, t)| (r.transaction, t));
        }
        let Some((_, t)) = &current else { continue };
        let Some(ItemBody::Buf(b)) = t
            .items
            .get(usize::try_from(r.item).unwrap_or(usize::MAX))
            .map(|it| &it.body)
        else {
            continue;
        };
        let runs = b.runs();
        out.push(crate::xfs::hexmap::LoggedCopy {
            tx: r.transaction,
            item: r.item,
            runs: runs
                .iter()
                .map(|r| (r.first.saturating_mul(128), r.count.saturating_mul(128)))
                .collect(),
            labels: runs
                .iter()
                .map(|r| describe_run(b, *r, &l.ctx).join(", "))
                .collect(),
        });
    }
    out
}
