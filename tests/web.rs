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
