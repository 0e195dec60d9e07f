//! `xfs-explorer getfattr`: the extended attributes of one file, like
//! `getfattr -d -m - -e hex` (every namespace Linux lists), or one value
//! raw. Parent pointers are shown as comments: they are not Linux xattrs.

use std::io::Write;
use std::path::Path;

use crate::xfs::attr::{linux_xattrs, AttrNamespace};
use crate::xfs::tree::normalize;

use super::ls::bytes_text;
use super::open_fs;

pub fn run(
    image: &Path,
    path: &std::ffi::OsStr,
    name: Option<&std::ffi::OsStr>,
    json: bool,
) -> Result<(), String> {
    let fs = open_fs(image)?;
    let want = normalize(path.as_encoded_bytes());
    let at = |e: crate::xfs::Error| format!("{}: {}: {e}", image.display(), bytes_text(&want));
    let inode = fs.lookup_path(&want).map_err(at)?;
    let listing = fs.read_attrs(&inode).map_err(at)?;
    let xattrs = linux_xattrs(&listing);
    if json {
        let hex = |v: &[u8]| v.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let mut items = Vec::new();
        let mut problems: Vec<String> = listing.problems.iter().map(|e| e.to_string()).collect();
        for x in &xattrs {
            match fs.linux_xattr_value(&inode, x) {
                Ok(v) => items.push(serde_json::json!({
                    "name": bytes_text(&x.name),
                    "value_hex": hex(&v),
                    "value_text": std::str::from_utf8(&v).ok(),
                    "len": v.len(),
                })),
                Err(e) => problems.push(format!("{}: {e}", bytes_text(&x.name))),
            }
        }
        let parents: Vec<serde_json::Value> = listing
            .entries
            .iter()
            .filter(|e| matches!(e.namespace, AttrNamespace::Parent))
            .map(|e| match e.parent_pointer() {
                Some((ino, gen)) => {
                    serde_json::json!({"name": bytes_text(&e.name), "parent": ino.0, "gen": gen})
                }
                None => serde_json::json!({"name": bytes_text(&e.name), "parent": null}),
            })
            .collect();
        let v = serde_json::json!({
            "file": bytes_text(&want),
            "ino": inode.ino.0,
            "xattrs": items,
            "parent_pointers": parents,
            "incomplete": listing.incomplete,
            "problems": problems,
        });
        return super::print(&format!("{v}\n"));
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let w = |out: &mut dyn Write, b: &[u8]| out.write_all(b).map_err(|e| format!("stdout: {e}"));
    if let Some(name) = name {
        let name = name.as_encoded_bytes();
        let x = xattrs.iter().find(|x| x.name == name).ok_or_else(|| {
            format!(
                "{}: {}: {}: no such attribute",
                image.display(),
                bytes_text(&want),
                bytes_text(name)
            )
        })?;
        let v = fs.linux_xattr_value(&inode, x).map_err(at)?;
        w(&mut out, &v)?;
        return out.flush().map_err(|e| format!("stdout: {e}"));
    }
    let mut failed = 0usize;
    let rel = want.strip_prefix(b"/").unwrap_or(&want);
    let shown = if rel.is_empty() { &b"."[..] } else { rel };
    w(
        &mut out,
        format!("# file: {}\n", bytes_text(shown)).as_bytes(),
    )?;
    for p in &listing.problems {
        failed = failed.saturating_add(1);
        eprintln!("xfs-explorer: {}: {p}", bytes_text(&want));
    }
    for x in &xattrs {
        match fs.linux_xattr_value(&inode, x) {
            Ok(v) => {
                let mut line = bytes_text(&x.name);
                if !v.is_empty() {
                    line.push_str("=0x");
                    for b in &v {
                        line.push_str(&format!("{b:02x}"));
                    }
                }
                line.push('\n');
                w(&mut out, line.as_bytes())?;
            }
            Err(e) => {
                failed = failed.saturating_add(1);
                eprintln!(
                    "xfs-explorer: {}: {}: {e}",
                    bytes_text(&want),
                    bytes_text(&x.name)
                );
            }
        }
    }
    for e in &listing.entries {
        match e.namespace {
            AttrNamespace::Parent => {
                let text = match e.parent_pointer() {
                    Some((ino, gen)) => format!(
                        "# parent pointer: \"{}\" in directory inode {} (generation {gen})\n",
                        bytes_text(&e.name),
                        ino.0
                    ),
                    None => format!(
                        "# parent pointer: \"{}\" (value of {} bytes, not a parent record)\n",
                        bytes_text(&e.name),
                        e.value.len()
                    ),
                };
                w(&mut out, text.as_bytes())?;
            }
            AttrNamespace::Unknown(bits) => {
                let text = format!(
                    "# attribute \"{}\" in unknown namespace bits {bits:#04x}\n",
                    bytes_text(&e.name)
                );
                w(&mut out, text.as_bytes())?;
            }
            _ => {}
        }
    }
    if listing.incomplete > 0 {
        let text = format!("# {} incomplete attribute(s) skipped\n", listing.incomplete);
        w(&mut out, text.as_bytes())?;
    }
    w(&mut out, b"\n")?;
    out.flush().map_err(|e| format!("stdout: {e}"))?;
    if failed > 0 {
        return Err(format!("{}: {failed} error(s)", image.display()));
    }
    Ok(())
}
