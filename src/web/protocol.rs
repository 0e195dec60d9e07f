//! Messages between the page and the worker (serde-wasm-bindgen over
//! postMessage). A `Blob` travels as a handle: postMessage copies the
//! reference, never the bytes.

use crate::xfs::image::ReadStats;
use crate::xfs::sb::SuperblockView;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub enum Request {
    /// Open an image (a dropped or picked `File`, or the fetched sample).
    Open {
        #[serde(with = "serde_wasm_bindgen::preserve")]
        blob: web_sys::Blob,
        name: String,
    },
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub enum Response {
    /// The worker has started and listens.
    Ready,
    /// Work under way: what, and how far (`done` of `total`, when known).
    Progress {
        stage: String,
        done: u64,
        total: u64,
    },
    /// An image was opened and its superblock read.
    Opened(Box<Opened>),
    /// A request failed; the message is for people.
    Error { name: String, message: String },
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Opened {
    pub name: String,
    /// The image size in bytes.
    pub size: u64,
    pub superblock: SuperblockView,
    /// How much of the file was actually read.
    pub stats: ReadStats,
}
