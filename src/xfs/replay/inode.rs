//! Inode items in pass 2 (`xlog_recover_inode_commit_pass2`).
//!
//! ```text
//!  region 0  xfs_inode_log_format (56 bytes, or 52 from 32-bit hosts)
//!  region 1  xfs_log_dinode: the inode core in the writer's byte order
//!  region 2  data fork (inline bytes, extent records, or in-memory btree root)
//!  region 3  attr fork (region 2 when there is no data fork region)
//! ```
//!
//! The core is converted field by field to the big-endian disk inode,
//! except `di_next_unlinked` (kept from disk: unlinked lists are replayed
//! through inode buffers), `di_crc` (recomputed) and `di_lsn` (set to the
//! transaction's LSN). A btree root is converted from the in-memory block
//! form to the on-disk `bmdr` form, whose pointer array sits after as
//! many key slots as the fork can hold.

use super::{put_crc, set_be16, set_be32, set_be64, u64_of, ReadAt, State, WritePastEnd};
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::dinode::*;
use crate::xfs::format::dinode::{XfsBmdrBlock, XfsBtreeBlockLong, XfsDinode, XfsDinodeV2};
use crate::xfs::format::log::*;
use crate::xfs::format::sb::XFS_SB_FEAT_INCOMPAT_BIGTIME;
use crate::xfs::fs::Fs;
use crate::xfs::image::Overlay;
use crate::xfs::inode::Timestamp;
use crate::xfs::log::items::{InodeItem, Order};
use crate::xfs::replay::block_len;
use crate::xfs::types::Lsn;
use core::mem::{offset_of, size_of};
use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::FromBytes;

fn corrupt(daddr: u64, detail: String) -> Error {
    Error::corrupt("log inode item", Location::Daddr { daddr }, detail)
}

/// Replay one inode item.
pub fn commit_pass2<R: ReadAt>(
    st: &mut State<'_, R>,
    order: Order,
    it: &super::RItem,
    ii: &InodeItem,
    lsn: u64,
) -> Result<()> {
    let ino = ii.ino;
    let len = u32::try_from(ii.cluster_len).unwrap_or(0);
    if st.cancel.is_cancelled(ii.blkno, len) {
        st.cache.counts.inodes_cancelled = st.cache.counts.inodes_cancelled.saturating_add(1);
        return Ok(());
    }
    let daddr = u64::try_from(ii.blkno)
        .ok()
        .filter(|d| *d < st.geo.eofs() && len > 0)
        .ok_or_else(|| {
            corrupt(
                0,
                format!(
                    "inode {ino}: cluster buffer at daddr {} ({} sectors) lies outside the filesystem",
                    ii.blkno, ii.cluster_len
                ),
            )
        })?;
    let isize = usize::from(st.geo.inodesize);
    let boff = usize::try_from(ii.boffset).map_err(|_| {
        corrupt(
            daddr,
            format!("inode {ino}: ilf_boffset {} is negative", ii.boffset),
        )
    })?;
    let (mut data, stamp, was_dirty) = st.cache.take(daddr, len)?;
    let Some(dip) = data.get_mut(boff..boff.saturating_add(isize)) else {
        return Err(corrupt(
            daddr,
            format!(
                "inode {ino}: offset {boff} + {isize} lies outside its {}-byte cluster buffer",
                data.len()
            ),
        ));
    };
    if crate::xfs::fs::be16(dip, offset_of!(XfsDinode, di_magic)) != Some(XFS_DINODE_MAGIC) {
        return Err(corrupt(
            daddr,
            format!(
                "inode {ino}: the inode on disk at byte {boff} has magic {:#06x}, not 0x494e",
                crate::xfs::fs::be16(dip, offset_of!(XfsDinode, di_magic)).unwrap_or(0)
            ),
        ));
    }
    let ld: &[u8] = it.regions.get(1).map(Vec::as_slice).unwrap_or(&[]);
    if order.u16(ld, offset_of!(XfsDinode, di_magic)) != Some(XFS_DINODE_MAGIC) {
        return Err(corrupt(
            daddr,
            format!("inode {ino}: the logged inode core has no inode magic"),
        ));
    }
    // The v5 LSN rule: skip when the inode on disk is newer (strictly).
    if dip.get(4).copied().unwrap_or(0) >= 3 {
        let disk_lsn = crate::xfs::fs::be64(dip, offset_of!(XfsDinode, di_lsn)).unwrap_or(0);
        if disk_lsn != 0 && disk_lsn != u64::MAX && disk_lsn > lsn {
            st.cache.counts.inodes_skipped_lsn =
                st.cache.counts.inodes_skipped_lsn.saturating_add(1);
            let copy = dip.to_vec();
            if was_dirty {
                st.cache.put_back(daddr, len, data, stamp, lsn);
            }
            change_owners(st, ii, &copy, lsn)?;
            return Ok(());
        }
    }
    let mut flushiter_reset = false;
    if !st.geo.v5 {
        let log_fi = order
            .u16(ld, offset_of!(XfsDinodeV2, di_flushiter))
            .unwrap_or(0);
        let disk_fi = crate::xfs::fs::be16(dip, offset_of!(XfsDinodeV2, di_flushiter)).unwrap_or(0);
        if log_fi < disk_fi && !(disk_fi == 0xFFFF && log_fi < 0x7FFF) {
            st.cache.counts.inodes_skipped_lsn =
                st.cache.counts.inodes_skipped_lsn.saturating_add(1);
            if was_dirty {
                st.cache.put_back(daddr, len, data, stamp, lsn);
            }
            return Ok(());
        }
        flushiter_reset = true;
    }
    let mode = order.u16(ld, offset_of!(XfsDinode, di_mode)).unwrap_or(0);
    let format = ld.get(5).copied().unwrap_or(0);
    let version = ld.get(4).copied().unwrap_or(0);
    if mode & S_IFMT == S_IFREG
        && !matches!(
            format,
            XFS_DINODE_FMT_EXTENTS | XFS_DINODE_FMT_BTREE | XFS_DINODE_FMT_META_BTREE
        )
    {
        return Err(corrupt(
            daddr,
            format!("inode {ino}: regular file with data fork format {format}"),
        ));
    }
    if mode & S_IFMT == S_IFDIR
        && !matches!(
            format,
            XFS_DINODE_FMT_EXTENTS | XFS_DINODE_FMT_BTREE | XFS_DINODE_FMT_LOCAL
        )
    {
        return Err(corrupt(
            daddr,
            format!("inode {ino}: directory with data fork format {format}"),
        ));
    }
    let flags2 = if version >= 3 {
        u64_of(order, ld, offset_of!(XfsDinode, di_flags2)).unwrap_or(0)
    } else {
        0
    };
    let big = version >= 3 && flags2 & XFS_DIFLAG2_NREXT64 != 0;
    let (nextents, anextents) = if big {
        let pad = order
            .u16(ld, offset_of!(XfsDinode, di_anextents))
            .unwrap_or(0);
        if !st.geo.nrext64 || pad != 0 {
            return Err(corrupt(
                daddr,
                format!("inode {ino}: bad large extent counter format (pad {pad:#x})"),
            ));
        }
        (
            u64_of(order, ld, offset_of!(XfsDinode, di_big_nextents)).unwrap_or(0),
            u64::from(
                order
                    .u32(ld, offset_of!(XfsDinode, di_nextents))
                    .unwrap_or(0),
            ),
        )
    } else {
        if version == 3
            && u64_of(order, ld, offset_of!(XfsDinode, di_big_nextents)).unwrap_or(0) != 0
        {
            return Err(corrupt(
                daddr,
                format!("inode {ino}: di_v3_pad is not zero"),
            ));
        }
        (
            u64::from(
                order
                    .u32(ld, offset_of!(XfsDinode, di_nextents))
                    .unwrap_or(0),
            ),
            u64::from(
                order
                    .u16(ld, offset_of!(XfsDinode, di_anextents))
                    .unwrap_or(0),
            ),
        )
    };
    let nblocks = u64_of(order, ld, offset_of!(XfsDinode, di_nblocks)).unwrap_or(0);
    if nextents.saturating_add(anextents) > nblocks {
        return Err(corrupt(
            daddr,
            format!("inode {ino}: {nextents} + {anextents} extents but {nblocks} blocks"),
        ));
    }
    let forkoff = ld.get(82).copied().unwrap_or(0);
    if u32::from(forkoff) > u32::from(st.geo.inodesize) {
        return Err(corrupt(daddr, format!("inode {ino}: di_forkoff {forkoff}")));
    }
    let log_size = if st.geo.v5 { 176 } else { 96 };
    if ld.len() > log_size {
        return Err(corrupt(
            daddr,
            format!(
                "inode {ino}: logged core of {} bytes (at most {log_size})",
                ld.len()
            ),
        ));
    }
    let written = |w: WritePastEnd| w.in_structure("inode", daddr);
    log_dinode_to_disk(order, ld, dip, lsn, flushiter_reset).map_err(written)?;
    let fields = ii.fields;
    if fields & XFS_ILOG_DEV != 0 {
        let lit = dinode_size(dip);
        set_be32(dip, lit, ii.rdev.unwrap_or(0)).map_err(written)?;
    }
    let declared = it.total;
    if declared > 2 {
        let lit = dinode_size(dip);
        let dsize = dfork_dsize(dip, isize);
        let asize = dfork_asize(dip, isize);
        let aoff =
            lit.saturating_add(usize::from(dip.get(82).copied().unwrap_or(0)).saturating_mul(8));
        if fields & XFS_ILOG_DFORK != 0 {
            let src = region(it, 2, daddr, ino)?;
            match fields & XFS_ILOG_DFORK {
                XFS_ILOG_DDATA | XFS_ILOG_DEXT => copy_into(dip, lit, src),
                XFS_ILOG_DBROOT => {
                    bmbt_to_bmdr(src, dip, lit, dsize, st.geo.v5).map_err(written)?
                }
                _ => {}
            }
        }
        if fields & XFS_ILOG_AFORK != 0 {
            let index = if fields & XFS_ILOG_DFORK != 0 { 3 } else { 2 };
            let src = region(it, index, daddr, ino)?;
            match fields & XFS_ILOG_AFORK {
                XFS_ILOG_ADATA | XFS_ILOG_AEXT => {
                    let n = src.len().min(asize);
                    copy_into(dip, aoff, src.get(..n).unwrap_or(src));
                }
                XFS_ILOG_ABROOT => {
                    bmbt_to_bmdr(src, dip, aoff, asize, st.geo.v5).map_err(written)?
                }
                _ => {
                    return Err(corrupt(
                        daddr,
                        format!("inode {ino}: invalid attr fork flags {fields:#x}"),
                    ))
                }
            }
        }
    }
    let copy = dip.to_vec();
    if dip.get(4).copied().unwrap_or(0) >= 3 {
        put_crc(dip, XFS_DINODE_CRC_OFF);
    }
    st.cache.counts.inodes_replayed = st.cache.counts.inodes_replayed.saturating_add(1);
    st.cache.put(daddr, len, data, stamp, lsn);
    change_owners(st, ii, &copy, lsn)?;
    Ok(())
}

/// `xfs_recover_inode_owner_change`: an extent swap on v5 logs DOWNER or
/// AOWNER; every block of that fork's bmbt below the root (which lives in
/// the inode) gets this inode as `bb_owner`. Blocks already right are not
/// touched; changed ones get a new CRC (and the LSN only if replay
/// already stamps them in this LSN epoch).
fn change_owners<R: ReadAt>(
    st: &mut State<'_, R>,
    ii: &InodeItem,
    dip: &[u8],
    lsn: u64,
) -> Result<()> {
    if ii.fields & (XFS_ILOG_DOWNER | XFS_ILOG_AOWNER) == 0
        || crate::xfs::fs::be16(dip, offset_of!(XfsDinode, di_mode)).unwrap_or(0) == 0
        || !st.geo.v5
    {
        return Ok(());
    }
    let isize = usize::from(st.geo.inodesize);
    let lit = dinode_size(dip);
    let aoff = lit.saturating_add(usize::from(dip.get(82).copied().unwrap_or(0)).saturating_mul(8));
    let forks = [
        (
            XFS_ILOG_DOWNER,
            lit,
            dfork_dsize(dip, isize),
            dip.get(5).copied(),
        ),
        (
            XFS_ILOG_AOWNER,
            aoff,
            dfork_asize(dip, isize),
            dip.get(83).copied(),
        ),
    ];
    for (flag, off, size, format) in forks {
        if ii.fields & flag == 0 || format != Some(XFS_DINODE_FMT_BTREE) {
            continue;
        }
        let Some(fork) = dip.get(off..off.saturating_add(size)) else {
            continue;
        };
        let level = crate::xfs::fs::be16(fork, offset_of!(XfsBmdrBlock, bb_level)).unwrap_or(0);
        if level == 0 || level > 9 {
            continue;
        }
        let maxr = size.saturating_sub(4) / 16;
        let p = 4usize.saturating_add(maxr.saturating_mul(8));
        let Some(mut left) = crate::xfs::fs::be64(fork, p) else {
            continue;
        };
        let hdr = XFS_BTREE_LBLOCK_CRC_LEN;
        let bs = block_len(&st.geo);
        let bmaxr = bs.saturating_sub(hdr) / 16;
        let len = st.geo.blocksize / 512;
        let mut visited = 0u64;
        for _ in 0..level {
            let mut fsb = left;
            let mut first = true;
            loop {
                visited = visited.saturating_add(1);
                if visited > st.geo.dblocks {
                    return Ok(());
                }
                let Some(daddr) = fsb_daddr(&st.geo, fsb) else {
                    st.warnings.push(format!(
                        "inode {}: bmbt block {fsb} is outside the filesystem; owner change stopped",
                        ii.ino
                    ));
                    return Ok(());
                };
                let (mut b, stamp, was_dirty) = st.cache.take(daddr, len)?;
                if first {
                    first = false;
                    let p = hdr.saturating_add(bmaxr.saturating_mul(8));
                    left = crate::xfs::fs::be64(&b, p).unwrap_or(u64::MAX);
                }
                let right = crate::xfs::fs::be64(&b, offset_of!(XfsBtreeBlockLong, bb_rightsib))
                    .unwrap_or(u64::MAX);
                if crate::xfs::fs::be64(&b, offset_of!(XfsBtreeBlockLong, bb_owner)) != Some(ii.ino)
                {
                    set_be64(&mut b, offset_of!(XfsBtreeBlockLong, bb_owner), ii.ino)
                        .map_err(|w| w.in_structure("bmbt block", daddr))?;
                    let s = if was_dirty && stamp != super::Stamp::None {
                        stamp
                    } else {
                        super::Stamp::Whole {
                            lsn_off: None,
                            crc_off: XFS_BTREE_LBLOCK_CRC_OFF,
                        }
                    };
                    st.cache.put(daddr, len, b, s, lsn);
                } else if was_dirty {
                    st.cache.put_back(daddr, len, b, stamp, lsn);
                }
                if right == u64::MAX {
                    break;
                }
                fsb = right;
            }
        }
    }
    Ok(())
}

fn fsb_daddr(g: &super::Geo, fsb: u64) -> Option<u64> {
    let agno = u32::try_from(fsb >> g.agblklog).ok()?;
    let mask = 1u64.checked_shl(u32::from(g.agblklog))?.checked_sub(1)?;
    let agbno = u32::try_from(fsb & mask).ok()?;
    if agno >= g.agcount || agbno >= g.agblocks {
        return None;
    }
    g.agb_to_daddr(agno, agbno)
}

fn region(it: &super::RItem, i: usize, daddr: u64, ino: u64) -> Result<&[u8]> {
    it.regions
        .get(i)
        .map(Vec::as_slice)
        .ok_or_else(|| corrupt(daddr, format!("inode {ino}: fork region {i} is missing")))
}

fn copy_into(dip: &mut [u8], off: usize, src: &[u8]) {
    let end = off.saturating_add(src.len()).min(dip.len());
    let n = end.saturating_sub(off);
    if let (Some(d), Some(s)) = (dip.get_mut(off..end), src.get(..n)) {
        d.copy_from_slice(s);
    }
}

/// Size of the inode core by its version.
fn dinode_size(dip: &[u8]) -> usize {
    if dip.get(4).copied().unwrap_or(0) >= 3 {
        XFS_DINODE_V3_SIZE
    } else {
        XFS_DINODE_V2_SIZE
    }
}

/// `XFS_DFORK_DSIZE`: the data fork's bytes.
fn dfork_dsize(dip: &[u8], isize: usize) -> usize {
    let lit = isize.saturating_sub(dinode_size(dip));
    match dip.get(82).copied().unwrap_or(0) {
        0 => lit,
        f => usize::from(f).saturating_mul(8),
    }
}

/// `XFS_DFORK_ASIZE`: the attr fork's bytes.
fn dfork_asize(dip: &[u8], isize: usize) -> usize {
    let lit = isize.saturating_sub(dinode_size(dip));
    match dip.get(82).copied().unwrap_or(0) {
        0 => 0,
        f => lit.saturating_sub(usize::from(f).saturating_mul(8)),
    }
}

/// `xfs_bmbt_to_bmdr`: level and record count, then `numrecs` keys and
/// pointers; the source's pointers follow as many key slots as its
/// region holds, the destination's as many as the fork holds.
fn bmbt_to_bmdr(
    src: &[u8],
    dip: &mut [u8],
    fork: usize,
    fork_len: usize,
    v5: bool,
) -> Result<(), WritePastEnd> {
    let hdr = if v5 {
        XFS_BTREE_LBLOCK_CRC_LEN
    } else {
        XFS_BTREE_LBLOCK_LEN
    };
    let level = crate::xfs::fs::be16(src, offset_of!(XfsBtreeBlockLong, bb_level)).unwrap_or(0);
    let numrecs = crate::xfs::fs::be16(src, offset_of!(XfsBtreeBlockLong, bb_numrecs)).unwrap_or(0);
    set_be16(dip, fork, level)?;
    set_be16(dip, fork.saturating_add(2), numrecs)?;
    let src_max = src.len().saturating_sub(hdr) / 16;
    let dst_max = fork_len.saturating_sub(4) / 16;
    let n = usize::from(numrecs);
    let keys = n.saturating_mul(8);
    let src_keys = src.get(hdr..hdr.saturating_add(keys)).unwrap_or(&[]);
    copy_into(dip, fork.saturating_add(4), src_keys);
    let sp = hdr.saturating_add(src_max.saturating_mul(8));
    let src_ptrs = src.get(sp..sp.saturating_add(keys)).unwrap_or(&[]);
    let dp = fork
        .saturating_add(4)
        .saturating_add(dst_max.saturating_mul(8));
    copy_into(dip, dp, src_ptrs);
    Ok(())
}

/// The inode core laid over the first bytes of `b`, to write through;
/// a buffer shorter than the v3 core is a write past its end.
pub(super) fn core_mut(b: &mut [u8]) -> Result<&mut XfsDinode, WritePastEnd> {
    let block_len = b.len();
    XfsDinode::mut_from_prefix(b)
        .map(|(d, _)| d)
        .map_err(|_| WritePastEnd {
            off: 0,
            len: size_of::<XfsDinode>(),
            block_len,
        })
}

/// `xfs_log_dinode_to_disk`, into the on-disk inode `to` (through its
/// layout: only a buffer shorter than the v3 core fails).
fn log_dinode_to_disk(
    o: Order,
    from: &[u8],
    to: &mut [u8],
    lsn: u64,
    flushiter_reset: bool,
) -> Result<(), WritePastEnd> {
    let d = core_mut(to)?;
    let u16_at = |off: usize| U16::new(o.u16(from, off).unwrap_or(0));
    let u32_at = |off: usize| U32::new(o.u32(from, off).unwrap_or(0));
    let u64_at = |off: usize| U64::new(u64_of(o, from, off).unwrap_or(0));
    let byte_at = |off: usize| from.get(off).copied().unwrap_or(0);
    let version = byte_at(offset_of!(XfsDinode, di_version));
    let flags2 = if version >= 3 {
        u64_at(offset_of!(XfsDinode, di_flags2)).get()
    } else {
        0
    };
    let bigtime = version >= 3 && flags2 & XFS_DIFLAG2_BIGTIME != 0;
    // A bigtime stamp is one 64-bit count; else seconds and nanoseconds,
    // two 32-bit halves each in the writer's order.
    let ts = |off: usize| {
        if bigtime {
            u64_at(off)
        } else {
            let [a, b, c, e] = u32_at(off).get().to_be_bytes();
            let [f, g, h, i] = u32_at(off.saturating_add(4)).get().to_be_bytes();
            U64::new(u64::from_be_bytes([a, b, c, e, f, g, h, i]))
        }
    };
    d.di_magic = u16_at(offset_of!(XfsDinode, di_magic));
    d.di_mode = u16_at(offset_of!(XfsDinode, di_mode));
    d.di_version = version;
    d.di_format = byte_at(offset_of!(XfsDinode, di_format));
    d.di_metatype = u16_at(offset_of!(XfsDinode, di_metatype));
    d.di_uid = u32_at(offset_of!(XfsDinode, di_uid));
    d.di_gid = u32_at(offset_of!(XfsDinode, di_gid));
    d.di_nlink = u32_at(offset_of!(XfsDinode, di_nlink));
    d.di_projid_lo = u16_at(offset_of!(XfsDinode, di_projid_lo));
    d.di_projid_hi = u16_at(offset_of!(XfsDinode, di_projid_hi));
    d.di_atime = ts(offset_of!(XfsDinode, di_atime));
    d.di_mtime = ts(offset_of!(XfsDinode, di_mtime));
    d.di_ctime = ts(offset_of!(XfsDinode, di_ctime));
    d.di_size = u64_at(offset_of!(XfsDinode, di_size));
    d.di_nblocks = u64_at(offset_of!(XfsDinode, di_nblocks));
    d.di_extsize = u32_at(offset_of!(XfsDinode, di_extsize));
    d.di_forkoff = byte_at(offset_of!(XfsDinode, di_forkoff));
    d.di_aformat = byte_at(offset_of!(XfsDinode, di_aformat));
    d.di_dmevmask = u32_at(offset_of!(XfsDinode, di_dmevmask));
    d.di_dmstate = u16_at(offset_of!(XfsDinode, di_dmstate));
    d.di_flags = u16_at(offset_of!(XfsDinode, di_flags));
    d.di_gen = u32_at(offset_of!(XfsDinode, di_gen));
    if version == 3 {
        d.di_changecount = u64_at(offset_of!(XfsDinode, di_changecount));
        d.di_crtime = ts(offset_of!(XfsDinode, di_crtime));
        d.di_flags2 = U64::new(flags2);
        d.di_cowextsize = u32_at(offset_of!(XfsDinode, di_cowextsize));
        d.di_ino = u64_at(offset_of!(XfsDinode, di_ino));
        d.di_lsn = U64::new(lsn);
        d.di_pad2 = [0; 12];
        let uuid = offset_of!(XfsDinode, di_uuid);
        if let Some(s) = from
            .get(uuid..uuid.saturating_add(16))
            .and_then(|s| <[u8; 16]>::try_from(s).ok())
        {
            d.di_uuid = s;
        }
        d.di_big_nextents = U64::new(0);
    } else {
        let fi = if flushiter_reset {
            0
        } else {
            o.u16(from, offset_of!(XfsDinodeV2, di_flushiter))
                .unwrap_or(0)
        };
        // v2: where v3 has di_big_nextents, six pad bytes (zeroed) and
        // di_flushiter.
        d.di_big_nextents = U64::new(u64::from(fi));
    }
    if version >= 3 && flags2 & XFS_DIFLAG2_NREXT64 != 0 {
        d.di_big_nextents = u64_at(offset_of!(XfsDinode, di_big_nextents));
    }
    d.di_nextents = u32_at(offset_of!(XfsDinode, di_nextents));
    d.di_anextents = u16_at(offset_of!(XfsDinode, di_anextents));
    Ok(())
}

/// What logging an inode's core changes besides the fields logged
/// (`xfs_inode_item_precommit`): on a bigtime filesystem, an inode not yet
/// in the bigtime encoding moves to it (its four timestamps re-encoded).
pub(super) fn upgrade_logged_core<R: ReadAt>(fs: &Fs<R>, b: &mut [u8]) -> Result<(), WritePastEnd> {
    if fs.sb.features_incompat & XFS_SB_FEAT_INCOMPAT_BIGTIME == 0 {
        return Ok(());
    }
    let d = core_mut(b)?;
    let flags2 = d.di_flags2.get();
    if d.di_version != 3 || flags2 & XFS_DIFLAG2_BIGTIME != 0 {
        return Ok(());
    }
    for t in [
        &mut d.di_atime,
        &mut d.di_mtime,
        &mut d.di_ctime,
        &mut d.di_crtime,
    ] {
        let old = Timestamp::decode(t.get(), false);
        t.set(Timestamp::encode(old.sec, old.nsec, true));
    }
    d.di_flags2.set(flags2 | XFS_DIFLAG2_BIGTIME);
    Ok(())
}

/// The whole sectors around an inode at byte `off`, as the replayed state
/// `ov` has them, with the inode's bytes `b` laid in, stamped with `lsn`
/// and its CRC recomputed on v5: (daddr, bytes).
pub(crate) fn inode_sectors<R: ReadAt>(
    fs: &Fs<R>,
    ov: &Overlay,
    off: u64,
    mut b: Vec<u8>,
    lsn: Lsn,
) -> Result<(u64, Vec<u8>)> {
    let start = off.saturating_sub(off % 512);
    if fs.geo.v5 {
        set_be64(&mut b, offset_of!(XfsDinode, di_lsn), lsn.raw())
            .map_err(|w| w.in_structure("inode", start / 512))?;
        put_crc(&mut b, crate::xfs::format::dinode::XFS_DINODE_CRC_OFF);
    }
    let within = usize::try_from(off % 512).unwrap_or(0);
    let len = u64::try_from(within.saturating_add(b.len()))
        .unwrap_or(u64::MAX)
        .div_ceil(512)
        .saturating_mul(512);
    let mut sec = fs.img.read_disk("inode", start, len)?;
    ov.apply_to(start, &mut sec);
    if let Some(d) = sec.get_mut(within..within.saturating_add(b.len())) {
        d.copy_from_slice(&b);
    }
    Ok((start / 512, sec))
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::cast_possible_truncation
)]
mod tests {
    use super::*;

    /// A little-endian log dinode (v3, bigtime or not).
    fn log_dinode(bigtime: bool) -> Vec<u8> {
        let mut d = vec![0u8; 176];
        d[0..2].copy_from_slice(&0x494eu16.to_le_bytes());
        d[2..4].copy_from_slice(&0o100644u16.to_le_bytes());
        d[4] = 3;
        d[5] = 2;
        d[8..12].copy_from_slice(&1000u32.to_le_bytes());
        d[16..20].copy_from_slice(&2u32.to_le_bytes());
        // atime: bigtime u64, or sec/nsec.
        d[32..36].copy_from_slice(&0x1122_3344u32.to_le_bytes());
        d[36..40].copy_from_slice(&0x0000_0055u32.to_le_bytes());
        d[56..64].copy_from_slice(&12345u64.to_le_bytes());
        d[76..80].copy_from_slice(&3u32.to_le_bytes());
        d[82] = 24;
        d[96..100].copy_from_slice(&0xFFFF_FFFFu32.to_le_bytes());
        d[112..120].copy_from_slice(&0xdead_beefu64.to_le_bytes());
        let flags2: u64 = if bigtime { XFS_DIFLAG2_BIGTIME } else { 0 };
        d[120..128].copy_from_slice(&flags2.to_le_bytes());
        d[132] = 9;
        d[152..160].copy_from_slice(&131u64.to_le_bytes());
        d[160..176].copy_from_slice(&[7u8; 16]);
        d
    }

    #[test]
    fn the_logged_core_becomes_the_disk_inode_except_unlinked_crc_and_lsn() {
        for bigtime in [false, true] {
            let ld = log_dinode(bigtime);
            let mut dip = vec![0u8; 512];
            dip[96..100].copy_from_slice(&42u32.to_be_bytes());
            dip[24] = 0xEE;
            log_dinode_to_disk(Order::Little, &ld, &mut dip, 0x1_0000_0077, false).unwrap();
            assert_eq!(&dip[0..2], b"IN");
            assert_eq!(crate::xfs::fs::be16(&dip, 2), Some(0o100644));
            assert_eq!(crate::xfs::fs::be32(&dip, 8), Some(1000));
            assert_eq!(crate::xfs::fs::be32(&dip, 16), Some(2));
            assert_eq!(crate::xfs::fs::be64(&dip, 56), Some(12345));
            assert_eq!(crate::xfs::fs::be32(&dip, 76), Some(3));
            assert_eq!(dip[82], 24);
            assert_eq!(
                crate::xfs::fs::be32(&dip, 96),
                Some(42),
                "di_next_unlinked kept"
            );
            assert_eq!(
                crate::xfs::fs::be64(&dip, 112),
                Some(0x1_0000_0077),
                "di_lsn set"
            );
            assert_eq!(&dip[132..144], &[0; 12], "di_pad2 zeroed");
            assert_eq!(dip[24], 0, "di_v3_pad zeroed");
            assert_eq!(crate::xfs::fs::be64(&dip, 152), Some(131));
            assert_eq!(&dip[160..176], &[7; 16]);
            if bigtime {
                assert_eq!(crate::xfs::fs::be64(&dip, 32), Some(0x0000_0055_1122_3344));
            } else {
                assert_eq!(crate::xfs::fs::be32(&dip, 32), Some(0x1122_3344));
                assert_eq!(crate::xfs::fs::be32(&dip, 36), Some(0x55));
            }
        }
    }

    #[test]
    fn an_incore_btree_root_becomes_bmdr_with_pointers_after_the_forks_key_slots() {
        // In-core root: 72-byte header, level 1, 2 records, room for 3.
        let mut src = vec![0u8; 72 + 3 * 16];
        src[4..6].copy_from_slice(&1u16.to_be_bytes());
        src[6..8].copy_from_slice(&2u16.to_be_bytes());
        src[72..80].copy_from_slice(&10u64.to_be_bytes());
        src[80..88].copy_from_slice(&20u64.to_be_bytes());
        src[72 + 24..72 + 32].copy_from_slice(&1000u64.to_be_bytes());
        src[72 + 32..72 + 40].copy_from_slice(&2000u64.to_be_bytes());
        let mut dip = vec![0xCCu8; 512];
        // A 192-byte data fork at 176: (192-4)/16 = 11 key slots.
        bmbt_to_bmdr(&src, &mut dip, 176, 192, true).unwrap();
        assert_eq!(crate::xfs::fs::be16(&dip, 176), Some(1));
        assert_eq!(crate::xfs::fs::be16(&dip, 178), Some(2));
        assert_eq!(crate::xfs::fs::be64(&dip, 180), Some(10));
        assert_eq!(crate::xfs::fs::be64(&dip, 188), Some(20));
        let ptrs = 176 + 4 + 11 * 8;
        assert_eq!(crate::xfs::fs::be64(&dip, ptrs), Some(1000));
        assert_eq!(crate::xfs::fs::be64(&dip, ptrs + 8), Some(2000));
        assert_eq!(dip[196], 0xCC, "unused key slots keep their bytes");
        // A short or garbage root does not panic.
        bmbt_to_bmdr(&[0xFF; 10], &mut dip, 176, 192, true).unwrap();
        bmbt_to_bmdr(&[0xFF; 200], &mut dip, 500, 192, true).unwrap();
    }

    /// Writes that do not fit the inode are errors naming the write, not
    /// skipped: a root whose header would end past the inode, a core
    /// converted into a buffer shorter than the v3 core.
    #[test]
    fn writes_past_the_inode_are_errors() {
        let mut dip = vec![0xCCu8; 512];
        let e = bmbt_to_bmdr(&[0xFF; 200], &mut dip, 511, 192, true).unwrap_err();
        assert_eq!(
            e,
            WritePastEnd {
                off: 511,
                len: 2,
                block_len: 512
            }
        );
        assert_eq!(dip[511], 0xCC, "nothing written");
        let mut short = vec![0u8; 100];
        let e = log_dinode_to_disk(Order::Little, &log_dinode(false), &mut short, 1, false)
            .unwrap_err();
        assert_eq!((e.off, e.len, e.block_len), (0, 176, 100));
        assert_eq!(
            e.in_structure("inode", 64).to_string(),
            "inode at daddr 64, byte 0: a 176-byte write at byte 0 runs past the end of the 100-byte block"
        );
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn an_extent_swap_gives_the_forks_bmbt_blocks_their_new_owner() {
        use crate::xfs::replay::{Cache, Geo, State};
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
        // Two bmbt leaves at AG 1 blocks 100 and 101, owned by inode 5.
        let fsb = |agbno: u64| (1u64 << geo.agblklog) | agbno;
        let bs = geo.blocksize as usize;
        for (agbno, right) in [(100u64, fsb(101)), (101, u64::MAX)] {
            let mut b = vec![0u8; bs];
            b[..4].copy_from_slice(b"BMA3");
            b[8..16].copy_from_slice(&u64::MAX.to_be_bytes());
            b[16..24].copy_from_slice(&right.to_be_bytes());
            b[32..40].copy_from_slice(&0x1_0000_0009u64.to_be_bytes());
            b[56..64].copy_from_slice(&5u64.to_be_bytes());
            let d = geo.agb_to_daddr(1, agbno as u32).unwrap();
            st.cache.written.put(d, &b);
        }
        // A v3 inode whose data fork is a btree root of level 1.
        let mut dip = vec![0u8; 512];
        dip[2..4].copy_from_slice(&0o100644u16.to_be_bytes());
        dip[4] = 3;
        dip[5] = XFS_DINODE_FMT_BTREE;
        dip[176..178].copy_from_slice(&1u16.to_be_bytes());
        dip[178..180].copy_from_slice(&1u16.to_be_bytes());
        let maxr = (336 - 4) / 16;
        let p = 176 + 4 + maxr * 8;
        dip[p..p + 8].copy_from_slice(&fsb(100).to_be_bytes());
        let ii = InodeItem {
            ino: 777,
            fields: XFS_ILOG_CORE | XFS_ILOG_DBROOT | XFS_ILOG_DOWNER,
            dsize: 0,
            asize: 0,
            blkno: 0,
            cluster_len: 0,
            boffset: 0,
            rdev: None,
            format_len: 56,
            core: None,
        };
        change_owners(&mut st, &ii, &dip, 0x2_0000_0001).unwrap();
        st.cache.flush().unwrap();
        for agbno in [100u32, 101] {
            let d = geo.agb_to_daddr(1, agbno).unwrap();
            let mut b = Vec::new();
            for i in 0..(bs as u64 / 512) {
                b.extend_from_slice(st.cache.written.sector(d + i).unwrap());
            }
            assert_eq!(crate::xfs::fs::be64(&b, 56), Some(777));
            assert_eq!(
                crate::xfs::fs::be64(&b, 32),
                Some(0x1_0000_0009),
                "LSN kept"
            );
            let crc = u32::from_le_bytes(b[64..68].try_into().unwrap());
            assert_eq!(crc, crate::xfs::sb::crc_with_hole(&b, 64));
        }
    }

    #[test]
    fn fork_sizes_follow_forkoff() {
        let mut dip = vec![0u8; 512];
        dip[4] = 3;
        assert_eq!(dfork_dsize(&dip, 512), 336);
        assert_eq!(dfork_asize(&dip, 512), 0);
        dip[82] = 24;
        assert_eq!(dfork_dsize(&dip, 512), 192);
        assert_eq!(dfork_asize(&dip, 512), 144);
        dip[82] = 255;
        assert_eq!(
            dfork_asize(&dip, 512),
            0,
            "a forkoff past the inode leaves no attr fork"
        );
    }
}
