//! One newtype per XFS address space. Conversions between them need the
//! geometry and are explicit; mixing an AG-packed block number with a linear
//! one is the classic XFS bug, so the compiler keeps them apart.

use serde::Serialize;
use std::fmt;

/// An allocation group number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct AgNumber(pub u32);

/// A block number relative to the start of its allocation group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct AgBlock(pub u32);

/// A packed filesystem block number: `(agno << agblklog) | agbno`. Not a
/// linear offset: packed numbers have gaps when `agblocks` is not a power of two.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct FsBlock(pub u64);

/// A 512-byte sector address on the data device ("basic block").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Daddr(pub u64);

/// An inode number: `(agno << (agblklog + inopblog)) | agino`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Ino(pub u64);

/// An inode number relative to its allocation group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct AgIno(pub u32);

/// A log sequence number: the cycle in the high 32 bits, the 512-byte block
/// within the log in the low 32 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Lsn {
    pub cycle: u32,
    pub block: u32,
}

impl Lsn {
    pub fn from_raw(raw: u64) -> Self {
        Lsn {
            cycle: u32::try_from(raw >> 32).unwrap_or(u32::MAX),
            block: u32::try_from(raw & 0xFFFF_FFFF).unwrap_or(u32::MAX),
        }
    }

    pub fn raw(self) -> u64 {
        (u64::from(self.cycle) << 32) | u64::from(self.block)
    }
}

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.cycle, self.block)
    }
}

impl Daddr {
    /// The byte offset of this sector.
    pub fn byte_offset(self) -> Option<u64> {
        self.0.checked_mul(512)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lsn_round_trips() {
        let l = Lsn::from_raw(0x0000_0002_0000_1234);
        assert_eq!(
            l,
            Lsn {
                cycle: 2,
                block: 0x1234
            }
        );
        assert_eq!(l.raw(), 0x0000_0002_0000_1234);
        assert_eq!(l.to_string(), "2:4660");
    }
}
