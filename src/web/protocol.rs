//! Messages between the page and the worker over postMessage, both ways as
//! bincode bytes ([`request_to_js`], [`request_from_js`],
//! [`encode_response`], [`decode_response`]): decoded without matching
//! field names, which keeps the wasm small. A request's `Blob`s travel
//! beside its bytes, as handles: postMessage copies the reference, never
//! the file's bytes. Every view the page shows arrives as one of the small structs
//! below, already shaped for display.

use crate::xfs::container::Layout;
use crate::xfs::image::ReadStats;
use crate::xfs::sb::SuperblockView;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone)]
pub enum Request {
    /// Open an image (a dropped or picked `File`, or the fetched sample).
    Open {
        #[cfg_attr(target_arch = "wasm32", serde(with = "beside"))]
        blob: FileBlob,
        name: String,
    },
    /// Open two files at once: a data device and its external log device,
    /// in either order (the one that starts with a log record header, or
    /// does not start with the superblock's magic, is the log).
    OpenPair {
        #[cfg_attr(target_arch = "wasm32", serde(with = "beside"))]
        first: FileBlob,
        first_name: String,
        #[cfg_attr(target_arch = "wasm32", serde(with = "beside"))]
        second: FileBlob,
        second_name: String,
    },
    /// Read the open filesystem's external log from this file (its log is
    /// on another device: `Opened::external_log`); answered with `Opened`
    /// again, views reloaded.
    AddLogDevice {
        #[cfg_attr(target_arch = "wasm32", serde(with = "beside"))]
        blob: FileBlob,
        name: String,
    },
    /// Open partition `number` of the disk the last `Open` found (its table
    /// came back as `ChoosePartition`, or with `Opened`).
    OpenPartition { number: u32 },
    /// Resolve a path: a directory comes back as `Dir`, anything else as `Inode`.
    Path { path: String },
    /// The same, in the metadata directory tree (from `sb_metadirino`).
    MetadirPath { path: String },
    /// The bytes of a sector of the external log device, decoded like
    /// `Hex` (answered with `Hex`).
    LogHex { daddr: u64 },
    /// Does a path exist (for the search box, before it goes there)?
    /// Answered by `Lookup`.
    Lookup { path: String },
    /// One inode.
    Inode { ino: u64 },
    /// One xattr value (values are never sent with the names).
    XattrValue { ino: u64, name: String },
    /// A file's content, streamed back as `FileChunk`s.
    ReadFile { ino: u64 },
    /// Summaries of every allocation group.
    Ags,
    /// The map of one allocation group: what occupies each block.
    AgMap { agno: u32 },
    /// The bytes at a daddr with the fields of the structure there.
    Hex { daddr: u64 },
    /// A page of the leaf records of one AG btree.
    AgRecords {
        agno: u32,
        tree: String,
        start: u64,
        count: u64,
    },
    /// The subdirectories of a directory, for the tree in the sidebar (of
    /// the metadata directory tree with `metadir`).
    TreeChildren {
        path: String,
        #[serde(default)]
        metadir: bool,
    },
    /// Decode the log (once per image) and summarise it.
    Log,
    /// Rows of the transaction list: `count` transactions from `start`.
    LogRows { start: u32, count: u32 },
    /// One transaction with its items and bitmaps.
    LogTransaction { index: u32 },
    /// Switch every view to the replayed state (replaying the log the
    /// first time) or back to the state on disk.
    SetReplay { on: bool },
    /// A piece of the recovered image (the log replayed, mount-time work
    /// done, a clean log) from `offset`, or with `log_device` of the
    /// recovered external log device (a clean log, the filesystem's log
    /// being on another device); answered with `ExportChunk`. The page
    /// asks for the next piece once it has written this one, so one piece
    /// at most is in flight and nothing is assembled whole.
    ExportChunk { log_device: bool, offset: u64 },
    /// What replay changed, in numbers (replaying and comparing the first
    /// time); the rows come by pages with `ReplayDiffRows`.
    ReplayDiff,
    /// `count` rows of one part of what replay changed, from row `start`
    /// of those whose change is `filter` (all when empty).
    ReplayDiffRows {
        section: DiffSection,
        filter: String,
        start: u32,
        count: u32,
    },
    /// The operations the log carries and the transactions each cost
    /// (reconstructed once per image), with the forkoff distribution of the
    /// disk's state and, when views show it, of the replayed state.
    Ops,
    /// A page of the operations timeline: checkpoints from `start`, the
    /// first `skip` operations of that checkpoint left out, until
    /// [`OPS_PAGE_CHECKPOINTS`] checkpoints or [`OPS_PAGE_OPERATIONS`]
    /// operations are in it.
    OpsTimeline { start: u32, skip: u32 },
}

impl Request {
    /// Whether the light worker, the one the page starts with, answers
    /// this: it leaves replay, what follows from it and the operations
    /// analysis to the full worker, a larger wasm the page loads when one
    /// of those is first asked for.
    pub fn light_worker_answers(&self) -> bool {
        !matches!(
            self,
            Request::SetReplay { .. }
                | Request::ExportChunk { .. }
                | Request::ReplayDiff
                | Request::ReplayDiffRows { .. }
                | Request::Ops
                | Request::OpsTimeline { .. }
        )
    }
}

/// Checkpoints a page of the operations timeline holds at most.
pub const OPS_PAGE_CHECKPOINTS: u32 = 25;
/// Operations a page of the operations timeline holds at most.
pub const OPS_PAGE_OPERATIONS: u32 = 400;

/// The parts of what replay changed.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffSection {
    /// Paths added and removed.
    Paths,
    Inodes,
    Xattrs,
    Blocks,
}

impl DiffSection {
    pub const ALL: [DiffSection; 4] = [
        DiffSection::Paths,
        DiffSection::Inodes,
        DiffSection::Xattrs,
        DiffSection::Blocks,
    ];

    /// The name in the route (`#/replay/<name>`).
    pub fn name(self) -> &'static str {
        match self {
            DiffSection::Paths => "paths",
            DiffSection::Inodes => "inodes",
            DiffSection::Xattrs => "xattrs",
            DiffSection::Blocks => "blocks",
        }
    }

    pub fn from_name(s: &str) -> Option<DiffSection> {
        DiffSection::ALL.into_iter().find(|d| d.name() == s)
    }

    /// The values its rows' `change` takes, for the filter.
    pub fn changes(self) -> &'static [&'static str] {
        match self {
            DiffSection::Paths => &["added", "removed"],
            DiffSection::Inodes => &["created", "changed", "freed"],
            DiffSection::Xattrs => &["added", "changed", "removed"],
            DiffSection::Blocks => &[],
        }
    }
}

/// A file the page hands the worker: a browser `Blob` (a dropped or picked
/// `File`). Outside the browser nothing stands in for it, so that the
/// protocol, and the routes that make its requests, build and are tested
/// natively.
#[cfg(target_arch = "wasm32")]
pub type FileBlob = web_sys::Blob;
#[cfg(not(target_arch = "wasm32"))]
pub type FileBlob = ();

/// Bytes that cross `postMessage` as a JS `Uint8Array` and stay one on the
/// page's side (never copied into its wasm memory): they travel beside the
/// response's encoded bytes, not in them.
#[cfg(target_arch = "wasm32")]
#[derive(Clone, Debug)]
pub struct JsBytes(pub js_sys::Uint8Array);

/// Outside the browser: the bytes themselves.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct JsBytes(pub Vec<u8>);

#[cfg(target_arch = "wasm32")]
impl Default for JsBytes {
    fn default() -> Self {
        JsBytes(js_sys::Uint8Array::new_with_length(0))
    }
}

#[cfg(target_arch = "wasm32")]
impl PartialEq for JsBytes {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_vec() == other.0.to_vec()
    }
}

/// Bytes in one piece of the recovered image.
pub const EXPORT_PIECE: u64 = 4 << 20;

/// A request's `Blob` fields in its bytes: nothing. They cross beside the
/// bytes ([`request_to_js`]); decoding puts an empty `Blob` in their place,
/// which [`request_from_js`] then replaces with the one that came.
#[cfg(target_arch = "wasm32")]
mod beside {
    pub fn serialize<S: serde::Serializer>(_: &web_sys::Blob, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<web_sys::Blob, D::Error> {
        <() as serde::Deserialize>::deserialize(d)?;
        web_sys::Blob::new().map_err(|_| serde::de::Error::custom("cannot make a Blob"))
    }
}

impl Request {
    /// The request's files, in the order they cross beside its bytes.
    #[cfg(target_arch = "wasm32")]
    fn blobs(&self) -> Vec<&FileBlob> {
        match self {
            Request::Open { blob, .. } | Request::AddLogDevice { blob, .. } => vec![blob],
            Request::OpenPair { first, second, .. } => vec![first, second],
            _ => Vec::new(),
        }
    }

    /// [`Request::blobs`], to put them back.
    #[cfg(target_arch = "wasm32")]
    fn blobs_mut(&mut self) -> Vec<&mut FileBlob> {
        match self {
            Request::Open { blob, .. } | Request::AddLogDevice { blob, .. } => vec![blob],
            Request::OpenPair { first, second, .. } => vec![first, second],
            _ => Vec::new(),
        }
    }
}

/// Encode a request for postMessage: a JS array of its bincode bytes (a
/// `Uint8Array`; fixed-size integers, so every u64 crosses intact) and its
/// files' `Blob`s.
#[cfg(target_arch = "wasm32")]
pub fn request_to_js(req: &Request) -> Result<js_sys::Array, String> {
    let bytes = bincode::serialize(req).map_err(|e| e.to_string())?;
    let msg = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes.as_slice()));
    for b in req.blobs() {
        msg.push(b);
    }
    Ok(msg)
}

/// Decode a message [`request_to_js`] made; anything else (another shape,
/// bytes that are not a request, a file missing) is refused with why.
#[cfg(target_arch = "wasm32")]
pub fn request_from_js(msg: &wasm_bindgen::JsValue) -> Result<Request, String> {
    use wasm_bindgen::JsCast;
    let parts: &js_sys::Array = msg.dyn_ref().ok_or("not an array")?;
    let bytes: js_sys::Uint8Array = parts.get(0).dyn_into().map_err(|_| "no bytes")?;
    let mut req: Request = bincode::deserialize(&bytes.to_vec()).map_err(|e| e.to_string())?;
    let want = req.blobs_mut().len();
    if parts.length() != u32::try_from(want).unwrap_or(u32::MAX).saturating_add(1) {
        return Err(format!(
            "{} parts for a request with {want} files",
            parts.length()
        ));
    }
    for (i, b) in (1u32..).zip(req.blobs_mut()) {
        *b = parts
            .get(i)
            .dyn_into()
            .map_err(|_| format!("part {i} is not a file"))?;
    }
    Ok(req)
}

/// The bytes of a response as it crosses postMessage (bincode: fixed-size
/// integers, so every u64 crosses intact).
pub fn response_bytes(resp: &Response) -> Result<Vec<u8>, String> {
    bincode::serialize(resp).map_err(|e| e.to_string())
}

/// A response from its bytes ([`response_bytes`]).
pub fn response_from_bytes(bytes: &[u8]) -> Result<Response, String> {
    bincode::deserialize(bytes).map_err(|e| e.to_string())
}

/// Encode a response for postMessage: a JS array of its bytes (a
/// `Uint8Array`, whose buffer `transfer` lists) and, for a piece of the
/// recovered image, the piece's own `Uint8Array`.
#[cfg(target_arch = "wasm32")]
pub fn encode_response(resp: &Response) -> Result<(js_sys::Array, js_sys::Array), String> {
    let bytes = js_sys::Uint8Array::from(response_bytes(resp)?.as_slice());
    let transfer = js_sys::Array::of1(&bytes.buffer());
    let msg = match resp {
        Response::ExportChunk { bytes: piece, .. } => js_sys::Array::of2(&bytes, &piece.0),
        _ => js_sys::Array::of1(&bytes),
    };
    Ok((msg, transfer))
}

/// Decode a message [`encode_response`] made.
#[cfg(target_arch = "wasm32")]
pub fn decode_response(msg: &wasm_bindgen::JsValue) -> Result<Response, String> {
    use wasm_bindgen::JsCast;
    let parts: &js_sys::Array = msg.dyn_ref().ok_or("not an array")?;
    let bytes: js_sys::Uint8Array = parts.get(0).dyn_into().map_err(|_| "no bytes")?;
    let mut resp = response_from_bytes(&bytes.to_vec())?;
    if let Response::ExportChunk { bytes: piece, .. } = &mut resp {
        *piece = JsBytes(parts.get(1).dyn_into().map_err(|_| "no piece")?);
    }
    Ok(resp)
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
    /// The image is a partitioned disk and which partition to open is not
    /// clear (several XFS partitions, or none): its table, and why.
    ChoosePartition(Box<ChoosePartition>),
    /// Opening failed; the message is for people.
    Error {
        name: String,
        message: String,
    },
    /// The answer to `Lookup`: the path's inode, or why it cannot be
    /// reached.
    Lookup {
        path: String,
        ino: Option<u64>,
        error: Option<String>,
    },
    /// The worker's memory after a request: the size of its wasm linear
    /// memory, where everything it holds lives (it only grows).
    Memory {
        wasm_bytes: u64,
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
        #[serde(with = "crate::xfs::bytes")]
        value: Vec<u8>,
    },
    /// A piece of a file being read; `last` marks the end. Every
    /// `ReadFile` ends with exactly one last piece; with `failed` the read
    /// stopped at an error (sent before it), and what came is not the file.
    FileChunk {
        ino: u64,
        offset: u64,
        #[serde(with = "crate::xfs::bytes")]
        bytes: Vec<u8>,
        last: bool,
        failed: bool,
    },
    /// A piece of the recovered image or log device (`ExportChunk`): the
    /// bytes from `offset`, of `total`; `last` marks the end. The bytes
    /// stay a JS `Uint8Array` (never copied into the page's wasm memory).
    ExportChunk {
        log_device: bool,
        offset: u64,
        total: u64,
        #[cfg_attr(target_arch = "wasm32", serde(skip))]
        bytes: JsBytes,
        last: bool,
    },
    Ags(Box<AgsView>),
    AgMap(Box<crate::xfs::agmap::AgMap>),
    Hex(Box<crate::xfs::hexmap::HexBlock>),
    AgRecords(Box<crate::xfs::agmap::RecordsPage>),
    /// The subdirectory names of `path` (sorted), or why they could not be read.
    TreeChildren {
        path: String,
        dirs: Vec<String>,
        error: Option<String>,
        #[serde(default)]
        metadir: bool,
    },
    Log(Box<LogView>),
    LogRows {
        start: u32,
        rows: Vec<TxRow>,
    },
    LogTransaction(Box<TxDetail>),
    Replay(Box<ReplayView>),
    ReplayDiff(Box<ReplayDiffView>),
    ReplayDiffRows(Box<DiffRowsView>),
    Ops(Box<OpsView>),
    OpsTimeline(Box<OpsTimelineView>),
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
    /// What holds the filesystem: qcow2 layers, the partition table, the
    /// partition opened.
    pub layout: Layout,
    /// The log is on an external device (`sb_logstart` 0).
    #[serde(default)]
    pub external_log: bool,
    /// The name of the file the external log is read from, once given.
    #[serde(default)]
    pub log_device: Option<String>,
    /// Why a second file given as the log device is not used.
    #[serde(default)]
    pub log_device_error: Option<String>,
}

/// A partitioned disk waiting for the user to pick a partition.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ChoosePartition {
    pub name: String,
    /// The file size in bytes.
    pub size: u64,
    pub layout: Layout,
    /// Why no partition was opened.
    pub message: String,
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
    /// The path is in the metadata directory tree, not the files'.
    #[serde(default)]
    pub metadir: bool,
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
    #[serde(with = "crate::xfs::bytes")]
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

/// One parent pointer as the core reads it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ParentView {
    pub name: String,
    /// The directory's inode (none when the value is not a parent record).
    pub parent: Option<u64>,
    pub gen: u32,
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
    /// Parent pointers (filesystems with the parent pointer feature): each
    /// name this inode has and the directory holding it.
    #[serde(default)]
    pub parents: Vec<ParentView>,
    /// The sector the inode starts in (its bytes in the hex view).
    #[serde(default)]
    pub daddr: u64,
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
    /// The log is on an external device: `start_daddr` counts on it.
    #[serde(default)]
    pub external: bool,
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
    /// A buffer item's daddr (to open its bytes).
    #[serde(default)]
    pub daddr: Option<u64>,
    /// An inode item's inode.
    #[serde(default)]
    pub ino: Option<u64>,
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
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct ReplayView {
    pub on: bool,
    pub summary: Vec<Kv>,
    /// Notes and warnings of the replay (unfinished intents, torn writes...).
    pub notes: Vec<String>,
    pub error: Option<String>,
    /// The superblock after replay and the mount-time changes, and the
    /// names of the fields whose values differ from the superblock on disk.
    pub superblock: Option<SuperblockView>,
    pub sb_changed: Vec<String>,
}

/// What replay changed, in numbers.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ReplayDiffView {
    /// Counts by section and change: (section, change, count).
    pub counts: Vec<(DiffSection, String, u64)>,
    /// Directory entries added and removed (the paths follow from them).
    pub entries_added: u64,
    pub entries_removed: u64,
    pub sectors: u64,
    /// Block ranges by what they hold: (kind, ranges, sectors).
    pub block_kinds: Vec<(String, u64, u64)>,
    /// More inodes changed than were compared.
    pub truncated: bool,
    pub problems: Vec<String>,
    /// The replay's notes: intents left unfinished, inodes left on
    /// unlinked lists, warnings.
    pub notes: Vec<String>,
    /// Milliseconds the comparison took (replay not included).
    pub diff_ms: f64,
}

impl ReplayDiffView {
    /// Rows of `section` whose change is `change` (all when empty).
    pub fn count(&self, section: DiffSection, change: &str) -> u64 {
        self.counts
            .iter()
            .filter(|(s, c, _)| *s == section && (change.is_empty() || c == change))
            .map(|(_, _, n)| *n)
            .sum()
    }
}

/// A page of rows of one part of what replay changed.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct DiffRowsView {
    pub section: DiffSection,
    pub filter: String,
    pub start: u32,
    /// Rows that pass the filter.
    pub total: u64,
    pub rows: Vec<DiffRow>,
}

/// One row: a path, an inode, an xattr or a range of blocks.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct DiffRow {
    /// added, removed, created, changed, freed (empty for blocks).
    pub change: String,
    /// The inode (0 for blocks).
    pub ino: u64,
    /// The path (paths), the xattr name (xattrs), what the blocks hold
    /// (blocks), the file type (inodes).
    pub text: String,
    /// Inodes: the changed core fields, (field, on disk, after replay).
    pub fields: Vec<(String, String, String)>,
    /// Blocks: the first sector and how many.
    pub daddr: u64,
    pub sectors: u64,
}

/// One operation kind's totals.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct OpKindRow {
    pub kind: String,
    pub operations: u64,
    pub transactions: u64,
    /// Log items and bytes about its inodes.
    pub items: u64,
    pub bytes: u64,
}

/// Checkpoints `first..=last` of the log, summed (one bar of the chart).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CheckpointBar {
    pub first: u32,
    pub last: u32,
    pub items: u64,
    pub bytes: u64,
    pub operations: u64,
    /// Items by item type, as indices into [`OpsView::item_types`].
    pub items_by_type: Vec<(u32, u64)>,
}

/// Items and bytes of one log item type over the whole log.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ItemTypeRow {
    pub name: String,
    pub items: u64,
    pub bytes: u64,
}

/// Where attribute forks start over every inode in use (`di_forkoff`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ForkoffView {
    /// Inodes in use that were read.
    pub inodes: u64,
    pub with_attr_fork: u64,
    /// forkoff and inodes.
    pub by_value: Vec<(u8, u64)>,
    /// File type, then forkoff and inodes.
    pub by_type: Vec<(String, Vec<(u8, u64)>)>,
    /// Reading (how the fork most likely came to be), inodes, a few examples.
    pub by_reading: Vec<(String, u64, Vec<u64>)>,
    pub default_forkoff: u8,
    pub max_forkoff: u8,
    pub unreadable_count: u64,
    /// A few inodes in use that could not be read, and why.
    pub unreadable: Vec<(u64, String)>,
    pub crc_mismatch: u64,
    pub problems: Vec<String>,
    /// Milliseconds the walk over the inodes took.
    pub ms: f64,
}

/// The operations a log carries, in numbers (the operations themselves
/// come by pages with `OpsTimeline`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct OpsView {
    /// The analysis failed (the forkoff distributions may still be there).
    pub error: Option<String>,
    pub clean: bool,
    /// checkpoints (delayed logging), typed (each transaction names its
    /// type) or mixed.
    pub log_form: String,
    /// The kinds with operations or transactions, in the core's order.
    pub kinds: Vec<OpKindRow>,
    /// Typed transactions of no operation kind, by type name.
    pub other_transactions: Vec<(String, u64)>,
    pub unexplained_transactions: u64,
    pub checkpoints: u32,
    /// Operations found in all (the timeline lists at most the core's limit).
    pub operations: u64,
    pub items: u64,
    pub bytes: u64,
    /// Items per checkpoint, in at most [`MAX_CHECKPOINT_BARS`] bars.
    pub checkpoint_bars: Vec<CheckpointBar>,
    /// Every item type, most bytes first.
    pub item_types: Vec<ItemTypeRow>,
    pub notes: Vec<String>,
    /// Milliseconds the analysis took.
    pub analyze_ms: f64,
    /// The forkoff distribution on disk.
    pub forkoff: Option<ForkoffView>,
    /// ... and after replay, when views show the replayed state.
    pub forkoff_replayed: Option<ForkoffView>,
}

/// Bars of the items-per-checkpoint chart at most (checkpoints are summed
/// into bars beyond that).
pub const MAX_CHECKPOINT_BARS: usize = 200;

/// One operation of the timeline.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct OpRow {
    /// Index in the log's operation list.
    pub index: u32,
    pub kind: String,
    pub ino: u64,
    pub dir: Option<u64>,
    pub name: Option<String>,
    pub to_dir: Option<u64>,
    pub to_name: Option<String>,
    /// Its path when it ran, where it went (renames), every path of an
    /// inode with several links (see `xfs::ops::paths`).
    pub path: Option<String>,
    pub to_path: Option<String>,
    pub links: Vec<String>,
    pub transactions: u64,
    pub items: u64,
    pub bytes: u64,
    /// How the transactions were counted, and anything uncertain.
    pub why: Vec<String>,
    /// Checkpoints after this one that carried its follow-up work.
    pub later_checkpoints: Vec<u32>,
    /// The inode and the directory were in use before the log (so the
    /// view of the disk shows them); `None`: not known.
    pub ino_on_disk: Option<bool>,
    pub dir_on_disk: Option<bool>,
}

/// One checkpoint (or typed transaction) of the timeline.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CheckpointRow {
    pub index: u32,
    pub tid: u32,
    pub lsn: String,
    /// The transaction type's name, for typed transactions.
    pub type_name: Option<String>,
    pub items: u64,
    pub bytes: u64,
    pub inodes: u64,
    /// Items about no operation's inode (AG headers, btree blocks, intents).
    pub shared_items: u64,
    pub shared_bytes: u64,
    /// Operations by kind over the whole checkpoint.
    pub kinds: Vec<(String, u64)>,
    /// Operations in the checkpoint, and where this page's start.
    pub operations_total: u32,
    pub first_operation: u32,
    pub operations: Vec<OpRow>,
    /// Transactions on inodes that no operation explains: inode, count, why.
    pub unexplained: Vec<(u64, u64, String)>,
}

/// A page of the operations timeline.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct OpsTimelineView {
    pub start: u32,
    pub skip: u32,
    /// Checkpoints in the log.
    pub total: u32,
    pub checkpoints: Vec<CheckpointRow>,
    /// Where the previous and the next page start: (checkpoint, skip).
    pub prev: Option<(u32, u32)>,
    pub next: Option<(u32, u32)>,
    /// The analysis failed (the view shows why).
    pub error: Option<String>,
}

/// Said after the dropped file's name when its log device is the one a
/// metadump holds (`xfs_metadump -v 2 -l`), not a second file.
pub const METADUMP_LOG: &str = " (the log device the metadump holds)";

/// The `read-ahead` choice in a page's or worker's query string
/// (`?read-ahead=always` or `never`; `None`: the worker decides by the
/// machine, src/web/worker/read_ahead.rs). The page passes it on to the
/// worker in the worker's address.
pub fn read_ahead_choice(search: &str) -> Option<bool> {
    search
        .trim_start_matches('?')
        .split('&')
        .find_map(|kv| kv.strip_prefix("read-ahead="))
        .and_then(|v| match v {
            "always" => Some(true),
            "never" => Some(false),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::read_ahead_choice;

    #[test]
    fn the_read_ahead_choice_is_read_from_anywhere_in_the_query() {
        assert_eq!(read_ahead_choice("?read-ahead=always"), Some(true));
        assert_eq!(
            read_ahead_choice("?caps=tree:4&read-ahead=never"),
            Some(false)
        );
        assert_eq!(read_ahead_choice("read-ahead=never&x=1"), Some(false));
        assert_eq!(read_ahead_choice("?read-ahead=maybe"), None);
        assert_eq!(read_ahead_choice("?no-read-ahead=always"), None);
        assert_eq!(read_ahead_choice(""), None);
    }
}
