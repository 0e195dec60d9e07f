//! Appends checkpoints of intent items to the log of a cleanly
//! unmounted XFS image, so that the kernel's own recovery of that image
//! can serve as the oracle for intents this machine's kernel never logs
//! itself (attribute intents need logged xattrs, a debug-only knob).
//!
//! ```text
//! forge-log IMAGE --item ITEM ... [--log-incompat BITS]
//!   ITEM, in log order:
//!     attri:OP:INO:NS:NAME[=VALUE][>NEWNAME=NEWVALUE]
//!                                   OP set | replace | remove | pptr_set |
//!                                   pptr_remove | pptr_replace (NEW: its
//!                                   new name and value); NS user | trusted |
//!                                   secure | parent; VALUE text, "@N" for N
//!                                   bytes of 'v', "#INO/GEN" a parent record
//!     bui:map|unmap:INO:OFFSET:FSBLOCK:LEN   a data-fork bmap update
//!     rui:OP:INO:OFFSET:FSBLOCK:LEN[:unwritten]   a data-fork rmap update;
//!                                   OP map, map_shared, unmap,
//!                                   unmap_shared, convert, convert_shared
//!     cui:increase|decrease:FSBLOCK:LEN      a refcount update
//!     xmi:INO1:INO2:OFF1:OFF2:COUNT:FLAGS    a file-mapping exchange; the
//!                                   generations and sizes are read from
//!                                   the inodes (sizes exchanged when FLAGS
//!                                   has SET_SIZES, 2; else -1)
//!     dquot:DADDR:ID                a logged user dquot (ID) of the dquot
//!                                   buffer at DADDR (one block, at its
//!                                   start), its counters zero
//! forge-log IMAGE --incompat BITS | --clear-incompat BITS | --qflags BITS
//!   only sets or clears bits of sb_features_incompat, or sets bits of
//!   sb_qflags (decimal; no checkpoint)
//! ```
//!
//! Written after the last record (an unmount record): one record per
//! checkpoint, each whose tail is the first of them, each one transaction
//! (start, checkpoint header, the items, commit; items that would take a
//! record past 64 sectors start the next checkpoint), ops and item formats
//! laid
//! out as an x86-64 kernel writes them (`xfs_log_format.h`: op headers and
//! record header big-endian, item formats little-endian, names and values
//! raw), each sector's first word saved in the header and replaced by the
//! cycle, the CRC over header and data. Everything is read from the image
//! itself; the image is changed in place (work on a copy).
//!
//! Only for making fixtures: the layout is checked by `xfs_logprint` and by
//! the kernel accepting the record, not by this project's decoder.

use clap::Parser;
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};

#[derive(Parser)]
struct Args {
    image: String,
    /// KIND:... (see the top of this file)
    #[arg(long)]
    item: Vec<String>,
    /// Bits to set in sb_features_log_incompat (CRC fixed).
    #[arg(long, default_value_t = 0)]
    log_incompat: u32,
    /// Bits to set in sb_features_incompat (CRC fixed).
    #[arg(long, default_value_t = 0)]
    incompat: u32,
    /// Bits to clear in sb_features_incompat (CRC fixed).
    #[arg(long, default_value_t = 0)]
    clear_incompat: u32,
    /// Bits to set in sb_qflags (CRC fixed).
    #[arg(long, default_value_t = 0)]
    qflags: u16,
}

/// Sets `set` and clears `clear` in the superblock word at `at`, the
/// sector's CRC recomputed.
fn patch_sb(f: &mut std::fs::File, at: usize, set: u32, clear: u32) {
    let mut head = vec![0u8; 512];
    f.seek(SeekFrom::Start(0)).unwrap();
    f.read_exact(&mut head).unwrap();
    let sectsize = usize::from(u16::from_be_bytes([head[102], head[103]]));
    let mut whole = vec![0u8; sectsize];
    f.seek(SeekFrom::Start(0)).unwrap();
    f.read_exact(&mut whole).unwrap();
    let v = (be32(&whole, at) | set) & !clear;
    whole[at..at + 4].copy_from_slice(&v.to_be_bytes());
    whole[224..228].fill(0);
    let crc = crc32c::crc32c(&whole);
    whole[224..228].copy_from_slice(&crc.to_le_bytes());
    f.seek(SeekFrom::Start(0)).unwrap();
    f.write_all(&whole).unwrap();
}

/// The bytes of inode `ino` (its generation and size are read from them).
fn read_inode(f: &mut std::fs::File, sb: &[u8], ino: u64) -> Vec<u8> {
    let blocksize = u64::from(be32(sb, 4));
    let agblocks = u64::from(be32(sb, 84));
    let isize = u64::from(u16::from_be_bytes([sb[104], sb[105]]));
    let inopblog = u32::from(sb[123]);
    let agblklog = u32::from(sb[124]);
    let agno = ino >> (agblklog + inopblog);
    let agbno = (ino >> inopblog) & ((1 << agblklog) - 1);
    let idx = ino & ((1 << inopblog) - 1);
    let at = (agno * agblocks + agbno) * blocksize + idx * isize;
    let mut b = vec![0u8; isize as usize];
    f.seek(SeekFrom::Start(at)).unwrap();
    f.read_exact(&mut b).unwrap();
    assert_eq!(&b[..2], b"IN", "inode {ino} has no inode magic");
    b
}

/// An XMI: the two inodes (with their generations), the ranges, the
/// flags and the sizes the exchange would set.
fn xmi_item(f: &mut std::fs::File, sb: &[u8], s: &str, id: u64) -> Vec<Vec<u8>> {
    let p: Vec<u64> = s.split(':').map(|x| x.parse().unwrap()).collect();
    assert_eq!(p.len(), 6, "xmi:INO1:INO2:OFF1:OFF2:COUNT:FLAGS");
    let (i1, i2) = (read_inode(f, sb, p[0]), read_inode(f, sb, p[1]));
    let (size1, size2) = (be64(&i1, 56), be64(&i2, 56));
    let flags = p[5];
    let (isize1, isize2) = if flags & 2 != 0 {
        (size2, size1)
    } else {
        (u64::MAX, u64::MAX)
    };
    let mut x = Vec::new();
    x.extend(0x1248u16.to_le_bytes());
    x.extend(1u16.to_le_bytes());
    x.extend(0u32.to_le_bytes());
    x.extend(id.to_le_bytes());
    x.extend(p[0].to_le_bytes());
    x.extend(p[1].to_le_bytes());
    x.extend(be32(&i1, 92).to_le_bytes());
    x.extend(be32(&i2, 92).to_le_bytes());
    x.extend(p[2].to_le_bytes());
    x.extend(p[3].to_le_bytes());
    x.extend(p[4].to_le_bytes());
    x.extend(flags.to_le_bytes());
    x.extend(isize1.to_le_bytes());
    x.extend(isize2.to_le_bytes());
    assert_eq!(x.len(), 88);
    vec![x]
}

fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes(b[o..o + 4].try_into().unwrap())
}
fn be64(b: &[u8], o: usize) -> u64 {
    u64::from_be_bytes(b[o..o + 8].try_into().unwrap())
}

struct Attri {
    op: u32,
    ino: u64,
    filter: u32,
    name: Vec<u8>,
    value: Vec<u8>,
    /// PPTR_REPLACE: the new name and value.
    new: Option<(Vec<u8>, Vec<u8>)>,
}

/// A value: text, "@N" for N bytes of 'v', "#INO/GEN" for a parent
/// pointer record (inode and generation, big-endian).
fn value_of(v: &str) -> Vec<u8> {
    if let Some(k) = v.strip_prefix('@') {
        vec![b'v'; k.parse().unwrap()]
    } else if let Some(r) = v.strip_prefix('#') {
        let (ino, gen) = r.split_once('/').expect("#INO/GEN");
        let mut b = ino.parse::<u64>().unwrap().to_be_bytes().to_vec();
        b.extend(gen.parse::<u32>().unwrap().to_be_bytes());
        b
    } else {
        v.as_bytes().to_vec()
    }
}

fn name_value(s: &str) -> (Vec<u8>, Vec<u8>) {
    match s.split_once('=') {
        Some((n, v)) => (n.as_bytes().to_vec(), value_of(v)),
        None => (s.as_bytes().to_vec(), Vec::new()),
    }
}

fn parse_attri(s: &str) -> Attri {
    let mut p = s.splitn(4, ':');
    let op = match p.next().unwrap() {
        "set" => 1,
        "remove" => 2,
        "replace" => 3,
        "pptr_set" => 4,
        "pptr_remove" => 5,
        "pptr_replace" => 6,
        o => panic!("unknown op {o}"),
    };
    let ino = p.next().unwrap().parse().unwrap();
    let filter = match p.next().unwrap() {
        "user" => 0,
        "trusted" => 2,
        "secure" => 4,
        "parent" => 8,
        n => panic!("unknown namespace {n}"),
    };
    let rest = p.next().unwrap_or("");
    let (old, new) = match rest.split_once('>') {
        Some((o, n)) => (o, Some(name_value(n))),
        None => (rest, None),
    };
    let (name, value) = name_value(old);
    Attri {
        op,
        ino,
        filter,
        name,
        value,
        new,
    }
}

fn pad4(mut v: Vec<u8>) -> Vec<u8> {
    v.resize(v.len().div_ceil(4) * 4, 0);
    v
}

/// The regions of one ATTRI item (format, name, [new name], [value],
/// [new value]); `igen` the inode's generation (parent pointers).
fn attri_regions(a: &Attri, id: u64, igen: u32) -> Vec<Vec<u8>> {
    let mut r = vec![pad4(a.name.clone())];
    if let Some((n, _)) = &a.new {
        r.push(pad4(n.clone()));
    }
    if !a.value.is_empty() {
        r.push(pad4(a.value.clone()));
    }
    if let Some((_, v)) = &a.new {
        r.push(pad4(v.clone()));
    }
    let nregions = (r.len() + 1) as u16;
    let mut f = Vec::new();
    f.extend(0x1246u16.to_le_bytes());
    f.extend(nregions.to_le_bytes());
    f.extend(igen.to_le_bytes()); // alfi_igen
    f.extend(id.to_le_bytes());
    f.extend(a.ino.to_le_bytes());
    f.extend(a.op.to_le_bytes());
    match &a.new {
        Some((n, _)) => {
            f.extend((a.name.len() as u16).to_le_bytes());
            f.extend((n.len() as u16).to_le_bytes());
        }
        None => f.extend((a.name.len() as u32).to_le_bytes()),
    }
    f.extend((a.value.len() as u32).to_le_bytes());
    f.extend(a.filter.to_le_bytes());
    assert_eq!(f.len(), 40);
    r.insert(0, f);
    r
}

/// A BUI (one extent: owner, startblock, startoff, len, flags) or a CUI
/// (startblock, len, flags), with its id.
fn extent_item(s: &str, id: u64) -> Vec<Vec<u8>> {
    let p: Vec<&str> = s.split(':').collect();
    let num = |i: usize| -> u64 { p[i].parse().unwrap() };
    let (kind, flags): (u16, u32) = match (p[0], p[1]) {
        ("bui", "map") => (0x1244, 1),
        ("bui", "unmap") => (0x1244, 2),
        ("rui", "map") => (0x1240, 1),
        ("rui", "map_shared") => (0x1240, 2),
        ("rui", "unmap") => (0x1240, 3),
        ("rui", "unmap_shared") => (0x1240, 4),
        ("rui", "convert") => (0x1240, 5),
        ("rui", "convert_shared") => (0x1240, 6),
        ("cui", "increase") => (0x1242, 1),
        ("cui", "decrease") => (0x1242, 2),
        (k, o) => panic!("unknown item {k}:{o}"),
    };
    // The intent header: type, one region, one extent, id.
    let mut f = Vec::new();
    f.extend(kind.to_le_bytes());
    f.extend(1u16.to_le_bytes());
    f.extend(1u32.to_le_bytes());
    f.extend(id.to_le_bytes());
    // An rmap update's state bit: the mapping's (new) written state.
    let flags = if p.get(6) == Some(&"unwritten") {
        flags | 1 << 29
    } else {
        flags
    };
    if kind == 0x1244 || kind == 0x1240 {
        f.extend(num(2).to_le_bytes()); // me_owner
        f.extend(num(4).to_le_bytes()); // me_startblock
        f.extend(num(3).to_le_bytes()); // me_startoff
        f.extend((num(5) as u32).to_le_bytes());
    } else {
        f.extend(num(2).to_le_bytes()); // pe_startblock
        f.extend((num(3) as u32).to_le_bytes());
    }
    f.extend(flags.to_le_bytes());
    vec![f]
}

/// A DQUOT item: `xfs_dq_logformat` (host order), then the dquot as it is
/// on disk (big-endian `xfs_disk_dquot`, 104 bytes).
fn dquot_item(s: &str) -> Vec<Vec<u8>> {
    let p: Vec<u64> = s.split(':').map(|x| x.parse().unwrap()).collect();
    assert_eq!(p.len(), 2, "dquot:DADDR:ID");
    let id = p[1] as u32;
    let mut f = Vec::new();
    f.extend(0x123du16.to_le_bytes());
    f.extend(2u16.to_le_bytes());
    f.extend(id.to_le_bytes());
    f.extend(p[0].to_le_bytes());
    f.extend(1i32.to_le_bytes());
    f.extend(0u32.to_le_bytes());
    assert_eq!(f.len(), 24);
    let mut d = vec![0u8; 104];
    d[0..2].copy_from_slice(&0x4451u16.to_be_bytes());
    d[2] = 1;
    d[3] = 1;
    d[4..8].copy_from_slice(&id.to_be_bytes());
    vec![f, d]
}

fn op(tid: u32, data: &[u8], flags: u8) -> Vec<u8> {
    let mut o = Vec::new();
    o.extend(tid.to_be_bytes());
    o.extend((data.len() as u32).to_be_bytes());
    o.push(0x69);
    o.push(flags);
    o.extend(0u16.to_be_bytes());
    o.extend_from_slice(data);
    o
}

fn main() {
    let args = Args::parse();
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&args.image)
        .unwrap();
    let mut sb = vec![0u8; 512];
    f.read_exact(&mut sb).unwrap();
    assert_eq!(be32(&sb, 0), 0x5846_5342, "no superblock");
    let blocksize = u64::from(be32(&sb, 4));
    let agblocks = u64::from(be32(&sb, 84));
    let agblklog = sb[124];
    let logstart = be64(&sb, 48);
    let logblocks = u64::from(be32(&sb, 96));
    let uuid: [u8; 16] = sb[32..48].try_into().unwrap();
    let bbs_per_block = blocksize / 512;
    let agno = logstart >> agblklog;
    let agbno = logstart & ((1 << agblklog) - 1);
    let log_daddr = (agno * agblocks + agbno) * bbs_per_block;
    let log_bbs = logblocks * bbs_per_block;

    if args.log_incompat != 0 {
        patch_sb(&mut f, 220, args.log_incompat, 0);
    }
    if args.incompat != 0 || args.clear_incompat != 0 {
        patch_sb(&mut f, 216, args.incompat, args.clear_incompat);
    }
    if args.qflags != 0 {
        // sb_qflags is the high half of the word at 176.
        patch_sb(&mut f, 176, u32::from(args.qflags) << 16, 0);
    }
    if args.item.is_empty() {
        return;
    }

    // The last record: the highest (cycle, block) among record headers.
    let mut log = vec![0u8; (log_bbs * 512) as usize];
    f.seek(SeekFrom::Start(log_daddr * 512)).unwrap();
    f.read_exact(&mut log).unwrap();
    let mut last: Option<(u32, u64)> = None;
    for blk in 0..log_bbs {
        let s = &log[(blk * 512) as usize..];
        if be32(s, 0) == 0xFEED_BABE && be64(s, 16) == (u64::from(be32(s, 4)) << 32 | blk) {
            let c = be32(s, 4);
            if last.is_none_or(|(lc, lb)| (c, blk) > (lc, lb)) {
                last = Some((c, blk));
            }
        }
    }
    let (cycle, prev) = last.expect("no log record");
    let ph = &log[(prev * 512) as usize..];
    let prev_len = u64::from(be32(ph, 12));
    let hsize = u64::from(be32(ph, 320)).max(32768);
    let hdr_bbs = hsize.div_ceil(32768);
    let head = prev + hdr_bbs + prev_len.div_ceil(512);

    // One checkpoint: start, header, items, commit.
    let tid: u32 = 0x5eed_0001;
    let mut items: Vec<Vec<Vec<u8>>> = Vec::new();
    for (i, s) in args.item.iter().enumerate() {
        let id = 0xa770_0000 + i as u64;
        items.push(if let Some(a) = s.strip_prefix("attri:") {
            let a = parse_attri(a);
            let igen = if a.op >= 4 {
                be32(&read_inode(&mut f, &sb, a.ino), 92)
            } else {
                0
            };
            attri_regions(&a, id, igen)
        } else if let Some(x) = s.strip_prefix("xmi:") {
            xmi_item(&mut f, &sb, x, id)
        } else if let Some(q) = s.strip_prefix("dquot:") {
            dquot_item(q)
        } else {
            extent_item(s, id)
        });
    }
    // One checkpoint per record; items that do not fit one record (64
    // sectors of data) go into the next checkpoint.
    let first_lsn = u64::from(cycle) << 32 | head;
    let mut head = head;
    let mut prev = prev;
    let mut groups: Vec<Vec<Vec<Vec<u8>>>> = vec![Vec::new()];
    for it in items {
        let mut trial = groups.last().cloned().unwrap_or_default();
        trial.push(it.clone());
        if checkpoint(tid, &trial).0.len() > 64 * 512 && !trial[..trial.len() - 1].is_empty() {
            groups.push(vec![it]);
        } else {
            *groups.last_mut().unwrap() = trial;
        }
    }
    for (g, items) in groups.iter().enumerate() {
        let (mut data, nops) = checkpoint(tid + g as u32, items);
        let data_bbs = data.len() as u64 / 512;
        assert!(data_bbs <= 64, "one header sector holds 64 cycle words");
        assert!(
            head + 1 + data_bbs <= log_bbs,
            "the record would wrap the log"
        );
        let lsn = u64::from(cycle) << 32 | head;
        let mut h = vec![0u8; 512];
        h[0..4].copy_from_slice(&0xFEED_BABEu32.to_be_bytes());
        h[4..8].copy_from_slice(&cycle.to_be_bytes());
        h[8..12].copy_from_slice(&2u32.to_be_bytes());
        h[12..16].copy_from_slice(&(data.len() as u32).to_be_bytes());
        h[16..24].copy_from_slice(&lsn.to_be_bytes());
        // Every record's tail is the first forged record: recovery starts
        // there.
        h[24..32].copy_from_slice(&first_lsn.to_be_bytes());
        h[36..40].copy_from_slice(&(prev as u32).to_be_bytes());
        h[40..44].copy_from_slice(&nops.to_be_bytes());
        for i in 0..data_bbs as usize {
            let at = i * 512;
            h[44 + i * 4..48 + i * 4].copy_from_slice(&data[at..at + 4]);
            data[at..at + 4].copy_from_slice(&cycle.to_be_bytes());
        }
        h[300..304].copy_from_slice(&1u32.to_be_bytes());
        h[304..320].copy_from_slice(&uuid);
        h[320..324].copy_from_slice(&32768u32.to_be_bytes());
        let mut c = crc32c::crc32c(&h[..328]);
        c = crc32c::crc32c_append(c, &data);
        h[32..36].copy_from_slice(&c.to_le_bytes());

        f.seek(SeekFrom::Start((log_daddr + head) * 512)).unwrap();
        f.write_all(&h).unwrap();
        f.write_all(&data).unwrap();
        println!(
            "record at log block {head} (cycle {cycle}), {nops} ops, {} items, after the record at {prev}",
            items.len()
        );
        prev = head;
        head += 1 + data_bbs;
    }
}

/// One checkpoint's record data (start, header, the items' regions,
/// commit; padded to a sector) and its op count.
fn checkpoint(tid: u32, items: &[Vec<Vec<u8>>]) -> (Vec<u8>, u32) {
    let mut data = Vec::new();
    let mut nops = 0u32;
    data.extend(op(tid, &[], 0x01));
    nops += 1;
    let mut th = Vec::new();
    th.extend(0x5452_414eu32.to_le_bytes());
    th.extend(40u32.to_le_bytes()); // XFS_TRANS_CHECKPOINT
    th.extend(tid.to_le_bytes());
    // A checkpoint's header counts regions (log vectors), not items.
    let nregions: usize = items.iter().map(Vec::len).sum();
    th.extend((nregions as u32).to_le_bytes());
    data.extend(op(tid, &th, 0));
    nops += 1;
    for it in items {
        for r in it {
            data.extend(op(tid, r, 0));
            nops += 1;
        }
    }
    data.extend(op(tid, &[], 0x02));
    nops += 1;
    data.resize(data.len().div_ceil(512) * 512, 0);
    (data, nops)
}
