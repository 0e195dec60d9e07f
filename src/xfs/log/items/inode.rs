//! Inode and inode-create log items (`xfs_inode_item.c`,
//! `xfs_icreate_item.c`): the format structure and the logged inode core
//! (`xfs_log_dinode`) in the writer's byte order.

use super::read;
use crate::xfs::format::log::*;
use serde::Serialize;
use zerocopy::byteorder::ByteOrder;
use zerocopy::FromBytes;

/// The inode core as logged, host order converted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogDinodeCore {
    pub magic: u16,
    pub mode: u16,
    pub version: u8,
    pub format: u8,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u32,
    pub size: u64,
    pub nblocks: u64,
    pub extsize: u32,
    pub nextents: u64,
    pub anextents: u32,
    pub forkoff: u8,
    pub aformat: u8,
    pub flags: u16,
    pub gen: u32,
    /// Timestamps in the on-disk encoding (seconds << 32 | nanoseconds,
    /// or a bigtime count of nanoseconds), whatever the log's byte order.
    pub atime: u64,
    pub mtime: u64,
    pub ctime: u64,
    /// Only in v3 cores.
    pub flags2: Option<u64>,
    /// `di_changecount` (v3): raised once by every transaction that logs
    /// the core.
    pub changecount: Option<u64>,
    /// `di_lsn` (v3): the LSN the core was last written to disk with.
    pub lsn: Option<u64>,
    /// `di_crtime` (v3), in the on-disk encoding.
    pub crtime: Option<u64>,
    pub ino: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InodeItem {
    pub ino: u64,
    /// `ilf_fields` (`XFS_ILOG_*`).
    pub fields: u32,
    pub dsize: u16,
    pub asize: u16,
    /// Daddr and length (blocks) of the inode cluster buffer.
    pub blkno: i64,
    pub cluster_len: i32,
    pub boffset: i32,
    /// Device number with XFS_ILOG_DEV.
    pub rdev: Option<u32>,
    /// 56 (64-bit layout) or 52 (32-bit layout).
    pub format_len: u8,
    /// The logged core, when details were asked for.
    pub core: Option<Box<LogDinodeCore>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct IcreateItem {
    pub ag: u32,
    pub agbno: u32,
    pub count: u32,
    pub isize: u32,
    pub length: u32,
    pub gen: u32,
}

pub(super) fn decode_inode<O: ByteOrder>(
    r0: &[u8],
    r1: Option<&[u8]>,
) -> Result<InodeItem, String> {
    let mut item = if r0.len() == 52 {
        let f: &XfsInodeLogFormat32<O> = read(r0, "inode")?;
        InodeItem {
            ino: f.ilf_ino.get(),
            fields: f.ilf_fields.get(),
            dsize: f.ilf_dsize.get(),
            asize: f.ilf_asize.get(),
            blkno: f.ilf_blkno.get(),
            cluster_len: f.ilf_len.get(),
            boffset: f.ilf_boffset.get(),
            rdev: None,
            format_len: 52,
            core: None,
        }
    } else if r0.len() == 56 {
        let f: &XfsInodeLogFormat<O> = read(r0, "inode")?;
        InodeItem {
            ino: f.ilf_ino.get(),
            fields: f.ilf_fields.get(),
            dsize: f.ilf_dsize.get(),
            asize: f.ilf_asize.get(),
            blkno: f.ilf_blkno.get(),
            cluster_len: f.ilf_len.get(),
            boffset: f.ilf_boffset.get(),
            rdev: None,
            format_len: 56,
            core: None,
        }
    } else {
        return Err(format!(
            "inode format region is {} bytes, expected 56 (or 52 from a 32-bit host)",
            r0.len()
        ));
    };
    if item.fields & XFS_ILOG_DEV != 0 {
        let off: usize = if item.format_len == 56 { 24 } else { 20 };
        item.rdev = r0
            .get(off..off.saturating_add(4))
            .and_then(|b| zerocopy::byteorder::U32::<O>::ref_from_bytes(b).ok())
            .map(|v| v.get());
    }
    if let Some(core) = r1 {
        item.core = decode_core::<O>(core).map(Box::new);
    }
    Ok(item)
}

pub(super) fn decode_core<O: ByteOrder>(r: &[u8]) -> Option<LogDinodeCore> {
    let v3 = r.len() >= 176;
    let mut buf = [0u8; 176];
    let n = r.len().min(176);
    if n < XFS_LOG_DINODE_V2_SIZE {
        return None;
    }
    buf.get_mut(..n)?.copy_from_slice(r.get(..n)?);
    let d = XfsLogDinode::<O>::ref_from_bytes(&buf[..]).ok()?;
    let flags2 = d.di_flags2.get();
    let nrext64 = v3 && flags2 & crate::xfs::format::dinode::XFS_DIFLAG2_NREXT64 != 0;
    let bigtime = v3 && flags2 & crate::xfs::format::dinode::XFS_DIFLAG2_BIGTIME != 0;
    Some(LogDinodeCore {
        magic: d.di_magic.get(),
        mode: d.di_mode.get(),
        version: d.di_version,
        format: d.di_format,
        uid: d.di_uid.get(),
        gid: d.di_gid.get(),
        nlink: d.di_nlink.get(),
        size: d.di_size.get(),
        nblocks: d.di_nblocks.get(),
        extsize: d.di_extsize.get(),
        nextents: if nrext64 {
            d.di_big_nextents.get()
        } else {
            u64::from(d.di_nextents.get())
        },
        anextents: if nrext64 {
            d.di_nextents.get()
        } else {
            u32::from(d.di_anextents.get())
        },
        forkoff: d.di_forkoff,
        aformat: d.di_aformat,
        flags: d.di_flags.get(),
        gen: d.di_gen.get(),
        atime: disk_time::<O>(&d.di_atime, bigtime),
        mtime: disk_time::<O>(&d.di_mtime, bigtime),
        ctime: disk_time::<O>(&d.di_ctime, bigtime),
        flags2: v3.then_some(flags2),
        changecount: v3.then(|| d.di_changecount.get()),
        lsn: v3.then(|| d.di_lsn.get()),
        crtime: v3.then(|| disk_time::<O>(&d.di_crtime, bigtime)),
        ino: v3.then(|| d.di_ino.get()),
    })
}

/// A logged timestamp in the on-disk encoding (`InodeCore`'s `raw`): a
/// bigtime count as it is, a legacy `{seconds, nanoseconds}` pair of host
/// words as seconds << 32 | nanoseconds.
pub(super) fn disk_time<O: ByteOrder>(v: &zerocopy::byteorder::U64<O>, bigtime: bool) -> u64 {
    if bigtime {
        return v.get();
    }
    let b = zerocopy::IntoBytes::as_bytes(v);
    let word = |r: std::ops::Range<usize>| {
        b.get(r)
            .and_then(|w| zerocopy::byteorder::U32::<O>::ref_from_bytes(w).ok())
            .map_or(0, |w| w.get())
    };
    u64::from(word(0..4)) << 32 | u64::from(word(4..8))
}
