//! Directories (version 2, with v5 "dir3" headers): reading every entry,
//! and looking one name up by its hash.
//!
//! A directory's data fork is either inline (shortform) or a sparse logical
//! space of directory blocks (`blocksize << dirblklog` bytes each) split in
//! three 32 GiB regions:
//!
//! ```text
//!  fork byte 0          32 GiB                   64 GiB
//!  | data blocks ...    | leaf1, or da nodes     | free-index blocks
//!  | (entries)          |   + leafn blocks       | (node form only)
//! ```
//!
//! | form      | data fork                     | leaf space              | free space |
//! |-----------|-------------------------------|-------------------------|------------|
//! | shortform | inline                        | -                       | -          |
//! | block     | one block with its own leaf   | -                       | -          |
//! | leaf      | data blocks                   | one leaf1 block         | -          |
//! | node      | data blocks                   | da btree of leafn blocks| free blocks|
//!
//! Reading checks what the kernel's verifiers check and a little more: the
//! v5 header of every block (CRC, blkno, owner, uuid), the record tiling of
//! data blocks, every leaf entry's hash against the name it points to, that
//! every entry has exactly one leaf entry, and the best-free bookkeeping.
//! Anything wrong in one block is reported as a problem and the rest is
//! still read.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;
use zerocopy::FromBytes;

use crate::xfs::bmap::{Fork, WhichFork};
use crate::xfs::dabtree::{
    blkinfo_size, check_v5_header, find_leaf, read_blkinfo, read_da_block, walk_leaves, DaBuf,
    DaGeometry, ForkSource, InodeFork, Problems,
};
use crate::xfs::dahash::dir_hashname;
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::dir2::*;
use crate::xfs::fs::{be16, be32, be64, Fs};
use crate::xfs::inode::{FileType, Inode};
use crate::xfs::read::ReadAt;
use crate::xfs::sb::Geometry;
use crate::xfs::types::{Daddr, Ino};

/// The most entries one directory listing holds before it stops.
pub const MAX_DIR_ENTRIES: usize = 1 << 22;
/// The most problems one listing records before it stops recording.
pub const MAX_PROBLEMS: usize = 1000;

/// The file type byte of a directory entry (`XFS_DIR3_FT_*`), kept as found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Ftype(pub u8);

impl Ftype {
    pub fn name(self) -> &'static str {
        match self.0 {
            XFS_DIR3_FT_UNKNOWN => "unknown",
            XFS_DIR3_FT_REG_FILE => "file",
            XFS_DIR3_FT_DIR => "dir",
            XFS_DIR3_FT_CHRDEV => "chardev",
            XFS_DIR3_FT_BLKDEV => "blockdev",
            XFS_DIR3_FT_FIFO => "fifo",
            XFS_DIR3_FT_SOCK => "socket",
            XFS_DIR3_FT_SYMLINK => "symlink",
            XFS_DIR3_FT_WHT => "whiteout",
            _ => "invalid",
        }
    }

    pub fn is_valid(self) -> bool {
        self.0 <= XFS_DIR3_FT_WHT
    }
}

/// One directory entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DirEntry {
    /// The name as stored (bytes, no NUL).
    pub name: Vec<u8>,
    pub ino: Ino,
    /// The file type byte, on filesystems with FTYPE.
    pub ftype: Option<Ftype>,
    /// The readdir cookie: byte offset in the data space divided by 8 (for
    /// shortform entries the offset they would have in a data block).
    pub cookie: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DirFormat {
    Shortform,
    Block,
    Leaf,
    Node,
}

impl DirFormat {
    pub fn name(self) -> &'static str {
        match self {
            DirFormat::Shortform => "shortform",
            DirFormat::Block => "block",
            DirFormat::Leaf => "leaf",
            DirFormat::Node => "node",
        }
    }
}

/// Everything read from one directory.
#[derive(Clone, Debug)]
pub struct DirListing {
    pub format: DirFormat,
    /// Entries in readdir order, `.` and `..` included.
    pub entries: Vec<DirEntry>,
    /// The parent directory (`..`).
    pub parent: Option<Ino>,
    /// What was wrong; the entries are those that could be read.
    pub problems: Problems,
}

/// What the directory code needs to know about the filesystem and the
/// directory.
#[derive(Clone, Copy, Debug)]
pub struct DirGeometry {
    pub da: DaGeometry,
    /// Entries carry a file type byte (v5 always; v4 with FTYPE).
    pub ftype: bool,
    /// Names hash case-insensitively (ASCII-CI).
    pub ascii_ci: bool,
    /// log2 of the directory block size in bytes.
    pub blklog: u32,
}

impl DirGeometry {
    /// The directory geometry of a filesystem for directory `owner`.
    pub fn new(geo: &Geometry, sb: &crate::xfs::sb::Superblock, owner: Ino) -> DirGeometry {
        let v5 = geo.v5;
        // FTYPE: v5 always; v4 in features2 bit 0x200.
        let ftype = v5 || sb.features2 & 0x200 != 0;
        // ASCII-CI: versionnum BORG bit 0x4000.
        let ascii_ci = sb.versionnum & 0x4000 != 0;
        let uuid = if sb.features_incompat & (1 << 2) != 0 {
            sb.meta_uuid
        } else {
            sb.uuid
        };
        DirGeometry {
            da: DaGeometry {
                fsb_size: geo.blocksize,
                fsb_count: 1u32.checked_shl(u32::from(geo.dirblklog)).unwrap_or(1),
                v5,
                uuid,
                owner,
            },
            ftype,
            ascii_ci,
            blklog: u32::from(geo.blocklog).saturating_add(u32::from(geo.dirblklog)),
        }
    }

    /// Bytes of one directory block.
    pub fn blksize(&self) -> usize {
        self.da.blksize()
    }

    fn fsb_log(&self) -> u32 {
        self.da.fsb_size.trailing_zeros()
    }

    /// First fork block of the leaf space.
    pub fn leaf_dablk(&self) -> u64 {
        (XFS_DIR2_LEAF_SPACE * XFS_DIR2_SPACE_SIZE)
            .checked_shr(self.fsb_log())
            .unwrap_or(0)
    }

    /// First fork block of the free-index space.
    pub fn free_dablk(&self) -> u64 {
        (XFS_DIR2_FREE_SPACE * XFS_DIR2_SPACE_SIZE)
            .checked_shr(self.fsb_log())
            .unwrap_or(0)
    }

    /// Data block number and byte within it of a dataptr.
    pub fn dataptr_split(&self, addr: u32) -> (u64, usize) {
        let byte = u64::from(addr).saturating_mul(8);
        let db = byte.checked_shr(self.blklog).unwrap_or(0);
        let mask = 1u64.checked_shl(self.blklog).unwrap_or(0).saturating_sub(1);
        (db, usize::try_from(byte & mask).unwrap_or(0))
    }

    /// The dataptr of byte `off` in data block `db`.
    pub fn dataptr(&self, db: u64, off: usize) -> u32 {
        let byte = db
            .checked_shl(self.blklog)
            .unwrap_or(0)
            .saturating_add(u64::try_from(off).unwrap_or(0));
        u32::try_from(byte / 8).unwrap_or(u32::MAX)
    }

    fn data_hdr_size(&self) -> usize {
        if self.da.v5 {
            core::mem::size_of::<XfsDir3DataHdr>()
        } else {
            core::mem::size_of::<XfsDir2DataHdr>()
        }
    }

    fn hash(&self, name: &[u8]) -> u32 {
        dir_hashname(name, self.ascii_ci)
    }

    fn block_magic(&self) -> u32 {
        if self.da.v5 {
            XFS_DIR3_BLOCK_MAGIC
        } else {
            XFS_DIR2_BLOCK_MAGIC
        }
    }

    fn data_magic(&self) -> u32 {
        if self.da.v5 {
            XFS_DIR3_DATA_MAGIC
        } else {
            XFS_DIR2_DATA_MAGIC
        }
    }

    fn free_magic(&self) -> u32 {
        if self.da.v5 {
            XFS_DIR3_FREE_MAGIC
        } else {
            XFS_DIR2_FREE_MAGIC
        }
    }

    fn leaf1_magic(&self) -> u16 {
        if self.da.v5 {
            XFS_DIR3_LEAF1_MAGIC
        } else {
            XFS_DIR2_LEAF1_MAGIC
        }
    }

    fn leafn_magic(&self) -> u16 {
        if self.da.v5 {
            XFS_DIR3_LEAFN_MAGIC
        } else {
            XFS_DIR2_LEAFN_MAGIC
        }
    }

    /// Size of a data entry with a name of `namelen` bytes.
    pub fn data_entsize(&self, namelen: usize) -> usize {
        let raw = 8usize
            .saturating_add(1)
            .saturating_add(namelen)
            .saturating_add(usize::from(self.ftype))
            .saturating_add(2);
        raw.saturating_add(XFS_DIR2_DATA_ALIGN - 1) & !(XFS_DIR2_DATA_ALIGN - 1)
    }
}

/// Where an inline fork starts, for error locations: `byte` bytes after
/// sector `daddr`.
#[derive(Clone, Copy, Debug)]
pub struct ForkAt {
    pub daddr: Daddr,
    pub byte: u64,
}

impl ForkAt {
    pub fn bad(&self, structure: &'static str, off: usize, detail: impl Into<String>) -> Error {
        Error::corrupt(
            structure,
            Location::InStructure {
                daddr: self.daddr.0,
                byte: self
                    .byte
                    .saturating_add(u64::try_from(off).unwrap_or(u64::MAX)),
            },
            detail,
        )
    }
}

/// A directory's data fork, as the inode holds it.
pub enum DirFork<'a> {
    /// Shortform: the inline bytes (`di_size` of them).
    Local { bytes: &'a [u8], at: ForkAt },
    /// Blocks: read through the fork source.
    Blocks { di_size: u64 },
}

// ---------------------------------------------------------------------------
// Shortform

const SF: &str = "shortform directory";

/// A parsed shortform directory.
#[derive(Clone, Debug)]
pub struct Shortform {
    pub parent: Ino,
    pub i8count: u8,
    /// Entries as stored (no `.` or `..`).
    pub entries: Vec<DirEntry>,
    pub problems: Problems,
}

/// Parse a shortform directory (the data fork bytes).
pub fn parse_shortform(bytes: &[u8], dg: &DirGeometry, at: ForkAt) -> Result<Shortform> {
    let owner = dg.da.owner.0;
    if bytes.len() < XFS_DIR2_SF_HDR_SIZE4 {
        return Err(at.bad(
            SF,
            0,
            format!(
                "inode {owner}: {} bytes, too short for the header",
                bytes.len()
            ),
        ));
    }
    // `XfsDir2SfHdr`, whose parent field is 4 or 8 bytes long.
    let count = bytes.first().copied().unwrap_or(0);
    let i8count = bytes.get(1).copied().unwrap_or(0);
    let wide = i8count != 0;
    let (inosz, hdrsz) = if wide {
        (8usize, XFS_DIR2_SF_HDR_SIZE8)
    } else {
        (4usize, XFS_DIR2_SF_HDR_SIZE4)
    };
    if bytes.len() < hdrsz {
        return Err(at.bad(
            SF,
            0,
            format!(
                "inode {owner}: {} bytes, too short for a {hdrsz}-byte header",
                bytes.len()
            ),
        ));
    }
    let get_ino = |off: usize| -> Option<u64> {
        if wide {
            be64(bytes, off).map(|v| v & XFS_MAXINUMBER)
        } else {
            be32(bytes, off).map(u64::from)
        }
    };
    let parent = Ino(get_ino(2).unwrap_or(0));
    let mut problems = Vec::new();
    let mut entries = Vec::with_capacity(usize::from(count));
    let mut off = hdrsz;
    // The smallest offset an entry may claim: after "." and ".." in a data block.
    let mut min_offset = dg
        .data_hdr_size()
        .saturating_add(dg.data_entsize(1))
        .saturating_add(dg.data_entsize(2));
    let mut n8 = 0usize;
    for i in 0..count {
        let (e, _) =
            XfsDir2SfEntry::ref_from_prefix(bytes.get(off..).unwrap_or(&[])).map_err(|_| {
                at.bad(
                    SF,
                    off,
                    format!(
                        "inode {owner}: entry {i} of {} starts past the end ({} bytes)",
                        count,
                        bytes.len()
                    ),
                )
            })?;
        let namelen = usize::from(e.namelen);
        let name_off = off.saturating_add(3);
        let ft_off = name_off.saturating_add(namelen);
        let ino_off = ft_off.saturating_add(usize::from(dg.ftype));
        let end = ino_off.saturating_add(inosz);
        if namelen == 0 {
            return Err(at.bad(
                SF,
                off,
                format!("inode {owner}: entry {i} has an empty name"),
            ));
        }
        if end > bytes.len() {
            return Err(at.bad(
                SF,
                off,
                format!(
                    "inode {owner}: entry {i} ends at byte {end}, past the end ({} bytes)",
                    bytes.len()
                ),
            ));
        }
        let name = bytes.get(name_off..ft_off).unwrap_or(&[]).to_vec();
        let ino = get_ino(ino_off).unwrap_or(0);
        if ino > u64::from(u32::MAX) {
            n8 = n8.saturating_add(1);
        }
        let ftype = if dg.ftype {
            let f = Ftype(bytes.get(ft_off).copied().unwrap_or(0));
            if !f.is_valid() {
                problems.push(at.bad(
                    SF,
                    ft_off,
                    format!("inode {owner}: entry {i}: file type {} is not valid", f.0),
                ));
            }
            Some(f)
        } else {
            None
        };
        let offset = usize::from(e.offset.get());
        if offset < min_offset {
            problems.push(at.bad(
                SF,
                off.saturating_add(1),
                format!(
                    "inode {owner}: entry {i}: offset {offset} overlaps the previous entry (at least {min_offset})"
                ),
            ));
        }
        min_offset = offset.saturating_add(dg.data_entsize(namelen));
        if name.contains(&b'/') || name.contains(&0) {
            problems.push(at.bad(
                SF,
                name_off,
                format!("inode {owner}: entry {i}: the name contains '/' or NUL"),
            ));
        }
        entries.push(DirEntry {
            name,
            ino: Ino(ino),
            ftype,
            cookie: u32::try_from(offset / 8).unwrap_or(0),
        });
        off = end;
    }
    if off != bytes.len() {
        problems.push(at.bad(
            SF,
            off,
            format!(
                "inode {owner}: entries end at byte {off} but the directory size is {}",
                bytes.len()
            ),
        ));
    }
    if usize::from(i8count) != n8 {
        problems.push(at.bad(
            SF,
            1,
            format!("inode {owner}: i8count {i8count} but {n8} entries need 8-byte inode numbers"),
        ));
    }
    Ok(Shortform {
        parent,
        i8count,
        entries,
        problems,
    })
}

// ---------------------------------------------------------------------------
// Data blocks

const DATA: &str = "directory data block";
const LEAF: &str = "directory leaf block";
const FREE: &str = "directory free block";

/// One data block (or the data part of a single-block directory).
#[derive(Clone, Debug)]
pub struct DataBlock {
    pub daddr: Daddr,
    /// `(byte offset in the block, entry)`; cookies are set by the caller.
    pub entries: Vec<(usize, DirEntry)>,
    /// The header's three best free regions `(offset, length)`.
    pub bestfree: [(u16, u16); XFS_DIR2_DATA_FD_COUNT],
    /// Unused regions found `(offset, length)`.
    pub unused: Vec<(usize, usize)>,
    /// Block form only: the leaf `(hashval, address)` and the stale count.
    pub leaf: Option<(Vec<(u32, u32)>, u32)>,
    pub problems: Problems,
}

impl DataBlock {
    /// The longest free region as the header records it.
    pub fn best(&self) -> u16 {
        self.bestfree.first().map_or(0, |b| b.1)
    }
}

/// Parse a data block (`block_form`: a single-block directory with its leaf
/// at the end). Header errors fail; an error inside the record tiling stops
/// the walk of this block and is kept as a problem with the entries before it.
pub fn parse_data_block(buf: &DaBuf, dg: &DirGeometry, block_form: bool) -> Result<DataBlock> {
    let structure = if block_form {
        "single-block directory"
    } else {
        DATA
    };
    let owner = dg.da.owner.0;
    let b = &buf.bytes;
    let want = if block_form {
        dg.block_magic()
    } else {
        dg.data_magic()
    };
    let magic = be32(b, 0).unwrap_or(0);
    if magic != want {
        return Err(buf.bad(
            structure,
            0,
            format!(
                "inode {owner} directory block {}: magic {magic:#010x}, expected {want:#010x}",
                buf.dablk
            ),
        ));
    }
    if dg.da.v5 {
        check_v5_header(buf, &dg.da, structure, 4, 8, 24, 40)?;
    }
    let hdr = dg.data_hdr_size();
    let bf_off: usize = if dg.da.v5 { 48 } else { 4 };
    let bestfree: [(u16, u16); 3] = core::array::from_fn(|i| {
        let o = bf_off.saturating_add(i.saturating_mul(4));
        (
            be16(b, o).unwrap_or(0),
            be16(b, o.saturating_add(2)).unwrap_or(0),
        )
    });
    let mut problems = Vec::new();
    let mut end = b.len();
    let mut leaf = None;
    if block_form {
        let tail_off = b.len().saturating_sub(8);
        let count = be32(b, tail_off).unwrap_or(0);
        let stale = be32(b, tail_off.saturating_add(4)).unwrap_or(0);
        let room = tail_off.saturating_sub(hdr) / 8;
        let n = usize::try_from(count).unwrap_or(usize::MAX);
        if n > room || stale > count {
            return Err(buf.bad(
                structure,
                tail_off,
                format!(
                    "inode {owner}: leaf count {count} (stale {stale}) does not fit the block (room for {room})"
                ),
            ));
        }
        let leaf_off = tail_off.saturating_sub(n.saturating_mul(8));
        let ents = read_leaf_entries(b, leaf_off, n);
        check_hash_order(&ents, buf, structure, leaf_off, &mut problems);
        leaf = Some((ents, stale));
        end = leaf_off;
    }
    let mut entries = Vec::new();
    let mut unused: Vec<(usize, usize)> = Vec::new();
    let mut off = hdr;
    let mut prev_unused = false;
    while off < end {
        let bad = |o: usize, d: String| buf.bad(structure, o, format!("inode {owner}: {d}"));
        if be16(b, off) == Some(XFS_DIR2_DATA_FREE_TAG) {
            let len = usize::from(be16(b, off.saturating_add(2)).unwrap_or(0));
            if len < 8 || len % 8 != 0 || off.saturating_add(len) > end {
                problems.push(bad(
                    off,
                    format!("unused region at {off}: length {len} (block data ends at {end})"),
                ));
                break;
            }
            let tag_off = off.saturating_add(len).saturating_sub(2);
            let tag = usize::from(be16(b, tag_off).unwrap_or(0));
            if tag != off {
                problems.push(bad(
                    tag_off,
                    format!("unused region at {off}: tag says {tag}"),
                ));
                break;
            }
            if prev_unused {
                problems.push(bad(
                    off,
                    format!("unused region at {off} follows another unused region"),
                ));
            }
            prev_unused = true;
            unused.push((off, len));
            off = off.saturating_add(len);
            continue;
        }
        prev_unused = false;
        let ino = be64(b, off).unwrap_or(0);
        let namelen = usize::from(b.get(off.saturating_add(8)).copied().unwrap_or(0));
        if namelen == 0 {
            problems.push(bad(off, format!("entry at {off} has an empty name")));
            break;
        }
        let size = dg.data_entsize(namelen);
        if off.saturating_add(size) > end {
            problems.push(bad(
                off,
                format!(
                    "entry at {off} ({size} bytes, name of {namelen}) runs past the entries' end at {end}"
                ),
            ));
            break;
        }
        let name_off = off.saturating_add(9);
        let name = b
            .get(name_off..name_off.saturating_add(namelen))
            .unwrap_or(&[])
            .to_vec();
        let tag_off = off.saturating_add(size).saturating_sub(2);
        let tag = usize::from(be16(b, tag_off).unwrap_or(0));
        if tag != off {
            problems.push(bad(tag_off, format!("entry at {off}: tag says {tag}")));
            break;
        }
        let ftype = if dg.ftype {
            let ft_off = name_off.saturating_add(namelen);
            let f = Ftype(b.get(ft_off).copied().unwrap_or(0));
            if !f.is_valid() {
                problems.push(bad(
                    ft_off,
                    format!("entry at {off}: file type {} is not valid", f.0),
                ));
            }
            Some(f)
        } else {
            None
        };
        if ino > XFS_MAXINUMBER {
            problems.push(bad(
                off,
                format!("entry at {off}: inode number {ino:#x} is above 2^56"),
            ));
        }
        entries.push((
            off,
            DirEntry {
                name,
                ino: Ino(ino),
                ftype,
                cookie: 0,
            },
        ));
        off = off.saturating_add(size);
    }
    check_bestfree(buf, structure, &bestfree, &unused, bf_off, &mut problems);
    Ok(DataBlock {
        daddr: buf.daddr,
        entries,
        bestfree,
        unused,
        leaf,
        problems,
    })
}

/// The bestfree slots must be the longest unused regions, longest first,
/// each naming a real unused region; unused slots are {0, 0}.
fn check_bestfree(
    buf: &DaBuf,
    structure: &'static str,
    bestfree: &[(u16, u16); 3],
    unused: &[(usize, usize)],
    bf_off: usize,
    problems: &mut Problems,
) {
    let mut lens: Vec<usize> = unused.iter().map(|u| u.1).collect();
    lens.sort_unstable_by(|a, b| b.cmp(a));
    let mut prev = usize::MAX;
    for (i, &(o, l)) in bestfree.iter().enumerate() {
        let (o, l) = (usize::from(o), usize::from(l));
        let at = bf_off.saturating_add(i.saturating_mul(4));
        if l == 0 {
            if o != 0 {
                problems.push(buf.bad(
                    structure,
                    at,
                    format!("bestfree[{i}]: offset {o} with length 0"),
                ));
            }
            prev = 0;
            continue;
        }
        if l > prev {
            problems.push(buf.bad(
                structure,
                at,
                format!("bestfree[{i}]: length {l} is longer than the slot before it"),
            ));
        }
        prev = l;
        if !unused.contains(&(o, l)) {
            problems.push(buf.bad(
                structure,
                at,
                format!("bestfree[{i}] = (offset {o}, length {l}) is not an unused region"),
            ));
        }
    }
    // The slots hold the longest regions (ties may pick either region).
    for (i, want) in lens.iter().take(bestfree.len()).enumerate() {
        let got = bestfree.get(i).map_or(0, |b| usize::from(b.1));
        if got != *want {
            problems.push(buf.bad(
                structure,
                bf_off,
                format!(
                    "bestfree[{i}] has length {got}, but unused region number {} by length is {want} bytes",
                    i.saturating_add(1)
                ),
            ));
            break;
        }
    }
}

fn read_leaf_entries(b: &[u8], off: usize, n: usize) -> Vec<(u32, u32)> {
    (0..n)
        .map(|i| {
            let o = off.saturating_add(i.saturating_mul(8));
            (
                be32(b, o).unwrap_or(0),
                be32(b, o.saturating_add(4)).unwrap_or(0),
            )
        })
        .collect()
}

fn check_hash_order(
    ents: &[(u32, u32)],
    buf: &DaBuf,
    structure: &'static str,
    off: usize,
    problems: &mut Problems,
) {
    if let Some(i) = ents.windows(2).position(|w| match w {
        [a, b] => b.0 < a.0,
        _ => false,
    }) {
        problems.push(buf.bad(
            structure,
            off.saturating_add(i.saturating_add(1).saturating_mul(8)),
            format!("leaf entry {}: hashes out of order", i.saturating_add(1)),
        ));
    }
}

// ---------------------------------------------------------------------------
// Leaf and free-index blocks

/// A leaf block: leaf1 (leaf form) or leafn (node form).
#[derive(Clone, Debug)]
pub struct LeafBlock {
    pub forw: u32,
    pub back: u32,
    pub magic: u16,
    pub stale: u16,
    /// `(hashval, address)`.
    pub entries: Vec<(u32, u32)>,
    /// leaf1 only: the longest free region of each data block.
    pub bests: Vec<u16>,
    pub problems: Problems,
}

/// Parse a leaf1 or leafn block.
pub fn parse_leaf(buf: &DaBuf, dg: &DirGeometry, leaf1: bool) -> Result<LeafBlock> {
    let owner = dg.da.owner.0;
    let info = read_blkinfo(buf, &dg.da, LEAF)?;
    let want = if leaf1 {
        dg.leaf1_magic()
    } else {
        dg.leafn_magic()
    };
    if info.magic != want {
        return Err(buf.bad(
            LEAF,
            8,
            format!(
                "inode {owner} fork block {}: magic {:#06x}, expected {want:#06x}",
                buf.dablk, info.magic
            ),
        ));
    }
    let b = &buf.bytes;
    let bi = blkinfo_size(dg.da.v5);
    let count = usize::from(be16(b, bi).unwrap_or(0));
    let stale = be16(b, bi.saturating_add(2)).unwrap_or(0);
    let hdr = if dg.da.v5 { 64 } else { 16 };
    let mut end = b.len();
    let mut bests = Vec::new();
    if leaf1 {
        let tail = b.len().saturating_sub(4);
        let bestcount = usize::try_from(be32(b, tail).unwrap_or(0)).unwrap_or(usize::MAX);
        let room = tail.saturating_sub(hdr) / 2;
        if bestcount > room {
            return Err(buf.bad(
                LEAF,
                tail,
                format!("inode {owner}: bestcount {bestcount} does not fit the block"),
            ));
        }
        let bests_off = tail.saturating_sub(bestcount.saturating_mul(2));
        bests = (0..bestcount)
            .map(|i| be16(b, bests_off.saturating_add(i.saturating_mul(2))).unwrap_or(0))
            .collect();
        end = bests_off;
    }
    let room = end.saturating_sub(hdr) / 8;
    if count > room || usize::from(stale) > count {
        return Err(buf.bad(
            LEAF,
            bi,
            format!(
                "inode {owner}: count {count} (stale {stale}) does not fit the block (room for {room})"
            ),
        ));
    }
    let entries = read_leaf_entries(b, hdr, count);
    let mut problems = Vec::new();
    check_hash_order(&entries, buf, LEAF, hdr, &mut problems);
    let found_stale = entries
        .iter()
        .filter(|e| e.1 == XFS_DIR2_NULL_DATAPTR)
        .count();
    if found_stale != usize::from(stale) {
        problems.push(buf.bad(
            LEAF,
            bi.saturating_add(2),
            format!("inode {owner}: stale {stale} but {found_stale} entries are stale"),
        ));
    }
    Ok(LeafBlock {
        forw: info.forw,
        back: info.back,
        magic: info.magic,
        stale,
        entries,
        bests,
        problems,
    })
}

/// A free-index block.
#[derive(Clone, Debug)]
pub struct FreeBlock {
    pub firstdb: u32,
    pub nvalid: u32,
    pub nused: u32,
    pub bests: Vec<u16>,
}

/// Entries per free-index block.
pub fn free_max_bests(dg: &DirGeometry) -> usize {
    let hdr = if dg.da.v5 { 64 } else { 16 };
    dg.blksize().saturating_sub(hdr) / 2
}

/// Parse a free-index block.
pub fn parse_free(buf: &DaBuf, dg: &DirGeometry) -> Result<FreeBlock> {
    let owner = dg.da.owner.0;
    let b = &buf.bytes;
    let magic = be32(b, 0).unwrap_or(0);
    if magic != dg.free_magic() {
        return Err(buf.bad(
            FREE,
            0,
            format!(
                "inode {owner} fork block {}: magic {magic:#010x}, expected {:#010x}",
                buf.dablk,
                dg.free_magic()
            ),
        ));
    }
    if dg.da.v5 {
        check_v5_header(buf, &dg.da, FREE, 4, 8, 24, 40)?;
    }
    let (o, hdr): (usize, usize) = if dg.da.v5 { (48, 64) } else { (4, 16) };
    let firstdb = be32(b, o).unwrap_or(0);
    let nvalid = be32(b, o.saturating_add(4)).unwrap_or(0);
    let nused = be32(b, o.saturating_add(8)).unwrap_or(0);
    let max = free_max_bests(dg);
    let n = usize::try_from(nvalid).unwrap_or(usize::MAX);
    if n > max || nused > nvalid {
        return Err(buf.bad(
            FREE,
            o.saturating_add(4),
            format!("inode {owner}: nvalid {nvalid} / nused {nused} (a free block holds {max})"),
        ));
    }
    let bests = (0..n)
        .map(|i| be16(b, hdr.saturating_add(i.saturating_mul(2))).unwrap_or(0))
        .collect();
    Ok(FreeBlock {
        firstdb,
        nvalid,
        nused,
        bests,
    })
}

// ---------------------------------------------------------------------------
// Whole directories

/// Which form a block directory is in, from where its mapping ends (as the
/// kernel decides it).
pub fn block_dir_format(dg: &DirGeometry, runs: &[(u64, u64)]) -> Option<DirFormat> {
    let eof = runs.iter().map(|&(f, l)| f.saturating_add(l)).max()?;
    let fsbc = u64::from(dg.da.fsb_count);
    Some(if eof == fsbc {
        DirFormat::Block
    } else if eof == dg.leaf_dablk().saturating_add(fsbc) {
        DirFormat::Leaf
    } else {
        DirFormat::Node
    })
}

/// The directory blocks (numbers `db`) with at least one mapped fs block in
/// the fork block range `[lo, hi)`.
fn dir_blocks_in(dg: &DirGeometry, runs: &[(u64, u64)], lo: u64, hi: u64) -> BTreeSet<u64> {
    let fsbc = u64::from(dg.da.fsb_count.max(1));
    let mut out = BTreeSet::new();
    for &(f, l) in runs {
        let a = f.max(lo);
        let b = f.saturating_add(l).min(hi);
        if a >= b {
            continue;
        }
        let mut db = a.checked_div(fsbc).unwrap_or(0);
        let last = b.saturating_sub(1).checked_div(fsbc).unwrap_or(0);
        while db <= last && out.len() < MAX_DIR_ENTRIES {
            out.insert(db);
            db = db.saturating_add(1);
        }
    }
    out
}

struct Collector {
    entries: Vec<DirEntry>,
    problems: Problems,
    full: bool,
}

impl Collector {
    fn problem(&mut self, e: Error) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(e);
        }
    }
    fn problems(&mut self, es: Problems) {
        for e in es {
            self.problem(e);
        }
    }
    fn push(&mut self, e: DirEntry, owner: u64) {
        if self.entries.len() >= MAX_DIR_ENTRIES {
            if !self.full {
                self.full = true;
                self.problem(Error::corrupt(
                    "directory",
                    Location::Inode { ino: owner },
                    format!(
                        "inode {owner}: more than {MAX_DIR_ENTRIES} entries; the listing stops there"
                    ),
                ));
            }
            return;
        }
        self.entries.push(e);
    }
}

/// Read every entry of a directory.
pub fn read_dir<S: ForkSource + ?Sized>(
    src: &S,
    geo: &Geometry,
    dg: &DirGeometry,
    fork: DirFork<'_>,
) -> Result<DirListing> {
    let owner = dg.da.owner;
    match fork {
        DirFork::Local { bytes, at } => {
            let sf = parse_shortform(bytes, dg, at)?;
            let dot_cookie = u32::try_from(dg.data_hdr_size() / 8).unwrap_or(0);
            let dotdot_cookie =
                u32::try_from(dg.data_hdr_size().saturating_add(dg.data_entsize(1)) / 8)
                    .unwrap_or(0);
            let ft = dg.ftype.then_some(Ftype(XFS_DIR3_FT_DIR));
            let mut entries = vec![
                DirEntry {
                    name: b".".to_vec(),
                    ino: owner,
                    ftype: ft,
                    cookie: dot_cookie,
                },
                DirEntry {
                    name: b"..".to_vec(),
                    ino: sf.parent,
                    ftype: ft,
                    cookie: dotdot_cookie,
                },
            ];
            entries.extend(sf.entries);
            Ok(DirListing {
                format: DirFormat::Shortform,
                entries,
                parent: Some(sf.parent),
                problems: sf.problems,
            })
        }
        DirFork::Blocks { di_size } => read_block_dir(src, geo, dg, di_size),
    }
}

fn read_block_dir<S: ForkSource + ?Sized>(
    src: &S,
    geo: &Geometry,
    dg: &DirGeometry,
    di_size: u64,
) -> Result<DirListing> {
    let owner = dg.da.owner.0;
    let runs = src.runs();
    let format = block_dir_format(dg, &runs).ok_or_else(|| {
        Error::corrupt(
            "directory",
            Location::Inode { ino: owner },
            format!("inode {owner}: a block directory with no blocks mapped"),
        )
    })?;
    let mut c = Collector {
        entries: Vec::new(),
        problems: Vec::new(),
        full: false,
    };
    let blksize = u64::try_from(dg.blksize()).unwrap_or(u64::MAX);
    if format == DirFormat::Block && di_size != blksize {
        c.problem(Error::corrupt(
            "directory",
            Location::Inode { ino: owner },
            format!(
                "inode {owner}: single-block directory with size {di_size} (the block is {blksize} bytes)"
            ),
        ));
    }
    // Data blocks: entries, keyed by dataptr for the leaf checks.
    let mut by_ptr: HashMap<u32, usize> = HashMap::new();
    let mut best_of: HashMap<u64, u16> = HashMap::new();
    let mut block_leaf = None;
    // Data blocks lie below di_size (which ends the data space); anything
    // mapped above it is reported, not read.
    let fsbc = u64::from(dg.da.fsb_count);
    let data_end = di_size
        .div_ceil(blksize.max(1))
        .saturating_mul(fsbc)
        .min(dg.leaf_dablk());
    let beyond = dir_blocks_in(dg, &runs, data_end, dg.leaf_dablk());
    if let Some(first) = beyond.first() {
        c.problem(Error::corrupt(
            "directory",
            Location::Inode { ino: owner },
            format!(
                "inode {owner}: {} data block(s) mapped past the directory size {di_size} (first: block {first}); not read",
                beyond.len()
            ),
        ));
    }
    let data_dbs = dir_blocks_in(dg, &runs, 0, data_end);
    let ndata = data_dbs.last().map_or(0, |d| d.saturating_add(1));
    for db in data_dbs {
        let Some(dablk) = dg.da.db_to_dablk(db) else {
            continue;
        };
        let block_form = format == DirFormat::Block;
        let parsed = read_da_block(src, geo, &dg.da, DATA, dablk)
            .and_then(|buf| parse_data_block(&buf, dg, block_form));
        let data = match parsed {
            Ok(d) => d,
            Err(e) => {
                c.problem(e);
                continue;
            }
        };
        best_of.insert(db, data.best());
        c.problems(data.problems);
        if block_form {
            block_leaf = data.leaf;
        }
        for (off, mut e) in data.entries {
            e.cookie = dg.dataptr(db, off);
            by_ptr.insert(e.cookie, c.entries.len());
            c.push(e, owner);
        }
        if c.full {
            break;
        }
    }
    // Leaf entries: each must point at an entry whose name has its hash.
    let mut leaf_entries: Vec<(u32, u32)> = Vec::new();
    let leafn = dg.leafn_magic();
    match format {
        DirFormat::Block => {
            if let Some((ents, _)) = block_leaf {
                leaf_entries = ents;
            }
        }
        DirFormat::Leaf => {
            match read_da_block(src, geo, &dg.da, LEAF, dg.leaf_dablk())
                .and_then(|buf| parse_leaf(&buf, dg, true))
            {
                Ok(l) => {
                    c.problems(l.problems);
                    check_bests(dg, &l.bests, 0, &best_of, &mut c);
                    let last = best_of.keys().max().map_or(0, |m| m.saturating_add(1));
                    if u64::try_from(l.bests.len()).unwrap_or(u64::MAX) != last {
                        c.problem(Error::corrupt(
                            LEAF,
                            Location::Inode { ino: owner },
                            format!(
                                "inode {owner}: bestcount {} but the data blocks end at {last}",
                                l.bests.len()
                            ),
                        ));
                    }
                    leaf_entries = l.entries;
                }
                Err(e) => c.problem(e),
            }
        }
        DirFormat::Node => {
            let mut prev_hash = 0u32;
            let mut leaves: Vec<(u32, u32)> = Vec::new();
            let mut leaf_problems = Vec::new();
            let walk = walk_leaves(
                src,
                geo,
                &dg.da,
                dg.leaf_dablk(),
                &|m| m == leafn,
                &mut |buf| {
                    let l = parse_leaf(&buf, dg, false)?;
                    leaf_problems.extend(l.problems);
                    if let Some(&(h, _)) = l.entries.first() {
                        if h < prev_hash {
                            leaf_problems.push(buf.bad(
                                LEAF,
                                64,
                                format!(
                                    "first hash {h:#010x} is below the previous leaf's last {prev_hash:#010x}"
                                ),
                            ));
                        }
                    }
                    if let Some(&(h, _)) = l.entries.last() {
                        prev_hash = h;
                    }
                    if leaves.len() < MAX_DIR_ENTRIES.saturating_mul(2) {
                        leaves.extend(l.entries);
                    }
                    Ok(())
                },
            );
            c.problems(walk);
            c.problems(leaf_problems);
            leaf_entries = leaves;
            check_free_blocks(src, geo, dg, &runs, ndata, &best_of, &mut c);
        }
        DirFormat::Shortform => {}
    }
    let complete = !c.full;
    check_leaf_entries(dg, &leaf_entries, &by_ptr, &mut c, complete);
    let parent = c.entries.iter().find(|e| e.name == b"..").map(|e| e.ino);
    Ok(DirListing {
        format,
        entries: c.entries,
        parent,
        problems: c.problems,
    })
}

/// Every live leaf entry must point at an entry with that hash, and every
/// entry must have exactly one live leaf entry.
fn check_leaf_entries(
    dg: &DirGeometry,
    leaf: &[(u32, u32)],
    by_ptr: &HashMap<u32, usize>,
    c: &mut Collector,
    complete: bool,
) {
    let owner = dg.da.owner.0;
    let mut seen = vec![false; c.entries.len()];
    let mut bad = Vec::new();
    for &(hash, addr) in leaf {
        if addr == XFS_DIR2_NULL_DATAPTR {
            continue;
        }
        match by_ptr.get(&addr).copied() {
            None => {
                let (db, off) = dg.dataptr_split(addr);
                bad.push(format!(
                    "leaf entry (hash {hash:#010x}) points at data block {db} byte {off}, where no entry starts"
                ));
            }
            Some(i) => {
                let Some(e) = c.entries.get(i) else { continue };
                let want = dg.hash(&e.name);
                if want != hash {
                    bad.push(format!(
                        "leaf entry hash {hash:#010x} for \"{}\", whose hash is {want:#010x}",
                        String::from_utf8_lossy(&e.name)
                    ));
                }
                if let Some(s) = seen.get_mut(i) {
                    if *s {
                        bad.push(format!(
                            "two leaf entries point at \"{}\"",
                            String::from_utf8_lossy(&e.name)
                        ));
                    }
                    *s = true;
                }
            }
        }
    }
    if complete {
        for (i, s) in seen.iter().enumerate() {
            if !s {
                if let Some(e) = c.entries.get(i) {
                    bad.push(format!(
                        "entry \"{}\" has no leaf entry (lookups cannot find it)",
                        String::from_utf8_lossy(&e.name)
                    ));
                }
            }
        }
    }
    for d in bad {
        c.problem(Error::corrupt(
            LEAF,
            Location::Inode { ino: owner },
            format!("inode {owner}: {d}"),
        ));
    }
}

/// Compare a table of bests (starting at data block `firstdb`) with the data
/// blocks' own bestfree[0].
fn check_bests(
    dg: &DirGeometry,
    bests: &[u16],
    firstdb: u64,
    best_of: &HashMap<u64, u16>,
    c: &mut Collector,
) {
    let owner = dg.da.owner.0;
    for (i, &b) in bests.iter().enumerate() {
        let db = firstdb.saturating_add(u64::try_from(i).unwrap_or(u64::MAX));
        let actual = best_of.get(&db).copied();
        let ok = match actual {
            None => b == NULLDATAOFF,
            Some(a) => a == b,
        };
        if !ok {
            c.problem(Error::corrupt(
                "directory best free",
                Location::Inode { ino: owner },
                format!(
                    "inode {owner}: data block {db}: bests says {b}, the block says {}",
                    actual.map_or("no block".to_string(), |a| a.to_string())
                ),
            ));
        }
    }
}

fn check_free_blocks<S: ForkSource + ?Sized>(
    src: &S,
    geo: &Geometry,
    dg: &DirGeometry,
    runs: &[(u64, u64)],
    ndata: u64,
    best_of: &HashMap<u64, u16>,
    c: &mut Collector,
) {
    let owner = dg.da.owner.0;
    let max = u64::try_from(free_max_bests(dg)).unwrap_or(u64::MAX);
    let first = dg
        .free_dablk()
        .checked_div(u64::from(dg.da.fsb_count))
        .unwrap_or(0);
    let mut covered = BTreeSet::new();
    // As many free-index blocks as the data blocks need, and one more.
    let nfree = ndata.div_ceil(max.max(1)).saturating_add(1);
    let free_end = dg
        .free_dablk()
        .saturating_add(nfree.saturating_mul(u64::from(dg.da.fsb_count)));
    let beyond = dir_blocks_in(dg, runs, free_end, u64::MAX);
    if !beyond.is_empty() {
        c.problem(Error::corrupt(
            FREE,
            Location::Inode { ino: owner },
            format!(
                "inode {owner}: {} free-index block(s) mapped past the {nfree} the data blocks need; not read",
                beyond.len()
            ),
        ));
    }
    for db in dir_blocks_in(dg, runs, dg.free_dablk(), free_end) {
        let Some(dablk) = dg.da.db_to_dablk(db) else {
            continue;
        };
        let fb = match read_da_block(src, geo, &dg.da, FREE, dablk)
            .and_then(|buf| parse_free(&buf, dg))
        {
            Ok(f) => f,
            Err(e) => {
                c.problem(e);
                continue;
            }
        };
        let k = db.saturating_sub(first);
        if u64::from(fb.firstdb) != k.saturating_mul(max) {
            c.problem(Error::corrupt(
                FREE,
                Location::Inode { ino: owner },
                format!(
                    "inode {owner}: free block {k} has firstdb {}, expected {}",
                    fb.firstdb,
                    k.saturating_mul(max)
                ),
            ));
            continue;
        }
        let used = fb.bests.iter().filter(|&&b| b != NULLDATAOFF).count();
        if u64::try_from(used).unwrap_or(0) != u64::from(fb.nused) {
            c.problem(Error::corrupt(
                FREE,
                Location::Inode { ino: owner },
                format!(
                    "inode {owner}: free block {k}: nused {} but {used} entries are in use",
                    fb.nused
                ),
            ));
        }
        for i in 0..fb.bests.len() {
            covered.insert(u64::from(fb.firstdb).saturating_add(u64::try_from(i).unwrap_or(0)));
        }
        check_bests(dg, &fb.bests, u64::from(fb.firstdb), best_of, c);
    }
    for db in best_of.keys() {
        if !covered.contains(db) {
            c.problem(Error::corrupt(
                FREE,
                Location::Inode { ino: owner },
                format!("inode {owner}: data block {db} is in no free-index block"),
            ));
        }
    }
}

/// Look `name` up in a directory by its hash, as the kernel does: the
/// shortform list, or the leaf entries with that hash. Names compare
/// bytewise (on ASCII-CI filesystems, case-insensitively if no exact match).
pub fn lookup<S: ForkSource + ?Sized>(
    src: &S,
    geo: &Geometry,
    dg: &DirGeometry,
    fork: DirFork<'_>,
    name: &[u8],
) -> Result<Option<DirEntry>> {
    match fork {
        DirFork::Local { .. } => {
            let l = read_dir(src, geo, dg, fork)?;
            return Ok(pick(dg, l.entries.into_iter(), name));
        }
        DirFork::Blocks { .. } => {}
    };
    let owner = dg.da.owner.0;
    let runs = src.runs();
    let format = block_dir_format(dg, &runs).ok_or_else(|| {
        Error::corrupt(
            "directory",
            Location::Inode { ino: owner },
            format!("inode {owner}: a block directory with no blocks mapped"),
        )
    })?;
    let hash = dg.hash(name);
    // Candidate dataptrs with this hash.
    let mut ptrs: Vec<u32> = Vec::new();
    let mut block0: Option<DataBlock> = None;
    let take = |ents: &[(u32, u32)], ptrs: &mut Vec<u32>| -> bool {
        // Returns whether the run of equal hashes may continue past the end.
        let start = ents.partition_point(|e| e.0 < hash);
        let mut i = start;
        while let Some(&(h, a)) = ents.get(i) {
            if h != hash {
                return false;
            }
            if a != XFS_DIR2_NULL_DATAPTR {
                ptrs.push(a);
            }
            i = i.saturating_add(1);
        }
        true
    };
    match format {
        DirFormat::Block => {
            let buf = read_da_block(src, geo, &dg.da, DATA, 0)?;
            let d = parse_data_block(&buf, dg, true)?;
            if let Some((ents, _)) = &d.leaf {
                take(ents, &mut ptrs);
            }
            block0 = Some(d);
        }
        DirFormat::Leaf => {
            let buf = read_da_block(src, geo, &dg.da, LEAF, dg.leaf_dablk())?;
            let l = parse_leaf(&buf, dg, true)?;
            take(&l.entries, &mut ptrs);
        }
        DirFormat::Node => {
            let leafn = dg.leafn_magic();
            let mut buf = find_leaf(src, geo, &dg.da, dg.leaf_dablk(), hash, &|m| m == leafn)?;
            let mut seen = std::collections::HashSet::new();
            loop {
                seen.insert(buf.dablk);
                let l = parse_leaf(&buf, dg, false)?;
                let more = take(&l.entries, &mut ptrs);
                if !more || l.forw == 0 || seen.contains(&u64::from(l.forw)) || seen.len() > 64 {
                    break;
                }
                buf = read_da_block(src, geo, &dg.da, LEAF, u64::from(l.forw))?;
            }
        }
        DirFormat::Shortform => {}
    }
    let mut found = Vec::new();
    let mut cache: HashMap<u64, DataBlock> = HashMap::new();
    if let Some(d) = block0 {
        cache.insert(0, d);
    }
    for p in ptrs {
        let (db, off) = dg.dataptr_split(p);
        if let std::collections::hash_map::Entry::Vacant(v) = cache.entry(db) {
            let Some(dablk) = dg.da.db_to_dablk(db) else {
                continue;
            };
            let buf = read_da_block(src, geo, &dg.da, DATA, dablk)?;
            v.insert(parse_data_block(&buf, dg, false)?);
        }
        if let Some(d) = cache.get(&db) {
            if let Some((_, e)) = d.entries.iter().find(|(o, _)| *o == off) {
                let mut e = e.clone();
                e.cookie = p;
                found.push(e);
            }
        }
    }
    Ok(pick(dg, found.into_iter(), name))
}

/// The entry named `name`: an exact match, else (ASCII-CI) a case-folded one.
fn pick(
    dg: &DirGeometry,
    entries: impl Iterator<Item = DirEntry>,
    name: &[u8],
) -> Option<DirEntry> {
    let mut folded = None;
    for e in entries {
        if e.name == name {
            return Some(e);
        }
        if dg.ascii_ci
            && folded.is_none()
            && e.name.len() == name.len()
            && e.name.iter().zip(name).all(|(&a, &b)| {
                crate::xfs::dahash::ascii_ci_fold(a) == crate::xfs::dahash::ascii_ci_fold(b)
            })
        {
            folded = Some(e);
        }
    }
    folded
}

// ---------------------------------------------------------------------------
// On an opened filesystem

fn inode_fork_at(inode: &Inode, offset: Option<u32>) -> ForkAt {
    ForkAt {
        daddr: inode.location.daddr,
        byte: (inode.location.byte_offset % 512).saturating_add(u64::from(offset.unwrap_or(0))),
    }
}

/// The data fork of a directory inode, as the directory reader takes it.
pub fn dir_fork(inode: &Inode) -> Result<DirFork<'_>> {
    let ino = inode.ino.0;
    let bad = |d: String| {
        Error::corrupt(
            "directory",
            Location::Daddr {
                daddr: inode.location.daddr.0,
            },
            format!("inode {ino}: {d}"),
        )
    };
    if inode.file_type() != FileType::Dir {
        return Err(bad(format!(
            "is a {}, not a directory",
            inode.file_type().name()
        )));
    }
    match &inode.data {
        Fork::Local { bytes } => Ok(DirFork::Local {
            bytes,
            at: inode_fork_at(inode, Some(inode.layout.data_fork_offset)),
        }),
        Fork::Extents { .. } | Fork::Btree { .. } => Ok(DirFork::Blocks {
            di_size: inode.core.size,
        }),
        Fork::Corrupt { error, .. } => Err(error.clone()),
        f => Err(bad(format!(
            "directory data fork has format {} ({})",
            f.format(),
            crate::xfs::inode::format_name(f.format())
        ))),
    }
}

impl<R: ReadAt> Fs<R> {
    /// The directory geometry for directory inode `owner`.
    pub fn dir_geometry(&self, owner: Ino) -> DirGeometry {
        DirGeometry::new(&self.geo, &self.sb, owner)
    }

    /// Every entry of a directory (`.` and `..` included), with what was
    /// found wrong.
    pub fn read_dir(&self, inode: &Inode) -> Result<DirListing> {
        let fork = dir_fork(inode)?;
        let src = InodeFork {
            fs: self,
            inode,
            which: WhichFork::Data,
        };
        read_dir(&src, &self.geo, &self.dir_geometry(inode.ino), fork)
    }

    /// Look one name up in a directory by its hash.
    pub fn dir_lookup(&self, inode: &Inode, name: &[u8]) -> Result<Option<DirEntry>> {
        let fork = dir_fork(inode)?;
        let src = InodeFork {
            fs: self,
            inode,
            which: WhichFork::Data,
        };
        lookup(&src, &self.geo, &self.dir_geometry(inode.ino), fork, name)
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::cast_possible_truncation
)]
mod tests {
    use super::*;
    use crate::xfs::read::FileReader;
    use crate::xfs::testutil::*;

    /// One line of `xfs_db ls`: cookie, inode, type, hash, name.
    struct DbEntry {
        cookie: u32,
        ino: u64,
        kind: String,
        hash: u32,
        name: Vec<u8>,
    }

    fn parse_ls(lines: &[String]) -> Vec<DbEntry> {
        lines
            .iter()
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let namelen: usize = w[4].parse().unwrap();
                // The name follows the fifth field and one space.
                let mut rest = l.as_str();
                for f in &w[..5] {
                    let i = rest.find(f).unwrap();
                    rest = &rest[i + f.len()..];
                }
                let name = rest.as_bytes()[1..1 + namelen].to_vec();
                DbEntry {
                    cookie: w[0].parse().unwrap(),
                    ino: w[1].parse().unwrap(),
                    kind: w[2].to_string(),
                    hash: u32::from_str_radix(w[3].trim_start_matches("0x"), 16).unwrap(),
                    name,
                }
            })
            .collect()
    }

    fn xfs_db_type(f: Ftype) -> &'static str {
        match f.0 {
            XFS_DIR3_FT_REG_FILE => "regular",
            XFS_DIR3_FT_DIR => "directory",
            XFS_DIR3_FT_CHRDEV => "chardev",
            XFS_DIR3_FT_BLKDEV => "blkdev",
            XFS_DIR3_FT_FIFO => "fifo",
            XFS_DIR3_FT_SOCK => "socket",
            XFS_DIR3_FT_SYMLINK => "symlink",
            _ => "unknown",
        }
    }

    /// The directory of an oracle section, ready to read.
    struct Opened<'a> {
        fork: TestFork<'a>,
        dg: DirGeometry,
        local: Option<(Vec<u8>, ForkAt)>,
        di_size: u64,
    }

    impl Opened<'_> {
        fn dir_fork(&self) -> DirFork<'_> {
            match &self.local {
                Some((b, at)) => DirFork::Local { bytes: b, at: *at },
                None => DirFork::Blocks {
                    di_size: self.di_size,
                },
            }
        }
    }

    fn open<'a>(fs: &'a Fs<FileReader>, s: &Section, db: &[DbEntry]) -> Opened<'a> {
        let lines: Vec<&str> = s.head.iter().map(String::as_str).collect();
        let fork = TestFork::from_bmap(fs, &lines);
        let ino = Ino(db[0].ino);
        let dg = DirGeometry::new(&fs.geo, &fs.sb, ino);
        let di_size: u64 = head_value(s, "core.size").unwrap().parse().unwrap();
        let local = (head_value(s, "core.format") == Some("1")).then(|| {
            let off = fs.inode_offset(ino).unwrap() + if fs.geo.v5 { 176 } else { 100 };
            let bytes = fs.img.read("test", off, di_size).unwrap();
            (
                bytes,
                ForkAt {
                    daddr: Daddr(off / 512),
                    byte: off % 512,
                },
            )
        });
        Opened {
            fork,
            dg,
            local,
            di_size,
        }
    }

    const FIXTURES: &[&str] = &[
        "v5-formats",
        "v5-64kdir",
        "v5-1k-rmap",
        "v5-64kblock",
        "v5-sect4k",
        "v5-dirattr",
        "v5-ci",
        "v4-dirs",
    ];

    /// Every directory in the oracles reads as `xfs_db ls` lists it: same
    /// entries in the same order, cookies, inode numbers, types; every hash
    /// xfs_db prints is the one of the name; no problems; and each name is
    /// found again by a hash lookup.
    #[test]
    fn readdir_and_lookup_equal_xfs_db_ls() {
        let mut formats = BTreeSet::new();
        for name in FIXTURES {
            let fs = fixture_fs(name);
            for s in dirattr_oracle(name).iter().filter(|s| s.kind == "dir") {
                let db = parse_ls(&s.body);
                let o = open(&fs, s, &db);
                let l = read_dir(&o.fork, &fs.geo, &o.dg, o.dir_fork())
                    .unwrap_or_else(|e| panic!("{name} {}: {e}", s.path));
                formats.insert(l.format.name());
                assert!(l.problems.is_empty(), "{name} {}: {:?}", s.path, l.problems);
                assert_eq!(l.entries.len(), db.len(), "{name} {}", s.path);
                // xfs_db's leaf/node getdents prints the position after
                // each entry, block/shortform the entry's own.
                let cookie = |d: &DbEntry| match l.format {
                    DirFormat::Leaf | DirFormat::Node => {
                        d.cookie - u32::try_from(o.dg.data_entsize(d.name.len()) / 8).unwrap()
                    }
                    _ => d.cookie,
                };
                for (e, d) in l.entries.iter().zip(&db) {
                    let what = format!("{name} {} {}", s.path, String::from_utf8_lossy(&d.name));
                    assert_eq!(e.name, d.name, "{what}");
                    assert_eq!(e.ino.0, d.ino, "{what}");
                    assert_eq!(e.cookie, cookie(d), "{what}");
                    let kind = e.ftype.map_or("unknown", xfs_db_type);
                    assert_eq!(kind, d.kind, "{what}");
                    assert_eq!(o.dg.hash(&e.name), d.hash, "{what}");
                }
                assert_eq!(l.parent.map(|p| p.0), Some(db[1].ino));
                for d in db.iter().step_by(7) {
                    let found = lookup(&o.fork, &fs.geo, &o.dg, o.dir_fork(), &d.name)
                        .unwrap()
                        .unwrap_or_else(|| {
                            panic!(
                                "{name} {}: lookup {:?}",
                                s.path,
                                String::from_utf8_lossy(&d.name)
                            )
                        });
                    assert_eq!(found.ino.0, d.ino);
                    assert_eq!(found.cookie, cookie(d));
                }
                let missing =
                    lookup(&o.fork, &fs.geo, &o.dg, o.dir_fork(), b"no such name").unwrap();
                assert!(missing.is_none());
            }
        }
        assert_eq!(
            formats.into_iter().collect::<Vec<_>>(),
            ["block", "leaf", "node", "shortform"]
        );
    }

    fn section(name: &str, path: &str) -> Section {
        dirattr_oracle(name)
            .into_iter()
            .find(|s| s.kind == "dir" && s.path == path)
            .unwrap()
    }

    fn open_dir<'a>(fs: &'a Fs<FileReader>, name: &str, path: &str) -> (Opened<'a>, Vec<DbEntry>) {
        let s = section(name, path);
        let db = parse_ls(&s.body);
        (open(fs, &s, &db), db)
    }

    fn err_text<T: std::fmt::Debug>(r: Result<T>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn damaged_data_blocks_give_clear_errors() {
        let fs = fixture_fs("v5-formats");
        let (o, _) = open_dir(&fs, "v5-formats", "/dirs/leaf400");
        let buf = read_da_block(&o.fork, &fs.geo, &o.dg.da, DATA, 1).unwrap();
        let good = parse_data_block(&buf, &o.dg, false).unwrap();
        assert!(good.problems.is_empty() && good.entries.len() > 20);

        let mut b = buf.clone();
        b.bytes[0] = b'Q';
        fix_crc(&mut b.bytes, 4);
        let e = err_text(parse_data_block(&b, &o.dg, false));
        assert!(e.contains("magic 0x51444433, expected 0x58444433"), "{e}");

        let mut b = buf.clone();
        b.bytes[300] ^= 1;
        let e = err_text(parse_data_block(&b, &o.dg, false));
        assert!(
            e.contains("CRC stored") && e.contains(&format!("daddr {}", b.daddr.0)),
            "{e}"
        );

        let mut dg = o.dg;
        dg.da.owner = Ino(12345);
        let e = err_text(parse_data_block(&buf, &dg, false));
        assert!(
            e.contains("owner inode") && e.contains("expected 12345"),
            "{e}"
        );

        let mut b = buf.clone();
        b.daddr = Daddr(b.daddr.0 + 8);
        let e = err_text(parse_data_block(&b, &o.dg, false));
        assert!(e.contains("blkno"), "{e}");

        // The last entry's name made longer than the block has room for.
        let (last, _) = good.entries.last().unwrap();
        let mut b = buf.clone();
        b.bytes[last + 8] = 255;
        fix_crc(&mut b.bytes, 4);
        let d = parse_data_block(&b, &o.dg, false).unwrap();
        assert_eq!(d.entries.len(), good.entries.len() - 1);
        let p = d.problems[0].to_string();
        assert!(p.contains(&format!("entry at {last}")), "{p}");

        // An empty name.
        let (first, _) = good.entries[3];
        let mut b = buf.clone();
        b.bytes[first + 8] = 0;
        fix_crc(&mut b.bytes, 4);
        let d = parse_data_block(&b, &o.dg, false).unwrap();
        assert!(d.problems[0].to_string().contains("empty name"));
        assert_eq!(d.entries.len(), 3);

        // An unused region running past the end of the block (in the last,
        // partly used, data block).
        let buf = read_da_block(&o.fork, &fs.geo, &o.dg.da, DATA, 3).unwrap();
        let good = parse_data_block(&buf, &o.dg, false).unwrap();
        let (uoff, _) = good.unused[0];
        let mut b = buf.clone();
        b.bytes[uoff + 2..uoff + 4].copy_from_slice(&0xfff8u16.to_be_bytes());
        fix_crc(&mut b.bytes, 4);
        let d = parse_data_block(&b, &o.dg, false).unwrap();
        assert!(
            d.problems
                .iter()
                .any(|p| p.to_string().contains("length 65528")),
            "{:?}",
            d.problems
        );

        // bestfree pointing at something that is not free.
        let mut b = buf.clone();
        b.bytes[48..50].copy_from_slice(&64u16.to_be_bytes());
        fix_crc(&mut b.bytes, 4);
        let d = parse_data_block(&b, &o.dg, false).unwrap();
        assert!(d
            .problems
            .iter()
            .any(|p| p.to_string().contains("is not an unused region")));
    }

    #[test]
    fn counts_too_large_are_errors() {
        let fs = fixture_fs("v5-formats");
        let (o, _) = open_dir(&fs, "v5-formats", "/dirs/block40");
        let buf = read_da_block(&o.fork, &fs.geo, &o.dg.da, DATA, 0).unwrap();
        let n = buf.bytes.len();
        let mut b = buf.clone();
        b.bytes[n - 8..n - 4].copy_from_slice(&u32::MAX.to_be_bytes());
        fix_crc(&mut b.bytes, 4);
        let e = err_text(parse_data_block(&b, &o.dg, true));
        assert!(
            e.contains("leaf count 4294967295") && e.contains("does not fit"),
            "{e}"
        );

        let (o, _) = open_dir(&fs, "v5-formats", "/dirs/leaf400");
        let leaf = o.dg.leaf_dablk();
        let buf = read_da_block(&o.fork, &fs.geo, &o.dg.da, LEAF, leaf).unwrap();
        assert!(parse_leaf(&buf, &o.dg, true).unwrap().problems.is_empty());
        let mut b = buf.clone();
        b.bytes[56..58].copy_from_slice(&0xffffu16.to_be_bytes());
        fix_crc(&mut b.bytes, 12);
        let e = err_text(parse_leaf(&b, &o.dg, true));
        assert!(
            e.contains("count 65535") && e.contains("does not fit"),
            "{e}"
        );
        let mut b = buf.clone();
        let n = b.bytes.len();
        b.bytes[n - 4..].copy_from_slice(&100_000u32.to_be_bytes());
        fix_crc(&mut b.bytes, 12);
        let e = err_text(parse_leaf(&b, &o.dg, true));
        assert!(e.contains("bestcount 100000"), "{e}");
        // A leaf1 block where a leafn is expected.
        let e = err_text(parse_leaf(&buf, &o.dg, false));
        assert!(e.contains("magic 0x3df1, expected 0x3dff"), "{e}");
    }

    #[test]
    fn a_wrong_hash_and_a_lost_entry_are_reported() {
        let fs = fixture_fs("v5-formats");
        let (o, db) = open_dir(&fs, "v5-formats", "/dirs/leaf400");
        let buf = read_da_block(&o.fork, &fs.geo, &o.dg.da, DATA, 1).unwrap();
        let good = parse_data_block(&buf, &o.dg, false).unwrap();
        // Rename one entry in place (same length): its leaf hash is wrong now.
        let (off, e) = &good.entries[5];
        let mut b = buf.bytes.clone();
        b[off + 9] ^= 0x20;
        fix_crc(&mut b, 4);
        let p = Patched {
            inner: &o.fork,
            patches: [(1u64, b)].into_iter().collect(),
        };
        let l = read_dir(&p, &fs.geo, &o.dg, o.dir_fork()).unwrap();
        assert_eq!(l.entries.len(), db.len());
        assert_eq!(l.problems.len(), 1, "{:?}", l.problems);
        let t = l.problems[0].to_string();
        assert!(
            t.contains("whose hash is")
                && t.contains(&String::from_utf8_lossy(&e.name[1..]).to_string()),
            "{t}"
        );
        // The old name is no longer found, the new one only by a full read.
        assert!(lookup(&p, &fs.geo, &o.dg, o.dir_fork(), &e.name)
            .unwrap()
            .is_none());

        // Turn the same entry into free space: its leaf entry points nowhere.
        let mut b = buf.bytes.clone();
        let size = o.dg.data_entsize(e.name.len());
        b[*off..off + 2].copy_from_slice(&0xffffu16.to_be_bytes());
        b[off + 2..off + 4].copy_from_slice(&u16::try_from(size).unwrap().to_be_bytes());
        let tag = off + size - 2;
        b[tag..tag + 2].copy_from_slice(&u16::try_from(*off).unwrap().to_be_bytes());
        fix_crc(&mut b, 4);
        let p = Patched {
            inner: &o.fork,
            patches: [(1u64, b)].into_iter().collect(),
        };
        let l = read_dir(&p, &fs.geo, &o.dg, o.dir_fork()).unwrap();
        assert_eq!(l.entries.len(), db.len() - 1);
        assert!(
            l.problems
                .iter()
                .any(|p| p.to_string().contains("where no entry starts")),
            "{:?}",
            l.problems
        );
    }

    #[test]
    fn da_node_loops_and_bad_levels_are_reported_not_followed() {
        let fs = fixture_fs("v5-formats");
        let (o, db) = open_dir(&fs, "v5-formats", "/dirs/node3200");
        let root = o.dg.leaf_dablk();
        let buf = read_da_block(&o.fork, &fs.geo, &o.dg.da, "test", root).unwrap();
        let node = crate::xfs::dabtree::parse_node(&buf, &o.dg.da).unwrap();
        assert_eq!(node.level, 1);
        assert!(node.entries.len() > 2);
        // The first child pointer points back at the root.
        let mut b = buf.bytes.clone();
        b[64 + 4..64 + 8].copy_from_slice(&u32::try_from(root).unwrap().to_be_bytes());
        fix_crc(&mut b, 12);
        let p = Patched {
            inner: &o.fork,
            patches: [(root, b)].into_iter().collect(),
        };
        let l = read_dir(&p, &fs.geo, &o.dg, o.dir_fork()).unwrap();
        assert_eq!(
            l.entries.len(),
            db.len(),
            "the data blocks are all still read"
        );
        assert!(
            l.problems
                .iter()
                .any(|p| p.to_string().contains("reached twice")),
            "{:?}",
            &l.problems[..3.min(l.problems.len())]
        );
        // A lookup whose hash goes down the first child fails cleanly.
        let first = db
            .iter()
            .find(|d| o.dg.hash(&d.name) <= node.entries[0].0 && d.name.len() > 2)
            .unwrap();
        let e = err_text(lookup(&p, &fs.geo, &o.dg, o.dir_fork(), &first.name));
        assert!(e.contains("loop") || e.contains("level"), "{e}");

        // Level out of range, count 0.
        for (at, v, want) in [(58usize, 9u16, "level 9"), (56, 0, "count 0")] {
            let mut b = buf.clone();
            b.bytes[at..at + 2].copy_from_slice(&v.to_be_bytes());
            fix_crc(&mut b.bytes, 12);
            let e = err_text(crate::xfs::dabtree::parse_node(&b, &o.dg.da));
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn damaged_shortform_directories_give_clear_errors() {
        let fs = fixture_fs("v5-formats");
        let (o, db) = open_dir(&fs, "v5-formats", "/dirs/sf");
        let (bytes, at) = o.local.clone().unwrap();
        let sf = parse_shortform(&bytes, &o.dg, at).unwrap();
        assert_eq!(sf.entries.len(), db.len() - 2);
        let mut b = bytes.clone();
        b[0] += 5;
        let e = err_text(parse_shortform(&b, &o.dg, at));
        assert!(e.contains("past the end"), "{e}");
        let mut b = bytes.clone();
        b[6] = 0;
        let e = err_text(parse_shortform(&b, &o.dg, at));
        assert!(e.contains("entry 0 has an empty name"), "{e}");
        let mut b = bytes.clone();
        b[6] = 200;
        let e = err_text(parse_shortform(&b, &o.dg, at));
        assert!(e.contains("entry 0 ends at byte"), "{e}");
        let e = err_text(parse_shortform(&bytes[..3], &o.dg, at));
        assert!(e.contains("too short for the header"), "{e}");
        // Offsets out of order and a wrong i8count are problems, not errors.
        let mut b = bytes.clone();
        b[7..9].copy_from_slice(&0u16.to_be_bytes());
        let sf = parse_shortform(&b, &o.dg, at).unwrap();
        assert!(sf.problems[0].to_string().contains("offset 0 overlaps"));
        let mut b = bytes.clone();
        b.truncate(b.len() - 1);
        assert!(parse_shortform(&b, &o.dg, at).is_err());
    }

    /// Random damage (with the CRC made right again, so the checks behind it
    /// run) never panics or loops, whatever it hits.
    #[test]
    fn random_damage_never_panics() {
        let fs = fixture_fs("v5-formats");
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for (path, blocks) in [
            ("/dirs/block40", vec![(0u64, 4usize)]),
            ("/dirs/leaf400", vec![(1, 4), (8_388_608, 12)]),
            (
                "/dirs/node3200",
                vec![(3, 4), (8_388_608, 12), (8_388_609, 12), (16_777_216, 4)],
            ),
        ] {
            let (o, _) = open_dir(&fs, "v5-formats", path);
            for (dablk, crc_off) in blocks {
                let Ok(orig) = o.fork.read(dablk, o.dg.da.fsb_count) else {
                    continue;
                };
                for _ in 0..150 {
                    let mut b = orig.clone();
                    for _ in 0..1 + rng.below(6) {
                        let i = rng.below(b.len().min(512))
                            + if rng.below(4) == 0 { b.len() - 512 } else { 0 };
                        b[i] = rng.next() as u8;
                    }
                    fix_crc(&mut b, crc_off);
                    let p = Patched {
                        inner: &o.fork,
                        patches: [(dablk, b)].into_iter().collect(),
                    };
                    let _ = read_dir(&p, &fs.geo, &o.dg, o.dir_fork());
                    let _ = lookup(&p, &fs.geo, &o.dg, o.dir_fork(), b"node-entry");
                }
            }
        }
        let (o, _) = open_dir(&fs, "v5-formats", "/dirs/sf");
        let (bytes, at) = o.local.clone().unwrap();
        for _ in 0..2000 {
            let mut b = bytes.clone();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(b.len());
                b[i] = rng.next() as u8;
            }
            let _ = parse_shortform(&b, &o.dg, at);
        }
    }

    /// Shortform directories with 8-byte inode numbers, from a 3000 GiB
    /// kernel-made filesystem (`make-i8-oracle.sh` keeps only the inodes and
    /// `xfs_db ls`).
    #[test]
    fn shortform_with_8_byte_inode_numbers_equals_xfs_db_ls() {
        let text = std::fs::read_to_string(fixtures_dir().join("v5-i8.sfdir.txt")).unwrap();
        let mut n = 0;
        for sec in text.split("### dir ").skip(1) {
            let (head, ls) = sec.split_once("--- ls\n").unwrap();
            let line = |k: &str| {
                head.lines()
                    .find_map(|l| l.strip_prefix(k))
                    .unwrap()
                    .trim()
                    .to_string()
            };
            let ino: u64 = line("inode ").parse().unwrap();
            let size: usize = line("size ").parse().unwrap();
            let hex = line("hex ");
            let inode: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            let dg = DirGeometry {
                da: DaGeometry {
                    fsb_size: 4096,
                    fsb_count: 1,
                    v5: true,
                    uuid: [0; 16],
                    owner: Ino(ino),
                },
                ftype: true,
                ascii_ci: false,
                blklog: 12,
            };
            let at = ForkAt {
                daddr: Daddr(0),
                byte: 176,
            };
            let bytes = &inode[176..176 + size];
            let sf = parse_shortform(bytes, &dg, at).unwrap();
            assert!(sf.i8count > 0);
            assert!(sf.problems.is_empty(), "{:?}", sf.problems);
            let lines: Vec<String> = ls.lines().map(str::to_string).collect();
            let db = parse_ls(&lines);
            assert_eq!(sf.parent.0, db[1].ino);
            assert_eq!(sf.entries.len(), db.len() - 2);
            for (e, d) in sf.entries.iter().zip(&db[2..]) {
                assert_eq!(
                    (e.name.as_slice(), e.ino.0, e.cookie),
                    (d.name.as_slice(), d.ino, d.cookie)
                );
                assert_eq!(xfs_db_type(e.ftype.unwrap()), d.kind);
            }
            assert!(sf.entries.iter().any(|e| e.ino.0 > u64::from(u32::MAX)));
            // A wrong i8count is a problem; i8count 0 reads the numbers as
            // 4 bytes and the entries no longer fit.
            let mut b = bytes.to_vec();
            b[1] += 1;
            let sf = parse_shortform(&b, &dg, at).unwrap();
            assert!(sf.problems[0].to_string().contains("i8count"));
            b[1] = 0;
            let r = parse_shortform(&b, &dg, at);
            assert!(r.is_err() || !r.unwrap().problems.is_empty());
            n += 1;
        }
        assert_eq!(n, 2);
    }
}
