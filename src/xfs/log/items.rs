//! Log items: the regions of a transaction grouped by each item's own
//! region count, decoded in the writer's byte order.
//!
//! ```text
//!  region 0  format structure: {u16 type, u16 size (regions), ...} host order
//!  region 1.. data: buffer chunks, inode core and forks, names, values ...
//! ```
//!
//! Intents (EFI, RUI, CUI, BUI, ATTRI, XMI) promise work that done items
//! (EFD, RUD, CUD, BUD, ATTRD, XMD) record as finished, matched by id.
//! [`pair_intents`] links them; an intent with no done item in the live log
//! is work recovery must finish.

use super::bitmap::{fit_regions, runs, Run};
use super::ItemContext;
use crate::xfs::format::log::*;
use serde::{Serialize, Serializer};
use std::collections::HashMap;
use zerocopy::byteorder::{BigEndian, ByteOrder, LittleEndian};
use zerocopy::FromBytes;

/// The byte order of the host that wrote the log items.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    Little,
    Big,
}

impl Order {
    /// From `h_fmt`; IRIX and unknown writers were big-endian.
    pub fn of_fmt(fmt: u32) -> Order {
        if fmt == XLOG_FMT_LINUX_LE {
            Order::Little
        } else {
            Order::Big
        }
    }

    pub fn u16(self, b: &[u8], off: usize) -> Option<u16> {
        let a: [u8; 2] = b.get(off..off.checked_add(2)?)?.try_into().ok()?;
        Some(match self {
            Order::Little => u16::from_le_bytes(a),
            Order::Big => u16::from_be_bytes(a),
        })
    }

    pub fn u32(self, b: &[u8], off: usize) -> Option<u32> {
        let a: [u8; 4] = b.get(off..off.checked_add(4)?)?.try_into().ok()?;
        Some(match self {
            Order::Little => u32::from_le_bytes(a),
            Order::Big => u32::from_be_bytes(a),
        })
    }
}

/// An item type (`XFS_LI_*`); open, so unknown codes are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ItemKind(pub u16);

impl ItemKind {
    /// The short name used in JSON (`buf`, `inode`, `efi`, ...).
    pub fn name(self) -> &'static str {
        match self.0 {
            XFS_LI_BUF => "buf",
            XFS_LI_INODE => "inode",
            XFS_LI_ICREATE => "icreate",
            XFS_LI_EFI => "efi",
            XFS_LI_EFD => "efd",
            XFS_LI_RUI => "rui",
            XFS_LI_RUD => "rud",
            XFS_LI_CUI => "cui",
            XFS_LI_CUD => "cud",
            XFS_LI_BUI => "bui",
            XFS_LI_BUD => "bud",
            XFS_LI_ATTRI => "attri",
            XFS_LI_ATTRD => "attrd",
            XFS_LI_XMI => "xmi",
            XFS_LI_XMD => "xmd",
            XFS_LI_DQUOT => "dquot",
            XFS_LI_QUOTAOFF => "quotaoff",
            XFS_LI_EFI_RT => "efi_rt",
            XFS_LI_EFD_RT => "efd_rt",
            XFS_LI_RUI_RT => "rui_rt",
            XFS_LI_RUD_RT => "rud_rt",
            XFS_LI_CUI_RT => "cui_rt",
            XFS_LI_CUD_RT => "cud_rt",
            XFS_LI_IUNLINK => "iunlink",
            _ => "unknown",
        }
    }

    /// For a done item, the type of the intent it completes.
    pub fn intent_of_done(self) -> Option<ItemKind> {
        let i = match self.0 {
            XFS_LI_EFD => XFS_LI_EFI,
            XFS_LI_EFD_RT => XFS_LI_EFI_RT,
            XFS_LI_RUD => XFS_LI_RUI,
            XFS_LI_RUD_RT => XFS_LI_RUI_RT,
            XFS_LI_CUD => XFS_LI_CUI,
            XFS_LI_CUD_RT => XFS_LI_CUI_RT,
            XFS_LI_BUD => XFS_LI_BUI,
            XFS_LI_ATTRD => XFS_LI_ATTRI,
            XFS_LI_XMD => XFS_LI_XMI,
            _ => return None,
        };
        Some(ItemKind(i))
    }

    /// For an intent, the type of the done item that completes it.
    pub fn done_kind(self) -> Option<ItemKind> {
        let d = match self.0 {
            XFS_LI_EFI => XFS_LI_EFD,
            XFS_LI_EFI_RT => XFS_LI_EFD_RT,
            XFS_LI_RUI => XFS_LI_RUD,
            XFS_LI_RUI_RT => XFS_LI_RUD_RT,
            XFS_LI_CUI => XFS_LI_CUD,
            XFS_LI_CUI_RT => XFS_LI_CUD_RT,
            XFS_LI_BUI => XFS_LI_BUD,
            XFS_LI_ATTRI => XFS_LI_ATTRD,
            XFS_LI_XMI => XFS_LI_XMD,
            _ => return None,
        };
        Some(ItemKind(d))
    }

    pub fn is_intent(self) -> bool {
        matches!(
            self.0,
            XFS_LI_EFI
                | XFS_LI_EFI_RT
                | XFS_LI_RUI
                | XFS_LI_RUI_RT
                | XFS_LI_CUI
                | XFS_LI_CUI_RT
                | XFS_LI_BUI
                | XFS_LI_ATTRI
                | XFS_LI_XMI
        )
    }
}

impl Serialize for ItemKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Name of a buffer type (`blf_flags >> 11`).
pub fn buf_type_name(t: u8) -> &'static str {
    match t {
        XFS_BLFT_UNKNOWN_BUF => "unknown",
        XFS_BLFT_UDQUOT_BUF => "udquot",
        XFS_BLFT_PDQUOT_BUF => "pdquot",
        XFS_BLFT_GDQUOT_BUF => "gdquot",
        XFS_BLFT_BTREE_BUF => "btree",
        XFS_BLFT_AGF_BUF => "agf",
        XFS_BLFT_AGFL_BUF => "agfl",
        XFS_BLFT_AGI_BUF => "agi",
        XFS_BLFT_DINO_BUF => "dinode",
        XFS_BLFT_SYMLINK_BUF => "symlink",
        XFS_BLFT_DIR_BLOCK_BUF => "dir_block",
        XFS_BLFT_DIR_DATA_BUF => "dir_data",
        XFS_BLFT_DIR_FREE_BUF => "dir_free",
        XFS_BLFT_DIR_LEAF1_BUF => "dir_leaf1",
        XFS_BLFT_DIR_LEAFN_BUF => "dir_leafn",
        XFS_BLFT_DA_NODE_BUF => "da_node",
        XFS_BLFT_ATTR_LEAF_BUF => "attr_leaf",
        XFS_BLFT_ATTR_RMT_BUF => "attr_rmt",
        XFS_BLFT_SB_BUF => "sb",
        XFS_BLFT_RTBITMAP_BUF => "rtbitmap",
        XFS_BLFT_RTSUMMARY_BUF => "rtsummary",
        _ => "other",
    }
}

/// A short list of u32 (bitmap words) kept inline when it has at most 3
/// entries: the list takes 16 bytes.
#[derive(Clone, PartialEq, Eq)]
pub enum SmallU32s {
    Inline(u8, [u32; 3]),
    Heap(Box<Vec<u32>>),
}

impl SmallU32s {
    pub fn from_slice(v: &[u32]) -> SmallU32s {
        if v.len() <= 3 {
            let mut a = [0u32; 3];
            for (d, s) in a.iter_mut().zip(v) {
                *d = *s;
            }
            SmallU32s::Inline(u8::try_from(v.len()).unwrap_or(0), a)
        } else {
            SmallU32s::Heap(Box::new(v.to_vec()))
        }
    }
}

impl From<Vec<u32>> for SmallU32s {
    fn from(v: Vec<u32>) -> SmallU32s {
        SmallU32s::from_slice(&v)
    }
}

impl std::ops::Deref for SmallU32s {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        match self {
            SmallU32s::Inline(n, a) => a.get(..usize::from(*n)).unwrap_or(&[]),
            SmallU32s::Heap(b) => b,
        }
    }
}

/// Region lengths in 16 bytes: up to six multiples of 4 below 256 KiB
/// (what region lengths almost always are, being padded to 4 bytes) kept
/// inline, anything else on the heap.
#[derive(Clone, PartialEq, Eq)]
pub enum RegionLens {
    /// `n` lengths, each stored divided by 4.
    Inline(u8, [u16; 6]),
    Heap(Box<Vec<u32>>),
}

/// The lengths of a [`RegionLens`] as a slice.
pub enum LensView<'a> {
    Inline(usize, [u32; 6]),
    Heap(&'a [u32]),
}

impl std::ops::Deref for LensView<'_> {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        match self {
            LensView::Inline(n, a) => a.get(..*n).unwrap_or(&[]),
            LensView::Heap(s) => s,
        }
    }
}

impl RegionLens {
    pub fn from_slice(v: &[u32]) -> RegionLens {
        let fits = v.len() <= 6 && v.iter().all(|x| x % 4 == 0 && x / 4 <= u32::from(u16::MAX));
        if fits {
            let mut a = [0u16; 6];
            for (d, s) in a.iter_mut().zip(v) {
                *d = u16::try_from(s / 4).unwrap_or(0);
            }
            RegionLens::Inline(u8::try_from(v.len()).unwrap_or(0), a)
        } else {
            RegionLens::Heap(Box::new(v.to_vec()))
        }
    }

    /// The lengths as a slice (inline ones unpacked on the stack).
    pub fn view(&self) -> LensView<'_> {
        match self {
            RegionLens::Inline(n, a) => {
                let mut out = [0u32; 6];
                for (d, s) in out.iter_mut().zip(a) {
                    *d = u32::from(*s).saturating_mul(4);
                }
                LensView::Inline(usize::from(*n).min(6), out)
            }
            RegionLens::Heap(b) => LensView::Heap(b),
        }
    }
}

impl std::fmt::Debug for RegionLens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.view().iter()).finish()
    }
}

impl Serialize for RegionLens {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.view().iter())
    }
}

impl std::fmt::Debug for SmallU32s {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for SmallU32s {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

/// Where an item is: transaction index (in commit order) and item index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ItemRef {
    pub transaction: u32,
    pub item: u32,
}

/// One log item.
#[derive(Clone, Debug)]
pub struct Item {
    pub kind: ItemKind,
    /// Regions received.
    pub regions: u16,
    /// Regions the item says it has (its format structure's size field).
    pub declared: u16,
    /// Byte length of every region, format region first.
    pub region_lens: RegionLens,
    pub body: ItemBody,
}

/// A directory entry or free space found in the logged bytes of a
/// directory data block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DirEntryRef {
    pub offset: u32,
    pub len: u32,
    /// `None` for free space.
    pub name: Option<Box<str>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufItem {
    /// Daddr of the buffer (or of this segment of a discontiguous buffer).
    pub blkno: i64,
    /// Length in 512-byte blocks.
    pub len: u16,
    /// `blf_flags` as logged (type in the top 5 bits).
    pub flags: u16,
    pub buf_type: u8,
    pub map_size: u32,
    /// The dirty bitmap words present in the item.
    pub map: SmallU32s,
    /// Entries found in logged directory data, when asked for.
    pub dir_entries: Option<Box<Vec<DirEntryRef>>>,
    /// Where this item's buffer lies in a directory block logged as
    /// several segments (a directory block made of discontiguous extents).
    pub segment: Segment,
    /// The block's header as logged in this item (when its first chunk
    /// is), for naming what the runs of btree and da blocks cover.
    pub head: Option<BlockHead>,
}

/// The btree block magics this reader knows (v5, then v4 where there is
/// one).
pub const BTREE_MAGICS: [u32; 14] = [
    0x4142_3342,
    0x4142_5442,
    0x4142_3343,
    0x4142_5443,
    0x4941_4233,
    0x4941_4254,
    0x4649_4233,
    0x4649_4254,
    0x524d_4233,
    0x5233_4643,
    0x424d_4133,
    0x424d_4150,
    0x4d41_5052,
    0x5243_4e54,
];

/// What a block's logged header says about its layout, in 4 bytes (it
/// lives in the padding of [`BufItem`], so items stay as small as they
/// were).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHead {
    /// Which btree magic (1 + its index in [`BTREE_MAGICS`]; 0 for
    /// other blocks: their buffer type says what they are, or a magic this
    /// reader does not know).
    pub kind: u8,
    /// Btree or da node level (levels above 255 read as 255).
    pub level: u8,
    /// Records or keys in use (btree `bb_numrecs`, da `count`, dir free
    /// `nvalid`, at most 65535).
    pub count: u16,
}

impl BlockHead {
    /// The btree block's magic, when it is one this reader knows.
    pub fn magic(&self) -> Option<u32> {
        BTREE_MAGICS
            .get(usize::from(self.kind).checked_sub(1)?)
            .copied()
    }
}

impl Serialize for BlockHead {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        if let Some(magic) = self.magic() {
            m.serialize_entry("magic", &magic)?;
        }
        m.serialize_entry("level", &self.level)?;
        m.serialize_entry("count", &self.count)?;
        m.end()
    }
}

/// The header of a btree, da or directory free block from the logged bytes
/// of its first chunk (`first`: the first data region, when the bitmap's
/// first bit is set).
fn block_head(buf_type: u8, first: &[u8], v5: bool) -> Option<BlockHead> {
    let be16 = |o: usize| -> Option<u16> {
        Some(u16::from_be_bytes(
            first.get(o..o.checked_add(2)?)?.try_into().ok()?,
        ))
    };
    let be32 = |o: usize| -> Option<u32> {
        Some(u32::from_be_bytes(
            first.get(o..o.checked_add(4)?)?.try_into().ok()?,
        ))
    };
    // Offsets after xfs_da3_blkinfo (56 bytes) or xfs_da_blkinfo (12).
    let da: usize = if v5 { 56 } else { 12 };
    let level = |l: u16| u8::try_from(l).unwrap_or(u8::MAX);
    match buf_type {
        XFS_BLFT_BTREE_BUF => {
            let magic = be32(0)?;
            let kind = BTREE_MAGICS
                .iter()
                .position(|m| *m == magic)
                .and_then(|i| u8::try_from(i.checked_add(1)?).ok())?;
            Some(BlockHead {
                kind,
                level: level(be16(4)?),
                count: be16(6)?,
            })
        }
        XFS_BLFT_DA_NODE_BUF => Some(BlockHead {
            kind: 0,
            level: level(be16(da.checked_add(2)?)?),
            count: be16(da)?,
        }),
        XFS_BLFT_DIR_LEAF1_BUF | XFS_BLFT_DIR_LEAFN_BUF | XFS_BLFT_ATTR_LEAF_BUF => {
            Some(BlockHead {
                kind: 0,
                level: 0,
                count: be16(da)?,
            })
        }
        XFS_BLFT_DIR_FREE_BUF => Some(BlockHead {
            kind: 0,
            level: 0,
            count: u16::try_from(be32(if v5 { 52 } else { 8 })?).unwrap_or(u16::MAX),
        }),
        _ => None,
    }
}

/// The place of a buffer item in its directory block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Segment {
    /// The item covers its whole buffer.
    Whole,
    /// One segment of a discontiguous directory block, starting this many
    /// bytes into the block.
    Part(u32),
    /// A segment of a discontiguous directory block whose place could not
    /// be told (its neighbours were not logged in the same checkpoint).
    Unknown,
}

/// Whether buffers of this type are directory blocks (which may be
/// discontiguous).
pub fn is_dir_buf(t: u8) -> bool {
    matches!(
        t,
        XFS_BLFT_DIR_BLOCK_BUF
            | XFS_BLFT_DIR_DATA_BUF
            | XFS_BLFT_DIR_FREE_BUF
            | XFS_BLFT_DIR_LEAF1_BUF
            | XFS_BLFT_DIR_LEAFN_BUF
            | XFS_BLFT_DA_NODE_BUF
    )
}

impl BufItem {
    pub fn cancel(&self) -> bool {
        self.flags & XFS_BLF_CANCEL != 0
    }
    pub fn runs(&self) -> Vec<Run> {
        runs(&self.map)
    }
}

/// The inode core as logged, host order converted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogDinodeCore {
    pub magic: u16,
    pub mode: u16,
    pub version: u8,
    pub format: u8,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u32,
    pub size: u64,
    pub nblocks: u64,
    pub extsize: u32,
    pub nextents: u64,
    pub anextents: u32,
    pub forkoff: u8,
    pub aformat: u8,
    pub flags: u16,
    pub gen: u32,
    /// Timestamps in the on-disk encoding (seconds << 32 | nanoseconds,
    /// or a bigtime count of nanoseconds), whatever the log's byte order.
    pub atime: u64,
    pub mtime: u64,
    pub ctime: u64,
    /// Only in v3 cores.
    pub flags2: Option<u64>,
    /// `di_changecount` (v3): raised once by every transaction that logs
    /// the core.
    pub changecount: Option<u64>,
    /// `di_lsn` (v3): the LSN the core was last written to disk with.
    pub lsn: Option<u64>,
    /// `di_crtime` (v3), in the on-disk encoding.
    pub crtime: Option<u64>,
    pub ino: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InodeItem {
    pub ino: u64,
    /// `ilf_fields` (`XFS_ILOG_*`).
    pub fields: u32,
    pub dsize: u16,
    pub asize: u16,
    /// Daddr and length (blocks) of the inode cluster buffer.
    pub blkno: i64,
    pub cluster_len: i32,
    pub boffset: i32,
    /// Device number with XFS_ILOG_DEV.
    pub rdev: Option<u32>,
    /// 56 (64-bit layout) or 52 (32-bit layout).
    pub format_len: u8,
    /// The logged core, when details were asked for.
    pub core: Option<Box<LogDinodeCore>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct IcreateItem {
    pub ag: u32,
    pub agbno: u32,
    pub count: u32,
    pub isize: u32,
    pub length: u32,
    pub gen: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FreeExtent {
    /// AG-packed start block (rt block for the RT variants).
    pub start: u64,
    pub len: u32,
}

/// EFI or EFD (and their RT variants).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ExtentFreeItem {
    /// EFI: its id; EFD: the id of the EFI it completes.
    pub id: u64,
    pub nextents: u32,
    /// 64 or 32: which extent layout the region holds.
    pub extent_bits: u32,
    pub extents: Box<[FreeExtent]>,
    #[serde(skip)]
    pub link: Option<ItemRef>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct MapExtent {
    pub owner: u64,
    pub startblock: u64,
    pub startoff: u64,
    pub len: u32,
    pub flags: u32,
    /// The operation (low byte of the flags) in words.
    pub op: &'static str,
}

/// RUI or BUI.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MapIntentItem {
    pub id: u64,
    pub nextents: u32,
    pub extents: Box<[MapExtent]>,
    #[serde(skip)]
    pub link: Option<ItemRef>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PhysExtent {
    pub startblock: u64,
    pub len: u32,
    pub flags: u32,
    pub op: &'static str,
}

/// CUI.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RefcountIntentItem {
    pub id: u64,
    pub nextents: u32,
    pub extents: Box<[PhysExtent]>,
    #[serde(skip)]
    pub link: Option<ItemRef>,
}

/// RUD, CUD, BUD, ATTRD, XMD: the id of the intent they complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DoneItem {
    pub id: u64,
    #[serde(skip)]
    pub link: Option<ItemRef>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AttriItem {
    pub id: u64,
    pub ino: u64,
    pub igen: u32,
    pub op_flags: u32,
    pub op: &'static str,
    pub name_len: u32,
    /// PPTR_REPLACE only.
    pub new_name_len: Option<u32>,
    pub value_len: u32,
    pub attr_filter: u32,
    /// The name, lossily as text, cut at 256 bytes.
    pub name: Option<String>,
    #[serde(skip)]
    pub link: Option<ItemRef>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct XmiItem {
    pub id: u64,
    pub inode1: u64,
    pub inode2: u64,
    pub igen1: u32,
    pub igen2: u32,
    pub startoff1: u64,
    pub startoff2: u64,
    pub blockcount: u64,
    pub flags: u64,
    pub isize1: i64,
    pub isize2: i64,
    #[serde(skip)]
    pub link: Option<ItemRef>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DquotItem {
    pub id: u32,
    pub blkno: i64,
    /// Dquot buffer length in filesystem blocks.
    pub len: i32,
    pub boffset: u32,
    /// `d_type` of the logged dquot (1 user, 2 project, 4 group), if present.
    pub dq_type: Option<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct QuotaoffItem {
    pub flags: u32,
}

/// What an item says, by type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ItemBody {
    Buf(BufItem),
    Inode(InodeItem),
    Icreate(IcreateItem),
    ExtentFree(ExtentFreeItem),
    MapIntent(MapIntentItem),
    RefcountIntent(RefcountIntentItem),
    Done(DoneItem),
    Attri(Box<AttriItem>),
    Xmi(Box<XmiItem>),
    Dquot(DquotItem),
    Quotaoff(QuotaoffItem),
    /// An item type this reader does not decode.
    Unknown,
    /// The format region could not be decoded.
    Corrupt(String),
}

impl Item {
    /// The intent or done id, for the intent/done kinds.
    pub fn intent_id(&self) -> Option<u64> {
        match &self.body {
            ItemBody::ExtentFree(e) => Some(e.id),
            ItemBody::MapIntent(m) => Some(m.id),
            ItemBody::RefcountIntent(r) => Some(r.id),
            ItemBody::Done(d) => Some(d.id),
            ItemBody::Attri(a) => Some(a.id),
            ItemBody::Xmi(x) => Some(x.id),
            _ => None,
        }
    }

    /// For an intent, its done item; for a done item, its intent (set by
    /// [`pair_intents`]).
    pub fn link(&self) -> Option<ItemRef> {
        match &self.body {
            ItemBody::ExtentFree(e) => e.link,
            ItemBody::MapIntent(m) => m.link,
            ItemBody::RefcountIntent(r) => r.link,
            ItemBody::Done(d) => d.link,
            ItemBody::Attri(a) => a.link,
            ItemBody::Xmi(x) => x.link,
            _ => None,
        }
    }

    fn set_link(&mut self, to: ItemRef) {
        let slot = match &mut self.body {
            ItemBody::ExtentFree(e) => &mut e.link,
            ItemBody::MapIntent(m) => &mut m.link,
            ItemBody::RefcountIntent(r) => &mut r.link,
            ItemBody::Done(d) => &mut d.link,
            ItemBody::Attri(a) => &mut a.link,
            ItemBody::Xmi(x) => &mut x.link,
            _ => return,
        };
        *slot = Some(to);
    }

    /// Bytes of all regions.
    pub fn bytes(&self) -> u64 {
        self.region_lens.view().iter().map(|l| u64::from(*l)).sum()
    }

    /// A problem with the item, if any (corrupt format, regions missing,
    /// bitmap and regions disagreeing).
    pub fn problem(&self) -> Option<String> {
        if let ItemBody::Corrupt(m) = &self.body {
            return Some(m.clone());
        }
        if self.regions != self.declared {
            return Some(format!(
                "{} of {} regions present",
                self.regions, self.declared
            ));
        }
        if let ItemBody::Buf(b) = &self.body {
            let lens = self.region_lens.view();
            return fit_regions(&b.map, lens.get(1..).unwrap_or(&[])).problem;
        }
        None
    }
}

fn rmap_op(flags: u32) -> &'static str {
    match flags & XFS_RMAP_EXTENT_TYPE_MASK {
        1 => "map",
        2 => "map_shared",
        3 => "unmap",
        4 => "unmap_shared",
        5 => "convert",
        6 => "convert_shared",
        7 => "alloc",
        8 => "free",
        _ => "unknown",
    }
}

fn bmap_op(flags: u32) -> &'static str {
    match flags & 0xff {
        1 => "map",
        2 => "unmap",
        _ => "unknown",
    }
}

fn refcount_op(flags: u32) -> &'static str {
    match flags & 0xff {
        1 => "increase",
        2 => "decrease",
        3 => "alloc_cow",
        4 => "free_cow",
        _ => "unknown",
    }
}

fn attri_op(flags: u32) -> &'static str {
    match flags & 0xff {
        1 => "set",
        2 => "remove",
        3 => "replace",
        4 => "pptr_set",
        5 => "pptr_remove",
        6 => "pptr_replace",
        _ => "unknown",
    }
}

/// Decode one item from its regions.
pub fn decode_item(regions: &[Vec<u8>], declared: u16, order: Order, ctx: &ItemContext) -> Item {
    let lens: Vec<u32> = regions
        .iter()
        .map(|r| u32::try_from(r.len()).unwrap_or(u32::MAX))
        .collect();
    decode_item_lens(regions, &lens, declared, order, ctx)
}

/// Whether decoding an item of this type looks at its regions after the
/// format region (the walk keeps only the lengths of the others).
pub fn needs_data(format: &[u8], order: Order, ctx: &ItemContext) -> bool {
    let kind = order.u16(format, 0).unwrap_or(0);
    match kind {
        XFS_LI_ATTRI | XFS_LI_DQUOT => true,
        XFS_LI_BUF => {
            let t = u8::try_from(order.u16(format, 4).unwrap_or(0) >> XFS_BLFT_SHIFT).unwrap_or(0);
            // Directory data for entry names; btree and da blocks for the
            // header that says how their runs read.
            ctx.dir_names
                && matches!(
                    t,
                    XFS_BLFT_DIR_DATA_BUF
                        | XFS_BLFT_DIR_BLOCK_BUF
                        | XFS_BLFT_BTREE_BUF
                        | XFS_BLFT_DIR_FREE_BUF
                        | XFS_BLFT_DIR_LEAF1_BUF
                        | XFS_BLFT_DIR_LEAFN_BUF
                        | XFS_BLFT_DA_NODE_BUF
                        | XFS_BLFT_ATTR_LEAF_BUF
                )
        }
        XFS_LI_INODE => ctx.inode_cores,
        _ => false,
    }
}

/// Decode one item whose region lengths are `lens`; `regions` holds the
/// bytes of the format region and, where [`needs_data`] says so, of the
/// others (empty otherwise).
pub fn decode_item_lens(
    regions: &[Vec<u8>],
    lens: &[u32],
    declared: u16,
    order: Order,
    ctx: &ItemContext,
) -> Item {
    decode_item_seg(regions, lens, declared, order, ctx, Segment::Whole)
}

/// [`decode_item_lens`] for a buffer item whose place in its directory
/// block is `segment`.
pub fn decode_item_seg(
    regions: &[Vec<u8>],
    lens: &[u32],
    declared: u16,
    order: Order,
    ctx: &ItemContext,
    segment: Segment,
) -> Item {
    let r0: &[u8] = regions.first().map(Vec::as_slice).unwrap_or(&[]);
    let kind = ItemKind(order.u16(r0, 0).unwrap_or(0));
    let body = match order {
        Order::Little => decode_body::<LittleEndian>(kind, regions, ctx, segment),
        Order::Big => decode_body::<BigEndian>(kind, regions, ctx, segment),
    };
    let body = body.unwrap_or_else(ItemBody::Corrupt);
    Item {
        kind,
        regions: u16::try_from(lens.len()).unwrap_or(u16::MAX),
        declared,
        region_lens: RegionLens::from_slice(lens),
        body,
    }
}

fn short(what: &str, need: usize, have: usize) -> String {
    format!("{what} format region is {have} bytes, needs {need}")
}

fn read<'b, T: FromBytes + zerocopy::KnownLayout + zerocopy::Immutable>(
    r: &'b [u8],
    what: &str,
) -> Result<&'b T, String> {
    T::ref_from_prefix(r)
        .map(|(t, _)| t)
        .map_err(|_| short(what, core::mem::size_of::<T>(), r.len()))
}

fn decode_body<O: ByteOrder>(
    kind: ItemKind,
    regions: &[Vec<u8>],
    ctx: &ItemContext,
    segment: Segment,
) -> Result<ItemBody, String> {
    let r0: &[u8] = regions.first().map(Vec::as_slice).unwrap_or(&[]);
    let r1: Option<&[u8]> = regions.get(1).map(Vec::as_slice);
    Ok(match kind.0 {
        XFS_LI_BUF => ItemBody::Buf(decode_buf::<O>(r0, regions, ctx, segment)?),
        XFS_LI_INODE => ItemBody::Inode(decode_inode::<O>(r0, r1.filter(|_| ctx.inode_cores))?),
        XFS_LI_ICREATE => {
            let f: &XfsIcreateLog<O> = read(r0, "icreate")?;
            ItemBody::Icreate(IcreateItem {
                ag: f.icl_ag.get(),
                agbno: f.icl_agbno.get(),
                count: f.icl_count.get(),
                isize: f.icl_isize.get(),
                length: f.icl_length.get(),
                gen: f.icl_gen.get(),
            })
        }
        XFS_LI_EFI | XFS_LI_EFD | XFS_LI_EFI_RT | XFS_LI_EFD_RT => {
            ItemBody::ExtentFree(decode_extent_free::<O>(r0)?)
        }
        XFS_LI_RUI | XFS_LI_RUI_RT | XFS_LI_BUI => {
            let h: &XfsRuiLogFormat<O> = read(r0, kind.name())?;
            let n = h.rui_nextents.get();
            let rest = r0.get(16..).unwrap_or(&[]);
            let want = usize::try_from(n).unwrap_or(usize::MAX).saturating_mul(32);
            if rest.len() != want {
                return Err(format!(
                    "{} of {n} extents should be {} bytes, is {}",
                    kind.name(),
                    want.saturating_add(16),
                    r0.len()
                ));
            }
            let bmap = kind.0 == XFS_LI_BUI;
            let extents = rest
                .chunks_exact(32)
                .filter_map(|c| XfsMapExtent::<O>::ref_from_bytes(c).ok())
                .map(|e| {
                    let flags = e.me_flags.get();
                    MapExtent {
                        owner: e.me_owner.get(),
                        startblock: e.me_startblock.get(),
                        startoff: e.me_startoff.get(),
                        len: e.me_len.get(),
                        flags,
                        op: if bmap { bmap_op(flags) } else { rmap_op(flags) },
                    }
                })
                .collect();
            ItemBody::MapIntent(MapIntentItem {
                id: h.rui_id.get(),
                nextents: n,
                extents,
                link: None,
            })
        }
        XFS_LI_CUI | XFS_LI_CUI_RT => {
            let h: &XfsRuiLogFormat<O> = read(r0, kind.name())?;
            let n = h.rui_nextents.get();
            let rest = r0.get(16..).unwrap_or(&[]);
            let want = usize::try_from(n).unwrap_or(usize::MAX).saturating_mul(16);
            if rest.len() != want {
                return Err(format!(
                    "cui of {n} extents should be {} bytes, is {}",
                    want.saturating_add(16),
                    r0.len()
                ));
            }
            let extents = rest
                .chunks_exact(16)
                .filter_map(|c| XfsPhysExtent::<O>::ref_from_bytes(c).ok())
                .map(|e| {
                    let flags = e.pe_flags.get();
                    PhysExtent {
                        startblock: e.pe_startblock.get(),
                        len: e.pe_len.get(),
                        flags,
                        op: refcount_op(flags),
                    }
                })
                .collect();
            ItemBody::RefcountIntent(RefcountIntentItem {
                id: h.rui_id.get(),
                nextents: n,
                extents,
                link: None,
            })
        }
        XFS_LI_RUD | XFS_LI_RUD_RT | XFS_LI_CUD | XFS_LI_CUD_RT | XFS_LI_BUD | XFS_LI_ATTRD
        | XFS_LI_XMD => {
            let d: &XfsRudLogFormat<O> = read(r0, kind.name())?;
            ItemBody::Done(DoneItem {
                id: d.rud_rui_id.get(),
                link: None,
            })
        }
        XFS_LI_ATTRI => ItemBody::Attri(Box::new(decode_attri::<O>(r0, r1)?)),
        XFS_LI_XMI => {
            let x: &XfsXmiLogFormat<O> = read(r0, "xmi")?;
            ItemBody::Xmi(Box::new(XmiItem {
                id: x.xmi_id.get(),
                inode1: x.xmi_inode1.get(),
                inode2: x.xmi_inode2.get(),
                igen1: x.xmi_igen1.get(),
                igen2: x.xmi_igen2.get(),
                startoff1: x.xmi_startoff1.get(),
                startoff2: x.xmi_startoff2.get(),
                blockcount: x.xmi_blockcount.get(),
                flags: x.xmi_flags.get(),
                isize1: x.xmi_isize1.get(),
                isize2: x.xmi_isize2.get(),
                link: None,
            }))
        }
        XFS_LI_DQUOT => {
            let q: &XfsDqLogformat<O> = read(r0, "dquot")?;
            ItemBody::Dquot(DquotItem {
                id: q.qlf_id.get(),
                blkno: q.qlf_blkno.get(),
                len: q.qlf_len.get(),
                boffset: q.qlf_boffset.get(),
                // xfs_disk_dquot: d_magic "DQ" @0, d_version @2, d_type @3.
                dq_type: r1
                    .filter(|d| d.get(..2) == Some(b"DQ".as_slice()))
                    .and_then(|d| d.get(3).copied()),
            })
        }
        XFS_LI_QUOTAOFF => {
            let q: &XfsQoffLogformat<O> = read(r0, "quotaoff")?;
            ItemBody::Quotaoff(QuotaoffItem {
                flags: q.qf_flags.get(),
            })
        }
        _ => ItemBody::Unknown,
    })
}

fn decode_buf<O: ByteOrder>(
    r0: &[u8],
    regions: &[Vec<u8>],
    ctx: &ItemContext,
    segment: Segment,
) -> Result<BufItem, String> {
    let f: &XfsBufLogFormat<O> = read(r0, "buffer")?;
    let map_size = f.blf_map_size.get();
    let words = usize::try_from(map_size).unwrap_or(usize::MAX);
    let have = r0.len().saturating_sub(20) / 4;
    if words > XFS_BLF_DATAMAP_SIZE {
        return Err(format!(
            "blf_map_size {map_size} is more than the {XFS_BLF_DATAMAP_SIZE} words a 64 KiB buffer needs"
        ));
    }
    if have < words {
        return Err(format!(
            "buffer format region is {} bytes, too short for blf_map_size {map_size}",
            r0.len()
        ));
    }
    let mut words_buf = [0u32; XFS_BLF_DATAMAP_SIZE];
    let mut n = 0usize;
    for (d, c) in words_buf
        .iter_mut()
        .zip(r0.get(20..).unwrap_or(&[]).chunks_exact(4).take(words))
    {
        if let Ok(w) = zerocopy::byteorder::U32::<O>::ref_from_bytes(c) {
            *d = w.get();
            n = n.saturating_add(1);
        }
    }
    let map = SmallU32s::from_slice(words_buf.get(..n).unwrap_or(&[]));
    let flags = f.blf_flags.get();
    let buf_type = u8::try_from(flags >> XFS_BLFT_SHIFT).unwrap_or(0);
    let mut b = BufItem {
        blkno: f.blf_blkno.get(),
        len: f.blf_len.get(),
        flags,
        buf_type,
        map_size,
        map,
        dir_entries: None,
        segment,
        head: None,
    };
    if b.map.first().is_some_and(|w| w & 1 != 0) && !b.cancel() {
        b.head = regions.get(1).and_then(|r| block_head(buf_type, r, ctx.v5));
    }
    if ctx.dir_names
        && matches!(buf_type, XFS_BLFT_DIR_DATA_BUF | XFS_BLFT_DIR_BLOCK_BUF)
        && !b.cancel()
    {
        b.dir_entries = Some(Box::new(dir_entries(&b, regions, ctx)));
    }
    Ok(b)
}

/// Entries and free space recognisable in the logged runs of a directory
/// data block: each ends in a 2-byte tag holding its own offset, which is
/// what makes a start found in the middle of the block trustworthy.
fn dir_entries(b: &BufItem, regions: &[Vec<u8>], ctx: &ItemContext) -> Vec<DirEntryRef> {
    let lens: Vec<u32> = regions
        .iter()
        .skip(1)
        .map(|r| u32::try_from(r.len()).unwrap_or(u32::MAX))
        .collect();
    let fit = fit_regions(&b.map, &lens);
    let hdr: u32 = if ctx.v5 { 64 } else { 16 };
    // Entry tags hold offsets in the directory block, so a segment's
    // entries are found at the segment's offset in the block.
    let base = match b.segment {
        Segment::Whole => 0,
        Segment::Part(o) => o,
        Segment::Unknown => return Vec::new(),
    };
    let mut out = Vec::new();
    // Glue the pieces of each run back together.
    let mut i = 0usize;
    while let Some(p) = fit.pieces.get(i) {
        let start = p.first.saturating_mul(XFS_BLF_CHUNK);
        let mut bytes: Vec<u8> = Vec::new();
        let mut end_chunk = p.first;
        while let Some(q) = fit.pieces.get(i) {
            if q.first != end_chunk {
                break;
            }
            let r = regions
                .get(usize::try_from(q.region).unwrap_or(usize::MAX))
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let n = usize::try_from(q.count.saturating_mul(XFS_BLF_CHUNK)).unwrap_or(0);
            bytes.extend_from_slice(r.get(..n).unwrap_or(r));
            end_chunk = q.first.saturating_add(q.count);
            i = i.saturating_add(1);
        }
        scan_dir_run(&bytes, base.saturating_add(start), hdr, ctx.ftype, &mut out);
        if out.len() > 4096 {
            break;
        }
    }
    out
}

/// Place the buffer items of a transaction that are segments of
/// discontiguous directory blocks: the kernel logs such a block as one item
/// per segment, in order, so consecutive directory buffer items of one type
/// shorter than a directory block, adding up to exactly one, are its
/// segments. Returns the segment of every item (`Whole` for the others).
pub fn segments(items: &[Item], dirblksize: u32) -> Vec<Segment> {
    let mut out = vec![Segment::Whole; items.len()];
    let mut i = 0usize;
    while let Some(it) = items.get(i) {
        let ItemBody::Buf(b) = &it.body else {
            i = i.saturating_add(1);
            continue;
        };
        let len = u32::from(b.len).saturating_mul(512);
        if !is_dir_buf(b.buf_type) || len >= dirblksize || len == 0 {
            i = i.saturating_add(1);
            continue;
        }
        // Gather the run of segments starting here.
        let mut j = i;
        let mut total = 0u32;
        let mut offsets = Vec::new();
        while let Some(ItemBody::Buf(c)) = items.get(j).map(|x| &x.body) {
            let l = u32::from(c.len).saturating_mul(512);
            if c.buf_type != b.buf_type || l == 0 || total.saturating_add(l) > dirblksize {
                break;
            }
            offsets.push(total);
            total = total.saturating_add(l);
            j = j.saturating_add(1);
            if total == dirblksize {
                break;
            }
        }
        let whole = total == dirblksize;
        for (k, off) in offsets.iter().enumerate() {
            if let Some(s) = out.get_mut(i.saturating_add(k)) {
                *s = if whole {
                    Segment::Part(*off)
                } else {
                    Segment::Unknown
                };
            }
        }
        i = j.max(i.saturating_add(1));
    }
    out
}

fn scan_dir_run(bytes: &[u8], start: u32, hdr: u32, ftype: bool, out: &mut Vec<DirEntryRef>) {
    let tag_at = |rel: usize| crate::xfs::fs::be16(bytes, rel);
    let total = bytes.len();
    let first = usize::try_from(hdr.saturating_sub(start)).unwrap_or(0);
    let mut rel = first.next_multiple_of(8);
    let mut chained = false;
    while rel.saturating_add(8) <= total {
        let off = u32::try_from(rel).unwrap_or(u32::MAX).saturating_add(start);
        let Ok(off16) = u16::try_from(off) else { break };
        let free = crate::xfs::fs::be16(bytes, rel) == Some(0xffff);
        let (len, name) = if free {
            let len = usize::from(crate::xfs::fs::be16(bytes, rel.saturating_add(2)).unwrap_or(0));
            (len, None)
        } else {
            let namelen = usize::from(bytes.get(rel.saturating_add(8)).copied().unwrap_or(0));
            let raw = 8usize
                .saturating_add(1)
                .saturating_add(namelen)
                .saturating_add(usize::from(ftype))
                .saturating_add(2);
            let name = bytes
                .get(rel.saturating_add(9)..rel.saturating_add(9).saturating_add(namelen))
                .map(|n| String::from_utf8_lossy(n).into_owned());
            (raw.next_multiple_of(8), name)
        };
        let ok_len =
            len >= 8 && len % 8 == 0 && (free || name.as_deref().is_some_and(|n| !n.is_empty()));
        let tag_pos = rel.saturating_add(len).saturating_sub(2);
        let tag_ok = tag_at(tag_pos) == Some(off16);
        let tag_unseen = tag_pos.saturating_add(2) > total;
        if ok_len && (tag_ok || (chained && tag_unseen)) {
            out.push(DirEntryRef {
                offset: off,
                len: u32::try_from(len).unwrap_or(u32::MAX),
                name: if free {
                    None
                } else {
                    name.map(String::into_boxed_str)
                },
            });
            chained = true;
            rel = rel.saturating_add(len);
        } else {
            chained = false;
            rel = rel.saturating_add(8);
        }
    }
}

fn decode_inode<O: ByteOrder>(r0: &[u8], r1: Option<&[u8]>) -> Result<InodeItem, String> {
    let mut item = if r0.len() == 52 {
        let f: &XfsInodeLogFormat32<O> = read(r0, "inode")?;
        InodeItem {
            ino: f.ilf_ino.get(),
            fields: f.ilf_fields.get(),
            dsize: f.ilf_dsize.get(),
            asize: f.ilf_asize.get(),
            blkno: f.ilf_blkno.get(),
            cluster_len: f.ilf_len.get(),
            boffset: f.ilf_boffset.get(),
            rdev: None,
            format_len: 52,
            core: None,
        }
    } else if r0.len() == 56 {
        let f: &XfsInodeLogFormat<O> = read(r0, "inode")?;
        InodeItem {
            ino: f.ilf_ino.get(),
            fields: f.ilf_fields.get(),
            dsize: f.ilf_dsize.get(),
            asize: f.ilf_asize.get(),
            blkno: f.ilf_blkno.get(),
            cluster_len: f.ilf_len.get(),
            boffset: f.ilf_boffset.get(),
            rdev: None,
            format_len: 56,
            core: None,
        }
    } else {
        return Err(format!(
            "inode format region is {} bytes, expected 56 (or 52 from a 32-bit host)",
            r0.len()
        ));
    };
    if item.fields & XFS_ILOG_DEV != 0 {
        let off: usize = if item.format_len == 56 { 24 } else { 20 };
        item.rdev = r0
            .get(off..off.saturating_add(4))
            .and_then(|b| zerocopy::byteorder::U32::<O>::ref_from_bytes(b).ok())
            .map(|v| v.get());
    }
    if let Some(core) = r1 {
        item.core = decode_core::<O>(core).map(Box::new);
    }
    Ok(item)
}

fn decode_core<O: ByteOrder>(r: &[u8]) -> Option<LogDinodeCore> {
    let v3 = r.len() >= 176;
    let mut buf = [0u8; 176];
    let n = r.len().min(176);
    if n < XFS_LOG_DINODE_V2_SIZE {
        return None;
    }
    buf.get_mut(..n)?.copy_from_slice(r.get(..n)?);
    let d = XfsLogDinode::<O>::ref_from_bytes(&buf[..]).ok()?;
    let flags2 = d.di_flags2.get();
    let nrext64 = v3 && flags2 & crate::xfs::format::dinode::XFS_DIFLAG2_NREXT64 != 0;
    let bigtime = v3 && flags2 & crate::xfs::format::dinode::XFS_DIFLAG2_BIGTIME != 0;
    Some(LogDinodeCore {
        magic: d.di_magic.get(),
        mode: d.di_mode.get(),
        version: d.di_version,
        format: d.di_format,
        uid: d.di_uid.get(),
        gid: d.di_gid.get(),
        nlink: d.di_nlink.get(),
        size: d.di_size.get(),
        nblocks: d.di_nblocks.get(),
        extsize: d.di_extsize.get(),
        nextents: if nrext64 {
            d.di_big_nextents.get()
        } else {
            u64::from(d.di_nextents.get())
        },
        anextents: if nrext64 {
            d.di_nextents.get()
        } else {
            u32::from(d.di_anextents.get())
        },
        forkoff: d.di_forkoff,
        aformat: d.di_aformat,
        flags: d.di_flags.get(),
        gen: d.di_gen.get(),
        atime: disk_time::<O>(&d.di_atime, bigtime),
        mtime: disk_time::<O>(&d.di_mtime, bigtime),
        ctime: disk_time::<O>(&d.di_ctime, bigtime),
        flags2: v3.then_some(flags2),
        changecount: v3.then(|| d.di_changecount.get()),
        lsn: v3.then(|| d.di_lsn.get()),
        crtime: v3.then(|| disk_time::<O>(&d.di_crtime, bigtime)),
        ino: v3.then(|| d.di_ino.get()),
    })
}

/// A logged timestamp in the on-disk encoding (`InodeCore`'s `raw`): a
/// bigtime count as it is, a legacy `{seconds, nanoseconds}` pair of host
/// words as seconds << 32 | nanoseconds.
fn disk_time<O: ByteOrder>(v: &zerocopy::byteorder::U64<O>, bigtime: bool) -> u64 {
    if bigtime {
        return v.get();
    }
    let b = zerocopy::IntoBytes::as_bytes(v);
    let word = |r: std::ops::Range<usize>| {
        b.get(r)
            .and_then(|w| zerocopy::byteorder::U32::<O>::ref_from_bytes(w).ok())
            .map_or(0, |w| w.get())
    };
    u64::from(word(0..4)) << 32 | u64::from(word(4..8))
}

fn decode_extent_free<O: ByteOrder>(r0: &[u8]) -> Result<ExtentFreeItem, String> {
    let h: &XfsEfiLogFormat<O> = read(r0, "efi/efd")?;
    let n = h.efi_nextents.get();
    let nu = usize::try_from(n).unwrap_or(usize::MAX);
    let rest = r0.get(16..).unwrap_or(&[]);
    let (bits, size) = if rest.len() == nu.saturating_mul(16) {
        (64, 16)
    } else if rest.len() == nu.saturating_mul(12) {
        (32, 12)
    } else {
        return Err(format!(
            "extent-free item of {n} extents is {} bytes: neither 16 + 16·n nor 16 + 12·n",
            r0.len()
        ));
    };
    let extents = rest
        .chunks_exact(size)
        .filter_map(|c| {
            XfsExtent32::<O>::ref_from_prefix(c)
                .ok()
                .map(|(e, _)| FreeExtent {
                    start: e.ext_start.get(),
                    len: e.ext_len.get(),
                })
        })
        .collect();
    Ok(ExtentFreeItem {
        id: h.efi_id.get(),
        nextents: n,
        extent_bits: bits,
        extents,
        link: None,
    })
}

fn decode_attri<O: ByteOrder>(r0: &[u8], r1: Option<&[u8]>) -> Result<AttriItem, String> {
    let a: &XfsAttriLogFormat<O> = read(r0, "attri")?;
    let op_flags = a.alfi_op_flags.get();
    let op = attri_op(op_flags);
    let raw_len = a.alfi_name_len.get();
    let (name_len, new_name_len) = if op_flags & 0xff == 6 {
        // Two u16s in host order at @28 and @30.
        let o = r0.get(28..32).unwrap_or(&[0; 4]);
        let lo = zerocopy::byteorder::U16::<O>::ref_from_bytes(o.get(..2).unwrap_or(&[0; 2]))
            .map(|v| v.get())
            .unwrap_or(0);
        let hi = zerocopy::byteorder::U16::<O>::ref_from_bytes(o.get(2..).unwrap_or(&[0; 2]))
            .map(|v| v.get())
            .unwrap_or(0);
        (u32::from(lo), Some(u32::from(hi)))
    } else {
        (raw_len, None)
    };
    let name = r1.map(|n| {
        let k = usize::try_from(name_len).unwrap_or(0).min(n.len()).min(256);
        String::from_utf8_lossy(n.get(..k).unwrap_or(&[])).into_owned()
    });
    Ok(AttriItem {
        id: a.alfi_id.get(),
        ino: a.alfi_ino.get(),
        igen: a.alfi_igen.get(),
        op_flags,
        op,
        name_len,
        new_name_len,
        value_len: a.alfi_value_len.get(),
        attr_filter: a.alfi_attr_filter.get(),
        name,
        link: None,
    })
}

/// An intent, where it is, and what it promised.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IntentRef {
    pub kind: ItemKind,
    pub id: u64,
    pub tid: u32,
    #[serde(flatten)]
    pub at: ItemRef,
}

/// Link every done item to the latest earlier unfinished intent of its
/// type with its id (ids are kernel addresses and are reused). Returns the
/// intents left without a done item and the number of done items whose
/// intent lies before the tail.
pub fn pair_intents(ts: &mut [super::Transaction]) -> (Vec<IntentRef>, u64) {
    let mut open: HashMap<(u16, u64), Vec<ItemRef>> = HashMap::new();
    let mut pairs: Vec<(ItemRef, ItemRef)> = Vec::new();
    let mut orphans = 0u64;
    for (ti, t) in ts.iter().enumerate() {
        let ti = u32::try_from(ti).unwrap_or(u32::MAX);
        for (ii, item) in t.items.iter().enumerate() {
            let at = ItemRef {
                transaction: ti,
                item: u32::try_from(ii).unwrap_or(u32::MAX),
            };
            let Some(id) = item.intent_id() else { continue };
            if item.kind.is_intent() {
                open.entry((item.kind.0, id)).or_default().push(at);
            } else if let Some(ik) = item.kind.intent_of_done() {
                match open.get_mut(&(ik.0, id)).and_then(Vec::pop) {
                    Some(intent) => pairs.push((intent, at)),
                    None => orphans = orphans.saturating_add(1),
                }
            }
        }
    }
    fn get(ts: &mut [super::Transaction], r: ItemRef) -> Option<&mut Item> {
        ts.get_mut(usize::try_from(r.transaction).ok()?)?
            .items
            .get_mut(usize::try_from(r.item).ok()?)
    }
    for (intent, done) in pairs {
        if let Some(i) = get(ts, intent) {
            i.set_link(done);
        }
        if let Some(d) = get(ts, done) {
            d.set_link(intent);
        }
    }
    let mut left: Vec<IntentRef> = open
        .into_iter()
        .flat_map(|((k, id), refs)| refs.into_iter().map(move |r| (k, id, r)))
        .map(|(k, id, r)| IntentRef {
            kind: ItemKind(k),
            id,
            tid: ts
                .get(usize::try_from(r.transaction).unwrap_or(usize::MAX))
                .map(|t| t.tid)
                .unwrap_or(0),
            at: r,
        })
        .collect();
    left.sort_by_key(|i| (i.at.transaction, i.at.item));
    (left, orphans)
}

/// [`pair_intents`] for transactions that arrive one at a time, in commit
/// order: each transaction is held until every intent in it has met its
/// done item (or the log ends), then handed on with its links set, so a
/// consumer sees exactly what [`pair_intents`] would have made of the
/// whole list while only the transactions between an intent and its done
/// item are kept.
#[derive(Default)]
pub struct Linker {
    /// Sequence number (index among committed transactions) of `held[0]`.
    base: u32,
    /// Transactions not handed on yet, with their count of open intents.
    held: std::collections::VecDeque<(super::Transaction, u32)>,
    open: HashMap<(u16, u64), Vec<(ItemRef, u32)>>,
    orphans: u64,
}

impl Linker {
    pub fn new() -> Linker {
        Linker::default()
    }

    fn held_mut(&mut self, seq: u32) -> Option<&mut (super::Transaction, u32)> {
        let i = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        self.held.get_mut(i)
    }

    /// Take the next committed transaction; hand on to `out` every held
    /// transaction that nothing later can change any more.
    pub fn push(&mut self, mut t: super::Transaction, out: &mut dyn FnMut(super::Transaction)) {
        let len = u32::try_from(self.held.len()).unwrap_or(u32::MAX);
        let seq = self.base.saturating_add(len);
        let mut open_here = 0u32;
        for ii in 0..t.items.len() {
            let at = ItemRef {
                transaction: seq,
                item: u32::try_from(ii).unwrap_or(u32::MAX),
            };
            let Some(item) = t.items.get(ii) else { break };
            let Some(id) = item.intent_id() else { continue };
            if item.kind.is_intent() {
                self.open
                    .entry((item.kind.0, id))
                    .or_default()
                    .push((at, t.tid));
                open_here = open_here.saturating_add(1);
            } else if let Some(ik) = item.kind.intent_of_done() {
                match self.open.get_mut(&(ik.0, id)).and_then(Vec::pop) {
                    Some((intent, _)) => {
                        if let Some(d) = t.items.get_mut(ii) {
                            d.set_link(intent);
                        }
                        let slot = usize::try_from(intent.item).unwrap_or(usize::MAX);
                        if intent.transaction == seq {
                            if let Some(i) = t.items.get_mut(slot) {
                                i.set_link(at);
                            }
                            open_here = open_here.saturating_sub(1);
                        } else if let Some((ht, n)) = self.held_mut(intent.transaction) {
                            if let Some(i) = ht.items.get_mut(slot) {
                                i.set_link(at);
                            }
                            *n = n.saturating_sub(1);
                        }
                    }
                    None => self.orphans = self.orphans.saturating_add(1),
                }
            }
        }
        self.held.push_back((t, open_here));
        while self.held.front().is_some_and(|(_, n)| *n == 0) {
            if let Some((t, _)) = self.held.pop_front() {
                self.base = self.base.saturating_add(1);
                out(t);
            }
        }
    }

    /// The log has ended: hand on what is held; return the intents left
    /// without a done item (in log order) and the number of done items
    /// whose intent lies before the tail.
    pub fn finish(mut self, out: &mut dyn FnMut(super::Transaction)) -> (Vec<IntentRef>, u64) {
        while let Some((t, _)) = self.held.pop_front() {
            out(t);
        }
        let mut left: Vec<IntentRef> = self
            .open
            .into_iter()
            .flat_map(|((k, id), refs)| refs.into_iter().map(move |(r, tid)| (k, id, r, tid)))
            .map(|(k, id, at, tid)| IntentRef {
                kind: ItemKind(k),
                id,
                tid,
                at,
            })
            .collect();
        left.sort_by_key(|i| (i.at.transaction, i.at.item));
        (left, self.orphans)
    }
}

impl Item {
    /// What the item says, in one line for people (the kind and region
    /// count are not repeated): a buffer's address, type and runs, an
    /// inode's number and logged fields, an intent's id and extents and
    /// whether it was finished.
    pub fn describe(&self) -> String {
        use std::fmt::Write as _;
        let mut line = String::new();
        match &self.body {
            ItemBody::Buf(b) => {
                let _ = write!(
                    line,
                    "blkno {} len {} {}{} map {}",
                    b.blkno,
                    b.len,
                    buf_type_name(b.buf_type),
                    if b.cancel() { " CANCEL" } else { "" },
                    b.map_size
                );
                let r: Vec<String> = b
                    .runs()
                    .iter()
                    .map(|r| format!("{}+{}", r.first, r.count))
                    .collect();
                let _ = write!(line, "  runs [{}]", r.join(" "));
            }
            ItemBody::Inode(n) => {
                let _ = write!(
                    line,
                    "  ino {} fields {:#x} dsize {} asize {}",
                    n.ino, n.fields, n.dsize, n.asize
                );
                if let Some(c) = &n.core {
                    let _ = write!(
                        line,
                        "  mode {:o} nlink {} size {} nblocks {}",
                        c.mode, c.nlink, c.size, c.nblocks
                    );
                }
            }
            ItemBody::Icreate(c) => {
                let _ = write!(
                    line,
                    "  ag {} agbno {} count {} isize {} length {}",
                    c.ag, c.agbno, c.count, c.isize, c.length
                );
            }
            ItemBody::ExtentFree(e) => {
                let x: Vec<String> = e
                    .extents
                    .iter()
                    .map(|x| format!("{}+{}", x.start, x.len))
                    .collect();
                let _ = write!(line, "  id {:#x} extents [{}]", e.id, x.join(" "));
            }
            ItemBody::MapIntent(e) => {
                let x: Vec<String> = e
                    .extents
                    .iter()
                    .map(|x| {
                        format!(
                            "{} owner {} block {} off {} len {}",
                            x.op, x.owner, x.startblock, x.startoff, x.len
                        )
                    })
                    .collect();
                let _ = write!(line, "  id {:#x} [{}]", e.id, x.join("; "));
            }
            ItemBody::RefcountIntent(e) => {
                let x: Vec<String> = e
                    .extents
                    .iter()
                    .map(|x| format!("{} {}+{}", x.op, x.startblock, x.len))
                    .collect();
                let _ = write!(line, "  id {:#x} [{}]", e.id, x.join("; "));
            }
            ItemBody::Done(dn) => {
                let _ = write!(line, "  id {:#x}", dn.id);
            }
            ItemBody::Attri(a) => {
                let _ = write!(
                    line,
                    "  id {:#x} {} ino {} name {:?} value {} bytes",
                    a.id,
                    a.op,
                    a.ino,
                    a.name.as_deref().unwrap_or(""),
                    a.value_len
                );
            }
            ItemBody::Xmi(x) => {
                let _ = write!(
                    line,
                    "  id {:#x} inodes {} and {} blocks {}",
                    x.id, x.inode1, x.inode2, x.blockcount
                );
            }
            ItemBody::Dquot(q) => {
                let _ = write!(
                    line,
                    "  id {} blkno {} boffset {}",
                    q.id, q.blkno, q.boffset
                );
            }
            ItemBody::Quotaoff(q) => {
                let _ = write!(line, "  flags {:#x}", q.flags);
            }
            ItemBody::Unknown => {
                let _ = write!(line, "  type {:#06x}", self.kind.0);
            }
            ItemBody::Corrupt(m) => {
                let _ = write!(line, "  CORRUPT: {m}");
            }
        }
        if self.kind.is_intent() {
            match self.link() {
                Some(l) => {
                    let _ = write!(line, "  (done in #{} item {})", l.transaction, l.item);
                }
                None => line.push_str("  (UNFINISHED)"),
            }
        }
        line.trim_start().to_string()
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]
mod tests {
    use super::*;

    fn ctx() -> ItemContext {
        ItemContext {
            v5: true,
            blocklog: 12,
            blocksize: 4096,
            sectsize: 512,
            inodesize: 512,
            inopblog: 3,
            agblocks: 4096,
            agblklog: 12,
            ftype: true,
            dirblksize: 4096,
            dir_names: true,
            inode_cores: true,
        }
    }

    fn le16(v: u16) -> [u8; 2] {
        v.to_le_bytes()
    }

    #[test]
    fn buffer_item_from_the_spec_example() {
        let r0 = vec![
            0x3c, 0x12, 0x02, 0x00, 0x00, 0x28, 0x01, 0x00, 0x01, 0x60, 0x09, 0, 0, 0, 0, 0, 1, 0,
            0, 0, 1, 0, 0, 0,
        ];
        let item = decode_item(&[r0, vec![0; 128]], 2, Order::Little, &ctx());
        assert_eq!(item.kind.name(), "buf");
        let ItemBody::Buf(b) = &item.body else {
            panic!("{:?}", item.body)
        };
        assert_eq!(b.blkno, 614_401);
        assert_eq!(b.buf_type, XFS_BLFT_AGF_BUF);
        assert_eq!(b.runs(), vec![Run { first: 0, count: 1 }]);
        assert_eq!(item.problem(), None);
        let f = super::super::run_fields::describe_run(b, Run { first: 0, count: 1 }, &ctx());
        assert!(f.contains(&"agf_freeblks".to_string()), "{f:?}");
    }

    #[test]
    fn big_endian_writer_is_honoured() {
        let mut r0 = vec![0u8; 24];
        r0[0..2].copy_from_slice(&XFS_LI_BUF.to_be_bytes());
        r0[2..4].copy_from_slice(&2u16.to_be_bytes());
        r0[4..6].copy_from_slice(&0x3800u16.to_be_bytes());
        r0[6..8].copy_from_slice(&1u16.to_be_bytes());
        r0[8..16].copy_from_slice(&2i64.to_be_bytes());
        r0[16..20].copy_from_slice(&1u32.to_be_bytes());
        r0[20..24].copy_from_slice(&0x6u32.to_be_bytes());
        let item = decode_item(&[r0, vec![0; 256]], 2, Order::Big, &ctx());
        let ItemBody::Buf(b) = &item.body else {
            panic!()
        };
        assert_eq!(b.buf_type, XFS_BLFT_AGI_BUF);
        assert_eq!(b.runs(), vec![Run { first: 1, count: 2 }]);
        let f = super::super::run_fields::describe_run(b, Run { first: 1, count: 2 }, &ctx());
        assert!(f.iter().any(|s| s.starts_with("agi_unlinked[")), "{f:?}");
    }

    #[test]
    fn extent_free_items_in_both_layouts() {
        let mut r = Vec::new();
        r.extend_from_slice(&le16(XFS_LI_EFI));
        r.extend_from_slice(&le16(1));
        r.extend_from_slice(&2u32.to_le_bytes());
        r.extend_from_slice(&0xffff_8881_530e_e6c0u64.to_le_bytes());
        let mut r64 = r.clone();
        let mut r32 = r.clone();
        for (s, l) in [(100u64, 8u32), (200, 16)] {
            r64.extend_from_slice(&s.to_le_bytes());
            r64.extend_from_slice(&l.to_le_bytes());
            r64.extend_from_slice(&0u32.to_le_bytes());
            r32.extend_from_slice(&s.to_le_bytes());
            r32.extend_from_slice(&l.to_le_bytes());
        }
        for (reg, bits) in [(r64, 64), (r32, 32)] {
            let item = decode_item(&[reg], 1, Order::Little, &ctx());
            let ItemBody::ExtentFree(e) = &item.body else {
                panic!("{:?}", item.body)
            };
            assert_eq!(e.extent_bits, bits);
            assert_eq!(e.id, 0xffff_8881_530e_e6c0);
            assert_eq!(
                e.extents[1],
                FreeExtent {
                    start: 200,
                    len: 16
                }
            );
        }
        let item = decode_item(&[r], 1, Order::Little, &ctx());
        assert!(matches!(item.body, ItemBody::Corrupt(_)));
    }

    #[test]
    fn inode_item_56_and_52() {
        let mut r = vec![0u8; 56];
        r[0..2].copy_from_slice(&le16(XFS_LI_INODE));
        r[2..4].copy_from_slice(&le16(3));
        r[4..8].copy_from_slice(&0x13u32.to_le_bytes());
        r[10..12].copy_from_slice(&le16(20));
        r[16..24].copy_from_slice(&0x8080u64.to_le_bytes());
        r[24..28].copy_from_slice(&0x0103u32.to_le_bytes());
        let mut core = vec![0u8; 176];
        core[0..2].copy_from_slice(&le16(0x494e));
        core[2..4].copy_from_slice(&le16(0o40755));
        core[56..64].copy_from_slice(&6u64.to_le_bytes());
        let item = decode_item(
            &[r.clone(), core.clone(), vec![0; 20]],
            3,
            Order::Little,
            &ctx(),
        );
        let ItemBody::Inode(i) = &item.body else {
            panic!()
        };
        assert_eq!(i.ino, 0x8080);
        assert_eq!(i.dsize, 20);
        assert_eq!(i.rdev, Some(0x103));
        let c = i.core.as_ref().unwrap();
        assert_eq!((c.magic, c.mode, c.size), (0x494e, 0o40755, 6));
        // 32-bit layout: no ilf_pad.
        let mut r32 = vec![0u8; 52];
        r32[0..12].copy_from_slice(&r[0..12]);
        r32[12..20].copy_from_slice(&0x8081u64.to_le_bytes());
        let item = decode_item(&[r32, core], 2, Order::Little, &ctx());
        let ItemBody::Inode(i) = &item.body else {
            panic!()
        };
        assert_eq!((i.ino, i.format_len), (0x8081, 52));
        let item = decode_item(&[vec![0x3b, 0x12, 1, 0]], 1, Order::Little, &ctx());
        assert!(matches!(item.body, ItemBody::Corrupt(_)));
    }

    #[test]
    fn intents_pair_with_done_items() {
        let efi = |id: u64, kind: u16| {
            let mut r = Vec::new();
            r.extend_from_slice(&le16(kind));
            r.extend_from_slice(&le16(1));
            r.extend_from_slice(&0u32.to_le_bytes());
            r.extend_from_slice(&id.to_le_bytes());
            decode_item(&[r], 1, Order::Little, &ctx())
        };
        let t = |items: Vec<Item>| super::super::Transaction {
            items,
            ..super::super::Transaction::empty(1)
        };
        let mut ts = vec![
            t(vec![efi(7, XFS_LI_EFI), efi(8, XFS_LI_EFI)]),
            t(vec![efi(7, XFS_LI_EFD), efi(9, XFS_LI_EFD)]),
        ];
        let (left, orphans) = pair_intents(&mut ts);
        assert_eq!(orphans, 1);
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].id, 8);
        assert_eq!(
            ts[0].items[0].link(),
            Some(ItemRef {
                transaction: 1,
                item: 0
            })
        );
        assert_eq!(
            ts[1].items[0].link(),
            Some(ItemRef {
                transaction: 0,
                item: 0
            })
        );
    }

    #[test]
    fn dir_entries_are_found_by_their_tags() {
        // A v5 data block chunk 0..2: header (64 bytes), then "a" and "bcd".
        let mut blk = vec![0u8; 256];
        blk[0..4].copy_from_slice(b"XDD3");
        // entry at 64: ino 8, namelen 1, "a", ftype, pad, tag 64
        blk[64..72].copy_from_slice(&131u64.to_be_bytes());
        blk[72] = 1;
        blk[73] = b'a';
        blk[74] = 1;
        blk[78..80].copy_from_slice(&64u16.to_be_bytes());
        // entry at 80: "bcd": 8+1+3+1+2 = 15 -> 16
        blk[80..88].copy_from_slice(&132u64.to_be_bytes());
        blk[88] = 3;
        blk[89..92].copy_from_slice(b"bcd");
        blk[94..96].copy_from_slice(&80u16.to_be_bytes());
        // free space at 96 to 256
        blk[96..98].copy_from_slice(&0xffffu16.to_be_bytes());
        blk[98..100].copy_from_slice(&160u16.to_be_bytes());
        blk[254..256].copy_from_slice(&96u16.to_be_bytes());
        let mut out = Vec::new();
        scan_dir_run(&blk, 0, 64, true, &mut out);
        assert_eq!(out.len(), 3, "{out:?}");
        assert_eq!(out[0].name.as_deref(), Some("a"));
        assert_eq!(out[1].name.as_deref(), Some("bcd"));
        assert_eq!(
            (out[2].offset, out[2].len, out[2].name.is_none()),
            (96, 160, true)
        );
        // The second chunk alone still finds the free space by its tag.
        let mut out = Vec::new();
        scan_dir_run(&blk[128..], 128, 64, true, &mut out);
        assert!(out.is_empty(), "{out:?}");
    }

    /// Little-endian (x86 writer) bytes of a format region laid out as the
    /// kernel's `xfs_log_format.h` declares it: (offset, value, width).
    fn le_region(size: usize, fields: &[(usize, u64, usize)]) -> Vec<u8> {
        let mut r = vec![0u8; size];
        for &(off, v, w) in fields {
            r[off..off + w].copy_from_slice(&v.to_le_bytes()[..w]);
        }
        r
    }

    #[test]
    fn attribute_intents_and_done_items_in_the_kernels_layout() {
        // xfs_attri_log_format: type, size, igen, id, ino, op_flags,
        // name_len, value_len, attr_filter (40 bytes); then the name and
        // the value regions.
        let r0 = le_region(
            40,
            &[
                (0, u64::from(XFS_LI_ATTRI), 2),
                (2, 3, 2),
                (4, 0x1234_5678, 4),
                (8, 0xffff_8881_0000_1000, 8),
                (16, 131, 8),
                (24, 1, 4),
                (28, 9, 4),
                (32, 5, 4),
                (36, 1 << 1, 4),
            ],
        );
        let name = b"user.test\0\0\0".to_vec();
        let item = decode_item(
            &[r0, name, b"value\0\0\0".to_vec()],
            3,
            Order::Little,
            &ctx(),
        );
        let ItemBody::Attri(a) = &item.body else {
            panic!("{:?}", item.body)
        };
        assert_eq!(item.kind.name(), "attri");
        assert_eq!(
            (
                a.id,
                a.ino,
                a.igen,
                a.op,
                a.name_len,
                a.value_len,
                a.attr_filter
            ),
            (0xffff_8881_0000_1000, 131, 0x1234_5678, "set", 9, 5, 2)
        );
        assert_eq!(a.name.as_deref(), Some("user.test"));
        assert_eq!(a.new_name_len, None);
        // A parent-pointer replace carries two name lengths, u16 each.
        let r0 = le_region(
            40,
            &[
                (0, u64::from(XFS_LI_ATTRI), 2),
                (2, 5, 2),
                (8, 7, 8),
                (16, 200, 8),
                (24, 6, 4),
                (28, 4, 2),
                (30, 6, 2),
                (32, 12, 4),
            ],
        );
        let item = decode_item(
            &[
                r0,
                b"old1".to_vec(),
                b"new222".to_vec(),
                vec![0; 12],
                vec![0; 12],
            ],
            5,
            Order::Little,
            &ctx(),
        );
        let ItemBody::Attri(a) = &item.body else {
            panic!("{:?}", item.body)
        };
        assert_eq!(
            (a.op, a.name_len, a.new_name_len),
            ("pptr_replace", 4, Some(6))
        );
        // xfs_attrd_log_format: type, size, pad, the intent's id.
        let d = le_region(16, &[(0, u64::from(XFS_LI_ATTRD), 2), (2, 1, 2), (8, 7, 8)]);
        let item = decode_item(&[d], 1, Order::Little, &ctx());
        assert_eq!(item.kind.name(), "attrd");
        let ItemBody::Done(d) = &item.body else {
            panic!("{:?}", item.body)
        };
        assert_eq!(d.id, 7);
    }

    #[test]
    fn exchange_intents_dquots_and_quotaoff_in_the_kernels_layout() {
        // xfs_xmi_log_format (88 bytes).
        let r0 = le_region(
            88,
            &[
                (0, u64::from(XFS_LI_XMI), 2),
                (2, 1, 2),
                (8, 0xabcd, 8),
                (16, 131, 8),
                (24, 132, 8),
                (32, 11, 4),
                (36, 12, 4),
                (40, 100, 8),
                (48, 200, 8),
                (56, 16, 8),
                (64, 1 << 2, 8),
                (72, 65536, 8),
                (80, u64::MAX, 8),
            ],
        );
        let item = decode_item(&[r0], 1, Order::Little, &ctx());
        assert_eq!(item.kind.name(), "xmi");
        let ItemBody::Xmi(x) = &item.body else {
            panic!("{:?}", item.body)
        };
        assert_eq!(
            (x.id, x.inode1, x.inode2, x.igen1, x.igen2),
            (0xabcd, 131, 132, 11, 12)
        );
        assert_eq!(
            (
                x.startoff1,
                x.startoff2,
                x.blockcount,
                x.flags,
                x.isize1,
                x.isize2
            ),
            (100, 200, 16, 4, 65536, -1)
        );
        let d = le_region(
            16,
            &[(0, u64::from(XFS_LI_XMD), 2), (2, 1, 2), (8, 0xabcd, 8)],
        );
        let item = decode_item(&[d], 1, Order::Little, &ctx());
        let ItemBody::Done(d) = &item.body else {
            panic!("{:?}", item.body)
        };
        assert_eq!((item.kind.name(), d.id), ("xmd", 0xabcd));
        // xfs_dq_logformat: type, size, id, blkno, len, boffset (24 bytes);
        // then the dquot (its type byte at offset 3 of xfs_disk_dquot).
        let r0 = le_region(
            24,
            &[
                (0, u64::from(XFS_LI_DQUOT), 2),
                (2, 2, 2),
                (4, 1000, 4),
                (8, 4096, 8),
                (16, 8, 4),
                (20, 136, 4),
            ],
        );
        let mut dq = vec![0u8; 136];
        dq[0..2].copy_from_slice(&0x4451u16.to_be_bytes());
        dq[3] = 1;
        let item = decode_item(&[r0, dq], 2, Order::Little, &ctx());
        assert_eq!(item.kind.name(), "dquot");
        let ItemBody::Dquot(q) = &item.body else {
            panic!("{:?}", item.body)
        };
        assert_eq!((q.id, q.blkno, q.len, q.boffset), (1000, 4096, 8, 136));
        assert_eq!(q.dq_type, Some(1));
        // xfs_qoff_logformat: type, size, flags, pad (20 bytes).
        let r0 = le_region(
            20,
            &[(0, u64::from(XFS_LI_QUOTAOFF), 2), (2, 1, 2), (4, 0x7, 4)],
        );
        let item = decode_item(&[r0], 1, Order::Little, &ctx());
        assert_eq!(item.kind.name(), "quotaoff");
        let ItemBody::Quotaoff(q) = &item.body else {
            panic!("{:?}", item.body)
        };
        assert_eq!(q.flags, 7);
    }

    #[test]
    fn hostile_regions_never_panic() {
        for t in [
            XFS_LI_BUF,
            XFS_LI_INODE,
            XFS_LI_ICREATE,
            XFS_LI_EFI,
            XFS_LI_EFD,
            XFS_LI_RUI,
            XFS_LI_RUD,
            XFS_LI_CUI,
            XFS_LI_CUD,
            XFS_LI_BUI,
            XFS_LI_BUD,
            XFS_LI_ATTRI,
            XFS_LI_ATTRD,
            XFS_LI_XMI,
            XFS_LI_XMD,
            XFS_LI_DQUOT,
            XFS_LI_QUOTAOFF,
            0x9999,
        ] {
            for len in [0usize, 2, 4, 15, 16, 20, 24, 52, 56, 88, 200] {
                let mut r = vec![0xffu8; len];
                if len >= 2 {
                    r[0..2].copy_from_slice(&le16(t));
                }
                let item = decode_item(&[r, vec![0xff; 7]], 2, Order::Little, &ctx());
                let _ = serde_json::to_string(&super::super::item_json::ItemJson {
                    item: &item,
                    ctx: Some(&ctx()),
                })
                .unwrap();
            }
        }
    }
}
