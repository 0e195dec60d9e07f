//! Naming the operations that explain each checkpoint's changes, and
//! counting the transactions each cost.

use super::track::{Before, Changes, InoState, Names, Tracker, REMOTE_VALUE};
use super::typed::{self, Role};
use super::{
    CheckpointOps, InodeHistory, KindTotals, Operation, OpsReport, Unexplained, KINDS,
    MAX_HISTORIES, MAX_LISTED_OPS,
};
use crate::xfs::format::attr::{XFS_ATTR_PARENT, XFS_ATTR_ROOT, XFS_ATTR_SECURE};
use crate::xfs::format::dinode::{S_IFDIR, S_IFLNK, S_IFMT, S_IFREG};
use crate::xfs::fs::Fs;
use crate::xfs::log::items::{Item, ItemBody};
use crate::xfs::read::ReadAt;
use crate::xfs::replay::walk::RTrans;
use std::collections::{BTreeMap, BTreeSet, HashMap};

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
                    kind,
                    ino: primary,
                    dir: None,
                    name: None,
                    to_dir: None,
                    to_name: None,
                    path: None,
                    to_path: None,
                    links: Vec::new(),
                    transactions,
                    items,
                    bytes,
                    why,
                    later_checkpoints: Vec::new(),
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
        let created = |ino: u64| -> bool {
            inodes.get(&ino).is_some_and(|(b, a)| {
                a.as_ref().is_some_and(InoState::allocated)
                    && match b {
                        Before::Free => true,
                        Before::Known(s) => {
                            !s.allocated() || a.as_ref().is_some_and(|a| a.gen != s.gen)
                        }
                        Before::Unknown => false,
                    }
            })
        };
        // Whether the inode's state before the checkpoint is known and
        // passes `f` (unknown states pass: nothing is dropped for them).
        let before_has = |ino: u64, f: fn(&InoState) -> bool| -> bool {
            match inodes.get(&ino).map(|(b, _)| b) {
                Some(Before::Known(s)) if s.allocated() => f(s),
                Some(Before::Known(_) | Before::Free) => false,
                _ => true,
            }
        };
        let mode_before = |ino: u64| -> Option<u16> {
            match inodes.get(&ino) {
                Some((Before::Known(s), _)) if s.allocated() => Some(s.mode),
                Some((_, a)) => a.as_ref().map(|a| a.mode),
                None => None,
            }
        };
        let state_of = |ino: u64| -> Option<InoState> {
            inodes.get(&ino).and_then(|(b, a)| {
                a.clone().or_else(|| match b {
                    Before::Known(s) => Some(s.clone()),
                    _ => None,
                })
            })
        };
        // Transactions per inode from the change counter.
        let mut bumps: BTreeMap<u64, u64> = BTreeMap::new();
        for (ino, (b, a)) in &inodes {
            let Some(after) = a.as_ref().and_then(|a| a.changecount) else {
                continue;
            };
            let n = match b {
                Before::Known(s) if s.allocated() && !created(*ino) => match s.changecount {
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

        let mut new_ops: Vec<NewOp> = Vec::new();
        let mk = |kind: &'static str, ino: u64| Operation {
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
        };

        // Directory entries added and removed.
        let unknown_dirs: BTreeSet<u64> = ch.dirs.unknown.iter().copied().collect();
        let mut added: Vec<(u64, Vec<u8>, u64)> = Vec::new();
        let mut removed: Vec<(u64, Vec<u8>, u64)> = Vec::new();
        let empty = Names::new();
        let dir_owners: BTreeSet<u64> = ch
            .dirs
            .before
            .keys()
            .chain(ch.dirs.after.keys())
            .copied()
            .collect();
        for d in &dir_owners {
            if unknown_dirs.contains(d) {
                continue;
            }
            let had_blocks = before_has(*d, |s| s.format != 1);
            let b = effective_before(&ch.dirs, *d, had_blocks);
            let b = &b;
            let a = ch.dirs.after.get(d).unwrap_or(&empty);
            for (n, i) in b {
                if a.get(n) != Some(i) {
                    removed.push((*d, n.clone(), *i));
                }
            }
            for (n, i) in a {
                if b.get(n) != Some(i) {
                    added.push((*d, n.clone(), *i));
                }
            }
        }
        if !unknown_dirs.is_empty() {
            cp.unexplained.push(Unexplained {
                ino: unknown_dirs.iter().next().copied().unwrap_or(0),
                transactions: 0,
                why: format!(
                    "{} directories were written to disk after this checkpoint: their entries before it are not known",
                    unknown_dirs.len()
                ),
            });
        }
        let mut removed_used = vec![false; removed.len()];
        // Renames (an entry's inode removed in one place and added in
        // another), then creates and links.
        let mut renamed_in: BTreeSet<u64> = BTreeSet::new();
        // New inodes whose create was found (their other names are links).
        let mut made: BTreeSet<u64> = BTreeSet::new();
        for k in addition_order(&added) {
            let Some((d, n, ino)) = added.get(k) else {
                continue;
            };
            // An inode made anew here (a new generation) is not the one a
            // removed entry named, even with the same number.
            let from = removed
                .iter()
                .enumerate()
                .filter(|_| !created(*ino))
                .find(|(k, r)| r.2 == *ino && !removed_used.get(*k).copied().unwrap_or(true));
            if let Some((k, (fd, fname, _))) = from {
                if let Some(u) = removed_used.get_mut(k) {
                    *u = true;
                }
                let mut op = mk("rename", *ino);
                op.dir = Some(*fd);
                op.name = Some(name_text(fname));
                if bumps.get(ino).copied().unwrap_or(0) > 1 {
                    op.why.push("or a link to the new name and an unlink of the old one: the checkpoint keeps only the net move".into());
                }
                op.to_dir = Some(*d);
                op.to_name = Some(name_text(n));
                renamed_in.insert(*ino);
                new_ops.push(NewOp {
                    op,
                    variable: true,
                    silent: false,
                });
            } else if created(*ino) && made.insert(*ino) {
                let kind = state_of(*ino).map_or("create", |s| create_kind(s.mode));
                let mut op = mk(kind, *ino);
                op.dir = Some(*d);
                op.name = Some(name_text(n));
                let names = added.iter().filter(|a| a.2 == *ino).count();
                if names > 1 {
                    op.why.push(format!(
                        "one of the {names} names it got in this checkpoint: which one it was made with is not in the log"
                    ));
                }
                new_ops.push(NewOp {
                    op,
                    variable: false,
                    silent: false,
                });
            } else {
                let mut op = mk("link", *ino);
                op.dir = Some(*d);
                op.name = Some(name_text(n));
                new_ops.push(NewOp {
                    op,
                    variable: false,
                    silent: false,
                });
            }
        }
        // Removed entries: victims of a rename onto their name, or
        // removals.
        let mut victims: Vec<(u64, usize)> = Vec::new();
        for k in removal_order(&removed) {
            let Some((d, n, ino)) = removed.get(k) else {
                continue;
            };
            if removed_used.get(k).copied().unwrap_or(true) {
                continue;
            }
            let onto = new_ops.iter().position(|o| {
                o.op.kind == "rename"
                    && o.op.to_dir == Some(*d)
                    && o.op.to_name.as_deref() == Some(name_text(n).as_str())
            });
            if let Some(r) = onto {
                victims.push((*ino, r));
                if let Some(o) = new_ops.get_mut(r) {
                    o.op.why.push(format!("replaced inode {ino}"));
                }
                continue;
            }
            let is_dir = mode_before(*ino).is_some_and(|m| m & S_IFMT == S_IFDIR);
            let mut op = mk(if is_dir { "rmdir" } else { "unlink" }, *ino);
            op.dir = Some(*d);
            op.name = Some(name_text(n));
            new_ops.push(NewOp {
                op,
                variable: true,
                silent: false,
            });
        }
        // New inodes with no entry found (their directory block not read).
        for ino in inodes.keys() {
            if created(*ino) && !new_ops.iter().any(|o| o.op.ino == *ino) {
                let kind = state_of(*ino).map_or("create", |s| create_kind(s.mode));
                let mut op = mk(kind, *ino);
                op.why
                    .push("its directory entry was not found in this checkpoint".into());
                new_ops.push(NewOp {
                    op,
                    variable: false,
                    silent: false,
                });
            }
        }

        // Attributes set, replaced and removed.
        let unknown_attrs: BTreeSet<u64> = ch.attrs.unknown.iter().copied().collect();
        let mut acl_rewrites: BTreeSet<u64> = BTreeSet::new();
        let a_has_blocks = |ino: u64| state_of(ino).is_some_and(|s| s.anextents > 0);
        let rises_of = |ino: u64| bumps.get(&ino).copied().unwrap_or(0);
        let attr_owners: BTreeSet<u64> = ch
            .attrs
            .before
            .keys()
            .chain(ch.attrs.after.keys())
            .copied()
            .collect();
        for o in &attr_owners {
            if unknown_attrs.contains(o) {
                continue;
            }
            // A removed inode's attributes go with it (inactivation).
            if state_of(*o).is_none_or(|s| !s.allocated() || s.nlink == 0) {
                continue;
            }
            let had_blocks = before_has(*o, |s| s.anextents > 0);
            let b = effective_before(&ch.attrs, *o, had_blocks);
            let b = &b;
            let a = ch.attrs.after.get(o).unwrap_or(&empty);
            let is_new = created(*o);
            let ns = |k: &[u8]| k.first().copied().unwrap_or(0);
            let show = |k: &[u8]| name_text(k.get(1..).unwrap_or(&[]));
            for (k, v) in a {
                if ns(k) & XFS_ATTR_PARENT != 0 || b.get(k) == Some(v) {
                    continue;
                }
                if is_new && ns(k) & (XFS_ATTR_ROOT | XFS_ATTR_SECURE) != 0 {
                    if let Some(c) = new_ops.iter_mut().find(|c| c.op.ino == *o) {
                        c.op.why
                            .push(format!("inherits attribute {} at creation", show(k)));
                        c.variable = true;
                    }
                    continue;
                }
                // chmod of a file with an access ACL rewrites the ACL in a
                // transaction of its own: part of the setattr.
                let mode_changed = matches!(inodes.get(o), Some((Before::Known(bs), Some(af))) if bs.mode != af.mode);
                if ns(k) & XFS_ATTR_ROOT != 0
                    && k.get(1..) == Some(&b"SGI_ACL_FILE"[..])
                    && mode_changed
                    && b.contains_key(k)
                {
                    acl_rewrites.insert(*o);
                    continue;
                }
                let replace = b.contains_key(k);
                let mut op = mk("setxattr", *o);
                op.name = Some(show(k));
                if replace && had_blocks && a_has_blocks(*o) {
                    // A value replaced in a leaf: the new entry is added
                    // incomplete, then flipped with the old one in a
                    // transaction that logs only the leaf.
                    op.transactions = op.transactions.saturating_add(1);
                    op.why
                        .push("replaced a value in a leaf block (one more transaction)".into());
                }
                if v & REMOTE_VALUE != 0 {
                    op.why.push("a remote value (in blocks of its own)".into());
                }
                new_ops.push(NewOp {
                    op,
                    variable: true,
                    silent: false,
                });
            }
            let changed = a
                .iter()
                .any(|(k, v)| ns(k) & XFS_ATTR_PARENT == 0 && b.get(k) != Some(v))
                || b.keys()
                    .any(|k| ns(k) & XFS_ATTR_PARENT == 0 && !a.contains_key(k));
            // Parent pointers (attributes the kernel keeps for each of the
            // inode's entries) change with the entries, not by a set.
            let parents_changed = a
                .iter()
                .any(|(k, v)| ns(k) & XFS_ATTR_PARENT != 0 && b.get(k) != Some(v))
                || b.keys()
                    .any(|k| ns(k) & XFS_ATTR_PARENT != 0 && !a.contains_key(k));
            if !changed
                && !parents_changed
                && !is_new
                && !acl_rewrites.contains(o)
                && rises_of(*o) > 0
            {
                // An attribute block rewritten with the same names and
                // values: a value replaced by an equal one.
                let mut op = mk("setxattr", *o);
                op.why.push("an attribute block was rewritten with the same names and values: a value replaced by an equal one".into());
                if had_blocks && a_has_blocks(*o) {
                    op.transactions = op.transactions.saturating_add(1);
                    op.why
                        .push("replaced a value in a leaf block (one more transaction)".into());
                }
                new_ops.push(NewOp {
                    op,
                    variable: true,
                    silent: false,
                });
            }
            for k in b.keys() {
                if ns(k) & XFS_ATTR_PARENT != 0 || a.contains_key(k) {
                    continue;
                }
                let mut op = mk("removexattr", *o);
                op.name = Some(show(k));
                // A fork that is more than one leaf block (a node, or a leaf
                // with remote values beside it) takes the node path: the
                // name is removed, then the tree fixed up after a roll that
                // logs only its blocks.
                let node_path = (!state_of(*o).is_some_and(|s| s.is_dir())
                    && self.tracker.node_form(*o))
                    || before_has(*o, |s| s.anextents > 1)
                    || b.values().any(|v| v & REMOTE_VALUE != 0);
                // (Freeing a remote value's own blocks logs the inode at
                // each step: its rises count those.)
                let removed_remote = b.get(k).is_some_and(|v| v & REMOTE_VALUE != 0);
                if node_path && !removed_remote {
                    op.transactions = op.transactions.saturating_add(1);
                    op.why.push(
                        "removed from a node-form attribute fork (one more transaction)".into(),
                    );
                }
                // Freeing a remote value's blocks rolls, logging the inode.
                new_ops.push(NewOp {
                    op,
                    variable: true,
                    silent: false,
                });
            }
        }

        // A new inode whose access time is past its creation time had its
        // times set after the create (`touch`): a setattr.
        for (ino, (_, a)) in &inodes {
            let Some(a) = a else { continue };
            if !created(*ino) {
                continue;
            }
            if a.crtime.is_some_and(|c| c != a.atime) {
                new_ops.push(NewOp {
                    op: mk("setattr", *ino),
                    variable: false,
                    silent: false,
                });
            }
            // A new regular file with data was written.
            if a.mode & S_IFMT == S_IFREG && (a.size > 0 || a.nextents > 0) {
                new_ops.push(NewOp {
                    op: mk("write", *ino),
                    variable: true,
                    silent: false,
                });
            }
        }

        // Inode fields: writes, truncates, setattrs.
        for (ino, (b, a)) in &inodes {
            let (Before::Known(b), Some(a)) = (b, a) else {
                continue;
            };
            if !b.allocated() || !a.allocated() || created(*ino) || a.nlink == 0 {
                continue;
            }
            let pending_write = self.pending.get(ino).is_some_and(|p| p.kind == "write");
            let entry_op = new_ops.iter().any(|o| {
                o.op.ino == *ino && matches!(o.op.kind, "rename" | "link" | "unlink" | "rmdir")
            });
            let regular = a.mode & S_IFMT == S_IFREG;
            let mut file_op: Option<&'static str> = None;
            if regular {
                // Attribute blocks count in nblocks too.
                let attr_moved = a.anextents != b.anextents
                    || a.aformat != b.aformat
                    || a.forkoff != b.forkoff
                    || attr_owners.contains(ino);
                let blocks = a.nextents != b.nextents || (a.nblocks != b.nblocks && !attr_moved);
                let mtime_now = a.mtime != b.mtime && a.mtime == a.ctime && a.atime == b.atime;
                if a.size < b.size {
                    file_op = Some("truncate");
                } else if (blocks || a.size > b.size) && !(pending_write && a.mtime == b.mtime) {
                    // Growing without new blocks past the blocks the file
                    // had is a truncate up; within them (blocks allocated
                    // past the end by speculative preallocation, or the
                    // last block's tail) a write. A truncate up within the
                    // last block would look like a write.
                    let bs = u64::from(self.tracker.block_size()).max(1);
                    let allocated = b.nblocks.saturating_mul(bs);
                    let eof_block_end = b.size.div_ceil(bs).saturating_mul(bs);
                    let grow_only =
                        a.size > b.size && !blocks && a.size > allocated.max(eof_block_end);
                    file_op = Some(if grow_only { "truncate" } else { "write" });
                } else if mtime_now && !entry_op && !blocks {
                    file_op = Some("write");
                }
            }
            if let Some(k) = file_op {
                // A write's first transaction updates the times, which
                // raises no change count (nobody asked for it since).
                let silent = k == "write" && a.mtime != b.mtime;
                let mut op = mk(k, *ino);
                if silent {
                    op.why.push(
                        "its timestamp update (one transaction that leaves the change count alone)"
                            .into(),
                    );
                }
                new_ops.push(NewOp {
                    op,
                    variable: true,
                    silent,
                });
            }
            let ids = a.mode != b.mode || a.uid != b.uid || a.gid != b.gid;
            let times = a.atime != b.atime || (regular && a.mtime != b.mtime);
            // A directory's times change with every entry made in it.
            let parent_of_op = new_ops
                .iter()
                .any(|o| o.op.dir == Some(*ino) || o.op.to_dir == Some(*ino));
            let times_alone = times
                && !entry_op
                && file_op.is_none()
                && !(a.is_dir() && (parent_of_op || a.atime == b.atime));
            // Only the change time moved, with a transaction on the inode
            // and nothing else to explain it: a chmod or chown that
            // changed nothing else.
            let ctime_only = a.ctime != b.ctime
                && !times
                && !ids
                && !entry_op
                && file_op.is_none()
                && !parent_of_op
                && rises_of(*ino) > 0
                && a.nlink == b.nlink
                && !victims.iter().any(|(v, _)| v == ino)
                && !new_ops.iter().any(|o| o.op.ino == *ino)
                && !attr_owners.contains(ino);
            if ids || times_alone || ctime_only {
                let mut op = mk("setattr", *ino);
                let acl = acl_rewrites.contains(ino);
                if acl {
                    op.why.push(
                        "rewrote the access ACL to match the new mode (a transaction of its own)"
                            .into(),
                    );
                }
                new_ops.push(NewOp {
                    op,
                    variable: acl,
                    silent: false,
                });
            }
        }

        // Transactions: each operation one rise of its inode's counter,
        // the rest to the operation that takes more (or a follow-up).
        let mut per_ino: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        for (k, o) in new_ops.iter_mut().enumerate() {
            per_ino.entry(o.op.ino).or_default().push(k);
            // Its own transaction, whether or not the change count shows
            // it (a rename that moves a directory may log the moved one
            // only through its fork).
            o.op.transactions = o.op.transactions.saturating_add(1);
        }
        // Parent pointers: every entry made, removed or moved also sets,
        // removes or replaces an attribute of the inode it names, as
        // deferred work done in rolls of the operation's transaction (one
        // for a set or a removal, two for a replace), each of which may log
        // the inodes the operation holds again.
        let parents = self.tracker.parent_pointers();
        let mut parent_rolls: Vec<u64> = vec![0; new_ops.len()];
        if parents {
            for (k, o) in new_ops.iter_mut().enumerate() {
                let victims_of =
                    u64::try_from(victims.iter().filter(|(_, r)| *r == k).count()).unwrap_or(0);
                let n = match o.op.kind {
                    "create" | "mkdir" | "mknod" | "symlink" | "link" | "unlink" | "rmdir" => 1,
                    "rename" => 2u64.saturating_add(victims_of),
                    _ => 0,
                };
                if n > 0 {
                    o.op.transactions = o.op.transactions.saturating_add(n);
                    o.op.why.push(format!(
                        "{n} parent-pointer update(s) in rolls of its transaction"
                    ));
                }
                if let Some(r) = parent_rolls.get_mut(k) {
                    *r = n;
                }
            }
        }
        // Rises left on an inode an entry operation held, to be told
        // apart from the operation's rolls once all of them are counted.
        let mut held_left: Vec<(u64, u64)> = Vec::new();
        let entry_kind = |k: &str| {
            matches!(
                k,
                "create" | "mkdir" | "mknod" | "symlink" | "link" | "unlink" | "rmdir" | "rename"
            )
        };
        let attr_local_before = |ino: u64| before_has(ino, |s| s.anextents == 0);
        for (ino, n) in &bumps {
            // A directory rises once in the transaction of every entry
            // operation in it (twice for nothing: a rename within it is
            // one transaction).
            let as_parent = new_ops
                .iter()
                .filter(|o| o.op.dir == Some(*ino) || o.op.to_dir == Some(*ino))
                .count();
            let mut left = n.saturating_sub(u64::try_from(as_parent).unwrap_or(u64::MAX));
            let mine = per_ino.get(ino).cloned().unwrap_or_default();
            for k in &mine {
                if new_ops.get(*k).is_some_and(|o| !o.silent) {
                    left = left.saturating_sub(1);
                }
            }
            // A symlink's target block freed at inactivation: the free
            // rolls into a transaction that does not log the inode.
            let link_block_freed = matches!(inodes.get(ino), Some((Before::Known(b), Some(a)))
                if b.mode & S_IFMT == S_IFLNK && b.nextents > 0 && (a.nextents == 0 || !a.allocated()));
            if link_block_freed {
                left = left.saturating_add(1);
            }
            // The last inode of its chunk freed: the chunk is freed too
            // (its cluster buffers logged stale), and the extent free
            // rolls into a transaction that does not log the inode.
            let chunk_freed = state_of(*ino).is_some_and(|s| !s.allocated())
                && self.tracker.inode_daddr(*ino).is_some_and(|d| {
                    ch.cancelled
                        .iter()
                        .any(|(start, len)| d >= *start && d < start.saturating_add(*len))
                });
            if chunk_freed {
                left = left.saturating_add(1);
            }
            // Victims: their first rise is the rename's own transaction
            // (and, with parent pointers, one in each of its rolls).
            if let Some((_, r)) = victims.iter().find(|(v, _)| v == ino) {
                let mut extra = left.saturating_sub(1);
                if parents {
                    let rolls = parent_rolls.get(*r).copied().unwrap_or(0);
                    extra = extra.saturating_sub(rolls);
                }
                if let Some(o) = new_ops.get_mut(*r) {
                    o.op.transactions = o.op.transactions.saturating_add(extra);
                    if extra > 0 {
                        o.op.why
                            .push(format!("{extra} more on the replaced inode {ino}"));
                    }
                }
                continue;
            }
            if left == 0 {
                continue;
            }
            // Free before and after, yet logged with rises: made and
            // removed inside this checkpoint; what it was is gone with it.
            let free_before = match inodes.get(ino).map(|(b, _)| b) {
                Some(Before::Free) => true,
                Some(Before::Known(s)) => !s.allocated(),
                _ => false,
            };
            if mine.is_empty() && free_before && state_of(*ino).is_some_and(|s| !s.allocated()) {
                self.created_and_removed = self.created_and_removed.saturating_add(1);
                self.unexplained = self.unexplained.saturating_add(left);
                cp.unexplained.push(Unexplained {
                    ino: *ino,
                    transactions: left,
                    why: "created and removed within this checkpoint: the log keeps neither its kind nor its name, so its operations are not counted by kind".into(),
                });
                continue;
            }
            let variable = mine
                .iter()
                .rev()
                .find(|k| new_ops.get(**k).is_some_and(|o| o.variable))
                .copied();
            if parents {
                // The parent-pointer rolls of an unlink, rmdir or rename
                // log its inode again where the attribute is in the inode
                // (a leaf block takes the change alone).
                if attr_local_before(*ino) {
                    for k in &mine {
                        let rolls = parent_rolls.get(*k).copied().unwrap_or(0);
                        if new_ops.get(*k).is_some_and(|o| o.variable) {
                            left = left.saturating_sub(rolls);
                        }
                    }
                }
                if left == 0 {
                    continue;
                }
                let held = new_ops.iter().any(|o| {
                    entry_kind(o.op.kind)
                        && (o.op.ino == *ino || o.op.dir == Some(*ino) || o.op.to_dir == Some(*ino))
                });
                if variable.is_none() && held {
                    held_left.push((*ino, left));
                    continue;
                }
            }
            if let Some(k) = variable {
                if let Some(o) = new_ops.get_mut(k) {
                    o.op.transactions = o.op.transactions.saturating_add(left);
                    o.op.why
                        .push(format!("{left} more transaction(s) logged inode {ino}"));
                }
                continue;
            }
            if mine.is_empty() {
                if let Some(p) = self.pending.get(ino).copied() {
                    self.follow_up(
                        p,
                        left,
                        cp.index,
                        format!(
                            "{left} transaction(s) on inode {ino} in checkpoint {}",
                            cp.index
                        ),
                    );
                    continue;
                }
            }
            self.unexplained = self.unexplained.saturating_add(left);
            cp.unexplained.push(Unexplained {
                ino: *ino,
                transactions: left,
                why: "change count rose with no operation found that explains it".into(),
            });
        }
        // An attribute fork that went from no blocks to blocks, or back:
        // the set that made the first leaf rolled after making it, and the
        // removal that emptied the last leaf rolled before turning the
        // fork back into a list (each roll logs no inode core).
        for (ino, (b, a)) in &inodes {
            let (Before::Known(b), Some(a)) = (b, a) else {
                continue;
            };
            if !a.allocated() || a.nlink == 0 {
                continue;
            }
            let data_same = a.nextents == b.nextents && a.size == b.size;
            let (kind, why) = if (b.anextents == 0 && a.anextents > 0)
                || (b.anextents > 0 && data_same && a.nblocks > b.nblocks)
            {
                (
                    "setxattr",
                    "gave the attribute fork more blocks (one more transaction)",
                )
            } else if b.anextents > 0 && a.anextents == 0 {
                (
                    "removexattr",
                    "emptied the attribute fork's last block (one more transaction)",
                )
            } else {
                continue;
            };
            if let Some(o) = new_ops
                .iter_mut()
                .find(|o| o.op.ino == *ino && o.op.kind == kind)
            {
                o.op.transactions = o.op.transactions.saturating_add(1);
                o.op.why.push(why.into());
            }
        }
        // A set that gave an inode its attribute fork: the inode was made
        // without one (a kernel that did not make it at create, a symlink,
        // no security module or ACL asking for it), and the fork was added
        // in the set's own transaction.
        for (ino, (b, a)) in &inodes {
            let (Some(a), Some(b)) = (
                a,
                match b {
                    Before::Known(s) if s.allocated() => Some(s),
                    _ => None,
                },
            ) else {
                continue;
            };
            if b.forkoff == 0 && a.forkoff != 0 && !created(*ino) {
                if let Some(o) = new_ops
                    .iter_mut()
                    .find(|o| o.op.ino == *ino && o.op.kind == "setxattr")
                {
                    o.op.why.push(format!(
                        "added the attribute fork at forkoff {} (the inode was created without one)",
                        a.forkoff
                    ));
                }
            }
        }
        // Reverse mapping: every change to a file's block mapping defers
        // an rmap update to a roll that logs no inode core. A write that
        // allocates past the end of the file maps unwritten blocks and
        // converts them at I/O completion (two changes), as does one that
        // fills a hole inside it with new blocks; one into blocks the file
        // already had converts them (one); a new remote symlink block and
        // a directory's first block are mapped once.
        if self.tracker.rmapbt() {
            for o in new_ops.iter_mut() {
                let Some((b, a)) = inodes.get(&o.op.ino) else {
                    continue;
                };
                let Some(a) = a else { continue };
                let b = match b {
                    Before::Known(s) if s.allocated() && !created(o.op.ino) => Some(s),
                    _ => None,
                };
                let rolls = match o.op.kind {
                    "write" => {
                        let (size0, ext0, blk0) =
                            b.map_or((0, 0, 0), |b| (b.size, b.nextents, b.nblocks));
                        let mapped = a.nextents != ext0
                            || (a.nblocks > blk0 && a.anextents == b.map_or(0, |b| b.anextents));
                        if !mapped {
                            // Past the end's block into blocks
                            // preallocated unwritten: converted at I/O
                            // completion.
                            let bs = u64::from(self.tracker.block_size()).max(1);
                            let eof_block_end = size0.div_ceil(bs).saturating_mul(bs);
                            u64::from(a.size > eof_block_end)
                        } else if a.size > size0
                            || (a.nblocks > blk0 && a.anextents == b.map_or(0, |b| b.anextents))
                        {
                            // New blocks, past the end or into a hole
                            // inside it: mapped unwritten, then converted.
                            2
                        } else {
                            1
                        }
                    }
                    "symlink" => u64::from(a.nextents > 0),
                    _ => 0,
                };
                if rolls > 0 {
                    o.op.transactions = o.op.transactions.saturating_add(rolls);
                    o.op.why.push(format!(
                        "{rolls} reverse-mapping update(s) in transactions of their own"
                    ));
                }
            }
            // A directory whose entries moved from the inode to a block.
            for (ino, (b, a)) in &inodes {
                let (Before::Known(b), Some(a)) = (b, a) else {
                    continue;
                };
                if b.is_dir() && b.format == 1 && a.format != 1 {
                    if let Some(o) = new_ops
                        .iter_mut()
                        .find(|o| o.op.dir == Some(*ino) || o.op.to_dir == Some(*ino))
                    {
                        o.op.transactions = o.op.transactions.saturating_add(1);
                        o.op.why.push("moved its directory into a block (a reverse-mapping update in a transaction of its own)".into());
                    }
                }
            }
        }
        // A directory whose last block went back into the inode: freeing
        // the block rolls into a transaction that logs neither inode.
        for (ino, (b, a)) in &inodes {
            let (Before::Known(b), Some(a)) = (b, a) else {
                continue;
            };
            if b.is_dir() && b.format != 1 && a.format == 1 {
                let taker = new_ops.iter_mut().find(|o| {
                    o.op.dir == Some(*ino) && matches!(o.op.kind, "unlink" | "rmdir" | "rename")
                });
                if let Some(o) = taker {
                    o.op.transactions = o.op.transactions.saturating_add(1);
                    o.op.why.push("turned its directory back into a shortform one, freeing the block (one more transaction)".into());
                }
            }
        }
        // A new inode chunk takes one more transaction (the allocation
        // rolls before the create).
        for (first, count) in &ch.chunks {
            let end = first.saturating_add(u64::from(*count));
            let taker = new_ops.iter_mut().find(|o| {
                o.op.ino >= *first
                    && o.op.ino < end
                    && matches!(o.op.kind, "create" | "mkdir" | "mknod" | "symlink")
            });
            match taker {
                Some(o) => {
                    o.op.transactions = o.op.transactions.saturating_add(1);
                    o.op.why.push(format!(
                        "allocated the inode chunk at inode {first} (one more transaction)"
                    ));
                }
                None => {
                    self.unexplained = self.unexplained.saturating_add(1);
                    cp.unexplained.push(Unexplained {
                        ino: *first,
                        transactions: 1,
                        why: "an inode chunk allocated with no new inode found in it".into(),
                    });
                }
            }
        }

        // With parent pointers, the rolls of an entry operation (its
        // parent-pointer updates, a new chunk, reverse-mapping updates) log
        // again the inodes it holds: rises up to its rolls are those.
        for (ino, left) in held_left {
            let mut cap = 0u64;
            let mut taker: Option<usize> = None;
            for (k, o) in new_ops.iter().enumerate() {
                if entry_kind(o.op.kind)
                    && (o.op.ino == ino || o.op.dir == Some(ino) || o.op.to_dir == Some(ino))
                {
                    cap = cap.saturating_add(o.op.transactions.saturating_sub(1));
                    taker.get_or_insert(k);
                }
            }
            let absorbed = left.min(cap);
            if let Some(o) = taker.and_then(|k| new_ops.get_mut(k)) {
                if absorbed > 0 && o.op.why.len() < 8 {
                    o.op.why.push(format!(
                        "inode {ino} logged again in {absorbed} of its rolls"
                    ));
                }
            }
            let rest = left.saturating_sub(cap);
            if rest > 0 {
                self.unexplained = self.unexplained.saturating_add(rest);
                cp.unexplained.push(Unexplained {
                    ino,
                    transactions: rest,
                    why: "change count rose more often than the rolls of the operations holding it"
                        .into(),
                });
            }
        }

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
                "unlink" | "rmdir" => state_of(ino).is_some_and(|s| s.allocated() && s.nlink == 0),
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
            if state_of(*v).is_some_and(|s| s.allocated() && s.nlink == 0) {
                let op = pushed.get(*r).copied().flatten();
                self.pending.insert(*v, Pending { kind: "rename", op });
            }
        }
        for (ino, (_, a)) in &inodes {
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

/// The order removed entries were removed in, as far as it can be told:
/// a directory's own entry after the entries removed from it (it had to
/// be empty first), else as found. So the paths of a directory's entries
/// are still known when they are named.
fn removal_order(removed: &[(u64, Vec<u8>, u64)]) -> Vec<usize> {
    dependency_order(removed.len(), |k| removed.get(k).map(|e| (e.0, e.2)))
}

/// The order added entries were made in, as far as it can be told: a
/// directory's own entry (its mkdir, or its rename into place) before the
/// entries made in it, else as found.
fn addition_order(added: &[(u64, Vec<u8>, u64)]) -> Vec<usize> {
    dependency_order(added.len(), |k| added.get(k).map(|e| (e.2, e.0)))
}

/// Indices `0..n` in an order where entry `k`, with `keys(k)` = (`key`,
/// `waits_for`), comes after every entry whose `key` is its `waits_for`;
/// else as found (a loop, from damage, is broken in order).
fn dependency_order(n: usize, keys: impl Fn(usize) -> Option<(u64, u64)>) -> Vec<usize> {
    // Entries still to come, per key.
    let mut left: HashMap<u64, usize> = HashMap::new();
    for k in 0..n {
        if let Some((key, _)) = keys(k) {
            let c = left.entry(key).or_insert(0);
            *c = c.saturating_add(1);
        }
    }
    let mut waiting: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut ready: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
    for k in 0..n {
        match keys(k) {
            Some((_, w)) if left.get(&w).copied().unwrap_or(0) > 0 => {
                waiting.entry(w).or_default().push(k);
            }
            _ => ready.push_back(k),
        }
    }
    let mut out = Vec::with_capacity(n);
    let mut done = vec![false; n];
    loop {
        while let Some(k) = ready.pop_front() {
            match done.get_mut(k) {
                Some(f) if !*f => *f = true,
                _ => continue,
            }
            out.push(k);
            let Some((key, _)) = keys(k) else {
                continue;
            };
            if let Some(c) = left.get_mut(&key) {
                *c = c.saturating_sub(1);
                if *c == 0 {
                    if let Some(w) = waiting.remove(&key) {
                        ready.extend(w);
                    }
                }
            }
        }
        // A loop: the first entry not out yet goes next.
        let Some(k) = done.iter().position(|f| !f) else {
            break;
        };
        ready.push_back(k);
    }
    out
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{addition_order, removal_order};

    #[test]
    fn a_directory_comes_out_after_its_entries() {
        // root 128 holds dir 131 and file 140; 131 holds dir 150 and
        // file 141; 150 holds file 142.
        let removed = vec![
            (128, b"d".to_vec(), 131),
            (128, b"f".to_vec(), 140),
            (131, b"e".to_vec(), 150),
            (131, b"g".to_vec(), 141),
            (150, b"h".to_vec(), 142),
        ];
        let order = removal_order(&removed);
        let at = |k: usize| order.iter().position(|x| *x == k).unwrap();
        assert_eq!(order.len(), 5);
        assert!(at(4) < at(2), "150's entry before 150 itself");
        assert!(at(2) < at(0) && at(3) < at(0), "131's entries before 131");
        assert!(at(1) < at(0), "as found otherwise");
    }

    #[test]
    fn a_loop_still_gives_every_entry_once() {
        let removed = vec![(131, b"a".to_vec(), 150), (150, b"b".to_vec(), 131)];
        let mut order = removal_order(&removed);
        order.sort_unstable();
        assert_eq!(order, vec![0, 1]);
    }

    #[test]
    fn a_directory_is_made_before_its_entries() {
        // 176 (made in 32896) gets 177 and 178; 32896 also gets 179.
        let added = vec![
            (176, b"n-01".to_vec(), 177),
            (176, b"n-02".to_vec(), 178),
            (32896, b"newdir".to_vec(), 176),
            (32896, b"x".to_vec(), 179),
        ];
        let order = addition_order(&added);
        let at = |k: usize| order.iter().position(|x| *x == k).unwrap();
        assert_eq!(order.len(), 4);
        assert!(at(2) < at(0) && at(2) < at(1), "newdir before its entries");
        assert!(at(0) < at(1), "as found otherwise");
    }
}
