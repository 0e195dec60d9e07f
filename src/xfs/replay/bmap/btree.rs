//! The bmbt on the generic engine (`replay/btree/`), as `xfs_bmap_btree.c`
//! describes it to `xfs_btree.c`: long pointers, the root in the inode fork
//! (sized by the fork, `xfs_bmdr_maxrecs`), blocks allocated near a hint
//! through the AG allocator with one more block in di_nblocks and the core
//! logged (`xfs_bmbt_alloc_block`), freed later with one less
//! (`xfs_bmbt_free_block`: the buffer invalidated, the free deferred); and
//! the record edits of `xfs_bmap.c` on it (a mapping into a hole, a piece
//! unmapped), by the kernel's cursor steps.

use super::map::{contiguity, hole_check};
use super::{Alloc, ForkAt, ForkEditor, Rec};
use crate::xfs::error::Location;
use crate::xfs::format::dinode::XfsBtreeBlockLong;
use crate::xfs::format::dinode::XfsDinode;
use crate::xfs::format::dinode::{XFS_BMAP_CRC_MAGIC, XFS_BMAP_MAGIC};
use crate::xfs::fs::{be16, be32, be64};
use crate::xfs::read::ReadAt;
use crate::xfs::replay::ag::{damaged, not_done, Damage, EditError, EditResult};
use crate::xfs::replay::alloc::RmapOwner;
use crate::xfs::replay::block_len;
use crate::xfs::replay::btree::delete::Delete;
use crate::xfs::replay::btree::insert::Insert;
use crate::xfs::replay::btree::{Btree, BtreeOps, Key, Lookup, IROOT, MAX_LEVELS, NO_PTR};
use crate::xfs::replay::{set_be16, set_be32, set_be64, WritePastEnd};
use crate::xfs::types::FsBlock;
use core::mem::offset_of;
use std::collections::{BTreeMap, BTreeSet};

/// One inode fork's bmbt as the engine sees it. Blocks are read through
/// the editor and kept here while an edit runs; [`Bmbt::into_effects`]
/// hands back what the edit wrote, freed and logged first, so that a
/// refused edit leaves nothing behind.
pub(super) struct Bmbt<'e, 'a, 'x, R: ReadAt> {
    ed: &'e ForkEditor<'a, R>,
    f: &'e mut ForkAt,
    ino: u64,
    alloc: Option<&'e mut Alloc<'x>>,
    /// Blocks read or written: fsblock -> bytes.
    cache: BTreeMap<u64, Vec<u8>>,
    dirty: BTreeSet<u64>,
    freed: Vec<u64>,
    /// How the inode is first logged (see `ForkEditor::first_log`).
    first_log: Option<bool>,
    /// The 128-byte chunks of each block this edit logged
    /// (`xfs_trans_log_buf`): fsblock -> chunks.
    touched: BTreeMap<u64, BTreeSet<usize>>,
    /// Whether the edit logged the root in the inode (`xfs_trans_log_inode`
    /// with the fork's broot flag).
    root_logged: bool,
    hdr: usize,
    bs: usize,
    root_max: usize,
}

/// What a bmbt edit did, to apply to the editor.
pub(super) struct Effects {
    writes: Vec<(u64, Vec<u8>)>,
    freed: Vec<u64>,
    first_log: Option<bool>,
    touched: BTreeMap<u64, BTreeSet<usize>>,
    root_logged: bool,
}

impl<'e, 'a, 'x, R: ReadAt> Bmbt<'e, 'a, 'x, R> {
    pub(super) fn new(
        ed: &'e ForkEditor<'a, R>,
        f: &'e mut ForkAt,
        alloc: Option<&'e mut Alloc<'x>>,
    ) -> Self {
        let ino = f.ino;
        let (hdr, bs) = ed.hdr_bs();
        let root_max = f.fork_len.saturating_sub(4) / 16;
        Bmbt {
            ed,
            f,
            ino,
            alloc,
            cache: BTreeMap::new(),
            dirty: BTreeSet::new(),
            freed: Vec::new(),
            first_log: ed.first_log,
            touched: BTreeMap::new(),
            root_logged: false,
            hdr,
            bs,
            root_max,
        }
    }

    pub(super) fn into_effects(self) -> Effects {
        let mut cache = self.cache;
        let writes = self
            .dirty
            .iter()
            .filter_map(|b| cache.remove(b).map(|d| (*b, d)))
            .collect();
        Effects {
            writes,
            freed: self.freed,
            first_log: self.first_log,
            touched: self.touched,
            root_logged: self.root_logged,
        }
    }

    /// The record the cursor points at.
    fn rec(&self, cur: &crate::xfs::replay::btree::Cursor) -> Option<Rec> {
        self.get_rec(cur).map(|r| Rec::parse(&r, 0))
    }

    /// A cursor at the record starting at `off` (`xfs_bmbt_lookup_eq`).
    fn find(&mut self, off: u64) -> EditResult<crate::xfs::replay::btree::Cursor> {
        let (cur, ok) = self.lookup(Lookup::Eq, (off, 0, 0))?;
        if !ok {
            return Err(self.damaged(None, format!("the keys do not lead to the record at {off}")));
        }
        Ok(cur)
    }
}

fn rec_bytes(r: Rec) -> [u8; 16] {
    r.bytes()
}

impl<R: ReadAt> BtreeOps for Bmbt<'_, '_, '_, R> {
    fn name(&self) -> &'static str {
        "bmbt"
    }
    fn what(&self) -> String {
        format!("inode {}: bmbt", self.ino)
    }
    fn rec_len(&self) -> usize {
        16
    }
    fn key_len(&self) -> usize {
        8
    }
    fn long_ptrs(&self) -> bool {
        true
    }
    fn hdr_len(&self) -> usize {
        self.hdr
    }
    fn block_len(&self) -> usize {
        self.bs
    }
    fn rec_key(&self, rec: &[u8]) -> Key {
        (Rec::parse(rec, 0).off, 0, 0)
    }
    fn key_order(&self, key: &[u8]) -> Key {
        (
            key.first_chunk::<8>().map_or(0, |k| u64::from_be_bytes(*k)),
            0,
            0,
        )
    }
    fn rec_low_key(&self, rec: &[u8]) -> Vec<u8> {
        Rec::parse(rec, 0).off.to_be_bytes().to_vec()
    }
    fn root(&mut self) -> EditResult<(u64, usize)> {
        let root = self.f.fork_off;
        let level = be16(&self.f.bytes, root).unwrap_or(0);
        let n = usize::from(be16(&self.f.bytes, root.saturating_add(2)).unwrap_or(0));
        let levels = usize::from(level).saturating_add(1);
        if level == 0 || levels > MAX_LEVELS || n == 0 || n > self.root_max {
            return Err(self.damaged(Some(IROOT), format!("level {level} and {n} records")));
        }
        Ok((IROOT, levels))
    }
    fn set_root(&mut self, _ptr: u64, _inc: i64) -> EditResult<()> {
        not_done(format!(
            "inode {}: a bmbt root moved out of the inode",
            self.ino
        ))
    }
    fn iroot(&self) -> Option<(usize, usize)> {
        Some((self.f.fork_off, self.root_max))
    }
    fn load(&mut self, bno: u64, level: Option<usize>) -> EditResult<()> {
        if bno == IROOT || self.cache.contains_key(&bno) {
            return Ok(());
        }
        let lvl = level.map_or(Ok(None), |l| u16::try_from(l).map(Some));
        let Ok(lvl) = lvl else {
            return Err(self.damaged(Some(bno), format!("level {level:?}")));
        };
        let maxrecs = self.maxrecs(level.unwrap_or(0));
        let (_, b, _) = self.ed.bmbt_block(self.ino, bno, lvl, maxrecs)?;
        // xfs_btree_check_lblock_siblings: a block is not its own sibling.
        for (what, at) in [
            ("left", offset_of!(XfsBtreeBlockLong, bb_leftsib)),
            ("right", offset_of!(XfsBtreeBlockLong, bb_rightsib)),
        ] {
            if be64(&b, at) == Some(bno) {
                return Err(self.damaged(
                    Some(bno),
                    format!("its own {what} sibling: the sibling pointers loop"),
                ));
            }
        }
        self.cache.insert(bno, b);
        Ok(())
    }
    fn block(&self, bno: u64) -> &[u8] {
        if bno == IROOT {
            return &self.f.bytes;
        }
        self.cache.get(&bno).map(|b| b.as_slice()).unwrap_or(&[])
    }
    fn block_mut(&mut self, bno: u64) -> Option<&mut [u8]> {
        if bno == IROOT {
            return Some(&mut self.f.bytes);
        }
        self.dirty.insert(bno);
        self.cache.get_mut(&bno).map(|b| b.as_mut_slice())
    }
    fn logged(&mut self, bno: u64, off: usize, len: usize) {
        // The root logs the inode (its fork root only, when nothing else
        // of it was logged before in the transaction).
        if bno == IROOT {
            self.first_log.get_or_insert(false);
            self.root_logged = true;
        } else {
            self.touched
                .entry(bno)
                .or_default()
                .extend(crate::xfs::replay::ckpt::chunks_of(off, len));
        }
    }
    fn init_block(&mut self, bno: u64, level: usize, numrecs: usize) -> EditResult<()> {
        let off = self.ed.block_off("bmbt block", bno)?;
        let level = u16::try_from(level).unwrap_or(u16::MAX);
        let b = self
            .ed
            .new_block(off, self.ino, level, numrecs, NO_PTR, NO_PTR)?;
        self.cache.insert(bno, b);
        self.dirty.insert(bno);
        Ok(())
    }
    fn alloc_block(&mut self, hint: u64) -> EditResult<Option<u64>> {
        let g = self.ed.fs.geo;
        if !g.v5 {
            return not_done("a bmbt block on a v4 filesystem");
        }
        let (agno, agbno) = g.split_fsb(FsBlock(hint));
        let owner = RmapOwner {
            owner: self.ino,
            offset: 0,
            attr_fork: self.f.attr,
            bmbt_block: true,
        };
        let Some(alloc) = self.alloc.as_mut() else {
            return not_done(format!(
                "inode {}: a bmbt block allocated in a read",
                self.ino
            ));
        };
        let Some(new) = alloc(agno.0, agbno.0, owner)? else {
            return not_done(format!(
                "AG {}: a new bmbt block where none is free near block {}",
                agno.0, agbno.0
            ));
        };
        self.first_log.get_or_insert(true);
        let at = offset_of!(XfsDinode, di_nblocks);
        let nb = be64(&self.f.bytes, at).unwrap_or(0).saturating_add(1);
        set_be64(&mut self.f.bytes, at, nb)?;
        let fsb = u64::from(agno.0)
            .checked_shl(u32::from(g.agblklog))
            .unwrap_or(0)
            | u64::from(new);
        Ok(Some(fsb))
    }
    fn free_block(&mut self, bno: u64) -> EditResult<()> {
        self.first_log.get_or_insert(true);
        self.cache.remove(&bno);
        self.dirty.remove(&bno);
        self.freed.push(bno);
        Ok(())
    }
    fn damaged(&self, bno: Option<u64>, msg: String) -> EditError {
        let ino = Location::Inode { ino: self.ino };
        let (structure, location) = match bno {
            Some(IROOT) => ("bmbt root", ino),
            Some(fsb) => ("bmbt", Location::FsBlock { fsb }),
            None => ("bmbt", ino),
        };
        EditError::Damaged(Damage {
            structure,
            location: Some(location),
            detail: format!("inode {}: {msg}", self.ino),
        })
    }
}

impl<'a, R: ReadAt> ForkEditor<'a, R> {
    /// The changes of a bmbt edit: blocks written, then blocks freed (their
    /// buffers invalidated, di_nblocks - 1, the frees deferred).
    pub(super) fn apply(&mut self, f: &mut ForkAt, e: Effects) -> EditResult<()> {
        for (fsb, b) in e.writes {
            let off = self.block_off("bmbt block", fsb)?;
            self.blocks.insert(off, b);
        }
        for (fsb, chunks) in e.touched {
            let off = self.block_off("bmbt block", fsb)?;
            self.logged_since.insert(off);
            self.touched.entry(off).or_default().extend(chunks);
        }
        if e.root_logged {
            self.fork_logged(f);
        }
        self.first_log = e.first_log;
        for fsb in e.freed {
            let off = self.block_off("bmbt block", fsb)?;
            self.let_go_of(f, off, fsb, true)?;
        }
        Ok(())
    }

    /// xfs_bmbt_alloc_block for a new leaf made outside the engine (the
    /// list turned into a bmbt): one block in AG `agno` near `hint` (the
    /// allocator adds its reverse mapping); di_nblocks grows by one and
    /// the inode core is logged. The block and its byte offset.
    pub(super) fn alloc_bmbt_block(
        &mut self,
        f: &mut ForkAt,
        ino: u64,
        agno: u32,
        hint: u32,
        alloc: &mut Alloc<'_>,
    ) -> EditResult<(u64, u64)> {
        let owner = RmapOwner {
            owner: ino,
            offset: 0,
            attr_fork: f.attr,
            bmbt_block: true,
        };
        let Some(agbno) = alloc(agno, hint, owner)? else {
            return not_done(format!(
                "AG {agno}: the new bmbt leaf where no block is free near block {hint}"
            ));
        };
        self.first_log.get_or_insert(true);
        let nb = be64(&f.bytes, offset_of!(XfsDinode, di_nblocks))
            .unwrap_or(0)
            .saturating_add(1);
        set_be64(&mut f.bytes, offset_of!(XfsDinode, di_nblocks), nb)?;
        let fsb = u64::from(agno)
            .checked_shl(u32::from(self.fs.geo.agblklog))
            .unwrap_or(0)
            | u64::from(agbno);
        Ok((fsb, self.block_off("bmbt block", fsb)?))
    }

    /// A new v5 bmbt block at byte offset `off` (a zeroed buffer, as the
    /// kernel gets one): header of `level` with `n` records and the
    /// siblings given.
    pub(super) fn new_block(
        &self,
        off: u64,
        ino: u64,
        level: u16,
        n: usize,
        left: u64,
        right: u64,
    ) -> Result<Vec<u8>, WritePastEnd> {
        let bs = block_len(&self.fs.geo);
        let mut b = vec![0u8; bs];
        set_be32(
            &mut b,
            offset_of!(XfsBtreeBlockLong, bb_magic),
            XFS_BMAP_CRC_MAGIC,
        )?;
        set_be16(&mut b, offset_of!(XfsBtreeBlockLong, bb_level), level)?;
        set_be16(
            &mut b,
            offset_of!(XfsBtreeBlockLong, bb_numrecs),
            u16::try_from(n).unwrap_or(u16::MAX),
        )?;
        set_be64(&mut b, offset_of!(XfsBtreeBlockLong, bb_leftsib), left)?;
        set_be64(&mut b, offset_of!(XfsBtreeBlockLong, bb_rightsib), right)?;
        set_be64(&mut b, offset_of!(XfsBtreeBlockLong, bb_blkno), off / 512)?;
        let uuid_at = offset_of!(XfsBtreeBlockLong, bb_uuid);
        if let Some(d) = b.get_mut(uuid_at..uuid_at.saturating_add(16)) {
            d.copy_from_slice(&self.fs.meta_uuid());
        }
        set_be64(&mut b, offset_of!(XfsBtreeBlockLong, bb_owner), ino)?;
        Ok(b)
    }

    /// bmbt block header bytes and block size.
    pub(super) fn hdr_bs(&self) -> (usize, usize) {
        (
            if self.fs.geo.v5 { 72 } else { 24 },
            block_len(&self.fs.geo),
        )
    }

    /// (header bytes, records or key/pointer pairs a block holds, pairs
    /// the root in the inode holds).
    pub(super) fn bmbt_geometry(&self, f: &ForkAt) -> (usize, usize, usize) {
        let (hdr, bs) = self.hdr_bs();
        let root_max = f.fork_len.saturating_sub(4) / 16;
        (hdr, bs.saturating_sub(hdr) / 16, root_max)
    }

    /// A bmbt block of inode `ino` read and checked (magic, level when
    /// given, record count, owner): its byte offset, bytes and record
    /// count.
    pub(super) fn bmbt_block(
        &self,
        ino: u64,
        fsb: u64,
        level: Option<u16>,
        maxrecs: usize,
    ) -> EditResult<(u64, Vec<u8>, usize)> {
        let (_, bs) = self.hdr_bs();
        let off = self.block_off("bmbt block", fsb)?;
        let b = self.read("bmbt block", off, bs)?;
        let magic = be32(&b, offset_of!(XfsBtreeBlockLong, bb_magic)).unwrap_or(0);
        let want_magic = if self.fs.geo.v5 {
            XFS_BMAP_CRC_MAGIC
        } else {
            XFS_BMAP_MAGIC
        };
        let lvl = be16(&b, offset_of!(XfsBtreeBlockLong, bb_level)).unwrap_or(u16::MAX);
        let nr = usize::from(be16(&b, offset_of!(XfsBtreeBlockLong, bb_numrecs)).unwrap_or(0));
        if magic != want_magic || level.is_some_and(|l| l != lvl) || nr == 0 || nr > maxrecs {
            return damaged(
                "bmbt",
                Some(Location::FsBlock { fsb }),
                format!("inode {ino}: magic {magic:#x} level {lvl} records {nr}"),
            );
        }
        if self.fs.geo.v5 && be64(&b, offset_of!(XfsBtreeBlockLong, bb_owner)) != Some(ino) {
            return damaged(
                "bmbt",
                Some(Location::FsBlock { fsb }),
                format!("inode {ino}: the block has another owner"),
            );
        }
        Ok((off, b, nr))
    }

    /// The byte offset of block `fsb` (a `what`), refused outside the
    /// filesystem.
    pub(in crate::xfs::replay) fn block_off(
        &self,
        what: &'static str,
        fsb: u64,
    ) -> EditResult<u64> {
        match self
            .fs
            .geo
            .fsb_to_daddr(FsBlock(fsb))
            .and_then(|d| d.byte_offset())
        {
            Some(o) => Ok(o),
            None => damaged(
                what,
                Some(Location::FsBlock { fsb }),
                "outside the filesystem",
            ),
        }
    }

    /// The record of a bmbt fork that holds file block `off`, else the
    /// next one (`xfs_bmapi_read`'s look-up).
    pub(super) fn btree_record_at(&self, f: &ForkAt, off: u64) -> EditResult<Option<Rec>> {
        let mut f = f.clone();
        let mut t = Bmbt::new(self, &mut f, None);
        let (mut cur, found) = t.lookup(Lookup::Le, (off, 0, 0))?;
        if found {
            if let Some(r) = t.rec(&cur).filter(|r| r.end() > off) {
                return Ok(Some(r));
            }
        }
        Ok(if t.increment_level(&mut cur, 0)? {
            t.rec(&cur)
        } else {
            None
        })
    }

    /// The records of a bmbt fork in order, at most `limit` (more is
    /// refused).
    pub(super) fn btree_records(&self, f: &ForkAt, limit: usize) -> EditResult<Vec<Rec>> {
        let mut f = f.clone();
        let mut t = Bmbt::new(self, &mut f, None);
        let (mut cur, mut more) = t.lookup(Lookup::Ge, (0, 0, 0))?;
        let mut recs = Vec::new();
        while more {
            let Some(r) = t.rec(&cur) else { break };
            if recs.len() >= limit {
                return Err(t.damaged(
                    None,
                    format!("the leaves hold more than the {limit} records the fork counts"),
                ));
            }
            recs.push(r);
            more = t.increment_level(&mut cur, 0)?;
        }
        Ok(recs)
    }

    /// xfs_bmap_add_extent_hole_real on a bmbt: `new` joins its left and
    /// right neighbours when contiguous (both: the right record deleted,
    /// the cursor back on the left, which grows), else goes in as a record
    /// of its own (xfs_btree_insert). A fork whose extents fit the inode
    /// again after a merge becomes a list.
    pub(super) fn map_btree(
        &mut self,
        f: &mut ForkAt,
        new: Rec,
        alloc: &mut Alloc<'_>,
    ) -> EditResult<()> {
        let n = f.nextents;
        let (effects, count) = {
            let mut t = Bmbt::new(self, f, Some(alloc));
            let (mut cur, found) = t.lookup(Lookup::Le, (new.off, 0, 0))?;
            let left = if found { t.rec(&cur) } else { None };
            let right = if t.increment_level(&mut cur, 0)? {
                t.rec(&cur)
            } else {
                None
            };
            hole_check((t.f.name(), t.f.ino), left, right, new)?;
            let count = match (contiguity(left, right, new), left, right) {
                ((true, true), Some(l), Some(r)) => {
                    let mut cur = t.find(r.off)?;
                    t.delete_at(&mut cur)?;
                    t.decrement_level(&mut cur, 0)?;
                    let grown = Rec {
                        len: l.len.saturating_add(new.len).saturating_add(r.len),
                        ..l
                    };
                    t.update_at(&cur, &rec_bytes(grown))?;
                    n.saturating_sub(1)
                }
                ((true, false), Some(l), _) => {
                    let cur = t.find(l.off)?;
                    let grown = Rec {
                        len: l.len.saturating_add(new.len),
                        ..l
                    };
                    t.update_at(&cur, &rec_bytes(grown))?;
                    n
                }
                ((false, true), _, Some(r)) => {
                    let cur = t.find(r.off)?;
                    let grown = Rec {
                        off: new.off,
                        start: new.start,
                        len: new.len.saturating_add(r.len),
                        unwritten: r.unwritten,
                    };
                    t.update_at(&cur, &rec_bytes(grown))?;
                    n
                }
                _ => {
                    let (cur, _) = t.lookup(Lookup::Eq, (new.off, 0, 0))?;
                    t.insert_at(cur, &rec_bytes(new))?;
                    n.saturating_add(1)
                }
            };
            if count < n && count <= t.f.maxext() {
                // Fine: xfs_bmapi_remap turns the bmbt back into a list.
            } else if count <= t.f.maxext() {
                return not_done(
                    "the extents fit the inode again: the bmbt turned back into a list",
                );
            }
            (t.into_effects(), count)
        };
        self.apply(f, effects)?;
        f.nextents_set(count)?;
        if count < n && f.nextents <= f.maxext() {
            // xfs_bmapi_remap ends with xfs_bmap_btree_to_extents.
            self.btree_to_extents(f)?;
        }
        Ok(())
    }

    /// One step of [`Self::unmap_btree`] (xfs_bmap_del_extent_real): the
    /// last record that overlaps `[off, end)` loses the overlap, which is
    /// returned: it is deleted, trimmed at one end, or cut to its front
    /// with its back inserted after it (the cursor moved on to the next
    /// record first, as the kernel does).
    pub(super) fn unmap_btree_one(
        &mut self,
        f: &mut ForkAt,
        off: u64,
        end: u64,
        alloc: &mut Alloc<'_>,
    ) -> EditResult<Option<Rec>> {
        let n = f.nextents;
        let last = end.saturating_sub(1);
        let (effects, piece, count) = {
            let mut t = Bmbt::new(self, f, Some(alloc));
            let (mut cur, found) = t.lookup(Lookup::Le, (last, 0, 0))?;
            let Some(r) = t.rec(&cur).filter(|_| found) else {
                return Ok(None);
            };
            if r.end() <= off {
                return Ok(None);
            }
            let (front, piece, back) = r.cut(off, end);
            let count = match (front.len > 0, back.len > 0) {
                (false, false) => {
                    t.delete_at(&mut cur)?;
                    n.saturating_sub(1)
                }
                (true, false) => {
                    t.update_at(&cur, &rec_bytes(front))?;
                    n
                }
                (false, true) => {
                    t.update_at(&cur, &rec_bytes(back))?;
                    n
                }
                (true, true) => {
                    t.update_at(&cur, &rec_bytes(front))?;
                    t.increment_level(&mut cur, 0)?;
                    t.insert_at(cur, &rec_bytes(back))?;
                    n.saturating_add(1)
                }
            };
            (t.into_effects(), piece, count)
        };
        self.apply(f, effects)?;
        f.nextents_set(count)?;
        Ok(Some(piece))
    }

    /// __xfs_bunmapi (REMAP) on a bmbt: the records in the range, last
    /// first ([`Self::unmap_btree_one`]), a step (transaction) each; a
    /// tree that fits the inode again becomes a list, and what is left of
    /// the range goes on on the list.
    pub(super) fn unmap_btree(
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
}
