//! What the recovery transactions log, sized as the kernel sizes it
//! (`xfs_inode_item.c`, `xfs_buf_item.c`), and the changed inodes and bmbt
//! blocks handed over with the bytes a flush would not write kept as they
//! were.

use super::{extent_count, ForkEditor};
use crate::xfs::error::Result;
use crate::xfs::format::da::XfsDa3Blkinfo;
use crate::xfs::format::dinode::XfsBtreeBlockLong;
use crate::xfs::format::dinode::XFS_BTREE_LBLOCK_CRC_OFF;
use crate::xfs::format::dinode::{
    XfsDinode, XFS_DINODE_FMT_BTREE, XFS_DINODE_FMT_EXTENTS, XFS_DINODE_V2_SIZE, XFS_DINODE_V3_SIZE,
};
use crate::xfs::fs::{be16, be64};
use crate::xfs::read::ReadAt;
use crate::xfs::replay::{put_crc, set_be64};
use crate::xfs::types::Lsn;
use core::mem::offset_of;

impl<'a, R: ReadAt> ForkEditor<'a, R> {
    /// What the kernel logs for the changes made so far, as log items:
    /// each changed inode with the forks whose records changed, each
    /// changed bmbt or attr block by its changed chunks, each bmbt block
    /// let go of as a cancelled buffer. Remote attr values are written,
    /// not logged.
    pub fn logged(&self) -> Result<Vec<crate::xfs::replay::ckpt::Item>> {
        Ok(self.logged_between(None, None)?.0)
    }

    /// What this editor has changed so far, for a cut at a log force,
    /// and what it logged since the cut before (taken: the force writes
    /// it, so the next checkpoint starts with nothing logged).
    pub fn cut(&mut self) -> crate::xfs::replay::ckpt::ForkCut {
        let touched = self.since_cut();
        self.logged_since.clear();
        crate::xfs::replay::ckpt::ForkCut {
            inodes: self.inodes.clone(),
            blocks: self.blocks.clone(),
            attr_blocks: self.attr_blocks.clone(),
            invalidated: self.invalidated.len(),
            touched,
            forks_logged: self.forks_logged.clone(),
        }
    }

    /// The bmbt blocks logged since the last cut, each with the chunks its
    /// buffer item holds dirty.
    fn since_cut(&self) -> std::collections::BTreeMap<u64, std::collections::BTreeSet<usize>> {
        self.logged_since
            .iter()
            .filter_map(|o| self.touched.get(o).map(|t| (*o, t.clone())))
            .collect()
    }

    /// The log items of the checkpoint that the changes from `prev` to
    /// `cur` make (cuts; `prev` `None` for the start, `cur` `None` for
    /// now): the inodes and blocks that changed between them, and the bmbt
    /// blocks invalidated between them. Also the byte offsets of the
    /// inodes and blocks logged.
    pub fn logged_between(
        &self,
        prev: Option<&crate::xfs::replay::ckpt::ForkCut>,
        cur: Option<&crate::xfs::replay::ckpt::ForkCut>,
    ) -> Result<(
        Vec<crate::xfs::replay::ckpt::Item>,
        std::collections::BTreeSet<u64>,
    )> {
        use crate::xfs::replay::ckpt::{
            buf_item, changed_chunks, inode_item, stale_buf_item, ForkLog,
        };
        let v5 = self.fs.geo.v5;
        let before = |off: u64, len: usize| -> Result<Vec<u8>> {
            let mut b =
                self.fs
                    .img
                    .read_disk("logged block", off, u64::try_from(len).unwrap_or(0))?;
            self.base.apply_to(off, &mut b);
            Ok(b)
        };
        let mut out = Vec::new();
        let mut offs = std::collections::BTreeSet::new();
        let now = self.since_cut();
        let (inodes, blocks, attr_blocks, invalidated, touched, forks_logged) = match cur {
            Some(c) => (
                &c.inodes,
                &c.blocks,
                &c.attr_blocks,
                c.invalidated,
                &c.touched,
                &c.forks_logged,
            ),
            None => (
                &self.inodes,
                &self.blocks,
                &self.attr_blocks,
                self.invalidated.len(),
                &now,
                &self.forks_logged,
            ),
        };
        for (off, b) in inodes {
            // An inode is in the checkpoint if a transaction of it logged
            // the inode (its core changes each time).
            if prev.and_then(|p| p.inodes.get(off)) == Some(b) {
                continue;
            }
            let orig = before(*off, b.len())?;
            let v3 = b.get(offset_of!(XfsDinode, di_version)) == Some(&3);
            let (core, dend) = fork_split(b);
            let forkoff = dend != b.len();
            // The forks logged since the inode item was made: the kernel
            // logs the fields its item holds, over earlier checkpoints too.
            let changed = |r: core::ops::Range<usize>| b.get(r.clone()) != orig.get(r);
            let fork = |attr: bool, at: usize| -> Option<ForkLog> {
                let format = b
                    .get(if attr {
                        offset_of!(XfsDinode, di_aformat)
                    } else {
                        offset_of!(XfsDinode, di_format)
                    })
                    .copied();
                match format {
                    Some(1) if attr => Some(ForkLog::Local(usize::from(be16(b, at).unwrap_or(0)))),
                    Some(1) => Some(ForkLog::Local(
                        usize::try_from(be64(b, offset_of!(XfsDinode, di_size)).unwrap_or(0))
                            .unwrap_or(0),
                    )),
                    Some(2) => Some(ForkLog::Extents(extent_count(b, attr))),
                    Some(3) => Some(ForkLog::Btree(usize::from(
                        be16(b, at.saturating_add(2)).unwrap_or(0),
                    ))),
                    _ => None,
                }
            };
            let data = (changed(core..dend) || forks_logged.contains(&(*off, false)))
                .then(|| fork(false, core))
                .flatten();
            let attr = (forkoff
                && (changed(dend..b.len()) || forks_logged.contains(&(*off, true))))
            .then(|| fork(true, dend))
            .flatten();
            out.push(inode_item(v3, data, attr));
            offs.insert(*off);
        }
        let none = std::collections::BTreeMap::new();
        for (map, stamps, was, logged, is_bmbt) in [
            (
                blocks,
                [32..40, 64..68],
                prev.map(|p| &p.blocks),
                touched,
                true,
            ),
            (
                attr_blocks,
                [24..32, 12..16],
                prev.map(|p| &p.attr_blocks),
                &none,
                false,
            ),
        ] {
            for (off, b) in map {
                let old = match was.and_then(|w| w.get(off)) {
                    Some(o) => o.clone(),
                    None => before(*off, b.len())?,
                };
                let unlogged: &[core::ops::Range<usize>] = if v5 { &stamps } else { &[] };
                // A bmbt block logs the chunks its buffer item holds dirty
                // (each write is noted); an attr block those that changed.
                let dirty = match logged.get(off) {
                    Some(t) => t.clone(),
                    None if is_bmbt => continue,
                    None => changed_chunks(&old, b, unlogged),
                };
                if let Some(it) = buf_item(b.len(), &dirty) {
                    out.push(it);
                    offs.insert(*off);
                }
            }
        }
        let from = prev.map_or(0, |p| p.invalidated);
        out.extend(
            self.invalidated
                .iter()
                .take(invalidated)
                .skip(from)
                .map(|n| stale_buf_item(*n)),
        );
        Ok((out, offs))
    }

    /// The changed inodes and bmbt blocks as (daddr, whole sectors), LSN
    /// stamped and CRCs recomputed on v5.
    pub fn into_changes(self, lsn: Lsn) -> Result<Vec<(u64, Vec<u8>)>> {
        self.into_changes_with(|_| lsn)
    }

    /// [`Self::into_changes`], each inode and block stamped with the LSN
    /// `lsn_of` gives for its byte offset (that of the last checkpoint
    /// that logged it).
    pub fn into_changes_with(self, lsn_of: impl Fn(u64) -> Lsn) -> Result<Vec<(u64, Vec<u8>)>> {
        let v5 = self.fs.geo.v5;
        let mut out = Vec::new();
        for (off, mut b) in self.blocks {
            if v5 {
                set_be64(
                    &mut b,
                    offset_of!(XfsBtreeBlockLong, bb_lsn),
                    lsn_of(off).raw(),
                )
                .map_err(|w| w.in_structure("bmbt block", off / 512))?;
                put_crc(&mut b, XFS_BTREE_LBLOCK_CRC_OFF);
            }
            out.push((off / 512, b));
        }
        for (off, b) in self.raw_blocks {
            out.push((off / 512, b));
        }
        for (off, mut b) in self.attr_blocks {
            if v5 {
                set_be64(&mut b, offset_of!(XfsDa3Blkinfo, lsn), lsn_of(off).raw())
                    .map_err(|w| w.in_structure("attr block", off / 512))?;
                put_crc(&mut b, offset_of!(XfsDa3Blkinfo, crc));
            }
            out.push((off / 512, b));
        }
        for (off, mut b) in self.inodes {
            let mut base = self
                .fs
                .img
                .read_disk("inode", off, u64::from(self.fs.geo.inodesize))?;
            self.base.apply_to(off, &mut base);
            keep_unflushed_bytes(&mut b, &base);
            out.push(crate::xfs::replay::inode::inode_sectors(
                self.fs,
                self.base,
                off,
                b,
                lsn_of(off),
            )?);
        }
        Ok(out)
    }
}

/// Where an inode's literal area starts (after the v3 or v2 core) and where
/// its data fork ends (at `di_forkoff`, or at the inode's end without an
/// attr fork).
pub(super) fn fork_split(b: &[u8]) -> (usize, usize) {
    let core = if b.get(offset_of!(XfsDinode, di_version)) == Some(&3) {
        XFS_DINODE_V3_SIZE
    } else {
        XFS_DINODE_V2_SIZE
    };
    let forkoff = usize::from(
        b.get(offset_of!(XfsDinode, di_forkoff))
            .copied()
            .unwrap_or(0),
    );
    let dend = if forkoff == 0 {
        b.len()
    } else {
        core.saturating_add(forkoff.saturating_mul(8)).min(b.len())
    };
    (core, dend)
}

/// The kernel writes an inode's forks back from memory (`xfs_iflush_fork`):
/// an extent list's records, a shortform attr list's bytes, a bmbt root's
/// header and its count of keys and pointers, and nothing past them, so
/// the rest of the literal area keeps the bytes the inode had before
/// recovery, not those of a longer list, a fuller root or a fork it held
/// on the way.
pub(super) fn keep_unflushed_bytes(b: &mut [u8], base: &[u8]) {
    if base.len() != b.len() {
        return;
    }
    let (core, dend) = fork_split(b);
    let isize = b.len();
    let dn = usize::try_from(extent_count(b, false)).unwrap_or(usize::MAX);
    let an = usize::try_from(extent_count(b, true)).unwrap_or(usize::MAX);
    let aformat = b.get(83).copied();
    let atotal = usize::from(be16(b, dend).unwrap_or(0));
    let dformat = b.get(5).copied();
    let cur = b.to_vec();
    let mut keep = |from: usize, to: usize| {
        if let (Some(d), Some(s)) = (b.get_mut(from..to), base.get(from..to)) {
            d.copy_from_slice(s);
        }
    };
    // A bmbt root: its level, count, and that many keys and pointers.
    let root = |b: &[u8], keep: &mut dyn FnMut(usize, usize), at: usize, end: usize| {
        let n = usize::from(be16(b, at.saturating_add(2)).unwrap_or(0));
        let max = end.saturating_sub(at).saturating_sub(4) / 16;
        let keys = at.saturating_add(4);
        let ptrs = keys.saturating_add(max.saturating_mul(8));
        keep(keys.saturating_add(n.min(max).saturating_mul(8)), ptrs);
        keep(ptrs.saturating_add(n.min(max).saturating_mul(8)), end);
    };
    match dformat {
        Some(XFS_DINODE_FMT_EXTENTS) => {
            keep(core.saturating_add(dn.saturating_mul(16)).min(dend), dend)
        }
        Some(XFS_DINODE_FMT_BTREE) => root(&cur, &mut keep, core, dend),
        _ => {}
    }
    if dend != isize {
        match aformat {
            Some(XFS_DINODE_FMT_EXTENTS) => {
                keep(dend.saturating_add(an.saturating_mul(16)).min(isize), isize)
            }
            Some(XFS_DINODE_FMT_BTREE) => root(&cur, &mut keep, dend, isize),
            Some(1) => keep(dend.saturating_add(atotal).min(isize), isize),
            _ => {}
        }
    }
}
