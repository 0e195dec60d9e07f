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
//!
//! [`describe_run`] names what a run covers for the buffer types whose
//! layout is fixed or self-describing: superblock, AGF, AGI, AGFL, inode
//! clusters, directory data blocks.

use super::items::{BufItem, Segment};
use super::ItemContext;
use crate::xfs::format::ag::{XfsAgf, XfsAgi};
use crate::xfs::format::log::*;
use crate::xfs::format::sb::XfsDsb;
use core::mem::{offset_of, size_of};
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

/// What a run of a buffer covers, in words, for the buffer types whose
/// layout this reader knows. Empty when it does not know.
pub fn describe_run(b: &BufItem, run: Run, ctx: &ItemContext) -> Vec<String> {
    let (lo, hi) = run.bytes();
    match b.buf_type {
        XFS_BLFT_SB_BUF => fields_in(SB_FIELDS, size_of::<XfsDsb>(), lo, hi, "sb"),
        XFS_BLFT_AGF_BUF => fields_in(AGF_FIELDS, size_of::<XfsAgf>(), lo, hi, "agf"),
        XFS_BLFT_AGI_BUF => agi_fields(lo, hi),
        XFS_BLFT_AGFL_BUF => agfl_fields(lo, hi, ctx),
        XFS_BLFT_DINO_BUF => inode_fields(b, lo, hi, ctx),
        XFS_BLFT_DIR_DATA_BUF | XFS_BLFT_DIR_BLOCK_BUF => dir_data_fields(b, lo, hi, ctx),
        _ if b.flags & XFS_BLF_INODE_BUF != 0 => inode_fields(b, lo, hi, ctx),
        _ => Vec::new(),
    }
}

type FieldTable = &'static [(&'static str, usize, usize)];

macro_rules! fields {
    ($t:ty; $($f:ident),* $(,)?) => {
        &[$((stringify!($f), offset_of!($t, $f), size_of_field(|s: &$t| &s.$f))),*]
    };
}

const fn size_of_field<T, F>(_: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

const SB_FIELDS: FieldTable = fields!(XfsDsb;
    sb_magicnum, sb_blocksize, sb_dblocks, sb_rblocks, sb_rextents, sb_uuid, sb_logstart,
    sb_rootino, sb_rbmino, sb_rsumino, sb_rextsize, sb_agblocks, sb_agcount, sb_rbmblocks,
    sb_logblocks, sb_versionnum, sb_sectsize, sb_inodesize, sb_inopblock, sb_fname,
    sb_blocklog, sb_sectlog, sb_inodelog, sb_inopblog, sb_agblklog, sb_rextslog,
    sb_inprogress, sb_imax_pct, sb_icount, sb_ifree, sb_fdblocks, sb_frextents, sb_uquotino,
    sb_gquotino, sb_qflags, sb_flags, sb_shared_vn, sb_inoalignmt, sb_unit, sb_width,
    sb_dirblklog, sb_logsectlog, sb_logsectsize, sb_logsunit, sb_features2,
    sb_bad_features2, sb_features_compat, sb_features_ro_compat, sb_features_incompat,
    sb_features_log_incompat, sb_crc, sb_spino_align, sb_pquotino, sb_lsn, sb_meta_uuid,
    sb_metadirino, sb_rgcount, sb_rgextents, sb_rgblklog, sb_pad, sb_rtstart, sb_rtreserved,
);

const AGF_FIELDS: FieldTable = fields!(XfsAgf;
    agf_magicnum, agf_versionnum, agf_seqno, agf_length, agf_bno_root, agf_cnt_root,
    agf_rmap_root, agf_bno_level, agf_cnt_level, agf_rmap_level, agf_flfirst, agf_fllast,
    agf_flcount, agf_freeblks, agf_longest, agf_btreeblks, agf_uuid, agf_rmap_blocks,
    agf_refcount_blocks, agf_refcount_root, agf_refcount_level, agf_spare64, agf_lsn,
    agf_crc, agf_spare2,
);

/// Names of the table's fields overlapping `[lo, hi)`; bytes past the
/// structure are the unused rest of its sector.
fn fields_in(table: FieldTable, size: usize, lo: u32, hi: u32, what: &str) -> Vec<String> {
    let lo = usize::try_from(lo).unwrap_or(usize::MAX);
    let hi = usize::try_from(hi).unwrap_or(usize::MAX);
    let mut out: Vec<String> = table
        .iter()
        .filter(|(_, off, len)| *off < hi && off.saturating_add(*len) > lo)
        .map(|(n, _, _)| (*n).to_string())
        .collect();
    if hi > size {
        out.push(format!("(unused sector space after the {what})"));
    }
    out
}

fn agi_fields(lo: u32, hi: u32) -> Vec<String> {
    const AGI: FieldTable = fields!(XfsAgi;
        agi_magicnum, agi_versionnum, agi_seqno, agi_length, agi_count, agi_root, agi_level,
        agi_freecount, agi_newino, agi_dirino, agi_unlinked, agi_uuid, agi_crc, agi_pad32,
        agi_lsn, agi_free_root, agi_free_level, agi_iblocks, agi_fblocks,
    );
    let unl = offset_of!(XfsAgi, agi_unlinked);
    let mut out = Vec::new();
    for n in fields_in(AGI, size_of::<XfsAgi>(), lo, hi, "agi") {
        if n == "agi_unlinked" {
            // Name the hash buckets.
            let first = usize::try_from(lo)
                .unwrap_or(0)
                .max(unl)
                .saturating_sub(unl)
                / 4;
            let last = usize::try_from(hi)
                .unwrap_or(0)
                .min(unl.saturating_add(256))
                .saturating_sub(unl)
                .saturating_sub(1)
                / 4;
            if first == last {
                out.push(format!("agi_unlinked[{first}]"));
            } else {
                out.push(format!("agi_unlinked[{first}..={last}]"));
            }
        } else {
            out.push(n);
        }
    }
    out
}

fn agfl_fields(lo: u32, hi: u32, ctx: &ItemContext) -> Vec<String> {
    let hdr: u32 = if ctx.v5 { 36 } else { 0 };
    let mut out = Vec::new();
    if ctx.v5 && lo < hdr {
        out.push("agfl header (magic, seqno, uuid, lsn, crc)".to_string());
    }
    let from = lo.max(hdr);
    if hi > from {
        let sect = ctx.sectsize.max(512);
        let last_slot = sect.saturating_sub(hdr) / 4;
        let a = from.saturating_sub(hdr) / 4;
        let b = (hi.saturating_sub(hdr).div_ceil(4)).min(last_slot);
        if b > a {
            out.push(format!("agfl_bno[{a}..{b}]"));
        }
    }
    out
}

/// Inodes of a cluster buffer covered by `[lo, hi)`, with the part of each.
fn inode_fields(b: &BufItem, lo: u32, hi: u32, ctx: &ItemContext) -> Vec<String> {
    let isize = ctx.inodesize.max(256);
    let first = lo.checked_div(isize).unwrap_or(0);
    let last = hi.saturating_sub(1).checked_div(isize).unwrap_or(0);
    let mut out = Vec::new();
    for slot in first..=last.min(first.saturating_add(256)) {
        let start = slot.saturating_mul(isize);
        let a = lo.max(start).saturating_sub(start);
        let z = hi.min(start.saturating_add(isize)).saturating_sub(start);
        let core: u32 = if ctx.v5 { 176 } else { 100 };
        let part = if b.flags & XFS_BLF_INODE_BUF != 0 && a <= 96 && (100..=128).contains(&z) {
            // Unlinked-list updates log only di_next_unlinked.
            "di_next_unlinked"
        } else if z <= core {
            "core"
        } else if a >= core {
            "literal area (forks)"
        } else {
            "core and literal area"
        };
        let ino = ino_at(b, start, ctx);
        match ino {
            Some(i) => out.push(format!("inode {i}: {part}")),
            None => out.push(format!("inode slot {slot}: {part}")),
        }
    }
    out
}

/// The inode number of the inode at byte `off` of a cluster buffer.
pub fn ino_at(b: &BufItem, off: u32, ctx: &ItemContext) -> Option<u64> {
    let blkno = u64::try_from(b.blkno).ok()?;
    let bb_per_block = 1u64.checked_shl(u32::from(ctx.blocklog).checked_sub(9)?)?;
    let byte = blkno.checked_mul(512)?.checked_add(u64::from(off))?;
    let linear = byte.checked_shr(u32::from(ctx.blocklog))?;
    let _ = bb_per_block;
    let agblocks = u64::from(ctx.agblocks);
    let agno = linear.checked_div(agblocks)?;
    let agbno = linear.checked_rem(agblocks)?;
    let in_block = byte.checked_rem(u64::from(ctx.blocksize))?;
    let slot = in_block.checked_div(u64::from(ctx.inodesize))?;
    let agino = agbno.checked_shl(u32::from(ctx.inopblog))? | slot;
    let shift = u32::from(ctx.agblklog).checked_add(u32::from(ctx.inopblog))?;
    Some(agno.checked_shl(shift)? | agino)
}

/// Header, bestfree and entries of a directory data (or single-block)
/// block covered by `[lo, hi)`.
fn dir_data_fields(b: &BufItem, lo: u32, hi: u32, ctx: &ItemContext) -> Vec<String> {
    let (hdr, bestfree_off): (u32, u32) = if ctx.v5 { (64, 48) } else { (16, 4) };
    let mut out = Vec::new();
    // Offsets in the directory block.
    let base = match b.segment {
        Segment::Whole => 0,
        Segment::Part(o) => o,
        Segment::Unknown => {
            out.push("part of a directory block logged in segments (its place unknown)".into());
            return out;
        }
    };
    let (lo, hi) = (lo.saturating_add(base), hi.saturating_add(base));
    if lo < bestfree_off {
        out.push(if ctx.v5 {
            "data header (magic, crc, blkno, lsn, uuid, owner)".to_string()
        } else {
            "data header (magic)".to_string()
        });
    }
    if lo < bestfree_off.saturating_add(12) && hi > bestfree_off {
        out.push("bestfree[3]".to_string());
    }
    if let Some(entries) = &b.dir_entries {
        for e in entries.iter() {
            let end = e.offset.saturating_add(e.len);
            if e.offset < hi && end > lo {
                match &e.name {
                    Some(n) => out.push(format!("entry \"{n}\" at {}", e.offset)),
                    None => out.push(format!("free space at {} ({} bytes)", e.offset, e.len)),
                }
            }
        }
    } else if hi > hdr {
        out.push("entries".to_string());
    }
    let bsize = match b.segment {
        Segment::Whole => u32::try_from(u64::from(b.len).saturating_mul(512)).unwrap_or(u32::MAX),
        _ => ctx.dirblksize,
    };
    if b.buf_type == XFS_BLFT_DIR_BLOCK_BUF && hi >= bsize && bsize > 0 {
        out.push("leaf entries and block tail".to_string());
    }
    out
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

    #[test]
    fn field_tables_are_sane() {
        assert_eq!(AGF_FIELDS[0], ("agf_magicnum", 0, 4));
        assert!(AGF_FIELDS.contains(&("agf_freeblks", 52, 4)));
        assert!(SB_FIELDS.contains(&("sb_icount", 128, 8)));
        let f = fields_in(AGF_FIELDS, 224, 0, 128, "agf");
        assert!(f.contains(&"agf_longest".to_string()));
        assert!(!f.contains(&"agf_lsn".to_string()));
        let f = agi_fields(40, 48);
        assert_eq!(f, vec!["agi_unlinked[0..=1]".to_string()]);
    }
}
