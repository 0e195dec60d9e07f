//! Attributes set, replaced and removed in a checkpoint: setxattr and
//! removexattr, with the extra transactions of the leaf and node paths
//! (kernel: `xfs_attr_set` in `xfs_attr.c`, `xfs_attr_leaf.c`).

use std::collections::BTreeSet;

use super::{effective_before, name_text, new_op, Inference, NewOp, Seen};
use crate::xfs::format::attr::{XFS_ATTR_PARENT, XFS_ATTR_ROOT, XFS_ATTR_SECURE};
use crate::xfs::ops::track::{Before, Names, REMOTE_VALUE};
use crate::xfs::read::ReadAt;

impl<R: ReadAt> Inference<'_, R> {
    /// The attribute operations of a checkpoint, added to `new_ops`;
    /// returns the inodes whose access ACL was rewritten by a chmod and the
    /// inodes whose attributes changed.
    pub(super) fn attr_ops(
        &self,
        seen: &Seen<'_>,
        new_ops: &mut Vec<NewOp>,
    ) -> (BTreeSet<u64>, BTreeSet<u64>) {
        // Attributes set, replaced and removed.
        let empty = Names::new();
        let unknown_attrs: BTreeSet<u64> = seen.ch.attrs.unknown.iter().copied().collect();
        let mut acl_rewrites: BTreeSet<u64> = BTreeSet::new();
        let a_has_blocks = |ino: u64| seen.state_of(ino).is_some_and(|s| s.anextents > 0);
        let attr_owners: BTreeSet<u64> = seen
            .ch
            .attrs
            .before
            .keys()
            .chain(seen.ch.attrs.after.keys())
            .copied()
            .collect();
        for o in &attr_owners {
            if unknown_attrs.contains(o) {
                continue;
            }
            // A removed inode's attributes go with it (inactivation).
            if seen
                .state_of(*o)
                .is_none_or(|s| !s.allocated() || s.nlink == 0)
            {
                continue;
            }
            let had_blocks = seen.before_has(*o, |s| s.anextents > 0);
            let b = effective_before(&seen.ch.attrs, *o, had_blocks);
            let b = &b;
            let a = seen.ch.attrs.after.get(o).unwrap_or(&empty);
            let is_new = seen.created(*o);
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
                let mode_changed = matches!(seen.inodes.get(o), Some((Before::Known(bs), Some(af))) if bs.mode != af.mode);
                if ns(k) & XFS_ATTR_ROOT != 0
                    && k.get(1..) == Some(&b"SGI_ACL_FILE"[..])
                    && mode_changed
                    && b.contains_key(k)
                {
                    acl_rewrites.insert(*o);
                    continue;
                }
                let replace = b.contains_key(k);
                let mut op = new_op("setxattr", *o);
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
                && seen.rises_of(*o) > 0
            {
                // An attribute block rewritten with the same names and
                // values: a value replaced by an equal one.
                let mut op = new_op("setxattr", *o);
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
                let mut op = new_op("removexattr", *o);
                op.name = Some(show(k));
                // A fork that is more than one leaf block (a node, or a leaf
                // with remote values beside it) takes the node path: the
                // name is removed, then the tree fixed up after a roll that
                // logs only its blocks.
                let node_path = (!seen.state_of(*o).is_some_and(|s| s.is_dir())
                    && self.tracker.node_form(*o))
                    || seen.before_has(*o, |s| s.anextents > 1)
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
        (acl_rewrites, attr_owners)
    }
}
