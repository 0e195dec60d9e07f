//! The superblock summary counters as the kernel recomputes them from the
//! AG headers at mount (`xfs_initialize_perag_data`), and the inodes the
//! AGI unlinked lists still hold, read from the replayed state.

use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::ag::{
    XfsAgf, XfsAgi, AGF_SECTOR, AGI_SECTOR, NULLAGINO, XFS_AGF_MAGIC, XFS_AGI_MAGIC,
};
use crate::xfs::fs::Fs;
use crate::xfs::image::Overlay;
use crate::xfs::read::ReadAt;
use serde::Serialize;
use zerocopy::FromBytes;

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

/// [`read`] as the bytes were when `ov` began recording (before the
/// mount-time work: the replayed image).
pub(super) fn read_recorded<R: ReadAt>(
    fs: &Fs<R>,
    ov: &Overlay,
    what: &'static str,
    off: u64,
    len: u64,
) -> Result<Vec<u8>> {
    let disk = fs.img.read_disk(what, off, len)?;
    let mut b = disk.clone();
    ov.apply_to(off, &mut b);
    for (i, sector) in b.chunks_mut(512).enumerate() {
        let at = (off / 512).saturating_add(u64::try_from(i).unwrap_or(u64::MAX));
        match ov.recorded(at) {
            Some(Some(old)) => {
                if let Some(o) = old.get(..sector.len()) {
                    sector.copy_from_slice(o);
                }
            }
            Some(None) => {
                let from = i.saturating_mul(512);
                if let Some(d) = disk.get(from..from.saturating_add(sector.len())) {
                    sector.copy_from_slice(d);
                }
            }
            None => {}
        }
    }
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
                    Location::Ag { agno },
                    format!("AG {agno} lies outside the filesystem"),
                )
            })?;
        let agf_at = base.saturating_add(ss.saturating_mul(AGF_SECTOR));
        let agi_at = base.saturating_add(ss.saturating_mul(AGI_SECTOR));
        let agf_bytes = read(fs, ov, "AGF", agf_at, ss)?;
        let agi_bytes = read(fs, ov, "AGI", agi_at, ss)?;
        let headers = XfsAgf::ref_from_prefix(&agf_bytes)
            .ok()
            .zip(XfsAgi::ref_from_prefix(&agi_bytes).ok())
            .map(|((agf, _), (agi, _))| (agf, agi))
            .filter(|(agf, agi)| {
                agf.agf_magicnum.get() == XFS_AGF_MAGIC && agi.agi_magicnum.get() == XFS_AGI_MAGIC
            });
        let Some((agf, agi)) = headers else {
            return Err(Error::corrupt(
                "AG headers",
                Location::Bytes {
                    offset: agf_at,
                    len: ss.saturating_mul(2),
                },
                format!("AG {agno}: AGF or AGI magic is wrong after replay"),
            ));
        };
        c.icount = c.icount.saturating_add(u64::from(agi.agi_count.get()));
        c.ifree = c.ifree.saturating_add(u64::from(agi.agi_freecount.get()));
        c.fdblocks = c
            .fdblocks
            .saturating_add(u64::from(agf.agf_freeblks.get()))
            .saturating_add(u64::from(agf.agf_flcount.get()))
            .saturating_add(u64::from(agf.agf_btreeblks.get()));
        for (bucket, head) in (0u32..).zip(agi.agi_unlinked.iter()) {
            let agino = head.get();
            if agino != NULLAGINO {
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
