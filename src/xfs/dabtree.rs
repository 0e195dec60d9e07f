//! The da btree ("directory/attribute btree"): a btree keyed by name hash
//! that lives in the logical block space of a fork. Directories in node form
//! keep their leaf blocks under one (rooted at the start of the leaf space);
//! attribute forks in node form keep their leaf blocks under one (rooted at
//! block 0).
//!
//! ```text
//!             node (level 2)  { hash, before } ...
//!            /               \
//!    node (level 1)        node (level 1)
//!    /     |     \          /     \
//!  leaf <-> leaf <-> leaf <-> leaf <-> leaf     (level 0, forw/back links)
//! ```
//! An entry's hash is the largest hash in its child's subtree. Blocks are
//! addressed by "dablk", their logical block number in the fork; a da block
//! may span several filesystem blocks (directory blocks with `dirblklog`).
//!
//! This module reads da blocks through a [`ForkSource`], checks the shared
//! header (magic, and on v5 CRC, blkno, owner, uuid), and walks the tree:
//! all leaves left to right, or down to the leaf that would hold a hash.
//! Every walk is bounded: at most [`XFS_DA_NODE_MAXDEPTH`] levels, levels must
//! go down by one, and a block seen twice is a loop.

use std::collections::HashSet;

use zerocopy::FromBytes;

use crate::xfs::bmap::{Fork, WhichFork};
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::da::{
    XfsDa3Blkinfo, XfsDa3NodeHdr, XfsDaBlkinfo, XfsDaNodeEntry, XfsDaNodeHdr, XFS_DA3_CRC_OFF,
    XFS_DA3_NODE_MAGIC, XFS_DA_NODE_MAGIC, XFS_DA_NODE_MAXDEPTH,
};
use crate::xfs::fs::{verify_v5, Fs, Owner, V5Check};
use crate::xfs::inode::Inode;
use crate::xfs::read::ReadAt;
use crate::xfs::sb::Geometry;
use crate::xfs::types::{Daddr, FsBlock, Ino};

/// The logical blocks of one fork of one inode.
pub trait ForkSource {
    /// The filesystem block behind fork block `file_block` and how many
    /// blocks of the same extent follow from there (itself included);
    /// `None` for a hole.
    fn map(&self, file_block: u64) -> Option<(FsBlock, u64)>;
    /// The mapped runs `(first fork block, blocks)`, ascending.
    fn runs(&self) -> Vec<(u64, u64)>;
    /// The bytes of `count` fork blocks from `file_block`.
    fn read(&self, file_block: u64, count: u32) -> Result<Vec<u8>>;
}

/// What the readers of one fork need to know besides its blocks.
#[derive(Clone, Copy, Debug)]
pub struct DaGeometry {
    /// Filesystem block size in bytes.
    pub fsb_size: u32,
    /// Filesystem blocks per da block (1 for attributes, `1 << dirblklog`
    /// for directories).
    pub fsb_count: u32,
    /// v5: self-describing headers with CRCs.
    pub v5: bool,
    /// The UUID metadata blocks carry.
    pub uuid: [u8; 16],
    /// The inode that owns the fork.
    pub owner: Ino,
}

impl DaGeometry {
    /// Bytes of one da block.
    pub fn blksize(&self) -> usize {
        usize::try_from(u64::from(self.fsb_size).saturating_mul(u64::from(self.fsb_count)))
            .unwrap_or(usize::MAX)
    }

    /// Fork blocks of directory block number `db` (`db << dirblklog`).
    pub fn db_to_dablk(&self, db: u64) -> Option<u64> {
        db.checked_mul(u64::from(self.fsb_count))
    }
}

/// One da block as read: where it came from and its bytes.
#[derive(Clone, Debug)]
pub struct DaBuf {
    /// Logical block in the fork.
    pub dablk: u64,
    /// Daddr of its first sector.
    pub daddr: Daddr,
    pub bytes: Vec<u8>,
}

impl DaBuf {
    /// The corruption error for byte `byte` of this block.
    pub fn bad(&self, structure: &'static str, byte: usize, detail: impl Into<String>) -> Error {
        Error::corrupt(
            structure,
            Location::InStructure {
                daddr: self.daddr.0,
                byte: u64::try_from(byte).unwrap_or(u64::MAX),
            },
            detail,
        )
    }

    /// The 16-bit magic of a da block (byte 8).
    pub fn da_magic(&self) -> Option<u16> {
        crate::xfs::fs::be16(&self.bytes, crate::xfs::format::da::XFS_DA_MAGIC_OFF)
    }
}

/// Read da block `dablk` of a fork: map it, read `fsb_count` blocks.
pub fn read_da_block<S: ForkSource + ?Sized>(
    src: &S,
    geo: &Geometry,
    dg: &DaGeometry,
    structure: &'static str,
    dablk: u64,
) -> Result<DaBuf> {
    let Some((fsb, _)) = src.map(dablk) else {
        return Err(Error::corrupt(
            structure,
            Location::Inode { ino: dg.owner.0 },
            format!(
                "inode {}: fork block {dablk} is not mapped (a hole)",
                dg.owner.0
            ),
        ));
    };
    let daddr = geo.fsb_to_daddr(fsb).ok_or_else(|| {
        Error::corrupt(
            structure,
            Location::Inode { ino: dg.owner.0 },
            format!(
                "inode {}: fork block {dablk} maps to block {} outside the filesystem",
                dg.owner.0, fsb.0
            ),
        )
    })?;
    let bytes = src.read(dablk, dg.fsb_count)?;
    if bytes.len() != dg.blksize() {
        return Err(Error::corrupt(
            structure,
            Location::Daddr { daddr: daddr.0 },
            format!(
                "inode {}: read {} bytes for a {}-byte block",
                dg.owner.0,
                bytes.len(),
                dg.blksize()
            ),
        ));
    }
    Ok(DaBuf {
        dablk,
        daddr,
        bytes,
    })
}

/// Check the self-describing header of a v5 block: CRC, uuid, blkno, owner.
/// `crc_off` etc. differ between the da header and the dir3 data header.
pub fn check_v5_header(
    buf: &DaBuf,
    dg: &DaGeometry,
    structure: &'static str,
    crc_off: usize,
    blkno_off: usize,
    uuid_off: usize,
    owner_off: usize,
) -> Result<()> {
    let v = verify_v5(
        &buf.bytes,
        &V5Check {
            structure,
            daddr: buf.daddr,
            crc_off,
            uuid: &dg.uuid,
            uuid_off,
            blkno_off: Some(blkno_off),
            owner: Some((owner_off, Owner::Ino(dg.owner.0))),
        },
    );
    if v.problems.is_empty() {
        Ok(())
    } else {
        Err(Error::corrupt(
            structure,
            Location::Daddr { daddr: buf.daddr.0 },
            format!(
                "inode {} fork block {}: {}",
                dg.owner.0,
                buf.dablk,
                v.problems.join("; ")
            ),
        ))
    }
}

/// The header every da block starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlkInfo {
    pub forw: u32,
    pub back: u32,
    pub magic: u16,
}

/// Bytes of the da block header (`xfs_da_blkinfo` or `xfs_da3_blkinfo`).
pub fn blkinfo_size(v5: bool) -> usize {
    if v5 {
        core::mem::size_of::<XfsDa3Blkinfo>()
    } else {
        core::mem::size_of::<XfsDaBlkinfo>()
    }
}

/// Parse the shared da header and, on v5, verify the block.
pub fn read_blkinfo(buf: &DaBuf, dg: &DaGeometry, structure: &'static str) -> Result<BlkInfo> {
    let (b, _) = XfsDaBlkinfo::ref_from_prefix(&buf.bytes)
        .map_err(|_| buf.bad(structure, 0, "block too short for its header"))?;
    let info = BlkInfo {
        forw: b.forw.get(),
        back: b.back.get(),
        magic: b.magic.get(),
    };
    if dg.v5 {
        check_v5_header(buf, dg, structure, XFS_DA3_CRC_OFF, 16, 32, 48)?;
    }
    Ok(info)
}

/// An interior node of the da btree.
#[derive(Clone, Debug)]
pub struct DaNode {
    pub info: BlkInfo,
    pub level: u16,
    /// `(hashval, before)`, ascending by hash.
    pub entries: Vec<(u32, u32)>,
}

/// The node magic of this filesystem version.
pub fn node_magic(v5: bool) -> u16 {
    if v5 {
        XFS_DA3_NODE_MAGIC
    } else {
        XFS_DA_NODE_MAGIC
    }
}

/// Parse a da node block (whose magic the caller has seen to be a node's).
pub fn parse_node(buf: &DaBuf, dg: &DaGeometry) -> Result<DaNode> {
    const S: &str = "da btree node";
    let info = read_blkinfo(buf, dg, S)?;
    if info.magic != node_magic(dg.v5) {
        return Err(buf.bad(
            S,
            8,
            format!(
                "magic {:#06x}, expected {:#06x}",
                info.magic,
                node_magic(dg.v5)
            ),
        ));
    }
    let (count, level, hdr) = if dg.v5 {
        let (h, _) = XfsDa3NodeHdr::ref_from_prefix(&buf.bytes)
            .map_err(|_| buf.bad(S, 0, "block too short for its header"))?;
        (h.__count.get(), h.__level.get(), core::mem::size_of_val(h))
    } else {
        let (h, _) = XfsDaNodeHdr::ref_from_prefix(&buf.bytes)
            .map_err(|_| buf.bad(S, 0, "block too short for its header"))?;
        (h.__count.get(), h.__level.get(), core::mem::size_of_val(h))
    };
    let esz = core::mem::size_of::<XfsDaNodeEntry>();
    let max = buf
        .bytes
        .len()
        .saturating_sub(hdr)
        .checked_div(esz)
        .unwrap_or(0);
    if count == 0 || usize::from(count) > max {
        return Err(buf.bad(
            S,
            hdr.saturating_sub(4),
            format!("count {count} (a node holds 1..={max})"),
        ));
    }
    if level == 0 || usize::from(level) >= XFS_DA_NODE_MAXDEPTH {
        return Err(buf.bad(
            S,
            hdr.saturating_sub(2),
            format!(
                "level {level} (a node is at level 1..={})",
                XFS_DA_NODE_MAXDEPTH.saturating_sub(1)
            ),
        ));
    }
    let table = buf
        .bytes
        .get(hdr..)
        .and_then(|t| t.get(..usize::from(count).saturating_mul(esz)))
        .unwrap_or(&[]);
    let (ents, _) = <[XfsDaNodeEntry]>::ref_from_prefix_with_elems(table, usize::from(count))
        .map_err(|_| {
            buf.bad(
                S,
                hdr,
                format!(
                    "count {count}: {count} entries of {esz} bytes run past the end of the block ({} bytes)",
                    buf.bytes.len()
                ),
            )
        })?;
    let mut entries = Vec::with_capacity(ents.len());
    let mut prev = 0u32;
    for (i, e) in ents.iter().enumerate() {
        let h = e.hashval.get();
        if h < prev {
            return Err(buf.bad(
                S,
                hdr.saturating_add(i.saturating_mul(esz)),
                format!("entry {i}: hash {h:#010x} is below the previous {prev:#010x}"),
            ));
        }
        prev = h;
        entries.push((h, e.before.get()));
    }
    Ok(DaNode {
        info,
        level,
        entries,
    })
}

/// Something wrong that does not stop a walk: the walk goes on around it.
pub type Problems = Vec<Error>;

/// Visit every leaf of the da btree rooted at `root`, left to right.
/// `is_leaf` says whether a block magic is a leaf of this tree. A root that is
/// itself a leaf is visited alone. Unreadable subtrees are reported and
/// skipped; sibling links that disagree with the tree are reported.
pub fn walk_leaves<S: ForkSource + ?Sized>(
    src: &S,
    geo: &Geometry,
    dg: &DaGeometry,
    root: u64,
    is_leaf: &dyn Fn(u16) -> bool,
    visit: &mut dyn FnMut(DaBuf) -> Result<()>,
) -> Problems {
    const S: &str = "da btree node";
    let mut problems = Vec::new();
    let mut seen: HashSet<u64> = HashSet::new();
    // (dablk, level the parent expects it at, None for the root)
    let mut stack: Vec<(u64, Option<u16>)> = vec![(root, None)];
    let mut prev_leaf: Option<(u64, u32)> = None;
    while let Some((dablk, want_level)) = stack.pop() {
        if !seen.insert(dablk) {
            problems.push(Error::corrupt(
                S,
                Location::Inode { ino: dg.owner.0 },
                format!(
                    "inode {}: fork block {dablk} is reached twice in the da btree (a loop)",
                    dg.owner.0
                ),
            ));
            continue;
        }
        let buf = match read_da_block(src, geo, dg, S, dablk) {
            Ok(b) => b,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let magic = buf.da_magic().unwrap_or(0);
        if is_leaf(magic) {
            if let Some(l) = want_level.filter(|&l| l != 0) {
                problems.push(buf.bad(S, 8, format!("a leaf where the parent expects level {l}")));
                continue;
            }
            let forw = crate::xfs::fs::be32(&buf.bytes, 0).unwrap_or(0);
            let back = crate::xfs::fs::be32(&buf.bytes, 4).unwrap_or(0);
            let expected_back = prev_leaf.map_or(0, |(d, _)| u32::try_from(d).unwrap_or(0));
            if back != expected_back {
                problems.push(buf.bad(
                    S,
                    4,
                    format!(
                        "leaf at fork block {dablk}: back link {back}, but the previous leaf is {expected_back}"
                    ),
                ));
            }
            if let Some((pd, pforw)) = prev_leaf {
                if u64::from(pforw) != dablk {
                    problems.push(buf.bad(
                        S,
                        0,
                        format!(
                            "leaf at fork block {pd}: forward link {pforw}, but the next leaf is {dablk}"
                        ),
                    ));
                }
            }
            prev_leaf = Some((dablk, forw));
            if let Err(e) = visit(buf) {
                problems.push(e);
            }
            continue;
        }
        if magic != node_magic(dg.v5) {
            problems.push(buf.bad(
                S,
                8,
                format!("magic {magic:#06x} is neither a node nor a leaf of this tree"),
            ));
            continue;
        }
        let node = match parse_node(&buf, dg) {
            Ok(n) => n,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        if let Some(l) = want_level {
            if node.level != l {
                problems.push(buf.bad(
                    S,
                    14,
                    format!("level {}, but the parent expects {l}", node.level),
                ));
                continue;
            }
        }
        let child_level = node.level.saturating_sub(1);
        for &(_, before) in node.entries.iter().rev() {
            stack.push((u64::from(before), Some(child_level)));
        }
    }
    if let Some((pd, pforw)) = prev_leaf {
        if pforw != 0 {
            problems.push(Error::corrupt(
                S,
                Location::Inode { ino: dg.owner.0 },
                format!(
                    "inode {}: last leaf (fork block {pd}) has a forward link to {pforw}",
                    dg.owner.0
                ),
            ));
        }
    }
    problems
}

/// Descend from `root` to the leaf that would hold `hash`. Returns that leaf;
/// entries with the same hash may continue in the leaves after it (follow
/// `forw`).
pub fn find_leaf<S: ForkSource + ?Sized>(
    src: &S,
    geo: &Geometry,
    dg: &DaGeometry,
    root: u64,
    hash: u32,
    is_leaf: &dyn Fn(u16) -> bool,
) -> Result<DaBuf> {
    const S: &str = "da btree node";
    let mut dablk = root;
    let mut want_level: Option<u16> = None;
    let mut seen = HashSet::new();
    for _ in 0..=XFS_DA_NODE_MAXDEPTH {
        if !seen.insert(dablk) {
            break;
        }
        let buf = read_da_block(src, geo, dg, S, dablk)?;
        let magic = buf.da_magic().unwrap_or(0);
        if is_leaf(magic) {
            if let Some(l) = want_level.filter(|&l| l != 0) {
                return Err(buf.bad(S, 8, format!("a leaf where the parent expects level {l}")));
            }
            return Ok(buf);
        }
        let node = parse_node(&buf, dg)?;
        if want_level.is_some_and(|l| l != node.level) {
            return Err(buf.bad(
                S,
                14,
                format!(
                    "level {}, but the parent expects {}",
                    node.level,
                    want_level.unwrap_or(0)
                ),
            ));
        }
        let idx = node.entries.partition_point(|&(h, _)| h < hash);
        let (_, before) = node
            .entries
            .get(idx)
            .or(node.entries.last())
            .copied()
            .unwrap_or((0, 0));
        dablk = u64::from(before);
        want_level = Some(node.level.saturating_sub(1));
    }
    Err(Error::corrupt(
        S,
        Location::Inode { ino: dg.owner.0 },
        format!(
            "inode {}: no leaf within {} levels from fork block {root} (a loop or too deep)",
            dg.owner.0, XFS_DA_NODE_MAXDEPTH
        ),
    ))
}

/// One fork of an inode read from the filesystem.
pub struct InodeFork<'a, R: ReadAt> {
    pub fs: &'a Fs<R>,
    pub inode: &'a Inode,
    pub which: WhichFork,
}

impl<R: ReadAt> InodeFork<'_, R> {
    fn fork(&self) -> Option<&Fork> {
        self.inode.fork(self.which)
    }
}

impl<R: ReadAt> ForkSource for InodeFork<'_, R> {
    fn map(&self, file_block: u64) -> Option<(FsBlock, u64)> {
        let (fsb, left, _) = self.fork()?.map(file_block)?;
        Some((fsb, left))
    }

    fn runs(&self) -> Vec<(u64, u64)> {
        self.fork()
            .map(|f| f.extents().iter().map(|e| (e.file_block, e.len)).collect())
            .unwrap_or_default()
    }

    fn read(&self, file_block: u64, count: u32) -> Result<Vec<u8>> {
        self.fs
            .read_fork_blocks(self.inode, self.which, file_block, count)
    }
}
