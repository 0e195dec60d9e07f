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
//! does); for a bmbt, by the kernel's cursor steps on the one btree engine
//! (`replay/btree/`: shifts, splits, a root in the inode that moves into a
//! block and back, borrows and joins at every level). An unmap that
//! leaves a one-leaf bmbt's records fitting the inode turns the fork back
//! into a list (the leaf freed afterwards); a cut that overflows a full
//! list makes a bmbt. An unmap of several extents whose fork goes back to
//! a list on the way goes on on the list. Refused, with the reason: a
//! mapping that is not into a hole; a bmbt block on a v4 filesystem.
//!
//! Changed inodes and bmbt blocks are kept here, not in the overlay, until
//! [`ForkEditor::into_changes`] hands them over (stamped with the LSN of
//! the recovery, CRCs recomputed).
//!
//! The files follow the kernel's:
//!
//! | file | kernel | what |
//! |---|---|---|
//! | `mod.rs` | `xfs_bmap_item.c` | the intent finished (`xfs_bmap_finish_one`), the editor and its inodes, deferred frees of let-go blocks |
//! | `map.rs` | `xfs_bmap.c` | a mapping into a hole, a range unmapped, the list in the inode, list to bmbt and back |
//! | `btree.rs` | `xfs_bmap_btree.c`, `xfs_bmap.c` (bmbt steps) | the bmbt's ops for the engine (`replay/btree/`: root in the inode, long pointers, blocks and di_nblocks), the cursor steps of a mapping and of an unmap |
//! | `logged.rs` | `xfs_inode_item.c`, `xfs_buf_item.c` | the logged items' sizes, the changes handed over |
//! | `truncate.rs` | `xfs_inode.c` (`xfs_itruncate_extents`), `xfs_bmap.c` (`__xfs_bunmapi`) | a fork taken apart at inactivation, two extents a call |

mod btree;
mod logged;
mod map;
mod truncate;

use super::ag::{damaged, fails_mount, not_done, EditResult};
use super::alloc::RmapOwner;
use super::defer::{FreeOwner, Rmap, Work};
use super::{set_be16, set_be32, set_be64, WritePastEnd};
use crate::xfs::error::Location;
use crate::xfs::format::dinode::XfsDinode;
use crate::xfs::format::dinode::XFS_DINODE_MAGIC;
use crate::xfs::format::dinode::{
    XFS_BMBT_REC_SIZE, XFS_DIFLAG2_NREXT64, XFS_DIFLAG2_REFLINK, XFS_MAX_BMBT_EXTLEN,
};
use crate::xfs::format::log::*;
use crate::xfs::fs::{be16, be32, be64, Fs};
use crate::xfs::image::Overlay;
use crate::xfs::log::items::MapExtent;
use crate::xfs::read::ReadAt;
use crate::xfs::replay::block_len;
use crate::xfs::types::{FsBlock, Ino};
use core::mem::offset_of;
use std::collections::BTreeMap;

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
    /// The packed on-disk record (`xfs_bmbt_disk_set_all`): two
    /// big-endian 64-bit words.
    fn bytes(&self) -> [u8; XFS_BMBT_REC_SIZE] {
        let l0 = (u64::from(self.unwritten) << 63)
            | ((self.off & ((1 << 54) - 1)) << 9)
            | ((self.start >> 43) & 0x1ff);
        let l1 = ((self.start & ((1 << 43) - 1)) << 21) | (self.len & XFS_MAX_BMBT_EXTLEN);
        let [a, b, c, d, e, f, g, h] = l0.to_be_bytes();
        let [i, j, k, l, m, n, o, p] = l1.to_be_bytes();
        [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p]
    }
    /// The record written at byte `at` of `b`.
    fn put(&self, b: &mut [u8], at: usize) -> Result<(), WritePastEnd> {
        let block_len = b.len();
        match at
            .checked_add(XFS_BMBT_REC_SIZE)
            .and_then(|end| b.get_mut(at..end))
        {
            Some(d) => {
                d.copy_from_slice(&self.bytes());
                Ok(())
            }
            None => Err(WritePastEnd {
                off: at,
                len: XFS_BMBT_REC_SIZE,
                block_len,
            }),
        }
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
#[derive(Clone)]
struct ForkAt {
    /// The inode's number.
    ino: u64,
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
    /// The fork's name, for errors.
    fn name(&self) -> &'static str {
        if self.attr {
            "attr fork"
        } else {
            "data fork"
        }
    }
    fn nextents_set(&mut self, n: u64) -> EditResult<()> {
        let flags2 = self.flags2();
        if self.attr {
            if flags2 & XFS_DIFLAG2_NREXT64 != 0 {
                set_be32(
                    &mut self.bytes,
                    offset_of!(XfsDinode, di_nextents),
                    u32::try_from(n).unwrap_or(u32::MAX),
                )?;
            } else {
                let Ok(v) = u16::try_from(n) else {
                    return not_done(format!(
                        "inode {}: {n} attr fork extents, more than its counter holds",
                        self.ino
                    ));
                };
                set_be16(&mut self.bytes, offset_of!(XfsDinode, di_anextents), v)?;
            }
        } else if flags2 & XFS_DIFLAG2_NREXT64 != 0 {
            set_be64(&mut self.bytes, offset_of!(XfsDinode, di_big_nextents), n)?;
        } else {
            let Ok(v) = u32::try_from(n) else {
                return not_done(format!(
                    "inode {}: {n} data fork extents, more than its counter holds",
                    self.ino
                ));
            };
            set_be32(&mut self.bytes, offset_of!(XfsDinode, di_nextents), v)?;
        }
        self.nextents = n;
        Ok(())
    }
    fn flags2(&self) -> u64 {
        if self.bytes.get(4) == Some(&3) {
            be64(&self.bytes, offset_of!(XfsDinode, di_flags2)).unwrap_or(0)
        } else {
            0
        }
    }
    /// Extent records that fit in the fork (`XFS_IFORK_MAXEXT`).
    fn maxext(&self) -> u64 {
        u64::try_from(self.fork_len / 16).unwrap_or(0)
    }
}

/// An inode's extent count for its attr fork or its data fork, from the
/// 32/16-bit fields or, with nrext64, the 64/32-bit ones.
pub(super) fn extent_count(b: &[u8], attr: bool) -> u64 {
    let v3 = b.get(4) == Some(&3);
    let nrext64 =
        v3 && be64(b, offset_of!(XfsDinode, di_flags2)).unwrap_or(0) & XFS_DIFLAG2_NREXT64 != 0;
    match (attr, nrext64) {
        (true, true) => u64::from(be32(b, offset_of!(XfsDinode, di_nextents)).unwrap_or(0)),
        (true, false) => u64::from(be16(b, offset_of!(XfsDinode, di_anextents)).unwrap_or(0)),
        (false, true) => be64(b, offset_of!(XfsDinode, di_big_nextents)).unwrap_or(0),
        (false, false) => u64::from(be32(b, offset_of!(XfsDinode, di_nextents)).unwrap_or(0)),
    }
}

/// The first `n` records of a bmbt leaf.
fn recs_of(b: &[u8], hdr: usize, n: usize) -> Vec<Rec> {
    (0..n)
        .map(|i| Rec::parse(b, hdr.saturating_add(i.saturating_mul(16))))
        .collect()
}

/// A bmbt block let go of (a joined leaf, a leaf given up for a list),
/// freed as deferred work of the step it was let go of in.
struct LetGo {
    agno: u32,
    agbno: u32,
    /// Its reverse mapping, removed by the free.
    rmap: Rmap,
    /// Freed before the reverse mappings of the pieces (a block a join
    /// lets go of mid-delete), else after (a leaf a fork back to a list
    /// lets go of at the end of the step).
    before_rmaps: bool,
    /// The unmap step (transaction) it belongs to.
    step: usize,
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
    /// The chunks of each bmbt block logged (byte offset -> chunks): what
    /// the kernel's buffer item holds dirty, over log forces too, until
    /// the buffer is written back. Invalidating a buffer clears them.
    touched: BTreeMap<u64, std::collections::BTreeSet<usize>>,
    /// The bmbt blocks logged since the last cut (byte offsets): those
    /// the checkpoint being built logs.
    logged_since: std::collections::BTreeSet<u64>,
    /// The inode forks logged whole (the inode's byte offset, whether the
    /// attr fork): an extent list or a bmbt root logged by a transaction,
    /// whether or not its bytes changed. The inode item keeps them until
    /// the inode is flushed, which recovery does not do.
    forks_logged: std::collections::BTreeSet<(u64, bool)>,
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
    let_go: Vec<LetGo>,
    /// The step of the unmap being finished (`__xfs_bunmapi` calls, one
    /// transaction each) that blocks let go of now belong to.
    step: usize,
    /// Steps after the first of the unmap being finished that log the
    /// inode's core before its bmbt root.
    later_core_steps: u64,
    /// bmbt blocks invalidated (their buffers logged as cancelled): bytes
    /// of each.
    invalidated: Vec<usize>,
    /// The bmbt blocks invalidated since the engine last took them (AG,
    /// block), for it to pin ([`super::defer::Engine::pin_blocks`]).
    pub(crate) unpinned: Vec<(u32, u32)>,
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
            touched: BTreeMap::new(),
            logged_since: std::collections::BTreeSet::new(),
            forks_logged: std::collections::BTreeSet::new(),
            done: 0,
            bumped: std::collections::BTreeSet::new(),
            first_log: None,
            let_go: Vec::new(),
            step: 0,
            later_core_steps: 0,
            invalidated: Vec::new(),
            unpinned: Vec::new(),
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
            Err(e) => return fails_mount(format!("owner {ino}: {e}")),
        };
        let isize = usize::from(g.inodesize);
        let bytes = self.read("inode", ioff, isize)?;
        if be16(&bytes, offset_of!(XfsDinode, di_magic)) != Some(XFS_DINODE_MAGIC) {
            return damaged("di_magic", Some(Location::Inode { ino }), "no inode magic");
        }
        let version = bytes.get(4).copied().unwrap_or(0);
        if g.v5 && (version != 3 || be64(&bytes, offset_of!(XfsDinode, di_ino)) != Some(ino)) {
            return damaged(
                "di_ino",
                Some(Location::Inode { ino }),
                format!("not the v3 inode numbered {ino}"),
            );
        }
        Ok((ioff, bytes))
    }

    /// [`Self::inode`] for the rest of replay.
    pub(in crate::xfs::replay) fn inode_bytes(&self, ino: u64) -> EditResult<(u64, Vec<u8>)> {
        self.inode(ino)
    }

    /// The reflink flag of an inode this editor changed cleared
    /// (`xfs_itruncate_clear_reflink_flags`: nothing left mapped).
    pub(in crate::xfs::replay) fn clear_reflink(&mut self, ino: u64) -> EditResult<()> {
        let off = self.fs.inode_offset(Ino(ino))?;
        if let Some(b) = self.inodes.get_mut(&off) {
            if b.get(4) == Some(&3) {
                let at = offset_of!(XfsDinode, di_flags2);
                let f2 = be64(b, at).unwrap_or(0) & !XFS_DIFLAG2_REFLINK;
                set_be64(b, at, f2)?;
            }
        }
        Ok(())
    }

    /// How many inodes this editor has changed.
    pub fn inodes_changed(&self) -> usize {
        self.inodes.len()
    }

    /// A bmbt block of `f`'s inode (at byte `off`, block `fsb`) leaves the
    /// tree: its buffer is invalidated (nothing of it written), di_nblocks
    /// drops by one, and it is freed later, before the extent's reverse
    /// mappings or after them (see [`Self::with_let_go`]).
    fn let_go_of(
        &mut self,
        f: &mut ForkAt,
        off: u64,
        fsb: u64,
        before_rmaps: bool,
    ) -> EditResult<()> {
        let ino = f.ino;
        self.blocks.remove(&off);
        // xfs_trans_binval clears the buffer's dirty map.
        self.touched.remove(&off);
        self.invalidated.push(block_len(&self.fs.geo));
        let nb = be64(&f.bytes, offset_of!(XfsDinode, di_nblocks))
            .unwrap_or(0)
            .saturating_sub(1);
        set_be64(&mut f.bytes, offset_of!(XfsDinode, di_nblocks), nb)?;
        let (agno, agbno) = self.fs.geo.split_fsb(FsBlock(fsb));
        self.unpinned.push((agno.0, agbno.0));
        let m = Rmap {
            start: agbno.0,
            len: 1,
            owner: ino,
            offset: 0,
            attr: f.attr,
            bmbt: true,
            unwritten: false,
        };
        self.let_go.push(LetGo {
            agno: agno.0,
            agbno: agbno.0,
            rmap: m,
            before_rmaps,
            step: self.step,
        });
        Ok(())
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
            .map(|l| l.step.saturating_add(1))
            .max()
            .unwrap_or(0)
            .max(w.len());
        let mut w = w.into_iter();
        (0..steps)
            .map(|step| {
                let free = |first: bool| {
                    let_go
                        .iter()
                        .filter(move |l| l.before_rmaps == first && l.step == step)
                        .map(|l| Work::Free {
                            agno: l.agno,
                            agbno: l.agbno,
                            len: 1,
                            owner: FreeOwner::Known(l.rmap),
                        })
                };
                let mut t: Vec<Work> = free(true).collect();
                t.extend(w.next());
                t.extend(free(false));
                t
            })
            .collect()
    }

    /// The fork `f` logged whole by the transaction under way (an extent
    /// list, or a bmbt root in the inode).
    fn fork_logged(&mut self, f: &ForkAt) {
        self.forks_logged.insert((f.ioff, f.attr));
    }

    /// Chunks `off..off + len` of the bmbt block at byte offset `at` logged.
    fn block_logged(&mut self, at: u64, off: usize, len: usize) {
        self.logged_since.insert(at);
        self.touched
            .entry(at)
            .or_default()
            .extend(crate::xfs::replay::ckpt::chunks_of(off, len));
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
    pub(super) fn log_inode(
        &mut self,
        ino: u64,
        ioff: u64,
        mut b: Vec<u8>,
        bumps: u64,
    ) -> EditResult<()> {
        if bumps > 0 {
            if b.get(4) == Some(&3) {
                let cc = be64(&b, offset_of!(XfsDinode, di_changecount))
                    .unwrap_or(0)
                    .wrapping_add(bumps);
                set_be64(&mut b, offset_of!(XfsDinode, di_changecount), cc)?;
            }
            self.bumped.insert(ino);
        }
        super::inode::upgrade_logged_core(self.fs, &mut b)?;
        self.inodes.insert(ioff, b);
        Ok(())
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
            return damaged(
                "di_forkoff",
                Some(Location::Inode { ino }),
                format!("fork offset {forkoff} beyond the inode"),
            );
        }
        let flags2 = if version == 3 {
            be64(&bytes, offset_of!(XfsDinode, di_flags2)).unwrap_or(0)
        } else {
            0
        };
        let (fork_off, fork_len, format, nextents) = if attr {
            if forkoff == 0 {
                return damaged("attr fork", Some(Location::Inode { ino }), "no attr fork");
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
            ino,
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
            return not_done("a realtime bmap update");
        }
        let len = u64::from(x.len);
        if len == 0 || len > XFS_MAX_BMBT_EXTLEN {
            return if len == 0 {
                fails_mount("bmap update of 0 blocks")
            } else {
                not_done(format!("bmap update of {len} blocks"))
            };
        }
        let g = &self.fs.geo;
        let (agno, agbno) = g.split_fsb(FsBlock(x.startblock));
        let end_ok = agbno.0.checked_add(x.len).is_some_and(|e| e <= g.agblocks);
        if g.fsb_to_daddr(FsBlock(x.startblock)).is_none() || !end_ok {
            return fails_mount(format!(
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
                let nb = be64(&f.bytes, offset_of!(XfsDinode, di_nblocks))
                    .unwrap_or(0)
                    .saturating_add(len);
                set_be64(&mut f.bytes, offset_of!(XfsDinode, di_nblocks), nb)?;
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
                let nb = be64(&f.bytes, offset_of!(XfsDinode, di_nblocks))
                    .unwrap_or(0)
                    .saturating_sub(gone);
                set_be64(&mut f.bytes, offset_of!(XfsDinode, di_nblocks), nb)?;
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
            t => return fails_mount(format!("bmap update type {t}")),
        };
        // The recovery transaction's first log of the inode raises its
        // change count when it logs the core (xfs_trans_log_inode forces
        // the i_version bump), or, when it logs only the bmbt root, if
        // the count has not risen since the inode was loaded (the load
        // marks it queried).
        let first_root_only = self.first_log == Some(false);
        if f.bytes.get(4) == Some(&3) {
            let first = u64::from(!first_root_only || !self.bumped.contains(&x.owner));
            let cc = be64(&f.bytes, offset_of!(XfsDinode, di_changecount))
                .unwrap_or(0)
                .wrapping_add(first)
                .wrapping_add(extra_steps);
            set_be64(&mut f.bytes, offset_of!(XfsDinode, di_changecount), cc)?;
        }
        self.bumped.insert(x.owner);
        super::inode::upgrade_logged_core(self.fs, &mut f.bytes)?;
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
                set_be64(b, offset_of!(XfsDinode, di_changecount), cc)?;
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
                let cc = be64(b, offset_of!(XfsDinode, di_changecount))
                    .unwrap_or(0)
                    .wrapping_add(n);
                set_be64(b, offset_of!(XfsDinode, di_changecount), cc)?;
            }
        }
        Ok(())
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
        for l in std::mem::take(&mut self.let_go) {
            let free = Work::Free {
                agno: l.agno,
                agbno: l.agbno,
                len: 1,
                owner: FreeOwner::Known(l.rmap),
            };
            if l.before_rmaps {
                before.push(free);
            } else {
                after.push(free);
            }
        }
        (before, after)
    }
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
    use super::super::ag::EditError;
    use super::*;
    use crate::xfs::bmap::Fork;
    use crate::xfs::format::dinode::XFS_DINODE_FMT_EXTENTS;
    use crate::xfs::testutil::fixture_fs;
    use crate::xfs::types::Lsn;

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
        // The outcome's kind and its text, e.g. `Damaged("...")`.
        let why = |r: EditResult<Vec<Vec<Work>>>| match r {
            Err(e) if !matches!(e, EditError::Read(_)) => format!("{e:?}"),
            other => panic!("not refused: {other:?}"),
        };
        let mut ed = ForkEditor::new(&fs, &ov);
        let mut none = |_: u32, _: u32, _: RmapOwner| -> EditResult<Option<u32>> { Ok(None) };
        // Into blocks already mapped.
        let m = why(ed.finish(&x(multi.ino.0, first.file_block, 7, 1, 1), &mut none));
        assert!(
            m.contains("already mapped") && m.starts_with("Damaged"),
            "{m}"
        );
        // Outside the filesystem, no length, an unknown type, realtime.
        let m = why(ed.finish(&x(multi.ino.0, 1 << 40, u64::MAX >> 8, 1, 1), &mut none));
        // xfs_bui_validate fails these (the mount with them).
        assert!(
            m.contains("outside the filesystem") && m.starts_with("KernelFailsMount"),
            "{m}"
        );
        let m = why(ed.finish(&x(multi.ino.0, 1 << 40, 100, 0, 1), &mut none));
        assert!(
            m.contains("0 blocks") && m.starts_with("KernelFailsMount"),
            "{m}"
        );
        let m = why(ed.finish(&x(multi.ino.0, 1 << 40, 100, 1, 9), &mut none));
        assert!(
            m.contains("type 9") && m.starts_with("KernelFailsMount"),
            "{m}"
        );
        let rt = XFS_BMAP_EXTENT_REALTIME | 1;
        let m = why(ed.finish(&x(multi.ino.0, 1 << 40, 100, 1, rt), &mut none));
        assert!(
            m.contains("realtime") && m.starts_with("NotDoneByThisTool"),
            "{m}"
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

    /// Damage the edit finds aborts the intent with the structure and its
    /// place: a bmbt whose blocks lost their magic names the block it read
    /// (a filesystem block of the tree) and what it found; an inode without
    /// its magic names the inode. Nothing is changed.
    #[test]
    fn damage_aborts_the_update_naming_the_structure_and_its_place() {
        let fs = fixture_fs("replay-bui-nodes");
        let inode = fs.inode(Ino(68)).unwrap();
        let Fork::Btree { blocks, .. } = &inode.data else {
            panic!("inode 68 has no bmbt");
        };
        let mut ov = Overlay::default();
        for b in blocks {
            let off = fs.geo.fsb_to_daddr(*b).unwrap().byte_offset().unwrap();
            let mut sector = fs.img.read_disk("bmbt block", off, 512).unwrap();
            sector[..4].fill(0);
            ov.put(off / 512, &sector);
        }
        let mut ed = ForkEditor::new(&fs, &ov);
        let mut none = |_: u32, _: u32, _: RmapOwner| -> EditResult<Option<u32>> { Ok(None) };
        match ed.finish(&x(68, 1, 9000, 1, 1), &mut none) {
            Err(EditError::Damaged(d)) => {
                assert_eq!(d.structure, "bmbt");
                let Some(Location::FsBlock { fsb }) = d.location else {
                    panic!("no block in {d}");
                };
                assert!(blocks.iter().any(|b| b.0 == fsb), "{d}");
                assert!(
                    d.detail.contains("inode 68") && d.detail.contains("magic 0x0 "),
                    "{d}"
                );
            }
            other => panic!("not aborted as damaged: {other:?}"),
        }
        // The inode itself without its magic.
        let ioff = fs.inode_offset(Ino(68)).unwrap();
        let (start, at) = (ioff - ioff % 512, (ioff % 512) as usize);
        let mut sector = fs.img.read_disk("inode", start, 512).unwrap();
        sector[at..at + 2].fill(0);
        let mut ov = Overlay::default();
        ov.put(start / 512, &sector);
        let mut ed = ForkEditor::new(&fs, &ov);
        match ed.finish(&x(68, 1, 9000, 1, 1), &mut none) {
            Err(EditError::Damaged(d)) => {
                assert_eq!(
                    (d.structure, d.location.clone()),
                    ("di_magic", Some(Location::Inode { ino: 68 }))
                );
                assert_eq!(
                    d.error().unwrap().to_string(),
                    "di_magic at inode 68: no inode magic"
                );
            }
            other => panic!("not aborted as damaged: {other:?}"),
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
                Err(_) => refused += 1,
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
        assert_eq!(be64(&f.bytes, offset_of!(XfsDinode, di_nblocks)), Some(0));
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
        assert_eq!(
            be64(&f.bytes, offset_of!(XfsDinode, di_nblocks)),
            Some(multi.core.nblocks)
        );
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
    use super::map::{contiguity, hole_check};
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
        assert_eq!(x.put(&mut b, 0), Ok(()));
        assert_eq!(Rec::parse(&b, 0), x);
        assert_eq!(x.bytes().as_slice(), b.as_slice());
        // A record that does not fit is an error, and nothing is written.
        let mut short = vec![0u8; 20];
        assert_eq!(
            x.put(&mut short, 8),
            Err(WritePastEnd {
                off: 8,
                len: 16,
                block_len: 20
            })
        );
        assert_eq!(short, vec![0u8; 20]);
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
        let place = ("data fork", 5);
        assert!(hole_check(place, Some(r(0, 100, 11)), None, new).is_err());
        assert!(hole_check(place, None, Some(r(14, 100, 1)), new).is_err());
        assert!(hole_check(place, Some(r(0, 100, 10)), Some(r(15, 1, 1)), new).is_ok());
    }
}
