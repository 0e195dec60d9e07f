//! Which file extents share their blocks with other files (reflink), read
//! from each AG's reference count btree: a block is shared when a
//! non-copy-on-write refcount record with a count above 1 covers it.

use crate::xfs::ag::btree::{records, AgTree, Record};
use crate::xfs::ag::{read_agf, HeaderCtx};
use crate::xfs::bmap::Extent;
use crate::xfs::error::Result;
use crate::xfs::fs::Fs;
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

/// Set `shared` on every extent: `Some(true)` when any of its blocks is
/// shared, `Some(false)` when none is, `None` when the AG's refcount btree
/// could not be read. Each AG's tree is read once.
pub fn mark_shared<R: ReadAt>(fs: &Fs<R>, extents: &mut [Extent]) {
    let mut per_ag: BTreeMap<u32, Option<SharedRanges>> = BTreeMap::new();
    for e in extents.iter_mut() {
        if e.unwritten {
            e.shared = Some(false);
            continue;
        }
        let (agno, agbno) = fs.geo.split_fsb(e.start);
        let ranges = per_ag
            .entry(agno.0)
            .or_insert_with(|| shared_ranges(fs, agno).ok());
        e.shared = ranges.as_ref().map(|r| r.overlaps(agbno.0, e.len));
    }
}

/// [`mark_shared`] on the extents of a data fork (attr forks never share).
pub fn mark_fork_shared<R: ReadAt>(fs: &Fs<R>, fork: &mut crate::xfs::bmap::Fork) {
    use crate::xfs::bmap::Fork;
    match fork {
        Fork::Extents { extents } | Fork::Btree { extents, .. } => mark_shared(fs, extents),
        _ => {}
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
