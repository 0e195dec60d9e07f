//! Inode fields changed in a checkpoint: writes, truncates and setattrs
//! (kernel: `xfs_setattr_size` and `xfs_setattr_nonsize` in `xfs_iops.c`,
//! the write path of `xfs_file.c`).

use std::collections::BTreeSet;

use super::{new_op, Inference, NewOp, Seen};
use crate::xfs::format::dinode::{S_IFMT, S_IFREG};
use crate::xfs::ops::track::Before;
use crate::xfs::read::ReadAt;

impl<R: ReadAt> Inference<'_, R> {
    /// The write, truncate and setattr operations of a checkpoint, added to
    /// `new_ops`.
    pub(super) fn field_ops(
        &self,
        seen: &Seen<'_>,
        victims: &[(u64, usize)],
        attr_owners: &BTreeSet<u64>,
        acl_rewrites: &BTreeSet<u64>,
        new_ops: &mut Vec<NewOp>,
    ) {
        // A new inode whose access time is past its creation time had its
        // times set after the create (`touch`): a setattr.
        for (ino, (_, a)) in &seen.inodes {
            let Some(a) = a else { continue };
            if !seen.created(*ino) {
                continue;
            }
            if a.crtime.is_some_and(|c| c != a.atime) {
                new_ops.push(NewOp {
                    op: new_op("setattr", *ino),
                    variable: false,
                    silent: false,
                });
            }
            // A new regular file with data was written.
            if a.mode & S_IFMT == S_IFREG && (a.size > 0 || a.nextents > 0) {
                new_ops.push(NewOp {
                    op: new_op("write", *ino),
                    variable: true,
                    silent: false,
                });
            }
        }

        // Inode fields: writes, truncates, setattrs.
        for (ino, (b, a)) in &seen.inodes {
            let (Before::Known(b), Some(a)) = (b, a) else {
                continue;
            };
            if !b.allocated() || !a.allocated() || seen.created(*ino) || a.nlink == 0 {
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
                let mut op = new_op(k, *ino);
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
                && seen.rises_of(*ino) > 0
                && a.nlink == b.nlink
                && !victims.iter().any(|(v, _)| v == ino)
                && !new_ops.iter().any(|o| o.op.ino == *ino)
                && !attr_owners.contains(ino);
            if ids || times_alone || ctime_only {
                let mut op = new_op("setattr", *ino);
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
    }
}
