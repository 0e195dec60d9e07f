//! The MBR partition table (sector 0 of a disk, 512-byte sectors): four
//! primary entries numbered 1 to 4 by slot, and the logical partitions of
//! an extended partition (a chain of EBRs), numbered from 5 on, as Linux
//! numbers them.

use super::bytes::{byte, le32};
use super::{read_at, Partition, PartitionTable, Scheme};
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::read::ReadAt;

/// Logical partitions followed at most (Linux stops well before).
const MAX_LOGICAL: u32 = 256;

/// One 16-byte entry.
#[derive(Clone, Copy, Debug)]
struct Entry {
    status: u8,
    kind: u8,
    start: u32,
    sectors: u32,
}

fn entries(sector: &[u8]) -> [Entry; 4] {
    let e = |i: usize| {
        let at = 446usize.saturating_add(i.saturating_mul(16));
        Entry {
            status: byte(sector, at),
            kind: byte(sector, at.saturating_add(4)),
            start: le32(sector, at.saturating_add(8)),
            sectors: le32(sector, at.saturating_add(12)),
        }
    };
    [e(0), e(1), e(2), e(3)]
}

/// Whether sector 0 looks like an MBR: the 0x55AA signature and every
/// entry's status 0x00 or 0x80 (a filesystem's boot sector has code there).
pub fn looks_like_mbr(sector: &[u8]) -> bool {
    byte(sector, 510) == 0x55
        && byte(sector, 511) == 0xaa
        && entries(sector)
            .iter()
            .all(|e| e.status == 0 || e.status == 0x80)
        && entries(sector).iter().any(|e| e.kind != 0)
}

/// Whether the MBR in `sector` is a protective MBR (an entry of type 0xEE).
pub fn is_protective(sector: &[u8]) -> bool {
    entries(sector).iter().any(|e| e.kind == 0xee)
}

fn is_extended(kind: u8) -> bool {
    matches!(kind, 0x05 | 0x0f | 0x85)
}

/// The name fdisk gives an MBR partition type.
pub fn type_name(kind: u8) -> &'static str {
    match kind {
        0x01 => "FAT12",
        0x04 | 0x06 | 0x0e => "FAT16",
        0x05 => "Extended",
        0x07 => "HPFS/NTFS/exFAT",
        0x0b => "W95 FAT32",
        0x0c => "W95 FAT32 (LBA)",
        0x0f => "W95 Ext'd (LBA)",
        0x82 => "Linux swap / Solaris",
        0x83 => "Linux",
        0x85 => "Linux extended",
        0x8e => "Linux LVM",
        0xa5 => "FreeBSD",
        0xee => "GPT",
        0xef => "EFI (FAT-12/16/32)",
        0xfd => "Linux raid autodetect",
        _ => "unknown",
    }
}

fn partition(number: u32, e: &Entry, lba: u64, logical: bool) -> Partition {
    Partition {
        number,
        start_lba: lba,
        sectors: u64::from(e.sectors),
        type_id: format!("{:#04x}", e.kind),
        type_name: type_name(e.kind).to_string(),
        name: String::new(),
        guid: None,
        bootable: e.status == 0x80,
        extended: is_extended(e.kind),
        logical,
        start: 0,
        size: 0,
        xfs: false,
        problems: Vec::new(),
    }
}

/// Parse the MBR in `sector` (sector 0 of `disk`), following the chain of
/// an extended partition; `ss`: the disk's logical sector size, in which
/// the table counts (512, or 4096 on a disk of 4096-byte sectors: the MBR
/// does not say which).
pub fn parse<R: ReadAt>(disk: &R, sector: &[u8], ss: u64) -> Result<PartitionTable> {
    let mut parts = Vec::new();
    let mut notes = Vec::new();
    let mut extended: Option<u64> = None;
    for (slot, e) in (1u32..).zip(entries(sector).iter()) {
        if e.kind == 0 || e.sectors == 0 {
            continue;
        }
        let lba = u64::from(e.start);
        if is_extended(e.kind) {
            if extended.is_some() {
                notes.push(format!(
                    "partition {slot}: a second extended partition; its logical partitions are not followed"
                ));
            } else {
                extended = Some(lba);
            }
        }
        parts.push(partition(slot, e, lba, false));
    }
    if let Some(ext_start) = extended {
        logical(disk, ext_start, ss, &mut parts, &mut notes)?;
    }
    Ok(PartitionTable {
        scheme: Scheme::Mbr,
        sector_size: ss,
        id: format!("{:#010x}", le32(sector, 440)),
        disk_size: disk.len(),
        first_usable_lba: None,
        last_usable_lba: None,
        partitions: parts,
        notes,
    })
}

/// The logical partitions: EBR k holds partition 4 + k (relative to the
/// EBR) and the next EBR (relative to the extended partition's start).
fn logical<R: ReadAt>(
    disk: &R,
    ext_start: u64,
    ss: u64,
    parts: &mut Vec<Partition>,
    notes: &mut Vec<String>,
) -> Result<()> {
    let mut ebr = ext_start;
    let mut seen = std::collections::BTreeSet::new();
    let mut number: u32 = 5;
    loop {
        if number > MAX_LOGICAL.saturating_add(4) {
            notes.push(format!(
                "the chain of extended boot records goes on past {MAX_LOGICAL} logical partitions; the rest is not followed"
            ));
            return Ok(());
        }
        if !seen.insert(ebr) {
            notes.push(format!(
                "the chain of extended boot records loops back to sector {ebr}; it is not followed further"
            ));
            return Ok(());
        }
        let at = ebr.checked_mul(ss).ok_or_else(|| {
            Error::corrupt(
                "extended boot record",
                Location::Bytes {
                    offset: u64::MAX,
                    len: 512,
                },
                format!("sector {ebr} is past any disk"),
            )
        })?;
        let s = match read_at(disk, "extended boot record", at, 512) {
            Ok(s) => s,
            Err(e) => {
                notes.push(format!("extended boot record at sector {ebr}: {e}"));
                return Ok(());
            }
        };
        if byte(&s, 510) != 0x55 || byte(&s, 511) != 0xaa {
            notes.push(format!(
                "extended boot record at sector {ebr} (byte {at}) has no 0x55AA signature; the chain ends there"
            ));
            return Ok(());
        }
        let [first, next, ..] = entries(&s);
        if first.kind != 0 && first.sectors != 0 {
            let lba = ebr.saturating_add(u64::from(first.start));
            parts.push(partition(number, &first, lba, true));
            number = number.saturating_add(1);
        }
        if !is_extended(next.kind) {
            return Ok(());
        }
        ebr = ext_start.saturating_add(u64::from(next.start));
    }
}
