//! A record deleted as `xfs_btree.c` deletes one (`xfs_btree_delrec`): a
//! block left under half full takes an entry from a sibling or joins one;
//! a root block with one child gives way to it (`xfs_btree_kill_root`), a
//! root in the inode takes in its only child when the child's entries fit
//! the fork (`xfs_btree_kill_iroot`).

use super::{Cursor, IROOT, NO_PTR};
use crate::xfs::replay::ag::error::EditResult;
use crate::xfs::replay::btree::insert::Insert;

/// The delete half of the engine.
pub trait Delete: Insert {
    /// `xfs_btree_kill_root`: the root block has one child left; the
    /// child is the root now.
    fn kill_root(&mut self, cur: &mut Cursor, level: usize, newroot: u64) -> EditResult<()> {
        let old = cur.at(level).bno;
        self.set_root(newroot, -1)?;
        self.free_block(old)?;
        cur.lv.truncate(level);
        Ok(())
    }

    /// `xfs_btree_kill_iroot`: a root in the inode two or more levels
    /// above the leaves, with one child whose entries fit the fork, takes
    /// the child's entries and goes down a level; the child is freed.
    fn kill_iroot(&mut self, cur: &mut Cursor) -> EditResult<()> {
        let level = cur.nlevels().saturating_sub(1);
        if level <= 1 || self.numrecs(IROOT) != 1 {
            return Ok(());
        }
        let child = cur.at(level.saturating_sub(1)).bno;
        let numrecs = self.numrecs(child);
        if numrecs > self.block_maxrecs(IROOT, level) {
            return Ok(());
        }
        self.set_numrecs(IROOT, numrecs)?;
        self.copy_entries(level, child, 1, IROOT, 1, numrecs)?;
        self.free_block(child)?;
        self.set_level(IROOT, level.saturating_sub(1))?;
        let ptr = cur.at(level.saturating_sub(1)).ptr;
        cur.lv.truncate(level);
        cur.set(level.saturating_sub(1), IROOT, ptr);
        Ok(())
    }

    fn dec_cursor(&mut self, cur: &mut Cursor, level: usize) -> EditResult<()> {
        if level > 0 {
            self.decrement_level(cur, level)?;
        }
        Ok(())
    }

    /// `xfs_btree_delrec` for one level: 0 nothing deleted, 1 done, 2 the
    /// block was joined and the level above has an entry to delete.
    fn delrec(&mut self, cur: &mut Cursor, level: usize) -> EditResult<u8> {
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
            let count = numrecs.saturating_sub(ptr);
            self.shift_entries(bno, level, ptr.saturating_add(1), ptr, count)?;
        }
        numrecs = numrecs.saturating_sub(1);
        self.set_numrecs(bno, numrecs)?;
        let in_inode = self.iroot().is_some();
        if level.saturating_add(1) == cur.nlevels() {
            if in_inode {
                self.kill_iroot(cur)?;
                self.dec_cursor(cur, level)?;
            } else if numrecs == 1 && level > 0 {
                let child = self.ptr_at(bno, 1);
                self.load(child, Some(level.saturating_sub(1)))?;
                self.kill_root(cur, level, child)?;
            } else if level > 0 {
                self.dec_cursor(cur, level)?;
            }
            return Ok(1);
        }
        if self.needs_key_update(ptr) {
            self.update_keys(cur, level)?;
        }
        if numrecs >= self.minrecs(level) {
            self.dec_cursor(cur, level)?;
            return Ok(1);
        }
        let rptr = self.sib(bno, true);
        let lptr = self.sib(bno, false);
        if in_inode && rptr == NO_PTR && lptr == NO_PTR && level.saturating_add(2) == cur.nlevels()
        {
            self.kill_iroot(cur)?;
            self.dec_cursor(cur, level)?;
            return Ok(1);
        }
        if rptr == NO_PTR && lptr == NO_PTR {
            return Err(self.damaged(Some(bno), "a block below the root with no siblings".into()));
        }
        let mut t = cur.clone();
        let mut rrecs = 0usize;
        let mut lrecs = 0usize;
        if rptr != NO_PTR {
            if !self.lastrec(&mut t, level) {
                return Err(self.cursor_lost(bno));
            }
            if !self.increment_level(&mut t, level)? || !self.lastrec(&mut t, level) {
                return Err(self.cursor_lost(rptr));
            }
            let right = t.at(level).bno;
            if self.numrecs(right).saturating_sub(1) >= self.minrecs(level)
                && self.lshift(&mut t, level)?
            {
                self.dec_cursor(cur, level)?;
                return Ok(1);
            }
            rrecs = self.numrecs(right);
            if lptr != NO_PTR {
                if !self.firstrec(&mut t, level) {
                    return Err(self.cursor_lost(right));
                }
                if !self.decrement_level(&mut t, level)? {
                    return Err(self.cursor_lost(bno));
                }
            }
        }
        if lptr != NO_PTR {
            if !self.firstrec(&mut t, level) {
                return Err(self.cursor_lost(bno));
            }
            self.decrement_level(&mut t, level)?;
            if !self.firstrec(&mut t, level) {
                return Err(self.cursor_lost(lptr));
            }
            let left = t.at(level).bno;
            if self.numrecs(left).saturating_sub(1) >= self.minrecs(level)
                && self.rshift(&mut t, level)?
            {
                if level == 0 {
                    cur.set_ptr(0, cur.at(0).ptr.saturating_add(1));
                }
                return Ok(1);
            }
            lrecs = self.numrecs(left);
        }
        let max = self.maxrecs(level);
        let (left, right) = if lptr != NO_PTR && lrecs.saturating_add(numrecs) <= max {
            self.load(lptr, Some(level))?;
            (lptr, bno)
        } else if rptr != NO_PTR && rrecs.saturating_add(numrecs) <= max {
            self.load(rptr, Some(level))?;
            (bno, rptr)
        } else {
            self.dec_cursor(cur, level)?;
            return Ok(1);
        };
        let rrecs = self.numrecs(right);
        let lrecs = self.numrecs(left);
        self.copy_entries(level, right, 1, left, lrecs.saturating_add(1), rrecs)?;
        self.set_numrecs(left, lrecs.saturating_add(rrecs))?;
        let rr = self.sib(right, true);
        self.set_sib(left, true, rr)?;
        if rr != NO_PTR {
            self.load(rr, Some(level))?;
            self.set_sib(rr, false, left)?;
        }
        self.free_block(right)?;
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
    fn delete_at(&mut self, cur: &mut Cursor) -> EditResult<bool> {
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
        if joined && self.overlapping() {
            self.updkeys(cur, 0, true)?;
        }
        if i == 0 {
            for lev in 1..cur.nlevels() {
                if cur.at(lev).ptr == 0 {
                    self.decrement_level(cur, lev)?;
                    break;
                }
            }
        }
        self.after_edit()?;
        Ok(i != 0)
    }
}

impl<T: Insert + ?Sized> Delete for T {}
