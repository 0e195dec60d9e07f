//! Inode-create items in pass 2 (`xlog_recover_icreate_commit_pass2`).
//!
//! v5 filesystems do not log new inode chunks; they log this item, and
//! recovery writes every inode cluster of the chunk afresh
//! (`xfs_ialloc_inode_init`): zeroes, then in each inode slot the magic,
//! version 3, the generation, a null unlinked pointer, the inode number,
//! the metadata uuid and a CRC. If any cluster of the chunk is cancelled
//! (freed later), the whole item is skipped.

use super::{put_crc, ReadAt, State};
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::ag::NULLAGINO;
use crate::xfs::format::dinode::{XfsDinode, XFS_DINODE_CRC_OFF, XFS_DINODE_MAGIC};
use crate::xfs::log::items::IcreateItem;
use zerocopy::FromBytes;

fn bad(what: &str, ic: &IcreateItem) -> Error {
    Error::corrupt(
        "log icreate item",
        Location::AgBlock {
            agno: ic.ag,
            agbno: ic.agbno,
        },
        format!(
            "{what} (ag {}, agbno {}, count {}, isize {}, length {})",
            ic.ag, ic.agbno, ic.count, ic.isize, ic.length
        ),
    )
}

pub fn commit_pass2<R: ReadAt>(st: &mut State<'_, R>, ic: &IcreateItem, _lsn: u64) -> Result<()> {
    let g = st.geo;
    if ic.ag >= g.agcount {
        return Err(bad("bad AG number", ic));
    }
    if ic.agbno == 0 || ic.agbno == u32::MAX || ic.agbno >= g.agblocks {
        return Err(bad("bad AG block", ic));
    }
    if ic.isize != u32::from(g.inodesize) {
        return Err(bad("inode size differs from the superblock's", ic));
    }
    if ic.count == 0 {
        return Err(bad("zero inode count", ic));
    }
    if ic.length == 0 || ic.length >= g.agblocks {
        return Err(bad("bad length", ic));
    }
    if ic.length != g.ialloc_blks && ic.length != g.ialloc_min_blks {
        return Err(bad("unsupported chunk length", ic));
    }
    if ic.count >> g.inopblog != ic.length {
        return Err(bad("inode count and chunk length disagree", ic));
    }
    let bpc = g.blocks_per_cluster.max(1);
    let bb_per_cluster = bpc
        .checked_shl(u32::from(g.blocklog).saturating_sub(9))
        .unwrap_or(u32::MAX);
    let nbufs = ic.length.checked_div(bpc).unwrap_or(0);
    let mut cancelled = 0u32;
    let mut daddrs = Vec::new();
    for i in 0..nbufs {
        let agbno = ic.agbno.saturating_add(i.saturating_mul(bpc));
        let d = g
            .agb_to_daddr(ic.ag, agbno)
            .ok_or_else(|| bad("cluster outside the filesystem", ic))?;
        if st
            .cancel
            .is_cancelled(i64::try_from(d).unwrap_or(i64::MAX), bb_per_cluster)
        {
            cancelled = cancelled.saturating_add(1);
        }
        daddrs.push(d);
    }
    if cancelled > 0 {
        if cancelled != nbufs {
            st.warnings.push(format!(
                "icreate of AG {} block {}: {cancelled} of {nbufs} clusters cancelled; the whole chunk is skipped",
                ic.ag, ic.agbno
            ));
        }
        st.cache.counts.icreates_cancelled = st.cache.counts.icreates_cancelled.saturating_add(1);
        return Ok(());
    }
    // The chunk's first inode number (v5: every new inode gets its number).
    let agino = u64::from(ic.agbno) << g.inopblog;
    let mut ino =
        (u64::from(ic.ag) << (u32::from(g.agblklog).saturating_add(u32::from(g.inopblog)))) | agino;
    let isz = usize::from(g.inodesize).max(1);
    for d in daddrs {
        let mut data = st.cache.get_new(d, bb_per_cluster);
        data.fill(0);
        for dip in data
            .chunks_mut(isz)
            .take(usize::try_from(g.inodes_per_cluster).unwrap_or(0))
        {
            let this = ino;
            ino = ino.saturating_add(1);
            // A v5 inode is at least 512 bytes: the core always fits.
            let Ok((core, _)) = XfsDinode::mut_from_prefix(dip) else {
                continue;
            };
            core.di_magic.set(XFS_DINODE_MAGIC);
            core.di_version = 3;
            core.di_gen.set(ic.gen);
            core.di_next_unlinked.set(NULLAGINO);
            core.di_ino.set(this);
            core.di_uuid = g.meta_uuid;
            put_crc(dip, XFS_DINODE_CRC_OFF);
        }
        st.cache.put(d, bb_per_cluster, data, super::Stamp::None, 0);
    }
    st.cache.counts.icreates_replayed = st.cache.counts.icreates_replayed.saturating_add(1);
    Ok(())
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::cast_possible_truncation
)]
mod tests {
    use super::*;
    use crate::xfs::replay::{Cache, Geo, State};

    #[test]
    fn icreate_items_are_checked_and_write_whole_clusters() {
        let fs = crate::xfs::testutil::fixture_fs("log-xattrs");
        let geo = Geo::of(&fs);
        let mut st = State {
            geo,
            cache: Cache::new(&fs),
            cancel: Default::default(),
            intents: Default::default(),
            warnings: Vec::new(),
            ctx: crate::xfs::log::ItemContext::of(&fs, Default::default()),
        };
        let good = IcreateItem {
            ag: 1,
            agbno: 16,
            count: 64,
            isize: u32::from(geo.inodesize),
            length: geo.ialloc_blks,
            gen: 77,
        };
        for bad in [
            IcreateItem {
                ag: geo.agcount,
                ..good
            },
            IcreateItem { agbno: 0, ..good },
            IcreateItem { isize: 256, ..good },
            IcreateItem { count: 0, ..good },
            IcreateItem { length: 3, ..good },
            IcreateItem { count: 128, ..good },
        ] {
            assert!(commit_pass2(&mut st, &bad, 0).is_err(), "{bad:?}");
        }
        commit_pass2(&mut st, &good, 0).unwrap();
        st.cache.flush().unwrap();
        let first = geo.agb_to_daddr(1, 16).unwrap();
        let isz = geo.inodesize as usize;
        let sector = st.cache.written.sector(first).unwrap();
        assert_eq!(&sector[..2], b"IN");
        assert_eq!(sector[4], 3);
        let ino = (1u64 << (geo.agblklog + geo.inopblog)) | (16u64 << geo.inopblog);
        assert_eq!(crate::xfs::fs::be64(sector, 152), Some(ino));
        assert_eq!(crate::xfs::fs::be32(sector, 92), Some(77));
        assert_eq!(crate::xfs::fs::be32(sector, 96), Some(NULLAGINO));
        let crc = u32::from_le_bytes(sector[100..104].try_into().unwrap());
        assert_eq!(
            crc,
            crate::xfs::sb::crc_with_hole(&sector[..isz.min(512)], 100)
        );
        // 64 inodes written.
        let n = st.cache.written.len() as u64 * 512 / u64::from(geo.inodesize);
        assert_eq!(n, 64);
        assert_eq!(st.cache.counts.icreates_replayed, 1);
    }
}
