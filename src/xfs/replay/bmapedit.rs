//! Bmap-update intents (BUI) finished as the kernel finishes them at mount
//! (`xfs_bmap_recover_work` -> `xfs_bmap_finish_one`):
//!
//! ```text
//!  map    xfs_bmapi_remap: the mapping goes into a hole of the fork
//!         (xfs_bmap_add_extent_hole_real: merged with the extent on its
//!         left and/or right when they are contiguous in the file and on
//!         disk, of the same state, and the result fits an extent record),
//!         di_nblocks += length; the reverse mapping is added as deferred
//!         work (map_shared for a reflinked inode's data fork)
//!  unmap  __xfs_bunmapi with REMAP: the range leaves the fork, last extent
//!         first, one per step, each later step a transaction of its own
//!         (an extent is trimmed, split or removed), di_nblocks -=
//!         what left; each piece's reverse mapping is removed as deferred
//!         work; the blocks are not freed (their owner in the remap does)
//! ```
//!
//! The fork is edited where it lives: the record list in the inode for
//! the extents format (a list that outgrows the inode becomes a one-leaf
//! bmbt, the leaf allocated near the inode as xfs_bmap_extents_to_btree
//! does); for a bmbt, the leaf that holds the record (the keys above it
//! follow a new first record; a full leaf passes a record to a sibling,
//! and when both siblings are full it splits, the new leaf allocated near
//! it and added to the root in the inode; a mapping contiguous with the
//! first record of the next leaf merges into it there). An unmap that
//! leaves a one-leaf bmbt's records fitting the inode turns the fork back
//! into a list (the leaf freed afterwards); a cut that overflows a full
//! list makes a bmbt.
//! A leaf that a delete leaves below half full borrows a record from a
//! sibling that can spare one, else joins one (xfs_btree_delrec).
//! A split whose root in the inode is full moves the root into a new node
//! block (the tree grows a level, xfs_btree_new_iroot). An unmap of several
//! extents whose fork goes back to a list on the way goes on on the list.
//! A leaf under a node block splits too, the node taking the new key and
//! pointer. Refused, with the reason: a split whose node is full, or two
//! or more levels under the root; a borrow or join under a node block; a
//! mapping that is not into a hole.
//!
//! Changed inodes and bmbt blocks are kept here, not in the overlay, until
//! [`ForkEditor::into_changes`] hands them over (stamped with the LSN of
//! the recovery, CRCs recomputed).

use super::agedit::refuse;
use super::agedit::EditResult;
use super::alloc::RmapOwner;
use super::defer::{FreeOwner, Rmap, Work};
use super::{put_be16, put_be32, put_be64, put_crc};
use crate::xfs::error::Result;
use crate::xfs::format::dinode::{
    XfsDinode, XFS_BMAP_CRC_MAGIC, XFS_BMAP_MAGIC, XFS_DIFLAG2_NREXT64, XFS_DIFLAG2_REFLINK,
    XFS_DINODE_FMT_BTREE, XFS_DINODE_FMT_EXTENTS, XFS_DINODE_V2_SIZE, XFS_DINODE_V3_SIZE,
    XFS_MAX_BMBT_EXTLEN,
};
use crate::xfs::format::log::*;
use crate::xfs::fs::{be16, be32, be64, Fs};
use crate::xfs::image::Overlay;
use crate::xfs::log::items::MapExtent;
use crate::xfs::read::ReadAt;
use crate::xfs::types::{FsBlock, Ino, Lsn};
use core::mem::offset_of;
use std::collections::BTreeMap;

const MAX_LEVELS: u16 = 9;

/// One extent record (`xfs_bmbt_irec`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Rec {
    pub(super) off: u64,
    pub(super) start: u64,
    pub(super) len: u64,
    pub(super) unwritten: bool,
}

impl Rec {
    fn parse(b: &[u8], at: usize) -> Rec {
        let l0 = be64(b, at).unwrap_or(0);
        let l1 = be64(b, at.saturating_add(8)).unwrap_or(0);
        Rec {
            off: (l0 >> 9) & ((1 << 54) - 1),
            start: ((l0 & 0x1ff) << 43) | (l1 >> 21),
            len: l1 & XFS_MAX_BMBT_EXTLEN,
            unwritten: l0 >> 63 != 0,
        }
    }
    fn put(&self, b: &mut [u8], at: usize) {
        let l0 = (u64::from(self.unwritten) << 63)
            | ((self.off & ((1 << 54) - 1)) << 9)
            | ((self.start >> 43) & 0x1ff);
        let l1 = ((self.start & ((1 << 43) - 1)) << 21) | (self.len & XFS_MAX_BMBT_EXTLEN);
        put_be64(b, at, l0);
        put_be64(b, at.saturating_add(8), l1);
    }
    /// The record cut by the range `[off, end)` it overlaps: what lies
    /// before the range, the overlap, and what lies after (either end may
    /// be empty).
    pub(super) fn cut(self, off: u64, end: u64) -> (Rec, Rec, Rec) {
        let lo = self.off.max(off);
        let hi = self.end().min(end);
        let at = |o: u64| self.start.saturating_add(o.saturating_sub(self.off));
        let front = Rec {
            len: lo.saturating_sub(self.off),
            ..self
        };
        let piece = Rec {
            off: lo,
            start: at(lo),
            len: hi.saturating_sub(lo),
            unwritten: self.unwritten,
        };
        let back = Rec {
            off: hi,
            start: at(hi),
            len: self.end().saturating_sub(hi),
            unwritten: self.unwritten,
        };
        (front, piece, back)
    }

    pub(super) fn end(&self) -> u64 {
        self.off.saturating_add(self.len)
    }
}

/// One mapping of a file range: blocks from `start`, or a hole (`None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub off: u64,
    pub len: u64,
    pub start: Option<u64>,
    pub unwritten: bool,
}

/// Where an inode's fork lies and what it holds.
struct ForkAt {
    /// Byte offset of the inode in the image.
    ioff: u64,
    bytes: Vec<u8>,
    fork_off: usize,
    fork_len: usize,
    format: u8,
    nextents: u64,
    attr: bool,
    reflink: bool,
}

impl ForkAt {
    fn nextents_set(&mut self, n: u64) -> EditResult<()> {
        let flags2 = self.flags2();
        if self.attr {
            if flags2 & XFS_DIFLAG2_NREXT64 != 0 {
                put_be32(&mut self.bytes, 76, u32::try_from(n).unwrap_or(u32::MAX));
            } else {
                let Ok(v) = u16::try_from(n) else {
                    return refuse(format!("{n} attr fork extents overflow the counter"));
                };
                put_be16(&mut self.bytes, 80, v);
            }
        } else if flags2 & XFS_DIFLAG2_NREXT64 != 0 {
            put_be64(&mut self.bytes, 24, n);
        } else {
            let Ok(v) = u32::try_from(n) else {
                return refuse(format!("{n} data fork extents overflow the counter"));
            };
            put_be32(&mut self.bytes, 76, v);
        }
        self.nextents = n;
        Ok(())
    }
    fn flags2(&self) -> u64 {
        if self.bytes.get(4) == Some(&3) {
            be64(&self.bytes, 120).unwrap_or(0)
        } else {
            0
        }
    }
    /// Extent records that fit in the fork (`XFS_IFORK_MAXEXT`).
    fn maxext(&self) -> u64 {
        u64::try_from(self.fork_len / 16).unwrap_or(0)
    }
}

/// One level of a path down a bmbt: the block (None: the root in the
/// inode) and the index taken in it.
#[derive(Clone, Copy, Debug)]
struct Step {
    block: Option<u64>,
    idx: usize,
}

/// A bmbt leaf: where it is, its bytes and its records.
struct Leaf {
    off: u64,
    bytes: Vec<u8>,
    recs: Vec<Rec>,
}

/// An inode's extent count for its attr fork or its data fork, from the
/// 32/16-bit fields or, with nrext64, the 64/32-bit ones.
pub(super) fn extent_count(b: &[u8], attr: bool) -> u64 {
    let v3 = b.get(4) == Some(&3);
    let nrext64 = v3 && be64(b, 120).unwrap_or(0) & XFS_DIFLAG2_NREXT64 != 0;
    match (attr, nrext64) {
        (true, true) => u64::from(be32(b, 76).unwrap_or(0)),
        (true, false) => u64::from(be16(b, 80).unwrap_or(0)),
        (false, true) => be64(b, 24).unwrap_or(0),
        (false, false) => u64::from(be32(b, 76).unwrap_or(0)),
    }
}

/// The first `n` records of a bmbt leaf.
fn recs_of(b: &[u8], hdr: usize, n: usize) -> Vec<Rec> {
    (0..n)
        .map(|i| Rec::parse(b, hdr.saturating_add(i.saturating_mul(16))))
        .collect()
}

/// Allocates one block near `hint` in AG `agno` for `owner` (the AG
/// store's near allocator, with its free-list fix-up and reverse mapping).
pub type Alloc<'x> = dyn FnMut(u32, u32, RmapOwner) -> EditResult<Option<u32>> + 'x;

/// Edits inode forks for the intents being finished.
pub struct ForkEditor<'a, R: ReadAt> {
    fs: &'a Fs<R>,
    base: &'a Overlay,
    /// Inodes changed: byte offset -> the whole inode.
    inodes: BTreeMap<u64, Vec<u8>>,
    /// bmbt blocks changed: byte offset -> the whole block.
    blocks: BTreeMap<u64, Vec<u8>>,
    /// Attribute leaf blocks changed: byte offset -> the whole block.
    attr_blocks: BTreeMap<u64, Vec<u8>>,
    /// Blocks written as they are (remote attr values: no LSN to stamp).
    raw_blocks: BTreeMap<u64, Vec<u8>>,
    /// Intents' extents finished.
    pub done: u64,
    /// Inodes whose change count has risen since they were loaded: their
    /// i_version is no longer marked queried, so only a log of the core
    /// raises it again (see [`ForkEditor::finish`]).
    bumped: std::collections::BTreeSet<u64>,
    /// How the inode is first logged in the transaction being finished:
    /// `Some(true)` its core, `Some(false)` only its bmbt root (a key
    /// update under the root in the inode).
    first_log: Option<bool>,
    /// bmbt blocks let go of by the extent being finished (a fork back
    /// to a list): freed as deferred work after its reverse mappings.
    /// `true`: freed before the reverse mappings of the pieces (a block a
    /// join lets go of mid-delete), else after (a leaf a fork back to a
    /// list lets go of at the end of the step).
    let_go: Vec<(u32, u32, Rmap, bool, usize)>,
    /// The step of the unmap being finished (`__xfs_bunmapi` calls, one
    /// transaction each) that blocks let go of now belong to.
    step: usize,
    /// Steps after the first of the unmap being finished that log the
    /// inode's core before its bmbt root.
    later_core_steps: u64,
    /// bmbt blocks invalidated (their buffers logged as cancelled): bytes
    /// of each.
    invalidated: Vec<usize>,
}

impl<'a, R: ReadAt> ForkEditor<'a, R> {
    pub fn new(fs: &'a Fs<R>, base: &'a Overlay) -> Self {
        ForkEditor {
            fs,
            base,
            inodes: BTreeMap::new(),
            blocks: BTreeMap::new(),
            attr_blocks: BTreeMap::new(),
            raw_blocks: BTreeMap::new(),
            done: 0,
            bumped: std::collections::BTreeSet::new(),
            first_log: None,
            let_go: Vec::new(),
            step: 0,
            later_core_steps: 0,
            invalidated: Vec::new(),
        }
    }

    pub(super) fn read(&self, what: &'static str, off: u64, len: usize) -> EditResult<Vec<u8>> {
        if let Some(b) = self
            .inodes
            .get(&off)
            .or_else(|| self.blocks.get(&off))
            .or_else(|| self.attr_blocks.get(&off))
        {
            if b.len() == len {
                return Ok(b.clone());
            }
        }
        let len64 = u64::try_from(len).unwrap_or(u64::MAX);
        let mut b = self.fs.img.read_disk(what, off, len64)?;
        self.base.apply_to(off, &mut b);
        Ok(b)
    }

    pub(super) fn fs(&self) -> &'a Fs<R> {
        self.fs
    }

    /// An inode as this editor sees it (its own changes first): where it
    /// is and its bytes, checked to be the inode numbered `ino`.
    pub(super) fn inode(&self, ino: u64) -> EditResult<(u64, Vec<u8>)> {
        let g = &self.fs.geo;
        // An owner that is no inode number is the intent's fault: refused,
        // so that the rest of the replay goes on.
        let ioff = match self.fs.inode_offset(Ino(ino)) {
            Ok(o) => o,
            Err(e) => return refuse(format!("owner {ino}: {e}")),
        };
        let isize = usize::from(g.inodesize);
        let bytes = self.read("inode", ioff, isize)?;
        if be16(&bytes, 0) != Some(0x494e) {
            return refuse(format!("inode {ino} has no inode magic"));
        }
        let version = bytes.get(4).copied().unwrap_or(0);
        if g.v5 && (version != 3 || be64(&bytes, 152) != Some(ino)) {
            return refuse(format!("inode {ino} is not the v3 inode numbered {ino}"));
        }
        Ok((ioff, bytes))
    }

    /// How many inodes this editor has changed.
    pub fn inodes_changed(&self) -> usize {
        self.inodes.len()
    }

    /// A bmbt block of `f`'s inode (at byte `off`, block `fsb`) leaves the
    /// tree: its buffer is invalidated (nothing of it written), di_nblocks
    /// drops by one, and it is freed later, before the extent's reverse
    /// mappings or after them (see [`Self::with_let_go`]).
    fn let_go_of(&mut self, f: &mut ForkAt, off: u64, fsb: u64, before_rmaps: bool) {
        let ino = be64(&f.bytes, 152).unwrap_or(0);
        self.blocks.remove(&off);
        self.invalidated
            .push(usize::try_from(self.fs.geo.blocksize).unwrap_or(0));
        let nb = be64(&f.bytes, 64).unwrap_or(0).saturating_sub(1);
        put_be64(&mut f.bytes, 64, nb);
        let (agno, agbno) = self.fs.geo.split_fsb(FsBlock(fsb));
        let m = Rmap {
            start: agbno.0,
            len: 1,
            owner: ino,
            offset: 0,
            attr: f.attr,
            bmbt: true,
            unwritten: false,
        };
        self.let_go
            .push((agno.0, agbno.0, m, before_rmaps, self.step));
    }

    /// The deferred work of one extent, a list per transaction (`w` holds
    /// one item per step), with the bmbt blocks each step let go of
    /// (freed later, xfs_free_extent_later): a joined leaf before the
    /// reverse mappings (the btree delete comes before them in
    /// xfs_bmap_del_extent_real and xfs_bmapi_remap), a leaf given up for
    /// a list after them.
    fn with_let_go(&mut self, w: Vec<Work>) -> Vec<Vec<Work>> {
        let let_go = std::mem::take(&mut self.let_go);
        let steps = let_go
            .iter()
            .map(|l| l.4.saturating_add(1))
            .max()
            .unwrap_or(0)
            .max(w.len());
        let mut w = w.into_iter();
        (0..steps)
            .map(|step| {
                let free = |first: bool| {
                    let_go
                        .iter()
                        .filter(move |l| l.3 == first && l.4 == step)
                        .map(|&(agno, agbno, m, _, _)| Work::Free {
                            agno,
                            agbno,
                            len: 1,
                            owner: FreeOwner::Known(m),
                        })
                };
                let mut t: Vec<Work> = free(true).collect();
                t.extend(w.next());
                t.extend(free(false));
                t
            })
            .collect()
    }

    /// Keep a changed attribute leaf block until [`Self::into_changes`].
    pub(super) fn put_attr_block(&mut self, off: u64, bytes: Vec<u8>) {
        self.attr_blocks.insert(off, bytes);
    }

    /// A block written as it is (a remote attr value).
    pub(super) fn put_raw_block(&mut self, off: u64, bytes: Vec<u8>) {
        self.raw_blocks.insert(off, bytes);
    }

    /// An attribute leaf block given up and invalidated (`xfs_trans_binval`):
    /// nothing of it is written.
    pub(super) fn drop_attr_block(&mut self, off: u64) {
        self.attr_blocks.remove(&off);
    }

    /// Inode `ino` (at byte `ioff`) logged: its change count raised by
    /// `bumps` (v3), its core upgraded as logging it does, kept until
    /// [`Self::into_changes`].
    pub(super) fn log_inode(&mut self, ino: u64, ioff: u64, mut b: Vec<u8>, bumps: u64) {
        if bumps > 0 {
            if b.get(4) == Some(&3) {
                let cc = be64(&b, 104).unwrap_or(0).wrapping_add(bumps);
                put_be64(&mut b, 104, cc);
            }
            self.bumped.insert(ino);
        }
        super::inode::upgrade_logged_core(self.fs, &mut b);
        self.inodes.insert(ioff, b);
    }

    fn fork(&self, ino: u64, attr: bool) -> EditResult<ForkAt> {
        let g = &self.fs.geo;
        let (ioff, bytes) = self.inode(ino)?;
        let isize = usize::from(g.inodesize);
        let version = bytes.get(4).copied().unwrap_or(0);
        let core = if version == 3 { 176 } else { 100 };
        let forkoff = usize::from(bytes.get(82).copied().unwrap_or(0)).saturating_mul(8);
        let literal = isize.saturating_sub(core);
        if forkoff > literal {
            return refuse(format!(
                "inode {ino}: fork offset {forkoff} beyond the inode"
            ));
        }
        let flags2 = if version == 3 {
            be64(&bytes, 120).unwrap_or(0)
        } else {
            0
        };
        let (fork_off, fork_len, format, nextents) = if attr {
            if forkoff == 0 {
                return refuse(format!("inode {ino} has no attr fork"));
            }
            let n = extent_count(&bytes, true);
            (
                core.saturating_add(forkoff),
                literal.saturating_sub(forkoff),
                bytes.get(83).copied().unwrap_or(0),
                n,
            )
        } else {
            let n = extent_count(&bytes, false);
            (
                core,
                if forkoff == 0 { literal } else { forkoff },
                bytes.get(5).copied().unwrap_or(0),
                n,
            )
        };
        Ok(ForkAt {
            ioff,
            bytes,
            fork_off,
            fork_len,
            format,
            nextents,
            attr,
            reflink: flags2 & XFS_DIFLAG2_REFLINK != 0,
        })
    }

    /// Finish one extent of a BUI; returns the reverse-mapping work it
    /// defers.
    pub fn finish(&mut self, x: &MapExtent, alloc: &mut Alloc<'_>) -> EditResult<Vec<Vec<Work>>> {
        let attr = x.flags & XFS_BMAP_EXTENT_ATTR_FORK != 0;
        let unwritten = x.flags & XFS_BMAP_EXTENT_UNWRITTEN != 0;
        if x.flags & XFS_BMAP_EXTENT_REALTIME != 0 {
            return refuse("a realtime bmap update is not done by this tool".into());
        }
        let len = u64::from(x.len);
        if len == 0 || len > XFS_MAX_BMBT_EXTLEN {
            return refuse(format!("bmap update of {len} blocks"));
        }
        let g = &self.fs.geo;
        let (agno, agbno) = g.split_fsb(FsBlock(x.startblock));
        let end_ok = agbno.0.checked_add(x.len).is_some_and(|e| e <= g.agblocks);
        if g.fsb_to_daddr(FsBlock(x.startblock)).is_none() || !end_ok {
            return refuse(format!(
                "bmap update: fsblock {} + {len} is outside the filesystem",
                x.startblock
            ));
        }
        let mut f = self.fork(x.owner, attr)?;
        // xfs_bmapi_remap logs the core before anything else; __xfs_bunmapi
        // logs it at the end, after the btree's own logging.
        self.first_log = (x.flags & 0xff == 1).then_some(true);
        self.step = 0;
        let rmap = |off: u64, start: u32, n: u32| Rmap {
            start,
            len: n,
            owner: x.owner,
            offset: off,
            attr,
            bmbt: false,
            unwritten,
        };
        let shared = f.reflink && !attr;
        let mut extra_steps = 0u64;
        let out = match x.flags & 0xff {
            1 => {
                let new = Rec {
                    off: x.startoff,
                    start: x.startblock,
                    len,
                    unwritten,
                };
                self.map(&mut f, new, alloc)?;
                let nb = be64(&f.bytes, 64).unwrap_or(0).saturating_add(len);
                put_be64(&mut f.bytes, 64, nb);
                let w = vec![Work::RmapMap {
                    agno: agno.0,
                    m: rmap(x.startoff, agbno.0, x.len),
                    shared,
                }];
                self.with_let_go(w)
            }
            2 => {
                self.later_core_steps = 0;
                let pieces = self.unmap(&mut f, x.startoff, len, alloc)?;
                // __xfs_bunmapi unmaps one extent per call; what is left
                // of the range goes on in a later transaction of the
                // deferred work. Such a step raises the change count when
                // it logs the core first (a step that first logs only the
                // bmbt root does not: the count is no longer marked
                // queried); a last step that finds only a hole below the
                // last piece logs nothing, and the roll after it logs the
                // core.
                let lowest = pieces.last().map(|p| p.off);
                let hole_step = u64::from(lowest.is_some_and(|l| l > x.startoff));
                extra_steps = self.later_core_steps.saturating_add(hole_step);
                if pieces.is_empty() {
                    // Nothing mapped there: the inode is not logged.
                    self.done = self.done.saturating_add(1);
                    return Ok(Vec::new());
                }
                let gone: u64 = pieces.iter().fold(0, |a, p| a.saturating_add(p.len));
                let nb = be64(&f.bytes, 64).unwrap_or(0).saturating_sub(gone);
                put_be64(&mut f.bytes, 64, nb);
                let mut w = Vec::new();
                for p in pieces {
                    let (pa, pb) = g.split_fsb(FsBlock(p.start));
                    w.push(Work::RmapUnmap {
                        agno: pa.0,
                        m: Rmap {
                            unwritten: p.unwritten,
                            ..rmap(p.off, pb.0, u32::try_from(p.len).unwrap_or(u32::MAX))
                        },
                        shared,
                    });
                }
                self.with_let_go(w)
            }
            t => return refuse(format!("bmap update type {t}")),
        };
        // The recovery transaction's first log of the inode raises its
        // change count when it logs the core (xfs_trans_log_inode forces
        // the i_version bump), or, when it logs only the bmbt root, if
        // the count has not risen since the inode was loaded (the load
        // marks it queried).
        let first_root_only = self.first_log == Some(false);
        if f.bytes.get(4) == Some(&3) {
            let first = u64::from(!first_root_only || !self.bumped.contains(&x.owner));
            let cc = be64(&f.bytes, 104)
                .unwrap_or(0)
                .wrapping_add(first)
                .wrapping_add(extra_steps);
            put_be64(&mut f.bytes, 104, cc);
        }
        self.bumped.insert(x.owner);
        super::inode::upgrade_logged_core(self.fs, &mut f.bytes);
        self.inodes.insert(f.ioff, f.bytes);
        self.done = self.done.saturating_add(1);
        Ok(out)
    }

    /// The change count of an inode this editor changed, set to `cc` (a
    /// transaction that logged the inode more than once raised it once).
    pub(super) fn set_change_count(&mut self, ino: u64, cc: u64) -> EditResult<()> {
        let off = self.fs.inode_offset(Ino(ino))?;
        if let Some(b) = self.inodes.get_mut(&off) {
            if b.get(4) == Some(&3) {
                put_be64(b, 104, cc);
            }
        }
        Ok(())
    }

    /// Add `n` to the change count of an inode this editor changed.
    pub fn bump_change_count(&mut self, ino: u64, n: u64) -> EditResult<()> {
        if n > 0 {
            self.bumped.insert(ino);
        }
        let off = self.fs.inode_offset(Ino(ino))?;
        if let Some(b) = self.inodes.get_mut(&off) {
            if b.get(4) == Some(&3) {
                let cc = be64(b, 104).unwrap_or(0).wrapping_add(n);
                put_be64(b, 104, cc);
            }
        }
        Ok(())
    }

    /// xfs_bmap_add_extent_hole_real.
    fn map(&mut self, f: &mut ForkAt, new: Rec, alloc: &mut Alloc<'_>) -> EditResult<()> {
        match f.format {
            XFS_DINODE_FMT_EXTENTS => {
                let mut recs = self.list(f)?;
                let i = recs.partition_point(|r| r.off < new.off);
                let left = i.checked_sub(1).and_then(|j| recs.get(j)).copied();
                let right = recs.get(i).copied();
                hole_check(left, right, new)?;
                let (lc, rc) = contiguity(left, right, new);
                match (lc, rc, left, right) {
                    (true, true, Some(l), Some(r)) => {
                        if let Some(x) = recs.get_mut(i.saturating_sub(1)) {
                            x.len = l.len.saturating_add(new.len).saturating_add(r.len);
                        }
                        recs.remove(i);
                    }
                    (true, false, Some(l), _) => {
                        if let Some(x) = recs.get_mut(i.saturating_sub(1)) {
                            x.len = l.len.saturating_add(new.len);
                        }
                    }
                    (false, true, _, Some(r)) => {
                        if let Some(x) = recs.get_mut(i) {
                            *x = Rec {
                                off: new.off,
                                start: new.start,
                                len: new.len.saturating_add(r.len),
                                unwritten: r.unwritten,
                            };
                        }
                    }
                    _ => recs.insert(i, new),
                }
                if u64::try_from(recs.len()).unwrap_or(u64::MAX) > f.maxext() {
                    return self.extents_to_btree(f, &recs, alloc);
                }
                self.put_list(f, &recs)
            }
            XFS_DINODE_FMT_BTREE => self.map_btree(f, new, alloc),
            fmt => refuse(format!(
                "a mapping into a fork of format {fmt} (no mappings): the kernel fails the mount"
            )),
        }
    }

    /// xfs_bmap_extents_to_btree: the records no longer fit the inode, so
    /// they move to a new bmbt leaf allocated near the inode, and the fork
    /// becomes a one-level root pointing at it (the bytes of the old list
    /// that the root does not cover stay, as the kernel's flush leaves
    /// them).
    fn extents_to_btree(
        &mut self,
        f: &mut ForkAt,
        recs: &[Rec],
        alloc: &mut Alloc<'_>,
    ) -> EditResult<()> {
        let g = &self.fs.geo;
        let ino = be64(&f.bytes, 152).unwrap_or(0);
        let (hdr, maxrecs, root_max) = self.bmbt_geometry(f);
        if recs.len() > maxrecs || root_max == 0 {
            return refuse(format!("{} extents do not fit one bmbt leaf", recs.len()));
        }
        if !g.v5 {
            return refuse("a bmbt for a v4 inode is not made by this tool".into());
        }
        // The inode's own block is the target (XFS_INO_TO_FSB).
        let shift = u32::from(g.agblklog).saturating_add(u32::from(g.inopblog));
        let agno = u32::try_from(ino.checked_shr(shift).unwrap_or(0)).unwrap_or(u32::MAX);
        let agino_mask = 1u64.checked_shl(shift).unwrap_or(0).saturating_sub(1);
        let hint = u32::try_from((ino & agino_mask) >> g.inopblog).unwrap_or(0);
        let (fsb, off) = self.alloc_bmbt_block(f, ino, agno, hint, "leaf", alloc)?;
        let mut b = self.new_leaf(off, ino, recs.len(), u64::MAX, u64::MAX);
        for (k, r) in recs.iter().enumerate() {
            r.put(&mut b, hdr.saturating_add(k.saturating_mul(16)));
        }
        self.blocks.insert(off, b);
        // The root in the inode: level 1, one key, one pointer.
        let root = f.fork_off;
        put_be16(&mut f.bytes, root, 1);
        put_be16(&mut f.bytes, root.saturating_add(2), 1);
        put_be64(
            &mut f.bytes,
            root.saturating_add(4),
            recs.first().map_or(0, |r| r.off),
        );
        put_be64(
            &mut f.bytes,
            root.saturating_add(4)
                .saturating_add(root_max.saturating_mul(8)),
            fsb,
        );
        let fmt_at = if f.attr { 83 } else { 5 };
        if let Some(x) = f.bytes.get_mut(fmt_at) {
            *x = XFS_DINODE_FMT_BTREE;
        }
        f.format = XFS_DINODE_FMT_BTREE;
        f.nextents_set(u64::try_from(recs.len()).unwrap_or(u64::MAX))
    }

    /// xfs_bmbt_alloc_block: one block for `f`'s bmbt in AG `agno` near
    /// `hint` (the allocator adds its reverse mapping); di_nblocks grows by
    /// one and the inode core is logged. The block and its byte offset.
    fn alloc_bmbt_block(
        &mut self,
        f: &mut ForkAt,
        ino: u64,
        agno: u32,
        hint: u32,
        what: &str,
        alloc: &mut Alloc<'_>,
    ) -> EditResult<(u64, u64)> {
        let owner = RmapOwner {
            owner: ino,
            offset: 0,
            attr_fork: f.attr,
            bmbt_block: true,
        };
        let Some(agbno) = alloc(agno, hint, owner)? else {
            return refuse(format!("AG {agno}: no free block for the new bmbt {what}"));
        };
        self.first_log.get_or_insert(true);
        let nb = be64(&f.bytes, 64).unwrap_or(0).saturating_add(1);
        put_be64(&mut f.bytes, 64, nb);
        let fsb = u64::from(agno)
            .checked_shl(u32::from(self.fs.geo.agblklog))
            .unwrap_or(0)
            | u64::from(agbno);
        Ok((fsb, self.block_off("bmbt block", fsb)?))
    }

    /// A new v5 bmbt leaf at byte offset `off` (a zeroed buffer, as the
    /// kernel gets one): header with `n` records and the siblings given.
    fn new_leaf(&self, off: u64, ino: u64, n: usize, left: u64, right: u64) -> Vec<u8> {
        self.new_block(off, ino, 0, n, left, right)
    }

    /// A new v5 bmbt block of `level` (see [`Self::new_leaf`]).
    fn new_block(
        &self,
        off: u64,
        ino: u64,
        level: u16,
        n: usize,
        left: u64,
        right: u64,
    ) -> Vec<u8> {
        let bs = usize::try_from(self.fs.geo.blocksize).unwrap_or(0);
        let mut b = vec![0u8; bs];
        put_be32(&mut b, 0, XFS_BMAP_CRC_MAGIC);
        put_be16(&mut b, 4, level);
        put_be16(&mut b, 6, u16::try_from(n).unwrap_or(u16::MAX));
        put_be64(&mut b, 8, left);
        put_be64(&mut b, 16, right);
        put_be64(&mut b, 24, off / 512);
        if let Some(d) = b.get_mut(40..56) {
            d.copy_from_slice(&self.fs.meta_uuid());
        }
        put_be64(&mut b, 56, ino);
        b
    }

    /// xfs_btree_split of a full leaf whose siblings are full too: a new
    /// leaf is allocated near it (xfs_bmbt_alloc_block: the split block is
    /// the target; one more block in di_nblocks, its reverse mapping
    /// added), the upper half of the records moves there (one more when
    /// the count is odd and the new record goes into the lower half), the
    /// sibling pointers are linked, `new` goes into whichever half holds
    /// its place, and the new leaf's key and pointer go into the parent
    /// after the old one's ([`Self::insert_entry`]).
    #[allow(clippy::too_many_arguments)]
    fn split_leaf(
        &mut self,
        f: &mut ForkAt,
        ino: u64,
        path: &[Step],
        off: u64,
        mut b: Vec<u8>,
        mut recs: Vec<Rec>,
        i: usize,
        new: Rec,
        alloc: &mut Alloc<'_>,
    ) -> EditResult<()> {
        let g = self.fs.geo;
        let (hdr, maxrecs, _) = self.bmbt_geometry(f);
        if !g.v5 {
            return refuse("a bmbt split on a v4 filesystem is not done by this tool".into());
        }
        // The split block's own address is the allocation target.
        let left_fsb = self.child_ptr(f, path)?;
        let (agno, hint) = g.split_fsb(FsBlock(left_fsb));
        let (new_fsb, new_off) = self.alloc_bmbt_block(f, ino, agno.0, hint.0, "leaf", alloc)?;
        let keep = split_keep(recs.len(), i);
        let mut moved = recs.split_off(keep);
        let old_right = self.link_right(ino, &mut b, 0, new_fsb, maxrecs)?;
        let new_key = moved.first().map_or(0, |r| r.off);
        // The new record goes where its place is.
        if i > keep {
            moved.insert(i.saturating_sub(keep), new);
        } else {
            recs.insert(i, new);
        }
        let mut nbuf = self.new_leaf(new_off, ino, moved.len(), left_fsb, old_right);
        for (k, r) in moved.iter().enumerate() {
            r.put(&mut nbuf, hdr.saturating_add(k.saturating_mul(16)));
        }
        self.blocks.insert(new_off, nbuf);
        f.nextents_set(f.nextents.saturating_add(1))?;
        // The split leaf keeps the lower half (its key follows a new first
        // record) before the parent takes the new leaf's entry.
        self.write_leaf(f, path, off, b, &recs)?;
        self.insert_after(f, ino, path, (new_key, new_fsb), alloc)
    }

    /// The entry of a block split off the one at the end of `path` goes
    /// into the parent right after that one's ([`Self::insert_entry`]).
    fn insert_after(
        &mut self,
        f: &mut ForkAt,
        ino: u64,
        path: &[Step],
        entry: (u64, u64),
        alloc: &mut Alloc<'_>,
    ) -> EditResult<()> {
        let Some(parent) = path.len().checked_sub(2).and_then(|p| path.get(p)).copied() else {
            return refuse(format!("inode {ino}: a bmbt block without a parent"));
        };
        let prefix = path.get(..path.len().saturating_sub(1)).unwrap_or(&[]);
        self.insert_entry(f, ino, prefix, parent.idx.saturating_add(1), entry, alloc)
    }

    /// A new block `new_fsb` becomes the right sibling of block `b` (at
    /// `level`): `b`'s old right sibling, if any, points back at it.
    /// Returns that old right sibling (or null).
    fn link_right(
        &mut self,
        ino: u64,
        b: &mut [u8],
        level: u16,
        new_fsb: u64,
        maxrecs: usize,
    ) -> EditResult<u64> {
        let old_right = be64(b, 16).unwrap_or(u64::MAX);
        put_be64(b, 16, new_fsb);
        if old_right != u64::MAX {
            let (roff, mut rb, _) = self.bmbt_block(ino, old_right, level, maxrecs)?;
            put_be64(&mut rb, 8, new_fsb);
            self.blocks.insert(roff, rb);
        }
        Ok(old_right)
    }

    /// The key/pointer array of a bmbt node block holding `maxrecs`.
    fn node_pairs(&self, maxrecs: usize) -> Pairs {
        let (hdr, _) = self.hdr_bs();
        Pairs {
            count_at: 6,
            keys: hdr,
            max: maxrecs,
        }
    }

    /// The key/pointer array of `f`'s root in the inode.
    fn root_pairs(&self, f: &ForkAt) -> Pairs {
        let (_, _, root_max) = self.bmbt_geometry(f);
        Pairs {
            count_at: f.fork_off.saturating_add(2),
            keys: f.fork_off.saturating_add(4),
            max: root_max,
        }
    }

    /// The entries (key, pointer) of a bmbt node block.
    fn node_entries(&self, b: &[u8], maxrecs: usize) -> Vec<(u64, u64)> {
        self.node_pairs(maxrecs).read(b)
    }

    /// Write a node block's entries (count, keys, pointers; what lay past
    /// them stays) and carry a changed first key up `path` (which ends
    /// with the node's step).
    fn write_node(
        &mut self,
        f: &mut ForkAt,
        path: &[Step],
        off: u64,
        mut b: Vec<u8>,
        entries: &[(u64, u64)],
    ) -> EditResult<()> {
        let (hdr, maxrecs, _) = self.bmbt_geometry(f);
        let old_first = be64(&b, hdr).unwrap_or(0);
        self.node_pairs(maxrecs).write(&mut b, entries);
        self.blocks.insert(off, b);
        match entries.first() {
            Some((first, _)) if *first != old_first => self.carry_first_key(f, path, *first),
            _ => Ok(()),
        }
    }

    /// The path to the bmbt block at byte `off`, `level` levels above the
    /// leaves, whose first key is `first` (reached by sibling pointers),
    /// checked to end there.
    fn path_to_level(
        &self,
        f: &ForkAt,
        ino: u64,
        level: usize,
        first: u64,
        off: u64,
    ) -> EditResult<Vec<Step>> {
        let (mut path, _) = self.descend(f, ino, first)?;
        path.truncate(path.len().saturating_sub(level));
        if path.last().and_then(|s| s.block) != Some(off) {
            return refuse(format!(
                "inode {ino}: bmbt keys do not lead to the level {level} block whose first key is {first}"
            ));
        }
        Ok(path)
    }

    /// A sibling node block (`right` or left) of the node `b` at `level`,
    /// checked: its byte offset, bytes and entries.
    #[allow(clippy::type_complexity)]
    fn node_sibling(
        &self,
        ino: u64,
        b: &[u8],
        level: usize,
        right: bool,
        maxrecs: usize,
    ) -> EditResult<Option<(u64, Vec<u8>, Vec<(u64, u64)>)>> {
        let sib = be64(b, if right { 16 } else { 8 }).unwrap_or(u64::MAX);
        if sib == u64::MAX {
            return Ok(None);
        }
        let lvl = u16::try_from(level).unwrap_or(u16::MAX);
        let (off, sb, _) = self.bmbt_block(ino, sib, lvl, maxrecs)?;
        let e = self.node_entries(&sb, maxrecs);
        Ok(Some((off, sb, e)))
    }

    /// xfs_btree_insrec of `entry` (key, pointer of a new child) at index
    /// `at` of the node at the end of `path`: the root in the inode takes
    /// it when it has room, else moves into a new node block allocated
    /// near its first child, which takes it (xfs_btree_new_iroot: the root
    /// keeps one entry, a level higher); a node block takes it when it has
    /// room, else makes room as xfs_btree_make_block_unfull does (its last
    /// entry to the right sibling unless the new one goes last, else its
    /// first to the left sibling unless the new one goes first, else a
    /// split like a leaf's, whose new block's key and pointer go one level
    /// up in turn).
    fn insert_entry(
        &mut self,
        f: &mut ForkAt,
        ino: u64,
        path: &[Step],
        at: usize,
        entry: (u64, u64),
        alloc: &mut Alloc<'_>,
    ) -> EditResult<()> {
        let g = self.fs.geo;
        let (_, maxrecs, root_max) = self.bmbt_geometry(f);
        let (_, bs) = self.hdr_bs();
        let Some(step) = path.last().copied() else {
            return refuse(format!("inode {ino}: a bmbt insert above the root"));
        };
        let Some(noff) = step.block else {
            let root = f.fork_off;
            let rp = self.root_pairs(f);
            let nroot = usize::from(be16(&f.bytes, rp.count_at).unwrap_or(0));
            if nroot > root_max || at > nroot {
                return refuse(format!(
                    "inode {ino}: bmbt root with {nroot} records in room for {root_max}"
                ));
            }
            let mut entries = rp.read(&f.bytes);
            entries.insert(at, entry);
            if nroot < root_max {
                rp.write(&mut f.bytes, &entries);
                return Ok(());
            }
            // xfs_btree_new_iroot: the full root moves into a new node
            // block (allocated near its first child), which takes the new
            // entry; the root keeps one entry, a level higher.
            let first_child = rp.read(&f.bytes).first().map_or(0, |e| e.1);
            let (nagno, nhint) = g.split_fsb(FsBlock(first_child));
            let (node_fsb, node_off) =
                self.alloc_bmbt_block(f, ino, nagno.0, nhint.0, "node", alloc)?;
            let level = be16(&f.bytes, root).unwrap_or(1);
            let mut node = self.new_block(node_off, ino, level, 0, u64::MAX, u64::MAX);
            self.node_pairs(maxrecs).write(&mut node, &entries);
            self.blocks.insert(node_off, node);
            put_be16(&mut f.bytes, root, level.saturating_add(1));
            put_be16(&mut f.bytes, rp.count_at, 1);
            put_be64(&mut f.bytes, rp.ptr_at(0), node_fsb);
            return Ok(());
        };
        let nb = self.read("bmbt block", noff, bs)?;
        let node_level = usize::from(be16(&nb, 4).unwrap_or(0));
        let mut entries = self.node_entries(&nb, maxrecs);
        let n = entries.len();
        if at > n || node_level == 0 {
            return refuse(format!(
                "inode {ino}: bmbt node entry {at} of {n} at level {node_level}"
            ));
        }
        if n < maxrecs {
            entries.insert(at, entry);
            return self.write_node(f, path, noff, nb, &entries);
        }
        // xfs_btree_rshift: not when the new entry goes at or past the last.
        if at.saturating_add(1) < n {
            if let Some((roff, rb, mut re)) = self
                .node_sibling(ino, &nb, node_level, true, maxrecs)?
                .filter(|s| s.2.len() < maxrecs)
            {
                let rfirst = re.first().map_or(0, |e| e.0);
                let rpath = self.path_to_level(f, ino, node_level, rfirst, roff)?;
                let Some(last) = entries.pop() else {
                    return refuse("empty bmbt node".into());
                };
                re.insert(0, last);
                self.write_node(f, &rpath, roff, rb, &re)?;
                entries.insert(at, entry);
                return self.write_node(f, path, noff, nb, &entries);
            }
        }
        // xfs_btree_lshift: not when the new entry goes first.
        if at >= 1 {
            if let Some((loff, lb, mut le)) = self
                .node_sibling(ino, &nb, node_level, false, maxrecs)?
                .filter(|s| s.2.len() < maxrecs)
            {
                let lfirst = le.first().map_or(0, |e| e.0);
                let lpath = self.path_to_level(f, ino, node_level, lfirst, loff)?;
                let first = entries.remove(0);
                le.push(first);
                self.write_node(f, &lpath, loff, lb, &le)?;
                entries.insert(at.saturating_sub(1), entry);
                return self.write_node(f, path, noff, nb, &entries);
            }
        }
        // xfs_btree_split of the node.
        let left_fsb = self.child_ptr(f, path)?;
        let (agno, hint) = g.split_fsb(FsBlock(left_fsb));
        let (new_fsb, new_off) = self.alloc_bmbt_block(f, ino, agno.0, hint.0, "node", alloc)?;
        let keep = split_keep(n, at);
        let mut moved = entries.split_off(keep);
        let mut nb = nb;
        let lvl = u16::try_from(node_level).unwrap_or(u16::MAX);
        let old_right = self.link_right(ino, &mut nb, lvl, new_fsb, maxrecs)?;
        let new_key = moved.first().map_or(0, |e| e.0);
        if at > keep {
            moved.insert(at.saturating_sub(keep), entry);
        } else {
            entries.insert(at, entry);
        }
        let mut rbuf = self.new_block(new_off, ino, lvl, 0, left_fsb, old_right);
        self.node_pairs(maxrecs).write(&mut rbuf, &moved);
        self.blocks.insert(new_off, rbuf);
        // The node keeps the lower half before the parent takes the new
        // node's entry.
        self.write_node(f, path, noff, nb, &entries)?;
        self.insert_after(f, ino, path, (new_key, new_fsb), alloc)
    }

    /// The mapping of the data or attr fork at file block `off`, at most
    /// `max` blocks, as `xfs_bmapi_read` returns one: the record that holds
    /// `off` cut to start there, or the hole up to the next record.
    pub(super) fn mapping_at(
        &self,
        ino: u64,
        attr: bool,
        off: u64,
        max: u64,
    ) -> EditResult<Mapping> {
        let f = self.fork(ino, attr)?;
        let next = match f.format {
            XFS_DINODE_FMT_EXTENTS => self.list(&f)?.into_iter().find(|r| r.end() > off),
            XFS_DINODE_FMT_BTREE => {
                let (_, maxrecs, _) = self.bmbt_geometry(&f);
                let (_, leaf) = self.descend(&f, ino, off)?;
                match leaf.recs.iter().find(|r| r.end() > off) {
                    Some(r) => Some(*r),
                    None => self
                        .sibling(ino, &leaf.bytes, true, maxrecs)?
                        .and_then(|l| l.recs.first().copied()),
                }
            }
            t => {
                return refuse(format!(
                    "inode {ino}: {} fork of format {t} has no mappings to read: the kernel fails the mount",
                    if attr { "an attr" } else { "a data" }
                ))
            }
        };
        Ok(match next {
            Some(r) if r.off <= off => Mapping {
                off,
                len: r.end().saturating_sub(off).min(max),
                start: Some(r.start.saturating_add(off.saturating_sub(r.off))),
                unwritten: r.unwritten,
            },
            Some(r) => Mapping {
                off,
                len: r.off.saturating_sub(off).min(max),
                start: None,
                unwritten: false,
            },
            None => Mapping {
                off,
                len: max,
                start: None,
                unwritten: false,
            },
        })
    }

    /// The attr fork's extent records (a list or a bmbt's).
    pub(super) fn attr_extents(&self, ino: u64) -> EditResult<Vec<Rec>> {
        let f = self.fork(ino, true)?;
        self.records(&f, ino)
    }

    /// The data fork's extent records (a list or a bmbt's).
    pub(super) fn data_extents(&self, ino: u64) -> EditResult<Vec<Rec>> {
        let f = self.fork(ino, false)?;
        self.records(&f, ino)
    }

    /// The records of fork `f`: its list, or its bmbt's leaves from the
    /// leftmost along the right siblings, as many as the fork counts, in
    /// order.
    fn records(&self, f: &ForkAt, ino: u64) -> EditResult<Vec<Rec>> {
        if f.format == XFS_DINODE_FMT_EXTENTS {
            return self.list(f);
        }
        if f.format != XFS_DINODE_FMT_BTREE {
            return refuse(format!(
                "inode {ino}: a fork of format {} has no extents",
                f.format
            ));
        }
        let (_, maxrecs, _) = self.bmbt_geometry(f);
        let (_, mut leaf) = self.descend(f, ino, 0)?;
        let mut recs = std::mem::take(&mut leaf.recs);
        let limit = usize::try_from(f.nextents).unwrap_or(usize::MAX);
        let mut seen = std::collections::BTreeSet::from([leaf.off]);
        while let Some(mut next) = self.sibling(ino, &leaf.bytes, true, maxrecs)? {
            if !seen.insert(next.off) {
                return refuse(format!(
                    "inode {ino}: the bmbt leaves' sibling pointers loop"
                ));
            }
            if recs.len() >= limit {
                return refuse(format!(
                    "inode {ino}: the bmbt leaves hold more than the {limit} records the fork counts"
                ));
            }
            recs.append(&mut next.recs);
            leaf = next;
        }
        if recs.len() != limit {
            return refuse(format!(
                "inode {ino}: the bmbt leaves hold {} records, the fork counts {limit}",
                recs.len()
            ));
        }
        if recs.windows(2).any(|w| match w {
            [a, b] => a.end() > b.off,
            _ => false,
        }) {
            return refuse(format!(
                "inode {ino}: the bmbt's records overlap or are out of order"
            ));
        }
        Ok(recs)
    }

    /// `rec` mapped into the attr fork as `xfs_bmap_add_extent_hole_real`
    /// maps it (merged with contiguous neighbours; a full list turned into
    /// a bmbt, a full leaf split, their blocks from `alloc`); di_nblocks
    /// grows by its length; the inode is logged.
    pub(super) fn attr_map(&mut self, ino: u64, rec: Rec, alloc: &mut Alloc<'_>) -> EditResult<()> {
        let mut f = self.fork(ino, true)?;
        if f.format != XFS_DINODE_FMT_EXTENTS && f.format != XFS_DINODE_FMT_BTREE {
            return refuse(format!(
                "inode {ino}: a mapping into an attr fork of format {}",
                f.format
            ));
        }
        self.map(&mut f, rec, alloc)?;
        let nb = be64(&f.bytes, 64).unwrap_or(0).saturating_add(rec.len);
        put_be64(&mut f.bytes, 64, nb);
        self.log_inode(ino, f.ioff, f.bytes, 1);
        Ok(())
    }

    /// One call of `__xfs_bunmapi` with one extent allowed, on the attr
    /// fork's range `[off, end)`: the last extent in it is cut out (a
    /// record trimmed, split or removed; in a bmbt, a leaf left short
    /// rebalanced, a tree whose records fit the inode again turned back
    /// into a list, the blocks let go of freed later, see
    /// [`Self::take_let_go`]); di_nblocks drops by what left; the inode is
    /// logged. Returns the piece and whether more of the range is still
    /// mapped; `None` (nothing logged) when none of it is.
    pub(super) fn attr_unmap_last(
        &mut self,
        ino: u64,
        off: u64,
        end: u64,
    ) -> EditResult<Option<(Rec, bool)>> {
        let mut f = self.fork(ino, true)?;
        let piece = if f.format == XFS_DINODE_FMT_BTREE {
            let mut no_split = |_: u32, _: u32, _: RmapOwner| -> EditResult<Option<u32>> {
                refuse(format!(
                    "inode {ino}: an attr block cut out of the middle of an extent in a full bmbt leaf"
                ))
            };
            self.step = 0;
            let Some(piece) = self.unmap_btree_one(&mut f, off, end, &mut no_split)? else {
                return Ok(None);
            };
            if f.nextents <= f.maxext() {
                self.btree_to_extents(&mut f)?;
            }
            piece
        } else {
            let mut recs = self.records(&f, ino)?;
            let Some(i) = recs.iter().rposition(|r| r.off < end && r.end() > off) else {
                return Ok(None);
            };
            let Some(r) = recs.get(i).copied() else {
                return Ok(None);
            };
            let (front, piece, back) = r.cut(off, end);
            recs.remove(i);
            if back.len > 0 {
                recs.insert(i, back);
            }
            if front.len > 0 {
                recs.insert(i, front);
            }
            self.put_list(&mut f, &recs)?;
            piece
        };
        let more = self
            .records(&f, ino)?
            .iter()
            .any(|r| r.off < piece.off && r.end() > off);
        let nb = be64(&f.bytes, 64).unwrap_or(0).saturating_sub(piece.len);
        put_be64(&mut f.bytes, 64, nb);
        let bumps = u64::from(!self.root_logged_first(ino));
        self.log_inode(ino, f.ioff, f.bytes, bumps);
        Ok(Some((piece, more)))
    }

    /// A new transaction begins: how it first logs an inode is not known
    /// yet (see [`Self::root_logged_first`]).
    pub(super) fn begin_transaction(&mut self) {
        self.first_log = None;
    }

    /// Whether the transaction under way first logged `ino` through its
    /// bmbt root only (a key carried up) after its change count last rose:
    /// such a transaction does not raise the count again (the count is no
    /// longer marked queried; only a log of the core forces it).
    pub(super) fn root_logged_first(&self, ino: u64) -> bool {
        self.first_log == Some(false) && self.bumped.contains(&ino)
    }

    /// The frees of the bmbt blocks an attr-fork unmap let go of: those
    /// before its reverse mapping (joined leaves) and those after it (a
    /// leaf given up for a list).
    pub(super) fn take_let_go(&mut self) -> (Vec<Work>, Vec<Work>) {
        let mut before = Vec::new();
        let mut after = Vec::new();
        for (agno, agbno, m, first, _) in std::mem::take(&mut self.let_go) {
            let free = Work::Free {
                agno,
                agbno,
                len: 1,
                owner: FreeOwner::Known(m),
            };
            if first {
                before.push(free);
            } else {
                after.push(free);
            }
        }
        (before, after)
    }

    /// The record list of an extents-format fork.
    fn list(&self, f: &ForkAt) -> EditResult<Vec<Rec>> {
        if f.nextents > f.maxext() {
            return refuse(format!(
                "{} extents do not fit the fork ({} bytes)",
                f.nextents, f.fork_len
            ));
        }
        let n = usize::try_from(f.nextents).unwrap_or(0);
        let recs: Vec<Rec> = (0..n)
            .map(|i| Rec::parse(&f.bytes, f.fork_off.saturating_add(i.saturating_mul(16))))
            .collect();
        if recs
            .windows(2)
            .any(|w| matches!(w, [a, b] if a.end() > b.off))
        {
            return refuse("the fork's extents overlap or are out of order".into());
        }
        Ok(recs)
    }

    fn put_list(&self, f: &mut ForkAt, recs: &[Rec]) -> EditResult<()> {
        let n = u64::try_from(recs.len()).unwrap_or(u64::MAX);
        if n > f.maxext() {
            return refuse(format!(
                "an unmap would leave {n} extents, more than the inode holds: the kernel converts the fork to a bmbt there, which this tool does not"
            ));
        }
        for (i, r) in recs.iter().enumerate() {
            r.put(
                &mut f.bytes,
                f.fork_off.saturating_add(i.saturating_mul(16)),
            );
        }
        f.nextents_set(n)
    }

    /// bmbt block header bytes and block size.
    fn hdr_bs(&self) -> (usize, usize) {
        (
            if self.fs.geo.v5 { 72 } else { 24 },
            usize::try_from(self.fs.geo.blocksize).unwrap_or(0),
        )
    }

    /// (header bytes, records or key/pointer pairs a block holds, pairs
    /// the root in the inode holds).
    fn bmbt_geometry(&self, f: &ForkAt) -> (usize, usize, usize) {
        let (hdr, bs) = self.hdr_bs();
        let root_max = f.fork_len.saturating_sub(4) / 16;
        (hdr, bs.saturating_sub(hdr) / 16, root_max)
    }

    /// A bmbt block of inode `ino` read and checked (magic, level, record
    /// count, owner): its byte offset, bytes and record count.
    fn bmbt_block(
        &self,
        ino: u64,
        fsb: u64,
        level: u16,
        maxrecs: usize,
    ) -> EditResult<(u64, Vec<u8>, usize)> {
        let (_, bs) = self.hdr_bs();
        let off = self.block_off("bmbt block", fsb)?;
        let b = self.read("bmbt block", off, bs)?;
        let magic = be32(&b, 0).unwrap_or(0);
        let want_magic = if self.fs.geo.v5 {
            XFS_BMAP_CRC_MAGIC
        } else {
            XFS_BMAP_MAGIC
        };
        let lvl = be16(&b, 4).unwrap_or(u16::MAX);
        let nr = usize::from(be16(&b, 6).unwrap_or(0));
        if magic != want_magic || lvl != level || nr == 0 || nr > maxrecs {
            return refuse(format!(
                "inode {ino}: bmbt block {fsb}: magic {magic:#x} level {lvl} records {nr}"
            ));
        }
        if self.fs.geo.v5 && be64(&b, 56) != Some(ino) {
            return refuse(format!("inode {ino}: bmbt block {fsb} has another owner"));
        }
        Ok((off, b, nr))
    }

    /// The byte offset of block `fsb` (a `what`), refused outside the
    /// filesystem.
    pub(super) fn block_off(&self, what: &str, fsb: u64) -> EditResult<u64> {
        match self
            .fs
            .geo
            .fsb_to_daddr(FsBlock(fsb))
            .and_then(|d| d.byte_offset())
        {
            Some(o) => Ok(o),
            None => refuse(format!("{what} {fsb} is outside the filesystem")),
        }
    }

    /// Walk from the root to the leaf whose range holds `key`: the path
    /// (ending with the leaf's step) and the leaf with its records.
    fn descend(&self, f: &ForkAt, ino: u64, key: u64) -> EditResult<(Vec<Step>, Leaf)> {
        let (hdr, maxrecs, root_max) = self.bmbt_geometry(f);
        let root = f.fork_off;
        let level = be16(&f.bytes, root).unwrap_or(0);
        let n = usize::from(be16(&f.bytes, root.saturating_add(2)).unwrap_or(0));
        if level == 0 || level > MAX_LEVELS || n == 0 || n > root_max {
            return refuse(format!(
                "inode {ino}: bmbt root with level {level} and {n} records"
            ));
        }
        // The last key <= `key`, else the first.
        let pick = |b: &[u8], keys: usize, n: usize| -> usize {
            (0..n)
                .rev()
                .find(|&j| {
                    be64(b, keys.saturating_add(j.saturating_mul(8))).unwrap_or(u64::MAX) <= key
                })
                .unwrap_or(0)
        };
        let i = pick(&f.bytes, root.saturating_add(4), n);
        let mut ptr = be64(
            &f.bytes,
            root.saturating_add(4)
                .saturating_add(root_max.saturating_mul(8))
                .saturating_add(i.saturating_mul(8)),
        )
        .unwrap_or(0);
        let mut path = vec![Step {
            block: None,
            idx: i,
        }];
        // Levels below the root, each checked; at most MAX_LEVELS.
        for want in (0..level).rev() {
            let (off, b, nr) = self.bmbt_block(ino, ptr, want, maxrecs)?;
            if want == 0 {
                path.push(Step {
                    block: Some(off),
                    idx: 0,
                });
                let recs = recs_of(&b, hdr, nr);
                return Ok((
                    path,
                    Leaf {
                        off,
                        bytes: b,
                        recs,
                    },
                ));
            }
            let i = pick(&b, hdr, nr);
            path.push(Step {
                block: Some(off),
                idx: i,
            });
            ptr = be64(
                &b,
                hdr.saturating_add(maxrecs.saturating_mul(8))
                    .saturating_add(i.saturating_mul(8)),
            )
            .unwrap_or(0);
        }
        refuse(format!("inode {ino}: bmbt without a leaf"))
    }

    /// A sibling leaf of `leaf` (`right` or left), checked, or `None` at
    /// the end of its level.
    fn sibling(
        &self,
        ino: u64,
        leaf: &[u8],
        right: bool,
        maxrecs: usize,
    ) -> EditResult<Option<Leaf>> {
        let (hdr, _) = self.hdr_bs();
        let sib = be64(leaf, if right { 16 } else { 8 }).unwrap_or(u64::MAX);
        if sib == u64::MAX {
            return Ok(None);
        }
        let (off, b, nr) = self.bmbt_block(ino, sib, 0, maxrecs)?;
        let recs = recs_of(&b, hdr, nr);
        Ok(Some(Leaf {
            off,
            bytes: b,
            recs,
        }))
    }

    /// The path down to a leaf reached by sibling pointers (first record
    /// at `first`, at byte offset `off`), checked to end there.
    fn path_to(&self, f: &ForkAt, ino: u64, first: u64, off: u64) -> EditResult<Vec<Step>> {
        let (path, _) = self.descend(f, ino, first)?;
        if path.last().and_then(|s| s.block) != Some(off) {
            return refuse(format!(
                "inode {ino}: bmbt keys do not lead to the sibling leaf whose first record is at {first}"
            ));
        }
        Ok(path)
    }

    /// The path to, and the leaf of, the leaf whose first record is `r`.
    fn leaf_led_by(&self, f: &ForkAt, ino: u64, r: Rec) -> EditResult<(Vec<Step>, Leaf)> {
        let (path, leaf) = self.descend(f, ino, r.off)?;
        if leaf.recs.first() != Some(&r) {
            return refuse(format!(
                "inode {ino}: bmbt keys do not lead to the record at {}",
                r.off
            ));
        }
        Ok((path, leaf))
    }

    /// Write a leaf's records back (count and records), and the keys above
    /// it when its first record's offset changed.
    fn put_leaf(
        &mut self,
        f: &mut ForkAt,
        path: &[Step],
        off: u64,
        b: Vec<u8>,
        recs: &[Rec],
    ) -> EditResult<()> {
        let (_, maxrecs, _) = self.bmbt_geometry(f);
        if recs.len() > maxrecs {
            return refuse(
                "the bmbt leaf is full: the kernel splits it, which this tool does not".into(),
            );
        }
        if recs.is_empty() {
            return refuse("the bmbt leaf would be empty".into());
        }
        let old_n = usize::from(be16(&b, 6).unwrap_or(0));
        let siblings = be64(&b, 8) != Some(u64::MAX) || be64(&b, 16) != Some(u64::MAX);
        if recs.len() < old_n && recs.len() < maxrecs / 2 && siblings {
            return refuse(
                "the bmbt leaf falls below half full: the kernel joins or rebalances it, which this tool does not"
                    .into(),
            );
        }
        self.write_leaf(f, path, off, b, recs)
    }

    /// [`Self::put_leaf`] without the checks.
    fn write_leaf(
        &mut self,
        f: &mut ForkAt,
        path: &[Step],
        off: u64,
        mut b: Vec<u8>,
        recs: &[Rec],
    ) -> EditResult<()> {
        let (hdr, _, _) = self.bmbt_geometry(f);
        let old_first = Rec::parse(&b, hdr).off;
        put_be16(&mut b, 6, u16::try_from(recs.len()).unwrap_or(u16::MAX));
        for (i, r) in recs.iter().enumerate() {
            r.put(&mut b, hdr.saturating_add(i.saturating_mul(16)));
        }
        // What lay past the records stays as it was, as in the kernel.
        self.blocks.insert(off, b);
        let first = recs.first().map_or(old_first, |r| r.off);
        if first != old_first {
            self.carry_first_key(f, path, first)?;
        }
        Ok(())
    }

    /// A record updated in place at index `i` of the leaf at the end of
    /// `path` whose start stays `first`: at the leaf's first record,
    /// `xfs_btree_update` passes the key up all the same, logging the
    /// parent's key slot (the root in the inode logs the root alone, before
    /// anything else of the inode: no change count bump on an inode whose
    /// count has risen since it was loaded).
    fn first_record_updated(
        &mut self,
        f: &mut ForkAt,
        path: &[Step],
        i: usize,
        first: u64,
    ) -> EditResult<()> {
        if i == 0 {
            self.carry_first_key(f, path, first)?;
        }
        Ok(())
    }

    /// The key of the block at the end of `path` becomes `first` in each
    /// parent while the block is its parent's first child (a key in the
    /// root in the inode logs the root).
    fn carry_first_key(&mut self, f: &mut ForkAt, path: &[Step], first: u64) -> EditResult<()> {
        let (hdr, _, _) = self.bmbt_geometry(f);
        let (_, bs) = self.hdr_bs();
        for lvl in (0..path.len().saturating_sub(1)).rev() {
            let Some(step) = path.get(lvl).copied() else {
                break;
            };
            match step.block {
                None => {
                    let at = f
                        .fork_off
                        .saturating_add(4)
                        .saturating_add(step.idx.saturating_mul(8));
                    put_be64(&mut f.bytes, at, first);
                    self.first_log.get_or_insert(false);
                }
                Some(boff) => {
                    let mut nb = self.read("bmbt block", boff, bs)?;
                    put_be64(
                        &mut nb,
                        hdr.saturating_add(step.idx.saturating_mul(8)),
                        first,
                    );
                    self.blocks.insert(boff, nb);
                }
            }
            if step.idx != 0 {
                break;
            }
        }
        Ok(())
    }

    fn map_btree(&mut self, f: &mut ForkAt, new: Rec, alloc: &mut Alloc<'_>) -> EditResult<()> {
        let ino = be64(&f.bytes, 152).unwrap_or(0);
        let (_, maxrecs, _) = self.bmbt_geometry(f);
        let (path, leaf) = self.descend(f, ino, new.off)?;
        let Leaf {
            off,
            bytes: b,
            mut recs,
        } = leaf;
        let i = recs.partition_point(|r| r.off < new.off);
        let left = match i.checked_sub(1) {
            Some(j) => recs.get(j).copied(),
            None => self
                .sibling(ino, &b, false, maxrecs)?
                .and_then(|l| l.recs.last().copied()),
        };
        let right = match recs.get(i) {
            Some(r) => Some(*r),
            None => self
                .sibling(ino, &b, true, maxrecs)?
                .and_then(|l| l.recs.first().copied()),
        };
        hole_check(left, right, new)?;
        let (lc, rc) = contiguity(left, right, new);
        let in_leaf_left = i > 0;
        let in_leaf_right = i < recs.len();
        let n = f.nextents;
        match (lc, rc, left, right) {
            (true, true, Some(l), Some(r)) if in_leaf_left => {
                // xfs_bmap_add_extent_hole_real, both contiguous: the right
                // record is deleted (here or first in the right sibling; a
                // leaf left short rebalances), then the left one grows.
                if in_leaf_right {
                    recs.remove(i);
                    self.write_leaf(f, &path, off, b, &recs)?;
                    self.rebalance(f, ino, &path, off)?;
                } else {
                    let (rpath, rleaf) = self.leaf_led_by(f, ino, r)?;
                    let rest = rleaf.recs.get(1..).unwrap_or(&[]).to_vec();
                    if rest.is_empty() {
                        return refuse("the bmbt leaf would be empty".into());
                    }
                    self.write_leaf(f, &rpath, rleaf.off, rleaf.bytes, &rest)?;
                    self.rebalance(f, ino, &rpath, rleaf.off)?;
                }
                f.nextents_set(n.saturating_sub(1))?;
                let (lpath, lleaf) = self.descend(f, ino, l.off)?;
                let mut lrecs = lleaf.recs;
                let Some(j) = lrecs.iter().position(|x| x.off == l.off) else {
                    return refuse(format!(
                        "inode {ino}: bmbt keys do not lead to the record at {}",
                        l.off
                    ));
                };
                if let Some(x) = lrecs.get_mut(j) {
                    x.len = l.len.saturating_add(new.len).saturating_add(r.len);
                }
                self.first_record_updated(f, &lpath, j, l.off)?;
                self.write_leaf(f, &lpath, lleaf.off, lleaf.bytes, &lrecs)?;
                if f.nextents <= f.maxext() {
                    // xfs_bmapi_remap ends with xfs_bmap_btree_to_extents.
                    self.btree_to_extents(f)?;
                }
                return Ok(());
            }
            (true, false, Some(l), _) if in_leaf_left => {
                let j = i.saturating_sub(1);
                if let Some(x) = recs.get_mut(j) {
                    x.len = l.len.saturating_add(new.len);
                }
                self.first_record_updated(f, &path, j, l.off)?;
            }
            (false, true, _, Some(r)) if in_leaf_right => {
                if let Some(x) = recs.get_mut(i) {
                    *x = Rec {
                        off: new.off,
                        start: new.start,
                        len: new.len.saturating_add(r.len),
                        unwritten: r.unwritten,
                    };
                }
            }
            (false, true, _, Some(r)) => {
                // The right neighbour is the right sibling's first record:
                // it grows down to the new start (its key follows).
                let (rpath, rleaf) = self.leaf_led_by(f, ino, r)?;
                let mut rrecs = rleaf.recs;
                if let Some(x) = rrecs.first_mut() {
                    *x = Rec {
                        off: new.off,
                        start: new.start,
                        len: new.len.saturating_add(r.len),
                        unwritten: r.unwritten,
                    };
                }
                return self.write_leaf(f, &rpath, rleaf.off, rleaf.bytes, &rrecs);
            }
            (false, false, _, _) => {
                let mut i = i;
                if recs.len() >= maxrecs {
                    match self.make_room(f, ino, &b, &mut recs, i)? {
                        Some(at) => i = at,
                        None => return self.split_leaf(f, ino, &path, off, b, recs, i, new, alloc),
                    }
                }
                recs.insert(i, new);
                f.nextents_set(n.saturating_add(1))?;
            }
            _ => {
                return refuse(
                    "the mapping merges with a record in a neighbouring bmbt leaf, which this tool does not do"
                        .into(),
                )
            }
        }
        if f.nextents <= f.maxext() {
            return refuse(
                "the extents fit the inode again: the kernel converts the bmbt back to a list, which this tool does not"
                    .into(),
            );
        }
        self.put_leaf(f, &path, off, b, &recs)
    }

    /// A full leaf makes room as xfs_btree_make_block_unfull does: its
    /// last record moves to the right sibling (unless the new record goes
    /// at the end), else its first to the left sibling (unless the new
    /// record goes first). Returns the insertion index afterwards, or
    /// `None` when neither sibling has room (the leaf must split).
    fn make_room(
        &mut self,
        f: &mut ForkAt,
        ino: u64,
        leaf: &[u8],
        recs: &mut Vec<Rec>,
        i: usize,
    ) -> EditResult<Option<usize>> {
        let (_, maxrecs, _) = self.bmbt_geometry(f);
        let n = recs.len();
        // xfs_btree_rshift: not when the insertion point is at or past
        // the last record.
        if i.saturating_add(1) < n {
            if let Some(Leaf {
                off: roff,
                bytes: rb,
                recs: mut rrecs,
            }) = self
                .sibling(ino, leaf, true, maxrecs)?
                .filter(|l| l.recs.len() < maxrecs)
            {
                let Some(last) = recs.pop() else {
                    return refuse("empty leaf".into());
                };
                let rpath = self.path_to(f, ino, rrecs.first().map_or(0, |r| r.off), roff)?;
                rrecs.insert(0, last);
                self.put_leaf(f, &rpath, roff, rb, &rrecs)?;
                return Ok(Some(i));
            }
        }
        // xfs_btree_lshift: not when the new record goes first.
        if i >= 1 {
            if let Some(Leaf {
                off: loff,
                bytes: lb,
                recs: mut lrecs,
            }) = self
                .sibling(ino, leaf, false, maxrecs)?
                .filter(|l| l.recs.len() < maxrecs)
            {
                let first = recs.remove(0);
                let lpath = self.path_to(f, ino, lrecs.first().map_or(0, |r| r.off), loff)?;
                lrecs.push(first);
                self.put_leaf(f, &lpath, loff, lb, &lrecs)?;
                return Ok(Some(i.saturating_sub(1)));
            }
        }
        Ok(None)
    }

    /// __xfs_bunmapi(REMAP) over `[off, off + len)`: the pieces unmapped,
    /// last first.
    fn unmap(
        &mut self,
        f: &mut ForkAt,
        off: u64,
        len: u64,
        alloc: &mut Alloc<'_>,
    ) -> EditResult<Vec<Rec>> {
        if f.format == XFS_DINODE_FMT_BTREE {
            return self.unmap_btree(f, off, len, alloc);
        }
        if f.format != XFS_DINODE_FMT_EXTENTS {
            return refuse(format!(
                "an unmap from a fork of format {} (no mappings): the kernel fails the mount",
                f.format
            ));
        }
        let mut recs = self.list(f)?;
        let end = off.saturating_add(len);
        let mut pieces = Vec::new();
        let mut i = recs.len();
        while i > 0 {
            i = i.saturating_sub(1);
            let Some(r) = recs.get(i).copied() else {
                break;
            };
            if r.off >= end {
                continue;
            }
            if r.end() <= off {
                break;
            }
            let (front, piece, back) = r.cut(off, end);
            pieces.push(piece);
            recs.remove(i);
            if back.len > 0 {
                recs.insert(i, back);
            }
            if front.len > 0 {
                recs.insert(i, front);
            }
        }
        // Every step on a list logs the core (no root to log first).
        self.later_core_steps = u64::try_from(pieces.len().saturating_sub(1)).unwrap_or(0);
        if u64::try_from(recs.len()).unwrap_or(u64::MAX) > f.maxext() {
            // A cut in the middle of an extent of a full list: __xfs_bunmapi
            // converts the fork to a bmbt (xfs_bmap_extents_to_btree).
            if pieces.len() != 1 {
                return refuse(
                    "an unmap of several extents that overflows the list is not done by this tool"
                        .into(),
                );
            }
            self.extents_to_btree(f, &recs, alloc)?;
            return Ok(pieces);
        }
        self.put_list(f, &recs)?;
        Ok(pieces)
    }

    /// __xfs_bunmapi (REMAP) on a bmbt: the records in the range, last
    /// first (xfs_bmap_del_extent_real): each is deleted, trimmed at one
    /// end (a new first record's key goes up), or, for a range in its
    /// middle, cut to the front part with the back part inserted after it
    /// (a full leaf making room, or splitting, as for a mapping); a leaf
    /// left below half full is rebalanced ([`Self::rebalance`]); a one-leaf
    /// tree that fits the inode again becomes a list.
    fn unmap_btree(
        &mut self,
        f: &mut ForkAt,
        off: u64,
        len: u64,
        alloc: &mut Alloc<'_>,
    ) -> EditResult<Vec<Rec>> {
        let mut pieces = Vec::new();
        let mut end = off.saturating_add(len);
        // Each step removes one piece; at most one per record the fork has.
        let limit = f.nextents.saturating_add(1);
        let mut first_step_log = None;
        while end > off && u64::try_from(pieces.len()).unwrap_or(u64::MAX) < limit {
            let step = pieces.len();
            self.step = step;
            if step > 0 {
                self.first_log = None;
            }
            match self.unmap_btree_one(f, off, end, alloc)? {
                Some(p) => {
                    end = p.off;
                    pieces.push(p);
                }
                None => break,
            }
            if step == 0 {
                first_step_log = self.first_log;
            } else if self.first_log != Some(false) {
                self.later_core_steps = self.later_core_steps.saturating_add(1);
            }
            if f.nextents <= f.maxext() {
                // xfs_bmap_wants_extents at the end of the step; what is
                // left of the range goes on on the list, a step (which logs
                // the core) per extent.
                self.btree_to_extents(f)?;
                if end > off {
                    let later = self.later_core_steps;
                    let more = self.unmap(f, off, end.saturating_sub(off), alloc)?;
                    self.later_core_steps =
                        later.saturating_add(u64::try_from(more.len()).unwrap_or(u64::MAX));
                    pieces.extend(more);
                }
                break;
            }
        }
        self.first_log = first_step_log;
        Ok(pieces)
    }

    /// The end of xfs_btree_delrec for a leaf that fell below half full: a
    /// record borrowed from the right sibling (its first, when it can
    /// spare one), else from the left (its last), else the leaf joined
    /// with its left sibling, else with its right (the emptied block freed
    /// later, its key and pointer taken out of the parent, the siblings
    /// relinked; see [`Self::parent_delete`]). With no sibling nothing
    /// moves.
    fn rebalance(&mut self, f: &mut ForkAt, ino: u64, path: &[Step], off: u64) -> EditResult<()> {
        let (hdr, maxrecs, _) = self.bmbt_geometry(f);
        let minrecs = maxrecs / 2;
        let (_, bs) = self.hdr_bs();
        let b = self.read("bmbt block", off, bs)?;
        let ours = recs_of(&b, hdr, usize::from(be16(&b, 6).unwrap_or(0)));
        let n = ours.len();
        if n >= minrecs {
            return Ok(());
        }
        let left = self.sibling(ino, &b, false, maxrecs)?;
        let right = self.sibling(ino, &b, true, maxrecs)?;
        if left.is_none() && right.is_none() {
            return Ok(());
        }
        let mut ours = ours;
        // Borrow the right sibling's first record.
        if let Some(r) = right
            .as_ref()
            .filter(|r| r.recs.len().saturating_sub(1) >= minrecs)
        {
            let rpath = self.path_to(f, ino, r.recs.first().map_or(0, |x| x.off), r.off)?;
            let mut rr = r.recs.clone();
            let moved = rr.remove(0);
            ours.push(moved);
            self.write_leaf(f, path, off, b, &ours)?;
            return self.write_leaf(f, &rpath, r.off, r.bytes.clone(), &rr);
        }
        // Borrow the left sibling's last record.
        if let Some(l) = left
            .as_ref()
            .filter(|l| l.recs.len().saturating_sub(1) >= minrecs)
        {
            let lpath = self.path_to(f, ino, l.recs.first().map_or(0, |x| x.off), l.off)?;
            let mut lr = l.recs.clone();
            let Some(moved) = lr.pop() else {
                return refuse("empty leaf".into());
            };
            self.write_leaf(f, &lpath, l.off, l.bytes.clone(), &lr)?;
            ours.insert(0, moved);
            return self.write_leaf(f, path, off, b, &ours);
        }
        // Join: what survives takes the other's records and right sibling;
        // the other is freed and leaves its parent.
        let (keep_off, mut keep, keep_fsb, gone_path, next, merged) = match (left, right) {
            (Some(l), _) if l.recs.len().saturating_add(n) <= maxrecs => {
                let fsb = be64(&b, 8).unwrap_or(0);
                let next = be64(&b, 16).unwrap_or(u64::MAX);
                let mut m = l.recs.clone();
                m.extend_from_slice(&ours);
                (l.off, l.bytes, fsb, path.to_vec(), next, m)
            }
            (_, Some(r)) if r.recs.len().saturating_add(n) <= maxrecs => {
                let next = be64(&r.bytes, 16).unwrap_or(u64::MAX);
                let rpath = self.path_to(f, ino, r.recs.first().map_or(0, |x| x.off), r.off)?;
                let our_fsb = be64(&r.bytes, 8).unwrap_or(0);
                let mut m = ours.clone();
                m.extend_from_slice(&r.recs);
                (off, b, our_fsb, rpath, next, m)
            }
            _ => return Ok(()),
        };
        put_be16(
            &mut keep,
            6,
            u16::try_from(merged.len()).unwrap_or(u16::MAX),
        );
        for (k, r) in merged.iter().enumerate() {
            r.put(&mut keep, hdr.saturating_add(k.saturating_mul(16)));
        }
        put_be64(&mut keep, 16, next);
        self.blocks.insert(keep_off, keep);
        if next != u64::MAX {
            let (noff, mut nb, _) = self.bmbt_block(ino, next, 0, maxrecs)?;
            put_be64(&mut nb, 8, keep_fsb);
            self.blocks.insert(noff, nb);
        }
        let Some(gone_off) = gone_path.last().and_then(|s| s.block) else {
            return refuse(format!("inode {ino}: a bmbt join without a block"));
        };
        let gone_fsb = self.child_ptr(f, &gone_path)?;
        // xfs_bmbt_free_block: freed later, di_nblocks - 1, the core logged.
        self.first_log.get_or_insert(true);
        self.let_go_of(f, gone_off, gone_fsb, true);
        self.parent_delete(f, ino, &gone_path)
    }

    /// The block pointer the parent of the last step of `path` holds for it.
    fn child_ptr(&self, f: &ForkAt, path: &[Step]) -> EditResult<u64> {
        let (_, maxrecs, _) = self.bmbt_geometry(f);
        let (_, bs) = self.hdr_bs();
        let Some(parent) = path.len().checked_sub(2).and_then(|i| path.get(i)) else {
            return refuse("a bmbt block without a parent".into());
        };
        Ok(match parent.block {
            None => be64(&f.bytes, self.root_pairs(f).ptr_at(parent.idx)).unwrap_or(0),
            Some(poff) => {
                let pb = self.read("bmbt block", poff, bs)?;
                be64(&pb, self.node_pairs(maxrecs).ptr_at(parent.idx)).unwrap_or(0)
            }
        })
    }

    /// xfs_btree_delrec one level up from a block that left the tree (the
    /// last step of `path`): its key and pointer leave the parent (what
    /// lay past the last entry stays). The root in the inode then tries to
    /// take in its only child ([`Self::kill_iroot`]). A node block whose
    /// first entry went passes its new first key up; one left below half
    /// full borrows an entry from its right sibling (when it can spare
    /// one), else from its left, else joins its left sibling, else its
    /// right (the emptied block freed later and taken out of its parent in
    /// turn); one with no sibling, right under the root, moves into the
    /// inode when its entries fit there.
    fn parent_delete(&mut self, f: &mut ForkAt, ino: u64, path: &[Step]) -> EditResult<()> {
        let (_, maxrecs, _) = self.bmbt_geometry(f);
        let (_, bs) = self.hdr_bs();
        let minrecs = maxrecs / 2;
        let Some(pi) = path.len().checked_sub(2) else {
            return refuse("a bmbt block without a parent".into());
        };
        let Some(parent) = path.get(pi).copied() else {
            return refuse("a bmbt block without a parent".into());
        };
        let gone = parent.idx;
        let Some(noff) = parent.block else {
            let rp = self.root_pairs(f);
            let mut entries = rp.read(&f.bytes);
            if gone >= entries.len() {
                return refuse(format!(
                    "inode {ino}: bmbt root entry {gone} of {} cannot be taken out",
                    entries.len()
                ));
            }
            entries.remove(gone);
            rp.write(&mut f.bytes, &entries);
            return self.kill_iroot(f, ino);
        };
        let npath = path.get(..=pi).unwrap_or(&[]);
        let nb = self.read("bmbt block", noff, bs)?;
        let level = usize::from(be16(&nb, 4).unwrap_or(0));
        let mut ours = self.node_entries(&nb, maxrecs);
        if gone >= ours.len() || ours.len() < 2 {
            return refuse(format!(
                "inode {ino}: bmbt node entry {gone} of {} cannot be taken out",
                ours.len()
            ));
        }
        ours.remove(gone);
        self.write_node(f, npath, noff, nb.clone(), &ours)?;
        if ours.len() >= minrecs {
            return Ok(());
        }
        let nb = self.read("bmbt block", noff, bs)?;
        let right = self.node_sibling(ino, &nb, level, true, maxrecs)?;
        let left = self.node_sibling(ino, &nb, level, false, maxrecs)?;
        if right.is_none() && left.is_none() {
            return if npath.len() == 2 {
                self.kill_iroot(f, ino)
            } else {
                Ok(())
            };
        }
        let path_of = |me: &Self, f: &ForkAt, e: &[(u64, u64)], off: u64| {
            me.path_to_level(f, ino, level, e.first().map_or(0, |x| x.0), off)
        };
        // Borrow the right sibling's first entry.
        if let Some((roff, rb, mut re)) = right
            .clone()
            .filter(|r| r.2.len().saturating_sub(1) >= minrecs)
        {
            let rpath = path_of(self, f, &re, roff)?;
            let moved = re.remove(0);
            ours.push(moved);
            self.write_node(f, npath, noff, nb, &ours)?;
            return self.write_node(f, &rpath, roff, rb, &re);
        }
        // Borrow the left sibling's last entry.
        if let Some((loff, lb, mut le)) = left
            .clone()
            .filter(|l| l.2.len().saturating_sub(1) >= minrecs)
        {
            let lpath = path_of(self, f, &le, loff)?;
            let Some(moved) = le.pop() else {
                return refuse("empty bmbt node".into());
            };
            self.write_node(f, &lpath, loff, lb, &le)?;
            ours.insert(0, moved);
            return self.write_node(f, npath, noff, nb, &ours);
        }
        // Join: what survives takes the other's entries and right sibling;
        // the other is freed and leaves its parent.
        let lvl = u16::try_from(level).unwrap_or(u16::MAX);
        let (keep_off, keep, keep_fsb, keep_path, gone_off, gone_path, next, merged) =
            match (left, right) {
                (Some((loff, lb, le)), _) if le.len().saturating_add(ours.len()) <= maxrecs => {
                    let lpath = path_of(self, f, &le, loff)?;
                    let fsb = be64(&nb, 8).unwrap_or(0);
                    let next = be64(&nb, 16).unwrap_or(u64::MAX);
                    let mut m = le;
                    m.extend_from_slice(&ours);
                    (loff, lb, fsb, lpath, noff, npath.to_vec(), next, m)
                }
                (_, Some((roff, rb, re))) if re.len().saturating_add(ours.len()) <= maxrecs => {
                    let rpath = path_of(self, f, &re, roff)?;
                    let fsb = be64(&rb, 8).unwrap_or(0);
                    let next = be64(&rb, 16).unwrap_or(u64::MAX);
                    let mut m = ours.clone();
                    m.extend_from_slice(&re);
                    (noff, nb, fsb, npath.to_vec(), roff, rpath, next, m)
                }
                _ => return Ok(()),
            };
        let mut keep = keep;
        put_be64(&mut keep, 16, next);
        self.write_node(f, &keep_path, keep_off, keep, &merged)?;
        if next != u64::MAX {
            let (xoff, mut xb, _) = self.bmbt_block(ino, next, lvl, maxrecs)?;
            put_be64(&mut xb, 8, keep_fsb);
            self.blocks.insert(xoff, xb);
        }
        let gone_fsb = self.child_ptr(f, &gone_path)?;
        self.first_log.get_or_insert(true);
        self.let_go_of(f, gone_off, gone_fsb, true);
        self.parent_delete(f, ino, &gone_path)
    }

    /// xfs_btree_kill_iroot: a root in the inode of level 2 or more with
    /// one child whose entries fit it takes them, a level lower; the child
    /// is freed later.
    fn kill_iroot(&mut self, f: &mut ForkAt, ino: u64) -> EditResult<()> {
        let (_, maxrecs, root_max) = self.bmbt_geometry(f);
        let root = f.fork_off;
        let rp = self.root_pairs(f);
        let level = be16(&f.bytes, root).unwrap_or(0);
        let &[(_, child)] = rp.read(&f.bytes).as_slice() else {
            return Ok(());
        };
        if level < 2 {
            return Ok(());
        }
        let (coff, cb, n) = self.bmbt_block(ino, child, level.saturating_sub(1), maxrecs)?;
        if n > root_max {
            return Ok(());
        }
        rp.write(&mut f.bytes, &self.node_entries(&cb, maxrecs));
        put_be16(&mut f.bytes, root, level.saturating_sub(1));
        self.first_log.get_or_insert(true);
        self.let_go_of(f, coff, child, true);
        Ok(())
    }

    /// xfs_bmap_btree_to_extents: a one-leaf bmbt whose records fit the
    /// inode again becomes an extent list (written where the root was;
    /// what the root's bytes leave uncovered stays), the leaf is dropped
    /// unwritten (its buffer invalidated) and freed later, di_nblocks - 1.
    fn btree_to_extents(&mut self, f: &mut ForkAt) -> EditResult<()> {
        let ino = be64(&f.bytes, 152).unwrap_or(0);
        let (hdr, maxrecs, root_max) = self.bmbt_geometry(f);
        let root = f.fork_off;
        let level = be16(&f.bytes, root).unwrap_or(0);
        let n = be16(&f.bytes, root.saturating_add(2)).unwrap_or(0);
        if level != 1 || n != 1 {
            return refuse(format!(
                "inode {ino}: {} extents fit the inode again but the bmbt root has level {level} and {n} records",
                f.nextents
            ));
        }
        let fsb = be64(
            &f.bytes,
            root.saturating_add(4)
                .saturating_add(root_max.saturating_mul(8)),
        )
        .unwrap_or(0);
        let (loff, b, nr) = self.bmbt_block(ino, fsb, 0, maxrecs)?;
        let recs = recs_of(&b, hdr, nr);
        if u64::try_from(recs.len()).unwrap_or(u64::MAX) != f.nextents {
            return refuse(format!(
                "inode {ino}: the bmbt leaf holds {} records, the inode counts {}",
                recs.len(),
                f.nextents
            ));
        }
        let fmt_at = if f.attr { 83 } else { 5 };
        if let Some(x) = f.bytes.get_mut(fmt_at) {
            *x = XFS_DINODE_FMT_EXTENTS;
        }
        f.format = XFS_DINODE_FMT_EXTENTS;
        self.put_list(f, &recs)?;
        self.let_go_of(f, loff, fsb, false);
        Ok(())
    }

    /// One step of [`Self::unmap_btree`]: the last record that overlaps
    /// `[off, end)` loses the overlap, which is returned.
    fn unmap_btree_one(
        &mut self,
        f: &mut ForkAt,
        off: u64,
        end: u64,
        alloc: &mut Alloc<'_>,
    ) -> EditResult<Option<Rec>> {
        let ino = be64(&f.bytes, 152).unwrap_or(0);
        let (_, maxrecs, _) = self.bmbt_geometry(f);
        let last = end.saturating_sub(1);
        let (path, leaf) = self.descend(f, ino, last)?;
        let Leaf {
            off: loff,
            bytes: b,
            mut recs,
        } = leaf;
        // The last record that starts at or before the range's last block
        // (in this leaf, or the last of the left sibling: the descent
        // picks the leaf by key).
        let found = recs.iter().rposition(|r| r.off <= last);
        let Some((i, r)) = found.and_then(|i| recs.get(i).map(|r| (i, *r))) else {
            return Ok(None);
        };
        if r.end() <= off {
            return Ok(None);
        }
        let (front, piece, back) = r.cut(off, end);
        let n = f.nextents;
        match (front.len > 0, back.len > 0) {
            (false, false) => {
                recs.remove(i);
                f.nextents_set(n.saturating_sub(1))?;
                if recs.is_empty() {
                    return refuse("the bmbt leaf would be empty".into());
                }
                self.write_leaf(f, &path, loff, b, &recs)?;
                self.rebalance(f, ino, &path, loff)?;
                return Ok(Some(piece));
            }
            (true, false) => {
                if let Some(x) = recs.get_mut(i) {
                    *x = front;
                }
                self.first_record_updated(f, &path, i, front.off)?;
            }
            (false, true) => {
                if let Some(x) = recs.get_mut(i) {
                    *x = back;
                }
            }
            (true, true) => {
                if let Some(x) = recs.get_mut(i) {
                    *x = front;
                }
                self.first_record_updated(f, &path, i, front.off)?;
                let mut at = i.saturating_add(1);
                if recs.len() >= maxrecs {
                    match self.make_room(f, ino, &b, &mut recs, at)? {
                        Some(j) => at = j,
                        None => {
                            self.split_leaf(f, ino, &path, loff, b, recs, at, back, alloc)?;
                            return Ok(Some(piece));
                        }
                    }
                }
                recs.insert(at, back);
                f.nextents_set(n.saturating_add(1))?;
            }
        }
        self.put_leaf(f, &path, loff, b, &recs)?;
        Ok(Some(piece))
    }

    /// What the kernel logs for the changes made so far, as log items:
    /// each changed inode with the forks whose records changed, each
    /// changed bmbt or attr block by its changed chunks, each bmbt block
    /// let go of as a cancelled buffer. Remote attr values are written,
    /// not logged.
    pub fn logged(&self) -> Result<Vec<super::ckpt::Item>> {
        use super::ckpt::{buf_item, changed_chunks, inode_item, stale_buf_item, ForkLog};
        let v5 = self.fs.geo.v5;
        let before = |off: u64, len: usize| -> Result<Vec<u8>> {
            let mut b =
                self.fs
                    .img
                    .read_disk("logged block", off, u64::try_from(len).unwrap_or(0))?;
            self.base.apply_to(off, &mut b);
            Ok(b)
        };
        let mut out = Vec::new();
        for (off, b) in &self.inodes {
            let old = before(*off, b.len())?;
            let v3 = b.get(offset_of!(XfsDinode, di_version)) == Some(&3);
            let (core, dend) = fork_split(b);
            let forkoff = dend != b.len();
            let changed = |r: core::ops::Range<usize>| b.get(r.clone()) != old.get(r);
            let fork = |attr: bool, at: usize| -> Option<ForkLog> {
                let format = b
                    .get(if attr {
                        offset_of!(XfsDinode, di_aformat)
                    } else {
                        offset_of!(XfsDinode, di_format)
                    })
                    .copied();
                match format {
                    Some(1) if attr => Some(ForkLog::Local(usize::from(be16(b, at).unwrap_or(0)))),
                    Some(1) => Some(ForkLog::Local(
                        usize::try_from(be64(b, offset_of!(XfsDinode, di_size)).unwrap_or(0))
                            .unwrap_or(0),
                    )),
                    Some(2) => Some(ForkLog::Extents(extent_count(b, attr))),
                    Some(3) => Some(ForkLog::Btree(usize::from(
                        be16(b, at.saturating_add(2)).unwrap_or(0),
                    ))),
                    _ => None,
                }
            };
            let data = changed(core..dend).then(|| fork(false, core)).flatten();
            let attr = (forkoff && changed(dend..b.len()))
                .then(|| fork(true, dend))
                .flatten();
            out.push(inode_item(v3, data, attr));
        }
        for (map, stamps) in [
            (&self.blocks, [32..40, 64..68]),
            (&self.attr_blocks, [24..32, 12..16]),
        ] {
            for (off, b) in map {
                let old = before(*off, b.len())?;
                let unlogged: &[core::ops::Range<usize>] = if v5 { &stamps } else { &[] };
                out.extend(buf_item(b.len(), &changed_chunks(&old, b, unlogged)));
            }
        }
        out.extend(self.invalidated.iter().map(|n| stale_buf_item(*n)));
        Ok(out)
    }

    /// The changed inodes and bmbt blocks as (daddr, whole sectors), LSN
    /// stamped and CRCs recomputed on v5.
    pub fn into_changes(self, lsn: Lsn) -> Result<Vec<(u64, Vec<u8>)>> {
        let v5 = self.fs.geo.v5;
        let mut out = Vec::new();
        for (off, mut b) in self.blocks {
            if v5 {
                put_be64(&mut b, 32, lsn.raw());
                put_crc(&mut b, 64);
            }
            out.push((off / 512, b));
        }
        for (off, b) in self.raw_blocks {
            out.push((off / 512, b));
        }
        for (off, mut b) in self.attr_blocks {
            if v5 {
                put_be64(&mut b, 24, lsn.raw());
                put_crc(&mut b, 12);
            }
            out.push((off / 512, b));
        }
        for (off, mut b) in self.inodes {
            let mut base = self
                .fs
                .img
                .read_disk("inode", off, u64::from(self.fs.geo.inodesize))?;
            self.base.apply_to(off, &mut base);
            keep_unflushed_bytes(&mut b, &base);
            out.push(super::inode::inode_sectors(
                self.fs, self.base, off, b, lsn,
            )?);
        }
        Ok(out)
    }
}

/// Where an inode's literal area starts (after the v3 or v2 core) and where
/// its data fork ends (at `di_forkoff`, or at the inode's end without an
/// attr fork).
fn fork_split(b: &[u8]) -> (usize, usize) {
    let core = if b.get(offset_of!(XfsDinode, di_version)) == Some(&3) {
        XFS_DINODE_V3_SIZE
    } else {
        XFS_DINODE_V2_SIZE
    };
    let forkoff = usize::from(
        b.get(offset_of!(XfsDinode, di_forkoff))
            .copied()
            .unwrap_or(0),
    );
    let dend = if forkoff == 0 {
        b.len()
    } else {
        core.saturating_add(forkoff.saturating_mul(8)).min(b.len())
    };
    (core, dend)
}

/// The kernel writes an inode's forks back from memory (`xfs_iflush_fork`):
/// an extent list's records, a shortform attr list's bytes, a bmbt root's
/// header and its count of keys and pointers, and nothing past them, so
/// the rest of the literal area keeps the bytes the inode had before
/// recovery, not those of a longer list, a fuller root or a fork it held
/// on the way.
fn keep_unflushed_bytes(b: &mut [u8], base: &[u8]) {
    if base.len() != b.len() {
        return;
    }
    let (core, dend) = fork_split(b);
    let isize = b.len();
    let dn = usize::try_from(extent_count(b, false)).unwrap_or(usize::MAX);
    let an = usize::try_from(extent_count(b, true)).unwrap_or(usize::MAX);
    let aformat = b.get(83).copied();
    let atotal = usize::from(be16(b, dend).unwrap_or(0));
    let dformat = b.get(5).copied();
    let cur = b.to_vec();
    let mut keep = |from: usize, to: usize| {
        if let (Some(d), Some(s)) = (b.get_mut(from..to), base.get(from..to)) {
            d.copy_from_slice(s);
        }
    };
    // A bmbt root: its level, count, and that many keys and pointers.
    let root = |b: &[u8], keep: &mut dyn FnMut(usize, usize), at: usize, end: usize| {
        let n = usize::from(be16(b, at.saturating_add(2)).unwrap_or(0));
        let max = end.saturating_sub(at).saturating_sub(4) / 16;
        let keys = at.saturating_add(4);
        let ptrs = keys.saturating_add(max.saturating_mul(8));
        keep(keys.saturating_add(n.min(max).saturating_mul(8)), ptrs);
        keep(ptrs.saturating_add(n.min(max).saturating_mul(8)), end);
    };
    match dformat {
        Some(XFS_DINODE_FMT_EXTENTS) => {
            keep(core.saturating_add(dn.saturating_mul(16)).min(dend), dend)
        }
        Some(XFS_DINODE_FMT_BTREE) => root(&cur, &mut keep, core, dend),
        _ => {}
    }
    if dend != isize {
        match aformat {
            Some(XFS_DINODE_FMT_EXTENTS) => {
                keep(dend.saturating_add(an.saturating_mul(16)).min(isize), isize)
            }
            Some(XFS_DINODE_FMT_BTREE) => root(&cur, &mut keep, dend, isize),
            Some(1) => keep(dend.saturating_add(atotal).min(isize), isize),
            _ => {}
        }
    }
}

/// Where a bmbt key/pointer array lies: a node block and the root in the
/// inode share its layout (a count, then `max` keys, then `max` pointers)
/// in different places.
#[derive(Clone, Copy)]
struct Pairs {
    count_at: usize,
    keys: usize,
    max: usize,
}

impl Pairs {
    fn key_at(self, k: usize) -> usize {
        self.keys.saturating_add(k.saturating_mul(8))
    }

    fn ptr_at(self, k: usize) -> usize {
        self.key_at(self.max.saturating_add(k))
    }

    /// The entries (key, pointer) the count says, at most `max`.
    fn read(self, b: &[u8]) -> Vec<(u64, u64)> {
        let n = usize::from(be16(b, self.count_at).unwrap_or(0)).min(self.max);
        (0..n)
            .map(|k| {
                (
                    be64(b, self.key_at(k)).unwrap_or(0),
                    be64(b, self.ptr_at(k)).unwrap_or(0),
                )
            })
            .collect()
    }

    /// The count and entries written (what lay past them stays).
    fn write(self, b: &mut [u8], entries: &[(u64, u64)]) {
        put_be16(
            b,
            self.count_at,
            u16::try_from(entries.len()).unwrap_or(u16::MAX),
        );
        for (k, (key, ptr)) in entries.iter().enumerate() {
            put_be64(b, self.key_at(k), *key);
            put_be64(b, self.ptr_at(k), *ptr);
        }
    }
}

/// How many of `n` entries a splitting block keeps (xfs_btree_split): the
/// upper half moves, one more when `n` is odd and the new entry's place
/// `at` (0-based) is in the lower half.
fn split_keep(n: usize, at: usize) -> usize {
    let mut moved = n / 2;
    if n % 2 == 1 && at.saturating_add(1) <= moved.saturating_add(1) {
        moved = moved.saturating_add(1);
    }
    n.saturating_sub(moved)
}

/// The mapping must go into a hole.
fn hole_check(left: Option<Rec>, right: Option<Rec>, new: Rec) -> EditResult<()> {
    if left.is_some_and(|l| l.end() > new.off) || right.is_some_and(|r| r.off < new.end()) {
        return refuse(format!(
            "file blocks {}+{} are already mapped: a bmap update maps only into a hole",
            new.off, new.len
        ));
    }
    Ok(())
}

/// Whether `new` joins its left and right neighbours.
fn contiguity(left: Option<Rec>, right: Option<Rec>, new: Rec) -> (bool, bool) {
    let lc = left.is_some_and(|l| {
        l.end() == new.off
            && l.start.saturating_add(l.len) == new.start
            && l.unwritten == new.unwritten
            && l.len.saturating_add(new.len) <= XFS_MAX_BMBT_EXTLEN
    });
    let rc = right.is_some_and(|r| {
        new.end() == r.off
            && new.start.saturating_add(new.len) == r.start
            && new.unwritten == r.unwritten
            && new.len.saturating_add(r.len) <= XFS_MAX_BMBT_EXTLEN
            && (!lc
                || left.is_some_and(|l| {
                    l.len.saturating_add(new.len).saturating_add(r.len) <= XFS_MAX_BMBT_EXTLEN
                }))
    });
    (lc, rc)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::as_conversions,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]
mod fixture_tests {
    use super::super::agedit::EditError;
    use super::*;
    use crate::xfs::bmap::Fork;
    use crate::xfs::testutil::fixture_fs;

    fn x(owner: u64, startoff: u64, startblock: u64, len: u32, flags: u32) -> MapExtent {
        MapExtent {
            owner,
            startblock,
            startoff,
            len,
            flags,
            op: "test",
        }
    }

    /// Hostile or impossible bmap updates on a real filesystem are refused
    /// with a reason; nothing panics and nothing is changed.
    #[test]
    fn impossible_bmap_updates_are_refused_with_a_reason() {
        let fs = fixture_fs("v5-formats");
        let ov = Overlay::default();
        let multi = fs.lookup_path(b"/files/multi-extent").unwrap();
        let small = fs.lookup_path(b"/files/small").unwrap();
        let first = multi.data.extents()[0];
        let why = |r: EditResult<Vec<Vec<Work>>>| match r {
            Err(EditError::Unsupported(u)) => u.0,
            other => panic!("not refused: {other:?}"),
        };
        let mut ed = ForkEditor::new(&fs, &ov);
        let mut none = |_: u32, _: u32, _: RmapOwner| -> EditResult<Option<u32>> { Ok(None) };
        // Into blocks already mapped.
        let m = why(ed.finish(&x(multi.ino.0, first.file_block, 7, 1, 1), &mut none));
        assert!(m.contains("already mapped"), "{m}");
        // Outside the filesystem, no length, an unknown type, realtime.
        let m = why(ed.finish(&x(multi.ino.0, 1 << 40, u64::MAX >> 8, 1, 1), &mut none));
        assert!(m.contains("outside the filesystem"), "{m}");
        assert!(
            why(ed.finish(&x(multi.ino.0, 1 << 40, 100, 0, 1), &mut none)).contains("0 blocks")
        );
        assert!(why(ed.finish(&x(multi.ino.0, 1 << 40, 100, 1, 9), &mut none)).contains("type 9"));
        let rt = XFS_BMAP_EXTENT_REALTIME | 1;
        assert!(
            why(ed.finish(&x(multi.ino.0, 1 << 40, 100, 1, rt), &mut none)).contains("realtime")
        );
        // An inode that is not one, an attr fork that is not there.
        assert!(why(ed.finish(&x(1 << 30, 1 << 40, 100, 1, 1), &mut none)).contains("inode"));
        let af = XFS_BMAP_EXTENT_ATTR_FORK | 1;
        if small.core.forkoff == 0 {
            assert!(
                why(ed.finish(&x(small.ino.0, 0, 100, 1, af), &mut none)).contains("no attr fork")
            );
        }

        assert_eq!(ed.done, 0);
        assert!(ed.into_changes(Lsn::from_raw(1)).unwrap().is_empty());
    }

    /// Hostile bmbt blocks: replay-bui-nodes' trees of three levels (one
    /// full node; two nodes) with bytes of a node or a leaf changed at
    /// random (the header most often). Maps that split leaves and nodes
    /// and unmaps that make them borrow and join finish or are refused
    /// with a reason; none panics.
    #[test]
    #[allow(clippy::as_conversions, clippy::cast_possible_truncation)]
    fn damaged_bmbt_nodes_and_leaves_are_refused_without_panics() {
        use crate::xfs::testutil::Rng;
        let fs = fixture_fs("replay-bui-nodes");
        // node-split-end and node-join-r (see the fixture's script).
        let mut offs = Vec::new();
        for ino in [68u64, 70] {
            let inode = fs.inode(Ino(ino)).unwrap();
            let Fork::Btree { blocks, .. } = &inode.data else {
                panic!("inode {ino} has no bmbt");
            };
            for b in blocks {
                let off = fs.geo.fsb_to_daddr(*b).unwrap().byte_offset().unwrap();
                offs.push((ino, off));
            }
        }
        assert!(offs.len() > 100, "{}", offs.len());
        let bs = usize::try_from(fs.geo.blocksize).unwrap();
        let mut r = Rng(0xb7b7_0001);
        let (mut finished, mut refused) = (0, 0);
        let mut next = 20_000u32;
        for round in 0..300 {
            let (ino, off) = offs[(r.next() % offs.len() as u64) as usize];
            let mut b = fs.img.read_disk("bmbt block", off, bs as u64).unwrap();
            for _ in 0..1 + round % 5 {
                let at = if r.next() % 3 == 0 {
                    (r.next() % bs as u64) as usize
                } else {
                    (r.next() % 80) as usize
                };
                b[at] = r.next() as u8;
            }
            let mut ov = Overlay::default();
            ov.put(off / 512, &b);
            let mut ed = ForkEditor::new(&fs, &ov);
            let mut alloc = |_: u32, _: u32, _: RmapOwner| -> EditResult<Option<u32>> {
                next += 1;
                Ok(Some(next))
            };
            let op = if ino == 68 {
                x(ino, 2 * (r.next() % 3481) + 1, 9000, 1, 1)
            } else {
                let from = 2 * (r.next() % 3000);
                x(ino, from, 9000, 400, 2)
            };
            match ed.finish(&op, &mut alloc) {
                Ok(_) => finished += 1,
                Err(EditError::Unsupported(_)) | Err(EditError::Read(_)) => refused += 1,
            }
        }
        assert!(finished > 0 && refused > 0, "{finished} {refused}");
    }

    /// Unmapping everything from a bmbt with a node block: the leaves fall
    /// below half full under the node, borrow and join, the node moves
    /// into the inode, the last leaf gives way to a list. Every record
    /// goes, a step each, last first, and every bmbt block the file had
    /// is freed.
    #[test]
    fn unmapping_a_three_level_bmbt_frees_every_block() {
        let fs = fixture_fs("v5-formats");
        let ov = Overlay::default();
        let btree = fs.lookup_path(b"/files/btree").unwrap();
        let mut none = |_: u32, _: u32, _: RmapOwner| -> EditResult<Option<u32>> { Ok(None) };
        let Fork::Btree { blocks, .. } = &btree.data else {
            panic!("/files/btree has no bmbt");
        };
        let n = btree.data.extents().len();
        let end = btree.data.extents().last().unwrap().file_end();
        let mut ed = ForkEditor::new(&fs, &ov);
        // In pieces a BUI can name (its blocks inside one AG), last first.
        let mut steps = Vec::new();
        let mut at = end;
        while at > 0 {
            let from = at.saturating_sub(2048);
            let len = (at - from) as u32;
            steps.extend(
                ed.finish(&x(btree.ino.0, from, 100, len, 2), &mut none)
                    .unwrap(),
            );
            at = from;
        }
        assert_eq!(steps.len(), n);
        let unmapped: Vec<u64> = steps
            .iter()
            .flatten()
            .filter_map(|w| match w {
                Work::RmapUnmap { m, .. } => Some(m.offset),
                _ => None,
            })
            .collect();
        let mut want: Vec<u64> = btree.data.extents().iter().map(|e| e.file_block).collect();
        want.reverse();
        assert_eq!(unmapped, want);
        let mut freed: Vec<(u32, u32)> = steps
            .iter()
            .flatten()
            .filter_map(|w| match w {
                Work::Free { agno, agbno, .. } => Some((*agno, *agbno)),
                _ => None,
            })
            .collect();
        freed.sort_unstable();
        let mut had: Vec<(u32, u32)> = blocks
            .iter()
            .map(|b| {
                let (a, g) = fs.geo.split_fsb(*b);
                (a.0, g.0)
            })
            .collect();
        had.sort_unstable();
        assert_eq!(freed, had);
        let f = ed.fork(btree.ino.0, false).unwrap();
        assert_eq!((f.format, f.nextents), (XFS_DINODE_FMT_EXTENTS, 0));
        assert_eq!(be64(&f.bytes, 64), Some(0));
    }

    /// A mapping into a hole past the end of an extent list, then its
    /// unmap in two pieces: the list and the counters come back.
    #[test]
    fn map_then_unmap_restores_an_extent_list() {
        let fs = fixture_fs("v5-formats");
        let ov = Overlay::default();
        let multi = fs.lookup_path(b"/files/multi-extent").unwrap();
        let before: Vec<_> = multi.data.extents().to_vec();
        let last = *before.last().unwrap();
        let mut ed = ForkEditor::new(&fs, &ov);
        let mut none = |_: u32, _: u32, _: RmapOwner| -> EditResult<Option<u32>> { Ok(None) };
        let off = last.file_end() + 100;
        let work = ed
            .finish(&x(multi.ino.0, off, 12345, 4, 1), &mut none)
            .unwrap();
        assert!(matches!(
            work.as_slice(),
            [t] if matches!(t.as_slice(), [Work::RmapMap { m, .. }] if m.len == 4 && m.offset == off && m.owner == multi.ino.0)
        ));
        let f = ed.fork(multi.ino.0, false).unwrap();
        assert_eq!(f.nextents, before.len() as u64 + 1);
        // The middle two blocks first (a split), then the rest.
        let w = ed
            .finish(&x(multi.ino.0, off + 1, 0, 2, 2), &mut none)
            .unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(
            ed.fork(multi.ino.0, false).unwrap().nextents,
            before.len() as u64 + 2
        );
        let w = ed.finish(&x(multi.ino.0, off, 0, 4, 2), &mut none).unwrap();
        assert_eq!(w.len(), 2, "the two pieces left, last first");
        let f = ed.fork(multi.ino.0, false).unwrap();
        assert_eq!(f.nextents, before.len() as u64);
        assert_eq!(be64(&f.bytes, 64), Some(multi.core.nblocks));
        let recs = ed.list(&f).unwrap();
        let want: Vec<Rec> = before
            .iter()
            .map(|e| Rec {
                off: e.file_block,
                start: e.start.0,
                len: e.len,
                unwritten: e.unwritten,
            })
            .collect();
        assert_eq!(recs, want);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(off: u64, start: u64, len: u64) -> Rec {
        Rec {
            off,
            start,
            len,
            unwritten: false,
        }
    }

    #[test]
    fn records_round_trip_every_field() {
        let x = Rec {
            off: (1 << 54) - 2,
            start: (1 << 52) - 3,
            len: XFS_MAX_BMBT_EXTLEN,
            unwritten: true,
        };
        let mut b = vec![0u8; 16];
        x.put(&mut b, 0);
        assert_eq!(Rec::parse(&b, 0), x);
    }

    #[test]
    fn a_mapping_joins_neighbours_only_when_contiguous_on_disk_and_in_the_file() {
        let new = r(10, 110, 5);
        assert_eq!(
            contiguity(Some(r(0, 100, 10)), Some(r(15, 115, 3)), new),
            (true, true)
        );
        // A gap on disk on the left, in the file on the right.
        assert_eq!(
            contiguity(Some(r(0, 99, 10)), Some(r(16, 116, 3)), new),
            (false, false)
        );
        // Another state does not join.
        let mut u = r(15, 115, 3);
        u.unwritten = true;
        assert_eq!(contiguity(None, Some(u), new), (false, false));
        // Too long together.
        assert_eq!(
            contiguity(
                Some(r(0, 1000, XFS_MAX_BMBT_EXTLEN)),
                None,
                r(XFS_MAX_BMBT_EXTLEN, 1000 + XFS_MAX_BMBT_EXTLEN, 1)
            ),
            (false, false)
        );
        assert!(hole_check(Some(r(0, 100, 11)), None, new).is_err());
        assert!(hole_check(None, Some(r(14, 100, 1)), new).is_err());
        assert!(hole_check(Some(r(0, 100, 10)), Some(r(15, 1, 1)), new).is_ok());
    }
}
