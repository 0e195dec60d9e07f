//! `xfs-explorer`: the core on the command line, with `--json` everywhere.

use crate::xfs::container::{self, Volume};
use crate::xfs::image::Image;
use crate::xfs::read::FileReader;
use clap::{Parser, Subcommand};
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
    /// Read the filesystem as the kernel would see it after mounting:
    /// the log replayed in memory (the image is not written).
    #[arg(long, global = true)]
    replay: bool,
    /// Open this partition of a partitioned disk image (numbered as its
    /// table numbers them: GPT entries from 1, MBR primaries 1-4, logical
    /// partitions from 5). Without it, the one XFS partition is opened.
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    partition: Option<u32>,
    /// The external log device of a filesystem whose log is on another
    /// device (mkfs.xfs -l logdev=...; sb_logstart 0): the file holding it
    /// (opened read-only). Used by log, replay, ops, info and --replay.
    #[arg(long, global = true, value_name = "FILE")]
    logdev: Option<PathBuf>,
}

/// Set once from `--logdev` before any command opens its image.
static LOGDEV: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Set when the image opened is a metadump (it holds no file contents).
pub(crate) static METADUMP: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Set once from `--partition` before any command opens its image.
static PARTITION: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The reader every command opens: the file, under any qcow2 layers and
/// partition window.
pub(crate) type Disk = Volume<FileReader>;

/// Set once from `--replay` before any command opens its image.
static REPLAY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

mod ag;
mod cat;
mod getfattr;
mod hex;
mod info;
mod inode;
mod log;
mod ls;
mod ops;
mod partitions;
mod replay;

/// One variant per command; each command lives in its own module.
#[derive(Subcommand)]
enum Command {
    /// What holds the filesystem: qcow2 layers, the partition table and
    /// its partitions (number, type, start, size, XFS or not).
    Partitions {
        /// The image file (opened read-only).
        image: PathBuf,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show the primary superblock: every field, the features, the CRC.
    Info {
        /// The image file (opened read-only).
        image: PathBuf,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Allocation groups: AGF, AGI, AGFL and a summary of every btree, or
    /// the records (`--records TREE`) or node keys (`--keys TREE`) of one
    /// btree as JSON lines. TREE is bno, cnt, ino, fino, rmap or refcount.
    Ag {
        /// The image file (opened read-only).
        image: PathBuf,
        /// Only this AG (default: all).
        agno: Option<u32>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Print the leaf records of one btree as JSON lines.
        #[arg(long, value_name = "TREE", conflicts_with = "keys")]
        records: Option<String>,
        /// Print the node keys and pointers of one btree as JSON lines.
        #[arg(long, value_name = "TREE")]
        keys: Option<String>,
        /// With --records/--keys: at most this many lines per AG.
        #[arg(long)]
        limit: Option<u64>,
        /// What occupies each block of AG AGNO: headers, free extents,
        /// inode chunks, btree blocks, AGFL blocks, the log, rmap owners
        /// and shared ranges.
        #[arg(long, requires = "agno", conflicts_with_all = ["records", "keys"])]
        map: bool,
    },
    /// The bytes of the sector or block at DADDR with every field of the
    /// structure there: kernel name, offset, size, value, meaning.
    Hex {
        /// The image file (opened read-only).
        image: PathBuf,
        /// A 512-byte sector address on the data device (on the log
        /// device with --log).
        daddr: u64,
        /// DADDR is a sector of the external log device given with
        /// --logdev: a log record header there is decoded.
        #[arg(long)]
        log: bool,
        /// Print one JSON object instead of a table and a dump.
        #[arg(long)]
        json: bool,
    },
    /// Show one inode: every core field, the forks and their extents, where
    /// the attr fork starts and what that says, the CRC.
    Inode {
        /// The image file (opened read-only).
        image: PathBuf,
        /// The inode number.
        ino: u64,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Write a file's content (or a symlink's target) to stdout.
    Cat {
        /// The image file (opened read-only).
        image: PathBuf,
        /// An inode number, or a path from the root directory.
        target: String,
        /// Take TARGET as an inode number only.
        #[arg(long)]
        ino: bool,
    },
    /// List a directory (or one file), or with -R a whole subtree, like
    /// `ls -l`; `--json` prints one object per line.
    Ls {
        /// The image file (opened read-only).
        image: PathBuf,
        /// A path from the root directory (default `/`); symlinks are not
        /// followed.
        path: Option<std::ffi::OsString>,
        /// The whole subtree, PATH itself included, sorted by path.
        #[arg(short = 'R', long)]
        recursive: bool,
        /// One JSON object per line: path, ino, type, mode, nlink, uid, gid,
        /// size, sha256 (files), target (symlinks), rdev (devices),
        /// xattrs_sha256.
        #[arg(long)]
        json: bool,
        /// Walk the metadata directory tree (filesystems made with
        /// `-m metadir=1`: realtime groups, quota files) instead of the
        /// files: PATH is from its root (`sb_metadirino`).
        #[arg(short = 'm', long)]
        metadir: bool,
    },
    /// The journal: head, tail, clean or dirty, every record's CRC, every
    /// transaction and item, each logged buffer's dirty bitmap as runs of
    /// 128-byte chunks, intents without done items, and totals.
    Log {
        /// The image file (opened read-only).
        image: PathBuf,
        /// Print one JSON object: clean, head, tail, records, transactions.
        #[arg(long)]
        json: bool,
        /// Also name the fields (and directory entries) each buffer run
        /// covers, and show the logged inode cores.
        #[arg(long)]
        detail: bool,
        /// Text: one line per transaction, no items.
        #[arg(long)]
        brief: bool,
    },
    /// The file operations the log carries (create, mkdir, mknod, symlink,
    /// link, unlink, rmdir, rename, setxattr, removexattr, write, truncate,
    /// setattr) and the transactions each cost the kernel, per kind and per
    /// checkpoint, with the attribute fork offsets of the disk's state (and,
    /// with --replay, of the replayed one; the log analysed is the image's
    /// either way).
    Ops {
        /// The image file (opened read-only).
        image: PathBuf,
        /// Print one JSON object: operations, transactions, by_kind,
        /// checkpoints, operation_list, inodes, forkoff, forkoff_replayed.
        #[arg(long)]
        json: bool,
    },
    /// Where the attribute fork starts (`di_forkoff`) over every inode in
    /// use: by value, by file type and by what it says about how the fork
    /// came to be.
    Forkoff {
        /// The image file (opened read-only).
        image: PathBuf,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Show the extended attributes of a file like `getfattr -d -m - -e hex`,
    /// or write one value (NAME, e.g. `user.color`) raw to stdout.
    Getfattr {
        /// The image file (opened read-only).
        image: PathBuf,
        /// A path from the root directory.
        path: std::ffi::OsString,
        /// One attribute's full Linux name.
        name: Option<std::ffi::OsString>,
        /// One JSON object: the file, each xattr (Linux name, value as hex
        /// and as text when it is UTF-8), parent pointers and problems.
        #[arg(long, conflicts_with = "name")]
        json: bool,
    },
    /// Replay the log as the kernel's recovery does, in memory, and report
    /// what it changed; with `-o OUT` write a new image: the input with the
    /// log replayed, the superblock counters the kernel recomputes at
    /// mount, and a clean log, so the kernel mounts it without recovery.
    Replay {
        /// The image file (opened read-only, never written).
        image: PathBuf,
        /// Write the recovered image here (a new file; must not exist).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// With an external log (--logdev) and -o: write the recovered,
        /// cleared log device here (a new file; must not exist).
        #[arg(long, value_name = "FILE", requires = "output")]
        logdev_output: Option<PathBuf>,
        /// Print one JSON object: the replay report and what changed.
        #[arg(long)]
        json: bool,
        /// List what replay changed: inodes and their fields, directory
        /// entries, extended attributes, blocks.
        #[arg(long)]
        diff: bool,
    },
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(l) = cli.logdev {
        let _ = LOGDEV.set(l);
    }
    REPLAY.store(cli.replay, std::sync::atomic::Ordering::Relaxed);
    PARTITION.store(
        cli.partition.unwrap_or(0),
        std::sync::atomic::Ordering::Relaxed,
    );
    let result = match cli.command {
        Command::Partitions { image, json } => partitions::run(&image, json),
        Command::Info { image, json } => info::run(&image, json),
        Command::Ag {
            image,
            agno,
            json,
            map: true,
            ..
        } => hex::map(&image, agno.unwrap_or(0), json),
        Command::Ag {
            image,
            agno,
            json,
            records,
            keys,
            limit,
            map: false,
        } => ag::run(
            &image,
            &ag::Options {
                agno,
                json,
                records: records.as_deref(),
                keys: keys.as_deref(),
                limit,
            },
        ),
        Command::Inode { image, ino, json } => inode::run(&image, ino, json),
        Command::Hex {
            image,
            daddr,
            log,
            json,
        } => hex::run(&image, daddr, log, json),
        Command::Cat { image, target, ino } => cat::run(&image, &target, ino),
        Command::Ls {
            image,
            path,
            recursive,
            json,
            metadir,
        } => ls::run(&image, path.as_deref(), recursive, json, metadir),
        Command::Log {
            image,
            json,
            detail,
            brief,
        } => log::run(
            &image,
            &log::Options {
                json,
                detail,
                brief,
            },
        ),
        Command::Ops { image, json } => ops::run(&image, json),
        Command::Forkoff { image, json } => ops::run_forkoff(&image, json),
        Command::Getfattr {
            image,
            path,
            name,
            json,
        } => getfattr::run(&image, &path, name.as_deref(), json),
        Command::Replay {
            image,
            output,
            logdev_output,
            json,
            diff,
        } => replay::run(
            &image,
            &replay::Outputs {
                image: output.as_deref(),
                logdev: logdev_output.as_deref(),
            },
            json,
            diff,
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(mut msg) => {
            if msg.contains("no log device was given") {
                msg.push_str(" (give it with --logdev FILE)");
            }
            eprintln!("xfs-explorer: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// The partition asked for with `--partition`.
pub(crate) fn partition_choice() -> Option<u32> {
    match PARTITION.load(std::sync::atomic::Ordering::Relaxed) {
        0 => None,
        n => Some(n),
    }
}

/// The file's filesystem volume: qcow2 layers and partition tables found
/// and looked through, the partition chosen (`--partition`, or the one XFS
/// partition).
pub(crate) fn open_volume(path: &Path) -> Result<Disk, String> {
    let reader = FileReader::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    container::open(reader, partition_choice())
        .map(|(v, layout)| {
            if layout.metadump.is_some() {
                METADUMP.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            v
        })
        .map_err(|e| match e {
            crate::xfs::Error::Partition(_) if partition_choice().is_none() => format!(
                "{}: {e} (--partition N; `xfs-explorer partitions {}` lists them)",
                path.display(),
                path.display()
            ),
            e => format!("{}: {e}", path.display()),
        })
}

/// The image as it is on disk (no replay), through its containers.
pub(crate) fn open_raw_image(path: &Path) -> Result<Image<Disk>, String> {
    Ok(Image::new(open_volume(path)?))
}

/// Chunks of 64 KiB the image cache keeps for a replay (64 MiB): replay
/// reads the metadata its log touches again and again (a log of 379 MiB
/// touched 115 MiB of it, read 37 times over through the default 16 MiB),
/// and each read from the host is a copy out of the page cache.
pub(crate) const REPLAY_CACHE_CHUNKS: usize = 1024;

/// [`open_raw_image`] with the image cache of a replay.
pub(crate) fn open_image_for_replay(path: &Path) -> Result<Image<Disk>, String> {
    Ok(Image::with_cache(
        open_volume(path)?,
        Image::<Disk>::NATIVE_CHUNK,
        REPLAY_CACHE_CHUNKS,
    ))
}

pub(crate) fn open(path: &Path) -> Result<Image<Disk>, String> {
    if REPLAY.load(std::sync::atomic::Ordering::Relaxed) {
        return replay::replayed_image(path, open_image_for_replay(path)?);
    }
    open_raw_image(path)
}

/// Write `text` to stdout.
pub(crate) fn print(text: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).map_err(|e| e.to_string())
}

/// Open an image and its filesystem geometry.
pub(crate) fn open_fs(path: &Path) -> Result<crate::xfs::fs::Fs<Disk>, String> {
    fs_of(path, open(path)?)
}

/// The log device given with `--logdev`, if any.
pub(crate) fn logdev_path() -> Option<&'static Path> {
    LOGDEV.get().map(PathBuf::as_path)
}

/// The filesystem on `img` (read from `path`), with the log device of
/// `--logdev` beside it. A log device given for a filesystem whose log is
/// internal is refused: it is surely not what was meant.
pub(crate) fn fs_of(path: &Path, img: Image<Disk>) -> Result<crate::xfs::fs::Fs<Disk>, String> {
    let fs = crate::xfs::fs::Fs::open(img).map_err(|e| format!("{}: {e}", path.display()))?;
    let Some(l) = logdev_path() else {
        // A metadump may hold the external log device itself.
        return Ok(crate::xfs::container::with_embedded_log(fs));
    };
    if !fs.has_external_log() {
        return Err(format!(
            "{}: the log is internal (sb_logstart {}), but --logdev {} was given",
            path.display(),
            fs.sb.logstart,
            l.display()
        ));
    }
    let reader = FileReader::open(l).map_err(|e| format!("{}: {e}", l.display()))?;
    Ok(fs.with_logdev(Image::new(Volume::whole(reader))))
}
