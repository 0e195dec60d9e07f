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

use super::find::{HeadTail, TailMove};
use super::items::{decode_item_seg, is_dir_buf, needs_data, segments, Item, Order, Segment};
use super::record::{btobb, RecordHeader, RecordReader};
use super::{is_header, CrcMismatch, ItemContext, LogDev, Problem};
use crate::xfs::error::{Error, Result};
use crate::xfs::format::log::*;
use crate::xfs::fs::be32;
use crate::xfs::read::ReadAt;
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

/// An item being filled with regions.
struct Pending {
    declared: u16,
    /// Keep the bytes of regions after the format region.
    keep: bool,
    regions: Vec<Vec<u8>>,
    lens: Vec<u32>,
}

struct Open {
    t: Transaction,
    /// Bytes of a transaction header seen so far (it can be split).
    header: Vec<u8>,
    header_done: bool,
    pending: Option<Pending>,
    /// An open run of directory block segments: buffer type and the
    /// offset the next segment would start at.
    seg: Option<(u8, u32)>,
}

/// Reassembles transactions from the ops of consecutive records.
/// Hashing of ticket ids for the open-transaction map: one multiply with
/// a key picked per map (a few hundred thousand lookups per log; the
/// default hasher costs more than the rest of the lookup).
#[derive(Clone, Copy)]
struct TidHash {
    key: u64,
}

impl TidHash {
    fn new() -> TidHash {
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

struct TidHasher {
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
    /// Where the buffer item about to be decoded lies in its directory
    /// block, judged from the items before it (checked again at commit by
    /// [`segments`]).
    fn next_segment(&mut self, p: &Pending, ctx: &ItemContext) -> Segment {
        let o = self.t.order;
        let r0 = p.regions.first().map(Vec::as_slice).unwrap_or(&[]);
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

    fn finish_pending(&mut self, ctx: &ItemContext, pool: &mut Pool) {
        if let Some(p) = self.pending.take() {
            let seg = self.next_segment(&p, ctx);
            let item = decode_item_seg(&p.regions, &p.lens, p.declared, self.t.order, ctx, seg);
            self.t.items.push(item);
            pool.give(p.regions);
            pool.give_lens(p.lens);
        }
    }

    /// A region that starts something new (flags 0 or CONTINUE).
    fn add_region(&mut self, payload: &[u8], ctx: &ItemContext, pool: &mut Pool) {
        if payload.is_empty() {
            return;
        }
        if !self.header_done && self.header.is_empty() && self.t.items.is_empty() {
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
        if self
            .pending
            .as_ref()
            .is_some_and(|p| p.lens.len() >= usize::from(p.declared))
        {
            self.finish_pending(ctx, pool);
        }
        let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
        match &mut self.pending {
            Some(p) => {
                p.lens.push(len);
                if p.keep {
                    let cut = payload
                        .get(..payload.len().min(MAX_KEPT_DATA_BYTES))
                        .unwrap_or(&[]);
                    p.regions.push(pool.copy(cut, &mut self.t.problems));
                } else {
                    p.regions.push(Vec::new());
                }
            }
            None => {
                let declared = self.t.order.u16(payload, 2).unwrap_or(0);
                let declared = if declared == 0 || declared > XLOG_MAX_REGIONS_IN_ITEM {
                    note(&mut self.t.problems, format!(
                        "item {} declares {declared} regions (1..={XLOG_MAX_REGIONS_IN_ITEM} allowed); taken as 1",
                        self.t.items.len()
                    ));
                    1
                } else {
                    declared
                };
                let mut regions = pool.list();
                regions.push(pool.copy(payload, &mut self.t.problems));
                let mut lens = pool.lens();
                lens.push(len);
                self.pending = Some(Pending {
                    declared,
                    keep: needs_data(payload, self.t.order, ctx),
                    regions,
                    lens,
                });
            }
        }
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
        let Some(p) = self.pending.as_mut() else {
            note(
                &mut self.t.problems,
                "a continued region arrived with no region to continue".into(),
            );
            return;
        };
        let first = p.lens.len() <= 1;
        let (Some(last_len), Some(last)) = (p.lens.last_mut(), p.regions.last_mut()) else {
            return;
        };
        let room =
            MAX_REGION_BYTES.saturating_sub(usize::try_from(*last_len).unwrap_or(usize::MAX));
        if payload.len() > room {
            note(
                &mut self.t.problems,
                format!("a region grew past {MAX_REGION_BYTES} bytes; the rest is dropped"),
            );
        }
        let add = payload.get(..room.min(payload.len())).unwrap_or(&[]);
        *last_len = last_len.saturating_add(u32::try_from(add.len()).unwrap_or(u32::MAX));
        let limit = if first {
            MAX_REGION_BYTES
        } else {
            MAX_KEPT_DATA_BYTES
        };
        if p.keep || first {
            let room = limit.saturating_sub(last.len());
            last.extend_from_slice(add.get(..room.min(add.len())).unwrap_or(&[]));
        }
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

    fn finish(mut self, commit: Option<Lsn>, ctx: &ItemContext, pool: &mut Pool) -> Transaction {
        self.finish_pending(ctx, pool);
        // Segments whose run did not add up to a directory block: their
        // place is unknown after all (and entries found by a guessed
        // offset are dropped).
        let any = self.t.items.iter().any(
            |i| matches!(&i.body, crate::xfs::log::ItemBody::Buf(b) if b.segment != Segment::Whole),
        );
        let segs = if any {
            segments(&self.t.items, ctx.dirblksize)
        } else {
            Vec::new()
        };
        for (it, s) in self.t.items.iter_mut().zip(segs) {
            if let crate::xfs::log::ItemBody::Buf(b) = &mut it.body {
                if b.segment != s {
                    if s == Segment::Unknown {
                        b.dir_entries = None;
                    }
                    b.segment = s;
                }
            }
        }
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
        // Move the items from the growing list into one of the exact size
        // (one allocation per transaction) and keep the list for reuse.
        let exact: Vec<Item> = self.t.items.drain(..).collect();
        pool.give_items(std::mem::replace(&mut self.t.items, exact));
        self.t
    }
}

/// Region buffers kept for reuse, so that the walk does not allocate per
/// region.
#[derive(Default)]
struct Pool {
    bufs: Vec<Vec<u8>>,
    lists: Vec<Vec<Vec<u8>>>,
    lens: Vec<Vec<u32>>,
    items: Vec<Vec<Item>>,
}

impl Pool {
    /// A copy of `payload` (cut at [`MAX_REGION_BYTES`]).
    fn copy(&mut self, payload: &[u8], problems: &mut Vec<String>) -> Vec<u8> {
        if payload.len() > MAX_REGION_BYTES {
            problems.push(format!(
                "a region of {} bytes was cut to {MAX_REGION_BYTES}",
                payload.len()
            ));
        }
        let mut v = self.bufs.pop().unwrap_or_default();
        v.clear();
        v.extend_from_slice(
            payload
                .get(..payload.len().min(MAX_REGION_BYTES))
                .unwrap_or(&[]),
        );
        v
    }

    fn list(&mut self) -> Vec<Vec<u8>> {
        self.lists.pop().unwrap_or_default()
    }

    fn lens(&mut self) -> Vec<u32> {
        self.lens.pop().unwrap_or_default()
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

    fn give_lens(&mut self, mut v: Vec<u32>) {
        if self.lens.len() < 64 {
            v.clear();
            self.lens.push(v);
        }
    }

    fn give(&mut self, mut regions: Vec<Vec<u8>>) {
        for r in regions.drain(..) {
            // Keep a bounded number of modest buffers.
            if self.bufs.len() < 1024 && r.capacity() <= 256 * 1024 {
                self.bufs.push(r);
            }
        }
        if self.lists.len() < 64 {
            self.lists.push(regions);
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
            problems: Vec::new(),
            skipped_ops: 0,
            unmount_records: 0,
            stats: super::stats::LogStats::default(),
            scratch_stats: super::stats::TransStats::default(),
            count: true,
        }
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
                t.items = self.pool.items();
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
                        pending: None,
                        seg: None,
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
            0 | XLOG_CONTINUE_TRANS => o.add_region(payload, &ctx, &mut self.pool),
            XLOG_WAS_CONT_TRANS => o.add_continuation(payload),
            XLOG_COMMIT_TRANS => {
                if let Some(o) = self.open.remove(&tid) {
                    let t = o.finish(Some(h.lsn), &ctx, &mut self.pool);
                    if self.count {
                        self.scratch_stats.fill(&t, true);
                        self.stats.add(&self.scratch_stats);
                    }
                    self.done.push(t);
                }
            }
            XLOG_UNMOUNT_TRANS => {
                // Recovery drops a transaction that meets an unmount op.
                if let Some(mut o) = self.open.remove(&tid) {
                    note(
                        &mut o.t.problems,
                        format!("ended by an unmount op in record {}", h.lsn),
                    );
                    let t = o.finish(None, &ctx, &mut self.pool);
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
        let mut incomplete: Vec<Transaction> = self
            .open
            .into_values()
            .map(|o| o.finish(None, &ctx, &mut pool))
            .collect();
        incomplete.sort_by_key(|t| (t.start_lsn, t.tid));
        (
            self.done,
            incomplete,
            self.problems,
            self.skipped_ops,
            self.unmount_records,
        )
    }
}

/// One record read between tail and head.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RecordInfo {
    pub lsn: Lsn,
    /// Log block of its header.
    pub block: u32,
    /// `h_len`: bytes of data.
    pub len: u32,
    pub num_logops: u32,
    /// Header sectors.
    pub hblks: u32,
    pub tail_lsn: Lsn,
    pub crc: super::CrcCheck,
}

/// What walking the live log produced.
pub struct WalkOutput {
    pub head_tail: HeadTail,
    pub records: u64,
    pub record_list: Vec<RecordInfo>,
    pub records_crc_ok: u64,
    pub records_no_crc: u64,
    pub crc_mismatches: Vec<CrcMismatch>,
    pub transactions: Vec<Transaction>,
    pub incomplete: Vec<Transaction>,
    pub problems: Vec<Problem>,
    pub skipped_ops: u64,
    pub unmount_records: u64,
    pub stats: super::stats::LogStats,
}

/// Keep at most 10,000 problems for the whole log.
fn push_problem(problems: &mut Vec<Problem>, p: Problem) {
    if problems.len() < 10_000 {
        problems.push(p);
    }
}

/// The first record header after `pos` (not at it) before `head`.
fn next_header<R: ReadAt>(dev: &LogDev<'_, R>, pos: u32, head: u32) -> Result<Option<u32>> {
    let start = dev.wrap(pos, 1);
    let n = dev.distance(start, head);
    let first = n.min(dev.len_bbs().saturating_sub(start));
    if let Some(b) = dev.scan_forward(start, first, |i, b| {
        is_header(b) && super::record::RecordHeader::parse(b, i, dev.is_v2(), dev.len_bbs()).is_ok()
    })? {
        return Ok(Some(b));
    }
    let rest = n.saturating_sub(first);
    if rest > 0 {
        return dev.scan_forward(0, rest, |i, b| {
            is_header(b)
                && super::record::RecordHeader::parse(b, i, dev.is_v2(), dev.len_bbs()).is_ok()
        });
    }
    Ok(None)
}

/// Receives the committed transactions of a streamed walk ([`walk_streaming`]).
pub trait TransactionSink: Send {
    /// Called once, before the first transaction, with the head and tail
    /// as the walk settled them (a tail found overwritten has moved).
    fn begin(&mut self, ht: &HeadTail);
    /// The next committed transaction, in commit order, its intents and
    /// done items linked as [`super::items::pair_intents`] links them.
    fn transaction(&mut self, t: Transaction);
}

/// Where the walk sends the records it has read and checked: straight into
/// a [`Consumer`], or through a queue to a second thread that assembles
/// while this one reads.
trait Feed {
    /// The record just read by `reader` (its data: [`RecordReader::data`]).
    fn record(&mut self, h: &RecordHeader, reader: &mut RecordReader);
    fn gap(&mut self, from: u32, to: u32);
    /// No later record can move the tail: `ht` is final.
    fn settled(&mut self, ht: &HeadTail);
}

/// The assembling side: an [`Assembler`], and for a streamed walk the
/// intent linker and the sink that takes each transaction.
struct Consumer<'s> {
    asm: Assembler,
    stream: Option<(super::items::Linker, &'s mut dyn TransactionSink)>,
    /// The sink has had its `begin`.
    begun: bool,
}

impl Consumer<'_> {
    /// Hand the transactions committed so far to the sink, if streaming
    /// and the tail is settled.
    fn pass_on(&mut self) {
        if !self.begun {
            return;
        }
        if let Some((linker, sink)) = &mut self.stream {
            for t in self.asm.done.drain(..) {
                linker.push(t, &mut |t| sink.transaction(t));
            }
        }
    }
    fn begin(&mut self, ht: &HeadTail) {
        if self.begun {
            return;
        }
        self.begun = true;
        if let Some((_, sink)) = &mut self.stream {
            sink.begin(ht);
        }
        self.pass_on();
    }
}

impl Feed for Consumer<'_> {
    fn record(&mut self, h: &RecordHeader, reader: &mut RecordReader) {
        self.asm.push_record(h, reader.data());
        self.pass_on();
    }
    fn gap(&mut self, from: u32, to: u32) {
        self.asm.gap(from, to);
    }
    fn settled(&mut self, ht: &HeadTail) {
        self.begin(ht);
    }
}

/// One thing for the assembling thread.
enum Entry {
    /// The head and tail are final (first entry of the first batch).
    Begin(Box<HeadTail>),
    /// A record, its data at a range of the batch's bytes.
    Record(RecordHeader, usize, usize),
    Gap(u32, u32),
}

/// A window of the log as the reader left it (records unpacked in place)
/// and what to do with it, in order.
#[derive(Default)]
struct Batch {
    data: Vec<u8>,
    entries: Vec<Entry>,
}

impl Batch {
    fn feed(&self, c: &mut Consumer<'_>) {
        for e in &self.entries {
            match e {
                Entry::Begin(ht) => c.begin(ht),
                Entry::Record(h, a, b) => {
                    c.asm.push_record(h, self.data.get(*a..*b).unwrap_or(&[]))
                }
                Entry::Gap(from, to) => c.asm.gap(*from, *to),
            }
        }
        c.pass_on();
    }
}

/// The reading side of a two-thread walk. The reader hands over each
/// window it has moved past (no copy); the window goes out through a short
/// queue with the entries of the records in it and comes back for reuse.
/// Nothing is sent before the tail is settled, so a walk that starts again
/// sends nothing twice.
struct Piped {
    tx: std::sync::mpsc::SyncSender<Batch>,
    back: std::sync::mpsc::Receiver<Batch>,
    /// Entries of the records in the reader's current window.
    entries: Vec<Entry>,
    /// Batches kept until the tail is settled.
    held: Vec<Batch>,
    settled: bool,
}

impl Piped {
    fn push(&mut self, b: Batch) {
        if self.settled {
            // A closed queue means the other side is gone; the join
            // reports it.
            let _ = self.tx.send(b);
        } else {
            self.held.push(b);
        }
    }

    /// Send the windows the reader has moved past, with their entries.
    fn flush_retired(&mut self, reader: &mut RecordReader) {
        while let Ok(b) = self.back.try_recv() {
            reader.give_spare(b.data);
        }
        for data in reader.take_retired() {
            let entries = std::mem::take(&mut self.entries);
            self.push(Batch { data, entries });
        }
    }

    /// Reading is over: send the last window.
    fn finish(&mut self, reader: &mut RecordReader) {
        self.flush_retired(reader);
        let data = reader.take_window();
        let entries = std::mem::take(&mut self.entries);
        self.push(Batch { data, entries });
    }
}

impl Feed for Piped {
    fn record(&mut self, h: &RecordHeader, reader: &mut RecordReader) {
        self.flush_retired(reader);
        match reader.data_range() {
            Some((a, b)) => self.entries.push(Entry::Record(h.clone(), a, b)),
            None => {
                // A record put together from both ends of the log, in a
                // buffer of its own (its window was handed over before).
                let data = reader.data().to_vec();
                let len = data.len();
                let mut entries = std::mem::take(&mut self.entries);
                entries.push(Entry::Record(h.clone(), 0, len));
                self.push(Batch { data, entries });
            }
        }
    }
    fn gap(&mut self, from: u32, to: u32) {
        self.entries.push(Entry::Gap(from, to));
    }
    fn settled(&mut self, ht: &HeadTail) {
        if !self.settled {
            self.settled = true;
            self.push(Batch {
                data: Vec::new(),
                entries: vec![Entry::Begin(Box::new(ht.clone()))],
            });
            for b in std::mem::take(&mut self.held) {
                self.push(b);
            }
        }
    }
}

/// How one pass over the records ended.
enum Step {
    Done(Box<WalkOutput>),
    /// The tail was found overwritten and has moved; `empty` when nothing
    /// is left between the new tail and the head.
    Restart {
        empty: bool,
    },
}

fn empty_output(ht: HeadTail) -> WalkOutput {
    WalkOutput {
        head_tail: ht,
        records: 0,
        record_list: Vec::new(),
        records_crc_ok: 0,
        records_no_crc: 0,
        crc_mismatches: Vec::new(),
        transactions: Vec::new(),
        incomplete: Vec::new(),
        problems: Vec::new(),
        skipped_ops: 0,
        unmount_records: 0,
        stats: super::stats::LogStats::default(),
    }
}

/// Read every record from tail to head, check its CRC, and reassemble the
/// transactions. A bad record within 8 log buffers ahead of the head is a
/// tail overwritten by a partial write: the tail moves past it, as the
/// kernel does. Other bad records are reported and walked past.
///
/// Where threads exist, a second thread assembles the transactions while
/// this one reads and checks the records (the result is the same).
pub fn walk<R: ReadAt>(dev: &LogDev<'_, R>, ht: &HeadTail, ctx: ItemContext) -> Result<WalkOutput> {
    walk_with(dev, ht, ctx, true)
}

/// [`walk`], on one thread only when `two_threads` is false.
pub fn walk_with<R: ReadAt>(
    dev: &LogDev<'_, R>,
    ht: &HeadTail,
    ctx: ItemContext,
    two_threads: bool,
) -> Result<WalkOutput> {
    Ok(walk_inner(dev, ht, ctx, two_threads, None)?.0)
}

/// What a streamed walk leaves: the walk's output without transactions,
/// the intents left without a done item and the orphaned done items.
pub type Streamed = (WalkOutput, Vec<super::items::IntentRef>, u64);

/// [`walk`], handing each committed transaction to `sink` as soon as
/// nothing later can change it instead of keeping them: memory stays
/// bounded by the transactions open at once (and those between an intent
/// and its done item). `sink` is called from the assembling thread. The
/// committed transactions are not counted into the output's `stats`: the
/// sink sees them all and counts them if it wants (with
/// [`super::stats::LogStats::add`]), off the reading thread.
pub fn walk_streaming<R: ReadAt>(
    dev: &LogDev<'_, R>,
    ht: &HeadTail,
    ctx: ItemContext,
    two_threads: bool,
    sink: &mut dyn TransactionSink,
) -> Result<Streamed> {
    let (out, linked) = walk_inner(dev, ht, ctx, two_threads, Some(sink))?;
    let (unfinished, orphans) = linked.unwrap_or_default();
    Ok((out, unfinished, orphans))
}

type Linked = Option<(Vec<super::items::IntentRef>, u64)>;

fn walk_inner<R: ReadAt>(
    dev: &LogDev<'_, R>,
    ht: &HeadTail,
    ctx: ItemContext,
    two_threads: bool,
    mut sink: Option<&mut dyn TransactionSink>,
) -> Result<(WalkOutput, Linked)> {
    let mut ht = ht.clone();
    let mut reader = RecordReader::new();
    let mut restarts = 0u32;
    // Where threads cannot start (the browser), one thread does it all.
    let threads = two_threads && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    loop {
        if ht.clean || ht.head.block == ht.tail.block {
            if let Some(s) = sink {
                s.begin(&ht);
                return Ok((empty_output(ht), Some((Vec::new(), 0))));
            }
            return Ok((empty_output(ht), None));
        }
        let stream = sink.take().map(|s| (super::items::Linker::new(), s));
        let streaming = stream.is_some();
        let mut consumer = Consumer {
            asm: Assembler::new(ctx).counting(!streaming),
            stream,
            begun: false,
        };
        let (step, mut consumer) = std::thread::scope(|s| -> Result<(Step, Consumer<'_>)> {
            if threads {
                let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(3);
                let (back_tx, back) = std::sync::mpsc::sync_channel::<Batch>(4);
                let mut theirs = Consumer {
                    asm: Assembler::new(ctx).counting(!streaming),
                    stream: consumer.stream.take(),
                    begun: false,
                };
                let spawned = std::thread::Builder::new().spawn_scoped(s, move || {
                    for b in rx {
                        b.feed(&mut theirs);
                        let _ = back_tx.try_send(b);
                    }
                    theirs
                });
                match spawned {
                    Ok(handle) => {
                        let mut feed = Piped {
                            tx,
                            back,
                            entries: Vec::new(),
                            held: Vec::new(),
                            settled: false,
                        };
                        reader.set_handover(true);
                        let step =
                            read_records(dev, &mut ht, &mut reader, &mut restarts, &mut feed);
                        if matches!(step, Ok(Step::Done(_))) {
                            feed.finish(&mut reader);
                            feed.settled(&ht);
                        }
                        drop(feed);
                        let theirs = handle.join().map_err(|_| {
                            Error::corrupt(
                                "log",
                                dev.location(0),
                                "the thread assembling transactions stopped",
                            )
                        })?;
                        return Ok((step?, theirs));
                    }
                    Err(e) => {
                        return Err(Error::corrupt(
                            "log",
                            dev.location(0),
                            format!("could not start the thread assembling transactions: {e}"),
                        ));
                    }
                }
            }
            reader.set_handover(false);
            let step = read_records(dev, &mut ht, &mut reader, &mut restarts, &mut consumer);
            if matches!(step, Ok(Step::Done(_))) {
                consumer.settled(&ht);
            }
            Ok((step?, consumer))
        })?;
        match step {
            Step::Restart { empty } => {
                // With `empty` the new tail is the head: the next pass
                // returns at once.
                debug_assert!(!empty || ht.head.block == ht.tail.block);
                // The sink saw nothing (nothing is passed on before the
                // tail is settled); take it back for the next pass.
                sink = consumer.stream.take().map(|(_, s)| s);
                continue;
            }
            Step::Done(out) => {
                let mut out = *out;
                consumer.pass_on();
                let Consumer { asm, stream, .. } = consumer;
                let mut asm = asm;
                out.stats = std::mem::take(&mut asm.stats);
                let (done, incomplete, problems, skipped, unmounts) = asm.finish();
                let linked = match stream {
                    Some((linker, sink)) => {
                        // Transactions committed after the last record
                        // was read cannot exist; `done` is empty here.
                        let mut l = linker;
                        for t in done {
                            l.push(t, &mut |t| sink.transaction(t));
                        }
                        Some(l.finish(&mut |t| sink.transaction(t)))
                    }
                    None => {
                        out.transactions = done;
                        None
                    }
                };
                out.incomplete = incomplete;
                out.problems.extend(problems);
                out.skipped_ops = skipped;
                out.unmount_records = unmounts;
                out.head_tail = ht;
                return Ok((out, linked));
            }
        }
    }
}

/// One pass from the tail to the head: read and check each record and hand
/// it to `feed`.
fn read_records<R: ReadAt, F: Feed>(
    dev: &LogDev<'_, R>,
    ht: &mut HeadTail,
    reader: &mut RecordReader,
    restarts: &mut u32,
    feed: &mut F,
) -> Result<Step> {
    let overwrite_window = btobb(
        XLOG_MAX_ICLOGS.saturating_mul(
            ht.last_h_size
                .clamp(XLOG_HEADER_CYCLE_SIZE, XLOG_MAX_RECORD_BSIZE),
        ),
    );
    let head = ht.head.block;
    let mut out = empty_output(ht.clone());
    let mut pos = ht.tail.block;
    let mut left = dev.distance(pos, head);
    let mut settled = false;
    while left > 0 {
        if !settled && dev.distance(head, pos) > overwrite_window {
            // Past the blocks where an overwritten tail can lie: the tail
            // cannot move any more.
            feed.settled(ht);
            settled = true;
        }
        let rec = reader.read(dev, pos);
        let bad = match &rec {
            Ok(r) => r.crc.is_bad(),
            Err(Error::Corrupt { .. }) => true,
            Err(_) => false,
        };
        if bad && dev.distance(head, pos) <= overwrite_window && *restarts < 64 {
            // The tail was overwritten: start again after this record.
            let to = next_header(dev, pos, head)?.unwrap_or(head);
            let cycle = dev.cycle(to)?;
            let from = ht.tail.block;
            ht.tail = Lsn { cycle, block: to };
            ht.tail_moved = Some(TailMove {
                from,
                to,
                reason: format!(
                    "the record at log block {pos} failed its check and lies within {overwrite_window} blocks ahead of the head: an overwritten tail"
                ),
            });
            *restarts = restarts.saturating_add(1);
            return Ok(Step::Restart { empty: to == head });
        }
        match rec {
            Ok(r) => {
                out.records = out.records.saturating_add(1);
                out.record_list.push(RecordInfo {
                    lsn: r.header.lsn,
                    block: pos,
                    len: r.header.len,
                    num_logops: r.header.num_logops,
                    hblks: r.header.hblks,
                    tail_lsn: r.header.tail_lsn,
                    crc: r.crc,
                });
                match r.crc {
                    super::CrcCheck::Ok | super::CrcCheck::OkShortHeader => {
                        out.records_crc_ok = out.records_crc_ok.saturating_add(1)
                    }
                    super::CrcCheck::NotChecksummed => {
                        out.records_no_crc = out.records_no_crc.saturating_add(1)
                    }
                    super::CrcCheck::Bad { stored, computed } => {
                        out.crc_mismatches.push(CrcMismatch {
                            lsn: r.header.lsn,
                            block: pos,
                            stored,
                            computed,
                        });
                        push_problem(&mut out.problems, Problem {
                            block: Some(pos),
                            message: format!(
                                "record {} at log block {pos}: CRC stored {stored:#010x}, computed {computed:#010x} (decoded anyway)",
                                r.header.lsn
                            ),
                        });
                    }
                }
                if r.header.lsn.block != pos {
                    push_problem(
                        &mut out.problems,
                        Problem {
                            block: Some(pos),
                            message: format!(
                                "record at log block {pos} says its LSN is {}",
                                r.header.lsn
                            ),
                        },
                    );
                }
                feed.record(&r.header, reader);
                let n = r.header.total_bbs().max(1);
                if n > left {
                    push_problem(
                        &mut out.problems,
                        Problem {
                            block: Some(pos),
                            message: format!(
                            "record at log block {pos} ({n} blocks) runs {} blocks past the head",
                            n.saturating_sub(left)
                        ),
                        },
                    );
                    break;
                }
                left = left.saturating_sub(n);
                pos = dev.wrap(pos, n);
            }
            Err(e @ Error::Corrupt { .. }) => {
                push_problem(
                    &mut out.problems,
                    Problem {
                        block: Some(pos),
                        message: e.to_string(),
                    },
                );
                match next_header(dev, pos, head)? {
                    Some(next) => {
                        feed.gap(pos, next);
                        left = left.saturating_sub(dev.distance(pos, next));
                        pos = next;
                    }
                    None => {
                        feed.gap(pos, head);
                        break;
                    }
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Step::Done(Box::new(out)))
}

/// Decode only the records from log block `from` through the record that
/// starts at log block `last` (around the ring), and return the
/// transactions that start and commit among them. For looking at one
/// transaction again in detail without walking the whole log.
pub fn walk_range<R: ReadAt>(
    dev: &LogDev<'_, R>,
    from: u32,
    last: u32,
    ctx: ItemContext,
) -> Result<Vec<Transaction>> {
    let mut reader = RecordReader::new();
    let mut asm = Assembler::new(ctx);
    let mut pos = from;
    // The last record is included: walk until its start has been read.
    let mut left = dev.distance(from, last).saturating_add(1);
    while left > 0 {
        let r = reader.read(dev, pos)?;
        asm.push_record(&r.header, reader.data());
        if pos == last {
            break;
        }
        let n = r.header.total_bbs().max(1);
        left = left.saturating_sub(n);
        pos = dev.wrap(pos, n);
    }
    let (done, _, _, _, _) = asm.finish();
    Ok(done)
}
