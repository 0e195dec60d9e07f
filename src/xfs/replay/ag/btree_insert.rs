//! A record inserted into an AG btree as `xfs_btree.c` inserts one
//! (`xfs_btree_insrec`): room made by a shift to the left or right sibling,
//! else by a split (`xfs_btree_split`), a new root when the root splits
//! (`xfs_btree_new_root`).

use super::btree::{Cursor, CursorLevel};
use super::error::{refuse, EditResult};
use super::tree_ops::rec_low_key;
use super::AgStore;
use crate::xfs::format::ag::NULLAGBLOCK;
use crate::xfs::read::ReadAt;

impl<'a, R: ReadAt> AgStore<'a, R> {
    /// `xfs_btree_lshift`: move the first entry of the cursor's block to
    /// its left sibling.
    pub(super) fn lshift(&mut self, cur: &mut Cursor, level: usize) -> EditResult<bool> {
        let tree = cur.tree;
        let rb = cur.at(level).bno;
        let lb = self.sib(rb, false);
        if lb == NULLAGBLOCK || cur.at(level).ptr <= 1 {
            return Ok(false);
        }
        self.load(tree, lb, Some(level))?;
        let mut lrecs = self.numrecs(lb);
        if lrecs == self.maxrecs(tree, level) {
            return Ok(false);
        }
        let mut rrecs = self.numrecs(rb);
        lrecs = lrecs.saturating_add(1);
        rrecs = rrecs.saturating_sub(1);
        self.copy_entries(tree, level, rb, 1, lb, lrecs, 1);
        self.set_numrecs(lb, lrecs);
        self.set_numrecs(rb, rrecs);
        self.shift_entries(tree, rb, level, 2, 1, rrecs);
        if tree.overlapping() {
            let mut t = cur.clone();
            if !self.firstrec(&mut t, level) {
                return Err(self.cursor_lost(tree, rb));
            }
            self.decrement_level(&mut t, level)?;
            self.update_keys(&t, level);
        }
        self.update_keys(cur, level);
        let p = cur.at(level).ptr.saturating_sub(1);
        cur.set_ptr(level, p);
        Ok(true)
    }

    /// `xfs_btree_rshift`: move the last entry of the cursor's block to
    /// its right sibling.
    pub(super) fn rshift(&mut self, cur: &mut Cursor, level: usize) -> EditResult<bool> {
        let tree = cur.tree;
        let lb = cur.at(level).bno;
        let rb = self.sib(lb, true);
        if rb == NULLAGBLOCK {
            return Ok(false);
        }
        let lrecs = self.numrecs(lb);
        if cur.at(level).ptr >= lrecs {
            return Ok(false);
        }
        self.load(tree, rb, Some(level))?;
        let rrecs = self.numrecs(rb);
        if rrecs == self.maxrecs(tree, level) {
            return Ok(false);
        }
        self.shift_entries(tree, rb, level, 1, 2, rrecs);
        self.copy_entries(tree, level, lb, lrecs, rb, 1, 1);
        self.set_numrecs(lb, lrecs.saturating_sub(1));
        self.set_numrecs(rb, rrecs.saturating_add(1));
        let mut t = cur.clone();
        if !self.lastrec(&mut t, level) {
            return Err(self.cursor_lost(tree, lb));
        }
        self.increment_level(&mut t, level)?;
        if tree.overlapping() {
            self.update_keys(cur, level);
        }
        self.update_keys(&t, level);
        Ok(true)
    }

    /// `xfs_btree_split`: move the upper half of the cursor's block to a
    /// new right sibling. Returns the new block, its keys, and a cursor
    /// for the level above that points after the old block.
    #[allow(clippy::type_complexity)]
    pub(super) fn split(
        &mut self,
        cur: &mut Cursor,
        level: usize,
    ) -> EditResult<Option<(u32, Vec<u8>, Option<Cursor>)>> {
        let tree = cur.tree;
        let lb = cur.at(level).bno;
        let Some(rb) = self.alloc_block(tree, lb)? else {
            return Ok(None);
        };
        self.init_block(tree, rb, level, 0);
        let mut lrecs = self.numrecs(lb);
        let mut rrecs = lrecs / 2;
        if lrecs & 1 == 1 && cur.at(level).ptr <= rrecs.saturating_add(1) {
            rrecs = rrecs.saturating_add(1);
        }
        let src = lrecs.saturating_sub(rrecs).saturating_add(1);
        lrecs = lrecs.saturating_sub(rrecs);
        self.set_numrecs(lb, lrecs);
        self.set_numrecs(rb, rrecs);
        self.copy_entries(tree, level, lb, src, rb, 1, rrecs);
        let key = self.get_keys(tree, rb);
        let rr = self.sib(lb, true);
        self.set_sib(rb, true, rr);
        self.set_sib(rb, false, lb);
        self.set_sib(lb, true, rb);
        if rr != NULLAGBLOCK {
            self.load(tree, rr, Some(level))?;
            self.set_sib(rr, false, rb);
        }
        if tree.overlapping() {
            self.update_keys(cur, level);
        }
        let ptr = cur.at(level).ptr;
        if ptr > lrecs.saturating_add(1) {
            cur.set(level, rb, ptr.saturating_sub(lrecs));
        }
        let ncur = if level.saturating_add(1) < cur.nlevels() {
            let mut n = cur.clone();
            let up = level.saturating_add(1);
            let p = n.at(up).ptr.saturating_add(1);
            n.set_ptr(up, p);
            Some(n)
        } else {
            None
        };
        Ok(Some((rb, key, ncur)))
    }

    /// `xfs_btree_new_root`: the root split; a new root above the two
    /// halves.
    pub(super) fn new_root(&mut self, cur: &mut Cursor) -> EditResult<bool> {
        let tree = cur.tree;
        let (root, _) = self.root(tree)?;
        let Some(nb) = self.alloc_block(tree, root)? else {
            return Ok(false);
        };
        self.set_root(tree, nb, 1)?;
        let top = cur.nlevels().saturating_sub(1);
        let block = cur.at(top).bno;
        let (left, right, nptr) = {
            let rs = self.sib(block, true);
            if rs != NULLAGBLOCK {
                self.load(tree, rs, Some(top))?;
                (block, rs, 1)
            } else {
                let ls = self.sib(block, false);
                self.load(tree, ls, Some(top))?;
                (ls, block, 2)
            }
        };
        self.init_block(tree, nb, cur.nlevels(), 2);
        let lk = self.get_keys(tree, left);
        let rk = self.get_keys(tree, right);
        self.put_key(tree, nb, 1, &lk);
        self.put_key(tree, nb, 2, &rk);
        self.put_ptr(tree, nb, 1, left);
        self.put_ptr(tree, nb, 2, right);
        cur.lv.push(CursorLevel { bno: nb, ptr: nptr });
        Ok(true)
    }

    /// `xfs_btree_insrec` for one level. `ptrp`/`key` carry the new block
    /// from the level below (in) and to the level above (out).
    pub(super) fn insrec(
        &mut self,
        cur: &mut Cursor,
        level: usize,
        ptrp: &mut u32,
        rec: &[u8],
        key: &mut Vec<u8>,
        curp: &mut Option<Cursor>,
    ) -> EditResult<bool> {
        let tree = cur.tree;
        if level >= cur.nlevels() {
            let ok = self.new_root(cur)?;
            *ptrp = NULLAGBLOCK;
            return Ok(ok);
        }
        let mut ptr = cur.at(level).ptr;
        if ptr == 0 {
            return Ok(false);
        }
        let mut optr = ptr;
        let old_bn = cur.at(level).bno;
        let mut numrecs = self.numrecs(old_bn);
        let mut nptr = NULLAGBLOCK;
        let mut ncur: Option<Cursor> = None;
        let mut lkey: Vec<u8> = Vec::new();
        if numrecs == self.maxrecs(tree, level) {
            // xfs_btree_make_block_unfull
            if self.rshift(cur, level)? {
            } else if self.lshift(cur, level)? {
                optr = cur.at(level).ptr;
                ptr = optr;
            } else {
                match self.split(cur, level)? {
                    None => return Ok(false),
                    Some((nb, k, nc)) => {
                        nptr = nb;
                        lkey = k;
                        ncur = nc;
                        ptr = cur.at(level).ptr;
                    }
                }
            }
        }
        let bno = cur.at(level).bno;
        numrecs = self.numrecs(bno);
        let tail = numrecs.saturating_add(1).saturating_sub(ptr);
        self.shift_entries(tree, bno, level, ptr, ptr.saturating_add(1), tail);
        if level > 0 {
            self.put_key(tree, bno, ptr, key);
            self.put_ptr(tree, bno, ptr, *ptrp);
        } else {
            self.put_rec(tree, bno, ptr, rec);
        }
        numrecs = numrecs.saturating_add(1);
        self.set_numrecs(bno, numrecs);
        if bno != old_bn {
            lkey = self.get_keys(tree, bno);
        } else if Self::needs_key_update(tree, optr) {
            self.update_keys(cur, level);
        }
        *ptrp = nptr;
        if nptr != NULLAGBLOCK {
            *key = lkey;
            *curp = ncur;
        }
        Ok(true)
    }

    /// `xfs_btree_insert`: insert `rec` where the cursor stands (as a
    /// lookup left it). The cursor is spent.
    pub fn insert_at(&mut self, cur: Cursor, rec: &[u8]) -> EditResult<()> {
        let tree = cur.tree;
        if rec.len() != tree.rec_len() {
            return refuse(format!("{}: a record of {} bytes", tree.name(), rec.len()));
        }
        let mut key = rec_low_key(tree, rec);
        let mut nptr = NULLAGBLOCK;
        let mut pcur = cur;
        let mut level = 0usize;
        loop {
            let mut ncur = None;
            if !self.insrec(&mut pcur, level, &mut nptr, rec, &mut key, &mut ncur)? {
                return refuse(format!(
                    "{} AG {}: no room for the record at level {level} (no block to split into)",
                    tree.name(),
                    self.agno
                ));
            }
            level = level.saturating_add(1);
            if let Some(n) = ncur {
                pcur = n;
            }
            if nptr == NULLAGBLOCK || level > 10 {
                break;
            }
        }
        self.after_edit(tree)
    }
}
