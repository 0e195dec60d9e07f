//! The recovered image as bytes: the input with the replayed sectors, the
//! mount-time superblock changes and a clean log laid over it, readable at
//! any offset so it can be written out (natively) or streamed (in the
//! browser) without holding the image.
//!
//! The clean log is what `xfs_repair` formats (`libxfs_log_clear`):
//!
//! ```text
//!  block 0: record of cycle C holding one unmount op (2 blocks, or the
//!           log stripe unit), then records of cycle C-1 (256 KiB each,
//!           8 header sectors) to the end of the log, each one an unmount
//!           record too: the kernel finds the head right after the first
//!           record and that record is an unmount record, so the log is
//!           clean and its current cycle is C.
//! ```
//!
//! C is one more than the head's cycle, so every LSN replay stamped into
//! the metadata lies behind the new head, as the kernel requires.

use crate::xfs::error::Result;
use crate::xfs::format::log::*;
use crate::xfs::fs::Fs;
use crate::xfs::image::Overlay;
use crate::xfs::read::ReadAt;
use crate::xfs::types::Lsn;
use core::mem::size_of;
use zerocopy::FromBytes;

/// A freshly formatted, clean log.
#[derive(Clone, Copy, Debug)]
pub struct CleanLog {
    /// Daddr of log block 0 and length in blocks.
    pub start: u64,
    pub len: u32,
    pub cycle: u32,
    pub uuid: [u8; 16],
    pub version: u32,
    /// Log stripe unit in bytes (`sb_logsunit`).
    pub sunit: u32,
    /// Writer byte order (`XLOG_FMT_*`) of the unmount payload.
    pub fmt: u32,
}

/// Where a log block falls in the formatted log.
struct RecordAt {
    /// First block of its record, the record's length, its cycle.
    start: u32,
    len: u32,
    cycle: u32,
    /// Header sectors and the `sunit` given to `libxfs_log_header`.
    hdrs: u32,
    sunit: u32,
    tail_block: u32,
}

const BDSTRAT_BBS: u32 = (256 * 1024) / 512;

impl CleanLog {
    fn first_len(&self) -> u32 {
        let l = if self.version == 2 && self.sunit != 0 {
            self.sunit.div_ceil(512)
        } else {
            2
        };
        l.max(2).min(self.len)
    }

    fn hdrs(&self, sunit: u32) -> u32 {
        if self.version == 2 && sunit > XLOG_HEADER_CYCLE_SIZE {
            sunit.div_ceil(XLOG_HEADER_CYCLE_SIZE)
        } else {
            1
        }
    }

    fn record_of(&self, blk: u32) -> RecordAt {
        let first = self.first_len();
        if blk < first {
            let sunit = self.sunit;
            return RecordAt {
                start: 0,
                len: first,
                cycle: self.cycle,
                hdrs: self.hdrs(sunit),
                sunit,
                tail_block: 0,
            };
        }
        let k = (blk.saturating_sub(first)) / BDSTRAT_BBS;
        let start = first.saturating_add(k.saturating_mul(BDSTRAT_BBS));
        let len = BDSTRAT_BBS.min(self.len.saturating_sub(start));
        let sunit = len.saturating_mul(512);
        RecordAt {
            start,
            len,
            cycle: self.cycle.saturating_sub(1),
            hdrs: self.hdrs(sunit),
            sunit,
            // As libxfs_log_clear computes it (it does not matter).
            tail_block: start.wrapping_sub(len),
        }
    }

    /// The 512 bytes of log block `blk`.
    pub fn block(&self, blk: u32) -> [u8; 512] {
        let mut b = [0u8; 512];
        let r = self.record_of(blk);
        if self.cycle <= 1 && r.start > 0 {
            // A log formatted at the first cycle is zero past its record.
            return b;
        }
        let i = blk.saturating_sub(r.start);
        let cycle = r.cycle;
        if i == 0 {
            // The record header.
            let Ok((h, _)) = XlogRecHeader::mut_from_prefix(b.as_mut_slice()) else {
                return b;
            };
            h.h_magicno.set(XLOG_HEADER_MAGIC_NUM);
            h.h_cycle.set(cycle);
            h.h_version.set(self.version);
            let body = (r.sunit.max(1024)).saturating_sub(r.hdrs.saturating_mul(512));
            h.h_len.set(body);
            h.h_lsn.set(
                Lsn {
                    cycle,
                    block: r.start,
                }
                .raw(),
            );
            let tail = if r.start == 0 {
                if self.cycle == 1 {
                    Lsn { cycle, block: 0 }
                } else {
                    Lsn {
                        cycle: self.cycle.saturating_sub(1),
                        block: self.len.wrapping_sub(r.len),
                    }
                }
            } else {
                Lsn {
                    cycle,
                    block: r.tail_block,
                }
            };
            h.h_tail_lsn.set(tail.raw());
            h.h_prev_block.set(u32::MAX);
            h.h_num_logops.set(1);
            // The unmount block's first word (the op's tid) is saved here.
            if let Some(w) = h.h_cycle_data.first_mut() {
                w.set(0xb0c0_d0d0);
            }
            h.h_fmt.set(self.fmt);
            h.h_fs_uuid = self.uuid;
            h.h_size.set(r.sunit.max(XLOG_HEADER_CYCLE_SIZE));
        } else if i < r.hdrs {
            // Extended headers: the cycle, no saved words.
            if let Ok((x, _)) = XlogRecExtHeader::mut_from_prefix(b.as_mut_slice()) {
                x.xh_cycle.set(cycle);
            }
        } else if i == r.hdrs {
            // The unmount op: header (tid, len 8, client LOG, UNMOUNT) and
            // its 8-byte payload, magic "Un" in the writer's order; the
            // tid's place holds the cycle, as every data block's first word.
            let op_len = size_of::<XlogOpHeader>();
            if let Ok((op, _)) = XlogOpHeader::mut_from_prefix(b.as_mut_slice()) {
                op.oh_tid.set(cycle);
                op.oh_len.set(8);
                op.oh_clientid = XFS_LOG;
                op.oh_flags = XLOG_UNMOUNT_TRANS;
            }
            let magic = if self.fmt == XLOG_FMT_LINUX_LE {
                XLOG_UNMOUNT_TYPE.to_le_bytes()
            } else {
                XLOG_UNMOUNT_TYPE.to_be_bytes()
            };
            if let Some(x) = b.get_mut(op_len..op_len.saturating_add(2)) {
                x.copy_from_slice(&magic);
            }
        } else {
            // A data block's first word holds the cycle.
            if let Some(w) = b.first_chunk_mut::<4>() {
                *w = cycle.to_be_bytes();
            }
        }
        b
    }
}

/// The recovered image, readable at any offset.
pub struct Recovered<'a, R: ReadAt> {
    pub fs: &'a Fs<R>,
    /// Replayed sectors plus the mount-time changes.
    pub overlay: &'a Overlay,
    /// `None`: the log is left as it is (it was clean).
    pub log: Option<CleanLog>,
}

impl<R: ReadAt> Recovered<'_, R> {
    pub fn len(&self) -> u64 {
        self.fs.img.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fill `buf` with the recovered image's bytes at `offset`.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let mut done = 0usize;
        while done < buf.len() {
            let pos = offset.saturating_add(u64::try_from(done).unwrap_or(u64::MAX));
            let n = buf
                .len()
                .saturating_sub(done)
                .min(usize::try_from(crate::xfs::image::MAX_READ).unwrap_or(1 << 20));
            let bytes =
                self.fs
                    .img
                    .read_disk("recovered image", pos, u64::try_from(n).unwrap_or(0))?;
            if let Some(d) = buf.get_mut(done..done.saturating_add(n)) {
                d.copy_from_slice(bytes.get(..n).unwrap_or(&[]));
            }
            done = done.saturating_add(n);
        }
        self.overlay.apply_to(offset, buf);
        if let Some(log) = &self.log {
            if !self.fs.has_external_log() {
                log.lay_over(log.start.saturating_mul(512), offset, buf);
            }
        }
        Ok(())
    }

    /// Bytes of the recovered external log device: as long as the device
    /// given, or the log when none was. `None` when the log is internal.
    pub fn log_device_len(&self) -> Option<u64> {
        if !self.fs.has_external_log() {
            return None;
        }
        let log_bytes =
            u64::from(self.fs.sb.logblocks).saturating_mul(u64::from(self.fs.geo.blocksize));
        Some(self.fs.logdev.as_ref().map_or(log_bytes, |l| l.len()))
    }

    /// Fill `buf` with the recovered external log device's bytes at
    /// `offset`: the formatted clean log (when the log was dirty), the
    /// device as it is elsewhere (when it was clean, or past the log).
    pub fn read_log_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let Some(dev_len) = self.log_device_len() else {
            return Err(crate::xfs::error::Error::corrupt(
                "log",
                crate::xfs::error::Location::Bytes { offset: 48, len: 8 },
                "the log is internal (sb_logstart is not 0): there is no log device to write",
            ));
        };
        let len = u64::try_from(buf.len()).unwrap_or(u64::MAX);
        if offset.checked_add(len).is_none_or(|e| e > dev_len) {
            return Err(crate::xfs::error::Error::OutOfBounds {
                structure: "recovered log device",
                offset,
                len,
                image_len: dev_len,
            });
        }
        buf.fill(0);
        if let Some(dev) = &self.fs.logdev {
            let mut done = 0usize;
            while done < buf.len() {
                let pos = offset.saturating_add(u64::try_from(done).unwrap_or(u64::MAX));
                let n = buf
                    .len()
                    .saturating_sub(done)
                    .min(usize::try_from(crate::xfs::image::MAX_READ).unwrap_or(1 << 20));
                let bytes = dev.read_disk("log device", pos, u64::try_from(n).unwrap_or(0))?;
                if let Some(d) = buf.get_mut(done..done.saturating_add(n)) {
                    d.copy_from_slice(bytes.get(..n).unwrap_or(&[]));
                }
                done = done.saturating_add(n);
            }
        }
        if let Some(log) = &self.log {
            log.lay_over(0, offset, buf);
        }
        Ok(())
    }
}

impl CleanLog {
    /// Lay this log's blocks, log block 0 at byte `lstart`, over `buf`,
    /// which holds the bytes from `offset` on.
    fn lay_over(&self, lstart: u64, offset: u64, buf: &mut [u8]) {
        let log = self;
        let len = u64::try_from(buf.len()).unwrap_or(u64::MAX);
        {
            let lend = lstart.saturating_add(u64::from(log.len).saturating_mul(512));
            let end = offset.saturating_add(len);
            let lo = offset.max(lstart);
            let hi = end.min(lend);
            let mut at = lo;
            while at < hi {
                let blk = u32::try_from((at.saturating_sub(lstart)) / 512).unwrap_or(u32::MAX);
                let block = log.block(blk);
                let blk_start = lstart.saturating_add(u64::from(blk).saturating_mul(512));
                let from = usize::try_from(at.saturating_sub(blk_start)).unwrap_or(0);
                let next = blk_start.saturating_add(512).min(hi);
                let n = usize::try_from(next.saturating_sub(at)).unwrap_or(0);
                let dst = usize::try_from(at.saturating_sub(offset)).unwrap_or(usize::MAX);
                if let (Some(d), Some(s)) = (
                    buf.get_mut(dst..dst.saturating_add(n)),
                    block.get(from..from.saturating_add(n)),
                ) {
                    d.copy_from_slice(s);
                }
                at = next;
            }
        }
    }
}

/// Everything needed to produce the recovered image.
pub struct Plan {
    /// Replayed sectors plus the mount-time superblock changes.
    pub overlay: Overlay,
    pub log: Option<CleanLog>,
    /// `None` when the log was clean (the image is copied as it is, but
    /// for the superblock fields every kernel write of it changes).
    pub mount: Option<super::mount::MountChanges>,
}

/// Plan the recovered image of `fs` from its replay.
pub fn plan<R: ReadAt>(
    fs: &Fs<R>,
    replay: super::Replay,
    now: super::RecoveryTime,
) -> Result<Plan> {
    let mut overlay = replay.overlay;
    let rep = &replay.report;
    if rep.clean {
        super::mount::apply_clean(fs, &mut overlay)?;
        return Ok(Plan {
            overlay,
            log: None,
            mount: None,
        });
    }
    let loc = crate::xfs::log::LogLocation::of(fs)?;
    let top = rep.last_lsn.map_or(0, |l| l.cycle);
    let cycle = rep.head.cycle.max(top).max(1).saturating_add(1);
    let log = CleanLog {
        start: loc.start_daddr.0,
        len: loc.len_bbs,
        cycle,
        uuid: fs.sb.uuid,
        version: if loc.v2 { 2 } else { 1 },
        sunit: fs.sb.logsunit,
        fmt: XLOG_FMT_LINUX_LE,
    };
    // Every mount-time step below is recorded, so that a btree block one
    // step writes and a later one frees goes back to its replayed bytes:
    // the kernel never writes a buffer it freed.
    overlay.record_undo();
    // Unfinished intents first (the kernel finishes them before anything
    // else at mount), then CoW staging extents.
    let w = super::ckpt::LogWriter::of(rep.iclog_size, loc.v2, fs.sb.logsunit);
    // The inodes the intents' recovery reads keep the size they have now
    // in memory, which the unmount's inactivation trims to.
    let loaded = super::eofblocks::loaded_by(fs, &overlay, &rep.unfinished_intents)?;
    let mut intents = super::recover::recover_in(
        fs,
        &mut overlay,
        &rep.unfinished_intents,
        rep.head,
        now,
        Some((w, loc.len_bbs)),
    )?;
    let left: Vec<super::intents::Unfinished> = if intents.not_finished.is_some() {
        rep.unfinished_intents.clone()
    } else {
        Vec::new()
    };
    // The kernel forces the log once the intents are finished: their work
    // is a checkpoint at the head, and what follows is written in the next
    // one, whose LSN is the head plus the blocks the first one took.
    let mut later = rep.head;
    let mut notes = Vec::new();
    if !intents.logged.is_empty() {
        let mut c = super::ckpt::checkpoint(&intents.logged, w);
        let start = intents.last_start.unwrap_or(rep.head);
        c.lsn = Some(start);
        later = super::ckpt::advance(start, c.blocks, loc.len_bbs);
        if intents.forced.is_empty() {
            notes.push(format!(
                "the intents' work is a checkpoint of {} log blocks at {}:{}; the work after it carries the LSN {}:{}",
                c.blocks, rep.head.cycle, rep.head.block, later.cycle, later.block
            ));
        } else {
            let sizes: Vec<String> = intents
                .forced
                .iter()
                .map(|f| f.blocks.to_string())
                .collect();
            notes.push(format!(
                "the intents' work reuses blocks it freed, so the kernel forces its log {} time(s) in the middle of it: checkpoints of {} log blocks from {}:{}, then the last of {} log blocks at {}:{}; the work after it carries the LSN {}:{}",
                intents.forced.len(),
                sizes.join(", "),
                rep.head.cycle,
                rep.head.block,
                c.blocks,
                start.cycle,
                start.block,
                later.cycle,
                later.block
            ));
        }
        intents.checkpoint = Some(c);
        intents.next_lsn = Some(later);
    }
    // Then the inodes on the AGI unlinked lists (only once every intent
    // is finished, as the kernel's order requires).
    let (unlinked, busy) = if intents.not_finished.is_none() {
        let (mut u, b) = super::unlinked::process(fs, &mut overlay, later, &intents.ag_touched)?;
        if !u.freed.is_empty() {
            let mut c = super::ckpt::checkpoint(&u.logged, w);
            c.lsn = Some(later);
            u.checkpoint = Some(c);
        }
        (Some(u), b)
    } else {
        (None, super::defer::Busy::new())
    };
    // CoW staging extents last, in the same checkpoint as the unlinked
    // inodes: what those frees left busy stays busy.
    let cow = super::cow::recover(fs, &mut overlay, later, &busy)?;
    // Last, once the mount is done, the inodes recovery read are let go
    // of, and what lies past their in-memory size is freed.
    let eofblocks = if intents.not_finished.is_none() {
        // Its checkpoint follows the unlinked inodes' one, if there was
        // such work: that checkpoint's size gives its LSN.
        let at = match unlinked.as_ref().and_then(|u| u.checkpoint.as_ref()) {
            Some(c) => super::ckpt::advance(later, c.blocks, loc.len_bbs),
            None => later,
        };
        let mut e = super::eofblocks::free(fs, &mut overlay, &loaded, at)?;
        // Not worked out: the sizes of checkpoints with CoW staging
        // extents freed, or an inode whose inactivation failed.
        let mount_work =
            unlinked.as_ref().is_some_and(|u| !u.kept.is_empty()) || !cow.freed.is_empty();
        e.lsn_known = !mount_work;
        if !e.trimmed.is_empty() && mount_work {
            notes.push(format!(
                "the blocks freed past the end of files carry the LSN {}:{}; the kernel writes them in the checkpoint after the one that freed CoW staging extents or kept an inode whose inactivation failed, whose size this tool does not work out: their LSN and CRC fields may differ from the kernel's",
                at.cycle, at.block
            ));
        }
        Some(e)
    } else {
        None
    };
    overlay.stop_undo();
    let mut mount = super::mount::apply(fs, &mut overlay, Lsn { cycle, block: 0 })?;
    // Inodes whose inactivation fails stay listed in the kernel's copy too:
    // that is no work left undone.
    if let Some(f) = &unlinked {
        mount
            .unlinked
            .retain(|u| !f.kept.iter().any(|k| k.ino == u.ino));
    }
    let mut ags: std::collections::BTreeSet<u32> = std::collections::BTreeSet::new();
    for u in &mount.unlinked {
        ags.insert(u.agno);
    }
    if let Some(f) = &unlinked {
        ags.extend(f.ags_of_left.iter().copied());
    }
    for c in &cow.not_freed {
        ags.insert(c.extent.agno);
    }
    for u in &left {
        for fsb in &u.fsblocks {
            ags.insert(u32::try_from(fsb >> fs.geo.agblklog).unwrap_or(u32::MAX));
        }
    }
    mount.cow = cow;
    mount.intents = intents;
    mount.unlinked_freed = unlinked;
    mount.eofblocks = eofblocks;
    mount.intents_left = left;
    mount.notes = notes;
    mount.ags_with_work_left = ags.into_iter().collect();
    Ok(Plan {
        overlay,
        log: Some(log),
        mount: Some(mount),
    })
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::cast_possible_truncation
)]
mod tests {
    use super::*;
    use crate::xfs::image::Image;
    use crate::xfs::log::find::find_head_tail;
    use crate::xfs::log::LogDev;
    use crate::xfs::types::Daddr;

    #[test]
    fn the_formatted_log_is_clean_with_its_head_after_the_unmount_record() {
        for (len, cycle, sunit) in [(8192u32, 4u32, 1u32), (3000, 2, 1), (2048, 7, 32768)] {
            let log = CleanLog {
                start: 0,
                len,
                cycle,
                uuid: [3; 16],
                version: 2,
                sunit,
                fmt: XLOG_FMT_LINUX_LE,
            };
            let mut bytes = Vec::with_capacity(len as usize * 512);
            for b in 0..len {
                bytes.extend_from_slice(&log.block(b));
            }
            let img = Image::new(bytes);
            let dev = LogDev::new(&img, Daddr(0), len, true)
                .unwrap()
                .with_uuid([3; 16]);
            let ht = find_head_tail(&dev).unwrap();
            assert!(ht.clean, "{len} {cycle}: {ht:?}");
            let first = if sunit > 512 { sunit / 512 } else { 2 };
            assert_eq!(ht.head.block, first);
            assert_eq!(ht.head.cycle, cycle);
            assert_eq!(ht.tail, ht.head);
        }
    }

    #[test]
    fn a_log_at_the_first_cycle_is_zero_after_its_record() {
        let log = CleanLog {
            start: 0,
            len: 1024,
            cycle: 1,
            uuid: [0; 16],
            version: 2,
            sunit: 1,
            fmt: XLOG_FMT_LINUX_LE,
        };
        assert_eq!(&log.block(0)[..4], &XLOG_HEADER_MAGIC_NUM.to_be_bytes());
        assert!(log.block(5).iter().all(|b| *b == 0));
    }
}
