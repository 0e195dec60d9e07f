//! Filesystems inside containers: partitioned disks (GPT, MBR with a
//! logical partition, GPT on 4096-byte sectors) and qcow2 images (v2 and
//! v3) made by sgdisk, sfdisk and qemu-img over kernel-made XFS
//! (`make/containers.sh disks`). The listings are compared with the
//! kernel's listing of the mounted partition (`NAME.container-ls.jsonl`),
//! the partition tables with `sfdisk --json` and `blkid`, the qcow2 headers
//! with `qemu-img info`.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::*;
use serde_json::Value;
use std::cell::Cell;
use std::rc::Rc;
use xfs_explorer::xfs::container;
use xfs_explorer::xfs::fs::Fs;
use xfs_explorer::xfs::image::Image;
use xfs_explorer::xfs::read::{FileReader, ReadAt, ReadError};

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// `ls -R --json` of a fixture (with global options before it).
fn listing(name: &str, opts: &[&str]) -> Vec<Value> {
    let img = image(name);
    let mut args: Vec<&str> = opts.to_vec();
    args.extend(["ls", "-R", "--json", img.to_str().unwrap()]);
    let (ok, out, err) = run_cli(&args);
    assert!(ok, "{name} {opts:?}: {err}");
    lines(&out)
}

fn assert_same_listing(name: &str, ours: &[Value], kernel: &[Value]) {
    assert_eq!(ours.len(), kernel.len(), "{name}: entries");
    for (o, k) in ours.iter().zip(kernel) {
        assert_eq!(o, k, "{name}: {}", k["path"]);
    }
}

#[test]
fn every_container_fixture_lists_as_the_kernel_lists_its_partition() {
    let names = fixtures_with("container-ls.jsonl");
    let expected = [
        "disk-gpt",
        "disk-gpt2xfs",
        "disk-gpt4k",
        "disk-mbr",
        "disk-mbr4k",
        "qcow2-big",
        "qcow2-compressed",
        "qcow2-extl2-gpt",
        "qcow2-v2-gpt",
        "qcow2-v3-gpt",
        "qcow2-zero-gpt",
    ];
    assert_eq!(names, expected);
    let mut checked = 0;
    for name in &names {
        if name == "qcow2-compressed" {
            continue; // refused: see below
        }
        let kernel = lines(&oracle(name, "container-ls.jsonl"));
        // Two XFS partitions: the first by number.
        let opts: &[&str] = if name == "disk-gpt2xfs" {
            &["--partition", "1"]
        } else {
            &[]
        };
        let ours = listing(name, opts);
        assert_same_listing(name, &ours, &kernel);
        checked += ours.len();
    }
    // 10 images of 53 objects each.
    assert_eq!(checked, 10 * 53);
}

/// `partitions --json` of a fixture.
fn partitions(name: &str, opts: &[&str]) -> Value {
    let img = image(name);
    let mut args: Vec<&str> = opts.to_vec();
    args.extend(["partitions", "--json", img.to_str().unwrap()]);
    let (ok, out, err) = run_cli(&args);
    assert!(ok, "{name}: {err}");
    json(&out)
}

/// blkid's TYPE of each partition, by number.
fn blkid(name: &str) -> Vec<(u64, String)> {
    oracle(name, "blkid.txt")
        .lines()
        .map(|l| {
            let (n, t) = l.split_once('\t').unwrap();
            (n.parse().unwrap(), t.to_string())
        })
        .collect()
}

#[test]
fn partition_tables_equal_sfdisk_and_blkid() {
    let mut rows = 0;
    for name in [
        "disk-gpt",
        "disk-gpt2xfs",
        "disk-gpt4k",
        "disk-mbr",
        "disk-mbr4k",
        "qcow2-v3-gpt",
        "qcow2-v2-gpt",
        "qcow2-extl2-gpt",
        "qcow2-zero-gpt",
        "qcow2-big",
    ] {
        let ours = partitions(name, &[]);
        let sf = json(&oracle(name, "sfdisk.json"));
        let sf = &sf["partitiontable"];
        let t = &ours["table"];
        let scheme = match sf["label"].as_str().unwrap() {
            "dos" => "mbr",
            "gpt" => "gpt",
            other => panic!("{other}"),
        };
        assert_eq!(t["scheme"], scheme, "{name}");
        assert_eq!(t["sector_size"], sf["sectorsize"], "{name}");
        if scheme == "gpt" {
            assert_eq!(t["id"], sf["id"], "{name}");
            assert_eq!(t["first_usable_lba"], sf["firstlba"], "{name}");
            assert_eq!(t["last_usable_lba"], sf["lastlba"], "{name}");
        } else {
            assert_eq!(t["id"], sf["id"], "{name}");
        }
        let kernel_parts = sf["partitions"].as_array().unwrap();
        let our_parts = t["partitions"].as_array().unwrap();
        assert_eq!(our_parts.len(), kernel_parts.len(), "{name}");
        let types = blkid(name);
        for (o, k) in our_parts.iter().zip(kernel_parts) {
            let number: u64 = k["node"]
                .as_str()
                .unwrap()
                .trim_start_matches("IMAGE")
                .parse()
                .unwrap();
            assert_eq!(o["number"], number, "{name}");
            assert_eq!(o["start_lba"], k["start"], "{name} {number}");
            assert_eq!(o["sectors"], k["size"], "{name} {number}");
            let ss = sf["sectorsize"].as_u64().unwrap();
            assert_eq!(
                o["start"].as_u64().unwrap(),
                k["start"].as_u64().unwrap() * ss
            );
            assert_eq!(
                o["size"].as_u64().unwrap(),
                k["size"].as_u64().unwrap() * ss
            );
            let kt = k["type"].as_str().unwrap();
            if scheme == "gpt" {
                assert_eq!(o["type_id"], kt, "{name} {number}");
                assert_eq!(o["guid"], k["uuid"], "{name} {number}");
            } else {
                let byte = u8::from_str_radix(kt, 16).unwrap();
                assert_eq!(o["type_id"], format!("{byte:#04x}"), "{name} {number}");
                assert_eq!(o["extended"], byte == 5, "{name} {number}");
                assert_eq!(o["logical"], number >= 5, "{name} {number}");
            }
            let kernel_type = types.iter().find(|(n, _)| *n == number).unwrap();
            assert_eq!(
                o["xfs"],
                kernel_type.1 == "xfs",
                "{name} {number}: blkid says {:?}",
                kernel_type.1
            );
            assert!(o["problems"].as_array().unwrap().is_empty(), "{o}");
            rows += 1;
        }
        let xfs: Vec<u64> = types
            .iter()
            .filter(|(_, t)| t == "xfs")
            .map(|(n, _)| *n)
            .collect();
        if xfs.len() == 1 {
            assert_eq!(ours["partition"], xfs[0], "{name}");
            assert!(ours["choose"].is_null());
        } else {
            assert!(ours["partition"].is_null(), "{name}");
            assert!(ours["choose"].as_str().unwrap().contains("choose one"));
        }
    }
    assert_eq!(rows, 2 + 2 + 2 + 4 + 2 + 2 + 2 + 2 + 2 + 1);
}

#[test]
fn qcow2_headers_equal_qemu_img_info() {
    for (name, chain) in [
        ("qcow2-v3-gpt", "qcow2 v3 > GPT > partition 1"),
        ("qcow2-v2-gpt", "qcow2 v2 > GPT > partition 1"),
        ("qcow2-extl2-gpt", "qcow2 v3 > GPT > partition 1"),
        ("qcow2-zero-gpt", "qcow2 v3 > GPT > partition 1"),
        ("qcow2-big", "qcow2 v3 > GPT > partition 1"),
    ] {
        let ours = partitions(name, &[]);
        let q = json(&oracle(name, "qemu-img-info.json"));
        assert_eq!(ours["chain"], chain);
        let layer = &ours["qcow2"][0];
        assert_eq!(layer["virtual_size"], q["virtual-size"], "{name}");
        assert_eq!(layer["cluster_size"], q["cluster-size"], "{name}");
        let version = match q["format-specific"]["data"]["compat"].as_str().unwrap() {
            "0.10" => 2,
            "1.1" => 3,
            c => panic!("{c}"),
        };
        assert_eq!(layer["version"], version, "{name}");
        assert_eq!(
            layer["extended_l2"],
            q["format-specific"]["data"]["extended-l2"]
                .as_bool()
                .unwrap_or(false)
        );
        assert_eq!(
            layer["compression"],
            q["format-specific"]["data"]["compression-type"]
        );
        assert_eq!(ours["table"]["disk_size"], q["virtual-size"], "{name}");
    }
    let plain = image("v5-sect4k");
    let (ok, out, _) = run_cli(&["partitions", "--json", plain.to_str().unwrap()]);
    assert!(ok);
    let p = json(&out);
    assert_eq!(p["chain"], "plain");
    assert!(p["table"].is_null());
}

#[test]
fn partition_option_picks_and_refuses() {
    // Two XFS partitions: each by number; none without a choice.
    let second = lines(&oracle("disk-gpt2xfs", "container-ls-2.jsonl"));
    assert_same_listing(
        "disk-gpt2xfs 2",
        &listing("disk-gpt2xfs", &["--partition", "2"]),
        &second,
    );
    let two = image("disk-gpt2xfs");
    let two = two.to_str().unwrap();
    let (ok, _, err) = run_cli(&["ls", two]);
    assert!(!ok);
    assert!(
        err.contains("the GPT has 2 partitions that hold an XFS filesystem (1, 2): choose one")
            && err.contains("--partition N"),
        "{err}"
    );
    // The same listing with the option after the command.
    let (ok, out, err) = run_cli(&["ls", "-R", "--json", two, "--partition", "2"]);
    assert!(ok, "{err}");
    assert_same_listing("disk-gpt2xfs 2 after", &lines(&out), &second);
    let (_, p, _) = run_cli(&["partitions", two, "--partition", "2"]);
    assert!(p.contains("container: GPT > partition 2"), "{p}");
    let (ok, i, err) = run_cli(&["info", two, "--partition", "2"]);
    assert!(ok, "{err}");
    assert!(
        i.starts_with("container: GPT > partition 2\nsuperblock (version 5)"),
        "{i}"
    );

    let gpt = image("disk-gpt");
    let gpt = gpt.to_str().unwrap();
    let (ok, _, err) = run_cli(&["--partition", "7", "ls", gpt]);
    assert!(!ok);
    assert!(
        err.contains("the GPT has no partition 7; its partitions are 1, 2"),
        "{err}"
    );
    let (ok, _, err) = run_cli(&["--partition", "2", "ls", gpt]);
    assert!(!ok);
    assert!(
        err.contains("partition 2 (Linux swap \"swap\", bytes 34603008..50314752) does not hold an XFS filesystem"),
        "{err}"
    );
    let (ok, _, err) = run_cli(&["--partition", "0", "ls", gpt]);
    assert!(!ok && err.contains("--partition"), "{err}");
    let (ok, _, err) = run_cli(&["partitions", gpt, "--partition", "9"]);
    assert!(!ok && err.contains("no partition 9"), "{err}");

    let mbr = image("disk-mbr");
    let mbr = mbr.to_str().unwrap();
    let (ok, _, err) = run_cli(&["--partition", "3", "ls", mbr]);
    assert!(!ok);
    assert!(err.contains("is an extended partition"), "{err}");
    let (ok, _, err) = run_cli(&["--partition", "5", "ls", mbr]);
    assert!(!ok);
    assert!(
        err.contains("partition 5 (Linux swap / Solaris, bytes 39845888..44040192) does not hold an XFS filesystem"),
        "{err}"
    );
    let kernel = lines(&oracle("disk-mbr", "container-ls.jsonl"));
    assert_same_listing(
        "disk-mbr 2",
        &listing("disk-mbr", &["--partition", "2"]),
        &kernel,
    );

    let plain = image("v5-sect4k");
    let (ok, _, err) = run_cli(&["--partition", "1", "ls", plain.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("holds no partition table"), "{err}");
}

#[test]
fn qcow2_refusals_say_what_is_not_read() {
    let c = image("qcow2-compressed");
    let (ok, _, err) = run_cli(&["ls", c.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("compressed cluster (zlib)"), "{err}");
    let b = image("qcow2-backing");
    let q = json(&oracle("qcow2-backing", "qemu-img-info.json"));
    let backing = q["backing-filename"].as_str().unwrap();
    let (ok, _, err) = run_cli(&["ls", b.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains(&format!("has a backing file {backing:?}")),
        "{err}"
    );
}

/// A reader that counts what it reads.
struct Counting {
    inner: FileReader,
    bytes: Rc<Cell<u64>>,
    calls: Rc<Cell<u64>>,
}

impl ReadAt for Counting {
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        self.bytes.set(self.bytes.get() + buf.len() as u64);
        self.calls.set(self.calls.get() + 1);
        self.inner.read_exact_at(offset, buf)
    }
}

#[test]
fn a_100_gib_qcow2_opens_reading_little() {
    let path = image("qcow2-big");
    let bytes = Rc::new(Cell::new(0));
    let calls = Rc::new(Cell::new(0));
    let reader = Counting {
        inner: FileReader::open(&path).unwrap(),
        bytes: Rc::clone(&bytes),
        calls: Rc::clone(&calls),
    };
    let (volume, layout) = container::open(reader, None).unwrap();
    assert_eq!(volume.len(), 107_373_116_928);
    assert_eq!(layout.partition, Some(1));
    let fs = Fs::open(Image::new(volume)).unwrap();
    let root = fs.inode(fs.root_ino()).unwrap();
    let names: Vec<String> = fs
        .read_dir(&root)
        .unwrap()
        .entries
        .iter()
        .map(|e| String::from_utf8_lossy(&e.name).into_owned())
        .collect();
    let kernel = lines(&oracle("qcow2-big", "container-ls.jsonl"));
    let mut top: Vec<String> = kernel
        .iter()
        .filter_map(|v| {
            let p = v["path"].as_str().unwrap();
            let rest = p.strip_prefix('/')?;
            (!rest.is_empty() && !rest.contains('/')).then(|| rest.to_string())
        })
        .collect();
    let mut ours: Vec<String> = names
        .into_iter()
        .filter(|n| n != "." && n != "..")
        .collect();
    ours.sort();
    top.sort();
    assert_eq!(ours, top);
    // Header, L1, a few L2 tables, the GPT, and a few 64 KiB chunks of the
    // filesystem: well under 2 MiB of a 100 GiB disk.
    assert!(
        bytes.get() < 2 << 20,
        "{} bytes in {} reads",
        bytes.get(),
        calls.get()
    );
}

#[test]
fn qcow2_guest_disks_equal_the_raw_disk_byte_for_byte() {
    // qemu-img compare says each image holds the raw disk it was made of.
    let raw = std::fs::read(image("disk-gpt")).unwrap();
    for name in [
        "qcow2-v3-gpt",
        "qcow2-v2-gpt",
        "qcow2-extl2-gpt",
        "qcow2-zero-gpt",
    ] {
        assert_eq!(
            oracle(name, "qemu-img-compare.txt").trim(),
            "Images are identical.",
            "{name}"
        );
        let disk = container::detect(FileReader::open(&image(name)).unwrap()).unwrap();
        let guest = disk.disk();
        assert_eq!(guest.len(), raw.len() as u64, "{name}");
        let mut buf = vec![0u8; 1 << 20];
        for (i, want) in raw.chunks(1 << 20).enumerate() {
            let got = &mut buf[..want.len()];
            guest.read_exact_at((i << 20) as u64, got).unwrap();
            assert!(got == want, "{name}: MiB {i} differs");
        }
    }
    // The zero clusters of qcow2-zero-gpt sit on file clusters that hold
    // 0xaa (qemu-io wrote it before zeroing): the flag, not the file's
    // bytes, decides.
    let map: Value = json(&oracle("qcow2-zero-gpt", "qemu-img-map.json"));
    let zero = map
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["zero"] == true && e["present"] == true && e["offset"].is_u64())
        .unwrap();
    let file = std::fs::read(image("qcow2-zero-gpt")).unwrap();
    let at = zero["offset"].as_u64().unwrap() as usize;
    let len = zero["length"].as_u64().unwrap() as usize;
    assert!(file[at..at + len].iter().all(|b| *b == 0xaa));
    assert_eq!(zero["start"].as_u64().unwrap(), 40 << 20);
}
