//! The page's side of the worker: starts it, waits for `Ready`, queues
//! requests until then, and hands every response to a callback.
//!
//! The page starts with the light worker (no replay, no operations
//! analysis: the page's own wasm, nothing more to load). The first request only the full
//! worker answers ([`Request::light_worker_answers`]) starts the full
//! worker in its place: it opens again what the light one had open (its
//! answers to that are dropped: the page has them), then takes the
//! requests the light one had not answered yet, then this one. The full
//! worker stays until the bridge goes. A file's content the light worker
//! is still streaming is not asked for again: the light worker is kept
//! until it has sent the last piece of each, and only those pieces are
//! taken from it after the switch, with the error that stopped a read.

use crate::web::protocol::{Request, Response};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use web_sys::{MessageEvent, Worker};
use yew::Callback;

/// The light worker's starter (`www/worker-light.js`): a module worker that
/// runs the page's own module, whose address it is given.
const LIGHT_WORKER_LOADER: &str = "worker-light.js";
/// The full worker's loader script, as Trunk names it (`<bin>_loader.js`).
const FULL_WORKER_LOADER: &str = "xfs-explorer-worker_loader.js";

#[wasm_bindgen]
extern "C" {
    /// The address of the page's JS module (Trunk names it with a hash of
    /// its content), which the light worker imports.
    #[wasm_bindgen(thread_local_v2, js_namespace = ["import", "meta"], js_name = url)]
    static MODULE_URL: js_sys::JsString;
}

struct Shared {
    ready: bool,
    queue: Vec<JsValue>,
    /// Answers still to drop: those of the full worker to the requests
    /// that open again what the light one had open. Each answer ends with
    /// `Memory`.
    mute: usize,
    /// Requests sent and not answered yet, oldest first, with their
    /// numbers (a file's content, streamed, is not counted).
    pending: VecDeque<(u64, Request)>,
    /// Files' contents asked for whose last piece has not come yet.
    streams: usize,
    /// This worker was replaced: only the pieces of its streams are
    /// taken, with the error that stopped one, and it is stopped after the
    /// last one.
    retiring: bool,
    /// While retiring: the last view error it sent, shown only if a
    /// stream's failed end follows it (the worker sends the error that
    /// stopped a read just before that end).
    stream_error: Option<Response>,
}

/// One worker running, with its handlers.
struct Running {
    worker: Worker,
    shared: Rc<RefCell<Shared>>,
    _onmessage: Closure<dyn FnMut(MessageEvent)>,
    _onerror: Closure<dyn FnMut(web_sys::ErrorEvent)>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.worker.terminate();
    }
}

pub struct Bridge {
    running: RefCell<Running>,
    /// The full worker is the one running.
    full: Cell<bool>,
    on_response: Callback<Response>,
    /// The requests that opened what is open, with their numbers.
    opening: RefCell<Vec<(u64, Request)>>,
    /// Requests sent so far (the next one's number).
    sent: Cell<u64>,
    /// The light worker once stopped: its handlers are kept until the
    /// bridge goes, as the request that stopped it may be sent from one.
    stopped: RefCell<Option<Running>>,
}

fn loader_url(loader: &str, light: bool) -> String {
    let location = web_sys::window().map(|w| w.location());
    // Resolve against the page so the app also works under a sub-path.
    let Some(url) = location
        .as_ref()
        .and_then(|l| l.href().ok())
        .and_then(|href| web_sys::Url::new_with_base(loader, &href).ok())
    else {
        return loader.to_string();
    };
    // The page's choice of a read-ahead worker goes to the worker in its
    // address (src/web/worker/read_ahead.rs).
    let search = location.and_then(|l| l.search().ok()).unwrap_or_default();
    let params = url.search_params();
    match crate::web::protocol::read_ahead_choice(&search) {
        Some(true) => params.set("read-ahead", "always"),
        Some(false) => params.set("read-ahead", "never"),
        None => {}
    }
    if light {
        params.set("js", &MODULE_URL.with(|u| String::from(u)));
    }
    url.set_search(&String::from(params.to_string()));
    url.href()
}

impl Running {
    fn start(
        loader: &str,
        light: bool,
        on_response: Callback<Response>,
        mute: usize,
    ) -> Result<Running, String> {
        let url = loader_url(loader, light);
        let worker = if light {
            let options = web_sys::WorkerOptions::new();
            options.set_type(web_sys::WorkerType::Module);
            Worker::new_with_options(&url, &options)
        } else {
            Worker::new(&url)
        }
        .map_err(|e| format!("cannot start the worker: {e:?}"))?;
        let shared = Rc::new(RefCell::new(Shared {
            ready: false,
            queue: Vec::new(),
            mute,
            pending: VecDeque::new(),
            streams: 0,
            retiring: false,
            stream_error: None,
        }));
        let (w2, s2, cb) = (worker.clone(), Rc::clone(&shared), on_response.clone());
        let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
            let resp = match crate::web::protocol::decode_response(&ev.data()) {
                Ok(r) => r,
                Err(e) => Response::Error {
                    name: String::new(),
                    message: format!("unreadable message from the worker: {e}"),
                },
            };
            let (before, shown) = {
                let mut s = s2.borrow_mut();
                let mut before = None;
                let answered = matches!(resp, Response::Memory { .. });
                let stream_end = matches!(resp, Response::FileChunk { last: true, .. });
                if stream_end {
                    s.streams = s.streams.saturating_sub(1);
                }
                let shown = if matches!(resp, Response::Ready) {
                    s.ready = true;
                    for msg in std::mem::take(&mut s.queue) {
                        let _ = w2.post_message(&msg);
                    }
                    !s.retiring
                } else if s.retiring {
                    // Replaced: the full worker answers everything else
                    // (it was sent what this one had not answered).
                    if s.streams == 0 {
                        w2.terminate();
                    }
                    match resp {
                        Response::ViewError { .. } => {
                            s.stream_error = Some(resp.clone());
                            false
                        }
                        Response::FileChunk { last, failed, .. } => {
                            let held = s.stream_error.take();
                            if last && failed {
                                before = held;
                            }
                            true
                        }
                        _ => false,
                    }
                } else if s.mute > 0 {
                    if answered {
                        s.mute -= 1;
                    }
                    false
                } else {
                    if answered {
                        s.pending.pop_front();
                    }
                    true
                };
                (before, shown)
            };
            if let Some(e) = before {
                cb.emit(e);
            }
            if shown {
                cb.emit(resp);
            }
        });
        worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
        let onerror =
            Closure::<dyn FnMut(web_sys::ErrorEvent)>::new(move |ev: web_sys::ErrorEvent| {
                on_response.emit(Response::Error {
                    name: String::new(),
                    message: format!("the worker failed: {}", ev.message()),
                });
            });
        worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
        Ok(Running {
            worker,
            shared,
            _onmessage: onmessage,
            _onerror: onerror,
        })
    }

    /// Send `req` (numbered `n`), counted as pending when `track`.
    fn post(&self, n: u64, req: &Request, track: bool) -> Result<(), String> {
        let msg: JsValue = crate::web::protocol::request_to_js(req)?.into();
        let mut s = self.shared.borrow_mut();
        if matches!(req, Request::ReadFile { .. }) {
            s.streams = s.streams.saturating_add(1);
        } else if track {
            s.pending.push_back((n, req.clone()));
        }
        if s.ready {
            self.worker
                .post_message(&msg)
                .map_err(|e| format!("postMessage: {e:?}"))
        } else {
            s.queue.push(msg);
            Ok(())
        }
    }
}

impl Bridge {
    pub fn new(on_response: Callback<Response>) -> Result<Bridge, String> {
        let running = Running::start(LIGHT_WORKER_LOADER, true, on_response.clone(), 0)?;
        Ok(Bridge {
            running: RefCell::new(running),
            full: Cell::new(false),
            on_response,
            opening: RefCell::new(Vec::new()),
            sent: Cell::new(0),
            stopped: RefCell::new(None),
        })
    }

    pub fn send(&self, req: &Request) -> Result<(), String> {
        let n = self.sent.get();
        self.sent.set(n.wrapping_add(1));
        {
            let mut opening = self.opening.borrow_mut();
            match req {
                Request::Open { .. } | Request::OpenPair { .. } => {
                    *opening = vec![(n, req.clone())];
                }
                Request::OpenPartition { .. } => {
                    opening.retain(|(_, r)| !matches!(r, Request::OpenPartition { .. }));
                    opening.push((n, req.clone()));
                }
                Request::AddLogDevice { .. } => opening.push((n, req.clone())),
                _ => {}
            }
        }
        if !self.full.get() && !req.light_worker_answers() {
            self.start_full()?;
        }
        self.running.borrow().post(n, req, true)
    }

    /// Put the full worker in the light one's place (see the module's
    /// documentation).
    fn start_full(&self) -> Result<(), String> {
        let pending: Vec<(u64, Request)> = self
            .running
            .borrow()
            .shared
            .borrow()
            .pending
            .iter()
            .cloned()
            .collect();
        let oldest = pending.first().map_or(u64::MAX, |(n, _)| *n);
        let answered: Vec<(u64, Request)> = self
            .opening
            .borrow()
            .iter()
            .filter(|(n, _)| *n < oldest)
            .cloned()
            .collect();
        let full = Running::start(
            FULL_WORKER_LOADER,
            false,
            self.on_response.clone(),
            answered.len(),
        )?;
        for (n, r) in &answered {
            full.post(*n, r, false)?;
        }
        for (n, r) in &pending {
            full.post(*n, r, true)?;
        }
        let light = std::mem::replace(&mut *self.running.borrow_mut(), full);
        {
            let mut s = light.shared.borrow_mut();
            if s.streams == 0 {
                light.worker.terminate();
            } else {
                s.retiring = true;
            }
        }
        *self.stopped.borrow_mut() = Some(light);
        self.full.set(true);
        Ok(())
    }
}
