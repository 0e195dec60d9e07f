//! Transactions per operation: each operation's own, and the rolls of
//! deferred work that log its inodes again or log no inode core at all
//! (parent pointers, attribute fork blocks, reverse mapping, directory
//! blocks freed, inode chunks allocated) (kernel: `xfs_trans_roll` and
//! `xfs_defer.c`, `xfs_parent.c`, `xfs_rmap.c`, `xfs_ialloc.c`).

use std::collections::BTreeMap;

use super::{Inference, NewOp, Seen};
use crate::xfs::format::dinode::{S_IFLNK, S_IFMT};
use crate::xfs::ops::track::Before;
use crate::xfs::ops::{CheckpointOps, Unexplained};
use crate::xfs::read::ReadAt;

/// Whether an operation of kind `k` makes, removes or moves an entry.
fn entry_kind(k: &str) -> bool {
    matches!(
        k,
        "create" | "mkdir" | "mknod" | "symlink" | "link" | "unlink" | "rmdir" | "rename"
    )
}

impl<R: ReadAt> Inference<'_, R> {
    /// Hand each operation its own transaction and the rises of its
    /// inodes' change counters; returns the rises left on inodes an entry
    /// operation held, for [`Self::count_rolls`].
    pub(super) fn count_rises(
        &mut self,
        seen: &Seen<'_>,
        cp: &mut CheckpointOps,
        new_ops: &mut [NewOp],
        victims: &[(u64, usize)],
    ) -> Vec<(u64, u64)> {
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
        let attr_local_before = |ino: u64| seen.before_has(ino, |s| s.anextents == 0);
        for (ino, n) in &seen.bumps {
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
            let link_block_freed = matches!(seen.inodes.get(ino), Some((Before::Known(b), Some(a)))
                    if b.mode & S_IFMT == S_IFLNK && b.nextents > 0 && (a.nextents == 0 || !a.allocated()));
            if link_block_freed {
                left = left.saturating_add(1);
            }
            // The last inode of its chunk freed: the chunk is freed too
            // (its cluster buffers logged stale), and the extent free
            // rolls into a transaction that does not log the inode.
            let chunk_freed = seen.state_of(*ino).is_some_and(|s| !s.allocated())
                && self.tracker.inode_daddr(*ino).is_some_and(|d| {
                    seen.ch
                        .cancelled
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
            let free_before = match seen.inodes.get(ino).map(|(b, _)| b) {
                Some(Before::Free) => true,
                Some(Before::Known(s)) => !s.allocated(),
                _ => false,
            };
            if mine.is_empty() && free_before && seen.state_of(*ino).is_some_and(|s| !s.allocated())
            {
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
        held_left
    }

    /// The rolls that log no inode core of their own, and the rises left
    /// on held inodes (`held_left`) given to the rolls of their operations.
    pub(super) fn count_rolls(
        &mut self,
        seen: &Seen<'_>,
        cp: &mut CheckpointOps,
        new_ops: &mut [NewOp],
        held_left: Vec<(u64, u64)>,
    ) {
        // An attribute fork that went from no blocks to blocks, or back:
        // the set that made the first leaf rolled after making it, and the
        // removal that emptied the last leaf rolled before turning the
        // fork back into a list (each roll logs no inode core).
        for (ino, (b, a)) in &seen.inodes {
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
        for (ino, (b, a)) in &seen.inodes {
            let (Some(a), Some(b)) = (
                a,
                match b {
                    Before::Known(s) if s.allocated() => Some(s),
                    _ => None,
                },
            ) else {
                continue;
            };
            if b.forkoff == 0 && a.forkoff != 0 && !seen.created(*ino) {
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
                let Some((b, a)) = seen.inodes.get(&o.op.ino) else {
                    continue;
                };
                let Some(a) = a else { continue };
                let b = match b {
                    Before::Known(s) if s.allocated() && !seen.created(o.op.ino) => Some(s),
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
            for (ino, (b, a)) in &seen.inodes {
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
        for (ino, (b, a)) in &seen.inodes {
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
        for (first, count) in &seen.ch.chunks {
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
    }
}
