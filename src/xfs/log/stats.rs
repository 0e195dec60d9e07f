//! What a checkpoint logged, counted: per transaction and for the whole
//! live log, items, regions and bytes by item kind, and for buffers by
//! buffer type the dirty chunks, runs, bytes, and how many regions a
//! walk one chunk at a time would visit against one run at a time.

use super::bitmap::{chunks_dirty, fit_regions};
use super::items::{buf_type_name, ItemBody};
use super::Transaction;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KindTotals {
    pub items: u64,
    pub regions: u64,
    pub bytes: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BufTotals {
    pub items: u64,
    /// Cancelled (freed) buffers: they log no data.
    pub cancelled: u64,
    pub chunks_dirty: u64,
    pub runs: u64,
    /// Bytes of data regions.
    pub bytes_logged: u64,
    /// Regions visited walking the bitmap one 128-byte chunk at a time.
    pub regions_chunkwise: u64,
    /// Regions visited walking it one run at a time.
    pub regions_runwise: u64,
    /// Runs logged as several regions (page-crossing runs).
    pub straddles: u64,
}

impl BufTotals {
    fn add(&mut self, o: &BufTotals) {
        self.items = self.items.saturating_add(o.items);
        self.cancelled = self.cancelled.saturating_add(o.cancelled);
        self.chunks_dirty = self.chunks_dirty.saturating_add(o.chunks_dirty);
        self.runs = self.runs.saturating_add(o.runs);
        self.bytes_logged = self.bytes_logged.saturating_add(o.bytes_logged);
        self.regions_chunkwise = self.regions_chunkwise.saturating_add(o.regions_chunkwise);
        self.regions_runwise = self.regions_runwise.saturating_add(o.regions_runwise);
        self.straddles = self.straddles.saturating_add(o.straddles);
    }
}

/// A small map kept as a list (a transaction logs few kinds), serialised as
/// a JSON object in key order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SmallMap<V>(pub Vec<(&'static str, V)>);

impl<V: Default> SmallMap<V> {
    fn entry(&mut self, k: &'static str) -> Option<&mut V> {
        // The names are the same static strings: compare addresses first.
        let at = self
            .0
            .iter()
            .position(|(n, _)| std::ptr::eq(n.as_ptr(), k.as_ptr()))
            .or_else(|| self.0.iter().position(|(n, _)| *n == k));
        match at {
            Some(i) => self.0.get_mut(i).map(|e| &mut e.1),
            None => {
                // Kept in key order: the new name goes where it sorts.
                let at = self.0.partition_point(|e| e.0 < k);
                self.0.insert(at, (k, V::default()));
                self.0.get_mut(at).map(|e| &mut e.1)
            }
        }
    }
}

impl<V: Serialize> Serialize for SmallMap<V> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// Counts for one transaction.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TransStats {
    pub ops: u64,
    pub items: u64,
    pub regions: u64,
    /// Payload bytes of all ops (transaction header and item regions).
    pub bytes: u64,
    pub by_kind: SmallMap<KindTotals>,
    pub buffers: BufTotals,
    pub by_buf_type: SmallMap<BufTotals>,
}

impl TransStats {
    pub fn of(t: &Transaction) -> TransStats {
        let mut s = TransStats::default();
        s.fill(t, true);
        s
    }

    /// Count `t` into `self`, replacing what it held and reusing its
    /// memory; `by_buf_type` is left empty unless `buf_types`.
    pub fn fill(&mut self, t: &Transaction, buf_types: bool) {
        self.ops = u64::from(t.ops);
        self.items = u64::try_from(t.items.len()).unwrap_or(u64::MAX);
        self.regions = 0;
        self.bytes = t.op_bytes;
        self.by_kind.0.clear();
        self.buffers = BufTotals::default();
        self.by_buf_type.0.clear();
        let s = self;
        for it in &t.items {
            s.regions = s.regions.saturating_add(u64::from(it.regions));
            let lens = it.region_lens.view();
            if let Some(k) = s.by_kind.entry(it.kind.name()) {
                k.items = k.items.saturating_add(1);
                k.regions = k.regions.saturating_add(u64::from(it.regions));
                k.bytes = k
                    .bytes
                    .saturating_add(lens.iter().map(|l| u64::from(*l)).sum());
            }
            if let ItemBody::Buf(b) = &it.body {
                let one = buf_totals(b, lens.get(1..).unwrap_or(&[]));
                s.buffers.add(&one);
                if buf_types {
                    if let Some(e) = s.by_buf_type.entry(buf_type_name(b.buf_type)) {
                        e.add(&one);
                    }
                }
            }
        }
    }
}

/// Number of runs of set bits: a run starts at a set bit whose lower
/// neighbour (the previous word's top bit for bit 0) is clear.
fn run_count(map: &[u32]) -> u64 {
    let mut carry = 0u32;
    let mut n = 0u64;
    for w in map {
        let starts = w & !(w.wrapping_shl(1) | carry);
        n = n.saturating_add(u64::from(starts.count_ones()));
        carry = w >> 31;
    }
    n
}

fn buf_totals(b: &super::items::BufItem, data: &[u32]) -> BufTotals {
    let chunks = u64::from(chunks_dirty(&b.map));
    let nruns = run_count(&b.map);
    let ndata = u64::try_from(data.len()).unwrap_or(u64::MAX);
    BufTotals {
        items: 1,
        cancelled: u64::from(b.cancel()),
        chunks_dirty: chunks,
        runs: nruns,
        bytes_logged: data.iter().map(|l| u64::from(*l)).sum(),
        regions_chunkwise: chunks,
        regions_runwise: nruns,
        // Only a buffer with more data regions than runs can straddle.
        straddles: if ndata > nruns {
            u64::from(fit_regions(&b.map, data).straddles)
        } else {
            0
        },
    }
}

/// Counts for the whole live log.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LogStats {
    pub transactions: u64,
    pub ops: u64,
    pub items: u64,
    pub regions: u64,
    pub bytes: u64,
    pub by_kind: BTreeMap<&'static str, KindTotals>,
    pub buffers: BufTotals,
    pub by_buf_type: BTreeMap<&'static str, BufTotals>,
}

impl LogStats {
    pub fn of(ts: &[Transaction]) -> LogStats {
        let mut s = LogStats::default();
        for t in ts {
            s.add(&TransStats::of(t));
        }
        s
    }

    /// Count one more transaction.
    pub fn add(&mut self, one: &TransStats) {
        let s = self;
        {
            s.transactions = s.transactions.saturating_add(1);
            s.ops = s.ops.saturating_add(one.ops);
            s.items = s.items.saturating_add(one.items);
            s.regions = s.regions.saturating_add(one.regions);
            s.bytes = s.bytes.saturating_add(one.bytes);
            for (k, v) in &one.by_kind.0 {
                let e = s.by_kind.entry(*k).or_default();
                e.items = e.items.saturating_add(v.items);
                e.regions = e.regions.saturating_add(v.regions);
                e.bytes = e.bytes.saturating_add(v.bytes);
            }
            s.buffers.add(&one.buffers);
            for (k, v) in &one.by_buf_type.0 {
                s.by_buf_type.entry(*k).or_default().add(v);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn run_count_matches_runs() {
        for map in [
            vec![0u32],
            vec![1],
            vec![0b1011_0001],
            vec![0x8000_0000, 3],
            vec![u32::MAX; 17],
            vec![0xAAAA_AAAA, 0x5555_5555],
        ] {
            assert_eq!(
                run_count(&map),
                u64::try_from(super::super::bitmap::runs(&map).len()).unwrap(),
                "{map:x?}"
            );
        }
    }
}
