//! Metadumps (`xfs_metadump`), read in place: the sectors the dump holds
//! are indexed once (a scan of the file's index blocks or extent headers,
//! read in large pieces) and the filesystem is a sparse view of them, as
//! `xfs_mdrestore` would write it: what the dump does not hold (file
//! contents, free space) reads as zeros.
//!
//! Version 1 (`XFSM`): blocks of `1 << mb_blocklog` bytes; each index
//! block holds a header and up to `(block_size - 8) / 8` disk addresses
//! (512-byte units), followed by that many blocks; the last index block
//! holds fewer, or none. Version 2 (`XMD2`): a 24-byte header, then extents:
//! an address (device in bits 54-55, daddr below) and a length in sectors,
//! followed by the sectors. Device 0 is the data device; device 1 an
//! external log device (`xfs_metadump -l`), read as a second view
//! ([`Metadump::read_log_at`]) of `sb_logblocks` blocks; device 2 the
//! realtime device, whose extents are not read.

use super::bytes::{be16, be32, be64, byte, to_u64};
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::sb::{XfsDsb, XFS_SB_MAGIC};
use crate::xfs::read::{ReadAt, ReadError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const MAGIC_V1: u32 = 0x5846_534d; // "XFSM"
pub const MAGIC_V2: u32 = 0x584d_4432; // "XMD2"

const V1_INFO_FLAGS: u8 = 1;
const V1_OBFUSCATED: u8 = 1 << 1;
const V1_FULLBLOCKS: u8 = 1 << 2;
const V1_DIRTYLOG: u8 = 1 << 3;

const V2_OBFUSCATED: u32 = 1;
const V2_FULLBLOCKS: u32 = 1 << 1;
const V2_DIRTYLOG: u32 = 1 << 2;
const V2_EXTERNALLOG: u32 = 1 << 3;
const V2_INCOMPAT_RTDEVICE: u32 = 1;

const DEVICE_SHIFT: u32 = 54;
const DADDR_MASK: u64 = (1 << DEVICE_SHIFT) - 1;

/// Separate runs of sectors indexed at most (a real dump's runs are
/// fewer: metadata is dumped extent by extent).
const MAX_RUNS: usize = 4 << 20;
/// Bytes of the superblock read for the geometry (up to sb_logblocks).
const SB_READ: usize = 128;
/// The file is scanned in pieces of this size.
const SCAN_PIECE: u64 = 1 << 20;

/// What the dump's header says, for people.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct MetadumpInfo {
    /// 1 (`XFSM`) or 2 (`XMD2`).
    pub version: u32,
    /// Names and attribute values replaced by xfs_metadump (unless `-o`).
    pub obfuscated: Option<bool>,
    /// The log was dirty when dumped.
    pub dirty_log: Option<bool>,
    /// Metadata blocks dumped whole (`-a`), not with their unused parts
    /// zeroed.
    pub full_blocks: Option<bool>,
    /// Bytes of the filesystem the dump holds.
    pub bytes_held: u64,
    /// Bytes of an external log device the dump holds (version 2 with
    /// `-l`; 0 otherwise).
    #[serde(default)]
    pub log_bytes_held: u64,
    /// The filesystem's size (sb_dblocks * sb_blocksize).
    pub fs_size: u64,
    /// The size of the dump file.
    pub file_size: u64,
    pub notes: Vec<String>,
}

/// A metadump opened in place: a [`ReadAt`] of the filesystem it holds.
pub struct Metadump<V: ReadAt> {
    inner: V,
    info: MetadumpInfo,
    /// Byte offset in the filesystem -> (length, byte offset in the file).
    runs: BTreeMap<u64, (u64, u64)>,
    /// The same for the external log device, and its size (0: no
    /// external log in the dump).
    log_runs: BTreeMap<u64, (u64, u64)>,
    log_size: u64,
}

/// Whether `head` starts with a metadump magic.
pub fn is_metadump(head: &[u8]) -> bool {
    head.len() >= 4 && matches!(be32(head, 0), MAGIC_V1 | MAGIC_V2)
}

fn corrupt(offset: u64, detail: impl Into<String>) -> Error {
    Error::corrupt("metadump", Location::Bytes { offset, len: 8 }, detail)
}

/// Sequential reads of the dump file through a window of [`SCAN_PIECE`].
struct Scan<'a, V: ReadAt> {
    inner: &'a V,
    len: u64,
    at: u64,
    buf: Vec<u8>,
}

impl<V: ReadAt> Scan<'_, V> {
    /// `n` bytes at file offset `pos` (n at most a few KiB).
    fn get(&mut self, pos: u64, n: usize) -> Result<&[u8]> {
        let n64 = to_u64(n);
        let end = pos
            .checked_add(n64)
            .ok_or_else(|| corrupt(pos, "offset overflows"))?;
        if end > self.len {
            return Err(Error::OutOfBounds {
                structure: "metadump",
                offset: pos,
                len: n64,
                image_len: self.len,
            });
        }
        let have_end = self.at.saturating_add(to_u64(self.buf.len()));
        if pos < self.at || end > have_end {
            let want = SCAN_PIECE.max(n64).min(self.len.saturating_sub(pos));
            let size = usize::try_from(want).map_err(|_| corrupt(pos, "piece too large"))?;
            self.buf.resize(size, 0);
            self.inner
                .read_exact_at(pos, &mut self.buf)
                .map_err(|e| Error::Io {
                    offset: pos,
                    len: want,
                    message: e.0,
                })?;
            self.at = pos;
        }
        let lo = usize::try_from(pos.saturating_sub(self.at)).unwrap_or(usize::MAX);
        let hi = lo.saturating_add(n);
        self.buf
            .get(lo..hi)
            .ok_or_else(|| corrupt(pos, "scan window"))
    }
}

/// The runs being built: a later copy of a range replaces an earlier one
/// (as xfs_mdrestore's later writes do).
#[derive(Default)]
struct Runs {
    map: BTreeMap<u64, (u64, u64)>,
}

impl Runs {
    fn add(&mut self, start: u64, len: u64, file: u64) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let end = start.saturating_add(len);
        // Cut what overlaps [start, end).
        let mut cut: Vec<u64> = Vec::new();
        if let Some((&s, &(l, _))) = self.map.range(..start).next_back() {
            if s.saturating_add(l) > start {
                cut.push(s);
            }
        }
        cut.extend(self.map.range(start..end).map(|(s, _)| *s));
        for s in cut {
            if let Some((l, f)) = self.map.remove(&s) {
                let e = s.saturating_add(l);
                if s < start {
                    self.map.insert(s, (start.saturating_sub(s), f));
                }
                if e > end {
                    let skip = end.saturating_sub(s);
                    self.map
                        .insert(end, (e.saturating_sub(end), f.saturating_add(skip)));
                }
            }
        }
        // Join the run before when both the filesystem and the file run on.
        if let Some((&s, &(l, f))) = self.map.range(..start).next_back() {
            if s.saturating_add(l) == start && f.saturating_add(l) == file {
                self.map.insert(s, (l.saturating_add(len), f));
                return self.check();
            }
        }
        self.map.insert(start, (len, file));
        self.check()
    }

    fn check(&self) -> Result<()> {
        if self.map.len() > MAX_RUNS {
            return Err(Error::Unsupported {
                structure: "metadump",
                location: Location::Bytes { offset: 0, len: 4 },
                detail: format!("the dump holds more than {MAX_RUNS} separate runs of sectors"),
            });
        }
        Ok(())
    }
}

impl<V: ReadAt> Metadump<V> {
    /// Index the dump in `inner`.
    pub fn open(inner: V) -> Result<Self> {
        let len = inner.len();
        let mut scan = Scan {
            inner: &inner,
            len,
            at: 0,
            buf: Vec::new(),
        };
        let head = scan
            .get(0, 24.min(usize::try_from(len).unwrap_or(0)))?
            .to_vec();
        let mut notes = Vec::new();
        let mut runs = Runs::default();
        let mut log_runs = Runs::default();
        let info = match be32(&head, 0) {
            MAGIC_V1 => Self::index_v1(&mut scan, &head, &mut runs)?,
            MAGIC_V2 => Self::index_v2(&mut scan, &head, [&mut runs, &mut log_runs], &mut notes)?,
            m => return Err(corrupt(0, format!("magic {m:#010x} is not a metadump's"))),
        };
        drop(scan);
        // The filesystem's size, from the superblock the dump starts with.
        let sb = runs.map.get(&0).copied().ok_or_else(|| {
            corrupt(
                0,
                "the dump does not start with the primary superblock (daddr 0)",
            )
        })?;
        let mut s = [0u8; SB_READ];
        if sb.0 < to_u64(SB_READ) {
            return Err(corrupt(sb.1, "the superblock's block is too short"));
        }
        inner.read_exact_at(sb.1, &mut s).map_err(|e| Error::Io {
            offset: sb.1,
            len: to_u64(SB_READ),
            message: e.0,
        })?;
        let magic = be32(&s, core::mem::offset_of!(XfsDsb, sb_magicnum));
        if magic != XFS_SB_MAGIC {
            return Err(corrupt(
                sb.1,
                format!("the first block is not an XFS superblock (magic {magic:#010x})"),
            ));
        }
        let blocksize = be32(&s, core::mem::offset_of!(XfsDsb, sb_blocksize));
        let dblocks = be64(&s, core::mem::offset_of!(XfsDsb, sb_dblocks));
        if !(512..=65536).contains(&blocksize) || !blocksize.is_power_of_two() {
            return Err(corrupt(
                sb.1,
                format!("the superblock's sb_blocksize is {blocksize}"),
            ));
        }
        let fs_size = dblocks
            .checked_mul(u64::from(blocksize))
            .ok_or_else(|| corrupt(sb.1, format!("sb_dblocks {dblocks} overflows")))?;
        // An external log (sb_logstart 0) is sb_logblocks blocks at the
        // start of its device.
        let logstart = be64(&s, core::mem::offset_of!(XfsDsb, sb_logstart));
        let logblocks = be32(&s, core::mem::offset_of!(XfsDsb, sb_logblocks));
        let log_held: u64 = log_runs
            .map
            .values()
            .map(|(l, _)| *l)
            .fold(0u64, u64::saturating_add);
        let log_size = match (logstart, log_held) {
            (0, 0) => {
                notes.push(
                    "the filesystem's log is on an external device, which the dump does not hold (xfs_metadump -v 2 -l LOGDEV dumps it)"
                        .to_string(),
                );
                0
            }
            (0, _) => u64::from(logblocks).saturating_mul(u64::from(blocksize)),
            (_, 0) => 0,
            (_, n) => {
                notes.push(format!(
                    "the dump holds {n} bytes of a log device, but the filesystem's log is internal (sb_logstart {logstart}); they are not read"
                ));
                0
            }
        };
        let held: u64 = runs
            .map
            .values()
            .map(|(l, _)| *l)
            .fold(0u64, u64::saturating_add);
        let beyond = runs
            .map
            .iter()
            .next_back()
            .map(|(s, (l, _))| s.saturating_add(*l))
            .unwrap_or(0);
        if beyond > fs_size {
            notes.push(format!(
                "the dump holds bytes up to {beyond}, past the filesystem's end ({fs_size}); they are not read"
            ));
        }
        notes.push(
            "a metadump holds metadata only: file contents and free space read as zeros, as xfs_mdrestore writes them"
                .to_string(),
        );
        let mut info = info;
        info.bytes_held = held;
        info.log_bytes_held = if log_size > 0 { log_held } else { 0 };
        info.fs_size = fs_size;
        info.file_size = len;
        info.notes.extend(notes);
        Ok(Metadump {
            inner,
            info,
            runs: runs.map,
            log_runs: if log_size > 0 {
                log_runs.map
            } else {
                BTreeMap::new()
            },
            log_size,
        })
    }

    fn index_v1(scan: &mut Scan<'_, V>, head: &[u8], runs: &mut Runs) -> Result<MetadumpInfo> {
        let blocklog = byte(head, 6);
        let flags = byte(head, 7);
        if !(9..=16).contains(&blocklog) {
            return Err(corrupt(6, format!("mb_blocklog is {blocklog} (9 to 16)")));
        }
        let block = 1u64 << blocklog;
        let block_n = usize::try_from(block).unwrap_or(512);
        let max_indices = (block_n.saturating_sub(8)) / 8;
        let mut pos = 0u64;
        let mut first = true;
        loop {
            if pos >= scan.len {
                break;
            }
            let hdr = scan.get(pos, block_n)?.to_vec();
            if be32(&hdr, 0) != MAGIC_V1 {
                return Err(corrupt(
                    pos,
                    format!(
                        "index block magic is {:#010x}, expected \"XFSM\"",
                        be32(&hdr, 0)
                    ),
                ));
            }
            let count = usize::from(be16(&hdr, 4));
            if count > max_indices || (first && count == 0) {
                return Err(corrupt(
                    pos,
                    format!("mb_count is {count} (at most {max_indices})"),
                ));
            }
            if count == 0 {
                break;
            }
            let data = pos.saturating_add(block);
            for i in 0..count {
                let daddr = be64(&hdr, 8usize.saturating_add(i.saturating_mul(8)));
                if first && i == 0 && daddr != 0 {
                    return Err(corrupt(
                        pos.saturating_add(8),
                        "the first block is not the primary superblock (daddr 0)",
                    ));
                }
                let at = daddr
                    .checked_mul(512)
                    .ok_or_else(|| corrupt(pos, format!("daddr {daddr} is past any disk")))?;
                let file = data.saturating_add(to_u64(i).saturating_mul(block));
                if file.saturating_add(block) > scan.len {
                    return Err(Error::OutOfBounds {
                        structure: "metadump block",
                        offset: file,
                        len: block,
                        image_len: scan.len,
                    });
                }
                runs.add(at, block, file)?;
            }
            first = false;
            pos = data.saturating_add(to_u64(count).saturating_mul(block));
            if count < max_indices {
                break;
            }
        }
        let known = flags & V1_INFO_FLAGS != 0;
        Ok(MetadumpInfo {
            version: 1,
            obfuscated: known.then_some(flags & V1_OBFUSCATED != 0),
            dirty_log: known.then_some(flags & V1_DIRTYLOG != 0),
            full_blocks: known.then_some(flags & V1_FULLBLOCKS != 0),
            bytes_held: 0,
            log_bytes_held: 0,
            fs_size: 0,
            file_size: 0,
            notes: Vec::new(),
        })
    }

    fn index_v2(
        scan: &mut Scan<'_, V>,
        head: &[u8],
        [runs, log_runs]: [&mut Runs; 2],
        notes: &mut Vec<String>,
    ) -> Result<MetadumpInfo> {
        if head.len() < 24 {
            return Err(corrupt(
                0,
                "the file is shorter than a version 2 header (24 bytes)",
            ));
        }
        let version = be32(head, 4);
        if version != 2 {
            return Err(corrupt(4, format!("xmh_version is {version}, expected 2")));
        }
        let compat = be32(head, 8);
        let incompat = be32(head, 12);
        if incompat & !V2_INCOMPAT_RTDEVICE != 0 {
            return Err(Error::Unsupported {
                structure: "metadump header",
                location: Location::Bytes { offset: 12, len: 4 },
                detail: format!("unknown incompatible flags {incompat:#x}"),
            });
        }
        if incompat & V2_INCOMPAT_RTDEVICE != 0 {
            notes.push("the dump holds realtime device contents, which are not shown".into());
        }
        let mut pos = 24u64;
        let mut first = true;
        let mut skipped = 0u64;
        while pos < scan.len {
            let h = scan.get(pos, 12)?.to_vec();
            let addr = be64(&h, 0);
            let sectors = u64::from(be32(&h, 8));
            let data = pos.saturating_add(12);
            let bytes = sectors.saturating_mul(512);
            if data.checked_add(bytes).is_none_or(|e| e > scan.len) {
                return Err(Error::OutOfBounds {
                    structure: "metadump extent",
                    offset: data,
                    len: bytes,
                    image_len: scan.len,
                });
            }
            if first && (addr != 0 || sectors == 0) {
                return Err(corrupt(
                    pos,
                    format!("the first extent is at {addr:#x}, not the primary superblock (0)"),
                ));
            }
            match addr >> DEVICE_SHIFT {
                0 => runs.add((addr & DADDR_MASK).saturating_mul(512), bytes, data)?,
                1 if compat & V2_EXTERNALLOG != 0 => {
                    log_runs.add((addr & DADDR_MASK).saturating_mul(512), bytes, data)?
                }
                1 => {
                    return Err(corrupt(
                        pos,
                        "an extent of the log device in a dump whose header says it holds no external log",
                    ))
                }
                2 => skipped = skipped.saturating_add(bytes),
                d => return Err(corrupt(pos, format!("extent of unknown device {d}"))),
            }
            first = false;
            pos = data.saturating_add(bytes);
        }
        if skipped > 0 {
            notes.push(format!(
                "{skipped} bytes of realtime device extents are not read"
            ));
        }
        log_runs.check()?;
        Ok(MetadumpInfo {
            version: 2,
            obfuscated: Some(compat & V2_OBFUSCATED != 0),
            dirty_log: Some(compat & V2_DIRTYLOG != 0),
            full_blocks: Some(compat & V2_FULLBLOCKS != 0),
            bytes_held: 0,
            log_bytes_held: 0,
            fs_size: 0,
            file_size: 0,
            notes: Vec::new(),
        })
    }

    pub fn info(&self) -> &MetadumpInfo {
        &self.info
    }

    /// Whether every byte of `offset..offset + len` is held by the dump.
    pub fn holds(&self, offset: u64, len: u64) -> bool {
        let end = offset.saturating_add(len);
        let mut pos = offset;
        while pos < end {
            match self.runs.range(..=pos).next_back() {
                Some((&s, &(l, _))) if s.saturating_add(l) > pos => pos = s.saturating_add(l),
                _ => return false,
            }
        }
        true
    }
}

impl<V: ReadAt> Metadump<V> {
    /// Bytes of the external log device the dump holds (0: none).
    pub fn log_len(&self) -> u64 {
        self.log_size
    }

    /// Read the external log device: what the dump holds, zeros elsewhere
    /// (as `xfs_mdrestore -l` writes it).
    pub fn read_log_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        self.read_runs(&self.log_runs, self.log_size, "the log device", offset, buf)
    }

    fn read_runs(
        &self,
        runs: &BTreeMap<u64, (u64, u64)>,
        size: u64,
        what: &str,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), ReadError> {
        let want = to_u64(buf.len());
        if offset.checked_add(want).is_none_or(|e| e > size) {
            return Err(ReadError(format!(
                "metadump: bytes {offset}+{want} lie beyond {what} ({size} bytes)"
            )));
        }
        let mut done = 0usize;
        while done < buf.len() {
            let pos = offset.saturating_add(to_u64(done));
            let left = want.saturating_sub(to_u64(done));
            let (n, from) = match runs.range(..=pos).next_back() {
                Some((&s, &(l, f))) if s.saturating_add(l) > pos => {
                    let within = pos.saturating_sub(s);
                    (
                        l.saturating_sub(within).min(left),
                        Some(f.saturating_add(within)),
                    )
                }
                _ => {
                    let next = self
                        .runs
                        .range(pos.saturating_add(1)..)
                        .next()
                        .map_or(u64::MAX, |(s, _)| *s);
                    (next.saturating_sub(pos).min(left), None)
                }
            };
            let n = usize::try_from(n).unwrap_or(usize::MAX).max(1);
            let end = done.saturating_add(n).min(buf.len());
            let dst = buf
                .get_mut(done..end)
                .ok_or_else(|| ReadError("metadump: bad range".into()))?;
            match from {
                Some(f) => self.inner.read_exact_at(f, dst)?,
                None => dst.fill(0),
            }
            done = end;
        }
        Ok(())
    }
}

impl<V: ReadAt> ReadAt for Metadump<V> {
    fn len(&self) -> u64 {
        self.info.fs_size
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        self.read_runs(&self.runs, self.info.fs_size, "the filesystem", offset, buf)
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::cast_possible_truncation,
    clippy::panic
)]
mod tests {
    use super::*;

    fn sb_block(dblocks: u64) -> Vec<u8> {
        let mut b = vec![0u8; 512];
        b[0..4].copy_from_slice(b"XFSB");
        b[4..8].copy_from_slice(&4096u32.to_be_bytes());
        b[8..16].copy_from_slice(&dblocks.to_be_bytes());
        b
    }

    /// A v1 dump of `blocks` (daddr, 512 bytes), in index blocks of 63.
    fn v1(blocks: &[(u64, Vec<u8>)]) -> Vec<u8> {
        let mut f = Vec::new();
        for chunk in blocks.chunks(63) {
            let mut h = vec![0u8; 512];
            h[0..4].copy_from_slice(&MAGIC_V1.to_be_bytes());
            h[4..6].copy_from_slice(&(chunk.len() as u16).to_be_bytes());
            h[6] = 9;
            h[7] = V1_INFO_FLAGS | V1_DIRTYLOG;
            for (i, (d, _)) in chunk.iter().enumerate() {
                h[8 + i * 8..16 + i * 8].copy_from_slice(&d.to_be_bytes());
            }
            f.extend_from_slice(&h);
            for (_, b) in chunk {
                f.extend_from_slice(b);
            }
        }
        if blocks.len() % 63 == 0 {
            let mut h = vec![0u8; 512];
            h[0..4].copy_from_slice(&MAGIC_V1.to_be_bytes());
            h[6] = 9;
            f.extend_from_slice(&h);
        }
        f
    }

    fn err<T>(r: Result<T>) -> String {
        match r {
            Ok(_) => panic!("opened"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn v1_blocks_land_where_their_daddrs_say_and_the_rest_is_zeros() {
        let mut blocks = vec![(0u64, sb_block(16))];
        for d in 1..100u64 {
            blocks.push((d * 3, vec![d as u8; 512]));
        }
        let m = Metadump::open(v1(&blocks)).unwrap();
        assert_eq!(m.len(), 16 * 4096);
        assert_eq!(m.info().version, 1);
        assert_eq!(m.info().dirty_log, Some(true));
        assert_eq!(m.info().bytes_held, 100 * 512);
        let mut b = vec![9u8; 3 * 512];
        m.read_exact_at(3 * 512, &mut b).unwrap();
        assert!(b[..512].iter().all(|x| *x == 1));
        assert!(b[512..].iter().all(|x| *x == 0));
        assert!(m.holds(6 * 512, 512) && !m.holds(6 * 512, 513));
        assert!(m.read_exact_at(16 * 4096 - 1, &mut b).is_err());
    }

    #[test]
    fn v2_extents_and_later_copies_win() {
        let mut f = Vec::new();
        f.extend_from_slice(&MAGIC_V2.to_be_bytes());
        f.extend_from_slice(&2u32.to_be_bytes());
        f.extend_from_slice(&(V2_OBFUSCATED | V2_EXTERNALLOG).to_be_bytes());
        f.extend_from_slice(&0u32.to_be_bytes());
        f.extend_from_slice(&0u64.to_be_bytes());
        let ext = |f: &mut Vec<u8>, addr: u64, data: &[u8]| {
            f.extend_from_slice(&addr.to_be_bytes());
            f.extend_from_slice(&((data.len() / 512) as u32).to_be_bytes());
            f.extend_from_slice(data);
        };
        // sb_logstart 0 (an external log) of sb_logblocks 2.
        let mut sb = sb_block(4);
        sb[96..100].copy_from_slice(&2u32.to_be_bytes());
        let head = f.clone();
        ext(&mut f, 0, &sb);
        ext(&mut f, 8, &[1u8; 2048]);
        ext(&mut f, 9, &[2u8; 512]); // overwrites sector 9
        ext(&mut f, 1 << 54 | 8, &[3u8; 512]); // the log device's sector 8
        let m = Metadump::open(f.clone()).unwrap();
        assert_eq!(m.info().obfuscated, Some(true));
        let mut b = vec![0u8; 2048];
        m.read_exact_at(8 * 512, &mut b).unwrap();
        assert!(b[..512].iter().all(|x| *x == 1));
        assert!(b[512..1024].iter().all(|x| *x == 2));
        assert!(b[1024..].iter().all(|x| *x == 1));
        // The log device: sb_logblocks blocks, the dumped sector, zeros.
        assert_eq!(m.log_len(), 8192);
        assert_eq!(m.info().log_bytes_held, 512);
        let mut l = vec![9u8; 8192];
        m.read_log_at(0, &mut l).unwrap();
        assert!(l[4096..4608].iter().all(|x| *x == 3));
        assert!(l[..4096].iter().chain(&l[4608..]).all(|x| *x == 0));
        assert!(m.read_log_at(8000, &mut [0u8; 512]).is_err());

        // The same extents with an internal log: the log device's are not
        // read, and the notes say so.
        let mut g = head.clone();
        let mut sb = sb_block(4);
        sb[48..56].copy_from_slice(&2u64.to_be_bytes());
        ext(&mut g, 0, &sb);
        ext(&mut g, 1 << 54 | 8, &[3u8; 512]);
        let m = Metadump::open(g).unwrap();
        assert_eq!(m.log_len(), 0);
        assert!(m.info().notes.iter().any(|n| n.contains("not read")));

        // A log device extent in a dump whose header says none is held.
        let mut h = head;
        h[8..12].copy_from_slice(&V2_OBFUSCATED.to_be_bytes());
        ext(&mut h, 0, &sb_block(4));
        ext(&mut h, 1 << 54 | 8, &[3u8; 512]);
        assert!(Metadump::open(h).is_err());
    }

    #[test]
    fn hostile_dumps_are_refused() {
        let good = v1(&[(0, sb_block(16))]);
        let mut f = good.clone();
        f[6] = 30;
        assert!(err(Metadump::open(f)).contains("mb_blocklog is 30"));
        let mut f = good.clone();
        f[4..6].copy_from_slice(&64u16.to_be_bytes());
        assert!(err(Metadump::open(f)).contains("mb_count is 64"));
        let mut f = good.clone();
        f[8..16].copy_from_slice(&5u64.to_be_bytes());
        assert!(err(Metadump::open(f)).contains("not the primary superblock"));
        let mut f = good.clone();
        f[8..16].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(Metadump::open(f).is_err());
        // A superblock whose size overflows, or with a bad block size.
        let mut sb = sb_block(u64::MAX);
        assert!(err(Metadump::open(v1(&[(0, sb.clone())]))).contains("overflows"));
        sb[4..8].copy_from_slice(&3000u32.to_be_bytes());
        assert!(err(Metadump::open(v1(&[(0, sb)]))).contains("sb_blocksize is 3000"));
        // Cut short.
        assert!(Metadump::open(good[..700].to_vec()).is_err());
        // v2: an extent longer than the file, an unknown device.
        let mut f = Vec::new();
        f.extend_from_slice(&MAGIC_V2.to_be_bytes());
        f.extend_from_slice(&2u32.to_be_bytes());
        f.extend_from_slice(&[0u8; 16]);
        f.extend_from_slice(&0u64.to_be_bytes());
        f.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(err(Metadump::open(f.clone())).contains("beyond the end"));
        let n = f.len();
        f[n - 4..].copy_from_slice(&1u32.to_be_bytes());
        f.extend_from_slice(&sb_block(4));
        f.extend_from_slice(&(3u64 << 54).to_be_bytes());
        f.extend_from_slice(&0u32.to_be_bytes());
        assert!(err(Metadump::open(f)).contains("unknown device 3"));
    }

    #[test]
    fn a_v1_chain_of_many_index_blocks() {
        // 63 * 40 blocks: every index block full, then an empty one.
        let mut blocks = vec![(0u64, sb_block(4096))];
        for d in 1..63 * 40u64 {
            blocks.push((d, vec![(d % 251) as u8; 512]));
        }
        let m = Metadump::open(v1(&blocks)).unwrap();
        assert_eq!(m.info().bytes_held, 63 * 40 * 512);
        // Consecutive sectors in consecutive file blocks join into runs.
        assert!(m.runs.len() <= 41, "{}", m.runs.len());
        let mut b = [0u8; 1];
        m.read_exact_at(2000 * 512, &mut b).unwrap();
        assert_eq!(b[0], (2000 % 251) as u8);
    }
}
