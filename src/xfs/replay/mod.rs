//! Log recovery as the kernel does it, into an overlay instead of onto the
//! disk: the image is never written.
//!
//! ```text
//!  find head/tail -> CRC pass (move an overwritten tail)
//!  pass 1: tail..head, committed transactions: buffer cancel table
//!  pass 2: tail..head, committed transactions in commit order,
//!          items reordered (buffers+icreate, others, inode buffers, cancels):
//!          buffers  (cancel table, v5 LSN rule, 128-byte chunks)  -> buf.rs
//!          inodes   (cancel table, v5 LSN rule, log dinode -> disk) -> inode.rs
//!          icreate  (initialise inode clusters)                   -> icreate.rs
//!          intents / done items (kept; unfinished ones reported)  -> intents.rs
//!  recovered buffers are written to the overlay when the start LSN of the
//!  committed transactions changes, stamped with that LSN and re-CRC'd by
//!  buffer type as the kernel's write verifiers do.
//! ```
//!
//! The log is read three times front to back (CRC check, pass 1, pass 2),
//! one record at a time; only the open transactions' regions, the buffers
//! dirtied since the last LSN change, and the recovered sectors are held.
//!
//! Then what the kernel does when it mounts ([`replay_and_mount`],
//! [`export::plan`]), in the kernel's order, each stamped with the first LSN
//! the kernel writes after recovery (the old head): unfinished intents
//! finished with the work they create (`recover.rs`, the rmap, refcount and
//! free-space semantics in `defer/`), the inodes on the AGI unlinked
//! lists freed (`unlinked.rs`), CoW staging extents freed (`cow.rs`), all
//! through the AG btree editor (`ag/`, which changes btree shapes
//! as the kernel does) and the free-space and rmap work of `alloc.rs`; then the superblock counters
//! summed from the AG headers (`mount.rs`). Work the editor cannot do is
//! left undone whole and listed. [`export`] lays a clean log over the
//! result; [`diff`] says what changed.
//!
//! Where the kernel's work is done here:
//!
//! | kernel | here |
//! |---|---|
//! | `xfs_log_recover.c` (passes, cancel table) | `mod.rs`, `walk.rs`, `cancel.rs` |
//! | `xfs_buf_item_recover.c` | `buf.rs` |
//! | `xfs_inode_item_recover.c` | `inode.rs` |
//! | `xfs_icreate_item.c` | `icreate.rs` |
//! | `xfs_*_item.c` (intents pending, then finished) | `intents.rs`, `recover.rs` |
//! | `xfs_defer.c`, `xfs_rmap.c`, `xfs_refcount.c` | `defer/` |
//! | `xfs_bmap_item.c`, `xfs_bmap.c`, `xfs_bmap_btree.c` | `bmap/` |
//! | `xfs_attr_item.c`, `xfs_attr*.c`, `xfs_da_btree.c` | `attr/` |
//! | `xfs_exchmaps_item.c`, `xfs_exchmaps.c` | `xmiedit.rs` |
//! | `xfs_btree.c` (the generic btree: cursor, insert, delete) | `btree/` |
//! | `xfs_*_btree.c` (AG trees' ops), AG headers, `xfs_extent_busy.c` | `ag/` |
//! | `xfs_alloc.c` (free list, free extents), `xfs_rmap.c` (AG owners) | `alloc.rs` |
//! | `xfs_inode.c` (`xfs_inactive`, unlinked lists) | `unlinked.rs` |
//! | `xfs_refcount.c` (CoW leftovers) | `cow.rs` |
//! | `xfs_inode.c`, `xfs_bmap_util.c` (`xfs_free_eofblocks` after the mount) | `eofblocks.rs` |
//! | `xfs_mount.c`, `xfs_log_cil.c` (what mount writes, checkpoint sizes) | `mount.rs`, `counters.rs`, `ckpt.rs` |

pub mod ag;
pub mod alloc;
pub mod attr;
pub mod bmap;
pub mod btree;
pub mod buf;
pub mod cancel;
pub mod ckpt;
pub mod counters;
pub mod cow;
pub mod defer;
pub mod diff;
pub mod eofblocks;
pub mod export;
pub mod flushed;
pub mod icreate;
pub mod inode;
pub mod intents;
pub mod mount;
pub mod notes;
pub mod recover;
pub mod unlinked;
pub mod walk;
pub mod xmiedit;

use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::log::*;
use crate::xfs::fs::Fs;
use crate::xfs::image::Overlay;
use crate::xfs::log::find::{find_head_tail, TornWrite};
use crate::xfs::log::items::{decode_item, ItemBody, ItemKind, Order};
use crate::xfs::log::{ItemContext, LogDev};
use crate::xfs::read::ReadAt;
use crate::xfs::sb::Geometry;
use crate::xfs::types::Lsn;
use cancel::CancelTable;
use serde::Serialize;
use std::collections::BTreeMap;
use walk::{CrcMode, Event, RItem, RTrans};

/// Where replay is, for a progress bar.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Progress {
    /// 0: CRC check, 1: cancel table, 2: replay.
    pub pass: u8,
    /// Log blocks read in this pass, and the live log's length.
    pub blocks_done: u64,
    pub blocks_total: u64,
    pub records: u64,
    pub transactions: u64,
    pub items: u64,
}

/// Counts of what pass 2 did with each kind of item.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Counts {
    pub buffers_replayed: u64,
    /// Skipped: the block on disk is as new as the transaction or newer.
    pub buffers_skipped_lsn: u64,
    /// Skipped: a later cancel of the buffer lies ahead.
    pub buffers_cancelled: u64,
    pub cancel_items: u64,
    /// Inode buffers: only unlinked pointers taken.
    pub inode_buffers: u64,
    pub unlinked_pointers: u64,
    /// Dquot buffers and items skipped (no quota mount options).
    pub dquots_skipped: u64,
    pub inodes_replayed: u64,
    pub inodes_skipped_lsn: u64,
    pub inodes_cancelled: u64,
    pub icreates_replayed: u64,
    pub icreates_cancelled: u64,
    pub intents: u64,
    pub done_items: u64,
    /// Buffers written at LSN changes (a buffer written twice counts twice).
    pub buffer_writes: u64,
    /// Of those, stamped with the transaction's LSN and re-checksummed.
    pub buffers_stamped: u64,
}

/// What replay did, in numbers and notes.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayReport {
    /// Nothing to replay: the log ends with an unmount record (or was
    /// never written).
    pub clean: bool,
    pub head: Lsn,
    pub tail: Lsn,
    /// The tail replay started from (after the CRC check moved it).
    pub replay_tail: u32,
    /// A damaged record at the head was cut off: replay stops at the last
    /// complete record before it, as the kernel does.
    pub torn_write: Option<TornWrite>,
    pub notes: Vec<String>,
    pub records: u64,
    pub transactions: u64,
    /// Transactions begun but not committed before the head: discarded.
    pub uncommitted: u64,
    pub items: u64,
    pub items_by_kind: BTreeMap<&'static str, u64>,
    pub counts: Counts,
    /// Intents with no done item: work the kernel finishes at mount.
    pub unfinished_intents: Vec<intents::Unfinished>,
    /// The start LSN of the last committed transaction replayed.
    pub last_lsn: Option<Lsn>,
    /// Sectors the overlay holds.
    pub overlay_sectors: u64,
    pub warnings: Vec<String>,
    /// `h_size` of the last record: the log buffer size of the mount that
    /// wrote it, and so the one the recovering mount is taken to use.
    pub iclog_size: u32,
}

/// When the recovery runs: the kernel stamps this time as the change time
/// of an inode whose attribute a recovered intent sets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RecoveryTime {
    /// Seconds since 1970-01-01 UTC.
    pub sec: i64,
    pub nsec: u32,
}

impl RecoveryTime {
    /// Milliseconds since 1970 (JavaScript's `Date.now()`).
    pub fn from_millis(ms: f64) -> RecoveryTime {
        let ms = if ms.is_finite() && ms > 0.0 { ms } else { 0.0 };
        // Whole microseconds: what a millisecond clock with a fraction
        // carries; below 2^53 an f64 holds them exactly.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::as_conversions
        )]
        let us = (ms * 1000.0).round().min(9.0e15) as u64;
        RecoveryTime {
            sec: i64::try_from(us / 1_000_000).unwrap_or(i64::MAX),
            nsec: u32::try_from((us % 1_000_000).saturating_mul(1000)).unwrap_or(0),
        }
    }
}

/// The result of replay: recovered sectors and the report.
pub struct Replay {
    pub overlay: Overlay,
    pub report: ReplayReport,
}

/// Filesystem facts replay needs, refreshed if the superblock is replayed:
/// the superblock's [`Geometry`] (through `Deref`) and what replay derives
/// from the superblock beyond it (inode clusters and chunks, UUIDs,
/// features).
#[derive(Clone, Copy, Debug)]
pub struct Geo {
    pub sb: Geometry,
    pub uuid: [u8; 16],
    pub meta_uuid: [u8; 16],
    pub blocks_per_cluster: u32,
    pub inodes_per_cluster: u32,
    /// Blocks of a full inode chunk and of the smallest sparse one.
    pub ialloc_blks: u32,
    pub ialloc_min_blks: u32,
    pub nrext64: bool,
    /// META_UUID: metadata carries `sb_meta_uuid`.
    pub meta_uuid_feature: bool,
}

impl core::ops::Deref for Geo {
    type Target = Geometry;
    fn deref(&self) -> &Geometry {
        &self.sb
    }
}

impl core::ops::DerefMut for Geo {
    fn deref_mut(&mut self) -> &mut Geometry {
        &mut self.sb
    }
}

impl Geo {
    pub fn of<R: ReadAt>(fs: &Fs<R>) -> Geo {
        let sb = &fs.sb;
        let g = &fs.geo;
        let inodesize = u32::from(g.inodesize);
        // xfs_ialloc_setup_geometry: 8 KiB clusters, scaled with the inode
        // size on v5 when the chunk alignment allows it.
        let mut cluster_raw: u32 = 8192;
        if g.v5 {
            let scaled = cluster_raw.saturating_mul(inodesize / 256);
            if sb.inoalignmt >= scaled >> g.blocklog {
                cluster_raw = scaled;
            }
        }
        let blocks_per_cluster = if cluster_raw > g.blocksize {
            cluster_raw >> g.blocklog
        } else {
            1
        };
        let inodes_per_cluster = blocks_per_cluster
            .checked_shl(u32::from(g.inopblog))
            .unwrap_or(u32::MAX);
        let inopb = 1u32.checked_shl(u32::from(g.inopblog)).unwrap_or(1);
        let ialloc_inos = inopb.max(64);
        let ialloc_blks = ialloc_inos >> g.inopblog;
        let sparse = sb.features_incompat & (1 << 1) != 0;
        Geo {
            sb: *g,
            uuid: sb.uuid,
            meta_uuid: fs.meta_uuid(),
            blocks_per_cluster,
            inodes_per_cluster,
            ialloc_blks,
            ialloc_min_blks: if sparse { sb.spino_align } else { ialloc_blks },
            nrext64: sb.features_incompat & (1 << 5) != 0,
            meta_uuid_feature: sb.features_incompat & (1 << 2) != 0,
        }
    }

    /// Sectors in the data device.
    pub fn eofs(&self) -> u64 {
        self.dblocks
            .checked_shl(u32::from(self.blocklog).saturating_sub(9))
            .unwrap_or(u64::MAX)
    }

    /// Daddr of AG block `agbno` of AG `agno`.
    pub fn agb_to_daddr(&self, agno: u32, agbno: u32) -> Option<u64> {
        u64::from(agno)
            .checked_mul(u64::from(self.agblocks))?
            .checked_add(u64::from(agbno))?
            .checked_shl(u32::from(self.blocklog).checked_sub(9)?)
    }

    pub fn inode_cluster_bytes(&self) -> u32 {
        self.blocks_per_cluster.saturating_mul(self.blocksize)
    }
}

/// How a recovered buffer is written: which write verifier stamps its LSN
/// and recomputes its CRC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamp {
    /// Written as recovered (inode, dquot, unknown or mismatching buffers).
    None,
    /// LSN at `lsn_off` (if any) and CRC at `crc_off` over the whole buffer.
    Whole {
        lsn_off: Option<usize>,
        crc_off: usize,
    },
    /// Remote attribute blocks: a CRC per filesystem block at byte 12.
    PerBlock { blocksize: u32 },
}

impl Stamp {
    /// The bytes the verifier writes (LSN and CRC), which the kernel
    /// never logs.
    pub fn unlogged(self) -> Vec<core::ops::Range<usize>> {
        match self {
            Stamp::None | Stamp::PerBlock { .. } => Vec::new(),
            Stamp::Whole { lsn_off, crc_off } => {
                let crc = crc_off..crc_off.saturating_add(4);
                match lsn_off {
                    Some(l) => vec![crc, l..l.saturating_add(8)],
                    None => Vec::from([crc]),
                }
            }
        }
    }
}

/// A buffer changed since the last LSN change.
struct Dirty {
    data: Vec<u8>,
    stamp: Stamp,
    lsn: u64,
}

/// Why the kernel's write verifier would refuse a recovered buffer (which
/// makes recovery, and the mount, fail).
#[derive(Clone, Debug)]
pub struct Rejected {
    pub daddr: u64,
    pub reason: String,
}

/// The replay's view of the disk: the image, the sectors already written
/// by replay, and the buffers dirtied since the last LSN change (the
/// kernel's buffer cache and delayed-write list).
pub struct Cache<'f, R: ReadAt> {
    fs: &'f Fs<R>,
    pub written: Overlay,
    dirty: BTreeMap<(u64, u32), Dirty>,
    /// Buffers as the last writes left them (see [`Flushed`]).
    flushed: flushed::Flushed,
    pub counts: Counts,
    /// Buffers queued that the kernel could not write.
    rejected: Vec<Rejected>,
}

impl<'f, R: ReadAt> Cache<'f, R> {
    pub fn new(fs: &'f Fs<R>) -> Cache<'f, R> {
        Cache {
            fs,
            written: Overlay::default(),
            dirty: BTreeMap::new(),
            flushed: flushed::Flushed::default(),
            counts: Counts::default(),
            rejected: Vec::new(),
        }
    }

    /// Bytes of `len` sectors at `daddr` as they are on the disk being
    /// recovered (image plus what replay wrote), ignoring dirty buffers.
    fn read_disk(&self, daddr: u64, len: u32) -> Result<Vec<u8>> {
        let off = daddr.checked_mul(512).ok_or_else(|| {
            Error::corrupt("log buffer", Location::Daddr { daddr }, "daddr overflows")
        })?;
        let mut b =
            self.fs
                .img
                .read_disk("recovered buffer", off, u64::from(len).saturating_mul(512))?;
        self.written.apply_to(off, &mut b);
        Ok(b)
    }

    /// Take the buffer `(daddr, len)`: the dirty copy if there is one,
    /// else the disk's. Give it back with [`Cache::put`] or drop it.
    fn take(&mut self, daddr: u64, len: u32) -> Result<(Vec<u8>, Stamp, bool)> {
        if let Some(d) = self.dirty.remove(&(daddr, len)) {
            return Ok((d.data, d.stamp, true));
        }
        if let Some(b) = self.flushed.take(daddr, len) {
            return Ok((b, Stamp::None, false));
        }
        Ok((self.read_disk(daddr, len)?, Stamp::None, false))
    }

    /// A buffer that will be overwritten whole: no read needed.
    fn get_new(&mut self, daddr: u64, len: u32) -> Vec<u8> {
        match self.dirty.remove(&(daddr, len)) {
            Some(d) => d.data,
            None => vec![0u8; usize::try_from(len).unwrap_or(0).saturating_mul(512)],
        }
    }

    /// Queue a changed buffer for writing at the next LSN change.
    fn put(&mut self, daddr: u64, len: u32, data: Vec<u8>, stamp: Stamp, lsn: u64) {
        self.dirty.insert((daddr, len), Dirty { data, stamp, lsn });
    }

    /// Give back an unchanged buffer that was dirty.
    fn put_back(&mut self, daddr: u64, len: u32, data: Vec<u8>, stamp: Stamp, lsn: u64) {
        self.put(daddr, len, data, stamp, lsn);
    }

    /// Write a buffer now, as recovered (the kernel writes inode buffers of
    /// an unexpected size at once).
    fn write_now(&mut self, daddr: u64, data: &[u8]) {
        self.flushed
            .forget(daddr, u64::try_from(data.len() / 512).unwrap_or(u64::MAX));
        self.written.put(daddr, data);
        self.counts.buffer_writes = self.counts.buffer_writes.saturating_add(1);
    }

    /// Note that the buffer just queued at `daddr` would be refused when
    /// written.
    fn reject(&mut self, daddr: u64, reason: String) {
        self.rejected.push(Rejected { daddr, reason });
    }

    /// Write every dirty buffer: stamp and checksum as its verifier does.
    /// Fails as the kernel's recovery does if a write verifier refuses one.
    fn flush(&mut self) -> Result<()> {
        if let Some(r) = self.rejected.first() {
            return Err(Error::corrupt(
                "recovered buffer",
                Location::Daddr { daddr: r.daddr },
                format!(
                    "{}; the kernel's write verifier refuses it, so the kernel's log recovery fails here and the filesystem does not mount",
                    r.reason
                ),
            ));
        }
        let dirty = std::mem::take(&mut self.dirty);
        for ((daddr, len), mut d) in dirty {
            if buf::apply_stamp(&mut d.data, d.stamp, d.lsn) {
                self.counts.buffers_stamped = self.counts.buffers_stamped.saturating_add(1);
            }
            self.written.put(daddr, &d.data);
            self.flushed.keep(daddr, len, d.data);
            self.counts.buffer_writes = self.counts.buffer_writes.saturating_add(1);
        }
        Ok(())
    }
}

/// Pass 2 state.
pub struct State<'f, R: ReadAt> {
    pub geo: Geo,
    pub cache: Cache<'f, R>,
    pub cancel: CancelTable,
    pub intents: intents::Pending,
    pub warnings: Vec<String>,
    ctx: ItemContext,
}

fn item_kind(order: Order, it: &RItem) -> u16 {
    it.regions
        .first()
        .and_then(|r| order.u16(r, 0))
        .unwrap_or(0)
}

fn buf_flags(order: Order, it: &RItem) -> u16 {
    it.regions
        .first()
        .and_then(|r| order.u16(r, 4))
        .unwrap_or(0)
}

/// Item types the kernel's recovery knows.
fn known(kind: u16) -> bool {
    matches!(
        kind,
        XFS_LI_BUF
            | XFS_LI_INODE
            | XFS_LI_DQUOT
            | XFS_LI_QUOTAOFF
            | XFS_LI_ICREATE
            | XFS_LI_EFI
            | XFS_LI_EFD
            | XFS_LI_RUI
            | XFS_LI_RUD
            | XFS_LI_CUI
            | XFS_LI_CUD
            | XFS_LI_BUI
            | XFS_LI_BUD
            | XFS_LI_ATTRI
            | XFS_LI_ATTRD
            | XFS_LI_XMI
            | XFS_LI_XMD
            | XFS_LI_EFI_RT
            | XFS_LI_EFD_RT
            | XFS_LI_RUI_RT
            | XFS_LI_RUD_RT
            | XFS_LI_CUI_RT
            | XFS_LI_CUD_RT
    )
}

/// `xlog_recover_reorder_trans`: buffers and icreates first, then the
/// other items, then inode buffers, then cancels; the last two lists are
/// built by pushing at the front, so they come out reversed.
pub fn reorder(t: &RTrans, log_where: &dyn Fn() -> Location) -> Result<Vec<usize>> {
    let mut bufs = Vec::new();
    let mut items = Vec::new();
    let mut inode_bufs = Vec::new();
    let mut cancels = Vec::new();
    for (i, it) in t.items.iter().enumerate() {
        if it.count == 0 || it.regions.is_empty() {
            return Err(Error::corrupt(
                "log transaction",
                log_where(),
                format!(
                    "transaction {:#x} (start {}): committed item {i} has no regions",
                    t.tid, t.lsn
                ),
            ));
        }
        let kind = item_kind(t.order, it);
        if !known(kind) {
            return Err(Error::corrupt(
                "log transaction",
                log_where(),
                format!(
                    "transaction {:#x} (start {}): item {i} has type {kind:#06x}, which recovery does not know",
                    t.tid, t.lsn
                ),
            ));
        }
        match kind {
            XFS_LI_ICREATE => bufs.push(i),
            XFS_LI_BUF => {
                let f = buf_flags(t.order, it);
                if f & XFS_BLF_CANCEL != 0 {
                    cancels.push(i);
                } else if f & XFS_BLF_INODE_BUF != 0 {
                    inode_bufs.push(i);
                } else {
                    bufs.push(i);
                }
            }
            _ => items.push(i),
        }
    }
    inode_bufs.reverse();
    cancels.reverse();
    bufs.extend(items);
    bufs.extend(inode_bufs);
    bufs.extend(cancels);
    Ok(bufs)
}

fn decode(t: &RTrans, it: &RItem, ctx: &ItemContext) -> crate::xfs::log::items::Item {
    decode_item(&it.regions, it.total, t.order, ctx)
}

impl<R: ReadAt> State<'_, R> {
    fn pass1(&mut self, t: &RTrans, at: &dyn Fn() -> Location) -> Result<()> {
        let order = reorder(t, at)?;
        for i in order {
            let Some(it) = t.items.get(i) else { continue };
            if item_kind(t.order, it) != XFS_LI_BUF {
                continue;
            }
            let item = decode(t, it, &self.ctx);
            match &item.body {
                ItemBody::Buf(b) if b.cancel() => {
                    self.cancel.add(b.blkno, u32::from(b.len));
                }
                ItemBody::Corrupt(m) => {
                    return Err(Error::corrupt(
                        "log buffer item",
                        at(),
                        format!("transaction {:#x} (start {}): {m}", t.tid, t.lsn),
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn pass2(
        &mut self,
        t: &RTrans,
        report: &mut ReplayReport,
        at: &dyn Fn() -> Location,
    ) -> Result<()> {
        let order = reorder(t, at)?;
        let lsn = t.lsn.raw();
        for i in order {
            let Some(it) = t.items.get(i) else { continue };
            report.items = report.items.saturating_add(1);
            let item = decode(t, it, &self.ctx);
            let name = item.kind.name();
            let c = report.items_by_kind.entry(name).or_insert(0);
            *c = c.saturating_add(1);
            let ctx_err = |m: String| {
                Error::corrupt(
                    "log item",
                    at(),
                    format!(
                        "transaction {:#x} (start {}), {name} item: {m}",
                        t.tid, t.lsn
                    ),
                )
            };
            match &item.body {
                ItemBody::Corrupt(m) => return Err(ctx_err(m.clone())),
                ItemBody::Buf(b) => {
                    buf::commit_pass2(self, it, b, lsn).map_err(|e| wrap(e, &ctx_err))?
                }
                ItemBody::Inode(ino) => inode::commit_pass2(self, t.order, it, ino, lsn)
                    .map_err(|e| wrap(e, &ctx_err))?,
                ItemBody::Icreate(ic) => {
                    icreate::commit_pass2(self, ic, lsn).map_err(|e| wrap(e, &ctx_err))?
                }
                ItemBody::Dquot(_) | ItemBody::Quotaoff(_) => {
                    self.cache.counts.dquots_skipped =
                        self.cache.counts.dquots_skipped.saturating_add(1);
                }
                _ => {
                    if item.kind.is_intent() {
                        self.cache.counts.intents = self.cache.counts.intents.saturating_add(1);
                        self.intents.add(&item, &it.regions, t);
                    } else if let Some(ik) = item.kind.intent_of_done() {
                        self.cache.counts.done_items =
                            self.cache.counts.done_items.saturating_add(1);
                        if let Some(id) = item.intent_id() {
                            self.intents.release(ik, id);
                        }
                    } else if item.kind == ItemKind(XFS_LI_IUNLINK) {
                        return Err(ctx_err("IUNLINK items are not recoverable".into()));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Put the transaction in front of an item-level error message.
fn wrap(e: Error, ctx_err: &dyn Fn(String) -> Error) -> Error {
    match e {
        Error::Corrupt { detail, .. } => ctx_err(detail),
        other => other,
    }
}

/// Replay's first pass over `[tail, head)` (`range`): every committed
/// transaction into the cancel table. Returns, with
/// [`CrcMode::CheckThenReplay`], the first record that failed the check
/// and what the pass refused (see [`walk::CrcWalk`]).
#[allow(clippy::type_complexity)]
fn pass1<R: ReadAt>(
    dev: &LogDev<'_, R>,
    st: &mut State<'_, R>,
    prog: &mut Progress,
    progress: &mut dyn FnMut(&Progress),
    (tail, head): (u32, u32),
    mode: CrcMode,
    warnings: &mut Vec<String>,
) -> Result<(Option<(u32, String)>, Option<Error>)> {
    let mut cur_blk = tail;
    let mut done_bbs = 0u64;
    let mut sink = |ev: Event<'_>| -> Result<()> {
        match ev {
            Event::Record(h) => {
                cur_blk = h.blk;
                done_bbs = done_bbs.saturating_add(u64::from(h.total_bbs()));
                prog.records = prog.records.saturating_add(1);
                prog.blocks_done = done_bbs;
                progress(prog);
                Ok(())
            }
            Event::Commit(t) => {
                prog.transactions = prog.transactions.saturating_add(1);
                let blk = cur_blk;
                st.pass1(t, &|| dev.location(blk))
            }
        }
    };
    let (w, _) = walk::walk(dev, tail, head, mode, false, warnings, &mut sink)?;
    Ok((w.first_bad, w.refused))
}

/// Replay the internal log of `fs` into an overlay. `progress` is called
/// once per record.
pub fn replay<R: ReadAt>(fs: &Fs<R>, progress: &mut dyn FnMut(&Progress)) -> Result<Replay> {
    let dev = LogDev::of_fs(fs)?;
    let ht = find_head_tail(&dev)?;
    let mut report = ReplayReport {
        clean: ht.clean,
        head: ht.head,
        tail: ht.tail,
        replay_tail: ht.tail.block,
        torn_write: ht.torn_write.clone(),
        notes: Vec::new(),
        records: 0,
        transactions: 0,
        uncommitted: 0,
        items: 0,
        items_by_kind: BTreeMap::new(),
        counts: Counts::default(),
        unfinished_intents: Vec::new(),
        last_lsn: None,
        overlay_sectors: 0,
        warnings: Vec::new(),
        iclog_size: ht.last_h_size,
    };
    if let Some(tw) = &ht.torn_write {
        report.notes.push(format!(
            "the record at log block {} failed its check: the head moves back from block {} to it and replay stops at the last complete record before it, as the kernel does",
            tw.first_bad, tw.old_head
        ));
    }
    if let Some(tm) = &ht.tail_moved {
        report.notes.push(format!(
            "tail moved from log block {} to {}: {}",
            tm.from, tm.to, tm.reason
        ));
    }
    if ht.clean || ht.head.block == ht.tail.block {
        if ht.clean {
            report
                .notes
                .push("the log is clean: nothing to replay".into());
        }
        return Ok(Replay {
            overlay: Overlay::default(),
            report,
        });
    }
    if fs.sb.features_log_incompat & !0x7 != 0 {
        return Err(Error::Unsupported {
            structure: "superblock",
            location: Location::Bytes {
                offset: 212,
                len: 4,
            },
            detail: format!(
                "sb_features_log_incompat {:#x} has bits recovery does not know",
                fs.sb.features_log_incompat
            ),
        });
    }
    let head = ht.head.block;
    let total = u64::from(dev.distance(ht.tail.block, head));
    let mut prog = Progress {
        pass: 0,
        blocks_total: total,
        ..Progress::default()
    };
    progress(&prog);
    let v5 = fs.geo.v5;
    let new_state = || State {
        geo: Geo::of(fs),
        cache: Cache::new(fs),
        cancel: CancelTable::default(),
        intents: intents::Pending::default(),
        warnings: Vec::new(),
        ctx: ItemContext::of(fs, Default::default()),
    };
    // Pass 1: the cancel table, built in the same read as the kernel's
    // tail check (`xlog_verify_tail`, a CRC pass from tail to head): the
    // log is read twice in all, not three times. When a record fails the
    // check, what the read built is dropped and the check and the pass run
    // apart, as the kernel runs them (the tail may move).
    prog.pass = 1;
    let mut st = new_state();
    let mut warnings = Vec::new();
    let fused = pass1(
        &dev,
        &mut st,
        &mut prog,
        progress,
        (ht.tail.block, head),
        CrcMode::CheckThenReplay { v5 },
        &mut warnings,
    )?;
    // The fused read found every record good: pass 2 need not compute
    // their CRCs again.
    let mut pass2_mode = CrcMode::Replay { v5 };
    let tail = match fused {
        (None, None) => {
            pass2_mode = CrcMode::ReplayChecked { v5 };
            ht.tail.block
        }
        (None, Some(refused)) => return Err(refused),
        (Some(_), _) => {
            let (tail, note) = walk::verify_tail(&dev, &ht)?;
            if let Some(n) = note {
                report.notes.push(n);
            }
            st = new_state();
            warnings.clear();
            prog.records = 0;
            prog.transactions = 0;
            prog.blocks_done = 0;
            pass1(
                &dev,
                &mut st,
                &mut prog,
                progress,
                (tail, head),
                CrcMode::Replay { v5 },
                &mut warnings,
            )?;
            tail
        }
    };
    report.replay_tail = tail;
    prog.blocks_total = u64::from(dev.distance(tail, head));
    // Pass 2: replay.
    prog.pass = 2;
    prog.records = 0;
    prog.transactions = 0;
    prog.blocks_done = 0;
    let mut epoch: Option<Lsn> = None;
    let counts = {
        let mut cur_blk = tail;
        let mut done_bbs = 0u64;
        let dev_ref = &dev;
        let st_ref = &mut st;
        let prog_ref = &mut prog;
        let report_ref = &mut report;
        let epoch_ref = &mut epoch;
        let mut sink = |ev: Event<'_>| -> Result<()> {
            match ev {
                Event::Record(h) => {
                    cur_blk = h.blk;
                    done_bbs = done_bbs.saturating_add(u64::from(h.total_bbs()));
                    prog_ref.records = prog_ref.records.saturating_add(1);
                    prog_ref.blocks_done = done_bbs;
                    progress(prog_ref);
                    Ok(())
                }
                Event::Commit(t) => {
                    // Buffers are written (and stamped) when the start LSN
                    // of the committed transactions changes.
                    if *epoch_ref != Some(t.lsn) {
                        st_ref.cache.flush()?;
                        *epoch_ref = Some(t.lsn);
                    }
                    prog_ref.transactions = prog_ref.transactions.saturating_add(1);
                    let blk = cur_blk;
                    st_ref.pass2(t, report_ref, &|| dev_ref.location(blk))?;
                    prog_ref.items = report_ref.items;
                    report_ref.last_lsn = Some(t.lsn);
                    Ok(())
                }
            }
        };
        let (_, counts) = walk::walk(&dev, tail, head, pass2_mode, true, &mut warnings, &mut sink)?;
        counts
    };
    st.cache.flush()?;
    progress(&prog);
    report.records = counts.records;
    report.transactions = counts.transactions;
    report.uncommitted = counts.uncommitted;
    report.warnings = warnings;
    report.warnings.append(&mut st.warnings);
    report.unfinished_intents = st.intents.unfinished();
    report.counts = st.cache.counts;
    report.overlay_sectors = u64::try_from(st.cache.written.len()).unwrap_or(u64::MAX);
    Ok(Replay {
        overlay: st.cache.written,
        report,
    })
}

/// The filesystem as the kernel leaves it after mounting: the log
/// replayed, then the mount-time work this tool does (EFIs, CoW staging
/// extents, superblock counters). Lay `plan.overlay` over the image
/// ([`crate::xfs::image::Image::set_overlay`]) to read that state; the
/// export uses the same plan with a clean log.
pub fn replay_and_mount<R: ReadAt>(
    fs: &Fs<R>,
    now: RecoveryTime,
    progress: &mut dyn FnMut(&Progress),
) -> Result<(ReplayReport, export::Plan)> {
    let r = replay(fs, progress)?;
    let report = r.report.clone();
    let plan = export::plan(fs, r, now)?;
    Ok((report, plan))
}

// A block size (a `u32`) fits a `usize` on every target this builds for.
const _: () = assert!(usize::BITS >= u32::BITS);

/// The filesystem block size in bytes, as a buffer length.
pub(crate) fn block_len(g: &Geometry) -> usize {
    usize::try_from(g.blocksize).unwrap_or(usize::MAX)
}

/// The bytes of a `len`-byte field at `off` (an `offset_of!` of a layout).
pub(crate) fn field_range(off: usize, len: usize) -> core::ops::Range<usize> {
    off..off.saturating_add(len)
}
/// A write that does not fit the block it is made into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WritePastEnd {
    /// Byte offset of the write in the block.
    pub off: usize,
    /// Bytes written.
    pub len: usize,
    /// Bytes in the block.
    pub block_len: usize,
}

impl std::fmt::Display for WritePastEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a {}-byte write at byte {} runs past the end of the {}-byte block",
            self.len, self.off, self.block_len
        )
    }
}

impl WritePastEnd {
    /// The core's error for this write into `structure`, which starts at
    /// `daddr`.
    pub(crate) fn in_structure(self, structure: &'static str, daddr: u64) -> Error {
        Error::corrupt(
            structure,
            Location::InStructure {
                daddr,
                byte: u64::try_from(self.off).unwrap_or(u64::MAX),
            },
            self.to_string(),
        )
    }

    /// The edit's outcome for this write into `structure` at `location`:
    /// the intent is aborted.
    pub(crate) fn damage(self, structure: &'static str, location: Location) -> ag::EditError {
        ag::EditError::Damaged(ag::Damage {
            structure,
            location: Some(location),
            detail: self.to_string(),
        })
    }
}

impl From<WritePastEnd> for ag::EditError {
    fn from(w: WritePastEnd) -> Self {
        ag::EditError::Damaged(ag::Damage {
            structure: "block being written",
            location: None,
            detail: w.to_string(),
        })
    }
}

/// Write `v` at `off` in `b`, or say that it does not fit.
fn set_be<const N: usize>(b: &mut [u8], off: usize, v: [u8; N]) -> Result<(), WritePastEnd> {
    let block_len = b.len();
    match off.checked_add(N).and_then(|end| b.get_mut(off..end)) {
        Some(d) => {
            d.copy_from_slice(&v);
            Ok(())
        }
        None => Err(WritePastEnd {
            off,
            len: N,
            block_len,
        }),
    }
}
/// A big-endian `u16` written at `off`, checked.
pub(crate) fn set_be16(b: &mut [u8], off: usize, v: u16) -> Result<(), WritePastEnd> {
    set_be(b, off, v.to_be_bytes())
}
/// A big-endian `u32` written at `off`, checked.
pub(crate) fn set_be32(b: &mut [u8], off: usize, v: u32) -> Result<(), WritePastEnd> {
    set_be(b, off, v.to_be_bytes())
}
/// A big-endian `u64` written at `off`, checked.
pub(crate) fn set_be64(b: &mut [u8], off: usize, v: u64) -> Result<(), WritePastEnd> {
    set_be(b, off, v.to_be_bytes())
}
/// Store the CRC32c of `b` (with its CRC field as zero) at `crc_off`.
pub(crate) fn put_crc(b: &mut [u8], crc_off: usize) {
    let c = crate::xfs::sb::crc_with_hole(b, crc_off);
    if let Some(d) = b.get_mut(crc_off..crc_off.saturating_add(4)) {
        d.copy_from_slice(&c.to_le_bytes());
    }
}

/// A 64-bit value in the writer's byte order.
pub(crate) fn u64_of(o: Order, b: &[u8], off: usize) -> Option<u64> {
    let a: [u8; 8] = b.get(off..off.checked_add(8)?)?.try_into().ok()?;
    Some(match o {
        Order::Little => u64::from_le_bytes(a),
        Order::Big => u64::from_be_bytes(a),
    })
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
    #[test]
    fn recovery_time_from_a_javascript_clock() {
        let t = RecoveryTime::from_millis(1_796_169_826_123.456);
        assert_eq!((t.sec, t.nsec), (1_796_169_826, 123_456_000));
        assert_eq!(RecoveryTime::from_millis(f64::NAN), RecoveryTime::default());
        assert_eq!(RecoveryTime::from_millis(-5.0), RecoveryTime::default());
    }

    use super::*;
    use crate::xfs::image::Image;
    use crate::xfs::log::record::{record_crc, RecordReader};
    use crate::xfs::testutil::{image_path, Rng};

    fn item(order: Order, kind: u16, flags: u16) -> RItem {
        let mut r0 = vec![0u8; 24];
        let put16 = |b: &mut [u8], off: usize, v: u16| {
            let bytes = match order {
                Order::Little => v.to_le_bytes(),
                Order::Big => v.to_be_bytes(),
            };
            b[off..off + 2].copy_from_slice(&bytes);
        };
        put16(&mut r0, 0, kind);
        put16(&mut r0, 2, 1);
        put16(&mut r0, 4, flags);
        RItem {
            total: 1,
            regions: vec![r0],
            count: 1,
        }
    }

    fn trans(items: Vec<RItem>) -> RTrans {
        RTrans {
            tid: 1,
            lsn: Lsn { cycle: 1, block: 2 },
            commit_lsn: Lsn { cycle: 1, block: 2 },
            order: Order::Little,
            th_type: 40,
            items,
        }
    }

    #[test]
    fn reorder_puts_buffers_first_then_items_then_inode_buffers_then_cancels() {
        let o = Order::Little;
        let t = trans(vec![
            item(o, XFS_LI_INODE, 0),               // 0: items
            item(o, XFS_LI_BUF, XFS_BLF_CANCEL),    // 1: cancels
            item(o, XFS_LI_BUF, 0),                 // 2: buffers
            item(o, XFS_LI_BUF, XFS_BLF_INODE_BUF), // 3: inode buffers
            item(o, XFS_LI_ICREATE, 0),             // 4: buffers
            item(o, XFS_LI_BUF, XFS_BLF_CANCEL),    // 5: cancels
            item(o, XFS_LI_EFI, 0),                 // 6: items
            item(o, XFS_LI_BUF, XFS_BLF_INODE_BUF), // 7: inode buffers
        ]);
        let at = || Location::Daddr { daddr: 0 };
        // The kernel pushes inode buffers and cancels at the front of their
        // lists: they come out in reverse.
        assert_eq!(reorder(&t, &at).unwrap(), vec![2, 4, 0, 6, 7, 3, 5, 1]);
    }

    #[test]
    fn reorder_refuses_unknown_items_and_items_without_regions() {
        let at = || Location::Daddr { daddr: 7 };
        let t = trans(vec![item(Order::Little, 0x9999, 0)]);
        let e = reorder(&t, &at).unwrap_err().to_string();
        assert!(e.contains("does not know") && e.contains("daddr 7"), "{e}");
        let t = trans(vec![RItem::default()]);
        assert!(reorder(&t, &at)
            .unwrap_err()
            .to_string()
            .contains("no regions"));
    }

    /// Records of the live log of a fixture: (first block, header blocks,
    /// data length).
    fn live_records(img: &Image<Vec<u8>>, fs: &Fs<Vec<u8>>) -> (u64, Vec<(u32, u32, u32)>) {
        let dev = LogDev::of_fs(fs).unwrap();
        let ht = find_head_tail(&dev).unwrap();
        let mut r = RecordReader::new();
        let mut pos = ht.tail.block;
        let mut out = Vec::new();
        while pos != ht.head.block {
            let h = r.header(&dev, pos).unwrap();
            out.push((pos, h.hblks, h.len));
            pos = dev.wrap(pos, h.total_bbs());
        }
        let _ = img;
        (dev.start_daddr() * 512, out)
    }

    /// Damage record data past the cycle stamps and give the record a
    /// matching CRC, so the damage reaches the op and item decoding:
    /// replay must fail cleanly or succeed, never panic.
    #[test]
    fn damaged_records_with_good_crcs_never_panic() {
        let bytes = std::fs::read(image_path("log-xattrs")).unwrap();
        let fs = Fs::open(Image::new(bytes.clone())).unwrap();
        let (start, recs) = live_records(&fs.img, &fs);
        assert!(recs.len() >= 5);
        let mut rng = Rng(0x5eed_1234_5678_9abc);
        let mut errors = 0;
        for round in 0..160 {
            let mut img = bytes.clone();
            let (blk, hblks, len) = recs[rng.below(recs.len())];
            let hdr = (start + u64::from(blk) * 512) as usize;
            let data = hdr + hblks as usize * 512;
            for _ in 0..1 + round % 8 {
                let off = rng.below(len as usize);
                if off % 512 < 4 {
                    continue;
                }
                img[data + off] = match round % 3 {
                    0 => rng.next() as u8,
                    1 => 0,
                    _ => 0xff,
                };
            }
            let c = record_crc(
                &img[hdr..hdr + hblks as usize * 512],
                &img[data..data + len as usize],
                len,
                328,
            );
            img[hdr + 32..hdr + 36].copy_from_slice(&c.to_le_bytes());
            let fs = Fs::open(Image::new(img)).unwrap();
            match replay(&fs, &mut |_| {}) {
                Ok(r) => {
                    let _ = export::plan(&fs, r, RecoveryTime::default());
                }
                Err(e) => {
                    errors += 1;
                    assert!(!e.to_string().is_empty());
                }
            }
        }
        assert!(errors > 0, "some damage must be refused");
    }

    #[test]
    fn progress_reports_every_pass_and_ends_at_the_total() {
        let fs = crate::xfs::testutil::fixture_fs("log-xattrs");
        let mut seen = Vec::new();
        let r = replay(&fs, &mut |p: &Progress| seen.push(*p)).unwrap();
        assert!(seen.iter().any(|p| p.pass == 1) && seen.iter().any(|p| p.pass == 2));
        let last = seen.last().unwrap();
        assert_eq!(last.pass, 2);
        assert_eq!(last.blocks_done, last.blocks_total);
        assert_eq!(last.transactions, r.report.transactions);
        assert_eq!(r.report.transactions, 5);
    }
}
