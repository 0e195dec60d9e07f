//! Which file operations a log carries, and how many transactions each
//! cost the kernel.
//!
//! A delayed-logging log holds checkpoints, not transactions, so the
//! operations are reconstructed: [`track`] follows what every checkpoint
//! logged (inode cores, shortform directories and attribute lists, shadow
//! copies of directory data and attribute leaf blocks) from the disk's
//! state on, and [`infer`] names the operations that explain each
//! checkpoint's changes: entries added and removed (create, mkdir, mknod,
//! symlink, link, unlink, rmdir, rename), attribute names added, removed
//! or given a new value (setxattr, removexattr), and inode fields (write,
//! truncate, setattr). The transactions come from `di_changecount`, which
//! every transaction that logs an inode core raises once: an operation
//! costs the rises of its inode, including the later ones that finish it
//! (inactivation after a removal, writeback after a write), plus the
//! transactions that log no inode core of their own (the roll that
//! allocates a new inode chunk). Logs whose transactions carry their type
//! (kernels before delayed logging) are counted by type ([`typed`]).

pub mod forkoff;
mod infer;
pub mod paths;
pub mod track;
pub mod typed;

use crate::xfs::error::Result;
use crate::xfs::fs::Fs;
use crate::xfs::log::find::find_head_tail;
use crate::xfs::log::items::decode_item;
use crate::xfs::log::{ItemContext, LogDev};
use crate::xfs::read::ReadAt;
use crate::xfs::replay::walk::{self, CrcMode, Event};
use crate::xfs::types::Lsn;
use serde::Serialize;
use std::collections::BTreeMap;

/// The operation kinds, in the order they are shown.
pub const KINDS: [&str; 13] = [
    "create",
    "mkdir",
    "mknod",
    "symlink",
    "link",
    "unlink",
    "rmdir",
    "rename",
    "setxattr",
    "removexattr",
    "write",
    "truncate",
    "setattr",
];

/// One operation found in the log.
#[derive(Clone, Debug, Serialize)]
pub struct Operation {
    pub kind: &'static str,
    /// The inode the operation is about (the new, linked, removed, renamed
    /// or changed one).
    pub ino: u64,
    /// The directory and name (for entry operations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Rename: where the entry went.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_dir: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_name: Option<String>,
    /// The entry's path when the operation ran (directory and name; for an
    /// operation on an inode, the entry the log last gave it), where it
    /// can be told (see [`paths`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Rename: the path it went to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_path: Option<String>,
    /// An operation on an inode with several links: all its paths (then
    /// `path` is left out).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<String>,
    /// Transactions the kernel committed for it (rolls and later
    /// follow-ups included).
    pub transactions: u64,
    /// Log items and bytes of the items about its inodes (split evenly
    /// between operations that share an inode in a checkpoint).
    pub items: u64,
    pub bytes: u64,
    /// How the transactions were counted, and anything uncertain.
    pub why: Vec<String>,
    /// Checkpoints after this one that carried its follow-up work.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub later_checkpoints: Vec<u32>,
}

/// What one checkpoint (or typed transaction) carries.
#[derive(Clone, Debug, Serialize)]
pub struct CheckpointOps {
    /// Index in log order (0 = the oldest in the live log).
    pub index: u32,
    pub tid: u32,
    pub lsn: Lsn,
    pub th_type: u32,
    /// The type's name for typed transactions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub type_name: Option<&'static str>,
    pub items: u64,
    pub bytes: u64,
    pub items_by_type: Counts,
    pub bytes_by_type: Counts,
    /// Indices into [`OpsReport::operation_list`] of the operations found
    /// here.
    pub operations: Vec<u32>,
    /// Inodes logged here.
    pub inodes: u64,
    /// Transactions seen on inodes here that no operation explains.
    pub unexplained: Vec<Unexplained>,
    /// Items about no operation's inode (AG headers, btree blocks,
    /// intents, inode chunks).
    pub shared_items: u64,
    pub shared_bytes: u64,
}

/// Counts by name, in name order, shown as a map: a checkpoint's few
/// item types, kept without a map's nodes (a large log has hundreds of
/// thousands of checkpoints).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts(Vec<(&'static str, u64)>);

impl Counts {
    /// Add `n` to `name`'s count.
    pub fn add(&mut self, name: &'static str, n: u64) {
        match self.0.binary_search_by(|(k, _)| k.cmp(&name)) {
            Ok(i) => {
                if let Some((_, c)) = self.0.get_mut(i) {
                    *c = c.saturating_add(n);
                }
            }
            Err(i) => self.0.insert(i, (name, n)),
        }
    }

    /// The count of `name` (0 if none).
    pub fn get(&self, name: &str) -> u64 {
        self.0
            .iter()
            .find(|(k, _)| *k == name)
            .map_or(0, |(_, c)| *c)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&&'static str, &u64)> {
        self.0.iter().map(|(k, c)| (k, c))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'a> IntoIterator for &'a Counts {
    type Item = (&'a &'static str, &'a u64);
    type IntoIter = core::iter::Map<
        core::slice::Iter<'a, (&'static str, u64)>,
        fn(&'a (&'static str, u64)) -> (&'a &'static str, &'a u64),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, c)| (k, c))
    }
}

impl Serialize for Counts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, c)| (*k, *c)))
    }
}

/// Transactions on an inode that no operation found explains.
#[derive(Clone, Debug, Serialize)]
pub struct Unexplained {
    pub ino: u64,
    pub transactions: u64,
    pub why: String,
}

/// Totals of one operation kind.
#[derive(Clone, Debug, Default, Serialize)]
pub struct KindTotals {
    pub operations: u64,
    pub transactions: u64,
    pub items: u64,
    pub bytes: u64,
}

/// One inode's history in the log.
#[derive(Clone, Debug, Serialize)]
pub struct InodeHistory {
    pub ino: u64,
    /// `di_changecount` before the log (`None`: free, not an inode, or
    /// unknown) and after the last checkpoint that logged the core.
    pub changecount_before: Option<u64>,
    pub changecount_after: Option<u64>,
    /// Per checkpoint: (checkpoint index, transactions that logged the
    /// core there).
    pub transactions: Vec<(u32, u64)>,
    /// Indices of the operations about this inode.
    pub operations: Vec<u32>,
}

/// Operations and transactions of a whole log.
#[derive(Clone, Debug, Serialize)]
pub struct OpsReport {
    /// The log is clean: nothing in it.
    pub clean: bool,
    /// `checkpoints` (delayed logging: operations reconstructed) or
    /// `typed` (each transaction says what it is) or `mixed`.
    pub log_form: &'static str,
    /// Operations per kind (every kind listed, zeros included).
    pub operations: BTreeMap<&'static str, u64>,
    /// Transactions those operations committed.
    pub transactions: BTreeMap<&'static str, u64>,
    pub by_kind: BTreeMap<&'static str, KindTotals>,
    /// Typed transactions of no operation kind, by type name.
    pub other_transactions: BTreeMap<&'static str, u64>,
    /// Transactions seen (change counts) that no operation explains.
    pub unexplained_transactions: u64,
    /// Inodes made and freed within one checkpoint: operations whose kind
    /// the log does not keep (their transactions are in
    /// `unexplained_transactions`).
    pub created_and_removed: u64,
    pub checkpoints: Vec<CheckpointOps>,
    pub operation_list: Vec<Operation>,
    /// Inodes with operations (at most [`MAX_HISTORIES`]).
    pub inodes: Vec<InodeHistory>,
    pub notes: Vec<String>,
}

/// At most this many inode histories are listed.
pub const MAX_HISTORIES: usize = 20_000;
/// At most this many operations are listed (all are counted).
pub const MAX_LISTED_OPS: usize = 200_000;

/// Where the analysis is, for a progress bar.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Progress {
    pub blocks_done: u64,
    pub blocks_total: u64,
    pub checkpoints: u64,
}

/// Walk the live log of `fs` and reconstruct its operations.
///
/// The kernel checks every record's CRC from the tail to the head before
/// it replays (`xlog_verify_tail`), moving the tail past a record torn by
/// the last writes; on v5 the walk that follows checks every CRC too and
/// stops at a bad one. So a v5 log is walked once, and only if that walk
/// fails is it checked first and walked again, as replay does.
pub fn analyze<R: ReadAt>(fs: &Fs<R>, progress: &mut dyn FnMut(&Progress)) -> Result<OpsReport> {
    let dev = LogDev::of_fs(fs)?;
    let ht = find_head_tail(&dev)?;
    if ht.clean || ht.head.block == ht.tail.block {
        return Ok(infer::Inference::new(fs).finish(true));
    }
    if fs.geo.v5 {
        let mut inf = infer::Inference::new(fs);
        if walk_into(fs, &dev, ht.tail.block, ht.head.block, &mut inf, progress).is_ok() {
            return Ok(finish(fs, inf));
        }
    }
    let mut inf = infer::Inference::new(fs);
    let (tail, note) = walk::verify_tail(&dev, &ht)?;
    if let Some(n) = note {
        inf.note(n);
    }
    walk_into(fs, &dev, tail, ht.head.block, &mut inf, progress)?;
    Ok(finish(fs, inf))
}

/// Feed the committed transactions of `[tail, head)` to `inf`.
fn walk_into<R: ReadAt>(
    fs: &Fs<R>,
    dev: &LogDev<'_, R>,
    tail: u32,
    head: u32,
    inf: &mut infer::Inference<'_, R>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<()> {
    let mut prog = Progress {
        blocks_total: u64::from(dev.distance(tail, head)),
        ..Progress::default()
    };
    progress(&prog);
    let ctx = ItemContext {
        inode_cores: true,
        ..ItemContext::of(fs, Default::default())
    };
    let mut warnings = Vec::new();
    {
        let prog_ref = &mut prog;
        let mut sink = |ev: Event<'_>| -> Result<()> {
            match ev {
                Event::Record(h) => {
                    prog_ref.blocks_done = prog_ref
                        .blocks_done
                        .saturating_add(u64::from(h.total_bbs()));
                    progress(prog_ref);
                }
                Event::Commit(t) => {
                    prog_ref.checkpoints = prog_ref.checkpoints.saturating_add(1);
                    let items: Vec<_> = t
                        .items
                        .iter()
                        .map(|it| decode_item(&it.regions, it.total, t.order, &ctx))
                        .collect();
                    inf.transaction(t, &items);
                }
            }
            Ok(())
        };
        walk::walk(
            dev,
            tail,
            head,
            CrcMode::Replay { v5: fs.geo.v5 },
            true,
            &mut warnings,
            &mut sink,
        )?;
    }
    for w in warnings {
        inf.note(w);
    }
    Ok(())
}

/// The report, with the paths of its operations.
fn finish<R: ReadAt>(fs: &Fs<R>, mut inf: infer::Inference<'_, R>) -> OpsReport {
    let before = inf.take_entries_before();
    let mut rep = inf.finish(false);
    paths::fill(fs, &mut rep, &before);
    rep
}
