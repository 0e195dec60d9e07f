//! `struct xfs_dsb` from `xfs_format.h`: the on-disk superblock.
//!
//! ```text
//!   0 magicnum  4 blocksize  8 dblocks  16 rblocks  24 rextents  32 uuid[16]
//!  48 logstart 56 rootino 64 rbmino 72 rsumino 80 rextsize 84 agblocks
//!  88 agcount  92 rbmblocks 96 logblocks 100 versionnum 102 sectsize ...
//! 224 crc (little-endian)  ...  288 rtstart  296 rtreserved  (304 bytes)
//! ```
//! Big-endian except `sb_crc`. The structure sits at the start of a
//! sector-sized buffer; the CRC covers the whole sector.

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::byteorder::little_endian::U32 as Le32;
use zerocopy::{FromBytes, Immutable, KnownLayout, Unaligned};

/// "XFSB".
pub const XFS_SB_MAGIC: u32 = 0x5846_5342;

/// `NULLFSINO`: no inode (absent quota and realtime inodes).
pub const NULLFSINO: u64 = u64::MAX;
/// `sb_features_ro_compat`: shared extents (reflink, the refcount btree).
pub const XFS_SB_FEAT_RO_COMPAT_REFLINK: u32 = 1 << 2;
/// `sb_features_incompat` bits the core acts on.
pub const XFS_SB_FEAT_INCOMPAT_BIGTIME: u32 = 1 << 3;
pub const XFS_SB_FEAT_INCOMPAT_NREXT64: u32 = 1 << 5;
pub const XFS_SB_FEAT_INCOMPAT_EXCHRANGE: u32 = 1 << 6;
pub const XFS_SB_FEAT_INCOMPAT_PARENT: u32 = 1 << 7;
/// `sb_features_incompat`: the metadata directory tree (`-m metadir=1`).
pub const XFS_SB_FEAT_INCOMPAT_METADIR: u32 = 1 << 8;
/// Byte offset of `sb_crc` in the superblock sector.
pub const XFS_SB_CRC_OFF: usize = 224;
/// Bytes of the current superblock structure.
pub const XFS_DSB_SIZE: usize = 304;

#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsDsb {
    pub sb_magicnum: U32,
    pub sb_blocksize: U32,
    pub sb_dblocks: U64,
    pub sb_rblocks: U64,
    pub sb_rextents: U64,
    pub sb_uuid: [u8; 16],
    pub sb_logstart: U64,
    pub sb_rootino: U64,
    pub sb_rbmino: U64,
    pub sb_rsumino: U64,
    pub sb_rextsize: U32,
    pub sb_agblocks: U32,
    pub sb_agcount: U32,
    pub sb_rbmblocks: U32,
    pub sb_logblocks: U32,
    pub sb_versionnum: U16,
    pub sb_sectsize: U16,
    pub sb_inodesize: U16,
    pub sb_inopblock: U16,
    pub sb_fname: [u8; 12],
    pub sb_blocklog: u8,
    pub sb_sectlog: u8,
    pub sb_inodelog: u8,
    pub sb_inopblog: u8,
    pub sb_agblklog: u8,
    pub sb_rextslog: u8,
    pub sb_inprogress: u8,
    pub sb_imax_pct: u8,
    pub sb_icount: U64,
    pub sb_ifree: U64,
    pub sb_fdblocks: U64,
    pub sb_frextents: U64,
    pub sb_uquotino: U64,
    pub sb_gquotino: U64,
    pub sb_qflags: U16,
    pub sb_flags: u8,
    pub sb_shared_vn: u8,
    pub sb_inoalignmt: U32,
    pub sb_unit: U32,
    pub sb_width: U32,
    pub sb_dirblklog: u8,
    pub sb_logsectlog: u8,
    pub sb_logsectsize: U16,
    pub sb_logsunit: U32,
    pub sb_features2: U32,
    pub sb_bad_features2: U32,
    pub sb_features_compat: U32,
    pub sb_features_ro_compat: U32,
    pub sb_features_incompat: U32,
    pub sb_features_log_incompat: U32,
    pub sb_crc: Le32,
    pub sb_spino_align: U32,
    pub sb_pquotino: U64,
    pub sb_lsn: U64,
    pub sb_meta_uuid: [u8; 16],
    pub sb_metadirino: U64,
    pub sb_rgcount: U32,
    pub sb_rgextents: U32,
    pub sb_rgblklog: u8,
    pub sb_pad: [u8; 7],
    pub sb_rtstart: U64,
    pub sb_rtreserved: U64,
}

const _: () = assert!(core::mem::size_of::<XfsDsb>() == XFS_DSB_SIZE);

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;

    /// Offsets from the kernel's `xfs_ondisk.h` assertions.
    #[test]
    fn layout_matches_the_kernel() {
        assert_eq!(offset_of!(XfsDsb, sb_dblocks), 8);
        assert_eq!(offset_of!(XfsDsb, sb_uuid), 32);
        assert_eq!(offset_of!(XfsDsb, sb_logstart), 48);
        assert_eq!(offset_of!(XfsDsb, sb_rextsize), 80);
        assert_eq!(offset_of!(XfsDsb, sb_versionnum), 100);
        assert_eq!(offset_of!(XfsDsb, sb_fname), 108);
        assert_eq!(offset_of!(XfsDsb, sb_blocklog), 120);
        assert_eq!(offset_of!(XfsDsb, sb_icount), 128);
        assert_eq!(offset_of!(XfsDsb, sb_qflags), 176);
        assert_eq!(offset_of!(XfsDsb, sb_inoalignmt), 180);
        assert_eq!(offset_of!(XfsDsb, sb_dirblklog), 192);
        assert_eq!(offset_of!(XfsDsb, sb_logsunit), 196);
        assert_eq!(offset_of!(XfsDsb, sb_features2), 200);
        assert_eq!(offset_of!(XfsDsb, sb_features_compat), 208);
        assert_eq!(offset_of!(XfsDsb, sb_crc), XFS_SB_CRC_OFF);
        assert_eq!(offset_of!(XfsDsb, sb_spino_align), 228);
        assert_eq!(offset_of!(XfsDsb, sb_pquotino), 232);
        assert_eq!(offset_of!(XfsDsb, sb_lsn), 240);
        assert_eq!(offset_of!(XfsDsb, sb_meta_uuid), 248);
        assert_eq!(offset_of!(XfsDsb, sb_metadirino), 264);
        assert_eq!(offset_of!(XfsDsb, sb_rgcount), 272);
        assert_eq!(offset_of!(XfsDsb, sb_rgextents), 276);
        assert_eq!(offset_of!(XfsDsb, sb_rgblklog), 280);
        assert_eq!(offset_of!(XfsDsb, sb_rtstart), 288);
        assert_eq!(offset_of!(XfsDsb, sb_rtreserved), 296);
    }
}
