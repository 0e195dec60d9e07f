//! The journal's on-disk structures, from `xfs_log_format.h`.
//!
//! ```text
//! record header (first 512-byte sector of every record, big-endian, 328 bytes used)
//!   0 h_magicno 0xFEEDBABE   4 h_cycle   8 h_version   12 h_len
//!  16 h_lsn   24 h_tail_lsn   32 h_crc (LE)   36 h_prev_block   40 h_num_logops
//!  44 h_cycle_data[64]   300 h_fmt   304 h_fs_uuid[16]   320 h_size   324 h_pad0
//! extended header (header sectors 1.., big-endian, 260 bytes used)
//!   0 xh_cycle   4 xh_cycle_data[64]
//! op header (12 bytes, big-endian)
//!   0 oh_tid   4 oh_len   8 oh_clientid   9 oh_flags   10 oh_res2
//! ```
//!
//! Everything after the op headers is in the byte order of the host that
//! wrote the log (`h_fmt`): the transaction header and every log item
//! format structure. Those structures are declared here generic over the
//! byte order `O` ([`zerocopy::byteorder::LittleEndian`] or
//! [`zerocopy::byteorder::BigEndian`]), so one declaration serves both.
//! The exceptions are raw disk bytes: buffer data regions, inode fork data,
//! dquot data, attribute names and values, and the body of the inode-create
//! item ([`XfsIcreateLog`]), which are big-endian whatever the host.
//!
//! Offsets are those of the 64-bit layout the kernel writes on x86-64 and
//! arm64; the packed 32-bit variants that differ are declared separately
//! ([`XfsInodeLogFormat32`], [`XfsExtent32`]).

use zerocopy::byteorder::big_endian::{U32 as Be32, U64 as Be64};
use zerocopy::byteorder::little_endian::U32 as Le32;
use zerocopy::byteorder::{ByteOrder, I32, I64, U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// First word of every record header.
pub const XLOG_HEADER_MAGIC_NUM: u32 = 0xFEED_BABE;
/// Bytes of record data whose first words one header sector can save
/// (64 blocks of 512 bytes).
pub const XLOG_HEADER_CYCLE_SIZE: u32 = 32 * 1024;
/// Saved first words per header sector.
pub const XLOG_CYCLE_DATA_WORDS: usize = 64;
/// Log versions (`h_version` bits).
pub const XLOG_VERSION_1: u32 = 1;
pub const XLOG_VERSION_2: u32 = 2;
pub const XLOG_VERSION_OKBITS: u32 = XLOG_VERSION_1 | XLOG_VERSION_2;
/// The largest iclog (and so record) the kernel writes.
pub const XLOG_MAX_RECORD_BSIZE: u32 = 256 * 1024;
/// Iclogs in flight at once: the depth of torn-write checking at the head.
pub const XLOG_MAX_ICLOGS: u32 = 8;
/// Bytes of the record header the CRC covers (with the 4 padding bytes that
/// 64-bit hosts have after `h_size`).
pub const XLOG_REC_SIZE: usize = 328;
/// The same without the padding, as 32-bit x86 hosts laid it out.
pub const XLOG_REC_SIZE_OTHER: usize = 324;
/// Bytes of an extended header the CRC covers.
pub const XLOG_REC_EXT_SIZE: usize = 260;
/// Byte offset of `h_crc`.
pub const XLOG_REC_CRC_OFF: usize = 32;

/// `h_fmt`: the byte order of the host that wrote the items.
pub const XLOG_FMT_UNKNOWN: u32 = 0;
pub const XLOG_FMT_LINUX_LE: u32 = 1;
pub const XLOG_FMT_LINUX_BE: u32 = 2;
pub const XLOG_FMT_IRIX_BE: u32 = 3;

/// `oh_clientid`.
pub const XFS_TRANSACTION: u8 = 0x69;
pub const XFS_VOLUME: u8 = 0x2;
pub const XFS_LOG: u8 = 0xaa;

/// `oh_flags`.
pub const XLOG_START_TRANS: u8 = 0x01;
pub const XLOG_COMMIT_TRANS: u8 = 0x02;
pub const XLOG_CONTINUE_TRANS: u8 = 0x04;
pub const XLOG_WAS_CONT_TRANS: u8 = 0x08;
pub const XLOG_END_TRANS: u8 = 0x10;
pub const XLOG_UNMOUNT_TRANS: u8 = 0x20;

/// "Un": the payload of an unmount record, a host-order u16.
pub const XLOG_UNMOUNT_TYPE: u16 = 0x556e;

/// "TRAN" as a host-order u32.
pub const XFS_TRANS_HEADER_MAGIC: u32 = 0x5452_414e;
/// `th_type` of every checkpoint written since Linux 4.1 (42 before).
pub const XFS_TRANS_CHECKPOINT: u32 = 40;

/// The most regions one log item may have (`XLOG_MAX_REGIONS_IN_ITEM`).
pub const XLOG_MAX_REGIONS_IN_ITEM: u16 = 257;

/// Log item types (`XFS_LI_*`), the host-order u16 that starts every item.
pub const XFS_LI_EFI: u16 = 0x1236;
pub const XFS_LI_EFD: u16 = 0x1237;
pub const XFS_LI_IUNLINK: u16 = 0x1238;
pub const XFS_LI_INODE: u16 = 0x123b;
pub const XFS_LI_BUF: u16 = 0x123c;
pub const XFS_LI_DQUOT: u16 = 0x123d;
pub const XFS_LI_QUOTAOFF: u16 = 0x123e;
pub const XFS_LI_ICREATE: u16 = 0x123f;
pub const XFS_LI_RUI: u16 = 0x1240;
pub const XFS_LI_RUD: u16 = 0x1241;
pub const XFS_LI_CUI: u16 = 0x1242;
pub const XFS_LI_CUD: u16 = 0x1243;
pub const XFS_LI_BUI: u16 = 0x1244;
pub const XFS_LI_BUD: u16 = 0x1245;
pub const XFS_LI_ATTRI: u16 = 0x1246;
pub const XFS_LI_ATTRD: u16 = 0x1247;
pub const XFS_LI_XMI: u16 = 0x1248;
pub const XFS_LI_XMD: u16 = 0x1249;
pub const XFS_LI_EFI_RT: u16 = 0x124a;
pub const XFS_LI_EFD_RT: u16 = 0x124b;
pub const XFS_LI_RUI_RT: u16 = 0x124c;
pub const XFS_LI_RUD_RT: u16 = 0x124d;
pub const XFS_LI_CUI_RT: u16 = 0x124e;
pub const XFS_LI_CUD_RT: u16 = 0x124f;

/// Every log item type above, in code order; the realtime variants (`_RT`)
/// last.
pub const LOG_ITEM_TYPES: [u16; 24] = [
    XFS_LI_EFI,
    XFS_LI_EFD,
    XFS_LI_IUNLINK,
    XFS_LI_INODE,
    XFS_LI_BUF,
    XFS_LI_DQUOT,
    XFS_LI_QUOTAOFF,
    XFS_LI_ICREATE,
    XFS_LI_RUI,
    XFS_LI_RUD,
    XFS_LI_CUI,
    XFS_LI_CUD,
    XFS_LI_BUI,
    XFS_LI_BUD,
    XFS_LI_ATTRI,
    XFS_LI_ATTRD,
    XFS_LI_XMI,
    XFS_LI_XMD,
    XFS_LI_EFI_RT,
    XFS_LI_EFD_RT,
    XFS_LI_RUI_RT,
    XFS_LI_RUD_RT,
    XFS_LI_CUI_RT,
    XFS_LI_CUD_RT,
];

/// `blf_flags` low bits.
pub const XFS_BLF_INODE_BUF: u16 = 0x1;
pub const XFS_BLF_CANCEL: u16 = 0x2;
pub const XFS_BLF_UDQUOT_BUF: u16 = 0x4;
pub const XFS_BLF_PDQUOT_BUF: u16 = 0x8;
pub const XFS_BLF_GDQUOT_BUF: u16 = 0x10;
/// The buffer type lives in the top 5 bits of `blf_flags`.
pub const XFS_BLFT_SHIFT: u16 = 11;
/// Bytes per bit of the dirty bitmap.
pub const XFS_BLF_CHUNK: u32 = 128;
pub const XFS_BLF_SHIFT: u32 = 7;
/// Words of the dirty bitmap for the largest (64 KiB) buffer, plus one.
pub const XFS_BLF_DATAMAP_SIZE: usize = 17;

/// Buffer types (`xfs_blft`), `blf_flags >> 11`.
pub const XFS_BLFT_UNKNOWN_BUF: u8 = 0;
pub const XFS_BLFT_UDQUOT_BUF: u8 = 1;
pub const XFS_BLFT_PDQUOT_BUF: u8 = 2;
pub const XFS_BLFT_GDQUOT_BUF: u8 = 3;
pub const XFS_BLFT_BTREE_BUF: u8 = 4;
pub const XFS_BLFT_AGF_BUF: u8 = 5;
pub const XFS_BLFT_AGFL_BUF: u8 = 6;
pub const XFS_BLFT_AGI_BUF: u8 = 7;
pub const XFS_BLFT_DINO_BUF: u8 = 8;
pub const XFS_BLFT_SYMLINK_BUF: u8 = 9;
pub const XFS_BLFT_DIR_BLOCK_BUF: u8 = 10;
pub const XFS_BLFT_DIR_DATA_BUF: u8 = 11;
pub const XFS_BLFT_DIR_FREE_BUF: u8 = 12;
pub const XFS_BLFT_DIR_LEAF1_BUF: u8 = 13;
pub const XFS_BLFT_DIR_LEAFN_BUF: u8 = 14;
pub const XFS_BLFT_DA_NODE_BUF: u8 = 15;
pub const XFS_BLFT_ATTR_LEAF_BUF: u8 = 16;
pub const XFS_BLFT_ATTR_RMT_BUF: u8 = 17;
pub const XFS_BLFT_SB_BUF: u8 = 18;
pub const XFS_BLFT_RTBITMAP_BUF: u8 = 19;
pub const XFS_BLFT_RTSUMMARY_BUF: u8 = 20;

/// `ilf_fields` bits (`XFS_ILOG_*`).
pub const XFS_ILOG_CORE: u32 = 0x001;
pub const XFS_ILOG_DDATA: u32 = 0x002;
pub const XFS_ILOG_DEXT: u32 = 0x004;
pub const XFS_ILOG_DBROOT: u32 = 0x008;
pub const XFS_ILOG_DEV: u32 = 0x010;
pub const XFS_ILOG_UUID: u32 = 0x020;
pub const XFS_ILOG_ADATA: u32 = 0x040;
pub const XFS_ILOG_AEXT: u32 = 0x080;
pub const XFS_ILOG_ABROOT: u32 = 0x100;
pub const XFS_ILOG_DOWNER: u32 = 0x200;
pub const XFS_ILOG_AOWNER: u32 = 0x400;
pub const XFS_ILOG_DFORK: u32 = XFS_ILOG_DDATA | XFS_ILOG_DEXT | XFS_ILOG_DBROOT;
pub const XFS_ILOG_AFORK: u32 = XFS_ILOG_ADATA | XFS_ILOG_AEXT | XFS_ILOG_ABROOT;

/// `me_flags` of rmap/bmap intents: the low byte is the operation.
pub const XFS_RMAP_EXTENT_TYPE_MASK: u32 = 0xff;
pub const XFS_RMAP_EXTENT_ATTR_FORK: u32 = 1 << 31;
pub const XFS_RMAP_EXTENT_BMBT_BLOCK: u32 = 1 << 30;
pub const XFS_RMAP_EXTENT_UNWRITTEN: u32 = 1 << 29;
pub const XFS_BMAP_EXTENT_ATTR_FORK: u32 = 1 << 31;
pub const XFS_BMAP_EXTENT_UNWRITTEN: u32 = 1 << 30;
pub const XFS_BMAP_EXTENT_REALTIME: u32 = 1 << 29;

/// `struct xlog_rec_header`, with the 4 padding bytes a 64-bit host has at
/// the end (`h_pad0`), which the record CRC covers.
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XlogRecHeader {
    pub h_magicno: Be32,
    pub h_cycle: Be32,
    pub h_version: Be32,
    /// Bytes of record data after the header sectors.
    pub h_len: Be32,
    pub h_lsn: Be64,
    pub h_tail_lsn: Be64,
    /// Little-endian CRC32c; 0 means "not checksummed".
    pub h_crc: Le32,
    pub h_prev_block: Be32,
    pub h_num_logops: Be32,
    /// The first word of data blocks 0..63, replaced by the cycle on disk.
    pub h_cycle_data: [Be32; XLOG_CYCLE_DATA_WORDS],
    pub h_fmt: Be32,
    pub h_fs_uuid: [u8; 16],
    /// Bytes of the in-core log buffer that wrote this record.
    pub h_size: Be32,
    pub h_pad0: Be32,
}

/// `struct xlog_rec_ext_header`: header sectors 1.. of a record larger than
/// 32 KiB.
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XlogRecExtHeader {
    pub xh_cycle: Be32,
    /// The first word of data blocks `64·j .. 64·j + 63` (sector j).
    pub xh_cycle_data: [Be32; XLOG_CYCLE_DATA_WORDS],
}

/// `struct xlog_op_header`.
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XlogOpHeader {
    pub oh_tid: Be32,
    /// Payload bytes after this header.
    pub oh_len: Be32,
    pub oh_clientid: u8,
    pub oh_flags: u8,
    pub oh_res2: [u8; 2],
}

/// `struct xfs_trans_header`, host order.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsTransHeader<O: ByteOrder> {
    pub th_magic: U32<O>,
    pub th_type: U32<O>,
    pub th_tid: U32<O>,
    /// For checkpoints: the number of regions, not of items.
    pub th_num_items: U32<O>,
}

/// `struct xfs_unmount_log_format`, host order.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsUnmountLogFormat<O: ByteOrder> {
    pub magic: U16<O>,
    pub pad1: U16<O>,
    pub pad2: U32<O>,
}

/// The two fields every log item format structure starts with.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsLogItemHeader<O: ByteOrder> {
    pub type_: U16<O>,
    /// Regions the item occupies, its format region included.
    pub size: U16<O>,
}

/// The fixed part of `struct xfs_buf_log_format`; `blf_map_size` host-order
/// u32 words of `blf_data_map` follow (the region is cut after them).
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsBufLogFormat<O: ByteOrder> {
    pub blf_type: U16<O>,
    pub blf_size: U16<O>,
    pub blf_flags: U16<O>,
    /// Buffer length in 512-byte blocks.
    pub blf_len: U16<O>,
    /// Daddr of the buffer.
    pub blf_blkno: I64<O>,
    /// Words of the dirty bitmap present.
    pub blf_map_size: U32<O>,
}

/// `struct xfs_inode_log_format` (64-bit layout).
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsInodeLogFormat<O: ByteOrder> {
    pub ilf_type: U16<O>,
    pub ilf_size: U16<O>,
    pub ilf_fields: U32<O>,
    /// True byte length of the attr fork region.
    pub ilf_asize: U16<O>,
    /// True byte length of the data fork region.
    pub ilf_dsize: U16<O>,
    pub ilf_pad: U32<O>,
    pub ilf_ino: U64<O>,
    /// `ilfu_rdev` (u32) with XFS_ILOG_DEV, else unused.
    pub ilf_u: [u8; 16],
    /// Daddr of the inode cluster buffer.
    pub ilf_blkno: I64<O>,
    /// Cluster buffer length in 512-byte blocks.
    pub ilf_len: I32<O>,
    /// Byte offset of the inode in the cluster buffer.
    pub ilf_boffset: I32<O>,
}

/// `struct xfs_inode_log_format_32`: the packed layout of 32-bit hosts.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsInodeLogFormat32<O: ByteOrder> {
    pub ilf_type: U16<O>,
    pub ilf_size: U16<O>,
    pub ilf_fields: U32<O>,
    pub ilf_asize: U16<O>,
    pub ilf_dsize: U16<O>,
    pub ilf_ino: U64<O>,
    pub ilf_u: [u8; 16],
    pub ilf_blkno: I64<O>,
    pub ilf_len: I32<O>,
    pub ilf_boffset: I32<O>,
}

/// `struct xfs_log_dinode`: the logged inode core, laid out like
/// `struct xfs_dinode` but in host order. `di_next_unlinked`, `di_crc` and
/// `di_lsn` carry no meaning in the log. v1/v2 inodes log only the first 96
/// bytes.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsLogDinode<O: ByteOrder> {
    pub di_magic: U16<O>,
    pub di_mode: U16<O>,
    pub di_version: u8,
    pub di_format: u8,
    pub di_metatype: U16<O>,
    pub di_uid: U32<O>,
    pub di_gid: U32<O>,
    pub di_nlink: U32<O>,
    pub di_projid_lo: U16<O>,
    pub di_projid_hi: U16<O>,
    /// `di_big_nextents` with NREXT64; padding (and v2 flushiter) otherwise.
    pub di_big_nextents: U64<O>,
    pub di_atime: U64<O>,
    pub di_mtime: U64<O>,
    pub di_ctime: U64<O>,
    pub di_size: U64<O>,
    pub di_nblocks: U64<O>,
    pub di_extsize: U32<O>,
    /// `di_nextents`, or `di_big_anextents` with NREXT64.
    pub di_nextents: U32<O>,
    /// `di_anextents`, or padding with NREXT64.
    pub di_anextents: U16<O>,
    pub di_forkoff: u8,
    pub di_aformat: u8,
    pub di_dmevmask: U32<O>,
    pub di_dmstate: U16<O>,
    pub di_flags: U16<O>,
    pub di_gen: U32<O>,
    pub di_next_unlinked: U32<O>,
    pub di_crc: U32<O>,
    pub di_changecount: U64<O>,
    pub di_lsn: U64<O>,
    pub di_flags2: U64<O>,
    pub di_cowextsize: U32<O>,
    pub di_pad2: [u8; 12],
    pub di_crtime: U64<O>,
    pub di_ino: U64<O>,
    pub di_uuid: [u8; 16],
}

/// Bytes of the logged v1/v2 inode core (up to `di_next_unlinked`).
pub const XFS_LOG_DINODE_V2_SIZE: usize = 96;

/// `struct xfs_icreate_log`: type and size in host order, the rest
/// big-endian.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsIcreateLog<O: ByteOrder> {
    pub icl_type: U16<O>,
    pub icl_size: U16<O>,
    pub icl_ag: Be32,
    /// First AG block of the new inode chunk.
    pub icl_agbno: Be32,
    /// Inodes to initialise.
    pub icl_count: Be32,
    /// Bytes per inode.
    pub icl_isize: Be32,
    /// Blocks of the chunk.
    pub icl_length: Be32,
    pub icl_gen: Be32,
}

/// `struct xfs_dq_logformat`.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsDqLogformat<O: ByteOrder> {
    pub qlf_type: U16<O>,
    pub qlf_size: U16<O>,
    pub qlf_id: U32<O>,
    /// Daddr of the dquot buffer.
    pub qlf_blkno: I64<O>,
    /// Length of the dquot buffer in filesystem blocks.
    pub qlf_len: I32<O>,
    /// Byte offset of the dquot in the buffer.
    pub qlf_boffset: U32<O>,
}

/// `struct xfs_qoff_logformat`.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsQoffLogformat<O: ByteOrder> {
    pub qf_type: U16<O>,
    pub qf_size: U16<O>,
    pub qf_flags: U32<O>,
    pub qf_pad: [u8; 12],
}

/// The 16-byte head shared by `struct xfs_efi_log_format` and
/// `struct xfs_efd_log_format` (`nextents` then the EFI id, or for an EFD
/// the id of the EFI it completes); the extents follow.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsEfiLogFormat<O: ByteOrder> {
    pub efi_type: U16<O>,
    pub efi_size: U16<O>,
    pub efi_nextents: U32<O>,
    pub efi_id: U64<O>,
}

/// `struct xfs_extent_64`: what 64-bit hosts write in EFI/EFD items.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsExtent64<O: ByteOrder> {
    /// AG-packed block number (an rt block for the RT variants).
    pub ext_start: U64<O>,
    pub ext_len: U32<O>,
    pub ext_pad: U32<O>,
}

/// `struct xfs_extent_32`: the packed layout of 32-bit hosts.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsExtent32<O: ByteOrder> {
    pub ext_start: U64<O>,
    pub ext_len: U32<O>,
}

/// The 16-byte head of the RUI, CUI, BUI and XMI-less intent formats:
/// `{type, size, nextents, id}` (`struct xfs_rui_log_format` and kin).
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsRuiLogFormat<O: ByteOrder> {
    pub rui_type: U16<O>,
    pub rui_size: U16<O>,
    pub rui_nextents: U32<O>,
    pub rui_id: U64<O>,
}

/// `struct xfs_map_extent`: one rmap (RUI) or bmap (BUI) update.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsMapExtent<O: ByteOrder> {
    /// Owner: an inode number or a special owner code.
    pub me_owner: U64<O>,
    /// AG-packed start block.
    pub me_startblock: U64<O>,
    /// File offset in blocks.
    pub me_startoff: U64<O>,
    pub me_len: U32<O>,
    pub me_flags: U32<O>,
}

/// `struct xfs_phys_extent`: one refcount update (CUI).
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsPhysExtent<O: ByteOrder> {
    pub pe_startblock: U64<O>,
    pub pe_len: U32<O>,
    pub pe_flags: U32<O>,
}

/// The 16-byte done items RUD, CUD, BUD, ATTRD and XMD:
/// `{type, size, pad, id of the intent}` (`struct xfs_rud_log_format` and kin).
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsRudLogFormat<O: ByteOrder> {
    pub rud_type: U16<O>,
    pub rud_size: U16<O>,
    pub __pad: U32<O>,
    pub rud_rui_id: U64<O>,
}

/// `struct xfs_attri_log_format`.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsAttriLogFormat<O: ByteOrder> {
    pub alfi_type: U16<O>,
    pub alfi_size: U16<O>,
    /// Inode generation (checked for parent-pointer operations).
    pub alfi_igen: U32<O>,
    pub alfi_id: U64<O>,
    pub alfi_ino: U64<O>,
    pub alfi_op_flags: U32<O>,
    /// `alfi_name_len`, or for PPTR_REPLACE old (low 16 bits on LE hosts:
    /// the first u16) and new name lengths.
    pub alfi_name_len: U32<O>,
    pub alfi_value_len: U32<O>,
    pub alfi_attr_filter: U32<O>,
}

/// `struct xfs_xmi_log_format`: a file-mapping exchange intent.
#[derive(FromBytes, Immutable, KnownLayout, Unaligned, Debug)]
#[repr(C)]
pub struct XfsXmiLogFormat<O: ByteOrder> {
    pub xmi_type: U16<O>,
    pub xmi_size: U16<O>,
    pub __pad: U32<O>,
    pub xmi_id: U64<O>,
    pub xmi_inode1: U64<O>,
    pub xmi_inode2: U64<O>,
    pub xmi_igen1: U32<O>,
    pub xmi_igen2: U32<O>,
    pub xmi_startoff1: U64<O>,
    pub xmi_startoff2: U64<O>,
    pub xmi_blockcount: U64<O>,
    pub xmi_flags: U64<O>,
    pub xmi_isize1: I64<O>,
    pub xmi_isize2: I64<O>,
}

/// `xmi_flags`: exchange the attr forks (else the data forks).
pub const XFS_EXCHMAPS_ATTR_FORK: u64 = 1 << 0;
/// `xmi_flags`: set the file sizes from `xmi_isize1`/`xmi_isize2` at the end.
pub const XFS_EXCHMAPS_SET_SIZES: u64 = 1 << 1;
/// `xmi_flags`: exchange only the written mappings of the first file.
pub const XFS_EXCHMAPS_INO1_WRITTEN: u64 = 1 << 2;
/// `xmi_flags`: clear the first file's reflink flag at the end.
pub const XFS_EXCHMAPS_CLEAR_INO1_REFLINK: u64 = 1 << 3;
/// `xmi_flags`: clear the second file's reflink flag at the end.
pub const XFS_EXCHMAPS_CLEAR_INO2_REFLINK: u64 = 1 << 4;
/// The `xmi_flags` an XMI may carry.
pub const XFS_EXCHMAPS_LOGGED_FLAGS: u64 = XFS_EXCHMAPS_ATTR_FORK
    | XFS_EXCHMAPS_SET_SIZES
    | XFS_EXCHMAPS_INO1_WRITTEN
    | XFS_EXCHMAPS_CLEAR_INO1_REFLINK
    | XFS_EXCHMAPS_CLEAR_INO2_REFLINK;

const _: () = assert!(core::mem::size_of::<XlogRecHeader>() == XLOG_REC_SIZE);
const _: () = assert!(core::mem::size_of::<XlogRecExtHeader>() == XLOG_REC_EXT_SIZE);

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use core::mem::{offset_of, size_of};
    use zerocopy::byteorder::LittleEndian as LE;

    /// Offsets and sizes from the kernel's `xfs_ondisk.h` assertions and
    /// the 64-bit layout of `xfs_log_format.h`.
    #[test]
    fn record_and_op_headers_match_the_kernel() {
        assert_eq!(size_of::<XlogRecHeader>(), 328);
        assert_eq!(offset_of!(XlogRecHeader, h_len), 12);
        assert_eq!(offset_of!(XlogRecHeader, h_lsn), 16);
        assert_eq!(offset_of!(XlogRecHeader, h_tail_lsn), 24);
        assert_eq!(offset_of!(XlogRecHeader, h_crc), XLOG_REC_CRC_OFF);
        assert_eq!(offset_of!(XlogRecHeader, h_prev_block), 36);
        assert_eq!(offset_of!(XlogRecHeader, h_num_logops), 40);
        assert_eq!(offset_of!(XlogRecHeader, h_cycle_data), 44);
        assert_eq!(offset_of!(XlogRecHeader, h_fmt), 300);
        assert_eq!(offset_of!(XlogRecHeader, h_fs_uuid), 304);
        assert_eq!(offset_of!(XlogRecHeader, h_size), 320);
        assert_eq!(size_of::<XlogRecExtHeader>(), 260);
        assert_eq!(size_of::<XlogOpHeader>(), 12);
        assert_eq!(offset_of!(XlogOpHeader, oh_clientid), 8);
        assert_eq!(offset_of!(XlogOpHeader, oh_flags), 9);
        assert_eq!(size_of::<XfsTransHeader<LE>>(), 16);
        assert_eq!(offset_of!(XfsTransHeader<LE>, th_num_items), 12);
        assert_eq!(size_of::<XfsUnmountLogFormat<LE>>(), 8);
    }

    #[test]
    fn item_formats_match_the_kernel() {
        assert_eq!(size_of::<XfsBufLogFormat<LE>>(), 20);
        assert_eq!(offset_of!(XfsBufLogFormat<LE>, blf_flags), 4);
        assert_eq!(offset_of!(XfsBufLogFormat<LE>, blf_len), 6);
        assert_eq!(offset_of!(XfsBufLogFormat<LE>, blf_blkno), 8);
        assert_eq!(offset_of!(XfsBufLogFormat<LE>, blf_map_size), 16);

        assert_eq!(size_of::<XfsInodeLogFormat<LE>>(), 56);
        assert_eq!(offset_of!(XfsInodeLogFormat<LE>, ilf_fields), 4);
        assert_eq!(offset_of!(XfsInodeLogFormat<LE>, ilf_asize), 8);
        assert_eq!(offset_of!(XfsInodeLogFormat<LE>, ilf_dsize), 10);
        assert_eq!(offset_of!(XfsInodeLogFormat<LE>, ilf_ino), 16);
        assert_eq!(offset_of!(XfsInodeLogFormat<LE>, ilf_u), 24);
        assert_eq!(offset_of!(XfsInodeLogFormat<LE>, ilf_blkno), 40);
        assert_eq!(offset_of!(XfsInodeLogFormat<LE>, ilf_len), 48);
        assert_eq!(offset_of!(XfsInodeLogFormat<LE>, ilf_boffset), 52);
        assert_eq!(size_of::<XfsInodeLogFormat32<LE>>(), 52);
        assert_eq!(offset_of!(XfsInodeLogFormat32<LE>, ilf_ino), 12);
        assert_eq!(offset_of!(XfsInodeLogFormat32<LE>, ilf_u), 20);
        assert_eq!(offset_of!(XfsInodeLogFormat32<LE>, ilf_blkno), 36);
        assert_eq!(offset_of!(XfsInodeLogFormat32<LE>, ilf_len), 44);
        assert_eq!(offset_of!(XfsInodeLogFormat32<LE>, ilf_boffset), 48);

        assert_eq!(size_of::<XfsLogDinode<LE>>(), 176);
        assert_eq!(offset_of!(XfsLogDinode<LE>, di_atime), 32);
        assert_eq!(offset_of!(XfsLogDinode<LE>, di_size), 56);
        assert_eq!(offset_of!(XfsLogDinode<LE>, di_nextents), 76);
        assert_eq!(offset_of!(XfsLogDinode<LE>, di_forkoff), 82);
        assert_eq!(offset_of!(XfsLogDinode<LE>, di_gen), 92);
        assert_eq!(
            offset_of!(XfsLogDinode<LE>, di_next_unlinked),
            XFS_LOG_DINODE_V2_SIZE
        );
        assert_eq!(offset_of!(XfsLogDinode<LE>, di_lsn), 112);
        assert_eq!(offset_of!(XfsLogDinode<LE>, di_flags2), 120);
        assert_eq!(offset_of!(XfsLogDinode<LE>, di_crtime), 144);
        assert_eq!(offset_of!(XfsLogDinode<LE>, di_ino), 152);
        assert_eq!(offset_of!(XfsLogDinode<LE>, di_uuid), 160);

        assert_eq!(size_of::<XfsIcreateLog<LE>>(), 28);
        assert_eq!(offset_of!(XfsIcreateLog<LE>, icl_gen), 24);
        assert_eq!(size_of::<XfsDqLogformat<LE>>(), 24);
        assert_eq!(offset_of!(XfsDqLogformat<LE>, qlf_blkno), 8);
        assert_eq!(offset_of!(XfsDqLogformat<LE>, qlf_boffset), 20);
        assert_eq!(size_of::<XfsQoffLogformat<LE>>(), 20);

        assert_eq!(size_of::<XfsEfiLogFormat<LE>>(), 16);
        assert_eq!(size_of::<XfsExtent64<LE>>(), 16);
        assert_eq!(size_of::<XfsExtent32<LE>>(), 12);
        assert_eq!(size_of::<XfsRuiLogFormat<LE>>(), 16);
        assert_eq!(size_of::<XfsMapExtent<LE>>(), 32);
        assert_eq!(offset_of!(XfsMapExtent<LE>, me_len), 24);
        assert_eq!(offset_of!(XfsMapExtent<LE>, me_flags), 28);
        assert_eq!(size_of::<XfsPhysExtent<LE>>(), 16);
        assert_eq!(offset_of!(XfsPhysExtent<LE>, pe_flags), 12);
        assert_eq!(size_of::<XfsRudLogFormat<LE>>(), 16);
        assert_eq!(offset_of!(XfsRudLogFormat<LE>, rud_rui_id), 8);

        assert_eq!(size_of::<XfsAttriLogFormat<LE>>(), 40);
        assert_eq!(offset_of!(XfsAttriLogFormat<LE>, alfi_id), 8);
        assert_eq!(offset_of!(XfsAttriLogFormat<LE>, alfi_ino), 16);
        assert_eq!(offset_of!(XfsAttriLogFormat<LE>, alfi_op_flags), 24);
        assert_eq!(offset_of!(XfsAttriLogFormat<LE>, alfi_name_len), 28);
        assert_eq!(offset_of!(XfsAttriLogFormat<LE>, alfi_value_len), 32);
        assert_eq!(offset_of!(XfsAttriLogFormat<LE>, alfi_attr_filter), 36);

        assert_eq!(size_of::<XfsXmiLogFormat<LE>>(), 88);
        assert_eq!(offset_of!(XfsXmiLogFormat<LE>, xmi_inode1), 16);
        assert_eq!(offset_of!(XfsXmiLogFormat<LE>, xmi_igen1), 32);
        assert_eq!(offset_of!(XfsXmiLogFormat<LE>, xmi_startoff1), 40);
        assert_eq!(offset_of!(XfsXmiLogFormat<LE>, xmi_blockcount), 56);
        assert_eq!(offset_of!(XfsXmiLogFormat<LE>, xmi_flags), 64);
        assert_eq!(offset_of!(XfsXmiLogFormat<LE>, xmi_isize1), 72);
        assert_eq!(offset_of!(XfsXmiLogFormat<LE>, xmi_isize2), 80);
    }

    /// Spec section 10: the buffer format region of a real 6.18 log
    /// (AG 2's AGF), little-endian host.
    #[test]
    fn real_buf_format_region_decodes() {
        let bytes: [u8; 24] = [
            0x3c, 0x12, 0x02, 0x00, 0x00, 0x28, 0x01, 0x00, 0x01, 0x60, 0x09, 0x00, 0, 0, 0, 0,
            0x01, 0, 0, 0, 0x01, 0, 0, 0,
        ];
        let (f, rest) = XfsBufLogFormat::<LE>::ref_from_prefix(&bytes).unwrap();
        assert_eq!(f.blf_type.get(), XFS_LI_BUF);
        assert_eq!(f.blf_size.get(), 2);
        assert_eq!(
            f.blf_flags.get() >> XFS_BLFT_SHIFT,
            u16::from(XFS_BLFT_AGF_BUF)
        );
        assert_eq!(f.blf_len.get(), 1);
        assert_eq!(f.blf_blkno.get(), 614_401);
        assert_eq!(f.blf_map_size.get(), 1);
        assert_eq!(rest, &[1, 0, 0, 0]);
    }
}
