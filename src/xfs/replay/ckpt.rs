//! How many log blocks a checkpoint takes when the kernel writes it.
//!
//! The kernel's mount finishes the recovered intents, forces the log (one
//! checkpoint, written at the old head), and only then frees the inodes of
//! the unlinked lists and the CoW staging extents, in a checkpoint of its
//! own. The blocks that later work changes carry that second checkpoint's
//! LSN: the head plus the log blocks the first one took. Those follow from
//! what the delayed-logging code formats (spec 5, 6):
//!
//! * every region is preceded by a 12-byte operation header; a checkpoint
//!   is a start operation (no payload), the transaction header, the items'
//!   regions, and a commit operation (no payload);
//! * a buffer is logged as its format (the fixed part and one 32-bit word
//!   of dirty bitmap per 32 chunks of 128 bytes) and one region per run of
//!   dirty chunks; a buffer freed is logged as its format alone;
//! * an inode is logged as its format, its core, and each fork whose
//!   records were logged, whole;
//! * a done item for each intent found in the log (a done item and an
//!   intent made and finished inside one checkpoint are both left out:
//!   neither reaches the log);
//! * records hold at most the log buffer size less its header, and each
//!   record, header included, is rounded up to the log stripe unit (512
//!   bytes without one).
//!
//! Which chunks of a buffer are dirty: those the transactions wrote
//! (`xfs_trans_log_buf`, noted by each btree write whether or not the
//! bytes changed), for the AG headers those whose bytes changed (the LSN
//! and CRC fields aside, which the kernel writes only when the buffer goes
//! to disk). A buffer item's dirty map, like an inode item's logged
//! fields, only grows until the buffer or inode is written back, which
//! recovery does not do: a later checkpoint that logs the buffer again
//! logs every chunk dirtied since the first, in earlier checkpoints too.
//! Invalidating the buffer (`xfs_trans_binval`) clears its map.
//!
//! A log force can also come in the middle of the intents' work: when a
//! transaction gets the buffer of a block that an earlier transaction of
//! the checkpoint being built freed, the buffer is stale and still pinned,
//! and `xfs_buf_lock` forces the log and waits for it. The work is then
//! several checkpoints, cut where the forces came ([`Cut`]): each holds
//! the buffers and inodes its transactions logged, the done items of the
//! intents pending at the force before and finished since, and the
//! intents logged since and still pending at its end (an intent pending
//! at both forces is in neither); each block carries the LSN of the last
//! checkpoint that logged it.

use crate::xfs::format::log::{
    XfsBufLogFormat, XfsEfiLogFormat, XfsExtent64, XfsInodeLogFormat, XfsLogDinode,
    XfsRudLogFormat, XfsTransHeader, XlogOpHeader, XFS_BLF_CHUNK, XFS_LOG_DINODE_V2_SIZE,
    XLOG_HEADER_CYCLE_SIZE,
};
use crate::xfs::format::log::{XfsMapExtent, XfsPhysExtent, XfsRuiLogFormat, XfsXmiLogFormat};
use crate::xfs::format::log::{
    XFS_LI_BUI, XFS_LI_CUI, XFS_LI_EFI, XFS_LI_EFI_RT, XFS_LI_RUI, XFS_LI_XMI,
};
use crate::xfs::log::items::ItemKind;
use crate::xfs::types::Lsn;
use core::mem::size_of;
use core::ops::Range;
use serde::Serialize;
use std::collections::BTreeSet;
use zerocopy::LittleEndian;

type Le = LittleEndian;

/// Bytes of an operation header.
const OP_HEADER: usize = size_of::<XlogOpHeader>();
const OP_HEADER_U64: u64 = 12;
const _: () = assert!(OP_HEADER == 12);
/// Chunk of a buffer's dirty bitmap.
const CHUNK: usize = 128;
const _: () = assert!(XFS_BLF_CHUNK == 128);
/// Chunks per word of the dirty bitmap.
const CHUNKS_PER_WORD: usize = 32;
/// Bytes of a bmbt block header with CRCs (long form), and without.
const BMBT_HDR_V5: usize = 72;
const BMBT_HDR_V4: usize = 24;
/// Bytes of an extent record in an inode fork.
const EXTENT_REC: usize = 16;
/// Bytes of a key and a pointer of a bmbt root in an inode.
const BMBT_KEY_PTR: usize = 16;

/// One log item as the kernel formats it: the byte length of each region.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Item {
    pub kind: &'static str,
    pub regions: Vec<usize>,
}

impl Item {
    /// Bytes in the log, operation headers included.
    pub fn bytes(&self) -> usize {
        self.regions
            .iter()
            .map(|r| r.saturating_add(OP_HEADER))
            .fold(0usize, usize::saturating_add)
    }
}

/// The done item the kernel logs for an intent it finishes at mount.
pub fn done_item(intent: ItemKind, extents: usize) -> Item {
    match intent.0 {
        XFS_LI_EFI | XFS_LI_EFI_RT => Item {
            kind: if intent.0 == XFS_LI_EFI {
                "efd"
            } else {
                "efd_rt"
            },
            regions: vec![size_of::<XfsEfiLogFormat<Le>>()
                .saturating_add(extents.saturating_mul(size_of::<XfsExtent64<Le>>()))],
        },
        _ => Item {
            kind: intent.done_kind().map_or("done", |k: ItemKind| k.name()),
            regions: vec![size_of::<XfsRudLogFormat<Le>>()],
        },
    }
}

/// The intent item the kernel logs for a deferred op of `extents` work
/// items (one region: the format and its extents).
pub fn intent_item(intent: ItemKind, extents: usize) -> Item {
    let head = size_of::<XfsRuiLogFormat<Le>>();
    let n = extents.max(1);
    let (kind, bytes) = match intent.0 {
        XFS_LI_XMI => ("xmi", size_of::<XfsXmiLogFormat<Le>>()),
        XFS_LI_BUI => (
            "bui",
            head.saturating_add(n.saturating_mul(size_of::<XfsMapExtent<Le>>())),
        ),
        XFS_LI_RUI => (
            "rui",
            head.saturating_add(n.saturating_mul(size_of::<XfsMapExtent<Le>>())),
        ),
        XFS_LI_CUI => (
            "cui",
            head.saturating_add(n.saturating_mul(size_of::<XfsPhysExtent<Le>>())),
        ),
        _ => (
            "efi",
            size_of::<XfsEfiLogFormat<Le>>()
                .saturating_add(n.saturating_mul(size_of::<XfsExtent64<Le>>())),
        ),
    };
    Item {
        kind,
        regions: vec![bytes],
    }
}

/// What the fork editor had changed at a log force: the inodes, bmbt
/// blocks and attr blocks as they then were (by byte offset), and how
/// many bmbt blocks it had invalidated.
#[derive(Clone, Debug, Default)]
pub struct ForkCut {
    pub inodes: std::collections::BTreeMap<u64, Vec<u8>>,
    pub blocks: std::collections::BTreeMap<u64, Vec<u8>>,
    pub attr_blocks: std::collections::BTreeMap<u64, Vec<u8>>,
    pub invalidated: usize,
    /// The chunks of bmbt blocks logged since the cut before (byte offset
    /// -> chunks).
    pub touched: std::collections::BTreeMap<u64, BTreeSet<usize>>,
    /// The inode forks logged whole since the cut before (the inode's
    /// byte offset, whether the attr fork).
    pub forks_logged: BTreeSet<(u64, bool)>,
}

/// Where the kernel forced its log in the middle of the intents' work
/// (a stale, pinned buffer got again): the state every transaction
/// committed before it left, which is the checkpoint the force writes.
#[derive(Clone, Debug, Default)]
pub struct Cut {
    /// The AG blocks and headers changed so far (daddr, bytes).
    pub ag: Vec<(u64, Vec<u8>)>,
    /// The chunks of AG btree blocks written since the last cut.
    pub touched: Vec<(u64, BTreeSet<usize>)>,
    /// AG btree blocks invalidated since the last cut (daddr, sectors).
    pub cancels: Vec<(u64, u64)>,
    pub forks: ForkCut,
    /// The deferred ops whose intents are logged and not yet done.
    pub live: Vec<LiveIntent>,
}

/// An intent logged and not yet done at a log force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveIntent {
    /// Which intent (numbered in the order the work logged them): one
    /// still pending at the next force is neither done nor logged again
    /// in the checkpoint between.
    pub id: u64,
    pub kind: ItemKind,
    /// Its work items.
    pub extents: usize,
}

/// Bytes of a buffer's format region: the fixed part and the bitmap words.
fn buf_format(len: usize) -> usize {
    let chunks = len.div_ceil(CHUNK);
    size_of::<XfsBufLogFormat<Le>>()
        .saturating_add(chunks.div_ceil(CHUNKS_PER_WORD).saturating_mul(4))
}

/// The chunks of a buffer whose bytes went from `before` to `after`, the
/// bytes in `unlogged` (LSN and CRC fields) left out.
pub fn changed_chunks(before: &[u8], after: &[u8], unlogged: &[Range<usize>]) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for (i, chunk) in after.chunks(CHUNK).enumerate() {
        let start = i.saturating_mul(CHUNK);
        let dirty = chunk.iter().enumerate().any(|(j, b)| {
            let at = start.saturating_add(j);
            !unlogged.iter().any(|r| r.contains(&at)) && before.get(at) != Some(b)
        });
        if dirty {
            out.insert(i);
        }
    }
    out
}

/// The chunks `off..off + len` of a buffer covers.
pub fn chunks_of(off: usize, len: usize) -> Range<usize> {
    if len == 0 {
        return 0..0;
    }
    off / CHUNK..off.saturating_add(len).div_ceil(CHUNK)
}

/// A buffer of `len` bytes logged with the `dirty` chunks: its format and
/// one region per run of them. `None` when no chunk is dirty.
pub fn buf_item(len: usize, dirty: &BTreeSet<usize>) -> Option<Item> {
    let last = len.div_ceil(CHUNK);
    let mut regions = vec![buf_format(len)];
    let mut run: Option<(usize, usize)> = None;
    for &c in dirty.iter().filter(|c| **c < last) {
        run = match run {
            Some((a, b)) if b == c => Some((a, c.saturating_add(1))),
            Some((a, b)) => {
                regions.push(region(a, b, len));
                Some((c, c.saturating_add(1)))
            }
            None => Some((c, c.saturating_add(1))),
        };
    }
    if let Some((a, b)) = run {
        regions.push(region(a, b, len));
    }
    (regions.len() > 1).then_some(Item {
        kind: "buf",
        regions,
    })
}

/// Bytes of chunks `a..b` of a buffer of `len` bytes.
fn region(a: usize, b: usize, len: usize) -> usize {
    b.saturating_mul(CHUNK)
        .min(len)
        .saturating_sub(a.saturating_mul(CHUNK))
}

/// A buffer freed in the checkpoint: its format alone, which cancels it.
pub fn stale_buf_item(len: usize) -> Item {
    Item {
        kind: "buf",
        regions: vec![buf_format(len)],
    }
}

/// How one inode fork is when the kernel logs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForkLog {
    /// Bytes of a local (shortform) fork.
    Local(usize),
    /// Extent records.
    Extents(u64),
    /// Records of a bmbt root in the inode.
    Btree(usize),
}

impl ForkLog {
    fn bytes(self, v5: bool) -> usize {
        match self {
            ForkLog::Local(n) => n.next_multiple_of(4),
            ForkLog::Extents(n) => usize::try_from(n)
                .unwrap_or(usize::MAX)
                .saturating_mul(EXTENT_REC),
            ForkLog::Btree(n) => if v5 { BMBT_HDR_V5 } else { BMBT_HDR_V4 }
                .saturating_add(n.saturating_mul(BMBT_KEY_PTR)),
        }
    }
}

/// An inode logged with its core and the forks given (a fork with no
/// bytes to log, such as an empty extent list, adds no region).
pub fn inode_item(v3: bool, data: Option<ForkLog>, attr: Option<ForkLog>) -> Item {
    let core = if v3 {
        size_of::<XfsLogDinode<Le>>()
    } else {
        XFS_LOG_DINODE_V2_SIZE
    };
    let mut regions = vec![size_of::<XfsInodeLogFormat<Le>>(), core];
    for f in [data, attr].into_iter().flatten() {
        let n = f.bytes(v3);
        if n > 0 {
            regions.push(n);
        }
    }
    Item {
        kind: "inode",
        regions,
    }
}

/// How the log is written: the log buffer size and the stripe unit every
/// record is rounded to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LogWriter {
    /// Bytes of a log buffer, its header included (`h_size`).
    pub iclog_size: u32,
    /// Bytes every record is rounded up to.
    pub roundoff: u32,
}

impl LogWriter {
    /// The kernel's: `h_size` as the last record gives it (32 KiB when it
    /// does not), the stripe unit of a v2 log when it is over one byte.
    pub fn of(h_size: u32, v2: bool, logsunit: u32) -> LogWriter {
        let iclog_size = if v2 && h_size >= 512 && h_size % 512 == 0 {
            h_size
        } else {
            XLOG_HEADER_CYCLE_SIZE
        };
        let roundoff = if v2 && logsunit > 1 && logsunit % 512 == 0 {
            logsunit
        } else {
            512
        };
        LogWriter {
            iclog_size,
            roundoff,
        }
    }

    /// Bytes of a record header: a sector per 32 KiB of log buffer.
    fn header(&self) -> usize {
        usize::try_from(self.iclog_size.div_ceil(XLOG_HEADER_CYCLE_SIZE))
            .unwrap_or(1)
            .saturating_mul(512)
    }

    /// 512-byte log blocks of a record holding `data` bytes.
    fn record_blocks(&self, data: usize) -> u64 {
        let round = usize::try_from(self.roundoff).unwrap_or(512).max(512);
        let n = self.header().saturating_add(data).next_multiple_of(round);
        u64::try_from(n / 512).unwrap_or(u64::MAX)
    }
}

/// A checkpoint's size in the log.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Checkpoint {
    /// Log items, by kind.
    pub items: std::collections::BTreeMap<&'static str, u32>,
    /// Regions, the start and transaction header and commit included.
    pub regions: u64,
    /// Bytes of operations (headers and payloads).
    pub bytes: u64,
    /// Records written.
    pub records: u32,
    /// 512-byte log blocks, record headers and padding included.
    pub blocks: u64,
    /// Where the checkpoint's first record is written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lsn: Option<Lsn>,
    /// For a checkpoint a log force wrote in the middle of the work: the
    /// transactions committed before the force (counted from the first
    /// of the intents' recovery).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_transactions: Option<u64>,
}

/// Lay out the checkpoint holding `items` as the kernel writes it.
pub fn checkpoint(items: &[Item], w: LogWriter) -> Checkpoint {
    let mut regions: Vec<usize> = vec![0, size_of::<XfsTransHeader<Le>>()];
    let mut c = Checkpoint::default();
    for it in items {
        regions.extend_from_slice(&it.regions);
        let n = c.items.entry(it.kind).or_insert(0);
        *n = n.saturating_add(1);
    }
    regions.push(0);
    let cap = usize::try_from(w.iclog_size)
        .unwrap_or(usize::MAX)
        .saturating_sub(w.header());
    let mut used = 0usize;
    for r in &regions {
        c.regions = c.regions.saturating_add(1);
        let mut left = *r;
        loop {
            let need = left.saturating_add(OP_HEADER);
            c.bytes = c.bytes.saturating_add(OP_HEADER_U64);
            if used.saturating_add(need) <= cap {
                used = used.saturating_add(need);
                c.bytes = c
                    .bytes
                    .saturating_add(u64::try_from(left).unwrap_or(u64::MAX));
                break;
            }
            // What fits after an operation header goes in this record,
            // the rest in the next one, behind an operation header of its
            // own.
            let room = cap.saturating_sub(used).saturating_sub(OP_HEADER);
            let part = room.min(left);
            c.bytes = c
                .bytes
                .saturating_add(u64::try_from(part).unwrap_or(u64::MAX));
            left = left.saturating_sub(part);
            let full = if part > 0 {
                used.saturating_add(OP_HEADER).saturating_add(part)
            } else {
                used
            };
            c.blocks = c.blocks.saturating_add(w.record_blocks(full));
            c.records = c.records.saturating_add(1);
            used = 0;
            if cap <= OP_HEADER {
                // A log buffer with no room for data: nothing more fits.
                break;
            }
        }
    }
    if used > 0 {
        c.blocks = c.blocks.saturating_add(w.record_blocks(used));
        c.records = c.records.saturating_add(1);
    }
    c
}

/// The LSN `blocks` log blocks after `from`, in a log of `log_blocks`.
pub fn advance(from: Lsn, blocks: u64, log_blocks: u32) -> Lsn {
    let len =
        core::num::NonZeroU64::new(u64::from(log_blocks)).unwrap_or(core::num::NonZeroU64::MIN);
    let at = u64::from(from.block).saturating_add(blocks);
    let wraps = at / len;
    Lsn {
        cycle: from
            .cycle
            .saturating_add(u32::try_from(wraps).unwrap_or(u32::MAX)),
        block: u32::try_from(at % len).unwrap_or(0),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn layouts_have_the_kernels_sizes() {
        // As the kernel writes them (xfs_logprint prints these lengths).
        assert_eq!(OP_HEADER, 12);
        assert_eq!(size_of::<XfsTransHeader<Le>>(), 16);
        assert_eq!(size_of::<XfsInodeLogFormat<Le>>(), 56);
        assert_eq!(size_of::<XfsLogDinode<Le>>(), 176);
        assert_eq!(buf_format(1024), 24);
        assert_eq!(buf_format(4096), 24);
        assert_eq!(buf_format(65536), 20 + 16 * 4);
        assert_eq!(done_item(ItemKind(XFS_LI_EFI), 1).regions, vec![32]);
    }

    #[test]
    fn changed_chunks_make_runs_and_stamps_are_left_out() {
        let before = vec![0u8; 1024];
        let mut after = before.clone();
        after[10] = 1; // chunk 0
        after[300] = 1; // chunk 2
        after[400] = 1; // chunk 3
        after[1000] = 1; // chunk 7
        let dirty = changed_chunks(&before, &after, &[]);
        assert_eq!(dirty.iter().copied().collect::<Vec<_>>(), vec![0, 2, 3, 7]);
        let it = buf_item(1024, &dirty).unwrap();
        assert_eq!(it.regions, vec![24, 128, 256, 128]);
        let only_stamp = {
            let mut a = before.clone();
            a[24] = 9;
            a
        };
        let lsn = 24..32;
        assert!(changed_chunks(&before, &only_stamp, core::slice::from_ref(&lsn)).is_empty());
        assert_eq!(buf_item(1024, &BTreeSet::new()), None);
        // Chunks past the buffer's end are not logged.
        assert_eq!(
            buf_item(512, &BTreeSet::from([3, 4])).unwrap().regions,
            vec![24, 128]
        );
        assert_eq!(chunks_of(120, 16), 0..2);
        assert_eq!(chunks_of(128, 128), 1..2);
        assert_eq!(chunks_of(5, 0), 0..0);
    }

    #[test]
    fn a_small_checkpoint_is_one_record_rounded_to_sectors() {
        // An EFD, and three buffers of one, one and two chunks: 752 bytes
        // of operations, a 512-byte header, three log blocks.
        let items = vec![
            done_item(ItemKind(XFS_LI_EFI), 1),
            Item {
                kind: "buf",
                regions: vec![24, 128],
            },
            Item {
                kind: "buf",
                regions: vec![24, 128],
            },
            Item {
                kind: "buf",
                regions: vec![24, 256],
            },
        ];
        let w = LogWriter::of(32768, true, 1);
        let c = checkpoint(&items, w);
        assert_eq!(c.bytes, 752);
        assert_eq!(c.blocks, 3);
        assert_eq!(c.records, 1);
        let striped = checkpoint(&items, LogWriter::of(32768, true, 32768));
        assert_eq!(striped.blocks, 64);
    }

    #[test]
    fn a_large_checkpoint_spans_records() {
        let items: Vec<Item> = (0..40)
            .map(|_| Item {
                kind: "buf",
                regions: vec![24, 4096],
            })
            .collect();
        let c = checkpoint(&items, LogWriter::of(32768, true, 1));
        assert!(c.records >= 6, "{c:?}");
        // Every byte of data is in a record of at most 64 blocks.
        assert!(c.blocks <= u64::from(c.records) * 64);
        assert!(c.blocks * 512 >= c.bytes + u64::from(c.records) * 512);
    }

    #[test]
    fn lsns_wrap_with_the_log() {
        let l = advance(
            Lsn {
                cycle: 4,
                block: 98,
            },
            5,
            100,
        );
        assert_eq!((l.cycle, l.block), (5, 3));
        let l = advance(
            Lsn {
                cycle: 6,
                block: 1675,
            },
            3,
            7054,
        );
        assert_eq!((l.cycle, l.block), (6, 1678));
    }
}
