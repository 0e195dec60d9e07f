//! Attribute leaf blocks edited as the kernel edits them while finishing
//! attribute intents (`xfs_attr3_leaf_create`, `xfs_attr3_leaf_lookup_int`,
//! `xfs_attr3_leaf_add_work`, `xfs_attr3_leaf_remove`): local values only.
//!
//! ```text
//!  header   (v5) block info with forw, back, magic, crc, blkno, lsn, uuid,
//!           owner; count, usedbytes, firstused, holes, three free regions
//!  entries  8 bytes each, by hash: hashval, nameidx, flags (namespace,
//!           LOCAL), pad
//!  names    at nameidx, from the end of the block down: valuelen (be16),
//!           namelen, name, value; 4-byte aligned
//! ```
//!
//! An add that no free region holds compacts the block first
//! (`xfs_attr3_leaf_compact`) when it has holes or enough free bytes in
//! all.
//!
//! A remote value's entry (value block, value length, name) is added
//! INCOMPLETE and completed when its block is written
//! ([`Leaf::add_remote`], [`Leaf::clear_incomplete`]).
//!
//! Refused, with the reason: a block that no longer holds the entry (the
//! kernel splits it into a node).

use crate::xfs::format::attr::{
    XFS_ATTR3_LEAF_MAGIC, XFS_ATTR_INCOMPLETE, XFS_ATTR_LEAF_MAGIC, XFS_ATTR_LOCAL,
};
use crate::xfs::format::da::{XfsDa3Blkinfo, XfsDaBlkinfo};
use crate::xfs::fs::{be16, be32};
use crate::xfs::replay::ag::{damaged, not_done, EditResult};
use crate::xfs::replay::field_range;
use crate::xfs::replay::{set_be16, set_be32, set_be64, WritePastEnd};
use core::mem::offset_of;

const ENTRY: usize = 8;
const MAPSIZE: usize = 3;

/// Where the header fields lie (v5 or v4 layout).
#[derive(Clone, Copy, Debug)]
struct Layout {
    count: usize,
    hdr: usize,
}

fn layout(v5: bool) -> Layout {
    if v5 {
        Layout { count: 56, hdr: 80 }
    } else {
        Layout { count: 12, hdr: 32 }
    }
}

/// The header as the kernel holds it in memory (`xfs_attr3_icleaf_hdr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hdr {
    pub count: usize,
    pub usedbytes: usize,
    pub firstused: usize,
    pub holes: bool,
    pub freemap: [(usize, usize); MAPSIZE],
}

/// One leaf block being edited.
pub struct Leaf {
    pub b: Vec<u8>,
    pub hdr: Hdr,
    lay: Layout,
}

/// A local entry's size in the name area (`xfs_attr_leaf_entsize_local`).
pub fn entsize_local(nlen: usize, vlen: usize) -> usize {
    3usize
        .saturating_add(nlen)
        .saturating_add(vlen)
        .div_ceil(4)
        .saturating_mul(4)
}

/// A remote entry's size in the name area (`xfs_attr_leaf_entsize_remote`):
/// value block, value length, name length, name; 4-byte aligned.
pub fn entsize_remote(nlen: usize) -> usize {
    11usize.saturating_add(nlen).div_ceil(4).saturating_mul(4)
}

impl Leaf {
    /// A block read from disk, its header checked.
    pub fn parse(b: Vec<u8>, v5: bool, what: &str) -> EditResult<Leaf> {
        let lay = layout(v5);
        let magic = be16(&b, offset_of!(XfsDaBlkinfo, magic)).unwrap_or(0);
        let want = if v5 {
            XFS_ATTR3_LEAF_MAGIC
        } else {
            XFS_ATTR_LEAF_MAGIC
        };
        if magic != want {
            return damaged(
                "attr leaf",
                None,
                format!("{what}: magic {magic:#x} is not an attr leaf's"),
            );
        }
        let bs = b.len();
        let c = lay.count;
        let mut firstused = usize::from(be16(&b, c.saturating_add(4)).unwrap_or(0));
        if firstused == 0 && v5 {
            firstused = bs; // XFS_ATTR3_LEAF_NULLOFF: a 64 KiB block
        }
        let mut freemap = [(0usize, 0usize); MAPSIZE];
        for (i, f) in freemap.iter_mut().enumerate() {
            let at = c.saturating_add(8).saturating_add(i.saturating_mul(4));
            *f = (
                usize::from(be16(&b, at).unwrap_or(0)),
                usize::from(be16(&b, at.saturating_add(2)).unwrap_or(0)),
            );
        }
        let hdr = Hdr {
            count: usize::from(be16(&b, c).unwrap_or(0)),
            usedbytes: usize::from(be16(&b, c.saturating_add(2)).unwrap_or(0)),
            firstused,
            holes: b.get(c.saturating_add(6)).copied().unwrap_or(0) != 0,
            freemap,
        };
        let table_end = lay.hdr.saturating_add(hdr.count.saturating_mul(ENTRY));
        if table_end > hdr.firstused
            || hdr.firstused > bs
            || hdr
                .freemap
                .iter()
                .any(|&(base, size)| base.saturating_add(size) > bs)
        {
            return damaged(
                "attr leaf",
                None,
                format!(
                    "{what}: {} entries, first name at {}, in a block of {bs}",
                    hdr.count, hdr.firstused
                ),
            );
        }
        let leaf = Leaf { b, hdr, lay };
        for i in 0..leaf.hdr.count {
            let (_, nameidx, _) = leaf.entry(i);
            if nameidx < leaf.hdr.firstused || nameidx.saturating_add(leaf.entsize_at(i)) > bs {
                return damaged(
                    "attr leaf",
                    None,
                    format!("{what}: entry {i}'s name lies outside the block"),
                );
            }
        }
        Ok(leaf)
    }

    /// A new, empty leaf block (`xfs_attr3_leaf_create`).
    pub fn create(
        bs: usize,
        v5: bool,
        daddr: u64,
        owner: u64,
        uuid: &[u8; 16],
    ) -> Result<Leaf, WritePastEnd> {
        let lay = layout(v5);
        let mut b = vec![0u8; bs];
        if v5 {
            set_be16(
                &mut b,
                offset_of!(XfsDaBlkinfo, magic),
                XFS_ATTR3_LEAF_MAGIC,
            )?;
            set_be64(&mut b, offset_of!(XfsDa3Blkinfo, blkno), daddr)?;
            if let Some(u) = b.get_mut(field_range(offset_of!(XfsDa3Blkinfo, uuid), 16)) {
                u.copy_from_slice(uuid);
            }
            set_be64(&mut b, offset_of!(XfsDa3Blkinfo, owner), owner)?;
        } else {
            set_be16(&mut b, offset_of!(XfsDaBlkinfo, magic), XFS_ATTR_LEAF_MAGIC)?;
        }
        let hdr = Hdr {
            count: 0,
            usedbytes: 0,
            firstused: bs,
            holes: false,
            freemap: [(lay.hdr, bs.saturating_sub(lay.hdr)), (0, 0), (0, 0)],
        };
        let mut leaf = Leaf { b, hdr, lay };
        leaf.write_hdr()?;
        Ok(leaf)
    }

    fn entry(&self, i: usize) -> (u32, usize, u8) {
        let at = self.lay.hdr.saturating_add(i.saturating_mul(ENTRY));
        (
            be32(&self.b, at).unwrap_or(0),
            usize::from(be16(&self.b, at.saturating_add(4)).unwrap_or(0)),
            self.b.get(at.saturating_add(6)).copied().unwrap_or(0),
        )
    }

    /// The hash of the last entry (`xfs_attr_leaf_lasthash`); `None` when
    /// the block is empty.
    pub fn lasthash(&self) -> Option<u32> {
        let n = self.hdr.count.checked_sub(1)?;
        Some(self.entry(n).0)
    }

    /// The hash of the first entry; `None` when the block is empty.
    pub fn first_hash(&self) -> Option<u32> {
        (self.hdr.count > 0).then(|| self.entry(0).0)
    }

    /// Bytes the block's header takes.
    pub fn hdr_size(&self) -> usize {
        self.lay.hdr
    }

    /// The sibling leaves: forward and back attr block numbers (0: none).
    pub fn siblings(&self) -> (u32, u32) {
        (
            be32(&self.b, offset_of!(XfsDaBlkinfo, forw)).unwrap_or(0),
            be32(&self.b, offset_of!(XfsDaBlkinfo, back)).unwrap_or(0),
        )
    }

    /// Entry `i`'s remote value: its first attr block and its length;
    /// `None` for a local value.
    pub fn remote(&self, i: usize) -> Option<(u32, u32)> {
        let (_, nameidx, flags) = self.entry(i);
        if flags & XFS_ATTR_LOCAL != 0 {
            return None;
        }
        Some((
            be32(&self.b, nameidx).unwrap_or(0),
            be32(&self.b, nameidx.saturating_add(4)).unwrap_or(0),
        ))
    }

    /// `xfs_attr3_leaf_setflag`: entry `i` marked INCOMPLETE; a remote
    /// value's block and length are cleared.
    pub fn set_incomplete(&mut self, i: usize) -> Result<(), WritePastEnd> {
        let (_, nameidx, flags) = self.entry(i);
        let at = self.lay.hdr.saturating_add(i.saturating_mul(ENTRY));
        if let Some(f) = self.b.get_mut(at.saturating_add(6)) {
            *f = flags | XFS_ATTR_INCOMPLETE;
        }
        if flags & XFS_ATTR_LOCAL == 0 {
            set_be32(&mut self.b, nameidx, 0)?;
            set_be32(&mut self.b, nameidx.saturating_add(4), 0)?;
        }
        Ok(())
    }

    /// The bytes entry `i`'s name record takes (local or remote).
    fn entsize_at(&self, i: usize) -> usize {
        let (_, nameidx, flags) = self.entry(i);
        if flags & XFS_ATTR_LOCAL != 0 {
            let (nl, vl) = self.name_lens(nameidx);
            entsize_local(nl, vl)
        } else {
            let nl = usize::from(self.b.get(nameidx.saturating_add(8)).copied().unwrap_or(0));
            entsize_remote(nl)
        }
    }

    fn name_lens(&self, nameidx: usize) -> (usize, usize) {
        (
            usize::from(self.b.get(nameidx.saturating_add(2)).copied().unwrap_or(0)),
            usize::from(be16(&self.b, nameidx).unwrap_or(0)),
        )
    }

    /// Entry `i`: its flags, name and value (none for a remote value).
    pub fn local(&self, i: usize) -> (u8, &[u8], &[u8]) {
        let (_, nameidx, flags) = self.entry(i);
        if flags & XFS_ATTR_LOCAL == 0 {
            let nl = usize::from(self.b.get(nameidx.saturating_add(8)).copied().unwrap_or(0));
            let n_at = nameidx.saturating_add(9);
            return (
                flags,
                self.b.get(n_at..n_at.saturating_add(nl)).unwrap_or(&[]),
                &[],
            );
        }
        let (nl, vl) = self.name_lens(nameidx);
        let n_at = nameidx.saturating_add(3);
        let v_at = n_at.saturating_add(nl);
        (
            flags,
            self.b.get(n_at..v_at).unwrap_or(&[]),
            self.b.get(v_at..v_at.saturating_add(vl)).unwrap_or(&[]),
        )
    }

    /// `xfs_attr3_leaf_lookup_int`: `Ok(i)` the entry that matches, or
    /// `Err(i)` where a new one goes (after every entry of equal hash).
    pub fn lookup(
        &self,
        hash: u32,
        matches: impl Fn(u8, &[u8], &[u8]) -> bool,
    ) -> Result<usize, usize> {
        let n = self.hdr.count;
        let mut probe = 0;
        while probe < n && self.entry(probe).0 < hash {
            probe = probe.saturating_add(1);
        }
        while probe < n && self.entry(probe).0 == hash {
            let (flags, name, value) = self.local(probe);
            if matches(flags, name, value) {
                return Ok(probe);
            }
            probe = probe.saturating_add(1);
        }
        Err(probe)
    }

    /// `xfs_attr3_leaf_add` with `xfs_attr3_leaf_add_work`: the entry at
    /// `index`, its name in the first free region (from the last) that
    /// holds it. `false` when the block cannot take it (it may have been
    /// compacted in trying, as the kernel leaves it).
    pub fn add(
        &mut self,
        index: usize,
        hash: u32,
        ns: u8,
        name: &[u8],
        value: &[u8],
    ) -> EditResult<bool> {
        let entsize = entsize_local(name.len(), value.len());
        if entsize >= self.b.len().saturating_mul(3) / 4 || name.len() > 255 || value.len() > 0xffff
        {
            return not_done(format!(
                "a value of {} bytes goes into remote blocks",
                value.len()
            ));
        }
        let mut rec = u16::try_from(value.len())
            .unwrap_or(0)
            .to_be_bytes()
            .to_vec();
        rec.push(u8::try_from(name.len()).unwrap_or(0));
        rec.extend_from_slice(name);
        rec.extend_from_slice(value);
        self.add_record(index, hash, ns | XFS_ATTR_LOCAL, &rec, entsize)
    }

    /// The entry of a remote value, INCOMPLETE with no value block yet
    /// (`xfs_attr3_leaf_add_work` for a value that is not local); `false`
    /// as for [`Self::add`].
    pub fn add_remote(&mut self, index: usize, hash: u32, ns: u8, name: &[u8]) -> EditResult<bool> {
        let mut rec = vec![0u8; 8];
        rec.push(u8::try_from(name.len()).unwrap_or(0));
        rec.extend_from_slice(name);
        self.add_record(
            index,
            hash,
            ns | XFS_ATTR_INCOMPLETE,
            &rec,
            entsize_remote(name.len()),
        )
    }

    /// `xfs_attr3_leaf_clearflag`: entry `index` complete, its value at
    /// attr block `valueblk`, `valuelen` bytes.
    pub fn clear_incomplete(
        &mut self,
        index: usize,
        valueblk: u32,
        valuelen: u32,
    ) -> Result<(), WritePastEnd> {
        let (_, nameidx, flags) = self.entry(index);
        let at = self.lay.hdr.saturating_add(index.saturating_mul(ENTRY));
        if let Some(f) = self.b.get_mut(at.saturating_add(6)) {
            *f = flags & !XFS_ATTR_INCOMPLETE;
        }
        if flags & XFS_ATTR_LOCAL == 0 {
            set_be32(&mut self.b, nameidx, valueblk)?;
            set_be32(&mut self.b, nameidx.saturating_add(4), valuelen)?;
        }
        Ok(())
    }

    /// An entry (flags, name record of `entsize` bytes) at `index`, its
    /// record in the first free region, from the last, that holds it.
    fn add_record(
        &mut self,
        index: usize,
        hash: u32,
        flags: u8,
        rec: &[u8],
        entsize: usize,
    ) -> EditResult<bool> {
        let h = self.hdr;
        let tablesize = h
            .count
            .saturating_add(1)
            .saturating_mul(ENTRY)
            .saturating_add(self.lay.hdr);
        let mut slot = None;
        let mut sum = 0usize;
        for i in (0..MAPSIZE).rev() {
            let Some(&(base, size)) = h.freemap.get(i) else {
                continue;
            };
            if tablesize > h.firstused {
                sum = sum.saturating_add(size);
                continue;
            }
            if size == 0 {
                continue;
            }
            let need = if base < h.firstused {
                entsize.saturating_add(ENTRY)
            } else {
                entsize
            };
            if size >= need {
                slot = Some(i);
                break;
            }
            sum = sum.saturating_add(size);
        }
        let m = match slot {
            Some(m) => m,
            None => {
                if !h.holes && sum < entsize {
                    return Ok(false);
                }
                self.compact()?;
                if self.hdr.freemap[0].1 < entsize.saturating_add(ENTRY) {
                    return Ok(false);
                }
                0
            }
        };
        let h = self.hdr;
        // Open a slot in the entry table.
        let at = self.lay.hdr.saturating_add(index.saturating_mul(ENTRY));
        let end = self.lay.hdr.saturating_add(h.count.saturating_mul(ENTRY));
        if index < h.count {
            self.b.copy_within(at..end, at.saturating_add(ENTRY));
        }
        self.hdr.count = h.count.saturating_add(1);
        let Some(fm) = self.hdr.freemap.get_mut(m) else {
            return damaged("attr leaf", None, "the block's free region vanished");
        };
        fm.1 = fm.1.saturating_sub(entsize);
        let nameidx = fm.0.saturating_add(fm.1);
        set_be32(&mut self.b, at, hash)?;
        set_be16(
            &mut self.b,
            at.saturating_add(4),
            u16::try_from(nameidx).unwrap_or(0),
        )?;
        if let Some(f) = self.b.get_mut(at.saturating_add(6)..at.saturating_add(8)) {
            f.copy_from_slice(&[flags, 0]);
        }
        if let Some(d) = self.b.get_mut(nameidx..nameidx.saturating_add(rec.len())) {
            d.copy_from_slice(rec);
        }
        if nameidx < self.hdr.firstused {
            self.hdr.firstused = nameidx;
        }
        // Free regions that began where the table ended move past the new
        // slot; a region left empty keeps no address (and the block is
        // marked for compaction), as the kernel has done since it stopped
        // leaving empty regions that a removal could match.
        let old_end = h.count.saturating_mul(ENTRY).saturating_add(self.lay.hdr);
        for f in self.hdr.freemap.iter_mut() {
            if f.0 == old_end {
                f.0 = f.0.saturating_add(ENTRY);
                f.1 = f.1.saturating_sub(f.1.min(ENTRY));
            }
            if f.1 == 0 && f.0 > 0 {
                f.0 = 0;
                self.hdr.holes = true;
            }
        }
        self.hdr.usedbytes = self.hdr.usedbytes.saturating_add(entsize);
        self.write_hdr()?;
        Ok(true)
    }

    /// `xfs_attr3_leaf_rebalance` into `new`, a leaf just made: the entries
    /// split where the bytes of both blocks, with a new entry of
    /// `entsize` bytes going in at `index`, come closest to half
    /// (`xfs_attr3_leaf_figure_balance`), the upper ones moved to `new`
    /// (`xfs_attr3_leaf_moveents`: packed from its end, zeroed here, this
    /// block's free regions and first name left as they were, its holes
    /// flag set). Returns whether the new entry goes into this block and
    /// at which index of the block it goes into.
    pub fn split_into(
        &mut self,
        new: &mut Leaf,
        index: usize,
        entsize: usize,
    ) -> Result<(bool, usize), WritePastEnd> {
        let max = self.hdr.count;
        let half = max
            .saturating_add(1)
            .saturating_mul(ENTRY)
            .saturating_add(self.hdr.usedbytes)
            .saturating_add(new.hdr.usedbytes)
            .saturating_add(entsize)
            / 2;
        let dist = |t: usize| half.abs_diff(t);
        let mut lastdelta = self.b.len();
        let mut totallen = 0usize;
        let mut foundit = false;
        let mut count = 0usize;
        while count < max {
            if count == index {
                let t = totallen.saturating_add(ENTRY).saturating_add(entsize);
                if dist(t) > lastdelta {
                    break;
                }
                lastdelta = dist(t);
                totallen = t;
                foundit = true;
            }
            let t = totallen
                .saturating_add(ENTRY)
                .saturating_add(self.entsize_at(count));
            if dist(t) > lastdelta {
                break;
            }
            lastdelta = dist(t);
            totallen = t;
            count = count.saturating_add(1);
        }
        let inleaf = foundit;
        if count < max {
            self.move_to(new, count, 0, max.saturating_sub(count))?;
        }
        let left = self.hdr.count;
        Ok(if index > left {
            (false, index.saturating_sub(left))
        } else if index == left {
            if inleaf {
                (true, index)
            } else {
                (false, 0)
            }
        } else {
            (true, index)
        })
    }

    /// `xfs_attr3_leaf_moveents`: `n` entries from `start` of this block
    /// to `dst` at `start_d` (its entries there moved up to make room),
    /// their names packed down from `dst`'s first name; this block's names
    /// zeroed and its entries closed up, its free regions and first name
    /// left as they were, its holes flag set; `dst`'s free regions made
    /// one, between its table and its names.
    pub fn move_to(
        &mut self,
        dst: &mut Leaf,
        start: usize,
        start_d: usize,
        n: usize,
    ) -> Result<(), WritePastEnd> {
        if n == 0 {
            return Ok(());
        }
        let ent_at = |l: &Leaf, i: usize| l.lay.hdr.saturating_add(i.saturating_mul(ENTRY));
        if start_d < dst.hdr.count {
            let from = ent_at(dst, start_d);
            let to = ent_at(dst, start_d.saturating_add(n));
            let len = dst.hdr.count.saturating_sub(start_d).saturating_mul(ENTRY);
            if to.saturating_add(len) <= dst.b.len() && from.saturating_add(len) <= dst.b.len() {
                dst.b.copy_within(from..from.saturating_add(len), to);
            }
        }
        for i in 0..n {
            let src_i = start.saturating_add(i);
            let (hash, nameidx, flags) = self.entry(src_i);
            let size = self.entsize_at(src_i);
            dst.hdr.firstused = dst.hdr.firstused.saturating_sub(size);
            let fu = dst.hdr.firstused;
            let at = ent_at(dst, start_d.saturating_add(i));
            set_be32(&mut dst.b, at, hash)?;
            set_be16(
                &mut dst.b,
                at.saturating_add(4),
                u16::try_from(fu).unwrap_or(0),
            )?;
            if let Some(f) = dst.b.get_mut(at.saturating_add(6)..at.saturating_add(8)) {
                f.copy_from_slice(&[flags, 0]);
            }
            if let (Some(d), Some(s)) = (
                dst.b.get_mut(fu..fu.saturating_add(size)),
                self.b.get(nameidx..nameidx.saturating_add(size)),
            ) {
                d.copy_from_slice(s);
            }
            if let Some(s) = self.b.get_mut(nameidx..nameidx.saturating_add(size)) {
                s.fill(0);
            }
            self.hdr.usedbytes = self.hdr.usedbytes.saturating_sub(size);
            dst.hdr.usedbytes = dst.hdr.usedbytes.saturating_add(size);
            dst.hdr.count = dst.hdr.count.saturating_add(1);
        }
        let old = self.hdr.count;
        self.hdr.count = old.saturating_sub(n);
        if start.saturating_add(n) < old {
            let from = ent_at(self, start.saturating_add(n));
            let len = old
                .saturating_sub(start.saturating_add(n))
                .saturating_mul(ENTRY);
            let to = ent_at(self, start);
            if from.saturating_add(len) <= self.b.len() {
                self.b.copy_within(from..from.saturating_add(len), to);
            }
        }
        let top = ent_at(self, self.hdr.count);
        if let Some(d) = self
            .b
            .get_mut(top..top.saturating_add(n.saturating_mul(ENTRY)))
        {
            d.fill(0);
        }
        let base = ent_at(dst, dst.hdr.count);
        dst.hdr.freemap = [
            (base, dst.hdr.firstused.saturating_sub(base)),
            (0, 0),
            (0, 0),
        ];
        self.hdr.holes = true;
        self.write_hdr()?;
        dst.write_hdr()?;
        Ok(())
    }

    /// A new, empty block for [`Self::move_to`] that keeps this block's
    /// header bytes (its address, owner, siblings) but no entries and no
    /// free regions (`xfs_attr3_leaf_unbalance`'s temporary leaf).
    pub fn emptied(&self) -> Result<Leaf, WritePastEnd> {
        let bs = self.b.len();
        let mut b = vec![0u8; bs];
        let h = self.lay.hdr.min(bs);
        if let (Some(d), Some(s)) = (b.get_mut(..h), self.b.get(..h)) {
            d.copy_from_slice(s);
        }
        let mut leaf = Leaf {
            b,
            hdr: Hdr {
                count: 0,
                usedbytes: 0,
                firstused: bs,
                holes: false,
                freemap: [(0, 0); MAPSIZE],
            },
            lay: self.lay,
        };
        leaf.write_hdr()?;
        Ok(leaf)
    }

    /// `xfs_attr3_leaf_order`: do `other`'s entries go before this
    /// block's?
    pub fn goes_after(&self, other: &Leaf) -> bool {
        self.hdr.count > 0
            && other.hdr.count > 0
            && (other.first_hash() < self.first_hash() || other.lasthash() < self.lasthash())
    }

    /// The sibling links (`forw`, `back`: attr block numbers, 0 none).
    pub fn set_siblings(&mut self, forw: u32, back: u32) -> Result<(), WritePastEnd> {
        set_be32(&mut self.b, offset_of!(XfsDaBlkinfo, forw), forw)?;
        set_be32(&mut self.b, offset_of!(XfsDaBlkinfo, back), back)?;
        Ok(())
    }

    /// `xfs_attr3_leaf_compact`: the block cleared past its header and the
    /// entries copied back in order, their names packed down from the end
    /// (the first entry's highest); one free region left, between the
    /// table and the names.
    fn compact(&mut self) -> Result<(), WritePastEnd> {
        let old = Leaf {
            b: self.b.clone(),
            hdr: self.hdr,
            lay: self.lay,
        };
        let bs = self.b.len();
        if let Some(d) = self.b.get_mut(self.lay.hdr..) {
            d.fill(0);
        }
        let mut firstused = bs;
        let mut used = 0usize;
        for i in 0..old.hdr.count {
            let (hash, nameidx, flags) = old.entry(i);
            let size = old.entsize_at(i);
            firstused = firstused.saturating_sub(size);
            let at = self.lay.hdr.saturating_add(i.saturating_mul(ENTRY));
            set_be32(&mut self.b, at, hash)?;
            set_be16(
                &mut self.b,
                at.saturating_add(4),
                u16::try_from(firstused).unwrap_or(0),
            )?;
            if let Some(f) = self.b.get_mut(at.saturating_add(6)) {
                *f = flags;
            }
            if let (Some(d), Some(s)) = (
                self.b.get_mut(firstused..firstused.saturating_add(size)),
                old.b.get(nameidx..nameidx.saturating_add(size)),
            ) {
                d.copy_from_slice(s);
            }
            used = used.saturating_add(size);
        }
        let base = self
            .lay
            .hdr
            .saturating_add(old.hdr.count.saturating_mul(ENTRY));
        self.hdr = Hdr {
            count: old.hdr.count,
            usedbytes: used,
            firstused,
            holes: false,
            freemap: [(base, firstused.saturating_sub(base)), (0, 0), (0, 0)],
        };
        self.write_hdr()?;
        Ok(())
    }

    /// `xfs_attr3_leaf_remove`: entry `index` and its name leave the block,
    /// the freed bytes joined to a free region as the kernel joins them.
    pub fn remove(&mut self, index: usize) -> Result<(), WritePastEnd> {
        let h = self.hdr;
        let (_, nameidx, _) = self.entry(index);
        let entsize = self.entsize_at(index);
        let tablesize = h.count.saturating_mul(ENTRY).saturating_add(self.lay.hdr);
        let mut fm = h.freemap;
        let mut tmp = fm[0].1;
        let mut before = None;
        let mut after = None;
        let mut smallest = MAPSIZE - 1;
        for (i, f) in fm.iter_mut().enumerate() {
            if f.0 == tablesize {
                f.0 = f.0.saturating_sub(ENTRY);
                f.1 = f.1.saturating_add(ENTRY);
            }
            if f.0.saturating_add(f.1) == nameidx {
                before = Some(i);
            } else if f.0 == nameidx.saturating_add(entsize) {
                after = Some(i);
            } else if f.1 < tmp {
                tmp = f.1;
                smallest = i;
            }
        }
        let at = |fm: &[(usize, usize); MAPSIZE], i: usize| fm.get(i).copied().unwrap_or((0, 0));
        let put = |fm: &mut [(usize, usize); MAPSIZE], i: usize, v: (usize, usize)| {
            if let Some(x) = fm.get_mut(i) {
                *x = v;
            }
        };
        match (before, after) {
            (Some(b), Some(a)) => {
                let (bb, bsz) = at(&fm, b);
                let (_, asz) = at(&fm, a);
                put(
                    &mut fm,
                    b,
                    (bb, bsz.saturating_add(entsize).saturating_add(asz)),
                );
                put(&mut fm, a, (0, 0));
            }
            (Some(b), None) => {
                let (bb, bsz) = at(&fm, b);
                put(&mut fm, b, (bb, bsz.saturating_add(entsize)));
            }
            (None, Some(a)) => {
                let (_, asz) = at(&fm, a);
                put(&mut fm, a, (nameidx, asz.saturating_add(entsize)));
            }
            (None, None) => {
                if at(&fm, smallest).1 < entsize {
                    put(&mut fm, smallest, (nameidx, entsize));
                }
            }
        }
        self.hdr.freemap = fm;
        if let Some(d) = self.b.get_mut(nameidx..nameidx.saturating_add(entsize)) {
            d.fill(0);
        }
        self.hdr.usedbytes = self.hdr.usedbytes.saturating_sub(entsize);
        let at = self.lay.hdr.saturating_add(index.saturating_mul(ENTRY));
        let end = self.lay.hdr.saturating_add(h.count.saturating_mul(ENTRY));
        self.b.copy_within(at.saturating_add(ENTRY)..end, at);
        self.hdr.count = h.count.saturating_sub(1);
        let last = end.saturating_sub(ENTRY);
        if let Some(d) = self.b.get_mut(last..end) {
            d.fill(0);
        }
        if nameidx == h.firstused {
            let mut first = self.b.len();
            for i in 0..self.hdr.count {
                first = first.min(self.entry(i).1);
            }
            self.hdr.firstused = first;
        } else {
            self.hdr.holes = true;
        }
        self.write_hdr()?;
        Ok(())
    }

    /// The entries as shortform entries would need them: `None` when one
    /// cannot go into a shortform list, else the list's size
    /// (`xfs_attr_shortform_allfit`'s sum).
    pub fn shortform_bytes(&self) -> Option<usize> {
        let mut bytes = 4usize;
        for i in 0..self.hdr.count {
            let (flags, name, value) = self.local(i);
            if flags & 0x80 != 0 {
                continue;
            }
            if flags & XFS_ATTR_LOCAL == 0 || name.len() >= 255 || value.len() >= 255 {
                return None;
            }
            bytes = bytes
                .saturating_add(3)
                .saturating_add(name.len())
                .saturating_add(value.len());
        }
        Some(bytes)
    }

    fn write_hdr(&mut self) -> Result<(), WritePastEnd> {
        let c = self.lay.count;
        let h = self.hdr;
        set_be16(&mut self.b, c, u16::try_from(h.count).unwrap_or(0))?;
        set_be16(
            &mut self.b,
            c.saturating_add(2),
            u16::try_from(h.usedbytes).unwrap_or(0),
        )?;
        let fu = if h.firstused >= 65536 { 0 } else { h.firstused };
        set_be16(
            &mut self.b,
            c.saturating_add(4),
            u16::try_from(fu).unwrap_or(0),
        )?;
        if let Some(d) = self.b.get_mut(c.saturating_add(6)) {
            *d = u8::from(h.holes);
        }
        for (i, (base, size)) in h.freemap.iter().enumerate() {
            let at = c.saturating_add(8).saturating_add(i.saturating_mul(4));
            set_be16(&mut self.b, at, u16::try_from(*base).unwrap_or(0))?;
            set_be16(
                &mut self.b,
                at.saturating_add(2),
                u16::try_from(*size).unwrap_or(0),
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::cast_possible_truncation
)]
mod tests {
    use super::*;
    use crate::xfs::testutil::Rng;

    /// Hostile blocks: a leaf header and entries with random counts,
    /// offsets and free regions. Parsing refuses what lies outside the
    /// block; whatever it accepts can be searched, added to, removed from
    /// and compacted without a panic, and stays inside the block.
    #[test]
    fn hostile_leaf_blocks_are_refused_or_edited_without_panics() {
        let mut r = Rng(0x5eed_1eaf);
        let mut accepted = 0;
        for round in 0..3000 {
            let bs = 4096;
            let mut b = vec![0u8; bs];
            let mut leaf = Leaf::create(bs, true, 16, 131, &[7; 16]).unwrap();
            // Start from a real block with a few entries, then damage it.
            for i in 0..(r.next() % 12) as usize {
                let name = format!("n{i}");
                let v = vec![b'v'; (r.next() % 300) as usize];
                let hash = (r.next() & 0xffff_ffff) as u32;
                let idx = match leaf.lookup(hash, |_, n, _| n == name.as_bytes()) {
                    Ok(_) => continue,
                    Err(i) => i,
                };
                let _ = leaf.add(idx, hash, 0, name.as_bytes(), &v);
            }
            b.copy_from_slice(&leaf.b);
            for _ in 0..(round % 8) {
                let at = (r.next() % bs as u64) as usize;
                b[at] = r.next() as u8;
                let at = 56 + (r.next() % 24) as usize; // the header
                b[at] = r.next() as u8;
            }
            let Ok(mut l) = Leaf::parse(b, true, "test") else {
                continue;
            };
            accepted += 1;
            let n = l.hdr.count;
            if n > 0 {
                let _ = l.local((r.next() % n as u64) as usize);
                if r.next() % 2 == 0 {
                    l.remove((r.next() % n as u64) as usize).unwrap();
                }
            }
            let _ = l.shortform_bytes();
            let v = vec![b'x'; (r.next() % 900) as usize];
            let idx = (r.next() % (l.hdr.count as u64 + 1)) as usize;
            let _ = l.add(idx, 42, 0, b"zz", &v);
            assert_eq!(l.b.len(), bs);
            assert!(l.hdr.firstused <= bs);
        }
        assert!(accepted > 100, "only {accepted} blocks parsed");
    }

    /// Entry sizes as `xfs_attr_leaf_entsize_local`: 3 bytes of lengths,
    /// name and value, rounded up to 4.
    #[test]
    fn local_entries_are_rounded_to_four_bytes() {
        assert_eq!(entsize_local(1, 1), 8);
        assert_eq!(entsize_local(4, 200), 208);
        assert_eq!(entsize_local(2, 400), 408);
    }
}
