//! [`ReadAt`] over a browser `Blob` (a `File` is a `Blob`), inside the
//! worker: `Blob.slice` then `FileReaderSync`, so only the asked-for range is
//! ever read and the page never holds the file.
//!
//! `FileReaderSync` moves about 200-270 MiB/s in 1 MiB reads, 450-600
//! MiB/s in 8 MiB reads and 700-900 MiB/s in 32 MiB reads (Chromium; the
//! bytes cross from the browser process; BENCHMARKS.md, "Larger reads in
//! the worker"): reads of 64 KiB and more that continue one another (the
//! log's windows, which overlap, a long file, cache chunks in a row) are
//! therefore read ahead, 1 MiB for the first that continues, then 2, 4, 8
//! and [`READ_AHEAD`] as the run goes on (so a scattered pair of
//! neighbours costs little), and the rest kept for the next reads.
//!
//! On a cross-origin isolated page, large reads go to a second worker that
//! reads ahead while this one works (`read_ahead`); this path remains
//! for the rest and wherever that one is not available.

use super::read_ahead::{self, ReadAhead};
use crate::xfs::read::{ReadAt, ReadError};
use std::cell::{Cell, RefCell};
use web_sys::{Blob, FileReaderSync};

/// What the worker reads the filesystem through: the file under its qcow2
/// layers and partition window.
pub type Disk = crate::xfs::container::Volume<BlobReader>;

/// What is told the size of every read.
pub type ReadHook = Box<dyn FnMut(u64)>;

thread_local! {
    /// Told the size of every read from a file (progress of work that
    /// has none of its own).
    static READ_HOOK: RefCell<Option<ReadHook>> = const { RefCell::new(None) };
}

/// Call `hook` with the bytes of every read from now on (`None`: stop).
pub fn set_read_hook(hook: Option<ReadHook>) {
    READ_HOOK.with(|h| *h.borrow_mut() = hook);
}

/// Files from this size up read their large reads through the read-ahead
/// worker when the page is isolated (`read_ahead`).
const OVERLAP_MIN_FILE: u64 = 32 << 20;

/// Bytes read at once when reads run sequentially: 16 MiB reads decode the
/// large-checkpoint log 11% faster than 8 MiB; 32 MiB only 3% more, for
/// 40 MiB more at the peak (the arrays read wait for garbage collection).
const READ_AHEAD: u64 = 16 << 20;
/// Reads from this size up that continue the previous read start a
/// read-ahead (smaller ones are lookups: a block, an inode cluster).
const SEQUENTIAL_MIN: u64 = 64 << 10;

pub struct BlobReader {
    blob: Blob,
    len: u64,
    reader: FileReaderSync,
    /// Where the previous read of [`SEQUENTIAL_MIN`] bytes or more started
    /// and ended (small reads in between do not break a run).
    last_start: Cell<u64>,
    last_end: Cell<u64>,
    /// Reads in a row that continued the previous one.
    streak: Cell<u32>,
    /// Bytes read ahead: the file from `.0` on.
    ahead: RefCell<Option<(u64, js_sys::Uint8Array)>>,
    /// The read-ahead worker, on a cross-origin isolated page, for files
    /// large enough to hold a log worth it.
    overlapped: Option<ReadAhead>,
}

impl BlobReader {
    pub fn new(blob: Blob) -> Result<Self, String> {
        let size = blob.size();
        if !(size.is_finite() && size >= 0.0) {
            return Err("the file has no size".into());
        }
        // f64 holds every file size a browser can give (below 2^53) exactly.
        #[allow(
            clippy::as_conversions,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let len = size as u64;
        let reader = FileReaderSync::new().map_err(|e| format!("FileReaderSync: {e:?}"))?;
        let overlapped = if len >= OVERLAP_MIN_FILE {
            ReadAhead::start(&blob, len)
        } else {
            None
        };
        Ok(BlobReader {
            blob,
            len,
            reader,
            last_start: Cell::new(u64::MAX),
            last_end: Cell::new(0),
            streak: Cell::new(0),
            ahead: RefCell::new(None),
            overlapped,
        })
    }

    /// The file's bytes `[offset, end)` as a fresh `Uint8Array`.
    fn read_js(&self, offset: u64, end: u64) -> Result<js_sys::Uint8Array, ReadError> {
        let t0 = crate::web::worker::timing::now();
        let slice = self
            .blob
            .slice_with_f64_and_f64(to_f64(offset), to_f64(end))
            .map_err(|e| ReadError(format!("Blob.slice: {e:?}")))?;
        let ab = self
            .reader
            .read_as_array_buffer(&slice)
            .map_err(|e| ReadError(format!("FileReaderSync: {e:?}")))?;
        let arr = js_sys::Uint8Array::new(&ab);
        let t1 = crate::web::worker::timing::now();
        crate::web::worker::timing::add(|s| {
            s.reads = s.reads.saturating_add(1);
            s.read_bytes = s.read_bytes.saturating_add(end.saturating_sub(offset));
            s.read_ms += t1 - t0;
        });
        READ_HOOK.with(|h| {
            if let Ok(mut h) = h.try_borrow_mut() {
                if let Some(f) = h.as_mut() {
                    f(end.saturating_sub(offset));
                }
            }
        });
        if u64::from(arr.length()) != end.saturating_sub(offset) {
            return Err(ReadError(format!(
                "short read at {offset}: {} of {} bytes",
                arr.length(),
                end.saturating_sub(offset)
            )));
        }
        Ok(arr)
    }

    /// Copy `[offset, offset + buf.len())` out of the read-ahead bytes, if
    /// they hold all of it.
    fn copy_ahead(&self, offset: u64, buf: &mut [u8]) -> bool {
        let ahead = self.ahead.borrow();
        let Some((start, arr)) = ahead.as_ref() else {
            return false;
        };
        let Some(lo) = offset.checked_sub(*start) else {
            return false;
        };
        let want = u64::try_from(buf.len()).unwrap_or(u64::MAX);
        let hi = lo.saturating_add(want);
        let (Ok(lo), Ok(hi)) = (u32::try_from(lo), u32::try_from(hi)) else {
            return false;
        };
        if hi > arr.length() {
            return false;
        }
        copy_out(&arr.subarray(lo, hi), buf);
        true
    }
}

#[allow(clippy::as_conversions, clippy::cast_precision_loss)]
fn to_f64(n: u64) -> f64 {
    n as f64
}

/// Copy a `Uint8Array` (of `buf`'s length) into wasm memory, timed.
fn copy_out(arr: &js_sys::Uint8Array, buf: &mut [u8]) {
    let t0 = crate::web::worker::timing::now();
    arr.copy_to(buf);
    let t1 = crate::web::worker::timing::now();
    crate::web::worker::timing::add(|s| s.copy_ms += t1 - t0);
}

impl ReadAt for BlobReader {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let want = u64::try_from(buf.len()).map_err(|_| ReadError("read too large".into()))?;
        let end = offset
            .checked_add(want)
            .ok_or_else(|| ReadError("range overflows".into()))?;
        if want >= read_ahead::MIN_READ {
            if let Some(served) = self.overlapped.as_ref().and_then(|o| o.read(offset, buf)) {
                served?;
                READ_HOOK.with(|h| {
                    if let Ok(mut h) = h.try_borrow_mut() {
                        if let Some(f) = h.as_mut() {
                            f(want);
                        }
                    }
                });
                return Ok(());
            }
        }
        // Continuing: starting after the previous read's start and no
        // further than its end (the log's windows overlap by the record
        // that straddles the previous window's end).
        // Or continuing what was read ahead, though other reads came in
        // between (replay and the operations analysis read scattered
        // metadata between the log's windows).
        let continues_ahead = self.ahead.borrow().as_ref().is_some_and(|(start, arr)| {
            offset > *start && offset <= start.saturating_add(u64::from(arr.length()))
        });
        let sequential = ((offset > self.last_start.get() && offset <= self.last_end.get())
            || continues_ahead)
            && want >= SEQUENTIAL_MIN;
        let streak = if sequential {
            self.streak.get().saturating_add(1)
        } else if want >= SEQUENTIAL_MIN {
            0
        } else {
            // A small read in between leaves the run as it was.
            self.streak.get()
        };
        self.streak.set(streak);
        if want >= SEQUENTIAL_MIN {
            self.last_start.set(offset);
            self.last_end.set(end);
        }
        if self.copy_ahead(offset, buf) {
            return Ok(());
        }
        let size = (1u64 << 20)
            .checked_shl(streak.saturating_sub(1).min(4))
            .unwrap_or(READ_AHEAD)
            .min(READ_AHEAD);
        if sequential && want < size {
            let ahead_end = offset.saturating_add(size).min(self.len).max(end);
            let arr = self.read_js(offset, ahead_end)?;
            *self.ahead.borrow_mut() = Some((offset, arr));
            if self.copy_ahead(offset, buf) {
                return Ok(());
            }
            return Err(ReadError(format!("read-ahead at {offset} came back short")));
        }
        let arr = self.read_js(offset, end)?;
        copy_out(&arr, buf);
        Ok(())
    }
}
