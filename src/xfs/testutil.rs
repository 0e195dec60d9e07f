//! Test helpers for the core's unit tests: fixture images (decompressed once
//! into the temp directory) and a fork source built from `xfs_db bmap`
//! lines, so that format parsers can be tested on real blocks without the
//! inode reader.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::cast_possible_truncation
)]

use std::path::{Path, PathBuf};

use crate::xfs::dabtree::ForkSource;
use crate::xfs::error::Result;
use crate::xfs::fs::Fs;
use crate::xfs::image::Image;
use crate::xfs::read::FileReader;
use crate::xfs::types::FsBlock;

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The decompressed image of fixture `name`.
pub fn image_path(name: &str) -> PathBuf {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!(
        "xfs-explorer-unit-fixtures-{}",
        env!("CARGO_PKG_VERSION")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let src = fixtures_dir().join(format!("{name}.img.zst"));
    let out = dir.join(format!("{name}.img"));
    let fresh = |o: &Path| -> bool {
        let (Ok(a), Ok(b)) = (std::fs::metadata(o), std::fs::metadata(&src)) else {
            return false;
        };
        a.modified().unwrap() >= b.modified().unwrap()
    };
    if fresh(&out) {
        return out;
    }
    let input = std::fs::File::open(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    let mut dec = ruzstd::decoding::StreamingDecoder::new(std::io::BufReader::new(input)).unwrap();
    let tmp = dir.join(format!("{name}.img.{}.tmp", std::process::id()));
    let mut f = std::fs::File::create(&tmp).unwrap();
    std::io::copy(&mut dec, &mut f).unwrap();
    drop(f);
    std::fs::rename(&tmp, &out).unwrap();
    out
}

pub fn fixture_fs(name: &str) -> Fs<FileReader> {
    let r = FileReader::open(&image_path(name)).unwrap();
    Fs::open(Image::new(r)).unwrap()
}

/// A fork given by `(file_block, fs block, len)` extents.
pub struct TestFork<'a> {
    pub fs: &'a Fs<FileReader>,
    pub extents: Vec<(u64, u64, u64)>,
}

impl TestFork<'_> {
    /// Parse `xfs_db bmap` lines: `data offset 0 startblock 26 (0/26) count 4 flag 0`.
    pub fn from_bmap<'a>(fs: &'a Fs<FileReader>, lines: &[&str]) -> TestFork<'a> {
        let mut extents = Vec::new();
        for l in lines {
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() >= 8 && w[1] == "offset" && w[3] == "startblock" && w[6] == "count" {
                extents.push((
                    w[2].parse().unwrap(),
                    w[4].parse().unwrap(),
                    w[7].parse().unwrap(),
                ));
            }
        }
        TestFork { fs, extents }
    }
}

impl ForkSource for TestFork<'_> {
    fn map(&self, file_block: u64) -> Option<(FsBlock, u64)> {
        self.extents
            .iter()
            .find(|&&(f, _, l)| file_block >= f && file_block < f + l)
            .map(|&(f, s, l)| (FsBlock(s + file_block - f), l - (file_block - f)))
    }

    fn runs(&self) -> Vec<(u64, u64)> {
        let mut r: Vec<(u64, u64)> = self.extents.iter().map(|&(f, _, l)| (f, l)).collect();
        r.sort_unstable();
        r
    }

    fn read(&self, file_block: u64, count: u32) -> Result<Vec<u8>> {
        let bs = usize::try_from(self.fs.geo.blocksize).unwrap();
        let mut out = Vec::new();
        for i in 0..u64::from(count) {
            match self.map(file_block + i) {
                Some((fsb, _)) => out.extend(self.fs.read_fsblocks("test fork", fsb, 1)?),
                None => out.extend(vec![0u8; bs]),
            }
        }
        Ok(out)
    }
}

/// The sections of an `xfsdb-dirattr.txt` oracle: (kind, path, head lines,
/// body lines).
pub struct Section {
    pub kind: String,
    pub path: String,
    pub head: Vec<String>,
    pub body: Vec<String>,
}

pub fn dirattr_oracle(name: &str) -> Vec<Section> {
    let p = fixtures_dir().join(format!("{name}.xfsdb-dirattr.txt"));
    let text = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut out: Vec<Section> = Vec::new();
    let mut in_body = false;
    for raw in text.split(|&b| b == b'\n') {
        let line = String::from_utf8_lossy(raw).into_owned();
        if let Some(rest) = line.strip_prefix("### ") {
            let (k, p) = rest.split_once(' ').unwrap();
            out.push(Section {
                kind: k.into(),
                path: p.into(),
                head: Vec::new(),
                body: Vec::new(),
            });
            in_body = false;
        } else if line.starts_with("--- ") {
            in_body = true;
        } else if let Some(s) = out.last_mut() {
            if line.is_empty() {
                continue;
            }
            if in_body {
                s.body.push(line);
            } else {
                s.head.push(line);
            }
        }
    }
    out
}

/// `name = value` from head lines.
pub fn head_value<'a>(s: &'a Section, key: &str) -> Option<&'a str> {
    s.head.iter().find_map(|l| {
        let (k, v) = l.split_once(" = ")?;
        (k.trim() == key).then(|| v.split_whitespace().next().unwrap_or(""))
    })
}

/// A fork whose blocks may be replaced: `patches` maps a fork block to the
/// bytes a read of exactly that block (and count) returns.
pub struct Patched<'a> {
    pub inner: &'a TestFork<'a>,
    pub patches: std::collections::HashMap<u64, Vec<u8>>,
}

impl ForkSource for Patched<'_> {
    fn map(&self, file_block: u64) -> Option<(FsBlock, u64)> {
        self.inner.map(file_block)
    }

    fn runs(&self) -> Vec<(u64, u64)> {
        self.inner.runs()
    }

    fn read(&self, file_block: u64, count: u32) -> Result<Vec<u8>> {
        match self.patches.get(&file_block) {
            Some(b) => Ok(b.clone()),
            None => self.inner.read(file_block, count),
        }
    }
}

/// Store a fresh CRC (little-endian, at `off`) so that a damaged block gets
/// past the CRC check and exercises the checks behind it.
pub fn fix_crc(block: &mut [u8], off: usize) {
    let c = crate::xfs::sb::crc_with_hole(block, off);
    block[off..off + 4].copy_from_slice(&c.to_le_bytes());
}

/// A small deterministic random number generator (xorshift64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The item context of a v5 filesystem of 4 KiB blocks, 512-byte inodes
/// and AGs of 4096 blocks, for the log's unit tests (`detail`: directory
/// names and inode cores decoded).
pub fn log_ctx(detail: bool) -> crate::xfs::log::ItemContext {
    crate::xfs::log::ItemContext {
        v5: true,
        blocklog: 12,
        blocksize: 4096,
        sectsize: 512,
        inodesize: 512,
        inopblog: 3,
        agblocks: 4096,
        agblklog: 12,
        ftype: true,
        dirblksize: 4096,
        dir_names: detail,
        inode_cores: detail,
    }
}

/// A v2 record header at log block 10 of cycle 1, written little-endian,
/// holding `num_logops` ops (its lengths and CRC unset).
pub fn record_header(num_logops: u32) -> crate::xfs::log::record::RecordHeader {
    use crate::xfs::types::Lsn;
    crate::xfs::log::record::RecordHeader {
        blk: 10,
        cycle: 1,
        version: 2,
        len: 0,
        lsn: Lsn {
            cycle: 1,
            block: 10,
        },
        tail_lsn: Lsn { cycle: 1, block: 2 },
        crc: 0,
        prev_block: 0,
        num_logops,
        fmt: crate::xfs::format::log::XLOG_FMT_LINUX_LE,
        uuid: [0; 16],
        size: 32768,
        hblks: 1,
    }
}
