//! Paths of the operations, as they were when each ran.
//!
//! The log names entries by directory inode and name. A directory's own
//! place (its parent and its name there) is taken from the operations
//! found before it in the log (mkdir, rename, link, create), or else from
//! the disk's state before the log (its `..` and its entry in that
//! parent): so a directory renamed later in the log still shows under the
//! name it had. An inode the log's operations do not place (a file made
//! before the log, a directory whose entry the disk does not show yet) is
//! placed where a directory held it before the log changed it: the entries
//! of the directory blocks and shortform directories the log logged, as
//! the disk held them before ([`EntriesBefore`]), and on a filesystem with
//! parent pointers its parent pointers on disk; failing those, the disk's
//! directory tree, read from the root down once, at the first need, up to
//! [`MAX_WALK`] directories. An inode that cannot be placed (damaged,
//! freed, made and written back in a part of the log that is gone) leaves
//! the path out rather than guess.

use super::track::EntriesBefore;
use super::OpsReport;
use crate::xfs::format::dir2::XFS_DIR3_FT_DIR;
use crate::xfs::format::sb::XFS_SB_FEAT_INCOMPAT_PARENT;
use crate::xfs::fs::Fs;
use crate::xfs::read::ReadAt;
use crate::xfs::types::Ino;
use std::collections::HashMap;

/// Levels followed up to the root before giving up (a loop or damage).
const MAX_DEPTH: usize = 256;
/// At most this many directory paths are kept.
const MAX_KEPT_PATHS: usize = 100_000;
/// At most this many parent pointers are taken from one inode.
const MAX_PARENTS: usize = 16;
/// At most this many directories are read, and entries kept, when the
/// disk's directory tree is read to place inodes.
pub const MAX_WALK: usize = 8192;
const MAX_WALK_ENTRIES: usize = 1 << 20;

struct Places<'a, R: ReadAt> {
    fs: &'a Fs<R>,
    root: u64,
    /// Inode -> the (directory, name) of its entries; empty: known to have
    /// none (removed) or not placeable.
    entry: HashMap<u64, Vec<(u64, Vec<u8>)>>,
    /// The other way: (directory, name) -> inode.
    owner: HashMap<(u64, Vec<u8>), u64>,
    /// Paths of directories found so far (see [`Places::dir_path`]).
    dir_paths: HashMap<u64, Vec<u8>>,
    /// Entries as directories held them before the log changed them.
    before: &'a EntriesBefore,
    /// Inode -> its entries in the disk's directory tree (read at the
    /// first need).
    disk_tree: Option<EntriesBefore>,
}

impl<R: ReadAt> Places<'_, R> {
    /// Where directory `dir` is on disk before the log: its `..`, and the
    /// name its parent lists it under.
    fn place_on_disk(&self, dir: u64) -> Option<(u64, Vec<u8>)> {
        let inode = self.fs.inode(Ino(dir)).ok()?;
        if inode.file_type() != crate::xfs::inode::FileType::Dir {
            return None;
        }
        let parent = self.fs.read_dir(&inode).ok()?.parent?.0;
        let pinode = self.fs.inode(Ino(parent)).ok()?;
        let listing = self.fs.read_dir(&pinode).ok()?;
        listing
            .entries
            .into_iter()
            .find(|e| e.ino.0 == dir && e.name != b"." && e.name != b"..")
            .map(|e| (parent, e.name))
    }

    /// Where `ino` was before the log moved it: a directory's `..` and
    /// its entry there on disk; else the entries the log's first copies of
    /// directories held; else its parent pointers on disk.
    fn places_before(&mut self, ino: u64) -> Vec<(u64, Vec<u8>)> {
        if let Some(p) = self.place_on_disk(ino) {
            return vec![p];
        }
        if let Some(v) = self.before.get(&ino) {
            if !v.is_empty() {
                return v.clone();
            }
        }
        let parents = self.parent_pointers(ino);
        if !parents.is_empty() {
            return parents;
        }
        self.disk_tree().get(&ino).cloned().unwrap_or_default()
    }

    /// `ino`'s parent pointers on disk (filesystems with them).
    fn parent_pointers(&self, ino: u64) -> Vec<(u64, Vec<u8>)> {
        if self.fs.sb.features_incompat & XFS_SB_FEAT_INCOMPAT_PARENT == 0 {
            return Vec::new();
        }
        let Ok(inode) = self.fs.inode(Ino(ino)) else {
            return Vec::new();
        };
        let Ok(attrs) = self.fs.read_attrs(&inode) else {
            return Vec::new();
        };
        attrs
            .entries
            .iter()
            .filter_map(|e| e.parent_pointer().map(|(p, _)| (p.0, e.name.clone())))
            .take(MAX_PARENTS)
            .collect()
    }

    /// Every inode's entries in the disk's directory tree, read from the
    /// root down (breadth first, at most [`MAX_WALK`] directories) the
    /// first time it is asked for.
    fn disk_tree(&mut self) -> &EntriesBefore {
        let fs = self.fs;
        let root = self.root;
        self.disk_tree.get_or_insert_with(|| {
            let mut map: EntriesBefore = HashMap::new();
            let mut queue = std::collections::VecDeque::from([root]);
            let mut queued = std::collections::HashSet::from([root]);
            let (mut dirs, mut entries) = (0usize, 0usize);
            while let Some(d) = queue.pop_front() {
                if dirs >= MAX_WALK || entries >= MAX_WALK_ENTRIES {
                    break;
                }
                dirs = dirs.saturating_add(1);
                let Ok(inode) = fs.inode(Ino(d)) else {
                    continue;
                };
                if inode.file_type() != crate::xfs::inode::FileType::Dir {
                    continue;
                }
                let Ok(listing) = fs.read_dir(&inode) else {
                    continue;
                };
                for e in listing.entries {
                    if e.name == b"." || e.name == b".." {
                        continue;
                    }
                    entries = entries.saturating_add(1);
                    // Without file types in entries, every entry is looked
                    // at (and counted as a directory read).
                    let dir = e.ftype.is_none_or(|f| f.0 == XFS_DIR3_FT_DIR);
                    if dir && queued.len() < MAX_WALK && queued.insert(e.ino.0) {
                        queue.push_back(e.ino.0);
                    }
                    let v = map.entry(e.ino.0).or_default();
                    if v.len() < MAX_PARENTS {
                        v.push((d, e.name));
                    }
                }
            }
            map
        })
    }

    /// Make `ino`'s entries known: the log's, or those before it.
    fn learn(&mut self, ino: u64) {
        if self.entry.contains_key(&ino) {
            return;
        }
        let places = self.places_before(ino);
        self.entry.insert(ino, Vec::new());
        for at in places {
            if !self.owner.contains_key(&at) {
                self.add(ino, at, false);
            }
        }
    }

    /// The path of directory `dir` ("" for the root), or `None`. Paths
    /// found are kept for every directory on the way up, until an entry
    /// of a directory with a kept path changes.
    fn dir_path(&mut self, dir: u64) -> Option<Vec<u8>> {
        if dir == self.root {
            return Some(Vec::new());
        }
        if let Some(p) = self.dir_paths.get(&dir) {
            return Some(p.clone());
        }
        // Up to the root or a directory whose path is kept.
        let mut chain: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut cur = dir;
        let mut base: Option<Vec<u8>> = None;
        for _ in 0..MAX_DEPTH {
            if cur == self.root {
                base = Some(Vec::new());
                break;
            }
            if let Some(p) = self.dir_paths.get(&cur) {
                base = Some(p.clone());
                break;
            }
            self.learn(cur);
            let place = self.entry.get(&cur).and_then(|p| p.first().cloned());
            let (parent, name) = place?;
            chain.push((cur, name));
            cur = parent;
        }
        let mut out = base?;
        for (ino, name) in chain.into_iter().rev() {
            out.push(b'/');
            out.extend_from_slice(&name);
            if self.dir_paths.len() < MAX_KEPT_PATHS {
                self.dir_paths.insert(ino, out.clone());
            }
        }
        Some(out)
    }

    /// `ino`'s entries change: kept paths through it are no longer right.
    fn moved(&mut self, ino: u64) {
        if self.dir_paths.contains_key(&ino) {
            self.dir_paths.clear();
        }
    }

    /// Whatever inode the log gave the entry `(dir, name)` loses it (a
    /// rename or link over it, a name used again).
    fn take_name(&mut self, at: &(u64, Vec<u8>)) {
        if let Some(o) = self.owner.remove(at) {
            self.moved(o);
            if let Some(v) = self.entry.get_mut(&o) {
                v.retain(|x| x != at);
            }
        }
    }

    /// Give `ino` the entry `at` too (or only it, with `only`).
    fn add(&mut self, ino: u64, at: (u64, Vec<u8>), only: bool) {
        self.take_name(&at);
        self.moved(ino);
        let e = self.entry.entry(ino).or_default();
        if only {
            for old in e.drain(..) {
                self.owner.remove(&old);
            }
        }
        self.owner.insert(at.clone(), ino);
        e.push(at);
    }

    /// `ino` loses the entry `at`.
    fn remove(&mut self, ino: u64, at: &(u64, Vec<u8>)) {
        self.moved(ino);
        if self.owner.get(at) == Some(&ino) {
            self.owner.remove(at);
        }
        self.entry.entry(ino).or_default().retain(|x| x != at);
    }

    fn path(&mut self, dir: u64, name: &str) -> Option<String> {
        let mut p = self.dir_path(dir)?;
        p.push(b'/');
        p.extend_from_slice(name.as_bytes());
        Some(String::from_utf8_lossy(&p).into_owned())
    }
}

/// Fill `path` (and `to_path` for renames) of every operation in `rep`.
pub fn fill<R: ReadAt>(fs: &Fs<R>, rep: &mut OpsReport, before: &EntriesBefore) {
    let mut pl = Places {
        fs,
        root: fs.sb.rootino,
        entry: HashMap::new(),
        owner: HashMap::new(),
        dir_paths: HashMap::new(),
        before,
        disk_tree: None,
    };
    // The entry each removed inode had last (an operation on it later in
    // the list, as in the checkpoint that removed it, is named there).
    let mut gone: HashMap<u64, (u64, Vec<u8>)> = HashMap::new();
    for op in &mut rep.operation_list {
        match (op.dir, op.name.clone()) {
            (Some(dir), Some(name)) => {
                op.path = pl.path(dir, &name);
                let here = (dir, name.clone().into_bytes());
                match op.kind {
                    // A new inode (its number may be a freed one's again).
                    "create" | "mkdir" | "mknod" | "symlink" => {
                        gone.remove(&op.ino);
                        pl.add(op.ino, here, true);
                    }
                    "link" => pl.add(op.ino, here, false),
                    "unlink" | "rmdir" => {
                        pl.remove(op.ino, &here);
                        if gone.len() < MAX_KEPT_PATHS {
                            gone.insert(op.ino, here);
                        }
                    }
                    "rename" => {
                        if let (Some(td), Some(tn)) = (op.to_dir, op.to_name.clone()) {
                            op.to_path = pl.path(td, &tn);
                            // Over an existing entry: its inode loses it.
                            pl.remove(op.ino, &here);
                            pl.add(op.ino, (td, tn.into_bytes()), false);
                        }
                    }
                    _ => {}
                }
            }
            _ => {
                // An operation on an inode: the entries the log gave it
                // (all of them, when it has several links), else those it
                // had before the log.
                if op.ino == pl.root && !pl.entry.contains_key(&op.ino) {
                    op.path = Some("/".to_string());
                    continue;
                }
                pl.learn(op.ino);
                let mut names = pl.entry.get(&op.ino).cloned().unwrap_or_default();
                if names.is_empty() {
                    // Removed by an operation before it in the list: the
                    // entry it had last.
                    names.extend(gone.get(&op.ino).cloned());
                }
                if names.len() > 1 {
                    op.links = names
                        .into_iter()
                        .filter_map(|(d, n)| pl.path(d, &String::from_utf8_lossy(&n)))
                        .collect();
                } else {
                    op.path = names
                        .first()
                        .and_then(|(d, n)| pl.path(*d, &String::from_utf8_lossy(n)));
                }
            }
        }
    }
}
