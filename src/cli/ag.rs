//! `xfs-explorer ag`: allocation-group headers and btree summaries, or the
//! records / node keys of one btree as JSON lines.

use crate::xfs::ag::btree::{
    owner_name, owner_signed, walk, AgTree, BlockContent, Key, NodeEntry, Record, RmapKey,
};
use crate::xfs::ag::{self, AgSummary, HeaderCtx, TreeStats, TreeSummary};
use crate::xfs::fs::Fs;
use crate::xfs::sb::Field;
use crate::xfs::types::AgNumber;
use serde_json::{json, Map, Value};
use std::ops::ControlFlow;
use std::path::Path;

/// What to print.
pub struct Options<'a> {
    pub agno: Option<u32>,
    pub json: bool,
    /// Dump the leaf records of this tree as JSON lines.
    pub records: Option<&'a str>,
    /// Dump the node keys and pointers of this tree as JSON lines.
    pub keys: Option<&'a str>,
    /// Stop after this many lines per AG.
    pub limit: Option<u64>,
}

pub fn run(path: &Path, o: &Options<'_>) -> Result<(), String> {
    let fs = super::open_fs(path)?;
    let ags: Vec<AgNumber> = match o.agno {
        Some(n) if n >= fs.geo.agcount => {
            return Err(format!(
                "AG {n} does not exist: the filesystem has {} AGs (0 to {})",
                fs.geo.agcount,
                fs.geo.agcount.saturating_sub(1)
            ))
        }
        Some(n) => vec![AgNumber(n)],
        None => (0..fs.geo.agcount).map(AgNumber).collect(),
    };
    if let Some(name) = o.records.or(o.keys) {
        let tree = AgTree::from_name(name).ok_or_else(|| {
            format!(
                "unknown btree '{name}': use one of {}",
                AgTree::ALL.map(AgTree::name).join(", ")
            )
        })?;
        return dump(&fs, &ags, tree, o.records.is_some(), o.limit);
    }
    let mut summaries = Vec::with_capacity(ags.len());
    for agno in &ags {
        summaries.push(ag::summarize(&fs, *agno).map_err(|e| e.to_string())?);
    }
    let text = if o.json {
        let v = if o.agno.is_some() {
            summaries.first().map(ag_json).unwrap_or(Value::Null)
        } else {
            json!({
                "agcount": fs.geo.agcount,
                "ags": summaries.iter().map(ag_json).collect::<Vec<_>>(),
            })
        };
        let mut s = serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?;
        s.push('\n');
        s
    } else {
        let mut s = String::new();
        for a in &summaries {
            s.push_str(&ag_text(a, o.agno.is_some()));
        }
        s
    };
    super::print(&text)
}

fn fields_json(fields: &[Field], m: &mut Map<String, Value>) {
    for f in fields {
        m.insert(
            f.name.to_string(),
            serde_json::to_value(&f.value).unwrap_or(Value::Null),
        );
    }
}

fn problems_json(ps: &[crate::xfs::sb::Problem]) -> Value {
    Value::from(
        ps.iter()
            .map(|p| format!("{}: {}", p.field, p.message))
            .collect::<Vec<_>>(),
    )
}

/// One AG as JSON: `agf`, `agi`, `agfl` with the field names xfs_db
/// prints (numbers as numbers), `btrees` with one summary per tree, and
/// every `problems` found.
pub fn ag_json(s: &AgSummary) -> Value {
    let mut m = Map::new();
    m.insert("agno".into(), Value::from(s.agno.0));
    match &s.agf {
        Some(a) => {
            let mut h = Map::new();
            fields_json(&a.fields(), &mut h);
            h.insert("crc_ok".into(), json!(a.crc_ok()));
            h.insert("problems".into(), problems_json(&a.problems));
            m.insert("agf".into(), Value::Object(h));
        }
        None => {
            m.insert("agf".into(), Value::Null);
            m.insert("agf_error".into(), json!(s.agf_error));
        }
    }
    match &s.agi {
        Some(a) => {
            let mut h = Map::new();
            fields_json(&a.fields(), &mut h);
            h.insert("unlinked".into(), json!(a.unlinked));
            h.insert("crc_ok".into(), json!(a.crc_ok()));
            h.insert("problems".into(), problems_json(&a.problems));
            m.insert("agi".into(), Value::Object(h));
        }
        None => {
            m.insert("agi".into(), Value::Null);
            m.insert("agi_error".into(), json!(s.agi_error));
        }
    }
    match &s.agfl {
        Some(a) => {
            let mut h = Map::new();
            fields_json(&a.fields(), &mut h);
            h.insert("bno".into(), json!(a.bno));
            h.insert(
                "free_list".into(),
                s.free_list
                    .as_ref()
                    .map_or(Value::Null, |f| json!(f.blocks)),
            );
            h.insert("crc_ok".into(), json!(a.crc_ok()));
            let mut ps: Vec<String> = a
                .problems
                .iter()
                .map(|p| format!("{}: {}", p.field, p.message))
                .collect();
            if let Some(f) = &s.free_list {
                ps.extend(f.problems.iter().cloned());
            }
            h.insert("problems".into(), json!(ps));
            m.insert("agfl".into(), Value::Object(h));
        }
        None => {
            m.insert("agfl".into(), Value::Null);
            m.insert("agfl_error".into(), json!(s.agfl_error));
        }
    }
    let mut trees = Map::new();
    for t in &s.trees {
        trees.insert(t.tree.name().into(), tree_json(t));
    }
    m.insert("btrees".into(), Value::Object(trees));
    m.insert("problems".into(), json!(s.all_problems()));
    Value::Object(m)
}

fn tree_json(t: &TreeSummary) -> Value {
    let mut m = Map::new();
    m.insert("btree".into(), json!(t.tree.btree_name()));
    m.insert("root".into(), json!(t.root));
    m.insert("levels".into(), json!(t.levels));
    m.insert("blocks".into(), json!(t.blocks));
    m.insert("blocks_per_level".into(), json!(t.blocks_per_level));
    m.insert("records".into(), json!(t.records));
    m.insert("keys".into(), json!(t.keys));
    if let Value::Object(stats) = serde_json::to_value(t.stats).unwrap_or(Value::Null) {
        m.extend(stats);
    }
    if matches!(t.stats, TreeStats::Inodes { .. }) {
        m.insert("chunks_with_free".into(), json!(t.chunks_with_free));
    }
    m.insert("problems".into(), json!(t.problems));
    Value::Object(m)
}

fn value_text(f: &Field) -> String {
    let mut v = f.value.to_string();
    if let Some(n) = &f.note {
        v = format!("{v} ({n})");
    }
    v
}

fn table(title: &str, fields: &[Field], out: &mut String) {
    out.push_str(&format!("  {title}\n"));
    let w0 = fields.iter().map(|f| f.name.len()).max().unwrap_or(0);
    let rows: Vec<(String, String)> = fields
        .iter()
        .map(|f| (value_text(f), f.meaning.to_string()))
        .collect();
    let w1 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).min(40);
    for (f, (v, m)) in fields.iter().zip(rows) {
        out.push_str(&format!("    {:<w0$}  {v:<w1$}  {m}\n", f.name));
    }
}

fn crc_word(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "crc ok",
        Some(false) => "CRC BAD",
        None => "no crc",
    }
}

fn stats_text(t: &TreeSummary) -> String {
    match t.stats {
        TreeStats::Free {
            free_blocks,
            longest,
        } => format!("{free_blocks} free blocks, longest {longest}"),
        TreeStats::Inodes {
            chunks,
            sparse_chunks,
            inodes,
            free,
        } => format!(
            "{inodes} inodes in {chunks} chunks ({sparse_chunks} sparse), {free} free"
        ),
        TreeStats::Rmap { mapped_blocks } => format!("{mapped_blocks} blocks mapped"),
        TreeStats::Refcount {
            shared_extents,
            shared_blocks,
            cow_extents,
            cow_blocks,
        } => format!(
            "{shared_blocks} shared blocks in {shared_extents} extents, {cow_blocks} CoW staging blocks in {cow_extents} extents"
        ),
    }
}

fn ag_text(s: &AgSummary, full: bool) -> String {
    let mut out = format!("AG {}\n", s.agno.0);
    match &s.agf {
        Some(a) => out.push_str(&format!(
            "  AGF  {}  length {}  freeblks {}  longest {}  flcount {}  btreeblks {}\n",
            crc_word(a.crc_ok()),
            a.length,
            a.freeblks,
            a.longest,
            a.flcount,
            a.btreeblks
        )),
        None => out.push_str(&format!(
            "  AGF  unreadable: {}\n",
            s.agf_error.as_deref().unwrap_or("?")
        )),
    }
    match &s.agi {
        Some(a) => out.push_str(&format!(
            "  AGI  {}  count {}  freecount {}  newino {}  unlinked lists in use {}\n",
            crc_word(a.crc_ok()),
            a.count,
            a.freecount,
            if a.newino == u32::MAX {
                "null".to_string()
            } else {
                a.newino.to_string()
            },
            a.unlinked_heads().len()
        )),
        None => out.push_str(&format!(
            "  AGI  unreadable: {}\n",
            s.agi_error.as_deref().unwrap_or("?")
        )),
    }
    match (&s.agfl, &s.free_list) {
        (Some(a), Some(f)) => out.push_str(&format!(
            "  AGFL {}  {} slots  free list: {}\n",
            crc_word(a.crc_ok()),
            a.bno.len(),
            if f.blocks.is_empty() {
                "empty".to_string()
            } else {
                f.blocks
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(" ")
            }
        )),
        (Some(a), None) => out.push_str(&format!(
            "  AGFL {}  {} slots\n",
            crc_word(a.crc_ok()),
            a.bno.len()
        )),
        (None, _) => out.push_str(&format!(
            "  AGFL unreadable: {}\n",
            s.agfl_error.as_deref().unwrap_or("?")
        )),
    }
    out.push_str("  btree       root  levels  blocks  records\n");
    for t in &s.trees {
        out.push_str(&format!(
            "  {:<10} {:>5}  {:>6}  {:>6}  {:>7}  {}\n",
            t.tree.btree_name(),
            t.root,
            t.levels,
            t.blocks,
            t.records,
            stats_text(t)
        ));
    }
    if full {
        if let Some(a) = &s.agf {
            table("AGF fields", &a.fields(), &mut out);
        }
        if let Some(a) = &s.agi {
            table("AGI fields", &a.fields(), &mut out);
        }
        if let Some(a) = &s.agfl {
            table("AGFL fields", &a.fields(), &mut out);
        }
    }
    let problems = s.all_problems();
    if problems.is_empty() {
        out.push_str("  problems: none\n");
    } else {
        out.push_str(&format!("  problems ({}):\n", problems.len()));
        for p in problems {
            out.push_str(&format!("    {p}\n"));
        }
    }
    out
}

/// A record as a JSON object, with the field names xfs_db prints.
pub fn record_json(r: &Record) -> Map<String, Value> {
    let v = match r {
        Record::Alloc(a) => json!({"startblock": a.startblock, "blockcount": a.blockcount}),
        Record::Inobt(c) => json!({
            "startino": c.startino,
            "holemask": c.holemask,
            "count": c.count,
            "freecount": c.freecount,
            "free": c.free,
            "sparse": c.sparse,
        }),
        Record::Rmap(m) => json!({
            "startblock": m.startblock,
            "blockcount": m.blockcount,
            "owner": owner_signed(m.owner),
            "owner_name": owner_name(m.owner),
            "offset": m.offset,
            "extentflag": m.unwritten,
            "attrfork": m.attr_fork,
            "bmbtblock": m.bmbt_block,
        }),
        Record::Refcount(c) => json!({
            "startblock": c.startblock,
            "blockcount": c.blockcount,
            "refcount": c.refcount,
            "cowflag": c.cow,
        }),
    };
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn rmap_key_json(k: &RmapKey, suffix: &str, m: &mut Map<String, Value>) {
    m.insert(format!("startblock{suffix}"), json!(k.startblock));
    m.insert(format!("owner{suffix}"), json!(owner_signed(k.owner)));
    m.insert(format!("offset{suffix}"), json!(k.offset));
    m.insert(format!("attrfork{suffix}"), json!(k.attr_fork));
    m.insert(format!("bmbtblock{suffix}"), json!(k.bmbt_block));
}

/// A node entry as a JSON object (key fields named as xfs_db prints them,
/// then `ptr`).
pub fn entry_json(e: &NodeEntry) -> Map<String, Value> {
    let mut m = Map::new();
    match &e.key {
        Key::Alloc(a) => {
            m.insert("startblock".into(), json!(a.startblock));
            m.insert("blockcount".into(), json!(a.blockcount));
        }
        Key::Inobt { startino } => {
            m.insert("startino".into(), json!(startino));
        }
        Key::Rmap { low, high } => {
            rmap_key_json(low, "", &mut m);
            rmap_key_json(high, "_hi", &mut m);
        }
        Key::Refcount { startblock, cow } => {
            m.insert("startblock".into(), json!(startblock));
            m.insert("cowflag".into(), json!(cow));
        }
    }
    m.insert("ptr".into(), json!(e.ptr));
    m
}

fn dump(
    fs: &Fs<super::Disk>,
    ags: &[AgNumber],
    tree: AgTree,
    records: bool,
    limit: Option<u64>,
) -> Result<(), String> {
    use std::io::Write;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut io_error: Option<String> = None;
    for &agno in ags {
        let ctx = HeaderCtx::new(fs, agno).map_err(|e| e.to_string())?;
        if !ctx.features.trees().contains(&tree) {
            return Err(format!(
                "this filesystem has no {} (feature not enabled)",
                tree.btree_name()
            ));
        }
        let root = match tree {
            AgTree::Ino | AgTree::Fino => ag::read_agi(fs, &ctx)
                .map_err(|e| e.to_string())?
                .tree_root(tree, &ctx),
            _ => ag::read_agf(fs, &ctx)
                .map_err(|e| e.to_string())?
                .tree_root(tree, &ctx),
        };
        let Some(root) = root else {
            eprintln!(
                "xfs-explorer: AG {}: the header holding the {} root is unusable",
                agno.0,
                tree.btree_name()
            );
            continue;
        };
        let mut n = 0u64;
        let max = limit.unwrap_or(u64::MAX);
        let report = walk(fs, &root, &mut |b| {
            let mut lines: Vec<Map<String, Value>> = Vec::new();
            match (&b.content, records) {
                (BlockContent::Leaf(recs), true) => {
                    lines.extend(recs.iter().map(record_json));
                }
                (BlockContent::Node(entries), false) => {
                    for (i, e) in entries.iter().enumerate() {
                        let mut m = Map::new();
                        m.insert("level".into(), json!(b.level));
                        m.insert("block".into(), json!(b.agbno.0));
                        m.insert("index".into(), json!(i.saturating_add(1)));
                        m.extend(entry_json(e));
                        lines.push(m);
                    }
                }
                _ => {}
            }
            for body in lines {
                if n >= max {
                    return ControlFlow::Break(());
                }
                let mut m = Map::new();
                m.insert("agno".into(), json!(agno.0));
                m.insert("btree".into(), json!(tree.name()));
                m.extend(body);
                let line = Value::Object(m).to_string();
                if let Err(e) = writeln!(out, "{line}") {
                    io_error = Some(e.to_string());
                    return ControlFlow::Break(());
                }
                n = n.saturating_add(1);
            }
            ControlFlow::Continue(())
        });
        if let Some(e) = io_error.take() {
            return Err(e);
        }
        for p in &report.problems {
            eprintln!("xfs-explorer: warning: {p}");
        }
    }
    out.flush().map_err(|e| e.to_string())
}
