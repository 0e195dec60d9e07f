//! The AG btree editor against the kernel (`make/shapes.sh btree`): the
//! kernel punched one-block files of a fragmented AG in a known order
//! (`btree-oracle.ops.txt`); the same frees are done here on the image as
//! it was before (`btree-oracle.img.zst`) the way the kernel finishes them
//! (the reverse mapping removed, the free list fixed, the blocks freed into
//! the free-space btrees, the free-list blocks given back), and the AGF,
//! the free list and every block of the bnobt, cntbt and rmapbt (level,
//! address, records, keys, pointers) must be what `xfs_db btdump -i`
//! showed after each phase (`btree-oracle.after-{a,b}.txt.zst`).
//!
//! With `BTREE_ORACLE_WRITE=PATH` the edited image is written to PATH (the
//! generator script runs `xfs_repair -n` on it).
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::*;
use std::io::Read;
use xfs_explorer::xfs::fs::{be16, be32, be64, Fs};
use xfs_explorer::xfs::image::{Image, Overlay};
use xfs_explorer::xfs::read::FileReader;
use xfs_explorer::xfs::replay::ag::{stamp_into, AgStore, AgTree};
use xfs_explorer::xfs::replay::alloc::RmapOwner;
use xfs_explorer::xfs::types::{AgNumber, Lsn};

fn zst_text(name: &str) -> String {
    let p = fixtures_dir().join(name);
    let f = std::fs::File::open(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut dec = ruzstd::decoding::StreamingDecoder::new(std::io::BufReader::new(f)).unwrap();
    let mut s = String::new();
    dec.read_to_string(&mut s).unwrap();
    s
}

struct Op {
    phase: char,
    ino: u64,
    agno: u32,
    agbno: u32,
}

fn ops() -> Vec<Op> {
    oracle("btree-oracle", "ops.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            Op {
                phase: w[0].chars().next().unwrap(),
                ino: w[1].parse().unwrap(),
                agno: w[2].parse().unwrap(),
                agbno: w[3].parse().unwrap(),
            }
        })
        .collect()
}

/// The AGF fields and the free list, then the three trees, in the words
/// and order of the oracle text (lines trimmed).
fn oracle_view(text: &str) -> Vec<String> {
    const AGF: [&str; 13] = [
        "bnoroot",
        "cntroot",
        "rmaproot",
        "bnolevel",
        "cntlevel",
        "rmaplevel",
        "flfirst",
        "fllast",
        "flcount",
        "freeblks",
        "longest",
        "btreeblks",
        "rmapblocks",
    ];
    let mut out = Vec::new();
    let mut fields: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    let mut in_trees = false;
    let mut agfl_slots: Vec<String> = Vec::new();
    for l in text.lines() {
        let l = l.trim();
        if l.starts_with("===") {
            if !in_trees {
                for f in AGF {
                    out.push(format!(
                        "{f} = {}",
                        fields.get(f).cloned().unwrap_or_default()
                    ));
                }
                let first: usize = fields["flfirst"].parse().unwrap();
                let count: usize = fields["flcount"].parse().unwrap();
                let n = agfl_slots.len();
                let list: Vec<String> = (0..count)
                    .map(|i| agfl_slots[(first + i) % n].clone())
                    .collect();
                out.push(format!("free list = {}", list.join(" ")));
            }
            in_trees = true;
        }
        if in_trees {
            if !l.is_empty() {
                out.push(l.to_string());
            }
            continue;
        }
        if let Some((k, v)) = l.split_once(" = ") {
            if k.starts_with("bno[") {
                agfl_slots = v
                    .split_whitespace()
                    .map(|s| s.split_once(':').unwrap().1.to_string())
                    .collect();
            } else if !fields.contains_key(k) {
                fields.insert(k.to_string(), v.to_string());
            }
        }
    }
    out
}

fn owner_text(o: u64) -> String {
    if o & (1 << 63) != 0 {
        (o as i64).to_string()
    } else {
        o.to_string()
    }
}

fn rmap_fields(k: &[u8], rec: bool) -> String {
    let start = be32(k, 0).unwrap();
    let (owner, off) = if rec {
        (be64(k, 8).unwrap(), be64(k, 16).unwrap())
    } else {
        (be64(k, 4).unwrap(), be64(k, 12).unwrap())
    };
    let o = off & ((1 << 54) - 1);
    let attr = (off >> 63) & 1;
    let bmbt = (off >> 62) & 1;
    if rec {
        let len = be32(k, 4).unwrap();
        let unwritten = (off >> 61) & 1;
        format!(
            "{start},{len},{},{o},{unwritten},{attr},{bmbt}",
            owner_text(owner)
        )
    } else {
        format!("{start},{},{o},{attr},{bmbt}", owner_text(owner))
    }
}

/// The same view of our edited state.
fn our_view(s: &mut AgStore<'_, FileReader>, fs: &Fs<FileReader>, ov: &Overlay) -> Vec<String> {
    let mut out = Vec::new();
    for (f, off) in [
        ("bnoroot", 16),
        ("cntroot", 20),
        ("rmaproot", 24),
        ("bnolevel", 28),
        ("cntlevel", 32),
        ("rmaplevel", 36),
        ("flfirst", 40),
        ("fllast", 44),
        ("flcount", 48),
        ("freeblks", 52),
        ("longest", 56),
        ("btreeblks", 60),
        ("rmapblocks", 80),
    ] {
        out.push(format!("{f} = {}", s.agf_u32(off)));
    }
    let fl = s.freelist().ok().unwrap();
    out.push(format!(
        "free list = {}",
        fl.iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    ));
    let bs = fs.geo.blocksize as usize;
    let hdr = 56usize;
    for (tree, name) in [
        (AgTree::Bno, "bnobt"),
        (AgTree::Cnt, "cntbt"),
        (AgTree::Rmap, "rmapbt"),
    ] {
        out.push(format!("=== {name}"));
        let shape = s.shape(tree).ok().unwrap();
        for (level, blocks) in shape.iter().enumerate().rev() {
            for (i, &b) in blocks.iter().enumerate() {
                let daddr = fs
                    .geo
                    .agb_to_daddr(AgNumber(s.agno), xfs_explorer::xfs::types::AgBlock(b))
                    .unwrap()
                    .0;
                // Read back through the overlay: what would be on disk.
                let off = daddr * 512;
                let mut blk = fs.img.read_disk("test", off, bs as u64).unwrap();
                ov.apply_to(off, &mut blk);
                let n = be16(&blk, 6).unwrap() as usize;
                out.push(format!(
                    "{name} level {level} block {} daddr {daddr}",
                    i + 1
                ));
                if level == 0 {
                    let (cols, rl) = match tree {
                        AgTree::Rmap => (
                            "[startblock,blockcount,owner,offset,extentflag,attrfork,bmbtblock]",
                            24,
                        ),
                        _ => ("[startblock,blockcount]", 8),
                    };
                    out.push(format!("recs[1-{n}] = {cols}"));
                    for j in 0..n {
                        let r = &blk[hdr + j * rl..hdr + (j + 1) * rl];
                        let body = match tree {
                            AgTree::Rmap => rmap_fields(r, true),
                            _ => format!("{},{}", be32(r, 0).unwrap(), be32(r, 4).unwrap()),
                        };
                        out.push(format!("{}:[{body}]", j + 1));
                    }
                } else {
                    let (cols, kl) = match tree {
                        AgTree::Rmap => ("[startblock,owner,offset,attrfork,bmbtblock,startblock_hi,owner_hi,offset_hi,attrfork_hi,bmbtblock_hi]", 40),
                        AgTree::Cnt => ("[blockcount,startblock]", 8),
                        _ => ("[startblock,blockcount]", 8),
                    };
                    let maxr = (bs - hdr) / (kl + 4);
                    out.push(format!("keys[1-{n}] = {cols}"));
                    for j in 0..n {
                        let k = &blk[hdr + j * kl..hdr + (j + 1) * kl];
                        let body = match tree {
                            AgTree::Rmap => {
                                format!(
                                    "{},{}",
                                    rmap_fields(&k[..20], false),
                                    rmap_fields(&k[20..], false)
                                )
                            }
                            AgTree::Cnt => {
                                format!("{},{}", be32(k, 4).unwrap(), be32(k, 0).unwrap())
                            }
                            _ => format!("{},{}", be32(k, 0).unwrap(), be32(k, 4).unwrap()),
                        };
                        out.push(format!("{}:[{body}]", j + 1));
                    }
                    let ptrs: Vec<String> = (0..n)
                        .map(|j| {
                            format!("{}:{}", j + 1, be32(&blk, hdr + maxr * kl + j * 4).unwrap())
                        })
                        .collect();
                    out.push(format!("ptrs[1-{n}] = {}", ptrs.join(" ")));
                }
            }
        }
    }
    out
}

fn first_difference(ours: &[String], theirs: &[String]) -> Option<String> {
    for (i, (a, b)) in ours.iter().zip(theirs.iter()).enumerate() {
        if a != b {
            let from = i.saturating_sub(3);
            return Some(format!(
                "line {i}: ours {a:?}, kernel {b:?}\nours:   {:?}\nkernel: {:?}",
                &ours[from..(i + 3).min(ours.len())],
                &theirs[from..(i + 3).min(theirs.len())]
            ));
        }
    }
    (ours.len() != theirs.len()).then(|| format!("{} lines, kernel {}", ours.len(), theirs.len()))
}

#[test]
fn freeing_blocks_gives_the_kernels_trees_block_for_block() {
    let path = image("btree-oracle");
    let fs = Fs::open(Image::new(FileReader::open(&path).unwrap())).unwrap();
    let ops = ops();
    let agno = ops[0].agno;
    assert!(ops.iter().all(|o| o.agno == agno));
    let before = oracle_view(&zst_text("btree-oracle.before.txt.zst"));
    let base = Overlay::default();
    let mut s = AgStore::new(&fs, &base, agno).unwrap();
    // Nothing edited yet: our reading of the image is the kernel's.
    let v = our_view(&mut s, &fs, &base);
    if let Some(d) = first_difference(&v, &before) {
        panic!("before: {d}");
    }
    // The trees are as tall as the test needs them to be.
    assert_eq!(s.agf_u32(28), 2, "bnobt levels");
    assert_eq!(s.agf_u32(32), 2, "cntbt levels");
    assert_eq!(s.agf_u32(36), 3, "rmapbt levels");
    let lsn = Lsn::from_raw(be64(&s.agf, 208).unwrap());
    let mut ov = Overlay::default();
    for (phase, oracle_file) in [
        ('a', "btree-oracle.after-a.txt.zst"),
        ('b', "btree-oracle.after-b.txt.zst"),
    ] {
        for op in ops.iter().filter(|o| o.phase == phase) {
            // The RUI: fix the free list (`xfs_rmap_finish_one`), unmap the
            // file's block, free what the fix-up took off the free list
            // (work queued while finishing an item runs first); the EFI:
            // fix the free list,
            // free the block (no owner: the RUI did the rmap) and mark it
            // busy; then the free-list blocks the fix-up took off are
            // given back.
            let owner = RmapOwner {
                owner: op.ino,
                offset: 0,
                attr_fork: false,
                bmbt_block: false,
            };
            // Each punch was followed by fsync (a log force): what the
            // previous one freed is not busy any more.
            s.clear_busy();
            let r = s
                .fix_freelist(true)
                .and_then(|()| s.rmap_unmap(op.agbno, 1, false, owner))
                .and_then(|()| s.finish_deferred())
                .and_then(|()| s.free_extent(op.agbno, 1, None))
                .and_then(|()| s.finish_deferred());
            if let Err(e) = r {
                panic!("phase {phase}, block {}: {e}", op.agbno);
            }
        }
        let changes = s.changed().unwrap();
        let mut ov2 = Overlay::default();
        stamp_into(&mut ov2, changes, lsn, true);
        let theirs = oracle_view(&zst_text(oracle_file));
        let ours = our_view(&mut s, &fs, &ov2);
        if let Some(d) = first_difference(&ours, &theirs) {
            panic!("after phase {phase}: {d}");
        }
        ov = ov2;
        // The kernel's phases are separated by an unmount: nothing is busy.
        s.clear_busy();
    }
    // The project's own walker finds nothing wrong in the edited AG.
    let mut img = Image::new(FileReader::open(&path).unwrap());
    img.set_overlay(ov.clone());
    img.set_use_overlay(true);
    let fs2 = Fs::open(img).unwrap();
    let sum = xfs_explorer::xfs::ag::summarize(&fs2, AgNumber(agno)).unwrap();
    // (The walker's inobt check wants startino to be a multiple of 64,
    // which this unaligned, non-sparse image does not need; the inode
    // btrees are not edited here.)
    let problems: Vec<String> = sum
        .all_problems()
        .into_iter()
        .filter(|p| !p.starts_with("inobt ") && !p.starts_with("finobt "))
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    if let Ok(out) = std::env::var("BTREE_ORACLE_WRITE") {
        std::fs::copy(&path, &out).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&out).unwrap();
        use std::os::unix::fs::FileExt;
        for (daddr, sector) in ov.sectors() {
            f.write_all_at(sector, daddr * 512).unwrap();
        }
    }
}
