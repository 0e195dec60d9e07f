//! Shared (reflinked) extents against the kernel's FIEMAP view of the
//! mounted image (`tests/fixtures/NAME.fiemap.txt`, made by
//! make-fiemap-oracle.sh): every FIEMAP extent flagged SHARED (0x2000) must
//! be covered only by extents we mark shared, and every other mapped
//! extent only by extents we mark not shared.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::*;
use xfs_explorer::xfs::fs::Fs;
use xfs_explorer::xfs::image::Image;
use xfs_explorer::xfs::read::FileReader;
use xfs_explorer::xfs::reflink::mark_shared;

/// A FIEMAP extent: first and last file sector, flags.
type FiemapExtent = (u64, u64, u64);

/// (path, extents) from `fiemap -v`.
fn parse_fiemap(text: &str) -> Vec<(String, Vec<FiemapExtent>)> {
    let mut out: Vec<(String, Vec<FiemapExtent>)> = Vec::new();
    for line in text.lines() {
        if let Some(p) = line.strip_prefix("### ") {
            out.push((p.to_string(), Vec::new()));
            continue;
        }
        let t: Vec<&str> = line.split_whitespace().collect();
        // "0: [0..127]: 158728..158855 128 0x2000"; holes say "hole".
        if t.len() == 5 && t[0] != "EXT:" && t[0].ends_with(':') && t[2] != "hole" {
            let range = t[1].trim_start_matches('[').trim_end_matches("]:");
            let (a, b) = range.split_once("..").unwrap();
            let flags = u64::from_str_radix(t[4].trim_start_matches("0x"), 16).unwrap();
            out.last_mut()
                .unwrap()
                .1
                .push((a.parse().unwrap(), b.parse().unwrap(), flags));
        }
    }
    out
}

#[test]
fn shared_extents_match_fiemap() {
    let name = "v5-formats";
    let fs = Fs::open(Image::new(FileReader::open(&image(name)).unwrap())).unwrap();
    let bs_sectors = u64::from(fs.geo.blocksize) / 512;
    let files = parse_fiemap(&oracle(name, "fiemap.txt"));
    assert!(files.len() > 100);
    let (mut shared_seen, mut checked) = (0, 0);
    for (path, fiemap) in &files {
        let inode = fs.lookup_path(path.as_bytes()).unwrap();
        let mut ext = inode.data.extents().to_vec();
        mark_shared(&fs, &mut ext);
        for (first, last, flags) in fiemap {
            let want = flags & 0x2000 != 0;
            let (fb0, fb1) = (first / bs_sectors, last / bs_sectors);
            let covering: Vec<_> = ext
                .iter()
                .filter(|e| e.file_block <= fb1 && e.file_block + e.len > fb0)
                .collect();
            assert!(
                !covering.is_empty(),
                "{path}: no extent for sectors {first}..{last}"
            );
            for e in covering {
                assert_eq!(
                    e.shared,
                    Some(want),
                    "{path}: extent {e:?} vs fiemap {first}..{last} flags {flags:#x}"
                );
            }
            checked += 1;
            shared_seen += usize::from(want);
        }
    }
    assert!(
        shared_seen >= 3,
        "the fixture should have shared extents ({shared_seen})"
    );
    assert!(checked > 100);
}
