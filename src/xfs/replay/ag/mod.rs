//! Editing the AG btrees (bnobt, cntbt, rmapbt, refcountbt, inobt,
//! finobt) through the replayed state, the way the kernel's generic btree
//! code does it (`xfs_btree.c`): a cursor holds the path from the root to
//! a record; insert makes room in a full block by shifting one entry to
//! the right sibling, else to the left sibling, else by splitting the
//! block in two (a new root when the root splits); delete takes one entry
//! from the right or left sibling of a block left under half full, else
//! joins it with a sibling (the root shrinks when it keeps one child).
//! Node keys are kept right on the way up, low and high keys alike for the
//! overlapping rmapbt. The shapes come out as the kernel's would because
//! every decision (which sibling first, where the split falls, where the
//! cursor stands) is the kernel's.
//!
//! ```text
//!  short-form block (v5): magic level numrecs leftsib rightsib blkno lsn
//!                         uuid owner crc  = 56 bytes (16 on v4), then
//!  leaf:  records                      node: keys[maxrecs] ptrs[maxrecs]
//!  rmapbt nodes keep a low and a high key per child (overlapping tree).
//! ```
//!
//! New btree blocks come from where the kernel takes them (`alloc.rs`):
//! bnobt, cntbt and rmapbt blocks from the AG free list (`agf_btreeblks`,
//! `agf_rmap_blocks`), refcountbt and inode btree blocks from free space
//! near a hint, mapped in the rmapbt to their owner (`agf_refcount_blocks`,
//! `agi_iblocks`/`agi_fblocks`). Freed blocks go back the same way; the
//! frees the kernel defers (refcountbt and inode btree blocks) are done
//! when the public operation ends.
//!
//! Blocks are read through the replayed state, checked as the kernel's
//! read verifier would (magic, level, numrecs, siblings, v5 owner, blkno,
//! uuid and CRC), and kept, changed, in memory until [`AgStore::changed`]
//! hands them back. A block that fails a check is an error naming it.
//!
//! The files follow the kernel's:
//!
//! | file | kernel | what |
//! |---|---|---|
//! | `mod.rs` | `xfs_ag.c` | the store of one AG's headers and btree blocks, snapshots, the changed blocks handed over and stamped |
//! | `error.rs` | | the editor's error: damage, or a change not made |
//! | `headers.rs` | `xfs_alloc.c`, `xfs_ialloc.c` | AGF and AGI fields and roots, the AG free list |
//! | `busy.rs` | `xfs_extent_busy.c` | busy extents: inserted, trimmed out, reused |
//! | `tree_ops.rs` | `xfs_alloc_btree.c`, `xfs_ialloc_btree.c`, `xfs_rmap_btree.c`, `xfs_refcount_btree.c` | each tree's sizes, keys, root, magic and block allocation |
//! | `btree.rs` | `xfs_btree.c` (the AG cursor's part) | blocks read and checked, each tree's ops for the engine (`replay/btree/`), the cursor API |
//! | `records.rs` | `xfs_alloc.c`, `xfs_rmap.c`, `xfs_refcount.c`, `xfs_ialloc.c` (callers) | records by key: find, neighbours, insert, update, delete; record bytes |

mod btree;
mod busy;
pub(super) mod error;
mod headers;
mod records;
mod tree_ops;

pub use btree::{Cursor, Lookup};
pub(crate) use error::{damaged, fails_mount, not_done};
pub use error::{Damage, EditError, EditResult, Undone};
pub(crate) use records::non_inode;
pub use records::{alloc_rec, key_bno, key_cnt, key_ino, key_refcount, key_rmap, rmap_rec, Rmap};
pub use tree_ops::{key_of, rec_key, AgTree, Key};

use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::ag::{XfsAgf, XFS_AGF_MAGIC};
use crate::xfs::fs::{be32, Fs};
use crate::xfs::image::Overlay;
use crate::xfs::read::ReadAt;
use core::mem::offset_of;
use std::collections::{BTreeMap, BTreeSet};

/// The chunks written of each block, by daddr.
pub type Touched = Vec<(u64, BTreeSet<usize>)>;

/// The records left and right of a key (either may be absent).
pub type Neighbors = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Saved edits (see [`AgStore::snapshot`]).
pub struct Snapshot {
    blocks: BTreeMap<u32, Vec<u8>>,
    agf: Vec<u8>,
    agf_dirty: bool,
    agi: Option<Vec<u8>>,
    agi_dirty: bool,
    agfl: Option<Vec<u8>>,
    agfl_dirty: bool,
    dirty: BTreeSet<u32>,
    touched: BTreeMap<u32, BTreeSet<usize>>,
    logged_since: BTreeSet<u32>,
    stale: BTreeSet<u32>,
    deferred: Vec<(u32, u64)>,
    busy: Vec<BusyExtent>,
    pinned: BTreeMap<u32, u64>,
    cancels: BTreeSet<u32>,
    reused: BTreeSet<u32>,
}

/// An extent freed by a transaction (numbered as [`AgStore::tx`] counts
/// them): busy until the checkpoint holding that transaction is on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BusyExtent {
    pub bno: u32,
    pub len: u32,
    pub tx: u64,
}

/// Filesystem features that change what the AG btree edits do.
#[derive(Clone, Copy, Debug)]
pub struct Features {
    pub v5: bool,
    pub finobt: bool,
    pub rmapbt: bool,
    pub reflink: bool,
    pub inobtcount: bool,
}

/// Blocks of one AG, read through the replayed state, changed in memory.
pub struct AgStore<'a, R: ReadAt> {
    pub(crate) fs: &'a Fs<R>,
    base: &'a Overlay,
    pub agno: u32,
    blocks: BTreeMap<u32, Vec<u8>>,
    pub agf: Vec<u8>,
    pub agf_dirty: bool,
    agi: Option<Vec<u8>>,
    agi_dirty: bool,
    /// The AGFL sector, once read; and whether it changed.
    agfl: Option<Vec<u8>>,
    agfl_dirty: bool,
    dirty: BTreeSet<u32>,
    /// The 128-byte chunks of each btree block written, whether or not
    /// their bytes end up different: the ranges the kernel logs
    /// (`xfs_trans_log_buf`), a shift's whole span included. They add up
    /// over log forces, as a buffer item's dirty map does until the
    /// buffer is written back; invalidating the buffer clears them.
    touched: BTreeMap<u32, BTreeSet<usize>>,
    /// The btree blocks written since the last log force: those the
    /// checkpoint being built logs.
    logged_since: BTreeSet<u32>,
    /// Btree blocks freed in this session (`xfs_trans_binval`): whatever
    /// an earlier session wrote to them is not written either.
    stale: BTreeSet<u32>,
    /// Blocks whose free the kernel defers: (agbno, rmap owner).
    deferred: Vec<(u32, u64)>,
    /// Extents freed in this session that the allocator must not hand
    /// out yet (`xfs_extent_busy`): until the log checkpoint that freed
    /// them is on disk: after it all, unless a log force comes between.
    busy: Vec<BusyExtent>,
    /// Btree blocks whose buffers a transaction invalidated, by the
    /// transaction: the buffer stays locked and pinned until the
    /// checkpoint holding it is on disk.
    pinned: BTreeMap<u32, u64>,
    /// Btree blocks freed since the last log force (their buffers logged
    /// as cancelled in the checkpoint being built).
    cancels: BTreeSet<u32>,
    /// Blocks got again while their stale buffers were still cached (a
    /// log force waited for them): a new btree block there starts from the
    /// buffer's old bytes, not from zeros.
    reused: BTreeSet<u32>,
    /// The transaction being built, numbered by the engine: those before
    /// it are committed into the checkpoint being built.
    pub(crate) tx: u64,
    /// Set when a buffer got for a new use was stale and pinned: the
    /// kernel forced the log there (see [`Self::get_buf`]).
    pub(crate) forced: bool,
    hdr: usize,
    pub(crate) blocksize: usize,
    pub feat: Features,
    /// Blocks in this AG (`agf_length`, bounded by the geometry).
    pub(crate) agblocks: u32,
}

fn corrupt_at(daddr: u64, msg: String) -> EditError {
    EditError::Read(Error::corrupt(
        "AG btree block",
        Location::Daddr { daddr },
        msg,
    ))
}

impl<'a, R: ReadAt> AgStore<'a, R> {
    pub fn new(fs: &'a Fs<R>, base: &'a Overlay, agno: u32) -> Result<Self> {
        let ro = fs.sb.features_ro_compat;
        let v5 = fs.geo.v5;
        let blocksize = usize::try_from(fs.geo.blocksize).map_err(|_| {
            Error::corrupt(
                "superblock",
                Location::Daddr { daddr: 0 },
                format!("a block size of {} bytes", fs.geo.blocksize),
            )
        })?;
        let mut s = AgStore {
            fs,
            base,
            agno,
            blocks: BTreeMap::new(),
            agf: Vec::new(),
            agf_dirty: false,
            agi: None,
            agi_dirty: false,
            agfl: None,
            agfl_dirty: false,
            dirty: BTreeSet::new(),
            touched: BTreeMap::new(),
            logged_since: BTreeSet::new(),
            stale: BTreeSet::new(),
            deferred: Vec::new(),
            busy: Vec::new(),
            pinned: BTreeMap::new(),
            cancels: BTreeSet::new(),
            reused: BTreeSet::new(),
            tx: 0,
            forced: false,
            hdr: if v5 { 56 } else { 16 },
            blocksize,
            feat: Features {
                v5,
                finobt: v5 && ro & 1 != 0,
                rmapbt: v5 && ro & (1 << 1) != 0,
                reflink: v5 && ro & (1 << 2) != 0,
                inobtcount: v5 && ro & (1 << 3) != 0,
            },
            agblocks: fs.geo.agblocks,
        };
        let ss = u64::from(fs.geo.sectsize);
        let off = s.ag_byte(0)?.saturating_add(ss);
        s.agf = s.read_bytes(off, ss)?;
        let bad = |what: &str| {
            Error::corrupt(
                "AGF",
                Location::Bytes {
                    offset: off,
                    len: ss,
                },
                format!("AG {agno}: {what}"),
            )
        };
        if be32(&s.agf, offset_of!(XfsAgf, agf_magicnum)) != Some(XFS_AGF_MAGIC) {
            return Err(bad(&format!(
                "agf_magicnum {:#010x} is not XAGF (0x58414746)",
                be32(&s.agf, offset_of!(XfsAgf, agf_magicnum)).unwrap_or(0)
            )));
        }
        let len = s.agf_u32(offset_of!(XfsAgf, agf_length));
        if len == 0 || len > fs.geo.agblocks {
            return Err(bad(&format!(
                "agf_length {len} is not 1..={}",
                fs.geo.agblocks
            )));
        }
        s.agblocks = len;
        Ok(s)
    }

    pub(crate) fn ag_byte(&self, agbno: u32) -> Result<u64> {
        self.fs
            .geo
            .agb_to_daddr(
                crate::xfs::types::AgNumber(self.agno),
                crate::xfs::types::AgBlock(agbno),
            )
            .and_then(|d| d.byte_offset())
            .ok_or_else(|| {
                Error::corrupt(
                    "AG btree",
                    Location::AgBlock {
                        agno: self.agno,
                        agbno,
                    },
                    format!("AG {} block {agbno} is outside the filesystem", self.agno),
                )
            })
    }

    fn daddr_of(&self, agbno: u32) -> u64 {
        self.ag_byte(agbno).map(|b| b / 512).unwrap_or(0)
    }

    fn read_bytes(&self, off: u64, len: u64) -> Result<Vec<u8>> {
        let mut b = self.fs.img.read_disk("AG btree block", off, len)?;
        self.base.apply_to(off, &mut b);
        Ok(b)
    }

    /// The state of the edits so far, to go back to if a later edit is
    /// refused.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            blocks: self.blocks.clone(),
            agf: self.agf.clone(),
            agf_dirty: self.agf_dirty,
            agi: self.agi.clone(),
            agi_dirty: self.agi_dirty,
            agfl: self.agfl.clone(),
            agfl_dirty: self.agfl_dirty,
            dirty: self.dirty.clone(),
            touched: self.touched.clone(),
            logged_since: self.logged_since.clone(),
            stale: self.stale.clone(),
            deferred: self.deferred.clone(),
            busy: self.busy.clone(),
            pinned: self.pinned.clone(),
            cancels: self.cancels.clone(),
            reused: self.reused.clone(),
        }
    }

    pub fn restore(&mut self, s: Snapshot) {
        self.blocks = s.blocks;
        self.agf = s.agf;
        self.agf_dirty = s.agf_dirty;
        self.agi = s.agi;
        self.agi_dirty = s.agi_dirty;
        self.agfl = s.agfl;
        self.agfl_dirty = s.agfl_dirty;
        self.dirty = s.dirty;
        self.touched = s.touched;
        self.logged_since = s.logged_since;
        self.stale = s.stale;
        self.deferred = s.deferred;
        self.busy = s.busy;
        self.pinned = s.pinned;
        self.cancels = s.cancels;
        self.reused = s.reused;
    }

    /// Btree blocks freed in this session and not in use again at its end,
    /// as (daddr, sectors): the kernel never writes a freed buffer, so
    /// what an earlier session of mount-time work wrote to them must not
    /// reach the disk either ([`Overlay::revert`]).
    pub fn stale(&self) -> Result<Vec<(u64, u64)>> {
        let per = u64::from(self.fs.geo.blocksize) / 512;
        let mut out = Vec::new();
        for b in self.stale.difference(&self.dirty) {
            out.push((self.ag_byte(*b)? / 512, per));
        }
        Ok(out)
    }

    /// At a log force: the btree blocks freed since the last one and not
    /// in use again (daddr, sectors), and the blocks written since with
    /// their dirty chunks ([`Self::touched`]); the next checkpoint starts
    /// with none written.
    pub fn take_cut(&mut self) -> Result<(Vec<(u64, u64)>, Touched)> {
        let cancels = self.cancels()?;
        let touched = self.touched()?;
        self.cancels.clear();
        self.logged_since.clear();
        Ok((cancels, touched))
    }

    /// The btree blocks freed since the last log force and not in use
    /// again (daddr, sectors).
    pub fn cancels(&self) -> Result<Vec<(u64, u64)>> {
        let per = u64::from(self.fs.geo.blocksize) / 512;
        let mut out = Vec::new();
        for b in self.cancels.difference(&self.dirty) {
            out.push((self.ag_byte(*b)? / 512, per));
        }
        Ok(out)
    }

    /// The changed btree blocks written since the last log force, each
    /// with the chunks its buffer item holds dirty (by daddr).
    pub fn touched(&self) -> Result<Vec<(u64, BTreeSet<usize>)>> {
        let mut out = Vec::new();
        for b in self.dirty.intersection(&self.logged_since) {
            if let Some(t) = self.touched.get(b) {
                out.push((self.ag_byte(*b)? / 512, t.clone()));
            }
        }
        Ok(out)
    }

    /// Changed blocks as (daddr, bytes): btree blocks, then the AGF, AGI
    /// and AGFL sectors that changed.
    pub fn changed(&self) -> Result<Vec<(u64, Vec<u8>)>> {
        let mut out = Vec::new();
        for b in &self.dirty {
            if let Some(d) = self.blocks.get(b) {
                out.push((self.ag_byte(*b)? / 512, d.clone()));
            }
        }
        let ss = u64::from(self.fs.geo.sectsize);
        if self.agf_dirty {
            out.push((self.ag_byte(0)?.saturating_add(ss) / 512, self.agf.clone()));
        }
        if let (true, Some(agi)) = (self.agi_dirty, &self.agi) {
            out.push((
                self.ag_byte(0)?.saturating_add(ss.saturating_mul(2)) / 512,
                agi.clone(),
            ));
        }
        if let (true, Some(agfl)) = (self.agfl_dirty, &self.agfl) {
            out.push((
                self.ag_byte(0)?.saturating_add(ss.saturating_mul(3)) / 512,
                agfl.clone(),
            ));
        }
        Ok(out)
    }
}

/// Stamp changed blocks with `lsn` and their CRCs as the write verifiers
/// do (AGF, AGI, AGFL, btree blocks), and put them into `ov`.
/// On v4 filesystems (no CRCs, no LSNs in blocks) the blocks go in as
/// they are.
/// How the kernel's write verifier stamps an AG metadata block the mount-time
/// work changed: AGF, AGI and AGFL sectors by their own layouts, every AG
/// btree block by the short-form btree header.
pub(super) fn ag_stamp(data: &[u8]) -> super::Stamp {
    use super::Stamp;
    // Every AG header and btree block starts with its magic number.
    match be32(data, offset_of!(XfsAgf, agf_magicnum)) {
        Some(0x5841_4746) => Stamp::Whole {
            lsn_off: Some(208),
            crc_off: 216,
        },
        Some(0x5841_4749) => Stamp::Whole {
            lsn_off: Some(320),
            crc_off: 312,
        },
        Some(0x5841_464c) => Stamp::Whole {
            lsn_off: Some(24),
            crc_off: 32,
        },
        _ => Stamp::Whole {
            lsn_off: Some(24),
            crc_off: 52,
        },
    }
}

pub fn stamp_into(
    ov: &mut Overlay,
    changes: Vec<(u64, Vec<u8>)>,
    lsn: crate::xfs::types::Lsn,
    v5: bool,
) {
    for (daddr, mut data) in changes {
        if !v5 {
            ov.put(daddr, &data);
            continue;
        }
        let stamp = ag_stamp(&data);
        super::buf::apply_stamp(&mut data, stamp, lsn.raw());
        ov.put(daddr, &data);
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::cast_possible_truncation,
    clippy::panic
)]
mod tests {
    use super::tree_ops::{key_order, rmap_high_key};
    use super::*;
    use crate::xfs::ag::btree::{walk, TreeRoot, WalkReport};
    use crate::xfs::format::btree::{XFS_RMAP_OFF_UNWRITTEN, XFS_RMAP_OWN_INOBT};
    use crate::xfs::format::btree::{XFS_RMAP_OWN_COW, XFS_RMAP_OWN_UNKNOWN};
    use crate::xfs::fs::be64;
    use crate::xfs::image::Image;
    use crate::xfs::read::FileReader;
    use crate::xfs::types::{AgBlock, AgNumber};
    use std::ops::ControlFlow;

    const FIXTURE: &str = "v5-1k-rmap";
    const AG: u32 = 1;

    /// The project's validating walker over the edited state: keys in
    /// order, parent keys (low and high), sibling chains, levels, CRCs.
    fn check<R: ReadAt>(s: &mut AgStore<'_, R>, tree: AgTree) -> WalkReport {
        let mut ov = Overlay::default();
        stamp_into(
            &mut ov,
            s.changed().unwrap(),
            crate::xfs::types::Lsn::from_raw(1 << 32),
            true,
        );
        let mut img =
            Image::new(FileReader::open(&crate::xfs::testutil::image_path(FIXTURE)).unwrap());
        img.set_overlay(ov);
        img.set_use_overlay(true);
        let fs = Fs::open(img).unwrap();
        let (root, levels) = s.root(tree).ok().unwrap();
        let g = fs.geo;
        let tr = TreeRoot {
            tree,
            agno: AgNumber(s.agno),
            root: AgBlock(root),
            levels,
            ag_length: s.agf_u32(offset_of!(XfsAgf, agf_length)),
            first_block: (4 * u32::from(g.sectsize)).div_ceil(g.blocksize),
        };
        let r = walk(&fs, &tr, &mut |_| ControlFlow::Continue(()));
        assert!(r.problems.is_empty(), "{tree:?}: {:#?}", r.problems);
        r
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// Put `n` blocks of the AG's longest free extent on the free list
    /// (taken out of free space first, so that the AG stays consistent).
    fn stock_freelist<R: ReadAt>(s: &mut AgStore<'_, R>, n: u32) {
        let last = s.last_record(AgTree::Cnt).ok().unwrap().unwrap();
        let (b, l) = (be32(&last, 0).unwrap(), be32(&last, 4).unwrap());
        assert!(l > n);
        s.delete(AgTree::Cnt, key_cnt(b, l)).ok().unwrap();
        s.insert(AgTree::Cnt, &alloc_rec(b + n, l - n))
            .ok()
            .unwrap();
        s.update(AgTree::Bno, key_bno(b), &alloc_rec(b + n, l - n))
            .ok()
            .unwrap();
        for i in 0..n {
            s.put_freelist(b + i).ok().unwrap();
        }
    }

    #[test]
    fn a_block_outside_the_filesystem_is_named_by_its_ag_and_block() {
        let fs = crate::xfs::testutil::fixture_fs(FIXTURE);
        let ov = Overlay::default();
        let s = AgStore::new(&fs, &ov, AG).unwrap();
        let e = s.ag_byte(u32::MAX).unwrap_err().to_string();
        assert!(e.contains(&format!("AG {AG} block {}", u32::MAX)), "{e}");
        assert!(!e.contains("daddr"), "{e}");
    }

    #[test]
    fn inserts_split_every_level_and_grow_the_root_deletes_join_and_shrink_it() {
        let fs = crate::xfs::testutil::fixture_fs(FIXTURE);
        let ov = Overlay::default();
        let mut s = AgStore::new(&fs, &ov, AG).unwrap();
        stock_freelist(&mut s, 100);
        // The real records out first (the synthetic ones would overlap
        // them); they come back at the end.
        let orig = s.records(AgTree::Bno).ok().unwrap();
        for r in &orig {
            s.delete(AgTree::Bno, rec_key(AgTree::Bno, r)).ok().unwrap();
        }
        let (_, orig_levels) = s.root(AgTree::Bno).ok().unwrap();
        assert_eq!(orig_levels, 1);
        let fl0 = s.agf_u32(offset_of!(XfsAgf, agf_flcount));
        let bt0 = s.agf_u32(offset_of!(XfsAgf, agf_btreeblks));
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        // Ascending first (appends: splits at the right edge, up to a
        // third level), then a shuffled batch in the gaps (middle inserts).
        let asc: Vec<u32> = (0..10500).map(|i| 100 + i).collect();
        for &k in &asc {
            s.insert(AgTree::Bno, &alloc_rec(k, 1)).ok().unwrap();
        }
        assert_eq!(s.root(AgTree::Bno).ok().unwrap().1, 3, "a third level");
        check(&mut s, AgTree::Bno);
        // Every third record out (shuffled: borrows and joins), then back
        // in (shuffled: inserts in the middle, shifts and splits).
        let mut mid: Vec<u32> = asc.iter().copied().step_by(3).collect();
        for i in (1..mid.len()).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            mid.swap(i, j);
        }
        for &k in &mid {
            s.delete(AgTree::Bno, key_bno(k)).ok().unwrap();
        }
        check(&mut s, AgTree::Bno);
        for &k in &mid {
            s.insert(AgTree::Bno, &alloc_rec(k, 1)).ok().unwrap();
        }
        let r = check(&mut s, AgTree::Bno);
        assert_eq!(r.records as usize, asc.len());
        let shape = s.shape(AgTree::Bno).ok().unwrap();
        assert_eq!(shape.len(), 3);
        assert_eq!(shape[2].len(), 1);
        // Blocks came from the free list, counted in agf_btreeblks.
        let blocks: usize = shape.iter().map(Vec::len).sum();
        assert_eq!(
            s.agf_u32(offset_of!(XfsAgf, agf_btreeblks)) - bt0,
            blocks as u32 - 1
        );
        assert_eq!(
            fl0 - s.agf_u32(offset_of!(XfsAgf, agf_flcount)),
            blocks as u32 - 1
        );
        // Every record is found again, in order.
        let all = s.records(AgTree::Bno).ok().unwrap();
        assert!(all
            .windows(2)
            .all(|w| rec_key(AgTree::Bno, &w[0]) < rec_key(AgTree::Bno, &w[1])));
        // Delete in a shuffled order: borrows and joins at every level,
        // the root collapses back to one leaf.
        let mut del: Vec<u32> = asc.clone();
        for i in (1..del.len()).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            del.swap(i, j);
        }
        for (n, &k) in del.iter().enumerate() {
            s.delete(AgTree::Bno, key_bno(k)).ok().unwrap();
            if n % 1500 == 0 {
                check(&mut s, AgTree::Bno);
            }
        }
        check(&mut s, AgTree::Bno);
        assert!(s.records(AgTree::Bno).ok().unwrap().is_empty());
        assert_eq!(s.root(AgTree::Bno).ok().unwrap().1, 1, "back to one level");
        // Every block went back to the free list.
        assert_eq!(s.agf_u32(offset_of!(XfsAgf, agf_btreeblks)), bt0);
        assert_eq!(s.agf_u32(offset_of!(XfsAgf, agf_flcount)), fl0);
        for r in &orig {
            s.insert(AgTree::Bno, r).ok().unwrap();
        }
        assert_eq!(s.records(AgTree::Bno).ok().unwrap(), orig);
        check(&mut s, AgTree::Bno);
    }

    #[test]
    fn lshift_rshift_and_borrow_keep_a_two_level_tree() {
        let fs = crate::xfs::testutil::fixture_fs(FIXTURE);
        let ov = Overlay::default();
        let mut s = AgStore::new(&fs, &ov, AG).unwrap();
        stock_freelist(&mut s, 20);
        for i in 0..300u32 {
            s.insert(AgTree::Cnt, &alloc_rec(1000 + 4 * i, 7))
                .ok()
                .unwrap();
        }
        let before = s.shape(AgTree::Cnt).ok().unwrap();
        assert_eq!(before.len(), 2);
        // Fill the gaps of the leftmost leaf: it is full, its right
        // sibling has room (rshift), and later the left has room (lshift).
        let fl = s.agf_u32(offset_of!(XfsAgf, agf_flcount));
        let first_leaf = before[0][0];
        let n_first = s.numrecs(first_leaf);
        let room = s.maxrecs(AgTree::Cnt, 0) - n_first;
        // Fill the first leaf up.
        let mut k = 0u32;
        while s.numrecs(first_leaf) < s.maxrecs(AgTree::Cnt, 0) {
            s.insert(AgTree::Cnt, &alloc_rec(500 + k, 6)).ok().unwrap();
            k += 1;
        }
        assert_eq!(k as usize, room);
        let second = before[0][1];
        let n2 = s.numrecs(second);
        // One more in the first leaf: it goes right (rshift), no new block.
        s.insert(AgTree::Cnt, &alloc_rec(1001, 7)).ok().unwrap();
        assert_eq!(s.agf_u32(offset_of!(XfsAgf, agf_flcount)), fl, "no split");
        assert_eq!(s.numrecs(second), n2 + 1, "one entry moved right");
        check(&mut s, AgTree::Cnt);
        // Delete from the second leaf until it borrows from a sibling.
        let recs = s.records(AgTree::Cnt).ok().unwrap();
        let min = s.minrecs(AgTree::Cnt, 0);
        let second_recs: Vec<Vec<u8>> = recs
            .iter()
            .filter(|r| {
                let (c, ok) = s
                    .lookup(AgTree::Cnt, Lookup::Eq, rec_key(AgTree::Cnt, r))
                    .ok()
                    .unwrap();
                ok && c.leaf().0 == second
            })
            .cloned()
            .collect();
        for r in second_recs.iter().take(s.numrecs(second) - min + 1) {
            s.delete(AgTree::Cnt, rec_key(AgTree::Cnt, r)).ok().unwrap();
        }
        assert_eq!(s.numrecs(second), min, "topped up by a borrow");
        check(&mut s, AgTree::Cnt);
    }

    #[test]
    fn rmap_high_keys_follow_inserts_and_deletes_in_an_overlapping_tree() {
        let fs = crate::xfs::testutil::fixture_fs(FIXTURE);
        let ov = Overlay::default();
        let mut s = AgStore::new(&fs, &ov, AG).unwrap();
        stock_freelist(&mut s, 60);
        let mut rng = Rng(12345);
        let mut added = Vec::new();
        for i in 0..1500u32 {
            // Overlapping extents of inode owners (as reflink makes them):
            // the highest key is not the last record's.
            let start = 100 + (rng.next() % 5000) as u32;
            let len = 1 + (rng.next() % 400) as u32;
            let owner = 1000 + u64::from(i);
            let rec = rmap_rec(start, len, owner, u64::from(i) * 10);
            s.insert(AgTree::Rmap, &rec).ok().unwrap();
            added.push(rec);
        }
        // The tree's structure, and agf_rmap_blocks equal to its blocks.
        let check_counted = |s: &mut AgStore<'_, crate::xfs::read::FileReader>| {
            check(s, AgTree::Rmap);
            let blocks: usize = s
                .shape(AgTree::Rmap)
                .ok()
                .unwrap()
                .iter()
                .map(Vec::len)
                .sum();
            assert_eq!(
                s.agf_u32(offset_of!(XfsAgf, agf_rmap_blocks)) as usize,
                blocks,
                "agf_rmap_blocks"
            );
        };
        assert!(s.root(AgTree::Rmap).ok().unwrap().1 >= 3);
        check_counted(&mut s);
        for r in added.iter().step_by(2) {
            s.delete(AgTree::Rmap, rec_key(AgTree::Rmap, r))
                .ok()
                .unwrap();
        }
        check_counted(&mut s);
    }

    #[test]
    fn inobt_blocks_come_from_free_space_near_the_hint_with_their_reverse_mapping() {
        let fs = crate::xfs::testutil::fixture_fs(FIXTURE);
        let ov = Overlay::default();
        let mut s = AgStore::new(&fs, &ov, AG).unwrap();
        let free0 = s.agf_u32(offset_of!(XfsAgf, agf_freeblks))
            + s.agf_u32(offset_of!(XfsAgf, agf_flcount));
        let ib0 = s.agi_u32(336).ok().unwrap();
        for i in 0..250u32 {
            // Whole free chunks (sparse format: holemask 0, count 64,
            // freecount 64, every inode free), past the AG's real ones.
            let mut r = vec![0u8; 16];
            r[0..4].copy_from_slice(&(16384 + 64 * i).to_be_bytes());
            r[6] = 64;
            r[7] = 64;
            r[8..16].copy_from_slice(&u64::MAX.to_be_bytes());
            s.insert(AgTree::Ino, &r).ok().unwrap();
        }
        for t in [AgTree::Ino, AgTree::Bno, AgTree::Cnt, AgTree::Rmap] {
            check(&mut s, t);
        }
        let shape = s.shape(AgTree::Ino).ok().unwrap();
        let blocks: u32 = shape.iter().map(|l| l.len() as u32).sum();
        assert!(shape.len() >= 2);
        if s.feat.inobtcount {
            assert_eq!(s.agi_u32(336).ok().unwrap(), blocks, "agi_iblocks");
        }
        // Every new block is mapped to XFS_RMAP_OWN_INOBT and left free space.
        let rm = s.records(AgTree::Rmap).ok().unwrap();
        for l in &shape {
            for &b in l {
                assert!(
                    rm.iter().any(|r| be64(r, 8) == Some(XFS_RMAP_OWN_INOBT)
                        && be32(r, 0).unwrap() <= b
                        && b < be32(r, 0).unwrap() + be32(r, 4).unwrap()),
                    "block {b} has no inobt reverse mapping"
                );
            }
        }
        let grown = blocks - ib0.max(1);
        // Free-list blocks still count as free; btree blocks do not.
        let free1 = s.agf_u32(offset_of!(XfsAgf, agf_freeblks))
            + s.agf_u32(offset_of!(XfsAgf, agf_flcount));
        assert!(free1 + grown <= free0);
        // Deleting everything again frees the blocks (deferred frees).
        for i in 0..250u32 {
            s.delete(AgTree::Ino, key_ino(16384 + 64 * i)).ok().unwrap();
        }
        for t in [AgTree::Ino, AgTree::Bno, AgTree::Cnt, AgTree::Rmap] {
            check(&mut s, t);
        }
        assert_eq!(s.root(AgTree::Ino).ok().unwrap().1, 1);
        if s.feat.inobtcount {
            assert_eq!(s.agi_u32(336).ok().unwrap(), ib0);
        }
    }

    /// A copy of the fixture in memory with one byte range changed.
    fn damaged(edit: impl Fn(&mut Vec<u8>, &Fs<FileReader>)) -> Fs<Vec<u8>> {
        let fs = crate::xfs::testutil::fixture_fs(FIXTURE);
        let mut bytes = std::fs::read(crate::xfs::testutil::image_path(FIXTURE)).unwrap();
        edit(&mut bytes, &fs);
        Fs::open(Image::new(bytes)).unwrap()
    }

    fn block_off(fs: &Fs<FileReader>, agbno: u32) -> usize {
        fs.geo
            .agb_to_daddr(AgNumber(AG), AgBlock(agbno))
            .unwrap()
            .byte_offset()
            .unwrap() as usize
    }

    fn agf_field(fs: &Fs<FileReader>, off: usize) -> u32 {
        let ov = Overlay::default();
        let s = AgStore::new(fs, &ov, AG).unwrap();
        s.agf_u32(off)
    }

    fn err_text<T>(r: EditResult<T>) -> String {
        match r {
            Ok(_) => panic!("no error"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn rmap_unmap_trims_and_splits_and_map_merges() {
        use super::super::alloc::RmapOwner;
        let fs = crate::xfs::testutil::fixture_fs(FIXTURE);
        let ov = Overlay::default();
        let mut s = AgStore::new(&fs, &ov, AG).unwrap();
        let base = s.agblocks - 200;
        let ino = |offset: u64| RmapOwner {
            owner: 131,
            offset,
            attr_fork: false,
            bmbt_block: false,
        };
        let mine = |s: &mut AgStore<'_, FileReader>| -> Vec<(u32, u32, u64, u64)> {
            s.records(AgTree::Rmap)
                .unwrap()
                .iter()
                .filter(|r| be32(r, 0).unwrap() >= base)
                .map(|r| {
                    (
                        be32(r, 0).unwrap() - base,
                        be32(r, 4).unwrap(),
                        be64(r, 8).unwrap(),
                        be64(r, 16).unwrap(),
                    )
                })
                .collect()
        };
        assert_eq!(mine(&mut s), vec![], "the end of the AG is unmapped");
        s.rmap_map(base + 100, 10, false, ino(50)).unwrap();
        // The middle: a split, the right part's offset moved on.
        s.rmap_unmap(base + 103, 2, false, ino(53)).unwrap();
        assert_eq!(mine(&mut s), vec![(100, 3, 131, 50), (105, 5, 131, 55)]);
        // Map it back: left and right are contiguous, one record again.
        s.rmap_map(base + 103, 2, false, ino(53)).unwrap();
        assert_eq!(mine(&mut s), vec![(100, 10, 131, 50)]);
        // Front trim moves start and offset; back trim only the length.
        s.rmap_unmap(base + 100, 1, false, ino(50)).unwrap();
        s.rmap_unmap(base + 109, 1, false, ino(59)).unwrap();
        assert_eq!(mine(&mut s), vec![(101, 8, 131, 51)]);
        // A mapping of another owner is refused.
        let other = RmapOwner {
            owner: 132,
            ..ino(51)
        };
        assert!(s.rmap_unmap(base + 101, 1, false, other).is_err());
        // Unknown owner (EFI recovery): removes what covers the range,
        // nothing when nothing overlaps it.
        s.rmap_unmap(
            base + 180,
            4,
            false,
            RmapOwner::special(XFS_RMAP_OWN_UNKNOWN),
        )
        .unwrap();
        s.rmap_unmap(
            base + 101,
            8,
            false,
            RmapOwner::special(XFS_RMAP_OWN_UNKNOWN),
        )
        .unwrap();
        assert_eq!(mine(&mut s), vec![]);
        check(&mut s, AgTree::Rmap);
    }

    #[test]
    fn hostile_blocks_are_errors_that_name_the_block() {
        // numrecs larger than the block holds (CRC fixed: only the check
        // of the contents can catch it).
        let fs = damaged(|b, fs| {
            let root = agf_field(fs, 24);
            let o = block_off(fs, root);
            b[o + 6..o + 8].copy_from_slice(&5000u16.to_be_bytes());
            crate::xfs::ag::testing::fix_crc(&mut b[o..o + 1024], 52);
        });
        let ov = Overlay::default();
        let mut s = AgStore::new(&fs, &ov, AG).unwrap();
        let root = s.agf_u32(offset_of!(XfsAgf, agf_rmap_root));
        let e = err_text(s.insert(AgTree::Rmap, &rmap_rec(9000, 1, 5000, 0)));
        assert!(
            e.contains(&format!("block {root}")) && e.contains("numrecs 5000"),
            "{e}"
        );
        // A wrong level.
        let fs = damaged(|b, fs| {
            let o = block_off(fs, agf_field(fs, 16));
            b[o + 4..o + 6].copy_from_slice(&3u16.to_be_bytes());
            crate::xfs::ag::testing::fix_crc(&mut b[o..o + 1024], 52);
        });
        let mut s = AgStore::new(&fs, &ov, AG).unwrap();
        let e = err_text(s.records(AgTree::Bno));
        assert!(e.contains("bb_level 3 but expected level 0"), "{e}");
        // A leaf whose right sibling is itself.
        let fs = damaged(|b, fs| {
            let root = agf_field(fs, 20);
            let o = block_off(fs, root);
            b[o + 12..o + 16].copy_from_slice(&root.to_be_bytes());
            crate::xfs::ag::testing::fix_crc(&mut b[o..o + 1024], 52);
        });
        let mut s = AgStore::new(&fs, &ov, AG).unwrap();
        let e = err_text(s.shape(AgTree::Cnt));
        assert!(e.contains("rightsib"), "{e}");
        // A bad CRC.
        let fs = damaged(|b, fs| {
            let o = block_off(fs, agf_field(fs, 16));
            b[o + 100] ^= 0xff;
        });
        let mut s = AgStore::new(&fs, &ov, AG).unwrap();
        let e = err_text(s.find(AgTree::Bno, key_bno(1)));
        assert!(e.contains("bad CRC"), "{e}");
        // A root pointer outside the AG and a height of 40.
        let fs = crate::xfs::testutil::fixture_fs(FIXTURE);
        let mut s = AgStore::new(&fs, &ov, AG).unwrap();
        s.set_agf_u32(offset_of!(XfsAgf, agf_bno_root), 0xFFFF_FF00)
            .unwrap();
        assert!(err_text(s.find(AgTree::Bno, key_bno(1))).contains("outside the AG"));
        s.set_agf_u32(offset_of!(XfsAgf, agf_bno_level), 40)
            .unwrap();
        assert!(err_text(s.find(AgTree::Bno, key_bno(1))).contains("height 40"));
    }

    #[test]
    fn rmap_high_keys_cover_the_extent() {
        let mut r = vec![0u8; 24];
        r[0..4].copy_from_slice(&100u32.to_be_bytes());
        r[4..8].copy_from_slice(&10u32.to_be_bytes());
        r[8..16].copy_from_slice(&131u64.to_be_bytes());
        r[16..24].copy_from_slice(&(5u64 | XFS_RMAP_OFF_UNWRITTEN).to_be_bytes());
        let h = rmap_high_key(&r);
        assert_eq!(key_order(AgTree::Rmap, &h), (109, 131, 14));
        // The unwritten bit is not part of a key.
        assert_eq!(be64(&h, 12), Some(14));
        // Non-inode owners keep their offset.
        r[8..16].copy_from_slice(&XFS_RMAP_OWN_COW.to_be_bytes());
        let h = rmap_high_key(&r);
        assert_eq!(key_order(AgTree::Rmap, &h), (109, XFS_RMAP_OWN_COW, 5));
    }
}
