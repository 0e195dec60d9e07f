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

#[allow(dead_code)]
/// The LSN and CRC fields of a recovered block, as `stamp_masked.py`
/// finds them by magic number from the kernel's on-disk layouts: (LSN
/// offsets, CRC offsets).
pub fn stamp_fields(b: &[u8], sect: usize, isize: usize) -> (Vec<usize>, Vec<usize>) {
    let magic = &b[..4];
    let short: [&[u8]; 6] = [b"AB3B", b"AB3C", b"IAB3", b"FIB3", b"RMB3", b"R3FC"];
    if magic == b"XFSB" {
        // Superblock, AGF, AGI and AGFL, one per sector.
        let per = [(240, 224), (208, 216), (320, 312), (24, 32)];
        let lsn = (0..4).map(|i| i * sect + per[i].0).collect();
        let crc = (0..4).map(|i| i * sect + per[i].1).collect();
        (lsn, crc)
    } else if short.contains(&magic) {
        (vec![24], vec![52])
    } else if magic == b"BMA3" {
        (vec![32], vec![64])
    } else if &magic[..2] == b"IN" && b[4] == 3 {
        let ats: Vec<usize> = (0..b.len())
            .step_by(isize)
            .filter(|a| &b[*a..*a + 2] == b"IN")
            .collect();
        (
            ats.iter().map(|a| a + 112).collect(),
            ats.iter().map(|a| a + 100).collect(),
        )
    } else if [&b"XDB3"[..], b"XDD3", b"XDF3"].contains(&magic)
        || [0x3DF1u16, 0x3D1F, 0x3BEE, 0x3EBE].contains(&u16::from_be_bytes([b[8], b[9]]))
    {
        (vec![24], vec![12])
    } else {
        (Vec::new(), Vec::new())
    }
}

/// `b` with its LSN and CRC fields (as [`stamp_fields`] finds them) set
/// to zero, as `stamp_masked.py` hashes the kernel's blocks.
#[allow(dead_code)]
pub fn mask_stamps(b: &mut [u8], sect: usize, isize: usize) {
    let (lsn, crc) = stamp_fields(b, sect, isize);
    for at in lsn {
        b[at..at + 8].fill(0);
    }
    for at in crc {
        b[at..at + 4].fill(0);
    }
}

/// `NAME.recovered-masked.txt` (made by `stamp_masked.py`): block ->
/// sha256 of the kernel's recovered block with its stamps set to zero.
#[allow(dead_code)]
pub fn masked_oracle(name: &str) -> std::collections::BTreeMap<u64, String> {
    oracle(name, "recovered-masked.txt")
        .lines()
        .map(|l| {
            let mut w = l.split_whitespace();
            (
                w.next().unwrap().parse().unwrap(),
                w.next().unwrap().to_string(),
            )
        })
        .collect()
}

/// xfs_logprint's item names (the start of its item lines) and ours.
pub const LOGPRINT_KINDS: &[(&str, &str)] = &[
    ("BUF", "buf"),
    ("ICR", "icreate"),
    ("INO", "inode"),
    ("EFI", "efi"),
    ("EFD", "efd"),
    ("ATTRI", "attri"),
    ("ATTRD", "attrd"),
    ("RUI", "rui"),
    ("RUD", "rud"),
    ("CUI", "cui"),
    ("CUD", "cud"),
    ("BUI", "bui"),
    ("BUD", "bud"),
    ("DQ ", "dquot"),
    ("QOFF", "quotaoff"),
    // An item this xfs_logprint reads but cannot name ("illegal type").
    ("", LOGPRINT_UNNAMED),
];

/// The kind of an item xfs_logprint could not name.
pub const LOGPRINT_UNNAMED: &str = "?";

/// Item types newer than the xfs_logprint the oracles were made with: the
/// only ones it may leave unnamed.
pub const NEWER_KINDS: &[&str] = &["xmi", "xmd"];

/// A number as xfs_logprint prints it (decimal, or hex after "0x").
pub fn logprint_num(v: &str) -> u64 {
    let v = v.trim().trim_end_matches(',');
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap_or_else(|_| panic!("hex {v}")),
        None => v.parse().unwrap_or_else(|_| panic!("number {v}")),
    }
}

/// Split "a:1  b: 0x2   c:3" into pairs (values may follow the colon
/// after spaces).
pub fn logprint_pairs(line: &str) -> Vec<(String, String)> {
    let toks: Vec<&str> = line.split_whitespace().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        if let Some((k, v)) = t.split_once(':') {
            if v.is_empty() {
                if let Some(next) = toks.get(i + 1).filter(|n| !n.contains(':')) {
                    out.push((k.to_string(), next.to_string()));
                    i += 2;
                    continue;
                }
            } else {
                out.push((k.to_string(), v.to_string()));
            }
        }
        i += 1;
    }
    out
}

/// An item as `xfs_logprint -t` lists it.
#[derive(Debug, Default)]
pub struct LpItem {
    pub kind: String,
    pub cnt: u64,
    pub total: u64,
    pub lens: Vec<u64>,
    /// `name:value` pairs from the decoded format line(s).
    pub fields: Vec<(String, String)>,
}

#[derive(Debug, Default)]
pub struct LpTrans {
    pub tid: u64,
    pub num_items: u64,
    pub items: Vec<LpItem>,
}

#[derive(Debug, Default)]
pub struct Logprint {
    pub tail: u64,
    pub head: u64,
    pub clean: bool,
    pub records: Vec<(u64, u64)>,
    pub trans: Vec<LpTrans>,
}

/// `xfs_logprint -t` (with `-d`'s decoded format lines where present):
/// head, tail, state, records, and each transaction with its items.
pub fn parse_logprint(text: &str) -> Logprint {
    let mut lp = Logprint::default();
    for line in text.lines() {
        let l = line.trim_start();
        if let Some(rest) = l.strip_prefix("log tail: ") {
            let t: Vec<&str> = rest.split_whitespace().collect();
            lp.tail = logprint_num(t[0]);
            lp.head = logprint_num(t[2]);
            lp.clean = t[4] == "<CLEAN>";
        } else if let Some(rest) = l.strip_prefix("LOG REC AT LSN cycle ") {
            let t: Vec<&str> = rest.split_whitespace().collect();
            lp.records.push((logprint_num(t[0]), logprint_num(t[2])));
        } else if let Some(rest) = l.strip_prefix("TRANS: ") {
            let p = logprint_pairs(rest);
            lp.trans.push(LpTrans {
                tid: logprint_num(&p[0].1),
                num_items: logprint_num(&p[1].1),
                items: Vec::new(),
            });
        } else if let Some((code, kind)) = LOGPRINT_KINDS
            .iter()
            .find(|(c, _)| line.starts_with(&format!("{c}: cnt:")))
        {
            let rest = &line[code.len() + 2..];
            let p = logprint_pairs(rest);
            let item = LpItem {
                kind: kind.to_string(),
                cnt: logprint_num(&p[0].1),
                total: logprint_num(&p[1].1),
                lens: p
                    .iter()
                    .filter(|(k, _)| k == "len")
                    .map(|(_, v)| logprint_num(v))
                    .collect(),
                fields: Vec::new(),
            };
            lp.trans
                .last_mut()
                .expect("item before TRANS")
                .items
                .push(item);
        } else if l.is_empty() || l.starts_with("===") {
            // Separators end nothing: items run until the next item line.
        } else if let Some(item) = lp.trans.last_mut().and_then(|t| t.items.last_mut()) {
            // Decoded format lines (tab-indented, or for some intents not).
            item.fields.extend(logprint_pairs(l));
        }
    }
    lp
}
