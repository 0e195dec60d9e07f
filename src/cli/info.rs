//! `xfs-explorer info`: the primary superblock.

use crate::xfs::sb::{read_superblock, Superblock};
use serde_json::{Map, Value};
use std::path::Path;

use super::open;

pub fn run(path: &Path, json: bool) -> Result<(), String> {
    let img = open(path)?;
    let sb = read_superblock(&img).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = if json {
        let mut s =
            serde_json::to_string_pretty(&superblock_json(&sb)).map_err(|e| e.to_string())?;
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
