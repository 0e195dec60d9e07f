//! `xfs-explorer replay`: log recovery in memory, its report, and the
//! export of a recovered image; and `--replay` for every other command.

use crate::xfs::fs::Fs;
use crate::xfs::image::Image;
use crate::xfs::read::FileReader;
use crate::xfs::replay;
use std::path::Path;

/// `--replay`: the image with the replayed state laid over it.
pub fn replayed_image(path: &Path, img: Image<FileReader>) -> Result<Image<FileReader>, String> {
    let at = |e: crate::xfs::Error| format!("{}: {e}", path.display());
    let fs = Fs::open(img).map_err(at)?;
    let r =
        replay::replay(&fs, &mut |_| {}).map_err(|e| format!("{}: replay: {e}", path.display()))?;
    for u in &r.report.unfinished_intents {
        eprintln!(
            "xfs-explorer: note: unfinished {} intent {:#x} (LSN {}) is not finished by this replay: {}",
            u.kind.name(),
            u.id,
            u.lsn,
            u.work.join("; ")
        );
    }
    let mut img = fs.img;
    img.set_overlay(r.overlay);
    img.set_use_overlay(true);
    Ok(img)
}

pub fn run(path: &Path, output: Option<&Path>, json: bool, _diff: bool) -> Result<(), String> {
    let reader = FileReader::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let fs = Fs::open(Image::new(reader)).map_err(|e| format!("{}: {e}", path.display()))?;
    let start = std::time::Instant::now();
    let r =
        replay::replay(&fs, &mut |_| {}).map_err(|e| format!("{}: replay: {e}", path.display()))?;
    let took = start.elapsed();
    if output.is_some() {
        return Err("export is not written yet".into());
    }
    if json {
        let mut s = serde_json::to_string_pretty(&r.report).map_err(|e| e.to_string())?;
        s.push('\n');
        super::print(&s)
    } else {
        let rep = &r.report;
        super::print(&format!(
            "replayed {} transactions from {} records in {:.3} s; {} sectors recovered\n{:#?}\n",
            rep.transactions,
            rep.records,
            took.as_secs_f64(),
            rep.overlay_sectors,
            rep.counts
        ))
    }
}
