//! File content and symlink targets.
//!
//! Content is streamed through the data fork's extents in chunks of at most
//! [`CHUNK_BYTES`]: holes and unwritten extents read as zeros, extents past
//! `di_size` are ignored, and the last block is cut at `di_size`.
//!
//! Symlinks: LOCAL targets sit in the data fork; remote ones (v5) are one
//! buffer per extent, each starting with a 56-byte `XSLM` header whose CRC
//! covers the whole extent:
//! ```text
//!   0 magic "XSLM"  4 offset  8 bytes  12 crc (LE)  16 uuid  32 owner
//!  40 blkno  48 lsn  56 target bytes
//! ```
//! v4 remote symlinks are the target bytes with no header.

use crate::xfs::bmap::Fork;
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::dinode::{
    XFS_DSYMLINK_CRC_OFF, XFS_DSYMLINK_HDR_SIZE, XFS_SYMLINK_MAGIC, XFS_SYMLINK_MAXLEN,
};
use crate::xfs::fs::{be32, verify_v5, Fs, Owner, V5Check, Verify};
use crate::xfs::inode::{FileType, Inode};
use crate::xfs::read::ReadAt;
use serde::Serialize;

/// Largest piece handed to the `read_file` callback.
pub const CHUNK_BYTES: u64 = 1 << 20;

/// A symlink target and how its blocks checked out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Symlink {
    pub target: Vec<u8>,
    /// Always correct for inline targets; remote blocks' CRC, uuid, owner,
    /// blkno, offsets.
    pub verify: Verify,
    /// Whether the target sits in the inode.
    pub inline: bool,
}

fn file_err(ino: &Inode, detail: impl Into<String>) -> Error {
    Error::corrupt(
        "file",
        Location::Daddr {
            daddr: ino.location.daddr.0,
        },
        format!("inode {}: {}", ino.ino.0, detail.into()),
    )
}

impl<R: ReadAt> Fs<R> {
    /// The content of a regular file or the target of a symlink, streamed in
    /// chunks of at most [`CHUNK_BYTES`] into `f`. An error from `f` stops
    /// the read and is returned (a sparse file of exabytes streams zeros
    /// until the caller says stop).
    pub fn read_file(&self, ino: &Inode, f: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        self.read_file_range(ino, 0, u64::MAX, f)
    }

    /// Bytes `offset..offset+len` of a regular file (cut at `di_size`), or of
    /// a symlink's target, streamed like [`Self::read_file`].
    pub fn read_file_range(
        &self,
        ino: &Inode,
        offset: u64,
        len: u64,
        f: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let cut = |b: &[u8]| -> Vec<u8> {
            let s = usize::try_from(offset).unwrap_or(usize::MAX).min(b.len());
            let e = usize::try_from(offset.saturating_add(len))
                .unwrap_or(usize::MAX)
                .min(b.len());
            b.get(s..e).unwrap_or(&[]).to_vec()
        };
        match ino.file_type() {
            FileType::File => {}
            FileType::Symlink => {
                let t = self.symlink_target(ino)?;
                return f(&cut(&t));
            }
            t => {
                return Err(file_err(
                    ino,
                    format!("is a {}, not a regular file or symlink", t.name()),
                ))
            }
        }
        let fork = ino.data.ok()?;
        if let Fork::Local { bytes } = fork {
            return f(&cut(bytes));
        }
        if !matches!(fork, Fork::Extents { .. } | Fork::Btree { .. }) {
            return Err(file_err(
                ino,
                format!(
                    "data fork format {} cannot hold file content",
                    crate::xfs::inode::format_name(fork.format())
                ),
            ));
        }
        if ino.core.is_realtime() {
            return Err(Error::Unsupported {
                structure: "file",
                location: Location::Daddr {
                    daddr: ino.location.daddr.0,
                },
                detail: format!("inode {} keeps its data on the realtime device", ino.ino.0),
            });
        }
        let bs = u64::from(self.geo.blocksize).max(1);
        let chunk_blocks = CHUNK_BYTES.checked_div(bs).unwrap_or(1).max(1);
        let zeros = vec![0u8; usize::try_from(CHUNK_BYTES.max(bs)).unwrap_or(0)];
        let emit_zeros = |n: u64, f: &mut dyn FnMut(&[u8]) -> Result<()>| -> Result<()> {
            let mut n = n;
            while n > 0 {
                let k = n.min(u64::try_from(zeros.len()).unwrap_or(0)).max(1);
                f(zeros.get(..usize::try_from(k).unwrap_or(0)).unwrap_or(&[]))?;
                n = n.saturating_sub(k);
            }
            Ok(())
        };
        let end = ino.core.size.min(offset.saturating_add(len));
        let extents = fork.extents();
        let mut pos = offset;
        while pos < end {
            let fb = pos.checked_div(bs).unwrap_or(0);
            let in_block = pos.checked_rem(bs).unwrap_or(0);
            match fork.map(fb) {
                Some((fsb, left, unwritten)) => {
                    let n = left.min(chunk_blocks).max(1);
                    let run_end = fb.saturating_add(n).saturating_mul(bs).min(end);
                    let bytes = run_end.saturating_sub(pos);
                    if unwritten {
                        emit_zeros(bytes, f)?;
                    } else {
                        let buf = self.read_fsblocks(
                            "file data",
                            fsb,
                            u32::try_from(n).unwrap_or(u32::MAX),
                        )?;
                        let s = usize::try_from(in_block).unwrap_or(0);
                        let e = usize::try_from(in_block.saturating_add(bytes)).unwrap_or(0);
                        f(buf.get(s..e).unwrap_or(&[]))?;
                    }
                    pos = run_end;
                }
                None => {
                    // A hole up to the next extent (or the end).
                    let next = extents.partition_point(|e| e.file_block <= fb);
                    let hole_end = extents
                        .get(next)
                        .map_or(end, |e| e.file_block.saturating_mul(bs).min(end));
                    let run_end = hole_end.max(pos.saturating_add(1)).min(end);
                    emit_zeros(run_end.saturating_sub(pos), f)?;
                    pos = run_end;
                }
            }
        }
        Ok(())
    }

    /// A symlink's target with its checks (inline or remote).
    pub fn symlink(&self, ino: &Inode) -> Result<Symlink> {
        if ino.file_type() != FileType::Symlink {
            return Err(file_err(
                ino,
                format!("is a {}, not a symbolic link", ino.file_type().name()),
            ));
        }
        let size = ino.core.size;
        if size > XFS_SYMLINK_MAXLEN {
            return Err(file_err(
                ino,
                format!("symlink target of {size} bytes is longer than {XFS_SYMLINK_MAXLEN}"),
            ));
        }
        let fork = ino.data.ok()?;
        let mut verify = Verify {
            crc_ok: true,
            problems: Vec::new(),
        };
        match fork {
            Fork::Local { bytes } => {
                return Ok(Symlink {
                    target: bytes.clone(),
                    verify,
                    inline: true,
                })
            }
            Fork::Extents { .. } | Fork::Btree { .. } => {}
            other => {
                return Err(file_err(
                    ino,
                    format!(
                        "symlink data fork is {}",
                        crate::xfs::inode::format_name(other.format())
                    ),
                ))
            }
        }
        let want = usize::try_from(size).unwrap_or(0);
        let mut target = Vec::with_capacity(want);
        let uuid = self.meta_uuid();
        for (i, e) in fork.extents().iter().enumerate() {
            if target.len() >= want {
                break;
            }
            let n = u32::try_from(e.len)
                .ok()
                .filter(|n| *n <= 4)
                .ok_or_else(|| file_err(ino, format!("symlink extent {i} is {} blocks", e.len)))?;
            let buf = self.read_fsblocks("symlink block", e.start, n)?;
            if !self.geo.v5 {
                let take = want.saturating_sub(target.len()).min(buf.len());
                target.extend_from_slice(buf.get(..take).unwrap_or(&[]));
                continue;
            }
            let daddr = self
                .geo
                .fsb_to_daddr(e.start)
                .unwrap_or(crate::xfs::types::Daddr(0));
            let magic = be32(&buf, 0).unwrap_or(0);
            if magic != XFS_SYMLINK_MAGIC {
                return Err(Error::corrupt(
                    "symlink block",
                    Location::Daddr { daddr: daddr.0 },
                    format!(
                        "inode {}: magic {magic:#010x}, expected {XFS_SYMLINK_MAGIC:#010x} (\"XSLM\")",
                        ino.ino.0
                    ),
                ));
            }
            let v = symlink_block_checks(&buf, ino.ino.0, daddr, &uuid);
            verify.crc_ok &= v.crc_ok;
            verify.problems.extend(
                v.problems
                    .into_iter()
                    .map(|p| format!("block {}: {p}", e.start.0)),
            );
            let offset = be32(&buf, 4).unwrap_or(0);
            let bytes = be32(&buf, 8).unwrap_or(0);
            if usize::try_from(offset).ok() != Some(target.len()) {
                verify.problems.push(format!(
                    "block {}: sl_offset {offset} but {} bytes came before",
                    e.start.0,
                    target.len()
                ));
            }
            let payload = buf.get(XFS_DSYMLINK_HDR_SIZE..).unwrap_or(&[]);
            let take = usize::try_from(bytes)
                .unwrap_or(0)
                .min(payload.len())
                .min(want.saturating_sub(target.len()));
            if usize::try_from(bytes).ok() != Some(take) {
                verify.problems.push(format!(
                    "block {}: sl_bytes {bytes} does not fit ({take} used)",
                    e.start.0
                ));
            }
            target.extend_from_slice(payload.get(..take).unwrap_or(&[]));
        }
        if target.len() != want {
            verify.problems.push(format!(
                "target has {} bytes but di_size says {size}",
                target.len()
            ));
        }
        Ok(Symlink {
            target,
            verify,
            inline: false,
        })
    }

    /// A symlink's target; an error if a remote block fails its checks.
    pub fn symlink_target(&self, ino: &Inode) -> Result<Vec<u8>> {
        let s = self.symlink(ino)?;
        if let Some(p) = s.verify.problems.first() {
            return Err(file_err(ino, format!("symlink: {p}")));
        }
        Ok(s.target)
    }
}

/// The v5 checks of a remote symlink block of inode `ino` read from
/// `daddr` (`xfs_symlink_verify`, and the owner check of
/// `xfs_symlink_hdr_ok`): CRC, uuid, block number, owner.
pub fn symlink_block_checks(
    buf: &[u8],
    ino: u64,
    daddr: crate::xfs::types::Daddr,
    uuid: &[u8; 16],
) -> Verify {
    verify_v5(
        buf,
        &V5Check {
            structure: "symlink block",
            daddr,
            crc_off: XFS_DSYMLINK_CRC_OFF,
            uuid,
            uuid_off: 16,
            blkno_off: Some(40),
            owner: Some((32, Owner::Ino(ino))),
        },
    )
}
