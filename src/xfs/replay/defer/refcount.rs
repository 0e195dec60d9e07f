//! Reference-count adjustments as `xfs_refcount.c` makes them: the records
//! split at both ends of the range, merged with their neighbours, those in
//! between adjusted; a hole whose count a decrease takes to 0 is freed; CoW
//! staging extents reserved and released.

use super::Key;
use super::RecordStore;
use crate::xfs::format::btree::XfsRefcountRec;
use crate::xfs::format::btree::{MAXREFCOUNT, XFS_REFC_COWFLAG};
use crate::xfs::fs::be32;
use crate::xfs::replay::ag::damaged;

use crate::xfs::replay::ag::{key_refcount, AgTree, EditResult};
use core::mem::offset_of;

/// One reference count record (shared domain unless `cow`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefcountRecord {
    /// The start block, without the CoW-domain bit.
    pub start: u32,
    pub len: u32,
    pub refcount: u32,
    /// CoW staging domain (`XFS_REFC_DOMAIN_COW`).
    pub cow: bool,
}

impl RefcountRecord {
    pub(super) fn parse(r: &[u8]) -> Option<RefcountRecord> {
        let start = be32(r, offset_of!(XfsRefcountRec, rc_startblock))?;
        Some(RefcountRecord {
            start: start & !XFS_REFC_COWFLAG,
            len: be32(r, offset_of!(XfsRefcountRec, rc_blockcount))?,
            refcount: be32(r, offset_of!(XfsRefcountRec, rc_refcount))?,
            cow: start & XFS_REFC_COWFLAG != 0,
        })
    }
    fn key(&self) -> Key {
        rkey(self.start, self.cow)
    }
    pub fn bytes(&self) -> Vec<u8> {
        let mut r = Vec::with_capacity(12);
        let start = if self.cow {
            self.start | XFS_REFC_COWFLAG
        } else {
            self.start
        };
        r.extend_from_slice(&start.to_be_bytes());
        r.extend_from_slice(&self.len.to_be_bytes());
        r.extend_from_slice(&self.refcount.to_be_bytes());
        r
    }
    fn end(&self) -> u32 {
        self.start.saturating_add(self.len)
    }
}

pub(super) fn rkey(agbno: u32, cow: bool) -> Key {
    key_refcount(if cow { agbno | XFS_REFC_COWFLAG } else { agbno })
}

pub(super) fn refcount_le<S: RecordStore>(
    s: &mut S,
    agbno: u32,
    cow: bool,
) -> EditResult<Option<RefcountRecord>> {
    Ok(s.neighbors(AgTree::Refcount, rkey(agbno, cow))?
        .0
        .and_then(|r| RefcountRecord::parse(&r))
        .filter(|r| r.cow == cow))
}

pub(super) fn refcount_ge<S: RecordStore>(
    s: &mut S,
    agbno: u32,
    cow: bool,
) -> EditResult<Option<RefcountRecord>> {
    let (l, r) = s.neighbors(AgTree::Refcount, rkey(agbno, cow))?;
    if let Some(l) = l.and_then(|l| RefcountRecord::parse(&l)) {
        if l.start == agbno && l.cow == cow {
            return Ok(Some(l));
        }
    }
    Ok(r.and_then(|r| RefcountRecord::parse(&r))
        .filter(|r| r.cow == cow))
}

pub(super) fn refcount_after<S: RecordStore>(
    s: &mut S,
    r: &RefcountRecord,
) -> EditResult<Option<RefcountRecord>> {
    Ok(s.neighbors(AgTree::Refcount, r.key())?
        .1
        .and_then(|x| RefcountRecord::parse(&x))
        .filter(|x| x.cow == r.cow))
}

pub(super) fn refcount_before<S: RecordStore>(
    s: &mut S,
    r: &RefcountRecord,
) -> EditResult<Option<RefcountRecord>> {
    if r.start == 0 {
        return Ok(None);
    }
    refcount_le(s, r.start.saturating_sub(1), r.cow)
}

/// `xfs_refcount_split_extent`: no record may cross `agbno`.
pub(super) fn refcount_split<S: RecordStore>(s: &mut S, agbno: u32, cow: bool) -> EditResult<()> {
    let Some(r) = refcount_le(s, agbno, cow)? else {
        return Ok(());
    };
    if r.start == agbno || r.end() <= agbno {
        return Ok(());
    }
    let right = RefcountRecord {
        start: agbno,
        len: r.len.saturating_sub(agbno.saturating_sub(r.start)),
        refcount: r.refcount,
        cow,
    };
    s.update(AgTree::Refcount, r.key(), &right.bytes())?;
    let left = RefcountRecord {
        start: r.start,
        len: agbno.saturating_sub(r.start),
        refcount: r.refcount,
        cow,
    };
    s.insert(AgTree::Refcount, &left.bytes())
}

pub(super) fn merged_refcount(r: &RefcountRecord, adj: i32) -> u32 {
    if r.refcount == MAXREFCOUNT {
        MAXREFCOUNT
    } else {
        r.refcount.saturating_add_signed(adj)
    }
}

/// `xfs_refcount_merge_extents`.
pub(super) fn refcount_merge<S: RecordStore>(
    s: &mut S,
    agbno: &mut u32,
    aglen: &mut u32,
    adj: i32,
    cow: bool,
) -> EditResult<()> {
    // Left side: the record ending at agbno, and what follows it there.
    let mut left = None;
    let mut cleft = None;
    if *agbno > 0 {
        if let Some(t) = refcount_le(s, agbno.saturating_sub(1), cow)? {
            if t.end() == *agbno {
                left = Some(t);
                cleft = Some(match refcount_after(s, &t)? {
                    Some(n) if n.start == *agbno => n,
                    Some(n) => RefcountRecord {
                        start: *agbno,
                        len: (*aglen).min(n.start.saturating_sub(*agbno)),
                        refcount: 1,
                        cow,
                    },
                    None => RefcountRecord {
                        start: *agbno,
                        len: *aglen,
                        refcount: 1,
                        cow,
                    },
                });
            }
        }
    }
    let end = agbno.saturating_add(*aglen);
    let mut right = None;
    let mut cright = None;
    if let Some(t) = refcount_ge(s, end, cow)? {
        if t.start == end {
            right = Some(t);
            cright = Some(match refcount_before(s, &t)? {
                Some(p) if p.end() == end => p,
                Some(p) => {
                    let st = (*agbno).max(p.end());
                    RefcountRecord {
                        start: st,
                        len: t.start.saturating_sub(st),
                        refcount: 1,
                        cow,
                    }
                }
                None => RefcountRecord {
                    start: *agbno,
                    len: *aglen,
                    refcount: 1,
                    cow,
                },
            });
        }
    }
    if left.is_none() && right.is_none() {
        return Ok(());
    }
    let cequal =
        matches!((cleft, cright), (Some(a), Some(b)) if a.start == b.start && a.len == b.len);
    if let (Some(l), Some(c), Some(r), true) = (left, cleft, right, cequal) {
        let n = merged_refcount(&c, adj);
        let total = u64::from(l.len)
            .saturating_add(u64::from(c.len))
            .saturating_add(u64::from(r.len));
        if l.refcount == n && r.refcount == n && total < u64::from(u32::MAX >> 1) {
            // As the kernel: the record at or after the centre goes (the
            // centre if it is a record, else the right one), then the
            // right one too if the centre was a record.
            let first = refcount_ge(s, c.start, cow)?
                .map(|x| x.key())
                .unwrap_or(r.key());
            s.delete(AgTree::Refcount, first)?;
            if c.refcount > 1 {
                s.delete(AgTree::Refcount, r.key())?;
            }
            let nl = RefcountRecord {
                len: u32::try_from(total).unwrap_or(u32::MAX),
                ..l
            };
            s.update(AgTree::Refcount, l.key(), &nl.bytes())?;
            *aglen = 0;
            return Ok(());
        }
    }
    if let (Some(l), Some(c)) = (left, cleft) {
        if l.refcount == merged_refcount(&c, adj)
            && u64::from(l.len).saturating_add(u64::from(c.len)) < u64::from(u32::MAX >> 1)
        {
            if c.refcount > 1 {
                s.delete(AgTree::Refcount, c.key())?;
            }
            let nl = RefcountRecord {
                len: l.len.saturating_add(c.len),
                ..l
            };
            s.update(AgTree::Refcount, l.key(), &nl.bytes())?;
            *agbno = agbno.saturating_add(c.len);
            *aglen = aglen.saturating_sub(c.len);
            if cequal {
                return Ok(());
            }
        }
    }
    if let (Some(c), Some(r)) = (cright, right) {
        if r.refcount == merged_refcount(&c, adj)
            && u64::from(r.len).saturating_add(u64::from(c.len)) < u64::from(u32::MAX >> 1)
        {
            if c.refcount > 1 {
                s.delete(AgTree::Refcount, c.key())?;
            }
            let nr = RefcountRecord {
                start: r.start.saturating_sub(c.len),
                len: r.len.saturating_add(c.len),
                refcount: r.refcount,
                cow,
            };
            s.update(AgTree::Refcount, r.key(), &nr.bytes())?;
            *aglen = aglen.saturating_sub(c.len);
        }
    }
    Ok(())
}

/// `xfs_refcount_adjust_extents`: the extents a decrease frees are
/// returned.
pub(super) fn refcount_adjust_extents<S: RecordStore>(
    s: &mut S,
    agblocks: u32,
    agbno: &mut u32,
    aglen: &mut u32,
    adj: i32,
    frees: &mut Vec<(u32, u32)>,
) -> EditResult<()> {
    let mut guard = 0u64;
    while *aglen > 0 {
        guard = guard.saturating_add(1);
        if guard > u64::from(agblocks).saturating_add(2) {
            return damaged("refcount", None, "the adjustment does not end");
        }
        let mut ext = refcount_ge(s, *agbno, false)?.unwrap_or(RefcountRecord {
            start: agblocks,
            len: 0,
            refcount: 0,
            cow: false,
        });
        if ext.start != *agbno {
            let hole = RefcountRecord {
                start: *agbno,
                len: (*aglen).min(ext.start.saturating_sub(*agbno)),
                refcount: 1u32.saturating_add_signed(adj),
                cow: false,
            };
            if hole.len == 0 {
                return damaged("refcount", None, "records overlap");
            }
            if hole.refcount != 0 {
                s.insert(AgTree::Refcount, &hole.bytes())?;
            } else {
                frees.push((hole.start, hole.len));
            }
            *agbno = agbno.saturating_add(hole.len);
            *aglen = aglen.saturating_sub(hole.len);
            if *aglen == 0 {
                break;
            }
            match refcount_ge(s, *agbno, false)? {
                Some(e) => ext = e,
                None => return damaged("refcount", None, "record vanished"),
            }
        }
        if ext.start != *agbno || ext.len > *aglen || ext.len == 0 {
            return damaged(
                "refcount",
                None,
                format!(
                    "record {}+{} straddles the end of the range {}+{}",
                    ext.start, ext.len, agbno, aglen
                ),
            );
        }
        if ext.refcount != MAXREFCOUNT {
            let old = ext.start;
            ext.refcount = ext.refcount.saturating_add_signed(adj);
            if ext.refcount > 1 {
                s.update(AgTree::Refcount, rkey(old, false), &ext.bytes())?;
            } else if ext.refcount == 1 {
                s.delete(AgTree::Refcount, rkey(old, false))?;
            } else {
                frees.push((ext.start, ext.len));
            }
        }
        *agbno = agbno.saturating_add(ext.len);
        *aglen = aglen.saturating_sub(ext.len);
    }
    Ok(())
}

/// `xfs_refcount_adjust` by `adj` (+1 or -1) over `[agbno, agbno + len)`;
/// returns the extents whose count reached 0 (to be freed).
pub fn refcount_adjust<S: RecordStore>(
    s: &mut S,
    agblocks: u32,
    agbno: u32,
    len: u32,
    adj: i32,
) -> EditResult<Vec<(u32, u32)>> {
    let (mut b, mut l) = (agbno, len);
    refcount_split(s, b, false)?;
    refcount_split(s, b.saturating_add(l), false)?;
    refcount_merge(s, &mut b, &mut l, adj, false)?;
    let mut frees = Vec::new();
    refcount_adjust_extents(s, agblocks, &mut b, &mut l, adj, &mut frees)?;
    Ok(frees)
}

/// `xfs_refcount_adjust_cow`: a CoW staging extent reserved (`alloc`:
/// a record of refcount 1 in the CoW domain, merged with adjacent staging
/// extents) or released (the record must be exactly the extent).
pub fn refcount_cow<S: RecordStore>(
    s: &mut S,
    agblocks: u32,
    agbno: u32,
    len: u32,
    alloc: bool,
) -> EditResult<()> {
    let adj = if alloc { 0 } else { -1 };
    if alloc {
        // Blocks already reserved: the kernel's merge would corrupt the
        // tree; refuse instead.
        let end = agbno.saturating_add(len);
        let before = refcount_le(s, agbno, true)?;
        let after = refcount_ge(s, agbno, true)?;
        if before.is_some_and(|x| x.end() > agbno) || after.is_some_and(|x| x.start < end) {
            return damaged(
                "refcount",
                None,
                format!("CoW blocks {agbno}+{len} are already reserved"),
            );
        }
    }
    let (mut b, mut l) = (agbno, len);
    refcount_split(s, b, true)?;
    refcount_split(s, b.saturating_add(l), true)?;
    refcount_merge(s, &mut b, &mut l, adj, true)?;
    if l == 0 {
        return Ok(());
    }
    let ext = refcount_ge(s, b, true)?.unwrap_or(RefcountRecord {
        start: agblocks,
        len: 0,
        refcount: 0,
        cow: true,
    });
    if alloc {
        if ext.start < b.saturating_add(l) {
            return damaged(
                "refcount",
                None,
                format!("CoW blocks {b}+{l} are already reserved"),
            );
        }
        s.insert(
            AgTree::Refcount,
            &RefcountRecord {
                start: b,
                len: l,
                refcount: 1,
                cow: true,
            }
            .bytes(),
        )
    } else {
        if ext.start != b || ext.len != l || ext.refcount != 1 {
            return damaged(
                "refcount",
                None,
                format!("no CoW staging record {b}+{l} to release"),
            );
        }
        s.delete(AgTree::Refcount, ext.key())
    }
}
