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
//!
//! The files follow the kernel's:
//!
//! | file | kernel | what |
//! |---|---|---|
//! | `mod.rs` | `xfs_log_recover.c` (`xlog_recover_add_to_trans`) | the byte order, item kinds, regions grouped into items, decoding by kind |
//! | `buf.rs` | `xfs_buf_item.c` | buffer items, the block each holds, directory entries and segments |
//! | `inode.rs` | `xfs_inode_item.c`, `xfs_icreate_item.c` | inode items and the logged inode core, inode-create items |
//! | `intents.rs` | `xfs_extfree_item.c`, `xfs_rmap_item.c`, `xfs_refcount_item.c`, `xfs_bmap_item.c`, `xfs_attr_item.c`, `xfs_exchmaps_item.c` | intents and done items, paired by id |
//! | `describe.rs` | | one line of text per item |

mod buf;
mod describe;
mod inode;
mod intents;

use buf::decode_buf;
pub use buf::{is_dir_buf, segments, BlockHead, BufItem, DirEntryRef, Segment, BTREE_MAGICS};
use inode::decode_inode;
pub use inode::{IcreateItem, InodeItem, LogDinodeCore};
use intents::{bmap_op, decode_attri, decode_extent_free, refcount_op, rmap_op};
pub use intents::{
    pair_intents, AttriItem, DoneItem, ExtentFreeItem, FreeExtent, IntentRef, Linker, MapExtent,
    MapIntentItem, PhysExtent, RefcountIntentItem, XmiItem, MAX_HELD_ITEMS,
};

use super::bitmap::fit_regions;
use super::ItemContext;
use crate::xfs::format::log::*;
use serde::{Serialize, Serializer};
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

    /// Set the link of an intent or done item (other items have none).
    pub(crate) fn set_link(&mut self, to: ItemRef) {
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

/// The regions of one item, format region first: the bytes kept of each
/// (see [`needs_data`]).
pub trait Regions {
    fn count(&self) -> usize;
    fn region(&self, i: usize) -> Option<&[u8]>;
}

impl<T: AsRef<[u8]>> Regions for [T] {
    fn count(&self) -> usize {
        self.len()
    }
    fn region(&self, i: usize) -> Option<&[u8]> {
        self.get(i).map(AsRef::as_ref)
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
pub fn decode_item_seg<G: Regions + ?Sized>(
    regions: &G,
    lens: &[u32],
    declared: u16,
    order: Order,
    ctx: &ItemContext,
    segment: Segment,
) -> Item {
    let r0: &[u8] = regions.region(0).unwrap_or(&[]);
    let kind = ItemKind(order.u16(r0, 0).unwrap_or(0));
    let body = match order {
        Order::Little => decode_body::<LittleEndian, G>(kind, regions, ctx, segment),
        Order::Big => decode_body::<BigEndian, G>(kind, regions, ctx, segment),
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

fn decode_body<O: ByteOrder, G: Regions + ?Sized>(
    kind: ItemKind,
    regions: &G,
    ctx: &ItemContext,
    segment: Segment,
) -> Result<ItemBody, String> {
    let r0: &[u8] = regions.region(0).unwrap_or(&[]);
    let r1: Option<&[u8]> = regions.region(1);
    Ok(match kind.0 {
        XFS_LI_BUF => ItemBody::Buf(decode_buf::<O, G>(r0, regions, ctx, segment)?),
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

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]
mod tests {
    use super::super::bitmap::Run;
    use super::buf::scan_dir_run;
    use super::*;

    fn ctx() -> ItemContext {
        crate::xfs::testutil::log_ctx(true)
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
        for t in LOG_ITEM_TYPES.into_iter().chain([0x9999]) {
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
