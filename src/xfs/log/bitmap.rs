//! A buffer item's dirty bitmap: bit n of `blf_data_map` says bytes
//! `[128·n, 128·n + 128)` of the buffer were logged. Each maximal run of set
//! bits is one logged region, in ascending order, so normally an item has
//! one region per run after its format region.
//!
//! The exception: buffers built from separate memory pages (older kernels,
//! for inode clusters and large directory blocks) log a run that crosses a
//! page boundary as two regions split at the boundary. Recovery copes by
//! consuming regions in order and cutting a run short when its region is
//! shorter ([`fit_regions`] does the same).

use crate::xfs::format::log::XFS_BLF_CHUNK;
use serde::ser::SerializeTuple;
use serde::{Serialize, Serializer};

/// A run of dirty chunks: `count` chunks of 128 bytes from chunk `first`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub first: u32,
    pub count: u32,
}

impl Serialize for Run {
    /// `[first_chunk, chunk_count]`.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(2)?;
        t.serialize_element(&self.first)?;
        t.serialize_element(&self.count)?;
        t.end()
    }
}

impl Run {
    /// Byte range of the buffer the run covers.
    pub fn bytes(self) -> (u32, u32) {
        let lo = self.first.saturating_mul(XFS_BLF_CHUNK);
        (
            lo,
            lo.saturating_add(self.count.saturating_mul(XFS_BLF_CHUNK)),
        )
    }
}

fn bit(map: &[u32], n: u32) -> bool {
    let word = usize::try_from(n / 32).unwrap_or(usize::MAX);
    map.get(word)
        .is_some_and(|w| w.checked_shr(n % 32).unwrap_or(0) & 1 != 0)
}

fn nbits(map: &[u32]) -> u32 {
    u32::try_from(map.len()).unwrap_or(0).saturating_mul(32)
}

/// The first set bit at or after `start` (`xfs_next_bit`).
pub fn next_bit(map: &[u32], start: u32) -> Option<u32> {
    let total = nbits(map);
    let mut n = start;
    while n < total {
        let word = map
            .get(usize::try_from(n / 32).unwrap_or(usize::MAX))
            .copied()
            .unwrap_or(0);
        let rest = word.checked_shr(n % 32).unwrap_or(0);
        if rest == 0 {
            // Skip to the next word.
            n = (n / 32).saturating_add(1).saturating_mul(32);
            continue;
        }
        return Some(n.saturating_add(rest.trailing_zeros()));
    }
    None
}

/// Length of the run of set bits starting at `start` (`xfs_contig_bits`).
pub fn contig_bits(map: &[u32], start: u32) -> u32 {
    let total = nbits(map);
    let mut n = start;
    while n < total && bit(map, n) {
        n = n.saturating_add(1);
    }
    n.saturating_sub(start)
}

/// The maximal runs of set bits, in ascending order.
pub fn runs(map: &[u32]) -> Vec<Run> {
    let mut out = Vec::new();
    let mut at = 0u32;
    while let Some(first) = next_bit(map, at) {
        let count = contig_bits(map, first).max(1);
        out.push(Run { first, count });
        at = first.saturating_add(count);
    }
    out
}

/// Number of set bits.
pub fn chunks_dirty(map: &[u32]) -> u32 {
    map.iter().map(|w| w.count_ones()).sum()
}

/// One data region of a buffer item placed in the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Piece {
    pub first: u32,
    pub count: u32,
    /// Index of the region in the item (the format region is 0).
    pub region: u32,
}

/// How a buffer item's data regions line up with its bitmap.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RegionFit {
    pub pieces: Vec<Piece>,
    /// Runs logged as more than one region (a run crossing a page boundary
    /// of a buffer made of separate pages).
    pub straddles: u32,
    /// Whether every split of a run fell on a 4 KiB boundary of the buffer.
    pub splits_on_pages: bool,
    /// Regions and bitmap disagree (too few or too many regions, a region
    /// of the wrong length).
    pub problem: Option<String>,
}

/// Consume the data regions (`data_lens`, the regions after the format
/// region) along the bitmap the way recovery does.
pub fn fit_regions(map: &[u32], data_lens: &[u32]) -> RegionFit {
    let mut fit = RegionFit {
        splits_on_pages: true,
        ..RegionFit::default()
    };
    let mut region = 0usize;
    let mut at = 0u32;
    while let Some(first) = next_bit(map, at) {
        let run = contig_bits(map, first).max(1);
        // Walk this run, one region at a time.
        let mut done = 0u32;
        while done < run {
            let Some(len) = data_lens.get(region).copied() else {
                fit.problem = Some(format!(
                    "the bitmap has more dirty chunks than the item has regions ({} data regions)",
                    data_lens.len()
                ));
                return fit;
            };
            let left = run.saturating_sub(done);
            let n = (len / XFS_BLF_CHUNK).min(left);
            if n == 0 {
                fit.problem = Some(format!(
                    "data region {} is {len} bytes, less than one 128-byte chunk",
                    region.saturating_add(1)
                ));
                return fit;
            }
            if done > 0 {
                let split = first.saturating_add(done).saturating_mul(XFS_BLF_CHUNK);
                if split % 4096 != 0 {
                    fit.splits_on_pages = false;
                }
            }
            fit.pieces.push(Piece {
                first: first.saturating_add(done),
                count: n,
                region: u32::try_from(region.saturating_add(1)).unwrap_or(u32::MAX),
            });
            if n < left && len % XFS_BLF_CHUNK != 0 {
                fit.problem = Some(format!(
                    "data region {} is {len} bytes, not a multiple of 128",
                    region.saturating_add(1)
                ));
            }
            region = region.saturating_add(1);
            done = done.saturating_add(n);
        }
        let pieces_here = fit
            .pieces
            .iter()
            .rev()
            .take_while(|p| p.first >= first)
            .count();
        if pieces_here > 1 {
            fit.straddles = fit.straddles.saturating_add(1);
        }
        at = first.saturating_add(run);
    }
    if region < data_lens.len() && fit.problem.is_none() {
        fit.problem = Some(format!(
            "{} data regions but the bitmap accounts for {region}",
            data_lens.len()
        ));
    }
    fit
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn runs_group_contiguous_bits() {
        assert_eq!(runs(&[0]), vec![]);
        assert_eq!(runs(&[1]), vec![Run { first: 0, count: 1 }]);
        assert_eq!(
            runs(&[0b1011_0001]),
            vec![
                Run { first: 0, count: 1 },
                Run { first: 4, count: 2 },
                Run { first: 7, count: 1 }
            ]
        );
        // A run across a word boundary is one run.
        assert_eq!(
            runs(&[0x8000_0000, 0x0000_0003]),
            vec![Run {
                first: 31,
                count: 3
            }]
        );
        assert_eq!(
            runs(&[u32::MAX; 17]),
            vec![Run {
                first: 0,
                count: 544
            }]
        );
        assert_eq!(chunks_dirty(&[0b1011_0001, 3]), 6);
        assert_eq!(next_bit(&[0, 0, 4], 0), Some(66));
        assert_eq!(next_bit(&[0, 0, 4], 67), None);
    }

    #[test]
    fn regions_fit_runs_one_to_one() {
        let fit = fit_regions(&[0b1011_0001], &[128, 256, 128]);
        assert_eq!(fit.problem, None);
        assert_eq!(fit.straddles, 0);
        assert_eq!(fit.pieces.len(), 3);
        assert_eq!(
            fit.pieces[1],
            Piece {
                first: 4,
                count: 2,
                region: 2
            }
        );
    }

    #[test]
    fn a_run_split_at_a_page_is_a_straddle() {
        // Chunks 30..34 dirty: bytes 3840..4352, crossing 4096.
        let map = [0xC000_0000, 0x3];
        let fit = fit_regions(&map, &[256, 256]);
        assert_eq!(fit.problem, None);
        assert_eq!(fit.straddles, 1);
        assert!(fit.splits_on_pages);
        assert_eq!(
            fit.pieces,
            vec![
                Piece {
                    first: 30,
                    count: 2,
                    region: 1
                },
                Piece {
                    first: 32,
                    count: 2,
                    region: 2
                }
            ]
        );
    }

    #[test]
    fn mismatches_are_reported() {
        assert!(fit_regions(&[1], &[]).problem.is_some());
        assert!(fit_regions(&[1], &[128, 128]).problem.is_some());
        assert!(fit_regions(&[1], &[64]).problem.is_some());
        assert!(fit_regions(&[0], &[]).problem.is_none());
    }
}
