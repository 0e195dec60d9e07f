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
    walk, walk_range, walk_streaming, walk_with, RecordInfo, Streamed, TransactionSink, WalkOutput,
};

use super::items::{decode_item_seg, is_dir_buf, needs_data, segments, Item, Order, Segment};
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
        crate::xfs::sort::by_key(&mut incomplete, |t| {
            let lsn = (u64::from(t.start_lsn.cycle) << 32) | u64::from(t.start_lsn.block);
            crate::xfs::sort::pair(lsn, u64::from(t.tid))
        });
        (
            self.done,
            incomplete,
            self.problems,
            self.skipped_ops,
            self.unmount_records,
        )
    }
}
