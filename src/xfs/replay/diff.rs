//! What replay changed, read from both sides of the overlay: the image as
//! it is on disk and as replayed.
//!
//! ```text
//!  recovered sectors -> the blocks they belong to (ranges, named by magic)
//!                    -> inode slots whose bytes changed -> inodes:
//!                       created / freed / changed (which core fields)
//!  changed directories -> entries added and removed
//!  changed inodes      -> extended attributes added, removed, changed
//! ```

use crate::xfs::fs::{be16, be32, be64, Fs};
use crate::xfs::inode::{Inode, InodeCore};
use crate::xfs::read::ReadAt;
use crate::xfs::types::Ino;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

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
    pub xattrs: Vec<XattrChange>,
    pub blocks: Vec<BlockRange>,
    /// Some inodes were not looked at (more than the limit changed).
    pub truncated: bool,
    pub problems: Vec<String>,
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

/// What a block is, by its magic.
pub fn block_kind(b: &[u8]) -> &'static str {
    match be32(b, 0).unwrap_or(0) {
        0x5846_5342 => "superblock",
        0x5841_4746 => "agf",
        0x5841_4749 => "agi",
        0x5841_464c => "agfl",
        0x4142_3342 | 0x4142_5442 => "bnobt",
        0x4142_3343 | 0x4142_5443 => "cntbt",
        0x4941_4233 | 0x4941_4254 => "inobt",
        0x4649_4233 | 0x4649_4254 => "finobt",
        0x524d_4233 => "rmapbt",
        0x5233_4643 => "refcountbt",
        0x424d_4133 | 0x424d_4150 => "bmbt",
        0x5844_4233 | 0x5844_3242 => "dir block",
        0x5844_4433 | 0x5844_3244 => "dir data",
        0x5844_4633 | 0x5844_3246 => "dir free",
        0x5853_4c4d => "symlink",
        0x5841_524d => "attr remote",
        _ => match be16(b, 8).unwrap_or(0) {
            0x3df1 | 0xd2f1 => "dir leaf",
            0x3dff | 0xd2ff => "dir leafn",
            0x3ebe | 0xfebe => "da node",
            0x3bee | 0xfbee => "attr leaf",
            _ => {
                if be16(b, 0) == Some(0x494e) {
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

/// The inode of each changed inode slot in recovered sectors.
fn changed_slots<R: ReadAt>(fs: &mut Fs<R>, limit: usize, truncated: &mut bool) -> Vec<u64> {
    let g = fs.geo;
    let isz = u64::from(g.inodesize).max(1);
    let shift = u32::from(g.blocklog).saturating_sub(9);
    let blocks: BTreeSet<u64> = fs
        .img
        .overlay()
        .sectors()
        .map(|(d, _)| d >> shift)
        .collect();
    let mut out = Vec::new();
    for lin in blocks {
        let off = lin.saturating_mul(u64::from(g.blocksize));
        fs.img.set_use_overlay(false);
        let before = fs.img.read("inode block", off, u64::from(g.blocksize));
        fs.img.set_use_overlay(true);
        let after = fs.img.read("inode block", off, u64::from(g.blocksize));
        let (Ok(before), Ok(after)) = (before, after) else {
            continue;
        };
        let agno = lin.checked_div(u64::from(g.agblocks)).unwrap_or(0);
        let agbno = lin.checked_rem(u64::from(g.agblocks)).unwrap_or(0);
        for (slot, (a, b)) in before
            .chunks(usize::try_from(isz).unwrap_or(512))
            .zip(after.chunks(usize::try_from(isz).unwrap_or(512)))
            .enumerate()
        {
            if a == b || (be16(a, 0) != Some(0x494e) && be16(b, 0) != Some(0x494e)) {
                continue;
            }
            let ino = (agno << (u32::from(g.agblklog).saturating_add(u32::from(g.inopblog))))
                | (agbno << g.inopblog)
                | u64::try_from(slot).unwrap_or(0);
            // On v5 an inode says its own number: skip blocks that only
            // look like inodes.
            if g.v5 && be16(b, 0) == Some(0x494e) && be64(b, 152) != Some(ino) {
                continue;
            }
            if out.len() >= limit {
                *truncated = true;
                return out;
            }
            out.push(ino);
        }
    }
    out
}

fn read_inode<R: ReadAt>(fs: &mut Fs<R>, replayed: bool, ino: u64) -> Option<Inode> {
    fs.img.set_use_overlay(replayed);
    let i = fs.inode(Ino(ino)).ok();
    fs.img.set_use_overlay(true);
    i.filter(|i| i.core.magic == 0x494e)
}

fn entries<R: ReadAt>(fs: &mut Fs<R>, replayed: bool, inode: &Inode) -> BTreeMap<Vec<u8>, u64> {
    fs.img.set_use_overlay(replayed);
    let l = fs.read_dir(inode).ok();
    fs.img.set_use_overlay(true);
    l.map(|l| {
        l.entries
            .into_iter()
            .filter(|e| e.name != b"." && e.name != b"..")
            .map(|e| (e.name, e.ino.0))
            .collect()
    })
    .unwrap_or_default()
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
    let was = fs.img.uses_overlay();
    let mut d = ReplayDiff::default();
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
    let inos = changed_slots(fs, limit, &mut d.truncated);
    for ino in inos {
        let before = read_inode(fs, false, ino);
        let after = read_inode(fs, true, ino);
        let in_use = |i: &Option<Inode>| i.as_ref().is_some_and(|i| i.core.mode != 0);
        let change = match (in_use(&before), in_use(&after)) {
            (false, false) => continue,
            (false, true) => "created",
            (true, false) => "freed",
            (true, true) => "changed",
        };
        let fields = match (&before, &after) {
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
        };
        let shown = if change == "freed" { &before } else { &after };
        let file_type = shown.as_ref().map_or("unknown", |i| i.file_type().name());
        d.inodes.push(InodeChange {
            ino,
            change,
            file_type,
            fields,
        });
        let is_dir = |i: &Option<Inode>| {
            i.as_ref().is_some_and(|i| {
                i.core.mode != 0 && i.file_type() == crate::xfs::inode::FileType::Dir
            })
        };
        if is_dir(&before) || is_dir(&after) {
            let eb = before
                .as_ref()
                .filter(|_| is_dir(&before))
                .map(|i| entries(fs, false, i))
                .unwrap_or_default();
            let ea = after
                .as_ref()
                .filter(|_| is_dir(&after))
                .map(|i| entries(fs, true, i))
                .unwrap_or_default();
            for (name, i) in &ea {
                if eb.get(name) != Some(i) {
                    d.entries.push(EntryChange {
                        dir: ino,
                        name: text(name),
                        ino: *i,
                        change: "added",
                    });
                }
            }
            for (name, i) in &eb {
                if ea.get(name) != Some(i) {
                    d.entries.push(EntryChange {
                        dir: ino,
                        name: text(name),
                        ino: *i,
                        change: "removed",
                    });
                }
            }
        }
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
    fs.img.set_use_overlay(was);
    d
}
