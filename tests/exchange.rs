//! Real file-mapping exchanges cut short, against the kernel's recovery:
//! filesystems made by xfsprogs 6.13 with the exchange-range feature, an
//! `XFS_IOC_EXCHANGE_RANGE` of two files of hundreds to thousands of
//! one-block extents (bmbt forks), and a shutdown while it ran, so that the
//! log ends with the exchange's intent (XMI) and no done item
//! (`make/newer-xfsprogs.sh exchange`):
//!
//! * `xchg-rmap`: 6.13's defaults (rmapbt, reflink, large extent
//!   counters), whole files, each step four bmap updates and their reverse
//!   mappings;
//! * `xchg-plain`: no rmapbt nor reflink, whole files;
//! * `xchg-sizes`: a file with holes and unwritten extents and a longer
//!   reflinked one, exchanged to their ends (`XFS_EXCHANGE_RANGE_TO_EOF`:
//!   the sizes exchanged at the end);
//! * `xchg-written`: only the written blocks of a file with holes and
//!   unwritten extents exchanged (`XFS_EXCHANGE_RANGE_FILE1_WRITTEN`).
//!
//! Checked: the intents left unfinished are the ones xfs_logprint 6.13
//! shows (`NAME.logfacts.txt`); `replay -o` finishes them and the export is,
//! outside the log and the primary superblock's LSN and CRC, byte for byte
//! the copy the kernel recovered (`NAME.recovered-blocks.txt`,
//! `NAME.recovered-sb.txt`); the two files have the size, block count,
//! reflink flag and mappings xfs_db 6.13 shows in that copy
//! (`NAME.recovered-xmi.txt.zst`); the listing after replay is the kernel's
//! (`NAME.recovered-ls.jsonl`).
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::*;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

const FIXTURES: [&str; 6] = [
    "xchg-rmap",
    "xchg-plain",
    "xchg-sizes",
    "xchg-written",
    "xchg-long1",
    "xchg-long2",
];

/// The exchanges whose rest the kernel finishes in one checkpoint.
const ONE_CHECKPOINT: [&str; 4] = ["xchg-rmap", "xchg-plain", "xchg-sizes", "xchg-written"];

/// The exchanges whose rest reuses blocks it freed, so that the kernel
/// forces its log in the middle of it (once and twice).
const FORCED: [&str; 2] = ["xchg-long1", "xchg-long2"];

/// `NAME.recovered-blocks.txt`: the block size, the log's blocks and the
/// sha256 of every block the kernel's recovery changed.
struct Blocks {
    blocksize: usize,
    log: (u64, u64),
    hashes: BTreeMap<u64, String>,
}

fn blocks_oracle(name: &str) -> Blocks {
    let mut b = Blocks {
        blocksize: 0,
        log: (0, 0),
        hashes: BTreeMap::new(),
    };
    for l in oracle(name, "recovered-blocks.txt").lines() {
        if let Some(rest) = l.strip_prefix("# blocksize ") {
            b.blocksize = rest.split(';').next().unwrap().trim().parse().unwrap();
        } else if let Some(rest) = l.strip_prefix("# internal log: linear blocks ") {
            let (a, z) = rest
                .split_whitespace()
                .next()
                .unwrap()
                .split_once("..")
                .unwrap();
            b.log = (a.parse().unwrap(), z.parse().unwrap());
        } else if !l.starts_with('#') {
            let (n, h) = l.split_once(' ').unwrap();
            b.hashes.insert(n.parse().unwrap(), h.to_string());
        }
    }
    assert!(b.blocksize >= 512 && b.log.1 > b.log.0, "{name}: header");
    b
}

/// `replay -o` of the fixture: the recovered image and the replay JSON.
fn export(name: &str) -> (PathBuf, Value) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("exchange-export");
    std::fs::create_dir_all(&dir).unwrap();
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = dir.join(format!("{name}.{n}.img"));
    let _ = std::fs::remove_file(&out);
    let img = image(name);
    let (ok, stdout, err) = run_cli(&[
        "replay",
        "--json",
        img.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{name}: {err}");
    (out, serde_json::from_str(&stdout).unwrap())
}

/// A number field of an xfs_db print.
fn db_number(print: &str, field: &str) -> u64 {
    parse_xfs_db_print(print)
        .into_iter()
        .find(|(k, _)| k == field)
        .and_then(|(_, v)| xfs_db_number(&v))
        .unwrap_or_else(|| panic!("no {field} in the xfs_db print"))
}

/// The unfinished intents xfs_logprint shows: (kind, id, what follows).
fn logprint_unfinished(name: &str) -> Vec<(String, u64, String)> {
    oracle(name, "logfacts.txt")
        .lines()
        .filter_map(|l| l.strip_prefix("unfinished: "))
        .map(|l| {
            let mut w = l.splitn(4, ' ');
            let kind = w.next().unwrap().to_lowercase();
            assert_eq!(w.next(), Some("id"), "{l}");
            let id = u64::from_str_radix(w.next().unwrap().trim_start_matches("0x"), 16).unwrap();
            (kind, id, w.next().unwrap_or("").to_string())
        })
        .collect()
}

/// "key: value" pairs of xfs_logprint's XMI line: "(ino1: 0x83, igen1: ...,
/// off1: 1504, ..., len: 2496, flags: 0x0)".
fn xmi_fields(text: &str) -> BTreeMap<String, u64> {
    let inner = text
        .split_once('(')
        .and_then(|(_, r)| r.split_once(')'))
        .map(|(i, _)| i)
        .unwrap_or_else(|| panic!("no XMI fields in {text}"));
    inner
        .split(", ")
        .map(|kv| {
            let (k, v) = kv.split_once(": ").unwrap();
            let v = match v.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).unwrap(),
                None => v.parse().unwrap(),
            };
            (k.trim().to_string(), v)
        })
        .collect()
}

#[test]
fn the_unfinished_intents_are_the_ones_xfs_logprint_6_13_shows() {
    for name in FIXTURES {
        let want = logprint_unfinished(name);
        let xmis: Vec<&(String, u64, String)> = want.iter().filter(|w| w.0 == "xmi").collect();
        assert_eq!(xmis.len(), 1, "{name}: {want:?}");
        let img = image(name);
        let (ok, out, err) = run_cli(&["replay", "--json", img.to_str().unwrap()]);
        assert!(ok, "{name}: {err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        let got = v["replay"]["unfinished_intents"].as_array().unwrap();
        let mut g: Vec<(String, u64)> = got
            .iter()
            .map(|u| {
                (
                    u["kind"].as_str().unwrap().to_string(),
                    u["id"].as_u64().unwrap(),
                )
            })
            .collect();
        let mut w: Vec<(String, u64)> = want.iter().map(|(k, i, _)| (k.clone(), *i)).collect();
        g.sort();
        w.sort();
        assert_eq!(g, w, "{name}");
        // The XMI's inodes, offsets and length, as xfs_logprint decodes them.
        let f = xmi_fields(&xmis[0].2);
        let ours = got.iter().find(|u| u["kind"] == "xmi").unwrap();
        let work = ours["work"][0].as_str().unwrap();
        let expect = format!(
            "exchange {} blocks: inode {} offset {} <-> inode {} offset {}",
            f["len"], f["ino1"], f["off1"], f["ino2"], f["off2"]
        );
        assert_eq!(work, expect, "{name}");
        // A real exchange left mid-way: neither at its start nor its end.
        assert!(f["off1"] > 0 && f["len"] > 0, "{name}: {f:?}");
    }
}

/// The blocks outside the log where `rec` differs from `dirty`, each with
/// the sha256 of its bytes in `rec` after `prepare` (which may set fields
/// apart).
fn changed_block_hashes(
    o: &Blocks,
    dirty: &[u8],
    rec: &[u8],
    prepare: impl Fn(&mut Vec<u8>),
) -> BTreeMap<u64, String> {
    let mut out = BTreeMap::new();
    for (i, (a, b)) in dirty
        .chunks(o.blocksize)
        .zip(rec.chunks(o.blocksize))
        .enumerate()
    {
        let i = i as u64;
        if (o.log.0..=o.log.1).contains(&i) || a == b {
            continue;
        }
        let mut b = b.to_vec();
        prepare(&mut b);
        out.insert(i, format!("{:x}", Sha256::digest(&b)));
    }
    out
}

/// The blocks whose hashes differ between the two maps (or that only one
/// has); fails the test with the first ones.
fn assert_same_blocks(
    name: &str,
    kernel: &BTreeMap<u64, String>,
    ours: &BTreeMap<u64, String>,
    what: &str,
) {
    let differing: Vec<u64> = kernel
        .keys()
        .chain(ours.keys())
        .copied()
        .collect::<BTreeSet<u64>>()
        .into_iter()
        .filter(|b| kernel.get(b) != ours.get(b))
        .collect();
    assert!(
        differing.is_empty(),
        "{name}: {} blocks differ from the kernel's recovered copy{what}, first {:?}",
        differing.len(),
        &differing[..differing.len().min(10)]
    );
}

#[test]
fn an_exchange_cut_short_is_finished_byte_for_byte_as_the_kernel_finishes_it() {
    for name in ONE_CHECKPOINT {
        let o = blocks_oracle(name);
        let (out, v) = export(name);
        let m = &v["mount"];
        assert!(m["intents"]["not_finished"].is_null(), "{name}: {m}");
        assert!(
            m["intents_left"].as_array().unwrap().is_empty(),
            "{name}: {m}"
        );
        let dirty = std::fs::read(image(name)).unwrap();
        let mut rec = std::fs::read(&out).unwrap();
        assert_eq!(dirty.len(), rec.len(), "{name}");
        // The primary superblock's LSN and CRC depend on the log the kernel
        // wrote after its recovery: taken from its copy.
        let sb = oracle(name, "recovered-sb.txt");
        rec[240..248].copy_from_slice(&db_number(&sb, "lsn").to_be_bytes());
        let crc = u32::try_from(db_number(&sb, "crc")).unwrap();
        rec[224..228].copy_from_slice(&crc.to_be_bytes());
        let ours = changed_block_hashes(&o, &dirty, &rec, |_| {});
        let kernel: BTreeMap<u64, String> = o
            .hashes
            .iter()
            .filter(|(b, _)| !(o.log.0..=o.log.1).contains(*b))
            .map(|(b, h)| (*b, h.clone()))
            .collect();
        // The exchange changed blocks outside the log: inodes, bmbt leaves,
        // AG headers (and reverse-mapping leaves with the rmapbt).
        assert!(kernel.len() > 10, "{name}: {} blocks", kernel.len());
        assert_same_blocks(name, &kernel, &ours, "");
    }
}

/// Where the kernel's recovery of these images forced its log in the
/// middle of the exchange's rest (`NAME.recovered-forces.txt`: each force
/// from `xfs_buf_lock`, with the commits before it) and the checkpoints
/// its mount wrote from the old head on (start LSN block, 512-byte
/// blocks), as traced.
fn kernel_forces(name: &str) -> (Vec<u64>, Vec<(u64, u64)>) {
    let text = oracle(name, "recovered-forces.txt");
    let mut forces = Vec::new();
    let mut ckpts: Vec<(u64, u64)> = Vec::new();
    for l in text.lines() {
        if let Some(r) = l.strip_prefix("force after ") {
            if r.ends_with("caller xfs_buf_lock") {
                forces.push(r.split_whitespace().next().unwrap().parse().unwrap());
            }
        } else if let Some(r) = l.strip_prefix("record ") {
            let w: Vec<&str> = r.split_whitespace().collect();
            let block: u64 = w[0].split_once(':').unwrap().1.parse().unwrap();
            let blocks: u64 = w[2].parse().unwrap();
            if w[8] == "1" {
                ckpts.push((block, blocks));
            } else if let Some(c) = ckpts.last_mut() {
                c.1 += blocks;
            }
        }
    }
    (forces, ckpts)
}

/// The rest of these exchanges frees bmbt and rmapbt blocks and then takes
/// them again: the kernel meets a stale buffer still pinned in the
/// checkpoint being built (`xfs_buf_lock`), forces its log there, and the
/// extents the work freed until then stop being busy, which changes where
/// later blocks go. Replay forces at the same points (the kernel's trace:
/// once in xchg-long1, twice in xchg-long2, the same number of
/// transactions apart) and its export is, every LSN and CRC field set
/// aside, byte for byte the kernel's recovered copy
/// (`NAME.recovered-masked.txt`, made by `stamp_masked.py` from that
/// copy). Which LSN each block carries follows from the checkpoints'
/// sizes: each checkpoint takes as many log blocks as the kernel's (its
/// records in the trace), and tests/replay.rs compares the export with the
/// LSN and CRC fields too.
#[test]
fn an_exchange_that_reuses_freed_blocks_forces_the_log_where_the_kernel_does() {
    for name in FORCED {
        let (forces, ckpts) = kernel_forces(name);
        assert!(!forces.is_empty(), "{name}: no force in the oracle");
        let (out, v) = export(name);
        let intents = &v["mount"]["intents"];
        assert!(intents["not_finished"].is_null(), "{name}: {intents}");
        let forced = intents["forced"].as_array().unwrap();
        assert_eq!(forced.len(), forces.len(), "{name}: {intents}");
        // The forces come as many transactions apart as the kernel's.
        let ours: Vec<u64> = forced
            .iter()
            .map(|f| f["after_transactions"].as_u64().unwrap())
            .collect();
        let gaps = |v: &[u64]| v.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>();
        assert_eq!(
            gaps(&ours),
            gaps(&forces),
            "{name}: ours {ours:?}, kernel {forces:?}"
        );
        // The intents' work is one checkpoint more than the forces, then
        // two superblock checkpoints, as the kernel's mount wrote.
        assert_eq!(ckpts.len(), forces.len() + 1 + 2, "{name}: {ckpts:?}");
        // Each checkpoint of the work starts where the kernel's did and
        // takes as many log blocks.
        let ours: Vec<(u64, u64)> = forced
            .iter()
            .chain([&intents["checkpoint"]])
            .map(|c| {
                let at = c["lsn"]["block"].as_u64().unwrap();
                (at, c["blocks"].as_u64().unwrap())
            })
            .collect();
        assert_eq!(ours, ckpts[..forced.len() + 1], "{name}");
        let o = blocks_oracle(name);
        let dirty = std::fs::read(image(name)).unwrap();
        let rec = std::fs::read(&out).unwrap();
        let ours = changed_block_hashes(&o, &dirty, &rec, |b| mask_stamps(b, 512, 512));
        let kernel = masked_oracle(name);
        assert!(kernel.len() > 30, "{name}: {} blocks", kernel.len());
        assert_same_blocks(name, &kernel, &ours, " (stamps aside)");
    }
}

/// `NAME.recovered-xmi.txt`: per file, (size, nblocks, reflink) and the
/// mappings (offset, startblock, count, unwritten).
type FileState = ((u64, u64, u64), Vec<(u64, u64, u64, bool)>);

fn xfs_db_files(name: &str) -> BTreeMap<u64, FileState> {
    let text = oracle(name, "recovered-xmi.txt");
    let mut out = BTreeMap::new();
    for sec in text.split("### ").skip(1) {
        let (head, body) = sec.split_once('\n').unwrap();
        let ino: u64 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        let core = (
            db_number(body, "core.size"),
            db_number(body, "core.nblocks"),
            db_number(body, "v3.reflink"),
        );
        // data offset 0 startblock 14 (0/14) count 1 flag 0
        let maps = body
            .lines()
            .filter_map(|l| l.strip_prefix("data offset "))
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                (
                    w[0].parse().unwrap(),
                    w[2].parse().unwrap(),
                    w[5].parse().unwrap(),
                    w[7] == "1",
                )
            })
            .collect();
        out.insert(ino, (core, maps));
    }
    assert_eq!(out.len(), 2, "{name}: files a and b");
    out
}

#[test]
fn the_exchanged_files_have_the_mappings_xfs_db_shows() {
    for name in FIXTURES {
        let want = xfs_db_files(name);
        let (out, _) = export(name);
        for (ino, (core, maps)) in &want {
            let (ok, js, err) =
                run_cli(&["inode", "--json", out.to_str().unwrap(), &ino.to_string()]);
            assert!(ok, "{name} inode {ino}: {err}");
            let v: Value = serde_json::from_str(&js).unwrap();
            let reflink = v["flags2_names"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f == "reflink");
            let got_core = (
                v["size"].as_u64().unwrap(),
                v["nblocks"].as_u64().unwrap(),
                u64::from(reflink),
            );
            assert_eq!(&got_core, core, "{name} inode {ino}: size, blocks, reflink");
            let got: Vec<(u64, u64, u64, bool)> = v["data_fork"]["extents"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    (
                        e["file_block"].as_u64().unwrap(),
                        e["start"].as_u64().unwrap(),
                        e["len"].as_u64().unwrap(),
                        e["unwritten"].as_bool().unwrap(),
                    )
                })
                .collect();
            assert!(
                maps.len() > 100,
                "{name} inode {ino}: {} mappings",
                maps.len()
            );
            assert_eq!(&got, maps, "{name} inode {ino}: mappings");
        }
    }
}

#[test]
fn the_listing_after_replay_is_the_kernels() {
    for name in FIXTURES {
        let img = image(name);
        let (ok, out, err) = run_cli(&["ls", "-R", "--replay", "--json", img.to_str().unwrap()]);
        assert!(ok, "{name}: {err}");
        let by_path = |text: &str| -> BTreeMap<String, Value> {
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| {
                    let v: Value = serde_json::from_str(l).unwrap();
                    (v["path"].as_str().unwrap().to_string(), v)
                })
                .collect()
        };
        let ours = by_path(&out);
        let kernel = by_path(&oracle(name, "recovered-ls.jsonl"));
        assert!(
            kernel.contains_key("/a") && kernel.contains_key("/b"),
            "{name}"
        );
        assert_eq!(ours, kernel, "{name}");
    }
}
