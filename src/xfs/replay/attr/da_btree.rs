//! The attr fork's da btree (`xfs_da_btree.c`): the leaf for a hash, node
//! entries and headers, a split carried up, a join, a path shift and the
//! hash fix-up.
//!
//! Attr forks in node form (a da node at attr block 0): the same node
//! path, the leaf found through the nodes (`xfs_da3_node_lookup_int`: in
//! each node the first entry whose hash is not below the name's), and
//! after an add or a removal the leaf's last hash carried up the nodes as
//! far as it changes (`xfs_da3_fixhashpath`).
//!
//! A removal that leaves a leaf at most half full merges it with a sibling
//! as `xfs_da3_join` does (see [`ForkEditor::join_leaf`]): the sibling in
//! the same node, or one under the node before or after (the path shifted
//! to it); a node left at most half full then joins a sibling node the
//! same way, up the tree, and a root left with one child takes its bytes.
//! A name not found in a leaf that ends with its hash is looked for in the
//! next leaf (`xfs_da3_path_shift`), and so on.

use super::*;
use crate::xfs::error::Location;
use crate::xfs::format::da::{XfsDa3Blkinfo, XfsDaBlkinfo};
use crate::xfs::replay::ag::damaged;
use crate::xfs::replay::block_len;
use crate::xfs::replay::field_range;
use core::mem::offset_of;

impl<R: ReadAt> ForkEditor<'_, R> {
    /// The entries (hash, block) of a da node's bytes.
    pub(super) fn da_entries(b: &[u8], v5: bool) -> Vec<(u32, u32)> {
        let (hdr, count_at, _) = node_layout(v5);
        let n = usize::from(be16(b, count_at).unwrap_or(0));
        (0..n)
            .map_while(|k| {
                let at = hdr.saturating_add(k.saturating_mul(8));
                Some((be32(b, at)?, be32(b, at.saturating_add(4))?))
            })
            .collect()
    }

    /// A da node's count and entries written into `b` (what lay past them
    /// stays).
    fn put_node_entries(
        b: &mut [u8],
        v5: bool,
        entries: &[(u32, u32)],
    ) -> Result<(), WritePastEnd> {
        let (hdr, count_at, _) = node_layout(v5);
        set_be16(b, count_at, u16::try_from(entries.len()).unwrap_or(0))?;
        for (k, (h, blk)) in entries.iter().enumerate() {
            let at = hdr.saturating_add(k.saturating_mul(8));
            set_be32(b, at, *h)?;
            set_be32(b, at.saturating_add(4), *blk)?;
        }
        Ok(())
    }

    /// A da node header for attr block `dablk` at byte `boff` of `ino`
    /// (`xfs_da3_node_create`) written over `b`'s first bytes: no
    /// siblings, `level`, no entries yet.
    fn node_header(
        &self,
        b: &mut [u8],
        boff: u64,
        ino: u64,
        level: u16,
    ) -> Result<(), WritePastEnd> {
        let fs = self.fs();
        let v5 = fs.geo.v5;
        let (hdr, count_at, level_at) = node_layout(v5);
        if let Some(h) = b.get_mut(..hdr) {
            h.fill(0);
        }
        if v5 {
            set_be64(b, offset_of!(XfsDa3Blkinfo, blkno), boff / 512)?;
            if let Some(u) = b.get_mut(field_range(offset_of!(XfsDa3Blkinfo, uuid), 16)) {
                u.copy_from_slice(&fs.meta_uuid());
            }
            set_be64(b, offset_of!(XfsDa3Blkinfo, owner), ino)?;
        }
        set_be16(
            b,
            offset_of!(XfsDaBlkinfo, magic),
            if v5 {
                XFS_DA3_NODE_MAGIC
            } else {
                XFS_DA_NODE_MAGIC
            },
        )?;
        set_be16(b, count_at, 0)?;
        set_be16(b, level_at, level)?;
        Ok(())
    }

    /// The rest of `xfs_da3_split` once a leaf has split: the entry `add`
    /// (the new leaf's last hash and block) goes into the node above,
    /// after the old leaf's. A node with no room splits first
    /// (`xfs_da3_node_split`: a new node in a new attr block, the upper
    /// half of the entries moved there, the two linked, the entry added to
    /// the half its place is in, the old node's last hash carried up), and
    /// the new node's entry goes one level up in turn; a root that splits
    /// moves (`xfs_da3_root_split`: its header and entries copied to a new
    /// attr block, block 0 made a node one level higher over the copy and
    /// the new node). Returns the work the new blocks' allocations
    /// deferred.
    pub(super) fn da_add_up(
        &mut self,
        ino: u64,
        path: &mut [NodeStep],
        adds: &[(u32, u32)],
        space: &mut dyn AttrSpace,
    ) -> EditResult<Vec<Work>> {
        let fs = self.fs();
        let v5 = fs.geo.v5;
        let bs = block_len(&fs.geo);
        let (hdr, _, level_at) = node_layout(v5);
        let node_ents = bs.saturating_sub(hdr) / 8;
        let mut work = Vec::new();
        let mut adds: Vec<(u32, u32)> = adds.to_vec();
        let mut add = adds.last().copied().unwrap_or((0, 0));
        let mut i = path.len();
        while let Some(at) = i.checked_sub(1) {
            i = at;
            let my_dablk = match at.checked_sub(1).and_then(|p| path.get(p)) {
                Some(parent) => Self::da_entries(&parent.b, v5)
                    .get(parent.index)
                    .map_or(0, |e| e.1),
                None => 0,
            };
            let Some(step) = path.get_mut(at) else {
                break;
            };
            let mut entries = Self::da_entries(&step.b, v5);
            let idx = step.index;
            if idx >= entries.len() {
                return damaged(
                    "attr fork",
                    Some(Location::Inode { ino }),
                    format!("attr node entry {idx} of {}", entries.len()),
                );
            }
            let at1 = idx.saturating_add(1);
            if entries.len().saturating_add(adds.len()) <= node_ents {
                entries.splice(at1..at1, adds.iter().copied());
                Self::put_node_entries(&mut step.b, v5, &entries)?;
                let (boff, b) = (step.boff, step.b.clone());
                self.put_attr_block(boff, b);
                let last = entries.last().map_or(0, |e| e.0);
                self.fix_hash_up(path.get_mut(..at).unwrap_or(&mut []), last)?;
                return Ok(work);
            }
            // xfs_da3_node_split.
            let level = be16(&step.b, level_at).unwrap_or(1);
            let (boff, mut b) = (step.boff, step.b.clone());
            let (ndablk, nboff, w) = self.da_grow(ino, space)?;
            work.extend(w);
            let ndablk = u32::try_from(ndablk).unwrap_or(0);
            let keep = entries.len().saturating_sub(entries.len() / 2);
            let mut moved = entries.split_off(keep);
            if idx >= keep {
                let at = idx.saturating_sub(keep).saturating_add(1).min(moved.len());
                moved.splice(at..at, adds.iter().copied());
            } else {
                entries.splice(at1..at1, adds.iter().copied());
            }
            let mut nb = vec![0u8; bs];
            self.node_header(&mut nb, nboff, ino, level)?;
            Self::put_node_entries(&mut nb, v5, &moved)?;
            // xfs_da3_blk_link: the new node after the old one.
            let forw = be32(&b, offset_of!(XfsDaBlkinfo, forw)).unwrap_or(0);
            set_be32(&mut nb, offset_of!(XfsDaBlkinfo, forw), forw)?;
            set_be32(&mut nb, offset_of!(XfsDaBlkinfo, back), my_dablk)?;
            if forw != 0 {
                let off = self.attr_block_off(ino, u64::from(forw))?;
                let mut fb = self.read("attr node block", off, bs)?;
                set_be32(&mut fb, offset_of!(XfsDaBlkinfo, back), ndablk)?;
                self.put_attr_block(off, fb);
            }
            set_be32(&mut b, offset_of!(XfsDaBlkinfo, forw), ndablk)?;
            Self::put_node_entries(&mut b, v5, &entries)?;
            self.put_attr_block(nboff, nb);
            self.put_attr_block(boff, b.clone());
            if let Some(step) = path.get_mut(at) {
                step.b = b;
            }
            let last = entries.last().map_or(0, |e| e.0);
            self.fix_hash_up(path.get_mut(..at).unwrap_or(&mut []), last)?;
            add = (moved.last().map_or(0, |e| e.0), ndablk);
            adds = vec![add];
        }
        // xfs_da3_root_split: the root split above; it moves.
        let Some(root) = path.first() else {
            return damaged(
                "attr fork",
                Some(Location::Inode { ino }),
                "a leaf split with no node above",
            );
        };
        let (rboff, rb) = (root.boff, root.b.clone());
        let entries = Self::da_entries(&rb, v5);
        let level = be16(&rb, level_at).unwrap_or(1);
        let (cdablk, cboff, w) = self.da_grow(ino, space)?;
        work.extend(w);
        let cdablk = u32::try_from(cdablk).unwrap_or(0);
        let size = hdr.saturating_add(entries.len().saturating_mul(8)).min(bs);
        let mut copy = vec![0u8; bs];
        if let (Some(d), Some(src)) = (copy.get_mut(..size), rb.get(..size)) {
            d.copy_from_slice(src);
        }
        if v5 {
            set_be64(&mut copy, offset_of!(XfsDa3Blkinfo, blkno), cboff / 512)?;
        }
        let forw = be32(&copy, offset_of!(XfsDaBlkinfo, forw)).unwrap_or(0);
        if forw != 0 {
            let off = self.attr_block_off(ino, u64::from(forw))?;
            let mut fb = self.read("attr node block", off, bs)?;
            set_be32(&mut fb, offset_of!(XfsDaBlkinfo, back), cdablk)?;
            self.put_attr_block(off, fb);
        }
        self.put_attr_block(cboff, copy);
        let mut nr = rb;
        self.node_header(&mut nr, rboff, ino, level.saturating_add(1))?;
        let last = entries.last().map_or(0, |e| e.0);
        Self::put_node_entries(&mut nr, v5, &[(last, cdablk), add])?;
        self.put_attr_block(rboff, nr);
        Ok(work)
    }

    /// The attr block at file block `dablk` of `ino`'s attr fork: its
    /// byte offset.
    pub(super) fn attr_block_off(&self, ino: u64, dablk: u64) -> EditResult<u64> {
        let recs = self.attr_extents(ino)?;
        let Some(r) = recs.iter().find(|r| r.off <= dablk && r.end() > dablk) else {
            return damaged(
                "attr fork",
                Some(Location::Inode { ino }),
                format!("attr block {dablk} is not mapped"),
            );
        };
        self.block_off(
            "attr block",
            r.start.saturating_add(dablk.saturating_sub(r.off)),
        )
        .map_err(|e| e.within(|| format!("inode {ino}")))
    }

    /// `xfs_da3_node_lookup_int`: the leaf where an entry of hash `hash`
    /// is or would go, and the node blocks above it (none for a fork whose
    /// block 0 is the leaf). In each node the first entry whose hash is
    /// not below `hash` (else the last) leads down.
    fn leaf_for(&self, ino: u64, hash: u32) -> EditResult<(LeafFork, Vec<NodeStep>)> {
        let fs = self.fs();
        let g = fs.geo;
        let bs = block_len(&g);
        let (hdr, count_at, level_at) = node_layout(g.v5);
        let mut path = Vec::new();
        let mut dablk = 0u64;
        let mut want_level: Option<u16> = None;
        loop {
            let boff = self.attr_block_off(ino, dablk)?;
            let b = self.read("attr block", boff, bs)?;
            let magic = be16(&b, offset_of!(XfsDaBlkinfo, magic));
            if !matches!(magic, Some(XFS_DA_NODE_MAGIC | XFS_DA3_NODE_MAGIC)) {
                if want_level.is_some_and(|l| l != 0) {
                    return damaged(
                        "attr fork",
                        Some(Location::Inode { ino }),
                        format!("attr block {dablk} is a leaf where a node was due"),
                    );
                }
                let leaf = Leaf::parse(b, g.v5, "attr leaf block")
                    .map_err(|e| e.within(|| format!("inode {ino}, attr block {dablk}")))?;
                let single = dablk == 0
                    && matches!(self.attr_extents(ino)?.as_slice(), [r] if r.off == 0 && r.len == 1);
                return Ok((LeafFork { boff, leaf, single }, path));
            }
            let count = usize::from(be16(&b, count_at).unwrap_or(0));
            let level = be16(&b, level_at).unwrap_or(0);
            let entries = bs.saturating_sub(hdr) / 8;
            if count == 0 || count > entries || level == 0 || level >= 5 {
                return damaged(
                    "attr fork",
                    Some(Location::Inode { ino }),
                    format!("attr node block {dablk} with {count} entries at level {level}"),
                );
            }
            if want_level.is_some_and(|l| l != level) {
                return damaged(
                    "attr fork",
                    Some(Location::Inode { ino }),
                    format!("attr node block {dablk} at level {level}, not the one due"),
                );
            }
            want_level = Some(level.saturating_sub(1));
            let ent = |i: usize| {
                let at = hdr.saturating_add(i.saturating_mul(8));
                (
                    be32(&b, at).unwrap_or(0),
                    be32(&b, at.saturating_add(4)).unwrap_or(0),
                )
            };
            let index = (0..count)
                .find(|&i| ent(i).0 >= hash)
                .unwrap_or(count.saturating_sub(1));
            let next = u64::from(ent(index).1);
            if next == 0 || path.len() >= 5 {
                return damaged(
                    "attr fork",
                    Some(Location::Inode { ino }),
                    format!("attr node block {dablk} points back at the root"),
                );
            }
            path.push(NodeStep { boff, b, index });
            dablk = next;
        }
    }

    /// `xfs_da3_node_lookup_int` on an attr fork in node form: the leaf
    /// `hash` leads to, searched for an entry `matches` accepts; when it is
    /// not there and the leaf ends with `hash`, the next leaf is searched
    /// (`xfs_da3_path_shift`), and so on. Returns the leaf the search ended
    /// in, the path to it and the entry's index (or where one would go).
    pub(super) fn leaf_lookup(
        &self,
        ino: u64,
        hash: u32,
        matches: impl Fn(u8, &[u8], &[u8]) -> bool,
    ) -> EditResult<(LeafFork, Vec<NodeStep>, Result<usize, usize>)> {
        let (mut lf, mut path) = self.leaf_for(ino, hash)?;
        let mut seen = std::collections::BTreeSet::new();
        loop {
            let found = lf.leaf.lookup(hash, &matches);
            if found.is_ok() || path.is_empty() || lf.leaf.lasthash() != Some(hash) {
                return Ok((lf, path, found));
            }
            if !seen.insert(lf.boff) {
                return damaged(
                    "attr fork",
                    Some(Location::Inode { ino }),
                    "the attr tree leads back to a leaf it has searched",
                );
            }
            match self.shift_leaf(ino, &mut path, true)? {
                Some(next) => lf = next,
                None => return Ok((lf, path, found)),
            }
        }
    }

    /// `xfs_da3_path_shift` at a node: the path, which ends at a node, moved
    /// to that node's sibling after (`forward`) or before it at the same
    /// level; `false`, the path unchanged, at the edge of the tree.
    fn shift_node(&self, ino: u64, path: &mut Vec<NodeStep>, forward: bool) -> EditResult<bool> {
        let depth = path.len();
        let search = depth.saturating_sub(1);
        Ok(self.shift_path(ino, path, forward, search)?.is_some())
    }

    /// `xfs_da3_path_shift`: the path moved to the leaf after (`forward`)
    /// or before the one it ends at; `None`, the path unchanged, at the end
    /// of the tree.
    fn shift_leaf(
        &self,
        ino: u64,
        path: &mut Vec<NodeStep>,
        forward: bool,
    ) -> EditResult<Option<LeafFork>> {
        let search = path.len();
        let Some(dablk) = self.shift_path(ino, path, forward, search)? else {
            return Ok(None);
        };
        let g = self.fs().geo;
        let bs = block_len(&g);
        let boff = self.attr_block_off(ino, dablk)?;
        let leaf = Leaf::parse(self.read("attr block", boff, bs)?, g.v5, "attr leaf block")
            .map_err(|e| e.within(|| format!("inode {ino}, attr block {dablk}")))?;
        Ok(Some(LeafFork {
            boff,
            leaf,
            single: false,
        }))
    }

    /// The walk of `xfs_da3_path_shift` over a path of nodes: up to the
    /// deepest of its first `search` nodes not at its last (`forward`) or
    /// first entry, one entry on, then down the first or last entries until
    /// the path is as long as it was, each node checked to be at its
    /// level. Returns the block below the path's last node, or `None`, the
    /// path unchanged, at the edge of the tree.
    fn shift_path(
        &self,
        ino: u64,
        path: &mut Vec<NodeStep>,
        forward: bool,
        search: usize,
    ) -> EditResult<Option<u64>> {
        let g = self.fs().geo;
        let (hdr, count_at, level_at) = node_layout(g.v5);
        let count_of = |b: &[u8]| usize::from(be16(b, count_at).unwrap_or(0));
        let entry = |b: &[u8], i: usize| {
            u64::from(
                be32(b, hdr.saturating_add(i.saturating_mul(8)).saturating_add(4)).unwrap_or(0),
            )
        };
        let Some(up) = path.get(..search).and_then(|p| {
            p.iter().rposition(|s| {
                if forward {
                    s.index.saturating_add(1) < count_of(&s.b)
                } else {
                    s.index > 0
                }
            })
        }) else {
            return Ok(None);
        };
        let depth = path.len();
        // The level of the path's last node; the others are above it.
        let base = path.last().map_or(1, |s| be16(&s.b, level_at).unwrap_or(1));
        path.truncate(up.saturating_add(1));
        let mut dablk = match path.last_mut() {
            Some(s) => {
                s.index = if forward {
                    s.index.saturating_add(1)
                } else {
                    s.index.saturating_sub(1)
                };
                entry(&s.b, s.index)
            }
            None => return Ok(None),
        };
        let bs = block_len(&g);
        while path.len() < depth {
            if dablk == 0 {
                return damaged(
                    "attr fork",
                    Some(Location::Inode { ino }),
                    "an attr node entry points back at the root",
                );
            }
            let boff = self.attr_block_off(ino, dablk)?;
            let b = self.read("attr node block", boff, bs)?;
            let above = depth.saturating_sub(1).saturating_sub(path.len());
            let want = base.saturating_add(u16::try_from(above).unwrap_or(u16::MAX));
            if !matches!(
                be16(&b, offset_of!(XfsDaBlkinfo, magic)),
                Some(XFS_DA_NODE_MAGIC | XFS_DA3_NODE_MAGIC)
            ) || be16(&b, level_at).unwrap_or(0) != want
                || count_of(&b) == 0
            {
                return damaged(
                    "attr fork",
                    Some(Location::Inode { ino }),
                    format!("attr block {dablk} is not the node at level {want} the tree leads to"),
                );
            }
            let index = if forward {
                0
            } else {
                count_of(&b).saturating_sub(1)
            };
            dablk = entry(&b, index);
            path.push(NodeStep { boff, b, index });
        }
        if dablk == 0 {
            return damaged(
                "attr fork",
                Some(Location::Inode { ino }),
                "an attr node entry points back at the root",
            );
        }
        Ok(Some(dablk))
    }

    /// `xfs_da3_fixhashpath`: the hashes on the way down to `leaf` made its
    /// last hash again, as far up as they change; the changed node blocks
    /// are kept.
    pub(super) fn fix_hash_path(
        &mut self,
        path: &mut [NodeStep],
        leaf: &Leaf,
    ) -> Result<(), WritePastEnd> {
        if let Some(last) = leaf.lasthash() {
            self.fix_hash_up(path, last)?;
        }
        Ok(())
    }

    /// The hashes of `path`, from its bottom up, made `last` (the last hash
    /// of what lies below) as far as they change.
    fn fix_hash_up(&mut self, path: &mut [NodeStep], mut last: u32) -> Result<(), WritePastEnd> {
        let (hdr, count_at, _) = node_layout(self.fs().geo.v5);
        for step in path.iter_mut().rev() {
            let at = hdr.saturating_add(step.index.saturating_mul(8));
            if be32(&step.b, at) == Some(last) {
                break;
            }
            set_be32(&mut step.b, at, last)?;
            self.put_attr_block(step.boff, step.b.clone());
            let count = usize::from(be16(&step.b, count_at).unwrap_or(0));
            let last_at = hdr.saturating_add(count.saturating_sub(1).saturating_mul(8));
            last = be32(&step.b, last_at).unwrap_or(0);
        }
        Ok(())
    }

    /// `xfs_da3_join` after a removal left `lf`, a leaf under a node, below
    /// 37% full: `xfs_attr3_leaf_toosmall` picks a sibling to merge with
    /// (the next one in the node if the leaf is empty; else the lower
    /// numbered of the siblings, tried first, or the other, whose entries
    /// and the leaf's fit one block with a quarter to spare), and keeps
    /// the lower numbered block of the two. The other's entries move into
    /// it (`xfs_attr3_leaf_unbalance`: appended or put first by their
    /// hashes; through a fresh block when the kept one has holes), its
    /// last hash goes into the node, the dropped leaf leaves the sibling
    /// chain and the fork (its block unmapped and freed, never written),
    /// and its entry leaves the node. A root node left with one entry
    /// takes its child's bytes (`xfs_da3_root_join`), the child's block
    /// going the same way; a node below the root carries its new last
    /// hash up. Returns the deferred reverse mappings and frees. Refused:
    /// a node left too small that the kernel would join with a sibling
    /// node.
    #[allow(clippy::too_many_lines)]
    pub(super) fn join_leaf(
        &mut self,
        ino: u64,
        lf: LeafFork,
        path: Vec<NodeStep>,
    ) -> EditResult<Vec<Work>> {
        let fs = self.fs();
        let v5 = fs.geo.v5;
        let bs = block_len(&fs.geo);
        let (hdr, count_at, _) = node_layout(v5);
        let keep = |ed: &mut Self, lf: LeafFork| {
            ed.put_attr_block(lf.boff, lf.leaf.b);
            Ok(Vec::new())
        };
        let Some(root) = path.last() else {
            return keep(self, lf);
        };
        let idx = root.index;
        let count = usize::from(be16(&root.b, count_at).unwrap_or(0));
        let before_of = |b: &[u8], i: usize| {
            be32(b, hdr.saturating_add(i.saturating_mul(8)).saturating_add(4)).unwrap_or(0)
        };
        let cur = before_of(&root.b, idx);
        let (forw, back) = lf.leaf.siblings();
        let sib_index = |forward: bool| {
            if forward {
                (idx.saturating_add(1) < count).then(|| idx.saturating_add(1))
            } else {
                idx.checked_sub(1)
            }
        };
        // (the sibling: its index in the node, or the direction to it when
        // it sits under another node; whether the sibling is dropped)
        let pick = if lf.leaf.hdr.count == 0 {
            let forward = forw != 0;
            Some(match sib_index(forward) {
                Some(si) => (Sib::Same(si), false),
                None => (Sib::Across(forward, None), false),
            })
        } else {
            let first = forw < back;
            let mut chosen = None;
            for forward in [first, !first] {
                let blkno = if forward { forw } else { back };
                if blkno == 0 {
                    continue;
                }
                let off = self.attr_block_off(ino, u64::from(blkno))?;
                let other = Leaf::parse(self.read("attr block", off, bs)?, v5, "attr leaf block")
                    .map_err(|e| e.within(|| format!("inode {ino}, attr block {blkno}")))?;
                let need = lf
                    .leaf
                    .hdr
                    .usedbytes
                    .saturating_add(other.hdr.usedbytes)
                    .saturating_add(
                        lf.leaf
                            .hdr
                            .count
                            .saturating_add(other.hdr.count)
                            .saturating_mul(8),
                    )
                    .saturating_add(lf.leaf.hdr_size());
                if need <= bs.saturating_sub(bs >> 2) {
                    chosen = Some((forward, blkno));
                    break;
                }
            }
            chosen.map(|(forward, blkno)| {
                match sib_index(forward).filter(|&si| before_of(&root.b, si) == blkno) {
                    Some(si) => (Sib::Same(si), blkno >= cur),
                    None => (Sib::Across(forward, Some(blkno)), blkno >= cur),
                }
            })
        };
        let Some((where_, drop_sibling)) = pick else {
            return keep(self, lf);
        };
        // The sibling, and the path to it: in the same node, or
        // (xfs_da3_path_shift) under the node before or after.
        let (sibling, sib, sib_path) = match where_ {
            Sib::Same(si) => {
                let sib = before_of(&root.b, si);
                let sib_off = self.attr_block_off(ino, u64::from(sib))?;
                let sib_leaf =
                    Leaf::parse(self.read("attr block", sib_off, bs)?, v5, "attr leaf block")
                        .map_err(|e| e.within(|| format!("inode {ino}, attr block {sib}")))?;
                let mut sib_path = path.clone();
                if let Some(last) = sib_path.last_mut() {
                    last.index = si;
                }
                let lf = LeafFork {
                    boff: sib_off,
                    leaf: sib_leaf,
                    single: false,
                };
                (lf, sib, sib_path)
            }
            Sib::Across(forward, blkno) => {
                let mut sib_path = path.clone();
                let Some(sibling) = self.shift_leaf(ino, &mut sib_path, forward)? else {
                    return keep(self, lf);
                };
                let sib = sib_path.last().map_or(0, |s| before_of(&s.b, s.index));
                if blkno.is_some_and(|b| b != sib) {
                    return damaged(
                        "attr fork",
                        Some(Location::Inode { ino }),
                        format!(
                            "attr leaf {cur} names leaf {} as its sibling, the nodes lead to {sib}",
                            blkno.unwrap_or(0)
                        ),
                    );
                }
                (sibling, sib, sib_path)
            }
        };
        let same_node = matches!(where_, Sib::Same(_));
        let (mut drop, drop_blk, drop_path, mut save, save_blk, mut save_path) = if drop_sibling {
            (sibling, sib, sib_path, lf, cur, path)
        } else {
            (lf, cur, path, sibling, sib, sib_path)
        };
        // xfs_attr3_leaf_unbalance.
        let dc = drop.leaf.hdr.count;
        let sc = save.leaf.hdr.count;
        let order = save.leaf.goes_after(&drop.leaf);
        if !save.leaf.hdr.holes {
            let at = if order { 0 } else { sc };
            drop.leaf.move_to(&mut save.leaf, 0, at, dc)?;
        } else {
            let mut tmp = save.leaf.emptied()?;
            if order {
                drop.leaf.move_to(&mut tmp, 0, 0, dc)?;
                let n = tmp.hdr.count;
                save.leaf.move_to(&mut tmp, 0, n, sc)?;
            } else {
                save.leaf.move_to(&mut tmp, 0, 0, sc)?;
                let n = tmp.hdr.count;
                drop.leaf.move_to(&mut tmp, 0, n, dc)?;
            }
            save.leaf = tmp;
        }
        // The kept leaf's last hash into its node, and up the path to it
        // as far as it changes (xfs_da3_fixhashpath on the other path);
        // in the node both leaves share, the node is written below.
        let mut path = drop_path;
        if let Some(last) = save.leaf.lasthash() {
            if same_node {
                if let Some(root) = path.last_mut() {
                    let at = save_path.last().map_or(0, |s| s.index);
                    set_be32(&mut root.b, hdr.saturating_add(at.saturating_mul(8)), last)?;
                }
            } else {
                self.fix_hash_up(&mut save_path, last)?;
                // The dropped leaf's path sees those blocks as they are now.
                for step in path.iter_mut() {
                    step.b = self.read("attr node block", step.boff, bs)?;
                }
            }
        }
        // xfs_da3_blk_unlink.
        let (sforw, sback) = save.leaf.siblings();
        let (dforw, dback) = drop.leaf.siblings();
        let relink = |ed: &mut Self, blk: u32, forw: bool| -> EditResult<()> {
            let off = ed.attr_block_off(ino, u64::from(blk))?;
            let mut b = ed.read("attr block", off, bs)?;
            set_be32(&mut b, if forw { 0 } else { 4 }, save_blk)?;
            ed.put_attr_block(off, b);
            Ok(())
        };
        if sback == drop_blk {
            save.leaf.set_siblings(sforw, dback)?;
            if dback != 0 {
                relink(self, dback, true)?;
            }
        } else {
            save.leaf.set_siblings(dforw, sback)?;
            if dforw != 0 {
                relink(self, dforw, false)?;
            }
        }
        self.put_attr_block(save.boff, save.leaf.b);
        // xfs_da_shrink_inode: the dropped leaf unmapped, never written.
        let (mut work, _, _) = self.attr_unmap_blocks(ino, u64::from(drop_blk), 1)?;
        self.drop_attr_block(drop.boff);
        // Up the tree (xfs_da3_join): the dropped block's entry leaves its
        // node; a node below the root left at most half full joins a
        // sibling node when both fit three quarters of a block, and so on
        // up; a root left with one child takes that child's bytes.
        let node_ents = bs.saturating_sub(hdr) / 8;
        // The block number of the node a path ends at: its parent's entry.
        let dablk_of = |p: &[NodeStep]| -> u32 {
            p.len()
                .checked_sub(2)
                .and_then(|i| p.get(i))
                .map_or(0, |s| before_of(&s.b, s.index))
        };
        loop {
            let depth = path.len();
            let Some(node) = path.last_mut() else {
                return Ok(work);
            };
            // xfs_da3_node_remove.
            let count = usize::from(be16(&node.b, count_at).unwrap_or(0));
            let at = hdr.saturating_add(node.index.saturating_mul(8));
            let end = hdr.saturating_add(count.saturating_mul(8));
            if at.saturating_add(8) < end {
                node.b.copy_within(at.saturating_add(8)..end, at);
            }
            if let Some(d) = node.b.get_mut(end.saturating_sub(8)..end) {
                d.fill(0);
            }
            let left = count.saturating_sub(1);
            set_be16(&mut node.b, count_at, u16::try_from(left).unwrap_or(0))?;
            self.put_attr_block(node.boff, node.b.clone());
            if depth == 1 {
                break;
            }
            // xfs_da3_fixhashpath (nothing to carry from an empty node).
            if left > 0 {
                let last_at = hdr.saturating_add(left.saturating_sub(1).saturating_mul(8));
                let last = be32(&node.b, last_at).unwrap_or(0);
                let above = depth.saturating_sub(1);
                self.fix_hash_up(path.get_mut(..above).unwrap_or(&mut []), last)?;
            }
            // xfs_da3_node_toosmall.
            if left > node_ents >> 1 {
                return Ok(work);
            }
            let Some(node) = path.last() else {
                return Ok(work);
            };
            let (nforw, nback) = (
                be32(&node.b, offset_of!(XfsDaBlkinfo, forw)).unwrap_or(0),
                be32(&node.b, offset_of!(XfsDaBlkinfo, back)).unwrap_or(0),
            );
            let cur = dablk_of(&path);
            let choice = if left == 0 {
                Some((nforw != 0, None))
            } else {
                let room = node_ents
                    .saturating_sub(node_ents >> 2)
                    .saturating_sub(left);
                let first = nforw < nback;
                let mut chosen = None;
                for forward in [first, !first] {
                    let blkno = if forward { nforw } else { nback };
                    if blkno == 0 {
                        continue;
                    }
                    let off = self.attr_block_off(ino, u64::from(blkno))?;
                    let sb = self.read("attr node block", off, bs)?;
                    if usize::from(be16(&sb, count_at).unwrap_or(0)) <= room {
                        chosen = Some((forward, Some(blkno)));
                        break;
                    }
                }
                chosen
            };
            let Some((forward, blkno)) = choice else {
                return Ok(work);
            };
            let mut alt = path.clone();
            if !self.shift_node(ino, &mut alt, forward)? {
                return Ok(work);
            }
            let sib = dablk_of(&alt);
            if blkno.is_some_and(|b| b != sib) {
                return damaged(
                    "attr fork",
                    Some(Location::Inode { ino }),
                    format!(
                        "attr node {cur} names node {} as its sibling, the tree leads to {sib}",
                        blkno.unwrap_or(0)
                    ),
                );
            }
            // The higher-numbered node goes; an empty one always does.
            let drop_sibling = blkno.is_some() && sib > cur;
            let (mut dpath, mut spath) = if drop_sibling {
                (alt, path)
            } else {
                (path, alt)
            };
            let (Some(d), Some(sv)) = (dpath.last(), spath.last()) else {
                return Ok(work);
            };
            // xfs_da3_node_unbalance: the dropped node's entries before or
            // after the kept one's.
            let dcount = usize::from(be16(&d.b, count_at).unwrap_or(0));
            let scount = usize::from(be16(&sv.b, count_at).unwrap_or(0));
            let dents = Self::da_entries(&d.b, v5);
            let sents = Self::da_entries(&sv.b, v5);
            let lower = match (dents.first(), sents.first(), dents.last(), sents.last()) {
                (Some(df), Some(sf), Some(dl), Some(sl)) => df.0 < sf.0 || dl.0 < sl.0,
                _ => false,
            };
            let merged: Vec<(u32, u32)> = if lower {
                dents.iter().chain(sents.iter()).copied().collect()
            } else {
                sents.iter().chain(dents.iter()).copied().collect()
            };
            if merged.len() != dcount.saturating_add(scount) || merged.len() > node_ents {
                return damaged(
                    "attr fork",
                    Some(Location::Inode { ino }),
                    format!("attr nodes {cur} and {sib} do not fit one block"),
                );
            }
            let (save_boff, drop_boff) = (sv.boff, d.boff);
            let (dforw, dback) = (
                be32(&d.b, offset_of!(XfsDaBlkinfo, forw)).unwrap_or(0),
                be32(&d.b, offset_of!(XfsDaBlkinfo, back)).unwrap_or(0),
            );
            let mut sb = sv.b.clone();
            Self::put_node_entries(&mut sb, v5, &merged)?;
            // xfs_da3_blk_unlink: the kept node takes the dropped one's
            // place in the sibling chain.
            let (save_blk, drop_blk) = (dablk_of(&spath), dablk_of(&dpath));
            let (sforw, sback) = (
                be32(&sb, offset_of!(XfsDaBlkinfo, forw)).unwrap_or(0),
                be32(&sb, offset_of!(XfsDaBlkinfo, back)).unwrap_or(0),
            );
            let relink = |ed: &mut Self, blk: u32, forw: bool| -> EditResult<()> {
                let off = ed.attr_block_off(ino, u64::from(blk))?;
                let mut b = ed.read("attr block", off, bs)?;
                set_be32(&mut b, if forw { 0 } else { 4 }, save_blk)?;
                ed.put_attr_block(off, b);
                Ok(())
            };
            if sback == drop_blk {
                set_be32(&mut sb, offset_of!(XfsDaBlkinfo, back), dback)?;
                if dback != 0 {
                    relink(self, dback, true)?;
                }
            } else if sforw == drop_blk {
                set_be32(&mut sb, offset_of!(XfsDaBlkinfo, forw), dforw)?;
                if dforw != 0 {
                    relink(self, dforw, false)?;
                }
            }
            self.put_attr_block(save_boff, sb.clone());
            if let Some(last) = spath.last_mut() {
                last.b = sb.clone();
            }
            // xfs_da3_fixhashpath on the kept node's path.
            if let Some(&(last, _)) = merged.last() {
                let above = spath.len().saturating_sub(1);
                self.fix_hash_up(spath.get_mut(..above).unwrap_or(&mut []), last)?;
            }
            // xfs_da_shrink_inode: the dropped node unmapped, never written.
            let (more, _, _) = self.attr_unmap_blocks(ino, u64::from(drop_blk), 1)?;
            work.extend(more);
            self.drop_attr_block(drop_boff);
            // One level up, along the dropped node's path, as it is now.
            dpath.pop();
            for step in dpath.iter_mut() {
                step.b = self.read("attr node block", step.boff, bs)?;
            }
            path = dpath;
        }
        let Some(root) = path.last() else {
            return Ok(work);
        };
        if be16(&root.b, count_at).unwrap_or(0) != 1 {
            return Ok(work);
        }
        // xfs_da3_root_join: the only child's bytes into attr block 0.
        let child = before_of(&root.b, 0);
        let child_off = self.attr_block_off(ino, u64::from(child))?;
        let mut bytes = self.read("attr block", child_off, bs)?;
        if v5 {
            set_be64(
                &mut bytes,
                offset_of!(XfsDa3Blkinfo, blkno),
                root.boff / 512,
            )?;
        }
        let root_off = root.boff;
        self.put_attr_block(root_off, bytes);
        let (more, _, _) = self.attr_unmap_blocks(ino, u64::from(child), 1)?;
        work.extend(more);
        self.drop_attr_block(child_off);
        Ok(work)
    }
}
