//! The buffer cancel table (recovery pass 1).
//!
//! A buffer freed while it was logged is logged once more with the CANCEL
//! flag. Pass 1 counts those per exact `(daddr, length)`; in pass 2 every
//! earlier copy of that buffer is skipped, and each cancel item met drops
//! one count, so a buffer reused after its last cancel is replayed again.
//! Inode items and inode-create clusters consult the same table.

use std::collections::HashMap;

/// `(blf_blkno, blf_len)` -> how many cancel items are still ahead.
#[derive(Default, Debug, Clone)]
pub struct CancelTable {
    entries: HashMap<(i64, u32), u32>,
    /// Cancel items seen in pass 1.
    pub added: u64,
}

impl CancelTable {
    /// Pass 1: one more cancel of this buffer.
    pub fn add(&mut self, blkno: i64, len: u32) {
        let c = self.entries.entry((blkno, len)).or_insert(0);
        *c = c.saturating_add(1);
        self.added = self.added.saturating_add(1);
    }

    /// Whether a later cancel of this exact buffer lies ahead.
    pub fn is_cancelled(&self, blkno: i64, len: u32) -> bool {
        self.entries.contains_key(&(blkno, len))
    }

    /// Pass 2, at a cancel item: drop one count (the entry goes at zero).
    /// Returns whether the buffer was in the table.
    pub fn put(&mut self, blkno: i64, len: u32) -> bool {
        match self.entries.get_mut(&(blkno, len)) {
            Some(c) if *c > 1 => {
                *c = c.saturating_sub(1);
                true
            }
            Some(_) => {
                self.entries.remove(&(blkno, len));
                true
            }
            None => false,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_exact_buffer_and_drops_at_zero() {
        let mut t = CancelTable::default();
        t.add(100, 8);
        t.add(100, 8);
        t.add(100, 16);
        assert!(t.is_cancelled(100, 8));
        assert!(
            !t.is_cancelled(100, 4),
            "the match is exact, not by overlap"
        );
        assert!(t.put(100, 8));
        assert!(t.is_cancelled(100, 8), "one cancel is still ahead");
        assert!(t.put(100, 8));
        assert!(
            !t.is_cancelled(100, 8),
            "reuse after the last cancel replays"
        );
        assert!(!t.put(100, 8));
        assert!(t.is_cancelled(100, 16));
        assert_eq!(t.added, 3);
    }
}
