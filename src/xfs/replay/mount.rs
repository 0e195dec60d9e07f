//! What the kernel changes on disk when it mounts after recovery, beyond
//! the log itself (spec 8.5), as far as this tool does it:
//!
//! * the superblock summary counters, recomputed from the AG headers
//!   (`xfs_initialize_perag_data`): `icount = sum agi_count`,
//!   `ifree = sum agi_freecount`,
//!   `fdblocks = sum (agf_freeblks + agf_flcount + agf_btreeblks)`;
//! * quota inode numbers of 0 written as null, log-incompatible feature
//!   bits cleared (a clean unmount clears them), a new `sb_lsn` and CRC;
//! * the quota flags cleared when they say quotas were accounted: this tool
//!   replays as a mount without quota options does (dquot items and dquot
//!   buffers skipped), and such a mount revokes the quota-checked state
//!   (`xfs_mount_reset_sbqflags`).
//!
//! Unfinished intents and the inodes on the AGI unlinked lists are dealt
//! with before (`recover.rs`, `unlinked.rs`); what they leave undone is
//! listed here.

use super::counters::{counters, read, Counters, Unlinked};
use super::{put_crc, set_be16, set_be32, set_be64, WritePastEnd};
use crate::xfs::error::Result;
use crate::xfs::format::sb::{XfsDsb, XFS_SB_CRC_OFF};
use crate::xfs::fs::Fs;
use crate::xfs::image::Overlay;
use crate::xfs::read::ReadAt;
use crate::xfs::types::Lsn;
use core::mem::offset_of;
use serde::Serialize;

/// What the mount-time changes found and did.
#[derive(Clone, Debug, Serialize)]
pub struct MountChanges {
    pub before: Counters,
    pub after: Counters,
    /// Heads of the AGI unlinked buckets (chains are not walked).
    pub unlinked: Vec<Unlinked>,
    pub sb_lsn: Lsn,
    /// CoW staging extents freed, and those left.
    pub cow: super::cow::CowReport,
    /// Blocks per AG, and the AGs where the kernel's mount does work this
    /// tool leaves undone (unfinished intents, unlinked inodes, CoW
    /// extents not freed).
    pub ag_blocks: u32,
    pub ags_with_work_left: Vec<u32>,
    /// The unfinished intents finished (all or none), and why not.
    pub intents: super::recover::IntentReport,
    /// The inodes of the unlinked lists freed (`None`: not tried, because
    /// intents were left unfinished).
    pub unlinked_freed: Option<super::unlinked::UnlinkedReport>,
    /// Blocks past the in-memory size of the files recovery read, freed
    /// when the kernel lets go of them (`None`: not tried, because intents
    /// were left unfinished).
    pub eofblocks: Option<super::eofblocks::EofReport>,
    /// Intents left unfinished by this tool.
    pub intents_left: Vec<super::intents::Unfinished>,
    pub notes: Vec<String>,
    /// The quota flags cleared (they said quotas were accounted), as the
    /// kernel clears them when mounted without quota options.
    pub quota_flags_reset: Option<u16>,
}

/// A superblock write that does not fit the sector read.
fn written(w: WritePastEnd) -> crate::xfs::error::Error {
    w.in_structure("superblock", 0)
}

/// What every write of a v5 superblock by the kernel changes, whatever else
/// happened: quota inodes of 0 become NULLFSINO (`xfs_sb_quota_from_disk`
/// folds the two "none" values into one, `xfs_sb_to_disk` writes it back),
/// except with the metadata directory tree, where the quota inodes live in
/// that tree and the superblock's fields are written as 0; and the
/// log-incompatible features are cleared (at unmount).
fn as_the_kernel_writes_it(sb: &mut [u8]) -> Result<(), WritePastEnd> {
    let metadir = crate::xfs::fs::be32(sb, offset_of!(XfsDsb, sb_features_incompat))
        .is_some_and(|f| f & crate::xfs::format::sb::XFS_SB_FEAT_INCOMPAT_METADIR != 0);
    for off in [
        offset_of!(XfsDsb, sb_uquotino),
        offset_of!(XfsDsb, sb_gquotino),
        offset_of!(XfsDsb, sb_pquotino),
    ] {
        if metadir {
            set_be64(sb, off, 0)?;
        } else if crate::xfs::fs::be64(sb, off) == Some(0) {
            set_be64(sb, off, u64::MAX)?;
        }
    }
    set_be32(sb, offset_of!(XfsDsb, sb_features_log_incompat), 0)?;
    Ok(())
}

/// A clean log: no recovery, but the kernel's mount and unmount write the
/// superblock once (`xfs_log_sbcount` at unmount), changing what
/// [`as_the_kernel_writes_it`] changes. Applied to `ov` where that changes
/// anything (v5 only; `sb_lsn` is left alone). Whether it did.
pub fn apply_clean<R: ReadAt>(fs: &Fs<R>, ov: &mut Overlay) -> Result<bool> {
    if !fs.geo.v5 {
        return Ok(false);
    }
    let ss = u64::from(fs.geo.sectsize);
    let old = read(fs, ov, "superblock", 0, ss)?;
    let mut sb = old.clone();
    as_the_kernel_writes_it(&mut sb).map_err(written)?;
    if sb == old {
        return Ok(false);
    }
    put_crc(&mut sb, XFS_SB_CRC_OFF);
    ov.put(0, &sb);
    Ok(true)
}

/// Apply the superblock changes to `ov` (the replayed sectors): counters,
/// quota inodes, log-incompatible features, `sb_lsn`, CRC.
pub fn apply<R: ReadAt>(fs: &Fs<R>, ov: &mut Overlay, sb_lsn: Lsn) -> Result<MountChanges> {
    let ss = u64::from(fs.geo.sectsize);
    let mut sb = read(fs, ov, "superblock", 0, ss)?;
    let g64 = |b: &[u8], off: usize| crate::xfs::fs::be64(b, off).unwrap_or(0);
    let before = Counters {
        icount: g64(&sb, offset_of!(XfsDsb, sb_icount)),
        ifree: g64(&sb, offset_of!(XfsDsb, sb_ifree)),
        fdblocks: g64(&sb, offset_of!(XfsDsb, sb_fdblocks)),
    };
    let (after, unlinked) = counters(fs, ov)?;
    set_be64(&mut sb, offset_of!(XfsDsb, sb_icount), after.icount).map_err(written)?;
    set_be64(
        &mut sb,
        offset_of!(XfsDsb, sb_ifree),
        after.ifree.min(after.icount),
    )
    .map_err(written)?;
    set_be64(&mut sb, offset_of!(XfsDsb, sb_fdblocks), after.fdblocks).map_err(written)?;
    // XFS_ALL_QUOTA_ACCT: user, project, group accounting.
    let qoff = offset_of!(XfsDsb, sb_qflags);
    let qflags = crate::xfs::fs::be16(&sb, qoff).unwrap_or(0);
    let quota_flags_reset = if qflags & 0x0049 != 0 {
        set_be16(&mut sb, qoff, 0).map_err(written)?;
        Some(qflags)
    } else {
        None
    };
    if fs.geo.v5 {
        as_the_kernel_writes_it(&mut sb).map_err(written)?;
        set_be64(&mut sb, offset_of!(XfsDsb, sb_lsn), sb_lsn.raw()).map_err(written)?;
        put_crc(&mut sb, XFS_SB_CRC_OFF);
    }
    ov.put(0, &sb);
    Ok(MountChanges {
        before,
        after,
        unlinked,
        sb_lsn,
        cow: super::cow::CowReport::default(),
        eofblocks: None,
        ag_blocks: fs.geo.agblocks,
        ags_with_work_left: Vec::new(),
        intents: Default::default(),
        unlinked_freed: None,
        intents_left: Vec::new(),
        notes: Vec::new(),
        quota_flags_reset,
    })
}
