//! Free-index blocks of node-form directories: the longest free region of
//! each data block (kernel: `xfs_dir2_node.c`, the free index part).

use super::{DirGeometry, FREE};
use crate::xfs::dabtree::{check_v5_header, DaBuf};
use crate::xfs::error::Result;
use crate::xfs::fs::{be16, be32};

/// A free-index block.
#[derive(Clone, Debug)]
pub struct FreeBlock {
    pub firstdb: u32,
    pub nvalid: u32,
    pub nused: u32,
    pub bests: Vec<u16>,
}

/// Entries per free-index block.
pub fn free_max_bests(dg: &DirGeometry) -> usize {
    let hdr = if dg.da.v5 { 64 } else { 16 };
    dg.blksize().saturating_sub(hdr) / 2
}

/// Parse a free-index block.
pub fn parse_free(buf: &DaBuf, dg: &DirGeometry) -> Result<FreeBlock> {
    let owner = dg.da.owner.0;
    let b = &buf.bytes;
    let magic = be32(b, 0).unwrap_or(0);
    if magic != dg.free_magic() {
        return Err(buf.bad(
            FREE,
            0,
            format!(
                "inode {owner} fork block {}: magic {magic:#010x}, expected {:#010x}",
                buf.dablk,
                dg.free_magic()
            ),
        ));
    }
    if dg.da.v5 {
        check_v5_header(buf, &dg.da, FREE, 4, 8, 24, 40)?;
    }
    let (o, hdr): (usize, usize) = if dg.da.v5 { (48, 64) } else { (4, 16) };
    let firstdb = be32(b, o).unwrap_or(0);
    let nvalid = be32(b, o.saturating_add(4)).unwrap_or(0);
    let nused = be32(b, o.saturating_add(8)).unwrap_or(0);
    let max = free_max_bests(dg);
    let n = usize::try_from(nvalid).unwrap_or(usize::MAX);
    if n > max || nused > nvalid {
        return Err(buf.bad(
            FREE,
            o.saturating_add(4),
            format!("inode {owner}: nvalid {nvalid} / nused {nused} (a free block holds {max})"),
        ));
    }
    let bests = (0..n)
        .map(|i| be16(b, hdr.saturating_add(i.saturating_mul(2))).unwrap_or(0))
        .collect();
    Ok(FreeBlock {
        firstdb,
        nvalid,
        nused,
        bests,
    })
}
