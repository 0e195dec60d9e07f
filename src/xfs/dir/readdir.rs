//! Reading every entry of a directory, and the checks across its blocks:
//! each entry has exactly one leaf entry with the right hash, and the bests
//! tables agree with the data blocks (kernel: `xfs_dir2_readdir.c`).

use std::collections::{BTreeSet, HashMap};

use super::data::parse_data_block;
use super::free::{free_max_bests, parse_free};
use super::leaf::parse_leaf;
use super::shortform::parse_shortform;
use super::{
    DirEntry, DirFork, DirFormat, DirGeometry, DirListing, Ftype, DATA, FREE, LEAF,
    MAX_DIR_ENTRIES, MAX_PROBLEMS,
};
use crate::xfs::dabtree::{read_da_block, walk_leaves, ForkSource, Problems};
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::dir2::*;
use crate::xfs::sb::Geometry;

/// Which form a block directory is in, from where its mapping ends (as the
/// kernel decides it).
pub fn block_dir_format(dg: &DirGeometry, runs: &[(u64, u64)]) -> Option<DirFormat> {
    let eof = runs.iter().map(|&(f, l)| f.saturating_add(l)).max()?;
    let fsbc = u64::from(dg.da.fsb_count);
    Some(if eof == fsbc {
        DirFormat::Block
    } else if eof == dg.leaf_dablk().saturating_add(fsbc) {
        DirFormat::Leaf
    } else {
        DirFormat::Node
    })
}

/// The directory blocks (numbers `db`) with at least one mapped fs block in
/// the fork block range `[lo, hi)`.
fn dir_blocks_in(dg: &DirGeometry, runs: &[(u64, u64)], lo: u64, hi: u64) -> BTreeSet<u64> {
    let fsbc = u64::from(dg.da.fsb_count.max(1));
    let mut out = BTreeSet::new();
    for &(f, l) in runs {
        let a = f.max(lo);
        let b = f.saturating_add(l).min(hi);
        if a >= b {
            continue;
        }
        let mut db = a.checked_div(fsbc).unwrap_or(0);
        let last = b.saturating_sub(1).checked_div(fsbc).unwrap_or(0);
        while db <= last && out.len() < MAX_DIR_ENTRIES {
            out.insert(db);
            db = db.saturating_add(1);
        }
    }
    out
}

struct Collector {
    entries: Vec<DirEntry>,
    problems: Problems,
    full: bool,
}

impl Collector {
    fn problem(&mut self, e: Error) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(e);
        }
    }
    fn problems(&mut self, es: Problems) {
        for e in es {
            self.problem(e);
        }
    }
    fn push(&mut self, e: DirEntry, owner: u64) {
        if self.entries.len() >= MAX_DIR_ENTRIES {
            if !self.full {
                self.full = true;
                self.problem(Error::corrupt(
                    "directory",
                    Location::Inode { ino: owner },
                    format!(
                        "inode {owner}: more than {MAX_DIR_ENTRIES} entries; the listing stops there"
                    ),
                ));
            }
            return;
        }
        self.entries.push(e);
    }
}

/// Read every entry of a directory.
pub fn read_dir<S: ForkSource + ?Sized>(
    src: &S,
    geo: &Geometry,
    dg: &DirGeometry,
    fork: DirFork<'_>,
) -> Result<DirListing> {
    let owner = dg.da.owner;
    match fork {
        DirFork::Local { bytes, at } => {
            let sf = parse_shortform(bytes, dg, at)?;
            let dot_cookie = u32::try_from(dg.data_hdr_size() / 8).unwrap_or(0);
            let dotdot_cookie =
                u32::try_from(dg.data_hdr_size().saturating_add(dg.data_entsize(1)) / 8)
                    .unwrap_or(0);
            let ft = dg.ftype.then_some(Ftype(XFS_DIR3_FT_DIR));
            let mut entries = vec![
                DirEntry {
                    name: b".".to_vec(),
                    ino: owner,
                    ftype: ft,
                    cookie: dot_cookie,
                },
                DirEntry {
                    name: b"..".to_vec(),
                    ino: sf.parent,
                    ftype: ft,
                    cookie: dotdot_cookie,
                },
            ];
            entries.extend(sf.entries);
            Ok(DirListing {
                format: DirFormat::Shortform,
                entries,
                parent: Some(sf.parent),
                problems: sf.problems,
            })
        }
        DirFork::Blocks { di_size } => read_block_dir(src, geo, dg, di_size),
    }
}

fn read_block_dir<S: ForkSource + ?Sized>(
    src: &S,
    geo: &Geometry,
    dg: &DirGeometry,
    di_size: u64,
) -> Result<DirListing> {
    let owner = dg.da.owner.0;
    let runs = src.runs();
    let format = block_dir_format(dg, &runs).ok_or_else(|| {
        Error::corrupt(
            "directory",
            Location::Inode { ino: owner },
            format!("inode {owner}: a block directory with no blocks mapped"),
        )
    })?;
    let mut c = Collector {
        entries: Vec::new(),
        problems: Vec::new(),
        full: false,
    };
    let blksize = u64::try_from(dg.blksize()).unwrap_or(u64::MAX);
    if format == DirFormat::Block && di_size != blksize {
        c.problem(Error::corrupt(
            "directory",
            Location::Inode { ino: owner },
            format!(
                "inode {owner}: single-block directory with size {di_size} (the block is {blksize} bytes)"
            ),
        ));
    }
    // Data blocks: entries, keyed by dataptr for the leaf checks.
    let mut by_ptr: HashMap<u32, usize> = HashMap::new();
    let mut best_of: HashMap<u64, u16> = HashMap::new();
    let mut block_leaf = None;
    // Data blocks lie below di_size (which ends the data space); anything
    // mapped above it is reported, not read.
    let fsbc = u64::from(dg.da.fsb_count);
    let data_end = di_size
        .div_ceil(blksize.max(1))
        .saturating_mul(fsbc)
        .min(dg.leaf_dablk());
    let beyond = dir_blocks_in(dg, &runs, data_end, dg.leaf_dablk());
    if let Some(first) = beyond.first() {
        c.problem(Error::corrupt(
            "directory",
            Location::Inode { ino: owner },
            format!(
                "inode {owner}: {} data block(s) mapped past the directory size {di_size} (first: block {first}); not read",
                beyond.len()
            ),
        ));
    }
    let data_dbs = dir_blocks_in(dg, &runs, 0, data_end);
    let ndata = data_dbs.last().map_or(0, |d| d.saturating_add(1));
    for db in data_dbs {
        let Some(dablk) = dg.da.db_to_dablk(db) else {
            continue;
        };
        let block_form = format == DirFormat::Block;
        let parsed = read_da_block(src, geo, &dg.da, DATA, dablk)
            .and_then(|buf| parse_data_block(&buf, dg, block_form));
        let data = match parsed {
            Ok(d) => d,
            Err(e) => {
                c.problem(e);
                continue;
            }
        };
        best_of.insert(db, data.best());
        c.problems(data.problems);
        if block_form {
            block_leaf = data.leaf;
        }
        for (off, mut e) in data.entries {
            e.cookie = dg.dataptr(db, off);
            by_ptr.insert(e.cookie, c.entries.len());
            c.push(e, owner);
        }
        if c.full {
            break;
        }
    }
    // Leaf entries: each must point at an entry whose name has its hash.
    let mut leaf_entries: Vec<(u32, u32)> = Vec::new();
    let leafn = dg.leafn_magic();
    match format {
        DirFormat::Block => {
            if let Some((ents, _)) = block_leaf {
                leaf_entries = ents;
            }
        }
        DirFormat::Leaf => {
            match read_da_block(src, geo, &dg.da, LEAF, dg.leaf_dablk())
                .and_then(|buf| parse_leaf(&buf, dg, true))
            {
                Ok(l) => {
                    c.problems(l.problems);
                    check_bests(dg, &l.bests, 0, &best_of, &mut c);
                    let last = best_of.keys().max().map_or(0, |m| m.saturating_add(1));
                    if u64::try_from(l.bests.len()).unwrap_or(u64::MAX) != last {
                        c.problem(Error::corrupt(
                            LEAF,
                            Location::Inode { ino: owner },
                            format!(
                                "inode {owner}: bestcount {} but the data blocks end at {last}",
                                l.bests.len()
                            ),
                        ));
                    }
                    leaf_entries = l.entries;
                }
                Err(e) => c.problem(e),
            }
        }
        DirFormat::Node => {
            let mut prev_hash = 0u32;
            let mut leaves: Vec<(u32, u32)> = Vec::new();
            let mut leaf_problems = Vec::new();
            let walk = walk_leaves(
                src,
                geo,
                &dg.da,
                dg.leaf_dablk(),
                &|m| m == leafn,
                &mut |buf| {
                    let l = parse_leaf(&buf, dg, false)?;
                    leaf_problems.extend(l.problems);
                    if let Some(&(h, _)) = l.entries.first() {
                        if h < prev_hash {
                            leaf_problems.push(buf.bad(
                                LEAF,
                                64,
                                format!(
                                    "first hash {h:#010x} is below the previous leaf's last {prev_hash:#010x}"
                                ),
                            ));
                        }
                    }
                    if let Some(&(h, _)) = l.entries.last() {
                        prev_hash = h;
                    }
                    if leaves.len() < MAX_DIR_ENTRIES.saturating_mul(2) {
                        leaves.extend(l.entries);
                    }
                    Ok(())
                },
            );
            c.problems(walk);
            c.problems(leaf_problems);
            leaf_entries = leaves;
            check_free_blocks(src, geo, dg, &runs, ndata, &best_of, &mut c);
        }
        DirFormat::Shortform => {}
    }
    let complete = !c.full;
    check_leaf_entries(dg, &leaf_entries, &by_ptr, &mut c, complete);
    let parent = c.entries.iter().find(|e| e.name == b"..").map(|e| e.ino);
    Ok(DirListing {
        format,
        entries: c.entries,
        parent,
        problems: c.problems,
    })
}

/// Every live leaf entry must point at an entry with that hash, and every
/// entry must have exactly one live leaf entry.
fn check_leaf_entries(
    dg: &DirGeometry,
    leaf: &[(u32, u32)],
    by_ptr: &HashMap<u32, usize>,
    c: &mut Collector,
    complete: bool,
) {
    let owner = dg.da.owner.0;
    let mut seen = vec![false; c.entries.len()];
    let mut bad = Vec::new();
    for &(hash, addr) in leaf {
        if addr == XFS_DIR2_NULL_DATAPTR {
            continue;
        }
        match by_ptr.get(&addr).copied() {
            None => {
                let (db, off) = dg.dataptr_split(addr);
                bad.push(format!(
                    "leaf entry (hash {hash:#010x}) points at data block {db} byte {off}, where no entry starts"
                ));
            }
            Some(i) => {
                let Some(e) = c.entries.get(i) else { continue };
                let want = dg.hash(&e.name);
                if want != hash {
                    bad.push(format!(
                        "leaf entry hash {hash:#010x} for \"{}\", whose hash is {want:#010x}",
                        String::from_utf8_lossy(&e.name)
                    ));
                }
                if let Some(s) = seen.get_mut(i) {
                    if *s {
                        bad.push(format!(
                            "two leaf entries point at \"{}\"",
                            String::from_utf8_lossy(&e.name)
                        ));
                    }
                    *s = true;
                }
            }
        }
    }
    if complete {
        for (i, s) in seen.iter().enumerate() {
            if !s {
                if let Some(e) = c.entries.get(i) {
                    bad.push(format!(
                        "entry \"{}\" has no leaf entry (lookups cannot find it)",
                        String::from_utf8_lossy(&e.name)
                    ));
                }
            }
        }
    }
    for d in bad {
        c.problem(Error::corrupt(
            LEAF,
            Location::Inode { ino: owner },
            format!("inode {owner}: {d}"),
        ));
    }
}

/// Compare a table of bests (starting at data block `firstdb`) with the data
/// blocks' own bestfree[0].
fn check_bests(
    dg: &DirGeometry,
    bests: &[u16],
    firstdb: u64,
    best_of: &HashMap<u64, u16>,
    c: &mut Collector,
) {
    let owner = dg.da.owner.0;
    for (i, &b) in bests.iter().enumerate() {
        let db = firstdb.saturating_add(u64::try_from(i).unwrap_or(u64::MAX));
        let actual = best_of.get(&db).copied();
        let ok = match actual {
            None => b == NULLDATAOFF,
            Some(a) => a == b,
        };
        if !ok {
            c.problem(Error::corrupt(
                "directory best free",
                Location::Inode { ino: owner },
                format!(
                    "inode {owner}: data block {db}: bests says {b}, the block says {}",
                    actual.map_or("no block".to_string(), |a| a.to_string())
                ),
            ));
        }
    }
}

fn check_free_blocks<S: ForkSource + ?Sized>(
    src: &S,
    geo: &Geometry,
    dg: &DirGeometry,
    runs: &[(u64, u64)],
    ndata: u64,
    best_of: &HashMap<u64, u16>,
    c: &mut Collector,
) {
    let owner = dg.da.owner.0;
    let max = u64::try_from(free_max_bests(dg)).unwrap_or(u64::MAX);
    let first = dg
        .free_dablk()
        .checked_div(u64::from(dg.da.fsb_count))
        .unwrap_or(0);
    let mut covered = BTreeSet::new();
    // As many free-index blocks as the data blocks need, and one more.
    let nfree = ndata.div_ceil(max.max(1)).saturating_add(1);
    let free_end = dg
        .free_dablk()
        .saturating_add(nfree.saturating_mul(u64::from(dg.da.fsb_count)));
    let beyond = dir_blocks_in(dg, runs, free_end, u64::MAX);
    if !beyond.is_empty() {
        c.problem(Error::corrupt(
            FREE,
            Location::Inode { ino: owner },
            format!(
                "inode {owner}: {} free-index block(s) mapped past the {nfree} the data blocks need; not read",
                beyond.len()
            ),
        ));
    }
    for db in dir_blocks_in(dg, runs, dg.free_dablk(), free_end) {
        let Some(dablk) = dg.da.db_to_dablk(db) else {
            continue;
        };
        let fb = match read_da_block(src, geo, &dg.da, FREE, dablk)
            .and_then(|buf| parse_free(&buf, dg))
        {
            Ok(f) => f,
            Err(e) => {
                c.problem(e);
                continue;
            }
        };
        let k = db.saturating_sub(first);
        if u64::from(fb.firstdb) != k.saturating_mul(max) {
            c.problem(Error::corrupt(
                FREE,
                Location::Inode { ino: owner },
                format!(
                    "inode {owner}: free block {k} has firstdb {}, expected {}",
                    fb.firstdb,
                    k.saturating_mul(max)
                ),
            ));
            continue;
        }
        let used = fb.bests.iter().filter(|&&b| b != NULLDATAOFF).count();
        if u64::try_from(used).unwrap_or(0) != u64::from(fb.nused) {
            c.problem(Error::corrupt(
                FREE,
                Location::Inode { ino: owner },
                format!(
                    "inode {owner}: free block {k}: nused {} but {used} entries are in use",
                    fb.nused
                ),
            ));
        }
        for i in 0..fb.bests.len() {
            covered.insert(u64::from(fb.firstdb).saturating_add(u64::try_from(i).unwrap_or(0)));
        }
        check_bests(dg, &fb.bests, u64::from(fb.firstdb), best_of, c);
    }
    for db in best_of.keys() {
        if !covered.contains(db) {
            c.problem(Error::corrupt(
                FREE,
                Location::Inode { ino: owner },
                format!("inode {owner}: data block {db} is in no free-index block"),
            ));
        }
    }
}
