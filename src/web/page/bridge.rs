//! The page's side of the worker: starts it, waits for `Ready`, queues
//! requests until then, and hands every response to a callback.

use crate::web::protocol::{Request, Response};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use web_sys::{MessageEvent, Worker};
use yew::Callback;

/// The worker's loader script, as Trunk names it (`<bin>_loader.js`).
const WORKER_LOADER: &str = "xfs-explorer-worker_loader.js";

struct Shared {
    ready: bool,
    queue: Vec<JsValue>,
}

pub struct Bridge {
    worker: Worker,
    shared: Rc<RefCell<Shared>>,
    _onmessage: Closure<dyn FnMut(MessageEvent)>,
    _onerror: Closure<dyn FnMut(web_sys::ErrorEvent)>,
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.worker.terminate();
    }
}

fn loader_url() -> String {
    // Resolve against the page so the app also works under a sub-path.
    web_sys::window()
        .and_then(|w| w.location().href().ok())
        .and_then(|href| web_sys::Url::new_with_base(WORKER_LOADER, &href).ok())
        .map(|u| u.href())
        .unwrap_or_else(|| WORKER_LOADER.to_string())
}

impl Bridge {
    pub fn new(on_response: Callback<Response>) -> Result<Bridge, String> {
        let worker =
            Worker::new(&loader_url()).map_err(|e| format!("cannot start the worker: {e:?}"))?;
        let shared = Rc::new(RefCell::new(Shared {
            ready: false,
            queue: Vec::new(),
        }));
        let (w2, s2, cb) = (worker.clone(), Rc::clone(&shared), on_response.clone());
        let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
            let resp = match serde_wasm_bindgen::from_value::<Response>(ev.data()) {
                Ok(r) => r,
                Err(e) => Response::Error {
                    name: String::new(),
                    message: format!("unreadable message from the worker: {e}"),
                },
            };
            if resp == Response::Ready {
                let queued = {
                    let mut s = s2.borrow_mut();
                    s.ready = true;
                    std::mem::take(&mut s.queue)
                };
                for msg in queued {
                    let _ = w2.post_message(&msg);
                }
            }
            cb.emit(resp);
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
        Ok(Bridge {
            worker,
            shared,
            _onmessage: onmessage,
            _onerror: onerror,
        })
    }

    pub fn send(&self, req: &Request) -> Result<(), String> {
        let msg = crate::web::protocol::to_js(req).map_err(|e| e.to_string())?;
        let mut s = self.shared.borrow_mut();
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
