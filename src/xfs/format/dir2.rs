//! `xfs_da_format.h`, directory part: shortform, data, leaf and free-index
//! blocks of version 2 directories (with the v5 "dir3" headers).
//!
//! ```text
//! shortform (data fork, packed):
//!   hdr  count u8 | i8count u8 | parent (4 bytes, or 8 if i8count != 0)
//!   entry namelen u8 | offset be16 | name | [ftype u8] | inumber (4 or 8)
//!
//! data block (XDD3/XD2D; XDB3/XD2B for a single-block directory):
//!   header (64 v5 / 16 v4: magic, [crc blkno lsn uuid owner], bestfree[3])
//!   8-byte aligned records:
//!     entry  inumber be64 | namelen u8 | name | [ftype u8] | pad | tag be16
//!     unused freetag 0xffff | length be16 | ... | tag be16
//!   block form only, at the end: leaf entries[count] | tail {count, stale}
//!
//! leaf block (leaf1 0x3df1/0xd2f1, leafn 0x3dff/0xd2ff):
//!   da blkinfo | count be16 | stale be16 | [pad]  (64 v5 / 16 v4)
//!   entries { hashval be32, address be32 (dataptr) }
//!   leaf1 only, at the end: bests[bestcount] be16 | bestcount be32
//!
//! free-index block (XDF3/XD2F):
//!   header (64 v5 / 16 v4): magic, [crc blkno lsn uuid owner], firstdb,
//!   nvalid, nused; then bests[] be16 (0xffff = no such data block)
//! ```

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::byteorder::little_endian::U32 as Le32;
use zerocopy::{FromBytes, Immutable, KnownLayout, Unaligned};

use super::da::{XfsDa3Blkinfo, XfsDaBlkinfo};

/// "XD2B": v4 single-block directory.
pub const XFS_DIR2_BLOCK_MAGIC: u32 = 0x5844_3242;
/// "XD2D": v4 data block.
pub const XFS_DIR2_DATA_MAGIC: u32 = 0x5844_3244;
/// "XD2F": v4 free-index block.
pub const XFS_DIR2_FREE_MAGIC: u32 = 0x5844_3246;
/// "XDB3": v5 single-block directory.
pub const XFS_DIR3_BLOCK_MAGIC: u32 = 0x5844_4233;
/// "XDD3": v5 data block.
pub const XFS_DIR3_DATA_MAGIC: u32 = 0x5844_4433;
/// "XDF3": v5 free-index block.
pub const XFS_DIR3_FREE_MAGIC: u32 = 0x5844_4633;
/// v4 single leaf block (leaf form).
pub const XFS_DIR2_LEAF1_MAGIC: u16 = 0xd2f1;
/// v4 leaf block of a node-form directory.
pub const XFS_DIR2_LEAFN_MAGIC: u16 = 0xd2ff;
/// v5 single leaf block (leaf form).
pub const XFS_DIR3_LEAF1_MAGIC: u16 = 0x3df1;
/// v5 leaf block of a node-form directory.
pub const XFS_DIR3_LEAFN_MAGIC: u16 = 0x3dff;

/// First two bytes of an unused region in a data block.
pub const XFS_DIR2_DATA_FREE_TAG: u16 = 0xffff;
/// Data block records are aligned to this many bytes.
pub const XFS_DIR2_DATA_ALIGN: usize = 8;
/// Number of bestfree slots in a data block header.
pub const XFS_DIR2_DATA_FD_COUNT: usize = 3;
/// A free-index `bests` value meaning "no data block here".
pub const NULLDATAOFF: u16 = 0xffff;
/// Leaf entry address of a stale (deleted) entry.
pub const XFS_DIR2_NULL_DATAPTR: u32 = 0;
/// Bytes of each of the three directory address spaces (data, leaf, free).
pub const XFS_DIR2_SPACE_SIZE: u64 = 1 << 35;
/// Index of the leaf space (byte offset `1 * XFS_DIR2_SPACE_SIZE`).
pub const XFS_DIR2_LEAF_SPACE: u64 = 1;
/// Index of the free-index space.
pub const XFS_DIR2_FREE_SPACE: u64 = 2;
/// Largest inode number (56 bits) an 8-byte shortform entry may carry.
pub const XFS_MAXINUMBER: u64 = (1 << 56) - 1;

/// `XFS_DIR3_FT_*`: the file type byte of entries on FTYPE filesystems.
pub const XFS_DIR3_FT_UNKNOWN: u8 = 0;
pub const XFS_DIR3_FT_REG_FILE: u8 = 1;
pub const XFS_DIR3_FT_DIR: u8 = 2;
pub const XFS_DIR3_FT_CHRDEV: u8 = 3;
pub const XFS_DIR3_FT_BLKDEV: u8 = 4;
pub const XFS_DIR3_FT_FIFO: u8 = 5;
pub const XFS_DIR3_FT_SOCK: u8 = 6;
pub const XFS_DIR3_FT_SYMLINK: u8 = 7;
pub const XFS_DIR3_FT_WHT: u8 = 8;

/// Shortform header as laid out with 8-byte inode numbers (10 bytes). With
/// `i8count == 0` only the first 4 bytes of `parent` exist (6-byte header).
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDir2SfHdr {
    /// Number of entries.
    pub count: u8,
    /// Number of entries whose inode number needs 8 bytes; non-zero means
    /// every inode number in this directory is stored in 8 bytes.
    pub i8count: u8,
    /// Parent directory inode number, 4 or 8 bytes big-endian.
    pub parent: [u8; 8],
}

/// Shortform header size with 4-byte inode numbers.
pub const XFS_DIR2_SF_HDR_SIZE4: usize = 6;
/// Shortform header size with 8-byte inode numbers.
pub const XFS_DIR2_SF_HDR_SIZE8: usize = 10;

/// Fixed start of a shortform entry; name, [ftype] and inumber follow.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDir2SfEntry {
    pub namelen: u8,
    /// Offset the entry would have in a data block (readdir cookie).
    pub offset: U16,
}

#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDir2DataFree {
    /// Byte offset of the free region in the block.
    pub offset: U16,
    /// Length of the free region in bytes.
    pub length: U16,
}

/// v4 data/block header.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDir2DataHdr {
    pub magic: U32,
    pub bestfree: [XfsDir2DataFree; XFS_DIR2_DATA_FD_COUNT],
}

/// The self-describing header of v5 data, block and free-index blocks.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDir3BlkHdr {
    pub magic: U32,
    /// CRC32C of the whole directory block, little-endian.
    pub crc: Le32,
    /// Daddr of the block's first sector.
    pub blkno: U64,
    pub lsn: U64,
    pub uuid: [u8; 16],
    /// The directory inode.
    pub owner: U64,
}

/// v5 data/block header.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDir3DataHdr {
    pub hdr: XfsDir3BlkHdr,
    pub best_free: [XfsDir2DataFree; XFS_DIR2_DATA_FD_COUNT],
    pub pad: U32,
}

/// Fixed start of a data entry; name, [ftype], padding and the tag follow.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDir2DataEntry {
    pub inumber: U64,
    pub namelen: u8,
}

/// Fixed start of an unused region; its tag sits in its last two bytes.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDir2DataUnused {
    /// `XFS_DIR2_DATA_FREE_TAG`.
    pub freetag: U16,
    /// Bytes of the region, a multiple of 8.
    pub length: U16,
}

/// v4 leaf header.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDir2LeafHdr {
    pub info: XfsDaBlkinfo,
    pub count: U16,
    pub stale: U16,
}

/// v5 leaf header.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDir3LeafHdr {
    pub info: XfsDa3Blkinfo,
    pub count: U16,
    pub stale: U16,
    pub pad: U32,
}

/// A leaf entry (also in the tail of a single-block directory).
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDir2LeafEntry {
    pub hashval: U32,
    /// Dataptr: byte offset in the data space / 8; 0 when stale.
    pub address: U32,
}

/// Last 4 bytes of a leaf1 block.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDir2LeafTail {
    pub bestcount: U32,
}

/// Last 8 bytes of a single-block directory.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDir2BlockTail {
    pub count: U32,
    pub stale: U32,
}

/// v4 free-index header.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDir2FreeHdr {
    pub magic: U32,
    /// First data block number this block describes.
    pub firstdb: U32,
    /// Number of valid `bests` entries.
    pub nvalid: U32,
    /// Number of entries that are not NULLDATAOFF.
    pub nused: U32,
}

/// v5 free-index header.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsDir3FreeHdr {
    pub hdr: XfsDir3BlkHdr,
    pub firstdb: U32,
    pub nvalid: U32,
    pub nused: U32,
    pub pad: U32,
}

const _: () = assert!(core::mem::size_of::<XfsDir2SfHdr>() == XFS_DIR2_SF_HDR_SIZE8);
const _: () = assert!(core::mem::size_of::<XfsDir2SfEntry>() == 3);
const _: () = assert!(core::mem::size_of::<XfsDir2DataFree>() == 4);
const _: () = assert!(core::mem::size_of::<XfsDir2DataHdr>() == 16);
const _: () = assert!(core::mem::size_of::<XfsDir3BlkHdr>() == 48);
const _: () = assert!(core::mem::size_of::<XfsDir3DataHdr>() == 64);
const _: () = assert!(core::mem::size_of::<XfsDir2DataEntry>() == 9);
const _: () = assert!(core::mem::size_of::<XfsDir2DataUnused>() == 4);
const _: () = assert!(core::mem::size_of::<XfsDir2LeafHdr>() == 16);
const _: () = assert!(core::mem::size_of::<XfsDir3LeafHdr>() == 64);
const _: () = assert!(core::mem::size_of::<XfsDir2LeafEntry>() == 8);
const _: () = assert!(core::mem::size_of::<XfsDir2LeafTail>() == 4);
const _: () = assert!(core::mem::size_of::<XfsDir2BlockTail>() == 8);
const _: () = assert!(core::mem::size_of::<XfsDir2FreeHdr>() == 16);
const _: () = assert!(core::mem::size_of::<XfsDir3FreeHdr>() == 64);

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;

    /// Offsets from the kernel's `xfs_ondisk.h` assertions.
    #[test]
    fn layout_matches_the_kernel() {
        assert_eq!(offset_of!(XfsDir2SfHdr, i8count), 1);
        assert_eq!(offset_of!(XfsDir2SfHdr, parent), 2);
        assert_eq!(offset_of!(XfsDir2SfEntry, offset), 1);
        assert_eq!(offset_of!(XfsDir2DataFree, length), 2);
        assert_eq!(offset_of!(XfsDir2DataHdr, bestfree), 4);
        assert_eq!(offset_of!(XfsDir3BlkHdr, crc), 4);
        assert_eq!(offset_of!(XfsDir3BlkHdr, blkno), 8);
        assert_eq!(offset_of!(XfsDir3BlkHdr, lsn), 16);
        assert_eq!(offset_of!(XfsDir3BlkHdr, uuid), 24);
        assert_eq!(offset_of!(XfsDir3BlkHdr, owner), 40);
        assert_eq!(offset_of!(XfsDir3DataHdr, best_free), 48);
        assert_eq!(offset_of!(XfsDir3DataHdr, pad), 60);
        assert_eq!(offset_of!(XfsDir2DataEntry, namelen), 8);
        assert_eq!(offset_of!(XfsDir2DataUnused, length), 2);
        assert_eq!(offset_of!(XfsDir2LeafHdr, count), 12);
        assert_eq!(offset_of!(XfsDir2LeafHdr, stale), 14);
        assert_eq!(offset_of!(XfsDir3LeafHdr, count), 56);
        assert_eq!(offset_of!(XfsDir3LeafHdr, stale), 58);
        assert_eq!(offset_of!(XfsDir3LeafHdr, pad), 60);
        assert_eq!(offset_of!(XfsDir2LeafEntry, address), 4);
        assert_eq!(offset_of!(XfsDir2BlockTail, stale), 4);
        assert_eq!(offset_of!(XfsDir2FreeHdr, firstdb), 4);
        assert_eq!(offset_of!(XfsDir2FreeHdr, nvalid), 8);
        assert_eq!(offset_of!(XfsDir2FreeHdr, nused), 12);
        assert_eq!(offset_of!(XfsDir3FreeHdr, firstdb), 48);
        assert_eq!(offset_of!(XfsDir3FreeHdr, nvalid), 52);
        assert_eq!(offset_of!(XfsDir3FreeHdr, nused), 56);
        assert_eq!(offset_of!(XfsDir3FreeHdr, pad), 60);
    }
}
