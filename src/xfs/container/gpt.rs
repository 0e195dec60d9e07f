//! The GUID partition table (UEFI specification, chapter 5): a header at
//! LBA 1 (its backup at the last LBA) with a CRC32, and an array of
//! partition entries with its own CRC32. Logical sectors of 512 or 4096
//! bytes: the header is looked for at both.

use super::bytes::{guid, le16, le32, le64, mul};
use super::{read_at, Partition, PartitionTable, Scheme};
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::read::ReadAt;

pub const SIGNATURE: &[u8; 8] = b"EFI PART";
/// The partition entry array is read whole (to check its CRC); larger
/// arrays than this are refused (the usual one is 16 KiB).
const MAX_ARRAY_BYTES: u64 = 1 << 20;

/// The logical sector size whose LBA 1 holds a GPT header signature.
pub fn sector_size_of<R: ReadAt>(disk: &R) -> Option<u64> {
    [512u64, 4096].into_iter().find(|ss| {
        read_at(disk, "GPT header", *ss, 8)
            .map(|b| b.as_slice() == SIGNATURE)
            .unwrap_or(false)
    })
}

/// The name a partition type GUID is known by.
pub fn type_name(guid: &str) -> &'static str {
    match guid {
        "0FC63DAF-8483-4772-8E79-3D69D8477DE4" => "Linux filesystem",
        "0657FD6D-A4AB-43C4-84E5-0933C84B4F4F" => "Linux swap",
        "E6D6D379-F507-44C2-A23C-238F2A3DF928" => "Linux LVM",
        "A19D880F-05FC-4D3B-A006-743F0F84911E" => "Linux RAID",
        "4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709" => "Linux root (x86-64)",
        "B921B045-1DF0-41C3-AF44-4C6F280D3FAE" => "Linux root (ARM-64)",
        "933AC7E1-2EB4-4F13-B844-0E14E2AEF915" => "Linux home",
        "3B8F8425-20E0-4F3B-907F-1A25A76F98E8" => "Linux server data",
        "BC13C2FF-59E6-4262-A352-B275FD6F7172" => "Linux extended boot",
        "C12A7328-F81F-11D2-BA4B-00A0C93EC93B" => "EFI System",
        "21686148-6449-6E6F-744E-656564454649" => "BIOS boot",
        "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7" => "Microsoft basic data",
        "E3C9E316-0B5C-4DB8-817D-F92DF00215AE" => "Microsoft reserved",
        "DE94BBA4-06D1-4D40-A16A-BFD50179D6AC" => "Windows recovery environment",
        "48465300-0000-11AA-AA11-00306543ECAC" => "Apple HFS/HFS+",
        "516E7CB6-6ECF-11D6-8FF8-00022D09712B" => "FreeBSD data",
        _ => "unknown",
    }
}

/// The CRC32 of GPT (the IEEE polynomial, as zlib's), without a table:
/// a header is 92 bytes and its entries usually 16 KiB, and no table
/// keeps the wasm modules 16 KiB smaller.
const GPT_CRC: crc::Crc<u32, crc::NoTable> =
    crc::Crc::<u32, crc::NoTable>::new(&crc::CRC_32_ISO_HDLC);

fn crc32(bytes: &[u8]) -> u32 {
    GPT_CRC.checksum(bytes)
}

fn corrupt(offset: u64, len: u64, detail: String) -> Error {
    Error::corrupt("GPT header", Location::Bytes { offset, len }, detail)
}

/// What a header holds.
struct Header {
    at: u64,
    my_lba: u64,
    alternate_lba: u64,
    first_usable: u64,
    last_usable: u64,
    disk_guid: String,
    entries_lba: u64,
    entries: u32,
    entry_size: u32,
    entries_crc: u32,
}

fn header<R: ReadAt>(disk: &R, ss: u64, lba: u64) -> Result<Header> {
    let at =
        mul(lba, ss).ok_or_else(|| corrupt(u64::MAX, ss, format!("LBA {lba} is past any disk")))?;
    let len = usize::try_from(ss).unwrap_or(512);
    let h = read_at(disk, "GPT header", at, len)?;
    if h.get(0..8) != Some(SIGNATURE.as_slice()) {
        return Err(corrupt(at, 8, "no \"EFI PART\" signature".into()));
    }
    let size = le32(&h, 12);
    if size < 92 || u64::from(size) > ss {
        return Err(corrupt(at, 4, format!("header size {size} (92 to {ss})")));
    }
    let stored = le32(&h, 16);
    let mut copy = h
        .get(..usize::try_from(size).unwrap_or(92))
        .unwrap_or(&[])
        .to_vec();
    if let Some(c) = copy.get_mut(16..20) {
        c.fill(0);
    }
    let computed = crc32(&copy);
    if stored != computed {
        return Err(corrupt(
            at,
            u64::from(size),
            format!("header CRC32 is {stored:#010x} but its bytes give {computed:#010x}"),
        ));
    }
    let my_lba = le64(&h, 24);
    if my_lba != lba {
        return Err(corrupt(
            at,
            92,
            format!("the header says it is at LBA {my_lba}, but it was read at LBA {lba}"),
        ));
    }
    Ok(Header {
        at,
        my_lba,
        alternate_lba: le64(&h, 32),
        first_usable: le64(&h, 40),
        last_usable: le64(&h, 48),
        disk_guid: guid(&h, 56),
        entries_lba: le64(&h, 72),
        entries: le32(&h, 80),
        entry_size: le32(&h, 84),
        entries_crc: le32(&h, 88),
    })
}

fn entry_array<R: ReadAt>(disk: &R, ss: u64, h: &Header) -> Result<Vec<u8>> {
    let es = u64::from(h.entry_size);
    if es < 128 || !es.is_power_of_two() {
        return Err(corrupt(
            h.at.saturating_add(84),
            4,
            format!("partition entry size {es} (128 times a power of two)"),
        ));
    }
    let bytes = mul(u64::from(h.entries), es).unwrap_or(u64::MAX);
    if bytes > MAX_ARRAY_BYTES {
        return Err(corrupt(
            h.at.saturating_add(80),
            8,
            format!(
                "{} partition entries of {es} bytes make {bytes} bytes, more than the {MAX_ARRAY_BYTES} this tool reads",
                h.entries
            ),
        ));
    }
    let at = mul(h.entries_lba, ss).ok_or_else(|| {
        corrupt(
            h.at.saturating_add(72),
            8,
            format!("entry array LBA {} is past any disk", h.entries_lba),
        )
    })?;
    let arr = read_at(
        disk,
        "GPT partition entry array",
        at,
        usize::try_from(bytes).unwrap_or(0),
    )?;
    let computed = crc32(&arr);
    if computed != h.entries_crc {
        return Err(Error::corrupt(
            "GPT partition entry array",
            Location::Bytes {
                offset: at,
                len: bytes,
            },
            format!(
                "CRC32 is {:#010x} in the header but the entries give {computed:#010x}",
                h.entries_crc
            ),
        ));
    }
    Ok(arr)
}

/// Parse the GPT of `disk` with logical sectors of `ss` bytes: the primary
/// header and array, or if either is damaged the backup ones (at the last
/// LBA), with a note.
pub fn parse<R: ReadAt>(disk: &R, ss: u64) -> Result<PartitionTable> {
    let mut notes = Vec::new();
    let primary = header(disk, ss, 1).and_then(|h| entry_array(disk, ss, &h).map(|a| (h, a)));
    let (h, arr) = match primary {
        Ok(x) => x,
        Err(first) => {
            let last = disk.len().checked_div(ss).unwrap_or(0).saturating_sub(1);
            match header(disk, ss, last).and_then(|h| entry_array(disk, ss, &h).map(|a| (h, a))) {
                Ok(x) => {
                    notes.push(format!(
                        "the primary GPT is damaged ({first}); the backup at LBA {last} is read"
                    ));
                    x
                }
                Err(second) => {
                    return Err(match first {
                        Error::Corrupt {
                            structure,
                            location,
                            detail,
                        } => Error::Corrupt {
                            structure,
                            location,
                            detail: format!("{detail}; the backup at LBA {last}: {second}"),
                        },
                        other => other,
                    })
                }
            }
        }
    };
    if h.my_lba == 1 {
        let last = disk.len().checked_div(ss).unwrap_or(0).saturating_sub(1);
        if h.alternate_lba != last {
            notes.push(format!(
                "the header puts its backup at LBA {}, but the disk's last LBA is {last}",
                h.alternate_lba
            ));
        }
    }
    let es = usize::try_from(h.entry_size).unwrap_or(128);
    let mut parts = Vec::new();
    for (number, e) in (1u32..).zip(arr.chunks_exact(es.max(1))) {
        if e.iter().take(16).all(|b| *b == 0) {
            continue;
        }
        let type_guid = guid(e, 0);
        let first = le64(e, 32);
        let last = le64(e, 40);
        let mut problems = Vec::new();
        let sectors = if last >= first {
            last.saturating_sub(first).saturating_add(1)
        } else {
            problems.push(format!(
                "ends at LBA {last}, before it starts (LBA {first})"
            ));
            0
        };
        if sectors > 0 && (first < h.first_usable || last > h.last_usable) {
            problems.push(format!(
                "LBAs {first}..={last} are outside the usable LBAs {}..={}",
                h.first_usable, h.last_usable
            ));
        }
        let name: String = {
            let units: Vec<u16> = (0usize..36)
                .map(|i| le16(e, 56usize.saturating_add(i.saturating_mul(2))))
                .take_while(|u| *u != 0)
                .collect();
            String::from_utf16_lossy(&units)
        };
        let attrs = le64(e, 48);
        parts.push(Partition {
            number,
            start_lba: first,
            sectors,
            type_name: type_name(&type_guid).to_string(),
            type_id: type_guid,
            name,
            guid: Some(guid(e, 16)),
            bootable: attrs & 4 != 0,
            extended: false,
            logical: false,
            start: 0,
            size: 0,
            xfs: false,
            problems,
        });
    }
    Ok(PartitionTable {
        scheme: Scheme::Gpt,
        sector_size: ss,
        id: h.disk_guid,
        disk_size: disk.len(),
        first_usable_lba: Some(h.first_usable),
        last_usable_lba: Some(h.last_usable),
        partitions: parts,
        notes,
    })
}
