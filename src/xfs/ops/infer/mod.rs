//! Naming the operations that explain each checkpoint's changes, and
//! counting the transactions each cost.
//!
//! | file              | holds                                                    | kernel                                   |
//! |-------------------|----------------------------------------------------------|------------------------------------------|
//! | `mod.rs`          | the inference over transactions and checkpoints, typed logs, the report | -                          |
//! | `entries.rs`      | create, mkdir, mknod, symlink, link, unlink, rmdir, rename | `xfs_create`, `xfs_link`, `xfs_remove`, `xfs_rename` (`xfs_inode.c`) |
//! | `xattr.rs`        | setxattr, removexattr                                    | `xfs_attr.c`, `xfs_attr_leaf.c`          |
//! | `fields.rs`       | write, truncate, setattr                                 | `xfs_iops.c`, `xfs_file.c`               |
//! | `transactions.rs` | transactions per operation: rises and rolls              | `xfs_trans_roll`, `xfs_defer.c`, `xfs_parent.c`, `xfs_rmap.c`, `xfs_ialloc.c` |

use super::track::{Before, Changes, InoState, Names, Tracker};
use super::typed::{self, Role};
use super::{
    CheckpointOps, InodeHistory, KindTotals, Operation, OpsReport, KINDS, MAX_HISTORIES,
    MAX_LISTED_OPS,
};
use crate::xfs::format::dinode::{S_IFDIR, S_IFLNK, S_IFMT, S_IFREG};
use crate::xfs::fs::Fs;
use crate::xfs::log::items::{Item, ItemBody};
use crate::xfs::read::ReadAt;
use crate::xfs::replay::walk::RTrans;
use std::collections::{BTreeMap, HashMap};

mod entries;
mod fields;
mod transactions;
mod xattr;

/// The kind of operation that makes an inode of `mode`.
fn create_kind(mode: u16) -> &'static str {
    match mode & S_IFMT {
        S_IFREG => "create",
        S_IFDIR => "mkdir",
        S_IFLNK => "symlink",
        _ => "mknod",
    }
}

fn name_text(n: &[u8]) -> String {
    String::from_utf8_lossy(n).into_owned()
}

/// An operation whose inode may show more transactions later.
#[derive(Clone, Copy, Debug)]
struct Pending {
    kind: &'static str,
    /// Index of the operation (`None` past the listing cap).
    op: Option<u32>,
}

/// What a checkpoint shows of the inodes it logged: the state of each
/// before and after it, and how often its change counter rose.
pub(super) struct Seen<'c> {
    ch: &'c Changes,
    inodes: BTreeMap<u64, (Before, Option<InoState>)>,
    /// Transactions per inode from the change counter.
    bumps: BTreeMap<u64, u64>,
}

impl Seen<'_> {
    /// Whether the inode was made in this checkpoint (free before, or a new
    /// generation).
    fn created(&self, ino: u64) -> bool {
        self.inodes.get(&ino).is_some_and(|(b, a)| {
            a.as_ref().is_some_and(InoState::allocated)
                && match b {
                    Before::Free => true,
                    Before::Known(s) => {
                        !s.allocated() || a.as_ref().is_some_and(|a| a.gen != s.gen)
                    }
                    Before::Unknown => false,
                }
        })
    }

    /// Whether the inode's state before the checkpoint is known and
    /// passes `f` (unknown states pass: nothing is dropped for them).
    fn before_has(&self, ino: u64, f: fn(&InoState) -> bool) -> bool {
        match self.inodes.get(&ino).map(|(b, _)| b) {
            Some(Before::Known(s)) if s.allocated() => f(s),
            Some(Before::Known(_) | Before::Free) => false,
            _ => true,
        }
    }

    fn mode_before(&self, ino: u64) -> Option<u16> {
        match self.inodes.get(&ino) {
            Some((Before::Known(s), _)) if s.allocated() => Some(s.mode),
            Some((_, a)) => a.as_ref().map(|a| a.mode),
            None => None,
        }
    }

    fn state_of(&self, ino: u64) -> Option<InoState> {
        self.inodes.get(&ino).and_then(|(b, a)| {
            a.clone().or_else(|| match b {
                Before::Known(s) => Some(s.clone()),
                _ => None,
            })
        })
    }

    fn rises_of(&self, ino: u64) -> u64 {
        self.bumps.get(&ino).copied().unwrap_or(0)
    }
}

/// A new operation of `kind` on inode `ino`, nothing else known yet.
fn new_op(kind: &'static str, ino: u64) -> Operation {
    Operation {
        kind,
        ino,
        dir: None,
        name: None,
        to_dir: None,
        to_name: None,
        path: None,
        to_path: None,
        links: Vec::new(),
        transactions: 0,
        items: 0,
        bytes: 0,
        why: Vec::new(),
        later_checkpoints: Vec::new(),
    }
}

/// An operation being built for one checkpoint.
struct NewOp {
    op: Operation,
    /// Takes the transactions beyond one on its inode (inactivation,
    /// writeback, rolls).
    variable: bool,
    /// Its own transaction does not raise the change count (a write's
    /// timestamp update logs the times, not the core).
    silent: bool,
}

pub struct Inference<'f, R: ReadAt> {
    tracker: Tracker<'f, R>,
    ops: Vec<Operation>,
    /// Operations past the listing cap: counted, not listed.
    unlisted: u64,
    totals: BTreeMap<&'static str, KindTotals>,
    other: BTreeMap<&'static str, u64>,
    unexplained: u64,
    checkpoints: Vec<CheckpointOps>,
    histories: HashMap<u64, InodeHistory>,
    pending: HashMap<u64, Pending>,
    /// Typed logs: the attribute-fork additions waiting for their set.
    addafork: HashMap<u64, u64>,
    typed_seen: bool,
    checkpoint_seen: bool,
    created_and_removed: u64,
    notes: Vec<String>,
}

impl<'f, R: ReadAt> Inference<'f, R> {
    pub fn new(fs: &'f Fs<R>) -> Self {
        Inference {
            tracker: Tracker::new(fs),
            ops: Vec::new(),
            unlisted: 0,
            totals: KINDS.iter().map(|k| (*k, KindTotals::default())).collect(),
            other: BTreeMap::new(),
            unexplained: 0,
            checkpoints: Vec::new(),
            histories: HashMap::new(),
            pending: HashMap::new(),
            addafork: HashMap::new(),
            typed_seen: false,
            checkpoint_seen: false,
            created_and_removed: 0,
            notes: Vec::new(),
        }
    }

    pub fn note(&mut self, s: String) {
        if self.notes.len() < 100 {
            self.notes.push(s);
        }
    }

    fn total(&mut self, kind: &'static str) -> &mut KindTotals {
        self.totals.entry(kind).or_default()
    }

    /// Record a finished operation: its totals, its listing, its history.
    fn push(&mut self, op: Operation, cp: &mut CheckpointOps) -> Option<u32> {
        let t = self.total(op.kind);
        t.operations = t.operations.saturating_add(1);
        t.transactions = t.transactions.saturating_add(op.transactions);
        t.items = t.items.saturating_add(op.items);
        t.bytes = t.bytes.saturating_add(op.bytes);
        if self.ops.len() >= MAX_LISTED_OPS {
            self.unlisted = self.unlisted.saturating_add(1);
            return None;
        }
        let idx = u32::try_from(self.ops.len()).ok()?;
        if self.histories.len() < MAX_HISTORIES || self.histories.contains_key(&op.ino) {
            let h = self
                .histories
                .entry(op.ino)
                .or_insert_with(|| InodeHistory {
                    ino: op.ino,
                    changecount_before: None,
                    changecount_after: None,
                    transactions: Vec::new(),
                    operations: Vec::new(),
                });
            h.operations.push(idx);
        }
        cp.operations.push(idx);
        self.ops.push(op);
        Some(idx)
    }

    /// Add follow-up transactions to an earlier operation.
    fn follow_up(&mut self, p: Pending, n: u64, cp_index: u32, why: String) {
        let t = self.total(p.kind);
        t.transactions = t.transactions.saturating_add(n);
        if let Some(op) =
            p.op.and_then(|i| self.ops.get_mut(usize::try_from(i).ok()?))
        {
            op.transactions = op.transactions.saturating_add(n);
            if op.why.len() < 8 {
                op.why.push(why);
            }
            if op.later_checkpoints.last() != Some(&cp_index) {
                op.later_checkpoints.push(cp_index);
            }
        }
    }

    /// One committed transaction of the log.
    pub fn transaction(&mut self, t: &RTrans, items: &[Item]) {
        let index = u32::try_from(self.checkpoints.len()).unwrap_or(u32::MAX);
        let checkpoint = typed::is_checkpoint(t.th_type, self.typed_seen);
        let mut cp = CheckpointOps {
            index,
            tid: t.tid,
            lsn: t.lsn,
            th_type: t.th_type,
            type_name: (!checkpoint).then(|| typed::type_name(t.th_type)),
            items: 0,
            bytes: 0,
            items_by_type: super::Counts::default(),
            bytes_by_type: super::Counts::default(),
            operations: Vec::new(),
            inodes: 0,
            unexplained: Vec::new(),
            shared_items: 0,
            shared_bytes: 0,
        };
        let mut item_bytes = Vec::with_capacity(items.len());
        for (it, item) in t.items.iter().zip(items) {
            let bytes: u64 = it
                .regions
                .iter()
                .map(|r| u64::try_from(r.len()).unwrap_or(0))
                .sum();
            item_bytes.push(bytes);
            let name = item.kind.name();
            cp.items = cp.items.saturating_add(1);
            cp.bytes = cp.bytes.saturating_add(bytes);
            cp.items_by_type.add(name, 1);
            cp.bytes_by_type.add(name, bytes);
        }
        // Follow the state either way: typed logs feed later checkpoints.
        let lsn = t.lsn.raw();
        let mut changes = Changes::default();
        for item in items {
            if let ItemBody::Icreate(c) = &item.body {
                if let Some(first) = self.tracker.chunk_first_ino(c.ag, c.agbno) {
                    self.tracker.chunk(first, c.count, &mut changes);
                }
            }
        }
        let mut owners: Vec<Option<u64>> = Vec::with_capacity(items.len());
        for (it, item) in t.items.iter().zip(items) {
            let owner = match &item.body {
                ItemBody::Inode(i) => {
                    self.tracker.inode(it, i, lsn, &mut changes);
                    Some(i.ino)
                }
                ItemBody::Buf(b) => self.tracker.buffer(it, b, lsn, &mut changes),
                _ => None,
            };
            owners.push(owner);
        }
        cp.inodes = u64::try_from(changes.inodes.len()).unwrap_or(u64::MAX);
        if checkpoint {
            self.checkpoint_seen = true;
            self.checkpoint(&changes, &mut cp, &owners, &item_bytes);
        } else {
            self.typed_seen = true;
            self.typed(t.th_type, &changes, &mut cp, &item_bytes);
        }
        self.checkpoints.push(cp);
    }

    /// A transaction that says what it is.
    fn typed(&mut self, th_type: u32, ch: &Changes, cp: &mut CheckpointOps, item_bytes: &[u64]) {
        let inos: Vec<u64> = ch.inodes.iter().map(|c| c.ino).collect();
        let items = cp.items;
        let bytes: u64 = item_bytes.iter().sum();
        // The inode the transaction is about: a new one, else one that is
        // not a directory, else the first.
        let primary = ch
            .inodes
            .iter()
            .find(|c| {
                matches!(c.before, Before::Free)
                    && c.after.as_ref().is_some_and(InoState::allocated)
            })
            .or_else(|| {
                ch.inodes
                    .iter()
                    .find(|c| c.after.as_ref().is_some_and(|a| !a.is_dir()))
            })
            .or_else(|| ch.inodes.first())
            .map_or(0, |c| c.ino);
        let tname = typed::type_name(th_type);
        match typed::role(th_type) {
            Role::Op(kind) => {
                let mut kind = kind;
                if kind == "create" {
                    if let Some(a) = ch
                        .inodes
                        .iter()
                        .find(|c| c.ino == primary)
                        .and_then(|c| c.after.as_ref())
                    {
                        kind = create_kind(a.mode);
                    }
                }
                let mut transactions = 1u64;
                let mut why = vec![format!("a {tname} transaction")];
                if kind == "setxattr" {
                    if let Some(n) = self.addafork.remove(&primary) {
                        transactions = transactions.saturating_add(n);
                        why.push(format!(
                            "{n} ADDAFORK transaction(s) before it on inode {primary}"
                        ));
                    }
                }
                let op = Operation {
                    transactions,
                    items,
                    bytes,
                    why,
                    ..new_op(kind, primary)
                };
                let idx = self.push(op, cp);
                let p = Pending { kind, op: idx };
                for ino in inos {
                    self.pending.insert(ino, p);
                }
            }
            Role::FollowUp { fallback } => {
                let found = inos.iter().find_map(|i| self.pending.get(i).copied());
                match found {
                    Some(p) => {
                        let t = self.total(p.kind);
                        t.items = t.items.saturating_add(items);
                        t.bytes = t.bytes.saturating_add(bytes);
                        self.follow_up(p, 1, cp.index, format!("a {tname} transaction after it"));
                    }
                    None => {
                        let t = self.total(fallback);
                        t.transactions = t.transactions.saturating_add(1);
                        t.items = t.items.saturating_add(items);
                        t.bytes = t.bytes.saturating_add(bytes);
                        self.note(format!(
                            "transaction {} ({tname}) follows an operation that is not in the live log: counted as a {fallback} transaction",
                            cp.index
                        ));
                    }
                }
            }
            Role::AddAttrFork => {
                let c = self.addafork.entry(primary).or_insert(0);
                *c = c.saturating_add(1);
                let t = self.total("setxattr");
                t.items = t.items.saturating_add(items);
                t.bytes = t.bytes.saturating_add(bytes);
            }
            Role::Other | Role::Checkpoint => {
                let c = self.other.entry(tname).or_insert(0);
                *c = c.saturating_add(1);
                cp.shared_items = cp.shared_items.saturating_add(items);
                cp.shared_bytes = cp.shared_bytes.saturating_add(bytes);
            }
        }
    }

    /// A delayed-logging checkpoint: find the operations in its changes.
    fn checkpoint(
        &mut self,
        ch: &Changes,
        cp: &mut CheckpointOps,
        owners: &[Option<u64>],
        item_bytes: &[u64],
    ) {
        // Each inode's state before and after the checkpoint.
        let mut inodes: BTreeMap<u64, (Before, Option<InoState>)> = BTreeMap::new();
        for c in &ch.inodes {
            let e = inodes
                .entry(c.ino)
                .or_insert_with(|| (c.before.clone(), None));
            if c.after.is_some() {
                e.1 = c.after.clone();
            }
        }
        let mut seen = Seen {
            ch,
            inodes,
            bumps: BTreeMap::new(),
        };
        // Transactions per inode from the change counter.
        let mut bumps: BTreeMap<u64, u64> = BTreeMap::new();
        for (ino, (b, a)) in &seen.inodes {
            let Some(after) = a.as_ref().and_then(|a| a.changecount) else {
                continue;
            };
            let n = match b {
                Before::Known(s) if s.allocated() && !seen.created(*ino) => match s.changecount {
                    Some(c) if after >= c => after.saturating_sub(c),
                    _ => continue,
                },
                Before::Known(_) | Before::Free => after.saturating_sub(1),
                Before::Unknown => continue,
            };
            bumps.insert(*ino, n);
            if self.histories.len() < MAX_HISTORIES || self.histories.contains_key(ino) {
                let h = self.histories.entry(*ino).or_insert_with(|| InodeHistory {
                    ino: *ino,
                    changecount_before: match b {
                        Before::Known(s) if s.allocated() => s.changecount,
                        _ => None,
                    },
                    changecount_after: None,
                    transactions: Vec::new(),
                    operations: Vec::new(),
                });
                h.changecount_after = Some(after);
                if n > 0 {
                    h.transactions.push((cp.index, n));
                }
            }
        }
        seen.bumps = bumps;

        let mut new_ops: Vec<NewOp> = Vec::new();
        let victims = entries::entry_ops(&seen, cp, &mut new_ops);
        let (acl_rewrites, attr_owners) = self.attr_ops(&seen, &mut new_ops);
        self.field_ops(&seen, &victims, &attr_owners, &acl_rewrites, &mut new_ops);
        let held_left = self.count_rises(&seen, cp, &mut new_ops, &victims);
        self.count_rolls(&seen, cp, &mut new_ops, held_left);

        // Items: those about an operation's inodes go to it.
        let mut touching: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        for (k, o) in new_ops.iter().enumerate() {
            for i in [Some(o.op.ino), o.op.dir, o.op.to_dir]
                .into_iter()
                .flatten()
            {
                let v = touching.entry(i).or_default();
                if !v.contains(&k) {
                    v.push(k);
                }
            }
        }
        for (owner, bytes) in owners.iter().zip(item_bytes) {
            let takers = owner.and_then(|o| touching.get(&o));
            match takers {
                Some(ks) if !ks.is_empty() => {
                    let n = u64::try_from(ks.len()).unwrap_or(1).max(1);
                    for (j, k) in ks.iter().enumerate() {
                        if let Some(o) = new_ops.get_mut(*k) {
                            let share = bytes.checked_div(n).unwrap_or(0);
                            let rest = if j == 0 {
                                bytes.checked_rem(n).unwrap_or(0)
                            } else {
                                0
                            };
                            o.op.bytes = o.op.bytes.saturating_add(share.saturating_add(rest));
                            if j == 0 {
                                o.op.items = o.op.items.saturating_add(1);
                            }
                        }
                    }
                }
                _ => {
                    cp.shared_items = cp.shared_items.saturating_add(1);
                    cp.shared_bytes = cp.shared_bytes.saturating_add(*bytes);
                }
            }
        }

        // Record, and remember what may get follow-ups.
        let mut pushed: Vec<Option<u32>> = Vec::with_capacity(new_ops.len());
        for o in new_ops {
            let kind = o.op.kind;
            let ino = o.op.ino;
            let idx = self.push(o.op, cp);
            pushed.push(idx);
            let waits = match kind {
                "unlink" | "rmdir" => seen
                    .state_of(ino)
                    .is_some_and(|s| s.allocated() && s.nlink == 0),
                "write" | "truncate" => true,
                _ => false,
            };
            if waits {
                self.pending.insert(ino, Pending { kind, op: idx });
            } else if self.pending.get(&ino).is_some_and(|p| p.kind == "write")
                && kind != "setxattr"
            {
                self.pending.remove(&ino);
            }
        }
        for (v, r) in &victims {
            // A replaced inode still open waits for its inactivation.
            if seen
                .state_of(*v)
                .is_some_and(|s| s.allocated() && s.nlink == 0)
            {
                let op = pushed.get(*r).copied().flatten();
                self.pending.insert(*v, Pending { kind: "rename", op });
            }
        }
        for (ino, (_, a)) in &seen.inodes {
            if a.as_ref().is_some_and(|a| !a.allocated()) {
                self.pending.remove(ino);
            }
        }
    }

    /// Entries as directories held them before the log changed them.
    pub fn take_entries_before(&mut self) -> super::track::EntriesBefore {
        self.tracker.take_entries_before()
    }

    pub fn finish(mut self, clean: bool) -> OpsReport {
        if self.unlisted > 0 {
            self.note(format!(
                "{} operations past the first {MAX_LISTED_OPS} are counted but not listed",
                self.unlisted
            ));
        }
        let (inodes, blocks) = self.tracker.followed();
        if inodes > 0 {
            self.note(format!(
                "{inodes} inodes and {blocks} directory or attribute blocks followed"
            ));
        }
        let mut notes = self.notes;
        notes.append(&mut self.tracker.notes);
        let log_form = match (self.checkpoint_seen, self.typed_seen) {
            (_, false) => "checkpoints",
            (false, true) => "typed",
            (true, true) => "mixed",
        };
        OpsReport {
            clean,
            log_form,
            operations: self
                .totals
                .iter()
                .map(|(k, t)| (*k, t.operations))
                .collect(),
            transactions: self
                .totals
                .iter()
                .map(|(k, t)| (*k, t.transactions))
                .collect(),
            by_kind: self.totals,
            other_transactions: self.other,
            unexplained_transactions: self.unexplained,
            created_and_removed: self.created_and_removed,
            checkpoints: self.checkpoints,
            operation_list: self.ops,
            inodes: {
                let mut v: Vec<InodeHistory> = self.histories.into_values().collect();
                v.sort_unstable_by_key(|h| h.ino);
                v
            },
            notes,
        }
    }
}

/// The names an owner had before a checkpoint: without those read from
/// blocks when its fork had no blocks then (a block freed and reused
/// still holds the names of its last life).
fn effective_before(nc: &super::track::NameChanges, owner: u64, had_blocks: bool) -> Names {
    let mut b = nc.before.get(&owner).cloned().unwrap_or_default();
    if !had_blocks {
        if let Some(stale) = nc.block_before.get(&owner) {
            for (k, v) in stale {
                if b.get(k) == Some(v) {
                    b.remove(k);
                }
            }
        }
    }
    b
}
