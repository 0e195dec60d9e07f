//! Directory, da, attr, remote-value, bmbt and AG btree blocks.

use super::*;

pub(super) fn dir3_hdr(b: &[u8], out: &mut Out, group: &str) {
    table!(out, b, group, 0usize, XfsDir3BlkHdr, "";
        magic => "magic number: which kind of directory block this is",
        crc => "CRC32c of the whole block (little-endian)",
        blkno => "daddr of this block (self-description)",
        lsn => "log sequence number of the last write",
        uuid => "the filesystem's metadata UUID",
        owner => "the directory inode that owns this block",
    );
}

pub(super) fn dir_block(
    b: &[u8],
    out: &mut Out,
    magic: u64,
    v5: bool,
    sb: &Superblock,
) -> (String, String) {
    let group = "directory block header";
    let free = magic == u64::from(XFS_DIR2_FREE_MAGIC) || magic == u64::from(XFS_DIR3_FREE_MAGIC);
    if free {
        if v5 {
            dir3_hdr(b, out, group);
        } else {
            out.raw(b, group, "magic", 0, 4, "magic number \"XD2F\"");
        }
        let base = if v5 { size_of::<XfsDir3BlkHdr>() } else { 4 };
        out.raw(
            b,
            group,
            "firstdb",
            base,
            4,
            "first data block whose best free space this block lists",
        );
        out.raw(
            b,
            group,
            "nvalid",
            base.saturating_add(4),
            4,
            "entries of the bests array in use",
        );
        out.raw(
            b,
            group,
            "nused",
            base.saturating_add(8),
            4,
            "entries naming a data block that exists",
        );
        let start = if v5 {
            out.raw(b, group, "pad", base.saturating_add(12), 4, "padding");
            base.saturating_add(16)
        } else {
            base.saturating_add(12)
        };
        let nvalid = usize::try_from(be(b, base.saturating_add(4), 4).unwrap_or(0))
            .unwrap_or(0)
            .min(b.len().saturating_sub(start) / 2);
        bests(b, out, "directory free index", start, nvalid);
        return (
            "directory free index block".into(),
            "A node-form directory's free index: for each data block, the length of its largest free region, so a new entry finds room without reading every block.".into(),
        );
    }
    let hdr_len = if v5 {
        dir3_hdr(b, out, group);
        for i in 0..3usize {
            let o = offset_of!(XfsDir3DataHdr, best_free).saturating_add(i.saturating_mul(4));
            out.raw(
                b,
                group,
                &format!("best_free[{i}].offset"),
                o,
                2,
                "offset of one of the three largest free regions",
            );
            out.raw(
                b,
                group,
                &format!("best_free[{i}].length"),
                o.saturating_add(2),
                2,
                "its length in bytes",
            );
        }
        out.raw(
            b,
            group,
            "pad",
            offset_of!(XfsDir3DataHdr, pad),
            4,
            "padding to 8 bytes",
        );
        size_of::<XfsDir3DataHdr>()
    } else {
        out.raw(
            b,
            group,
            "magic",
            0,
            4,
            "magic number: which kind of directory block this is",
        );
        for i in 0..3usize {
            let o = 4usize.saturating_add(i.saturating_mul(4));
            out.raw(
                b,
                group,
                &format!("bestfree[{i}].offset"),
                o,
                2,
                "offset of one of the three largest free regions",
            );
            out.raw(
                b,
                group,
                &format!("bestfree[{i}].length"),
                o.saturating_add(2),
                2,
                "its length in bytes",
            );
        }
        16
    };
    let block =
        magic == u64::from(XFS_DIR2_BLOCK_MAGIC) || magic == u64::from(XFS_DIR3_BLOCK_MAGIC);
    let mut end = b.len();
    if block {
        // The tail: leaf count and stale count in the last 8 bytes, the
        // leaf entries (hash, address) before it.
        let tail = b.len().saturating_sub(8);
        out.raw(
            b,
            "block tail",
            "count",
            tail,
            4,
            "leaf entries in this block (stale included)",
        );
        out.raw(
            b,
            "block tail",
            "stale",
            tail.saturating_add(4),
            4,
            "leaf entries no longer used",
        );
        let count = usize::try_from(be(b, tail, 4).unwrap_or(0))
            .unwrap_or(0)
            .min(tail / 8);
        end = tail.saturating_sub(count.saturating_mul(8));
        leaf_entries(b, out, end, count);
    }
    // Entries and unused regions, walked from the header.
    let ftype = v5 || sb.features2 & 0x200 != 0;
    let mut off = hdr_len;
    let mut n = 0usize;
    while off.saturating_add(8) <= end && out.fields.len() < MAX_HEX_FIELDS {
        let tag = be(b, off, 2).unwrap_or(0);
        if tag == 0xffff {
            let len = usize::try_from(be(b, off.saturating_add(2), 2).unwrap_or(0)).unwrap_or(0);
            if len < 8 || len % 8 != 0 {
                break;
            }
            out.add(
                "unused",
                format!("unused@{off}"),
                off,
                len.min(end.saturating_sub(off)),
                format!("{len} free bytes"),
                "a free region (freetag 0xffff, length, ..., tag)",
            );
            off = off.saturating_add(len);
            continue;
        }
        let namelen = usize::from(b.get(off.saturating_add(8)).copied().unwrap_or(0));
        let entsize = 11usize
            .saturating_add(namelen)
            .saturating_add(usize::from(ftype))
            .div_ceil(8)
            .saturating_mul(8);
        if namelen == 0 || off.saturating_add(entsize) > end {
            break;
        }
        let name: String = b
            .get(off.saturating_add(9)..off.saturating_add(9).saturating_add(namelen))
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .unwrap_or_default();
        let g = format!("entry {n}");
        out.raw(
            b,
            &g,
            &format!("entry[{n}].inumber"),
            off,
            8,
            "inode this name points to",
        );
        out.raw(
            b,
            &g,
            &format!("entry[{n}].namelen"),
            off.saturating_add(8),
            1,
            "name length",
        );
        out.add(
            &g,
            format!("entry[{n}].name"),
            off.saturating_add(9),
            namelen,
            format!("{name:?}"),
            "the name, not NUL-terminated",
        );
        if ftype {
            out.raw(
                b,
                &g,
                &format!("entry[{n}].ftype"),
                off.saturating_add(9).saturating_add(namelen),
                1,
                "file type, so readdir need not read the inode",
            );
        }
        out.raw(
            b,
            &g,
            &format!("entry[{n}].tag"),
            off.saturating_add(entsize).saturating_sub(2),
            2,
            "offset of this entry in the block, to find its start from its end",
        );
        off = off.saturating_add(entsize);
        n = n.saturating_add(1);
    }
    if block {
        (
            "directory block (single-block directory)".into(),
            "A directory that fits one directory block: a header with the three largest free regions, the entries (inode number, name, file type) and free regions in between, then at the end a sorted table of name hashes pointing back at the entries, and a tail with their count.".into(),
        )
    } else {
        (
            "directory data block".into(),
            "One data block of a larger directory: a header with the three largest free regions, then entries (inode number, name, file type) and free regions. The name hashes that find them live in separate leaf blocks.".into(),
        )
    }
}

pub(super) fn da_header(b: &[u8], out: &mut Out, v5: bool, what: &str) -> usize {
    let group = format!("{what} header");
    out.raw(
        b,
        &group,
        "forw",
        0,
        4,
        "next block at this level (directory/attr block number), 0 if none",
    );
    out.raw(
        b,
        &group,
        "back",
        4,
        4,
        "previous block at this level, 0 if none",
    );
    out.raw(
        b,
        &group,
        "magic",
        8,
        2,
        "magic number: which kind of da block this is",
    );
    out.raw(b, &group, "pad", 10, 2, "padding");
    if v5 {
        out.raw(
            b,
            &group,
            "crc",
            12,
            4,
            "CRC32c of the whole block (little-endian)",
        );
        out.raw(
            b,
            &group,
            "blkno",
            16,
            8,
            "daddr of this block (self-description)",
        );
        out.raw(
            b,
            &group,
            "lsn",
            24,
            8,
            "log sequence number of the last write",
        );
        out.raw(b, &group, "uuid", 32, 16, "the filesystem's metadata UUID");
        out.raw(b, &group, "owner", 48, 8, "the inode that owns this block");
        56
    } else {
        12
    }
}

pub(super) fn leaf_hdr_tail(b: &[u8], out: &mut Out, v5: bool) {
    let base = if v5 { 56 } else { 12 };
    out.raw(
        b,
        "directory leaf header",
        "count",
        base,
        2,
        "leaf entries (stale included)",
    );
    out.raw(
        b,
        "directory leaf header",
        "stale",
        base.saturating_add(2),
        2,
        "stale entries",
    );
    let first = if v5 { 64 } else { 16 };
    let count = usize::try_from(be(b, base, 2).unwrap_or(0)).unwrap_or(0);
    let count = count.min(b.len().saturating_sub(first) / 8);
    leaf_entries(b, out, first, count);
    // A leaf1 block ends with the best free space of every data block and
    // their count (xfs_dir2_leaf_tail).
    let magic = be(b, offset_of!(XfsDaBlkinfo, magic), 2).unwrap_or(0);
    if magic == u64::from(XFS_DIR2_LEAF1_MAGIC) || magic == u64::from(XFS_DIR3_LEAF1_MAGIC) {
        let tail = b.len().saturating_sub(4);
        let g = "directory leaf tail";
        out.raw(
            b,
            g,
            "bestcount",
            tail,
            4,
            "data blocks the bests array covers",
        );
        let entries_end = first.saturating_add(count.saturating_mul(8));
        let n = usize::try_from(be(b, tail, 4).unwrap_or(0))
            .unwrap_or(0)
            .min(tail.saturating_sub(entries_end) / 2);
        let start = tail.saturating_sub(n.saturating_mul(2));
        bests(b, out, g, start, n);
    }
}

/// The best free space of `n` data blocks from byte `start`: `bests[i]`.
fn bests(b: &[u8], out: &mut Out, group: &str, start: usize, n: usize) {
    for i in 0..n {
        out.raw(
            b,
            group,
            &format!("bests[{i}]"),
            start.saturating_add(i.saturating_mul(2)),
            2,
            "length of the largest free region in that data block (0xffff: the block does not exist)",
        );
    }
}

/// A directory leaf's (hash, address) entries from byte `first`.
pub(super) fn leaf_entries(b: &[u8], out: &mut Out, first: usize, count: usize) {
    for i in 0..count {
        let o = first.saturating_add(i.saturating_mul(8));
        out.raw(
            b,
            "leaf entries",
            &format!("ents[{i}].hashval"),
            o,
            4,
            "hash of a name",
        );
        out.raw(
            b,
            "leaf entries",
            &format!("ents[{i}].address"),
            o.saturating_add(4),
            4,
            "where its entry is, in 8-byte units from the start of the directory's data",
        );
    }
}

pub(super) fn da_node(b: &[u8], out: &mut Out, v5: bool) -> (String, String) {
    let base = da_header(b, out, v5, "da node");
    out.raw(
        b,
        "da node header",
        "count",
        base,
        2,
        "entries in this node",
    );
    out.raw(
        b,
        "da node header",
        "level",
        base.saturating_add(2),
        2,
        "height above the leaves (1: children are leaves)",
    );
    let first = if v5 {
        out.raw(
            b,
            "da node header",
            "pad32",
            base.saturating_add(4),
            4,
            "padding",
        );
        size_of::<XfsDa3NodeHdr>()
    } else {
        size_of::<XfsDaNodeHdr>()
    };
    let count = usize::try_from(be(b, base, 2).unwrap_or(0)).unwrap_or(0);
    for i in 0..count.min(b.len().saturating_sub(first) / 8) {
        let o = first.saturating_add(i.saturating_mul(8));
        out.raw(
            b,
            "node entries",
            &format!("btree[{i}].hashval"),
            o,
            4,
            "the highest name hash in this child",
        );
        out.raw(
            b,
            "node entries",
            &format!("btree[{i}].before"),
            o.saturating_add(4),
            4,
            "the child's block number in the fork",
        );
    }
    (
        "da btree node".into(),
        "An interior node of a directory's or attr fork's hash btree: pairs of (highest hash below, child block). Lookups hash the name and descend.".into(),
    )
}

pub(super) fn attr_leaf(b: &[u8], out: &mut Out, v5: bool) -> (String, String) {
    let base = da_header(b, out, v5, "attr leaf");
    let g = "attr leaf header";
    out.raw(b, g, "count", base, 2, "entries in this leaf");
    out.raw(
        b,
        g,
        "usedbytes",
        base.saturating_add(2),
        2,
        "bytes of names and values in use",
    );
    out.raw(
        b,
        g,
        "firstused",
        base.saturating_add(4),
        2,
        "offset of the lowest name/value in the block",
    );
    out.raw(
        b,
        g,
        "holes",
        base.saturating_add(6),
        1,
        "set when freed space needs compacting",
    );
    out.raw(b, g, "pad1", base.saturating_add(7), 1, "padding");
    for i in 0..3usize {
        let o = base.saturating_add(8).saturating_add(i.saturating_mul(4));
        out.raw(
            b,
            g,
            &format!("freemap[{i}].base"),
            o,
            2,
            "start of a free region",
        );
        out.raw(
            b,
            g,
            &format!("freemap[{i}].size"),
            o.saturating_add(2),
            2,
            "its length",
        );
    }
    let first = if v5 {
        out.raw(b, g, "pad2", base.saturating_add(20), 4, "padding");
        size_of::<XfsAttr3LeafHdr>()
    } else {
        size_of::<XfsAttrLeafHdr>()
    };
    let count = usize::try_from(be(b, base, 2).unwrap_or(0)).unwrap_or(0);
    for i in 0..count.min(b.len().saturating_sub(first) / 8) {
        let o = first.saturating_add(i.saturating_mul(8));
        let ge = "attr leaf entries";
        out.raw(
            b,
            ge,
            &format!("entries[{i}].hashval"),
            o,
            4,
            "hash of the name",
        );
        out.raw(
            b,
            ge,
            &format!("entries[{i}].nameidx"),
            o.saturating_add(4),
            2,
            "offset of the name (and local value) in this block",
        );
        out.raw(
            b,
            ge,
            &format!("entries[{i}].flags"),
            o.saturating_add(6),
            1,
            "namespace (user, trusted, secure, parent), local or remote value, incomplete",
        );
        out.raw(
            b,
            ge,
            &format!("entries[{i}].pad2"),
            o.saturating_add(7),
            1,
            "padding",
        );
    }
    attr_leaf_names(b, out, first, count);
    (
        "attr leaf block".into(),
        "A leaf of the extended attributes: a header, a table of entries sorted by name hash growing down from the top, and names with their values (or, for large values, pointers to remote value blocks) packed up from the bottom.".into(),
    )
}

/// The names and values an attr leaf's entries point at
/// (`xfs_attr_leaf_name_local`: value length, name length, name, value;
/// `xfs_attr_leaf_name_remote`: value block, value length, name length,
/// name), named as xfs_db names them (`nvlist[i]`).
fn attr_leaf_names(b: &[u8], out: &mut Out, first: usize, count: usize) {
    const LOCAL: u8 = 0x01;
    let g = "attr leaf names";
    for i in 0..count.min(b.len().saturating_sub(first) / 8) {
        let e = first.saturating_add(i.saturating_mul(8));
        let Some(idx) = be(b, e.saturating_add(4), 2).and_then(|v| usize::try_from(v).ok()) else {
            continue;
        };
        let flags = b.get(e.saturating_add(6)).copied().unwrap_or(0);
        // A name can only lie past the entry table.
        if idx < first.saturating_add(count.saturating_mul(8)) || idx >= b.len() {
            continue;
        }
        let text = |a: usize, n: usize| -> String {
            b.get(a..a.saturating_add(n))
                .map(|s| format!("{:?}", String::from_utf8_lossy(s)))
                .unwrap_or_default()
        };
        let nv = format!("nvlist[{i}]");
        if flags & LOCAL != 0 {
            let valuelen = usize::try_from(be(b, idx, 2).unwrap_or(0)).unwrap_or(0);
            let namelen = usize::from(b.get(idx.saturating_add(2)).copied().unwrap_or(0));
            out.raw(b, g, &format!("{nv}.valuelen"), idx, 2, "value length");
            out.raw(
                b,
                g,
                &format!("{nv}.namelen"),
                idx.saturating_add(2),
                1,
                "name length",
            );
            let name_at = idx.saturating_add(3);
            out.add(
                g,
                format!("{nv}.name"),
                name_at,
                namelen,
                text(name_at, namelen),
                "the name, without its namespace prefix",
            );
            let value_at = name_at.saturating_add(namelen);
            out.add(
                g,
                format!("{nv}.value"),
                value_at,
                valuelen,
                text(value_at, valuelen),
                "the value, kept in this block",
            );
        } else {
            let namelen = usize::from(b.get(idx.saturating_add(8)).copied().unwrap_or(0));
            out.raw(
                b,
                g,
                &format!("{nv}.valueblk"),
                idx,
                4,
                "first block of the value, in attr-fork blocks",
            );
            out.raw(
                b,
                g,
                &format!("{nv}.valuelen"),
                idx.saturating_add(4),
                4,
                "value length, in bytes, in remote value blocks",
            );
            out.raw(
                b,
                g,
                &format!("{nv}.namelen"),
                idx.saturating_add(8),
                1,
                "name length",
            );
            out.add(
                g,
                format!("{nv}.name"),
                idx.saturating_add(9),
                namelen,
                text(idx.saturating_add(9), namelen),
                "the name, without its namespace prefix",
            );
        }
    }
}

pub(super) fn remote_hdr(b: &[u8], out: &mut Out, symlink: bool) -> (String, String) {
    // `xfs_dsymlink_hdr` and `xfs_attr3_rmt_hdr` have the same layout.
    if symlink {
        let g = "symlink block header";
        table!(out, b, g, 0usize, XfsDsymlinkHdr, "sl_";
            sl_magic => "magic number \"XSLM\"",
            sl_offset => "byte offset of this block's piece in the whole target",
            sl_bytes => "bytes of the target in this block",
            sl_crc => "CRC32c of header and data (little-endian)",
            sl_uuid => "the filesystem's metadata UUID",
            sl_owner => "inode of the symbolic link",
            sl_blkno => "daddr of this block",
            sl_lsn => "log sequence number of the last write",
        );
    } else {
        let g = "remote value header";
        table!(out, b, g, 0usize, XfsAttr3RmtHdr, "rm_";
            rm_magic => "magic number \"XARM\"",
            rm_offset => "byte offset of this block's piece in the whole value",
            rm_bytes => "bytes of the value in this block",
            rm_crc => "CRC32c of header and data (little-endian)",
            rm_uuid => "the filesystem's metadata UUID",
            rm_owner => "inode whose xattr this value is",
            rm_blkno => "daddr of this block",
            rm_lsn => "log sequence number of the last write",
        );
    }
    // The piece of the target or value this block carries.
    let hdr = size_of::<XfsAttr3RmtHdr>();
    let bytes = be(b, offset_of!(XfsAttr3RmtHdr, rm_bytes), 4)
        .and_then(|v| usize::try_from(v).ok())
        .unwrap_or(0)
        .min(b.len().saturating_sub(hdr));
    let text = b
        .get(hdr..hdr.saturating_add(bytes))
        .map(|s| format!("{:?}", String::from_utf8_lossy(s)))
        .unwrap_or_default();
    if symlink {
        out.add(
            "symlink target",
            "data",
            hdr,
            bytes,
            text,
            "this block's piece of the link's target (no terminating NUL)",
        );
        (
            "symlink block".into(),
            "The target of a symbolic link too long for the inode, after a self-describing header. The kernel writes the target one extent at a time, so one header covers all the blocks of its extent and the target runs on across them.".into(),
        )
    } else {
        out.add(
            "remote value",
            "data",
            hdr,
            bytes,
            text,
            "this block's piece of the xattr value; the leaf entry that names it gives the whole length",
        );
        (
            "remote attr value block".into(),
            "A piece of an xattr value too large for its leaf, after a self-describing header. The leaf entry holds the name and the value's first block in the attr fork; the value goes on block after block, each with a header of its own.".into(),
        )
    }
}

pub(super) fn bmbt_block(b: &[u8], out: &mut Out, v5: bool) -> (String, String) {
    let g = "bmbt block header";
    table!(out, b, g, 0usize, XfsBtreeBlockLong, "bb_";
        bb_magic => "magic number \"BMA3\" (v5) or \"BMAP\"",
        bb_level => "height above the leaves (0: a leaf of extent records)",
        bb_numrecs => "records (leaf) or keys (node) in this block",
        bb_leftsib => "left sibling (filesystem block), all ones if none",
        bb_rightsib => "right sibling, all ones if none",
    );
    if v5 {
        table!(out, b, g, 0usize, XfsBtreeBlockLong, "bb_";
            bb_blkno => "daddr of this block",
            bb_lsn => "log sequence number of the last write",
            bb_uuid => "the filesystem's metadata UUID",
            bb_owner => "the inode whose fork this tree maps",
            bb_crc => "CRC32c of the block (little-endian)",
            bb_pad => "padding",
        );
    }
    let hdr = if v5 {
        size_of::<XfsBtreeBlockLong>()
    } else {
        24
    };
    let level = be(b, offset_of!(XfsBtreeBlockLong, bb_level), 2).unwrap_or(0);
    let n = usize::try_from(be(b, offset_of!(XfsBtreeBlockLong, bb_numrecs), 2).unwrap_or(0))
        .unwrap_or(0);
    if level == 0 {
        for i in 0..n.min(b.len().saturating_sub(hdr) / 16) {
            let o = hdr.saturating_add(i.saturating_mul(16));
            extent_field(b, out, "extent records", &format!("recs[{i}]"), o);
        }
    } else {
        let maxrecs = b.len().saturating_sub(hdr) / 16;
        for i in 0..n.min(maxrecs) {
            let o = hdr.saturating_add(i.saturating_mul(8));
            out.raw(
                b,
                "keys",
                &format!("keys[{i}]"),
                o,
                8,
                "first file offset under the child",
            );
            let p = hdr
                .saturating_add(maxrecs.saturating_mul(8))
                .saturating_add(i.saturating_mul(8));
            out.raw(
                b,
                "pointers",
                &format!("ptrs[{i}]"),
                p,
                8,
                "the child's filesystem block",
            );
        }
    }
    (
        "bmbt block".into(),
        "A block of an inode's block-map btree, used when a fork has more extents than fit in the inode: leaves hold extent records (file offset, block, length), nodes hold keys and pointers.".into(),
    )
}

pub(super) fn ag_tree_of(magic: u64, v5: bool) -> Option<AgTree> {
    [
        AgTree::Bno,
        AgTree::Cnt,
        AgTree::Ino,
        AgTree::Fino,
        AgTree::Rmap,
        AgTree::Refcount,
    ]
    .into_iter()
    .find(|t| t.magic(v5).map(u64::from) == Some(magic))
}

pub(super) fn ag_btree_block<R: ReadAt>(
    fs: &Fs<R>,
    b: &[u8],
    out: &mut Out,
    tree: AgTree,
    agno: AgNumber,
    daddr: u64,
    notes: &mut Vec<String>,
) -> (String, String) {
    let g = format!("{} block header", tree.btree_name());
    let v5 = fs.geo.v5;
    table!(out, b, &g, 0usize, XfsBtreeSblock, "bb_";
        bb_magic => "magic number: which AG btree this block belongs to",
        bb_level => "height above the leaves (0: a leaf of records)",
        bb_numrecs => "records (leaf) or keys (node) in this block",
        bb_leftsib => "left sibling (AG block), all ones if none",
        bb_rightsib => "right sibling, all ones if none",
    );
    if v5 {
        table!(out, b, &g, 0usize, XfsBtreeSblock, "bb_";
            bb_blkno => "daddr of this block",
            bb_lsn => "log sequence number of the last write",
            bb_uuid => "the filesystem's metadata UUID",
            bb_owner => "the AG this block belongs to",
            bb_crc => "CRC32c of the block (little-endian)",
        );
    }
    let hdr = btree::header_len(v5);
    let ag_bbs = u64::from(fs.geo.agblocks)
        .saturating_mul(u64::from(fs.geo.blocksize) / BB)
        .max(1);
    let agbno = u32::try_from(
        daddr
            .checked_rem(ag_bbs)
            .unwrap_or(0)
            .checked_div(u64::from(fs.geo.blocksize) / BB)
            .unwrap_or(0),
    )
    .unwrap_or(0);
    let ctx = BlockCtx::new(fs, agno);
    match btree::parse_block(b, tree, &ctx, AgBlock(agbno), Daddr(daddr)) {
        Ok(blk) => {
            notes.extend(blk.problems.iter().cloned());
            match &blk.content {
                BlockContent::Leaf(recs) => {
                    let rl = tree.rec_len();
                    for (i, r) in recs.iter().enumerate() {
                        let o = hdr.saturating_add(i.saturating_mul(rl));
                        out.add(
                            "records",
                            format!("recs[{i}]"),
                            o,
                            rl,
                            record_text(r),
                            tree.meaning(),
                        );
                    }
                }
                BlockContent::Node(entries) => {
                    let kl = tree.key_len();
                    let maxk = btree::maxrecs(tree, fs.geo.blocksize, v5, false);
                    for (i, e) in entries.iter().enumerate() {
                        let o = hdr.saturating_add(i.saturating_mul(kl));
                        out.add(
                            "keys",
                            format!("keys[{i}]"),
                            o,
                            kl,
                            key_text(&e.key),
                            "the lowest key under the child (and, for the rmapbt, the highest)",
                        );
                        let p = hdr
                            .saturating_add(maxk.saturating_mul(kl))
                            .saturating_add(i.saturating_mul(4));
                        out.raw(
                            b,
                            "pointers",
                            &format!("ptrs[{i}]"),
                            p,
                            4,
                            "the child's AG block",
                        );
                    }
                }
            }
        }
        Err(e) => notes.push(e.to_string()),
    }
    (
        format!("{} block", tree.btree_name()),
        format!("A block of the AG's {}: {}. Leaves hold records, nodes hold keys and pointers to children; every block of a level is chained to its siblings.", tree.btree_name(), tree.meaning()),
    )
}

/// A leaf record of any AG btree in words.
pub fn record_text(r: &btree::Record) -> String {
    match r {
        btree::Record::Alloc(a) => {
            format!("startblock {}, blockcount {}", a.startblock, a.blockcount)
        }
        btree::Record::Inobt(c) => format!(
            "startino {}, holemask {:#06x}, count {}, freecount {}, free {:#018x}",
            c.startino, c.holemask, c.count, c.freecount, c.free
        ),
        btree::Record::Rmap(m) => format!(
            "startblock {}, blockcount {}, owner {}, offset {}{}{}{}",
            m.startblock,
            m.blockcount,
            btree::owner_name(m.owner).map_or_else(|| m.owner.to_string(), str::to_string),
            m.offset,
            if m.attr_fork { ", attr fork" } else { "" },
            if m.bmbt_block { ", bmbt block" } else { "" },
            if m.unwritten { ", unwritten" } else { "" }
        ),
        btree::Record::Refcount(c) => format!(
            "startblock {}{}, blockcount {}, refcount {}",
            c.startblock,
            if c.cow { " (CoW)" } else { "" },
            c.blockcount,
            c.refcount
        ),
    }
}

pub(super) fn key_text(k: &btree::Key) -> String {
    match k {
        btree::Key::Alloc(a) => format!("startblock {}, blockcount {}", a.startblock, a.blockcount),
        btree::Key::Inobt { startino } => format!("startino {startino}"),
        btree::Key::Rmap { low, high } => format!("low {low:?}, high {high:?}"),
        btree::Key::Refcount { startblock, cow } => {
            format!(
                "startblock {startblock}{}",
                if *cow { " (CoW)" } else { "" }
            )
        }
    }
}
