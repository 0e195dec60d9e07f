//! Remote attr values (`xfs_attr_remote.c`): their blocks mapped one extent
//! per transaction, the value written, and unmapped on removal.
//!
//! A remote value: its entry goes into the leaf incomplete; then, in
//! transactions of their own, its place is the first hole of the attr fork
//! that holds all its blocks (`xfs_bmap_first_unused`), and each
//! transaction maps one extent there: all the blocks still needed, in one
//! piece, allocated near the block `xfs_bmap_adjacent` picks from the
//! extents around the hole (the mapping merged with a contiguous
//! neighbour); the last also writes the value with its headers (not
//! logged: their LSNs stay null) and completes the entry.
//!
//! A fork whose block 0 is a leaf with value blocks after it is not "a
//! leaf" to the kernel (`xfs_attr_is_leaf`) and takes the node path: the
//! removal state marks the old entry incomplete (a remote value's block
//! and length cleared) in the intent's own transaction; its value blocks
//! are unmapped one extent per transaction (reverse mapping and free
//! deferred), then the entry leaves the block in a transaction of its
//! own, where a fork that is one leaf block again goes back to a
//! shortform list if the rest fits; a set's add comes after that.

use super::*;
use crate::xfs::error::Location;
use crate::xfs::format::attr::XfsAttr3RmtHdr;
use crate::xfs::replay::ag::damaged;
use crate::xfs::replay::block_len;
use crate::xfs::replay::field_range;
use core::mem::offset_of;

impl<R: ReadAt> ForkEditor<'_, R> {
    /// Bytes of value one remote block holds (v5: less its header).
    fn rmt_space(&self) -> usize {
        let g = self.fs().geo;
        let bs = block_len(&g);
        if g.v5 {
            bs.saturating_sub(RMT_HDR)
        } else {
            bs
        }
    }

    /// Blocks a remote value of `len` bytes takes (`xfs_attr3_rmt_blocks`).
    pub(super) fn rmt_blocks(&self, len: u32) -> u64 {
        let space = u64::try_from(self.rmt_space()).unwrap_or(0).max(1);
        u64::from(len).div_ceil(space)
    }

    /// One transaction of `XFS_DAS_{LEAF,NODE}_SET_RMT` and `_ALLOC_RMT`:
    /// the first time, the value's place is the first hole of the attr
    /// fork that holds it (`xfs_bmap_first_unused`); each time, one extent
    /// is allocated near the blocks `xfs_bmap_adjacent` picks (all the
    /// blocks still needed, in one piece) and mapped there (merged with
    /// contiguous neighbours; di_nblocks grows; the inode logged). When
    /// nothing is left, the value is written to its blocks with their
    /// headers (not logged: their LSNs stay null) and the entry completed.
    /// Returns the AG, the deferred reverse mapping and, when more is
    /// left, where the allocation stands.
    pub fn attr_remote_step(
        &mut self,
        p: &PendingAdd,
        at: Option<RemoteAt>,
        space: &mut dyn AttrSpace,
    ) -> EditResult<(u32, Work, Option<RemoteAt>)> {
        let ino = p.ino;
        let valuelen = u32::try_from(p.value.len()).unwrap_or(u32::MAX);
        let at = match at {
            Some(a) => a,
            None => {
                let count = self.rmt_blocks(valuelen);
                let first = Self::first_unused(&self.attr_extents(ino)?, count);
                RemoteAt {
                    first,
                    next: first,
                    left: count,
                }
            }
        };
        let (agno, length, rmap) = self.attr_alloc_map(ino, at.next, at.left, space)?;
        let now = RemoteAt {
            first: at.first,
            next: at.next.saturating_add(length),
            left: at.left.saturating_sub(length),
        };
        if now.left > 0 {
            return Ok((agno, rmap, Some(now)));
        }
        self.write_remote_value(ino, at.first, &p.value)?;
        // The entry completed (`xfs_attr3_leaf_clearflag`).
        let hash = self.attr_hash(p.ns, &p.name, &p.value)?;
        let (mut lf, _, found) = self.leaf_lookup(ino, hash, |fl, n, _| {
            n == p.name.as_slice()
                && fl & (XFS_ATTR_NSP_ONDISK_MASK | XFS_ATTR_INCOMPLETE)
                    == p.ns | XFS_ATTR_INCOMPLETE
        })?;
        let Ok(i) = found else {
            return damaged(
                "attr fork",
                Some(Location::Inode { ino }),
                "the remote value's entry is gone",
            );
        };
        lf.leaf
            .clear_incomplete(i, u32::try_from(at.first).unwrap_or(0), valuelen)?;
        self.put_attr_block(lf.boff, lf.leaf.b);
        Ok((agno, rmap, None))
    }

    /// `xfs_attr_rmtval_set_value`: `value` written to the attr blocks
    /// from `first`, each with its header on v5 (owner, offset of its part
    /// of the value, bytes, own address, a null LSN), the rest zeroed.
    fn write_remote_value(&mut self, ino: u64, first: u64, value: &[u8]) -> EditResult<()> {
        let fs = self.fs();
        let g = fs.geo;
        let bs = block_len(&g);
        let space = self.rmt_space().max(1);
        let recs = self.attr_extents(ino)?;
        for (i, part) in value.chunks(space).enumerate() {
            let lblk = first.saturating_add(u64::try_from(i).unwrap_or(u64::MAX));
            let Some(r) = recs.iter().find(|r| r.off <= lblk && r.end() > lblk) else {
                return damaged(
                    "attr fork",
                    Some(Location::Inode { ino }),
                    format!("attr block {lblk} of a remote value is not mapped"),
                );
            };
            let fsb = r.start.saturating_add(lblk.saturating_sub(r.off));
            let boff = self
                .block_off("remote attr block", fsb)
                .map_err(|e| e.within(|| format!("inode {ino}")))?;
            let mut v = vec![0u8; bs];
            let data_at = if g.v5 {
                set_be32(
                    &mut v,
                    offset_of!(XfsAttr3RmtHdr, rm_magic),
                    XFS_ATTR3_RMT_MAGIC,
                )?;
                let off = i.saturating_mul(space);
                set_be32(
                    &mut v,
                    offset_of!(XfsAttr3RmtHdr, rm_offset),
                    u32::try_from(off).unwrap_or(0),
                )?;
                set_be32(
                    &mut v,
                    offset_of!(XfsAttr3RmtHdr, rm_bytes),
                    u32::try_from(part.len()).unwrap_or(0),
                )?;
                if let Some(d) = v.get_mut(field_range(offset_of!(XfsAttr3RmtHdr, rm_uuid), 16)) {
                    d.copy_from_slice(&fs.meta_uuid());
                }
                set_be64(&mut v, offset_of!(XfsAttr3RmtHdr, rm_owner), ino)?;
                set_be64(&mut v, offset_of!(XfsAttr3RmtHdr, rm_blkno), boff / 512)?;
                set_be64(&mut v, offset_of!(XfsAttr3RmtHdr, rm_lsn), u64::MAX)?;
                RMT_HDR
            } else {
                0
            };
            if let Some(d) = v.get_mut(data_at..data_at.saturating_add(part.len())) {
                d.copy_from_slice(part);
            }
            if g.v5 {
                crate::xfs::replay::put_crc(&mut v, 12);
            }
            self.put_raw_block(boff, v);
        }
        Ok(())
    }

    /// `xfs_bunmapi` of one extent of the attr blocks `[blk, blk + count)`
    /// (an old remote value's, one per transaction of
    /// `XFS_DAS_NODE_REMOVE_RMT`; a dropped da block's, in
    /// `xfs_da_shrink_inode`): the last extent in the range unmapped, its
    /// reverse mapping and free deferred. Returns that work, whether more
    /// of the range is mapped, and whether the inode was logged (not when
    /// nothing was mapped).
    pub fn attr_unmap_blocks(
        &mut self,
        ino: u64,
        blk: u64,
        count: u64,
    ) -> EditResult<(Vec<Work>, bool, bool)> {
        let Some((piece, more)) = self.attr_unmap_last(ino, blk, blk.saturating_add(count))? else {
            return Ok((Vec::new(), false, false));
        };
        let g = self.fs().geo;
        let (agno, agbno) = g.split_fsb(crate::xfs::types::FsBlock(piece.start));
        let len = u32::try_from(piece.len).unwrap_or(u32::MAX);
        let m = Rmap {
            start: agbno.0,
            len,
            owner: ino,
            offset: piece.off,
            attr: true,
            bmbt: false,
            unwritten: false,
        };
        // Joined bmbt leaves go first (the btree delete), a leaf given up
        // for a list last (the end of the call).
        let (mut work, after) = self.take_let_go();
        work.extend(Work::unmap_and_free(agno.0, m));
        work.extend(after);
        Ok((work, more, true))
    }
}
