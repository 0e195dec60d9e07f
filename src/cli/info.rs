//! `xfs-explorer info`: the primary superblock.

use crate::xfs::sb::{read_superblock, Superblock};
use serde_json::{Map, Value};
use std::path::Path;

use super::open;

/// Where the log of an external-log filesystem is and what it holds:
/// `None` for an internal log.
fn external_log(path: &Path, sb: &Superblock) -> Result<Option<Value>, String> {
    if sb.logstart != 0 {
        if let Some(l) = super::logdev_path() {
            return Err(format!(
                "{}: the log is internal (sb_logstart {}), but --logdev {} was given",
                path.display(),
                sb.logstart,
                l.display()
            ));
        }
        return Ok(None);
    }
    let mut m = Map::new();
    m.insert("external".into(), Value::Bool(true));
    m.insert("logblocks".into(), Value::from(sb.logblocks));
    let fs = super::fs_of(path, super::open_raw_image(path)?)?;
    match (super::logdev_path(), &fs.logdev) {
        (Some(l), _) => {
            m.insert("device".into(), Value::from(l.display().to_string()));
        }
        // A metadump holding the log device (xfs_metadump -v 2 -l).
        (None, Some(_)) => {
            m.insert("device".into(), Value::from("held in the metadump"));
        }
        (None, None) => {
            m.insert("device".into(), Value::Null);
            return Ok(Some(Value::Object(m)));
        }
    }
    m.insert(
        "device_bytes".into(),
        Value::from(fs.logdev.as_ref().map_or(0, |d| d.len())),
    );
    let found = crate::xfs::log::LogDev::of_fs(&fs)
        .and_then(|dev| crate::xfs::log::find::find_head_tail(&dev));
    match found {
        Ok(ht) => {
            m.insert("clean".into(), Value::Bool(ht.clean));
            m.insert("head".into(), Value::from(ht.head.to_string()));
            m.insert("tail".into(), Value::from(ht.tail.to_string()));
        }
        Err(e) => {
            m.insert("error".into(), Value::from(e.to_string()));
        }
    }
    Ok(Some(Value::Object(m)))
}

fn external_log_text(v: &Value) -> String {
    let g = |k: &str| v.get(k).cloned().unwrap_or(Value::Null);
    let mut t = format!(
        "log: on an external device (sb_logstart 0), {} blocks",
        g("logblocks")
    );
    match g("device") {
        Value::String(d) => {
            t.push_str(&format!("; device {d} ({} bytes)", g("device_bytes")));
            if let Value::String(e) = g("error") {
                t.push_str(&format!(": {e}"));
            } else {
                let clean = g("clean") == Value::Bool(true);
                t.push_str(&format!(
                    ": {}, head {} tail {}",
                    if clean { "clean" } else { "dirty" },
                    g("head").as_str().unwrap_or("?"),
                    g("tail").as_str().unwrap_or("?")
                ));
            }
        }
        _ => t.push_str("; no log device given (--logdev FILE)"),
    }
    t.push('\n');
    t
}

pub fn run(path: &Path, json: bool) -> Result<(), String> {
    let img = open(path)?;
    let sb = read_superblock(&img).map_err(|e| format!("{}: {e}", path.display()))?;
    let ext = external_log(path, &sb)?;
    let text = if json {
        let mut j = superblock_json(&sb);
        if let (Some(e), Value::Object(m)) = (&ext, &mut j) {
            m.insert("external_log".into(), e.clone());
        }
        let mut s = serde_json::to_string_pretty(&j).map_err(|e| e.to_string())?;
        s.push('\n');
        s
    } else {
        // What held the filesystem, when something did.
        let chain = crate::xfs::read::FileReader::open(path)
            .ok()
            .and_then(|r| crate::xfs::container::open(r, super::partition_choice()).ok())
            .map(|(_, l)| l.chain())
            .filter(|c| c != "plain");
        let mut t = chain.map_or_else(String::new, |c| format!("container: {c}\n"));
        t.push_str(&superblock_text(&sb));
        if let Some(e) = &ext {
            t.push_str(&external_log_text(e));
        }
        t
    };
    super::print(&text)
}

/// `info --json`: field names without `sb_`, numbers as numbers, then
/// `version`, `features`, `crc_ok` and `problems`.
pub fn superblock_json(sb: &Superblock) -> Value {
    let mut m = Map::new();
    for f in sb.fields() {
        let v = serde_json::to_value(&f.value).unwrap_or(Value::Null);
        m.insert(f.name.to_string(), v);
    }
    m.insert("version".into(), Value::from(sb.version()));
    m.insert("features".into(), Value::from(sb.features()));
    m.insert(
        "crc_ok".into(),
        sb.crc_ok().map(Value::Bool).unwrap_or(Value::Null),
    );
    m.insert(
        "problems".into(),
        serde_json::to_value(&sb.problems).unwrap_or(Value::Null),
    );
    Value::Object(m)
}

fn superblock_text(sb: &Superblock) -> String {
    let fields = sb.fields();
    let rows: Vec<(String, String, String)> = fields
        .iter()
        .map(|f| {
            let mut v = f.value.to_string();
            if let Some(n) = &f.note {
                v = format!("{v} ({n})");
            }
            (f.name.to_string(), v, f.meaning.to_string())
        })
        .collect();
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let w1 = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).min(48);
    let mut s = format!("superblock (version {})\n", sb.version());
    for (name, value, meaning) in rows {
        s.push_str(&format!("  {name:<w0$}  {value:<w1$}  {meaning}\n"));
    }
    s.push_str(&format!("features: {}\n", sb.features().join(", ")));
    match sb.crc_ok() {
        Some(true) => s.push_str("crc: correct\n"),
        Some(false) => s.push_str("crc: BAD\n"),
        None => s.push_str("crc: none (version 4) or not checked\n"),
    }
    for p in &sb.problems {
        s.push_str(&format!("{:?}: sb_{}: {}\n", p.severity, p.field, p.message).to_lowercase());
    }
    s
}
