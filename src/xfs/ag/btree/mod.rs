//! Walks of the per-AG short-form btrees: free space by block (bnobt) and by
//! size (cntbt), inodes (inobt), inode chunks with free inodes (finobt),
//! reverse mappings (rmapbt) and reference counts (refcountbt).
//!
//! One generic walker descends from a root through the child pointers,
//! checking every block on the way: magic (v4 or v5 per tree), level,
//! `numrecs` against what the block can hold, the v5 self-description (CRC,
//! uuid, `bb_blkno`, owner AG), the sibling chain of every level, the order
//! of records and keys, and that each parent key equals its child's lowest
//! key (and, for the overlapping rmapbt, its highest key). Depth is bounded
//! by [`MAX_AG_BTREE_LEVELS`], every block is visited at most once, and a
//! block that cannot be trusted is reported where it is while the rest of
//! the tree is still walked.
//!
//! The walker hands every decoded block to a visitor; [`records`] and
//! [`node_entries`] collect what it sees up to a cap.
//!
//! | file         | holds                                                        | kernel                                  |
//! |--------------|--------------------------------------------------------------|-----------------------------------------|
//! | `mod.rs`     | the trees, their magic numbers, record and key sizes, `maxrecs` | `xfs_btree.h`, `xfs_format.h`        |
//! | `record.rs`  | records and keys as decoded, their order, the rmap owners    | the record parts of `xfs_alloc_btree.c`, `xfs_ialloc_btree.c`, `xfs_rmap_btree.c`, `xfs_refcount_btree.c` |
//! | `block.rs`   | one block: header, v5 self-description, content              | `xfs_btree.c` (the `sblock` verifiers)  |
//! | `walk.rs`    | the walk from the root and the checks across blocks          | `xfs_btree_visit_blocks`, `scrub/btree.c` |

use crate::xfs::format::btree::*;
use serde::Serialize;

mod block;
mod record;
mod walk;

pub use block::{magic_text, parse_block, BlockContent, BlockCtx, BtreeBlock, SblockV5};
pub use record::{
    owner_meaning, owner_name, owner_signed, AllocRec, InobtRec, InodeSlot, Key, KeyOrder,
    NodeEntry, Record, RefcountRec, RmapKey, RmapRec,
};
pub use walk::{node_entries, records, walk, PlacedEntry, TreeRoot, WalkReport};

/// The deepest per-AG btree read. The kernel derives each tree's limit
/// from the geometry; none of them exceeds 9 levels (the historic
/// `XFS_BTREE_MAXLEVELS`) for any AG size the format allows.
pub const MAX_AG_BTREE_LEVELS: u32 = 9;

/// One of the per-AG btrees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgTree {
    /// Free space by starting block (root in the AGF).
    Bno,
    /// Free space by size (root in the AGF).
    Cnt,
    /// Inode chunks (root in the AGI).
    Ino,
    /// Inode chunks with free inodes (root in the AGI, FINOBT).
    Fino,
    /// Reverse mappings: who owns each block (root in the AGF, RMAPBT).
    Rmap,
    /// Reference counts of shared blocks (root in the AGF, REFLINK).
    Refcount,
}

impl AgTree {
    pub const ALL: [AgTree; 6] = [
        AgTree::Bno,
        AgTree::Cnt,
        AgTree::Ino,
        AgTree::Fino,
        AgTree::Rmap,
        AgTree::Refcount,
    ];

    /// Short name: `bno`, `cnt`, `ino`, `fino`, `rmap`, `refcount`.
    pub fn name(self) -> &'static str {
        match self {
            AgTree::Bno => "bno",
            AgTree::Cnt => "cnt",
            AgTree::Ino => "ino",
            AgTree::Fino => "fino",
            AgTree::Rmap => "rmap",
            AgTree::Refcount => "refcount",
        }
    }

    /// The name the kernel and xfs_db use: `bnobt`, `cntbt`, ...
    pub fn btree_name(self) -> &'static str {
        match self {
            AgTree::Bno => "bnobt",
            AgTree::Cnt => "cntbt",
            AgTree::Ino => "inobt",
            AgTree::Fino => "finobt",
            AgTree::Rmap => "rmapbt",
            AgTree::Refcount => "refcountbt",
        }
    }

    /// A one-line meaning.
    pub fn meaning(self) -> &'static str {
        match self {
            AgTree::Bno => "free space extents sorted by starting block",
            AgTree::Cnt => "free space extents sorted by length",
            AgTree::Ino => "inode chunks (64 inodes each) and which inodes are free",
            AgTree::Fino => "inode chunks that have free inodes",
            AgTree::Rmap => "reverse mappings: the owner of every used block",
            AgTree::Refcount => "reference counts of shared and copy-on-write extents",
        }
    }

    fn structure(self) -> &'static str {
        match self {
            AgTree::Bno => "bnobt block",
            AgTree::Cnt => "cntbt block",
            AgTree::Ino => "inobt block",
            AgTree::Fino => "finobt block",
            AgTree::Rmap => "rmapbt block",
            AgTree::Refcount => "refcountbt block",
        }
    }

    /// Accepts the short name, the btree name, and `refcnt`/`refcntbt`.
    pub fn from_name(s: &str) -> Option<AgTree> {
        let s = s.to_ascii_lowercase();
        AgTree::ALL
            .into_iter()
            .find(|t| t.name() == s || t.btree_name() == s)
            .or(match s.as_str() {
                "refcnt" | "refcntbt" => Some(AgTree::Refcount),
                "free" | "by-block" => Some(AgTree::Bno),
                _ => None,
            })
    }

    /// The block magic for a v5 (`crc`) or v4 filesystem; `None` for trees
    /// that only exist on v5.
    pub fn magic(self, v5: bool) -> Option<u32> {
        Some(match (self, v5) {
            (AgTree::Bno, true) => XFS_ABTB_CRC_MAGIC,
            (AgTree::Bno, false) => XFS_ABTB_MAGIC,
            (AgTree::Cnt, true) => XFS_ABTC_CRC_MAGIC,
            (AgTree::Cnt, false) => XFS_ABTC_MAGIC,
            (AgTree::Ino, true) => XFS_IBT_CRC_MAGIC,
            (AgTree::Ino, false) => XFS_IBT_MAGIC,
            (AgTree::Fino, true) => XFS_FIBT_CRC_MAGIC,
            (AgTree::Fino, false) => XFS_FIBT_MAGIC,
            (AgTree::Rmap, true) => XFS_RMAP_CRC_MAGIC,
            (AgTree::Refcount, true) => XFS_REFC_CRC_MAGIC,
            (AgTree::Rmap | AgTree::Refcount, false) => return None,
        })
    }

    /// Bytes of a leaf record.
    pub fn rec_len(self) -> usize {
        match self {
            AgTree::Bno | AgTree::Cnt => size_of::<XfsAllocRec>(),
            AgTree::Ino | AgTree::Fino => size_of::<XfsInobtRecFull>(),
            AgTree::Rmap => size_of::<XfsRmapRec>(),
            AgTree::Refcount => size_of::<XfsRefcountRec>(),
        }
    }

    /// Bytes of a node key slot (low and high key for the rmapbt).
    pub fn key_len(self) -> usize {
        match self {
            AgTree::Bno | AgTree::Cnt => size_of::<XfsAllocRec>(),
            AgTree::Ino | AgTree::Fino => size_of::<XfsInobtKey>(),
            AgTree::Rmap => XFS_RMAP_NODE_KEY_LEN,
            AgTree::Refcount => size_of::<XfsRefcountKey>(),
        }
    }

    /// Whether keys overlap (each node slot has a low and a high key).
    pub fn overlapping(self) -> bool {
        self == AgTree::Rmap
    }
}

/// Header bytes of a short-form block.
pub fn header_len(v5: bool) -> usize {
    if v5 {
        XFS_BTREE_SBLOCK_CRC_LEN
    } else {
        XFS_BTREE_SBLOCK_LEN
    }
}

/// Most records a leaf (`leaf = true`) or most key/pointer pairs a node of
/// `tree` can hold in a block of `blocksize` bytes.
pub fn maxrecs(tree: AgTree, blocksize: u32, v5: bool, leaf: bool) -> usize {
    let room = usize::try_from(blocksize)
        .unwrap_or(0)
        .saturating_sub(header_len(v5));
    let per = if leaf {
        tree.rec_len()
    } else {
        tree.key_len().saturating_add(size_of::<XfsAgPtr>())
    };
    room.checked_div(per).unwrap_or(0)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::panic
)]
mod tests {
    use super::record::decode_rec;
    use super::*;
    use crate::xfs::ag::testing::{fix_crc, fixture_fs, fixture_head};
    use crate::xfs::error::Error;
    use crate::xfs::format::ag::NULLAGBLOCK;
    use crate::xfs::types::{AgBlock, AgNumber, Daddr};

    /// AG 0 of the `v5-1k-rmap` fixture (1 KiB blocks). Its rmapbt is two
    /// levels: root block 9 with leaves 6 and 8 holding 20 and 30 records
    /// (xfs_db `btdump` in tests/fixtures/v5-1k-rmap.agbt.txt).
    const RMAP_ROOT: u32 = 9;
    const RMAP_LEAVES: [u32; 2] = [6, 8];
    const BS: usize = 1024;

    fn rmap_root() -> TreeRoot {
        TreeRoot {
            tree: AgTree::Rmap,
            agno: AgNumber(0),
            root: AgBlock(RMAP_ROOT),
            levels: 2,
            ag_length: 16384,
            first_block: 2,
        }
    }

    fn head() -> Vec<u8> {
        fixture_head("v5-1k-rmap", 256 << 10)
    }

    fn block_mut(img: &mut [u8], agbno: u32) -> &mut [u8] {
        let o = agbno as usize * BS;
        &mut img[o..o + BS]
    }

    fn put16(b: &mut [u8], off: usize, v: u16) {
        b[off..off + 2].copy_from_slice(&v.to_be_bytes());
    }
    fn put32(b: &mut [u8], off: usize, v: u32) {
        b[off..off + 4].copy_from_slice(&v.to_be_bytes());
    }

    fn resum(img: &mut [u8], agbno: u32) {
        fix_crc(block_mut(img, agbno), XFS_BTREE_SBLOCK_CRC_OFF);
    }

    fn walk_all(img: Vec<u8>, root: &TreeRoot) -> (Vec<Record>, WalkReport) {
        let fs = fixture_fs(img);
        records(&fs, root, usize::MAX)
    }

    #[test]
    fn walks_a_two_level_rmapbt_from_a_real_image() {
        let (recs, rep) = walk_all(head(), &rmap_root());
        assert!(rep.problems.is_empty(), "{:?}", rep.problems);
        assert_eq!(rep.blocks, 3);
        assert_eq!(rep.blocks_per_level, vec![2, 1]);
        assert_eq!(rep.records, 50);
        assert_eq!(rep.keys, 2);
        assert_eq!(recs.len(), 50);
        let Record::Rmap(first) = recs[0] else {
            panic!("not an rmap record")
        };
        assert_eq!((first.startblock, first.blockcount), (0, 2));
        assert_eq!(owner_name(first.owner), Some("FS"));
        assert_eq!(owner_signed(first.owner), -3);
    }

    #[test]
    fn node_entries_carry_low_and_high_keys() {
        let fs = fixture_fs(head());
        let (entries, rep) = node_entries(&fs, &rmap_root(), 10);
        assert!(rep.problems.is_empty(), "{:?}", rep.problems);
        assert_eq!(entries.len(), 2);
        let Key::Rmap { low, high } = entries[0].entry.key else {
            panic!("not an rmap key")
        };
        // xfs_db: 1:[0,-3,0,0,0,31,72,1,0,0], ptrs 1:6 2:8
        assert_eq!((low.startblock, owner_signed(low.owner)), (0, -3));
        assert_eq!((high.startblock, high.owner, high.offset), (31, 72, 1));
        assert_eq!(entries[0].entry.ptr, RMAP_LEAVES[0]);
        assert_eq!(entries[1].entry.ptr, RMAP_LEAVES[1]);
    }

    #[test]
    fn a_record_cap_stops_the_walk() {
        let fs = fixture_fs(head());
        let (recs, rep) = records(&fs, &rmap_root(), 5);
        assert_eq!(recs.len(), 5);
        assert!(rep.stopped);
    }

    fn parse_at(img: &[u8], agbno: u32) -> Result<BtreeBlock, Error> {
        let ctx = BlockCtx {
            v5: true,
            sparse_inodes: true,
            blocksize: 1024,
            meta_uuid: img[32..48].try_into().unwrap(),
            agno: AgNumber(0),
        };
        let o = agbno as usize * BS;
        parse_block(
            &img[o..o + BS],
            AgTree::Rmap,
            &ctx,
            AgBlock(agbno),
            Daddr(u64::from(agbno) * 2),
        )
    }

    #[test]
    fn bad_magic_is_a_clear_error() {
        let mut img = head();
        block_mut(&mut img, RMAP_LEAVES[0])[0..4].copy_from_slice(b"JUNK");
        let e = parse_at(&img, RMAP_LEAVES[0]).unwrap_err().to_string();
        assert!(
            e.contains("rmapbt block")
                && e.contains("AG 0 block 6")
                && e.contains("magic 0x4a554e4b (JUNK), expected 0x524d4233 (RMB3)"),
            "{e}"
        );
        let (_, rep) = walk_all(img, &rmap_root());
        assert!(
            rep.problems.iter().any(|p| p.contains("JUNK")),
            "{:?}",
            rep.problems
        );
        // The other leaf is still read.
        assert_eq!(rep.blocks, 2);
        assert_eq!(rep.records, 30);
    }

    #[test]
    fn numrecs_beyond_the_block_is_refused() {
        let mut img = head();
        put16(block_mut(&mut img, RMAP_LEAVES[1]), 6, 500);
        resum(&mut img, RMAP_LEAVES[1]);
        let e = parse_at(&img, RMAP_LEAVES[1]).unwrap_err().to_string();
        assert!(
            e.contains("numrecs 500 but a leaf rmapbt block holds at most 40"),
            "{e}"
        );
        let (_, rep) = walk_all(img, &rmap_root());
        assert_eq!(rep.records, 20);
        assert!(rep.problems.iter().any(|p| p.contains("numrecs 500")));
    }

    #[test]
    fn bad_crc_is_reported_and_the_content_still_decoded() {
        let mut img = head();
        block_mut(&mut img, RMAP_LEAVES[0])[BS - 1] ^= 0xff;
        let b = parse_at(&img, RMAP_LEAVES[0]).unwrap();
        assert_eq!(b.crc_ok, Some(false));
        assert!(b.problems[0].starts_with("CRC stored"), "{:?}", b.problems);
        let (recs, rep) = walk_all(img, &rmap_root());
        assert_eq!(recs.len(), 50);
        assert_eq!(rep.problems.len(), 1, "{:?}", rep.problems);
        assert!(rep.problems[0].contains("rmapbt AG 0 block 6 (level 0): CRC stored"));
    }

    #[test]
    fn wrong_owner_and_blkno_are_reported() {
        let mut img = head();
        put32(block_mut(&mut img, RMAP_LEAVES[0]), 48, 3);
        block_mut(&mut img, RMAP_LEAVES[0])[23] ^= 1;
        resum(&mut img, RMAP_LEAVES[0]);
        let (_, rep) = walk_all(img, &rmap_root());
        let all = rep.problems.join("\n");
        assert!(all.contains("owner AG 3 but found in AG 0"), "{all}");
        assert!(all.contains("blkno 13 but read from daddr 12"), "{all}");
    }

    #[test]
    fn a_sibling_loop_is_reported_and_not_followed() {
        // Leaf 6 names itself as its right sibling; leaf 8 points back to 6.
        let mut img = head();
        put32(block_mut(&mut img, 6), 12, 6);
        resum(&mut img, 6);
        put32(block_mut(&mut img, 8), 12, 6);
        resum(&mut img, 8);
        let (recs, rep) = walk_all(img, &rmap_root());
        assert_eq!(recs.len(), 50);
        let all = rep.problems.join("\n");
        assert!(
            all.contains("block 6 (level 0): a sibling pointer points to the block itself"),
            "{all}"
        );
        assert!(
            all.contains("block 6 (level 0): rightsib is 6 but the next block of its level is 8"),
            "{all}"
        );
        assert!(
            all.contains("block 8 (level 0): last block of its level but rightsib is 6"),
            "{all}"
        );
    }

    #[test]
    fn a_pointer_loop_is_reported_once() {
        // The root's second pointer names the root itself.
        let mut img = head();
        let root = block_mut(&mut img, RMAP_ROOT);
        let max = maxrecs(AgTree::Rmap, 1024, true, false);
        put32(root, 56 + max * 40 + 4, RMAP_ROOT);
        resum(&mut img, RMAP_ROOT);
        let (recs, rep) = walk_all(img, &rmap_root());
        assert_eq!(recs.len(), 20);
        let all = rep.problems.join("\n");
        assert!(
            all.contains("block 9 (level 0): already visited in this tree"),
            "{all}"
        );
    }

    #[test]
    fn a_child_at_the_wrong_level_is_refused() {
        let mut img = head();
        // Leaf 6 (20 records, few enough for a node) claims level 1.
        put16(block_mut(&mut img, 6), 4, 1);
        resum(&mut img, 6);
        let (recs, rep) = walk_all(img, &rmap_root());
        assert!(rep
            .problems
            .iter()
            .any(|p| p.contains("block 6 (level 0): bb_level 1 but expected level 0")));
        assert_eq!(recs.len(), 30);
    }

    #[test]
    fn a_wrong_parent_key_is_reported() {
        let mut img = head();
        // Low key of slot 2: startblock 32 -> 33.
        put32(block_mut(&mut img, RMAP_ROOT), 56 + 40, 33);
        resum(&mut img, RMAP_ROOT);
        let (_, rep) = walk_all(img, &rmap_root());
        assert!(
            rep.problems
                .iter()
                .any(|p| p.contains("key 2 is (33,")
                    && p.contains("its child (block 8) starts at (32,")),
            "{:?}",
            rep.problems
        );
    }

    #[test]
    fn out_of_range_heights_and_pointers_are_not_read() {
        let mut root = rmap_root();
        root.levels = 50;
        let (_, rep) = walk_all(head(), &root);
        assert_eq!(rep.blocks, 0);
        assert!(rep.problems[0].contains("height 50 is not 1 to 9"));
        let mut root = rmap_root();
        root.root = AgBlock(1);
        let (_, rep) = walk_all(head(), &root);
        assert!(rep.problems[0].contains("outside the AG's usable blocks 2..16384"));
        let mut root = rmap_root();
        root.root = AgBlock(NULLAGBLOCK);
        let (_, rep) = walk_all(head(), &root);
        assert!(rep.problems[0].contains("NULLAGBLOCK"));
        // Inside the AG but past the end of this truncated image.
        let mut root = rmap_root();
        root.root = AgBlock(5000);
        let (_, rep) = walk_all(head(), &root);
        assert!(
            rep.problems[0].contains("beyond the end of the image"),
            "{:?}",
            rep.problems
        );
    }

    #[test]
    fn every_byte_flip_of_node_and_leaf_parses_without_panic() {
        let img = head();
        for agbno in [RMAP_ROOT, RMAP_LEAVES[0]] {
            let o = agbno as usize * BS;
            for i in 0..BS {
                for bit in [0x01u8, 0x80, 0xff] {
                    let mut b = img[o..o + BS].to_vec();
                    b[i] ^= bit;
                    for tree in AgTree::ALL {
                        for v5 in [true, false] {
                            let ctx = BlockCtx {
                                v5,
                                sparse_inodes: v5,
                                blocksize: 1024,
                                meta_uuid: [0; 16],
                                agno: AgNumber(0),
                            };
                            if let Ok(blk) = parse_block(&b, tree, &ctx, AgBlock(agbno), Daddr(0)) {
                                if let BlockContent::Leaf(recs) = &blk.content {
                                    for r in recs {
                                        let _ = (r.low(tree), r.high(tree));
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn short_and_v4_only_inputs() {
        let ctx = BlockCtx {
            v5: false,
            sparse_inodes: false,
            blocksize: 1024,
            meta_uuid: [0; 16],
            agno: AgNumber(0),
        };
        assert!(parse_block(&[0u8; 10], AgTree::Bno, &ctx, AgBlock(3), Daddr(6)).is_err());
        let mut b = vec![0u8; 1024];
        b[..4].copy_from_slice(&XFS_RMAP_CRC_MAGIC.to_be_bytes());
        let e = parse_block(&b, AgTree::Rmap, &ctx, AgBlock(3), Daddr(6))
            .unwrap_err()
            .to_string();
        assert!(e.contains("only exists on v5"), "{e}");
    }

    #[test]
    fn sparse_inode_records_decode_holes_and_free_inodes() {
        // startino 128, holemask 0xff00 (inodes 32..63 are a hole), 32
        // inodes present, 30 free (0..29).
        let mut b = [0u8; 16];
        b[0..4].copy_from_slice(&128u32.to_be_bytes());
        b[4..6].copy_from_slice(&0xff00u16.to_be_bytes());
        b[6] = 32;
        b[7] = 30;
        let free = 0xffff_ffff_0000_0000u64 | ((1u64 << 30) - 1);
        b[8..16].copy_from_slice(&free.to_be_bytes());
        let Some(Record::Inobt(r)) = decode_rec(AgTree::Ino, &b, true) else {
            panic!()
        };
        assert_eq!(
            (r.startino, r.holemask, r.count, r.freecount),
            (128, 0xff00, 32, 30)
        );
        assert_eq!(r.present(), 32);
        assert_eq!(r.free_present(), 30);
        assert_eq!(r.slot(0), InodeSlot::Free);
        assert_eq!(r.slot(30), InodeSlot::Used);
        assert_eq!(r.slot(32), InodeSlot::Hole);
        let slots: Vec<_> = r.slots().collect();
        assert_eq!(slots.len(), 64);
        assert_eq!(slots[31], (159, InodeSlot::Used));
        // The same bytes in the full-chunk form: freecount is the u32 at 4.
        let Some(Record::Inobt(f)) = decode_rec(AgTree::Ino, &b, false) else {
            panic!()
        };
        assert_eq!(f.freecount, 0xff00_201e);
        assert_eq!(f.count, 64);
    }

    #[test]
    fn refcount_cow_flag_and_rmap_flags_decode() {
        let mut b = [0u8; 24];
        b[0..4].copy_from_slice(&(XFS_REFC_COWFLAG | 77).to_be_bytes());
        b[4..8].copy_from_slice(&5u32.to_be_bytes());
        b[8..12].copy_from_slice(&1u32.to_be_bytes());
        let Some(Record::Refcount(c)) = decode_rec(AgTree::Refcount, &b, false) else {
            panic!()
        };
        assert_eq!(
            (c.startblock, c.cow, c.blockcount, c.refcount),
            (77, true, 5, 1)
        );
        let off = XFS_RMAP_OFF_ATTR_FORK | XFS_RMAP_OFF_UNWRITTEN | 12345;
        b[8..16].copy_from_slice(&131u64.to_be_bytes());
        b[16..24].copy_from_slice(&off.to_be_bytes());
        let Some(Record::Rmap(m)) = decode_rec(AgTree::Rmap, &b, false) else {
            panic!()
        };
        assert!(m.attr_fork && m.unwritten && !m.bmbt_block);
        assert_eq!((m.owner, m.offset), (131, 12345));
        assert_eq!(owner_name(m.owner), None);
    }

    #[test]
    fn tree_names() {
        for t in AgTree::ALL {
            assert_eq!(AgTree::from_name(t.name()), Some(t));
            assert_eq!(AgTree::from_name(t.btree_name()), Some(t));
        }
        assert_eq!(AgTree::from_name("refcnt"), Some(AgTree::Refcount));
        assert_eq!(AgTree::from_name("nope"), None);
        // maxrecs from the kernel's formulas: 4 KiB v5 bnobt leaf (4096-56)/8.
        assert_eq!(maxrecs(AgTree::Bno, 4096, true, true), 505);
        assert_eq!(maxrecs(AgTree::Bno, 4096, true, false), 336);
        assert_eq!(maxrecs(AgTree::Rmap, 1024, true, false), 22);
        assert_eq!(maxrecs(AgTree::Ino, 512, false, true), 31);
    }
}
