//! The engine on in-memory blocks, for both kinds of tree: an AG-style
//! tree (short pointers, the root in a header slot) and a bmbt-style tree
//! (long pointers, the root in the inode fork). The expected shapes come
//! from the kernel's rules: records per block from the geometry
//! (`(blocksize - header) / record`, nodes `/ (key + pointer)`, the fork's
//! root `(fork - 4) / (key + pointer)`), minrecs half of that, a split
//! moving the upper half (one more when the count is odd and the new entry
//! goes into the lower half), a node key equal to the first key under it.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::cast_possible_truncation,
    clippy::panic
)]

use super::delete::Delete;
use super::insert::Insert;
use super::*;
use crate::xfs::error::{Error, Location};
use std::collections::{BTreeMap, BTreeSet};

/// One tree over blocks in memory.
struct Mem {
    /// bmbt-style: long pointers, root in `inode`.
    bmbt: bool,
    hdr: usize,
    blen: usize,
    rec_len: usize,
    key_len: usize,
    blocks: BTreeMap<u64, Vec<u8>>,
    /// The inode fork holding the root (bmbt-style).
    inode: Vec<u8>,
    /// Root block and levels (AG-style).
    root: (u64, usize),
    next: u64,
    allocated: Vec<u64>,
    freed: Vec<u64>,
    logged: BTreeSet<(u64, usize)>,
}

const FORK: usize = 36;

impl Mem {
    /// AG-style: 16-byte header (v4 short form), 8-byte records
    /// (start, length), 4-byte keys and pointers, 8 entries a block.
    fn ag() -> Mem {
        let mut m = Mem {
            bmbt: false,
            hdr: 16,
            blen: 16 + 8 * 8,
            rec_len: 8,
            key_len: 4,
            blocks: BTreeMap::new(),
            inode: Vec::new(),
            root: (0, 1),
            next: 10,
            allocated: Vec::new(),
            freed: Vec::new(),
            logged: BTreeSet::new(),
        };
        let r = m.alloc_block(0).unwrap().unwrap();
        m.init_block(r, 0, 0).unwrap();
        m.root = (r, 1);
        m
    }

    /// bmbt-style: 72-byte header (v5 long form), 16-byte records (file
    /// offset, then the rest), 8-byte keys and pointers: 4 records or
    /// entries a block; the fork holds (36 - 4) / 16 = 2 root entries.
    /// It starts as the kernel's extents-to-btree conversion leaves it:
    /// the root at level 1 over one leaf.
    fn bmbt(first: u64) -> Mem {
        let mut m = Mem {
            bmbt: true,
            hdr: 72,
            blen: 72 + 4 * 16,
            rec_len: 16,
            key_len: 8,
            blocks: BTreeMap::new(),
            inode: vec![0; FORK],
            root: (IROOT, 0),
            next: 1000,
            allocated: Vec::new(),
            freed: Vec::new(),
            logged: BTreeSet::new(),
        };
        let leaf = m.alloc_block(0).unwrap().unwrap();
        m.init_block(leaf, 0, 1).unwrap();
        m.put_rec(leaf, 1, &brec(first)).unwrap();
        m.set_level(IROOT, 1).unwrap();
        m.set_numrecs(IROOT, 1).unwrap();
        m.put_key(IROOT, 1, &first.to_be_bytes()).unwrap();
        m.put_ptr(IROOT, 1, leaf).unwrap();
        m
    }
}

fn arec(start: u32) -> Vec<u8> {
    let mut r = start.to_be_bytes().to_vec();
    r.extend_from_slice(&1u32.to_be_bytes());
    r
}

fn brec(off: u64) -> Vec<u8> {
    let mut r = off.to_be_bytes().to_vec();
    r.extend_from_slice(&(off * 3).to_be_bytes());
    r
}

impl BtreeOps for Mem {
    fn name(&self) -> &'static str {
        if self.bmbt {
            "bmbt"
        } else {
            "bnobt"
        }
    }
    fn what(&self) -> String {
        self.name().into()
    }
    fn rec_len(&self) -> usize {
        self.rec_len
    }
    fn key_len(&self) -> usize {
        self.key_len
    }
    fn long_ptrs(&self) -> bool {
        self.bmbt
    }
    fn hdr_len(&self) -> usize {
        self.hdr
    }
    fn block_len(&self) -> usize {
        self.blen
    }
    fn rec_key(&self, rec: &[u8]) -> Key {
        self.key_order(rec)
    }
    fn key_order(&self, k: &[u8]) -> Key {
        if self.bmbt {
            (be64(k, 0).unwrap_or(0), 0, 0)
        } else {
            (u64::from(be32(k, 0).unwrap_or(0)), 0, 0)
        }
    }
    fn rec_low_key(&self, rec: &[u8]) -> Vec<u8> {
        rec[..self.key_len].to_vec()
    }
    fn root(&mut self) -> EditResult<(u64, usize)> {
        if self.bmbt {
            Ok((IROOT, self.level_of(IROOT) + 1))
        } else {
            Ok(self.root)
        }
    }
    fn set_root(&mut self, ptr: u64, inc: i64) -> EditResult<()> {
        assert!(!self.bmbt, "a root in the inode changes in place");
        let levels = i64::try_from(self.root.1).unwrap() + inc;
        self.root = (ptr, usize::try_from(levels).unwrap());
        Ok(())
    }
    fn iroot(&self) -> Option<(usize, usize)> {
        self.bmbt.then_some((0, (FORK - 4) / 16))
    }
    fn load(&mut self, bno: u64, level: Option<usize>) -> EditResult<()> {
        if !self.blocks.contains_key(&bno) && bno != IROOT {
            return Err(self.damaged(Some(bno), "no such block".into()));
        }
        if let Some(l) = level {
            assert_eq!(self.level_of(bno), l, "block {bno} at the wrong level");
        }
        Ok(())
    }
    fn block(&self, bno: u64) -> &[u8] {
        if bno == IROOT {
            return &self.inode;
        }
        self.blocks.get(&bno).map(|b| b.as_slice()).unwrap_or(&[])
    }
    fn block_mut(&mut self, bno: u64) -> Option<&mut [u8]> {
        if bno == IROOT {
            return Some(&mut self.inode);
        }
        self.blocks.get_mut(&bno).map(|b| b.as_mut_slice())
    }
    fn logged(&mut self, bno: u64, off: usize, len: usize) {
        for c in crate::xfs::replay::ckpt::chunks_of(off, len) {
            self.logged.insert((bno, c));
        }
    }
    fn init_block(&mut self, bno: u64, level: usize, numrecs: usize) -> EditResult<()> {
        let mut b = vec![0u8; self.blen];
        b[4..6].copy_from_slice(&(level as u16).to_be_bytes());
        b[6..8].copy_from_slice(&(numrecs as u16).to_be_bytes());
        if self.bmbt {
            b[8..24].fill(0xff);
        } else {
            b[8..16].fill(0xff);
        }
        self.blocks.insert(bno, b);
        self.logged(bno, 0, self.hdr);
        Ok(())
    }
    fn alloc_block(&mut self, _hint: u64) -> EditResult<Option<u64>> {
        let b = self.next;
        self.next += 1;
        self.allocated.push(b);
        Ok(Some(b))
    }
    fn free_block(&mut self, bno: u64) -> EditResult<()> {
        assert!(
            self.blocks.remove(&bno).is_some(),
            "block {bno} freed twice"
        );
        self.freed.push(bno);
        Ok(())
    }
    fn damaged(&self, bno: Option<u64>, msg: String) -> EditError {
        EditError::Read(Error::corrupt(
            "test btree",
            Location::Daddr {
                daddr: bno.unwrap_or(0),
            },
            msg,
        ))
    }
}

fn insert(m: &mut Mem, rec: &[u8]) {
    let k = m.rec_key(rec);
    let (cur, found) = m.lookup(Lookup::Eq, k).unwrap();
    assert!(!found, "{k:?} already there");
    m.insert_at(cur, rec).unwrap();
}

fn delete(m: &mut Mem, k: Key) {
    let (mut cur, found) = m.lookup(Lookup::Eq, k).unwrap();
    assert!(found, "{k:?} not there");
    assert!(m.delete_at(&mut cur).unwrap());
}

/// The first key under block `bno` (of its leftmost record).
fn first_key(m: &Mem, bno: u64) -> Key {
    if m.level_of(bno) == 0 {
        m.rec_key(&m.rec_at(bno, 1))
    } else {
        first_key(m, m.ptr_at(bno, 1))
    }
}

/// Every rule of a well-formed tree, checked from the root: levels count
/// down by one, each node key is the first key of its child, keys and
/// records ascend, no block holds more than it can or (below the root)
/// less than half of that (a lone block under the root aside), and each level's blocks are chained by their
/// sibling pointers in the order the parents list them. Returns the
/// blocks per level (leaves first) and the records in order.
fn check(m: &mut Mem) -> (Vec<Vec<u64>>, Vec<Key>) {
    let (root, nlevels) = m.root().unwrap();
    assert_eq!(m.level_of(root), nlevels - 1, "root level");
    let mut levels = vec![vec![]; nlevels];
    levels[nlevels - 1].push(root);
    for level in (0..nlevels).rev() {
        let blocks = levels[level].clone();
        for (i, &b) in blocks.iter().enumerate() {
            let n = m.numrecs(b);
            assert_eq!(m.level_of(b), level, "block {b}");
            assert!(n <= m.block_maxrecs(b, level), "block {b}: {n} entries");
            if blocks.len() > 1 {
                assert!(n >= m.minrecs(level), "block {b}: {n} entries");
            }
            if b != root {
                let left = if i == 0 { NO_PTR } else { blocks[i - 1] };
                let right = blocks.get(i + 1).copied().unwrap_or(NO_PTR);
                assert_eq!(m.sib(b, false), left, "left sibling of {b}");
                assert_eq!(m.sib(b, true), right, "right sibling of {b}");
            }
            for j in 1..=n {
                if level > 0 {
                    let child = m.ptr_at(b, j);
                    assert_eq!(
                        m.key_order(&m.key_at(b, j)),
                        first_key(m, child),
                        "key {j} of block {b}"
                    );
                    levels[level - 1].push(child);
                }
            }
        }
    }
    let mut recs = Vec::new();
    for &b in &levels[0] {
        for j in 1..=m.numrecs(b) {
            recs.push(m.rec_key(&m.rec_at(b, j)));
        }
    }
    assert!(recs.windows(2).all(|w| w[0] < w[1]), "records in order");
    (levels, recs)
}

#[test]
fn geometry_follows_the_kernel_formulas() {
    let ag = Mem::ag();
    assert_eq!((ag.maxrecs(0), ag.maxrecs(1), ag.minrecs(0)), (8, 8, 4));
    let bm = Mem::bmbt(0);
    assert_eq!((bm.maxrecs(0), bm.maxrecs(1)), (4, 4));
    assert_eq!(bm.block_maxrecs(IROOT, 1), 2);
    // Node pointers follow maxrecs keys; the fork's follow dmaxrecs keys.
    assert_eq!(ag.ptr_off(10, 1), 16 + 8 * 4);
    assert_eq!(bm.ptr_off(1000, 2), 72 + 4 * 8 + 8);
    assert_eq!(bm.ptr_off(IROOT, 1), 4 + 2 * 8);
}

#[test]
fn ag_tree_splits_grows_a_root_and_finds_records() {
    let mut m = Mem::ag();
    for s in 1..=8u32 {
        insert(&mut m, &arec(s * 10));
    }
    assert_eq!(m.root.1, 1, "eight records fit the root leaf");
    // The ninth goes last: the full leaf splits (4 stay, 4 move; even
    // count), the record joins the right half, and a new root takes
    // both halves' first keys.
    insert(&mut m, &arec(90));
    let (levels, recs) = check(&mut m);
    assert_eq!(m.root.1, 2);
    let [l, r] = levels[0][..] else {
        panic!("{levels:?}")
    };
    assert_eq!((m.numrecs(l), m.numrecs(r)), (4, 5));
    assert_eq!(m.key_order(&m.key_at(m.root.0, 2)), (50, 0, 0));
    assert_eq!(recs.len(), 9);
    assert_eq!(
        m.allocated.len(),
        3,
        "the first root, the new leaf, the new root"
    );

    // Lookups: exact, the last <= and the first >= a missing key, and a
    // miss before the first record.
    let (cur, ok) = m.lookup(Lookup::Eq, (50, 0, 0)).unwrap();
    assert!(ok);
    assert_eq!(m.get_rec(&cur).unwrap(), arec(50));
    assert_eq!(cur.leaf().0, r);
    let (cur, ok) = m.lookup(Lookup::Le, (45, 0, 0)).unwrap();
    assert!(ok);
    assert_eq!(m.get_rec(&cur).unwrap(), arec(40));
    let (mut cur, ok) = m.lookup(Lookup::Ge, (45, 0, 0)).unwrap();
    assert!(ok);
    assert_eq!(m.get_rec(&cur).unwrap(), arec(50));
    assert!(m.decrement_level(&mut cur, 0).unwrap());
    assert_eq!(m.get_rec(&cur).unwrap(), arec(40), "back across the leaves");
    let (_, ok) = m.lookup(Lookup::Le, (5, 0, 0)).unwrap();
    assert!(!ok);
    let (_, ok) = m.lookup(Lookup::Eq, (45, 0, 0)).unwrap();
    assert!(!ok);

    // Many more: three levels, every rule holding after each insert.
    for s in 10..=200u32 {
        insert(&mut m, &arec(s * 10));
        check(&mut m);
    }
    assert_eq!(m.root.1, 3);
    let (_, recs) = check(&mut m);
    assert_eq!(recs.len(), 200);
}

#[test]
fn ag_tree_split_puts_the_new_record_in_the_half_of_its_place() {
    // A full leaf of 8 (an even count) splits 4 and 4; a record whose
    // place is in the lower half goes there (5 and 4), and the new leaf's
    // key is its first record's.
    let mut m = Mem::ag();
    for s in 1..=8u32 {
        insert(&mut m, &arec(s * 10));
    }
    insert(&mut m, &arec(15));
    let (levels, _) = check(&mut m);
    let [l, r] = levels[0][..] else {
        panic!("{levels:?}")
    };
    assert_eq!((m.numrecs(l), m.numrecs(r)), (5, 4));
    assert_eq!(m.key_order(&m.key_at(m.root.0, 2)), (50, 0, 0));
}

#[test]
fn ag_tree_delete_borrows_joins_and_kills_the_root() {
    let mut m = Mem::ag();
    for s in 1..=9u32 {
        insert(&mut m, &arec(s * 10));
    }
    let (levels, _) = check(&mut m);
    let [l, r] = levels[0][..] else {
        panic!("{levels:?}")
    };
    // Left 4 (10..40), right 5 (50..90). Two deletes on the right leave
    // it 3, under minrecs 4; the left cannot spare one (4 - 1 < 4), so
    // the right joins the left, is freed, and the root left with one
    // child gives way to it.
    delete(&mut m, (60, 0, 0));
    assert_eq!(m.root.1, 2);
    delete(&mut m, (70, 0, 0));
    let (levels, recs) = check(&mut m);
    assert_eq!(m.root, (l, 1), "the surviving leaf is the root");
    assert_eq!(levels, vec![vec![l]]);
    assert_eq!(recs.len(), 7);
    assert!(m.freed.contains(&r));
    assert_eq!(m.freed.len(), 2, "the joined leaf and the old root");

    // A borrow: with 4 | 6 after a split, deleting from the left takes
    // the right's first record (6 - 1 >= 4).
    let mut m = Mem::ag();
    for s in 1..=11u32 {
        insert(&mut m, &arec(s * 10));
    }
    let (levels, _) = check(&mut m);
    let [l, r] = levels[0][..] else {
        panic!("{levels:?}")
    };
    assert_eq!((m.numrecs(l), m.numrecs(r)), (4, 7));
    delete(&mut m, (10, 0, 0));
    let (levels2, _) = check(&mut m);
    assert_eq!(levels2, levels, "no block freed");
    assert_eq!((m.numrecs(l), m.numrecs(r)), (4, 6));
    assert_eq!(m.key_order(&m.key_at(m.root.0, 2)), (60, 0, 0));
    assert!(m.freed.is_empty());

    // Everything out again in a scattered order: the tree shrinks back
    // to one leaf, every block but that one freed.
    let mut m = Mem::ag();
    for s in 1..=200u32 {
        insert(&mut m, &arec(s * 10));
    }
    let mut order: Vec<u32> = (1..=200).collect();
    order.sort_by_key(|s| (s * 37) % 200);
    for s in order {
        delete(&mut m, (u64::from(s) * 10, 0, 0));
        check(&mut m);
    }
    assert_eq!(m.root.1, 1);
    assert_eq!(m.numrecs(m.root.0), 0);
    assert_eq!(m.allocated.len() - m.freed.len(), 1);
}

#[test]
fn bmbt_root_moves_into_a_block_and_back_into_the_inode() {
    let mut m = Mem::bmbt(0);
    for o in 1..=3u64 {
        insert(&mut m, &brec(o * 10));
    }
    let (levels, _) = check(&mut m);
    assert_eq!(levels.len(), 2, "the root in the inode over one full leaf");
    // The fifth record splits the leaf (2 stay, 2 move, the record goes
    // right); the root in the inode takes the new leaf's key and pointer.
    insert(&mut m, &brec(40));
    let (levels, _) = check(&mut m);
    assert_eq!(levels[0].len(), 2);
    assert_eq!(m.numrecs(IROOT), 2);
    assert_eq!(m.level_of(IROOT), 1);
    assert!(
        m.logged.iter().any(|(b, _)| *b == IROOT),
        "the root is logged"
    );

    // Keep adding at the end until a leaf under the full root (2 of 2)
    // splits: the root's entries move into a new node block, which takes
    // the new leaf's entry too; the root keeps one entry, a level up.
    let mut o = 50;
    while m.level_of(IROOT) == 1 {
        insert(&mut m, &brec(o));
        o += 10;
        check(&mut m);
    }
    let (levels, recs) = check(&mut m);
    assert_eq!(levels.len(), 3);
    assert_eq!(m.numrecs(IROOT), 1);
    let node = m.ptr_at(IROOT, 1);
    assert_eq!(levels[1], vec![node]);
    assert_eq!(m.numrecs(node), 3, "two from the root and the new leaf's");
    assert_eq!(m.key_order(&m.key_at(IROOT, 1)), (0, 0, 0));
    assert_eq!(m.sib(node, false), NO_PTR);
    assert_eq!(m.sib(node, true), NO_PTR);

    // Delete from the right end: leaves join, the node loses entries, and
    // once the node (the root's only child, no siblings) holds no more
    // than the fork's 2 entries, they move back into the inode and the
    // node is freed.
    let mut keys = recs.clone();
    while m.level_of(IROOT) == 2 {
        let k = keys.pop().unwrap();
        delete(&mut m, k);
        check(&mut m);
    }
    let (levels, _) = check(&mut m);
    assert_eq!(levels.len(), 2);
    assert!(m.freed.contains(&node), "the node block is freed");
    assert!(!m.blocks.contains_key(&node));
    assert!(m.numrecs(IROOT) <= 2);

    // Lookups go through the root in the inode.
    let k = keys[1];
    let (cur, ok) = m.lookup(Lookup::Eq, k).unwrap();
    assert!(ok);
    assert_eq!(m.rec_key(&m.get_rec(&cur).unwrap()), k);
    assert_eq!(cur.at(cur.nlevels() - 1).bno, IROOT);
}

#[test]
fn bmbt_grows_and_shrinks_through_random_edits() {
    let mut m = Mem::bmbt(5000);
    let mut x = 0x2545_f491u64;
    let mut present = BTreeSet::from([5000u64]);
    for _ in 0..600 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let o = x % 400;
        if present.len() > 1 && x % 3 == 0 {
            let k = *present
                .iter()
                .nth((x as usize / 7) % present.len())
                .unwrap();
            delete(&mut m, (k, 0, 0));
            present.remove(&k);
        } else if present.insert(o) {
            insert(&mut m, &brec(o));
        }
        let (_, recs) = check(&mut m);
        assert_eq!(recs, present.iter().map(|&k| (k, 0, 0)).collect::<Vec<_>>());
    }
    assert_eq!(
        m.allocated.len() - m.freed.len(),
        m.blocks.len(),
        "every block in the tree was allocated and not freed"
    );
}
