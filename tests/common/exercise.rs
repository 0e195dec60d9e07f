//! Every reading command of the command line, run through the library on
//! one image held in memory: `info`, `ag`, `ls -R` (inodes, symlink
//! targets, file contents, xattrs), `log` (decoded with every detail and
//! written as JSON), `replay` (the replay, the export plan, a sample of
//! the recovered image and the diff), `--replay ls -R` and `ops` (with
//! the forkoff distribution). Used by the mutation run (`tests/mutation.rs`)
//! and the fuzz targets (`fuzz/`): neither may panic, hang or grow without
//! bound on any input, and a command that fails must say what and where.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use xfs_explorer::xfs::container;
use xfs_explorer::xfs::fs::Fs;
use xfs_explorer::xfs::image::Image;
use xfs_explorer::xfs::log::{self, DecodeOptions};
use xfs_explorer::xfs::read::{ReadAt, ReadError};
use xfs_explorer::xfs::{ag, attr, inode::FileType, ops, replay, sb, types::AgNumber, Error};

/// An image in memory with some byte ranges replaced and maybe cut short:
/// the base is shared, so a mutation costs only its own bytes.
#[derive(Clone)]
pub struct Mutated {
    pub base: Arc<Vec<u8>>,
    /// The image's length (at most the base's: a cut image).
    pub len: u64,
    /// `(offset, bytes)` laid over the base in order.
    pub patches: Arc<Vec<(u64, Vec<u8>)>>,
}

impl Mutated {
    pub fn new(base: Arc<Vec<u8>>) -> Self {
        let len = base.len() as u64;
        Mutated {
            base,
            len,
            patches: Arc::new(Vec::new()),
        }
    }

    /// The whole mutated image as one buffer (for reproducers).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.len as usize];
        self.read_exact_at(0, &mut v).unwrap();
        v
    }
}

impl ReadAt for Mutated {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|e| *e <= self.len)
            .ok_or_else(|| ReadError(format!("read at {offset} past the end")))?;
        buf.copy_from_slice(&self.base[offset as usize..end as usize]);
        for (at, bytes) in self.patches.iter() {
            let p_end = at + bytes.len() as u64;
            if p_end <= offset || *at >= end {
                continue;
            }
            let lo = (*at).max(offset);
            let hi = p_end.min(end);
            buf[(lo - offset) as usize..(hi - offset) as usize]
                .copy_from_slice(&bytes[(lo - at) as usize..(hi - at) as usize]);
        }
        Ok(())
    }
}

/// What one command did.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub command: &'static str,
    /// The error the command failed with, if it failed.
    pub error: Option<String>,
    /// Errors that do not say what and where (should stay empty).
    pub unplaced: Vec<String>,
    /// Problems reported along the way (the command went on).
    pub problems: usize,
    /// How long it took.
    pub seconds: f64,
}

/// An error names a structure, a place and what was wrong. The core's
/// error type has a structure and a location in every corruption variant;
/// this checks that they are filled in.
pub fn placed(e: &Error) -> bool {
    match e {
        Error::Corrupt {
            structure, detail, ..
        }
        | Error::Unsupported {
            structure, detail, ..
        } => !structure.is_empty() && !detail.trim().is_empty(),
        Error::OutOfBounds { structure, .. } => !structure.is_empty(),
        Error::Io { message, .. } => !message.is_empty(),
        Error::NotXfs { .. } | Error::ExternalLogMissing { .. } => true,
        Error::Partition(m) => !m.is_empty(),
    }
}

fn outcome(command: &'static str, r: Result<usize, Error>) -> Outcome {
    match r {
        Ok(problems) => Outcome {
            command,
            error: None,
            unplaced: Vec::new(),
            problems,
            seconds: 0.0,
        },
        Err(e) => Outcome {
            command,
            unplaced: if placed(&e) {
                Vec::new()
            } else {
                vec![e.to_string()]
            },
            error: Some(e.to_string()),
            problems: 0,
            seconds: 0.0,
        },
    }
}

type Vol = container::Volume<Mutated>;

fn open_image(m: &Mutated) -> Result<Image<Vol>, Error> {
    let (v, _) = container::open(m.clone(), None)?;
    Ok(Image::new(v))
}

fn open_fs(m: &Mutated) -> Result<Fs<Vol>, Error> {
    Fs::open(open_image(m)?)
}

const NOW: replay::RecoveryTime = replay::RecoveryTime {
    sec: 1_800_000_000,
    nsec: 0,
};

/// `info`: the superblock, every field, its JSON view.
pub fn info(m: &Mutated) -> Outcome {
    outcome(
        "info",
        (|| {
            let img = open_image(m)?;
            let s = sb::read_superblock(&img)?;
            let _ = s.fields();
            let _ = serde_json::to_string(&s.view());
            let _ = s.features();
            let _ = s.geometry();
            Ok(0)
        })(),
    )
}

/// `ag`: every AG's headers and btree summaries (at most 64 AGs).
pub fn ags(m: &Mutated) -> Outcome {
    outcome(
        "ag",
        (|| {
            let fs = open_fs(m)?;
            let mut problems = 0;
            for agno in 0..fs.geo.agcount.min(64) {
                match ag::summarize(&fs, AgNumber(agno)) {
                    Ok(s) => {
                        problems += s.all_problems().len();
                        let _ = serde_json::to_string(&s);
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok(problems)
        })(),
    )
}

/// Bytes of each file's contents the listings read.
pub const FILE_BYTES: u64 = 1 << 20;

/// `ls -R /`, with the first MiB of each file's contents and every xattr
/// value read as `ls --json` reads them.
pub fn ls_fs<R: ReadAt>(fs: &Fs<R>) -> Result<usize, Error> {
    let root = fs.lookup_path(b"/")?;
    let w = fs.walk(b"/", &root);
    let mut problems = w.errors.len();
    for item in &w.items {
        let inode = match fs.inode(item.ino) {
            Ok(i) => i,
            Err(_) => {
                problems += 1;
                continue;
            }
        };
        problems += inode.verify.problems.len();
        // The first MiB of a file: `ls -R` reads no contents, `ls --json`
        // and `cat` read all of a file as its size says, and a sparse
        // file may say exabytes.
        let read = match inode.file_type() {
            FileType::File => fs
                .read_file_range(&inode, 0, FILE_BYTES, &mut |_| Ok(()))
                .is_ok(),
            FileType::Symlink => fs.symlink_target(&inode).is_ok(),
            _ => true,
        };
        if !read {
            problems += 1;
        }
        match fs.read_attrs(&inode) {
            Ok(listing) => {
                problems += listing.problems.len();
                for x in attr::linux_xattrs(&listing) {
                    if fs.linux_xattr_value(&inode, &x).is_err() {
                        problems += 1;
                    }
                }
            }
            Err(_) => problems += 1,
        }
    }
    Ok(problems)
}

pub fn ls(m: &Mutated) -> Outcome {
    outcome("ls -R", open_fs(m).and_then(|fs| ls_fs(&fs)))
}

/// `log --json --detail`.
pub fn log_cmd(m: &Mutated) -> Outcome {
    outcome(
        "log",
        (|| {
            let fs = open_fs(m)?;
            let d = log::decode(&fs, DecodeOptions::DETAIL)?;
            let ctx = log::ItemContext::of(&fs, DecodeOptions::DETAIL);
            let _ = log::json::write_log_json(&mut std::io::sink(), &d, Some(&ctx));
            Ok(d.problems.len() + d.crc_mismatches.len())
        })(),
    )
}

/// `replay --json` and `--replay ls -R /`: the replay and the export
/// plan (made once: both commands run the same code to get there), the
/// recovered image's first MiB, the diff, and the listing of the replayed
/// state.
pub fn replay_cmds(m: &Mutated) -> [Outcome; 2] {
    let fs = match open_fs(m) {
        Ok(fs) => fs,
        Err(e) => {
            let o = outcome("replay", Err(e));
            let mut o2 = o.clone();
            o2.command = "--replay ls -R";
            return [o, o2];
        }
    };
    let planned = (|| {
        let r = replay::replay(&fs, &mut |_| {})?;
        replay::export::plan(&fs, r, NOW)
    })();
    let plan = match planned {
        Ok(p) => p,
        Err(e) => {
            let o = outcome("replay", Err(e));
            let mut o2 = o.clone();
            o2.command = "--replay ls -R";
            return [o, o2];
        }
    };
    let rep = (|| {
        let rec = replay::export::Recovered {
            fs: &fs,
            overlay: &plan.overlay,
            log: plan.log,
        };
        let mut buf = vec![0u8; (1u64 << 20).min(rec.len()) as usize];
        rec.read_at(0, &mut buf)?;
        let mut fs = open_fs(m)?;
        fs.img.set_overlay(plan.overlay.clone());
        fs.img.set_use_overlay(true);
        let d = replay::diff::diff(&mut fs, 100_000);
        let _ = serde_json::to_string(&d);
        let _ = serde_json::to_string(&plan.mount);
        Ok(d.problems.len())
    })();
    let t = std::time::Instant::now();
    let ls = (|| {
        let mut img = open_image(m)?;
        img.set_overlay(plan.overlay.clone());
        img.set_use_overlay(true);
        let fs = Fs::open(img)?;
        ls_fs(&fs)
    })();
    let mut o2 = outcome("--replay ls -R", ls);
    o2.seconds = t.elapsed().as_secs_f64();
    [outcome("replay", rep), o2]
}

/// `ops --json` and `forkoff`.
pub fn ops_cmd(m: &Mutated) -> Outcome {
    outcome(
        "ops",
        (|| {
            let fs = open_fs(m)?;
            let d = ops::forkoff::distribution(&fs, &mut |_| {});
            let _ = serde_json::to_string(&d);
            let r = ops::analyze(&fs, &mut |_| {})?;
            let _ = serde_json::to_string(&r);
            Ok(0)
        })(),
    )
}

/// Every command, in the order above.
pub fn all(m: &Mutated) -> Vec<Outcome> {
    let cmds: [fn(&Mutated) -> Outcome; 5] = [info, ags, ls, log_cmd, ops_cmd];
    let mut out: Vec<Outcome> = cmds
        .iter()
        .map(|c| {
            let t = std::time::Instant::now();
            let mut o = c(m);
            o.seconds = t.elapsed().as_secs_f64();
            o
        })
        .collect();
    let t = std::time::Instant::now();
    let [mut r, l] = replay_cmds(m);
    r.seconds = t.elapsed().as_secs_f64() - l.seconds;
    out.push(r);
    out.push(l);
    out
}
