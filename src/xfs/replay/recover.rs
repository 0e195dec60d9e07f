//! Unfinished intents finished as the kernel does at mount
//! (`xlog_recover_process_intents`, then `xlog_finish_defer_ops`):
//!
//! ```text
//!  for each intent, in log order: its own work is done now (EFI: free
//!      each extent, rmap owner unknown; RUI: the rmap updates; CUI: the
//!      refcount adjustments); the work that creates (blocks freed by a
//!      decrease, free-list blocks) is captured
//!  then every capture, in order, finished depth first
//! ```
//!
//! Done: EFI; RUI map, unmap (and alloc/free of non-inode owners),
//! map_shared, unmap_shared, convert, convert_shared; CUI increase, decrease, alloc_cow,
//! free_cow; BUI map and unmap (`bmap/`, which says what it
//! refuses); ATTRI set, replace and remove in shortform attr forks
//! (`attr/`, likewise); XMI data-fork exchanges (`xmiedit.rs`,
//! likewise). Not done: realtime intents.
//!
//! All or nothing: if any piece cannot be done (one of those, or a change
//! the btree editor refuses), nothing is applied and every intent is
//! reported as not finished, with the reason.

use super::ag::{fails_mount, not_done};
use super::alloc::RmapOwner;
use super::attr;
use super::bmap::ForkEditor;
use super::defer::{defer_kind, Engine, FreeOwner, Rmap, Work};
use super::intents::Unfinished;
use super::xmiedit;
use super::RecoveryTime;
use crate::xfs::error::Result;
use crate::xfs::format::log::*;
use crate::xfs::fs::Fs;
use crate::xfs::image::Overlay;
use crate::xfs::log::items::ItemBody;
use crate::xfs::read::ReadAt;
use crate::xfs::types::Lsn;
use serde::Serialize;

use super::ag::EditError;

/// What became of the unfinished intents.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IntentReport {
    /// Intents finished (all of them, or none).
    pub finished: Vec<u64>,
    /// Why they were not, when they were not.
    pub not_finished: Option<String>,
    /// Work items done, follow-up work included.
    pub work_items: u64,
    /// The log items the kernel writes for this work, in the checkpoint
    /// its mount forces once the intents are finished.
    #[serde(skip)]
    pub logged: Vec<super::ckpt::Item>,
    /// That checkpoint laid out as the kernel writes it (set by the
    /// export, which knows the log's writer).
    pub checkpoint: Option<super::ckpt::Checkpoint>,
    /// The LSN of the checkpoint after it, which the later mount-time work
    /// (unlinked inodes, CoW staging extents) carries.
    pub next_lsn: Option<Lsn>,
    /// The checkpoints the kernel's log forces wrote in the middle of the
    /// work (a buffer freed earlier in it got again), in order; the last
    /// checkpoint of the work is [`Self::checkpoint`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub forced: Vec<super::ckpt::Checkpoint>,
    /// Where the last checkpoint of the work starts, when forces came
    /// before it (else at the head).
    #[serde(skip)]
    pub last_start: Option<Lsn>,
    /// The chunks the work wrote of each AG btree block it changed (by
    /// daddr): a later checkpoint that logs the block again logs them too.
    #[serde(skip)]
    pub ag_touched: Vec<(u64, std::collections::BTreeSet<usize>)>,
}

/// The work one intent asks for, in the order the kernel does it.
pub fn work_of<R: ReadAt>(fs: &Fs<R>, u: &Unfinished) -> std::result::Result<Vec<Work>, EditError> {
    let g = &fs.geo;
    let split = |fsb: u64| -> std::result::Result<(u32, u32), EditError> {
        let agno = u32::try_from(fsb >> g.agblklog).unwrap_or(u32::MAX);
        let mask = 1u64
            .checked_shl(u32::from(g.agblklog))
            .unwrap_or(0)
            .saturating_sub(1);
        let agbno = u32::try_from(fsb & mask).unwrap_or(u32::MAX);
        if agno >= g.agcount || agbno >= g.agblocks {
            return fails_mount(format!("fsblock {fsb} is outside the filesystem"));
        }
        Ok((agno, agbno))
    };
    let mut out = Vec::new();
    match (&u.body, u.kind.0) {
        (Some(ItemBody::ExtentFree(e)), XFS_LI_EFI) => {
            let mut ext = Vec::new();
            for x in e.extents.iter() {
                let (agno, agbno) = split(x.start)?;
                ext.push((agno, agbno, x.len));
            }
            // The kernel sorts an intent's extents by AG, stably.
            ext.sort_by_key(|e| e.0);
            for (agno, agbno, len) in ext {
                out.push(Work::Free {
                    agno,
                    agbno,
                    len,
                    owner: FreeOwner::Unknown,
                });
            }
        }
        (Some(ItemBody::MapIntent(m)), XFS_LI_RUI) => {
            for x in m.extents.iter() {
                let (agno, agbno) = split(x.startblock)?;
                let r = Rmap {
                    start: agbno,
                    len: x.len,
                    owner: x.owner,
                    offset: x.startoff,
                    attr: x.flags & XFS_RMAP_EXTENT_ATTR_FORK != 0,
                    bmbt: x.flags & XFS_RMAP_EXTENT_BMBT_BLOCK != 0,
                    unwritten: x.flags & XFS_RMAP_EXTENT_UNWRITTEN != 0,
                };
                out.push(match x.flags & XFS_RMAP_EXTENT_TYPE_MASK {
                    1 | 7 => Work::RmapMap {
                        agno,
                        m: r,
                        shared: false,
                    },
                    2 => Work::RmapMap {
                        agno,
                        m: r,
                        shared: true,
                    },
                    3 | 8 => Work::RmapUnmap {
                        agno,
                        m: r,
                        shared: false,
                    },
                    4 => Work::RmapUnmap {
                        agno,
                        m: r,
                        shared: true,
                    },
                    5 => Work::RmapConvert {
                        agno,
                        m: r,
                        shared: false,
                    },
                    6 => Work::RmapConvert {
                        agno,
                        m: r,
                        shared: true,
                    },
                    _ => {
                        return fails_mount(format!(
                            "rmap {} of owner {}: not a type of reverse-mapping update",
                            x.op, x.owner
                        ))
                    }
                });
            }
        }
        (Some(ItemBody::RefcountIntent(r)), XFS_LI_CUI) => {
            for x in r.extents.iter() {
                let (agno, agbno) = split(x.startblock)?;
                out.push(match x.flags & 0xff {
                    1 | 2 => Work::Refcount {
                        agno,
                        agbno,
                        len: x.len,
                        adj: if x.flags & 0xff == 1 { 1 } else { -1 },
                    },
                    3 | 4 => Work::RefcountCow {
                        agno,
                        agbno,
                        len: x.len,
                        alloc: x.flags & 0xff == 3,
                    },
                    _ => {
                        return fails_mount(format!(
                            "refcount {}: not a type of reference-count update",
                            x.op
                        ))
                    }
                });
            }
        }
        (Some(ItemBody::MapIntent(_)), XFS_LI_BUI)
        | (Some(ItemBody::Attri(_)), XFS_LI_ATTRI)
        | (Some(ItemBody::Xmi(_)), XFS_LI_XMI) => {
            // Done by the fork editor, in finish_all.
        }
        _ => return not_done(format!("finishing {} intents", u.kind.name())),
    }
    Ok(out)
}

/// The captured chain of an attribute intent, finished as
/// `xfs_defer_finish_noroll` does: one item per transaction, each after a
/// roll that logs the held inode unless the transaction ending logged it
/// already; what an item creates goes first, the items of one type that a
/// transaction left side by side sharing one deferred op (one roll); an
/// add that changed the fork's form first comes back, after what that
/// deferred, for the add in the new form.
fn run_attr_chain<R: ReadAt>(
    forks: &mut ForkEditor<'_, R>,
    engine: &mut Engine<'_, R>,
    tasks: Vec<attr::AttrTask>,
    ino: u64,
    now: RecoveryTime,
) -> std::result::Result<(), EditError> {
    use attr::AttrTask;
    let mut queue: std::collections::VecDeque<AttrTask> = tasks.into();
    // The first transaction of the chain logs nothing before its roll.
    let mut logged = false;
    let roll = |forks: &mut ForkEditor<'_, R>, logged: &mut bool| {
        let r = if *logged {
            Ok(())
        } else {
            forks.bump_change_count(ino, 1)
        };
        *logged = false;
        r
    };
    let mut guard = 0u64;
    while let Some(t) = queue.pop_front() {
        guard = guard.saturating_add(1);
        if guard > 1 << 24 {
            return not_done("an attribute intent's deferred work of more than 2^24 steps");
        }
        match t {
            AttrTask::Group(ws) => {
                // One transaction's work: a run of items of one type is one
                // deferred op (one roll before it); what they create comes
                // before the next run.
                let ws: Vec<Work> = ws.into_iter().filter(|w| engine.defers(w)).collect();
                let Some(kind) = ws.first().map(defer_kind) else {
                    continue;
                };
                let n = ws.iter().take_while(|w| defer_kind(w) == kind).count();
                let mut ws = ws;
                let rest = ws.split_off(n);
                let mut created = Vec::new();
                for (i, w) in ws.iter().enumerate() {
                    if engine.starts_tx(w) {
                        engine.begin_tx();
                    }
                    let (more, rolled) = engine.finish_in_chain(w)?;
                    if i == 0 && rolled {
                        roll(forks, &mut logged)?;
                    }
                    created.extend(more);
                }
                push_group(&mut queue, rest);
                push_group(&mut queue, created);
            }
            AttrTask::Add(p) => {
                roll(forks, &mut logged)?;
                // A shortform add or move logs the inode, and a leaf add
                // that took a new block; a plain leaf add does not.
                let (out, logs, work) = forks.attr_add(&p, now, engine)?;
                logged = logs;
                next_add(&mut queue, out, work);
            }
            AttrTask::RemoteSet(p, at) => {
                roll(forks, &mut logged)?;
                let (agno, rmap, more) = forks.attr_remote_step(&p, at, engine)?;
                logged = true;
                if let Some(at) = more {
                    queue.push_front(AttrTask::RemoteSet(p, Some(at)));
                }
                let mut work = engine.take_deferred_work(agno)?;
                work.push(rmap);
                push_group(&mut queue, work);
            }
            AttrTask::RemoveRmt { ino, blk, count } => {
                roll(forks, &mut logged)?;
                forks.begin_transaction();
                let (work, more, logs) = forks.attr_unmap_blocks(ino, blk, count)?;
                logged = logs;
                if more {
                    queue.push_front(AttrTask::RemoveRmt { ino, blk, count });
                }
                push_group(&mut queue, work);
            }
            AttrTask::RemoveAttr(r) => {
                roll(forks, &mut logged)?;
                let (work, logs) = forks.attr_remove_incomplete(&r)?;
                logged = logs;
                if let Some(p) = r.then_add(forks)? {
                    queue.push_front(AttrTask::Add(p));
                }
                push_group(&mut queue, work);
            }
        }
        engine.settle_forces();
        engine.pin_blocks(std::mem::take(&mut forks.unpinned))?;
    }
    Ok(())
}

impl<R: ReadAt> attr::AttrSpace for Engine<'_, R> {
    fn near(&mut self, agno: u32, hint: u32, len: u32) -> super::ag::EditResult<Option<u32>> {
        self.store(agno)?.alloc_near_unmapped(hint, len)
    }
    fn bmbt_block(
        &mut self,
        agno: u32,
        hint: u32,
        owner: super::alloc::RmapOwner,
    ) -> super::ag::EditResult<Option<u32>> {
        self.store(agno)?.alloc_near_one_for(hint, owner)
    }
    fn let_go(&mut self, agno: u32) -> super::ag::EditResult<Vec<Work>> {
        self.take_deferred_work(agno)
    }
}

/// What follows an add: the work its transaction deferred first, then a
/// remote value's blocks, or the add again in the fork's new form.
fn next_add(
    queue: &mut std::collections::VecDeque<attr::AttrTask>,
    out: attr::AddOutcome,
    work: Vec<Work>,
) {
    use attr::{AddOutcome, AttrTask};
    match out {
        AddOutcome::Remote(p) => queue.push_front(AttrTask::RemoteSet(p, None)),
        AddOutcome::Again(p) => queue.push_front(AttrTask::Add(p)),
        AddOutcome::Done => {}
    }
    push_group(queue, work);
}

/// One transaction's deferred work, to run before what is queued.
fn push_group(queue: &mut std::collections::VecDeque<attr::AttrTask>, work: Vec<Work>) {
    if !work.is_empty() {
        queue.push_front(attr::AttrTask::Group(work));
    }
}

/// What an intent's recovery transaction left to finish afterwards.
enum Capture {
    /// Deferred work, a list per transaction that made it, with the
    /// inodes it holds.
    Work(Vec<Vec<Work>>, Vec<u64>),
    /// An attribute intent's chain (`attr`), its inode and the intent
    /// id.
    Attr(Vec<attr::AttrTask>, u64, u64),
    /// An exchange's chain (`xmiedit`), its two inodes and the intent id.
    Exchange(Vec<xmiedit::Task>, [u64; 2], u64),
}

/// Finish `intents` into `engine`; all or nothing.
pub fn finish_all<R: ReadAt>(
    fs: &Fs<R>,
    engine: &mut Engine<'_, R>,
    forks: &mut ForkEditor<'_, R>,
    intents: &[Unfinished],
    now: RecoveryTime,
) -> std::result::Result<(), EditError> {
    let mut captures: Vec<Capture> = Vec::new();
    for u in intents {
        if let (Some(ItemBody::Xmi(x)), XFS_LI_XMI) = (&u.body, u.kind.0) {
            let within = |e: EditError| {
                e.within(|| {
                    format!(
                        "XMI intent {:#x}: inodes {} and {}, offsets {} and {}, {} blocks",
                        u.id, x.inode1, x.inode2, x.startoff1, x.startoff2, x.blockcount
                    )
                })
            };
            let tasks = xmiedit::start(forks, x).map_err(within)?;
            captures.push(Capture::Exchange(tasks, [x.inode1, x.inode2], u.id));
            continue;
        }
        let mut held = Vec::new();
        let work = work_of(fs, u)?;
        let mut captured = Vec::new();
        if let (Some(ItemBody::MapIntent(m)), XFS_LI_BUI) = (&u.body, u.kind.0) {
            // The kernel logs one extent per BUI; each is finished in
            // turn, its reverse mapping deferred.
            for x in m.extents.iter() {
                let mut alloc = |agno: u32, hint: u32, o: RmapOwner| {
                    engine.store(agno)?.alloc_near_one_for(hint, o)
                };
                let more = forks.finish(x, &mut alloc).map_err(|e| {
                    e.within(|| {
                        format!(
                            "BUI intent {:#x}: {} inode {} offset {} length {}",
                            u.id, x.op, x.owner, x.startoff, x.len
                        )
                    })
                })?;
                // The first step is the recovery transaction's; the
                // intent, put back at the head of the captured work, goes
                // on step by step (what each step defers done before the
                // next), and what the first step deferred comes last.
                let mut more = more;
                if more.len() > 1 {
                    more.rotate_left(1);
                }
                captured.extend(more);
                held.push(x.owner);
                engine.settle_forces();
                engine.pin_blocks(std::mem::take(&mut forks.unpinned))?;
            }
        }
        if let (Some(ItemBody::Attri(a)), XFS_LI_ATTRI) = (&u.body, u.kind.0) {
            let within = |e: EditError| {
                e.within(|| {
                    format!(
                        "ATTRI intent {:#x}: {} inode {} name {:?}",
                        u.id,
                        a.op,
                        a.ino,
                        a.name.clone().unwrap_or_default()
                    )
                })
            };
            let tasks = forks.attr(a, &u.payload, now, engine).map_err(within)?;
            if !tasks.is_empty() {
                captures.push(Capture::Attr(tasks, a.ino, u.id));
                continue;
            }
        }
        // What the intent's own transaction defers.
        let mut own = Vec::new();
        for w in &work {
            let more = engine.finish(w).map_err(|e| {
                e.within(|| format!("{} intent {:#x}: {}", u.kind.name(), u.id, w.describe()))
            })?;
            own.extend(more);
        }
        if !own.is_empty() {
            captured.push(own);
        }
        captures.push(Capture::Work(captured, held));
    }
    for cap in captures {
        let (c, held) = match cap {
            Capture::Work(c, held) => (c, held),
            Capture::Attr(tasks, ino, id) => {
                run_attr_chain(forks, engine, tasks, ino, now)
                    .map_err(|e| e.within(|| format!("ATTRI intent {id:#x}")))?;
                continue;
            }
            Capture::Exchange(tasks, held, id) => {
                xmiedit::run_chain(forks, engine, tasks, held)
                    .map_err(|e| e.within(|| format!("XMI intent {id:#x}")))?;
                continue;
            }
        };
        // The inodes a capture holds are logged again at each roll of its
        // deferred work (xfs_defer_save_resources): one change count each.
        let before = engine.dfps;
        for t in c {
            engine.run(t)?;
        }
        let rolls = engine.dfps.saturating_sub(before);
        for ino in held {
            forks.bump_change_count(ino, rolls)?;
        }
    }
    Ok(())
}

/// The log items of AG work between two states (`prev`, changed blocks
/// by daddr, empty for the replayed image; `changes`, the blocks changed
/// now), and the daddrs of the blocks logged:
///
/// * a btree block written since `prev` (`touched`) is logged with every
///   chunk its buffer item holds dirty: those written since it was last
///   invalidated, over earlier checkpoints too;
/// * any other block (the AG headers) is logged if its bytes changed since
///   `prev`, with the chunks changed since the replayed image;
/// * a btree block freed (`stale`) is logged as a cancelled buffer.
fn ag_logged<R: ReadAt>(
    fs: &Fs<R>,
    ov: &Overlay,
    prev: &std::collections::BTreeMap<u64, Vec<u8>>,
    changes: &[(u64, Vec<u8>)],
    touched: &[(u64, std::collections::BTreeSet<usize>)],
    stale: &[(u64, u64)],
) -> Result<(Vec<super::ckpt::Item>, std::collections::BTreeSet<u64>)> {
    use super::ckpt::{buf_item, changed_chunks, stale_buf_item};
    let mut out = Vec::new();
    let mut daddrs = std::collections::BTreeSet::new();
    for (daddr, data) in changes {
        let dirty = match touched.iter().find(|(d, _)| d == daddr) {
            Some((_, t)) => t.clone(),
            None => {
                if prev.get(daddr) == Some(data) {
                    continue;
                }
                let len = u64::try_from(data.len()).unwrap_or(0);
                let before =
                    super::counters::read(fs, ov, "logged block", daddr.saturating_mul(512), len)?;
                let unlogged = if fs.geo.v5 {
                    super::ag::ag_stamp(data).unlogged()
                } else {
                    Vec::new()
                };
                changed_chunks(&before, data, &unlogged)
            }
        };
        if let Some(it) = buf_item(data.len(), &dirty) {
            out.push(it);
            daddrs.insert(*daddr);
        }
    }
    for (_, n) in stale {
        out.push(stale_buf_item(
            usize::try_from(n.saturating_mul(512)).unwrap_or(0),
        ));
    }
    Ok((out, daddrs))
}

/// The intents' work split where the kernel forced its log: the items of
/// each checkpoint, and for every block and inode (AG blocks by daddr,
/// the fork editor's by byte offset) the last checkpoint that logged it.
struct Split {
    items: Vec<Vec<super::ckpt::Item>>,
    ag_last: std::collections::BTreeMap<u64, usize>,
    fork_last: std::collections::BTreeMap<u64, usize>,
}

fn split_at_cuts<R: ReadAt>(
    fs: &Fs<R>,
    ov: &Overlay,
    intents: &[Unfinished],
    engine: &Engine<'_, R>,
    forks: &ForkEditor<'_, R>,
) -> Result<Split> {
    use super::ckpt::{done_item, intent_item};
    let mut split = Split {
        items: Vec::new(),
        ag_last: std::collections::BTreeMap::new(),
        fork_last: std::collections::BTreeMap::new(),
    };
    let mut prev_ag: std::collections::BTreeMap<u64, Vec<u8>> = std::collections::BTreeMap::new();
    let mut prev_forks: Option<&super::ckpt::ForkCut> = None;
    let mut prev_live: Vec<super::ckpt::LiveIntent> = Vec::new();
    let mut done: Vec<super::ckpt::Item> = intents
        .iter()
        .map(|u| done_item(u.kind, u.extents.len()))
        .collect();
    let final_ag = engine.changed()?;
    let final_touched = engine.touched()?;
    let final_cancels = engine.cancels()?;
    let last = engine.cuts.len();
    for k in 0..=last {
        let cut = engine.cuts.get(k);
        let (ag, touched, cancels) = match cut {
            Some(c) => (&c.ag, &c.touched, &c.cancels),
            None => (&final_ag, &final_touched, &final_cancels),
        };
        let mut items = std::mem::take(&mut done);
        let (ag_items, daddrs) = ag_logged(fs, ov, &prev_ag, ag, touched, cancels)?;
        items.extend(ag_items);
        for d in daddrs {
            split.ag_last.insert(d, k);
        }
        let (fork_items, offs) = forks.logged_between(prev_forks, cut.map(|c| &c.forks))?;
        items.extend(fork_items);
        for o in offs {
            split.fork_last.insert(o, k);
        }
        // The intents pending at the force before and done since, and
        // those logged since and pending at this one; one pending at both
        // is in neither.
        let live: &[super::ckpt::LiveIntent] = cut.map_or(&[], |c| &c.live);
        let has = |l: &[super::ckpt::LiveIntent], id: u64| l.iter().any(|x| x.id == id);
        items.extend(
            prev_live
                .iter()
                .filter(|p| !has(live, p.id))
                .map(|p| done_item(p.kind, p.extents)),
        );
        items.extend(
            live.iter()
                .filter(|c| !has(&prev_live, c.id))
                .map(|c| intent_item(c.kind, c.extents)),
        );
        prev_live = live.to_vec();
        if let Some(c) = cut {
            prev_ag = c.ag.iter().cloned().collect();
            prev_forks = Some(&c.forks);
        }
        split.items.push(items);
    }
    Ok(split)
}

/// The log items of the intents' checkpoint that the AG work makes: a
/// done item per intent, then the AG blocks as [`ag_logged`] logs them
/// from the replayed image.
fn logged<R: ReadAt>(
    fs: &Fs<R>,
    ov: &Overlay,
    intents: &[Unfinished],
    changes: &[(u64, Vec<u8>)],
    touched: &[(u64, std::collections::BTreeSet<usize>)],
    stale: &[(u64, u64)],
) -> Result<Vec<super::ckpt::Item>> {
    use super::ckpt::done_item;
    let mut out: Vec<_> = intents
        .iter()
        .map(|u| done_item(u.kind, u.extents.len()))
        .collect();
    let none = std::collections::BTreeMap::new();
    out.extend(ag_logged(fs, ov, &none, changes, touched, stale)?.0);
    Ok(out)
}

/// Finish every unfinished intent into `ov`, the changed blocks stamped
/// with `lsn`.
pub fn recover<R: ReadAt>(
    fs: &Fs<R>,
    ov: &mut Overlay,
    intents: &[Unfinished],
    lsn: Lsn,
    now: RecoveryTime,
) -> Result<IntentReport> {
    recover_in(fs, ov, intents, lsn, now, None)
}

/// How the kernel writes this log: its writer and its length in 512-byte
/// blocks.
pub type LogShape = (super::ckpt::LogWriter, u32);

/// [`recover`] on a log of the given shape: where the kernel forces its
/// log in the middle of the work (a buffer freed earlier in the work got
/// again), the work is split into checkpoints as the kernel writes them,
/// the first at `lsn` and each at the end of the one before, and every
/// block is stamped with the LSN of the last checkpoint that logged it.
pub fn recover_in<R: ReadAt>(
    fs: &Fs<R>,
    ov: &mut Overlay,
    intents: &[Unfinished],
    lsn: Lsn,
    now: RecoveryTime,
    shape: Option<LogShape>,
) -> Result<IntentReport> {
    let mut rep = IntentReport::default();
    if intents.is_empty() {
        return Ok(rep);
    }
    let (changes, fork_changes, stale) = {
        let mut engine = Engine::new(fs, ov);
        let mut forks = ForkEditor::new(fs, ov);
        let mut done = finish_all(fs, &mut engine, &mut forks, intents, now);
        let forces = engine.forces.clone();
        if done.is_ok() && shape.is_some() && !forces.is_empty() {
            // Again, recording the state at each force.
            engine = Engine::new(fs, ov);
            engine.cut_at.clone_from(&forces);
            forks = ForkEditor::new(fs, ov);
            done = finish_all(fs, &mut engine, &mut forks, intents, now);
        }
        match done {
            Ok(()) => {
                rep.finished = intents.iter().map(|u| u.id).collect();
                rep.work_items = engine.done.saturating_add(forks.done);
                let changes = engine.changed()?;
                rep.ag_touched = engine.touched()?;
                let stale = engine.stale()?;
                match shape {
                    Some((w, len))
                        if !engine.cuts.is_empty() && engine.cuts.len() == forces.len() =>
                    {
                        let split = split_at_cuts(fs, ov, intents, &engine, &forks)?;
                        let mut at = lsn;
                        let mut lsns = Vec::new();
                        let mut items = split.items;
                        let last = items.pop().unwrap_or_default();
                        for (it, at_tx) in items.iter().zip(&forces) {
                            let mut c = super::ckpt::checkpoint(it, w);
                            c.after_transactions = Some(*at_tx);
                            c.lsn = Some(at);
                            lsns.push(at);
                            at = super::ckpt::advance(at, c.blocks, len);
                            rep.forced.push(c);
                        }
                        lsns.push(at);
                        rep.last_start = Some(at);
                        rep.logged = last;
                        let lsn_of = |k: Option<&usize>| {
                            k.and_then(|k| lsns.get(*k)).copied().unwrap_or(lsn)
                        };
                        let fork_changes =
                            forks.into_changes_with(|off| lsn_of(split.fork_last.get(&off)))?;
                        for (daddr, data) in changes {
                            let at = lsn_of(split.ag_last.get(&daddr));
                            super::ag::stamp_into(ov, vec![(daddr, data)], at, fs.geo.v5);
                        }
                        (Vec::new(), fork_changes, stale)
                    }
                    _ => {
                        let touched = engine.touched()?;
                        rep.logged = logged(fs, ov, intents, &changes, &touched, &stale)?;
                        rep.logged.extend(forks.logged()?);
                        (changes, forks.into_changes(lsn)?, stale)
                    }
                }
            }
            Err(EditError::Read(e)) => return Err(e),
            Err(u) => {
                rep.not_finished = Some(u.to_string());
                (Vec::new(), Vec::new(), Vec::new())
            }
        }
    };
    super::ag::stamp_into(ov, changes, lsn, fs.geo.v5);
    for (daddr, n) in stale {
        ov.revert(daddr, n);
    }
    for (daddr, data) in fork_changes {
        ov.put(daddr, &data);
    }
    Ok(rep)
}
