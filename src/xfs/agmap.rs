//! What occupies each block of one allocation group, for the AG map: the
//! headers, free space (from the bnobt), inode chunks (from the inobt, sparse
//! ones with the ranges actually on disk), the blocks of every AG btree, the
//! blocks on the AGFL, the internal log, and on an rmap or reflink
//! filesystem who owns each range and which ranges are shared.
//!
//! Everything comes from the AG's own headers and trees as they are on
//! disk (or replayed, when the image reads through the overlay); a damaged
//! header or tree is reported in `problems` and the rest is still drawn.

use crate::xfs::ag::btree::{self, AgTree, BlockContent, Record, TreeRoot};
use crate::xfs::ag::{read_agf, read_agfl, read_agi, HeaderCtx};
use crate::xfs::error::Result;
use crate::xfs::format::btree::XFS_INODES_PER_CHUNK;
use crate::xfs::fs::Fs;
use crate::xfs::read::ReadAt;
use crate::xfs::types::AgNumber;
use serde::{Deserialize, Serialize};
use std::ops::ControlFlow;

/// Ranges of one kind the map holds at most (a badly fragmented AG can
/// have millions of free extents; the map says when it stopped).
pub const MAX_RANGES_PER_KIND: usize = 20_000;

/// What a range of blocks is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RangeKind {
    /// The superblock copy, AGF, AGI and AGFL sectors.
    Headers,
    /// Free space, as the bnobt records it.
    Free,
    /// An inode chunk (or, for a sparse chunk, a part of it on disk).
    InodeChunk,
    /// A block of one of the AG's btrees.
    BtreeBlock,
    /// A block on the AG free list (reserved for btree growth).
    Agfl,
    /// The internal log.
    Log,
    /// A range the rmapbt says an owner has.
    Owned,
    /// A range the refcount btree says is shared (refcount > 1) or is CoW
    /// staging.
    Shared,
}

/// One range of AG blocks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Range {
    pub kind: RangeKind,
    pub agbno: u32,
    pub len: u32,
    /// For people: what it is ("free extent", "bnobt block (level 0)",
    /// "inode chunk 128-191, 5 free").
    pub label: String,
    /// The inode chunk's first inode number (absolute), to open it.
    pub ino: Option<u64>,
    /// The btree a block belongs to, or the owner of an rmap range.
    pub tree: Option<String>,
    /// A sparse inode chunk (holes in it are not on disk).
    pub sparse: bool,
    /// For a sparse chunk, the first AG block of the whole chunk (the
    /// inobt's `startino`), which may be a hole; otherwise `agbno`.
    pub chunk_agbno: u32,
}

/// The map of one AG.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgMap {
    pub agno: u32,
    /// Blocks in the AG (`agf_length`, or the geometry's when the AGF is
    /// unreadable).
    pub length: u32,
    pub blocksize: u32,
    /// Bytes per sector: each AG header takes one.
    pub sectsize: u32,
    /// The first daddr of the AG (block 0).
    pub daddr: u64,
    pub ranges: Vec<Range>,
    /// Kinds whose list was cut at [`MAX_RANGES_PER_KIND`].
    pub truncated: Vec<RangeKind>,
    pub problems: Vec<String>,
}

struct Builder {
    ranges: Vec<Range>,
    counts: std::collections::BTreeMap<&'static str, usize>,
    truncated: Vec<RangeKind>,
}

fn kind_name(k: RangeKind) -> &'static str {
    match k {
        RangeKind::Headers => "headers",
        RangeKind::Free => "free",
        RangeKind::InodeChunk => "inode_chunk",
        RangeKind::BtreeBlock => "btree_block",
        RangeKind::Agfl => "agfl",
        RangeKind::Log => "log",
        RangeKind::Owned => "owned",
        RangeKind::Shared => "shared",
    }
}

impl Builder {
    /// Add a range; false when its kind is full.
    fn push(&mut self, r: Range) -> bool {
        let n = self.counts.entry(kind_name(r.kind)).or_insert(0);
        if *n >= MAX_RANGES_PER_KIND {
            if !self.truncated.contains(&r.kind) {
                self.truncated.push(r.kind);
            }
            return false;
        }
        *n = n.saturating_add(1);
        self.ranges.push(r);
        true
    }
}

fn range(kind: RangeKind, agbno: u32, len: u32, label: String) -> Range {
    Range {
        kind,
        agbno,
        len,
        label,
        ino: None,
        tree: None,
        sparse: false,
        chunk_agbno: agbno,
    }
}

/// Build the map of AG `agno`.
pub fn ag_map<R: ReadAt>(fs: &Fs<R>, agno: AgNumber) -> Result<AgMap> {
    let ctx = HeaderCtx::new(fs, agno)?;
    let geo = &fs.geo;
    let mut problems = Vec::new();
    let mut b = Builder {
        ranges: Vec::new(),
        counts: Default::default(),
        truncated: Vec::new(),
    };
    let agf = read_agf(fs, &ctx)
        .map_err(|e| problems.push(e.to_string()))
        .ok();
    let agi = read_agi(fs, &ctx)
        .map_err(|e| problems.push(e.to_string()))
        .ok();
    let agfl = read_agfl(fs, &ctx)
        .map_err(|e| problems.push(e.to_string()))
        .ok();
    let length = agf
        .as_ref()
        .filter(|a| a.usable())
        .map_or(ctx.expected_length, |a| a.length);
    let bs = geo.blocksize.max(1);
    // The four header sectors, rounded up to whole blocks.
    let hdr_bytes = u32::from(geo.sectsize).saturating_mul(4);
    let hdr_blocks = hdr_bytes.div_ceil(bs).max(1);
    b.push(range(
        RangeKind::Headers,
        0,
        hdr_blocks,
        if agno.0 == 0 {
            "superblock, AGF, AGI and AGFL".into()
        } else {
            "superblock copy, AGF, AGI and AGFL".into()
        },
    ));

    // The internal log, where it lives in this AG.
    if fs.logdev.is_none() && geo.logstart.0 != 0 {
        let (log_ag, log_agbno) = geo.split_fsb(geo.logstart);
        if log_ag == agno {
            b.push(range(
                RangeKind::Log,
                log_agbno.0,
                geo.logblocks,
                format!("internal log, {} blocks", geo.logblocks),
            ));
        }
    }

    // The AGFL's blocks.
    if let (Some(f), Some(l)) = (&agf, &agfl) {
        if f.usable() {
            let list = l.free_list(f, &ctx);
            problems.extend(list.problems.iter().map(|p| format!("AGFL: {p}")));
            for (i, blk) in list.blocks.iter().enumerate() {
                if !b.push(range(
                    RangeKind::Agfl,
                    *blk,
                    1,
                    format!("on the AG free list (slot {i})"),
                )) {
                    break;
                }
            }
        }
    }

    // Every tree: its blocks, and the records the map draws.
    let inodes_per_block = 1u32
        .checked_shl(u32::from(geo.inopblog))
        .unwrap_or(1)
        .max(1);
    let chunk_blocks = XFS_INODES_PER_CHUNK.div_ceil(inodes_per_block).max(1);
    for t in ctx.features.trees() {
        let root: Option<TreeRoot> = match t {
            AgTree::Ino | AgTree::Fino => agi.as_ref().and_then(|a| a.tree_root(t, &ctx)),
            _ => agf.as_ref().and_then(|a| a.tree_root(t, &ctx)),
        };
        let Some(root) = root else { continue };
        let report = btree::walk(fs, &root, &mut |blk| {
            let level = blk.level;
            let mut r = range(
                RangeKind::BtreeBlock,
                blk.agbno.0,
                1,
                format!(
                    "{} block, level {level}, {} {}",
                    t.btree_name(),
                    blk.numrecs,
                    if level == 0 { "records" } else { "keys" }
                ),
            );
            r.tree = Some(t.btree_name().to_string());
            b.push(r);
            if let BlockContent::Leaf(recs) = &blk.content {
                for rec in recs {
                    if !map_record(&mut b, t, rec, fs, agno, inodes_per_block, chunk_blocks) {
                        break;
                    }
                }
            }
            ControlFlow::Continue(())
        });
        problems.extend(report.problems);
    }
    crate::xfs::sort::by_key(&mut b.ranges, |r| {
        crate::xfs::sort::pair(u64::from(r.agbno), u64::from(kind_order(r.kind)))
    });
    Ok(AgMap {
        agno: agno.0,
        length,
        blocksize: geo.blocksize,
        sectsize: u32::from(geo.sectsize),
        daddr: geo
            .agb_to_daddr(agno, crate::xfs::types::AgBlock(0))
            .map_or(0, |d| d.0),
        ranges: b.ranges,
        truncated: b.truncated,
        problems,
    })
}

fn kind_order(k: RangeKind) -> u8 {
    match k {
        RangeKind::Headers => 0,
        RangeKind::Log => 1,
        RangeKind::BtreeBlock => 2,
        RangeKind::Agfl => 3,
        RangeKind::InodeChunk => 4,
        RangeKind::Free => 5,
        RangeKind::Owned => 6,
        RangeKind::Shared => 7,
    }
}

/// Add what a leaf record says about space; false when the map is full
/// for that kind.
fn map_record<R: ReadAt>(
    b: &mut Builder,
    t: AgTree,
    rec: &Record,
    fs: &Fs<R>,
    agno: AgNumber,
    inodes_per_block: u32,
    chunk_blocks: u32,
) -> bool {
    match (t, rec) {
        (AgTree::Bno, Record::Alloc(a)) => b.push(range(
            RangeKind::Free,
            a.startblock,
            a.blockcount,
            format!(
                "free extent of {} block{}",
                a.blockcount,
                if a.blockcount == 1 { "" } else { "s" }
            ),
        )),
        (AgTree::Ino, Record::Inobt(c)) => {
            let first = c.startino.checked_div(inodes_per_block).unwrap_or(0);
            let ino = fs.geo.agino_to_ino(agno, c.startino);
            let used = c.present().saturating_sub(c.free_present());
            let label = format!(
                "inode chunk {}-{}: {} on disk, {} in use, {} free{}",
                ino,
                ino.saturating_add(u64::from(XFS_INODES_PER_CHUNK).saturating_sub(1)),
                c.present(),
                used,
                c.free_present(),
                if c.holemask != 0 { " (sparse)" } else { "" }
            );
            if c.holemask == 0 {
                let mut r = range(RangeKind::InodeChunk, first, chunk_blocks, label);
                r.ino = Some(ino);
                return b.push(r);
            }
            // A sparse chunk: the runs of inodes on disk, each made blocks.
            let holes = c.hole_inodes();
            let mut i = 0u32;
            let mut ok = true;
            while i < XFS_INODES_PER_CHUNK {
                let bit = 1u64.checked_shl(i).unwrap_or(0);
                if holes & bit != 0 {
                    i = i.saturating_add(1);
                    continue;
                }
                let start = i;
                while i < XFS_INODES_PER_CHUNK && holes & 1u64.checked_shl(i).unwrap_or(0) == 0 {
                    i = i.saturating_add(1);
                }
                let blk = c
                    .startino
                    .saturating_add(start)
                    .checked_div(inodes_per_block)
                    .unwrap_or(0);
                let len = i.saturating_sub(start).div_ceil(inodes_per_block).max(1);
                let mut r = range(RangeKind::InodeChunk, blk, len, label.clone());
                r.ino = Some(ino);
                r.sparse = true;
                r.chunk_agbno = first;
                ok = b.push(r);
            }
            ok
        }
        (AgTree::Rmap, Record::Rmap(m)) => {
            let owner = match btree::owner_name(m.owner) {
                Some(n) => n.to_string(),
                None => format!("inode {}", m.owner),
            };
            let what = if m.bmbt_block {
                " (bmbt block)"
            } else if m.attr_fork {
                " (attr fork)"
            } else if m.unwritten {
                " (unwritten)"
            } else {
                ""
            };
            let mut r = range(
                RangeKind::Owned,
                m.startblock,
                m.blockcount,
                format!("owned by {owner}{what}, {} blocks", m.blockcount),
            );
            r.tree = Some(owner);
            if btree::owner_name(m.owner).is_none() {
                r.ino = Some(m.owner);
            }
            b.push(r)
        }
        (AgTree::Refcount, Record::Refcount(c)) => b.push(range(
            RangeKind::Shared,
            c.startblock,
            c.blockcount,
            if c.cow {
                format!("CoW staging extent, {} blocks", c.blockcount)
            } else {
                format!("shared by {} owners, {} blocks", c.refcount, c.blockcount)
            },
        )),
        _ => true,
    }
}

/// One leaf record of an AG btree, for the records list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordRow {
    /// 0-based position in key order.
    pub index: u64,
    /// The leaf block holding it.
    pub agbno: u32,
    pub text: String,
    /// The first AG block the record names (free, rmap, refcount records)
    /// or the first inode of its chunk (inobt records).
    pub block: Option<u32>,
    pub ino: Option<u64>,
}

/// A page of the leaf records of one AG btree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordsPage {
    pub agno: u32,
    /// The tree's short name (`bno`, `ino`, ...).
    pub tree: String,
    pub btree_name: String,
    pub meaning: String,
    pub start: u64,
    pub rows: Vec<RecordRow>,
    /// Records in the tree, counted up to [`MAX_COUNTED`].
    pub total: u64,
    /// The count stopped at [`MAX_COUNTED`].
    pub more: bool,
    /// The AG's blocks per daddr conversion: AG block 0's daddr and the
    /// sectors per block, to link a block to its bytes.
    pub daddr: u64,
    pub bbs_per_block: u64,
    pub problems: Vec<String>,
}

/// Records counted at most when paging a tree.
pub const MAX_COUNTED: u64 = 10_000_000;

/// Records `start..start + count` (at most 1,000) of tree `tree` of AG
/// `agno`, in key order, and how many the tree holds.
pub fn records_page<R: ReadAt>(
    fs: &Fs<R>,
    agno: AgNumber,
    tree: AgTree,
    start: u64,
    count: u64,
) -> Result<RecordsPage> {
    let ctx = HeaderCtx::new(fs, agno)?;
    let mut problems = Vec::new();
    let root = match tree {
        AgTree::Ino | AgTree::Fino => read_agi(fs, &ctx)?.tree_root(tree, &ctx),
        _ => read_agf(fs, &ctx)?.tree_root(tree, &ctx),
    };
    let count = count.min(1_000);
    let end = start.saturating_add(count);
    let mut rows = Vec::new();
    let mut n = 0u64;
    let mut more = false;
    if let Some(root) = root {
        let report = btree::walk(fs, &root, &mut |blk| {
            if let BlockContent::Leaf(recs) = &blk.content {
                for r in recs {
                    if n >= MAX_COUNTED {
                        more = true;
                        return ControlFlow::Break(());
                    }
                    if n >= start && n < end {
                        let (block, ino) = match r {
                            Record::Alloc(a) => (Some(a.startblock), None),
                            Record::Inobt(c) => (None, Some(fs.geo.agino_to_ino(agno, c.startino))),
                            Record::Rmap(m) => (
                                Some(m.startblock),
                                btree::owner_name(m.owner).is_none().then_some(m.owner),
                            ),
                            Record::Refcount(c) => (Some(c.startblock), None),
                        };
                        rows.push(RecordRow {
                            index: n,
                            agbno: blk.agbno.0,
                            text: crate::xfs::hexmap::record_text(r),
                            block,
                            ino,
                        });
                    }
                    n = n.saturating_add(1);
                }
            }
            ControlFlow::Continue(())
        });
        problems.extend(report.problems);
    } else {
        problems.push(format!(
            "AG {}: the {} root is not readable from its header",
            agno.0,
            tree.btree_name()
        ));
    }
    Ok(RecordsPage {
        agno: agno.0,
        tree: tree.name().to_string(),
        btree_name: tree.btree_name().to_string(),
        meaning: tree.meaning().to_string(),
        start,
        rows,
        total: n,
        more,
        daddr: fs
            .geo
            .agb_to_daddr(agno, crate::xfs::types::AgBlock(0))
            .map_or(0, |d| d.0),
        bbs_per_block: u64::from(fs.geo.blocksize / 512).max(1),
        problems,
    })
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn sample_ag0_has_headers_chunks_and_free_space() {
        let fs = crate::xfs::ag::testing::fixture_fs(crate::xfs::ag::testing::fixture_head(
            "log-xattrs",
            64 << 20,
        ));
        let m = ag_map(&fs, AgNumber(0)).unwrap();
        assert_eq!(m.ranges[0].kind, RangeKind::Headers);
        assert!(m.ranges.iter().any(|r| r.kind == RangeKind::InodeChunk));
        assert!(m.ranges.iter().any(|r| r.kind == RangeKind::Free));
        assert!(m.problems.is_empty(), "{:?}", m.problems);
    }
}
