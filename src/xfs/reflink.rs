//! Which data extents of a file are shared with other files (reflink), from
//! the per-AG reference count btree.
//!
//! ```text
//! AGF: 88 agf_refcount_root (agbno)   92 agf_refcount_level
//! refcount btree block (short form, v5): 56-byte header, magic "R3FC"
//!   leaf:  records {startblock u32, blockcount u32, refcount u32}
//!   node:  keys {startblock u32}[maxrecs], then ptrs u32[]
//! startblock bit 31 marks CoW staging extents (never shared).
//! ```
//! Blocks with a reference count of 2 or more are shared. Only inodes with
//! the REFLINK flag (`di_flags2` bit 1) can own shared blocks, so the tree is
//! consulted only for them.

use crate::xfs::bmap::{Extent, Fork};
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::dinode::XFS_DIFLAG2_REFLINK;
use crate::xfs::fs::{be16, be32, Fs};
use crate::xfs::inode::Inode;
use crate::xfs::read::ReadAt;
use crate::xfs::types::{AgBlock, AgNumber, FsBlock};
use std::collections::HashSet;

/// "XAGF".
const AGF_MAGIC: u32 = 0x5841_4746;
/// "R3FC".
const REFC_MAGIC: u32 = 0x5233_4643;
/// `sb_features_ro_compat` REFLINK.
const RO_COMPAT_REFLINK: u32 = 1 << 2;
const SBLOCK_CRC_LEN: usize = 56;
const REFC_REC_LEN: usize = 12;
const MAX_LEVELS: u32 = 9;
/// CoW staging records carry this bit in their start block.
const REFC_COWFLAG: u32 = 1 << 31;

impl<R: ReadAt> Fs<R> {
    /// Whether the filesystem can share blocks between files at all.
    pub fn has_reflink(&self) -> bool {
        self.geo.v5 && self.sb.features_ro_compat & RO_COMPAT_REFLINK != 0
    }

    /// Fill [`Extent::shared`] of the inode's data extents: `Some(true)` when
    /// any block of the extent has a reference count of 2 or more. Extents of
    /// inodes without the REFLINK flag (or on filesystems without reflink)
    /// are `Some(false)` without reading anything. Realtime files stay `None`.
    pub fn mark_shared(&self, inode: &mut Inode) -> Result<()> {
        if inode.core.is_realtime() {
            return Ok(());
        }
        let may_share =
            self.has_reflink() && inode.core.flags2_or_zero() & XFS_DIFLAG2_REFLINK != 0;
        let extents = match &mut inode.data {
            Fork::Extents { extents } | Fork::Btree { extents, .. } => extents,
            _ => return Ok(()),
        };
        for e in extents.iter_mut() {
            e.shared = Some(may_share && self.extent_shared(e)?);
        }
        Ok(())
    }

    /// Whether any block of `e` has a reference count of 2 or more.
    pub fn extent_shared(&self, e: &Extent) -> Result<bool> {
        if !self.has_reflink() {
            return Ok(false);
        }
        let (agno, agbno) = self.geo.split_fsb(e.start);
        let last = e.start.0.saturating_add(e.len.saturating_sub(1));
        let (agno_last, agbno_last) = self.geo.split_fsb(FsBlock(last));
        if agno_last != agno {
            return Err(Error::corrupt(
                "extent",
                Location::Daddr { daddr: 0 },
                format!("extent at block {} crosses an AG boundary", e.start.0),
            ));
        }
        self.refcount_shared(agno, agbno, agbno_last)
    }

    /// Whether the refcount btree of AG `agno` has a record with a count of
    /// 2 or more overlapping AG blocks `first..=last`.
    fn refcount_shared(&self, agno: AgNumber, first: AgBlock, last: AgBlock) -> Result<bool> {
        let (daddr, agf) = self.read_ag_header("AGF", agno, 1)?;
        let bad =
            |detail: String| Error::corrupt("AGF", Location::Daddr { daddr: daddr.0 }, detail);
        let magic = be32(&agf, 0).unwrap_or(0);
        if magic != AGF_MAGIC {
            return Err(bad(format!(
                "AG {}: AGF magic {magic:#010x}, expected {AGF_MAGIC:#010x}",
                agno.0
            )));
        }
        let root = be32(&agf, 88).unwrap_or(0);
        let level = be32(&agf, 92).unwrap_or(0);
        if level == 0 || level > MAX_LEVELS || root == 0 || root >= self.geo.agblocks {
            return Err(bad(format!(
                "AG {}: refcount btree root {root} level {level} is not usable",
                agno.0
            )));
        }
        let mut visited = HashSet::new();
        self.refcount_walk(
            agno,
            AgBlock(root),
            level.saturating_sub(1),
            first.0,
            last.0,
            &mut visited,
        )
    }

    fn refcount_walk(
        &self,
        agno: AgNumber,
        agbno: AgBlock,
        level: u32,
        first: u32,
        last: u32,
        visited: &mut HashSet<u32>,
    ) -> Result<bool> {
        let daddr = self.geo.agb_to_daddr(agno, agbno).map_or(0, |d| d.0);
        let bad = |detail: String| {
            Error::corrupt(
                "refcount btree block",
                Location::Daddr { daddr },
                format!("AG {} block {}: {detail}", agno.0, agbno.0),
            )
        };
        if !visited.insert(agbno.0)
            || u64::try_from(visited.len()).unwrap_or(u64::MAX) > u64::from(self.geo.agblocks)
        {
            return Err(bad("reached twice (a loop)".into()));
        }
        let b = self.read_agblock("refcount btree block", agno, agbno)?;
        let magic = be32(&b, 0).unwrap_or(0);
        if magic != REFC_MAGIC {
            return Err(bad(format!(
                "magic {magic:#010x}, expected {REFC_MAGIC:#010x}"
            )));
        }
        let blevel = u32::from(be16(&b, 4).unwrap_or(0));
        if blevel != level {
            return Err(bad(format!("level {blevel}, expected {level}")));
        }
        let numrecs = usize::from(be16(&b, 6).unwrap_or(0));
        let space = b.len().saturating_sub(SBLOCK_CRC_LEN);
        if level == 0 {
            if numrecs > space / REFC_REC_LEN {
                return Err(bad(format!("{numrecs} records do not fit")));
            }
            for i in 0..numrecs {
                let off = SBLOCK_CRC_LEN.saturating_add(i.saturating_mul(REFC_REC_LEN));
                let start = be32(&b, off).unwrap_or(0);
                let count = be32(&b, off.saturating_add(4)).unwrap_or(0);
                let refcount = be32(&b, off.saturating_add(8)).unwrap_or(0);
                if start & REFC_COWFLAG != 0 || count == 0 {
                    continue;
                }
                let end = start.saturating_add(count.saturating_sub(1));
                if start <= last && end >= first && refcount >= 2 {
                    return Ok(true);
                }
            }
            return Ok(false);
        }
        let maxrecs = space / 8;
        if numrecs == 0 || numrecs > maxrecs {
            return Err(bad(format!("{numrecs} keys (room for {maxrecs})")));
        }
        let ptr_base = SBLOCK_CRC_LEN.saturating_add(maxrecs.saturating_mul(4));
        for i in 0..numrecs {
            let key = be32(&b, SBLOCK_CRC_LEN.saturating_add(i.saturating_mul(4))).unwrap_or(0);
            let next_key = (i.saturating_add(1) < numrecs)
                .then(|| {
                    be32(
                        &b,
                        SBLOCK_CRC_LEN.saturating_add(i.saturating_add(1).saturating_mul(4)),
                    )
                })
                .flatten();
            // Child i holds starts in [key, next_key).
            if key > last {
                break;
            }
            // Records never overlap, so this child's records end before the
            // next child's first start: skip it when that is <= `first`.
            if next_key.is_some_and(|n| n <= first) {
                continue;
            }
            let ptr = be32(&b, ptr_base.saturating_add(i.saturating_mul(4))).unwrap_or(0);
            if ptr == 0 || ptr >= self.geo.agblocks {
                return Err(bad(format!("pointer {i} to block {ptr} is outside the AG")));
            }
            if self.refcount_walk(
                agno,
                AgBlock(ptr),
                level.saturating_sub(1),
                first,
                last,
                visited,
            )? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
