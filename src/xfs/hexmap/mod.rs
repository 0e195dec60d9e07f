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
    XfsAttr3LeafHdr, XfsAttr3RmtHdr, XfsAttrLeafHdr, XFS_ATTR3_LEAF_MAGIC, XFS_ATTR3_RMT_MAGIC,
    XFS_ATTR_LEAF_MAGIC,
};
use crate::xfs::format::btree::XfsBtreeSblock;
use crate::xfs::format::da::{
    XfsDa3NodeHdr, XfsDaBlkinfo, XfsDaNodeHdr, XFS_DA3_NODE_MAGIC, XFS_DA_NODE_MAGIC,
};
use crate::xfs::format::dinode::{
    XfsBtreeBlockLong, XfsDinode, XfsDsymlinkHdr, XFS_BMAP_CRC_MAGIC, XFS_BMAP_MAGIC,
    XFS_DINODE_MAGIC, XFS_SYMLINK_MAGIC,
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
    /// The bytes are from the external log device, not the data device.
    #[serde(default)]
    pub log_device: bool,
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

/// The extent record (`xfs_bmbt_rec`) at byte `off`.
fn extent_at(b: &[u8], off: usize) -> Option<crate::xfs::bmap::Extent> {
    Some(crate::xfs::bmap::Extent::decode(
        be(b, off, 8)?,
        be(b, off.checked_add(8)?, 8)?,
    ))
}

/// An extent record as one field called `name`.
fn extent_field(b: &[u8], out: &mut Out, group: &str, name: &str, off: usize) {
    if let Some(e) = extent_at(b, off) {
        out.add(
            group,
            name,
            off,
            16,
            format!(
                "file offset {}, block {}, {} blocks{}",
                e.file_block,
                e.start.0,
                e.len,
                if e.unwritten { ", unwritten" } else { "" }
            ),
            "an extent: file offset, filesystem block, length, unwritten flag",
        );
    }
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

/// Decode sector `daddr` of an external log device for the hex view: a log
/// record header where one starts, the log's data otherwise.
pub fn describe_log<R: ReadAt>(log: &crate::xfs::image::Image<R>, daddr: u64) -> Result<HexBlock> {
    let len = log.len() / BB;
    if daddr >= len {
        return Err(Error::corrupt(
            "hex view",
            Location::Daddr { daddr },
            format!("daddr {daddr} is past the end of the log device ({len} sectors)"),
        ));
    }
    let bytes = log.read("hex view (external log)", daddr.saturating_mul(BB), BB)?;
    let mut h = if be(&bytes, offset_of!(XlogRecHeader, h_magicno), 4)
        == Some(u64::from(XLOG_HEADER_MAGIC_NUM))
    {
        log_record(daddr, bytes)
    } else {
        HexBlock {
            daddr,
            bytes,
            structure: "log data".into(),
            explanation: "A sector of the log that does not start a record: the data of the record before it (operation headers and the items of a checkpoint), with the first word replaced by the cycle number, or a part of the log not yet written in this cycle.".into(),
            fields: Vec::new(),
            notes: Vec::new(),
            logged: Vec::new(),
            log_device: true,
        }
    };
    h.log_device = true;
    h.structure = format!("{} (external log device)", h.structure);
    Ok(h)
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
    let da_magic = be(&first, offset_of!(XfsDaBlkinfo, magic), 2).unwrap_or(0);
    let rec_magic = be(&first, offset_of!(XlogRecHeader, h_magicno), 4).unwrap_or(0);
    if rec_magic == u64::from(XLOG_HEADER_MAGIC_NUM) {
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
    // A symlink's header covers the whole extent its target was written
    // in (one buffer per mapping), so the target runs on past the first
    // block; a remote value has a header in every block.
    let symlink_len = if m32 == u64::from(XFS_SYMLINK_MAGIC) {
        be(&first, offset_of!(XfsDsymlinkHdr, sl_bytes), 4)
            .unwrap_or(0)
            .saturating_add(u64::try_from(size_of::<XfsDsymlinkHdr>()).unwrap_or(56))
            .div_ceil(bs)
            .saturating_mul(bs)
    } else {
        bs
    };
    let len = if is_dir { dirblk } else { symlink_len }
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
    crate::xfs::sort::by_key(&mut out.fields, |f| u128::from(f.offset));
    add_links(fs, AgNumber(agno32), &structure, &bytes, &mut out.fields);
    Ok(HexBlock {
        daddr,
        bytes,
        structure,
        explanation,
        fields: out.fields,
        notes,
        logged: Vec::new(),
        log_device: false,
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

mod blocks;
mod headers;
mod inode;

pub use blocks::record_text;
use blocks::*;
use headers::*;
use inode::*;

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
        u32::try_from(v)
            .ok()
            .filter(|x| *x != u32::MAX)
            .map(|x| Link::Inode(geo.agino_to_ino(agno, x)))
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
        } else if (n.starts_with("u.bmx[")
            || n.starts_with("a.bmx[")
            || (n.starts_with("recs[") && bmbt))
            && size == 16
        {
            extent_at(b, off).and_then(|e| fsb(e.start.0))
        } else if n.starts_with("u.bmbt.ptrs[") || n.starts_with("a.bmbt.ptrs[") {
            fsb(v)
        } else if n.starts_with("ptrs[") {
            if bmbt {
                fsb(v)
            } else {
                agb(v)
            }
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
                _ if n.starts_with("unlinked[") => agino(v),
                _ => None,
            }
        } else if structure == "inode" && n == "next_unlinked" {
            agino(v)
        } else {
            None
        };
    }
}
