//! A record inserted into the bmbt as `xfs_btree.c` inserts one
//! (`xfs_btree_insrec`): a record passed to a sibling, a leaf split, the
//! key and pointer added to the node above, a new root block when the root
//! in the inode is full (`xfs_btree_new_iroot`).

use super::map::{contiguity, hole_check};
use super::{Alloc, ForkAt, ForkEditor, Leaf, Rec, Step};
use crate::xfs::format::dinode::XfsBtreeBlockLong;
use crate::xfs::format::dinode::XfsDinode;
use crate::xfs::fs::{be16, be64};
use crate::xfs::read::ReadAt;
use crate::xfs::replay::ag::refuse;
use crate::xfs::replay::ag::EditResult;
use crate::xfs::replay::{put_be16, put_be64};
use crate::xfs::types::FsBlock;
use core::mem::offset_of;

impl<'a, R: ReadAt> ForkEditor<'a, R> {
    /// xfs_btree_split of a full leaf whose siblings are full too: a new
    /// leaf is allocated near it (xfs_bmbt_alloc_block: the split block is
    /// the target; one more block in di_nblocks, its reverse mapping
    /// added), the upper half of the records moves there (one more when
    /// the count is odd and the new record goes into the lower half), the
    /// sibling pointers are linked, `new` goes into whichever half holds
    /// its place, and the new leaf's key and pointer go into the parent
    /// after the old one's ([`Self::insert_entry`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn split_leaf(
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
    pub(super) fn insert_after(
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
    pub(super) fn link_right(
        &mut self,
        ino: u64,
        b: &mut [u8],
        level: u16,
        new_fsb: u64,
        maxrecs: usize,
    ) -> EditResult<u64> {
        let old_right = be64(b, offset_of!(XfsBtreeBlockLong, bb_rightsib)).unwrap_or(u64::MAX);
        put_be64(b, offset_of!(XfsBtreeBlockLong, bb_rightsib), new_fsb);
        if old_right != u64::MAX {
            let (roff, mut rb, _) = self.bmbt_block(ino, old_right, level, maxrecs)?;
            put_be64(&mut rb, offset_of!(XfsBtreeBlockLong, bb_leftsib), new_fsb);
            self.blocks.insert(roff, rb);
        }
        Ok(old_right)
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
    pub(super) fn insert_entry(
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
        let node_level =
            usize::from(be16(&nb, offset_of!(XfsBtreeBlockLong, bb_level)).unwrap_or(0));
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

    pub(super) fn map_btree(
        &mut self,
        f: &mut ForkAt,
        new: Rec,
        alloc: &mut Alloc<'_>,
    ) -> EditResult<()> {
        let ino = be64(&f.bytes, offset_of!(XfsDinode, di_ino)).unwrap_or(0);
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
                    let rest: Vec<Rec> = rleaf.recs.iter().skip(1).copied().collect();
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
    pub(super) fn make_room(
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
