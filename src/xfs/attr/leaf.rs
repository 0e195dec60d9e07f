//! Attr leaf blocks: the hash-ordered entries, their names and local
//! values, and where remote values start (kernel: `xfs_attr_leaf.c`).

use super::{check_flags, AttrEntry, AttrGeometry, AttrNamespace, AttrValue, LEAF};
use crate::xfs::dabtree::{blkinfo_size, read_blkinfo, DaBuf, Problems};
use crate::xfs::error::Result;
use crate::xfs::format::attr::*;
use crate::xfs::fs::{be16, be32};

/// A parsed attr leaf block.
#[derive(Clone, Debug)]
pub struct AttrLeaf {
    pub forw: u32,
    pub back: u32,
    /// `(hashval, entry)`, INCOMPLETE ones included.
    pub entries: Vec<(u32, AttrEntry)>,
    pub problems: Problems,
}

fn round4(n: usize) -> usize {
    n.saturating_add(3) & !3
}

/// Parse an attr leaf block.
pub fn parse_leaf(buf: &DaBuf, ag: &AttrGeometry) -> Result<AttrLeaf> {
    let owner = ag.da.owner.0;
    let info = read_blkinfo(buf, &ag.da, LEAF)?;
    if info.magic != ag.leaf_magic() {
        return Err(buf.bad(
            LEAF,
            8,
            format!(
                "inode {owner} attr block {}: magic {:#06x}, expected {:#06x}",
                buf.dablk,
                info.magic,
                ag.leaf_magic()
            ),
        ));
    }
    let b = &buf.bytes;
    let bs = b.len();
    let bi = blkinfo_size(ag.da.v5);
    let count = usize::from(be16(b, bi).unwrap_or(0));
    let usedbytes = usize::from(be16(b, bi.saturating_add(2)).unwrap_or(0));
    let mut firstused = usize::from(be16(b, bi.saturating_add(4)).unwrap_or(0));
    if ag.da.v5 && firstused == 0 {
        // 0 stands for 65536, which does not fit in 16 bits.
        firstused = bs;
    }
    let hdr = if ag.da.v5 {
        core::mem::size_of::<XfsAttr3LeafHdr>()
    } else {
        core::mem::size_of::<XfsAttrLeafHdr>()
    };
    let table_end = hdr.saturating_add(count.saturating_mul(8));
    if table_end > bs || table_end > firstused || firstused > bs {
        return Err(buf.bad(
            LEAF,
            bi,
            format!(
                "inode {owner}: count {count} / firstused {firstused} do not fit a {bs}-byte block"
            ),
        ));
    }
    let mut problems = Vec::new();
    let mut entries = Vec::with_capacity(count);
    let mut used = 0usize;
    let mut prev_hash = 0u32;
    for i in 0..count {
        let eo = hdr.saturating_add(i.saturating_mul(8));
        let hash = be32(b, eo).unwrap_or(0);
        let nameidx = usize::from(be16(b, eo.saturating_add(4)).unwrap_or(0));
        let flags = b.get(eo.saturating_add(6)).copied().unwrap_or(0);
        let bad = |d: String| buf.bad(LEAF, eo, format!("inode {owner}: entry {i}: {d}"));
        if hash < prev_hash {
            problems.push(bad(format!(
                "hash {hash:#010x} is below the previous {prev_hash:#010x}"
            )));
        }
        prev_hash = hash;
        if nameidx < firstused || nameidx >= bs {
            problems.push(bad(format!(
                "name at byte {nameidx}, outside the name area {firstused}..{bs}"
            )));
            continue;
        }
        let (name, value, size) = if flags & XFS_ATTR_LOCAL != 0 {
            let valuelen = usize::from(be16(b, nameidx).unwrap_or(0));
            let namelen = usize::from(b.get(nameidx.saturating_add(2)).copied().unwrap_or(0));
            let n0 = nameidx.saturating_add(3);
            let v0 = n0.saturating_add(namelen);
            let end = v0.saturating_add(valuelen);
            if end > bs {
                problems.push(bad(format!(
                    "local name/value at {nameidx} ({namelen} + {valuelen} bytes) runs past the block"
                )));
                continue;
            }
            (
                b.get(n0..v0).unwrap_or(&[]).to_vec(),
                AttrValue::Inline {
                    bytes: b.get(v0..end).unwrap_or(&[]).to_vec(),
                },
                round4(3usize.saturating_add(namelen).saturating_add(valuelen)),
            )
        } else {
            let valueblk = be32(b, nameidx).unwrap_or(0);
            let valuelen = be32(b, nameidx.saturating_add(4)).unwrap_or(0);
            let namelen = usize::from(b.get(nameidx.saturating_add(8)).copied().unwrap_or(0));
            let n0 = nameidx.saturating_add(9);
            let end = n0.saturating_add(namelen);
            if end > bs {
                problems.push(bad(format!(
                    "remote name at {nameidx} ({namelen} bytes) runs past the block"
                )));
                continue;
            }
            if valuelen > XFS_XATTR_SIZE_MAX {
                problems.push(bad(format!(
                    "remote value of {valuelen} bytes (at most {XFS_XATTR_SIZE_MAX})"
                )));
            }
            if valueblk == 0 && flags & XFS_ATTR_INCOMPLETE == 0 {
                problems.push(bad("remote value at attr block 0 (the leaf itself)".into()));
            }
            (
                b.get(n0..end).unwrap_or(&[]).to_vec(),
                AttrValue::Remote {
                    blk: valueblk,
                    len: valuelen,
                },
                round4(11usize.saturating_add(namelen)),
            )
        };
        used = used.saturating_add(size);
        if name.is_empty() {
            problems.push(bad("empty name".into()));
        }
        if let Some(p) = check_flags(ag, flags) {
            problems.push(bad(p));
        }
        if flags & XFS_ATTR_INCOMPLETE == 0 {
            if let Some(want) = ag.hash(flags, &name, &value) {
                if want != hash {
                    problems.push(bad(format!(
                        "hash {hash:#010x} but \"{}\" hashes to {want:#010x}",
                        String::from_utf8_lossy(&name)
                    )));
                }
            }
        }
        entries.push((
            hash,
            AttrEntry {
                flags,
                namespace: AttrNamespace::from_flags(flags),
                name,
                value,
            },
        ));
    }
    if used != usedbytes && problems.is_empty() {
        problems.push(buf.bad(
            LEAF,
            bi.saturating_add(2),
            format!("inode {owner}: usedbytes {usedbytes} but the names and values take {used}"),
        ));
    }
    Ok(AttrLeaf {
        forw: info.forw,
        back: info.back,
        entries,
        problems,
    })
}
