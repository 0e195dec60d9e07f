//! Messages between the page and the worker (serde-wasm-bindgen over
//! postMessage). A `Blob` travels as a handle: postMessage copies the
//! reference, never the bytes. Every view the page shows arrives as one of
//! the small structs below, already shaped for display.

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
    /// Resolve a path: a directory comes back as `Dir`, anything else as `Inode`.
    Path { path: String },
    /// One inode.
    Inode { ino: u64 },
    /// One xattr value (values are never sent with the names).
    XattrValue { ino: u64, name: String },
    /// A file's content, streamed back as `FileChunk`s.
    ReadFile { ino: u64 },
    /// Summaries of every allocation group.
    Ags,
    /// The subdirectories of a directory, for the tree in the sidebar.
    TreeChildren { path: String },
    /// Decode the log (once per image) and summarise it.
    Log,
    /// Rows of the transaction list: `count` transactions from `start`.
    LogRows { start: u32, count: u32 },
    /// One transaction with its items and bitmaps.
    LogTransaction { index: u32 },
    /// Switch every view to the replayed state (replaying the log the
    /// first time) or back to the state on disk.
    SetReplay { on: bool },
    /// The recovered image (the log replayed, mount-time work done, a clean
    /// log), streamed back as `FileChunk`s for inode [`RECOVERED_IMAGE`].
    DownloadRecovered,
}

/// The `FileChunk` id of the recovered image stream (no inode has number 0).
pub const RECOVERED_IMAGE: u64 = 0;

/// Encode a message for postMessage. 64-bit integers travel as BigInts, so
/// every value an image holds (inode numbers, sizes, LSNs up to 2^64 - 1)
/// crosses intact instead of failing the whole message.
pub fn to_js<T: Serialize>(v: &T) -> Result<wasm_bindgen::JsValue, serde_wasm_bindgen::Error> {
    let ser = serde_wasm_bindgen::Serializer::new().serialize_large_number_types_as_bigints(true);
    v.serialize(&ser)
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
    /// Opening failed; the message is for people.
    Error {
        name: String,
        message: String,
    },
    /// A request about the open image failed; the rest keeps working.
    ViewError {
        what: String,
        message: String,
    },
    Dir(Box<DirView>),
    Inode(Box<InodeView>),
    XattrValue {
        ino: u64,
        name: String,
        value: Vec<u8>,
    },
    /// A piece of a file being read; `last` marks the end.
    FileChunk {
        ino: u64,
        offset: u64,
        bytes: Vec<u8>,
        last: bool,
    },
    Ags(Box<AgsView>),
    /// The subdirectory names of `path` (sorted), or why they could not be read.
    TreeChildren {
        path: String,
        dirs: Vec<String>,
        error: Option<String>,
    },
    Log(Box<LogView>),
    LogRows {
        start: u32,
        rows: Vec<TxRow>,
    },
    LogTransaction(Box<TxDetail>),
    Replay(Box<ReplayView>),
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Opened {
    pub name: String,
    /// The image size in bytes.
    pub size: u64,
    pub superblock: SuperblockView,
    /// How much of the file was actually read.
    pub stats: ReadStats,
    /// Why the metadata cannot be browsed, if it cannot (the superblock is
    /// still shown).
    pub fs_error: Option<String>,
}

/// A name, a value as text, and what it means.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Kv {
    pub name: String,
    pub value: String,
    pub meaning: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct DirView {
    pub path: String,
    pub ino: u64,
    /// The directory format (shortform, block, leaf, node).
    pub format: String,
    pub entries: Vec<EntryView>,
    /// Problems met while reading the directory (the entries read so far
    /// are still listed).
    pub problems: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct EntryView {
    pub name: String,
    pub ino: u64,
    /// dir, file, symlink, chardev, blockdev, fifo, socket, unknown.
    pub kind: String,
    pub size: Option<u64>,
    pub mode: Option<u16>,
    /// Reading the entry's inode failed.
    pub error: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ExtentView {
    pub file_block: u64,
    pub start: u64,
    pub len: u64,
    pub unwritten: bool,
    pub shared: Option<bool>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ForkView {
    pub format: u8,
    pub format_name: String,
    /// Extents (at most `MAX_EXTENTS_SHOWN`) and how many there are.
    pub extents: Vec<ExtentView>,
    pub extent_count: u64,
    /// Bytes of an inline (local) fork.
    pub local_len: Option<u64>,
    /// The inline bytes themselves (at most an inode's size).
    pub local_bytes: Vec<u8>,
    /// bmbt levels below the root, for btree forks.
    pub btree_level: Option<u16>,
    pub error: Option<String>,
}

/// The literal area of the inode split by `di_forkoff`, in bytes from the
/// start of the inode.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LayoutView {
    pub inode_bytes: u32,
    pub core_bytes: u32,
    pub literal_bytes: u32,
    pub forkoff: u8,
    pub data_fork_offset: u32,
    pub data_fork_bytes: u32,
    pub data_fork_used_bytes: Option<u32>,
    pub attr_fork_offset: Option<u32>,
    pub attr_fork_bytes: u32,
    pub default_forkoff: u8,
    pub max_forkoff: u8,
    pub reading_tag: String,
    pub reading: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct XattrName {
    /// The Linux name (`user.x`, `trusted.x`, `security.x`), or a parent
    /// pointer shown as such.
    pub name: String,
    pub value_len: u64,
    /// The value lives in remote blocks.
    pub remote: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct InodeView {
    pub ino: u64,
    /// The path it was reached by, if any.
    pub path: Option<String>,
    pub kind: String,
    pub fields: Vec<Kv>,
    pub format: u8,
    pub format_name: String,
    pub aformat: u8,
    pub aformat_name: String,
    pub nextents: u64,
    pub anextents: u64,
    pub size: u64,
    pub layout: LayoutView,
    pub data: ForkView,
    pub attr: Option<ForkView>,
    pub xattrs: Vec<XattrName>,
    pub xattr_error: Option<String>,
    pub symlink: Option<String>,
    pub rdev: Option<(u32, u32)>,
    pub location: String,
    /// CRC and header checks (empty when the inode verified).
    pub problems: Vec<String>,
    pub crc_ok: Option<bool>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct AgsView {
    pub ags: Vec<AgView>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct AgView {
    pub agno: u32,
    /// Short summary lines: name, value, meaning.
    pub summary: Vec<Kv>,
    pub agf: Vec<Kv>,
    pub agi: Vec<Kv>,
    pub problems: Vec<String>,
}

/// How many extents an inode view carries at most.
pub const MAX_EXTENTS_SHOWN: usize = 2000;

/// The log at a glance.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LogView {
    pub clean: bool,
    /// (cycle, block) with the block in 512-byte units from the log start.
    pub head: (u32, u32),
    pub tail: (u32, u32),
    /// Log length in 512-byte blocks.
    pub len_bbs: u32,
    pub start_daddr: u64,
    pub records: u64,
    pub records_crc_ok: u64,
    pub crc_mismatches: Vec<String>,
    pub transactions: u32,
    pub incomplete: u32,
    /// Intents without a done item: one line each.
    pub unfinished: Vec<String>,
    /// Indices of transactions holding an unfinished intent.
    pub unfinished_tx: Vec<u32>,
    /// Totals by item kind: kind, items, regions, bytes.
    pub by_kind: Vec<(String, u64, u64, u64)>,
    /// Buffer totals: name and value.
    pub buffers: Vec<Kv>,
    pub problems: Vec<String>,
    /// Milliseconds the worker took to find and decode the log.
    pub decode_ms: f64,
}

/// One row of the transaction list.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TxRow {
    pub index: u32,
    pub tid: u32,
    pub start: String,
    pub commit: String,
    pub items: u32,
    pub regions: u64,
    pub bytes: u64,
    /// Items by kind, e.g. "buf 12, inode 3".
    pub kinds: String,
    pub unfinished_intent: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TxDetail {
    pub row: TxRow,
    pub type_: Option<u32>,
    pub num_items: Option<u32>,
    pub ops: u32,
    pub problems: Vec<String>,
    pub items: Vec<ItemView>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ItemView {
    pub kind: String,
    pub regions: u16,
    pub text: String,
    pub intent: bool,
    pub unfinished: bool,
    pub bitmap: Option<BitmapView>,
}

/// A buffer item's dirty bitmap: one cell per 128-byte chunk.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct BitmapView {
    /// Chunks in the buffer (its length in 128-byte units).
    pub chunks: u32,
    pub runs: Vec<RunView>,
    pub cancel: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RunView {
    pub first: u32,
    pub count: u32,
    /// The fields (or entries, inodes) the run covers.
    pub label: String,
}

/// The replayed state: whether views show it, and what replay did.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ReplayView {
    pub on: bool,
    pub summary: Vec<Kv>,
    /// Notes and warnings of the replay (unfinished intents, torn writes...).
    pub notes: Vec<String>,
    pub error: Option<String>,
}
