//! Buffer log items (`xfs_buf_item.c`, `xfs_buf_item_format`): the format
//! structure, the block each logged buffer holds (its header read from the
//! first chunk), and the directory entries and free-space segments that
//! logged directory blocks show.

use super::{read, Item, ItemBody, Regions, SmallU32s};
use crate::xfs::format::log::*;
use crate::xfs::log::bitmap::{fit_regions, runs, Run};
use crate::xfs::log::ItemContext;
use serde::Serialize;
use zerocopy::byteorder::ByteOrder;
use zerocopy::FromBytes;

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
pub(super) fn block_head(buf_type: u8, first: &[u8], v5: bool) -> Option<BlockHead> {
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

pub(super) fn decode_buf<O: ByteOrder, G: Regions + ?Sized>(
    r0: &[u8],
    regions: &G,
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
        b.head = regions
            .region(1)
            .and_then(|r| block_head(buf_type, r, ctx.v5));
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
pub(super) fn dir_entries<G: Regions + ?Sized>(
    b: &BufItem,
    regions: &G,
    ctx: &ItemContext,
) -> Vec<DirEntryRef> {
    let lens: Vec<u32> = (1..regions.count())
        .map(|i| {
            regions
                .region(i)
                .map_or(0, |r| u32::try_from(r.len()).unwrap_or(u32::MAX))
        })
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
                .region(usize::try_from(q.region).unwrap_or(usize::MAX))
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

pub(super) fn scan_dir_run(
    bytes: &[u8],
    start: u32,
    hdr: u32,
    ftype: bool,
    out: &mut Vec<DirEntryRef>,
) {
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
