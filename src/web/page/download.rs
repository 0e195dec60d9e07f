//! Downloads: file content streamed from the worker in chunks and xattr
//! values, saved through a Blob URL. Each chunk becomes a Blob as it
//! arrives (the browser's blob store, which pages large blobs out to disk,
//! holds it, not the page's heap), and the file is one Blob of those parts:
//! no copy of the whole file is ever built in the page.
//!
//! The recovered image is pulled from the worker a piece at a time
//! ([`Export`]): written to the file the user picked where the browser has
//! the File System Access API (`showSaveFilePicker`, `createWritable`),
//! else kept as Blob parts and offered as one download at the end. The
//! next piece is asked for once this one is written, so one piece at most
//! is in flight.

use wasm_bindgen::JsCast;

/// Where the pieces of an export go.
pub enum Sink {
    /// A `FileSystemWritableFileStream` of the file the user picked.
    Writable(wasm_bindgen::JsValue),
    /// Blob parts, offered as a download once the last piece is in.
    Parts(js_sys::Array),
}

/// A recovered image (or log device) being written.
pub struct Export {
    pub log_device: bool,
    pub name: String,
    pub sink: Sink,
}

/// Call `obj.method(arg)` and wait for the promise it returns.
pub async fn call_async(
    obj: &wasm_bindgen::JsValue,
    method: &str,
    arg: Option<&wasm_bindgen::JsValue>,
) -> Result<wasm_bindgen::JsValue, String> {
    let f = js_sys::Reflect::get(obj, &method.into())
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
        .ok_or_else(|| format!("{method} is not available"))?;
    let p = match arg {
        Some(a) => f.call1(obj, a),
        None => f.call0(obj),
    }
    .map_err(|e| js_error(&e))?;
    let p: js_sys::Promise = p
        .dyn_into()
        .map_err(|_| format!("{method} did not return a promise"))?;
    wasm_bindgen_futures::JsFuture::from(p)
        .await
        .map_err(|e| js_error(&e))
}

/// A JS error as text (its name and message).
pub fn js_error(e: &wasm_bindgen::JsValue) -> String {
    let get = |k: &str| {
        js_sys::Reflect::get(e, &k.into())
            .ok()
            .and_then(|v| v.as_string())
    };
    match (get("name"), get("message")) {
        (Some(n), Some(m)) => format!("{n}: {m}"),
        _ => format!("{e:?}"),
    }
}

/// `window.showSaveFilePicker`, where the browser has it.
pub fn save_file_picker() -> Option<js_sys::Function> {
    let w = web_sys::window()?;
    js_sys::Reflect::get(&w, &"showSaveFilePicker".into())
        .ok()?
        .dyn_into::<js_sys::Function>()
        .ok()
}

#[derive(Default)]
pub struct Downloads {
    /// The export under way.
    pub export: Option<Export>,
    /// Files being assembled: inode, name and parts. (A few at a time:
    /// lists, not maps, keep two map types out of the wasm.)
    files: Vec<(u64, String, js_sys::Array)>,
    /// xattr values the user asked to save: inode and name.
    xattrs: Vec<(u64, String)>,
}

/// Offer `parts` to the user as a file called `name`.
pub fn save(name: &str, parts: &js_sys::Array) {
    let Ok(blob) = web_sys::Blob::new_with_blob_sequence(parts) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    let anchor = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.create_element("a").ok())
        .and_then(|a| a.dyn_into::<web_sys::HtmlAnchorElement>().ok());
    if let Some(a) = anchor {
        a.set_href(&url);
        a.set_download(name);
        a.click();
    }
    // The download reads the URL after this task: let it go a minute later.
    gloo::timers::callback::Timeout::new(60_000, move || {
        let _ = web_sys::Url::revoke_object_url(&url);
    })
    .forget();
}

impl Downloads {
    /// Stop the export under way (a writable is aborted: the picked file
    /// is left as it was).
    pub fn abort_export(&mut self) {
        if let Some(Export {
            sink: Sink::Writable(w),
            ..
        }) = self.export.take()
        {
            wasm_bindgen_futures::spawn_local(async move {
                let _ = call_async(&w, "abort", None).await;
            });
        }
    }

    pub fn want_file(&mut self, ino: u64, name: String) {
        self.files.retain(|f| f.0 != ino);
        self.files.push((ino, name, js_sys::Array::new()));
    }

    pub fn want_xattr(&mut self, ino: u64, name: &str) {
        if !self.xattrs.iter().any(|x| x.0 == ino && x.1 == name) {
            self.xattrs.push((ino, name.to_string()));
        }
    }

    /// A piece of a file asked for; the last saves it, unless the read
    /// failed (the error is shown; a truncated file is not saved).
    pub fn file_chunk(&mut self, ino: u64, bytes: &[u8], last: bool, failed: bool) {
        let at = self.files.iter().position(|f| f.0 == ino);
        if let Some((_, _, parts)) = at.and_then(|i| self.files.get(i)) {
            let one = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes));
            match web_sys::Blob::new_with_u8_array_sequence(&one) {
                Ok(b) => parts.push(&b),
                Err(_) => parts.push(&js_sys::Uint8Array::from(bytes)),
            };
        }
        if last {
            if let Some((_, name, parts)) = at.map(|i| self.files.remove(i)) {
                if !failed {
                    save(&name, &parts);
                }
            }
        }
    }

    pub fn xattr_value(&mut self, ino: u64, name: &str, value: &[u8]) {
        let at = self.xattrs.iter().position(|x| x.0 == ino && x.1 == name);
        if let Some(i) = at {
            self.xattrs.remove(i);
            let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(value));
            save(&format!("{ino}.{name}"), &parts);
        }
    }
}
