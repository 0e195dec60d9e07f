//! Where the worker's time goes, request by request: reads from the file
//! (`Blob.slice` + `FileReaderSync`), reads asked of the read-ahead
//! worker and the time spent waiting for them, copies of what was read into wasm
//! memory, the encoding of responses and `postMessage`. Each request's
//! spans are written to the console at debug level (hidden unless asked
//! for), so `benches/browser-log-bench.mjs` can break the time down.

use std::cell::Cell;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// `performance.now()` of the page or worker (milliseconds, fractional).
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    pub fn now() -> f64;
}

/// Time and counts accumulated since the last [`take`].
#[derive(Clone, Copy, Default)]
pub struct Spans {
    pub reads: u32,
    pub read_bytes: u64,
    pub read_ms: f64,
    pub copy_ms: f64,
    pub encode_ms: f64,
    pub post_ms: f64,
    /// Reads asked of the read-ahead worker, their bytes, and the time
    /// spent waiting for them (`read_ahead`; isolated pages only).
    pub ahead_reads: u32,
    pub ahead_bytes: u64,
    pub ahead_wait_ms: f64,
}

thread_local! {
    static SPANS: Cell<Spans> = const { Cell::new(Spans {
        reads: 0,
        read_bytes: 0,
        read_ms: 0.0,
        copy_ms: 0.0,
        encode_ms: 0.0,
        post_ms: 0.0,
        ahead_reads: 0,
        ahead_bytes: 0,
        ahead_wait_ms: 0.0,
    }) };
}

/// Add to the running spans.
pub fn add(f: impl FnOnce(&mut Spans)) {
    SPANS.with(|s| {
        let mut v = s.get();
        f(&mut v);
        s.set(v);
    });
}

/// The spans so far, reset to zero.
pub fn take() -> Spans {
    SPANS.with(|s| s.replace(Spans::default()))
}

/// Write one request's spans to the console (debug level).
pub fn report(request: &str, total_ms: f64, s: &Spans) {
    #[allow(clippy::as_conversions, clippy::cast_precision_loss)]
    let mib = s.read_bytes as f64 / 1_048_576.0;
    #[allow(clippy::as_conversions, clippy::cast_precision_loss)]
    let ahead_mib = s.ahead_bytes as f64 / 1_048_576.0;
    let line = format!(
        "timing {request}: {total_ms:.1} ms; reads {} ({mib:.1} MiB) {:.1} ms; read ahead {} ({ahead_mib:.1} MiB), waited {:.1} ms; copies into wasm {:.1} ms; encode {:.1} ms; postMessage {:.1} ms",
        s.reads, s.read_ms, s.ahead_reads, s.ahead_wait_ms, s.copy_ms, s.encode_ms, s.post_ms
    );
    web_sys::console::debug_1(&line.into());
}
