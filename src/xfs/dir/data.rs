//! Data blocks, and the data part of a single-block directory: the
//! entries, the unused regions and the bestfree table (kernel:
//! `xfs_dir2_data.c`, `xfs_dir2_block.c`).

use super::leaf::{check_hash_order, read_leaf_entries};
use super::{DirEntry, DirGeometry, Ftype, DATA};
use crate::xfs::dabtree::{check_v5_header, DaBuf, Problems};
use crate::xfs::error::Result;
use crate::xfs::format::dir2::*;
use crate::xfs::fs::{be16, be32, be64};
use crate::xfs::types::{Daddr, Ino};

/// One data block (or the data part of a single-block directory).
#[derive(Clone, Debug)]
pub struct DataBlock {
    pub daddr: Daddr,
    /// `(byte offset in the block, entry)`; cookies are set by the caller.
    pub entries: Vec<(usize, DirEntry)>,
    /// The header's three best free regions `(offset, length)`.
    pub bestfree: [(u16, u16); XFS_DIR2_DATA_FD_COUNT],
    /// Unused regions found `(offset, length)`.
    pub unused: Vec<(usize, usize)>,
    /// Block form only: the leaf `(hashval, address)` and the stale count.
    pub leaf: Option<(Vec<(u32, u32)>, u32)>,
    pub problems: Problems,
}

impl DataBlock {
    /// The longest free region as the header records it.
    pub fn best(&self) -> u16 {
        self.bestfree.first().map_or(0, |b| b.1)
    }
}

/// Parse a data block (`block_form`: a single-block directory with its leaf
/// at the end). Header errors fail; an error inside the record tiling stops
/// the walk of this block and is kept as a problem with the entries before it.
pub fn parse_data_block(buf: &DaBuf, dg: &DirGeometry, block_form: bool) -> Result<DataBlock> {
    let structure = if block_form {
        "single-block directory"
    } else {
        DATA
    };
    let owner = dg.da.owner.0;
    let b = &buf.bytes;
    let want = if block_form {
        dg.block_magic()
    } else {
        dg.data_magic()
    };
    let magic = be32(b, 0).unwrap_or(0);
    if magic != want {
        return Err(buf.bad(
            structure,
            0,
            format!(
                "inode {owner} directory block {}: magic {magic:#010x}, expected {want:#010x}",
                buf.dablk
            ),
        ));
    }
    if dg.da.v5 {
        check_v5_header(buf, &dg.da, structure, 4, 8, 24, 40)?;
    }
    let hdr = dg.data_hdr_size();
    let bf_off: usize = if dg.da.v5 { 48 } else { 4 };
    let bestfree: [(u16, u16); 3] = core::array::from_fn(|i| {
        let o = bf_off.saturating_add(i.saturating_mul(4));
        (
            be16(b, o).unwrap_or(0),
            be16(b, o.saturating_add(2)).unwrap_or(0),
        )
    });
    let mut problems = Vec::new();
    let mut end = b.len();
    let mut leaf = None;
    if block_form {
        let tail_off = b.len().saturating_sub(8);
        let count = be32(b, tail_off).unwrap_or(0);
        let stale = be32(b, tail_off.saturating_add(4)).unwrap_or(0);
        let room = tail_off.saturating_sub(hdr) / 8;
        let n = usize::try_from(count).unwrap_or(usize::MAX);
        if n > room || stale > count {
            return Err(buf.bad(
                structure,
                tail_off,
                format!(
                    "inode {owner}: leaf count {count} (stale {stale}) does not fit the block (room for {room})"
                ),
            ));
        }
        let leaf_off = tail_off.saturating_sub(n.saturating_mul(8));
        let ents = read_leaf_entries(b, leaf_off, n);
        check_hash_order(&ents, buf, structure, leaf_off, &mut problems);
        leaf = Some((ents, stale));
        end = leaf_off;
    }
    let mut entries = Vec::new();
    let mut unused: Vec<(usize, usize)> = Vec::new();
    let mut off = hdr;
    let mut prev_unused = false;
    while off < end {
        let bad = |o: usize, d: String| buf.bad(structure, o, format!("inode {owner}: {d}"));
        if be16(b, off) == Some(XFS_DIR2_DATA_FREE_TAG) {
            let len = usize::from(be16(b, off.saturating_add(2)).unwrap_or(0));
            if len < 8 || len % 8 != 0 || off.saturating_add(len) > end {
                problems.push(bad(
                    off,
                    format!("unused region at {off}: length {len} (block data ends at {end})"),
                ));
                break;
            }
            let tag_off = off.saturating_add(len).saturating_sub(2);
            let tag = usize::from(be16(b, tag_off).unwrap_or(0));
            if tag != off {
                problems.push(bad(
                    tag_off,
                    format!("unused region at {off}: tag says {tag}"),
                ));
                break;
            }
            if prev_unused {
                problems.push(bad(
                    off,
                    format!("unused region at {off} follows another unused region"),
                ));
            }
            prev_unused = true;
            unused.push((off, len));
            off = off.saturating_add(len);
            continue;
        }
        prev_unused = false;
        let ino = be64(b, off).unwrap_or(0);
        let namelen = usize::from(b.get(off.saturating_add(8)).copied().unwrap_or(0));
        if namelen == 0 {
            problems.push(bad(off, format!("entry at {off} has an empty name")));
            break;
        }
        let size = dg.data_entsize(namelen);
        if off.saturating_add(size) > end {
            problems.push(bad(
                off,
                format!(
                    "entry at {off} ({size} bytes, name of {namelen}) runs past the entries' end at {end}"
                ),
            ));
            break;
        }
        let name_off = off.saturating_add(9);
        let name = b
            .get(name_off..name_off.saturating_add(namelen))
            .unwrap_or(&[])
            .to_vec();
        let tag_off = off.saturating_add(size).saturating_sub(2);
        let tag = usize::from(be16(b, tag_off).unwrap_or(0));
        if tag != off {
            problems.push(bad(tag_off, format!("entry at {off}: tag says {tag}")));
            break;
        }
        let ftype = if dg.ftype {
            let ft_off = name_off.saturating_add(namelen);
            let f = Ftype(b.get(ft_off).copied().unwrap_or(0));
            if !f.is_valid() {
                problems.push(bad(
                    ft_off,
                    format!("entry at {off}: file type {} is not valid", f.0),
                ));
            }
            Some(f)
        } else {
            None
        };
        if ino > XFS_MAXINUMBER {
            problems.push(bad(
                off,
                format!("entry at {off}: inode number {ino:#x} is above 2^56"),
            ));
        }
        entries.push((
            off,
            DirEntry {
                name,
                ino: Ino(ino),
                ftype,
                cookie: 0,
            },
        ));
        off = off.saturating_add(size);
    }
    check_bestfree(buf, structure, &bestfree, &unused, bf_off, &mut problems);
    Ok(DataBlock {
        daddr: buf.daddr,
        entries,
        bestfree,
        unused,
        leaf,
        problems,
    })
}

/// The bestfree slots must be the longest unused regions, longest first,
/// each naming a real unused region; unused slots are {0, 0}.
fn check_bestfree(
    buf: &DaBuf,
    structure: &'static str,
    bestfree: &[(u16, u16); 3],
    unused: &[(usize, usize)],
    bf_off: usize,
    problems: &mut Problems,
) {
    let mut lens: Vec<usize> = unused.iter().map(|u| u.1).collect();
    crate::xfs::sort::by_key_descending(&mut lens, |l| u128::from(crate::xfs::sort::size(*l)));
    let mut prev = usize::MAX;
    for (i, &(o, l)) in bestfree.iter().enumerate() {
        let (o, l) = (usize::from(o), usize::from(l));
        let at = bf_off.saturating_add(i.saturating_mul(4));
        if l == 0 {
            if o != 0 {
                problems.push(buf.bad(
                    structure,
                    at,
                    format!("bestfree[{i}]: offset {o} with length 0"),
                ));
            }
            prev = 0;
            continue;
        }
        if l > prev {
            problems.push(buf.bad(
                structure,
                at,
                format!("bestfree[{i}]: length {l} is longer than the slot before it"),
            ));
        }
        prev = l;
        if !unused.contains(&(o, l)) {
            problems.push(buf.bad(
                structure,
                at,
                format!("bestfree[{i}] = (offset {o}, length {l}) is not an unused region"),
            ));
        }
    }
    // The slots hold the longest regions (ties may pick either region).
    for (i, want) in lens.iter().take(bestfree.len()).enumerate() {
        let got = bestfree.get(i).map_or(0, |b| usize::from(b.1));
        if got != *want {
            problems.push(buf.bad(
                structure,
                bf_off,
                format!(
                    "bestfree[{i}] has length {got}, but unused region number {} by length is {want} bytes",
                    i.saturating_add(1)
                ),
            ));
            break;
        }
    }
}
