//! `xfs-explorer ls -R --json` against the kernel's own listing of every
//! mounted fixture (`NAME.ls.jsonl`, made by `make/oracles.sh listings` with
//! `kernel_listing.py`), plus `ls` without `-R`, `getfattr` and `cat` by
//! path against the same listings, and error reporting on damaged copies
//! (block addresses from `xfs_db`, in `NAME.xfsdb-dirattr.txt` and
//! `NAME.sb.txt`).
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::*;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

fn parse_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Lines keyed by path (error lines are kept apart).
fn by_path(lines: &[Value]) -> (BTreeMap<String, Value>, Vec<Value>) {
    let mut m = BTreeMap::new();
    let mut errors = Vec::new();
    for v in lines {
        if v.get("error").is_some() {
            errors.push(v.clone());
            continue;
        }
        let p = v["path"].as_str().unwrap().to_string();
        assert!(m.insert(p.clone(), v.clone()).is_none(), "{p} twice");
    }
    (m, errors)
}

/// The first difference between two listings, in words.
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
        let ko = k.as_object().unwrap();
        let oo = o.as_object().unwrap();
        let kk: Vec<&String> = ko.keys().collect();
        let ok: Vec<&String> = oo.keys().collect();
        if kk != ok {
            return Some(format!("{name}: {p}: keys {ok:?}, kernel has {kk:?}"));
        }
        for (key, kv) in ko {
            if oo[key] != *kv {
                return Some(format!(
                    "{name}: {p}: {key} is {}, kernel says {kv}",
                    oo[key]
                ));
            }
        }
    }
    ours.keys()
        .find(|p| !kernel.contains_key(*p))
        .map(|p| format!("{name}: {p} is in our listing but not in the kernel's"))
}

#[test]
fn ls_recursive_json_equals_the_kernel_listing_of_every_fixture() {
    let names = fixtures_with("ls.jsonl");
    assert!(names.len() >= 7, "{names:?}");
    for name in &names {
        let img = image(name);
        let (ok, out, err) = run_cli(&["ls", "-R", "--json", img.to_str().unwrap()]);
        let ours = parse_lines(&out);
        let kernel = parse_lines(&oracle(name, "ls.jsonl"));
        // The kernel lists in path order; so must we.
        let paths: Vec<&str> = ours.iter().map(|v| v["path"].as_str().unwrap()).collect();
        let mut sorted = paths.clone();
        sorted.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        assert_eq!(paths, sorted, "{name}: not sorted by path");
        let (ours, errors) = by_path(&ours);
        let (kernel, _) = by_path(&kernel);
        assert!(errors.is_empty(), "{name}: error lines {errors:?}");
        assert!(ok, "{name}: {err}");
        if let Some(d) = first_difference(name, &ours, &kernel) {
            panic!("{d}");
        }
        assert_eq!(ours.len(), kernel.len(), "{name}");
    }
}

#[test]
fn ls_without_r_lists_a_directory_or_one_object() {
    let name = "v5-formats";
    let img = image(name);
    let (kernel, _) = by_path(&parse_lines(&oracle(name, "ls.jsonl")));
    for dir in ["/", "/dirs/sf", "/dirs/node3200", "/xattrs", "/special"] {
        let (ok, out, err) = run_cli(&["ls", "--json", img.to_str().unwrap(), dir]);
        assert!(ok, "{dir}: {err}");
        let (ours, errors) = by_path(&parse_lines(&out));
        assert!(errors.is_empty());
        let prefix = if dir == "/" {
            "/".to_string()
        } else {
            format!("{dir}/")
        };
        let want: BTreeMap<String, Value> = kernel
            .iter()
            .filter(|(p, _)| {
                p.strip_prefix(&prefix)
                    .is_some_and(|rest| !rest.is_empty() && !rest.contains('/'))
            })
            .map(|(p, v)| (p.clone(), v.clone()))
            .collect();
        assert!(!want.is_empty());
        if let Some(d) = first_difference(dir, &ours, &want) {
            panic!("{d}");
        }
    }
    // A file is listed alone; `.`, `..` and doubled slashes are resolved.
    for (arg, want) in [
        ("/files/small", "/files/small"),
        ("//dirs/./sf/../sf/file", "/dirs/sf/file"),
        ("/links/short", "/links/short"),
    ] {
        let (ok, out, err) = run_cli(&["ls", "--json", img.to_str().unwrap(), arg]);
        assert!(ok, "{arg}: {err}");
        let lines = parse_lines(&out);
        assert_eq!(lines.len(), 1, "{arg}");
        assert_eq!(lines[0], kernel[want], "{arg}");
    }
    // -R on a subtree starts with the subtree itself.
    let (ok, out, _) = run_cli(&["ls", "-R", "--json", img.to_str().unwrap(), "/dirs/sf"]);
    assert!(ok);
    let (ours, _) = by_path(&parse_lines(&out));
    let want: BTreeMap<String, Value> = kernel
        .iter()
        .filter(|(p, _)| *p == "/dirs/sf" || p.starts_with("/dirs/sf/"))
        .map(|(p, v)| (p.clone(), v.clone()))
        .collect();
    assert_eq!(ours, want);
}

#[test]
fn ls_text_form_reads_like_ls_l() {
    let img = image("v5-formats");
    let (ok, out, err) = run_cli(&["ls", img.to_str().unwrap(), "/dirs/sf"]);
    assert!(ok, "{err}");
    let link = out
        .lines()
        .find(|l| l.ends_with("/dirs/sf/link -> file"))
        .unwrap();
    assert!(link.contains(" lrwxrwxrwx "), "{link}");
    let (ok, out, _) = run_cli(&["ls", img.to_str().unwrap(), "/special"]);
    assert!(ok);
    assert!(
        out.lines()
            .any(|l| l.contains(" c") && l.contains(" 1, 3 ")),
        "{out}"
    );
}

#[test]
fn bad_paths_get_clear_errors() {
    let img = image("v5-formats");
    let img = img.to_str().unwrap();
    let (ok, _, err) = run_cli(&["ls", img, "/no/such/thing"]);
    assert!(!ok);
    assert!(err.contains("/no: no such file or directory"), "{err}");
    let (ok, _, err) = run_cli(&["ls", img, "/files/small/x"]);
    assert!(!ok);
    assert!(
        err.contains("/files/small: is a regular file, not a directory"),
        "{err}"
    );
    let (ok, _, err) = run_cli(&["ls", img, "/dirs/sf/link/x"]);
    assert!(!ok);
    assert!(
        err.contains("is a symlink (symlinks are not followed)"),
        "{err}"
    );
    let (ok, _, err) = run_cli(&["getfattr", img, "/xattrs/shortform", "user.nope"]);
    assert!(!ok);
    assert!(err.contains("user.nope: no such attribute"), "{err}");
}

#[test]
fn getfattr_and_cat_by_path_equal_the_kernel_listing() {
    let name = "v5-formats";
    let img = image(name);
    let img = img.to_str().unwrap();
    let (kernel, _) = by_path(&parse_lines(&oracle(name, "ls.jsonl")));
    let mut values = 0;
    for (p, v) in &kernel {
        let x = v["xattrs_sha256"].as_object().unwrap();
        if x.is_empty() {
            continue;
        }
        // getfattr -d lists every name, in order.
        let (ok, out, err) = run_cli(&["getfattr", img, p]);
        assert!(ok, "{p}: {err}");
        let names: Vec<&str> = out
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| l.split('=').next().unwrap())
            .collect();
        let want: Vec<&str> = x.keys().map(String::as_str).collect();
        assert_eq!(names, want, "{p}");
        // Each value raw, remote ones included.
        for (xname, sha) in x {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_xfs-explorer"))
                .args(["getfattr", img, p, xname])
                .output()
                .unwrap();
            assert!(out.status.success(), "{p} {xname}");
            let got: String = Sha256::digest(&out.stdout)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(got, sha.as_str().unwrap(), "{p} {xname}");
            values += 1;
        }
    }
    assert!(values > 500, "{values}");
    for (p, v) in kernel.iter().filter(|(_, v)| v["type"] == "file").take(40) {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_xfs-explorer"))
            .args(["cat", img, p])
            .output()
            .unwrap();
        assert!(out.status.success(), "{p}");
        let got: String = Sha256::digest(&out.stdout)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, v["sha256"].as_str().unwrap(), "{p}");
    }
}

/// Geometry from `xfs_db ... sb 0 print` and the byte offset of a packed
/// block number.
fn fsb_offset(name: &str, fsb: u64) -> u64 {
    let sb = parse_xfs_db_print(&oracle(name, "sb.txt"));
    let get = |k: &str| xfs_db_number(&sb.iter().find(|(key, _)| key == k).unwrap().1).unwrap();
    let (agblocks, agblklog, blocksize) = (get("agblocks"), get("agblklog"), get("blocksize"));
    let agno = fsb >> agblklog;
    let agbno = fsb & ((1 << agblklog) - 1);
    (agno * agblocks + agbno) * blocksize
}

/// Byte offset of an inode, from the geometry in `NAME.sb.txt`.
fn inode_offset(name: &str, ino: u64) -> u64 {
    let sb = parse_xfs_db_print(&oracle(name, "sb.txt"));
    let get = |k: &str| xfs_db_number(&sb.iter().find(|(key, _)| key == k).unwrap().1).unwrap();
    let (agblklog, inopblog, agblocks, bs, isz) = (
        get("agblklog"),
        get("inopblog"),
        get("agblocks"),
        get("blocksize"),
        get("inodesize"),
    );
    let agno = ino >> (agblklog + inopblog);
    let agino = ino & ((1 << (agblklog + inopblog)) - 1);
    (agno * agblocks + (agino >> inopblog)) * bs + (agino & ((1 << inopblog) - 1)) * isz
}

/// The extents `xfs_db bmap` recorded for `path` in the dirattr oracle.
fn oracle_extents(name: &str, kind: &str, path: &str) -> Vec<(u64, u64, u64)> {
    let text = oracle(name, "xfsdb-dirattr.txt");
    let mut out = Vec::new();
    let mut inside = false;
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("### ") {
            inside = rest == format!("{kind} {path}");
            continue;
        }
        let w: Vec<&str> = l.split_whitespace().collect();
        if inside && w.len() >= 8 && w[1] == "offset" && w[3] == "startblock" {
            out.push((
                w[2].parse().unwrap(),
                w[4].parse().unwrap(),
                w[7].parse().unwrap(),
            ));
        }
    }
    assert!(!out.is_empty(), "{name} {path}");
    out
}

fn damaged_copy(name: &str, tag: &str, edit: impl FnOnce(&mut Vec<u8>)) -> std::path::PathBuf {
    let mut bytes = std::fs::read(image(name)).unwrap();
    edit(&mut bytes);
    let p = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{tag}.img"));
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn a_damaged_directory_block_is_an_error_line_and_the_rest_is_listed() {
    let name = "v5-formats";
    // The second data block of the leaf-form directory: scribble on an
    // entry name (the CRC no longer matches).
    let ext = oracle_extents(name, "dir", "/dirs/leaf400");
    let (_, fsb, _) = *ext.iter().find(|e| e.0 == 1).unwrap();
    let off = fsb_offset(name, fsb);
    let p = damaged_copy(name, "leaf400", |b| {
        let o = usize::try_from(off).unwrap() + 200;
        b[o] ^= 0x55;
    });
    let (ok, out, err) = run_cli(&["ls", "-R", "--json", p.to_str().unwrap()]);
    assert!(!ok, "damage must fail the command");
    assert!(err.contains("error"), "{err}");
    let (ours, errors) = by_path(&parse_lines(&out));
    assert!(
        errors
            .iter()
            .any(|e| e["path"] == "/dirs/leaf400" && e["error"].as_str().unwrap().contains("CRC")),
        "{errors:?}"
    );
    let (kernel, _) = by_path(&parse_lines(&oracle(name, "ls.jsonl")));
    // Everything listed is as the kernel has it; what is missing is only
    // in that directory (the damaged block's entries).
    let mut missing = 0;
    for (path, v) in &kernel {
        match ours.get(path) {
            Some(o) if path == "/dirs/leaf400" => assert_eq!(o["ino"], v["ino"]),
            Some(o) => assert_eq!(o, v, "{path}"),
            None => {
                assert!(path.starts_with("/dirs/leaf400/"), "{path} missing");
                missing += 1;
            }
        }
    }
    assert!(missing > 10 && missing < 400, "{missing}");
    std::fs::remove_file(p).ok();
}

#[test]
fn a_damaged_inode_and_a_damaged_attr_block_are_error_lines() {
    let name = "v5-formats";
    let (kernel, _) = by_path(&parse_lines(&oracle(name, "ls.jsonl")));
    // The remote value of /xattrs/remote: its first value block.
    let ext = oracle_extents(name, "attr", "/xattrs/remote");
    let (_, fsb, _) = *ext.iter().find(|e| e.0 == 0).unwrap();
    let leaf = fsb_offset(name, fsb);
    let small_ino = kernel["/files/small"]["ino"].as_u64().unwrap();
    let p = damaged_copy(name, "attr-inode", |b| {
        // attr blocks 1.. follow block 0 in this one extent
        let o = usize::try_from(leaf).unwrap() + 4096 + 100;
        b[o] ^= 0xff;
        // An inode: overwrite its magic.
        let off = inode_offset(name, small_ino);
        b[usize::try_from(off).unwrap()] = b'X';
    });
    let (ok, out, _) = run_cli(&["ls", "-R", "--json", p.to_str().unwrap()]);
    assert!(!ok);
    let (ours, errors) = by_path(&parse_lines(&out));
    let err_at = |path: &str| {
        errors
            .iter()
            .filter(|e| e["path"] == path)
            .map(|e| e["error"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let e = err_at("/xattrs/remote");
    assert!(
        e.iter()
            .any(|e| e.contains("remote attr value block") && e.contains("CRC")),
        "{e:?}"
    );
    let e = err_at("/files/small");
    assert!(e.iter().any(|e| e.contains("inode")), "{e:?}");
    assert!(!ours.contains_key("/xattrs/remote") && !ours.contains_key("/files/small"));
    assert_eq!(ours.len(), kernel.len() - 2);
    // getfattr still lists names; the damaged value alone fails.
    let (ok, out, err) = run_cli(&["getfattr", p.to_str().unwrap(), "/xattrs/remote"]);
    assert!(!ok);
    assert!(out.lines().any(|l| l == "security.small=0x73"));
    assert!(out.lines().any(|l| l.starts_with("user.local3000=0x4c33")));
    assert!(!out.contains("user.remote5000"));
    assert!(
        err.contains("user.remote5000") && err.contains("CRC"),
        "{err}"
    );
    std::fs::remove_file(p).ok();
}

/// v4 (no FTYPE, no CRCs; populated by mkfs.xfs -p and xfs_db attr_set, as
/// this kernel does not mount v4): every path and inode number equals
/// `xfs_db ncheck`, and nothing is reported wrong.
#[test]
fn v4_listing_equals_xfs_db_ncheck() {
    let name = "v4-dirs";
    let img = image(name);
    let (ok, out, err) = run_cli(&["ls", "-R", "--json", img.to_str().unwrap()]);
    assert!(ok, "{err}");
    let (ours, errors) = by_path(&parse_lines(&out));
    assert!(errors.is_empty(), "{errors:?}");
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for l in oracle(name, "ncheck.txt").lines() {
        let (ino, path) = l.trim().split_once(char::is_whitespace).unwrap();
        // ncheck names a directory "dir/."
        let path = path.trim();
        let path = path.strip_suffix("/.").unwrap_or(path);
        want.insert(format!("/{path}"), ino.parse().unwrap());
    }
    assert!(want.len() > 2000);
    let got: BTreeMap<String, u64> = ours
        .iter()
        .filter(|(p, _)| *p != "/")
        .map(|(p, v)| (p.clone(), v["ino"].as_u64().unwrap()))
        .collect();
    assert_eq!(got, want);
}

/// The bytes of `xfs_db ... type data ... print` lines (`000: 76767676 ...`).
fn xfs_db_data(lines: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        let Some((_, hex)) = l.split_once(": ") else {
            continue;
        };
        for word in hex.split_whitespace() {
            for i in (0..word.len()).step_by(2) {
                out.push(u8::from_str_radix(&word[i..i + 2], 16).unwrap());
            }
        }
    }
    out
}

/// v4 attribute values: local ones as `xfs_db print` shows them, remote
/// ones (no block headers on v4) as the raw blocks `xfs_db` dumps.
#[test]
fn v4_attr_values_equal_xfs_db() {
    let name = "v4-dirs";
    let img = image(name);
    let img = img.to_str().unwrap();
    let text = oracle(name, "xfsdb-dirattr.txt");
    let section: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "### attr /attrs/remote")
        .skip(1)
        .take_while(|l| !l.starts_with("### "))
        .collect();
    // Remote blocks, in order, per value.
    let mut remote: BTreeMap<(u64, u64), Vec<u8>> = BTreeMap::new();
    let mut cur: Option<(u64, u64)> = None;
    let mut lines = Vec::new();
    for l in section.iter().chain(std::iter::once(&"--- end")) {
        if let Some(rest) = l.strip_prefix("--- ") {
            if let Some(k) = cur.take() {
                remote.entry(k).or_default().extend(xfs_db_data(&lines));
            }
            lines.clear();
            let w: Vec<&str> = rest.split_whitespace().collect();
            if w.first() == Some(&"remote") {
                cur = Some((xfs_db_number(w[1]).unwrap(), w[2].parse().unwrap()));
            }
        } else if cur.is_some() {
            lines.push(*l);
        }
    }
    // Names and value lengths from the leaf print.
    let names: Vec<String> = section
        .iter()
        .filter_map(|l| {
            l.strip_prefix("nvlist[")
                .and_then(|r| r.split_once("].name = "))
        })
        .map(|(_, n)| xfs_db_string(n))
        .collect();
    let lens: Vec<u64> = section
        .iter()
        .filter_map(|l| {
            l.split_once("].valuelen = ")
                .map(|(_, v)| v.parse().unwrap())
        })
        .collect();
    let blks: BTreeMap<usize, u64> = section
        .iter()
        .filter_map(|l| {
            let (i, v) = l.strip_prefix("nvlist[")?.split_once("].valueblk = ")?;
            Some((i.parse().unwrap(), xfs_db_number(v).unwrap()))
        })
        .collect();
    assert_eq!(names.len(), 3);
    let mut remote_seen = 0;
    for (i, n) in names.iter().enumerate() {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_xfs-explorer"))
            .args(["getfattr", img, "/attrs/remote", &format!("user.{n}")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{n}");
        assert_eq!(out.stdout.len() as u64, lens[i], "{n}");
        if let Some(b) = blks.get(&i) {
            let raw = &remote[&(*b, lens[i])];
            assert_eq!(out.stdout, raw[..out.stdout.len()], "{n}");
            remote_seen += 1;
        } else {
            let v = section
                .iter()
                .find_map(|l| l.strip_prefix(&format!("nvlist[{i}].value = ")))
                .unwrap();
            assert_eq!(out.stdout, xfs_db_string(v).as_bytes(), "{n}");
        }
    }
    assert_eq!(remote_seen, 2);
}

/// ASCII-CI names resolve case-insensitively, as xfs_db's lookup does
/// (`v5-ci.lookups.txt`); this kernel does not mount ASCII-CI.
#[test]
fn ascii_ci_lookups_equal_xfs_db() {
    let name = "v5-ci";
    let img = image(name);
    let mut n = 0;
    for l in oracle(name, "lookups.txt").lines() {
        let (path, want) = l.split_once('\t').unwrap();
        let (ok, out, err) = run_cli(&["ls", "--json", img.to_str().unwrap(), path]);
        if want == "ENOENT" {
            assert!(
                !ok && err.contains("no such file or directory"),
                "{path}: {err}"
            );
            continue;
        }
        assert!(ok, "{path}: {err}");
        let lines = parse_lines(&out);
        // A directory lists its entries; ask for the inode of the path itself.
        let ino = if lines.len() == 1 && lines[0]["path"] == path {
            lines[0]["ino"].as_u64().unwrap()
        } else {
            let (ok, out, _) = run_cli(&["ls", "-R", "--json", img.to_str().unwrap(), path]);
            assert!(ok);
            parse_lines(&out)[0]["ino"].as_u64().unwrap()
        };
        assert_eq!(ino.to_string(), want, "{path}");
        n += 1;
    }
    assert!(n >= 8);
    // And the whole tree reads without a problem.
    let (ok, out, err) = run_cli(&["ls", "-R", "--json", img.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.lines().count() > 3400);
}

/// A directory entry pointing back at an ancestor (a cycle) is reported
/// where it is found and not followed; everything else is listed.
#[test]
fn a_directory_cycle_is_reported_not_followed() {
    let name = "v5-formats";
    let (kernel, _) = by_path(&parse_lines(&oracle(name, "ls.jsonl")));
    let sf = kernel["/dirs/sf"]["ino"].as_u64().unwrap();
    let up = kernel["/dirs"]["ino"].as_u64().unwrap();
    let p = damaged_copy(name, "cycle", |b| {
        // In the shortform /dirs/sf, "subdir" now names /dirs; the inode
        // CRC is made right again so only the cycle is wrong.
        let off = usize::try_from(inode_offset(name, sf)).unwrap();
        let inode = &mut b[off..off + 512];
        let at = inode.windows(6).position(|w| w == b"subdir").unwrap();
        // name, then the file type byte, then a 4-byte inode number
        inode[at + 7..at + 11].copy_from_slice(&u32::try_from(up).unwrap().to_be_bytes());
        let crc = xfs_explorer::xfs::sb::crc_with_hole(inode, 100);
        inode[100..104].copy_from_slice(&crc.to_le_bytes());
    });
    let (ok, out, _) = run_cli(&["ls", "-R", "--json", p.to_str().unwrap()]);
    assert!(!ok);
    let (ours, errors) = by_path(&parse_lines(&out));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["path"], "/dirs/sf/subdir");
    let e = errors[0]["error"].as_str().unwrap();
    assert!(
        e.contains(&format!("directory inode {up} was already reached")),
        "{e}"
    );
    // /dirs/sf/subdir is listed as what it now names; nothing below it.
    assert_eq!(ours["/dirs/sf/subdir"]["ino"], up);
    assert!(!ours.keys().any(|k| k.starts_with("/dirs/sf/subdir/")));
    assert_eq!(ours.len(), kernel.len());
    std::fs::remove_file(p).ok();
}
