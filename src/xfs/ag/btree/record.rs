//! The records and keys of each per-AG btree as decoded, the order the
//! trees sort them in, and the special rmap owners (kernel: the record
//! parts of `xfs_alloc_btree.c`, `xfs_ialloc_btree.c`, `xfs_rmap_btree.c`,
//! `xfs_refcount_btree.c`).

use serde::Serialize;
use zerocopy::FromBytes;

use super::AgTree;
use crate::xfs::format::btree::*;

/// A free-space extent (bnobt and cntbt record, and their key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AllocRec {
    pub startblock: u32,
    pub blockcount: u32,
}

/// An inode chunk: 64 inodes starting at `startino` (AG inode number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct InobtRec {
    pub startino: u32,
    /// One bit per 4 inodes, set for a hole (never written on disk). Always
    /// 0 in the full-chunk record form.
    pub holemask: u16,
    /// Inodes physically present (64 in the full form).
    pub count: u32,
    pub freecount: u32,
    /// One bit per inode, set = free (hole inodes are set too).
    pub free: u64,
    /// Whether the record is in the sparse form (SPINODES).
    pub sparse: bool,
}

/// What an inode slot of a chunk is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InodeSlot {
    /// Part of a hole of a sparse chunk: not on disk.
    Hole,
    /// On disk and free.
    Free,
    /// On disk and in use.
    Used,
}

impl InobtRec {
    /// The 64-bit mask of inodes in holes (each holemask bit covers 4).
    pub fn hole_inodes(&self) -> u64 {
        let mut mask = 0u64;
        for bit in 0..16u32 {
            if self.holemask & (1u16 << bit) != 0 {
                mask |= 0xFu64 << (bit.saturating_mul(XFS_INODES_PER_HOLEMASK_BIT));
            }
        }
        mask
    }

    /// Inodes present on disk according to the holemask.
    pub fn present(&self) -> u32 {
        XFS_INODES_PER_CHUNK.saturating_sub(self.hole_inodes().count_ones())
    }

    /// Free inodes according to `ir_free` (holes excluded).
    pub fn free_present(&self) -> u32 {
        (self.free & !self.hole_inodes()).count_ones()
    }

    /// Slot `i` (0..64) of the chunk.
    pub fn slot(&self, i: u32) -> InodeSlot {
        let bit = 1u64.checked_shl(i).unwrap_or(0);
        if self.hole_inodes() & bit != 0 {
            InodeSlot::Hole
        } else if self.free & bit != 0 {
            InodeSlot::Free
        } else {
            InodeSlot::Used
        }
    }

    /// Every slot of the chunk with its AG inode number.
    pub fn slots(&self) -> impl Iterator<Item = (u32, InodeSlot)> + '_ {
        (0..XFS_INODES_PER_CHUNK).map(move |i| (self.startino.saturating_add(i), self.slot(i)))
    }
}

/// A reverse mapping: `blockcount` blocks from `startblock` belong to
/// `owner` (an inode number or a special owner) at file offset `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RmapRec {
    pub startblock: u32,
    pub blockcount: u32,
    pub owner: u64,
    /// The file offset (the low 54 bits of `rm_offset`).
    pub offset: u64,
    pub attr_fork: bool,
    pub bmbt_block: bool,
    pub unwritten: bool,
    /// `rm_offset` as stored (flags included).
    pub raw_offset: u64,
}

/// An rmap key: the low or high end of a node slot's range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RmapKey {
    pub startblock: u32,
    pub owner: u64,
    pub offset: u64,
    pub attr_fork: bool,
    pub bmbt_block: bool,
    pub raw_offset: u64,
}

/// A reference count: `blockcount` blocks from `startblock` are shared by
/// `refcount` owners, or (`cow`) are copy-on-write staging blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RefcountRec {
    /// The start block without the CoW flag.
    pub startblock: u32,
    pub cow: bool,
    pub blockcount: u32,
    pub refcount: u32,
}

/// A leaf record of any AG btree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Record {
    Alloc(AllocRec),
    Inobt(InobtRec),
    Rmap(RmapRec),
    Refcount(RefcountRec),
}

/// A node key of any AG btree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Key {
    Alloc(AllocRec),
    Inobt { startino: u32 },
    Rmap { low: RmapKey, high: RmapKey },
    Refcount { startblock: u32, cow: bool },
}

/// A key and the child it leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct NodeEntry {
    pub key: Key,
    pub ptr: u32,
}

/// The name of a special rmap owner (`FS`, `LOG`, `AG`, ...), or `None` for
/// an inode number.
pub fn owner_name(owner: u64) -> Option<&'static str> {
    Some(match owner {
        XFS_RMAP_OWN_NULL => "NULL",
        XFS_RMAP_OWN_UNKNOWN => "UNKNOWN",
        XFS_RMAP_OWN_FS => "FS",
        XFS_RMAP_OWN_LOG => "LOG",
        XFS_RMAP_OWN_AG => "AG",
        XFS_RMAP_OWN_INOBT => "INOBT",
        XFS_RMAP_OWN_INODES => "INODES",
        XFS_RMAP_OWN_REFC => "REFC",
        XFS_RMAP_OWN_COW => "COW",
        XFS_RMAP_OWN_MIN => "MIN",
        _ => return None,
    })
}

/// A special owner as the negative number xfs_db prints, or the inode number.
pub fn owner_signed(owner: u64) -> i128 {
    if owner & (1 << 63) != 0 {
        i128::from(i64::from_ne_bytes(owner.to_ne_bytes()))
    } else {
        i128::from(owner)
    }
}

/// The description of a special owner.
pub fn owner_meaning(owner: u64) -> Option<&'static str> {
    Some(match owner {
        XFS_RMAP_OWN_NULL => "no owner (never on disk)",
        XFS_RMAP_OWN_UNKNOWN => "unknown owner",
        XFS_RMAP_OWN_FS => "static filesystem metadata (AG headers)",
        XFS_RMAP_OWN_LOG => "the internal log",
        XFS_RMAP_OWN_AG => "free-space btrees and the AG free list",
        XFS_RMAP_OWN_INOBT => "inode btree blocks",
        XFS_RMAP_OWN_INODES => "inode chunks",
        XFS_RMAP_OWN_REFC => "reference count btree blocks",
        XFS_RMAP_OWN_COW => "copy-on-write staging extents",
        XFS_RMAP_OWN_MIN => "lower bound of the special owners (never on disk)",
        _ => return None,
    })
}

pub(super) fn non_inode_owner(owner: u64) -> bool {
    owner & (1 << 63) != 0
}

/// A tuple ordering keys and records of one tree the way the tree sorts them.
pub type KeyOrder = (u64, u64, u64);

/// The rmap offset bits that take part in key comparisons: the file
/// offset only (flag handling in keys changed between kernel versions).
fn rmap_key_offset(raw: u64) -> u64 {
    raw & XFS_RMAP_OFF_MASK
}

impl Record {
    /// The order of records in a leaf: for rmap records the fork and
    /// bmbt-block flags sort before the file offset, as the kernel sorts
    /// them (the unwritten flag takes no part).
    pub fn order(&self, tree: AgTree) -> KeyOrder {
        match self {
            Record::Rmap(r) => (
                r.startblock.into(),
                r.owner,
                r.raw_offset & !XFS_RMAP_OFF_UNWRITTEN,
            ),
            _ => self.low(tree),
        }
    }

    /// The key this record gives its parent node (compared without the
    /// rmap offset flags).
    pub fn low(&self, tree: AgTree) -> KeyOrder {
        match (self, tree) {
            (Record::Alloc(r), AgTree::Cnt) => (r.blockcount.into(), r.startblock.into(), 0),
            (Record::Alloc(r), _) => (r.startblock.into(), 0, 0),
            (Record::Inobt(r), _) => (r.startino.into(), 0, 0),
            (Record::Rmap(r), _) => (r.startblock.into(), r.owner, rmap_key_offset(r.raw_offset)),
            (Record::Refcount(r), _) => (refc_raw_start(r).into(), 0, 0),
        }
    }

    /// The highest key the record covers (differs from [`Record::low`] only
    /// for rmap records, whose ranges may overlap).
    pub fn high(&self, tree: AgTree) -> KeyOrder {
        match self {
            Record::Rmap(r) => {
                let adj = u64::from(r.blockcount.saturating_sub(1));
                let off = if non_inode_owner(r.owner) || r.bmbt_block {
                    r.offset
                } else {
                    r.offset.saturating_add(adj)
                };
                (
                    u64::from(r.startblock).saturating_add(adj),
                    r.owner,
                    off & XFS_RMAP_OFF_MASK,
                )
            }
            _ => self.low(tree),
        }
    }
}

impl Key {
    pub(super) fn low(&self, tree: AgTree) -> KeyOrder {
        match (self, tree) {
            (Key::Alloc(r), AgTree::Cnt) => (r.blockcount.into(), r.startblock.into(), 0),
            (Key::Alloc(r), _) => (r.startblock.into(), 0, 0),
            (Key::Inobt { startino }, _) => ((*startino).into(), 0, 0),
            (Key::Rmap { low, .. }, _) => (
                low.startblock.into(),
                low.owner,
                rmap_key_offset(low.raw_offset),
            ),
            (Key::Refcount { startblock, cow }, _) => (refc_raw(*startblock, *cow).into(), 0, 0),
        }
    }

    pub(super) fn high(&self, tree: AgTree) -> KeyOrder {
        match self {
            Key::Rmap { high, .. } => (
                high.startblock.into(),
                high.owner,
                rmap_key_offset(high.raw_offset),
            ),
            _ => self.low(tree),
        }
    }
}

fn refc_raw(startblock: u32, cow: bool) -> u32 {
    if cow {
        startblock | XFS_REFC_COWFLAG
    } else {
        startblock
    }
}

fn refc_raw_start(r: &RefcountRec) -> u32 {
    refc_raw(r.startblock, r.cow)
}

pub(super) fn decode_rec(tree: AgTree, b: &[u8], sparse: bool) -> Option<Record> {
    Some(match tree {
        AgTree::Bno | AgTree::Cnt => {
            let r = XfsAllocRec::read_from_prefix(b).ok()?.0;
            Record::Alloc(AllocRec {
                startblock: r.ar_startblock.get(),
                blockcount: r.ar_blockcount.get(),
            })
        }
        AgTree::Ino | AgTree::Fino if sparse => {
            let r = XfsInobtRecSparse::read_from_prefix(b).ok()?.0;
            Record::Inobt(InobtRec {
                startino: r.ir_startino.get(),
                holemask: r.ir_holemask.get(),
                count: r.ir_count.into(),
                freecount: r.ir_freecount.into(),
                free: r.ir_free.get(),
                sparse: true,
            })
        }
        AgTree::Ino | AgTree::Fino => {
            let r = XfsInobtRecFull::read_from_prefix(b).ok()?.0;
            Record::Inobt(InobtRec {
                startino: r.ir_startino.get(),
                holemask: 0,
                count: XFS_INODES_PER_CHUNK,
                freecount: r.ir_freecount.get(),
                free: r.ir_free.get(),
                sparse: false,
            })
        }
        AgTree::Rmap => {
            let r = XfsRmapRec::read_from_prefix(b).ok()?.0;
            let raw = r.rm_offset.get();
            Record::Rmap(RmapRec {
                startblock: r.rm_startblock.get(),
                blockcount: r.rm_blockcount.get(),
                owner: r.rm_owner.get(),
                offset: raw & XFS_RMAP_OFF_MASK,
                attr_fork: raw & XFS_RMAP_OFF_ATTR_FORK != 0,
                bmbt_block: raw & XFS_RMAP_OFF_BMBT_BLOCK != 0,
                unwritten: raw & XFS_RMAP_OFF_UNWRITTEN != 0,
                raw_offset: raw,
            })
        }
        AgTree::Refcount => {
            let r = XfsRefcountRec::read_from_prefix(b).ok()?.0;
            let start = r.rc_startblock.get();
            Record::Refcount(RefcountRec {
                startblock: start & !XFS_REFC_COWFLAG,
                cow: start & XFS_REFC_COWFLAG != 0,
                blockcount: r.rc_blockcount.get(),
                refcount: r.rc_refcount.get(),
            })
        }
    })
}

fn rmap_key(b: &[u8]) -> Option<RmapKey> {
    let k = XfsRmapKey::read_from_prefix(b).ok()?.0;
    let raw = k.rm_offset.get();
    Some(RmapKey {
        startblock: k.rm_startblock.get(),
        owner: k.rm_owner.get(),
        offset: raw & XFS_RMAP_OFF_MASK,
        attr_fork: raw & XFS_RMAP_OFF_ATTR_FORK != 0,
        bmbt_block: raw & XFS_RMAP_OFF_BMBT_BLOCK != 0,
        raw_offset: raw,
    })
}

pub(super) fn decode_key(tree: AgTree, b: &[u8]) -> Option<Key> {
    Some(match tree {
        AgTree::Bno | AgTree::Cnt => {
            let r = XfsAllocRec::read_from_prefix(b).ok()?.0;
            Key::Alloc(AllocRec {
                startblock: r.ar_startblock.get(),
                blockcount: r.ar_blockcount.get(),
            })
        }
        AgTree::Ino | AgTree::Fino => Key::Inobt {
            startino: XfsInobtKey::read_from_prefix(b).ok()?.0.ir_startino.get(),
        },
        AgTree::Rmap => Key::Rmap {
            low: rmap_key(b)?,
            high: rmap_key(b.get(size_of::<XfsRmapKey>()..)?)?,
        },
        AgTree::Refcount => {
            let s = XfsRefcountKey::read_from_prefix(b)
                .ok()?
                .0
                .rc_startblock
                .get();
            Key::Refcount {
                startblock: s & !XFS_REFC_COWFLAG,
                cow: s & XFS_REFC_COWFLAG != 0,
            }
        }
    })
}
