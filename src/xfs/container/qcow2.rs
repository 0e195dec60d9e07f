//! qcow2 images, versions 2 and 3 (QEMU's `docs/interop/qcow2.txt`): a
//! reader of the guest disk that maps each guest offset through the L1
//! table and an L2 table to a cluster of the file. Tables are read when a
//! read first needs them and kept in a cache of bounded size, so a 100 GiB
//! image opens after reading its header. Clusters that are not allocated,
//! or marked as zeros, read as zeros. Compressed clusters, encryption,
//! backing files and external data files are refused with a message that
//! says so; extended L2 entries (subclusters) are read.

use super::bytes::{be32, be64, byte, to_u64};
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::read::{ReadAt, ReadError};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// "QFI\xfb".
pub const MAGIC: u32 = 0x5146_49fb;
/// Cluster sizes QEMU accepts: 512 bytes to 2 MiB.
const MIN_CLUSTER_BITS: u32 = 9;
const MAX_CLUSTER_BITS: u32 = 21;
/// QEMU's limit on the L1 table (`QCOW_MAX_L1_SIZE`, 32 MiB of entries).
const MAX_L1_ENTRIES: u64 = (32 << 20) / 8;
/// Bytes of tables (L1 pieces and L2 tables) the cache keeps at most.
const TABLE_CACHE_BYTES: u64 = 8 << 20;
/// Offset bits of an L1 or standard L2 entry (bits 9 to 55).
const OFFSET_MASK: u64 = 0x00ff_ffff_ffff_fe00;
const L2_COMPRESSED: u64 = 1 << 62;
const L2_ZERO: u64 = 1;

const INCOMPAT_DIRTY: u64 = 1;
const INCOMPAT_CORRUPT: u64 = 1 << 1;
const INCOMPAT_DATA_FILE: u64 = 1 << 2;
const INCOMPAT_COMPRESSION: u64 = 1 << 3;
const INCOMPAT_EXTL2: u64 = 1 << 4;

/// What the header says, for people.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Qcow2Info {
    /// 2 or 3.
    pub version: u32,
    pub cluster_size: u64,
    /// The size of the guest disk in bytes.
    pub virtual_size: u64,
    /// The size of the qcow2 file itself.
    pub file_size: u64,
    /// Entries of the L1 table that the virtual size needs.
    pub l1_entries: u64,
    /// Extended L2 entries (32 subclusters per cluster).
    pub extended_l2: bool,
    /// "zlib" or "zstd" (only compressed clusters use it).
    pub compression: String,
    /// Things worth knowing that do not stop reading (dirty, corrupt flags).
    pub notes: Vec<String>,
}

/// An opened qcow2 image: a [`ReadAt`] of the guest disk.
pub struct Qcow2<V: ReadAt> {
    inner: V,
    inner_len: u64,
    info: Qcow2Info,
    cluster_bits: u32,
    /// log2 of the entries per L2 table.
    l2_bits: u32,
    l1_offset: u64,
    extended_l2: bool,
    cache: RefCell<TableCache>,
}

type CachedTable = (Rc<[u8]>, u64);

struct TableCache {
    capacity: usize,
    clock: u64,
    /// (file offset, length) -> (table bytes, last use).
    tables: HashMap<(u64, u64), CachedTable>,
}

impl TableCache {
    fn get(&mut self, key: (u64, u64)) -> Option<Rc<[u8]>> {
        self.clock = self.clock.wrapping_add(1);
        let now = self.clock;
        self.tables.get_mut(&key).map(|(t, used)| {
            *used = now;
            Rc::clone(t)
        })
    }

    fn put(&mut self, key: (u64, u64), table: Rc<[u8]>) {
        if self.tables.len() >= self.capacity {
            if let Some(oldest) = self
                .tables
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| *k)
            {
                self.tables.remove(&oldest);
            }
        }
        self.clock = self.clock.wrapping_add(1);
        self.tables.insert(key, (table, self.clock));
    }
}

/// Where a run of guest bytes is.
enum Mapping {
    Zeros,
    /// At this file offset.
    File(u64),
}

fn header_error(offset: u64, detail: impl Into<String>) -> Error {
    Error::corrupt("qcow2 header", Location::Bytes { offset, len: 8 }, detail)
}

fn unsupported(offset: u64, detail: impl Into<String>) -> Error {
    Error::Unsupported {
        structure: "qcow2 header",
        location: Location::Bytes { offset, len: 8 },
        detail: detail.into(),
    }
}

fn read_inner<V: ReadAt>(
    inner: &V,
    what: &'static str,
    offset: u64,
    len: usize,
) -> Result<Vec<u8>> {
    let n = to_u64(len);
    let inner_len = inner.len();
    if offset.checked_add(n).is_none_or(|end| end > inner_len) {
        return Err(Error::OutOfBounds {
            structure: what,
            offset,
            len: n,
            image_len: inner_len,
        });
    }
    let mut buf = vec![0u8; len];
    inner
        .read_exact_at(offset, &mut buf)
        .map_err(|e| Error::Io {
            offset,
            len: n,
            message: e.0,
        })?;
    Ok(buf)
}

/// Whether `head` (the first bytes of a file) starts with the qcow2 magic.
pub fn is_qcow2(head: &[u8]) -> bool {
    be32(head, 0) == MAGIC && head.len() >= 4
}

impl<V: ReadAt> Qcow2<V> {
    /// Parse the header of the qcow2 image `inner` and check that every
    /// table it names lies in the file. Reads the header only.
    pub fn open(inner: V) -> Result<Self> {
        let inner_len = inner.len();
        let head_len = usize::try_from(inner_len.min(512)).unwrap_or(512);
        let h = read_inner(&inner, "qcow2 header", 0, head_len)?;
        if h.len() < 72 {
            return Err(header_error(
                0,
                format!("the file is {inner_len} bytes, shorter than a qcow2 header (72)"),
            ));
        }
        if be32(&h, 0) != MAGIC {
            return Err(header_error(
                0,
                format!(
                    "magic is {:#010x}, expected 0x514649fb (\"QFI\\xfb\")",
                    be32(&h, 0)
                ),
            ));
        }
        let version = be32(&h, 4);
        if version != 2 && version != 3 {
            return Err(unsupported(
                4,
                format!("version {version} (versions 2 and 3 are read)"),
            ));
        }
        let backing_offset = be64(&h, 8);
        let backing_size = be32(&h, 16);
        let cluster_bits = be32(&h, 20);
        let virtual_size = be64(&h, 24);
        let crypt_method = be32(&h, 32);
        let l1_size = u64::from(be32(&h, 36));
        let l1_offset = be64(&h, 40);
        let (incompat, header_length, compression_type) = if version >= 3 {
            if h.len() < 104 {
                return Err(header_error(0, "a version 3 header needs 104 bytes"));
            }
            let hl = be32(&h, 100);
            let ct = if hl > 104 { byte(&h, 104) } else { 0 };
            (be64(&h, 72), hl, ct)
        } else {
            (0, 72, 0)
        };
        if !(MIN_CLUSTER_BITS..=MAX_CLUSTER_BITS).contains(&cluster_bits) {
            return Err(header_error(
                20,
                format!("cluster_bits is {cluster_bits}: clusters must be 2^9 to 2^21 bytes"),
            ));
        }
        if version >= 3 && (header_length < 104 || u64::from(header_length) > inner_len) {
            return Err(header_error(
                100,
                format!("header_length {header_length} (at least 104)"),
            ));
        }
        if backing_offset != 0 {
            let name = usize::try_from(backing_size.min(1023))
                .ok()
                .and_then(|n| read_inner(&inner, "qcow2 backing file name", backing_offset, n).ok())
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_else(|| "(name unreadable)".into());
            return Err(unsupported(
                8,
                format!(
                    "the image has a backing file {name:?}: the clusters it does not hold are in that file, which is not opened; \
                     open a flattened copy instead (qemu-img convert -O qcow2 IMAGE FLAT.qcow2)"
                ),
            ));
        }
        if crypt_method != 0 {
            let how = match crypt_method {
                1 => "AES",
                2 => "LUKS",
                _ => "an unknown method",
            };
            return Err(unsupported(32, format!("the image is encrypted ({how}, crypt_method {crypt_method}); encrypted images are not read")));
        }
        if incompat & INCOMPAT_DATA_FILE != 0 {
            return Err(unsupported(72, "the guest data is in an external data file (incompatible feature bit 2), which is not opened"));
        }
        let known = INCOMPAT_DIRTY
            | INCOMPAT_CORRUPT
            | INCOMPAT_DATA_FILE
            | INCOMPAT_COMPRESSION
            | INCOMPAT_EXTL2;
        if incompat & !known != 0 {
            return Err(unsupported(
                72,
                format!("unknown incompatible features {:#x}", incompat & !known),
            ));
        }
        let extended_l2 = incompat & INCOMPAT_EXTL2 != 0;
        let mut notes = Vec::new();
        if incompat & INCOMPAT_DIRTY != 0 {
            notes.push(
                "dirty: the refcounts may be out of date (the data is read as it is)".to_string(),
            );
        }
        if incompat & INCOMPAT_CORRUPT != 0 {
            notes.push("QEMU marked this image corrupt: its tables may be wrong".to_string());
        }
        let compression = if incompat & INCOMPAT_COMPRESSION != 0 {
            match compression_type {
                0 => "zlib".to_string(),
                1 => "zstd".to_string(),
                t => format!("unknown ({t})"),
            }
        } else {
            "zlib".to_string()
        };
        let entry_bits: u32 = if extended_l2 { 4 } else { 3 };
        let l2_bits = cluster_bits.saturating_sub(entry_bits);
        // Guest bytes one L1 entry covers: at most 2^(21 + 18) = 2^39.
        let per_l1 = 1u64
            .checked_shl(cluster_bits.saturating_add(l2_bits))
            .unwrap_or(u64::MAX);
        let needed = virtual_size.div_ceil(per_l1.max(1));
        if needed > MAX_L1_ENTRIES {
            return Err(unsupported(
                24,
                format!(
                    "virtual size {virtual_size} with {}-byte clusters needs {needed} L1 entries, more than QEMU allows ({MAX_L1_ENTRIES})",
                    1u64 << cluster_bits
                ),
            ));
        }
        if l1_size < needed {
            return Err(header_error(
                36,
                format!("l1_size is {l1_size} but the virtual size {virtual_size} needs {needed} entries"),
            ));
        }
        let cluster_size = 1u64 << cluster_bits;
        let l1_bytes = needed.saturating_mul(8);
        if l1_offset & (cluster_size.saturating_sub(1)) != 0 && needed > 0 {
            return Err(header_error(
                40,
                format!("l1_table_offset {l1_offset} is not cluster-aligned"),
            ));
        }
        if needed > 0
            && l1_offset
                .checked_add(l1_bytes)
                .is_none_or(|end| end > inner_len)
        {
            return Err(header_error(
                40,
                format!("the L1 table ({l1_bytes} bytes at byte {l1_offset}) lies beyond the end of the file ({inner_len} bytes)"),
            ));
        }
        let capacity = usize::try_from((TABLE_CACHE_BYTES >> cluster_bits).max(4)).unwrap_or(4);
        Ok(Qcow2 {
            inner,
            inner_len,
            info: Qcow2Info {
                version,
                cluster_size,
                virtual_size,
                file_size: inner_len,
                l1_entries: needed,
                extended_l2,
                compression,
                notes,
            },
            cluster_bits,
            l2_bits,
            l1_offset,
            extended_l2,
            cache: RefCell::new(TableCache {
                capacity,
                clock: 0,
                tables: HashMap::new(),
            }),
        })
    }

    pub fn info(&self) -> &Qcow2Info {
        &self.info
    }

    /// A table piece of `len` bytes at file offset `at`, from the cache or
    /// the file.
    fn table(&self, what: &str, at: u64, len: u64) -> Result<Rc<[u8]>, ReadError> {
        if let Some(t) = self.cache.borrow_mut().get((at, len)) {
            return Ok(t);
        }
        if at.checked_add(len).is_none_or(|end| end > self.inner_len) {
            return Err(ReadError(format!(
                "qcow2 {what} ({len} bytes at file byte {at}) lies beyond the end of the file ({} bytes)",
                self.inner_len
            )));
        }
        let size =
            usize::try_from(len).map_err(|_| ReadError(format!("qcow2 {what}: too large")))?;
        let mut buf = vec![0u8; size];
        self.inner
            .read_exact_at(at, &mut buf)
            .map_err(|e| ReadError(format!("qcow2 {what} at file byte {at}: {}", e.0)))?;
        let t: Rc<[u8]> = buf.into();
        self.cache.borrow_mut().put((at, len), Rc::clone(&t));
        Ok(t)
    }

    /// Where guest byte `pos` is, and how many bytes from it on map the
    /// same way (to the end of its cluster or subcluster).
    fn map(&self, pos: u64) -> Result<(Mapping, u64), ReadError> {
        let cluster_size = self.info.cluster_size;
        let in_cluster = pos & cluster_size.saturating_sub(1);
        let to_cluster_end = cluster_size.saturating_sub(in_cluster);
        let cluster = pos >> self.cluster_bits;
        let l1_index = cluster >> self.l2_bits;
        let l2_index = cluster & ((1u64 << self.l2_bits).saturating_sub(1));
        // The L1 table is read a cluster at a time.
        let l1_byte = l1_index.saturating_mul(8);
        let piece = l1_byte >> self.cluster_bits;
        let piece_start = piece << self.cluster_bits;
        let l1_bytes = self.info.l1_entries.saturating_mul(8);
        let piece_len = cluster_size.min(l1_bytes.saturating_sub(piece_start));
        let l1 = self.table(
            "L1 table",
            self.l1_offset.saturating_add(piece_start),
            piece_len,
        )?;
        let at = usize::try_from(l1_byte.saturating_sub(piece_start)).unwrap_or(usize::MAX);
        let l1_entry = be64(&l1, at);
        let l2_offset = l1_entry & OFFSET_MASK;
        if l2_offset == 0 {
            return Ok((Mapping::Zeros, to_cluster_end));
        }
        if l2_offset & cluster_size.saturating_sub(1) != 0 {
            return Err(ReadError(format!(
                "qcow2 L1 entry {l1_index}: L2 table offset {l2_offset} is not cluster-aligned"
            )));
        }
        let l2 = self.table("L2 table", l2_offset, cluster_size)?;
        let entry_bytes: u64 = if self.extended_l2 { 16 } else { 8 };
        let at = usize::try_from(l2_index.saturating_mul(entry_bytes)).unwrap_or(usize::MAX);
        let entry = be64(&l2, at);
        if entry & L2_COMPRESSED != 0 {
            return Err(ReadError(format!(
                "qcow2 L2 table at file byte {l2_offset}, entry {l2_index}: guest bytes {}..{} are a compressed cluster ({}), which this tool does not read; \
                 convert the image without compression (qemu-img convert -O qcow2 IMAGE OUT.qcow2)",
                pos.saturating_sub(in_cluster),
                pos.saturating_sub(in_cluster).saturating_add(cluster_size),
                self.info.compression
            )));
        }
        let host = entry & OFFSET_MASK;
        if self.extended_l2 {
            let bitmap = be64(&l2, at.saturating_add(8));
            let sub_size = cluster_size >> 5;
            let sub = u32::try_from(in_cluster.checked_div(sub_size).unwrap_or(0))
                .unwrap_or(0)
                .min(31);
            let to_sub_end = sub_size.saturating_sub(in_cluster.checked_rem(sub_size).unwrap_or(0));
            let zero = bitmap & (1u64 << (sub.saturating_add(32))) != 0;
            let alloc = bitmap & (1u64 << sub) != 0;
            if zero || !alloc || host == 0 {
                return Ok((Mapping::Zeros, to_sub_end));
            }
            return self.host(host, l2_offset, l2_index, in_cluster, to_sub_end);
        }
        if host == 0 || (self.info.version >= 3 && entry & L2_ZERO != 0) {
            return Ok((Mapping::Zeros, to_cluster_end));
        }
        self.host(host, l2_offset, l2_index, in_cluster, to_cluster_end)
    }

    fn host(
        &self,
        host: u64,
        l2_offset: u64,
        l2_index: u64,
        in_cluster: u64,
        run: u64,
    ) -> Result<(Mapping, u64), ReadError> {
        if host & self.info.cluster_size.saturating_sub(1) != 0 {
            return Err(ReadError(format!(
                "qcow2 L2 table at file byte {l2_offset}, entry {l2_index}: cluster offset {host} is not cluster-aligned"
            )));
        }
        Ok((Mapping::File(host.saturating_add(in_cluster)), run))
    }
}

impl<V: ReadAt> ReadAt for Qcow2<V> {
    fn len(&self) -> u64 {
        self.info.virtual_size
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let want = to_u64(buf.len());
        if offset
            .checked_add(want)
            .is_none_or(|end| end > self.info.virtual_size)
        {
            return Err(ReadError(format!(
                "qcow2 guest bytes {offset}+{want} lie beyond the virtual size {}",
                self.info.virtual_size
            )));
        }
        // Consecutive clusters that are consecutive in the file are read
        // with one call.
        let mut done: usize = 0;
        let mut run: Option<(u64, usize, usize)> = None; // (file offset, buf start, len)
        let flush = |run: &mut Option<(u64, usize, usize)>,
                     buf: &mut [u8]|
         -> Result<(), ReadError> {
            if let Some((at, start, len)) = run.take() {
                let end = start.saturating_add(len);
                let dst = buf
                    .get_mut(start..end)
                    .ok_or_else(|| ReadError("qcow2: bad run".into()))?;
                if at
                    .checked_add(to_u64(len))
                    .is_none_or(|e| e > self.inner_len)
                {
                    return Err(ReadError(format!(
                        "qcow2 data cluster at file byte {at} lies beyond the end of the file ({} bytes)",
                        self.inner_len
                    )));
                }
                self.inner.read_exact_at(at, dst)?;
            }
            Ok(())
        };
        while done < buf.len() {
            let pos = offset.saturating_add(to_u64(done));
            let (mapping, avail) = self.map(pos)?;
            let left = buf.len().saturating_sub(done);
            let n = usize::try_from(avail)
                .unwrap_or(usize::MAX)
                .min(left)
                .max(1);
            match mapping {
                Mapping::Zeros => {
                    flush(&mut run, buf)?;
                    if let Some(d) = buf.get_mut(done..done.saturating_add(n)) {
                        d.fill(0);
                    }
                }
                Mapping::File(at) => match &mut run {
                    Some((start, _, len)) if start.saturating_add(to_u64(*len)) == at => {
                        *len = len.saturating_add(n);
                    }
                    _ => {
                        flush(&mut run, buf)?;
                        run = Some((at, done, n));
                    }
                },
            }
            done = done.saturating_add(n);
        }
        flush(&mut run, buf)
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
pub(crate) mod tests {
    use super::*;

    /// A minimal qcow2 file: header, L1 at cluster 1, L2 at cluster 2, data
    /// from cluster 3 on; `map` gives (guest cluster, L2 entry).
    pub fn build(
        version: u32,
        cluster_bits: u32,
        virtual_size: u64,
        map: &[(u64, u64)],
    ) -> Vec<u8> {
        let cs = 1usize << cluster_bits;
        let mut f = vec![0u8; cs * 3];
        f[0..4].copy_from_slice(&MAGIC.to_be_bytes());
        f[4..8].copy_from_slice(&version.to_be_bytes());
        f[20..24].copy_from_slice(&cluster_bits.to_be_bytes());
        f[24..32].copy_from_slice(&virtual_size.to_be_bytes());
        let per_l1 = 1u64 << (cluster_bits + cluster_bits - 3);
        let l1_size = virtual_size.div_ceil(per_l1) as u32;
        f[36..40].copy_from_slice(&l1_size.to_be_bytes());
        f[40..48].copy_from_slice(&(cs as u64).to_be_bytes());
        if version >= 3 {
            f[100..104].copy_from_slice(&104u32.to_be_bytes());
        }
        // L1[0] -> L2 at cluster 2
        f[cs..cs + 8].copy_from_slice(&((2 * cs) as u64 | (1 << 63)).to_be_bytes());
        for (guest, entry) in map {
            let at = 2 * cs + *guest as usize * 8;
            f[at..at + 8].copy_from_slice(&entry.to_be_bytes());
        }
        f
    }

    #[test]
    fn maps_clusters_and_reads_zeros_for_holes() {
        let cs = 512u64;
        // guest cluster 0 -> file cluster 3, cluster 1 -> file cluster 4
        // (consecutive), cluster 3 -> file cluster 5, cluster 2 unallocated,
        // cluster 4 all zeros (v3 flag) though it points at data.
        let mut f = build(
            3,
            9,
            8 * cs,
            &[(0, 3 * cs), (1, 4 * cs), (3, 5 * cs), (4, (5 * cs) | 1)],
        );
        f.resize(6 * cs as usize, 0);
        for (i, b) in f[3 * cs as usize..].iter_mut().enumerate() {
            *b = (i / 512) as u8 + 1;
        }
        let q = Qcow2::open(f).unwrap();
        assert_eq!(q.len(), 8 * cs);
        let mut buf = vec![0xeeu8; 5 * cs as usize];
        q.read_exact_at(0, &mut buf).unwrap();
        assert!(buf[..512].iter().all(|b| *b == 1));
        assert!(buf[512..1024].iter().all(|b| *b == 2));
        assert!(buf[1024..1536].iter().all(|b| *b == 0));
        assert!(buf[1536..2048].iter().all(|b| *b == 3));
        assert!(buf[2048..].iter().all(|b| *b == 0));
        let mut tail = [9u8; 10];
        q.read_exact_at(8 * cs - 10, &mut tail).unwrap();
        assert!(q.read_exact_at(8 * cs - 5, &mut tail).is_err());
    }

    fn err(f: Vec<u8>) -> String {
        match Qcow2::open(f) {
            Ok(_) => panic!("opened"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn hostile_headers_are_refused_with_the_field() {
        let good = build(3, 9, 4096, &[]);
        let mut f = good.clone();
        f[20..24].copy_from_slice(&40u32.to_be_bytes());
        assert!(err(f).contains("cluster_bits is 40"));
        let mut f = good.clone();
        f[20..24].copy_from_slice(&8u32.to_be_bytes());
        assert!(err(f).contains("cluster_bits is 8"));
        // A virtual size no L1 table can cover.
        let mut f = good.clone();
        f[24..32].copy_from_slice(&u64::MAX.to_be_bytes());
        f[36..40].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(err(f).contains("L1 entries"), "huge");
        // An L1 table too small for the size, and one past the file's end.
        let mut f = good.clone();
        f[24..32].copy_from_slice(&(1u64 << 20).to_be_bytes());
        assert!(err(f).contains("l1_size is 1"));
        let mut f = good.clone();
        f[40..48].copy_from_slice(&(1u64 << 40).to_be_bytes());
        assert!(err(f).contains("beyond the end"));
        let mut f = good.clone();
        f[4..8].copy_from_slice(&4u32.to_be_bytes());
        assert!(err(f).contains("version 4"));
        let mut f = good.clone();
        f[32..36].copy_from_slice(&2u32.to_be_bytes());
        assert!(err(f).contains("encrypted (LUKS"));
        let mut f = good.clone();
        f[72..80].copy_from_slice(&(1u64 << 2).to_be_bytes());
        assert!(err(f).contains("external data file"));
        let mut f = good.clone();
        f[72..80].copy_from_slice(&(1u64 << 9).to_be_bytes());
        assert!(err(f).contains("unknown incompatible"));
        let mut f = good.clone();
        f[8..16].copy_from_slice(&200u64.to_be_bytes());
        f[16..20].copy_from_slice(&4u32.to_be_bytes());
        f[200..204].copy_from_slice(b"base");
        assert!(err(f).contains("backing file \"base\""));
        assert!(err(good[..60].to_vec()).contains("shorter"));
    }

    #[test]
    fn hostile_tables_fail_the_read_not_the_process() {
        let cs = 4096u64;
        // Compressed cluster, misaligned cluster, cluster past the file's end.
        let f = build(
            3,
            12,
            8 * cs,
            &[
                (0, L2_COMPRESSED | (3 * cs)),
                (1, 3 * cs + 512),
                (2, 1 << 50),
            ],
        );
        let q = Qcow2::open(f).unwrap();
        let mut b = [0u8; 16];
        let e = q.read_exact_at(0, &mut b).unwrap_err().0;
        assert!(e.contains("compressed cluster"), "{e}");
        let e = q.read_exact_at(cs, &mut b).unwrap_err().0;
        assert!(e.contains("not cluster-aligned"), "{e}");
        let e = q.read_exact_at(2 * cs, &mut b).unwrap_err().0;
        assert!(e.contains("beyond the end of the file"), "{e}");
        // An L1 entry pointing past the end of the file.
        let mut f = build(3, 9, 8 * cs, &[]);
        f[512..520].copy_from_slice(&(1u64 << 40).to_be_bytes());
        let q = Qcow2::open(f).unwrap();
        let e = q.read_exact_at(0, &mut b).unwrap_err().0;
        assert!(e.contains("L2 table"), "{e}");
    }

    #[test]
    fn a_huge_sparse_image_opens_without_reading_its_tables() {
        // 2^50 bytes with 2 MiB clusters: 4096 L1 entries, nothing allocated.
        let cb = 21u32;
        let cs = 1usize << cb;
        let vs = 1u64 << 50;
        let mut f = vec![0u8; 2 * cs];
        f[0..4].copy_from_slice(&MAGIC.to_be_bytes());
        f[4..8].copy_from_slice(&2u32.to_be_bytes());
        f[20..24].copy_from_slice(&cb.to_be_bytes());
        f[24..32].copy_from_slice(&vs.to_be_bytes());
        f[36..40].copy_from_slice(&4096u32.to_be_bytes());
        f[40..48].copy_from_slice(&(cs as u64).to_be_bytes());
        let q = Qcow2::open(f).unwrap();
        let mut b = vec![1u8; 4096];
        q.read_exact_at(vs - 4096, &mut b).unwrap();
        assert!(b.iter().all(|x| *x == 0));
    }
}
