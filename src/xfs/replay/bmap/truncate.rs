//! A fork taken apart to nothing as inactivation takes it apart
//! (`xfs_itruncate_extents` -> `xfs_bunmapi_range`): `__xfs_bunmapi` calls
//! of at most two extents each (`XFS_ITRUNC_MAX_EXTENTS`), last extent
//! first, each call a transaction of its own whose deferred work is
//! finished before the next. On a bmbt every record goes through the
//! engine's delete, so that the last leaf borrows from its left sibling or
//! joins it exactly where the kernel's does (a joined leaf is freed in the
//! middle of the call, before the extent's own reverse mapping), and the
//! tree goes back to a list at the end of the call after which the
//! extents fit the inode (`xfs_bmap_btree_to_extents`, its leaf freed
//! after the call's other work).
//!
//! Nothing is kept: the fork's blocks all end up freed (their buffers
//! invalidated), and the caller writes the freed inode itself.

use super::{ForkEditor, Rec};
use crate::xfs::error::Location;
use crate::xfs::format::dinode::XfsDinode;
use crate::xfs::format::dinode::XFS_DINODE_FMT_BTREE;
use crate::xfs::fs::be64;
use crate::xfs::read::ReadAt;
use crate::xfs::replay::ag::{damaged, EditResult};
use crate::xfs::replay::alloc::RmapOwner;
use crate::xfs::replay::defer::{FreeOwner, Rmap, Work};
use crate::xfs::replay::set_be64;
use crate::xfs::types::FsBlock;
use core::mem::offset_of;

/// One extent unmapped by a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::xfs::replay) struct Unmapped {
    /// First file block.
    pub off: u64,
    /// First filesystem block.
    pub start: u64,
    pub len: u64,
    pub unwritten: bool,
}

/// One `__xfs_bunmapi` call of a truncate.
#[derive(Debug, Default)]
pub(in crate::xfs::replay) struct TruncateCall {
    /// The extents unmapped, in order, each after the frees of the bmbt
    /// blocks its delete let go of (joined leaves and nodes).
    pub extents: Vec<(Vec<Work>, Unmapped)>,
    /// Frees after the call's extents: the last leaf, given up when the
    /// tree went back to a list.
    pub after: Vec<Work>,
    /// Whether the call first logged the inode through its bmbt root only
    /// (a key carried up by a record borrowed from the left sibling): such
    /// a transaction does not raise the change count once it has risen.
    pub root_first: bool,
}

impl TruncateCall {
    /// The deferred work the call queues, in the kernel's order: per
    /// extent the frees of the bmbt blocks its delete let go of, its
    /// reverse mapping's removal (unmap_shared for a reflinked file's data
    /// fork), then its refcount decrease (reflinked: blocks whose last
    /// reference goes are freed) or its free; the leaf of a tree gone back
    /// to a list last.
    pub(in crate::xfs::replay) fn work(
        self,
        geo: &crate::xfs::sb::Geometry,
        ino: u64,
        attr: bool,
        reflinked: bool,
    ) -> Vec<Work> {
        let mut work = Vec::new();
        for (frees, e) in self.extents {
            work.extend(frees);
            let (agno, agbno) = geo.split_fsb(FsBlock(e.start));
            let len = u32::try_from(e.len).unwrap_or(u32::MAX);
            work.push(Work::RmapUnmap {
                agno: agno.0,
                m: Rmap {
                    start: agbno.0,
                    len,
                    owner: ino,
                    offset: e.off,
                    attr,
                    bmbt: false,
                    unwritten: e.unwritten,
                },
                shared: reflinked,
            });
            work.push(if reflinked {
                Work::Refcount {
                    agno: agno.0,
                    agbno: agbno.0,
                    len,
                    adj: -1,
                }
            } else {
                Work::Free {
                    agno: agno.0,
                    agbno: agbno.0,
                    len,
                    owner: FreeOwner::Skip,
                }
            });
        }
        work.extend(self.after);
        work
    }
}

impl<R: ReadAt> ForkEditor<'_, R> {
    /// The calls that take inode `ino`'s data or attr fork apart: every
    /// extent goes, and nothing is kept (the inode is freed next).
    pub(in crate::xfs::replay) fn truncate_calls(
        &mut self,
        ino: u64,
        attr: bool,
    ) -> EditResult<Vec<TruncateCall>> {
        Ok(self.truncate(ino, attr, 0)?.0)
    }

    /// The calls that unmap inode `ino`'s data fork from file block
    /// `from` on (`xfs_itruncate_extents_flags` to a size, as
    /// `xfs_free_eofblocks` does: an extent across `from` keeps its front),
    /// the fork kept as they leave it, with di_nblocks less what went; the
    /// change count is the caller's. Also the data fork's extents left.
    pub(in crate::xfs::replay) fn truncate_from(
        &mut self,
        ino: u64,
        from: u64,
    ) -> EditResult<(Vec<TruncateCall>, u64)> {
        let (calls, f) = self.truncate(ino, false, from)?;
        let left = f.nextents;
        if !calls.is_empty() {
            self.log_inode(ino, f.ioff, f.bytes, 0)?;
        }
        Ok((calls, left))
    }

    fn truncate(
        &mut self,
        ino: u64,
        attr: bool,
        from: u64,
    ) -> EditResult<(Vec<TruncateCall>, super::ForkAt)> {
        let mut f = self.fork(ino, attr)?;
        let mut no_alloc = |_: u32, _: u32, _: RmapOwner| -> EditResult<Option<u32>> { Ok(None) };
        let mut calls: Vec<TruncateCall> = Vec::new();
        // Each call removes at least one record or cuts the last one.
        let limit = f.nextents.saturating_add(1);
        let mut list: Option<Vec<Rec>> = None;
        let mut gone = 0u64;
        let mut done = false;
        while !done {
            if u64::try_from(calls.len()).unwrap_or(u64::MAX) > limit {
                return damaged(
                    "inode",
                    Some(Location::Inode { ino }),
                    format!(
                        "its fork's {} extents are not all unmapped by {limit} calls",
                        f.nextents
                    ),
                );
            }
            self.begin_transaction();
            let mut call = TruncateCall::default();
            for _ in 0..2 {
                let piece = if f.format == XFS_DINODE_FMT_BTREE {
                    self.unmap_btree_one(&mut f, from, u64::MAX, &mut no_alloc)?
                } else {
                    let recs = match list.as_mut() {
                        Some(l) => l,
                        None => list.insert(self.list(&f)?),
                    };
                    match recs.pop() {
                        Some(r) if r.end() > from => {
                            let (front, piece, _) = r.cut(from, u64::MAX);
                            if front.len > 0 {
                                recs.push(front);
                            }
                            f.nextents = u64::try_from(recs.len()).unwrap_or(0);
                            Some(piece)
                        }
                        Some(r) => {
                            recs.push(r);
                            None
                        }
                        None => None,
                    }
                };
                let Some(p) = piece else {
                    done = true;
                    break;
                };
                gone = gone.saturating_add(p.len);
                let (before, _) = self.take_let_go();
                call.extents.push((
                    before,
                    Unmapped {
                        off: p.off,
                        start: p.start,
                        len: p.len,
                        unwritten: p.unwritten,
                    },
                ));
            }
            if call.extents.is_empty() {
                break;
            }
            call.root_first = self.first_log == Some(false);
            if f.format == XFS_DINODE_FMT_BTREE && f.nextents <= f.maxext() {
                self.btree_to_extents(&mut f)?;
                let (before, after) = self.take_let_go();
                call.after = before.into_iter().chain(after).collect();
            }
            calls.push(call);
        }
        if f.nextents != 0 && f.format == XFS_DINODE_FMT_BTREE && from == 0 {
            return damaged(
                "inode",
                Some(Location::Inode { ino }),
                format!("its fork counts {} more extents than it maps", f.nextents),
            );
        }
        if let Some(recs) = list {
            self.put_list(&mut f, &recs)?;
        }
        let nb = be64(&f.bytes, offset_of!(XfsDinode, di_nblocks))
            .unwrap_or(0)
            .saturating_sub(gone);
        set_be64(&mut f.bytes, offset_of!(XfsDinode, di_nblocks), nb)?;
        Ok((calls, f))
    }
}
