//! `xfs-explorer ls`: list a directory, or a whole subtree with `-R`, as
//! `ls -l` would on the mounted filesystem; `--json` prints one object per
//! line, in the same form as the kernel-made listings of the test fixtures
//! (`tests/fixtures/make/kernel_listing.py`):
//!
//! `path ino type mode nlink uid gid size [sha256] [target] [rdev] xattrs_sha256`
//!
//! On a metadump a file whose blocks hold data has `"content": "absent"` in
//! place of `sha256`: the dump copies no file data.
//!
//! An object that cannot be read gets an error line (`{"path", "error"}` in
//! JSON) where it would have been, the listing goes on, and the command
//! fails at the end.

use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::xfs::attr::linux_xattrs;
use crate::xfs::dir::Ftype;
use crate::xfs::format::dir2::*;
use crate::xfs::fs::Fs;
use crate::xfs::inode::{rdev_major_minor, FileType, Inode};
use crate::xfs::read::ReadAt;
use crate::xfs::tree::{child_path, normalize, WalkItem};
use crate::xfs::Error;

use super::open_fs;

/// Bytes as text: UTF-8 as it is, any other byte as `\xNN`.
pub fn bytes_text(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len());
    for chunk in b.utf8_chunks() {
        s.push_str(chunk.valid());
        for x in chunk.invalid() {
            s.push_str(&format!("\\x{x:02x}"));
        }
    }
    s
}

fn ftype_matches(f: Ftype, t: FileType) -> bool {
    matches!(
        (f.0, t),
        (XFS_DIR3_FT_UNKNOWN, _)
            | (XFS_DIR3_FT_REG_FILE, FileType::File)
            | (XFS_DIR3_FT_DIR, FileType::Dir)
            | (XFS_DIR3_FT_CHRDEV, FileType::CharDev)
            | (XFS_DIR3_FT_BLKDEV, FileType::BlockDev)
            | (XFS_DIR3_FT_FIFO, FileType::Fifo)
            | (XFS_DIR3_FT_SOCK, FileType::Socket)
            | (XFS_DIR3_FT_SYMLINK, FileType::Symlink)
    )
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// One line of output.
enum Line {
    Entry(Box<Map<String, Value>>),
    Error(String),
}

/// Everything `ls --json` says about one object; errors found on the way
/// come as extra lines. Without `hashes` (the text form) file content and
/// attribute values are not read.
pub fn describe<R: ReadAt>(
    fs: &Fs<R>,
    item: &WalkItem,
    hashes: bool,
    out: &mut Vec<(Vec<u8>, String)>,
) -> Option<Map<String, Value>> {
    let mut err = |e: String| out.push((item.path.clone(), e));
    let inode = match fs.inode(item.ino) {
        Ok(i) => i,
        Err(e) => {
            err(e.to_string());
            return None;
        }
    };
    for p in &inode.verify.problems {
        err(format!("inode {}: {p}", item.ino.0));
    }
    let t = inode.file_type();
    if let Some(f) = item.ftype {
        if !ftype_matches(f, t) {
            err(format!(
                "the directory entry says {} but inode {} is a {}",
                f.name(),
                item.ino.0,
                t.short_name()
            ));
        }
    }
    let mut m = Map::new();
    m.insert("path".into(), Value::from(bytes_text(&item.path)));
    m.insert("ino".into(), Value::from(item.ino.0));
    m.insert("type".into(), Value::from(t.short_name()));
    m.insert("mode".into(), Value::from(inode.core.perm()));
    m.insert("nlink".into(), Value::from(nlink(&inode)));
    m.insert("uid".into(), Value::from(inode.core.uid));
    m.insert("gid".into(), Value::from(inode.core.gid));
    m.insert("size".into(), Value::from(inode.core.size));
    match t {
        FileType::File if !hashes => {}
        // A metadump copies no file data: a file with written blocks has
        // contents that are not there (they would read as zeros). Holes
        // and unwritten extents are zeros on any disk, so those hash.
        FileType::File
            if super::METADUMP.load(std::sync::atomic::Ordering::Relaxed)
                && inode
                    .data
                    .extents()
                    .iter()
                    .any(|e| !e.unwritten && e.len > 0) =>
        {
            m.insert("content".into(), Value::from("absent"));
        }
        FileType::File => match file_sha256(fs, &inode) {
            Ok(h) => {
                m.insert("sha256".into(), Value::from(h));
            }
            Err(e) => {
                err(e.to_string());
                return None;
            }
        },
        FileType::Symlink => match fs.symlink_target(&inode) {
            Ok(target) => {
                m.insert("target".into(), Value::from(bytes_text(&target)));
            }
            Err(e) => {
                err(e.to_string());
                return None;
            }
        },
        FileType::CharDev | FileType::BlockDev => {
            let (maj, min) = rdev_major_minor(inode.rdev().unwrap_or(0));
            m.insert("rdev".into(), Value::from(vec![maj, min]));
        }
        _ => {}
    }
    if !hashes {
        return Some(m);
    }
    match xattrs_sha256(fs, &inode, &mut err) {
        Ok(x) => {
            m.insert("xattrs_sha256".into(), Value::Object(x));
        }
        Err(e) => {
            err(e.to_string());
            return None;
        }
    }
    Some(m)
}

/// The link count as stat shows it (v1 inodes keep it in `di_onlink`).
fn nlink(inode: &Inode) -> u32 {
    if inode.core.version == 1 {
        u32::from(inode.core.onlink)
    } else {
        inode.core.nlink
    }
}

fn file_sha256<R: ReadAt>(fs: &Fs<R>, inode: &Inode) -> Result<String, Error> {
    let mut h = Sha256::new();
    fs.read_file(inode, &mut |chunk| {
        h.update(chunk);
        Ok(())
    })?;
    Ok(hex(&h.finalize()))
}

fn xattrs_sha256<R: ReadAt>(
    fs: &Fs<R>,
    inode: &Inode,
    err: &mut dyn FnMut(String),
) -> Result<Map<String, Value>, Error> {
    let listing = fs.read_attrs(inode)?;
    for p in &listing.problems {
        err(p.to_string());
    }
    let mut m = Map::new();
    for x in linux_xattrs(&listing) {
        let v = fs.linux_xattr_value(inode, &x)?;
        m.insert(bytes_text(&x.name), Value::from(hex(&Sha256::digest(&v))));
    }
    Ok(m)
}

fn mode_text(t: FileType, perm: u16) -> String {
    let c = match t {
        FileType::Dir => 'd',
        FileType::File => '-',
        FileType::Symlink => 'l',
        FileType::CharDev => 'c',
        FileType::BlockDev => 'b',
        FileType::Fifo => 'p',
        FileType::Socket => 's',
        FileType::Unknown(_) => '?',
    };
    let mut s = String::from(c);
    let bit = |m: u16, ch: char| if perm & m != 0 { ch } else { '-' };
    let special = |x: bool, set: bool, lower: char, upper: char| match (x, set) {
        (true, true) => lower,
        (false, true) => upper,
        (true, false) => 'x',
        (false, false) => '-',
    };
    s.push(bit(0o400, 'r'));
    s.push(bit(0o200, 'w'));
    s.push(special(perm & 0o100 != 0, perm & 0o4000 != 0, 's', 'S'));
    s.push(bit(0o040, 'r'));
    s.push(bit(0o020, 'w'));
    s.push(special(perm & 0o010 != 0, perm & 0o2000 != 0, 's', 'S'));
    s.push(bit(0o004, 'r'));
    s.push(bit(0o002, 'w'));
    s.push(special(perm & 0o001 != 0, perm & 0o1000 != 0, 't', 'T'));
    s
}

fn entry_text(m: &Map<String, Value>) -> String {
    let g = |k: &str| m.get(k).cloned().unwrap_or(Value::Null);
    let t = match g("type").as_str() {
        Some("dir") => FileType::Dir,
        Some("file") => FileType::File,
        Some("symlink") => FileType::Symlink,
        Some("chardev") => FileType::CharDev,
        Some("blockdev") => FileType::BlockDev,
        Some("fifo") => FileType::Fifo,
        Some("socket") => FileType::Socket,
        _ => FileType::Unknown(0),
    };
    let perm = u16::try_from(g("mode").as_u64().unwrap_or(0)).unwrap_or(0);
    let size = match g("rdev").as_array() {
        Some(a) => format!(
            "{}, {}",
            a.first().and_then(Value::as_u64).unwrap_or(0),
            a.get(1).and_then(Value::as_u64).unwrap_or(0)
        ),
        None => g("size").to_string(),
    };
    let n = |k: &str| g(k).as_u64().unwrap_or(0);
    let mut s = format!(
        "{:>10} {} {:>3} {:>5} {:>5} {:>12} {}",
        n("ino"),
        mode_text(t, perm),
        n("nlink"),
        n("uid"),
        n("gid"),
        size,
        g("path").as_str().unwrap_or("")
    );
    if let Some(target) = g("target").as_str() {
        s.push_str(" -> ");
        s.push_str(target);
    }
    s.push('\n');
    s
}

pub fn run(
    image: &Path,
    path: Option<&std::ffi::OsStr>,
    recursive: bool,
    json: bool,
    metadir: bool,
) -> Result<(), String> {
    let fs = open_fs(image)?;
    let want = normalize(path.map_or(&b"/"[..], |p| p.as_encoded_bytes()));
    let at = |e: Error| format!("{}: {}: {e}", image.display(), bytes_text(&want));
    let start = if metadir {
        let root = fs.metadir_ino().ok_or_else(|| {
            format!(
                "{}: no metadata directory tree (the filesystem was not made with -m metadir=1)",
                image.display()
            )
        })?;
        fs.lookup_path_from(root, &want).map_err(at)?
    } else {
        fs.lookup_path(&want).map_err(at)?
    };
    let mut errors: Vec<(Vec<u8>, String)> = Vec::new();
    let mut items: Vec<WalkItem> = if recursive {
        let w = fs.walk(&want, &start);
        errors.extend(w.errors.into_iter().map(|e| (e.path, e.error.to_string())));
        w.items
    } else if start.file_type() == FileType::Dir {
        let l = fs.read_dir(&start).map_err(at)?;
        errors.extend(l.problems.iter().map(|e| (want.clone(), e.to_string())));
        l.entries
            .into_iter()
            .filter(|e| e.name != b"." && e.name != b"..")
            .map(|e| WalkItem {
                path: child_path(&want, &e.name),
                ino: e.ino,
                ftype: e.ftype,
            })
            .collect()
    } else {
        vec![WalkItem {
            path: want.clone(),
            ino: start.ino,
            ftype: None,
        }]
    };
    items.sort_by(|a, b| a.path.cmp(&b.path));
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut n_errors = 0usize;
    let mut emit = |line: Line, path: &[u8], out: &mut dyn Write| -> Result<(), String> {
        let text = match (line, json) {
            (Line::Entry(m), true) => {
                let mut s = serde_json::to_string(&*m).map_err(|e| e.to_string())?;
                s.push('\n');
                s
            }
            (Line::Entry(m), false) => entry_text(&m),
            (Line::Error(e), true) => {
                n_errors = n_errors.saturating_add(1);
                let mut m = Map::new();
                m.insert("path".into(), Value::from(bytes_text(path)));
                m.insert("error".into(), Value::from(e));
                let mut s = serde_json::to_string(&m).map_err(|e| e.to_string())?;
                s.push('\n');
                s
            }
            (Line::Error(e), false) => {
                n_errors = n_errors.saturating_add(1);
                format!("error: {}: {e}\n", bytes_text(path))
            }
        };
        out.write_all(text.as_bytes())
            .map_err(|e| format!("stdout: {e}"))
    };
    // Errors of the walk go with the first line at or after their path.
    errors.sort_by(|a, b| a.0.cmp(&b.0));
    let mut pending = errors.into_iter().peekable();
    for item in &items {
        let mut extra = Vec::new();
        let entry = describe(&fs, item, json, &mut extra);
        if let Some(m) = entry {
            emit(Line::Entry(Box::new(m)), &item.path, &mut out)?;
        }
        for (p, e) in extra {
            emit(Line::Error(e), &p, &mut out)?;
        }
        while let Some((p, e)) = pending.next_if(|(p, _)| *p <= item.path) {
            emit(Line::Error(e), &p, &mut out)?;
        }
    }
    for (p, e) in pending {
        emit(Line::Error(e), &p, &mut out)?;
    }
    out.flush().map_err(|e| format!("stdout: {e}"))?;
    if n_errors > 0 {
        return Err(format!(
            "{}: {n_errors} error(s) while listing {}",
            image.display(),
            bytes_text(&want)
        ));
    }
    Ok(())
}
