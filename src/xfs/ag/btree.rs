//! Walks of the per-AG short-form btrees: free space by block (bnobt) and by
//! size (cntbt), inodes (inobt), inode chunks with free inodes (finobt),
//! reverse mappings (rmapbt) and reference counts (refcountbt).
//!
//! One generic walker descends from a root through the child pointers,
//! checking every block on the way: magic (v4 or v5 per tree), level,
//! `numrecs` against what the block can hold, the v5 self-description (CRC,
//! uuid, `bb_blkno`, owner AG), the sibling chain of every level, the order
//! of records and keys, and that each parent key equals its child's lowest
//! key (and, for the overlapping rmapbt, its highest key). Depth is bounded
//! by [`MAX_AG_BTREE_LEVELS`], every block is visited at most once, and a
//! block that cannot be trusted is reported where it is while the rest of
//! the tree is still walked.
//!
//! The walker hands every decoded block to a visitor; [`records`] and
//! [`node_entries`] collect what it sees up to a cap.

use crate::xfs::error::{Error, Location};
use crate::xfs::format::ag::NULLAGBLOCK;
use crate::xfs::format::btree::*;
use crate::xfs::fs::{verify_v5, Fs, Owner, V5Check};
use crate::xfs::read::ReadAt;
use crate::xfs::types::{AgBlock, AgNumber, Daddr};
use serde::Serialize;
use std::collections::HashSet;
use std::ops::ControlFlow;
use zerocopy::FromBytes;

/// The deepest per-AG btree read. The kernel derives each tree's limit
/// from the geometry; none of them exceeds 9 levels (the historic
/// `XFS_BTREE_MAXLEVELS`) for any AG size the format allows.
pub const MAX_AG_BTREE_LEVELS: u32 = 9;

/// One of the per-AG btrees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgTree {
    /// Free space by starting block (root in the AGF).
    Bno,
    /// Free space by size (root in the AGF).
    Cnt,
    /// Inode chunks (root in the AGI).
    Ino,
    /// Inode chunks with free inodes (root in the AGI, FINOBT).
    Fino,
    /// Reverse mappings: who owns each block (root in the AGF, RMAPBT).
    Rmap,
    /// Reference counts of shared blocks (root in the AGF, REFLINK).
    Refcount,
}

impl AgTree {
    pub const ALL: [AgTree; 6] = [
        AgTree::Bno,
        AgTree::Cnt,
        AgTree::Ino,
        AgTree::Fino,
        AgTree::Rmap,
        AgTree::Refcount,
    ];

    /// Short name: `bno`, `cnt`, `ino`, `fino`, `rmap`, `refcount`.
    pub fn name(self) -> &'static str {
        match self {
            AgTree::Bno => "bno",
            AgTree::Cnt => "cnt",
            AgTree::Ino => "ino",
            AgTree::Fino => "fino",
            AgTree::Rmap => "rmap",
            AgTree::Refcount => "refcount",
        }
    }

    /// The name the kernel and xfs_db use: `bnobt`, `cntbt`, ...
    pub fn btree_name(self) -> &'static str {
        match self {
            AgTree::Bno => "bnobt",
            AgTree::Cnt => "cntbt",
            AgTree::Ino => "inobt",
            AgTree::Fino => "finobt",
            AgTree::Rmap => "rmapbt",
            AgTree::Refcount => "refcountbt",
        }
    }

    /// A one-line meaning.
    pub fn meaning(self) -> &'static str {
        match self {
            AgTree::Bno => "free space extents sorted by starting block",
            AgTree::Cnt => "free space extents sorted by length",
            AgTree::Ino => "inode chunks (64 inodes each) and which inodes are free",
            AgTree::Fino => "inode chunks that have free inodes",
            AgTree::Rmap => "reverse mappings: the owner of every used block",
            AgTree::Refcount => "reference counts of shared and copy-on-write extents",
        }
    }

    fn structure(self) -> &'static str {
        match self {
            AgTree::Bno => "bnobt block",
            AgTree::Cnt => "cntbt block",
            AgTree::Ino => "inobt block",
            AgTree::Fino => "finobt block",
            AgTree::Rmap => "rmapbt block",
            AgTree::Refcount => "refcountbt block",
        }
    }

    /// Accepts the short name, the btree name, and `refcnt`/`refcntbt`.
    pub fn from_name(s: &str) -> Option<AgTree> {
        let s = s.to_ascii_lowercase();
        AgTree::ALL
            .into_iter()
            .find(|t| t.name() == s || t.btree_name() == s)
            .or(match s.as_str() {
                "refcnt" | "refcntbt" => Some(AgTree::Refcount),
                "free" | "by-block" => Some(AgTree::Bno),
                _ => None,
            })
    }

    /// The block magic for a v5 (`crc`) or v4 filesystem; `None` for trees
    /// that only exist on v5.
    pub fn magic(self, v5: bool) -> Option<u32> {
        Some(match (self, v5) {
            (AgTree::Bno, true) => XFS_ABTB_CRC_MAGIC,
            (AgTree::Bno, false) => XFS_ABTB_MAGIC,
            (AgTree::Cnt, true) => XFS_ABTC_CRC_MAGIC,
            (AgTree::Cnt, false) => XFS_ABTC_MAGIC,
            (AgTree::Ino, true) => XFS_IBT_CRC_MAGIC,
            (AgTree::Ino, false) => XFS_IBT_MAGIC,
            (AgTree::Fino, true) => XFS_FIBT_CRC_MAGIC,
            (AgTree::Fino, false) => XFS_FIBT_MAGIC,
            (AgTree::Rmap, true) => XFS_RMAP_CRC_MAGIC,
            (AgTree::Refcount, true) => XFS_REFC_CRC_MAGIC,
            (AgTree::Rmap | AgTree::Refcount, false) => return None,
        })
    }

    /// Bytes of a leaf record.
    pub fn rec_len(self) -> usize {
        match self {
            AgTree::Bno | AgTree::Cnt => size_of::<XfsAllocRec>(),
            AgTree::Ino | AgTree::Fino => size_of::<XfsInobtRecFull>(),
            AgTree::Rmap => size_of::<XfsRmapRec>(),
            AgTree::Refcount => size_of::<XfsRefcountRec>(),
        }
    }

    /// Bytes of a node key slot (low and high key for the rmapbt).
    pub fn key_len(self) -> usize {
        match self {
            AgTree::Bno | AgTree::Cnt => size_of::<XfsAllocRec>(),
            AgTree::Ino | AgTree::Fino => size_of::<XfsInobtKey>(),
            AgTree::Rmap => XFS_RMAP_NODE_KEY_LEN,
            AgTree::Refcount => size_of::<XfsRefcountKey>(),
        }
    }

    /// Whether keys overlap (each node slot has a low and a high key).
    pub fn overlapping(self) -> bool {
        self == AgTree::Rmap
    }
}

/// Header bytes of a short-form block.
pub fn header_len(v5: bool) -> usize {
    if v5 {
        XFS_BTREE_SBLOCK_CRC_LEN
    } else {
        XFS_BTREE_SBLOCK_LEN
    }
}

/// Most records a leaf (`leaf = true`) or most key/pointer pairs a node of
/// `tree` can hold in a block of `blocksize` bytes.
pub fn maxrecs(tree: AgTree, blocksize: u32, v5: bool, leaf: bool) -> usize {
    let room = usize::try_from(blocksize)
        .unwrap_or(0)
        .saturating_sub(header_len(v5));
    let per = if leaf {
        tree.rec_len()
    } else {
        tree.key_len().saturating_add(size_of::<XfsAgPtr>())
    };
    room.checked_div(per).unwrap_or(0)
}

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

/// What a block holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockContent {
    Leaf(Vec<Record>),
    Node(Vec<NodeEntry>),
}

/// The v5 part of a short-form header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SblockV5 {
    pub blkno: u64,
    pub lsn: u64,
    pub uuid: [u8; 16],
    pub owner: u32,
    pub crc: u32,
}

/// One decoded btree block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BtreeBlock {
    pub tree: AgTree,
    pub agno: AgNumber,
    pub agbno: AgBlock,
    pub daddr: Daddr,
    pub magic: u32,
    pub level: u16,
    pub numrecs: u16,
    pub leftsib: u32,
    pub rightsib: u32,
    pub v5: Option<SblockV5>,
    /// v5 only: whether the CRC matched.
    pub crc_ok: Option<bool>,
    /// What the v5 self-description check found wrong (the content is
    /// still decoded).
    pub problems: Vec<String>,
    pub content: BlockContent,
}

/// What decoding a block needs to know about the filesystem.
#[derive(Clone, Copy, Debug)]
pub struct BlockCtx {
    pub v5: bool,
    /// SPINODES: inobt records are in the sparse form.
    pub sparse_inodes: bool,
    pub blocksize: u32,
    pub meta_uuid: [u8; 16],
    pub agno: AgNumber,
}

impl BlockCtx {
    pub fn new<R: ReadAt>(fs: &Fs<R>, agno: AgNumber) -> Self {
        BlockCtx {
            v5: fs.geo.v5,
            sparse_inodes: fs.geo.v5 && fs.sb.features_incompat & (1 << 1) != 0,
            blocksize: fs.geo.blocksize,
            meta_uuid: fs.meta_uuid(),
            agno,
        }
    }
}

/// A magic number with its four characters.
pub fn magic_text(m: u32) -> String {
    let chars: String = m
        .to_be_bytes()
        .iter()
        .map(|b| {
            if b.is_ascii_graphic() {
                char::from(*b)
            } else {
                '.'
            }
        })
        .collect();
    format!("{m:#010x} ({chars})")
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

fn non_inode_owner(owner: u64) -> bool {
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
    fn low(&self, tree: AgTree) -> KeyOrder {
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

    fn high(&self, tree: AgTree) -> KeyOrder {
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

fn decode_rec(tree: AgTree, b: &[u8], sparse: bool) -> Option<Record> {
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

fn decode_key(tree: AgTree, b: &[u8]) -> Option<Key> {
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

fn loc_at(daddr: Daddr, byte: usize) -> Location {
    Location::InStructure {
        daddr: daddr.0,
        byte: u64::try_from(byte).unwrap_or(u64::MAX),
    }
}

/// Decode one block of `tree` read from AG block `agbno` at `daddr`.
///
/// Fails when the block cannot be read as this tree (wrong magic, `numrecs`
/// larger than the block holds, too short). A failed v5 self-description
/// (CRC, uuid, `bb_blkno`, owner) does not fail: it is listed in
/// [`BtreeBlock::problems`] and the content is still decoded.
pub fn parse_block(
    bytes: &[u8],
    tree: AgTree,
    ctx: &BlockCtx,
    agbno: AgBlock,
    daddr: Daddr,
) -> Result<BtreeBlock, Error> {
    let structure = tree.structure();
    let here = format!("AG {} block {}", ctx.agno.0, agbno.0);
    let hdr_len = header_len(ctx.v5);
    let bs = usize::try_from(ctx.blocksize).unwrap_or(usize::MAX);
    if bytes.len() < hdr_len || bytes.len() < bs {
        return Err(Error::corrupt(
            structure,
            Location::Daddr { daddr: daddr.0 },
            format!(
                "{here}: {} bytes, shorter than a {bs}-byte block",
                bytes.len()
            ),
        ));
    }
    let block = bytes.get(..bs).unwrap_or(bytes);
    let Ok((h, _)) = XfsBtreeSblock::ref_from_prefix(
        block
            .get(..XFS_BTREE_SBLOCK_CRC_LEN)
            .unwrap_or(&[0u8; XFS_BTREE_SBLOCK_CRC_LEN]),
    ) else {
        return Err(Error::corrupt(
            structure,
            Location::Daddr { daddr: daddr.0 },
            "header unreadable",
        ));
    };
    let magic = h.bb_magic.get();
    let want = tree.magic(ctx.v5);
    if want != Some(magic) {
        let expected = match want {
            Some(w) => format!("expected {}", magic_text(w)),
            None => format!("a {} only exists on v5 filesystems", tree.btree_name()),
        };
        return Err(Error::corrupt(
            structure,
            loc_at(daddr, 0),
            format!("{here}: magic {}, {expected}", magic_text(magic)),
        ));
    }
    let level = h.bb_level.get();
    let numrecs = h.bb_numrecs.get();
    if u32::from(level) >= MAX_AG_BTREE_LEVELS {
        return Err(Error::corrupt(
            structure,
            loc_at(daddr, 4),
            format!("{here}: level {level} is beyond the deepest possible ({MAX_AG_BTREE_LEVELS} levels)"),
        ));
    }
    let leaf = level == 0;
    let max = maxrecs(tree, ctx.blocksize, ctx.v5, leaf);
    if usize::from(numrecs) > max {
        return Err(Error::corrupt(
            structure,
            loc_at(daddr, 6),
            format!(
                "{here}: numrecs {numrecs} but a {} {} block holds at most {max}",
                if leaf { "leaf" } else { "node" },
                tree.btree_name()
            ),
        ));
    }
    let mut problems = Vec::new();
    let (v5, crc_ok) = if ctx.v5 {
        let check = V5Check {
            structure,
            daddr,
            crc_off: XFS_BTREE_SBLOCK_CRC_OFF,
            uuid: &ctx.meta_uuid,
            uuid_off: XFS_BTREE_SBLOCK_UUID_OFF,
            blkno_off: Some(XFS_BTREE_SBLOCK_BLKNO_OFF),
            owner: Some((XFS_BTREE_SBLOCK_OWNER_OFF, Owner::Ag(ctx.agno.0))),
        };
        let v = verify_v5(block, &check);
        problems.extend(v.problems);
        (
            Some(SblockV5 {
                blkno: h.bb_blkno.get(),
                lsn: h.bb_lsn.get(),
                uuid: h.bb_uuid,
                owner: h.bb_owner.get(),
                crc: h.bb_crc.get(),
            }),
            Some(v.crc_ok),
        )
    } else {
        (None, None)
    };
    let n = usize::from(numrecs);
    let short = || {
        Error::corrupt(
            structure,
            Location::Daddr { daddr: daddr.0 },
            format!("{here}: record area runs past the block"),
        )
    };
    let content = if leaf {
        let len = tree.rec_len();
        let mut recs = Vec::with_capacity(n);
        for i in 0..n {
            let off = i
                .checked_mul(len)
                .and_then(|o| o.checked_add(hdr_len))
                .ok_or_else(short)?;
            let b = block.get(off..).ok_or_else(short)?;
            recs.push(decode_rec(tree, b, ctx.sparse_inodes).ok_or_else(short)?);
        }
        BlockContent::Leaf(recs)
    } else {
        let klen = tree.key_len();
        let ptrs_at = max
            .checked_mul(klen)
            .and_then(|o| o.checked_add(hdr_len))
            .ok_or_else(short)?;
        let mut entries = Vec::with_capacity(n);
        for i in 0..n {
            let koff = i
                .checked_mul(klen)
                .and_then(|o| o.checked_add(hdr_len))
                .ok_or_else(short)?;
            let poff = i
                .checked_mul(size_of::<XfsAgPtr>())
                .and_then(|o| o.checked_add(ptrs_at))
                .ok_or_else(short)?;
            let key = decode_key(tree, block.get(koff..).ok_or_else(short)?).ok_or_else(short)?;
            let ptr = XfsAgPtr::read_from_prefix(block.get(poff..).ok_or_else(short)?)
                .map_err(|_| short())?
                .0
                .get();
            entries.push(NodeEntry { key, ptr });
        }
        BlockContent::Node(entries)
    };
    Ok(BtreeBlock {
        tree,
        agno: ctx.agno,
        agbno,
        daddr,
        magic,
        level,
        numrecs,
        leftsib: h.bb_leftsib.get(),
        rightsib: h.bb_rightsib.get(),
        v5,
        crc_ok,
        problems,
        content,
    })
}

/// Where a tree starts, taken from the AGF or AGI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TreeRoot {
    pub tree: AgTree,
    pub agno: AgNumber,
    pub root: AgBlock,
    /// The height the header claims (1 = the root is a leaf).
    pub levels: u32,
    /// Blocks in the AG (`agf_length` / `agi_length`, checked against the
    /// geometry by the header parser).
    pub ag_length: u32,
    /// The first AG block after the AG headers; no btree block may lie below.
    pub first_block: u32,
}

/// What a walk found, besides what it handed to the visitor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WalkReport {
    pub tree: AgTree,
    pub agno: AgNumber,
    pub root: AgBlock,
    pub levels: u32,
    /// Blocks read and decoded.
    pub blocks: u64,
    /// Decoded blocks per level (index = level, 0 = leaves).
    pub blocks_per_level: Vec<u64>,
    /// Leaf records seen.
    pub records: u64,
    /// Node keys seen.
    pub keys: u64,
    /// Everything found wrong, in walk order.
    pub problems: Vec<String>,
    /// The visitor stopped the walk before the end.
    pub stopped: bool,
}

#[derive(Clone, Copy, Debug)]
enum Cursor {
    /// No block seen yet at this level.
    Start,
    /// The last block seen at this level.
    After { agbno: u32, rightsib: u32 },
    /// A subtree was skipped: the sibling chain cannot be checked here.
    Unknown,
}

struct Walker<'a, R: ReadAt> {
    fs: &'a Fs<R>,
    root: TreeRoot,
    ctx: BlockCtx,
    visited: HashSet<u32>,
    cursors: Vec<Cursor>,
    last_rec: Option<(KeyOrder, Record)>,
    report: WalkReport,
    visit: &'a mut dyn FnMut(&BtreeBlock) -> ControlFlow<()>,
}

impl<R: ReadAt> Walker<'_, R> {
    fn problem(&mut self, agbno: u32, level: u32, what: String) {
        self.report.problems.push(format!(
            "{} AG {} block {agbno} (level {level}): {what}",
            self.root.tree.btree_name(),
            self.root.agno.0
        ));
    }

    fn lose_levels_up_to(&mut self, level: u32) {
        for (l, c) in self.cursors.iter_mut().enumerate() {
            if u32::try_from(l).is_ok_and(|l| l <= level) {
                *c = Cursor::Unknown;
            }
        }
    }

    /// Visit the block `agbno`, expected at `level`. Returns the lowest and
    /// highest keys of its subtree, when it could be read.
    fn block(&mut self, agbno: u32, level: u32) -> Option<(Option<KeyOrder>, Option<KeyOrder>)> {
        if self.report.stopped {
            return None;
        }
        if agbno == NULLAGBLOCK || agbno < self.root.first_block || agbno >= self.root.ag_length {
            let why = if agbno == NULLAGBLOCK {
                "pointer is NULLAGBLOCK".to_string()
            } else {
                format!(
                    "block number outside the AG's usable blocks {}..{}",
                    self.root.first_block, self.root.ag_length
                )
            };
            self.problem(agbno, level, why);
            self.lose_levels_up_to(level);
            return None;
        }
        if !self.visited.insert(agbno) {
            self.problem(
                agbno,
                level,
                "already visited in this tree (a loop or a shared block)".into(),
            );
            self.lose_levels_up_to(level);
            return None;
        }
        let structure = self.root.tree.structure();
        let Some(daddr) = self.fs.geo.agb_to_daddr(self.root.agno, AgBlock(agbno)) else {
            self.problem(agbno, level, "lies outside the filesystem".into());
            self.lose_levels_up_to(level);
            return None;
        };
        let bytes = match self
            .fs
            .read_agblock(structure, self.root.agno, AgBlock(agbno))
        {
            Ok(b) => b,
            Err(e) => {
                self.problem(agbno, level, e.to_string());
                self.lose_levels_up_to(level);
                return None;
            }
        };
        let block = match parse_block(&bytes, self.root.tree, &self.ctx, AgBlock(agbno), daddr) {
            Ok(b) => b,
            Err(e) => {
                self.report.problems.push(e.to_string());
                self.lose_levels_up_to(level);
                return None;
            }
        };
        if u32::from(block.level) != level {
            self.problem(
                agbno,
                level,
                format!("bb_level {} but expected level {level}", block.level),
            );
            self.lose_levels_up_to(level);
            return None;
        }
        for p in block.problems.clone() {
            self.problem(agbno, level, p);
        }
        self.check_siblings(&block, level);
        self.report.blocks = self.report.blocks.saturating_add(1);
        if let Some(c) = usize::try_from(level)
            .ok()
            .and_then(|l| self.report.blocks_per_level.get_mut(l))
        {
            *c = c.saturating_add(1);
        }
        let is_root = agbno == self.root.root.0;
        if block.numrecs == 0 && !(is_root && level == 0) {
            self.problem(
                agbno,
                level,
                "numrecs is 0 in a block that is not an empty root leaf".into(),
            );
        }
        if (self.visit)(&block).is_break() {
            self.report.stopped = true;
        }
        let tree = self.root.tree;
        match &block.content {
            BlockContent::Leaf(recs) => {
                self.report.records = self
                    .report
                    .records
                    .saturating_add(u64::try_from(recs.len()).unwrap_or(u64::MAX));
                let mut low = None;
                let mut high: Option<KeyOrder> = None;
                for (i, r) in recs.iter().enumerate() {
                    self.check_record(agbno, i, r);
                    if low.is_none() {
                        low = Some(r.low(tree));
                    }
                    let h = r.high(tree);
                    high = Some(high.map_or(h, |x| x.max(h)));
                }
                Some((low, high))
            }
            BlockContent::Node(entries) => {
                self.report.keys = self
                    .report
                    .keys
                    .saturating_add(u64::try_from(entries.len()).unwrap_or(u64::MAX));
                let mut prev: Option<KeyOrder> = None;
                for (i, e) in entries.iter().enumerate() {
                    let k = e.key.low(tree);
                    if let Some(p) = prev {
                        let bad = if tree.overlapping() { k < p } else { k <= p };
                        if bad {
                            self.problem(
                                agbno,
                                level,
                                format!(
                                    "key {} is out of order after key {i}",
                                    i.saturating_add(1)
                                ),
                            );
                        }
                    }
                    prev = Some(k);
                }
                let child_level = level.saturating_sub(1);
                let mut low = None;
                let mut high: Option<KeyOrder> = None;
                for (i, e) in entries.iter().enumerate() {
                    let got = self.block(e.ptr, child_level);
                    if let Some((child_low, child_high)) = got {
                        if let Some(cl) = child_low {
                            if cl != e.key.low(tree) {
                                self.problem(
                                    agbno,
                                    level,
                                    format!(
                                        "key {} is {:?} but its child (block {}) starts at {:?}",
                                        i.saturating_add(1),
                                        e.key.low(tree),
                                        e.ptr,
                                        cl
                                    ),
                                );
                            }
                        }
                        if tree.overlapping() {
                            if let Some(ch) = child_high {
                                if ch != e.key.high(tree) {
                                    self.problem(
                                        agbno,
                                        level,
                                        format!(
                                            "high key {} is {:?} but its child (block {}) ends at {:?}",
                                            i.saturating_add(1),
                                            e.key.high(tree),
                                            e.ptr,
                                            ch
                                        ),
                                    );
                                }
                            }
                        }
                    }
                    if low.is_none() {
                        low = Some(e.key.low(tree));
                    }
                    let h = e.key.high(tree);
                    high = Some(high.map_or(h, |x| x.max(h)));
                    if self.report.stopped {
                        break;
                    }
                }
                Some((low, high))
            }
        }
    }

    fn check_siblings(&mut self, block: &BtreeBlock, level: u32) {
        let agbno = block.agbno.0;
        let Some(slot) = usize::try_from(level)
            .ok()
            .and_then(|l| self.cursors.get(l).copied())
        else {
            return;
        };
        match slot {
            Cursor::Start => {
                if block.leftsib != NULLAGBLOCK {
                    self.problem(
                        agbno,
                        level,
                        format!("first block of its level but leftsib is {}", block.leftsib),
                    );
                }
            }
            Cursor::After {
                agbno: prev,
                rightsib,
            } => {
                if rightsib != agbno {
                    self.problem(
                        prev,
                        level,
                        format!(
                            "rightsib is {} but the next block of its level is {agbno}",
                            sib(rightsib)
                        ),
                    );
                }
                if block.leftsib != prev {
                    self.problem(
                        agbno,
                        level,
                        format!(
                            "leftsib is {} but the previous block of its level is {prev}",
                            sib(block.leftsib)
                        ),
                    );
                }
            }
            Cursor::Unknown => {}
        }
        if block.leftsib == agbno || block.rightsib == agbno {
            self.problem(
                agbno,
                level,
                "a sibling pointer points to the block itself".into(),
            );
        }
        if let Some(c) = usize::try_from(level)
            .ok()
            .and_then(|l| self.cursors.get_mut(l))
        {
            *c = Cursor::After {
                agbno,
                rightsib: block.rightsib,
            };
        }
    }

    fn check_record(&mut self, agbno: u32, index: usize, r: &Record) {
        let tree = self.root.tree;
        let n = index.saturating_add(1);
        let len = u64::from(self.root.ag_length);
        let mut bad: Vec<String> = Vec::new();
        let extent_end = |start: u32, count: u32| u64::from(start).saturating_add(u64::from(count));
        match r {
            Record::Alloc(a) => {
                if a.blockcount == 0 {
                    bad.push("blockcount is 0".into());
                }
                if extent_end(a.startblock, a.blockcount) > len {
                    bad.push(format!(
                        "extent {}+{} runs past the AG end {len}",
                        a.startblock, a.blockcount
                    ));
                }
            }
            Record::Inobt(c) => {
                // As xfs_repair checks a chunk's start: at the start of
                // a block when a block holds at most a chunk, else at a
                // chunk boundary in it; on an agbno that is a multiple
                // of sb_inoalignmt with aligned inodes (ALIGN; sparse
                // inode chunks are aligned otherwise). v4 filesystems
                // with small inodes have chunks that start mid-way
                // through a 64-inode boundary.
                let inopblog = u32::from(self.fs.geo.inopblog);
                let chunk_block = c.startino.checked_shr(inopblog).unwrap_or(u32::MAX);
                let inopblock = 1u32.checked_shl(inopblog).unwrap_or(u32::MAX);
                let off = c.startino & inopblock.wrapping_sub(1);
                if (inopblock <= XFS_INODES_PER_CHUNK && off != 0)
                    || (inopblock > XFS_INODES_PER_CHUNK
                        && off
                            .checked_rem(XFS_INODES_PER_CHUNK)
                            .is_some_and(|r| r != 0))
                {
                    bad.push(format!(
                        "startino {} does not start a chunk (inode {off} of its block, {inopblock} inodes a block)",
                        c.startino
                    ));
                }
                let sb = &self.fs.sb;
                let sparse = sb.is_v5() && sb.features_incompat & (1 << 1) != 0;
                if sb.versionnum & 0x0080 != 0
                    && !sparse
                    && chunk_block
                        .checked_rem(sb.inoalignmt)
                        .is_some_and(|r| r != 0)
                {
                    bad.push(format!(
                        "startino {} is in block {chunk_block}, not a multiple of sb_inoalignmt {}",
                        c.startino, sb.inoalignmt
                    ));
                }
                if u64::from(chunk_block) >= len {
                    bad.push(format!("startino {} lies beyond the AG", c.startino));
                }
                if c.count != c.present() {
                    bad.push(format!(
                        "count {} but the holemask {:#06x} leaves {} inodes",
                        c.count,
                        c.holemask,
                        c.present()
                    ));
                }
                if c.freecount != c.free_present() {
                    bad.push(format!(
                        "freecount {} but {} inodes are marked free",
                        c.freecount,
                        c.free_present()
                    ));
                }
                if c.freecount > c.count {
                    bad.push(format!(
                        "freecount {} exceeds count {}",
                        c.freecount, c.count
                    ));
                }
                if tree == AgTree::Fino && c.freecount == 0 {
                    bad.push("a finobt record without free inodes".into());
                }
            }
            Record::Rmap(m) => {
                if m.blockcount == 0 {
                    bad.push("blockcount is 0".into());
                }
                if extent_end(m.startblock, m.blockcount) > len {
                    bad.push(format!(
                        "extent {}+{} runs past the AG end {len}",
                        m.startblock, m.blockcount
                    ));
                }
                let unknown_flags = m.raw_offset
                    & !(XFS_RMAP_OFF_MASK
                        | XFS_RMAP_OFF_ATTR_FORK
                        | XFS_RMAP_OFF_BMBT_BLOCK
                        | XFS_RMAP_OFF_UNWRITTEN);
                if unknown_flags != 0 {
                    bad.push(format!("unknown offset flag bits {unknown_flags:#x}"));
                }
                if non_inode_owner(m.owner) {
                    if owner_name(m.owner).is_none()
                        || m.owner == XFS_RMAP_OWN_NULL
                        || m.owner == XFS_RMAP_OWN_MIN
                    {
                        bad.push(format!(
                            "owner {} is not a valid special owner",
                            owner_signed(m.owner)
                        ));
                    }
                    if m.raw_offset != 0 {
                        bad.push("a special owner with a file offset or flags".into());
                    }
                } else if m.bmbt_block && (m.offset != 0 || m.unwritten) {
                    bad.push("a bmbt block with a file offset or the unwritten flag".into());
                }
            }
            Record::Refcount(c) => {
                if c.blockcount == 0 {
                    bad.push("blockcount is 0".into());
                }
                if extent_end(c.startblock, c.blockcount) > len {
                    bad.push(format!(
                        "extent {}+{} runs past the AG end {len}",
                        c.startblock, c.blockcount
                    ));
                }
                if c.cow && c.refcount != 1 {
                    bad.push(format!(
                        "a CoW staging extent with refcount {} (must be 1)",
                        c.refcount
                    ));
                }
                if !c.cow && c.refcount < 2 {
                    bad.push(format!(
                        "a shared extent with refcount {} (must be 2 or more)",
                        c.refcount
                    ));
                }
            }
        }
        let key = r.order(tree);
        if let Some((pk, prev)) = self.last_rec {
            let order_bad = if tree.overlapping() {
                key < pk
            } else {
                key <= pk
            };
            if order_bad {
                bad.push("out of order after the previous record".into());
            } else {
                let overlap = match (prev, r) {
                    (Record::Alloc(p), Record::Alloc(a)) if tree == AgTree::Bno => {
                        extent_end(p.startblock, p.blockcount) > u64::from(a.startblock)
                    }
                    (Record::Inobt(p), Record::Inobt(c)) => {
                        u64::from(p.startino).saturating_add(64) > u64::from(c.startino)
                    }
                    (Record::Refcount(p), Record::Refcount(c)) if p.cow == c.cow => {
                        extent_end(p.startblock, p.blockcount) > u64::from(c.startblock)
                    }
                    _ => false,
                };
                if overlap {
                    bad.push("overlaps the previous record".into());
                }
            }
        }
        self.last_rec = Some((key, *r));
        for b in bad {
            self.problem(agbno, 0, format!("record {n}: {b}"));
        }
    }
}

fn sib(b: u32) -> String {
    if b == NULLAGBLOCK {
        "NULLAGBLOCK".into()
    } else {
        b.to_string()
    }
}

/// Walk a tree from its root, handing each decoded block to `visit` in
/// depth-first order (so the blocks of each level come left to right). The
/// visitor may stop the walk by returning `ControlFlow::Break`.
pub fn walk<R: ReadAt>(
    fs: &Fs<R>,
    root: &TreeRoot,
    visit: &mut dyn FnMut(&BtreeBlock) -> ControlFlow<()>,
) -> WalkReport {
    let levels_ok = (1..=MAX_AG_BTREE_LEVELS).contains(&root.levels);
    let n_levels = if levels_ok { root.levels } else { 0 };
    let mut w = Walker {
        fs,
        root: *root,
        ctx: BlockCtx::new(fs, root.agno),
        visited: HashSet::new(),
        cursors: vec![Cursor::Start; usize::try_from(n_levels).unwrap_or(0)],
        last_rec: None,
        report: WalkReport {
            tree: root.tree,
            agno: root.agno,
            root: root.root,
            levels: root.levels,
            blocks: 0,
            blocks_per_level: vec![0; usize::try_from(n_levels).unwrap_or(0)],
            records: 0,
            keys: 0,
            problems: Vec::new(),
            stopped: false,
        },
        visit,
    };
    if !levels_ok {
        w.report.problems.push(format!(
            "{} AG {}: height {} is not 1 to {MAX_AG_BTREE_LEVELS}; the tree is not read",
            root.tree.btree_name(),
            root.agno.0,
            root.levels
        ));
        return w.report;
    }
    w.block(root.root.0, n_levels.saturating_sub(1));
    if !w.report.stopped {
        for (level, c) in w.cursors.clone().into_iter().enumerate() {
            if let Cursor::After { agbno, rightsib } = c {
                if rightsib != NULLAGBLOCK {
                    w.problem(
                        agbno,
                        u32::try_from(level).unwrap_or(u32::MAX),
                        format!("last block of its level but rightsib is {rightsib}"),
                    );
                }
            }
        }
    }
    w.report
}

/// The leaf records of a tree, in key order, at most `cap` of them
/// (`report.stopped` says whether there were more).
pub fn records<R: ReadAt>(fs: &Fs<R>, root: &TreeRoot, cap: usize) -> (Vec<Record>, WalkReport) {
    let mut out = Vec::new();
    let report = walk(fs, root, &mut |b| {
        if let BlockContent::Leaf(recs) = &b.content {
            for r in recs {
                if out.len() >= cap {
                    return ControlFlow::Break(());
                }
                out.push(*r);
            }
        }
        ControlFlow::Continue(())
    });
    (out, report)
}

/// A node entry with where it was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PlacedEntry {
    pub level: u16,
    /// The node block holding the entry.
    pub agbno: u32,
    /// 1-based slot in the node.
    pub index: u32,
    pub entry: NodeEntry,
}

/// The node keys and pointers of a tree, at most `cap` of them.
pub fn node_entries<R: ReadAt>(
    fs: &Fs<R>,
    root: &TreeRoot,
    cap: usize,
) -> (Vec<PlacedEntry>, WalkReport) {
    let mut out = Vec::new();
    let report = walk(fs, root, &mut |b| {
        if let BlockContent::Node(entries) = &b.content {
            for (i, e) in entries.iter().enumerate() {
                if out.len() >= cap {
                    return ControlFlow::Break(());
                }
                out.push(PlacedEntry {
                    level: b.level,
                    agbno: b.agbno.0,
                    index: u32::try_from(i).unwrap_or(u32::MAX).saturating_add(1),
                    entry: *e,
                });
            }
        }
        ControlFlow::Continue(())
    });
    (out, report)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::panic
)]
mod tests {
    use super::*;
    use crate::xfs::ag::testing::{fix_crc, fixture_fs, fixture_head};

    /// AG 0 of the `v5-1k-rmap` fixture (1 KiB blocks). Its rmapbt is two
    /// levels: root block 9 with leaves 6 and 8 holding 20 and 30 records
    /// (xfs_db `btdump` in tests/fixtures/v5-1k-rmap.agbt.txt).
    const RMAP_ROOT: u32 = 9;
    const RMAP_LEAVES: [u32; 2] = [6, 8];
    const BS: usize = 1024;

    fn rmap_root() -> TreeRoot {
        TreeRoot {
            tree: AgTree::Rmap,
            agno: AgNumber(0),
            root: AgBlock(RMAP_ROOT),
            levels: 2,
            ag_length: 16384,
            first_block: 2,
        }
    }

    fn head() -> Vec<u8> {
        fixture_head("v5-1k-rmap", 256 << 10)
    }

    fn block_mut(img: &mut [u8], agbno: u32) -> &mut [u8] {
        let o = agbno as usize * BS;
        &mut img[o..o + BS]
    }

    fn put16(b: &mut [u8], off: usize, v: u16) {
        b[off..off + 2].copy_from_slice(&v.to_be_bytes());
    }
    fn put32(b: &mut [u8], off: usize, v: u32) {
        b[off..off + 4].copy_from_slice(&v.to_be_bytes());
    }

    fn resum(img: &mut [u8], agbno: u32) {
        fix_crc(block_mut(img, agbno), XFS_BTREE_SBLOCK_CRC_OFF);
    }

    fn walk_all(img: Vec<u8>, root: &TreeRoot) -> (Vec<Record>, WalkReport) {
        let fs = fixture_fs(img);
        records(&fs, root, usize::MAX)
    }

    #[test]
    fn walks_a_two_level_rmapbt_from_a_real_image() {
        let (recs, rep) = walk_all(head(), &rmap_root());
        assert!(rep.problems.is_empty(), "{:?}", rep.problems);
        assert_eq!(rep.blocks, 3);
        assert_eq!(rep.blocks_per_level, vec![2, 1]);
        assert_eq!(rep.records, 50);
        assert_eq!(rep.keys, 2);
        assert_eq!(recs.len(), 50);
        let Record::Rmap(first) = recs[0] else {
            panic!("not an rmap record")
        };
        assert_eq!((first.startblock, first.blockcount), (0, 2));
        assert_eq!(owner_name(first.owner), Some("FS"));
        assert_eq!(owner_signed(first.owner), -3);
    }

    #[test]
    fn node_entries_carry_low_and_high_keys() {
        let fs = fixture_fs(head());
        let (entries, rep) = node_entries(&fs, &rmap_root(), 10);
        assert!(rep.problems.is_empty(), "{:?}", rep.problems);
        assert_eq!(entries.len(), 2);
        let Key::Rmap { low, high } = entries[0].entry.key else {
            panic!("not an rmap key")
        };
        // xfs_db: 1:[0,-3,0,0,0,31,72,1,0,0], ptrs 1:6 2:8
        assert_eq!((low.startblock, owner_signed(low.owner)), (0, -3));
        assert_eq!((high.startblock, high.owner, high.offset), (31, 72, 1));
        assert_eq!(entries[0].entry.ptr, RMAP_LEAVES[0]);
        assert_eq!(entries[1].entry.ptr, RMAP_LEAVES[1]);
    }

    #[test]
    fn a_record_cap_stops_the_walk() {
        let fs = fixture_fs(head());
        let (recs, rep) = records(&fs, &rmap_root(), 5);
        assert_eq!(recs.len(), 5);
        assert!(rep.stopped);
    }

    fn parse_at(img: &[u8], agbno: u32) -> Result<BtreeBlock, Error> {
        let ctx = BlockCtx {
            v5: true,
            sparse_inodes: true,
            blocksize: 1024,
            meta_uuid: img[32..48].try_into().unwrap(),
            agno: AgNumber(0),
        };
        let o = agbno as usize * BS;
        parse_block(
            &img[o..o + BS],
            AgTree::Rmap,
            &ctx,
            AgBlock(agbno),
            Daddr(u64::from(agbno) * 2),
        )
    }

    #[test]
    fn bad_magic_is_a_clear_error() {
        let mut img = head();
        block_mut(&mut img, RMAP_LEAVES[0])[0..4].copy_from_slice(b"JUNK");
        let e = parse_at(&img, RMAP_LEAVES[0]).unwrap_err().to_string();
        assert!(
            e.contains("rmapbt block")
                && e.contains("AG 0 block 6")
                && e.contains("magic 0x4a554e4b (JUNK), expected 0x524d4233 (RMB3)"),
            "{e}"
        );
        let (_, rep) = walk_all(img, &rmap_root());
        assert!(
            rep.problems.iter().any(|p| p.contains("JUNK")),
            "{:?}",
            rep.problems
        );
        // The other leaf is still read.
        assert_eq!(rep.blocks, 2);
        assert_eq!(rep.records, 30);
    }

    #[test]
    fn numrecs_beyond_the_block_is_refused() {
        let mut img = head();
        put16(block_mut(&mut img, RMAP_LEAVES[1]), 6, 500);
        resum(&mut img, RMAP_LEAVES[1]);
        let e = parse_at(&img, RMAP_LEAVES[1]).unwrap_err().to_string();
        assert!(
            e.contains("numrecs 500 but a leaf rmapbt block holds at most 40"),
            "{e}"
        );
        let (_, rep) = walk_all(img, &rmap_root());
        assert_eq!(rep.records, 20);
        assert!(rep.problems.iter().any(|p| p.contains("numrecs 500")));
    }

    #[test]
    fn bad_crc_is_reported_and_the_content_still_decoded() {
        let mut img = head();
        block_mut(&mut img, RMAP_LEAVES[0])[BS - 1] ^= 0xff;
        let b = parse_at(&img, RMAP_LEAVES[0]).unwrap();
        assert_eq!(b.crc_ok, Some(false));
        assert!(b.problems[0].starts_with("CRC stored"), "{:?}", b.problems);
        let (recs, rep) = walk_all(img, &rmap_root());
        assert_eq!(recs.len(), 50);
        assert_eq!(rep.problems.len(), 1, "{:?}", rep.problems);
        assert!(rep.problems[0].contains("rmapbt AG 0 block 6 (level 0): CRC stored"));
    }

    #[test]
    fn wrong_owner_and_blkno_are_reported() {
        let mut img = head();
        put32(block_mut(&mut img, RMAP_LEAVES[0]), 48, 3);
        block_mut(&mut img, RMAP_LEAVES[0])[23] ^= 1;
        resum(&mut img, RMAP_LEAVES[0]);
        let (_, rep) = walk_all(img, &rmap_root());
        let all = rep.problems.join("\n");
        assert!(all.contains("owner AG 3 but found in AG 0"), "{all}");
        assert!(all.contains("blkno 13 but read from daddr 12"), "{all}");
    }

    #[test]
    fn a_sibling_loop_is_reported_and_not_followed() {
        // Leaf 6 names itself as its right sibling; leaf 8 points back to 6.
        let mut img = head();
        put32(block_mut(&mut img, 6), 12, 6);
        resum(&mut img, 6);
        put32(block_mut(&mut img, 8), 12, 6);
        resum(&mut img, 8);
        let (recs, rep) = walk_all(img, &rmap_root());
        assert_eq!(recs.len(), 50);
        let all = rep.problems.join("\n");
        assert!(
            all.contains("block 6 (level 0): a sibling pointer points to the block itself"),
            "{all}"
        );
        assert!(
            all.contains("block 6 (level 0): rightsib is 6 but the next block of its level is 8"),
            "{all}"
        );
        assert!(
            all.contains("block 8 (level 0): last block of its level but rightsib is 6"),
            "{all}"
        );
    }

    #[test]
    fn a_pointer_loop_is_reported_once() {
        // The root's second pointer names the root itself.
        let mut img = head();
        let root = block_mut(&mut img, RMAP_ROOT);
        let max = maxrecs(AgTree::Rmap, 1024, true, false);
        put32(root, 56 + max * 40 + 4, RMAP_ROOT);
        resum(&mut img, RMAP_ROOT);
        let (recs, rep) = walk_all(img, &rmap_root());
        assert_eq!(recs.len(), 20);
        let all = rep.problems.join("\n");
        assert!(
            all.contains("block 9 (level 0): already visited in this tree"),
            "{all}"
        );
    }

    #[test]
    fn a_child_at_the_wrong_level_is_refused() {
        let mut img = head();
        // Leaf 6 (20 records, few enough for a node) claims level 1.
        put16(block_mut(&mut img, 6), 4, 1);
        resum(&mut img, 6);
        let (recs, rep) = walk_all(img, &rmap_root());
        assert!(rep
            .problems
            .iter()
            .any(|p| p.contains("block 6 (level 0): bb_level 1 but expected level 0")));
        assert_eq!(recs.len(), 30);
    }

    #[test]
    fn a_wrong_parent_key_is_reported() {
        let mut img = head();
        // Low key of slot 2: startblock 32 -> 33.
        put32(block_mut(&mut img, RMAP_ROOT), 56 + 40, 33);
        resum(&mut img, RMAP_ROOT);
        let (_, rep) = walk_all(img, &rmap_root());
        assert!(
            rep.problems
                .iter()
                .any(|p| p.contains("key 2 is (33,")
                    && p.contains("its child (block 8) starts at (32,")),
            "{:?}",
            rep.problems
        );
    }

    #[test]
    fn out_of_range_heights_and_pointers_are_not_read() {
        let mut root = rmap_root();
        root.levels = 50;
        let (_, rep) = walk_all(head(), &root);
        assert_eq!(rep.blocks, 0);
        assert!(rep.problems[0].contains("height 50 is not 1 to 9"));
        let mut root = rmap_root();
        root.root = AgBlock(1);
        let (_, rep) = walk_all(head(), &root);
        assert!(rep.problems[0].contains("outside the AG's usable blocks 2..16384"));
        let mut root = rmap_root();
        root.root = AgBlock(NULLAGBLOCK);
        let (_, rep) = walk_all(head(), &root);
        assert!(rep.problems[0].contains("NULLAGBLOCK"));
        // Inside the AG but past the end of this truncated image.
        let mut root = rmap_root();
        root.root = AgBlock(5000);
        let (_, rep) = walk_all(head(), &root);
        assert!(
            rep.problems[0].contains("beyond the end of the image"),
            "{:?}",
            rep.problems
        );
    }

    #[test]
    fn every_byte_flip_of_node_and_leaf_parses_without_panic() {
        let img = head();
        for agbno in [RMAP_ROOT, RMAP_LEAVES[0]] {
            let o = agbno as usize * BS;
            for i in 0..BS {
                for bit in [0x01u8, 0x80, 0xff] {
                    let mut b = img[o..o + BS].to_vec();
                    b[i] ^= bit;
                    for tree in AgTree::ALL {
                        for v5 in [true, false] {
                            let ctx = BlockCtx {
                                v5,
                                sparse_inodes: v5,
                                blocksize: 1024,
                                meta_uuid: [0; 16],
                                agno: AgNumber(0),
                            };
                            if let Ok(blk) = parse_block(&b, tree, &ctx, AgBlock(agbno), Daddr(0)) {
                                if let BlockContent::Leaf(recs) = &blk.content {
                                    for r in recs {
                                        let _ = (r.low(tree), r.high(tree));
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn short_and_v4_only_inputs() {
        let ctx = BlockCtx {
            v5: false,
            sparse_inodes: false,
            blocksize: 1024,
            meta_uuid: [0; 16],
            agno: AgNumber(0),
        };
        assert!(parse_block(&[0u8; 10], AgTree::Bno, &ctx, AgBlock(3), Daddr(6)).is_err());
        let mut b = vec![0u8; 1024];
        b[..4].copy_from_slice(&XFS_RMAP_CRC_MAGIC.to_be_bytes());
        let e = parse_block(&b, AgTree::Rmap, &ctx, AgBlock(3), Daddr(6))
            .unwrap_err()
            .to_string();
        assert!(e.contains("only exists on v5"), "{e}");
    }

    #[test]
    fn sparse_inode_records_decode_holes_and_free_inodes() {
        // startino 128, holemask 0xff00 (inodes 32..63 are a hole), 32
        // inodes present, 30 free (0..29).
        let mut b = [0u8; 16];
        b[0..4].copy_from_slice(&128u32.to_be_bytes());
        b[4..6].copy_from_slice(&0xff00u16.to_be_bytes());
        b[6] = 32;
        b[7] = 30;
        let free = 0xffff_ffff_0000_0000u64 | ((1u64 << 30) - 1);
        b[8..16].copy_from_slice(&free.to_be_bytes());
        let Some(Record::Inobt(r)) = decode_rec(AgTree::Ino, &b, true) else {
            panic!()
        };
        assert_eq!(
            (r.startino, r.holemask, r.count, r.freecount),
            (128, 0xff00, 32, 30)
        );
        assert_eq!(r.present(), 32);
        assert_eq!(r.free_present(), 30);
        assert_eq!(r.slot(0), InodeSlot::Free);
        assert_eq!(r.slot(30), InodeSlot::Used);
        assert_eq!(r.slot(32), InodeSlot::Hole);
        let slots: Vec<_> = r.slots().collect();
        assert_eq!(slots.len(), 64);
        assert_eq!(slots[31], (159, InodeSlot::Used));
        // The same bytes in the full-chunk form: freecount is the u32 at 4.
        let Some(Record::Inobt(f)) = decode_rec(AgTree::Ino, &b, false) else {
            panic!()
        };
        assert_eq!(f.freecount, 0xff00_201e);
        assert_eq!(f.count, 64);
    }

    #[test]
    fn refcount_cow_flag_and_rmap_flags_decode() {
        let mut b = [0u8; 24];
        b[0..4].copy_from_slice(&(XFS_REFC_COWFLAG | 77).to_be_bytes());
        b[4..8].copy_from_slice(&5u32.to_be_bytes());
        b[8..12].copy_from_slice(&1u32.to_be_bytes());
        let Some(Record::Refcount(c)) = decode_rec(AgTree::Refcount, &b, false) else {
            panic!()
        };
        assert_eq!(
            (c.startblock, c.cow, c.blockcount, c.refcount),
            (77, true, 5, 1)
        );
        let off = XFS_RMAP_OFF_ATTR_FORK | XFS_RMAP_OFF_UNWRITTEN | 12345;
        b[8..16].copy_from_slice(&131u64.to_be_bytes());
        b[16..24].copy_from_slice(&off.to_be_bytes());
        let Some(Record::Rmap(m)) = decode_rec(AgTree::Rmap, &b, false) else {
            panic!()
        };
        assert!(m.attr_fork && m.unwritten && !m.bmbt_block);
        assert_eq!((m.owner, m.offset), (131, 12345));
        assert_eq!(owner_name(m.owner), None);
    }

    #[test]
    fn tree_names() {
        for t in AgTree::ALL {
            assert_eq!(AgTree::from_name(t.name()), Some(t));
            assert_eq!(AgTree::from_name(t.btree_name()), Some(t));
        }
        assert_eq!(AgTree::from_name("refcnt"), Some(AgTree::Refcount));
        assert_eq!(AgTree::from_name("nope"), None);
        // maxrecs from the kernel's formulas: 4 KiB v5 bnobt leaf (4096-56)/8.
        assert_eq!(maxrecs(AgTree::Bno, 4096, true, true), 505);
        assert_eq!(maxrecs(AgTree::Bno, 4096, true, false), 336);
        assert_eq!(maxrecs(AgTree::Rmap, 1024, true, false), 22);
        assert_eq!(maxrecs(AgTree::Ino, 512, false, true), 31);
    }
}
