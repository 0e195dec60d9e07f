//! The bmbt's blocks as `xfs_bmap_btree.c` lays them out: block headers,
//! the root in the inode, node keys and pointers, the walk from the root to
//! the leaf that holds an offset, leaf writes and the first key carried up,
//! new blocks allocated near the inode.

use super::{recs_of, Alloc, ForkAt, ForkEditor, Leaf, Rec, Step, MAX_LEVELS};
use crate::xfs::format::dinode::XfsBtreeBlockLong;
use crate::xfs::format::dinode::XfsDinode;
use crate::xfs::format::dinode::{XFS_BMAP_CRC_MAGIC, XFS_BMAP_MAGIC};
use crate::xfs::fs::{be16, be32, be64};
use crate::xfs::read::ReadAt;
use crate::xfs::replay::ag::refuse;
use crate::xfs::replay::ag::EditResult;
use crate::xfs::replay::alloc::RmapOwner;
use crate::xfs::replay::{put_be16, put_be32, put_be64};
use crate::xfs::types::FsBlock;
use core::mem::offset_of;

impl<'a, R: ReadAt> ForkEditor<'a, R> {
    /// xfs_bmbt_alloc_block: one block for `f`'s bmbt in AG `agno` near
    /// `hint` (the allocator adds its reverse mapping); di_nblocks grows by
    /// one and the inode core is logged. The block and its byte offset.
    pub(super) fn alloc_bmbt_block(
        &mut self,
        f: &mut ForkAt,
        ino: u64,
        agno: u32,
        hint: u32,
        what: &str,
        alloc: &mut Alloc<'_>,
    ) -> EditResult<(u64, u64)> {
        let owner = RmapOwner {
            owner: ino,
            offset: 0,
            attr_fork: f.attr,
            bmbt_block: true,
        };
        let Some(agbno) = alloc(agno, hint, owner)? else {
            return refuse(format!("AG {agno}: no free block for the new bmbt {what}"));
        };
        self.first_log.get_or_insert(true);
        let nb = be64(&f.bytes, offset_of!(XfsDinode, di_nblocks))
            .unwrap_or(0)
            .saturating_add(1);
        put_be64(&mut f.bytes, offset_of!(XfsDinode, di_nblocks), nb);
        let fsb = u64::from(agno)
            .checked_shl(u32::from(self.fs.geo.agblklog))
            .unwrap_or(0)
            | u64::from(agbno);
        Ok((fsb, self.block_off("bmbt block", fsb)?))
    }

    /// A new v5 bmbt leaf at byte offset `off` (a zeroed buffer, as the
    /// kernel gets one): header with `n` records and the siblings given.
    pub(super) fn new_leaf(&self, off: u64, ino: u64, n: usize, left: u64, right: u64) -> Vec<u8> {
        self.new_block(off, ino, 0, n, left, right)
    }

    /// A new v5 bmbt block of `level` (see [`Self::new_leaf`]).
    pub(super) fn new_block(
        &self,
        off: u64,
        ino: u64,
        level: u16,
        n: usize,
        left: u64,
        right: u64,
    ) -> Vec<u8> {
        let bs = usize::try_from(self.fs.geo.blocksize).unwrap_or(0);
        let mut b = vec![0u8; bs];
        put_be32(
            &mut b,
            offset_of!(XfsBtreeBlockLong, bb_magic),
            XFS_BMAP_CRC_MAGIC,
        );
        put_be16(&mut b, offset_of!(XfsBtreeBlockLong, bb_level), level);
        put_be16(
            &mut b,
            offset_of!(XfsBtreeBlockLong, bb_numrecs),
            u16::try_from(n).unwrap_or(u16::MAX),
        );
        put_be64(&mut b, offset_of!(XfsBtreeBlockLong, bb_leftsib), left);
        put_be64(&mut b, offset_of!(XfsBtreeBlockLong, bb_rightsib), right);
        put_be64(&mut b, offset_of!(XfsBtreeBlockLong, bb_blkno), off / 512);
        let uuid_at = offset_of!(XfsBtreeBlockLong, bb_uuid);
        if let Some(d) = b.get_mut(uuid_at..uuid_at.saturating_add(16)) {
            d.copy_from_slice(&self.fs.meta_uuid());
        }
        put_be64(&mut b, offset_of!(XfsBtreeBlockLong, bb_owner), ino);
        b
    }

    /// The key/pointer array of a bmbt node block holding `maxrecs`.
    pub(super) fn node_pairs(&self, maxrecs: usize) -> Pairs {
        let (hdr, _) = self.hdr_bs();
        Pairs {
            count_at: 6,
            keys: hdr,
            max: maxrecs,
        }
    }

    /// The key/pointer array of `f`'s root in the inode.
    pub(super) fn root_pairs(&self, f: &ForkAt) -> Pairs {
        let (_, _, root_max) = self.bmbt_geometry(f);
        Pairs {
            count_at: f.fork_off.saturating_add(2),
            keys: f.fork_off.saturating_add(4),
            max: root_max,
        }
    }

    /// The entries (key, pointer) of a bmbt node block.
    pub(super) fn node_entries(&self, b: &[u8], maxrecs: usize) -> Vec<(u64, u64)> {
        self.node_pairs(maxrecs).read(b)
    }

    /// Write a node block's entries (count, keys, pointers; what lay past
    /// them stays) and carry a changed first key up `path` (which ends
    /// with the node's step).
    pub(super) fn write_node(
        &mut self,
        f: &mut ForkAt,
        path: &[Step],
        off: u64,
        mut b: Vec<u8>,
        entries: &[(u64, u64)],
    ) -> EditResult<()> {
        let (hdr, maxrecs, _) = self.bmbt_geometry(f);
        let old_first = be64(&b, hdr).unwrap_or(0);
        self.node_pairs(maxrecs).write(&mut b, entries);
        self.blocks.insert(off, b);
        match entries.first() {
            Some((first, _)) if *first != old_first => self.carry_first_key(f, path, *first),
            _ => Ok(()),
        }
    }

    /// The path to the bmbt block at byte `off`, `level` levels above the
    /// leaves, whose first key is `first` (reached by sibling pointers),
    /// checked to end there.
    pub(super) fn path_to_level(
        &self,
        f: &ForkAt,
        ino: u64,
        level: usize,
        first: u64,
        off: u64,
    ) -> EditResult<Vec<Step>> {
        let (mut path, _) = self.descend(f, ino, first)?;
        path.truncate(path.len().saturating_sub(level));
        if path.last().and_then(|s| s.block) != Some(off) {
            return refuse(format!(
                "inode {ino}: bmbt keys do not lead to the level {level} block whose first key is {first}"
            ));
        }
        Ok(path)
    }

    /// A sibling node block (`right` or left) of the node `b` at `level`,
    /// checked: its byte offset, bytes and entries.
    #[allow(clippy::type_complexity)]
    pub(super) fn node_sibling(
        &self,
        ino: u64,
        b: &[u8],
        level: usize,
        right: bool,
        maxrecs: usize,
    ) -> EditResult<Option<(u64, Vec<u8>, Vec<(u64, u64)>)>> {
        let sib = be64(b, if right { 16 } else { 8 }).unwrap_or(u64::MAX);
        if sib == u64::MAX {
            return Ok(None);
        }
        let lvl = u16::try_from(level).unwrap_or(u16::MAX);
        let (off, sb, _) = self.bmbt_block(ino, sib, lvl, maxrecs)?;
        let e = self.node_entries(&sb, maxrecs);
        Ok(Some((off, sb, e)))
    }

    /// bmbt block header bytes and block size.
    pub(super) fn hdr_bs(&self) -> (usize, usize) {
        (
            if self.fs.geo.v5 { 72 } else { 24 },
            usize::try_from(self.fs.geo.blocksize).unwrap_or(0),
        )
    }

    /// (header bytes, records or key/pointer pairs a block holds, pairs
    /// the root in the inode holds).
    pub(super) fn bmbt_geometry(&self, f: &ForkAt) -> (usize, usize, usize) {
        let (hdr, bs) = self.hdr_bs();
        let root_max = f.fork_len.saturating_sub(4) / 16;
        (hdr, bs.saturating_sub(hdr) / 16, root_max)
    }

    /// A bmbt block of inode `ino` read and checked (magic, level, record
    /// count, owner): its byte offset, bytes and record count.
    pub(super) fn bmbt_block(
        &self,
        ino: u64,
        fsb: u64,
        level: u16,
        maxrecs: usize,
    ) -> EditResult<(u64, Vec<u8>, usize)> {
        let (_, bs) = self.hdr_bs();
        let off = self.block_off("bmbt block", fsb)?;
        let b = self.read("bmbt block", off, bs)?;
        let magic = be32(&b, offset_of!(XfsBtreeBlockLong, bb_magic)).unwrap_or(0);
        let want_magic = if self.fs.geo.v5 {
            XFS_BMAP_CRC_MAGIC
        } else {
            XFS_BMAP_MAGIC
        };
        let lvl = be16(&b, offset_of!(XfsBtreeBlockLong, bb_level)).unwrap_or(u16::MAX);
        let nr = usize::from(be16(&b, offset_of!(XfsBtreeBlockLong, bb_numrecs)).unwrap_or(0));
        if magic != want_magic || lvl != level || nr == 0 || nr > maxrecs {
            return refuse(format!(
                "inode {ino}: bmbt block {fsb}: magic {magic:#x} level {lvl} records {nr}"
            ));
        }
        if self.fs.geo.v5 && be64(&b, offset_of!(XfsBtreeBlockLong, bb_owner)) != Some(ino) {
            return refuse(format!("inode {ino}: bmbt block {fsb} has another owner"));
        }
        Ok((off, b, nr))
    }

    /// The byte offset of block `fsb` (a `what`), refused outside the
    /// filesystem.
    pub(in crate::xfs::replay) fn block_off(&self, what: &str, fsb: u64) -> EditResult<u64> {
        match self
            .fs
            .geo
            .fsb_to_daddr(FsBlock(fsb))
            .and_then(|d| d.byte_offset())
        {
            Some(o) => Ok(o),
            None => refuse(format!("{what} {fsb} is outside the filesystem")),
        }
    }

    /// Walk from the root to the leaf whose range holds `key`: the path
    /// (ending with the leaf's step) and the leaf with its records.
    pub(super) fn descend(&self, f: &ForkAt, ino: u64, key: u64) -> EditResult<(Vec<Step>, Leaf)> {
        let (hdr, maxrecs, root_max) = self.bmbt_geometry(f);
        let root = f.fork_off;
        let level = be16(&f.bytes, root).unwrap_or(0);
        let n = usize::from(be16(&f.bytes, root.saturating_add(2)).unwrap_or(0));
        if level == 0 || level > MAX_LEVELS || n == 0 || n > root_max {
            return refuse(format!(
                "inode {ino}: bmbt root with level {level} and {n} records"
            ));
        }
        // The last key <= `key`, else the first.
        let pick = |b: &[u8], keys: usize, n: usize| -> usize {
            (0..n)
                .rev()
                .find(|&j| {
                    be64(b, keys.saturating_add(j.saturating_mul(8))).unwrap_or(u64::MAX) <= key
                })
                .unwrap_or(0)
        };
        let i = pick(&f.bytes, root.saturating_add(4), n);
        let mut ptr = be64(
            &f.bytes,
            root.saturating_add(4)
                .saturating_add(root_max.saturating_mul(8))
                .saturating_add(i.saturating_mul(8)),
        )
        .unwrap_or(0);
        let mut path = vec![Step {
            block: None,
            idx: i,
        }];
        // Levels below the root, each checked; at most MAX_LEVELS.
        for want in (0..level).rev() {
            let (off, b, nr) = self.bmbt_block(ino, ptr, want, maxrecs)?;
            if want == 0 {
                path.push(Step {
                    block: Some(off),
                    idx: 0,
                });
                let recs = recs_of(&b, hdr, nr);
                return Ok((
                    path,
                    Leaf {
                        off,
                        bytes: b,
                        recs,
                    },
                ));
            }
            let i = pick(&b, hdr, nr);
            path.push(Step {
                block: Some(off),
                idx: i,
            });
            ptr = be64(
                &b,
                hdr.saturating_add(maxrecs.saturating_mul(8))
                    .saturating_add(i.saturating_mul(8)),
            )
            .unwrap_or(0);
        }
        refuse(format!("inode {ino}: bmbt without a leaf"))
    }

    /// A sibling leaf of `leaf` (`right` or left), checked, or `None` at
    /// the end of its level.
    pub(super) fn sibling(
        &self,
        ino: u64,
        leaf: &[u8],
        right: bool,
        maxrecs: usize,
    ) -> EditResult<Option<Leaf>> {
        let (hdr, _) = self.hdr_bs();
        let sib = be64(leaf, if right { 16 } else { 8 }).unwrap_or(u64::MAX);
        if sib == u64::MAX {
            return Ok(None);
        }
        let (off, b, nr) = self.bmbt_block(ino, sib, 0, maxrecs)?;
        let recs = recs_of(&b, hdr, nr);
        Ok(Some(Leaf {
            off,
            bytes: b,
            recs,
        }))
    }

    /// The path down to a leaf reached by sibling pointers (first record
    /// at `first`, at byte offset `off`), checked to end there.
    pub(super) fn path_to(
        &self,
        f: &ForkAt,
        ino: u64,
        first: u64,
        off: u64,
    ) -> EditResult<Vec<Step>> {
        let (path, _) = self.descend(f, ino, first)?;
        if path.last().and_then(|s| s.block) != Some(off) {
            return refuse(format!(
                "inode {ino}: bmbt keys do not lead to the sibling leaf whose first record is at {first}"
            ));
        }
        Ok(path)
    }

    /// The path to, and the leaf of, the leaf whose first record is `r`.
    pub(super) fn leaf_led_by(
        &self,
        f: &ForkAt,
        ino: u64,
        r: Rec,
    ) -> EditResult<(Vec<Step>, Leaf)> {
        let (path, leaf) = self.descend(f, ino, r.off)?;
        if leaf.recs.first() != Some(&r) {
            return refuse(format!(
                "inode {ino}: bmbt keys do not lead to the record at {}",
                r.off
            ));
        }
        Ok((path, leaf))
    }

    /// Write a leaf's records back (count and records), and the keys above
    /// it when its first record's offset changed.
    pub(super) fn put_leaf(
        &mut self,
        f: &mut ForkAt,
        path: &[Step],
        off: u64,
        b: Vec<u8>,
        recs: &[Rec],
    ) -> EditResult<()> {
        let (_, maxrecs, _) = self.bmbt_geometry(f);
        if recs.len() > maxrecs {
            return refuse(
                "the bmbt leaf is full: the kernel splits it, which this tool does not".into(),
            );
        }
        if recs.is_empty() {
            return refuse("the bmbt leaf would be empty".into());
        }
        let old_n = usize::from(be16(&b, offset_of!(XfsBtreeBlockLong, bb_numrecs)).unwrap_or(0));
        let siblings = be64(&b, offset_of!(XfsBtreeBlockLong, bb_leftsib)) != Some(u64::MAX)
            || be64(&b, offset_of!(XfsBtreeBlockLong, bb_rightsib)) != Some(u64::MAX);
        if recs.len() < old_n && recs.len() < maxrecs / 2 && siblings {
            return refuse(
                "the bmbt leaf falls below half full: the kernel joins or rebalances it, which this tool does not"
                    .into(),
            );
        }
        self.write_leaf(f, path, off, b, recs)
    }

    /// [`Self::put_leaf`] without the checks.
    pub(super) fn write_leaf(
        &mut self,
        f: &mut ForkAt,
        path: &[Step],
        off: u64,
        mut b: Vec<u8>,
        recs: &[Rec],
    ) -> EditResult<()> {
        let (hdr, _, _) = self.bmbt_geometry(f);
        let old_first = Rec::parse(&b, hdr).off;
        put_be16(
            &mut b,
            offset_of!(XfsBtreeBlockLong, bb_numrecs),
            u16::try_from(recs.len()).unwrap_or(u16::MAX),
        );
        for (i, r) in recs.iter().enumerate() {
            r.put(&mut b, hdr.saturating_add(i.saturating_mul(16)));
        }
        // What lay past the records stays as it was, as in the kernel.
        self.blocks.insert(off, b);
        let first = recs.first().map_or(old_first, |r| r.off);
        if first != old_first {
            self.carry_first_key(f, path, first)?;
        }
        Ok(())
    }

    /// A record updated in place at index `i` of the leaf at the end of
    /// `path` whose start stays `first`: at the leaf's first record,
    /// `xfs_btree_update` passes the key up all the same, logging the
    /// parent's key slot (the root in the inode logs the root alone, before
    /// anything else of the inode: no change count bump on an inode whose
    /// count has risen since it was loaded).
    pub(super) fn first_record_updated(
        &mut self,
        f: &mut ForkAt,
        path: &[Step],
        i: usize,
        first: u64,
    ) -> EditResult<()> {
        if i == 0 {
            self.carry_first_key(f, path, first)?;
        }
        Ok(())
    }

    /// The key of the block at the end of `path` becomes `first` in each
    /// parent while the block is its parent's first child (a key in the
    /// root in the inode logs the root).
    pub(super) fn carry_first_key(
        &mut self,
        f: &mut ForkAt,
        path: &[Step],
        first: u64,
    ) -> EditResult<()> {
        let (hdr, _, _) = self.bmbt_geometry(f);
        let (_, bs) = self.hdr_bs();
        for lvl in (0..path.len().saturating_sub(1)).rev() {
            let Some(step) = path.get(lvl).copied() else {
                break;
            };
            match step.block {
                None => {
                    let at = f
                        .fork_off
                        .saturating_add(4)
                        .saturating_add(step.idx.saturating_mul(8));
                    put_be64(&mut f.bytes, at, first);
                    self.first_log.get_or_insert(false);
                }
                Some(boff) => {
                    let mut nb = self.read("bmbt block", boff, bs)?;
                    put_be64(
                        &mut nb,
                        hdr.saturating_add(step.idx.saturating_mul(8)),
                        first,
                    );
                    self.blocks.insert(boff, nb);
                }
            }
            if step.idx != 0 {
                break;
            }
        }
        Ok(())
    }

    /// The block pointer the parent of the last step of `path` holds for it.
    pub(super) fn child_ptr(&self, f: &ForkAt, path: &[Step]) -> EditResult<u64> {
        let (_, maxrecs, _) = self.bmbt_geometry(f);
        let (_, bs) = self.hdr_bs();
        let Some(parent) = path.len().checked_sub(2).and_then(|i| path.get(i)) else {
            return refuse("a bmbt block without a parent".into());
        };
        Ok(match parent.block {
            None => be64(&f.bytes, self.root_pairs(f).ptr_at(parent.idx)).unwrap_or(0),
            Some(poff) => {
                let pb = self.read("bmbt block", poff, bs)?;
                be64(&pb, self.node_pairs(maxrecs).ptr_at(parent.idx)).unwrap_or(0)
            }
        })
    }
}

/// Where a bmbt key/pointer array lies: a node block and the root in the
/// inode share its layout (a count, then `max` keys, then `max` pointers)
/// in different places.
#[derive(Clone, Copy)]
pub(super) struct Pairs {
    pub(super) count_at: usize,
    pub(super) keys: usize,
    pub(super) max: usize,
}

impl Pairs {
    pub(super) fn key_at(self, k: usize) -> usize {
        self.keys.saturating_add(k.saturating_mul(8))
    }

    pub(super) fn ptr_at(self, k: usize) -> usize {
        self.key_at(self.max.saturating_add(k))
    }

    /// The entries (key, pointer) the count says, at most `max`.
    pub(super) fn read(self, b: &[u8]) -> Vec<(u64, u64)> {
        let n = usize::from(be16(b, self.count_at).unwrap_or(0)).min(self.max);
        (0..n)
            .map(|k| {
                (
                    be64(b, self.key_at(k)).unwrap_or(0),
                    be64(b, self.ptr_at(k)).unwrap_or(0),
                )
            })
            .collect()
    }

    /// The count and entries written (what lay past them stays).
    pub(super) fn write(self, b: &mut [u8], entries: &[(u64, u64)]) {
        put_be16(
            b,
            self.count_at,
            u16::try_from(entries.len()).unwrap_or(u16::MAX),
        );
        for (k, (key, ptr)) in entries.iter().enumerate() {
            put_be64(b, self.key_at(k), *key);
            put_be64(b, self.ptr_at(k), *ptr);
        }
    }
}
