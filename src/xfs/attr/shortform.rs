//! Shortform attribute lists, inline in the inode's attr fork (kernel:
//! the shortform part of `xfs_attr_leaf.c`).

use zerocopy::FromBytes;

use super::{check_flags, AttrEntry, AttrFormat, AttrGeometry, AttrListing, AttrNamespace};
use super::{AttrValue, SF};
use crate::xfs::dir::ForkAt;
use crate::xfs::error::Result;
use crate::xfs::format::attr::*;

/// Parse a shortform attribute list.
pub fn parse_shortform(bytes: &[u8], ag: &AttrGeometry, at: ForkAt) -> Result<AttrListing> {
    let owner = ag.da.owner.0;
    let (hdr, _) = XfsAttrSfHdr::ref_from_prefix(bytes).map_err(|_| {
        at.bad(
            SF,
            0,
            format!(
                "inode {owner}: {} bytes, too short for the header",
                bytes.len()
            ),
        )
    })?;
    let totsize = usize::from(hdr.totsize.get());
    if totsize < 4 || totsize > bytes.len() {
        return Err(at.bad(
            SF,
            0,
            format!(
                "inode {owner}: totsize {totsize} (the fork holds {} bytes)",
                bytes.len()
            ),
        ));
    }
    let mut entries = Vec::with_capacity(usize::from(hdr.count));
    let mut problems = Vec::new();
    let mut incomplete = 0usize;
    let mut off = core::mem::size_of::<XfsAttrSfHdr>();
    for i in 0..hdr.count {
        let (e, _) = XfsAttrSfEntry::ref_from_prefix(bytes.get(off..totsize).unwrap_or(&[]))
            .map_err(|_| {
                at.bad(
                    SF,
                    off,
                    format!(
                        "inode {owner}: entry {i} of {} starts past totsize {totsize}",
                        hdr.count
                    ),
                )
            })?;
        let namelen = usize::from(e.namelen);
        let valuelen = usize::from(e.valuelen);
        let name_off = off.saturating_add(3);
        let value_off = name_off.saturating_add(namelen);
        let end = value_off.saturating_add(valuelen);
        if namelen == 0 {
            return Err(at.bad(
                SF,
                off,
                format!("inode {owner}: entry {i} has an empty name"),
            ));
        }
        if end > totsize {
            return Err(at.bad(
                SF,
                off,
                format!("inode {owner}: entry {i} ends at byte {end}, past totsize {totsize}"),
            ));
        }
        if let Some(p) = check_flags(ag, e.flags) {
            problems.push(at.bad(
                SF,
                off.saturating_add(2),
                format!("inode {owner}: entry {i}: {p}"),
            ));
        }
        if e.flags & XFS_ATTR_INCOMPLETE != 0 {
            incomplete = incomplete.saturating_add(1);
        } else {
            entries.push(AttrEntry {
                flags: e.flags,
                namespace: AttrNamespace::from_flags(e.flags),
                name: bytes.get(name_off..value_off).unwrap_or(&[]).to_vec(),
                value: AttrValue::Inline {
                    bytes: bytes.get(value_off..end).unwrap_or(&[]).to_vec(),
                },
            });
        }
        off = end;
    }
    if off != totsize {
        problems.push(at.bad(
            SF,
            0,
            format!("inode {owner}: entries end at byte {off} but totsize is {totsize}"),
        ));
    }
    Ok(AttrListing {
        format: AttrFormat::Shortform,
        entries,
        incomplete,
        problems,
    })
}
