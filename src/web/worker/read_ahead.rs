//! Reads that overlap the decoding: when the page is cross-origin isolated
//! (served with `Cross-Origin-Opener-Policy: same-origin` and
//! `Cross-Origin-Embedder-Policy: require-corp`), a second worker
//! (`read-ahead.js`) reads the file asynchronously into the slots of a
//! `SharedArrayBuffer` while this worker decodes what came before, and this
//! worker waits on a slot (`Atomics.wait`) only when the decoding catches up
//! with the reading. A synchronous `FileReaderSync` read cannot overlap the
//! work: the decode is one synchronous call.
//!
//! The second worker is started only where it pays: on a machine with
//! more than two logical processors. On two, its reads took the cores the
//! decode needs, and the decode of the large-checkpoint log was 30% slower
//! than with `FileReaderSync` alone (BENCHMARKS.md, "The same image, after
//! the read-size and optimisation-level changes"). The page's
//! `?read-ahead=always` or `?read-ahead=never`, passed on in this worker's
//! address, decides instead (the browser tests use it).
//!
//! Only large reads come here (the log's windows, a file's content); a
//! read that continues the slots read so far is served from them and asks
//! for the slots after it, a read elsewhere starts a new run there. When
//! the page is not isolated, the reading worker has not started yet, or a
//! read fails or takes too long, [`ReadAhead::read`] says so and the caller
//! reads with `FileReaderSync` as before.

use crate::xfs::read::ReadError;
use js_sys::{Atomics, Int32Array, SharedArrayBuffer, Uint8Array};
use std::cell::{Cell, RefCell};
use wasm_bindgen::JsValue;
use web_sys::{Blob, Worker};

/// The reading worker's script, next to the worker's loader.
const SCRIPT: &str = "read-ahead.js";
/// Bytes per slot (a browser moves a file's bytes faster in large reads:
/// BENCHMARKS.md).
const SLOT: u32 = 8 << 20;
/// Slots (each [`SLOT`] bytes): up to `SLOTS - 2` read ahead of the one in use.
const SLOTS: usize = 6;
/// Where the slots start in the buffer (the state words come first).
const DATA_START: u32 = 4096;
/// Reads this large and larger come here.
pub const MIN_READ: u64 = 256 << 10;
/// How long a slot may take before the reader gives up on it (ms).
const WAIT_MS: f64 = 30_000.0;

/// A slot's state word (set by this worker to ASKED, by the reading worker
/// to READ or FAILED).
const ASKED: i32 = 1;
const READ: i32 = 2;
const FAILED: i32 = 3;

#[derive(Clone, Copy, Default)]
struct Slot {
    /// The file's bytes `[start, start + len)` were asked for.
    start: u64,
    len: u64,
    /// Asked for at all (a slot never asked for is free).
    used: bool,
    /// When it was last asked for or read from (for reuse: oldest first).
    tick: u64,
}

/// Slots of the file read by the other worker.
pub struct ReadAhead {
    worker: Worker,
    words: Int32Array,
    buffer: SharedArrayBuffer,
    file_len: u64,
    slots: RefCell<[Slot; SLOTS]>,
    tick: Cell<u64>,
    /// A read failed or timed out: every read goes the synchronous way.
    broken: Cell<bool>,
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        self.worker.terminate();
    }
}

/// The worker's global scope says it is cross-origin isolated (so
/// `SharedArrayBuffer` and `Atomics.wait` are there).
pub fn isolated() -> bool {
    js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("crossOriginIsolated"))
        .ok()
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}

/// `self.<a>.<b>` of the worker's global scope.
fn global_prop(a: &str, b: &str) -> Option<JsValue> {
    let o = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str(a)).ok()?;
    js_sys::Reflect::get(&o, &JsValue::from_str(b)).ok()
}

/// What the page asked for: `Some(true)` for `always`, `Some(false)` for
/// `never`, `None` to decide by the machine (see the module's documentation).
fn asked() -> Option<bool> {
    let search = global_prop("location", "search")?.as_string()?;
    crate::web::protocol::read_ahead_choice(&search)
}

/// Whether a read-ahead worker is started for a large file.
fn wanted() -> bool {
    if !isolated() {
        return false;
    }
    asked().unwrap_or_else(|| {
        global_prop("navigator", "hardwareConcurrency")
            .and_then(|v| v.as_f64())
            .is_some_and(|n| n > 2.0)
    })
}

fn state_word(slot: usize) -> u32 {
    u32::try_from(slot)
        .unwrap_or(0)
        .saturating_mul(2)
        .saturating_add(8)
}

impl ReadAhead {
    /// Start the reading worker for `blob` (`None` when the page is not
    /// isolated, the machine has no cores to spare, or the worker cannot
    /// start).
    pub fn start(blob: &Blob, file_len: u64) -> Option<ReadAhead> {
        if !wanted() {
            return None;
        }
        let slots = u32::try_from(SLOTS).ok()?;
        let size = SLOT.checked_mul(slots)?.checked_add(DATA_START)?;
        let buffer = SharedArrayBuffer::new(size);
        let words = Int32Array::new_with_byte_offset_and_length(&buffer, 0, DATA_START / 4);
        let worker = Worker::new(SCRIPT).ok()?;
        let init = js_sys::Object::new();
        let set = |k: &str, v: &JsValue| js_sys::Reflect::set(&init, &JsValue::from_str(k), v);
        set("blob", blob).ok()?;
        set("sab", &buffer).ok()?;
        set("dataStart", &JsValue::from(DATA_START)).ok()?;
        set("slotSize", &JsValue::from(SLOT)).ok()?;
        worker.post_message(&init).ok()?;
        Some(ReadAhead {
            worker,
            words,
            buffer,
            file_len,
            slots: RefCell::new([Slot::default(); SLOTS]),
            tick: Cell::new(0),
            broken: Cell::new(false),
        })
    }

    /// The reading worker runs and nothing failed.
    fn usable(&self) -> bool {
        !self.broken.get() && Atomics::load(&self.words, 0).unwrap_or(0) == 1
    }

    fn next_tick(&self) -> u64 {
        let t = self.tick.get().saturating_add(1);
        self.tick.set(t);
        t
    }

    /// The slot that holds (or will hold) the byte at `pos`.
    fn find(&self, pos: u64) -> Option<usize> {
        self.slots
            .borrow()
            .iter()
            .position(|s| s.used && pos >= s.start && pos < s.start.saturating_add(s.len))
    }

    fn state(&self, i: usize) -> i32 {
        Atomics::load(&self.words, state_word(i)).unwrap_or(FAILED)
    }

    /// A slot to reuse: a free one, else the oldest one wholly before
    /// `keep` that is not being read; for a read that found no slot
    /// (`miss`), else the oldest one not being read, else the oldest one
    /// once its read is over.
    fn victim(&self, keep: u64, miss: bool) -> Option<usize> {
        let slots = *self.slots.borrow();
        if let Some(i) = slots.iter().position(|s| !s.used) {
            return Some(i);
        }
        let oldest = |pred: &dyn Fn(usize, &Slot) -> bool| {
            slots
                .iter()
                .enumerate()
                .filter(|(i, s)| pred(*i, s))
                .min_by_key(|(_, s)| s.tick)
                .map(|(i, _)| i)
        };
        let idle = |i: usize| self.state(i) != ASKED;
        if let Some(i) = oldest(&|i, s| s.start.saturating_add(s.len) <= keep && idle(i)) {
            return Some(i);
        }
        if !miss {
            return None;
        }
        if let Some(i) = oldest(&|i, _| idle(i)) {
            return Some(i);
        }
        let i = oldest(&|_, _| true)?;
        self.wait(i).ok()?;
        Some(i)
    }

    /// Ask the reading worker for the file's bytes from `start` (a slot's
    /// worth, or to the end of the file) into slot `i`.
    fn ask(&self, i: usize, start: u64) -> Result<(), ReadError> {
        let len = self.file_len.saturating_sub(start).min(u64::from(SLOT));
        let tick = self.next_tick();
        if let Some(s) = self.slots.borrow_mut().get_mut(i) {
            *s = Slot {
                start,
                len,
                used: true,
                tick,
            };
        }
        Atomics::store(&self.words, state_word(i), ASKED)
            .map_err(|e| ReadError(format!("Atomics.store: {e:?}")))?;
        let msg = js_sys::Array::of3(
            &JsValue::from(u32::try_from(i).unwrap_or(0)),
            &JsValue::from(to_f64(start)),
            &JsValue::from(to_f64(len)),
        );
        self.worker
            .post_message(&msg)
            .map_err(|e| ReadError(format!("read-ahead postMessage: {e:?}")))?;
        crate::web::worker::timing::add(|s| {
            s.ahead_reads = s.ahead_reads.saturating_add(1);
            s.ahead_bytes = s.ahead_bytes.saturating_add(len);
        });
        Ok(())
    }

    /// Wait until slot `i` has been read.
    fn wait(&self, i: usize) -> Result<(), ReadError> {
        let word = state_word(i);
        let t0 = crate::web::worker::timing::now();
        let result = loop {
            match self.state(i) {
                READ => break Ok(()),
                ASKED => {}
                _ => break Err(ReadError("the read-ahead worker could not read".into())),
            }
            if crate::web::worker::timing::now() - t0 > WAIT_MS {
                break Err(ReadError("the read-ahead worker did not answer".into()));
            }
            if let Err(e) = Atomics::wait_with_timeout(&self.words, word, ASKED, WAIT_MS) {
                break Err(ReadError(format!("Atomics.wait: {e:?}")));
            }
        };
        let t1 = crate::web::worker::timing::now();
        crate::web::worker::timing::add(|s| s.ahead_wait_ms += t1 - t0);
        if result.is_err() {
            self.broken.set(true);
        }
        result
    }

    /// Fill `buf` with the file's bytes from `offset` through the slots
    /// (`None`: not served here, read it the synchronous way).
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> Option<Result<(), ReadError>> {
        let want = u64::try_from(buf.len()).ok()?;
        let end = offset.checked_add(want)?;
        if !self.usable() || end > self.file_len {
            return None;
        }
        let mut pos = offset;
        let mut last = None;
        while pos < end {
            let i = match self.find(pos) {
                Some(i) => i,
                None => {
                    let i = self.victim(pos, true)?;
                    if self.ask(i, pos).is_err() {
                        self.broken.set(true);
                        return None;
                    }
                    i
                }
            };
            self.wait(i).ok()?;
            let slot = self.slots.borrow().get(i).copied()?;
            let got =
                u64::try_from(Atomics::load(&self.words, state_word(i).saturating_add(1)).ok()?)
                    .ok()?;
            let slot_end = slot.start.saturating_add(got.min(slot.len));
            if pos >= slot_end {
                self.broken.set(true);
                return None;
            }
            let piece_end = end.min(slot_end);
            let lo = usize::try_from(pos.saturating_sub(offset)).ok()?;
            let hi = usize::try_from(piece_end.saturating_sub(offset)).ok()?;
            let dst = buf.get_mut(lo..hi)?;
            let at = u64::from(DATA_START)
                .saturating_add(u64::try_from(i).ok()?.saturating_mul(u64::from(SLOT)))
                .saturating_add(pos.saturating_sub(slot.start));
            let t0 = crate::web::worker::timing::now();
            Uint8Array::new_with_byte_offset_and_length(
                &self.buffer,
                u32::try_from(at).ok()?,
                u32::try_from(dst.len()).ok()?,
            )
            .copy_to(dst);
            let t1 = crate::web::worker::timing::now();
            let tick = self.next_tick();
            if let Some(s) = self.slots.borrow_mut().get_mut(i) {
                s.tick = tick;
            }
            crate::web::worker::timing::add(|s| s.copy_ms += t1 - t0);
            last = Some(slot);
            pos = piece_end;
        }
        // Keep the slots after the one read from busy.
        if let Some(slot) = last {
            let mut next = slot.start.saturating_add(slot.len);
            for _ in 0..SLOTS.saturating_sub(2) {
                if next >= self.file_len {
                    break;
                }
                if self.find(next).is_none() {
                    let Some(i) = self.victim(offset, false) else {
                        break;
                    };
                    if self.ask(i, next).is_err() {
                        self.broken.set(true);
                        break;
                    }
                }
                next = next.saturating_add(u64::from(SLOT));
            }
        }
        Some(Ok(()))
    }
}

#[allow(clippy::as_conversions, clippy::cast_precision_loss)]
fn to_f64(n: u64) -> f64 {
    n as f64
}
