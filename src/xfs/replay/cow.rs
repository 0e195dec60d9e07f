//! CoW staging extents left in the refcount btree after a crash, freed at
//! mount as the kernel does (`xfs_refcount_recover_cow_leftovers`): for
//! each, in AG and block order, one transaction that
//!
//! 1. removes its reverse mapping (owner "CoW", an exact record),
//! 2. removes its refcount record (CoW domain, refcount 1),
//! 3. frees the blocks into the free-space btrees, merged with free
//!    neighbours (`xfs_free_ag_extent`), and adds them to the AGF's free
//!    block count (the longest free extent follows the by-size tree).
//!
//! The blocks these transactions change are written with the LSN of the
//! first checkpoint the kernel logs after recovery: the old head. Work the
//! btree editor cannot do exactly (a split, a join, the free list growing
//! or shrinking) is left undone and listed.

use super::agedit::{
    alloc_rec, key_bno, key_cnt, key_refc, key_rmap, AgStore, EditError, EditResult, Tree,
};
use super::Stamp;
use crate::xfs::error::Result;
use crate::xfs::fs::{be32, Fs};
use crate::xfs::image::Overlay;
use crate::xfs::read::ReadAt;
use crate::xfs::types::Lsn;
use serde::Serialize;

/// `XFS_RMAP_OWN_COW`.
pub const OWN_COW: u64 = 0xFFFF_FFFF_FFFF_FFF7;
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

/// `xfs_btree_compute_maxlevels`.
fn compute_maxlevels(minrecs: [u64; 2], records: u64) -> u32 {
    let mut blocks = records.div_ceil(minrecs[0].max(1));
    let mut level = 1u32;
    while blocks > 1 && level < 64 {
        blocks = blocks.div_ceil(minrecs[1].max(1));
        level = level.saturating_add(1);
    }
    level
}

/// `xfs_alloc_min_freelist`: blocks the AGFL must hold.
fn min_freelist<R: ReadAt>(fs: &Fs<R>, s: &AgStore<'_, R>, rmapbt: bool) -> u32 {
    let hdr: u64 = if fs.geo.v5 { 56 } else { 16 };
    let room = u64::from(fs.geo.blocksize).saturating_sub(hdr);
    let alloc_mnr = [room / 8 / 2, room / 12 / 2];
    let alloc_max = compute_maxlevels(alloc_mnr, u64::from(fs.geo.agblocks).saturating_add(1) / 2);
    let rmap_mnr = [room / 24 / 2, room / 44 / 2];
    let rmap_max = compute_maxlevels(rmap_mnr, u64::from(fs.geo.agblocks));
    let part = |level: u32, max: u32| {
        level
            .saturating_add(1)
            .min(max)
            .saturating_mul(2)
            .saturating_sub(2)
    };
    let mut need = part(s.agf_u32(28), alloc_max).saturating_add(part(s.agf_u32(32), alloc_max));
    if rmapbt {
        need = need.saturating_add(part(s.agf_u32(36), rmap_max));
    }
    need
}

fn refuse<T>(m: String) -> EditResult<T> {
    Err(EditError::Unsupported(super::agedit::Unsupported(m)))
}

/// `xfs_free_extent_fix_freelist` (`xfs_alloc_fix_freelist` while
/// freeing): a free list shorter than it needs is refilled from the
/// free-space btrees (`xfs_alloc_ag_vextent_size`: the first extent by size
/// that is long enough, or else the longest, allocated from its start); a
/// longer one is refused, as is a refill that would need the reverse
/// mapping btree.
fn check_freelist<R: ReadAt>(s: &mut AgStore<'_, R>, need: u32, rmapbt: bool) -> EditResult<()> {
    let flcount = s.agf_u32(48);
    if flcount > need {
        return refuse(format!(
            "the free list holds {flcount} blocks and needs {need}: the kernel would shrink it first"
        ));
    }
    let mut guard = 0u32;
    while s.agf_u32(48) < need {
        if rmapbt {
            return refuse(format!(
                "the free list holds {} blocks and needs {need}: refilling it also maps the blocks in the rmapbt",
                s.agf_u32(48)
            ));
        }
        guard = guard.saturating_add(1);
        if guard > 16 {
            return refuse("the free list does not fill".into());
        }
        let maxlen = need.saturating_sub(s.agf_u32(48));
        // The first extent by size with at least maxlen blocks (no extent
        // starts at AG block 0, so "after (maxlen, 0)" is ">=").
        let (_, ge) = s.neighbors(Tree::Cnt, key_cnt(0, maxlen))?;
        let found = match ge {
            Some(r) => Some(r),
            None => s.last_record(Tree::Cnt)?,
        };
        let Some(r) = found else {
            return refuse("no free space to refill the free list".into());
        };
        let (fbno, flen) = (be32(&r, 0).unwrap_or(0), be32(&r, 4).unwrap_or(0));
        let rlen = maxlen.min(flen);
        if rlen == 0 {
            return refuse("a free extent of length 0".into());
        }
        // xfs_alloc_fixup_trees: the allocation is at the front.
        s.delete(Tree::Cnt, key_cnt(fbno, flen))?;
        if flen > rlen {
            s.insert(
                Tree::Cnt,
                &alloc_rec(fbno.saturating_add(rlen), flen.saturating_sub(rlen)),
            )?;
            s.update(
                Tree::Bno,
                key_bno(fbno),
                &alloc_rec(fbno.saturating_add(rlen), flen.saturating_sub(rlen)),
            )?;
        } else {
            s.delete(Tree::Bno, key_bno(fbno))?;
        }
        let free = s.agf_u32(52).saturating_sub(rlen);
        s.set_agf_u32(52, free);
        let longest = s
            .last_record(Tree::Cnt)?
            .and_then(|r| be32(&r, 4))
            .unwrap_or(0);
        if longest != s.agf_u32(56) {
            s.set_agf_u32(56, longest);
        }
        for b in fbno..fbno.saturating_add(rlen) {
            s.put_freelist(b)?;
        }
    }
    Ok(())
}

/// `xfs_free_ag_extent` without the reverse mapping: put `[agbno, agbno +
/// len)` into the free-space btrees, merged with free neighbours, and
/// count it in the AGF.
pub fn free_ag_extent<R: ReadAt>(s: &mut AgStore<'_, R>, agbno: u32, len: u32) -> EditResult<()> {
    let (left, right) = s.neighbors(Tree::Bno, key_bno(agbno))?;
    let rec = |r: &Option<Vec<u8>>| {
        r.as_ref()
            .map(|r| (be32(r, 0).unwrap_or(0), be32(r, 4).unwrap_or(0)))
    };
    let mut lt = rec(&left);
    let mut gt = rec(&right);
    let end = agbno.saturating_add(len);
    if end > s.agf_u32(12) {
        return refuse(format!("blocks {agbno}+{len} run past the end of the AG"));
    }
    if let Some((b, l)) = lt {
        if b.saturating_add(l) > agbno {
            return refuse("the extent is already (partly) free".into());
        }
        if b.saturating_add(l) < agbno {
            lt = None;
        }
    }
    if let Some((b, _)) = gt {
        if end > b {
            return refuse("the extent is already (partly) free".into());
        }
        if end < b {
            gt = None;
        }
    }
    let (nbno, nlen) = match (lt, gt) {
        (Some((lb, ll)), Some((gb, gl))) => {
            s.delete(Tree::Cnt, key_cnt(lb, ll))?;
            s.delete(Tree::Cnt, key_cnt(gb, gl))?;
            s.delete(Tree::Bno, key_bno(gb))?;
            let n = (lb, ll.saturating_add(len).saturating_add(gl));
            s.update(Tree::Bno, key_bno(lb), &alloc_rec(n.0, n.1))?;
            n
        }
        (Some((lb, ll)), None) => {
            s.delete(Tree::Cnt, key_cnt(lb, ll))?;
            let n = (lb, ll.saturating_add(len));
            s.update(Tree::Bno, key_bno(lb), &alloc_rec(n.0, n.1))?;
            n
        }
        (None, Some((gb, gl))) => {
            s.delete(Tree::Cnt, key_cnt(gb, gl))?;
            let n = (agbno, len.saturating_add(gl));
            s.update(Tree::Bno, key_bno(gb), &alloc_rec(n.0, n.1))?;
            n
        }
        (None, None) => {
            s.insert(Tree::Bno, &alloc_rec(agbno, len))?;
            (agbno, len)
        }
    };
    s.insert(Tree::Cnt, &alloc_rec(nbno, nlen))?;
    let free = s.agf_u32(52).saturating_add(len);
    s.set_agf_u32(52, free);
    let longest = s
        .last_record(Tree::Cnt)?
        .and_then(|r| be32(&r, 4))
        .unwrap_or(0);
    if longest != s.agf_u32(56) {
        s.set_agf_u32(56, longest);
    }
    Ok(())
}

fn free_one<R: ReadAt>(
    s: &mut AgStore<'_, R>,
    agbno: u32,
    len: u32,
    rmapbt: bool,
    need: u32,
) -> EditResult<()> {
    check_freelist(s, need, rmapbt)?;
    // 1. The reverse mapping.
    if rmapbt {
        match s.find(Tree::Rmap, key_rmap(agbno, OWN_COW, 0))? {
            Some(r) if be32(&r, 4) == Some(len) => {
                s.delete(Tree::Rmap, key_rmap(agbno, OWN_COW, 0))?
            }
            Some(_) => return refuse("the CoW reverse mapping is not one exact record".into()),
            None => return refuse("no CoW reverse mapping for the extent".into()),
        }
    }
    // 2. The refcount record.
    match s.find(Tree::Refc, key_refc(agbno | COW_FLAG))? {
        Some(r) if be32(&r, 4) == Some(len) && be32(&r, 8) == Some(1) => {
            s.delete(Tree::Refc, key_refc(agbno | COW_FLAG))?
        }
        _ => return refuse("the CoW refcount record changed".into()),
    }
    // 3. Free the blocks.
    free_ag_extent(s, agbno, len)
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
    let rmapbt = fs.sb.features_ro_compat & (1 << 1) != 0;
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
                let need = min_freelist(fs, &s, rmapbt);
                let r = check_freelist(&mut s, need, rmapbt).and_then(|()| {
                    if rmapbt {
                        // Owner unknown: the reverse mapping must be gone.
                        let (l, _) = s.neighbors(Tree::Rmap, key_rmap(agbno, 0, 0))?;
                        if l.as_ref().is_some_and(|l| {
                            be32(l, 0)
                                .unwrap_or(0)
                                .saturating_add(be32(l, 4).unwrap_or(0))
                                > agbno
                        }) {
                            return refuse("a reverse mapping still covers the extent".into());
                        }
                    }
                    free_ag_extent(&mut s, agbno, len)
                });
                match r {
                    Ok(()) => s.changed()?,
                    Err(EditError::Read(err)) => return Err(err),
                    Err(EditError::Unsupported(m)) => {
                        e.not_freed = Some(m.0);
                        Vec::new()
                    }
                }
            };
            stamp_into(ov, changes, lsn);
            out.push(e);
        }
    }
    Ok(out)
}

pub(crate) fn stamp_into(ov: &mut Overlay, changes: Vec<(u64, Vec<u8>)>, lsn: Lsn) {
    for (daddr, mut data) in changes {
        let stamp = if be32(&data, 0) == Some(0x5841_4746) {
            Stamp::Whole {
                lsn_off: Some(208),
                crc_off: 216,
            }
        } else if be32(&data, 0) == Some(0x5841_464c) {
            Stamp::Whole {
                lsn_off: Some(24),
                crc_off: 32,
            }
        } else {
            Stamp::Whole {
                lsn_off: Some(24),
                crc_off: 52,
            }
        };
        super::buf::apply_stamp(&mut data, stamp, lsn.raw());
        ov.put(daddr, &data);
    }
}

/// Free every CoW staging extent; the changed blocks go into `ov`,
/// stamped with `lsn`.
pub fn recover<R: ReadAt>(fs: &Fs<R>, ov: &mut Overlay, lsn: Lsn) -> Result<CowReport> {
    let mut report = CowReport::default();
    let reflink = fs.sb.features_ro_compat & (1 << 2) != 0;
    if !reflink || !fs.geo.v5 {
        return Ok(report);
    }
    let rmapbt = fs.sb.features_ro_compat & (1 << 1) != 0;
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
                let need = min_freelist(fs, &s, rmapbt);
                let before = s.snapshot();
                match free_one(&mut s, agbno, len, rmapbt, need) {
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
        stamp_into(ov, changes, lsn);
    }
    Ok(report)
}
