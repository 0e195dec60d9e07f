//! File-mapping exchange intents (XMI) finished as the kernel finishes them
//! at mount (`xfs_exchmaps_recover_work` -> `xfs_exchmaps_finish_one`):
//!
//! ```text
//!  the intent     both inodes (their generations checked; they may be one
//!                 file), the ranges and the caller's flags (XFS_EXCHMAPS_ATTR_FORK,
//!                 XFS_EXCHMAPS_SET_SIZES, XFS_EXCHMAPS_INO1_WRITTEN); the logged sizes and reflink
//!                 flags are not used: sizes to exchange and reflink flags
//!                 to clear are worked out again from the inodes as they
//!                 are now (an attr fork has neither)
//!  first          an inode whose partner is reflinked becomes reflinked
//!  each step      the next pair of mappings that differ (holes and shared
//!                 blocks passed over; with XFS_EXCHMAPS_INO1_WRITTEN, whatever is not
//!                 written in file 1), cut to the shorter: both unmapped,
//!                 each mapped into the other file (four bmap updates of
//!                 the data or attr fork, holes left out), sizes raised to
//!                 cover what was mapped (up to the size to exchange);
//!                 after the last step the sizes are exchanged (XFS_EXCHMAPS_SET_SIZES)
//!  last           an attr-fork exchange turns the second file's fork back
//!                 into a shortform list when it is one leaf whose entries
//!                 fit (`xfs_exchmaps_attr_to_sf`); a directory or symlink
//!                 as the second file likewise (a directory block whose
//!                 entries fit the inode becomes a shortform directory, a
//!                 remote target that fits moves into the inode; the block
//!                 is unmapped and freed); the reflink flag of a file that
//!                 gave up its shared blocks is cleared
//! ```
//!
//! The order is the kernel's: the recovery transaction does the first step
//! (its bmap updates wait); the rest runs from the captured work, where the
//! exchange comes first, each later step's bmap updates (and their reverse
//! mappings) right after it, and the first step's bmap updates last. So
//! the last call looks at the second file's attr fork before the first
//! step's updates have changed it; if it turns that fork into shortform,
//! the updates then meet a fork without mappings and the mount fails
//! (this tool refuses, saying so). Every transaction of that chain logs
//! both inodes (they are held across rolls), which is what their change
//! counts show.
//!
//! Refused, with the reason: realtime files; an attr-fork exchange that
//! asks for sizes; a directory to turn back into shortform whose block is
//! not written extents from offset 0, a symlink whose target is not one
//! written extent there, or either reflinked. On a filesystem with large extent counters, an inode
//! still without them is switched to them first, as the kernel does (once,
//! for one file).

use super::ag::{damaged, fails_mount, not_done, EditResult};
use super::bmap::{ForkEditor, Mapping, Rec};
use super::ckpt::LiveIntent;
use super::defer::{Engine, Rmap, Work};
use super::{set_be16, set_be32, set_be64, WritePastEnd};
use crate::xfs::dabtree::DaBuf;
use crate::xfs::dir::{block_dir_format, parse_data_block, DirFormat, DirGeometry};
use crate::xfs::error::Location;
use crate::xfs::file::symlink_block_checks;
use crate::xfs::format::dinode::{XfsDinode, XfsDsymlinkHdr};
use crate::xfs::format::dinode::{
    S_IFDIR, S_IFLNK, S_IFMT, XFS_DIFLAG2_NREXT64, XFS_DIFLAG2_REFLINK, XFS_DIFLAG_REALTIME,
    XFS_DINODE_FMT_EXTENTS, XFS_DINODE_FMT_LOCAL, XFS_MAX_FILEOFF,
};
use crate::xfs::format::dinode::{XFS_DSYMLINK_HDR_SIZE, XFS_SYMLINK_MAGIC};
use crate::xfs::format::log::{
    XFS_BMAP_EXTENT_ATTR_FORK, XFS_BMAP_EXTENT_UNWRITTEN, XFS_EXCHMAPS_ATTR_FORK,
    XFS_EXCHMAPS_CLEAR_INO1_REFLINK, XFS_EXCHMAPS_CLEAR_INO2_REFLINK, XFS_EXCHMAPS_INO1_WRITTEN,
    XFS_EXCHMAPS_LOGGED_FLAGS, XFS_EXCHMAPS_SET_SIZES,
};
use crate::xfs::format::log::{XFS_LI_BUI, XFS_LI_CUI, XFS_LI_EFI, XFS_LI_RUI, XFS_LI_XMI};
use crate::xfs::format::sb::{XFS_SB_FEAT_INCOMPAT_EXCHRANGE, XFS_SB_FEAT_INCOMPAT_NREXT64};
use crate::xfs::fs::{be16, be32, be64};
use crate::xfs::log::items::{ItemKind, MapExtent, XmiItem};
use crate::xfs::read::ReadAt;
use crate::xfs::replay::block_len;
use crate::xfs::types::{Daddr, FsBlock, Ino};
use core::mem::offset_of;
use std::collections::{BTreeSet, VecDeque};

/// The flags recovery takes from the XMI.
const PARAMS: u64 = XFS_EXCHMAPS_ATTR_FORK | XFS_EXCHMAPS_SET_SIZES | XFS_EXCHMAPS_INO1_WRITTEN;
/// Not logged: after the exchange, the second file's fork goes back to
/// shortform where it can (`__XFS_EXCHMAPS_INO2_SHORTFORM`).
const INO2_SHORTFORM: u64 = 1 << 63;

/// An exchange in progress (`xfs_exchmaps_intent`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exchange {
    ino1: u64,
    ino2: u64,
    off1: u64,
    off2: u64,
    count: u64,
    flags: u64,
    /// The sizes each file is to get (XFS_EXCHMAPS_SET_SIZES), bounding size raises.
    isize1: Option<u64>,
    isize2: Option<u64>,
    /// The recovery transaction's step queued bmap updates, which run
    /// after the rest of the exchange.
    first_pending: bool,
}

impl Exchange {
    fn advance(&mut self, n: u64) {
        self.off1 = self.off1.saturating_add(n);
        self.off2 = self.off2.saturating_add(n);
        self.count = self.count.saturating_sub(n);
    }

    fn postop(&self) -> bool {
        self.flags
            & (XFS_EXCHMAPS_CLEAR_INO1_REFLINK | XFS_EXCHMAPS_CLEAR_INO2_REFLINK | INO2_SHORTFORM)
            != 0
    }

    fn attr(&self) -> bool {
        self.flags & XFS_EXCHMAPS_ATTR_FORK != 0
    }
}

/// Work captured by an exchange's recovery transaction, in order.
#[derive(Clone, Debug)]
pub enum Task {
    Exchange(Exchange),
    Bmap(MapExtent),
    Work(Work),
}

/// The inodes logged in the transaction being built.
type Tx = BTreeSet<u64>;

/// Log inode `ino`'s core in `tx` after `change`: the transaction's first
/// log of it raises its change count (a core log forces the bump).
fn log_core<R: ReadAt>(
    forks: &mut ForkEditor<'_, R>,
    tx: &mut Tx,
    ino: u64,
    change: impl FnOnce(&mut [u8]) -> Result<(), WritePastEnd>,
) -> EditResult<()> {
    let (ioff, mut b) = forks.inode(ino)?;
    change(&mut b).map_err(|w| w.damage("inode", Location::Inode { ino }))?;
    let first = u64::from(tx.insert(ino));
    forks.log_inode(ino, ioff, b, first)
}

fn flags2(b: &[u8]) -> u64 {
    if b.get(4) == Some(&3) {
        be64(b, offset_of!(XfsDinode, di_flags2)).unwrap_or(0)
    } else {
        0
    }
}

fn set_flags2(b: &mut [u8], set: u64, clear: u64) -> Result<(), WritePastEnd> {
    let f = (flags2(b) | set) & !clear;
    set_be64(b, offset_of!(XfsDinode, di_flags2), f)
}

/// The large extent counters switched on in an inode's core
/// (`xfs_inode_to_disk_iext_counters`): the data fork's count moves to the
/// 64-bit field at 24, the attr fork's to the 32-bit one at 76, the pad
/// after it zeroed.
fn upgrade_nrext64(b: &mut [u8]) -> Result<(), WritePastEnd> {
    let dn = u64::from(be32(b, offset_of!(XfsDinode, di_nextents)).unwrap_or(0));
    let an = u32::from(be16(b, offset_of!(XfsDinode, di_anextents)).unwrap_or(0));
    set_be64(b, offset_of!(XfsDinode, di_big_nextents), dn)?;
    set_be32(b, offset_of!(XfsDinode, di_nextents), an)?;
    set_be16(b, offset_of!(XfsDinode, di_anextents), 0)?;
    set_flags2(b, XFS_DIFLAG2_NREXT64, 0)
}

/// The name of the data or attr fork, for errors.
fn fork_name(attr: bool) -> &'static str {
    if attr {
        "attr fork"
    } else {
        "data fork"
    }
}

/// An inode of the intent, checked as `xlog_recover_iget_handle` does.
fn load<R: ReadAt>(forks: &ForkEditor<'_, R>, ino: u64, gen: u32) -> EditResult<Vec<u8>> {
    let (_, b) = forks.inode(ino)?;
    if be16(&b, offset_of!(XfsDinode, di_mode)).unwrap_or(0) == 0 {
        return fails_mount(format!("inode {ino} is free"));
    }
    let g = be32(&b, offset_of!(XfsDinode, di_gen)).unwrap_or(0);
    if g != gen {
        return fails_mount(format!("inode {ino} has generation {g}, the intent {gen}"));
    }
    if be16(&b, offset_of!(XfsDinode, di_flags)).unwrap_or(0) & XFS_DIFLAG_REALTIME != 0 {
        return not_done(format!(
            "inode {ino} is a realtime file: a realtime exchange"
        ));
    }
    Ok(b)
}

/// The recovery transaction of one XMI: checks, the exchange worked out
/// again, reflink flags made to match, the first step. Returns the work
/// it captures (empty when it finished everything itself).
pub fn start<R: ReadAt>(forks: &mut ForkEditor<'_, R>, x: &XmiItem) -> EditResult<Vec<Task>> {
    let fs = forks.fs();
    if fs.sb.features_incompat & XFS_SB_FEAT_INCOMPAT_EXCHRANGE == 0 {
        return fails_mount("the filesystem lacks the exchange-range feature");
    }
    let fileext_ok = |off: u64| {
        x.blockcount > 0
            && off
                .checked_add(x.blockcount)
                .is_some_and(|e| e <= XFS_MAX_FILEOFF.saturating_add(1))
    };
    if x.flags & !XFS_EXCHMAPS_LOGGED_FLAGS != 0
        || !fileext_ok(x.startoff1)
        || !fileext_ok(x.startoff2)
    {
        return fails_mount(format!(
            "flags {:#x}, offsets {} and {}, {} blocks are invalid",
            x.flags, x.startoff1, x.startoff2, x.blockcount
        ));
    }
    let attr = x.flags & XFS_EXCHMAPS_ATTR_FORK != 0;
    if attr && x.flags & XFS_EXCHMAPS_SET_SIZES != 0 {
        return not_done(
            "an attr-fork exchange that sets sizes: the kernel would give both files a size of -1",
        );
    }
    let b1 = load(forks, x.inode1, x.igen1)?;
    let b2 = load(forks, x.inode2, x.igen2)?;
    let kind = be16(&b2, offset_of!(XfsDinode, di_mode)).unwrap_or(0) & 0o170000;
    let size1 = be64(&b1, offset_of!(XfsDinode, di_size)).unwrap_or(0);
    let size2 = be64(&b2, offset_of!(XfsDinode, di_size)).unwrap_or(0);
    let mut ex = Exchange {
        ino1: x.inode1,
        ino2: x.inode2,
        off1: x.startoff1,
        off2: x.startoff2,
        count: x.blockcount,
        flags: x.flags & PARAMS,
        isize1: None,
        isize2: None,
        first_pending: false,
    };
    if attr {
        // xfs_exchmaps_init_intent: an attr fork has no sizes and no
        // reflink flags to exchange; it may go back to shortform after.
        ex.flags |= INO2_SHORTFORM;
    } else {
        if ex.flags & XFS_EXCHMAPS_SET_SIZES != 0 {
            ex.isize1 = Some(size2);
            ex.isize2 = Some(size1);
        }
        if kind == S_IFDIR || kind == S_IFLNK {
            ex.flags |= INO2_SHORTFORM;
        }
    }
    let r1 = flags2(&b1) & XFS_DIFLAG2_REFLINK != 0;
    let r2 = flags2(&b2) & XFS_DIFLAG2_REFLINK != 0;
    // Reflink flags are exchanged (cleared on the side that had one, after
    // the work) only when exactly one is set and the whole of both files
    // is exchanged.
    let bs = u64::from(fs.geo.blocksize).max(1);
    let whole = x.startoff1 == 0
        && x.startoff2 == 0
        && x.blockcount == size1.div_ceil(bs)
        && x.blockcount == size2.div_ceil(bs);
    if r1 != r2 && whole && !attr {
        ex.flags |= if r1 {
            XFS_EXCHMAPS_CLEAR_INO1_REFLINK
        } else {
            XFS_EXCHMAPS_CLEAR_INO2_REFLINK
        };
    }
    let mut tx = Tx::new();
    if r1 && !r2 {
        log_core(forks, &mut tx, x.inode2, |b| {
            set_flags2(b, XFS_DIFLAG2_REFLINK, 0)
        })?;
    }
    if r2 && !r1 {
        log_core(forks, &mut tx, x.inode1, |b| {
            set_flags2(b, XFS_DIFLAG2_REFLINK, 0)
        })?;
    }
    // xfs_exchmaps_upgrade_extent_counts: on a filesystem with large
    // extent counters, an inode still without them moves to them.
    if fs.sb.features_incompat & XFS_SB_FEAT_INCOMPAT_NREXT64 != 0 {
        for ino in [x.inode1, x.inode2] {
            // Read again: an exchange within one file upgrades it once.
            let (_, b) = forks.inode(ino)?;
            if flags2(&b) & XFS_DIFLAG2_NREXT64 == 0 {
                log_core(forks, &mut tx, ino, upgrade_nrext64)?;
            }
        }
    }
    let (tasks, again) = step(forks, &mut tx, &mut ex)?;
    ex.first_pending = !tasks.is_empty();
    let mut capture = Vec::new();
    if again {
        capture.push(Task::Exchange(ex));
    }
    capture.extend(tasks);
    if !capture.is_empty() {
        // The capture holds both inodes: logged once more before commit.
        log_core(forks, &mut tx, x.inode1, |_| Ok(()))?;
        log_core(forks, &mut tx, x.inode2, |_| Ok(()))?;
    }
    forks.done = forks.done.saturating_add(1);
    Ok(capture)
}

/// The next two mappings to exchange (`xfs_exchmaps_find_mappings`), the
/// exchange advanced past what it passes over; `None` at the end.
fn find_mappings<R: ReadAt>(
    forks: &ForkEditor<'_, R>,
    ex: &mut Exchange,
) -> EditResult<Option<(Mapping, Mapping)>> {
    while ex.count > 0 {
        let mut m1 = forks.mapping_at(ex.ino1, ex.attr(), ex.off1, ex.count)?;
        if m1.len == 0 {
            return damaged(
                fork_name(ex.attr()),
                Some(Location::Inode { ino: ex.ino1 }),
                format!("an empty mapping at {}", ex.off1),
            );
        }
        if ex.flags & XFS_EXCHMAPS_INO1_WRITTEN != 0 && (m1.start.is_none() || m1.unwritten) {
            ex.advance(m1.len);
            continue;
        }
        let m2 = forks.mapping_at(ex.ino2, ex.attr(), ex.off2, m1.len)?;
        if m2.len == 0 {
            return damaged(
                fork_name(ex.attr()),
                Some(Location::Inode { ino: ex.ino2 }),
                format!("an empty mapping at {}", ex.off2),
            );
        }
        m1.len = m1.len.min(m2.len);
        if m1.start != m2.start {
            return Ok(Some((m1, m2)));
        }
        if m1.unwritten != m2.unwritten {
            return fails_mount(format!(
                "inodes {} and {} map block {:?} in different states",
                ex.ino1, ex.ino2, m1.start
            ));
        }
        ex.advance(m1.len);
    }
    Ok(None)
}

/// A bmap update of `owner`'s data or attr fork for a real mapping (holes
/// have none).
fn bmap(owner: u64, attr: bool, m: &Mapping, off: u64, map: bool) -> Option<Task> {
    let start = m.start?;
    let unwritten = if m.unwritten {
        XFS_BMAP_EXTENT_UNWRITTEN
    } else {
        0
    };
    let fork = if attr { XFS_BMAP_EXTENT_ATTR_FORK } else { 0 };
    Some(Task::Bmap(MapExtent {
        owner,
        startblock: start,
        startoff: off,
        len: u32::try_from(m.len).unwrap_or(u32::MAX),
        flags: if map { 1 } else { 2 } | unwritten | fork,
        op: if map { "map" } else { "unmap" },
    }))
}

/// Raise a size to cover blocks mapped below `end` (a block number), no
/// further than `isize` (`xfs_exchmaps_update_size`).
fn update_size<R: ReadAt>(
    forks: &mut ForkEditor<'_, R>,
    tx: &mut Tx,
    ino: u64,
    end: u64,
    isize: Option<u64>,
) -> EditResult<()> {
    let Some(isize) = isize else {
        return Ok(());
    };
    let bs = u64::from(forks.fs().geo.blocksize);
    let len = end.saturating_mul(bs).min(isize);
    let (_, b) = forks.inode(ino)?;
    if len <= be64(&b, offset_of!(XfsDinode, di_size)).unwrap_or(0) {
        return Ok(());
    }
    log_core(forks, tx, ino, |b| {
        set_be64(b, offset_of!(XfsDinode, di_size), len)
    })
}

/// One call of `xfs_exchmaps_finish_one`: the work it queues (bmap
/// updates, or what a fork going back to shortform defers), and whether
/// the exchange has more to do.
fn step<R: ReadAt>(
    forks: &mut ForkEditor<'_, R>,
    tx: &mut Tx,
    ex: &mut Exchange,
) -> EditResult<(Vec<Task>, bool)> {
    let mut tasks = Vec::new();
    if ex.count > 0 {
        if let Some((m1, m2)) = find_mappings(forks, ex)? {
            let len = m1.len;
            let m2 = Mapping { len, ..m2 };
            let a = ex.attr();
            tasks.extend(bmap(ex.ino1, a, &m1, m1.off, false));
            tasks.extend(bmap(ex.ino2, a, &m2, m2.off, false));
            tasks.extend(bmap(ex.ino1, a, &m2, m1.off, true));
            tasks.extend(bmap(ex.ino2, a, &m1, m2.off, true));
            update_size(forks, tx, ex.ino1, m1.off.saturating_add(len), ex.isize1)?;
            update_size(forks, tx, ex.ino2, m2.off.saturating_add(len), ex.isize2)?;
            ex.advance(len);
        }
        if ex.flags & XFS_EXCHMAPS_SET_SIZES != 0 && ex.count == 0 {
            let (s1, s2) = (ex.isize1.unwrap_or(0), ex.isize2.unwrap_or(0));
            log_core(forks, tx, ex.ino1, |b| {
                set_be64(b, offset_of!(XfsDinode, di_size), s1)
            })?;
            log_core(forks, tx, ex.ino2, |b| {
                set_be64(b, offset_of!(XfsDinode, di_size), s2)
            })?;
        }
    } else if ex.postop() {
        if ex.flags & INO2_SHORTFORM != 0 {
            ex.flags &= !INO2_SHORTFORM;
            if ex.attr() {
                if let Some(work) = forks.exchanged_attr_to_sf(ex.ino2)? {
                    // The inode was logged (its change count raised).
                    tx.insert(ex.ino2);
                    tasks.extend(work.into_iter().map(Task::Work));
                }
            } else if let Some(t) = data_to_shortform(forks, ex.ino2)? {
                if ex.first_pending {
                    return fails_mount(format!(
                        "inode {}: the exchange's last call would turn its {} back into shortform while the first step's bmap updates are still to come",
                        ex.ino2, t.what
                    ));
                }
                let work = to_local(forks, tx, ex.ino2, &t)?;
                tasks.extend(work.into_iter().map(Task::Work));
            }
        }
        if ex.flags & XFS_EXCHMAPS_CLEAR_INO1_REFLINK != 0 {
            log_core(forks, tx, ex.ino1, |b| {
                set_flags2(b, 0, XFS_DIFLAG2_REFLINK)
            })?;
        }
        if ex.flags & XFS_EXCHMAPS_CLEAR_INO2_REFLINK != 0 {
            log_core(forks, tx, ex.ino2, |b| {
                set_flags2(b, 0, XFS_DIFLAG2_REFLINK)
            })?;
        }
        ex.flags &= !(XFS_EXCHMAPS_CLEAR_INO1_REFLINK | XFS_EXCHMAPS_CLEAR_INO2_REFLINK);
    }
    Ok((tasks, ex.count > 0 || ex.postop()))
}

/// What the exchange's last call turns a directory or symlink into: its
/// data fork in local format.
struct ToLocal {
    what: &'static str,
    /// The fork's new bytes: a shortform directory or the symlink target.
    data: Vec<u8>,
    /// A directory's new size (its shortform size); a symlink keeps its.
    size: Option<u64>,
    /// The fork's extents, which go.
    exts: Vec<Rec>,
}

/// What the exchange's last call does to a directory or symlink that is
/// the second file (`xfs_exchmaps_dir_to_sf`, `xfs_exchmaps_link_to_sf`):
/// `Some` when it turns its data fork into local format, `None` when it
/// leaves it alone. A block the kernel cannot read fails the mount, and
/// is refused.
fn data_to_shortform<R: ReadAt>(
    forks: &ForkEditor<'_, R>,
    ino: u64,
) -> EditResult<Option<ToLocal>> {
    let fs = forks.fs();
    let (_, b) = forks.inode(ino)?;
    let kind = be16(&b, offset_of!(XfsDinode, di_mode)).unwrap_or(0) & S_IFMT;
    if b.get(5) == Some(&XFS_DINODE_FMT_LOCAL) || (kind != S_IFDIR && kind != S_IFLNK) {
        return Ok(None);
    }
    let core = if b.get(4) == Some(&3) { 176 } else { 100 };
    let forkoff = usize::from(b.get(82).copied().unwrap_or(0)).saturating_mul(8);
    let dsize = if forkoff == 0 {
        b.len().saturating_sub(core)
    } else {
        forkoff
    };
    let size = be64(&b, offset_of!(XfsDinode, di_size)).unwrap_or(0);
    let dsize64 = u64::try_from(dsize).unwrap_or(u64::MAX);
    if kind == S_IFLNK {
        // A remote target short enough for the inode moves into it.
        if size > dsize64 {
            return Ok(None);
        }
        return link_target(forks, ino, &b, size).map(Some);
    }
    // xfs_dir2_format: a block directory ends at its first directory block.
    let dg = DirGeometry::new(&fs.geo, &fs.sb, Ino(ino));
    let runs: Vec<(u64, u64)> = forks
        .data_extents(ino)?
        .iter()
        .map(|r| (r.off, r.len))
        .collect();
    if block_dir_format(&dg, &runs) != Some(DirFormat::Block) {
        return Ok(None);
    }
    let blksize = u64::try_from(dg.blksize()).unwrap_or(u64::MAX);
    if size != blksize {
        return fails_mount(format!(
            "directory {ino}: a single directory block but size {size}"
        ));
    }
    // The block's extents, in file order, from offset 0 without a hole
    // (a directory block larger than a filesystem block may lie in
    // several), read into one buffer as the kernel maps it.
    let fsbs = u64::from(dg.da.fsb_count);
    let exts = forks.data_extents(ino)?;
    let mut at = 0u64;
    for r in &exts {
        if r.off != at || r.unwritten || b.get(5) != Some(&XFS_DINODE_FMT_EXTENTS) {
            return not_done(format!(
                "directory {ino}: its block is not written extents from offset 0 without a hole"
            ));
        }
        at = at.saturating_add(r.len);
    }
    let first = exts.first().map_or(0, |r| r.start);
    let Some(daddr) = fs.geo.fsb_to_daddr(FsBlock(first)) else {
        return damaged(
            "directory block",
            Some(Location::FsBlock { fsb: first }),
            format!("directory {ino}: outside the filesystem"),
        );
    };
    if at != fsbs {
        return fails_mount(format!(
            "directory {ino}: its block spans {at} filesystem blocks, not {fsbs}"
        ));
    }
    let bs = block_len(&fs.geo);
    let mut bytes = Vec::with_capacity(dg.blksize());
    for r in &exts {
        let off = forks.block_off("directory block", r.start)?;
        let n = usize::try_from(r.len).unwrap_or(0).saturating_mul(bs);
        bytes.extend(forks.read("directory block", off, n)?);
    }
    // Read as the kernel's verifier reads it (magic, v5 header with owner
    // and CRC, the entries' tiling): a block it rejects fails the mount.
    let buf = DaBuf {
        dablk: 0,
        daddr,
        bytes,
    };
    let block = match parse_data_block(&buf, &dg, true) {
        Ok(b) => match b.problems.first() {
            None => b,
            Some(p) => return fails_mount(p.to_string()),
        },
        Err(e) => return fails_mount(e.to_string()),
    };
    // xfs_dir2_block_sfsize: "." left out, ".." as the parent's number.
    let (mut n, mut namelen, mut i8count, mut parent) = (0usize, 0usize, 0u8, 0u64);
    for (_, e) in &block.entries {
        let dot = e.name == b".";
        if !dot && e.ino.0 > u64::from(u32::MAX) {
            i8count = i8count.wrapping_add(1);
        }
        if e.name == b".." {
            parent = e.ino.0;
        } else if !dot {
            n = n.saturating_add(1);
            namelen = namelen
                .saturating_add(e.name.len())
                .saturating_add(usize::from(dg.ftype));
        }
    }
    let i8 = i8count != 0;
    let sfsize = (if i8 { 10usize } else { 6 })
        .saturating_add(n.saturating_mul(3))
        .saturating_add(namelen)
        .saturating_add(n.saturating_mul(if i8 { 8 } else { 4 }));
    if sfsize > dsize {
        return Ok(None);
    }
    // xfs_dir2_block_to_sf: the header, then the entries in the block's
    // order, each with its offset in the block.
    let put_ino = |sf: &mut Vec<u8>, v: u64| {
        if i8 {
            sf.extend_from_slice(&v.to_be_bytes());
        } else {
            sf.extend_from_slice(&u32::try_from(v).unwrap_or(u32::MAX).to_be_bytes());
        }
    };
    let mut sf = vec![u8::try_from(n).unwrap_or(u8::MAX), i8count];
    put_ino(&mut sf, parent);
    for (at, e) in &block.entries {
        if e.name == b"." || e.name == b".." {
            continue;
        }
        sf.push(u8::try_from(e.name.len()).unwrap_or(u8::MAX));
        sf.extend_from_slice(&u16::try_from(*at).unwrap_or(u16::MAX).to_be_bytes());
        sf.extend_from_slice(&e.name);
        if let Some(ft) = e.ftype {
            sf.push(ft.0);
        }
        put_ino(&mut sf, e.ino.0);
    }
    Ok(Some(ToLocal {
        what: "directory",
        size: Some(u64::try_from(sf.len()).unwrap_or(u64::MAX)),
        data: sf,
        exts,
    }))
}

/// A remote symlink target read as `xfs_symlink_remote_read` reads it
/// (a v5 block's magic, CRC, uuid, block number and owner checked, and
/// its offset and length): a target short enough for the inode is in one
/// block.
fn link_target<R: ReadAt>(
    forks: &ForkEditor<'_, R>,
    ino: u64,
    b: &[u8],
    size: u64,
) -> EditResult<ToLocal> {
    let fs = forks.fs();
    let recs = forks.data_extents(ino)?;
    let ext = match (b.get(5), recs.as_slice()) {
        (Some(&XFS_DINODE_FMT_EXTENTS), [r]) if r.off == 0 && !r.unwritten => *r,
        _ => {
            return not_done(format!(
                "symlink {ino}: its data fork is not one written extent from offset 0"
            ))
        }
    };
    let bs = block_len(&fs.geo);
    let off = forks.block_off("symlink block", ext.start)?;
    let block = forks.read("symlink block", off, bs)?;
    let want = usize::try_from(size).unwrap_or(usize::MAX);
    let payload = if fs.geo.v5 {
        let daddr = fs.geo.fsb_to_daddr(FsBlock(ext.start)).unwrap_or(Daddr(0));
        let uuid = fs.meta_uuid();
        let v = symlink_block_checks(&block, ino, daddr, &uuid);
        let magic = be32(&block, offset_of!(XfsDsymlinkHdr, sl_magic)).unwrap_or(0);
        let (sl_off, sl_bytes) = (
            be32(&block, offset_of!(XfsDsymlinkHdr, sl_offset)).unwrap_or(0),
            be32(&block, offset_of!(XfsDsymlinkHdr, sl_bytes)).unwrap_or(0),
        );
        let why = if magic != XFS_SYMLINK_MAGIC {
            Some(format!("magic {magic:#010x}"))
        } else if let Some(p) = v.problems.first() {
            Some(p.clone())
        } else if sl_off != 0 || u64::from(sl_bytes) != size {
            Some(format!(
                "its header says offset {sl_off} and length {sl_bytes}, not 0 and {size}"
            ))
        } else {
            None
        };
        if let Some(why) = why {
            return fails_mount(format!("symlink {ino}: block {}: {why}", ext.start));
        }
        block.get(XFS_DSYMLINK_HDR_SIZE..).unwrap_or(&[])
    } else {
        block.as_slice()
    };
    let Some(target) = payload.get(..want) else {
        return damaged(
            "symlink block",
            Some(Location::FsBlock { fsb: ext.start }),
            format!("symlink {ino}: a target of {size} bytes overruns the block"),
        );
    };
    // The local target is checked when the inode is written
    // (xfs_symlink_shortform_verify): no NUL in it.
    if target.is_empty() || target.contains(&0) {
        return damaged(
            "symlink block",
            Some(Location::FsBlock { fsb: ext.start }),
            format!(
                "symlink {ino}: its target is empty or holds a NUL: the kernel shuts down writing the inode"
            ),
        );
    }
    Ok(ToLocal {
        what: "symlink target",
        data: target.to_vec(),
        size: None,
        exts: vec![ext],
    })
}

/// The last call's conversion done (`xfs_dir2_block_to_sf` after
/// `xfs_dir2_shrink_inode`, or `xfs_symlink_remote_truncate` and
/// `xfs_init_local_fork`): the extents leave the fork (the block's buffer
/// invalidated: nothing of it is written), the fork takes the new bytes
/// in local format (what lay beyond them in the inode stays, as the
/// kernel writes only the fork's bytes), and each extent's reverse
/// mapping and free are deferred.
fn to_local<R: ReadAt>(
    forks: &mut ForkEditor<'_, R>,
    tx: &mut Tx,
    ino: u64,
    t: &ToLocal,
) -> EditResult<Vec<Work>> {
    let (_, b) = forks.inode(ino)?;
    if flags2(&b) & XFS_DIFLAG2_REFLINK != 0 {
        return not_done(format!(
            "inode {ino}: a reflinked {} turned into local format",
            t.what
        ));
    }
    let core: usize = if b.get(4) == Some(&3) { 176 } else { 100 };
    if b.len() < core.saturating_add(t.data.len()) {
        return damaged(
            "inode",
            Some(Location::Inode { ino }),
            format!("its {} overruns the inode", t.what),
        );
    }
    let g = forks.fs().geo;
    let gone = t.exts.iter().fold(0u64, |a, r| a.saturating_add(r.len));
    log_core(forks, tx, ino, |b| {
        let nrext64 = flags2(b) & XFS_DIFLAG2_NREXT64 != 0;
        let block_len = b.len();
        let d = super::inode::core_mut(b)?;
        d.di_format = XFS_DINODE_FMT_LOCAL;
        if let Some(s) = t.size {
            d.di_size.set(s);
        }
        d.di_nblocks.set(d.di_nblocks.get().saturating_sub(gone));
        if nrext64 {
            d.di_big_nextents.set(0);
        } else {
            d.di_nextents.set(0);
        }
        let end = core.saturating_add(t.data.len());
        match b.get_mut(core..end) {
            Some(d) => d.copy_from_slice(&t.data),
            None => {
                return Err(WritePastEnd {
                    off: core,
                    len: t.data.len(),
                    block_len,
                })
            }
        }
        Ok(())
    })?;
    // __xfs_bunmapi: the last extent first, each one's reverse mapping
    // removed, then its blocks freed.
    let mut work = Vec::new();
    for r in t.exts.iter().rev() {
        let (agno, agbno) = g.split_fsb(FsBlock(r.start));
        let m = Rmap {
            start: agbno.0,
            len: u32::try_from(r.len).unwrap_or(u32::MAX),
            owner: ino,
            offset: r.off,
            attr: false,
            bmbt: false,
            unwritten: false,
        };
        work.extend(Work::unmap_and_free(agno.0, m));
    }
    Ok(work)
}

/// A roll of the chain: the held inodes are logged in the transaction
/// that ends (`xfs_defer_save_resources`), and a new one begins.
fn roll<R: ReadAt>(forks: &mut ForkEditor<'_, R>, tx: &mut Tx, held: [u64; 2]) -> EditResult<()> {
    for ino in held {
        log_core(forks, tx, ino, |_| Ok(()))?;
    }
    tx.clear();
    Ok(())
}

/// A transaction begins. If it is one in which the kernel forced its log
/// ([`Engine::cut_at`]), what every transaction before it left is
/// recorded: the checkpoint that force wrote, with the intents `live`
/// lists still pending.
pub(super) fn begin_tx<R: ReadAt>(
    engine: &mut Engine<'_, R>,
    forks: &mut ForkEditor<'_, R>,
    live: impl FnOnce() -> Vec<LiveIntent>,
) -> EditResult<()> {
    engine.begin_tx();
    if engine.cut_due() {
        let mut cut = engine.take_cut().map_err(super::ag::EditError::Read)?;
        cut.forks = forks.cut();
        cut.live = live();
        engine.cuts.push(cut);
    }
    Ok(())
}

/// A deferred op waiting in the chain, with the number of the intent
/// that logged it: an op put back after a step (an exchange going on) is
/// logged again as a new intent, so it gets a new number.
type Queued = (u64, Task);

/// The intents logged and not done while `current` and `queue` wait: one
/// per deferred op (a run of free-list frees is one EFI), each with its
/// number.
fn live_intents(current: Option<(u64, &Work)>, queue: &VecDeque<Queued>) -> Vec<LiveIntent> {
    let agfl = |w: &Work| matches!(w, Work::AgflFree { .. });
    let pending = current
        .map(|(id, w)| (id, work_intent(w), agfl(w)))
        .into_iter()
        .chain(queue.iter().map(|(id, t)| match t {
            Task::Work(w) => (*id, work_intent(w), agfl(w)),
            Task::Bmap(_) => (*id, XFS_LI_BUI, false),
            Task::Exchange(_) => (*id, XFS_LI_XMI, false),
        }));
    let mut out: Vec<LiveIntent> = Vec::new();
    let mut last_agfl = false;
    for (id, kind, is_agfl) in pending {
        match out.last_mut() {
            Some(l) if is_agfl && last_agfl => l.extents = l.extents.saturating_add(1),
            _ => out.push(LiveIntent {
                id,
                kind: ItemKind(kind),
                extents: 1,
            }),
        }
        last_agfl = is_agfl;
    }
    out
}

/// The intent item kind of a deferred work item.
fn work_intent(w: &Work) -> u16 {
    match w {
        Work::RmapMap { .. } | Work::RmapUnmap { .. } | Work::RmapConvert { .. } => XFS_LI_RUI,
        Work::Refcount { .. } | Work::RefcountCow { .. } => XFS_LI_CUI,
        Work::Free { .. } | Work::AgflFree { .. } => XFS_LI_EFI,
    }
}

/// The captured work of one exchange, finished as `xfs_defer_finish_noroll`
/// does: one item per transaction, what an item creates done before what
/// was already queued.
pub fn run_chain<R: ReadAt>(
    forks: &mut ForkEditor<'_, R>,
    engine: &mut Engine<'_, R>,
    tasks: Vec<Task>,
    held: [u64; 2],
) -> EditResult<()> {
    let mut next_id = 0u64;
    let mut number = |t: Task| {
        next_id = next_id.saturating_add(1);
        (next_id, t)
    };
    let mut queue: VecDeque<Queued> = tasks.into_iter().map(&mut number).collect();
    let mut tx = Tx::new();
    let mut guard = 0u64;
    while let Some((id, t)) = queue.pop_front() {
        guard = guard.saturating_add(1);
        if guard > 1 << 24 {
            return not_done("an exchange's deferred work of more than 2^24 steps");
        }
        let own = |kind: u16| LiveIntent {
            id,
            kind: ItemKind(kind),
            extents: 1,
        };
        match t {
            Task::Work(w) => {
                if engine.starts_tx(&w) {
                    begin_tx(engine, forks, || live_intents(Some((id, &w)), &queue))?;
                }
                let (more, rolled) = engine.finish_in_chain(&w)?;
                if rolled {
                    roll(forks, &mut tx, held)?;
                }
                engine.pin_blocks(std::mem::take(&mut forks.unpinned))?;
                for n in more.into_iter().rev() {
                    queue.push_front(number(Task::Work(n)));
                }
            }
            Task::Bmap(b) => {
                roll(forks, &mut tx, held)?;
                begin_tx(engine, forks, || {
                    let mut l = vec![own(XFS_LI_BUI)];
                    l.extend(live_intents(None, &queue));
                    l
                })?;
                let mut alloc =
                    |agno: u32, hint: u32, o| engine.store(agno)?.alloc_near_one_for(hint, o);
                let more = forks.finish(&b, &mut alloc).map_err(|e| {
                    e.within(|| {
                        format!(
                            "bmap {} inode {} offset {} length {}",
                            b.op, b.owner, b.startoff, b.len
                        )
                    })
                })?;
                tx.insert(b.owner);
                engine.settle_forces();
                engine.pin_blocks(std::mem::take(&mut forks.unpinned))?;
                let more: Vec<Work> = more.into_iter().flatten().collect();
                for n in more.into_iter().rev() {
                    queue.push_front(number(Task::Work(n)));
                }
            }
            Task::Exchange(mut ex) => {
                roll(forks, &mut tx, held)?;
                begin_tx(engine, forks, || {
                    let mut l = vec![own(XFS_LI_XMI)];
                    l.extend(live_intents(None, &queue));
                    l
                })?;
                let (tasks, again) = step(forks, &mut tx, &mut ex)?;
                engine.pin_blocks(std::mem::take(&mut forks.unpinned))?;
                if again {
                    queue.push_front(number(Task::Exchange(ex)));
                }
                for t in tasks.into_iter().rev() {
                    queue.push_front(number(t));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::xfs::image::Overlay;
    use crate::xfs::testutil::fixture_fs;

    /// An XMI between `ino1` and `ino2` as the image holds them (their
    /// generations read from it).
    fn xmi<R: ReadAt>(
        forks: &ForkEditor<'_, R>,
        (ino1, ino2): (u64, u64),
        (off1, off2, count): (u64, u64, u64),
        flags: u64,
    ) -> XmiItem {
        let gen = |ino| be32(&forks.inode(ino).unwrap().1, 92).unwrap();
        XmiItem {
            id: 1,
            inode1: ino1,
            inode2: ino2,
            igen1: gen(ino1),
            igen2: gen(ino2),
            startoff1: off1,
            startoff2: off2,
            blockcount: count,
            flags,
            isize1: 0,
            isize2: 0,
            link: None,
        }
    }

    fn why<T: std::fmt::Debug>(r: EditResult<T>) -> String {
        format!("{:?}", r.expect_err("refused"))
    }

    #[test]
    fn impossible_exchanges_are_refused_with_a_reason() {
        // replay-xmi-attr.mkfs.txt: xa-tmp 131, xa-file 133 (attr leaves).
        let fs = fixture_fs("replay-xmi-attr");
        let ov = Overlay::default();
        let mut forks = ForkEditor::new(&fs, &ov);
        let sizes = xmi(
            &forks,
            (131, 133),
            (0, 0, 1),
            XFS_EXCHMAPS_ATTR_FORK | XFS_EXCHMAPS_SET_SIZES,
        );
        let m = why(start(&mut forks, &sizes));
        assert!(
            m.contains("size of -1") && m.starts_with("NotDoneByThisTool"),
            "{m}"
        );
        let flags = xmi(&forks, (131, 133), (0, 0, 1), 1 << 5);
        let m = why(start(&mut forks, &flags));
        assert!(
            m.contains("fails the mount") && m.starts_with("KernelFailsMount"),
            "{m}"
        );
        let mut wrong_gen = xmi(&forks, (131, 133), (0, 0, 1), 0);
        wrong_gen.igen2 = wrong_gen.igen2.wrapping_add(1);
        // xlog_recover_iget_handle: -EFSCORRUPTED, the mount fails.
        let m = why(start(&mut forks, &wrong_gen));
        assert!(
            m.contains("generation") && m.starts_with("KernelFailsMount"),
            "{m}"
        );
        assert_eq!(forks.inodes_changed(), 0);
    }

    /// The block of `ino`'s data fork that the exchange's last call reads
    /// (CRC at `crc_off`), damaged at random: a verdict or a refusal that
    /// names `what`, never a panic.
    #[allow(clippy::arithmetic_side_effects)]
    fn damage_last_call_block(
        name: &str,
        ino: u64,
        crc_off: usize,
        what: &'static str,
        want: &str,
    ) {
        let fs = fixture_fs(name);
        let clean = Overlay::default();
        let forks = ForkEditor::new(&fs, &clean);
        let t = data_to_shortform(&forks, ino).unwrap().unwrap();
        assert_eq!(t.what, want);
        let start = forks.mapping_at(ino, false, 0, 1).unwrap().start.unwrap();
        let off = forks.block_off(what, start).unwrap();
        let bs = usize::try_from(fs.geo.blocksize).unwrap();
        let block = forks.read(what, off, bs).unwrap();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut ok, mut refused) = (0, 0);
        for _ in 0..400 {
            let mut b = block.clone();
            for _ in 0..1 + next() % 8 {
                // Mostly the header, the tail and the leaf at the end.
                let at = match next() % 3 {
                    0 => usize::try_from(next() % 96).unwrap(),
                    1 => bs - 1 - usize::try_from(next() % 128).unwrap(),
                    _ => usize::try_from(next()).unwrap() % bs,
                };
                b[at] = u8::try_from(next() & 0xff).unwrap();
            }
            if next() % 4 != 0 {
                // A damaged block with a good CRC: its contents are read.
                let c = crate::xfs::sb::crc_with_hole(&b, crc_off);
                b[crc_off..crc_off + 4].copy_from_slice(&c.to_le_bytes());
            }
            let mut ov = Overlay::default();
            ov.put(off / 512, &b);
            let forks = ForkEditor::new(&fs, &ov);
            match data_to_shortform(&forks, ino) {
                Ok(_) => ok += 1,
                Err(e) => {
                    assert!(format!("{e:?}").contains(what), "{e:?}");
                    refused += 1;
                }
            }
        }
        assert!(ok > 0 && refused > 0, "{name}: {ok} {refused}");
    }

    #[test]
    fn damaged_directory_blocks_are_refused_without_panics() {
        // replay-xmi-dirfail: df-dir (ino 65664 in its mkfs.txt) is one
        // directory block whose 12 entries fit the inode.
        damage_last_call_block("replay-xmi-dirfail", 65664, 4, "directory", "directory");
    }

    #[test]
    fn damaged_symlink_blocks_are_refused_without_panics() {
        // replay-xmi-tosf: ts-link (ino 145 in its mkfs.txt) is a remote
        // target of 40 bytes, which fit the inode.
        damage_last_call_block("replay-xmi-tosf", 145, 12, "symlink", "symlink target");
    }

    /// Overlapping ranges of one file: the first step's bmap updates run
    /// last and map a block that a later step has already mapped at
    /// another offset; the kernel's rmapbt refuses that insert ("bno + len
    /// > gtrec.rm_startblock", the mount fails), and so does replay.
    #[test]
    fn overlapping_ranges_of_one_file_fail_as_in_the_kernel() {
        // replay-xmi-same.mkfs.txt: s1 131, 12 one-block extents.
        let fs = fixture_fs("replay-xmi-same");
        let ov = Overlay::default();
        let mut forks = ForkEditor::new(&fs, &ov);
        let mut engine = Engine::new(&fs, &ov);
        let x = xmi(&forks, (131, 131), (0, 2, 4), 0);
        let tasks = start(&mut forks, &x).unwrap();
        let r = run_chain(&mut forks, &mut engine, tasks, [131, 131]);
        let e = why(r);
        assert!(
            e.contains("overlaps") && e.contains("fails the mount"),
            "{e}"
        );
        // Apart, the same exchange finishes.
        let fs = fixture_fs("replay-xmi-same");
        let mut forks = ForkEditor::new(&fs, &ov);
        let mut engine = Engine::new(&fs, &ov);
        let x = xmi(&forks, (131, 131), (0, 4, 4), 0);
        let tasks = start(&mut forks, &x).unwrap();
        run_chain(&mut forks, &mut engine, tasks, [131, 131]).unwrap();
    }
}
