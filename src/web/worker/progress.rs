//! Progress from inside long work, at most every 200 ms.

use super::*;

/// When to post progress: at most every 200 ms.
#[derive(Default)]
pub(super) struct Ticker {
    last: f64,
}

impl Ticker {
    /// A ticker whose first tick is 200 ms from now.
    pub(super) fn started() -> Ticker {
        Ticker {
            last: js_sys::Date::now(),
        }
    }

    /// Whether progress is due now (the first time, at once).
    pub(super) fn due(&mut self) -> bool {
        let now = js_sys::Date::now();
        let due = now - self.last > 200.0;
        if due {
            self.last = now;
        }
        due
    }
}

/// Run `f` while progress is reported from the bytes read from the file
/// (work with no progress of its own: decoding the log, mapping an AG):
/// `stage`, bytes read so far and `total` (0 when not known).
pub(super) fn with_read_progress<T>(
    out: Out<'_>,
    stage: &str,
    total: u64,
    f: impl FnOnce() -> T,
) -> T {
    post(
        out,
        &Response::Progress {
            stage: format!("{stage}: {} read", mib(0)),
            done: 0,
            total,
        },
    );
    let (out2, stage2) = (Rc::clone(out), stage.to_string());
    let mut done = 0u64;
    let mut tick = Ticker::started();
    crate::web::worker::blob_reader::set_read_hook(Some(Box::new(move |n: u64| {
        done = done.saturating_add(n);
        if tick.due() {
            post(
                &out2,
                &Response::Progress {
                    stage: format!("{stage2}: {} read", mib(done)),
                    done: if total > 0 { done.min(total) } else { done },
                    total,
                },
            );
        }
    })));
    let r = f();
    crate::web::worker::blob_reader::set_read_hook(None);
    r
}
