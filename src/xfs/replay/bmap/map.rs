//! The fork's mappings changed as `xfs_bmap.c` changes them: a mapping put
//! into a hole (`xfs_bmapi_remap`), a range taken out (`__xfs_bunmapi`),
//! the record list in the inode, and the conversions between a list and a
//! one-leaf bmbt (`xfs_bmap_extents_to_btree`, `xfs_bmap_btree_to_extents`).

use super::{recs_of, Alloc, ForkAt, ForkEditor, Mapping, Rec};
use crate::xfs::error::Location;
use crate::xfs::format::dinode::XfsDinode;
use crate::xfs::format::dinode::{
    XFS_DINODE_FMT_BTREE, XFS_DINODE_FMT_EXTENTS, XFS_MAX_BMBT_EXTLEN,
};
use crate::xfs::fs::{be16, be64};
use crate::xfs::read::ReadAt;
use crate::xfs::replay::ag::{damaged, fails_mount, not_done, EditResult};
use crate::xfs::replay::alloc::RmapOwner;
use crate::xfs::replay::{set_be16, set_be64};
use core::mem::offset_of;

impl<'a, R: ReadAt> ForkEditor<'a, R> {
    /// xfs_bmap_add_extent_hole_real.
    pub(super) fn map(
        &mut self,
        f: &mut ForkAt,
        new: Rec,
        alloc: &mut Alloc<'_>,
    ) -> EditResult<()> {
        match f.format {
            XFS_DINODE_FMT_EXTENTS => {
                let mut recs = self.list(f)?;
                let i = recs.partition_point(|r| r.off < new.off);
                let left = i.checked_sub(1).and_then(|j| recs.get(j)).copied();
                let right = recs.get(i).copied();
                hole_check((f.name(), f.ino), left, right, new)?;
                let (lc, rc) = contiguity(left, right, new);
                match (lc, rc, left, right) {
                    (true, true, Some(l), Some(r)) => {
                        if let Some(x) = recs.get_mut(i.saturating_sub(1)) {
                            x.len = l.len.saturating_add(new.len).saturating_add(r.len);
                        }
                        recs.remove(i);
                    }
                    (true, false, Some(l), _) => {
                        if let Some(x) = recs.get_mut(i.saturating_sub(1)) {
                            x.len = l.len.saturating_add(new.len);
                        }
                    }
                    (false, true, _, Some(r)) => {
                        if let Some(x) = recs.get_mut(i) {
                            *x = Rec {
                                off: new.off,
                                start: new.start,
                                len: new.len.saturating_add(r.len),
                                unwritten: r.unwritten,
                            };
                        }
                    }
                    _ => recs.insert(i, new),
                }
                if u64::try_from(recs.len()).unwrap_or(u64::MAX) > f.maxext() {
                    return self.extents_to_btree(f, &recs, alloc);
                }
                self.put_list(f, &recs)
            }
            XFS_DINODE_FMT_BTREE => self.map_btree(f, new, alloc),
            fmt => fails_mount(format!(
                "inode {}: a mapping into a fork of format {fmt} (no mappings)",
                f.ino
            )),
        }
    }

    /// xfs_bmap_extents_to_btree: the records no longer fit the inode, so
    /// they move to a new bmbt leaf allocated near the inode, and the fork
    /// becomes a one-level root pointing at it (the bytes of the old list
    /// that the root does not cover stay, as the kernel's flush leaves
    /// them).
    pub(super) fn extents_to_btree(
        &mut self,
        f: &mut ForkAt,
        recs: &[Rec],
        alloc: &mut Alloc<'_>,
    ) -> EditResult<()> {
        let g = &self.fs.geo;
        let ino = f.ino;
        let (hdr, maxrecs, root_max) = self.bmbt_geometry(f);
        if recs.len() > maxrecs || root_max == 0 {
            return not_done(format!(
                "inode {ino}: {} extents in more than one new bmbt leaf",
                recs.len()
            ));
        }
        if !g.v5 {
            return not_done(format!("inode {ino}: a bmbt for a v4 inode"));
        }
        // The inode's own block is the target (XFS_INO_TO_FSB).
        let shift = u32::from(g.agblklog).saturating_add(u32::from(g.inopblog));
        let agno = u32::try_from(ino.checked_shr(shift).unwrap_or(0)).unwrap_or(u32::MAX);
        let agino_mask = 1u64.checked_shl(shift).unwrap_or(0).saturating_sub(1);
        let hint = u32::try_from((ino & agino_mask) >> g.inopblog).unwrap_or(0);
        let (fsb, off) = self.alloc_bmbt_block(f, ino, agno, hint, alloc)?;
        let mut b = self.new_block(off, ino, 0, recs.len(), u64::MAX, u64::MAX)?;
        for (k, r) in recs.iter().enumerate() {
            r.put(&mut b, hdr.saturating_add(k.saturating_mul(16)))?;
        }
        // The new leaf's header and records, and the root in the inode.
        self.block_logged(off, 0, hdr.saturating_add(recs.len().saturating_mul(16)));
        self.blocks.insert(off, b);
        self.fork_logged(f);
        // The root in the inode: level 1, one key, one pointer.
        let root = f.fork_off;
        set_be16(&mut f.bytes, root, 1)?;
        set_be16(&mut f.bytes, root.saturating_add(2), 1)?;
        set_be64(
            &mut f.bytes,
            root.saturating_add(4),
            recs.first().map_or(0, |r| r.off),
        )?;
        set_be64(
            &mut f.bytes,
            root.saturating_add(4)
                .saturating_add(root_max.saturating_mul(8)),
            fsb,
        )?;
        let fmt_at = if f.attr { 83 } else { 5 };
        if let Some(x) = f.bytes.get_mut(fmt_at) {
            *x = XFS_DINODE_FMT_BTREE;
        }
        f.format = XFS_DINODE_FMT_BTREE;
        f.nextents_set(u64::try_from(recs.len()).unwrap_or(u64::MAX))
    }

    /// The mapping of the data or attr fork at file block `off`, at most
    /// `max` blocks, as `xfs_bmapi_read` returns one: the record that holds
    /// `off` cut to start there, or the hole up to the next record.
    pub(in crate::xfs::replay) fn mapping_at(
        &self,
        ino: u64,
        attr: bool,
        off: u64,
        max: u64,
    ) -> EditResult<Mapping> {
        let f = self.fork(ino, attr)?;
        let next = match f.format {
            XFS_DINODE_FMT_EXTENTS => self.list(&f)?.into_iter().find(|r| r.end() > off),
            XFS_DINODE_FMT_BTREE => self.btree_record_at(&f, off)?,
            t => {
                return fails_mount(format!(
                    "inode {ino}: {} fork of format {t} has no mappings to read",
                    if attr { "an attr" } else { "a data" }
                ))
            }
        };
        Ok(match next {
            Some(r) if r.off <= off => Mapping {
                off,
                len: r.end().saturating_sub(off).min(max),
                start: Some(r.start.saturating_add(off.saturating_sub(r.off))),
                unwritten: r.unwritten,
            },
            Some(r) => Mapping {
                off,
                len: r.off.saturating_sub(off).min(max),
                start: None,
                unwritten: false,
            },
            None => Mapping {
                off,
                len: max,
                start: None,
                unwritten: false,
            },
        })
    }

    /// The attr fork's extent records (a list or a bmbt's).
    pub(in crate::xfs::replay) fn attr_extents(&self, ino: u64) -> EditResult<Vec<Rec>> {
        let f = self.fork(ino, true)?;
        self.records(&f, ino)
    }

    /// The data fork's extent records (a list or a bmbt's).
    pub(in crate::xfs::replay) fn data_extents(&self, ino: u64) -> EditResult<Vec<Rec>> {
        let f = self.fork(ino, false)?;
        self.records(&f, ino)
    }

    /// The records of fork `f`: its list, or its bmbt's records walked
    /// from the first by the engine's cursor, as many as the fork counts,
    /// in order.
    pub(super) fn records(&self, f: &ForkAt, ino: u64) -> EditResult<Vec<Rec>> {
        if f.format == XFS_DINODE_FMT_EXTENTS {
            return self.list(f);
        }
        if f.format != XFS_DINODE_FMT_BTREE {
            return damaged(
                f.name(),
                Some(Location::Inode { ino }),
                format!("format {}: no extents", f.format),
            );
        }
        let limit = usize::try_from(f.nextents).unwrap_or(usize::MAX);
        let recs = self.btree_records(f, limit)?;
        if recs.len() != limit {
            return damaged(
                "bmbt",
                Some(Location::Inode { ino }),
                format!(
                    "the leaves hold {} records, the fork counts {limit}",
                    recs.len()
                ),
            );
        }
        if recs.windows(2).any(|w| match w {
            [a, b] => a.end() > b.off,
            _ => false,
        }) {
            return damaged(
                "bmbt",
                Some(Location::Inode { ino }),
                "the records overlap or are out of order",
            );
        }
        Ok(recs)
    }

    /// `rec` mapped into the attr fork as `xfs_bmap_add_extent_hole_real`
    /// maps it (merged with contiguous neighbours; a full list turned into
    /// a bmbt, a full leaf split, their blocks from `alloc`); di_nblocks
    /// grows by its length; the inode is logged.
    pub(in crate::xfs::replay) fn attr_map(
        &mut self,
        ino: u64,
        rec: Rec,
        alloc: &mut Alloc<'_>,
    ) -> EditResult<()> {
        let mut f = self.fork(ino, true)?;
        if f.format != XFS_DINODE_FMT_EXTENTS && f.format != XFS_DINODE_FMT_BTREE {
            return fails_mount(format!(
                "inode {ino}: a mapping into an attr fork of format {} (no mappings)",
                f.format
            ));
        }
        self.map(&mut f, rec, alloc)?;
        let nb = be64(&f.bytes, offset_of!(XfsDinode, di_nblocks))
            .unwrap_or(0)
            .saturating_add(rec.len);
        set_be64(&mut f.bytes, offset_of!(XfsDinode, di_nblocks), nb)?;
        self.log_inode(ino, f.ioff, f.bytes, 1)?;
        Ok(())
    }

    /// One call of `__xfs_bunmapi` with one extent allowed, on the attr
    /// fork's range `[off, end)`: the last extent in it is cut out (a
    /// record trimmed, split or removed; in a bmbt, a leaf left short
    /// rebalanced, a tree whose records fit the inode again turned back
    /// into a list, the blocks let go of freed later, see
    /// [`Self::take_let_go`]); di_nblocks drops by what left; the inode is
    /// logged. Returns the piece and whether more of the range is still
    /// mapped; `None` (nothing logged) when none of it is.
    pub(in crate::xfs::replay) fn attr_unmap_last(
        &mut self,
        ino: u64,
        off: u64,
        end: u64,
    ) -> EditResult<Option<(Rec, bool)>> {
        let mut f = self.fork(ino, true)?;
        let piece = if f.format == XFS_DINODE_FMT_BTREE {
            let mut no_split = |_: u32, _: u32, _: RmapOwner| -> EditResult<Option<u32>> {
                not_done(format!(
                    "inode {ino}: an attr block cut out of the middle of an extent in a full bmbt leaf"
                ))
            };
            self.step = 0;
            let Some(piece) = self.unmap_btree_one(&mut f, off, end, &mut no_split)? else {
                return Ok(None);
            };
            if f.nextents <= f.maxext() {
                self.btree_to_extents(&mut f)?;
            }
            piece
        } else {
            let mut recs = self.records(&f, ino)?;
            let Some(i) = recs.iter().rposition(|r| r.off < end && r.end() > off) else {
                return Ok(None);
            };
            let Some(r) = recs.get(i).copied() else {
                return Ok(None);
            };
            let (front, piece, back) = r.cut(off, end);
            recs.remove(i);
            if back.len > 0 {
                recs.insert(i, back);
            }
            if front.len > 0 {
                recs.insert(i, front);
            }
            self.put_list(&mut f, &recs)?;
            piece
        };
        let more = self
            .records(&f, ino)?
            .iter()
            .any(|r| r.off < piece.off && r.end() > off);
        let nb = be64(&f.bytes, offset_of!(XfsDinode, di_nblocks))
            .unwrap_or(0)
            .saturating_sub(piece.len);
        set_be64(&mut f.bytes, offset_of!(XfsDinode, di_nblocks), nb)?;
        let bumps = u64::from(!self.root_logged_first(ino));
        self.log_inode(ino, f.ioff, f.bytes, bumps)?;
        Ok(Some((piece, more)))
    }

    /// The record list of an extents-format fork.
    pub(super) fn list(&self, f: &ForkAt) -> EditResult<Vec<Rec>> {
        if f.nextents > f.maxext() {
            return damaged(
                f.name(),
                Some(Location::Inode { ino: f.ino }),
                format!(
                    "{} extents do not fit the fork ({} bytes)",
                    f.nextents, f.fork_len
                ),
            );
        }
        let n = usize::try_from(f.nextents).unwrap_or(0);
        let recs: Vec<Rec> = (0..n)
            .map(|i| Rec::parse(&f.bytes, f.fork_off.saturating_add(i.saturating_mul(16))))
            .collect();
        if recs
            .windows(2)
            .any(|w| matches!(w, [a, b] if a.end() > b.off))
        {
            return damaged(
                f.name(),
                Some(Location::Inode { ino: f.ino }),
                "the extents overlap or are out of order",
            );
        }
        Ok(recs)
    }

    pub(super) fn put_list(&mut self, f: &mut ForkAt, recs: &[Rec]) -> EditResult<()> {
        let n = u64::try_from(recs.len()).unwrap_or(u64::MAX);
        if n > f.maxext() {
            return not_done(format!(
                "inode {}: an unmap would leave {n} extents, more than the inode holds: the fork converted to a bmbt there",
                f.ino
            ));
        }
        for (i, r) in recs.iter().enumerate() {
            r.put(
                &mut f.bytes,
                f.fork_off.saturating_add(i.saturating_mul(16)),
            )?;
        }
        // XFS_ILOG_DEXT (or AEXT): the list is logged whole.
        self.fork_logged(f);
        f.nextents_set(n)
    }

    /// __xfs_bunmapi(REMAP) over `[off, off + len)`: the pieces unmapped,
    /// last first.
    pub(super) fn unmap(
        &mut self,
        f: &mut ForkAt,
        off: u64,
        len: u64,
        alloc: &mut Alloc<'_>,
    ) -> EditResult<Vec<Rec>> {
        if f.format == XFS_DINODE_FMT_BTREE {
            return self.unmap_btree(f, off, len, alloc);
        }
        if f.format != XFS_DINODE_FMT_EXTENTS {
            return fails_mount(format!(
                "inode {}: an unmap from a fork of format {} (no mappings)",
                f.ino, f.format
            ));
        }
        let mut recs = self.list(f)?;
        let end = off.saturating_add(len);
        let mut pieces = Vec::new();
        let mut i = recs.len();
        while i > 0 {
            i = i.saturating_sub(1);
            let Some(r) = recs.get(i).copied() else {
                break;
            };
            if r.off >= end {
                continue;
            }
            if r.end() <= off {
                break;
            }
            let (front, piece, back) = r.cut(off, end);
            pieces.push(piece);
            recs.remove(i);
            if back.len > 0 {
                recs.insert(i, back);
            }
            if front.len > 0 {
                recs.insert(i, front);
            }
        }
        // Every step on a list logs the core (no root to log first).
        self.later_core_steps = u64::try_from(pieces.len().saturating_sub(1)).unwrap_or(0);
        if u64::try_from(recs.len()).unwrap_or(u64::MAX) > f.maxext() {
            // A cut in the middle of an extent of a full list: __xfs_bunmapi
            // converts the fork to a bmbt (xfs_bmap_extents_to_btree).
            if pieces.len() != 1 {
                return not_done(format!(
                    "inode {}: an unmap of several extents that overflows the list",
                    f.ino
                ));
            }
            self.extents_to_btree(f, &recs, alloc)?;
            return Ok(pieces);
        }
        self.put_list(f, &recs)?;
        Ok(pieces)
    }

    /// xfs_bmap_btree_to_extents: a one-leaf bmbt whose records fit the
    /// inode again becomes an extent list (written where the root was;
    /// what the root's bytes leave uncovered stays), the leaf is dropped
    /// unwritten (its buffer invalidated) and freed later, di_nblocks - 1.
    pub(super) fn btree_to_extents(&mut self, f: &mut ForkAt) -> EditResult<()> {
        let ino = f.ino;
        let (hdr, maxrecs, root_max) = self.bmbt_geometry(f);
        let root = f.fork_off;
        let level = be16(&f.bytes, root).unwrap_or(0);
        let n = be16(&f.bytes, root.saturating_add(2)).unwrap_or(0);
        if level != 1 || n != 1 {
            return not_done(format!(
                "inode {ino}: {} extents fit the inode again; a bmbt root of level {level} with {n} records turned back into a list",
                f.nextents
            ));
        }
        let fsb = be64(
            &f.bytes,
            root.saturating_add(4)
                .saturating_add(root_max.saturating_mul(8)),
        )
        .unwrap_or(0);
        let (loff, b, nr) = self.bmbt_block(ino, fsb, Some(0), maxrecs)?;
        let recs = recs_of(&b, hdr, nr);
        if u64::try_from(recs.len()).unwrap_or(u64::MAX) != f.nextents {
            return damaged(
                "bmbt",
                Some(Location::FsBlock { fsb }),
                format!(
                    "inode {ino}: the leaf holds {} records, the inode counts {}",
                    recs.len(),
                    f.nextents
                ),
            );
        }
        let fmt_at = if f.attr { 83 } else { 5 };
        if let Some(x) = f.bytes.get_mut(fmt_at) {
            *x = XFS_DINODE_FMT_EXTENTS;
        }
        f.format = XFS_DINODE_FMT_EXTENTS;
        self.put_list(f, &recs)?;
        self.let_go_of(f, loff, fsb, false)?;
        Ok(())
    }
}

/// The mapping must go into a hole of the fork (`place`: its name and
/// inode) between `left` and `right`.
pub(super) fn hole_check(
    place: (&'static str, u64),
    left: Option<Rec>,
    right: Option<Rec>,
    new: Rec,
) -> EditResult<()> {
    if left.is_some_and(|l| l.end() > new.off) || right.is_some_and(|r| r.off < new.end()) {
        let (fork, ino) = place;
        return damaged(
            fork,
            Some(Location::Inode { ino }),
            format!(
                "file blocks {}+{} are already mapped: a bmap update maps only into a hole",
                new.off, new.len
            ),
        );
    }
    Ok(())
}

/// Whether `new` joins its left and right neighbours.
pub(super) fn contiguity(left: Option<Rec>, right: Option<Rec>, new: Rec) -> (bool, bool) {
    let lc = left.is_some_and(|l| {
        l.end() == new.off
            && l.start.saturating_add(l.len) == new.start
            && l.unwritten == new.unwritten
            && l.len.saturating_add(new.len) <= XFS_MAX_BMBT_EXTLEN
    });
    let rc = right.is_some_and(|r| {
        new.end() == r.off
            && new.start.saturating_add(new.len) == r.start
            && new.unwritten == r.unwritten
            && new.len.saturating_add(r.len) <= XFS_MAX_BMBT_EXTLEN
            && (!lc
                || left.is_some_and(|l| {
                    l.len.saturating_add(new.len).saturating_add(r.len) <= XFS_MAX_BMBT_EXTLEN
                }))
    });
    (lc, rc)
}
