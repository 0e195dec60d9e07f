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
//! The btrees change shape as the kernel's do (`agedit.rs`, `alloc.rs`).
//! The blocks these transactions change are written with the LSN of the
//! first checkpoint the kernel logs after recovery: the old head. An
//! extent whose records are not what the kernel expects is left undone
//! and listed, with the rest of its AG.

use super::agedit::{
    key_refc, key_rmap, stamp_into, AgStore, EditError, EditResult, Tree, OWN_UNKNOWN,
};
use super::alloc::RmapOwner;
use crate::xfs::error::Result;
use crate::xfs::fs::{be32, Fs};
use crate::xfs::image::Overlay;
use crate::xfs::read::ReadAt;
use crate::xfs::types::Lsn;
use serde::Serialize;

pub use super::agedit::OWN_COW;
const COW_FLAG: u32 = 1 << 31;

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

fn refuse<T>(m: String) -> EditResult<T> {
    Err(EditError::Unsupported(super::agedit::Unsupported(m)))
}

/// `xfs_free_ag_extent` without the reverse mapping: put `[agbno, agbno +
/// len)` into the free-space btrees, merged with free neighbours, and
/// count it in the AGF (see [`AgStore::free_ag_extent`]).
pub fn free_ag_extent<R: ReadAt>(s: &mut AgStore<'_, R>, agbno: u32, len: u32) -> EditResult<()> {
    s.free_ag_extent(agbno, len, None)
}

/// One CoW staging extent freed as `xfs_refcount_recover_cow_leftovers`
/// queues it: the refcount record (CUI), then the reverse mapping (RUI),
/// then the blocks (EFI: the free list fixed first, no owner to unmap).
fn free_one<R: ReadAt>(s: &mut AgStore<'_, R>, agbno: u32, len: u32) -> EditResult<()> {
    // 1. The refcount record.
    match s.find(Tree::Refc, key_refc(agbno | COW_FLAG))? {
        Some(r) if be32(&r, 4) == Some(len) && be32(&r, 8) == Some(1) => {
            s.delete(Tree::Refc, key_refc(agbno | COW_FLAG))?
        }
        _ => return refuse("the CoW refcount record changed".into()),
    }
    // 2. The reverse mapping.
    if s.feat.rmapbt {
        match s.find(Tree::Rmap, key_rmap(agbno, OWN_COW, 0))? {
            Some(r) if be32(&r, 4) == Some(len) => {
                s.rmap_unmap(agbno, len, false, RmapOwner::special(OWN_COW))?
            }
            Some(_) => return refuse("the CoW reverse mapping is not one exact record".into()),
            None => return refuse("no CoW reverse mapping for the extent".into()),
        }
    }
    // 3. Free the blocks.
    s.fix_freelist(true)?;
    s.free_ag_extent(agbno, len, None)?;
    s.finish_deferred()
}

/// One extent an unfinished EFI asks to free (done or not, and why).
#[derive(Clone, Debug, Serialize)]
pub struct EfiExtent {
    pub id: u64,
    pub agno: u32,
    pub agbno: u32,
    pub len: u32,
    /// `None` when freed.
    pub not_freed: Option<String>,
}

/// Finish unfinished extent-free intents as the kernel does at mount
/// (before anything else): each extent is freed into the free-space
/// btrees (the reverse mapping, owner unknown, must already be gone). Done
/// only when every unfinished intent is an EFI; the blocks are stamped
/// with `lsn`, the first checkpoint after recovery.
pub fn recover_efis<R: ReadAt>(
    fs: &Fs<R>,
    ov: &mut Overlay,
    intents: &[super::intents::Unfinished],
    lsn: Lsn,
) -> Result<Vec<EfiExtent>> {
    let mut out = Vec::new();
    let all_efi = intents
        .iter()
        .all(|u| u.kind.0 == crate::xfs::format::log::XFS_LI_EFI);
    let g = fs.geo;
    let mask = 1u64
        .checked_shl(u32::from(g.agblklog))
        .unwrap_or(0)
        .saturating_sub(1);
    for u in intents {
        if u.kind.0 != crate::xfs::format::log::XFS_LI_EFI {
            continue;
        }
        // The kernel sorts an intent's extents by AG, stably.
        let mut ext: Vec<(u32, u32, u32)> = u
            .extents
            .iter()
            .map(|(fsb, len)| {
                (
                    u32::try_from(fsb >> g.agblklog).unwrap_or(u32::MAX),
                    u32::try_from(fsb & mask).unwrap_or(u32::MAX),
                    *len,
                )
            })
            .collect();
        ext.sort_by_key(|e| e.0);
        for (agno, agbno, len) in ext {
            let mut e = EfiExtent {
                id: u.id,
                agno,
                agbno,
                len,
                not_freed: None,
            };
            if !all_efi {
                e.not_freed =
                    Some("other unfinished intents come with it; none is finished".into());
                out.push(e);
                continue;
            }
            if agno >= g.agcount || agbno >= g.agblocks {
                e.not_freed = Some("outside the filesystem".into());
                out.push(e);
                continue;
            }
            let changes = {
                let mut s = AgStore::new(fs, ov, agno)?;
                // xfs_efi_recover_work: owner unknown; __xfs_free_extent
                // fixes the free list, then frees (unmapping whatever
                // reverse mapping is left).
                let r = s
                    .fix_freelist(true)
                    .and_then(|()| {
                        s.free_ag_extent(agbno, len, Some(RmapOwner::special(OWN_UNKNOWN)))
                    })
                    .and_then(|()| s.finish_deferred());
                match r {
                    Ok(()) => s.changed()?,
                    Err(EditError::Read(err)) => return Err(err),
                    Err(EditError::Unsupported(m)) => {
                        e.not_freed = Some(m.0);
                        Vec::new()
                    }
                }
            };
            stamp_into(ov, changes, lsn, fs.geo.v5);
            out.push(e);
        }
    }
    Ok(out)
}

/// Free every CoW staging extent; the changed blocks go into `ov`,
/// stamped with `lsn`.
pub fn recover<R: ReadAt>(fs: &Fs<R>, ov: &mut Overlay, lsn: Lsn) -> Result<CowReport> {
    let mut report = CowReport::default();
    let reflink = fs.sb.features_ro_compat & (1 << 2) != 0;
    if !reflink || !fs.geo.v5 {
        return Ok(report);
    }
    for agno in 0..fs.geo.agcount {
        let changes = {
            let mut s = AgStore::new(fs, ov, agno)?;
            let leftovers: Vec<(u32, u32)> = match s.records(Tree::Refc) {
                Ok(recs) => recs
                    .iter()
                    .filter_map(|r| {
                        let start = be32(r, 0)?;
                        (start & COW_FLAG != 0)
                            .then(|| (start & !COW_FLAG, be32(r, 4).unwrap_or(0)))
                    })
                    .collect(),
                Err(EditError::Read(e)) => return Err(e),
                Err(EditError::Unsupported(u)) => {
                    report.not_freed.push(CowNotFreed {
                        extent: CowExtent {
                            agno,
                            agbno: 0,
                            len: 0,
                        },
                        reason: u.0,
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
                    Err(EditError::Unsupported(u)) => {
                        s.restore(before);
                        stop = Some(u.0.clone());
                        report.not_freed.push(CowNotFreed {
                            extent,
                            reason: u.0,
                        });
                    }
                }
            }
            s.changed()?
        };
        stamp_into(ov, changes, lsn, fs.geo.v5);
    }
    Ok(report)
}
