//! `xfs-explorer partitions`: what holds the filesystem (qcow2 layers, the
//! partition table and its partitions) and which partition is opened.

use crate::xfs::container::{self, Layout};
use crate::xfs::read::FileReader;
use serde::Serialize;
use std::path::Path;

/// `partitions --json`.
#[derive(Serialize)]
struct PartitionsJson<'a> {
    /// `plain`, or the layers like `qcow2 v3 > GPT > partition 1`.
    chain: String,
    #[serde(flatten)]
    layout: &'a Layout,
    /// Why no partition is opened without `--partition` (several or no XFS
    /// partitions).
    choose: Option<String>,
}

pub fn run(path: &Path, json: bool) -> Result<(), String> {
    let at = |e: crate::xfs::Error| format!("{}: {e}", path.display());
    let reader = FileReader::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let disk = container::detect(reader).map_err(at)?;
    let choice = super::partition_choice();
    let (layout, choose) = match disk.choose(choice) {
        Ok((_, layout)) => (layout, None),
        Err(e) if choice.is_none() => (disk.layout().clone(), Some(e.to_string())),
        Err(e) => return Err(at(e)),
    };
    let text = if json {
        let j = PartitionsJson {
            chain: layout.chain(),
            layout: &layout,
            choose,
        };
        let mut s = serde_json::to_string_pretty(&j).map_err(|e| e.to_string())?;
        s.push('\n');
        s
    } else {
        text(&layout, choose.as_deref())
    };
    super::print(&text)
}

fn text(layout: &Layout, choose: Option<&str>) -> String {
    let mut s = format!("container: {}\n", layout.chain());
    for q in &layout.qcow2 {
        s.push_str(&format!(
            "qcow2 version {}: virtual size {} bytes, {}-byte clusters{}, compression {}, file {} bytes\n",
            q.version,
            q.virtual_size,
            q.cluster_size,
            if q.extended_l2 { " (extended L2)" } else { "" },
            q.compression,
            q.file_size
        ));
        for n in &q.notes {
            s.push_str(&format!("  note: {n}\n"));
        }
    }
    if let Some(m) = &layout.metadump {
        let flag = |v: Option<bool>, yes: &str, no: &str| match v {
            Some(true) => yes.to_string(),
            Some(false) => no.to_string(),
            None => "unknown".to_string(),
        };
        s.push_str(&format!(
            "metadump version {}: {}, {} log, {} metadata blocks; holds {} of the filesystem's {} bytes, file {} bytes\n",
            m.version,
            flag(m.obfuscated, "obfuscated", "not obfuscated"),
            flag(m.dirty_log, "dirty", "clean"),
            flag(m.full_blocks, "full", "zeroed"),
            m.bytes_held,
            m.fs_size,
            m.file_size
        ));
        for n in &m.notes {
            s.push_str(&format!("  note: {n}\n"));
        }
    }
    let Some(t) = &layout.table else {
        s.push_str("no partition table\n");
        return s;
    };
    s.push_str(&format!(
        "{}: {}-byte sectors, disk {} bytes, id {}",
        t.scheme.name(),
        t.sector_size,
        t.disk_size,
        t.id
    ));
    if let (Some(a), Some(b)) = (t.first_usable_lba, t.last_usable_lba) {
        s.push_str(&format!(", usable LBAs {a}..={b}"));
    }
    s.push('\n');
    let rows: Vec<[String; 8]> = t
        .partitions
        .iter()
        .map(|p| {
            [
                p.number.to_string(),
                p.start_lba.to_string(),
                p.sectors.to_string(),
                p.start.to_string(),
                p.size.to_string(),
                format!("{} ({})", p.type_name, p.type_id),
                p.name.clone(),
                if p.xfs {
                    "XFS".to_string()
                } else {
                    "-".to_string()
                },
            ]
        })
        .collect();
    let head = [
        "#",
        "start",
        "sectors",
        "start_byte",
        "bytes",
        "type",
        "name",
        "fs",
    ];
    let mut widths: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut l = String::from(" ");
        for (c, w) in cells.iter().zip(widths.iter()) {
            l.push_str(&format!(" {c:<w$}"));
        }
        l.trim_end().to_string()
    };
    s.push_str(&line(&head.map(String::from)));
    s.push('\n');
    for (r, p) in rows.iter().zip(t.partitions.iter()) {
        let mut l = line(r);
        if layout.partition == Some(p.number) {
            l.push_str("  <- opened");
        }
        s.push_str(&l);
        s.push('\n');
        for problem in &p.problems {
            s.push_str(&format!("    partition {}: {problem}\n", p.number));
        }
    }
    for n in &t.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    if let Some(c) = choose {
        s.push_str(&format!("no partition opened: {c}\n"));
    }
    s
}
