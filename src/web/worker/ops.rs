//! The operations of the log and the forkoff distributions, made once
//! per image.

use super::*;

impl Session {
    /// Run `f` on the open filesystem read in the state `replayed` says (the
    /// disk's, or the replayed one), the views' state restored after.
    pub(super) fn in_state<T>(
        &mut self,
        replayed: bool,
        f: impl FnOnce(&Fs<Disk>) -> T,
    ) -> Option<T> {
        let fs = self.fs.as_mut()?;
        let was = fs.img.uses_overlay();
        fs.img.set_use_overlay(replayed);
        let out = f(fs);
        fs.img.set_use_overlay(was);
        Some(out)
    }

    /// Reconstruct the operations of the log once per image.
    pub(super) fn ensure_ops(&mut self, scope: Out<'_>) {
        if self.ops.is_some() {
            return;
        }
        let mut tick = Ticker::default();
        // The log as it is on disk, whatever state the views show.
        let made = self.in_state(false, |fs| {
            ops_views::analyze(fs, &mut |p| {
                if tick.due() {
                    post(
                        scope,
                        &Response::Progress {
                            stage: format!(
                                "reconstructing the operations of the log: {} checkpoints",
                                p.checkpoints
                            ),
                            done: p.blocks_done,
                            total: p.blocks_total,
                        },
                    );
                }
            })
        });
        if let Some(m) = made {
            self.ops = Some(m);
        }
    }

    /// The forkoff distribution of the disk's state or the replayed one, once
    /// per image.
    pub(super) fn ensure_forkoff(&mut self, scope: Out<'_>, replayed: bool) {
        let slot = usize::from(replayed);
        if self.forkoff.get(slot).is_some_and(Option::is_some) {
            return;
        }
        let which = if replayed { "after replay" } else { "on disk" };
        let made = self.in_state(replayed, |fs| {
            let total = read_superblock(&fs.img)
                .map(|s| s.icount.saturating_sub(s.ifree))
                .unwrap_or(0);
            let t0 = js_sys::Date::now();
            let mut tick = Ticker::default();
            let d = crate::xfs::ops::forkoff::distribution(fs, &mut |n| {
                if tick.due() {
                    post(
                        scope,
                        &Response::Progress {
                            stage: format!("reading every inode in use {which}: {n}"),
                            done: n,
                            total,
                        },
                    );
                }
            });
            ops_views::forkoff_view(&d, js_sys::Date::now() - t0)
        });
        if let Some(s) = self.forkoff.get_mut(slot) {
            *s = made;
        }
    }

    /// The operations view: the log's operations in numbers, the forkoff
    /// distribution on disk and, when the views show it, after replay.
    pub(super) fn ops(&mut self, scope: Out<'_>) -> Response {
        post(
            scope,
            &Response::Progress {
                stage: "reconstructing the operations of the log".into(),
                done: 0,
                total: 0,
            },
        );
        self.ensure_ops(scope);
        self.ensure_forkoff(scope, false);
        let replayed = self.fs.as_ref().is_some_and(|fs| fs.img.uses_overlay());
        if replayed {
            self.ensure_forkoff(scope, true);
        }
        let Some(mut view) = self.ops.as_ref().map(ops_views::summary) else {
            return view_error("operations", "no filesystem is open");
        };
        view.forkoff = self.forkoff.first().cloned().flatten();
        if replayed {
            view.forkoff_replayed = self.forkoff.get(1).cloned().flatten();
        }
        Response::Ops(Box::new(view))
    }

    /// A page of the operations timeline (the operations reconstructed first
    /// if needed).
    pub(super) fn ops_timeline(&mut self, scope: Out<'_>, start: u32, skip: u32) -> Response {
        self.ensure_ops(scope);
        match self.ops.as_ref() {
            Some(s) => Response::OpsTimeline(Box::new(ops_views::timeline(s, start, skip))),
            None => view_error("operations", "no filesystem is open"),
        }
    }
}
