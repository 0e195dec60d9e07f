//! Blocks past the end of files that recovery loaded, freed when the
//! kernel lets go of those inodes after the mount (`evict_inodes` at the
//! end of `xfs_log_mount_finish`, the inactivation done by the time the
//! filesystem is unmounted: `xfs_inactive` -> `xfs_free_eofblocks`):
//!
//! ```text
//!  which inodes  those the intents' recovery read (xlog_recover_iget):
//!                the owner of each bmap intent, both files of an
//!                exchange intent, the file of an attribute intent
//!  which are     a regular file still linked, of in-memory size not 0,
//!  trimmed       neither preallocated nor append-only, with a mapping at
//!                or past the block that size ends in
//!  the size      the in-memory size, set when recovery first read the
//!                inode (di_size as the log left it): an exchange intent
//!                finished at mount raises di_size but not that size, so
//!                the blocks it brings past the old size go again
//!  how           xfs_itruncate_extents_flags to that size: __xfs_bunmapi
//!                calls of two extents each from the end, each with its
//!                deferred work (reverse mapping, free or refcount
//!                decrease) finished before the next; di_size unchanged
//! ```
//!
//! This is the kernel's own behaviour after its recovery (seen on the
//! differential run d9134: an exchange of 185 blocks finished at mount,
//! then 30 of the extents it brought into the file freed at unmount).
//! Its checkpoint comes after the unlinked inodes' one (`unlinked.rs`
//! works out that one's size), or right after the intents' one.

use super::ag::{EditError, EditResult};
use super::bmap::ForkEditor;
use super::defer::Engine;
use crate::xfs::error::Result;
use crate::xfs::format::dinode::{XfsDinode, XFS_DIFLAG2_REFLINK};
use crate::xfs::format::log::XFS_LI_BUI;
use crate::xfs::fs::{be16, be32, be64, Fs};
use crate::xfs::image::Overlay;
use crate::xfs::log::items::ItemBody;
use crate::xfs::read::ReadAt;
use crate::xfs::replay::intents::Unfinished;
use crate::xfs::types::{Ino, Lsn};
use core::mem::offset_of;
use serde::Serialize;

/// `XFS_DIFLAG_PREALLOC` and `XFS_DIFLAG_APPEND`: such files keep their
/// blocks past the end.
const KEEPS_POST_EOF: u16 = (1 << 1) | (1 << 4);

/// An inode recovery read, and its in-memory size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loaded {
    pub ino: u64,
    pub size: u64,
}

/// What was freed past the end of one file.
#[derive(Clone, Debug, Serialize)]
pub struct Trimmed {
    pub ino: u64,
    /// The in-memory size the kernel trims to.
    pub size: u64,
    /// di_size, which stays.
    pub disk_size: u64,
    /// The first file block unmapped.
    pub from_block: u64,
    pub extents: u64,
    pub blocks: u64,
}

/// What the unmount's inactivation did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EofReport {
    pub trimmed: Vec<Trimmed>,
    /// Why it stopped, where it did (the rest left as they were).
    pub not_done: Option<String>,
    pub work_items: u64,
    /// Whether the LSN the blocks carry follows from checkpoint sizes this
    /// tool works out: not where the checkpoint before freed CoW staging
    /// extents or kept an inode whose inactivation failed.
    pub lsn_known: bool,
}

/// The inodes the recovery of `intents` reads, in the order it first
/// reads them, with their size in `ov` (as the log left them).
pub fn loaded_by<R: ReadAt>(
    fs: &Fs<R>,
    ov: &Overlay,
    intents: &[Unfinished],
) -> Result<Vec<Loaded>> {
    let mut inos: Vec<u64> = Vec::new();
    for u in intents {
        match &u.body {
            Some(ItemBody::MapIntent(m)) if u.kind.0 == XFS_LI_BUI => {
                inos.extend(m.extents.iter().map(|e| e.owner));
            }
            Some(ItemBody::Xmi(x)) => inos.extend([x.inode1, x.inode2]),
            Some(ItemBody::Attri(a)) => inos.push(a.ino),
            _ => {}
        }
    }
    let mut out: Vec<Loaded> = Vec::new();
    for ino in inos {
        if out.iter().any(|l| l.ino == ino) {
            continue;
        }
        let Ok(off) = fs.inode_offset(Ino(ino)) else {
            continue;
        };
        let b = super::counters::read(fs, ov, "inode", off, u64::from(fs.geo.inodesize))?;
        let size = be64(&b, offset_of!(XfsDinode, di_size)).unwrap_or(0);
        out.push(Loaded { ino, size });
    }
    Ok(out)
}

/// Free what lies past the in-memory size of each inode of `loaded`, as
/// the kernel's inactivation does once the mount is done; the changed
/// blocks go into `ov`, stamped with `lsn`.
pub fn free<R: ReadAt>(
    fs: &Fs<R>,
    ov: &mut Overlay,
    loaded: &[Loaded],
    lsn: Lsn,
) -> Result<EofReport> {
    let mut rep = EofReport::default();
    if loaded.is_empty() {
        return Ok(rep);
    }
    let (changes, stale, forks) = {
        let mut engine = Engine::new(fs, ov);
        let mut ed = ForkEditor::new(fs, ov);
        for l in loaded {
            let snap = engine.snapshot();
            let done_before = engine.done;
            match trim(fs, &mut engine, &mut ed, *l) {
                Ok(Some(t)) => rep.trimmed.push(t),
                Ok(None) => {}
                Err(EditError::Read(e)) => return Err(e),
                Err(u) => {
                    engine.restore(snap);
                    engine.done = done_before;
                    rep.not_done = Some(format!("inode {}: {u}", l.ino));
                    break;
                }
            }
        }
        rep.work_items = engine.done;
        if rep.not_done.is_some() {
            // An inode half trimmed is not written: nothing of this step is.
            return Ok(rep);
        }
        (engine.changed()?, engine.stale()?, ed.into_changes(lsn)?)
    };
    super::ag::stamp_into(ov, changes, lsn, fs.geo.v5);
    for (daddr, n) in stale {
        ov.revert(daddr, n);
    }
    for (daddr, data) in forks {
        ov.put(daddr, &data);
    }
    Ok(rep)
}

/// `xfs_can_free_eofblocks` then `xfs_free_eofblocks` for one inode.
fn trim<R: ReadAt>(
    fs: &Fs<R>,
    engine: &mut Engine<'_, R>,
    ed: &mut ForkEditor<'_, R>,
    l: Loaded,
) -> EditResult<Option<Trimmed>> {
    let g = &fs.geo;
    let (_, b) = ed.inode_bytes(l.ino)?;
    let mode = be16(&b, offset_of!(XfsDinode, di_mode)).unwrap_or(0);
    let nlink = be32(&b, offset_of!(XfsDinode, di_nlink)).unwrap_or(0);
    let flags = be16(&b, offset_of!(XfsDinode, di_flags)).unwrap_or(0);
    if mode & 0o170000 != 0o100000 || nlink == 0 || l.size == 0 || flags & KEEPS_POST_EOF != 0 {
        return Ok(None);
    }
    let bs = u64::from(g.blocksize);
    let from = l.size.div_ceil(bs);
    let reflinked = b.get(4) == Some(&3)
        && be64(&b, offset_of!(XfsDinode, di_flags2)).unwrap_or(0) & XFS_DIFLAG2_REFLINK != 0;
    let (calls, left) = ed.truncate_from(l.ino, from)?;
    if calls.is_empty() {
        return Ok(None);
    }
    let mut t = Trimmed {
        ino: l.ino,
        size: l.size,
        disk_size: be64(&b, offset_of!(XfsDinode, di_size)).unwrap_or(0),
        from_block: from,
        extents: 0,
        blocks: 0,
    };
    // The transactions that log the inode, each raising its change count
    // once: each call's own (unless it first logs only the bmbt root), one
    // per deferred-op group finished (the rolls), and the last, which
    // logs the core again before the commit.
    let mut bumps = 1u64;
    for call in calls {
        if !call.root_first {
            bumps = bumps.saturating_add(1);
        }
        for (_, e) in &call.extents {
            t.extents = t.extents.saturating_add(1);
            t.blocks = t.blocks.saturating_add(e.len);
        }
        let work = call.work(g, l.ino, false, reflinked);
        let before = engine.dfps;
        engine.run(work)?;
        bumps = bumps.saturating_add(engine.dfps.saturating_sub(before));
    }
    if left == 0 && reflinked {
        // xfs_itruncate_clear_reflink_flags: nothing mapped, nothing shared.
        ed.clear_reflink(l.ino)?;
    }
    ed.bump_change_count(l.ino, bumps)?;
    Ok(Some(t))
}
