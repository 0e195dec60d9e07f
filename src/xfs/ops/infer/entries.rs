//! Directory entries added and removed in a checkpoint, named as the
//! operations that make them: create, mkdir, mknod, symlink, link,
//! unlink, rmdir and rename (kernel: `xfs_create`, `xfs_link`, `xfs_remove`
//! and `xfs_rename` in `xfs_inode.c`).

use std::collections::{BTreeSet, HashMap};

use super::{create_kind, effective_before, name_text, new_op, NewOp, Seen};
use crate::xfs::format::dinode::{S_IFDIR, S_IFMT};
use crate::xfs::ops::track::Names;
use crate::xfs::ops::{CheckpointOps, Unexplained};

/// The entry operations of a checkpoint, added to `new_ops`; returns the
/// inodes replaced by a rename onto their name, with the rename's index.
pub(super) fn entry_ops(
    seen: &Seen<'_>,
    cp: &mut CheckpointOps,
    new_ops: &mut Vec<NewOp>,
) -> Vec<(u64, usize)> {
    // Directory entries added and removed.
    let unknown_dirs: BTreeSet<u64> = seen.ch.dirs.unknown.iter().copied().collect();
    let mut added: Vec<(u64, Vec<u8>, u64)> = Vec::new();
    let mut removed: Vec<(u64, Vec<u8>, u64)> = Vec::new();
    let empty = Names::new();
    let dir_owners: BTreeSet<u64> = seen
        .ch
        .dirs
        .before
        .keys()
        .chain(seen.ch.dirs.after.keys())
        .copied()
        .collect();
    for d in &dir_owners {
        if unknown_dirs.contains(d) {
            continue;
        }
        let had_blocks = seen.before_has(*d, |s| s.format != 1);
        let b = effective_before(&seen.ch.dirs, *d, had_blocks);
        let b = &b;
        let a = seen.ch.dirs.after.get(d).unwrap_or(&empty);
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
            .filter(|_| !seen.created(*ino))
            .find(|(k, r)| r.2 == *ino && !removed_used.get(*k).copied().unwrap_or(true));
        if let Some((k, (fd, fname, _))) = from {
            if let Some(u) = removed_used.get_mut(k) {
                *u = true;
            }
            let mut op = new_op("rename", *ino);
            op.dir = Some(*fd);
            op.name = Some(name_text(fname));
            if seen.bumps.get(ino).copied().unwrap_or(0) > 1 {
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
        } else if seen.created(*ino) && made.insert(*ino) {
            let kind = seen
                .state_of(*ino)
                .map_or("create", |s| create_kind(s.mode));
            let mut op = new_op(kind, *ino);
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
            let mut op = new_op("link", *ino);
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
        let is_dir = seen
            .mode_before(*ino)
            .is_some_and(|m| m & S_IFMT == S_IFDIR);
        let mut op = new_op(if is_dir { "rmdir" } else { "unlink" }, *ino);
        op.dir = Some(*d);
        op.name = Some(name_text(n));
        new_ops.push(NewOp {
            op,
            variable: true,
            silent: false,
        });
    }
    // New inodes with no entry found (their directory block not read).
    for ino in seen.inodes.keys() {
        if seen.created(*ino) && !new_ops.iter().any(|o| o.op.ino == *ino) {
            let kind = seen
                .state_of(*ino)
                .map_or("create", |s| create_kind(s.mode));
            let mut op = new_op(kind, *ino);
            op.why
                .push("its directory entry was not found in this checkpoint".into());
            new_ops.push(NewOp {
                op,
                variable: false,
                silent: false,
            });
        }
    }
    victims
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
