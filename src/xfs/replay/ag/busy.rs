//! Busy extents (`xfs_extent_busy.c`): blocks freed in this mount that an
//! allocation may not reuse before the free is on disk, trimmed out of a
//! candidate extent or taken back from the busy list for the free list.

use super::{AgStore, BusyExtent};
use crate::xfs::read::ReadAt;

impl<'a, R: ReadAt> AgStore<'a, R> {
    /// `xfs_extent_busy_insert`.
    pub fn busy_insert(&mut self, bno: u32, len: u32) {
        if len > 0 {
            self.busy.push(BusyExtent {
                bno,
                len,
                tx: self.tx,
            });
        }
    }

    /// The busy extents, to hand to a later step of the same checkpoint.
    pub fn busy_extents(&self) -> Vec<(u32, u32)> {
        self.busy.iter().map(|e| (e.bno, e.len)).collect()
    }

    /// Forget every busy extent (the log checkpoints that freed them are
    /// on disk: after a remount, for instance).
    pub fn clear_busy(&mut self) {
        self.busy.clear();
    }

    /// `xfs_extent_busy_reuse`: `bno` leaves the busy extents.
    pub(super) fn busy_reuse(&mut self, bno: u32) {
        let mut out = Vec::with_capacity(self.busy.len().saturating_add(1));
        for &x in &self.busy {
            let (b, e) = (x.bno, x.bno.saturating_add(x.len));
            if bno < b || bno >= e {
                out.push(x);
                continue;
            }
            if bno > b {
                out.push(BusyExtent {
                    len: bno.saturating_sub(b),
                    ..x
                });
            }
            let after = bno.saturating_add(1);
            if after < e {
                out.push(BusyExtent {
                    bno: after,
                    len: e.saturating_sub(after),
                    ..x
                });
            }
        }
        self.busy = out;
    }

    /// `xfs_extent_busy_trim`: the part of the free extent `[bno, bno +
    /// len)` an allocation of `minlen..=maxlen` blocks may use, or `None`.
    pub(crate) fn busy_trim(
        &self,
        bno: u32,
        len: u32,
        minlen: u32,
        maxlen: u32,
    ) -> Option<(u32, u32)> {
        let mut fbno = bno;
        let mut fend = bno.saturating_add(len);
        let mut guard = 0usize;
        loop {
            guard = guard.saturating_add(1);
            if guard > self.busy.len().saturating_add(2) {
                break;
            }
            let Some((bb, bl)) = self
                .busy
                .iter()
                .map(|e| (e.bno, e.len))
                .find(|&(b, l)| b < fend && b.saturating_add(l) > fbno)
            else {
                break;
            };
            let bend = bb.saturating_add(bl);
            if bb <= fbno {
                if fend <= bend {
                    return None;
                }
                fbno = bend;
            } else if bend >= fend || bb.saturating_sub(fbno) >= maxlen {
                // End overlap, or the part left of it is long enough.
                fend = bb;
            } else if fend.saturating_sub(bend) >= maxlen.saturating_mul(4) {
                fbno = bend;
            } else if bb.saturating_sub(fbno) >= minlen {
                fend = bb;
            } else {
                return None;
            }
            if fend.saturating_sub(fbno) < minlen {
                return None;
            }
        }
        (fend > fbno).then(|| (fbno, fend.saturating_sub(fbno)))
    }

    /// A transaction invalidates the buffer of btree block `bno`
    /// (`xfs_trans_binval`): once committed, it stays locked and pinned
    /// until its checkpoint is on disk.
    pub(crate) fn pin(&mut self, bno: u32) {
        self.pinned.insert(bno, self.tx);
    }

    /// A transaction gets the buffer of block `bno` for a new use
    /// (`xfs_trans_get_buf`). If an earlier transaction of the checkpoint
    /// being built invalidated it, the buffer is stale and pinned, and
    /// `xfs_buf_lock` forces the log and waits for it: every committed
    /// transaction goes to disk as a checkpoint, whose busy extents and
    /// pinned buffers are then let go ([`Self::checkpoint_done`]). The
    /// buffer got is the cached one, its old bytes kept.
    pub(crate) fn get_buf(&mut self, bno: u32) {
        if self.pinned.get(&bno).is_some_and(|t| *t < self.tx) {
            self.forced = true;
            self.reused.insert(bno);
            self.checkpoint_done();
        }
        self.pinned.remove(&bno);
    }

    /// The committed transactions are on disk (a log force): their busy
    /// extents and pinned buffers are let go; the transaction being built
    /// keeps its own.
    pub(crate) fn checkpoint_done(&mut self) {
        let tx = self.tx;
        self.busy.retain(|e| e.tx >= tx);
        self.pinned.retain(|_, t| *t >= tx);
    }
}
