//! `xfs-explorer ag` against xfs_db on every kernel-made fixture: the AGF,
//! AGI and AGFL of every AG (`xfs_db -r -c "agf N" -c print`, ...), free
//! space totals (`freesp -s -a N`), and every block of every AG btree
//! (`btdump -i`: records, node keys, pointers, blocks per level), all
//! recorded by tests/fixtures/make/oracles.sh ag.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;

/// Split an oracle file into its `### <title>` sections.
fn sections(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut title: Option<String> = None;
    let mut body = String::new();
    for line in text.lines() {
        if let Some(t) = line.strip_prefix("### ") {
            if let Some(prev) = title.take() {
                out.insert(prev, std::mem::take(&mut body));
            }
            title = Some(t.to_string());
        } else {
            body.push_str(line);
            body.push('\n');
        }
    }
    if let Some(prev) = title {
        out.insert(prev, body);
    }
    out
}

/// xfs_db's `i:v i:v ...` array form (`null` = all ones).
fn indexed(v: &str) -> BTreeMap<usize, u64> {
    v.split_whitespace()
        .filter_map(|t| {
            let (i, x) = t.split_once(':')?;
            Some((i.parse().ok()?, xfs_db_number(x)?))
        })
        .collect()
}

fn ag_json(img: &str) -> Value {
    let (ok, out, err) = run_cli(&["ag", "--json", img]);
    assert!(ok, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn version_of(all: &Value) -> u64 {
    // v5 headers carry a crc field; v4 ones do not.
    if all["ags"][0]["agf"].get("crc").is_some() {
        5
    } else {
        4
    }
}

/// Compare one header's JSON object with xfs_db's print of it.
fn compare_header(name: &str, what: &str, ours: &Value, db_text: &str, v4: bool) {
    let db = parse_xfs_db_print(db_text);
    assert!(!db.is_empty(), "{name} {what}: empty oracle");
    let v5_only = ["uuid", "lsn", "crc"];
    let mut seen = Vec::new();
    for (key, val) in &db {
        let base = key.split('[').next().unwrap_or(key);
        seen.push(base.to_string());
        if v4 && v5_only.contains(&base) {
            assert!(
                ours.get(base).is_none(),
                "{name} {what}: v4 shows v5-only {base}"
            );
            continue;
        }
        let mine = ours
            .get(base)
            .unwrap_or_else(|| panic!("{name} {what}: missing {base}"));
        match base {
            "uuid" => assert_eq!(mine.as_str().unwrap(), val, "{name} {what}: uuid"),
            "crc" => {
                // Stored little-endian; xfs_db prints the bytes as a
                // big-endian word.
                let db_crc = u32::try_from(xfs_db_number(val).unwrap()).unwrap();
                assert_eq!(
                    mine.as_u64().unwrap(),
                    u64::from(db_crc.swap_bytes()),
                    "{name} {what}: crc"
                );
                assert_eq!(
                    ours["crc_ok"],
                    Value::Bool(val.contains("(correct)")),
                    "{name} {what}: crc_ok vs '{val}'"
                );
            }
            "unlinked" | "bno" => {
                let want = indexed(val);
                let arr = mine.as_array().unwrap();
                if base == "bno" {
                    // bno[0-N]: every slot is printed.
                    let n: usize = key
                        .trim_end_matches(']')
                        .rsplit('-')
                        .next()
                        .unwrap()
                        .parse()
                        .unwrap();
                    assert_eq!(arr.len(), n + 1, "{name} {what}: AGFL size");
                    assert_eq!(want.len(), n + 1, "{name} {what}: oracle slots");
                }
                // unlinked[0-63]: only the non-null buckets are printed.
                assert_eq!(arr.len(), if base == "bno" { arr.len() } else { 64 });
                for (i, x) in arr.iter().enumerate() {
                    let expect = want.get(&i).copied().unwrap_or(u64::MAX);
                    let expect = if expect == u64::MAX {
                        u64::from(u32::MAX)
                    } else {
                        expect
                    };
                    assert_eq!(x.as_u64(), Some(expect), "{name} {what}: {base}[{i}]");
                }
            }
            _ if val.is_empty() => {
                // xfs_db hides the rmap/refcount roots of filesystems
                // without those features; the bytes are zero.
                assert_eq!(
                    mine.as_u64(),
                    Some(0),
                    "{name} {what}: {base} (hidden by xfs_db)"
                );
            }
            _ => {
                let n =
                    xfs_db_number(val).unwrap_or_else(|| panic!("{name} {what}: {key} = {val}"));
                let n = if n == u64::MAX {
                    u64::from(u32::MAX)
                } else {
                    n
                };
                assert_eq!(
                    mine.as_u64(),
                    Some(n),
                    "{name} {what}: {base} (xfs_db says {val})"
                );
            }
        }
    }
    for key in ours.as_object().unwrap().keys() {
        let extra = ["crc_ok", "problems", "free_list"];
        assert!(
            extra.contains(&key.as_str()) || seen.contains(key),
            "{name} {what}: {key} is not an xfs_db field"
        );
    }
    assert_eq!(ours["problems"], Value::Array(vec![]), "{name} {what}");
}

#[test]
fn agf_agi_agfl_equal_xfs_db_on_every_fixture() {
    for name in fixtures_with("ag.txt") {
        let img = image(&name);
        let all = ag_json(img.to_str().unwrap());
        let v4 = version_of(&all) == 4;
        let secs = sections(&oracle(&name, "ag.txt"));
        let ags = all["ags"].as_array().unwrap();
        assert_eq!(Some(ags.len() as u64), all["agcount"].as_u64());
        assert_eq!(secs.len(), ags.len() * 4, "{name}: sections");
        for (i, ag) in ags.iter().enumerate() {
            assert_eq!(ag["agno"], Value::from(i));
            for what in ["agf", "agi", "agfl"] {
                let text = &secs[&format!("{what} {i}")];
                compare_header(&name, &format!("{what} {i}"), &ag[what], text, v4);
            }
            // The free list: flfirst..fllast of the slots, wrapping.
            let agf = parse_xfs_db_print(&secs[&format!("agf {i}")]);
            let get = |k: &str| {
                xfs_db_number(&agf.iter().find(|(n, _)| n == k).unwrap().1).unwrap() as usize
            };
            let (first, last, count) = (get("flfirst"), get("fllast"), get("flcount"));
            let slots = ag["agfl"]["bno"].as_array().unwrap();
            let mut want = Vec::new();
            let mut s = first;
            while want.len() < count {
                want.push(slots[s].clone());
                s = (s + 1) % slots.len();
            }
            if count > 0 {
                assert_eq!((s + slots.len() - 1) % slots.len(), last, "{name} AG {i}");
            }
            assert_eq!(
                ag["agfl"]["free_list"],
                Value::Array(want),
                "{name} AG {i}: free list"
            );
            assert_eq!(ag["problems"], Value::Array(vec![]), "{name} AG {i}");
        }
    }
}

#[test]
fn free_space_equals_xfs_db_freesp() {
    for name in fixtures_with("ag.txt") {
        let img = image(&name);
        let all = ag_json(img.to_str().unwrap());
        let secs = sections(&oracle(&name, "ag.txt"));
        for (i, ag) in all["ags"].as_array().unwrap().iter().enumerate() {
            let text = &secs[&format!("freesp {i}")];
            let total = |label: &str| -> u64 {
                text.lines()
                    .find_map(|l| l.strip_prefix(label))
                    .unwrap_or_else(|| panic!("{name} AG {i}: no '{label}'"))
                    .trim()
                    .parse()
                    .unwrap()
            };
            let (extents, blocks) = (total("total free extents "), total("total free blocks "));
            // freesp counts the free-space btree extents and, as one-block
            // extents, the blocks on the AGFL.
            let fl = ag["agfl"]["free_list"].as_array().unwrap().len() as u64;
            for t in ["bno", "cnt"] {
                let tree = &ag["btrees"][t];
                assert_eq!(
                    tree["free_blocks"].as_u64().unwrap() + fl,
                    blocks,
                    "{name} AG {i} {t}"
                );
                assert_eq!(
                    tree["records"].as_u64().unwrap() + fl,
                    extents,
                    "{name} AG {i} {t}"
                );
            }
        }
    }
}

/// A record or key as xfs_db prints it: field names and values.
type DbFields = Vec<(String, i128)>;

/// One block of xfs_db's `btdump -i`.
#[derive(Debug, Default)]
struct DbBlock {
    level: u32,
    recs: Vec<DbFields>,
    keys: Vec<DbFields>,
    ptrs: Vec<i128>,
}

fn db_value(v: &str) -> i128 {
    if let Some(h) = v.strip_prefix("0x") {
        i128::from_str_radix(h, 16).unwrap()
    } else if v == "null" {
        i128::from(u32::MAX)
    } else {
        v.parse().unwrap_or_else(|_| panic!("value {v}"))
    }
}

fn parse_btdump(text: &str) -> Vec<DbBlock> {
    let mut blocks: Vec<DbBlock> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut in_keys = false;
    for line in text.lines() {
        let line = line.trim();
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() == 7 && words[1] == "level" && words[3] == "block" && words[5] == "daddr" {
            blocks.push(DbBlock {
                level: words[2].parse().unwrap(),
                ..Default::default()
            });
        } else if let Some((lhs, rhs)) = line.split_once(" = ") {
            let rhs = rhs.trim();
            if lhs.starts_with("ptrs[") {
                blocks.last_mut().unwrap().ptrs =
                    indexed(rhs).into_values().map(i128::from).collect();
            } else {
                in_keys = lhs.starts_with("keys[");
                names = rhs
                    .trim_matches(|c| c == '[' || c == ']')
                    .split(',')
                    .map(str::to_string)
                    .collect();
            }
        } else if let Some((_, rest)) = line.split_once(":[") {
            let vals: Vec<i128> = rest
                .trim_end_matches(']')
                .split(',')
                .map(db_value)
                .collect();
            assert_eq!(vals.len(), names.len(), "{line}");
            let rec: Vec<(String, i128)> = names.iter().cloned().zip(vals).collect();
            let b = blocks.last_mut().unwrap();
            if in_keys {
                b.keys.push(rec);
            } else {
                b.recs.push(rec);
            }
        } else if line.is_empty() || line == "field recs not found" {
        } else {
            panic!("unexpected btdump line: {line}");
        }
    }
    blocks
}

fn json_int(v: &Value) -> i128 {
    match v {
        Value::Bool(b) => i128::from(*b),
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or(n.as_u64().map(i128::from))
            .unwrap(),
        other => panic!("not a number: {other}"),
    }
}

/// Lines of `ag --records/--keys TREE`, grouped by AG.
fn dump(img: &str, flag: &str, tree: &str) -> BTreeMap<u64, Vec<Value>> {
    let (ok, out, err) = run_cli(&["ag", img, flag, tree]);
    assert!(ok, "{err}");
    assert!(err.is_empty(), "{tree}: {err}");
    let mut m: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    for line in out.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["btree"], Value::from(tree));
        m.entry(v["agno"].as_u64().unwrap()).or_default().push(v);
    }
    m
}

fn compare_fields(ctx: &str, ours: &Value, want: &[(String, i128)]) {
    for (k, v) in want {
        let mine = ours
            .get(k)
            .unwrap_or_else(|| panic!("{ctx}: missing {k} in {ours}"));
        assert_eq!(json_int(mine), *v, "{ctx}: {k} in {ours}");
    }
}

#[test]
fn every_btree_equals_xfs_db_btdump() {
    let mut trees_checked = 0;
    let mut multi_level = 0;
    for name in fixtures_with("agbt.txt") {
        let img = image(&name);
        let img = img.to_str().unwrap();
        let all = ag_json(img);
        let secs = sections(&oracle(&name, "agbt.txt"));
        let mut by_tree: BTreeMap<String, Vec<(u64, Vec<DbBlock>)>> = BTreeMap::new();
        for (title, body) in &secs {
            let w: Vec<&str> = title.split_whitespace().collect();
            assert_eq!(w[0], "ag");
            by_tree
                .entry(w[2].to_string())
                .or_default()
                .push((w[1].parse().unwrap(), parse_btdump(body)));
        }
        for (tree, per_ag) in &by_tree {
            let recs = dump(img, "--records", tree);
            let keys = dump(img, "--keys", tree);
            for (agno, blocks) in per_ag {
                let ctx = format!("{name} AG {agno} {tree}");
                let summary = &all["ags"][*agno as usize]["btrees"][tree.as_str()];
                let height = blocks.iter().map(|b| b.level).max().unwrap() + 1;
                assert_eq!(summary["levels"].as_u64(), Some(u64::from(height)), "{ctx}");
                let per_level: Vec<u64> = (0..height)
                    .map(|l| blocks.iter().filter(|b| b.level == l).count() as u64)
                    .collect();
                assert_eq!(summary["blocks_per_level"], Value::from(per_level), "{ctx}");
                assert_eq!(summary["problems"], Value::Array(vec![]), "{ctx}");
                if height > 1 {
                    multi_level += 1;
                }
                // Leaf records, left to right.
                let want: Vec<&Vec<(String, i128)>> = blocks
                    .iter()
                    .filter(|b| b.level == 0)
                    .flat_map(|b| &b.recs)
                    .collect();
                let got = recs.get(agno).map(Vec::as_slice).unwrap_or(&[]);
                assert_eq!(got.len(), want.len(), "{ctx}: records");
                assert_eq!(
                    summary["records"].as_u64(),
                    Some(want.len() as u64),
                    "{ctx}"
                );
                for (i, (g, w)) in got.iter().zip(want).enumerate() {
                    compare_fields(&format!("{ctx} record {}", i + 1), g, w);
                }
                // Node keys and pointers, top level first, left to right.
                let mut got: Vec<&Value> = keys
                    .get(agno)
                    .map(|v| v.iter().collect())
                    .unwrap_or_default();
                got.sort_by_key(|v| std::cmp::Reverse(v["level"].as_u64()));
                let want: Vec<(u32, &DbFields, i128)> = blocks
                    .iter()
                    .filter(|b| b.level > 0)
                    .flat_map(|b| {
                        assert_eq!(b.keys.len(), b.ptrs.len());
                        b.keys.iter().zip(&b.ptrs).map(|(k, p)| (b.level, k, *p))
                    })
                    .collect();
                assert_eq!(got.len(), want.len(), "{ctx}: keys");
                for (i, (g, (level, k, p))) in got.iter().zip(want).enumerate() {
                    let c = format!("{ctx} key {}", i + 1);
                    assert_eq!(g["level"].as_u64(), Some(u64::from(level)), "{c}");
                    compare_fields(&c, g, k);
                    assert_eq!(json_int(&g["ptr"]), p, "{c}: ptr");
                }
                trees_checked += 1;
            }
        }
        // Every tree the summary lists was checked against xfs_db.
        for ag in all["ags"].as_array().unwrap() {
            let listed: Vec<&String> = ag["btrees"].as_object().unwrap().keys().collect();
            let oracle_trees: Vec<&String> = by_tree.keys().collect();
            let mut listed_sorted = listed.clone();
            listed_sorted.sort();
            assert_eq!(listed_sorted, oracle_trees, "{name}");
        }
    }
    assert!(trees_checked >= 150, "{trees_checked}");
    assert!(multi_level >= 2, "no multi-level tree in the fixtures");
}

#[test]
fn inode_counts_equal_the_agi_and_xfs_db_records() {
    for name in fixtures_with("agbt.txt") {
        let img = image(&name);
        let all = ag_json(img.to_str().unwrap());
        let secs = sections(&oracle(&name, "agbt.txt"));
        for (i, ag) in all["ags"].as_array().unwrap().iter().enumerate() {
            let ino = &ag["btrees"]["ino"];
            let recs: Vec<Vec<(String, i128)>> = parse_btdump(&secs[&format!("ag {i} ino")])
                .into_iter()
                .filter(|b| b.level == 0)
                .flat_map(|b| b.recs)
                .collect();
            let field =
                |r: &Vec<(String, i128)>, k: &str| r.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
            let inodes: i128 = recs.iter().map(|r| field(r, "count").unwrap_or(64)).sum();
            let free: i128 = recs.iter().map(|r| field(r, "freecount").unwrap()).sum();
            assert_eq!(
                i128::from(ino["inodes"].as_u64().unwrap()),
                inodes,
                "{name} AG {i}"
            );
            assert_eq!(
                i128::from(ino["free"].as_u64().unwrap()),
                free,
                "{name} AG {i}"
            );
            assert_eq!(
                ino["chunks"].as_u64(),
                Some(recs.len() as u64),
                "{name} AG {i}"
            );
            assert_eq!(ag["agi"]["count"], ino["inodes"], "{name} AG {i}");
            assert_eq!(ag["agi"]["freecount"], ino["free"], "{name} AG {i}");
        }
    }
}

#[test]
fn one_ag_and_bad_arguments() {
    let img = image("v5-1k-rmap");
    let img = img.to_str().unwrap();
    let (ok, out, err) = run_cli(&["ag", "--json", img, "2"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["agno"], 2);
    assert_eq!(v["agf"]["seqno"], 2);
    let (ok, _, err) = run_cli(&["ag", img, "4"]);
    assert!(!ok);
    assert!(
        err.contains("AG 4 does not exist: the filesystem has 4 AGs"),
        "{err}"
    );
    let (ok, _, err) = run_cli(&["ag", img, "--records", "nope"]);
    assert!(!ok);
    assert!(err.contains("unknown btree 'nope'"), "{err}");
    let v4 = image("v4");
    let (ok, _, err) = run_cli(&["ag", v4.to_str().unwrap(), "--records", "rmap"]);
    assert!(!ok);
    assert!(err.contains("no rmapbt"), "{err}");
    let (ok, out, err) = run_cli(&["ag", img, "0", "--records", "rmap", "--limit", "3"]);
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 3);
    let (ok, out, err) = run_cli(&["ag", img, "0"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("AGF fields") && out.contains("problems: none"),
        "{out}"
    );
}
