//! `struct xfs_dinode`, `xfs_bmbt_rec`, `xfs_bmdr_block`, the long-form
//! btree block header and `xfs_dsymlink_hdr`, from `xfs_format.h`.
//!
//! ```text
//! inode core (v3, 176 bytes; v1/v2 stop at 100)
//!   0 magic "IN"   2 mode   4 version  5 format  6 metatype/onlink
//!   8 uid  12 gid  16 nlink  20 projid_lo  22 projid_hi
//!  24 big_nextents (v3+NREXT64) | pad[6] flushiter (v2)
//!  32 atime  40 mtime  48 ctime  56 size  64 nblocks  72 extsize
//!  76 nextents | big_anextents  80 anextents | nrext64_pad
//!  82 forkoff  83 aformat  84 dmevmask  88 dmstate  90 flags  92 gen
//!  96 next_unlinked
//! 100 crc (LE)  104 changecount  112 lsn  120 flags2  128 cowextsize
//! 132 pad2[12]  144 crtime  152 ino  160 uuid[16]   176 literal area
//! ```
//! Big-endian except `di_crc` and `sl_crc`.

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::byteorder::little_endian::U32 as Le32;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// "IN".
pub const XFS_DINODE_MAGIC: u16 = 0x494e;
/// Bytes of the v3 inode core (the literal area starts here).
pub const XFS_DINODE_V3_SIZE: usize = 176;
/// Bytes of the v1/v2 inode core.
pub const XFS_DINODE_V2_SIZE: usize = 100;
/// Byte offset of `di_crc`.
pub const XFS_DINODE_CRC_OFF: usize = 100;

/// Data/attr fork formats (`xfs_dinode_fmt`).
pub const XFS_DINODE_FMT_DEV: u8 = 0;
pub const XFS_DINODE_FMT_LOCAL: u8 = 1;
pub const XFS_DINODE_FMT_EXTENTS: u8 = 2;
pub const XFS_DINODE_FMT_BTREE: u8 = 3;
pub const XFS_DINODE_FMT_UUID: u8 = 4;
pub const XFS_DINODE_FMT_META_BTREE: u8 = 5;

/// `di_flags` bits this reader acts on.
pub const XFS_DIFLAG_REALTIME: u16 = 1 << 0;

/// `di_flags2` bits this reader acts on.
pub const XFS_DIFLAG2_REFLINK: u64 = 1 << 1;
pub const XFS_DIFLAG2_BIGTIME: u64 = 1 << 3;
pub const XFS_DIFLAG2_NREXT64: u64 = 1 << 4;
pub const XFS_DIFLAG2_METADATA: u64 = 1 << 5;

/// File type bits of `di_mode` (`S_IFMT` and its values, as `stat.h`).
pub const S_IFMT: u16 = 0o170_000;
pub const S_IFSOCK: u16 = 0o140_000;
pub const S_IFLNK: u16 = 0o120_000;
pub const S_IFREG: u16 = 0o100_000;
pub const S_IFBLK: u16 = 0o060_000;
pub const S_IFDIR: u16 = 0o040_000;
pub const S_IFCHR: u16 = 0o020_000;
pub const S_IFIFO: u16 = 0o010_000;

/// The largest file offset in blocks a bmbt record holds (54 bits).
pub const XFS_MAX_FILEOFF: u64 = (1 << 54) - 1;
/// The longest extent in blocks a bmbt record holds (21 bits; `MAXEXTLEN`
/// before Linux 5.19).
pub const XFS_MAX_BMBT_EXTLEN: u64 = (1 << 21) - 1;

/// The v3 on-disk inode core.
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsDinode {
    pub di_magic: U16,
    pub di_mode: U16,
    pub di_version: u8,
    pub di_format: u8,
    /// v3 metadata inodes: metadata file type; v1: the 16-bit link count.
    pub di_metatype: U16,
    pub di_uid: U32,
    pub di_gid: U32,
    pub di_nlink: U32,
    pub di_projid_lo: U16,
    pub di_projid_hi: U16,
    /// NREXT64: data-fork extent count. v2: six pad bytes then `di_flushiter`.
    pub di_big_nextents: U64,
    pub di_atime: U64,
    pub di_mtime: U64,
    pub di_ctime: U64,
    pub di_size: U64,
    pub di_nblocks: U64,
    pub di_extsize: U32,
    /// Without NREXT64: data extents; with it: attr extents (`di_big_anextents`).
    pub di_nextents: U32,
    /// Without NREXT64: attr extents; with it: must be zero.
    pub di_anextents: U16,
    /// Attr fork offset in 8-byte units from the literal area; 0 = none.
    pub di_forkoff: u8,
    pub di_aformat: u8,
    pub di_dmevmask: U32,
    pub di_dmstate: U16,
    pub di_flags: U16,
    pub di_gen: U32,
    pub di_next_unlinked: U32,
    pub di_crc: Le32,
    pub di_changecount: U64,
    pub di_lsn: U64,
    pub di_flags2: U64,
    pub di_cowextsize: U32,
    pub di_pad2: [u8; 12],
    pub di_crtime: U64,
    pub di_ino: U64,
    pub di_uuid: [u8; 16],
}

/// The v1/v2 inode core (v4 filesystems): the first 100 bytes.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsDinodeV2 {
    pub di_magic: U16,
    pub di_mode: U16,
    pub di_version: u8,
    pub di_format: u8,
    /// v1: the link count.
    pub di_onlink: U16,
    pub di_uid: U32,
    pub di_gid: U32,
    pub di_nlink: U32,
    pub di_projid_lo: U16,
    pub di_projid_hi: U16,
    pub di_pad: [u8; 6],
    pub di_flushiter: U16,
    pub di_atime: U64,
    pub di_mtime: U64,
    pub di_ctime: U64,
    pub di_size: U64,
    pub di_nblocks: U64,
    pub di_extsize: U32,
    pub di_nextents: U32,
    pub di_anextents: U16,
    pub di_forkoff: u8,
    pub di_aformat: u8,
    pub di_dmevmask: U32,
    pub di_dmstate: U16,
    pub di_flags: U16,
    pub di_gen: U32,
    pub di_next_unlinked: U32,
}

const _: () = assert!(core::mem::size_of::<XfsDinode>() == XFS_DINODE_V3_SIZE);
const _: () = assert!(core::mem::size_of::<XfsDinodeV2>() == XFS_DINODE_V2_SIZE);

/// One extent record: a 128-bit big-endian word
/// `unwritten:1 startoff:54 startblock:52 blockcount:21`.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsBmbtRec {
    pub l0: U64,
    pub l1: U64,
}

pub const XFS_BMBT_REC_SIZE: usize = 16;
const _: () = assert!(core::mem::size_of::<XfsBmbtRec>() == XFS_BMBT_REC_SIZE);

/// Key of a bmbt node: the first file block of the child.
pub const XFS_BMBT_KEY_SIZE: usize = 8;
/// Pointer of a bmbt node: a packed fsblock.
pub const XFS_BMBT_PTR_SIZE: usize = 8;

/// The bmbt root kept in an inode fork; keys follow at +4, pointers after
/// `maxrecs` key slots.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsBmdrBlock {
    pub bb_level: U16,
    pub bb_numrecs: U16,
}

pub const XFS_BMDR_SIZE: usize = 4;
const _: () = assert!(core::mem::size_of::<XfsBmdrBlock>() == XFS_BMDR_SIZE);

/// "BMA3": v5 bmbt block.
pub const XFS_BMAP_CRC_MAGIC: u32 = 0x424d_4133;
/// "BMAP": v4 bmbt block.
pub const XFS_BMAP_MAGIC: u32 = 0x424d_4150;

/// Long-form btree block header (`xfs_btree_block` with `bb_l`), v5 layout;
/// v4 blocks stop after `bb_rightsib` (24 bytes).
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsBtreeBlockLong {
    pub bb_magic: U32,
    pub bb_level: U16,
    pub bb_numrecs: U16,
    pub bb_leftsib: U64,
    pub bb_rightsib: U64,
    pub bb_blkno: U64,
    pub bb_lsn: U64,
    pub bb_uuid: [u8; 16],
    pub bb_owner: U64,
    pub bb_crc: Le32,
    pub bb_pad: U32,
}

pub const XFS_BTREE_LBLOCK_CRC_LEN: usize = 72;
pub const XFS_BTREE_LBLOCK_LEN: usize = 24;
pub const XFS_BTREE_LBLOCK_CRC_OFF: usize = 64;
const _: () = assert!(core::mem::size_of::<XfsBtreeBlockLong>() == XFS_BTREE_LBLOCK_CRC_LEN);

/// "XSLM": header of each remote symlink buffer (v5).
pub const XFS_SYMLINK_MAGIC: u32 = 0x5853_4c4d;
/// Longest symlink target.
pub const XFS_SYMLINK_MAXLEN: u64 = 1024;

#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsDsymlinkHdr {
    pub sl_magic: U32,
    pub sl_offset: U32,
    pub sl_bytes: U32,
    pub sl_crc: Le32,
    pub sl_uuid: [u8; 16],
    pub sl_owner: U64,
    pub sl_blkno: U64,
    pub sl_lsn: U64,
}

pub const XFS_DSYMLINK_HDR_SIZE: usize = 56;
pub const XFS_DSYMLINK_CRC_OFF: usize = 12;
const _: () = assert!(core::mem::size_of::<XfsDsymlinkHdr>() == XFS_DSYMLINK_HDR_SIZE);

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;

    /// Offsets from the kernel's `xfs_ondisk.h` assertions.
    #[test]
    fn dinode_layout_matches_the_kernel() {
        assert_eq!(offset_of!(XfsDinode, di_mode), 2);
        assert_eq!(offset_of!(XfsDinode, di_version), 4);
        assert_eq!(offset_of!(XfsDinode, di_format), 5);
        assert_eq!(offset_of!(XfsDinode, di_metatype), 6);
        assert_eq!(offset_of!(XfsDinode, di_uid), 8);
        assert_eq!(offset_of!(XfsDinode, di_gid), 12);
        assert_eq!(offset_of!(XfsDinode, di_nlink), 16);
        assert_eq!(offset_of!(XfsDinode, di_projid_lo), 20);
        assert_eq!(offset_of!(XfsDinode, di_projid_hi), 22);
        assert_eq!(offset_of!(XfsDinode, di_big_nextents), 24);
        assert_eq!(offset_of!(XfsDinode, di_atime), 32);
        assert_eq!(offset_of!(XfsDinode, di_mtime), 40);
        assert_eq!(offset_of!(XfsDinode, di_ctime), 48);
        assert_eq!(offset_of!(XfsDinode, di_size), 56);
        assert_eq!(offset_of!(XfsDinode, di_nblocks), 64);
        assert_eq!(offset_of!(XfsDinode, di_extsize), 72);
        assert_eq!(offset_of!(XfsDinode, di_nextents), 76);
        assert_eq!(offset_of!(XfsDinode, di_anextents), 80);
        assert_eq!(offset_of!(XfsDinode, di_forkoff), 82);
        assert_eq!(offset_of!(XfsDinode, di_aformat), 83);
        assert_eq!(offset_of!(XfsDinode, di_dmevmask), 84);
        assert_eq!(offset_of!(XfsDinode, di_dmstate), 88);
        assert_eq!(offset_of!(XfsDinode, di_flags), 90);
        assert_eq!(offset_of!(XfsDinode, di_gen), 92);
        assert_eq!(offset_of!(XfsDinode, di_next_unlinked), 96);
        assert_eq!(offset_of!(XfsDinode, di_crc), XFS_DINODE_CRC_OFF);
        assert_eq!(offset_of!(XfsDinode, di_changecount), 104);
        assert_eq!(offset_of!(XfsDinode, di_lsn), 112);
        assert_eq!(offset_of!(XfsDinode, di_flags2), 120);
        assert_eq!(offset_of!(XfsDinode, di_cowextsize), 128);
        assert_eq!(offset_of!(XfsDinode, di_pad2), 132);
        assert_eq!(offset_of!(XfsDinode, di_crtime), 144);
        assert_eq!(offset_of!(XfsDinode, di_ino), 152);
        assert_eq!(offset_of!(XfsDinode, di_uuid), 160);
    }

    #[test]
    fn v2_core_matches_the_v3_prefix() {
        assert_eq!(offset_of!(XfsDinodeV2, di_onlink), 6);
        assert_eq!(offset_of!(XfsDinodeV2, di_pad), 24);
        assert_eq!(offset_of!(XfsDinodeV2, di_flushiter), 30);
        assert_eq!(offset_of!(XfsDinodeV2, di_atime), 32);
        assert_eq!(offset_of!(XfsDinodeV2, di_size), 56);
        assert_eq!(offset_of!(XfsDinodeV2, di_nextents), 76);
        assert_eq!(offset_of!(XfsDinodeV2, di_anextents), 80);
        assert_eq!(offset_of!(XfsDinodeV2, di_forkoff), 82);
        assert_eq!(offset_of!(XfsDinodeV2, di_flags), 90);
        assert_eq!(offset_of!(XfsDinodeV2, di_next_unlinked), 96);
    }

    #[test]
    fn btree_and_symlink_headers_match_the_kernel() {
        assert_eq!(offset_of!(XfsBtreeBlockLong, bb_level), 4);
        assert_eq!(offset_of!(XfsBtreeBlockLong, bb_numrecs), 6);
        assert_eq!(offset_of!(XfsBtreeBlockLong, bb_leftsib), 8);
        assert_eq!(offset_of!(XfsBtreeBlockLong, bb_rightsib), 16);
        assert_eq!(offset_of!(XfsBtreeBlockLong, bb_blkno), 24);
        assert_eq!(offset_of!(XfsBtreeBlockLong, bb_lsn), 32);
        assert_eq!(offset_of!(XfsBtreeBlockLong, bb_uuid), 40);
        assert_eq!(offset_of!(XfsBtreeBlockLong, bb_owner), 56);
        assert_eq!(
            offset_of!(XfsBtreeBlockLong, bb_crc),
            XFS_BTREE_LBLOCK_CRC_OFF
        );
        assert_eq!(offset_of!(XfsBmdrBlock, bb_numrecs), 2);
        assert_eq!(offset_of!(XfsBmbtRec, l1), 8);
        assert_eq!(offset_of!(XfsDsymlinkHdr, sl_offset), 4);
        assert_eq!(offset_of!(XfsDsymlinkHdr, sl_bytes), 8);
        assert_eq!(offset_of!(XfsDsymlinkHdr, sl_crc), XFS_DSYMLINK_CRC_OFF);
        assert_eq!(offset_of!(XfsDsymlinkHdr, sl_uuid), 16);
        assert_eq!(offset_of!(XfsDsymlinkHdr, sl_owner), 32);
        assert_eq!(offset_of!(XfsDsymlinkHdr, sl_blkno), 40);
        assert_eq!(offset_of!(XfsDsymlinkHdr, sl_lsn), 48);
    }
}
