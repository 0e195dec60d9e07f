//! Records taken out of the bmbt as `xfs_btree.c` deletes them
//! (`xfs_btree_delrec`): a leaf below half full borrows from or joins a
//! sibling, the node above loses the entry, a root block with one child
//! goes back into the inode (`xfs_btree_kill_iroot`).

use super::{recs_of, Alloc, ForkAt, ForkEditor, Leaf, Rec, Step};
use crate::xfs::format::dinode::XfsBtreeBlockLong;
use crate::xfs::format::dinode::XfsDinode;
use crate::xfs::fs::{be16, be64};
use crate::xfs::read::ReadAt;
use crate::xfs::replay::ag::refuse;
use crate::xfs::replay::ag::EditResult;
use crate::xfs::replay::{put_be16, put_be64};
use core::mem::offset_of;

impl<'a, R: ReadAt> ForkEditor<'a, R> {
    /// __xfs_bunmapi (REMAP) on a bmbt: the records in the range, last
    /// first (xfs_bmap_del_extent_real): each is deleted, trimmed at one
    /// end (a new first record's key goes up), or, for a range in its
    /// middle, cut to the front part with the back part inserted after it
    /// (a full leaf making room, or splitting, as for a mapping); a leaf
    /// left below half full is rebalanced ([`Self::rebalance`]); a one-leaf
    /// tree that fits the inode again becomes a list.
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

    /// The end of xfs_btree_delrec for a leaf that fell below half full: a
    /// record borrowed from the right sibling (its first, when it can
    /// spare one), else from the left (its last), else the leaf joined
    /// with its left sibling, else with its right (the emptied block freed
    /// later, its key and pointer taken out of the parent, the siblings
    /// relinked; see [`Self::parent_delete`]). With no sibling nothing
    /// moves.
    pub(super) fn rebalance(
        &mut self,
        f: &mut ForkAt,
        ino: u64,
        path: &[Step],
        off: u64,
    ) -> EditResult<()> {
        let (hdr, maxrecs, _) = self.bmbt_geometry(f);
        let minrecs = maxrecs / 2;
        let (_, bs) = self.hdr_bs();
        let b = self.read("bmbt block", off, bs)?;
        let ours = recs_of(
            &b,
            hdr,
            usize::from(be16(&b, offset_of!(XfsBtreeBlockLong, bb_numrecs)).unwrap_or(0)),
        );
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
                let fsb = be64(&b, offset_of!(XfsBtreeBlockLong, bb_leftsib)).unwrap_or(0);
                let next = be64(&b, offset_of!(XfsBtreeBlockLong, bb_rightsib)).unwrap_or(u64::MAX);
                let mut m = l.recs.clone();
                m.extend_from_slice(&ours);
                (l.off, l.bytes, fsb, path.to_vec(), next, m)
            }
            (_, Some(r)) if r.recs.len().saturating_add(n) <= maxrecs => {
                let next =
                    be64(&r.bytes, offset_of!(XfsBtreeBlockLong, bb_rightsib)).unwrap_or(u64::MAX);
                let rpath = self.path_to(f, ino, r.recs.first().map_or(0, |x| x.off), r.off)?;
                let our_fsb =
                    be64(&r.bytes, offset_of!(XfsBtreeBlockLong, bb_leftsib)).unwrap_or(0);
                let mut m = ours.clone();
                m.extend_from_slice(&r.recs);
                (off, b, our_fsb, rpath, next, m)
            }
            _ => return Ok(()),
        };
        put_be16(
            &mut keep,
            offset_of!(XfsBtreeBlockLong, bb_numrecs),
            u16::try_from(merged.len()).unwrap_or(u16::MAX),
        );
        for (k, r) in merged.iter().enumerate() {
            r.put(&mut keep, hdr.saturating_add(k.saturating_mul(16)));
        }
        put_be64(&mut keep, offset_of!(XfsBtreeBlockLong, bb_rightsib), next);
        self.blocks.insert(keep_off, keep);
        if next != u64::MAX {
            let (noff, mut nb, _) = self.bmbt_block(ino, next, 0, maxrecs)?;
            put_be64(&mut nb, offset_of!(XfsBtreeBlockLong, bb_leftsib), keep_fsb);
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
    pub(super) fn parent_delete(
        &mut self,
        f: &mut ForkAt,
        ino: u64,
        path: &[Step],
    ) -> EditResult<()> {
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
        let level = usize::from(be16(&nb, offset_of!(XfsBtreeBlockLong, bb_level)).unwrap_or(0));
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
                    let fsb = be64(&nb, offset_of!(XfsBtreeBlockLong, bb_leftsib)).unwrap_or(0);
                    let next =
                        be64(&nb, offset_of!(XfsBtreeBlockLong, bb_rightsib)).unwrap_or(u64::MAX);
                    let mut m = le;
                    m.extend_from_slice(&ours);
                    (loff, lb, fsb, lpath, noff, npath.to_vec(), next, m)
                }
                (_, Some((roff, rb, re))) if re.len().saturating_add(ours.len()) <= maxrecs => {
                    let rpath = path_of(self, f, &re, roff)?;
                    let fsb = be64(&rb, offset_of!(XfsBtreeBlockLong, bb_leftsib)).unwrap_or(0);
                    let next =
                        be64(&rb, offset_of!(XfsBtreeBlockLong, bb_rightsib)).unwrap_or(u64::MAX);
                    let mut m = ours.clone();
                    m.extend_from_slice(&re);
                    (noff, nb, fsb, npath.to_vec(), roff, rpath, next, m)
                }
                _ => return Ok(()),
            };
        let mut keep = keep;
        put_be64(&mut keep, offset_of!(XfsBtreeBlockLong, bb_rightsib), next);
        self.write_node(f, &keep_path, keep_off, keep, &merged)?;
        if next != u64::MAX {
            let (xoff, mut xb, _) = self.bmbt_block(ino, next, lvl, maxrecs)?;
            put_be64(&mut xb, offset_of!(XfsBtreeBlockLong, bb_leftsib), keep_fsb);
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
    pub(super) fn kill_iroot(&mut self, f: &mut ForkAt, ino: u64) -> EditResult<()> {
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

    /// One step of [`Self::unmap_btree`]: the last record that overlaps
    /// `[off, end)` loses the overlap, which is returned.
    pub(super) fn unmap_btree_one(
        &mut self,
        f: &mut ForkAt,
        off: u64,
        end: u64,
        alloc: &mut Alloc<'_>,
    ) -> EditResult<Option<Rec>> {
        let ino = be64(&f.bytes, offset_of!(XfsDinode, di_ino)).unwrap_or(0);
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
}
