//! The root component: the state reducer, the worker (`use_worker`), the
//! location hash (`use_hash_route`) and the requests each route needs
//! (`use_route_requests`, from [`route::requests_for`]); lays out the page.

use crate::web::page::bridge::Bridge;
use crate::web::page::components::ag_map::AgMapView;
use crate::web::page::components::hex_view::HexView;
use crate::web::page::components::log_view::LogPanel;
use crate::web::page::components::ops_view::OpsPanel;
use crate::web::page::components::partitions::PartitionMap;
use crate::web::page::components::replay_diff::ReplayDiff;
use crate::web::page::components::search::Search;
use crate::web::page::components::tour::TourPanel;
use crate::web::page::components::{
    ag_view::AgList, dir_list::DirList, inode_view::InodeInspector, nav::Nav,
    open_panel::OpenPanel, status::Status, superblock::SuperblockTable, tree::Tree,
};
use crate::web::page::context::WorkerContext;
use crate::web::page::download::Downloads;
use crate::web::page::route::{self, Route};
use crate::web::page::state::{Action, State};
use crate::web::protocol::{Request, Response, METADUMP_LOG};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use yew::prelude::*;

/// Where the bundled sample image is served.
const SAMPLE_URL: &str = "sample.img";

/// Fetch the bundled sample as a Blob (the bytes stay in the browser's blob
/// store; the worker reads them lazily like any file).
async fn fetch_sample() -> Result<web_sys::Blob, String> {
    let window = web_sys::window().ok_or("no window")?;
    let resp = JsFuture::from(window.fetch_with_str(SAMPLE_URL))
        .await
        .map_err(|e| format!("cannot fetch the sample: {e:?}"))?;
    let resp: web_sys::Response = resp.dyn_into().map_err(|_| "not a response".to_string())?;
    if !resp.ok() {
        return Err(format!("cannot fetch the sample: HTTP {}", resp.status()));
    }
    let blob = JsFuture::from(resp.blob().map_err(|e| format!("{e:?}"))?)
        .await
        .map_err(|e| format!("cannot read the sample: {e:?}"))?;
    blob.dyn_into()
        .map_err(|_| "the sample is not a blob".to_string())
}

/// The geometry the search box needs, from the superblock's fields.
fn addr_geo(o: &crate::web::protocol::Opened) -> Option<crate::xfs::address::AddrGeometry> {
    let f = |n: &str| -> Option<u64> {
        o.superblock
            .fields
            .iter()
            .find(|f| f.name == n)
            .and_then(|f| f.value.parse().ok())
    };
    Some(crate::xfs::address::AddrGeometry {
        blocksize: u32::try_from(f("blocksize")?).ok()?,
        agblocks: u32::try_from(f("agblocks")?).ok()?,
        agblklog: u8::try_from(f("agblklog")?).ok()?,
        agcount: u32::try_from(f("agcount")?).ok()?,
        dblocks: f("dblocks")?,
    })
}

/// Keys that work anywhere: `/` focuses the search box, Escape leaves the
/// tour and the field being typed in; arrow keys move between the links of
/// a list marked `data-keynav`.
fn on_global_key(e: &web_sys::KeyboardEvent, leave_tour: &Callback<()>) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let active = doc.active_element();
    let typing = active
        .as_ref()
        .is_some_and(|a| matches!(a.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"));
    match e.key().as_str() {
        "/" if !typing => {
            if let Some(el) = doc
                .query_selector("[data-testid=search]")
                .ok()
                .flatten()
                .and_then(|el| el.dyn_into::<web_sys::HtmlElement>().ok())
            {
                e.prevent_default();
                let _ = el.focus();
            }
        }
        "Escape" => {
            leave_tour.emit(());
            if let Some(el) = active.and_then(|a| a.dyn_into::<web_sys::HtmlElement>().ok()) {
                let _ = el.blur();
            }
        }
        "ArrowDown" | "ArrowUp" | "ArrowRight" | "ArrowLeft" if !typing => {
            let Some(a) = active else { return };
            let Some(list) = a.closest("[data-keynav]").ok().flatten() else {
                return;
            };
            let row = list.get_attribute("data-keynav").as_deref() == Some("row");
            let fwd = match e.key().as_str() {
                "ArrowDown" if !row => true,
                "ArrowUp" if !row => false,
                "ArrowRight" if row => true,
                "ArrowLeft" if row => false,
                _ => return,
            };
            let Ok(items) = list.query_selector_all("a[href], button, [tabindex='0']") else {
                return;
            };
            let n = items.length();
            let mut at = None;
            for i in 0..n {
                if items.get(i).is_some_and(|x| x.is_same_node(Some(&a))) {
                    at = Some(i);
                }
            }
            let Some(at) = at else { return };
            let to = if fwd {
                (at + 1).min(n.saturating_sub(1))
            } else {
                at.saturating_sub(1)
            };
            if let Some(el) = items
                .get(to)
                .and_then(|x| x.dyn_into::<web_sys::HtmlElement>().ok())
            {
                e.prevent_default();
                let _ = el.focus();
            }
        }
        _ => {}
    }
}

/// The AG count the superblock gives (for the AG map's links).
fn agcount_of(o: &crate::web::protocol::Opened) -> u32 {
    o.superblock
        .fields
        .iter()
        .find(|f| f.name == "agcount")
        .and_then(|f| f.value.parse().ok())
        .unwrap_or(1)
}

/// A piece of an export as the worker sent it.
struct Piece {
    log_device: bool,
    offset: u64,
    total: u64,
    bytes: js_sys::Uint8Array,
    last: bool,
}

/// Write a piece of the export under way and ask the worker for the next
/// (once it is written: one piece at most is in flight).
fn export_piece(
    downloads: &Rc<RefCell<Downloads>>,
    bridge: &Rc<RefCell<Option<Bridge>>>,
    dispatcher: &UseReducerDispatcher<State>,
    p: Piece,
) {
    use crate::web::page::download::{call_async, save, Sink};
    let Piece {
        log_device,
        offset,
        total,
        bytes,
        last,
    } = p;
    let ask = {
        let bridge = Rc::clone(bridge);
        let dispatcher = dispatcher.clone();
        let next = Request::ExportChunk {
            log_device,
            offset: offset.saturating_add(u64::from(bytes.length())),
        };
        move || {
            if let Some(b) = bridge.borrow().as_ref() {
                if let Err(e) = b.send(&next) {
                    dispatcher.dispatch(Action::Failed(e));
                }
            }
        }
    };
    let (name, sink) = match downloads.borrow().export.as_ref() {
        Some(e) if e.log_device == log_device => (
            e.name.clone(),
            match &e.sink {
                Sink::Parts(parts) => Sink::Parts(parts.clone()),
                Sink::Writable(w) => Sink::Writable(w.clone()),
            },
        ),
        // Not asked for, or cancelled.
        _ => return,
    };
    match sink {
        Sink::Parts(parts) => {
            let one = js_sys::Array::of1(&bytes);
            match web_sys::Blob::new_with_u8_array_sequence(&one) {
                Ok(b) => parts.push(&b),
                Err(_) => parts.push(&bytes),
            };
            if last {
                downloads.borrow_mut().export = None;
                save(&name, &parts);
                dispatcher.dispatch(Action::Saved(name, total));
            } else {
                ask();
            }
        }
        Sink::Writable(w) => {
            let downloads = Rc::clone(downloads);
            let dispatcher = dispatcher.clone();
            wasm_bindgen_futures::spawn_local(async move {
                let written = async {
                    call_async(&w, "write", Some(&bytes)).await?;
                    if last {
                        call_async(&w, "close", None).await?;
                    }
                    Ok::<(), String>(())
                }
                .await;
                let current = downloads
                    .borrow()
                    .export
                    .as_ref()
                    .is_some_and(|e| e.log_device == log_device);
                if !current {
                    return;
                }
                match written {
                    Ok(()) if last => {
                        downloads.borrow_mut().export = None;
                        dispatcher.dispatch(Action::Saved(name, total));
                    }
                    Ok(()) => ask(),
                    Err(e) => {
                        downloads.borrow_mut().abort_export();
                        dispatcher.dispatch(Action::Failed(format!("writing {name}: {e}")));
                    }
                }
            });
        }
    }
}

/// Start writing the recovered image (or log device) as `name`: to a file
/// the user picks where the browser can write one, else as a download.
fn start_export(
    log_device: bool,
    name: String,
    downloads: Rc<RefCell<Downloads>>,
    send: Rc<dyn Fn(Request)>,
    dispatcher: UseReducerDispatcher<State>,
) {
    use crate::web::page::download::{call_async, js_error, save_file_picker, Export, Sink};
    let what = if log_device {
        "writing the recovered log device"
    } else {
        "writing the recovered image"
    };
    let begin = {
        let (name, dispatcher) = (name.clone(), dispatcher.clone());
        move |sink: Sink| {
            downloads.borrow_mut().abort_export();
            downloads.borrow_mut().export = Some(Export {
                log_device,
                name,
                sink,
            });
            dispatcher.dispatch(Action::Loading(what.into()));
            send(Request::ExportChunk {
                log_device,
                offset: 0,
            });
        }
    };
    let (Some(picker), Some(window)) = (save_file_picker(), web_sys::window()) else {
        begin(Sink::Parts(js_sys::Array::new()));
        return;
    };
    // Called here, in the click, for the user activation the picker needs.
    let opts = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&opts, &"suggestedName".into(), &name.as_str().into());
    let picked = picker.call1(&window, &opts);
    wasm_bindgen_futures::spawn_local(async move {
        let handle = match picked.map(|p| p.dyn_into::<js_sys::Promise>()) {
            Ok(Ok(p)) => JsFuture::from(p).await.map_err(|e| js_error(&e)),
            Ok(Err(_)) => Err("showSaveFilePicker did not return a promise".to_string()),
            Err(e) => Err(js_error(&e)),
        };
        match handle {
            Ok(h) => match call_async(&h, "createWritable", None).await {
                Ok(w) => begin(Sink::Writable(w)),
                Err(e) => dispatcher.dispatch(Action::Failed(format!("cannot write {name}: {e}"))),
            },
            // The user closed the picker.
            Err(e) if e.starts_with("AbortError") => {}
            Err(e) => dispatcher.dispatch(Action::Failed(format!("cannot write {name}: {e}"))),
        }
    });
}

/// The worker as the page uses it: `send` a request; the requests that
/// opened what is open (`session`, to open it again in a new worker after
/// a cancel); the response callback (`responder`, for that new worker);
/// downloads under way.
struct WorkerHandle {
    bridge: Rc<RefCell<Option<Bridge>>>,
    responder: Rc<RefCell<Option<Callback<Response>>>>,
    session: Rc<RefCell<Vec<Request>>>,
    downloads: Rc<RefCell<Downloads>>,
    send: Rc<dyn Fn(Request)>,
}

/// Start the worker once, hand its responses to the state (pieces of
/// downloads to `Downloads` first), and stop it when the page goes.
#[hook]
fn use_worker(dispatcher: UseReducerDispatcher<State>) -> WorkerHandle {
    let bridge: Rc<RefCell<Option<Bridge>>> = use_mut_ref(|| None);
    // The response callback (to start a new worker on cancel) and the
    // requests that opened what is open (to open it again in the new one).
    let responder: Rc<RefCell<Option<Callback<Response>>>> = use_mut_ref(|| None);
    let session: Rc<RefCell<Vec<Request>>> = use_mut_ref(Vec::new);
    let downloads: Rc<RefCell<Downloads>> = use_mut_ref(Downloads::default);

    {
        let dispatcher = dispatcher.clone();
        let bridge = Rc::clone(&bridge);
        let downloads = Rc::clone(&downloads);
        let responder = Rc::clone(&responder);
        let bridge2 = Rc::clone(&bridge);
        use_effect_with((), move |_| {
            let d2 = dispatcher.clone();
            let on_response = Callback::from(move |r: Response| {
                match &r {
                    Response::FileChunk {
                        ino,
                        bytes,
                        last,
                        failed,
                        ..
                    } => {
                        downloads
                            .borrow_mut()
                            .file_chunk(*ino, bytes, *last, *failed);
                    }
                    Response::ExportChunk {
                        log_device,
                        offset,
                        total,
                        bytes,
                        last,
                    } => export_piece(
                        &downloads,
                        &bridge2,
                        &d2,
                        Piece {
                            log_device: *log_device,
                            offset: *offset,
                            total: *total,
                            bytes: bytes.0.clone(),
                            last: *last,
                        },
                    ),
                    Response::ViewError { what, .. } if what.starts_with("recovered") => {
                        downloads.borrow_mut().abort_export();
                    }
                    Response::XattrValue { ino, name, value } => {
                        downloads.borrow_mut().xattr_value(*ino, name, value);
                    }
                    // The search box's path exists: go there.
                    Response::Lookup {
                        path, ino: Some(_), ..
                    } => {
                        if let Some(w) = web_sys::window() {
                            let _ = w.location().set_hash(&Route::Path(path.clone()).href());
                        }
                    }
                    _ => {}
                }
                d2.dispatch(Action::Response(r));
            });
            *responder.borrow_mut() = Some(on_response.clone());
            match Bridge::new(on_response) {
                Ok(b) => *bridge.borrow_mut() = Some(b),
                Err(e) => dispatcher.dispatch(Action::Failed(e)),
            }
            move || {
                bridge.borrow_mut().take();
            }
        });
    }

    // Made once: the same sender for the page's life (the worker behind it
    // changes on cancel), so the context it is in stays equal.
    let send: Rc<dyn Fn(Request)> = {
        let dispatcher = dispatcher.clone();
        let bridge = Rc::clone(&bridge);
        let made = use_memo((), move |_| -> Rc<dyn Fn(Request)> {
            Rc::new(move |req: Request| {
                let sent = match bridge.borrow().as_ref() {
                    Some(b) => b.send(&req),
                    None => Err("the worker is not running".to_string()),
                };
                if let Err(e) = sent {
                    dispatcher.dispatch(Action::Failed(e));
                }
            })
        });
        Rc::clone(&*made)
    };

    WorkerHandle {
        bridge,
        responder,
        session,
        downloads,
        send,
    }
}

/// Follow the location hash (links, back and forward).
#[hook]
fn use_hash_route(dispatcher: UseReducerDispatcher<State>) {
    {
        let dispatcher = dispatcher.clone();
        use_effect_with((), move |_| {
            let listener = web_sys::window().map(|w| {
                gloo::events::EventListener::new(&w, "hashchange", move |_| {
                    dispatcher.dispatch(Action::Navigate(route::current()));
                })
            });
            move || drop(listener)
        });
    }
}

/// Ask the worker for what the route shows ([`route::requests_for`]), once
/// per route and image.
#[hook]
fn use_route_requests(state: &UseReducerHandle<State>, send: Rc<dyn Fn(Request)>) {
    {
        let dispatcher = state.dispatcher();
        let opened = state.opened.clone();
        let route = state.route.clone();
        use_effect_with(
            (route.clone(), opened.clone(), state.generation),
            move |_| {
                if let Some(o) = &opened {
                    if o.fs_error.is_none() {
                        if let Some((what, reqs)) = route::requests_for(&route) {
                            dispatcher.dispatch(Action::Loading(what));
                            for r in reqs {
                                send(r);
                            }
                        }
                    }
                }
            },
        );
    }
}

#[function_component(App)]
pub fn app() -> Html {
    let state = use_reducer(|| {
        let query = web_sys::window()
            .and_then(|w| w.location().search().ok())
            .unwrap_or_default();
        State {
            route: route::current(),
            ..State::with_caps(crate::web::page::caches::PageCaps::from_query(&query))
        }
    });
    let WorkerHandle {
        bridge,
        responder,
        session,
        downloads,
        send,
    } = use_worker(state.dispatcher());
    use_hash_route(state.dispatcher());
    use_route_requests(&state, Rc::clone(&send));

    // The guided tour: the step shown, if any (kept in localStorage).
    let tour = use_state(|| None::<usize>);
    let leave_tour = {
        let tour = tour.clone();
        Callback::from(move |_: ()| tour.set(None))
    };
    {
        let leave_tour = leave_tour.clone();
        use_effect_with((), move |_| {
            let listener = web_sys::window().map(|w| {
                let opts = gloo::events::EventListenerOptions::enable_prevent_default();
                gloo::events::EventListener::new_with_options(&w, "keydown", opts, move |e| {
                    if let Some(k) = e.dyn_ref::<web_sys::KeyboardEvent>() {
                        on_global_key(k, &leave_tour);
                    }
                })
            });
            move || drop(listener)
        });
    }

    let open_blob = {
        let dispatcher = state.dispatcher();
        let bridge = Rc::clone(&bridge);
        let session = Rc::clone(&session);
        Callback::from(move |files: Vec<(web_sys::Blob, String)>| {
            let mut files = files.into_iter();
            let Some((blob, name)) = files.next() else {
                return;
            };
            let req = match files.next() {
                Some((second, second_name)) => {
                    dispatcher.dispatch(Action::Opening(format!("{name} and {second_name}")));
                    Request::OpenPair {
                        first: blob,
                        first_name: name,
                        second,
                        second_name,
                    }
                }
                None => {
                    dispatcher.dispatch(Action::Opening(name.clone()));
                    Request::Open { blob, name }
                }
            };
            *session.borrow_mut() = vec![req.clone()];
            let sent = match bridge.borrow().as_ref() {
                Some(b) => b.send(&req),
                None => Err("the worker is not running".to_string()),
            };
            if let Err(e) = sent {
                dispatcher.dispatch(Action::Failed(e));
            }
        })
    };

    let on_pick_partition = {
        let send = Rc::clone(&send);
        let dispatcher = state.dispatcher();
        let session = Rc::clone(&session);
        Callback::from(move |number: u32| {
            dispatcher.dispatch(Action::Loading(format!("opening partition {number}")));
            let req = Request::OpenPartition { number };
            // Only the partition opened last is opened again after a cancel.
            session
                .borrow_mut()
                .retain(|r| !matches!(r, Request::OpenPartition { .. }));
            session.borrow_mut().push(req.clone());
            send(req);
        })
    };
    // Cancel: stop the worker (the only way to stop work inside it), start
    // a new one and open the same files in it; the view goes back to the
    // last one shown in full (the cancelled work's own view would ask for
    // it again), and loads again once the files are open.
    let on_cancel = {
        let dispatcher = state.dispatcher();
        let bridge = Rc::clone(&bridge);
        let responder = Rc::clone(&responder);
        let session = Rc::clone(&session);
        let downloads = Rc::clone(&downloads);
        let back = state.shown_route.clone();
        Callback::from(move |_: ()| {
            bridge.borrow_mut().take();
            downloads.borrow_mut().abort_export();
            dispatcher.dispatch(Action::Cancelled);
            if let Some(w) = web_sys::window() {
                let _ = w.location().set_hash(&back.href());
            }
            let Some(cb) = responder.borrow().clone() else {
                return;
            };
            match Bridge::new(cb) {
                Ok(b) => {
                    for req in session.borrow().iter() {
                        if let Err(e) = b.send(req) {
                            dispatcher.dispatch(Action::Failed(e));
                        }
                    }
                    *bridge.borrow_mut() = Some(b);
                }
                Err(e) => dispatcher.dispatch(Action::Failed(e)),
            }
        })
    };

    let on_download_xattr = {
        let send = Rc::clone(&send);
        let downloads = Rc::clone(&downloads);
        let ino = state.inode.as_ref().map(|i| i.ino);
        Callback::from(move |name: String| {
            if let Some(ino) = ino {
                downloads.borrow_mut().want_xattr(ino, &name);
                send(Request::XattrValue { ino, name });
            }
        })
    };
    let on_download_file = {
        let send = Rc::clone(&send);
        let downloads = Rc::clone(&downloads);
        let dispatcher = state.dispatcher();
        let inode = state.inode.clone();
        Callback::from(move |_| {
            if let Some(i) = &inode {
                let name = i
                    .path
                    .as_deref()
                    .and_then(|p| p.rsplit('/').next())
                    .filter(|n| !n.is_empty())
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("inode-{}", i.ino));
                downloads.borrow_mut().want_file(i.ino, name);
                dispatcher.dispatch(Action::Loading(format!("reading inode {}", i.ino)));
                send(Request::ReadFile { ino: i.ino });
            }
        })
    };

    let open_sample = {
        let dispatcher = state.dispatcher();
        let open_blob = open_blob.clone();
        Callback::from(move |_| {
            dispatcher.dispatch(Action::Opening("the sample image".into()));
            let (dispatcher, open_blob) = (dispatcher.clone(), open_blob.clone());
            wasm_bindgen_futures::spawn_local(async move {
                match fetch_sample().await {
                    Ok(blob) => open_blob.emit(vec![(blob, SAMPLE_URL.to_string())]),
                    Err(e) => dispatcher.dispatch(Action::Failed(e)),
                }
            });
        })
    };

    let on_replay = {
        let send = Rc::clone(&send);
        let dispatcher = state.dispatcher();
        Callback::from(move |on: bool| {
            dispatcher.dispatch(Action::Loading(if on {
                "replaying the log".into()
            } else {
                "back to the state on disk".into()
            }));
            send(Request::SetReplay { on });
        })
    };
    // A tour step that reads the replayed state turns replay on once the
    // image is open.
    {
        let on_replay = on_replay.clone();
        let need = (*tour)
            .and_then(|i| crate::web::page::components::tour::STEPS.get(i))
            .is_some_and(|s| s.replayed);
        let ready = state.opened.as_ref().is_some_and(|o| o.fs_error.is_none());
        let on = state.replay.as_ref().is_some_and(|r| r.on);
        use_effect_with((need, ready, on), move |(need, ready, on)| {
            if *need && *ready && !*on {
                on_replay.emit(true);
            }
        });
    }
    let on_tour_step = {
        let tour = tour.clone();
        let open_sample = open_sample.clone();
        // The tour's steps name the sample's paths and inodes: it opens the
        // sample in place of any other image.
        let opened = state
            .opened
            .as_ref()
            .is_some_and(|o| o.name == SAMPLE_URL && o.log_device.is_none());
        Callback::from(move |i: usize| {
            use crate::web::page::components::tour::{save_step, STEPS};
            match STEPS.get(i) {
                Some(step) => {
                    tour.set(Some(i));
                    save_step(Some(i));
                    if !opened {
                        open_sample.emit(());
                    }
                    if let Some(w) = web_sys::window() {
                        let _ = w.location().set_hash(step.hash);
                    }
                }
                None => {
                    tour.set(None);
                    save_step(None);
                }
            }
        })
    };
    let start_tour = {
        let on_tour_step = on_tour_step.clone();
        Callback::from(move |_: MouseEvent| {
            on_tour_step.emit(crate::web::page::components::tour::saved_step().unwrap_or(0))
        })
    };
    let on_download_recovered = {
        let send = Rc::clone(&send);
        let downloads = Rc::clone(&downloads);
        let dispatcher = state.dispatcher();
        let name = state
            .opened
            .as_ref()
            .map(|o| o.name.clone())
            .unwrap_or_default();
        Callback::from(move |_: MouseEvent| {
            let base = name.strip_suffix(".img").unwrap_or(&name);
            start_export(
                false,
                format!("{base}-recovered.img"),
                Rc::clone(&downloads),
                Rc::clone(&send),
                dispatcher.clone(),
            );
        })
    };
    let on_log_device = {
        let send = Rc::clone(&send);
        let session = Rc::clone(&session);
        let dispatcher = state.dispatcher();
        Callback::from(move |e: Event| {
            use wasm_bindgen::JsCast;
            let Some(input) = e
                .target()
                .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
            else {
                return;
            };
            if let Some(file) = input.files().and_then(|f| f.get(0)) {
                let name = file.name();
                dispatcher.dispatch(Action::Loading(format!("adding the log device {name}")));
                let req = Request::AddLogDevice {
                    blob: file.into(),
                    name,
                };
                session
                    .borrow_mut()
                    .retain(|r| !matches!(r, Request::AddLogDevice { .. }));
                session.borrow_mut().push(req.clone());
                send(req);
            }
            input.set_value("");
        })
    };
    let on_download_recovered_log = {
        let send = Rc::clone(&send);
        let downloads = Rc::clone(&downloads);
        let dispatcher = state.dispatcher();
        let name = state
            .opened
            .as_ref()
            .and_then(|o| o.log_device.clone())
            .unwrap_or_default();
        Callback::from(move |_: MouseEvent| {
            let base = name.strip_suffix(METADUMP_LOG).unwrap_or(&name);
            let base = base.strip_suffix(".log").unwrap_or(base);
            start_export(
                true,
                format!("{base}-recovered.log"),
                Rc::clone(&downloads),
                Rc::clone(&send),
                dispatcher.clone(),
            );
        })
    };
    let tree_toggle = |metadir: bool| {
        let dispatcher = state.dispatcher();
        Callback::from(move |path: String| {
            dispatcher.dispatch(Action::ToggleTree { metadir, path })
        })
    };
    let view_error = state.view_error.as_ref().map(|(what, msg)| {
        html! { <div class="error" data-testid="view-error" role="alert">{ format!("{what}: {msg}") }</div> }
    });
    let body = match &state.opened {
        None => match &state.choosing {
            Some(c) => html! {
                <PartitionMap layout={c.layout.clone()} message={Some(c.message.clone())} on_pick={on_pick_partition.clone()} />
            },
            None => html! {},
        },
        Some(opened) => {
            let main = match &state.route {
                Route::Superblock | Route::Unknown(_) => {
                    let replayed = state
                        .replay
                        .as_ref()
                        .filter(|r| r.on && r.superblock.is_some())
                        .map(Rc::clone);
                    html! { <>
                        if opened.layout.table.is_some() || !opened.layout.qcow2.is_empty() || opened.layout.metadump.is_some() {
                            <PartitionMap layout={opened.layout.clone()} on_pick={on_pick_partition.clone()} />
                        }
                        <SuperblockTable opened={Rc::clone(opened)} {replayed} />
                    </> }
                }
                _ if opened.fs_error.is_some() => html! {
                    <p class="error" data-testid="view-error">{ opened.fs_error.clone().unwrap_or_default() }</p>
                },
                Route::Path(_) | Route::Inode(_) | Route::Metadir(_) => {
                    match (&state.dir, &state.inode) {
                        (Some(d), _) => html! { <DirList dir={Rc::clone(d)} /> },
                        (None, Some(i)) => {
                            // Inserted, not collected: collecting sorts,
                            // another copy of the sort in the wasm.
                            let mut values = std::collections::BTreeMap::new();
                            values.extend(
                                state
                                    .xattr_values
                                    .iter()
                                    .filter(|((ino, _), _)| *ino == i.ino)
                                    .map(|((_, n), v)| (n.clone(), Rc::clone(v))),
                            );
                            html! { <InodeInspector inode={Rc::clone(i)} {values}
                            on_download_xattr={on_download_xattr.clone()}
                            on_download_file={on_download_file.clone()} /> }
                        }
                        (None, None) => html! {},
                    }
                }
                Route::Log(sel) => match &state.log {
                    Some(l) => {
                        html! { <LogPanel log={Rc::clone(l)} rows={Rc::clone(&state.log_rows)}
                        selected={*sel} detail={state.log_tx.clone()} /> }
                    }
                    None => html! {},
                },
                Route::Ops { start, skip } => match &state.ops {
                    Some(o) => {
                        html! { <OpsPanel ops={Rc::clone(o)} timeline={state.ops_timeline.clone()}
                        start={*start} skip={*skip} replayed={state.replay.as_ref().is_some_and(|r| r.on)} on_replay={on_replay.clone()} /> }
                    }
                    None => html! {},
                },
                Route::Ags => match &state.ags {
                    Some(a) => html! { <AgList ags={Rc::clone(a)} /> },
                    None => html! {},
                },
                Route::AgMap(agno) => match &state.ag_map {
                    Some(m) if m.agno == *agno => {
                        html! { <AgMapView map={Rc::clone(m)} agcount={agcount_of(opened)} /> }
                    }
                    _ => html! {},
                },
                Route::AgTree { agno, tree, start } => match &state.ag_records {
                    Some(r) if r.agno == *agno && r.tree == *tree && r.start == *start => {
                        html! { <crate::web::page::components::ag_records::AgRecords page={Rc::clone(r)} /> }
                    }
                    _ => html! {},
                },
                Route::Hex(daddr) => match &state.hex {
                    Some(h) if h.daddr == *daddr && !h.log_device => {
                        let on_find_in_log = {
                            let send = Rc::clone(&send);
                            let dispatcher = state.dispatcher();
                            let daddr = *daddr;
                            Callback::from(move |_: ()| {
                                dispatcher.dispatch(Action::Loading(
                                    "finding and decoding the log".into(),
                                ));
                                send(Request::Log);
                                send(Request::Hex { daddr });
                            })
                        };
                        html! { <HexView hex={Rc::clone(h)} replayed={state.replay.as_ref().is_some_and(|r| r.on)}
                        log_decoded={state.log.is_some()} {on_find_in_log} /> }
                    }
                    _ => html! {},
                },
                Route::LogHex(daddr) => match &state.hex {
                    Some(h) if h.daddr == *daddr && h.log_device => {
                        html! { <HexView hex={Rc::clone(h)} replayed={false} log_decoded={true} on_find_in_log={Callback::noop()} /> }
                    }
                    _ => html! {},
                },
                Route::Replay {
                    section,
                    filter,
                    start,
                } => match &state.replay_diff {
                    Some(d) => {
                        html! { <ReplayDiff diff={Rc::clone(d)} rows={state.replay_rows.clone()}
                        section={*section} filter={filter.clone()} start={*start}
                        replayed={state.replay.as_ref().is_some_and(|r| r.on)} on_replay={on_replay.clone()} /> }
                    }
                    None => html! {},
                },
            };
            let replayed = state.replay.as_ref().is_some_and(|r| r.on);
            let replay_box = state.replay.as_ref().filter(|r| r.on).map(|r| html! {
                <div class="replay-box" data-testid="replay-summary">
                    <button class="right" data-testid="download-recovered" onclick={on_download_recovered.clone()}>{ if opened.external_log { "download the recovered data device" } else { "download the recovered image" } }</button>
                    if opened.external_log && opened.log_device.is_some() {
                        <button class="right" data-testid="download-recovered-log" onclick={on_download_recovered_log.clone()}>{ "download the recovered log device" }</button>
                    }
                    <strong>{ "Replayed view: " }</strong>
                    { "the log replayed in memory as the kernel's recovery would; the file is not written. " }
                    { for r.summary.iter().map(|k| html! { <span class="muted">{ format!("{} {} · ", k.name, k.value) }</span> }) }
                    if !r.notes.is_empty() { <ul>{ for r.notes.iter().map(|n| html! { <li class="warn">{ n }</li> }) }</ul> }
                </div>
            });
            let log_device = opened.external_log.then(|| match &opened.log_device {
                Some(n) => html! {
                    <div class="replay-box" data-testid="log-device">
                        { "The log is on an external device, read from " }<strong>{ n }</strong>{ "." }
                    </div>
                },
                None => html! {
                    <div class="replay-box warn" data-testid="log-device">
                        { "This filesystem's log is on an external device (sb_logstart is 0) and no log device file was given: the log, its replay and its operations need it. " }
                        <label class="picker">
                            { "add the log device file" }
                            <input type="file" data-testid="log-device-input" onchange={on_log_device.clone()} />
                        </label>
                    </div>
                },
            });
            let log_device_error = opened.log_device_error.as_ref().map(|e| {
                html! {
                    <div class="error" data-testid="log-device-error" role="alert">{ e }</div>
                }
            });
            let files = matches!(state.route, Route::Path(_) | Route::Inode(_))
                && opened.fs_error.is_none();
            let metadir_view =
                matches!(state.route, Route::Metadir(_)) && opened.fs_error.is_none();
            let current = state.dir.as_ref().map(|d| d.path.clone());
            html! { <>
                <Nav route={state.route.clone()} {replayed} on_replay={on_replay.clone()}
                    metadir={opened.superblock.features.iter().any(|f| f == "METADIR")} />
                { for log_device }
                { for log_device_error }
                { for replay_box }
                { for view_error }
                if files {
                    <div class="files">
                        <Tree tree={Rc::clone(&state.tree)} {current}
                            on_toggle={tree_toggle(false)} generation={state.generation} />
                        <div class="main">{ main }</div>
                    </div>
                } else if metadir_view {
                    <div class="files">
                        <Tree tree={Rc::clone(&state.metadir_tree)} {current} metadir={true}
                            on_toggle={tree_toggle(true)} generation={state.generation} />
                        <div class="main">{ main }</div>
                    </div>
                } else {
                    { main }
                }
            </> }
        }
    };

    // What the page keeps of what was browsed, against its caps (read by
    // the browser tests).
    let kept = (
        state.xattr_values.len().to_string(),
        state.xattr_values.bytes().to_string(),
        state.log_rows.len().to_string(),
    );
    html! {
        <ContextProvider<WorkerContext> context={WorkerContext::new(Rc::clone(&send))}>
        <main data-xattr-values={kept.0} data-xattr-bytes={kept.1} data-log-rows={kept.2}>
            <header>
                <div class="topbar">
                    <h1>{ "xfs-explorer" }</h1>
                    <Search geo={state.opened.as_ref().and_then(|o| addr_geo(o))}
                        path_error={state.search_error.clone()} />
                    <button data-testid="tour-start" onclick={start_tour}>{
                        match crate::web::page::components::tour::saved_step() {
                            Some(i) if tour.is_none() && i > 0 => format!("resume the tour (step {})", i + 1),
                            _ => "guided tour of the sample".to_string(),
                        }
                    }</button>
                </div>
                <p class="tagline">{ "Look inside an XFS filesystem image. It is read in this tab, lazily; nothing is uploaded." }</p>
            </header>
            if let Some(i) = *tour {
                <TourPanel step={i} route={state.route.clone()} on_step={on_tour_step.clone()} on_leave={leave_tour.clone()} />
            }
            <OpenPanel on_open={open_blob} on_sample={open_sample} ready={state.worker_ready} />
            <Status busy={state.busy.clone()} error={state.error.clone()} on_cancel={on_cancel} cancelled={state.cancelled.clone()} memory={state.worker_memory} saved={state.saved.clone()} />
            { body }
        </main>
        </ContextProvider<WorkerContext>>
    }
}
