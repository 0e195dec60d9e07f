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
//! Records are changed through [`RecordStore`], which the AG btree editor
//! ([`AgStore`]) implements; a change the editor refuses stops the work
//! (the caller restores its snapshot and reports it as not done).
//!
//! The files follow the kernel's:
//!
//! | file | kernel | what |
//! |---|---|---|
//! | `mod.rs` | `xfs_defer.c` | the work items, the queue and its order, the engine that finishes them |
//! | `rmap.rs` | `xfs_rmap.c` | reverse-mapping records mapped, unmapped and converted |
//! | `refcount.rs` | `xfs_refcount.c` | reference counts adjusted, CoW staging extents |

mod refcount;
mod rmap;

use crate::xfs::error::Location;
use crate::xfs::replay::ag::damaged;
use refcount::{refcount_adjust, refcount_cow};
pub use rmap::Rmap;
use rmap::{rmap_convert, rmap_convert_shared, rmap_map_shared, rmap_unmap_shared};

use super::ag::{AgStore, AgTree, EditResult, Neighbors, Snapshot};
use super::alloc::RmapOwner;
use super::ckpt::Cut;
use crate::xfs::format::btree::{XFS_RMAP_OWN_AG, XFS_RMAP_OWN_UNKNOWN};
use crate::xfs::fs::Fs;
use crate::xfs::image::Overlay;
use crate::xfs::read::ReadAt;
use std::collections::{BTreeMap, VecDeque};

pub type Key = (u64, u64, u64);

/// Record access the work needs; [`AgStore`] is the real one.
pub trait RecordStore {
    fn find(&mut self, tree: AgTree, key: Key) -> EditResult<Option<Vec<u8>>>;
    /// The last record with key <= `key` and the first after it.
    fn neighbors(&mut self, tree: AgTree, key: Key) -> EditResult<Neighbors>;
    fn insert(&mut self, tree: AgTree, rec: &[u8]) -> EditResult<()>;
    fn delete(&mut self, tree: AgTree, key: Key) -> EditResult<()>;
    fn update(&mut self, tree: AgTree, key: Key, rec: &[u8]) -> EditResult<()>;
    /// rmapbt records whose blocks overlap `[lo, hi]`, in key order.
    fn rmap_overlapping(&mut self, lo: u32, hi: u32) -> EditResult<Vec<Vec<u8>>>;
}

impl<R: ReadAt> RecordStore for AgStore<'_, R> {
    fn find(&mut self, tree: AgTree, key: Key) -> EditResult<Option<Vec<u8>>> {
        AgStore::find(self, tree, key)
    }
    fn neighbors(&mut self, tree: AgTree, key: Key) -> EditResult<Neighbors> {
        AgStore::neighbors(self, tree, key)
    }
    fn insert(&mut self, tree: AgTree, rec: &[u8]) -> EditResult<()> {
        AgStore::insert(self, tree, rec)
    }
    fn delete(&mut self, tree: AgTree, key: Key) -> EditResult<()> {
        AgStore::delete(self, tree, key)
    }
    fn update(&mut self, tree: AgTree, key: Key, rec: &[u8]) -> EditResult<()> {
        AgStore::update(self, tree, key, rec)
    }
    fn rmap_overlapping(&mut self, lo: u32, hi: u32) -> EditResult<Vec<Vec<u8>>> {
        AgStore::rmap_overlapping(self, lo, hi)
    }
}

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

impl FreeOwner {
    /// The owner whose mapping `xfs_free_ag_extent` removes first, if any.
    fn rmap_owner(self) -> Option<RmapOwner> {
        match self {
            FreeOwner::Skip => None,
            FreeOwner::Unknown => Some(RmapOwner::special(XFS_RMAP_OWN_UNKNOWN)),
            FreeOwner::Known(m) => Some(RmapOwner::of(&m)),
        }
    }
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
    /// The transaction being built, counted from the first of the
    /// intents' recovery.
    pub tx: u64,
    /// The transactions in which the kernel forced the log (a stale,
    /// pinned buffer got again: [`AgStore::get_buf`]).
    pub forces: Vec<u64>,
    /// The transactions at whose start to record a [`Cut`]: those that
    /// forced the log, found by an earlier run of the same work.
    pub cut_at: Vec<u64>,
    /// The cuts recorded, in order.
    pub cuts: Vec<Cut>,
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
            tx: 0,
            forces: Vec::new(),
            cut_at: Vec::new(),
            cuts: Vec::new(),
        }
    }

    /// Whether finishing `w` in a chain begins a transaction (a roll
    /// comes before it): all but a free-list free after another.
    pub fn starts_tx(&self, w: &Work) -> bool {
        !(matches!(w, Work::AgflFree { .. }) && self.last_agfl)
    }

    /// Whether the transaction being built is one to record a cut at.
    pub fn cut_due(&self) -> bool {
        self.cut_at.contains(&self.tx)
    }

    /// The AG side of a cut: the blocks changed so far, and the chunks
    /// written and blocks freed since the last cut.
    pub fn take_cut(&mut self) -> crate::xfs::error::Result<Cut> {
        let ag = self.changed()?;
        let mut cut = Cut {
            ag,
            ..Cut::default()
        };
        for s in self.stores.values_mut() {
            let (c, t) = s.take_cut()?;
            cut.cancels.extend(c);
            cut.touched.extend(t);
        }
        Ok(cut)
    }

    /// The AG btree blocks freed since the last cut and not in use again.
    pub fn cancels(&self) -> crate::xfs::error::Result<Vec<(u64, u64)>> {
        let mut out = Vec::new();
        for s in self.stores.values() {
            out.extend(s.cancels()?);
        }
        Ok(out)
    }

    /// The transaction being built commits (a roll) and the next begins.
    pub fn begin_tx(&mut self) {
        self.tx = self.tx.saturating_add(1);
        for s in self.stores.values_mut() {
            s.tx = self.tx;
        }
    }

    /// After a log force in one AG's work: the checkpoint covers every
    /// AG, so every AG lets go of its committed busy extents and pins.
    pub fn settle_forces(&mut self) {
        if !self.stores.values().any(|s| s.forced) {
            return;
        }
        for s in self.stores.values_mut() {
            s.checkpoint_done();
            s.forced = false;
        }
        if self.forces.last() != Some(&self.tx) {
            self.forces.push(self.tx);
        }
    }

    /// Blocks outside the AG btrees (bmbt blocks: AG, block) whose
    /// buffers the transaction being built invalidated.
    pub fn pin_blocks(&mut self, blocks: Vec<(u32, u32)>) -> EditResult<()> {
        for (agno, agbno) in blocks {
            self.store(agno)?.pin(agbno);
        }
        Ok(())
    }

    pub fn store(&mut self, agno: u32) -> EditResult<&mut AgStore<'a, R>> {
        if agno >= self.fs.geo.agcount {
            return damaged(
                "intent",
                Some(Location::Ag { agno }),
                "the AG is outside the filesystem",
            );
        }
        if !self.stores.contains_key(&agno) {
            let mut s = AgStore::new(self.fs, self.base, agno)?;
            s.tx = self.tx;
            self.stores.insert(agno, s);
        }
        match self.stores.get_mut(&agno) {
            Some(s) => Ok(s),
            None => damaged("AG", Some(Location::Ag { agno }), "store vanished"),
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
                    s.rmap_map(m.start, m.len, m.unwritten, RmapOwner::of(m))?;
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
                    s.rmap_unmap(m.start, m.len, m.unwritten, RmapOwner::of(m))?;
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
                let owner = owner.rmap_owner();
                self.store(*agno)?.free_ag_extent(*agbno, *len, owner)?;
                // __xfs_free_extent: busy until the log moves on.
                self.store(*agno)?.busy_insert(*agbno, *len);
            }
            Work::AgflFree { agno, agbno } => {
                // xfs_agfl_free_finish_item: the block goes back to free
                // space; its buffer is not got again.
                let owner = Some(RmapOwner::special(XFS_RMAP_OWN_AG));
                self.store(*agno)?.free_ag_extent(*agbno, 1, owner)?;
            }
        }
        self.settle_forces();
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
            self.begin_tx();
            let dfps = self.dfps;
            let mut created = Vec::new();
            for w in &run {
                guard = guard.saturating_add(1);
                if guard > 1 << 24 {
                    return damaged("deferred work", None, "the chain does not end");
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
    use super::refcount::RefcountRecord;
    use super::*;
    use crate::xfs::fs::be32;

    /// Records in key order, one map per tree: a model of the btrees for
    /// checking the record semantics.
    #[derive(Default)]
    struct Mem {
        trees: BTreeMap<u8, BTreeMap<Key, Vec<u8>>>,
    }

    fn tid(t: AgTree) -> u8 {
        // Not a match: the editor may know more trees than these four.
        [AgTree::Bno, AgTree::Cnt, AgTree::Rmap, AgTree::Refcount]
            .iter()
            .position(|x| *x == t)
            .map_or(9, |i| i as u8)
    }

    fn key_of(t: AgTree, r: &[u8]) -> Key {
        let a = be32(r, 0).unwrap();
        let b = be32(r, 4).unwrap();
        if t == AgTree::Cnt {
            key_cnt(a, b)
        } else if t == AgTree::Rmap {
            Rmap::parse(r).key()
        } else {
            key_bno(a)
        }
    }

    impl RecordStore for Mem {
        fn find(&mut self, t: AgTree, k: Key) -> EditResult<Option<Vec<u8>>> {
            Ok(self.trees.entry(tid(t)).or_default().get(&k).cloned())
        }
        fn neighbors(&mut self, t: AgTree, k: Key) -> EditResult<Neighbors> {
            let m = self.trees.entry(tid(t)).or_default();
            let l = m.range(..=k).next_back().map(|(_, v)| v.clone());
            let r = m
                .range((std::ops::Bound::Excluded(k), std::ops::Bound::Unbounded))
                .next()
                .map(|(_, v)| v.clone());
            Ok((l, r))
        }
        fn insert(&mut self, t: AgTree, rec: &[u8]) -> EditResult<()> {
            let k = key_of(t, rec);
            let m = self.trees.entry(tid(t)).or_default();
            assert!(m.insert(k, rec.to_vec()).is_none(), "duplicate key {k:?}");
            Ok(())
        }
        fn delete(&mut self, t: AgTree, k: Key) -> EditResult<()> {
            let m = self.trees.entry(tid(t)).or_default();
            assert!(m.remove(&k).is_some(), "no record {k:?}");
            Ok(())
        }
        fn update(&mut self, t: AgTree, k: Key, rec: &[u8]) -> EditResult<()> {
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
                let c = RefcountRecord::parse(r).unwrap();
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
                let c = RefcountRecord::parse(r).unwrap();
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
                AgTree::Refcount,
                &RefcountRecord {
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
        m.insert(AgTree::Rmap, &rm(0, 1, u64::MAX - 2, 0).bytes())
            .ok();
        let mut u = rm(100, 10, 131, 0);
        u.unwritten = true;
        m.insert(AgTree::Rmap, &u.bytes()).ok();
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
            m.insert(AgTree::Rmap, &rm(100, 10, owner, 0).bytes()).ok();
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
