//! Attr fork blocks: the first unused file block (`xfs_bmap_first_unused`),
//! an allocation near the blocks `xfs_bmap_adjacent` picks, and a new da
//! block (`xfs_da_grow_inode`).

use super::*;
use crate::xfs::error::Location;
use crate::xfs::replay::ag::{damaged, not_done};

impl<R: ReadAt> ForkEditor<'_, R> {
    /// `xfs_bmap_first_unused` in an attr fork's extents `recs`: the first
    /// hole of at least `count` blocks, or the end of the last extent.
    pub(super) fn first_unused(recs: &[Rec], count: u64) -> u64 {
        let mut max = 0u64;
        for r in recs {
            if r.off >= count && r.off.saturating_sub(max) >= count {
                break;
            }
            max = max.max(r.end());
        }
        max
    }

    /// One `xfs_bmapi_write` into the attr fork hole at `off`: `length`
    /// blocks (fewer if the next extent comes sooner) allocated in one
    /// piece near the block `xfs_bmap_adjacent` picks, mapped there (merged
    /// with contiguous neighbours; the inode logged). Returns the AG, the
    /// blocks mapped and the deferred reverse mapping.
    pub(super) fn attr_alloc_map(
        &mut self,
        ino: u64,
        off: u64,
        length: u64,
        space: &mut dyn AttrSpace,
    ) -> EditResult<(u32, u64, Work)> {
        let recs = self.attr_extents(ino)?;
        let got = recs.iter().find(|r| r.end() > off).copied();
        if got.is_some_and(|r| r.off <= off) {
            return damaged(
                "attr fork",
                Some(Location::Inode { ino }),
                format!("attr block {off} is already mapped"),
            );
        }
        let mut length = length.min(XFS_MAX_BMBT_EXTLEN);
        if let Some(r) = got {
            length = length.min(r.off.saturating_sub(off));
        }
        let prev = recs.iter().rev().find(|r| r.end() <= off).copied();
        let target = self.adjacent(ino, prev, got, off, length);
        let g = self.fs().geo;
        let (agno, agbno) = g.split_fsb(crate::xfs::types::FsBlock(target));
        let len32 = u32::try_from(length).unwrap_or(u32::MAX);
        let Some(bno) = space.near(agno.0, agbno.0, len32)? else {
            return not_done(format!(
                "inode {ino}: no {length} free blocks for the attr fork in AG {}",
                agno.0
            ));
        };
        let fsb = u64::from(agno.0)
            .checked_shl(u32::from(g.agblklog))
            .unwrap_or(0)
            | u64::from(bno);
        let mut bmbt = |a: u32, h: u32, o| space.bmbt_block(a, h, o);
        self.attr_map(
            ino,
            Rec {
                off,
                start: fsb,
                len: length,
                unwritten: false,
            },
            &mut bmbt,
        )?;
        let rmap = Work::RmapMap {
            agno: agno.0,
            m: Rmap {
                start: bno,
                len: len32,
                owner: ino,
                offset: off,
                attr: true,
                bmbt: false,
                unwritten: false,
            },
            shared: false,
        };
        Ok((agno.0, length, rmap))
    }

    /// `xfs_bmap_adjacent` for a mapping at attr block `off` of `length`
    /// blocks, between `prev` and `got` (`None`: no extent after, `eof`):
    /// the block to allocate near; else the inode's own.
    fn adjacent(
        &self,
        ino: u64,
        prev: Option<Rec>,
        got: Option<Rec>,
        off: u64,
        length: u64,
    ) -> u64 {
        let g = self.fs().geo;
        let bits = u32::from(g.agblklog);
        let agno_of = |x: u64| x.checked_shr(bits).unwrap_or(0);
        let mask = 1u64
            .checked_shl(bits)
            .map_or(u64::MAX, |m| m.saturating_sub(1));
        let valid = |x: Option<u64>, y: u64| {
            x.is_some_and(|x| {
                agno_of(x) == agno_of(y)
                    && agno_of(x) < u64::from(g.agcount)
                    && (x & mask) < u64::from(g.agblocks)
            })
        };
        let ino_fsb = ino.checked_shr(u32::from(g.inopblog)).unwrap_or(0);
        let prev_end = prev.map(|p| (p, p.start.saturating_add(p.len)));
        if got.is_none() {
            return match prev_end {
                Some((p, pe)) if valid(Some(pe), p.start) => {
                    let adjust = off.saturating_sub(p.end());
                    if adjust != 0 && valid(pe.checked_add(adjust), p.start) {
                        pe.saturating_add(adjust)
                    } else {
                        pe
                    }
                }
                _ => ino_fsb,
            };
        }
        let gap = length.saturating_mul(4);
        let before = match prev_end {
            Some((p, pe)) if pe != 0 && valid(Some(pe), p.start) => {
                let adjust = off.saturating_sub(p.end());
                if adjust <= gap && valid(pe.checked_add(adjust), p.start) {
                    Some((pe.saturating_add(adjust), adjust))
                } else {
                    Some((pe, adjust.saturating_mul(2)))
                }
            }
            _ => None,
        };
        let after = got.map(|r| {
            let adjust = r.off.saturating_sub(off);
            if adjust <= gap && valid(r.start.checked_sub(adjust), r.start) {
                (r.start.saturating_sub(adjust), adjust)
            } else if valid(r.start.checked_sub(length), r.start) {
                (
                    r.start.saturating_sub(length),
                    adjust.saturating_add(adjust).saturating_sub(length),
                )
            } else {
                (r.start, adjust.saturating_mul(2))
            }
        });
        match (before, after) {
            (Some((pb, pd)), Some((gb, gd))) => {
                if pd <= gd {
                    pb
                } else {
                    gb
                }
            }
            (Some((pb, _)), None) => pb,
            (None, Some((gb, _))) => gb,
            (None, None) => ino_fsb,
        }
    }

    /// `xfs_da_grow_inode` for one attr block: the first unused attr block
    /// (`xfs_bmap_first_unused`), mapped to a block allocated near the one
    /// `xfs_bmap_adjacent` picks (the inode logged). Returns the attr
    /// block, its byte offset and the work deferred: what the allocation
    /// let go of, then the block's reverse mapping.
    pub(super) fn da_grow(
        &mut self,
        ino: u64,
        space: &mut dyn AttrSpace,
    ) -> EditResult<(u64, u64, Vec<Work>)> {
        let dablk = Self::first_unused(&self.attr_extents(ino)?, 1);
        let (agno, _, rmap) = self.attr_alloc_map(ino, dablk, 1, space)?;
        let mut work = space.let_go(agno)?;
        work.push(rmap);
        let boff = self.attr_block_off(ino, dablk)?;
        Ok((dablk, boff, work))
    }
}
