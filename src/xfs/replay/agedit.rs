//! Editing the AG btrees (bnobt, cntbt, rmapbt, refcountbt) the way the
//! kernel's generic btree code does for the simple cases: look up, step,
//! update, insert into a leaf with room, delete from a leaf that keeps at
//! least half its records (or is the root), with the keys of the nodes
//! above kept right. A change that would split, join or rebalance blocks
//! is refused ([`Unsupported`]); the caller then leaves the work undone
//! and says so.
//!
//! ```text
//!  short-form block (v5): magic level numrecs leftsib rightsib blkno lsn
//!                         uuid owner crc  = 56 bytes (16 on v4), then
//!  leaf:  records                      node: keys[maxrecs] ptrs[maxrecs]
//!  rmapbt nodes keep a low and a high key per child (overlapping tree).
//! ```
//!
//! Blocks are read through the replayed state and kept, changed, in a
//! map until [`AgStore::changed`] hands them back.

use crate::xfs::error::{Error, Location, Result};
use crate::xfs::fs::{be16, be32, be64, Fs};
use crate::xfs::image::Overlay;
use crate::xfs::read::ReadAt;
use std::collections::BTreeMap;

/// The records left and right of a key (either may be absent).
pub type Neighbors = (Option<Vec<u8>>, Option<Vec<u8>>);

/// A change this editor does not make (it would reshape a btree).
#[derive(Debug, Clone)]
pub struct Unsupported(pub String);

/// Result of an edit: an error reading, or a change not supported.
pub enum EditError {
    Read(Error),
    Unsupported(Unsupported),
}

impl From<Error> for EditError {
    fn from(e: Error) -> Self {
        EditError::Read(e)
    }
}

pub type EditResult<T> = std::result::Result<T, EditError>;

fn unsupported<T>(msg: String) -> EditResult<T> {
    Err(EditError::Unsupported(Unsupported(msg)))
}

/// The four AG btrees this editor knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tree {
    Bno,
    Cnt,
    Rmap,
    Refc,
}

impl Tree {
    pub fn rec_len(self) -> usize {
        match self {
            Tree::Bno | Tree::Cnt => 8,
            Tree::Rmap => 24,
            Tree::Refc => 12,
        }
    }
    /// Bytes of one node entry's keys (rmapbt: low and high key).
    pub fn key_len(self) -> usize {
        match self {
            Tree::Bno | Tree::Cnt => 8,
            Tree::Rmap => 40,
            Tree::Refc => 4,
        }
    }
    fn overlapping(self) -> bool {
        self == Tree::Rmap
    }
    /// (root, level) fields in the AGF.
    fn agf_root_level(self) -> (usize, usize) {
        match self {
            Tree::Bno => (16, 28),
            Tree::Cnt => (20, 32),
            Tree::Rmap => (24, 36),
            Tree::Refc => (88, 92),
        }
    }
}

const RMAP_OFF_MASK: u64 = (1 << 54) - 1;

/// A comparable key of a record or node key (low key).
fn key_of(tree: Tree, k: &[u8]) -> (u64, u64, u64) {
    let a = u64::from(be32(k, 0).unwrap_or(0));
    let b = u64::from(be32(k, 4).unwrap_or(0));
    match tree {
        Tree::Bno => (a, 0, 0),
        Tree::Cnt => (b, a, 0),
        Tree::Refc => (a, 0, 0),
        Tree::Rmap => {
            // Record: start, len, owner, offset; key: start, owner, offset.
            if k.len() >= 24 {
                (
                    a,
                    be64(k, 8).unwrap_or(0),
                    be64(k, 16).unwrap_or(0) & RMAP_OFF_MASK,
                )
            } else {
                (
                    a,
                    be64(k, 4).unwrap_or(0),
                    be64(k, 12).unwrap_or(0) & RMAP_OFF_MASK,
                )
            }
        }
    }
}

/// The low key bytes of a record.
fn low_key(tree: Tree, rec: &[u8]) -> Vec<u8> {
    match tree {
        Tree::Bno | Tree::Cnt => rec.get(..8).unwrap_or(&[]).to_vec(),
        Tree::Refc => rec.get(..4).unwrap_or(&[]).to_vec(),
        Tree::Rmap => {
            let mut k = Vec::with_capacity(20);
            k.extend_from_slice(rec.get(..4).unwrap_or(&[0; 4]));
            k.extend_from_slice(rec.get(8..24).unwrap_or(&[0; 16]));
            k
        }
    }
}

/// The high key of an rmap record (`xfs_rmapbt_init_high_key_from_rec`).
fn rmap_high_key(rec: &[u8]) -> Vec<u8> {
    let start = be32(rec, 0).unwrap_or(0);
    let len = be32(rec, 4).unwrap_or(0);
    let owner = be64(rec, 8).unwrap_or(0);
    let off = be64(rec, 16).unwrap_or(0);
    let adj = len.saturating_sub(1);
    let non_inode = owner >= 0xFFFF_FFFF_FFFF_FFF0 || owner == 0;
    let bmbt = off & (1 << 62) != 0;
    let off2 = if non_inode || bmbt {
        off
    } else {
        off.wrapping_add(u64::from(adj))
    };
    let mut k = Vec::with_capacity(20);
    k.extend_from_slice(&start.wrapping_add(adj).to_be_bytes());
    k.extend_from_slice(&owner.to_be_bytes());
    k.extend_from_slice(&off2.to_be_bytes());
    k
}

/// Saved edits (see [`AgStore::snapshot`]).
pub struct Snapshot {
    blocks: BTreeMap<u32, Vec<u8>>,
    agf: Vec<u8>,
    agf_dirty: bool,
    agfl: Option<Vec<u8>>,
    agfl_dirty: bool,
    dirty: std::collections::BTreeSet<u32>,
}

/// Blocks of one AG, read through the replayed state, changed in memory.
pub struct AgStore<'a, R: ReadAt> {
    fs: &'a Fs<R>,
    base: &'a Overlay,
    pub agno: u32,
    blocks: BTreeMap<u32, Vec<u8>>,
    pub agf: Vec<u8>,
    pub agf_dirty: bool,
    /// The AGFL sector, once read; and whether it changed.
    agfl: Option<Vec<u8>>,
    agfl_dirty: bool,
    dirty: std::collections::BTreeSet<u32>,
    hdr: usize,
    blocksize: usize,
}

impl<'a, R: ReadAt> AgStore<'a, R> {
    pub fn new(fs: &'a Fs<R>, base: &'a Overlay, agno: u32) -> Result<Self> {
        let mut s = AgStore {
            fs,
            base,
            agno,
            blocks: BTreeMap::new(),
            agf: Vec::new(),
            agf_dirty: false,
            agfl: None,
            agfl_dirty: false,
            dirty: Default::default(),
            hdr: if fs.geo.v5 { 56 } else { 16 },
            blocksize: usize::try_from(fs.geo.blocksize).unwrap_or(4096),
        };
        let ss = u64::from(fs.geo.sectsize);
        let off = s.ag_byte(0)?.saturating_add(ss);
        s.agf = s.read_bytes(off, ss)?;
        if be32(&s.agf, 0) != Some(0x5841_4746) {
            return Err(Error::corrupt(
                "AGF",
                Location::Bytes {
                    offset: off,
                    len: ss,
                },
                format!("AG {agno}: bad AGF magic"),
            ));
        }
        Ok(s)
    }

    fn ag_byte(&self, agbno: u32) -> Result<u64> {
        self.fs
            .geo
            .agb_to_daddr(
                crate::xfs::types::AgNumber(self.agno),
                crate::xfs::types::AgBlock(agbno),
            )
            .and_then(|d| d.byte_offset())
            .ok_or_else(|| {
                Error::corrupt(
                    "AG btree",
                    Location::Daddr { daddr: 0 },
                    format!("AG {} block {agbno} is outside the filesystem", self.agno),
                )
            })
    }

    fn read_bytes(&self, off: u64, len: u64) -> Result<Vec<u8>> {
        let mut b = self.fs.img.read_disk("AG btree block", off, len)?;
        self.base.apply_to(off, &mut b);
        Ok(b)
    }

    /// The state of the edits so far, to go back to if a later edit is
    /// refused.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            blocks: self.blocks.clone(),
            agf: self.agf.clone(),
            agf_dirty: self.agf_dirty,
            agfl: self.agfl.clone(),
            agfl_dirty: self.agfl_dirty,
            dirty: self.dirty.clone(),
        }
    }

    pub fn restore(&mut self, s: Snapshot) {
        self.blocks = s.blocks;
        self.agf = s.agf;
        self.agf_dirty = s.agf_dirty;
        self.agfl = s.agfl;
        self.agfl_dirty = s.agfl_dirty;
        self.dirty = s.dirty;
    }

    /// `xfs_alloc_put_freelist`: put `agbno` at the end of the free list.
    pub fn put_freelist(&mut self, agbno: u32) -> EditResult<()> {
        let ss = u64::from(self.fs.geo.sectsize);
        if self.agfl.is_none() {
            let off = self.ag_byte(0)?.saturating_add(ss.saturating_mul(3));
            let b = self.read_bytes(off, ss)?;
            if be32(&b, 0) != Some(0x5841_464c) {
                return unsupported(format!("AG {}: bad AGFL magic", self.agno));
            }
            self.agfl = Some(b);
        }
        let hdr: u32 = if self.fs.geo.v5 { 36 } else { 0 };
        let slots = u32::try_from(ss).unwrap_or(512).saturating_sub(hdr) / 4;
        let mut last = self.agf_u32(44).saturating_add(1);
        if last == slots {
            last = 0;
        }
        if last >= slots {
            return unsupported(format!("AG {}: agf_fllast out of range", self.agno));
        }
        self.set_agf_u32(44, last);
        let count = self.agf_u32(48).saturating_add(1);
        self.set_agf_u32(48, count);
        let off = usize::try_from(hdr.saturating_add(last.saturating_mul(4))).unwrap_or(usize::MAX);
        if let Some(agfl) = self.agfl.as_mut() {
            super::put_be32(agfl, off, agbno);
        }
        self.agfl_dirty = true;
        Ok(())
    }

    pub fn agf_u32(&self, off: usize) -> u32 {
        be32(&self.agf, off).unwrap_or(0)
    }

    pub fn set_agf_u32(&mut self, off: usize, v: u32) {
        super::put_be32(&mut self.agf, off, v);
        self.agf_dirty = true;
    }

    fn block(&mut self, agbno: u32) -> Result<&mut Vec<u8>> {
        if !self.blocks.contains_key(&agbno) {
            let off = self.ag_byte(agbno)?;
            let b = self.read_bytes(off, u64::try_from(self.blocksize).unwrap_or(4096))?;
            self.blocks.insert(agbno, b);
        }
        self.blocks.get_mut(&agbno).ok_or_else(|| {
            Error::corrupt("AG btree", Location::Daddr { daddr: 0 }, "block vanished")
        })
    }

    /// Changed blocks as (daddr, bytes), the AGF included.
    pub fn changed(&self) -> Result<Vec<(u64, Vec<u8>)>> {
        let mut out = Vec::new();
        for b in &self.dirty {
            if let Some(d) = self.blocks.get(b) {
                out.push((self.ag_byte(*b)? / 512, d.clone()));
            }
        }
        let ss = u64::from(self.fs.geo.sectsize);
        if self.agf_dirty {
            out.push((self.ag_byte(0)?.saturating_add(ss) / 512, self.agf.clone()));
        }
        if let (true, Some(agfl)) = (self.agfl_dirty, &self.agfl) {
            out.push((
                self.ag_byte(0)?.saturating_add(ss.saturating_mul(3)) / 512,
                agfl.clone(),
            ));
        }
        Ok(out)
    }

    fn maxrecs(&self, tree: Tree, leaf: bool) -> usize {
        let room = self.blocksize.saturating_sub(self.hdr);
        let per = if leaf {
            tree.rec_len()
        } else {
            tree.key_len().saturating_add(4)
        };
        room.checked_div(per).unwrap_or(0)
    }

    /// Where the root is and how tall the tree is.
    fn root(&self, tree: Tree) -> (u32, u32) {
        let (r, l) = tree.agf_root_level();
        (self.agf_u32(r), self.agf_u32(l))
    }

    /// Every record of the tree, in order (bounded by the AG size).
    pub fn records(&mut self, tree: Tree) -> EditResult<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        let (root, levels) = self.root(tree);
        let mut agbno = root;
        // Leftmost leaf.
        for _ in 1..levels.min(9) {
            let b = self.block(agbno)?.clone();
            let maxr = self.maxrecs(tree, false);
            let p = self.hdr.saturating_add(maxr.saturating_mul(tree.key_len()));
            agbno = be32(&b, p).unwrap_or(u32::MAX);
        }
        let mut seen = 0u32;
        loop {
            let b = self.block(agbno)?.clone();
            let n = usize::from(be16(&b, 6).unwrap_or(0)).min(self.maxrecs(tree, true));
            for i in 0..n {
                let o = self.hdr.saturating_add(i.saturating_mul(tree.rec_len()));
                out.push(
                    b.get(o..o.saturating_add(tree.rec_len()))
                        .unwrap_or(&[])
                        .to_vec(),
                );
            }
            let right = be32(&b, 12).unwrap_or(u32::MAX);
            seen = seen.saturating_add(1);
            if right == u32::MAX || seen > self.fs.geo.agblocks {
                break;
            }
            agbno = right;
        }
        Ok(out)
    }

    /// The path from the root to the leaf that holds (or would hold) `key`:
    /// (block, index of the child taken) per node level, then the leaf.
    fn descend(
        &mut self,
        tree: Tree,
        key: (u64, u64, u64),
    ) -> EditResult<(Vec<(u32, usize)>, u32)> {
        let (root, levels) = self.root(tree);
        if levels == 0 || levels > 9 {
            return unsupported(format!("{tree:?} tree of {levels} levels"));
        }
        let mut path = Vec::new();
        let mut agbno = root;
        for _ in 1..levels {
            let b = self.block(agbno)?.clone();
            let n = usize::from(be16(&b, 6).unwrap_or(0));
            let kl = tree.key_len();
            // The last child whose low key is <= key (the first if none).
            let mut idx = 0usize;
            for i in 0..n {
                let o = self.hdr.saturating_add(i.saturating_mul(kl));
                let k = b.get(o..o.saturating_add(kl)).unwrap_or(&[]);
                if key_of(tree, k) <= key {
                    idx = i;
                } else {
                    break;
                }
            }
            let maxr = self.maxrecs(tree, false);
            let p = self
                .hdr
                .saturating_add(maxr.saturating_mul(kl))
                .saturating_add(idx.saturating_mul(4));
            path.push((agbno, idx));
            agbno = be32(&b, p).unwrap_or(u32::MAX);
            if agbno >= self.fs.geo.agblocks {
                return unsupported(format!("{tree:?} pointer {agbno} outside the AG"));
            }
        }
        Ok((path, agbno))
    }

    fn leaf_recs(&mut self, tree: Tree, leaf: u32) -> EditResult<Vec<Vec<u8>>> {
        let b = self.block(leaf)?.clone();
        let n = usize::from(be16(&b, 6).unwrap_or(0)).min(self.maxrecs(tree, true));
        Ok((0..n)
            .map(|i| {
                let o = self.hdr.saturating_add(i.saturating_mul(tree.rec_len()));
                b.get(o..o.saturating_add(tree.rec_len()))
                    .unwrap_or(&[])
                    .to_vec()
            })
            .collect())
    }

    fn write_leaf(&mut self, tree: Tree, leaf: u32, recs: &[Vec<u8>]) -> EditResult<()> {
        let hdr = self.hdr;
        let rl = tree.rec_len();
        let n = u16::try_from(recs.len()).unwrap_or(0);
        let b = self.block(leaf)?;
        super::put_be16(b, 6, n);
        for (i, r) in recs.iter().enumerate() {
            let o = hdr.saturating_add(i.saturating_mul(rl));
            if let Some(d) = b.get_mut(o..o.saturating_add(rl)) {
                d.copy_from_slice(r.get(..rl).unwrap_or(&[]));
            }
        }
        // The kernel leaves stale bytes past the last record as they were,
        // except that a delete moves the tail down one slot: handled by
        // the callers through `shift_tail`.
        self.dirty.insert(leaf);
        Ok(())
    }

    /// Find the record with exactly this key.
    pub fn find(&mut self, tree: Tree, key: (u64, u64, u64)) -> EditResult<Option<Vec<u8>>> {
        let (_, leaf) = self.descend(tree, key)?;
        Ok(self
            .leaf_recs(tree, leaf)?
            .into_iter()
            .find(|r| key_of(tree, r) == key))
    }

    /// The last record with key <= `key` and the one after it.
    pub fn neighbors(&mut self, tree: Tree, key: (u64, u64, u64)) -> EditResult<Neighbors> {
        // Simple and exact: read the whole tree's records once per call
        // is too slow for big trees, so walk the leaf and its right sibling.
        let (_, leaf) = self.descend(tree, key)?;
        let recs = self.leaf_recs(tree, leaf)?;
        let pos = recs.iter().position(|r| key_of(tree, r) > key);
        let left = match pos {
            Some(0) => None,
            Some(p) => recs.get(p.saturating_sub(1)).cloned(),
            None => recs.last().cloned(),
        };
        let right = match pos {
            Some(p) => recs.get(p).cloned(),
            None => {
                let b = self.block(leaf)?.clone();
                let rs = be32(&b, 12).unwrap_or(u32::MAX);
                if rs == u32::MAX {
                    None
                } else {
                    self.leaf_recs(tree, rs)?.first().cloned()
                }
            }
        };
        if left.is_none() && pos == Some(0) {
            let b = self.block(leaf)?.clone();
            if be32(&b, 8).unwrap_or(u32::MAX) != u32::MAX {
                return unsupported(format!("{tree:?}: left neighbour in the previous leaf"));
            }
        }
        Ok((left, right))
    }

    /// Delete the record with exactly this key. A leaf left under half
    /// full takes one record from a sibling that can spare it, the right
    /// one first (`xfs_btree_delrec`: lshift, then rshift); a join is
    /// refused.
    pub fn delete(&mut self, tree: Tree, key: (u64, u64, u64)) -> EditResult<()> {
        let (path, leaf) = self.descend(tree, key)?;
        let mut recs = self.leaf_recs(tree, leaf)?;
        let Some(i) = recs.iter().position(|r| key_of(tree, r) == key) else {
            return unsupported(format!("{tree:?}: no record with key {key:?} to delete"));
        };
        recs.remove(i);
        self.store_leaf_after_delete(tree, leaf, &recs)?;
        if path.is_empty() {
            return Ok(());
        }
        self.fix_keys(tree, &path, leaf)?;
        let minrecs = self.maxrecs(tree, true) / 2;
        if recs.len() >= minrecs {
            return Ok(());
        }
        let b = self.block(leaf)?.clone();
        let left = be32(&b, 8).unwrap_or(u32::MAX);
        let right = be32(&b, 12).unwrap_or(u32::MAX);
        if right != u32::MAX {
            let mut rrecs = self.leaf_recs(tree, right)?;
            if rrecs.len().saturating_sub(1) >= minrecs && !rrecs.is_empty() {
                // lshift: the right sibling's first record comes here.
                let moved = rrecs.remove(0);
                recs.push(moved);
                self.write_leaf(tree, leaf, &recs)?;
                self.store_leaf_after_delete(tree, right, &rrecs)?;
                self.fix_keys(tree, &path, leaf)?;
                let first = rrecs.first().map(|r| key_of(tree, r));
                if let Some(k) = first {
                    let (rpath, rleaf) = self.descend(tree, k)?;
                    if rleaf != right {
                        return unsupported(format!(
                            "{tree:?}: sibling {right} not found by its key"
                        ));
                    }
                    self.fix_keys(tree, &rpath, right)?;
                }
                return Ok(());
            }
        }
        if left != u32::MAX {
            let mut lrecs = self.leaf_recs(tree, left)?;
            if lrecs.len().saturating_sub(1) >= minrecs {
                // rshift: the left sibling's last record comes here.
                let Some(moved) = lrecs.pop() else {
                    return unsupported(format!("{tree:?}: empty left sibling {left}"));
                };
                recs.insert(0, moved);
                self.store_leaf_after_delete(tree, left, &lrecs)?;
                self.write_leaf(tree, leaf, &recs)?;
                self.fix_keys(tree, &path, leaf)?;
                if let Some(k) = lrecs.first().map(|r| key_of(tree, r)) {
                    let (lpath, lleaf) = self.descend(tree, k)?;
                    if lleaf == left {
                        self.fix_keys(tree, &lpath, left)?;
                    }
                }
                return Ok(());
            }
        }
        unsupported(format!(
            "{tree:?}: deleting leaves leaf {leaf} with {} records and no sibling can spare one (the kernel joins blocks)",
            recs.len()
        ))
    }

    fn store_leaf_after_delete(
        &mut self,
        tree: Tree,
        leaf: u32,
        recs: &[Vec<u8>],
    ) -> EditResult<()> {
        // xfs_btree_delrec moves the records after the deleted one down;
        // the old last slot keeps its bytes.
        self.write_leaf(tree, leaf, recs)
    }

    /// Insert a record (its key must not be present).
    pub fn insert(&mut self, tree: Tree, rec: &[u8]) -> EditResult<()> {
        let key = key_of(tree, rec);
        let (path, leaf) = self.descend(tree, key)?;
        let mut recs = self.leaf_recs(tree, leaf)?;
        if recs.len() >= self.maxrecs(tree, true) {
            return unsupported(format!(
                "{tree:?}: leaf {leaf} is full (the kernel splits it)"
            ));
        }
        let pos = recs
            .iter()
            .position(|r| key_of(tree, r) > key)
            .unwrap_or(recs.len());
        if recs
            .get(pos.wrapping_sub(1))
            .is_some_and(|r| key_of(tree, r) == key)
        {
            return unsupported(format!("{tree:?}: key {key:?} already present"));
        }
        recs.insert(pos, rec.to_vec());
        self.write_leaf(tree, leaf, &recs)?;
        self.fix_keys(tree, &path, leaf)?;
        Ok(())
    }

    /// Replace the record with key `key` by `rec` (same position).
    pub fn update(&mut self, tree: Tree, key: (u64, u64, u64), rec: &[u8]) -> EditResult<()> {
        let (path, leaf) = self.descend(tree, key)?;
        let mut recs = self.leaf_recs(tree, leaf)?;
        let Some(i) = recs.iter().position(|r| key_of(tree, r) == key) else {
            return unsupported(format!("{tree:?}: no record with key {key:?} to update"));
        };
        if let Some(r) = recs.get_mut(i) {
            *r = rec.to_vec();
        }
        self.write_leaf(tree, leaf, &recs)?;
        self.fix_keys(tree, &path, leaf)?;
        Ok(())
    }

    /// Make the node keys above `leaf` describe it again.
    fn fix_keys(&mut self, tree: Tree, path: &[(u32, usize)], leaf: u32) -> EditResult<()> {
        let mut child = leaf;
        let mut child_is_leaf = true;
        for (node, idx) in path.iter().rev() {
            let (lo, hi) = self.block_keys(tree, child, child_is_leaf)?;
            let kl = tree.key_len();
            let o = self.hdr.saturating_add(idx.saturating_mul(kl));
            let b = self.block(*node)?;
            let old = b.get(o..o.saturating_add(kl)).unwrap_or(&[]).to_vec();
            let mut new = lo.clone();
            if tree.overlapping() {
                new.extend_from_slice(&hi);
            }
            new.resize(kl, 0);
            if old == new {
                break;
            }
            if let Some(d) = b.get_mut(o..o.saturating_add(kl)) {
                d.copy_from_slice(&new);
            }
            self.dirty.insert(*node);
            child = *node;
            child_is_leaf = false;
        }
        Ok(())
    }

    /// The low key (and for rmapbt the highest high key) of a block.
    fn block_keys(&mut self, tree: Tree, agbno: u32, leaf: bool) -> EditResult<(Vec<u8>, Vec<u8>)> {
        let b = self.block(agbno)?.clone();
        let n = usize::from(be16(&b, 6).unwrap_or(0));
        if leaf {
            let rl = tree.rec_len();
            let rec = |i: usize| {
                let o = self.hdr.saturating_add(i.saturating_mul(rl));
                b.get(o..o.saturating_add(rl)).unwrap_or(&[]).to_vec()
            };
            let lo = low_key(tree, &rec(0));
            let mut hi = Vec::new();
            if tree.overlapping() {
                for i in 0..n {
                    let h = rmap_high_key(&rec(i));
                    if hi.is_empty() || key_of(tree, &h) > key_of(tree, &hi) {
                        hi = h;
                    }
                }
            }
            Ok((lo, hi))
        } else {
            let kl = tree.key_len();
            let k = |i: usize| {
                let o = self.hdr.saturating_add(i.saturating_mul(kl));
                b.get(o..o.saturating_add(kl)).unwrap_or(&[]).to_vec()
            };
            let first = k(0);
            if tree.overlapping() {
                let lo = first.get(..20).unwrap_or(&[]).to_vec();
                let mut hi: Vec<u8> = Vec::new();
                for i in 0..n {
                    let h = k(i).get(20..40).unwrap_or(&[]).to_vec();
                    if hi.is_empty() || key_of(tree, &h) > key_of(tree, &hi) {
                        hi = h;
                    }
                }
                Ok((lo, hi))
            } else {
                Ok((first, Vec::new()))
            }
        }
    }

    /// The last record of the tree (for `agf_longest` of the cntbt).
    pub fn last_record(&mut self, tree: Tree) -> EditResult<Option<Vec<u8>>> {
        let (root, levels) = self.root(tree);
        let mut agbno = root;
        for _ in 1..levels.min(9) {
            let b = self.block(agbno)?.clone();
            let n = usize::from(be16(&b, 6).unwrap_or(0));
            let maxr = self.maxrecs(tree, false);
            let p = self
                .hdr
                .saturating_add(maxr.saturating_mul(tree.key_len()))
                .saturating_add(n.saturating_sub(1).saturating_mul(4));
            agbno = be32(&b, p).unwrap_or(u32::MAX);
        }
        Ok(self.leaf_recs(tree, agbno)?.last().cloned())
    }
}

/// Helpers for intent recovery (kept apart from the editing code above).
impl<R: ReadAt> AgStore<'_, R> {
    /// `xfs_alloc_get_freelist` (not for a btree block): take the block at
    /// the head of the free list.
    pub fn take_freelist_head(&mut self) -> EditResult<u32> {
        let ss = u64::from(self.fs.geo.sectsize);
        if self.agfl.is_none() {
            let off = self.ag_byte(0)?.saturating_add(ss.saturating_mul(3));
            let b = self.read_bytes(off, ss)?;
            if be32(&b, 0) != Some(0x5841_464c) {
                return unsupported(format!("AG {}: bad AGFL magic", self.agno));
            }
            self.agfl = Some(b);
        }
        let count = self.agf_u32(48);
        if count == 0 {
            return unsupported(format!("AG {}: the free list is empty", self.agno));
        }
        let hdr: u32 = if self.fs.geo.v5 { 36 } else { 0 };
        let slots = u32::try_from(ss).unwrap_or(512).saturating_sub(hdr) / 4;
        let first = self.agf_u32(40);
        if first >= slots {
            return unsupported(format!("AG {}: agf_flfirst out of range", self.agno));
        }
        let off =
            usize::try_from(hdr.saturating_add(first.saturating_mul(4))).unwrap_or(usize::MAX);
        let bno = self
            .agfl
            .as_ref()
            .and_then(|a| be32(a, off))
            .unwrap_or(u32::MAX);
        if bno >= self.agf_u32(12) {
            return unsupported(format!(
                "AG {}: free list block {bno} outside the AG",
                self.agno
            ));
        }
        let mut next = first.saturating_add(1);
        if next == slots {
            next = 0;
        }
        self.set_agf_u32(40, next);
        self.set_agf_u32(48, count.saturating_sub(1));
        Ok(bno)
    }

    /// Records of the rmapbt whose blocks overlap `[lo, hi]`, in key
    /// order (the overlapped query of `xfs_rmap_query_range`, by the node
    /// low and high keys).
    pub fn rmap_overlapping(&mut self, lo: u32, hi: u32) -> EditResult<Vec<Vec<u8>>> {
        let tree = Tree::Rmap;
        let (root, levels) = self.root(tree);
        if levels == 0 || levels > 9 {
            return unsupported(format!("{tree:?} tree of {levels} levels"));
        }
        let mut out = Vec::new();
        let mut stack = vec![(root, levels)];
        let mut visited = 0u32;
        while let Some((agbno, level)) = stack.pop() {
            visited = visited.saturating_add(1);
            if visited > self.fs.geo.agblocks || agbno >= self.fs.geo.agblocks {
                return unsupported(format!("{tree:?}: walk out of bounds at block {agbno}"));
            }
            let b = self.block(agbno)?.clone();
            let n = usize::from(be16(&b, 6).unwrap_or(0));
            if level <= 1 {
                for i in 0..n.min(self.maxrecs(tree, true)) {
                    let o = self.hdr.saturating_add(i.saturating_mul(tree.rec_len()));
                    let r = b.get(o..o.saturating_add(tree.rec_len())).unwrap_or(&[]);
                    let start = be32(r, 0).unwrap_or(0);
                    let end = start.saturating_add(be32(r, 4).unwrap_or(0).saturating_sub(1));
                    if start <= hi && end >= lo {
                        out.push(r.to_vec());
                    }
                }
                continue;
            }
            let kl = tree.key_len();
            let maxr = self.maxrecs(tree, false);
            let mut kids = Vec::new();
            for i in 0..n.min(maxr) {
                let o = self.hdr.saturating_add(i.saturating_mul(kl));
                let k = b.get(o..o.saturating_add(kl)).unwrap_or(&[]);
                let klo = be32(k, 0).unwrap_or(0);
                let khi = be32(k, 20).unwrap_or(u32::MAX);
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

pub fn key_bno(start: u32) -> (u64, u64, u64) {
    (u64::from(start), 0, 0)
}

pub fn key_cnt(start: u32, len: u32) -> (u64, u64, u64) {
    (u64::from(len), u64::from(start), 0)
}

pub fn key_rmap(start: u32, owner: u64, offset: u64) -> (u64, u64, u64) {
    (u64::from(start), owner, offset & RMAP_OFF_MASK)
}

pub fn key_refc(start: u32) -> (u64, u64, u64) {
    (u64::from(start), 0, 0)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]
mod tests {
    use super::*;

    #[test]
    fn insert_then_delete_in_a_real_bnobt_leaf_restores_it() {
        let fs = crate::xfs::testutil::fixture_fs("log-xattrs");
        let ov = Overlay::default();
        let mut s = AgStore::new(&fs, &ov, 1).unwrap();
        let Ok(recs) = s.records(Tree::Bno) else {
            panic!()
        };
        assert!(!recs.is_empty());
        let first = (be32(&recs[0], 0).unwrap(), be32(&recs[0], 4).unwrap());
        let Ok(orig) = s.leaf_recs(Tree::Bno, s.agf_u32(16)) else {
            panic!()
        };
        // A gap before the first free extent (AG headers live there).
        assert!(first.0 > 8);
        let rec = alloc_rec(first.0 - 2, 1);
        assert!(s.insert(Tree::Bno, &rec).is_ok());
        let Ok((l, r)) = s.neighbors(Tree::Bno, key_bno(first.0 - 2)) else {
            panic!()
        };
        assert_eq!(l, Some(rec.clone()));
        assert_eq!(r, Some(recs[0].clone()));
        assert!(s.insert(Tree::Bno, &rec).is_err(), "a key twice is refused");
        assert!(s.delete(Tree::Bno, key_bno(first.0 - 2)).is_ok());
        let Ok(now) = s.leaf_recs(Tree::Bno, s.agf_u32(16)) else {
            panic!()
        };
        assert_eq!(now, orig);
        assert!(s
            .update(
                Tree::Bno,
                key_bno(first.0),
                &alloc_rec(first.0, first.1 + 1)
            )
            .is_ok());
        let Ok(Some(found)) = s.find(Tree::Bno, key_bno(first.0)) else {
            panic!()
        };
        assert_eq!(be32(&found, 4), Some(first.1 + 1));
        assert!(s.delete(Tree::Bno, key_bno(1)).is_err(), "no such record");
        let changed = s.changed().unwrap();
        assert_eq!(changed.len(), 1, "only the leaf changed");
    }

    #[test]
    fn rmap_high_keys_cover_the_extent() {
        let mut r = vec![0u8; 24];
        r[0..4].copy_from_slice(&100u32.to_be_bytes());
        r[4..8].copy_from_slice(&10u32.to_be_bytes());
        r[8..16].copy_from_slice(&131u64.to_be_bytes());
        r[16..24].copy_from_slice(&5u64.to_be_bytes());
        let h = rmap_high_key(&r);
        assert_eq!(key_of(Tree::Rmap, &h), (109, 131, 14));
        // Non-inode owners keep their offset.
        r[8..16].copy_from_slice(&super::super::cow::OWN_COW.to_be_bytes());
        let h = rmap_high_key(&r);
        assert_eq!(key_of(Tree::Rmap, &h), (109, super::super::cow::OWN_COW, 5));
    }
}
