//! What holds the filesystem: a plain XFS image, a disk with an MBR or a
//! GPT partition table, or a qcow2 image of either, found from the first
//! bytes without asking. Each layer is a [`ReadAt`] over the one below: a
//! partition is a byte window of its disk, a qcow2 image maps guest offsets
//! to the file's clusters. Nothing is read before a read needs it, so a
//! 100 GiB qcow2 opens after reading its header, its partition table and
//! one sector per partition.
//!
//! When the table holds exactly one XFS filesystem it is opened; with
//! several, or none, the caller picks a partition by its number (as the
//! table numbers them: GPT entries from 1, MBR primaries 1 to 4 by slot,
//! logical partitions from 5).

pub(crate) mod bytes;
pub mod gpt;
pub mod mbr;
pub mod metadump;
pub mod qcow2;

use crate::xfs::error::{Error, Result};
use crate::xfs::read::{ReadAt, ReadError};
use bytes::to_u64;
use metadump::{Metadump, MetadumpInfo};
use qcow2::{Qcow2, Qcow2Info};
use serde::{Deserialize, Serialize};
use std::rc::Rc;

/// qcow2 images inside qcow2 images followed at most.
const MAX_QCOW2_DEPTH: usize = 4;
/// Partitions whose first sector is read for the XFS magic, at most.
const MAX_PROBED: usize = 4096;

/// The XFS superblock magic, "XFSB".
/// The superblock magic as it stands at byte 0.
const XFS_MAGIC: &[u8; 4] = &crate::xfs::format::sb::XFS_SB_MAGIC.to_be_bytes();

/// The kind of partition table.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    Mbr,
    Gpt,
}

impl Scheme {
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Mbr => "MBR",
            Scheme::Gpt => "GPT",
        }
    }
}

/// One partition as its table describes it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// The number the table gives it (Linux's `sdaN`).
    pub number: u32,
    /// First sector and sector count, in the table's logical sectors.
    pub start_lba: u64,
    pub sectors: u64,
    /// The same in bytes of the disk.
    pub start: u64,
    pub size: u64,
    /// The type: a GUID (GPT) or a byte like `0x83` (MBR).
    pub type_id: String,
    /// What that type is called ("Linux filesystem", "Linux swap"...).
    pub type_name: String,
    /// The GPT partition name (empty for MBR).
    pub name: String,
    /// The GPT unique partition GUID.
    pub guid: Option<String>,
    /// MBR active flag; GPT legacy BIOS bootable attribute.
    pub bootable: bool,
    /// An MBR extended partition (a container of logical ones).
    pub extended: bool,
    /// An MBR logical partition.
    pub logical: bool,
    /// Whether its first bytes are the XFS superblock magic.
    pub xfs: bool,
    /// What is wrong with it (out of the disk, overlapping another...).
    pub problems: Vec<String>,
}

impl Partition {
    /// Whether it lies inside the disk and can be opened.
    pub fn readable(&self, disk_size: u64) -> bool {
        !self.extended
            && self.size > 0
            && self
                .start
                .checked_add(self.size)
                .is_some_and(|end| end <= disk_size)
    }

    fn label(&self) -> String {
        let mut s = format!("partition {} ({}", self.number, self.type_name);
        if !self.name.is_empty() {
            s.push_str(&format!(" {:?}", self.name));
        }
        s.push_str(&format!(
            ", bytes {}..{})",
            self.start,
            self.start.saturating_add(self.size)
        ));
        s
    }
}

/// A partition table and its partitions.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct PartitionTable {
    pub scheme: Scheme,
    /// Bytes per logical sector (512 for MBR; 512 or 4096 for GPT).
    pub sector_size: u64,
    /// The disk GUID (GPT) or the disk identifier (MBR, hex).
    pub id: String,
    /// The size of the disk the table is on, in bytes.
    pub disk_size: u64,
    pub first_usable_lba: Option<u64>,
    pub last_usable_lba: Option<u64>,
    /// In table order (MBR: primaries, then logical partitions).
    pub partitions: Vec<Partition>,
    /// Damage that does not stop reading (a backup header used, an EBR
    /// chain cut short).
    pub notes: Vec<String>,
}

/// How the filesystem was found: the qcow2 layers (outermost first), the
/// partition table, and the partition opened.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct Layout {
    pub qcow2: Vec<Qcow2Info>,
    /// A metadump read in place (the filesystem it holds, sparse).
    pub metadump: Option<MetadumpInfo>,
    pub table: Option<PartitionTable>,
    /// The partition opened, by number.
    pub partition: Option<u32>,
    /// Where the filesystem starts on the disk under the table, and the
    /// bytes it can use.
    pub offset: u64,
    pub size: u64,
}

impl Layout {
    /// The chain in words: `qcow2 v3 > GPT > partition 1`, or `plain` for
    /// a filesystem image.
    pub fn chain(&self) -> String {
        let mut parts: Vec<String> = self
            .qcow2
            .iter()
            .map(|q| format!("qcow2 v{}", q.version))
            .collect();
        if let Some(m) = &self.metadump {
            parts.push(format!("metadump v{}", m.version));
        }
        if let Some(t) = &self.table {
            parts.push(t.scheme.name().to_string());
            if let Some(n) = self.partition {
                parts.push(format!("partition {n}"));
            }
        }
        if parts.is_empty() {
            "plain".to_string()
        } else {
            parts.join(" > ")
        }
    }
}

/// A reader stack: the host reader, byte windows (partitions) and qcow2
/// images over it. Cheap to clone (the layers are shared).
pub struct Volume<R: ReadAt>(Rc<Node<R>>);

impl<R: ReadAt> Clone for Volume<R> {
    fn clone(&self) -> Self {
        Volume(Rc::clone(&self.0))
    }
}

enum Node<R: ReadAt> {
    Whole {
        reader: R,
        len: u64,
    },
    Window {
        inner: Volume<R>,
        start: u64,
        len: u64,
    },
    Qcow2(Qcow2<Volume<R>>),
    Metadump(Metadump<Volume<R>>),
    /// The external log device a metadump holds (the volume is the dump's).
    MetadumpLog(Volume<R>),
}

impl<R: ReadAt> Volume<R> {
    /// The host reader as it is.
    pub fn whole(reader: R) -> Self {
        let len = reader.len();
        Volume(Rc::new(Node::Whole { reader, len }))
    }

    /// The external log device held in this volume's metadump (version 2,
    /// dumped with `-l`), if it holds one.
    pub fn metadump_log(&self) -> Option<Self> {
        match &*self.0 {
            Node::Metadump(m) if m.log_len() > 0 => {
                Some(Volume(Rc::new(Node::MetadumpLog(self.clone()))))
            }
            _ => None,
        }
    }

    /// Bytes `start..start + len` of this volume.
    pub fn window(&self, start: u64, len: u64) -> Result<Self> {
        let total = self.len();
        if start.checked_add(len).is_none_or(|end| end > total) {
            return Err(Error::OutOfBounds {
                structure: "partition",
                offset: start,
                len,
                image_len: total,
            });
        }
        Ok(Volume(Rc::new(Node::Window {
            inner: self.clone(),
            start,
            len,
        })))
    }
}

impl<R: ReadAt> ReadAt for Volume<R> {
    fn len(&self) -> u64 {
        match &*self.0 {
            Node::Whole { len, .. } | Node::Window { len, .. } => *len,
            Node::Qcow2(q) => q.len(),
            Node::Metadump(m) => m.len(),
            Node::MetadumpLog(v) => match &*v.0 {
                Node::Metadump(m) => m.log_len(),
                _ => 0,
            },
        }
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let want = to_u64(buf.len());
        let len = self.len();
        if offset.checked_add(want).is_none_or(|end| end > len) {
            return Err(ReadError(format!(
                "bytes {offset}+{want} lie beyond the end ({len} bytes)"
            )));
        }
        match &*self.0 {
            Node::Whole { reader, .. } => reader.read_exact_at(offset, buf),
            Node::Window { inner, start, .. } => {
                inner.read_exact_at(start.saturating_add(offset), buf)
            }
            Node::Qcow2(q) => q.read_exact_at(offset, buf),
            Node::Metadump(m) => m.read_exact_at(offset, buf),
            Node::MetadumpLog(v) => match &*v.0 {
                Node::Metadump(m) => m.read_log_at(offset, buf),
                _ => Err(ReadError("not a metadump".into())),
            },
        }
    }
}

/// Read `len` bytes at `offset` of `r`, checked against its length.
pub(crate) fn read_at<R: ReadAt + ?Sized>(
    r: &R,
    structure: &'static str,
    offset: u64,
    len: usize,
) -> Result<Vec<u8>> {
    let n = to_u64(len);
    let total = r.len();
    if offset.checked_add(n).is_none_or(|end| end > total) {
        return Err(Error::OutOfBounds {
            structure,
            offset,
            len: n,
            image_len: total,
        });
    }
    let mut buf = vec![0u8; len];
    r.read_exact_at(offset, &mut buf).map_err(|e| Error::Io {
        offset,
        len: n,
        message: e.0,
    })?;
    Ok(buf)
}

/// A disk whose layers and partition table are known, before a partition
/// is chosen.
pub struct Disk<R: ReadAt> {
    /// The disk the table describes (under any qcow2 layers).
    disk: Volume<R>,
    layout: Layout,
}

/// The filesystem `fs` with the external log device its metadump holds
/// beside it, when its log is external and no log device was given.
pub fn with_embedded_log<R: ReadAt>(
    fs: crate::xfs::fs::Fs<Volume<R>>,
) -> crate::xfs::fs::Fs<Volume<R>> {
    if fs.logdev.is_some() || !fs.has_external_log() {
        return fs;
    }
    match fs.img.reader().metadump_log() {
        Some(log) => fs.with_logdev(crate::xfs::image::Image::new(log)),
        None => fs,
    }
}

/// Find the layers of `reader`: qcow2 images, then a partition table.
/// A plain filesystem (or anything unrecognised) has neither; the
/// superblock reader then says what it found.
pub fn detect<R: ReadAt>(reader: R) -> Result<Disk<R>> {
    let mut disk = Volume::whole(reader);
    let mut layout = Layout::default();
    let mut depth = 0usize;
    loop {
        let head = first_bytes(&disk)?;
        if !qcow2::is_qcow2(&head) {
            break;
        }
        if depth >= MAX_QCOW2_DEPTH {
            return Err(Error::Unsupported {
                structure: "qcow2 header",
                location: crate::xfs::error::Location::Bytes { offset: 0, len: 4 },
                detail: format!("qcow2 images nested more than {MAX_QCOW2_DEPTH} deep"),
            });
        }
        let q = Qcow2::open(disk.clone())?;
        layout.qcow2.push(q.info().clone());
        disk = Volume(Rc::new(Node::Qcow2(q)));
        depth = depth.saturating_add(1);
    }
    let mut head = first_bytes(&disk)?;
    if metadump::is_metadump(&head) {
        let m = Metadump::open(disk.clone())?;
        layout.metadump = Some(m.info().clone());
        disk = Volume(Rc::new(Node::Metadump(m)));
        head = first_bytes(&disk)?;
    }
    layout.size = disk.len();
    if head.get(0..4) == Some(XFS_MAGIC.as_slice()) || layout.metadump.is_some() {
        return Ok(Disk { disk, layout });
    }
    let mbr_here = mbr::looks_like_mbr(&head);
    let plain_mbr = mbr_here && !mbr::is_protective(&head);
    let table = if plain_mbr {
        // The MBR counts in the disk's sectors without saying their size:
        // 512 bytes, unless no partition holds XFS that way and some does
        // in 4096-byte sectors.
        let mut t = mbr::parse(&disk, &head, 512)?;
        finish_table(&disk, &mut t);
        if !t.partitions.iter().any(|p| p.xfs) {
            if let Ok(mut t4) = mbr::parse(&disk, &head, 4096) {
                finish_table(&disk, &mut t4);
                if t4.partitions.iter().any(|p| p.xfs) {
                    t4.notes.push(
                        "the table counts in 4096-byte sectors (XFS is found there, not at 512-byte sectors)"
                            .to_string(),
                    );
                    t = t4;
                }
            }
        }
        Some(t)
    } else if let Some(ss) = gpt::sector_size_of(&disk) {
        Some(gpt::parse(&disk, ss)?)
    } else if mbr_here {
        // A protective MBR without a GPT header signature at LBA 1: the
        // backup header may still be there.
        let first = gpt::parse(&disk, 512);
        match first {
            Ok(t) => Some(t),
            Err(e) => Some(gpt::parse(&disk, 4096).map_err(|_| e)?),
        }
    } else {
        None
    };
    if let Some(mut t) = table {
        // (an MBR's was finished above, to find its sector size)
        if !plain_mbr {
            finish_table(&disk, &mut t);
        }
        layout.table = Some(t);
    }
    Ok(Disk { disk, layout })
}

/// The first sector's bytes (fewer for a tiny file).
fn first_bytes<R: ReadAt>(v: &Volume<R>) -> Result<Vec<u8>> {
    let n = usize::try_from(v.len().min(512)).unwrap_or(512);
    read_at(v, "first sector", 0, n)
}

/// Byte ranges, range and overlap checks, and the XFS magic of each.
fn finish_table<R: ReadAt>(disk: &Volume<R>, t: &mut PartitionTable) {
    let disk_size = t.disk_size;
    let ss = t.sector_size;
    for p in &mut t.partitions {
        match (p.start_lba.checked_mul(ss), p.sectors.checked_mul(ss)) {
            (Some(start), Some(size)) => {
                p.start = start;
                p.size = size;
                if start.checked_add(size).is_none_or(|end| end > disk_size) {
                    p.problems.push(format!(
                        "ends at byte {}, past the end of the disk ({disk_size} bytes)",
                        start.saturating_add(size)
                    ));
                }
            }
            _ => {
                p.start = u64::MAX;
                p.size = 0;
                p.problems.push(format!(
                    "sectors {}+{} are past any disk",
                    p.start_lba, p.sectors
                ));
            }
        }
    }
    // Overlaps, by a sweep in start order (extended partitions hold their
    // logical ones and are left out).
    let mut order: Vec<usize> = (0..t.partitions.len())
        .filter(|i| {
            t.partitions
                .get(*i)
                .is_some_and(|p| !p.extended && p.size > 0)
        })
        .collect();
    crate::xfs::sort::by_key(&mut order, |i| {
        u128::from(t.partitions.get(*i).map_or(0, |p| p.start))
    });
    let mut reach: Option<(u64, u32)> = None; // furthest end so far, and whose
    let mut found: Vec<(usize, u32)> = Vec::new();
    for i in order {
        let Some(p) = t.partitions.get(i) else {
            continue;
        };
        let end = p.start.saturating_add(p.size);
        if let Some((r_end, r_num)) = reach {
            if p.start < r_end {
                found.push((i, r_num));
            }
            if end > r_end {
                reach = Some((end, p.number));
            }
        } else {
            reach = Some((end, p.number));
        }
    }
    for (i, other) in found {
        if let Some(p) = t.partitions.get_mut(i) {
            p.problems.push(format!("overlaps partition {other}"));
        }
    }
    for p in t.partitions.iter_mut().take(MAX_PROBED) {
        if p.readable(disk_size) {
            p.xfs = read_at(disk, "partition's first sector", p.start, 4)
                .map(|b| b.as_slice() == XFS_MAGIC)
                .unwrap_or(false);
        }
    }
}

impl<R: ReadAt> Disk<R> {
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The disk the partition table is on (the guest disk of a qcow2
    /// image, the filesystem of a metadump).
    pub fn disk(&self) -> &Volume<R> {
        &self.disk
    }

    /// The volume that holds the filesystem, and the layout with the
    /// partition chosen: `choice`, or the one XFS partition of the table.
    pub fn choose(&self, choice: Option<u32>) -> Result<(Volume<R>, Layout)> {
        let mut layout = self.layout.clone();
        let Some(t) = &self.layout.table else {
            if let Some(n) = choice {
                return Err(Error::Partition(format!(
                    "partition {n} was asked for, but the image holds no partition table ({})",
                    self.layout.chain()
                )));
            }
            return Ok((self.disk.clone(), layout));
        };
        let what = t.scheme.name();
        let p = match choice {
            Some(n) => {
                let Some(p) = t.partitions.iter().find(|p| p.number == n) else {
                    let have: Vec<String> =
                        t.partitions.iter().map(|p| p.number.to_string()).collect();
                    return Err(Error::Partition(format!(
                        "the {what} has no partition {n}; its partitions are {}",
                        if have.is_empty() {
                            "none".to_string()
                        } else {
                            have.join(", ")
                        }
                    )));
                };
                p
            }
            None => {
                let xfs: Vec<&Partition> = t.partitions.iter().filter(|p| p.xfs).collect();
                match xfs.as_slice() {
                    [one] => *one,
                    [] => {
                        let list: Vec<String> = t.partitions.iter().map(Partition::label).collect();
                        return Err(Error::Partition(format!(
                            "the {what} has no partition that holds an XFS filesystem{}",
                            if list.is_empty() {
                                " (it has no partitions)".to_string()
                            } else {
                                format!(": {}", list.join("; "))
                            }
                        )));
                    }
                    several => {
                        let nums: Vec<String> =
                            several.iter().map(|p| p.number.to_string()).collect();
                        return Err(Error::Partition(format!(
                            "the {what} has {} partitions that hold an XFS filesystem ({}): choose one",
                            several.len(),
                            nums.join(", ")
                        )));
                    }
                }
            }
        };
        if p.extended {
            return Err(Error::Partition(format!(
                "{} is an extended partition: it holds the logical partitions (5 on), not a filesystem",
                p.label()
            )));
        }
        if !p.readable(t.disk_size) {
            return Err(Error::Partition(format!(
                "{} cannot be opened: {}",
                p.label(),
                if p.problems.is_empty() {
                    "it is empty".to_string()
                } else {
                    p.problems.join("; ")
                }
            )));
        }
        if !p.xfs {
            let magic = read_at(&self.disk, "partition's first sector", p.start, 4)
                .map(|b| bytes::be32(&b, 0))
                .unwrap_or(0);
            return Err(Error::Partition(format!(
                "{} does not hold an XFS filesystem: its first bytes are {magic:#010x}, not 0x58465342 (\"XFSB\")",
                p.label()
            )));
        }
        layout.partition = Some(p.number);
        layout.offset = p.start;
        layout.size = p.size;
        Ok((self.disk.window(p.start, p.size)?, layout))
    }
}

/// [`detect`] then [`Disk::choose`].
pub fn open<R: ReadAt>(reader: R, choice: Option<u32>) -> Result<(Volume<R>, Layout)> {
    detect(reader)?.choose(choice)
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

    const SS: usize = 512;

    fn xfs_at(disk: &mut [u8], byte: usize) {
        disk[byte..byte + 4].copy_from_slice(XFS_MAGIC);
    }

    /// A disk of `sectors` with a protective MBR and a GPT of `n_entries`
    /// entries of 128 bytes at LBA 2; `parts` are (first LBA, last LBA).
    fn gpt_disk(ss: usize, sectors: usize, parts: &[(u64, u64)], n_entries: u32) -> Vec<u8> {
        let mut d = vec![0u8; ss * sectors];
        d[446 + 4] = 0xee;
        d[446 + 8..446 + 12].copy_from_slice(&1u32.to_le_bytes());
        d[446 + 12..446 + 16].copy_from_slice(&((sectors - 1) as u32).to_le_bytes());
        d[510] = 0x55;
        d[511] = 0xaa;
        let mut arr = vec![0u8; 128 * n_entries.min(1024) as usize];
        for (i, (first, last)) in parts.iter().enumerate() {
            let e = &mut arr[i * 128..i * 128 + 128];
            e[0] = 0xaf; // any non-zero type GUID
            e[16] = i as u8 + 1;
            e[32..40].copy_from_slice(&first.to_le_bytes());
            e[40..48].copy_from_slice(&last.to_le_bytes());
            e[56] = b'p';
        }
        let arr_at = 2 * ss;
        let room = d.len() - arr_at;
        let n = arr.len().min(room);
        d[arr_at..arr_at + n].copy_from_slice(&arr[..n]);
        let h = &mut d[ss..ss + 92];
        h[0..8].copy_from_slice(gpt::SIGNATURE);
        h[8..12].copy_from_slice(&0x0001_0000u32.to_le_bytes());
        h[12..16].copy_from_slice(&92u32.to_le_bytes());
        h[24..32].copy_from_slice(&1u64.to_le_bytes());
        h[32..40].copy_from_slice(&((sectors - 1) as u64).to_le_bytes());
        h[40..48].copy_from_slice(&34u64.to_le_bytes());
        h[48..56].copy_from_slice(&((sectors - 34) as u64).to_le_bytes());
        h[72..80].copy_from_slice(&2u64.to_le_bytes());
        h[80..84].copy_from_slice(&n_entries.to_le_bytes());
        h[84..88].copy_from_slice(&128u32.to_le_bytes());
        h[88..92].copy_from_slice(&crc32fast::hash(&arr).to_le_bytes());
        let crc = crc32fast::hash(h);
        h[16..20].copy_from_slice(&crc.to_le_bytes());
        d
    }

    fn err<T>(r: Result<T>) -> String {
        match r {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_gpt_opens_its_one_xfs_partition() {
        let mut d = gpt_disk(SS, 400, &[(40, 99), (100, 199)], 128);
        xfs_at(&mut d, 100 * SS);
        d[100 * SS + 4] = 7;
        let (v, layout) = open(d, None).unwrap();
        assert_eq!(layout.partition, Some(2));
        assert_eq!(layout.offset, 100 * SS as u64);
        assert_eq!(v.len(), 100 * SS as u64);
        let mut b = [0u8; 5];
        v.read_exact_at(0, &mut b).unwrap();
        assert_eq!(&b, b"XFSB\x07");
        assert!(v.read_exact_at(100 * SS as u64 - 2, &mut b).is_err());
        let t = layout.table.unwrap();
        assert_eq!(t.partitions.len(), 2);
        assert_eq!(t.partitions[0].name, "p");
        assert!(!t.partitions[0].xfs && t.partitions[1].xfs);
        assert_eq!(layout.qcow2.len(), 0);
    }

    #[test]
    fn gpt_on_4096_byte_sectors() {
        let mut d = gpt_disk(4096, 64, &[(8, 39)], 128);
        xfs_at(&mut d, 8 * 4096);
        let (_, layout) = open(d, None).unwrap();
        assert_eq!(layout.table.as_ref().unwrap().sector_size, 4096);
        assert_eq!(layout.offset, 8 * 4096);
        assert_eq!(layout.size, 32 * 4096);
    }

    #[test]
    fn bad_crcs_fall_back_to_nothing_and_say_so() {
        let mut d = gpt_disk(SS, 400, &[(40, 99)], 128);
        d[SS + 40] ^= 1; // header changed after its CRC
        let e = err(open(d, None));
        assert!(e.contains("header CRC32"), "{e}");
        assert!(e.contains("backup at LBA 399"), "{e}");
        let mut d = gpt_disk(SS, 400, &[(40, 99)], 128);
        d[2 * SS + 33] ^= 1; // an entry changed after the array's CRC
        let e = err(open(d, None));
        assert!(e.contains("GPT partition entry array"), "{e}");
    }

    #[test]
    fn the_backup_gpt_is_read_when_the_primary_is_damaged() {
        let ss = SS;
        let mut d = gpt_disk(ss, 400, &[(40, 99)], 4);
        xfs_at(&mut d, 40 * ss);
        // Copy the header to the last LBA as a backup (its array stays at
        // LBA 2), then damage the primary.
        let mut h = d[ss..ss + 92].to_vec();
        h[24..32].copy_from_slice(&399u64.to_le_bytes());
        h[32..40].copy_from_slice(&1u64.to_le_bytes());
        h[16..20].fill(0);
        let crc = crc32fast::hash(&h);
        h[16..20].copy_from_slice(&crc.to_le_bytes());
        d[399 * ss..399 * ss + 92].copy_from_slice(&h);
        d[ss] = b'X';
        let (_, layout) = open(d, None).unwrap();
        let t = layout.table.unwrap();
        assert!(t.notes[0].contains("backup"), "{:?}", t.notes);
        assert_eq!(layout.partition, Some(1));
    }

    #[test]
    fn huge_entry_counts_and_sizes_are_refused() {
        let d = gpt_disk(SS, 400, &[], u32::MAX);
        let e = err(open(d, None));
        assert!(e.contains("4294967295 partition entries"), "{e}");
        let mut d = gpt_disk(SS, 400, &[], 4);
        d[SS + 84..SS + 88].copy_from_slice(&100u32.to_le_bytes());
        d[SS + 16..SS + 20].fill(0);
        let crc = crc32fast::hash(&d[SS..SS + 92]);
        d[SS + 16..SS + 20].copy_from_slice(&crc.to_le_bytes());
        let e = err(open(d, None));
        assert!(e.contains("entry size 100"), "{e}");
    }

    #[test]
    fn out_of_range_and_overlapping_partitions_are_named() {
        // 1: fine; 2 overlaps 1; 3 ends past the disk; 4 ends before it
        // starts; 5 has LBAs whose byte offset overflows.
        let mut d = gpt_disk(
            SS,
            400,
            &[
                (40, 99),
                (90, 120),
                (300, 5000),
                (200, 150),
                (u64::MAX / 2, u64::MAX - 1),
            ],
            128,
        );
        xfs_at(&mut d, 40 * SS);
        xfs_at(&mut d, 90 * SS);
        let disk = detect(d).unwrap();
        let t = disk.layout().table.clone().unwrap();
        let p = |n: u32| t.partitions.iter().find(|p| p.number == n).unwrap().clone();
        assert!(
            p(2).problems
                .iter()
                .any(|s| s.contains("overlaps partition 1")),
            "{:?}",
            p(2)
        );
        assert!(
            p(3).problems
                .iter()
                .any(|s| s.contains("past the end of the disk")),
            "{:?}",
            p(3)
        );
        assert!(
            p(4).problems.iter().any(|s| s.contains("before it starts")),
            "{:?}",
            p(4)
        );
        assert!(
            p(5).problems.iter().any(|s| s.contains("past any disk")),
            "{:?}",
            p(5)
        );
        assert!(p(1).xfs && p(2).xfs && !p(3).xfs);
        // Two XFS partitions: a choice is needed.
        let e = err(disk.choose(None));
        assert!(
            e.contains("2 partitions that hold an XFS filesystem (1, 2)"),
            "{e}"
        );
        assert_eq!(disk.choose(Some(1)).unwrap().1.partition, Some(1));
        let e = err(disk.choose(Some(3)));
        assert!(
            e.contains("cannot be opened") && e.contains("past the end"),
            "{e}"
        );
        let e = err(disk.choose(Some(9)));
        assert!(
            e.contains("no partition 9; its partitions are 1, 2, 3, 4, 5"),
            "{e}"
        );
    }

    fn mbr_entry(d: &mut [u8], at: usize, slot: usize, kind: u8, start: u32, sectors: u32) {
        let e = at + 446 + slot * 16;
        d[e + 4] = kind;
        d[e + 8..e + 12].copy_from_slice(&start.to_le_bytes());
        d[e + 12..e + 16].copy_from_slice(&sectors.to_le_bytes());
        d[at + 510] = 0x55;
        d[at + 511] = 0xaa;
    }

    #[test]
    fn mbr_logical_partitions_are_numbered_from_5_and_loops_end() {
        let mut d = vec![0u8; SS * 200];
        mbr_entry(&mut d, 0, 0, 0x83, 10, 20);
        mbr_entry(&mut d, 0, 2, 0x05, 50, 150);
        // EBR at 50: logical at 50+2, next EBR at 50+60; that one points
        // back to the first (a loop).
        mbr_entry(&mut d, 50 * SS, 0, 0x83, 2, 40);
        mbr_entry(&mut d, 50 * SS, 1, 0x05, 60, 40);
        mbr_entry(&mut d, 110 * SS, 0, 0x82, 2, 30);
        xfs_at(&mut d, 52 * SS);
        let (v, layout) = open(d.clone(), None).unwrap();
        assert_eq!(layout.partition, Some(5));
        assert_eq!(v.len(), 40 * SS as u64);
        let t = layout.table.unwrap();
        let nums: Vec<u32> = t.partitions.iter().map(|p| p.number).collect();
        assert_eq!(nums, [1, 3, 5, 6]);
        assert_eq!(t.partitions[3].start, 112 * SS as u64);
        // Now make the second EBR point back at the first.
        mbr_entry(&mut d, 110 * SS, 1, 0x05, 0, 10);
        let t = detect(d).unwrap().layout().table.clone().unwrap();
        assert!(
            t.notes.iter().any(|n| n.contains("loops back")),
            "{:?}",
            t.notes
        );
        assert_eq!(t.partitions.len(), 4);
    }

    #[test]
    fn a_long_ebr_chain_is_cut() {
        // Every EBR points to the next sector: 1000 logical partitions.
        let n = 1000usize;
        let mut d = vec![0u8; SS * (n + 20)];
        mbr_entry(&mut d, 0, 0, 0x05, 1, (n + 10) as u32);
        for i in 0..n {
            mbr_entry(&mut d, (1 + i) * SS, 0, 0x83, 0, 0); // empty data entry
            mbr_entry(&mut d, (1 + i) * SS, 0, 0x83, 1, 1);
            mbr_entry(&mut d, (1 + i) * SS, 1, 0x05, (i + 1) as u32, 1);
        }
        let t = detect(d).unwrap().layout().table.clone().unwrap();
        assert!(t.partitions.len() <= 260, "{}", t.partitions.len());
        assert!(
            t.notes.iter().any(|n| n.contains("past 256")),
            "{:?}",
            t.notes
        );
    }

    #[test]
    fn plain_and_unknown_images_pass_through() {
        let mut d = vec![0u8; 8192];
        xfs_at(&mut d, 0);
        let (v, layout) = open(d.clone(), None).unwrap();
        assert_eq!(v.len(), 8192);
        assert_eq!(layout.chain(), "plain");
        assert!(err(open(d, Some(1))).contains("no partition table"));
        let (v, _) = open(vec![1u8; 3], None).unwrap();
        assert_eq!(v.len(), 3);
        let (v, _) = open(Vec::<u8>::new(), None).unwrap();
        assert_eq!(v.len(), 0);
    }

    #[test]
    fn qcow2_holding_a_gpt_disk() {
        let cs = 1024u64;
        let mut disk = gpt_disk(SS, 128, &[(40, 99)], 4);
        xfs_at(&mut disk, 40 * SS);
        // Every guest cluster i at file cluster 3 + i.
        let map: Vec<(u64, u64)> = (0..64).map(|i| (i, (3 + i) * cs)).collect();
        let mut f = qcow2::tests::build(2, 10, 128 * 512, &map);
        f.extend_from_slice(&disk);
        let (v, layout) = open(f, None).unwrap();
        assert_eq!(layout.chain(), "qcow2 v2 > GPT > partition 1");
        let mut b = [0u8; 4];
        v.read_exact_at(0, &mut b).unwrap();
        assert_eq!(&b, XFS_MAGIC);
    }

    #[test]
    fn nested_qcow2_stops() {
        // qcow2 images of qcow2 images, five deep.
        let wrap = |inner: Vec<u8>| {
            let n = inner.len().div_ceil(512) as u64;
            let map: Vec<(u64, u64)> = (0..n).map(|i| (i, (3 + i) * 512)).collect();
            let mut f = qcow2::tests::build(3, 9, n * 512, &map);
            f.extend_from_slice(&inner);
            f.resize(f.len().div_ceil(512) * 512, 0);
            f
        };
        let mut img = vec![0u8; 512];
        xfs_at(&mut img, 0);
        for _ in 0..4 {
            img = wrap(img);
        }
        let (_, layout) = open(img.clone(), None).unwrap();
        assert_eq!(layout.qcow2.len(), 4);
        let e = err(open(wrap(img), None));
        assert!(e.contains("nested more than 4"), "{e}");
    }
}
