//! An opened filesystem: the image, its superblock and validated geometry,
//! and block-level reads by address space. Every structure-level reader
//! (AG headers, inodes, directories, attributes) starts from here.

use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::BBSIZE;
use crate::xfs::image::Image;
use crate::xfs::read::ReadAt;
use crate::xfs::sb::{read_superblock, Geometry, Superblock};
use crate::xfs::types::{AgBlock, AgIno, AgNumber, Daddr, FsBlock, Ino};

pub struct Fs<R: ReadAt> {
    pub img: Image<R>,
    pub sb: Superblock,
    pub geo: Geometry,
    /// The external log device (`sb_logstart` 0), when one was given: the
    /// log is all of it from byte 0.
    pub logdev: Option<Image<R>>,
}

impl<R: ReadAt> Fs<R> {
    /// Read the superblock and refuse a geometry that would make reading on
    /// wrong.
    pub fn open(img: Image<R>) -> Result<Self> {
        let sb = read_superblock(&img)?;
        let geo = sb.geometry()?;
        Ok(Fs {
            img,
            sb,
            geo,
            logdev: None,
        })
    }

    /// The same filesystem with its log read from `log` when the log is
    /// external (`sb_logstart` 0); an internal log is still read from the
    /// image. The log device is only read when the log is.
    pub fn with_logdev(mut self, log: Image<R>) -> Self {
        self.logdev = Some(log);
        self
    }

    /// The log is on another device (`sb_logstart` 0).
    pub fn has_external_log(&self) -> bool {
        self.sb.logstart == 0
    }

    /// The UUID metadata blocks carry (`sb_meta_uuid` with META_UUID, else `sb_uuid`).
    pub fn meta_uuid(&self) -> [u8; 16] {
        if self.sb.features_incompat & (1 << 2) != 0 {
            self.sb.meta_uuid
        } else {
            self.sb.uuid
        }
    }

    /// Read `len` bytes starting at sector `daddr`.
    pub fn read_daddr(&self, structure: &'static str, daddr: Daddr, len: u64) -> Result<Vec<u8>> {
        let off = daddr.byte_offset().ok_or(Error::OutOfBounds {
            structure,
            offset: u64::MAX,
            len,
            image_len: self.img.len(),
        })?;
        self.img.read(structure, off, len)
    }

    /// Read `count` filesystem blocks starting at the packed block `fsb`.
    pub fn read_fsblocks(
        &self,
        structure: &'static str,
        fsb: FsBlock,
        count: u32,
    ) -> Result<Vec<u8>> {
        let daddr = self.geo.fsb_to_daddr(fsb).ok_or_else(|| {
            Error::corrupt(
                structure,
                Location::FsBlock { fsb: fsb.0 },
                format!("block {} (AG-packed) is outside the filesystem", fsb.0),
            )
        })?;
        let len = u64::from(count).saturating_mul(u64::from(self.geo.blocksize));
        self.read_daddr(structure, daddr, len)
    }

    /// Read one block of AG `agno` at AG block `agbno`.
    pub fn read_agblock(
        &self,
        structure: &'static str,
        agno: AgNumber,
        agbno: AgBlock,
    ) -> Result<Vec<u8>> {
        let daddr = self.geo.agb_to_daddr(agno, agbno).ok_or_else(|| {
            Error::corrupt(
                structure,
                Location::AgBlock {
                    agno: agno.0,
                    agbno: agbno.0,
                },
                format!("AG {} block {} is outside the filesystem", agno.0, agbno.0),
            )
        })?;
        self.read_daddr(structure, daddr, u64::from(self.geo.blocksize))
    }

    /// Read the sector-sized AG header number `n` (0 sb, 1 AGF, 2 AGI, 3 AGFL).
    pub fn read_ag_header(
        &self,
        structure: &'static str,
        agno: AgNumber,
        n: u64,
    ) -> Result<(Daddr, Vec<u8>)> {
        let base = self.geo.agb_to_daddr(agno, AgBlock(0)).ok_or_else(|| {
            Error::corrupt(
                structure,
                Location::Ag { agno: agno.0 },
                format!("AG {} does not exist ({} AGs)", agno.0, self.geo.agcount),
            )
        })?;
        let per_sector = u64::from(self.geo.sectsize) / BBSIZE;
        let daddr = Daddr(base.0.saturating_add(n.saturating_mul(per_sector)));
        let bytes = self.read_daddr(structure, daddr, u64::from(self.geo.sectsize))?;
        Ok((daddr, bytes))
    }

    /// Split an inode number, checking that it points inside an AG.
    pub fn split_ino(&self, ino: Ino) -> Result<(AgNumber, AgIno)> {
        let agino_bits = u32::from(self.geo.agblklog).saturating_add(u32::from(self.geo.inopblog));
        let agno = ino.0.checked_shr(agino_bits).unwrap_or(u64::MAX);
        let mask = 1u64.checked_shl(agino_bits).unwrap_or(0).saturating_sub(1);
        let agino = ino.0 & mask;
        let bad = |why: String| {
            Error::corrupt(
                "inode number",
                Location::Inode { ino: ino.0 },
                format!("inode {}: {why}", ino.0),
            )
        };
        if agno >= u64::from(self.geo.agcount) {
            return Err(bad(format!("AG {agno} does not exist")));
        }
        let agbno = agino
            .checked_shr(u32::from(self.geo.inopblog))
            .unwrap_or(u64::MAX);
        if agbno >= u64::from(self.geo.agblocks) {
            return Err(bad(format!("AG block {agbno} is beyond the AG")));
        }
        Ok((
            AgNumber(u32::try_from(agno).unwrap_or(u32::MAX)),
            AgIno(u32::try_from(agino).unwrap_or(u32::MAX)),
        ))
    }

    /// Byte offset of an inode in the image.
    pub fn inode_offset(&self, ino: Ino) -> Result<u64> {
        let (agno, agino) = self.split_ino(ino)?;
        let agbno = AgBlock(
            agino
                .0
                .checked_shr(u32::from(self.geo.inopblog))
                .unwrap_or(u32::MAX),
        );
        let slot_mask = 1u32
            .checked_shl(u32::from(self.geo.inopblog))
            .unwrap_or(1)
            .saturating_sub(1);
        let slot = u64::from(agino.0 & slot_mask);
        let daddr = self.geo.agb_to_daddr(agno, agbno).ok_or_else(|| {
            Error::corrupt(
                "inode number",
                Location::Inode { ino: ino.0 },
                format!("inode {} lies outside the filesystem", ino.0),
            )
        })?;
        daddr
            .byte_offset()
            .and_then(|b| b.checked_add(slot.checked_mul(u64::from(self.geo.inodesize))?))
            .ok_or_else(|| {
                Error::corrupt(
                    "inode number",
                    Location::Daddr { daddr: daddr.0 },
                    "offset overflows",
                )
            })
    }
}

/// What a v5 self-describing block header must say, and where to find it.
pub struct V5Check<'a> {
    pub structure: &'static str,
    /// Daddr the block was read from (its `blkno` must say the same).
    pub daddr: Daddr,
    /// Byte offset of the little-endian CRC field.
    pub crc_off: usize,
    pub uuid: &'a [u8; 16],
    /// Byte offset of the 16-byte uuid field.
    pub uuid_off: usize,
    /// Byte offset of the big-endian 64-bit blkno field, if the block has one.
    pub blkno_off: Option<usize>,
    /// Byte offset and expected value of the owner field (AG number as
    /// big-endian u32 or inode number as big-endian u64), if any.
    pub owner: Option<(usize, Owner)>,
}

#[derive(Clone, Copy, Debug)]
pub enum Owner {
    Ag(u32),
    Ino(u64),
}

/// One failed check of a v5 block, kept so the rest stays browsable.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Verify {
    pub crc_ok: bool,
    /// Problems found (empty when the block verified).
    pub problems: Vec<String>,
}

/// Check CRC, uuid, blkno and owner of a v5 block. Never fails: the result
/// lists what was wrong.
pub fn verify_v5(bytes: &[u8], c: &V5Check<'_>) -> Verify {
    let mut problems = Vec::new();
    let stored = c
        .crc_off
        .checked_add(4)
        .and_then(|e| bytes.get(c.crc_off..e))
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .map(u32::from_le_bytes);
    let computed = crate::xfs::sb::crc_with_hole(bytes, c.crc_off);
    let crc_ok = stored == Some(computed);
    if !crc_ok {
        problems.push(match stored {
            Some(s) => format!("CRC stored {s:#010x}, computed {computed:#010x}"),
            None => "too short for its CRC".to_string(),
        });
    }
    let uuid = c
        .uuid_off
        .checked_add(16)
        .and_then(|e| bytes.get(c.uuid_off..e));
    if uuid != Some(c.uuid.as_slice()) {
        problems.push("uuid does not match the filesystem".into());
    }
    if let Some(off) = c.blkno_off {
        let blkno = be64(bytes, off);
        if blkno != Some(c.daddr.0) {
            problems.push(format!(
                "blkno {} but read from daddr {}",
                blkno.map_or("?".into(), |b| b.to_string()),
                c.daddr.0
            ));
        }
    }
    match c.owner {
        Some((off, Owner::Ag(agno))) => {
            let found = be32(bytes, off);
            if found != Some(agno) {
                problems.push(format!(
                    "owner AG {} but found in AG {agno}",
                    found.map_or("?".into(), |b| b.to_string())
                ));
            }
        }
        Some((off, Owner::Ino(ino))) => {
            let found = be64(bytes, off);
            if found != Some(ino) {
                problems.push(format!(
                    "owner inode {} but expected {ino}",
                    found.map_or("?".into(), |b| b.to_string())
                ));
            }
        }
        None => {}
    }
    Verify { crc_ok, problems }
}

/// Big-endian reads that fail soft: `None` when out of range.
pub fn be16(b: &[u8], off: usize) -> Option<u16> {
    b.get(off..off.checked_add(2)?)?
        .try_into()
        .ok()
        .map(u16::from_be_bytes)
}
pub fn be32(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off.checked_add(4)?)?
        .try_into()
        .ok()
        .map(u32::from_be_bytes)
}
pub fn be64(b: &[u8], off: usize) -> Option<u64> {
    b.get(off..off.checked_add(8)?)?
        .try_into()
        .ok()
        .map(u64::from_be_bytes)
}
