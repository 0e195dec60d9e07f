//! Inodes (core, extent records, shortform directories and xattrs) and
//! log record headers.

use super::*;

pub(super) fn log_record(daddr: u64, bytes: Vec<u8>) -> HexBlock {
    let mut out = Out {
        fields: Vec::new(),
        len: bytes.len(),
    };
    let b = &bytes;
    table!(out, b, "log record header", 0usize, XlogRecHeader, "h_";
        h_magicno => "magic number 0xfeedbabe: a log record starts here",
        h_cycle => "how many times the log had wrapped when this record was written; recovery finds the head where the cycle drops",
        h_version => "record format: 2 for logs with stripe units and v5 filesystems",
        h_len => "bytes of log data in this record, after its header sectors",
        h_lsn => "log sequence number of this record: cycle in the high 32 bits, block in the low",
        h_tail_lsn => "where the log's tail was when this record was written: recovery starts there",
        h_crc => "CRC32c of the header and the data (little-endian); 0 on old logs",
        h_prev_block => "block of the previous record, for walking backwards",
        h_num_logops => "log operations (transaction headers, items, commits) starting in this record",
        h_cycle_data => "the first word of each data sector, saved here: on disk that word holds the cycle number",
        h_fmt => "the writer's byte order (1: little-endian, 2: big-endian)",
        h_fs_uuid => "the filesystem this log belongs to",
        h_size => "size of the in-memory log buffer that wrote this record (32 KiB to 256 KiB)",
    );
    HexBlock {
        daddr,
        bytes,
        structure: "log record header".into(),
        explanation: "The first sector of a record in the log. Every record starts with this header; the log's data follows in the next sectors, with the first word of each sector replaced by the cycle number so a torn write shows. Records carry checkpoints, not single transactions: each one holds the items a delayed-logging checkpoint committed.".into(),
        fields: out.fields,
        notes: Vec::new(),
        logged: Vec::new(),
        log_device: false,
    }
}

pub(super) fn inode<R: ReadAt>(fs: &Fs<R>, daddr: u64, bytes: Vec<u8>) -> HexBlock {
    let mut out = Out {
        fields: Vec::new(),
        len: bytes.len(),
    };
    let b = &bytes;
    let ino = be(b, offset_of!(XfsDinode, di_ino), 8).unwrap_or(0);
    let v3 = be(b, offset_of!(XfsDinode, di_version), 1).unwrap_or(0) >= 3;
    let group = format!("inode {ino} core");
    table!(out, b, &group, 0usize, XfsDinode, "di_";
        di_magic => "magic number 0x494e, \"IN\"",
        di_mode => "file type and permission bits (as st_mode)",
        di_version => "inode version: 3 on v5 (CRC) filesystems, 2 before",
        di_format => "how the data fork is stored: 1 local (in the inode), 2 extents, 3 btree, 0 device",
        di_metatype => "v3 metadata inodes: what metadata file this is; 0 otherwise",
        di_uid => "owner user id",
        di_gid => "owner group id",
        di_nlink => "link count: directory entries naming this inode (plus . and .. for directories)",
        di_projid_lo => "project id, low 16 bits",
        di_projid_hi => "project id, high 16 bits",
        di_big_nextents => "data fork extent count when the large extent counters feature is on; otherwise padding and a flush counter",
        di_atime => "last access time",
        di_mtime => "last data modification time",
        di_ctime => "last inode change time",
        di_size => "file size in bytes (for a directory, bytes of its entries)",
        di_nblocks => "blocks held by both forks, btree blocks included",
        di_extsize => "extent size hint in blocks",
        di_nextents => "data fork extents (without large extent counters)",
        di_anextents => "attr fork extents (without large extent counters)",
        di_forkoff => "where the attr fork starts: this value times 8 bytes after the core; 0 means no attr fork",
        di_aformat => "how the attr fork is stored: 1 local (shortform), 2 extents, 3 btree",
        di_dmevmask => "DMAPI event mask (unused)",
        di_dmstate => "DMAPI state (unused)",
        di_flags => "inode flags: realtime, immutable, append-only, sync, noatime, ...",
        di_gen => "generation number, changed each time the inode number is reused",
        di_next_unlinked => "next inode on this AGI unlinked list (all ones: none)",
    );
    if v3 {
        table!(out, b, &group, 0usize, XfsDinode, "di_";
            di_crc => "CRC32c of the whole inode (little-endian)",
            di_changecount => "change counter: one more each transaction that logs this inode's core",
            di_lsn => "log sequence number of the last write of this inode to disk",
            di_flags2 => "more flags: DAX, reflink, CoW extent size hint, big timestamps, large extent counters",
            di_cowextsize => "copy-on-write extent size hint in blocks",
            di_pad2 => "padding",
            di_crtime => "creation time",
            di_ino => "this inode's own number (self-description)",
            di_uuid => "the filesystem's metadata UUID",
        );
    }
    let core = if v3 { size_of::<XfsDinode>() } else { 100 };
    let forkoff = usize::from(
        b.get(offset_of!(XfsDinode, di_forkoff))
            .copied()
            .unwrap_or(0),
    );
    let isize = usize::from(fs.geo.inodesize).min(b.len());
    let attr_at = if forkoff == 0 {
        isize
    } else {
        core.saturating_add(forkoff.saturating_mul(8)).min(isize)
    };
    let mode = be(b, offset_of!(XfsDinode, di_mode), 2).unwrap_or(0);
    let flags2 = if v3 {
        be(b, offset_of!(XfsDinode, di_flags2), 8).unwrap_or(0)
    } else {
        0
    };
    let nrext64 = flags2 & (1 << 4) != 0;
    let (dext, aext) = if nrext64 {
        (
            be(b, offset_of!(XfsDinode, di_big_nextents), 8).unwrap_or(0),
            be(b, offset_of!(XfsDinode, di_nextents), 4).unwrap_or(0),
        )
    } else {
        (
            be(b, offset_of!(XfsDinode, di_nextents), 4).unwrap_or(0),
            be(b, offset_of!(XfsDinode, di_anextents), 2).unwrap_or(0),
        )
    };
    let ftype = v3 || fs.sb.features2 & 0x200 != 0;
    let dg = format!("inode {ino} data fork");
    match b.get(offset_of!(XfsDinode, di_format)).copied() {
        Some(2) => extent_records(b, &mut out, &dg, "u.bmx", core, attr_at, dext),
        Some(3) => bmbt_root(b, &mut out, &dg, "u.bmbt", core, attr_at),
        Some(1) if mode & 0o170000 == 0o040000 => sf_dir(b, &mut out, &dg, core, attr_at, ftype),
        _ => {}
    }
    if forkoff != 0 {
        let ag = format!("inode {ino} attr fork");
        match b.get(offset_of!(XfsDinode, di_aformat)).copied() {
            Some(2) => extent_records(b, &mut out, &ag, "a.bmx", attr_at, isize, aext),
            Some(3) => bmbt_root(b, &mut out, &ag, "a.bmbt", attr_at, isize),
            Some(1) => sf_attr(b, &mut out, &ag, attr_at, isize),
            _ => {}
        }
    }
    out.add(
        &format!("inode {ino} forks"),
        "u",
        core,
        attr_at.saturating_sub(core),
        format!("{} bytes", attr_at.saturating_sub(core)),
        "the data fork: file data or entries held in the inode, extent records, or a btree root",
    );
    if forkoff != 0 {
        out.add(
            &format!("inode {ino} forks"),
            "a",
            attr_at,
            isize.saturating_sub(attr_at),
            format!("{} bytes", isize.saturating_sub(attr_at)),
            "the attr fork: extended attributes held in the inode (shortform), extent records, or a btree root",
        );
    }
    HexBlock {
        daddr,
        bytes,
        structure: format!("inode {ino}"),
        explanation: "An on-disk inode: the core (type, owner, times, size, counts, where the attr fork starts) and then the literal area, split between the data fork and, from di_forkoff, the attr fork. Small directories, symlinks and xattrs live right here; larger ones are extents or btree roots pointing to blocks.".into(),
        fields: out.fields,
        notes: Vec::new(),
        logged: Vec::new(),
        log_device: false,
    }
}

/// A bmbt root in the fork `[start, end)` (`struct xfs_bmdr_block`: level
/// and record count, then the keys, then the pointers, each array as long
/// as the fork holds: `xfs_bmdr_maxrecs`), named as xfs_db names them
/// (`PREFIX.level`, `PREFIX.numrecs`, `PREFIX.keys[i]`, `PREFIX.ptrs[i]`,
/// from 1).
pub(super) fn bmbt_root(
    b: &[u8],
    out: &mut Out,
    group: &str,
    prefix: &str,
    start: usize,
    end: usize,
) {
    out.raw(
        b,
        group,
        &format!("{prefix}.level"),
        start,
        2,
        "height of the tree below this root (1: the pointers lead to leaves)",
    );
    out.raw(
        b,
        group,
        &format!("{prefix}.numrecs"),
        start.saturating_add(2),
        2,
        "keys and pointers in use",
    );
    let maxrecs = end.saturating_sub(start).saturating_sub(4) / 16;
    let n = usize::try_from(be(b, start.saturating_add(2), 2).unwrap_or(0))
        .unwrap_or(0)
        .min(maxrecs);
    let keys = start.saturating_add(4);
    let ptrs = keys.saturating_add(maxrecs.saturating_mul(8));
    for i in 0..n {
        out.add(
            group,
            format!("{prefix}.keys[{}]", i.saturating_add(1)),
            keys.saturating_add(i.saturating_mul(8)),
            8,
            be(b, keys.saturating_add(i.saturating_mul(8)), 8)
                .map(|v| format!("file offset {v}"))
                .unwrap_or_default(),
            "the first file offset (in blocks) under the pointer beside it",
        );
    }
    for i in 0..n {
        out.add(
            group,
            format!("{prefix}.ptrs[{}]", i.saturating_add(1)),
            ptrs.saturating_add(i.saturating_mul(8)),
            8,
            be(b, ptrs.saturating_add(i.saturating_mul(8)), 8)
                .map(|v| format!("block {v}"))
                .unwrap_or_default(),
            "a filesystem block of the next level down",
        );
    }
}

/// Extent records (`[start, end)` of the inode, at most `n`), as
/// `PREFIX[i]`.
pub(super) fn extent_records(
    b: &[u8],
    out: &mut Out,
    group: &str,
    prefix: &str,
    start: usize,
    end: usize,
    n: u64,
) {
    let fit = end.saturating_sub(start) / 16;
    for i in 0..fit.min(usize::try_from(n).unwrap_or(usize::MAX)) {
        extent_field(
            b,
            out,
            group,
            &format!("{prefix}[{i}]"),
            start.saturating_add(i.saturating_mul(16)),
        );
    }
}

/// A shortform directory in the data fork: header, then entries.
pub(super) fn sf_dir(b: &[u8], out: &mut Out, group: &str, start: usize, end: usize, ftype: bool) {
    let count = usize::from(b.get(start).copied().unwrap_or(0));
    let i8 = b.get(start.saturating_add(1)).copied().unwrap_or(0) != 0;
    let isz: usize = if i8 { 8 } else { 4 };
    out.raw(
        b,
        group,
        "sfdir.count",
        start,
        1,
        "entries in this shortform directory",
    );
    out.raw(
        b,
        group,
        "sfdir.i8count",
        start.saturating_add(1),
        1,
        "entries needing 8-byte inode numbers (then all use 8)",
    );
    out.raw(
        b,
        group,
        "sfdir.parent",
        start.saturating_add(2),
        isz,
        "the parent directory's inode (..)",
    );
    let mut o = start.saturating_add(2).saturating_add(isz);
    for i in 0..count {
        let namelen = usize::from(b.get(o).copied().unwrap_or(0));
        let len = 3usize
            .saturating_add(namelen)
            .saturating_add(usize::from(ftype))
            .saturating_add(isz);
        if namelen == 0 || o.saturating_add(len) > end {
            break;
        }
        let name: String = b
            .get(o.saturating_add(3)..o.saturating_add(3).saturating_add(namelen))
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .unwrap_or_default();
        out.raw(
            b,
            group,
            &format!("sfdir.list[{i}].namelen"),
            o,
            1,
            "name length",
        );
        out.raw(
            b,
            group,
            &format!("sfdir.list[{i}].offset"),
            o.saturating_add(1),
            2,
            "where the entry would sit in a data block (the readdir cookie)",
        );
        out.add(
            group,
            format!("sfdir.list[{i}].name"),
            o.saturating_add(3),
            namelen,
            format!("{name:?}"),
            "the name",
        );
        let mut p = o.saturating_add(3).saturating_add(namelen);
        if ftype {
            out.raw(
                b,
                group,
                &format!("sfdir.list[{i}].ftype"),
                p,
                1,
                "file type",
            );
            p = p.saturating_add(1);
        }
        out.raw(
            b,
            group,
            &format!("sfdir.list[{i}].inumber"),
            p,
            isz,
            "the inode this name points to",
        );
        o = o.saturating_add(len);
    }
}

/// Shortform extended attributes in the attr fork: header, then entries.
pub(super) fn sf_attr(b: &[u8], out: &mut Out, group: &str, start: usize, end: usize) {
    let count = usize::from(b.get(start.saturating_add(2)).copied().unwrap_or(0));
    out.raw(
        b,
        group,
        "sfattr.totsize",
        start,
        2,
        "bytes of the header and every entry",
    );
    out.raw(
        b,
        group,
        "sfattr.count",
        start.saturating_add(2),
        1,
        "attributes in the fork",
    );
    out.raw(
        b,
        group,
        "sfattr.padding",
        start.saturating_add(3),
        1,
        "padding",
    );
    let mut o = start.saturating_add(4);
    for i in 0..count {
        let namelen = usize::from(b.get(o).copied().unwrap_or(0));
        let valuelen = usize::from(b.get(o.saturating_add(1)).copied().unwrap_or(0));
        let len = 3usize.saturating_add(namelen).saturating_add(valuelen);
        if o.saturating_add(len) > end {
            break;
        }
        let text = |a: usize, n: usize| -> String {
            b.get(a..a.saturating_add(n))
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .unwrap_or_default()
        };
        out.raw(
            b,
            group,
            &format!("sfattr.list[{i}].namelen"),
            o,
            1,
            "name length",
        );
        out.raw(
            b,
            group,
            &format!("sfattr.list[{i}].valuelen"),
            o.saturating_add(1),
            1,
            "value length",
        );
        out.raw(
            b,
            group,
            &format!("sfattr.list[{i}].flags"),
            o.saturating_add(2),
            1,
            "namespace: 0 user, 2 trusted (root), 4 secure, 8 parent pointer",
        );
        out.add(
            group,
            format!("sfattr.list[{i}].name"),
            o.saturating_add(3),
            namelen,
            format!("{:?}", text(o.saturating_add(3), namelen)),
            "the name, without its namespace prefix",
        );
        out.add(
            group,
            format!("sfattr.list[{i}].value"),
            o.saturating_add(3).saturating_add(namelen),
            valuelen,
            format!(
                "{:?}",
                text(o.saturating_add(3).saturating_add(namelen), valuelen)
            ),
            "the value",
        );
        o = o.saturating_add(len);
    }
}
