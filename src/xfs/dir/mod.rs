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
//!
//! | file           | holds                                                        | kernel                                   |
//! |----------------|--------------------------------------------------------------|------------------------------------------|
//! | `mod.rs`       | entries, file types, the directory geometry and addresses, the fork of an inode | `xfs_dir2.c`, `xfs_da_format.h` |
//! | `shortform.rs` | inline (shortform) directories                               | `xfs_dir2_sf.c`                          |
//! | `data.rs`      | data blocks, single-block directories, bestfree              | `xfs_dir2_data.c`, `xfs_dir2_block.c`    |
//! | `leaf.rs`      | leaf1 and leafn blocks                                       | `xfs_dir2_leaf.c`                        |
//! | `free.rs`      | free-index blocks                                            | `xfs_dir2_node.c` (free index)           |
//! | `readdir.rs`   | every entry of a directory, checks across its blocks         | `xfs_dir2_readdir.c`                     |
//! | `lookup.rs`    | one name by its hash                                         | `xfs_dir_lookup` and the per-form lookups |
//!
//! The da btree that indexes node-form leaves is `crate::xfs::dabtree`
//! (`xfs_da_btree.c`).

use serde::Serialize;

use crate::xfs::bmap::{Fork, WhichFork};
use crate::xfs::dabtree::{DaGeometry, InodeFork, Problems};
use crate::xfs::dahash::dir_hashname;
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::dir2::*;
use crate::xfs::fs::Fs;
use crate::xfs::inode::{FileType, Inode};
use crate::xfs::read::ReadAt;
use crate::xfs::sb::Geometry;
use crate::xfs::types::{Daddr, Ino};

mod data;
mod free;
mod leaf;
mod lookup;
mod readdir;
mod shortform;

pub use data::{parse_data_block, DataBlock};
pub use free::{free_max_bests, parse_free, FreeBlock};
pub use leaf::{parse_leaf, LeafBlock};
pub use lookup::lookup;
pub use readdir::{block_dir_format, read_dir};
pub use shortform::{parse_shortform, Shortform};

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

const DATA: &str = "directory data block";
const LEAF: &str = "directory leaf block";
const FREE: &str = "directory free block";

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
    use std::collections::BTreeSet;

    use super::*;
    use crate::xfs::dabtree::{read_da_block, ForkSource};
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
    /// kernel-made filesystem (`make/shapes.sh i8` keeps only the inodes and
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
