//! `xfs-explorer info --json` against `xfs_db -r -c 'sb 0' -c print` and
//! `xfs_db -r -c version`, recorded from every kernel-made fixture.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::*;
use serde_json::Value;

/// Fields that exist only in a v5 superblock; xfs_db prints them (as zeros)
/// for v4 too, but they are not part of a v4 superblock.
const V5_ONLY: &[&str] = &[
    "features_compat",
    "features_ro_compat",
    "features_incompat",
    "features_log_incompat",
    "crc",
    "spino_align",
    "pquotino",
    "lsn",
    "meta_uuid",
];

#[test]
fn info_json_equals_xfs_db_on_every_fixture() {
    let names = fixtures_with("sb.txt");
    for name in &names {
        let img = image(name);
        let (ok, out, err) = run_cli(&["info", "--json", img.to_str().unwrap()]);
        assert!(ok, "{name}: {err}");
        let ours: Value = serde_json::from_str(&out).unwrap();
        let version = ours["version"].as_u64().unwrap();
        let db = parse_xfs_db_print(&oracle(name, "sb.txt"));
        assert!(db.len() > 40, "{name}: oracle too short");
        for (key, val) in &db {
            if version == 4 && V5_ONLY.contains(&key.as_str()) {
                assert!(ours.get(key).is_none(), "{name}: v4 shows v5-only {key}");
                continue;
            }
            let mine = ours
                .get(key)
                .unwrap_or_else(|| panic!("{name}: missing {key}"));
            match key.as_str() {
                "uuid" | "meta_uuid" => assert_eq!(mine.as_str().unwrap(), val, "{name}: {key}"),
                "fname" => assert_eq!(mine.as_str().unwrap(), xfs_db_string(val), "{name}: {key}"),
                "crc" => {
                    // sb_crc is little-endian on disk; xfs_db prints the
                    // stored bytes as a big-endian word.
                    let db_crc = u32::try_from(xfs_db_number(val).unwrap()).unwrap();
                    assert_eq!(
                        mine.as_u64().unwrap(),
                        u64::from(db_crc.swap_bytes()),
                        "{name}: crc"
                    );
                    let want = if val.contains("(correct)") {
                        Value::Bool(true)
                    } else {
                        Value::Bool(false)
                    };
                    assert_eq!(ours["crc_ok"], want, "{name}: crc_ok vs xfs_db '{val}'");
                }
                _ => {
                    let n = xfs_db_number(val).unwrap_or_else(|| panic!("{name}: {key} = {val}"));
                    assert_eq!(mine.as_u64(), Some(n), "{name}: {key} (xfs_db says {val})");
                }
            }
        }
        if version == 4 {
            assert_eq!(ours["crc_ok"], Value::Null, "{name}");
        }
        // Every field we print is one xfs_db knows, or one of ours.
        for key in ours.as_object().unwrap().keys() {
            let extra = ["version", "features", "crc_ok", "problems"];
            assert!(
                extra.contains(&key.as_str()) || db.iter().any(|(k, _)| k == key),
                "{name}: {key} is not an xfs_db field"
            );
        }
        assert_eq!(ours["problems"], Value::Array(vec![]), "{name}");
    }
}

#[test]
fn features_equal_xfs_db_version() {
    for name in fixtures_with("version.txt") {
        let img = image(&name);
        let (ok, out, err) = run_cli(&["info", "--json", img.to_str().unwrap()]);
        assert!(ok, "{name}: {err}");
        let ours: Value = serde_json::from_str(&out).unwrap();
        let line = oracle(&name, "version.txt");
        let list = line.split(" = ").nth(1).unwrap().trim();
        let mut want: Vec<&str> = list.split(',').filter(|s| !s.starts_with('V')).collect();
        // xfs_db names the version number itself (V4, V5): ours is `version`.
        let v = list.split(',').next().unwrap();
        assert_eq!(format!("V{}", ours["version"]), v, "{name}");
        let mut got: Vec<&str> = ours["features"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn a_file_that_is_not_xfs_gets_a_clear_error() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let p = dir.join("not-xfs.bin");
    std::fs::write(
        &p,
        b"\x7fELF\x02\x01\x01\0this is not a filesystem".repeat(40),
    )
    .unwrap();
    let (ok, _out, err) = run_cli(&["info", "--json", p.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains("not an XFS filesystem: magic is 0x7f454c46"),
        "{err}"
    );

    let short = dir.join("short.bin");
    std::fs::write(&short, b"XFSB").unwrap();
    let (ok, _out, err) = run_cli(&["info", short.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains("superblock") && err.contains("beyond the end"),
        "{err}"
    );
}

#[test]
fn info_reads_only_the_first_sector_region_of_a_huge_sparse_image() {
    // A 100 GiB sparse file whose first 64 KiB are a real superblock: the
    // superblock comes out without reading the rest.
    let src = image("v5-4k-dirty");
    let head = std::fs::read(&src).unwrap()[..65536].to_vec();
    let p = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("huge-sparse.img");
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(100 << 30).unwrap();
    use std::os::unix::fs::FileExt;
    f.write_all_at(&head, 0).unwrap();
    drop(f);
    let (ok, out, err) = run_cli(&["info", "--json", p.to_str().unwrap()]);
    std::fs::remove_file(&p).ok();
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["fname"], "sample");
}
