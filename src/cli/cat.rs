//! `xfs-explorer cat`: a file's content (or a symlink's target) to stdout.

use crate::xfs::fs::Fs;
use crate::xfs::read::ReadAt;
use crate::xfs::types::Ino;
use std::io::Write;
use std::path::Path;

use super::open_fs;

/// Turn the command-line target into an inode number: a number is an inode
/// number; anything else is a path, looked up from the root directory.
pub fn resolve_target<R: ReadAt>(fs: &Fs<R>, target: &str, force_ino: bool) -> Result<Ino, String> {
    if let Ok(n) = target.parse::<u64>() {
        return Ok(Ino(n));
    }
    if force_ino {
        return Err(format!("{target}: not an inode number"));
    }
    fs.lookup_path(target.as_bytes())
        .map(|i| i.ino)
        .map_err(|e| format!("{target}: {e}"))
}

pub fn run(path: &Path, target: &str, force_ino: bool) -> Result<(), String> {
    let fs = open_fs(path)?;
    let ino = resolve_target(&fs, target, force_ino)?;
    let inode = fs
        .inode(ino)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if super::METADUMP.load(std::sync::atomic::Ordering::Relaxed)
        && inode.file_type() == crate::xfs::inode::FileType::File
        && inode.core.size > 0
    {
        return Err(format!(
            "{}: inode {}: its {} bytes of content are not in the metadump (xfs_metadump copies metadata only; they would read as zeros)",
            path.display(),
            ino.0,
            inode.core.size
        ));
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut write_err = None;
    let res = fs.read_file(&inode, &mut |chunk| {
        out.write_all(chunk).map_err(|e| {
            write_err = Some(e.to_string());
            crate::xfs::Error::Io {
                offset: 0,
                len: 0,
                message: "stdout".into(),
            }
        })
    });
    if let Some(e) = write_err {
        return Err(format!("stdout: {e}"));
    }
    res.map_err(|e| format!("{}: {e}", path.display()))?;
    out.flush().map_err(|e| format!("stdout: {e}"))
}
