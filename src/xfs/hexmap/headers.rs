//! The AG header sectors: superblock, AGF, AGI, AGFL.

use super::*;

/// A member table with the structure's prefix taken off the names.
pub(super) fn members(table: FieldTable, prefix: &str) -> Vec<(&'static str, usize, usize)> {
    table
        .iter()
        .map(|(n, o, z)| (n.strip_prefix(prefix).unwrap_or(n), *o, *z))
        .collect()
}

/// The members of a structure with values and meanings from the parsed
/// header's field list where it has one at the same place (the AG header
/// parsers keep xfs_db's names; the hex view keeps the kernel's), decoded
/// from the bytes otherwise.
pub(super) fn merge(
    b: &[u8],
    out: &mut Out,
    group: &str,
    members: &[(&str, usize, usize)],
    parsed: &[Field],
) {
    for (name, off, size) in members {
        let p = parsed
            .iter()
            .find(|f| usize::from(f.offset) == *off && usize::from(f.size) == *size);
        match p {
            Some(f) => {
                let value = match &f.note {
                    Some(n) => format!("{} ({n})", f.value),
                    None => f.value.to_string(),
                };
                out.add(group, *name, *off, *size, value, f.meaning);
            }
            None => out.raw(b, group, name, *off, *size, ""),
        }
    }
}

pub(super) fn ag_header<R: ReadAt>(
    fs: &Fs<R>,
    daddr: u64,
    agno: AgNumber,
    n: u64,
) -> Result<HexBlock> {
    let bytes = fs.read_daddr("hex view", Daddr(daddr), u64::from(fs.geo.sectsize).max(BB))?;
    let mut out = Out {
        fields: Vec::new(),
        len: bytes.len(),
    };
    let b = &bytes;
    let mut notes = Vec::new();
    let ctx = HeaderCtx::new(fs, agno);
    let mut parsed = |r: std::result::Result<Vec<Field>, String>| match r {
        Ok(f) => f,
        Err(e) => {
            notes.push(e);
            Vec::new()
        }
    };
    let with_ctx =
        |f: &dyn Fn(&HeaderCtx) -> Result<Vec<Field>>| -> std::result::Result<Vec<Field>, String> {
            match &ctx {
                Ok(c) => f(c).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            }
        };
    let (structure, explanation) = match n {
        0 => {
            let p = parsed(
                Superblock::parse(b)
                    .map(|s| s.fields())
                    .map_err(|e| e.to_string()),
            );

            merge(b, &mut out, "superblock", &members(SB_FIELDS, "sb_"), &p);
            (
                format!("superblock (AG {})", agno.0),
                if agno.0 == 0 {
                    "The primary superblock: the filesystem's geometry (block size, AG size and count, inode size), its features, where the root directory and the log are, and summary counters. The kernel reads only this copy at mount; the copies at the start of the other AGs are for xfs_repair.".to_string()
                } else {
                    "A secondary superblock: a copy of the primary's geometry kept for xfs_repair. Growing the filesystem or changing a feature updates it; its counters are not kept current.".to_string()
                },
            )
        }
        1 => {
            let p = parsed(with_ctx(&|c| {
                Agf::parse(b, Daddr(daddr), c).map(|a| a.fields())
            }));

            merge(b, &mut out, "agf", &members(AGF_FIELDS, "agf_"), &p);
            (
                format!("AGF (AG {})", agno.0),
                "The AG free space header: the roots and heights of the free-space btrees (by block number and by size), of the reverse-mapping and reference-count btrees when the filesystem has them, the free list's window into the AGFL, and the AG's free block count and longest free extent.".to_string(),
            )
        }
        2 => {
            let p = parsed(with_ctx(&|c| {
                Agi::parse(b, Daddr(daddr), c).map(|a| a.fields())
            }));

            merge(b, &mut out, "agi", &members(AGI_FIELDS, "agi_"), &p);
            unlinked_buckets(fs, agno, b, &mut out);
            (
                format!("AGI (AG {})", agno.0),
                "The AG inode header: how many inodes are allocated and free in this AG, the roots of the inode btree and the free-inode btree, and the 64 heads of the unlinked lists (inodes removed from every directory but still open, freed at the next mount if the system stopped first).".to_string(),
            )
        }
        _ => {
            let p = parsed(with_ctx(&|c| {
                Agfl::parse(b, Daddr(daddr), c).map(|a| a.fields())
            }));
            let hdr = if fs.geo.v5 {
                let m = layout!(XfsAgfl, "agfl_"; agfl_magicnum, agfl_seqno, agfl_uuid, agfl_lsn, agfl_crc);
                merge(b, &mut out, "agfl", &m, &p);
                size_of::<XfsAgfl>()
            } else {
                0
            };
            let slots = b.len().saturating_sub(hdr) / 4;
            for i in 0..slots {
                out.raw(
                    b,
                    "agfl slots",
                    &format!("bno[{i}]"),
                    hdr.saturating_add(i.saturating_mul(4)),
                    4,
                    "a block held for btree growth (when the slot is between flfirst and fllast)",
                );
            }
            (
                format!("AGFL (AG {})", agno.0),
                "The AG free list: a ring of block numbers set aside so the free-space and reverse-mapping btrees can grow or shrink while space is being allocated, without recursing into the allocator. The AGF says which slots are in use (flfirst to fllast).".to_string(),
            )
        }
    };
    add_links(fs, agno, &structure, b, &mut out.fields);
    Ok(HexBlock {
        daddr,
        bytes: bytes.clone(),
        structure,
        explanation,
        fields: out.fields,
        notes,
        logged: Vec::new(),
        log_device: false,
    })
}

/// The AGI's unlinked-list heads one bucket at a time (`agi_unlinked[i]`,
/// the list of inodes whose AG inode number is i modulo 64), in place of
/// the one 256-byte member (each head is linked to its inode by
/// `add_links`).
fn unlinked_buckets<R: ReadAt>(fs: &Fs<R>, agno: AgNumber, b: &[u8], out: &mut Out) {
    use crate::xfs::format::ag::XfsAgi;
    let at = offset_of!(XfsAgi, agi_unlinked);
    let Some(pos) = out
        .fields
        .iter()
        .position(|f| f.name == "unlinked" && usize::try_from(f.offset).ok() == Some(at))
    else {
        return;
    };
    out.fields.remove(pos);
    for i in 0..64usize {
        let off = at.saturating_add(i.saturating_mul(4));
        let Some(v) = be(b, off, 4) else {
            break;
        };
        let head = u32::try_from(v).unwrap_or(u32::MAX);
        let null = head == u32::MAX;
        let value = if null {
            "null (empty)".to_string()
        } else {
            format!(
                "AG inode {head} (inode {})",
                fs.geo.agino_to_ino(agno, head)
            )
        };
        out.add(
            "agi unlinked buckets",
            format!("unlinked[{i}]"),
            off,
            4,
            value,
            "head of an unlinked list: inodes with no directory entry left, still open; the list of AG inode numbers equal to this bucket's index modulo 64, chained through each inode's di_next_unlinked",
        );
    }
}
