//! The worker as components see it: a Yew context the root provides, so a
//! component asks the worker for its own data (a directory of the tree,
//! rows of the log, an xattr value, a path looked up) instead of the root
//! routing each request. Answers still come back through the state.

use crate::web::protocol::Request;
use std::rc::Rc;
use yew::prelude::*;

/// Sends requests to the worker (the one running now: a cancel starts
/// another behind the same handle).
#[derive(Clone)]
pub struct WorkerContext {
    send: Rc<dyn Fn(Request)>,
}

impl WorkerContext {
    pub fn new(send: Rc<dyn Fn(Request)>) -> WorkerContext {
        WorkerContext { send }
    }

    pub fn send(&self, req: Request) {
        (self.send)(req);
    }
}

impl PartialEq for WorkerContext {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.send, &other.send)
    }
}

/// The worker of the page (requests go nowhere outside a provider).
#[hook]
pub fn use_worker_context() -> WorkerContext {
    use_context::<WorkerContext>().unwrap_or_else(|| WorkerContext::new(Rc::new(|_| {})))
}
