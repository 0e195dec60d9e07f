//! The AG btrees on the generic engine (`replay/btree/`): blocks read and
//! checked as the read verifier would, the tree's ops (`xfs_btree_ops` of
//! `xfs_alloc_btree.c`, `xfs_ialloc_btree.c`, `xfs_rmap_btree.c`,
//! `xfs_refcount_btree.c`: short pointers, the root in the AGF or AGI,
//! each tree's block allocation), and the cursor API the callers use.

use super::error::{not_done, EditError, EditResult};
use super::tree_ops::{key_order, rec_key, rec_low_key, rmap_high_key, AgTree, Key};
use super::{corrupt_at, AgStore};
use crate::xfs::format::ag::NULLAGBLOCK;
use crate::xfs::format::btree::{XfsBtreeSblock, XFS_BTREE_SBLOCK_CRC_OFF};
use crate::xfs::fs::{be16, be32};
use crate::xfs::read::ReadAt;
use crate::xfs::replay::btree::delete::Delete;
use crate::xfs::replay::btree::insert::Insert;
use crate::xfs::replay::btree::{self as engine, Btree, BtreeOps};
use crate::xfs::replay::{set_be16, set_be32, set_be64};
use core::mem::offset_of;
use zerocopy::FromBytes;

pub use crate::xfs::replay::btree::Lookup;

/// A path from the root of one AG tree to a record (the engine's cursor
/// with the tree it walks). After [`AgStore::insert_at`] the cursor is
/// spent; after [`AgStore::delete_at`] it stands where the record was, as
/// the kernel's does.
#[derive(Clone, Debug)]
pub struct Cursor {
    pub tree: AgTree,
    pub(super) inner: engine::Cursor,
}

impl Cursor {
    /// The leaf block and 1-based index the cursor points at.
    pub fn leaf(&self) -> (u32, usize) {
        let (b, p) = self.inner.leaf();
        (u32::try_from(b).unwrap_or(NULLAGBLOCK), p)
    }
}

/// One AG tree as the engine sees it (`xfs_btree_ops` and the cursor's
/// AG part).
pub(super) struct AgTreeOps<'s, 'a, R: ReadAt> {
    s: &'s mut AgStore<'a, R>,
    tree: AgTree,
}

/// An engine block pointer as an AG block number (null and anything too
/// large become `NULLAGBLOCK`, which no check accepts).
fn agbno(p: u64) -> u32 {
    u32::try_from(p).unwrap_or(NULLAGBLOCK)
}

impl<R: ReadAt> BtreeOps for AgTreeOps<'_, '_, R> {
    fn name(&self) -> &'static str {
        self.tree.btree_name()
    }
    fn what(&self) -> String {
        format!("{} AG {}", self.tree.btree_name(), self.s.agno)
    }
    fn rec_len(&self) -> usize {
        self.tree.rec_len()
    }
    fn key_len(&self) -> usize {
        self.tree.key_len()
    }
    fn overlapping(&self) -> bool {
        self.tree.overlapping()
    }
    fn long_ptrs(&self) -> bool {
        false
    }
    fn hdr_len(&self) -> usize {
        self.s.hdr
    }
    fn block_len(&self) -> usize {
        self.s.blocksize
    }
    fn maxrecs(&self, level: usize) -> usize {
        self.s.maxrecs(self.tree, level)
    }
    fn minrecs(&self, level: usize) -> usize {
        self.s.minrecs(self.tree, level)
    }
    fn rec_key(&self, rec: &[u8]) -> Key {
        rec_key(self.tree, rec)
    }
    fn key_order(&self, key: &[u8]) -> Key {
        key_order(self.tree, key)
    }
    fn rec_low_key(&self, rec: &[u8]) -> Vec<u8> {
        rec_low_key(self.tree, rec)
    }
    fn rec_high_key(&self, rec: &[u8]) -> Vec<u8> {
        rmap_high_key(rec)
    }
    fn root(&mut self) -> EditResult<(u64, usize)> {
        let (root, levels) = self.s.root(self.tree)?;
        Ok((
            u64::from(root),
            usize::try_from(levels).unwrap_or(usize::MAX),
        ))
    }
    fn set_root(&mut self, ptr: u64, inc: i64) -> EditResult<()> {
        self.s.set_root(self.tree, agbno(ptr), inc)
    }
    fn load(&mut self, bno: u64, level: Option<usize>) -> EditResult<()> {
        self.s.load(self.tree, agbno(bno), level)
    }
    fn block(&self, bno: u64) -> &[u8] {
        self.s.blk(agbno(bno))
    }
    fn block_mut(&mut self, bno: u64) -> Option<&mut [u8]> {
        self.s.blk_mut(agbno(bno)).map(|b| b.as_mut_slice())
    }
    fn logged(&mut self, bno: u64, off: usize, len: usize) {
        self.s.touch(agbno(bno), off, len);
    }
    fn init_block(&mut self, bno: u64, level: usize, numrecs: usize) -> EditResult<()> {
        self.s.init_block(self.tree, agbno(bno), level, numrecs)?;
        Ok(())
    }
    fn alloc_block(&mut self, hint: u64) -> EditResult<Option<u64>> {
        Ok(self.s.alloc_block(self.tree, agbno(hint))?.map(u64::from))
    }
    fn free_block(&mut self, bno: u64) -> EditResult<()> {
        self.s.free_block(self.tree, agbno(bno))
    }
    fn after_edit(&mut self) -> EditResult<()> {
        self.s.after_edit(self.tree)
    }
    fn damaged(&self, bno: Option<u64>, msg: String) -> EditError {
        let (name, agno) = (self.tree.btree_name(), self.s.agno);
        match bno {
            Some(b) => corrupt_at(
                self.s.daddr_of(agbno(b)),
                format!("{name} AG {agno} block {b}: {msg}"),
            ),
            None => corrupt_at(0, format!("{name} AG {agno}: {msg}")),
        }
    }
}

impl<'a, R: ReadAt> AgStore<'a, R> {
    /// The engine's view of `tree`.
    pub(super) fn ops(&mut self, tree: AgTree) -> AgTreeOps<'_, 'a, R> {
        AgTreeOps { s: self, tree }
    }

    /// `xfs_btree_lookup`: a cursor for `key`, and whether a record fits
    /// the direction (for [`Lookup::Eq`]: whether the key is there).
    pub fn lookup(&mut self, tree: AgTree, dir: Lookup, key: Key) -> EditResult<(Cursor, bool)> {
        let (inner, ok) = self.ops(tree).lookup(dir, key)?;
        Ok((Cursor { tree, inner }, ok))
    }

    /// The record the cursor points at.
    pub fn get_rec(&self, cur: &Cursor) -> Option<Vec<u8>> {
        let (bno, ptr) = cur.leaf();
        let b = self.blk(bno);
        if ptr == 0 || ptr > self.numrecs(bno) {
            return None;
        }
        let len = cur.tree.rec_len();
        let o = self
            .hdr
            .saturating_add(ptr.saturating_sub(1).saturating_mul(len));
        Some(b.get(o..o.saturating_add(len)).unwrap_or(&[]).to_vec())
    }

    /// `xfs_btree_increment` at the leaf level.
    pub fn increment(&mut self, cur: &mut Cursor) -> EditResult<bool> {
        self.ops(cur.tree).increment_level(&mut cur.inner, 0)
    }

    /// `xfs_btree_decrement` at the leaf level.
    pub fn decrement(&mut self, cur: &mut Cursor) -> EditResult<bool> {
        self.ops(cur.tree).decrement_level(&mut cur.inner, 0)
    }

    /// `xfs_btree_update`: replace the record the cursor points at.
    pub fn update_at(&mut self, cur: &Cursor, rec: &[u8]) -> EditResult<()> {
        self.ops(cur.tree).update_at(&cur.inner, rec)
    }

    /// `xfs_btree_insert`: insert `rec` where the cursor stands (as a
    /// lookup left it). The cursor is spent.
    pub fn insert_at(&mut self, cur: Cursor, rec: &[u8]) -> EditResult<()> {
        self.ops(cur.tree).insert_at(cur.inner, rec)
    }

    /// `xfs_btree_delete`: delete the record the cursor points at.
    /// Returns whether there was one. The cursor stays usable.
    pub fn delete_at(&mut self, cur: &mut Cursor) -> EditResult<bool> {
        self.ops(cur.tree).delete_at(&mut cur.inner)
    }
}

impl<'a, R: ReadAt> AgStore<'a, R> {
    /// Read (once) and check a block of `tree` expected at `level`.
    pub(super) fn load(&mut self, tree: AgTree, bno: u32, level: Option<usize>) -> EditResult<()> {
        let daddr = self.daddr_of(bno);
        let name = tree.btree_name();
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
            let b = self.read_bytes(off, u64::from(self.fs.geo.blocksize))?;
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

    pub(super) fn sib(&self, bno: u32, right: bool) -> u32 {
        be32(self.blk(bno), if right { 12 } else { 8 }).unwrap_or(NULLAGBLOCK)
    }

    pub(super) fn ptr_at(&self, tree: AgTree, bno: u32, i: usize) -> u32 {
        let off = self
            .hdr
            .saturating_add(self.maxrecs(tree, 1).saturating_mul(tree.key_len()))
            .saturating_add(i.saturating_sub(1).saturating_mul(4));
        be32(self.blk(bno), off).unwrap_or(NULLAGBLOCK)
    }

    /// Note bytes `off..off + len` of block `bno` as logged.
    pub(super) fn touch(&mut self, bno: u32, off: usize, len: usize) {
        self.logged_since.insert(bno);
        self.touched
            .entry(bno)
            .or_default()
            .extend(crate::xfs::replay::ckpt::chunks_of(off, len));
    }

    /// `xfs_btree_init_block`: a fresh block (zeroed, as a new buffer is;
    /// a stale buffer got again from the cache keeps its old bytes past
    /// what the header and records overwrite).
    pub(super) fn init_block(
        &mut self,
        tree: AgTree,
        bno: u32,
        level: usize,
        numrecs: usize,
    ) -> EditResult<()> {
        let Some(magic) = tree.magic(self.feat.v5) else {
            return not_done(format!("a {} block on a v4 filesystem", tree.btree_name()));
        };
        let cached = if self.reused.remove(&bno) {
            self.blocks
                .get(&bno)
                .filter(|b| b.len() == self.blocksize)
                .cloned()
        } else {
            None
        };
        let mut b = cached.unwrap_or_else(|| vec![0u8; self.blocksize]);
        set_be32(&mut b, offset_of!(XfsBtreeSblock, bb_magic), magic)?;
        set_be16(
            &mut b,
            offset_of!(XfsBtreeSblock, bb_level),
            u16::try_from(level).unwrap_or(0),
        )?;
        set_be16(
            &mut b,
            offset_of!(XfsBtreeSblock, bb_numrecs),
            u16::try_from(numrecs).unwrap_or(0),
        )?;
        set_be32(&mut b, offset_of!(XfsBtreeSblock, bb_leftsib), NULLAGBLOCK)?;
        set_be32(&mut b, offset_of!(XfsBtreeSblock, bb_rightsib), NULLAGBLOCK)?;
        if self.feat.v5 {
            set_be64(
                &mut b,
                offset_of!(XfsBtreeSblock, bb_blkno),
                self.daddr_of(bno),
            )?;
            let uuid_at = offset_of!(XfsBtreeSblock, bb_uuid);
            if let Some(u) = b.get_mut(uuid_at..uuid_at.saturating_add(16)) {
                u.copy_from_slice(&self.fs.meta_uuid());
            }
            set_be32(&mut b, offset_of!(XfsBtreeSblock, bb_owner), self.agno)?;
        }
        self.blocks.insert(bno, b);
        self.dirty.insert(bno);
        let hdr = self.hdr;
        self.touch(bno, 0, hdr);
        Ok(())
    }
}
