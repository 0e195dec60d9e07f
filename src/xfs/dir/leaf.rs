//! Leaf blocks: the hash-ordered `(hashval, address)` entries of the leaf
//! form (leaf1, with its bests table) and the node form (leafn) (kernel:
//! `xfs_dir2_leaf.c`).

use super::{DirGeometry, LEAF};
use crate::xfs::dabtree::{blkinfo_size, read_blkinfo, DaBuf, Problems};
use crate::xfs::error::Result;
use crate::xfs::format::dir2::*;
use crate::xfs::fs::{be16, be32};

pub(super) fn read_leaf_entries(b: &[u8], off: usize, n: usize) -> Vec<(u32, u32)> {
    (0..n)
        .map(|i| {
            let o = off.saturating_add(i.saturating_mul(8));
            (
                be32(b, o).unwrap_or(0),
                be32(b, o.saturating_add(4)).unwrap_or(0),
            )
        })
        .collect()
}

pub(super) fn check_hash_order(
    ents: &[(u32, u32)],
    buf: &DaBuf,
    structure: &'static str,
    off: usize,
    problems: &mut Problems,
) {
    if let Some(i) = ents.windows(2).position(|w| match w {
        [a, b] => b.0 < a.0,
        _ => false,
    }) {
        problems.push(buf.bad(
            structure,
            off.saturating_add(i.saturating_add(1).saturating_mul(8)),
            format!("leaf entry {}: hashes out of order", i.saturating_add(1)),
        ));
    }
}

/// A leaf block: leaf1 (leaf form) or leafn (node form).
#[derive(Clone, Debug)]
pub struct LeafBlock {
    pub forw: u32,
    pub back: u32,
    pub magic: u16,
    pub stale: u16,
    /// `(hashval, address)`.
    pub entries: Vec<(u32, u32)>,
    /// leaf1 only: the longest free region of each data block.
    pub bests: Vec<u16>,
    pub problems: Problems,
}

/// Parse a leaf1 or leafn block.
pub fn parse_leaf(buf: &DaBuf, dg: &DirGeometry, leaf1: bool) -> Result<LeafBlock> {
    let owner = dg.da.owner.0;
    let info = read_blkinfo(buf, &dg.da, LEAF)?;
    let want = if leaf1 {
        dg.leaf1_magic()
    } else {
        dg.leafn_magic()
    };
    if info.magic != want {
        return Err(buf.bad(
            LEAF,
            8,
            format!(
                "inode {owner} fork block {}: magic {:#06x}, expected {want:#06x}",
                buf.dablk, info.magic
            ),
        ));
    }
    let b = &buf.bytes;
    let bi = blkinfo_size(dg.da.v5);
    let count = usize::from(be16(b, bi).unwrap_or(0));
    let stale = be16(b, bi.saturating_add(2)).unwrap_or(0);
    let hdr = if dg.da.v5 { 64 } else { 16 };
    let mut end = b.len();
    let mut bests = Vec::new();
    if leaf1 {
        let tail = b.len().saturating_sub(4);
        let bestcount = usize::try_from(be32(b, tail).unwrap_or(0)).unwrap_or(usize::MAX);
        let room = tail.saturating_sub(hdr) / 2;
        if bestcount > room {
            return Err(buf.bad(
                LEAF,
                tail,
                format!("inode {owner}: bestcount {bestcount} does not fit the block"),
            ));
        }
        let bests_off = tail.saturating_sub(bestcount.saturating_mul(2));
        bests = (0..bestcount)
            .map(|i| be16(b, bests_off.saturating_add(i.saturating_mul(2))).unwrap_or(0))
            .collect();
        end = bests_off;
    }
    let room = end.saturating_sub(hdr) / 8;
    if count > room || usize::from(stale) > count {
        return Err(buf.bad(
            LEAF,
            bi,
            format!(
                "inode {owner}: count {count} (stale {stale}) does not fit the block (room for {room})"
            ),
        ));
    }
    let entries = read_leaf_entries(b, hdr, count);
    let mut problems = Vec::new();
    check_hash_order(&entries, buf, LEAF, hdr, &mut problems);
    let found_stale = entries
        .iter()
        .filter(|e| e.1 == XFS_DIR2_NULL_DATAPTR)
        .count();
    if found_stale != usize::from(stale) {
        problems.push(buf.bad(
            LEAF,
            bi.saturating_add(2),
            format!("inode {owner}: stale {stale} but {found_stale} entries are stale"),
        ));
    }
    Ok(LeafBlock {
        forw: info.forw,
        back: info.back,
        magic: info.magic,
        stale,
        entries,
        bests,
        problems,
    })
}
