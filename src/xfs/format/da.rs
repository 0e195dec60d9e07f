//! `xfs_da_format.h`, da btree part: the block header shared by every
//! directory leaf/node block and attribute leaf/node block, and the
//! interior node block of the da btree.
//!
//! ```text
//! xfs_da_blkinfo (v4, 12 bytes)        xfs_da3_blkinfo (v5, 56 bytes)
//!   0 forw   4 back   8 magic  10 pad     0 hdr (xfs_da_blkinfo)  12 crc (LE)
//!                                        16 blkno  24 lsn  32 uuid[16]  48 owner
//!
//! node header: blkinfo, then __count, __level (+ __pad32 on v5): 16 / 64 bytes
//! node entries: { hashval, before } x count, ascending by hashval
//! ```
//! `forw`/`back`/`before` are logical block numbers in the fork ("dablk");
//! 0 means no sibling. Leaves are level 0. Big-endian except the CRC.

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::byteorder::little_endian::U32 as Le32;
use zerocopy::{FromBytes, Immutable, KnownLayout, Unaligned};

/// v4 da btree interior node.
pub const XFS_DA_NODE_MAGIC: u16 = 0xfebe;
/// v5 da btree interior node.
pub const XFS_DA3_NODE_MAGIC: u16 = 0x3ebe;
/// The deepest a da btree may be (root node to leaf, counted in levels).
pub const XFS_DA_NODE_MAXDEPTH: usize = 5;
/// Byte offset of the magic inside every da block.
pub const XFS_DA_MAGIC_OFF: usize = 8;
/// Byte offset of the little-endian CRC of a v5 da block.
pub const XFS_DA3_CRC_OFF: usize = 12;

#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDaBlkinfo {
    /// Next sibling block at the same level (dablk), 0 if none.
    pub forw: U32,
    /// Previous sibling block (dablk), 0 if none.
    pub back: U32,
    pub magic: U16,
    pub pad: U16,
}

#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDa3Blkinfo {
    pub hdr: XfsDaBlkinfo,
    /// CRC32C of the whole block, little-endian.
    pub crc: Le32,
    /// Daddr of the block's first sector.
    pub blkno: U64,
    pub lsn: U64,
    pub uuid: [u8; 16],
    /// Inode that owns the block.
    pub owner: U64,
}

#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDaNodeHdr {
    pub info: XfsDaBlkinfo,
    pub __count: U16,
    pub __level: U16,
}

#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDa3NodeHdr {
    pub info: XfsDa3Blkinfo,
    pub __count: U16,
    pub __level: U16,
    pub __pad32: U32,
}

#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDaNodeEntry {
    /// The largest hash value in the child's subtree.
    pub hashval: U32,
    /// The child block (dablk).
    pub before: U32,
}

const _: () = assert!(core::mem::size_of::<XfsDaBlkinfo>() == 12);
const _: () = assert!(core::mem::size_of::<XfsDa3Blkinfo>() == 56);
const _: () = assert!(core::mem::size_of::<XfsDaNodeHdr>() == 16);
const _: () = assert!(core::mem::size_of::<XfsDa3NodeHdr>() == 64);
const _: () = assert!(core::mem::size_of::<XfsDaNodeEntry>() == 8);

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;

    /// Offsets from the kernel's `xfs_ondisk.h` assertions.
    #[test]
    fn layout_matches_the_kernel() {
        assert_eq!(offset_of!(XfsDaBlkinfo, forw), 0);
        assert_eq!(offset_of!(XfsDaBlkinfo, back), 4);
        assert_eq!(offset_of!(XfsDaBlkinfo, magic), XFS_DA_MAGIC_OFF);
        assert_eq!(offset_of!(XfsDaBlkinfo, pad), 10);
        assert_eq!(offset_of!(XfsDa3Blkinfo, crc), XFS_DA3_CRC_OFF);
        assert_eq!(offset_of!(XfsDa3Blkinfo, blkno), 16);
        assert_eq!(offset_of!(XfsDa3Blkinfo, lsn), 24);
        assert_eq!(offset_of!(XfsDa3Blkinfo, uuid), 32);
        assert_eq!(offset_of!(XfsDa3Blkinfo, owner), 48);
        assert_eq!(offset_of!(XfsDaNodeHdr, __count), 12);
        assert_eq!(offset_of!(XfsDaNodeHdr, __level), 14);
        assert_eq!(offset_of!(XfsDa3NodeHdr, __count), 56);
        assert_eq!(offset_of!(XfsDa3NodeHdr, __level), 58);
        assert_eq!(offset_of!(XfsDa3NodeHdr, __pad32), 60);
        assert_eq!(offset_of!(XfsDaNodeEntry, before), 4);
    }
}
