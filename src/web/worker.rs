//! The web worker: owns the opened image and answers the page's requests.

use crate::web::blob_reader::BlobReader;
use crate::web::protocol::{Opened, Request, Response};
use crate::xfs::image::Image;
use crate::xfs::sb::read_superblock;
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

/// Chunk size of the worker's block cache: each `FileReaderSync` call costs
/// about a millisecond, so reads are large.
const WEB_CHUNK: u64 = 1 << 20;
/// Chunks kept (64 MiB at most).
const WEB_CACHE_CHUNKS: usize = 64;

thread_local! {
    static IMAGE: RefCell<Option<Image<BlobReader>>> = const { RefCell::new(None) };
}

fn post(scope: &DedicatedWorkerGlobalScope, resp: &Response) {
    match serde_wasm_bindgen::to_value(resp) {
        Ok(v) => {
            if let Err(e) = scope.post_message(&v) {
                web_sys::console::error_2(&"worker: postMessage failed".into(), &e);
            }
        }
        Err(e) => web_sys::console::error_1(&format!("worker: encode: {e}").into()),
    }
}

fn handle(scope: &DedicatedWorkerGlobalScope, req: Request) {
    match req {
        Request::Open { blob, name } => {
            post(
                scope,
                &Response::Progress {
                    stage: format!("reading the superblock of {name}"),
                    done: 0,
                    total: 1,
                },
            );
            let result = BlobReader::new(blob).and_then(|reader| {
                let img = Image::with_cache(reader, WEB_CHUNK, WEB_CACHE_CHUNKS);
                let sb = read_superblock(&img).map_err(|e| e.to_string())?;
                let opened = Opened {
                    name: name.clone(),
                    size: img.len(),
                    superblock: sb.view(),
                    stats: img.stats(),
                };
                Ok((img, opened))
            });
            match result {
                Ok((img, opened)) => {
                    IMAGE.with(|i| *i.borrow_mut() = Some(img));
                    post(scope, &Response::Opened(Box::new(opened)));
                }
                Err(message) => {
                    IMAGE.with(|i| *i.borrow_mut() = None);
                    post(scope, &Response::Error { name, message });
                }
            }
        }
    }
}

/// Entry point of the worker binary.
pub fn start() {
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let scope2 = scope.clone();
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        match serde_wasm_bindgen::from_value::<Request>(ev.data()) {
            Ok(req) => handle(&scope2, req),
            Err(e) => post(
                &scope2,
                &Response::Error {
                    name: String::new(),
                    message: format!("the worker did not understand a request: {e}"),
                },
            ),
        }
    });
    scope.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    onmessage.forget();
    post(&scope, &Response::Ready);
}
