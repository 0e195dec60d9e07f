//! The AG headers as the allocator keeps them: AGF and AGI fields and tree
//! roots, and the AG free list (`xfs_alloc.c`: `xfs_alloc_get_freelist`,
//! `xfs_alloc_put_freelist`, the AGFL's slots; `xfs_ialloc.c` for the AGI).

use super::error::{EditError, EditResult};
use super::tree_ops::AgTree;
use super::AgStore;
use crate::xfs::error::{Error, Location};
use crate::xfs::format::ag::NULLAGBLOCK;
use crate::xfs::format::ag::{
    XfsAgf, XfsAgfl, XfsAgi, XFS_AGFL_HDR_SIZE, XFS_AGFL_MAGIC, XFS_AGI_MAGIC,
};
use crate::xfs::fs::be32;
use crate::xfs::read::ReadAt;
use crate::xfs::replay::ag::{damaged, not_done};
use crate::xfs::replay::set_be32;
use core::mem::offset_of;

impl<'a, R: ReadAt> AgStore<'a, R> {
    pub fn agf_u32(&self, off: usize) -> u32 {
        be32(&self.agf, off).unwrap_or(0)
    }

    pub fn set_agf_u32(&mut self, off: usize, v: u32) -> EditResult<()> {
        if be32(&self.agf, off) != Some(v) {
            let agno = self.agno;
            set_be32(&mut self.agf, off, v).map_err(|w| w.damage("AGF", Location::Ag { agno }))?;
            self.agf_dirty = true;
        }
        Ok(())
    }

    pub(super) fn add_agf(&mut self, off: usize, delta: i64) -> EditResult<()> {
        let v = i64::from(self.agf_u32(off)).saturating_add(delta);
        self.set_agf_u32(off, u32::try_from(v.max(0)).unwrap_or(u32::MAX))
    }

    pub(super) fn load_agi(&mut self) -> EditResult<()> {
        if self.agi.is_none() {
            let ss = u64::from(self.fs.geo.sectsize);
            let off = self.ag_byte(0)?.saturating_add(ss.saturating_mul(2));
            let b = self.read_bytes(off, ss)?;
            if be32(&b, offset_of!(XfsAgi, agi_magicnum)) != Some(XFS_AGI_MAGIC) {
                return Err(EditError::Read(Error::corrupt(
                    "AGI",
                    Location::Bytes {
                        offset: off,
                        len: ss,
                    },
                    format!("AG {}: bad AGI magic", self.agno),
                )));
            }
            self.agi = Some(b);
        }
        Ok(())
    }

    /// A 32-bit AGI field.
    pub fn agi_u32(&mut self, off: usize) -> EditResult<u32> {
        self.load_agi()?;
        Ok(self.agi.as_deref().and_then(|a| be32(a, off)).unwrap_or(0))
    }

    pub fn set_agi_u32(&mut self, off: usize, v: u32) -> EditResult<()> {
        self.load_agi()?;
        if let Some(a) = self.agi.as_mut() {
            if be32(a, off) != Some(v) {
                crate::xfs::replay::set_be32(a, off, v)?;
                self.agi_dirty = true;
            }
        }
        Ok(())
    }

    pub(super) fn add_agi(&mut self, off: usize, delta: i64) -> EditResult<()> {
        let v = i64::from(self.agi_u32(off)?).saturating_add(delta);
        self.set_agi_u32(off, u32::try_from(v.max(0)).unwrap_or(u32::MAX))
    }

    /// Where the root is and how tall the tree is.
    pub fn root(&mut self, tree: AgTree) -> EditResult<(u32, u32)> {
        let (r, l) = tree.root_level_off();
        if tree.in_agi() {
            Ok((self.agi_u32(r)?, self.agi_u32(l)?))
        } else {
            Ok((self.agf_u32(r), self.agf_u32(l)))
        }
    }

    /// `set_root`: a new root, the height changed by `inc`.
    pub(super) fn set_root(&mut self, tree: AgTree, root: u32, inc: i64) -> EditResult<()> {
        let (r, l) = tree.root_level_off();
        if tree.in_agi() {
            self.set_agi_u32(r, root)?;
            self.add_agi(l, inc)
        } else {
            self.set_agf_u32(r, root)?;
            self.add_agf(l, inc)?;
            Ok(())
        }
    }

    pub(crate) fn agfl_slots(&self) -> u32 {
        let hdr = if self.feat.v5 { XFS_AGFL_HDR_SIZE } else { 0 };
        let slots = usize::from(self.fs.geo.sectsize).saturating_sub(hdr) / 4;
        u32::try_from(slots).unwrap_or(u32::MAX)
    }

    pub(super) fn load_agfl(&mut self) -> EditResult<()> {
        if self.agfl.is_none() {
            let ss = u64::from(self.fs.geo.sectsize);
            let off = self.ag_byte(0)?.saturating_add(ss.saturating_mul(3));
            let b = self.read_bytes(off, ss)?;
            if self.feat.v5 && be32(&b, offset_of!(XfsAgfl, agfl_magicnum)) != Some(XFS_AGFL_MAGIC)
            {
                return Err(EditError::Read(Error::corrupt(
                    "AGFL",
                    Location::Bytes {
                        offset: off,
                        len: ss,
                    },
                    format!("AG {}: bad AGFL magic", self.agno),
                )));
            }
            self.agfl = Some(b);
        }
        Ok(())
    }

    /// The free list's head, tail and count must agree (the kernel resets
    /// a list that does not: `xfs_agfl_needs_reset`; that is not done here).
    pub(super) fn check_agfl_fields(&self) -> EditResult<()> {
        let (f, l, c) = (
            self.agf_u32(offset_of!(XfsAgf, agf_flfirst)),
            self.agf_u32(offset_of!(XfsAgf, agf_fllast)),
            self.agf_u32(offset_of!(XfsAgf, agf_flcount)),
        );
        let size = self.agfl_slots();
        let active = if c == 0 {
            0
        } else if l >= f {
            l.saturating_sub(f).saturating_add(1)
        } else {
            size.saturating_sub(f).saturating_add(l).saturating_add(1)
        };
        if f >= size || l >= size || c > size || active != c {
            return not_done(format!("AG {}: the free list's first {f}, last {l} and count {c} disagree (the kernel would reset it)", self.agno));
        }
        Ok(())
    }

    /// `xfs_alloc_get_freelist`: the block at the head of the free list
    /// (`None` when it is empty); `btreeblk` counts it in `agf_btreeblks`.
    pub fn get_freelist(&mut self, btreeblk: bool) -> EditResult<Option<u32>> {
        if self.agf_u32(offset_of!(XfsAgf, agf_flcount)) == 0 {
            return Ok(None);
        }
        self.check_agfl_fields()?;
        self.load_agfl()?;
        let hdr: usize = if self.feat.v5 { XFS_AGFL_HDR_SIZE } else { 0 };
        let first = self.agf_u32(offset_of!(XfsAgf, agf_flfirst));
        let off = usize::try_from(first)
            .unwrap_or(usize::MAX)
            .saturating_mul(4)
            .saturating_add(hdr);
        let bno = self
            .agfl
            .as_deref()
            .and_then(|a| be32(a, off))
            .unwrap_or(NULLAGBLOCK);
        if bno == 0 || bno >= self.agblocks {
            return damaged(
                "AGFL",
                Some(Location::Ag { agno: self.agno }),
                format!("free list slot {first} holds block {bno}, outside the AG"),
            );
        }
        let mut nf = first.saturating_add(1);
        if nf == self.agfl_slots() {
            nf = 0;
        }
        self.set_agf_u32(offset_of!(XfsAgf, agf_flfirst), nf)?;
        self.add_agf(offset_of!(XfsAgf, agf_flcount), -1)?;
        if btreeblk {
            self.add_agf(offset_of!(XfsAgf, agf_btreeblks), 1)?;
            self.busy_reuse(bno);
        }
        Ok(Some(bno))
    }

    /// `xfs_alloc_put_freelist`: put `agbno` at the end of the free list.
    pub fn put_freelist(&mut self, agbno: u32) -> EditResult<()> {
        self.put_freelist_ex(agbno, false)
    }

    pub(crate) fn put_freelist_ex(&mut self, agbno: u32, btreeblk: bool) -> EditResult<()> {
        if self.agf_u32(offset_of!(XfsAgf, agf_flcount)) > 0 {
            self.check_agfl_fields()?;
        }
        self.load_agfl()?;
        let slots = self.agfl_slots();
        if self.agf_u32(offset_of!(XfsAgf, agf_flcount)) >= slots {
            return damaged(
                "AGFL",
                Some(Location::Ag { agno: self.agno }),
                "the free list is full",
            );
        }
        let mut last = self
            .agf_u32(offset_of!(XfsAgf, agf_fllast))
            .saturating_add(1);
        if last >= slots {
            last = 0;
        }
        self.set_agf_u32(offset_of!(XfsAgf, agf_fllast), last)?;
        self.add_agf(offset_of!(XfsAgf, agf_flcount), 1)?;
        if btreeblk {
            self.add_agf(offset_of!(XfsAgf, agf_btreeblks), -1)?;
        }
        let hdr = if self.feat.v5 { XFS_AGFL_HDR_SIZE } else { 0 };
        let off = usize::try_from(last)
            .unwrap_or(usize::MAX)
            .saturating_mul(4)
            .saturating_add(hdr);
        if let Some(agfl) = self.agfl.as_mut() {
            crate::xfs::replay::set_be32(agfl, off, agbno)?;
        }
        self.agfl_dirty = true;
        Ok(())
    }

    /// The blocks on the free list, head first.
    pub fn freelist(&mut self) -> EditResult<Vec<u32>> {
        let c = self.agf_u32(offset_of!(XfsAgf, agf_flcount));
        if c == 0 {
            return Ok(Vec::new());
        }
        self.check_agfl_fields()?;
        self.load_agfl()?;
        let hdr: usize = if self.feat.v5 { XFS_AGFL_HDR_SIZE } else { 0 };
        let slots = self.agfl_slots();
        let mut i = self.agf_u32(offset_of!(XfsAgf, agf_flfirst));
        let mut out = Vec::new();
        for _ in 0..c {
            let off = usize::try_from(i)
                .unwrap_or(usize::MAX)
                .saturating_mul(4)
                .saturating_add(hdr);
            out.push(
                self.agfl
                    .as_deref()
                    .and_then(|a| be32(a, off))
                    .unwrap_or(NULLAGBLOCK),
            );
            i = i.saturating_add(1);
            if i >= slots {
                i = 0;
            }
        }
        Ok(out)
    }
}

impl<R: ReadAt> AgStore<'_, R> {
    /// `xfs_alloc_get_freelist` (not for a btree block): take the block at
    /// the head of the free list.
    pub fn take_freelist_head(&mut self) -> EditResult<u32> {
        match self.get_freelist(false)? {
            Some(b) => Ok(b),
            None => damaged(
                "AGFL",
                Some(Location::Ag { agno: self.agno }),
                "the free list is empty",
            ),
        }
    }
}
