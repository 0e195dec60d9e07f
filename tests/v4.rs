//! v4 filesystems (crc=0) with and without the directory entry file type
//! (`v4-ftype`, `v4-noftype`; `tests/fixtures/make/shapes.sh v4`: filled
//! by `mkfs.xfs -p` and `xfs_db attr_set`, as this kernel does not mount
//! v4). Every path and inode number equals `xfs_db ncheck`; every inode's
//! core and extents equal `xfs_db`'s print and bmap; file contents and
//! symlink targets are those of the protofile's sources; xattr values are
//! what `xfs_db attr_set -v N` writes (N bytes of 'v'). The superblock,
//! features, AG headers and the clean log of these images are checked by
//! tests/info.rs, tests/ag.rs and tests/log.rs (their `sb.txt`,
//! `version.txt`, `ag.txt`, `agbt.txt`, `logt.txt` oracles).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::as_conversions,
    clippy::cast_possible_truncation
)]

mod common;

use common::*;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

const NAMES: [&str; 2] = ["v4-ftype", "v4-noftype"];

fn listing(name: &str) -> BTreeMap<String, Value> {
    let img = image(name);
    let (ok, out, err) = run_cli(&["ls", "-R", "--json", img.to_str().unwrap()]);
    assert!(ok, "{name}: {err}");
    out.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            assert!(v.get("error").is_none(), "{name}: {l}");
            (v["path"].as_str().unwrap().to_string(), v)
        })
        .collect()
}

/// `ino path` lines of `xfs_db ncheck`, as "/path" -> ino.
fn ncheck(name: &str) -> BTreeMap<String, u64> {
    oracle(name, "ncheck.txt")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (ino, path) = l.trim().split_once(char::is_whitespace).unwrap();
            let path = path.trim();
            let path = path.strip_suffix("/.").unwrap_or(path);
            (format!("/{path}"), ino.parse().unwrap())
        })
        .collect()
}

/// Per inode: its xfs_db print (`name = value`), bmap and bmap -a lines.
type DbInodes = BTreeMap<u64, (BTreeMap<String, String>, Vec<String>, Vec<String>)>;

fn db_inodes(name: &str) -> DbInodes {
    let mut out: DbInodes = BTreeMap::new();
    let mut cur: Option<(u64, u8)> = None;
    for line in oracle(name, "v4-inodes.txt").lines() {
        if let Some(rest) = line.strip_prefix("=== ") {
            let (kind, n) = rest.rsplit_once(' ').unwrap();
            let n: u64 = n.parse().unwrap();
            out.entry(n).or_default();
            cur = Some((
                n,
                match kind {
                    "inode" => 0,
                    "bmap" => 1,
                    _ => 2,
                },
            ));
            continue;
        }
        let Some((n, k)) = cur else { continue };
        let e = out.get_mut(&n).unwrap();
        match k {
            0 => {
                if let Some((a, b)) = line.split_once(" = ") {
                    e.0.insert(a.trim().to_string(), b.trim().to_string());
                }
            }
            1 => e.1.push(line.to_string()),
            _ => e.2.push(line.to_string()),
        }
    }
    out
}

fn num(v: &str) -> u64 {
    xfs_db_number(v.split_whitespace().next().unwrap())
        .unwrap_or_else(|| panic!("not a number: {v}"))
}

/// `data offset S startblock B (A/b) count C flag F` lines as tuples.
fn db_extents(lines: &[String], fork: &str) -> Vec<(u64, u64, u64, u64)> {
    lines
        .iter()
        .filter(|l| l.starts_with(fork))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (
                w[2].parse().unwrap(),
                w[4].parse().unwrap(),
                w[7].parse().unwrap(),
                w[9].parse().unwrap(),
            )
        })
        .collect()
}

fn our_extents(fork: &Value) -> Vec<(u64, u64, u64, u64)> {
    fork["extents"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e["file_block"].as_u64().unwrap(),
                        e["start"].as_u64().unwrap(),
                        e["len"].as_u64().unwrap(),
                        u64::from(e["unwritten"].as_bool().unwrap()),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn v4_listings_equal_xfs_db_ncheck() {
    for name in NAMES {
        let ours = listing(name);
        let want = ncheck(name);
        assert!(want.len() > 1900, "{name}: {}", want.len());
        let got: BTreeMap<String, u64> = ours
            .iter()
            .filter(|(p, _)| *p != "/")
            .map(|(p, v)| (p.clone(), v["ino"].as_u64().unwrap()))
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

/// What a listing's `type` is for a mode's file type bits.
fn type_of_mode(mode: u64) -> &'static str {
    match mode & 0o170000 {
        0o040000 => "dir",
        0o100000 => "file",
        0o120000 => "symlink",
        0o020000 => "chardev",
        0o060000 => "blockdev",
        0o010000 => "fifo",
        0o140000 => "socket",
        _ => "unknown",
    }
}

#[test]
fn v4_entries_and_inodes_equal_xfs_db() {
    let mut inodes = 0;
    for name in NAMES {
        let img = image(name);
        let img = img.to_str().unwrap();
        let ours = listing(name);
        let db = db_inodes(name);
        assert!(db.len() > 1900, "{name}: {}", db.len());
        // Every entry: type, permissions, links, owner and size as the
        // inode's xfs_db print has them.
        for (path, v) in &ours {
            let ino = v["ino"].as_u64().unwrap();
            let (print, _, _) = db.get(&ino).unwrap_or_else(|| panic!("{name}: {path}"));
            let mode = u64::from_str_radix(&print["core.mode"], 8).unwrap();
            let at = format!("{name} {path} (inode {ino})");
            assert_eq!(v["type"], type_of_mode(mode), "{at}: mode {mode:o}");
            assert_eq!(v["mode"].as_u64().unwrap(), mode & 0o7777, "{at}");
            assert_eq!(
                v["nlink"].as_u64().unwrap(),
                num(&print["core.nlinkv2"]),
                "{at}"
            );
            assert_eq!(v["uid"].as_u64().unwrap(), num(&print["core.uid"]), "{at}");
            assert_eq!(v["gid"].as_u64().unwrap(), num(&print["core.gid"]), "{at}");
            assert_eq!(
                v["size"].as_u64().unwrap(),
                num(&print["core.size"]),
                "{at}"
            );
        }
        // A sample of inodes in full (the big directories' entries are
        // alike): the core and both forks' extents.
        for (ino, (print, bmap, bmap_a)) in db.iter().step_by(7) {
            let at = format!("{name} inode {ino}");
            let (ok, out, err) = run_cli(&["inode", "--json", img, &ino.to_string()]);
            assert!(ok, "{at}: {err}");
            let o: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(
                o["version"].as_u64(),
                Some(num(&print["core.version"])),
                "{at}"
            );
            for (ours, theirs) in [
                ("format", "core.format"),
                ("aformat", "core.aformat"),
                ("nlink", "core.nlinkv2"),
                ("size", "core.size"),
                ("nblocks", "core.nblocks"),
                ("nextents", "core.nextents"),
                ("anextents", "core.naextents"),
                ("forkoff", "core.forkoff"),
                ("uid", "core.uid"),
                ("gid", "core.gid"),
                ("gen", "core.gen"),
                ("flushiter", "core.flushiter"),
                ("extsize", "core.extsize"),
            ] {
                assert_eq!(o[ours].as_u64(), Some(num(&print[theirs])), "{at}: {ours}");
            }
            assert_eq!(
                o["mode"].as_u64(),
                Some(u64::from_str_radix(&print["core.mode"], 8).unwrap()),
                "{at}"
            );
            assert_eq!(
                our_extents(&o["data_fork"]),
                db_extents(bmap, "data "),
                "{at}"
            );
            let attr = if o["attr_fork"].is_null() {
                vec![]
            } else {
                our_extents(&o["attr_fork"])
            };
            assert_eq!(attr, db_extents(bmap_a, "attr "), "{at}");
            assert_eq!(o["problems"], Value::Array(vec![]), "{at}");
            inodes += 1;
        }
    }
    assert!(inodes > 500, "{inodes}");
}

fn sha(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

#[test]
fn v4_contents_targets_and_xattrs_are_what_the_tools_wrote() {
    let v = |n: usize| sha(&vec![b'v'; n]);
    let long_target = format!("{}/target", "a".repeat(300));
    for name in NAMES {
        let ours = listing(name);
        let at = |p: &str| ours.get(p).unwrap_or_else(|| panic!("{name}: no {p}"));
        // The protofile's sources.
        assert_eq!(at("/sf/file")["sha256"], sha(b"hello, v4\n"), "{name}");
        assert_eq!(at("/sf/empty")["sha256"], sha(b""), "{name}");
        assert_eq!(at("/sf/big")["sha256"], v(100_000), "{name}");
        assert_eq!(at("/sf/link")["target"], "file", "{name}");
        assert_eq!(at("/sf/longlink")["target"], long_target.as_str(), "{name}");
        assert_eq!(
            at("/special/null")["rdev"],
            Value::from(vec![1u64, 3]),
            "{name}"
        );
        // xfs_db attr_set -v N: N bytes of 'v'.
        let x = |p: &str| at(p)["xattrs_sha256"].clone();
        let sf = x("/attrs/sf");
        assert_eq!(sf["user.color"], v(5), "{name}");
        assert_eq!(sf["trusted.note"], v(3), "{name}");
        assert_eq!(sf["security.label"], v(4), "{name}");
        let leaf = x("/attrs/leaf");
        assert_eq!(leaf.as_object().unwrap().len(), 60, "{name}");
        assert_eq!(leaf["user.name-37"], v(24), "{name}");
        let rmt = x("/attrs/remote");
        assert_eq!(rmt["user.big9000"], v(9000), "{name}");
        assert_eq!(rmt["user.mid5000"], v(5000), "{name}");
        assert_eq!(rmt["user.tiny"], v(1), "{name}");
        assert_eq!(x("/block")["user.on-a-dir"], v(7), "{name}");
    }
}

/// A v4 filesystem's log is the clean one mkfs.xfs formats (this kernel
/// does not mount v4, so no transaction ever reaches it): `replay` has
/// nothing to do and `--replay` reads the same tree.
#[test]
fn v4_clean_log_replays_to_the_same_tree() {
    for name in NAMES {
        let img = image(name);
        let img = img.to_str().unwrap();
        let t = oracle(name, "logt.txt");
        assert!(t.contains("state: <CLEAN>"), "{name}: {t}");
        let (ok, out, err) = run_cli(&["replay", img]);
        assert!(ok, "{name}: {err}");
        assert!(out.contains("the log is clean"), "{name}: {out}");
        let (ok, out, err) = run_cli(&["--replay", "ls", "-R", "--json", img]);
        assert!(ok, "{name}: {err}");
        let replayed: BTreeMap<String, Value> = out
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (v["path"].as_str().unwrap().to_string(), v)
            })
            .collect();
        assert_eq!(replayed, listing(name), "{name}");
    }
}
