//! The teaching views' data against the kernel and xfs_db:
//! - `hex DADDR --json`: every field's offset and size equal the running
//!   kernel's own struct layout (pahole on its BTF, kernel-layouts.txt) for
//!   the superblock, AGF, AGI, AGFL, an inode core, a directory block header
//!   and a log record header;
//! - `ag AGNO --map --json`: free extents equal the bnobt records and inode
//!   chunks the inobt records xfs_db's `btdump` prints (NAME.agbt.txt), and
//!   every btree block xfs_db visits is drawn as one;
//! - `getfattr --json`: names and value lengths equal getfattr's on the
//!   mounted image (NAME.xattr.txt).

mod common;

use common::{fixtures_dir, fixtures_with, hex_field, image, oracle, run_cli};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// pahole's layouts: struct -> member (as named) -> (offset, size).
fn layouts() -> BTreeMap<String, BTreeMap<String, (u64, u64)>> {
    let text = std::fs::read_to_string(common::fixtures_dir().join("kernel-layouts.txt")).unwrap();
    let mut out: BTreeMap<String, BTreeMap<String, (u64, u64)>> = BTreeMap::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        if let Some(name) = line
            .strip_prefix("struct ")
            .and_then(|l| l.strip_suffix(" {"))
        {
            cur = Some(name.to_string());
            continue;
        }
        if line.starts_with('}') {
            cur = None;
            continue;
        }
        let Some(c) = &cur else { continue };
        // "	__be32  sb_blocksize;  /*     4     4 */"
        let Some((decl, comment)) = line.split_once("/*") else {
            continue;
        };
        let Some(member) = decl.trim().strip_suffix(';') else {
            continue;
        };
        let name = member.split_whitespace().last().unwrap();
        let name = name.split('[').next().unwrap().to_string();
        let nums: Vec<u64> = comment
            .trim_end_matches("*/")
            .split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect();
        if nums.len() == 2 {
            out.entry(c.clone())
                .or_default()
                .insert(name, (nums[0], nums[1]));
        }
    }
    out
}

/// The size of a struct member, from a function that names it.
fn member_size<T, F>(_: fn(&T) -> &F) -> u64 {
    u64::try_from(std::mem::size_of::<F>()).unwrap()
}

/// Replay reads a logged inode core (`xfs_log_dinode`, in the writer's
/// byte order) at the offsets of the on-disk `XfsDinode` (and
/// `XfsDinodeV2` for the v2 fields), and the log item decoder reads it
/// through `XfsLogDinode`: every member either reads must sit where the
/// kernel's `xfs_log_dinode` has it, with the kernel's size.
#[test]
fn logged_inode_core_fields_sit_where_the_kernels_xfs_log_dinode_has_them() {
    use std::mem::offset_of;
    use xfs_explorer::xfs::format::dinode::{XfsDinode, XfsDinodeV2};
    use xfs_explorer::xfs::format::log::{XfsLogDinode, XFS_LOG_DINODE_V2_SIZE};
    use zerocopy::byteorder::LittleEndian as LE;

    let k = layouts();
    let ld = &k["xfs_log_dinode"];
    let check = |what: &str, name: &str, off: usize, size: u64| {
        let (koff, ksize) = ld
            .get(name)
            .unwrap_or_else(|| panic!("xfs_log_dinode has no {name}"));
        assert_eq!(
            (u64::try_from(off).unwrap(), size),
            (*koff, *ksize),
            "{what}.{name}: (offset, size) against xfs_log_dinode's"
        );
    };
    macro_rules! at {
        ($t:ty: $($f:ident),* $(,)?) => {$(
            check(stringify!($t), stringify!($f), offset_of!($t, $f), member_size(|d: &$t| &d.$f));
        )*};
    }
    // Every member replay's copy of the logged core into the disk inode
    // (`xfs_log_dinode_to_disk`) reads.
    at!(XfsDinode:
        di_magic,
        di_mode,
        di_version,
        di_format,
        di_metatype,
        di_uid,
        di_gid,
        di_nlink,
        di_projid_lo,
        di_projid_hi,
        di_big_nextents,
        di_atime,
        di_mtime,
        di_ctime,
        di_size,
        di_nblocks,
        di_extsize,
        di_nextents,
        di_anextents,
        di_forkoff,
        di_aformat,
        di_dmevmask,
        di_dmstate,
        di_flags,
        di_gen,
        di_next_unlinked,
        di_crc,
        di_changecount,
        di_lsn,
        di_flags2,
        di_cowextsize,
        di_pad2,
        di_crtime,
        di_ino,
        di_uuid,
    );
    check(
        "XfsDinodeV2",
        "di_flushiter",
        offset_of!(XfsDinodeV2, di_flushiter),
        member_size(|d: &XfsDinodeV2| &d.di_flushiter),
    );
    check(
        "XfsDinodeV2",
        "di_v2_pad",
        offset_of!(XfsDinodeV2, di_pad),
        member_size(|d: &XfsDinodeV2| &d.di_pad),
    );
    // Every member the log item decoder reads.
    at!(XfsLogDinode<LE>:
        di_magic,
        di_mode,
        di_version,
        di_format,
        di_uid,
        di_gid,
        di_nlink,
        di_big_nextents,
        di_atime,
        di_mtime,
        di_ctime,
        di_size,
        di_nblocks,
        di_extsize,
        di_nextents,
        di_anextents,
        di_forkoff,
        di_aformat,
        di_flags,
        di_gen,
        di_next_unlinked,
        di_changecount,
        di_lsn,
        di_flags2,
        di_crtime,
        di_ino,
        di_uuid,
    );
    // A v1/v2 inode logs the core up to di_next_unlinked; a v3 one all of it.
    assert_eq!(
        Some(&(u64::try_from(XFS_LOG_DINODE_V2_SIZE).unwrap(), 4)),
        ld.get("di_next_unlinked")
    );
    let end = ld.values().map(|(o, s)| o + s).max().unwrap();
    assert_eq!(
        u64::try_from(std::mem::size_of::<XfsLogDinode<LE>>()).unwrap(),
        end
    );
}

fn json(args: &[&str]) -> Value {
    let (ok, out, err) = run_cli(args);
    assert!(ok, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

fn sb_num(name: &str, field: &str) -> u64 {
    let sb = oracle(name, "sb.txt");
    let v = common::parse_xfs_db_print(&sb)
        .into_iter()
        .find(|(k, _)| k == field)
        .unwrap_or_else(|| panic!("{name}: no {field}"))
        .1;
    common::xfs_db_number(&v).unwrap()
}

/// Every field the page shows under a name the kernel's struct has sits
/// at the kernel's offset with the kernel's size; `must` are required.
fn check_fields(
    what: &str,
    hex: &Value,
    kernel: &BTreeMap<String, (u64, u64)>,
    prefix: &str,
    base: u64,
    must: &[&str],
) {
    let fields = hex["fields"].as_array().unwrap();
    let mut seen = BTreeSet::new();
    for f in fields {
        let name = f["name"].as_str().unwrap();
        let key = format!("{prefix}{name}");
        if let Some((off, size)) = kernel.get(&key) {
            assert_eq!(
                (f["offset"].as_u64().unwrap(), f["size"].as_u64().unwrap()),
                (off + base, *size),
                "{what}: {key}"
            );
            seen.insert(name.to_string());
        }
    }
    for m in must {
        assert!(seen.contains(*m), "{what}: no field {m} (seen {seen:?})");
    }
}

#[test]
fn hex_fields_sit_where_the_kernel_puts_them() {
    let k = layouts();
    for name in ["v5-1k-rmap", "v5-sect4k", "v5-4k-dirty", "v5-64kdir"] {
        let img = image(name);
        let img = img.to_str().unwrap();
        let sect = sb_num(name, "sectsize") / 512;
        let sb = json(&["hex", img, "0", "--json"]);
        assert_eq!(sb["structure"], "superblock (AG 0)");
        let all_sb: Vec<&str> = k["xfs_dsb"]
            .keys()
            .map(|n| n.strip_prefix("sb_").unwrap())
            .collect();
        // Every member of the kernel's xfs_dsb is shown (sb_pad too).
        check_fields(&format!("{name} sb"), &sb, &k["xfs_dsb"], "sb_", 0, &all_sb);
        let agf = json(&["hex", img, &sect.to_string(), "--json"]);
        check_fields(
            &format!("{name} agf"),
            &agf,
            &k["xfs_agf"],
            "agf_",
            0,
            &[
                "magicnum", "seqno", "length", "bno_root", "cnt_root", "flfirst", "freeblks",
                "longest", "uuid", "lsn", "crc",
            ],
        );
        let agi = json(&["hex", img, &(2 * sect).to_string(), "--json"]);
        check_fields(
            &format!("{name} agi"),
            &agi,
            &k["xfs_agi"],
            "agi_",
            0,
            &[
                "magicnum",
                "count",
                "root",
                "level",
                "freecount",
                "free_root",
                "crc",
            ],
        );
        // agi_unlinked is shown a bucket at a time: 64 fields of 4 bytes
        // tiling the kernel's member.
        let (uoff, usize_) = k["xfs_agi"]["agi_unlinked"];
        assert_eq!(usize_, 64 * 4, "{name}: agi_unlinked is 64 words");
        for i in 0..64u64 {
            let f = agi["fields"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["name"] == format!("unlinked[{i}]"))
                .unwrap_or_else(|| panic!("{name} agi: no unlinked[{i}]"));
            assert_eq!(
                (f["offset"].as_u64().unwrap(), f["size"].as_u64().unwrap()),
                (uoff + 4 * i, 4),
                "{name} agi: unlinked[{i}]"
            );
        }
        let agfl = json(&["hex", img, &(3 * sect).to_string(), "--json"]);
        check_fields(
            &format!("{name} agfl"),
            &agfl,
            &k["xfs_agfl"],
            "agfl_",
            0,
            &["magicnum", "seqno", "uuid", "lsn", "crc"],
        );
        // The root inode.
        let root = sb_num(name, "rootino");
        let inopblog = sb_num(name, "inopblog");
        let agblklog = sb_num(name, "agblklog");
        let (bs, isize, agblocks) = (
            sb_num(name, "blocksize"),
            sb_num(name, "inodesize"),
            sb_num(name, "agblocks"),
        );
        let agno = root >> (agblklog + inopblog);
        let agino = root & ((1 << (agblklog + inopblog)) - 1);
        let daddr = (agno * agblocks + (agino >> inopblog)) * (bs / 512)
            + (agino & ((1 << inopblog) - 1)) * isize / 512;
        let ino = json(&["hex", img, &daddr.to_string(), "--json"]);
        assert_eq!(ino["structure"], format!("inode {root}"), "{name}");
        check_fields(
            &format!("{name} inode"),
            &ino,
            &k["xfs_dinode"],
            "di_",
            0,
            &[
                "magic",
                "mode",
                "version",
                "format",
                "uid",
                "gid",
                "nlink",
                "atime",
                "size",
                "nblocks",
                "forkoff",
                "aformat",
                "next_unlinked",
                "crc",
                "changecount",
                "lsn",
                "flags2",
                "crtime",
                "ino",
                "uuid",
            ],
        );
    }
    // A single-block directory (/dir40 of v5-1k-rmap, at AG 0 block 26 as
    // xfs_db's bmap of inode 68 says: v5-1k-rmap.inodes.txt).
    let inodes = oracle("v5-1k-rmap", "inodes.txt");
    let sec = inodes.split("### ino 68 path /dir40").nth(1).unwrap();
    let line = sec
        .lines()
        .find(|l| l.starts_with("data offset 0 startblock"))
        .unwrap();
    let fsb: u64 = line.split_whitespace().nth(4).unwrap().parse().unwrap();
    let img = image("v5-1k-rmap");
    let dir = json(&[
        "hex",
        img.to_str().unwrap(),
        &(fsb * 2).to_string(),
        "--json",
    ]);
    assert_eq!(dir["structure"], "directory block (single-block directory)");
    check_fields(
        "dir3 blk hdr",
        &dir,
        &k["xfs_dir3_blk_hdr"],
        "",
        0,
        &["magic", "crc", "blkno", "lsn", "uuid", "owner"],
    );
    check_fields(
        "dir3 data hdr",
        &dir,
        &k["xfs_dir3_data_hdr"],
        "",
        0,
        &["pad"],
    );
    let bf = k["xfs_dir3_data_hdr"]["best_free"].0;
    let free = &k["xfs_dir2_data_free"];
    for i in 0..3u64 {
        for (m, (off, size)) in free {
            let want = serde_json::json!({"offset": bf + 4 * i + off, "size": size});
            let got = dir["fields"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["name"] == format!("best_free[{i}].{m}"))
                .unwrap();
            assert_eq!(
                (got["offset"].clone(), got["size"].clone()),
                (want["offset"].clone(), want["size"].clone()),
                "best_free[{i}].{m}"
            );
        }
    }
    // A log record header: the first record of the sample's log.
    let logstart = sb_num("v5-4k-dirty", "logstart");
    let (agblklog, agblocks) = (
        sb_num("v5-4k-dirty", "agblklog"),
        sb_num("v5-4k-dirty", "agblocks"),
    );
    let d = ((logstart >> agblklog) * agblocks + (logstart & ((1 << agblklog) - 1))) * 8;
    let img = image("v5-4k-dirty");
    let rec = json(&["hex", img.to_str().unwrap(), &d.to_string(), "--json"]);
    assert_eq!(rec["structure"], "log record header");
    check_fields(
        "log record",
        &rec,
        &k["xlog_rec_header"],
        "h_",
        0,
        &[
            "magicno",
            "cycle",
            "version",
            "len",
            "lsn",
            "tail_lsn",
            "crc",
            "prev_block",
            "num_logops",
            "cycle_data",
            "fmt",
            "fs_uuid",
            "size",
        ],
    );
}

/// xfs_db btdump's leaf records of one tree of one AG: the first two
/// numbers of each, and the daddrs of the blocks it visited.
fn btdump(text: &str, agno: u64, tree: &str) -> (Vec<(u64, u64)>, BTreeSet<u64>) {
    let head = format!("### ag {agno} {tree}");
    let Some(sec) = text
        .split("### ")
        .find(|s| format!("### {}", s.lines().next().unwrap_or("")) == head)
    else {
        return (Vec::new(), BTreeSet::new());
    };
    let mut recs = Vec::new();
    let mut blocks = BTreeSet::new();
    let mut in_recs = false;
    for l in sec.lines().skip(1) {
        if l.contains(" level ") && l.contains(" block ") {
            // "bnobt level 0 block 1 daddr 8"
            let w: Vec<&str> = l.split_whitespace().collect();
            // The daddr (the number after "block" counts blocks visited).
            let i = w.iter().position(|x| *x == "daddr").unwrap();
            blocks.insert(w[i + 1].parse().unwrap());
            in_recs = false;
        } else if l.starts_with("recs[") {
            in_recs = true;
        } else if l.starts_with("keys[") || l.starts_with("ptrs[") {
            in_recs = false;
        } else if in_recs {
            if let Some((_, v)) = l.trim().split_once(":[") {
                let nums: Vec<u64> = v
                    .trim_end_matches(']')
                    .split(',')
                    .take(2)
                    .map(|n| common::xfs_db_number(n.trim()).unwrap())
                    .collect();
                recs.push((nums[0], nums[1]));
            }
        }
    }
    (recs, blocks)
}

#[test]
fn ag_map_equals_xfs_db_btdump() {
    let mut chunks_checked = 0;
    let mut free_checked = 0;
    let mut owned_checked = 0;
    for name in fixtures_with("agbt.txt") {
        let text = oracle(&name, "agbt.txt");
        let agcount = sb_num(&name, "agcount");
        let inopblog = sb_num(&name, "inopblog");
        let img = image(&name);
        for agno in 0..agcount {
            let m = json(&[
                "ag",
                img.to_str().unwrap(),
                &agno.to_string(),
                "--map",
                "--json",
            ]);
            let ranges = m["ranges"].as_array().unwrap();
            let of = |k: &'static str| ranges.iter().filter(move |r| r["kind"] == k);
            let (bno, _) = btdump(&text, agno, "bno");
            let free: Vec<(u64, u64)> = of("free")
                .map(|r| (r["agbno"].as_u64().unwrap(), r["len"].as_u64().unwrap()))
                .collect();
            assert_eq!(free, bno, "{name} AG {agno}: free extents");
            free_checked += free.len();
            // Owners: the rmapbt's records, where the filesystem has one;
            // shared ranges: the refcount btree's.
            for (tree, kind) in [("rmap", "owned"), ("refcount", "shared")] {
                let (mut want, _) = btdump(&text, agno, tree);
                let mut got: Vec<(u64, u64)> = of(kind)
                    .map(|r| (r["agbno"].as_u64().unwrap(), r["len"].as_u64().unwrap()))
                    .collect();
                want.sort();
                got.sort();
                assert_eq!(got, want, "{name} AG {agno}: {kind} ranges");
                if kind == "owned" {
                    owned_checked += got.len();
                }
            }
            let (ino, _) = btdump(&text, agno, "ino");
            let want: BTreeSet<u64> = ino
                .iter()
                .map(|(startino, _)| startino >> inopblog)
                .collect();
            let got: BTreeSet<u64> = of("inode_chunk")
                .map(|r| r["chunk_agbno"].as_u64().unwrap())
                .collect();
            assert_eq!(got, want, "{name} AG {agno}: inode chunks");
            chunks_checked += got.len();
            let (bb, agblocks) = (sb_num(&name, "blocksize") / 512, sb_num(&name, "agblocks"));
            let drawn: BTreeSet<u64> = of("btree_block")
                .map(|r| (agno * agblocks + r["agbno"].as_u64().unwrap()) * bb)
                .collect();
            for tree in ["bno", "cnt", "ino", "fino", "rmap", "refcount"] {
                let (_, blocks) = btdump(&text, agno, tree);
                assert!(
                    blocks.is_subset(&drawn),
                    "{name} AG {agno} {tree}: {blocks:?} not all in {drawn:?}"
                );
            }
            assert!(
                m["problems"].as_array().unwrap().is_empty(),
                "{name} AG {agno}: {}",
                m["problems"]
            );
        }
    }
    eprintln!("checked {chunks_checked} inode chunks, {free_checked} free extents, {owned_checked} rmap owner ranges");
    assert!(
        chunks_checked > 50 && free_checked > 10 && owned_checked > 100,
        "{chunks_checked} {free_checked} {owned_checked}"
    );
}

#[test]
fn getfattr_json_equals_the_mounted_listing() {
    let name = "v5-1k-rmap";
    let img = image(name);
    let oracle_text = oracle(name, "xattr.txt");
    let mut by_file: BTreeMap<String, Vec<(String, u64)>> = BTreeMap::new();
    for l in oracle_text.lines() {
        let f: Vec<&str> = l.split('\t').collect();
        if f.len() < 3 {
            continue;
        }
        let path = f[0].trim_start_matches('.').to_string();
        by_file
            .entry(if path.is_empty() { "/".into() } else { path })
            .or_default()
            .push((f[1].to_string(), f[2].parse().unwrap()));
    }
    assert!(by_file.len() >= 3);
    for (path, mut want) in by_file {
        let v = json(&["getfattr", img.to_str().unwrap(), &path, "--json"]);
        let mut got: Vec<(String, u64)> = v["xattrs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                (
                    x["name"].as_str().unwrap().to_string(),
                    x["len"].as_u64().unwrap(),
                )
            })
            .collect();
        // getfattr lists the ACL xattrs the kernel synthesises too.
        got.retain(|(n, _)| want.iter().any(|(w, _)| w == n) || !n.starts_with("system."));
        got.sort();
        want.sort();
        assert_eq!(got, want, "{path}");
    }
}

/// An xfs_db quoted string (C escapes, `\ooo` octal) as the hex view
/// shows it: the bytes as text, Debug-quoted.
fn db_str(v: &str) -> String {
    let inner = v.trim().trim_start_matches('"').trim_end_matches('"');
    let mut out = Vec::new();
    let b = inner.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push(
                u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 4]).unwrap(), 8).unwrap(),
            );
            i += 4;
        } else if b[i] == b'\\' && i + 1 < b.len() {
            out.push(match b[i + 1] {
                b'n' => b'\n',
                b't' => b'\t',
                c => c,
            });
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    format!("{:?}", String::from_utf8_lossy(&out))
}

/// The inode's daddr from the geometry xfs_db printed.
fn inode_daddr(name: &str, ino: u64) -> u64 {
    let (inopblog, agblklog) = (sb_num(name, "inopblog"), sb_num(name, "agblklog"));
    let (bs, isize, agblocks) = (
        sb_num(name, "blocksize"),
        sb_num(name, "inodesize"),
        sb_num(name, "agblocks"),
    );
    let agno = ino >> (agblklog + inopblog);
    let agino = ino & ((1 << (agblklog + inopblog)) - 1);
    (agno * agblocks + (agino >> inopblog)) * (bs / 512)
        + (agino & ((1 << inopblog) - 1)) * isize / 512
}

/// Shortform directory entries, shortform xattrs and extent records in the
/// hex view of an inode equal xfs_db's print and bmap of it
/// (NAME.inodes.txt, on the unmounted image).
#[test]
fn hex_inode_forks_equal_xfs_db() {
    let mut checked = (0, 0, 0);
    for name in ["v5-1k-rmap", "v5-formats", "v5-1kinode", "v5-64kdir"] {
        let text = oracle(name, "inodes.txt");
        let img = image(name);
        for sec in text.split("### ino ").skip(1) {
            let ino: u64 = sec.split_whitespace().next().unwrap().parse().unwrap();
            let body = sec.split("### bmap").next().unwrap();
            let db: BTreeMap<&str, &str> =
                body.lines().filter_map(|l| l.split_once(" = ")).collect();
            let h = json(&[
                "hex",
                img.to_str().unwrap(),
                &inode_daddr(name, ino).to_string(),
                "--json",
            ]);
            let ours: BTreeMap<String, String> = h["fields"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    (
                        f["name"].as_str().unwrap().to_string(),
                        f["value"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            // Shortform directory: names and inode numbers.
            for i in 0.. {
                let Some(n) = db.get(format!("u3.sfdir3.list[{i}].name").as_str()) else {
                    break;
                };
                assert_eq!(
                    ours[&format!("sfdir.list[{i}].name")],
                    db_str(n),
                    "{name} ino {ino} entry {i}"
                );
                let want = db
                    .get(format!("u3.sfdir3.list[{i}].inumber.i4").as_str())
                    .or_else(|| db.get(format!("u3.sfdir3.list[{i}].inumber.i8").as_str()))
                    .unwrap();
                assert_eq!(
                    &ours[&format!("sfdir.list[{i}].inumber")],
                    want,
                    "{name} ino {ino} entry {i}"
                );
                checked.0 += 1;
            }
            // Shortform xattrs: names and values (as xfs_db quotes them).
            for i in 0.. {
                let Some(n) = db.get(format!("a.sfattr.list[{i}].name").as_str()) else {
                    break;
                };
                assert_eq!(
                    ours[&format!("sfattr.list[{i}].name")],
                    db_str(n),
                    "{name} ino {ino} attr {i}"
                );
                if let Some(v) = db.get(format!("a.sfattr.list[{i}].value").as_str()) {
                    assert_eq!(
                        ours[&format!("sfattr.list[{i}].value")],
                        db_str(v),
                        "{name} ino {ino} attr {i}"
                    );
                }
                checked.1 += 1;
            }
            // Extent records of the data fork held in the inode.
            if db.get("core.format").is_some_and(|f| f.starts_with("2 ")) {
                let bmap = sec
                    .split("### bmap\n")
                    .nth(1)
                    .unwrap()
                    .split("### bmap -a")
                    .next()
                    .unwrap();
                for (i, l) in bmap
                    .lines()
                    .filter(|l| l.starts_with("data offset"))
                    .enumerate()
                {
                    // "data offset 0 startblock 26 (0/26) count 4 flag 0"
                    let w: Vec<&str> = l.split_whitespace().collect();
                    let want = format!(
                        "file offset {}, block {}, {} blocks{}",
                        w[2],
                        w[4],
                        w[7],
                        if w[9] == "1" { ", unwritten" } else { "" }
                    );
                    assert_eq!(
                        ours[&format!("u.bmx[{i}]")],
                        want,
                        "{name} ino {ino} extent {i}"
                    );
                    checked.2 += 1;
                }
            }
        }
    }
    eprintln!(
        "checked {} shortform entries, {} shortform xattrs, {} extent records",
        checked.0, checked.1, checked.2
    );
    assert!(
        checked.0 > 20 && checked.1 > 3 && checked.2 > 5,
        "{checked:?}"
    );
}

/// The names and values of attr leaf blocks in the hex view (local entries:
/// value length, name length, name, value; remote ones: value block, value
/// length, name length, name) equal xfs_db's `p nvlist` of the same blocks
/// (attr-leaf.nvlist.txt), each field at the offset its entry's nameidx
/// gives.
#[test]
fn hex_attr_leaf_names_equal_xfs_db() {
    let text = std::fs::read_to_string(fixtures_dir().join("attr-leaf.nvlist.txt")).unwrap();
    let (mut blocks, mut fields, mut remote) = (0, 0, 0);
    for sec in text.split("== ").skip(1) {
        let head: Vec<&str> = sec.lines().next().unwrap().split_whitespace().collect();
        let (name, daddr) = (head[0], head[5]);
        let img = image(name);
        let h = json(&["hex", img.to_str().unwrap(), daddr, "--json"]);
        let ours: BTreeMap<String, (String, u64, u64)> = h["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["name"].as_str().unwrap().to_string(),
                    (
                        f["value"].as_str().unwrap().to_string(),
                        f["offset"].as_u64().unwrap(),
                        f["size"].as_u64().unwrap(),
                    ),
                )
            })
            .collect();
        let mut n = 0;
        for l in sec.lines().skip(1) {
            let Some((k, v)) = l.split_once(" = ") else {
                continue;
            };
            let (ov, off, size) = ours
                .get(k)
                .unwrap_or_else(|| panic!("{name} daddr {daddr}: no field {k} in the hex view"));
            if k.ends_with(".name") || k.ends_with(".value") {
                assert_eq!(ov, &db_str(v), "{name} daddr {daddr}: {k}");
            } else {
                let want = if let Some(x) = v.strip_prefix("0x") {
                    u64::from_str_radix(x, 16).unwrap()
                } else {
                    v.parse().unwrap()
                };
                assert_eq!(ov, &want.to_string(), "{name} daddr {daddr}: {k}");
            }
            if k.ends_with(".valueblk") {
                remote += 1;
            }
            // Each name/value field lies past the leaf header.
            assert!(
                *off >= 80 && *size > 0,
                "{name} daddr {daddr}: {k} at {off}+{size}"
            );
            n += 1;
        }
        assert!(n > 0, "{name} daddr {daddr}: xfs_db printed no entries");
        fields += n;
        blocks += 1;
    }
    assert!(
        blocks >= 6 && remote >= 1,
        "{blocks} blocks, {remote} remote"
    );
    eprintln!("{blocks} attr leaf blocks, {fields} fields, {remote} remote entries");
}

/// The AGI's unlinked-list heads, one field per bucket, equal xfs_db's
/// `p unlinked` of every AG of random-1008 (a dirty image whose AGIs carry
/// unlinked lists), each linked to its inode; the buckets xfs_db leaves
/// out are null.
#[test]
fn hex_agi_unlinked_buckets_equal_xfs_db() {
    let text =
        std::fs::read_to_string(fixtures_dir().join("random-1008.agi-unlinked.txt")).unwrap();
    let img = image("random-1008");
    // The geometry from xfs_db's print of the kernel's recovered copy
    // (recovery does not change it).
    let sb = std::fs::read_to_string(fixtures_dir().join("random-1008.recovered-sb.txt")).unwrap();
    let sbf = |k: &str| -> u64 {
        sb.lines()
            .find_map(|l| l.strip_prefix(&format!("{k} = ")))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let (agblklog, inopblog) = (sbf("agblklog"), sbf("inopblog"));
    let mut heads = 0;
    for sec in text.split("== ").skip(1) {
        let head: Vec<&str> = sec.lines().next().unwrap().split_whitespace().collect();
        let (agno, daddr): (u64, &str) = (head[1].parse().unwrap(), head[3]);
        let db: BTreeMap<usize, u64> = sec
            .lines()
            .find_map(|l| l.strip_prefix("unlinked[0-63] = "))
            .unwrap_or("")
            .split_whitespace()
            .map(|p| {
                let (i, v) = p.split_once(':').unwrap();
                (i.parse().unwrap(), v.parse().unwrap())
            })
            .collect();
        let h = json(&["hex", img.to_str().unwrap(), daddr, "--json"]);
        let fields = h["fields"].as_array().unwrap();
        for i in 0..64usize {
            let f = fields
                .iter()
                .find(|f| f["name"] == format!("unlinked[{i}]"))
                .unwrap_or_else(|| panic!("AG {agno}: no field unlinked[{i}]"));
            assert_eq!(f["offset"], 40 + 4 * i as u64, "AG {agno} bucket {i}");
            assert_eq!(f["size"], 4);
            match db.get(&i) {
                Some(agino) => {
                    let ino = (agno << (agblklog + inopblog)) + agino;
                    assert_eq!(
                        f["value"].as_str().unwrap(),
                        format!("AG inode {agino} (inode {ino})"),
                        "AG {agno} bucket {i}"
                    );
                    assert_eq!(f["link"]["inode"], ino, "AG {agno} bucket {i}");
                    heads += 1;
                }
                None => assert!(
                    f["value"].as_str().unwrap().starts_with("null"),
                    "AG {agno} bucket {i}: {}",
                    f["value"]
                ),
            }
        }
    }
    assert!(heads > 50, "{heads} heads");
    eprintln!("{heads} unlinked-list heads in 4 AGs");
}

/// A bmbt root in an inode (an attr fork of random-1327, a data fork two
/// levels high in replay-bui-btree) shows its level, record count, keys and
/// pointers as xfs_db prints them (bmbt-roots.txt), the pointers linked to
/// their blocks.
#[test]
fn hex_bmbt_roots_in_inodes_equal_xfs_db() {
    let text = std::fs::read_to_string(fixtures_dir().join("bmbt-roots.txt")).unwrap();
    let mut checked = 0;
    for sec in text.split("== ").skip(1) {
        let head: Vec<&str> = sec.lines().next().unwrap().split_whitespace().collect();
        let (name, fork) = (head[0], head[3]);
        let ours_prefix = if fork == "u3.bmbt" {
            "u.bmbt"
        } else {
            "a.bmbt"
        };
        let daddr = sec
            .lines()
            .find_map(|l| l.strip_prefix("current daddr is "))
            .unwrap()
            .trim();
        let num = |k: &str| -> u64 {
            sec.lines()
                .find_map(|l| l.strip_prefix(&format!("{fork}.{k} = ")))
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        };
        let (level, numrecs) = (num("level"), num("numrecs"));
        // Keys: "i:[startoff]" lines after the keys line; pointers:
        // "i:block" pairs, or the one block alone.
        let body: Vec<&str> = sec.lines().collect();
        let kpos = body
            .iter()
            .position(|l| l.starts_with(&format!("{fork}.keys")))
            .unwrap();
        let keys: Vec<u64> = body[kpos + 1..]
            .iter()
            .take_while(|l| !l.starts_with(fork))
            .map(|l| {
                let v = l.trim().split_once(":[").unwrap().1;
                v.trim_end_matches(']').parse().unwrap()
            })
            .collect();
        let ptr_line = body
            .iter()
            .find_map(|l| l.strip_prefix(&format!("{fork}.ptrs")))
            .unwrap();
        let ptrs: Vec<u64> = ptr_line
            .split_once(" = ")
            .unwrap()
            .1
            .split_whitespace()
            .map(|p| p.rsplit(':').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(keys.len() as u64, numrecs, "{name}: keys");
        assert_eq!(ptrs.len() as u64, numrecs, "{name}: pointers");
        let h = json(&["hex", image(name).to_str().unwrap(), daddr, "--json"]);
        let field = |n: &str| hex_field(&h, n);
        assert_eq!(
            field(&format!("{ours_prefix}.level"))["value"],
            level.to_string()
        );
        assert_eq!(
            field(&format!("{ours_prefix}.numrecs"))["value"],
            numrecs.to_string()
        );
        for (i, k) in keys.iter().enumerate() {
            let f = field(&format!("{ours_prefix}.keys[{}]", i + 1));
            assert_eq!(
                f["value"],
                format!("file offset {k}"),
                "{name}: key {}",
                i + 1
            );
            assert_eq!(f["size"], 8);
        }
        for (i, p) in ptrs.iter().enumerate() {
            let f = field(&format!("{ours_prefix}.ptrs[{}]", i + 1));
            assert_eq!(
                f["value"],
                format!("block {p}"),
                "{name}: pointer {}",
                i + 1
            );
            assert!(
                f["link"]["daddr"].as_u64().is_some(),
                "{name}: pointer {} links",
                i + 1
            );
            checked += 1;
        }
    }
    assert!(checked >= 3, "{checked}");
}

/// The best-free-space arrays of a directory's free index block and of a
/// leaf1 block's tail, in the hex view, equal xfs_db's `fbests` and
/// `lbests` (dir-bests.txt; xfs_db leaves zero entries of fbests out), with
/// their counts.
#[test]
fn hex_directory_bests_equal_xfs_db() {
    let text = std::fs::read_to_string(fixtures_dir().join("dir-bests.txt")).unwrap();
    let mut checked = 0;
    for sec in text.split("== ").skip(1) {
        let head: Vec<&str> = sec.lines().next().unwrap().split_whitespace().collect();
        let (name, daddr) = (head[0], head[5]);
        let count: usize = sec
            .lines()
            .find_map(|l| {
                l.strip_prefix("fhdr.nvalid = ")
                    .or_else(|| l.strip_prefix("ltail.bestcount = "))
            })
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let pairs: BTreeMap<usize, u64> = sec
            .lines()
            .find(|l| l.starts_with("fbests[") || l.starts_with("lbests["))
            .unwrap()
            .split_once(" = ")
            .unwrap()
            .1
            .split_whitespace()
            .map(|p| {
                let (i, v) = p.split_once(':').unwrap();
                let v = match v.strip_prefix("0x") {
                    Some(x) => u64::from_str_radix(x, 16).unwrap(),
                    None => v.parse().unwrap(),
                };
                (i.parse().unwrap(), v)
            })
            .collect();
        let h = json(&["hex", image(name).to_str().unwrap(), daddr, "--json"]);
        let fields = h["fields"].as_array().unwrap();
        let bests: Vec<&Value> = fields
            .iter()
            .filter(|f| f["name"].as_str().unwrap().starts_with("bests["))
            .collect();
        assert_eq!(bests.len(), count, "{name}: bests shown");
        for (i, f) in bests.iter().enumerate() {
            assert_eq!(f["name"], format!("bests[{i}]"));
            assert_eq!(f["size"], 2);
            let want = pairs.get(&i).copied().unwrap_or(0);
            assert_eq!(f["value"], want.to_string(), "{name}: bests[{i}]");
            checked += 1;
        }
        // The array is contiguous: each entry two bytes after the last.
        for w in bests.windows(2) {
            assert_eq!(
                w[1]["offset"].as_u64().unwrap(),
                w[0]["offset"].as_u64().unwrap() + 2
            );
        }
    }
    assert!(checked >= 20, "{checked}");
}

/// Remote attr value blocks and a symlink block: the header fields sit
/// where the kernel's `xfs_attr3_rmt_hdr` and `xfs_dsymlink_hdr` put them
/// and hold what xfs_db prints; the body (`data`) is xfs_db's data for a
/// value, and for the symlink the whole target the mounted kernel read.
#[test]
fn hex_remote_blocks_equal_xfs_db_and_the_kernel() {
    let k = layouts();
    let text = std::fs::read_to_string(fixtures_dir().join("remote-blocks.txt")).unwrap();
    let mut checked = 0;
    for sec in text.split("== ").skip(1) {
        let head: Vec<&str> = sec.lines().next().unwrap().split_whitespace().collect();
        let (name, path, kind, daddr) = (head[0], head[1], head[2], head[5]);
        let img = image(name);
        let h = json(&["hex", img.to_str().unwrap(), daddr, "--json"]);
        let field = |n: &str| hex_field(&h, n);
        let (layout, prefix) = if kind == "dblock" {
            ("xfs_dsymlink_hdr", "sl_")
        } else {
            ("xfs_attr3_rmt_hdr", "rm_")
        };
        let all = [
            "magic", "offset", "bytes", "crc", "uuid", "owner", "blkno", "lsn",
        ];
        check_fields(&format!("{name} {path}"), &h, &k[layout], prefix, 0, &all);
        for l in sec.lines().skip(1) {
            let Some((key, v)) = l.split_once(" = ") else {
                continue;
            };
            let key = key.trim_start_matches("hdr.");
            let ours = match key {
                "bno" => field("blkno"),
                "data" => continue,
                k => field(k),
            };
            let got = ours["value"].as_str().unwrap();
            match key {
                // xfs_db prints the stored CRC as a big-endian word.
                "crc" => {
                    let n = u32::from_str_radix(
                        v.split_whitespace()
                            .next()
                            .unwrap()
                            .trim_start_matches("0x"),
                        16,
                    )
                    .unwrap();
                    assert_eq!(
                        got,
                        format!("{:#010x}", n.swap_bytes()),
                        "{name} {path} crc"
                    );
                }
                "uuid" => assert_eq!(got, v, "{name} {path} uuid"),
                _ => {
                    let want = u64::from_str_radix(v.trim_start_matches("0x"), 16)
                        .ok()
                        .filter(|_| v.starts_with("0x"))
                        .unwrap_or_else(|| v.parse().unwrap());
                    let n = got.split_whitespace().next().unwrap();
                    let n = n
                        .strip_prefix("0x")
                        .map(|x| u64::from_str_radix(x, 16).unwrap())
                        .unwrap_or_else(|| n.parse().unwrap());
                    assert_eq!(n, want, "{name} {path} {key}");
                }
            }
        }
        let data = field("data");
        assert_eq!(data["offset"], 56, "{name} {path}: data after the header");
        let bytes: u64 = field("bytes")["value"].as_str().unwrap().parse().unwrap();
        assert_eq!(
            data["size"].as_u64().unwrap(),
            bytes,
            "{name} {path}: data size"
        );
        let want = if kind == "dblock" {
            // The target as the mounted kernel's readlink gave it.
            let tree =
                std::fs::read_to_string(fixtures_dir().join(format!("{name}.tree.txt"))).unwrap();
            let line = tree
                .lines()
                .find(|l| l.starts_with(&format!(".{path}\t")))
                .unwrap();
            format!("{:?}", line.split('\t').nth(9).unwrap())
        } else {
            let v = sec.lines().find_map(|l| l.strip_prefix("data = ")).unwrap();
            db_str(v)
        };
        assert_eq!(data["value"].as_str().unwrap(), want, "{name} {path}: data");
        checked += 1;
    }
    assert_eq!(checked, 4);
}
