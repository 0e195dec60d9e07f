//! Remote values: a value kept in blocks of its own, each v5 block with
//! its own header (kernel: `xfs_attr_remote.c`).

use super::{AttrEntry, AttrGeometry, AttrValue, RMT};
use crate::xfs::dabtree::{read_da_block, ForkSource};
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::attr::*;
use crate::xfs::fs::{be32, verify_v5, Owner, V5Check};
use crate::xfs::sb::Geometry;

/// Bytes of value payload per remote block.
pub fn remote_payload(ag: &AttrGeometry) -> u32 {
    if ag.da.v5 {
        ag.da
            .fsb_size
            .saturating_sub(u32::try_from(core::mem::size_of::<XfsAttr3RmtHdr>()).unwrap_or(0))
    } else {
        ag.da.fsb_size
    }
}

/// Read a remote value of `len` bytes starting at attr fork block `blk`,
/// checking each v5 block header (magic, offset, bytes, CRC, uuid, owner,
/// blkno).
pub fn read_remote_value<S: ForkSource + ?Sized>(
    src: &S,
    geo: &Geometry,
    ag: &AttrGeometry,
    blk: u32,
    len: u32,
) -> Result<Vec<u8>> {
    let owner = ag.da.owner.0;
    let err = |d: String| {
        Error::corrupt(
            RMT,
            Location::Inode { ino: owner },
            format!("inode {owner}: {d}"),
        )
    };
    if len > XFS_XATTR_SIZE_MAX {
        return Err(err(format!(
            "value of {len} bytes (at most {XFS_XATTR_SIZE_MAX})"
        )));
    }
    let per = remote_payload(ag);
    if per == 0 {
        return Err(err("block too small for a remote value".into()));
    }
    let nblocks = len.div_ceil(per);
    let mut out = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    let hdr = core::mem::size_of::<XfsAttr3RmtHdr>();
    for i in 0..nblocks {
        let fb = u64::from(blk).saturating_add(u64::from(i));
        let buf = read_da_block(src, geo, &ag.da, RMT, fb)?;
        let want_off = i.saturating_mul(per);
        let want_bytes = len.saturating_sub(want_off).min(per);
        let want_usize = usize::try_from(want_bytes).unwrap_or(0);
        if ag.da.v5 {
            let b = &buf.bytes;
            let magic = be32(b, 0).unwrap_or(0);
            if magic != XFS_ATTR3_RMT_MAGIC {
                return Err(buf.bad(
                    RMT,
                    0,
                    format!(
                        "inode {owner} attr block {fb}: magic {magic:#010x}, expected {XFS_ATTR3_RMT_MAGIC:#010x}"
                    ),
                ));
            }
            let v = verify_v5(
                b,
                &V5Check {
                    structure: RMT,
                    daddr: buf.daddr,
                    crc_off: XFS_ATTR3_RMT_CRC_OFF,
                    uuid: &ag.da.uuid,
                    uuid_off: 16,
                    blkno_off: Some(40),
                    owner: Some((32, Owner::Ino(owner))),
                },
            );
            if !v.problems.is_empty() {
                return Err(buf.bad(
                    RMT,
                    0,
                    format!("inode {owner} attr block {fb}: {}", v.problems.join("; ")),
                ));
            }
            let off = be32(b, 4).unwrap_or(0);
            let bytes = be32(b, 8).unwrap_or(0);
            if off != want_off || bytes != want_bytes {
                return Err(buf.bad(
                    RMT,
                    4,
                    format!(
                        "inode {owner} attr block {fb}: holds bytes {off}..+{bytes} of the value, expected {want_off}..+{want_bytes}"
                    ),
                ));
            }
            let payload = b
                .get(hdr..hdr.saturating_add(want_usize))
                .ok_or_else(|| buf.bad(RMT, hdr, "payload past the end of the block"))?;
            out.extend_from_slice(payload);
        } else {
            let payload = buf
                .bytes
                .get(..want_usize)
                .ok_or_else(|| buf.bad(RMT, 0, "payload past the end of the block"))?;
            out.extend_from_slice(payload);
        }
    }
    Ok(out)
}

/// The value of an attribute: inline bytes, or its remote blocks read now.
pub fn read_value<S: ForkSource + ?Sized>(
    src: &S,
    geo: &Geometry,
    ag: &AttrGeometry,
    e: &AttrEntry,
) -> Result<Vec<u8>> {
    match &e.value {
        AttrValue::Inline { bytes } => Ok(bytes.clone()),
        AttrValue::Remote { blk, len } => read_remote_value(src, geo, ag, *blk, *len),
    }
}
