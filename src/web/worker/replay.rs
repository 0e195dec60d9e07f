//! The decoded log, its replay (an overlay under the image), what replay
//! changed, and the recovered image a piece at a time.

use super::*;

/// Run `f` on the decoded log, decoding it first if needed (refused when
/// its live part is over [`Caps::decoded_log`]).
impl Session {
    pub(super) fn with_log(
        &mut self,
        out: Out<'_>,
        f: impl FnOnce(&Fs<Disk>, &log_views::DecodedLog) -> Response,
    ) -> Response {
        if self.log.is_none() {
            let decoded = self.fs.as_ref().map(|fs| {
                let span = check_log_span(fs)?;
                with_read_progress(out, "finding and decoding the log", span, || {
                    log_views::decode(fs)
                })
            });
            match decoded {
                Some(Ok(d)) => self.log = Some(d),
                Some(Err(e)) => return view_error("log", e),
                None => return view_error("log", "no filesystem is open"),
            }
        }
        match (self.fs.as_ref(), self.log.as_ref()) {
            (Some(fs), Some(d)) => f(fs, d),
            _ => view_error("log", "the log could not be decoded"),
        }
    }

    /// Replay the log once (an overlay of recovered blocks; the file is never
    /// written) and lay the result under the image, leaving the reads of the
    /// views where they were.
    pub(super) fn ensure_replayed(&mut self, scope: Out<'_>) -> Result<(), String> {
        use crate::web::protocol::{Kv, ReplayView};
        if self.replay.is_some() {
            return Ok(());
        }
        let made = {
            let fs = self
                .fs
                .as_mut()
                .ok_or_else(|| "no filesystem is open".to_string())?;
            check_log_span(fs)?;
            let mut tick = Ticker::default();
            let (rep, mut plan) = crate::xfs::replay::replay_and_mount(
                fs,
                crate::xfs::replay::RecoveryTime::from_millis(js_sys::Date::now()),
                &mut |p| {
                    if tick.due() {
                        post(
                            scope,
                            &Response::Progress {
                                stage: format!(
                                "replaying the log: pass {}, {} records, {} transactions, {} items",
                                p.pass, p.records, p.transactions, p.items
                            ),
                                done: p.blocks_done,
                                total: p.blocks_total,
                            },
                        );
                    }
                },
            )
            .map_err(|e| e.to_string())?;
            let held = rep.overlay_sectors.saturating_mul(512);
            let cap = caps().replay_overlay;
            if held > cap {
                return Err(format!(
                "replay recovered {} of blocks, more than the {} the page holds (REPLAY_OVERLAY_CAP); the command line (xfs-explorer replay -o) has no such cap",
                mib(held),
                mib(cap)
            ));
            }
            let kv = |n: &str, v: u64| Kv {
                name: n.into(),
                value: v.to_string(),
                meaning: String::new(),
            };
            let c = &rep.counts;
            let notes = crate::xfs::replay::notes::lines(&rep, plan.mount.as_ref());
            // The overlay moves under the image (one copy); the plan keeps the
            // rest (the clean log) for the download.
            let was = fs.img.uses_overlay();
            fs.img.set_overlay(std::mem::take(&mut plan.overlay));
            fs.img.set_use_overlay(false);
            let disk = read_superblock(&fs.img).map(|s| s.view());
            fs.img.set_use_overlay(true);
            let replayed = read_superblock(&fs.img).map(|s| s.view());
            fs.img.set_use_overlay(was);
            let (superblock, sb_changed) = match (disk, replayed) {
                (Ok(d), Ok(r)) => {
                    let changed = r
                        .fields
                        .iter()
                        .filter(|f| {
                            d.fields
                                .iter()
                                .find(|g| g.name == f.name)
                                .is_none_or(|g| g.value != f.value)
                        })
                        .map(|f| f.name.clone())
                        .collect();
                    (Some(r), changed)
                }
                (_, Ok(r)) => (Some(r), Vec::new()),
                _ => (None, Vec::new()),
            };
            let view = ReplayView {
                on: true,
                summary: vec![
                    kv("records", rep.records),
                    kv("transactions", rep.transactions),
                    kv("items", rep.items),
                    kv("buffers replayed", c.buffers_replayed),
                    kv("buffers skipped (newer on disk)", c.buffers_skipped_lsn),
                    kv("buffers cancelled", c.buffers_cancelled),
                    kv("inodes replayed", c.inodes_replayed),
                    kv("recovered sectors", rep.overlay_sectors),
                ],
                notes,
                error: None,
                superblock,
                sb_changed,
            };
            (view, plan)
        };
        self.replay = Some(made);
        Ok(())
    }

    /// Switch the reads of every view to the replayed state (replaying the
    /// first time), or back.
    pub(super) fn set_replay(&mut self, scope: Out<'_>, on: bool) -> Response {
        use crate::web::protocol::ReplayView;
        if on {
            if let Err(e) = self.ensure_replayed(scope) {
                return Response::Replay(Box::new(ReplayView {
                    error: Some(e),
                    ..ReplayView::default()
                }));
            }
        }
        if let Some(fs) = self.fs.as_mut() {
            fs.img.set_use_overlay(on);
        }
        let mut view = self
            .replay
            .as_ref()
            .map(|(v, _)| v.clone())
            .unwrap_or_default();
        view.on = on;
        Response::Replay(Box::new(view))
    }

    /// What replay changed: compared once (the log replayed first if needed),
    /// then summarised.
    pub(super) fn replay_diff(&mut self, scope: Out<'_>) -> Response {
        use crate::web::protocol::{DiffSection, ReplayDiffView};
        if let Err(e) = self.ensure_replayed(scope) {
            return view_error("replay", e);
        }
        if self.diff.is_none() {
            let t0 = js_sys::Date::now();
            let made = self.fs.as_mut().map(|fs| {
                let mut tick = Ticker::default();
                crate::xfs::replay::diff::diff_with(
                    fs,
                    crate::xfs::replay::diff::Options {
                        limit: caps().diff_inodes,
                        inode_fields: false,
                    },
                    &mut |p| {
                        if tick.due() {
                            post(
                                scope,
                                &Response::Progress {
                                    stage: format!("what replay changed: {}", p.stage),
                                    done: p.done,
                                    total: p.total,
                                },
                            );
                        }
                    },
                )
            });
            let Some(mut d) = made else {
                return view_error("replay", "no filesystem is open");
            };
            let ms = js_sys::Date::now() - t0;
            // The entries are shown as the paths they make; only their counts
            // are kept.
            let count = |c: &str| {
                u64::try_from(d.entries.iter().filter(|e| e.change == c).count())
                    .unwrap_or(u64::MAX)
            };
            let entries = (count("added"), count("removed"));
            d.entries = Vec::new();
            let cap = caps().diff_rows;
            let cut = |what: &str, n: usize| {
                (n > cap).then(|| {
                format!("{n} {what} rows: only the first {cap} are kept and counted here (DIFF_ROWS_CAP)")
            })
            };
            let notes: Vec<String> = [
                cut("path", d.paths.len()),
                cut("inode", d.inodes.len()),
                cut("xattr", d.xattrs.len()),
                cut("block range", d.blocks.len()),
            ]
            .into_iter()
            .flatten()
            .collect();
            d.paths.truncate(cap);
            d.inodes.truncate(cap);
            d.xattrs.truncate(cap);
            d.blocks.truncate(cap);
            d.problems.extend(notes);
            self.diff = Some((d, ms, entries));
        }
        let notes = self
            .replay
            .as_ref()
            .map(|(v, _)| v.notes.clone())
            .unwrap_or_default();
        {
            let Some((d, ms, (entries_added, entries_removed))) = self.diff.as_ref() else {
                return view_error("replay", "nothing was compared");
            };
            let mut counts: Vec<(DiffSection, String, u64)> = Vec::new();
            let mut add = |s: DiffSection, change: &str| match counts
                .iter_mut()
                .find(|(x, c, _)| *x == s && c == change)
            {
                Some(e) => e.2 = e.2.saturating_add(1),
                None => counts.push((s, change.to_string(), 1)),
            };
            for p in &d.paths {
                add(DiffSection::Paths, p.change);
            }
            for i in &d.inodes {
                add(DiffSection::Inodes, i.change);
            }
            for x in &d.xattrs {
                add(DiffSection::Xattrs, x.change);
            }
            for _ in &d.blocks {
                add(DiffSection::Blocks, "");
            }
            let mut kinds: Vec<(String, u64, u64)> = Vec::new();
            for r in &d.blocks {
                match kinds.iter_mut().find(|k| k.0 == r.what) {
                    Some(k) => {
                        k.1 = k.1.saturating_add(1);
                        k.2 = k.2.saturating_add(r.sectors);
                    }
                    None => kinds.push((r.what.to_string(), 1, r.sectors)),
                }
            }
            kinds.sort_by_key(|k| std::cmp::Reverse(k.2));
            Response::ReplayDiff(Box::new(ReplayDiffView {
                counts,
                entries_added: *entries_added,
                entries_removed: *entries_removed,
                sectors: d.blocks.iter().map(|b| b.sectors).sum(),
                block_kinds: kinds,
                truncated: d.truncated,
                problems: d.problems.clone(),
                notes,
                diff_ms: *ms,
            }))
        }
    }
}

/// The rows `start..start + take` of the items `keep` keeps, and how many
/// it keeps in all.
pub(super) fn filtered_page<T, R>(
    items: &[T],
    keep: impl Fn(&T) -> bool,
    start: usize,
    take: usize,
    row: impl Fn(&T) -> R,
) -> (usize, Vec<R>) {
    let total = items.iter().filter(|x| keep(x)).count();
    let rows = items
        .iter()
        .filter(|x| keep(x))
        .skip(start)
        .take(take)
        .map(row)
        .collect();
    (total, rows)
}

impl Session {
    /// A page of rows of what replay changed.
    pub(super) fn replay_diff_rows(
        &mut self,
        section: crate::web::protocol::DiffSection,
        filter: String,
        start: u32,
        count: u32,
    ) -> Response {
        use crate::web::protocol::{DiffRow, DiffRowsView, DiffSection};
        let count = count.min(1000);
        let start_at = usize::try_from(start).unwrap_or(usize::MAX);
        let take = usize::try_from(count).unwrap_or(0);
        let keep = |c: &str| filter.is_empty() || c == filter;
        let row = |change: &str, ino: u64, text: String| DiffRow {
            change: change.to_string(),
            ino,
            text,
            fields: Vec::new(),
            daddr: 0,
            sectors: 0,
        };
        let page = self.diff.as_ref().map(|(d, _, _)| match section {
            DiffSection::Paths => filtered_page(
                &d.paths,
                |p| keep(p.change),
                start_at,
                take,
                |p| row(p.change, p.ino, p.path.clone()),
            ),
            DiffSection::Inodes => filtered_page(
                &d.inodes,
                |i| keep(i.change),
                start_at,
                take,
                |i| row(i.change, i.ino, i.file_type.to_string()),
            ),
            DiffSection::Xattrs => filtered_page(
                &d.xattrs,
                |x| keep(x.change),
                start_at,
                take,
                |x| row(x.change, x.ino, x.name.clone()),
            ),
            DiffSection::Blocks => {
                let total = d.blocks.len();
                let rows = d
                    .blocks
                    .iter()
                    .skip(start_at)
                    .take(take)
                    .map(|r| DiffRow {
                        daddr: r.daddr,
                        sectors: r.sectors,
                        ..row("", 0, r.what.to_string())
                    })
                    .collect();
                (total, rows)
            }
        });
        let Some((total, mut rows)) = page else {
            return view_error("replay", "what replay changed is not computed yet");
        };
        if section == DiffSection::Inodes {
            // The fields, read again from both sides for this page only.
            if let Some(fs) = self.fs.as_mut() {
                for r in &mut rows {
                    r.fields = crate::xfs::replay::diff::inode_field_changes(fs, r.ino)
                        .into_iter()
                        .map(|f| (f.field.to_string(), f.before, f.after))
                        .collect();
                }
            }
        }
        Response::ReplayDiffRows(Box::new(DiffRowsView {
            section,
            filter,
            start,
            total: u64::try_from(total).unwrap_or(u64::MAX),
            rows,
        }))
    }

    /// One piece of the recovered image (or of the recovered log device) from
    /// `offset`, the log replayed first if needed. Nothing but this piece is
    /// made: the page asks for the next once it has written this one.
    pub(super) fn export_chunk(&mut self, out: Out<'_>, log_device: bool, offset: u64) -> Response {
        use crate::web::protocol::EXPORT_PIECE;
        let what = if log_device {
            "recovered log device"
        } else {
            "recovered image"
        };
        if let Err(e) = self.ensure_replayed(out) {
            return view_error(what, e);
        }
        let result = self
            .fs
            .as_ref()
            .ok_or_else(|| "no filesystem is open".to_string())
            .and_then(|fs| {
                let (_, plan) = self
                    .replay
                    .as_ref()
                    .ok_or_else(|| "the log could not be replayed".to_string())?;
                let rec = crate::xfs::replay::export::Recovered {
                    fs,
                    overlay: fs.img.overlay(),
                    log: plan.log,
                };
                let total = if log_device {
                    rec.log_device_len()
                        .ok_or_else(|| "the log is internal: there is no log device".to_string())?
                } else {
                    rec.len()
                };
                let at = offset.min(total);
                let n = EXPORT_PIECE.min(total.saturating_sub(at));
                let mut buf = vec![0u8; usize::try_from(n).map_err(|e| e.to_string())?];
                if log_device {
                    rec.read_log_at(at, &mut buf)
                } else {
                    rec.read_at(at, &mut buf)
                }
                .map_err(|e| e.to_string())?;
                let end = at.saturating_add(n);
                post(
                    out,
                    &Response::Progress {
                        stage: format!("writing the {what}"),
                        done: end,
                        total,
                    },
                );
                Ok::<_, String>(Response::ExportChunk {
                    log_device,
                    offset: at,
                    total,
                    bytes: crate::web::protocol::JsBytes(js_sys::Uint8Array::from(buf.as_slice())),
                    last: end >= total,
                })
            });
        result.unwrap_or_else(|e| view_error(what, e))
    }
}
