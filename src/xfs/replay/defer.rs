//! Deferred work as the kernel finishes it at mount: reverse-mapping
//! updates (`xfs_rmap.c`), reference-count adjustments (`xfs_refcount.c`)
//! and extent frees (`xfs_alloc.c`), each possibly creating more work.
//!
//! ```text
//!  queue (front first): item -> finish it -> the work it created goes to
//!  the front of the queue (xfs_defer_finish: new work of a finished item
//!  is done before the items that were pending)
//!
//!  rmap   map / unmap / map_shared / unmap_shared: the record cases of the
//!         kernel (merge left/right, trim front/back, split the middle)
//!  refc   increase / decrease: split the records at both ends, merge with
//!         the neighbours, adjust the records in between; a hole (refcount
//!         1) that a decrease reaches 0 in is freed (an EFI, rmap skipped)
//!  free   free list fixed first (shrunk: its head block freed later, as
//!         the kernel defers it; refilled from the by-size tree passing
//!         over busy extents, mapped to owner AG), rmap removed with the
//!         owner given, then xfs_free_ag_extent (merged with free
//!         neighbours), the extent busy afterwards; all three by the AG
//!         store (`alloc.rs`), the code every other caller uses
//! ```
//!
//! Records are changed through [`Recs`], which the AG btree editor
//! ([`AgStore`]) implements; a change the editor refuses stops the work
//! (the caller restores its snapshot and reports it as not done).

use super::ag::refuse;
use super::ag::{key_refc, key_rmap, AgStore, EditResult, Neighbors, Snapshot, Tree};
use super::alloc::RmapOwner;
use crate::xfs::format::btree::{
    MAXREFCOUNT, XFS_REFC_COWFLAG, XFS_RMAP_OFF_ATTR_FORK, XFS_RMAP_OFF_BMBT_BLOCK,
    XFS_RMAP_OFF_MASK, XFS_RMAP_OFF_UNWRITTEN, XFS_RMAP_OWN_AG, XFS_RMAP_OWN_NULL,
    XFS_RMAP_OWN_UNKNOWN,
};
use crate::xfs::fs::{be32, be64, Fs};
use crate::xfs::image::Overlay;
use crate::xfs::read::ReadAt;
use std::collections::{BTreeMap, VecDeque};

pub type Key = (u64, u64, u64);

/// Record access the work needs; [`AgStore`] is the real one.
pub trait Recs {
    fn find(&mut self, tree: Tree, key: Key) -> EditResult<Option<Vec<u8>>>;
    /// The last record with key <= `key` and the first after it.
    fn neighbors(&mut self, tree: Tree, key: Key) -> EditResult<Neighbors>;
    fn insert(&mut self, tree: Tree, rec: &[u8]) -> EditResult<()>;
    fn delete(&mut self, tree: Tree, key: Key) -> EditResult<()>;
    fn update(&mut self, tree: Tree, key: Key, rec: &[u8]) -> EditResult<()>;
    /// rmapbt records whose blocks overlap `[lo, hi]`, in key order.
    fn rmap_overlapping(&mut self, lo: u32, hi: u32) -> EditResult<Vec<Vec<u8>>>;
}

impl<R: ReadAt> Recs for AgStore<'_, R> {
    fn find(&mut self, tree: Tree, key: Key) -> EditResult<Option<Vec<u8>>> {
        AgStore::find(self, tree, key)
    }
    fn neighbors(&mut self, tree: Tree, key: Key) -> EditResult<Neighbors> {
        AgStore::neighbors(self, tree, key)
    }
    fn insert(&mut self, tree: Tree, rec: &[u8]) -> EditResult<()> {
        AgStore::insert(self, tree, rec)
    }
    fn delete(&mut self, tree: Tree, key: Key) -> EditResult<()> {
        AgStore::delete(self, tree, key)
    }
    fn update(&mut self, tree: Tree, key: Key, rec: &[u8]) -> EditResult<()> {
        AgStore::update(self, tree, key, rec)
    }
    fn rmap_overlapping(&mut self, lo: u32, hi: u32) -> EditResult<Vec<Vec<u8>>> {
        AgStore::rmap_overlapping(self, lo, hi)
    }
}

/// One reverse mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rmap {
    pub start: u32,
    pub len: u32,
    pub owner: u64,
    /// File offset (0 for non-inode owners and bmbt blocks).
    pub offset: u64,
    pub attr: bool,
    pub bmbt: bool,
    pub unwritten: bool,
}

impl Rmap {
    pub fn parse(r: &[u8]) -> Rmap {
        let off = be64(r, 16).unwrap_or(0);
        Rmap {
            start: be32(r, 0).unwrap_or(0),
            len: be32(r, 4).unwrap_or(0),
            owner: be64(r, 8).unwrap_or(0),
            offset: off & XFS_RMAP_OFF_MASK,
            attr: off & XFS_RMAP_OFF_ATTR_FORK != 0,
            bmbt: off & XFS_RMAP_OFF_BMBT_BLOCK != 0,
            unwritten: off & XFS_RMAP_OFF_UNWRITTEN != 0,
        }
    }
    pub fn bytes(&self) -> Vec<u8> {
        let mut off = self.offset & XFS_RMAP_OFF_MASK;
        if self.attr {
            off |= XFS_RMAP_OFF_ATTR_FORK;
        }
        if self.bmbt {
            off |= XFS_RMAP_OFF_BMBT_BLOCK;
        }
        if self.unwritten {
            off |= XFS_RMAP_OFF_UNWRITTEN;
        }
        let mut r = Vec::with_capacity(24);
        r.extend_from_slice(&self.start.to_be_bytes());
        r.extend_from_slice(&self.len.to_be_bytes());
        r.extend_from_slice(&self.owner.to_be_bytes());
        r.extend_from_slice(&off.to_be_bytes());
        r
    }
    /// The btree key: start, owner, offset with the fork and bmbt bits
    /// (the written state is not part of it).
    pub fn key(&self) -> Key {
        key_rmap(self.start, self.owner, self.key_offset(self.offset))
    }
    fn key_offset(&self, offset: u64) -> u64 {
        let mut off = offset & XFS_RMAP_OFF_MASK;
        if self.attr {
            off |= XFS_RMAP_OFF_ATTR_FORK;
        }
        if self.bmbt {
            off |= XFS_RMAP_OFF_BMBT_BLOCK;
        }
        off
    }
    fn end(&self) -> u32 {
        self.start.saturating_add(self.len)
    }
    /// `XFS_RMAP_NON_INODE_OWNER`, or a bmbt block: offsets do not count.
    fn ignore_off(&self) -> bool {
        non_inode(self.owner) || self.bmbt
    }
    /// `xfs_rmap_is_mergeable` against the owner and flags of `o`.
    fn mergeable(&self, o: &Rmap) -> bool {
        self.owner != XFS_RMAP_OWN_NULL
            && self.owner == o.owner
            && self.unwritten == o.unwritten
            && self.attr == o.attr
            && self.bmbt == o.bmbt
    }
}

fn non_inode(owner: u64) -> bool {
    owner >> 63 != 0
}

/// One reference count record (shared domain unless `cow`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refc {
    /// The start block, without the CoW-domain bit.
    pub start: u32,
    pub len: u32,
    pub refcount: u32,
    /// CoW staging domain (`XFS_REFC_DOMAIN_COW`).
    pub cow: bool,
}

impl Refc {
    fn parse(r: &[u8]) -> Option<Refc> {
        let start = be32(r, 0)?;
        Some(Refc {
            start: start & !XFS_REFC_COWFLAG,
            len: be32(r, 4)?,
            refcount: be32(r, 8)?,
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

fn rmap_le<S: Recs>(s: &mut S, key: Key) -> EditResult<Option<Rmap>> {
    Ok(s.neighbors(Tree::Rmap, key)?.0.map(|r| Rmap::parse(&r)))
}

/// `xfs_rmap_lookup_le_range`: the mapping of the owner of `m` that holds
/// block `m.start` at file offset `m.offset`.
fn rmap_find_shared<S: Recs>(s: &mut S, m: &Rmap) -> EditResult<Option<Rmap>> {
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
pub fn rmap_unmap_shared<S: Recs>(s: &mut S, m: &Rmap) -> EditResult<()> {
    let Some(lt) = rmap_find_shared(s, m)? else {
        return refuse(format!(
            "rmap: no mapping of owner {} offset {} at block {}",
            m.owner, m.offset, m.start
        ));
    };
    if lt.start > m.start || lt.end() < m.end() || lt.unwritten != m.unwritten {
        return refuse(format!(
            "rmap: the mapping {}+{} does not cover {}+{}",
            lt.start, lt.len, m.start, m.len
        ));
    }
    if lt.start == m.start && lt.len == m.len {
        s.delete(Tree::Rmap, lt.key())
    } else if lt.start == m.start {
        s.delete(Tree::Rmap, lt.key())?;
        let mut n = lt;
        n.start = n.start.saturating_add(m.len);
        n.len = n.len.saturating_sub(m.len);
        n.offset = n.offset.saturating_add(u64::from(m.len));
        s.insert(Tree::Rmap, &n.bytes())
    } else if lt.end() == m.end() {
        let mut n = lt;
        n.len = n.len.saturating_sub(m.len);
        s.update(Tree::Rmap, lt.key(), &n.bytes())
    } else {
        let mut n = lt;
        n.len = m.start.saturating_sub(lt.start);
        s.update(Tree::Rmap, lt.key(), &n.bytes())?;
        let mut r = lt;
        r.start = m.end();
        r.len = lt.len.saturating_sub(m.len).saturating_sub(n.len);
        r.offset = m.offset.saturating_add(u64::from(m.len));
        s.insert(Tree::Rmap, &r.bytes())
    }
}

/// `xfs_rmap_map_shared`: add `m`, merged with the owner's mapping just
/// before it (found by the overlapped query) and the one just after.
pub fn rmap_map_shared<S: Recs>(s: &mut S, m: &Rmap) -> EditResult<()> {
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
        .find(Tree::Rmap, gkey)?
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
                s.delete(Tree::Rmap, g.key())?;
                n.len = n.len.saturating_add(g.len);
            }
            s.update(Tree::Rmap, l.key(), &n.bytes())
        }
        (_, Some(g)) if right_ok => {
            s.delete(Tree::Rmap, g.key())?;
            let mut n = g;
            n.start = m.start;
            n.len = n.len.saturating_add(m.len);
            n.offset = m.offset;
            s.insert(Tree::Rmap, &n.bytes())
        }
        _ => s.insert(Tree::Rmap, &m.bytes()),
    }
}

/// The greatest key below `k` (keys are compared as tuples).
fn key_before(k: Key) -> Key {
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
pub fn rmap_convert<S: Recs>(s: &mut S, m: &Rmap) -> EditResult<()> {
    if m.ignore_off() {
        return refuse("rmap: convert of a non-inode owner or a bmbt block".into());
    }
    let new = m.unwritten;
    let mut old_m = *m;
    old_m.unwritten = !new;
    let (prev, _) = s.neighbors(Tree::Rmap, old_m.key())?;
    let Some(prev) = prev.map(|r| Rmap::parse(&r)) else {
        return refuse(format!("rmap: no mapping to convert at block {}", m.start));
    };
    let new_endoff = m.offset.saturating_add(u64::from(m.len));
    if prev.owner != m.owner
        || prev.unwritten == new
        || prev.start > m.start
        || prev.end() < m.end()
        || prev.offset > m.offset
        || prev.offset.saturating_add(u64::from(prev.len)) < new_endoff
    {
        return refuse(format!(
            "rmap: the mapping {}+{} owner {:#x} does not hold {}+{} to convert",
            prev.start, prev.len, prev.owner, m.start, m.len
        ));
    }
    let lf = prev.offset == m.offset;
    let rf = prev.offset.saturating_add(u64::from(prev.len)) == new_endoff;
    let left = s
        .neighbors(Tree::Rmap, key_before(prev.key()))?
        .0
        .map(|r| Rmap::parse(&r));
    let right = s
        .neighbors(Tree::Rmap, prev.key())?
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
            s.delete(Tree::Rmap, r.key())?;
            s.delete(Tree::Rmap, prev.key())?;
            let mut n = l;
            n.len = n.len.saturating_add(prev.len).saturating_add(r.len);
            s.update(Tree::Rmap, l.key(), &n.bytes())
        }
        (true, Some(l), true, None) => {
            s.delete(Tree::Rmap, prev.key())?;
            let mut n = l;
            n.len = n.len.saturating_add(prev.len);
            s.update(Tree::Rmap, l.key(), &n.bytes())
        }
        (true, None, true, Some(r)) => {
            s.delete(Tree::Rmap, r.key())?;
            let mut n = prev;
            n.len = m.len.saturating_add(r.len);
            n.unwritten = new;
            s.update(Tree::Rmap, prev.key(), &n.bytes())
        }
        (true, None, true, None) => {
            let mut n = prev;
            n.unwritten = new;
            s.update(Tree::Rmap, prev.key(), &n.bytes())
        }
        (true, Some(l), false, _) => {
            let mut n = prev;
            n.offset = n.offset.saturating_add(u64::from(m.len));
            n.start = n.start.saturating_add(m.len);
            n.len = n.len.saturating_sub(m.len);
            s.update(Tree::Rmap, prev.key(), &n.bytes())?;
            let mut nl = l;
            nl.len = nl.len.saturating_add(m.len);
            s.update(Tree::Rmap, l.key(), &nl.bytes())
        }
        (true, None, false, _) => {
            let mut n = prev;
            n.start = n.start.saturating_add(m.len);
            n.offset = n.offset.saturating_add(u64::from(m.len));
            n.len = n.len.saturating_sub(m.len);
            s.update(Tree::Rmap, prev.key(), &n.bytes())?;
            s.insert(Tree::Rmap, &newm.bytes())
        }
        (false, _, true, Some(r)) => {
            let mut n = prev;
            n.len = n.len.saturating_sub(m.len);
            s.update(Tree::Rmap, prev.key(), &n.bytes())?;
            let mut nr = r;
            nr.offset = m.offset;
            nr.start = m.start;
            nr.len = nr.len.saturating_add(m.len);
            s.update(Tree::Rmap, r.key(), &nr.bytes())
        }
        (false, _, true, None) => {
            let mut n = prev;
            n.len = n.len.saturating_sub(m.len);
            s.update(Tree::Rmap, prev.key(), &n.bytes())?;
            s.insert(Tree::Rmap, &newm.bytes())
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
            s.update(Tree::Rmap, prev.key(), &r.bytes())?;
            let mut l = prev;
            l.len = u32::try_from(m.offset.saturating_sub(prev.offset)).unwrap_or(0);
            s.insert(Tree::Rmap, &l.bytes())?;
            s.insert(Tree::Rmap, &newm.bytes())
        }
    }
}

/// `xfs_rmap_convert_shared`: as [`rmap_convert`], for an inode whose
/// blocks other owners may map too: the mapping found by owner and offset,
/// the left neighbour by the overlapped query, the right one by its exact
/// key, and every change of a key done as a delete and an insert.
pub fn rmap_convert_shared<S: Recs>(s: &mut S, m: &Rmap) -> EditResult<()> {
    if m.ignore_off() || m.attr {
        return refuse("rmap: shared convert of a non-inode owner, bmbt block or attr fork".into());
    }
    let new = m.unwritten;
    let mut old_m = *m;
    old_m.unwritten = !new;
    let Some(prev) = rmap_find_shared(s, &old_m)? else {
        return refuse(format!(
            "rmap: no mapping of owner {} offset {} at block {} to convert",
            m.owner, m.offset, m.start
        ));
    };
    let new_endoff = m.offset.saturating_add(u64::from(m.len));
    let prev_endoff = prev.offset.saturating_add(u64::from(prev.len));
    if prev.unwritten == new || prev.offset > m.offset || prev_endoff < new_endoff {
        return refuse(format!(
            "rmap: the mapping {}+{} owner {:#x} does not hold {}+{} to convert",
            prev.start, prev.len, prev.owner, m.start, m.len
        ));
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
        return refuse(format!(
            "rmap: a mapping of owner {} overlaps block {}",
            m.owner, m.start
        ));
    }
    let lc = left.filter(|l| l.mergeable(&newm));
    let rkey = key_rmap(m.end(), m.owner, newm.key_offset(new_endoff));
    let right = s
        .find(Tree::Rmap, rkey)?
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
            s.delete(Tree::Rmap, r.key())?;
            s.delete(Tree::Rmap, prev.key())?;
            let n = grow(l, prev.len.saturating_add(r.len));
            s.update(Tree::Rmap, l.key(), &n.bytes())
        }
        (true, Some(l), true, None) => {
            s.delete(Tree::Rmap, prev.key())?;
            s.update(Tree::Rmap, l.key(), &grow(l, prev.len).bytes())
        }
        (true, None, true, Some(r)) => {
            s.delete(Tree::Rmap, r.key())?;
            let n = Rmap {
                unwritten: r.unwritten,
                ..grow(prev, r.len)
            };
            s.update(Tree::Rmap, prev.key(), &n.bytes())
        }
        (true, None, true, None) => s.update(Tree::Rmap, prev.key(), &newm_of(prev, new).bytes()),
        (true, lc, false, _) => {
            s.delete(Tree::Rmap, prev.key())?;
            let n = Rmap {
                start: prev.start.saturating_add(m.len),
                offset: prev.offset.saturating_add(u64::from(m.len)),
                len: prev.len.saturating_sub(m.len),
                ..prev
            };
            s.insert(Tree::Rmap, &n.bytes())?;
            match lc {
                Some(l) => s.update(Tree::Rmap, l.key(), &grow(l, m.len).bytes()),
                None => s.insert(Tree::Rmap, &newm.bytes()),
            }
        }
        (false, _, true, rc) => {
            let n = Rmap {
                len: u32::try_from(m.offset.saturating_sub(prev.offset)).unwrap_or(0),
                ..prev
            };
            s.update(Tree::Rmap, prev.key(), &n.bytes())?;
            match rc {
                Some(r) => {
                    s.delete(Tree::Rmap, r.key())?;
                    let nr = Rmap {
                        offset: m.offset,
                        start: m.start,
                        ..grow(r, m.len)
                    };
                    s.insert(Tree::Rmap, &nr.bytes())
                }
                None => s.insert(Tree::Rmap, &newm.bytes()),
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
            s.insert(Tree::Rmap, &r.bytes())?;
            let l = Rmap {
                len: u32::try_from(m.offset.saturating_sub(prev.offset)).unwrap_or(0),
                ..prev
            };
            s.update(Tree::Rmap, prev.key(), &l.bytes())?;
            s.insert(Tree::Rmap, &newm.bytes())
        }
    }
}

/// `r` with its written state set to `unwritten`.
fn newm_of(r: Rmap, unwritten: bool) -> Rmap {
    Rmap { unwritten, ..r }
}

// ---------------------------------------------------------------------
// Reference counts (shared domain).

fn rkey(agbno: u32, cow: bool) -> Key {
    key_refc(if cow { agbno | XFS_REFC_COWFLAG } else { agbno })
}

fn refc_le<S: Recs>(s: &mut S, agbno: u32, cow: bool) -> EditResult<Option<Refc>> {
    Ok(s.neighbors(Tree::Refc, rkey(agbno, cow))?
        .0
        .and_then(|r| Refc::parse(&r))
        .filter(|r| r.cow == cow))
}

fn refc_ge<S: Recs>(s: &mut S, agbno: u32, cow: bool) -> EditResult<Option<Refc>> {
    let (l, r) = s.neighbors(Tree::Refc, rkey(agbno, cow))?;
    if let Some(l) = l.and_then(|l| Refc::parse(&l)) {
        if l.start == agbno && l.cow == cow {
            return Ok(Some(l));
        }
    }
    Ok(r.and_then(|r| Refc::parse(&r)).filter(|r| r.cow == cow))
}

fn refc_after<S: Recs>(s: &mut S, r: &Refc) -> EditResult<Option<Refc>> {
    Ok(s.neighbors(Tree::Refc, r.key())?
        .1
        .and_then(|x| Refc::parse(&x))
        .filter(|x| x.cow == r.cow))
}

fn refc_before<S: Recs>(s: &mut S, r: &Refc) -> EditResult<Option<Refc>> {
    if r.start == 0 {
        return Ok(None);
    }
    refc_le(s, r.start.saturating_sub(1), r.cow)
}

/// `xfs_refcount_split_extent`: no record may cross `agbno`.
fn refc_split<S: Recs>(s: &mut S, agbno: u32, cow: bool) -> EditResult<()> {
    let Some(r) = refc_le(s, agbno, cow)? else {
        return Ok(());
    };
    if r.start == agbno || r.end() <= agbno {
        return Ok(());
    }
    let right = Refc {
        start: agbno,
        len: r.len.saturating_sub(agbno.saturating_sub(r.start)),
        refcount: r.refcount,
        cow,
    };
    s.update(Tree::Refc, r.key(), &right.bytes())?;
    let left = Refc {
        start: r.start,
        len: agbno.saturating_sub(r.start),
        refcount: r.refcount,
        cow,
    };
    s.insert(Tree::Refc, &left.bytes())
}

fn merged_refcount(r: &Refc, adj: i32) -> u32 {
    if r.refcount == MAXREFCOUNT {
        MAXREFCOUNT
    } else {
        r.refcount.saturating_add_signed(adj)
    }
}

/// `xfs_refcount_merge_extents`.
fn refc_merge<S: Recs>(
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
        if let Some(t) = refc_le(s, agbno.saturating_sub(1), cow)? {
            if t.end() == *agbno {
                left = Some(t);
                cleft = Some(match refc_after(s, &t)? {
                    Some(n) if n.start == *agbno => n,
                    Some(n) => Refc {
                        start: *agbno,
                        len: (*aglen).min(n.start.saturating_sub(*agbno)),
                        refcount: 1,
                        cow,
                    },
                    None => Refc {
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
    if let Some(t) = refc_ge(s, end, cow)? {
        if t.start == end {
            right = Some(t);
            cright = Some(match refc_before(s, &t)? {
                Some(p) if p.end() == end => p,
                Some(p) => {
                    let st = (*agbno).max(p.end());
                    Refc {
                        start: st,
                        len: t.start.saturating_sub(st),
                        refcount: 1,
                        cow,
                    }
                }
                None => Refc {
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
            let first = refc_ge(s, c.start, cow)?
                .map(|x| x.key())
                .unwrap_or(r.key());
            s.delete(Tree::Refc, first)?;
            if c.refcount > 1 {
                s.delete(Tree::Refc, r.key())?;
            }
            let nl = Refc {
                len: u32::try_from(total).unwrap_or(u32::MAX),
                ..l
            };
            s.update(Tree::Refc, l.key(), &nl.bytes())?;
            *aglen = 0;
            return Ok(());
        }
    }
    if let (Some(l), Some(c)) = (left, cleft) {
        if l.refcount == merged_refcount(&c, adj)
            && u64::from(l.len).saturating_add(u64::from(c.len)) < u64::from(u32::MAX >> 1)
        {
            if c.refcount > 1 {
                s.delete(Tree::Refc, c.key())?;
            }
            let nl = Refc {
                len: l.len.saturating_add(c.len),
                ..l
            };
            s.update(Tree::Refc, l.key(), &nl.bytes())?;
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
                s.delete(Tree::Refc, c.key())?;
            }
            let nr = Refc {
                start: r.start.saturating_sub(c.len),
                len: r.len.saturating_add(c.len),
                refcount: r.refcount,
                cow,
            };
            s.update(Tree::Refc, r.key(), &nr.bytes())?;
            *aglen = aglen.saturating_sub(c.len);
        }
    }
    Ok(())
}

/// `xfs_refcount_adjust_extents`: the extents a decrease frees are
/// returned.
fn refc_adjust_extents<S: Recs>(
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
            return refuse("refcount: the adjustment does not end".into());
        }
        let mut ext = refc_ge(s, *agbno, false)?.unwrap_or(Refc {
            start: agblocks,
            len: 0,
            refcount: 0,
            cow: false,
        });
        if ext.start != *agbno {
            let hole = Refc {
                start: *agbno,
                len: (*aglen).min(ext.start.saturating_sub(*agbno)),
                refcount: 1u32.saturating_add_signed(adj),
                cow: false,
            };
            if hole.len == 0 {
                return refuse("refcount: records overlap".into());
            }
            if hole.refcount != 0 {
                s.insert(Tree::Refc, &hole.bytes())?;
            } else {
                frees.push((hole.start, hole.len));
            }
            *agbno = agbno.saturating_add(hole.len);
            *aglen = aglen.saturating_sub(hole.len);
            if *aglen == 0 {
                break;
            }
            match refc_ge(s, *agbno, false)? {
                Some(e) => ext = e,
                None => return refuse("refcount: record vanished".into()),
            }
        }
        if ext.start != *agbno || ext.len > *aglen || ext.len == 0 {
            return refuse(format!(
                "refcount: record {}+{} straddles the end of the range {}+{}",
                ext.start, ext.len, agbno, aglen
            ));
        }
        if ext.refcount != MAXREFCOUNT {
            let old = ext.start;
            ext.refcount = ext.refcount.saturating_add_signed(adj);
            if ext.refcount > 1 {
                s.update(Tree::Refc, rkey(old, false), &ext.bytes())?;
            } else if ext.refcount == 1 {
                s.delete(Tree::Refc, rkey(old, false))?;
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
pub fn refcount_adjust<S: Recs>(
    s: &mut S,
    agblocks: u32,
    agbno: u32,
    len: u32,
    adj: i32,
) -> EditResult<Vec<(u32, u32)>> {
    let (mut b, mut l) = (agbno, len);
    refc_split(s, b, false)?;
    refc_split(s, b.saturating_add(l), false)?;
    refc_merge(s, &mut b, &mut l, adj, false)?;
    let mut frees = Vec::new();
    refc_adjust_extents(s, agblocks, &mut b, &mut l, adj, &mut frees)?;
    Ok(frees)
}

/// `xfs_refcount_adjust_cow`: a CoW staging extent reserved (`alloc`:
/// a record of refcount 1 in the CoW domain, merged with adjacent staging
/// extents) or released (the record must be exactly the extent).
pub fn refcount_cow<S: Recs>(
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
        let before = refc_le(s, agbno, true)?;
        let after = refc_ge(s, agbno, true)?;
        if before.is_some_and(|x| x.end() > agbno) || after.is_some_and(|x| x.start < end) {
            return refuse(format!(
                "refcount: CoW blocks {agbno}+{len} are already reserved"
            ));
        }
    }
    let (mut b, mut l) = (agbno, len);
    refc_split(s, b, true)?;
    refc_split(s, b.saturating_add(l), true)?;
    refc_merge(s, &mut b, &mut l, adj, true)?;
    if l == 0 {
        return Ok(());
    }
    let ext = refc_ge(s, b, true)?.unwrap_or(Refc {
        start: agblocks,
        len: 0,
        refcount: 0,
        cow: true,
    });
    if alloc {
        if ext.start < b.saturating_add(l) {
            return refuse(format!("refcount: CoW blocks {b}+{l} are already reserved"));
        }
        s.insert(
            Tree::Refc,
            &Refc {
                start: b,
                len: l,
                refcount: 1,
                cow: true,
            }
            .bytes(),
        )
    } else {
        if ext.start != b || ext.len != l || ext.refcount != 1 {
            return refuse(format!(
                "refcount: no CoW staging record {b}+{l} to release"
            ));
        }
        s.delete(Tree::Refc, ext.key())
    }
}

// ---------------------------------------------------------------------
// Free space.

/// Who owns blocks being freed, for the reverse mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeOwner {
    /// No rmap change (the mapping was removed by its own update).
    Skip,
    /// EFI recovery: whoever maps the blocks.
    Unknown,
    /// A known owner (a bmbt block, inode chunk, AG metadata).
    Known(Rmap),
}

/// One piece of deferred work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Work {
    RmapMap {
        agno: u32,
        m: Rmap,
        shared: bool,
    },
    RmapUnmap {
        agno: u32,
        m: Rmap,
        shared: bool,
    },
    /// The written state of a mapping flipped to `m.unwritten`.
    RmapConvert {
        agno: u32,
        m: Rmap,
        shared: bool,
    },
    Refcount {
        agno: u32,
        agbno: u32,
        len: u32,
        adj: i32,
    },
    /// A CoW staging extent reserved (`alloc`) or released.
    RefcountCow {
        agno: u32,
        agbno: u32,
        len: u32,
        alloc: bool,
    },
    Free {
        agno: u32,
        agbno: u32,
        len: u32,
        owner: FreeOwner,
    },
    /// A block taken off a too long free list (`xfs_agfl_free_finish_item`).
    AgflFree {
        agno: u32,
        agbno: u32,
    },
}

impl Work {
    /// What `xfs_bmap_del_extent_real` defers for blocks that leave a fork
    /// of an inode that is not reflinked: the reverse mapping removed
    /// (the blocks at `m.start` in AG `agno`), then the blocks freed
    /// without another rmap update.
    pub fn unmap_and_free(agno: u32, m: Rmap) -> [Work; 2] {
        let (agbno, len) = (m.start, m.len);
        [
            Work::RmapUnmap {
                agno,
                m,
                shared: false,
            },
            Work::Free {
                agno,
                agbno,
                len,
                owner: FreeOwner::Skip,
            },
        ]
    }

    pub fn describe(&self) -> String {
        match self {
            Work::RmapMap { agno, m, shared } => format!(
                "rmap map{} AG {agno} block {}+{} owner {:#x} offset {}",
                if *shared { "_shared" } else { "" },
                m.start,
                m.len,
                m.owner,
                m.offset
            ),
            Work::RmapUnmap { agno, m, shared } => format!(
                "rmap unmap{} AG {agno} block {}+{} owner {:#x} offset {}",
                if *shared { "_shared" } else { "" },
                m.start,
                m.len,
                m.owner,
                m.offset
            ),
            Work::Refcount {
                agno,
                agbno,
                len,
                adj,
            } => format!(
                "refcount {} AG {agno} block {agbno}+{len}",
                if *adj > 0 { "increase" } else { "decrease" }
            ),
            Work::RmapConvert { agno, m, shared } => format!(
                "rmap convert{} AG {agno} block {}+{} owner {:#x} offset {} to {}",
                if *shared { "_shared" } else { "" },
                m.start,
                m.len,
                m.owner,
                m.offset,
                if m.unwritten { "unwritten" } else { "written" }
            ),
            Work::RefcountCow {
                agno,
                agbno,
                len,
                alloc,
            } => format!(
                "refcount {} AG {agno} block {agbno}+{len}",
                if *alloc { "alloc_cow" } else { "free_cow" }
            ),
            Work::Free {
                agno, agbno, len, ..
            } => format!("free AG {agno} block {agbno}+{len}"),
            Work::AgflFree { agno, agbno } => format!("free list block AG {agno} block {agbno}"),
        }
    }
}

/// The AG stores the work changes, with a snapshot over all of them.
/// The deferred-op type an item goes to (`xfs_defer_op_type`): items of
/// one type logged one after another in a transaction share one intent.
pub fn defer_kind(w: &Work) -> u8 {
    match w {
        Work::RmapMap { .. } | Work::RmapUnmap { .. } | Work::RmapConvert { .. } => 0,
        Work::Refcount { .. } | Work::RefcountCow { .. } => 1,
        Work::Free { .. } => 2,
        Work::AgflFree { .. } => 3,
    }
}

/// Items one deferred op holds at most (`max_items` of the extent-free,
/// rmap and refcount op types).
pub const DEFER_MAX_ITEMS: usize = 16;

/// `work` split into deferred ops (runs of one [`defer_kind`], at most
/// [`DEFER_MAX_ITEMS`] each: `xfs_defer_add` appends to the last op when it
/// is of the same type and not full), put at the front of `queue` in
/// their order.
/// Extents freed by mount-time work and still busy, per AG: what one step
/// of that work hands the next when no log force comes between them.
pub type Busy = BTreeMap<u32, Vec<(u32, u32)>>;

/// Whether `w` is a deferred op on a filesystem with or without the rmapbt.
fn is_deferred(rmapbt: bool, w: &Work) -> bool {
    rmapbt
        || !matches!(
            w,
            Work::RmapMap { .. } | Work::RmapUnmap { .. } | Work::RmapConvert { .. }
        )
}

fn push_runs(queue: &mut VecDeque<Vec<Work>>, work: Vec<Work>) {
    let mut runs: Vec<Vec<Work>> = Vec::new();
    for w in work {
        match runs.last_mut() {
            Some(r)
                if r.len() < DEFER_MAX_ITEMS
                    && r.first().map(defer_kind) == Some(defer_kind(&w)) =>
            {
                r.push(w)
            }
            _ => runs.push(vec![w]),
        }
    }
    for r in runs.into_iter().rev() {
        queue.push_front(r);
    }
}

pub struct Engine<'a, R: ReadAt> {
    pub fs: &'a Fs<R>,
    base: &'a Overlay,
    pub stores: BTreeMap<u32, AgStore<'a, R>>,
    rmapbt: bool,
    /// Work items finished (for the report).
    pub done: u64,
    /// Deferred-op groups finished (`xfs_defer_pending`): items, with a
    /// run of free-list frees made by one fix-up counted once.
    pub dfps: u64,
    last_agfl: bool,
}

/// Saved state of every store.
pub struct EngineSnapshot {
    stores: BTreeMap<u32, Snapshot>,
}

impl<'a, R: ReadAt> Engine<'a, R> {
    pub fn new(fs: &'a Fs<R>, base: &'a Overlay) -> Self {
        Engine {
            fs,
            base,
            stores: BTreeMap::new(),
            rmapbt: fs.sb.features_ro_compat & (1 << 1) != 0,
            done: 0,
            dfps: 0,
            last_agfl: false,
        }
    }

    pub fn store(&mut self, agno: u32) -> EditResult<&mut AgStore<'a, R>> {
        if agno >= self.fs.geo.agcount {
            return refuse(format!("AG {agno} is outside the filesystem"));
        }
        if !self.stores.contains_key(&agno) {
            let s = AgStore::new(self.fs, self.base, agno)?;
            self.stores.insert(agno, s);
        }
        match self.stores.get_mut(&agno) {
            Some(s) => Ok(s),
            None => refuse(format!("AG {agno}: store vanished")),
        }
    }

    pub fn snapshot(&self) -> EngineSnapshot {
        EngineSnapshot {
            stores: self
                .stores
                .iter()
                .map(|(a, s)| (*a, s.snapshot()))
                .collect(),
        }
    }

    pub fn restore(&mut self, snap: EngineSnapshot) {
        self.stores.retain(|a, _| snap.stores.contains_key(a));
        for (a, sn) in snap.stores {
            if let Some(s) = self.stores.get_mut(&a) {
                s.restore(sn);
            }
        }
    }

    /// `xfs_alloc_fix_freelist` while freeing, done by the AG store (the
    /// same code as every other caller's: the need from the current tree
    /// heights, refills from the by-size tree passing over busy extents);
    /// the blocks it takes off a long list, and any btree blocks the store
    /// let go of, come back as work to do next, as the kernel defers them.
    fn fix_freelist(&mut self, agno: u32) -> EditResult<Vec<Work>> {
        let s = self.store(agno)?;
        s.fix_freelist(true)?;
        Ok(Self::deferred_work(agno, s.take_deferred()))
    }

    /// The frees AG `agno`'s store deferred (free-list blocks let go of
    /// by an allocation), as work items.
    pub fn take_deferred_work(&mut self, agno: u32) -> EditResult<Vec<Work>> {
        let items = self.store(agno)?.take_deferred();
        Ok(Self::deferred_work(agno, items))
    }

    /// The owner of a mapping as the AG store takes it.
    fn owner_of(m: &Rmap) -> RmapOwner {
        RmapOwner {
            owner: m.owner,
            offset: m.offset,
            attr_fork: m.attr,
            bmbt_block: m.bmbt,
        }
    }

    /// The frees an AG store deferred, as work items.
    fn deferred_work(agno: u32, items: Vec<(u32, u64)>) -> Vec<Work> {
        items
            .into_iter()
            .map(|(agbno, owner)| {
                if owner == XFS_RMAP_OWN_AG {
                    Work::AgflFree { agno, agbno }
                } else {
                    Work::Free {
                        agno,
                        agbno,
                        len: 1,
                        owner: FreeOwner::Known(Rmap {
                            start: agbno,
                            len: 1,
                            owner,
                            offset: 0,
                            attr: false,
                            bmbt: false,
                            unwritten: false,
                        }),
                    }
                }
            })
            .collect()
    }

    /// `xfs_free_ag_extent` with its rmap step, done by the AG store.
    fn free_ag_extent(
        &mut self,
        agno: u32,
        agbno: u32,
        len: u32,
        owner: FreeOwner,
    ) -> EditResult<()> {
        let o = match owner {
            FreeOwner::Skip => None,
            FreeOwner::Unknown => Some(RmapOwner::special(XFS_RMAP_OWN_UNKNOWN)),
            FreeOwner::Known(m) => Some(Self::owner_of(&m)),
        };
        self.store(agno)?.free_ag_extent(agbno, len, o)
    }

    /// Finish one item; the work it creates is returned in order.
    pub fn finish(&mut self, w: &Work) -> EditResult<Vec<Work>> {
        let agblocks = self.fs.geo.agblocks;
        let mut out = Vec::new();
        match w {
            Work::RmapMap { agno, m, shared } => {
                if !self.rmapbt {
                    return Ok(out);
                }
                out = self.fix_freelist(*agno)?;
                let s = self.store(*agno)?;
                if *shared {
                    rmap_map_shared(s, m)?;
                } else {
                    s.rmap_map(m.start, m.len, m.unwritten, Self::owner_of(m))?;
                }
            }
            Work::RmapUnmap { agno, m, shared } => {
                if !self.rmapbt {
                    return Ok(out);
                }
                out = self.fix_freelist(*agno)?;
                let s = self.store(*agno)?;
                if *shared {
                    rmap_unmap_shared(s, m)?;
                } else {
                    s.rmap_unmap(m.start, m.len, m.unwritten, Self::owner_of(m))?;
                }
            }
            Work::Refcount {
                agno,
                agbno,
                len,
                adj,
            } => {
                let s = self.store(*agno)?;
                let frees = refcount_adjust(s, agblocks, *agbno, *len, *adj)?;
                out.extend(frees.into_iter().map(|(b, l)| Work::Free {
                    agno: *agno,
                    agbno: b,
                    len: l,
                    owner: FreeOwner::Skip,
                }));
            }
            Work::RmapConvert { agno, m, shared } => {
                if !self.rmapbt {
                    return Ok(out);
                }
                out = self.fix_freelist(*agno)?;
                let s = self.store(*agno)?;
                if *shared {
                    rmap_convert_shared(s, m)?;
                } else {
                    rmap_convert(s, m)?;
                }
            }
            Work::RefcountCow {
                agno,
                agbno,
                len,
                alloc,
            } => {
                let s = self.store(*agno)?;
                refcount_cow(s, agblocks, *agbno, *len, *alloc)?;
            }
            Work::Free {
                agno,
                agbno,
                len,
                owner,
            } => {
                out = self.fix_freelist(*agno)?;
                self.free_ag_extent(*agno, *agbno, *len, *owner)?;
                // __xfs_free_extent: busy until the log moves on.
                self.store(*agno)?.busy_insert(*agbno, *len);
            }
            Work::AgflFree { agno, agbno } => {
                let owner = FreeOwner::Known(Rmap {
                    start: *agbno,
                    len: 1,
                    owner: XFS_RMAP_OWN_AG,
                    offset: 0,
                    attr: false,
                    bmbt: false,
                    unwritten: false,
                });
                self.free_ag_extent(*agno, *agbno, 1, owner)?;
            }
        }
        self.done = self.done.saturating_add(1);
        let agfl = matches!(w, Work::AgflFree { .. });
        if !(agfl && self.last_agfl) {
            self.dfps = self.dfps.saturating_add(1);
        }
        self.last_agfl = agfl;
        Ok(out)
    }

    /// Whether `w` is deferred work at all on this filesystem (reverse
    /// mappings are not without the rmapbt).
    pub fn defers(&self, w: &Work) -> bool {
        is_deferred(self.rmapbt, w)
    }

    /// Finish one item of a captured chain: the work it creates, and
    /// whether it began a deferred-op group of its own (then a roll came
    /// before it; free-list frees of one fix-up share one).
    pub fn finish_in_chain(&mut self, w: &Work) -> EditResult<(Vec<Work>, bool)> {
        let before = self.dfps;
        let more = self.finish(w).map_err(|e| e.within(|| w.describe()))?;
        Ok((more, self.dfps > before))
    }

    /// Finish `work` and everything it creates as `xfs_defer_finish`
    /// does: a run of items of one type (at most [`DEFER_MAX_ITEMS`]) is
    /// one deferred op, finished item after item in one transaction (one
    /// roll before it); what its items create is grouped the same way and
    /// goes before the ops that were pending.
    pub fn run(&mut self, work: Vec<Work>) -> EditResult<()> {
        let mut queue: VecDeque<Vec<Work>> = VecDeque::new();
        // Work that is no deferred op on this filesystem (reverse mappings
        // without the rmapbt: `xfs_rmap_update_is_needed`) makes no
        // intent and costs no roll.
        let rmapbt = self.rmapbt;
        let deferred = |w: &Work| is_deferred(rmapbt, w);
        push_runs(
            &mut queue,
            work.into_iter().filter(|w| deferred(w)).collect(),
        );
        let mut guard = 0u64;
        while let Some(run) = queue.pop_front() {
            let dfps = self.dfps;
            let mut created = Vec::new();
            for w in &run {
                guard = guard.saturating_add(1);
                if guard > 1 << 24 {
                    return refuse("deferred work does not end".into());
                }
                created.extend(self.finish(w).map_err(|e| e.within(|| w.describe()))?);
            }
            self.dfps = dfps.saturating_add(1);
            self.last_agfl = false;
            push_runs(
                &mut queue,
                created.into_iter().filter(|w| deferred(w)).collect(),
            );
        }
        Ok(())
    }

    /// The busy extents of every AG (agno -> (agbno, len)).
    pub fn busy(&self) -> Busy {
        self.stores
            .iter()
            .map(|(a, s)| (*a, s.busy_extents()))
            .collect()
    }

    /// The btree blocks of every AG freed and not in use again.
    pub fn stale(&self) -> crate::xfs::error::Result<Vec<(u64, u64)>> {
        let mut out = Vec::new();
        for s in self.stores.values() {
            out.extend(s.stale()?);
        }
        Ok(out)
    }

    /// The chunks written of the changed btree blocks of every AG.
    pub fn touched(
        &self,
    ) -> crate::xfs::error::Result<Vec<(u64, std::collections::BTreeSet<usize>)>> {
        let mut out = Vec::new();
        for s in self.stores.values() {
            out.extend(s.touched()?);
        }
        Ok(out)
    }

    /// The changed blocks of every AG.
    pub fn changed(&self) -> crate::xfs::error::Result<Vec<(u64, Vec<u8>)>> {
        let mut out = Vec::new();
        for s in self.stores.values() {
            out.extend(s.changed()?);
        }
        Ok(out)
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic,
    clippy::as_conversions,
    clippy::cast_possible_truncation
)]
mod tests {
    use super::super::ag::{key_bno, key_cnt};
    use super::*;

    /// Records in key order, one map per tree: a model of the btrees for
    /// checking the record semantics.
    #[derive(Default)]
    struct Mem {
        trees: BTreeMap<u8, BTreeMap<Key, Vec<u8>>>,
    }

    fn tid(t: Tree) -> u8 {
        // Not a match: the editor may know more trees than these four.
        [Tree::Bno, Tree::Cnt, Tree::Rmap, Tree::Refc]
            .iter()
            .position(|x| *x == t)
            .map_or(9, |i| i as u8)
    }

    fn key_of(t: Tree, r: &[u8]) -> Key {
        let a = be32(r, 0).unwrap();
        let b = be32(r, 4).unwrap();
        if t == Tree::Cnt {
            key_cnt(a, b)
        } else if t == Tree::Rmap {
            Rmap::parse(r).key()
        } else {
            key_bno(a)
        }
    }

    impl Recs for Mem {
        fn find(&mut self, t: Tree, k: Key) -> EditResult<Option<Vec<u8>>> {
            Ok(self.trees.entry(tid(t)).or_default().get(&k).cloned())
        }
        fn neighbors(&mut self, t: Tree, k: Key) -> EditResult<Neighbors> {
            let m = self.trees.entry(tid(t)).or_default();
            let l = m.range(..=k).next_back().map(|(_, v)| v.clone());
            let r = m
                .range((std::ops::Bound::Excluded(k), std::ops::Bound::Unbounded))
                .next()
                .map(|(_, v)| v.clone());
            Ok((l, r))
        }
        fn insert(&mut self, t: Tree, rec: &[u8]) -> EditResult<()> {
            let k = key_of(t, rec);
            let m = self.trees.entry(tid(t)).or_default();
            assert!(m.insert(k, rec.to_vec()).is_none(), "duplicate key {k:?}");
            Ok(())
        }
        fn delete(&mut self, t: Tree, k: Key) -> EditResult<()> {
            let m = self.trees.entry(tid(t)).or_default();
            assert!(m.remove(&k).is_some(), "no record {k:?}");
            Ok(())
        }
        fn update(&mut self, t: Tree, k: Key, rec: &[u8]) -> EditResult<()> {
            let m = self.trees.entry(tid(t)).or_default();
            assert!(m.remove(&k).is_some(), "no record {k:?}");
            m.insert(key_of(t, rec), rec.to_vec());
            Ok(())
        }
        fn rmap_overlapping(&mut self, lo: u32, hi: u32) -> EditResult<Vec<Vec<u8>>> {
            Ok(self
                .trees
                .entry(2)
                .or_default()
                .values()
                .filter(|r| {
                    let m = Rmap::parse(r);
                    m.start <= hi && m.end() > lo
                })
                .cloned()
                .collect())
        }
    }

    fn refcs(m: &mut Mem) -> Vec<(u32, u32, u32)> {
        m.trees
            .entry(3)
            .or_default()
            .values()
            .filter_map(|r| {
                let c = Refc::parse(r).unwrap();
                (!c.cow).then_some((c.start, c.len, c.refcount))
            })
            .collect()
    }

    fn cows(m: &mut Mem) -> Vec<(u32, u32, u32)> {
        m.trees
            .entry(3)
            .or_default()
            .values()
            .filter_map(|r| {
                let c = Refc::parse(r).unwrap();
                c.cow.then_some((c.start, c.len, c.refcount))
            })
            .collect()
    }

    #[test]
    fn cow_staging_extents_merge_when_reserved_and_must_match_when_released() {
        let mut m = with_refcs(&[(100, 4, 2)]);
        assert!(refcount_cow(&mut m, 8192, 10, 5, true).is_ok());
        // Adjacent reservations merge (both have refcount 1).
        assert!(refcount_cow(&mut m, 8192, 15, 5, true).is_ok());
        assert_eq!(cows(&mut m), vec![(10, 10, 1)]);
        assert_eq!(refcs(&mut m), vec![(100, 4, 2)], "shared domain untouched");
        // Reserving reserved blocks is refused.
        assert!(refcount_cow(&mut m, 8192, 12, 2, true).is_err());
        // Releasing the middle splits the record first, then removes it.
        assert!(refcount_cow(&mut m, 8192, 12, 3, false).is_ok());
        assert_eq!(cows(&mut m), vec![(10, 2, 1), (15, 5, 1)]);
        assert!(refcount_cow(&mut m, 8192, 30, 1, false).is_err());
    }

    fn with_refcs(recs: &[(u32, u32, u32)]) -> Mem {
        let mut m = Mem::default();
        for &(start, len, refcount) in recs {
            m.insert(
                Tree::Refc,
                &Refc {
                    start,
                    len,
                    refcount,
                    cow: false,
                }
                .bytes(),
            )
            .ok();
        }
        m
    }

    fn adjust(m: &mut Mem, b: u32, l: u32, adj: i32) -> Vec<(u32, u32)> {
        match refcount_adjust(m, 8192, b, l, adj) {
            Ok(f) => f,
            Err(_) => panic!("refused"),
        }
    }

    #[test]
    fn refcount_decrease_of_unshared_blocks_frees_them() {
        // No record: the blocks have refcount 1; a decrease frees them.
        let mut m = with_refcs(&[(100, 4, 2)]);
        assert_eq!(adjust(&mut m, 10, 5, -1), vec![(10, 5)]);
        assert_eq!(refcs(&mut m), vec![(100, 4, 2)]);
        // Across a shared record: the holes are freed, the record drops
        // to 1 (deleted, as refcount 1 is never stored).
        assert_eq!(adjust(&mut m, 98, 8, -1), vec![(98, 2), (104, 2)]);
        assert_eq!(refcs(&mut m), vec![]);
    }

    #[test]
    fn refcount_decrease_in_the_middle_splits_the_record() {
        let mut m = with_refcs(&[(100, 10, 3)]);
        assert!(adjust(&mut m, 103, 2, -1).is_empty());
        assert_eq!(refcs(&mut m), vec![(100, 3, 3), (103, 2, 2), (105, 5, 3)]);
        // Increasing it back merges the three again (merge centre).
        assert!(adjust(&mut m, 103, 2, 1).is_empty());
        assert_eq!(refcs(&mut m), vec![(100, 10, 3)]);
    }

    #[test]
    fn refcount_increase_covers_holes_and_merges_left_and_right() {
        // A hole between two records of refcount 2: increasing it makes
        // it 2 and merges all three.
        let mut m = with_refcs(&[(10, 5, 2), (20, 5, 2)]);
        assert!(adjust(&mut m, 15, 5, 1).is_empty());
        assert_eq!(refcs(&mut m), vec![(10, 15, 2)]);
        // Increase over the tail of a record and a hole: the record is
        // split at the start, its tail goes to 3, the hole becomes 2.
        let mut m = with_refcs(&[(10, 5, 2)]);
        assert!(adjust(&mut m, 12, 6, 1).is_empty());
        assert_eq!(refcs(&mut m), vec![(10, 2, 2), (12, 3, 3), (15, 3, 2)]);
        // Merge right only: [5,10) of refcount 1 increased next to a
        // record of 2 starting at 10.
        let mut m = with_refcs(&[(10, 5, 2)]);
        assert!(adjust(&mut m, 5, 5, 1).is_empty());
        assert_eq!(refcs(&mut m), vec![(5, 10, 2)]);
        // Decrease merging left: [10,15) of 3 next to [5,10) of 2.
        let mut m = with_refcs(&[(5, 5, 2), (10, 5, 3)]);
        assert!(adjust(&mut m, 10, 5, -1).is_empty());
        assert_eq!(refcs(&mut m), vec![(5, 10, 2)]);
    }

    fn rm(start: u32, len: u32, owner: u64, offset: u64) -> Rmap {
        Rmap {
            start,
            len,
            owner,
            offset,
            attr: false,
            bmbt: false,
            unwritten: false,
        }
    }

    fn rmaps(m: &mut Mem) -> Vec<(u32, u32, u64, u64)> {
        m.trees
            .entry(2)
            .or_default()
            .values()
            .map(|r| {
                let x = Rmap::parse(r);
                (x.start, x.len, x.owner, x.offset)
            })
            .collect()
    }

    #[test]
    fn converting_part_of_a_mapping_splits_it_and_merges_with_neighbours() {
        let mut m = Mem::default();
        m.insert(Tree::Rmap, &rm(0, 1, u64::MAX - 2, 0).bytes())
            .ok();
        let mut u = rm(100, 10, 131, 0);
        u.unwritten = true;
        m.insert(Tree::Rmap, &u.bytes()).ok();
        let written = |m: &mut Mem| -> Vec<(u32, u32, u64, bool)> {
            m.trees[&2]
                .values()
                .map(|r| {
                    let x = Rmap::parse(r);
                    (x.start, x.len, x.offset, x.unwritten)
                })
                .filter(|x| x.0 >= 100)
                .collect()
        };
        // The middle of an unwritten mapping written: three records.
        assert!(rmap_convert(&mut m, &rm(103, 2, 131, 3)).is_ok());
        assert_eq!(
            written(&mut m),
            vec![(100, 3, 0, true), (103, 2, 3, false), (105, 5, 5, true)]
        );
        // The whole first record written: it takes in the written piece
        // on its right.
        assert!(rmap_convert(&mut m, &rm(100, 3, 131, 0)).is_ok());
        assert_eq!(written(&mut m), vec![(100, 5, 0, false), (105, 5, 5, true)]);
        // The rest written: one record again.
        assert!(rmap_convert(&mut m, &rm(105, 5, 131, 5)).is_ok());
        assert_eq!(written(&mut m), vec![(100, 10, 0, false)]);
        // Converting to the state it already has is refused.
        assert!(rmap_convert(&mut m, &rm(100, 2, 131, 0)).is_err());
    }

    #[test]
    fn shared_rmaps_pick_the_owners_record_among_others() {
        let mut m = Mem::default();
        for owner in [131u64, 140, 150] {
            m.insert(Tree::Rmap, &rm(100, 10, owner, 0).bytes()).ok();
        }
        assert!(rmap_unmap_shared(&mut m, &rm(104, 2, 140, 4)).is_ok());
        assert_eq!(
            rmaps(&mut m),
            vec![
                (100, 10, 131, 0),
                (100, 4, 140, 0),
                (100, 10, 150, 0),
                (106, 4, 140, 6)
            ]
        );
        assert!(rmap_map_shared(&mut m, &rm(104, 2, 140, 4)).is_ok());
        assert_eq!(
            rmaps(&mut m),
            vec![(100, 10, 131, 0), (100, 10, 140, 0), (100, 10, 150, 0)]
        );
        // Front of a shared record: deleted and inserted with the new key.
        assert!(rmap_unmap_shared(&mut m, &rm(100, 3, 150, 0)).is_ok());
        assert_eq!(rmaps(&mut m)[2], (103, 7, 150, 3));
    }
}
