//! Metadumps read in place (`make/containers.sh metadump`): version 1 made by
//! xfs_metadump 6.1, version 2 by xfs_metadump 6.13, of a kernel-made
//! filesystem with a dirty log and of a clean one dumped with obfuscated
//! names. The oracles are xfs_mdrestore of the same dumps (byte for byte)
//! and the kernel's listings of the restored images, before and after its
//! log recovery.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::*;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::Read;
use xfs_explorer::xfs::container;
use xfs_explorer::xfs::read::{FileReader, ReadAt};

const DUMPS: [&str; 5] = [
    "md-dirty-v1",
    "md-dirty-v2",
    "md-obf-v1",
    "md-obf-v2",
    "md-extlog-v2",
];

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn cli_lines(args: &[&str]) -> Vec<Value> {
    let (ok, out, err) = run_cli(args);
    assert!(ok, "{args:?}: {err}");
    lines(&out)
}

#[test]
fn every_byte_equals_xfs_mdrestore_of_the_same_dump() {
    for name in DUMPS {
        let (volume, layout) =
            container::open(FileReader::open(&image(name)).unwrap(), None).unwrap();
        let restored = image(&format!("{name}.mdrestore"));
        let mut want = Vec::new();
        std::fs::File::open(&restored)
            .unwrap()
            .read_to_end(&mut want)
            .unwrap();
        assert_eq!(volume.len(), want.len() as u64, "{name}: size");
        let md = layout.metadump.as_ref().unwrap();
        assert_eq!(md.fs_size, want.len() as u64);
        let mut got = vec![0u8; 1 << 20];
        let mut differ = Vec::new();
        for (i, chunk) in want.chunks(1 << 20).enumerate() {
            let got = &mut got[..chunk.len()];
            volume.read_exact_at((i << 20) as u64, got).unwrap();
            if got != chunk {
                let at = got.iter().zip(chunk).position(|(a, b)| a != b).unwrap();
                differ.push((i << 20) + at);
            }
        }
        // xfs_mdrestore writes the primary superblock sector again from
        // its decoded fields (fixup_superblock): the quota inode numbers
        // that are 0 on disk come out as NULLFSINO, and the CRC changes
        // with them. Everything else is the dump's bytes, or zeros.
        assert!(
            differ.iter().all(|d| *d < 512),
            "{name}: first differences at {differ:?}"
        );
        let ours = info(image(name).to_str().unwrap());
        let theirs = info(restored.to_str().unwrap());
        let changed: Vec<&String> = theirs
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, v)| ours[k.as_str()] != **v)
            .map(|(k, _)| k)
            .collect();
        // The external log device is in the dump, not beside the restored
        // data device.
        if name == "md-extlog-v2" {
            assert_eq!(ours["external_log"]["device"], "held in the metadump");
            assert_eq!(theirs["external_log"]["device"], Value::Null);
        }
        for k in changed.iter().filter(|k| k.as_str() != "external_log") {
            assert!(
                ["uquotino", "gquotino", "pquotino", "crc"].contains(&k.as_str()),
                "{name}: sb_{k} is {} in the dump, {} restored",
                ours[k.as_str()],
                theirs[k.as_str()]
            );
        }
        for k in ["uquotino", "gquotino", "pquotino"] {
            // 0 on a filesystem never mounted since mkfs, NULLFSINO after.
            assert!(ours[k] == 0 || ours[k] == u64::MAX, "{name}");
            assert_eq!(theirs[k], u64::MAX, "{name}");
        }
        assert_eq!(ours["crc_ok"], true);
    }
}

fn info(path: &str) -> Value {
    let (ok, out, err) = run_cli(&["info", "--json", path]);
    assert!(ok, "{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn headers_say_what_xfs_mdrestore_i_says() {
    for name in DUMPS {
        let (ok, out, err) = run_cli(&["partitions", "--json", image(name).to_str().unwrap()]);
        assert!(ok, "{err}");
        let p: Value = serde_json::from_str(&out).unwrap();
        let info = oracle(name, "mdrestore-info.txt");
        let m = &p["metadump"];
        let version = if name.ends_with("v1") { 1 } else { 2 };
        assert_eq!(p["chain"], format!("metadump v{version}"));
        assert_eq!(m["version"], version);
        assert_eq!(
            m["obfuscated"],
            !info.contains("not obfuscated"),
            "{name}: {info}"
        );
        assert_eq!(m["dirty_log"], info.contains("dirty log"), "{name}: {info}");
        assert_eq!(
            m["full_blocks"],
            info.contains("full metadata blocks"),
            "{name}: {info}"
        );
        assert!(p["table"].is_null());
    }
}

/// Our listing line `o` equals the kernel's `k` of the restored image,
/// except that a file whose data the dump does not hold says its content is
/// absent where the kernel hashed the zeros xfs_mdrestore left.
fn same_but_absent_contents(name: &str, o: &Value, k: &Value) -> usize {
    if o.get("content").is_none() {
        assert_eq!(o, k, "{name}");
        return 0;
    }
    assert_eq!(o["content"], "absent", "{name}: {}", o["path"]);
    assert_eq!(k["type"], "file", "{name}: {}", o["path"]);
    let size = k["size"].as_u64().unwrap();
    assert!(size > 0, "{name}: {}", o["path"]);
    let zeros = format!(
        "{:x}",
        Sha256::digest(vec![0u8; usize::try_from(size).unwrap()])
    );
    assert_eq!(
        k["sha256"],
        zeros.as_str(),
        "{name}: {}: mdrestore left zeros",
        o["path"]
    );
    let (mut o, mut k) = (o.clone(), k.clone());
    o.as_object_mut().unwrap().remove("content");
    k.as_object_mut().unwrap().remove("sha256");
    assert_eq!(o, k, "{name}");
    1
}

#[test]
fn listings_equal_the_kernels_of_the_restored_image_before_and_after_recovery() {
    let (mut objects, mut absent) = (0, 0);
    for name in ["md-dirty-v1", "md-dirty-v2"] {
        let img = image(name);
        let img = img.to_str().unwrap();
        let disk = cli_lines(&["ls", "-R", "--json", img]);
        let kernel = lines(&oracle(name, "mdrestore-ls.jsonl"));
        assert_eq!(disk.len(), kernel.len(), "{name}");
        for (o, k) in disk.iter().zip(&kernel) {
            absent += same_but_absent_contents(name, o, k);
        }
        let replayed = cli_lines(&["--replay", "ls", "-R", "--json", img]);
        let kernel = lines(&oracle(name, "mdrestore-recovered-ls.jsonl"));
        assert_eq!(replayed.len(), kernel.len(), "{name}");
        for (o, k) in replayed.iter().zip(&kernel) {
            absent += same_but_absent_contents(name, o, k);
        }
        objects += replayed.len();
    }
    assert_eq!(objects, 2 * 335);
    eprintln!("{absent} files said to have absent contents");
    assert!(absent > 0);
}

#[test]
fn obfuscated_names_are_listed_as_they_are() {
    for name in ["md-obf-v1", "md-obf-v2"] {
        let img = image(name);
        let ours = cli_lines(&["ls", "-R", "--json", img.to_str().unwrap()]);
        let kernel = lines(&oracle(name, "mdrestore-inodes.jsonl"));
        // By inode: every object the kernel finds, with its type, mode,
        // link count and size (hard links appear once per name in ours).
        let mut by_ino = std::collections::BTreeMap::new();
        for o in &ours {
            by_ino.insert(o["ino"].as_u64().unwrap(), o.clone());
        }
        let kernel_inos: std::collections::BTreeSet<u64> =
            kernel.iter().map(|k| k["ino"].as_u64().unwrap()).collect();
        assert_eq!(
            by_ino
                .keys()
                .copied()
                .collect::<std::collections::BTreeSet<_>>(),
            kernel_inos,
            "{name}"
        );
        for k in &kernel {
            let o = &by_ino[&k["ino"].as_u64().unwrap()];
            for key in ["type", "mode", "nlink", "size"] {
                assert_eq!(o[key], k[key], "{name}: inode {} {key}", k["ino"]);
            }
        }
        assert!(kernel.len() > 300, "{name}: {}", kernel.len());
        // The obfuscated names are not the ones made (big-dir held
        // file-with-a-long-name-NNNN).
        assert!(!ours.iter().any(|o| o["path"]
            .as_str()
            .is_some_and(|p| p.contains("file-with-a-long-name"))));
    }
}

#[test]
fn file_contents_are_said_to_be_absent() {
    let name = "md-dirty-v1";
    let img = image(name);
    let img = img.to_str().unwrap();
    let kernel = lines(&oracle(name, "mdrestore-recovered-ls.jsonl"));
    let file = kernel
        .iter()
        .find(|k| k["path"] == "/home/user/docs/random.bin")
        .unwrap();
    let (ok, _, err) = run_cli(&["--replay", "cat", img, "/home/user/docs/random.bin"]);
    assert!(!ok);
    assert!(
        err.contains(&format!(
            "its {} bytes of content are not in the metadump",
            file["size"]
        )),
        "{err}"
    );
    // A symlink's target is metadata: it is there.
    let link = kernel.iter().find(|k| k["path"] == "/home/link").unwrap();
    let (ok, out, err) = run_cli(&["--replay", "cat", img, "/home/link"]);
    assert!(ok, "{err}");
    assert_eq!(out, link["target"].as_str().unwrap());
}

/// `key: value` of a `log_facts.py` oracle.
fn fact(facts: &str, key: &str) -> String {
    facts
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .unwrap_or_else(|| panic!("no {key} in the facts"))
        .to_string()
}

/// A version 2 dump of a filesystem with an external log device, made with
/// `-l`: the log device's extents are read as the log (no --logdev), byte
/// for byte what `xfs_mdrestore -l` restores; its log decodes as
/// `xfs_logprint -l` decodes the restored pair, and the listings before
/// and after replay are the kernel's of the restored pair.
#[test]
fn an_external_log_held_in_the_dump_is_read_decoded_and_replayed() {
    let name = "md-extlog-v2";
    let (volume, layout) = container::open(FileReader::open(&image(name)).unwrap(), None).unwrap();
    let log = volume
        .metadump_log()
        .expect("the dump holds the log device");
    let mut want = Vec::new();
    std::fs::File::open(decompressed(&format!("{name}.mdrestore.log")))
        .unwrap()
        .read_to_end(&mut want)
        .unwrap();
    assert_eq!(log.len(), want.len() as u64);
    let mut got = vec![0u8; want.len()];
    log.read_exact_at(0, &mut got).unwrap();
    assert!(
        got == want,
        "the log device differs from xfs_mdrestore -l's"
    );
    let md = layout.metadump.as_ref().unwrap();
    assert!(md.log_bytes_held > 0 && md.log_bytes_held <= want.len() as u64);
    assert!(
        !md.notes.iter().any(|n| n.contains("log")),
        "{:?}",
        md.notes
    );
    // The data device has no log (sb_logstart 0): nothing else is read as it.
    assert!(
        container::open(FileReader::open(&image("md-dirty-v2")).unwrap(), None)
            .unwrap()
            .0
            .metadump_log()
            .is_none()
    );

    let img = image(name);
    let img = img.to_str().unwrap();
    let (ok, out, err) = run_cli(&["log", "--json", img]);
    assert!(ok, "{err}");
    let d: Value = serde_json::from_str(&out).unwrap();
    let facts = oracle(name, "mdrestore-logfacts.txt");
    assert_eq!(fact(&facts, "state"), "DIRTY");
    assert_eq!(d["clean"], false);
    assert_eq!(d["log"]["external"], true);
    assert_eq!(d["head"]["block"].to_string(), fact(&facts, "head_block"));
    assert_eq!(d["tail"]["block"].to_string(), fact(&facts, "tail_block"));
    assert_eq!(d["records"].to_string(), fact(&facts, "records"));
    let ts = d["transactions"].as_array().unwrap();
    assert_eq!(ts.len().to_string(), fact(&facts, "transactions"));
    let items: usize = ts
        .iter()
        .map(|t| t["items"].as_array().unwrap().len())
        .sum();
    let want_items: usize = fact(&facts, "items")
        .split_whitespace()
        .map(|kv| kv.split_once('=').unwrap().1.parse::<usize>().unwrap())
        .sum();
    assert_eq!(items, want_items);

    let (ok, out, err) = run_cli(&["info", img]);
    assert!(ok, "{err}");
    assert!(out.contains("held in the metadump"), "{out}");

    let before = cli_lines(&["ls", "-R", "--json", img]);
    let kernel = lines(&oracle(name, "mdrestore-ls.jsonl"));
    assert_eq!(before, kernel);
    let replayed = cli_lines(&["--replay", "ls", "-R", "--json", img]);
    let kernel = lines(&oracle(name, "mdrestore-recovered-ls.jsonl"));
    assert_eq!(replayed.len(), kernel.len());
    assert!(kernel.len() > 40, "{}", kernel.len());
    let mut absent = 0;
    for (o, k) in replayed.iter().zip(&kernel) {
        absent += same_but_absent_contents(name, o, k);
    }
    assert!(absent > 0);
}
