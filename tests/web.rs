//! The core in a real browser worker: a `Blob` read lazily through
//! `FileReaderSync` (which exists only in workers), the block cache, and the
//! superblock parser, against xfs_db's view of the same kernel-made image.
//! Run with `cargo test --target wasm32-unknown-unknown --test web`.
#![cfg(target_arch = "wasm32")]

use std::io::Read;
use wasm_bindgen_test::*;
use xfs_explorer::web::worker::blob_reader::BlobReader;
use xfs_explorer::xfs::image::Image;
use xfs_explorer::xfs::sb::read_superblock;
use xfs_explorer::xfs::ReadAt;

wasm_bindgen_test_configure!(run_in_dedicated_worker);

const IMAGE_ZST: &[u8] = include_bytes!("fixtures/v5-sect4k.img.zst");
const XFS_DB: &str = include_str!("fixtures/v5-sect4k.sb.txt");

/// The first `n` bytes of the fixture image.
fn image_head(n: usize) -> Vec<u8> {
    let mut dec = ruzstd::decoding::StreamingDecoder::new(IMAGE_ZST).unwrap();
    let mut out = vec![0u8; n];
    dec.read_exact(&mut out).unwrap();
    out
}

fn blob_of(bytes: &[u8]) -> web_sys::Blob {
    let arr = js_sys::Uint8Array::from(bytes);
    let parts = js_sys::Array::of1(&arr);
    web_sys::Blob::new_with_u8_array_sequence(&parts).unwrap()
}

fn xfs_db(field: &str) -> String {
    XFS_DB
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field} = ")))
        .unwrap()
        .to_string()
}

fn num(v: &str) -> u64 {
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => v.parse().unwrap(),
    }
}

#[wasm_bindgen_test]
fn blob_reader_reads_exact_ranges() {
    let head = image_head(1 << 20);
    let reader = BlobReader::new(blob_of(&head)).unwrap();
    assert_eq!(reader.len(), 1 << 20);
    let mut buf = vec![0u8; 5000];
    reader.read_exact_at(123_456, &mut buf).unwrap();
    assert_eq!(buf, head[123_456..128_456]);
}

#[wasm_bindgen_test]
fn blob_reader_reads_ahead_without_changing_what_it_reads() {
    // Reads that continue one another (overlapping windows, as the log's
    // are, then back-to-back ones) are served from bytes read ahead; every
    // read must still return exactly the file's bytes at its offset,
    // including across the end of what was read ahead, back at the start,
    // and at the end of the file.
    let len: usize = 20 << 20;
    let head = image_head(len);
    let reader = BlobReader::new(blob_of(&head)).unwrap();
    let mut reads: Vec<(usize, usize)> = Vec::new();
    let mut at = 4096;
    while at + (300 << 10) <= len {
        reads.push((at, 300 << 10));
        at += 200 << 10;
    }
    reads.push((0, 4096));
    let mut at = 1 << 20;
    for _ in 0..40 {
        reads.push((at, 64 << 10));
        at += 64 << 10;
    }
    // Windows with scattered small reads in between (as replay reads
    // metadata between the log's windows).
    for i in 0..30 {
        reads.push(((6 << 20) + i * (200 << 10), 300 << 10));
        reads.push(((i * 7 * 4096 + 512) % (len - 4096), 4096));
    }
    reads.push((len - (100 << 10), 100 << 10));
    reads.push((512, 70_000));
    for (off, n) in reads {
        let mut buf = vec![0u8; n];
        reader.read_exact_at(off as u64, &mut buf).unwrap();
        assert!(buf == head[off..off + n], "read of {n} bytes at {off}");
    }
}

#[wasm_bindgen_test]
fn superblock_in_a_worker_equals_xfs_db() {
    let head = image_head(1 << 20);
    let img = Image::with_cache(BlobReader::new(blob_of(&head)).unwrap(), 1 << 20, 4);
    let sb = read_superblock(&img).unwrap();
    assert_eq!(u64::from(sb.blocksize), num(&xfs_db("blocksize")));
    assert_eq!(u64::from(sb.sectsize), num(&xfs_db("sectsize")));
    assert_eq!(sb.dblocks, num(&xfs_db("dblocks")));
    assert_eq!(u64::from(sb.agcount), num(&xfs_db("agcount")));
    assert_eq!(sb.logstart, num(&xfs_db("logstart")));
    assert_eq!(xfs_explorer::xfs::sb::uuid_text(&sb.uuid), xfs_db("uuid"));
    // xfs_db says "(correct)"; the 4 KiB sector was read whole for the CRC.
    assert!(xfs_db("crc").ends_with("(correct)"));
    assert_eq!(sb.crc_ok(), Some(true));
    // One 1 MiB chunk served every read.
    assert_eq!(img.stats().host_reads, 1);
}

#[wasm_bindgen_test]
fn not_xfs_in_a_worker_is_a_clear_error() {
    let img = Image::new(BlobReader::new(blob_of(&[0u8; 4096])).unwrap());
    let err = read_superblock(&img).unwrap_err().to_string();
    assert!(
        err.starts_with("not an XFS filesystem: magic is 0x00000000"),
        "{err}"
    );
}

#[wasm_bindgen_test]
fn every_route_round_trips_through_its_hash() {
    use xfs_explorer::web::page::route::Route;
    use xfs_explorer::web::protocol::DiffSection;
    let routes = [
        Route::Superblock,
        Route::Path("/a b/ü/<x>".into()),
        Route::Metadir("/".into()),
        Route::Metadir("/rtgroups/0.bitmap".into()),
        Route::Inode(131),
        Route::Ags,
        Route::AgMap(3),
        Route::Hex(32778),
        Route::LogHex(61),
        Route::Log(None),
        Route::Log(Some(7)),
        Route::Ops { start: 2, skip: 5 },
        Route::Replay {
            section: DiffSection::Inodes,
            filter: "changed".into(),
            start: 40,
        },
    ];
    for r in routes {
        assert_eq!(Route::parse(&r.href()), r, "{}", r.href());
    }
    assert_eq!(Route::parse("#/ag/x"), Route::Unknown("ag/x".into()));
    assert_eq!(Route::parse("#/hex/"), Route::Unknown("hex/".into()));
}

/// The worker's answers to `reqs`, in order, with the caps `caps`.
fn worker_answers(
    caps: xfs_explorer::web::worker::Caps,
    reqs: Vec<xfs_explorer::web::protocol::Request>,
) -> Vec<xfs_explorer::web::protocol::Response> {
    use std::cell::RefCell;
    use std::rc::Rc;
    use xfs_explorer::web::protocol::Response;
    let seen: Rc<RefCell<Vec<Response>>> = Rc::new(RefCell::new(Vec::new()));
    let out: Rc<dyn Fn(&Response)> = {
        let seen = Rc::clone(&seen);
        Rc::new(move |r: &Response| seen.borrow_mut().push(r.clone()))
    };
    xfs_explorer::web::worker::set_caps(caps);
    for r in reqs {
        xfs_explorer::web::worker::handle(&out, r);
    }
    xfs_explorer::web::worker::set_caps(Default::default());
    let v = seen.borrow().clone();
    v
}

/// The kernel-made image with the largest fixture log, as a Blob.
fn big_log_blob() -> web_sys::Blob {
    const ZST: &[u8] = include_bytes!("fixtures/log-1k-rmap.img.zst");
    let mut dec = ruzstd::decoding::StreamingDecoder::new(ZST).unwrap();
    let mut img = Vec::new();
    dec.read_to_end(&mut img).unwrap();
    blob_of(&img)
}

fn open_big_log() -> xfs_explorer::web::protocol::Request {
    xfs_explorer::web::protocol::Request::Open {
        blob: big_log_blob(),
        name: "log-1k-rmap.img".into(),
    }
}

/// Every request's final answer (progress and memory reports left out).
fn answers(
    v: Vec<xfs_explorer::web::protocol::Response>,
) -> Vec<xfs_explorer::web::protocol::Response> {
    use xfs_explorer::web::protocol::Response;
    v.into_iter()
        .filter(|r| !matches!(r, Response::Progress { .. } | Response::Memory { .. }))
        .collect()
}

#[wasm_bindgen_test]
fn the_decoded_log_cap_refuses_a_bigger_log_with_a_message() {
    use xfs_explorer::web::protocol::{Request, Response};
    use xfs_explorer::web::worker::Caps;
    // xfs_logprint's tail and head of this log.
    const FACTS: &str = include_str!("fixtures/log-1k-rmap.logfacts.txt");
    let fact = |k: &str| -> u64 {
        FACTS
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k}: ")))
            .unwrap()
            .parse()
            .unwrap()
    };
    let span = (fact("head_block") - fact("tail_block")) * 512;
    let small = Caps {
        decoded_log: span - 512,
        ..Caps::default()
    };
    let got = answers(worker_answers(
        small,
        vec![
            open_big_log(),
            Request::Log,
            Request::SetReplay { on: true },
        ],
    ));
    assert!(matches!(got[0], Response::Opened(_)), "{:?}", got[0]);
    let span_text = format!("is {:.1} MiB, more than", span as f64 / 1_048_576.0);
    match &got[1] {
        Response::ViewError { what, message } => {
            assert_eq!(what, "log");
            assert!(message.contains(&span_text), "{message}");
            assert!(message.contains("DECODED_LOG_CAP"), "{message}");
            assert!(message.contains("tail 1:720 to head 1:8733"), "{message}");
        }
        other => panic!("expected the cap's message, got {other:?}"),
    }
    match &got[2] {
        Response::Replay(r) => {
            let e = r.error.as_deref().unwrap_or_default();
            assert!(e.contains("DECODED_LOG_CAP"), "{e}");
            assert!(!r.on);
        }
        other => panic!("expected the cap's message, got {other:?}"),
    }
    // At the cap itself the same log is decoded.
    let at = Caps {
        decoded_log: span,
        ..Caps::default()
    };
    let got = answers(worker_answers(at, vec![open_big_log(), Request::Log]));
    assert!(matches!(got[1], Response::Log(_)), "{:?}", got[1]);
}

#[wasm_bindgen_test]
fn the_replay_overlay_diff_rows_and_dir_entries_caps_are_enforced() {
    use xfs_explorer::web::protocol::{DiffSection, Request, Response};
    use xfs_explorer::web::worker::Caps;
    let tiny_overlay = Caps {
        replay_overlay: 4096,
        ..Caps::default()
    };
    let got = answers(worker_answers(
        tiny_overlay,
        vec![open_big_log(), Request::SetReplay { on: true }],
    ));
    match &got[1] {
        Response::Replay(r) => {
            let e = r.error.as_deref().unwrap_or_default();
            assert!(e.contains("REPLAY_OVERLAY_CAP"), "{e}");
            assert!(e.contains("more than the 0.0 MiB"), "{e}");
        }
        other => panic!("expected the cap's message, got {other:?}"),
    }
    // One row of each part kept, one directory entry listed.
    let one = Caps {
        diff_rows: 1,
        dir_entries: 1,
        ..Caps::default()
    };
    let got = answers(worker_answers(
        one,
        vec![
            open_big_log(),
            Request::Path { path: "/".into() },
            Request::SetReplay { on: true },
            Request::ReplayDiff,
        ],
    ));
    match &got[1] {
        Response::Dir(d) => {
            assert_eq!(d.entries.len(), 1);
            assert!(
                // The kernel lists two entries in the root (besides . and ..).
                d.problems.iter().any(|p| p.contains("2 entries: only the first 1 are listed (DIR_ENTRIES_CAP)")),
                "{:?}",
                d.problems
            );
        }
        other => panic!("expected the root directory, got {other:?}"),
    }
    assert!(
        matches!(&got[2], Response::Replay(r) if r.on && r.error.is_none()),
        "{:?}",
        got[2]
    );
    match &got[3] {
        Response::ReplayDiff(d) => {
            for s in DiffSection::ALL {
                assert!(d.count(s, "") <= 1, "{s:?}: {:?}", d.counts);
            }
            assert!(
                d.problems.iter().any(|p| p.contains("(DIFF_ROWS_CAP)")),
                "{:?}",
                d.problems
            );
        }
        other => panic!("expected what replay changed, got {other:?}"),
    }
}

/// A small seeded generator (xorshift64*), so a failing message can be made
/// again from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

/// Every variant tag of `Request`, and every field name one has.
const TAGS: &[&str] = &[
    "Open",
    "OpenPair",
    "AddLogDevice",
    "OpenPartition",
    "Path",
    "MetadirPath",
    "LogHex",
    "Lookup",
    "Inode",
    "XattrValue",
    "ReadFile",
    "Ags",
    "AgMap",
    "Hex",
    "AgRecords",
    "TreeChildren",
    "Log",
    "LogRows",
    "LogTransaction",
    "SetReplay",
    "ExportChunk",
    "ReplayDiff",
    "ReplayDiffRows",
    "Ops",
    "OpsTimeline",
];
const FIELDS: &[&str] = &[
    "blob",
    "name",
    "first",
    "first_name",
    "second",
    "second_name",
    "number",
    "path",
    "daddr",
    "ino",
    "agno",
    "tree",
    "start",
    "count",
    "metadir",
    "index",
    "on",
    "log_device",
    "offset",
    "section",
    "filter",
    "skip",
];

/// One request of each kind, with values a page would send.
fn sample_requests(blob: &web_sys::Blob) -> Vec<xfs_explorer::web::protocol::Request> {
    use xfs_explorer::web::protocol::{DiffSection, Request};
    vec![
        Request::Open {
            blob: blob.clone(),
            name: "v5-sect4k.img".into(),
        },
        Request::OpenPair {
            first: blob.clone(),
            first_name: "a".into(),
            second: blob.clone(),
            second_name: "b".into(),
        },
        Request::AddLogDevice {
            blob: blob.clone(),
            name: "log".into(),
        },
        Request::OpenPartition { number: 1 },
        Request::Path {
            path: "/dir1".into(),
        },
        Request::MetadirPath { path: "/".into() },
        Request::LogHex { daddr: 2 },
        Request::Lookup {
            path: "/dir1/sub".into(),
        },
        Request::Inode { ino: 131 },
        Request::XattrValue {
            ino: 131,
            name: "user.dirattr".into(),
        },
        Request::ReadFile { ino: 75459 },
        Request::Ags,
        Request::AgMap { agno: 0 },
        Request::Hex { daddr: 0 },
        Request::AgRecords {
            agno: 0,
            tree: "bno".into(),
            start: 0,
            count: 200,
        },
        Request::TreeChildren {
            path: "/".into(),
            metadir: false,
        },
        Request::Log,
        Request::LogRows {
            start: 0,
            count: 200,
        },
        Request::LogTransaction { index: 0 },
        Request::SetReplay { on: true },
        Request::ExportChunk {
            log_device: false,
            offset: 0,
        },
        Request::ReplayDiff,
        Request::ReplayDiffRows {
            section: DiffSection::Inodes,
            filter: String::new(),
            start: 0,
            count: 500,
        },
        Request::Ops,
        Request::OpsTimeline { start: 0, skip: 0 },
    ]
}

/// A number a page would not send: the extremes, or any.
fn hostile_u64(rng: &mut Rng) -> u64 {
    match rng.below(6) {
        0 => u64::MAX,
        1 => u64::from(u32::MAX),
        2 => 0,
        3 => 1 << 53,
        4 => rng.next() % 100_000,
        _ => rng.next(),
    }
}

fn hostile_u32(rng: &mut Rng) -> u32 {
    hostile_u64(rng) as u32
}

/// A string a page would not send.
fn hostile_string(rng: &mut Rng) -> String {
    match rng.below(6) {
        0 => "/a".repeat(1 + rng.below(40_000)),
        1 => "../".repeat(1 + rng.below(2000)),
        2 => String::new(),
        3 => (0..rng.below(300))
            .map(|_| char::from_u32(rng.next() as u32 % 0x11_0000).unwrap_or('\u{fffd}'))
            .collect(),
        4 => format!("/{}", "x".repeat(256)),
        _ => rng
            .pick(&[
                "/",
                "/dir1",
                "/dir1/sub/deeper",
                "user.dirattr",
                "bno",
                "cnt",
                "ino",
                "fino",
                "rmap",
                "refc",
                "nope",
                "added",
                "changed",
            ])
            .to_string(),
    }
}

/// A request of a random kind whose fields have the right types and
/// hostile values (so it is decoded and reaches the worker's work).
fn hostile_request(rng: &mut Rng, blob: &web_sys::Blob) -> xfs_explorer::web::protocol::Request {
    use xfs_explorer::web::protocol::{DiffSection, Request};
    match rng.below(22) {
        0 => Request::OpenPartition {
            number: hostile_u32(rng),
        },
        1 => Request::Path {
            path: hostile_string(rng),
        },
        2 => Request::MetadirPath {
            path: hostile_string(rng),
        },
        3 => Request::LogHex {
            daddr: hostile_u64(rng),
        },
        4 => Request::Lookup {
            path: hostile_string(rng),
        },
        5 => Request::Inode {
            ino: hostile_u64(rng),
        },
        6 => Request::XattrValue {
            ino: hostile_u64(rng),
            name: hostile_string(rng),
        },
        7 => Request::ReadFile {
            ino: hostile_u64(rng),
        },
        8 => Request::AgMap {
            agno: hostile_u32(rng),
        },
        9 => Request::Hex {
            daddr: hostile_u64(rng),
        },
        10 => Request::AgRecords {
            agno: hostile_u32(rng),
            tree: hostile_string(rng),
            start: hostile_u64(rng),
            count: hostile_u64(rng),
        },
        11 => Request::TreeChildren {
            path: hostile_string(rng),
            metadir: rng.below(2) == 0,
        },
        12 => Request::LogRows {
            start: hostile_u32(rng),
            count: hostile_u32(rng),
        },
        13 => Request::LogTransaction {
            index: hostile_u32(rng),
        },
        14 => Request::SetReplay {
            on: rng.below(2) == 0,
        },
        15 => Request::ExportChunk {
            log_device: rng.below(2) == 0,
            offset: hostile_u64(rng),
        },
        16 => Request::ReplayDiffRows {
            section: *rng.pick(&DiffSection::ALL),
            filter: hostile_string(rng),
            start: hostile_u32(rng),
            count: hostile_u32(rng),
        },
        17 => Request::OpsTimeline {
            start: hostile_u32(rng),
            skip: hostile_u32(rng),
        },
        18 => Request::AddLogDevice {
            blob: blob_of(&[0u8; 4096]),
            name: hostile_string(rng),
        },
        19 => Request::Open {
            blob: blob_of(
                &(0..rng.below(70_000))
                    .map(|_| rng.next() as u8)
                    .collect::<Vec<u8>>(),
            ),
            name: hostile_string(rng),
        },
        20 => Request::OpenPair {
            first: blob.clone(),
            first_name: hostile_string(rng),
            second: blob_of(&[0u8; 512]),
            second_name: hostile_string(rng),
        },
        _ => rng
            .pick(&[
                Request::Ags,
                Request::Log,
                Request::ReplayDiff,
                Request::Ops,
            ])
            .clone(),
    }
}

/// A hostile JS value: wrong types, extreme and non-finite numbers,
/// BigInts past 64 bits and negative, long and odd strings, nested arrays
/// and objects with request-like keys, typed arrays, blobs.
fn garbage(rng: &mut Rng, depth: u32) -> wasm_bindgen::JsValue {
    use wasm_bindgen::JsValue;
    let big = |s: &str| JsValue::from(js_sys::BigInt::new(&JsValue::from_str(s)).unwrap());
    match rng.below(if depth > 3 { 16 } else { 20 }) {
        0 => JsValue::UNDEFINED,
        1 => JsValue::NULL,
        2 => JsValue::from_bool(rng.next() & 1 == 1),
        3 => JsValue::from_f64(*rng.pick(&[
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            -1.0,
            0.5,
            1e300,
            -1e300,
            9_007_199_254_740_993.0,
            4_294_967_296.0,
            18_446_744_073_709_551_616.0,
        ])),
        4 => JsValue::from_f64((rng.next() % 100_000) as f64),
        5 => big(rng.pick::<&str>(&[
            "-1",
            "0",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775809",
            "340282366920938463463374607431768211456",
        ])),
        6 => JsValue::from(js_sys::BigInt::from(rng.next())),
        7 => JsValue::from_str(rng.pick::<&str>(TAGS)),
        8 => JsValue::from_str(&"/a".repeat(1 + rng.below(60_000))),
        9 => JsValue::from_str(rng.pick::<&str>(&[
            "",
            "/",
            "//..//",
            "\0",
            "..",
            "paths",
            "Inodes",
            "bno",
            "refc",
            "é\u{202e}\u{feff}",
            "<script>",
            "-1",
            "NaN",
        ])),
        // A lone surrogate (not valid UTF-16 text).
        10 => js_sys::JsString::from_char_code1(0xd800).into(),
        11 => {
            let bytes: Vec<u8> = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
            js_sys::Uint8Array::from(bytes.as_slice()).into()
        }
        12 => {
            let bytes: Vec<u8> = (0..rng.below(8192)).map(|_| rng.next() as u8).collect();
            blob_of(&bytes).into()
        }
        13 => js_sys::Date::new_0().into(),
        14 => js_sys::Map::new().into(),
        15 => JsValue::from_f64(-((rng.next() % 1000) as f64)),
        16 | 17 => {
            let a = js_sys::Array::new();
            for _ in 0..rng.below(5) {
                a.push(&garbage(rng, depth + 1));
            }
            a.into()
        }
        _ => {
            let o = js_sys::Object::new();
            for _ in 0..rng.below(5) {
                let k = if rng.below(2) == 0 {
                    *rng.pick(TAGS)
                } else {
                    *rng.pick(FIELDS)
                };
                js_sys::Reflect::set(&o, &k.into(), &garbage(rng, depth + 1)).unwrap();
            }
            o.into()
        }
    }
}

/// A request message (`[bytes, blobs...]`, as `request_to_js` makes it)
/// with one thing changed: a bit flipped, a byte or an 8-byte word set (to
/// an extreme, where lengths and tags are), the bytes cut or lengthened,
/// the variant tag set past the last one, a file dropped, added or made
/// garbage, the bytes made garbage, or the whole message replaced.
fn mutate(rng: &mut Rng, v: &wasm_bindgen::JsValue) -> wasm_bindgen::JsValue {
    use wasm_bindgen::JsCast;
    let Some(parts) = v.dyn_ref::<js_sys::Array>() else {
        return garbage(rng, 0);
    };
    // A copy, so the sample is left as it is.
    let out = parts.slice(0, parts.length());
    let Ok(bytes) = out.get(0).dyn_into::<js_sys::Uint8Array>() else {
        return garbage(rng, 0);
    };
    let mut b = bytes.to_vec();
    let at = |rng: &mut Rng, len: usize| if len == 0 { 0 } else { rng.below(len) };
    match rng.below(10) {
        0 if !b.is_empty() => {
            let i = at(rng, b.len());
            b[i] ^= 1 << rng.below(8);
        }
        1 if !b.is_empty() => {
            let i = at(rng, b.len());
            b[i] = rng.next() as u8;
        }
        2 if b.len() >= 8 => {
            let i = at(rng, b.len() - 7);
            let word: u64 = *rng.pick(&[u64::MAX, 1 << 63, 1 << 32, u32::MAX as u64, 0, 4096]);
            b[i..i + 8].copy_from_slice(&word.to_le_bytes());
        }
        3 => {
            let n = at(rng, b.len());
            b.truncate(n);
        }
        4 => b.extend((0..1 + rng.below(16)).map(|_| rng.next() as u8)),
        5 if b.len() >= 4 => {
            let tag = 25 + rng.below(1 << 20) as u32;
            b[..4].copy_from_slice(&tag.to_le_bytes());
        }
        6 => {
            if out.length() > 1 && rng.below(2) == 0 {
                out.pop();
            } else {
                out.push(&garbage(rng, 1));
            }
        }
        7 if out.length() > 1 => {
            out.set(out.length() - 1, garbage(rng, 1));
        }
        8 => {
            out.set(0, garbage(rng, 1));
            return out.into();
        }
        _ => return garbage(rng, 0),
    }
    out.set(0, js_sys::Uint8Array::from(b.as_slice()).into());
    out.into()
}

#[wasm_bindgen_test]
fn every_malformed_message_gets_an_error_and_the_worker_keeps_answering() {
    use std::cell::RefCell;
    use std::rc::Rc;
    use wasm_bindgen::JsValue;
    use xfs_explorer::web::protocol::{request_from_js, request_to_js, Request, Response};
    use xfs_explorer::web::worker::handle_message;
    // The seed and counts recorded in fuzz/RESULTS.md. The test command
    // sends a thousand (the runner gives the whole file 20 s); a long
    // run sets REQUEST_FUZZ_MESSAGES and WASM_BINDGEN_TEST_TIMEOUT.
    const SEED: u64 = 0x0017_5eed_cafe_f00d;
    let messages: usize = option_env!("REQUEST_FUZZ_MESSAGES")
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let mut img = Vec::new();
    ruzstd::decoding::StreamingDecoder::new(IMAGE_ZST)
        .unwrap()
        .read_to_end(&mut img)
        .unwrap();
    let image = blob_of(&img);
    drop(img);
    let seen: Rc<RefCell<Vec<Response>>> = Rc::new(RefCell::new(Vec::new()));
    let out: Rc<dyn Fn(&Response)> = {
        let seen = Rc::clone(&seen);
        Rc::new(move |r: &Response| seen.borrow_mut().push(r.clone()))
    };
    // Answers to one message, progress and memory reports left out.
    let send = |v: JsValue| -> Vec<Response> {
        seen.borrow_mut().clear();
        handle_message(&out, v);
        answers(seen.borrow().clone())
    };
    let open = || {
        let got = send(
            request_to_js(&Request::Open {
                blob: image.clone(),
                name: "v5-sect4k.img".into(),
            })
            .unwrap()
            .into(),
        );
        assert!(
            matches!(got.last(), Some(Response::Opened(o)) if o.fs_error.is_none()),
            "{got:?}"
        );
    };
    let samples: Vec<JsValue> = sample_requests(&image)
        .iter()
        .map(|r| request_to_js(r).unwrap().into())
        .collect();
    let mut rng = Rng(SEED);
    let (mut refused, mut decoded) = (0usize, 0usize);
    open();
    for i in 0..messages {
        if i % 500 == 0 {
            open();
        }
        let msg = match rng.below(10) {
            0 => garbage(&mut rng, 0),
            7..=9 => request_to_js(&hostile_request(&mut rng, &image))
                .unwrap()
                .into(),
            1 => {
                // A valid request with a second change on top.
                let s = rng.pick(&samples).clone();
                let once = mutate(&mut rng, &s);
                mutate(&mut rng, &once)
            }
            _ => {
                let s = samples[rng.below(samples.len())].clone();
                mutate(&mut rng, &s)
            }
        };
        let understood = request_from_js(&msg).is_ok();
        let got = send(msg.clone());
        if understood {
            decoded += 1;
            assert!(!got.is_empty(), "message {i}: no answer to {msg:?}");
        } else {
            refused += 1;
            assert!(
                matches!(&got[..], [Response::Error { message, .. }] if message.starts_with("the worker did not understand a request")),
                "message {i}: {msg:?} -> {got:?}"
            );
        }
    }
    web_sys::console::log_1(&format!("request fuzz: seed {SEED:#x}, {messages} messages: {refused} refused, {decoded} decoded and answered").into());
    assert!(
        refused > messages / 4 && decoded > messages / 10,
        "{refused} refused, {decoded} decoded"
    );
    // The worker still answers: the root directory lists what the kernel lists.
    open();
    let got = send(
        request_to_js(&Request::Path { path: "/".into() })
            .unwrap()
            .into(),
    );
    let Some(Response::Dir(d)) = got.last() else {
        panic!("{got:?}")
    };
    let mut names: Vec<String> = d
        .entries
        .iter()
        .map(|e| e.name.clone())
        .filter(|n| n != "." && n != "..")
        .collect();
    names.sort();
    const LS: &str = include_str!("fixtures/v5-sect4k.ls.jsonl");
    let mut want: Vec<String> = LS
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["path"].as_str().map(str::to_string))
        .filter(|p| p != "/" && !p[1..].contains('/'))
        .map(|p| p[1..].to_string())
        .collect();
    want.sort();
    assert_eq!(names, want);
}

#[wasm_bindgen_test]
fn the_page_state_keeps_its_stores_under_their_caps() {
    use std::rc::Rc;
    use xfs_explorer::web::page::caches::PageCaps;
    use xfs_explorer::web::page::state::{Action, State};
    use xfs_explorer::web::protocol::{Response, TxRow};
    use yew::Reducible;
    let caps = PageCaps::from_query("?caps=tree:3,xattrs:2,log-rows:300");
    let mut s = Rc::new(State::with_caps(caps));
    let step = |s: &mut Rc<State>, r: Response| *s = Rc::clone(s).reduce(Action::Response(r));
    for i in 0..10u64 {
        step(
            &mut s,
            Response::XattrValue {
                ino: 131,
                name: format!("user.a{i}"),
                value: vec![b'v'; 100],
            },
        );
        assert!(s.xattr_values.len() <= 2);
        step(
            &mut s,
            Response::TreeChildren {
                path: format!("/d{i}"),
                dirs: (0..5000).map(|n| format!("s{n}")).collect(),
                error: None,
                metadir: i % 2 == 1,
            },
        );
        assert!(s.tree.len() <= 3 && s.metadir_tree.len() <= 3);
    }
    // The last two values are the ones kept; a directory's names beyond
    // the ones the tree shows are counted, not kept.
    let kept: Vec<&str> = s
        .xattr_values
        .iter()
        .map(|((_, n), _)| n.as_str())
        .collect();
    assert_eq!(kept, ["user.a8", "user.a9"]);
    let l = s.tree.listing("/d8").unwrap();
    let l = l.as_ref().as_ref().unwrap();
    assert_eq!((l.names.len(), l.total), (2000, 5000));
    let row = |index| TxRow {
        index,
        tid: index,
        start: String::new(),
        commit: String::new(),
        items: 1,
        regions: 1,
        bytes: 1,
        kinds: String::new(),
        unfinished_intent: false,
    };
    for start in (0..2000).step_by(200) {
        // The page that arrived last stays whole.
        step(
            &mut s,
            Response::LogRows {
                start,
                rows: (start..start + 200).map(row).collect(),
            },
        );
        assert!(s.log_rows.len() <= 300);
        assert!(s.log_rows.contains_key(&start) && s.log_rows.contains_key(&(start + 199)));
    }
}

#[wasm_bindgen_test]
fn every_kind_of_response_crosses_postmessage_intact() {
    use std::collections::BTreeSet;
    use xfs_explorer::web::protocol::{decode_response, encode_response, DiffSection, Request};
    // The worker's own answers on the kernel-made log image: the views,
    // the log's, replay's (a piece of the recovered image among them, its
    // bytes beside the encoded ones) and the operations'.
    let reqs = vec![
        open_big_log(),
        Request::Path { path: "/".into() },
        // The root inode (rootino in log-1k-rmap.sb.txt).
        Request::Inode { ino: 64 },
        Request::Ags,
        Request::AgMap { agno: 0 },
        Request::Hex { daddr: 0 },
        Request::AgRecords {
            agno: 0,
            tree: "bno".into(),
            start: 0,
            count: 50,
        },
        Request::TreeChildren {
            path: "/".into(),
            metadir: false,
        },
        Request::Log,
        Request::LogRows {
            start: 0,
            count: 50,
        },
        Request::LogTransaction { index: 0 },
        Request::SetReplay { on: true },
        Request::ExportChunk {
            log_device: false,
            offset: 0,
        },
        Request::ReplayDiff,
        Request::ReplayDiffRows {
            section: DiffSection::Paths,
            filter: String::new(),
            start: 0,
            count: 50,
        },
        Request::Ops,
        Request::OpsTimeline { start: 0, skip: 0 },
        Request::Lookup {
            path: "/no/such/path".into(),
        },
    ];
    let got = worker_answers(Default::default(), reqs);
    let mut kinds = BTreeSet::new();
    for r in &got {
        let (msg, _transfer) = encode_response(r).unwrap();
        let back = decode_response(&msg).unwrap();
        assert_eq!(&back, r);
        kinds.insert(
            format!("{r:?}")
                .split(['(', ' ', '{'])
                .next()
                .unwrap()
                .to_string(),
        );
    }
    for k in [
        "Opened",
        "Dir",
        "Inode",
        "Ags",
        "AgMap",
        "Hex",
        "AgRecords",
        "TreeChildren",
        "Log",
        "LogRows",
        "LogTransaction",
        "Replay",
        "ExportChunk",
        "ReplayDiff",
        "ReplayDiffRows",
        "Ops",
        "OpsTimeline",
        "Lookup",
        "Progress",
        "Memory",
    ] {
        assert!(kinds.contains(k), "no {k} among {kinds:?}");
    }
    // 64-bit values cross whole.
    let big = xfs_explorer::web::protocol::Response::Lookup {
        path: String::new(),
        ino: Some(u64::MAX),
        error: None,
    };
    assert_eq!(
        decode_response(&encode_response(&big).unwrap().0).unwrap(),
        big
    );
    // Anything else is refused, not misread.
    assert!(decode_response(&wasm_bindgen::JsValue::from(1)).is_err());
    let torn = js_sys::Array::of1(&js_sys::Uint8Array::from(&[7u8, 0, 0][..]));
    assert!(decode_response(&torn).is_err());
}

#[wasm_bindgen_test]
fn the_light_worker_answers_views_and_the_log_and_leaves_replay_and_ops() {
    use std::cell::RefCell;
    use std::rc::Rc;
    use xfs_explorer::web::protocol::{Request, Response};
    let seen: Rc<RefCell<Vec<Response>>> = Rc::new(RefCell::new(Vec::new()));
    let out: Rc<dyn Fn(&Response)> = {
        let seen = Rc::clone(&seen);
        Rc::new(move |r: &Response| seen.borrow_mut().push(r.clone()))
    };
    let reqs = vec![
        open_big_log(),
        Request::Path { path: "/".into() },
        Request::Log,
        Request::SetReplay { on: true },
        Request::ReplayDiff,
        Request::Ops,
        Request::Path { path: "/".into() },
    ];
    for r in reqs {
        assert_eq!(
            r.light_worker_answers(),
            !matches!(
                r,
                Request::SetReplay { .. } | Request::ReplayDiff | Request::Ops
            )
        );
        xfs_explorer::web::worker::handle_light(&out, r);
    }
    let got = answers(seen.borrow().clone());
    assert_eq!(got.len(), 7, "{got:?}");
    assert!(
        matches!(&got[0], Response::Opened(o) if o.fs_error.is_none()),
        "{:?}",
        got[0]
    );
    assert!(matches!(&got[1], Response::Dir(_)), "{:?}", got[1]);
    assert!(
        matches!(&got[2], Response::Log(l) if l.transactions > 0),
        "{:?}",
        got[2]
    );
    for r in &got[3..6] {
        assert!(matches!(r, Response::ViewError { .. }), "{r:?}");
    }
    // Nothing was replayed: the listing is the disk's still.
    assert_eq!(got[6], got[1]);
}
