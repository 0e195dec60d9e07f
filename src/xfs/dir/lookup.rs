//! Looking one name up by its hash, in each directory form (kernel:
//! `xfs_dir_lookup` in `xfs_dir2.c` and the per-form lookups).

use std::collections::HashMap;

use super::data::{parse_data_block, DataBlock};
use super::leaf::parse_leaf;
use super::readdir::{block_dir_format, read_dir};
use super::{DirEntry, DirFork, DirFormat, DirGeometry, DATA, LEAF};
use crate::xfs::dabtree::{find_leaf, read_da_block, ForkSource};
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::dir2::*;
use crate::xfs::sb::Geometry;

/// Look `name` up in a directory by its hash, as the kernel does: the
/// shortform list, or the leaf entries with that hash. Names compare
/// bytewise (on ASCII-CI filesystems, case-insensitively if no exact match).
pub fn lookup<S: ForkSource + ?Sized>(
    src: &S,
    geo: &Geometry,
    dg: &DirGeometry,
    fork: DirFork<'_>,
    name: &[u8],
) -> Result<Option<DirEntry>> {
    match fork {
        DirFork::Local { .. } => {
            let l = read_dir(src, geo, dg, fork)?;
            return Ok(pick(dg, l.entries.into_iter(), name));
        }
        DirFork::Blocks { .. } => {}
    };
    let owner = dg.da.owner.0;
    let runs = src.runs();
    let format = block_dir_format(dg, &runs).ok_or_else(|| {
        Error::corrupt(
            "directory",
            Location::Inode { ino: owner },
            format!("inode {owner}: a block directory with no blocks mapped"),
        )
    })?;
    let hash = dg.hash(name);
    // Candidate dataptrs with this hash.
    let mut ptrs: Vec<u32> = Vec::new();
    let mut block0: Option<DataBlock> = None;
    let take = |ents: &[(u32, u32)], ptrs: &mut Vec<u32>| -> bool {
        // Returns whether the run of equal hashes may continue past the end.
        let start = ents.partition_point(|e| e.0 < hash);
        let mut i = start;
        while let Some(&(h, a)) = ents.get(i) {
            if h != hash {
                return false;
            }
            if a != XFS_DIR2_NULL_DATAPTR {
                ptrs.push(a);
            }
            i = i.saturating_add(1);
        }
        true
    };
    match format {
        DirFormat::Block => {
            let buf = read_da_block(src, geo, &dg.da, DATA, 0)?;
            let d = parse_data_block(&buf, dg, true)?;
            if let Some((ents, _)) = &d.leaf {
                take(ents, &mut ptrs);
            }
            block0 = Some(d);
        }
        DirFormat::Leaf => {
            let buf = read_da_block(src, geo, &dg.da, LEAF, dg.leaf_dablk())?;
            let l = parse_leaf(&buf, dg, true)?;
            take(&l.entries, &mut ptrs);
        }
        DirFormat::Node => {
            let leafn = dg.leafn_magic();
            let mut buf = find_leaf(src, geo, &dg.da, dg.leaf_dablk(), hash, &|m| m == leafn)?;
            let mut seen = std::collections::HashSet::new();
            loop {
                seen.insert(buf.dablk);
                let l = parse_leaf(&buf, dg, false)?;
                let more = take(&l.entries, &mut ptrs);
                if !more || l.forw == 0 || seen.contains(&u64::from(l.forw)) || seen.len() > 64 {
                    break;
                }
                buf = read_da_block(src, geo, &dg.da, LEAF, u64::from(l.forw))?;
            }
        }
        DirFormat::Shortform => {}
    }
    let mut found = Vec::new();
    let mut cache: HashMap<u64, DataBlock> = HashMap::new();
    if let Some(d) = block0 {
        cache.insert(0, d);
    }
    for p in ptrs {
        let (db, off) = dg.dataptr_split(p);
        if let std::collections::hash_map::Entry::Vacant(v) = cache.entry(db) {
            let Some(dablk) = dg.da.db_to_dablk(db) else {
                continue;
            };
            let buf = read_da_block(src, geo, &dg.da, DATA, dablk)?;
            v.insert(parse_data_block(&buf, dg, false)?);
        }
        if let Some(d) = cache.get(&db) {
            if let Some((_, e)) = d.entries.iter().find(|(o, _)| *o == off) {
                let mut e = e.clone();
                e.cookie = p;
                found.push(e);
            }
        }
    }
    Ok(pick(dg, found.into_iter(), name))
}

/// The entry named `name`: an exact match, else (ASCII-CI) a case-folded one.
fn pick(
    dg: &DirGeometry,
    entries: impl Iterator<Item = DirEntry>,
    name: &[u8],
) -> Option<DirEntry> {
    let mut folded = None;
    for e in entries {
        if e.name == name {
            return Some(e);
        }
        if dg.ascii_ci
            && folded.is_none()
            && e.name.len() == name.len()
            && e.name.iter().zip(name).all(|(&a, &b)| {
                crate::xfs::dahash::ascii_ci_fold(a) == crate::xfs::dahash::ascii_ci_fold(b)
            })
        {
            folded = Some(e);
        }
    }
    folded
}
