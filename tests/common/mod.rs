//! Shared helpers for the integration tests: fixture images are committed
//! zstd-compressed and decompressed here, once, without root.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Names of the fixtures that have a given oracle file (`NAME.<suffix>`,
/// or `NAME.<suffix>.zst` for the large ones).
pub fn fixtures_with(suffix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .filter_map(|e| {
            let n = e.ok()?.file_name().into_string().ok()?;
            let n = n.strip_suffix(".zst").map_or(n.clone(), str::to_string);
            n.strip_suffix(&format!(".{suffix}")).map(str::to_string)
        })
        .collect();
    names.sort();
    names.dedup();
    assert!(!names.is_empty(), "no fixtures with .{suffix}");
    names
}

/// An oracle file's text; a large one is committed zstd-compressed.
pub fn oracle(name: &str, suffix: &str) -> String {
    let p = fixtures_dir().join(format!("{name}.{suffix}"));
    let z = fixtures_dir().join(format!("{name}.{suffix}.zst"));
    if !p.exists() && z.exists() {
        let input = std::fs::File::open(&z).unwrap_or_else(|e| panic!("{}: {e}", z.display()));
        let mut dec =
            ruzstd::decoding::StreamingDecoder::new(std::io::BufReader::new(input)).unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut dec, &mut text).unwrap();
        return text;
    }
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The decompressed image of fixture `name`, made on first use.
pub fn image(name: &str) -> PathBuf {
    decompressed(&format!("{name}.img"))
}

/// Fixture file `file` (`FILE.zst` in the fixtures), decompressed on first
/// use.
pub fn decompressed(file: &str) -> PathBuf {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fixtures");
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = out_dir.join(file);
    let src = fixtures_dir().join(format!("{file}.zst"));
    // Reuse an earlier decompression only if it is newer than the
    // compressed fixture (a regenerated fixture must not meet a stale copy).
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(o), Some(s)) = (modified(&out), modified(&src)) {
        if o >= s {
            return out;
        }
    }
    let input = std::fs::File::open(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    let mut dec = ruzstd::decoding::StreamingDecoder::new(std::io::BufReader::new(input)).unwrap();
    let tmp = out_dir.join(format!("{file}.{}.tmp", std::process::id()));
    let mut f = std::fs::File::create(&tmp).unwrap();
    std::io::copy(&mut dec, &mut f).unwrap();
    drop(f);
    std::fs::rename(&tmp, &out).unwrap();
    out
}

/// Run the CLI; returns (status success, stdout, stderr).
pub fn run_cli(args: &[&str]) -> (bool, String, String) {
    run_cli_env(args, &[])
}

/// `run_cli` with environment variables set.
pub fn run_cli_env(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_xfs-explorer"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Parse `xfs_db ... print` output (`name = value` lines) in order.
pub fn parse_xfs_db_print(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(" = ")?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// An xfs_db number: decimal, `0x` hex, or `null` (all ones).
pub fn xfs_db_number(v: &str) -> Option<u64> {
    let v = v.split_whitespace().next()?;
    if v == "null" {
        return Some(u64::MAX);
    }
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

/// Decode xfs_db's quoted string with octal escapes (`"ab\000\000"`),
/// dropping trailing NULs.
pub fn xfs_db_string(v: &str) -> String {
    let inner = v.trim_matches('"');
    let bytes = inner.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4].iter().all(u8::is_ascii_digit)
        {
            let oct = std::str::from_utf8(&bytes[i + 1..i + 4]).unwrap();
            out.push(u8::from_str_radix(oct, 8).unwrap());
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    while out.last() == Some(&0) {
        out.pop();
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The field called `name` of a `hex --json` answer.
#[allow(dead_code)]
pub fn hex_field(hex: &serde_json::Value, name: &str) -> serde_json::Value {
    hex["fields"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("no field {name} in {}", hex["structure"]))
}
