//! Paths: looking a path up from the root directory, and walking a whole
//! subtree.
//!
//! Paths are bytes (`/a/b/c`). Lookup starts at `sb_rootino`, takes `.` and
//! `..` as the directory entries they are, and never follows symlinks: a
//! symlink in the middle of a path is an error, at the end it is the answer.
//! The walk lists every object under a directory, depth first, with a guard
//! against directory cycles (a directory reached a second time is reported,
//! not entered) and caps on depth and size.

use std::collections::HashSet;

use serde::Serialize;

use crate::xfs::dir::{DirListing, Ftype};
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::dir2::XFS_DIR3_FT_DIR;
use crate::xfs::fs::Fs;
use crate::xfs::inode::{FileType, Inode};
use crate::xfs::read::ReadAt;
use crate::xfs::types::Ino;

/// The deepest path the walk follows (directories nested in directories).
pub const MAX_DEPTH: usize = 4096;
/// The most objects one walk lists.
pub const MAX_WALK_ITEMS: usize = 1 << 26;
/// The most components a looked-up path may have.
pub const MAX_PATH_COMPONENTS: usize = 4096;

fn path_err(path: &[u8], detail: impl Into<String>) -> Error {
    Error::corrupt(
        "path",
        Location::Path {
            path: String::from_utf8_lossy(path).into_owned(),
        },
        detail.into(),
    )
}

/// `path` made canonical without looking anything up: `/` separated, no
/// empty or `.` components, `..` taking off the last component (symlinks
/// are never followed, so this is what lookup would do).
pub fn normalize(path: &[u8]) -> Vec<u8> {
    let mut parts: Vec<&[u8]> = Vec::new();
    for c in path.split(|&b| b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    join_components(&parts)
}

fn join_components(parts: &[&[u8]]) -> Vec<u8> {
    if parts.is_empty() {
        return b"/".to_vec();
    }
    let mut out = Vec::new();
    for p in parts {
        out.push(b'/');
        out.extend_from_slice(p);
    }
    out
}

/// `dir` + `/` + `name`.
pub fn child_path(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = dir.to_vec();
    if p.last() != Some(&b'/') {
        p.push(b'/');
    }
    p.extend_from_slice(name);
    p
}

/// One object found by a walk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WalkItem {
    pub path: Vec<u8>,
    pub ino: Ino,
    /// The type byte of its directory entry (`None` for the starting point,
    /// or without FTYPE).
    pub ftype: Option<Ftype>,
}

/// Something the walk could not read, and where.
#[derive(Clone, Debug)]
pub struct WalkError {
    pub path: Vec<u8>,
    pub error: Error,
}

/// What a walk found.
#[derive(Clone, Debug, Default)]
pub struct Walk {
    /// Every object, the starting point first, then depth first.
    pub items: Vec<WalkItem>,
    pub errors: Vec<WalkError>,
}

impl<R: ReadAt> Fs<R> {
    /// The root directory's inode number.
    pub fn root_ino(&self) -> Ino {
        Ino(self.sb.rootino)
    }

    /// The root of the metadata directory tree, on a filesystem that has
    /// one (incompat METADIR).
    pub fn metadir_ino(&self) -> Option<Ino> {
        (self.geo.v5
            && self.sb.features_incompat & crate::xfs::format::sb::XFS_SB_FEAT_INCOMPAT_METADIR
                != 0)
            .then_some(Ino(self.sb.metadirino))
    }

    /// Look `path` up from the root directory. Symlinks are not followed.
    pub fn lookup_path(&self, path: &[u8]) -> Result<Inode> {
        self.lookup_path_from(self.root_ino(), path)
    }

    /// Look `path` up from the directory `root` (the root directory, or the
    /// metadata directory tree's).
    pub fn lookup_path_from(&self, root: Ino, path: &[u8]) -> Result<Inode> {
        let mut cur = self.inode(root)?;
        let mut done: Vec<&[u8]> = Vec::new();
        let comps: Vec<&[u8]> = path
            .split(|&b| b == b'/')
            .filter(|c| !c.is_empty())
            .collect();
        if comps.len() > MAX_PATH_COMPONENTS {
            return Err(path_err(
                path,
                format!("more than {MAX_PATH_COMPONENTS} components"),
            ));
        }
        for c in comps {
            if c == b"." {
                continue;
            }
            let here = join_components(&done);
            match cur.file_type() {
                FileType::Dir => {}
                FileType::Symlink => {
                    return Err(path_err(&here, "is a symlink (symlinks are not followed)"))
                }
                t => {
                    return Err(path_err(
                        &here,
                        format!("is a {}, not a directory", t.name()),
                    ))
                }
            }
            let Some(e) = self.dir_lookup(&cur, c)? else {
                return Err(path_err(&child_path(&here, c), "no such file or directory"));
            };
            cur = self.inode(e.ino)?;
            if c == b".." {
                done.pop();
            } else {
                done.push(c);
            }
        }
        Ok(cur)
    }

    /// List `start` (an inode reached as `path`) and, if it is a directory,
    /// everything below it.
    pub fn walk(&self, path: &[u8], start: &Inode) -> Walk {
        let mut w = Walk::default();
        w.items.push(WalkItem {
            path: path.to_vec(),
            ino: start.ino,
            ftype: None,
        });
        if start.file_type() != FileType::Dir {
            return w;
        }
        let mut visited: HashSet<Ino> = HashSet::new();
        visited.insert(start.ino);
        // (path, directory inode number, depth)
        let mut stack: Vec<(Vec<u8>, Ino, usize)> = vec![(path.to_vec(), start.ino, 0)];
        while let Some((dpath, dino, depth)) = stack.pop() {
            let listing = match self.inode(dino).and_then(|i| self.read_dir(&i)) {
                Ok(l) => l,
                Err(error) => {
                    w.errors.push(WalkError { path: dpath, error });
                    continue;
                }
            };
            let DirListing {
                entries, problems, ..
            } = listing;
            for error in problems {
                w.errors.push(WalkError {
                    path: dpath.clone(),
                    error,
                });
            }
            let mut subdirs = Vec::new();
            for e in entries {
                if e.name == b"." || e.name == b".." {
                    continue;
                }
                if w.items.len() >= MAX_WALK_ITEMS {
                    w.errors.push(WalkError {
                        path: dpath.clone(),
                        error: path_err(
                            &dpath,
                            format!("more than {MAX_WALK_ITEMS} objects; the walk stops"),
                        ),
                    });
                    return w;
                }
                let p = child_path(&dpath, &e.name);
                let is_dir = match e.ftype {
                    Some(f) => f.0 == XFS_DIR3_FT_DIR,
                    None => self
                        .inode(e.ino)
                        .map(|i| i.file_type() == FileType::Dir)
                        .unwrap_or(false),
                };
                if is_dir {
                    if !visited.insert(e.ino) {
                        w.errors.push(WalkError {
                            path: p.clone(),
                            error: path_err(
                                &p,
                                format!(
                                    "directory inode {} was already reached by another path (a cycle or a hard-linked directory); not entered again",
                                    e.ino.0
                                ),
                            ),
                        });
                    } else if depth.saturating_add(1) >= MAX_DEPTH {
                        w.errors.push(WalkError {
                            path: p.clone(),
                            error: path_err(
                                &p,
                                format!("deeper than {MAX_DEPTH} levels; not entered"),
                            ),
                        });
                    } else {
                        subdirs.push((p.clone(), e.ino, depth.saturating_add(1)));
                    }
                }
                w.items.push(WalkItem {
                    path: p,
                    ino: e.ino,
                    ftype: e.ftype,
                });
            }
            // Depth first, in directory order.
            stack.extend(subdirs.into_iter().rev());
        }
        w
    }
}
