//! Short-form btree blocks (`struct xfs_btree_block` with the short header,
//! `xfs_format.h`) and the records and keys of every per-AG btree.
//!
//! ```text
//! short-form header (v5: 56 bytes, v4: the first 16)
//!   0 bb_magic  4 bb_level  6 bb_numrecs  8 bb_leftsib  12 bb_rightsib
//!  16 bb_blkno  24 bb_lsn  32 bb_uuid[16]  48 bb_owner  52 bb_crc (LE)
//! leaf:  header | rec[1] rec[2] ... rec[numrecs]
//! node:  header | key[1] ... key[numrecs] (slots up to maxrecs) | ptr[1] ... ptr[numrecs]
//!        the pointer array starts after maxrecs key slots, not after numrecs
//! ```
//! Sibling and child pointers are AG block numbers (`xfs_agblock_t`), with
//! `NULLAGBLOCK` for "none". `bb_blkno` is the daddr of the block itself and
//! `bb_owner` the AG number. The CRC covers the whole block.

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::byteorder::little_endian::U32 as Le32;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// "AB3B": free space by block number, v5.
pub const XFS_ABTB_CRC_MAGIC: u32 = 0x4142_3342;
/// "ABTB": free space by block number, v4.
pub const XFS_ABTB_MAGIC: u32 = 0x4142_5442;
/// "AB3C": free space by size, v5.
pub const XFS_ABTC_CRC_MAGIC: u32 = 0x4142_3343;
/// "ABTC": free space by size, v4.
pub const XFS_ABTC_MAGIC: u32 = 0x4142_5443;
/// "IAB3": inode btree, v5.
pub const XFS_IBT_CRC_MAGIC: u32 = 0x4941_4233;
/// "IABT": inode btree, v4.
pub const XFS_IBT_MAGIC: u32 = 0x4941_4254;
/// "FIB3": free inode btree, v5.
pub const XFS_FIBT_CRC_MAGIC: u32 = 0x4649_4233;
/// "FIBT": free inode btree, v4 (never written: FINOBT needs v5).
pub const XFS_FIBT_MAGIC: u32 = 0x4649_4254;
/// "RMB3": reverse mapping btree (v5 only).
pub const XFS_RMAP_CRC_MAGIC: u32 = 0x524D_4233;
/// "R3FC": reference count btree (v5 only).
pub const XFS_REFC_CRC_MAGIC: u32 = 0x5233_4643;

/// Bytes of the v4 short-form header (`XFS_BTREE_SBLOCK_LEN`).
pub const XFS_BTREE_SBLOCK_LEN: usize = 16;
/// Bytes of the v5 short-form header (`XFS_BTREE_SBLOCK_CRC_LEN`).
pub const XFS_BTREE_SBLOCK_CRC_LEN: usize = 56;
/// Byte offset of `bb_blkno` in a v5 short-form block.
pub const XFS_BTREE_SBLOCK_BLKNO_OFF: usize = 16;
/// Byte offset of `bb_uuid` in a v5 short-form block.
pub const XFS_BTREE_SBLOCK_UUID_OFF: usize = 32;
/// Byte offset of `bb_owner` in a v5 short-form block.
pub const XFS_BTREE_SBLOCK_OWNER_OFF: usize = 48;
/// Byte offset of `bb_crc` in a v5 short-form block (`XFS_BTREE_SBLOCK_CRC_OFF`).
pub const XFS_BTREE_SBLOCK_CRC_OFF: usize = 52;

/// The short-form block header, v5 layout. A v4 block uses only the first
/// 16 bytes (through `bb_rightsib`).
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsBtreeSblock {
    pub bb_magic: U32,
    pub bb_level: U16,
    pub bb_numrecs: U16,
    pub bb_leftsib: U32,
    pub bb_rightsib: U32,
    pub bb_blkno: U64,
    pub bb_lsn: U64,
    pub bb_uuid: [u8; 16],
    pub bb_owner: U32,
    pub bb_crc: Le32,
}

/// A free-space record, and the key of both free-space btrees
/// (`xfs_alloc_rec_t` / `xfs_alloc_key_t`).
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsAllocRec {
    pub ar_startblock: U32,
    pub ar_blockcount: U32,
}

/// An inode btree record in the full-chunk form (no SPINODES).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsInobtRecFull {
    pub ir_startino: U32,
    pub ir_freecount: U32,
    pub ir_free: U64,
}

/// An inode btree record in the sparse form (SPINODES).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsInobtRecSparse {
    pub ir_startino: U32,
    /// One bit per 4 inodes; set = hole (not allocated on disk).
    pub ir_holemask: U16,
    /// Inodes physically present.
    pub ir_count: u8,
    pub ir_freecount: u8,
    /// One bit per inode; set = free (holes are set too).
    pub ir_free: U64,
}

/// An inode btree key (`xfs_inobt_key_t`).
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsInobtKey {
    pub ir_startino: U32,
}

/// A reverse-mapping record (`struct xfs_rmap_rec`).
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsRmapRec {
    pub rm_startblock: U32,
    pub rm_blockcount: U32,
    pub rm_owner: U64,
    /// Flags in the high bits, file offset in the low 54.
    pub rm_offset: U64,
}

/// A reverse-mapping key (`struct xfs_rmap_key`, packed). Node blocks hold
/// a low key and a high key per slot.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsRmapKey {
    pub rm_startblock: U32,
    pub rm_owner: U64,
    pub rm_offset: U64,
}

/// A reference-count record (`struct xfs_refcount_rec`).
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsRefcountRec {
    /// Bit 31 is `XFS_REFC_COWFLAG`.
    pub rc_startblock: U32,
    pub rc_blockcount: U32,
    pub rc_refcount: U32,
}

/// A reference-count key (`struct xfs_refcount_key`).
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsRefcountKey {
    pub rc_startblock: U32,
}

/// Child pointers of every short-form btree node (`xfs_alloc_ptr_t`,
/// `xfs_inobt_ptr_t`, ...).
pub type XfsAgPtr = U32;

/// Bytes of an rmap node slot: a low key and a high key.
pub const XFS_RMAP_NODE_KEY_LEN: usize = 2 * core::mem::size_of::<XfsRmapKey>();

/// Inodes per inode chunk (`XFS_INODES_PER_CHUNK`).
pub const XFS_INODES_PER_CHUNK: u32 = 64;
/// Inodes per holemask bit (`XFS_INODES_PER_HOLEMASK_BIT`).
pub const XFS_INODES_PER_HOLEMASK_BIT: u32 = 4;

/// `rm_offset` bit 63: the mapping is in the attribute fork.
pub const XFS_RMAP_OFF_ATTR_FORK: u64 = 1 << 63;
/// `rm_offset` bit 62: the block belongs to the owner's bmap btree.
pub const XFS_RMAP_OFF_BMBT_BLOCK: u64 = 1 << 62;
/// `rm_offset` bit 61: the extent is unwritten.
pub const XFS_RMAP_OFF_UNWRITTEN: u64 = 1 << 61;
/// The file offset bits of `rm_offset`.
pub const XFS_RMAP_OFF_MASK: u64 = (1 << 54) - 1;

/// Special rmap owners (negative numbers as two's complement).
pub const XFS_RMAP_OWN_NULL: u64 = u64::MAX; // -1
pub const XFS_RMAP_OWN_UNKNOWN: u64 = u64::MAX - 1; // -2
pub const XFS_RMAP_OWN_FS: u64 = u64::MAX - 2; // -3
pub const XFS_RMAP_OWN_LOG: u64 = u64::MAX - 3; // -4
pub const XFS_RMAP_OWN_AG: u64 = u64::MAX - 4; // -5
pub const XFS_RMAP_OWN_INOBT: u64 = u64::MAX - 5; // -6
pub const XFS_RMAP_OWN_INODES: u64 = u64::MAX - 6; // -7
pub const XFS_RMAP_OWN_REFC: u64 = u64::MAX - 7; // -8
pub const XFS_RMAP_OWN_COW: u64 = u64::MAX - 8; // -9
pub const XFS_RMAP_OWN_MIN: u64 = u64::MAX - 9; // -10

/// `rc_startblock` bit 31: a copy-on-write staging extent.
pub const XFS_REFC_COWFLAG: u32 = 1 << 31;
/// The largest `rc_refcount`.
pub const MAXREFCOUNT: u32 = u32::MAX;
/// The longest extent an rmap record holds (`rm_blockcount` is 32 bits).
pub const XFS_RMAP_LEN_MAX: u64 = 0xFFFF_FFFF;

const _: () = assert!(core::mem::size_of::<XfsBtreeSblock>() == XFS_BTREE_SBLOCK_CRC_LEN);
const _: () = assert!(core::mem::size_of::<XfsAllocRec>() == 8);
const _: () = assert!(core::mem::size_of::<XfsInobtRecFull>() == 16);
const _: () = assert!(core::mem::size_of::<XfsInobtRecSparse>() == 16);
const _: () = assert!(core::mem::size_of::<XfsInobtKey>() == 4);
const _: () = assert!(core::mem::size_of::<XfsRmapRec>() == 24);
const _: () = assert!(core::mem::size_of::<XfsRmapKey>() == 20);
const _: () = assert!(core::mem::size_of::<XfsRefcountRec>() == 12);
const _: () = assert!(core::mem::size_of::<XfsRefcountKey>() == 4);
const _: () = assert!(core::mem::size_of::<XfsAgPtr>() == 4);

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;

    /// Offsets from the kernel's `xfs_ondisk.h` and the spec's compiled tables.
    #[test]
    fn short_block_header_layout() {
        assert_eq!(offset_of!(XfsBtreeSblock, bb_level), 4);
        assert_eq!(offset_of!(XfsBtreeSblock, bb_numrecs), 6);
        assert_eq!(offset_of!(XfsBtreeSblock, bb_leftsib), 8);
        assert_eq!(offset_of!(XfsBtreeSblock, bb_rightsib), 12);
        assert_eq!(
            offset_of!(XfsBtreeSblock, bb_blkno),
            XFS_BTREE_SBLOCK_BLKNO_OFF
        );
        assert_eq!(offset_of!(XfsBtreeSblock, bb_blkno), XFS_BTREE_SBLOCK_LEN);
        assert_eq!(offset_of!(XfsBtreeSblock, bb_lsn), 24);
        assert_eq!(
            offset_of!(XfsBtreeSblock, bb_uuid),
            XFS_BTREE_SBLOCK_UUID_OFF
        );
        assert_eq!(
            offset_of!(XfsBtreeSblock, bb_owner),
            XFS_BTREE_SBLOCK_OWNER_OFF
        );
        assert_eq!(offset_of!(XfsBtreeSblock, bb_crc), XFS_BTREE_SBLOCK_CRC_OFF);
    }

    #[test]
    fn record_and_key_layouts() {
        assert_eq!(offset_of!(XfsAllocRec, ar_blockcount), 4);
        assert_eq!(offset_of!(XfsInobtRecFull, ir_freecount), 4);
        assert_eq!(offset_of!(XfsInobtRecFull, ir_free), 8);
        assert_eq!(offset_of!(XfsInobtRecSparse, ir_holemask), 4);
        assert_eq!(offset_of!(XfsInobtRecSparse, ir_count), 6);
        assert_eq!(offset_of!(XfsInobtRecSparse, ir_freecount), 7);
        assert_eq!(offset_of!(XfsInobtRecSparse, ir_free), 8);
        assert_eq!(offset_of!(XfsRmapRec, rm_blockcount), 4);
        assert_eq!(offset_of!(XfsRmapRec, rm_owner), 8);
        assert_eq!(offset_of!(XfsRmapRec, rm_offset), 16);
        assert_eq!(offset_of!(XfsRmapKey, rm_owner), 4);
        assert_eq!(offset_of!(XfsRmapKey, rm_offset), 12);
        assert_eq!(XFS_RMAP_NODE_KEY_LEN, 40);
        assert_eq!(offset_of!(XfsRefcountRec, rc_blockcount), 4);
        assert_eq!(offset_of!(XfsRefcountRec, rc_refcount), 8);
    }

    #[test]
    fn special_owners_are_small_negative_numbers() {
        let signed = |v: u64| i64::from_ne_bytes(v.to_ne_bytes());
        assert_eq!(signed(XFS_RMAP_OWN_NULL), -1);
        assert_eq!(signed(XFS_RMAP_OWN_FS), -3);
        assert_eq!(signed(XFS_RMAP_OWN_AG), -5);
        assert_eq!(signed(XFS_RMAP_OWN_INODES), -7);
        assert_eq!(signed(XFS_RMAP_OWN_COW), -9);
        assert_eq!(signed(XFS_RMAP_OWN_MIN), -10);
    }
}
