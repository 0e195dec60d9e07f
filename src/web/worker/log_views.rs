//! Worker side of the log view: the decoded log, kept once per image, and
//! the pieces of it the page asks for.

use crate::web::protocol::{BitmapView, ItemView, Kv, LogView, Response, RunView, TxDetail, TxRow};
use crate::web::worker::blob_reader::Disk;
use crate::xfs::fs::Fs;
use crate::xfs::log::items::ItemBody;
use crate::xfs::log::run_fields::describe_run;
use crate::xfs::log::{self, DecodeOptions, ItemContext, LogDecode, Transaction};
use crate::xfs::types::Lsn;
use std::collections::{BTreeMap, BTreeSet};

/// Most rows sent in one page.
const MAX_ROWS: u32 = 1000;

/// Options the page's log view decodes with (entry names for directory runs).
const OPTS: DecodeOptions = DecodeOptions {
    dir_names: true,
    inode_cores: false,
};

pub struct DecodedLog {
    pub d: LogDecode,
    pub ctx: ItemContext,
    unfinished_tx: BTreeSet<u32>,
    decode_ms: f64,
}

fn lsn(l: Lsn) -> String {
    format!("{}:{}", l.cycle, l.block)
}

/// Decode the log of `fs`, timing it.
pub fn decode(fs: &Fs<Disk>) -> Result<DecodedLog, String> {
    let t0 = js_sys::Date::now();
    let d = log::decode(fs, OPTS).map_err(|e| e.to_string())?;
    let decode_ms = js_sys::Date::now() - t0;
    let unfinished_tx = d
        .unfinished_intents
        .iter()
        .map(|i| i.at.transaction)
        .collect();
    Ok(DecodedLog {
        d,
        ctx: ItemContext::of(fs, OPTS),
        unfinished_tx,
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
        transactions: count(d.transactions.len()),
        incomplete: count(d.incomplete.len()),
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
        unfinished_tx: l.unfinished_tx.iter().copied().collect(),
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

fn row(l: &DecodedLog, index: u32, t: &Transaction) -> TxRow {
    let mut kinds: BTreeMap<&str, u32> = BTreeMap::new();
    for it in &t.items {
        let n = kinds.entry(it.kind.name()).or_insert(0);
        *n = n.saturating_add(1);
    }
    TxRow {
        index,
        tid: t.tid,
        start: lsn(t.start_lsn),
        commit: t.commit_lsn.map_or("-".into(), lsn),
        items: u32::try_from(t.items.len()).unwrap_or(u32::MAX),
        regions: t.regions(),
        bytes: t.op_bytes,
        kinds: kinds
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        unfinished_intent: l.unfinished_tx.contains(&index),
    }
}

pub fn rows(l: &DecodedLog, start: u32, count: u32) -> Response {
    let first = usize::try_from(start).unwrap_or(usize::MAX);
    let n = usize::try_from(count.min(MAX_ROWS)).unwrap_or(0);
    let rows =
        l.d.transactions
            .iter()
            .enumerate()
            .skip(first)
            .take(n)
            .map(|(i, t)| row(l, u32::try_from(i).unwrap_or(u32::MAX), t))
            .collect();
    Response::LogRows { start, rows }
}

pub fn transaction(l: &DecodedLog, index: u32) -> Response {
    let Some(t) =
        l.d.transactions
            .get(usize::try_from(index).unwrap_or(usize::MAX))
    else {
        return Response::ViewError {
            what: format!("transaction #{index}"),
            message: "no such transaction".into(),
        };
    };
    let items = t
        .items
        .iter()
        .map(|it| {
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
                unfinished: it.kind.is_intent() && it.link().is_none(),
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
        row: row(l, index, t),
        type_: t.header.map(|h| h.type_),
        num_items: t.header.map(|h| h.num_items),
        ops: t.ops,
        problems: t.problems.clone(),
        items,
    }))
}

/// The buffer items of the log that log the block at `daddr`, with their
/// dirty runs in bytes, at most `cap` of them.
pub fn logged_copies(
    l: &DecodedLog,
    daddr: u64,
    cap: usize,
) -> Vec<crate::xfs::hexmap::LoggedCopy> {
    let mut out = Vec::new();
    for (ti, t) in l.d.transactions.iter().enumerate() {
        for (ii, it) in t.items.iter().enumerate() {
            let ItemBody::Buf(b) = &it.body else { continue };
            if u64::try_from(b.blkno).ok() != Some(daddr) {
                continue;
            }
            if out.len() >= cap {
                return out;
            }
            let runs = b.runs();
            out.push(crate::xfs::hexmap::LoggedCopy {
                tx: u32::try_from(ti).unwrap_or(u32::MAX),
                item: u32::try_from(ii).unwrap_or(u32::MAX),
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
    }
    out
}
