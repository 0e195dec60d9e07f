//! Deep links in the location hash: `#/path/<path>` opens a directory or a
//! file, `#/metadir/<path>` one of the metadata directory tree (`-m
//! metadir=1`: realtime groups, quota files), `#/inode/<ino>` an inode, `#/ag` the allocation groups, `#/ag/<agno>`
//! one AG's map, `#/hex/<daddr>` the bytes of a sector or block, `#/` the
//! superblock, `#/replay[/<part>[/<change>[/<first row>]]]` what replay
//! changed. Back and forward work because every view change is a hash
//! change.

use crate::web::protocol::DiffSection;

/// Records of an AG btree asked for at once.
pub const AG_RECORDS_PAGE: u64 = 200;
/// Rows of what replay changed asked for at once.
pub const DIFF_ROWS_PAGE: u32 = 500;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    Superblock,
    /// An absolute path ("/" for the root).
    Path(String),
    /// An absolute path in the metadata directory tree ("/" for its root,
    /// `sb_metadirino`).
    Metadir(String),
    Inode(u64),
    Ags,
    /// The map of one allocation group.
    AgMap(u32),
    /// The leaf records of one AG btree, from record `start`.
    AgTree {
        agno: u32,
        tree: String,
        start: u64,
    },
    /// The bytes of one sector or block, with the fields of what is there.
    Hex(u64),
    /// The same on the external log device.
    LogHex(u64),
    /// The log, with a transaction selected or not.
    Log(Option<u32>),
    /// What replay changed: one part, its rows whose change is `filter`
    /// (all when empty), from row `start`.
    Replay {
        section: DiffSection,
        filter: String,
        start: u32,
    },
    /// The operations the log carries, the timeline from checkpoint
    /// `start` (its first `skip` operations left out).
    Ops {
        start: u32,
        skip: u32,
    },
    /// A hash this page does not know.
    Unknown(String),
}

#[cfg(target_arch = "wasm32")]
fn decode(seg: &str) -> String {
    js_sys::decode_uri_component(seg)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_else(|| seg.to_string())
}

#[cfg(target_arch = "wasm32")]
fn encode(seg: &str) -> String {
    String::from(js_sys::encode_uri_component(seg))
}

/// Outside the browser (the native tests), `decodeURIComponent`'s rule:
/// `%XX` escapes of UTF-8; anything malformed leaves the segment as it is.
#[cfg(not(target_arch = "wasm32"))]
fn decode(seg: &str) -> String {
    let b = seg.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c == b'%' {
            let hex = b
                .get(i.saturating_add(1)..i.saturating_add(3))
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(v) => {
                    out.push(v);
                    i = i.saturating_add(3);
                }
                None => return seg.to_string(),
            }
        } else {
            out.push(c);
            i = i.saturating_add(1);
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| seg.to_string())
}

/// Outside the browser, `encodeURIComponent`'s rule: every byte of the
/// UTF-8 escaped but letters, digits and `-_.!~*'()`.
#[cfg(not(target_arch = "wasm32"))]
fn encode(seg: &str) -> String {
    let mut out = String::with_capacity(seg.len());
    for &c in seg.as_bytes() {
        if c.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&c) {
            out.push(char::from(c));
        } else {
            out.push_str(&format!("%{c:02X}"));
        }
    }
    out
}

/// An absolute path from the encoded segments of a hash.
fn path_of(rest: &str) -> String {
    let parts: Vec<String> = rest
        .split('/')
        .filter(|s| !s.is_empty())
        .map(decode)
        .collect();
    format!("/{}", parts.join("/"))
}

/// A path's segments encoded for a hash, joined by '/'.
fn segments(p: &str) -> String {
    let segs: Vec<String> = p.split('/').filter(|s| !s.is_empty()).map(encode).collect();
    segs.join("/")
}

impl Route {
    /// Parse `location.hash` (with or without the leading `#`).
    pub fn parse(hash: &str) -> Route {
        let h = hash.strip_prefix('#').unwrap_or(hash);
        let h = h.strip_prefix('/').unwrap_or(h);
        if h.is_empty() {
            return Route::Superblock;
        }
        if h == "ag" {
            return Route::Ags;
        }
        if let Some(n) = h.strip_prefix("ag/") {
            let mut parts = n.split('/');
            let agno = parts.next().and_then(|a| a.trim().parse().ok());
            let tree = parts.next().filter(|t| !t.is_empty());
            let start = parts
                .next()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0);
            match (agno, tree) {
                (Some(agno), None) => return Route::AgMap(agno),
                (Some(agno), Some(t)) if crate::xfs::ag::btree::AgTree::from_name(t).is_some() => {
                    return Route::AgTree {
                        agno,
                        tree: t.to_string(),
                        start,
                    }
                }
                _ => {}
            }
        }
        if let Some(n) = h.strip_prefix("hex/log/") {
            if let Ok(daddr) = n.trim().parse() {
                return Route::LogHex(daddr);
            }
        }
        if let Some(n) = h.strip_prefix("hex/") {
            if let Ok(daddr) = n.trim().parse() {
                return Route::Hex(daddr);
            }
        }
        if h == "log" {
            return Route::Log(None);
        }
        if let Some(n) = h.strip_prefix("log/") {
            if let Ok(i) = n.trim().parse() {
                return Route::Log(Some(i));
            }
        }
        if h == "ops" || h.starts_with("ops/") {
            let mut parts = h.split('/').skip(1).map(|n| n.trim().parse().ok());
            let start = parts.next().flatten().unwrap_or(0);
            let skip = parts.next().flatten().unwrap_or(0);
            return Route::Ops { start, skip };
        }
        if h == "replay" || h.starts_with("replay/") {
            let mut parts = h.split('/').skip(1).filter(|s| !s.is_empty());
            let section = parts
                .next()
                .and_then(DiffSection::from_name)
                .unwrap_or(DiffSection::Paths);
            let filter = parts
                .next()
                .filter(|f| section.changes().contains(f))
                .unwrap_or("")
                .to_string();
            let start = parts.next().and_then(|n| n.parse().ok()).unwrap_or(0);
            return Route::Replay {
                section,
                filter,
                start,
            };
        }
        if h == "path" {
            return Route::Path("/".into());
        }
        if let Some(rest) = h.strip_prefix("path/") {
            return Route::Path(path_of(rest));
        }
        if h == "metadir" {
            return Route::Metadir("/".into());
        }
        if let Some(rest) = h.strip_prefix("metadir/") {
            return Route::Metadir(path_of(rest));
        }
        if let Some(n) = h.strip_prefix("inode/") {
            if let Ok(ino) = n.trim().parse() {
                return Route::Inode(ino);
            }
        }
        Route::Unknown(h.to_string())
    }

    /// The hash that leads here.
    pub fn href(&self) -> String {
        match self {
            Route::Superblock => "#/".into(),
            Route::Ags => "#/ag".into(),
            Route::AgMap(agno) => format!("#/ag/{agno}"),
            Route::AgTree { agno, tree, start } => format!("#/ag/{agno}/{tree}/{start}"),
            Route::Hex(daddr) => format!("#/hex/{daddr}"),
            Route::LogHex(daddr) => format!("#/hex/log/{daddr}"),
            Route::Log(None) => "#/log".into(),
            Route::Log(Some(i)) => format!("#/log/{i}"),
            Route::Replay {
                section,
                filter,
                start,
            } => {
                let f = if filter.is_empty() { "all" } else { filter };
                format!("#/replay/{}/{f}/{start}", section.name())
            }
            Route::Ops { start: 0, skip: 0 } => "#/ops".into(),
            Route::Ops { start, skip: 0 } => format!("#/ops/{start}"),
            Route::Ops { start, skip } => format!("#/ops/{start}/{skip}"),
            Route::Inode(ino) => format!("#/inode/{ino}"),
            Route::Path(p) => format!("#/path/{}", segments(p)),
            Route::Metadir(p) => format!("#/metadir/{}", segments(p)),
            Route::Unknown(h) => format!("#/{h}"),
        }
    }
}

/// The current route from the page's location.
#[cfg(target_arch = "wasm32")]
pub fn current() -> Route {
    web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .map(|h| Route::parse(&h))
        .unwrap_or(Route::Superblock)
}

pub use crate::web::page::caches::join;

/// The parent of a path ("/" stays "/").
pub fn parent(path: &str) -> String {
    match path.trim_end_matches('/').rsplit_once('/') {
        Some(("", _)) | None => "/".into(),
        Some((p, _)) => p.to_string(),
    }
}

/// What the page asks the worker for to show `route`: the progress text
/// shown while it works, and the requests in the order they are sent.
/// `None` for a route that needs nothing (the superblock is already there).
pub fn requests_for(route: &Route) -> Option<(String, Vec<crate::web::protocol::Request>)> {
    use crate::web::protocol::Request;
    let one = |what: String, r: Request| Some((what, vec![r]));
    match route {
        Route::Path(p) => one(format!("reading {p}"), Request::Path { path: p.clone() }),
        Route::Metadir(p) => one(
            format!("reading metadata directory {p}"),
            Request::MetadirPath { path: p.clone() },
        ),
        Route::Inode(ino) => one(format!("reading inode {ino}"), Request::Inode { ino: *ino }),
        Route::Ags => one("reading the allocation groups".into(), Request::Ags),
        Route::AgMap(agno) => one(format!("mapping AG {agno}"), Request::AgMap { agno: *agno }),
        Route::AgTree { agno, tree, start } => one(
            format!("reading the {tree} records of AG {agno}"),
            Request::AgRecords {
                agno: *agno,
                tree: tree.clone(),
                start: *start,
                count: AG_RECORDS_PAGE,
            },
        ),
        Route::Hex(daddr) => one(
            format!("reading daddr {daddr}"),
            Request::Hex { daddr: *daddr },
        ),
        Route::LogHex(daddr) => one(
            format!("reading daddr {daddr} of the log device"),
            Request::LogHex { daddr: *daddr },
        ),
        Route::Log(sel) => Some((
            "finding and decoding the log".into(),
            sel.map(|index| Request::LogTransaction { index })
                .into_iter()
                .chain([Request::Log])
                .collect(),
        )),
        Route::Replay {
            section,
            filter,
            start,
        } => Some((
            "what replay changed".into(),
            vec![
                Request::ReplayDiff,
                Request::ReplayDiffRows {
                    section: *section,
                    filter: filter.clone(),
                    start: *start,
                    count: DIFF_ROWS_PAGE,
                },
            ],
        )),
        Route::Ops { start, skip } => Some((
            "reconstructing the operations of the log".into(),
            vec![
                Request::Ops,
                Request::OpsTimeline {
                    start: *start,
                    skip: *skip,
                },
            ],
        )),
        Route::Superblock | Route::Unknown(_) => None,
    }
}
