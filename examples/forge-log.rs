//! Appends checkpoints of intent items to the log of a cleanly
//! unmounted XFS image, so that the kernel's own recovery of that image
//! can serve as the oracle for intents this machine's kernel never logs
//! itself (attribute intents need logged xattrs, a debug-only knob); or,
//! with `--trans`, typed transactions as kernels before delayed logging
//! wrote them (one transaction per operation, its type in `th_type`).
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
//!     inode:INO[:core|data|attr|all]  the inode as it is on disk: an
//!                                   XFS_LI_INODE item (the 56-byte
//!                                   xfs_inode_log_format, its cluster
//!                                   buffer as the kernel maps it), the
//!                                   core turned into the host-order
//!                                   xfs_log_dinode (XFS_ILOG_CORE); with
//!                                   data, attr or all also the raw bytes
//!                                   of that fork (both for all) when it
//!                                   is local (DDATA/ADATA: the shortform
//!                                   bytes, di_size or the attr totsize,
//!                                   rounded up to 4, which ilf_dsize or
//!                                   ilf_asize give too, as older kernels
//!                                   did; 6.x gives the true size) or
//!                                   extents with records (DEXT/AEXT); a
//!                                   device's rdev (DEV); a btree fork is
//!                                   not logged
//!     buf:DADDR:LEN_BBS[:BLFT]      LEN_BBS sectors at DADDR as they are
//!                                   on disk: an XFS_LI_BUF item, blf_flags
//!                                   0 (no buffer type, as kernels before
//!                                   3.10 wrote; a v5 kernel's recovery
//!                                   warns "Unknown buffer type 0!" and
//!                                   writes the buffer without a verifier,
//!                                   with a stack dump) or BLFT << 11 (the
//!                                   buffer type: 5 AGF, 7 AGI, ...), every
//!                                   128-byte chunk dirty, one data region
//!                                   per run of set bits (so one for the
//!                                   whole buffer)
//! forge-log IMAGE --trans TYPE --item ITEM ... [--trans TYPE --item ...]
//!   typed transactions, in log order: each --trans starts one, of type
//!   TYPE (a number, or the name the kernels before 4.1 gave it: 1
//!   SETATTR_NOT_SIZE, 2 SETATTR_SIZE, 3 INACTIVE, 4 CREATE, 5
//!   CREATE_TRUNC, 6 TRUNCATE_FILE, 7 REMOVE, 8 LINK, 9 RENAME, 10 MKDIR,
//!   11 RMDIR, 12 SYMLINK, 15 STRAT_WRITE, 19 ADDAFORK, 21 ATRUNCATE, 22
//!   ATTR_SET, 23 ATTR_RM, ... 42 CHECKPOINT; see TRANS_TYPES), whose
//!   items are the --item arguments after it up to the next --trans
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
//! A checkpoint's header has type 40 (XFS_TRANS_CHECKPOINT) and counts its
//! regions, as delayed logging does. With `--trans`, each transaction is
//! one record of its own (start, header, its items, commit; it must fit
//! 64 sectors), its header of type TYPE counting its items
//! (`th_num_items`, as `xfs_trans_fill_vecs` of the kernels before delayed
//! logging counted them), each with its own tid.
//!
//! Only for making fixtures: the layout is checked by `xfs_logprint` and by
//! the kernel accepting the record, not by this project's decoder.

use clap::{CommandFactory, FromArgMatches, Parser};
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};

#[derive(Parser)]
struct Args {
    image: String,
    /// KIND:... (see the top of this file)
    #[arg(long)]
    item: Vec<String>,
    /// Starts a typed transaction: TYPE, a number or a name of
    /// TRANS_TYPES; the --item arguments after it (up to the next
    /// --trans) are its items.
    #[arg(long)]
    trans: Vec<String>,
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

/// The transaction types of the kernels before 4.1 (`th_type`, from 1);
/// current kernels write only CHECKPOINT, numbered 40 since 4.1.
const TRANS_TYPES: [&str; 43] = [
    "SETATTR_NOT_SIZE",
    "SETATTR_SIZE",
    "INACTIVE",
    "CREATE",
    "CREATE_TRUNC",
    "TRUNCATE_FILE",
    "REMOVE",
    "LINK",
    "RENAME",
    "MKDIR",
    "RMDIR",
    "SYMLINK",
    "SET_DMATTRS",
    "GROWFS",
    "STRAT_WRITE",
    "DIOSTRAT",
    "WRITE_SYNC",
    "WRITEID",
    "ADDAFORK",
    "ATTRINVAL",
    "ATRUNCATE",
    "ATTR_SET",
    "ATTR_RM",
    "ATTR_FLAG",
    "CLEAR_AGI_BUCKET",
    "QM_SBCHANGE",
    "DUMMY1",
    "DUMMY2",
    "QM_QUOTAOFF",
    "QM_DQALLOC",
    "QM_SETQLIM",
    "QM_DQCLUSTER",
    "QM_QINOCREATE",
    "QM_QUOTAOFF_END",
    "SB_UNIT",
    "FSYNC_TS",
    "GROWFSRT_ALLOC",
    "GROWFSRT_ZERO",
    "GROWFSRT_FREE",
    "SWAPEXT",
    "SB_COUNT",
    "CHECKPOINT",
    "ICREATE",
];

/// A transaction type: a number, or a name of TRANS_TYPES.
fn trans_type(s: &str) -> u32 {
    if let Ok(n) = s.parse() {
        return n;
    }
    let i = TRANS_TYPES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(s))
        .unwrap_or_else(|| panic!("unknown transaction type {s}"));
    i as u32 + 1
}

fn trans_name(ty: u32) -> &'static str {
    ty.checked_sub(1)
        .and_then(|i| TRANS_TYPES.get(i as usize))
        .copied()
        .unwrap_or("?")
}

/// The inode cluster buffer holding inode `ino` as `xfs_imap` maps it
/// (chunks aligned): its daddr, its length in sectors and the inode's
/// byte offset in it.
fn inode_cluster(sb: &[u8], ino: u64) -> (u64, u32, u32) {
    let blocksize = u64::from(be32(sb, 4));
    let agblocks = u64::from(be32(sb, 84));
    let versionnum = u16::from_be_bytes([sb[100], sb[101]]);
    let isize = u64::from(u16::from_be_bytes([sb[104], sb[105]]));
    let inopblock = u64::from(u16::from_be_bytes([sb[106], sb[107]]));
    let inopblog = u32::from(sb[123]);
    let agblklog = u32::from(sb[124]);
    let inoalignmt = u64::from(be32(sb, 180));
    let v3 = versionnum & 0xf == 5;
    // xfs_ialloc_setup_geometry: 8 KiB, scaled by the inode size on v3
    // inodes when the chunk alignment allows it; at least a block.
    let mut raw = 8192u64;
    if v3 {
        let scaled = raw * (isize / 256);
        if inoalignmt >= scaled / blocksize {
            raw = scaled;
        }
    }
    let bpc = (raw / blocksize).max(1);
    let agno = ino >> (agblklog + inopblog);
    let agbno = (ino >> inopblog) & ((1 << agblklog) - 1);
    let offset = ino & ((1 << inopblog) - 1);
    let bbs = blocksize / 512;
    let daddr = |b: u64| (agno * agblocks + b) * bbs;
    if bpc == 1 {
        return (daddr(agbno), bbs as u32, (offset * isize) as u32);
    }
    let align = versionnum & 0x80 != 0 || v3;
    assert!(
        align && inoalignmt >= bpc,
        "inode chunks not aligned to clusters: the cluster of {ino} needs the inobt"
    );
    let chunk = agbno & !(inoalignmt - 1);
    let cluster = chunk + (agbno - chunk) / bpc * bpc;
    let boff = ((agbno - cluster) * inopblock + offset) * isize;
    (daddr(cluster), (bpc * bbs) as u32, boff as u32)
}

/// Converts the big-endian field of `n` bytes at `o` of `d` to host
/// (little-endian) order in `l`.
fn swap_field(d: &[u8], l: &mut [u8], o: usize, n: usize) {
    for i in 0..n {
        l[o + i] = d[o + n - 1 - i];
    }
}

/// `xfs_inode_to_log_dinode` of the on-disk inode `d`: the core in host
/// order (176 bytes for v3 inodes, 96 before), di_next_unlinked the dummy
/// NULLAGINO, di_crc 0, di_lsn the on-disk one.
fn log_dinode(d: &[u8]) -> Vec<u8> {
    let v3 = d[4] >= 3;
    let flags2 = if v3 { be64(d, 120) } else { 0 };
    let bigtime = v3 && flags2 & 8 != 0;
    let mut l = vec![0u8; if v3 { 176 } else { 96 }];
    // (offset, size) of the integers of the core up to di_gen.
    for (o, n) in [
        (0, 2),
        (2, 2),
        (4, 1),
        (5, 1),
        (6, 2),
        (8, 4),
        (12, 4),
        (16, 4),
        (20, 2),
        (22, 2),
        (56, 8),
        (64, 8),
        (72, 4),
        (76, 4),
        (80, 2),
        (82, 1),
        (83, 1),
        (84, 4),
        (88, 2),
        (90, 2),
        (92, 4),
    ] {
        swap_field(d, &mut l, o, n);
    }
    if v3 {
        // di_big_nextents or di_v3_pad.
        swap_field(d, &mut l, 24, 8);
    } else {
        // di_v2_pad, then di_flushiter.
        swap_field(d, &mut l, 30, 2);
    }
    let mut stamp = |o: usize| {
        if bigtime {
            swap_field(d, &mut l, o, 8);
        } else {
            swap_field(d, &mut l, o, 4);
            swap_field(d, &mut l, o + 4, 4);
        }
    };
    for o in [32, 40, 48] {
        stamp(o);
    }
    if v3 {
        stamp(144);
    }
    if v3 {
        for (o, n) in [(104, 8), (112, 8), (120, 8), (128, 4), (152, 8)] {
            swap_field(d, &mut l, o, n);
        }
        l[160..176].copy_from_slice(&d[160..176]);
    }
    l[96..100].fill(0xff);
    l
}

/// An inode item: the inode as it is on disk (see the top of this file).
fn inode_item(f: &mut std::fs::File, sb: &[u8], s: &str) -> Vec<Vec<u8>> {
    let (ino, what) = match s.split_once(':') {
        Some((i, w)) => (i.parse::<u64>().unwrap(), w),
        None => (s.parse::<u64>().unwrap(), "core"),
    };
    let (want_data, want_attr) = match what {
        "core" => (false, false),
        "data" => (true, false),
        "attr" => (false, true),
        "all" => (true, true),
        w => panic!("inode:INO[:core|data|attr|all], not {w}"),
    };
    let d = read_inode(f, sb, ino);
    let (blkno, len, boffset) = inode_cluster(sb, ino);
    let v3 = d[4] >= 3;
    let lit = if v3 { 176 } else { 100 };
    let forkoff = usize::from(d[82]) * 8;
    let dfork_end = if forkoff != 0 { lit + forkoff } else { d.len() };
    let nrext64 = v3 && be64(&d, 120) & 16 != 0;
    let (nextents, anextents) = if nrext64 {
        (be64(&d, 24), u64::from(be32(&d, 76)))
    } else {
        (
            u64::from(be32(&d, 76)),
            u64::from(u16::from_be_bytes([d[80], d[81]])),
        )
    };
    let mut fields = 1u32; // XFS_ILOG_CORE
    let mut rdev = 0u32;
    let mut regions = vec![log_dinode(&d)];
    let mut dsize = 0usize;
    let mut asize = 0usize;
    if want_data {
        let fork = &d[lit..dfork_end];
        let bytes = match d[5] {
            0 => {
                fields |= 0x10; // XFS_ILOG_DEV
                rdev = be32(fork, 0);
                0
            }
            1 => {
                fields |= 0x02; // XFS_ILOG_DDATA
                (be64(&d, 56) as usize).div_ceil(4) * 4
            }
            2 if nextents > 0 => {
                fields |= 0x04; // XFS_ILOG_DEXT
                nextents as usize * 16
            }
            _ => 0,
        };
        if bytes > 0 {
            regions.push(fork[..bytes].to_vec());
            dsize = bytes;
        }
    }
    if want_attr && forkoff != 0 {
        let fork = &d[lit + forkoff..];
        let bytes = match d[83] {
            1 => {
                fields |= 0x40; // XFS_ILOG_ADATA
                usize::from(u16::from_be_bytes([fork[0], fork[1]])).div_ceil(4) * 4
            }
            2 if anextents > 0 => {
                fields |= 0x80; // XFS_ILOG_AEXT
                anextents as usize * 16
            }
            _ => 0,
        };
        if bytes > 0 {
            regions.push(fork[..bytes].to_vec());
            asize = bytes;
        }
    }
    let mut ilf = Vec::new();
    ilf.extend(0x123bu16.to_le_bytes());
    ilf.extend((regions.len() as u16 + 1).to_le_bytes());
    ilf.extend(fields.to_le_bytes());
    ilf.extend((asize as u16).to_le_bytes());
    ilf.extend((dsize as u16).to_le_bytes());
    ilf.extend(0u32.to_le_bytes());
    ilf.extend(ino.to_le_bytes());
    let mut u = [0u8; 16];
    u[..4].copy_from_slice(&rdev.to_le_bytes());
    ilf.extend(u);
    ilf.extend(blkno.to_le_bytes());
    ilf.extend(len.to_le_bytes());
    ilf.extend(boffset.to_le_bytes());
    assert_eq!(ilf.len(), 56);
    regions.insert(0, ilf);
    regions
}

/// A buffer item: LEN_BBS sectors at DADDR as they are on disk, of buffer
/// type BLFT (0 when not given), every chunk dirty (see the top of this
/// file).
fn buf_item(f: &mut std::fs::File, s: &str) -> Vec<Vec<u8>> {
    let p: Vec<u64> = s.split(':').map(|x| x.parse().unwrap()).collect();
    assert!(matches!(p.len(), 2 | 3), "buf:DADDR:LEN_BBS[:BLFT]");
    let (daddr, len) = (p[0], p[1]);
    let blft = p.get(2).copied().unwrap_or(0);
    assert!(blft < 32, "a buffer type is 5 bits");
    assert!((1..=128).contains(&len), "a buffer of 1 to 128 sectors");
    let mut b = vec![0u8; (len * 512) as usize];
    f.seek(SeekFrom::Start(daddr * 512)).unwrap();
    f.read_exact(&mut b).unwrap();
    // XFS_BLF_CHUNK: one bit per 128 bytes, 32 to a map word.
    let chunks = b.len() / 128;
    let mut map = vec![0u32; chunks.div_ceil(32)];
    for c in 0..chunks {
        map[c / 32] |= 1 << (c % 32);
    }
    // One region per run of set bits (xfs_buf_item_format_segment).
    let mut regions = Vec::new();
    let mut c = 0;
    while c < chunks {
        if map[c / 32] & 1 << (c % 32) == 0 {
            c += 1;
            continue;
        }
        let start = c;
        while c < chunks && map[c / 32] & 1 << (c % 32) != 0 {
            c += 1;
        }
        regions.push(b[start * 128..c * 128].to_vec());
    }
    let mut blf = Vec::new();
    blf.extend(0x123cu16.to_le_bytes());
    blf.extend((regions.len() as u16 + 1).to_le_bytes());
    blf.extend(((blft as u16) << 11).to_le_bytes()); // blf_flags
    blf.extend((len as u16).to_le_bytes());
    blf.extend(daddr.to_le_bytes());
    blf.extend((map.len() as u32).to_le_bytes());
    for w in &map {
        blf.extend(w.to_le_bytes());
    }
    regions.insert(0, blf);
    regions
}

/// The regions of one ITEM (see the top of this file); `id` for intents.
fn make_item(f: &mut std::fs::File, sb: &[u8], s: &str, id: u64) -> Vec<Vec<u8>> {
    if let Some(a) = s.strip_prefix("attri:") {
        let a = parse_attri(a);
        let igen = if a.op >= 4 {
            be32(&read_inode(f, sb, a.ino), 92)
        } else {
            0
        };
        attri_regions(&a, id, igen)
    } else if let Some(x) = s.strip_prefix("xmi:") {
        xmi_item(f, sb, x, id)
    } else if let Some(q) = s.strip_prefix("dquot:") {
        dquot_item(q)
    } else if let Some(i) = s.strip_prefix("inode:") {
        inode_item(f, sb, i)
    } else if let Some(b) = s.strip_prefix("buf:") {
        buf_item(f, b)
    } else {
        extent_item(s, id)
    }
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

/// One log item: its regions.
type Item = Vec<Vec<u8>>;

fn main() {
    let matches = Args::command().get_matches();
    let args = Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // Where each --trans and --item stands on the command line: an item
    // belongs to the last --trans before it.
    let at = |id: &str| -> Vec<usize> {
        matches
            .indices_of(id)
            .map(|i| i.collect())
            .unwrap_or_default()
    };
    let (trans_at, item_at) = (at("trans"), at("item"));
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
    if args.item.is_empty() && args.trans.is_empty() {
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

    // The items in log order (intents numbered from 0xa7700000); the
    // records' tids count from 0x5eed0001.
    let tid: u32 = 0x5eed_0001;
    let mut items: Vec<Vec<Vec<u8>>> = Vec::new();
    for (i, s) in args.item.iter().enumerate() {
        let id = 0xa770_0000 + i as u64;
        items.push(make_item(&mut f, &sb, s, id));
    }
    let first_lsn = u64::from(cycle) << 32 | head;
    let mut head = head;
    let mut prev = prev;
    // Per record: its transaction's type, its items, and the count its
    // header gives.
    let mut records: Vec<(u32, Vec<Item>, u32)> = Vec::new();
    if trans_at.is_empty() {
        // One checkpoint per record; items that do not fit one record (64
        // sectors of data) go into the next checkpoint.
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
        for g in groups {
            // A checkpoint's header counts regions (log vectors), not items.
            let nregions: usize = g.iter().map(Vec::len).sum();
            records.push((40, g, nregions as u32));
        }
    } else {
        assert!(
            item_at.first().is_none_or(|&i| i > trans_at[0]),
            "every --item follows a --trans"
        );
        let mut items = items.into_iter().zip(item_at).peekable();
        for (k, ty) in args.trans.iter().enumerate() {
            let end = trans_at.get(k + 1).copied().unwrap_or(usize::MAX);
            let mut its = Vec::new();
            while let Some((it, _)) = items.next_if(|(_, i)| *i < end) {
                its.push(it);
            }
            let n = its.len() as u32;
            records.push((trans_type(ty), its, n));
        }
    }
    for (g, (ty, items, count)) in records.iter().enumerate() {
        let (mut data, nops) = transaction(tid + g as u32, *ty, items, *count);
        let data_bbs = data.len() as u64 / 512;
        assert!(
            data_bbs <= 64,
            "one header sector holds 64 cycle words (a transaction of {} bytes)",
            data.len()
        );
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
        let typed = if trans_at.is_empty() {
            String::new()
        } else {
            format!(", type {ty} {}, tid {:#x}", trans_name(*ty), tid + g as u32)
        };
        println!(
            "record at log block {head} (cycle {cycle}), {nops} ops, {} items, after the record at {prev}{typed}",
            items.len()
        );
        prev = head;
        head += 1 + data_bbs;
    }
}

/// One checkpoint's record data (start, header, the items' regions,
/// commit; padded to a sector) and its op count.
fn checkpoint(tid: u32, items: &[Vec<Vec<u8>>]) -> (Vec<u8>, u32) {
    let nregions: usize = items.iter().map(Vec::len).sum();
    transaction(tid, 40, items, nregions as u32)
}

/// One transaction's record data (start, header of type `ty` counting
/// `count`, the items' regions, commit; padded to a sector) and its op
/// count.
fn transaction(tid: u32, ty: u32, items: &[Vec<Vec<u8>>], count: u32) -> (Vec<u8>, u32) {
    let mut data = Vec::new();
    let mut nops = 0u32;
    data.extend(op(tid, &[], 0x01));
    nops += 1;
    let mut th = Vec::new();
    th.extend(0x5452_414eu32.to_le_bytes());
    th.extend(ty.to_le_bytes()); // XFS_TRANS_CHECKPOINT is 40
    th.extend(tid.to_le_bytes());
    th.extend(count.to_le_bytes());
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
