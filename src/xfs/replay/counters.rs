//! The superblock summary counters as the kernel recomputes them from the
//! AG headers at mount (`xfs_initialize_perag_data`), and the inodes the
//! AGI unlinked lists still hold, read from the replayed state.

use crate::xfs::error::{Error, Location, Result};
use crate::xfs::fs::{be32, Fs};
use crate::xfs::image::Overlay;
use crate::xfs::read::ReadAt;
use serde::Serialize;

/// The counters as the kernel recomputes them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    pub icount: u64,
    pub ifree: u64,
    pub fdblocks: u64,
}

/// An inode still on an AGI unlinked list after the mount-time work: the
/// kernel frees it at mount (`xlog_recover_process_iunlinks`); this tool
/// could not (see `unlinked.rs`).
#[derive(Clone, Debug, Serialize)]
pub struct Unlinked {
    pub agno: u32,
    pub bucket: u32,
    pub agino: u32,
    pub ino: u64,
}

/// Read `len` bytes at byte `off` as replay left them.
pub(super) fn read<R: ReadAt>(
    fs: &Fs<R>,
    ov: &Overlay,
    what: &'static str,
    off: u64,
    len: u64,
) -> Result<Vec<u8>> {
    let mut b = fs.img.read_disk(what, off, len)?;
    ov.apply_to(off, &mut b);
    Ok(b)
}

/// Sum the AG headers of the replayed filesystem.
pub fn counters<R: ReadAt>(fs: &Fs<R>, ov: &Overlay) -> Result<(Counters, Vec<Unlinked>)> {
    let g = &fs.geo;
    let ss = u64::from(g.sectsize);
    let mut c = Counters::default();
    let mut unlinked = Vec::new();
    for agno in 0..g.agcount {
        let base = g
            .agb_to_daddr(
                crate::xfs::types::AgNumber(agno),
                crate::xfs::types::AgBlock(0),
            )
            .and_then(|d| d.byte_offset())
            .ok_or_else(|| {
                Error::corrupt(
                    "AG headers",
                    Location::Daddr { daddr: 0 },
                    format!("AG {agno} lies outside the filesystem"),
                )
            })?;
        let agf = read(fs, ov, "AGF", base.saturating_add(ss), ss)?;
        let agi = read(fs, ov, "AGI", base.saturating_add(ss.saturating_mul(2)), ss)?;
        if be32(&agf, 0) != Some(0x5841_4746) || be32(&agi, 0) != Some(0x5841_4749) {
            return Err(Error::corrupt(
                "AG headers",
                Location::Bytes {
                    offset: base.saturating_add(ss),
                    len: ss.saturating_mul(2),
                },
                format!("AG {agno}: AGF or AGI magic is wrong after replay"),
            ));
        }
        let f = |off: usize| u64::from(be32(&agf, off).unwrap_or(0));
        let i = |off: usize| u64::from(be32(&agi, off).unwrap_or(0));
        c.icount = c.icount.saturating_add(i(16));
        c.ifree = c.ifree.saturating_add(i(28));
        c.fdblocks = c
            .fdblocks
            .saturating_add(f(52))
            .saturating_add(f(48))
            .saturating_add(f(60));
        for bucket in 0..64u32 {
            let off =
                40usize.saturating_add(usize::try_from(bucket).unwrap_or(0).saturating_mul(4));
            let agino = be32(&agi, off).unwrap_or(u32::MAX);
            if agino != u32::MAX {
                let shift = u32::from(g.agblklog).saturating_add(u32::from(g.inopblog));
                let ino = u64::from(agno).checked_shl(shift).unwrap_or(0) | u64::from(agino);
                unlinked.push(Unlinked {
                    agno,
                    bucket,
                    agino,
                    ino,
                });
            }
        }
    }
    Ok((c, unlinked))
}
