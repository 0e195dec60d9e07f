//! `xfs-explorer inode`: one inode, every core field, both forks, where the
//! attr fork starts and what that says about how it got there.

use crate::xfs::bmap::{Extent, Fork};
use crate::xfs::inode::{format_name, rdev_major_minor, Inode, Timestamp};
use crate::xfs::sb::uuid_text;
use crate::xfs::types::Ino;
use serde_json::{json, Map, Value};
use std::path::Path;

use super::open_fs;

pub fn run(path: &Path, ino: u64, json: bool) -> Result<(), String> {
    let fs = open_fs(path)?;
    let mut inode = fs
        .inode(Ino(ino))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // Sharing is extra: a damaged refcount btree leaves it unknown.
    let shared_error = fs.mark_shared(&mut inode).err();
    if let Some(e) = &shared_error {
        inode.verify.problems.push(format!("sharing unknown: {e}"));
    }
    let v = inode_json(&inode);
    let text = if json {
        let mut s = serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?;
        s.push('\n');
        s
    } else {
        inode_text(&inode)
    };
    super::print(&text)
}

fn ts_json(t: &Timestamp) -> Value {
    json!({ "sec": t.sec, "nsec": t.nsec, "raw": t.raw, "bigtime": t.bigtime, "text": t.text() })
}

fn extents_json(ext: &[Extent]) -> Value {
    Value::Array(
        ext.iter()
            .map(|e| {
                json!({
                    "file_block": e.file_block,
                    "start": e.start.0,
                    "len": e.len,
                    "unwritten": e.unwritten,
                    "shared": e.shared,
                })
            })
            .collect(),
    )
}

/// A fork as JSON: its kind and format, then what it holds.
pub fn fork_json(f: &Fork) -> Value {
    let mut m = Map::new();
    m.insert("format".into(), json!(f.format()));
    m.insert("format_name".into(), json!(format_name(f.format())));
    match f {
        Fork::Dev { rdev } => {
            let (major, minor) = rdev_major_minor(*rdev);
            m.insert("kind".into(), json!("dev"));
            m.insert("rdev".into(), json!(rdev));
            m.insert("major".into(), json!(major));
            m.insert("minor".into(), json!(minor));
        }
        Fork::Local { bytes } => {
            m.insert("kind".into(), json!("local"));
            m.insert("bytes_len".into(), json!(bytes.len()));
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            m.insert("bytes_hex".into(), json!(hex));
        }
        Fork::Extents { extents } => {
            m.insert("kind".into(), json!("extents"));
            m.insert("extents".into(), extents_json(extents));
        }
        Fork::Btree {
            root_level,
            extents,
            blocks,
        } => {
            m.insert("kind".into(), json!("btree"));
            m.insert("root_level".into(), json!(root_level));
            m.insert(
                "bmbt_blocks".into(),
                Value::Array(blocks.iter().map(|b| json!(b.0)).collect()),
            );
            m.insert("extents".into(), extents_json(extents));
        }
        Fork::Unknown { .. } => {
            m.insert("kind".into(), json!("unknown"));
        }
        Fork::Corrupt { error, .. } => {
            m.insert("kind".into(), json!("corrupt"));
            m.insert("error".into(), json!(error.to_string()));
        }
    }
    Value::Object(m)
}

/// `inode --json`: the core fields by their xfs_db names (without `core.`
/// and `v3.`), then names and the forks.
pub fn inode_json(i: &Inode) -> Value {
    let c = &i.core;
    let mut m = Map::new();
    m.insert("ino".into(), json!(i.ino.0));
    m.insert("location".into(), json!(i.location));
    m.insert("magic".into(), json!(c.magic));
    m.insert("mode".into(), json!(c.mode));
    m.insert("mode_octal".into(), json!(format!("{:o}", c.mode)));
    m.insert("file_type".into(), json!(i.file_type().name()));
    m.insert("version".into(), json!(c.version));
    m.insert("format".into(), json!(c.format));
    m.insert("format_name".into(), json!(format_name(c.format)));
    m.insert("onlink".into(), json!(c.onlink));
    if let Some(t) = c.metatype {
        m.insert("metatype".into(), json!(t));
    }
    m.insert("uid".into(), json!(c.uid));
    m.insert("gid".into(), json!(c.gid));
    m.insert("nlink".into(), json!(c.nlink));
    m.insert("projid_lo".into(), json!(c.projid_lo));
    m.insert("projid_hi".into(), json!(c.projid_hi));
    m.insert("projid".into(), json!(c.projid));
    if let Some(f) = c.flushiter {
        m.insert("flushiter".into(), json!(f));
    }
    m.insert("big_nextents".into(), json!(c.big_nextents));
    m.insert("atime".into(), ts_json(&c.atime));
    m.insert("mtime".into(), ts_json(&c.mtime));
    m.insert("ctime".into(), ts_json(&c.ctime));
    m.insert("size".into(), json!(c.size));
    m.insert("nblocks".into(), json!(c.nblocks));
    m.insert("extsize".into(), json!(c.extsize));
    m.insert("nextents".into(), json!(c.nextents));
    m.insert("anextents".into(), json!(c.anextents));
    m.insert("forkoff".into(), json!(c.forkoff));
    m.insert("aformat".into(), json!(c.aformat));
    m.insert("aformat_name".into(), json!(format_name(c.aformat)));
    m.insert("dmevmask".into(), json!(c.dmevmask));
    m.insert("dmstate".into(), json!(c.dmstate));
    m.insert("flags".into(), json!(c.flags));
    m.insert("flags_names".into(), json!(c.flag_names()));
    m.insert("gen".into(), json!(c.gen));
    m.insert("next_unlinked".into(), json!(c.next_unlinked));
    if c.is_v3() {
        m.insert("crc".into(), json!(c.crc));
        m.insert("changecount".into(), json!(c.changecount));
        m.insert("lsn".into(), json!(c.lsn));
        m.insert("flags2".into(), json!(c.flags2));
        m.insert("flags2_names".into(), json!(c.flag2_names()));
        m.insert("cowextsize".into(), json!(c.cowextsize));
        if let Some(t) = &c.crtime {
            m.insert("crtime".into(), ts_json(t));
        }
        m.insert("di_ino".into(), json!(c.ino));
        m.insert("uuid".into(), json!(c.uuid.as_ref().map(uuid_text)));
    }
    m.insert(
        "attr_fork_offset_bytes".into(),
        json!(i.layout.attr_fork_offset),
    );
    if let Fork::Dev { rdev } = i.data {
        let (major, minor) = rdev_major_minor(rdev);
        m.insert(
            "rdev".into(),
            json!({ "raw": rdev, "major": major, "minor": minor }),
        );
    }
    m.insert("layout".into(), json!(i.layout));
    m.insert("reading_tag".into(), json!(i.layout.tag()));
    m.insert("data_fork".into(), fork_json(&i.data));
    m.insert(
        "attr_fork".into(),
        i.attr.as_ref().map_or(Value::Null, fork_json),
    );
    m.insert("crc_ok".into(), json!(i.verify.crc_ok));
    m.insert("problems".into(), json!(i.verify.problems));
    Value::Object(m)
}

fn ts_text(t: &Timestamp) -> String {
    format!("{} ({}.{:09})", t.text(), t.sec, t.nsec)
}

fn fork_text(name: &str, f: &Fork, s: &mut String) {
    s.push_str(&format!(
        "{name} fork: {} ({})\n",
        format_name(f.format()),
        f.format()
    ));
    match f {
        Fork::Dev { rdev } => {
            let (ma, mi) = rdev_major_minor(*rdev);
            s.push_str(&format!("  rdev {rdev:#x} = {ma}:{mi}\n"));
        }
        Fork::Local { bytes } => {
            s.push_str(&format!("  {} inline bytes\n", bytes.len()));
        }
        Fork::Extents { extents } | Fork::Btree { extents, .. } => {
            if let Fork::Btree {
                root_level, blocks, ..
            } = f
            {
                let list: Vec<String> = blocks.iter().map(|b| b.0.to_string()).collect();
                s.push_str(&format!(
                    "  bmbt root level {root_level}, blocks {}\n",
                    list.join(" ")
                ));
            }
            s.push_str(&format!(
                "  {:>12}  {:>12}  {:>10}  flags\n",
                "file block", "fs block", "blocks"
            ));
            for e in extents {
                s.push_str(&format!(
                    "  {:>12}  {:>12}  {:>10}  {}\n",
                    e.file_block,
                    e.start.0,
                    e.len,
                    extent_flags(e)
                ));
            }
        }
        Fork::Unknown { .. } => s.push_str("  (not mapped by this reader)\n"),
        Fork::Corrupt { error, .. } => s.push_str(&format!("  CORRUPT: {error}\n")),
    }
}

fn extent_flags(e: &Extent) -> String {
    let mut f = Vec::new();
    if e.unwritten {
        f.push("unwritten");
    }
    match e.shared {
        Some(true) => f.push("shared"),
        Some(false) => {}
        None => f.push("sharing unknown"),
    }
    f.join(", ")
}

fn inode_text(i: &Inode) -> String {
    let c = &i.core;
    let mut rows: Vec<(&str, String)> = vec![
        ("magic", format!("{:#06x}", c.magic)),
        (
            "mode",
            format!("{:#o} ({}, {:04o})", c.mode, i.file_type().name(), c.perm()),
        ),
        ("version", c.version.to_string()),
        (
            "format",
            format!("{} ({})", c.format, format_name(c.format)),
        ),
        ("onlink", c.onlink.to_string()),
        ("uid", c.uid.to_string()),
        ("gid", c.gid.to_string()),
        ("nlink", c.nlink.to_string()),
        (
            "projid",
            format!("{} (lo {}, hi {})", c.projid, c.projid_lo, c.projid_hi),
        ),
    ];
    if let Some(f) = c.flushiter {
        rows.push(("flushiter", f.to_string()));
    }
    rows.extend([
        ("atime", ts_text(&c.atime)),
        ("mtime", ts_text(&c.mtime)),
        ("ctime", ts_text(&c.ctime)),
        ("size", c.size.to_string()),
        ("nblocks", c.nblocks.to_string()),
        ("extsize", c.extsize.to_string()),
        ("nextents", c.nextents.to_string()),
        ("anextents", c.anextents.to_string()),
        ("forkoff", c.forkoff.to_string()),
        (
            "aformat",
            format!("{} ({})", c.aformat, format_name(c.aformat)),
        ),
        ("dmevmask", format!("{:#x}", c.dmevmask)),
        ("dmstate", c.dmstate.to_string()),
        (
            "flags",
            format!("{:#x} [{}]", c.flags, c.flag_names().join(", ")),
        ),
        ("gen", c.gen.to_string()),
        (
            "next_unlinked",
            if c.next_unlinked == u32::MAX {
                "null".into()
            } else {
                c.next_unlinked.to_string()
            },
        ),
    ]);
    if c.is_v3() {
        rows.extend([
            (
                "crc",
                format!(
                    "{:#010x} ({})",
                    c.crc.unwrap_or(0),
                    if i.verify.crc_ok { "correct" } else { "BAD" }
                ),
            ),
            ("changecount", c.changecount.unwrap_or(0).to_string()),
            ("lsn", format!("{:#x}", c.lsn.unwrap_or(0))),
            (
                "flags2",
                format!(
                    "{:#x} [{}]",
                    c.flags2.unwrap_or(0),
                    c.flag2_names().join(", ")
                ),
            ),
            ("cowextsize", c.cowextsize.unwrap_or(0).to_string()),
            ("crtime", c.crtime.as_ref().map_or(String::new(), ts_text)),
            ("ino", c.ino.unwrap_or(0).to_string()),
            ("uuid", c.uuid.as_ref().map_or(String::new(), uuid_text)),
        ]);
        if let Some(t) = c.metatype {
            rows.push(("metatype", t.to_string()));
        }
    }
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let l = &i.location;
    let mut s = format!(
        "inode {} (AG {} agino {} block {} slot {}; daddr {}, byte {})\n",
        i.ino.0, l.agno.0, l.agino.0, l.agbno.0, l.slot, l.daddr.0, l.byte_offset
    );
    for (k, v) in rows {
        s.push_str(&format!("  {k:<w$}  {v}\n"));
    }
    let lay = &i.layout;
    s.push_str(&format!(
        "literal area: core {} bytes, literal {} bytes; data fork at byte {} ({} bytes{})",
        lay.core_bytes,
        lay.literal_bytes,
        lay.data_fork_offset,
        lay.data_fork_bytes,
        lay.data_fork_used_bytes
            .map_or(String::new(), |u| format!(", {u} used"))
    ));
    match lay.attr_fork_offset {
        Some(o) => s.push_str(&format!(
            "; attr fork at byte {o} ({} bytes)\n",
            lay.attr_fork_bytes
        )),
        None => s.push_str("; no attr fork\n"),
    }
    s.push_str(&format!(
        "forkoff {} (default {}, max {}): {} [{}]\n",
        lay.forkoff,
        lay.default_forkoff,
        lay.max_forkoff,
        lay.reading,
        lay.tag()
    ));
    fork_text("data", &i.data, &mut s);
    if let Some(a) = &i.attr {
        fork_text("attr", a, &mut s);
    }
    if c.is_v3() {
        s.push_str(&format!(
            "verify: crc {}\n",
            if i.verify.crc_ok { "correct" } else { "BAD" }
        ));
    } else {
        s.push_str("verify: no CRC (v1/v2 inode)\n");
    }
    for p in &i.verify.problems {
        s.push_str(&format!("problem: {p}\n"));
    }
    s
}
