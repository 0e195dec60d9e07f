//! What replay changed, read from both sides of the overlay: the image as
//! it is on disk and as replayed.
//!
//! ```text
//!  recovered sectors -> the blocks they belong to (ranges, named by magic)
//!                    -> inode slots whose bytes changed -> inodes:
//!                       created / freed / changed (which core fields)
//!  changed directories -> entries added and removed
//!    (changed inodes, and owners of changed v5 directory data blocks)
//!  changed entries     -> paths that exist on one side only: the entry's
//!                         path and, for a directory, every path below it
//!  changed inodes      -> extended attributes added, removed, changed
//! ```
//!
//! Paths are what a listing of the mounted filesystem would show: the
//! paths added are those a listing after recovery has and a listing of the
//! image as it is on disk does not, and the reverse for paths removed. A
//! path is found from its directory by `..` up to the root.

use crate::xfs::format::ag::{XFS_AGFL_MAGIC, XFS_AGF_MAGIC, XFS_AGI_MAGIC};
use crate::xfs::format::attr::{XFS_ATTR3_LEAF_MAGIC, XFS_ATTR3_RMT_MAGIC, XFS_ATTR_LEAF_MAGIC};
use crate::xfs::format::btree::{
    XFS_ABTB_CRC_MAGIC, XFS_ABTB_MAGIC, XFS_ABTC_CRC_MAGIC, XFS_ABTC_MAGIC, XFS_FIBT_CRC_MAGIC,
    XFS_FIBT_MAGIC, XFS_IBT_CRC_MAGIC, XFS_IBT_MAGIC, XFS_REFC_CRC_MAGIC, XFS_RMAP_CRC_MAGIC,
};
use crate::xfs::format::da::{XFS_DA3_NODE_MAGIC, XFS_DA_MAGIC_OFF, XFS_DA_NODE_MAGIC};
use crate::xfs::format::dinode::{
    XfsDinode, XFS_BMAP_CRC_MAGIC, XFS_BMAP_MAGIC, XFS_DINODE_MAGIC, XFS_SYMLINK_MAGIC,
};
use crate::xfs::format::dir2::{
    XfsDir3BlkHdr, XFS_DIR2_BLOCK_MAGIC, XFS_DIR2_DATA_MAGIC, XFS_DIR2_FREE_MAGIC,
    XFS_DIR2_LEAF1_MAGIC, XFS_DIR2_LEAFN_MAGIC, XFS_DIR3_BLOCK_MAGIC, XFS_DIR3_DATA_MAGIC,
    XFS_DIR3_FREE_MAGIC, XFS_DIR3_LEAF1_MAGIC, XFS_DIR3_LEAFN_MAGIC,
};
use crate::xfs::format::sb::XFS_SB_MAGIC;
use crate::xfs::fs::{be16, be32, Fs};
use crate::xfs::inode::{Inode, InodeCore};
use crate::xfs::read::ReadAt;
use crate::xfs::types::Ino;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use zerocopy::FromBytes;

/// One changed core field.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct FieldChange {
    pub field: &'static str,
    pub before: String,
    pub after: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct InodeChange {
    pub ino: u64,
    /// `created` (not in use on disk), `freed` (mode 0 after replay) or
    /// `changed`.
    pub change: &'static str,
    /// File type after replay (before, for freed inodes).
    pub file_type: &'static str,
    pub fields: Vec<FieldChange>,
}

#[derive(Clone, Debug, Serialize)]
pub struct EntryChange {
    pub dir: u64,
    /// The name, as text (bytes that are not UTF-8 escaped).
    pub name: String,
    pub ino: u64,
    /// `added` or `removed`.
    pub change: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct XattrChange {
    pub ino: u64,
    /// Namespace and name, e.g. `user.color`.
    pub name: String,
    /// `added`, `removed` or `changed` (value or its length).
    pub change: &'static str,
}

/// A path that exists on one side only.
#[derive(Clone, Debug, Serialize)]
pub struct PathChange {
    /// The path (bytes that are not UTF-8 escaped).
    pub path: String,
    pub ino: u64,
    /// `added` (only after replay) or `removed` (only on disk).
    pub change: &'static str,
}

/// A run of recovered sectors.
#[derive(Clone, Debug, Serialize)]
pub struct BlockRange {
    pub daddr: u64,
    pub sectors: u64,
    /// What the first block of the run is, by its magic after replay.
    pub what: &'static str,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ReplayDiff {
    pub inodes: Vec<InodeChange>,
    pub entries: Vec<EntryChange>,
    /// Paths added and removed, sorted by path.
    pub paths: Vec<PathChange>,
    pub xattrs: Vec<XattrChange>,
    pub blocks: Vec<BlockRange>,
    /// Some inodes were not looked at (more than the limit changed).
    pub truncated: bool,
    pub problems: Vec<String>,
}

/// What to compute.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Compare at most this many inodes.
    pub limit: usize,
    /// List each changed inode's fields (otherwise
    /// [`inode_field_changes`] gives them one inode at a time).
    pub inode_fields: bool,
}

/// Where the comparison is, for a progress bar.
#[derive(Clone, Copy, Debug)]
pub struct DiffProgress {
    pub stage: &'static str,
    pub done: u64,
    pub total: u64,
}

fn text(b: &[u8]) -> String {
    let mut s = String::new();
    for chunk in b.utf8_chunks() {
        s.push_str(chunk.valid());
        for x in chunk.invalid() {
            s.push_str(&format!("\\x{x:02x}"));
        }
    }
    s
}

/// The v3 inode core at the start of `b`, when `b` starts with the inode
/// magic.
fn dinode(b: &[u8]) -> Option<&XfsDinode> {
    XfsDinode::ref_from_prefix(b)
        .ok()
        .map(|(d, _)| d)
        .filter(|d| d.di_magic.get() == XFS_DINODE_MAGIC)
}

/// What a block is, by its magic.
pub fn block_kind(b: &[u8]) -> &'static str {
    // Every block this names starts with its magic; da blocks keep theirs
    // in the block info after the sibling pointers.
    match be32(b, 0).unwrap_or(0) {
        XFS_SB_MAGIC => "superblock",
        XFS_AGF_MAGIC => "agf",
        XFS_AGI_MAGIC => "agi",
        XFS_AGFL_MAGIC => "agfl",
        XFS_ABTB_CRC_MAGIC | XFS_ABTB_MAGIC => "bnobt",
        XFS_ABTC_CRC_MAGIC | XFS_ABTC_MAGIC => "cntbt",
        XFS_IBT_CRC_MAGIC | XFS_IBT_MAGIC => "inobt",
        XFS_FIBT_CRC_MAGIC | XFS_FIBT_MAGIC => "finobt",
        XFS_RMAP_CRC_MAGIC => "rmapbt",
        XFS_REFC_CRC_MAGIC => "refcountbt",
        XFS_BMAP_CRC_MAGIC | XFS_BMAP_MAGIC => "bmbt",
        XFS_DIR3_BLOCK_MAGIC | XFS_DIR2_BLOCK_MAGIC => "dir block",
        XFS_DIR3_DATA_MAGIC | XFS_DIR2_DATA_MAGIC => "dir data",
        XFS_DIR3_FREE_MAGIC | XFS_DIR2_FREE_MAGIC => "dir free",
        XFS_SYMLINK_MAGIC => "symlink",
        XFS_ATTR3_RMT_MAGIC => "attr remote",
        _ => match be16(b, XFS_DA_MAGIC_OFF).unwrap_or(0) {
            XFS_DIR3_LEAF1_MAGIC | XFS_DIR2_LEAF1_MAGIC => "dir leaf",
            XFS_DIR3_LEAFN_MAGIC | XFS_DIR2_LEAFN_MAGIC => "dir leafn",
            XFS_DA3_NODE_MAGIC | XFS_DA_NODE_MAGIC => "da node",
            XFS_ATTR3_LEAF_MAGIC | XFS_ATTR_LEAF_MAGIC => "attr leaf",
            _ => {
                if dinode(b).is_some() {
                    "inodes"
                } else {
                    "other"
                }
            }
        },
    }
}

fn core_fields(c: &InodeCore) -> Vec<(&'static str, String)> {
    let o = |v: Option<u64>| v.map_or("-".to_string(), |x| x.to_string());
    vec![
        ("mode", format!("{:#o}", c.mode)),
        ("version", c.version.to_string()),
        ("format", c.format.to_string()),
        ("uid", c.uid.to_string()),
        ("gid", c.gid.to_string()),
        ("nlink", c.nlink.to_string()),
        ("projid", c.projid.to_string()),
        ("atime", c.atime.text()),
        ("mtime", c.mtime.text()),
        ("ctime", c.ctime.text()),
        ("size", c.size.to_string()),
        ("nblocks", c.nblocks.to_string()),
        ("extsize", c.extsize.to_string()),
        ("nextents", c.nextents.to_string()),
        ("anextents", c.anextents.to_string()),
        ("forkoff", c.forkoff.to_string()),
        ("aformat", c.aformat.to_string()),
        ("flags", format!("{:#x}", c.flags)),
        ("gen", c.gen.to_string()),
        ("next_unlinked", c.next_unlinked.to_string()),
        ("changecount", o(c.changecount)),
        ("lsn", o(c.lsn)),
        ("flags2", c.flags2.map_or("-".into(), |f| format!("{f:#x}"))),
        ("cowextsize", o(c.cowextsize.map(u64::from))),
        ("crtime", c.crtime.as_ref().map_or("-".into(), |t| t.text())),
    ]
}

/// The inode of each changed inode slot in recovered sectors, and the
/// owners of recovered v5 directory data blocks (a directory's entries can
/// change in a block whose inode replay left alone).
fn changed_slots<R: ReadAt>(
    fs: &mut Fs<R>,
    limit: usize,
    truncated: &mut bool,
    progress: &mut dyn FnMut(&DiffProgress),
) -> (Vec<u64>, BTreeSet<u64>) {
    let g = fs.geo;
    let isz = usize::from(g.inodesize).max(1);
    let shift = u32::from(g.blocklog).saturating_sub(9);
    let blocks: BTreeSet<u64> = fs
        .img
        .overlay()
        .sectors()
        .map(|(d, _)| d >> shift)
        .collect();
    let total = u64::try_from(blocks.len()).unwrap_or(u64::MAX);
    let mut out = Vec::new();
    let mut owners = BTreeSet::new();
    for (done, lin) in blocks.into_iter().enumerate() {
        if done % 1024 == 0 {
            progress(&DiffProgress {
                stage: "reading the recovered blocks",
                done: u64::try_from(done).unwrap_or(0),
                total,
            });
        }
        let off = lin.saturating_mul(u64::from(g.blocksize));
        fs.img.set_use_overlay(false);
        let before = fs.img.read("inode block", off, u64::from(g.blocksize));
        fs.img.set_use_overlay(true);
        let after = fs.img.read("inode block", off, u64::from(g.blocksize));
        let (Ok(before), Ok(after)) = (before, after) else {
            continue;
        };
        if g.v5 && before != after {
            // xfs_dir3_blk_hdr: the owner follows magic, crc, blkno, lsn
            // and uuid; both sides, so entries of a freed block count too.
            for b in [&before, &after] {
                if let Ok((h, _)) = XfsDir3BlkHdr::ref_from_prefix(b.as_slice()) {
                    if matches!(h.magic.get(), XFS_DIR3_BLOCK_MAGIC | XFS_DIR3_DATA_MAGIC) {
                        owners.insert(h.owner.get());
                    }
                }
            }
        }
        let agno = lin.checked_div(u64::from(g.agblocks)).unwrap_or(0);
        let agbno = lin.checked_rem(u64::from(g.agblocks)).unwrap_or(0);
        for (slot, (a, b)) in before.chunks(isz).zip(after.chunks(isz)).enumerate() {
            if a == b || (dinode(a).is_none() && dinode(b).is_none()) {
                continue;
            }
            let ino = (agno << (u32::from(g.agblklog).saturating_add(u32::from(g.inopblog))))
                | (agbno << g.inopblog)
                | u64::try_from(slot).unwrap_or(0);
            // On v5 an inode says its own number: skip blocks that only
            // look like inodes.
            if g.v5 && dinode(b).is_some_and(|d| d.di_ino.get() != ino) {
                continue;
            }
            if out.len() >= limit {
                *truncated = true;
                return (out, owners);
            }
            out.push(ino);
        }
    }
    (out, owners)
}

fn read_inode<R: ReadAt>(fs: &mut Fs<R>, replayed: bool, ino: u64) -> Option<Inode> {
    fs.img.set_use_overlay(replayed);
    let i = fs.inode(Ino(ino)).ok();
    fs.img.set_use_overlay(true);
    i.filter(|i| i.core.magic == 0x494e)
}

fn entries<R: ReadAt>(
    fs: &mut Fs<R>,
    replayed: bool,
    inode: &Inode,
) -> crate::xfs::error::Result<BTreeMap<Vec<u8>, u64>> {
    fs.img.set_use_overlay(replayed);
    let l = fs.read_dir(inode);
    fs.img.set_use_overlay(true);
    Ok(l?
        .entries
        .into_iter()
        .filter(|e| e.name != b"." && e.name != b"..")
        .map(|e| (e.name, e.ino.0))
        .collect())
}

/// A changed entry with its name as stored.
struct RawEntry {
    dir: u64,
    name: Vec<u8>,
    ino: u64,
    added: bool,
}

fn xattrs<R: ReadAt>(fs: &mut Fs<R>, replayed: bool, inode: &Inode) -> BTreeMap<String, u32> {
    fs.img.set_use_overlay(replayed);
    let mut out = BTreeMap::new();
    if let Ok(l) = fs.read_attrs(inode) {
        for e in &l.entries {
            let name = format!("{}.{}", e.namespace.name(), text(&e.name));
            let v = fs
                .attr_value(inode, e)
                .map(|v| crc32c::crc32c(&v))
                .unwrap_or(u32::MAX);
            out.insert(name, v);
        }
    }
    fs.img.set_use_overlay(true);
    out
}

/// Compare the on-disk and the replayed state of `fs` (whose image holds
/// the overlay). At most `limit` inodes are compared.
pub fn diff<R: ReadAt>(fs: &mut Fs<R>, limit: usize) -> ReplayDiff {
    diff_with(
        fs,
        Options {
            limit,
            inode_fields: true,
        },
        &mut |_| {},
    )
}

/// The changed core fields of one inode: on disk against replayed.
pub fn inode_field_changes<R: ReadAt>(fs: &mut Fs<R>, ino: u64) -> Vec<FieldChange> {
    let was = fs.img.uses_overlay();
    let before = read_inode(fs, false, ino);
    let after = read_inode(fs, true, ino);
    fs.img.set_use_overlay(was);
    field_changes(before.as_ref(), after.as_ref())
}

fn field_changes(before: Option<&Inode>, after: Option<&Inode>) -> Vec<FieldChange> {
    match (before, after) {
        (Some(b), Some(a)) => core_fields(&b.core)
            .into_iter()
            .zip(core_fields(&a.core))
            .filter(|(x, y)| x.1 != y.1)
            .map(|((field, before), (_, after))| FieldChange {
                field,
                before,
                after,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn is_dir(i: Option<&Inode>) -> bool {
    i.is_some_and(|i| i.core.mode != 0 && i.file_type() == crate::xfs::inode::FileType::Dir)
}

/// Entries added and removed in directory `ino`.
fn entry_changes<R: ReadAt>(
    fs: &mut Fs<R>,
    ino: u64,
    before: Option<&Inode>,
    after: Option<&Inode>,
    d: &mut ReplayDiff,
    raw: &mut Vec<RawEntry>,
) {
    if !is_dir(before) && !is_dir(after) {
        return;
    }
    let mut side = |replayed: bool, i: Option<&Inode>, d: &mut ReplayDiff| match i {
        Some(i) if is_dir(Some(i)) => match entries(fs, replayed, i) {
            Ok(e) => Some(e),
            Err(e) => {
                d.problems.push(format!(
                    "directory inode {ino} {}: {e}",
                    if replayed { "after replay" } else { "on disk" }
                ));
                None
            }
        },
        _ => Some(BTreeMap::new()),
    };
    let (Some(eb), Some(ea)) = (side(false, before, d), side(true, after, d)) else {
        return;
    };
    for (name, i) in &ea {
        if eb.get(name) != Some(i) {
            raw.push(RawEntry {
                dir: ino,
                name: name.clone(),
                ino: *i,
                added: true,
            });
        }
    }
    for (name, i) in eb {
        if ea.get(&name) != Some(&i) {
            raw.push(RawEntry {
                dir: ino,
                name,
                ino: i,
                added: false,
            });
        }
    }
}

/// Compare as [`diff`] does, with `opts` and a progress report.
pub fn diff_with<R: ReadAt>(
    fs: &mut Fs<R>,
    opts: Options,
    progress: &mut dyn FnMut(&DiffProgress),
) -> ReplayDiff {
    let was = fs.img.uses_overlay();
    let mut d = ReplayDiff::default();
    let mut raw = Vec::new();
    // Block ranges.
    let mut run: Option<(u64, u64)> = None;
    let sectors: Vec<u64> = fs.img.overlay().sectors().map(|(s, _)| s).collect();
    let mut ranges = Vec::new();
    for s in sectors {
        run = match run {
            Some((start, n)) if start.saturating_add(n) == s => Some((start, n.saturating_add(1))),
            Some(r) => {
                ranges.push(r);
                Some((s, 1))
            }
            None => Some((s, 1)),
        };
    }
    ranges.extend(run);
    fs.img.set_use_overlay(true);
    for (daddr, n) in ranges {
        let what = fs
            .img
            .read("recovered block", daddr.saturating_mul(512), 512)
            .map(|b| block_kind(&b))
            .unwrap_or("unreadable");
        d.blocks.push(BlockRange {
            daddr,
            sectors: n,
            what,
        });
    }
    let (inos, mut owners) = changed_slots(fs, opts.limit, &mut d.truncated, progress);
    let total = u64::try_from(inos.len()).unwrap_or(u64::MAX);
    for (done, ino) in inos.into_iter().enumerate() {
        if done % 256 == 0 {
            progress(&DiffProgress {
                stage: "comparing inodes, entries and xattrs",
                done: u64::try_from(done).unwrap_or(0),
                total,
            });
        }
        owners.remove(&ino);
        let before = read_inode(fs, false, ino);
        let after = read_inode(fs, true, ino);
        let in_use = |i: &Option<Inode>| i.as_ref().is_some_and(|i| i.core.mode != 0);
        let change = match (in_use(&before), in_use(&after)) {
            (false, false) => continue,
            (false, true) => "created",
            (true, false) => "freed",
            (true, true) => "changed",
        };
        let fields = if opts.inode_fields {
            field_changes(before.as_ref(), after.as_ref())
        } else {
            Vec::new()
        };
        let shown = if change == "freed" { &before } else { &after };
        let file_type = shown.as_ref().map_or("unknown", |i| i.file_type().name());
        d.inodes.push(InodeChange {
            ino,
            change,
            file_type,
            fields,
        });
        entry_changes(fs, ino, before.as_ref(), after.as_ref(), &mut d, &mut raw);
        let xb = before
            .as_ref()
            .filter(|i| i.core.mode != 0)
            .map(|i| xattrs(fs, false, i))
            .unwrap_or_default();
        let xa = after
            .as_ref()
            .filter(|i| i.core.mode != 0)
            .map(|i| xattrs(fs, true, i))
            .unwrap_or_default();
        for (name, v) in &xa {
            match xb.get(name) {
                None => d.xattrs.push(XattrChange {
                    ino,
                    name: name.clone(),
                    change: "added",
                }),
                Some(old) if old != v => d.xattrs.push(XattrChange {
                    ino,
                    name: name.clone(),
                    change: "changed",
                }),
                _ => {}
            }
        }
        for name in xb.keys() {
            if !xa.contains_key(name) {
                d.xattrs.push(XattrChange {
                    ino,
                    name: name.clone(),
                    change: "removed",
                });
            }
        }
    }
    // Directories whose data blocks replay changed but whose inodes it
    // left as they were.
    if !d.truncated {
        for ino in owners {
            let before = read_inode(fs, false, ino);
            let after = read_inode(fs, true, ino);
            entry_changes(fs, ino, before.as_ref(), after.as_ref(), &mut d, &mut raw);
        }
    }
    progress(&DiffProgress {
        stage: "finding the paths added and removed",
        done: 0,
        total: u64::try_from(raw.len()).unwrap_or(u64::MAX),
    });
    let (paths, problems) = path_changes(fs, &raw);
    d.paths = paths;
    d.problems.extend(problems);
    d.entries = raw
        .into_iter()
        .map(|e| EntryChange {
            dir: e.dir,
            name: text(&e.name),
            ino: e.ino,
            change: if e.added { "added" } else { "removed" },
        })
        .collect();
    fs.img.set_use_overlay(was);
    d
}

/// Directory paths on one side of the overlay, found by `..` up to the
/// root and remembered.
struct DirPaths {
    replayed: bool,
    paths: HashMap<u64, Option<Vec<u8>>>,
    /// For each parent read: the name of each inode in it.
    names: HashMap<u64, HashMap<u64, Vec<u8>>>,
}

impl DirPaths {
    fn new(replayed: bool) -> Self {
        DirPaths {
            replayed,
            paths: HashMap::new(),
            names: HashMap::new(),
        }
    }

    fn name_in<R: ReadAt>(&mut self, fs: &Fs<R>, parent: u64, child: u64) -> Option<Vec<u8>> {
        let m = self.names.entry(parent).or_insert_with(|| {
            let mut m = HashMap::new();
            if let Ok(l) = fs.inode(Ino(parent)).and_then(|i| fs.read_dir(&i)) {
                for e in l.entries {
                    if e.name != b"." && e.name != b".." {
                        m.entry(e.ino.0).or_insert(e.name);
                    }
                }
            }
            m
        });
        m.get(&child).cloned()
    }

    /// The path of directory `dir`, if it is reachable from the root.
    fn path<R: ReadAt>(&mut self, fs: &mut Fs<R>, dir: u64) -> Option<Vec<u8>> {
        fs.img.set_use_overlay(self.replayed);
        let root = fs.sb.rootino;
        // Up to a directory whose path is known: (dir, its parent).
        let mut chain: Vec<(u64, u64)> = Vec::new();
        let mut seen = HashSet::new();
        let mut cur = dir;
        let mut base = loop {
            if cur == root {
                break Some(b"/".to_vec());
            }
            if let Some(p) = self.paths.get(&cur) {
                break p.clone();
            }
            if chain.len() >= crate::xfs::tree::MAX_DEPTH || !seen.insert(cur) {
                break None;
            }
            let parent = fs
                .inode(Ino(cur))
                .ok()
                .filter(|i| is_dir(Some(i)))
                .and_then(|i| fs.dir_lookup(&i, b"..").ok().flatten())
                .map(|e| e.ino.0);
            match parent {
                Some(p) => {
                    chain.push((cur, p));
                    cur = p;
                }
                None => break None,
            }
        };
        for (d, parent) in chain.into_iter().rev() {
            base = match base {
                Some(b) => self
                    .name_in(fs, parent, d)
                    .map(|n| crate::xfs::tree::child_path(&b, &n)),
                None => None,
            };
            self.paths.insert(d, base.clone());
        }
        base
    }
}

/// Whether `path` names something on the side the image reads now.
fn exists<R: ReadAt>(fs: &Fs<R>, path: &[u8]) -> bool {
    fs.lookup_path(path).is_ok()
}

/// The paths that exist on one side only, from the entries that changed:
/// each changed entry's path and, for a directory, every path below it, on
/// the side where the entry is; kept when the other side has no such path.
fn path_changes<R: ReadAt>(fs: &mut Fs<R>, entries: &[RawEntry]) -> (Vec<PathChange>, Vec<String>) {
    let mut problems = Vec::new();
    let mut out: BTreeMap<(Vec<u8>, bool), u64> = BTreeMap::new();
    for replayed in [true, false] {
        let mut dirs = DirPaths::new(replayed);
        let mut unreachable = BTreeSet::new();
        // (path, inode) of each entry on this side.
        let mut roots: Vec<(Vec<u8>, u64)> = Vec::new();
        for e in entries.iter().filter(|e| e.added == replayed) {
            match dirs.path(fs, e.dir) {
                Some(p) => roots.push((crate::xfs::tree::child_path(&p, &e.name), e.ino)),
                None => {
                    unreachable.insert(e.dir);
                }
            }
        }
        for dir in unreachable {
            problems.push(format!(
                "directory inode {dir} is not reachable from the root {}: its entries have no path",
                if replayed { "after replay" } else { "on disk" }
            ));
        }
        roots.sort();
        roots.dedup();
        let mut walked: HashSet<Vec<u8>> = HashSet::new();
        for (path, ino) in roots {
            let under_walked = path
                .iter()
                .enumerate()
                .filter(|(_, c)| **c == b'/')
                .any(|(i, _)| path.get(..i).is_some_and(|p| walked.contains(p)));
            if under_walked {
                continue;
            }
            fs.img.set_use_overlay(replayed);
            let items: Vec<(Vec<u8>, u64)> = match fs.inode(Ino(ino)) {
                Ok(i) => {
                    let w = fs.walk(&path, &i);
                    for e in w.errors.iter().take(16) {
                        problems.push(format!("{}: {}", text(&e.path), e.error));
                    }
                    w.items.into_iter().map(|it| (it.path, it.ino.0)).collect()
                }
                Err(_) => vec![(path.clone(), ino)],
            };
            // The other side: does it have the entry's path at all?
            fs.img.set_use_overlay(!replayed);
            let root_there = exists(fs, &path);
            for (p, i) in items {
                if root_there && exists(fs, &p) {
                    continue;
                }
                out.insert((p, replayed), i);
            }
            walked.insert(path);
        }
    }
    let paths = out
        .into_iter()
        .map(|((p, replayed), ino)| PathChange {
            path: text(&p),
            ino,
            change: if replayed { "added" } else { "removed" },
        })
        .collect();
    (paths, problems)
}
