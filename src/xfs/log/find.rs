//! Finding the head and the tail of the log the way the kernel does at
//! mount (`xlog_find_head`, `xlog_find_tail`, `xlog_verify_head`).
//!
//! 1. A never-written log has cycle 0 in block 0. A log written only part
//!    of the way round ends where the cycle first drops to 0.
//! 2. Otherwise the head is where the cycle number drops (binary search),
//!    checked against the blocks before it for holes left by iclogs that
//!    were written out of order, and moved back over a record that was
//!    only partly written.
//! 3. The tail is the `h_tail_lsn` of the last record before the head. If
//!    that record is an unmount record ending exactly at the head, the log
//!    is clean.
//! 4. A dirty log's last (up to 8) records are CRC-checked: a bad one is a
//!    torn write, and the head moves back to it.
//!
//! The tail is then made to point at a record header; the CRC check from
//! tail to head that may move the tail forward over records overwritten by
//! a partial write happens while the log is walked ([`super::trans::walk`]).

use super::record::{btobb, hblks_of, RecordReader};
use super::{cycle_of, is_header, LogDev};
use crate::xfs::error::{Error, Result};
use crate::xfs::format::log::{XLOG_MAX_ICLOGS, XLOG_UNMOUNT_TRANS};
use crate::xfs::fs::{be32, be64};
use crate::xfs::read::ReadAt;
use crate::xfs::types::Lsn;
use serde::Serialize;

/// The live part of the log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HeadTail {
    /// Where the next record would be written.
    pub head: Lsn,
    /// The first block of the oldest record recovery needs.
    pub tail: Lsn,
    /// The last record before the head is an unmount record: nothing to
    /// replay. Also true for a log that was never written.
    pub clean: bool,
    /// The log was never written (cycle 0 in block 0).
    pub zeroed: bool,
    /// Log block of the last record before the head.
    pub last_record: Option<u32>,
    /// Set when the CRC check at the head found a torn write.
    pub torn_write: Option<TornWrite>,
    /// Set when the tail had to be moved to a record header or over records
    /// overwritten by a partial write.
    pub tail_moved: Option<TailMove>,
    /// `h_size` of the last record: the distance from the head within which
    /// a bad record counts as an overwritten tail.
    #[serde(skip)]
    pub last_h_size: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TornWrite {
    /// The head as the cycle numbers put it.
    pub old_head: u32,
    /// The first record that failed its CRC: the new head.
    pub first_bad: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TailMove {
    pub from: u32,
    pub to: u32,
    pub reason: String,
}

/// The fields of a record header that head and tail finding read before
/// the record is checked (the kernel reads them raw as well).
#[derive(Clone, Copy, Debug)]
struct RawHeader {
    cycle: u32,
    version: u32,
    len: u32,
    tail_lsn: u64,
    num_logops: u32,
    size: u32,
}

impl RawHeader {
    fn of(block: &[u8]) -> RawHeader {
        let w = |o| be32(block, o).unwrap_or(0);
        RawHeader {
            cycle: w(4),
            version: w(8),
            len: w(12),
            tail_lsn: be64(block, 24).unwrap_or(0),
            num_logops: w(40),
            size: w(320),
        }
    }
}

struct Finder<'d, 'a, R: ReadAt> {
    dev: &'d LogDev<'a, R>,
    len: u32,
    /// `XLOG_TOTAL_REC_SHIFT`: blocks all in-flight iclogs can span.
    total_rec_shift: u32,
    /// `XLOG_REC_SHIFT`: blocks of the largest record.
    rec_shift: u32,
}

fn corrupt<R: ReadAt>(dev: &LogDev<'_, R>, blk: u32, detail: impl Into<String>) -> Error {
    Error::corrupt("log", dev.location(blk), detail)
}

impl<R: ReadAt> Finder<'_, '_, R> {
    fn cycle(&self, blk: u32) -> Result<u32> {
        self.dev.cycle(blk)
    }

    fn hblks(&self, h: &RawHeader) -> u32 {
        hblks_of(self.dev.is_v2(), h.version, h.size).min(8)
    }

    /// Binary search for the first block with `cycle` in `(first, last]`,
    /// given that `first` has another cycle and `last` has `cycle`.
    fn find_cycle_start(&self, mut first: u32, last: u32, cycle: u32) -> Result<u32> {
        let mut end = last;
        let mut mid = avg(first, end);
        // At most 32 halvings of a 32-bit range.
        for _ in 0..64 {
            if mid == first || mid == end {
                break;
            }
            if self.cycle(mid)? == cycle {
                end = mid;
            } else {
                first = mid;
            }
            mid = avg(first, end);
        }
        Ok(end)
    }

    /// The first block in `[start, start + n)` with cycle `stop`.
    fn verify_cycle(&self, start: u32, n: u32, stop: u32) -> Result<Option<u32>> {
        self.dev.scan_forward(start, n, |_, b| cycle_of(b) == stop)
    }

    /// Walk back from `*last - 1` (not below `start`) to the nearest record
    /// header; if the record it starts does not end exactly at
    /// `*last + extra`, it was only partly written and `*last` moves back
    /// to it. `Ok(false)` when block 0 was reached without a header.
    fn verify_log_record(&self, start: u32, last: &mut u32, extra: u32) -> Result<bool> {
        let found = self.dev.scan_backward(start, *last, |_, b| is_header(b))?;
        let Some(i) = found else {
            if start == 0 {
                return Ok(false);
            }
            return Err(corrupt(
                self.dev,
                start,
                format!(
                    "log inconsistent: no record header in blocks {start}..{} before the head",
                    *last
                ),
            ));
        };
        let block = self.dev.block(i)?;
        self.check_uuid(&block, i)?;
        let h = RawHeader::of(&block);
        let want = u64::from(btobb(h.len)).saturating_add(u64::from(self.hblks(&h)));
        let have = u64::from(last.saturating_sub(i)).saturating_add(u64::from(extra));
        if have != want {
            *last = i;
        }
        Ok(true)
    }

    fn check_uuid(&self, block: &[u8], blk: u32) -> Result<()> {
        let (Some(uuid), Some(found)) = (self.dev.uuid(), block.get(304..320)) else {
            return Ok(());
        };
        if found != uuid.as_slice() && found.iter().any(|b| *b != 0) {
            let mut f = [0u8; 16];
            f.copy_from_slice(found);
            return Err(corrupt(
                self.dev,
                blk,
                format!(
                    "record header at log block {blk} carries another filesystem's UUID: h_fs_uuid {}, the filesystem's {}",
                    crate::xfs::sb::uuid_text(&f),
                    crate::xfs::sb::uuid_text(&uuid)
                ),
            ));
        }
        Ok(())
    }

    /// `Some(head)` when the log is not written all the way round (block 0
    /// has cycle 0: `Some(0)`), `None` when it is.
    fn find_zeroed(&self) -> Result<Option<u32>> {
        let first = self.cycle(0)?;
        if first == 0 {
            return Ok(Some(0));
        }
        let last_blk = self.len.saturating_sub(1);
        if self.cycle(last_blk)? != 0 {
            return Ok(None);
        }
        let mut last = self.find_cycle_start(0, last_blk, 0)?;
        let n = self.total_rec_shift.min(last);
        let start = last.saturating_sub(n);
        if let Some(b) = self.verify_cycle(start, n, 0)? {
            last = b;
        }
        if !self.verify_log_record(start, &mut last, 0)? {
            return Err(corrupt(
                self.dev,
                start,
                "log inconsistent: no record header before the first never-written block",
            ));
        }
        Ok(Some(last))
    }

    fn find_head(&self) -> Result<u32> {
        if let Some(head) = self.find_zeroed()? {
            return Ok(head);
        }
        let len = self.len;
        let first_half = self.cycle(0)?;
        let last_half = self.cycle(len.saturating_sub(1))?;
        let (mut head, stop) = if first_half == last_half {
            // One cycle all the way round: the head is at the physical end
            // unless a hole of the previous cycle is found.
            (len, last_half.wrapping_sub(1))
        } else {
            (
                self.find_cycle_start(0, len.saturating_sub(1), last_half)?,
                last_half,
            )
        };

        let n = self.total_rec_shift.min(len);
        let mut validated = false;
        if head >= n {
            if let Some(b) = self.verify_cycle(head.saturating_sub(n), n, stop)? {
                head = b;
            }
        } else {
            // The window wraps: look at the physical end for the previous
            // cycle, then at the start for this one.
            let back = n.saturating_sub(head);
            if let Some(b) =
                self.verify_cycle(len.saturating_sub(back), back, stop.wrapping_sub(1))?
            {
                head = b;
                validated = true;
            } else if let Some(b) = self.verify_cycle(0, head, stop)? {
                head = b;
            }
        }
        let _ = validated;

        // Do not leave the head inside a partly written record.
        let n = self.rec_shift.min(len);
        if head >= n {
            if !self.verify_log_record(head.saturating_sub(n), &mut head, 0)? {
                return Err(corrupt(self.dev, head, "no record header before the head"));
            }
        } else if !self.verify_log_record(0, &mut head, 0)? {
            // Reached block 0: the last record may wrap the physical end.
            let back = n.saturating_sub(head);
            let mut new = len;
            if !self.verify_log_record(len.saturating_sub(back), &mut new, head)? {
                return Err(corrupt(self.dev, 0, "no record header before the head"));
            }
            if new != len {
                head = new;
            }
        }
        Ok(if head >= len { 0 } else { head })
    }

    /// Walk back from `head` to at most `count` record headers, stopping at
    /// `tail` (or going round from the physical end when `tail >= head`).
    /// Returns how many were found, the last one, and whether it lies past
    /// the physical end (behind block 0).
    fn rseek(&self, head: u32, tail: u32, count: u32) -> Result<(u32, Option<u32>, bool)> {
        let mut found = 0u32;
        let mut rblk = None;
        let end = if head > tail { tail } else { 0 };
        self.dev.scan_backward(end, head, |i, b| {
            if is_header(b) {
                rblk = Some(i);
                found = found.saturating_add(1);
            }
            found == count
        })?;
        let mut wrapped = false;
        if tail >= head && found != count {
            self.dev.scan_backward(tail, self.len, |i, b| {
                if is_header(b) {
                    rblk = Some(i);
                    wrapped = true;
                    found = found.saturating_add(1);
                }
                found == count
            })?;
        }
        Ok((found, rblk, wrapped))
    }

    /// The first record header at or after `tail` (before the head).
    fn seek_forward(&self, head: u32, tail: u32) -> Result<Option<u32>> {
        let end = if head > tail {
            head
        } else {
            self.len.saturating_sub(1)
        };
        let n = end.saturating_sub(tail).saturating_add(1);
        if let Some(b) = self.dev.scan_forward(tail, n, |_, b| is_header(b))? {
            return Ok(Some(b));
        }
        if tail > head {
            return self.dev.scan_forward(0, head, |_, b| is_header(b));
        }
        Ok(None)
    }

    /// Clean when the record at `rblk` is a one-op record ending exactly at
    /// the head whose op carries the unmount flag.
    fn is_unmount(&self, head: u32, rblk: u32, h: &RawHeader) -> Result<bool> {
        let hb = self.hblks(h);
        let after = self.dev.wrap(rblk, hb.saturating_add(btobb(h.len)));
        if head != after || h.num_logops != 1 {
            return Ok(false);
        }
        // The op header's flags are byte 9 of the first data block; only
        // the first 4 bytes of the block are cycle-stamped.
        let data = self.dev.block(self.dev.wrap(rblk, hb))?;
        Ok(data.get(9).is_some_and(|f| f & XLOG_UNMOUNT_TRANS != 0))
    }

    /// The first record from `from` to `head` whose header is malformed or
    /// whose CRC does not match.
    fn first_bad(&self, from: u32, head: u32) -> Result<Option<u32>> {
        let mut reader = RecordReader::new();
        let mut pos = from;
        let mut left = self.dev.distance(from, head);
        // Each step consumes at least one block.
        while left > 0 {
            let rec = match reader.read(self.dev, pos) {
                Ok(r) => r,
                Err(Error::Corrupt { .. }) => return Ok(Some(pos)),
                Err(e) => return Err(e),
            };
            if rec.crc.is_bad() {
                return Ok(Some(pos));
            }
            let n = rec.header.total_bbs().max(1);
            if n > left {
                break;
            }
            left = left.saturating_sub(n);
            pos = self.dev.wrap(pos, n);
        }
        Ok(None)
    }
}

fn avg(a: u32, b: u32) -> u32 {
    u32::try_from(u64::from(a).saturating_add(u64::from(b)) / 2).unwrap_or(a)
}

/// Find the head and tail of the log.
pub fn find_head_tail<R: ReadAt>(dev: &LogDev<'_, R>) -> Result<HeadTail> {
    let v2 = dev.is_v2();
    let record_bytes: u32 = if v2 { 256 * 1024 } else { 32 * 1024 };
    let f = Finder {
        dev,
        len: dev.len_bbs(),
        total_rec_shift: btobb(XLOG_MAX_ICLOGS.saturating_mul(record_bytes)),
        rec_shift: btobb(record_bytes),
    };
    let mut head = f.find_head()?;
    if head == 0 && f.cycle(0)? == 0 {
        return Ok(HeadTail {
            head: Lsn { cycle: 0, block: 0 },
            tail: Lsn { cycle: 0, block: 0 },
            clean: true,
            zeroed: true,
            last_record: None,
            torn_write: None,
            tail_moved: None,
            last_h_size: 0,
        });
    }

    let (found, rblk, mut wrapped) = f.rseek(head, head, 1)?;
    let (true, Some(mut rblk)) = (found > 0, rblk) else {
        return Err(corrupt(dev, head, "no record header anywhere in the log"));
    };
    let mut rh = RawHeader::of(&dev.block(rblk)?);
    let mut tail_lsn = Lsn::from_raw(rh.tail_lsn);
    let mut tail = tail_lsn.block;
    let mut clean = f.is_unmount(head, rblk, &rh)?;
    let mut torn_write = None;
    if clean {
        tail = head;
    } else {
        // Torn writes: CRC-check the last records at the head.
        let (_, oldest, _) = f.rseek(head, tail, XLOG_MAX_ICLOGS)?;
        let oldest = oldest.unwrap_or(rblk);
        if let Some(bad) = f.first_bad(oldest, head)? {
            let (n, prev, prev_wrapped) = f.rseek(bad, tail, 1)?;
            let (true, Some(prev)) = (n > 0, prev) else {
                return Err(corrupt(
                    dev,
                    bad,
                    "torn write at the head and no good record before it",
                ));
            };
            torn_write = Some(TornWrite {
                old_head: head,
                first_bad: bad,
            });
            head = bad;
            rblk = prev;
            wrapped = prev_wrapped;
            rh = RawHeader::of(&dev.block(rblk)?);
            tail_lsn = Lsn::from_raw(rh.tail_lsn);
            tail = tail_lsn.block;
            clean = f.is_unmount(head, rblk, &rh)?;
            if clean {
                tail = head;
            }
        }
    }
    let head_cycle = if wrapped {
        rh.cycle.wrapping_add(1)
    } else {
        rh.cycle
    };

    let mut tail_moved = None;
    let mut tail_cycle = if clean { head_cycle } else { tail_lsn.cycle };
    if !clean && tail != head {
        if tail >= dev.len_bbs() {
            return Err(corrupt(
                dev,
                rblk,
                format!(
                    "h_tail_lsn {tail_lsn} points past the end of the log ({} blocks)",
                    dev.len_bbs()
                ),
            ));
        }
        // The tail must point at a record header.
        match f.seek_forward(head, tail)? {
            Some(t) if t != tail => {
                tail_moved = Some(TailMove {
                    from: tail,
                    to: t,
                    reason: "the tail did not point at a record header".into(),
                });
                tail_cycle = cycle_of(&dev.block(t)?);
                tail = t;
            }
            Some(_) => {}
            None => {
                return Err(corrupt(
                    dev,
                    tail,
                    "no record header between the tail and the head",
                ))
            }
        }
    }
    Ok(HeadTail {
        head: Lsn {
            cycle: head_cycle,
            block: head,
        },
        tail: Lsn {
            cycle: tail_cycle,
            block: tail,
        },
        clean,
        zeroed: false,
        last_record: Some(rblk),
        torn_write,
        tail_moved,
        last_h_size: rh.size,
    })
}
