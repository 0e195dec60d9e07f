//! `xfs_da_format.h`, extended attribute part: shortform attributes, attr
//! leaf blocks and remote value blocks. Node blocks are the da btree's
//! (see [`super::da`]).
//!
//! ```text
//! shortform (attr fork, packed):
//!   hdr   totsize be16 | count u8 | padding u8
//!   entry namelen u8 | valuelen u8 | flags u8 | name | value
//!
//! leaf block (0x3bee v5 / 0xfbee v4):
//!   da blkinfo | count | usedbytes | firstused | holes | pad1 | freemap[3]
//!   [| pad2]                                   (80 bytes v5 / 32 bytes v4)
//!   entries { hashval be32, nameidx be16, flags u8, pad2 u8 } x count
//!   ... free ...
//!   name/value structures, growing down from the end of the block:
//!     local  valuelen be16 | namelen u8 | name | value
//!     remote valueblk be32 | valuelen be32 | namelen u8 | name
//!
//! remote value block (v5 only has a header; one per fs block):
//!   0 rm_magic "XARM" 4 rm_offset 8 rm_bytes 12 rm_crc (LE) 16 rm_uuid
//!  32 rm_owner 40 rm_blkno 48 rm_lsn  (56 bytes), then rm_bytes of value
//! ```

use zerocopy::byteorder::big_endian::{U16, U32, U64};
use zerocopy::byteorder::little_endian::U32 as Le32;
use zerocopy::{FromBytes, Immutable, KnownLayout, Unaligned};

use super::da::{XfsDa3Blkinfo, XfsDaBlkinfo};

/// v4 attr leaf block.
pub const XFS_ATTR_LEAF_MAGIC: u16 = 0xfbee;
/// v5 attr leaf block.
pub const XFS_ATTR3_LEAF_MAGIC: u16 = 0x3bee;
/// "XARM": v5 remote attribute value block.
pub const XFS_ATTR3_RMT_MAGIC: u32 = 0x5841_524d;
/// Byte offset of `rm_crc`.
pub const XFS_ATTR3_RMT_CRC_OFF: usize = 12;
/// Largest attribute value (`XFS_XATTR_SIZE_MAX`).
pub const XFS_XATTR_SIZE_MAX: u32 = 1 << 16;
/// Most entries an XFS ACL may have (`XFS_ACL_MAX_ENTRIES` of v5,
/// `xfs_acl.h`).
pub const XFS_ACL_MAX_ENTRIES: u32 = 1 << 16;
/// Number of freemap slots of a leaf header.
pub const XFS_ATTR_LEAF_MAPSIZE: usize = 3;

/// Value stored inline in the leaf block (leaf entries only).
pub const XFS_ATTR_LOCAL: u8 = 1 << 0;
/// "trusted." namespace.
pub const XFS_ATTR_ROOT: u8 = 1 << 1;
/// "security." namespace.
pub const XFS_ATTR_SECURE: u8 = 1 << 2;
/// Parent pointer (incompat PARENT); not a user-visible xattr.
pub const XFS_ATTR_PARENT: u8 = 1 << 3;
/// Being created or removed: to be ignored by readers.
pub const XFS_ATTR_INCOMPLETE: u8 = 1 << 7;
/// All namespace bits.
pub const XFS_ATTR_NSP_ONDISK_MASK: u8 = XFS_ATTR_ROOT | XFS_ATTR_SECURE | XFS_ATTR_PARENT;

#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsAttrSfHdr {
    /// Bytes of header plus entries.
    pub totsize: U16,
    pub count: u8,
    pub padding: u8,
}

/// Fixed start of a shortform entry; name and value follow.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsAttrSfEntry {
    pub namelen: u8,
    pub valuelen: u8,
    /// Namespace bits (`XFS_ATTR_ROOT`, ...).
    pub flags: u8,
}

#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsAttrLeafMap {
    pub base: U16,
    pub size: U16,
}

/// v4 leaf header.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsAttrLeafHdr {
    pub info: XfsDaBlkinfo,
    pub count: U16,
    pub usedbytes: U16,
    /// Lowest byte offset of any name/value structure.
    pub firstused: U16,
    pub holes: u8,
    pub pad1: u8,
    pub freemap: [XfsAttrLeafMap; XFS_ATTR_LEAF_MAPSIZE],
}

/// v5 leaf header.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsAttr3LeafHdr {
    pub info: XfsDa3Blkinfo,
    pub count: U16,
    pub usedbytes: U16,
    /// Lowest byte offset of any name/value structure; 0 means the block
    /// size (only possible for an empty 64 KiB block).
    pub firstused: U16,
    pub holes: u8,
    pub pad1: u8,
    pub freemap: [XfsAttrLeafMap; XFS_ATTR_LEAF_MAPSIZE],
    pub pad2: U32,
}

#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsAttrLeafEntry {
    pub hashval: U32,
    /// Byte offset of the name/value structure in the block.
    pub nameidx: U16,
    pub flags: u8,
    pub pad2: u8,
}

/// Fixed start of a local name/value; name then value follow.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsAttrLeafNameLocal {
    pub valuelen: U16,
    pub namelen: u8,
}

/// Fixed start of a remote name; the name follows.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsAttrLeafNameRemote {
    /// Attr-fork logical block where the value starts.
    pub valueblk: U32,
    pub valuelen: U32,
    pub namelen: u8,
}

#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct XfsAttr3RmtHdr {
    pub rm_magic: U32,
    /// Byte offset of this block's payload within the value.
    pub rm_offset: U32,
    /// Payload bytes in this block.
    pub rm_bytes: U32,
    pub rm_crc: Le32,
    pub rm_uuid: [u8; 16],
    /// The inode owning the attribute.
    pub rm_owner: U64,
    /// Daddr of this block.
    pub rm_blkno: U64,
    /// Always NULLCOMMITLSN: remote blocks are never logged.
    pub rm_lsn: U64,
}

const _: () = assert!(core::mem::size_of::<XfsAttrSfHdr>() == 4);
const _: () = assert!(core::mem::size_of::<XfsAttrSfEntry>() == 3);
const _: () = assert!(core::mem::size_of::<XfsAttrLeafMap>() == 4);
const _: () = assert!(core::mem::size_of::<XfsAttrLeafHdr>() == 32);
const _: () = assert!(core::mem::size_of::<XfsAttr3LeafHdr>() == 80);
const _: () = assert!(core::mem::size_of::<XfsAttrLeafEntry>() == 8);
const _: () = assert!(core::mem::size_of::<XfsAttrLeafNameLocal>() == 3);
const _: () = assert!(core::mem::size_of::<XfsAttrLeafNameRemote>() == 9);
const _: () = assert!(core::mem::size_of::<XfsAttr3RmtHdr>() == 56);

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;

    /// Offsets from the kernel's `xfs_ondisk.h` assertions.
    #[test]
    fn layout_matches_the_kernel() {
        assert_eq!(offset_of!(XfsAttrSfHdr, count), 2);
        assert_eq!(offset_of!(XfsAttrSfHdr, padding), 3);
        assert_eq!(offset_of!(XfsAttrSfEntry, flags), 2);
        assert_eq!(offset_of!(XfsAttrLeafHdr, count), 12);
        assert_eq!(offset_of!(XfsAttrLeafHdr, usedbytes), 14);
        assert_eq!(offset_of!(XfsAttrLeafHdr, firstused), 16);
        assert_eq!(offset_of!(XfsAttrLeafHdr, holes), 18);
        assert_eq!(offset_of!(XfsAttrLeafHdr, freemap), 20);
        assert_eq!(offset_of!(XfsAttr3LeafHdr, count), 56);
        assert_eq!(offset_of!(XfsAttr3LeafHdr, usedbytes), 58);
        assert_eq!(offset_of!(XfsAttr3LeafHdr, firstused), 60);
        assert_eq!(offset_of!(XfsAttr3LeafHdr, holes), 62);
        assert_eq!(offset_of!(XfsAttr3LeafHdr, freemap), 64);
        assert_eq!(offset_of!(XfsAttr3LeafHdr, pad2), 76);
        assert_eq!(offset_of!(XfsAttrLeafEntry, nameidx), 4);
        assert_eq!(offset_of!(XfsAttrLeafEntry, flags), 6);
        assert_eq!(offset_of!(XfsAttrLeafNameLocal, namelen), 2);
        assert_eq!(offset_of!(XfsAttrLeafNameRemote, valuelen), 4);
        assert_eq!(offset_of!(XfsAttrLeafNameRemote, namelen), 8);
        assert_eq!(offset_of!(XfsAttr3RmtHdr, rm_offset), 4);
        assert_eq!(offset_of!(XfsAttr3RmtHdr, rm_bytes), 8);
        assert_eq!(offset_of!(XfsAttr3RmtHdr, rm_crc), XFS_ATTR3_RMT_CRC_OFF);
        assert_eq!(offset_of!(XfsAttr3RmtHdr, rm_uuid), 16);
        assert_eq!(offset_of!(XfsAttr3RmtHdr, rm_owner), 32);
        assert_eq!(offset_of!(XfsAttr3RmtHdr, rm_blkno), 40);
        assert_eq!(offset_of!(XfsAttr3RmtHdr, rm_lsn), 48);
    }
}
