//! Walking a tree from its root: every block checked on the way, the
//! sibling chains, record and key order, parent keys against their
//! children (kernel: `xfs_btree_visit_blocks` in `xfs_btree.c`, and the
//! checks of `scrub/btree.c`).

use std::collections::HashSet;
use std::ops::ControlFlow;

use serde::Serialize;

use super::block::{parse_block, BlockContent, BlockCtx, BtreeBlock};
use super::record::{non_inode_owner, owner_name, owner_signed, KeyOrder, NodeEntry, Record};
use super::{AgTree, MAX_AG_BTREE_LEVELS};
use crate::xfs::format::ag::NULLAGBLOCK;
use crate::xfs::format::btree::*;
use crate::xfs::fs::Fs;
use crate::xfs::read::ReadAt;
use crate::xfs::types::{AgBlock, AgNumber};

/// Where a tree starts, taken from the AGF or AGI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TreeRoot {
    pub tree: AgTree,
    pub agno: AgNumber,
    pub root: AgBlock,
    /// The height the header claims (1 = the root is a leaf).
    pub levels: u32,
    /// Blocks in the AG (`agf_length` / `agi_length`, checked against the
    /// geometry by the header parser).
    pub ag_length: u32,
    /// The first AG block after the AG headers; no btree block may lie below.
    pub first_block: u32,
}

/// What a walk found, besides what it handed to the visitor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WalkReport {
    pub tree: AgTree,
    pub agno: AgNumber,
    pub root: AgBlock,
    pub levels: u32,
    /// Blocks read and decoded.
    pub blocks: u64,
    /// Decoded blocks per level (index = level, 0 = leaves).
    pub blocks_per_level: Vec<u64>,
    /// Leaf records seen.
    pub records: u64,
    /// Node keys seen.
    pub keys: u64,
    /// Everything found wrong, in walk order.
    pub problems: Vec<String>,
    /// The visitor stopped the walk before the end.
    pub stopped: bool,
}

#[derive(Clone, Copy, Debug)]
enum Cursor {
    /// No block seen yet at this level.
    Start,
    /// The last block seen at this level.
    After { agbno: u32, rightsib: u32 },
    /// A subtree was skipped: the sibling chain cannot be checked here.
    Unknown,
}

struct Walker<'a, R: ReadAt> {
    fs: &'a Fs<R>,
    root: TreeRoot,
    ctx: BlockCtx,
    visited: HashSet<u32>,
    cursors: Vec<Cursor>,
    last_rec: Option<(KeyOrder, Record)>,
    report: WalkReport,
    visit: &'a mut dyn FnMut(&BtreeBlock) -> ControlFlow<()>,
}

impl<R: ReadAt> Walker<'_, R> {
    fn problem(&mut self, agbno: u32, level: u32, what: String) {
        self.report.problems.push(format!(
            "{} AG {} block {agbno} (level {level}): {what}",
            self.root.tree.btree_name(),
            self.root.agno.0
        ));
    }

    fn lose_levels_up_to(&mut self, level: u32) {
        for (l, c) in self.cursors.iter_mut().enumerate() {
            if u32::try_from(l).is_ok_and(|l| l <= level) {
                *c = Cursor::Unknown;
            }
        }
    }

    /// Visit the block `agbno`, expected at `level`. Returns the lowest and
    /// highest keys of its subtree, when it could be read.
    fn block(&mut self, agbno: u32, level: u32) -> Option<(Option<KeyOrder>, Option<KeyOrder>)> {
        if self.report.stopped {
            return None;
        }
        if agbno == NULLAGBLOCK || agbno < self.root.first_block || agbno >= self.root.ag_length {
            let why = if agbno == NULLAGBLOCK {
                "pointer is NULLAGBLOCK".to_string()
            } else {
                format!(
                    "block number outside the AG's usable blocks {}..{}",
                    self.root.first_block, self.root.ag_length
                )
            };
            self.problem(agbno, level, why);
            self.lose_levels_up_to(level);
            return None;
        }
        if !self.visited.insert(agbno) {
            self.problem(
                agbno,
                level,
                "already visited in this tree (a loop or a shared block)".into(),
            );
            self.lose_levels_up_to(level);
            return None;
        }
        let structure = self.root.tree.structure();
        let Some(daddr) = self.fs.geo.agb_to_daddr(self.root.agno, AgBlock(agbno)) else {
            self.problem(agbno, level, "lies outside the filesystem".into());
            self.lose_levels_up_to(level);
            return None;
        };
        let bytes = match self
            .fs
            .read_agblock(structure, self.root.agno, AgBlock(agbno))
        {
            Ok(b) => b,
            Err(e) => {
                self.problem(agbno, level, e.to_string());
                self.lose_levels_up_to(level);
                return None;
            }
        };
        let block = match parse_block(&bytes, self.root.tree, &self.ctx, AgBlock(agbno), daddr) {
            Ok(b) => b,
            Err(e) => {
                self.report.problems.push(e.to_string());
                self.lose_levels_up_to(level);
                return None;
            }
        };
        if u32::from(block.level) != level {
            self.problem(
                agbno,
                level,
                format!("bb_level {} but expected level {level}", block.level),
            );
            self.lose_levels_up_to(level);
            return None;
        }
        for p in block.problems.clone() {
            self.problem(agbno, level, p);
        }
        self.check_siblings(&block, level);
        self.report.blocks = self.report.blocks.saturating_add(1);
        if let Some(c) = usize::try_from(level)
            .ok()
            .and_then(|l| self.report.blocks_per_level.get_mut(l))
        {
            *c = c.saturating_add(1);
        }
        let is_root = agbno == self.root.root.0;
        if block.numrecs == 0 && !(is_root && level == 0) {
            self.problem(
                agbno,
                level,
                "numrecs is 0 in a block that is not an empty root leaf".into(),
            );
        }
        if (self.visit)(&block).is_break() {
            self.report.stopped = true;
        }
        let tree = self.root.tree;
        match &block.content {
            BlockContent::Leaf(recs) => {
                self.report.records = self
                    .report
                    .records
                    .saturating_add(u64::try_from(recs.len()).unwrap_or(u64::MAX));
                let mut low = None;
                let mut high: Option<KeyOrder> = None;
                for (i, r) in recs.iter().enumerate() {
                    self.check_record(agbno, i, r);
                    if low.is_none() {
                        low = Some(r.low(tree));
                    }
                    let h = r.high(tree);
                    high = Some(high.map_or(h, |x| x.max(h)));
                }
                Some((low, high))
            }
            BlockContent::Node(entries) => {
                self.report.keys = self
                    .report
                    .keys
                    .saturating_add(u64::try_from(entries.len()).unwrap_or(u64::MAX));
                let mut prev: Option<KeyOrder> = None;
                for (i, e) in entries.iter().enumerate() {
                    let k = e.key.low(tree);
                    if let Some(p) = prev {
                        let bad = if tree.overlapping() { k < p } else { k <= p };
                        if bad {
                            self.problem(
                                agbno,
                                level,
                                format!(
                                    "key {} is out of order after key {i}",
                                    i.saturating_add(1)
                                ),
                            );
                        }
                    }
                    prev = Some(k);
                }
                let child_level = level.saturating_sub(1);
                let mut low = None;
                let mut high: Option<KeyOrder> = None;
                for (i, e) in entries.iter().enumerate() {
                    let got = self.block(e.ptr, child_level);
                    if let Some((child_low, child_high)) = got {
                        if let Some(cl) = child_low {
                            if cl != e.key.low(tree) {
                                self.problem(
                                    agbno,
                                    level,
                                    format!(
                                        "key {} is {:?} but its child (block {}) starts at {:?}",
                                        i.saturating_add(1),
                                        e.key.low(tree),
                                        e.ptr,
                                        cl
                                    ),
                                );
                            }
                        }
                        if tree.overlapping() {
                            if let Some(ch) = child_high {
                                if ch != e.key.high(tree) {
                                    self.problem(
                                        agbno,
                                        level,
                                        format!(
                                            "high key {} is {:?} but its child (block {}) ends at {:?}",
                                            i.saturating_add(1),
                                            e.key.high(tree),
                                            e.ptr,
                                            ch
                                        ),
                                    );
                                }
                            }
                        }
                    }
                    if low.is_none() {
                        low = Some(e.key.low(tree));
                    }
                    let h = e.key.high(tree);
                    high = Some(high.map_or(h, |x| x.max(h)));
                    if self.report.stopped {
                        break;
                    }
                }
                Some((low, high))
            }
        }
    }

    fn check_siblings(&mut self, block: &BtreeBlock, level: u32) {
        let agbno = block.agbno.0;
        let Some(slot) = usize::try_from(level)
            .ok()
            .and_then(|l| self.cursors.get(l).copied())
        else {
            return;
        };
        match slot {
            Cursor::Start => {
                if block.leftsib != NULLAGBLOCK {
                    self.problem(
                        agbno,
                        level,
                        format!("first block of its level but leftsib is {}", block.leftsib),
                    );
                }
            }
            Cursor::After {
                agbno: prev,
                rightsib,
            } => {
                if rightsib != agbno {
                    self.problem(
                        prev,
                        level,
                        format!(
                            "rightsib is {} but the next block of its level is {agbno}",
                            sib(rightsib)
                        ),
                    );
                }
                if block.leftsib != prev {
                    self.problem(
                        agbno,
                        level,
                        format!(
                            "leftsib is {} but the previous block of its level is {prev}",
                            sib(block.leftsib)
                        ),
                    );
                }
            }
            Cursor::Unknown => {}
        }
        if block.leftsib == agbno || block.rightsib == agbno {
            self.problem(
                agbno,
                level,
                "a sibling pointer points to the block itself".into(),
            );
        }
        if let Some(c) = usize::try_from(level)
            .ok()
            .and_then(|l| self.cursors.get_mut(l))
        {
            *c = Cursor::After {
                agbno,
                rightsib: block.rightsib,
            };
        }
    }

    fn check_record(&mut self, agbno: u32, index: usize, r: &Record) {
        let tree = self.root.tree;
        let n = index.saturating_add(1);
        let len = u64::from(self.root.ag_length);
        let mut bad: Vec<String> = Vec::new();
        let extent_end = |start: u32, count: u32| u64::from(start).saturating_add(u64::from(count));
        match r {
            Record::Alloc(a) => {
                if a.blockcount == 0 {
                    bad.push("blockcount is 0".into());
                }
                if extent_end(a.startblock, a.blockcount) > len {
                    bad.push(format!(
                        "extent {}+{} runs past the AG end {len}",
                        a.startblock, a.blockcount
                    ));
                }
            }
            Record::Inobt(c) => {
                // As xfs_repair checks a chunk's start: at the start of
                // a block when a block holds at most a chunk, else at a
                // chunk boundary in it; on an agbno that is a multiple
                // of sb_inoalignmt with aligned inodes (ALIGN; sparse
                // inode chunks are aligned otherwise). v4 filesystems
                // with small inodes have chunks that start mid-way
                // through a 64-inode boundary.
                let inopblog = u32::from(self.fs.geo.inopblog);
                let chunk_block = c.startino.checked_shr(inopblog).unwrap_or(u32::MAX);
                let inopblock = 1u32.checked_shl(inopblog).unwrap_or(u32::MAX);
                let off = c.startino & inopblock.wrapping_sub(1);
                if (inopblock <= XFS_INODES_PER_CHUNK && off != 0)
                    || (inopblock > XFS_INODES_PER_CHUNK
                        && off
                            .checked_rem(XFS_INODES_PER_CHUNK)
                            .is_some_and(|r| r != 0))
                {
                    bad.push(format!(
                        "startino {} does not start a chunk (inode {off} of its block, {inopblock} inodes a block)",
                        c.startino
                    ));
                }
                let sb = &self.fs.sb;
                let sparse = sb.is_v5() && sb.features_incompat & (1 << 1) != 0;
                if sb.versionnum & 0x0080 != 0
                    && !sparse
                    && chunk_block
                        .checked_rem(sb.inoalignmt)
                        .is_some_and(|r| r != 0)
                {
                    bad.push(format!(
                        "startino {} is in block {chunk_block}, not a multiple of sb_inoalignmt {}",
                        c.startino, sb.inoalignmt
                    ));
                }
                if u64::from(chunk_block) >= len {
                    bad.push(format!("startino {} lies beyond the AG", c.startino));
                }
                if c.count != c.present() {
                    bad.push(format!(
                        "count {} but the holemask {:#06x} leaves {} inodes",
                        c.count,
                        c.holemask,
                        c.present()
                    ));
                }
                if c.freecount != c.free_present() {
                    bad.push(format!(
                        "freecount {} but {} inodes are marked free",
                        c.freecount,
                        c.free_present()
                    ));
                }
                if c.freecount > c.count {
                    bad.push(format!(
                        "freecount {} exceeds count {}",
                        c.freecount, c.count
                    ));
                }
                if tree == AgTree::Fino && c.freecount == 0 {
                    bad.push("a finobt record without free inodes".into());
                }
            }
            Record::Rmap(m) => {
                if m.blockcount == 0 {
                    bad.push("blockcount is 0".into());
                }
                if extent_end(m.startblock, m.blockcount) > len {
                    bad.push(format!(
                        "extent {}+{} runs past the AG end {len}",
                        m.startblock, m.blockcount
                    ));
                }
                let unknown_flags = m.raw_offset
                    & !(XFS_RMAP_OFF_MASK
                        | XFS_RMAP_OFF_ATTR_FORK
                        | XFS_RMAP_OFF_BMBT_BLOCK
                        | XFS_RMAP_OFF_UNWRITTEN);
                if unknown_flags != 0 {
                    bad.push(format!("unknown offset flag bits {unknown_flags:#x}"));
                }
                if non_inode_owner(m.owner) {
                    if owner_name(m.owner).is_none()
                        || m.owner == XFS_RMAP_OWN_NULL
                        || m.owner == XFS_RMAP_OWN_MIN
                    {
                        bad.push(format!(
                            "owner {} is not a valid special owner",
                            owner_signed(m.owner)
                        ));
                    }
                    if m.raw_offset != 0 {
                        bad.push("a special owner with a file offset or flags".into());
                    }
                } else if m.bmbt_block && (m.offset != 0 || m.unwritten) {
                    bad.push("a bmbt block with a file offset or the unwritten flag".into());
                }
            }
            Record::Refcount(c) => {
                if c.blockcount == 0 {
                    bad.push("blockcount is 0".into());
                }
                if extent_end(c.startblock, c.blockcount) > len {
                    bad.push(format!(
                        "extent {}+{} runs past the AG end {len}",
                        c.startblock, c.blockcount
                    ));
                }
                if c.cow && c.refcount != 1 {
                    bad.push(format!(
                        "a CoW staging extent with refcount {} (must be 1)",
                        c.refcount
                    ));
                }
                if !c.cow && c.refcount < 2 {
                    bad.push(format!(
                        "a shared extent with refcount {} (must be 2 or more)",
                        c.refcount
                    ));
                }
            }
        }
        let key = r.order(tree);
        if let Some((pk, prev)) = self.last_rec {
            let order_bad = if tree.overlapping() {
                key < pk
            } else {
                key <= pk
            };
            if order_bad {
                bad.push("out of order after the previous record".into());
            } else {
                let overlap = match (prev, r) {
                    (Record::Alloc(p), Record::Alloc(a)) if tree == AgTree::Bno => {
                        extent_end(p.startblock, p.blockcount) > u64::from(a.startblock)
                    }
                    (Record::Inobt(p), Record::Inobt(c)) => {
                        u64::from(p.startino).saturating_add(64) > u64::from(c.startino)
                    }
                    (Record::Refcount(p), Record::Refcount(c)) if p.cow == c.cow => {
                        extent_end(p.startblock, p.blockcount) > u64::from(c.startblock)
                    }
                    _ => false,
                };
                if overlap {
                    bad.push("overlaps the previous record".into());
                }
            }
        }
        self.last_rec = Some((key, *r));
        for b in bad {
            self.problem(agbno, 0, format!("record {n}: {b}"));
        }
    }
}

fn sib(b: u32) -> String {
    if b == NULLAGBLOCK {
        "NULLAGBLOCK".into()
    } else {
        b.to_string()
    }
}

/// Walk a tree from its root, handing each decoded block to `visit` in
/// depth-first order (so the blocks of each level come left to right). The
/// visitor may stop the walk by returning `ControlFlow::Break`.
pub fn walk<R: ReadAt>(
    fs: &Fs<R>,
    root: &TreeRoot,
    visit: &mut dyn FnMut(&BtreeBlock) -> ControlFlow<()>,
) -> WalkReport {
    let levels_ok = (1..=MAX_AG_BTREE_LEVELS).contains(&root.levels);
    let n_levels = if levels_ok { root.levels } else { 0 };
    let mut w = Walker {
        fs,
        root: *root,
        ctx: BlockCtx::new(fs, root.agno),
        visited: HashSet::new(),
        cursors: vec![Cursor::Start; usize::try_from(n_levels).unwrap_or(0)],
        last_rec: None,
        report: WalkReport {
            tree: root.tree,
            agno: root.agno,
            root: root.root,
            levels: root.levels,
            blocks: 0,
            blocks_per_level: vec![0; usize::try_from(n_levels).unwrap_or(0)],
            records: 0,
            keys: 0,
            problems: Vec::new(),
            stopped: false,
        },
        visit,
    };
    if !levels_ok {
        w.report.problems.push(format!(
            "{} AG {}: height {} is not 1 to {MAX_AG_BTREE_LEVELS}; the tree is not read",
            root.tree.btree_name(),
            root.agno.0,
            root.levels
        ));
        return w.report;
    }
    w.block(root.root.0, n_levels.saturating_sub(1));
    if !w.report.stopped {
        for (level, c) in w.cursors.clone().into_iter().enumerate() {
            if let Cursor::After { agbno, rightsib } = c {
                if rightsib != NULLAGBLOCK {
                    w.problem(
                        agbno,
                        u32::try_from(level).unwrap_or(u32::MAX),
                        format!("last block of its level but rightsib is {rightsib}"),
                    );
                }
            }
        }
    }
    w.report
}

/// The leaf records of a tree, in key order, at most `cap` of them
/// (`report.stopped` says whether there were more).
pub fn records<R: ReadAt>(fs: &Fs<R>, root: &TreeRoot, cap: usize) -> (Vec<Record>, WalkReport) {
    let mut out = Vec::new();
    let report = walk(fs, root, &mut |b| {
        if let BlockContent::Leaf(recs) = &b.content {
            for r in recs {
                if out.len() >= cap {
                    return ControlFlow::Break(());
                }
                out.push(*r);
            }
        }
        ControlFlow::Continue(())
    });
    (out, report)
}

/// A node entry with where it was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PlacedEntry {
    pub level: u16,
    /// The node block holding the entry.
    pub agbno: u32,
    /// 1-based slot in the node.
    pub index: u32,
    pub entry: NodeEntry,
}

/// The node keys and pointers of a tree, at most `cap` of them.
pub fn node_entries<R: ReadAt>(
    fs: &Fs<R>,
    root: &TreeRoot,
    cap: usize,
) -> (Vec<PlacedEntry>, WalkReport) {
    let mut out = Vec::new();
    let report = walk(fs, root, &mut |b| {
        if let BlockContent::Node(entries) = &b.content {
            for (i, e) in entries.iter().enumerate() {
                if out.len() >= cap {
                    return ControlFlow::Break(());
                }
                out.push(PlacedEntry {
                    level: b.level,
                    agbno: b.agbno.0,
                    index: u32::try_from(i).unwrap_or(u32::MAX).saturating_add(1),
                    entry: *e,
                });
            }
        }
        ControlFlow::Continue(())
    });
    (out, report)
}
