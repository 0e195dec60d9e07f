//! The read chokepoint. Every byte the parsers see passes through
//! [`Image::read`]: bounds check, then the replay overlay, then the block
//! cache, then the host reader.

use crate::xfs::error::{Error, Result};
use crate::xfs::format::BBSIZE;
use crate::xfs::read::ReadAt;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

/// The largest single read the chokepoint accepts. Structures are at most a
/// 64 KiB directory block or a log record of a few hundred KiB; a request
/// beyond this is a corrupt length, not a real need.
pub const MAX_READ: u64 = 16 << 20;

/// Recovered sectors laid over the image (filled by log replay), by daddr.
/// Kept in 4 KiB pages of eight sectors with a mask of the sectors present,
/// so that a recovered block costs one map entry, not eight.
#[derive(Default, Clone, Debug)]
pub struct Overlay {
    pages: BTreeMap<u64, Box<Page>>,
    sectors: usize,
    /// While recording ([`Overlay::record_undo`]): each sector's state
    /// before its first write since (`None`: not in the overlay).
    undo: Option<BTreeMap<u64, Option<Box<[u8; 512]>>>>,
}

#[derive(Clone, Debug)]
struct Page {
    /// Bit i: sector i of the page is present.
    mask: u8,
    data: [u8; 4096],
}

/// Sectors per overlay page.
const PAGE_SECTORS: u64 = 8;

impl Overlay {
    pub fn is_empty(&self) -> bool {
        self.sectors == 0
    }

    /// Number of sectors held.
    pub fn len(&self) -> usize {
        self.sectors
    }

    /// Put one sector of recovered bytes at `daddr`.
    pub fn put_sector(&mut self, daddr: u64, bytes: [u8; 512]) {
        self.put(daddr, &bytes);
    }

    /// Put `bytes` (whole sectors; a partial last sector is ignored) from
    /// sector `daddr` on.
    /// Remember, from now on, what each sector held before it is first
    /// written, so that [`Overlay::revert`] can put it back.
    pub fn record_undo(&mut self) {
        self.undo = Some(BTreeMap::new());
    }

    /// What sector `at` held when recording began, where it was written
    /// since: `Some(Some(bytes))`, or `Some(None)` if it was not in the
    /// overlay then (the image's own bytes). `None`: not written since (or
    /// not recording).
    pub fn recorded(&self, at: u64) -> Option<Option<&[u8; 512]>> {
        self.undo
            .as_ref()
            .and_then(|u| u.get(&at))
            .map(|o| o.as_deref())
    }

    /// Stop remembering (and forget what was remembered).
    pub fn stop_undo(&mut self) {
        self.undo = None;
    }

    /// Put back the `count` sectors from `daddr` as they were when
    /// recording began: a sector written since gets its old bytes, or
    /// leaves the overlay if it was not in it. Sectors not written since
    /// are left alone.
    pub fn revert(&mut self, daddr: u64, count: u64) {
        let Some(undo) = self.undo.as_mut() else {
            return;
        };
        let mut back = Vec::new();
        for at in daddr..daddr.saturating_add(count) {
            if let Some(old) = undo.remove(&at) {
                back.push((at, old));
            }
        }
        for (at, old) in back {
            match old {
                Some(b) => self.write_sector(at, &b[..]),
                None => self.drop_sector(at),
            }
        }
    }

    fn drop_sector(&mut self, at: u64) {
        let slot = u32::try_from(at % PAGE_SECTORS).unwrap_or(0);
        let Some(page) = self.pages.get_mut(&(at / PAGE_SECTORS)) else {
            return;
        };
        let bit = 1u8.checked_shl(slot).unwrap_or(0);
        if page.mask & bit != 0 {
            page.mask &= !bit;
            self.sectors = self.sectors.saturating_sub(1);
        }
        if page.mask == 0 {
            self.pages.remove(&(at / PAGE_SECTORS));
        }
    }

    pub fn put(&mut self, daddr: u64, bytes: &[u8]) {
        for (i, chunk) in bytes.chunks_exact(512).enumerate() {
            let at = daddr.saturating_add(u64::try_from(i).unwrap_or(u64::MAX));
            if self.undo.as_ref().is_some_and(|u| !u.contains_key(&at)) {
                let old = self.sector(at).map(|s| Box::new(*s));
                if let Some(u) = self.undo.as_mut() {
                    u.insert(at, old);
                }
            }
            self.write_sector(at, chunk);
        }
    }

    fn write_sector(&mut self, at: u64, chunk: &[u8]) {
        let slot = usize::try_from(at % PAGE_SECTORS).unwrap_or(0);
        let page = self.pages.entry(at / PAGE_SECTORS).or_insert_with(|| {
            Box::new(Page {
                mask: 0,
                data: [0u8; 4096],
            })
        });
        let bit = 1u8
            .checked_shl(u32::try_from(slot).unwrap_or(0))
            .unwrap_or(0);
        if page.mask & bit == 0 {
            page.mask |= bit;
            self.sectors = self.sectors.saturating_add(1);
        }
        let lo = slot.saturating_mul(512);
        if let Some(d) = page.data.get_mut(lo..lo.saturating_add(512)) {
            d.copy_from_slice(chunk);
        }
    }

    fn page_sector(page: &Page, slot: u64) -> Option<&[u8; 512]> {
        let bit = 1u8.checked_shl(u32::try_from(slot).ok()?)?;
        if page.mask & bit == 0 {
            return None;
        }
        let lo = usize::try_from(slot).ok()?.checked_mul(512)?;
        page.data.get(lo..lo.checked_add(512)?)?.try_into().ok()
    }

    /// The recovered sector at `daddr`, if any.
    pub fn sector(&self, daddr: u64) -> Option<&[u8; 512]> {
        let page = self.pages.get(&(daddr / PAGE_SECTORS))?;
        Self::page_sector(page, daddr % PAGE_SECTORS)
    }

    /// Every recovered sector in ascending daddr order.
    pub fn sectors(&self) -> impl Iterator<Item = (u64, &[u8; 512])> + '_ {
        self.sectors_in(0, u64::MAX)
    }

    /// Recovered sectors in `[first, last]`.
    pub fn sectors_in(
        &self,
        first: u64,
        last: u64,
    ) -> impl Iterator<Item = (u64, &[u8; 512])> + '_ {
        self.pages
            .range(first / PAGE_SECTORS..=last / PAGE_SECTORS)
            .flat_map(move |(p, page)| {
                (0..PAGE_SECTORS).filter_map(move |slot| {
                    let d = p.saturating_mul(PAGE_SECTORS).saturating_add(slot);
                    if d < first || d > last {
                        return None;
                    }
                    Self::page_sector(page, slot).map(|s| (d, s))
                })
            })
    }

    /// Bytes held (512 per sector, bookkeeping not counted).
    pub fn bytes(&self) -> u64 {
        u64::try_from(self.sectors)
            .unwrap_or(u64::MAX)
            .saturating_mul(BBSIZE)
    }

    /// Lay the overlay over `buf`, which holds the image bytes at byte
    /// `offset`.
    pub fn apply_to(&self, offset: u64, buf: &mut [u8]) {
        self.apply(offset, buf);
    }

    /// Lay the overlay over `buf`, which holds the image bytes at `offset`.
    fn apply(&self, offset: u64, buf: &mut [u8]) {
        if self.sectors == 0 || buf.is_empty() {
            return;
        }
        let len = u64::try_from(buf.len()).unwrap_or(u64::MAX);
        let end = offset.saturating_add(len);
        let first = offset / BBSIZE;
        let last = end.saturating_sub(1) / BBSIZE;
        for (daddr, sector) in self.sectors_in(first, last) {
            let sec_start = daddr.saturating_mul(BBSIZE);
            let lo = sec_start.max(offset);
            let hi = sec_start.saturating_add(BBSIZE).min(end);
            let (Ok(dst_lo), Ok(dst_hi), Ok(src_lo), Ok(src_hi)) = (
                usize::try_from(lo.saturating_sub(offset)),
                usize::try_from(hi.saturating_sub(offset)),
                usize::try_from(lo.saturating_sub(sec_start)),
                usize::try_from(hi.saturating_sub(sec_start)),
            ) else {
                continue;
            };
            if let (Some(dst), Some(src)) =
                (buf.get_mut(dst_lo..dst_hi), sector.get(src_lo..src_hi))
            {
                dst.copy_from_slice(src);
            }
        }
    }
}

/// Counters that show how lazily the image is read.
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReadStats {
    /// Calls into the host reader.
    pub host_reads: u64,
    /// Bytes fetched from the host reader.
    pub host_bytes: u64,
    /// Chunk lookups answered by the cache.
    pub cache_hits: u64,
}

struct Cached {
    data: Rc<[u8]>,
    last_use: u64,
}

/// A block cache of fixed-size, aligned chunks with least-recently-used
/// eviction. The chunk size is the host read size: small natively, large in
/// the browser where each read costs about a millisecond.
struct ChunkCache {
    chunk_bytes: u64,
    capacity: usize,
    chunks: HashMap<u64, Cached>,
    clock: u64,
}

impl ChunkCache {
    fn get(&mut self, index: u64) -> Option<Rc<[u8]>> {
        self.clock = self.clock.wrapping_add(1);
        let now = self.clock;
        self.chunks.get_mut(&index).map(|c| {
            c.last_use = now;
            Rc::clone(&c.data)
        })
    }

    fn put(&mut self, index: u64, data: Rc<[u8]>) {
        if self.chunks.len() >= self.capacity {
            if let Some(oldest) = self
                .chunks
                .iter()
                .min_by_key(|(_, c)| c.last_use)
                .map(|(k, _)| *k)
            {
                self.chunks.remove(&oldest);
            }
        }
        self.clock = self.clock.wrapping_add(1);
        self.chunks.insert(
            index,
            Cached {
                data,
                last_use: self.clock,
            },
        );
    }
}

/// An opened image: the reader plus the chokepoint's state.
pub struct Image<R: ReadAt> {
    reader: R,
    len: u64,
    cache: RefCell<ChunkCache>,
    overlay: Overlay,
    use_overlay: bool,
    stats: Cell<ReadStats>,
}

impl<R: ReadAt> Image<R> {
    /// Default chunk size for host files.
    pub const NATIVE_CHUNK: u64 = 64 << 10;

    pub fn new(reader: R) -> Self {
        Self::with_cache(reader, Self::NATIVE_CHUNK, 256)
    }

    /// `chunk_bytes` is rounded up to a power of two of at least 4 KiB;
    /// `capacity` is the number of chunks kept.
    pub fn with_cache(reader: R, chunk_bytes: u64, capacity: usize) -> Self {
        let len = reader.len();
        let chunk_bytes = chunk_bytes.clamp(4096, MAX_READ).next_power_of_two();
        Image {
            reader,
            len,
            cache: RefCell::new(ChunkCache {
                chunk_bytes,
                capacity: capacity.max(1),
                chunks: HashMap::new(),
                clock: 0,
            }),
            overlay: Overlay::default(),
            use_overlay: false,
            stats: Cell::new(ReadStats::default()),
        }
    }

    /// The image length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// The reader under the chokepoint.
    pub fn reader(&self) -> &R {
        &self.reader
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn stats(&self) -> ReadStats {
        self.stats.get()
    }

    /// Replace the replay overlay.
    pub fn set_overlay(&mut self, overlay: Overlay) {
        self.overlay = overlay;
    }

    /// Choose between the on-disk view (false) and the replayed view (true).
    pub fn set_use_overlay(&mut self, on: bool) {
        self.use_overlay = on;
    }

    /// The replay overlay (possibly empty).
    pub fn overlay(&self) -> &Overlay {
        &self.overlay
    }

    /// Whether reads see the overlay.
    pub fn uses_overlay(&self) -> bool {
        self.use_overlay
    }

    /// Read straight from the image, ignoring the overlay whatever the
    /// setting (for replay, which builds the overlay from the on-disk state).
    pub fn read_disk(&self, structure: &'static str, offset: u64, len: u64) -> Result<Vec<u8>> {
        let end = offset.checked_add(len).ok_or(Error::OutOfBounds {
            structure,
            offset,
            len,
            image_len: self.len,
        })?;
        if end > self.len || len > MAX_READ {
            return Err(Error::OutOfBounds {
                structure,
                offset,
                len,
                image_len: self.len,
            });
        }
        let size = usize::try_from(len).map_err(|_| Error::OutOfBounds {
            structure,
            offset,
            len,
            image_len: self.len,
        })?;
        let mut buf = vec![0u8; size];
        self.fill_from_cache(offset, &mut buf)?;
        Ok(buf)
    }

    /// The length in bytes and the end of a read of `len` bytes at
    /// `offset`, or the error naming `structure` when the range is outside
    /// the image or longer than one read may be.
    fn checked_range(
        &self,
        structure: &'static str,
        offset: u64,
        len: u64,
    ) -> Result<(usize, u64)> {
        let out_of_bounds = || Error::OutOfBounds {
            structure,
            offset,
            len,
            image_len: self.len,
        };
        let end = offset.checked_add(len).ok_or_else(out_of_bounds)?;
        if end > self.len || len > MAX_READ {
            return Err(out_of_bounds());
        }
        let size = usize::try_from(len).map_err(|_| out_of_bounds())?;
        Ok((size, end))
    }

    /// Read `len` bytes at byte `offset`, for the structure named `structure`
    /// (named in the error if the range is outside the image).
    pub fn read(&self, structure: &'static str, offset: u64, len: u64) -> Result<Vec<u8>> {
        let (size, _) = self.checked_range(structure, offset, len)?;
        let mut buf = vec![0u8; size];
        self.fill_from_cache(offset, &mut buf)?;
        if self.use_overlay {
            self.overlay.apply(offset, &mut buf);
        }
        Ok(buf)
    }

    /// Read `buf.len()` bytes at byte `offset` into `buf`, for a walk that
    /// streams through a large region (the log). Same bounds check and
    /// overlay as [`Image::read`]; a read of at least one cache chunk goes
    /// straight to the host reader without filling the cache, so a long
    /// sequential walk neither evicts every cached block nor copies twice.
    pub fn read_into(&self, structure: &'static str, offset: u64, buf: &mut [u8]) -> Result<()> {
        let len = u64::try_from(buf.len()).unwrap_or(u64::MAX);
        let out_of_bounds = || Error::OutOfBounds {
            structure,
            offset,
            len,
            image_len: self.len,
        };
        let end = offset.checked_add(len).ok_or_else(out_of_bounds)?;
        if end > self.len || len > MAX_READ {
            return Err(out_of_bounds());
        }
        let chunk_bytes = self.cache.borrow().chunk_bytes;
        if len >= chunk_bytes {
            self.reader
                .read_exact_at(offset, buf)
                .map_err(|e| Error::Io {
                    offset,
                    len,
                    message: e.0,
                })?;
            let mut s = self.stats.get();
            s.host_reads = s.host_reads.saturating_add(1);
            s.host_bytes = s.host_bytes.saturating_add(len);
            self.stats.set(s);
        } else {
            self.fill_from_cache(offset, buf)?;
        }
        if self.use_overlay {
            self.overlay.apply(offset, buf);
        }
        Ok(())
    }

    fn fill_from_cache(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let chunk_bytes = self.cache.borrow().chunk_bytes;
        let mut done: usize = 0;
        while done < buf.len() {
            let pos = offset.saturating_add(u64::try_from(done).unwrap_or(u64::MAX));
            let index = pos.checked_div(chunk_bytes).unwrap_or(0);
            let chunk = self.chunk(index, chunk_bytes)?;
            let within =
                usize::try_from(pos.checked_rem(chunk_bytes).unwrap_or(0)).unwrap_or(usize::MAX);
            let src = chunk.get(within..).unwrap_or(&[]);
            let dst = buf.get_mut(done..).unwrap_or(&mut []);
            let n = src.len().min(dst.len());
            if n == 0 {
                return Err(Error::Io {
                    offset: pos,
                    len: 1,
                    message: "short chunk".into(),
                });
            }
            if let (Some(d), Some(s)) = (dst.get_mut(..n), src.get(..n)) {
                d.copy_from_slice(s);
            }
            done = done.saturating_add(n);
        }
        Ok(())
    }

    /// Read `len` bytes at byte `offset` like [`Image::read`], without
    /// bringing chunks into the cache: a range inside a cached chunk is
    /// copied from it, any other is read from the host reader as it is.
    /// For small reads scattered over the image and made once each (the
    /// operations analysis's first look at a logged block), where filling
    /// a whole chunk costs more than it saves and evicts what others use.
    pub fn read_uncached(&self, structure: &'static str, offset: u64, len: u64) -> Result<Vec<u8>> {
        let (size, end) = self.checked_range(structure, offset, len)?;
        let mut buf = vec![0u8; size];
        let chunk_bytes = self.cache.borrow().chunk_bytes;
        let index = offset.checked_div(chunk_bytes).unwrap_or(0);
        let last = end.saturating_sub(1).checked_div(chunk_bytes).unwrap_or(0);
        let cached = if index == last {
            self.cache.borrow_mut().get(index)
        } else {
            None
        };
        let within = usize::try_from(offset.checked_rem(chunk_bytes).unwrap_or(0)).unwrap_or(0);
        match cached
            .as_deref()
            .and_then(|c| c.get(within..within.checked_add(size)?))
        {
            Some(src) => buf.copy_from_slice(src),
            None => {
                self.reader
                    .read_exact_at(offset, &mut buf)
                    .map_err(|e| Error::Io {
                        offset,
                        len,
                        message: e.0,
                    })?;
                let mut s = self.stats.get();
                s.host_reads = s.host_reads.saturating_add(1);
                s.host_bytes = s.host_bytes.saturating_add(len);
                self.stats.set(s);
            }
        }
        if self.use_overlay {
            self.overlay.apply(offset, &mut buf);
        }
        Ok(buf)
    }

    fn chunk(&self, index: u64, chunk_bytes: u64) -> Result<Rc<[u8]>> {
        if let Some(c) = self.cache.borrow_mut().get(index) {
            let mut s = self.stats.get();
            s.cache_hits = s.cache_hits.saturating_add(1);
            self.stats.set(s);
            return Ok(c);
        }
        let start = index.saturating_mul(chunk_bytes);
        let len = chunk_bytes.min(self.len.saturating_sub(start));
        let size = usize::try_from(len).map_err(|_| Error::Io {
            offset: start,
            len,
            message: "chunk too large for this platform".into(),
        })?;
        // Made in place (one allocation, no copy from a Vec).
        let mut data: Rc<[u8]> = std::iter::repeat_n(0u8, size).collect();
        let io = |e: crate::xfs::read::ReadError| Error::Io {
            offset: start,
            len,
            message: e.0,
        };
        match Rc::get_mut(&mut data) {
            Some(d) => self.reader.read_exact_at(start, d).map_err(io)?,
            None => {
                let mut v = vec![0u8; size];
                self.reader.read_exact_at(start, &mut v).map_err(io)?;
                data = v.into();
            }
        }
        let mut s = self.stats.get();
        s.host_reads = s.host_reads.saturating_add(1);
        s.host_bytes = s.host_bytes.saturating_add(len);
        self.stats.set(s);
        self.cache.borrow_mut().put(index, Rc::clone(&data));
        Ok(data)
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::cast_possible_truncation
)]
mod tests {
    use super::*;

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i % 251) as u8).collect()
    }

    #[test]
    fn revert_puts_back_what_sectors_held_when_recording_began() {
        let mut ov = Overlay::default();
        ov.put(10, &[1u8; 1024]); // sectors 10, 11
        ov.record_undo();
        ov.put(11, &[2u8; 1024]); // 11 written over, 12 new
        ov.put(11, &[3u8; 512]); // a second write keeps the first undo
        ov.put(20, &[4u8; 512]);
        assert_eq!(ov.len(), 4);
        ov.revert(10, 3);
        assert_eq!(ov.sector(10), Some(&[1u8; 512]));
        assert_eq!(ov.sector(11), Some(&[1u8; 512]));
        assert_eq!(ov.sector(12), None);
        assert_eq!(ov.len(), 3);
        // Reverting again, or sectors not written since, changes nothing.
        ov.revert(10, 3);
        assert_eq!(ov.sector(11), Some(&[1u8; 512]));
        ov.stop_undo();
        ov.revert(20, 1);
        assert_eq!(ov.sector(20), Some(&[4u8; 512]));
    }

    #[test]
    fn reads_across_chunks_match_the_source() {
        let src = pattern(50_000);
        let img = Image::with_cache(src.clone(), 4096, 2);
        for (off, len) in [(0u64, 10u64), (4090, 20), (8191, 9000), (49_990, 10)] {
            let got = img.read("test", off, len).unwrap();
            assert_eq!(got, src[off as usize..(off + len) as usize]);
        }
    }

    #[test]
    fn read_into_matches_read_and_skips_the_cache_when_large() {
        let src = pattern(50_000);
        let img = Image::with_cache(src.clone(), 4096, 4);
        let mut big = vec![0u8; 10_000];
        img.read_into("t", 123, &mut big).unwrap();
        assert_eq!(big, src[123..10_123]);
        assert_eq!(img.stats().cache_hits, 0);
        assert_eq!(img.stats().host_reads, 1);
        let mut small = vec![0u8; 100];
        img.read_into("t", 4000, &mut small).unwrap();
        assert_eq!(small, src[4000..4100]);
        assert!(img.read_into("t", 49_990, &mut small).is_err());
    }

    #[test]
    fn read_uncached_matches_read_and_leaves_the_cache_alone() {
        let src = pattern(50_000);
        let img = Image::with_cache(src.clone(), 4096, 4);
        // Not cached: straight from the host, nothing brought in.
        assert_eq!(img.read_uncached("t", 5000, 300).unwrap(), src[5000..5300]);
        assert_eq!(img.stats().host_reads, 1);
        assert_eq!(img.read_uncached("t", 5000, 300).unwrap(), src[5000..5300]);
        assert_eq!(img.stats().host_reads, 2);
        assert_eq!(img.stats().cache_hits, 0);
        // Cached: from the chunk.
        img.read("t", 4096, 10).unwrap();
        assert_eq!(img.read_uncached("t", 4200, 100).unwrap(), src[4200..4300]);
        assert_eq!(img.stats().host_reads, 3);
        // Across chunks, and out of bounds.
        assert_eq!(img.read_uncached("t", 8000, 500).unwrap(), src[8000..8500]);
        assert!(img.read_uncached("t", 49_990, 100).is_err());
        // The overlay applies as it does to every read.
        let mut img = img;
        let mut ov = Overlay::default();
        ov.put(20, &[7u8; 512]);
        img.set_overlay(ov);
        img.set_use_overlay(true);
        let got = img.read_uncached("t", 20 * 512 - 4, 8).unwrap();
        assert_eq!(got[..4], src[20 * 512 - 4..20 * 512]);
        assert_eq!(got[4..], [7u8; 4]);
    }

    #[test]
    fn out_of_bounds_names_the_structure() {
        let img = Image::new(pattern(1000));
        let err = img.read("superblock", 900, 200).unwrap_err();
        assert!(err.to_string().contains("superblock"), "{err}");
        assert!(matches!(err, Error::OutOfBounds { .. }));
        assert!(img.read("x", u64::MAX - 1, 10).is_err());
    }

    #[test]
    fn cache_avoids_repeat_host_reads() {
        let img = Image::with_cache(pattern(100_000), 4096, 8);
        img.read("a", 0, 100).unwrap();
        img.read("a", 100, 100).unwrap();
        let s = img.stats();
        assert_eq!(s.host_reads, 1);
        assert_eq!(s.cache_hits, 1);
        assert_eq!(s.host_bytes, 4096);
    }

    #[test]
    fn eviction_keeps_capacity() {
        let img = Image::with_cache(pattern(100_000), 4096, 2);
        for i in 0..10u64 {
            img.read("a", i * 4096, 1).unwrap();
        }
        img.read("a", 0, 1).unwrap();
        assert_eq!(img.stats().host_reads, 11);
        assert!(img.cache.borrow().chunks.len() <= 2);
    }

    #[test]
    fn overlay_applies_only_when_on() {
        let mut img = Image::new(pattern(4096));
        let mut ov = Overlay::default();
        ov.put_sector(1, [0xAA; 512]);
        img.set_overlay(ov);
        let before = img.read("a", 500, 20).unwrap();
        assert_eq!(before, pattern(4096)[500..520]);
        img.set_use_overlay(true);
        let after = img.read("a", 500, 20).unwrap();
        assert_eq!(&after[..12], &pattern(4096)[500..512]);
        assert!(after[12..].iter().all(|b| *b == 0xAA));
    }
}
