//! Buffer items in pass 2 (`xlog_recover_buf_commit_pass2`).
//!
//! ```text
//!  cancel item          -> drop one count from the cancel table, nothing else
//!  cancelled buffer     -> skipped
//!  v5: LSN of the block on disk (found by its magic) >= transaction LSN -> skipped
//!  INODE_BUF            -> only di_next_unlinked of each inode the runs cover
//!  dquot buffers        -> skipped (no quota mount options)
//!  otherwise            -> each run of dirty 128-byte chunks from its region;
//!                          the buffer type picks the write verifier that stamps
//!                          the LSN and recomputes the CRC when it is written
//! ```

use super::{put_crc, set_be64, ReadAt, Stamp, State};
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::ag::{
    XfsAgf, XfsAgfl, XfsAgi, XFS_AGFL_CRC_OFF, XFS_AGFL_MAGIC, XFS_AGF_CRC_OFF, XFS_AGF_MAGIC,
    XFS_AGI_CRC_OFF, XFS_AGI_MAGIC,
};
use crate::xfs::format::attr::{XFS_ATTR3_LEAF_MAGIC, XFS_ATTR3_RMT_MAGIC, XFS_ATTR_LEAF_MAGIC};
use crate::xfs::format::btree::*;
use crate::xfs::format::da::{
    XfsDa3Blkinfo, XFS_DA3_CRC_OFF, XFS_DA3_NODE_MAGIC, XFS_DA_MAGIC_OFF, XFS_DA_NODE_MAGIC,
};
use crate::xfs::format::dinode::{
    XfsBtreeBlockLong, XfsDsymlinkHdr, XFS_BMAP_CRC_MAGIC, XFS_BMAP_MAGIC,
    XFS_BTREE_LBLOCK_CRC_OFF, XFS_DINODE_MAGIC, XFS_DSYMLINK_CRC_OFF, XFS_SYMLINK_MAGIC,
};
use crate::xfs::format::dir2::{
    XfsDir3BlkHdr, XFS_DIR2_BLOCK_MAGIC, XFS_DIR2_DATA_MAGIC, XFS_DIR2_FREE_MAGIC,
    XFS_DIR2_LEAF1_MAGIC, XFS_DIR2_LEAFN_MAGIC, XFS_DIR3_BLOCK_MAGIC, XFS_DIR3_DATA_MAGIC,
    XFS_DIR3_FREE_MAGIC, XFS_DIR3_LEAF1_MAGIC, XFS_DIR3_LEAFN_MAGIC,
};
use crate::xfs::format::log::*;
use crate::xfs::format::sb::{XfsDsb, XFS_SB_CRC_OFF, XFS_SB_MAGIC};
use crate::xfs::fs::{be16, be32, be64};
use crate::xfs::log::bitmap::{contig_bits, next_bit};
use crate::xfs::log::items::BufItem;
use core::mem::offset_of;

/// The LSN a block carries, found by its magic as recovery does
/// (`xlog_recover_get_buf_lsn`); `None` means "recover it regardless"
/// (no LSN, unknown contents, another filesystem's block, or v4).
pub fn block_lsn(b: &[u8], geo: &super::Geo) -> Option<u64> {
    if !geo.v5 {
        return None;
    }
    let magic32 = be32(b, 0).unwrap_or(0);
    let found = match magic32 {
        XFS_ABTB_CRC_MAGIC | XFS_ABTC_CRC_MAGIC | XFS_ABTB_MAGIC | XFS_ABTC_MAGIC
        | XFS_RMAP_CRC_MAGIC | XFS_REFC_CRC_MAGIC | XFS_FIBT_CRC_MAGIC | XFS_FIBT_MAGIC
        | XFS_IBT_CRC_MAGIC | XFS_IBT_MAGIC => Some((
            offset_of!(XfsBtreeSblock, bb_lsn),
            offset_of!(XfsBtreeSblock, bb_uuid),
        )),
        XFS_BMAP_CRC_MAGIC | XFS_BMAP_MAGIC => Some((
            offset_of!(XfsBtreeBlockLong, bb_lsn),
            offset_of!(XfsBtreeBlockLong, bb_uuid),
        )),
        XFS_AGF_MAGIC => Some((offset_of!(XfsAgf, agf_lsn), offset_of!(XfsAgf, agf_uuid))),
        XFS_AGFL_MAGIC => Some((
            offset_of!(XfsAgfl, agfl_lsn),
            offset_of!(XfsAgfl, agfl_uuid),
        )),
        XFS_AGI_MAGIC => Some((offset_of!(XfsAgi, agi_lsn), offset_of!(XfsAgi, agi_uuid))),
        XFS_SYMLINK_MAGIC => Some((
            offset_of!(XfsDsymlinkHdr, sl_lsn),
            offset_of!(XfsDsymlinkHdr, sl_uuid),
        )),
        XFS_DIR3_BLOCK_MAGIC | XFS_DIR3_DATA_MAGIC | XFS_DIR3_FREE_MAGIC => Some((
            offset_of!(XfsDir3BlkHdr, lsn),
            offset_of!(XfsDir3BlkHdr, uuid),
        )),
        XFS_ATTR3_RMT_MAGIC => return None,
        // The superblock: sb_meta_uuid when the filesystem has META_UUID.
        XFS_SB_MAGIC => Some((
            offset_of!(XfsDsb, sb_lsn),
            if geo.meta_uuid_feature {
                offset_of!(XfsDsb, sb_meta_uuid)
            } else {
                offset_of!(XfsDsb, sb_uuid)
            },
        )),
        _ => None,
    };
    if let Some((lsn_off, uuid_off)) = found {
        let lsn = be64(b, lsn_off).unwrap_or(u64::MAX);
        if lsn != u64::MAX {
            let u = b.get(uuid_off..uuid_off.saturating_add(16));
            return (u == Some(geo.meta_uuid.as_slice())).then_some(lsn);
        }
    }
    let magicda = be16(b, XFS_DA_MAGIC_OFF).unwrap_or(0);
    if matches!(
        magicda,
        XFS_DIR3_LEAF1_MAGIC | XFS_DIR3_LEAFN_MAGIC | XFS_DA3_NODE_MAGIC
    ) {
        // These are compared with sb_uuid, not the meta uuid.
        let lsn = be64(b, offset_of!(XfsDa3Blkinfo, lsn)).unwrap_or(u64::MAX);
        if lsn != u64::MAX {
            let at = offset_of!(XfsDa3Blkinfo, uuid);
            return (b.get(at..at.saturating_add(16)) == Some(geo.uuid.as_slice())).then_some(lsn);
        }
    }
    None
}

/// Which write verifier a replayed buffer gets (`xlog_recover_validate_buf_type`):
/// the buffer type must agree with the block's magic.
pub fn stamp_for(buf_type: u8, b: &[u8], blocksize: u32) -> Stamp {
    let magic32 = be32(b, 0).unwrap_or(0);
    let magicda = be16(b, XFS_DA_MAGIC_OFF).unwrap_or(0);
    let whole = |lsn_off: usize, crc_off: usize| Stamp::Whole {
        lsn_off: Some(lsn_off),
        crc_off,
    };
    // Directory blocks (xfs_dir3_blk_hdr) and da blocks (xfs_da3_blkinfo).
    let dir3 = whole(
        offset_of!(XfsDir3BlkHdr, lsn),
        offset_of!(XfsDir3BlkHdr, crc),
    );
    let da3 = whole(offset_of!(XfsDa3Blkinfo, lsn), XFS_DA3_CRC_OFF);
    match buf_type {
        XFS_BLFT_BTREE_BUF => match magic32 {
            XFS_ABTB_CRC_MAGIC | XFS_ABTB_MAGIC | XFS_ABTC_CRC_MAGIC | XFS_ABTC_MAGIC
            | XFS_IBT_CRC_MAGIC | XFS_IBT_MAGIC | XFS_FIBT_CRC_MAGIC | XFS_FIBT_MAGIC
            | XFS_RMAP_CRC_MAGIC | XFS_REFC_CRC_MAGIC => {
                whole(offset_of!(XfsBtreeSblock, bb_lsn), XFS_BTREE_SBLOCK_CRC_OFF)
            }
            XFS_BMAP_CRC_MAGIC | XFS_BMAP_MAGIC => whole(
                offset_of!(XfsBtreeBlockLong, bb_lsn),
                XFS_BTREE_LBLOCK_CRC_OFF,
            ),
            _ => Stamp::None,
        },
        XFS_BLFT_AGF_BUF if magic32 == XFS_AGF_MAGIC => {
            whole(offset_of!(XfsAgf, agf_lsn), XFS_AGF_CRC_OFF)
        }
        XFS_BLFT_AGFL_BUF if magic32 == XFS_AGFL_MAGIC => {
            whole(offset_of!(XfsAgfl, agfl_lsn), XFS_AGFL_CRC_OFF)
        }
        XFS_BLFT_AGI_BUF if magic32 == XFS_AGI_MAGIC => {
            whole(offset_of!(XfsAgi, agi_lsn), XFS_AGI_CRC_OFF)
        }
        XFS_BLFT_SYMLINK_BUF if magic32 == XFS_SYMLINK_MAGIC => {
            whole(offset_of!(XfsDsymlinkHdr, sl_lsn), XFS_DSYMLINK_CRC_OFF)
        }
        XFS_BLFT_DIR_BLOCK_BUF
            if magic32 == XFS_DIR3_BLOCK_MAGIC || magic32 == XFS_DIR2_BLOCK_MAGIC =>
        {
            dir3
        }
        XFS_BLFT_DIR_DATA_BUF
            if magic32 == XFS_DIR3_DATA_MAGIC || magic32 == XFS_DIR2_DATA_MAGIC =>
        {
            dir3
        }
        XFS_BLFT_DIR_FREE_BUF
            if magic32 == XFS_DIR3_FREE_MAGIC || magic32 == XFS_DIR2_FREE_MAGIC =>
        {
            dir3
        }
        XFS_BLFT_DIR_LEAF1_BUF
            if magicda == XFS_DIR3_LEAF1_MAGIC || magicda == XFS_DIR2_LEAF1_MAGIC =>
        {
            da3
        }
        XFS_BLFT_DIR_LEAFN_BUF
            if magicda == XFS_DIR3_LEAFN_MAGIC || magicda == XFS_DIR2_LEAFN_MAGIC =>
        {
            da3
        }
        XFS_BLFT_DA_NODE_BUF if magicda == XFS_DA3_NODE_MAGIC || magicda == XFS_DA_NODE_MAGIC => {
            da3
        }
        XFS_BLFT_ATTR_LEAF_BUF
            if magicda == XFS_ATTR3_LEAF_MAGIC || magicda == XFS_ATTR_LEAF_MAGIC =>
        {
            da3
        }
        XFS_BLFT_ATTR_RMT_BUF if magic32 == XFS_ATTR3_RMT_MAGIC => Stamp::PerBlock { blocksize },
        XFS_BLFT_SB_BUF if magic32 == XFS_SB_MAGIC => {
            whole(offset_of!(XfsDsb, sb_lsn), XFS_SB_CRC_OFF)
        }
        _ => Stamp::None,
    }
}

/// Stamp `lsn` and recompute the CRC(s) as the write verifier would.
/// Returns whether anything was stamped. Blocks whose magic no longer
/// fits are left alone (the kernel's verifier would refuse the write).
pub fn apply_stamp(b: &mut [u8], stamp: Stamp, lsn: u64) -> bool {
    match stamp {
        Stamp::None => false,
        Stamp::Whole { lsn_off, crc_off } => {
            if crc_off.saturating_add(4) > b.len() {
                return false;
            }
            // A block too short for its header's LSN is left alone too.
            if let Some(o) = lsn_off {
                if set_be64(b, o, lsn).is_err() {
                    return false;
                }
            }
            put_crc(b, crc_off);
            true
        }
        Stamp::PerBlock { blocksize } => {
            // Remote attribute blocks: one CRC per filesystem block; their
            // LSN stays as it is.
            let bs = usize::try_from(blocksize).unwrap_or(usize::MAX).max(512);
            let mut any = false;
            for blk in b.chunks_mut(bs) {
                if blk.len() == bs && be32(blk, 0) == Some(XFS_ATTR3_RMT_MAGIC) {
                    put_crc(blk, 12);
                    any = true;
                }
            }
            any
        }
    }
}

fn corrupt(daddr: u64, detail: String) -> Error {
    Error::corrupt("log buffer item", Location::Daddr { daddr }, detail)
}

/// Replay one buffer item.
pub fn commit_pass2<R: ReadAt>(
    st: &mut State<'_, R>,
    it: &super::RItem,
    b: &BufItem,
    lsn: u64,
) -> Result<()> {
    let len = u32::from(b.len);
    let counts = &mut st.cache.counts;
    if b.cancel() {
        st.cancel.put(b.blkno, len);
        counts.cancel_items = counts.cancel_items.saturating_add(1);
        return Ok(());
    }
    if st.cancel.is_cancelled(b.blkno, len) {
        counts.buffers_cancelled = counts.buffers_cancelled.saturating_add(1);
        return Ok(());
    }
    let daddr = u64::try_from(b.blkno)
        .map_err(|_| corrupt(0, format!("blf_blkno {} is negative", b.blkno)))?;
    if daddr >= st.geo.eofs() || len == 0 {
        return Err(corrupt(
            daddr,
            format!(
                "buffer of {len} sectors at daddr {daddr} lies outside the filesystem ({} sectors)",
                st.geo.eofs()
            ),
        ));
    }
    let (mut data, old_stamp, was_dirty) = st.cache.take(daddr, len)?;
    let disk_lsn = block_lsn(&data, &st.geo);
    if let Some(l) = disk_lsn {
        if l != 0 && l >= lsn {
            st.cache.counts.buffers_skipped_lsn =
                st.cache.counts.buffers_skipped_lsn.saturating_add(1);
            if was_dirty {
                st.cache.put_back(daddr, len, data, old_stamp, lsn);
            }
            return Ok(());
        }
    }
    let flags = b.flags;
    if flags & XFS_BLF_INODE_BUF != 0 {
        let n = inode_buffer(&mut data, it, b, u32::from(st.geo.inodesize), daddr)?;
        st.cache.counts.inode_buffers = st.cache.counts.inode_buffers.saturating_add(1);
        st.cache.counts.unlinked_pointers = st.cache.counts.unlinked_pointers.saturating_add(n);
        finish(st, daddr, len, data, old_stamp, lsn);
        return Ok(());
    }
    if flags & (XFS_BLF_UDQUOT_BUF | XFS_BLF_PDQUOT_BUF | XFS_BLF_GDQUOT_BUF) != 0 {
        st.cache.counts.dquots_skipped = st.cache.counts.dquots_skipped.saturating_add(1);
        if was_dirty {
            st.cache.put_back(daddr, len, data, old_stamp, lsn);
        }
        return Ok(());
    }
    reg_buffer(&mut data, it, b, daddr)?;
    st.cache.counts.buffers_replayed = st.cache.counts.buffers_replayed.saturating_add(1);
    let mut stamp = if st.geo.v5 {
        stamp_for(b.buf_type, &data, st.geo.blocksize)
    } else {
        Stamp::None
    };
    if stamp == Stamp::None && st.geo.v5 && was_dirty {
        // The buffer keeps the verifier it already had.
        stamp = old_stamp;
    }
    if daddr == 0 && b.buf_type & XFS_BLFT_SB_BUF != 0 {
        primary_sb(st, &data)?;
    }
    let bytes = u64::from(len).saturating_mul(512);
    if matches!(b.buf_type, XFS_BLFT_DIR_BLOCK_BUF | XFS_BLFT_DIR_DATA_BUF)
        && matches!(stamp, Stamp::Whole { .. })
        && bytes < u64::from(st.geo.dirblksize())
    {
        // A directory block logged in pieces (its blocks are not
        // contiguous on disk) is recovered piece by piece; the piece with
        // the header is checked as a whole directory block and fails.
        st.cache.reject(
            daddr,
            format!(
                "directory data block at daddr {daddr} recovered as a {bytes}-byte piece of a {}-byte directory block (logged in pieces because its blocks are not contiguous)",
                st.geo.dirblksize()
            ),
        );
    }
    finish(st, daddr, len, data, stamp, lsn);
    Ok(())
}

/// Queue the buffer, or write it at once if it is an inode buffer of a
/// size other than the inode cluster's (the kernel keeps those out of its
/// cache).
fn finish<R: ReadAt>(
    st: &mut State<'_, R>,
    daddr: u64,
    len: u32,
    data: Vec<u8>,
    stamp: Stamp,
    lsn: u64,
) {
    let is_inode = be16(&data, 0) == Some(XFS_DINODE_MAGIC);
    let bytes = u64::from(len).saturating_mul(512);
    if is_inode && bytes != u64::from(st.geo.inode_cluster_bytes()) {
        st.cache.write_now(daddr, &data);
    } else {
        st.cache.put(daddr, len, data, stamp, lsn);
    }
}

/// After the primary superblock is replayed, take up a grown AG count.
fn primary_sb<R: ReadAt>(st: &mut State<'_, R>, sb: &[u8]) -> Result<()> {
    let agcount = be32(sb, offset_of!(XfsDsb, sb_agcount)).unwrap_or(0);
    let dblocks = be64(sb, offset_of!(XfsDsb, sb_dblocks)).unwrap_or(0);
    if agcount < st.geo.agcount {
        return Err(corrupt(
            0,
            format!(
                "the replayed superblock shrinks the AG count from {} to {agcount}, which recovery refuses",
                st.geo.agcount
            ),
        ));
    }
    if agcount != st.geo.agcount || dblocks != st.geo.dblocks {
        st.warnings.push(format!(
            "the replayed superblock grows the filesystem: {} -> {agcount} AGs, {} -> {dblocks} blocks",
            st.geo.agcount, st.geo.dblocks
        ));
        st.geo.agcount = agcount;
        st.geo.dblocks = dblocks.max(st.geo.dblocks);
    }
    Ok(())
}

/// `xlog_recover_do_reg_buffer`: copy each run of dirty chunks from its
/// region; a region shorter than its run (a run split at a page boundary
/// by older kernels) covers only its own length and the next region goes on.
pub fn reg_buffer(data: &mut [u8], it: &super::RItem, b: &BufItem, daddr: u64) -> Result<()> {
    let map = &b.map;
    let mut bit = 0u32;
    let mut i = 1usize;
    while let Some(first) = next_bit(map, bit) {
        let mut nbits = contig_bits(map, first);
        let region = it.regions.get(i).ok_or_else(|| {
            corrupt(
                daddr,
                format!(
                    "the dirty bitmap has a run at chunk {first} but the item has only {} data regions",
                    it.regions.len().saturating_sub(1)
                ),
            )
        })?;
        let rlen = u32::try_from(region.len()).unwrap_or(u32::MAX);
        if rlen < nbits.saturating_mul(XFS_BLF_CHUNK) {
            nbits = rlen >> XFS_BLF_SHIFT;
        }
        if nbits == 0 {
            return Err(corrupt(
                daddr,
                format!("data region {i} of {rlen} bytes is shorter than one 128-byte chunk"),
            ));
        }
        let off = usize::try_from(first.saturating_mul(XFS_BLF_CHUNK)).unwrap_or(usize::MAX);
        let n = usize::try_from(nbits.saturating_mul(XFS_BLF_CHUNK)).unwrap_or(usize::MAX);
        let dlen = data.len();
        let dst = data.get_mut(off..off.saturating_add(n)).ok_or_else(|| {
            corrupt(
                daddr,
                format!("run of {nbits} chunks at chunk {first} runs past the {dlen}-byte buffer"),
            )
        })?;
        let src = region.get(..n).unwrap_or(region);
        if let Some(d) = dst.get_mut(..src.len()) {
            d.copy_from_slice(src);
        }
        i = i.saturating_add(1);
        bit = first.saturating_add(nbits);
    }
    Ok(())
}

/// `xlog_recover_do_inode_buffer`: only the `di_next_unlinked` field of
/// each inode a logged run covers, and that inode's CRC. Returns the
/// number of pointers taken.
pub fn inode_buffer(
    data: &mut [u8],
    it: &super::RItem,
    b: &BufItem,
    inodesize: u32,
    daddr: u64,
) -> Result<u64> {
    let map = &b.map;
    let isz = usize::try_from(inodesize).unwrap_or(usize::MAX).max(1);
    let inodes = data.len().checked_div(isz).unwrap_or(0);
    let mut bit = 0u32;
    let mut nbits = 0u32;
    let mut reg_off = 0usize;
    let mut reg_bytes = 0usize;
    let mut item_index = 0usize;
    let mut taken = 0u64;
    for i in 0..inodes {
        let next_off = i.saturating_mul(isz).saturating_add(96);
        while next_off >= reg_off.saturating_add(reg_bytes) {
            bit = bit.saturating_add(nbits);
            let Some(first) = next_bit(map, bit) else {
                return Ok(taken);
            };
            bit = first;
            nbits = contig_bits(map, first);
            reg_off = usize::try_from(first)
                .unwrap_or(usize::MAX)
                .saturating_mul(128);
            reg_bytes = usize::try_from(nbits)
                .unwrap_or(usize::MAX)
                .saturating_mul(128);
            item_index = item_index.saturating_add(1);
        }
        if next_off < reg_off {
            continue;
        }
        let region = it.regions.get(item_index).ok_or_else(|| {
            corrupt(
                daddr,
                format!("inode buffer item lacks data region {item_index}"),
            )
        })?;
        let at = next_off.saturating_sub(reg_off);
        let logged = region.get(at..at.saturating_add(4)).ok_or_else(|| {
            corrupt(
                daddr,
                format!(
                    "inode buffer region {item_index} too short for inode {i}'s unlinked pointer"
                ),
            )
        })?;
        if logged == [0, 0, 0, 0] {
            return Err(corrupt(
                daddr,
                format!("inode buffer: the logged di_next_unlinked of inode {i} is 0"),
            ));
        }
        let mut v = [0u8; 4];
        v.copy_from_slice(logged);
        if let Some(d) = data.get_mut(next_off..next_off.saturating_add(4)) {
            d.copy_from_slice(&v);
        }
        let lo = i.saturating_mul(isz);
        if let Some(dip) = data.get_mut(lo..lo.saturating_add(isz)) {
            if dip.get(4).copied().unwrap_or(0) >= 3 {
                put_crc(dip, 100);
            }
        }
        taken = taken.saturating_add(1);
    }
    Ok(taken)
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
    use crate::xfs::replay::walk::RItem;

    fn buf_item(map: &[u32], flags: u16) -> BufItem {
        BufItem {
            blkno: 100,
            len: 8,
            flags,
            buf_type: u8::try_from(flags >> XFS_BLFT_SHIFT).unwrap(),
            map_size: map.len() as u32,
            map: map.to_vec().into(),
            dir_entries: None,
            segment: crate::xfs::log::items::Segment::Whole,
            head: None,
        }
    }

    #[test]
    fn runs_are_copied_to_their_chunks_and_short_regions_continue() {
        // Chunks 1..=3 dirty, and chunk 6; the first run is split in two
        // regions (an old kernel's page-straddle split).
        let b = buf_item(&[0b0100_1110], 0);
        let it = RItem {
            total: 4,
            count: 4,
            regions: vec![vec![], vec![1u8; 128], vec![2u8; 256], vec![3u8; 128]],
        };
        let mut data = vec![0u8; 4096];
        reg_buffer(&mut data, &it, &b, 100).unwrap();
        assert!(data[..128].iter().all(|x| *x == 0));
        assert!(data[128..256].iter().all(|x| *x == 1));
        assert!(data[256..512].iter().all(|x| *x == 2));
        assert!(data[512..768].iter().all(|x| *x == 0));
        assert!(data[768..896].iter().all(|x| *x == 3));
        // A run with no region left is refused, not read past.
        let it = RItem {
            total: 2,
            count: 2,
            regions: vec![vec![], vec![1u8; 384]],
        };
        let e = reg_buffer(&mut data, &it, &b, 100).unwrap_err().to_string();
        assert!(e.contains("data regions"), "{e}");
        // A run past the buffer's end is refused.
        let b = buf_item(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 0);
        let it = RItem {
            total: 2,
            count: 2,
            regions: vec![vec![], vec![1u8; 128]],
        };
        assert!(reg_buffer(&mut data, &it, &b, 100).is_err());
    }

    #[test]
    fn inode_buffers_take_only_unlinked_pointers_and_fix_the_crc() {
        // Two 512-byte v3 inodes; chunk 0 (bytes 0..128) logged: covers
        // inode 0's di_next_unlinked at byte 96 only.
        let mut data = vec![0u8; 1024];
        for i in 0..2 {
            data[i * 512..i * 512 + 2].copy_from_slice(&0x494eu16.to_be_bytes());
            data[i * 512 + 4] = 3;
        }
        let b = buf_item(&[1], XFS_BLF_INODE_BUF);
        let mut region = vec![0xAAu8; 128];
        region[96..100].copy_from_slice(&7u32.to_be_bytes());
        let it = RItem {
            total: 2,
            count: 2,
            regions: vec![vec![], region],
        };
        let n = inode_buffer(&mut data, &it, &b, 512, 100).unwrap();
        assert_eq!(n, 1);
        assert_eq!(be32(&data, 96), Some(7));
        assert_eq!(data[10], 0, "nothing else is copied");
        let crc = u32::from_le_bytes(data[100..104].try_into().unwrap());
        assert_eq!(crc, crate::xfs::sb::crc_with_hole(&data[..512], 100));
        assert_eq!(&data[612..616], &[0; 4], "inode 1 untouched");
        // A logged pointer of 0 is corruption.
        let mut region = vec![0u8; 128];
        region[0] = 1;
        let it = RItem {
            total: 2,
            count: 2,
            regions: vec![vec![], region],
        };
        assert!(inode_buffer(&mut data, &it, &b, 512, 100).is_err());
    }

    fn geo() -> crate::xfs::replay::Geo {
        let fs = crate::xfs::testutil::fixture_fs("log-xattrs");
        crate::xfs::replay::Geo::of(&fs)
    }

    #[test]
    fn block_lsn_is_read_by_magic_and_needs_this_filesystems_uuid() {
        let g = geo();
        let mut agf = vec![0u8; 512];
        agf[..4].copy_from_slice(b"XAGF");
        agf[208..216].copy_from_slice(&0x1_0000_0005u64.to_be_bytes());
        agf[64..80].copy_from_slice(&g.meta_uuid);
        assert_eq!(block_lsn(&agf, &g), Some(0x1_0000_0005));
        agf[64] ^= 1;
        assert_eq!(block_lsn(&agf, &g), None, "another filesystem's block");
        let mut leaf = vec![0u8; 4096];
        leaf[8..10].copy_from_slice(&0x3df1u16.to_be_bytes());
        leaf[24..32].copy_from_slice(&9u64.to_be_bytes());
        leaf[32..48].copy_from_slice(&g.uuid);
        assert_eq!(block_lsn(&leaf, &g), Some(9));
        let mut ino = vec![0u8; 512];
        ino[..2].copy_from_slice(b"IN");
        assert_eq!(block_lsn(&ino, &g), None, "inode buffers recover always");
        let mut rmt = vec![0u8; 512];
        rmt[..4].copy_from_slice(b"XARM");
        assert_eq!(block_lsn(&rmt, &g), None);
        let mut v4 = g;
        v4.v5 = false;
        agf[64] ^= 1;
        assert_eq!(block_lsn(&agf, &v4), None, "v4 always recovers");
    }

    #[test]
    fn stamps_follow_the_buffer_type_only_when_the_magic_agrees() {
        let mut b = vec![0u8; 4096];
        b[..4].copy_from_slice(b"AB3B");
        let s = stamp_for(XFS_BLFT_BTREE_BUF, &b, 4096);
        assert_eq!(
            s,
            Stamp::Whole {
                lsn_off: Some(24),
                crc_off: 52
            }
        );
        assert!(apply_stamp(&mut b, s, 0x2_0000_0010));
        assert_eq!(be64(&b, 24), Some(0x2_0000_0010));
        let crc = u32::from_le_bytes(b[52..56].try_into().unwrap());
        assert_eq!(crc, crate::xfs::sb::crc_with_hole(&b, 52));
        assert_eq!(stamp_for(XFS_BLFT_AGF_BUF, &b, 4096), Stamp::None);
        assert_eq!(stamp_for(XFS_BLFT_DINO_BUF, &b, 4096), Stamp::None);
        let mut r = vec![0u8; 8192];
        r[..4].copy_from_slice(b"XARM");
        r[4096..4100].copy_from_slice(b"XARM");
        r[100] = 1;
        let s = stamp_for(XFS_BLFT_ATTR_RMT_BUF, &r, 4096);
        assert!(apply_stamp(&mut r, s, 5));
        assert_eq!(be64(&r, 0), be64(&r, 4096).map(|_| be64(&r, 0).unwrap()));
        for blk in r.chunks(4096) {
            let crc = u32::from_le_bytes(blk[12..16].try_into().unwrap());
            assert_eq!(crc, crate::xfs::sb::crc_with_hole(blk, 12));
        }
    }
}
