//! What the page keeps of what the user browsed, and its caps: the
//! directory listings of the sidebar trees, xattr values, rows of the
//! log's transaction list. Each view the page shows is one answer of the
//! worker and replaced by the next; these are the stores that would grow
//! with browsing. Plain Rust, tested natively.

use crate::web::page::lru::{Cap, Lru};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

/// Directories of one sidebar tree whose subdirectories are kept.
pub const TREE_DIRS_CAP: usize = 256;
/// Bytes of subdirectory names one sidebar tree keeps.
pub const TREE_NAME_BYTES_CAP: u64 = 16 << 20;
/// Subdirectory names kept of one directory (the tree shows as many and
/// counts the rest).
pub const TREE_NAMES_KEPT: usize = 2000;
/// xattr values kept (each at most 64 KiB, XATTR_SIZE_MAX).
pub const XATTR_VALUES_CAP: usize = 128;
/// Bytes of xattr values kept.
pub const XATTR_VALUE_BYTES_CAP: u64 = 4 << 20;
/// Rows of the log's transaction list kept (the list asks for the rows in
/// view again when they went).
pub const LOG_ROWS_CAP: usize = 10_000;
/// Levels of a tree shown (deeper directories are not drawn).
pub const TREE_DEPTH_SHOWN: usize = 64;
/// Bytes a kept name costs besides its own (its `String`).
const NAME_OVERHEAD: u64 = 24;

/// The caps of the page's stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageCaps {
    pub tree: Cap,
    pub xattrs: Cap,
    pub log_rows: usize,
}

impl Default for PageCaps {
    fn default() -> Self {
        PageCaps {
            tree: Cap {
                entries: TREE_DIRS_CAP,
                bytes: TREE_NAME_BYTES_CAP,
            },
            xattrs: Cap {
                entries: XATTR_VALUES_CAP,
                bytes: XATTR_VALUE_BYTES_CAP,
            },
            log_rows: LOG_ROWS_CAP,
        }
    }
}

impl PageCaps {
    /// The caps from the page's query string: `?caps=tree:8,xattrs:4,log-rows:600`
    /// lowers the entry caps (to see them work on small images); a value
    /// can only lower a cap, and what is not understood is left out.
    pub fn from_query(query: &str) -> PageCaps {
        let mut caps = PageCaps::default();
        let q = query.strip_prefix('?').unwrap_or(query);
        let Some(list) = q.split('&').find_map(|kv| kv.strip_prefix("caps=")) else {
            return caps;
        };
        for item in list.split(',') {
            let Some((name, n)) = item.split_once(':') else {
                continue;
            };
            let Ok(n) = n.trim().parse::<usize>() else {
                continue;
            };
            let n = n.max(1);
            match name.trim() {
                "tree" => caps.tree.entries = caps.tree.entries.min(n),
                "xattrs" => caps.xattrs.entries = caps.xattrs.entries.min(n),
                "log-rows" => caps.log_rows = caps.log_rows.min(n),
                _ => {}
            }
        }
        caps
    }
}

/// The subdirectory names of one directory: the first
/// [`TREE_NAMES_KEPT`], and how many there are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subdirs {
    pub names: Vec<String>,
    pub total: usize,
}

impl Subdirs {
    pub fn new(mut names: Vec<String>) -> Subdirs {
        let total = names.len();
        names.truncate(TREE_NAMES_KEPT);
        names.shrink_to_fit();
        Subdirs { names, total }
    }

    fn bytes(&self) -> u64 {
        self.names
            .iter()
            .map(|n| u64::try_from(n.len()).unwrap_or(u64::MAX))
            .fold(0u64, |a, b| {
                a.saturating_add(b).saturating_add(NAME_OVERHEAD)
            })
    }
}

/// What a directory of the tree holds: its subdirectories, or why they
/// could not be read.
pub type Listing = Rc<Result<Subdirs, String>>;

/// Every ancestor of `path`, "/" first, `path` itself last.
pub fn ancestors(path: &str) -> Vec<String> {
    let mut out = vec!["/".to_string()];
    let mut acc = String::new();
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        acc.push('/');
        acc.push_str(seg);
        out.push(acc.clone());
    }
    out
}

/// A sidebar tree: the listings read (least recently used go at the cap),
/// the directories open, the directory shown.
#[derive(Clone, Debug, PartialEq)]
pub struct DirTree {
    listings: Lru<String, Listing>,
    open: BTreeSet<String>,
    /// The directory in the main view, whose ancestors stay open and read.
    current: Option<String>,
}

impl DirTree {
    pub fn new(cap: Cap) -> DirTree {
        DirTree {
            listings: Lru::new(cap),
            open: BTreeSet::from(["/".to_string()]),
            current: None,
        }
    }

    pub fn listing(&self, path: &str) -> Option<&Listing> {
        self.listings.get(&path.to_string())
    }

    pub fn is_open(&self, path: &str) -> bool {
        self.open.contains(path)
    }

    /// Directories whose listings are kept, and their bytes.
    pub fn len(&self) -> usize {
        self.listings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.listings.is_empty()
    }

    pub fn bytes(&self) -> u64 {
        self.listings.bytes()
    }

    pub fn cap(&self) -> Cap {
        self.listings.cap()
    }

    pub fn current(&self) -> Option<&str> {
        self.current.as_deref()
    }

    /// Open or close one directory.
    pub fn toggle(&mut self, path: &str) {
        if !self.open.remove(path) {
            self.open.insert(path.to_string());
        }
    }

    /// The main view shows directory `path`: its ancestors open, their
    /// listings used now.
    pub fn show(&mut self, path: &str) {
        for a in ancestors(path).into_iter().take(TREE_DEPTH_SHOWN + 1) {
            self.listings.touch(&a);
            self.open.insert(a);
        }
        self.current = Some(path.to_string());
    }

    /// The subdirectories of `path` arrived. At the cap the listings used
    /// least recently go, never those of the shown directory's ancestors;
    /// a directory whose listing went is closed (it is read again when
    /// opened).
    pub fn loaded(&mut self, path: String, listing: Result<Vec<String>, String>) {
        let listing = listing.map(Subdirs::new);
        let bytes = match &listing {
            Ok(s) => s.bytes(),
            Err(e) => u64::try_from(e.len()).unwrap_or(u64::MAX),
        };
        // Inserted, not collected: collecting sorts, another copy of the
        // sort in the wasm.
        let mut keep: BTreeSet<String> = BTreeSet::new();
        if let Some(c) = self.current.as_deref() {
            keep.extend(ancestors(c).into_iter().take(TREE_DEPTH_SHOWN + 1));
        }
        let gone = self
            .listings
            .put(path, Rc::new(listing), bytes, |k| keep.contains(k));
        for g in gone {
            self.open.remove(&g);
        }
    }

    /// The open directories the tree draws whose listings are not here
    /// (to ask the worker for), shallowest first.
    pub fn wanted(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.walk("/", 0, &mut out);
        out
    }

    fn walk(&self, path: &str, depth: usize, out: &mut Vec<String>) {
        if !self.open.contains(path) || depth >= TREE_DEPTH_SHOWN {
            return;
        }
        match self.listing(path).map(|l| &**l) {
            None => out.push(path.to_string()),
            Some(Ok(s)) => {
                for n in &s.names {
                    self.walk(&crate::web::page::caches::join(path, n), depth + 1, out);
                }
            }
            Some(Err(_)) => {}
        }
    }
}

/// Join a directory path and an entry name.
pub fn join(dir: &str, name: &str) -> String {
    if dir == "/" || dir.is_empty() {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// Keep at most `cap` rows, letting those farthest from the rows `near`
/// go (the rows arrived last, which are those in view).
pub fn trim_rows<V>(rows: &mut BTreeMap<u32, V>, cap: usize, near: std::ops::Range<u32>) {
    let away = |k: u32| {
        if k < near.start {
            near.start - k
        } else {
            k.saturating_sub(near.end.saturating_sub(1))
        }
    };
    while rows.len() > cap {
        let (Some((&first, _)), Some((&last, _))) = (rows.first_key_value(), rows.last_key_value())
        else {
            return;
        };
        if away(first) > away(last) {
            rows.remove(&first);
        } else {
            rows.remove(&last);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("d{i}")).collect()
    }

    #[test]
    fn caps_from_the_query_only_lower() {
        let d = PageCaps::default();
        assert_eq!(PageCaps::from_query(""), d);
        assert_eq!(PageCaps::from_query("?x=1"), d);
        let c = PageCaps::from_query("?a=b&caps=tree:8,xattrs:3,log-rows:600,bogus:1,tree2");
        assert_eq!(c.tree.entries, 8);
        assert_eq!(c.tree.bytes, TREE_NAME_BYTES_CAP);
        assert_eq!(c.xattrs.entries, 3);
        assert_eq!(c.log_rows, 600);
        let up = PageCaps::from_query("caps=tree:100000000,log-rows:0");
        assert_eq!(up.tree.entries, TREE_DIRS_CAP);
        assert_eq!(up.log_rows, 1);
    }

    #[test]
    fn a_huge_directory_keeps_the_names_shown_and_counts_the_rest() {
        let s = Subdirs::new(names(TREE_NAMES_KEPT + 5));
        assert_eq!(s.names.len(), TREE_NAMES_KEPT);
        assert_eq!(s.total, TREE_NAMES_KEPT + 5);
        assert_eq!(s.names[0], "d0");
    }

    #[test]
    fn browsing_more_directories_than_the_cap_keeps_the_tree_under_it() {
        let cap = Cap {
            entries: 4,
            bytes: 1 << 20,
        };
        let mut t = DirTree::new(cap);
        t.show("/a/b");
        assert_eq!(t.wanted(), ["/"]);
        t.loaded("/".into(), Ok(vec!["a".into(), "x".into(), "y".into()]));
        assert_eq!(t.wanted(), ["/a"]);
        t.loaded("/a".into(), Ok(vec!["b".into()]));
        t.loaded("/a/b".into(), Ok(vec![]));
        assert!(t.wanted().is_empty());
        // The user opens /x and /y, then /x/1 .. /x/5 (each opened then read).
        t.toggle("/x");
        assert_eq!(t.wanted(), ["/x"]);
        t.loaded("/x".into(), Ok(names(5)));
        assert_eq!(t.len(), 4);
        t.toggle("/y");
        t.loaded("/y".into(), Ok(vec![]));
        // /x went (the oldest not an ancestor of /a/b) and is closed.
        assert_eq!(t.len(), 4);
        assert!(t.listing("/x").is_none());
        assert!(!t.is_open("/x"));
        for a in ["/", "/a", "/a/b", "/y"] {
            assert!(t.listing(a).is_some(), "{a}");
        }
        assert!(t.wanted().is_empty());
        // Opening /x again reads it again.
        t.toggle("/x");
        assert_eq!(t.wanted(), ["/x"]);
        for i in 0..20 {
            let p = format!("/x/d{}", i % 5);
            if !t.is_open(&p) {
                t.toggle(&p);
            }
            t.loaded(p, Ok(vec![]));
            assert!(t.len() <= 4);
            // The shown directory's ancestors stay read.
            for a in ["/", "/a", "/a/b"] {
                assert!(t.listing(a).is_some(), "{a}");
            }
        }
    }

    #[test]
    fn the_byte_cap_lets_listings_go() {
        let cap = Cap {
            entries: 100,
            bytes: 3 * (NAME_OVERHEAD + 2) * 10,
        };
        let mut t = DirTree::new(cap);
        t.show("/");
        t.loaded("/".into(), Ok(names(10)));
        for i in 0..10 {
            t.toggle(&format!("/d{i}"));
            t.loaded(format!("/d{i}"), Ok(names(10)));
            assert!(t.bytes() <= cap.bytes, "{}", t.bytes());
        }
        // The root and the two read last are kept.
        assert_eq!(t.len(), 3);
        assert!(t.listing("/").is_some() && t.listing("/d9").is_some());
    }

    #[test]
    fn rows_farthest_from_the_ones_that_arrived_last_go() {
        let mut rows: BTreeMap<u32, u32> = (0..10).map(|i| (i, i)).collect();
        trim_rows(&mut rows, 6, 2..4);
        assert_eq!(rows.keys().copied().collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5]);
        rows.extend((100..104).map(|i| (i, i)));
        trim_rows(&mut rows, 6, 100..104);
        assert_eq!(
            rows.keys().copied().collect::<Vec<_>>(),
            [4, 5, 100, 101, 102, 103]
        );
        // Pages of 200 with room for 300: the page that arrived stays whole.
        let mut rows: BTreeMap<u32, u32> = BTreeMap::new();
        for start in (0..2000).step_by(200) {
            rows.extend((start..start + 200).map(|i| (i, i)));
            trim_rows(&mut rows, 300, start..start + 200);
            assert_eq!(rows.len(), 300.min(usize::try_from(start).unwrap() + 200));
            assert!(
                (start..start + 200).all(|i| rows.contains_key(&i)),
                "{start}"
            );
        }
        // More rows arrived than the cap: the first of them stay.
        let mut rows: BTreeMap<u32, u32> = (0..50).map(|i| (i, i)).collect();
        trim_rows(&mut rows, 10, 0..50);
        assert_eq!(
            rows.keys().copied().collect::<Vec<_>>(),
            (0..10).collect::<Vec<_>>()
        );
        trim_rows(&mut rows, 0, 0..0);
        assert!(rows.is_empty());
    }
}
