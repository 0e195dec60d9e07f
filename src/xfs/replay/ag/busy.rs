//! Busy extents (`xfs_extent_busy.c`): blocks freed in this mount that an
//! allocation may not reuse before the free is on disk, trimmed out of a
//! candidate extent or taken back from the busy list for the free list.

use super::AgStore;
use crate::xfs::read::ReadAt;

impl<'a, R: ReadAt> AgStore<'a, R> {
    /// `xfs_extent_busy_insert`.
    pub fn busy_insert(&mut self, bno: u32, len: u32) {
        if len > 0 {
            self.busy.push((bno, len));
        }
    }

    /// The busy extents, to hand to a later step of the same checkpoint.
    pub fn busy_extents(&self) -> Vec<(u32, u32)> {
        self.busy.clone()
    }

    /// Forget every busy extent (the log checkpoints that freed them are
    /// on disk: after a remount, for instance).
    pub fn clear_busy(&mut self) {
        self.busy.clear();
    }

    /// `xfs_extent_busy_reuse`: `bno` leaves the busy extents.
    pub(super) fn busy_reuse(&mut self, bno: u32) {
        let mut out = Vec::with_capacity(self.busy.len().saturating_add(1));
        for &(b, l) in &self.busy {
            let e = b.saturating_add(l);
            if bno < b || bno >= e {
                out.push((b, l));
                continue;
            }
            if bno > b {
                out.push((b, bno.saturating_sub(b)));
            }
            let after = bno.saturating_add(1);
            if after < e {
                out.push((after, e.saturating_sub(after)));
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
            let Some(&(bb, bl)) = self
                .busy
                .iter()
                .find(|&&(b, l)| b < fend && b.saturating_add(l) > fbno)
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
}
