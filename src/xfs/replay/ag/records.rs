//! Records by key, as the callers in `xfs_alloc.c`, `xfs_rmap.c`,
//! `xfs_refcount.c` and `xfs_ialloc.c` use the btrees: find, neighbours,
//! insert, update, delete, every record, the tree's shape; record and key
//! bytes of each tree.

use super::btree::Lookup;
use super::error::EditResult;
use super::tree_ops::{rec_key, rmap_off_key, AgTree, Key};
use super::{corrupt_at, AgStore, Neighbors};
use crate::xfs::error::Location;
use crate::xfs::format::ag::XfsAgf;
use crate::xfs::format::ag::NULLAGBLOCK;
use crate::xfs::format::btree::{XfsAllocRec, XfsBtreeSblock, XfsRmapKey, XfsRmapRec};
use crate::xfs::format::btree::{
    XFS_RMAP_OFF_ATTR_FORK, XFS_RMAP_OFF_BMBT_BLOCK, XFS_RMAP_OFF_MASK, XFS_RMAP_OFF_UNWRITTEN,
    XFS_RMAP_OWN_NULL,
};
use crate::xfs::fs::{be16, be32, be64};
use crate::xfs::read::ReadAt;
use crate::xfs::replay::ag::damaged;
use core::mem::{offset_of, size_of};
use std::collections::BTreeSet;

impl<'a, R: ReadAt> AgStore<'a, R> {
    /// After each public edit: `agf_longest` follows the cntbt
    /// (`xfs_alloc_fixup_longest`), and the frees the kernel defers run.
    pub(super) fn after_edit(&mut self, tree: AgTree) -> EditResult<()> {
        if tree == AgTree::Cnt {
            let longest = self
                .last_record(AgTree::Cnt)?
                .and_then(|r| be32(&r, offset_of!(XfsAllocRec, ar_blockcount)))
                .unwrap_or(0);
            self.set_agf_u32(offset_of!(XfsAgf, agf_longest), longest)?;
        }
        Ok(())
    }

    /// Every record of the tree, in order (bounded by the AG size).
    pub fn records(&mut self, tree: AgTree) -> EditResult<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        let (mut cur, ok) = self.lookup(tree, Lookup::Ge, (0, 0, 0))?;
        if !ok {
            return Ok(out);
        }
        let bound = usize::try_from(self.agblocks)
            .unwrap_or(usize::MAX)
            .saturating_mul(self.maxrecs(tree, 0).max(1));
        while let Some(r) = self.get_rec(&cur) {
            out.push(r);
            if out.len() > bound {
                return Err(corrupt_at(
                    0,
                    format!(
                        "{} AG {}: more records than the AG can hold (a loop)",
                        tree.btree_name(),
                        self.agno
                    ),
                ));
            }
            if !self.increment(&mut cur)? {
                break;
            }
        }
        Ok(out)
    }

    /// The record with exactly this key.
    pub fn find(&mut self, tree: AgTree, key: Key) -> EditResult<Option<Vec<u8>>> {
        let (cur, ok) = self.lookup(tree, Lookup::Eq, key)?;
        Ok(if ok { self.get_rec(&cur) } else { None })
    }

    /// The last record with key <= `key` and the one after it.
    pub fn neighbors(&mut self, tree: AgTree, key: Key) -> EditResult<Neighbors> {
        let (mut cur, ok) = self.lookup(tree, Lookup::Le, key)?;
        let left = if ok { self.get_rec(&cur) } else { None };
        let right = if self.increment(&mut cur)? {
            self.get_rec(&cur)
        } else {
            None
        };
        Ok((left, right))
    }

    /// Delete the record with exactly this key.
    pub fn delete(&mut self, tree: AgTree, key: Key) -> EditResult<()> {
        let (mut cur, ok) = self.lookup(tree, Lookup::Eq, key)?;
        if !ok {
            return damaged(
                tree.btree_name(),
                Some(Location::Ag { agno: self.agno }),
                format!("no record with key {key:?} to delete"),
            );
        }
        if !self.delete_at(&mut cur)? {
            return damaged(tree.btree_name(), None, "nothing deleted");
        }
        self.finish_deferred()
    }

    /// Insert a record (its key must not be present), where a lookup of
    /// its key puts it (`xfs_btree_lookup(EQ)` + `xfs_btree_insert`).
    pub fn insert(&mut self, tree: AgTree, rec: &[u8]) -> EditResult<()> {
        let key = rec_key(tree, rec);
        let (cur, ok) = self.lookup(tree, Lookup::Eq, key)?;
        if ok {
            return damaged(
                tree.btree_name(),
                Some(Location::Ag { agno: self.agno }),
                format!("key {key:?} already present"),
            );
        }
        self.insert_at(cur, rec)?;
        self.finish_deferred()
    }

    /// Replace the record with key `key` by `rec` (same position).
    pub fn update(&mut self, tree: AgTree, key: Key, rec: &[u8]) -> EditResult<()> {
        let (cur, ok) = self.lookup(tree, Lookup::Eq, key)?;
        if !ok {
            return damaged(
                tree.btree_name(),
                Some(Location::Ag { agno: self.agno }),
                format!("no record with key {key:?} to update"),
            );
        }
        self.update_at(&cur, rec)
    }

    /// The last record of the tree (for `agf_longest` of the cntbt).
    pub fn last_record(&mut self, tree: AgTree) -> EditResult<Option<Vec<u8>>> {
        let (cur, ok) = self.lookup(tree, Lookup::Le, (u64::MAX, u64::MAX, u64::MAX))?;
        Ok(if ok { self.get_rec(&cur) } else { None })
    }

    /// The blocks of a tree per level, leaves first (for checks and tests).
    pub fn shape(&mut self, tree: AgTree) -> EditResult<Vec<Vec<u32>>> {
        let (root, levels) = self.root(tree)?;
        let nlevels = usize::try_from(levels).unwrap_or(0).min(9);
        let mut out = vec![Vec::new(); nlevels];
        let mut first = root;
        for level in (0..nlevels).rev() {
            let mut b = first;
            let mut seen = BTreeSet::new();
            while b != NULLAGBLOCK {
                if !seen.insert(b) || seen.len() > usize::try_from(self.agblocks).unwrap_or(0) {
                    return Err(corrupt_at(
                        self.daddr_of(b),
                        format!(
                            "{} AG {} block {b}: a sibling loop",
                            tree.btree_name(),
                            self.agno
                        ),
                    ));
                }
                self.load(tree, b, Some(level))?;
                if let Some(v) = out.get_mut(level) {
                    v.push(b);
                }
                b = self.sib(b, true);
            }
            if level > 0 {
                first = self.ptr_at(tree, first, 1);
            }
        }
        Ok(out)
    }
}

impl<R: ReadAt> AgStore<'_, R> {
    /// Records of the rmapbt whose blocks overlap `[lo, hi]`, in key
    /// order (the overlapped query of `xfs_rmap_query_range`, by the node
    /// low and high keys).
    pub fn rmap_overlapping(&mut self, lo: u32, hi: u32) -> EditResult<Vec<Vec<u8>>> {
        let tree = AgTree::Rmap;
        let (root, levels) = self.root(tree)?;
        if levels == 0 || levels > 9 {
            return damaged(
                tree.btree_name(),
                Some(Location::Ag { agno: self.agno }),
                format!("a tree of {levels} levels"),
            );
        }
        let top = usize::try_from(levels.saturating_sub(1)).unwrap_or(0);
        let mut out = Vec::new();
        let mut stack = vec![(root, top)];
        let mut visited = 0u32;
        while let Some((bno, level)) = stack.pop() {
            visited = visited.saturating_add(1);
            if visited > self.agblocks {
                return damaged(tree.btree_name(), None, "the walk does not end");
            }
            self.load(tree, bno, Some(level))?;
            let b = self.blk(bno).to_vec();
            let n = usize::from(be16(&b, offset_of!(XfsBtreeSblock, bb_numrecs)).unwrap_or(0))
                .min(self.maxrecs(tree, level));
            if level == 0 {
                for i in 0..n {
                    let o = self.hdr.saturating_add(i.saturating_mul(tree.rec_len()));
                    let r = b.get(o..o.saturating_add(tree.rec_len())).unwrap_or(&[]);
                    let start = be32(r, offset_of!(XfsRmapRec, rm_startblock)).unwrap_or(0);
                    let end = start.saturating_add(
                        be32(r, offset_of!(XfsRmapRec, rm_blockcount))
                            .unwrap_or(0)
                            .saturating_sub(1),
                    );
                    if start <= hi && end >= lo {
                        out.push(r.to_vec());
                    }
                }
                continue;
            }
            let kl = tree.key_len();
            let maxr = self.maxrecs(tree, level);
            let mut kids = Vec::new();
            for i in 0..n {
                let o = self.hdr.saturating_add(i.saturating_mul(kl));
                let k = b.get(o..o.saturating_add(kl)).unwrap_or(&[]);
                // A node key is the low key then the high key.
                let klo = be32(k, offset_of!(XfsRmapKey, rm_startblock)).unwrap_or(0);
                let khi = be32(k, size_of::<XfsRmapKey>()).unwrap_or(u32::MAX);
                if klo <= hi && khi >= lo {
                    let p = self
                        .hdr
                        .saturating_add(maxr.saturating_mul(kl))
                        .saturating_add(i.saturating_mul(4));
                    kids.push((be32(&b, p).unwrap_or(u32::MAX), level.saturating_sub(1)));
                }
            }
            // Depth first, leftmost child first.
            stack.extend(kids.into_iter().rev());
        }
        Ok(out)
    }
}

/// Build an allocation record.
pub fn alloc_rec(start: u32, len: u32) -> Vec<u8> {
    let mut r = Vec::with_capacity(8);
    r.extend_from_slice(&start.to_be_bytes());
    r.extend_from_slice(&len.to_be_bytes());
    r
}

/// Build an rmap record (`offset` with its flag bits).
pub fn rmap_rec(start: u32, len: u32, owner: u64, offset: u64) -> Vec<u8> {
    let mut r = Vec::with_capacity(24);
    r.extend_from_slice(&start.to_be_bytes());
    r.extend_from_slice(&len.to_be_bytes());
    r.extend_from_slice(&owner.to_be_bytes());
    r.extend_from_slice(&offset.to_be_bytes());
    r
}

pub fn key_bno(start: u32) -> Key {
    (u64::from(start), 0, 0)
}

pub fn key_cnt(start: u32, len: u32) -> Key {
    (u64::from(len), u64::from(start), 0)
}

/// An rmap key: `offset` with its attr-fork and bmbt-block bits (the
/// unwritten bit does not count).
pub fn key_rmap(start: u32, owner: u64, offset: u64) -> Key {
    (u64::from(start), owner, rmap_off_key(offset))
}

pub fn key_refcount(start: u32) -> Key {
    (u64::from(start), 0, 0)
}

pub fn key_ino(startino: u32) -> Key {
    (u64::from(startino), 0, 0)
}

/// One reverse mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rmap {
    pub start: u32,
    pub len: u32,
    pub owner: u64,
    /// File offset (0 for non-inode owners and bmbt blocks).
    pub offset: u64,
    pub attr: bool,
    pub bmbt: bool,
    pub unwritten: bool,
}

impl Rmap {
    pub fn parse(r: &[u8]) -> Rmap {
        let off = be64(r, offset_of!(XfsRmapRec, rm_offset)).unwrap_or(0);
        Rmap {
            start: be32(r, offset_of!(XfsRmapRec, rm_startblock)).unwrap_or(0),
            len: be32(r, offset_of!(XfsRmapRec, rm_blockcount)).unwrap_or(0),
            owner: be64(r, offset_of!(XfsRmapRec, rm_owner)).unwrap_or(0),
            offset: off & XFS_RMAP_OFF_MASK,
            attr: off & XFS_RMAP_OFF_ATTR_FORK != 0,
            bmbt: off & XFS_RMAP_OFF_BMBT_BLOCK != 0,
            unwritten: off & XFS_RMAP_OFF_UNWRITTEN != 0,
        }
    }
    pub fn bytes(&self) -> Vec<u8> {
        let mut off = self.key_offset(self.offset);
        if self.unwritten {
            off |= XFS_RMAP_OFF_UNWRITTEN;
        }
        rmap_rec(self.start, self.len, self.owner, off)
    }
    /// The btree key: start, owner, offset with the fork and bmbt bits
    /// (the written state is not part of it).
    pub fn key(&self) -> Key {
        key_rmap(self.start, self.owner, self.key_offset(self.offset))
    }
    pub(crate) fn key_offset(&self, offset: u64) -> u64 {
        let mut off = offset & XFS_RMAP_OFF_MASK;
        if self.attr {
            off |= XFS_RMAP_OFF_ATTR_FORK;
        }
        if self.bmbt {
            off |= XFS_RMAP_OFF_BMBT_BLOCK;
        }
        off
    }
    pub(crate) fn end(&self) -> u32 {
        self.start.saturating_add(self.len)
    }
    /// `XFS_RMAP_NON_INODE_OWNER`, or a bmbt block: offsets do not count.
    pub(crate) fn ignore_off(&self) -> bool {
        non_inode(self.owner) || self.bmbt
    }
    /// `xfs_rmap_is_mergeable` against the owner and flags of `o`.
    pub(crate) fn mergeable(&self, o: &Rmap) -> bool {
        self.owner != XFS_RMAP_OWN_NULL
            && self.owner == o.owner
            && self.unwritten == o.unwritten
            && self.attr == o.attr
            && self.bmbt == o.bmbt
    }
}

/// `XFS_RMAP_NON_INODE_OWNER`.
pub(crate) fn non_inode(owner: u64) -> bool {
    owner >> 63 != 0
}
