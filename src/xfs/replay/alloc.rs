//! Free space and reverse mappings of one AG, changed the way the kernel
//! changes them (`xfs_alloc.c`, `xfs_rmap.c`), on top of the btree
//! editor ([`AgStore`]):
//!
//! - [`AgStore::fix_freelist`] (`xfs_alloc_fix_freelist`): the free list
//!   brought to the length the current tree heights need, refilled from
//!   the by-size tree (the blocks mapped to the AG in the rmapbt), or
//!   shortened (the extra blocks freed after the operation, as the kernel
//!   defers them);
//! - [`AgStore::free_ag_extent`] (`xfs_free_ag_extent`): blocks back into
//!   the free-space btrees, merged with free neighbours, their reverse
//!   mapping removed;
//! - [`AgStore::alloc_near_one`] (`xfs_alloc_vextent_near_bno` for one
//!   block): the free block nearest a hint, taken out of free space and
//!   mapped to its owner (refcountbt and inode btree blocks);
//!   [`AgStore::alloc_near_unmapped`]: the same search for an extent of
//!   several blocks (minimum and maximum length equal), its mapping left
//!   to the caller (remote attribute values);
//! - [`AgStore::rmap_map`] / [`AgStore::rmap_unmap`] (`xfs_rmap_map`,
//!   `xfs_rmap_unmap`): a mapping added (merged with contiguous
//!   neighbours of the same owner) or removed (trimming or splitting the
//!   record that holds it).
//!
//! Every function moves the btree cursors as the kernel's does, since
//! where a cursor stands decides where an insert goes and so the shape of
//! the tree. Busy extents, reservations and discards are not modelled:
//! only the end state on disk.

use super::ag::*;
use crate::xfs::error::Location;
use crate::xfs::format::ag::XfsAgf;
use crate::xfs::format::ag::NULLAGBLOCK;
use crate::xfs::format::btree::XfsAllocRec;
use crate::xfs::format::btree::{
    XFS_RMAP_LEN_MAX, XFS_RMAP_OFF_ATTR_FORK, XFS_RMAP_OFF_BMBT_BLOCK, XFS_RMAP_OFF_MASK,
    XFS_RMAP_OFF_UNWRITTEN, XFS_RMAP_OWN_AG, XFS_RMAP_OWN_NULL, XFS_RMAP_OWN_UNKNOWN,
};
use crate::xfs::fs::be32;
use crate::xfs::read::ReadAt;
use crate::xfs::replay::ag::{damaged, fails_mount, not_done};
use core::mem::offset_of;

/// An rmap owner (`xfs_owner_info`): the owner, the file offset and the
/// attr-fork / bmbt-block flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RmapOwner {
    pub owner: u64,
    pub offset: u64,
    pub attr_fork: bool,
    pub bmbt_block: bool,
}

impl RmapOwner {
    /// A special (non-inode) owner such as [`XFS_RMAP_OWN_AG`].
    pub fn special(owner: u64) -> Self {
        RmapOwner {
            owner,
            offset: 0,
            attr_fork: false,
            bmbt_block: false,
        }
    }
    fn ignore_off(&self) -> bool {
        non_inode(self.owner) || self.bmbt_block
    }
    /// The owner of a mapping.
    pub fn of(m: &Rmap) -> Self {
        RmapOwner {
            owner: m.owner,
            offset: m.offset,
            attr_fork: m.attr,
            bmbt_block: m.bmbt,
        }
    }
    /// Blocks `[start, start + len)` mapped to this owner.
    fn mapping(&self, start: u32, len: u32, unwritten: bool) -> Rmap {
        Rmap {
            start,
            len,
            owner: self.owner,
            offset: self.offset,
            attr: self.attr_fork,
            bmbt: self.bmbt_block,
            unwritten,
        }
    }
    fn flags(&self, unwritten: bool) -> u64 {
        let mut f = 0;
        if self.attr_fork {
            f |= XFS_RMAP_OFF_ATTR_FORK;
        }
        if self.bmbt_block {
            f |= XFS_RMAP_OFF_BMBT_BLOCK;
        }
        if unwritten {
            f |= XFS_RMAP_OFF_UNWRITTEN;
        }
        f
    }
}

/// `xfs_btree_compute_maxlevels`.
fn compute_maxlevels(minrecs: [u64; 2], records: u64) -> u32 {
    let mut blocks = records.div_ceil(minrecs[0].max(1));
    let mut level = 1u32;
    while blocks > 1 && level < 64 {
        blocks = blocks.div_ceil(minrecs[1].max(1));
        level = level.saturating_add(1);
    }
    level
}

/// `xfs_btree_space_to_height`.
fn space_to_height(limits: [u64; 2], leaf_blocks: u64) -> u32 {
    if leaf_blocks < 1 {
        return 0;
    }
    // The root may hold as few as two pointers.
    let mut node_blocks = 2u64;
    let mut left = leaf_blocks.saturating_sub(1);
    let mut height = 1u32;
    while node_blocks < left && height < 64 {
        left = left.saturating_sub(node_blocks);
        node_blocks = node_blocks.saturating_mul(limits[1].max(2));
        height = height.saturating_add(1);
    }
    height
}

/// A by-block or by-size cursor of the near allocator, with the
/// "active" flag the kernel keeps on it.
struct ACur {
    cur: Cursor,
    active: bool,
}

/// The near allocator's best candidate (`xfs_alloc_cur`).
struct Best {
    rec_bno: u32,
    rec_len: u32,
    bno: u32,
    len: u32,
    diff: u32,
    cur_len: u32,
    /// The request's shortest and longest acceptable lengths.
    minlen: u32,
    maxlen: u32,
}

impl<R: ReadAt> AgStore<'_, R> {
    /// `xfs_alloc_min_freelist`: blocks the free list must hold for the
    /// current heights of the bnobt, cntbt and rmapbt (each may split at
    /// every level and grow, then split again below the old root).
    pub fn min_freelist(&self) -> u32 {
        let hdr: u64 = if self.feat.v5 { 56 } else { 16 };
        let room = u64::from(self.fs.geo.blocksize).saturating_sub(hdr);
        let agblocks = u64::from(self.fs.geo.agblocks);
        let alloc_max = compute_maxlevels([room / 8 / 2, room / 12 / 2], agblocks.div_ceil(2));
        let rmap_mnr = [room / 24 / 2, room / 44 / 2];
        let rmap_max = if self.feat.reflink {
            space_to_height(rmap_mnr, agblocks)
        } else {
            compute_maxlevels(rmap_mnr, agblocks)
        };
        let part = |level: u32, max: u32| {
            level
                .saturating_add(1)
                .min(max)
                .saturating_mul(2)
                .saturating_sub(2)
        };
        let mut need = part(self.agf_u32(offset_of!(XfsAgf, agf_bno_level)), alloc_max)
            .saturating_add(part(
                self.agf_u32(offset_of!(XfsAgf, agf_cnt_level)),
                alloc_max,
            ));
        if self.feat.rmapbt {
            need = need.saturating_add(part(
                self.agf_u32(offset_of!(XfsAgf, agf_rmap_level)),
                rmap_max,
            ));
        }
        need
    }

    /// `xfs_alloc_fix_freelist`: shorten a free list longer than
    /// [`Self::min_freelist`] (the blocks are freed when the operation
    /// ends, see [`Self::finish_deferred`]) and refill a shorter one from
    /// the by-size tree, mapping the blocks to the AG in the rmapbt.
    /// `freeing`: the caller frees blocks (a refill that finds no space
    /// stops instead of failing).
    pub fn fix_freelist(&mut self, freeing: bool) -> EditResult<()> {
        let need = self.min_freelist();
        let mut guard = 0u32;
        while self.agf_u32(offset_of!(XfsAgf, agf_flcount)) > need {
            let Some(b) = self.get_freelist(false)? else {
                break;
            };
            self.defer_free(b, XFS_RMAP_OWN_AG);
            guard = guard.saturating_add(1);
            if guard > 4096 {
                return damaged(
                    "AGFL",
                    Some(Location::Ag { agno: self.agno }),
                    "the free list does not shrink",
                );
            }
        }
        while self.agf_u32(offset_of!(XfsAgf, agf_flcount)) < need {
            guard = guard.saturating_add(1);
            if guard > 4096 {
                return damaged(
                    "AGFL",
                    Some(Location::Ag { agno: self.agno }),
                    "the free list does not fill",
                );
            }
            let maxlen = need.saturating_sub(self.agf_u32(offset_of!(XfsAgf, agf_flcount)));
            let Some((bno, len)) = self.alloc_size(maxlen)? else {
                if freeing {
                    break;
                }
                return not_done(format!(
                    "AG {}: no free space to refill the free list",
                    self.agno
                ));
            };
            if self.feat.rmapbt {
                self.rmap_map(bno, len, false, RmapOwner::special(XFS_RMAP_OWN_AG))?;
            }
            let free = self
                .agf_u32(offset_of!(XfsAgf, agf_freeblks))
                .saturating_sub(len);
            self.set_agf_u32(offset_of!(XfsAgf, agf_freeblks), free)?;
            for b in bno..bno.saturating_add(len) {
                self.put_freelist_ex(b, false)?;
            }
        }
        Ok(())
    }

    fn defer_free(&mut self, bno: u32, owner: u64) {
        self.push_deferred(bno, owner);
    }

    /// Run the frees the kernel defers to the end of the operation:
    /// free-list blocks given back (owner [`XFS_RMAP_OWN_AG`]) and refcountbt or
    /// inode btree blocks that left their tree (`xfs_free_extent_later`:
    /// the free list fixed first, then the block freed and unmapped).
    pub fn finish_deferred(&mut self) -> EditResult<()> {
        let mut rounds = 0u32;
        loop {
            let items = self.take_deferred();
            if items.is_empty() {
                return Ok(());
            }
            rounds = rounds.saturating_add(1);
            if rounds > 64 {
                return damaged(
                    "free space",
                    Some(Location::Ag { agno: self.agno }),
                    "deferred frees keep coming",
                );
            }
            for (bno, owner) in items {
                if owner == XFS_RMAP_OWN_AG {
                    // xfs_agfl_free_finish_item
                    self.free_ag_extent(bno, 1, Some(RmapOwner::special(owner)))?;
                } else {
                    self.free_extent(bno, 1, Some(RmapOwner::special(owner)))?;
                }
            }
        }
    }

    /// `__xfs_free_extent` (how an EFI is finished): the free list fixed,
    /// the extent freed (its reverse mapping removed first unless `owner`
    /// is `None`), and marked busy. Then the free-list blocks the fix-up
    /// took off are freed ([`Self::finish_deferred`]).
    pub fn free_extent(&mut self, bno: u32, len: u32, owner: Option<RmapOwner>) -> EditResult<()> {
        self.fix_freelist(true)?;
        self.free_ag_extent(bno, len, owner)?;
        self.busy_insert(bno, len);
        Ok(())
    }

    /// `xfs_alloc_ag_vextent_size` with minlen 1 (the free-list refill):
    /// the first extent by size that holds `maxlen` blocks, else the
    /// longest, taken from its start. `None` when there is no free space.
    pub fn alloc_size(&mut self, maxlen: u32) -> EditResult<Option<(u32, u32)>> {
        let rec = |r: Vec<u8>| {
            (
                be32(&r, offset_of!(XfsAllocRec, ar_startblock)).unwrap_or(0),
                be32(&r, offset_of!(XfsAllocRec, ar_blockcount)).unwrap_or(0),
            )
        };
        let (mut cnt, found) = self.lookup(AgTree::Cnt, Lookup::Ge, key_cnt(0, maxlen))?;
        let (mut fbno, mut flen, mut rbno, mut rlen);
        if found {
            // The first extent whose unbusy part holds maxlen blocks.
            let mut guard = 0u64;
            loop {
                let Some(r) = self.get_rec(&cnt) else {
                    return Ok(None);
                };
                (fbno, flen) = rec(r);
                (rbno, rlen) = self.busy_trim(fbno, flen, 1, maxlen).unwrap_or((fbno, 0));
                if rlen >= maxlen {
                    break;
                }
                guard = guard.saturating_add(1);
                if !self.increment(&mut cnt)? || guard > u64::from(self.agblocks) {
                    // Only busy extents: the kernel forces the log and
                    // retries; the busy extents are then free to use.
                    return not_done(format!("AG {}: only busy extents could refill the free list (the kernel forces the log)", self.agno));
                }
            }
        } else {
            // xfs_alloc_ag_vextent_small: the last record, if any.
            if !self.decrement(&mut cnt)? {
                return Ok(None);
            }
            let Some(r) = self.get_rec(&cnt) else {
                return Ok(None);
            };
            (fbno, flen) = rec(r);
            (rbno, rlen) = self.busy_trim(fbno, flen, 1, maxlen).unwrap_or((fbno, 0));
        }
        rlen = rlen.min(maxlen);
        if rlen < maxlen {
            // Search left for a better one.
            let (mut bf, mut bl, mut brb, mut brl) = (fbno, flen, rbno, rlen);
            let mut guard = 0u64;
            while self.decrement(&mut cnt)? {
                guard = guard.saturating_add(1);
                if guard > u64::from(self.agblocks) {
                    break;
                }
                let Some(r) = self.get_rec(&cnt) else { break };
                let (f, l) = rec(r);
                if l <= brl {
                    break;
                }
                let (rb, rl) = self.busy_trim(f, l, 1, maxlen).unwrap_or((f, 0));
                let rl = rl.min(maxlen);
                if rl > brl {
                    (bf, bl, brb, brl) = (f, l, rb, rl);
                    if rl == maxlen {
                        break;
                    }
                }
            }
            (fbno, flen, rbno, rlen) = (bf, bl, brb, brl);
        }
        if rlen == 0 {
            return Ok(None);
        }
        self.fixup_trees(fbno, flen, rbno, rlen)?;
        Ok(Some((rbno, rlen)))
    }

    /// `xfs_alloc_fixup_trees`: `[rbno, rbno + rlen)` leaves the free
    /// extent `[fbno, fbno + flen)` in both free-space btrees.
    fn fixup_trees(&mut self, fbno: u32, flen: u32, rbno: u32, rlen: u32) -> EditResult<()> {
        let (mut cnt, ok) = self.lookup(AgTree::Cnt, Lookup::Eq, key_cnt(fbno, flen))?;
        if !ok {
            return damaged("cntbt", None, format!("no free extent {fbno}+{flen}"));
        }
        let (bno_cur, ok) = self.lookup(AgTree::Bno, Lookup::Eq, key_bno(fbno))?;
        if !ok
            || self
                .get_rec(&bno_cur)
                .and_then(|r| be32(&r, offset_of!(XfsAllocRec, ar_blockcount)))
                != Some(flen)
        {
            return damaged("bnobt", None, format!("no free extent {fbno}+{flen}"));
        }
        let fend = fbno.saturating_add(flen);
        let rend = rbno.saturating_add(rlen);
        if rbno < fbno || rend > fend {
            return damaged(
                "free space",
                Some(Location::Ag { agno: self.agno }),
                format!("{rbno}+{rlen} is not inside the free extent {fbno}+{flen}"),
            );
        }
        let (n1, n2) = if rbno == fbno && rlen == flen {
            (None, None)
        } else if rbno == fbno {
            (Some((rend, flen.saturating_sub(rlen))), None)
        } else if rend == fend {
            (Some((fbno, flen.saturating_sub(rlen))), None)
        } else {
            (
                Some((fbno, rbno.saturating_sub(fbno))),
                Some((rend, fend.saturating_sub(rend))),
            )
        };
        self.delete_at(&mut cnt)?;
        for (b, l) in [n1, n2].into_iter().flatten() {
            let (c, ok) = self.lookup(AgTree::Cnt, Lookup::Eq, key_cnt(b, l))?;
            if ok {
                return damaged("cntbt", None, format!("free extent {b}+{l} already there"));
            }
            self.insert_at(c, &alloc_rec(b, l))?;
        }
        let (mut bno_cur, _) = self.lookup(AgTree::Bno, Lookup::Eq, key_bno(fbno))?;
        match n1 {
            None => {
                self.delete_at(&mut bno_cur)?;
            }
            Some((b, l)) => self.update_at(&bno_cur, &alloc_rec(b, l))?,
        }
        if let Some((b, l)) = n2 {
            let (c, ok) = self.lookup(AgTree::Bno, Lookup::Eq, key_bno(b))?;
            if ok {
                return damaged("bnobt", None, format!("free extent {b}+{l} already there"));
            }
            self.insert_at(c, &alloc_rec(b, l))?;
        }
        Ok(())
    }

    /// `xfs_free_ag_extent`: put `[bno, bno + len)` into the free-space
    /// btrees, merged with free neighbours, count it in the AGF, and
    /// (with the rmapbt, unless `owner` is `None`) remove its reverse
    /// mapping first.
    pub fn free_ag_extent(
        &mut self,
        bno: u32,
        len: u32,
        owner: Option<RmapOwner>,
    ) -> EditResult<()> {
        let end = bno.saturating_add(len);
        if len == 0 || bno == 0 || end > self.agblocks || end < bno {
            return damaged(
                "free space",
                Some(Location::Ag { agno: self.agno }),
                format!("blocks {bno}+{len} are not inside the AG"),
            );
        }
        if let Some(o) = owner {
            if self.feat.rmapbt && o.owner != XFS_RMAP_OWN_NULL {
                self.rmap_unmap(bno, len, false, o)?;
            }
        }
        let rec = |r: Option<Vec<u8>>| {
            r.map(|r| {
                (
                    be32(&r, offset_of!(XfsAllocRec, ar_startblock)).unwrap_or(0),
                    be32(&r, offset_of!(XfsAllocRec, ar_blockcount)).unwrap_or(0),
                )
            })
        };
        let (mut bcur, haveleft) = self.lookup(AgTree::Bno, Lookup::Le, key_bno(bno))?;
        let mut lt = None;
        if haveleft {
            let Some((lb, ll)) = rec(self.get_rec(&bcur)) else {
                return damaged("bnobt", None, "the cursor lost its record");
            };
            let lend = lb.saturating_add(ll);
            if lend > bno {
                return damaged(
                    "free space",
                    Some(Location::Ag { agno: self.agno }),
                    format!("blocks {bno}+{len} are (partly) free already"),
                );
            }
            if lend == bno {
                lt = Some((lb, ll));
            }
        }
        let mut gt = None;
        if self.increment(&mut bcur)? {
            let Some((gb, gl)) = rec(self.get_rec(&bcur)) else {
                return damaged("bnobt", None, "the cursor lost its record");
            };
            if end > gb {
                return damaged(
                    "free space",
                    Some(Location::Ag { agno: self.agno }),
                    format!("blocks {bno}+{len} are (partly) free already"),
                );
            }
            if end == gb {
                gt = Some((gb, gl));
            }
        }
        let cnt_del = |s: &mut Self, b: u32, l: u32| -> EditResult<()> {
            let (mut c, ok) = s.lookup(AgTree::Cnt, Lookup::Eq, key_cnt(b, l))?;
            if !ok {
                return damaged("cntbt", None, format!("no free extent {b}+{l}"));
            }
            s.delete_at(&mut c)?;
            Ok(())
        };
        let (nbno, nlen) = match (lt, gt) {
            (Some((lb, ll)), Some((gb, gl))) => {
                cnt_del(self, lb, ll)?;
                cnt_del(self, gb, gl)?;
                self.delete_at(&mut bcur)?;
                if !self.decrement(&mut bcur)? {
                    return damaged("bnobt", None, "no record left of the merged one");
                }
                let n = (lb, ll.saturating_add(len).saturating_add(gl));
                self.update_at(&bcur, &alloc_rec(n.0, n.1))?;
                n
            }
            (Some((lb, ll)), None) => {
                cnt_del(self, lb, ll)?;
                if !self.decrement(&mut bcur)? {
                    return damaged("bnobt", None, "no record left of the freed one");
                }
                let n = (lb, ll.saturating_add(len));
                self.update_at(&bcur, &alloc_rec(n.0, n.1))?;
                n
            }
            (None, Some((gb, gl))) => {
                cnt_del(self, gb, gl)?;
                let n = (bno, len.saturating_add(gl));
                self.update_at(&bcur, &alloc_rec(n.0, n.1))?;
                n
            }
            (None, None) => {
                self.insert_at(bcur, &alloc_rec(bno, len))?;
                (bno, len)
            }
        };
        let (c, ok) = self.lookup(AgTree::Cnt, Lookup::Eq, key_cnt(nbno, nlen))?;
        if ok {
            return damaged(
                "cntbt",
                None,
                format!("free extent {nbno}+{nlen} already there"),
            );
        }
        self.insert_at(c, &alloc_rec(nbno, nlen))?;
        let free = self
            .agf_u32(offset_of!(XfsAgf, agf_freeblks))
            .saturating_add(len);
        self.set_agf_u32(offset_of!(XfsAgf, agf_freeblks), free)?;
        Ok(())
    }

    /// `xfs_alloc_vextent_near_bno` for one block: the free list fixed,
    /// the free block nearest `hint` taken (`xfs_alloc_ag_vextent_near`),
    /// mapped to `owner` in the rmapbt, and counted out of `agf_freeblks`.
    /// `None` when the AG has no free block.
    pub fn alloc_near_one(&mut self, hint: u32, owner: u64) -> EditResult<Option<u32>> {
        self.alloc_near_one_for(hint, RmapOwner::special(owner))
    }

    /// [`Self::alloc_near_one`] for any owner (a bmbt block: the inode,
    /// with the bmbt flag).
    pub fn alloc_near_one_for(&mut self, hint: u32, owner: RmapOwner) -> EditResult<Option<u32>> {
        self.alloc_near_one_maybe(hint, Some(owner))
    }

    /// As [`Self::alloc_near_one_for`], the reverse mapping left to the
    /// caller (a mapping into a fork, which defers it).
    pub fn alloc_near_one_unmapped(&mut self, hint: u32) -> EditResult<Option<u32>> {
        self.alloc_near_one_maybe(hint, None)
    }

    fn alloc_near_one_maybe(
        &mut self,
        hint: u32,
        owner: Option<RmapOwner>,
    ) -> EditResult<Option<u32>> {
        let b = self.alloc_near(hint, 1, owner)?;
        if let Some(b) = b {
            // The new block's buffer (a btree block, an attr block).
            self.get_buf(b);
        }
        Ok(b)
    }

    /// `xfs_alloc_vextent_start_ag` in this AG for `len` blocks, all or
    /// none (minlen = maxlen, as `xfs_bmap_btalloc` asks when the AG's
    /// longest free extent holds them), near `hint`; the reverse mapping
    /// left to the caller. Returns the first block. A request of several
    /// blocks the AG's longest free extent cannot hold is refused (the
    /// kernel then asks for less, or tries other AGs).
    pub fn alloc_near_unmapped(&mut self, hint: u32, len: u32) -> EditResult<Option<u32>> {
        if len > 1 {
            let longest = self.agf_u32(offset_of!(XfsAgf, agf_longest));
            let need = self.min_freelist();
            let flcount = self.agf_u32(offset_of!(XfsAgf, agf_flcount));
            if longest.saturating_sub(need.saturating_sub(flcount)) < len {
                return not_done(format!("AG {}: no free extent of {len} blocks (the kernel asks for less or tries other AGs)", self.agno));
            }
        }
        self.alloc_near(hint, len, None)
    }

    /// The free list fixed, `len` blocks nearest `hint` taken out of free
    /// space, mapped to `owner` in the rmapbt (when it has one and an owner
    /// is given), and counted out of `agf_freeblks`.
    fn alloc_near(
        &mut self,
        hint: u32,
        len: u32,
        owner: Option<RmapOwner>,
    ) -> EditResult<Option<u32>> {
        self.fix_freelist(false)?;
        let hint = hint.min(self.fs.geo.agblocks.saturating_sub(1));
        let Some((bno, got)) = self.near(hint, len)? else {
            return Ok(None);
        };
        if let (true, Some(owner)) = (self.feat.rmapbt, owner) {
            self.rmap_map(bno, got, false, owner)?;
        }
        let free = self
            .agf_u32(offset_of!(XfsAgf, agf_freeblks))
            .saturating_sub(got);
        self.set_agf_u32(offset_of!(XfsAgf, agf_freeblks), free)?;
        Ok(Some(bno))
    }

    /// `xfs_alloc_cur_check` (no alignment, not user data): is the record
    /// under `c` a better candidate? Returns whether it was taken.
    fn cur_check(&mut self, c: &mut ACur, hint: u32, best: &mut Best, bnobt: bool) -> bool {
        let Some(r) = self.get_rec(&c.cur) else {
            c.active = false;
            return false;
        };
        let (fbno, flen) = (
            be32(&r, offset_of!(XfsAllocRec, ar_startblock)).unwrap_or(0),
            be32(&r, offset_of!(XfsAllocRec, ar_blockcount)).unwrap_or(0),
        );
        if flen < best.minlen {
            if !bnobt {
                c.active = false;
            }
            return false;
        }
        let Some((bnoa, lena)) = self.busy_trim(fbno, flen, best.minlen, best.maxlen) else {
            return false;
        };
        if bnoa > self.fs.geo.agblocks.saturating_sub(1) {
            if bnobt {
                c.active = false;
            }
            return false;
        }
        if lena < best.minlen {
            return false;
        }
        let len = lena.min(best.maxlen);
        if len < best.len {
            return false;
        }
        // xfs_alloc_compute_diff, no alignment.
        let fend = bnoa.saturating_add(lena);
        let want_end = hint.saturating_add(len);
        let nb = if bnoa >= hint {
            bnoa
        } else if fend >= want_end {
            hint
        } else {
            fend.saturating_sub(len)
        };
        let diff = nb.abs_diff(hint);
        if diff > best.diff {
            if bnobt {
                c.active = false;
            }
            return false;
        }
        best.rec_bno = fbno;
        best.rec_len = flen;
        best.bno = nb;
        best.len = len;
        best.diff = diff;
        if diff == 0 && len == best.maxlen {
            c.active = false;
        }
        true
    }

    /// `xfs_alloc_walk_iter`.
    #[allow(clippy::too_many_arguments)]
    fn walk_iter(
        &mut self,
        c: &mut ACur,
        hint: u32,
        best: &mut Best,
        bnobt: bool,
        increment: bool,
        find_one: bool,
        mut count: i64,
    ) -> EditResult<bool> {
        let mut stat = false;
        let mut guard = 0u64;
        while c.active && count != 0 {
            guard = guard.saturating_add(1);
            if guard > u64::from(self.agblocks).saturating_add(8) {
                return damaged(
                    "free space",
                    Some(Location::Ag { agno: self.agno }),
                    "a free-space walk does not end",
                );
            }
            if self.cur_check(c, hint, best, bnobt) {
                stat = true;
                if find_one {
                    break;
                }
            }
            if !c.active {
                break;
            }
            let moved = if increment {
                self.increment(&mut c.cur)?
            } else {
                self.decrement(&mut c.cur)?
            };
            if !moved {
                c.active = false;
            }
            if count > 0 {
                count = count.saturating_sub(1);
            }
        }
        Ok(stat)
    }

    /// `xfs_alloc_ag_vextent_near` for `len` blocks (minlen = maxlen); the
    /// chosen extent is taken out of the free-space btrees. Returns its
    /// first block and length.
    fn near(&mut self, hint: u32, len: u32) -> EditResult<Option<(u32, u32)>> {
        let mut best = Best {
            rec_bno: 0,
            rec_len: 0,
            bno: 0,
            len: 0,
            diff: u32::MAX,
            cur_len: len,
            minlen: len,
            maxlen: len,
        };
        let (cnt, ok) = self.lookup(AgTree::Cnt, Lookup::Ge, key_cnt(0, len))?;
        if !ok && len > 1 {
            // xfs_alloc_ag_vextent_small: nothing as long as minlen.
            return Ok(None);
        }
        if !ok {
            return not_done(format!(
                "AG {}: no free extent (the kernel would take a block from the free list)",
                self.agno
            ));
        }
        let mut cnt = ACur {
            cur: cnt,
            active: true,
        };
        // First algorithm: the cursor is in the last cntbt leaf.
        let (leaf, _) = cnt.cur.leaf();
        let last_leaf = self.rightsib_of(leaf) == NULLAGBLOCK;
        let mut done = false;
        if last_leaf {
            self.walk_iter(&mut cnt, hint, &mut best, false, true, false, -1)?;
            done = best.len > 0;
        }
        if !done {
            // Second algorithm: bnobt left and right, cntbt by locality.
            let (c, i) = self.lookup(AgTree::Cnt, Lookup::Ge, key_cnt(hint, best.cur_len))?;
            cnt = ACur { cur: c, active: i };
            let (l, i) = self.lookup(AgTree::Bno, Lookup::Le, key_bno(hint))?;
            let mut lt = ACur { cur: l, active: i };
            let (g, i) = self.lookup(AgTree::Bno, Lookup::Ge, key_bno(hint))?;
            let mut gt = ACur { cur: g, active: i };
            let mut fb: Option<(bool, bool)> = None; // (use gt, increment)
            let mut guard = 0u64;
            while lt.active || gt.active || cnt.active {
                guard = guard.saturating_add(1);
                if guard > u64::from(self.agblocks).saturating_add(8) {
                    return damaged(
                        "free space",
                        Some(Location::Ag { agno: self.agno }),
                        "the near allocation search does not end",
                    );
                }
                if self.walk_iter(&mut lt, hint, &mut best, true, false, true, 1)? {
                    fb = Some((true, true));
                    break;
                }
                if self.walk_iter(&mut gt, hint, &mut best, true, true, true, 1)? {
                    fb = Some((false, false));
                    break;
                }
                self.cntbt_iter(&mut cnt, hint, &mut best)?;
                if !cnt.active {
                    break;
                }
            }
            let mut back_cnt = false;
            if !cnt.active && best.len == 0 && self.decrement(&mut cnt.cur)? {
                cnt.active = true;
                back_cnt = true;
            }
            if back_cnt {
                self.walk_iter(&mut cnt, hint, &mut best, false, false, true, -1)?;
            } else if let Some((use_gt, inc)) = fb {
                let c = if use_gt { &mut gt } else { &mut lt };
                self.walk_iter(c, hint, &mut best, true, inc, true, -1)?;
            }
            if best.len == 0 {
                return Ok(None);
            }
        }
        self.fixup_trees(best.rec_bno, best.rec_len, best.bno, best.len)?;
        Ok(Some((best.bno, best.len)))
    }

    /// `xfs_alloc_cntbt_iter`.
    fn cntbt_iter(&mut self, c: &mut ACur, hint: u32, best: &mut Best) -> EditResult<()> {
        if !c.active {
            return Ok(());
        }
        let cur_len = best.cur_len;
        let (cur, i) = self.lookup(AgTree::Cnt, Lookup::Ge, key_cnt(hint, cur_len))?;
        c.cur = cur;
        c.active = i;
        if !i {
            return Ok(());
        }
        let Some(r) = self.get_rec(&c.cur) else {
            return Ok(());
        };
        let (bno, len) = (
            be32(&r, offset_of!(XfsAllocRec, ar_startblock)).unwrap_or(0),
            be32(&r, offset_of!(XfsAllocRec, ar_blockcount)).unwrap_or(0),
        );
        self.cur_check(c, hint, best, false);
        best.cur_len = len;
        if bno > hint && self.decrement(&mut c.cur)? {
            if let Some(r2) = self.get_rec(&c.cur) {
                if be32(&r2, offset_of!(XfsAllocRec, ar_blockcount)) == Some(best.cur_len) {
                    self.cur_check(c, hint, best, false);
                }
            }
        }
        let doubled = cur_len.saturating_mul(2);
        if best.len == 0 || best.cur_len >= doubled {
            best.cur_len = best.cur_len.saturating_add(1);
        } else {
            best.cur_len = doubled;
        }
        Ok(())
    }

    /// `xfs_rmap_lookup_le` + get_rec.
    fn rmap_lookup_le(
        &mut self,
        bno: u32,
        o: &RmapOwner,
        flags: u64,
    ) -> EditResult<(Cursor, Option<Rmap>)> {
        let off = (o.offset & XFS_RMAP_OFF_MASK) | flags;
        let (cur, ok) = self.lookup(AgTree::Rmap, Lookup::Le, key_rmap(bno, o.owner, off))?;
        let rec = if ok {
            self.get_rec(&cur).map(|r| Rmap::parse(&r))
        } else {
            None
        };
        Ok((cur, rec))
    }

    /// `xfs_rmap_map`: map `[bno, bno + len)` to `o`, merged with a
    /// contiguous record of the same owner on either side.
    pub fn rmap_map(
        &mut self,
        bno: u32,
        len: u32,
        unwritten: bool,
        o: RmapOwner,
    ) -> EditResult<()> {
        let flags = o.flags(unwritten);
        let ignore_off = o.ignore_off();
        let (mut cur, lt) = self.rmap_lookup_le(bno, &o, flags)?;
        let new = o.mapping(bno, len, unwritten);
        let mut lt = lt.filter(|r| r.mergeable(&new));
        if let Some(l) = &lt {
            if u64::from(l.start).saturating_add(u64::from(l.len)) > u64::from(bno) {
                return fails_mount(format!(
                    "rmapbt AG {}: mapping {bno}+{len} overlaps the record at {}",
                    self.agno, l.start
                ));
            }
        }
        // The unfiltered left record also must not overlap.
        let mut gt = None;
        if self.increment(&mut cur)? {
            let Some(r) = self.get_rec(&cur) else {
                return damaged("rmapbt", None, "the cursor lost its record");
            };
            let g = Rmap::parse(&r);
            if u64::from(bno).saturating_add(u64::from(len)) > u64::from(g.start) {
                return fails_mount(format!(
                    "rmapbt AG {}: mapping {bno}+{len} overlaps the record at {}",
                    self.agno, g.start
                ));
            }
            if g.mergeable(&new) {
                gt = Some(g);
            }
        }
        let end = bno.saturating_add(len);
        let l_contig = lt.as_ref().is_some_and(|l| {
            l.start.saturating_add(l.len) == bno
                && (ignore_off || l.offset.saturating_add(u64::from(l.len)) == o.offset)
        });
        if !l_contig {
            lt = None;
        }
        if let Some(mut l) = lt {
            l.len = l.len.saturating_add(len);
            if let Some(g) = gt {
                if end == g.start
                    && (ignore_off || o.offset.saturating_add(u64::from(len)) == g.offset)
                    && u64::from(l.len)
                        .saturating_add(u64::from(len))
                        .saturating_add(u64::from(g.len))
                        <= XFS_RMAP_LEN_MAX
                {
                    l.len = l.len.saturating_add(g.len);
                    if !self.delete_at(&mut cur)? {
                        return damaged("rmapbt", None, "nothing deleted");
                    }
                }
            }
            self.decrement(&mut cur)?;
            self.update_at(&cur, &l.bytes())?;
        } else if let Some(mut g) = gt.filter(|g| {
            end == g.start && (ignore_off || o.offset.saturating_add(u64::from(len)) == g.offset)
        }) {
            g.start = bno;
            g.len = g.len.saturating_add(len);
            if !ignore_off {
                g.offset = o.offset;
            }
            self.update_at(&cur, &g.bytes())?;
        } else {
            self.insert_at(cur, &new.bytes())?;
        }
        Ok(())
    }

    /// `xfs_rmap_unmap`: remove `[bno, bno + len)` of `o` from the record
    /// that maps it (deleted, trimmed at either end, or split in two).
    pub fn rmap_unmap(
        &mut self,
        bno: u32,
        len: u32,
        unwritten: bool,
        o: RmapOwner,
    ) -> EditResult<()> {
        let flags = o.flags(unwritten);
        let ignore_off = o.ignore_off();
        let (mut cur, lt) = self.rmap_lookup_le(bno, &o, flags)?;
        let Some(mut lt) = lt else {
            return damaged(
                "rmapbt",
                Some(Location::Ag { agno: self.agno }),
                format!("no mapping at or before {bno}"),
            );
        };
        let end = u64::from(bno).saturating_add(u64::from(len));
        let lend = u64::from(lt.start).saturating_add(u64::from(lt.len));
        if o.owner == XFS_RMAP_OWN_NULL {
            if u64::from(bno) < lend {
                return damaged("rmapbt", None, "blocks with no owner are still mapped");
            }
            return Ok(());
        }
        if o.owner == XFS_RMAP_OWN_UNKNOWN && lend <= u64::from(bno) {
            if !self.increment(&mut cur)? {
                return Ok(());
            }
            let Some(r) = self.get_rec(&cur) else {
                return damaged("rmapbt", None, "the cursor lost its record");
            };
            if u64::from(Rmap::parse(&r).start) >= end {
                return Ok(());
            }
        }
        if lt.start > bno || lend < end {
            return damaged(
                "rmapbt",
                Some(Location::Ag { agno: self.agno }),
                format!(
                    "blocks {bno}+{len} are not inside the mapping at {}+{}",
                    lt.start, lt.len
                ),
            );
        }
        // xfs_rmap_free_check_owner
        if o.owner != XFS_RMAP_OWN_UNKNOWN {
            if lt.owner != o.owner {
                return damaged(
                    "rmapbt",
                    Some(Location::Ag { agno: self.agno }),
                    format!(
                        "blocks {bno}+{len} belong to owner {:#x}, not {:#x}",
                        lt.owner, o.owner
                    ),
                );
            }
            if !ignore_off
                && (o.offset < lt.offset
                    || o.offset.saturating_add(u64::from(len))
                        > lt.offset.saturating_add(u64::from(lt.len)))
            {
                return damaged("rmapbt", None, "the offset is not inside the mapping");
            }
        }
        if lt.start == bno && lt.len == len {
            if !self.delete_at(&mut cur)? {
                return damaged("rmapbt", None, "nothing deleted");
            }
        } else if lt.start == bno {
            lt.start = lt.start.saturating_add(len);
            lt.len = lt.len.saturating_sub(len);
            if !ignore_off {
                lt.offset = lt.offset.saturating_add(u64::from(len));
            }
            self.update_at(&cur, &lt.bytes())?;
        } else if lend == end {
            lt.len = lt.len.saturating_sub(len);
            self.update_at(&cur, &lt.bytes())?;
        } else {
            let orig = lt.len;
            lt.len = bno.saturating_sub(lt.start);
            self.update_at(&cur, &lt.bytes())?;
            self.increment(&mut cur)?;
            let rec = Rmap {
                owner: lt.owner,
                offset: if ignore_off {
                    0
                } else {
                    o.offset.saturating_add(u64::from(len))
                },
                ..o.mapping(
                    bno.saturating_add(len),
                    orig.saturating_sub(len).saturating_sub(lt.len),
                    unwritten,
                )
            };
            self.insert_at(cur, &rec.bytes())?;
        }
        Ok(())
    }
}
