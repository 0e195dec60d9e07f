//! Where the metadata of an image is: every sector is looked at for the
//! magic numbers of XFS structures (superblocks, AG headers, btree blocks,
//! inodes, directory and attr blocks, remote values, log records). Used
//! by the mutation run and the fuzz targets to aim their damage, and to
//! make CRCs good again after it so that the damage is decoded.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::sync::Arc;
use xfs_explorer::xfs::log::record::{record_crc, unpack};
use xfs_explorer::xfs::sb::crc_with_hole;

/// Store the CRC32c of `b` (its CRC field taken as zero) at `crc_off`.
pub fn fix_crc(b: &mut [u8], crc_off: usize) {
    if crc_off + 4 <= b.len() {
        let c = crc_with_hole(b, crc_off);
        b[crc_off..crc_off + 4].copy_from_slice(&c.to_le_bytes());
    }
}

/// Header sectors and data bytes of the log record whose header starts
/// `rec`, from its `h_version`, `h_size` and `h_len`.
pub fn record_span(rec: &[u8]) -> Option<(usize, usize)> {
    if rec.len() < 512 {
        return None;
    }
    let version = be32(rec, 8);
    let size = be32(rec, 320);
    let hblks = if version & 2 != 0 && size > 32768 {
        size.div_ceil(32768).min(8)
    } else {
        1
    } as usize;
    let h_len = (be32(rec, 12) as usize).min(256 << 10);
    Some((hblks * 512, h_len))
}

/// Make the CRC of the log record at the start of `rec` good again (when
/// it had one), over the bytes `rec` holds of it.
pub fn fix_record_crc(rec: &mut [u8]) {
    let Some((hdr_len, h_len)) = record_span(rec) else {
        return;
    };
    if hdr_len > rec.len() || rec[32..36] == [0; 4] {
        return;
    }
    let end = (hdr_len + h_len.div_ceil(512) * 512).min(rec.len());
    let mut data = rec[hdr_len..end].to_vec();
    unpack(&rec[..hdr_len], &mut data);
    let c = record_crc(&rec[..hdr_len], &data, be32(rec, 12), 328);
    rec[32..36].copy_from_slice(&c.to_le_bytes());
}

// ---------------------------------------------------------------------------
// Where the metadata is: every sector of the image is looked at for the
// magic numbers of XFS structures.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Superblock,
    AgHeader,
    /// Short-form btree block (free space, inode, rmap, refcount).
    ShortBtree,
    /// Long-form btree block (bmbt).
    LongBtree,
    Inode,
    /// Directory data/block/free block (`XDB3`, `XDD3`, `XDF3`, v4 forms).
    DirData,
    /// Blocks with a da blkinfo: da nodes, dir leaves, attr leaves.
    DaBlock,
    /// Remote attr values and remote symlink blocks.
    Remote,
    LogRecord,
}

pub const KINDS: [Kind; 9] = [
    Kind::Superblock,
    Kind::AgHeader,
    Kind::ShortBtree,
    Kind::LongBtree,
    Kind::Inode,
    Kind::DirData,
    Kind::DaBlock,
    Kind::Remote,
    Kind::LogRecord,
];

#[derive(Clone, Debug)]
pub struct Site {
    pub off: u64,
    pub len: usize,
    pub kind: Kind,
    /// The CRC's offset, when the structure carries one that matched.
    pub crc_off: Option<usize>,
    pub what: &'static str,
}

pub struct Fixture {
    pub base: Arc<Vec<u8>>,
    pub sites: Vec<Site>,
    pub by_kind: Vec<(Kind, Vec<usize>)>,
    pub blocksize: u64,
    pub agblocks: u64,
    pub agblklog: u32,
}

pub fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes(b[o..o + 2].try_into().unwrap())
}
pub fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes(b[o..o + 4].try_into().unwrap())
}
pub fn be64(b: &[u8], o: usize) -> u64 {
    u64::from_be_bytes(b[o..o + 8].try_into().unwrap())
}

pub fn crc_ok(b: &[u8], off: u64, len: usize, crc_off: usize) -> bool {
    let (s, e) = (off as usize, off as usize + len);
    if e > b.len() || crc_off + 4 > len {
        return false;
    }
    let blk = &b[s..e];
    let stored = u32::from_le_bytes(blk[crc_off..crc_off + 4].try_into().unwrap());
    stored != 0 && crc_with_hole(blk, crc_off) == stored
}

impl Fixture {
    pub fn from_bytes(base: Vec<u8>) -> Fixture {
        // Geometry from the first primary superblock found (containers
        // hold it somewhere inside).
        let mut sbo = None;
        for o in (0..base.len().saturating_sub(512)).step_by(512) {
            if &base[o..o + 4] == b"XFSB" {
                sbo = Some(o);
                break;
            }
        }
        let sbo = sbo.unwrap_or(0);
        let sb = &base[sbo..sbo + 512.min(base.len() - sbo)];
        let g32 = |o: usize| if sb.len() >= o + 4 { be32(sb, o) } else { 0 };
        let g16 = |o: usize| if sb.len() >= o + 2 { be16(sb, o) } else { 0 };
        let g8 = |o: usize| sb.get(o).copied().unwrap_or(0);
        let blocksize = u64::from(g32(4)).clamp(512, 65536);
        let sectsize = u64::from(g16(102)).clamp(512, 32768);
        let inodesize = u64::from(g16(104)).clamp(256, 2048);
        let agblocks = u64::from(g32(84)).max(1);
        let agblklog = u32::from(g8(124));
        let dirblksize = blocksize << u32::from(g8(192)).min(6);
        let v5 = g16(100) & 0xf == 5;
        let mut sites = Vec::new();
        let mut push = |off: usize, len: u64, kind: Kind, crc: Option<usize>, what| {
            let len = len as usize;
            let crc_off = crc.filter(|c| crc_ok(&base, off as u64, len, *c));
            sites.push(Site {
                off: off as u64,
                len: len.min(base.len() - off),
                kind,
                crc_off,
                what,
            });
        };
        for o in (0..base.len().saturating_sub(512)).step_by(256) {
            if be16(&base, o) == 0x494e && (1..=3).contains(&base[o + 4]) {
                let v3 = base[o + 4] == 3;
                push(o, inodesize, Kind::Inode, v3.then_some(100), "inode");
                continue;
            }
            if o % 512 != 0 {
                continue;
            }
            let m = &base[o..o + 4];
            let short = |m: &[u8]| {
                matches!(
                    m,
                    b"AB3B"
                        | b"AB3C"
                        | b"IAB3"
                        | b"FIB3"
                        | b"RMB3"
                        | b"R3FC"
                        | b"ABTB"
                        | b"ABTC"
                        | b"IABT"
                        | b"FIBT"
                )
            };
            match m {
                b"XFSB" => push(o, sectsize, Kind::Superblock, Some(224), "superblock"),
                b"XAGF" => push(o, sectsize, Kind::AgHeader, Some(216), "AGF"),
                b"XAGI" => push(o, sectsize, Kind::AgHeader, Some(312), "AGI"),
                b"XAFL" => push(o, sectsize, Kind::AgHeader, Some(32), "AGFL"),
                m if short(m) => push(o, blocksize, Kind::ShortBtree, Some(52), "AG btree block"),
                b"BMA3" | b"BMAP" => push(o, blocksize, Kind::LongBtree, Some(64), "bmbt block"),
                b"XDB3" | b"XDD3" | b"XDF3" | b"XD2B" | b"XD2D" | b"XD2F" => {
                    push(o, dirblksize, Kind::DirData, Some(4), "directory block")
                }
                b"XARM" => push(o, blocksize, Kind::Remote, Some(12), "remote attr value"),
                b"XSLM" => push(o, blocksize, Kind::Remote, Some(12), "remote symlink"),
                [0xfe, 0xed, 0xba, 0xbe] => push(o, 512, Kind::LogRecord, None, "log record"),
                _ => {
                    let m16 = be16(&base, o + 8);
                    let (len, what) = match m16 {
                        0x3df1 | 0x3dff | 0xd2f1 | 0xd2ff => (dirblksize, "directory leaf"),
                        0x3bee | 0xfbee => (blocksize, "attr leaf"),
                        0x3ebe | 0xfebe => {
                            // A dir or attr node: the size whose CRC matches.
                            if v5 && crc_ok(&base, o as u64, dirblksize as usize, 12) {
                                (dirblksize, "da node")
                            } else {
                                (blocksize, "da node")
                            }
                        }
                        _ => continue,
                    };
                    push(o, len, Kind::DaBlock, Some(12), what);
                }
            }
        }
        // Log records: the ones with transactions in them (mkfs fills the
        // rest of the log with empty ones), and a few others.
        let mut others = 0;
        sites.retain(|s| {
            s.kind != Kind::LogRecord || be32(&base, s.off as usize + 40) > 1 || {
                others += 1;
                others % 64 == 1
            }
        });
        let by_kind = KINDS
            .iter()
            .map(|k| {
                (
                    *k,
                    sites
                        .iter()
                        .enumerate()
                        .filter(|(_, s)| s.kind == *k)
                        .map(|(i, _)| i)
                        .collect::<Vec<_>>(),
                )
            })
            .filter(|(_, v)| !v.is_empty())
            .collect();
        Fixture {
            base: Arc::new(base),
            sites,
            by_kind,
            blocksize,
            agblocks,
            agblklog,
        }
    }

    pub fn bytes(&self, s: &Site) -> Vec<u8> {
        self.base[s.off as usize..s.off as usize + s.len].to_vec()
    }

    /// The AG block number of a block, from its v5 header's daddr (or
    /// its offset in a plain image).
    pub fn own_agbno(&self, s: &Site, b: &[u8], blkno_off: usize) -> u64 {
        let daddr = if b.len() >= blkno_off + 8 && be64(b, blkno_off) != 0 {
            be64(b, blkno_off)
        } else {
            s.off / 512
        };
        (daddr * 512 / self.blocksize) % self.agblocks
    }
}
