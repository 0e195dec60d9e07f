//! The journal: where it is, where its live part begins and ends, and what
//! every record, transaction and log item in that part says.
//!
//! ```text
//!  log block 0                                                   L-1
//!  |  cycle c+1 records ... | head | cycle c records ... | tail ...|
//!                            ^ next write              ^ oldest record recovery needs
//! ```
//!
//! The log is a ring of `L` 512-byte blocks at `sb_logstart`. Records are
//! written one after another; every block carries the cycle (pass number)
//! in its first word. [`find`] locates the head and tail as the kernel does,
//! [`record`] reads, checks (CRC32c) and unpacks one record, [`trans`]
//! reassembles operations into transactions and groups their regions into
//! log items, [`items`] decodes each item, [`bitmap`] turns a buffer item's
//! dirty bitmap into runs and names the fields they cover, and [`stats`]
//! counts what was logged.
//!
//! Reading is streaming: the live part is read front to back in large
//! sequential windows through the image chokepoint, records are decoded one
//! at a time, and only the compact decoded transactions are kept, so a log
//! of a gibibyte or more is never held whole.

pub mod bitmap;
pub mod find;
pub mod index;
pub mod item_json;
pub mod items;
#[cfg(not(target_arch = "wasm32"))]
pub mod json;
pub mod record;
pub mod run_fields;
pub mod stats;
pub mod trans;

use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::BBSIZE;
use crate::xfs::fs::Fs;
use crate::xfs::image::Image;
use crate::xfs::read::ReadAt;
use crate::xfs::types::{Daddr, Lsn};
use serde::Serialize;
use std::cell::RefCell;

pub use find::HeadTail;
pub use items::{Item, ItemBody, ItemKind};
pub use record::{CrcCheck, RecordHeader};
pub use trans::Transaction;

/// Blocks read at once when the log is walked front to back (1 MiB, the
/// browser worker's read size).
pub const WINDOW_BBS: u32 = 2048;

/// Where the log lives and how it is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LogLocation {
    /// Daddr of log block 0.
    pub start_daddr: Daddr,
    /// Length in 512-byte blocks.
    pub len_bbs: u32,
    /// Log sector size in 512-byte blocks.
    pub sect_bbs: u32,
    /// Version 2 log (extended headers, variable record size).
    pub v2: bool,
    /// The log is on another device (not readable from this image).
    pub external: bool,
}

impl LogLocation {
    /// The internal log of `fs`: `sb_logstart` (an AG-packed block number)
    /// converted to a daddr, `sb_logblocks` converted to 512-byte blocks.
    pub fn of<R: ReadAt>(fs: &Fs<R>) -> Result<LogLocation> {
        let sb = &fs.sb;
        let here = Location::Bytes { offset: 48, len: 8 };
        let external = sb.logstart == 0;
        let start_daddr = if external {
            Daddr(0)
        } else {
            fs.geo
                .fsb_to_daddr(crate::xfs::types::FsBlock(sb.logstart))
                .ok_or_else(|| {
                    Error::corrupt(
                        "superblock",
                        here.clone(),
                        format!(
                            "sb_logstart {} (AG-packed) lies outside the filesystem",
                            sb.logstart
                        ),
                    )
                })?
        };
        let shift = u32::from(fs.geo.blocklog).saturating_sub(9);
        let len_bbs = u64::from(sb.logblocks)
            .checked_shl(shift)
            .and_then(|l| u32::try_from(l).ok())
            .filter(|l| *l >= 2)
            .ok_or_else(|| {
                Error::corrupt(
                    "superblock",
                    Location::Bytes { offset: 96, len: 4 },
                    format!("sb_logblocks {} is not a usable log length", sb.logblocks),
                )
            })?;
        // Log sectors: 512 bytes unless SECTOR (versionnum 0x0800) is set.
        let sect_bbs = if sb.versionnum & 0x0800 != 0 && sb.logsectlog > 9 {
            1u32.checked_shl(u32::from(sb.logsectlog).saturating_sub(9))
                .unwrap_or(1)
        } else {
            1
        };
        // LOGV2 is versionnum bit 0x0400; every v5 filesystem has it.
        let v2 = sb.is_v5() || sb.versionnum & 0x0400 != 0;
        Ok(LogLocation {
            start_daddr,
            len_bbs,
            sect_bbs,
            v2,
            external,
        })
    }
}

/// A window of log blocks kept for sequential reads.
struct Window {
    first: u32,
    data: Vec<u8>,
}

/// The log as a ring of 512-byte blocks, read through the image chokepoint.
pub struct LogDev<'a, R: ReadAt> {
    img: &'a Image<R>,
    /// Byte offset of log block 0 in the image.
    start: u64,
    start_daddr: u64,
    len: u32,
    v2: bool,
    /// The filesystem UUID records must carry (`h_fs_uuid`), if known.
    uuid: Option<[u8; 16]>,
    /// The log is a device of its own: error locations name it.
    external: bool,
    window: RefCell<Window>,
}

impl<'a, R: ReadAt> LogDev<'a, R> {
    /// The log of `fs`: its internal log, or the whole of the external
    /// log device it was given ([`Fs::with_logdev`]) when `sb_logstart`
    /// is 0. Records must carry the filesystem's UUID, so a log device of
    /// another filesystem is refused when its records are read.
    pub fn of_fs(fs: &'a Fs<R>) -> Result<LogDev<'a, R>> {
        let loc = LogLocation::of(fs)?;
        let dev = if loc.external {
            let Some(log) = fs.logdev.as_ref() else {
                return Err(Error::ExternalLogMissing {
                    logblocks: fs.sb.logblocks,
                    blocksize: fs.geo.blocksize,
                });
            };
            let need = u64::from(loc.len_bbs).saturating_mul(BBSIZE);
            if log.len() < need {
                return Err(Error::corrupt(
                    "external log device",
                    Location::Bytes {
                        offset: 0,
                        len: need,
                    },
                    format!(
                        "the device holds {} bytes, the superblock's log needs {need} (sb_logblocks {} of {} bytes)",
                        log.len(),
                        fs.sb.logblocks,
                        fs.geo.blocksize
                    ),
                ));
            }
            let mut dev = LogDev::new(log, Daddr(0), loc.len_bbs, loc.v2)?;
            dev.external = true;
            dev
        } else {
            LogDev::new(&fs.img, loc.start_daddr, loc.len_bbs, loc.v2)?
        };
        Ok(dev.with_uuid(fs.sb.uuid))
    }

    /// A log of `len_bbs` blocks starting at `start` in `img`.
    pub fn new(img: &'a Image<R>, start: Daddr, len_bbs: u32, v2: bool) -> Result<Self> {
        let start_byte = start.byte_offset().unwrap_or(u64::MAX);
        let end = u64::from(len_bbs)
            .checked_mul(BBSIZE)
            .and_then(|l| start_byte.checked_add(l));
        if end.is_none_or(|e| e > img.len()) || len_bbs < 2 {
            return Err(Error::corrupt(
                "log",
                Location::Daddr { daddr: start.0 },
                format!(
                    "a log of {len_bbs} blocks at daddr {} does not fit in the image ({} bytes)",
                    start.0,
                    img.len()
                ),
            ));
        }
        Ok(LogDev {
            img,
            start: start_byte,
            start_daddr: start.0,
            len: len_bbs,
            v2,
            uuid: None,
            external: false,
            window: RefCell::new(Window {
                first: 0,
                data: Vec::new(),
            }),
        })
    }

    /// Require records to carry this filesystem UUID.
    pub fn with_uuid(mut self, uuid: [u8; 16]) -> Self {
        self.uuid = Some(uuid);
        self
    }

    /// Length of the log in blocks.
    pub fn len_bbs(&self) -> u32 {
        self.len
    }

    pub fn is_v2(&self) -> bool {
        self.v2
    }

    pub fn uuid(&self) -> Option<[u8; 16]> {
        self.uuid
    }

    /// Daddr of log block 0.
    pub fn start_daddr(&self) -> u64 {
        self.start_daddr
    }

    /// Where log block `blk` is, for error messages: a daddr of the data
    /// device, or of the external log device.
    pub fn location(&self, blk: u32) -> Location {
        let daddr = self.start_daddr.saturating_add(u64::from(blk));
        if self.external {
            Location::LogDevice { daddr }
        } else {
            Location::Daddr { daddr }
        }
    }

    /// `blk + n` around the ring.
    pub fn wrap(&self, blk: u32, n: u32) -> u32 {
        let len = u64::from(self.len);
        let sum = u64::from(blk)
            .checked_rem(len)
            .unwrap_or(0)
            .saturating_add(u64::from(n).checked_rem(len).unwrap_or(0));
        u32::try_from(sum.checked_rem(len).unwrap_or(0)).unwrap_or(0)
    }

    /// Blocks from `from` forward to `to` around the ring.
    pub fn distance(&self, from: u32, to: u32) -> u32 {
        if to >= from {
            to.saturating_sub(from)
        } else {
            self.len.saturating_sub(from).saturating_add(to)
        }
    }

    fn byte_of(&self, blk: u32) -> u64 {
        self.start
            .saturating_add(u64::from(blk).saturating_mul(BBSIZE))
    }

    /// Read the blocks from `blk` into `buf` (a whole number of blocks, not
    /// wrapping) straight from the image, bypassing the window.
    pub fn read_direct(&self, blk: u32, buf: &mut [u8]) -> Result<()> {
        let count = u32::try_from(buf.len() / 512).unwrap_or(u32::MAX);
        if blk.checked_add(count).is_none_or(|e| e > self.len) {
            return Err(Error::corrupt(
                "log",
                self.location(blk),
                format!(
                    "{count} blocks from log block {blk} run past the end of the log ({} blocks)",
                    self.len
                ),
            ));
        }
        self.img.read_into("log", self.byte_of(blk), buf)
    }

    /// Read `count` blocks from `blk` without wrapping, into `out`
    /// (replacing its contents), using the sequential window when it helps.
    pub fn read_straight(&self, blk: u32, count: u32, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        let end = blk.checked_add(count).filter(|e| *e <= self.len);
        let Some(end) = end else {
            return Err(Error::corrupt(
                "log",
                self.location(blk),
                format!(
                    "{count} blocks from log block {blk} run past the end of the log ({} blocks)",
                    self.len
                ),
            ));
        };
        let bytes_of = |n: u32| usize::try_from(n).unwrap_or(0).saturating_mul(512);
        if count > WINDOW_BBS {
            out.resize(bytes_of(count), 0);
            return self.img.read_into("log", self.byte_of(blk), out);
        }
        let mut w = self.window.borrow_mut();
        let w_end = w
            .first
            .saturating_add(u32::try_from(w.data.len() / 512).unwrap_or(0));
        if !(blk >= w.first && end <= w_end) {
            let n = WINDOW_BBS.min(self.len.saturating_sub(blk)).max(count);
            // Reuse the window's memory: no fresh 1 MiB per read.
            w.data.resize(bytes_of(n), 0);
            w.first = blk;
            if let Err(e) = self.img.read_into("log", self.byte_of(blk), &mut w.data) {
                w.data.clear();
                return Err(e);
            }
        }
        let lo = usize::try_from(blk.saturating_sub(w.first))
            .unwrap_or(usize::MAX)
            .saturating_mul(512);
        let hi = lo.saturating_add(usize::try_from(count).unwrap_or(0).saturating_mul(512));
        let src = w.data.get(lo..hi).ok_or_else(|| {
            Error::corrupt("log", self.location(blk), "window read came back short")
        })?;
        out.extend_from_slice(src);
        Ok(())
    }

    /// Read `count` blocks from `blk`, wrapping from the last block to block
    /// 0, into `out` (replacing its contents).
    pub fn read_wrapped(&self, blk: u32, count: u32, out: &mut Vec<u8>) -> Result<()> {
        if count > self.len {
            return Err(Error::corrupt(
                "log",
                self.location(blk),
                format!("{count} blocks is more than the whole log ({})", self.len),
            ));
        }
        let blk = blk.checked_rem(self.len).unwrap_or(0);
        let first = count.min(self.len.saturating_sub(blk));
        self.read_straight(blk, first, out)?;
        let rest = count.saturating_sub(first);
        if rest > 0 {
            let mut tail = Vec::new();
            self.read_straight(0, rest, &mut tail)?;
            out.extend_from_slice(&tail);
        }
        Ok(())
    }

    /// One block.
    pub fn block(&self, blk: u32) -> Result<[u8; 512]> {
        let blk = blk.checked_rem(self.len).unwrap_or(0);
        let mut b = [0u8; 512];
        {
            let w = self.window.borrow();
            let w_end = w
                .first
                .saturating_add(u32::try_from(w.data.len() / 512).unwrap_or(0));
            if blk >= w.first && blk < w_end {
                let lo = usize::try_from(blk.saturating_sub(w.first))
                    .unwrap_or(usize::MAX)
                    .saturating_mul(512);
                if let Some(src) = w.data.get(lo..lo.saturating_add(512)) {
                    b.copy_from_slice(src);
                    return Ok(b);
                }
            }
        }
        let bytes = self.img.read("log block", self.byte_of(blk), 512)?;
        if let Some(src) = bytes.get(..512) {
            b.copy_from_slice(src);
        }
        Ok(b)
    }

    /// The cycle a block was written in: `h_cycle` for a record header,
    /// the stamped first word otherwise, 0 for a never-written block.
    pub fn cycle(&self, blk: u32) -> Result<u32> {
        Ok(cycle_of(&self.block(blk)?))
    }

    /// Call `f` on each block of `[blk, blk + count)` (no wrapping) in
    /// ascending order until it returns `true`; returns that block.
    pub fn scan_forward(
        &self,
        blk: u32,
        count: u32,
        mut f: impl FnMut(u32, &[u8]) -> bool,
    ) -> Result<Option<u32>> {
        let mut buf = Vec::new();
        let mut at = blk;
        let end = blk.saturating_add(count).min(self.len);
        while at < end {
            let n = end.saturating_sub(at).min(WINDOW_BBS);
            self.read_straight(at, n, &mut buf)?;
            for (i, b) in buf.chunks_exact(512).enumerate() {
                let here = at.saturating_add(u32::try_from(i).unwrap_or(u32::MAX));
                if f(here, b) {
                    return Ok(Some(here));
                }
            }
            at = at.saturating_add(n);
        }
        Ok(None)
    }

    /// Call `f` on each block of `[lo, hi)` (no wrapping) in descending
    /// order until it returns `true`; returns that block.
    pub fn scan_backward(
        &self,
        lo: u32,
        hi: u32,
        mut f: impl FnMut(u32, &[u8]) -> bool,
    ) -> Result<Option<u32>> {
        let mut buf = Vec::new();
        let mut top = hi.min(self.len);
        // Small first step: the answer is usually just below `hi`.
        let mut step = 16u32;
        while top > lo {
            let n = top.saturating_sub(lo).min(step);
            let start = top.saturating_sub(n);
            self.read_straight(start, n, &mut buf)?;
            for (i, b) in buf.chunks_exact(512).enumerate().rev() {
                let here = start.saturating_add(u32::try_from(i).unwrap_or(u32::MAX));
                if f(here, b) {
                    return Ok(Some(here));
                }
            }
            top = start;
            step = step.saturating_mul(4).min(WINDOW_BBS);
        }
        Ok(None)
    }
}

/// The cycle number of a raw 512-byte log block.
pub fn cycle_of(block: &[u8]) -> u32 {
    let w0 = crate::xfs::fs::be32(block, 0).unwrap_or(0);
    if w0 == crate::xfs::format::log::XLOG_HEADER_MAGIC_NUM {
        crate::xfs::fs::be32(block, 4).unwrap_or(0)
    } else {
        w0
    }
}

/// Whether a raw block starts with the record header magic.
pub fn is_header(block: &[u8]) -> bool {
    crate::xfs::fs::be32(block, 0) == Some(crate::xfs::format::log::XLOG_HEADER_MAGIC_NUM)
}

/// A finding about the log that does not stop decoding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Log block the finding is about, if any.
    pub block: Option<u32>,
    pub message: String,
}

/// What to decode beyond the structure of every item.
#[derive(Clone, Copy, Debug, Default)]
pub struct DecodeOptions {
    /// Keep the names of directory entries found in logged directory
    /// blocks, so runs can be named by entry (memory on big logs), and the
    /// logged headers of btree and da blocks, so their runs can be named
    /// by record and entry.
    pub dir_names: bool,
    /// Keep the logged inode cores (memory on big logs).
    pub inode_cores: bool,
}

/// Filesystem facts the item decoder uses to name what a buffer holds.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct ItemContext {
    pub v5: bool,
    pub blocklog: u8,
    pub blocksize: u32,
    pub sectsize: u32,
    pub inodesize: u32,
    pub inopblog: u8,
    pub agblocks: u32,
    pub agblklog: u8,
    /// Directory entries carry a file type byte.
    pub ftype: bool,
    /// Bytes of a directory block (a buffer of this size may be logged as
    /// several segments).
    pub dirblksize: u32,
    /// See [`DecodeOptions`].
    pub dir_names: bool,
    pub inode_cores: bool,
}

impl ItemContext {
    pub fn of<R: ReadAt>(fs: &Fs<R>, opts: DecodeOptions) -> ItemContext {
        ItemContext {
            v5: fs.geo.v5,
            blocklog: fs.geo.blocklog,
            blocksize: fs.geo.blocksize,
            sectsize: u32::from(fs.geo.sectsize),
            inodesize: u32::from(fs.geo.inodesize),
            inopblog: fs.geo.inopblog,
            agblocks: fs.geo.agblocks,
            agblklog: fs.geo.agblklog,
            ftype: fs.geo.v5 || fs.sb.features2 & 0x200 != 0,
            dirblksize: fs
                .geo
                .blocksize
                .checked_shl(u32::from(fs.geo.dirblklog))
                .unwrap_or(fs.geo.blocksize),
            dir_names: opts.dir_names,
            inode_cores: opts.inode_cores,
        }
    }
}

/// A record whose CRC did not match.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CrcMismatch {
    pub lsn: Lsn,
    pub block: u32,
    pub stored: u32,
    pub computed: u32,
}

/// Everything decoded from the live part of a log.
#[derive(Clone, Debug)]
pub struct LogDecode {
    pub location: LogLocation,
    pub head_tail: HeadTail,
    /// Records read between tail and head.
    pub records: u64,
    pub record_list: Vec<trans::RecordInfo>,
    /// Records whose CRC matched / carried no CRC.
    pub records_crc_ok: u64,
    pub records_no_crc: u64,
    pub crc_mismatches: Vec<CrcMismatch>,
    /// Committed transactions, in the order of their commit records.
    pub transactions: Vec<Transaction>,
    /// Transactions started but not committed before the head (recovery
    /// ignores them).
    pub incomplete: Vec<Transaction>,
    /// Intents with no done item in the live log.
    pub unfinished_intents: Vec<items::IntentRef>,
    /// Done items whose intent lies before the tail.
    pub orphan_dones: u64,
    /// Ops of transactions that started before the tail (and unmount ops).
    pub skipped_ops: u64,
    pub unmount_records: u64,
    pub problems: Vec<Problem>,
    pub stats: stats::LogStats,
}

impl DecodeOptions {
    /// Everything: directory entry names and inode cores.
    pub const DETAIL: DecodeOptions = DecodeOptions {
        dir_names: true,
        inode_cores: true,
    };
}

impl LogDecode {
    /// A copy of everything but the transactions and the record list.
    pub fn clone_without_transactions(&self) -> LogDecode {
        LogDecode {
            location: self.location,
            head_tail: self.head_tail.clone(),
            records: self.records,
            record_list: Vec::new(),
            records_crc_ok: self.records_crc_ok,
            records_no_crc: self.records_no_crc,
            crc_mismatches: self.crc_mismatches.clone(),
            transactions: Vec::new(),
            incomplete: Vec::new(),
            unfinished_intents: self.unfinished_intents.clone(),
            orphan_dones: self.orphan_dones,
            skipped_ops: self.skipped_ops,
            unmount_records: self.unmount_records,
            problems: self.problems.clone(),
            stats: self.stats.clone(),
        }
    }
}

/// Find the head and tail of the internal log of `fs` and decode every
/// record, transaction and item between them.
pub fn decode<R: ReadAt>(fs: &Fs<R>, opts: DecodeOptions) -> Result<LogDecode> {
    let location = LogLocation::of(fs)?;
    let dev = LogDev::of_fs(fs)?;
    let ctx = ItemContext::of(fs, opts);
    decode_dev(&dev, location, ctx)
}

/// Decode one transaction again, from its start record to its commit
/// record only (for example with details, after a plain [`decode`] of a big
/// log). `None` when the log no longer holds it.
pub fn decode_transaction<R: ReadAt>(
    fs: &Fs<R>,
    t: &Transaction,
    opts: DecodeOptions,
) -> Result<Option<Transaction>> {
    let Some(commit) = t.commit_lsn else {
        return Ok(None);
    };
    let dev = LogDev::of_fs(fs)?;
    let ctx = ItemContext::of(fs, opts);
    let found = trans::walk_range(&dev, t.start_lsn.block, commit.block, ctx)?;
    Ok(found.into_iter().find(|x| x.tid == t.tid))
}

/// [`decode_transaction`] for a transaction known by its ticket id and the
/// LSNs of its start and commit records (as [`index::LogIndex`] keeps it):
/// the records from the start record to the commit record are decoded, and
/// the transaction with that ticket, start and commit among them returned.
/// Its intents and done items are not linked. `None` when the log no
/// longer holds it.
pub fn decode_transaction_at<R: ReadAt>(
    fs: &Fs<R>,
    tid: u32,
    start_lsn: Lsn,
    commit_lsn: Lsn,
    opts: DecodeOptions,
) -> Result<Option<Transaction>> {
    let dev = LogDev::of_fs(fs)?;
    let ctx = ItemContext::of(fs, opts);
    let found = trans::walk_range(&dev, start_lsn.block, commit_lsn.block, ctx)?;
    Ok(found
        .into_iter()
        .find(|x| x.tid == tid && x.start_lsn == start_lsn && x.commit_lsn == Some(commit_lsn)))
}

/// [`decode`] on an already opened log.
pub fn decode_dev<R: ReadAt>(
    dev: &LogDev<'_, R>,
    location: LogLocation,
    ctx: ItemContext,
) -> Result<LogDecode> {
    let head_tail = find::find_head_tail(dev)?;
    let mut out = trans::walk(dev, &head_tail, ctx)?;
    let (unfinished, orphans) = items::pair_intents(&mut out.transactions);
    Ok(LogDecode::of_walk(location, out, unfinished, orphans))
}

impl LogDecode {
    /// The decode made of a walk's output and its intents' pairing.
    fn of_walk(
        location: LogLocation,
        mut out: trans::WalkOutput,
        unfinished_intents: Vec<items::IntentRef>,
        orphan_dones: u64,
    ) -> LogDecode {
        LogDecode {
            location,
            head_tail: out.head_tail,
            records: out.records,
            record_list: out.record_list,
            records_crc_ok: out.records_crc_ok,
            records_no_crc: out.records_no_crc,
            crc_mismatches: out.crc_mismatches,
            transactions: std::mem::take(&mut out.transactions),
            incomplete: out.incomplete,
            unfinished_intents,
            orphan_dones,
            skipped_ops: out.skipped_ops,
            unmount_records: out.unmount_records,
            problems: out.problems,
            stats: out.stats,
        }
    }
}

/// [`decode`], handing each committed transaction to `sink` as soon as
/// nothing later in the log can change it (see
/// [`trans::walk_streaming`]); the result holds no transactions and no
/// counts of them (`stats`: the sink counts what it is given). Memory
/// stays bounded by what is open at once instead of growing with the log.
///
/// The records are read and assembled on the calling thread (the sink is
/// called from it): handing the records' bytes to another core costs more
/// than it saves; the sink is the place to put work on a second thread.
pub fn decode_streaming<R: ReadAt>(
    fs: &Fs<R>,
    opts: DecodeOptions,
    sink: &mut dyn trans::TransactionSink,
) -> Result<LogDecode> {
    let (location, dev, ctx, head_tail) = live_log(fs, opts)?;
    let (out, unfinished, orphans) = trans::walk_streaming(&dev, &head_tail, ctx, false, sink)?;
    Ok(LogDecode::of_walk(location, out, unfinished, orphans))
}

/// The log of `fs`, where it is, its items' context and its head and tail.
fn live_log<R: ReadAt>(
    fs: &Fs<R>,
    opts: DecodeOptions,
) -> Result<(LogLocation, LogDev<'_, R>, ItemContext, HeadTail)> {
    let location = LogLocation::of(fs)?;
    let dev = LogDev::of_fs(fs)?;
    let ctx = ItemContext::of(fs, opts);
    let head_tail = find::find_head_tail(&dev)?;
    Ok((location, dev, ctx, head_tail))
}

/// [`decode_streaming`] with each committed transaction's items left
/// raw for `sink` to decode ([`trans::decode_raw`]) and link
/// ([`items::Linker`]), on another thread if it likes; the result's
/// `unfinished_intents` and `orphan_dones` are the sink's to fill from its
/// linker.
pub fn decode_streaming_raw<R: ReadAt>(
    fs: &Fs<R>,
    opts: DecodeOptions,
    sink: &mut dyn trans::RawSink,
) -> Result<LogDecode> {
    let (location, dev, ctx, head_tail) = live_log(fs, opts)?;
    let out = trans::walk_streaming_raw(&dev, &head_tail, ctx, sink)?;
    Ok(LogDecode::of_walk(location, out, Vec::new(), 0))
}

/// A transaction as JSON: `tid`, `start_lsn`, `commit_lsn`, `type`,
/// `num_items`, counts, and its `items` in log order.
pub struct TransactionJson<'a> {
    pub t: &'a Transaction,
    pub ctx: Option<&'a ItemContext>,
}

struct ItemsJson<'a>(&'a [Item], Option<&'a ItemContext>);

impl Serialize for ItemsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_seq(
            self.0
                .iter()
                .map(|item| item_json::ItemJson { item, ctx: self.1 }),
        )
    }
}

impl Serialize for TransactionJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let t = self.t;
        let st = stats::TransStats::of(t);
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("tid", &t.tid)?;
        m.serialize_entry("start_lsn", &t.start_lsn)?;
        m.serialize_entry("commit_lsn", &t.commit_lsn)?;
        m.serialize_entry("type", &t.header.map(|h| h.type_))?;
        m.serialize_entry("num_items", &t.header.map(|h| h.num_items))?;
        m.serialize_entry("byte_order", &t.order)?;
        m.serialize_entry("ops", &st.ops)?;
        m.serialize_entry("regions", &st.regions)?;
        m.serialize_entry("bytes", &st.bytes)?;
        m.serialize_entry("items_by_kind", &st.by_kind)?;
        if st.buffers.items > 0 {
            m.serialize_entry("buffers", &st.buffers)?;
        }
        if !t.problems.is_empty() {
            m.serialize_entry("problems", &t.problems)?;
        }
        m.serialize_entry("items", &ItemsJson(&t.items, self.ctx))?;
        m.end()
    }
}

struct TransactionsJson<'a>(&'a [Transaction], Option<&'a ItemContext>);

impl Serialize for TransactionsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|t| TransactionJson { t, ctx: self.1 }))
    }
}

/// The whole decode as one JSON object: `clean`, `head`, `tail` (block in
/// 512-byte units from the start of the log, as `xfs_logprint` prints it),
/// `transactions`, `records`, then everything else found (the transactions
/// come before anything counted while reading them, so that they can be
/// written while the log is still being read).
pub struct LogJson<'a> {
    pub d: &'a LogDecode,
    /// With a context, buffer runs are named by the fields they cover.
    pub ctx: Option<&'a ItemContext>,
}

impl Serialize for LogJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let d = self.d;
        let ht = &d.head_tail;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("clean", &ht.clean)?;
        m.serialize_entry("head", &ht.head)?;
        m.serialize_entry("tail", &ht.tail)?;
        m.serialize_entry("transactions", &TransactionsJson(&d.transactions, self.ctx))?;
        m.serialize_entry("records", &d.records)?;
        m.serialize_entry("log", &d.location)?;
        m.serialize_entry("record_list", &d.record_list)?;
        m.serialize_entry("zeroed", &ht.zeroed)?;
        m.serialize_entry("last_record", &ht.last_record)?;
        m.serialize_entry("torn_write", &ht.torn_write)?;
        m.serialize_entry("tail_moved", &ht.tail_moved)?;
        m.serialize_entry(
            "crc",
            &serde_json_like::Crc {
                ok: d.records_crc_ok,
                none: d.records_no_crc,
                mismatches: &d.crc_mismatches,
            },
        )?;
        m.serialize_entry("unfinished_intents", &d.unfinished_intents)?;
        m.serialize_entry("orphan_done_items", &d.orphan_dones)?;
        m.serialize_entry(
            "incomplete_transactions",
            &TransactionsJson(&d.incomplete, self.ctx),
        )?;
        m.serialize_entry("skipped_ops", &d.skipped_ops)?;
        m.serialize_entry("unmount_records", &d.unmount_records)?;
        m.serialize_entry("stats", &d.stats)?;
        m.serialize_entry("problems", &d.problems)?;
        m.end()
    }
}

mod serde_json_like {
    use super::CrcMismatch;
    use serde::Serialize;

    #[derive(Serialize)]
    pub struct Crc<'a> {
        pub ok: u64,
        pub none: u64,
        pub mismatches: &'a [CrcMismatch],
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
