//! Downloads: file content streamed from the worker in chunks and xattr
//! values, saved through a Blob URL. Each chunk becomes a Blob as it
//! arrives (the browser's blob store, which pages large blobs out to disk,
//! holds it, not the page's heap), and the file is one Blob of those parts:
//! no copy of the whole file is ever built in the page.

use std::collections::BTreeMap;
use wasm_bindgen::JsCast;

#[derive(Default)]
pub struct Downloads {
    /// Files being assembled: name and parts, by inode.
    files: BTreeMap<u64, (String, js_sys::Array)>,
    /// xattr values the user asked to save.
    xattrs: BTreeMap<(u64, String), ()>,
}

/// Offer `parts` to the user as a file called `name`.
fn save(name: &str, parts: &js_sys::Array) {
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
    let _ = web_sys::Url::revoke_object_url(&url);
}

impl Downloads {
    pub fn want_file(&mut self, ino: u64, name: String) {
        self.files.insert(ino, (name, js_sys::Array::new()));
    }

    pub fn want_xattr(&mut self, ino: u64, name: &str) {
        self.xattrs.insert((ino, name.to_string()), ());
    }

    pub fn file_chunk(&mut self, ino: u64, bytes: &[u8], last: bool) {
        if let Some((_, parts)) = self.files.get(&ino) {
            let one = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes));
            match web_sys::Blob::new_with_u8_array_sequence(&one) {
                Ok(b) => parts.push(&b),
                Err(_) => parts.push(&js_sys::Uint8Array::from(bytes)),
            };
        }
        if last {
            if let Some((name, parts)) = self.files.remove(&ino) {
                save(&name, &parts);
            }
        }
    }

    pub fn xattr_value(&mut self, ino: u64, name: &str, value: &[u8]) {
        if self.xattrs.remove(&(ino, name.to_string())).is_some() {
            let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(value));
            save(&format!("{ino}.{name}"), &parts);
        }
    }
}
