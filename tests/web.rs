//! The core in a real browser worker: a `Blob` read lazily through
//! `FileReaderSync` (which exists only in workers), the block cache, and the
//! superblock parser, against xfs_db's view of the same kernel-made image.
//! Run with `cargo test --target wasm32-unknown-unknown --test web`.
#![cfg(target_arch = "wasm32")]

use std::io::Read;
use wasm_bindgen_test::*;
use xfs_explorer::web::blob_reader::BlobReader;
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
    use xfs_explorer::web::protocol::DiffSection;
    use xfs_explorer::web::route::Route;
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

#[wasm_bindgen_test]
fn every_route_asks_the_worker_for_what_it_shows() {
    use xfs_explorer::web::protocol::DiffSection;
    use xfs_explorer::web::route::{requests_for, Route};
    let asked = |r: Route| {
        requests_for(&r).map(|(what, reqs)| {
            let reqs: Vec<String> = reqs
                .iter()
                .map(|q| serde_json::to_string(q).unwrap())
                .collect();
            (what, reqs)
        })
    };
    let one = |what: &str, req: &str| Some((what.to_string(), vec![req.to_string()]));
    assert_eq!(asked(Route::Superblock), None);
    assert_eq!(asked(Route::Unknown("nowhere".into())), None);
    assert_eq!(
        asked(Route::Path("/a b".into())),
        one("reading /a b", r#"{"Path":{"path":"/a b"}}"#)
    );
    assert_eq!(
        asked(Route::Metadir("/rtgroups".into())),
        one(
            "reading metadata directory /rtgroups",
            r#"{"MetadirPath":{"path":"/rtgroups"}}"#
        )
    );
    assert_eq!(
        asked(Route::Inode(131)),
        one("reading inode 131", r#"{"Inode":{"ino":131}}"#)
    );
    assert_eq!(
        asked(Route::Ags),
        one("reading the allocation groups", r#""Ags""#)
    );
    assert_eq!(
        asked(Route::AgMap(3)),
        one("mapping AG 3", r#"{"AgMap":{"agno":3}}"#)
    );
    assert_eq!(
        asked(Route::AgTree {
            agno: 1,
            tree: "bno".into(),
            start: 400
        }),
        one(
            "reading the bno records of AG 1",
            r#"{"AgRecords":{"agno":1,"tree":"bno","start":400,"count":200}}"#
        )
    );
    assert_eq!(
        asked(Route::Hex(32778)),
        one("reading daddr 32778", r#"{"Hex":{"daddr":32778}}"#)
    );
    assert_eq!(
        asked(Route::LogHex(61)),
        one(
            "reading daddr 61 of the log device",
            r#"{"LogHex":{"daddr":61}}"#
        )
    );
    assert_eq!(
        asked(Route::Log(None)),
        one("finding and decoding the log", r#""Log""#)
    );
    // A selected transaction is asked for first, then the log's summary.
    assert_eq!(
        asked(Route::Log(Some(7))),
        Some((
            "finding and decoding the log".to_string(),
            vec![
                r#"{"LogTransaction":{"index":7}}"#.to_string(),
                r#""Log""#.to_string()
            ]
        ))
    );
    assert_eq!(
        asked(Route::Replay {
            section: DiffSection::Inodes,
            filter: "changed".into(),
            start: 500
        }),
        Some((
            "what replay changed".to_string(),
            vec![
                r#""ReplayDiff""#.to_string(),
                r#"{"ReplayDiffRows":{"section":"Inodes","filter":"changed","start":500,"count":500}}"#
                    .to_string()
            ]
        ))
    );
    assert_eq!(
        asked(Route::Ops { start: 2, skip: 5 }),
        Some((
            "reconstructing the operations of the log".to_string(),
            vec![
                r#""Ops""#.to_string(),
                r#"{"OpsTimeline":{"start":2,"skip":5}}"#.to_string()
            ]
        ))
    );
}
