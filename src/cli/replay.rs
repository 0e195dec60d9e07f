//! `xfs-explorer replay`: log recovery in memory, its report, and the
//! export of a recovered image; and `--replay` for every other command.

use super::Disk;
use crate::xfs::fs::Fs;
use crate::xfs::image::Image;
use crate::xfs::replay;
use std::path::Path;

/// The time the recovery runs at: `SOURCE_DATE_EPOCH` (seconds, with up
/// to nine decimals) when it is set, for images that come out the same on
/// every run; else now.
pub fn recovery_time() -> replay::RecoveryTime {
    if let Some(t) = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| parse_epoch(v.trim()))
    {
        return t;
    }
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    replay::RecoveryTime {
        sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        nsec: d.subsec_nanos(),
    }
}

/// "SECONDS" or "SECONDS.FRACTION" (at most nine digits).
fn parse_epoch(v: &str) -> Option<replay::RecoveryTime> {
    let (s, f) = v.split_once('.').unwrap_or((v, ""));
    let sec = s.parse::<i64>().ok()?;
    if f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let nsec = if f.is_empty() {
        0
    } else {
        format!("{f:0<9}").parse::<u32>().ok()?
    };
    Some(replay::RecoveryTime { sec, nsec })
}

/// `--replay`: the image with the replayed state laid over it.
pub fn replayed_image(path: &Path, img: Image<Disk>) -> Result<Image<Disk>, String> {
    let fs = super::fs_of(path, img)?;
    let (_, plan) = replay::replay_and_mount(&fs, recovery_time(), &mut |_| {})
        .map_err(|e| format!("{}: replay: {e}", path.display()))?;
    let left = plan
        .mount
        .as_ref()
        .map(|m| m.intents_left.clone())
        .unwrap_or_default();
    for u in &left {
        eprintln!(
            "xfs-explorer: note: unfinished {} intent {:#x} (LSN {}) is not finished by this replay: {}",
            u.kind.name(),
            u.id,
            u.lsn,
            u.work.join("; ")
        );
    }
    if let Some(m) = &plan.mount {
        for c in &m.cow.not_freed {
            eprintln!(
                "xfs-explorer: note: CoW staging extent AG {} block {} ({} blocks) is not freed by this replay: {}",
                c.extent.agno, c.extent.agbno, c.extent.len, c.reason
            );
        }
        for u in &m.unlinked {
            eprintln!(
                "xfs-explorer: note: inode {} is on an unlinked list; the kernel frees it at mount, this replay does not",
                u.ino
            );
        }
    }
    let mut img = fs.img;
    img.set_overlay(plan.overlay);
    img.set_use_overlay(true);
    Ok(img)
}

/// Where `replay` writes: the recovered image, and the recovered log
/// device of a filesystem with an external log.
pub struct Outputs<'a> {
    pub image: Option<&'a Path>,
    pub logdev: Option<&'a Path>,
}

/// The device and inode of an existing file (through symlinks).
fn file_id(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

/// Refuse outputs that would write over an input (the image or the log
/// device), compared as files (device and inode), not only by name: a
/// symlink or a hard link to the input is the input. Outputs must also be
/// new files (`create_new` refuses the rest when they are opened) and
/// not one file twice.
fn refuse_overwrite(image: &Path, outs: &Outputs<'_>) -> Result<(), String> {
    let mut inputs = vec![("the input image", image)];
    if let Some(l) = super::logdev_path() {
        inputs.push(("the log device", l));
    }
    let outputs = [("-o", outs.image), ("--logdev-output", outs.logdev)];
    for (flag, out) in outputs {
        let Some(out) = out else { continue };
        let Some(id) = file_id(out) else {
            continue;
        };
        for (what, input) in &inputs {
            if file_id(input) == Some(id) {
                return Err(format!(
                    "{flag} {}: that is {what} {} (the same file: device {}, inode {}); the input is never written",
                    out.display(),
                    input.display(),
                    id.0,
                    id.1
                ));
            }
        }
        return Err(format!(
            "{flag} {}: the file exists; replay writes a new file",
            out.display()
        ));
    }
    if let (Some(a), Some(b)) = (outs.image, outs.logdev) {
        if a == b {
            return Err(format!(
                "-o and --logdev-output name one file ({}): the data device and the log device need one each",
                a.display()
            ));
        }
    }
    Ok(())
}

pub fn run(path: &Path, outs: &Outputs<'_>, json: bool, want_diff: bool) -> Result<(), String> {
    let output = outs.image;
    refuse_overwrite(path, outs)?;
    let fs = super::fs_of(path, super::open_image_for_replay(path)?)?;
    if output.is_some() {
        match (fs.has_external_log(), outs.logdev) {
            (true, None) => {
                return Err(format!(
                    "{}: the log is on an external device: -o writes the data device only with --logdev-output FILE beside it, for the recovered log device (the log as it is would make the kernel replay it again over the recovered data)",
                    path.display()
                ))
            }
            (false, Some(l)) => {
                return Err(format!(
                    "{}: the log is internal: there is no log device to write to {}",
                    path.display(),
                    l.display()
                ))
            }
            _ => {}
        }
    }
    let start = std::time::Instant::now();
    let mut last = std::time::Instant::now();
    let show = output.is_some() && !json;
    let r = replay::replay(&fs, &mut |p: &replay::Progress| {
        if show && last.elapsed().as_millis() >= 500 {
            last = std::time::Instant::now();
            eprintln!(
                "replay: pass {} {}/{} log blocks, {} records, {} transactions, {} items",
                p.pass, p.blocks_done, p.blocks_total, p.records, p.transactions, p.items
            );
        }
    })
    .map_err(|e| format!("{}: replay: {e}", path.display()))?;
    let replay_secs = start.elapsed().as_secs_f64();
    let report = r.report.clone();
    let plan = replay::export::plan(&fs, r, recovery_time())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut written = None;
    let mut log_written = None;
    if let Some(out) = output {
        let t = std::time::Instant::now();
        let n = write_image(&fs, &plan, out, false)?;
        written = Some((n, t.elapsed().as_secs_f64()));
        if let Some(lout) = outs.logdev {
            log_written = Some(write_image(&fs, &plan, lout, true)?);
        }
    }
    // The changes, read from both sides of the overlay.
    let changes = if want_diff || json {
        let mut fs = fs;
        fs.img.set_overlay(plan.overlay.clone());
        fs.img.set_use_overlay(true);
        Some(replay::diff::diff(&mut fs, 1_000_000))
    } else {
        None
    };
    if json {
        #[derive(serde::Serialize)]
        struct Out<'a> {
            replay: &'a replay::ReplayReport,
            mount: &'a Option<replay::mount::MountChanges>,
            changes: &'a Option<replay::diff::ReplayDiff>,
            replay_seconds: f64,
            output: Option<String>,
            bytes_written: Option<u64>,
            logdev_output: Option<String>,
            logdev_bytes_written: Option<u64>,
        }
        let out = Out {
            replay: &report,
            mount: &plan.mount,
            changes: &changes,
            replay_seconds: replay_secs,
            output: output.map(|p| p.display().to_string()),
            bytes_written: written.map(|w| w.0),
            logdev_output: outs.logdev.map(|p| p.display().to_string()),
            logdev_bytes_written: log_written,
        };
        // Streamed: the changes of a big log are large.
        let stdout = std::io::stdout();
        let mut w = std::io::BufWriter::new(stdout.lock());
        serde_json::to_writer_pretty(&mut w, &out).map_err(|e| e.to_string())?;
        use std::io::Write;
        w.write_all(b"\n").map_err(|e| e.to_string())?;
        return w.flush().map_err(|e| e.to_string());
    }
    let mut t = String::new();
    let rep = &report;
    if rep.clean {
        t.push_str("the log is clean: nothing to replay\n");
    } else {
        t.push_str(&format!(
            "log tail {} head {}: {} records, {} transactions replayed ({} uncommitted, discarded), {} items, in {replay_secs:.3} s\n",
            rep.tail, rep.head, rep.records, rep.transactions, rep.uncommitted, rep.items
        ));
        let c = &rep.counts;
        t.push_str(&format!(
            "buffers: {} replayed, {} skipped (newer on disk), {} cancelled, {} cancel items, {} inode buffers ({} unlinked pointers)\n",
            c.buffers_replayed, c.buffers_skipped_lsn, c.buffers_cancelled, c.cancel_items, c.inode_buffers, c.unlinked_pointers
        ));
        t.push_str(&format!(
            "inodes: {} replayed, {} skipped (newer on disk), {} cancelled; icreate: {} replayed, {} cancelled\n",
            c.inodes_replayed, c.inodes_skipped_lsn, c.inodes_cancelled, c.icreates_replayed, c.icreates_cancelled
        ));
        t.push_str(&format!(
            "{} sectors recovered ({} buffer writes, {} stamped with their transaction's LSN)\n",
            rep.overlay_sectors, c.buffer_writes, c.buffers_stamped
        ));
    }
    for line in replay::notes::lines(rep, plan.mount.as_ref()) {
        t.push_str(&line);
        t.push('\n');
    }
    if let Some(d) = &changes {
        t.push_str(&diff_text(d));
    }
    if let (Some(out), Some((n, secs))) = (output, written) {
        t.push_str(&format!(
            "wrote {} ({n} bytes of data, in {secs:.3} s)\n",
            out.display()
        ));
    }
    if let (Some(out), Some(n)) = (outs.logdev, log_written) {
        t.push_str(&format!(
            "wrote {} (the recovered log device, {n} bytes of data)\n",
            out.display()
        ));
    }
    super::print(&t)
}

/// Write the recovered image (or with `log_device`, the recovered external
/// log device) to a new file, skipping all-zero chunks (the file is sparse
/// where the input reads as zeros). Returns the bytes actually written.
fn write_image(
    fs: &Fs<Disk>,
    plan: &replay::export::Plan,
    out: &Path,
    log_device: bool,
) -> Result<u64, String> {
    use std::os::unix::fs::FileExt;
    let rec = replay::export::Recovered {
        fs,
        overlay: &plan.overlay,
        log: plan.log,
    };
    let werr = |e: std::io::Error| format!("{}: {e}", out.display());
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(out)
        .map_err(werr)?;
    const CHUNK: u64 = 1 << 20;
    let len = if log_device {
        rec.log_device_len().unwrap_or(0)
    } else {
        rec.len()
    };
    let mut buf = vec![0u8; usize::try_from(CHUNK).unwrap_or(1 << 20)];
    let mut off = 0u64;
    let mut written = 0u64;
    let mut last = std::time::Instant::now();
    while off < len {
        let n = usize::try_from(CHUNK.min(len - off)).unwrap_or(0);
        let b = &mut buf[..n];
        if log_device {
            rec.read_log_at(off, b)
        } else {
            rec.read_at(off, b)
        }
        .map_err(|e| format!("reading the recovered image at byte {off}: {e}"))?;
        if !all_zero(b) {
            file.write_all_at(b, off).map_err(werr)?;
            written += n as u64;
        }
        off += n as u64;
        if last.elapsed().as_millis() >= 500 {
            last = std::time::Instant::now();
            eprintln!("export: {off} of {len} bytes");
        }
    }
    file.set_len(len).map_err(werr)?;
    file.sync_all().map_err(werr)?;
    Ok(written)
}

/// Whether every byte of `b` is zero: 64 bytes at a time, OR-ed together
/// (a loop the compiler turns into vector instructions, where a
/// byte-by-byte early exit is not).
fn all_zero(b: &[u8]) -> bool {
    let mut chunks = b.chunks_exact(64);
    for c in &mut chunks {
        if c.iter().fold(0u8, |acc, x| acc | x) != 0 {
            return false;
        }
    }
    chunks.remainder().iter().all(|x| *x == 0)
}

/// `replay --diff` as text.
fn diff_text(d: &replay::diff::ReplayDiff) -> String {
    let mut t = String::new();
    t.push_str(&format!(
        "changed by replay: {} inodes, {} directory entries ({} paths), {} extended attributes, {} block ranges{}\n",
        d.inodes.len(),
        d.entries.len(),
        d.paths.len(),
        d.xattrs.len(),
        d.blocks.len(),
        if d.truncated { " (inodes cut at the limit)" } else { "" }
    ));
    for i in &d.inodes {
        let fields: Vec<String> = i
            .fields
            .iter()
            .map(|f| format!("{} {} -> {}", f.field, f.before, f.after))
            .collect();
        t.push_str(&format!(
            "inode {} {} ({}){}{}\n",
            i.ino,
            i.change,
            i.file_type,
            if fields.is_empty() { "" } else { ": " },
            fields.join(", ")
        ));
    }
    for e in &d.entries {
        let sign = if e.change == "added" { '+' } else { '-' };
        t.push_str(&format!(
            "entry {sign} dir {} {:?} -> inode {}\n",
            e.dir, e.name, e.ino
        ));
    }
    for p in &d.paths {
        let sign = if p.change == "added" { '+' } else { '-' };
        t.push_str(&format!("path {sign} {} (inode {})\n", p.path, p.ino));
    }
    for x in &d.xattrs {
        t.push_str(&format!("xattr {} inode {} {}\n", x.change, x.ino, x.name));
    }
    for p in &d.problems {
        t.push_str(&format!("problem: {p}\n"));
    }
    for b in &d.blocks {
        t.push_str(&format!(
            "blocks: daddr {} +{} sectors ({})\n",
            b.daddr, b.sectors, b.what
        ));
    }
    t
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn all_zero_sees_one_byte_anywhere() {
        assert!(all_zero(&[]));
        assert!(all_zero(&vec![0u8; 1000]));
        for at in [0, 1, 63, 64, 127, 960, 999] {
            let mut b = vec![0u8; 1000];
            b[at] = 0x80;
            assert!(!all_zero(&b), "byte {at}");
        }
    }

    #[test]
    fn source_date_epoch_takes_seconds_and_a_fraction() {
        let t = |v: &str| parse_epoch(v).map(|r| (r.sec, r.nsec));
        assert_eq!(t("1796169826"), Some((1_796_169_826, 0)));
        assert_eq!(t("1796169826.000572260"), Some((1_796_169_826, 572_260)));
        assert_eq!(t("12.5"), Some((12, 500_000_000)));
        assert_eq!(t("-1.25"), Some((-1, 250_000_000)));
        for bad in ["", "x", "1.x", "1.1234567890", "1e9", "1.-5"] {
            assert_eq!(t(bad), None, "{bad}");
        }
    }
}
