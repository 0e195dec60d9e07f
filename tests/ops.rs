//! Operations and their transactions (`ops --json`) against the kernel's
//! own count, and the forkoff distribution against `xfs_db`:
//!
//! * `ops-*` fixtures (made by `make/ops.sh workloads`): a known workload
//!   run on the real kernel with the `xfs:xfs_trans_commit` tracepoint on,
//!   each operation's commits (rolls included, and the background work
//!   it caused) counted from the trace, then the filesystem shut down so
//!   the whole workload stays in the log. `NAME.truth.json` `by_kind`
//!   holds, per kind, the operations run and the transactions the kernel
//!   committed for them.
//! * `ops-typed` (made by `make/ops.sh typed`): transactions that
//!   carry their type, as kernels before delayed logging wrote them,
//!   written by the project's log forger and read back by `xfs_logprint`
//!   and the kernel's recovery; `NAME.truth.json` lists them.
//! * `NAME.forkoff-disk.txt` / `NAME.forkoff-recovered.txt`: every inode
//!   the inode btrees mark in use, printed with `xfs_db`, of the dirty
//!   image and of a copy the kernel recovered.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;

const KINDS: [&str; 13] = [
    "create",
    "mkdir",
    "mknod",
    "symlink",
    "link",
    "unlink",
    "rmdir",
    "rename",
    "setxattr",
    "removexattr",
    "write",
    "truncate",
    "setattr",
];

fn ops_json(name: &str) -> Value {
    let img = image(name);
    let (ok, out, err) = run_cli(&["--replay", "ops", img.to_str().unwrap(), "--json"]);
    assert!(ok, "{name}: ops failed: {err}");
    serde_json::from_str(&out).unwrap()
}

fn truth(name: &str) -> Value {
    serde_json::from_str(&oracle(name, "truth.json")).unwrap()
}

fn count(v: &Value, kind: &str) -> u64 {
    v.get(kind).and_then(Value::as_u64).unwrap_or(0)
}

/// The ops fixtures made by the kernel with tracepoint truth.
fn kernel_fixtures() -> Vec<String> {
    fixtures_with("truth.json")
        .into_iter()
        .filter(|n| truth(n).get("by_kind").is_some())
        .collect()
}

/// Those whose log was forced after every operation: each operation's
/// changes end a checkpoint of their own, so the log keeps all of them.
fn checkpointed_fixtures() -> Vec<String> {
    let names: Vec<String> = kernel_fixtures()
        .into_iter()
        .filter(|n| truth(n)["force_every"].as_u64() == Some(1))
        .collect();
    assert!(!names.is_empty(), "no checkpoint-per-operation fixtures");
    names
}

#[test]
fn operations_per_kind_equal_the_kernels_workload() {
    for name in checkpointed_fixtures() {
        let t = truth(&name);
        let r = ops_json(&name);
        for kind in KINDS {
            // An operation that committed nothing (a truncate of an empty
            // file to 0) leaves nothing in the log.
            let want = t["operations"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|o| o["kind"] == kind && o["transactions"].as_u64() != Some(0))
                .count() as u64;
            let got = count(&r["operations"], kind);
            assert_eq!(got, want, "{name}: {kind} operations");
        }
    }
}

#[test]
fn transactions_per_kind_equal_the_kernels_tracepoint_count() {
    for name in checkpointed_fixtures() {
        let t = truth(&name);
        let r = ops_json(&name);
        let mut diffs = Vec::new();
        for kind in KINDS {
            let want = t["by_kind"]
                .get(kind)
                .map_or(0, |k| count(k, "transactions"));
            let got = count(&r["transactions"], kind);
            if got != want {
                diffs.push(format!(
                    "{kind}: {got} counted, the kernel committed {want}"
                ));
            }
        }
        assert!(diffs.is_empty(), "{name}:\n{}", diffs.join("\n"));
        assert_eq!(
            r["unexplained_transactions"].as_u64(),
            Some(0),
            "{name}: transactions left unexplained"
        );
    }
}

/// With the log forced after every operation, checkpoint N holds
/// operation N (operations that committed nothing leave no checkpoint):
/// each checkpoint's operations and their transactions are the kernel's.
#[test]
fn each_checkpoint_holds_its_operation_with_its_transactions() {
    for name in checkpointed_fixtures() {
        let t = truth(&name);
        let r = ops_json(&name);
        let list = r["operation_list"].as_array().unwrap();
        let want: Vec<&Value> = t["operations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["transactions"].as_u64() != Some(0))
            .collect();
        let cps = r["checkpoints"].as_array().unwrap();
        assert_eq!(cps.len(), want.len(), "{name}: checkpoints");
        let mut wrong = Vec::new();
        for (cp, w) in cps.iter().zip(&want) {
            let mine: Vec<&Value> = cp["operations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| &list[i.as_u64().unwrap() as usize])
                .collect();
            let kinds: Vec<&str> = mine.iter().map(|o| o["kind"].as_str().unwrap()).collect();
            let tx: u64 = mine
                .iter()
                .map(|o| o["transactions"].as_u64().unwrap())
                .sum();
            if kinds != [w["kind"].as_str().unwrap()] || tx != w["transactions"].as_u64().unwrap() {
                wrong.push(format!(
                    "checkpoint {}: {kinds:?} with {tx} transactions, the kernel ran {} {} ({}) in {}",
                    cp["index"], w["kind"], w["paths"], w["detail"], w["transactions"]
                ));
            }
        }
        assert!(wrong.is_empty(), "{name}:\n{}", wrong.join("\n"));
    }
}

/// With the log forced after every operation, every operation names the
/// paths the workload used when it ran (`NAME.truth.json`): an entry
/// operation its path (and a rename where it went), an operation on an
/// inode the path of its entry, or every path of an inode with several
/// links (the workload's is one of them). Directories renamed later in the
/// log still show under the names they had then.
#[test]
fn each_operation_names_the_paths_it_ran_on() {
    for name in checkpointed_fixtures() {
        let t = truth(&name);
        let r = ops_json(&name);
        let list = r["operation_list"].as_array().unwrap();
        let want: Vec<&Value> = t["operations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["transactions"].as_u64() != Some(0))
            .collect();
        let strs = |v: &Value| -> Vec<String> {
            v.as_array()
                .map(|a| a.iter().map(|p| p.as_str().unwrap().to_string()).collect())
                .unwrap_or_default()
        };
        let (mut exact, mut among) = (0, 0);
        let mut wrong = Vec::new();
        for (cp, w) in r["checkpoints"].as_array().unwrap().iter().zip(&want) {
            let paths = strs(&w["paths"]);
            for i in cp["operations"].as_array().unwrap() {
                let o = &list[i.as_u64().unwrap() as usize];
                let links = strs(&o["links"]);
                let ours: Vec<String> = [&o["path"], &o["to_path"]]
                    .iter()
                    .filter_map(|p| p.as_str().map(str::to_string))
                    .collect();
                if !links.is_empty() {
                    if paths.iter().all(|p| links.contains(p)) {
                        among += 1;
                        continue;
                    }
                } else if ours == paths
                    || (o["kind"] != "rename" && ours.len() == 1 && paths.contains(&ours[0]))
                {
                    exact += 1;
                    continue;
                }
                wrong.push(format!(
                    "checkpoint {}: {} {ours:?} (links {links:?}), the workload's {paths:?}",
                    cp["index"], o["kind"]
                ));
            }
        }
        assert!(wrong.is_empty(), "{name}:\n{}", wrong.join("\n"));
        assert!(exact > 90, "{name}: {exact} paths");
        eprintln!("{name}: {exact} operations at their paths, {among} among their links");
    }
}

/// Filesystems with parent pointers (`-n parent=1`): every entry made,
/// removed or moved also sets, removes or replaces an attribute of the
/// inode it names, in rolls of the operation's transaction. The kernel's
/// trace on these fixtures counts, over the same workload, one more
/// transaction for each create, mkdir, mknod, symlink, link, unlink and
/// rmdir than on the same shape without them, and two more for a rename
/// (three over an existing name); the fixtures are counted exactly by the
/// tests above. Here: the shapes are there, and every entry operation says
/// its parent-pointer rolls.
#[test]
fn parent_pointer_shapes_count_their_rolls() {
    let names: Vec<String> = checkpointed_fixtures()
        .into_iter()
        .filter(|n| oracle(n, "mkfs.txt").contains("-n parent=1"))
        .collect();
    for shape in [
        "ops-each-parent-cp",
        "ops-each-parent1k-cp",
        "ops-mixed-parent-cp",
    ] {
        assert!(names.iter().any(|n| n == shape), "no fixture {shape}");
    }
    let entry = [
        "create", "mkdir", "mknod", "symlink", "link", "unlink", "rmdir", "rename",
    ];
    for name in names {
        let r = ops_json(&name);
        assert_eq!(r["unexplained_transactions"].as_u64(), Some(0), "{name}");
        let mut with_rolls = 0;
        for o in r["operation_list"].as_array().unwrap() {
            let kind = o["kind"].as_str().unwrap();
            let says = o["why"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().contains("parent-pointer update"));
            assert_eq!(
                says,
                entry.contains(&kind),
                "{name}: {kind} of inode {}: {:?}",
                o["ino"],
                o["why"]
            );
            if says {
                with_rolls += 1;
                assert!(o["transactions"].as_u64().unwrap() >= 2, "{name}: {o}");
            }
        }
        let t = truth(&name);
        let want = t["operations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| entry.contains(&o["kind"].as_str().unwrap()))
            .count();
        assert_eq!(with_rolls, want, "{name}: entry operations");
    }
}

/// One checkpoint of a whole workload keeps only its net effect: the
/// operations found are fewer than those run, but each names an operation
/// the kernel ran on that name (a new entry renamed or linked within the
/// checkpoint shows as made at its last name or one of its names; paths
/// change with renames of directories above them, so names are compared).
#[test]
fn single_checkpoint_logs_name_only_operations_that_ran() {
    for name in kernel_fixtures() {
        let t = truth(&name);
        if t["force_every"].as_u64() == Some(1) {
            continue;
        }
        let r = ops_json(&name);
        let base = |p: &str| p.rsplit('/').next().unwrap().to_string();
        let ran: Vec<(String, String)> = t["operations"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|o| {
                let k = o["kind"].as_str().unwrap().to_string();
                o["paths"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(move |p| (k.clone(), base(p.as_str().unwrap())))
            })
            .collect();
        let ran_on = |k: &str, n: &str| ran.contains(&(k.to_string(), n.to_string()));
        let mut checked = 0;
        for op in r["operation_list"].as_array().unwrap() {
            let kind = op["kind"].as_str().unwrap();
            let n = match kind {
                "rename" => &op["to_name"],
                _ => &op["name"],
            };
            let Some(n) = n.as_str() else { continue };
            if matches!(kind, "setxattr" | "removexattr") {
                continue;
            }
            checked += 1;
            // A link to a new name and the unlink of the old one leave
            // the same net change as a rename.
            let new_entry = matches!(
                kind,
                "create" | "mkdir" | "mknod" | "symlink" | "link" | "rename"
            );
            // An entry renamed away and then removed shows as removed at
            // the name it had.
            let removal = matches!(kind, "unlink" | "rmdir");
            assert!(
                ran_on(kind, n)
                    || (new_entry && (ran_on("rename", n) || ran_on("link", n)))
                    || (removal && ran_on("rename", n)),
                "{name}: {kind} of {n} found, but the kernel ran no such operation"
            );
        }
        assert!(checked > 0, "{name}: no operation checked");
        let total: u64 = t["by_kind"]
            .as_object()
            .unwrap()
            .values()
            .map(|k| count(k, "operations"))
            .sum();
        let found: u64 = r["operations"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert!(
            found < total,
            "{name}: {found} operations found of {total} run"
        );
        assert!(
            r["unexplained_transactions"].as_u64().unwrap() > 0,
            "{name}: nothing said to be unexplained"
        );
    }
}

#[test]
fn typed_transactions_are_counted_by_type() {
    let name = "ops-typed";
    let t = truth(name);
    let r = ops_json(name);
    assert_eq!(r["log_form"], "typed");
    // The forger's truth names kinds as the kernel's transaction types do;
    // SETATTR_NOT_SIZE is a setattr.
    let kind_of = |k: &str| if k == "chmod" { "setattr" } else { k }.to_string();
    let mut ops: BTreeMap<String, u64> = BTreeMap::new();
    let mut trans: BTreeMap<String, u64> = BTreeMap::new();
    for (k, v) in t["operations"].as_object().unwrap() {
        *ops.entry(kind_of(k)).or_default() += v.as_u64().unwrap();
    }
    for (k, v) in t["transactions_by_kind"].as_object().unwrap() {
        *trans.entry(kind_of(k)).or_default() += v.as_u64().unwrap();
    }
    for kind in KINDS {
        assert_eq!(
            count(&r["operations"], kind),
            ops.get(kind).copied().unwrap_or(0),
            "{kind} operations"
        );
        assert_eq!(
            count(&r["transactions"], kind),
            trans.get(kind).copied().unwrap_or(0),
            "{kind} transactions"
        );
    }
    // Every transaction is one checkpoint entry, named by its type.
    let listed = t["transactions"].as_array().unwrap();
    let cps = r["checkpoints"].as_array().unwrap();
    assert_eq!(cps.len(), listed.len());
    for (c, l) in cps.iter().zip(listed) {
        assert_eq!(c["type_name"], l["name"]);
        assert_eq!(c["th_type"], l["type"]);
    }
}

/// `ino mode forkoff aformat format anextents` or `ino unreadable` lines.
struct ForkoffOracle {
    by_value: BTreeMap<u64, u64>,
    by_type: BTreeMap<String, BTreeMap<u64, u64>>,
    inodes: u64,
    unreadable: u64,
}

fn type_of(mode: u32) -> &'static str {
    match mode & 0o170000 {
        0o100000 => "file",
        0o040000 => "dir",
        0o120000 => "symlink",
        0o020000 => "chardev",
        0o060000 => "blockdev",
        0o010000 => "fifo",
        0o140000 => "socket",
        _ => "unknown",
    }
}

fn forkoff_oracle(text: &str) -> ForkoffOracle {
    let mut o = ForkoffOracle {
        by_value: BTreeMap::new(),
        by_type: BTreeMap::new(),
        inodes: 0,
        unreadable: 0,
    };
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.get(1) == Some(&"unreadable") {
            o.unreadable += 1;
            continue;
        }
        let mode = u32::from_str_radix(f[1], 8).unwrap();
        let forkoff: u64 = f[2].parse().unwrap();
        o.inodes += 1;
        *o.by_value.entry(forkoff).or_default() += 1;
        *o.by_type
            .entry(type_of(mode).to_string())
            .or_default()
            .entry(forkoff)
            .or_default() += 1;
    }
    o
}

fn distribution_map(v: &Value) -> BTreeMap<u64, u64> {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, n)| (k.parse().unwrap(), n.as_u64().unwrap()))
        .collect()
}

#[test]
fn forkoff_distribution_equals_xfs_db_on_disk_and_after_recovery() {
    for name in fixtures_with("forkoff-disk.txt") {
        let r = ops_json(&name);
        for (suffix, key) in [
            ("forkoff-disk.txt", "forkoff"),
            ("forkoff-recovered.txt", "forkoff_replayed"),
        ] {
            let o = forkoff_oracle(&oracle(&name, suffix));
            let d = &r[key];
            assert_eq!(d["inodes"].as_u64(), Some(o.inodes), "{name} {key}: inodes");
            assert_eq!(
                d["unreadable_count"].as_u64(),
                Some(o.unreadable),
                "{name} {key}: unreadable inodes"
            );
            assert_eq!(distribution_map(&d["by_value"]), o.by_value, "{name} {key}");
            for (t, m) in &o.by_type {
                assert_eq!(&distribution_map(&d["by_type"][t]), m, "{name} {key}: {t}");
            }
        }
    }
}

#[test]
fn forkoff_command_counts_every_inode_the_kernel_lists_by_type() {
    let name = "ops-typed";
    let img = image(name);
    let (ok, out, err) = run_cli(&["forkoff", img.to_str().unwrap(), "--json"]);
    assert!(ok, "{err}");
    let d: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(d, ops_json(name)["forkoff"]);
    // The forged log changes no inode's allocation: the inodes in use are
    // the ones the kernel lists after recovery, plus the realtime bitmap
    // and summary inodes the superblock names (regular files).
    let mut by_type: BTreeMap<String, BTreeMap<u64, ()>> = BTreeMap::new();
    for l in oracle(name, "recovered-ls.jsonl").lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        by_type
            .entry(v["type"].as_str().unwrap().to_string())
            .or_default()
            .insert(v["ino"].as_u64().unwrap(), ());
    }
    let sb = parse_xfs_db_print(&oracle(name, "recovered-sb.txt"));
    for field in ["rbmino", "rsumino"] {
        let v = &sb.iter().find(|(k, _)| k == field).unwrap().1;
        if let Some(ino) = xfs_db_number(v) {
            by_type.entry("file".into()).or_default().insert(ino, ());
        }
    }
    let total: usize = by_type.values().map(BTreeMap::len).sum();
    assert_eq!(d["inodes"].as_u64(), Some(total as u64));
    for (t, inos) in &by_type {
        let n: u64 = d["by_type"][t]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(n, inos.len() as u64, "{t}");
    }
}

/// Operations on inodes that no entry operation in the log names (files
/// and directories made before the log) get their path from where
/// directories held them before the log changed them (the directory
/// blocks the log logged, as the disk held them, or the disk's directory
/// tree): each path given is one of the inode's paths in the kernel's
/// listing of a recovered copy (`NAME.recovered-ls.jsonl`), for inodes no
/// rename in the log moved (nor a directory above them), and nearly every
/// such operation gets one.
#[test]
fn operations_on_inodes_older_than_the_log_name_their_kernel_paths() {
    let (mut good, mut unplaced) = (0usize, 0usize);
    let mut wrong = Vec::new();
    for name in fixtures_with("recovered-ls.jsonl") {
        if !(name.starts_with("log-") || name.starts_with("ops-"))
            || !fixtures_dir().join(format!("{name}.img.zst")).exists()
        {
            continue;
        }
        let img = image(&name);
        let (ok, out, err) = run_cli(&["ops", img.to_str().unwrap(), "--json"]);
        assert!(ok, "{name}: {err}");
        let r: Value = serde_json::from_str(&out).unwrap();
        let list = r["operation_list"].as_array().unwrap();
        // The kernel's paths of every inode, and the inode of every path.
        let mut kernel: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        let mut ino_of: BTreeMap<String, u64> = BTreeMap::new();
        for l in oracle(&name, "recovered-ls.jsonl").lines() {
            let v: Value = serde_json::from_str(l).unwrap();
            let (p, i) = (v["path"].as_str().unwrap(), v["ino"].as_u64().unwrap());
            kernel.entry(i).or_default().push(p.to_string());
            ino_of.insert(p.to_string(), i);
        }
        let named: BTreeMap<u64, ()> = list
            .iter()
            .filter(|o| o.get("dir").is_some())
            .map(|o| (o["ino"].as_u64().unwrap(), ()))
            .collect();
        let renamed: BTreeMap<u64, ()> = list
            .iter()
            .filter(|o| o["kind"] == "rename")
            .map(|o| (o["ino"].as_u64().unwrap(), ()))
            .collect();
        for o in list {
            let ino = o["ino"].as_u64().unwrap();
            if o.get("dir").is_some() || named.contains_key(&ino) {
                continue;
            }
            let Some(paths) = kernel.get(&ino) else {
                continue;
            };
            // A directory above it renamed in the log: its path then and
            // now differ.
            let moved = paths.iter().any(|p| {
                p.match_indices('/')
                    .skip(1)
                    .any(|(i, _)| ino_of.get(&p[..i]).is_some_and(|a| renamed.contains_key(a)))
            });
            if moved {
                continue;
            }
            let ours: Vec<String> = match o["path"].as_str() {
                Some(p) => vec![p.to_string()],
                None => o["links"]
                    .as_array()
                    .map(|a| a.iter().map(|p| p.as_str().unwrap().to_string()).collect())
                    .unwrap_or_default(),
            };
            if ours.is_empty() {
                unplaced += 1;
            } else if ours.iter().all(|p| paths.contains(p)) {
                good += 1;
            } else {
                wrong.push(format!(
                    "{name}: {} of inode {ino} at {ours:?}, the kernel lists it at {paths:?}",
                    o["kind"]
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    eprintln!("{good} operations on older inodes at their kernel paths, {unplaced} without one");
    assert!(good > 100, "{good} placed");
    assert!(unplaced * 10 < good, "{unplaced} not placed, {good} placed");
}

/// Entries removed with the directory that held them in one checkpoint
/// (`rm -rf`; `log-intents`: 80 unlinks in four directories removed with
/// them): each unlink still names its path, the one the kernel lists on
/// the disk before the log (`NAME.ls.jsonl`, a copy mounted norecovery),
/// since a directory had to be empty before its rmdir. Every removal of
/// the `log-*` fixtures that names a path names one the kernel listed for
/// that inode, as does every operation on an inode removed before it in
/// the list (an xattr set, then the file removed, in one checkpoint).
#[test]
fn removals_with_their_directory_name_the_kernels_paths() {
    let (mut checked, mut checked_gone) = (0, 0);
    for name in fixtures_with("ls.jsonl") {
        if !name.starts_with("log-") || !fixtures_dir().join(format!("{name}.img.zst")).exists() {
            continue;
        }
        let mut kernel: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        for l in oracle(&name, "ls.jsonl").lines() {
            let v: Value = serde_json::from_str(l).unwrap();
            if let (Some(p), Some(i)) = (v["path"].as_str(), v["ino"].as_u64()) {
                kernel.entry(i).or_default().push(p.to_string());
            }
        }
        let img = image(&name);
        let (ok, out, err) = run_cli(&["ops", img.to_str().unwrap(), "--json"]);
        assert!(ok, "{name}: {err}");
        let r: Value = serde_json::from_str(&out).unwrap();
        let mut removed: BTreeMap<u64, String> = BTreeMap::new();
        for o in r["operation_list"].as_array().unwrap() {
            let ino = o["ino"].as_u64().unwrap();
            // An operation on an inode removed before it in the list (in
            // the same checkpoint: set, then removed) is named at the
            // entry it had last.
            if o.get("dir").is_none() {
                if let (Some(p), Some(gone), Some(paths)) =
                    (o["path"].as_str(), removed.get(&ino), kernel.get(&ino))
                {
                    if p == gone {
                        assert!(
                            paths.iter().any(|k| k == p),
                            "{name}: {} of removed inode {ino} at {p}, the kernel lists {paths:?}",
                            o["kind"]
                        );
                        checked_gone += 1;
                    }
                }
                continue;
            }
            if !matches!(o["kind"].as_str(), Some("unlink" | "rmdir")) {
                continue;
            }
            let path = o["path"].as_str();
            if let Some(p) = path {
                removed.insert(ino, p.to_string());
            }
            if name == "log-intents" {
                assert!(
                    path.is_some(),
                    "{name}: {} of inode {ino} has no path",
                    o["kind"]
                );
            }
            let (Some(p), Some(paths)) = (path, kernel.get(&ino)) else {
                continue;
            };
            assert!(
                paths.iter().any(|k| k == p),
                "{name}: {} of inode {ino} at {p}, the kernel lists {paths:?}",
                o["kind"]
            );
            checked += 1;
        }
    }
    assert!(checked >= 84, "{checked} removals checked");
    assert!(
        checked_gone >= 10,
        "{checked_gone} operations on removed inodes checked"
    );
}

/// Entries made in a directory made (or moved into place) in the same
/// checkpoint, and entries removed from a directory removed in it: the
/// directory's own entry is placed first, or last, as it had to happen,
/// so every entry operation of the `log-*` fixtures names its path.
#[test]
fn every_entry_operation_of_the_log_fixtures_names_its_path() {
    let mut checked = 0;
    for name in fixtures_with("logfacts.txt") {
        if !name.starts_with("log-") || !fixtures_dir().join(format!("{name}.img.zst")).exists() {
            continue;
        }
        let img = image(&name);
        let (ok, out, err) = run_cli(&["ops", img.to_str().unwrap(), "--json"]);
        assert!(ok, "{name}: {err}");
        let r: Value = serde_json::from_str(&out).unwrap();
        for o in r["operation_list"].as_array().unwrap() {
            if o.get("dir").is_none() {
                continue;
            }
            assert!(
                o["path"].is_string(),
                "{name}: {} of {} in directory {} has no path",
                o["kind"],
                o["name"],
                o["dir"]
            );
            checked += 1;
        }
    }
    assert!(checked > 5000, "{checked} entry operations checked");
}
