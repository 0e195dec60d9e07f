//! `xfs-explorer`: the core on the command line, with `--json` everywhere.

use crate::xfs::image::Image;
use crate::xfs::read::FileReader;
use crate::xfs::sb::{read_superblock, Superblock};
use clap::{Parser, Subcommand};
use serde_json::{Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "xfs-explorer",
    version,
    about = "Look inside an XFS filesystem image and its journal"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show the primary superblock: every field, the features, the CRC.
    Info {
        /// The image file (opened read-only).
        image: PathBuf,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info { image, json } => info(&image, json),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("xfs-explorer: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn open(path: &Path) -> Result<Image<FileReader>, String> {
    let reader = FileReader::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Image::new(reader))
}

fn info(path: &Path, json: bool) -> Result<(), String> {
    let img = open(path)?;
    let sb = read_superblock(&img).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = std::io::stdout().lock();
    let text = if json {
        let mut s =
            serde_json::to_string_pretty(&superblock_json(&sb)).map_err(|e| e.to_string())?;
        s.push('\n');
        s
    } else {
        superblock_text(&sb)
    };
    out.write_all(text.as_bytes()).map_err(|e| e.to_string())
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
