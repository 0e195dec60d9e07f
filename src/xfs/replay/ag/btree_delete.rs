//! A record deleted from an AG btree as `xfs_btree.c` deletes one
//! (`xfs_btree_delrec`): a block left under half full takes an entry from a
//! sibling or joins one, and the root shrinks when it keeps one child
//! (`xfs_btree_kill_root`).

use super::btree::Cursor;
use super::error::EditResult;
use super::{corrupt_at, AgStore};
use crate::xfs::format::ag::NULLAGBLOCK;
use crate::xfs::read::ReadAt;

impl<'a, R: ReadAt> AgStore<'a, R> {
    /// `xfs_btree_kill_root`: the root has one child left; the child is
    /// the root now.
    pub(super) fn kill_root(
        &mut self,
        cur: &mut Cursor,
        level: usize,
        newroot: u32,
    ) -> EditResult<()> {
        let tree = cur.tree;
        let old = cur.at(level).bno;
        self.set_root(tree, newroot, -1)?;
        self.free_block(tree, old)?;
        cur.lv.truncate(level);
        Ok(())
    }

    pub(super) fn dec_cursor(&mut self, cur: &mut Cursor, level: usize) -> EditResult<()> {
        if level > 0 {
            self.decrement_level(cur, level)?;
        }
        Ok(())
    }

    /// `xfs_btree_delrec` for one level: 0 nothing deleted, 1 done, 2 the
    /// block was joined and the level above has an entry to delete.
    pub(super) fn delrec(&mut self, cur: &mut Cursor, level: usize) -> EditResult<u8> {
        let tree = cur.tree;
        let ptr = cur.at(level).ptr;
        if ptr == 0 {
            return Ok(0);
        }
        let bno = cur.at(level).bno;
        let mut numrecs = self.numrecs(bno);
        if ptr > numrecs {
            return Ok(0);
        }
        if ptr < numrecs {
            self.shift_entries(
                tree,
                bno,
                level,
                ptr.saturating_add(1),
                ptr,
                numrecs.saturating_sub(ptr),
            );
        }
        numrecs = numrecs.saturating_sub(1);
        self.set_numrecs(bno, numrecs);
        if level.saturating_add(1) == cur.nlevels() {
            if numrecs == 1 && level > 0 {
                let child = self.ptr_at(tree, bno, 1);
                self.load(tree, child, Some(level.saturating_sub(1)))?;
                self.kill_root(cur, level, child)?;
            } else if level > 0 {
                self.dec_cursor(cur, level)?;
            }
            return Ok(1);
        }
        if Self::needs_key_update(tree, ptr) {
            self.update_keys(cur, level);
        }
        if numrecs >= self.minrecs(tree, level) {
            self.dec_cursor(cur, level)?;
            return Ok(1);
        }
        let rptr = self.sib(bno, true);
        let lptr = self.sib(bno, false);
        if rptr == NULLAGBLOCK && lptr == NULLAGBLOCK {
            return Err(corrupt_at(
                self.daddr_of(bno),
                format!(
                    "{} AG {} block {bno}: a block below the root with no siblings",
                    tree.name(),
                    self.agno
                ),
            ));
        }
        let mut t = cur.clone();
        let mut rrecs = 0usize;
        let mut lrecs = 0usize;
        if rptr != NULLAGBLOCK {
            if !self.lastrec(&mut t, level) {
                return Err(self.cursor_lost(tree, bno));
            }
            if !self.increment_level(&mut t, level)? || !self.lastrec(&mut t, level) {
                return Err(self.cursor_lost(tree, rptr));
            }
            let right = t.at(level).bno;
            if self.numrecs(right).saturating_sub(1) >= self.minrecs(tree, level)
                && self.lshift(&mut t, level)?
            {
                self.dec_cursor(cur, level)?;
                return Ok(1);
            }
            rrecs = self.numrecs(right);
            if lptr != NULLAGBLOCK {
                if !self.firstrec(&mut t, level) {
                    return Err(self.cursor_lost(tree, right));
                }
                if !self.decrement_level(&mut t, level)? {
                    return Err(self.cursor_lost(tree, bno));
                }
            }
        }
        if lptr != NULLAGBLOCK {
            if !self.firstrec(&mut t, level) {
                return Err(self.cursor_lost(tree, bno));
            }
            self.decrement_level(&mut t, level)?;
            if !self.firstrec(&mut t, level) {
                return Err(self.cursor_lost(tree, lptr));
            }
            let left = t.at(level).bno;
            if self.numrecs(left).saturating_sub(1) >= self.minrecs(tree, level)
                && self.rshift(&mut t, level)?
            {
                if level == 0 {
                    cur.set_ptr(0, cur.at(0).ptr.saturating_add(1));
                }
                return Ok(1);
            }
            lrecs = self.numrecs(left);
        }
        let max = self.maxrecs(tree, level);
        let (left, right) = if lptr != NULLAGBLOCK && lrecs.saturating_add(numrecs) <= max {
            self.load(tree, lptr, Some(level))?;
            (lptr, bno)
        } else if rptr != NULLAGBLOCK && rrecs.saturating_add(numrecs) <= max {
            self.load(tree, rptr, Some(level))?;
            (bno, rptr)
        } else {
            self.dec_cursor(cur, level)?;
            return Ok(1);
        };
        let rrecs = self.numrecs(right);
        let lrecs = self.numrecs(left);
        self.copy_entries(tree, level, right, 1, left, lrecs.saturating_add(1), rrecs);
        self.set_numrecs(left, lrecs.saturating_add(rrecs));
        let rr = self.sib(right, true);
        self.set_sib(left, true, rr);
        if rr != NULLAGBLOCK {
            self.load(tree, rr, Some(level))?;
            self.set_sib(rr, false, left);
        }
        self.free_block(tree, right)?;
        if bno != left {
            cur.set(level, left, cur.at(level).ptr.saturating_add(lrecs));
        } else if level.saturating_add(1) < cur.nlevels() {
            self.increment_level(cur, level.saturating_add(1))?;
        }
        if level > 0 {
            cur.set_ptr(level, cur.at(level).ptr.saturating_sub(1));
        }
        Ok(2)
    }

    /// `xfs_btree_delete`: delete the record the cursor points at.
    /// Returns whether there was one. The cursor stays usable.
    pub fn delete_at(&mut self, cur: &mut Cursor) -> EditResult<bool> {
        let tree = cur.tree;
        let mut joined = false;
        let mut level = 0usize;
        let mut i = 2u8;
        while i == 2 {
            if level >= cur.nlevels() {
                break;
            }
            i = self.delrec(cur, level)?;
            if i == 2 {
                joined = true;
            }
            level = level.saturating_add(1);
        }
        if joined && tree.overlapping() {
            self.updkeys(cur, 0, true);
        }
        if i == 0 {
            for lev in 1..cur.nlevels() {
                if cur.at(lev).ptr == 0 {
                    self.decrement_level(cur, lev)?;
                    break;
                }
            }
        }
        self.after_edit(tree)?;
        Ok(i != 0)
    }
}
