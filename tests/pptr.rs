//! Parent pointers in attribute forks in blocks, against xfsprogs 6.13
//! (`pptr-forms`, made by `make/newer-xfsprogs.sh pptr-forms`: `-n parent=1`, a
//! file hard-linked 14 times under 200-byte names, whose parent pointers
//! fill one attribute leaf, one linked 120 times under 240-byte names,
//! whose parent pointers make a dabtree, and inodes with one link each,
//! whose fork stays shortform): every parent pointer `getfattr` reads is
//! one xfs_db decodes (`parent` for forks in blocks, `print a` for
//! shortform ones), and none is missing.

mod common;

use common::{image, oracle, run_cli, xfs_db_string};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

type Pptr = (String, u64, u64);

struct Inode {
    path: String,
    aformat: u64,
    magic: Option<String>,
    pointers: BTreeSet<Pptr>,
}

fn xfs_db_pointers(name: &str) -> BTreeMap<u64, Inode> {
    let mut out = BTreeMap::new();
    for sec in oracle(name, "pptr.txt").split("### ino ").skip(1) {
        let (head, body) = sec.split_once('\n').unwrap();
        let (ino, path) = head.split_once(" path ").unwrap();
        let mut inode = Inode {
            path: path.to_string(),
            aformat: 0,
            magic: None,
            pointers: BTreeSet::new(),
        };
        // print a: a.sfattr.list[i].{parent,name,parent_dir.inumber,parent_dir.gen}
        let mut sf: BTreeMap<usize, (bool, String, u64, u64)> = BTreeMap::new();
        for l in body.lines() {
            if let Some(v) = l.strip_prefix("core.aformat = ") {
                inode.aformat = v.parse().unwrap();
            } else if let Some(v) = l.strip_prefix("hdr.info.hdr.magic = ") {
                inode.magic = Some(v.to_string());
            } else if let Some(rest) = l.strip_prefix("a.sfattr.list[") {
                let (i, rest) = rest.split_once("].").unwrap();
                let (field, value) = rest.split_once(" = ").unwrap();
                let e = sf.entry(i.parse().unwrap()).or_default();
                match field {
                    "parent" => e.0 = value == "1",
                    "name" => e.1 = xfs_db_string(value),
                    "parent_dir.inumber" => e.2 = value.parse().unwrap(),
                    "parent_dir.gen" => e.3 = value.parse().unwrap(),
                    _ => {}
                }
            } else if let Some((ig, rest)) = l.trim_start().split_once(' ') {
                // parent: "PARENT:0xGEN NAMELEN NAME"
                let Some((p, g)) = ig.split_once(":0x") else {
                    continue;
                };
                let (len, n) = rest.trim_start().split_once(' ').unwrap();
                assert_eq!(n.len(), len.parse::<usize>().unwrap(), "{l}");
                inode.pointers.insert((
                    n.to_string(),
                    p.parse().unwrap(),
                    u64::from_str_radix(g, 16).unwrap(),
                ));
            }
        }
        for (_, (parent, n, dir, gen)) in sf {
            if parent {
                inode.pointers.insert((n, dir, gen));
            }
        }
        out.insert(ino.parse().unwrap(), inode);
    }
    out
}

#[test]
fn parent_pointers_in_leaf_and_node_attr_forks_are_the_ones_xfs_db_decodes() {
    let name = "pptr-forms";
    let want = xfs_db_pointers(name);
    let img = image(name);
    let img = img.to_str().unwrap();
    let mut forms = BTreeMap::new();
    let mut total = 0;
    for (ino, w) in &want {
        let (ok, out, err) = run_cli(&["getfattr", "--json", img, &w.path]);
        assert!(ok, "{}: {err}", w.path);
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["ino"].as_u64(), Some(*ino), "{}", w.path);
        assert!(
            v["problems"].as_array().is_none_or(|p| p.is_empty()),
            "{}: {v}",
            w.path
        );
        let ours: BTreeSet<Pptr> = v["parent_pointers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["name"].as_str().unwrap().to_string(),
                    p["parent"].as_u64().unwrap(),
                    p["gen"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(ours, w.pointers, "inode {ino} ({})", w.path);
        // The root has none; every other inode at least one.
        assert_eq!(w.pointers.is_empty(), w.path == "/", "{}", w.path);
        total += ours.len();
        if ours.is_empty() {
            continue;
        }
        let form = match (w.aformat, w.magic.as_deref()) {
            (1, _) => "shortform",
            (2, Some("0x3bee")) => "leaf",
            (2, Some("0x3ebe")) => "node",
            f => panic!("{}: attr fork {f:?}", w.path),
        };
        *forms.entry(form).or_insert(0) += ours.len();
    }
    // The fixture's shapes: one leaf of 14, a node over leaves holding
    // 120, and twelve directories and one file with one each.
    assert_eq!(forms.get("leaf"), Some(&14), "{forms:?}");
    assert_eq!(forms.get("node"), Some(&120), "{forms:?}");
    assert_eq!(forms.get("shortform"), Some(&13), "{forms:?}");
    assert_eq!(total, 147);
}
