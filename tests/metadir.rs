//! The metadata directory tree (`mkfs.xfs -m metadir=1`), walked by
//! `ls -R --metadir` and checked against xfsprogs 6.13's `xfs_db ls -m` of
//! every directory of the tree (`NAME.metadir-ls.txt`, made by
//! `make/newer-xfsprogs.sh metadir`): `metadir-rt`, made by mkfs alone with four
//! realtime groups (this kernel cannot mount realtime), and `random-5008`,
//! a random workload shut down mid-way, against the kernel's recovery.

mod common;

use common::{image, oracle, run_cli};
use serde_json::Value;
use std::collections::BTreeSet;

/// (path, inode, type) of every entry below the tree's root, as xfs_db
/// lists them.
fn xfs_db_entries(text: &str) -> BTreeSet<(String, u64, String)> {
    let mut out = BTreeSet::new();
    let mut dir = String::new();
    for l in text.lines() {
        if l.starts_with('#') {
            continue;
        }
        if let Some(d) = l.strip_suffix(':') {
            dir = d.to_string();
            continue;
        }
        // cookie ino type hash namelen name (good)
        let f: Vec<&str> = l.split_whitespace().collect();
        assert!(f.len() >= 7, "{l}");
        let name = f[5];
        if name == "." || name == ".." {
            continue;
        }
        let kind = match f[2] {
            "directory" => "dir",
            "regular" => "file",
            k => panic!("{k} in {l}"),
        };
        let path = format!("{}/{name}", dir.trim_end_matches('/'));
        out.insert((path, f[1].parse().unwrap(), kind.to_string()));
    }
    out
}

fn ours(args: &[&str]) -> BTreeSet<(String, u64, String)> {
    let (ok, out, err) = run_cli(args);
    assert!(ok, "{args:?}: {err}");
    out.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["path"] != "/")
        .map(|v| {
            (
                v["path"].as_str().unwrap().to_string(),
                v["ino"].as_u64().unwrap(),
                v["type"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_metadata_directory_tree_is_the_one_xfs_db_lists() {
    let name = "metadir-rt";
    let want = xfs_db_entries(&oracle(name, "metadir-ls.txt"));
    // The realtime groups' bitmap and summary inodes.
    assert_eq!(want.len(), 9, "{want:?}");
    let img = image(name);
    let got = ours(&["ls", "-R", "--metadir", "--json", img.to_str().unwrap()]);
    assert_eq!(got, want);
}

#[test]
fn after_recovery_the_metadata_directory_tree_is_the_kernels() {
    let name = "random-5008";
    let want = xfs_db_entries(&oracle(name, "metadir-ls.txt"));
    assert!(!want.is_empty());
    let img = image(name);
    let got = ours(&[
        "--replay",
        "ls",
        "-R",
        "--metadir",
        "--json",
        img.to_str().unwrap(),
    ]);
    assert_eq!(got, want);
}

#[test]
fn a_filesystem_without_the_tree_says_so() {
    let img = image("v5-1k-rmap");
    let (ok, _, err) = run_cli(&["ls", "--metadir", img.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("no metadata directory tree"), "{err}");
}
