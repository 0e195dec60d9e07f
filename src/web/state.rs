//! The page's state and the actions that change it (one reducer).

use crate::web::protocol::{Opened, Response};
use std::rc::Rc;
use yew::Reducible;

#[derive(Clone, Debug, PartialEq, Default)]
pub struct State {
    /// The worker has said it is ready.
    pub worker_ready: bool,
    /// Work under way: a description and a fraction (0..=1) when known.
    pub busy: Option<(String, Option<f64>)>,
    /// The open image.
    pub opened: Option<Rc<Opened>>,
    /// The last error, shown until the next file.
    pub error: Option<String>,
}

pub enum Action {
    /// The user asked to open something.
    Opening(String),
    /// Something failed outside the worker (fetching the sample, starting
    /// the worker).
    Failed(String),
    Response(Response),
}

impl Reducible for State {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let mut s = (*self).clone();
        match action {
            Action::Opening(name) => {
                s.busy = Some((format!("opening {name}"), None));
                s.error = None;
            }
            Action::Failed(message) => {
                s.busy = None;
                s.error = Some(message);
            }
            Action::Response(r) => match r {
                Response::Ready => s.worker_ready = true,
                Response::Progress { stage, done, total } => {
                    #[allow(clippy::as_conversions, clippy::cast_precision_loss)]
                    let frac = (total > 0).then(|| done as f64 / total as f64);
                    s.busy = Some((stage, frac));
                }
                Response::Opened(o) => {
                    s.busy = None;
                    s.error = None;
                    s.opened = Some(Rc::from(*o));
                }
                Response::Error { name, message } => {
                    s.busy = None;
                    s.opened = None;
                    s.error = Some(if name.is_empty() {
                        message
                    } else {
                        format!("{name}: {message}")
                    });
                }
            },
        }
        Rc::new(s)
    }
}
