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
    pub items_by_type: BTreeMap<&'static str, u64>,
    pub bytes_by_type: BTreeMap<&'static str, u64>,
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
pub fn analyze<R: ReadAt>(fs: &Fs<R>, progress: &mut dyn FnMut(&Progress)) -> Result<OpsReport> {
    let dev = LogDev::of_fs(fs)?;
    let ht = find_head_tail(&dev)?;
    let mut inf = infer::Inference::new(fs);
    if ht.clean || ht.head.block == ht.tail.block {
        return Ok(inf.finish(true));
    }
    let (tail, note) = walk::verify_tail(&dev, &ht)?;
    if let Some(n) = note {
        inf.note(n);
    }
    let head = ht.head.block;
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
        let inf_ref = &mut inf;
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
                    inf_ref.transaction(&t, &items);
                }
            }
            Ok(())
        };
        walk::walk(
            &dev,
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
    let before = inf.take_entries_before();
    let mut rep = inf.finish(false);
    paths::fill(fs, &mut rep, &before);
    Ok(rep)
}
