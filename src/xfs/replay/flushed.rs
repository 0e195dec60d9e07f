//! Buffers as replay last wrote them: the part of the kernel's buffer
//! cache that saves a read after a buffer is written at an LSN change.

use std::collections::BTreeMap;

/// Copies of buffers as they were last written to the overlay, so that a
/// later transaction taking the same buffer (the kernel finds it in its
/// buffer cache) does not read it back from the image and lay the
/// overlay's sectors over it. A copy is dropped as soon as anything else
/// is written over any of its sectors, so it always equals what a read
/// would give. Bounded: past [`Flushed::MAX_BYTES`] all copies are dropped.
#[derive(Default)]
pub struct Flushed {
    copies: BTreeMap<(u64, u32), Vec<u8>>,
    bytes: usize,
    /// Longest buffer kept, in sectors (how far back an overlap can start).
    max_len: u32,
}

impl Flushed {
    pub const MAX_BYTES: usize = 32 << 20;

    /// Drop every copy that covers a sector of `daddr .. daddr + sectors`.
    pub fn forget(&mut self, daddr: u64, sectors: u64) {
        if self.copies.is_empty() {
            return;
        }
        let from = daddr.saturating_sub(u64::from(self.max_len));
        let end = daddr.saturating_add(sectors);
        let hit: Vec<(u64, u32)> = self
            .copies
            .range((from, 0)..(end, 0))
            .map(|(k, _)| *k)
            .filter(|&(d, l)| d.saturating_add(u64::from(l)) > daddr)
            .collect();
        for k in hit {
            if let Some(v) = self.copies.remove(&k) {
                self.bytes = self.bytes.saturating_sub(v.len());
            }
        }
    }

    /// Keep `data` as the bytes of buffer `(daddr, len)` just written.
    pub fn keep(&mut self, daddr: u64, len: u32, data: Vec<u8>) {
        self.forget(daddr, u64::from(len));
        if u64::try_from(data.len()).ok() != Some(u64::from(len).saturating_mul(512)) {
            return;
        }
        if self.bytes.saturating_add(data.len()) > Self::MAX_BYTES {
            self.copies.clear();
            self.bytes = 0;
        }
        self.bytes = self.bytes.saturating_add(data.len());
        self.max_len = self.max_len.max(len);
        self.copies.insert((daddr, len), data);
    }

    pub fn take(&mut self, daddr: u64, len: u32) -> Option<Vec<u8>> {
        let v = self.copies.remove(&(daddr, len))?;
        self.bytes = self.bytes.saturating_sub(v.len());
        Some(v)
    }
}

#[cfg(test)]
#[allow(
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::cast_possible_truncation
)]
mod tests {
    use super::Flushed;

    fn buf(len: u32, fill: u8) -> Vec<u8> {
        vec![fill; len as usize * 512]
    }

    #[test]
    fn a_copy_is_given_once_and_only_for_its_own_place_and_size() {
        let mut f = Flushed::default();
        f.keep(64, 8, buf(8, 1));
        assert_eq!(f.take(64, 16), None, "another size at the same place");
        assert_eq!(f.take(72, 8), None);
        assert_eq!(f.take(64, 8), Some(buf(8, 1)));
        assert_eq!(f.take(64, 8), None, "taken: a later read goes to the disk");
    }

    #[test]
    fn a_write_over_any_sector_drops_the_copies_it_covers() {
        let mut f = Flushed::default();
        f.keep(64, 8, buf(8, 1)); // sectors 64..72
        f.keep(72, 8, buf(8, 2)); // sectors 72..80
        f.keep(96, 32, buf(32, 3)); // sectors 96..128
        f.forget(71, 1);
        assert_eq!(f.take(64, 8), None, "its last sector was written");
        f.forget(127, 4);
        assert_eq!(f.take(96, 32), None, "a long buffer starting well before");
        assert_eq!(f.take(72, 8), Some(buf(8, 2)), "not touched");
    }

    #[test]
    fn a_buffer_kept_over_another_replaces_what_it_covers() {
        let mut f = Flushed::default();
        f.keep(64, 16, buf(16, 1));
        f.keep(72, 8, buf(8, 2)); // written later, over the second half
        assert_eq!(f.take(64, 16), None);
        assert_eq!(f.take(72, 8), Some(buf(8, 2)));
        // A copy whose bytes are not its size is not kept.
        f.keep(200, 8, vec![0; 100]);
        assert_eq!(f.take(200, 8), None);
    }

    #[test]
    fn copies_past_the_bound_are_all_dropped() {
        let mut f = Flushed::default();
        let len = 128u32; // 64 KiB
        let n = Flushed::MAX_BYTES / (len as usize * 512);
        for i in 0..n as u64 {
            f.keep(i * 1000, len, buf(len, 7));
        }
        assert!(f.bytes <= Flushed::MAX_BYTES);
        f.keep(n as u64 * 1000, len, buf(len, 8));
        assert!(f.bytes <= Flushed::MAX_BYTES);
        assert_eq!(f.take(0, len), None, "dropped when the bound was passed");
        assert_eq!(f.take(n as u64 * 1000, len), Some(buf(len, 8)));
    }
}
