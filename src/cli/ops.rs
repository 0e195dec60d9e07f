//! `xfs-explorer ops`: the operations a log carries and the transactions
//! each cost; `xfs-explorer forkoff`: where attribute forks start.

use super::Disk;
use crate::xfs::fs::Fs;
use crate::xfs::ops::{self, forkoff, OpsReport, KINDS};
use serde::Serialize;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// `ops --json`: the report, the forkoff distribution of the disk's state
/// and (with `--replay`) of the replayed one.
#[derive(Serialize)]
struct OpsJson<'a> {
    #[serde(flatten)]
    report: &'a OpsReport,
    forkoff: &'a forkoff::Distribution,
    forkoff_replayed: Option<&'a forkoff::Distribution>,
    forkoff_replayed_error: Option<String>,
}

/// The image as it is on disk (the log analysis needs the log as it is,
/// whatever `--replay` says).
fn open_raw(path: &Path) -> Result<Fs<Disk>, String> {
    super::fs_of(path, super::open_raw_image(path)?)
}

/// The forkoff distribution after replay.
fn replayed_forkoff(path: &Path) -> Result<forkoff::Distribution, String> {
    let img = super::replay::replayed_image(path, super::open_image_for_replay(path)?)?;
    let fs = Fs::open(img).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(forkoff::distribution(&fs, &mut |_| {}))
}

pub fn run(path: &Path, json: bool) -> Result<(), String> {
    let fs = open_raw(path)?;
    let report =
        ops::analyze(&fs, &mut |_| {}).map_err(|e| format!("{}: log: {e}", path.display()))?;
    let disk = forkoff::distribution(&fs, &mut |_| {});
    // The replayed state's distribution costs a replay: with --replay.
    let with_replayed = super::REPLAY.load(std::sync::atomic::Ordering::Relaxed);
    let (replayed, replayed_err) = if report.clean || !with_replayed {
        (None, None)
    } else {
        match replayed_forkoff(path) {
            Ok(d) => (Some(d), None),
            Err(e) => (None, Some(e)),
        }
    };
    let done = if json {
        let j = OpsJson {
            report: &report,
            forkoff: &disk,
            forkoff_replayed: replayed
                .as_ref()
                .or(if report.clean { Some(&disk) } else { None }),
            forkoff_replayed_error: replayed_err,
        };
        // Written as it is made: a large log's report is tens of MB of
        // JSON.
        let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        serde_json::to_writer(&mut out, &j)
            .map_err(|e| e.to_string())
            .and_then(|()| writeln!(out).map_err(|e| e.to_string()))
            .and_then(|()| out.flush().map_err(|e| e.to_string()))
    } else {
        let mut s = ops_text(&report);
        s.push('\n');
        s.push_str(&forkoff_text("attribute fork offsets on disk", &disk));
        if let Some(r) = &replayed {
            s.push('\n');
            s.push_str(&forkoff_text("attribute fork offsets after replay", r));
        }
        super::print(&s)
    };
    // The command ends here: the report (hundreds of thousands of small
    // allocations on a large log) is left to the process's exit rather
    // than freed piece by piece.
    std::mem::forget(report);
    done
}

pub fn run_forkoff(path: &Path, json: bool) -> Result<(), String> {
    let fs = super::open_fs(path)?;
    let d = forkoff::distribution(&fs, &mut |_| {});
    let text = if json {
        let mut s = serde_json::to_string(&d).map_err(|e| e.to_string())?;
        s.push('\n');
        s
    } else {
        forkoff_text("attribute fork offsets", &d)
    };
    super::print(&text)
}

fn ops_text(r: &OpsReport) -> String {
    let mut s = String::new();
    if r.clean {
        s.push_str("the log is clean: no operations in it\n");
        return s;
    }
    let _ = writeln!(
        s,
        "{} {} in the live log ({})",
        r.checkpoints.len(),
        if r.log_form == "typed" {
            "transactions"
        } else {
            "checkpoints"
        },
        r.log_form
    );
    let _ = writeln!(
        s,
        "{:<12} {:>10} {:>13} {:>10} {:>12}",
        "operation", "count", "transactions", "items", "bytes"
    );
    for k in KINDS {
        let Some(t) = r.by_kind.get(k) else { continue };
        if t.operations == 0 && t.transactions == 0 {
            continue;
        }
        let _ = writeln!(
            s,
            "{k:<12} {:>10} {:>13} {:>10} {:>12}",
            t.operations, t.transactions, t.items, t.bytes
        );
    }
    for (name, n) in &r.other_transactions {
        let _ = writeln!(s, "{:<12} {:>10} {n:>13}", name.to_lowercase(), "-");
    }
    if r.unexplained_transactions > 0 {
        let _ = writeln!(
            s,
            "{} transactions seen in change counts that no operation found explains",
            r.unexplained_transactions
        );
    }
    s.push('\n');
    for cp in &r.checkpoints {
        let mut kinds: std::collections::BTreeMap<&str, u64> = Default::default();
        for i in &cp.operations {
            if let Some(op) = usize::try_from(*i)
                .ok()
                .and_then(|i| r.operation_list.get(i))
            {
                *kinds.entry(op.kind).or_insert(0) += 1;
            }
        }
        let ops: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(
            s,
            "checkpoint {:>4} lsn {} tid {:#010x}: {} items, {} bytes{}; {}",
            cp.index,
            cp.lsn,
            cp.tid,
            cp.items,
            cp.bytes,
            cp.type_name.map(|t| format!(", {t}")).unwrap_or_default(),
            if ops.is_empty() {
                "no operations".to_string()
            } else {
                ops.join(", ")
            }
        );
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

fn forkoff_text(title: &str, d: &forkoff::Distribution) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{title}: {} inodes in use, {} with an attribute fork (default forkoff {}, after a small first xattr {})",
        d.inodes, d.with_attr_fork, d.default_forkoff, d.max_forkoff
    );
    for (v, n) in &d.by_value {
        let by_type: Vec<String> = d
            .by_type
            .iter()
            .filter_map(|(t, m)| m.get(v).map(|c| format!("{t} {c}")))
            .collect();
        let _ = writeln!(s, "  forkoff {v:>3}: {n:>8}  ({})", by_type.join(", "));
    }
    for (r, n) in &d.by_reading {
        let _ = writeln!(s, "  {r:<32} {n:>8}");
    }
    if d.unreadable_count > 0 {
        let _ = writeln!(
            s,
            "  {} inodes in use could not be read",
            d.unreadable_count
        );
    }
    for p in &d.problems {
        let _ = writeln!(s, "  problem: {p}");
    }
    s
}
