//! A per-AG summary: every btree of the AG walked, and what the trees hold
//! cross-checked against what the headers claim.

use super::*;

/// What a tree holds, by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum TreeStats {
    /// bnobt and cntbt.
    Free { free_blocks: u64, longest: u32 },
    /// inobt and finobt.
    Inodes {
        chunks: u64,
        sparse_chunks: u64,
        inodes: u64,
        free: u64,
    },
    /// rmapbt.
    Rmap { mapped_blocks: u64 },
    /// refcountbt.
    Refcount {
        shared_extents: u64,
        shared_blocks: u64,
        cow_extents: u64,
        cow_blocks: u64,
    },
}

impl TreeStats {
    fn empty(tree: AgTree) -> Self {
        match tree {
            AgTree::Bno | AgTree::Cnt => TreeStats::Free {
                free_blocks: 0,
                longest: 0,
            },
            AgTree::Ino | AgTree::Fino => TreeStats::Inodes {
                chunks: 0,
                sparse_chunks: 0,
                inodes: 0,
                free: 0,
            },
            AgTree::Rmap => TreeStats::Rmap { mapped_blocks: 0 },
            AgTree::Refcount => TreeStats::Refcount {
                shared_extents: 0,
                shared_blocks: 0,
                cow_extents: 0,
                cow_blocks: 0,
            },
        }
    }

    fn add(&mut self, r: &Record) {
        let add = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        match (self, r) {
            (
                TreeStats::Free {
                    free_blocks,
                    longest,
                },
                Record::Alloc(a),
            ) => {
                add(free_blocks, a.blockcount.into());
                *longest = (*longest).max(a.blockcount);
            }
            (
                TreeStats::Inodes {
                    chunks,
                    sparse_chunks,
                    inodes,
                    free,
                },
                Record::Inobt(c),
            ) => {
                add(chunks, 1);
                if c.holemask != 0 {
                    add(sparse_chunks, 1);
                }
                add(inodes, c.count.into());
                add(free, c.freecount.into());
            }
            (TreeStats::Rmap { mapped_blocks }, Record::Rmap(m)) => {
                add(mapped_blocks, m.blockcount.into());
            }
            (
                TreeStats::Refcount {
                    shared_extents,
                    shared_blocks,
                    cow_extents,
                    cow_blocks,
                },
                Record::Refcount(c),
            ) => {
                if c.cow {
                    add(cow_extents, 1);
                    add(cow_blocks, c.blockcount.into());
                } else {
                    add(shared_extents, 1);
                    add(shared_blocks, c.blockcount.into());
                }
            }
            _ => {}
        }
    }
}

/// One tree of an AG, walked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TreeSummary {
    pub tree: AgTree,
    pub root: u32,
    /// The height the header claims.
    pub levels: u32,
    pub blocks: u64,
    pub blocks_per_level: Vec<u64>,
    pub records: u64,
    pub keys: u64,
    pub stats: TreeStats,
    /// For the inobt: chunks that have free inodes (the finobt's records).
    pub chunks_with_free: u64,
    pub problems: Vec<String>,
}

/// Walk one tree and count what it holds.
pub fn summarize_tree<R: ReadAt>(fs: &Fs<R>, root: &TreeRoot) -> TreeSummary {
    let mut stats = TreeStats::empty(root.tree);
    let mut with_free = 0u64;
    let report = btree::walk(fs, root, &mut |b| {
        if let BlockContent::Leaf(recs) = &b.content {
            for r in recs {
                stats.add(r);
                if let Record::Inobt(c) = r {
                    if c.freecount > 0 {
                        with_free = with_free.saturating_add(1);
                    }
                }
            }
        }
        ControlFlow::Continue(())
    });
    TreeSummary {
        tree: root.tree,
        root: root.root.0,
        levels: root.levels,
        blocks: report.blocks,
        blocks_per_level: report.blocks_per_level,
        records: report.records,
        keys: report.keys,
        stats,
        chunks_with_free: with_free,
        problems: report.problems,
    }
}

/// Everything about one AG: its headers, the free list, a summary of each
/// btree, and what disagrees.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AgSummary {
    pub agno: AgNumber,
    pub agf: Option<Agf>,
    pub agf_error: Option<String>,
    pub agi: Option<Agi>,
    pub agi_error: Option<String>,
    pub agfl: Option<Agfl>,
    pub agfl_error: Option<String>,
    pub free_list: Option<FreeList>,
    pub trees: Vec<TreeSummary>,
    /// Cross-checks between headers and trees that failed.
    pub problems: Vec<String>,
}

impl AgSummary {
    pub fn tree(&self, t: AgTree) -> Option<&TreeSummary> {
        self.trees.iter().find(|s| s.tree == t)
    }

    /// Every problem of the AG: header problems, tree problems and
    /// cross-check failures, as text.
    pub fn all_problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for e in [&self.agf_error, &self.agi_error, &self.agfl_error]
            .into_iter()
            .flatten()
        {
            out.push(e.clone());
        }
        let hdr = |name: &str, ps: &[Problem], out: &mut Vec<String>| {
            for p in ps {
                out.push(format!("{name} {}: {}", p.field, p.message));
            }
        };
        if let Some(a) = &self.agf {
            hdr("AGF", &a.problems, &mut out);
        }
        if let Some(a) = &self.agi {
            hdr("AGI", &a.problems, &mut out);
        }
        if let Some(a) = &self.agfl {
            hdr("AGFL", &a.problems, &mut out);
        }
        if let Some(fl) = &self.free_list {
            out.extend(fl.problems.iter().map(|p| format!("AGFL: {p}")));
        }
        for t in &self.trees {
            out.extend(t.problems.iter().cloned());
        }
        out.extend(self.problems.iter().cloned());
        out
    }
}

/// The inode chunks of AG `agno` from its inobt, in order, at most `cap`
/// of them (`report.stopped` says whether there were more). Each record
/// says which of its 64 inodes exist (sparse chunks) and which are free:
/// see [`btree::InobtRec::slots`].
pub fn inode_chunks<R: ReadAt>(
    fs: &Fs<R>,
    agno: AgNumber,
    cap: usize,
) -> Result<(Vec<btree::InobtRec>, btree::WalkReport)> {
    let ctx = HeaderCtx::new(fs, agno)?;
    let agi = read_agi(fs, &ctx)?;
    let root = agi.tree_root(AgTree::Ino, &ctx).ok_or_else(|| {
        Error::corrupt(
            "AGI",
            Location::Daddr { daddr: agi.daddr.0 },
            format!(
                "AG {}: the AGI is unusable, its inobt root is not read",
                agno.0
            ),
        )
    })?;
    let (recs, report) = btree::records(fs, &root, cap);
    let chunks = recs
        .into_iter()
        .filter_map(|r| match r {
            Record::Inobt(c) => Some(c),
            _ => None,
        })
        .collect();
    Ok((chunks, report))
}

fn split<T>(r: Result<T>) -> (Option<T>, Option<String>) {
    match r {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e.to_string())),
    }
}

/// Read the headers of AG `agno`, walk each of its btrees, and cross-check.
pub fn summarize<R: ReadAt>(fs: &Fs<R>, agno: AgNumber) -> Result<AgSummary> {
    let ctx = HeaderCtx::new(fs, agno)?;
    let (agf, agf_error) = split(read_agf(fs, &ctx));
    let (agi, agi_error) = split(read_agi(fs, &ctx));
    let (agfl, agfl_error) = split(read_agfl(fs, &ctx));
    let free_list = match (&agf, &agfl) {
        (Some(f), Some(l)) if f.usable() => Some(l.free_list(f, &ctx)),
        _ => None,
    };
    let mut trees = Vec::new();
    for t in ctx.features.trees() {
        let root = match t {
            AgTree::Ino | AgTree::Fino => agi.as_ref().and_then(|a| a.tree_root(t, &ctx)),
            _ => agf.as_ref().and_then(|a| a.tree_root(t, &ctx)),
        };
        if let Some(root) = root {
            trees.push(summarize_tree(fs, &root));
        }
    }
    let mut s = AgSummary {
        agno,
        agf,
        agf_error,
        agi,
        agi_error,
        agfl,
        agfl_error,
        free_list,
        trees,
        problems: Vec::new(),
    };
    s.problems = cross_check(&s, &ctx);
    Ok(s)
}

fn cross_check(s: &AgSummary, ctx: &HeaderCtx) -> Vec<String> {
    let mut p = Vec::new();
    let free = |t: AgTree| match s.tree(t).map(|x| x.stats) {
        Some(TreeStats::Free {
            free_blocks,
            longest,
        }) => Some((free_blocks, longest)),
        _ => None,
    };
    let inodes = |t: AgTree| match s.tree(t).map(|x| x.stats) {
        Some(TreeStats::Inodes {
            chunks,
            inodes,
            free,
            ..
        }) => Some((chunks, inodes, free)),
        _ => None,
    };
    if let Some(agf) = &s.agf {
        let bno = free(AgTree::Bno);
        let cnt = free(AgTree::Cnt);
        if let (Some((bf, _)), Some((cf, cl))) = (bno, cnt) {
            if bf != cf {
                p.push(format!("bnobt holds {bf} free blocks but cntbt holds {cf}"));
            }
            let (br, cr) = (
                s.tree(AgTree::Bno).map_or(0, |t| t.records),
                s.tree(AgTree::Cnt).map_or(0, |t| t.records),
            );
            if br != cr {
                p.push(format!("bnobt has {br} free extents but cntbt has {cr}"));
            }
            if bf != u64::from(agf.freeblks) {
                p.push(format!(
                    "the free-space btrees hold {bf} free blocks but AGF freeblks is {}",
                    agf.freeblks
                ));
            }
            if cl != agf.longest {
                p.push(format!(
                    "the longest free extent is {cl} blocks but AGF longest is {}",
                    agf.longest
                ));
            }
        }
        let blocks = |t: AgTree| s.tree(t).map(|x| x.blocks);
        if ctx.features.rmapbt {
            if let Some(b) = blocks(AgTree::Rmap) {
                if b != u64::from(agf.rmapblocks) {
                    p.push(format!(
                        "rmapbt has {b} blocks but AGF rmapblocks is {}",
                        agf.rmapblocks
                    ));
                }
            }
        }
        if ctx.features.reflink {
            if let Some(b) = blocks(AgTree::Refcount) {
                if b != u64::from(agf.refcntblocks) {
                    p.push(format!(
                        "refcountbt has {b} blocks but AGF refcntblocks is {}",
                        agf.refcntblocks
                    ));
                }
            }
        }
        if ctx.features.lazysbcount {
            let mut trees = vec![AgTree::Bno, AgTree::Cnt];
            if ctx.features.rmapbt {
                trees.push(AgTree::Rmap);
            }
            let clean = trees
                .iter()
                .all(|t| s.tree(*t).is_some_and(|x| x.problems.is_empty()));
            if clean {
                let extra: u64 = trees
                    .iter()
                    .filter_map(|t| blocks(*t))
                    .map(|b| b.saturating_sub(1))
                    .sum();
                if extra != u64::from(agf.btreeblks) {
                    p.push(format!(
                        "the bno/cnt{} btrees have {extra} blocks besides their roots but AGF btreeblks is {}",
                        if ctx.features.rmapbt { "/rmap" } else { "" },
                        agf.btreeblks
                    ));
                }
            }
        }
        if let Some(fl) = &s.free_list {
            if fl.problems.is_empty()
                && u64::try_from(fl.blocks.len()).ok() != Some(u64::from(agf.flcount))
            {
                p.push(format!(
                    "the free list holds {} blocks but AGF flcount is {}",
                    fl.blocks.len(),
                    agf.flcount
                ));
            }
        }
    }
    if let Some(agi) = &s.agi {
        if let Some((chunks, n, f)) = inodes(AgTree::Ino) {
            if n != u64::from(agi.count) {
                p.push(format!(
                    "the inobt holds {n} inodes in {chunks} chunks but AGI count is {}",
                    agi.count
                ));
            }
            if f != u64::from(agi.freecount) {
                p.push(format!(
                    "the inobt has {f} free inodes but AGI freecount is {}",
                    agi.freecount
                ));
            }
            if let Some((fchunks, _, ff)) = inodes(AgTree::Fino) {
                if ff != f {
                    p.push(format!(
                        "the finobt has {ff} free inodes but the inobt has {f}"
                    ));
                }
                let want = s.tree(AgTree::Ino).map_or(0, |t| t.chunks_with_free);
                if fchunks != want {
                    p.push(format!(
                        "the finobt has {fchunks} chunks but {want} inobt chunks have free inodes"
                    ));
                }
            }
        }
        if ctx.features.inobtcount {
            for (t, want, name) in [
                (AgTree::Ino, agi.ino_blocks, "ino_blocks"),
                (AgTree::Fino, agi.fino_blocks, "fino_blocks"),
            ] {
                if let Some(x) = s.tree(t) {
                    if x.blocks != u64::from(want) {
                        p.push(format!(
                            "the {} has {} blocks but AGI {name} is {want}",
                            t.btree_name(),
                            x.blocks
                        ));
                    }
                }
            }
        }
    }
    p
}

/// Daddr of the first sector of an AG block, for display.
pub fn agblock_daddr<R: ReadAt>(fs: &Fs<R>, agno: AgNumber, agbno: u32) -> Option<Daddr> {
    fs.geo.agb_to_daddr(agno, AgBlock(agbno))
}
