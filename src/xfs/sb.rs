//! The superblock: parsed completely, validated, and described field by field.
//!
//! Parsing never fails on a superblock that carries the XFS magic: every
//! field is shown as found, and what is wrong with it is listed in
//! [`Superblock::problems`]. [`Superblock::geometry`] then refuses to hand out
//! a geometry when a problem would make reading on wrong.

use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::sb::{XfsDsb, NULLFSINO, XFS_SB_CRC_OFF, XFS_SB_MAGIC};
use crate::xfs::image::Image;
use crate::xfs::read::ReadAt;
use crate::xfs::types::{AgBlock, AgNumber, Daddr, FsBlock, Lsn};
use serde::Serialize;
use zerocopy::FromBytes;

mod check;
mod fields;

/// The smallest superblock sector.
const MIN_SECTSIZE: u16 = 512;
/// The largest superblock sector (`XFS_MAX_SECTORSIZE`).
const MAX_SECTSIZE: u16 = 32768;
/// `XFS_MIN_AG_BLOCKS`.
const MIN_AG_BLOCKS: u32 = 64;
/// `XFS_MAX_DIR_BLOCKSIZE` / largest directory block.
const MAX_DIR_BLOCKSIZE: u64 = 65536;

// Legacy `sb_versionnum` bits (high 12 bits; version number in the low 4).
pub const VERSION_NUMBITS: u16 = 0x000f;

/// A named bit in a feature word.
#[derive(Clone, Copy, Debug)]
pub struct FeatureBit {
    pub mask: u32,
    pub name: &'static str,
    pub meaning: &'static str,
}

macro_rules! bits {
    ($($mask:expr, $name:literal, $meaning:literal;)*) => {
        &[$(FeatureBit { mask: $mask, name: $name, meaning: $meaning }),*]
    };
}

/// `sb_versionnum` feature bits (names as `xfs_db version` prints them).
pub const VERSIONNUM_BITS: &[FeatureBit] = bits![
    0x0010, "ATTR", "extended attributes have been used";
    0x0020, "NLINK", "32-bit link counts (version 2 inodes)";
    0x0040, "QUOTA", "quota inodes are present";
    0x0080, "ALIGN", "inode chunks are aligned (sb_inoalignmt)";
    0x0100, "DALIGN", "data is aligned to a stripe (sb_unit/sb_width)";
    0x0200, "SHARED", "shared version number (unsupported, must be clear)";
    0x0400, "LOGV2", "version 2 log format";
    0x0800, "SECTOR", "sector sizes other than 512 bytes";
    0x1000, "EXTFLG", "extents may carry the unwritten flag";
    0x2000, "DIRV2", "version 2 directories";
    0x4000, "ASCII_CI", "ASCII case-insensitive directory names";
    0x8000, "MOREBITS", "sb_features2 holds more feature bits";
];

/// `sb_features2` bits.
pub const FEATURES2_BITS: &[FeatureBit] = bits![
    0x0001, "RESERVED_LAZY", "reserved (historic lazy superblock counters bit)";
    0x0002, "LAZYSBCOUNT", "superblock summary counters are updated lazily";
    0x0004, "RESERVED4", "reserved";
    0x0008, "ATTR2", "version 2 inline attribute format (variable fork offset)";
    0x0010, "PARENT_OLD", "historic parent-pointer bit (never used)";
    0x0080, "PROJID32BIT", "32-bit project identifiers";
    0x0100, "CRC", "metadata checksums (version 5 superblock)";
    0x0200, "FTYPE", "file type in directory entries (version 4)";
];

/// `sb_features_compat` bits: none are defined.
pub const COMPAT_BITS: &[FeatureBit] = &[];

/// `sb_features_ro_compat` bits.
pub const RO_COMPAT_BITS: &[FeatureBit] = bits![
    1 << 0, "FINOBT", "free inode btree";
    1 << 1, "RMAPBT", "reverse mapping btree";
    1 << 2, "REFLINK", "reference count btree: shared (reflinked) extents";
    1 << 3, "INOBTCNT", "inode btree block counters in the AGI";
];

/// `sb_features_incompat` bits.
pub const INCOMPAT_BITS: &[FeatureBit] = bits![
    1 << 0, "FTYPE", "file type in directory entries";
    1 << 1, "SPARSE_INODES", "sparse inode chunks";
    1 << 2, "META_UUID", "metadata is stamped with sb_meta_uuid";
    1 << 3, "BIGTIME", "timestamps beyond 2038";
    1 << 4, "NEEDSREPAIR", "xfs_repair must run before mounting";
    1 << 5, "NREXT64", "large extent counters";
    1 << 6, "EXCHRANGE", "atomic file mapping exchange";
    1 << 7, "PARENT", "directory parent pointers";
    1 << 8, "METADIR", "metadata directory tree";
    1 << 9, "ZONED", "zoned realtime device";
    1 << 10, "ZONE_GAPS", "realtime groups have gaps";
];

/// `sb_features_log_incompat` bits.
pub const LOG_INCOMPAT_BITS: &[FeatureBit] = bits![
    1 << 0, "LOG_XATTRS", "the log may hold extended attribute intents";
];

/// The names of the bits set in `word`; bits without a name come out as
/// `<word>_UNKNOWN_0x...` rather than being rejected.
pub fn bit_names(word: u32, table: &[FeatureBit], word_name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut known = 0u32;
    for b in table {
        known |= b.mask;
        if word & b.mask != 0 {
            out.push(b.name.to_string());
        }
    }
    let unknown = word & !known;
    for i in 0..32u32 {
        let m = 1u32 << i;
        if unknown & m != 0 {
            out.push(format!("{word_name}_UNKNOWN_{m:#x}"));
        }
    }
    out
}

/// How bad a problem found in the superblock is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth knowing; reading on is still right.
    Warning,
    /// Reading on with this geometry would be wrong.
    Fatal,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub severity: Severity,
    /// The field at fault, without the `sb_` prefix.
    pub field: &'static str,
    pub message: String,
}

/// Every superblock field, as found, without the `sb_` prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Superblock {
    pub magicnum: u32,
    pub blocksize: u32,
    pub dblocks: u64,
    pub rblocks: u64,
    pub rextents: u64,
    pub uuid: [u8; 16],
    pub logstart: u64,
    pub rootino: u64,
    pub rbmino: u64,
    pub rsumino: u64,
    pub rextsize: u32,
    pub agblocks: u32,
    pub agcount: u32,
    pub rbmblocks: u32,
    pub logblocks: u32,
    pub versionnum: u16,
    pub sectsize: u16,
    pub inodesize: u16,
    pub inopblock: u16,
    pub fname: [u8; 12],
    pub blocklog: u8,
    pub sectlog: u8,
    pub inodelog: u8,
    pub inopblog: u8,
    pub agblklog: u8,
    pub rextslog: u8,
    pub inprogress: u8,
    pub imax_pct: u8,
    pub icount: u64,
    pub ifree: u64,
    pub fdblocks: u64,
    pub frextents: u64,
    pub uquotino: u64,
    pub gquotino: u64,
    pub qflags: u16,
    pub flags: u8,
    pub shared_vn: u8,
    pub inoalignmt: u32,
    pub unit: u32,
    pub width: u32,
    pub dirblklog: u8,
    pub logsectlog: u8,
    pub logsectsize: u16,
    pub logsunit: u32,
    pub features2: u32,
    pub bad_features2: u32,
    pub features_compat: u32,
    pub features_ro_compat: u32,
    pub features_incompat: u32,
    pub features_log_incompat: u32,
    pub crc: u32,
    pub spino_align: u32,
    pub pquotino: u64,
    pub lsn: u64,
    pub meta_uuid: [u8; 16],
    pub metadirino: u64,
    pub rgcount: u32,
    pub rgextents: u32,
    pub rgblklog: u8,
    pub rtstart: u64,
    pub rtreserved: u64,
    /// The CRC32c computed over the superblock sector, for v5 superblocks
    /// whose sector could be read.
    pub computed_crc: Option<u32>,
    /// Everything found wrong, worst first within each field.
    pub problems: Vec<Problem>,
}

/// A field's value as shown to people and in JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum FieldValue {
    Num(u64),
    Text(String),
}

impl std::fmt::Display for FieldValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldValue::Num(n) => write!(f, "{n}"),
            FieldValue::Text(s) => f.write_str(s),
        }
    }
}

/// One superblock field described for display.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Field {
    /// The field name without `sb_`.
    pub name: &'static str,
    pub value: FieldValue,
    /// Byte offset in the superblock.
    pub offset: u16,
    /// Bytes on disk.
    pub size: u16,
    /// A one-line meaning.
    pub meaning: &'static str,
    /// A second reading of the value (hex, names of bits, sizes), if useful.
    pub note: Option<String>,
}

/// Canonical text form of a UUID (8-4-4-4-12 lowercase hex).
pub fn uuid_text(u: &[u8; 16]) -> String {
    let hex: String = u.iter().map(|b| format!("{b:02x}")).collect();
    let part = |a: usize, b: usize| hex.get(a..b).unwrap_or("");
    format!(
        "{}-{}-{}-{}-{}",
        part(0, 8),
        part(8, 12),
        part(12, 16),
        part(16, 20),
        part(20, 32)
    )
}

/// The label: bytes up to the first NUL, with anything unprintable escaped.
pub fn label_text(fname: &[u8; 12]) -> String {
    let end = fname.iter().position(|b| *b == 0).unwrap_or(fname.len());
    fname
        .get(..end)
        .unwrap_or(&[])
        .iter()
        .flat_map(|b| std::ascii::escape_default(*b))
        .map(char::from)
        .collect()
}

/// `ceil(log2(n))`, as mkfs computes `sb_agblklog`.
fn log2_roundup(n: u32) -> u32 {
    if n <= 1 {
        0
    } else {
        32u32.saturating_sub((n.saturating_sub(1)).leading_zeros())
    }
}

impl Superblock {
    /// Version number in the low 4 bits of `versionnum` (4 or 5 for a
    /// filesystem a current kernel reads).
    pub fn version(&self) -> u16 {
        self.versionnum & VERSION_NUMBITS
    }

    pub fn is_v5(&self) -> bool {
        self.version() == 5
    }

    /// Whether the CRC matches (v5 only; `None` when there is no CRC or the
    /// sector could not be read whole).
    pub fn crc_ok(&self) -> Option<bool> {
        self.computed_crc.map(|c| c == self.crc)
    }

    fn has_metadir_fields(&self) -> bool {
        self.is_v5() && self.features_incompat & ((1 << 8) | (1 << 9)) != 0
    }

    /// The features in use, by name: the legacy version bits, `features2`,
    /// then the v5 feature words. Unknown bits are named as unknown.
    pub fn features(&self) -> Vec<String> {
        let mut out = bit_names(
            u32::from(self.versionnum & !VERSION_NUMBITS),
            VERSIONNUM_BITS,
            "VERSIONNUM",
        );
        if self.versionnum & 0x8000 != 0 || self.is_v5() {
            out.extend(bit_names(self.features2, FEATURES2_BITS, "FEATURES2"));
        }
        if self.is_v5() {
            out.extend(bit_names(self.features_compat, COMPAT_BITS, "COMPAT"));
            out.extend(bit_names(
                self.features_ro_compat,
                RO_COMPAT_BITS,
                "RO_COMPAT",
            ));
            out.extend(bit_names(self.features_incompat, INCOMPAT_BITS, "INCOMPAT"));
            out.extend(bit_names(
                self.features_log_incompat,
                LOG_INCOMPAT_BITS,
                "LOG_INCOMPAT",
            ));
        }
        out
    }

    /// Parse a superblock from the start of its sector. `sector` should hold
    /// the whole sector (`sb_sectsize` bytes) so the CRC can be checked; a
    /// shorter buffer (at least 304 bytes) parses but leaves the CRC unchecked.
    pub fn parse(sector: &[u8]) -> Result<Superblock> {
        let (d, _) = XfsDsb::ref_from_prefix(sector).map_err(|_| {
            Error::corrupt(
                "superblock",
                Location::Bytes {
                    offset: 0,
                    len: u64::try_from(sector.len()).unwrap_or(u64::MAX),
                },
                "shorter than the 304-byte superblock structure",
            )
        })?;
        let magic = d.sb_magicnum.get();
        if magic != XFS_SB_MAGIC {
            let found_text = magic
                .to_be_bytes()
                .iter()
                .map(|b| {
                    if b.is_ascii_graphic() || *b == b' ' {
                        char::from(*b).to_string()
                    } else {
                        format!("\\x{b:02x}")
                    }
                })
                .collect::<String>();
            // A log record header: the file is an external log device.
            let what = if magic == crate::xfs::format::log::XLOG_HEADER_MAGIC_NUM {
                ", a log record header: an external log device, opened beside its data device"
            } else {
                ""
            };
            return Err(Error::NotXfs {
                found: magic,
                found_text: format!("\"{found_text}\"{what}"),
            });
        }
        let mut sb = Superblock {
            magicnum: magic,
            blocksize: d.sb_blocksize.get(),
            dblocks: d.sb_dblocks.get(),
            rblocks: d.sb_rblocks.get(),
            rextents: d.sb_rextents.get(),
            uuid: d.sb_uuid,
            logstart: d.sb_logstart.get(),
            rootino: d.sb_rootino.get(),
            rbmino: d.sb_rbmino.get(),
            rsumino: d.sb_rsumino.get(),
            rextsize: d.sb_rextsize.get(),
            agblocks: d.sb_agblocks.get(),
            agcount: d.sb_agcount.get(),
            rbmblocks: d.sb_rbmblocks.get(),
            logblocks: d.sb_logblocks.get(),
            versionnum: d.sb_versionnum.get(),
            sectsize: d.sb_sectsize.get(),
            inodesize: d.sb_inodesize.get(),
            inopblock: d.sb_inopblock.get(),
            fname: d.sb_fname,
            blocklog: d.sb_blocklog,
            sectlog: d.sb_sectlog,
            inodelog: d.sb_inodelog,
            inopblog: d.sb_inopblog,
            agblklog: d.sb_agblklog,
            rextslog: d.sb_rextslog,
            inprogress: d.sb_inprogress,
            imax_pct: d.sb_imax_pct,
            icount: d.sb_icount.get(),
            ifree: d.sb_ifree.get(),
            fdblocks: d.sb_fdblocks.get(),
            frextents: d.sb_frextents.get(),
            uquotino: d.sb_uquotino.get(),
            gquotino: d.sb_gquotino.get(),
            qflags: d.sb_qflags.get(),
            flags: d.sb_flags,
            shared_vn: d.sb_shared_vn,
            inoalignmt: d.sb_inoalignmt.get(),
            unit: d.sb_unit.get(),
            width: d.sb_width.get(),
            dirblklog: d.sb_dirblklog,
            logsectlog: d.sb_logsectlog,
            logsectsize: d.sb_logsectsize.get(),
            logsunit: d.sb_logsunit.get(),
            features2: d.sb_features2.get(),
            bad_features2: d.sb_bad_features2.get(),
            features_compat: d.sb_features_compat.get(),
            features_ro_compat: d.sb_features_ro_compat.get(),
            features_incompat: d.sb_features_incompat.get(),
            features_log_incompat: d.sb_features_log_incompat.get(),
            crc: d.sb_crc.get(),
            spino_align: d.sb_spino_align.get(),
            pquotino: d.sb_pquotino.get(),
            lsn: d.sb_lsn.get(),
            meta_uuid: d.sb_meta_uuid,
            metadirino: d.sb_metadirino.get(),
            rgcount: d.sb_rgcount.get(),
            rgextents: d.sb_rgextents.get(),
            rgblklog: d.sb_rgblklog,
            rtstart: d.sb_rtstart.get(),
            rtreserved: d.sb_rtreserved.get(),
            computed_crc: None,
            problems: Vec::new(),
        };
        if sb.is_v5() {
            let want = usize::from(sb.sectsize);
            if (usize::from(MIN_SECTSIZE)..=usize::from(MAX_SECTSIZE)).contains(&want) {
                if let Some(bytes) = sector.get(..want) {
                    sb.computed_crc = Some(crc_with_hole(bytes, XFS_SB_CRC_OFF));
                }
            }
        }
        sb.problems = sb.check();
        Ok(sb)
    }

    /// Whether any problem forbids reading on.
    pub fn has_fatal(&self) -> bool {
        self.problems.iter().any(|p| p.severity == Severity::Fatal)
    }

    /// The validated geometry, or the first fatal problem as an error.
    pub fn geometry(&self) -> Result<Geometry> {
        if let Some(p) = self.problems.iter().find(|p| p.severity == Severity::Fatal) {
            return Err(Error::corrupt(
                "superblock",
                Location::Daddr { daddr: 0 },
                format!("sb_{}: {}", p.field, p.message),
            ));
        }
        Ok(Geometry {
            blocksize: self.blocksize,
            blocklog: self.blocklog,
            sectsize: self.sectsize,
            inodesize: self.inodesize,
            inopblog: self.inopblog,
            agblocks: self.agblocks,
            agblklog: self.agblklog,
            agcount: self.agcount,
            dblocks: self.dblocks,
            dirblklog: self.dirblklog,
            logstart: FsBlock(self.logstart),
            logblocks: self.logblocks,
            v5: self.is_v5(),
        })
    }
}

/// "4.0 MiB"-style sizes.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut unit = 0usize;
    let mut whole = n;
    let mut rem = 0u64;
    while whole >= 1024 && unit < UNITS.len().saturating_sub(1) {
        rem = whole % 1024;
        whole /= 1024;
        unit = unit.saturating_add(1);
    }
    let name = UNITS.get(unit).copied().unwrap_or("B");
    if unit == 0 {
        format!("{whole} {name}")
    } else {
        format!("{whole}.{} {name}", rem.saturating_mul(10) / 1024)
    }
}

/// CRC32c of `bytes` with the 4 bytes at `hole` taken as zero, as every v5
/// structure's checksum is computed.
pub fn crc_with_hole(bytes: &[u8], hole: usize) -> u32 {
    let before = bytes.get(..hole).unwrap_or(bytes);
    let after = hole
        .checked_add(4)
        .and_then(|h| bytes.get(h..))
        .unwrap_or(&[]);
    let c = crc32c::crc32c(before);
    let c = crc32c::crc32c_append(c, &[0u8; 4]);
    crc32c::crc32c_append(c, after)
}

/// The geometry the rest of the core reads with: only built from a
/// superblock without fatal problems.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Geometry {
    pub blocksize: u32,
    pub blocklog: u8,
    pub sectsize: u16,
    pub inodesize: u16,
    pub inopblog: u8,
    pub agblocks: u32,
    pub agblklog: u8,
    pub agcount: u32,
    pub dblocks: u64,
    pub dirblklog: u8,
    pub logstart: FsBlock,
    pub logblocks: u32,
    pub v5: bool,
}

impl Geometry {
    /// log2 of the inode size (checked against `sb_inodelog` when parsed).
    pub fn inodelog(&self) -> u8 {
        u8::try_from(self.inodesize.trailing_zeros()).unwrap_or(0)
    }

    /// Directory block size in bytes.
    pub fn dirblksize(&self) -> u32 {
        self.blocksize
            .checked_shl(u32::from(self.dirblklog))
            .unwrap_or(self.blocksize)
    }

    /// The inode number of AG inode `agino` of AG `agno`.
    pub fn agino_to_ino(&self, agno: AgNumber, agino: u32) -> u64 {
        let shift = u32::from(self.agblklog).saturating_add(u32::from(self.inopblog));
        u64::from(agno.0)
            .checked_shl(shift)
            .unwrap_or(0)
            .saturating_add(u64::from(agino))
    }

    /// Split a packed block number into AG and AG block.
    pub fn split_fsb(&self, fsb: FsBlock) -> (AgNumber, AgBlock) {
        let agno = fsb.0.checked_shr(u32::from(self.agblklog)).unwrap_or(0);
        let mask = 1u64
            .checked_shl(u32::from(self.agblklog))
            .unwrap_or(0)
            .saturating_sub(1);
        (
            AgNumber(u32::try_from(agno).unwrap_or(u32::MAX)),
            AgBlock(u32::try_from(fsb.0 & mask).unwrap_or(u32::MAX)),
        )
    }

    /// The daddr of an AG block, or `None` if it lies outside the filesystem.
    pub fn agb_to_daddr(&self, agno: AgNumber, agbno: AgBlock) -> Option<Daddr> {
        if agno.0 >= self.agcount || agbno.0 >= self.agblocks {
            return None;
        }
        let linear = u64::from(agno.0)
            .checked_mul(u64::from(self.agblocks))?
            .checked_add(u64::from(agbno.0))?;
        if linear >= self.dblocks {
            return None;
        }
        Some(Daddr(
            linear.checked_shl(u32::from(self.blocklog).checked_sub(9)?)?,
        ))
    }

    /// The daddr of a packed block number.
    pub fn fsb_to_daddr(&self, fsb: FsBlock) -> Option<Daddr> {
        let (agno, agbno) = self.split_fsb(fsb);
        self.agb_to_daddr(agno, agbno)
    }
}

/// Read and parse the primary superblock (sector 0) of an image.
pub fn read_superblock<R: ReadAt>(img: &Image<R>) -> Result<Superblock> {
    let head = img.read("superblock", 0, 512)?;
    // Parse once from the first 512 bytes to learn the sector size, then
    // reread the whole sector for the CRC when it is larger.
    let first = Superblock::parse(&head)?;
    let ss = u64::from(first.sectsize);
    if ss > 512
        && ss <= u64::from(MAX_SECTSIZE)
        && first.sectsize.is_power_of_two()
        && ss <= img.len()
    {
        let sector = img.read("superblock", 0, ss)?;
        return Superblock::parse(&sector);
    }
    Ok(first)
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;

    /// A superblock sector as mkfs.xfs (xfsprogs 6.1) writes it for a
    /// 64 MiB v5 filesystem: only the fields the tests look at are set.
    fn sample() -> Vec<u8> {
        let mut s = vec![0u8; 512];
        let put32 =
            |s: &mut Vec<u8>, o: usize, v: u32| s[o..o + 4].copy_from_slice(&v.to_be_bytes());
        let put64 =
            |s: &mut Vec<u8>, o: usize, v: u64| s[o..o + 8].copy_from_slice(&v.to_be_bytes());
        let put16 =
            |s: &mut Vec<u8>, o: usize, v: u16| s[o..o + 2].copy_from_slice(&v.to_be_bytes());
        put32(&mut s, 0, XFS_SB_MAGIC);
        put32(&mut s, 4, 4096);
        put64(&mut s, 8, 16384);
        put64(&mut s, 48, 8196);
        put64(&mut s, 56, 128);
        put32(&mut s, 84, 4096);
        put32(&mut s, 88, 4);
        put32(&mut s, 96, 1368);
        put16(&mut s, 100, 0xb4a5);
        put16(&mut s, 102, 512);
        put16(&mut s, 104, 512);
        put16(&mut s, 106, 8);
        s[108..114].copy_from_slice(b"sample");
        s[120] = 12;
        s[121] = 9;
        s[122] = 9;
        s[123] = 3;
        s[124] = 12;
        put32(&mut s, 200, 0x18a);
        put32(&mut s, 204, 0x18a);
        put32(&mut s, 212, 0b1111);
        put32(&mut s, 216, 0b10_1011);
        let crc = crc_with_hole(&s, XFS_SB_CRC_OFF);
        s[224..228].copy_from_slice(&crc.to_le_bytes());
        s
    }

    #[test]
    fn crc32c_check_vector() {
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn parses_and_validates_a_good_superblock() {
        let sb = Superblock::parse(&sample()).unwrap();
        assert_eq!(sb.blocksize, 4096);
        assert_eq!(sb.crc_ok(), Some(true));
        assert!(sb.problems.is_empty(), "{:?}", sb.problems);
        assert_eq!(label_text(&sb.fname), "sample");
        let g = sb.geometry().unwrap();
        // logstart 8196 with agblklog 12: AG 2, block 4 -> linear 8196 -> daddr 65568
        assert_eq!(g.fsb_to_daddr(FsBlock(8196)), Some(Daddr(65568)));
        let names = sb.features();
        for want in [
            "NLINK", "ALIGN", "DIRV2", "LOGV2", "EXTFLG", "MOREBITS", "ATTR2", "CRC", "FINOBT",
            "REFLINK", "BIGTIME", "NREXT64",
        ] {
            assert!(
                names.iter().any(|n| n == want),
                "{want} missing from {names:?}"
            );
        }
    }

    #[test]
    fn bad_magic_says_not_xfs() {
        let mut s = sample();
        s[0..4].copy_from_slice(b"\x7fELF");
        let e = Superblock::parse(&s).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("not an XFS filesystem: magic is 0x7f454c46"),
            "{msg}"
        );
    }

    #[test]
    fn a_flipped_byte_fails_the_crc_but_still_parses() {
        let mut s = sample();
        s[300] ^= 1;
        let sb = Superblock::parse(&s).unwrap();
        assert_eq!(sb.crc_ok(), Some(false));
        assert!(!sb.has_fatal());
        assert!(sb.problems.iter().any(|p| p.field == "crc"));
    }

    #[test]
    fn unknown_feature_bits_are_named_not_rejected() {
        let mut s = sample();
        s[216..220].copy_from_slice(&0x8000_0001u32.to_be_bytes());
        let sb = Superblock::parse(&s).unwrap();
        let f = sb.features();
        assert!(f.contains(&"FTYPE".to_string()));
        assert!(
            f.contains(&"INCOMPAT_UNKNOWN_0x80000000".to_string()),
            "{f:?}"
        );
        assert!(!sb.has_fatal());
    }

    #[test]
    fn corrupt_geometry_is_fatal_with_the_field_named() {
        for (off, bytes, field) in [
            (4usize, 3000u32.to_be_bytes().to_vec(), "blocksize"),
            (84, 10u32.to_be_bytes().to_vec(), "agblocks"),
            (88, 0u32.to_be_bytes().to_vec(), "agcount"),
            (124, vec![13u8], "agblklog"),
            (8, u64::MAX.to_be_bytes().to_vec(), "dblocks"),
            (192, vec![200u8], "dirblklog"),
            (102, 100u16.to_be_bytes().to_vec(), "sectsize"),
        ] {
            let mut s = sample();
            s[off..off + bytes.len()].copy_from_slice(&bytes);
            let sb = Superblock::parse(&s).unwrap();
            assert!(sb.has_fatal(), "{field}");
            let err = sb.geometry().unwrap_err().to_string();
            assert!(err.contains(&format!("sb_{field}")), "{field}: {err}");
        }
    }

    #[test]
    fn every_byte_flip_parses_without_panic() {
        let base = sample();
        for i in 0..base.len() {
            for bit in [0x01u8, 0x80, 0xff] {
                let mut s = base.clone();
                s[i] ^= bit;
                if let Ok(sb) = Superblock::parse(&s) {
                    let _ = sb.fields();
                    let _ = sb.features();
                    if let Ok(g) = sb.geometry() {
                        let _ = g.fsb_to_daddr(FsBlock(u64::MAX));
                    }
                }
            }
        }
    }

    #[test]
    fn short_input_is_an_error() {
        assert!(Superblock::parse(&sample()[..100]).is_err());
    }

    #[test]
    fn helpers() {
        assert_eq!(log2_roundup(4096), 12);
        assert_eq!(log2_roundup(4097), 13);
        assert_eq!(log2_roundup(16000), 14);
        assert_eq!(
            uuid_text(&[0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8]),
            "12345678-9abc-def0-0102-030405060708"
        );
        assert_eq!(human_bytes(1536), "1.5 KiB");
    }
}

/// Everything the UI and the CLI show of a superblock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SuperblockView {
    /// 4 or 5 (or whatever the image says).
    pub version: u16,
    pub fields: Vec<FieldView>,
    pub features: Vec<String>,
    pub crc_ok: Option<bool>,
    pub problems: Vec<ProblemView>,
}

/// A field as sent to the UI (owned strings, so it can cross the worker
/// boundary).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct FieldView {
    pub name: String,
    /// The value: decimal for numbers, canonical text for UUIDs and labels.
    pub value: String,
    pub is_number: bool,
    pub offset: u16,
    pub size: u16,
    pub meaning: String,
    pub note: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ProblemView {
    pub fatal: bool,
    pub field: String,
    pub message: String,
}

impl Superblock {
    pub fn view(&self) -> SuperblockView {
        SuperblockView {
            version: self.version(),
            fields: self
                .fields()
                .into_iter()
                .map(|f| FieldView {
                    name: f.name.to_string(),
                    is_number: matches!(f.value, FieldValue::Num(_)),
                    value: f.value.to_string(),
                    offset: f.offset,
                    size: f.size,
                    meaning: f.meaning.to_string(),
                    note: f.note,
                })
                .collect(),
            features: self.features(),
            crc_ok: self.crc_ok(),
            problems: self
                .problems
                .iter()
                .map(|p| ProblemView {
                    fatal: p.severity == Severity::Fatal,
                    field: p.field.to_string(),
                    message: p.message.clone(),
                })
                .collect(),
        }
    }
}
