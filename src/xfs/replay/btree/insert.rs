//! A record inserted as `xfs_btree.c` inserts one (`xfs_btree_insrec`):
//! room made by a shift to the right or left sibling, else by a split
//! (`xfs_btree_split`); a new root block in the AG header when the root
//! splits (`xfs_btree_new_root`); a root in the inode that is full moves
//! into a new block under it (`xfs_btree_new_iroot`).

use super::{Btree, Cursor, CursorLevel, IROOT, NO_PTR};
use crate::xfs::replay::ag::error::{not_done, EditResult};

/// A block split off: its pointer, its keys, and the cursor for the
/// level above (pointing after the split block) when there is one.
pub type Split = (u64, Vec<u8>, Option<Cursor>);

/// The insert half of the engine.
pub trait Insert: Btree {
    /// `xfs_btree_lshift`: move the first entry of the cursor's block to
    /// its left sibling.
    fn lshift(&mut self, cur: &mut Cursor, level: usize) -> EditResult<bool> {
        let rb = cur.at(level).bno;
        let lb = self.sib(rb, false);
        if lb == NO_PTR || cur.at(level).ptr <= 1 {
            return Ok(false);
        }
        self.load(lb, Some(level))?;
        let mut lrecs = self.numrecs(lb);
        if lrecs == self.maxrecs(level) {
            return Ok(false);
        }
        let mut rrecs = self.numrecs(rb);
        lrecs = lrecs.saturating_add(1);
        rrecs = rrecs.saturating_sub(1);
        self.copy_entries(level, rb, 1, lb, lrecs, 1)?;
        self.set_numrecs(lb, lrecs)?;
        self.set_numrecs(rb, rrecs)?;
        self.shift_entries(rb, level, 2, 1, rrecs)?;
        if self.overlapping() {
            let mut t = cur.clone();
            if !self.firstrec(&mut t, level) {
                return Err(self.cursor_lost(rb));
            }
            self.decrement_level(&mut t, level)?;
            self.update_keys(&t, level)?;
        }
        self.update_keys(cur, level)?;
        let p = cur.at(level).ptr.saturating_sub(1);
        cur.set_ptr(level, p);
        Ok(true)
    }

    /// `xfs_btree_rshift`: move the last entry of the cursor's block to
    /// its right sibling.
    fn rshift(&mut self, cur: &mut Cursor, level: usize) -> EditResult<bool> {
        let lb = cur.at(level).bno;
        let rb = self.sib(lb, true);
        if rb == NO_PTR {
            return Ok(false);
        }
        let lrecs = self.numrecs(lb);
        if cur.at(level).ptr >= lrecs {
            return Ok(false);
        }
        self.load(rb, Some(level))?;
        let rrecs = self.numrecs(rb);
        if rrecs == self.maxrecs(level) {
            return Ok(false);
        }
        self.shift_entries(rb, level, 1, 2, rrecs)?;
        self.copy_entries(level, lb, lrecs, rb, 1, 1)?;
        self.set_numrecs(lb, lrecs.saturating_sub(1))?;
        self.set_numrecs(rb, rrecs.saturating_add(1))?;
        let mut t = cur.clone();
        if !self.lastrec(&mut t, level) {
            return Err(self.cursor_lost(lb));
        }
        self.increment_level(&mut t, level)?;
        if self.overlapping() {
            self.update_keys(cur, level)?;
        }
        self.update_keys(&t, level)?;
        Ok(true)
    }

    /// `xfs_btree_split`: move the upper half of the cursor's block to a
    /// new right sibling (allocated near it).
    fn split(&mut self, cur: &mut Cursor, level: usize) -> EditResult<Option<Split>> {
        let lb = cur.at(level).bno;
        let Some(rb) = self.alloc_block(lb)? else {
            return Ok(None);
        };
        self.init_block(rb, level, 0)?;
        let mut lrecs = self.numrecs(lb);
        let mut rrecs = lrecs / 2;
        if lrecs & 1 == 1 && cur.at(level).ptr <= rrecs.saturating_add(1) {
            rrecs = rrecs.saturating_add(1);
        }
        let src = lrecs.saturating_sub(rrecs).saturating_add(1);
        lrecs = lrecs.saturating_sub(rrecs);
        self.set_numrecs(lb, lrecs)?;
        self.set_numrecs(rb, rrecs)?;
        self.copy_entries(level, lb, src, rb, 1, rrecs)?;
        let key = self.get_keys(rb);
        let rr = self.sib(lb, true);
        self.set_sib(rb, true, rr)?;
        self.set_sib(rb, false, lb)?;
        self.set_sib(lb, true, rb)?;
        if rr != NO_PTR {
            self.load(rr, Some(level))?;
            self.set_sib(rr, false, rb)?;
        }
        if self.overlapping() {
            self.update_keys(cur, level)?;
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
    /// halves, recorded in the AG header.
    fn new_root(&mut self, cur: &mut Cursor) -> EditResult<bool> {
        let (root, _) = self.root()?;
        let Some(nb) = self.alloc_block(root)? else {
            return Ok(false);
        };
        self.set_root(nb, 1)?;
        let top = cur.nlevels().saturating_sub(1);
        let block = cur.at(top).bno;
        let (left, right, nptr) = {
            let rs = self.sib(block, true);
            if rs != NO_PTR {
                self.load(rs, Some(top))?;
                (block, rs, 1)
            } else {
                let ls = self.sib(block, false);
                self.load(ls, Some(top))?;
                (ls, block, 2)
            }
        };
        self.init_block(nb, cur.nlevels(), 2)?;
        let lk = self.get_keys(left);
        let rk = self.get_keys(right);
        self.put_key(nb, 1, &lk)?;
        self.put_key(nb, 2, &rk)?;
        self.put_ptr(nb, 1, left)?;
        self.put_ptr(nb, 2, right)?;
        cur.lv.push(CursorLevel { bno: nb, ptr: nptr });
        Ok(true)
    }

    /// `xfs_btree_new_iroot`: the root in the inode is full; its entries
    /// move into a new block (allocated near its first child) that becomes
    /// its only child, one level higher. The cursor points into the new
    /// block.
    fn new_iroot(&mut self, cur: &mut Cursor, level: usize) -> EditResult<bool> {
        let first = self.ptr_at(IROOT, 1);
        let Some(nb) = self.alloc_block(first)? else {
            return Ok(false);
        };
        let n = self.numrecs(IROOT);
        self.init_block(nb, level, n)?;
        self.copy_entries(level, IROOT, 1, nb, 1, n)?;
        self.set_level(IROOT, level.saturating_add(1))?;
        self.set_numrecs(IROOT, 1)?;
        self.put_ptr(IROOT, 1, nb)?;
        let ptr = cur.at(level).ptr;
        cur.set(level, nb, ptr);
        cur.lv.push(CursorLevel { bno: IROOT, ptr: 1 });
        Ok(true)
    }

    /// `xfs_btree_make_block_unfull`: room in the full block at `level`.
    /// Returns whether there is room now, and the split's new block.
    fn make_block_unfull(
        &mut self,
        cur: &mut Cursor,
        level: usize,
        numrecs: usize,
    ) -> EditResult<(bool, Option<Split>)> {
        if self.iroot().is_some() && level.saturating_add(1) == cur.nlevels() {
            if numrecs < self.block_maxrecs(IROOT, level) {
                return Ok((true, None));
            }
            return Ok((self.new_iroot(cur, level)?, None));
        }
        if self.rshift(cur, level)? || self.lshift(cur, level)? {
            return Ok((true, None));
        }
        match self.split(cur, level)? {
            None => Ok((false, None)),
            Some(s) => Ok((true, Some(s))),
        }
    }

    /// `xfs_btree_insrec` for one level. `ptrp`/`key` carry the new block
    /// from the level below (in) and to the level above (out).
    fn insrec(
        &mut self,
        cur: &mut Cursor,
        level: usize,
        ptrp: &mut u64,
        rec: &[u8],
        key: &mut Vec<u8>,
        curp: &mut Option<Cursor>,
    ) -> EditResult<bool> {
        if level >= cur.nlevels() {
            if self.iroot().is_some() {
                return Ok(false);
            }
            let ok = self.new_root(cur)?;
            *ptrp = NO_PTR;
            return Ok(ok);
        }
        let mut ptr = cur.at(level).ptr;
        if ptr == 0 {
            return Ok(false);
        }
        let mut optr = ptr;
        let old_bn = cur.at(level).bno;
        let mut numrecs = self.numrecs(old_bn);
        let mut nptr = NO_PTR;
        let mut ncur: Option<Cursor> = None;
        let mut lkey: Vec<u8> = Vec::new();
        if numrecs == self.block_maxrecs(old_bn, level) {
            let (ok, split) = self.make_block_unfull(cur, level, numrecs)?;
            if !ok {
                return Ok(false);
            }
            match split {
                Some((nb, k, nc)) => {
                    nptr = nb;
                    lkey = k;
                    ncur = nc;
                }
                None if cur.at(level).bno == old_bn => optr = cur.at(level).ptr,
                None => {}
            }
            ptr = cur.at(level).ptr;
        }
        let bno = cur.at(level).bno;
        numrecs = self.numrecs(bno);
        let tail = numrecs.saturating_add(1).saturating_sub(ptr);
        self.shift_entries(bno, level, ptr, ptr.saturating_add(1), tail)?;
        if level > 0 {
            self.put_key(bno, ptr, key)?;
            self.put_ptr(bno, ptr, *ptrp)?;
        } else {
            self.put_rec(bno, ptr, rec)?;
        }
        numrecs = numrecs.saturating_add(1);
        self.set_numrecs(bno, numrecs)?;
        if bno != old_bn {
            lkey = self.get_keys(bno);
        } else if self.needs_key_update(optr) {
            self.update_keys(cur, level)?;
        }
        *ptrp = nptr;
        if nptr != NO_PTR {
            *key = lkey;
            *curp = ncur;
        }
        Ok(true)
    }

    /// `xfs_btree_insert`: insert `rec` where the cursor stands (as a
    /// lookup left it). The cursor is spent.
    fn insert_at(&mut self, cur: Cursor, rec: &[u8]) -> EditResult<()> {
        if rec.len() != self.rec_len() {
            return not_done(format!("{}: a record of {} bytes", self.name(), rec.len()));
        }
        let mut key = self.rec_low_key(rec);
        let mut nptr = NO_PTR;
        let mut pcur = cur;
        let mut level = 0usize;
        loop {
            let mut ncur = None;
            if !self.insrec(&mut pcur, level, &mut nptr, rec, &mut key, &mut ncur)? {
                return not_done(format!(
                    "{}: a record inserted at level {level} where no block is free to split into",
                    self.what()
                ));
            }
            level = level.saturating_add(1);
            if let Some(n) = ncur {
                pcur = n;
            }
            if nptr == NO_PTR || level > super::MAX_LEVELS.saturating_add(1) {
                break;
            }
        }
        self.after_edit()
    }
}

impl<T: Btree + ?Sized> Insert for T {}
