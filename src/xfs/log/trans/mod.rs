//! Operations and transactions: the ops of every record between tail and
//! head, regions split across records put back together, the transaction
//! header, and the regions grouped into items by each item's own region
//! count, as recovery does (`xlog_recover_process_data` and its helpers).
//!
//! ```text
//!  START (len 0) | TRANS header (16) | item regions ... | COMMIT (len 0)
//!  a region too big for the rest of a record: CONTINUE piece, then
//!  WAS_CONT(|CONTINUE) pieces in the next records, the last with END
//! ```
//!
//! Ops of different transactions interleave, so state is kept per ticket
//! id. A transaction is complete at its COMMIT op; the LSN recovery uses
//! for it is that of the record holding its START op.
//!
//! | file | kernel | what |
//! |---|---|---|
//! | `mod.rs` | `xfs_log_recover.c` (`xlog_recover_process_ophdr`, `xlog_recover_add_to_trans`) | ops into transactions: regions, continuations, items |
//! | `walk.rs` | `xfs_log_recover.c` (`xlog_do_recovery_pass`) | the pass over the records, pipelined; transactions to a sink |

mod walk;

pub use walk::{
    walk, walk_range, walk_streaming, walk_streaming_raw, walk_with, RawSink, RecordInfo, Streamed,
    TransactionSink, WalkOutput,
};

use super::items::{
    decode_item_seg, is_dir_buf, needs_data, segments, Item, Order, Regions, Segment,
};
use super::record::RecordHeader;
use super::{ItemContext, Problem};
use crate::xfs::format::log::*;
use crate::xfs::fs::be32;
use crate::xfs::types::Lsn;
use serde::Serialize;
use std::collections::HashMap;

/// The largest region kept; anything bigger is cut (and reported).
pub const MAX_REGION_BYTES: usize = 4 << 20;
/// Bytes kept of a data region (after the format region) when its bytes
/// are needed at all: a 64 KiB directory block and then some.
pub const MAX_KEPT_DATA_BYTES: usize = 256 << 10;
/// Transactions open at once; a log holding more is hostile.
pub const MAX_OPEN_TRANSACTIONS: usize = 65_536;
/// Problems kept per transaction.
pub const MAX_PROBLEMS: usize = 100;

/// Record a problem, keeping at most [`MAX_PROBLEMS`].
fn note(problems: &mut Vec<String>, message: String) {
    if problems.len() < MAX_PROBLEMS {
        problems.push(message);
    } else if problems.len() == MAX_PROBLEMS {
        problems.push("(further problems not listed)".into());
    }
}

/// `xfs_trans_header`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TransHeader {
    /// `th_type`: 40 (CHECKPOINT) on current kernels.
    pub type_: u32,
    pub tid: u32,
    /// For checkpoints, the number of regions.
    pub num_items: u32,
}

/// One transaction (a checkpoint, on any kernel since 2.6.35's delayed
/// logging became the only mode).
#[derive(Clone, Debug)]
pub struct Transaction {
    /// Ticket id shared by all its ops.
    pub tid: u32,
    /// LSN of the record holding the START op.
    pub start_lsn: Lsn,
    /// LSN of the record holding the COMMIT op (`None`: not committed).
    pub commit_lsn: Option<Lsn>,
    pub header: Option<TransHeader>,
    /// Byte order of its items.
    pub order: Order,
    /// Op headers, START and COMMIT included.
    pub ops: u32,
    /// Payload bytes of all ops.
    pub op_bytes: u64,
    pub items: Vec<Item>,
    pub problems: Vec<String>,
}

impl Transaction {
    pub fn empty(tid: u32) -> Transaction {
        Transaction {
            tid,
            start_lsn: Lsn { cycle: 0, block: 0 },
            commit_lsn: None,
            header: None,
            order: Order::Little,
            ops: 0,
            op_bytes: 0,
            items: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// Regions of all items.
    pub fn regions(&self) -> u64 {
        self.items.iter().map(|i| u64::from(i.regions)).sum()
    }
}

/// The items of a transaction as read and not yet decoded: the kept bytes
/// of every region in one buffer, each region's place and full length, and
/// where each item's regions start. Decoding can wait until the
/// transaction commits, on another thread ([`walk_streaming_raw`]).
#[derive(Default)]
pub struct RawItems {
    bytes: Vec<u8>,
    /// Start in `bytes` and kept length of each region.
    spans: Vec<(usize, usize)>,
    /// Full length of each region, as logged.
    lens: Vec<u32>,
    items: Vec<RawItem>,
}

#[derive(Clone, Copy)]
struct RawItem {
    /// Index of its format region in `spans`.
    first: usize,
    declared: u16,
    /// Keep the bytes of regions after the format region.
    keep: bool,
}

/// One item's regions, as [`decode_item_seg`] reads them.
struct ItemRegions<'a> {
    bytes: &'a [u8],
    spans: &'a [(usize, usize)],
}

impl Regions for ItemRegions<'_> {
    fn count(&self) -> usize {
        self.spans.len()
    }
    fn region(&self, i: usize) -> Option<&[u8]> {
        let (at, n) = *self.spans.get(i)?;
        self.bytes.get(at..at.saturating_add(n))
    }
}

impl RawItems {
    /// Items held.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
        self.lens.clear();
        self.items.clear();
    }

    /// The range in `spans` of item `i`'s regions.
    fn item_spans(&self, i: usize) -> std::ops::Range<usize> {
        let first = self.items.get(i).map_or(0, |it| it.first);
        let end = self
            .items
            .get(i.saturating_add(1))
            .map_or(self.spans.len(), |it| it.first);
        first..end.max(first)
    }

    /// Regions of the last item.
    fn last_count(&self) -> usize {
        self.item_spans(self.items.len().saturating_sub(1)).len()
    }

    /// Append a region of `len` bytes as logged, keeping `kept` of them.
    fn push_region(&mut self, kept: &[u8], len: u32) {
        self.spans.push((self.bytes.len(), kept.len()));
        self.bytes.extend_from_slice(kept);
        self.lens.push(len);
    }

    /// Start an item with its format region.
    fn start_item(&mut self, declared: u16, keep: bool, format: &[u8], len: u32) {
        self.items.push(RawItem {
            first: self.spans.len(),
            declared,
            keep,
        });
        self.push_region(format, len);
    }

    /// Grow the last region by `add` (of which `kept` is kept; the last
    /// region's bytes are the end of the buffer).
    fn extend_last(&mut self, kept: &[u8], add: u32) {
        if let (Some(span), Some(len)) = (self.spans.last_mut(), self.lens.last_mut()) {
            span.1 = span.1.saturating_add(kept.len());
            *len = len.saturating_add(add);
            self.bytes.extend_from_slice(kept);
        }
    }

    /// Bytes held, for a bound on what is kept for reuse.
    pub fn capacity(&self) -> usize {
        use std::mem::size_of;
        self.bytes
            .capacity()
            .saturating_add(
                self.spans
                    .capacity()
                    .saturating_mul(size_of::<(usize, usize)>()),
            )
            .saturating_add(self.lens.capacity().saturating_mul(4))
            .saturating_add(self.items.capacity().saturating_mul(size_of::<RawItem>()))
    }
}

/// Decodes the items of one transaction in order: where a buffer item lies
/// in its directory block is judged from the items before it.
#[derive(Default)]
struct ItemDecoder {
    /// An open run of directory block segments: buffer type and the
    /// offset the next segment would start at.
    seg: Option<(u8, u32)>,
}

impl ItemDecoder {
    /// Where the buffer item whose format region is `r0` lies in its
    /// directory block (checked again at commit by [`segments`]).
    fn next_segment(&mut self, r0: &[u8], o: Order, ctx: &ItemContext) -> Segment {
        if o.u16(r0, 0) != Some(XFS_LI_BUF) {
            self.seg = None;
            return Segment::Whole;
        }
        let t = u8::try_from(o.u16(r0, 4).unwrap_or(0) >> XFS_BLFT_SHIFT).unwrap_or(0);
        let len = u32::from(o.u16(r0, 6).unwrap_or(0)).saturating_mul(512);
        if !is_dir_buf(t) || len == 0 || len >= ctx.dirblksize {
            self.seg = None;
            return Segment::Whole;
        }
        match self.seg {
            Some((st, next)) if st == t && next.saturating_add(len) <= ctx.dirblksize => {
                let end = next.saturating_add(len);
                self.seg = (end < ctx.dirblksize).then_some((t, end));
                Segment::Part(next)
            }
            _ => {
                self.seg = Some((t, len));
                Segment::Part(0)
            }
        }
    }

    /// Item `i` of `raw`.
    fn decode(&mut self, raw: &RawItems, i: usize, o: Order, ctx: &ItemContext) -> Item {
        let r = raw.item_spans(i);
        let regions = ItemRegions {
            bytes: &raw.bytes,
            spans: raw.spans.get(r.clone()).unwrap_or(&[]),
        };
        let seg = self.next_segment(regions.region(0).unwrap_or(&[]), o, ctx);
        let lens = raw.lens.get(r).unwrap_or(&[]);
        let declared = raw.items.get(i).map_or(0, |it| it.declared);
        decode_item_seg(&regions, lens, declared, o, ctx, seg)
    }
}

/// Segments whose run did not add up to a directory block: their place is
/// unknown after all (and entries found by a guessed offset are dropped).
fn settle_segments(items: &mut [Item], ctx: &ItemContext) {
    let any = items.iter().any(
        |i| matches!(&i.body, crate::xfs::log::ItemBody::Buf(b) if b.segment != Segment::Whole),
    );
    if !any {
        return;
    }
    let segs = segments(items, ctx.dirblksize);
    for (it, s) in items.iter_mut().zip(segs) {
        if let crate::xfs::log::ItemBody::Buf(b) = &mut it.body {
            if b.segment != s {
                if s == Segment::Unknown {
                    b.dir_entries = None;
                }
                b.segment = s;
            }
        }
    }
}

/// Decode the items of a transaction closed with its items left raw
/// (see [`walk_streaming_raw`]) into `t.items`.
pub fn decode_raw(t: &mut Transaction, raw: &RawItems, ctx: &ItemContext) {
    let mut dec = ItemDecoder::default();
    let mut items = Vec::with_capacity(raw.len());
    for i in 0..raw.len() {
        items.push(dec.decode(raw, i, t.order, ctx));
    }
    settle_segments(&mut items, ctx);
    t.items = items;
}

struct Open {
    t: Transaction,
    /// Bytes of a transaction header seen so far (it can be split).
    header: Vec<u8>,
    header_done: bool,
    /// Items not decoded yet: only the one being filled, or all of them
    /// when decoding is left to whoever takes the transaction.
    raw: RawItems,
    /// The last item of `raw` can still take regions.
    pending: bool,
    /// Leave the items raw ([`Assembler::deferring`]).
    defer: bool,
    dec: ItemDecoder,
}

/// Reassembles transactions from the ops of consecutive records.
/// Hashing of ticket ids for the open-transaction map: one multiply with
/// a key picked per map (a few hundred thousand lookups per log; the
/// default hasher costs more than the rest of the lookup).
#[derive(Clone, Copy)]
pub(crate) struct TidHash {
    key: u64,
}

impl TidHash {
    pub(crate) fn new() -> TidHash {
        use std::hash::BuildHasher as _;
        // Odd, so that the multiply is a bijection.
        let key = std::collections::hash_map::RandomState::new().hash_one(0x9e37_79b9u32) | 1;
        TidHash { key }
    }
}

impl std::hash::BuildHasher for TidHash {
    type Hasher = TidHasher;
    fn build_hasher(&self) -> TidHasher {
        TidHasher {
            key: self.key,
            h: 0,
        }
    }
}

pub(crate) struct TidHasher {
    key: u64,
    h: u64,
}

impl std::hash::Hasher for TidHasher {
    fn finish(&self) -> u64 {
        // Spread the high bits of the product down (the table uses both
        // ends of the hash).
        let m = (self.h ^ self.key).wrapping_mul(self.key);
        m ^ m.rotate_left(32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.h = self.h.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u32(&mut self, v: u32) {
        self.h = self.h.rotate_left(32) ^ u64::from(v);
    }
}

pub struct Assembler {
    ctx: ItemContext,
    open: HashMap<u32, Open, TidHash>,
    pool: Pool,
    pub done: Vec<Transaction>,
    /// With [`Assembler::deferring`], the raw items of each of `done`.
    pub done_raw: Vec<RawItems>,
    pub problems: Vec<Problem>,
    /// Ops of transactions that started before the tail, and unmount ops.
    pub skipped_ops: u64,
    pub unmount_records: u64,
    /// Counts of the committed transactions, kept as they commit.
    pub stats: super::stats::LogStats,
    /// Reused for each committed transaction's counts.
    scratch_stats: super::stats::TransStats,
    /// Count each committed transaction into `stats` (a streamed walk
    /// leaves that to whoever takes the transactions).
    count: bool,
    /// Leave committed transactions' items raw.
    defer: bool,
}

fn flags_text(f: u8) -> String {
    let names = [
        (XLOG_START_TRANS, "START"),
        (XLOG_COMMIT_TRANS, "COMMIT"),
        (XLOG_CONTINUE_TRANS, "CONTINUE"),
        (XLOG_WAS_CONT_TRANS, "WAS_CONT"),
        (XLOG_END_TRANS, "END"),
        (XLOG_UNMOUNT_TRANS, "UNMOUNT"),
    ];
    let v: Vec<&str> = names
        .iter()
        .filter(|(b, _)| f & b != 0)
        .map(|(_, n)| *n)
        .collect();
    format!("{f:#04x} ({})", v.join("|"))
}

impl Open {
    /// Items started so far.
    fn item_count(&self) -> usize {
        self.t.items.len().saturating_add(self.raw.len())
    }

    /// The item being filled is complete: decode it, unless deferring.
    fn finish_pending(&mut self, ctx: &ItemContext) {
        if !std::mem::take(&mut self.pending) || self.defer {
            return;
        }
        let i = self.raw.len().saturating_sub(1);
        let item = self.dec.decode(&self.raw, i, self.t.order, ctx);
        self.t.items.push(item);
        self.raw.clear();
    }

    /// A region that starts something new (flags 0 or CONTINUE).
    fn add_region(&mut self, payload: &[u8], ctx: &ItemContext) {
        if payload.is_empty() {
            return;
        }
        if !self.header_done && self.header.is_empty() && self.item_count() == 0 {
            self.start_header(payload);
            return;
        }
        if !self.header_done {
            note(
                &mut self.t.problems,
                format!(
                    "a new region arrived while the transaction header had only {} of 16 bytes",
                    self.header.len()
                ),
            );
            self.header_done = true;
        }
        if self.pending
            && self
                .raw
                .items
                .last()
                .is_some_and(|it| self.raw.last_count() >= usize::from(it.declared))
        {
            self.finish_pending(ctx);
        }
        let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
        if self.pending {
            let keep = self.raw.items.last().is_some_and(|it| it.keep);
            let kept = if keep {
                payload
                    .get(..payload.len().min(MAX_KEPT_DATA_BYTES))
                    .unwrap_or(&[])
            } else {
                &[]
            };
            self.raw.push_region(kept, len);
            return;
        }
        let declared = self.t.order.u16(payload, 2).unwrap_or(0);
        let declared = if declared == 0 || declared > XLOG_MAX_REGIONS_IN_ITEM {
            let n = self.item_count();
            note(&mut self.t.problems, format!(
                "item {n} declares {declared} regions (1..={XLOG_MAX_REGIONS_IN_ITEM} allowed); taken as 1"
            ));
            1
        } else {
            declared
        };
        if payload.len() > MAX_REGION_BYTES {
            self.t.problems.push(format!(
                "a region of {} bytes was cut to {MAX_REGION_BYTES}",
                payload.len()
            ));
        }
        let format = payload
            .get(..payload.len().min(MAX_REGION_BYTES))
            .unwrap_or(&[]);
        let keep = needs_data(payload, self.t.order, ctx);
        self.raw.start_item(declared, keep, format, len);
        self.pending = true;
    }

    /// A piece continuing the last region (WAS_CONT).
    fn add_continuation(&mut self, payload: &[u8]) {
        if !self.header_done {
            if self.header.is_empty() {
                self.t
                    .problems
                    .push("a continued region arrived before the transaction header".into());
                return;
            }
            let room = 16usize.saturating_sub(self.header.len());
            if payload.len() > room {
                note(
                    &mut self.t.problems,
                    format!(
                        "transaction header continued with {} bytes, only {room} missing",
                        payload.len()
                    ),
                );
            }
            self.header
                .extend_from_slice(payload.get(..room.min(payload.len())).unwrap_or(&[]));
            if self.header.len() >= 16 {
                self.end_header();
            }
            return;
        }
        if !self.pending {
            note(
                &mut self.t.problems,
                "a continued region arrived with no region to continue".into(),
            );
            return;
        }
        let first = self.raw.last_count() <= 1;
        let keep = self.raw.items.last().is_some_and(|it| it.keep);
        let (Some(&last_len), Some(&(_, kept_len))) = (self.raw.lens.last(), self.raw.spans.last())
        else {
            return;
        };
        let room = MAX_REGION_BYTES.saturating_sub(usize::try_from(last_len).unwrap_or(usize::MAX));
        if payload.len() > room {
            note(
                &mut self.t.problems,
                format!("a region grew past {MAX_REGION_BYTES} bytes; the rest is dropped"),
            );
        }
        let add = payload.get(..room.min(payload.len())).unwrap_or(&[]);
        let limit = if first {
            MAX_REGION_BYTES
        } else {
            MAX_KEPT_DATA_BYTES
        };
        let kept: &[u8] = if keep || first {
            let room = limit.saturating_sub(kept_len);
            add.get(..room.min(add.len())).unwrap_or(&[])
        } else {
            &[]
        };
        self.raw
            .extend_last(kept, u32::try_from(add.len()).unwrap_or(u32::MAX));
    }

    fn start_header(&mut self, payload: &[u8]) {
        let le = payload
            .get(..4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(u32::from_le_bytes);
        let be = be32(payload, 0);
        let order = self.t.order;
        if le == Some(XFS_TRANS_HEADER_MAGIC) && be != Some(XFS_TRANS_HEADER_MAGIC) {
            if order != Order::Little {
                note(
                    &mut self.t.problems,
                    "h_fmt says big-endian but the transaction header is little-endian".into(),
                );
                self.t.order = Order::Little;
            }
        } else if be == Some(XFS_TRANS_HEADER_MAGIC) {
            if order != Order::Big {
                note(
                    &mut self.t.problems,
                    "h_fmt says little-endian but the transaction header is big-endian".into(),
                );
                self.t.order = Order::Big;
            }
        } else if payload.len() >= 4 {
            note(
                &mut self.t.problems,
                format!(
                    "transaction header magic is {:#010x}, expected \"TRAN\"",
                    be.unwrap_or(0)
                ),
            );
        }
        if payload.len() > 16 {
            note(
                &mut self.t.problems,
                format!(
                    "transaction header region is {} bytes, expected 16",
                    payload.len()
                ),
            );
        }
        self.header
            .extend_from_slice(payload.get(..16.min(payload.len())).unwrap_or(&[]));
        if self.header.len() >= 16 {
            self.end_header();
        }
    }

    fn end_header(&mut self) {
        self.header_done = true;
        let o = self.t.order;
        let h = &self.header;
        self.t.header = Some(TransHeader {
            type_: o.u32(h, 4).unwrap_or(0),
            tid: o.u32(h, 8).unwrap_or(0),
            num_items: o.u32(h, 12).unwrap_or(0),
        });
    }

    /// Close the transaction. Its items are decoded here unless
    /// deferring; then they come back raw with it.
    fn close(
        mut self,
        commit: Option<Lsn>,
        ctx: &ItemContext,
        pool: &mut Pool,
    ) -> (Transaction, Option<RawItems>) {
        self.finish_pending(ctx);
        if !self.header_done {
            note(
                &mut self.t.problems,
                if self.header.is_empty() {
                    "no transaction header".to_string()
                } else {
                    format!(
                        "transaction header has only {} of 16 bytes",
                        self.header.len()
                    )
                },
            );
        }
        self.t.commit_lsn = commit;
        if self.defer {
            return (self.t, Some(self.raw));
        }
        settle_segments(&mut self.t.items, ctx);
        // Move the items from the growing list into one of the exact size
        // (one allocation per transaction) and keep the list for reuse.
        let exact: Vec<Item> = self.t.items.drain(..).collect();
        pool.give_items(std::mem::replace(&mut self.t.items, exact));
        pool.give_raw(self.raw);
        (self.t, None)
    }
}

/// Buffers kept for reuse, so that the walk does not allocate per item.
#[derive(Default)]
struct Pool {
    raws: Vec<RawItems>,
    /// Bytes held by `raws`.
    raw_bytes: usize,
    items: Vec<Vec<Item>>,
}

/// Bytes of raw items kept for reuse.
const POOL_RAW_BYTES: usize = 16 << 20;

impl Pool {
    fn raw(&mut self) -> RawItems {
        let r = self.raws.pop().unwrap_or_default();
        self.raw_bytes = self.raw_bytes.saturating_sub(r.capacity());
        r
    }

    fn give_raw(&mut self, mut r: RawItems) {
        // A bounded number of buffers and bytes, enough for a few large
        // checkpoints' items, so that the next one does not grow its
        // buffers again from nothing.
        let n = r.capacity();
        if self.raws.len() < 8 && self.raw_bytes.saturating_add(n) <= POOL_RAW_BYTES {
            r.clear();
            self.raw_bytes = self.raw_bytes.saturating_add(n);
            self.raws.push(r);
        }
    }

    fn items(&mut self) -> Vec<Item> {
        self.items.pop().unwrap_or_default()
    }

    fn give_items(&mut self, mut v: Vec<Item>) {
        // A bounded number of lists of modest size.
        if self.items.len() < 64 && v.capacity() <= 1024 {
            v.clear();
            self.items.push(v);
        }
    }
}

impl Assembler {
    pub fn new(ctx: ItemContext) -> Assembler {
        Assembler {
            ctx,
            open: HashMap::with_hasher(TidHash::new()),
            pool: Pool::default(),
            done: Vec::new(),
            done_raw: Vec::new(),
            problems: Vec::new(),
            skipped_ops: 0,
            unmount_records: 0,
            stats: super::stats::LogStats::default(),
            scratch_stats: super::stats::TransStats::default(),
            count: true,
            defer: false,
        }
    }

    /// Leave the items of committed transactions raw, in `done_raw`, for
    /// whoever takes them to decode ([`decode_raw`]); no counting then.
    /// Transactions never committed are decoded at [`Assembler::finish`].
    pub fn deferring(mut self, on: bool) -> Assembler {
        self.defer = on;
        if on {
            self.count = false;
        }
        self
    }

    /// Raw items decoded and done with, for reuse.
    pub fn give_raw(&mut self, r: RawItems) {
        self.pool.give_raw(r);
    }

    /// Whether committed transactions are counted into `stats`.
    pub fn counting(mut self, on: bool) -> Assembler {
        self.count = on;
        self
    }

    fn problem(&mut self, block: u32, message: String) {
        if self.problems.len() < 10_000 {
            self.problems.push(Problem {
                block: Some(block),
                message,
            });
        }
    }

    /// Feed the ops of one record (its data already unpacked).
    pub fn push_record(&mut self, h: &RecordHeader, data: &[u8]) {
        let order = Order::of_fmt(h.fmt);
        let mut p = 0usize;
        let end = data.len();
        let mut left = h.num_logops;
        while left > 0 && p < end {
            let Some(op) = data.get(p..p.saturating_add(12)) else {
                self.problem(
                    h.blk,
                    format!(
                        "record {}: op header at data byte {p} runs past the record ({end} bytes)",
                        h.lsn
                    ),
                );
                return;
            };
            let tid = be32(op, 0).unwrap_or(0);
            let len = be32(op, 4).unwrap_or(0);
            let client = op.get(8).copied().unwrap_or(0);
            let flags = op.get(9).copied().unwrap_or(0);
            p = p.saturating_add(12);
            if client != XFS_TRANSACTION && client != XFS_LOG {
                self.problem(
                    h.blk,
                    format!(
                        "record {}: op at data byte {} has client id {client:#04x} (expected 0x69 or 0xaa); rest of the record skipped",
                        h.lsn,
                        p.saturating_sub(12)
                    ),
                );
                return;
            }
            let lenu = usize::try_from(len).unwrap_or(usize::MAX);
            let unmount = flags & XLOG_UNMOUNT_TRANS != 0;
            let payload = match data.get(p..p.saturating_add(lenu)) {
                Some(pl) => pl,
                // Unmount ops of current kernels claim no length.
                None if unmount => &[],
                None => {
                    self.problem(
                        h.blk,
                        format!(
                            "record {}: op of tid {tid:#x} claims {len} bytes but only {} remain; rest of the record skipped",
                            h.lsn,
                            end.saturating_sub(p)
                        ),
                    );
                    return;
                }
            };
            self.op(h, order, tid, flags, payload);
            p = p.saturating_add(payload.len());
            left = left.saturating_sub(1);
        }
    }

    fn op(&mut self, h: &RecordHeader, order: Order, tid: u32, flags: u8, payload: &[u8]) {
        let ctx = self.ctx;
        let Some(o) = self.open.get_mut(&tid) else {
            if flags & XLOG_START_TRANS != 0 && self.open.len() >= MAX_OPEN_TRANSACTIONS {
                self.skipped_ops = self.skipped_ops.saturating_add(1);
                if self.open.len() == MAX_OPEN_TRANSACTIONS {
                    self.problem(
                        h.blk,
                        format!(
                            "more than {MAX_OPEN_TRANSACTIONS} transactions open at once; further ones are skipped"
                        ),
                    );
                }
            } else if flags & XLOG_START_TRANS != 0 {
                let mut t = Transaction::empty(tid);
                if !self.defer {
                    t.items = self.pool.items();
                }
                t.start_lsn = h.lsn;
                t.order = order;
                t.ops = 1;
                t.op_bytes = u64::try_from(payload.len()).unwrap_or(0);
                self.open.insert(
                    tid,
                    Open {
                        t,
                        header: Vec::new(),
                        header_done: false,
                        raw: self.pool.raw(),
                        pending: false,
                        defer: self.defer,
                        dec: ItemDecoder::default(),
                    },
                );
            } else {
                self.skipped_ops = self.skipped_ops.saturating_add(1);
                if flags & XLOG_UNMOUNT_TRANS != 0 {
                    self.unmount_records = self.unmount_records.saturating_add(1);
                }
            }
            return;
        };
        o.t.ops = o.t.ops.saturating_add(1);
        o.t.op_bytes =
            o.t.op_bytes
                .saturating_add(u64::try_from(payload.len()).unwrap_or(0));
        let mut f = flags & !XLOG_END_TRANS;
        if f & XLOG_WAS_CONT_TRANS != 0 {
            f &= !XLOG_CONTINUE_TRANS;
        }
        match f {
            0 | XLOG_CONTINUE_TRANS => o.add_region(payload, &ctx),
            XLOG_WAS_CONT_TRANS => o.add_continuation(payload),
            XLOG_COMMIT_TRANS => {
                if let Some(o) = self.open.remove(&tid) {
                    let (t, raw) = o.close(Some(h.lsn), &ctx, &mut self.pool);
                    if self.count {
                        self.scratch_stats.fill(&t, true);
                        self.stats.add(&self.scratch_stats);
                    }
                    self.done.push(t);
                    if let Some(r) = raw {
                        self.done_raw.push(r);
                    }
                }
            }
            XLOG_UNMOUNT_TRANS => {
                // Recovery drops a transaction that meets an unmount op.
                if let Some(mut o) = self.open.remove(&tid) {
                    note(
                        &mut o.t.problems,
                        format!("ended by an unmount op in record {}", h.lsn),
                    );
                    let (t, raw) = o.close(None, &ctx, &mut self.pool);
                    if let Some(r) = raw {
                        self.pool.give_raw(r);
                    }
                    self.problem(
                        h.blk,
                        format!("transaction {tid:#x} ended by an unmount op"),
                    );
                    drop(t);
                }
            }
            _ => {
                note(
                    &mut o.t.problems,
                    format!(
                        "op in record {} has flags {}, which recovery refuses",
                        h.lsn,
                        flags_text(flags)
                    ),
                );
            }
        }
    }

    /// Records were lost between two points: every open transaction may
    /// miss ops.
    pub fn gap(&mut self, from: u32, to: u32) {
        for o in self.open.values_mut() {
            note(
                &mut o.t.problems,
                format!("log blocks {from}..{to} could not be read as records; ops may be missing"),
            );
        }
    }

    /// Transactions never committed, in start order.
    pub fn finish(self) -> (Vec<Transaction>, Vec<Transaction>, Vec<Problem>, u64, u64) {
        let ctx = self.ctx;
        let mut pool = self.pool;
        let mut done = self.done;
        // Committed transactions left raw and not taken: decoded here.
        for (t, r) in done.iter_mut().zip(self.done_raw) {
            decode_raw(t, &r, &ctx);
        }
        let mut incomplete: Vec<Transaction> = self
            .open
            .into_values()
            .map(|o| {
                let (mut t, raw) = o.close(None, &ctx, &mut pool);
                if let Some(r) = raw {
                    decode_raw(&mut t, &r, &ctx);
                    pool.give_raw(r);
                }
                t
            })
            .collect();
        crate::xfs::sort::by_key(&mut incomplete, |t| {
            let lsn = (u64::from(t.start_lsn.cycle) << 32) | u64::from(t.start_lsn.block);
            crate::xfs::sort::pair(lsn, u64::from(t.tid))
        });
        (
            done,
            incomplete,
            self.problems,
            self.skipped_ops,
            self.unmount_records,
        )
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;

    fn ctx() -> ItemContext {
        crate::xfs::testutil::log_ctx(false)
    }

    fn header(num_logops: u32) -> RecordHeader {
        crate::xfs::testutil::record_header(num_logops)
    }

    const TID: u32 = 0x77;

    fn op(flags: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&TID.to_be_bytes());
        v.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_be_bytes());
        v.push(XFS_TRANSACTION);
        v.push(flags);
        v.extend_from_slice(&[0, 0]);
        v.extend_from_slice(payload);
        v
    }

    /// START and the transaction header, the `body` ops, COMMIT.
    fn transaction(body: &[Vec<u8>]) -> (RecordHeader, Vec<u8>) {
        let mut th = Vec::new();
        th.extend_from_slice(&XFS_TRANS_HEADER_MAGIC.to_le_bytes());
        th.extend_from_slice(&40u32.to_le_bytes());
        th.extend_from_slice(&TID.to_le_bytes());
        th.extend_from_slice(&7u32.to_le_bytes());
        let mut ops = vec![op(XLOG_START_TRANS, &[]), op(0, &th)];
        ops.extend(body.iter().cloned());
        ops.push(op(XLOG_COMMIT_TRANS, &[]));
        (header(u32::try_from(ops.len()).unwrap()), ops.concat())
    }

    /// A format region of an item type this reader does not decode,
    /// declaring `declared` regions, `len` bytes long.
    fn format(declared: u16, len: usize) -> Vec<u8> {
        let mut r = vec![0u8; len];
        r[0..2].copy_from_slice(&0x1299u16.to_le_bytes());
        r[2..4].copy_from_slice(&declared.to_le_bytes());
        r
    }

    /// The one committed transaction of `body`, with its items decoded as
    /// they complete and left raw then decoded: both must be the same.
    fn assemble(body: &[Vec<u8>]) -> Transaction {
        let (h, data) = transaction(body);
        let mut now = Assembler::new(ctx());
        now.push_record(&h, &data);
        let mut later = Assembler::new(ctx()).deferring(true);
        later.push_record(&h, &data);
        assert_eq!(now.done.len(), 1);
        assert_eq!(later.done.len(), 1);
        assert_eq!(later.done_raw.len(), 1);
        let mut t = later.done.pop().unwrap();
        assert!(t.items.is_empty());
        decode_raw(&mut t, &later.done_raw[0], &ctx());
        let a = now.done.pop().unwrap();
        assert_eq!(format!("{a:?}"), format!("{t:?}"));
        a
    }

    fn lens(it: &Item) -> Vec<u32> {
        it.region_lens.view().iter().copied().collect()
    }

    /// Regions are grouped by each item's own count, a region split
    /// across ops (CONTINUE, then WAS_CONT) is one region, and a count
    /// out of range is taken as one, as recovery's
    /// `xlog_recover_add_to_trans` does.
    #[test]
    fn regions_group_by_declared_count_and_continue() {
        let t = assemble(&[
            op(0, &format(3, 24)),
            op(XLOG_CONTINUE_TRANS, &[1; 100]),
            op(XLOG_WAS_CONT_TRANS | XLOG_END_TRANS, &[2; 28]),
            op(0, &[3; 64]),
            op(0, &format(0, 32)),
            op(0, &format(2, 16)),
            op(0, &[4; 8]),
        ]);
        assert_eq!(t.items.len(), 3, "{t:?}");
        assert_eq!((t.items[0].regions, t.items[0].declared), (3, 3));
        assert_eq!(lens(&t.items[0]), vec![24, 128, 64]);
        assert_eq!((t.items[1].regions, t.items[1].declared), (1, 1));
        assert_eq!(lens(&t.items[1]), vec![32]);
        assert_eq!(lens(&t.items[2]), vec![16, 8]);
        assert_eq!(
            t.problems,
            vec!["item 1 declares 0 regions (1..=257 allowed); taken as 1".to_string()]
        );
        assert_eq!(t.header.map(|h| h.num_items), Some(7));
        assert_eq!(t.ops, 10);
    }

    /// An item left short of its regions at the commit is kept with what
    /// came; a continued piece with nothing to continue is reported.
    #[test]
    fn short_items_and_stray_continuations() {
        let t = assemble(&[
            op(XLOG_WAS_CONT_TRANS, &[9; 12]),
            op(0, &format(4, 20)),
            op(0, &[5; 40]),
        ]);
        assert_eq!(t.items.len(), 1);
        assert_eq!((t.items[0].regions, t.items[0].declared), (2, 4));
        assert_eq!(lens(&t.items[0]), vec![20, 40]);
        assert_eq!(
            t.problems,
            vec!["a continued region arrived with no region to continue".to_string()]
        );
    }

    /// A region is not grown past MAX_REGION_BYTES however many pieces
    /// continue it.
    #[test]
    fn a_region_stops_growing_at_the_limit() {
        let piece = vec![6u8; 1 << 20];
        let mut body = vec![op(XLOG_CONTINUE_TRANS, &format(1, 1 << 20))];
        for _ in 0..4 {
            body.push(op(XLOG_WAS_CONT_TRANS | XLOG_CONTINUE_TRANS, &piece));
        }
        let t = assemble(&body);
        assert_eq!(t.items.len(), 1);
        assert_eq!(
            lens(&t.items[0]),
            vec![u32::try_from(MAX_REGION_BYTES).unwrap()]
        );
        assert_eq!(
            t.problems,
            vec![format!(
                "a region grew past {MAX_REGION_BYTES} bytes; the rest is dropped"
            )]
        );
    }
}
