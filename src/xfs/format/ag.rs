//! The allocation-group headers from `xfs_format.h`: `struct xfs_agf`,
//! `struct xfs_agi` and the v5 `struct xfs_agfl` header.
//!
//! Each AG starts with four sector-sized headers: sector 0 a superblock copy,
//! sector 1 the AGF, sector 2 the AGI, sector 3 the AGFL.
//!
//! ```text
//! AGF (224 bytes)
//!   0 magicnum  4 versionnum  8 seqno  12 length
//!  16 bno_root  20 cnt_root  24 rmap_root  28 bno_level  32 cnt_level  36 rmap_level
//!  40 flfirst  44 fllast  48 flcount  52 freeblks  56 longest  60 btreeblks
//!  64 uuid[16]  80 rmap_blocks  84 refcount_blocks  88 refcount_root  92 refcount_level
//!  96 spare64[14]  208 lsn  216 crc (LE)  220 spare2
//! AGI (344 bytes)
//!   0 magicnum  4 versionnum  8 seqno  12 length  16 count  20 root  24 level
//!  28 freecount  32 newino  36 dirino  40 unlinked[64]  296 uuid[16]
//! 312 crc (LE)  316 pad32  320 lsn  328 free_root  332 free_level  336 iblocks  340 fblocks
//! AGFL v5 header (36 bytes, packed), then big-endian agblock numbers to the
//! end of the sector; a v4 AGFL has no header, only the numbers.
//!   0 magicnum  4 seqno  8 uuid[16]  24 lsn  32 crc (LE)  36 bno[]
//! ```
//! Big-endian except the CRCs. Every CRC covers the whole sector.

use zerocopy::byteorder::big_endian::{U32, U64};
use zerocopy::byteorder::little_endian::U32 as Le32;
use zerocopy::{FromBytes, Immutable, KnownLayout, Unaligned};

/// "XAGF".
pub const XFS_AGF_MAGIC: u32 = 0x5841_4746;
/// "XAGI".
pub const XFS_AGI_MAGIC: u32 = 0x5841_4749;
/// "XAFL".
pub const XFS_AGFL_MAGIC: u32 = 0x5841_464C;
/// The only AGF version (`XFS_AGF_VERSION`).
pub const XFS_AGF_VERSION: u32 = 1;
/// The only AGI version (`XFS_AGI_VERSION`).
pub const XFS_AGI_VERSION: u32 = 1;

/// Byte offset of `agf_crc`.
pub const XFS_AGF_CRC_OFF: usize = 216;
/// Byte offset of `agi_crc`.
pub const XFS_AGI_CRC_OFF: usize = 312;
/// Byte offset of `agfl_crc`.
pub const XFS_AGFL_CRC_OFF: usize = 32;
/// Byte offset of `agf_uuid`.
pub const XFS_AGF_UUID_OFF: usize = 64;
/// Byte offset of `agi_uuid`.
pub const XFS_AGI_UUID_OFF: usize = 296;
/// Byte offset of `agfl_uuid`.
pub const XFS_AGFL_UUID_OFF: usize = 8;

/// Bytes of `struct xfs_agf`.
pub const XFS_AGF_SIZE: usize = 224;
/// Bytes of `struct xfs_agi`.
pub const XFS_AGI_SIZE: usize = 344;
/// Bytes of the v5 `struct xfs_agfl` header before `agfl_bno[]`.
pub const XFS_AGFL_HDR_SIZE: usize = 36;

/// Unlinked-inode hash buckets in the AGI (`XFS_AGI_UNLINKED_BUCKETS`).
pub const XFS_AGI_UNLINKED_BUCKETS: usize = 64;

/// `NULLAGBLOCK`: no block.
pub const NULLAGBLOCK: u32 = u32::MAX;
/// `NULLAGINO`: no inode.
pub const NULLAGINO: u32 = u32::MAX;

/// Sector index of each header inside its AG.
pub const AG_SB_SECTOR: u64 = 0;
pub const AGF_SECTOR: u64 = 1;
pub const AGI_SECTOR: u64 = 2;
pub const AGFL_SECTOR: u64 = 3;

#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsAgf {
    pub agf_magicnum: U32,
    pub agf_versionnum: U32,
    pub agf_seqno: U32,
    pub agf_length: U32,
    /// `agf_roots[0]`.
    pub agf_bno_root: U32,
    /// `agf_roots[1]`.
    pub agf_cnt_root: U32,
    /// `agf_roots[2]`.
    pub agf_rmap_root: U32,
    /// `agf_levels[0]`.
    pub agf_bno_level: U32,
    pub agf_cnt_level: U32,
    pub agf_rmap_level: U32,
    pub agf_flfirst: U32,
    pub agf_fllast: U32,
    pub agf_flcount: U32,
    pub agf_freeblks: U32,
    pub agf_longest: U32,
    pub agf_btreeblks: U32,
    pub agf_uuid: [u8; 16],
    pub agf_rmap_blocks: U32,
    pub agf_refcount_blocks: U32,
    pub agf_refcount_root: U32,
    pub agf_refcount_level: U32,
    pub agf_spare64: [U64; 14],
    pub agf_lsn: U64,
    pub agf_crc: Le32,
    pub agf_spare2: U32,
}

#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsAgi {
    pub agi_magicnum: U32,
    pub agi_versionnum: U32,
    pub agi_seqno: U32,
    pub agi_length: U32,
    pub agi_count: U32,
    pub agi_root: U32,
    pub agi_level: U32,
    pub agi_freecount: U32,
    pub agi_newino: U32,
    pub agi_dirino: U32,
    pub agi_unlinked: [U32; XFS_AGI_UNLINKED_BUCKETS],
    pub agi_uuid: [u8; 16],
    pub agi_crc: Le32,
    pub agi_pad32: U32,
    pub agi_lsn: U64,
    pub agi_free_root: U32,
    pub agi_free_level: U32,
    pub agi_iblocks: U32,
    pub agi_fblocks: U32,
}

/// The v5 AGFL header; `agfl_bno[]` follows at byte 36.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsAgfl {
    pub agfl_magicnum: U32,
    pub agfl_seqno: U32,
    pub agfl_uuid: [u8; 16],
    pub agfl_lsn: U64,
    pub agfl_crc: Le32,
}

const _: () = assert!(core::mem::size_of::<XfsAgf>() == XFS_AGF_SIZE);
const _: () = assert!(core::mem::size_of::<XfsAgi>() == XFS_AGI_SIZE);
const _: () = assert!(core::mem::size_of::<XfsAgfl>() == XFS_AGFL_HDR_SIZE);

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;

    /// Offsets from the kernel's `xfs_ondisk.h` assertions and the spec's
    /// compiled tables.
    #[test]
    fn agf_layout_matches_the_kernel() {
        assert_eq!(offset_of!(XfsAgf, agf_seqno), 8);
        assert_eq!(offset_of!(XfsAgf, agf_bno_root), 16);
        assert_eq!(offset_of!(XfsAgf, agf_rmap_root), 24);
        assert_eq!(offset_of!(XfsAgf, agf_bno_level), 28);
        assert_eq!(offset_of!(XfsAgf, agf_rmap_level), 36);
        assert_eq!(offset_of!(XfsAgf, agf_flfirst), 40);
        assert_eq!(offset_of!(XfsAgf, agf_flcount), 48);
        assert_eq!(offset_of!(XfsAgf, agf_freeblks), 52);
        assert_eq!(offset_of!(XfsAgf, agf_btreeblks), 60);
        assert_eq!(offset_of!(XfsAgf, agf_uuid), XFS_AGF_UUID_OFF);
        assert_eq!(offset_of!(XfsAgf, agf_rmap_blocks), 80);
        assert_eq!(offset_of!(XfsAgf, agf_refcount_blocks), 84);
        assert_eq!(offset_of!(XfsAgf, agf_refcount_root), 88);
        assert_eq!(offset_of!(XfsAgf, agf_refcount_level), 92);
        assert_eq!(offset_of!(XfsAgf, agf_spare64), 96);
        assert_eq!(offset_of!(XfsAgf, agf_lsn), 208);
        assert_eq!(offset_of!(XfsAgf, agf_crc), XFS_AGF_CRC_OFF);
        assert_eq!(offset_of!(XfsAgf, agf_spare2), 220);
    }

    #[test]
    fn agi_layout_matches_the_kernel() {
        assert_eq!(offset_of!(XfsAgi, agi_count), 16);
        assert_eq!(offset_of!(XfsAgi, agi_root), 20);
        assert_eq!(offset_of!(XfsAgi, agi_level), 24);
        assert_eq!(offset_of!(XfsAgi, agi_freecount), 28);
        assert_eq!(offset_of!(XfsAgi, agi_newino), 32);
        assert_eq!(offset_of!(XfsAgi, agi_dirino), 36);
        assert_eq!(offset_of!(XfsAgi, agi_unlinked), 40);
        assert_eq!(offset_of!(XfsAgi, agi_uuid), XFS_AGI_UUID_OFF);
        assert_eq!(offset_of!(XfsAgi, agi_crc), XFS_AGI_CRC_OFF);
        assert_eq!(offset_of!(XfsAgi, agi_pad32), 316);
        assert_eq!(offset_of!(XfsAgi, agi_lsn), 320);
        assert_eq!(offset_of!(XfsAgi, agi_free_root), 328);
        assert_eq!(offset_of!(XfsAgi, agi_free_level), 332);
        assert_eq!(offset_of!(XfsAgi, agi_iblocks), 336);
        assert_eq!(offset_of!(XfsAgi, agi_fblocks), 340);
    }

    #[test]
    fn agfl_layout_matches_the_kernel() {
        assert_eq!(offset_of!(XfsAgfl, agfl_seqno), 4);
        assert_eq!(offset_of!(XfsAgfl, agfl_uuid), XFS_AGFL_UUID_OFF);
        assert_eq!(offset_of!(XfsAgfl, agfl_lsn), 24);
        assert_eq!(offset_of!(XfsAgfl, agfl_crc), XFS_AGFL_CRC_OFF);
    }
}
