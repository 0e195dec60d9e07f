//! The page's state and the actions that change it (one reducer).

use crate::web::page::caches::{trim_rows, DirTree, PageCaps};
use crate::web::page::lru::Lru;
use crate::web::page::route::Route;
use crate::web::protocol::{
    AgsView, ChoosePartition, DirView, InodeView, LogView, Opened, Response, TxDetail, TxRow,
};
use crate::web::protocol::{DiffRowsView, OpsTimelineView, OpsView, ReplayDiffView, ReplayView};
use std::collections::BTreeMap;
use std::rc::Rc;
use yew::Reducible;

/// xattr values by inode and name.
pub type XattrValues = Lru<(u64, String), Rc<Vec<u8>>>;

#[derive(Clone, Debug, PartialEq)]
pub struct State {
    /// The worker has said it is ready.
    pub worker_ready: bool,
    /// Work under way: a description and a fraction (0..=1) when known.
    pub busy: Option<(String, Option<f64>)>,
    /// The open image.
    pub opened: Option<Rc<Opened>>,
    /// The last error opening a file, shown until the next file.
    pub error: Option<String>,
    /// A partitioned disk whose partition the user is to pick.
    pub choosing: Option<Rc<ChoosePartition>>,
    /// Where the user is.
    pub route: Route,
    /// The view data for the current route, as it arrives.
    pub dir: Option<Rc<DirView>>,
    pub inode: Option<Rc<InodeView>>,
    pub ags: Option<Rc<AgsView>>,
    pub ag_map: Option<Rc<crate::xfs::agmap::AgMap>>,
    pub hex: Option<Rc<crate::xfs::hexmap::HexBlock>>,
    pub ag_records: Option<Rc<crate::xfs::agmap::RecordsPage>>,
    /// The caps of the stores below.
    pub caps: PageCaps,
    /// xattr values fetched on demand, by (ino, name); the least recently
    /// fetched go at the cap (asked for again when shown again).
    pub xattr_values: Rc<XattrValues>,
    /// A view request failed: what, and why.
    pub view_error: Option<(String, String)>,
    /// The sidebar tree: subdirectories of the directories read, those
    /// open.
    pub tree: Rc<DirTree>,
    /// The same for the metadata directory tree.
    pub metadir_tree: Rc<DirTree>,
    /// The log summary, the transaction rows fetched (at most
    /// `caps.log_rows`, those near the rows asked for last), the open
    /// transaction.
    pub log: Option<Rc<LogView>>,
    pub log_rows: Rc<BTreeMap<u32, TxRow>>,
    pub log_tx: Option<Rc<TxDetail>>,
    /// The replayed state, once asked for; `replay.on` says which state views show.
    pub replay: Option<Rc<ReplayView>>,
    /// What replay changed, and the page of rows shown.
    pub replay_diff: Option<Rc<ReplayDiffView>>,
    pub replay_rows: Option<Rc<DiffRowsView>>,
    /// The operations of the log in numbers, and the page of the timeline shown.
    pub ops: Option<Rc<OpsView>>,
    pub ops_timeline: Option<Rc<OpsTimelineView>>,
    /// Bumped when the state views read from changes, so they load again.
    pub generation: u32,
    /// What the last cancel stopped (shown until the next work).
    pub cancelled: Option<String>,
    /// The view shown before the cancel is being read again (its loading
    /// leaves `cancelled` shown).
    pub restoring: bool,
    /// Why the path typed in the search box cannot be reached.
    pub search_error: Option<String>,
    /// The worker's wasm memory after its last request, in bytes.
    pub worker_memory: Option<u64>,
    /// The last route whose view was shown in full (where a cancel goes
    /// back to).
    pub shown_route: Route,
    /// The last recovered image written: its name and size.
    pub saved: Option<(String, u64)>,
}

impl Default for State {
    fn default() -> Self {
        State::with_caps(PageCaps::default())
    }
}

impl State {
    /// A state with nothing open whose stores have the caps `caps`.
    pub fn with_caps(caps: PageCaps) -> Self {
        State {
            caps,
            worker_ready: false,
            busy: None,
            opened: None,
            error: None,
            choosing: None,
            route: Route::Superblock,
            dir: None,
            inode: None,
            ags: None,
            ag_map: None,
            hex: None,
            ag_records: None,
            xattr_values: Rc::new(Lru::new(caps.xattrs)),
            view_error: None,
            tree: Rc::new(DirTree::new(caps.tree)),
            metadir_tree: Rc::new(DirTree::new(caps.tree)),
            log: None,
            log_rows: Rc::new(BTreeMap::new()),
            log_tx: None,
            replay: None,
            replay_diff: None,
            replay_rows: None,
            ops: None,
            ops_timeline: None,
            generation: 0,
            cancelled: None,
            restoring: false,
            search_error: None,
            worker_memory: None,
            shown_route: Route::Superblock,
            saved: None,
        }
    }
}

pub enum Action {
    /// The user asked to open something.
    Opening(String),
    /// Something failed outside the worker (fetching the sample, starting
    /// the worker).
    Failed(String),
    /// The location hash changed.
    Navigate(Route),
    /// A view request went out: show progress.
    Loading(String),
    /// The user cancelled the work under way: the worker restarts.
    Cancelled,
    /// A recovered image was written in full: its name and size.
    Saved(String, u64),
    /// A directory of a sidebar tree (the metadata directory tree's with
    /// `metadir`) was opened or closed.
    ToggleTree {
        metadir: bool,
        path: String,
    },
    Response(Response),
}

impl Reducible for State {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let mut s = (*self).clone();
        match action {
            Action::Opening(name) => {
                s.restoring = false;
                s.busy = Some((format!("opening {name}"), None));
                s.error = None;
                s.choosing = None;
            }
            Action::Failed(message) => {
                s.busy = None;
                s.error = Some(message);
            }
            Action::Navigate(route) => {
                if matches!(route, Route::Superblock | Route::Unknown(_)) {
                    s.shown_route = route.clone();
                }
                s.route = route;
                s.view_error = None;
                s.search_error = None;
            }
            Action::Loading(what) => {
                s.busy = Some((what, None));
                s.view_error = None;
                if s.restoring {
                    s.restoring = false;
                } else {
                    s.cancelled = None;
                }
                s.saved = None;
            }
            Action::Saved(name, bytes) => s.saved = Some((name, bytes)),
            Action::ToggleTree { metadir, path } => {
                let tree = if metadir {
                    &mut s.metadir_tree
                } else {
                    &mut s.tree
                };
                Rc::make_mut(tree).toggle(&path);
            }
            Action::Cancelled => {
                s.cancelled = s.busy.take().map(|(what, _)| what);
                s.worker_ready = false;
                // Nothing is open in the new worker until it says so (the
                // views then load once).
                s.opened = None;
                // The view goes back to the last one shown, which loads
                // again once the file is open in the new worker.
                s.restoring = crate::web::page::route::requests_for(&s.shown_route).is_some();
            }
            Action::Response(r) => {
                let was_busy = s.busy.is_some();
                let view = !matches!(
                    r,
                    Response::Opened(_)
                        | Response::ChoosePartition(_)
                        | Response::Error { .. }
                        | Response::Progress { .. }
                        | Response::Memory { .. }
                );
                reduce_response(&mut s, r);
                // The work asked for is done and its view shown.
                if was_busy && s.busy.is_none() && view {
                    s.shown_route = s.route.clone();
                }
            }
        }
        Rc::new(s)
    }
}

impl State {
    /// Let go of what was kept of the state browsed (another image, or the
    /// replayed state, is shown).
    fn forget_browsed(&mut self) {
        self.xattr_values = Rc::new(Lru::new(self.caps.xattrs));
        self.tree = Rc::new(DirTree::new(self.caps.tree));
        self.metadir_tree = Rc::new(DirTree::new(self.caps.tree));
    }
}

fn reduce_response(s: &mut State, r: Response) {
    match r {
        Response::Ready => s.worker_ready = true,
        Response::Progress { stage, done, total } => {
            #[allow(clippy::as_conversions, clippy::cast_precision_loss)]
            let frac = (total > 0).then(|| done as f64 / total as f64);
            s.busy = Some((stage, frac));
        }
        Response::Opened(o) => {
            s.busy = None;
            s.error = None;
            s.dir = None;
            s.inode = None;
            s.ags = None;
            s.ag_map = None;
            s.hex = None;
            s.ag_records = None;
            s.forget_browsed();
            s.view_error = None;
            s.log = None;
            s.log_rows = Rc::new(BTreeMap::new());
            s.log_tx = None;
            s.replay = None;
            s.replay_diff = None;
            s.replay_rows = None;
            s.ops = None;
            s.ops_timeline = None;
            s.choosing = None;
            s.opened = Some(Rc::from(*o));
            // The views load again, even when the same file was opened
            // again (in a new worker, after a cancel).
            s.generation = s.generation.wrapping_add(1);
        }
        Response::ChoosePartition(c) => {
            s.busy = None;
            s.error = None;
            s.opened = None;
            s.dir = None;
            s.inode = None;
            s.ags = None;
            s.choosing = Some(Rc::from(*c));
        }
        Response::Error { name, message } => {
            s.busy = None;
            s.opened = None;
            s.dir = None;
            s.inode = None;
            s.ags = None;
            s.error = Some(if name.is_empty() {
                message
            } else {
                format!("{name}: {message}")
            });
        }
        Response::Memory { wasm_bytes } => {
            s.worker_memory = Some(wasm_bytes);
        }
        Response::Lookup { path, ino, error } => {
            s.search_error = match (ino, error) {
                (Some(_), _) => None,
                (None, e) => Some(format!(
                    "{path}: {}",
                    e.unwrap_or_else(|| "not found".into())
                )),
            };
        }
        Response::ViewError { what, message } => {
            s.busy = None;
            s.view_error = Some((what, message));
        }
        Response::Dir(d) => {
            s.busy = None;
            s.inode = None;
            let tree = if d.metadir {
                &mut s.metadir_tree
            } else {
                &mut s.tree
            };
            Rc::make_mut(tree).show(&d.path);
            s.dir = Some(Rc::from(*d));
        }
        Response::Inode(i) => {
            s.busy = None;
            s.dir = None;
            s.inode = Some(Rc::from(*i));
        }
        Response::XattrValue { ino, name, value } => {
            s.busy = None;
            let bytes = u64::try_from(value.len().saturating_add(name.len())).unwrap_or(u64::MAX);
            Rc::make_mut(&mut s.xattr_values).put((ino, name), Rc::new(value), bytes, |_| false);
        }
        Response::FileChunk { last, .. } | Response::ExportChunk { last, .. } => {
            if last {
                s.busy = None;
            }
        }
        Response::TreeChildren {
            path,
            dirs,
            error,
            metadir,
        } => {
            let tree = if metadir {
                &mut s.metadir_tree
            } else {
                &mut s.tree
            };
            Rc::make_mut(tree).loaded(path, error.map_or(Ok(dirs), Err));
        }
        Response::Log(l) => {
            s.busy = None;
            s.log = Some(Rc::from(*l));
        }
        Response::LogRows { start, rows } => {
            let mut m = (*s.log_rows).clone();
            let end = u32::try_from(rows.len()).map_or(u32::MAX, |n| start.saturating_add(n));
            for r in rows {
                m.insert(r.index, r);
            }
            trim_rows(&mut m, s.caps.log_rows, start..end);
            s.log_rows = Rc::new(m);
        }
        Response::LogTransaction(t) => {
            s.busy = None;
            s.log_tx = Some(Rc::from(*t));
        }
        Response::Replay(r) => {
            s.busy = None;
            s.dir = None;
            s.inode = None;
            s.ags = None;
            s.ag_map = None;
            s.hex = None;
            s.ag_records = None;
            s.forget_browsed();
            if let Some(e) = &r.error {
                s.view_error = Some(("replay".into(), e.clone()));
            }
            s.replay = Some(Rc::from(*r));
            s.generation = s.generation.wrapping_add(1);
        }
        Response::ReplayDiff(d) => {
            s.busy = None;
            s.replay_diff = Some(Rc::from(*d));
        }
        Response::ReplayDiffRows(r) => {
            s.busy = None;
            s.replay_rows = Some(Rc::from(*r));
        }
        Response::Ops(o) => {
            s.busy = None;
            s.ops = Some(Rc::from(*o));
        }
        Response::OpsTimeline(t) => {
            s.busy = None;
            s.ops_timeline = Some(Rc::from(*t));
        }
        Response::Ags(a) => {
            s.busy = None;
            s.ags = Some(Rc::from(*a));
        }
        Response::AgMap(m) => {
            s.busy = None;
            s.ag_map = Some(Rc::from(*m));
        }
        Response::Hex(h) => {
            s.busy = None;
            s.hex = Some(Rc::from(*h));
        }
        Response::AgRecords(r) => {
            s.busy = None;
            s.ag_records = Some(Rc::from(*r));
        }
    }
}
