//! Inodes: the core (every field, v1/v2 and v3), the literal area split into
//! data and attr forks (`di_forkoff`), what the attr fork position says about
//! how the inode got it, and the data/attr fork mappings.
//!
//! ```text
//! | core (176 v3 / 100 v1,v2) | data fork            | attr fork             |
//! 0                           core    core+forkoff*8               inodesize
//!                             '------ literal area (LITINO) ---------------'
//! ```
//! A fork is DEV (a device number), LOCAL (bytes inline), EXTENTS (16-byte
//! records inline) or BTREE (a bmbt root inline, blocks elsewhere); see
//! [`crate::xfs::bmap`].
//!
//! Reading never trusts the inode: a bad magic or version is an error (the
//! slot does not hold an inode); a bad CRC, a foreign `di_ino`/uuid or odd
//! counters are listed in [`Inode::verify`]; a fork that cannot be read is
//! [`Fork::Corrupt`] so the core stays visible.

use crate::xfs::bmap::{block_bytes, ForkContext, ForkCore};
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::ag::NULLAGINO;
use crate::xfs::format::dinode::{
    XfsDinode, XfsDinodeV2, XFS_DIFLAG2_BIGTIME, XFS_DIFLAG2_METADATA, XFS_DIFLAG2_NREXT64,
    XFS_DINODE_CRC_OFF, XFS_DINODE_FMT_BTREE, XFS_DINODE_FMT_DEV, XFS_DINODE_FMT_EXTENTS,
    XFS_DINODE_FMT_LOCAL, XFS_DINODE_FMT_META_BTREE, XFS_DINODE_MAGIC, XFS_DINODE_V2_SIZE,
    XFS_DINODE_V3_SIZE,
};
use crate::xfs::fs::{Fs, Verify};
use crate::xfs::image::MAX_READ;
use crate::xfs::read::ReadAt;
use crate::xfs::types::{AgBlock, AgIno, AgNumber, Daddr, Ino};
use serde::Serialize;
use zerocopy::FromBytes;

pub use crate::xfs::bmap::{format_name, Extent, Fork, WhichFork};

/// File type from the `S_IFMT` bits of `di_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileType {
    Dir,
    File,
    Symlink,
    CharDev,
    BlockDev,
    Fifo,
    Socket,
    /// Type bits no kernel writes (0 for a free inode).
    Unknown(u16),
}

impl FileType {
    pub fn from_mode(mode: u16) -> FileType {
        match mode & 0o170000 {
            0o040000 => FileType::Dir,
            0o100000 => FileType::File,
            0o120000 => FileType::Symlink,
            0o020000 => FileType::CharDev,
            0o060000 => FileType::BlockDev,
            0o010000 => FileType::Fifo,
            0o140000 => FileType::Socket,
            other => FileType::Unknown(other),
        }
    }

    /// The short name `ls --json` and the page use: dir, file, symlink,
    /// chardev, blockdev, fifo, socket, unknown.
    pub fn short_name(self) -> &'static str {
        match self {
            FileType::Dir => "dir",
            FileType::File => "file",
            FileType::Symlink => "symlink",
            FileType::CharDev => "chardev",
            FileType::BlockDev => "blockdev",
            FileType::Fifo => "fifo",
            FileType::Socket => "socket",
            FileType::Unknown(_) => "unknown",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FileType::Dir => "directory",
            FileType::File => "regular file",
            FileType::Symlink => "symbolic link",
            FileType::CharDev => "character device",
            FileType::BlockDev => "block device",
            FileType::Fifo => "fifo",
            FileType::Socket => "socket",
            FileType::Unknown(_) => "unknown",
        }
    }
}

/// An inode timestamp. `raw` is the 8 stored bytes as a big-endian u64.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Timestamp {
    pub raw: u64,
    /// Seconds since 1970-01-01 UTC (negative before 1970).
    pub sec: i64,
    pub nsec: u32,
    /// Stored in the bigtime encoding (ns since 1901-12-13T20:45:52Z).
    pub bigtime: bool,
}

/// Seconds between the bigtime epoch (the smallest legacy time) and 1970.
const BIGTIME_EPOCH_OFFSET: i64 = 1 << 31;
const NSEC_PER_SEC: u64 = 1_000_000_000;

impl Timestamp {
    pub fn decode(raw: u64, bigtime: bool) -> Timestamp {
        if bigtime {
            let secs = i64::try_from(raw / NSEC_PER_SEC).unwrap_or(i64::MAX);
            Timestamp {
                raw,
                sec: secs.saturating_sub(BIGTIME_EPOCH_OFFSET),
                nsec: u32::try_from(raw % NSEC_PER_SEC).unwrap_or(0),
                bigtime,
            }
        } else {
            let hi = u32::try_from(raw >> 32).unwrap_or(0);
            Timestamp {
                raw,
                sec: i64::from(i32::from_ne_bytes(hi.to_ne_bytes())),
                nsec: u32::try_from(raw & 0xFFFF_FFFF).unwrap_or(0),
                bigtime,
            }
        }
    }

    /// The 8 stored bytes (as a big-endian u64) for `sec`.`nsec` in the
    /// given encoding, clamped to its range as the kernel clamps.
    pub fn encode(sec: i64, nsec: u32, bigtime: bool) -> u64 {
        let nsec = nsec.min(999_999_999);
        if bigtime {
            let s = u64::try_from(sec.saturating_add(BIGTIME_EPOCH_OFFSET)).unwrap_or(0);
            s.saturating_mul(NSEC_PER_SEC)
                .saturating_add(u64::from(nsec))
        } else {
            let s = i32::try_from(sec).unwrap_or(if sec < 0 { i32::MIN } else { i32::MAX });
            (u64::from(u32::from_ne_bytes(s.to_ne_bytes())) << 32) | u64::from(nsec)
        }
    }

    /// `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ` in UTC.
    pub fn text(&self) -> String {
        let days = self.sec.div_euclid(86_400);
        let rem = self.sec.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:09}Z",
            rem / 3600,
            (rem / 60) % 60,
            rem % 60,
            self.nsec
        )
    }
}

/// Proleptic Gregorian date of a day count since 1970-01-01.
#[allow(
    clippy::arithmetic_side_effects,
    reason = "after the era split every term is below 2^20; the era itself saturates"
)]
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days.saturating_add(719_468);
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe.saturating_add(era.saturating_mul(400)) + i64::from(m <= 2);
    (
        y,
        u32::try_from(m).unwrap_or(0),
        u32::try_from(d).unwrap_or(0),
    )
}

/// Every field of the on-disk inode core, named like xfs_db's `core.*` and
/// `v3.*` fields. v3-only fields are `None` for v1/v2 inodes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InodeCore {
    pub magic: u16,
    pub mode: u16,
    pub version: u8,
    /// Data fork format (`di_format`).
    pub format: u8,
    /// Bytes 6..8: the v1 link count (`di_onlink`); on v3 inodes the same
    /// bytes are `di_metatype`.
    pub onlink: u16,
    /// Metadata file type (v3 with flags2 METADATA only).
    pub metatype: Option<u16>,
    pub uid: u32,
    pub gid: u32,
    /// The link count: `di_nlink` (v2/v3), `di_onlink` for v1 inodes.
    pub nlink: u32,
    pub projid_lo: u16,
    pub projid_hi: u16,
    /// `projid_hi << 16 | projid_lo`.
    pub projid: u32,
    /// v2 only: flush counter at byte 30.
    pub flushiter: Option<u16>,
    /// Raw bytes 24..32 as a big-endian u64 (`di_big_nextents` with NREXT64).
    pub big_nextents: u64,
    pub atime: Timestamp,
    pub mtime: Timestamp,
    pub ctime: Timestamp,
    pub size: u64,
    pub nblocks: u64,
    pub extsize: u32,
    /// Data-fork extent count (be64 at 24 with NREXT64, else be32 at 76).
    pub nextents: u64,
    /// Attr-fork extent count (be32 at 76 with NREXT64, else be16 at 80).
    pub anextents: u32,
    /// Attr fork offset in 8-byte units from the literal area; 0 = none.
    pub forkoff: u8,
    pub aformat: u8,
    pub dmevmask: u32,
    pub dmstate: u16,
    pub flags: u16,
    pub gen: u32,
    /// Next inode (AG-relative) on the AGI unlinked list, or 0xffffffff.
    pub next_unlinked: u32,
    /// Stored `di_crc` (the little-endian word's value).
    pub crc: Option<u32>,
    pub changecount: Option<u64>,
    pub lsn: Option<u64>,
    pub flags2: Option<u64>,
    pub cowextsize: Option<u32>,
    pub crtime: Option<Timestamp>,
    /// `di_ino`: the number the inode says it has.
    pub ino: Option<u64>,
    pub uuid: Option<[u8; 16]>,
}

/// `di_flags` bit names (bit 0 first).
pub const DI_FLAG_NAMES: [&str; 15] = [
    "realtime",
    "prealloc",
    "newrtbm",
    "immutable",
    "append",
    "sync",
    "noatime",
    "nodump",
    "rtinherit",
    "projinherit",
    "nosymlinks",
    "extsize",
    "extszinherit",
    "nodefrag",
    "filestream",
];

/// `di_flags2` bit names (bit 0 first).
pub const DI_FLAG2_NAMES: [&str; 6] = [
    "dax",
    "reflink",
    "cowextsize",
    "bigtime",
    "nrext64",
    "metadata",
];

fn bit_names(word: u64, names: &[&str]) -> Vec<String> {
    (0..64u32)
        .filter(|b| word & (1u64 << b) != 0)
        .map(|b| {
            usize::try_from(b)
                .ok()
                .and_then(|i| names.get(i))
                .map_or_else(|| format!("unknown(bit {b})"), |n| (*n).to_string())
        })
        .collect()
}

impl InodeCore {
    pub fn file_type(&self) -> FileType {
        FileType::from_mode(self.mode)
    }

    /// Permission bits (with setuid/setgid/sticky).
    pub fn perm(&self) -> u16 {
        self.mode & 0o7777
    }

    pub fn is_v3(&self) -> bool {
        self.version >= 3
    }

    pub fn flags2_or_zero(&self) -> u64 {
        self.flags2.unwrap_or(0)
    }

    pub fn flag_names(&self) -> Vec<String> {
        bit_names(u64::from(self.flags), &DI_FLAG_NAMES)
    }

    pub fn flag2_names(&self) -> Vec<String> {
        bit_names(self.flags2_or_zero(), &DI_FLAG2_NAMES)
    }

    pub fn is_realtime(&self) -> bool {
        self.flags & 1 != 0
    }

    pub fn is_bigtime(&self) -> bool {
        self.flags2_or_zero() & XFS_DIFLAG2_BIGTIME != 0
    }

    pub fn is_nrext64(&self) -> bool {
        self.flags2_or_zero() & XFS_DIFLAG2_NREXT64 != 0
    }

    /// Parse the core from the start of an inode buffer. Fails only when the
    /// bytes are not an inode at all (magic, version, too short).
    pub fn parse(b: &[u8]) -> std::result::Result<InodeCore, String> {
        let (v2, _) = XfsDinodeV2::ref_from_prefix(b)
            .map_err(|_| format!("{} bytes are too short for an inode core", b.len()))?;
        let magic = v2.di_magic.get();
        if magic != XFS_DINODE_MAGIC {
            return Err(format!("magic {magic:#06x} is not \"IN\" (0x494e)"));
        }
        let version = v2.di_version;
        if !(1..=3).contains(&version) {
            return Err(format!("version {version} is not 1, 2 or 3"));
        }
        let onlink = v2.di_onlink.get();
        let projid_lo = v2.di_projid_lo.get();
        let projid_hi = v2.di_projid_hi.get();
        let mut core = InodeCore {
            magic,
            mode: v2.di_mode.get(),
            version,
            format: v2.di_format,
            onlink,
            metatype: None,
            uid: v2.di_uid.get(),
            gid: v2.di_gid.get(),
            nlink: if version == 1 {
                u32::from(onlink)
            } else {
                v2.di_nlink.get()
            },
            projid_lo,
            projid_hi,
            projid: (u32::from(projid_hi) << 16) | u32::from(projid_lo),
            flushiter: (version < 3).then(|| v2.di_flushiter.get()),
            big_nextents: u64::from_be_bytes(
                b.get(24..32)
                    .and_then(|s| s.try_into().ok())
                    .unwrap_or([0; 8]),
            ),
            atime: Timestamp::decode(v2.di_atime.get(), false),
            mtime: Timestamp::decode(v2.di_mtime.get(), false),
            ctime: Timestamp::decode(v2.di_ctime.get(), false),
            size: v2.di_size.get(),
            nblocks: v2.di_nblocks.get(),
            extsize: v2.di_extsize.get(),
            nextents: u64::from(v2.di_nextents.get()),
            anextents: u32::from(v2.di_anextents.get()),
            forkoff: v2.di_forkoff,
            aformat: v2.di_aformat,
            dmevmask: v2.di_dmevmask.get(),
            dmstate: v2.di_dmstate.get(),
            flags: v2.di_flags.get(),
            gen: v2.di_gen.get(),
            next_unlinked: v2.di_next_unlinked.get(),
            crc: None,
            changecount: None,
            lsn: None,
            flags2: None,
            cowextsize: None,
            crtime: None,
            ino: None,
            uuid: None,
        };
        if version < 3 {
            return Ok(core);
        }
        let (v3, _) = XfsDinode::ref_from_prefix(b)
            .map_err(|_| format!("{} bytes are too short for a v3 inode core", b.len()))?;
        let flags2 = v3.di_flags2.get();
        let bigtime = flags2 & XFS_DIFLAG2_BIGTIME != 0;
        core.atime = Timestamp::decode(v3.di_atime.get(), bigtime);
        core.mtime = Timestamp::decode(v3.di_mtime.get(), bigtime);
        core.ctime = Timestamp::decode(v3.di_ctime.get(), bigtime);
        core.crtime = Some(Timestamp::decode(v3.di_crtime.get(), bigtime));
        if flags2 & XFS_DIFLAG2_NREXT64 != 0 {
            core.nextents = v3.di_big_nextents.get();
            core.anextents = v3.di_nextents.get();
        }
        if flags2 & XFS_DIFLAG2_METADATA != 0 {
            core.metatype = Some(v3.di_metatype.get());
        }
        core.crc = Some(v3.di_crc.get());
        core.changecount = Some(v3.di_changecount.get());
        core.lsn = Some(v3.di_lsn.get());
        core.flags2 = Some(flags2);
        core.cowextsize = Some(v3.di_cowextsize.get());
        core.ino = Some(v3.di_ino.get());
        core.uuid = Some(v3.di_uuid);
        Ok(core)
    }

    /// Bytes of this core (the literal area starts here).
    /// The fields the fork parser reads.
    pub(crate) fn fork_core(&self) -> ForkCore {
        ForkCore {
            core_bytes: self.core_bytes(),
            forkoff: self.forkoff,
            format: self.format,
            aformat: self.aformat,
            size: self.size,
            nextents: self.nextents,
            anextents: self.anextents,
            realtime: self.is_realtime(),
        }
    }

    pub fn core_bytes(&self) -> u32 {
        if self.is_v3() {
            u32::try_from(XFS_DINODE_V3_SIZE).unwrap_or(176)
        } else {
            u32::try_from(XFS_DINODE_V2_SIZE).unwrap_or(100)
        }
    }
}

/// Where an inode lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct InodeLocation {
    pub agno: AgNumber,
    pub agino: AgIno,
    pub agbno: AgBlock,
    /// Slot within its block.
    pub slot: u32,
    /// Sector the inode starts in.
    pub daddr: Daddr,
    /// Byte offset in the image.
    pub byte_offset: u64,
}

/// What the attr fork position most likely says about the inode's history
/// (spec §3.8). A heuristic: forkoff records only the last decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ForkoffReading {
    /// No attr fork (never had one, or the last xattr was removed).
    None,
    /// Attr fork made with the inode (ACL, security module, parent pointers):
    /// forkoff is the default.
    PrecreatedAtCreation,
    /// Attr fork added after creation for a small first xattr: forkoff is
    /// the maximum.
    AddedLaterSmallFirstXattr,
    /// Attr fork added later or moved down by a larger shortform set.
    MovedByLaterAdditions,
    /// Leaf/node (block) attributes: forkoff is the default either way.
    LeafOrNodeAttrs,
    /// Device inodes always use forkoff 1.
    DevFixed,
    /// 256-byte inodes: default and maximum are the same value.
    Indistinguishable,
    /// A combination no known path produces.
    Unusual,
}

impl ForkoffReading {
    pub fn tag(self) -> &'static str {
        match self {
            ForkoffReading::None => "none",
            ForkoffReading::PrecreatedAtCreation => "precreated_at_creation",
            ForkoffReading::AddedLaterSmallFirstXattr => "added_later_small_first_xattr",
            ForkoffReading::MovedByLaterAdditions => "moved_by_later_additions",
            ForkoffReading::LeafOrNodeAttrs => "leaf_or_node_attrs",
            ForkoffReading::DevFixed => "dev_fixed",
            ForkoffReading::Indistinguishable => "indistinguishable",
            ForkoffReading::Unusual => "unusual",
        }
    }
}

/// The inode's bytes: core, then the literal area split by `di_forkoff`.
/// Offsets are bytes from the start of the inode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LiteralLayout {
    pub inode_bytes: u32,
    pub core_bytes: u32,
    /// LITINO: bytes after the core.
    pub literal_bytes: u32,
    /// `di_forkoff` (8-byte units from the start of the literal area).
    pub forkoff: u8,
    pub data_fork_offset: u32,
    pub data_fork_bytes: u32,
    /// Bytes the data fork actually uses (inline bytes, 16 per extent, the
    /// bmbt root), when it can be told.
    pub data_fork_used_bytes: Option<u32>,
    /// `core_bytes + forkoff * 8`, when there is an attr fork.
    pub attr_fork_offset: Option<u32>,
    pub attr_fork_bytes: u32,
    /// Forkoff the kernel picks by default for this inode (1 for DEV).
    pub default_forkoff: u8,
    /// Forkoff a small first xattr gets: `(LITINO - 36) >> 3`.
    pub max_forkoff: u8,
    pub reading_tag: ForkoffReading,
    /// The reading, for people.
    pub reading: String,
}

impl LiteralLayout {
    /// The machine tag of [`Self::reading`].
    pub fn tag(&self) -> &'static str {
        self.reading_tag.tag()
    }

    /// Default `di_forkoff` for inodes of `inode_bytes` with a core of
    /// `core_bytes` (`xfs_default_attroffset`).
    pub fn default_forkoff_for(inode_bytes: u32, core_bytes: u32, data_format: u8) -> u8 {
        if data_format == XFS_DINODE_FMT_DEV {
            return 1;
        }
        let lit = inode_bytes.saturating_sub(core_bytes);
        let bytes = if inode_bytes == 256 {
            lit.saturating_sub(BMDR_2)
        } else {
            BMDR_12
        };
        u8::try_from(bytes >> 3).unwrap_or(u8::MAX)
    }

    pub fn max_forkoff_for(inode_bytes: u32, core_bytes: u32) -> u8 {
        let lit = inode_bytes.saturating_sub(core_bytes);
        u8::try_from(lit.saturating_sub(BMDR_2) >> 3).unwrap_or(u8::MAX)
    }

    /// Split the literal area. `attr_sf_bytes` is the shortform attr list
    /// size when the attr fork is LOCAL and readable.
    pub fn compute(
        core: &InodeCore,
        inode_bytes: u32,
        attr_sf_bytes: Option<u32>,
        data_used: Option<u32>,
    ) -> LiteralLayout {
        let core_bytes = core.core_bytes();
        let literal_bytes = inode_bytes.saturating_sub(core_bytes);
        let fo_bytes = u32::from(core.forkoff).saturating_mul(8);
        let (data_fork_bytes, attr_fork_offset, attr_fork_bytes) = if core.forkoff == 0 {
            (literal_bytes, None, 0)
        } else {
            (
                fo_bytes.min(literal_bytes),
                Some(core_bytes.saturating_add(fo_bytes)),
                literal_bytes.saturating_sub(fo_bytes),
            )
        };
        let default_forkoff = Self::default_forkoff_for(inode_bytes, core_bytes, core.format);
        let max_forkoff = Self::max_forkoff_for(inode_bytes, core_bytes);
        let (reading_tag, reading) = read_forkoff(
            core,
            literal_bytes,
            default_forkoff,
            max_forkoff,
            inode_bytes,
            attr_sf_bytes,
        );
        LiteralLayout {
            inode_bytes,
            core_bytes,
            literal_bytes,
            forkoff: core.forkoff,
            data_fork_offset: core_bytes,
            data_fork_bytes,
            data_fork_used_bytes: data_used,
            attr_fork_offset,
            attr_fork_bytes,
            default_forkoff,
            max_forkoff,
            reading_tag,
            reading,
        }
    }
}

/// Size of a bmbt root with 2 and 12 records (`xfs_bmdr_space_calc`).
const BMDR_2: u32 = 4 + 2 * 16;
const BMDR_12: u32 = 4 + 12 * 16;

fn read_forkoff(
    core: &InodeCore,
    literal_bytes: u32,
    default_fo: u8,
    max_fo: u8,
    inode_bytes: u32,
    sf_bytes: Option<u32>,
) -> (ForkoffReading, String) {
    use ForkoffReading as R;
    let fo = core.forkoff;
    let fo_bytes = u32::from(fo).saturating_mul(8);
    if fo == 0 {
        return (
            R::None,
            "no attr fork: the inode never had one, or its last xattr was removed".into(),
        );
    }
    if fo_bytes >= literal_bytes {
        return (
            R::Unusual,
            format!(
                "forkoff {fo} ({fo_bytes} bytes) does not leave room for an attr fork in the {literal_bytes}-byte literal area"
            ),
        );
    }
    if core.format == XFS_DINODE_FMT_DEV {
        return if fo == 1 {
            (
                R::DevFixed,
                "device inode: the attr fork always starts 8 bytes into the literal area (forkoff 1), whether made at creation or added later"
                    .into(),
            )
        } else {
            (
                R::Unusual,
                format!("device inode with forkoff {fo}; the kernel only uses 1"),
            )
        };
    }
    let blocks = matches!(core.aformat, XFS_DINODE_FMT_EXTENTS | XFS_DINODE_FMT_BTREE);
    if blocks && core.anextents > 0 {
        let mut s = format!(
            "attributes live in blocks ({} extent(s), {} format): forkoff is the default {default_fo} on either creation path",
            core.anextents,
            format_name(core.aformat)
        );
        if fo != default_fo {
            s.push_str(&format!(
                "; forkoff {fo} differs from the default, so the fork was last placed by a shortform size or by a data fork that needed the room"
            ));
        }
        return (R::LeafOrNodeAttrs, s);
    }
    if default_fo == max_fo {
        return (
            R::Indistinguishable,
            format!(
                "{inode_bytes}-byte inodes: the default and the maximum forkoff are both {fo}, so an attr fork made at creation cannot be told apart from one added for a small first xattr"
            ),
        );
    }
    let sf_note = match sf_bytes {
        Some(t) => {
            let fit = literal_bytes.saturating_sub(t) >> 3;
            format!(
                "; the shortform list is {t} bytes now, which alone would give forkoff {}",
                fit.min(u32::from(max_fo))
            )
        }
        None => String::new(),
    };
    match core.aformat {
        XFS_DINODE_FMT_EXTENTS | XFS_DINODE_FMT_BTREE if fo == default_fo => (
            R::PrecreatedAtCreation,
            "empty attr fork at the default forkoff: made with the inode (ACL, security module or parent pointers) and no xattr stored since, or all removed from a leaf fork"
                .into(),
        ),
        XFS_DINODE_FMT_LOCAL if fo == default_fo => (
            R::PrecreatedAtCreation,
            format!(
                "shortform xattrs at the default forkoff {fo}: the attr fork was made with the inode and small xattrs were added later, or a leaf fork shrank back to shortform{sf_note}"
            ),
        ),
        XFS_DINODE_FMT_LOCAL if fo == max_fo => (
            R::AddedLaterSmallFirstXattr,
            format!(
                "shortform xattrs at the maximum forkoff {fo}: the attr fork was added after creation for a small first xattr{sf_note}"
            ),
        ),
        XFS_DINODE_FMT_LOCAL if fo < max_fo => (
            R::MovedByLaterAdditions,
            format!(
                "forkoff {fo} lies between the minimum and the maximum {max_fo} and is not the default {default_fo}: the attr fork was added later, or moved down, for a larger shortform list (forkoff = (LITINO - list bytes) >> 3 when it last moved){sf_note}"
            ),
        ),
        _ => (
            R::Unusual,
            format!(
                "forkoff {fo} with attr format {} ({}) and {} attr extents matches no known creation path (default {default_fo}, maximum {max_fo})",
                core.aformat,
                format_name(core.aformat),
                core.anextents
            ),
        ),
    }
}

/// An inode with its forks mapped.
#[derive(Clone, Debug, Serialize)]
pub struct Inode {
    pub ino: Ino,
    pub location: InodeLocation,
    pub core: InodeCore,
    pub data: Fork,
    /// `None` when `di_forkoff` is 0.
    pub attr: Option<Fork>,
    /// CRC (v3; `crc_ok` is true for v1/v2 inodes, which have none) and the
    /// other checks.
    pub verify: Verify,
    pub layout: LiteralLayout,
}

impl Inode {
    pub fn file_type(&self) -> FileType {
        self.core.file_type()
    }

    pub fn fork(&self, which: WhichFork) -> Option<&Fork> {
        match which {
            WhichFork::Data => Some(&self.data),
            WhichFork::Attr => self.attr.as_ref(),
        }
    }

    /// The device number of a char/block device inode.
    pub fn rdev(&self) -> Option<u32> {
        match self.data {
            Fork::Dev { rdev } => Some(rdev),
            _ => None,
        }
    }
}

/// Linux's "sysv" split of a 32-bit XFS device number: major in the high 14
/// bits, minor in the low 18.
pub fn rdev_major_minor(rdev: u32) -> (u32, u32) {
    (rdev >> 18, rdev & 0x3ffff)
}

/// The data fork formats the kernel accepts for each file type.
fn illegal_data_format(core: &InodeCore) -> Option<String> {
    let f = core.format;
    let ok = match core.file_type() {
        FileType::CharDev | FileType::BlockDev | FileType::Fifo | FileType::Socket => {
            f == XFS_DINODE_FMT_DEV
        }
        FileType::File => matches!(
            f,
            XFS_DINODE_FMT_EXTENTS | XFS_DINODE_FMT_BTREE | XFS_DINODE_FMT_META_BTREE
        ),
        FileType::Dir => matches!(
            f,
            XFS_DINODE_FMT_LOCAL | XFS_DINODE_FMT_EXTENTS | XFS_DINODE_FMT_BTREE
        ),
        FileType::Symlink => matches!(f, XFS_DINODE_FMT_LOCAL | XFS_DINODE_FMT_EXTENTS),
        FileType::Unknown(_) => true,
    };
    (!ok).then(|| {
        format!(
            "a {} cannot have a {} ({f}) data fork",
            core.file_type().name(),
            format_name(f)
        )
    })
}

fn inode_err(ino: Ino, daddr: Daddr, byte: u64, detail: impl Into<String>) -> Error {
    Error::corrupt(
        "inode",
        Location::InStructure {
            daddr: daddr.0,
            byte,
        },
        format!("inode {}: {}", ino.0, detail.into()),
    )
}

impl<R: ReadAt> Fs<R> {
    /// Where inode `ino` lives.
    pub fn inode_location(&self, ino: Ino) -> Result<InodeLocation> {
        let (agno, agino) = self.split_ino(ino)?;
        let byte_offset = self.inode_offset(ino)?;
        let inopblog = u32::from(self.geo.inopblog);
        let slot_mask = 1u32.checked_shl(inopblog).unwrap_or(1).saturating_sub(1);
        Ok(InodeLocation {
            agno,
            agino,
            agbno: AgBlock(agino.0.checked_shr(inopblog).unwrap_or(0)),
            slot: agino.0 & slot_mask,
            daddr: Daddr(byte_offset / 512),
            byte_offset,
        })
    }

    /// The raw bytes of inode `ino` (`sb_inodesize` of them).
    pub fn inode_bytes(&self, ino: Ino) -> Result<Vec<u8>> {
        let off = self.inode_offset(ino)?;
        self.img.read("inode", off, u64::from(self.geo.inodesize))
    }

    /// Read and check inode `ino` and map its forks.
    pub fn inode(&self, ino: Ino) -> Result<Inode> {
        let location = self.inode_location(ino)?;
        let bytes = self.inode_bytes(ino)?;
        self.inode_from_bytes(ino, location, &bytes)
    }

    /// Parse inode `ino` from its bytes (as read from `location`).
    pub fn inode_from_bytes(
        &self,
        ino: Ino,
        location: InodeLocation,
        bytes: &[u8],
    ) -> Result<Inode> {
        let in_sector = location.byte_offset % 512;
        let daddr = location.daddr;
        let core = InodeCore::parse(bytes).map_err(|e| inode_err(ino, daddr, in_sector, e))?;
        let inode_bytes = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        let mut problems = Vec::new();
        let mut crc_ok = true;
        if core.is_v3() {
            if !self.geo.v5 {
                problems.push("v3 inode on a v4 filesystem".to_string());
            }
            let computed = crate::xfs::sb::crc_with_hole(bytes, XFS_DINODE_CRC_OFF);
            if core.crc != Some(computed) {
                crc_ok = false;
                problems.push(format!(
                    "CRC stored {:#010x}, computed {computed:#010x}",
                    core.crc.unwrap_or(0)
                ));
            }
            if core.ino != Some(ino.0) {
                problems.push(format!(
                    "di_ino says {} but the inode sits at {}",
                    core.ino.unwrap_or(0),
                    ino.0
                ));
            }
            if core.uuid != Some(self.meta_uuid()) {
                problems.push("di_uuid does not match the filesystem".into());
            }
        } else if self.geo.v5 {
            problems.push(format!(
                "version {} inode on a v5 filesystem (must be 3)",
                core.version
            ));
        }
        if core.size >> 63 != 0 {
            problems.push(format!("size {:#x} has the sign bit set", core.size));
        }
        if let FileType::Unknown(t) = core.file_type() {
            if core.mode != 0 {
                problems.push(format!(
                    "mode {:#o} has unknown type bits {t:#o}",
                    core.mode
                ));
            }
        }
        if let Some(why) = illegal_data_format(&core) {
            problems.push(why);
        }
        let counted = core.nextents.saturating_add(u64::from(core.anextents));
        if counted > core.nblocks && !core.is_realtime() {
            problems.push(format!(
                "{} extents but only {} blocks",
                counted, core.nblocks
            ));
        }
        if core.next_unlinked != NULLAGINO && core.nlink != 0 {
            problems.push(format!(
                "on an unlinked list (next {}) with {} links",
                core.next_unlinked, core.nlink
            ));
        }

        let forks = ForkContext {
            ino,
            daddr,
            in_sector,
            inode_bytes,
        };
        let (data, attr, data_used, sf_bytes) =
            self.parse_forks(&forks, &core.fork_core(), bytes, &mut problems);
        let layout = LiteralLayout::compute(&core, inode_bytes, sf_bytes, data_used);
        Ok(Inode {
            ino,
            location,
            core,
            data,
            attr,
            verify: Verify { crc_ok, problems },
            layout,
        })
    }
}

impl<R: ReadAt> Fs<R> {
    /// Read `count` logical blocks of a fork starting at `file_block`: holes
    /// and unwritten extents read as zeros. For directory and attr blocks
    /// (a multi-block directory block is one call).
    pub fn read_fork_blocks(
        &self,
        ino: &Inode,
        which: WhichFork,
        file_block: u64,
        count: u32,
    ) -> Result<Vec<u8>> {
        let loc = Location::Daddr {
            daddr: ino.location.daddr.0,
        };
        let fork = ino
            .fork(which)
            .ok_or_else(|| {
                Error::corrupt(
                    "inode fork",
                    loc.clone(),
                    format!("inode {} has no attr fork", ino.ino.0),
                )
            })?
            .ok()?;
        if !matches!(fork, Fork::Extents { .. } | Fork::Btree { .. }) {
            return Err(Error::corrupt(
                "inode fork",
                loc,
                format!(
                    "inode {} {} fork is {}, not mapped to blocks",
                    ino.ino.0,
                    which.name(),
                    format_name(fork.format())
                ),
            ));
        }
        if which == WhichFork::Data && ino.core.is_realtime() {
            return Err(Error::Unsupported {
                structure: "inode fork",
                location: loc,
                detail: format!("inode {} keeps its data on the realtime device", ino.ino.0),
            });
        }
        let bs = u64::from(self.geo.blocksize);
        let total = u64::from(count).saturating_mul(bs);
        if total > MAX_READ {
            return Err(Error::corrupt(
                "inode fork",
                loc,
                format!("{count} blocks is more than one read may ask for"),
            ));
        }
        let mut out = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
        let mut fb = file_block;
        let end = file_block.saturating_add(u64::from(count));
        while fb < end {
            let want = end.saturating_sub(fb);
            match fork.map(fb) {
                Some((fsb, left, false)) => {
                    let n = left.min(want);
                    let n32 = u32::try_from(n).unwrap_or(u32::MAX);
                    out.extend_from_slice(&self.read_fsblocks("fork block", fsb, n32)?);
                    fb = fb.saturating_add(n);
                }
                Some((_, left, true)) => {
                    let n = left.min(want);
                    out.resize(out.len().saturating_add(block_bytes(n, bs)), 0);
                    fb = fb.saturating_add(n);
                }
                None => {
                    let ext = fork.extents();
                    let next = ext
                        .get(ext.partition_point(|e| e.file_block <= fb))
                        .map_or(end, |e| e.file_block.min(end));
                    let n = next.saturating_sub(fb).max(1);
                    out.resize(out.len().saturating_add(block_bytes(n, bs)), 0);
                    fb = fb.saturating_add(n);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;

    /// `/files/multi-extent` of the v5-formats fixture (512-byte v3 inode,
    /// bigtime + nrext64, 8 extents, a shortform attr fork at forkoff 24);
    /// trailing zeros cut. Expected values from v5-formats.inodes.txt (xfs_db).
    const V3_NREXT64: &str = "494e81800302000000000000000000000000000100000000000000000000000836ba67d76276525336ba67ceb466abf636ba67cf2f6ccfdf000000000008000000000000000000800000000000000000000018010000000000000000b8baa55cffffffffbbc117180000000000000103000000010000113800000000000000180000000000000000000000000000000036ba67ceb20451f70000000000010e785a3c00010000400080000000000000090000000000000000000000043a2000100000000000002000000000043c4000100000000000004000000000043e6000100000000000006000000000044080001000000000000080000000000442a00010000000000000a0000000000444c00010000000000000c0000000000446e00010000000000000e000000000044900001000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001201000803006f6e2d6d756c7469796573";
    /// The root inode of the v4 fixture (256-byte v2 inode); trailing zeros cut.
    const V2_ROOT: &str = "494e41ed0201000000000000000000000000000200000000000000000000000000000000000000006b0e3a0f20c452286b0e3a0f20c4522800000000000000060000000000000000000000000000000000000002000000000000000000000000ffffffff000000000080";

    fn bytes(hex: &str, len: usize) -> Vec<u8> {
        let mut b: Vec<u8> = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        b.resize(len, 0);
        b
    }

    #[test]
    fn a_real_v3_nrext64_core_parses_like_xfs_db() {
        let b = bytes(V3_NREXT64, 512);
        let c = InodeCore::parse(&b).unwrap();
        assert_eq!((c.version, c.format, c.aformat, c.forkoff), (3, 2, 1, 24));
        assert_eq!(c.mode, 0o100600);
        assert_eq!(c.nextents, 8);
        assert_eq!(c.big_nextents, 8);
        assert_eq!(c.anextents, 0);
        assert_eq!(c.flags2, Some(0x18));
        assert_eq!(c.flag2_names(), ["bigtime", "nrext64"]);
        assert_eq!(c.gen, 3_099_239_772);
        assert_eq!(c.changecount, Some(259));
        assert_eq!(c.lsn, Some(0x1_0000_1138));
        // xfs_db shows the stored CRC bytes as a big-endian word.
        assert_eq!(c.crc.map(u32::swap_bytes), Some(0xbbc1_1718));
        assert_eq!(crate::xfs::sb::crc_with_hole(&b, 100), c.crc.unwrap());
        assert_eq!(c.atime.text(), "2026-12-01T03:15:50.483841619Z");
        assert_eq!(c.mtime.text(), "2026-12-01T03:15:13.203842038Z");
        assert_eq!(c.ctime.text(), "2026-12-01T03:15:15.267842015Z");
        assert_eq!(c.crtime.unwrap().text(), "2026-12-01T03:15:13.163842039Z");
        assert_eq!(c.ino, Some(69240));
        assert_eq!(c.next_unlinked, NULLAGINO);
        let l = LiteralLayout::compute(&c, 512, Some(16), Some(128));
        assert_eq!(
            (l.data_fork_bytes, l.attr_fork_offset, l.attr_fork_bytes),
            (192, Some(368), 144)
        );
        assert_eq!(l.tag(), "precreated_at_creation");
        // Without the NREXT64 flag the counters come from the old fields.
        let mut b2 = b.clone();
        b2[127] &= !0x10;
        let c2 = InodeCore::parse(&b2).unwrap();
        assert_eq!((c2.nextents, c2.anextents), (0, 0));
        assert_eq!(c2.big_nextents, 8);
        // Without BIGTIME the same bytes are legacy seconds + nanoseconds.
        b2[127] &= !0x08;
        let c3 = InodeCore::parse(&b2).unwrap();
        assert!(!c3.atime.bigtime);
        assert_eq!(c3.atime.sec, 0x36ba_67d7);
    }

    #[test]
    fn a_real_v2_core_parses_like_xfs_db() {
        let b = bytes(V2_ROOT, 256);
        let c = InodeCore::parse(&b).unwrap();
        assert_eq!(
            (c.version, c.format, c.mode, c.nlink, c.size),
            (2, 1, 0o40755, 2, 6)
        );
        assert_eq!(c.flushiter, Some(0));
        assert_eq!((c.crc, c.flags2, c.crtime, c.ino), (None, None, None, None));
        assert_eq!(c.atime.text(), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(c.mtime.text(), "2026-12-01T03:07:59.549737000Z");
        assert_eq!(c.core_bytes(), 100);
        let l = LiteralLayout::compute(&c, 256, None, Some(6));
        assert_eq!(
            (l.literal_bytes, l.data_fork_bytes, l.attr_fork_offset),
            (156, 156, None)
        );
        assert_eq!((l.default_forkoff, l.max_forkoff), (15, 15));
        // v1: the link count lives in di_onlink.
        let mut b1 = b.clone();
        b1[4] = 1;
        b1[7] = 5;
        assert_eq!(InodeCore::parse(&b1).unwrap().nlink, 5);
    }

    #[test]
    fn illegal_fork_formats_are_named() {
        let mut c = InodeCore::parse(&bytes(V3_NREXT64, 512)).unwrap();
        assert_eq!(illegal_data_format(&c), None);
        c.format = XFS_DINODE_FMT_LOCAL;
        assert_eq!(
            illegal_data_format(&c).unwrap(),
            "a regular file cannot have a local (1) data fork"
        );
        c.mode = 0o020644;
        assert!(illegal_data_format(&c)
            .unwrap()
            .contains("character device"));
    }

    #[test]
    fn timestamps_decode_both_encodings() {
        // Legacy: -1 second, 5 ns.
        let t = Timestamp::decode(0xFFFF_FFFF_0000_0005, false);
        assert_eq!((t.sec, t.nsec), (-1, 5));
        assert_eq!(t.text(), "1969-12-31T23:59:59.000000005Z");
        // Bigtime: 2^31 s after the bigtime epoch is the Unix epoch.
        let t = Timestamp::decode((1u64 << 31) * 1_000_000_000 + 7, true);
        assert_eq!((t.sec, t.nsec), (0, 7));
        assert_eq!(t.text(), "1970-01-01T00:00:00.000000007Z");
        let t = Timestamp::decode(0, true);
        assert_eq!(t.text(), "1901-12-13T20:45:52.000000000Z");
    }

    #[test]
    fn dev_numbers_split_like_linux_sysv() {
        assert_eq!(rdev_major_minor(0x0004_0003), (1, 3));
        assert_eq!(rdev_major_minor(7 << 18), (7, 0));
    }

    #[test]
    fn default_and_max_forkoff_follow_the_kernel_table() {
        for (size, def, max) in [(256, 5, 5), (512, 24, 37), (1024, 24, 101), (2048, 24, 229)] {
            assert_eq!(
                LiteralLayout::default_forkoff_for(size, 176, 2),
                def,
                "{size}"
            );
            assert_eq!(LiteralLayout::max_forkoff_for(size, 176), max, "{size}");
        }
        assert_eq!(LiteralLayout::default_forkoff_for(256, 100, 2), 15);
        assert_eq!(LiteralLayout::default_forkoff_for(512, 176, 0), 1);
    }

    #[test]
    fn a_non_inode_is_refused_clearly() {
        let mut b = vec![0u8; 512];
        assert!(InodeCore::parse(&b).unwrap_err().contains("magic 0x0000"));
        b[0] = 0x49;
        b[1] = 0x4e;
        b[4] = 9;
        assert!(InodeCore::parse(&b).unwrap_err().contains("version 9"));
        assert!(InodeCore::parse(&b[..50])
            .unwrap_err()
            .contains("too short"));
        b[4] = 3;
        assert!(InodeCore::parse(&b[..120]).unwrap_err().contains("v3"));
    }
}
