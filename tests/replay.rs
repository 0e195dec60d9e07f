//! Log replay against the kernel's own recovery of the dirty fixtures:
//!
//! * `ls -R --replay --json` equals the listing of a copy the kernel
//!   recovered (`NAME.recovered-ls.jsonl`);
//! * the exported image (`replay -o`) has, outside the log, exactly the
//!   blocks the kernel's recovered copy has (`NAME.recovered-blocks.txt`:
//!   sha256 of every block recovery changed; the primary superblock's
//!   `sb_lsn` and CRC, which depend on the log the kernel wrote after
//!   recovery, are taken from `NAME.recovered-sb.txt`);
//! * a log whose last record is damaged replays up to the record before
//!   it, as the kernel did with the same damage (`NAME.torn.txt`,
//!   `NAME.torn-recovered-ls.jsonl`);
//! * where the kernel failed to recover (`NAME.recovery-failed.txt`),
//!   replay fails at the same block;
//! * intents left unfinished are the ones xfs_logprint shows
//!   (`NAME.logfacts.txt`); where they are only extent-free intents
//!   (`replay-efi`, made by `make/replay.sh efi`), the exported
//!   image holds the kernel's blocks after it finished them;
//! * where the unfinished intent is a bmap update (`replay-bui-ext`,
//!   `replay-bui-btree`, made by `make/replay-bui.sh`), the inode
//!   it names has, in the export, the kernel's core and mappings
//!   (`NAME.recovered-bmap.txt`), and the export is byte-identical too;
//! * where recovery has work at mount (unfinished intents, inodes on AGI
//!   unlinked lists: `log-intents`, and `replay-unlinked` and
//!   `replay-unlinked-reflink` made by `make/replay.sh unlinked`),
//!   the exported image's superblock
//!   counters, AG header counters and the records of every AG btree equal
//!   the kernel's recovered copy (`NAME.recovered-ag.txt`, made by
//!   `make/oracles.sh recovered-ag`), or replay says which work it left undone.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::*;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn parse_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn by_path(lines: &[Value]) -> BTreeMap<String, Value> {
    lines
        .iter()
        .map(|v| (v["path"].as_str().unwrap_or("?").to_string(), v.clone()))
        .collect()
}

/// The first difference between our listing and the kernel's, in words.
fn first_difference(
    name: &str,
    ours: &BTreeMap<String, Value>,
    kernel: &BTreeMap<String, Value>,
) -> Option<String> {
    for (p, k) in kernel {
        let Some(o) = ours.get(p) else {
            return Some(format!(
                "{name}: {p} is in the kernel listing but not in ours"
            ));
        };
        if o != k {
            return Some(format!("{name}: {p}: ours {o}, kernel {k}"));
        }
    }
    ours.keys()
        .find(|p| !kernel.contains_key(*p))
        .map(|p| format!("{name}: {p} is in our listing but not in the kernel's"))
}

fn assert_listing(name: &str, img: &str, oracle_suffix: &str) {
    let (ok, out, err) = run_cli(&["ls", "-R", "--replay", "--json", img]);
    assert!(ok, "{name}: {err}");
    let ours = parse_lines(&out);
    assert!(
        ours.iter().all(|v| v.get("error").is_none()),
        "{name}: error lines in {out}"
    );
    let kernel = by_path(&parse_lines(&oracle(name, oracle_suffix)));
    let ours = by_path(&ours);
    if let Some(d) = first_difference(name, &ours, &kernel) {
        panic!("{d}");
    }
    assert_eq!(ours.len(), kernel.len(), "{name}");
}

fn recovery_failed(name: &str) -> bool {
    fixtures_dir()
        .join(format!("{name}.recovery-failed.txt"))
        .exists()
}

#[test]
fn ls_replay_equals_the_kernel_listing_after_recovery() {
    let names = fixtures_with("recovered-ls.jsonl");
    assert!(names.len() >= 8, "{names:?}");
    for name in &names {
        let img = image(name);
        assert_listing(name, img.to_str().unwrap(), "recovered-ls.jsonl");
    }
}

/// `replay --json` of an image.
fn replay_json(img: &str) -> Value {
    let (ok, out, err) = run_cli(&["replay", "--json", img]);
    assert!(ok, "{img}: {err}");
    serde_json::from_str(&out).unwrap()
}

/// `field = value` of an xfs_db print as a number.
fn db_field(print: &str, field: &str) -> u64 {
    parse_xfs_db_print(print)
        .into_iter()
        .find(|(k, _)| k == field)
        .and_then(|(_, v)| xfs_db_number(&v))
        .unwrap_or_else(|| panic!("no {field} in the xfs_db print"))
}

struct BlocksOracle {
    blocksize: usize,
    log: (u64, u64),
    hashes: BTreeMap<u64, String>,
}

fn blocks_oracle(name: &str) -> BlocksOracle {
    let text = oracle(name, "recovered-blocks.txt");
    let mut blocksize = 0;
    let mut log = (0, 0);
    let mut hashes = BTreeMap::new();
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# blocksize ") {
            blocksize = rest.split(';').next().unwrap().trim().parse().unwrap();
        } else if let Some(rest) = l.strip_prefix("# internal log: linear blocks ") {
            let range = rest.split_whitespace().next().unwrap();
            let (a, b) = range.split_once("..").unwrap();
            log = (a.parse().unwrap(), b.parse().unwrap());
        } else if !l.starts_with('#') {
            let (b, h) = l.split_once(' ').unwrap();
            hashes.insert(b.parse().unwrap(), h.to_string());
        }
    }
    assert!(blocksize >= 512 && log.1 > log.0, "{name}: header");
    BlocksOracle {
        blocksize,
        log,
        hashes,
    }
}

/// Export `name` and return (recovered image path, replay JSON).
fn export(name: &str) -> (PathBuf, Value) {
    let img = image(name);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("replay-export");
    std::fs::create_dir_all(&dir).unwrap();
    // Tests run side by side and may export one fixture at once: each
    // export has a file of its own.
    static EXPORTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = EXPORTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = dir.join(format!("{name}.{n}.recovered.img"));
    let _ = std::fs::remove_file(&out);
    // The kernel stamps the time of its recovery on inodes whose
    // attributes it sets; where a fixture records it, the export uses it.
    let when = fixtures_dir()
        .join(format!("{name}.recovered-ctime.txt"))
        .exists()
        .then(|| recovery_ctime(name));
    let env: Vec<(&str, &str)> = when
        .as_deref()
        .map(|t| vec![("SOURCE_DATE_EPOCH", t)])
        .unwrap_or_default();
    let (ok, stdout, err) = run_cli_env(
        &[
            "replay",
            "--json",
            img.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        &env,
    );
    assert!(ok, "{name}: {err}");
    (out, serde_json::from_str(&stdout).unwrap())
}

/// `NAME.recovered-ctime.txt`: the kernel's recovery time, "SEC.NSEC".
fn recovery_ctime(name: &str) -> String {
    oracle(name, "recovered-ctime.txt")
        .lines()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty())
        .unwrap()
        .trim()
        .to_string()
}

/// Blocks of `rec` that differ from `dirty` outside the log, hashed; the
/// primary superblock's LSN and CRC are set to the kernel's first.
fn changed_blocks(name: &str, dirty: &[u8], rec: &[u8], o: &BlocksOracle) -> BTreeMap<u64, String> {
    let sb = oracle(name, "recovered-sb.txt");
    let mut rec = rec.to_vec();
    rec[240..248].copy_from_slice(&db_field(&sb, "lsn").to_be_bytes());
    // xfs_db prints the little-endian sb_crc as its four bytes read
    // big-endian.
    rec[224..228].copy_from_slice(&(db_field(&sb, "crc") as u32).to_be_bytes());
    let bs = o.blocksize;
    let mut out = BTreeMap::new();
    for (i, (a, b)) in dirty.chunks(bs).zip(rec.chunks(bs)).enumerate() {
        let i = i as u64;
        if (o.log.0..=o.log.1).contains(&i) || a == b {
            continue;
        }
        out.insert(i, format!("{:x}", Sha256::digest(b)));
    }
    out
}

/// Whether the kernel did work at mount that replay reports as not done.
fn mount_work_left(v: &Value) -> Vec<String> {
    let mut left = Vec::new();
    if let Some(m) = v["mount"].as_object() {
        for u in m["intents_left"].as_array().unwrap() {
            left.push(format!("unfinished {} intent", u["kind"]));
        }
        for u in m["unlinked"].as_array().unwrap() {
            left.push(format!("unlinked inode {}", u["ino"]));
        }
        for u in m["cow"]["not_freed"].as_array().unwrap() {
            left.push(format!("CoW staging extent {u}"));
        }
    }
    left
}

/// Blocks outside the log where the export (`rec`, made from `dirty`)
/// and the kernel's recovered copy (`o`) differ.
fn blocks_differing_from_the_kernels(
    name: &str,
    o: &BlocksOracle,
    dirty: &[u8],
    rec: &[u8],
) -> Vec<u64> {
    let ours = changed_blocks(name, dirty, rec, o);
    let kernel: BTreeMap<u64, String> = o
        .hashes
        .iter()
        .filter(|(b, _)| !(o.log.0..=o.log.1).contains(*b))
        .map(|(b, h)| (*b, h.clone()))
        .collect();
    kernel
        .keys()
        .chain(ours.keys())
        .copied()
        .collect::<std::collections::BTreeSet<u64>>()
        .into_iter()
        .filter(|b| kernel.get(b) != ours.get(b))
        .collect()
}

#[test]
fn exported_image_has_the_kernels_recovered_blocks() {
    // Images whose recovery the kernel split with log forces in the
    // middle of the intents' work (those with a `recovered-masked.txt`
    // oracle) are among them: every checkpoint's size, and so every LSN
    // stamped, is the kernel's.
    let names: Vec<String> = fixtures_with("recovered-blocks.txt");
    let forced = fixtures_with("recovered-forces.txt");
    assert!(forced.iter().all(|n| names.contains(n)), "{forced:?}");
    assert!(names.len() >= 10, "{names:?}");
    let mut exact = Vec::new();
    for name in &names {
        let o = blocks_oracle(name);
        let (out, v) = export(name);
        let dirty = std::fs::read(image(name)).unwrap();
        let rec = std::fs::read(&out).unwrap();
        assert_eq!(dirty.len(), rec.len(), "{name}: the export keeps the size");
        let left = mount_work_left(&v);
        let differing = blocks_differing_from_the_kernels(name, &o, &dirty, &rec);
        // Mount-time work after recovered intents (unlinked inodes, CoW
        // staging extents) is written in the checkpoint after the
        // intents' own: its blocks carry that checkpoint's LSN, which
        // replay works out from the size of the intents' checkpoint. Those
        // images are byte-identical too.
        if left.is_empty() {
            assert!(
                differing.is_empty(),
                "{name}: {} blocks differ from the kernel's recovered copy outside the log, first {:?}",
                differing.len(),
                &differing[..differing.len().min(10)]
            );
            exact.push(name.clone());
        } else {
            // Only the AGs of the work left may differ.
            let ag_blocks = v["mount"]["ag_blocks"].as_u64().unwrap();
            let ags: std::collections::BTreeSet<u64> = v["mount"]["ags_with_work_left"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_u64().unwrap())
                .collect();
            let bs = o.blocksize as u64;
            for b in &differing {
                let byte = b * bs;
                let ag = (byte / bs) / ag_blocks;
                assert!(
                    *b == 0 || ags.contains(&ag),
                    "{name}: block {b} (AG {ag}) differs, but the work left ({left:?}) is in AGs {ags:?}"
                );
            }
            eprintln!("{name}: not byte-identical where the kernel did more at mount: {left:?}");
        }
    }
    assert!(exact.len() >= 8, "byte-identical: {exact:?}");

    assert!(
        forced.iter().all(|n| exact.contains(n)),
        "byte-identical: {exact:?}, forced: {forced:?}"
    );
    // Unlinked inodes freed in a chunk that stays, reflinked or not: the
    // inodes' freed cores (di_changecount included) and every AG block,
    // stale bytes of btree blocks included, are the kernel's.
    // Bmap-update intents finished at mount, into an extent list, into a
    // bmbt leaf (a record shifted to its left sibling to make room) and
    // into a full extent list (converted to a bmbt whose leaf is allocated
    // near the inode): the inode, the bmbt blocks and every AG block are
    // the kernel's.
    // Bmap-update intents (forged, recovered by the kernel) into full
    // bmbt leaves whose siblings are full: each leaf split, a new leaf
    // allocated near it, the root in the inode given a key and pointer;
    // and unmaps from bmbts (a record trimmed at either end, deleted, cut
    // in two with the leaf splitting; a fork that goes back to a list
    // midway through an unmap of several extents; leaves under a node
    // block that fall below half full, borrowing from either sibling or
    // joining one, the node that then fits the inode moved into it, and
    // the frees one step makes sharing one deferred op; with 1 KiB blocks,
    // full node blocks that split, the root in the inode taking the new
    // node, a full node giving an entry to its sibling, and nodes that
    // fall below half full, borrowing an entry from a sibling node or
    // joining it).
    // Attribute intents (forged, recovered by the kernel) finished in
    // shortform lists, the recovery time taken from the kernel's: the
    // inodes are the kernel's.
    // Attribute intents on leaf blocks (forged): adds, a replace and
    // removals in the block, a shortform list moved into a new leaf block
    // allocated near the inode, leaves moved back into lists (and a fork
    // that goes), a block compacted to take an entry, remote values
    // (a block after the leaf's, merged or not): the inodes, the leaf
    // blocks and every AG block are the kernel's. Remote values of one to
    // five blocks set, replaced and removed on leaf blocks with value
    // blocks after them (the kernel's node path): value blocks unmapped
    // and freed, new ones allocated near the fork's blocks (into a hole it
    // left, or past busy blocks), written with their headers; the inodes,
    // the leaf and value blocks and every AG block are the kernel's. The
    // same on attr forks in node form: the leaf found through the node,
    // its last hash carried up into the node; and leaves that fill: a lone
    // leaf turned into a node over a copy of itself, leaves split in two
    // (entries balanced, siblings linked, the node given an entry); and
    // leaves that empty: merged with a sibling, the dropped block freed,
    // the node's last leaf moved into attr block 0. The same on attr forks
    // of more extents than the inode holds: remote values mapped into and
    // unmapped from the bmbt, a full list turned into a bmbt, a bmbt
    // whose records fit the inode again turned back into a list, a bmbt
    // leaf that falls below half full when a da block goes taking a
    // record from its sibling (that transaction first logs the root only:
    // the change count does not rise). And a leaf split under a full root
    // node (1 KiB blocks): the node splits, the root moves into a new
    // block under a new root one level higher; and removals in a tree of
    // three levels: a leaf joins its sibling under a node below the root,
    // whose last hash goes up; and a leaf that joins a sibling under the
    // other node (two paths: the kept leaf's hash up its own, the dropped
    // leaf's node losing its entry); and 561 removals that empty leaves
    // until a node joins its sibling node and the root takes the one left,
    // the tree going from three levels to two; and an entry that fits
    // neither half of its leaf's split: the half it is due in splits
    // again, the node taking two new entries (and, full, splitting with
    // them, 1 KiB blocks). And names of one hash over
    // several leaves: the search goes on into the next leaf that ends with
    // the hash.
    // Shared rmap conversions (forged RUIs, every case of the kernel's
    // convert_shared in turn among another owner's mappings of the same
    // blocks): every AG block is the kernel's.
    // File-mapping exchange intents (forged, recovered by the kernel):
    // extent lists and bmbts exchanged step by step (holes, unwritten
    // blocks passed over, shared blocks passed over, a record cut by a
    // shorter one), sizes and reflink flags exchanged: the inodes, the
    // bmbt blocks and every AG block are the kernel's; and again with the
    // inodes first switched to the large extent counters. Attr forks
    // exchanged (leaves, remote value blocks, a node fork into a file's
    // holes), the second file's fork checked for a return to shortform
    // before the first step's bmap updates, as the kernel does; and
    // exchanges within one file (extent lists, a hole, a bmbt), upgraded
    // to the large counters once; and a directory in leaf form and a
    // symlink with a remote target as the second file, left as they are
    // by the last call; and a directory block and a remote symlink target
    // that the last call turns into a shortform directory and an inline
    // target, after exchanges whose first step had nothing to update (and
    // an 8 KiB directory block in two extents, both unmapped and freed).
    for name in [
        "replay-unlinked",
        "replay-unlinked-reflink",
        "replay-bui-ext",
        "replay-bui-btree",
        "replay-bui-convert",
        "replay-bui-split",
        "replay-bui-unmap",
        "replay-bui-tolist",
        "replay-bui-deep",
        "replay-bui-nodes",
        "replay-attri",
        "replay-xmi",
        "replay-pptr",
        "replay-rui",
        "replay-attri-leaf",
        "replay-xmi-nrext64",
        "replay-attri-rmt",
        "replay-attri-node",
        "replay-attri-split",
        "replay-attri-join",
        "replay-pptr-node",
        "replay-attri-bmbt",
        "replay-quota",
        "replay-attri-rootsplit",
        "replay-attri-deepjoin",
        "replay-xmi-attr",
        "replay-xmi-same",
        "replay-xmi-dirlink",
        "replay-attri-hash",
        "replay-attri-acrossjoin",
        "replay-attri-nodejoin",
        "replay-attri-dsplit",
        "replay-attri-dsplit-full",
        "replay-xmi-tosf",
        "replay-xmi-tosf8k",
    ] {
        assert!(
            exact.contains(&name.to_string()),
            "byte-identical: {exact:?}"
        );
    }
}

#[test]
fn exported_log_is_clean_and_replaying_it_does_nothing() {
    let (out, _) = export("log-xattrs");
    let v = replay_json(out.to_str().unwrap());
    assert_eq!(v["replay"]["clean"], true, "{v}");
    assert_eq!(v["replay"]["transactions"], 0);
    // The head sits right after the unmount record at block 0, in a cycle
    // past the replayed log's.
    let before = replay_json(image("log-xattrs").to_str().unwrap());
    let head = &v["replay"]["head"];
    assert_eq!(head["block"], 2, "{head}");
    assert_eq!(
        head["cycle"].as_u64().unwrap(),
        before["replay"]["head"]["cycle"].as_u64().unwrap() + 1
    );
}

/// Flip one byte of a copy of `name` as `NAME.torn.txt` says.
fn torn_copy(name: &str) -> PathBuf {
    let facts = oracle(name, "torn.txt");
    let off: usize = facts
        .lines()
        .find_map(|l| l.strip_prefix("flip_offset "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut bytes = std::fs::read(image(name)).unwrap();
    bytes[off] ^= 0xff;
    let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.torn.img"));
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn a_damaged_last_record_is_cut_off_as_the_kernel_does() {
    let names = fixtures_with("torn.txt");
    for name in &names {
        let facts = oracle(name, "torn.txt");
        assert!(
            facts.contains("Torn write"),
            "{name}: the kernel saw a torn write"
        );
        let p = torn_copy(name);
        let v = replay_json(p.to_str().unwrap());
        let torn = &v["replay"]["torn_write"];
        assert!(torn.is_object(), "{name}: {v}");
        let last: String = facts
            .lines()
            .find_map(|l| l.strip_prefix("last_record "))
            .unwrap()
            .to_string();
        let block: u64 = last.split(':').nth(1).unwrap().parse().unwrap();
        assert_eq!(torn["first_bad"].as_u64(), Some(block), "{name}");
        assert_eq!(v["replay"]["head"]["block"].as_u64(), Some(block), "{name}");
        let (_, text, _) = run_cli(&["replay", p.to_str().unwrap()]);
        assert!(text.contains("failed its check"), "{name}: says so: {text}");
        assert_listing(name, p.to_str().unwrap(), "torn-recovered-ls.jsonl");
        // The undamaged log replays more.
        let full = replay_json(image(name).to_str().unwrap());
        assert!(
            full["replay"]["transactions"].as_u64() > v["replay"]["transactions"].as_u64(),
            "{name}"
        );
    }
}

#[test]
fn replay_fails_where_the_kernel_failed_to_recover() {
    for name in fixtures_with("recovery-failed.txt") {
        let msg = oracle(&name, "recovery-failed.txt");
        // "... xfs_dir3_data block 0xbe0 ..."
        let daddr = msg
            .split_whitespace()
            .skip_while(|w| *w != "block")
            .nth(1)
            .and_then(|h| u64::from_str_radix(h.trim_start_matches("0x"), 16).ok())
            .unwrap_or_else(|| panic!("{name}: no block in {msg}"));
        let img = image(&name);
        let (ok, _, err) = run_cli(&["replay", img.to_str().unwrap()]);
        assert!(
            !ok,
            "{name}: replay should fail as the kernel's recovery did"
        );
        assert!(
            err.contains(&format!("daddr {daddr}")) && err.contains("does not mount"),
            "{name}: {err}"
        );
        let (ok, _, err) = run_cli(&["ls", "--replay", img.to_str().unwrap()]);
        assert!(!ok && err.contains("replay"), "{name}: {err}");
    }
    assert!(recovery_failed("log-64kdir-frag"));
}

#[test]
fn unfinished_intents_are_the_ones_logprint_shows() {
    for name in fixtures_with("logfacts.txt") {
        if recovery_failed(&name) {
            continue;
        }
        let facts = oracle(&name, "logfacts.txt");
        // "unfinished: RUI id 0xffff88815b384000 extents 1: ..."
        let mut want: Vec<(String, u64)> = facts
            .lines()
            .filter_map(|l| l.strip_prefix("unfinished: "))
            .map(|l| {
                let mut w = l.split_whitespace();
                let kind = w.next().unwrap().to_lowercase();
                w.next();
                let id =
                    u64::from_str_radix(w.next().unwrap().trim_start_matches("0x"), 16).unwrap();
                (kind, id)
            })
            .collect();
        let v = replay_json(image(&name).to_str().unwrap());
        let mut got: Vec<(String, u64)> = v["replay"]["unfinished_intents"]
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
        want.sort();
        got.sort();
        assert_eq!(got, want, "{name}");
        // Each is named in the text: finished or NOT FINISHED.
        let (_, text, _) = run_cli(&["replay", image(&name).to_str().unwrap()]);
        for (kind, id) in &want {
            let named = text.lines().any(|l| {
                l.contains(&format!("{id:#x}"))
                    && (l.starts_with("NOT FINISHED") || l.starts_with("finished "))
            });
            assert!(named, "{name}: {kind} {id:#x} not named in {text}");
        }
    }
}

/// Images of random workloads shut down mid-way (`../shared/recovery-differs`,
/// made like the differential harness's, `tests/fixtures/make/differential.sh`;
/// six of them cut down by `make/random.sh --cut`, the oracle the
/// kernel's recovery of the cut image), each with mount-time work the
/// kernel does that replay once did differently: an empty shortform
/// directory freed without a truncate, so it keeps its size of 6
/// (random-9014, random-31017); unlinked inodes with attribute forks in
/// blocks, leaves, nodes and remote values, taken apart as
/// `xfs_attr_inactive` does (random-9016, random-9023, random-31034);
/// files with a size and no blocks, whose truncate still rolls once
/// (random-9020, random-31008); extents freed without the rmapbt, which
/// make no reverse-mapping intents and so no rolls (random-31019); and a
/// workload shut down before its first checkpoint reached the log
/// (random-1121, differential run d1121, `-b size=1024`): a clean log, no
/// recovery, but the kernel's unmount writes the superblock, whose quota
/// inodes of 0 become NULLFSINO; and a run whose CoW recovery at mount
/// (random-1269, d1269, `-n size=65536 -m rmapbt=1`) shrinks the rmapbt
/// that freeing 252 unlinked inodes had just rewritten: the freed leaf and
/// node keep the bytes log recovery gave them, as the kernel never writes
/// a buffer it freed; and removed symlinks with a target in blocks
/// (random-1038 with the rmapbt, random-1046 without), whose inactivation
/// unmaps in one call and whose last transaction, committed rather than
/// rolled, does not log the inode; and a filesystem made by xfsprogs 6.13
/// with parent pointers, the metadata directory tree and exchange-range
/// (random-5008, `make/differential.sh --mkfs-root`), whose superblock the
/// kernel writes with quota inode fields of 0, as the metadata directory
/// tree holds the quota inodes; and a run (random-3407, d3407, `-m rmapbt=1
/// -b size=1024`) whose CoW recovery refills AG 0's free list right after
/// 278 unlinked inodes were freed in the same checkpoint: the blocks those
/// frees left busy are passed over, so the kernel's block goes on the free
/// list. The export is byte for byte the kernel's
/// recovered copy outside the log (and the superblock's LSN and CRC).
#[test]
fn random_workload_images_export_byte_identical_to_the_kernels() {
    for name in [
        "random-9014",
        "random-9016",
        "random-9020",
        "random-9023",
        "random-31008",
        "random-31017",
        "random-31019",
        "random-31034",
        "random-1121",
        "random-1269",
        "random-1038",
        "random-1046",
        "random-5008",
        "random-3407",
    ] {
        let o = blocks_oracle(name);
        let (out, v) = export(name);
        assert!(mount_work_left(&v).is_empty(), "{name}: work left");
        let dirty = std::fs::read(image(name)).unwrap();
        let rec = std::fs::read(&out).unwrap();
        let differing = blocks_differing_from_the_kernels(name, &o, &dirty, &rec);
        assert!(
            differing.is_empty(),
            "{name}: {} blocks differ from the kernel's recovered copy, first {:?}",
            differing.len(),
            &differing[..differing.len().min(10)]
        );
    }
}

/// Files and a directory held open while removed, with attribute forks in
/// blocks (a leaf of local values, a leaf with remote values, a node over
/// fourteen leaves, a node over sixty leaves with a remote value each in a
/// bmbt-format fork, ten data extents with a leaf), freed at mount as
/// `xfs_attr_inactive` does, with and without the rmapbt: every block
/// outside the log, the freed inodes' change counts included, is the
/// kernel's.
#[test]
fn unlinked_inodes_with_attr_forks_in_blocks_are_freed_as_the_kernel_frees_them() {
    for name in ["replay-unlinked-attr", "replay-unlinked-attr-normap"] {
        let o = blocks_oracle(name);
        let (out, v) = export(name);
        let freed = &v["mount"]["unlinked_freed"];
        assert!(freed["not_freed"].is_null(), "{name}: {freed}");
        assert_eq!(
            freed["freed"].as_array().map(Vec::len),
            Some(6),
            "{name}: {freed}"
        );
        let dirty = std::fs::read(image(name)).unwrap();
        let rec = std::fs::read(&out).unwrap();
        let differing = blocks_differing_from_the_kernels(name, &o, &dirty, &rec);
        assert!(
            differing.is_empty(),
            "{name}: {} blocks differ from the kernel's recovered copy, first {:?}",
            differing.len(),
            &differing[..differing.len().min(10)]
        );
    }
}

/// A random workload (random-1008, differential run d1008, `-m rmapbt=1
/// -b size=1024`) that left on an unlinked list a file whose attribute fork
/// in blocks starts with a block of file data: the kernel's verifier
/// rejects it, the inactivation fails after the data truncate, and the
/// inode stays on AGI 0 bucket 36 while the rest of the lists are freed.
/// Replay does the same: the inode is reported kept, not left undone, and
/// its sector is the kernel's byte for byte (the rest of the AG differs
/// from the kernel's copy only in the LSNs of the checkpoints the kernel
/// wrote after recovery, which replay does not know).
#[test]
fn an_inode_whose_inactivation_fails_stays_on_its_list_as_the_kernel_leaves_it() {
    let name = "random-1008";
    let o = blocks_oracle(name);
    let (out, v) = export(name);
    let freed = &v["mount"]["unlinked_freed"];
    assert!(freed["not_freed"].is_null(), "{freed}");
    let kept = freed["kept"].as_array().unwrap();
    assert_eq!(kept.len(), 1, "{freed}");
    assert_eq!(kept[0]["ino"], 100);
    assert!(kept[0]["why"].as_str().unwrap().contains("attr"), "{freed}");
    assert!(mount_work_left(&v).is_empty(), "{v}");
    let dirty = std::fs::read(image(name)).unwrap();
    let rec = std::fs::read(&out).unwrap();
    let differing = blocks_differing_from_the_kernels(name, &o, &dirty, &rec);
    // 1 KiB blocks: inode 100 is the first half of block 50.
    assert_eq!(o.blocksize, 1024);
    assert!(!differing.contains(&50), "{differing:?}");
    // Still listed: AGI 0 (sector 2) bucket 36.
    let agi = &rec[1024..1536];
    assert_eq!(&agi[0..4], b"XAGI");
    let at = 40 + 36 * 4;
    assert_eq!(u32::from_be_bytes(agi[at..at + 4].try_into().unwrap()), 100);
}

/// The section `### TITLE` of an oracle of `### ` sections.
fn oracle_section<'a>(text: &'a str, title: &str) -> &'a str {
    let head = format!("### {title}\n");
    let at = text
        .find(&head)
        .unwrap_or_else(|| panic!("no section {title}"))
        + head.len();
    let rest = &text[at..];
    &rest[..rest.find("### ").unwrap_or(rest.len())]
}

/// An exchange intent the mount finishes (diff-d9134: 185 blocks of inode
/// 135710 from file block 124, sizes exchanged) raises di_size, but the
/// size the kernel holds in memory stays the one it read before the
/// exchange: when it lets go of the inode after the mount, it frees every
/// extent past that size (30 extents the exchange brought in), and the
/// file's content there is gone. Counts from xfs_db of the kernel's
/// recovered copy; the last extent it kept ends at the block where the
/// in-memory size ends.
#[test]
fn extents_an_exchange_brings_past_the_in_memory_size_are_freed_after_the_mount() {
    let name = "diff-d9134";
    let db = oracle(name, "recovered-db.txt");
    let (out, v) = export(name);
    let e = &v["mount"]["eofblocks"];
    assert!(e["not_done"].is_null(), "{e}");
    let t = e["trimmed"].as_array().unwrap();
    assert_eq!(t.len(), 1, "{e}");
    assert_eq!(t[0]["ino"], 135710, "{e}");
    let kept = oracle_section(&db, "bmap 135710");
    let last = kept
        .lines()
        .rfind(|l| l.starts_with("data offset"))
        .unwrap();
    let w: Vec<&str> = last.split_whitespace().collect();
    let end: u64 = w[2].parse::<u64>().unwrap() + w[w.len() - 3].parse::<u64>().unwrap();
    assert_eq!(t[0]["from_block"].as_u64().unwrap(), end, "{last}");
    let kernel = oracle_section(&db, "inode 135710");
    let (ok, js, err) = run_cli(&["inode", "--json", out.to_str().unwrap(), "135710"]);
    assert!(ok, "{err}");
    let ours: Value = serde_json::from_str(&js).unwrap();
    for (field, key) in [
        ("core.nextents", "nextents"),
        ("core.nblocks", "nblocks"),
        ("core.size", "size"),
        ("v3.change_count", "changecount"),
    ] {
        assert_eq!(
            ours[key].as_u64().unwrap(),
            db_field(kernel, field),
            "{name}: inode 135710 {field}"
        );
    }
    assert!(
        db_field(kernel, "core.size") > t[0]["size"].as_u64().unwrap(),
        "di_size stays above the size trimmed to"
    );
    let (ok, js, err) = run_cli(&["info", "--json", out.to_str().unwrap()]);
    assert!(ok, "{err}");
    let sb: Value = serde_json::from_str(&js).unwrap();
    assert_eq!(
        sb["fdblocks"].as_u64().unwrap(),
        db_field(oracle_section(&db, "sb"), "fdblocks")
    );
    // The unlinked inodes' work came before, in a checkpoint whose size
    // gives this one's LSN: the export is byte for byte the kernel's copy
    // (exported_image_has_the_kernels_recovered_blocks).
    assert_eq!(e["lsn_known"], true, "{e}");
}

/// The unlinked inodes' work is one checkpoint, after the intents' one
/// (at the head without intents); the blocks that later work changes carry
/// the LSN of the next. It takes as many log blocks as the kernel's
/// (`NAME.recovered-ckpts.txt`: where each checkpoint the kernel's mount
/// wrote starts, from xfs_logprint of its recovered copy): buffers with
/// every chunk logged since the replayed image, cancelled buffers for the
/// blocks freed or dropped, each freed inode's core, the unlinked pointers
/// logged in inode cluster buffers. One image is not matched yet:
/// diff-d9146 (56 inodes freed, reflinked files among them), where the
/// kernel also logs two refcountbt blocks whose bytes do not change and
/// two more cancelled buffers: 164 log blocks, 162 here.
#[test]
fn the_unlinked_inodes_checkpoint_takes_the_kernels_log_blocks() {
    const NOT_YET: &[&str] = &["diff-d9146"];
    let mut off = Vec::new();
    let names = fixtures_with("recovered-ckpts.txt");
    assert!(names.len() >= 10, "{names:?}");
    let mut checked = Vec::new();
    for name in &names {
        let v = replay_json(image(name).to_str().unwrap());
        let c = &v["mount"]["unlinked_freed"]["checkpoint"];
        if c.is_null() {
            continue;
        }
        let starts: Vec<(u64, u64)> = oracle(name, "recovered-ckpts.txt")
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| {
                let (a, b) = l.trim().split_once(':').unwrap();
                (a.parse().unwrap(), b.parse().unwrap())
            })
            .collect();
        let at = (
            c["lsn"]["cycle"].as_u64().unwrap(),
            c["lsn"]["block"].as_u64().unwrap(),
        );
        let k = starts
            .iter()
            .position(|s| *s == at)
            .unwrap_or_else(|| panic!("{name}: no kernel checkpoint at {at:?}: {starts:?}"));
        let next = starts[k + 1];
        let o = blocks_oracle(name);
        let log_bbs = (o.log.1 - o.log.0 + 1) * o.blocksize as u64 / 512;
        let kernel = if next.0 == at.0 {
            next.1 - at.1
        } else {
            log_bbs - at.1 + next.1
        };
        if c["blocks"].as_u64().unwrap() != kernel {
            off.push(format!(
                "{name}: {} blocks, the kernel's {kernel}",
                c["blocks"]
            ));
            assert!(NOT_YET.contains(&name.as_str()), "{off:?}");
            continue;
        }
        checked.push(name.clone());
    }
    assert!(checked.len() >= 9, "{checked:?}, not matched: {off:?}");
}

/// Parent pointers after recovery (random-5008: xfsprogs 6.13, parent
/// pointers, metadir, exchange-range; a random workload shut down mid-way):
/// for every inode the kernel lists, the parent pointers `getfattr` shows on
/// the export are the ones xfs_db 6.13 decodes from the attribute fork of
/// the kernel's recovered copy (`NAME.recovered-pptr.txt`, made by
/// `make/oracles.sh recovered-pptr`): name, parent directory and its generation.
#[test]
fn parent_pointers_after_export_are_the_ones_xfs_db_decodes() {
    let name = "random-5008";
    type Pptr = (String, u64, u64);
    // xfs_db: "### ino N", then a.sfattr.list[i].{parent,name,parent_dir.*}.
    let mut want: BTreeMap<u64, std::collections::BTreeSet<Pptr>> = BTreeMap::new();
    let mut ino = 0u64;
    let mut entry: BTreeMap<usize, (bool, String, u64, u64)> = BTreeMap::new();
    let flush = |ino: u64,
                 entry: &mut BTreeMap<usize, (bool, String, u64, u64)>,
                 want: &mut BTreeMap<u64, std::collections::BTreeSet<Pptr>>| {
        let set = want.entry(ino).or_default();
        for (_, (parent, n, dir, gen)) in std::mem::take(entry) {
            if parent {
                set.insert((n, dir, gen));
            }
        }
    };
    for l in oracle(name, "recovered-pptr.txt").lines() {
        if let Some(n) = l.strip_prefix("### ino ") {
            if ino != 0 {
                flush(ino, &mut entry, &mut want);
            }
            ino = n.trim().parse().unwrap();
            continue;
        }
        let Some(rest) = l.strip_prefix("a.sfattr.list[") else {
            continue;
        };
        let (i, rest) = rest.split_once("].").unwrap();
        let (field, value) = rest.split_once(" = ").unwrap();
        let e = entry
            .entry(i.parse().unwrap())
            .or_insert((false, String::new(), 0, 0));
        match field {
            "parent" => e.0 = value == "1",
            "name" => e.1 = value.trim_matches('"').to_string(),
            "parent_dir.inumber" => e.2 = value.parse().unwrap(),
            "parent_dir.gen" => e.3 = value.parse().unwrap(),
            _ => {}
        }
    }
    flush(ino, &mut entry, &mut want);
    assert!(want.len() > 800, "{} inodes", want.len());
    // Where the kernel lists each inode.
    let mut path_of: BTreeMap<u64, String> = BTreeMap::new();
    for l in oracle(name, "recovered-ls.jsonl").lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        path_of
            .entry(v["ino"].as_u64().unwrap())
            .or_insert_with(|| v["path"].as_str().unwrap().to_string());
    }
    let (out, _) = export(name);
    let img = out.to_str().unwrap();
    let mut pointers = 0;
    for (ino, w) in &want {
        let path = &path_of[ino];
        let (ok, text, err) = run_cli(&["getfattr", img, path]);
        assert!(ok, "{path}: {err}");
        // # parent pointer: "NAME" in directory inode N (generation G)
        let ours: std::collections::BTreeSet<Pptr> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# parent pointer: \""))
            .map(|l| {
                let (n, rest) = l.split_once("\" in directory inode ").unwrap();
                let (dir, gen) = rest.split_once(" (generation ").unwrap();
                (
                    n.to_string(),
                    dir.parse().unwrap(),
                    gen.trim_end_matches(')').parse().unwrap(),
                )
            })
            .collect();
        assert_eq!(&ours, w, "inode {ino} ({path})");
        pointers += ours.len();
    }
    assert!(pointers > 800, "{pointers} parent pointers");
}

#[test]
fn superblock_counters_after_export_are_the_kernels() {
    for name in fixtures_with("recovered-blocks.txt") {
        let (out, v) = export(&name);
        if !mount_work_left(&v).is_empty() {
            continue;
        }
        let sb = oracle(&name, "recovered-sb.txt");
        // A clean log has no mount-time changes: the export's superblock
        // keeps the image's counters, which the kernel trusts.
        let written = std::fs::read(&out).unwrap();
        for (f, off) in [("icount", 128), ("ifree", 136), ("fdblocks", 144)] {
            let ours = if v["mount"].is_null() {
                assert_eq!(v["replay"]["clean"], true, "{name}: {v}");
                Some(u64::from_be_bytes(
                    written[off..off + 8].try_into().unwrap(),
                ))
            } else {
                v["mount"]["after"][f].as_u64()
            };
            assert_eq!(ours, Some(db_field(&sb, f)), "{name}: {f}");
        }
    }
}

/// A filesystem whose superblock says quotas were accounted, recovered by
/// a kernel mounted without quota options: the logged dquot is skipped,
/// the quota flags are cleared, as in the kernel's copy.
#[test]
fn a_mount_without_quota_options_skips_dquots_and_clears_the_quota_flags() {
    let name = "replay-quota";
    let kernel = oracle(name, "kernel.txt");
    assert!(kernel.contains("resetting quota flags"), "{kernel}");
    let before = std::fs::read(image(name)).unwrap();
    assert_eq!(u16::from_be_bytes([before[176], before[177]]), 0x60f);
    let (out, v) = export(name);
    let after = std::fs::read(&out).unwrap();
    let sb = oracle(name, "recovered-sb.txt");
    assert_eq!(
        u64::from(u16::from_be_bytes([after[176], after[177]])),
        db_field(&sb, "qflags")
    );
    assert_eq!(v["mount"]["quota_flags_reset"], 0x60f, "{v}");
    assert_eq!(v["replay"]["counts"]["dquots_skipped"], 1, "{v}");
    // The block the dquot names is the kernel's: not in its list of
    // changed blocks, and unchanged here.
    let mkfs = oracle(name, "mkfs.txt");
    let daddr: usize = mkfs
        .lines()
        .find_map(|l| l.strip_prefix("file qblock "))
        .and_then(|l| l.split("(daddr ").nth(1))
        .and_then(|d| d.trim_end_matches(')').parse().ok())
        .unwrap();
    let blocks = oracle(name, "recovered-blocks.txt");
    let bs = 4096;
    let blk = daddr * 512 / bs;
    assert!(
        !blocks
            .lines()
            .any(|l| l.split_whitespace().next() == Some(&blk.to_string())),
        "the kernel changed block {blk}"
    );
    assert_eq!(
        before[blk * bs..(blk + 1) * bs],
        after[blk * bs..(blk + 1) * bs]
    );
}

/// What `replay --json` says replay changed, against the kernel's two
/// listings of the same image: on disk (log not replayed) and recovered.
#[test]
fn replay_changes_agree_with_the_kernels_before_and_after_listings() {
    let mut checked = 0;
    for name in fixtures_with("recovered-ls.jsonl") {
        if recovery_failed(&name) || !fixtures_dir().join(format!("{name}.ls.jsonl")).exists() {
            continue;
        }
        let before = by_path(&parse_lines(&oracle(&name, "ls.jsonl")));
        let after = by_path(&parse_lines(&oracle(&name, "recovered-ls.jsonl")));
        if before.values().any(|v| v.get("error").is_some()) {
            continue;
        }
        let v = replay_json(image(&name).to_str().unwrap());
        let ch = &v["changes"];
        let added: std::collections::BTreeSet<(u64, String, u64)> = ch["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["change"] == "added")
            .map(|e| {
                (
                    e["dir"].as_u64().unwrap(),
                    e["name"].as_str().unwrap().to_string(),
                    e["ino"].as_u64().unwrap(),
                )
            })
            .collect();
        // Every path the kernel shows only after recovery is an entry
        // replay added to its parent.
        for (p, e) in &after {
            if before.contains_key(p) || p == "/" {
                continue;
            }
            let (dir, leaf) = p.rsplit_once('/').unwrap();
            let dir = if dir.is_empty() { "/" } else { dir };
            let parent = after[dir]["ino"].as_u64().unwrap();
            let want = (parent, leaf.to_string(), e["ino"].as_u64().unwrap());
            assert!(
                added.contains(&want),
                "{name}: {p}: {want:?} not among the added entries"
            );
        }
        // Every inode whose attributes differ between the listings has an
        // xattr change.
        let xattr_inos: std::collections::BTreeSet<u64> = ch["xattrs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["ino"].as_u64().unwrap())
            .collect();
        for (p, a) in &after {
            let b = before.get(p);
            if b.is_some_and(|b| b["ino"] == a["ino"] && b["xattrs_sha256"] != a["xattrs_sha256"]) {
                let ino = a["ino"].as_u64().unwrap();
                assert!(xattr_inos.contains(&ino), "{name}: {p}: xattrs changed");
            }
        }
        // Changed inodes include every path whose size, mode or nlink
        // changed.
        let inos: std::collections::BTreeSet<u64> = ch["inodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["ino"].as_u64().unwrap())
            .collect();
        for (p, a) in &after {
            let differs = before.get(p).is_none_or(|b| {
                ["size", "mode", "nlink", "uid", "gid"]
                    .iter()
                    .any(|k| b[*k] != a[*k])
            });
            if differs {
                assert!(inos.contains(&a["ino"].as_u64().unwrap()), "{name}: {p}");
            }
        }
        checked += 1;
    }
    assert!(checked >= 3, "{checked}");
}

/// The paths `replay --json` says replay added and removed are exactly the
/// paths the kernel's listing after recovery has and its listing of the
/// image on disk has not (and the reverse), with the kernel's inode
/// numbers.
#[test]
fn replay_paths_are_the_kernels_listing_difference() {
    let mut checked = 0;
    let mut removed_seen = 0;
    for name in fixtures_with("recovered-ls.jsonl") {
        if recovery_failed(&name) || !fixtures_dir().join(format!("{name}.ls.jsonl")).exists() {
            continue;
        }
        let before = by_path(&parse_lines(&oracle(&name, "ls.jsonl")));
        let after = by_path(&parse_lines(&oracle(&name, "recovered-ls.jsonl")));
        if before.values().any(|v| v.get("error").is_some()) {
            continue;
        }
        let v = replay_json(image(&name).to_str().unwrap());
        let paths = v["changes"]["paths"].as_array().unwrap();
        for (change, have, lacks) in [("added", &after, &before), ("removed", &before, &after)] {
            let want: BTreeMap<&str, u64> = have
                .iter()
                .filter(|(p, _)| !lacks.contains_key(*p))
                .map(|(p, e)| (p.as_str(), e["ino"].as_u64().unwrap()))
                .collect();
            let got: BTreeMap<&str, u64> = paths
                .iter()
                .filter(|p| p["change"] == change)
                .map(|p| (p["path"].as_str().unwrap(), p["ino"].as_u64().unwrap()))
                .collect();
            assert_eq!(got, want, "{name}: paths {change}");
            if change == "removed" {
                removed_seen += want.len();
            }
        }
        checked += 1;
    }
    assert!(checked >= 5, "{checked}");
    assert!(removed_seen > 100, "{removed_seen}");
}

#[test]
fn export_leaves_the_input_alone_writes_a_new_sparse_file_and_refuses_to_overwrite() {
    use std::os::unix::fs::MetadataExt;
    let name = "log-xattrs";
    let img = image(name);
    let before = Sha256::digest(std::fs::read(&img).unwrap());
    let mtime = std::fs::metadata(&img).unwrap().mtime();
    let (out, v) = export(name);
    assert_eq!(
        Sha256::digest(std::fs::read(&img).unwrap()),
        before,
        "input unchanged"
    );
    assert_eq!(std::fs::metadata(&img).unwrap().mtime(), mtime);
    let m = std::fs::metadata(&out).unwrap();
    assert_eq!(m.len(), std::fs::metadata(&img).unwrap().len());
    assert!(
        m.blocks() * 512 < m.len() / 2,
        "{} bytes allocated for {} bytes",
        m.blocks() * 512,
        m.len()
    );
    assert!(v["bytes_written"].as_u64().unwrap() < m.len());
    // The output must be new.
    let (ok, _, err) = run_cli(&["replay", img.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(!ok && err.contains("exists"), "{err}");
}

/// Sections of `NAME.recovered-ag.txt` (made by make/oracles.sh recovered-ag):
/// ("agf", "0") -> the xfs_db output of that section.
fn ag_oracle(name: &str) -> BTreeMap<(String, String), String> {
    let text = oracle(name, "recovered-ag.txt");
    let mut out: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut cur: Option<(String, String)> = None;
    for l in text.lines() {
        if let Some(h) = l.strip_prefix("## ") {
            let (w, a) = h.split_once(' ').unwrap();
            cur = Some((w.to_string(), a.to_string()));
            out.insert(cur.clone().unwrap(), String::new());
        } else if let Some(k) = &cur {
            let s = out.get_mut(k).unwrap();
            s.push_str(l);
            s.push('\n');
        }
    }
    out
}

/// The record lines of an xfs_db btdump ("1:[7,1]") as their fields.
fn btdump_records(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter_map(|l| {
            let (n, rest) = l.trim().split_once(':')?;
            n.parse::<u64>().ok()?;
            let inner = rest.trim().strip_prefix('[')?.strip_suffix(']')?;
            Some(inner.split(',').map(|f| f.trim().to_string()).collect())
        })
        .collect()
}

/// Our records of one btree of the exported image, in xfs_db's fields.
fn our_records(img: &str, tree: &str, agno: u32) -> Vec<Vec<String>> {
    let (ok, out, err) = run_cli(&["ag", "--records", tree, img, &agno.to_string()]);
    assert!(ok, "{img}: ag --records {tree}: {err}");
    let b = |v: &Value| u64::from(v.as_bool().unwrap()).to_string();
    out.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let n = |k: &str| {
                v[k].as_i64()
                    .map_or_else(|| v[k].to_string(), |x| x.to_string())
            };
            match tree {
                "bno" | "cnt" => vec![n("startblock"), n("blockcount")],
                "rmap" => vec![
                    n("startblock"),
                    n("blockcount"),
                    n("owner"),
                    n("offset"),
                    b(&v["extentflag"]),
                    b(&v["attrfork"]),
                    b(&v["bmbtblock"]),
                ],
                "refcount" => vec![
                    n("startblock"),
                    n("blockcount"),
                    n("refcount"),
                    b(&v["cowflag"]),
                ],
                _ => vec![
                    n("startino"),
                    // As C's "%#x" prints it.
                    match v["holemask"].as_u64().unwrap() {
                        0 => "0".to_string(),
                        h => format!("{h:#x}"),
                    },
                    n("count"),
                    n("freecount"),
                    // As C's "%#llx" prints it: no prefix for zero.
                    match v["free"].as_u64().unwrap() {
                        0 => "0".to_string(),
                        f => format!("{f:#x}"),
                    },
                ],
            }
        })
        .collect()
}

/// Unfinished intents and the inodes left on AGI unlinked lists: the
/// export equals the kernel's recovered copy in the superblock counters,
/// every AG header counter and every record of the six AG btrees
/// (`NAME.recovered-ag.txt`), when replay says it finished all of that
/// work; when it says it did not, the work left is reported and the AGs
/// it did not touch still equal the kernel's.
#[test]
fn intents_and_unlinked_inodes_end_as_the_kernels_recovery() {
    let names = fixtures_with("recovered-ag.txt");
    assert!(
        [
            "log-intents",
            "replay-unlinked",
            "replay-bui-ext",
            "replay-bui-btree",
            "replay-bui-cow",
            "replay-bui-convert",
        ]
        .iter()
        .all(|n| names.contains(&n.to_string())),
        "{names:?}"
    );
    for name in &names {
        mount_work_matches_the_kernel(name);
    }
}

fn mount_work_matches_the_kernel(name: &str) {
    let o = ag_oracle(name);
    // Its own output file: other tests export the same fixture in
    // parallel.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("replay-export-ag");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{name}.recovered.img"));
    let _ = std::fs::remove_file(&out);
    let (ok, stdout, err) = run_cli(&[
        "replay",
        "--json",
        image(name).to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{name}: {err}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let img = out.to_str().unwrap();
    let m = &v["mount"];
    let intents_done = m["intents"]["not_finished"].is_null();
    let unlinked = &m["unlinked_freed"];
    let all_done =
        intents_done && unlinked["not_freed"].is_null() && mount_work_left(&v).is_empty();
    if !all_done {
        // Honest about what is left: a reason, and the AGs it lies in.
        assert!(
            !m["intents"]["not_finished"].is_null() || !unlinked["not_freed"].is_null(),
            "{v}"
        );
        assert!(!mount_work_left(&v).is_empty(), "{v}");
        let left: Vec<u64> = m["ags_with_work_left"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_u64().unwrap())
            .collect();
        assert!(!left.is_empty());
        eprintln!(
            "{name}: work left in AGs {left:?}: {}",
            unlinked["not_freed"]
        );
    }
    if intents_done && name == "log-intents" {
        // The intents' own work: the reverse mapping of block 3652 owned by
        // inode 155788 is gone and the blocks 3652 and 3654 of AG 0 are
        // free (the kernel's xfs_repair found 3652 in an unknown state
        // while the intents were left undone).
        let rm = our_records(img, "rmap", 0);
        assert!(!rm.iter().any(|r| r[0] == "3652" && r[2] == "155788"));
        let bno = our_records(img, "bno", 0);
        for blk in [3652u64, 3654] {
            assert!(
                bno.iter().any(|r| {
                    let (s, l): (u64, u64) = (r[0].parse().unwrap(), r[1].parse().unwrap());
                    s <= blk && blk < s + l
                }),
                "{name}: block {blk} of AG 0 is not free"
            );
        }
    }
    let ag_blocks_left: Vec<u64> = m["ags_with_work_left"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_u64().unwrap())
        .collect();
    let sb = &o[&("sb".to_string(), "-".to_string())];
    if all_done {
        for f in ["icount", "ifree", "fdblocks"] {
            assert_eq!(
                m["after"][f].as_u64(),
                Some(db_field(sb, f)),
                "{name}: sb {f}"
            );
        }
    }
    let agcount = db_field(sb, "agcount") as u32;
    let mut compared = 0;
    for agno in 0..agcount {
        if !all_done && ag_blocks_left.contains(&u64::from(agno)) {
            continue;
        }
        let (ok, text, err) = run_cli(&["ag", "--json", img, &agno.to_string()]);
        assert!(ok, "{err}");
        let ours: Value = serde_json::from_str(&text).unwrap();
        let agf = &o[&("agf".to_string(), agno.to_string())];
        let agi = &o[&("agi".to_string(), agno.to_string())];
        for f in [
            "freeblks",
            "flcount",
            "btreeblks",
            "longest",
            "flfirst",
            "fllast",
            "bnolevel",
            "cntlevel",
            "rmaplevel",
            "rmapblocks",
            "refcntblocks",
            "refcntlevel",
        ] {
            // Fields of features the filesystem lacks are not printed.
            if !parse_xfs_db_print(agf).iter().any(|(k, _)| k == f) {
                continue;
            }
            assert_eq!(
                ours["agf"][f].as_u64(),
                Some(db_field(agf, f)),
                "{name}: AG {agno} agf {f}"
            );
        }
        for f in ["count", "freecount", "level", "free_level"] {
            if !parse_xfs_db_print(agi).iter().any(|(k, _)| k == f) {
                continue;
            }
            assert_eq!(
                ours["agi"][f].as_u64(),
                Some(db_field(agi, f)),
                "{name}: AG {agno} agi {f}"
            );
        }
        for (tree, sect) in [
            ("bno", "bnobt"),
            ("cnt", "cntbt"),
            ("rmap", "rmapbt"),
            ("refcount", "refcntbt"),
            ("ino", "inobt"),
            ("fino", "finobt"),
        ] {
            // Trees the filesystem does not have are not in the oracle.
            let Some(dump) = o.get(&(sect.to_string(), agno.to_string())) else {
                continue;
            };
            let kernel = btdump_records(dump);
            assert_eq!(
                our_records(img, tree, agno),
                kernel,
                "{name}: AG {agno} {tree} records"
            );
        }
        compared += 1;
    }
    assert!(compared >= 1, "{name}: no AG compared");
    if all_done {
        assert_eq!(compared, agcount, "{name}");
    }
    eprintln!("{name}: all work done: {all_done}; {compared} of {agcount} AGs equal the kernel's");
}

#[test]
fn the_ag_oracle_parses() {
    // Guards the parser above against a silently empty oracle.
    let o = ag_oracle("log-intents");
    let rm = btdump_records(&o[&("rmapbt".to_string(), "0".to_string())]);
    assert_eq!(rm.len(), 12);
    assert_eq!(rm[0], vec!["0", "1", "-3", "0", "0", "0", "0"]);
    let ino = btdump_records(&o[&("inobt".to_string(), "0".to_string())]);
    assert_eq!(
        ino,
        vec![vec!["128", "0", "64", "61", "0xfffffffffffffff8"]]
    );
    assert!(btdump_records(&o[&("inobt".to_string(), "1".to_string())]).is_empty());
}

/// The inode a finished BUI changed, against xfs_db on the kernel's
/// recovered copy: every core field xfs_db prints and the data fork's
/// mappings.
/// xfs_db's quoted string with its octal escapes undone.
fn octal_unescaped(v: &str) -> Vec<u8> {
    let b = v.trim_matches('"').as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            out.push(
                u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 4]).unwrap(), 8).unwrap(),
            );
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// A shortform attr list with the parent-namespace bit of each entry's
/// flags cleared (this xfs_db does not print it).
fn without_parent_bits(mut b: Vec<u8>) -> Vec<u8> {
    let count = b.get(2).copied().unwrap_or(0);
    let mut at = 4;
    for _ in 0..count {
        if at + 3 > b.len() {
            break;
        }
        b[at + 2] &= !0x08;
        at += 3 + b[at] as usize + b[at + 1] as usize;
    }
    b
}

/// The shortform attr list `xfs_db` prints (`a.sfattr.*`), as bytes.
fn sfattr_bytes(print: &[(String, String)]) -> Option<Vec<u8>> {
    let get = |k: &str| print.iter().find(|(f, _)| f == k).map(|(_, v)| v.clone());
    let total: u16 = get("a.sfattr.hdr.totsize")?.parse().unwrap();
    let count: u8 = get("a.sfattr.hdr.count")?.parse().unwrap();
    let mut b = total.to_be_bytes().to_vec();
    b.extend([count, 0]);
    for i in 0..count {
        let f = |k: &str| get(&format!("a.sfattr.list[{i}].{k}")).unwrap();
        // Octal escapes for bytes that are not text (parent pointers'
        // values), their length from valuelen.
        let text = |k: &str, len: usize| {
            let mut v = octal_unescaped(&f(k));
            v.resize(len, 0);
            v
        };
        let (name, value) = (
            text("name", f("namelen").parse().unwrap()),
            text("value", f("valuelen").parse().unwrap()),
        );
        assert_eq!(name.len().to_string(), f("namelen"));
        assert_eq!(value.len().to_string(), f("valuelen"));
        let flags = f("root").parse::<u8>().unwrap() * 2 + f("secure").parse::<u8>().unwrap() * 4;
        b.extend([name.len() as u8, value.len() as u8, flags]);
        b.extend(name);
        b.extend(value);
    }
    Some(b)
}

#[test]
fn attribute_intents_leave_the_kernels_inodes() {
    // Forged checkpoints of attribute intents finished by the kernel's
    // recovery: replay-attri (15 sets, replaces, removals; no attr fork,
    // an empty one, a device inode, a directory, forks that must move) and
    // replay-pptr (8 parent-pointer sets, removals and replaces, one
    // removal before the add of a set of the same pointer) and
    // replay-attri-leaf (leaf blocks, and a list that moves into one) and
    // replay-attri-rmt (remote values of one to five blocks set, replaced
    // and removed, on leaf blocks with value blocks after them; first
    // attributes too big for a list), replay-attri-node (forks in node
    // form), replay-attri-split (leaves that fill and split) and
    // replay-attri-join (leaves that empty and merge), and replay-pptr-node
    // (parent pointers in a fork in node form).
    let names = fixtures_with("recovered-attr.txt");
    assert!(names.len() >= 2, "{names:?}");
    for name in &names {
        attribute_intents_of(name);
    }
}

fn attribute_intents_of(name: &str) {
    let (out, v) = export(name);
    assert!(
        v["mount"]["intents"]["not_finished"].is_null(),
        "{name}: {v}"
    );
    let intents = oracle(name, "mkfs.txt")
        .lines()
        .filter(|l| l.trim_start().starts_with("attri:"))
        .count();
    assert!(intents > 0, "{name}: no intent in mkfs.txt");
    assert_eq!(
        v["mount"]["intents"]["finished"].as_array().unwrap().len(),
        intents,
        "{name}: {v}"
    );
    let dirty = image(name);
    let when = recovery_ctime(name);
    let text = oracle(name, "recovered-attr.txt");
    let mut seen = 0;
    // "### FILE INO", its xfs_db print, then "### getfattr" and its lines.
    let secs: Vec<&str> = text.split("\n### ").skip(1).collect();
    for pair in secs.chunks(2) {
        let (head, print) = pair[0].split_once('\n').unwrap();
        let attrs = pair[1].strip_prefix("getfattr").unwrap();
        let (file, ino) = head.split_once(' ').unwrap();
        let print = parse_xfs_db_print(print);
        let inode = |img: &PathBuf| -> Value {
            let (ok, js, err) = run_cli(&["inode", "--json", img.to_str().unwrap(), ino]);
            assert!(ok, "{file}: {err}");
            serde_json::from_str(&js).unwrap()
        };
        let (ours, before) = (inode(&out), inode(&dirty));
        let field = |k: &str| {
            let raw = &print.iter().find(|(f, _)| f == k).unwrap().1;
            xfs_db_number(raw.split_whitespace().next().unwrap())
                .unwrap_or_else(|| panic!("{file}: {k} = {raw}"))
        };
        for (k, want) in [
            ("forkoff", "core.forkoff"),
            ("aformat", "core.aformat"),
            ("anextents", "core.naextents"),
            ("changecount", "v3.change_count"),
            ("lsn", "v3.lsn"),
        ] {
            assert_eq!(ours[k].as_u64(), Some(field(want)), "{file} ({ino}): {k}");
        }
        // The change time: the recovery's where the kernel set one, else
        // as it was.
        let kernel_ns = field("core.ctime.nsec");
        let before_ns = before["ctime"]["nsec"].as_u64().unwrap();
        assert_eq!(
            ours["ctime"]["nsec"].as_u64(),
            Some(kernel_ns),
            "{file}: ctime"
        );
        if kernel_ns != before_ns {
            let t = &ours["ctime"];
            let ns = t["nsec"].as_u64().unwrap();
            assert_eq!(format!("{}.{ns:09}", t["sec"]), when, "{file}");
        }
        // The list itself, byte for byte, where the inode has one.
        match sfattr_bytes(&print) {
            Some(want) => {
                let hex = ours["attr_fork"]["bytes_hex"].as_str().unwrap();
                let bytes: Vec<u8> = (0..hex.len() / 2)
                    .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
                    .collect();
                assert_eq!(
                    without_parent_bits(bytes),
                    want,
                    "{name} {file}: shortform list"
                );
            }
            None => assert!(
                ours["attr_fork"]["bytes_hex"].is_null() || ours["aformat"] != 1,
                "{file}: {}",
                ours["attr_fork"]
            ),
        }
        // And as the mounted filesystem shows it.
        let (ok, got, err) = run_cli(&["getfattr", out.to_str().unwrap(), &format!("/{file}")]);
        assert!(ok, "{file}: {err}");
        let pairs = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| l.contains('=') && !l.starts_with('#'))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(pairs(&got), pairs(attrs), "{name} {file}: getfattr");
        seen += 1;
    }
    let files = oracle(name, "mkfs.txt")
        .lines()
        .filter(|l| l.starts_with("file "))
        .count();
    assert!(
        seen > 0 && seen <= files,
        "{name}: {seen} inodes of {files} files"
    );
}

#[test]
fn bmap_intents_leave_the_kernels_inode() {
    let names = fixtures_with("recovered-bmap.txt");
    assert!(names.len() >= 2, "{names:?}");
    let (mut attr_maps, mut local) = (0, 0);
    for name in &names {
        let mut maps = 0;
        let (out, v) = export(name);
        assert!(
            v["mount"]["intents"]["not_finished"].is_null(),
            "{name}: {v}"
        );
        let text = oracle(name, "recovered-bmap.txt");
        let mut sections = text.split("### ino ").skip(1).peekable();
        assert!(sections.peek().is_some(), "{name}: no inode in the oracle");
        for sec in sections {
            let (head, rest) = sec.split_once('\n').unwrap();
            let ino: u64 = head.trim().parse().unwrap();
            let (print, bmap) = rest.split_once("### bmap\n").unwrap();
            let (ok, js, err) =
                run_cli(&["inode", "--json", out.to_str().unwrap(), &ino.to_string()]);
            assert!(ok, "{name} inode {ino}: {err}");
            let ours: Value = serde_json::from_str(&js).unwrap();
            for (k, want) in [
                ("nblocks", "core.nblocks"),
                ("nextents", "core.nextents"),
                ("size", "core.size"),
                ("changecount", "v3.change_count"),
                ("lsn", "v3.lsn"),
                ("flags2", "v3.flags2"),
                ("anextents", "core.naextents"),
                ("forkoff", "core.forkoff"),
                ("aformat", "core.aformat"),
                ("format", "core.format"),
            ] {
                let w = parse_xfs_db_print(print)
                    .into_iter()
                    .find(|(f, _)| f == want)
                    .and_then(|(_, x)| xfs_db_number(&x))
                    .unwrap_or_else(|| panic!("{name}: {want} not in the oracle"));
                assert_eq!(ours[k].as_u64(), Some(w), "{name} inode {ino}: {k}");
            }
            // "data offset 10 startblock 28 (0/28) count 1 flag 0", and
            // "attr ..." lines where the oracle has the attr fork's too.
            let oracle_maps = |fork: &str| -> Vec<(u64, u64, u64, bool)> {
                bmap.lines()
                    .filter_map(|l| {
                        let w: Vec<&str> = l.split_whitespace().collect();
                        (w.first() == Some(&fork)).then(|| {
                            (
                                w[2].parse().unwrap(),
                                w[4].parse().unwrap(),
                                w[7].parse().unwrap(),
                                w[9] == "1",
                            )
                        })
                    })
                    .collect()
            };
            let our_maps = |fork: &str| -> Vec<(u64, u64, u64, bool)> {
                ours[fork]["extents"]
                    .as_array()
                    .map(|a| a.as_slice())
                    .unwrap_or_default()
                    .iter()
                    .map(|e| {
                        (
                            e["file_block"].as_u64().unwrap(),
                            e["start"].as_u64().unwrap(),
                            e["len"].as_u64().unwrap(),
                            e["unwritten"].as_bool().unwrap(),
                        )
                    })
                    .collect()
            };
            let (data, attr) = (oracle_maps("data"), oracle_maps("attr"));
            maps += data.len() + attr.len();
            // A symlink target the exchange's last call moved into the
            // inode: "u3.symlink = "TARGET"".
            if let Some(t) = print.lines().find_map(|l| l.strip_prefix("u3.symlink = ")) {
                let hex: String = t
                    .trim_matches('"')
                    .bytes()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                assert_eq!(
                    ours["data_fork"]["bytes_hex"].as_str(),
                    Some(hex.as_str()),
                    "{name} inode {ino}: symlink target"
                );
                local += 1;
            }
            assert_eq!(our_maps("data_fork"), data, "{name} inode {ino}: mappings");
            if !attr.is_empty() {
                assert_eq!(
                    our_maps("attr_fork"),
                    attr,
                    "{name} inode {ino}: attr mappings"
                );
                attr_maps += attr.len();
            }
        }
        assert!(maps > 0, "{name}: no mapping in the oracle");
    }
    // replay-xmi-attr: attr-fork exchanges; replay-xmi-tosf: a remote
    // symlink target moved into its inode.
    assert!(attr_maps > 0, "no oracle with attr-fork mappings");
    assert!(local > 0, "no oracle with a symlink target in its inode");
}

/// Two sets on one inode whose attributes fill a lone leaf: the kernel runs
/// both intents' first steps before either add, so the second add still
/// reads attr block 0 as a leaf after the first made it a node, and the
/// mount fails (`replay-attri-stale.kernel.txt`: its messages). Replay
/// leaves the intents unfinished and says why.
#[test]
fn an_add_whose_fork_changed_form_fails_as_the_kernel_fails() {
    let name = "replay-attri-stale";
    let facts = oracle(name, "kernel.txt");
    let status: u64 = facts
        .lines()
        .find_map(|l| l.strip_prefix("mount_status "))
        .expect("no mount status in the oracle")
        .trim()
        .parse()
        .unwrap();
    assert_ne!(status, 0, "the kernel mounted it");
    assert!(
        facts.contains("xfs_attr3_leaf_read") && facts.contains("Failed to recover intents"),
        "{facts}"
    );
    let v = replay_json(image(name).to_str().unwrap());
    let why = v["mount"]["intents"]["not_finished"]
        .as_str()
        .unwrap_or_else(|| panic!("finished: {v}"));
    assert!(why.contains("fails the mount"), "{why}");
    assert!(v["mount"]["intents"]["finished"]
        .as_array()
        .unwrap()
        .is_empty());
}

/// Exchanges the kernel's recovery fails on (forged; `NAME.kernel.txt`
/// holds the failed mount's status and messages): two overlapping ranges
/// of one file (the first step's bmap updates, which run last, map a block
/// a later step has already mapped elsewhere; the rmapbt refuses it), and
/// a symlink that the exchange's last call would turn back into shortform
/// before the first step's bmap updates (the kernel reads the target as
/// the file's own block still holds it, 1000 bytes, and its header no
/// longer matches the new size, 200), and a directory block that the last call turns into a
/// shortform directory (the first step's bmap updates then find a fork
/// without extents). Replay leaves the intent unfinished and says why.
#[test]
fn exchanges_the_kernel_fails_on_are_refused_for_the_same_reason() {
    for (name, kernel_says, we_say) in [
        ("replay-xmi-overlap", "xfs_rmap_map", "overlaps"),
        (
            "replay-xmi-linkfail",
            "symlink header does not match",
            "header says offset 0 and length 1000, not 0 and 200",
        ),
        (
            "replay-xmi-dirfail",
            "xfs_ifork_has_extents",
            "directory back into shortform",
        ),
    ] {
        let facts = oracle(name, "kernel.txt");
        let status = facts
            .lines()
            .find_map(|l| l.strip_prefix("mount_status "))
            .unwrap_or_else(|| panic!("{name}: no mount status in the oracle"));
        assert_ne!(status.trim(), "0", "{name}: the kernel mounted it");
        assert!(
            facts.contains(kernel_says) && facts.contains("Failed to recover intents"),
            "{name}: {facts}"
        );
        let v = replay_json(image(name).to_str().unwrap());
        let why = v["mount"]["intents"]["not_finished"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: finished: {v}"));
        assert!(
            why.contains(we_say) && why.contains("fails the mount"),
            "{name}: {why}"
        );
        assert!(
            v["mount"]["intents"]["finished"]
                .as_array()
                .unwrap()
                .is_empty(),
            "{name}"
        );
    }
}

/// An XMI names its inodes with their generations; the kernel fails the
/// mount when one no longer matches (`NAME.badgen.txt`: the same change
/// made by xfs_db to a copy, and the kernel's messages). Replay leaves the
/// intents unfinished and says why.
#[test]
fn an_exchange_of_another_generation_is_refused_as_the_kernel_refuses_it() {
    let name = "replay-xmi";
    let facts = oracle(name, "badgen.txt");
    let get = |k: &str| -> u64 {
        facts
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k} ")))
            .unwrap_or_else(|| panic!("no {k} in the oracle"))
            .trim()
            .parse()
            .unwrap()
    };
    assert_ne!(get("mount_status"), 0, "the kernel mounted it");
    assert!(facts.contains("Failed to recover intents"), "{facts}");
    // di_gen at byte 92 of the inode, its CRC (little-endian, at 100) over
    // the whole inode with the CRC zeroed.
    let at = usize::try_from(get("ino_byte")).unwrap();
    let mut bytes = std::fs::read(image(name)).unwrap();
    let isize = 512;
    let gen = u32::try_from(get("gen")).unwrap();
    bytes[at + 92..at + 96].copy_from_slice(&gen.to_be_bytes());
    bytes[at + 100..at + 104].fill(0);
    let crc = crc32c::crc32c(&bytes[at..at + isize]);
    bytes[at + 100..at + 104].copy_from_slice(&crc.to_le_bytes());
    let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.badgen.img"));
    std::fs::write(&p, bytes).unwrap();
    let v = replay_json(p.to_str().unwrap());
    let why = v["mount"]["intents"]["not_finished"]
        .as_str()
        .unwrap_or_else(|| panic!("finished: {v}"));
    assert!(
        why.contains(&format!("inode {} has generation {gen}", get("ino")))
            && why.contains("the kernel fails the mount"),
        "{why}"
    );
    assert!(v["mount"]["intents"]["finished"]
        .as_array()
        .unwrap()
        .is_empty());
}

/// The kernel's mount forces the log once the recovered intents are
/// finished: their work is one checkpoint at the old head, and what it does
/// next (unlinked inodes, CoW staging extents) goes in the following one.
/// Where that checkpoint starts is read from the records the kernel wrote
/// into its recovered copy (`make/oracles.sh mount-checkpoints`); replay must
/// put it in the same place, since every block the later work changes
/// carries its LSN.
#[test]
fn the_intents_checkpoint_takes_the_kernels_log_blocks() {
    let names = fixtures_with("mount-checkpoints.txt");
    assert!(names.len() >= 3, "{names:?}");
    for name in &names {
        let text =
            std::fs::read_to_string(fixtures_dir().join(format!("{name}.mount-checkpoints.txt")))
                .unwrap();
        let head: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix("head "))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Records that start a checkpoint, as (cycle, block).
        let starts: Vec<(u64, u64)> = text
            .lines()
            .filter(|l| l.starts_with("record ") && !l.contains(" starts 0 "))
            .map(|l| {
                let lsn = l.split_whitespace().nth(1).unwrap();
                let (c, b) = lsn.split_once(':').unwrap();
                (c.parse().unwrap(), b.parse().unwrap())
            })
            .collect();
        assert!(starts.len() >= 2, "{name}: {starts:?}");
        assert_eq!(
            starts[0].1, head,
            "{name}: the first checkpoint is at the head"
        );
        let v = replay_json(image(name).to_str().unwrap());
        let ours_head = &v["replay"]["head"];
        assert_eq!(
            (
                ours_head["cycle"].as_u64().unwrap(),
                ours_head["block"].as_u64().unwrap()
            ),
            starts[0],
            "{name}: head"
        );
        let i = &v["mount"]["intents"];
        assert!(
            !i["finished"].as_array().unwrap().is_empty(),
            "{name}: intents finished at mount"
        );
        let next = &i["next_lsn"];
        assert_eq!(
            (
                next["cycle"].as_u64().unwrap(),
                next["block"].as_u64().unwrap()
            ),
            starts[1],
            "{name}: the LSN of the checkpoint after the intents' ({})",
            i["checkpoint"]
        );
        let m = &v["mount"];
        let freed = m["unlinked_freed"]["freed"].as_array().map_or(0, Vec::len)
            + m["cow"]["freed"].as_array().map_or(0, Vec::len);
        assert!(freed > 0, "{name}: work after the intents carries that LSN");
    }
}
