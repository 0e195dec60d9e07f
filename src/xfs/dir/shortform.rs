//! Shortform directories: the entries kept inline in the inode's data fork
//! (kernel: `xfs_dir2_sf.c`).

use zerocopy::FromBytes;

use super::{DirEntry, DirGeometry, ForkAt, Ftype};
use crate::xfs::dabtree::Problems;
use crate::xfs::error::Result;
use crate::xfs::format::dir2::*;
use crate::xfs::fs::{be32, be64};
use crate::xfs::types::Ino;

const SF: &str = "shortform directory";

/// A parsed shortform directory.
#[derive(Clone, Debug)]
pub struct Shortform {
    pub parent: Ino,
    pub i8count: u8,
    /// Entries as stored (no `.` or `..`).
    pub entries: Vec<DirEntry>,
    pub problems: Problems,
}

/// Parse a shortform directory (the data fork bytes).
pub fn parse_shortform(bytes: &[u8], dg: &DirGeometry, at: ForkAt) -> Result<Shortform> {
    let owner = dg.da.owner.0;
    if bytes.len() < XFS_DIR2_SF_HDR_SIZE4 {
        return Err(at.bad(
            SF,
            0,
            format!(
                "inode {owner}: {} bytes, too short for the header",
                bytes.len()
            ),
        ));
    }
    // `XfsDir2SfHdr`, whose parent field is 4 or 8 bytes long.
    let count = bytes.first().copied().unwrap_or(0);
    let i8count = bytes.get(1).copied().unwrap_or(0);
    let wide = i8count != 0;
    let (inosz, hdrsz) = if wide {
        (8usize, XFS_DIR2_SF_HDR_SIZE8)
    } else {
        (4usize, XFS_DIR2_SF_HDR_SIZE4)
    };
    if bytes.len() < hdrsz {
        return Err(at.bad(
            SF,
            0,
            format!(
                "inode {owner}: {} bytes, too short for a {hdrsz}-byte header",
                bytes.len()
            ),
        ));
    }
    let get_ino = |off: usize| -> Option<u64> {
        if wide {
            be64(bytes, off).map(|v| v & XFS_MAXINUMBER)
        } else {
            be32(bytes, off).map(u64::from)
        }
    };
    let parent = Ino(get_ino(2).unwrap_or(0));
    let mut problems = Vec::new();
    let mut entries = Vec::with_capacity(usize::from(count));
    let mut off = hdrsz;
    // The smallest offset an entry may claim: after "." and ".." in a data block.
    let mut min_offset = dg
        .data_hdr_size()
        .saturating_add(dg.data_entsize(1))
        .saturating_add(dg.data_entsize(2));
    let mut n8 = 0usize;
    for i in 0..count {
        let (e, _) =
            XfsDir2SfEntry::ref_from_prefix(bytes.get(off..).unwrap_or(&[])).map_err(|_| {
                at.bad(
                    SF,
                    off,
                    format!(
                        "inode {owner}: entry {i} of {} starts past the end ({} bytes)",
                        count,
                        bytes.len()
                    ),
                )
            })?;
        let namelen = usize::from(e.namelen);
        let name_off = off.saturating_add(3);
        let ft_off = name_off.saturating_add(namelen);
        let ino_off = ft_off.saturating_add(usize::from(dg.ftype));
        let end = ino_off.saturating_add(inosz);
        if namelen == 0 {
            return Err(at.bad(
                SF,
                off,
                format!("inode {owner}: entry {i} has an empty name"),
            ));
        }
        if end > bytes.len() {
            return Err(at.bad(
                SF,
                off,
                format!(
                    "inode {owner}: entry {i} ends at byte {end}, past the end ({} bytes)",
                    bytes.len()
                ),
            ));
        }
        let name = bytes.get(name_off..ft_off).unwrap_or(&[]).to_vec();
        let ino = get_ino(ino_off).unwrap_or(0);
        if ino > u64::from(u32::MAX) {
            n8 = n8.saturating_add(1);
        }
        let ftype = if dg.ftype {
            let f = Ftype(bytes.get(ft_off).copied().unwrap_or(0));
            if !f.is_valid() {
                problems.push(at.bad(
                    SF,
                    ft_off,
                    format!("inode {owner}: entry {i}: file type {} is not valid", f.0),
                ));
            }
            Some(f)
        } else {
            None
        };
        let offset = usize::from(e.offset.get());
        if offset < min_offset {
            problems.push(at.bad(
                SF,
                off.saturating_add(1),
                format!(
                    "inode {owner}: entry {i}: offset {offset} overlaps the previous entry (at least {min_offset})"
                ),
            ));
        }
        min_offset = offset.saturating_add(dg.data_entsize(namelen));
        if name.contains(&b'/') || name.contains(&0) {
            problems.push(at.bad(
                SF,
                name_off,
                format!("inode {owner}: entry {i}: the name contains '/' or NUL"),
            ));
        }
        entries.push(DirEntry {
            name,
            ino: Ino(ino),
            ftype,
            cookie: u32::try_from(offset / 8).unwrap_or(0),
        });
        off = end;
    }
    if off != bytes.len() {
        problems.push(at.bad(
            SF,
            off,
            format!(
                "inode {owner}: entries end at byte {off} but the directory size is {}",
                bytes.len()
            ),
        ));
    }
    if usize::from(i8count) != n8 {
        problems.push(at.bad(
            SF,
            1,
            format!("inode {owner}: i8count {i8count} but {n8} entries need 8-byte inode numbers"),
        ));
    }
    Ok(Shortform {
        parent,
        i8count,
        entries,
        problems,
    })
}
