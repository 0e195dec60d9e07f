//! The generic btree engine (`xfs_btree.c`), shared by the AG btrees
//! (bnobt, cntbt, inobt, finobt, rmapbt, refcountbt) and the bmbt. What
//! differs between trees comes through [`BtreeOps`], as the kernel's
//! `xfs_btree_ops` says it: record and key sizes, the key of a record and
//! the order of keys, short or long pointers, the header size, records per
//! block, where the root lives (a slot in an AG header, or the inode fork),
//! where a new block comes from and where a freed one goes, and what a
//! write logs.
//!
//! ```text
//!  block:  header | leaf: rec[1..=n]
//!                 | node: key[1..=maxrecs] ptr[1..=maxrecs]
//!  short pointers (AG trees): 4 bytes, siblings at 8 and 12
//!  long pointers (bmbt):      8 bytes, siblings at 8 and 16
//!  root in the inode (bmbt):  level u16, numrecs u16, key[dmaxrecs],
//!                             ptr[dmaxrecs] (the fork's xfs_bmdr_block)
//! ```
//!
//! The root in the inode is addressed as the block [`IROOT`]; it has no
//! siblings, and its key and pointer arrays are sized by the fork
//! (`dmaxrecs`). Every decision (which sibling first, where a split falls,
//! where the cursor stands) is the kernel's, so the shapes and the bytes
//! come out as the kernel's recovery writes them.
//!
//! | file | kernel | what |
//! |---|---|---|
//! | `mod.rs` | `xfs_btree.c` | the ops, the cursor, entries of a block, lookup, moves, key updates, record update |
//! | `insert.rs` | `xfs_btree.c` (insert) | shifts, splits, a new root in the AG header or the inode |
//! | `delete.rs` | `xfs_btree.c` (delete) | borrow, join, the root killed or moved back into the inode |

pub mod delete;
pub mod insert;
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;

use super::ag::error::{not_done, EditError, EditResult};
use crate::xfs::format::btree::XfsBtreeSblock;
use crate::xfs::format::dinode::{XfsBmdrBlock, XfsBtreeBlockLong, XFS_BMDR_SIZE};
use crate::xfs::fs::{be16, be32, be64};
use core::mem::offset_of;
use std::cmp::Ordering;

/// The null block pointer (`NULLAGBLOCK` / `NULLFSBLOCK` widened).
pub const NO_PTR: u64 = u64::MAX;

/// The root in the inode fork, addressed as a block.
pub const IROOT: u64 = u64::MAX - 1;

/// The deepest tree the engine walks (`XFS_BTREE_MAXLEVELS`).
pub const MAX_LEVELS: usize = 9;

/// A key in the order the tree sorts by (`key_diff`/`diff_two_keys`).
pub type Key = (u64, u64, u64);

/// What one tree is and where its blocks live (`xfs_btree_ops` with the
/// cursor's private part: the AG and its headers, or the inode and fork).
pub trait BtreeOps {
    /// The tree's name (`bnobt`, `bmbt`, ...).
    fn name(&self) -> &'static str;
    /// The tree and its owner, for messages ("bnobt AG 1").
    fn what(&self) -> String;
    /// Bytes of a record.
    fn rec_len(&self) -> usize;
    /// Bytes of one node entry's keys (low and high for an overlapping
    /// tree).
    fn key_len(&self) -> usize;
    /// Node keys carry a high key too (the rmapbt).
    fn overlapping(&self) -> bool {
        false
    }
    /// 8-byte block pointers and siblings (else 4).
    fn long_ptrs(&self) -> bool;
    /// Bytes of a block header.
    fn hdr_len(&self) -> usize;
    /// Bytes of a block.
    fn block_len(&self) -> usize;
    /// Entries a block at `level` holds (`get_maxrecs`).
    fn maxrecs(&self, level: usize) -> usize {
        let room = self.block_len().saturating_sub(self.hdr_len());
        let per = if level == 0 {
            self.rec_len()
        } else {
            self.key_len().saturating_add(self.ptr_len())
        };
        room.checked_div(per).unwrap_or(0)
    }
    /// Entries below which a block takes from or joins a sibling.
    fn minrecs(&self, level: usize) -> usize {
        self.maxrecs(level) / 2
    }
    /// The (low) key order of a record.
    fn rec_key(&self, rec: &[u8]) -> Key;
    /// The order of a node key (a low or high half of an overlapping
    /// tree's).
    fn key_order(&self, key: &[u8]) -> Key;
    /// The low key bytes of a record (`init_key_from_rec`).
    fn rec_low_key(&self, rec: &[u8]) -> Vec<u8>;
    /// The high key bytes of a record (overlapping trees).
    fn rec_high_key(&self, _rec: &[u8]) -> Vec<u8> {
        Vec::new()
    }
    /// The root (a block, or [`IROOT`]) and the number of levels.
    fn root(&mut self) -> EditResult<(u64, usize)>;
    /// `set_root`: a new root block in the AG header, the height changed
    /// by `inc`. Trees rooted in the inode change their root in place.
    fn set_root(&mut self, ptr: u64, inc: i64) -> EditResult<()>;
    /// For a root in the inode: where it starts in [`IROOT`]'s bytes and
    /// how many entries the fork holds (`get_dmaxrecs`).
    fn iroot(&self) -> Option<(usize, usize)> {
        None
    }
    /// Read (once) and check a block expected at `level`.
    fn load(&mut self, bno: u64, level: Option<usize>) -> EditResult<()>;
    /// The bytes of a loaded block (empty when it is not loaded).
    fn block(&self, bno: u64) -> &[u8];
    /// The bytes of a loaded block, to change; the block is dirty.
    fn block_mut(&mut self, bno: u64) -> Option<&mut [u8]>;
    /// Bytes `off..off + len` of a block were written (what the kernel
    /// logs: `xfs_trans_log_buf`, or the inode's root).
    fn logged(&mut self, bno: u64, off: usize, len: usize);
    /// `xfs_btree_init_block`: a fresh block (zeroed, its header set).
    fn init_block(&mut self, bno: u64, level: usize, numrecs: usize) -> EditResult<()>;
    /// `alloc_block`: a new block near `hint`, `None` when there is none.
    fn alloc_block(&mut self, hint: u64) -> EditResult<Option<u64>>;
    /// `free_block`: the block leaves the tree (and its buffer is
    /// invalidated).
    fn free_block(&mut self, bno: u64) -> EditResult<()>;
    /// After each public edit (the AGF's longest free extent).
    fn after_edit(&mut self) -> EditResult<()> {
        Ok(())
    }
    /// Damage found in block `bno` (or in the tree), as an error naming it.
    fn damaged(&self, bno: Option<u64>, msg: String) -> EditError;

    /// Bytes of a block pointer.
    fn ptr_len(&self) -> usize {
        if self.long_ptrs() {
            8
        } else {
            4
        }
    }
}

/// Which way a lookup goes when the key is not there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The last record with a key <= the key.
    Le,
    /// Exactly the key (else the cursor stands where it would go).
    Eq,
    /// The first record with a key >= the key.
    Ge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CursorLevel {
    pub bno: u64,
    /// 1-based index in the block (0: before the first).
    pub ptr: usize,
}

/// A path from the root to a record (`xfs_btree_cur`): index 0 is the
/// leaf level. After [`Btree::insert_at`] the cursor is spent; after
/// [`Btree::delete_at`] it stands where the record was, as the kernel's
/// does.
#[derive(Clone, Debug, Default)]
pub struct Cursor {
    pub lv: Vec<CursorLevel>,
}

impl Cursor {
    pub fn nlevels(&self) -> usize {
        self.lv.len()
    }
    pub fn at(&self, level: usize) -> CursorLevel {
        self.lv.get(level).copied().unwrap_or(CursorLevel {
            bno: NO_PTR,
            ptr: 0,
        })
    }
    pub fn set_ptr(&mut self, level: usize, ptr: usize) {
        if let Some(l) = self.lv.get_mut(level) {
            l.ptr = ptr;
        }
    }
    pub fn set(&mut self, level: usize, bno: u64, ptr: usize) {
        if let Some(l) = self.lv.get_mut(level) {
            *l = CursorLevel { bno, ptr };
        }
    }
    /// The leaf block and 1-based index the cursor points at.
    pub fn leaf(&self) -> (u64, usize) {
        let l = self.at(0);
        (l.bno, l.ptr)
    }
}

/// Where the fields and arrays of a block lie.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub level_at: usize,
    pub numrecs_at: usize,
    /// The first record or key.
    pub base: usize,
    /// Key slots before the pointers.
    pub node_max: usize,
}

/// The engine's operations, for every tree its ops describe.
pub trait Btree: BtreeOps {
    fn shape(&self, bno: u64) -> Shape {
        match (bno, self.iroot()) {
            (IROOT, Some((at, dmax))) => Shape {
                level_at: at.saturating_add(offset_of!(XfsBmdrBlock, bb_level)),
                numrecs_at: at.saturating_add(offset_of!(XfsBmdrBlock, bb_numrecs)),
                base: at.saturating_add(XFS_BMDR_SIZE),
                node_max: dmax,
            },
            _ => Shape {
                // The short and long headers share these fields' places.
                level_at: offset_of!(XfsBtreeSblock, bb_level),
                numrecs_at: offset_of!(XfsBtreeSblock, bb_numrecs),
                base: self.hdr_len(),
                node_max: self.maxrecs(1),
            },
        }
    }

    /// Entries a block at `level` holds: the root in the inode by its
    /// fork, any other block by its size.
    fn block_maxrecs(&self, bno: u64, level: usize) -> usize {
        match (bno, self.iroot()) {
            (IROOT, Some((_, dmax))) => dmax,
            _ => self.maxrecs(level),
        }
    }

    fn numrecs(&self, bno: u64) -> usize {
        usize::from(be16(self.block(bno), self.shape(bno).numrecs_at).unwrap_or(0))
    }

    fn level_of(&self, bno: u64) -> usize {
        usize::from(be16(self.block(bno), self.shape(bno).level_at).unwrap_or(0))
    }

    fn set_numrecs(&mut self, bno: u64, n: usize) -> EditResult<()> {
        let at = self.shape(bno).numrecs_at;
        let Ok(n) = u16::try_from(n) else {
            return Err(self.damaged(Some(bno), format!("{n} entries")));
        };
        self.put_bytes(bno, at, &n.to_be_bytes())
    }

    fn set_level(&mut self, bno: u64, level: usize) -> EditResult<()> {
        let at = self.shape(bno).level_at;
        let Ok(level) = u16::try_from(level) else {
            return Err(self.damaged(Some(bno), format!("level {level}")));
        };
        self.put_bytes(bno, at, &level.to_be_bytes())
    }

    fn sib_off(&self, right: bool) -> usize {
        match (right, self.long_ptrs()) {
            (false, false) => offset_of!(XfsBtreeSblock, bb_leftsib),
            (true, false) => offset_of!(XfsBtreeSblock, bb_rightsib),
            (false, true) => offset_of!(XfsBtreeBlockLong, bb_leftsib),
            (true, true) => offset_of!(XfsBtreeBlockLong, bb_rightsib),
        }
    }

    /// A block pointer read at `off` of `bno` (null when unreadable).
    fn ptr_read(&self, bno: u64, off: usize) -> u64 {
        let b = self.block(bno);
        if self.long_ptrs() {
            be64(b, off).unwrap_or(NO_PTR)
        } else {
            match be32(b, off) {
                Some(u32::MAX) | None => NO_PTR,
                Some(p) => u64::from(p),
            }
        }
    }

    fn ptr_bytes(&self, p: u64) -> Vec<u8> {
        if self.long_ptrs() {
            p.to_be_bytes().to_vec()
        } else {
            u32::try_from(p).unwrap_or(u32::MAX).to_be_bytes().to_vec()
        }
    }

    fn sib(&self, bno: u64, right: bool) -> u64 {
        if bno == IROOT {
            return NO_PTR;
        }
        self.ptr_read(bno, self.sib_off(right))
    }

    fn set_sib(&mut self, bno: u64, right: bool, v: u64) -> EditResult<()> {
        let off = self.sib_off(right);
        let p = self.ptr_bytes(v);
        self.put_bytes(bno, off, &p)
    }

    fn rec_off(&self, bno: u64, i: usize) -> usize {
        self.shape(bno)
            .base
            .saturating_add(i.saturating_sub(1).saturating_mul(self.rec_len()))
    }

    fn key_off(&self, bno: u64, i: usize) -> usize {
        self.shape(bno)
            .base
            .saturating_add(i.saturating_sub(1).saturating_mul(self.key_len()))
    }

    fn ptr_off(&self, bno: u64, i: usize) -> usize {
        let s = self.shape(bno);
        s.base
            .saturating_add(s.node_max.saturating_mul(self.key_len()))
            .saturating_add(i.saturating_sub(1).saturating_mul(self.ptr_len()))
    }

    fn rec_at(&self, bno: u64, i: usize) -> Vec<u8> {
        let o = self.rec_off(bno, i);
        self.block(bno)
            .get(o..o.saturating_add(self.rec_len()))
            .unwrap_or(&[])
            .to_vec()
    }

    fn key_at(&self, bno: u64, i: usize) -> Vec<u8> {
        let o = self.key_off(bno, i);
        self.block(bno)
            .get(o..o.saturating_add(self.key_len()))
            .unwrap_or(&[])
            .to_vec()
    }

    fn ptr_at(&self, bno: u64, i: usize) -> u64 {
        self.ptr_read(bno, self.ptr_off(bno, i))
    }

    /// Write `data` at `off` of block `bno` (logged); a write that does not
    /// fit the block is an error naming it, never a silent skip.
    fn put_bytes(&mut self, bno: u64, off: usize, data: &[u8]) -> EditResult<()> {
        self.logged(bno, off, data.len());
        let end = off.saturating_add(data.len());
        let dst = self.block_mut(bno).and_then(|b| b.get_mut(off..end));
        let Some(d) = dst else {
            let have = self.block(bno).len();
            return Err(self.damaged(
                Some(bno),
                format!("a write of bytes {off}..{end} does not fit its {have} bytes"),
            ));
        };
        d.copy_from_slice(data);
        Ok(())
    }

    /// Move `count` entries of `len` bytes from slot `from` to slot `to`
    /// (1-based) inside one array starting at `base` (memmove).
    fn shift(
        &mut self,
        bno: u64,
        base: usize,
        len: usize,
        from: usize,
        to: usize,
        count: usize,
    ) -> EditResult<()> {
        if count == 0 {
            return Ok(());
        }
        let src = base.saturating_add(from.saturating_sub(1).saturating_mul(len));
        let dst = base.saturating_add(to.saturating_sub(1).saturating_mul(len));
        let n = count.saturating_mul(len);
        let lo = src.min(dst);
        let end = src.max(dst).saturating_add(n);
        // The kernel logs where the entries went (xfs_btree_log_recs,
        // _keys, _ptrs over the destination): after a shift to the left,
        // the slot the last entry left is not logged.
        self.logged(bno, dst, n);
        match self.block_mut(bno) {
            Some(b) if end <= b.len() => {
                b.copy_within(src..src.saturating_add(n), dst);
                Ok(())
            }
            _ => {
                let have = self.block(bno).len();
                Err(self.damaged(
                    Some(bno),
                    format!("a shift of bytes {lo}..{end} does not fit its {have} bytes"),
                ))
            }
        }
    }

    /// Shift entries (records, or keys and pointers) of a block.
    fn shift_entries(
        &mut self,
        bno: u64,
        level: usize,
        from: usize,
        to: usize,
        count: usize,
    ) -> EditResult<()> {
        let base = self.shape(bno).base;
        if level == 0 {
            self.shift(bno, base, self.rec_len(), from, to, count)
        } else {
            self.shift(bno, base, self.key_len(), from, to, count)?;
            let pbase = self.ptr_off(bno, 1);
            self.shift(bno, pbase, self.ptr_len(), from, to, count)
        }
    }

    /// Copy `count` entries from slot `from` of `src` to slot `to` of
    /// `dst` (records, or keys then pointers).
    fn copy_entries(
        &mut self,
        level: usize,
        src: u64,
        from: usize,
        dst: u64,
        to: usize,
        count: usize,
    ) -> EditResult<()> {
        if count == 0 {
            return Ok(());
        }
        let mut arrays = Vec::with_capacity(2);
        if level == 0 {
            let len = self.rec_len();
            arrays.push((self.rec_off(src, from), self.rec_off(dst, to), len));
        } else {
            let len = self.key_len();
            arrays.push((self.key_off(src, from), self.key_off(dst, to), len));
            let len = self.ptr_len();
            arrays.push((self.ptr_off(src, from), self.ptr_off(dst, to), len));
        }
        for (s, d, len) in arrays {
            let end = s.saturating_add(count.saturating_mul(len));
            let Some(data) = self.block(src).get(s..end).map(<[u8]>::to_vec) else {
                let have = self.block(src).len();
                return Err(self.damaged(
                    Some(src),
                    format!("a read of bytes {s}..{end} does not fit its {have} bytes"),
                ));
            };
            self.put_bytes(dst, d, &data)?;
        }
        Ok(())
    }

    fn put_rec(&mut self, bno: u64, i: usize, rec: &[u8]) -> EditResult<()> {
        let o = self.rec_off(bno, i);
        let Some(r) = rec.get(..self.rec_len()) else {
            return not_done(format!("{}: a record of {} bytes", self.name(), rec.len()));
        };
        self.put_bytes(bno, o, r)
    }

    fn put_key(&mut self, bno: u64, i: usize, key: &[u8]) -> EditResult<()> {
        if i == 0 || i > self.shape(bno).node_max {
            return Err(self.damaged(Some(bno), format!("no key slot {i}")));
        }
        let o = self.key_off(bno, i);
        let k = key.get(..self.key_len()).unwrap_or(key).to_vec();
        self.put_bytes(bno, o, &k)
    }

    fn put_ptr(&mut self, bno: u64, i: usize, p: u64) -> EditResult<()> {
        let o = self.ptr_off(bno, i);
        let b = self.ptr_bytes(p);
        self.put_bytes(bno, o, &b)
    }

    /// Bytes of a low (or high) key.
    fn half_key(&self) -> usize {
        if self.overlapping() {
            self.key_len() / 2
        } else {
            self.key_len()
        }
    }

    /// The keys of a block (`xfs_btree_get_keys`): the low key, and for an
    /// overlapping tree the highest high key after it.
    fn get_keys(&self, bno: u64) -> Vec<u8> {
        let n = self.numrecs(bno);
        let hk = self.half_key();
        let kl = self.key_len();
        if self.level_of(bno) == 0 {
            let first = self.rec_at(bno, 1);
            let mut key = self.rec_low_key(&first);
            if self.overlapping() {
                let mut max = self.rec_high_key(&first);
                for i in 2..=n {
                    let h = self.rec_high_key(&self.rec_at(bno, i));
                    if self.key_order(&h) > self.key_order(&max) {
                        max = h;
                    }
                }
                key.extend_from_slice(&max);
            }
            key.resize(kl, 0);
            key
        } else if self.overlapping() {
            let k1 = self.key_at(bno, 1);
            let mut key = k1.get(..hk).unwrap_or(&[]).to_vec();
            let mut max = k1.get(hk..).unwrap_or(&[]).to_vec();
            for i in 2..=n {
                let k = self.key_at(bno, i);
                let h = k.get(hk..).unwrap_or(&[]);
                if self.key_order(h) > self.key_order(&max) {
                    max = h.to_vec();
                }
            }
            key.extend_from_slice(&max);
            key.resize(kl, 0);
            key
        } else {
            self.key_at(bno, 1)
        }
    }

    /// `xfs_btree_lookup`: a cursor for `key`, and whether a record fits
    /// the direction (for [`Lookup::Eq`]: whether the key is there).
    fn lookup(&mut self, dir: Lookup, key: Key) -> EditResult<(Cursor, bool)> {
        let (root, nlevels) = self.root()?;
        if nlevels == 0 || nlevels > MAX_LEVELS {
            return Err(self.damaged(None, format!("height {nlevels} is not 1..={MAX_LEVELS}")));
        }
        let mut cur = Cursor {
            lv: vec![
                CursorLevel {
                    bno: NO_PTR,
                    ptr: 0
                };
                nlevels
            ],
        };
        let mut bno = root;
        let mut diff = Ordering::Greater;
        let mut keyno = 0usize;
        for level in (0..nlevels).rev() {
            self.load(bno, Some(level))?;
            let n = self.numrecs(bno);
            if level > 0 && n == 0 {
                return Err(self.damaged(Some(bno), "a node with no entries".into()));
            }
            cur.set(level, bno, 0);
            if diff == Ordering::Equal {
                keyno = 1;
            } else {
                let mut low = 1usize;
                let mut high = n;
                if high == 0 {
                    if nlevels != 1 {
                        return Err(self.damaged(Some(bno), "an empty leaf under a node".into()));
                    }
                    cur.set_ptr(0, usize::from(dir != Lookup::Le));
                    return Ok((cur, false));
                }
                while low <= high {
                    keyno = low.saturating_add(high) >> 1;
                    let k = if level == 0 {
                        self.rec_key(&self.rec_at(bno, keyno))
                    } else {
                        self.key_order(&self.key_at(bno, keyno))
                    };
                    diff = k.cmp(&key);
                    match diff {
                        Ordering::Less => low = keyno.saturating_add(1),
                        Ordering::Greater => {
                            if keyno == 0 {
                                break;
                            }
                            high = keyno.saturating_sub(1);
                        }
                        Ordering::Equal => break,
                    }
                }
            }
            if level > 0 {
                if diff == Ordering::Greater {
                    keyno = keyno.saturating_sub(1).max(1);
                }
                cur.set_ptr(level, keyno);
                bno = self.ptr_at(bno, keyno);
            }
        }
        let leaf = cur.at(0).bno;
        let n = self.numrecs(leaf);
        if dir != Lookup::Le && diff == Ordering::Less {
            keyno = keyno.saturating_add(1);
            if dir == Lookup::Ge && keyno > n && self.sib(leaf, true) != NO_PTR {
                cur.set_ptr(0, keyno);
                if !self.increment_level(&mut cur, 0)? {
                    return Err(
                        self.damaged(Some(leaf), "a right sibling that cannot be reached".into())
                    );
                }
                return Ok((cur, true));
            }
        } else if dir == Lookup::Le && diff == Ordering::Greater {
            keyno = keyno.saturating_sub(1);
        }
        cur.set_ptr(0, keyno);
        let stat = if keyno == 0 || keyno > n {
            false
        } else {
            dir != Lookup::Eq || diff == Ordering::Equal
        };
        Ok((cur, stat))
    }

    /// The record the cursor points at.
    fn get_rec(&self, cur: &Cursor) -> Option<Vec<u8>> {
        let l = cur.at(0);
        if l.ptr == 0 || l.ptr > self.numrecs(l.bno) {
            return None;
        }
        Some(self.rec_at(l.bno, l.ptr))
    }

    /// `xfs_btree_increment` at `level`.
    fn increment_level(&mut self, cur: &mut Cursor, level: usize) -> EditResult<bool> {
        let l = cur.at(level);
        let ptr = l.ptr.saturating_add(1);
        cur.set_ptr(level, ptr);
        if ptr <= self.numrecs(l.bno) {
            return Ok(true);
        }
        if self.sib(l.bno, true) == NO_PTR {
            return Ok(false);
        }
        let mut lev = level.saturating_add(1);
        while lev < cur.nlevels() {
            let b = cur.at(lev);
            let p = b.ptr.saturating_add(1);
            cur.set_ptr(lev, p);
            if p <= self.numrecs(b.bno) {
                break;
            }
            lev = lev.saturating_add(1);
        }
        if lev >= cur.nlevels() {
            return Err(self.damaged(
                Some(l.bno),
                "a right sibling but no next entry above it".into(),
            ));
        }
        while lev > level {
            let b = cur.at(lev);
            let child = self.ptr_at(b.bno, b.ptr);
            lev = lev.saturating_sub(1);
            self.load(child, Some(lev))?;
            cur.set(lev, child, 1);
        }
        Ok(true)
    }

    /// `xfs_btree_decrement` at `level`.
    fn decrement_level(&mut self, cur: &mut Cursor, level: usize) -> EditResult<bool> {
        let l = cur.at(level);
        cur.set_ptr(level, l.ptr.saturating_sub(1));
        if l.ptr > 1 {
            return Ok(true);
        }
        if self.sib(l.bno, false) == NO_PTR {
            return Ok(false);
        }
        let mut lev = level.saturating_add(1);
        while lev < cur.nlevels() {
            let b = cur.at(lev);
            cur.set_ptr(lev, b.ptr.saturating_sub(1));
            if b.ptr > 1 {
                break;
            }
            lev = lev.saturating_add(1);
        }
        if lev >= cur.nlevels() {
            return Err(self.damaged(
                Some(l.bno),
                "a left sibling but no entry before it above".into(),
            ));
        }
        while lev > level {
            let b = cur.at(lev);
            let child = self.ptr_at(b.bno, b.ptr);
            lev = lev.saturating_sub(1);
            self.load(child, Some(lev))?;
            let n = self.numrecs(child);
            cur.set(lev, child, n);
        }
        Ok(true)
    }

    fn firstrec(&self, cur: &mut Cursor, level: usize) -> bool {
        if self.numrecs(cur.at(level).bno) == 0 {
            return false;
        }
        cur.set_ptr(level, 1);
        true
    }

    fn lastrec(&self, cur: &mut Cursor, level: usize) -> bool {
        let n = self.numrecs(cur.at(level).bno);
        if n == 0 {
            return false;
        }
        cur.set_ptr(level, n);
        true
    }

    /// `xfs_btree_update_keys`: the keys above `level` describe the
    /// blocks under them again.
    fn update_keys(&mut self, cur: &Cursor, level: usize) -> EditResult<()> {
        if self.overlapping() {
            return self.updkeys(cur, level, false);
        }
        let key = self.get_keys(cur.at(level).bno);
        let mut lev = level.saturating_add(1);
        let mut ptr = 1usize;
        while ptr == 1 && lev < cur.nlevels() {
            let l = cur.at(lev);
            ptr = l.ptr;
            self.put_key(l.bno, ptr, &key)?;
            lev = lev.saturating_add(1);
        }
        Ok(())
    }

    /// `__xfs_btree_updkeys` (overlapping trees): low and high keys up to
    /// the root, stopping where they already agree unless `force`.
    fn updkeys(&mut self, cur: &Cursor, level: usize, force: bool) -> EditResult<()> {
        if level.saturating_add(1) >= cur.nlevels() {
            return Ok(());
        }
        let hk = self.half_key();
        let mut key = self.get_keys(cur.at(level).bno);
        let mut lev = level.saturating_add(1);
        while lev < cur.nlevels() {
            let l = cur.at(lev);
            let old = self.key_at(l.bno, l.ptr);
            let half = |k: &[u8], high: bool| {
                let part = if high { k.get(hk..) } else { k.get(..hk) };
                self.key_order(part.unwrap_or(&[]))
            };
            let same =
                half(&old, false) == half(&key, false) && half(&old, true) == half(&key, true);
            if !force && same {
                break;
            }
            self.put_key(l.bno, l.ptr, &key)?;
            if lev.saturating_add(1) >= cur.nlevels() {
                break;
            }
            key = self.get_keys(l.bno);
            lev = lev.saturating_add(1);
        }
        Ok(())
    }

    fn needs_key_update(&self, ptr: usize) -> bool {
        self.overlapping() || ptr == 1
    }

    /// `xfs_btree_update`: replace the record the cursor points at.
    fn update_at(&mut self, cur: &Cursor, rec: &[u8]) -> EditResult<()> {
        let l = cur.at(0);
        if l.ptr == 0 || l.ptr > self.numrecs(l.bno) {
            return Err(self.damaged(
                Some(l.bno),
                format!(
                    "the cursor points at no record ({} of {})",
                    l.ptr,
                    self.numrecs(l.bno)
                ),
            ));
        }
        if rec.len() != self.rec_len() {
            return not_done(format!("{}: a record of {} bytes", self.name(), rec.len()));
        }
        self.put_rec(l.bno, l.ptr, rec)?;
        if self.needs_key_update(l.ptr) {
            self.update_keys(cur, 0)?;
        }
        self.after_edit()
    }

    fn cursor_lost(&self, bno: u64) -> EditError {
        self.damaged(Some(bno), "an empty block".into())
    }
}

impl<T: BtreeOps + ?Sized> Btree for T {}
