//! What the runs of a buffer item's dirty bitmap ([`super::bitmap`]) cover.
//!
//! [`describe_run`] names what a run covers for the buffer types whose
//! layout is fixed or self-describing: superblock, AGF, AGI, AGFL, inode
//! clusters, directory data blocks; btree blocks (header fields, records,
//! keys and pointers by index, as `xfs_db` numbers them from 1), directory
//! leaf, node and free blocks, attribute leaf blocks (their headers and
//! entries by index, from the count in the logged header), remote
//! attribute value and symlink block headers.
//!
//! The kernel logs whole structures (`xfs_btree_log_recs` logs records
//! `first..=last`, `xfs_dir3_leaf_log_ents` entries, ...) and the dirty
//! bitmap rounds each logged byte range out to 128-byte chunks. So a
//! record only partly inside a run was not logged by it (the chunk holding
//! its other end would be dirty too): a run names the records, keys,
//! pointers and entries that lie wholly inside it.

use super::bitmap::Run;
use super::items::{BufItem, Segment};
use super::ItemContext;
use crate::xfs::format::ag::{XfsAgf, XfsAgi};
use crate::xfs::format::log::*;
use crate::xfs::format::sb::XfsDsb;
use core::mem::{offset_of, size_of};

/// What a run of a buffer covers, in words, for the buffer types whose
/// layout this reader knows. Empty when it does not know.
pub fn describe_run(b: &BufItem, run: Run, ctx: &ItemContext) -> Vec<String> {
    let (lo, hi) = run.bytes();
    match b.buf_type {
        XFS_BLFT_SB_BUF => fields_in(SB_FIELDS, size_of::<XfsDsb>(), lo, hi, "sb"),
        XFS_BLFT_AGF_BUF => fields_in(AGF_FIELDS, size_of::<XfsAgf>(), lo, hi, "agf"),
        XFS_BLFT_AGI_BUF => agi_fields(lo, hi),
        XFS_BLFT_AGFL_BUF => agfl_fields(lo, hi, ctx),
        XFS_BLFT_DINO_BUF => inode_fields(b, lo, hi, ctx),
        XFS_BLFT_DIR_DATA_BUF | XFS_BLFT_DIR_BLOCK_BUF => dir_data_fields(b, lo, hi, ctx),
        XFS_BLFT_BTREE_BUF => btree_fields(b, lo, hi, ctx),
        XFS_BLFT_DIR_LEAF1_BUF | XFS_BLFT_DIR_LEAFN_BUF => dir_leaf_fields(b, lo, hi, ctx),
        XFS_BLFT_DA_NODE_BUF => da_node_fields(b, lo, hi, ctx),
        XFS_BLFT_DIR_FREE_BUF => dir_free_fields(b, lo, hi, ctx),
        XFS_BLFT_ATTR_LEAF_BUF => attr_leaf_fields(b, lo, hi, ctx),
        XFS_BLFT_ATTR_RMT_BUF | XFS_BLFT_SYMLINK_BUF => remote_fields(b, lo, hi, ctx),
        _ if b.flags & XFS_BLF_INODE_BUF != 0 => inode_fields(b, lo, hi, ctx),
        _ => Vec::new(),
    }
}

/// A structure's members: (kernel name, offset, size).
pub(crate) type FieldTable = &'static [(&'static str, usize, usize)];

macro_rules! fields {
    ($t:ty; $($f:ident),* $(,)?) => {
        &[$((stringify!($f), offset_of!($t, $f), size_of_field(|s: &$t| &s.$f))),*]
    };
}

const fn size_of_field<T, F>(_: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

pub(crate) const SB_FIELDS: FieldTable = fields!(XfsDsb;
    sb_magicnum, sb_blocksize, sb_dblocks, sb_rblocks, sb_rextents, sb_uuid, sb_logstart,
    sb_rootino, sb_rbmino, sb_rsumino, sb_rextsize, sb_agblocks, sb_agcount, sb_rbmblocks,
    sb_logblocks, sb_versionnum, sb_sectsize, sb_inodesize, sb_inopblock, sb_fname,
    sb_blocklog, sb_sectlog, sb_inodelog, sb_inopblog, sb_agblklog, sb_rextslog,
    sb_inprogress, sb_imax_pct, sb_icount, sb_ifree, sb_fdblocks, sb_frextents, sb_uquotino,
    sb_gquotino, sb_qflags, sb_flags, sb_shared_vn, sb_inoalignmt, sb_unit, sb_width,
    sb_dirblklog, sb_logsectlog, sb_logsectsize, sb_logsunit, sb_features2,
    sb_bad_features2, sb_features_compat, sb_features_ro_compat, sb_features_incompat,
    sb_features_log_incompat, sb_crc, sb_spino_align, sb_pquotino, sb_lsn, sb_meta_uuid,
    sb_metadirino, sb_rgcount, sb_rgextents, sb_rgblklog, sb_pad, sb_rtstart, sb_rtreserved,
);

pub(crate) const AGF_FIELDS: FieldTable = fields!(XfsAgf;
    agf_magicnum, agf_versionnum, agf_seqno, agf_length, agf_bno_root, agf_cnt_root,
    agf_rmap_root, agf_bno_level, agf_cnt_level, agf_rmap_level, agf_flfirst, agf_fllast,
    agf_flcount, agf_freeblks, agf_longest, agf_btreeblks, agf_uuid, agf_rmap_blocks,
    agf_refcount_blocks, agf_refcount_root, agf_refcount_level, agf_spare64, agf_lsn,
    agf_crc, agf_spare2,
);

pub(crate) const AGI_FIELDS: FieldTable = fields!(XfsAgi;
    agi_magicnum, agi_versionnum, agi_seqno, agi_length, agi_count, agi_root, agi_level,
    agi_freecount, agi_newino, agi_dirino, agi_unlinked, agi_uuid, agi_crc, agi_pad32,
    agi_lsn, agi_free_root, agi_free_level, agi_iblocks, agi_fblocks,
);

/// Names of the table's fields overlapping `[lo, hi)`; bytes past the
/// structure are the unused rest of its sector.
fn fields_in(table: FieldTable, size: usize, lo: u32, hi: u32, what: &str) -> Vec<String> {
    let lo = usize::try_from(lo).unwrap_or(usize::MAX);
    let hi = usize::try_from(hi).unwrap_or(usize::MAX);
    let mut out: Vec<String> = table
        .iter()
        .filter(|(_, off, len)| *off < hi && off.saturating_add(*len) > lo)
        .map(|(n, _, _)| (*n).to_string())
        .collect();
    if hi > size {
        out.push(format!("(unused sector space after the {what})"));
    }
    out
}

fn agi_fields(lo: u32, hi: u32) -> Vec<String> {
    let unl = offset_of!(XfsAgi, agi_unlinked);
    let mut out = Vec::new();
    for n in fields_in(AGI_FIELDS, size_of::<XfsAgi>(), lo, hi, "agi") {
        if n == "agi_unlinked" {
            // Name the hash buckets.
            let first = usize::try_from(lo)
                .unwrap_or(0)
                .max(unl)
                .saturating_sub(unl)
                / 4;
            let last = usize::try_from(hi)
                .unwrap_or(0)
                .min(unl.saturating_add(256))
                .saturating_sub(unl)
                .saturating_sub(1)
                / 4;
            if first == last {
                out.push(format!("agi_unlinked[{first}]"));
            } else {
                out.push(format!("agi_unlinked[{first}..={last}]"));
            }
        } else {
            out.push(n);
        }
    }
    out
}

fn agfl_fields(lo: u32, hi: u32, ctx: &ItemContext) -> Vec<String> {
    let hdr: u32 = if ctx.v5 { 36 } else { 0 };
    let mut out = Vec::new();
    if ctx.v5 && lo < hdr {
        out.push("agfl header (magic, seqno, uuid, lsn, crc)".to_string());
    }
    let from = lo.max(hdr);
    if hi > from {
        let sect = ctx.sectsize.max(512);
        let last_slot = sect.saturating_sub(hdr) / 4;
        let a = from.saturating_sub(hdr) / 4;
        let b = (hi.saturating_sub(hdr).div_ceil(4)).min(last_slot);
        if b > a {
            out.push(format!("agfl_bno[{a}..{b}]"));
        }
    }
    out
}

/// Inodes of a cluster buffer covered by `[lo, hi)`, with the part of each.
fn inode_fields(b: &BufItem, lo: u32, hi: u32, ctx: &ItemContext) -> Vec<String> {
    let isize = ctx.inodesize.max(256);
    let first = lo.checked_div(isize).unwrap_or(0);
    let last = hi.saturating_sub(1).checked_div(isize).unwrap_or(0);
    let mut out = Vec::new();
    for slot in first..=last.min(first.saturating_add(256)) {
        let start = slot.saturating_mul(isize);
        let a = lo.max(start).saturating_sub(start);
        let z = hi.min(start.saturating_add(isize)).saturating_sub(start);
        let core: u32 = if ctx.v5 { 176 } else { 100 };
        let part = if b.flags & XFS_BLF_INODE_BUF != 0 && a <= 96 && (100..=128).contains(&z) {
            // Unlinked-list updates log only di_next_unlinked.
            "di_next_unlinked"
        } else if z <= core {
            "core"
        } else if a >= core {
            "literal area (forks)"
        } else {
            "core and literal area"
        };
        let ino = ino_at(b, start, ctx);
        match ino {
            Some(i) => out.push(format!("inode {i}: {part}")),
            None => out.push(format!("inode slot {slot}: {part}")),
        }
    }
    out
}

/// The inode number of the inode at byte `off` of a cluster buffer.
pub fn ino_at(b: &BufItem, off: u32, ctx: &ItemContext) -> Option<u64> {
    let blkno = u64::try_from(b.blkno).ok()?;
    let bb_per_block = 1u64.checked_shl(u32::from(ctx.blocklog).checked_sub(9)?)?;
    let byte = blkno.checked_mul(512)?.checked_add(u64::from(off))?;
    let linear = byte.checked_shr(u32::from(ctx.blocklog))?;
    let _ = bb_per_block;
    let agblocks = u64::from(ctx.agblocks);
    let agno = linear.checked_div(agblocks)?;
    let agbno = linear.checked_rem(agblocks)?;
    let in_block = byte.checked_rem(u64::from(ctx.blocksize))?;
    let slot = in_block.checked_div(u64::from(ctx.inodesize))?;
    let agino = agbno.checked_shl(u32::from(ctx.inopblog))? | slot;
    let shift = u32::from(ctx.agblklog).checked_add(u32::from(ctx.inopblog))?;
    Some(agno.checked_shl(shift)? | agino)
}

/// Header, bestfree and entries of a directory data (or single-block)
/// block covered by `[lo, hi)`.
fn dir_data_fields(b: &BufItem, lo: u32, hi: u32, ctx: &ItemContext) -> Vec<String> {
    let (hdr, bestfree_off): (u32, u32) = if ctx.v5 { (64, 48) } else { (16, 4) };
    let mut out = Vec::new();
    // Offsets in the directory block.
    let base = match b.segment {
        Segment::Whole => 0,
        Segment::Part(o) => o,
        Segment::Unknown => {
            out.push("part of a directory block logged in segments (its place unknown)".into());
            return out;
        }
    };
    let (lo, hi) = (lo.saturating_add(base), hi.saturating_add(base));
    if lo < bestfree_off {
        out.push(if ctx.v5 {
            "data header (magic, crc, blkno, lsn, uuid, owner)".to_string()
        } else {
            "data header (magic)".to_string()
        });
    }
    if lo < bestfree_off.saturating_add(12) && hi > bestfree_off {
        out.push("bestfree[3]".to_string());
    }
    if let Some(entries) = &b.dir_entries {
        for e in entries.iter() {
            let end = e.offset.saturating_add(e.len);
            if e.offset < hi && end > lo {
                match &e.name {
                    Some(n) => out.push(format!("entry \"{n}\" at {}", e.offset)),
                    None => out.push(format!("free space at {} ({} bytes)", e.offset, e.len)),
                }
            }
        }
    } else if hi > hdr {
        out.push("entries".to_string());
    }
    let bsize = match b.segment {
        Segment::Whole => u32::try_from(u64::from(b.len).saturating_mul(512)).unwrap_or(u32::MAX),
        _ => ctx.dirblksize,
    };
    if b.buf_type == XFS_BLFT_DIR_BLOCK_BUF && hi >= bsize && bsize > 0 {
        out.push("leaf entries and block tail".to_string());
    }
    out
}

/// Header fields as (name, offset, length), in order.
type Header = &'static [(&'static str, u32, u32)];

/// Names of the header fields overlapping `[lo, hi)`.
fn header_in(h: Header, lo: u32, hi: u32) -> Vec<String> {
    h.iter()
        .filter(|(_, off, len)| *off < hi && off.saturating_add(*len) > lo)
        .map(|(n, _, _)| (*n).to_string())
        .collect()
}

/// The slots of an array of `size`-byte slots from byte `base` (slot 1
/// first, as `xfs_db` numbers them; at most `slots`) lying wholly inside
/// `[lo, hi)`, as `name[a-b]`; `in_use` slots are in use, the rest named
/// as unused.
fn slots_in(
    name: &str,
    base: u32,
    size: u32,
    slots: u32,
    in_use: Option<u32>,
    lo: u32,
    hi: u32,
) -> Vec<String> {
    let mut out = Vec::new();
    if size == 0 || slots == 0 {
        return out;
    }
    let end = base.saturating_add(size.saturating_mul(slots));
    let (a, z) = (lo.max(base), hi.min(end));
    if a >= z {
        return out;
    }
    // Slots (0-based) wholly inside [a, z).
    let first = a.saturating_sub(base).div_ceil(size);
    // Exclusive.
    let last = z.saturating_sub(base).checked_div(size).unwrap_or(0);
    if first >= last {
        let at = a.saturating_sub(base).checked_div(size).unwrap_or(0);
        out.push(format!("part of {name}[{}]", at.saturating_add(1)));
        return out;
    }
    let used_end = in_use.map_or(last, |n| n.min(last));
    if first < used_end {
        out.push(if used_end == first.saturating_add(1) {
            format!("{name}[{}]", first.saturating_add(1))
        } else {
            format!("{name}[{}-{}]", first.saturating_add(1), used_end)
        });
    }
    if let Some(n) = in_use {
        if last > n.max(first) {
            out.push(format!("unused {name} slots after {name}[{n}]"));
        }
    }
    out
}

const SHORT_HDR: Header = &[
    ("bb_magic", 0, 4),
    ("bb_level", 4, 2),
    ("bb_numrecs", 6, 2),
    ("bb_leftsib", 8, 4),
    ("bb_rightsib", 12, 4),
    ("bb_blkno", 16, 8),
    ("bb_lsn", 24, 8),
    ("bb_uuid", 32, 16),
    ("bb_owner", 48, 4),
    ("bb_crc", 52, 4),
];

const LONG_HDR: Header = &[
    ("bb_magic", 0, 4),
    ("bb_level", 4, 2),
    ("bb_numrecs", 6, 2),
    ("bb_leftsib", 8, 8),
    ("bb_rightsib", 16, 8),
    ("bb_blkno", 24, 8),
    ("bb_lsn", 32, 8),
    ("bb_uuid", 40, 16),
    ("bb_owner", 56, 8),
    ("bb_crc", 64, 4),
    ("bb_pad", 68, 4),
];

/// A btree's block layout: its name, long-form header, and the sizes of
/// a record, a key slot and a pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BtreeLayout {
    pub name: &'static str,
    pub long: bool,
    pub rec: u32,
    pub key: u32,
    pub ptr: u32,
}

/// The layout of the btree whose blocks carry `magic` (v5 and v4 magics).
pub fn btree_layout(magic: u32) -> Option<BtreeLayout> {
    let (name, long, rec, key, ptr) = match magic {
        0x4142_3342 | 0x4142_5442 => ("bnobt", false, 8, 8, 4),
        0x4142_3343 | 0x4142_5443 => ("cntbt", false, 8, 8, 4),
        0x4941_4233 | 0x4941_4254 => ("inobt", false, 16, 4, 4),
        0x4649_4233 | 0x4649_4254 => ("finobt", false, 16, 4, 4),
        // Overlapping: a key slot holds the low and the high key.
        0x524d_4233 => ("rmapbt", false, 24, 40, 4),
        0x5233_4643 => ("refcountbt", false, 12, 4, 4),
        0x424d_4133 | 0x424d_4150 => ("bmbt", true, 16, 8, 8),
        0x4d41_5052 => ("rtrmapbt", true, 24, 40, 8),
        0x5243_4e54 => ("rtrefcountbt", true, 12, 4, 8),
        _ => return None,
    };
    Some(BtreeLayout {
        name,
        long,
        rec,
        key,
        ptr,
    })
}

/// Length of a btree block header (`XFS_BTREE_{S,L}BLOCK{,_CRC}_LEN`).
pub fn btree_header_len(long: bool, v5: bool) -> u32 {
    match (long, v5) {
        (false, false) => 16,
        (false, true) => 56,
        (true, false) => 24,
        (true, true) => 72,
    }
}

fn buf_bytes(b: &BufItem) -> u32 {
    u32::try_from(u64::from(b.len).saturating_mul(512)).unwrap_or(u32::MAX)
}

/// Header fields, records (leaves) or keys and pointers (nodes) of a btree
/// block, its type and level from the header logged in the same item.
fn btree_fields(b: &BufItem, lo: u32, hi: u32, ctx: &ItemContext) -> Vec<String> {
    let Some((head, l)) = b.head.and_then(|h| Some((h, btree_layout(h.magic()?)?))) else {
        return vec!["btree block (its header is not in this item: type unknown)".to_string()];
    };
    let hdr = btree_header_len(l.long, ctx.v5);
    let table = if l.long { LONG_HDR } else { SHORT_HDR };
    let mut out: Vec<String> = header_in(table, lo, hi.min(hdr))
        .into_iter()
        .filter(|_| lo < hdr)
        .collect();
    let blk = buf_bytes(b);
    let room = blk.saturating_sub(hdr);
    let n = Some(u32::from(head.count));
    let used_end = if head.level == 0 {
        let max = room.checked_div(l.rec).unwrap_or(0);
        out.extend(slots_in("recs", hdr, l.rec, max, n, lo, hi));
        hdr.saturating_add(max.saturating_mul(l.rec))
    } else {
        let max = room.checked_div(l.key.saturating_add(l.ptr)).unwrap_or(0);
        out.extend(slots_in("keys", hdr, l.key, max, n, lo, hi));
        let ptrs = hdr.saturating_add(max.saturating_mul(l.key));
        out.extend(slots_in("ptrs", ptrs, l.ptr, max, n, lo, hi));
        ptrs.saturating_add(max.saturating_mul(l.ptr))
    };
    if hi > used_end {
        out.push("(unused space at the end of the block)".to_string());
    }
    if let Some(first) = out.first_mut() {
        *first = format!("{} level {}: {first}", l.name, head.level);
    }
    out
}

/// `xfs_da3_blkinfo` (v5) or `xfs_da_blkinfo` (v4).
const DA3_BLKINFO: Header = &[
    ("forw", 0, 4),
    ("back", 4, 4),
    ("magic", 8, 2),
    ("pad", 10, 2),
    ("crc", 12, 4),
    ("blkno", 16, 8),
    ("lsn", 24, 8),
    ("uuid", 32, 16),
    ("owner", 48, 8),
];

fn da_header(ctx: &ItemContext, rest: Header, lo: u32, hi: u32) -> Vec<String> {
    let info = if ctx.v5 { 56 } else { 12 };
    let mut out: Vec<String> = DA3_BLKINFO
        .iter()
        .filter(|(_, off, _)| *off < info)
        .filter(|(_, off, len)| *off < hi && off.saturating_add(*len) > lo)
        .map(|(n, _, _)| format!("info.{n}"))
        .collect();
    for (n, off, len) in rest {
        let off = off.saturating_add(info);
        if off < hi && off.saturating_add(*len) > lo {
            out.push((*n).to_string());
        }
    }
    out
}

/// Directory leaf blocks: header, `ents[]` (8 bytes each), and for leaf1
/// the `bests[]` and tail at the end.
fn dir_leaf_fields(b: &BufItem, lo: u32, hi: u32, ctx: &ItemContext) -> Vec<String> {
    let hdr: u32 = if ctx.v5 { 64 } else { 16 };
    let mut out = da_header(
        ctx,
        &[("count", 0, 2), ("stale", 2, 2), ("pad", 4, 4)],
        lo,
        hi.min(hdr),
    );
    if ctx.v5 && hi <= 60 {
        out.retain(|n| n != "pad");
    }
    let blk = buf_bytes(b);
    let leaf1 = b.buf_type == XFS_BLFT_DIR_LEAF1_BUF;
    let end = if leaf1 { blk.saturating_sub(4) } else { blk };
    let count = b.head.map(|h| u32::from(h.count));
    let max = end.saturating_sub(hdr) / 8;
    out.extend(
        slots_in("ents", hdr, 8, max, count, lo, hi)
            .into_iter()
            .map(|s| {
                if leaf1 && s.starts_with("unused") {
                    "bests[] or unused space (bests grow down from the tail)".to_string()
                } else {
                    s
                }
            }),
    );
    if leaf1 && hi > end {
        out.push("tail (bestcount)".to_string());
    }
    if count.is_none() && lo < hdr.saturating_add(8) && hi > hdr {
        out.push("(entry count not in this item)".to_string());
    }
    out
}

/// da btree node blocks: header and `btree[]` entries (hashval, before).
fn da_node_fields(b: &BufItem, lo: u32, hi: u32, ctx: &ItemContext) -> Vec<String> {
    let hdr: u32 = if ctx.v5 { 64 } else { 16 };
    let mut out = da_header(
        ctx,
        &[("count", 0, 2), ("level", 2, 2), ("pad32", 4, 4)],
        lo,
        hi.min(hdr),
    );
    let max = buf_bytes(b).saturating_sub(hdr) / 8;
    out.extend(slots_in(
        "btree",
        hdr,
        8,
        max,
        b.head.map(|h| u32::from(h.count)),
        lo,
        hi,
    ));
    out
}

/// Directory free-index blocks: header and `bests[]` (2 bytes each).
fn dir_free_fields(b: &BufItem, lo: u32, hi: u32, ctx: &ItemContext) -> Vec<String> {
    let (hdr, table): (u32, Header) = if ctx.v5 {
        (
            64,
            &[
                ("magic", 0, 4),
                ("crc", 4, 4),
                ("blkno", 8, 8),
                ("lsn", 16, 8),
                ("uuid", 24, 16),
                ("owner", 40, 8),
                ("firstdb", 48, 4),
                ("nvalid", 52, 4),
                ("nused", 56, 4),
                ("pad", 60, 4),
            ],
        )
    } else {
        (
            16,
            &[
                ("magic", 0, 4),
                ("firstdb", 4, 4),
                ("nvalid", 8, 4),
                ("nused", 12, 4),
            ],
        )
    };
    let mut out = header_in(table, lo, hi.min(hdr));
    let max = buf_bytes(b).saturating_sub(hdr) / 2;
    out.extend(slots_in(
        "bests",
        hdr,
        2,
        max,
        b.head.map(|h| u32::from(h.count)),
        lo,
        hi,
    ));
    out
}

/// Attribute leaf blocks: header, `entries[]` (8 bytes each), and the
/// names and values that grow down from the end of the block.
fn attr_leaf_fields(b: &BufItem, lo: u32, hi: u32, ctx: &ItemContext) -> Vec<String> {
    let hdr: u32 = if ctx.v5 { 80 } else { 32 };
    let rest: Header = &[
        ("count", 0, 2),
        ("usedbytes", 2, 2),
        ("firstused", 4, 2),
        ("holes", 6, 1),
        ("pad1", 7, 1),
        ("freemap[0]", 8, 4),
        ("freemap[1]", 12, 4),
        ("freemap[2]", 16, 4),
        ("pad2", 20, 4),
    ];
    let mut out = da_header(ctx, rest, lo, hi.min(hdr));
    if !ctx.v5 {
        out.retain(|n| n != "pad2");
    }
    let count = b.head.map(|h| u32::from(h.count));
    let max = buf_bytes(b).saturating_sub(hdr) / 8;
    let ents = slots_in("entries", hdr, 8, max, count, lo, hi);
    match count {
        Some(n) => {
            let names = hdr.saturating_add(n.saturating_mul(8));
            out.extend(ents.into_iter().filter(|s| !s.starts_with("unused")));
            if hi > names {
                out.push("names and values (or free space before them)".to_string());
            }
        }
        None => {
            if hi > hdr {
                out.push("entries, names and values (entry count not in this item)".to_string());
            }
        }
    }
    out
}

/// Remote attribute value and symlink blocks: the v5 header, then data.
fn remote_fields(b: &BufItem, lo: u32, hi: u32, ctx: &ItemContext) -> Vec<String> {
    let what = if b.buf_type == XFS_BLFT_SYMLINK_BUF {
        "symlink target bytes"
    } else {
        "attribute value bytes"
    };
    if !ctx.v5 {
        return vec![what.to_string()];
    }
    let (magic, table): (&str, Header) = if b.buf_type == XFS_BLFT_SYMLINK_BUF {
        (
            "sl",
            &[
                ("magic", 0, 4),
                ("offset", 4, 4),
                ("bytes", 8, 4),
                ("crc", 12, 4),
                ("uuid", 16, 16),
                ("owner", 32, 8),
                ("blkno", 40, 8),
                ("lsn", 48, 8),
            ],
        )
    } else {
        (
            "rm",
            &[
                ("magic", 0, 4),
                ("offset", 4, 4),
                ("bytes", 8, 4),
                ("crc", 12, 4),
                ("uuid", 16, 16),
                ("owner", 32, 8),
                ("blkno", 40, 8),
                ("lsn", 48, 8),
            ],
        )
    };
    let mut out: Vec<String> = header_in(table, lo, hi.min(56))
        .into_iter()
        .filter(|_| lo < 56)
        .map(|n| format!("{magic}_{n}"))
        .collect();
    if hi > 56 {
        out.push(what.to_string());
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::xfs::log::items::BTREE_MAGICS;

    #[test]
    fn field_tables_are_sane() {
        assert_eq!(AGF_FIELDS[0], ("agf_magicnum", 0, 4));
        assert!(AGF_FIELDS.contains(&("agf_freeblks", 52, 4)));
        assert!(SB_FIELDS.contains(&("sb_icount", 128, 8)));
        let f = fields_in(AGF_FIELDS, 224, 0, 128, "agf");
        assert!(f.contains(&"agf_longest".to_string()));
        assert!(!f.contains(&"agf_lsn".to_string()));
        let f = agi_fields(40, 48);
        assert_eq!(f, vec!["agi_unlinked[0..=1]".to_string()]);
    }

    fn item(buf_type: u8, len_bb: u16, head: Option<crate::xfs::log::items::BlockHead>) -> BufItem {
        BufItem {
            blkno: 64,
            len: len_bb,
            flags: u16::from(buf_type) << XFS_BLFT_SHIFT,
            buf_type,
            map_size: 1,
            map: crate::xfs::log::items::SmallU32s::from_slice(&[1]),
            dir_entries: None,
            segment: crate::xfs::log::items::Segment::Whole,
            head,
        }
    }

    fn head(magic: u32, level: u8, count: u16) -> Option<crate::xfs::log::items::BlockHead> {
        let kind = BTREE_MAGICS
            .iter()
            .position(|m| *m == magic)
            .map_or(0, |i| u8::try_from(i).unwrap().saturating_add(1));
        Some(crate::xfs::log::items::BlockHead { kind, level, count })
    }

    fn v5() -> ItemContext {
        ItemContext {
            v5: true,
            ..ItemContext::default()
        }
    }

    fn names(b: &BufItem, first: u32, count: u32) -> Vec<String> {
        describe_run(b, Run { first, count }, &v5())
    }

    #[test]
    fn btree_runs_name_whole_records_keys_and_pointers() {
        // A bnobt leaf of 4096 bytes: header 56, records of 8 bytes.
        let b = item(XFS_BLFT_BTREE_BUF, 8, head(0x4142_3342, 0, 40));
        let n = names(&b, 0, 1);
        assert_eq!(n[0], "bnobt level 0: bb_magic");
        assert!(n.contains(&"bb_crc".to_string()));
        // Bytes 56..128: records 1..9.
        assert_eq!(n.last().unwrap(), "recs[1-9]");
        // Bytes 128..256: record 10 starts at 128 and 25 ends at 256.
        assert_eq!(names(&b, 1, 1), vec!["bnobt level 0: recs[10-25]"]);
        // Past the 40 records in use.
        assert_eq!(
            names(&b, 2, 2),
            vec![
                "bnobt level 0: recs[26-40]",
                "unused recs slots after recs[40]"
            ]
        );
        // An rmapbt node of 1024 bytes: 22 slots of 40-byte keys, then
        // pointers from 56 + 22 * 40 = 936 to the end (22 * 4 bytes).
        let b = item(XFS_BLFT_BTREE_BUF, 2, head(0x524d_4233, 1, 3));
        assert_eq!(
            names(&b, 7, 1),
            vec![
                "rmapbt level 1: unused keys slots after keys[3]",
                "ptrs[1-3]",
                "unused ptrs slots after ptrs[3]"
            ]
        );
        // Records that only touch the run are not named: rmap records of
        // 24 bytes from 56; bytes 128..256 hold 4 (128..152) to 8
        // (224..248) whole, 3 and 9 in part.
        let b = item(XFS_BLFT_BTREE_BUF, 8, head(0x524d_4233, 0, 100));
        assert_eq!(names(&b, 1, 1), vec!["rmapbt level 0: recs[4-8]"]);
        // bmbt: the long header of 72 bytes.
        let b = item(XFS_BLFT_BTREE_BUF, 8, head(0x424d_4133, 0, 5));
        let n = names(&b, 0, 1);
        assert!(n.contains(&"bb_pad".to_string()));
        assert!(n.contains(&"recs[1-3]".to_string()));
        // Without the header the type is not known.
        let b = item(XFS_BLFT_BTREE_BUF, 8, None);
        assert!(names(&b, 3, 1)[0].contains("type unknown"));
    }

    #[test]
    fn da_and_leaf_runs_name_header_fields_and_entries() {
        // Directory leaf1, 4096 bytes, 10 entries: header 64, entries of
        // 8 bytes, bestcount in the last 4 bytes.
        let b = item(XFS_BLFT_DIR_LEAF1_BUF, 8, head(0, 0, 10));
        let n = names(&b, 0, 1);
        assert!(n.contains(&"info.owner".to_string()));
        assert!(n.contains(&"count".to_string()) && n.contains(&"stale".to_string()));
        assert!(n.contains(&"ents[1-8]".to_string()));
        assert_eq!(
            names(&b, 31, 1),
            vec![
                "bests[] or unused space (bests grow down from the tail)",
                "tail (bestcount)"
            ]
        );
        // da node: 64-byte header, 8-byte entries.
        let b = item(XFS_BLFT_DA_NODE_BUF, 8, head(0, 1, 2));
        let n = names(&b, 0, 1);
        assert!(n.contains(&"level".to_string()));
        assert!(n.contains(&"btree[1-2]".to_string()));
        // Attr leaf: 80-byte header, 3 entries end at 104.
        let b = item(XFS_BLFT_ATTR_LEAF_BUF, 8, head(0, 0, 3));
        let n = names(&b, 0, 1);
        assert!(n.contains(&"freemap[2]".to_string()) && n.contains(&"pad2".to_string()));
        assert!(n.contains(&"entries[1-3]".to_string()));
        assert_eq!(
            names(&b, 31, 1),
            vec!["names and values (or free space before them)"]
        );
        // Dir free: header 64, bests of 2 bytes.
        let b = item(XFS_BLFT_DIR_FREE_BUF, 8, head(0, 0, 5));
        let n = names(&b, 0, 1);
        assert!(n.contains(&"nvalid".to_string()));
        assert!(n.contains(&"bests[1-5]".to_string()));
        // Remote value and symlink headers (56 bytes), then data.
        let b = item(XFS_BLFT_SYMLINK_BUF, 8, None);
        let n = names(&b, 0, 1);
        assert_eq!(n.first().unwrap(), "sl_magic");
        assert_eq!(n.last().unwrap(), "symlink target bytes");
        let b = item(XFS_BLFT_ATTR_RMT_BUF, 8, None);
        assert!(names(&b, 0, 1).contains(&"rm_owner".to_string()));
    }
}
