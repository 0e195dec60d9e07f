//! The generic AG btree (`xfs_btree.c`): blocks read and checked as the read
//! verifier would, entries at their offsets, the cursor, lookup, moves to
//! the next and previous record, node keys kept right on the way up.

use super::error::{refuse, EditError, EditResult};
use super::tree_ops::{key_order, rec_key, rec_low_key, rmap_high_key, Key, Tree};
use super::{corrupt_at, AgStore};
use crate::xfs::format::ag::NULLAGBLOCK;
use crate::xfs::format::btree::{XfsBtreeSblock, XFS_BTREE_SBLOCK_CRC_OFF};
use crate::xfs::fs::{be16, be32};
use crate::xfs::read::ReadAt;
use core::mem::offset_of;
use zerocopy::FromBytes;

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
pub(super) struct CursorLevel {
    pub(super) bno: u32,
    /// 1-based index in the block (0: before the first).
    pub(super) ptr: usize,
}

/// A path from the root to a record (`xfs_btree_cur`): index 0 is the
/// leaf level. After [`AgStore::insert_at`] the cursor is spent; after
/// [`AgStore::delete_at`] it stands where the record was, as the
/// kernel's does.
#[derive(Clone, Debug)]
pub struct Cursor {
    pub tree: Tree,
    pub(super) lv: Vec<CursorLevel>,
}

impl Cursor {
    pub(super) fn nlevels(&self) -> usize {
        self.lv.len()
    }
    pub(super) fn at(&self, level: usize) -> CursorLevel {
        self.lv.get(level).copied().unwrap_or(CursorLevel {
            bno: NULLAGBLOCK,
            ptr: 0,
        })
    }
    pub(super) fn set_ptr(&mut self, level: usize, ptr: usize) {
        if let Some(l) = self.lv.get_mut(level) {
            l.ptr = ptr;
        }
    }
    pub(super) fn set(&mut self, level: usize, bno: u32, ptr: usize) {
        if let Some(l) = self.lv.get_mut(level) {
            *l = CursorLevel { bno, ptr };
        }
    }
    /// The leaf block and 1-based index the cursor points at.
    pub fn leaf(&self) -> (u32, usize) {
        let l = self.at(0);
        (l.bno, l.ptr)
    }
}

impl<'a, R: ReadAt> AgStore<'a, R> {
    /// Read (once) and check a block of `tree` expected at `level`.
    pub(super) fn load(&mut self, tree: Tree, bno: u32, level: Option<usize>) -> EditResult<()> {
        let daddr = self.daddr_of(bno);
        let name = tree.name();
        let agno = self.agno;
        let at = |m: String| corrupt_at(daddr, format!("{name} AG {agno} block {bno}: {m}"));
        if bno == 0 || bno >= self.agblocks {
            return Err(at(format!(
                "block number outside the AG (0..{})",
                self.agblocks
            )));
        }
        if !self.blocks.contains_key(&bno) {
            let off = self.ag_byte(bno)?;
            let b = self.read_bytes(off, u64::try_from(self.blocksize).unwrap_or(4096))?;
            if self.feat.v5 {
                let crc = crate::xfs::sb::crc_with_hole(&b, XFS_BTREE_SBLOCK_CRC_OFF);
                let Ok((h, _)) = XfsBtreeSblock::ref_from_prefix(&b) else {
                    return Err(at(format!("{} bytes hold no block header", b.len())));
                };
                if h.bb_crc.get() != crc {
                    return Err(at(format!(
                        "bad CRC: bb_crc {:#010x}, computed {crc:#010x}",
                        h.bb_crc.get()
                    )));
                }
                if h.bb_blkno.get() != daddr {
                    return Err(at(format!(
                        "bb_blkno {} is not the block's address {daddr}",
                        h.bb_blkno.get()
                    )));
                }
                if h.bb_owner.get() != self.agno {
                    return Err(at(format!("bb_owner {} is not the AG", h.bb_owner.get())));
                }
                if h.bb_uuid[..] != self.fs.meta_uuid()[..] {
                    return Err(at("bb_uuid is not the filesystem's".into()));
                }
            }
            self.blocks.insert(bno, b);
        }
        let b = self.blocks.get(&bno).map(|b| b.as_slice()).unwrap_or(&[]);
        let magic = be32(b, offset_of!(XfsBtreeSblock, bb_magic)).unwrap_or(0);
        if Some(magic) != tree.magic(self.feat.v5) {
            return Err(at(format!("magic {magic:#010x} is not the {name}'s")));
        }
        let lv = usize::from(be16(b, offset_of!(XfsBtreeSblock, bb_level)).unwrap_or(0));
        if let Some(want) = level {
            if lv != want {
                return Err(at(format!("bb_level {lv} but expected level {want}")));
            }
        }
        if lv >= 9 {
            return Err(at(format!("bb_level {lv} is too tall")));
        }
        let n = usize::from(be16(b, offset_of!(XfsBtreeSblock, bb_numrecs)).unwrap_or(0));
        let max = self.maxrecs(tree, lv);
        if n > max {
            return Err(at(format!("numrecs {n} is more than {max}")));
        }
        for (what, off) in [("leftsib", 8), ("rightsib", 12)] {
            let s = be32(b, off).unwrap_or(0);
            if s != NULLAGBLOCK && (s >= self.agblocks || s == 0 || s == bno) {
                return Err(at(format!("{what} {s} is not a block of the AG")));
            }
        }
        Ok(())
    }

    pub(super) fn blk(&self, bno: u32) -> &[u8] {
        self.blocks.get(&bno).map(|b| b.as_slice()).unwrap_or(&[])
    }

    pub(super) fn blk_mut(&mut self, bno: u32) -> Option<&mut Vec<u8>> {
        self.dirty.insert(bno);
        self.blocks.get_mut(&bno)
    }

    pub(super) fn numrecs(&self, bno: u32) -> usize {
        usize::from(be16(self.blk(bno), offset_of!(XfsBtreeSblock, bb_numrecs)).unwrap_or(0))
    }

    pub(super) fn set_numrecs(&mut self, bno: u32, n: usize) {
        self.touch(bno, 6, 2);
        if let Some(b) = self.blk_mut(bno) {
            crate::xfs::replay::put_be16(
                b,
                offset_of!(XfsBtreeSblock, bb_numrecs),
                u16::try_from(n).unwrap_or(0),
            );
        }
    }

    pub(super) fn level_of(&self, bno: u32) -> usize {
        usize::from(be16(self.blk(bno), offset_of!(XfsBtreeSblock, bb_level)).unwrap_or(0))
    }

    pub(super) fn sib(&self, bno: u32, right: bool) -> u32 {
        be32(self.blk(bno), if right { 12 } else { 8 }).unwrap_or(NULLAGBLOCK)
    }

    pub(super) fn set_sib(&mut self, bno: u32, right: bool, v: u32) {
        self.touch(bno, if right { 12 } else { 8 }, 4);
        if let Some(b) = self.blk_mut(bno) {
            crate::xfs::replay::put_be32(b, if right { 12 } else { 8 }, v);
        }
    }

    pub(super) fn rec_off(&self, tree: Tree, i: usize) -> usize {
        self.hdr
            .saturating_add(i.saturating_sub(1).saturating_mul(tree.rec_len()))
    }

    pub(super) fn key_off(&self, tree: Tree, i: usize) -> usize {
        self.hdr
            .saturating_add(i.saturating_sub(1).saturating_mul(tree.key_len()))
    }

    pub(super) fn ptr_off(&self, tree: Tree, i: usize) -> usize {
        self.hdr
            .saturating_add(self.maxrecs(tree, 1).saturating_mul(tree.key_len()))
            .saturating_add(i.saturating_sub(1).saturating_mul(4))
    }

    pub(super) fn rec_at(&self, tree: Tree, bno: u32, i: usize) -> Vec<u8> {
        let o = self.rec_off(tree, i);
        self.blk(bno)
            .get(o..o.saturating_add(tree.rec_len()))
            .unwrap_or(&[])
            .to_vec()
    }

    pub(super) fn key_at(&self, tree: Tree, bno: u32, i: usize) -> Vec<u8> {
        let o = self.key_off(tree, i);
        self.blk(bno)
            .get(o..o.saturating_add(tree.key_len()))
            .unwrap_or(&[])
            .to_vec()
    }

    pub(super) fn ptr_at(&self, tree: Tree, bno: u32, i: usize) -> u32 {
        be32(self.blk(bno), self.ptr_off(tree, i)).unwrap_or(NULLAGBLOCK)
    }

    /// Note bytes `off..off + len` of block `bno` as logged.
    pub(super) fn touch(&mut self, bno: u32, off: usize, len: usize) {
        self.touched
            .entry(bno)
            .or_default()
            .extend(crate::xfs::replay::ckpt::chunks_of(off, len));
    }

    pub(super) fn put_bytes(&mut self, bno: u32, off: usize, data: &[u8]) {
        self.touch(bno, off, data.len());
        if let Some(b) = self.blk_mut(bno) {
            if let Some(d) = b.get_mut(off..off.saturating_add(data.len())) {
                d.copy_from_slice(data);
            }
        }
    }

    /// Move `count` entries of `len` bytes from slot `from` to slot `to`
    /// (1-based) inside one array starting at `base` (memmove).
    pub(super) fn shift(
        &mut self,
        bno: u32,
        base: usize,
        len: usize,
        from: usize,
        to: usize,
        count: usize,
    ) {
        if count == 0 {
            return;
        }
        let src = base.saturating_add(from.saturating_sub(1).saturating_mul(len));
        let dst = base.saturating_add(to.saturating_sub(1).saturating_mul(len));
        let n = count.saturating_mul(len);
        let lo = src.min(dst);
        self.touch(bno, lo, src.max(dst).saturating_add(n).saturating_sub(lo));
        if let Some(b) = self.blk_mut(bno) {
            let end = src.max(dst).saturating_add(n);
            if end <= b.len() {
                b.copy_within(src..src.saturating_add(n), dst);
            }
        }
    }

    /// Shift entries (records, or keys and pointers) of a block.
    pub(super) fn shift_entries(
        &mut self,
        tree: Tree,
        bno: u32,
        level: usize,
        from: usize,
        to: usize,
        count: usize,
    ) {
        let hdr = self.hdr;
        if level == 0 {
            self.shift(bno, hdr, tree.rec_len(), from, to, count);
        } else {
            self.shift(bno, hdr, tree.key_len(), from, to, count);
            let pbase = self.ptr_off(tree, 1);
            self.shift(bno, pbase, 4, from, to, count);
        }
    }

    /// Copy `count` entries from slot `from` of `src` to slot `to` of `dst`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn copy_entries(
        &mut self,
        tree: Tree,
        level: usize,
        src: u32,
        from: usize,
        dst: u32,
        to: usize,
        count: usize,
    ) {
        if count == 0 {
            return;
        }
        let (len_a, base_a) = if level == 0 {
            (tree.rec_len(), self.hdr)
        } else {
            (tree.key_len(), self.hdr)
        };
        let mut arrays = vec![(base_a, len_a)];
        if level > 0 {
            arrays.push((self.ptr_off(tree, 1), 4));
        }
        for (base, len) in arrays {
            let s = base.saturating_add(from.saturating_sub(1).saturating_mul(len));
            let n = count.saturating_mul(len);
            let data = self
                .blk(src)
                .get(s..s.saturating_add(n))
                .unwrap_or(&[])
                .to_vec();
            let d = base.saturating_add(to.saturating_sub(1).saturating_mul(len));
            self.put_bytes(dst, d, &data);
        }
    }

    pub(super) fn put_rec(&mut self, tree: Tree, bno: u32, i: usize, rec: &[u8]) {
        let o = self.rec_off(tree, i);
        let r = rec.get(..tree.rec_len()).unwrap_or(rec).to_vec();
        self.put_bytes(bno, o, &r);
    }

    pub(super) fn put_key(&mut self, tree: Tree, bno: u32, i: usize, key: &[u8]) {
        if i == 0 || i > self.maxrecs(tree, 1) {
            return;
        }
        let o = self.key_off(tree, i);
        let k = key.get(..tree.key_len()).unwrap_or(key).to_vec();
        self.put_bytes(bno, o, &k);
    }

    pub(super) fn put_ptr(&mut self, tree: Tree, bno: u32, i: usize, p: u32) {
        let o = self.ptr_off(tree, i);
        self.put_bytes(bno, o, &p.to_be_bytes());
    }

    /// `xfs_btree_init_block`: a fresh block (zeroed, as a new buffer is;
    /// a stale buffer got again from the cache keeps its old bytes past
    /// what the header and records overwrite).
    pub(super) fn init_block(&mut self, tree: Tree, bno: u32, level: usize, numrecs: usize) {
        let cached = if self.reused.remove(&bno) {
            self.blocks
                .get(&bno)
                .filter(|b| b.len() == self.blocksize)
                .cloned()
        } else {
            None
        };
        let mut b = cached.unwrap_or_else(|| vec![0u8; self.blocksize]);
        crate::xfs::replay::put_be32(
            &mut b,
            offset_of!(XfsBtreeSblock, bb_magic),
            tree.magic(self.feat.v5).unwrap_or(0),
        );
        crate::xfs::replay::put_be16(
            &mut b,
            offset_of!(XfsBtreeSblock, bb_level),
            u16::try_from(level).unwrap_or(0),
        );
        crate::xfs::replay::put_be16(
            &mut b,
            offset_of!(XfsBtreeSblock, bb_numrecs),
            u16::try_from(numrecs).unwrap_or(0),
        );
        crate::xfs::replay::put_be32(&mut b, offset_of!(XfsBtreeSblock, bb_leftsib), NULLAGBLOCK);
        crate::xfs::replay::put_be32(&mut b, offset_of!(XfsBtreeSblock, bb_rightsib), NULLAGBLOCK);
        if self.feat.v5 {
            crate::xfs::replay::put_be64(
                &mut b,
                offset_of!(XfsBtreeSblock, bb_blkno),
                self.daddr_of(bno),
            );
            let uuid_at = offset_of!(XfsBtreeSblock, bb_uuid);
            if let Some(u) = b.get_mut(uuid_at..uuid_at.saturating_add(16)) {
                u.copy_from_slice(&self.fs.meta_uuid());
            }
            crate::xfs::replay::put_be32(&mut b, offset_of!(XfsBtreeSblock, bb_owner), self.agno);
        }
        self.blocks.insert(bno, b);
        self.dirty.insert(bno);
        let hdr = self.hdr;
        self.touch(bno, 0, hdr);
    }

    /// The keys of a block (`xfs_btree_get_keys`): the low key, and for
    /// the rmapbt the highest high key after it.
    pub(super) fn get_keys(&self, tree: Tree, bno: u32) -> Vec<u8> {
        let n = self.numrecs(bno);
        let hk = tree.half_key();
        if self.level_of(bno) == 0 {
            let first = self.rec_at(tree, bno, 1);
            let mut key = rec_low_key(tree, &first);
            if tree.overlapping() {
                let mut max = rmap_high_key(&first);
                for i in 2..=n {
                    let h = rmap_high_key(&self.rec_at(tree, bno, i));
                    if key_order(tree, &h) > key_order(tree, &max) {
                        max = h;
                    }
                }
                key.extend_from_slice(&max);
            }
            key.resize(tree.key_len(), 0);
            key
        } else if tree.overlapping() {
            let k1 = self.key_at(tree, bno, 1);
            let mut key = k1.get(..hk).unwrap_or(&[]).to_vec();
            let mut max = k1.get(hk..).unwrap_or(&[]).to_vec();
            for i in 2..=n {
                let k = self.key_at(tree, bno, i);
                let h = k.get(hk..).unwrap_or(&[]);
                if key_order(tree, h) > key_order(tree, &max) {
                    max = h.to_vec();
                }
            }
            key.extend_from_slice(&max);
            key.resize(tree.key_len(), 0);
            key
        } else {
            self.key_at(tree, bno, 1)
        }
    }

    /// `xfs_btree_lookup`: a cursor for `key`, and whether a record fits
    /// the direction (for [`Lookup::Eq`]: whether the key is there).
    pub fn lookup(&mut self, tree: Tree, dir: Lookup, key: Key) -> EditResult<(Cursor, bool)> {
        let (root, levels) = self.root(tree)?;
        let nlevels = usize::try_from(levels).unwrap_or(0);
        if nlevels == 0 || nlevels > 9 {
            return Err(corrupt_at(
                0,
                format!(
                    "{} AG {}: height {levels} is not 1..=9",
                    tree.name(),
                    self.agno
                ),
            ));
        }
        let mut cur = Cursor {
            tree,
            lv: vec![
                CursorLevel {
                    bno: NULLAGBLOCK,
                    ptr: 0
                };
                nlevels
            ],
        };
        let mut bno = root;
        let mut diff = std::cmp::Ordering::Greater;
        let mut keyno = 0usize;
        for level in (0..nlevels).rev() {
            self.load(tree, bno, Some(level))?;
            let n = self.numrecs(bno);
            if level > 0 && n == 0 {
                return Err(corrupt_at(
                    self.daddr_of(bno),
                    format!(
                        "{} AG {} block {bno}: a node with no entries",
                        tree.name(),
                        self.agno
                    ),
                ));
            }
            cur.set(level, bno, 0);
            if diff == std::cmp::Ordering::Equal {
                keyno = 1;
            } else {
                let mut low = 1usize;
                let mut high = n;
                if high == 0 {
                    if nlevels != 1 {
                        return Err(corrupt_at(
                            self.daddr_of(bno),
                            format!(
                                "{} AG {} block {bno}: an empty leaf under a node",
                                tree.name(),
                                self.agno
                            ),
                        ));
                    }
                    cur.set_ptr(0, usize::from(dir != Lookup::Le));
                    return Ok((cur, false));
                }
                while low <= high {
                    keyno = low.saturating_add(high) >> 1;
                    let k = if level == 0 {
                        rec_key(tree, &self.rec_at(tree, bno, keyno))
                    } else {
                        key_order(tree, &self.key_at(tree, bno, keyno))
                    };
                    diff = k.cmp(&key);
                    match diff {
                        std::cmp::Ordering::Less => low = keyno.saturating_add(1),
                        std::cmp::Ordering::Greater => {
                            if keyno == 0 {
                                break;
                            }
                            high = keyno.saturating_sub(1);
                        }
                        std::cmp::Ordering::Equal => break,
                    }
                }
            }
            if level > 0 {
                if diff == std::cmp::Ordering::Greater {
                    keyno = keyno.saturating_sub(1).max(1);
                }
                cur.set_ptr(level, keyno);
                bno = self.ptr_at(tree, bno, keyno);
            }
        }
        let leaf = cur.at(0).bno;
        let n = self.numrecs(leaf);
        if dir != Lookup::Le && diff == std::cmp::Ordering::Less {
            keyno = keyno.saturating_add(1);
            if dir == Lookup::Ge && keyno > n && self.sib(leaf, true) != NULLAGBLOCK {
                cur.set_ptr(0, keyno);
                if !self.increment_level(&mut cur, 0)? {
                    return Err(corrupt_at(
                        self.daddr_of(leaf),
                        format!(
                            "{} AG {}: a right sibling that cannot be reached",
                            tree.name(),
                            self.agno
                        ),
                    ));
                }
                return Ok((cur, true));
            }
        } else if dir == Lookup::Le && diff == std::cmp::Ordering::Greater {
            keyno = keyno.saturating_sub(1);
        }
        cur.set_ptr(0, keyno);
        let stat = if keyno == 0 || keyno > n {
            false
        } else {
            dir != Lookup::Eq || diff == std::cmp::Ordering::Equal
        };
        Ok((cur, stat))
    }

    /// The record the cursor points at.
    pub fn get_rec(&self, cur: &Cursor) -> Option<Vec<u8>> {
        let l = cur.at(0);
        if l.ptr == 0 || l.ptr > self.numrecs(l.bno) {
            return None;
        }
        Some(self.rec_at(cur.tree, l.bno, l.ptr))
    }

    /// `xfs_btree_increment` at the leaf level.
    pub fn increment(&mut self, cur: &mut Cursor) -> EditResult<bool> {
        self.increment_level(cur, 0)
    }

    /// `xfs_btree_decrement` at the leaf level.
    pub fn decrement(&mut self, cur: &mut Cursor) -> EditResult<bool> {
        self.decrement_level(cur, 0)
    }

    pub(super) fn increment_level(&mut self, cur: &mut Cursor, level: usize) -> EditResult<bool> {
        let tree = cur.tree;
        let l = cur.at(level);
        let ptr = l.ptr.saturating_add(1);
        cur.set_ptr(level, ptr);
        if ptr <= self.numrecs(l.bno) {
            return Ok(true);
        }
        if self.sib(l.bno, true) == NULLAGBLOCK {
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
            return Err(corrupt_at(
                self.daddr_of(l.bno),
                format!(
                    "{} AG {} block {}: a right sibling but no next entry above it",
                    tree.name(),
                    self.agno,
                    l.bno
                ),
            ));
        }
        while lev > level {
            let b = cur.at(lev);
            let child = self.ptr_at(tree, b.bno, b.ptr);
            lev = lev.saturating_sub(1);
            self.load(tree, child, Some(lev))?;
            cur.set(lev, child, 1);
        }
        Ok(true)
    }

    pub(super) fn decrement_level(&mut self, cur: &mut Cursor, level: usize) -> EditResult<bool> {
        let tree = cur.tree;
        let l = cur.at(level);
        let ptr = l.ptr.saturating_sub(1);
        cur.set_ptr(level, ptr);
        if l.ptr > 1 {
            return Ok(true);
        }
        if self.sib(l.bno, false) == NULLAGBLOCK {
            return Ok(false);
        }
        let mut lev = level.saturating_add(1);
        while lev < cur.nlevels() {
            let b = cur.at(lev);
            let p = b.ptr.saturating_sub(1);
            cur.set_ptr(lev, p);
            if b.ptr > 1 {
                break;
            }
            lev = lev.saturating_add(1);
        }
        if lev >= cur.nlevels() {
            return Err(corrupt_at(
                self.daddr_of(l.bno),
                format!(
                    "{} AG {} block {}: a left sibling but no entry before it above",
                    tree.name(),
                    self.agno,
                    l.bno
                ),
            ));
        }
        while lev > level {
            let b = cur.at(lev);
            let child = self.ptr_at(tree, b.bno, b.ptr);
            lev = lev.saturating_sub(1);
            self.load(tree, child, Some(lev))?;
            let n = self.numrecs(child);
            cur.set(lev, child, n);
        }
        Ok(true)
    }

    pub(super) fn firstrec(&self, cur: &mut Cursor, level: usize) -> bool {
        if self.numrecs(cur.at(level).bno) == 0 {
            return false;
        }
        cur.set_ptr(level, 1);
        true
    }

    pub(super) fn lastrec(&self, cur: &mut Cursor, level: usize) -> bool {
        let n = self.numrecs(cur.at(level).bno);
        if n == 0 {
            return false;
        }
        cur.set_ptr(level, n);
        true
    }

    /// `xfs_btree_update_keys`: the keys above `level` describe the
    /// blocks under them again.
    pub(super) fn update_keys(&mut self, cur: &Cursor, level: usize) {
        let tree = cur.tree;
        if tree.overlapping() {
            self.updkeys(cur, level, false);
            return;
        }
        let key = self.get_keys(tree, cur.at(level).bno);
        let mut lev = level.saturating_add(1);
        let mut ptr = 1usize;
        while ptr == 1 && lev < cur.nlevels() {
            let l = cur.at(lev);
            ptr = l.ptr;
            self.put_key(tree, l.bno, ptr, &key);
            lev = lev.saturating_add(1);
        }
    }

    /// `__xfs_btree_updkeys` (overlapping trees): low and high keys up to
    /// the root, stopping where they already agree unless `force`.
    pub(super) fn updkeys(&mut self, cur: &Cursor, level: usize, force: bool) {
        let tree = cur.tree;
        if level.saturating_add(1) >= cur.nlevels() {
            return;
        }
        let hk = tree.half_key();
        let mut key = self.get_keys(tree, cur.at(level).bno);
        let mut lev = level.saturating_add(1);
        while lev < cur.nlevels() {
            let l = cur.at(lev);
            let old = self.key_at(tree, l.bno, l.ptr);
            let same = |a: &[u8], b: &[u8]| {
                key_order(tree, a.get(..hk).unwrap_or(&[]))
                    == key_order(tree, b.get(..hk).unwrap_or(&[]))
                    && key_order(tree, a.get(hk..).unwrap_or(&[]))
                        == key_order(tree, b.get(hk..).unwrap_or(&[]))
            };
            if !force && same(&old, &key) {
                break;
            }
            self.put_key(tree, l.bno, l.ptr, &key);
            if lev.saturating_add(1) >= cur.nlevels() {
                break;
            }
            key = self.get_keys(tree, l.bno);
            lev = lev.saturating_add(1);
        }
    }

    pub(super) fn needs_key_update(tree: Tree, ptr: usize) -> bool {
        tree.overlapping() || ptr == 1
    }

    /// `xfs_btree_update`: replace the record the cursor points at.
    pub fn update_at(&mut self, cur: &Cursor, rec: &[u8]) -> EditResult<()> {
        let tree = cur.tree;
        let l = cur.at(0);
        if l.ptr == 0 || l.ptr > self.numrecs(l.bno) {
            return refuse(format!("{}: the cursor points at no record", tree.name()));
        }
        if rec.len() != tree.rec_len() {
            return refuse(format!("{}: a record of {} bytes", tree.name(), rec.len()));
        }
        self.put_rec(tree, l.bno, l.ptr, rec);
        if Self::needs_key_update(tree, l.ptr) {
            self.update_keys(cur, 0);
        }
        self.after_edit(tree)
    }

    pub(super) fn cursor_lost(&self, tree: Tree, bno: u32) -> EditError {
        corrupt_at(
            self.daddr_of(bno),
            format!(
                "{} AG {} block {bno}: an empty block",
                tree.name(),
                self.agno
            ),
        )
    }
}
