//! One log record: its header (and extended headers for records over
//! 32 KiB), its CRC32c, and its data with the cycle-stamped first word of
//! every 512-byte block restored.
//!
//! ```text
//!  header sector 0   xlog_rec_header: h_cycle_data[0..64]
//!  header sector j   xlog_rec_ext_header: xh_cycle_data[0..64]  (j = 1..hblks-1)
//!  data block i      first word replaced by the cycle; the real word is
//!                    slot i: sector i/64, word i%64
//! ```
//!
//! The CRC covers the first 328 bytes of sector 0 (with `h_crc` as zero),
//! the first 260 bytes of each extended header up to `ceil(h_len / 32 KiB)`,
//! then the data as stored (stamped). It is checked before unpacking.

use super::LogDev;
use crate::xfs::error::{Error, Result};
use crate::xfs::format::log::*;
use crate::xfs::format::BBSHIFT;
use crate::xfs::fs::{be32, be64};
use crate::xfs::read::ReadAt;
use crate::xfs::types::Lsn;
use serde::Serialize;

/// A validated record header.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RecordHeader {
    /// Log block of the first header sector.
    pub blk: u32,
    pub cycle: u32,
    pub version: u32,
    /// Bytes of record data.
    pub len: u32,
    pub lsn: Lsn,
    pub tail_lsn: Lsn,
    /// Stored CRC (0: none).
    pub crc: u32,
    pub prev_block: u32,
    pub num_logops: u32,
    /// Byte order of the writer (`XLOG_FMT_*`).
    pub fmt: u32,
    #[serde(skip)]
    pub uuid: [u8; 16],
    /// Size of the in-core log buffer that wrote it.
    pub size: u32,
    /// Header sectors (1 plus the extended headers).
    pub hblks: u32,
}

/// Header sectors of a record: one per 32 KiB of `h_size` on a v2 log.
pub fn hblks_of(v2: bool, version: u32, size: u32) -> u32 {
    if v2 && version & XLOG_VERSION_2 != 0 && size > XLOG_HEADER_CYCLE_SIZE {
        size.div_ceil(XLOG_HEADER_CYCLE_SIZE)
    } else {
        1
    }
}

/// `ceil(bytes / 512)`.
pub fn btobb(bytes: u32) -> u32 {
    bytes.div_ceil(1 << BBSHIFT)
}

impl RecordHeader {
    /// Parse and check the first header sector of a record found at log
    /// block `blk`. `log_len` is the log length in blocks.
    pub fn parse(sector: &[u8], blk: u32, v2: bool, log_len: u32) -> Result<RecordHeader, String> {
        let w = |off: usize| be32(sector, off).unwrap_or(0);
        let magic = w(0);
        if magic != XLOG_HEADER_MAGIC_NUM {
            return Err(format!(
                "no record header: first word {magic:#010x}, expected 0xfeedbabe"
            ));
        }
        let version = w(8);
        if version == 0 || version & !XLOG_VERSION_OKBITS != 0 {
            return Err(format!("h_version {version} is not 1 or 2"));
        }
        let len = w(12);
        let size = w(320);
        let num_logops = w(40);
        let hblks = hblks_of(v2, version, size);
        if hblks > XLOG_MAX_RECORD_BSIZE / XLOG_HEADER_CYCLE_SIZE {
            return Err(format!(
                "h_size {size} is larger than the largest log buffer ({XLOG_MAX_RECORD_BSIZE})"
            ));
        }
        // The kernel accepts h_len up to the buffer size; mkfs once wrote
        // one-op records longer than h_size (sized by the log stripe unit).
        let limit = if v2 {
            if len > size && num_logops == 1 {
                XLOG_MAX_RECORD_BSIZE
            } else {
                size.max(XLOG_HEADER_CYCLE_SIZE)
            }
        } else {
            XLOG_HEADER_CYCLE_SIZE
        };
        if len == 0 || len > limit {
            return Err(format!(
                "h_len {len} is outside 1..={limit} (h_size {size})"
            ));
        }
        let data_bbs = btobb(len);
        let slots = hblks.saturating_mul(64);
        if data_bbs > slots && !(len > size && num_logops == 1) {
            return Err(format!(
                "h_len {len} needs {data_bbs} saved cycle words but {hblks} header sectors hold {slots}"
            ));
        }
        let total = data_bbs.saturating_add(hblks);
        if total > log_len {
            return Err(format!(
                "record of {total} blocks is longer than the log ({log_len} blocks)"
            ));
        }
        let mut uuid = [0u8; 16];
        if let Some(u) = sector.get(304..320) {
            uuid.copy_from_slice(u);
        }
        Ok(RecordHeader {
            blk,
            cycle: w(4),
            version,
            len,
            lsn: Lsn::from_raw(be64(sector, 16).unwrap_or(0)),
            tail_lsn: Lsn::from_raw(be64(sector, 24).unwrap_or(0)),
            crc: sector
                .get(32..36)
                .and_then(|s| <[u8; 4]>::try_from(s).ok())
                .map(u32::from_le_bytes)
                .unwrap_or(0),
            prev_block: w(36),
            num_logops,
            fmt: w(300),
            uuid,
            size,
            hblks,
        })
    }

    /// Blocks of data after the header sectors.
    pub fn data_bbs(&self) -> u32 {
        btobb(self.len)
    }

    /// Blocks of the whole record.
    pub fn total_bbs(&self) -> u32 {
        self.data_bbs().saturating_add(self.hblks)
    }
}

/// The result of checking a record's CRC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum CrcCheck {
    /// Matches, computed over the 328-byte header of 64-bit writers.
    Ok,
    /// Matches only with the 324-byte header of 32-bit x86 writers.
    OkShortHeader,
    /// `h_crc` is 0: the record was written without a CRC (mkfs).
    NotChecksummed,
    Bad {
        stored: u32,
        computed: u32,
    },
}

impl CrcCheck {
    pub fn is_bad(self) -> bool {
        matches!(self, CrcCheck::Bad { .. })
    }
}

/// Compute the CRC of a record over its header sectors and stamped data.
pub fn record_crc(header: &[u8], data: &[u8], len: u32, rec_size: usize) -> u32 {
    let first = header.get(..rec_size).unwrap_or(header);
    let before = first.get(..XLOG_REC_CRC_OFF).unwrap_or(first);
    let after = first
        .get(XLOG_REC_CRC_OFF.saturating_add(4)..)
        .unwrap_or(&[]);
    let mut c = crc32c::crc32c(before);
    c = crc32c::crc32c_append(c, &[0u8; 4]);
    c = crc32c::crc32c_append(c, after);
    let xheaders = len.div_ceil(XLOG_HEADER_CYCLE_SIZE);
    for j in 1..xheaders {
        let lo = usize::try_from(j).unwrap_or(usize::MAX).saturating_mul(512);
        let hi = lo.saturating_add(XLOG_REC_EXT_SIZE);
        if let Some(x) = header.get(lo..hi) {
            c = crc32c::crc32c_append(c, x);
        }
    }
    let n = usize::try_from(len).unwrap_or(usize::MAX).min(data.len());
    crc32c::crc32c_append(c, data.get(..n).unwrap_or(data))
}

/// Check the CRC of a record: 0 means none; a mismatch is retried with
/// the 324-byte header of 32-bit writers.
pub fn check_crc(h: &RecordHeader, header: &[u8], data: &[u8]) -> CrcCheck {
    if h.crc == 0 {
        return CrcCheck::NotChecksummed;
    }
    let computed = record_crc(header, data, h.len, XLOG_REC_SIZE);
    if computed == h.crc {
        return CrcCheck::Ok;
    }
    if record_crc(header, data, h.len, XLOG_REC_SIZE_OTHER) == h.crc {
        return CrcCheck::OkShortHeader;
    }
    CrcCheck::Bad {
        stored: h.crc,
        computed,
    }
}

/// Put back the first word of every data block from the header sectors.
pub fn unpack(header: &[u8], data: &mut [u8]) {
    for (i, block) in data.chunks_mut(512).enumerate() {
        let sector = i / XLOG_CYCLE_DATA_WORDS;
        let slot = i % XLOG_CYCLE_DATA_WORDS;
        // Sector 0 keeps its words at byte 44; extended headers at byte 4.
        let base = if sector == 0 { 44 } else { 4 };
        let off = sector
            .saturating_mul(512)
            .saturating_add(base)
            .saturating_add(slot.saturating_mul(4));
        let (Some(src), Some(dst)) = (header.get(off..off.saturating_add(4)), block.get_mut(..4))
        else {
            continue;
        };
        if src.len() == dst.len() {
            dst.copy_from_slice(src);
        }
    }
}

/// Reads records one at a time from a private window of the log, checking
/// and unpacking each in place: a front-to-back walk copies every byte once
/// (from the image into the window) and no more.
#[derive(Default)]
pub struct RecordReader {
    /// Log blocks `[first, first + nblocks)`.
    buf: Vec<u8>,
    first: u32,
    nblocks: u32,
    /// Blocks of the window before this one have been unpacked.
    clean_from: u32,
    /// A record that runs past the physical end, put together here.
    wrap_header: Vec<u8>,
    wrap_data: Vec<u8>,
    /// Where the last record's data is: in `buf` at this byte range, or
    /// (`None`) in `wrap_data`.
    data: Option<(usize, usize)>,
    /// Hand windows over instead of reading over them: a window left for
    /// the next is kept in `retired` (for another thread to use) and a
    /// spare buffer, if any, becomes the new window.
    handover: bool,
    retired: Vec<Vec<u8>>,
    spares: Vec<Vec<u8>>,
    /// Records were all checked by an earlier read of the same bytes:
    /// their CRCs are not computed again (see [`RecordReader::checked_before`]).
    checked_before: bool,
}

/// A record that has been read: its header and CRC check; the unpacked
/// data is in the reader ([`RecordReader::data`]).
#[derive(Clone, Debug)]
pub struct ReadRecord {
    pub header: RecordHeader,
    pub crc: CrcCheck,
}

fn bytes_of(blocks: u32) -> usize {
    usize::try_from(blocks).unwrap_or(0).saturating_mul(512)
}

impl RecordReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// The records this reader will read were all read before and every
    /// CRC matched (or, on v4, was absent): the second pass of replay reads
    /// the same bytes again, and computing the same CRCs again cannot
    /// change what it does. Their check is then reported as
    /// [`CrcCheck::Ok`] without being computed.
    pub fn checked_before(mut self, on: bool) -> Self {
        self.checked_before = on;
        self
    }

    fn crc(&self, h: &RecordHeader, header: &[u8], data: &[u8]) -> CrcCheck {
        if self.checked_before {
            CrcCheck::Ok
        } else {
            check_crc(h, header, data)
        }
    }

    /// Make log blocks `[blk, blk + n)` (not wrapping) present and not yet
    /// unpacked in the window.
    fn ensure<R: ReadAt>(&mut self, dev: &LogDev<'_, R>, blk: u32, n: u32) -> Result<()> {
        let end = blk.saturating_add(n);
        let w_end = self.first.saturating_add(self.nblocks);
        if blk >= self.first && blk >= self.clean_from && end <= w_end {
            return Ok(());
        }
        let count = n
            .max(super::WINDOW_BBS)
            .min(dev.len_bbs().saturating_sub(blk));
        if count < n {
            return Err(Error::corrupt(
                "log record",
                dev.location(blk),
                format!("{n} blocks from log block {blk} run past the end of the log"),
            ));
        }
        if self.handover && self.nblocks > 0 {
            self.retire();
        }
        self.buf.resize(bytes_of(count), 0);
        self.nblocks = 0;
        dev.read_direct(blk, &mut self.buf)?;
        self.first = blk;
        self.nblocks = count;
        self.clean_from = blk;
        Ok(())
    }

    /// Only the header of the record at `blk`.
    pub fn header<R: ReadAt>(&mut self, dev: &LogDev<'_, R>, blk: u32) -> Result<RecordHeader> {
        let blk = dev.wrap(blk, 0);
        self.ensure(dev, blk, 1)?;
        let off = bytes_of(blk.saturating_sub(self.first));
        let sector = self.buf.get(off..off.saturating_add(512)).unwrap_or(&[]);
        RecordHeader::parse(sector, blk, dev.is_v2(), dev.len_bbs())
            .map_err(|d| Error::corrupt("log record header", dev.location(blk), d))
    }

    /// Read the record at `blk`, check its CRC, and unpack its data (also
    /// when the CRC is bad, so the caller can still look at it).
    pub fn read<R: ReadAt>(&mut self, dev: &LogDev<'_, R>, blk: u32) -> Result<ReadRecord> {
        let blk = dev.wrap(blk, 0);
        let h = self.header(dev, blk)?;
        if let Some(uuid) = dev.uuid() {
            if h.uuid != uuid && h.uuid != [0u8; 16] {
                return Err(Error::corrupt(
                    "log record header",
                    dev.location(blk),
                    format!(
                        "h_fs_uuid {} is not this filesystem's {}",
                        crate::xfs::sb::uuid_text(&h.uuid),
                        crate::xfs::sb::uuid_text(&uuid)
                    ),
                ));
            }
        }
        let total = h.total_bbs();
        let len = usize::try_from(h.len).unwrap_or(usize::MAX);
        if u64::from(blk).saturating_add(u64::from(total)) > u64::from(dev.len_bbs()) {
            // Runs past the physical end: put it together. The window is
            // done with: what follows starts at the front of the log.
            if self.handover && self.nblocks > 0 {
                self.retire();
            }
            dev.read_wrapped(blk, h.hblks, &mut self.wrap_header)?;
            dev.read_wrapped(dev.wrap(blk, h.hblks), h.data_bbs(), &mut self.wrap_data)?;
            let crc = self.crc(&h, &self.wrap_header, &self.wrap_data);
            unpack(&self.wrap_header, &mut self.wrap_data);
            self.wrap_data.truncate(len);
            self.data = None;
            return Ok(ReadRecord { header: h, crc });
        }
        self.ensure(dev, blk, total)?;
        let off = bytes_of(blk.saturating_sub(self.first));
        let rec = self
            .buf
            .get_mut(off..off.saturating_add(bytes_of(total)))
            .ok_or_else(|| Error::corrupt("log record", dev.location(blk), "window too short"))?;
        let (hdr, data) = rec.split_at_mut(bytes_of(h.hblks).min(rec.len()));
        let crc = if self.checked_before {
            CrcCheck::Ok
        } else {
            check_crc(&h, hdr, data)
        };
        unpack(hdr, data);
        self.clean_from = blk.saturating_add(total);
        let start = off.saturating_add(bytes_of(h.hblks));
        self.data = Some((start, len.min(data.len())));
        Ok(ReadRecord { header: h, crc })
    }

    /// The unpacked data of the last record read (`h_len` bytes).
    pub fn data(&self) -> &[u8] {
        match self.data {
            Some((start, len)) => self
                .buf
                .get(start..start.saturating_add(len))
                .unwrap_or(&[]),
            None => &self.wrap_data,
        }
    }

    /// Keep windows for another thread instead of reading over them (see
    /// [`RecordReader::take_retired`]).
    pub fn set_handover(&mut self, on: bool) {
        self.handover = on;
    }

    fn retire(&mut self) {
        let fresh = self.spares.pop().unwrap_or_default();
        let old = std::mem::replace(&mut self.buf, fresh);
        self.retired.push(old);
        self.nblocks = 0;
        self.first = 0;
        self.clean_from = 0;
    }

    /// Windows the reader has moved past (in handover mode), oldest first:
    /// every record read before the last one lies in them.
    pub fn take_retired(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.retired)
    }

    /// The window itself, for when reading is over.
    pub fn take_window(&mut self) -> Vec<u8> {
        self.nblocks = 0;
        self.first = 0;
        self.clean_from = 0;
        self.data = None;
        std::mem::take(&mut self.buf)
    }

    /// A buffer to read the next window into.
    pub fn give_spare(&mut self, b: Vec<u8>) {
        if self.spares.len() < 4 {
            self.spares.push(b);
        }
    }

    /// Where the last record's data lies in the window (`None`: in a
    /// buffer of its own, as [`RecordReader::data`] gives it).
    pub fn data_range(&self) -> Option<(usize, usize)> {
        self.data
            .map(|(start, len)| (start, start.saturating_add(len)))
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::cast_possible_truncation
)]
mod tests {
    use super::*;

    /// Spec section 10: the first 48 bytes of a real record header.
    fn spec_header() -> Vec<u8> {
        let mut s = vec![0u8; 512];
        let words: [u32; 11] = [0xfeedbabe, 1, 2, 0x1a00, 1, 0x94d, 1, 0x8a4, 0, 0x924, 0x2c];
        for (i, w) in words.iter().enumerate() {
            s[i * 4..i * 4 + 4].copy_from_slice(&w.to_be_bytes());
        }
        s[32..36].copy_from_slice(&[0xe6, 0x40, 0xe7, 0x9b]);
        s[44..48].copy_from_slice(&0xb1e7_8be1u32.to_be_bytes());
        s[300..304].copy_from_slice(&1u32.to_be_bytes());
        s[320..324].copy_from_slice(&32768u32.to_be_bytes());
        s
    }

    #[test]
    fn parses_the_spec_header() {
        let h = RecordHeader::parse(&spec_header(), 2381, true, 131072).unwrap();
        assert_eq!(h.cycle, 1);
        assert_eq!(h.len, 6656);
        assert_eq!(
            h.lsn,
            Lsn {
                cycle: 1,
                block: 2381
            }
        );
        assert_eq!(
            h.tail_lsn,
            Lsn {
                cycle: 1,
                block: 2212
            }
        );
        assert_eq!(h.crc, 0x9be7_40e6);
        assert_eq!(h.prev_block, 2340);
        assert_eq!(h.num_logops, 44);
        assert_eq!(h.fmt, XLOG_FMT_LINUX_LE);
        assert_eq!(h.hblks, 1);
        assert_eq!(h.data_bbs(), 13);
    }

    #[test]
    fn hblks_follow_h_size() {
        assert_eq!(hblks_of(true, 2, 32768), 1);
        assert_eq!(hblks_of(true, 2, 65536), 2);
        assert_eq!(hblks_of(true, 2, 262144), 8);
        assert_eq!(hblks_of(true, 1, 262144), 1);
        assert_eq!(hblks_of(false, 2, 262144), 1);
    }

    #[test]
    fn bad_headers_are_refused_with_the_field() {
        let mut s = spec_header();
        s[8..12].copy_from_slice(&4u32.to_be_bytes());
        let e = RecordHeader::parse(&s, 0, true, 131072).unwrap_err();
        assert!(e.contains("h_version 4"), "{e}");
        let mut s = spec_header();
        s[12..16].copy_from_slice(&0u32.to_be_bytes());
        assert!(RecordHeader::parse(&s, 0, true, 131072)
            .unwrap_err()
            .contains("h_len 0"));
        let mut s = spec_header();
        s[12..16].copy_from_slice(&40000u32.to_be_bytes());
        assert!(RecordHeader::parse(&s, 0, true, 131072).is_err());
        let mut s = spec_header();
        s[320..324].copy_from_slice(&(1u32 << 30).to_be_bytes());
        assert!(RecordHeader::parse(&s, 0, true, 131072)
            .unwrap_err()
            .contains("h_size"));
        assert!(RecordHeader::parse(&spec_header(), 0, true, 10).is_err());
        assert!(RecordHeader::parse(&[0u8; 512], 0, true, 100).is_err());
        assert!(RecordHeader::parse(&[0xfe, 0xed], 0, true, 100).is_err());
    }

    #[test]
    fn unpack_restores_words_from_header_and_ext_headers() {
        // 70 data blocks: 64 from sector 0, 6 from sector 1.
        let mut header = vec![0u8; 1024];
        for i in 0..64u32 {
            let off = 44 + i as usize * 4;
            header[off..off + 4].copy_from_slice(&(0x1000 + i).to_be_bytes());
        }
        for i in 0..6u32 {
            let off = 512 + 4 + i as usize * 4;
            header[off..off + 4].copy_from_slice(&(0x2000 + i).to_be_bytes());
        }
        let mut data = vec![0xAAu8; 70 * 512];
        unpack(&header, &mut data);
        assert_eq!(&data[0..4], &0x1000u32.to_be_bytes());
        assert_eq!(&data[63 * 512..63 * 512 + 4], &0x103fu32.to_be_bytes());
        assert_eq!(&data[64 * 512..64 * 512 + 4], &0x2000u32.to_be_bytes());
        assert_eq!(&data[69 * 512..69 * 512 + 4], &0x2005u32.to_be_bytes());
        assert_eq!(data[4], 0xAA);
    }

    #[test]
    fn crc_covers_header_ext_headers_and_data() {
        let h = spec_header();
        let data = vec![7u8; 512];
        let a = record_crc(&h, &data, 512, XLOG_REC_SIZE);
        let mut h2 = h.clone();
        h2[32] ^= 0xff; // the CRC field itself is not covered
        assert_eq!(record_crc(&h2, &data, 512, XLOG_REC_SIZE), a);
        h2[325] ^= 1; // the padding is covered by the 328-byte form only
        assert_ne!(record_crc(&h2, &data, 512, XLOG_REC_SIZE), a);
        assert_eq!(
            record_crc(&h2, &data, 512, XLOG_REC_SIZE_OTHER),
            record_crc(&h, &data, 512, XLOG_REC_SIZE_OTHER)
        );
        let mut d2 = data.clone();
        d2[511] ^= 1;
        assert_ne!(record_crc(&h, &d2, 512, XLOG_REC_SIZE), a);
    }
}
