//! What differs between the AG btrees, as each tree's `xfs_btree_ops` says it
//! (`xfs_alloc_btree.c`, `xfs_ialloc_btree.c`, `xfs_rmap_btree.c`,
//! `xfs_refcount_btree.c`): record and key sizes, the key of a record, the
//! root's place in the AGF or AGI, the magic, records per block, and where a
//! new block comes from and a freed one goes.

use super::error::EditResult;
use super::AgStore;
use crate::xfs::format::ag::{XfsAgf, XfsAgi};
use crate::xfs::format::btree::{XfsAllocRec, XfsRmapKey, XfsRmapRec};
use crate::xfs::format::btree::{
    XFS_RMAP_OFF_BMBT_BLOCK, XFS_RMAP_OFF_MASK, XFS_RMAP_OFF_UNWRITTEN, XFS_RMAP_OWN_INOBT,
    XFS_RMAP_OWN_REFC,
};
use crate::xfs::fs::{be32, be64};
use crate::xfs::read::ReadAt;
use core::mem::offset_of;

pub use crate::xfs::ag::btree::AgTree;

/// Where each tree's root lives, as replay edits it.
impl AgTree {
    /// Root and level live in the AGI (else the AGF).
    pub fn in_agi(self) -> bool {
        matches!(self, AgTree::Ino | AgTree::Fino)
    }
    /// (root, level) offsets in the AGF or AGI.
    pub(super) fn root_level_off(self) -> (usize, usize) {
        match self {
            AgTree::Bno => (
                offset_of!(XfsAgf, agf_bno_root),
                offset_of!(XfsAgf, agf_bno_level),
            ),
            AgTree::Cnt => (
                offset_of!(XfsAgf, agf_cnt_root),
                offset_of!(XfsAgf, agf_cnt_level),
            ),
            AgTree::Rmap => (
                offset_of!(XfsAgf, agf_rmap_root),
                offset_of!(XfsAgf, agf_rmap_level),
            ),
            AgTree::Refcount => (
                offset_of!(XfsAgf, agf_refcount_root),
                offset_of!(XfsAgf, agf_refcount_level),
            ),
            AgTree::Ino => (offset_of!(XfsAgi, agi_root), offset_of!(XfsAgi, agi_level)),
            AgTree::Fino => (
                offset_of!(XfsAgi, agi_free_root),
                offset_of!(XfsAgi, agi_free_level),
            ),
        }
    }
}

/// A key in the order the tree sorts by (`key_diff`/`diff_two_keys`):
/// bnobt (start), cntbt (length, start), rmapbt (start, owner, offset
/// without the unwritten bit), refcountbt (start with the CoW bit), inode
/// btrees (startino).
pub type Key = (u64, u64, u64);

pub(super) fn rmap_off_key(off: u64) -> u64 {
    off & !XFS_RMAP_OFF_UNWRITTEN
}

/// The (low) key of a record.
pub fn rec_key(tree: AgTree, rec: &[u8]) -> Key {
    // Every AG btree record starts with its start block (or inode); the
    // free-space records follow with the length.
    let a = u64::from(be32(rec, offset_of!(XfsAllocRec, ar_startblock)).unwrap_or(0));
    let b = u64::from(be32(rec, offset_of!(XfsAllocRec, ar_blockcount)).unwrap_or(0));
    match tree {
        AgTree::Bno | AgTree::Refcount | AgTree::Ino | AgTree::Fino => (a, 0, 0),
        AgTree::Cnt => (b, a, 0),
        AgTree::Rmap => (
            a,
            be64(rec, offset_of!(XfsRmapRec, rm_owner)).unwrap_or(0),
            rmap_off_key(be64(rec, offset_of!(XfsRmapRec, rm_offset)).unwrap_or(0)),
        ),
    }
}

/// The order of a node key (a low or high half for the rmapbt).
pub(super) fn key_order(tree: AgTree, k: &[u8]) -> Key {
    let a = u64::from(be32(k, offset_of!(XfsAllocRec, ar_startblock)).unwrap_or(0));
    match tree {
        AgTree::Bno | AgTree::Refcount | AgTree::Ino | AgTree::Fino => (a, 0, 0),
        AgTree::Cnt => (
            u64::from(be32(k, offset_of!(XfsAllocRec, ar_blockcount)).unwrap_or(0)),
            a,
            0,
        ),
        AgTree::Rmap => (
            a,
            be64(k, offset_of!(XfsRmapKey, rm_owner)).unwrap_or(0),
            rmap_off_key(be64(k, offset_of!(XfsRmapKey, rm_offset)).unwrap_or(0)),
        ),
    }
}

/// Kept for callers that compare raw keys or records: a record of the
/// tree's record length or a key.
pub fn key_of(tree: AgTree, k: &[u8]) -> Key {
    if k.len() >= tree.rec_len() {
        rec_key(tree, k)
    } else {
        key_order(tree, k)
    }
}

/// The low key bytes of a record (`init_key_from_rec`).
pub(super) fn rec_low_key(tree: AgTree, rec: &[u8]) -> Vec<u8> {
    match tree {
        AgTree::Bno | AgTree::Cnt => rec.get(..8).unwrap_or(&[0; 8]).to_vec(),
        AgTree::Refcount | AgTree::Ino | AgTree::Fino => rec.get(..4).unwrap_or(&[0; 4]).to_vec(),
        AgTree::Rmap => {
            let mut k = Vec::with_capacity(20);
            k.extend_from_slice(rec.get(..4).unwrap_or(&[0; 4]));
            let owner = offset_of!(XfsRmapRec, rm_owner);
            k.extend_from_slice(rec.get(owner..owner.saturating_add(8)).unwrap_or(&[0; 8]));
            let off = rmap_off_key(be64(rec, offset_of!(XfsRmapRec, rm_offset)).unwrap_or(0));
            k.extend_from_slice(&off.to_be_bytes());
            k
        }
    }
}

/// The high key of an rmap record (`xfs_rmapbt_init_high_key_from_rec`).
pub(super) fn rmap_high_key(rec: &[u8]) -> Vec<u8> {
    let start = be32(rec, offset_of!(XfsRmapRec, rm_startblock)).unwrap_or(0);
    let len = be32(rec, offset_of!(XfsRmapRec, rm_blockcount)).unwrap_or(0);
    let owner = be64(rec, offset_of!(XfsRmapRec, rm_owner)).unwrap_or(0);
    let raw = be64(rec, offset_of!(XfsRmapRec, rm_offset)).unwrap_or(0);
    let adj = len.wrapping_sub(1);
    let mut off = rmap_off_key(raw);
    let non_inode = owner & (1 << 63) != 0;
    if !(non_inode || raw & XFS_RMAP_OFF_BMBT_BLOCK != 0) {
        off = ((off & XFS_RMAP_OFF_MASK).wrapping_add(u64::from(adj))) | (off & !XFS_RMAP_OFF_MASK);
    }
    let mut k = Vec::with_capacity(20);
    k.extend_from_slice(&start.wrapping_add(adj).to_be_bytes());
    k.extend_from_slice(&owner.to_be_bytes());
    k.extend_from_slice(&off.to_be_bytes());
    k
}

impl<'a, R: ReadAt> AgStore<'a, R> {
    pub(crate) fn maxrecs(&self, tree: AgTree, level: usize) -> usize {
        let room = self.blocksize.saturating_sub(self.hdr);
        let per = if level == 0 {
            tree.rec_len()
        } else {
            tree.key_len().saturating_add(4)
        };
        room.checked_div(per).unwrap_or(0)
    }

    pub(super) fn minrecs(&self, tree: AgTree, level: usize) -> usize {
        self.maxrecs(tree, level) / 2
    }

    /// A new block for `tree` (`alloc_block`), `None` when there is none.
    pub(super) fn alloc_block(&mut self, tree: AgTree, hint: u32) -> EditResult<Option<u32>> {
        let b = self.alloc_block_bno(tree, hint)?;
        if let Some(b) = b {
            // xfs_btree_get_buf_block
            self.get_buf(b);
        }
        Ok(b)
    }

    fn alloc_block_bno(&mut self, tree: AgTree, hint: u32) -> EditResult<Option<u32>> {
        match tree {
            AgTree::Bno | AgTree::Cnt | AgTree::Rmap => {
                let b = self.get_freelist(true)?;
                if b.is_some() && tree == AgTree::Rmap {
                    self.add_agf(offset_of!(XfsAgf, agf_rmap_blocks), 1)?;
                }
                Ok(b)
            }
            AgTree::Refcount => {
                let h = self.refcount_block();
                let b = self.alloc_near_one(h, XFS_RMAP_OWN_REFC)?;
                if b.is_some() {
                    self.add_agf(offset_of!(XfsAgf, agf_refcount_blocks), 1)?;
                }
                Ok(b)
            }
            AgTree::Ino | AgTree::Fino => {
                let b = self.alloc_near_one(hint, XFS_RMAP_OWN_INOBT)?;
                if b.is_some() && self.feat.inobtcount {
                    self.add_agi(if tree == AgTree::Ino { 336 } else { 340 }, 1)?;
                }
                Ok(b)
            }
        }
    }

    /// `free_block`: the block leaves the tree.
    pub(super) fn free_block(&mut self, tree: AgTree, bno: u32) -> EditResult<()> {
        // xfs_trans_binval: the block's changes are not written, and its
        // buffer item's dirty map is cleared.
        self.dirty.remove(&bno);
        self.touched.remove(&bno);
        self.stale.insert(bno);
        self.cancels.insert(bno);
        self.pin(bno);
        match tree {
            AgTree::Bno | AgTree::Cnt => {
                self.put_freelist_ex(bno, true)?;
                self.busy_insert(bno, 1);
                Ok(())
            }
            AgTree::Rmap => {
                self.add_agf(offset_of!(XfsAgf, agf_rmap_blocks), -1)?;
                self.put_freelist_ex(bno, true)?;
                self.busy_insert(bno, 1);
                Ok(())
            }
            AgTree::Refcount => {
                self.add_agf(offset_of!(XfsAgf, agf_refcount_blocks), -1)?;
                self.deferred.push((bno, XFS_RMAP_OWN_REFC));
                Ok(())
            }
            AgTree::Ino | AgTree::Fino => {
                if self.feat.inobtcount {
                    self.add_agi(if tree == AgTree::Ino { 336 } else { 340 }, -1)?;
                }
                self.deferred.push((bno, XFS_RMAP_OWN_INOBT));
                Ok(())
            }
        }
    }

    /// Blocks whose free the kernel defers (refcountbt and inode btree
    /// blocks), taken out of the queue.
    pub(crate) fn take_deferred(&mut self) -> Vec<(u32, u64)> {
        std::mem::take(&mut self.deferred)
    }

    pub(crate) fn push_deferred(&mut self, bno: u32, owner: u64) {
        self.deferred.push((bno, owner));
    }

    /// The right sibling of a block already read.
    pub(crate) fn rightsib_of(&self, bno: u32) -> u32 {
        self.sib(bno, true)
    }

    /// `xfs_refc_block`: where mkfs put the refcountbt root.
    pub(crate) fn refcount_block(&self) -> u32 {
        let g = &self.fs.geo;
        let agfl_block = u32::from(g.sectsize)
            .saturating_mul(3)
            .checked_div(g.blocksize)
            .unwrap_or(0);
        let ibt = agfl_block.saturating_add(4);
        let fibt = ibt.saturating_add(1);
        if self.feat.rmapbt {
            if self.feat.finobt {
                fibt.saturating_add(2)
            } else {
                ibt.saturating_add(2)
            }
        } else if self.feat.finobt {
            fibt.saturating_add(1)
        } else {
            ibt.saturating_add(1)
        }
    }
}
