//! CoW staging extents left in the refcount btree after a crash, freed at
//! mount as the kernel does (`xfs_refcount_recover_cow_leftovers`): for
//! each, in AG and block order, one transaction whose deferred work
//!
//! 1. removes its refcount record (CoW domain, refcount 1),
//! 2. removes its reverse mapping (owner "CoW", an exact record),
//! 3. fixes the free list and frees the blocks into the free-space
//!    btrees, merged with free neighbours (`xfs_free_ag_extent`), and adds
//!    them to the AGF's free block count.
//!
//! The btrees change shape as the kernel's do (`ag/`, `alloc.rs`).
//! The blocks these transactions change are written with the LSN of the
//! first checkpoint the kernel logs after recovery: the old head. An
//! extent whose records are not what the kernel expects is left undone
//! and listed, with the rest of its AG.

use super::ag::damaged;
use super::ag::{key_refcount, key_rmap, stamp_into, AgStore, AgTree, EditError, EditResult};
use super::alloc::RmapOwner;
use crate::xfs::error::Result;
use crate::xfs::format::btree::{XfsRefcountRec, XfsRmapRec, XFS_REFC_COWFLAG, XFS_RMAP_OWN_COW};
use crate::xfs::format::sb::XFS_SB_FEAT_RO_COMPAT_REFLINK;
use crate::xfs::fs::Fs;
use crate::xfs::image::Overlay;
use crate::xfs::read::ReadAt;
use crate::xfs::types::Lsn;
use serde::Serialize;
use zerocopy::FromBytes;

/// One CoW staging extent.
#[derive(Clone, Debug, Serialize)]
pub struct CowExtent {
    pub agno: u32,
    pub agbno: u32,
    pub len: u32,
}

/// One left undone, and why.
#[derive(Clone, Debug, Serialize)]
pub struct CowNotFreed {
    #[serde(flatten)]
    pub extent: CowExtent,
    pub reason: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct CowReport {
    pub freed: Vec<CowExtent>,
    pub not_freed: Vec<CowNotFreed>,
}

/// A refcount btree record's fields.
fn refcount_rec(r: &[u8]) -> Option<&XfsRefcountRec> {
    XfsRefcountRec::ref_from_prefix(r).ok().map(|(c, _)| c)
}

/// A reverse-mapping btree record's fields.
fn rmap_rec(r: &[u8]) -> Option<&XfsRmapRec> {
    XfsRmapRec::ref_from_prefix(r).ok().map(|(m, _)| m)
}

/// One CoW staging extent freed as `xfs_refcount_recover_cow_leftovers`
/// queues it: the reverse mapping (RUI), the refcount record (CUI), then
/// the blocks (EFI: no owner to unmap).
fn free_one<R: ReadAt>(s: &mut AgStore<'_, R>, agbno: u32, len: u32) -> EditResult<()> {
    match s.find(AgTree::Refcount, key_refcount(agbno | XFS_REFC_COWFLAG))? {
        Some(r)
            if refcount_rec(&r)
                .is_some_and(|c| c.rc_blockcount.get() == len && c.rc_refcount.get() == 1) => {}
        _ => return damaged("refcountbt", None, "the CoW staging record changed"),
    }
    // The kernel defers three items, finished in this order, each
    // followed by the free-list blocks its fix-up took off:
    // 1. the reverse mapping (xfs_rmap_finish_one fixes the free list
    //    before it changes the rmapbt);
    if s.feat.rmapbt {
        match s.find(AgTree::Rmap, key_rmap(agbno, XFS_RMAP_OWN_COW, 0))? {
            Some(r) if rmap_rec(&r).is_some_and(|m| m.rm_blockcount.get() == len) => {}
            Some(_) => {
                return damaged(
                    "rmapbt",
                    None,
                    "the CoW reverse mapping is not one exact record",
                )
            }
            None => return damaged("rmapbt", None, "no CoW reverse mapping for the extent"),
        }
        s.fix_freelist(true)?;
        s.rmap_unmap(agbno, len, false, RmapOwner::special(XFS_RMAP_OWN_COW))?;
        s.finish_deferred()?;
    }
    // 2. the refcount record;
    s.delete(AgTree::Refcount, key_refcount(agbno | XFS_REFC_COWFLAG))?;
    s.finish_deferred()?;
    // 3. the blocks (__xfs_free_extent: free list fixed, blocks freed and
    //    busy, so that later free-list refills pass over them).
    s.free_extent(agbno, len, None)?;
    s.finish_deferred()
}

/// Free every CoW staging extent; the changed blocks go into `ov`,
/// stamped with `lsn`.
/// `busy`: extents the steps before left busy (the same checkpoint: no log
/// force comes between freeing unlinked inodes and this), which the
/// free-list refills pass over.
pub fn recover<R: ReadAt>(
    fs: &Fs<R>,
    ov: &mut Overlay,
    lsn: Lsn,
    busy: &super::defer::Busy,
) -> Result<CowReport> {
    let mut report = CowReport::default();
    let reflink = fs.sb.features_ro_compat & XFS_SB_FEAT_RO_COMPAT_REFLINK != 0;
    if !reflink || !fs.geo.v5 {
        return Ok(report);
    }
    for agno in 0..fs.geo.agcount {
        let (changes, stale) = {
            let mut s = AgStore::new(fs, ov, agno)?;
            for (b, n) in busy.get(&agno).into_iter().flatten() {
                s.busy_insert(*b, *n);
            }
            let leftovers: Vec<(u32, u32)> = match s.records(AgTree::Refcount) {
                Ok(recs) => recs
                    .iter()
                    .filter_map(|r| {
                        let c = refcount_rec(r)?;
                        let start = c.rc_startblock.get();
                        (start & XFS_REFC_COWFLAG != 0)
                            .then(|| (start & !XFS_REFC_COWFLAG, c.rc_blockcount.get()))
                    })
                    .collect(),
                Err(EditError::Read(e)) => return Err(e),
                Err(u) => {
                    report.not_freed.push(CowNotFreed {
                        extent: CowExtent {
                            agno,
                            agbno: 0,
                            len: 0,
                        },
                        reason: u.to_string(),
                    });
                    continue;
                }
            };
            if leftovers.is_empty() {
                continue;
            }
            let mut stop: Option<String> = None;
            for (agbno, len) in leftovers {
                let extent = CowExtent { agno, agbno, len };
                if let Some(why) = &stop {
                    report.not_freed.push(CowNotFreed {
                        extent,
                        reason: format!("an earlier extent of this AG was not freed: {why}"),
                    });
                    continue;
                }
                let before = s.snapshot();
                match free_one(&mut s, agbno, len) {
                    Ok(()) => report.freed.push(extent),
                    Err(EditError::Read(e)) => return Err(e),
                    Err(u) => {
                        s.restore(before);
                        let why = u.to_string();
                        stop = Some(why.clone());
                        report.not_freed.push(CowNotFreed {
                            extent,
                            reason: why,
                        });
                    }
                }
            }
            (s.changed()?, s.stale()?)
        };
        stamp_into(ov, changes, lsn, fs.geo.v5);
        for (daddr, n) in stale {
            ov.revert(daddr, n);
        }
    }
    Ok(report)
}
