//! Reading the live log for replay: records from tail to head, their ops
//! put together into transactions whose items keep their regions (the
//! decoder in [`crate::xfs::log`] keeps only what the regions say).
//!
//! The rules are recovery's (`xlog_do_recovery_pass` and the op and item
//! assembly under it), including what it refuses: an op of an unknown
//! client, an op running past its record, a START for a transaction
//! already open, an item declaring 0 or more than 257 regions, a
//! transaction header that is not one. Each of those stops recovery, so
//! each is an error here, named by log block.
//!
//! ```text
//!  tail ... | hdr | ops ...      | hdr | ops ...        | ... head
//!             START(tid) TRANS-header  item regions ... COMMIT(tid)
//!  a transaction carries the LSN of the record holding its START op
//! ```

use crate::xfs::error::{Error, Result};
use crate::xfs::format::log::*;
use crate::xfs::log::find::HeadTail;
use crate::xfs::log::items::Order;
use crate::xfs::log::record::{RecordHeader, RecordReader};
use crate::xfs::log::trans::TidHash;
use crate::xfs::log::{CrcCheck, LogDev};
use crate::xfs::read::ReadAt;
use crate::xfs::types::Lsn;
use std::collections::HashMap;
use zerocopy::FromBytes;

/// Bytes of an op header (`struct xlog_op_header`), big-endian in every log.
const OP_HEADER: usize = core::mem::size_of::<XlogOpHeader>();

/// The largest region kept (a 64 KiB buffer's data is at most 64 KiB; an
/// inode fork is smaller still).
pub const MAX_REGION: usize = 1 << 20;

/// Bytes of regions one open transaction may hold before the log is taken
/// as corrupt: a checkpoint is bounded by the log size, and this by a
/// limit no real log reaches.
pub const MAX_TRANS_BYTES: usize = 1 << 30;

/// One log item being assembled (`xlog_recover_item`).
#[derive(Clone, Debug, Default)]
pub struct RItem {
    /// Regions the item declares (its format structure's size field).
    pub total: u16,
    pub regions: Vec<Vec<u8>>,
    /// Regions received (equals `regions.len()` when data is kept).
    pub count: u16,
}

/// A committed transaction with its items' regions.
#[derive(Clone, Debug)]
pub struct RTrans {
    pub tid: u32,
    /// LSN of the record holding the START op: the LSN every replay
    /// decision of this transaction uses.
    pub lsn: Lsn,
    /// LSN of the record holding the COMMIT op.
    pub commit_lsn: Lsn,
    /// Byte order of the items (the writer's).
    pub order: Order,
    /// `th_type` of its transaction header: 40 (CHECKPOINT) since delayed
    /// logging, the operation's type on older kernels.
    pub th_type: u32,
    pub items: Vec<RItem>,
}

struct Open {
    t: RTrans,
    header: [u8; 16],
    /// `r_itemq` is not empty: the header is complete (an empty item was
    /// added for the first region).
    started: bool,
    bytes: usize,
}

/// What the walk reports for each record and transaction.
pub enum Event<'a> {
    Record(&'a RecordHeader),
    Commit(&'a RTrans),
}

/// Region buffers, region lists and item lists of committed transactions,
/// kept for the next ones: a checkpoint has tens of thousands of regions,
/// and allocating and freeing each one costs more than copying it.
#[derive(Default)]
struct RegionPool {
    bufs: Vec<Vec<u8>>,
    /// Capacity of the buffers in `bufs`, in bytes.
    bytes: usize,
    lists: Vec<Vec<Vec<u8>>>,
    items: Vec<Vec<RItem>>,
}

impl RegionPool {
    /// Buffers kept at most, the largest buffer kept, and the bytes kept.
    const MAX_BUFS: usize = 1 << 16;
    const MAX_BUF_BYTES: usize = 64 << 10;
    const MAX_BYTES: usize = 16 << 20;

    fn copy(&mut self, payload: &[u8]) -> Vec<u8> {
        let mut v = match self.bufs.pop() {
            Some(v) => {
                self.bytes = self.bytes.saturating_sub(v.capacity());
                v
            }
            None => Vec::new(),
        };
        v.clear();
        v.extend_from_slice(payload);
        v
    }

    fn item(&mut self) -> RItem {
        RItem {
            regions: self.lists.pop().unwrap_or_default(),
            ..RItem::default()
        }
    }

    fn items(&mut self) -> Vec<RItem> {
        self.items.pop().unwrap_or_default()
    }

    /// Take back what a transaction held.
    fn give(&mut self, mut t: RTrans) {
        for mut it in t.items.drain(..) {
            for r in it.regions.drain(..) {
                let size = r.capacity();
                if self.bufs.len() < Self::MAX_BUFS
                    && size <= Self::MAX_BUF_BYTES
                    && self.bytes.saturating_add(size) <= Self::MAX_BYTES
                {
                    self.bytes = self.bytes.saturating_add(size);
                    self.bufs.push(r);
                }
            }
            if self.lists.len() < Self::MAX_BUFS {
                self.lists.push(it.regions);
            }
        }
        if self.items.len() < 64 {
            self.items.push(t.items);
        }
    }
}

/// Counts from one walk.
#[derive(Clone, Copy, Debug, Default)]
pub struct WalkCounts {
    pub records: u64,
    pub transactions: u64,
    pub ops: u64,
    /// Ops of transactions that began before the tail.
    pub skipped_ops: u64,
    /// Transactions open at the head (never committed: they did not happen).
    pub uncommitted: u64,
}

fn corrupt<R: ReadAt>(dev: &LogDev<'_, R>, blk: u32, detail: String) -> Error {
    Error::corrupt("log", dev.location(blk), detail)
}

struct Assembly<'d, 'a, R: ReadAt> {
    dev: &'d LogDev<'a, R>,
    open: HashMap<u32, Open, TidHash>,
    keep_data: bool,
    counts: WalkCounts,
    pool: RegionPool,
}

impl<R: ReadAt> Assembly<'_, '_, R> {
    fn record(
        &mut self,
        h: &RecordHeader,
        data: &[u8],
        sink: &mut dyn FnMut(Event<'_>) -> Result<()>,
    ) -> Result<()> {
        let order = Order::of_fmt(h.fmt);
        let end = data.len();
        let mut p = 0usize;
        let mut left = h.num_logops;
        while p < end && left > 0 {
            let op = data
                .get(p..p.saturating_add(OP_HEADER))
                .and_then(|op| XlogOpHeader::ref_from_bytes(op).ok());
            let op = op.ok_or_else(|| {
                corrupt(
                    self.dev,
                    h.blk,
                    format!(
                        "record {}: op header at data byte {p} runs past the record ({end} bytes)",
                        h.lsn
                    ),
                )
            })?;
            let tid = op.oh_tid.get();
            let len = op.oh_len.get();
            let client = op.oh_clientid;
            let flags = op.oh_flags;
            p = p.saturating_add(OP_HEADER);
            if client != XFS_TRANSACTION && client != XFS_LOG {
                return Err(corrupt(
                    self.dev,
                    h.blk,
                    format!(
                        "record {}: op at data byte {} has client id {client:#04x} (0x69 or 0xaa expected); recovery stops here",
                        h.lsn,
                        p.saturating_sub(12)
                    ),
                ));
            }
            let lenu = usize::try_from(len).unwrap_or(usize::MAX);
            let payload = data.get(p..p.saturating_add(lenu)).ok_or_else(|| {
                corrupt(
                    self.dev,
                    h.blk,
                    format!(
                        "record {}: op of transaction {tid:#x} claims {len} bytes, only {} remain; recovery stops here",
                        h.lsn,
                        end.saturating_sub(p)
                    ),
                )
            })?;
            self.counts.ops = self.counts.ops.saturating_add(1);
            self.op(h, order, tid, flags, payload, sink)?;
            p = p.saturating_add(lenu);
            left = left.saturating_sub(1);
        }
        Ok(())
    }

    fn op(
        &mut self,
        h: &RecordHeader,
        order: Order,
        tid: u32,
        flags: u8,
        payload: &[u8],
        sink: &mut dyn FnMut(Event<'_>) -> Result<()>,
    ) -> Result<()> {
        if let std::collections::hash_map::Entry::Vacant(v) = self.open.entry(tid) {
            if flags & XLOG_START_TRANS != 0 {
                v.insert(Open {
                    t: RTrans {
                        tid,
                        lsn: h.lsn,
                        commit_lsn: h.lsn,
                        order,
                        th_type: 0,
                        items: self.pool.items(),
                    },
                    header: [0; 16],
                    started: false,
                    bytes: 0,
                });
            } else {
                self.counts.skipped_ops = self.counts.skipped_ops.saturating_add(1);
            }
            return Ok(());
        }
        let mut f = flags & !XLOG_END_TRANS;
        if f & XLOG_WAS_CONT_TRANS != 0 {
            f &= !XLOG_CONTINUE_TRANS;
        }
        let blk = h.blk;
        match f {
            0 | XLOG_CONTINUE_TRANS => {
                let keep = self.keep_data;
                let dev = self.dev;
                if let Some(o) = self.open.get_mut(&tid) {
                    add_region(dev, blk, o, payload, keep, &mut self.pool)?;
                }
                Ok(())
            }
            XLOG_WAS_CONT_TRANS => {
                let keep = self.keep_data;
                let dev = self.dev;
                if let Some(o) = self.open.get_mut(&tid) {
                    add_continuation(dev, blk, o, payload, keep, &mut self.pool)?;
                }
                Ok(())
            }
            XLOG_COMMIT_TRANS => {
                if let Some(mut o) = self.open.remove(&tid) {
                    o.t.commit_lsn = h.lsn;
                    o.t.th_type = o.t.order.u32(&o.header, 4).unwrap_or(0);
                    self.counts.transactions = self.counts.transactions.saturating_add(1);
                    let r = sink(Event::Commit(&o.t));
                    self.pool.give(o.t);
                    r?;
                }
                Ok(())
            }
            XLOG_UNMOUNT_TRANS => {
                // Recovery drops a transaction that meets an unmount op.
                self.open.remove(&tid);
                Ok(())
            }
            _ => Err(corrupt(
                self.dev,
                blk,
                format!(
                    "record {}: op of transaction {tid:#x} has flags {flags:#04x}, which recovery refuses",
                    h.lsn
                ),
            )),
        }
    }
}

/// `xlog_recover_add_to_trans`: a region that starts something new.
fn add_region<R: ReadAt>(
    dev: &LogDev<'_, R>,
    blk: u32,
    o: &mut Open,
    payload: &[u8],
    keep: bool,
    pool: &mut RegionPool,
) -> Result<()> {
    if payload.is_empty() {
        return Ok(());
    }
    let tid = o.t.tid;
    if !o.started {
        let magic = o.t.order.u32(payload, 0);
        if magic != Some(XFS_TRANS_HEADER_MAGIC) {
            return Err(corrupt(
                dev,
                blk,
                format!(
                    "transaction {tid:#x}: the first region is not a transaction header (magic {:#010x})",
                    magic.unwrap_or(0)
                ),
            ));
        }
        if payload.len() > 16 {
            return Err(corrupt(
                dev,
                blk,
                format!(
                    "transaction {tid:#x}: transaction header region of {} bytes (16 expected)",
                    payload.len()
                ),
            ));
        }
        if let Some(d) = o.header.get_mut(..payload.len()) {
            d.copy_from_slice(payload);
        }
        if payload.len() == 16 {
            o.started = true;
            o.t.items.push(pool.item());
        }
        return Ok(());
    }
    o.bytes = o.bytes.saturating_add(payload.len());
    if o.bytes > MAX_TRANS_BYTES || payload.len() > MAX_REGION {
        return Err(corrupt(
            dev,
            blk,
            format!(
                "transaction {tid:#x} holds more than {MAX_TRANS_BYTES} bytes of regions or a region over {MAX_REGION} bytes"
            ),
        ));
    }
    let order = o.t.order;
    let need_new =
        o.t.items
            .last()
            .is_none_or(|it| it.total != 0 && it.total == it.count);
    if need_new {
        o.t.items.push(pool.item());
    }
    let index = o.t.items.len();
    let Some(item) = o.t.items.last_mut() else {
        return Ok(());
    };
    if item.total == 0 {
        let size = order.u16(payload, 2).unwrap_or(0);
        if size == 0 || size > XLOG_MAX_REGIONS_IN_ITEM {
            return Err(corrupt(
                dev,
                blk,
                format!(
                    "transaction {tid:#x}, item {index}: declares {size} regions (1..={XLOG_MAX_REGIONS_IN_ITEM} allowed)"
                ),
            ));
        }
        item.total = size;
    }
    if item.total <= item.count {
        return Err(corrupt(
            dev,
            blk,
            format!(
                "transaction {tid:#x}, item {index}: region count {} overflows its size {}",
                item.count, item.total
            ),
        ));
    }
    if keep || item.count == 0 {
        item.regions.push(pool.copy(payload));
    }
    item.count = item.count.saturating_add(1);
    Ok(())
}

/// `xlog_recover_add_to_cont_trans`: the rest of a split region.
fn add_continuation<R: ReadAt>(
    dev: &LogDev<'_, R>,
    blk: u32,
    o: &mut Open,
    payload: &[u8],
    keep: bool,
    pool: &mut RegionPool,
) -> Result<()> {
    let tid = o.t.tid;
    if !o.started {
        if payload.len() > 16 {
            return Err(corrupt(
                dev,
                blk,
                format!(
                    "transaction {tid:#x}: continued transaction header of {} bytes",
                    payload.len()
                ),
            ));
        }
        // The rest of a split header goes at its end.
        let at = 16usize.saturating_sub(payload.len());
        if let Some(d) = o.header.get_mut(at..) {
            d.copy_from_slice(payload);
        }
        o.started = true;
        o.t.items.push(pool.item());
        return Ok(());
    }
    o.bytes = o.bytes.saturating_add(payload.len());
    if o.bytes > MAX_TRANS_BYTES {
        return Err(corrupt(
            dev,
            blk,
            format!("transaction {tid:#x} holds more than {MAX_TRANS_BYTES} bytes of regions"),
        ));
    }
    let Some(item) = o.t.items.last_mut() else {
        return Ok(());
    };
    if item.count == 0 {
        return Err(corrupt(
            dev,
            blk,
            format!("transaction {tid:#x}: a continued region with no region to continue"),
        ));
    }
    let first = item.count == 1;
    if keep || first {
        if let Some(last) = item.regions.last_mut() {
            if last.len().saturating_add(payload.len()) > MAX_REGION {
                return Err(corrupt(
                    dev,
                    blk,
                    format!("transaction {tid:#x}: a region grows past {MAX_REGION} bytes"),
                ));
            }
            last.extend_from_slice(payload);
        }
    }
    Ok(())
}

/// How a walk treats record CRCs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CrcMode {
    /// Only check CRCs and headers; report the first bad record.
    Check,
    /// Replay: a CRC mismatch is fatal on v5, a warning on v4.
    Replay { v5: bool },
    /// The tail check and replay's first pass in one read: records are
    /// checked as with [`CrcMode::Check`] (the first bad one ends the
    /// walk) and, until then, assembled as with [`CrcMode::Replay`]. What
    /// that replay would refuse does not end the walk: it is kept in
    /// [`CrcWalk::refused`] and the walk goes on checking to the head, so
    /// a bad record after it still decides first, as when the check runs
    /// before the pass.
    CheckThenReplay { v5: bool },
    /// Replay of records a [`CrcMode::CheckThenReplay`] walk of the same
    /// range found all good, without a bad or missing CRC: as
    /// [`CrcMode::Replay`], but the CRCs are not computed again (the same
    /// bytes give the same answers; it is most of the work of a read in
    /// the browser, where CRC32c has no instruction).
    ReplayChecked { v5: bool },
}

/// The outcome of a CRC-only walk.
pub struct CrcWalk {
    /// The first record (log block) whose header or CRC was bad.
    pub first_bad: Option<(u32, String)>,
    pub records: u64,
    /// [`CrcMode::CheckThenReplay`]: the error the replay pass stopped at.
    pub refused: Option<Error>,
}

/// Walk the records of `[tail, head)`. With [`CrcMode::Check`] only the
/// records are read and checked; otherwise their ops are assembled and
/// `sink` gets every record and committed transaction.
pub fn walk<R: ReadAt>(
    dev: &LogDev<'_, R>,
    tail: u32,
    head: u32,
    mode: CrcMode,
    keep_data: bool,
    warnings: &mut Vec<String>,
    sink: &mut dyn FnMut(Event<'_>) -> Result<()>,
) -> Result<(CrcWalk, WalkCounts)> {
    let mut reader =
        RecordReader::new().checked_before(matches!(mode, CrcMode::ReplayChecked { .. }));
    let mut asm = Assembly {
        dev,
        open: HashMap::with_hasher(TidHash::new()),
        keep_data,
        counts: WalkCounts::default(),
        pool: RegionPool::default(),
    };
    let mut pos = tail;
    let mut left = dev.distance(tail, head);
    let mut out = CrcWalk {
        first_bad: None,
        records: 0,
        refused: None,
    };
    // Records are checked as the tail check does (a bad one ends the walk).
    let checking = matches!(mode, CrcMode::Check | CrcMode::CheckThenReplay { .. });
    let mut warned_fmt = false;
    while left > 0 {
        let rec = match reader.read(dev, pos) {
            Ok(r) => r,
            Err(e @ Error::Corrupt { .. }) => {
                if checking {
                    out.first_bad = Some((pos, e.to_string()));
                    break;
                }
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        let n = rec.header.total_bbs().max(1);
        // Once the replay pass of a fused walk has stopped, only checking.
        let replaying = match mode {
            CrcMode::Check => false,
            CrcMode::Replay { .. } | CrcMode::ReplayChecked { .. } => true,
            CrcMode::CheckThenReplay { .. } => out.refused.is_none(),
        };
        let replay_v5 = match mode {
            CrcMode::Replay { v5 }
            | CrcMode::CheckThenReplay { v5 }
            | CrcMode::ReplayChecked { v5 } => Some(v5),
            CrcMode::Check => None,
        };
        match (checking, replay_v5, rec.crc) {
            (true, _, CrcCheck::Bad { stored, computed }) => {
                out.first_bad = Some((
                    pos,
                    format!(
                        "record {} at log block {pos}: CRC stored {stored:#010x}, computed {computed:#010x}",
                        rec.header.lsn
                    ),
                ));
                break;
            }
            (_, Some(v5), c @ (CrcCheck::Bad { .. } | CrcCheck::NotChecksummed))
                if replaying && (v5 || c.is_bad()) =>
            {
                let what = match c {
                    CrcCheck::Bad { stored, computed } => {
                        format!("CRC stored {stored:#010x}, computed {computed:#010x}")
                    }
                    _ => "no CRC (h_crc 0) on a v5 filesystem".to_string(),
                };
                if v5 {
                    let e = corrupt(
                        dev,
                        pos,
                        format!(
                            "record {} at log block {pos}: {what}; the kernel refuses to recover a v5 log with a bad record before its last 8 log buffers",
                            rec.header.lsn
                        ),
                    );
                    if !checking {
                        return Err(e);
                    }
                    out.refused = Some(e);
                } else {
                    warnings.push(format!(
                        "record {} at log block {pos}: {what} (a warning only on v4)",
                        rec.header.lsn
                    ));
                }
            }
            _ => {}
        }
        out.records = out.records.saturating_add(1);
        asm.counts.records = asm.counts.records.saturating_add(1);
        if n > left {
            let msg = format!(
                "record at log block {pos} ({n} blocks) runs {} blocks past the head",
                n.saturating_sub(left)
            );
            if checking {
                out.first_bad = Some((pos, msg));
                break;
            }
            return Err(corrupt(dev, pos, msg));
        }
        if replaying && out.refused.is_none() {
            if rec.header.fmt != XLOG_FMT_LINUX_LE && !warned_fmt {
                warned_fmt = true;
                warnings.push(format!(
                    "record {} was written by a big-endian host (h_fmt {}); replayed in that byte order, though a little-endian kernel refuses to recover such a log",
                    rec.header.lsn, rec.header.fmt
                ));
            }
            let r = sink(Event::Record(&rec.header))
                .and_then(|()| asm.record(&rec.header, reader.data(), sink));
            match r {
                Ok(()) => {}
                Err(e) if checking => out.refused = Some(e),
                Err(e) => return Err(e),
            }
        }
        left = left.saturating_sub(n);
        pos = dev.wrap(pos, n);
    }
    asm.counts.uncommitted = u64::try_from(asm.open.len()).unwrap_or(u64::MAX);
    Ok((out, asm.counts))
}

/// The kernel's tail check (`xlog_verify_tail`): CRC-check tail to head;
/// a bad record within 8 log buffers ahead of the head was overwritten by
/// a partial write of the new cycle, so the tail moves past it. Returns
/// the tail to replay from, with a note when it moved.
pub fn verify_tail<R: ReadAt>(dev: &LogDev<'_, R>, ht: &HeadTail) -> Result<(u32, Option<String>)> {
    let head = ht.head.block;
    let mut tail = ht.tail.block;
    let window = crate::xfs::log::record::btobb(
        XLOG_MAX_ICLOGS.saturating_mul(
            ht.last_h_size
                .clamp(XLOG_HEADER_CYCLE_SIZE, XLOG_MAX_RECORD_BSIZE),
        ),
    );
    let mut note = None;
    let mut guard = 0u32;
    loop {
        let mut w = Vec::new();
        let (res, _) = walk(dev, tail, head, CrcMode::Check, false, &mut w, &mut |_| {
            Ok(())
        })?;
        let Some((bad, why)) = res.first_bad else {
            return Ok((tail, note));
        };
        guard = guard.saturating_add(1);
        if dev.distance(head, bad) > window || guard > 64 {
            return Err(corrupt(
                dev,
                bad,
                format!(
                    "{why}; it lies more than {window} blocks ahead of the head, so it is not an overwritten tail: the kernel refuses to recover this log"
                ),
            ));
        }
        // Skip to the second header from the bad one (the bad one included).
        let next = next_header(dev, bad, head)?;
        let Some(next) = next else {
            return Ok((head, Some(format!("{why}: nothing left to replay"))));
        };
        note = Some(format!(
            "{why}; the tail was overwritten by a partial write and moves from log block {} to {next}",
            ht.tail.block
        ));
        tail = next;
        if tail == head {
            return Ok((tail, note));
        }
    }
}

/// The first valid record header after `pos` (not at it), before `head`.
fn next_header<R: ReadAt>(dev: &LogDev<'_, R>, pos: u32, head: u32) -> Result<Option<u32>> {
    let v2 = dev.is_v2();
    let len = dev.len_bbs();
    let ok = |i: u32, b: &[u8]| {
        crate::xfs::log::is_header(b) && RecordHeader::parse(b, i, v2, len).is_ok()
    };
    let start = dev.wrap(pos, 1);
    let n = dev.distance(start, head);
    let first = n.min(len.saturating_sub(start));
    if let Some(b) = dev.scan_forward(start, first, ok)? {
        return Ok(Some(b));
    }
    let rest = n.saturating_sub(first);
    if rest > 0 {
        return dev.scan_forward(0, rest, ok);
    }
    Ok(None)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::cast_possible_truncation
)]
mod tests {
    use super::*;
    use crate::xfs::image::Image;
    use crate::xfs::types::Daddr;

    fn header(num_logops: u32) -> RecordHeader {
        crate::xfs::testutil::record_header(num_logops)
    }

    fn op(tid: u32, flags: u8, client: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&tid.to_be_bytes());
        v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        v.push(client);
        v.push(flags);
        v.extend_from_slice(&[0, 0]);
        v.extend_from_slice(payload);
        v
    }

    fn trans_header(tid: u32) -> Vec<u8> {
        let mut h = Vec::new();
        h.extend_from_slice(&XFS_TRANS_HEADER_MAGIC.to_le_bytes());
        h.extend_from_slice(&40u32.to_le_bytes());
        h.extend_from_slice(&tid.to_le_bytes());
        h.extend_from_slice(&2u32.to_le_bytes());
        h
    }

    /// Feed ops to an assembly; returns the committed transactions.
    fn feed(ops: &[Vec<u8>]) -> Result<Vec<RTrans>> {
        let img = Image::new(vec![0u8; 64 * 512]);
        let dev = LogDev::new(&img, Daddr(0), 64, true).unwrap();
        let mut asm = Assembly {
            dev: &dev,
            open: HashMap::with_hasher(TidHash::new()),
            keep_data: true,
            counts: WalkCounts::default(),
            pool: RegionPool::default(),
        };
        let data: Vec<u8> = ops.concat();
        let h = header(ops.len() as u32);
        let mut out = Vec::new();
        asm.record(&h, &data, &mut |e| {
            if let Event::Commit(t) = e {
                out.push(t.clone());
            }
            Ok(())
        })?;
        Ok(out)
    }

    fn region(kind: u16, size: u16, len: usize) -> Vec<u8> {
        let mut r = vec![0u8; len];
        r[0..2].copy_from_slice(&kind.to_le_bytes());
        r[2..4].copy_from_slice(&size.to_le_bytes());
        r
    }

    /// What a walk saw: each record's block and each committed
    /// transaction's tid, LSN and item count, in order.
    fn events(dev: &LogDev<'_, Vec<u8>>, ht: &HeadTail, mode: CrcMode) -> (Vec<String>, CrcWalk) {
        let mut seen = Vec::new();
        let mut w = Vec::new();
        let (res, _) = walk(
            dev,
            ht.tail.block,
            ht.head.block,
            mode,
            false,
            &mut w,
            &mut |e| {
                seen.push(match e {
                    Event::Record(h) => format!("record {}", h.blk),
                    Event::Commit(t) => {
                        format!("commit {:#x} {:?} {}", t.tid, t.lsn, t.items.len())
                    }
                });
                Ok(())
            },
        )
        .unwrap();
        (seen, res)
    }

    /// The fused read (tail check and first pass) sees what the pass sees
    /// on a sound log, stops at the record the check stops at on a damaged
    /// one, and keeps what the pass refuses instead of stopping there.
    #[test]
    fn the_fused_read_is_the_check_and_the_pass() {
        let fs = crate::xfs::testutil::fixture_fs("log-wrapped");
        let path = crate::xfs::testutil::image_path("log-wrapped");
        let bytes = std::fs::read(path).unwrap();
        let loc = crate::xfs::log::LogLocation::of(&fs).unwrap();
        let start = loc.start_daddr.0 as usize * 512;
        let open = |b: Vec<u8>| Image::new(b);
        let img = open(bytes.clone());
        let dev = LogDev::new(&img, loc.start_daddr, loc.len_bbs, loc.v2).unwrap();
        let ht = crate::xfs::log::find::find_head_tail(&dev).unwrap();
        let (pass, p) = events(&dev, &ht, CrcMode::Replay { v5: true });
        let (fused, f) = events(&dev, &ht, CrcMode::CheckThenReplay { v5: true });
        assert!(pass.iter().filter(|e| e.starts_with("commit")).count() > 10);
        assert_eq!(fused, pass);
        assert!(f.first_bad.is_none() && f.refused.is_none() && p.refused.is_none());
        assert_eq!(f.records, p.records);

        // A record in the middle of the live part: its block.
        let recs: Vec<u32> = pass
            .iter()
            .filter_map(|e| e.strip_prefix("record ")?.parse().ok())
            .collect();
        let mid = recs[recs.len() / 2];
        let rec_off = start + mid as usize * 512;
        let h =
            RecordHeader::parse(&bytes[rec_off..rec_off + 512], mid, loc.v2, loc.len_bbs).unwrap();

        // A flipped data byte: the CRC fails there; the fused read stops
        // where the check stops, and its pass saw the records before it.
        let mut bad = bytes.clone();
        bad[rec_off + 512 + 100] ^= 0x40;
        let img = open(bad.clone());
        let dev = LogDev::new(&img, loc.start_daddr, loc.len_bbs, loc.v2).unwrap();
        let (_, c) = events(&dev, &ht, CrcMode::Check);
        let (fused, f) = events(&dev, &ht, CrcMode::CheckThenReplay { v5: true });
        assert_eq!(c.first_bad.as_ref().map(|b| b.0), Some(mid));
        assert_eq!(f.first_bad, c.first_bad);
        let before = pass
            .iter()
            .position(|e| e == &format!("record {mid}"))
            .unwrap();
        assert_eq!(fused[..before], pass[..before]);

        // The first op's client id made unknown, the CRC made good again:
        // the check passes, the pass refuses; the fused read keeps the
        // pass's error and checks on to the head.
        let mut refused = bytes.clone();
        let client = rec_off + 512 * h.hblks as usize + 8;
        refused[client] = 0x7f;
        let hdr = refused[rec_off..rec_off + 512 * h.hblks as usize].to_vec();
        let data_start = rec_off + 512 * h.hblks as usize;
        let data = refused[data_start..data_start + 512 * h.data_bbs() as usize].to_vec();
        let crc = crate::xfs::log::record::record_crc(&hdr, &data, h.len, XLOG_REC_SIZE);
        // h_crc sits at byte 32 of the header, little-endian.
        refused[rec_off + 32..rec_off + 36].copy_from_slice(&crc.to_le_bytes());
        let img = open(refused);
        let dev = LogDev::new(&img, loc.start_daddr, loc.len_bbs, loc.v2).unwrap();
        let (_, c) = events(&dev, &ht, CrcMode::Check);
        assert!(c.first_bad.is_none(), "{:?}", c.first_bad);
        let mut w = Vec::new();
        let err = walk(
            &dev,
            ht.tail.block,
            ht.head.block,
            CrcMode::Replay { v5: true },
            false,
            &mut w,
            &mut |_| Ok(()),
        )
        .err()
        .unwrap();
        let (_, f) = events(&dev, &ht, CrcMode::CheckThenReplay { v5: true });
        assert!(f.first_bad.is_none());
        assert_eq!(f.refused.map(|e| e.to_string()), Some(err.to_string()));
        assert_eq!(f.records, c.records);
    }

    #[test]
    fn regions_are_grouped_by_each_items_count_and_split_regions_joined() {
        let t = 0x42;
        let mut buf = region(XFS_LI_BUF, 2, 24);
        buf[4] = 0;
        let data = vec![9u8; 256];
        let ops = vec![
            op(t, XLOG_START_TRANS, XFS_TRANSACTION, &[]),
            // The transaction header split in two pieces.
            op(
                t,
                XLOG_CONTINUE_TRANS,
                XFS_TRANSACTION,
                &trans_header(t)[..6],
            ),
            op(
                t,
                XLOG_WAS_CONT_TRANS | XLOG_END_TRANS,
                XFS_TRANSACTION,
                &trans_header(t)[6..],
            ),
            op(t, 0, XFS_TRANSACTION, &buf),
            op(t, XLOG_CONTINUE_TRANS, XFS_TRANSACTION, &data[..100]),
            op(
                t,
                XLOG_WAS_CONT_TRANS | XLOG_END_TRANS,
                XFS_TRANSACTION,
                &data[100..],
            ),
            op(t, 0, XFS_TRANSACTION, &region(XFS_LI_ICREATE, 1, 28)),
            // An op of a transaction begun before the tail: skipped.
            op(0x99, 0, XFS_TRANSACTION, &region(XFS_LI_BUF, 1, 24)),
            op(t, XLOG_COMMIT_TRANS, XFS_TRANSACTION, &[]),
        ];
        let ts = feed(&ops).unwrap();
        assert_eq!(ts.len(), 1);
        let tr = &ts[0];
        assert_eq!(
            tr.lsn,
            Lsn {
                cycle: 1,
                block: 10
            }
        );
        assert_eq!(tr.items.len(), 2);
        assert_eq!(tr.items[0].regions.len(), 2);
        assert_eq!(tr.items[0].regions[1], data);
        assert_eq!(tr.items[1].total, 1);
    }

    #[test]
    fn what_recovery_refuses_is_an_error_naming_the_log_block() {
        let t = 7;
        let start = op(t, XLOG_START_TRANS, XFS_TRANSACTION, &[]);
        let th = op(t, 0, XFS_TRANSACTION, &trans_header(t));
        let cases: Vec<(Vec<Vec<u8>>, &str)> = vec![
            (vec![op(t, 0, 0x33, &[])], "client id"),
            (vec![start.clone(), start.clone()], "refuses"),
            (
                vec![start.clone(), op(t, 0, XFS_TRANSACTION, &[1, 2, 3, 4])],
                "not a transaction header",
            ),
            (
                vec![
                    start.clone(),
                    th.clone(),
                    op(t, 0, XFS_TRANSACTION, &region(XFS_LI_BUF, 0, 24)),
                ],
                "declares 0 regions",
            ),
            (
                vec![
                    start.clone(),
                    th.clone(),
                    op(t, 0, XFS_TRANSACTION, &region(XFS_LI_BUF, 300, 24)),
                ],
                "declares 300",
            ),
            (
                vec![
                    start.clone(),
                    th,
                    op(t, XLOG_WAS_CONT_TRANS, XFS_TRANSACTION, &[1; 8]),
                ],
                "no region to continue",
            ),
        ];
        for (ops, want) in cases {
            let e = feed(&ops).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains("daddr 10"), "{want}: {e}");
        }
        // An op claiming more bytes than the record has.
        let mut bad = op(t, XLOG_START_TRANS, XFS_TRANSACTION, &[]);
        bad[4..8].copy_from_slice(&1000u32.to_be_bytes());
        assert!(feed(&[bad])
            .unwrap_err()
            .to_string()
            .contains("claims 1000 bytes"));
        // A transaction without its commit simply does not happen.
        let ts = feed(&[start, op(t, 0, XFS_TRANSACTION, &trans_header(t))]).unwrap();
        assert!(ts.is_empty());
    }
}
