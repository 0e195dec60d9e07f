//! Reverse-mapping updates as `xfs_rmap.c` makes them: map, unmap,
//! map_shared, unmap_shared, convert and convert_shared, each with the
//! kernel's record cases (merge left and right, trim the front or back,
//! split the middle).

use super::Key;
use super::RecordStore;
use crate::xfs::replay::ag::damaged;

pub use crate::xfs::replay::ag::Rmap;
use crate::xfs::replay::ag::{key_rmap, non_inode, AgTree, EditResult};

pub(super) fn rmap_le<S: RecordStore>(s: &mut S, key: Key) -> EditResult<Option<Rmap>> {
    Ok(s.neighbors(AgTree::Rmap, key)?.0.map(|r| Rmap::parse(&r)))
}

/// `xfs_rmap_lookup_le_range`: the mapping of the owner of `m` that holds
/// block `m.start` at file offset `m.offset`.
pub(super) fn rmap_find_shared<S: RecordStore>(s: &mut S, m: &Rmap) -> EditResult<Option<Rmap>> {
    let fits = |r: &Rmap| {
        r.owner == m.owner
            && (non_inode(r.owner)
                || r.bmbt
                || (r.offset <= m.offset && r.offset.saturating_add(u64::from(r.len)) > m.offset))
    };
    if let Some(l) = rmap_le(s, m.key())? {
        if fits(&l) {
            return Ok(Some(l));
        }
    }
    Ok(s.rmap_overlapping(m.start, m.start)?
        .iter()
        .map(|r| Rmap::parse(r))
        .find(|r| fits(r)))
}

/// `xfs_rmap_unmap_shared`: remove `m` from the mapping that holds it,
/// where several owners may map the same blocks.
pub fn rmap_unmap_shared<S: RecordStore>(s: &mut S, m: &Rmap) -> EditResult<()> {
    let Some(lt) = rmap_find_shared(s, m)? else {
        return damaged(
            "rmap",
            None,
            format!(
                "no mapping of owner {} offset {} at block {}",
                m.owner, m.offset, m.start
            ),
        );
    };
    if lt.start > m.start || lt.end() < m.end() || lt.unwritten != m.unwritten {
        return damaged(
            "rmap",
            None,
            format!(
                "the mapping {}+{} does not cover {}+{}",
                lt.start, lt.len, m.start, m.len
            ),
        );
    }
    if lt.start == m.start && lt.len == m.len {
        s.delete(AgTree::Rmap, lt.key())
    } else if lt.start == m.start {
        s.delete(AgTree::Rmap, lt.key())?;
        let mut n = lt;
        n.start = n.start.saturating_add(m.len);
        n.len = n.len.saturating_sub(m.len);
        n.offset = n.offset.saturating_add(u64::from(m.len));
        s.insert(AgTree::Rmap, &n.bytes())
    } else if lt.end() == m.end() {
        let mut n = lt;
        n.len = n.len.saturating_sub(m.len);
        s.update(AgTree::Rmap, lt.key(), &n.bytes())
    } else {
        let mut n = lt;
        n.len = m.start.saturating_sub(lt.start);
        s.update(AgTree::Rmap, lt.key(), &n.bytes())?;
        let mut r = lt;
        r.start = m.end();
        r.len = lt.len.saturating_sub(m.len).saturating_sub(n.len);
        r.offset = m.offset.saturating_add(u64::from(m.len));
        s.insert(AgTree::Rmap, &r.bytes())
    }
}

/// `xfs_rmap_map_shared`: add `m`, merged with the owner's mapping just
/// before it (found by the overlapped query) and the one just after.
pub fn rmap_map_shared<S: RecordStore>(s: &mut S, m: &Rmap) -> EditResult<()> {
    let ignore_off = m.ignore_off();
    let mut lt = None;
    if m.start > 0 && (ignore_off || m.offset > 0) {
        let want_off = m.offset.saturating_sub(1);
        lt = s
            .rmap_overlapping(m.start.saturating_sub(1), m.start.saturating_sub(1))?
            .iter()
            .map(|r| Rmap::parse(r))
            .find(|r| {
                r.owner == m.owner
                    && (ignore_off
                        || r.offset.saturating_add(u64::from(r.len)).saturating_sub(1) == want_off)
            })
            .filter(|l| l.mergeable(m));
    }
    let gkey = key_rmap(m.end(), m.owner, m.offset.saturating_add(u64::from(m.len)));
    let gt = s
        .find(AgTree::Rmap, gkey)?
        .map(|r| Rmap::parse(&r))
        .filter(|g| g.mergeable(m));
    let left_ok = lt.is_some_and(|l| {
        l.end() == m.start && (ignore_off || l.offset.saturating_add(u64::from(l.len)) == m.offset)
    });
    let right_ok = gt.is_some_and(|g| {
        m.end() == g.start && (ignore_off || m.offset.saturating_add(u64::from(m.len)) == g.offset)
    });
    match (lt, gt) {
        (Some(l), g) if left_ok => {
            let mut n = l;
            n.len = n.len.saturating_add(m.len);
            if let (true, Some(g)) = (right_ok, g) {
                s.delete(AgTree::Rmap, g.key())?;
                n.len = n.len.saturating_add(g.len);
            }
            s.update(AgTree::Rmap, l.key(), &n.bytes())
        }
        (_, Some(g)) if right_ok => {
            s.delete(AgTree::Rmap, g.key())?;
            let mut n = g;
            n.start = m.start;
            n.len = n.len.saturating_add(m.len);
            n.offset = m.offset;
            s.insert(AgTree::Rmap, &n.bytes())
        }
        _ => s.insert(AgTree::Rmap, &m.bytes()),
    }
}

/// The greatest key below `k` (keys are compared as tuples).
pub(super) fn key_before(k: Key) -> Key {
    if k.2 > 0 {
        (k.0, k.1, k.2.saturating_sub(1))
    } else if k.1 > 0 {
        (k.0, k.1.saturating_sub(1), u64::MAX)
    } else {
        (k.0.saturating_sub(1), u64::MAX, u64::MAX)
    }
}

/// `xfs_rmap_convert`: the written state of `m` (of an inode's data or
/// attr fork, not shared) flips to `m.unwritten`, the mapping split or
/// merged with its neighbours as the kernel does.
pub fn rmap_convert<S: RecordStore>(s: &mut S, m: &Rmap) -> EditResult<()> {
    if m.ignore_off() {
        return damaged("rmap", None, "convert of a non-inode owner or a bmbt block");
    }
    let new = m.unwritten;
    let mut old_m = *m;
    old_m.unwritten = !new;
    let (prev, _) = s.neighbors(AgTree::Rmap, old_m.key())?;
    let Some(prev) = prev.map(|r| Rmap::parse(&r)) else {
        return damaged(
            "rmap",
            None,
            format!("no mapping to convert at block {}", m.start),
        );
    };
    let new_endoff = m.offset.saturating_add(u64::from(m.len));
    if prev.owner != m.owner
        || prev.unwritten == new
        || prev.start > m.start
        || prev.end() < m.end()
        || prev.offset > m.offset
        || prev.offset.saturating_add(u64::from(prev.len)) < new_endoff
    {
        return damaged(
            "rmap",
            None,
            format!(
                "the mapping {}+{} owner {:#x} does not hold {}+{} to convert",
                prev.start, prev.len, prev.owner, m.start, m.len
            ),
        );
    }
    let lf = prev.offset == m.offset;
    let rf = prev.offset.saturating_add(u64::from(prev.len)) == new_endoff;
    let left = s
        .neighbors(AgTree::Rmap, key_before(prev.key()))?
        .0
        .map(|r| Rmap::parse(&r));
    let right = s
        .neighbors(AgTree::Rmap, prev.key())?
        .1
        .map(|r| Rmap::parse(&r));
    let mut newm = *m;
    newm.unwritten = new;
    let lc = left.filter(|l| {
        l.end() == m.start
            && l.offset.saturating_add(u64::from(l.len)) == m.offset
            && l.mergeable(&newm)
    });
    let mut rc =
        right.filter(|r| m.end() == r.start && new_endoff == r.offset && r.mergeable(&newm));
    if let (true, true, Some(l), Some(r)) = (lf, rf, lc, rc) {
        if u64::from(l.len)
            .saturating_add(u64::from(m.len))
            .saturating_add(u64::from(r.len))
            > u64::from(u32::MAX)
        {
            rc = None;
        }
    }
    match (lf, lc, rf, rc) {
        (true, Some(l), true, Some(r)) => {
            s.delete(AgTree::Rmap, r.key())?;
            s.delete(AgTree::Rmap, prev.key())?;
            let mut n = l;
            n.len = n.len.saturating_add(prev.len).saturating_add(r.len);
            s.update(AgTree::Rmap, l.key(), &n.bytes())
        }
        (true, Some(l), true, None) => {
            s.delete(AgTree::Rmap, prev.key())?;
            let mut n = l;
            n.len = n.len.saturating_add(prev.len);
            s.update(AgTree::Rmap, l.key(), &n.bytes())
        }
        (true, None, true, Some(r)) => {
            s.delete(AgTree::Rmap, r.key())?;
            let mut n = prev;
            n.len = m.len.saturating_add(r.len);
            n.unwritten = new;
            s.update(AgTree::Rmap, prev.key(), &n.bytes())
        }
        (true, None, true, None) => {
            let mut n = prev;
            n.unwritten = new;
            s.update(AgTree::Rmap, prev.key(), &n.bytes())
        }
        (true, Some(l), false, _) => {
            let mut n = prev;
            n.offset = n.offset.saturating_add(u64::from(m.len));
            n.start = n.start.saturating_add(m.len);
            n.len = n.len.saturating_sub(m.len);
            s.update(AgTree::Rmap, prev.key(), &n.bytes())?;
            let mut nl = l;
            nl.len = nl.len.saturating_add(m.len);
            s.update(AgTree::Rmap, l.key(), &nl.bytes())
        }
        (true, None, false, _) => {
            let mut n = prev;
            n.start = n.start.saturating_add(m.len);
            n.offset = n.offset.saturating_add(u64::from(m.len));
            n.len = n.len.saturating_sub(m.len);
            s.update(AgTree::Rmap, prev.key(), &n.bytes())?;
            s.insert(AgTree::Rmap, &newm.bytes())
        }
        (false, _, true, Some(r)) => {
            let mut n = prev;
            n.len = n.len.saturating_sub(m.len);
            s.update(AgTree::Rmap, prev.key(), &n.bytes())?;
            let mut nr = r;
            nr.offset = m.offset;
            nr.start = m.start;
            nr.len = nr.len.saturating_add(m.len);
            s.update(AgTree::Rmap, r.key(), &nr.bytes())
        }
        (false, _, true, None) => {
            let mut n = prev;
            n.len = n.len.saturating_sub(m.len);
            s.update(AgTree::Rmap, prev.key(), &n.bytes())?;
            s.insert(AgTree::Rmap, &newm.bytes())
        }
        (false, _, false, _) => {
            // The middle: the right part takes the record's place, then
            // the left part and the converted piece are inserted.
            let mut r = prev;
            r.start = m.end();
            r.offset = new_endoff;
            r.len = u32::try_from(
                prev.offset
                    .saturating_add(u64::from(prev.len))
                    .saturating_sub(new_endoff),
            )
            .unwrap_or(0);
            s.update(AgTree::Rmap, prev.key(), &r.bytes())?;
            let mut l = prev;
            l.len = u32::try_from(m.offset.saturating_sub(prev.offset)).unwrap_or(0);
            s.insert(AgTree::Rmap, &l.bytes())?;
            s.insert(AgTree::Rmap, &newm.bytes())
        }
    }
}

/// `xfs_rmap_convert_shared`: as [`rmap_convert`], for an inode whose
/// blocks other owners may map too: the mapping found by owner and offset,
/// the left neighbour by the overlapped query, the right one by its exact
/// key, and every change of a key done as a delete and an insert.
pub fn rmap_convert_shared<S: RecordStore>(s: &mut S, m: &Rmap) -> EditResult<()> {
    if m.ignore_off() || m.attr {
        return damaged(
            "rmap",
            None,
            "shared convert of a non-inode owner, bmbt block or attr fork",
        );
    }
    let new = m.unwritten;
    let mut old_m = *m;
    old_m.unwritten = !new;
    let Some(prev) = rmap_find_shared(s, &old_m)? else {
        return damaged(
            "rmap",
            None,
            format!(
                "no mapping of owner {} offset {} at block {} to convert",
                m.owner, m.offset, m.start
            ),
        );
    };
    let new_endoff = m.offset.saturating_add(u64::from(m.len));
    let prev_endoff = prev.offset.saturating_add(u64::from(prev.len));
    if prev.unwritten == new || prev.offset > m.offset || prev_endoff < new_endoff {
        return damaged(
            "rmap",
            None,
            format!(
                "the mapping {}+{} owner {:#x} does not hold {}+{} to convert",
                prev.start, prev.len, prev.owner, m.start, m.len
            ),
        );
    }
    let lf = prev.offset == m.offset;
    let rf = prev_endoff == new_endoff;
    let mut newm = *m;
    newm.unwritten = new;
    // xfs_rmap_find_left_neighbor: the owner's mapping over the block
    // before, ending at the file offset before.
    let mut left = None;
    if m.start > 0 && m.offset > 0 {
        let before = m.start.saturating_sub(1);
        left = s
            .rmap_overlapping(before, before)?
            .iter()
            .map(|r| Rmap::parse(r))
            .find(|r| {
                r.owner == m.owner
                    && r.offset.saturating_add(u64::from(r.len)) == m.offset
                    && r.unwritten == new
            });
    }
    if left.is_some_and(|l| l.end() > m.start) {
        return damaged(
            "rmap",
            None,
            format!("a mapping of owner {} overlaps block {}", m.owner, m.start),
        );
    }
    let lc = left.filter(|l| l.mergeable(&newm));
    let rkey = key_rmap(m.end(), m.owner, newm.key_offset(new_endoff));
    let right = s
        .find(AgTree::Rmap, rkey)?
        .map(|r| Rmap::parse(&r))
        .filter(|r| r.unwritten == new);
    let mut rc = right.filter(|r| r.mergeable(&newm));
    if let (true, true, Some(l), Some(r)) = (lf, rf, lc, rc) {
        if u64::from(l.len)
            .saturating_add(u64::from(m.len))
            .saturating_add(u64::from(r.len))
            > u64::from(u32::MAX)
        {
            rc = None;
        }
    }
    let grow = |r: Rmap, by: u32| Rmap {
        len: r.len.saturating_add(by),
        ..r
    };
    match (lf, lc, rf, rc) {
        (true, Some(l), true, Some(r)) => {
            s.delete(AgTree::Rmap, r.key())?;
            s.delete(AgTree::Rmap, prev.key())?;
            let n = grow(l, prev.len.saturating_add(r.len));
            s.update(AgTree::Rmap, l.key(), &n.bytes())
        }
        (true, Some(l), true, None) => {
            s.delete(AgTree::Rmap, prev.key())?;
            s.update(AgTree::Rmap, l.key(), &grow(l, prev.len).bytes())
        }
        (true, None, true, Some(r)) => {
            s.delete(AgTree::Rmap, r.key())?;
            let n = Rmap {
                unwritten: r.unwritten,
                ..grow(prev, r.len)
            };
            s.update(AgTree::Rmap, prev.key(), &n.bytes())
        }
        (true, None, true, None) => s.update(AgTree::Rmap, prev.key(), &newm_of(prev, new).bytes()),
        (true, lc, false, _) => {
            s.delete(AgTree::Rmap, prev.key())?;
            let n = Rmap {
                start: prev.start.saturating_add(m.len),
                offset: prev.offset.saturating_add(u64::from(m.len)),
                len: prev.len.saturating_sub(m.len),
                ..prev
            };
            s.insert(AgTree::Rmap, &n.bytes())?;
            match lc {
                Some(l) => s.update(AgTree::Rmap, l.key(), &grow(l, m.len).bytes()),
                None => s.insert(AgTree::Rmap, &newm.bytes()),
            }
        }
        (false, _, true, rc) => {
            let n = Rmap {
                len: u32::try_from(m.offset.saturating_sub(prev.offset)).unwrap_or(0),
                ..prev
            };
            s.update(AgTree::Rmap, prev.key(), &n.bytes())?;
            match rc {
                Some(r) => {
                    s.delete(AgTree::Rmap, r.key())?;
                    let nr = Rmap {
                        offset: m.offset,
                        start: m.start,
                        ..grow(r, m.len)
                    };
                    s.insert(AgTree::Rmap, &nr.bytes())
                }
                None => s.insert(AgTree::Rmap, &newm.bytes()),
            }
        }
        (false, _, false, _) => {
            // The middle: the right part inserted, the record cut to the
            // left part, the converted piece inserted.
            let r = Rmap {
                start: m.end(),
                offset: new_endoff,
                len: u32::try_from(prev_endoff.saturating_sub(new_endoff)).unwrap_or(0),
                ..prev
            };
            s.insert(AgTree::Rmap, &r.bytes())?;
            let l = Rmap {
                len: u32::try_from(m.offset.saturating_sub(prev.offset)).unwrap_or(0),
                ..prev
            };
            s.update(AgTree::Rmap, prev.key(), &l.bytes())?;
            s.insert(AgTree::Rmap, &newm.bytes())
        }
    }
}

/// `r` with its written state set to `unwritten`.
pub(super) fn newm_of(r: Rmap, unwritten: bool) -> Rmap {
    Rmap { unwritten, ..r }
}
