//! Inodes left on the AGI unlinked lists, freed as the kernel frees them at
//! mount (`xlog_recover_process_iunlinks`: each list from its head, one
//! inode at a time, `xfs_inactive`):
//!
//! ```text
//!  truncate the data fork (xfs_inactive_truncate: a regular file with a
//!      size or blocks, a directory or symlink in blocks), last extent
//!      first, two per __xfs_bunmapi call, a bmbt through the btree
//!      engine's deletes (bmap/truncate.rs): a leaf left under half full
//!      borrows from its left sibling or joins it, the joined block freed
//!      before the extent's own work; the tree back to a list at the end
//!      of the call after which the extents fit the inode, its leaf freed
//!      last; per extent, rmap unmap (unmap_shared for a reflinked file;
//!      no intent without the rmapbt), then refcount decrease (reflinked:
//!      blocks whose last reference goes are freed) or free (not
//!      reflinked)
//!  drop the attr fork (xfs_attr_inactive): inline in one transaction; in
//!      blocks, the da tree invalidated depth first (a roll per child of
//!      every node and one for the root; the blocks are not written), then
//!      truncated as the data fork is
//!  xfs_ifree: off its unlinked list (the AGI bucket takes its next),
//!      inobt record marks it free, finobt too (inserted if new), AGI
//!      freecount + 1; a chunk left all free is deleted from both trees
//!      (AGI count - 64), its blocks freed (owner "inodes")
//! ```
//!
//! Inodes of a freed chunk are left as recovery wrote them (the kernel
//! stales their buffers); inodes of a kept chunk get the freed core,
//! `di_changecount` bumped once per transaction that logs the inode as the
//! kernel counts them: a transaction whose first log of the inode is its
//! bmbt root alone (a key carried up by a borrowed record) does not raise
//! it (checked against the kernel's recovery on replay-unlinked,
//! replay-unlinked-reflink, replay-unlinked-attr and
//! replay-unlinked-attr-normap, the random-workload images, and the
//! differential images diff-d9100 to diff-d9152: files of hundreds of
//! extents in bmbts of several leaves).
//!
//! An inode whose attr tree the kernel's verifier rejects stays on its list
//! after its data truncate, as the kernel leaves it; the kernel then fails
//! on the next inode of that list (the filesystem is shut down during
//! mount), and so does this.
//!
//! Each inode is freed whole or not at all; the first one that cannot be
//! (a btree change the editor refuses) stops the walk and it and the rest
//! are reported.

use super::ag::{key_ino, AgTree, EditError, EditResult};
use super::bmap::ForkEditor;
use super::defer::{Engine, FreeOwner, Rmap, Work};
use super::{set_be16, set_be32, set_be64};
use crate::xfs::bmap::Fork;
use crate::xfs::error::Location;
use crate::xfs::error::Result;
use crate::xfs::format::ag::NULLAGINO;
use crate::xfs::format::btree::XFS_RMAP_OWN_INODES;
use crate::xfs::format::btree::{XfsInobtRecFull, XfsInobtRecSparse};
use crate::xfs::format::dinode::XfsDinode;
use crate::xfs::fs::{be32, be64, Fs};
use crate::xfs::image::{Image, Overlay};
use crate::xfs::read::{ReadAt, ReadError};
use crate::xfs::replay::ag::damaged;
use crate::xfs::types::{Ino, Lsn};
use core::mem::offset_of;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use zerocopy::{FromBytes, IntoBytes};

/// The replayed state as a readable image.
pub struct OvReader<'a, R: ReadAt> {
    pub fs: &'a Fs<R>,
    pub ov: &'a Overlay,
}

impl<R: ReadAt> ReadAt for OvReader<'_, R> {
    fn len(&self) -> u64 {
        self.fs.img.len()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::result::Result<(), ReadError> {
        let len = u64::try_from(buf.len()).unwrap_or(u64::MAX);
        let b = self
            .fs
            .img
            .read_disk("replayed image", offset, len)
            .map_err(|e| ReadError(e.to_string()))?;
        buf.copy_from_slice(b.get(..buf.len()).unwrap_or(&[]));
        self.ov.apply_to(offset, buf);
        Ok(())
    }
}

/// What became of the inodes on the unlinked lists.
#[derive(Clone, Debug, Default, Serialize)]
pub struct UnlinkedReport {
    /// Inodes freed, in the kernel's order.
    pub freed: Vec<u64>,
    /// Inode chunks freed: (AG, first agino).
    pub chunks_freed: Vec<(u32, u32)>,
    /// Inodes still on a list (not freed), and why the first was not.
    pub left: Vec<u64>,
    pub not_freed: Option<String>,
    /// Inodes the kernel leaves on their lists too: their inactivation
    /// fails (an attribute block its verifier rejects), after the truncate
    /// of their data.
    pub kept: Vec<KeptInode>,
    pub work_items: u64,
    /// AGs that inodes still listed (or their blocks) live in.
    pub ags_of_left: Vec<u32>,
    /// The log items the kernel writes for this work, in the checkpoint
    /// after the intents' one ([`logged_items`]).
    #[serde(skip)]
    pub logged: Vec<super::ckpt::Item>,
    /// That checkpoint laid out as the kernel writes it, at its LSN (set
    /// by the export, which knows the log's writer).
    pub checkpoint: Option<super::ckpt::Checkpoint>,
}

/// An inode left on its unlinked list, as the kernel leaves it.
#[derive(Clone, Debug, Serialize)]
pub struct KeptInode {
    pub ino: u64,
    /// Why its inactivation failed.
    pub why: String,
}

const AGI_COUNT: usize = 16;
const AGI_FREECOUNT: usize = 28;

/// One inobt record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Irec {
    start: u32,
    holemask: u16,
    count: u8,
    freecount: u8,
    free: u64,
}

fn irec_parse(b: &[u8], sparse: bool) -> Option<Irec> {
    if sparse {
        let (r, _) = XfsInobtRecSparse::ref_from_prefix(b).ok()?;
        Some(Irec {
            start: r.ir_startino.get(),
            holemask: r.ir_holemask.get(),
            count: r.ir_count,
            freecount: r.ir_freecount,
            free: r.ir_free.get(),
        })
    } else {
        let (r, _) = XfsInobtRecFull::ref_from_prefix(b).ok()?;
        Some(Irec {
            start: r.ir_startino.get(),
            holemask: 0,
            count: 64,
            freecount: u8::try_from(r.ir_freecount.get()).unwrap_or(u8::MAX),
            free: r.ir_free.get(),
        })
    }
}

fn irec_bytes(r: &Irec, sparse: bool) -> Vec<u8> {
    if sparse {
        XfsInobtRecSparse {
            ir_startino: r.start.into(),
            ir_holemask: r.holemask.into(),
            ir_count: r.count,
            ir_freecount: r.freecount,
            ir_free: r.free.into(),
        }
        .as_bytes()
        .to_vec()
    } else {
        XfsInobtRecFull {
            ir_startino: r.start.into(),
            ir_freecount: u32::from(r.freecount).into(),
            ir_free: r.free.into(),
        }
        .as_bytes()
        .to_vec()
    }
}

/// The first inode number of each 4-inode holemask bit's run of
/// allocated inodes, as (first inode offset, inode count) runs.
fn allocated_runs(holemask: u16) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for bit in 0..16u32 {
        if holemask & (1 << bit) != 0 {
            continue;
        }
        let first = bit.saturating_mul(4);
        match out.last_mut() {
            Some(l) if l.0.saturating_add(l.1) == first => l.1 = l.1.saturating_add(4),
            _ => out.push((first, 4)),
        }
    }
    out
}

struct Ctx<'a, 'f, R: ReadAt> {
    fs: &'a Fs<R>,
    /// What recovery wrote, under the view.
    ov: &'f Overlay,
    view: &'a Fs<OvReader<'f, R>>,
    engine: Engine<'a, R>,
    /// Inode bytes to write (inodes of chunks kept).
    inodes: BTreeMap<u64, (u64, Vec<u8>)>,
    chunks_freed: Vec<(u32, u32)>,
    /// Inodes freed whose di_next_unlinked the removal set to null (it
    /// was not): the kernel logs that word in the inode's cluster buffer.
    next_logged: Vec<u64>,
    /// Blocks of a fork invalidated (bmbt blocks freed, attr blocks
    /// dropped): each logged as a cancelled buffer.
    invalidated: u64,
}

impl<R: ReadAt> Ctx<'_, '_, R> {
    /// The `__xfs_bunmapi` calls that take inode `ino`'s data or attr fork
    /// apart (two extents each, from the end: [`ForkEditor::truncate_calls`]),
    /// each with the deferred work it queues in the kernel's order: per
    /// extent the frees of the bmbt blocks its delete let go of, its
    /// reverse mapping's removal (unmap_shared for a reflinked file), then
    /// its refcount decrease (reflinked: blocks whose last reference goes
    /// are freed) or its free; the leaf of a tree gone back to a list last.
    /// Also how many of the calls first log the inode through its bmbt
    /// root only, the first call left out when `first_logs_core` (the
    /// data fork's truncate logs the new size before its first call).
    fn unmap_calls(
        &mut self,
        ino: u64,
        attr: bool,
        reflinked: bool,
        first_logs_core: bool,
    ) -> EditResult<(Vec<Vec<Work>>, u64)> {
        let g = &self.fs.geo;
        let mut ed = ForkEditor::new(self.fs, self.ov);
        let mut out = Vec::new();
        let mut root_first = 0u64;
        for (i, call) in ed.truncate_calls(ino, attr)?.into_iter().enumerate() {
            if call.root_first && !(i == 0 && first_logs_core) {
                root_first = root_first.saturating_add(1);
            }
            let work = call.work(g, ino, attr, reflinked);
            // Each bmbt block freed is invalidated (xfs_btree_free_block).
            let bmbt = work
                .iter()
                .filter(|w| matches!(w, Work::Free { owner: FreeOwner::Known(r), .. } if r.bmbt))
                .count();
            self.invalidated = self
                .invalidated
                .saturating_add(u64::try_from(bmbt).unwrap_or(0));
            out.push(work);
        }
        Ok((out, root_first))
    }

    /// The rolls `xfs_attr3_root_inactive` makes over an attr fork in
    /// blocks: one per child of every node (depth first), one for the root.
    fn attr_invalidation_rolls(&self, inode: &crate::xfs::inode::Inode) -> EditResult<(u64, u64)> {
        use crate::xfs::attr::AttrGeometry;
        use crate::xfs::bmap::WhichFork;
        use crate::xfs::dabtree::{parse_node, read_da_block, InodeFork};
        use crate::xfs::format::attr::{XFS_ATTR3_LEAF_MAGIC, XFS_ATTR_LEAF_MAGIC};
        use crate::xfs::format::da::XFS_DA_NODE_MAXDEPTH;
        use crate::xfs::format::da::{XFS_DA3_NODE_MAGIC, XFS_DA_NODE_MAGIC};
        const S: &str = "attr block (inactivation)";
        let src = InodeFork {
            fs: self.view,
            inode,
            which: WhichFork::Attr,
        };
        let dg = AttrGeometry::new(&self.view.geo, &self.view.sb, inode.ino).da;
        // Blocks visited are bounded by the fork's blocks (a loop in the
        // tree cannot make the walk longer).
        let limit: u64 = inode
            .attr
            .as_ref()
            .map(|f| f.extents().iter().map(|e| e.len).sum())
            .unwrap_or(0);
        let mut rolls = 1u64;
        let mut visited = 0u64;
        // (dablk, level)
        let mut stack = vec![(0u64, 1usize)];
        while let Some((dablk, level)) = stack.pop() {
            visited = visited.saturating_add(1);
            if visited > limit.saturating_add(1) {
                return damaged(
                    "inode",
                    Some(Location::Inode { ino: inode.ino.0 }),
                    format!("the attr tree visits more blocks than the fork has ({limit})"),
                );
            }
            let buf = read_da_block(&src, &self.view.geo, &dg, S, dablk)?;
            match buf.da_magic() {
                Some(XFS_DA3_NODE_MAGIC | XFS_DA_NODE_MAGIC) => {
                    if level > XFS_DA_NODE_MAXDEPTH {
                        return damaged("inode", Some(Location::Inode { ino: inode.ino.0 }), format!("attr tree deeper than {XFS_DA_NODE_MAXDEPTH} levels"));
                    }
                    let node = parse_node(&buf, &dg)?;
                    rolls = rolls.saturating_add(u64::try_from(node.entries.len()).unwrap_or(0));
                    for (_, before) in node.entries.iter().rev() {
                        stack.push((u64::from(*before), level.saturating_add(1)));
                    }
                }
                Some(XFS_ATTR3_LEAF_MAGIC | XFS_ATTR_LEAF_MAGIC) => {}
                m => {
                    return Err(EditError::Read(buf.bad(
                        S,
                        8,
                        format!(
                            "inode {}: attr fork block {dablk} has magic {:#06x}, neither a node nor a leaf",
                            inode.ino.0,
                            m.unwrap_or(0)
                        ),
                    )))
                }
            }
        }
        Ok((rolls, visited))
    }

    /// `xfs_inactive` then `xfs_ifree` for one inode; returns the inode
    /// that follows it on its list.
    fn free_inode(&mut self, ino: u64, agno: u32, agino: u32, bucket: usize) -> EditResult<Freed> {
        let inode = self.view.inode(Ino(ino))?;
        let core = &inode.core;
        if core.mode == 0 || core.nlink != 0 {
            return damaged(
                "inode",
                Some(Location::Inode { ino }),
                format!(
                    "on an unlinked list with mode {:o} and {} links",
                    core.mode, core.nlink
                ),
            );
        }
        let next = core.next_unlinked;
        if next != NULLAGINO {
            self.next_logged.push(ino);
        }
        let g = &self.fs.geo;
        let ftype = core.mode & 0o170000;
        let reflink = core.flags2_or_zero() & (1 << 1) != 0;
        // xfs_inactive: a regular file with a size or data, a directory
        // with blocks, a symlink in blocks are truncated to size 0.
        let in_blocks = matches!(inode.data, Fork::Extents { ref extents } if !extents.is_empty())
            || matches!(inode.data, Fork::Btree { .. });
        let zero_size = match ftype {
            0o100000 => core.size != 0 || in_blocks,
            0o040000 | 0o120000 => in_blocks,
            _ => false,
        };
        // Each __xfs_bunmapi call unmaps up to two extents from the end
        // (XFS_ITRUNC_MAX_EXTENTS), then its deferred work is finished.
        let mut calls: Vec<Vec<Work>> = Vec::new();
        let mut root_first = 0u64;
        if zero_size {
            let reflinked = reflink && ftype == 0o100000;
            (calls, root_first) = self.unmap_calls(ino, false, reflinked, true)?;
        }
        // Transactions that log the inode, each bumping di_changecount
        // once: the truncate's first (size 0), then per bunmapi call one
        // per deferred item finished and one more (the rolls); the attr
        // fork's removal (any attr fork, even empty); the ifree. This
        // count reproduces the kernel's on replay-unlinked and
        // replay-unlinked-reflink (files of 1, 10 and 60 extents, and none,
        // reflinked or not), less the calls that first log only the bmbt
        // root (kernel recoveries of the differential runs of seeds 9100
        // to 9159: files of hundreds of extents in bmbts of several leaves).
        let mut txs: u64 = 1;
        if zero_size && ftype == 0o120000 {
            // xfs_inactive_symlink_rmt: one transaction sets the size to 0
            // and unmaps every extent in one __xfs_bunmapi call; its commit
            // finishes the deferred work, each roll logging the inode into
            // the transaction it ends, the last (committed, not rolled)
            // without it: as many change-count rises as deferred ops
            // (kernel recoveries of differential runs d1038, d1046, d1179).
            let all: Vec<Work> = calls.drain(..).flatten().collect();
            let before = self.engine.dfps;
            self.engine.run(all)?;
            txs = txs.saturating_add(self.engine.dfps.saturating_sub(before).max(1));
        } else if zero_size {
            // xfs_inactive_truncate: the size goes to 0 in its first
            // transaction; with nothing mapped, the one __xfs_bunmapi call
            // finds no work and xfs_defer_finish still rolls the dirty
            // transaction once (a file whose size was never written back:
            // random-9020, random-31008).
            txs = txs.saturating_add(1);
            if calls.is_empty() {
                txs = txs.saturating_add(1);
            }
            for call in calls {
                // Work queued one after another of the same kind shares a
                // deferred-op group (xfs_defer_add appends to the last):
                // one roll each.
                let before = self.engine.dfps;
                self.engine.run(call)?;
                txs = txs
                    .saturating_add(self.engine.dfps.saturating_sub(before))
                    .saturating_add(1);
            }
            txs = txs.saturating_sub(root_first);
        }
        // xfs_attr_inactive: one transaction that drops an inline fork (or
        // an empty one); a fork in blocks is first invalidated block by
        // block (one roll per da child, one for the root: the blocks are
        // never written, only dropped from the cache), then truncated as
        // the data fork is, the fork removed in the last transaction.
        if let Some(a) = &inode.attr {
            if a.extents().iter().any(|e| e.len > 0) {
                // The tree is read before anything is logged: a block the
                // kernel's verifier rejects fails the inactivation there,
                // with the truncate above committed, and the inode stays
                // on its list (xfs_inactive returns the error).
                let rolls = match self.attr_invalidation_rolls(&inode) {
                    Ok((r, blocks)) => {
                        // xfs_trans_binval on every block of the tree.
                        self.invalidated = self.invalidated.saturating_add(blocks);
                        r
                    }
                    Err(e) => {
                        let why = e.to_string();
                        self.keep_inode(&inode, zero_size, txs.saturating_sub(1))?;
                        return Ok(Freed::Kept { next, why });
                    }
                };
                txs = txs.saturating_add(1);
                let (acalls, aroot_first) = self.unmap_calls(ino, true, false, false)?;
                txs = txs.saturating_add(rolls);
                for call in acalls {
                    let before = self.engine.dfps;
                    self.engine.run(call)?;
                    txs = txs
                        .saturating_add(self.engine.dfps.saturating_sub(before))
                        .saturating_add(1);
                }
                txs = txs.saturating_sub(aroot_first);
            } else {
                txs = txs.saturating_add(1);
            }
        }
        // xfs_ifree: the unlinked list, the inode btrees, the AGI.
        let sb_inopblock = self.fs.sb.inopblock;
        let ialloc_blks = u32::try_from(64u64 >> g.inopblog).unwrap_or(1).max(1);
        let inopblog = g.inopblog;
        let sparse = self.fs.sb.features_incompat & (1 << 1) != 0;
        let finobt = self.fs.sb.features_ro_compat & 1 != 0;
        let s = self.engine.store(agno)?;
        let head_off = 40usize.saturating_add(bucket.saturating_mul(4));
        if s.agi_u32(head_off)? != agino {
            return damaged(
                "AGI",
                Some(Location::Ag { agno }),
                format!("inode {ino} is not the head of bucket {bucket}"),
            );
        }
        s.set_agi_u32(head_off, next)?;
        // xfs_difree_inobt
        let (le, _) = s.neighbors(AgTree::Ino, key_ino(agino))?;
        let Some(mut rec) = le
            .and_then(|r| irec_parse(&r, sparse))
            .filter(|r| r.start <= agino && agino < r.start.saturating_add(64))
        else {
            return damaged(
                "inode",
                Some(Location::Inode { ino }),
                "no inobt record holds it",
            );
        };
        let old_start = rec.start;
        let bit = 1u64 << (agino.saturating_sub(rec.start) & 63);
        if rec.free & bit != 0 {
            return damaged(
                "inobt",
                Some(Location::Inode { ino }),
                "the inode is already free",
            );
        }
        rec.free |= bit;
        rec.freecount = rec.freecount.saturating_add(1);
        let count = s.agi_u32(AGI_COUNT)?;
        let freecount = s.agi_u32(AGI_FREECOUNT)?;
        let delete_chunk = rec.free == u64::MAX && sb_inopblock <= 64;
        if delete_chunk {
            s.set_agi_u32(AGI_COUNT, count.saturating_sub(u32::from(rec.count)))?;
            s.set_agi_u32(
                AGI_FREECOUNT,
                freecount.saturating_sub(u32::from(rec.freecount).saturating_sub(1)),
            )?;
            s.delete(AgTree::Ino, key_ino(old_start))?;
        } else {
            s.update(AgTree::Ino, key_ino(old_start), &irec_bytes(&rec, sparse))?;
            s.set_agi_u32(AGI_FREECOUNT, freecount.saturating_add(1))?;
        }
        // xfs_difree_finobt
        if finobt {
            match s
                .find(AgTree::Fino, key_ino(old_start))?
                .and_then(|r| irec_parse(&r, sparse))
            {
                None => {
                    if rec.freecount != 1 {
                        return damaged(
                            "inode",
                            Some(Location::Inode { ino }),
                            "its chunk has free inodes but no finobt record",
                        );
                    }
                    s.insert(AgTree::Fino, &irec_bytes(&rec, sparse))?;
                }
                Some(mut f) => {
                    f.free |= bit;
                    f.freecount = f.freecount.saturating_add(1);
                    if f.free == u64::MAX && sb_inopblock <= 64 {
                        s.delete(AgTree::Fino, key_ino(old_start))?;
                    } else {
                        s.update(AgTree::Fino, key_ino(old_start), &irec_bytes(&f, sparse))?;
                    }
                }
            }
        }
        if delete_chunk {
            // xfs_difree_inode_chunk: the allocated parts of the chunk.
            let first = rec.start >> inopblog;
            let runs = if rec.holemask == 0 {
                vec![(0u32, 64u32)]
            } else {
                allocated_runs(rec.holemask)
            };
            let mut frees = Vec::new();
            for (off, n) in runs {
                let b = first.saturating_add(off >> inopblog);
                let len = (n >> inopblog).max(1).min(ialloc_blks);
                frees.push(Work::Free {
                    agno,
                    agbno: b,
                    len,
                    owner: FreeOwner::Known(Rmap {
                        start: b,
                        len,
                        owner: XFS_RMAP_OWN_INODES,
                        offset: 0,
                        attr: false,
                        bmbt: false,
                        unwritten: false,
                    }),
                });
            }
            self.engine.run(frees)?;
            self.chunks_freed.push((agno, rec.start));
            // Inodes of the chunk written earlier are dropped (stale).
            let lo = u64::from(agno)
                .checked_shl(u32::from(g.agblklog).saturating_add(u32::from(inopblog)))
                .unwrap_or(0)
                | u64::from(rec.start);
            self.inodes
                .retain(|i, _| !(lo..lo.saturating_add(64)).contains(i));
        } else {
            // The freed core, as xfs_ifree leaves it.
            let off = self.fs.inode_offset(Ino(ino))?;
            let mut b = self
                .view
                .img
                .read_disk("inode", off, u64::from(g.inodesize))?;
            set_be16(&mut b, offset_of!(XfsDinode, di_mode), 0)?;
            if let Some(x) = b.get_mut(5) {
                *x = 2;
            }
            // The size goes to 0 only where inactivation truncated (a
            // regular file with a size or data, a directory or symlink in
            // blocks): an empty shortform directory keeps its 6 bytes.
            if zero_size {
                set_be64(&mut b, offset_of!(XfsDinode, di_size), 0)?;
            }
            set_be64(&mut b, offset_of!(XfsDinode, di_nblocks), 0)?;
            if g.v5 {
                // di_big_nextents (with NREXT64) or the v2 padding.
                set_be64(
                    &mut b,
                    core::mem::offset_of!(crate::xfs::format::dinode::XfsDinode, di_big_nextents),
                    0,
                )?;
            }
            set_be32(&mut b, offset_of!(XfsDinode, di_nextents), 0)?;
            set_be16(&mut b, offset_of!(XfsDinode, di_anextents), 0)?;
            if let Some(x) = b.get_mut(82) {
                *x = 0;
            }
            if let Some(x) = b.get_mut(83) {
                *x = 2;
            }
            set_be16(&mut b, offset_of!(XfsDinode, di_flags), 0)?;
            if g.v5 {
                let cc = be64(&b, offset_of!(XfsDinode, di_changecount))
                    .unwrap_or(0)
                    .wrapping_add(txs);
                set_be64(&mut b, offset_of!(XfsDinode, di_changecount), cc)?;
            }
            let gen = be32(&b, offset_of!(XfsDinode, di_gen))
                .unwrap_or(0)
                .wrapping_add(1);
            set_be32(&mut b, offset_of!(XfsDinode, di_gen), gen)?;
            set_be32(&mut b, offset_of!(XfsDinode, di_next_unlinked), NULLAGINO)?;
            if g.v5 {
                // New inodes' flags2: bigtime and nrext64 as the fs has them.
                let mut f2 = 0u64;
                if self.fs.sb.features_incompat & (1 << 3) != 0 {
                    f2 |= 1 << 3;
                }
                if self.fs.sb.features_incompat & (1 << 5) != 0 {
                    f2 |= 1 << 4;
                }
                set_be64(&mut b, offset_of!(XfsDinode, di_flags2), f2)?;
            }
            self.inodes.insert(ino, (off, b));
        }
        Ok(Freed::Yes { next })
    }

    /// An inode whose inactivation failed after its truncate: written as
    /// the truncate left it (size 0 where it truncated, no data extents,
    /// its blocks count down, `txs` transactions more on its change count),
    /// still on its list.
    fn keep_inode(
        &mut self,
        inode: &crate::xfs::inode::Inode,
        truncated: bool,
        txs: u64,
    ) -> EditResult<()> {
        use crate::xfs::format::dinode::XfsDinode;
        use core::mem::offset_of;
        let g = &self.fs.geo;
        let ino = inode.ino.0;
        let off = self.fs.inode_offset(inode.ino)?;
        let mut b = self
            .view
            .img
            .read_disk("inode", off, u64::from(g.inodesize))?;
        if truncated {
            let blocks: u64 = inode
                .data
                .extents()
                .iter()
                .map(|e| e.len)
                .sum::<u64>()
                .saturating_add(match &inode.data {
                    Fork::Btree { blocks, .. } => u64::try_from(blocks.len()).unwrap_or(u64::MAX),
                    _ => 0,
                });
            set_be64(&mut b, offset_of!(XfsDinode, di_size), 0)?;
            let nb = be64(&b, offset_of!(XfsDinode, di_nblocks)).unwrap_or(0);
            set_be64(
                &mut b,
                offset_of!(XfsDinode, di_nblocks),
                nb.saturating_sub(blocks),
            )?;
            if matches!(inode.data, Fork::Btree { .. }) {
                if let Some(x) = b.get_mut(offset_of!(XfsDinode, di_format)) {
                    *x = 2;
                }
            }
            if inode.core.flags2_or_zero() & (1 << 4) != 0 {
                set_be64(&mut b, offset_of!(XfsDinode, di_big_nextents), 0)?;
            } else {
                set_be32(&mut b, offset_of!(XfsDinode, di_nextents), 0)?;
            }
        }
        if g.v5 {
            let at = offset_of!(XfsDinode, di_changecount);
            let cc = be64(&b, at).unwrap_or(0).wrapping_add(txs);
            set_be64(&mut b, at, cc)?;
        }
        // Nothing logged it (nothing to truncate): it is not written.
        if truncated || txs > 0 {
            self.inodes.insert(ino, (off, b));
        }
        Ok(())
    }
}

/// What became of one inode of an unlinked list.
enum Freed {
    /// Freed; the list goes on at `next`.
    Yes { next: u32 },
    /// Its inactivation failed as the kernel's does (`why`): it stays on
    /// the list, which goes on at `next`.
    Kept { next: u32, why: String },
}

/// Free the inodes on the AGI unlinked lists of the replayed state `ov`;
/// changed blocks are stamped with `lsn`.
/// Also returns the extents its frees left busy.
pub fn process<R: ReadAt>(
    fs: &Fs<R>,
    ov: &mut Overlay,
    lsn: Lsn,
    intents_touched: &[(u64, BTreeSet<usize>)],
) -> Result<(UnlinkedReport, super::defer::Busy)> {
    let mut rep = UnlinkedReport::default();
    let g = fs.geo;
    let shift = u32::from(g.agblklog).saturating_add(u32::from(g.inopblog));
    let (changes, inodes, stale, busy) = {
        let view = Fs::open(Image::new(OvReader { fs, ov: &*ov }))?;
        let mut cx = Ctx {
            fs,
            ov: &*ov,
            view: &view,
            engine: Engine::new(fs, &*ov),
            inodes: BTreeMap::new(),
            chunks_freed: Vec::new(),
            next_logged: Vec::new(),
            invalidated: 0,
        };
        let mut stop: Option<String> = None;
        'ags: for agno in 0..g.agcount {
            for bucket in 0..64usize {
                let mut guard = 0u32;
                let mut cur = match cx
                    .engine
                    .store(agno)
                    .and_then(|s| s.agi_u32(40usize.saturating_add(bucket.saturating_mul(4))))
                {
                    Ok(h) => h,
                    Err(EditError::Read(e)) => return Err(e),
                    Err(u) => {
                        stop = Some(u.to_string());
                        break 'ags;
                    }
                };
                // An inode left on the list (its inactivation failed).
                let mut kept: Option<u64> = None;
                while cur != NULLAGINO {
                    guard = guard.saturating_add(1);
                    let ino = u64::from(agno).checked_shl(shift).unwrap_or(0) | u64::from(cur);
                    if let Some(k) = kept {
                        // The kernel then fails to take the next inode off
                        // the list (the one before it is not in memory any
                        // more): xfs_ifree fails, the filesystem is shut
                        // down during mount (seen on differential run
                        // d3458, twice).
                        let why = rep.kept.last().map_or(String::new(), |k| k.why.clone());
                        let daddr = fs.inode_offset(Ino(ino)).map_or(0, |o| o / 512);
                        return Err(crate::xfs::error::Error::corrupt(
                            "unlinked inode",
                            crate::xfs::error::Location::Daddr { daddr },
                            format!(
                                "inode {k} stays on AGI {agno} bucket {bucket} because its inactivation failed ({why}); the kernel then cannot take inode {ino}, next on that list, off it: xfs_ifree fails, the filesystem is shut down during mount and does not mount"
                            ),
                        ));
                    }
                    if guard > g.agblocks.saturating_mul(64) {
                        stop = Some(format!("AGI {agno} bucket {bucket}: the list loops"));
                        break 'ags;
                    }
                    let snap = cx.engine.snapshot();
                    let inodes_before = cx.inodes.clone();
                    let chunks_before = cx.chunks_freed.len();
                    let done_before = cx.engine.done;
                    match cx.free_inode(ino, agno, cur, bucket) {
                        Ok(Freed::Yes { next }) => {
                            rep.freed.push(ino);
                            cur = next;
                        }
                        Ok(Freed::Kept { next, why }) => {
                            rep.kept.push(KeptInode { ino, why });
                            kept = Some(ino);
                            cur = next;
                        }
                        Err(EditError::Read(e)) => return Err(e),
                        Err(u) => {
                            cx.engine.restore(snap);
                            cx.engine.done = done_before;
                            cx.inodes = inodes_before;
                            cx.chunks_freed.truncate(chunks_before);
                            stop = Some(format!("inode {ino}: {u}"));
                            break 'ags;
                        }
                    }
                }
            }
        }
        rep.not_freed = stop;
        rep.work_items = cx.engine.done;
        rep.chunks_freed = cx.chunks_freed.clone();
        rep.logged = logged_items(&cx, ov, &rep, intents_touched)?;
        let inodes = cx.inodes;
        (
            cx.engine.changed()?,
            inodes,
            cx.engine.stale()?,
            cx.engine.busy(),
        )
    };
    super::ag::stamp_into(ov, changes, lsn, fs.geo.v5);
    for (daddr, n) in stale {
        ov.revert(daddr, n);
    }
    for (_, (off, b)) in inodes {
        let (daddr, sec) = super::inode::inode_sectors(fs, ov, off, b, lsn)?;
        ov.put(daddr, &sec);
    }
    // What is still listed, and where its blocks are.
    let (_, still) = super::counters::counters(fs, ov)?;
    let view = Fs::open(Image::new(OvReader { fs, ov: &*ov }))?;
    let mut ags = std::collections::BTreeSet::new();
    for head in &still {
        let mut ino = head.ino;
        let mut guard = 0u32;
        while guard < 1 << 20 {
            guard = guard.saturating_add(1);
            let Ok(inode) = view.inode(Ino(ino)) else {
                rep.left.push(ino);
                ags.insert(head.agno);
                break;
            };
            let next = inode.core.next_unlinked;
            if rep.kept.iter().any(|k| k.ino == ino) {
                if next == NULLAGINO {
                    break;
                }
                ino = u64::from(head.agno).checked_shl(shift).unwrap_or(0) | u64::from(next);
                continue;
            }
            rep.left.push(ino);
            ags.insert(head.agno);
            let mut blocks: Vec<u64> = inode.data.extents().iter().map(|e| e.start.0).collect();
            if let Fork::Btree { blocks: b, .. } = &inode.data {
                blocks.extend(b.iter().map(|x| x.0));
            }
            for b in blocks {
                ags.insert(u32::try_from(b >> g.agblklog).unwrap_or(u32::MAX));
            }
            let next = inode.core.next_unlinked;
            if next == NULLAGINO {
                break;
            }
            ino = u64::from(head.agno).checked_shl(shift).unwrap_or(0) | u64::from(next);
        }
    }
    rep.ags_of_left = ags.into_iter().collect();
    Ok((rep, busy))
}

/// The log items of the unlinked inodes' checkpoint, as the kernel
/// formats them (see `ckpt.rs`):
///
/// * every AG block the work changed: a btree block with every chunk its
///   buffer item holds dirty, those written in the intents' checkpoint
///   too (nothing was written back between); an AG header with the
///   chunks changed since the replayed image, if this work changed it;
/// * a cancelled buffer for each AG btree block freed, each fork block
///   invalidated (bmbt blocks freed, attr blocks dropped) and each inode
///   cluster of a chunk freed;
/// * for each inode freed outside a freed chunk whose di_next_unlinked
///   pointed on, that word in its cluster buffer (`xfs_iunlink_log_dinode`);
/// * each inode freed: its format and core (an empty fork logs nothing).
fn logged_items<R: ReadAt>(
    cx: &Ctx<'_, '_, R>,
    ov: &Overlay,
    rep: &UnlinkedReport,
    intents_touched: &[(u64, BTreeSet<usize>)],
) -> Result<Vec<super::ckpt::Item>> {
    use super::ckpt::{buf_item, changed_chunks, inode_item, stale_buf_item};
    let fs = cx.fs;
    let g = &fs.geo;
    let mut out = Vec::new();
    let touched = cx.engine.touched()?;
    for (daddr, data) in cx.engine.changed()? {
        let len = u64::try_from(data.len()).unwrap_or(0);
        let off = daddr.saturating_mul(512);
        let dirty = match touched.iter().find(|(d, _)| *d == daddr) {
            Some((_, t)) => {
                let mut t = t.clone();
                if let Some((_, i)) = intents_touched.iter().find(|(d, _)| *d == daddr) {
                    t.extend(i.iter().copied());
                }
                t
            }
            None => {
                if super::counters::read(fs, ov, "logged block", off, len)? == data {
                    continue;
                }
                let before = super::counters::read_recorded(fs, ov, "logged block", off, len)?;
                let unlogged = if g.v5 {
                    super::ag::ag_stamp(&data).unlogged()
                } else {
                    Vec::new()
                };
                changed_chunks(&before, &data, &unlogged)
            }
        };
        out.extend(buf_item(data.len(), &dirty));
    }
    for (_, n) in cx.engine.cancels()? {
        out.push(stale_buf_item(
            usize::try_from(n.saturating_mul(512)).unwrap_or(0),
        ));
    }
    let bs = usize::try_from(g.blocksize).unwrap_or(0);
    for _ in 0..cx.invalidated {
        out.push(stale_buf_item(bs));
    }
    // Inode clusters (xfs_icluster_size_fsb): 8 KiB of 256-byte inodes,
    // scaled by the inode size on v5 where the alignment allows, at least
    // a block.
    let isize = u64::from(g.inodesize);
    let mut raw = 8192u64;
    if g.v5 {
        let scaled = raw.saturating_mul(isize / 256);
        if u64::from(fs.sb.inoalignmt).saturating_mul(u64::from(g.blocksize)) >= scaled {
            raw = scaled;
        }
    }
    let cluster = raw.max(u64::from(g.blocksize));
    let per_cluster = cluster.checked_div(isize).unwrap_or(1).max(1);
    let shift = u32::from(g.agblklog).saturating_add(u32::from(g.inopblog));
    let mask = 1u64.checked_shl(shift).unwrap_or(0).wrapping_sub(1);
    let in_freed_chunk = |ino: u64| {
        let agno = u32::try_from(ino.checked_shr(shift).unwrap_or(0)).unwrap_or(u32::MAX);
        let agino = u32::try_from(ino & mask).unwrap_or(u32::MAX);
        rep.chunks_freed
            .iter()
            .any(|(a, start)| *a == agno && (*start..start.saturating_add(64)).contains(&agino))
    };
    // Every cluster of a chunk freed is invalidated (xfs_ifree_cluster);
    // a sparse chunk's holes are counted as clusters too.
    for _ in &rep.chunks_freed {
        for _ in 0..64u64.checked_div(per_cluster).unwrap_or(1).max(1) {
            out.push(stale_buf_item(usize::try_from(cluster).unwrap_or(0)));
        }
    }
    let mut clusters: BTreeMap<u64, BTreeSet<usize>> = BTreeMap::new();
    for ino in &cx.next_logged {
        if in_freed_chunk(*ino) || !rep.freed.contains(ino) {
            continue;
        }
        let Ok(off) = fs.inode_offset(Ino(*ino)) else {
            continue;
        };
        let within = off.checked_rem(cluster).unwrap_or(0);
        let first = off.saturating_sub(within);
        let at = usize::try_from(within)
            .unwrap_or(0)
            .saturating_add(offset_of!(XfsDinode, di_next_unlinked));
        clusters
            .entry(first)
            .or_default()
            .extend(super::ckpt::chunks_of(at, 4));
    }
    for dirty in clusters.values() {
        out.extend(buf_item(usize::try_from(cluster).unwrap_or(0), dirty));
    }
    for _ in &rep.freed {
        out.push(inode_item(g.v5, None, None));
    }
    Ok(out)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn sparse_chunks_free_only_their_allocated_runs() {
        // Holemask bit i covers inodes 4i..4i+3; a set bit is a hole.
        assert_eq!(allocated_runs(0), vec![(0, 64)]);
        assert_eq!(allocated_runs(0xff00), vec![(0, 32)]);
        assert_eq!(allocated_runs(0x00ff), vec![(32, 32)]);
        assert_eq!(allocated_runs(0x0ff0), vec![(0, 16), (48, 16)]);
        assert!(allocated_runs(0xffff).is_empty());
    }

    #[test]
    fn the_unlinked_inodes_of_log_intents_are_walked_in_the_kernels_order() {
        // Up to the first change the btree editor refuses, the inodes are
        // freed in list order (AG, bucket, chain), and those left are
        // reported with the AGs of their blocks.
        let fs = crate::xfs::testutil::fixture_fs("log-intents");
        let r = crate::xfs::replay::replay(&fs, &mut |_| {}).unwrap();
        let mut ov = r.overlay;
        let rep = crate::xfs::replay::recover::recover(
            &fs,
            &mut ov,
            &r.report.unfinished_intents,
            r.report.head,
            crate::xfs::replay::RecoveryTime::default(),
        )
        .unwrap();
        assert!(rep.not_finished.is_none(), "{rep:?}");
        let (u, _) = process(&fs, &mut ov, r.report.head, &[]).unwrap();
        let all: Vec<u64> = u.freed.iter().chain(u.left.iter()).copied().collect();
        // AGI 1 bucket 0 (the directory 65664) comes first.
        assert_eq!(all.first(), Some(&65664));
        assert_eq!(all.len(), 20, "{u:?}");
        let mut sorted = all.clone();
        sorted.sort_unstable();
        assert_eq!(all, sorted, "AG then bucket order: {all:?}");
        if u.not_freed.is_some() {
            assert!(!u.left.is_empty() && u.ags_of_left.contains(&0));
        } else {
            assert!(u.left.is_empty());
            assert_eq!(u.chunks_freed.len(), 2);
        }
    }
}
