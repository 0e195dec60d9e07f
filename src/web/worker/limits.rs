//! The caps on what the worker holds: the decoded log, replay's overlay,
//! what replay changed, the entries of one directory.

use super::*;

/// The live part of the log (tail to head) the page decodes and replays
/// at most: 2 GiB, more than the largest log `mkfs.xfs` makes (2038 MiB),
/// so every log a kernel mounts opens. The decoded log is kept as a compact
/// index (a few dozen bytes per transaction and per buffer item), so its
/// memory is bounded by the largest checkpoint, not by this; replay's
/// recovered blocks have their own cap. A bigger log (a damaged
/// superblock's) is refused with a message (the command line has no such
/// cap).
pub const DECODED_LOG_CAP: u64 = 2 << 30;
/// The recovered blocks replay holds at most (its overlay, in bytes); a
/// replay that recovers more is dropped and refused with a message.
pub const REPLAY_OVERLAY_CAP: u64 = 1 << 30;
/// Inodes compared at most by what replay changed (more are reported as
/// not compared).
pub const DIFF_INODE_CAP: usize = 1_000_000;
/// Rows of each part of what replay changed kept at most (paths, inodes,
/// xattrs, block ranges); the rest are counted, not kept.
pub const DIFF_ROWS_CAP: usize = 1_000_000;
/// Entries of one directory listed at most (each is an inode read).
pub const DIR_ENTRIES_CAP: usize = 100_000;

/// The caps in force (the constants above; tests set smaller ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    pub decoded_log: u64,
    pub replay_overlay: u64,
    pub diff_inodes: usize,
    pub diff_rows: usize,
    pub dir_entries: usize,
}

impl Default for Caps {
    fn default() -> Self {
        Caps {
            decoded_log: DECODED_LOG_CAP,
            replay_overlay: REPLAY_OVERLAY_CAP,
            diff_inodes: DIFF_INODE_CAP,
            diff_rows: DIFF_ROWS_CAP,
            dir_entries: DIR_ENTRIES_CAP,
        }
    }
}

thread_local! {
    static CAPS: std::cell::Cell<Caps> = std::cell::Cell::new(Caps::default());
}

/// Set the caps in force (for tests: small caps on small fixtures).
pub fn set_caps(c: Caps) {
    CAPS.with(|x| x.set(c));
}

pub fn caps() -> Caps {
    CAPS.with(std::cell::Cell::get)
}

pub(super) fn mib(b: u64) -> String {
    format!("{:.1} MiB", to_f64(b) / 1_048_576.0)
}

#[allow(clippy::as_conversions, clippy::cast_precision_loss)]
pub(super) fn to_f64(n: u64) -> f64 {
    n as f64
}

/// The bytes between the log's tail and head (0 for a clean log), refused
/// when over [`Caps::decoded_log`].
pub(super) fn check_log_span(fs: &Fs<Disk>) -> Result<u64, String> {
    use crate::xfs::log::{find::find_head_tail, LogDev};
    // A log that cannot be read is left to the work itself to report.
    let Ok(dev) = LogDev::of_fs(fs) else {
        return Ok(0);
    };
    let Ok(ht) = find_head_tail(&dev) else {
        return Ok(0);
    };
    let span = if ht.clean {
        0
    } else {
        u64::from(dev.distance(ht.tail.block, ht.head.block)).saturating_mul(512)
    };
    let cap = caps().decoded_log;
    if span > cap {
        return Err(format!(
            "the live part of the log (tail {}:{} to head {}:{}) is {}, more than the {} the page decodes and replays (DECODED_LOG_CAP); the command line (xfs-explorer log, replay) has no such cap",
            ht.tail.cycle,
            ht.tail.block,
            ht.head.cycle,
            ht.head.block,
            mib(span),
            mib(cap)
        ));
    }
    Ok(span)
}
