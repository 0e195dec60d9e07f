//! The bytes of one sector or block with every field of the structure
//! there: its kernel name (without the structure's prefix), offset and size
//! in the shown bytes, the raw bytes, the decoded value and what it means.
//!
//! What a daddr holds is found the way a reader of the disk would: the AG
//! header sectors by position (superblock, AGF, AGI, AGFL at sectors 0-3 of
//! each AG), everything else by its magic number (inode, log record header,
//! directory, attr, da node, AG btree, bmbt, symlink and remote attr
//! blocks). Nothing is trusted: counts are clamped to the bytes shown.

use crate::xfs::ag::btree::{self, AgTree, BlockContent, BlockCtx};
use crate::xfs::ag::{Agf, Agfl, Agi, HeaderCtx};
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::ag::XfsAgfl;
use crate::xfs::format::attr::{
    XfsAttr3LeafHdr, XfsAttrLeafHdr, XFS_ATTR3_LEAF_MAGIC, XFS_ATTR3_RMT_MAGIC, XFS_ATTR_LEAF_MAGIC,
};
use crate::xfs::format::btree::XfsBtreeSblock;
use crate::xfs::format::da::{XfsDa3NodeHdr, XfsDaNodeHdr, XFS_DA3_NODE_MAGIC, XFS_DA_NODE_MAGIC};
use crate::xfs::format::dinode::{
    XfsBtreeBlockLong, XfsDinode, XFS_BMAP_CRC_MAGIC, XFS_BMAP_MAGIC, XFS_DINODE_MAGIC,
    XFS_SYMLINK_MAGIC,
};
use crate::xfs::format::dir2::{
    XfsDir3BlkHdr, XfsDir3DataHdr, XFS_DIR2_BLOCK_MAGIC, XFS_DIR2_DATA_MAGIC, XFS_DIR2_FREE_MAGIC,
    XFS_DIR2_LEAF1_MAGIC, XFS_DIR2_LEAFN_MAGIC, XFS_DIR3_BLOCK_MAGIC, XFS_DIR3_DATA_MAGIC,
    XFS_DIR3_FREE_MAGIC, XFS_DIR3_LEAF1_MAGIC, XFS_DIR3_LEAFN_MAGIC,
};
use crate::xfs::format::log::{XlogRecHeader, XLOG_HEADER_MAGIC_NUM};
use crate::xfs::fs::Fs;
use crate::xfs::log::run_fields::{FieldTable, AGF_FIELDS, AGI_FIELDS, SB_FIELDS};
use crate::xfs::read::ReadAt;
use crate::xfs::sb::{Field, Superblock};
use crate::xfs::types::{AgBlock, AgNumber, Daddr};
use core::mem::{offset_of, size_of};
use serde::{Deserialize, Serialize};

/// One field of the shown bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HexField {
    /// The kernel's name without the structure's prefix (`blocksize` for
    /// `sb_blocksize`); array members and entries carry their index
    /// (`recs[3]`, `entry[2].name`).
    pub name: String,
    /// Bytes from the start of the shown bytes.
    pub offset: u32,
    pub size: u32,
    /// The decoded value.
    pub value: String,
    /// What it means, in a line.
    pub meaning: String,
    /// The structure the field belongs to ("superblock", "inode 131 core",
    /// "bnobt record 3").
    pub group: String,
    /// Where the value points, when it is a pointer.
    #[serde(default)]
    pub link: Option<Link>,
}

/// What a pointer field points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Link {
    Inode(u64),
    Daddr(u64),
}

/// A sector or block, decoded for the hex view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HexBlock {
    pub daddr: u64,
    #[serde(with = "crate::xfs::bytes")]
    pub bytes: Vec<u8>,
    /// What is there ("superblock (AG 0)", "inode 131", "bnobt block").
    pub structure: String,
    /// A paragraph for people about that structure.
    pub explanation: String,
    pub fields: Vec<HexField>,
    /// What was odd while decoding (the bytes are shown anyway).
    pub notes: Vec<String>,
    /// The copies of this block the log holds (filled in by the caller
    /// when the log has been decoded): which chunks each one dirtied.
    #[serde(default)]
    pub logged: Vec<LoggedCopy>,
}

/// One buffer item of the log that logs the block shown.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoggedCopy {
    /// Transaction (checkpoint) index in the decoded log.
    pub tx: u32,
    /// Item index in that transaction.
    pub item: u32,
    /// Dirty runs as (first byte, bytes): 128-byte chunks of the bitmap.
    pub runs: Vec<(u32, u32)>,
    /// The run labels (fields the chunks cover).
    pub labels: Vec<String>,
}

/// Bytes the view shows at most (a 64 KiB directory block).
pub const MAX_HEX_BYTES: u32 = 65_536;
/// Fields the view lists at most (records of a full btree leaf and more).
pub const MAX_HEX_FIELDS: usize = 4_096;

const BB: u64 = 512;

struct Out {
    fields: Vec<HexField>,
    len: usize,
}

impl Out {
    fn add(
        &mut self,
        group: &str,
        name: impl Into<String>,
        offset: usize,
        size: usize,
        value: String,
        meaning: &str,
    ) {
        if self.fields.len() >= MAX_HEX_FIELDS
            || offset.saturating_add(size) > self.len
            || size == 0
        {
            return;
        }
        self.fields.push(HexField {
            name: name.into(),
            offset: u32::try_from(offset).unwrap_or(u32::MAX),
            size: u32::try_from(size).unwrap_or(u32::MAX),
            value,
            meaning: meaning.to_string(),
            group: group.to_string(),
            link: None,
        });
    }

    /// A field decoded from its bytes: a big-endian number up to 8 bytes,
    /// a UUID for 16, hex otherwise; `le` for the little-endian CRCs.
    fn raw(
        &mut self,
        b: &[u8],
        group: &str,
        name: &str,
        offset: usize,
        size: usize,
        meaning: &str,
    ) {
        let mut value = decode(b, offset, size, name.ends_with("crc"));
        if name.starts_with("magic") && (size == 2 || size == 4) {
            let raw: String = b
                .get(offset..offset.saturating_add(size))
                .unwrap_or(&[])
                .iter()
                .map(|c| {
                    if c.is_ascii_graphic() {
                        char::from(*c)
                    } else {
                        '.'
                    }
                })
                .collect();
            let v = be(b, offset, size).unwrap_or(0);
            value = format!("{v:#x} (\"{raw}\")");
        }
        self.add(group, name, offset, size, value, meaning);
    }
}

fn be(b: &[u8], off: usize, size: usize) -> Option<u64> {
    let s = b.get(off..off.checked_add(size)?)?;
    if size > 8 {
        return None;
    }
    Some(
        s.iter()
            .fold(0u64, |a, x| a.wrapping_shl(8) | u64::from(*x)),
    )
}

fn decode(b: &[u8], off: usize, size: usize, le: bool) -> String {
    let Some(s) = off.checked_add(size).and_then(|end| b.get(off..end)) else {
        return String::new();
    };
    if le && size == 4 {
        let v = s
            .iter()
            .rev()
            .fold(0u32, |a, x| a.wrapping_shl(8) | u32::from(*x));
        return format!("{v:#010x}");
    }
    if size == 16 {
        let mut u = [0u8; 16];
        u.copy_from_slice(s);
        return crate::xfs::sb::uuid_text(&u);
    }
    if size <= 8 {
        let v = s
            .iter()
            .fold(0u64, |a, x| a.wrapping_shl(8) | u64::from(*x));
        if v == u64::MAX >> (64usize.saturating_sub(size.saturating_mul(8)) & 63) && size >= 4 {
            return format!("{v} (all ones: null)");
        }
        return v.to_string();
    }
    s.iter().map(|x| format!("{x:02x}")).collect()
}

/// Decode what is at `daddr` for the hex view.
pub fn describe<R: ReadAt>(fs: &Fs<R>, daddr: u64) -> Result<HexBlock> {
    let geo = &fs.geo;
    let sect = u64::from(geo.sectsize).max(BB);
    let bs = u64::from(geo.blocksize).max(BB);
    let ag_bbs = u64::from(geo.agblocks).saturating_mul(bs / BB).max(1);
    let agno = daddr.checked_div(ag_bbs).unwrap_or(0);
    let in_ag = daddr.checked_rem(ag_bbs).unwrap_or(0);
    let sect_bbs = sect / BB;
    let fs_bbs = geo.dblocks.saturating_mul(bs / BB);
    if daddr >= fs_bbs {
        return Err(Error::corrupt(
            "hex view",
            Location::Daddr { daddr },
            format!("daddr {daddr} is past the end of the filesystem ({fs_bbs} sectors)"),
        ));
    }
    let agno32 = u32::try_from(agno).unwrap_or(u32::MAX);
    if in_ag < sect_bbs.saturating_mul(4)
        && in_ag.checked_rem(sect_bbs) == Some(0)
        && agno < u64::from(geo.agcount)
    {
        return ag_header(
            fs,
            daddr,
            AgNumber(agno32),
            in_ag.checked_div(sect_bbs).unwrap_or(0),
        );
    }
    let first = fs.read_daddr("hex view", Daddr(daddr), BB)?;
    let m32 = be(&first, 0, 4).unwrap_or(0);
    let m16 = be(&first, 0, 2).unwrap_or(0);
    let da_magic = be(&first, 8, 2).unwrap_or(0);
    if m32 == u64::from(XLOG_HEADER_MAGIC_NUM) {
        return Ok(log_record(daddr, first));
    }
    if m16 == u64::from(XFS_DINODE_MAGIC) {
        let len = u64::from(geo.inodesize).max(BB);
        let bytes = fs.read_daddr("hex view", Daddr(daddr), len)?;
        let mut h = inode(fs, daddr, bytes);
        add_links(fs, AgNumber(agno32), "inode", &h.bytes, &mut h.fields);
        return Ok(h);
    }
    let dirblk = bs.saturating_mul(1u64.checked_shl(u32::from(geo.dirblklog)).unwrap_or(1));
    let dir_magics = [
        XFS_DIR2_BLOCK_MAGIC,
        XFS_DIR2_DATA_MAGIC,
        XFS_DIR3_BLOCK_MAGIC,
        XFS_DIR3_DATA_MAGIC,
        XFS_DIR2_FREE_MAGIC,
        XFS_DIR3_FREE_MAGIC,
    ];
    let dir_leaf = [
        XFS_DIR2_LEAF1_MAGIC,
        XFS_DIR2_LEAFN_MAGIC,
        XFS_DIR3_LEAF1_MAGIC,
        XFS_DIR3_LEAFN_MAGIC,
    ];
    let is_dir = dir_magics.iter().any(|m| u64::from(*m) == m32)
        || dir_leaf.iter().any(|m| u64::from(*m) == da_magic);
    let len = if is_dir { dirblk } else { bs }
        .min(u64::from(MAX_HEX_BYTES))
        .min(fs_bbs.saturating_sub(daddr).saturating_mul(BB));
    let bytes = fs.read_daddr("hex view", Daddr(daddr), len)?;
    let mut out = Out {
        fields: Vec::new(),
        len: bytes.len(),
    };
    let mut notes = Vec::new();
    let (structure, explanation) = if is_dir && dir_magics.iter().any(|m| u64::from(*m) == m32) {
        dir_block(&bytes, &mut out, m32, geo.v5, &fs.sb)
    } else if is_dir {
        da_header(&bytes, &mut out, geo.v5, "directory leaf");
        leaf_hdr_tail(&bytes, &mut out, geo.v5);
        (
            "directory leaf block".to_string(),
            "A directory's leaf block: the hash of every name, sorted, each with the address of its entry in a data block, so a lookup is a binary search. In a leaf1 (single-leaf) directory the block ends with the best free space of every data block.".to_string(),
        )
    } else if da_magic == u64::from(XFS_DA_NODE_MAGIC) || da_magic == u64::from(XFS_DA3_NODE_MAGIC)
    {
        da_node(&bytes, &mut out, geo.v5)
    } else if da_magic == u64::from(XFS_ATTR_LEAF_MAGIC)
        || da_magic == u64::from(XFS_ATTR3_LEAF_MAGIC)
    {
        attr_leaf(&bytes, &mut out, geo.v5)
    } else if m32 == u64::from(XFS_BMAP_MAGIC) || m32 == u64::from(XFS_BMAP_CRC_MAGIC) {
        bmbt_block(&bytes, &mut out, geo.v5)
    } else if m32 == u64::from(XFS_SYMLINK_MAGIC) || m32 == u64::from(XFS_ATTR3_RMT_MAGIC) {
        remote_hdr(&bytes, &mut out, m32 == u64::from(XFS_SYMLINK_MAGIC))
    } else if let Some(tree) = ag_tree_of(m32, geo.v5) {
        ag_btree_block(
            fs,
            &bytes,
            &mut out,
            tree,
            AgNumber(agno32),
            daddr,
            &mut notes,
        )
    } else {
        notes.push(format!(
            "no structure this view knows starts here (first word {m32:#010x}): file data, free space, or a block without a magic number (AGFL-held, rt bitmap, v4 remote value)"
        ));
        ("no known structure".to_string(), String::new())
    };
    out.fields.sort_by_key(|f| f.offset);
    add_links(fs, AgNumber(agno32), &structure, &bytes, &mut out.fields);
    Ok(HexBlock {
        daddr,
        bytes,
        structure,
        explanation,
        fields: out.fields,
        notes,
        logged: Vec::new(),
    })
}

/// A structure's members as the kernel names them: (name without the
/// prefix, offset, size).
macro_rules! layout {
    ($t:ty, $prefix:literal; $($f:ident),* $(,)?) => {
        [$({
            let name = stringify!($f);
            (
                name.strip_prefix($prefix).unwrap_or(name),
                offset_of!($t, $f),
                size_of_val_of::<$t, _>(|s| &s.$f),
            )
        }),*]
    };
}

/// A member table with the structure's prefix taken off the names.
fn members(table: FieldTable, prefix: &str) -> Vec<(&'static str, usize, usize)> {
    table
        .iter()
        .map(|(n, o, z)| (n.strip_prefix(prefix).unwrap_or(n), *o, *z))
        .collect()
}

/// The members of a structure with values and meanings from the parsed
/// header's field list where it has one at the same place (the AG header
/// parsers keep xfs_db's names; the hex view keeps the kernel's), decoded
/// from the bytes otherwise.
fn merge(b: &[u8], out: &mut Out, group: &str, members: &[(&str, usize, usize)], parsed: &[Field]) {
    for (name, off, size) in members {
        let p = parsed
            .iter()
            .find(|f| usize::from(f.offset) == *off && usize::from(f.size) == *size);
        match p {
            Some(f) => {
                let value = match &f.note {
                    Some(n) => format!("{} ({n})", f.value),
                    None => f.value.to_string(),
                };
                out.add(group, *name, *off, *size, value, f.meaning);
            }
            None => out.raw(b, group, name, *off, *size, ""),
        }
    }
}

fn ag_header<R: ReadAt>(fs: &Fs<R>, daddr: u64, agno: AgNumber, n: u64) -> Result<HexBlock> {
    let bytes = fs.read_daddr("hex view", Daddr(daddr), u64::from(fs.geo.sectsize).max(BB))?;
    let mut out = Out {
        fields: Vec::new(),
        len: bytes.len(),
    };
    let b = &bytes;
    let mut notes = Vec::new();
    let ctx = HeaderCtx::new(fs, agno);
    let mut parsed = |r: std::result::Result<Vec<Field>, String>| match r {
        Ok(f) => f,
        Err(e) => {
            notes.push(e);
            Vec::new()
        }
    };
    let with_ctx =
        |f: &dyn Fn(&HeaderCtx) -> Result<Vec<Field>>| -> std::result::Result<Vec<Field>, String> {
            match &ctx {
                Ok(c) => f(c).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            }
        };
    let (structure, explanation) = match n {
        0 => {
            let p = parsed(
                Superblock::parse(b)
                    .map(|s| s.fields())
                    .map_err(|e| e.to_string()),
            );

            merge(b, &mut out, "superblock", &members(SB_FIELDS, "sb_"), &p);
            (
                format!("superblock (AG {})", agno.0),
                if agno.0 == 0 {
                    "The primary superblock: the filesystem's geometry (block size, AG size and count, inode size), its features, where the root directory and the log are, and summary counters. The kernel reads only this copy at mount; the copies at the start of the other AGs are for xfs_repair.".to_string()
                } else {
                    "A secondary superblock: a copy of the primary's geometry kept for xfs_repair. Growing the filesystem or changing a feature updates it; its counters are not kept current.".to_string()
                },
            )
        }
        1 => {
            let p = parsed(with_ctx(&|c| {
                Agf::parse(b, Daddr(daddr), c).map(|a| a.fields())
            }));

            merge(b, &mut out, "agf", &members(AGF_FIELDS, "agf_"), &p);
            (
                format!("AGF (AG {})", agno.0),
                "The AG free space header: the roots and heights of the free-space btrees (by block number and by size), of the reverse-mapping and reference-count btrees when the filesystem has them, the free list's window into the AGFL, and the AG's free block count and longest free extent.".to_string(),
            )
        }
        2 => {
            let p = parsed(with_ctx(&|c| {
                Agi::parse(b, Daddr(daddr), c).map(|a| a.fields())
            }));

            merge(b, &mut out, "agi", &members(AGI_FIELDS, "agi_"), &p);
            (
                format!("AGI (AG {})", agno.0),
                "The AG inode header: how many inodes are allocated and free in this AG, the roots of the inode btree and the free-inode btree, and the 64 heads of the unlinked lists (inodes removed from every directory but still open, freed at the next mount if the system stopped first).".to_string(),
            )
        }
        _ => {
            let p = parsed(with_ctx(&|c| {
                Agfl::parse(b, Daddr(daddr), c).map(|a| a.fields())
            }));
            let hdr = if fs.geo.v5 {
                let m = layout!(XfsAgfl, "agfl_"; agfl_magicnum, agfl_seqno, agfl_uuid, agfl_lsn, agfl_crc);
                merge(b, &mut out, "agfl", &m, &p);
                size_of::<XfsAgfl>()
            } else {
                0
            };
            let slots = b.len().saturating_sub(hdr) / 4;
            for i in 0..slots {
                out.raw(
                    b,
                    "agfl slots",
                    &format!("bno[{i}]"),
                    hdr.saturating_add(i.saturating_mul(4)),
                    4,
                    "a block held for btree growth (when the slot is between flfirst and fllast)",
                );
            }
            (
                format!("AGFL (AG {})", agno.0),
                "The AG free list: a ring of block numbers set aside so the free-space and reverse-mapping btrees can grow or shrink while space is being allocated, without recursing into the allocator. The AGF says which slots are in use (flfirst to fllast).".to_string(),
            )
        }
    };
    add_links(fs, agno, &structure, b, &mut out.fields);
    Ok(HexBlock {
        daddr,
        bytes: bytes.clone(),
        structure,
        explanation,
        fields: out.fields,
        notes,
        logged: Vec::new(),
    })
}

macro_rules! table {
    ($out:expr, $b:expr, $group:expr, $base:expr, $t:ty, $prefix:literal; $($f:ident => $m:literal),* $(,)?) => {{
        $(
            let name = stringify!($f);
            let name = name.strip_prefix($prefix).unwrap_or(name);
            $out.raw($b, $group, name, $base.saturating_add(offset_of!($t, $f)), size_of_val_of::<$t, _>(|s| &s.$f), $m);
        )*
    }};
}

fn size_of_val_of<T, F>(_: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

fn log_record(daddr: u64, bytes: Vec<u8>) -> HexBlock {
    let mut out = Out {
        fields: Vec::new(),
        len: bytes.len(),
    };
    let b = &bytes;
    table!(out, b, "log record header", 0usize, XlogRecHeader, "h_";
        h_magicno => "magic number 0xfeedbabe: a log record starts here",
        h_cycle => "how many times the log had wrapped when this record was written; recovery finds the head where the cycle drops",
        h_version => "record format: 2 for logs with stripe units and v5 filesystems",
        h_len => "bytes of log data in this record, after its header sectors",
        h_lsn => "log sequence number of this record: cycle in the high 32 bits, block in the low",
        h_tail_lsn => "where the log's tail was when this record was written: recovery starts there",
        h_crc => "CRC32c of the header and the data (little-endian); 0 on old logs",
        h_prev_block => "block of the previous record, for walking backwards",
        h_num_logops => "log operations (transaction headers, items, commits) starting in this record",
        h_cycle_data => "the first word of each data sector, saved here: on disk that word holds the cycle number",
        h_fmt => "the writer's byte order (1: little-endian, 2: big-endian)",
        h_fs_uuid => "the filesystem this log belongs to",
        h_size => "size of the in-memory log buffer that wrote this record (32 KiB to 256 KiB)",
    );
    HexBlock {
        daddr,
        bytes,
        structure: "log record header".into(),
        explanation: "The first sector of a record in the log. Every record starts with this header; the log's data follows in the next sectors, with the first word of each sector replaced by the cycle number so a torn write shows. Records carry checkpoints, not single transactions: each one holds the items a delayed-logging checkpoint committed.".into(),
        fields: out.fields,
        notes: Vec::new(),
        logged: Vec::new(),
    }
}

fn inode<R: ReadAt>(fs: &Fs<R>, daddr: u64, bytes: Vec<u8>) -> HexBlock {
    let mut out = Out {
        fields: Vec::new(),
        len: bytes.len(),
    };
    let b = &bytes;
    let ino = be(b, offset_of!(XfsDinode, di_ino), 8).unwrap_or(0);
    let v3 = be(b, offset_of!(XfsDinode, di_version), 1).unwrap_or(0) >= 3;
    let group = format!("inode {ino} core");
    table!(out, b, &group, 0usize, XfsDinode, "di_";
        di_magic => "magic number 0x494e, \"IN\"",
        di_mode => "file type and permission bits (as st_mode)",
        di_version => "inode version: 3 on v5 (CRC) filesystems, 2 before",
        di_format => "how the data fork is stored: 1 local (in the inode), 2 extents, 3 btree, 0 device",
        di_metatype => "v3 metadata inodes: what metadata file this is; 0 otherwise",
        di_uid => "owner user id",
        di_gid => "owner group id",
        di_nlink => "link count: directory entries naming this inode (plus . and .. for directories)",
        di_projid_lo => "project id, low 16 bits",
        di_projid_hi => "project id, high 16 bits",
        di_big_nextents => "data fork extent count when the large extent counters feature is on; otherwise padding and a flush counter",
        di_atime => "last access time",
        di_mtime => "last data modification time",
        di_ctime => "last inode change time",
        di_size => "file size in bytes (for a directory, bytes of its entries)",
        di_nblocks => "blocks held by both forks, btree blocks included",
        di_extsize => "extent size hint in blocks",
        di_nextents => "data fork extents (without large extent counters)",
        di_anextents => "attr fork extents (without large extent counters)",
        di_forkoff => "where the attr fork starts: this value times 8 bytes after the core; 0 means no attr fork",
        di_aformat => "how the attr fork is stored: 1 local (shortform), 2 extents, 3 btree",
        di_dmevmask => "DMAPI event mask (unused)",
        di_dmstate => "DMAPI state (unused)",
        di_flags => "inode flags: realtime, immutable, append-only, sync, noatime, ...",
        di_gen => "generation number, changed each time the inode number is reused",
        di_next_unlinked => "next inode on this AGI unlinked list (all ones: none)",
    );
    if v3 {
        table!(out, b, &group, 0usize, XfsDinode, "di_";
            di_crc => "CRC32c of the whole inode (little-endian)",
            di_changecount => "change counter: one more each transaction that logs this inode's core",
            di_lsn => "log sequence number of the last write of this inode to disk",
            di_flags2 => "more flags: DAX, reflink, CoW extent size hint, big timestamps, large extent counters",
            di_cowextsize => "copy-on-write extent size hint in blocks",
            di_pad2 => "padding",
            di_crtime => "creation time",
            di_ino => "this inode's own number (self-description)",
            di_uuid => "the filesystem's metadata UUID",
        );
    }
    let core = if v3 { size_of::<XfsDinode>() } else { 100 };
    let forkoff = usize::from(
        b.get(offset_of!(XfsDinode, di_forkoff))
            .copied()
            .unwrap_or(0),
    );
    let isize = usize::from(fs.geo.inodesize).min(b.len());
    let attr_at = if forkoff == 0 {
        isize
    } else {
        core.saturating_add(forkoff.saturating_mul(8)).min(isize)
    };
    let mode = be(b, 2, 2).unwrap_or(0);
    let flags2 = if v3 {
        be(b, offset_of!(XfsDinode, di_flags2), 8).unwrap_or(0)
    } else {
        0
    };
    let nrext64 = flags2 & (1 << 4) != 0;
    let (dext, aext) = if nrext64 {
        (be(b, 24, 8).unwrap_or(0), be(b, 76, 4).unwrap_or(0))
    } else {
        (be(b, 76, 4).unwrap_or(0), be(b, 80, 2).unwrap_or(0))
    };
    let ftype = v3 || fs.sb.features2 & 0x200 != 0;
    let dg = format!("inode {ino} data fork");
    match b.get(5).copied() {
        Some(2) => extent_records(b, &mut out, &dg, "u.bmx", core, attr_at, dext),
        Some(1) if mode & 0o170000 == 0o040000 => sf_dir(b, &mut out, &dg, core, attr_at, ftype),
        _ => {}
    }
    if forkoff != 0 {
        let ag = format!("inode {ino} attr fork");
        match b.get(83).copied() {
            Some(2) => extent_records(b, &mut out, &ag, "a.bmx", attr_at, isize, aext),
            Some(1) => sf_attr(b, &mut out, &ag, attr_at, isize),
            _ => {}
        }
    }
    out.add(
        &format!("inode {ino} forks"),
        "u",
        core,
        attr_at.saturating_sub(core),
        format!("{} bytes", attr_at.saturating_sub(core)),
        "the data fork: file data or entries held in the inode, extent records, or a btree root",
    );
    if forkoff != 0 {
        out.add(
            &format!("inode {ino} forks"),
            "a",
            attr_at,
            isize.saturating_sub(attr_at),
            format!("{} bytes", isize.saturating_sub(attr_at)),
            "the attr fork: extended attributes held in the inode (shortform), extent records, or a btree root",
        );
    }
    HexBlock {
        daddr,
        bytes,
        structure: format!("inode {ino}"),
        explanation: "An on-disk inode: the core (type, owner, times, size, counts, where the attr fork starts) and then the literal area, split between the data fork and, from di_forkoff, the attr fork. Small directories, symlinks and xattrs live right here; larger ones are extents or btree roots pointing to blocks.".into(),
        fields: out.fields,
        notes: Vec::new(),
        logged: Vec::new(),
    }
}

fn dir3_hdr(b: &[u8], out: &mut Out, group: &str) {
    table!(out, b, group, 0usize, XfsDir3BlkHdr, "";
        magic => "magic number: which kind of directory block this is",
        crc => "CRC32c of the whole block (little-endian)",
        blkno => "daddr of this block (self-description)",
        lsn => "log sequence number of the last write",
        uuid => "the filesystem's metadata UUID",
        owner => "the directory inode that owns this block",
    );
}

fn dir_block(b: &[u8], out: &mut Out, magic: u64, v5: bool, sb: &Superblock) -> (String, String) {
    let group = "directory block header";
    let free = magic == u64::from(XFS_DIR2_FREE_MAGIC) || magic == u64::from(XFS_DIR3_FREE_MAGIC);
    if free {
        if v5 {
            dir3_hdr(b, out, group);
        } else {
            out.raw(b, group, "magic", 0, 4, "magic number \"XD2F\"");
        }
        let base = if v5 { size_of::<XfsDir3BlkHdr>() } else { 4 };
        out.raw(
            b,
            group,
            "firstdb",
            base,
            4,
            "first data block whose best free space this block lists",
        );
        out.raw(
            b,
            group,
            "nvalid",
            base.saturating_add(4),
            4,
            "entries of the bests array in use",
        );
        out.raw(
            b,
            group,
            "nused",
            base.saturating_add(8),
            4,
            "entries naming a data block that exists",
        );
        return (
            "directory free index block".into(),
            "A node-form directory's free index: for each data block, the length of its largest free region, so a new entry finds room without reading every block.".into(),
        );
    }
    let hdr_len = if v5 {
        dir3_hdr(b, out, group);
        for i in 0..3usize {
            let o = offset_of!(XfsDir3DataHdr, best_free).saturating_add(i.saturating_mul(4));
            out.raw(
                b,
                group,
                &format!("best_free[{i}].offset"),
                o,
                2,
                "offset of one of the three largest free regions",
            );
            out.raw(
                b,
                group,
                &format!("best_free[{i}].length"),
                o.saturating_add(2),
                2,
                "its length in bytes",
            );
        }
        out.raw(
            b,
            group,
            "pad",
            offset_of!(XfsDir3DataHdr, pad),
            4,
            "padding to 8 bytes",
        );
        size_of::<XfsDir3DataHdr>()
    } else {
        out.raw(
            b,
            group,
            "magic",
            0,
            4,
            "magic number: which kind of directory block this is",
        );
        for i in 0..3usize {
            let o = 4usize.saturating_add(i.saturating_mul(4));
            out.raw(
                b,
                group,
                &format!("bestfree[{i}].offset"),
                o,
                2,
                "offset of one of the three largest free regions",
            );
            out.raw(
                b,
                group,
                &format!("bestfree[{i}].length"),
                o.saturating_add(2),
                2,
                "its length in bytes",
            );
        }
        16
    };
    let block =
        magic == u64::from(XFS_DIR2_BLOCK_MAGIC) || magic == u64::from(XFS_DIR3_BLOCK_MAGIC);
    let mut end = b.len();
    if block {
        // The tail: leaf count and stale count in the last 8 bytes, the
        // leaf entries (hash, address) before it.
        let tail = b.len().saturating_sub(8);
        out.raw(
            b,
            "block tail",
            "count",
            tail,
            4,
            "leaf entries in this block (stale included)",
        );
        out.raw(
            b,
            "block tail",
            "stale",
            tail.saturating_add(4),
            4,
            "leaf entries no longer used",
        );
        let count = usize::try_from(be(b, tail, 4).unwrap_or(0))
            .unwrap_or(0)
            .min(tail / 8);
        end = tail.saturating_sub(count.saturating_mul(8));
        leaf_entries(b, out, end, count);
    }
    // Entries and unused regions, walked from the header.
    let ftype = v5 || sb.features2 & 0x200 != 0;
    let mut off = hdr_len;
    let mut n = 0usize;
    while off.saturating_add(8) <= end && out.fields.len() < MAX_HEX_FIELDS {
        let tag = be(b, off, 2).unwrap_or(0);
        if tag == 0xffff {
            let len = usize::try_from(be(b, off.saturating_add(2), 2).unwrap_or(0)).unwrap_or(0);
            if len < 8 || len % 8 != 0 {
                break;
            }
            out.add(
                "unused",
                format!("unused@{off}"),
                off,
                len.min(end.saturating_sub(off)),
                format!("{len} free bytes"),
                "a free region (freetag 0xffff, length, ..., tag)",
            );
            off = off.saturating_add(len);
            continue;
        }
        let namelen = usize::from(b.get(off.saturating_add(8)).copied().unwrap_or(0));
        let entsize = 11usize
            .saturating_add(namelen)
            .saturating_add(usize::from(ftype))
            .div_ceil(8)
            .saturating_mul(8);
        if namelen == 0 || off.saturating_add(entsize) > end {
            break;
        }
        let name: String = b
            .get(off.saturating_add(9)..off.saturating_add(9).saturating_add(namelen))
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .unwrap_or_default();
        let g = format!("entry {n}");
        out.raw(
            b,
            &g,
            &format!("entry[{n}].inumber"),
            off,
            8,
            "inode this name points to",
        );
        out.raw(
            b,
            &g,
            &format!("entry[{n}].namelen"),
            off.saturating_add(8),
            1,
            "name length",
        );
        out.add(
            &g,
            format!("entry[{n}].name"),
            off.saturating_add(9),
            namelen,
            format!("{name:?}"),
            "the name, not NUL-terminated",
        );
        if ftype {
            out.raw(
                b,
                &g,
                &format!("entry[{n}].ftype"),
                off.saturating_add(9).saturating_add(namelen),
                1,
                "file type, so readdir need not read the inode",
            );
        }
        out.raw(
            b,
            &g,
            &format!("entry[{n}].tag"),
            off.saturating_add(entsize).saturating_sub(2),
            2,
            "offset of this entry in the block, to find its start from its end",
        );
        off = off.saturating_add(entsize);
        n = n.saturating_add(1);
    }
    if block {
        (
            "directory block (single-block directory)".into(),
            "A directory that fits one directory block: a header with the three largest free regions, the entries (inode number, name, file type) and free regions in between, then at the end a sorted table of name hashes pointing back at the entries, and a tail with their count.".into(),
        )
    } else {
        (
            "directory data block".into(),
            "One data block of a larger directory: a header with the three largest free regions, then entries (inode number, name, file type) and free regions. The name hashes that find them live in separate leaf blocks.".into(),
        )
    }
}

fn da_header(b: &[u8], out: &mut Out, v5: bool, what: &str) -> usize {
    let group = format!("{what} header");
    out.raw(
        b,
        &group,
        "forw",
        0,
        4,
        "next block at this level (directory/attr block number), 0 if none",
    );
    out.raw(
        b,
        &group,
        "back",
        4,
        4,
        "previous block at this level, 0 if none",
    );
    out.raw(
        b,
        &group,
        "magic",
        8,
        2,
        "magic number: which kind of da block this is",
    );
    out.raw(b, &group, "pad", 10, 2, "padding");
    if v5 {
        out.raw(
            b,
            &group,
            "crc",
            12,
            4,
            "CRC32c of the whole block (little-endian)",
        );
        out.raw(
            b,
            &group,
            "blkno",
            16,
            8,
            "daddr of this block (self-description)",
        );
        out.raw(
            b,
            &group,
            "lsn",
            24,
            8,
            "log sequence number of the last write",
        );
        out.raw(b, &group, "uuid", 32, 16, "the filesystem's metadata UUID");
        out.raw(b, &group, "owner", 48, 8, "the inode that owns this block");
        56
    } else {
        12
    }
}

fn leaf_hdr_tail(b: &[u8], out: &mut Out, v5: bool) {
    let base = if v5 { 56 } else { 12 };
    out.raw(
        b,
        "directory leaf header",
        "count",
        base,
        2,
        "leaf entries (stale included)",
    );
    out.raw(
        b,
        "directory leaf header",
        "stale",
        base.saturating_add(2),
        2,
        "stale entries",
    );
    let first = if v5 { 64 } else { 16 };
    let count = usize::try_from(be(b, base, 2).unwrap_or(0)).unwrap_or(0);
    leaf_entries(b, out, first, count.min(b.len().saturating_sub(first) / 8));
}

/// A directory leaf's (hash, address) entries from byte `first`.
fn leaf_entries(b: &[u8], out: &mut Out, first: usize, count: usize) {
    for i in 0..count {
        let o = first.saturating_add(i.saturating_mul(8));
        out.raw(
            b,
            "leaf entries",
            &format!("ents[{i}].hashval"),
            o,
            4,
            "hash of a name",
        );
        out.raw(
            b,
            "leaf entries",
            &format!("ents[{i}].address"),
            o.saturating_add(4),
            4,
            "where its entry is, in 8-byte units from the start of the directory's data",
        );
    }
}

fn da_node(b: &[u8], out: &mut Out, v5: bool) -> (String, String) {
    let base = da_header(b, out, v5, "da node");
    out.raw(
        b,
        "da node header",
        "count",
        base,
        2,
        "entries in this node",
    );
    out.raw(
        b,
        "da node header",
        "level",
        base.saturating_add(2),
        2,
        "height above the leaves (1: children are leaves)",
    );
    let first = if v5 {
        out.raw(
            b,
            "da node header",
            "pad32",
            base.saturating_add(4),
            4,
            "padding",
        );
        size_of::<XfsDa3NodeHdr>()
    } else {
        size_of::<XfsDaNodeHdr>()
    };
    let count = usize::try_from(be(b, base, 2).unwrap_or(0)).unwrap_or(0);
    for i in 0..count.min(b.len().saturating_sub(first) / 8) {
        let o = first.saturating_add(i.saturating_mul(8));
        out.raw(
            b,
            "node entries",
            &format!("btree[{i}].hashval"),
            o,
            4,
            "the highest name hash in this child",
        );
        out.raw(
            b,
            "node entries",
            &format!("btree[{i}].before"),
            o.saturating_add(4),
            4,
            "the child's block number in the fork",
        );
    }
    (
        "da btree node".into(),
        "An interior node of a directory's or attr fork's hash btree: pairs of (highest hash below, child block). Lookups hash the name and descend.".into(),
    )
}

fn attr_leaf(b: &[u8], out: &mut Out, v5: bool) -> (String, String) {
    let base = da_header(b, out, v5, "attr leaf");
    let g = "attr leaf header";
    out.raw(b, g, "count", base, 2, "entries in this leaf");
    out.raw(
        b,
        g,
        "usedbytes",
        base.saturating_add(2),
        2,
        "bytes of names and values in use",
    );
    out.raw(
        b,
        g,
        "firstused",
        base.saturating_add(4),
        2,
        "offset of the lowest name/value in the block",
    );
    out.raw(
        b,
        g,
        "holes",
        base.saturating_add(6),
        1,
        "set when freed space needs compacting",
    );
    out.raw(b, g, "pad1", base.saturating_add(7), 1, "padding");
    for i in 0..3usize {
        let o = base.saturating_add(8).saturating_add(i.saturating_mul(4));
        out.raw(
            b,
            g,
            &format!("freemap[{i}].base"),
            o,
            2,
            "start of a free region",
        );
        out.raw(
            b,
            g,
            &format!("freemap[{i}].size"),
            o.saturating_add(2),
            2,
            "its length",
        );
    }
    let first = if v5 {
        out.raw(b, g, "pad2", base.saturating_add(20), 4, "padding");
        size_of::<XfsAttr3LeafHdr>()
    } else {
        size_of::<XfsAttrLeafHdr>()
    };
    let count = usize::try_from(be(b, base, 2).unwrap_or(0)).unwrap_or(0);
    for i in 0..count.min(b.len().saturating_sub(first) / 8) {
        let o = first.saturating_add(i.saturating_mul(8));
        let ge = "attr leaf entries";
        out.raw(
            b,
            ge,
            &format!("entries[{i}].hashval"),
            o,
            4,
            "hash of the name",
        );
        out.raw(
            b,
            ge,
            &format!("entries[{i}].nameidx"),
            o.saturating_add(4),
            2,
            "offset of the name (and local value) in this block",
        );
        out.raw(
            b,
            ge,
            &format!("entries[{i}].flags"),
            o.saturating_add(6),
            1,
            "namespace (user, trusted, secure, parent), local or remote value, incomplete",
        );
        out.raw(
            b,
            ge,
            &format!("entries[{i}].pad2"),
            o.saturating_add(7),
            1,
            "padding",
        );
    }
    (
        "attr leaf block".into(),
        "A leaf of the extended attributes: a header, a table of entries sorted by name hash growing down from the top, and names with their values (or, for large values, pointers to remote value blocks) packed up from the bottom.".into(),
    )
}

fn remote_hdr(b: &[u8], out: &mut Out, symlink: bool) -> (String, String) {
    let g = if symlink {
        "symlink block header"
    } else {
        "remote value header"
    };
    out.raw(b, g, "magic", 0, 4, "magic number");
    out.raw(
        b,
        g,
        "offset",
        4,
        4,
        "byte offset of this block's piece in the whole value",
    );
    out.raw(b, g, "bytes", 8, 4, "bytes of the value in this block");
    out.raw(
        b,
        g,
        "crc",
        12,
        4,
        "CRC32c of header and data (little-endian)",
    );
    out.raw(b, g, "owner", 16, 8, "inode that owns the value");
    out.raw(b, g, "blkno", 24, 8, "daddr of this block");
    out.raw(b, g, "lsn", 32, 8, "log sequence number of the last write");
    out.raw(b, g, "uuid", 40, 16, "the filesystem's metadata UUID");
    if symlink {
        (
            "symlink block".into(),
            "The target of a symbolic link too long for the inode, after a self-describing header."
                .into(),
        )
    } else {
        (
            "remote attr value block".into(),
            "A piece of an xattr value too large for its leaf, after a self-describing header."
                .into(),
        )
    }
}

fn bmbt_block(b: &[u8], out: &mut Out, v5: bool) -> (String, String) {
    let g = "bmbt block header";
    table!(out, b, g, 0usize, XfsBtreeBlockLong, "bb_";
        bb_magic => "magic number \"BMA3\" (v5) or \"BMAP\"",
        bb_level => "height above the leaves (0: a leaf of extent records)",
        bb_numrecs => "records (leaf) or keys (node) in this block",
        bb_leftsib => "left sibling (filesystem block), all ones if none",
        bb_rightsib => "right sibling, all ones if none",
    );
    if v5 {
        table!(out, b, g, 0usize, XfsBtreeBlockLong, "bb_";
            bb_blkno => "daddr of this block",
            bb_lsn => "log sequence number of the last write",
            bb_uuid => "the filesystem's metadata UUID",
            bb_owner => "the inode whose fork this tree maps",
            bb_crc => "CRC32c of the block (little-endian)",
            bb_pad => "padding",
        );
    }
    let hdr = if v5 {
        size_of::<XfsBtreeBlockLong>()
    } else {
        24
    };
    let level = be(b, 4, 2).unwrap_or(0);
    let n = usize::try_from(be(b, 6, 2).unwrap_or(0)).unwrap_or(0);
    if level == 0 {
        for i in 0..n.min(b.len().saturating_sub(hdr) / 16) {
            let o = hdr.saturating_add(i.saturating_mul(16));
            let hi = be(b, o, 8).unwrap_or(0);
            let lo = be(b, o.saturating_add(8), 8).unwrap_or(0);
            let startoff = (hi >> 9) & ((1u64 << 54) - 1);
            let startblock = ((hi & 0x1ff) << 43) | (lo >> 21);
            let count = lo & 0x1f_ffff;
            let unwritten = hi >> 63 != 0;
            out.add(
                "extent records",
                format!("recs[{i}]"),
                o,
                16,
                format!(
                    "file offset {startoff}, block {startblock}, {count} blocks{}",
                    if unwritten { ", unwritten" } else { "" }
                ),
                "an extent: file offset, filesystem block, length, unwritten flag",
            );
        }
    } else {
        let maxrecs = b.len().saturating_sub(hdr) / 16;
        for i in 0..n.min(maxrecs) {
            let o = hdr.saturating_add(i.saturating_mul(8));
            out.raw(
                b,
                "keys",
                &format!("keys[{i}]"),
                o,
                8,
                "first file offset under the child",
            );
            let p = hdr
                .saturating_add(maxrecs.saturating_mul(8))
                .saturating_add(i.saturating_mul(8));
            out.raw(
                b,
                "pointers",
                &format!("ptrs[{i}]"),
                p,
                8,
                "the child's filesystem block",
            );
        }
    }
    (
        "bmbt block".into(),
        "A block of an inode's block-map btree, used when a fork has more extents than fit in the inode: leaves hold extent records (file offset, block, length), nodes hold keys and pointers.".into(),
    )
}

fn ag_tree_of(magic: u64, v5: bool) -> Option<AgTree> {
    [
        AgTree::Bno,
        AgTree::Cnt,
        AgTree::Ino,
        AgTree::Fino,
        AgTree::Rmap,
        AgTree::Refcount,
    ]
    .into_iter()
    .find(|t| t.magic(v5).map(u64::from) == Some(magic))
}

fn ag_btree_block<R: ReadAt>(
    fs: &Fs<R>,
    b: &[u8],
    out: &mut Out,
    tree: AgTree,
    agno: AgNumber,
    daddr: u64,
    notes: &mut Vec<String>,
) -> (String, String) {
    let g = format!("{} block header", tree.btree_name());
    let v5 = fs.geo.v5;
    table!(out, b, &g, 0usize, XfsBtreeSblock, "bb_";
        bb_magic => "magic number: which AG btree this block belongs to",
        bb_level => "height above the leaves (0: a leaf of records)",
        bb_numrecs => "records (leaf) or keys (node) in this block",
        bb_leftsib => "left sibling (AG block), all ones if none",
        bb_rightsib => "right sibling, all ones if none",
    );
    if v5 {
        table!(out, b, &g, 0usize, XfsBtreeSblock, "bb_";
            bb_blkno => "daddr of this block",
            bb_lsn => "log sequence number of the last write",
            bb_uuid => "the filesystem's metadata UUID",
            bb_owner => "the AG this block belongs to",
            bb_crc => "CRC32c of the block (little-endian)",
        );
    }
    let hdr = btree::header_len(v5);
    let ag_bbs = u64::from(fs.geo.agblocks)
        .saturating_mul(u64::from(fs.geo.blocksize) / BB)
        .max(1);
    let agbno = u32::try_from(
        daddr
            .checked_rem(ag_bbs)
            .unwrap_or(0)
            .checked_div(u64::from(fs.geo.blocksize) / BB)
            .unwrap_or(0),
    )
    .unwrap_or(0);
    let ctx = BlockCtx::new(fs, agno);
    match btree::parse_block(b, tree, &ctx, AgBlock(agbno), Daddr(daddr)) {
        Ok(blk) => {
            notes.extend(blk.problems.iter().cloned());
            match &blk.content {
                BlockContent::Leaf(recs) => {
                    let rl = tree.rec_len();
                    for (i, r) in recs.iter().enumerate() {
                        let o = hdr.saturating_add(i.saturating_mul(rl));
                        out.add(
                            "records",
                            format!("recs[{i}]"),
                            o,
                            rl,
                            record_text(r),
                            tree.meaning(),
                        );
                    }
                }
                BlockContent::Node(entries) => {
                    let kl = tree.key_len();
                    let maxk = btree::maxrecs(tree, fs.geo.blocksize, v5, false);
                    for (i, e) in entries.iter().enumerate() {
                        let o = hdr.saturating_add(i.saturating_mul(kl));
                        out.add(
                            "keys",
                            format!("keys[{i}]"),
                            o,
                            kl,
                            key_text(&e.key),
                            "the lowest key under the child (and, for the rmapbt, the highest)",
                        );
                        let p = hdr
                            .saturating_add(maxk.saturating_mul(kl))
                            .saturating_add(i.saturating_mul(4));
                        out.raw(
                            b,
                            "pointers",
                            &format!("ptrs[{i}]"),
                            p,
                            4,
                            "the child's AG block",
                        );
                    }
                }
            }
        }
        Err(e) => notes.push(e.to_string()),
    }
    (
        format!("{} block", tree.btree_name()),
        format!("A block of the AG's {}: {}. Leaves hold records, nodes hold keys and pointers to children; every block of a level is chained to its siblings.", tree.btree_name(), tree.meaning()),
    )
}

/// A leaf record of any AG btree in words.
pub fn record_text(r: &btree::Record) -> String {
    match r {
        btree::Record::Alloc(a) => {
            format!("startblock {}, blockcount {}", a.startblock, a.blockcount)
        }
        btree::Record::Inobt(c) => format!(
            "startino {}, holemask {:#06x}, count {}, freecount {}, free {:#018x}",
            c.startino, c.holemask, c.count, c.freecount, c.free
        ),
        btree::Record::Rmap(m) => format!(
            "startblock {}, blockcount {}, owner {}, offset {}{}{}{}",
            m.startblock,
            m.blockcount,
            btree::owner_name(m.owner).map_or_else(|| m.owner.to_string(), str::to_string),
            m.offset,
            if m.attr_fork { ", attr fork" } else { "" },
            if m.bmbt_block { ", bmbt block" } else { "" },
            if m.unwritten { ", unwritten" } else { "" }
        ),
        btree::Record::Refcount(c) => format!(
            "startblock {}{}, blockcount {}, refcount {}",
            c.startblock,
            if c.cow { " (CoW)" } else { "" },
            c.blockcount,
            c.refcount
        ),
    }
}

fn key_text(k: &btree::Key) -> String {
    match k {
        btree::Key::Alloc(a) => format!("startblock {}, blockcount {}", a.startblock, a.blockcount),
        btree::Key::Inobt { startino } => format!("startino {startino}"),
        btree::Key::Rmap { low, high } => format!("low {low:?}, high {high:?}"),
        btree::Key::Refcount { startblock, cow } => {
            format!(
                "startblock {startblock}{}",
                if *cow { " (CoW)" } else { "" }
            )
        }
    }
}

/// Make pointer fields links: inode numbers to inodes, block pointers to
/// the daddr of the block they name.
fn add_links<R: ReadAt>(
    fs: &Fs<R>,
    agno: AgNumber,
    structure: &str,
    b: &[u8],
    fields: &mut [HexField],
) {
    let geo = &fs.geo;
    let agb = |v: u64| {
        u32::try_from(v)
            .ok()
            .filter(|x| *x != u32::MAX)
            .and_then(|x| geo.agb_to_daddr(agno, AgBlock(x)))
            .map(|d| Link::Daddr(d.0))
    };
    let fsb = |v: u64| {
        (v != 0 && v != u64::MAX)
            .then(|| geo.fsb_to_daddr(crate::xfs::types::FsBlock(v)))
            .flatten()
            .map(|d| Link::Daddr(d.0))
    };
    let agino = |v: u64| {
        let shift = u32::from(geo.agblklog).saturating_add(u32::from(geo.inopblog));
        (v != u64::from(u32::MAX)).then(|| {
            Link::Inode(
                u64::from(agno.0)
                    .checked_shl(shift)
                    .unwrap_or(0)
                    .saturating_add(v),
            )
        })
    };
    let ino = |v: u64| (v != 0 && v != u64::MAX).then_some(Link::Inode(v));
    let bmbt = structure.starts_with("bmbt");
    let ag_tree = ag_tree_of(be(b, 0, 4).unwrap_or(0), geo.v5)
        .filter(|_| structure.ends_with(" block") && !bmbt);
    for f in fields.iter_mut() {
        let off = usize::try_from(f.offset).unwrap_or(usize::MAX);
        let size = usize::try_from(f.size).unwrap_or(0);
        let v = be(b, off, size.min(8)).unwrap_or(0);
        let n = f.name.as_str();
        f.link = if n.ends_with(".inumber")
            || n == "sfdir.parent"
            || (n == "owner" && !structure.contains("block header") && ag_tree.is_none())
        {
            ino(v)
        } else if (n.starts_with("u.bmx[") || n.starts_with("a.bmx[")) && size == 16 {
            let lo = be(b, off.saturating_add(8), 8).unwrap_or(0);
            fsb(((v & 0x1ff) << 43) | (lo >> 21))
        } else if n.starts_with("ptrs[") {
            if bmbt {
                fsb(v)
            } else {
                agb(v)
            }
        } else if n.starts_with("recs[") && bmbt && size == 16 {
            let hi = v;
            let lo = be(b, off.saturating_add(8), 8).unwrap_or(0);
            fsb(((hi & 0x1ff) << 43) | (lo >> 21))
        } else if n.starts_with("recs[") {
            let first = be(b, off, 4).unwrap_or(0);
            match ag_tree {
                Some(AgTree::Ino | AgTree::Fino) => agino(first),
                Some(AgTree::Refcount) => agb(first & 0x7fff_ffff),
                Some(_) => agb(first),
                None => None,
            }
        } else if structure.starts_with("superblock") {
            match n {
                "rootino" | "rbmino" | "rsumino" | "uquotino" | "gquotino" | "pquotino"
                | "metadirino" => ino(v),
                "logstart" => fsb(v),
                _ => None,
            }
        } else if structure.starts_with("AG") {
            match n {
                "bno_root" | "cnt_root" | "rmap_root" | "refcount_root" | "root" | "free_root" => {
                    agb(v)
                }
                "newino" | "dirino" => agino(v),
                _ if n.starts_with("bno[") => agb(v),
                _ => None,
            }
        } else if structure == "inode" && n == "next_unlinked" {
            agino(v)
        } else {
            None
        };
    }
}

/// Extent records (`[start, end)` of the inode, at most `n`), as
/// `PREFIX[i]`.
fn extent_records(
    b: &[u8],
    out: &mut Out,
    group: &str,
    prefix: &str,
    start: usize,
    end: usize,
    n: u64,
) {
    let fit = end.saturating_sub(start) / 16;
    for i in 0..fit.min(usize::try_from(n).unwrap_or(usize::MAX)) {
        let o = start.saturating_add(i.saturating_mul(16));
        let hi = be(b, o, 8).unwrap_or(0);
        let lo = be(b, o.saturating_add(8), 8).unwrap_or(0);
        let startoff = (hi >> 9) & ((1u64 << 54) - 1);
        let startblock = ((hi & 0x1ff) << 43) | (lo >> 21);
        let count = lo & 0x1f_ffff;
        out.add(
            group,
            format!("{prefix}[{i}]"),
            o,
            16,
            format!(
                "file offset {startoff}, block {startblock}, {count} blocks{}",
                if hi >> 63 != 0 { ", unwritten" } else { "" }
            ),
            "an extent: file offset, filesystem block, length, unwritten flag",
        );
    }
}

/// A shortform directory in the data fork: header, then entries.
fn sf_dir(b: &[u8], out: &mut Out, group: &str, start: usize, end: usize, ftype: bool) {
    let count = usize::from(b.get(start).copied().unwrap_or(0));
    let i8 = b.get(start.saturating_add(1)).copied().unwrap_or(0) != 0;
    let isz: usize = if i8 { 8 } else { 4 };
    out.raw(
        b,
        group,
        "sfdir.count",
        start,
        1,
        "entries in this shortform directory",
    );
    out.raw(
        b,
        group,
        "sfdir.i8count",
        start.saturating_add(1),
        1,
        "entries needing 8-byte inode numbers (then all use 8)",
    );
    out.raw(
        b,
        group,
        "sfdir.parent",
        start.saturating_add(2),
        isz,
        "the parent directory's inode (..)",
    );
    let mut o = start.saturating_add(2).saturating_add(isz);
    for i in 0..count {
        let namelen = usize::from(b.get(o).copied().unwrap_or(0));
        let len = 3usize
            .saturating_add(namelen)
            .saturating_add(usize::from(ftype))
            .saturating_add(isz);
        if namelen == 0 || o.saturating_add(len) > end {
            break;
        }
        let name: String = b
            .get(o.saturating_add(3)..o.saturating_add(3).saturating_add(namelen))
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .unwrap_or_default();
        out.raw(
            b,
            group,
            &format!("sfdir.list[{i}].namelen"),
            o,
            1,
            "name length",
        );
        out.raw(
            b,
            group,
            &format!("sfdir.list[{i}].offset"),
            o.saturating_add(1),
            2,
            "where the entry would sit in a data block (the readdir cookie)",
        );
        out.add(
            group,
            format!("sfdir.list[{i}].name"),
            o.saturating_add(3),
            namelen,
            format!("{name:?}"),
            "the name",
        );
        let mut p = o.saturating_add(3).saturating_add(namelen);
        if ftype {
            out.raw(
                b,
                group,
                &format!("sfdir.list[{i}].ftype"),
                p,
                1,
                "file type",
            );
            p = p.saturating_add(1);
        }
        out.raw(
            b,
            group,
            &format!("sfdir.list[{i}].inumber"),
            p,
            isz,
            "the inode this name points to",
        );
        o = o.saturating_add(len);
    }
}

/// Shortform extended attributes in the attr fork: header, then entries.
fn sf_attr(b: &[u8], out: &mut Out, group: &str, start: usize, end: usize) {
    let count = usize::from(b.get(start.saturating_add(2)).copied().unwrap_or(0));
    out.raw(
        b,
        group,
        "sfattr.totsize",
        start,
        2,
        "bytes of the header and every entry",
    );
    out.raw(
        b,
        group,
        "sfattr.count",
        start.saturating_add(2),
        1,
        "attributes in the fork",
    );
    out.raw(
        b,
        group,
        "sfattr.padding",
        start.saturating_add(3),
        1,
        "padding",
    );
    let mut o = start.saturating_add(4);
    for i in 0..count {
        let namelen = usize::from(b.get(o).copied().unwrap_or(0));
        let valuelen = usize::from(b.get(o.saturating_add(1)).copied().unwrap_or(0));
        let len = 3usize.saturating_add(namelen).saturating_add(valuelen);
        if o.saturating_add(len) > end {
            break;
        }
        let text = |a: usize, n: usize| -> String {
            b.get(a..a.saturating_add(n))
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .unwrap_or_default()
        };
        out.raw(
            b,
            group,
            &format!("sfattr.list[{i}].namelen"),
            o,
            1,
            "name length",
        );
        out.raw(
            b,
            group,
            &format!("sfattr.list[{i}].valuelen"),
            o.saturating_add(1),
            1,
            "value length",
        );
        out.raw(
            b,
            group,
            &format!("sfattr.list[{i}].flags"),
            o.saturating_add(2),
            1,
            "namespace: 0 user, 2 trusted (root), 4 secure, 8 parent pointer",
        );
        out.add(
            group,
            format!("sfattr.list[{i}].name"),
            o.saturating_add(3),
            namelen,
            format!("{:?}", text(o.saturating_add(3), namelen)),
            "the name, without its namespace prefix",
        );
        out.add(
            group,
            format!("sfattr.list[{i}].value"),
            o.saturating_add(3).saturating_add(namelen),
            valuelen,
            format!(
                "{:?}",
                text(o.saturating_add(3).saturating_add(namelen), valuelen)
            ),
            "the value",
        );
        o = o.saturating_add(len);
    }
}
