//! `xfs-explorer log --json` against `xfs_logprint -t` and `-d`, recorded
//! from every kernel-made fixture by tests/fixtures/make/oracles.sh log:
//! head, tail, clean or dirty, every record between tail and head, every
//! committed transaction with its items (kind, region count, region
//! lengths) and their decoded format fields.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::*;
use serde_json::Value;

const UNNAMED: &str = LOGPRINT_UNNAMED;

fn field<'a>(it: &'a LpItem, name: &str) -> Option<&'a str> {
    it.fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn decode(name: &str) -> Value {
    let img = image(name);
    let (ok, out, err) = run_cli(&["log", "--json", img.to_str().unwrap()]);
    assert!(ok, "{name}: {err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn log_equals_xfs_logprint_on_every_fixture() {
    let names = fixtures_with("logt.txt");
    let mut dirty = 0;
    let mut buffers_checked = 0;
    let mut items_checked = 0;
    for name in &names {
        let lp = parse_logprint(&oracle(name, "logt.txt"));
        let ours = decode(name);
        assert_eq!(ours["clean"], Value::Bool(lp.clean), "{name}: clean");
        assert_eq!(
            ours["head"]["block"].as_u64().unwrap(),
            lp.head,
            "{name}: head"
        );
        assert_eq!(
            ours["tail"]["block"].as_u64().unwrap(),
            lp.tail,
            "{name}: tail"
        );
        assert!(
            ours["problems"].as_array().unwrap().is_empty(),
            "{name}: {}",
            ours["problems"]
        );
        assert!(
            ours["crc"]["mismatches"].as_array().unwrap().is_empty(),
            "{name}"
        );
        // Every record xfs_logprint processed, in order.
        let recs: Vec<(u64, u64)> = ours["record_list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["lsn"]["cycle"].as_u64().unwrap(),
                    r["lsn"]["block"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(recs, lp.records, "{name}: records");
        assert_eq!(ours["records"].as_u64().unwrap(), lp.records.len() as u64);
        let ts = ours["transactions"].as_array().unwrap();
        assert_eq!(ts.len(), lp.trans.len(), "{name}: transactions");
        if !lp.clean {
            dirty += 1;
            assert!(
                !lp.trans.is_empty(),
                "{name}: dirty log without transactions"
            );
        }
        for (ti, (t, l)) in ts.iter().zip(&lp.trans).enumerate() {
            let at = format!("{name}: transaction {ti} (tid {:#x})", l.tid);
            assert_eq!(t["tid"].as_u64().unwrap(), l.tid, "{at}");
            assert_eq!(t["num_items"].as_u64().unwrap(), l.num_items, "{at}");
            let items = t["items"].as_array().unwrap();
            let kinds: Vec<(&str, u64)> = items
                .iter()
                .map(|i| (i["kind"].as_str().unwrap(), i["regions"].as_u64().unwrap()))
                .collect();
            // An unnamed item stands for ours only when ours is of a
            // type newer than that xfs_logprint.
            let theirs: Vec<(&str, u64)> = l
                .items
                .iter()
                .zip(kinds.iter().map(|k| k.0).chain(std::iter::repeat("")))
                .map(|(i, ours)| match i.kind.as_str() {
                    UNNAMED if NEWER_KINDS.contains(&ours) => (ours, i.cnt),
                    k => (k, i.cnt),
                })
                .collect();
            assert_eq!(kinds, theirs, "{at}: item kinds and region counts");
            // num_items counts regions.
            let regions: u64 = kinds.iter().map(|k| k.1).sum();
            assert_eq!(regions, l.num_items, "{at}: regions");
            for (ii, (i, li)) in items.iter().zip(&l.items).enumerate() {
                let at = format!("{at} item {ii} ({})", li.kind);
                items_checked += 1;
                assert_eq!(li.cnt, li.total, "{at}: oracle item incomplete");
                let lens: Vec<u64> = i["region_lens"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_u64().unwrap())
                    .collect();
                assert_eq!(lens, li.lens, "{at}: region lengths");
                assert!(i.get("problem").is_none(), "{at}: {}", i["problem"]);
                check_item(i, li, &at);
                if li.kind == "buf" {
                    buffers_checked += 1;
                    check_buffer_runs(i, &at);
                }
            }
        }
    }
    assert!(dirty >= 2, "only {dirty} dirty fixtures");
    assert!(buffers_checked > 100 && items_checked > 1000);
}

/// The decoded format fields xfs_logprint prints.
fn check_item(i: &Value, li: &LpItem, at: &str) {
    let n = |k: &str| {
        i[k].as_u64()
            .unwrap_or_else(|| panic!("{at}: no {k} in {i}"))
    };
    let f =
        |k: &str| logprint_num(field(li, k).unwrap_or_else(|| panic!("{at}: oracle has no {k}")));
    match li.kind.as_str() {
        "buf" => {
            // blkno is signed in the format; logprint prints it as hex.
            assert_eq!(
                i["blkno"].as_i64().unwrap() as u64,
                f("blkno"),
                "{at}: blkno"
            );
            assert_eq!(n("len"), f("len"), "{at}: len");
            assert_eq!(n("map_size"), f("size"), "{at}: bmap size");
            assert_eq!(n("flags"), f("flags"), "{at}: flags");
            assert_eq!(n("regions"), f("#regs"), "{at}: #regs");
        }
        "inode" => {
            assert_eq!(n("ino"), f("ino"), "{at}: ino");
            assert_eq!(n("fields"), f("flags"), "{at}: fields");
            assert_eq!(n("dsize"), f("dsize"), "{at}: dsize");
        }
        "icreate" => {
            assert_eq!(n("ag"), f("#ag"), "{at}: ag");
            assert_eq!(n("agbno"), f("agbno"), "{at}: agbno");
            assert_eq!(n("length"), f("len"), "{at}: len");
            assert_eq!(n("count"), f("cnt"), "{at}: cnt");
            assert_eq!(n("isize"), f("isize"), "{at}: isize");
            assert_eq!(n("gen"), f("gen"), "{at}: gen");
        }
        "efi" | "efd" | "rui" | "rud" | "cui" | "cud" | "bui" | "bud" | "attri" | "attrd" => {
            assert_eq!(n("id"), f("id"), "{at}: id");
            if let Some(ne) = field(li, "num_extents") {
                assert_eq!(n("nextents"), logprint_num(ne), "{at}: num_extents");
            }
        }
        _ => {}
    }
}

/// Runs are regions minus the format region, except where a run was split
/// at a page boundary; cancelled buffers log no data.
fn check_buffer_runs(i: &Value, at: &str) {
    let regions = i["regions"].as_u64().unwrap();
    let runs = i["runs"].as_array().unwrap();
    let straddles = i.get("straddles").and_then(Value::as_u64).unwrap_or(0);
    if i["cancel"].as_bool().unwrap() {
        assert_eq!(regions, 1, "{at}: cancelled buffer logs data");
        return;
    }
    assert!(
        runs.len() as u64 + straddles == regions - 1,
        "{at}: {} runs, {straddles} straddles, {regions} regions",
        runs.len()
    );
    // Each run's bytes are the lengths of its regions.
    let chunks: u64 = runs.iter().map(|r| r[1].as_u64().unwrap()).sum();
    let data: u64 = i["region_lens"].as_array().unwrap()[1..]
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(chunks * 128, data, "{at}: run bytes vs region bytes");
}

/// Every record header `xfs_logprint -d` lists (the whole physical log,
/// not only the live part) reads back with the same fields and a CRC that
/// checks (or none, for mkfs's records).
#[test]
fn every_record_header_equals_xfs_logprint_d() {
    use xfs_explorer::xfs::fs::Fs;
    use xfs_explorer::xfs::image::Image;
    use xfs_explorer::xfs::log::record::RecordReader;
    use xfs_explorer::xfs::log::{CrcCheck, LogDev};
    use xfs_explorer::xfs::read::FileReader;
    let mut checked = 0;
    let mut with_ext_headers = 0;
    for name in fixtures_with("logd.txt") {
        let fs = Fs::open(Image::new(FileReader::open(&image(&name)).unwrap())).unwrap();
        let dev = LogDev::of_fs(&fs).unwrap();
        let mut reader = RecordReader::new();
        for line in oracle(&name, "logd.txt")
            .lines()
            .filter(|l| l.contains("HEADER"))
        {
            // "  2 HEADER Cycle 1 tail 1:000002 len  32256 ops 72"
            let t: Vec<&str> = line.split_whitespace().collect();
            let blk: u32 = t[0].parse().unwrap();
            let (tc, tb) = t[5].split_once(':').unwrap();
            let rec = reader
                .read(&dev, blk)
                .unwrap_or_else(|e| panic!("{name}: block {blk}: {e}"));
            let h = &rec.header;
            let at = format!("{name}: record at {blk}");
            assert_eq!(h.cycle, t[3].parse::<u32>().unwrap(), "{at}: cycle");
            assert_eq!(
                h.tail_lsn.cycle,
                tc.parse::<u32>().unwrap(),
                "{at}: tail cycle"
            );
            assert_eq!(
                h.tail_lsn.block,
                tb.parse::<u32>().unwrap(),
                "{at}: tail block"
            );
            assert_eq!(h.len, t[7].parse::<u32>().unwrap(), "{at}: h_len");
            assert_eq!(h.num_logops, t[9].parse::<u32>().unwrap(), "{at}: ops");
            assert!(
                matches!(rec.crc, CrcCheck::Ok | CrcCheck::NotChecksummed),
                "{at}: {:?}",
                rec.crc
            );
            if h.hblks > 1 {
                with_ext_headers += 1;
            }
            checked += 1;
        }
    }
    assert!(checked > 500, "{checked}");
    assert!(with_ext_headers > 0, "no record with extended headers");
}

/// The unfinished intents are those xfs_logprint shows without a done item
/// of the same id.
#[test]
fn unfinished_intents_are_those_without_done_items() {
    let mut seen = 0;
    for name in fixtures_with("logt.txt") {
        let lp = parse_logprint(&oracle(&name, "logt.txt"));
        let mut open: Vec<(String, u64)> = Vec::new();
        for t in &lp.trans {
            for i in &t.items {
                let Some(id) = field(i, "id").map(logprint_num) else {
                    continue;
                };
                let done_of = match i.kind.as_str() {
                    "efd" => Some("efi"),
                    "rud" => Some("rui"),
                    "cud" => Some("cui"),
                    "bud" => Some("bui"),
                    "attrd" => Some("attri"),
                    _ => None,
                };
                match done_of {
                    Some(k) => {
                        if let Some(p) = open.iter().rposition(|(kk, ii)| kk == k && *ii == id) {
                            open.remove(p);
                        }
                    }
                    // A dquot's id is its quota id, not an intent's.
                    None if i.kind == "dquot" => {}
                    None => open.push((i.kind.clone(), id)),
                }
            }
        }
        let ours = decode(&name);
        let mine: Vec<(String, u64)> = ours["unfinished_intents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| {
                (
                    u["kind"].as_str().unwrap().to_string(),
                    u["id"].as_u64().unwrap(),
                )
            })
            .collect();
        // Intents of types that xfs_logprint cannot name carry no id it
        // shows: tests/replay.rs checks those against the forged ones.
        let unnamed = lp
            .trans
            .iter()
            .any(|t| t.items.iter().any(|i| i.kind == UNNAMED));
        let mine: Vec<(String, u64)> = mine
            .into_iter()
            .filter(|(k, _)| !(unnamed && NEWER_KINDS.contains(&k.as_str())))
            .collect();
        assert_eq!(mine, open, "{name}: unfinished intents");
        seen += open.len();
    }
    assert!(seen >= 3, "fixtures hold only {seen} unfinished intents");
}

/// The entry names read from the last logged copy of every fully logged
/// directory data block are names in the tree the kernel recovered from
/// the same log (NAME.recovered-ls.jsonl): the entry scanner, and for
/// directory blocks in several segments their placing, read the kernel's
/// own bytes right.
#[test]
fn logged_directory_entries_are_in_the_recovered_tree() {
    use std::collections::{BTreeMap, HashSet};
    let mut checked = 0usize;
    for name in fixtures_with("recovered-ls.jsonl") {
        let recovered: HashSet<String> = oracle(&name, "recovered-ls.jsonl")
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| {
                let p = v["path"].as_str()?;
                Some(p.rsplit('/').next()?.to_string())
            })
            .collect();
        let img = image(&name);
        let (ok, out, err) = run_cli(&["log", "--json", "--detail", img.to_str().unwrap()]);
        assert!(ok, "{name}: {err}");
        let d: Value = serde_json::from_str(&out).unwrap();
        // blkno -> names in its last logged copy (None: not fully logged).
        let mut last: BTreeMap<i64, Option<Vec<String>>> = BTreeMap::new();
        for t in d["transactions"].as_array().unwrap() {
            for i in t["items"].as_array().unwrap() {
                if i["kind"] != "buf" {
                    continue;
                }
                let blkno = i["blkno"].as_i64().unwrap();
                let full = i["runs"].as_array().unwrap().len() == 1
                    && i["runs"][0][0] == 0
                    && i["runs"][0][1].as_u64().unwrap() == i["len"].as_u64().unwrap() * 4;
                let dir = matches!(i["buf_type"].as_str(), Some("dir_data" | "dir_block"));
                if !dir || !full || i["cancel"] == true {
                    last.insert(blkno, None);
                    continue;
                }
                let mut names = Vec::new();
                for f in i["run_fields"][0].as_array().unwrap() {
                    let f = f.as_str().unwrap();
                    if let Some(rest) = f.strip_prefix("entry \"") {
                        if let Some((n, _)) = rest.rsplit_once("\" at ") {
                            names.push(n.to_string());
                        }
                    }
                }
                last.insert(blkno, Some(names));
            }
        }
        for (blkno, names) in last {
            for n in names.unwrap_or_default() {
                if n == "." || n == ".." {
                    continue;
                }
                assert!(
                    recovered.contains(&n),
                    "{name}: entry {n:?} of the directory block at daddr {blkno} is not in the recovered tree"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 500, "only {checked} names checked");
}

/// A btree's record, key-slot and pointer sizes and whether its header is
/// the long form, by block magic (`xfs_format.h`: xfs_alloc_rec 8,
/// xfs_inobt_rec 16, xfs_rmap_rec 24 with a 20-byte key stored low and
/// high, xfs_refcount_rec 12, xfs_bmbt_rec 16 with an 8-byte key and an
/// 8-byte pointer; AG btrees point with 4-byte AG block numbers).
fn kernel_btree(magic: u32) -> Option<(&'static str, bool, u32, u32, u32)> {
    Some(match magic {
        0x41423342 => ("bnobt", false, 8, 8, 4),
        0x41423343 => ("cntbt", false, 8, 8, 4),
        0x49414233 => ("inobt", false, 16, 4, 4),
        0x46494233 => ("finobt", false, 16, 4, 4),
        0x524d4233 => ("rmapbt", false, 24, 40, 4),
        0x52334643 => ("refcountbt", false, 12, 4, 4),
        0x424d4133 => ("bmbt", true, 16, 8, 8),
        _ => return None,
    })
}

fn hex_bytes(h: &str) -> Vec<u8> {
    (0..h.len() / 2)
        .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// The slots `name[i]` (1-based, `size` bytes from `base`, `max` of them)
/// that lie wholly inside `[lo, hi)`: the ones the kernel can have logged
/// with a run of these chunks (a logged slot dirties every chunk it
/// touches).
fn whole_slots(base: u32, size: u32, max: u32, lo: u32, hi: u32) -> Vec<u32> {
    (1..=max)
        .filter(|i| {
            let start = base + (i - 1) * size;
            start >= lo && start + size <= hi
        })
        .collect()
}

/// "recs[3-7]" / "recs[3]" -> 3..=7, from a run's labels.
fn named(labels: &[String], name: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for l in labels {
        let l = l.rsplit(": ").next().unwrap();
        let Some(rest) = l.strip_prefix(&format!("{name}[")) else {
            continue;
        };
        let inner = rest.trim_end_matches(']');
        let (a, b) = inner.split_once('-').unwrap_or((inner, inner));
        out.extend(a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap());
    }
    out
}

/// The runs of logged btree blocks are named by the kernel's layout: the
/// block's type, level and record count as the kernel left them (xfs_db on
/// a kernel-recovered copy, `NAME.logged-blocks.txt`), and the records,
/// keys and pointers each run covers whole, by the kernel's structure
/// sizes. Directory leaf, da node and attr leaf blocks: their logged entry
/// counts are the kernel's.
#[test]
fn logged_btree_and_da_block_runs_are_named_by_the_kernels_layout() {
    use std::collections::BTreeMap;
    let mut runs_checked = 0usize;
    let mut heads_checked = 0usize;
    let mut slots_named = 0usize;
    for name in fixtures_with("logged-blocks.txt") {
        let facts = oracle(&name, "logfacts.txt");
        let mount_work = !facts.contains("unfinished_intents: 0");
        let blocks: BTreeMap<i64, (u32, Vec<u8>)> = oracle(&name, "logged-blocks.txt")
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (
                    f[0].parse().unwrap(),
                    (f[1].parse().unwrap(), hex_bytes(f[2])),
                )
            })
            .collect();
        let img = image(&name);
        let (ok, out, err) = run_cli(&["log", "--json", "--detail", img.to_str().unwrap()]);
        assert!(ok, "{name}: {err}");
        let d: Value = serde_json::from_str(&out).unwrap();
        let mut last: BTreeMap<i64, Value> = BTreeMap::new();
        for t in d["transactions"].as_array().unwrap() {
            for i in t["items"].as_array().unwrap() {
                if i["kind"] != "buf" {
                    continue;
                }
                // A cancelled buffer is not replayed at all (nor its
                // earlier copies): the block keeps what is on disk.
                let blkno = i["blkno"].as_i64().unwrap();
                last.insert(blkno, i.clone());
                if i["buf_type"] != "btree"
                    || i["cancel"] == true
                    || i.get("segment_offset").is_some()
                {
                    continue;
                }
                let Some(head) = i.get("head") else {
                    continue;
                };
                let magic = head["magic"].as_u64().unwrap() as u32;
                let level = head["level"].as_u64().unwrap();
                // Slots past the logged bb_numrecs are named as unused.
                let numrecs = head["count"].as_u64().unwrap() as u32;
                let Some((tree, long, rec, key, ptr)) = kernel_btree(magic) else {
                    continue;
                };
                let hdr = if long { 72 } else { 56 };
                let blk = i["len"].as_u64().unwrap() as u32 * 512;
                let runs = i["runs"].as_array().unwrap();
                let fields = i["run_fields"].as_array().unwrap();
                for (r, f) in runs.iter().zip(fields) {
                    let lo = r[0].as_u64().unwrap() as u32 * 128;
                    let hi = lo + r[1].as_u64().unwrap() as u32 * 128;
                    let labels: Vec<String> = f
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|s| s.as_str().unwrap().to_string())
                        .collect();
                    let at = format!(
                        "{name}: {tree} block at daddr {blkno}, bytes {lo}..{hi}: {labels:?}"
                    );
                    assert!(
                        labels[0].starts_with(&format!("{tree} level {level}: ")),
                        "{at}"
                    );
                    if lo < hdr {
                        assert!(labels[0].contains("bb_"), "{at}: the header is not named");
                    }
                    let check = |name: &str, base: u32, size: u32, max: u32| {
                        let mut want = whole_slots(base, size, max, lo, hi);
                        let past = want.iter().any(|i| *i > numrecs);
                        want.retain(|i| *i <= numrecs);
                        assert_eq!(
                            labels.iter().any(|l| l
                                .rsplit(": ")
                                .next()
                                .unwrap()
                                .starts_with(&format!("unused {name} slots"))),
                            past,
                            "{at}: unused {name} slots"
                        );
                        assert_eq!(named(&labels, name), want, "{at}: {name}");
                        want.len()
                    };
                    if level == 0 {
                        slots_named += check("recs", hdr, rec, (blk - hdr) / rec);
                    } else {
                        let max = (blk - hdr) / (key + ptr);
                        slots_named += check("keys", hdr, key, max);
                        slots_named += check("ptrs", hdr + max * key, ptr, max);
                    }
                    runs_checked += 1;
                }
            }
        }
        if mount_work {
            // The kernel's mount finished intents after recovery: blocks
            // changed after their last logged copy.
            continue;
        }
        // The AGs where the mount frees CoW staging extents (its btrees
        // change after recovery) are left out.
        let (ok, out, err) = run_cli(&["replay", "--json", img.to_str().unwrap()]);
        assert!(ok, "{name}: {err}");
        let r: Value = serde_json::from_str(&out).unwrap();
        let cow_ags: Vec<u64> = r["mount"]["cow"]["freed"]
            .as_array()
            .map(|a| a.iter().map(|c| c["agno"].as_u64().unwrap()).collect())
            .unwrap_or_default();
        let sb = oracle(&name, "sb.txt");
        let sbv = |f: &str| {
            sb.lines()
                .find_map(|l| l.strip_prefix(&format!("{f} = ")))
                .unwrap()
                .trim()
                .parse::<u64>()
                .unwrap()
        };
        let (bs, agblocks) = (sbv("blocksize"), sbv("agblocks"));
        for (blkno, (t, bytes)) in &blocks {
            let Some(i) = last.get(blkno) else { continue };
            let Some(head) = i.get("head") else { continue };
            if i["cancel"] == true || i.get("segment_offset").is_some() {
                continue;
            }
            if cow_ags.contains(&(*blkno as u64 * 512 / bs / agblocks)) {
                continue;
            }
            let be16 = |o: usize| u64::from(u16::from_be_bytes([bytes[o], bytes[o + 1]]));
            let be32 =
                |o: usize| u64::from(u32::from_be_bytes(bytes[o..o + 4].try_into().unwrap()));
            let at = format!("{name}: block at daddr {blkno} (type {t})");
            // Compare only blocks that still hold what was last logged
            // there (a freed block reused for file data is not logged).
            let (ty, magic) = match t {
                4 => ("btree", None),
                13 => ("dir_leaf1", Some(0x3df1)),
                14 => ("dir_leafn", Some(0x3dff)),
                15 => ("da_node", Some(0x3ebe)),
                16 => ("attr_leaf", Some(0x3bee)),
                _ => continue,
            };
            let still = match magic {
                None => kernel_btree(be32(0) as u32).is_some(),
                Some(m) => be16(8) == m,
            };
            if i["buf_type"] != ty || !still {
                continue;
            }
            match t {
                4 => {
                    assert_eq!(head["magic"].as_u64(), Some(be32(0)), "{at}: magic");
                    assert_eq!(head["level"].as_u64(), Some(be16(4)), "{at}: level");
                    assert_eq!(head["count"].as_u64(), Some(be16(6)), "{at}: numrecs");
                }
                // xfs_da3_blkinfo is 56 bytes; count follows, then (da
                // nodes) level.
                13..=16 => {
                    assert_eq!(head["count"].as_u64(), Some(be16(56)), "{at}: count");
                    if *t == 15 {
                        assert_eq!(head["level"].as_u64(), Some(be16(58)), "{at}: level");
                    }
                }
                _ => continue,
            }
            heads_checked += 1;
        }
    }
    eprintln!("{runs_checked} runs, {slots_named} records/keys/pointers named, {heads_checked} headers against xfs_db");
    assert!(runs_checked > 1000, "{runs_checked} runs");
    assert!(heads_checked > 200, "{heads_checked} headers");
    assert!(slots_named > 1000, "{slots_named} slots");
}
