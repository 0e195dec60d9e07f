//! One error type for the whole core. Every corruption error names the
//! structure, where it is, and what was wrong, in words meant for people.

use serde::Serialize;
use std::fmt;

/// Where in the image something was found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Location {
    /// A byte range of the image file.
    Bytes { offset: u64, len: u64 },
    /// A 512-byte sector address (daddr) on the data device.
    Daddr { daddr: u64 },
    /// A byte offset inside a structure that starts at `daddr`.
    InStructure { daddr: u64, byte: u64 },
    /// An inode as a whole, named by its number (which may not map to the
    /// disk at all).
    Inode { ino: u64 },
    /// A filesystem block (AG-packed) that does not map to the disk.
    FsBlock { fsb: u64 },
    /// A block of an allocation group that does not map to the disk.
    AgBlock { agno: u32, agbno: u32 },
    /// An allocation group as a whole.
    Ag { agno: u32 },
    /// A path being looked up.
    Path { path: String },
    /// A 512-byte sector of the external log device.
    LogDevice { daddr: u64 },
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Bytes { offset, len } => {
                write!(f, "bytes {offset}..{}", offset.saturating_add(*len))
            }
            Location::Daddr { daddr } => write!(f, "daddr {daddr}"),
            Location::InStructure { daddr, byte } => write!(f, "daddr {daddr}, byte {byte}"),
            Location::Inode { ino } => write!(f, "inode {ino}"),
            Location::FsBlock { fsb } => write!(f, "filesystem block {fsb}"),
            Location::AgBlock { agno, agbno } => write!(f, "AG {agno} block {agbno}"),
            Location::Ag { agno } => write!(f, "AG {agno}"),
            Location::Path { path } => write!(f, "{path}"),
            Location::LogDevice { daddr } => write!(f, "log device daddr {daddr}"),
        }
    }
}

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum Error {
    /// The reader failed (the file went away, a browser read failed...).
    #[error("read error at byte {offset} ({len} bytes): {message}")]
    Io {
        offset: u64,
        len: u64,
        message: String,
    },
    /// A read would go past the end of the image.
    #[error(
        "{structure} at byte {offset} ({len} bytes) lies beyond the end of the image ({image_len} bytes)"
    )]
    OutOfBounds {
        structure: &'static str,
        offset: u64,
        len: u64,
        image_len: u64,
    },
    /// The first superblock does not carry the XFS magic number.
    #[error("not an XFS filesystem: magic is {found:#010x} ({found_text}) at byte 0, expected 0x58465342 (\"XFSB\")")]
    NotXfs { found: u32, found_text: String },
    /// A structure holds a value that makes reading on wrong.
    #[error("{structure} at {location}: {detail}")]
    Corrupt {
        structure: &'static str,
        location: Location,
        detail: String,
    },
    /// The image holds a partition table and the partition to open is not
    /// clear (several or no XFS partitions, or a bad number asked for).
    #[error("{0}")]
    Partition(String),
    /// The log is on an external device (`sb_logstart` 0) and none was
    /// given to read it from.
    #[error("the log is on an external device (the superblock's sb_logstart is 0; a log of {logblocks} blocks of {blocksize} bytes) and no log device was given")]
    ExternalLogMissing { logblocks: u32, blocksize: u32 },
    /// The image uses something this tool does not read.
    #[error("{structure} at {location}: unsupported: {detail}")]
    Unsupported {
        structure: &'static str,
        location: Location,
        detail: String,
    },
}

impl Error {
    pub fn corrupt(structure: &'static str, location: Location, detail: impl Into<String>) -> Self {
        Error::Corrupt {
            structure,
            location,
            detail: detail.into(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
