//! Worker side: core types turned into the display-ready views of
//! [`protocol`](crate::web::protocol).

use crate::web::protocol::{
    AgView, ExtentView, ForkView, InodeView, Kv, LayoutView, MAX_EXTENTS_SHOWN,
};
use crate::xfs::ag::{AgSummary, TreeStats};
use crate::xfs::bmap::Fork;
use crate::xfs::inode::{format_name, rdev_major_minor, Inode, Timestamp};
use crate::xfs::sb::{uuid_text, Field};

fn kv(name: &str, value: impl ToString, meaning: &str) -> Kv {
    Kv {
        name: name.to_string(),
        value: value.to_string(),
        meaning: meaning.to_string(),
    }
}

fn ts(t: &Timestamp) -> String {
    format!("{} ({}.{:09})", t.text(), t.sec, t.nsec)
}

pub fn fork_view(f: &Fork) -> ForkView {
    let extents = f.extents();
    let local_bytes = match f {
        Fork::Local { bytes } => bytes.clone(),
        _ => Vec::new(),
    };
    let (local_len, btree_level, error) = match f {
        Fork::Local { bytes } => (u64::try_from(bytes.len()).ok(), None, None),
        Fork::Btree { root_level, .. } => (None, Some(*root_level), None),
        Fork::Corrupt { error, .. } => (None, None, Some(error.to_string())),
        _ => (None, None, None),
    };
    ForkView {
        format: f.format(),
        format_name: format_name(f.format()).to_string(),
        extents: extents
            .iter()
            .take(MAX_EXTENTS_SHOWN)
            .map(|e| ExtentView {
                file_block: e.file_block,
                start: e.start.0,
                len: e.len,
                unwritten: e.unwritten,
                shared: e.shared,
            })
            .collect(),
        extent_count: u64::try_from(extents.len()).unwrap_or(u64::MAX),
        local_len,
        local_bytes,
        btree_level,
        error,
    }
}

pub fn inode_view(i: &Inode, path: Option<String>) -> InodeView {
    let c = &i.core;
    let mut f = vec![
        kv("magic", format!("{:#06x}", c.magic), "\"IN\""),
        kv(
            "mode",
            format!("{:o}", c.mode),
            "file type and permission bits (octal)",
        ),
        kv("version", c.version, "inode version (3 on v5 filesystems)"),
        kv(
            "format",
            format!("{} ({})", c.format, format_name(c.format)),
            "data fork format",
        ),
        kv("uid", c.uid, "owner"),
        kv("gid", c.gid, "group"),
        kv("nlink", c.nlink, "hard links"),
        kv("projid", c.projid, "project id"),
        kv("atime", ts(&c.atime), "last access"),
        kv("mtime", ts(&c.mtime), "last content change"),
        kv("ctime", ts(&c.ctime), "last inode change"),
        kv("size", c.size, "size in bytes"),
        kv(
            "nblocks",
            c.nblocks,
            "blocks used, including btree and attr blocks",
        ),
        kv("extsize", c.extsize, "extent size hint in blocks"),
        kv("nextents", c.nextents, "data fork extents"),
        kv("anextents", c.anextents, "attr fork extents"),
        kv(
            "forkoff",
            c.forkoff,
            "attr fork offset in 8-byte units after the core (0: no attr fork)",
        ),
        kv(
            "aformat",
            format!("{} ({})", c.aformat, format_name(c.aformat)),
            "attr fork format",
        ),
        kv(
            "flags",
            format!("{:#x} {}", c.flags, c.flag_names().join(",")),
            "inode flags",
        ),
        kv("gen", c.gen, "generation number"),
        kv(
            "next_unlinked",
            c.next_unlinked,
            "next inode on the unlinked list (0xffffffff: none)",
        ),
    ];
    if let Some(v) = c.crc {
        f.push(kv("crc", format!("{v:#010x}"), "CRC32c of the inode"));
    }
    if let Some(v) = c.changecount {
        f.push(kv("changecount", v, "times the inode changed"));
    }
    if let Some(v) = c.lsn {
        f.push(kv(
            "lsn",
            format!("{}:{}", v >> 32, v & 0xffff_ffff),
            "log sequence number of the last write",
        ));
    }
    if let Some(v) = c.flags2 {
        f.push(kv(
            "flags2",
            format!("{v:#x} {}", c.flag2_names().join(",")),
            "more inode flags",
        ));
    }
    if let Some(v) = c.cowextsize {
        f.push(kv("cowextsize", v, "copy-on-write extent size hint"));
    }
    if let Some(t) = &c.crtime {
        f.push(kv("crtime", ts(t), "creation time"));
    }
    if let Some(v) = c.ino {
        f.push(kv("ino", v, "the inode's own number"));
    }
    if let Some(u) = &c.uuid {
        f.push(kv("uuid", uuid_text(u), "filesystem metadata uuid"));
    }
    let l = &i.layout;
    let loc = &i.location;
    InodeView {
        ino: i.ino.0,
        path,
        kind: i.file_type().short_name().to_string(),
        fields: f,
        format: c.format,
        format_name: format_name(c.format).to_string(),
        aformat: c.aformat,
        aformat_name: format_name(c.aformat).to_string(),
        nextents: c.nextents,
        anextents: u64::from(c.anextents),
        size: c.size,
        layout: LayoutView {
            inode_bytes: l.inode_bytes,
            core_bytes: l.core_bytes,
            literal_bytes: l.literal_bytes,
            forkoff: l.forkoff,
            data_fork_offset: l.data_fork_offset,
            data_fork_bytes: l.data_fork_bytes,
            data_fork_used_bytes: l.data_fork_used_bytes,
            attr_fork_offset: l.attr_fork_offset,
            attr_fork_bytes: l.attr_fork_bytes,
            default_forkoff: l.default_forkoff,
            max_forkoff: l.max_forkoff,
            reading_tag: l.reading_tag.tag().to_string(),
            reading: l.reading.clone(),
        },
        data: fork_view(&i.data),
        attr: i.attr.as_ref().map(fork_view),
        xattrs: Vec::new(),
        parents: Vec::new(),
        xattr_error: None,
        symlink: None,
        rdev: i.rdev().map(rdev_major_minor),
        daddr: loc.daddr.0,
        location: format!(
            "AG {} block {} slot {} (daddr {}, byte {})",
            loc.agno.0, loc.agbno.0, loc.slot, loc.daddr.0, loc.byte_offset
        ),
        problems: i.verify.problems.clone(),
        crc_ok: c.crc.map(|_| i.verify.crc_ok),
    }
}

fn field_kvs(fields: Vec<Field>) -> Vec<Kv> {
    fields
        .into_iter()
        .map(|f| Kv {
            name: f.name.to_string(),
            value: match f.note {
                Some(n) => format!("{} ({n})", f.value),
                None => f.value.to_string(),
            },
            meaning: f.meaning.to_string(),
        })
        .collect()
}

pub fn ag_view(s: &AgSummary) -> AgView {
    let mut summary = Vec::new();
    for t in &s.trees {
        let what = match t.stats {
            TreeStats::Free { free_blocks, longest } => format!("{free_blocks} free blocks, longest {longest}"),
            TreeStats::Inodes { chunks, sparse_chunks, inodes, free } => {
                format!("{chunks} chunks ({sparse_chunks} sparse), {inodes} inodes, {free} free")
            }
            TreeStats::Rmap { mapped_blocks } => format!("{mapped_blocks} blocks mapped"),
            TreeStats::Refcount { shared_extents, shared_blocks, cow_extents, cow_blocks } => format!(
                "{shared_extents} shared extents ({shared_blocks} blocks), {cow_extents} CoW extents ({cow_blocks} blocks)"
            ),
        };
        summary.push(Kv {
            name: format!("{}bt", t.tree.name()),
            value: format!(
                "{} levels, {} blocks, {} records",
                t.levels, t.blocks, t.records
            ),
            meaning: what,
        });
    }
    let problems = s.all_problems();
    AgView {
        agno: s.agno.0,
        summary,
        agf: s
            .agf
            .as_ref()
            .map(|a| field_kvs(a.fields()))
            .unwrap_or_default(),
        agi: s
            .agi
            .as_ref()
            .map(|a| field_kvs(a.fields()))
            .unwrap_or_default(),
        problems,
    }
}

use crate::web::protocol::{DirView, EntryView, Response, XattrName};
use crate::web::worker::blob_reader::Disk;
use crate::xfs::attr::{linux_xattrs, AttrValue};
use crate::xfs::fs::Fs;
use crate::xfs::inode::FileType;
use crate::xfs::types::Ino;

fn view_error(what: impl Into<String>, message: impl ToString) -> Response {
    Response::ViewError {
        what: what.into(),
        message: message.to_string(),
    }
}

/// An inode with its symlink target and xattr names, as the inspector shows it.
pub fn inode(fs: &Fs<Disk>, ino: u64, path: Option<String>) -> Response {
    match fs.inode(Ino(ino)) {
        Ok(mut i) => {
            let _ = fs.mark_shared(&mut i);
            Response::Inode(Box::new(inode_full(fs, &i, path)))
        }
        Err(e) => view_error(format!("inode {ino}"), e),
    }
}

fn inode_full(fs: &Fs<Disk>, i: &Inode, path: Option<String>) -> InodeView {
    let mut v = inode_view(i, path);
    if i.file_type() == FileType::Symlink {
        match fs.symlink_target(i) {
            Ok(t) => v.symlink = Some(String::from_utf8_lossy(&t).into_owned()),
            Err(e) => v.problems.push(e.to_string()),
        }
    }
    if i.attr.is_some() {
        match fs.read_attrs(i) {
            Ok(listing) => {
                v.xattrs = linux_xattrs(&listing)
                    .into_iter()
                    .map(|x| XattrName {
                        name: String::from_utf8_lossy(&x.name).into_owned(),
                        value_len: x.entry.value.len(),
                        remote: matches!(x.entry.value, AttrValue::Remote { .. }),
                    })
                    .collect();
                v.parents = listing
                    .entries
                    .iter()
                    .filter(|e| matches!(e.namespace, crate::xfs::attr::AttrNamespace::Parent))
                    .map(|e| {
                        let p = e.parent_pointer();
                        crate::web::protocol::ParentView {
                            name: String::from_utf8_lossy(&e.name).into_owned(),
                            parent: p.map(|(ino, _)| ino.0),
                            gen: p.map_or(0, |(_, g)| g),
                        }
                    })
                    .collect();
                if !listing.problems.is_empty() {
                    v.xattr_error = Some(
                        listing
                            .problems
                            .iter()
                            .map(|e| e.to_string())
                            .collect::<Vec<_>>()
                            .join("; "),
                    );
                }
            }
            Err(e) => v.xattr_error = Some(e.to_string()),
        }
    }
    v
}

/// Resolve a path: a directory's listing, or an inode view.
pub fn path(fs: &Fs<Disk>, path: &str) -> Response {
    path_from(fs, fs.root_ino(), path, false)
}

/// A path of the metadata directory tree, as [`path`] (a filesystem
/// without the tree says so).
pub fn metadir_path(fs: &Fs<Disk>, path: &str) -> Response {
    match fs.metadir_ino() {
        Some(root) => path_from(fs, root, path, true),
        None => Response::ViewError {
            what: format!("metadata directory {path}"),
            message: "no metadata directory tree (the filesystem was not made with -m metadir=1)"
                .into(),
        },
    }
}

fn path_from(fs: &Fs<Disk>, root: Ino, path: &str, metadir: bool) -> Response {
    let mut i = match fs.lookup_path_from(root, path.as_bytes()) {
        Ok(i) => i,
        Err(e) => return view_error(path, e),
    };
    if i.file_type() != FileType::Dir {
        let _ = fs.mark_shared(&mut i);
        let label = if metadir {
            format!("metadir {path}")
        } else {
            path.to_string()
        };
        return Response::Inode(Box::new(inode_full(fs, &i, Some(label))));
    }
    let listing = match fs.read_dir(&i) {
        Ok(l) => l,
        Err(e) => return view_error(path, e),
    };
    let cap = crate::web::worker::caps().dir_entries;
    let named = || {
        listing
            .entries
            .iter()
            .filter(|e| e.name != b"." && e.name != b"..")
    };
    let listed = named().count();
    let entries = named()
        .take(cap)
        .map(|e| {
            let (kind, size, mode, error) = match fs.inode(e.ino) {
                Ok(c) => (
                    c.file_type().short_name().to_string(),
                    Some(c.core.size),
                    Some(c.core.perm()),
                    None,
                ),
                Err(err) => (
                    e.ftype.map_or("unknown", |f| f.name()).to_string(),
                    None,
                    None,
                    Some(err.to_string()),
                ),
            };
            EntryView {
                name: String::from_utf8_lossy(&e.name).into_owned(),
                ino: e.ino.0,
                kind,
                size,
                mode,
                error,
            }
        })
        .collect();
    Response::Dir(Box::new(DirView {
        path: path.to_string(),
        metadir,
        ino: i.ino.0,
        format: listing.format.name().to_string(),
        entries,
        problems: listing
            .problems
            .iter()
            .map(|e| e.to_string())
            .chain((listed > cap).then(|| {
                format!("{listed} entries: only the first {cap} are listed (DIR_ENTRIES_CAP)")
            }))
            .collect(),
    }))
}

pub fn xattr_value(fs: &Fs<Disk>, ino: u64, name: &str) -> Response {
    let what = format!("inode {ino} xattr {name}");
    let i = match fs.inode(Ino(ino)) {
        Ok(i) => i,
        Err(e) => return view_error(what, e),
    };
    let listing = match fs.read_attrs(&i) {
        Ok(l) => l,
        Err(e) => return view_error(what, e),
    };
    match linux_xattrs(&listing)
        .into_iter()
        .find(|x| x.name == name.as_bytes())
    {
        Some(x) => match fs.linux_xattr_value(&i, &x) {
            Ok(value) => Response::XattrValue {
                ino,
                name: name.to_string(),
                value,
            },
            Err(e) => view_error(what, e),
        },
        None => view_error(what, "no such attribute"),
    }
}

/// The subdirectories of `path` (in the metadata directory tree with
/// `metadir`), sorted by name.
pub fn tree_children(fs: &Fs<Disk>, path: &str, metadir: bool) -> Response {
    let root = if metadir {
        fs.metadir_ino()
    } else {
        Some(fs.root_ino())
    };
    let result = match root {
        Some(root) => fs
            .lookup_path_from(root, path.as_bytes())
            .and_then(|i| fs.read_dir(&i))
            .map_err(|e| e.to_string()),
        None => Err("no metadata directory tree".to_string()),
    };
    match result {
        Ok(listing) => {
            let mut dirs: Vec<String> = listing
                .entries
                .iter()
                .filter(|e| e.name != b"." && e.name != b"..")
                .filter(|e| match e.ftype {
                    Some(t) => t.name() == "dir",
                    None => fs
                        .inode(e.ino)
                        .is_ok_and(|i| i.file_type() == FileType::Dir),
                })
                .map(|e| String::from_utf8_lossy(&e.name).into_owned())
                .collect();
            crate::xfs::sort::by(&mut dirs, Ord::cmp);
            Response::TreeChildren {
                path: path.to_string(),
                dirs,
                error: None,
                metadir,
            }
        }
        Err(e) => Response::TreeChildren {
            path: path.to_string(),
            dirs: Vec::new(),
            error: Some(e),
            metadir,
        },
    }
}
