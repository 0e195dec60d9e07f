//! Which file extents share their blocks with other files (reflink), read
//! from each AG's reference count btree: a block is shared when a
//! non-copy-on-write refcount record with a count above 1 covers it.

use crate::xfs::ag::btree::{records, AgTree, Record};
use crate::xfs::ag::{read_agf, HeaderCtx};
use crate::xfs::bmap::{Extent, Fork};
use crate::xfs::error::Result;
use crate::xfs::format::dinode::XFS_DIFLAG2_REFLINK;
use crate::xfs::fs::Fs;
use crate::xfs::inode::Inode;
use crate::xfs::read::ReadAt;
use crate::xfs::types::AgNumber;
use std::collections::BTreeMap;

/// Most refcount records read from one AG.
const MAX_RECORDS: usize = 4 << 20;

/// Shared ranges of one AG: start block -> end block (exclusive), sorted and
/// merged.
#[derive(Default, Debug, Clone)]
pub struct SharedRanges {
    ranges: BTreeMap<u32, u32>,
}

impl SharedRanges {
    /// Whether `start..start+len` overlaps a shared range.
    pub fn overlaps(&self, start: u32, len: u64) -> bool {
        let end = u64::from(start).saturating_add(len);
        // The last range starting before `end` is the only candidate that
        // can reach into [start, end).
        let hi = u32::try_from(end).unwrap_or(u32::MAX);
        self.ranges
            .range(..hi)
            .next_back()
            .is_some_and(|(_, e)| *e > start)
    }
}

/// The shared ranges of AG `agno` (empty without the REFLINK feature).
pub fn shared_ranges<R: ReadAt>(fs: &Fs<R>, agno: AgNumber) -> Result<SharedRanges> {
    let mut out = SharedRanges::default();
    if fs.sb.features_ro_compat & (1 << 2) == 0 {
        return Ok(out);
    }
    let ctx = HeaderCtx::new(fs, agno)?;
    let agf = read_agf(fs, &ctx)?;
    let Some(root) = agf.tree_root(AgTree::Refcount, &ctx) else {
        return Ok(out);
    };
    let (recs, _) = records(fs, &root, MAX_RECORDS);
    for r in recs {
        if let Record::Refcount(c) = r {
            if !c.cow && c.refcount > 1 {
                let end = c.startblock.saturating_add(c.blockcount);
                let e = out.ranges.entry(c.startblock).or_insert(end);
                *e = (*e).max(end);
            }
        }
    }
    Ok(out)
}

impl<R: ReadAt> Fs<R> {
    /// Whether the filesystem can share blocks between files at all.
    pub fn has_reflink(&self) -> bool {
        self.geo.v5 && self.sb.features_ro_compat & (1 << 2) != 0
    }

    /// Fill [`Extent::shared`] of the inode's data extents: `Some(true)` when
    /// any block of the extent is shared. Only inodes with the REFLINK flag
    /// (`di_flags2` bit 1) can own shared blocks; the others are marked
    /// `Some(false)` without reading anything, and each AG's refcount btree
    /// is read at most once. Realtime files stay `None`.
    pub fn mark_shared(&self, inode: &mut Inode) -> Result<()> {
        if inode.core.is_realtime() {
            return Ok(());
        }
        let may_share =
            self.has_reflink() && inode.core.flags2_or_zero() & XFS_DIFLAG2_REFLINK != 0;
        let extents: &mut [Extent] = match &mut inode.data {
            Fork::Extents { extents } | Fork::Btree { extents, .. } => extents,
            _ => return Ok(()),
        };
        let mut per_ag: BTreeMap<u32, SharedRanges> = BTreeMap::new();
        for e in extents.iter_mut() {
            if !may_share || e.unwritten {
                e.shared = Some(false);
                continue;
            }
            let (agno, agbno) = self.geo.split_fsb(e.start);
            let ranges = match per_ag.entry(agno.0) {
                std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(shared_ranges(self, agno)?)
                }
            };
            e.shared = Some(ranges.overlaps(agbno.0, e.len));
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn overlap_checks_the_neighbouring_range() {
        let mut s = SharedRanges::default();
        s.ranges.insert(10, 20);
        s.ranges.insert(40, 41);
        assert!(s.overlaps(15, 1));
        assert!(s.overlaps(5, 6));
        assert!(!s.overlaps(5, 5));
        assert!(!s.overlaps(20, 20));
        assert!(s.overlaps(20, 21));
        assert!(!s.overlaps(41, 1000));
        assert!(!s.overlaps(0, 0));
    }
}
