//! One short-form btree block: its header, the v5 self-description and its
//! records or keys and pointers (kernel: `xfs_btree.c`, the `sblock`
//! verifiers).

use serde::Serialize;
use zerocopy::FromBytes;

use super::record::{decode_key, decode_rec, NodeEntry, Record};
use super::{header_len, maxrecs, AgTree, MAX_AG_BTREE_LEVELS};
use crate::xfs::error::{Error, Location};
use crate::xfs::format::btree::*;
use crate::xfs::fs::{verify_v5, Fs, Owner, V5Check};
use crate::xfs::read::ReadAt;
use crate::xfs::types::{AgBlock, AgNumber, Daddr};

/// What a block holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockContent {
    Leaf(Vec<Record>),
    Node(Vec<NodeEntry>),
}

/// The v5 part of a short-form header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SblockV5 {
    pub blkno: u64,
    pub lsn: u64,
    pub uuid: [u8; 16],
    pub owner: u32,
    pub crc: u32,
}

/// One decoded btree block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BtreeBlock {
    pub tree: AgTree,
    pub agno: AgNumber,
    pub agbno: AgBlock,
    pub daddr: Daddr,
    pub magic: u32,
    pub level: u16,
    pub numrecs: u16,
    pub leftsib: u32,
    pub rightsib: u32,
    pub v5: Option<SblockV5>,
    /// v5 only: whether the CRC matched.
    pub crc_ok: Option<bool>,
    /// What the v5 self-description check found wrong (the content is
    /// still decoded).
    pub problems: Vec<String>,
    pub content: BlockContent,
}

/// What decoding a block needs to know about the filesystem.
#[derive(Clone, Copy, Debug)]
pub struct BlockCtx {
    pub v5: bool,
    /// SPINODES: inobt records are in the sparse form.
    pub sparse_inodes: bool,
    pub blocksize: u32,
    pub meta_uuid: [u8; 16],
    pub agno: AgNumber,
}

impl BlockCtx {
    pub fn new<R: ReadAt>(fs: &Fs<R>, agno: AgNumber) -> Self {
        BlockCtx {
            v5: fs.geo.v5,
            sparse_inodes: fs.geo.v5 && fs.sb.features_incompat & (1 << 1) != 0,
            blocksize: fs.geo.blocksize,
            meta_uuid: fs.meta_uuid(),
            agno,
        }
    }
}

/// A magic number with its four characters.
pub fn magic_text(m: u32) -> String {
    let chars: String = m
        .to_be_bytes()
        .iter()
        .map(|b| {
            if b.is_ascii_graphic() {
                char::from(*b)
            } else {
                '.'
            }
        })
        .collect();
    format!("{m:#010x} ({chars})")
}

fn loc_at(daddr: Daddr, byte: usize) -> Location {
    Location::InStructure {
        daddr: daddr.0,
        byte: u64::try_from(byte).unwrap_or(u64::MAX),
    }
}

/// Decode one block of `tree` read from AG block `agbno` at `daddr`.
///
/// Fails when the block cannot be read as this tree (wrong magic, `numrecs`
/// larger than the block holds, too short). A failed v5 self-description
/// (CRC, uuid, `bb_blkno`, owner) does not fail: it is listed in
/// [`BtreeBlock::problems`] and the content is still decoded.
pub fn parse_block(
    bytes: &[u8],
    tree: AgTree,
    ctx: &BlockCtx,
    agbno: AgBlock,
    daddr: Daddr,
) -> Result<BtreeBlock, Error> {
    let structure = tree.structure();
    let here = format!("AG {} block {}", ctx.agno.0, agbno.0);
    let hdr_len = header_len(ctx.v5);
    let bs = usize::try_from(ctx.blocksize).unwrap_or(usize::MAX);
    if bytes.len() < hdr_len || bytes.len() < bs {
        return Err(Error::corrupt(
            structure,
            Location::Daddr { daddr: daddr.0 },
            format!(
                "{here}: {} bytes, shorter than a {bs}-byte block",
                bytes.len()
            ),
        ));
    }
    let block = bytes.get(..bs).unwrap_or(bytes);
    let Ok((h, _)) = XfsBtreeSblock::ref_from_prefix(
        block
            .get(..XFS_BTREE_SBLOCK_CRC_LEN)
            .unwrap_or(&[0u8; XFS_BTREE_SBLOCK_CRC_LEN]),
    ) else {
        return Err(Error::corrupt(
            structure,
            Location::Daddr { daddr: daddr.0 },
            "header unreadable",
        ));
    };
    let magic = h.bb_magic.get();
    let want = tree.magic(ctx.v5);
    if want != Some(magic) {
        let expected = match want {
            Some(w) => format!("expected {}", magic_text(w)),
            None => format!("a {} only exists on v5 filesystems", tree.btree_name()),
        };
        return Err(Error::corrupt(
            structure,
            loc_at(daddr, 0),
            format!("{here}: magic {}, {expected}", magic_text(magic)),
        ));
    }
    let level = h.bb_level.get();
    let numrecs = h.bb_numrecs.get();
    if u32::from(level) >= MAX_AG_BTREE_LEVELS {
        return Err(Error::corrupt(
            structure,
            loc_at(daddr, 4),
            format!("{here}: level {level} is beyond the deepest possible ({MAX_AG_BTREE_LEVELS} levels)"),
        ));
    }
    let leaf = level == 0;
    let max = maxrecs(tree, ctx.blocksize, ctx.v5, leaf);
    if usize::from(numrecs) > max {
        return Err(Error::corrupt(
            structure,
            loc_at(daddr, 6),
            format!(
                "{here}: numrecs {numrecs} but a {} {} block holds at most {max}",
                if leaf { "leaf" } else { "node" },
                tree.btree_name()
            ),
        ));
    }
    let mut problems = Vec::new();
    let (v5, crc_ok) = if ctx.v5 {
        let check = V5Check {
            structure,
            daddr,
            crc_off: XFS_BTREE_SBLOCK_CRC_OFF,
            uuid: &ctx.meta_uuid,
            uuid_off: XFS_BTREE_SBLOCK_UUID_OFF,
            blkno_off: Some(XFS_BTREE_SBLOCK_BLKNO_OFF),
            owner: Some((XFS_BTREE_SBLOCK_OWNER_OFF, Owner::Ag(ctx.agno.0))),
        };
        let v = verify_v5(block, &check);
        problems.extend(v.problems);
        (
            Some(SblockV5 {
                blkno: h.bb_blkno.get(),
                lsn: h.bb_lsn.get(),
                uuid: h.bb_uuid,
                owner: h.bb_owner.get(),
                crc: h.bb_crc.get(),
            }),
            Some(v.crc_ok),
        )
    } else {
        (None, None)
    };
    let n = usize::from(numrecs);
    let short = || {
        Error::corrupt(
            structure,
            Location::Daddr { daddr: daddr.0 },
            format!("{here}: record area runs past the block"),
        )
    };
    let content = if leaf {
        let len = tree.rec_len();
        let mut recs = Vec::with_capacity(n);
        for i in 0..n {
            let off = i
                .checked_mul(len)
                .and_then(|o| o.checked_add(hdr_len))
                .ok_or_else(short)?;
            let b = block.get(off..).ok_or_else(short)?;
            recs.push(decode_rec(tree, b, ctx.sparse_inodes).ok_or_else(short)?);
        }
        BlockContent::Leaf(recs)
    } else {
        let klen = tree.key_len();
        let ptrs_at = max
            .checked_mul(klen)
            .and_then(|o| o.checked_add(hdr_len))
            .ok_or_else(short)?;
        let mut entries = Vec::with_capacity(n);
        for i in 0..n {
            let koff = i
                .checked_mul(klen)
                .and_then(|o| o.checked_add(hdr_len))
                .ok_or_else(short)?;
            let poff = i
                .checked_mul(size_of::<XfsAgPtr>())
                .and_then(|o| o.checked_add(ptrs_at))
                .ok_or_else(short)?;
            let key = decode_key(tree, block.get(koff..).ok_or_else(short)?).ok_or_else(short)?;
            let ptr = XfsAgPtr::read_from_prefix(block.get(poff..).ok_or_else(short)?)
                .map_err(|_| short())?
                .0
                .get();
            entries.push(NodeEntry { key, ptr });
        }
        BlockContent::Node(entries)
    };
    Ok(BtreeBlock {
        tree,
        agno: ctx.agno,
        agbno,
        daddr,
        magic,
        level,
        numrecs,
        leftsib: h.bb_leftsib.get(),
        rightsib: h.bb_rightsib.get(),
        v5,
        crc_ok,
        problems,
        content,
    })
}
