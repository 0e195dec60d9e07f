//! `xfs-explorer hex`: the bytes at a daddr with every field of the
//! structure there (kernel names, offsets, sizes, values, meanings), and
//! `xfs-explorer ag AGNO --map`: what occupies each block of an AG.

use std::path::Path;

use super::{open_fs, print};
use crate::xfs::types::AgNumber;

pub fn run(image: &Path, daddr: u64, log: bool, json: bool) -> Result<(), String> {
    let fs = open_fs(image)?;
    let h = if log {
        let Some(dev) = &fs.logdev else {
            return Err(format!(
                "{}: --log reads the external log device: give it with --logdev FILE",
                image.display()
            ));
        };
        crate::xfs::hexmap::describe_log(dev, daddr)
    } else {
        crate::xfs::hexmap::describe(&fs, daddr)
    }
    .map_err(|e| format!("{}: {e}", image.display()))?;
    if json {
        let v = serde_json::json!({
            "daddr": h.daddr,
            "structure": h.structure,
            "len": h.bytes.len(),
            "fields": h.fields,
            "notes": h.notes,
        });
        return print(&format!("{v}\n"));
    }
    let mut s = format!(
        "daddr {}: {} ({} bytes)\n",
        h.daddr,
        h.structure,
        h.bytes.len()
    );
    if !h.explanation.is_empty() {
        s.push_str(&format!("{}\n", h.explanation));
    }
    for n in &h.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s.push_str(&format!(
        "{:>6} {:>5}  {:<28} {:<40} meaning\n",
        "offset", "size", "field", "value"
    ));
    for f in &h.fields {
        s.push_str(&format!(
            "{:>6} {:>5}  {:<28} {:<40} {}\n",
            f.offset, f.size, f.name, f.value, f.meaning
        ));
    }
    for (i, row) in h.bytes.chunks(16).enumerate() {
        let hex: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
        let text: String = row
            .iter()
            .map(|c| {
                if c.is_ascii_graphic() || *c == b' ' {
                    char::from(*c)
                } else {
                    '.'
                }
            })
            .collect();
        s.push_str(&format!(
            "{:06x}  {:<47}  {text}\n",
            i.saturating_mul(16),
            hex.join(" ")
        ));
    }
    print(&s)
}

pub fn map(image: &Path, agno: u32, json: bool) -> Result<(), String> {
    let fs = open_fs(image)?;
    let m = crate::xfs::agmap::ag_map(&fs, AgNumber(agno))
        .map_err(|e| format!("{}: {e}", image.display()))?;
    if json {
        let v = serde_json::to_value(&m).map_err(|e| e.to_string())?;
        return print(&format!("{v}\n"));
    }
    let mut s = format!(
        "AG {}: {} blocks of {} bytes, daddr {}\n",
        m.agno, m.length, m.blocksize, m.daddr
    );
    for r in &m.ranges {
        s.push_str(&format!(
            "{:>10} {:>8}  {:<12} {}\n",
            r.agbno,
            r.len,
            serde_json::to_value(r.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            r.label
        ));
    }
    for p in &m.problems {
        s.push_str(&format!("problem: {p}\n"));
    }
    print(&s)
}
