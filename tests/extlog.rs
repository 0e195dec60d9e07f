//! A filesystem whose log is on an external device (`mkfs.xfs -l
//! logdev=FILE`; `sb_logstart` 0), opened with `--logdev`: the log decoded
//! as `xfs_logprint -l` reads it, the replayed tree as the kernel lists it
//! after recovering a copy of the pair, and `replay -o` (with
//! `--logdev-output`) byte for byte the kernel's recovered data device
//! outside the superblock's LSN and CRC. Fixtures and oracles:
//! `tests/fixtures/make/extlog.sh` (the kernel, `xfs_logprint`,
//! `xfs_db`, `xfs_repair`); the oracles are named `pair-*`.
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
use std::path::PathBuf;

const NAME: &str = "extlog";

/// The decompressed external log device of the fixture, made on first use.
fn log_device() -> PathBuf {
    decompressed(&format!("{NAME}.log"))
}

fn paths() -> (String, String) {
    (
        image(NAME).to_str().unwrap().to_string(),
        log_device().to_str().unwrap().to_string(),
    )
}

/// `key: value` of the log facts.
fn fact(facts: &str, key: &str) -> String {
    facts
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .unwrap_or_else(|| panic!("no {key} in the log facts"))
        .trim()
        .to_string()
}

/// (tid, #items) of every transaction `xfs_logprint -t` printed, and the
/// item type of every item line, per transaction.
fn logprint_transactions(text: &str) -> Vec<(u64, u64, Vec<String>)> {
    let mut out: Vec<(u64, u64, Vec<String>)> = Vec::new();
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("TRANS: tid:0x") {
            let tid = u64::from_str_radix(rest.split_whitespace().next().unwrap(), 16).unwrap();
            let n = l
                .split_whitespace()
                .find_map(|w| w.strip_prefix("#items:"))
                .unwrap()
                .parse()
                .unwrap();
            out.push((tid, n, Vec::new()));
        } else if let Some((kind, _)) = l.split_once(": ") {
            if !kind.is_empty()
                && kind.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                && l.contains("cnt:")
            {
                out.last_mut().unwrap().2.push(kind.to_string());
            }
        }
    }
    out
}

/// Our item kinds by the names `xfs_logprint -t` gives them.
fn logprint_kind(ours: &str) -> &'static str {
    match ours {
        "buf" => "BUF",
        "inode" => "INO",
        "icreate" => "ICR",
        "dquot" => "DQUOT",
        "efi" => "EFI",
        "efd" => "EFD",
        other => panic!("an item kind the fixture does not hold: {other}"),
    }
}

#[test]
fn log_with_logdev_equals_xfs_logprint() {
    let (img, log) = paths();
    let (ok, out, err) = run_cli(&["--logdev", &log, "log", "--json", &img]);
    assert!(ok, "{err}");
    let d: Value = serde_json::from_str(&out).unwrap();
    let facts = oracle(NAME, "pair-logfacts.txt");
    assert_eq!(fact(&facts, "state"), "DIRTY");
    assert_eq!(d["clean"], Value::Bool(false));
    assert_eq!(
        d["head"]["block"].as_u64().unwrap().to_string(),
        fact(&facts, "head_block")
    );
    assert_eq!(
        d["tail"]["block"].as_u64().unwrap().to_string(),
        fact(&facts, "tail_block")
    );
    assert_eq!(
        d["records"].as_u64().unwrap().to_string(),
        fact(&facts, "records")
    );
    assert!(
        d["problems"].as_array().unwrap().is_empty(),
        "{}",
        d["problems"]
    );
    assert!(d["crc"]["mismatches"].as_array().unwrap().is_empty());
    let ts = d["transactions"].as_array().unwrap();
    assert_eq!(ts.len().to_string(), fact(&facts, "transactions"));
    let lp = logprint_transactions(&oracle(NAME, "pair-logt.txt"));
    assert_eq!(ts.len(), lp.len());
    let mut by_kind: BTreeMap<String, u64> = BTreeMap::new();
    for (t, (tid, n, kinds)) in ts.iter().zip(&lp) {
        assert_eq!(t["tid"].as_u64().unwrap(), *tid);
        assert_eq!(t["num_items"].as_u64().unwrap(), *n, "tid {tid:#x}");
        let ours: Vec<String> = t["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| logprint_kind(i["kind"].as_str().unwrap()).to_string())
            .collect();
        assert_eq!(&ours, kinds, "tid {tid:#x}: item kinds in order");
        for k in ours {
            *by_kind.entry(k).or_default() += 1;
        }
    }
    let ours_items: Vec<String> = by_kind.iter().map(|(k, n)| format!("{k}={n}")).collect();
    assert_eq!(ours_items.join(" "), fact(&facts, "items"));
    assert_eq!(d["log"]["external"], Value::Bool(true), "{}", d["log"]);
    assert_eq!(
        d["log"]["len_bbs"].as_u64().unwrap().to_string(),
        fact(&facts, "log_length_bb")
    );
}

fn parse_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn by_path(lines: &[Value]) -> BTreeMap<String, Value> {
    lines
        .iter()
        .map(|v| (v["path"].as_str().unwrap().to_string(), v.clone()))
        .collect()
}

#[test]
fn replayed_listing_with_logdev_equals_the_kernels_after_recovery() {
    let (img, log) = paths();
    let (ok, out, err) = run_cli(&["--logdev", &log, "--replay", "ls", "-R", "--json", &img]);
    assert!(ok, "{err}");
    let ours = by_path(&parse_lines(&out));
    let kernel = by_path(&parse_lines(&oracle(NAME, "pair-recovered-ls.jsonl")));
    assert!(kernel.len() > 40, "{}", kernel.len());
    for (p, k) in &kernel {
        assert_eq!(ours.get(p), Some(k), "{p}");
    }
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        kernel.keys().collect::<Vec<_>>()
    );
}

#[test]
fn without_logdev_the_log_is_said_to_be_external_and_the_disk_still_reads() {
    let (img, _) = paths();
    for args in [
        vec!["log", img.as_str()],
        vec!["replay", img.as_str()],
        vec!["ops", img.as_str()],
        vec!["--replay", "ls", img.as_str()],
    ] {
        let (ok, _, err) = run_cli(&args);
        assert!(!ok, "{args:?}");
        assert!(
            err.contains("the log is on an external device")
                && err.contains("no log device was given")
                && err.contains("--logdev FILE"),
            "{args:?}: {err}"
        );
    }
    let (ok, out, err) = run_cli(&["info", &img]);
    assert!(ok, "{err}");
    assert!(
        out.contains("log: on an external device (sb_logstart 0)"),
        "{out}"
    );
    assert!(out.contains("no log device given"), "{out}");
    // The data device as it is: what the kernel lists with norecovery.
    let (ok, out, err) = run_cli(&["ls", "-R", "--json", &img]);
    assert!(ok, "{err}");
    let kernel = by_path(&parse_lines(&oracle(NAME, "pair-norecovery-ls.jsonl")));
    assert_eq!(by_path(&parse_lines(&out)), kernel);
    // A log device shorter than the superblock's log is refused, saying so.
    let short = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("extlog-short.log");
    let (_, log) = paths();
    std::fs::write(&short, &std::fs::read(&log).unwrap()[..1 << 20]).unwrap();
    let (ok, _, err) = run_cli(&["--logdev", short.to_str().unwrap(), "log", &img]);
    assert!(
        !ok && err.contains("external log device") && err.contains("holds 1048576 bytes"),
        "{err}"
    );
    // A device of the right size that holds no log of this filesystem
    // (the data device itself; bytes of no meaning): an error naming the
    // log, never a panic, and the rest still reads.
    let noise = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("extlog-noise.log");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let bytes: Vec<u8> = (0..std::fs::metadata(&log).unwrap().len())
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&noise, bytes).unwrap();
    for dev in [img.as_str(), noise.to_str().unwrap()] {
        for cmd in ["log", "replay", "ops"] {
            let (ok, _, err) = run_cli(&["--logdev", dev, cmd, &img]);
            assert!(!ok && err.contains("log"), "{cmd} {dev}: {err}");
            assert!(!err.contains("panicked"), "{cmd} {dev}: {err}");
            // The place is on the log device, not the data device.
            assert!(err.contains("at log device daddr "), "{cmd} {dev}: {err}");
        }
        let (ok, out, err) = run_cli(&["--logdev", dev, "info", &img]);
        assert!(ok, "{err}");
        assert!(out.contains("log: on an external device"), "{out}");
    }
    // The log device alone is not a filesystem, and is named for what it is.
    let (ok, _, err) = run_cli(&["info", &log]);
    assert!(!ok && err.contains("an external log device"), "{err}");
    // An internal-log image with --logdev is refused.
    let other = image("log-xattrs");
    let (ok, _, err) = run_cli(&["--logdev", &log, "log", other.to_str().unwrap()]);
    assert!(!ok && err.contains("the log is internal"), "{err}");
}

#[test]
fn info_with_logdev_reads_the_log_devices_head_and_tail() {
    let (img, log) = paths();
    let (ok, out, err) = run_cli(&["--logdev", &log, "info", "--json", &img]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let facts = oracle(NAME, "pair-logfacts.txt");
    let e = &v["external_log"];
    assert_eq!(e["clean"], Value::Bool(false));
    assert_eq!(e["head"].as_str().unwrap(), fact(&facts, "head_lsn"));
    assert_eq!(e["tail"].as_str().unwrap(), fact(&facts, "tail_lsn"));
    let sb = oracle(NAME, "pair-recovered-sb.txt");
    let logblocks = parse_xfs_db_print(&sb)
        .into_iter()
        .find(|(k, _)| k == "logblocks")
        .and_then(|(_, v)| xfs_db_number(&v))
        .unwrap();
    assert_eq!(e["logblocks"].as_u64().unwrap(), logblocks);
    assert_eq!(v["logstart"].as_u64(), Some(0));
}

/// `field = value` of an xfs_db print as a number.
fn db_field(print: &str, field: &str) -> u64 {
    parse_xfs_db_print(print)
        .into_iter()
        .find(|(k, _)| k == field)
        .and_then(|(_, v)| xfs_db_number(&v))
        .unwrap_or_else(|| panic!("no {field} in the xfs_db print"))
}

#[test]
fn replay_output_is_the_kernels_recovered_data_device() {
    let (img, log) = paths();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("extlog-export");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("recovered.img");
    let out_log = dir.join("recovered.log");
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&out_log);
    // -o alone is refused: the log as it is would be replayed again.
    let (ok, _, err) = run_cli(&[
        "--logdev",
        &log,
        "replay",
        &img,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!ok && err.contains("--logdev-output"), "{err}");
    assert!(!out.exists());
    let (ok, stdout, err) = run_cli(&[
        "--logdev",
        &log,
        "replay",
        "--json",
        &img,
        "-o",
        out.to_str().unwrap(),
        "--logdev-output",
        out_log.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert!(v["mount"]["intents_left"].as_array().unwrap().is_empty());
    assert!(v["mount"]["unlinked"].as_array().unwrap().is_empty());

    // Block hashes of the kernel's recovered data device.
    let text = oracle(NAME, "pair-recovered-blocks.txt");
    let mut bs = 0usize;
    let mut kernel: BTreeMap<u64, String> = BTreeMap::new();
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# blocksize ") {
            bs = rest.split(';').next().unwrap().trim().parse().unwrap();
        } else if !l.starts_with('#') {
            let (b, h) = l.split_once(' ').unwrap();
            kernel.insert(b.parse().unwrap(), h.to_string());
        }
    }
    assert!(bs >= 512 && kernel.len() > 10, "{bs} {}", kernel.len());
    let dirty = std::fs::read(&img).unwrap();
    let mut rec = std::fs::read(&out).unwrap();
    assert_eq!(dirty.len(), rec.len());
    // The primary superblock's LSN and CRC set to the kernel's.
    let sb = oracle(NAME, "pair-recovered-sb.txt");
    rec[240..248].copy_from_slice(&db_field(&sb, "lsn").to_be_bytes());
    rec[224..228].copy_from_slice(&(db_field(&sb, "crc") as u32).to_be_bytes());
    let mut ours: BTreeMap<u64, String> = BTreeMap::new();
    for (i, (a, b)) in dirty.chunks(bs).zip(rec.chunks(bs)).enumerate() {
        if a != b {
            ours.insert(i as u64, format!("{:x}", Sha256::digest(b)));
        }
    }
    let differing: Vec<u64> = kernel
        .keys()
        .chain(ours.keys())
        .copied()
        .collect::<std::collections::BTreeSet<u64>>()
        .into_iter()
        .filter(|b| kernel.get(b) != ours.get(b))
        .collect();
    assert!(
        differing.is_empty(),
        "{} blocks differ from the kernel's recovered data device, first {:?}",
        differing.len(),
        &differing[..differing.len().min(10)]
    );

    // The log device written is the log's length and clean: the pair
    // reads as recovered, with nothing left to replay.
    let log_len = std::fs::metadata(&log).unwrap().len();
    assert_eq!(std::fs::metadata(&out_log).unwrap().len(), log_len);
    let (ok, o, err) = run_cli(&[
        "--logdev",
        out_log.to_str().unwrap(),
        "log",
        "--json",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let d: Value = serde_json::from_str(&o).unwrap();
    assert_eq!(d["clean"], Value::Bool(true));
    // The kernel's recovered copy lists the same as the export does.
    let (ok, o, err) = run_cli(&["ls", "-R", "--json", out.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(
        by_path(&parse_lines(&o)),
        by_path(&parse_lines(&oracle(NAME, "pair-recovered-ls.jsonl")))
    );
}

/// `ops` reads the external log: one checkpoint per transaction
/// `xfs_logprint -l` found (a delayed-logging log's transactions are its
/// checkpoints), the namespace operations the fixture's workload ran
/// (`extlog.mkfs.txt`: 43 files made, 5 directories, a symlink, a hard
/// link, a rename, an unlink, an rmdir, a fifo), and with `--replay` the
/// replayed state's forkoffs too.
#[test]
fn ops_with_logdev_follows_every_checkpoint() {
    let (img, log) = paths();
    let (ok, out, err) = run_cli(&["--logdev", &log, "--replay", "ops", "--json", &img]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let facts = oracle(NAME, "pair-logfacts.txt");
    assert_eq!(v["clean"], Value::Bool(false));
    assert_eq!(
        v["checkpoints"].as_array().unwrap().len().to_string(),
        fact(&facts, "transactions")
    );
    for (kind, n) in [
        ("create", 43),
        ("mkdir", 5),
        ("symlink", 1),
        ("link", 1),
        ("rename", 1),
        ("unlink", 1),
        ("rmdir", 1),
        ("mknod", 1),
    ] {
        assert_eq!(v["operations"][kind].as_u64(), Some(n), "{kind}");
    }
    assert!(
        v["forkoff_replayed_error"].is_null(),
        "{}",
        v["forkoff_replayed_error"]
    );
    assert!(v["forkoff_replayed"].is_object());
}

/// `hex --log` reads the log device: a log record header at every block
/// where `xfs_logprint -l` found a record (its LSN and cycle as logprint
/// gives them), log data in the sector after, and a clear refusal without
/// the log device.
#[test]
fn hex_on_the_log_device_finds_the_records_xfs_logprint_found() {
    let (img, log) = paths();
    let lp = oracle(NAME, "pair-logt.txt");
    let mut records = 0;
    for l in lp.lines() {
        let Some(rest) = l.strip_prefix("LOG REC AT LSN cycle ") else {
            continue;
        };
        let mut w = rest.split_whitespace();
        let cycle: u64 = w.next().unwrap().parse().unwrap();
        assert_eq!(w.next(), Some("block"));
        let block: u64 = w.next().unwrap().parse().unwrap();
        let (ok, out, err) = run_cli(&[
            "--logdev",
            &log,
            "hex",
            &img,
            &block.to_string(),
            "--log",
            "--json",
        ]);
        assert!(ok, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v["structure"], "log record header (external log device)",
            "block {block}"
        );
        let field = |n: &str| hex_field(&v, n)["value"].as_str().unwrap().to_string();
        assert_eq!(field("lsn"), ((cycle << 32) | block).to_string());
        assert_eq!(field("cycle"), cycle.to_string());
        // The record's data follows its header.
        let (ok, out, err) = run_cli(&[
            "--logdev",
            &log,
            "hex",
            &img,
            &(block + 1).to_string(),
            "--log",
            "--json",
        ]);
        assert!(ok, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["structure"], "log data (external log device)");
        records += 1;
    }
    assert_eq!(records, 2, "xfs_logprint found two records");
    let (ok, _, err) = run_cli(&["hex", &img, "2", "--log"]);
    assert!(!ok);
    assert!(err.contains("--logdev"), "{err}");
}
