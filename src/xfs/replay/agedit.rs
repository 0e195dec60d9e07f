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

use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::ag::NULLAGBLOCK;
use crate::xfs::format::btree::{
    XFS_RMAP_OFF_BMBT_BLOCK, XFS_RMAP_OFF_MASK, XFS_RMAP_OFF_UNWRITTEN, XFS_RMAP_OWN_INOBT,
    XFS_RMAP_OWN_REFC,
};
use crate::xfs::fs::{be16, be32, be64, Fs};
use crate::xfs::image::Overlay;
use crate::xfs::read::ReadAt;
use std::collections::{BTreeMap, BTreeSet};

/// The records left and right of a key (either may be absent).
pub type Neighbors = (Option<Vec<u8>>, Option<Vec<u8>>);

/// A change this editor does not make.
#[derive(Debug, Clone)]
pub struct Unsupported(pub String);

/// Result of an edit: the image cannot be read or is damaged where the
/// edit looks (an error naming the block), or the change is not made.
#[derive(Debug)]
pub enum EditError {
    Read(Error),
    Unsupported(Unsupported),
}

impl From<Error> for EditError {
    fn from(e: Error) -> Self {
        EditError::Read(e)
    }
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EditError::Read(e) => write!(f, "{e}"),
            EditError::Unsupported(u) => write!(f, "{}", u.0),
        }
    }
}

pub type EditResult<T> = std::result::Result<T, EditError>;

impl EditError {
    /// A refusal's reason with what was being done put in front; other
    /// errors as they are.
    pub(crate) fn within(self, what: impl FnOnce() -> String) -> EditError {
        match self {
            EditError::Unsupported(u) => {
                EditError::Unsupported(Unsupported(format!("{}: {}", what(), u.0)))
            }
            other => other,
        }
    }
}

/// A change this tool does not make, with the reason.
pub(crate) fn refuse<T>(m: String) -> EditResult<T> {
    Err(EditError::Unsupported(Unsupported(m)))
}

/// The AG btrees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tree {
    Bno,
    Cnt,
    Rmap,
    Refc,
    Ino,
    Fino,
}

impl Tree {
    pub fn rec_len(self) -> usize {
        match self {
            Tree::Bno | Tree::Cnt => 8,
            Tree::Rmap => 24,
            Tree::Refc => 12,
            Tree::Ino | Tree::Fino => 16,
        }
    }
    /// Bytes of one node entry's keys (rmapbt: low and high key).
    pub fn key_len(self) -> usize {
        match self {
            Tree::Bno | Tree::Cnt => 8,
            Tree::Rmap => 40,
            Tree::Refc | Tree::Ino | Tree::Fino => 4,
        }
    }
    /// Bytes of a low (or high) key.
    fn half_key(self) -> usize {
        if self.overlapping() {
            self.key_len() / 2
        } else {
            self.key_len()
        }
    }
    pub fn overlapping(self) -> bool {
        self == Tree::Rmap
    }
    /// Root and level live in the AGI (else the AGF).
    pub fn in_agi(self) -> bool {
        matches!(self, Tree::Ino | Tree::Fino)
    }
    /// (root, level) offsets in the AGF or AGI.
    fn root_level_off(self) -> (usize, usize) {
        match self {
            Tree::Bno => (16, 28),
            Tree::Cnt => (20, 32),
            Tree::Rmap => (24, 36),
            Tree::Refc => (88, 92),
            Tree::Ino => (20, 24),
            Tree::Fino => (328, 332),
        }
    }
    fn magic(self, v5: bool) -> Option<u32> {
        Some(match (self, v5) {
            (Tree::Bno, true) => 0x4142_3342,
            (Tree::Bno, false) => 0x4142_5442,
            (Tree::Cnt, true) => 0x4142_3343,
            (Tree::Cnt, false) => 0x4142_5443,
            (Tree::Rmap, true) => 0x524d_4233,
            (Tree::Refc, true) => 0x5233_4643,
            (Tree::Ino, true) => 0x4941_4233,
            (Tree::Ino, false) => 0x4941_4254,
            (Tree::Fino, true) => 0x4649_4233,
            (Tree::Fino, false) => 0x4649_4254,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Tree::Bno => "bnobt",
            Tree::Cnt => "cntbt",
            Tree::Rmap => "rmapbt",
            Tree::Refc => "refcountbt",
            Tree::Ino => "inobt",
            Tree::Fino => "finobt",
        }
    }
}

/// A key in the order the tree sorts by (`key_diff`/`diff_two_keys`):
/// bnobt (start), cntbt (length, start), rmapbt (start, owner, offset
/// without the unwritten bit), refcountbt (start with the CoW bit), inode
/// btrees (startino).
pub type Key = (u64, u64, u64);

fn rmap_off_key(off: u64) -> u64 {
    off & !XFS_RMAP_OFF_UNWRITTEN
}

/// The (low) key of a record.
pub fn rec_key(tree: Tree, rec: &[u8]) -> Key {
    let a = u64::from(be32(rec, 0).unwrap_or(0));
    let b = u64::from(be32(rec, 4).unwrap_or(0));
    match tree {
        Tree::Bno | Tree::Refc | Tree::Ino | Tree::Fino => (a, 0, 0),
        Tree::Cnt => (b, a, 0),
        Tree::Rmap => (
            a,
            be64(rec, 8).unwrap_or(0),
            rmap_off_key(be64(rec, 16).unwrap_or(0)),
        ),
    }
}

/// The order of a node key (a low or high half for the rmapbt).
fn key_order(tree: Tree, k: &[u8]) -> Key {
    let a = u64::from(be32(k, 0).unwrap_or(0));
    match tree {
        Tree::Bno | Tree::Refc | Tree::Ino | Tree::Fino => (a, 0, 0),
        Tree::Cnt => (u64::from(be32(k, 4).unwrap_or(0)), a, 0),
        Tree::Rmap => (
            a,
            be64(k, 4).unwrap_or(0),
            rmap_off_key(be64(k, 12).unwrap_or(0)),
        ),
    }
}

/// Kept for callers that compare raw keys or records: a record of the
/// tree's record length or a key.
pub fn key_of(tree: Tree, k: &[u8]) -> Key {
    if k.len() >= tree.rec_len() {
        rec_key(tree, k)
    } else {
        key_order(tree, k)
    }
}

/// The low key bytes of a record (`init_key_from_rec`).
fn rec_low_key(tree: Tree, rec: &[u8]) -> Vec<u8> {
    match tree {
        Tree::Bno | Tree::Cnt => rec.get(..8).unwrap_or(&[0; 8]).to_vec(),
        Tree::Refc | Tree::Ino | Tree::Fino => rec.get(..4).unwrap_or(&[0; 4]).to_vec(),
        Tree::Rmap => {
            let mut k = Vec::with_capacity(20);
            k.extend_from_slice(rec.get(..4).unwrap_or(&[0; 4]));
            k.extend_from_slice(rec.get(8..16).unwrap_or(&[0; 8]));
            let off = rmap_off_key(be64(rec, 16).unwrap_or(0));
            k.extend_from_slice(&off.to_be_bytes());
            k
        }
    }
}

/// The high key of an rmap record (`xfs_rmapbt_init_high_key_from_rec`).
fn rmap_high_key(rec: &[u8]) -> Vec<u8> {
    let start = be32(rec, 0).unwrap_or(0);
    let len = be32(rec, 4).unwrap_or(0);
    let owner = be64(rec, 8).unwrap_or(0);
    let raw = be64(rec, 16).unwrap_or(0);
    let adj = len.wrapping_sub(1);
    let mut off = rmap_off_key(raw);
    let non_inode = owner & (1 << 63) != 0;
    if !(non_inode || raw & XFS_RMAP_OFF_BMBT_BLOCK != 0) {
        off = ((off & XFS_RMAP_OFF_MASK).wrapping_add(u64::from(adj))) | (off & !XFS_RMAP_OFF_MASK);
    }
    let mut k = Vec::with_capacity(20);
    k.extend_from_slice(&start.wrapping_add(adj).to_be_bytes());
    k.extend_from_slice(&owner.to_be_bytes());
    k.extend_from_slice(&off.to_be_bytes());
    k
}

/// Which way a lookup goes when the key is not there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The last record with a key <= the key.
    Le,
    /// Exactly the key (else the cursor stands where it would go).
    Eq,
    /// The first record with a key >= the key.
    Ge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Lvl {
    bno: u32,
    /// 1-based index in the block (0: before the first).
    ptr: usize,
}

/// A path from the root to a record (`xfs_btree_cur`): index 0 is the
/// leaf level. After [`AgStore::insert_at`] the cursor is spent; after
/// [`AgStore::delete_at`] it stands where the record was, as the
/// kernel's does.
#[derive(Clone, Debug)]
pub struct Cursor {
    pub tree: Tree,
    lv: Vec<Lvl>,
}

impl Cursor {
    fn nlevels(&self) -> usize {
        self.lv.len()
    }
    fn at(&self, level: usize) -> Lvl {
        self.lv.get(level).copied().unwrap_or(Lvl {
            bno: NULLAGBLOCK,
            ptr: 0,
        })
    }
    fn set_ptr(&mut self, level: usize, ptr: usize) {
        if let Some(l) = self.lv.get_mut(level) {
            l.ptr = ptr;
        }
    }
    fn set(&mut self, level: usize, bno: u32, ptr: usize) {
        if let Some(l) = self.lv.get_mut(level) {
            *l = Lvl { bno, ptr };
        }
    }
    /// The leaf block and 1-based index the cursor points at.
    pub fn leaf(&self) -> (u32, usize) {
        let l = self.at(0);
        (l.bno, l.ptr)
    }
}

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
    stale: BTreeSet<u32>,
    deferred: Vec<(u32, u64)>,
    busy: Vec<(u32, u32)>,
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
    /// (`xfs_trans_log_buf`), a shift's whole span included.
    touched: BTreeMap<u32, BTreeSet<usize>>,
    /// Btree blocks freed in this session (`xfs_trans_binval`): whatever
    /// an earlier session wrote to them is not written either.
    stale: BTreeSet<u32>,
    /// Blocks whose free the kernel defers: (agbno, rmap owner).
    deferred: Vec<(u32, u64)>,
    /// Extents freed in this session that the allocator must not hand
    /// out yet (`xfs_extent_busy`): until the log checkpoint that freed
    /// them is on disk, which for mount-time work is after it all.
    busy: Vec<(u32, u32)>,
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
            stale: BTreeSet::new(),
            deferred: Vec::new(),
            busy: Vec::new(),
            hdr: if v5 { 56 } else { 16 },
            blocksize: usize::try_from(fs.geo.blocksize).unwrap_or(4096),
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
        if be32(&s.agf, 0) != Some(0x5841_4746) {
            return Err(bad(&format!(
                "agf_magicnum {:#010x} is not XAGF (0x58414746)",
                be32(&s.agf, 0).unwrap_or(0)
            )));
        }
        let len = s.agf_u32(12);
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
                    Location::Daddr { daddr: 0 },
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
            stale: self.stale.clone(),
            deferred: self.deferred.clone(),
            busy: self.busy.clone(),
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
        self.stale = s.stale;
        self.deferred = s.deferred;
        self.busy = s.busy;
    }

    /// `xfs_extent_busy_insert`.
    pub fn busy_insert(&mut self, bno: u32, len: u32) {
        if len > 0 {
            self.busy.push((bno, len));
        }
    }

    /// The busy extents, to hand to a later step of the same checkpoint.
    pub fn busy_extents(&self) -> Vec<(u32, u32)> {
        self.busy.clone()
    }

    /// Forget every busy extent (the log checkpoints that freed them are
    /// on disk: after a remount, for instance).
    pub fn clear_busy(&mut self) {
        self.busy.clear();
    }

    /// `xfs_extent_busy_reuse`: `bno` leaves the busy extents.
    fn busy_reuse(&mut self, bno: u32) {
        let mut out = Vec::with_capacity(self.busy.len().saturating_add(1));
        for &(b, l) in &self.busy {
            let e = b.saturating_add(l);
            if bno < b || bno >= e {
                out.push((b, l));
                continue;
            }
            if bno > b {
                out.push((b, bno.saturating_sub(b)));
            }
            let after = bno.saturating_add(1);
            if after < e {
                out.push((after, e.saturating_sub(after)));
            }
        }
        self.busy = out;
    }

    /// `xfs_extent_busy_trim`: the part of the free extent `[bno, bno +
    /// len)` an allocation of `minlen..=maxlen` blocks may use, or `None`.
    pub(crate) fn busy_trim(
        &self,
        bno: u32,
        len: u32,
        minlen: u32,
        maxlen: u32,
    ) -> Option<(u32, u32)> {
        let mut fbno = bno;
        let mut fend = bno.saturating_add(len);
        let mut guard = 0usize;
        loop {
            guard = guard.saturating_add(1);
            if guard > self.busy.len().saturating_add(2) {
                break;
            }
            let Some(&(bb, bl)) = self
                .busy
                .iter()
                .find(|&&(b, l)| b < fend && b.saturating_add(l) > fbno)
            else {
                break;
            };
            let bend = bb.saturating_add(bl);
            if bb <= fbno {
                if fend <= bend {
                    return None;
                }
                fbno = bend;
            } else if bend >= fend || bb.saturating_sub(fbno) >= maxlen {
                // End overlap, or the part left of it is long enough.
                fend = bb;
            } else if fend.saturating_sub(bend) >= maxlen.saturating_mul(4) {
                fbno = bend;
            } else if bb.saturating_sub(fbno) >= minlen {
                fend = bb;
            } else {
                return None;
            }
            if fend.saturating_sub(fbno) < minlen {
                return None;
            }
        }
        (fend > fbno).then(|| (fbno, fend.saturating_sub(fbno)))
    }

    pub fn agf_u32(&self, off: usize) -> u32 {
        be32(&self.agf, off).unwrap_or(0)
    }

    pub fn set_agf_u32(&mut self, off: usize, v: u32) {
        if be32(&self.agf, off) != Some(v) {
            super::put_be32(&mut self.agf, off, v);
            self.agf_dirty = true;
        }
    }

    fn add_agf(&mut self, off: usize, delta: i64) {
        let v = i64::from(self.agf_u32(off)).saturating_add(delta);
        self.set_agf_u32(off, u32::try_from(v.max(0)).unwrap_or(u32::MAX));
    }

    fn load_agi(&mut self) -> EditResult<()> {
        if self.agi.is_none() {
            let ss = u64::from(self.fs.geo.sectsize);
            let off = self.ag_byte(0)?.saturating_add(ss.saturating_mul(2));
            let b = self.read_bytes(off, ss)?;
            if be32(&b, 0) != Some(0x5841_4749) {
                return Err(EditError::Read(Error::corrupt(
                    "AGI",
                    Location::Bytes {
                        offset: off,
                        len: ss,
                    },
                    format!("AG {}: bad AGI magic", self.agno),
                )));
            }
            self.agi = Some(b);
        }
        Ok(())
    }

    /// A 32-bit AGI field.
    pub fn agi_u32(&mut self, off: usize) -> EditResult<u32> {
        self.load_agi()?;
        Ok(self.agi.as_deref().and_then(|a| be32(a, off)).unwrap_or(0))
    }

    pub fn set_agi_u32(&mut self, off: usize, v: u32) -> EditResult<()> {
        self.load_agi()?;
        if let Some(a) = self.agi.as_mut() {
            if be32(a, off) != Some(v) {
                super::put_be32(a, off, v);
                self.agi_dirty = true;
            }
        }
        Ok(())
    }

    fn add_agi(&mut self, off: usize, delta: i64) -> EditResult<()> {
        let v = i64::from(self.agi_u32(off)?).saturating_add(delta);
        self.set_agi_u32(off, u32::try_from(v.max(0)).unwrap_or(u32::MAX))
    }

    /// Where the root is and how tall the tree is.
    pub fn root(&mut self, tree: Tree) -> EditResult<(u32, u32)> {
        let (r, l) = tree.root_level_off();
        if tree.in_agi() {
            Ok((self.agi_u32(r)?, self.agi_u32(l)?))
        } else {
            Ok((self.agf_u32(r), self.agf_u32(l)))
        }
    }

    /// `set_root`: a new root, the height changed by `inc`.
    fn set_root(&mut self, tree: Tree, root: u32, inc: i64) -> EditResult<()> {
        let (r, l) = tree.root_level_off();
        if tree.in_agi() {
            self.set_agi_u32(r, root)?;
            self.add_agi(l, inc)
        } else {
            self.set_agf_u32(r, root);
            self.add_agf(l, inc);
            Ok(())
        }
    }

    pub(crate) fn agfl_slots(&self) -> u32 {
        let hdr: u32 = if self.feat.v5 { 36 } else { 0 };
        u32::from(self.fs.geo.sectsize).saturating_sub(hdr) / 4
    }

    fn load_agfl(&mut self) -> EditResult<()> {
        if self.agfl.is_none() {
            let ss = u64::from(self.fs.geo.sectsize);
            let off = self.ag_byte(0)?.saturating_add(ss.saturating_mul(3));
            let b = self.read_bytes(off, ss)?;
            if self.feat.v5 && be32(&b, 0) != Some(0x5841_464c) {
                return Err(EditError::Read(Error::corrupt(
                    "AGFL",
                    Location::Bytes {
                        offset: off,
                        len: ss,
                    },
                    format!("AG {}: bad AGFL magic", self.agno),
                )));
            }
            self.agfl = Some(b);
        }
        Ok(())
    }

    /// The free list's head, tail and count must agree (the kernel resets
    /// a list that does not: `xfs_agfl_needs_reset`; that is not done here).
    fn check_agfl_fields(&self) -> EditResult<()> {
        let (f, l, c) = (self.agf_u32(40), self.agf_u32(44), self.agf_u32(48));
        let size = self.agfl_slots();
        let active = if c == 0 {
            0
        } else if l >= f {
            l.saturating_sub(f).saturating_add(1)
        } else {
            size.saturating_sub(f).saturating_add(l).saturating_add(1)
        };
        if f >= size || l >= size || c > size || active != c {
            return refuse(format!(
                "AG {}: the free list's first {f}, last {l} and count {c} disagree (the kernel would reset it)",
                self.agno
            ));
        }
        Ok(())
    }

    /// `xfs_alloc_get_freelist`: the block at the head of the free list
    /// (`None` when it is empty); `btreeblk` counts it in `agf_btreeblks`.
    pub fn get_freelist(&mut self, btreeblk: bool) -> EditResult<Option<u32>> {
        if self.agf_u32(48) == 0 {
            return Ok(None);
        }
        self.check_agfl_fields()?;
        self.load_agfl()?;
        let hdr: usize = if self.feat.v5 { 36 } else { 0 };
        let first = self.agf_u32(40);
        let off = usize::try_from(first)
            .unwrap_or(usize::MAX)
            .saturating_mul(4)
            .saturating_add(hdr);
        let bno = self
            .agfl
            .as_deref()
            .and_then(|a| be32(a, off))
            .unwrap_or(NULLAGBLOCK);
        if bno == 0 || bno >= self.agblocks {
            return refuse(format!(
                "AG {}: free list slot {first} holds block {bno}, outside the AG",
                self.agno
            ));
        }
        let mut nf = first.saturating_add(1);
        if nf == self.agfl_slots() {
            nf = 0;
        }
        self.set_agf_u32(40, nf);
        self.add_agf(48, -1);
        if btreeblk {
            self.add_agf(60, 1);
            self.busy_reuse(bno);
        }
        Ok(Some(bno))
    }

    /// `xfs_alloc_put_freelist`: put `agbno` at the end of the free list.
    pub fn put_freelist(&mut self, agbno: u32) -> EditResult<()> {
        self.put_freelist_ex(agbno, false)
    }

    pub(crate) fn put_freelist_ex(&mut self, agbno: u32, btreeblk: bool) -> EditResult<()> {
        if self.agf_u32(48) > 0 {
            self.check_agfl_fields()?;
        }
        self.load_agfl()?;
        let slots = self.agfl_slots();
        if self.agf_u32(48) >= slots {
            return refuse(format!("AG {}: the free list is full", self.agno));
        }
        let mut last = self.agf_u32(44).saturating_add(1);
        if last >= slots {
            last = 0;
        }
        self.set_agf_u32(44, last);
        self.add_agf(48, 1);
        if btreeblk {
            self.add_agf(60, -1);
        }
        let hdr: u32 = if self.feat.v5 { 36 } else { 0 };
        let off = usize::try_from(hdr.saturating_add(last.saturating_mul(4))).unwrap_or(usize::MAX);
        if let Some(agfl) = self.agfl.as_mut() {
            super::put_be32(agfl, off, agbno);
        }
        self.agfl_dirty = true;
        Ok(())
    }

    /// The blocks on the free list, head first.
    pub fn freelist(&mut self) -> EditResult<Vec<u32>> {
        let c = self.agf_u32(48);
        if c == 0 {
            return Ok(Vec::new());
        }
        self.check_agfl_fields()?;
        self.load_agfl()?;
        let hdr: usize = if self.feat.v5 { 36 } else { 0 };
        let slots = self.agfl_slots();
        let mut i = self.agf_u32(40);
        let mut out = Vec::new();
        for _ in 0..c {
            let off = usize::try_from(i)
                .unwrap_or(usize::MAX)
                .saturating_mul(4)
                .saturating_add(hdr);
            out.push(
                self.agfl
                    .as_deref()
                    .and_then(|a| be32(a, off))
                    .unwrap_or(NULLAGBLOCK),
            );
            i = i.saturating_add(1);
            if i >= slots {
                i = 0;
            }
        }
        Ok(out)
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

    /// The chunks of each changed btree block written (by daddr).
    pub fn touched(&self) -> Result<Vec<(u64, BTreeSet<usize>)>> {
        let mut out = Vec::new();
        for b in &self.dirty {
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

    // ---------------------------------------------------------------
    // Blocks

    pub(crate) fn maxrecs(&self, tree: Tree, level: usize) -> usize {
        let room = self.blocksize.saturating_sub(self.hdr);
        let per = if level == 0 {
            tree.rec_len()
        } else {
            tree.key_len().saturating_add(4)
        };
        room.checked_div(per).unwrap_or(0)
    }

    fn minrecs(&self, tree: Tree, level: usize) -> usize {
        self.maxrecs(tree, level) / 2
    }

    /// Read (once) and check a block of `tree` expected at `level`.
    fn load(&mut self, tree: Tree, bno: u32, level: Option<usize>) -> EditResult<()> {
        let daddr = self.daddr_of(bno);
        let name = tree.name();
        let agno = self.agno;
        let at = |m: String| corrupt_at(daddr, format!("{name} AG {agno} block {bno}: {m}"));
        if bno == 0 || bno >= self.agblocks {
            return Err(at(format!(
                "block number outside the AG (0..{})",
                self.agblocks
            )));
        }
        if !self.blocks.contains_key(&bno) {
            let off = self.ag_byte(bno)?;
            let b = self.read_bytes(off, u64::try_from(self.blocksize).unwrap_or(4096))?;
            if self.feat.v5 {
                let crc = crate::xfs::sb::crc_with_hole(&b, 52);
                if b.get(52..56).map(|c| c.to_vec()) != Some(crc.to_le_bytes().to_vec()) {
                    let stored = b
                        .get(52..56)
                        .and_then(|c| <[u8; 4]>::try_from(c).ok())
                        .map_or(0, u32::from_le_bytes);
                    return Err(at(format!(
                        "bad CRC: bb_crc {stored:#010x}, computed {crc:#010x}"
                    )));
                }
                if be64(&b, 16) != Some(daddr) {
                    return Err(at(format!(
                        "bb_blkno {} is not the block's address {daddr}",
                        be64(&b, 16).unwrap_or(0)
                    )));
                }
                if be32(&b, 48) != Some(self.agno) {
                    return Err(at(format!(
                        "bb_owner {} is not the AG",
                        be32(&b, 48).unwrap_or(0)
                    )));
                }
                if b.get(32..48).map(|u| u.to_vec()) != Some(self.fs.meta_uuid().to_vec()) {
                    return Err(at("bb_uuid is not the filesystem's".into()));
                }
            }
            self.blocks.insert(bno, b);
        }
        let b = self.blocks.get(&bno).map(|b| b.as_slice()).unwrap_or(&[]);
        let magic = be32(b, 0).unwrap_or(0);
        if Some(magic) != tree.magic(self.feat.v5) {
            return Err(at(format!("magic {magic:#010x} is not the {name}'s")));
        }
        let lv = usize::from(be16(b, 4).unwrap_or(0));
        if let Some(want) = level {
            if lv != want {
                return Err(at(format!("bb_level {lv} but expected level {want}")));
            }
        }
        if lv >= 9 {
            return Err(at(format!("bb_level {lv} is too tall")));
        }
        let n = usize::from(be16(b, 6).unwrap_or(0));
        let max = self.maxrecs(tree, lv);
        if n > max {
            return Err(at(format!("numrecs {n} is more than {max}")));
        }
        for (what, off) in [("leftsib", 8), ("rightsib", 12)] {
            let s = be32(b, off).unwrap_or(0);
            if s != NULLAGBLOCK && (s >= self.agblocks || s == 0 || s == bno) {
                return Err(at(format!("{what} {s} is not a block of the AG")));
            }
        }
        Ok(())
    }

    fn blk(&self, bno: u32) -> &[u8] {
        self.blocks.get(&bno).map(|b| b.as_slice()).unwrap_or(&[])
    }

    fn blk_mut(&mut self, bno: u32) -> Option<&mut Vec<u8>> {
        self.dirty.insert(bno);
        self.blocks.get_mut(&bno)
    }

    fn numrecs(&self, bno: u32) -> usize {
        usize::from(be16(self.blk(bno), 6).unwrap_or(0))
    }

    fn set_numrecs(&mut self, bno: u32, n: usize) {
        self.touch(bno, 6, 2);
        if let Some(b) = self.blk_mut(bno) {
            super::put_be16(b, 6, u16::try_from(n).unwrap_or(0));
        }
    }

    fn level_of(&self, bno: u32) -> usize {
        usize::from(be16(self.blk(bno), 4).unwrap_or(0))
    }

    fn sib(&self, bno: u32, right: bool) -> u32 {
        be32(self.blk(bno), if right { 12 } else { 8 }).unwrap_or(NULLAGBLOCK)
    }

    fn set_sib(&mut self, bno: u32, right: bool, v: u32) {
        self.touch(bno, if right { 12 } else { 8 }, 4);
        if let Some(b) = self.blk_mut(bno) {
            super::put_be32(b, if right { 12 } else { 8 }, v);
        }
    }

    fn rec_off(&self, tree: Tree, i: usize) -> usize {
        self.hdr
            .saturating_add(i.saturating_sub(1).saturating_mul(tree.rec_len()))
    }

    fn key_off(&self, tree: Tree, i: usize) -> usize {
        self.hdr
            .saturating_add(i.saturating_sub(1).saturating_mul(tree.key_len()))
    }

    fn ptr_off(&self, tree: Tree, i: usize) -> usize {
        self.hdr
            .saturating_add(self.maxrecs(tree, 1).saturating_mul(tree.key_len()))
            .saturating_add(i.saturating_sub(1).saturating_mul(4))
    }

    fn rec_at(&self, tree: Tree, bno: u32, i: usize) -> Vec<u8> {
        let o = self.rec_off(tree, i);
        self.blk(bno)
            .get(o..o.saturating_add(tree.rec_len()))
            .unwrap_or(&[])
            .to_vec()
    }

    fn key_at(&self, tree: Tree, bno: u32, i: usize) -> Vec<u8> {
        let o = self.key_off(tree, i);
        self.blk(bno)
            .get(o..o.saturating_add(tree.key_len()))
            .unwrap_or(&[])
            .to_vec()
    }

    fn ptr_at(&self, tree: Tree, bno: u32, i: usize) -> u32 {
        be32(self.blk(bno), self.ptr_off(tree, i)).unwrap_or(NULLAGBLOCK)
    }

    /// Note bytes `off..off + len` of block `bno` as logged.
    fn touch(&mut self, bno: u32, off: usize, len: usize) {
        self.touched
            .entry(bno)
            .or_default()
            .extend(super::ckpt::chunks_of(off, len));
    }

    fn put_bytes(&mut self, bno: u32, off: usize, data: &[u8]) {
        self.touch(bno, off, data.len());
        if let Some(b) = self.blk_mut(bno) {
            if let Some(d) = b.get_mut(off..off.saturating_add(data.len())) {
                d.copy_from_slice(data);
            }
        }
    }

    /// Move `count` entries of `len` bytes from slot `from` to slot `to`
    /// (1-based) inside one array starting at `base` (memmove).
    fn shift(&mut self, bno: u32, base: usize, len: usize, from: usize, to: usize, count: usize) {
        if count == 0 {
            return;
        }
        let src = base.saturating_add(from.saturating_sub(1).saturating_mul(len));
        let dst = base.saturating_add(to.saturating_sub(1).saturating_mul(len));
        let n = count.saturating_mul(len);
        let lo = src.min(dst);
        self.touch(bno, lo, src.max(dst).saturating_add(n).saturating_sub(lo));
        if let Some(b) = self.blk_mut(bno) {
            let end = src.max(dst).saturating_add(n);
            if end <= b.len() {
                b.copy_within(src..src.saturating_add(n), dst);
            }
        }
    }

    /// Shift entries (records, or keys and pointers) of a block.
    fn shift_entries(
        &mut self,
        tree: Tree,
        bno: u32,
        level: usize,
        from: usize,
        to: usize,
        count: usize,
    ) {
        let hdr = self.hdr;
        if level == 0 {
            self.shift(bno, hdr, tree.rec_len(), from, to, count);
        } else {
            self.shift(bno, hdr, tree.key_len(), from, to, count);
            let pbase = self.ptr_off(tree, 1);
            self.shift(bno, pbase, 4, from, to, count);
        }
    }

    /// Copy `count` entries from slot `from` of `src` to slot `to` of `dst`.
    #[allow(clippy::too_many_arguments)]
    fn copy_entries(
        &mut self,
        tree: Tree,
        level: usize,
        src: u32,
        from: usize,
        dst: u32,
        to: usize,
        count: usize,
    ) {
        if count == 0 {
            return;
        }
        let (len_a, base_a) = if level == 0 {
            (tree.rec_len(), self.hdr)
        } else {
            (tree.key_len(), self.hdr)
        };
        let mut arrays = vec![(base_a, len_a)];
        if level > 0 {
            arrays.push((self.ptr_off(tree, 1), 4));
        }
        for (base, len) in arrays {
            let s = base.saturating_add(from.saturating_sub(1).saturating_mul(len));
            let n = count.saturating_mul(len);
            let data = self
                .blk(src)
                .get(s..s.saturating_add(n))
                .unwrap_or(&[])
                .to_vec();
            let d = base.saturating_add(to.saturating_sub(1).saturating_mul(len));
            self.put_bytes(dst, d, &data);
        }
    }

    fn put_rec(&mut self, tree: Tree, bno: u32, i: usize, rec: &[u8]) {
        let o = self.rec_off(tree, i);
        let r = rec.get(..tree.rec_len()).unwrap_or(rec).to_vec();
        self.put_bytes(bno, o, &r);
    }

    fn put_key(&mut self, tree: Tree, bno: u32, i: usize, key: &[u8]) {
        if i == 0 || i > self.maxrecs(tree, 1) {
            return;
        }
        let o = self.key_off(tree, i);
        let k = key.get(..tree.key_len()).unwrap_or(key).to_vec();
        self.put_bytes(bno, o, &k);
    }

    fn put_ptr(&mut self, tree: Tree, bno: u32, i: usize, p: u32) {
        let o = self.ptr_off(tree, i);
        self.put_bytes(bno, o, &p.to_be_bytes());
    }

    /// `xfs_btree_init_block`: a fresh block (zeroed, as a new buffer is).
    fn init_block(&mut self, tree: Tree, bno: u32, level: usize, numrecs: usize) {
        let mut b = vec![0u8; self.blocksize];
        super::put_be32(&mut b, 0, tree.magic(self.feat.v5).unwrap_or(0));
        super::put_be16(&mut b, 4, u16::try_from(level).unwrap_or(0));
        super::put_be16(&mut b, 6, u16::try_from(numrecs).unwrap_or(0));
        super::put_be32(&mut b, 8, NULLAGBLOCK);
        super::put_be32(&mut b, 12, NULLAGBLOCK);
        if self.feat.v5 {
            super::put_be64(&mut b, 16, self.daddr_of(bno));
            if let Some(u) = b.get_mut(32..48) {
                u.copy_from_slice(&self.fs.meta_uuid());
            }
            super::put_be32(&mut b, 48, self.agno);
        }
        self.blocks.insert(bno, b);
        self.dirty.insert(bno);
        let hdr = self.hdr;
        self.touch(bno, 0, hdr);
    }

    /// The keys of a block (`xfs_btree_get_keys`): the low key, and for
    /// the rmapbt the highest high key after it.
    fn get_keys(&self, tree: Tree, bno: u32) -> Vec<u8> {
        let n = self.numrecs(bno);
        let hk = tree.half_key();
        if self.level_of(bno) == 0 {
            let first = self.rec_at(tree, bno, 1);
            let mut key = rec_low_key(tree, &first);
            if tree.overlapping() {
                let mut max = rmap_high_key(&first);
                for i in 2..=n {
                    let h = rmap_high_key(&self.rec_at(tree, bno, i));
                    if key_order(tree, &h) > key_order(tree, &max) {
                        max = h;
                    }
                }
                key.extend_from_slice(&max);
            }
            key.resize(tree.key_len(), 0);
            key
        } else if tree.overlapping() {
            let k1 = self.key_at(tree, bno, 1);
            let mut key = k1.get(..hk).unwrap_or(&[]).to_vec();
            let mut max = k1.get(hk..).unwrap_or(&[]).to_vec();
            for i in 2..=n {
                let k = self.key_at(tree, bno, i);
                let h = k.get(hk..).unwrap_or(&[]);
                if key_order(tree, h) > key_order(tree, &max) {
                    max = h.to_vec();
                }
            }
            key.extend_from_slice(&max);
            key.resize(tree.key_len(), 0);
            key
        } else {
            self.key_at(tree, bno, 1)
        }
    }

    // ---------------------------------------------------------------
    // Cursor moves

    /// `xfs_btree_lookup`: a cursor for `key`, and whether a record fits
    /// the direction (for [`Lookup::Eq`]: whether the key is there).
    pub fn lookup(&mut self, tree: Tree, dir: Lookup, key: Key) -> EditResult<(Cursor, bool)> {
        let (root, levels) = self.root(tree)?;
        let nlevels = usize::try_from(levels).unwrap_or(0);
        if nlevels == 0 || nlevels > 9 {
            return Err(corrupt_at(
                0,
                format!(
                    "{} AG {}: height {levels} is not 1..=9",
                    tree.name(),
                    self.agno
                ),
            ));
        }
        let mut cur = Cursor {
            tree,
            lv: vec![
                Lvl {
                    bno: NULLAGBLOCK,
                    ptr: 0
                };
                nlevels
            ],
        };
        let mut bno = root;
        let mut diff = std::cmp::Ordering::Greater;
        let mut keyno = 0usize;
        for level in (0..nlevels).rev() {
            self.load(tree, bno, Some(level))?;
            let n = self.numrecs(bno);
            if level > 0 && n == 0 {
                return Err(corrupt_at(
                    self.daddr_of(bno),
                    format!(
                        "{} AG {} block {bno}: a node with no entries",
                        tree.name(),
                        self.agno
                    ),
                ));
            }
            cur.set(level, bno, 0);
            if diff == std::cmp::Ordering::Equal {
                keyno = 1;
            } else {
                let mut low = 1usize;
                let mut high = n;
                if high == 0 {
                    if nlevels != 1 {
                        return Err(corrupt_at(
                            self.daddr_of(bno),
                            format!(
                                "{} AG {} block {bno}: an empty leaf under a node",
                                tree.name(),
                                self.agno
                            ),
                        ));
                    }
                    cur.set_ptr(0, usize::from(dir != Lookup::Le));
                    return Ok((cur, false));
                }
                while low <= high {
                    keyno = low.saturating_add(high) >> 1;
                    let k = if level == 0 {
                        rec_key(tree, &self.rec_at(tree, bno, keyno))
                    } else {
                        key_order(tree, &self.key_at(tree, bno, keyno))
                    };
                    diff = k.cmp(&key);
                    match diff {
                        std::cmp::Ordering::Less => low = keyno.saturating_add(1),
                        std::cmp::Ordering::Greater => {
                            if keyno == 0 {
                                break;
                            }
                            high = keyno.saturating_sub(1);
                        }
                        std::cmp::Ordering::Equal => break,
                    }
                }
            }
            if level > 0 {
                if diff == std::cmp::Ordering::Greater {
                    keyno = keyno.saturating_sub(1).max(1);
                }
                cur.set_ptr(level, keyno);
                bno = self.ptr_at(tree, bno, keyno);
            }
        }
        let leaf = cur.at(0).bno;
        let n = self.numrecs(leaf);
        if dir != Lookup::Le && diff == std::cmp::Ordering::Less {
            keyno = keyno.saturating_add(1);
            if dir == Lookup::Ge && keyno > n && self.sib(leaf, true) != NULLAGBLOCK {
                cur.set_ptr(0, keyno);
                if !self.increment_level(&mut cur, 0)? {
                    return Err(corrupt_at(
                        self.daddr_of(leaf),
                        format!(
                            "{} AG {}: a right sibling that cannot be reached",
                            tree.name(),
                            self.agno
                        ),
                    ));
                }
                return Ok((cur, true));
            }
        } else if dir == Lookup::Le && diff == std::cmp::Ordering::Greater {
            keyno = keyno.saturating_sub(1);
        }
        cur.set_ptr(0, keyno);
        let stat = if keyno == 0 || keyno > n {
            false
        } else {
            dir != Lookup::Eq || diff == std::cmp::Ordering::Equal
        };
        Ok((cur, stat))
    }

    /// The record the cursor points at.
    pub fn get_rec(&self, cur: &Cursor) -> Option<Vec<u8>> {
        let l = cur.at(0);
        if l.ptr == 0 || l.ptr > self.numrecs(l.bno) {
            return None;
        }
        Some(self.rec_at(cur.tree, l.bno, l.ptr))
    }

    /// `xfs_btree_increment` at the leaf level.
    pub fn increment(&mut self, cur: &mut Cursor) -> EditResult<bool> {
        self.increment_level(cur, 0)
    }

    /// `xfs_btree_decrement` at the leaf level.
    pub fn decrement(&mut self, cur: &mut Cursor) -> EditResult<bool> {
        self.decrement_level(cur, 0)
    }

    fn increment_level(&mut self, cur: &mut Cursor, level: usize) -> EditResult<bool> {
        let tree = cur.tree;
        let l = cur.at(level);
        let ptr = l.ptr.saturating_add(1);
        cur.set_ptr(level, ptr);
        if ptr <= self.numrecs(l.bno) {
            return Ok(true);
        }
        if self.sib(l.bno, true) == NULLAGBLOCK {
            return Ok(false);
        }
        let mut lev = level.saturating_add(1);
        while lev < cur.nlevels() {
            let b = cur.at(lev);
            let p = b.ptr.saturating_add(1);
            cur.set_ptr(lev, p);
            if p <= self.numrecs(b.bno) {
                break;
            }
            lev = lev.saturating_add(1);
        }
        if lev >= cur.nlevels() {
            return Err(corrupt_at(
                self.daddr_of(l.bno),
                format!(
                    "{} AG {} block {}: a right sibling but no next entry above it",
                    tree.name(),
                    self.agno,
                    l.bno
                ),
            ));
        }
        while lev > level {
            let b = cur.at(lev);
            let child = self.ptr_at(tree, b.bno, b.ptr);
            lev = lev.saturating_sub(1);
            self.load(tree, child, Some(lev))?;
            cur.set(lev, child, 1);
        }
        Ok(true)
    }

    fn decrement_level(&mut self, cur: &mut Cursor, level: usize) -> EditResult<bool> {
        let tree = cur.tree;
        let l = cur.at(level);
        let ptr = l.ptr.saturating_sub(1);
        cur.set_ptr(level, ptr);
        if l.ptr > 1 {
            return Ok(true);
        }
        if self.sib(l.bno, false) == NULLAGBLOCK {
            return Ok(false);
        }
        let mut lev = level.saturating_add(1);
        while lev < cur.nlevels() {
            let b = cur.at(lev);
            let p = b.ptr.saturating_sub(1);
            cur.set_ptr(lev, p);
            if b.ptr > 1 {
                break;
            }
            lev = lev.saturating_add(1);
        }
        if lev >= cur.nlevels() {
            return Err(corrupt_at(
                self.daddr_of(l.bno),
                format!(
                    "{} AG {} block {}: a left sibling but no entry before it above",
                    tree.name(),
                    self.agno,
                    l.bno
                ),
            ));
        }
        while lev > level {
            let b = cur.at(lev);
            let child = self.ptr_at(tree, b.bno, b.ptr);
            lev = lev.saturating_sub(1);
            self.load(tree, child, Some(lev))?;
            let n = self.numrecs(child);
            cur.set(lev, child, n);
        }
        Ok(true)
    }

    fn firstrec(&self, cur: &mut Cursor, level: usize) -> bool {
        if self.numrecs(cur.at(level).bno) == 0 {
            return false;
        }
        cur.set_ptr(level, 1);
        true
    }

    fn lastrec(&self, cur: &mut Cursor, level: usize) -> bool {
        let n = self.numrecs(cur.at(level).bno);
        if n == 0 {
            return false;
        }
        cur.set_ptr(level, n);
        true
    }

    // ---------------------------------------------------------------
    // Keys

    /// `xfs_btree_update_keys`: the keys above `level` describe the
    /// blocks under them again.
    fn update_keys(&mut self, cur: &Cursor, level: usize) {
        let tree = cur.tree;
        if tree.overlapping() {
            self.updkeys(cur, level, false);
            return;
        }
        let key = self.get_keys(tree, cur.at(level).bno);
        let mut lev = level.saturating_add(1);
        let mut ptr = 1usize;
        while ptr == 1 && lev < cur.nlevels() {
            let l = cur.at(lev);
            ptr = l.ptr;
            self.put_key(tree, l.bno, ptr, &key);
            lev = lev.saturating_add(1);
        }
    }

    /// `__xfs_btree_updkeys` (overlapping trees): low and high keys up to
    /// the root, stopping where they already agree unless `force`.
    fn updkeys(&mut self, cur: &Cursor, level: usize, force: bool) {
        let tree = cur.tree;
        if level.saturating_add(1) >= cur.nlevels() {
            return;
        }
        let hk = tree.half_key();
        let mut key = self.get_keys(tree, cur.at(level).bno);
        let mut lev = level.saturating_add(1);
        while lev < cur.nlevels() {
            let l = cur.at(lev);
            let old = self.key_at(tree, l.bno, l.ptr);
            let same = |a: &[u8], b: &[u8]| {
                key_order(tree, a.get(..hk).unwrap_or(&[]))
                    == key_order(tree, b.get(..hk).unwrap_or(&[]))
                    && key_order(tree, a.get(hk..).unwrap_or(&[]))
                        == key_order(tree, b.get(hk..).unwrap_or(&[]))
            };
            if !force && same(&old, &key) {
                break;
            }
            self.put_key(tree, l.bno, l.ptr, &key);
            if lev.saturating_add(1) >= cur.nlevels() {
                break;
            }
            key = self.get_keys(tree, l.bno);
            lev = lev.saturating_add(1);
        }
    }

    fn needs_key_update(tree: Tree, ptr: usize) -> bool {
        tree.overlapping() || ptr == 1
    }

    /// `xfs_btree_update`: replace the record the cursor points at.
    pub fn update_at(&mut self, cur: &Cursor, rec: &[u8]) -> EditResult<()> {
        let tree = cur.tree;
        let l = cur.at(0);
        if l.ptr == 0 || l.ptr > self.numrecs(l.bno) {
            return refuse(format!("{}: the cursor points at no record", tree.name()));
        }
        if rec.len() != tree.rec_len() {
            return refuse(format!("{}: a record of {} bytes", tree.name(), rec.len()));
        }
        self.put_rec(tree, l.bno, l.ptr, rec);
        if Self::needs_key_update(tree, l.ptr) {
            self.update_keys(cur, 0);
        }
        self.after_edit(tree)
    }

    // ---------------------------------------------------------------
    // Shifts, splits, roots

    /// `xfs_btree_lshift`: move the first entry of the cursor's block to
    /// its left sibling.
    fn lshift(&mut self, cur: &mut Cursor, level: usize) -> EditResult<bool> {
        let tree = cur.tree;
        let rb = cur.at(level).bno;
        let lb = self.sib(rb, false);
        if lb == NULLAGBLOCK || cur.at(level).ptr <= 1 {
            return Ok(false);
        }
        self.load(tree, lb, Some(level))?;
        let mut lrecs = self.numrecs(lb);
        if lrecs == self.maxrecs(tree, level) {
            return Ok(false);
        }
        let mut rrecs = self.numrecs(rb);
        lrecs = lrecs.saturating_add(1);
        rrecs = rrecs.saturating_sub(1);
        self.copy_entries(tree, level, rb, 1, lb, lrecs, 1);
        self.set_numrecs(lb, lrecs);
        self.set_numrecs(rb, rrecs);
        self.shift_entries(tree, rb, level, 2, 1, rrecs);
        if tree.overlapping() {
            let mut t = cur.clone();
            if !self.firstrec(&mut t, level) {
                return Err(self.cursor_lost(tree, rb));
            }
            self.decrement_level(&mut t, level)?;
            self.update_keys(&t, level);
        }
        self.update_keys(cur, level);
        let p = cur.at(level).ptr.saturating_sub(1);
        cur.set_ptr(level, p);
        Ok(true)
    }

    /// `xfs_btree_rshift`: move the last entry of the cursor's block to
    /// its right sibling.
    fn rshift(&mut self, cur: &mut Cursor, level: usize) -> EditResult<bool> {
        let tree = cur.tree;
        let lb = cur.at(level).bno;
        let rb = self.sib(lb, true);
        if rb == NULLAGBLOCK {
            return Ok(false);
        }
        let lrecs = self.numrecs(lb);
        if cur.at(level).ptr >= lrecs {
            return Ok(false);
        }
        self.load(tree, rb, Some(level))?;
        let rrecs = self.numrecs(rb);
        if rrecs == self.maxrecs(tree, level) {
            return Ok(false);
        }
        self.shift_entries(tree, rb, level, 1, 2, rrecs);
        self.copy_entries(tree, level, lb, lrecs, rb, 1, 1);
        self.set_numrecs(lb, lrecs.saturating_sub(1));
        self.set_numrecs(rb, rrecs.saturating_add(1));
        let mut t = cur.clone();
        if !self.lastrec(&mut t, level) {
            return Err(self.cursor_lost(tree, lb));
        }
        self.increment_level(&mut t, level)?;
        if tree.overlapping() {
            self.update_keys(cur, level);
        }
        self.update_keys(&t, level);
        Ok(true)
    }

    fn cursor_lost(&self, tree: Tree, bno: u32) -> EditError {
        corrupt_at(
            self.daddr_of(bno),
            format!(
                "{} AG {} block {bno}: an empty block",
                tree.name(),
                self.agno
            ),
        )
    }

    /// `xfs_btree_split`: move the upper half of the cursor's block to a
    /// new right sibling. Returns the new block, its keys, and a cursor
    /// for the level above that points after the old block.
    #[allow(clippy::type_complexity)]
    fn split(
        &mut self,
        cur: &mut Cursor,
        level: usize,
    ) -> EditResult<Option<(u32, Vec<u8>, Option<Cursor>)>> {
        let tree = cur.tree;
        let lb = cur.at(level).bno;
        let Some(rb) = self.alloc_block(tree, lb)? else {
            return Ok(None);
        };
        self.init_block(tree, rb, level, 0);
        let mut lrecs = self.numrecs(lb);
        let mut rrecs = lrecs / 2;
        if lrecs & 1 == 1 && cur.at(level).ptr <= rrecs.saturating_add(1) {
            rrecs = rrecs.saturating_add(1);
        }
        let src = lrecs.saturating_sub(rrecs).saturating_add(1);
        lrecs = lrecs.saturating_sub(rrecs);
        self.set_numrecs(lb, lrecs);
        self.set_numrecs(rb, rrecs);
        self.copy_entries(tree, level, lb, src, rb, 1, rrecs);
        let key = self.get_keys(tree, rb);
        let rr = self.sib(lb, true);
        self.set_sib(rb, true, rr);
        self.set_sib(rb, false, lb);
        self.set_sib(lb, true, rb);
        if rr != NULLAGBLOCK {
            self.load(tree, rr, Some(level))?;
            self.set_sib(rr, false, rb);
        }
        if tree.overlapping() {
            self.update_keys(cur, level);
        }
        let ptr = cur.at(level).ptr;
        if ptr > lrecs.saturating_add(1) {
            cur.set(level, rb, ptr.saturating_sub(lrecs));
        }
        let ncur = if level.saturating_add(1) < cur.nlevels() {
            let mut n = cur.clone();
            let up = level.saturating_add(1);
            let p = n.at(up).ptr.saturating_add(1);
            n.set_ptr(up, p);
            Some(n)
        } else {
            None
        };
        Ok(Some((rb, key, ncur)))
    }

    /// `xfs_btree_new_root`: the root split; a new root above the two
    /// halves.
    fn new_root(&mut self, cur: &mut Cursor) -> EditResult<bool> {
        let tree = cur.tree;
        let (root, _) = self.root(tree)?;
        let Some(nb) = self.alloc_block(tree, root)? else {
            return Ok(false);
        };
        self.set_root(tree, nb, 1)?;
        let top = cur.nlevels().saturating_sub(1);
        let block = cur.at(top).bno;
        let (left, right, nptr) = {
            let rs = self.sib(block, true);
            if rs != NULLAGBLOCK {
                self.load(tree, rs, Some(top))?;
                (block, rs, 1)
            } else {
                let ls = self.sib(block, false);
                self.load(tree, ls, Some(top))?;
                (ls, block, 2)
            }
        };
        self.init_block(tree, nb, cur.nlevels(), 2);
        let lk = self.get_keys(tree, left);
        let rk = self.get_keys(tree, right);
        self.put_key(tree, nb, 1, &lk);
        self.put_key(tree, nb, 2, &rk);
        self.put_ptr(tree, nb, 1, left);
        self.put_ptr(tree, nb, 2, right);
        cur.lv.push(Lvl { bno: nb, ptr: nptr });
        Ok(true)
    }

    /// `xfs_btree_insrec` for one level. `ptrp`/`key` carry the new block
    /// from the level below (in) and to the level above (out).
    fn insrec(
        &mut self,
        cur: &mut Cursor,
        level: usize,
        ptrp: &mut u32,
        rec: &[u8],
        key: &mut Vec<u8>,
        curp: &mut Option<Cursor>,
    ) -> EditResult<bool> {
        let tree = cur.tree;
        if level >= cur.nlevels() {
            let ok = self.new_root(cur)?;
            *ptrp = NULLAGBLOCK;
            return Ok(ok);
        }
        let mut ptr = cur.at(level).ptr;
        if ptr == 0 {
            return Ok(false);
        }
        let mut optr = ptr;
        let old_bn = cur.at(level).bno;
        let mut numrecs = self.numrecs(old_bn);
        let mut nptr = NULLAGBLOCK;
        let mut ncur: Option<Cursor> = None;
        let mut lkey: Vec<u8> = Vec::new();
        if numrecs == self.maxrecs(tree, level) {
            // xfs_btree_make_block_unfull
            if self.rshift(cur, level)? {
            } else if self.lshift(cur, level)? {
                optr = cur.at(level).ptr;
                ptr = optr;
            } else {
                match self.split(cur, level)? {
                    None => return Ok(false),
                    Some((nb, k, nc)) => {
                        nptr = nb;
                        lkey = k;
                        ncur = nc;
                        ptr = cur.at(level).ptr;
                    }
                }
            }
        }
        let bno = cur.at(level).bno;
        numrecs = self.numrecs(bno);
        let tail = numrecs.saturating_add(1).saturating_sub(ptr);
        self.shift_entries(tree, bno, level, ptr, ptr.saturating_add(1), tail);
        if level > 0 {
            self.put_key(tree, bno, ptr, key);
            self.put_ptr(tree, bno, ptr, *ptrp);
        } else {
            self.put_rec(tree, bno, ptr, rec);
        }
        numrecs = numrecs.saturating_add(1);
        self.set_numrecs(bno, numrecs);
        if bno != old_bn {
            lkey = self.get_keys(tree, bno);
        } else if Self::needs_key_update(tree, optr) {
            self.update_keys(cur, level);
        }
        *ptrp = nptr;
        if nptr != NULLAGBLOCK {
            *key = lkey;
            *curp = ncur;
        }
        Ok(true)
    }

    /// `xfs_btree_insert`: insert `rec` where the cursor stands (as a
    /// lookup left it). The cursor is spent.
    pub fn insert_at(&mut self, cur: Cursor, rec: &[u8]) -> EditResult<()> {
        let tree = cur.tree;
        if rec.len() != tree.rec_len() {
            return refuse(format!("{}: a record of {} bytes", tree.name(), rec.len()));
        }
        let mut key = rec_low_key(tree, rec);
        let mut nptr = NULLAGBLOCK;
        let mut pcur = cur;
        let mut level = 0usize;
        loop {
            let mut ncur = None;
            if !self.insrec(&mut pcur, level, &mut nptr, rec, &mut key, &mut ncur)? {
                return refuse(format!(
                    "{} AG {}: no room for the record at level {level} (no block to split into)",
                    tree.name(),
                    self.agno
                ));
            }
            level = level.saturating_add(1);
            if let Some(n) = ncur {
                pcur = n;
            }
            if nptr == NULLAGBLOCK || level > 10 {
                break;
            }
        }
        self.after_edit(tree)
    }

    /// `xfs_btree_kill_root`: the root has one child left; the child is
    /// the root now.
    fn kill_root(&mut self, cur: &mut Cursor, level: usize, newroot: u32) -> EditResult<()> {
        let tree = cur.tree;
        let old = cur.at(level).bno;
        self.set_root(tree, newroot, -1)?;
        self.free_block(tree, old)?;
        cur.lv.truncate(level);
        Ok(())
    }

    fn dec_cursor(&mut self, cur: &mut Cursor, level: usize) -> EditResult<()> {
        if level > 0 {
            self.decrement_level(cur, level)?;
        }
        Ok(())
    }

    /// `xfs_btree_delrec` for one level: 0 nothing deleted, 1 done, 2 the
    /// block was joined and the level above has an entry to delete.
    fn delrec(&mut self, cur: &mut Cursor, level: usize) -> EditResult<u8> {
        let tree = cur.tree;
        let ptr = cur.at(level).ptr;
        if ptr == 0 {
            return Ok(0);
        }
        let bno = cur.at(level).bno;
        let mut numrecs = self.numrecs(bno);
        if ptr > numrecs {
            return Ok(0);
        }
        if ptr < numrecs {
            self.shift_entries(
                tree,
                bno,
                level,
                ptr.saturating_add(1),
                ptr,
                numrecs.saturating_sub(ptr),
            );
        }
        numrecs = numrecs.saturating_sub(1);
        self.set_numrecs(bno, numrecs);
        if level.saturating_add(1) == cur.nlevels() {
            if numrecs == 1 && level > 0 {
                let child = self.ptr_at(tree, bno, 1);
                self.load(tree, child, Some(level.saturating_sub(1)))?;
                self.kill_root(cur, level, child)?;
            } else if level > 0 {
                self.dec_cursor(cur, level)?;
            }
            return Ok(1);
        }
        if Self::needs_key_update(tree, ptr) {
            self.update_keys(cur, level);
        }
        if numrecs >= self.minrecs(tree, level) {
            self.dec_cursor(cur, level)?;
            return Ok(1);
        }
        let rptr = self.sib(bno, true);
        let lptr = self.sib(bno, false);
        if rptr == NULLAGBLOCK && lptr == NULLAGBLOCK {
            return Err(corrupt_at(
                self.daddr_of(bno),
                format!(
                    "{} AG {} block {bno}: a block below the root with no siblings",
                    tree.name(),
                    self.agno
                ),
            ));
        }
        let mut t = cur.clone();
        let mut rrecs = 0usize;
        let mut lrecs = 0usize;
        if rptr != NULLAGBLOCK {
            if !self.lastrec(&mut t, level) {
                return Err(self.cursor_lost(tree, bno));
            }
            if !self.increment_level(&mut t, level)? || !self.lastrec(&mut t, level) {
                return Err(self.cursor_lost(tree, rptr));
            }
            let right = t.at(level).bno;
            if self.numrecs(right).saturating_sub(1) >= self.minrecs(tree, level)
                && self.lshift(&mut t, level)?
            {
                self.dec_cursor(cur, level)?;
                return Ok(1);
            }
            rrecs = self.numrecs(right);
            if lptr != NULLAGBLOCK {
                if !self.firstrec(&mut t, level) {
                    return Err(self.cursor_lost(tree, right));
                }
                if !self.decrement_level(&mut t, level)? {
                    return Err(self.cursor_lost(tree, bno));
                }
            }
        }
        if lptr != NULLAGBLOCK {
            if !self.firstrec(&mut t, level) {
                return Err(self.cursor_lost(tree, bno));
            }
            self.decrement_level(&mut t, level)?;
            if !self.firstrec(&mut t, level) {
                return Err(self.cursor_lost(tree, lptr));
            }
            let left = t.at(level).bno;
            if self.numrecs(left).saturating_sub(1) >= self.minrecs(tree, level)
                && self.rshift(&mut t, level)?
            {
                if level == 0 {
                    cur.set_ptr(0, cur.at(0).ptr.saturating_add(1));
                }
                return Ok(1);
            }
            lrecs = self.numrecs(left);
        }
        let max = self.maxrecs(tree, level);
        let (left, right) = if lptr != NULLAGBLOCK && lrecs.saturating_add(numrecs) <= max {
            self.load(tree, lptr, Some(level))?;
            (lptr, bno)
        } else if rptr != NULLAGBLOCK && rrecs.saturating_add(numrecs) <= max {
            self.load(tree, rptr, Some(level))?;
            (bno, rptr)
        } else {
            self.dec_cursor(cur, level)?;
            return Ok(1);
        };
        let rrecs = self.numrecs(right);
        let lrecs = self.numrecs(left);
        self.copy_entries(tree, level, right, 1, left, lrecs.saturating_add(1), rrecs);
        self.set_numrecs(left, lrecs.saturating_add(rrecs));
        let rr = self.sib(right, true);
        self.set_sib(left, true, rr);
        if rr != NULLAGBLOCK {
            self.load(tree, rr, Some(level))?;
            self.set_sib(rr, false, left);
        }
        self.free_block(tree, right)?;
        if bno != left {
            cur.set(level, left, cur.at(level).ptr.saturating_add(lrecs));
        } else if level.saturating_add(1) < cur.nlevels() {
            self.increment_level(cur, level.saturating_add(1))?;
        }
        if level > 0 {
            cur.set_ptr(level, cur.at(level).ptr.saturating_sub(1));
        }
        Ok(2)
    }

    /// `xfs_btree_delete`: delete the record the cursor points at.
    /// Returns whether there was one. The cursor stays usable.
    pub fn delete_at(&mut self, cur: &mut Cursor) -> EditResult<bool> {
        let tree = cur.tree;
        let mut joined = false;
        let mut level = 0usize;
        let mut i = 2u8;
        while i == 2 {
            if level >= cur.nlevels() {
                break;
            }
            i = self.delrec(cur, level)?;
            if i == 2 {
                joined = true;
            }
            level = level.saturating_add(1);
        }
        if joined && tree.overlapping() {
            self.updkeys(cur, 0, true);
        }
        if i == 0 {
            for lev in 1..cur.nlevels() {
                if cur.at(lev).ptr == 0 {
                    self.decrement_level(cur, lev)?;
                    break;
                }
            }
        }
        self.after_edit(tree)?;
        Ok(i != 0)
    }

    /// After each public edit: `agf_longest` follows the cntbt
    /// (`xfs_alloc_fixup_longest`), and the frees the kernel defers run.
    fn after_edit(&mut self, tree: Tree) -> EditResult<()> {
        if tree == Tree::Cnt {
            let longest = self
                .last_record(Tree::Cnt)?
                .and_then(|r| be32(&r, 4))
                .unwrap_or(0);
            self.set_agf_u32(56, longest);
        }
        Ok(())
    }

    // ---------------------------------------------------------------
    // Block allocation

    /// A new block for `tree` (`alloc_block`), `None` when there is none.
    fn alloc_block(&mut self, tree: Tree, hint: u32) -> EditResult<Option<u32>> {
        match tree {
            Tree::Bno | Tree::Cnt | Tree::Rmap => {
                let b = self.get_freelist(true)?;
                if b.is_some() && tree == Tree::Rmap {
                    self.add_agf(80, 1);
                }
                Ok(b)
            }
            Tree::Refc => {
                let h = self.refc_block();
                let b = self.alloc_near_one(h, XFS_RMAP_OWN_REFC)?;
                if b.is_some() {
                    self.add_agf(84, 1);
                }
                Ok(b)
            }
            Tree::Ino | Tree::Fino => {
                let b = self.alloc_near_one(hint, XFS_RMAP_OWN_INOBT)?;
                if b.is_some() && self.feat.inobtcount {
                    self.add_agi(if tree == Tree::Ino { 336 } else { 340 }, 1)?;
                }
                Ok(b)
            }
        }
    }

    /// `free_block`: the block leaves the tree.
    fn free_block(&mut self, tree: Tree, bno: u32) -> EditResult<()> {
        // xfs_trans_binval: the block's changes are not written.
        self.dirty.remove(&bno);
        self.stale.insert(bno);
        match tree {
            Tree::Bno | Tree::Cnt => {
                self.put_freelist_ex(bno, true)?;
                self.busy_insert(bno, 1);
                Ok(())
            }
            Tree::Rmap => {
                self.add_agf(80, -1);
                self.put_freelist_ex(bno, true)?;
                self.busy_insert(bno, 1);
                Ok(())
            }
            Tree::Refc => {
                self.add_agf(84, -1);
                self.deferred.push((bno, XFS_RMAP_OWN_REFC));
                Ok(())
            }
            Tree::Ino | Tree::Fino => {
                if self.feat.inobtcount {
                    self.add_agi(if tree == Tree::Ino { 336 } else { 340 }, -1)?;
                }
                self.deferred.push((bno, XFS_RMAP_OWN_INOBT));
                Ok(())
            }
        }
    }

    /// Blocks whose free the kernel defers (refcountbt and inode btree
    /// blocks), taken out of the queue.
    pub(crate) fn take_deferred(&mut self) -> Vec<(u32, u64)> {
        std::mem::take(&mut self.deferred)
    }

    pub(crate) fn push_deferred(&mut self, bno: u32, owner: u64) {
        self.deferred.push((bno, owner));
    }

    /// The right sibling of a block already read.
    pub(crate) fn rightsib_of(&self, bno: u32) -> u32 {
        self.sib(bno, true)
    }

    /// `xfs_refc_block`: where mkfs put the refcountbt root.
    pub(crate) fn refc_block(&self) -> u32 {
        let g = &self.fs.geo;
        let agfl_block = u32::from(g.sectsize)
            .saturating_mul(3)
            .checked_div(g.blocksize)
            .unwrap_or(0);
        let ibt = agfl_block.saturating_add(4);
        let fibt = ibt.saturating_add(1);
        if self.feat.rmapbt {
            if self.feat.finobt {
                fibt.saturating_add(2)
            } else {
                ibt.saturating_add(2)
            }
        } else if self.feat.finobt {
            fibt.saturating_add(1)
        } else {
            ibt.saturating_add(1)
        }
    }

    // ---------------------------------------------------------------
    // Convenience edits by key

    /// Every record of the tree, in order (bounded by the AG size).
    pub fn records(&mut self, tree: Tree) -> EditResult<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        let (mut cur, ok) = self.lookup(tree, Lookup::Ge, (0, 0, 0))?;
        if !ok {
            return Ok(out);
        }
        let bound = usize::try_from(self.agblocks)
            .unwrap_or(usize::MAX)
            .saturating_mul(self.maxrecs(tree, 0).max(1));
        while let Some(r) = self.get_rec(&cur) {
            out.push(r);
            if out.len() > bound {
                return Err(corrupt_at(
                    0,
                    format!(
                        "{} AG {}: more records than the AG can hold (a loop)",
                        tree.name(),
                        self.agno
                    ),
                ));
            }
            if !self.increment(&mut cur)? {
                break;
            }
        }
        Ok(out)
    }

    /// The record with exactly this key.
    pub fn find(&mut self, tree: Tree, key: Key) -> EditResult<Option<Vec<u8>>> {
        let (cur, ok) = self.lookup(tree, Lookup::Eq, key)?;
        Ok(if ok { self.get_rec(&cur) } else { None })
    }

    /// The last record with key <= `key` and the one after it.
    pub fn neighbors(&mut self, tree: Tree, key: Key) -> EditResult<Neighbors> {
        let (mut cur, ok) = self.lookup(tree, Lookup::Le, key)?;
        let left = if ok { self.get_rec(&cur) } else { None };
        let right = if self.increment(&mut cur)? {
            self.get_rec(&cur)
        } else {
            None
        };
        Ok((left, right))
    }

    /// Delete the record with exactly this key.
    pub fn delete(&mut self, tree: Tree, key: Key) -> EditResult<()> {
        let (mut cur, ok) = self.lookup(tree, Lookup::Eq, key)?;
        if !ok {
            return refuse(format!(
                "{} AG {}: no record with key {key:?} to delete",
                tree.name(),
                self.agno
            ));
        }
        if !self.delete_at(&mut cur)? {
            return refuse(format!("{}: nothing deleted", tree.name()));
        }
        self.finish_deferred()
    }

    /// Insert a record (its key must not be present), where a lookup of
    /// its key puts it (`xfs_btree_lookup(EQ)` + `xfs_btree_insert`).
    pub fn insert(&mut self, tree: Tree, rec: &[u8]) -> EditResult<()> {
        let key = rec_key(tree, rec);
        let (cur, ok) = self.lookup(tree, Lookup::Eq, key)?;
        if ok {
            return refuse(format!(
                "{} AG {}: key {key:?} already present",
                tree.name(),
                self.agno
            ));
        }
        self.insert_at(cur, rec)?;
        self.finish_deferred()
    }

    /// Replace the record with key `key` by `rec` (same position).
    pub fn update(&mut self, tree: Tree, key: Key, rec: &[u8]) -> EditResult<()> {
        let (cur, ok) = self.lookup(tree, Lookup::Eq, key)?;
        if !ok {
            return refuse(format!(
                "{} AG {}: no record with key {key:?} to update",
                tree.name(),
                self.agno
            ));
        }
        self.update_at(&cur, rec)
    }

    /// The last record of the tree (for `agf_longest` of the cntbt).
    pub fn last_record(&mut self, tree: Tree) -> EditResult<Option<Vec<u8>>> {
        let (cur, ok) = self.lookup(tree, Lookup::Le, (u64::MAX, u64::MAX, u64::MAX))?;
        Ok(if ok { self.get_rec(&cur) } else { None })
    }

    /// The blocks of a tree per level, leaves first (for checks and tests).
    pub fn shape(&mut self, tree: Tree) -> EditResult<Vec<Vec<u32>>> {
        let (root, levels) = self.root(tree)?;
        let nlevels = usize::try_from(levels).unwrap_or(0).min(9);
        let mut out = vec![Vec::new(); nlevels];
        let mut first = root;
        for level in (0..nlevels).rev() {
            let mut b = first;
            let mut seen = BTreeSet::new();
            while b != NULLAGBLOCK {
                if !seen.insert(b) || seen.len() > usize::try_from(self.agblocks).unwrap_or(0) {
                    return Err(corrupt_at(
                        self.daddr_of(b),
                        format!("{} AG {} block {b}: a sibling loop", tree.name(), self.agno),
                    ));
                }
                self.load(tree, b, Some(level))?;
                if let Some(v) = out.get_mut(level) {
                    v.push(b);
                }
                b = self.sib(b, true);
            }
            if level > 0 {
                first = self.ptr_at(tree, first, 1);
            }
        }
        Ok(out)
    }
}

/// Helpers for intent recovery (kept apart from the editing code above).
impl<R: ReadAt> AgStore<'_, R> {
    /// `xfs_alloc_get_freelist` (not for a btree block): take the block at
    /// the head of the free list.
    pub fn take_freelist_head(&mut self) -> EditResult<u32> {
        match self.get_freelist(false)? {
            Some(b) => Ok(b),
            None => refuse(format!("AG {}: the free list is empty", self.agno)),
        }
    }

    /// Records of the rmapbt whose blocks overlap `[lo, hi]`, in key
    /// order (the overlapped query of `xfs_rmap_query_range`, by the node
    /// low and high keys).
    pub fn rmap_overlapping(&mut self, lo: u32, hi: u32) -> EditResult<Vec<Vec<u8>>> {
        let tree = Tree::Rmap;
        let (root, levels) = self.root(tree)?;
        if levels == 0 || levels > 9 {
            return refuse(format!("{} tree of {levels} levels", tree.name()));
        }
        let top = usize::try_from(levels.saturating_sub(1)).unwrap_or(0);
        let mut out = Vec::new();
        let mut stack = vec![(root, top)];
        let mut visited = 0u32;
        while let Some((bno, level)) = stack.pop() {
            visited = visited.saturating_add(1);
            if visited > self.agblocks {
                return refuse(format!("{}: the walk does not end", tree.name()));
            }
            self.load(tree, bno, Some(level))?;
            let b = self.blk(bno).to_vec();
            let n = usize::from(be16(&b, 6).unwrap_or(0)).min(self.maxrecs(tree, level));
            if level == 0 {
                for i in 0..n {
                    let o = self.hdr.saturating_add(i.saturating_mul(tree.rec_len()));
                    let r = b.get(o..o.saturating_add(tree.rec_len())).unwrap_or(&[]);
                    let start = be32(r, 0).unwrap_or(0);
                    let end = start.saturating_add(be32(r, 4).unwrap_or(0).saturating_sub(1));
                    if start <= hi && end >= lo {
                        out.push(r.to_vec());
                    }
                }
                continue;
            }
            let kl = tree.key_len();
            let maxr = self.maxrecs(tree, level);
            let mut kids = Vec::new();
            for i in 0..n {
                let o = self.hdr.saturating_add(i.saturating_mul(kl));
                let k = b.get(o..o.saturating_add(kl)).unwrap_or(&[]);
                let klo = be32(k, 0).unwrap_or(0);
                let khi = be32(k, 20).unwrap_or(u32::MAX);
                if klo <= hi && khi >= lo {
                    let p = self
                        .hdr
                        .saturating_add(maxr.saturating_mul(kl))
                        .saturating_add(i.saturating_mul(4));
                    kids.push((be32(&b, p).unwrap_or(u32::MAX), level.saturating_sub(1)));
                }
            }
            // Depth first, leftmost child first.
            stack.extend(kids.into_iter().rev());
        }
        Ok(out)
    }
}

/// Build an allocation record.
pub fn alloc_rec(start: u32, len: u32) -> Vec<u8> {
    let mut r = Vec::with_capacity(8);
    r.extend_from_slice(&start.to_be_bytes());
    r.extend_from_slice(&len.to_be_bytes());
    r
}

/// Build an rmap record (`offset` with its flag bits).
pub fn rmap_rec(start: u32, len: u32, owner: u64, offset: u64) -> Vec<u8> {
    let mut r = Vec::with_capacity(24);
    r.extend_from_slice(&start.to_be_bytes());
    r.extend_from_slice(&len.to_be_bytes());
    r.extend_from_slice(&owner.to_be_bytes());
    r.extend_from_slice(&offset.to_be_bytes());
    r
}

pub fn key_bno(start: u32) -> Key {
    (u64::from(start), 0, 0)
}

pub fn key_cnt(start: u32, len: u32) -> Key {
    (u64::from(len), u64::from(start), 0)
}

/// An rmap key: `offset` with its attr-fork and bmbt-block bits (the
/// unwritten bit does not count).
pub fn key_rmap(start: u32, owner: u64, offset: u64) -> Key {
    (u64::from(start), owner, rmap_off_key(offset))
}

pub fn key_refc(start: u32) -> Key {
    (u64::from(start), 0, 0)
}

pub fn key_ino(startino: u32) -> Key {
    (u64::from(startino), 0, 0)
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
    match be32(data, 0) {
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
    use super::*;
    use crate::xfs::ag::btree::{walk, AgTree, TreeRoot, WalkReport};
    use crate::xfs::format::btree::{XFS_RMAP_OWN_COW, XFS_RMAP_OWN_UNKNOWN};
    use crate::xfs::image::Image;
    use crate::xfs::read::FileReader;
    use crate::xfs::types::{AgBlock, AgNumber};
    use std::ops::ControlFlow;

    const FIXTURE: &str = "v5-1k-rmap";
    const AG: u32 = 1;

    fn ag_tree(t: Tree) -> AgTree {
        match t {
            Tree::Bno => AgTree::Bno,
            Tree::Cnt => AgTree::Cnt,
            Tree::Rmap => AgTree::Rmap,
            Tree::Refc => AgTree::Refcount,
            Tree::Ino => AgTree::Ino,
            Tree::Fino => AgTree::Fino,
        }
    }

    /// The project's validating walker over the edited state: keys in
    /// order, parent keys (low and high), sibling chains, levels, CRCs.
    fn check<R: ReadAt>(s: &mut AgStore<'_, R>, tree: Tree) -> WalkReport {
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
            tree: ag_tree(tree),
            agno: AgNumber(s.agno),
            root: AgBlock(root),
            levels,
            ag_length: s.agf_u32(12),
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
        let last = s.last_record(Tree::Cnt).ok().unwrap().unwrap();
        let (b, l) = (be32(&last, 0).unwrap(), be32(&last, 4).unwrap());
        assert!(l > n);
        s.delete(Tree::Cnt, key_cnt(b, l)).ok().unwrap();
        s.insert(Tree::Cnt, &alloc_rec(b + n, l - n)).ok().unwrap();
        s.update(Tree::Bno, key_bno(b), &alloc_rec(b + n, l - n))
            .ok()
            .unwrap();
        for i in 0..n {
            s.put_freelist(b + i).ok().unwrap();
        }
    }

    #[test]
    fn inserts_split_every_level_and_grow_the_root_deletes_join_and_shrink_it() {
        let fs = crate::xfs::testutil::fixture_fs(FIXTURE);
        let ov = Overlay::default();
        let mut s = AgStore::new(&fs, &ov, AG).unwrap();
        stock_freelist(&mut s, 100);
        // The real records out first (the synthetic ones would overlap
        // them); they come back at the end.
        let orig = s.records(Tree::Bno).ok().unwrap();
        for r in &orig {
            s.delete(Tree::Bno, rec_key(Tree::Bno, r)).ok().unwrap();
        }
        let (_, orig_levels) = s.root(Tree::Bno).ok().unwrap();
        assert_eq!(orig_levels, 1);
        let fl0 = s.agf_u32(48);
        let bt0 = s.agf_u32(60);
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        // Ascending first (appends: splits at the right edge, up to a
        // third level), then a shuffled batch in the gaps (middle inserts).
        let asc: Vec<u32> = (0..10500).map(|i| 100 + i).collect();
        for &k in &asc {
            s.insert(Tree::Bno, &alloc_rec(k, 1)).ok().unwrap();
        }
        assert_eq!(s.root(Tree::Bno).ok().unwrap().1, 3, "a third level");
        check(&mut s, Tree::Bno);
        // Every third record out (shuffled: borrows and joins), then back
        // in (shuffled: inserts in the middle, shifts and splits).
        let mut mid: Vec<u32> = asc.iter().copied().step_by(3).collect();
        for i in (1..mid.len()).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            mid.swap(i, j);
        }
        for &k in &mid {
            s.delete(Tree::Bno, key_bno(k)).ok().unwrap();
        }
        check(&mut s, Tree::Bno);
        for &k in &mid {
            s.insert(Tree::Bno, &alloc_rec(k, 1)).ok().unwrap();
        }
        let r = check(&mut s, Tree::Bno);
        assert_eq!(r.records as usize, asc.len());
        let shape = s.shape(Tree::Bno).ok().unwrap();
        assert_eq!(shape.len(), 3);
        assert_eq!(shape[2].len(), 1);
        // Blocks came from the free list, counted in agf_btreeblks.
        let blocks: usize = shape.iter().map(Vec::len).sum();
        assert_eq!(s.agf_u32(60) - bt0, blocks as u32 - 1);
        assert_eq!(fl0 - s.agf_u32(48), blocks as u32 - 1);
        // Every record is found again, in order.
        let all = s.records(Tree::Bno).ok().unwrap();
        assert!(all
            .windows(2)
            .all(|w| rec_key(Tree::Bno, &w[0]) < rec_key(Tree::Bno, &w[1])));
        // Delete in a shuffled order: borrows and joins at every level,
        // the root collapses back to one leaf.
        let mut del: Vec<u32> = asc.clone();
        for i in (1..del.len()).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            del.swap(i, j);
        }
        for (n, &k) in del.iter().enumerate() {
            s.delete(Tree::Bno, key_bno(k)).ok().unwrap();
            if n % 1500 == 0 {
                check(&mut s, Tree::Bno);
            }
        }
        check(&mut s, Tree::Bno);
        assert!(s.records(Tree::Bno).ok().unwrap().is_empty());
        assert_eq!(s.root(Tree::Bno).ok().unwrap().1, 1, "back to one level");
        // Every block went back to the free list.
        assert_eq!(s.agf_u32(60), bt0);
        assert_eq!(s.agf_u32(48), fl0);
        for r in &orig {
            s.insert(Tree::Bno, r).ok().unwrap();
        }
        assert_eq!(s.records(Tree::Bno).ok().unwrap(), orig);
        check(&mut s, Tree::Bno);
    }

    #[test]
    fn lshift_rshift_and_borrow_keep_a_two_level_tree() {
        let fs = crate::xfs::testutil::fixture_fs(FIXTURE);
        let ov = Overlay::default();
        let mut s = AgStore::new(&fs, &ov, AG).unwrap();
        stock_freelist(&mut s, 20);
        for i in 0..300u32 {
            s.insert(Tree::Cnt, &alloc_rec(1000 + 4 * i, 7))
                .ok()
                .unwrap();
        }
        let before = s.shape(Tree::Cnt).ok().unwrap();
        assert_eq!(before.len(), 2);
        // Fill the gaps of the leftmost leaf: it is full, its right
        // sibling has room (rshift), and later the left has room (lshift).
        let fl = s.agf_u32(48);
        let first_leaf = before[0][0];
        let n_first = s.numrecs(first_leaf);
        let room = s.maxrecs(Tree::Cnt, 0) - n_first;
        // Fill the first leaf up.
        let mut k = 0u32;
        while s.numrecs(first_leaf) < s.maxrecs(Tree::Cnt, 0) {
            s.insert(Tree::Cnt, &alloc_rec(500 + k, 6)).ok().unwrap();
            k += 1;
        }
        assert_eq!(k as usize, room);
        let second = before[0][1];
        let n2 = s.numrecs(second);
        // One more in the first leaf: it goes right (rshift), no new block.
        s.insert(Tree::Cnt, &alloc_rec(1001, 7)).ok().unwrap();
        assert_eq!(s.agf_u32(48), fl, "no split");
        assert_eq!(s.numrecs(second), n2 + 1, "one entry moved right");
        check(&mut s, Tree::Cnt);
        // Delete from the second leaf until it borrows from a sibling.
        let recs = s.records(Tree::Cnt).ok().unwrap();
        let min = s.minrecs(Tree::Cnt, 0);
        let second_recs: Vec<Vec<u8>> = recs
            .iter()
            .filter(|r| {
                let (c, ok) = s
                    .lookup(Tree::Cnt, Lookup::Eq, rec_key(Tree::Cnt, r))
                    .ok()
                    .unwrap();
                ok && c.leaf().0 == second
            })
            .cloned()
            .collect();
        for r in second_recs.iter().take(s.numrecs(second) - min + 1) {
            s.delete(Tree::Cnt, rec_key(Tree::Cnt, r)).ok().unwrap();
        }
        assert_eq!(s.numrecs(second), min, "topped up by a borrow");
        check(&mut s, Tree::Cnt);
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
            s.insert(Tree::Rmap, &rec).ok().unwrap();
            added.push(rec);
        }
        assert!(s.root(Tree::Rmap).ok().unwrap().1 >= 3);
        check(&mut s, Tree::Rmap);
        let blocks: usize = s.shape(Tree::Rmap).ok().unwrap().iter().map(Vec::len).sum();
        assert_eq!(s.agf_u32(80) as usize, blocks, "agf_rmap_blocks");
        for r in added.iter().step_by(2) {
            s.delete(Tree::Rmap, rec_key(Tree::Rmap, r)).ok().unwrap();
        }
        check(&mut s, Tree::Rmap);
        let blocks: usize = s.shape(Tree::Rmap).ok().unwrap().iter().map(Vec::len).sum();
        assert_eq!(s.agf_u32(80) as usize, blocks, "agf_rmap_blocks");
    }

    #[test]
    fn inobt_blocks_come_from_free_space_near_the_hint_with_their_reverse_mapping() {
        let fs = crate::xfs::testutil::fixture_fs(FIXTURE);
        let ov = Overlay::default();
        let mut s = AgStore::new(&fs, &ov, AG).unwrap();
        let free0 = s.agf_u32(52) + s.agf_u32(48);
        let ib0 = s.agi_u32(336).ok().unwrap();
        for i in 0..250u32 {
            // Whole free chunks (sparse format: holemask 0, count 64,
            // freecount 64, every inode free), past the AG's real ones.
            let mut r = vec![0u8; 16];
            r[0..4].copy_from_slice(&(16384 + 64 * i).to_be_bytes());
            r[6] = 64;
            r[7] = 64;
            r[8..16].copy_from_slice(&u64::MAX.to_be_bytes());
            s.insert(Tree::Ino, &r).ok().unwrap();
        }
        for t in [Tree::Ino, Tree::Bno, Tree::Cnt, Tree::Rmap] {
            check(&mut s, t);
        }
        let shape = s.shape(Tree::Ino).ok().unwrap();
        let blocks: u32 = shape.iter().map(|l| l.len() as u32).sum();
        assert!(shape.len() >= 2);
        if s.feat.inobtcount {
            assert_eq!(s.agi_u32(336).ok().unwrap(), blocks, "agi_iblocks");
        }
        // Every new block is mapped to XFS_RMAP_OWN_INOBT and left free space.
        let rm = s.records(Tree::Rmap).ok().unwrap();
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
        let free1 = s.agf_u32(52) + s.agf_u32(48);
        assert!(free1 + grown <= free0);
        // Deleting everything again frees the blocks (deferred frees).
        for i in 0..250u32 {
            s.delete(Tree::Ino, key_ino(16384 + 64 * i)).ok().unwrap();
        }
        for t in [Tree::Ino, Tree::Bno, Tree::Cnt, Tree::Rmap] {
            check(&mut s, t);
        }
        assert_eq!(s.root(Tree::Ino).ok().unwrap().1, 1);
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
            s.records(Tree::Rmap)
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
        check(&mut s, Tree::Rmap);
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
        let root = s.agf_u32(24);
        let e = err_text(s.insert(Tree::Rmap, &rmap_rec(9000, 1, 5000, 0)));
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
        let e = err_text(s.records(Tree::Bno));
        assert!(e.contains("bb_level 3 but expected level 0"), "{e}");
        // A leaf whose right sibling is itself.
        let fs = damaged(|b, fs| {
            let root = agf_field(fs, 20);
            let o = block_off(fs, root);
            b[o + 12..o + 16].copy_from_slice(&root.to_be_bytes());
            crate::xfs::ag::testing::fix_crc(&mut b[o..o + 1024], 52);
        });
        let mut s = AgStore::new(&fs, &ov, AG).unwrap();
        let e = err_text(s.shape(Tree::Cnt));
        assert!(e.contains("rightsib"), "{e}");
        // A bad CRC.
        let fs = damaged(|b, fs| {
            let o = block_off(fs, agf_field(fs, 16));
            b[o + 100] ^= 0xff;
        });
        let mut s = AgStore::new(&fs, &ov, AG).unwrap();
        let e = err_text(s.find(Tree::Bno, key_bno(1)));
        assert!(e.contains("bad CRC"), "{e}");
        // A root pointer outside the AG and a height of 40.
        let fs = crate::xfs::testutil::fixture_fs(FIXTURE);
        let mut s = AgStore::new(&fs, &ov, AG).unwrap();
        s.set_agf_u32(16, 0xFFFF_FF00);
        assert!(err_text(s.find(Tree::Bno, key_bno(1))).contains("outside the AG"));
        s.set_agf_u32(28, 40);
        assert!(err_text(s.find(Tree::Bno, key_bno(1))).contains("height 40"));
    }

    #[test]
    fn rmap_high_keys_cover_the_extent() {
        let mut r = vec![0u8; 24];
        r[0..4].copy_from_slice(&100u32.to_be_bytes());
        r[4..8].copy_from_slice(&10u32.to_be_bytes());
        r[8..16].copy_from_slice(&131u64.to_be_bytes());
        r[16..24].copy_from_slice(&(5u64 | XFS_RMAP_OFF_UNWRITTEN).to_be_bytes());
        let h = rmap_high_key(&r);
        assert_eq!(key_order(Tree::Rmap, &h), (109, 131, 14));
        // The unwritten bit is not part of a key.
        assert_eq!(be64(&h, 12), Some(14));
        // Non-inode owners keep their offset.
        r[8..16].copy_from_slice(&XFS_RMAP_OWN_COW.to_be_bytes());
        let h = rmap_high_key(&r);
        assert_eq!(key_order(Tree::Rmap, &h), (109, XFS_RMAP_OWN_COW, 5));
    }
}
