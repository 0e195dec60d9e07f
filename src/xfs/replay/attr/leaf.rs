//! Adds into attr leaf blocks as the attr fork sees them
//! (`xfs_attr_leaf.c`): a lone leaf made a node, a leaf under a node split.
//!
//! A leaf with no room for an add (after a compaction, if it had holes):
//! a lone leaf is copied to a new attr block and attr block 0 becomes a
//! node over it (`xfs_attr3_leaf_to_node`), the add going on through the
//! node after a roll; a leaf under a node splits (`xfs_da3_split`): a new
//! leaf in a new attr block (the first unused, allocated near its
//! neighbours as `xfs_da_grow_inode` does), the entries balanced between
//! the two (`xfs_attr3_leaf_rebalance`), the new leaf linked in as a
//! sibling, the entry added where it falls, and the node given an entry
//! for the new leaf.
//!
//! A split whose entry fits neither half splits the half it is due in
//! again, as `xfs_da3_split` does with its extra block; the node above
//! takes both new entries, splitting if it must.

use super::*;
use crate::xfs::error::Location;
use crate::xfs::format::da::{XfsDa3Blkinfo, XfsDaBlkinfo};
use crate::xfs::format::dinode::XfsDinode;
use crate::xfs::replay::ag::{damaged, fails_mount};
use crate::xfs::replay::block_len;
use crate::xfs::replay::field_range;
use core::mem::offset_of;

impl<R: ReadAt> ForkEditor<'_, R> {
    /// `xfs_attr_leaf_addname` / `xfs_attr_node_addname`: the entry goes
    /// into its leaf by its hash (the node blocks' hashes following it); the
    /// inode is not logged here. A remote value's entry goes in
    /// INCOMPLETE, its value to follow. A leaf with no room (after a
    /// compaction, if it had holes) is split (`xfs_da3_split`) when under a
    /// node, or, alone, becomes a node over a copy of itself and the add
    /// goes on after a roll. Returns what is left and the work the
    /// transaction deferred (a new block's reverse mapping and what its
    /// allocation let go of), which runs first.
    pub fn attr_leaf_add(
        &mut self,
        p: &PendingAdd,
        space: &mut dyn AttrSpace,
    ) -> EditResult<(AddOutcome, Vec<Work>)> {
        let ino = p.ino;
        let hash = self.attr_hash(p.ns, &p.name, &p.value)?;
        let parent = p.ns & XFS_ATTR_PARENT != 0;
        let (mut lf, mut path, found) = self.leaf_lookup(ino, hash, |fl, n, v| {
            n == p.name.as_slice()
                && fl & XFS_ATTR_NSP_ONDISK_MASK == p.ns
                && (!parent || v == p.value.as_slice())
        })?;
        let i = match found {
            Ok(_) => {
                return fails_mount(format!("inode {ino}: the attribute is already in the leaf"))
            }
            Err(i) => i,
        };
        let bs = block_len(&self.fs().geo);
        let remote = entsize_local(p.name.len(), p.value.len()) >= bs.saturating_mul(3) / 4;
        let done = if remote {
            AddOutcome::Remote(p.clone())
        } else {
            AddOutcome::Done
        };
        if Self::leaf_add_entry(&mut lf.leaf, i, hash, p, remote)? {
            self.fix_hash_path(&mut path, &lf.leaf)?;
            self.put_attr_block(lf.boff, lf.leaf.b);
            return Ok((done, Vec::new()));
        }
        if path.is_empty() {
            let work = self.leaf_to_node(ino, lf, space)?;
            return Ok((
                AddOutcome::Again(PendingAdd {
                    state: AddState::Node,
                    ..p.clone()
                }),
                work,
            ));
        }
        let work = self.split_attr_leaf(ino, lf, path, i, p, remote, space)?;
        Ok((done, work))
    }

    /// The entry of `p` into `leaf` at `i` (a remote value's, incomplete):
    /// whether it fitted.
    fn leaf_add_entry(
        leaf: &mut Leaf,
        i: usize,
        hash: u32,
        p: &PendingAdd,
        remote: bool,
    ) -> EditResult<bool> {
        if remote {
            leaf.add_remote(i, hash, p.ns, &p.name)
        } else {
            leaf.add(i, hash, p.ns, &p.name, &p.value)
        }
    }

    /// `xfs_attr3_leaf_to_node`: the lone leaf copied to a new attr block
    /// (its own address stamped in), and attr block 0 made a level-1 node
    /// over the bytes the leaf leaves there (the header rewritten, one
    /// entry: the leaf's last hash and the copy's block).
    fn leaf_to_node(
        &mut self,
        ino: u64,
        lf: LeafFork,
        space: &mut dyn AttrSpace,
    ) -> EditResult<Vec<Work>> {
        let (dablk, nboff, work) = self.da_grow(ino, space)?;
        let fs = self.fs();
        let v5 = fs.geo.v5;
        let last = lf.leaf.lasthash().unwrap_or(0);
        let mut copy = lf.leaf.b.clone();
        if v5 {
            set_be64(&mut copy, offset_of!(XfsDa3Blkinfo, blkno), nboff / 512)?;
        }
        self.put_attr_block(nboff, copy);
        let mut node = lf.leaf.b;
        let (hdr, count_at, level_at) = node_layout(v5);
        if v5 {
            if let Some(h) = node.get_mut(..hdr) {
                h.fill(0);
            }
            set_be64(&mut node, offset_of!(XfsDa3Blkinfo, blkno), lf.boff / 512)?;
            if let Some(u) = node.get_mut(field_range(offset_of!(XfsDa3Blkinfo, uuid), 16)) {
                u.copy_from_slice(&fs.meta_uuid());
            }
            set_be64(&mut node, offset_of!(XfsDa3Blkinfo, owner), ino)?;
        } else {
            set_be32(&mut node, offset_of!(XfsDaBlkinfo, forw), 0)?;
            set_be32(&mut node, offset_of!(XfsDaBlkinfo, back), 0)?;
        }
        set_be16(
            &mut node,
            offset_of!(XfsDaBlkinfo, magic),
            if v5 {
                XFS_DA3_NODE_MAGIC
            } else {
                XFS_DA_NODE_MAGIC
            },
        )?;
        set_be16(&mut node, count_at, 1)?;
        set_be16(&mut node, level_at, 1)?;
        set_be32(&mut node, hdr, last)?;
        set_be32(
            &mut node,
            hdr.saturating_add(4),
            u32::try_from(dablk).unwrap_or(0),
        )?;
        self.put_attr_block(lf.boff, node);
        Ok(work)
    }

    /// `xfs_da3_split` of a leaf under a node: a new leaf made in a new
    /// attr block, the entries balanced across the two
    /// (`xfs_attr3_leaf_rebalance`), the new leaf linked in after the old
    /// one (before it, if its hashes are lower), the entry added to the
    /// one it falls in, the old leaf's last hash carried up, and an entry
    /// for the new leaf added to the node after the old one's. Refused: a
    /// node with no room (the kernel splits it too) or an entry that fits
    /// neither half (a second split).
    /// The second split of `xfs_da3_split` (`state->extravalid`): the half
    /// the entry was due in (`due`: in the old leaf, and where) splits into
    /// an extra leaf allocated after the new one, linked beside it
    /// (`xfs_da3_blk_link`); the entry goes where that split puts it; the
    /// node above takes the new leaf's entry after the old one's and the
    /// extra leaf's before or after it (`extraafter`), splitting when both
    /// do not fit, and the hashes go up.
    #[allow(clippy::too_many_arguments)]
    fn split_attr_leaf_again(
        &mut self,
        ino: u64,
        (old, old_dablk): (&mut Leaf, u32),
        (new, new_dablk): (&mut Leaf, u32),
        (inleaf, idx): (bool, usize),
        path: &mut [NodeStep],
        (hash, p, remote, entsize): (u32, &PendingAdd, bool, usize),
        space: &mut dyn AttrSpace,
    ) -> EditResult<Vec<Work>> {
        let fs = self.fs();
        let g = fs.geo;
        let bs = block_len(&g);
        let (xdablk, xboff, mut work) = self.da_grow(ino, space)?;
        let xdablk = u32::try_from(xdablk).unwrap_or(0);
        let mut extra = Leaf::create(bs, g.v5, xboff / 512, ino, &fs.meta_uuid())?;
        let src_dablk = if inleaf { old_dablk } else { new_dablk };
        let (neighbour, set_forw) = {
            let src: &mut Leaf = if inleaf { &mut *old } else { &mut *new };
            let (inleaf2, idx2) = src.split_into(&mut extra, idx, entsize)?;
            // xfs_da3_blk_link of the extra leaf beside the one it split
            // from.
            let (forw, back) = src.siblings();
            let before = src.hdr.count > 0
                && extra.hdr.count > 0
                && (extra.first_hash() < src.first_hash() || extra.lasthash() < src.lasthash());
            let link = if before {
                extra.set_siblings(src_dablk, back)?;
                src.set_siblings(forw, xdablk)?;
                (back, true)
            } else {
                extra.set_siblings(forw, src_dablk)?;
                src.set_siblings(xdablk, back)?;
                (forw, false)
            };
            let target = if inleaf2 { src } else { &mut extra };
            if !Self::leaf_add_entry(target, idx2, hash, p, remote)? {
                return fails_mount(format!(
                    "inode {ino}: the entry fits no leaf of a second split"
                ));
            }
            link
        };
        // The neighbour now on the extra leaf's other side: the old or the
        // new leaf in hand, or a leaf on disk.
        let point = |l: &mut Leaf| {
            let (f, b) = l.siblings();
            if set_forw {
                l.set_siblings(xdablk, b)
            } else {
                l.set_siblings(f, xdablk)
            }
        };
        if neighbour == old_dablk {
            point(old)?;
        } else if neighbour == new_dablk {
            point(new)?;
        } else if neighbour != 0 {
            let off = self.attr_block_off(ino, u64::from(neighbour))?;
            let mut b = self.read("attr block", off, bs)?;
            set_be32(&mut b, if set_forw { 0 } else { 4 }, xdablk)?;
            self.put_attr_block(off, b);
        }
        // The old leaf's hash up the path, then xfs_da3_node_add twice: the
        // new leaf after the old one's entry, the extra one before it
        // (split from the old leaf) or after it (`extraafter`), the node
        // splitting when both do not fit.
        self.fix_hash_path(path, old)?;
        let lh = |l: &Leaf| l.lasthash().unwrap_or(0);
        let (n, x) = ((lh(new), new_dablk), (lh(&extra), xdablk));
        let adds = if inleaf { [x, n] } else { [n, x] };
        self.put_attr_block(xboff, extra.b);
        work.extend(self.da_add_up(ino, path, &adds, space)?);
        Ok(work)
    }

    #[allow(clippy::too_many_arguments)]
    fn split_attr_leaf(
        &mut self,
        ino: u64,
        mut lf: LeafFork,
        mut path: Vec<NodeStep>,
        index: usize,
        p: &PendingAdd,
        remote: bool,
        space: &mut dyn AttrSpace,
    ) -> EditResult<Vec<Work>> {
        let fs = self.fs();
        let g = fs.geo;
        let bs = block_len(&g);
        let (hdr, _, _) = node_layout(g.v5);
        let cc0 = be64(&self.inode(ino)?.1, offset_of!(XfsDinode, di_changecount)).unwrap_or(0);
        let Some(bottom) = path.last() else {
            return damaged(
                "attr fork",
                Some(Location::Inode { ino }),
                "a leaf split with no node above",
            );
        };
        let old_dablk = be32(
            &bottom.b,
            hdr.saturating_add(bottom.index.saturating_mul(8))
                .saturating_add(4),
        )
        .unwrap_or(0);
        let (dablk, nboff, work) = self.da_grow(ino, space)?;
        let new_dablk = u32::try_from(dablk).unwrap_or(0);
        let mut new = Leaf::create(bs, g.v5, nboff / 512, ino, &fs.meta_uuid())?;
        let entsize = if remote {
            entsize_remote(p.name.len())
        } else {
            entsize_local(p.name.len(), p.value.len())
        };
        let (inleaf, idx) = lf.leaf.split_into(&mut new, index, entsize)?;
        // xfs_da3_blk_link.
        let (forw, back) = lf.leaf.siblings();
        let first = |l: &Leaf| l.first_hash();
        let before = lf.leaf.hdr.count > 0
            && new.hdr.count > 0
            && (first(&new) < first(&lf.leaf) || new.lasthash() < lf.leaf.lasthash());
        let relink = |ed: &mut Self, sib: u32, set_forw: bool| -> EditResult<()> {
            let off = ed.attr_block_off(ino, u64::from(sib))?;
            let mut b = ed.read("attr block", off, bs)?;
            set_be32(&mut b, if set_forw { 0 } else { 4 }, new_dablk)?;
            ed.put_attr_block(off, b);
            Ok(())
        };
        if before {
            new.set_siblings(old_dablk, back)?;
            if back != 0 {
                relink(self, back, true)?;
            }
            lf.leaf.set_siblings(forw, new_dablk)?;
        } else {
            new.set_siblings(forw, old_dablk)?;
            if forw != 0 {
                relink(self, forw, false)?;
            }
            lf.leaf.set_siblings(new_dablk, back)?;
        }
        let hash = self.attr_hash(p.ns, &p.name, &p.value)?;
        let target = if inleaf { &mut lf.leaf } else { &mut new };
        let mut work = work;
        if !Self::leaf_add_entry(target, idx, hash, p, remote)? {
            // The entry fits neither half: the half it was due in splits
            // again (xfs_da3_split with an extra block), and the node takes
            // two new entries.
            work.extend(self.split_attr_leaf_again(
                ino,
                (&mut lf.leaf, old_dablk),
                (&mut new, new_dablk),
                (inleaf, idx),
                &mut path,
                (hash, p, remote, entsize),
                space,
            )?);
            self.set_change_count(ino, cc0.wrapping_add(1))?;
            self.put_attr_block(lf.boff, lf.leaf.b);
            self.put_attr_block(nboff, new.b);
            return Ok(work);
        }
        self.fix_hash_path(&mut path, &lf.leaf)?;
        // xfs_da3_node_add: the new leaf after the old one's entry, the
        // nodes splitting on the way up when full.
        let new_last = new.lasthash().unwrap_or(0);
        work.extend(self.da_add_up(ino, &mut path, &[(new_last, new_dablk)], space)?);
        // One transaction, however many blocks it added: the change count
        // rose once.
        self.set_change_count(ino, cc0.wrapping_add(1))?;
        self.put_attr_block(lf.boff, lf.leaf.b);
        self.put_attr_block(nboff, new.b);
        Ok(work)
    }
}
