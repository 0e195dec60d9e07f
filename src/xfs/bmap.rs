//! Inode forks and the block map: the data and attr forks of an inode
//! (device number, inline bytes, inline extent list, or a bmbt rooted in the
//! inode), and finding a fork's blocks through its extents
//! ([`Fork::map`]; [`crate::xfs::inode`] reads them).
//!
//! ```text
//! extent record (16 bytes, one 128-bit big-endian word)
//!   bit 127      unwritten
//!   bits 126..73 startoff   (file block, 54 bits)
//!   bits 72..21  startblock (packed fsblock, 52 bits)
//!   bits 20..0   blockcount (21 bits)
//!
//! bmbt root in the fork:  level u16 | numrecs u16 | keys[maxrecs] u64 | ptrs u64...
//!                         maxrecs = (fork bytes - 4) / 16
//! bmbt block:             long header (72 v5 / 24 v4) | records or keys+ptrs
//! ```
//! Walks are bounded: depth, records per block, a visited set, and the
//! number of extents the inode claims.

use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::dinode::{
    XFS_BMAP_CRC_MAGIC, XFS_BMAP_MAGIC, XFS_BMBT_KEY_SIZE, XFS_BMBT_PTR_SIZE, XFS_BMBT_REC_SIZE,
    XFS_BMDR_SIZE, XFS_BTREE_LBLOCK_CRC_LEN, XFS_BTREE_LBLOCK_CRC_OFF, XFS_BTREE_LBLOCK_LEN,
    XFS_DINODE_FMT_BTREE, XFS_DINODE_FMT_DEV, XFS_DINODE_FMT_EXTENTS, XFS_DINODE_FMT_LOCAL,
    XFS_DINODE_FMT_META_BTREE, XFS_DINODE_FMT_UUID, XFS_MAX_FILEOFF,
};
use crate::xfs::fs::{be16, be32, be64, verify_v5, Fs, Owner, V5Check};
use crate::xfs::read::ReadAt;
use crate::xfs::types::{Daddr, FsBlock, Ino};
use serde::{Serialize, Serializer};
use std::collections::HashSet;

/// Deepest bmbt the walk follows (the kernel's limit for 2^48 extents is
/// below this).
pub const MAX_BMBT_LEVELS: u16 = 9;

/// Extents a bmbt walk may collect even when the inode claims fewer.
const MIN_EXTENT_CAP: u64 = 1 << 20;

/// Name of a fork format code (`di_format`, `di_aformat`).
pub fn format_name(format: u8) -> &'static str {
    match format {
        XFS_DINODE_FMT_DEV => "dev",
        XFS_DINODE_FMT_LOCAL => "local",
        XFS_DINODE_FMT_EXTENTS => "extents",
        XFS_DINODE_FMT_BTREE => "btree",
        XFS_DINODE_FMT_UUID => "uuid",
        XFS_DINODE_FMT_META_BTREE => "meta_btree",
        _ => "unknown",
    }
}

/// Which fork of an inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WhichFork {
    Data,
    Attr,
}

impl WhichFork {
    pub fn name(self) -> &'static str {
        match self {
            WhichFork::Data => "data",
            WhichFork::Attr => "attr",
        }
    }
}

/// One mapping of file blocks to filesystem blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Extent {
    /// First file block (fork offset in blocks).
    pub file_block: u64,
    /// First filesystem block (AG-packed; a realtime block for realtime data).
    pub start: FsBlock,
    /// Blocks.
    pub len: u64,
    /// Preallocated, reads as zeros.
    pub unwritten: bool,
    /// Whether the blocks are shared with another file (reflink). `None`:
    /// not determined (the refcount btree is not consulted yet).
    pub shared: Option<bool>,
}

impl Extent {
    /// Decode an on-disk extent record.
    pub fn decode(l0: u64, l1: u64) -> Extent {
        Extent {
            file_block: (l0 >> 9) & XFS_MAX_FILEOFF,
            start: FsBlock(((l0 & 0x1FF) << 43) | (l1 >> 21)),
            len: l1 & 0x1F_FFFF,
            unwritten: l0 >> 63 != 0,
            shared: None,
        }
    }

    /// One past the last file block.
    pub fn file_end(&self) -> u64 {
        self.file_block.saturating_add(self.len)
    }
}

fn ser_error<S: Serializer>(e: &Error, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&e.to_string())
}

/// A fork of an inode, as mapped.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fork {
    /// A device number (`di_format` DEV): Linux "sysv" 32-bit encoding.
    Dev { rdev: u32 },
    /// Bytes stored in the inode: `di_size` bytes of the data fork, or the
    /// shortform attr list (its `totsize` bytes).
    Local { bytes: Vec<u8> },
    /// An extent list stored in the inode.
    Extents { extents: Vec<Extent> },
    /// A bmbt: root in the inode, `blocks` the bmbt blocks visited (in walk
    /// order), `extents` all leaf records in file order.
    Btree {
        root_level: u16,
        extents: Vec<Extent>,
        blocks: Vec<FsBlock>,
    },
    /// A format this reader does not map (UUID, META_BTREE, unknown codes).
    Unknown { format: u8 },
    /// The fork could not be read; `error` says why and where.
    Corrupt {
        format: u8,
        #[serde(serialize_with = "ser_error")]
        error: Error,
    },
}

impl Fork {
    /// The extents of an extent or btree fork (empty otherwise).
    pub fn extents(&self) -> &[Extent] {
        match self {
            Fork::Extents { extents } | Fork::Btree { extents, .. } => extents,
            _ => &[],
        }
    }

    /// The fork, or its error when it could not be read.
    pub fn ok(&self) -> Result<&Fork> {
        match self {
            Fork::Corrupt { error, .. } => Err(error.clone()),
            f => Ok(f),
        }
    }

    /// The on-disk format code this fork came from.
    pub fn format(&self) -> u8 {
        match self {
            Fork::Dev { .. } => XFS_DINODE_FMT_DEV,
            Fork::Local { .. } => XFS_DINODE_FMT_LOCAL,
            Fork::Extents { .. } => XFS_DINODE_FMT_EXTENTS,
            Fork::Btree { .. } => XFS_DINODE_FMT_BTREE,
            Fork::Unknown { format } | Fork::Corrupt { format, .. } => *format,
        }
    }

    /// Where file block `file_block` lives: the filesystem block, how many
    /// blocks of the same extent follow from there (itself included), and
    /// whether it is unwritten. `None` for a hole.
    pub fn map(&self, file_block: u64) -> Option<(FsBlock, u64, bool)> {
        let ext = self.extents();
        let idx = ext.partition_point(|e| e.file_block <= file_block);
        let e = ext.get(idx.checked_sub(1)?)?;
        let delta = file_block.checked_sub(e.file_block)?;
        if delta >= e.len {
            return None;
        }
        Some((
            FsBlock(e.start.0.checked_add(delta)?),
            e.len.saturating_sub(delta),
            e.unwritten,
        ))
    }

    /// Blocks mapped (sum of extent lengths).
    pub fn mapped_blocks(&self) -> u64 {
        self.extents()
            .iter()
            .fold(0u64, |a, e| a.saturating_add(e.len))
    }
}

/// The inode core's fields that shape its forks.
#[derive(Clone, Copy, Debug)]
pub struct ForkCore {
    /// Bytes of the core (176 v3, 100 v1/v2): where the literal area starts.
    pub core_bytes: u32,
    /// `di_forkoff`: the attr fork's start in 8-byte units (0: none).
    pub forkoff: u8,
    pub format: u8,
    pub aformat: u8,
    /// `di_size`: the bytes of a local data fork.
    pub size: u64,
    pub nextents: u64,
    pub anextents: u32,
    /// `XFS_DIFLAG_REALTIME`: the data fork maps realtime blocks.
    pub realtime: bool,
}

/// Where the inode being mapped sits, for error locations.
#[derive(Clone, Copy, Debug)]
pub struct ForkContext {
    pub ino: Ino,
    pub daddr: Daddr,
    /// Byte offset of the inode within its first sector.
    pub in_sector: u64,
    pub inode_bytes: u32,
}

impl ForkContext {
    fn err(&self, which: WhichFork, byte: u32, detail: impl Into<String>) -> Error {
        Error::corrupt(
            "inode fork",
            Location::InStructure {
                daddr: self.daddr.0,
                byte: self.in_sector.saturating_add(u64::from(byte)),
            },
            format!(
                "inode {} {} fork: {}",
                self.ino.0,
                which.name(),
                detail.into()
            ),
        )
    }
}

/// Running checks over extents in file order.
struct ExtentChecker {
    prev_end: u64,
    cap: u64,
    realtime: bool,
}

impl ExtentChecker {
    fn push<R: ReadAt>(
        &mut self,
        fs: &Fs<R>,
        out: &mut Vec<Extent>,
        e: Extent,
    ) -> std::result::Result<(), String> {
        let n = out.len();
        if u64::try_from(n).unwrap_or(u64::MAX) >= self.cap {
            return Err(format!("more than {} extents", self.cap));
        }
        if e.len == 0 {
            return Err(format!("extent {n} has length 0"));
        }
        if e.file_block < self.prev_end {
            return Err(format!(
                "extent {n} starts at file block {} before the previous one ends ({})",
                e.file_block, self.prev_end
            ));
        }
        let end = e.file_end();
        if end > XFS_MAX_FILEOFF.saturating_add(1) {
            return Err(format!("extent {n} ends beyond the largest file offset"));
        }
        if !self.realtime {
            let last = e.start.0.saturating_add(e.len.saturating_sub(1));
            let (a0, _) = fs.geo.split_fsb(e.start);
            let (a1, _) = fs.geo.split_fsb(FsBlock(last));
            if a0 != a1
                || fs.geo.fsb_to_daddr(e.start).is_none()
                || fs.geo.fsb_to_daddr(FsBlock(last)).is_none()
            {
                return Err(format!(
                    "extent {n} (blocks {}+{}) lies outside the filesystem",
                    e.start.0, e.len
                ));
            }
        }
        self.prev_end = end;
        out.push(e);
        Ok(())
    }
}

impl<R: ReadAt> Fs<R> {
    /// Split the literal area and map both forks. Returns the data fork, the
    /// attr fork, the bytes the data fork uses, and the shortform attr size.
    pub(crate) fn parse_forks(
        &self,
        ctx: &ForkContext,
        core: &ForkCore,
        bytes: &[u8],
        problems: &mut Vec<String>,
    ) -> (Fork, Option<Fork>, Option<u32>, Option<u32>) {
        let core_bytes = core.core_bytes;
        let lit = ctx.inode_bytes.saturating_sub(core_bytes);
        let fo = u32::from(core.forkoff).saturating_mul(8);
        let forkoff_bad = if core.forkoff == 0 {
            None
        } else if core.format == XFS_DINODE_FMT_DEV && core.forkoff != 1 {
            Some(format!(
                "device inode with forkoff {} (must be 1)",
                core.forkoff
            ))
        } else if fo >= lit {
            Some(format!(
                "forkoff {} ({fo} bytes) is beyond the {lit}-byte literal area",
                core.forkoff
            ))
        } else {
            None
        };
        if let Some(why) = forkoff_bad {
            problems.push(why.clone());
            let e = ctx.err(WhichFork::Data, 82, why);
            return (
                Fork::Corrupt {
                    format: core.format,
                    error: e.clone(),
                },
                Some(Fork::Corrupt {
                    format: core.aformat,
                    error: e,
                }),
                None,
                None,
            );
        }
        let dsize = if core.forkoff == 0 { lit } else { fo };
        let area = |start: u32, len: u32| -> &[u8] {
            let s = usize::try_from(start).unwrap_or(usize::MAX);
            let e = usize::try_from(start.saturating_add(len)).unwrap_or(usize::MAX);
            bytes.get(s..e).unwrap_or(&[])
        };
        let data_area = area(core_bytes, dsize);
        let (data, data_used) = self.parse_fork(
            ctx,
            WhichFork::Data,
            core.format,
            data_area,
            core_bytes,
            core,
            problems,
        );
        let mut sf = None;
        let attr = if core.forkoff == 0 {
            if core.anextents != 0 {
                problems.push(format!(
                    "no attr fork (forkoff 0) but {} attr extents",
                    core.anextents
                ));
            }
            if core.aformat != 0 && core.aformat != XFS_DINODE_FMT_EXTENTS {
                problems.push(format!(
                    "no attr fork (forkoff 0) but attr format {}",
                    core.aformat
                ));
            }
            None
        } else {
            let astart = core_bytes.saturating_add(fo);
            let a_area = area(astart, lit.saturating_sub(fo));
            let (f, used) = self.parse_fork(
                ctx,
                WhichFork::Attr,
                core.aformat,
                a_area,
                astart,
                core,
                problems,
            );
            if matches!(f, Fork::Local { .. }) {
                sf = used;
            }
            Some(f)
        };
        (data, attr, data_used, sf)
    }

    #[allow(clippy::too_many_arguments)]
    fn parse_fork(
        &self,
        ctx: &ForkContext,
        which: WhichFork,
        format: u8,
        area: &[u8],
        area_off: u32,
        core: &ForkCore,
        problems: &mut Vec<String>,
    ) -> (Fork, Option<u32>) {
        let area_len = u32::try_from(area.len()).unwrap_or(u32::MAX);
        let corrupt = |e: Error, problems: &mut Vec<String>| {
            problems.push(e.to_string());
            (Fork::Corrupt { format, error: e }, None)
        };
        match (which, format) {
            (WhichFork::Data, XFS_DINODE_FMT_DEV) => match be32(area, 0) {
                Some(rdev) => (Fork::Dev { rdev }, Some(4)),
                None => corrupt(
                    ctx.err(which, area_off, "no room for the device number"),
                    problems,
                ),
            },
            (WhichFork::Data, XFS_DINODE_FMT_LOCAL) => {
                let n = usize::try_from(core.size).unwrap_or(usize::MAX);
                match area.get(..n) {
                    Some(b) => (
                        Fork::Local { bytes: b.to_vec() },
                        u32::try_from(n).ok(),
                    ),
                    None => corrupt(
                        ctx.err(
                            which,
                            area_off,
                            format!(
                                "inline data of {} bytes (di_size) does not fit the {area_len}-byte fork",
                                core.size
                            ),
                        ),
                        problems,
                    ),
                }
            }
            (WhichFork::Attr, XFS_DINODE_FMT_LOCAL) => {
                let tot = be16(area, 0).unwrap_or(0);
                match area.get(..usize::from(tot)) {
                    Some(b) if tot >= 4 => (
                        Fork::Local { bytes: b.to_vec() },
                        Some(u32::from(tot)),
                    ),
                    _ => corrupt(
                        ctx.err(
                            which,
                            area_off,
                            format!(
                                "shortform attr list of {tot} bytes (totsize) does not fit the {area_len}-byte fork"
                            ),
                        ),
                        problems,
                    ),
                }
            }
            (_, XFS_DINODE_FMT_EXTENTS) => {
                let n = match which {
                    WhichFork::Data => core.nextents,
                    WhichFork::Attr => u64::from(core.anextents),
                };
                let fits = u64::from(area_len) / 16;
                if n > fits {
                    return corrupt(
                        ctx.err(
                            which,
                            area_off,
                            format!(
                                "{n} extents do not fit the {area_len}-byte fork (room for {fits})"
                            ),
                        ),
                        problems,
                    );
                }
                let mut chk = ExtentChecker {
                    prev_end: 0,
                    cap: n,
                    realtime: which == WhichFork::Data && core.realtime,
                };
                let mut out = Vec::new();
                for i in 0..usize::try_from(n).unwrap_or(0) {
                    let off = i.saturating_mul(XFS_BMBT_REC_SIZE);
                    let (Some(l0), Some(l1)) = (be64(area, off), be64(area, off.saturating_add(8)))
                    else {
                        break;
                    };
                    if let Err(why) = chk.push(self, &mut out, Extent::decode(l0, l1)) {
                        let byte = area_off.saturating_add(u32::try_from(off).unwrap_or(0));
                        return corrupt(ctx.err(which, byte, why), problems);
                    }
                }
                let used = u32::try_from(n.saturating_mul(16)).ok();
                (Fork::Extents { extents: out }, used)
            }
            (_, XFS_DINODE_FMT_BTREE) => {
                match self.walk_bmbt(ctx, which, area, area_off, core, problems) {
                    Ok((f, used)) => (f, Some(used)),
                    Err(e) => corrupt(e, problems),
                }
            }
            (_, f) => (Fork::Unknown { format: f }, None),
        }
    }

    /// Walk a bmbt whose root is `area` (the fork bytes in the inode).
    fn walk_bmbt(
        &self,
        ctx: &ForkContext,
        which: WhichFork,
        area: &[u8],
        area_off: u32,
        core: &ForkCore,
        problems: &mut Vec<String>,
    ) -> Result<(Fork, u32)> {
        let level = be16(area, 0).unwrap_or(0);
        let numrecs = be16(area, 2).unwrap_or(0);
        let maxrecs =
            area.len().saturating_sub(XFS_BMDR_SIZE) / (XFS_BMBT_KEY_SIZE + XFS_BMBT_PTR_SIZE);
        if level == 0 || level > MAX_BMBT_LEVELS {
            return Err(ctx.err(
                which,
                area_off,
                format!("bmbt root level {level} (must be 1..={MAX_BMBT_LEVELS})"),
            ));
        }
        if numrecs == 0 || usize::from(numrecs) > maxrecs {
            return Err(ctx.err(
                which,
                area_off.saturating_add(2),
                format!("bmbt root has {numrecs} records (room for {maxrecs})"),
            ));
        }
        let claimed = match which {
            WhichFork::Data => core.nextents,
            WhichFork::Attr => u64::from(core.anextents),
        };
        let mut walk = Walk {
            which,
            owner: ctx.ino,
            extents: Vec::new(),
            blocks: Vec::new(),
            visited: HashSet::new(),
            chk: ExtentChecker {
                prev_end: 0,
                // An understated count still shows the map (the mismatch
                // is a problem); an overstated one cannot make us read more
                // than the filesystem could hold.
                cap: claimed.max(MIN_EXTENT_CAP).min(self.geo.dblocks),
                realtime: which == WhichFork::Data && core.realtime,
            },
            problems: Vec::new(),
        };
        let ptr_base = XFS_BMDR_SIZE.saturating_add(maxrecs.saturating_mul(XFS_BMBT_KEY_SIZE));
        for i in 0..usize::from(numrecs) {
            let key = be64(area, XFS_BMDR_SIZE.saturating_add(i.saturating_mul(8))).unwrap_or(0);
            let ptr = be64(area, ptr_base.saturating_add(i.saturating_mul(8))).unwrap_or(0);
            self.walk_block(&mut walk, FsBlock(ptr), level.saturating_sub(1), key)?;
        }
        if u64::try_from(walk.extents.len()).unwrap_or(u64::MAX) != claimed {
            walk.problems.push(format!(
                "{} fork bmbt holds {} extents but the inode says {claimed}",
                which.name(),
                walk.extents.len()
            ));
        }
        problems.append(&mut walk.problems);
        let used = XFS_BMDR_SIZE.saturating_add(usize::from(numrecs).saturating_mul(16));
        Ok((
            Fork::Btree {
                root_level: level,
                extents: walk.extents,
                blocks: walk.blocks,
            },
            u32::try_from(used).unwrap_or(u32::MAX),
        ))
    }

    fn walk_block(&self, w: &mut Walk, fsb: FsBlock, level: u16, key: u64) -> Result<()> {
        let daddr = self.geo.fsb_to_daddr(fsb).ok_or_else(|| {
            Error::corrupt(
                "bmbt block",
                Location::FsBlock { fsb: fsb.0 },
                format!(
                    "inode {} {} fork: bmbt pointer {} is outside the filesystem",
                    w.owner.0,
                    w.which.name(),
                    fsb.0
                ),
            )
        })?;
        let (owner, which) = (w.owner, w.which);
        let bad = |byte: usize, detail: String| {
            Error::corrupt(
                "bmbt block",
                Location::InStructure {
                    daddr: daddr.0,
                    byte: u64::try_from(byte).unwrap_or(0),
                },
                format!("inode {} {} fork: {detail}", owner.0, which.name()),
            )
        };
        if !w.visited.insert(fsb.0) {
            return Err(bad(
                0,
                format!("bmbt block {} is reached twice (a loop)", fsb.0),
            ));
        }
        if u64::try_from(w.visited.len()).unwrap_or(u64::MAX) > self.geo.dblocks {
            return Err(bad(0, "more bmbt blocks than the filesystem has".into()));
        }
        w.blocks.push(fsb);
        let b = self.read_fsblocks("bmbt block", fsb, 1)?;
        let v5 = self.geo.v5;
        let (want_magic, hdr) = if v5 {
            (XFS_BMAP_CRC_MAGIC, XFS_BTREE_LBLOCK_CRC_LEN)
        } else {
            (XFS_BMAP_MAGIC, XFS_BTREE_LBLOCK_LEN)
        };
        let magic = be32(&b, 0).unwrap_or(0);
        if magic != want_magic {
            return Err(bad(
                0,
                format!(
                    "bmbt block {} has magic {magic:#010x}, expected {want_magic:#010x}",
                    fsb.0
                ),
            ));
        }
        let blevel = be16(&b, 4).unwrap_or(0);
        if blevel != level {
            return Err(bad(
                4,
                format!(
                    "bmbt block {} is at level {blevel}, expected {level}",
                    fsb.0
                ),
            ));
        }
        let numrecs = usize::from(be16(&b, 6).unwrap_or(0));
        let maxrecs = b.len().saturating_sub(hdr) / 16;
        if numrecs == 0 || numrecs > maxrecs {
            return Err(bad(
                6,
                format!(
                    "bmbt block {} has {numrecs} records (room for {maxrecs})",
                    fsb.0
                ),
            ));
        }
        if v5 {
            let uuid = self.meta_uuid();
            let v = verify_v5(
                &b,
                &V5Check {
                    structure: "bmbt block",
                    daddr,
                    crc_off: XFS_BTREE_LBLOCK_CRC_OFF,
                    uuid: &uuid,
                    uuid_off: 40,
                    blkno_off: Some(24),
                    owner: Some((56, Owner::Ino(w.owner.0))),
                },
            );
            for p in v.problems {
                w.problems
                    .push(format!("bmbt block {} (daddr {}): {p}", fsb.0, daddr.0));
            }
        }
        if level == 0 {
            for i in 0..numrecs {
                let off = hdr.saturating_add(i.saturating_mul(16));
                let (Some(l0), Some(l1)) = (be64(&b, off), be64(&b, off.saturating_add(8))) else {
                    break;
                };
                let e = Extent::decode(l0, l1);
                if i == 0 && e.file_block != key {
                    w.problems.push(format!(
                        "bmbt block {} starts at file block {} but its parent key says {key}",
                        fsb.0, e.file_block
                    ));
                }
                w.chk
                    .push(self, &mut w.extents, e)
                    .map_err(|why| bad(off, why))?;
            }
            return Ok(());
        }
        let ptr_base = hdr.saturating_add(maxrecs.saturating_mul(8));
        let mut prev_key = None;
        for i in 0..numrecs {
            let koff = hdr.saturating_add(i.saturating_mul(8));
            let k = be64(&b, koff).unwrap_or(0);
            if prev_key.is_some_and(|p| k <= p) {
                return Err(bad(koff, format!("bmbt keys out of order at record {i}")));
            }
            prev_key = Some(k);
            let p = be64(&b, ptr_base.saturating_add(i.saturating_mul(8))).unwrap_or(0);
            self.walk_block(w, FsBlock(p), level.saturating_sub(1), k)?;
        }
        Ok(())
    }
}

pub(crate) fn block_bytes(n: u64, bs: u64) -> usize {
    usize::try_from(n.saturating_mul(bs)).unwrap_or(0)
}

struct Walk {
    which: WhichFork,
    owner: Ino,
    extents: Vec<Extent>,
    blocks: Vec<FsBlock>,
    visited: HashSet<u64>,
    chk: ExtentChecker,
    problems: Vec<String>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn rec(unwritten: bool, off: u64, start: u64, len: u64) -> (u64, u64) {
        let l0 = (u64::from(unwritten) << 63) | (off << 9) | (start >> 43);
        let l1 = (start << 21) | len;
        (l0, l1)
    }

    #[test]
    fn extent_records_decode_every_field() {
        let (l0, l1) = rec(true, 0x3F_FFFF_FFFF_FFFF, (1 << 52) - 1, 0x1F_FFFF);
        let e = Extent::decode(l0, l1);
        assert_eq!(e.file_block, (1 << 54) - 1);
        assert_eq!(e.start, FsBlock((1 << 52) - 1));
        assert_eq!(e.len, (1 << 21) - 1);
        assert!(e.unwritten);
        let (l0, l1) = rec(false, 256, 9575, 2);
        let e = Extent::decode(l0, l1);
        assert_eq!(
            (e.file_block, e.start.0, e.len, e.unwritten),
            (256, 9575, 2, false)
        );
    }

    #[test]
    fn map_finds_blocks_and_holes() {
        let mk = |fb, s, l, u| Extent {
            file_block: fb,
            start: FsBlock(s),
            len: l,
            unwritten: u,
            shared: None,
        };
        let f = Fork::Extents {
            extents: vec![
                mk(0, 100, 1, false),
                mk(256, 200, 2, true),
                mk(768, 300, 16, false),
            ],
        };
        assert_eq!(f.map(0), Some((FsBlock(100), 1, false)));
        assert_eq!(f.map(1), None);
        assert_eq!(f.map(257), Some((FsBlock(201), 1, true)));
        assert_eq!(f.map(770), Some((FsBlock(302), 14, false)));
        assert_eq!(f.map(784), None);
        assert_eq!(f.map(u64::MAX), None);
        assert_eq!(f.mapped_blocks(), 19);
        assert_eq!(Fork::Dev { rdev: 1 }.map(0), None);
    }
}
