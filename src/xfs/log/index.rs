//! A compact index of the live log, for views that show a long log a piece
//! at a time: per committed transaction what a row of a listing shows
//! (ticket id, start and commit LSNs, items, regions, bytes, item kinds
//! with their counts) and what is needed to decode it again, the links
//! between intents and their done items, and which buffer items log each
//! disk block, sorted by block.
//!
//! It is made from a streamed decode ([`decode_indexed`]): each transaction
//! is summarised and dropped as it comes, so memory stays bounded by the
//! largest checkpoint while decoding and by a few dozen bytes per
//! transaction and per buffer item afterwards. A transaction is decoded
//! again when it is wanted ([`LogIndex::transaction`]), from its start
//! record to its commit record, with its intent links set as the decode of
//! the whole log sets them.

use super::items::{ItemBody, ItemRef};
use super::stats::{LogStats, TransStats};
use super::trans::TransactionSink;
use super::{DecodeOptions, HeadTail, LogDecode, Transaction};
use crate::xfs::error::Result;
use crate::xfs::fs::Fs;
use crate::xfs::read::ReadAt;
use crate::xfs::types::Lsn;

/// What the index keeps of one committed transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxSummary {
    /// Ticket id.
    pub tid: u32,
    /// LSN of the record holding its START op.
    pub start_lsn: Lsn,
    /// LSN of the record holding its COMMIT op.
    pub commit_lsn: Option<Lsn>,
    /// Op headers, START and COMMIT included.
    pub ops: u32,
    /// Items.
    pub items: u32,
    /// Regions of all items.
    pub regions: u64,
    /// Payload bytes of all ops.
    pub op_bytes: u64,
    /// Where its item kinds are in [`LogIndex::kinds`]' list, and how many.
    kinds_at: u32,
    kinds_len: u32,
    /// Where its intent and done links are in the index, and how many.
    links_at: u32,
    links_len: u32,
}

/// A buffer item that logs the disk block at `daddr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct BufRef {
    pub daddr: u64,
    /// Index of its transaction among the committed ones.
    pub transaction: u32,
    /// Index of the item in its transaction.
    pub item: u32,
}

/// The compact index of a log's committed transactions.
#[derive(Clone, Debug, Default)]
pub struct LogIndex {
    txs: Vec<TxSummary>,
    /// Item kind names, each once (a log has a handful).
    names: Vec<&'static str>,
    /// (name in `names`, count) of every transaction, each transaction's
    /// run in name order.
    kinds: Vec<(u16, u32)>,
    /// (item, the item it is linked to) of every intent paired with its
    /// done item and every done item paired with its intent.
    links: Vec<(u32, ItemRef)>,
    /// Every buffer item, by block then transaction then item.
    bufs: Vec<BufRef>,
}

fn len_u32<T>(v: &[T]) -> u32 {
    u32::try_from(v.len()).unwrap_or(u32::MAX)
}

fn slice_of<T>(v: &[T], at: u32, len: u32) -> &[T] {
    let at = usize::try_from(at).unwrap_or(usize::MAX);
    let end = at.saturating_add(usize::try_from(len).unwrap_or(0));
    v.get(at..end).unwrap_or(&[])
}

impl LogIndex {
    /// Committed transactions.
    pub fn len(&self) -> usize {
        self.txs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.txs.is_empty()
    }

    /// The summary of transaction `index` (in commit order).
    pub fn summary(&self, index: u32) -> Option<&TxSummary> {
        self.txs.get(usize::try_from(index).ok()?)
    }

    /// The summaries, in commit order.
    pub fn summaries(&self) -> &[TxSummary] {
        &self.txs
    }

    /// The item kinds of a transaction with their counts, by name.
    pub fn kinds<'a>(&'a self, s: &TxSummary) -> impl Iterator<Item = (&'static str, u32)> + 'a {
        slice_of(&self.kinds, s.kinds_at, s.kinds_len)
            .iter()
            .map(|(n, c)| {
                let name = self
                    .names
                    .get(usize::from(*n))
                    .copied()
                    .unwrap_or("unknown");
                (name, *c)
            })
    }

    /// The links of a transaction's intents and done items: (item index,
    /// the item it is paired with).
    pub fn links(&self, s: &TxSummary) -> &[(u32, ItemRef)] {
        slice_of(&self.links, s.links_at, s.links_len)
    }

    /// The buffer items that log the block at `daddr`, in log order.
    pub fn buffers_at(&self, daddr: u64) -> &[BufRef] {
        let lo = self.bufs.partition_point(|b| b.daddr < daddr);
        let hi = self.bufs.partition_point(|b| b.daddr <= daddr);
        self.bufs.get(lo..hi).unwrap_or(&[])
    }

    /// Every buffer item, by block.
    pub fn buffers(&self) -> &[BufRef] {
        &self.bufs
    }

    /// Bytes the index holds (its lists' capacities).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.txs
            .capacity()
            .saturating_mul(size_of::<TxSummary>())
            .saturating_add(
                self.kinds
                    .capacity()
                    .saturating_mul(size_of::<(u16, u32)>()),
            )
            .saturating_add(
                self.links
                    .capacity()
                    .saturating_mul(size_of::<(u32, ItemRef)>()),
            )
            .saturating_add(self.bufs.capacity().saturating_mul(size_of::<BufRef>()))
    }

    /// Decode transaction `index` again (from its start record to its
    /// commit record), its intents and done items linked as in the decode
    /// of the whole log. `None` when there is no such transaction or the
    /// log no longer holds it.
    pub fn transaction<R: ReadAt>(
        &self,
        fs: &Fs<R>,
        index: u32,
        opts: DecodeOptions,
    ) -> Result<Option<Transaction>> {
        let Some(s) = self.summary(index) else {
            return Ok(None);
        };
        let Some(commit) = s.commit_lsn else {
            return Ok(None);
        };
        let found = super::decode_transaction_at(fs, s.tid, s.start_lsn, commit, opts)?;
        Ok(found.map(|mut t| {
            for (item, to) in self.links(s) {
                if let Some(it) = t
                    .items
                    .get_mut(usize::try_from(*item).unwrap_or(usize::MAX))
                {
                    it.set_link(*to);
                }
            }
            t
        }))
    }

    fn name_id(&mut self, name: &'static str) -> u16 {
        let at = self
            .names
            .iter()
            .position(|n| std::ptr::eq(n.as_ptr(), name.as_ptr()) && n.len() == name.len())
            .or_else(|| self.names.iter().position(|n| *n == name));
        let at = at.unwrap_or_else(|| {
            self.names.push(name);
            self.names.len().saturating_sub(1)
        });
        u16::try_from(at).unwrap_or(u16::MAX)
    }
}

/// A [`TransactionSink`] that builds a [`LogIndex`] and counts what each
/// transaction logged into the log's [`LogStats`].
#[derive(Default)]
pub struct IndexSink {
    index: LogIndex,
    stats: LogStats,
    scratch: TransStats,
}

impl IndexSink {
    pub fn new() -> IndexSink {
        IndexSink::default()
    }

    /// Summarise one more committed transaction.
    pub fn push(&mut self, t: &Transaction) {
        let ti = len_u32(&self.index.txs);
        self.scratch.fill(t, true);
        self.stats.add(&self.scratch);
        let kinds_at = len_u32(&self.index.kinds);
        for (name, k) in &self.scratch.by_kind.0 {
            let n = self.index.name_id(name);
            self.index
                .kinds
                .push((n, u32::try_from(k.items).unwrap_or(u32::MAX)));
        }
        let links_at = len_u32(&self.index.links);
        for (ii, it) in t.items.iter().enumerate() {
            let ii = u32::try_from(ii).unwrap_or(u32::MAX);
            if let Some(to) = it.link() {
                self.index.links.push((ii, to));
            }
            if let ItemBody::Buf(b) = &it.body {
                if let Ok(daddr) = u64::try_from(b.blkno) {
                    self.index.bufs.push(BufRef {
                        daddr,
                        transaction: ti,
                        item: ii,
                    });
                }
            }
        }
        self.index.txs.push(TxSummary {
            tid: t.tid,
            start_lsn: t.start_lsn,
            commit_lsn: t.commit_lsn,
            ops: t.ops,
            items: u32::try_from(t.items.len()).unwrap_or(u32::MAX),
            regions: self.scratch.regions,
            op_bytes: t.op_bytes,
            kinds_at,
            kinds_len: len_u32(&self.index.kinds).saturating_sub(kinds_at),
            links_at,
            links_len: len_u32(&self.index.links).saturating_sub(links_at),
        });
    }

    /// The index, its buffers sorted by block, and the counts.
    pub fn finish(self) -> (LogIndex, LogStats) {
        let mut index = self.index;
        // Stable: the items of one block stay in log order.
        crate::xfs::sort::by_key(&mut index.bufs, |b| u128::from(b.daddr));
        index.txs.shrink_to_fit();
        index.kinds.shrink_to_fit();
        index.links.shrink_to_fit();
        index.bufs.shrink_to_fit();
        (index, self.stats)
    }
}

impl TransactionSink for IndexSink {
    fn begin(&mut self, _: &HeadTail) {}
    fn transaction(&mut self, t: Transaction) {
        self.push(&t);
    }
}

/// Decode the log of `fs` streaming (see [`super::decode_streaming`]) into
/// its compact index: the decode holds no transactions, its `stats` count
/// them all as a whole decode's would.
pub fn decode_indexed<R: ReadAt>(fs: &Fs<R>, opts: DecodeOptions) -> Result<(LogDecode, LogIndex)> {
    let mut sink = IndexSink::new();
    let mut d = super::decode_streaming(fs, opts, &mut sink)?;
    let (index, stats) = sink.finish();
    d.stats = stats;
    Ok((d, index))
}
