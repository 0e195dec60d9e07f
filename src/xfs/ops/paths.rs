//! Paths of the operations, as they were when each ran.
//!
//! The log names entries by directory inode and name. A directory's own
//! place (its parent and its name there) is taken from the operations
//! found before it in the log (mkdir, rename, link, create), or else from
//! the disk's state before the log (its `..` and its entry in that
//! parent): so a directory renamed later in the log still shows under the
//! name it had. Files get a path only from entry operations in the log (a
//! setxattr on a file made before the log has none); a directory that
//! cannot be placed (damaged, freed, unknown before the log) leaves the
//! path out rather than guess.

use super::OpsReport;
use crate::xfs::fs::Fs;
use crate::xfs::read::ReadAt;
use crate::xfs::types::Ino;
use std::collections::HashMap;

/// Levels followed up to the root before giving up (a loop or damage).
const MAX_DEPTH: usize = 256;
/// At most this many directory paths are kept.
const MAX_KEPT_PATHS: usize = 100_000;

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
            let place = match self.entry.get(&cur) {
                Some(p) => p.first().cloned(),
                None => {
                    let p = self.place_on_disk(cur);
                    self.entry.insert(cur, Vec::new());
                    if let Some(at) = &p {
                        if !self.owner.contains_key(at) {
                            self.add(cur, at.clone(), true);
                        }
                    }
                    p
                }
            };
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
pub fn fill<R: ReadAt>(fs: &Fs<R>, rep: &mut OpsReport) {
    let mut pl = Places {
        fs,
        root: fs.sb.rootino,
        entry: HashMap::new(),
        owner: HashMap::new(),
        dir_paths: HashMap::new(),
    };
    for op in &mut rep.operation_list {
        match (op.dir, op.name.clone()) {
            (Some(dir), Some(name)) => {
                op.path = pl.path(dir, &name);
                let here = (dir, name.clone().into_bytes());
                match op.kind {
                    // A new inode (its number may be a freed one's again).
                    "create" | "mkdir" | "mknod" | "symlink" => pl.add(op.ino, here, true),
                    "link" => pl.add(op.ino, here, false),
                    "unlink" | "rmdir" => pl.remove(op.ino, &here),
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
                // An operation on an inode: the entry the log gave it (all
                // of them, when it has several links); a directory's place
                // on disk otherwise.
                let names = pl.entry.get(&op.ino).cloned();
                match names {
                    Some(v) if v.len() > 1 => {
                        op.links = v
                            .into_iter()
                            .filter_map(|(d, n)| pl.path(d, &String::from_utf8_lossy(&n)))
                            .collect();
                    }
                    Some(v) => {
                        op.path = v
                            .first()
                            .and_then(|(d, n)| pl.path(*d, &String::from_utf8_lossy(n)));
                    }
                    None if op.ino == pl.root => op.path = Some("/".to_string()),
                    None => {
                        op.path = pl
                            .dir_path(op.ino)
                            .map(|p| String::from_utf8_lossy(&p).into_owned());
                    }
                }
            }
        }
    }
}
