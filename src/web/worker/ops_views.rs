//! Worker side of the operations view: the operations the log carries,
//! reconstructed once per image by the core (`ops::analyze`), the forkoff
//! distributions, and the pieces of them the page asks for: a summary
//! (kinds, items per checkpoint, bytes per item type) and pages of the
//! timeline, so a log of a million items never travels whole.

use crate::web::protocol::{
    CheckpointBar, CheckpointRow, ForkoffView, ItemTypeRow, OpKindRow, OpRow, OpsTimelineView,
    OpsView, MAX_CHECKPOINT_BARS, OPS_PAGE_CHECKPOINTS, OPS_PAGE_OPERATIONS,
};
use crate::web::worker::blob_reader::Disk;
use crate::xfs::fs::Fs;
use crate::xfs::ops::{self, forkoff::Distribution, CheckpointOps, OpsReport, KINDS};
use std::collections::BTreeMap;

/// The analysis of the open image's log, kept once per image.
pub struct StoredOps {
    pub report: Result<OpsReport, String>,
    /// Milliseconds it took.
    pub ms: f64,
    /// Inodes with a history: whether they were in use before the log.
    on_disk: BTreeMap<u64, bool>,
}

/// Reconstruct the operations of the log of `fs` (read as it is on disk),
/// timing it.
pub fn analyze(fs: &Fs<Disk>, progress: &mut dyn FnMut(&ops::Progress)) -> StoredOps {
    let t0 = js_sys::Date::now();
    let report = ops::analyze(fs, progress).map_err(|e| e.to_string());
    let ms = js_sys::Date::now() - t0;
    let on_disk = report
        .as_ref()
        .map(|r| {
            r.inodes
                .iter()
                .map(|h| (h.ino, h.changecount_before.is_some()))
                .collect()
        })
        .unwrap_or_default();
    StoredOps {
        report,
        ms,
        on_disk,
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The forkoff distribution as the page shows it.
pub fn forkoff_view(d: &Distribution, ms: f64) -> ForkoffView {
    ForkoffView {
        inodes: d.inodes,
        with_attr_fork: d.with_attr_fork,
        by_value: d.by_value.iter().map(|(v, n)| (*v, *n)).collect(),
        by_type: d
            .by_type
            .iter()
            .map(|(t, m)| ((*t).to_string(), m.iter().map(|(v, n)| (*v, *n)).collect()))
            .collect(),
        by_reading: d
            .by_reading
            .iter()
            .map(|(r, n)| {
                let ex = d.examples.get(r).cloned().unwrap_or_default();
                ((*r).to_string(), *n, ex)
            })
            .collect(),
        default_forkoff: d.default_forkoff,
        max_forkoff: d.max_forkoff,
        unreadable_count: d.unreadable_count,
        unreadable: d
            .unreadable
            .iter()
            .take(20)
            .map(|u| (u.ino, u.error.clone()))
            .collect(),
        crc_mismatch: d.crc_mismatch,
        problems: d.problems.clone(),
        ms,
    }
}

/// Items per item type of the whole log, most bytes first.
fn item_types(r: &OpsReport) -> Vec<ItemTypeRow> {
    let mut m: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for cp in &r.checkpoints {
        for (t, n) in &cp.items_by_type {
            let e = m.entry(t).or_default();
            e.0 = e.0.saturating_add(*n);
        }
        for (t, n) in &cp.bytes_by_type {
            let e = m.entry(t).or_default();
            e.1 = e.1.saturating_add(*n);
        }
    }
    let mut rows: Vec<ItemTypeRow> = m
        .into_iter()
        .map(|(name, (items, bytes))| ItemTypeRow {
            name: name.to_string(),
            items,
            bytes,
        })
        .collect();
    rows.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(b.items.cmp(&a.items)));
    rows
}

/// Items per checkpoint, summed into at most [`MAX_CHECKPOINT_BARS`] bars.
fn checkpoint_bars(r: &OpsReport, types: &[ItemTypeRow]) -> Vec<CheckpointBar> {
    let n = r.checkpoints.len();
    let per = n.div_ceil(MAX_CHECKPOINT_BARS).max(1);
    r.checkpoints
        .chunks(per)
        .map(|chunk| {
            let mut by_type: BTreeMap<u32, u64> = BTreeMap::new();
            let mut bar = CheckpointBar {
                first: chunk.first().map_or(0, |c| c.index),
                last: chunk.last().map_or(0, |c| c.index),
                items: 0,
                bytes: 0,
                operations: 0,
                items_by_type: Vec::new(),
            };
            for cp in chunk {
                bar.items = bar.items.saturating_add(cp.items);
                bar.bytes = bar.bytes.saturating_add(cp.bytes);
                bar.operations = bar
                    .operations
                    .saturating_add(u64::try_from(cp.operations.len()).unwrap_or(0));
                for (t, k) in &cp.items_by_type {
                    if let Some(i) = types.iter().position(|x| x.name == *t) {
                        let e = by_type.entry(to_u32(i)).or_insert(0);
                        *e = e.saturating_add(*k);
                    }
                }
            }
            bar.items_by_type = by_type.into_iter().collect();
            bar
        })
        .collect()
}

/// The summary the page draws; the forkoff distributions are the worker's
/// to add.
pub fn summary(s: &StoredOps) -> OpsView {
    let mut v = OpsView {
        error: None,
        clean: false,
        log_form: String::new(),
        kinds: Vec::new(),
        other_transactions: Vec::new(),
        unexplained_transactions: 0,
        checkpoints: 0,
        operations: 0,
        items: 0,
        bytes: 0,
        checkpoint_bars: Vec::new(),
        item_types: Vec::new(),
        notes: Vec::new(),
        analyze_ms: s.ms,
        forkoff: None,
        forkoff_replayed: None,
    };
    let r = match &s.report {
        Ok(r) => r,
        Err(e) => {
            v.error = Some(e.clone());
            return v;
        }
    };
    v.clean = r.clean;
    v.log_form = r.log_form.to_string();
    v.kinds = KINDS
        .iter()
        .filter_map(|k| {
            let t = r.by_kind.get(k)?;
            (t.operations > 0 || t.transactions > 0).then(|| OpKindRow {
                kind: (*k).to_string(),
                operations: t.operations,
                transactions: t.transactions,
                items: t.items,
                bytes: t.bytes,
            })
        })
        .collect();
    v.other_transactions = r
        .other_transactions
        .iter()
        .map(|(k, n)| ((*k).to_string(), *n))
        .collect();
    v.unexplained_transactions = r.unexplained_transactions;
    v.checkpoints = to_u32(r.checkpoints.len());
    v.operations = r.by_kind.values().map(|t| t.operations).sum();
    v.items = r.checkpoints.iter().map(|c| c.items).sum();
    v.bytes = r.checkpoints.iter().map(|c| c.bytes).sum();
    v.item_types = item_types(r);
    v.checkpoint_bars = checkpoint_bars(r, &v.item_types);
    v.notes = r.notes.clone();
    v
}

/// Operations listed for checkpoint `cp` (the core lists at most
/// `MAX_LISTED_OPS` in all).
fn listed(cp: &CheckpointOps) -> usize {
    cp.operations.len()
}

/// The checkpoints of a page: (checkpoint, first operation, how many) for
/// each, and where the next page starts.
type Page = (Vec<(usize, usize, usize)>, Option<(u32, u32)>);

/// The page from (`start`, `skip`).
fn page(r: &OpsReport, start: u32, skip: u32) -> Page {
    let max_ops = usize::try_from(OPS_PAGE_OPERATIONS).unwrap_or(usize::MAX);
    let max_cps = usize::try_from(OPS_PAGE_CHECKPOINTS).unwrap_or(usize::MAX);
    let mut budget = max_ops;
    let mut out = Vec::new();
    let first = usize::try_from(start).unwrap_or(usize::MAX);
    for (i, cp) in r.checkpoints.iter().enumerate().skip(first) {
        if out.len() >= max_cps {
            return (out, Some((to_u32(i), 0)));
        }
        let n = listed(cp);
        let from = if i == first {
            usize::try_from(skip).unwrap_or(0).min(n)
        } else {
            0
        };
        let remaining = n.saturating_sub(from);
        if !out.is_empty() && remaining > budget && remaining <= max_ops {
            // It fits a page of its own: start it there.
            return (out, Some((to_u32(i), 0)));
        }
        let take = remaining.min(budget);
        out.push((i, from, take));
        budget = budget.saturating_sub(take);
        if take < remaining {
            return (out, Some((to_u32(i), to_u32(from.saturating_add(take)))));
        }
    }
    (out, None)
}

/// Where the page before (`start`, `skip`) starts: the last page start
/// before it, walking the pages from the first.
fn prev_page(r: &OpsReport, start: u32, skip: u32) -> Option<(u32, u32)> {
    let target = (start, skip);
    let mut pos = (0u32, 0u32);
    if pos >= target {
        return None;
    }
    loop {
        match page(r, pos.0, pos.1).1 {
            Some(n) if n < target && n > pos => pos = n,
            _ => return Some(pos),
        }
    }
}

fn op_row(s: &StoredOps, r: &OpsReport, index: u32) -> Option<OpRow> {
    let op = r
        .operation_list
        .get(usize::try_from(index).unwrap_or(usize::MAX))?;
    Some(OpRow {
        index,
        kind: op.kind.to_string(),
        ino: op.ino,
        dir: op.dir,
        name: op.name.clone(),
        to_dir: op.to_dir,
        to_name: op.to_name.clone(),
        path: op.path.clone(),
        to_path: op.to_path.clone(),
        links: op.links.clone(),
        transactions: op.transactions,
        items: op.items,
        bytes: op.bytes,
        why: op.why.clone(),
        later_checkpoints: op.later_checkpoints.clone(),
        ino_on_disk: s.on_disk.get(&op.ino).copied(),
        dir_on_disk: op.dir.and_then(|d| s.on_disk.get(&d).copied()),
    })
}

/// A page of the timeline from checkpoint `start`, its first `skip`
/// operations left out.
pub fn timeline(s: &StoredOps, start: u32, skip: u32) -> OpsTimelineView {
    let mut v = OpsTimelineView {
        start,
        skip,
        total: 0,
        checkpoints: Vec::new(),
        prev: None,
        next: None,
        error: None,
    };
    let r = match &s.report {
        Ok(r) => r,
        Err(e) => {
            v.error = Some(e.clone());
            return v;
        }
    };
    v.total = to_u32(r.checkpoints.len());
    let (parts, next) = page(r, start, skip);
    v.next = next;
    v.prev = prev_page(r, start, skip);
    for (i, from, take) in parts {
        let Some(cp) = r.checkpoints.get(i) else {
            continue;
        };
        let mut kinds: BTreeMap<&str, u64> = BTreeMap::new();
        for o in &cp.operations {
            if let Some(op) = r
                .operation_list
                .get(usize::try_from(*o).unwrap_or(usize::MAX))
            {
                let e = kinds.entry(op.kind).or_insert(0);
                *e = e.saturating_add(1);
            }
        }
        // In the core's order of kinds.
        let kinds = KINDS
            .iter()
            .filter_map(|k| kinds.get(k).map(|n| ((*k).to_string(), *n)))
            .collect();
        v.checkpoints.push(CheckpointRow {
            index: cp.index,
            tid: cp.tid,
            lsn: format!("{}:{}", cp.lsn.cycle, cp.lsn.block),
            type_name: cp.type_name.map(str::to_string),
            items: cp.items,
            bytes: cp.bytes,
            inodes: cp.inodes,
            shared_items: cp.shared_items,
            shared_bytes: cp.shared_bytes,
            kinds,
            operations_total: to_u32(listed(cp)),
            first_operation: to_u32(from),
            operations: cp
                .operations
                .iter()
                .skip(from)
                .take(take)
                .filter_map(|o| op_row(s, r, *o))
                .collect(),
            unexplained: cp
                .unexplained
                .iter()
                .map(|u| (u.ino, u.transactions, u.why.clone()))
                .collect(),
        });
    }
    v
}
