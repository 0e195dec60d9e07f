//! What the fuzz targets share. Each target takes a kernel-made fixture
//! (decompressed into `fuzz/base/` by `scripts/fuzz`) and a list of
//! regions of it of one kind (superblocks, AG headers, btree blocks,
//! inodes, directory blocks, attr blocks, log records). A fuzz input is a
//! selector byte, which picks the region, and the bytes laid over it; the
//! region's CRC is made good again (a fuzzer cannot make CRCs) so that
//! the bytes are decoded, not only rejected. Then the core's public API
//! reads what the region belongs to, as the CLI's commands would.
//! `examples/make_corpus.rs` writes each region's own bytes as the seeds.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

#[path = "../tests/common/exercise.rs"]
pub mod exercise;
#[path = "../tests/common/sites.rs"]
pub mod sites;

use exercise::Mutated;
use sites::{be32, be64, fix_crc, fix_record_crc, Fixture, Kind, Site};
use std::sync::Arc;
use xfs_explorer::xfs::fs::Fs;
use xfs_explorer::xfs::image::Image;
use xfs_explorer::xfs::log::{self, DecodeOptions};
use xfs_explorer::xfs::read::ReadAt;
use xfs_explorer::xfs::types::Ino;
use xfs_explorer::xfs::{attr, container, inode::FileType};

/// Every target, by name (the `[[bin]]` names in `Cargo.toml`).
pub const TARGETS: [&str; 9] = [
    "superblock",
    "ag_headers",
    "ag_btree",
    "inode",
    "dir_block",
    "attr_block",
    "log_records",
    "replay",
    "request_params",
];

pub struct Target {
    pub name: &'static str,
    pub fx: Fixture,
    /// The regions inputs are laid over (at most 256: one selector byte).
    pub regions: Vec<Site>,
}

fn base(fixture: &str) -> Fixture {
    let dir = std::env::var("XFS_FUZZ_BASE")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/base").to_string());
    let p = format!("{dir}/{fixture}.img");
    let bytes = std::fs::read(&p)
        .unwrap_or_else(|e| panic!("{p}: {e} (scripts/fuzz decompresses the fixtures there)"));
    Fixture::from_bytes(bytes)
}

/// At most 256 regions, spread evenly over those found.
fn spread(v: Vec<Site>) -> Vec<Site> {
    if v.len() <= 256 {
        return v;
    }
    let n = v.len();
    (0..256).map(|i| v[i * n / 256].clone()).collect()
}

/// The span of a log record (header sectors and data) as one region.
fn whole_record(fx: &Fixture, s: &Site) -> Option<Site> {
    let b = &fx.base[s.off as usize..];
    let (hdr, len) = sites::record_span(b)?;
    let total = hdr + len.div_ceil(512) * 512;
    (len > 0 && total <= b.len()).then(|| Site {
        len: total,
        ..s.clone()
    })
}

pub fn setup(name: &str) -> Target {
    let (fixture, pick): (&str, &dyn Fn(&Fixture, &Site) -> bool) = match name {
        "superblock" => ("v5-4k-dirty", &|_, s| {
            s.kind == Kind::Superblock && s.off == 0
        }),
        "ag_headers" => ("v5-formats", &|_, s| s.kind == Kind::AgHeader),
        "ag_btree" => ("v5-formats", &|_, s| s.kind == Kind::ShortBtree),
        "inode" => ("v5-dirattr", &|_, s| s.kind == Kind::Inode),
        "dir_block" => ("v5-dirattr", &|_, s| {
            s.kind == Kind::DirData
                || (s.kind == Kind::DaBlock && s.what != "attr leaf")
                || s.kind == Kind::LongBtree
        }),
        "attr_block" => ("v5-dirattr", &|_, s| {
            (s.kind == Kind::DaBlock && s.what != "directory leaf")
                || (s.kind == Kind::Remote && s.what == "remote attr value")
        }),
        "log_records" | "replay" => ("v5-4k-dirty", &|_, s| s.kind == Kind::LogRecord),
        "request_params" => ("v5-dirattr", &|_, _| false),
        other => panic!("no fuzz target {other}"),
    };
    let fx = base(fixture);
    let mut regions: Vec<Site> = fx.sites.iter().filter(|s| pick(&fx, s)).cloned().collect();
    if matches!(name, "log_records" | "replay") {
        regions = regions
            .iter()
            .filter_map(|s| whole_record(&fx, s))
            .collect();
    }
    Target {
        name: TARGETS.iter().find(|t| **t == name).unwrap(),
        fx,
        regions: spread(regions),
    }
}

/// The seeds: each region's own bytes behind its selector.
pub fn seeds(t: &Target) -> Vec<Vec<u8>> {
    if t.regions.is_empty() {
        // request_params: a path, an inode number, an xattr lookup.
        return vec![
            b"\x00/".to_vec(),
            [&[1u8][..], &128u64.to_le_bytes()].concat(),
            [&[2u8][..], &128u64.to_le_bytes(), b"user.test"].concat(),
        ];
    }
    t.regions
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut v = vec![i as u8];
            v.extend_from_slice(&t.fx.bytes(s));
            v
        })
        .collect()
}

/// The image with `data` laid over the region it selects, CRC made good.
pub fn image(t: &Target, data: &[u8]) -> Option<(Site, Mutated)> {
    let (&sel, rest) = data.split_first()?;
    let s = t
        .regions
        .get(usize::from(sel) % t.regions.len().max(1))?
        .clone();
    let mut b = t.fx.bytes(&s);
    let n = rest.len().min(b.len());
    b[..n].copy_from_slice(&rest[..n]);
    if s.kind == Kind::LogRecord {
        fix_record_crc(&mut b);
    } else if let Some(c) = s.crc_off {
        fix_crc(&mut b, c);
    }
    let mut m = Mutated::new(t.fx.base.clone());
    m.patches = Arc::new(vec![(s.off, b)]);
    Some((s, m))
}

type Vol = container::Volume<Mutated>;

fn open(m: &Mutated) -> Option<Fs<Vol>> {
    let (v, _) = container::open(m.clone(), None).ok()?;
    Fs::open(Image::new(v)).ok()
}

/// Read an inode and everything hanging from it: contents (the first
/// MiB), symlink target, directory entries and a lookup of each name,
/// xattrs and their values.
fn read_inode<R: ReadAt>(fs: &Fs<R>, ino: Ino) {
    let Ok(inode) = fs.inode(ino) else { return };
    match inode.file_type() {
        FileType::File => {
            let _ = fs.read_file_range(&inode, 0, 1 << 20, &mut |_| Ok(()));
        }
        FileType::Symlink => {
            let _ = fs.symlink_target(&inode);
        }
        FileType::Dir => {
            if let Ok(l) = fs.read_dir(&inode) {
                for e in l.entries.iter().take(64) {
                    let _ = fs.dir_lookup(&inode, &e.name);
                }
            }
            let w = fs.walk(b"/x", &inode);
            for item in w.items.iter().take(256) {
                let _ = fs.inode(item.ino);
            }
        }
        _ => {}
    }
    if let Ok(listing) = fs.read_attrs(&inode) {
        for x in attr::linux_xattrs(&listing) {
            let _ = fs.linux_xattr_value(&inode, &x);
        }
    }
}

/// The inode a region belongs to: an inode's own number, or the owner
/// its v5 header names.
fn owner(s: &Site, b: &[u8]) -> Option<u64> {
    let at = match (s.kind, s.what) {
        (Kind::Inode, _) => 152,
        (Kind::DirData, _) => 40,
        (Kind::Remote, _) => 32,
        (Kind::LongBtree, _) => 56,
        _ => 48,
    };
    (b.len() >= at + 8).then(|| be64(b, at))
}

pub fn run(t: &Target, data: &[u8]) {
    if t.name == "request_params" {
        return request(t, data);
    }
    let Some((s, m)) = image(t, data) else { return };
    match t.name {
        "superblock" => {
            let _ = exercise::info(&m);
            let _ = exercise::ags(&m);
            if let Some(fs) = open(&m) {
                if let Ok(root) = fs.inode(fs.root_ino()) {
                    let _ = fs.read_dir(&root);
                }
                let _ = log::LogDev::of_fs(&fs).and_then(|d| log::find::find_head_tail(&d));
            }
        }
        "ag_headers" | "ag_btree" => {
            let _ = exercise::ags(&m);
            if let Some(fs) = open(&m) {
                let _ = xfs_explorer::xfs::ops::forkoff::distribution(&fs, &mut |_| {});
            }
        }
        "inode" | "dir_block" | "attr_block" => {
            let orig = t.fx.bytes(&s);
            if let (Some(fs), Some(ino)) = (open(&m), owner(&s, &orig)) {
                read_inode(&fs, Ino(ino));
            }
        }
        "log_records" => {
            if let Some(fs) = open(&m) {
                if let Ok(d) = log::decode(&fs, DecodeOptions::DETAIL) {
                    let ctx = log::ItemContext::of(&fs, DecodeOptions::DETAIL);
                    let _ = log::json::write_log_json(&mut std::io::sink(), &d, Some(&ctx));
                }
            }
        }
        "replay" => {
            let _ = exercise::replay_cmds(&m);
            let _ = exercise::ops_cmd(&m);
        }
        _ => {}
    }
}

/// What the page's requests carry to the core: a path to resolve, an
/// inode number to read, an xattr name to look up (the request type itself
/// is wasm-only: its `Open` variants hold browser `Blob`s).
fn request(t: &Target, data: &[u8]) {
    let Some((&op, rest)) = data.split_first() else {
        return;
    };
    let m = Mutated::new(t.fx.base.clone());
    let Some(fs) = open(&m) else { return };
    let num = |b: &[u8]| {
        let mut w = [0u8; 8];
        let n = b.len().min(8);
        w[..n].copy_from_slice(&b[..n]);
        u64::from_le_bytes(w)
    };
    match op % 3 {
        0 => {
            if let Ok(i) = fs.lookup_path(rest) {
                read_inode(&fs, i.ino);
            }
        }
        1 => read_inode(&fs, Ino(num(rest))),
        _ => {
            let ino = Ino(num(rest));
            let name = rest.get(8..).unwrap_or(&[]);
            if let Ok(inode) = fs.inode(ino) {
                if let Ok(l) = fs.read_attrs(&inode) {
                    for x in attr::linux_xattrs(&l) {
                        if x.name == name {
                            let _ = fs.linux_xattr_value(&inode, &x);
                        }
                    }
                }
            }
        }
    }
    let _ = be32;
}
