//! Where attribute forks start, over every inode in use: the distribution
//! of `di_forkoff` by value, by file type and by what it says about how
//! the fork came to be (spec §3.8).

use crate::xfs::ag::btree::InodeSlot;
use crate::xfs::ag::inode_chunks;
use crate::xfs::fs::Fs;
use crate::xfs::read::ReadAt;
use crate::xfs::types::{AgNumber, Ino};
use serde::Serialize;
use std::collections::BTreeMap;

/// At most this many inode chunks are read per AG.
const MAX_CHUNKS_PER_AG: usize = 1 << 22;

/// An inode in use whose core could not be read.
#[derive(Clone, Debug, Serialize)]
pub struct Unreadable {
    pub ino: u64,
    pub error: String,
}

/// The distribution.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Distribution {
    /// Inodes the inode btrees mark in use, read.
    pub inodes: u64,
    /// Of those, how many have an attribute fork.
    pub with_attr_fork: u64,
    /// forkoff -> inodes.
    pub by_value: BTreeMap<u8, u64>,
    /// File type -> forkoff -> inodes.
    pub by_type: BTreeMap<&'static str, BTreeMap<u8, u64>>,
    /// Reading -> inodes (how the fork most likely came to be).
    pub by_reading: BTreeMap<&'static str, u64>,
    /// File type -> reading -> inodes.
    pub by_type_reading: BTreeMap<&'static str, BTreeMap<&'static str, u64>>,
    /// A few inodes of each reading, to look at.
    pub examples: BTreeMap<&'static str, Vec<u64>>,
    /// The kernel's default forkoff and the one a small first xattr gets,
    /// for this inode size (regular inodes; device inodes use 1).
    pub default_forkoff: u8,
    pub max_forkoff: u8,
    /// In use but not readable as an inode (bad magic, never written).
    pub unreadable_count: u64,
    pub unreadable: Vec<Unreadable>,
    /// In use and read, but the CRC does not match.
    pub crc_mismatch: u64,
    pub problems: Vec<String>,
}

fn bump<K: Ord>(m: &mut BTreeMap<K, u64>, k: K) {
    let c = m.entry(k).or_insert(0);
    *c = c.saturating_add(1);
}

/// Read every inode in use and count where its attr fork starts.
pub fn distribution<R: ReadAt>(fs: &Fs<R>, progress: &mut dyn FnMut(u64)) -> Distribution {
    let mut d = Distribution::default();
    let core = if fs.geo.v5 { 176 } else { 100 };
    let isize = u32::from(fs.geo.inodesize);
    d.default_forkoff = crate::xfs::inode::LiteralLayout::default_forkoff_for(isize, core, 2);
    d.max_forkoff = crate::xfs::inode::LiteralLayout::max_forkoff_for(isize, core);
    let agshift = u32::from(fs.geo.agblklog).saturating_add(u32::from(fs.geo.inopblog));
    for agno in 0..fs.geo.agcount {
        let (chunks, report) = match inode_chunks(fs, AgNumber(agno), MAX_CHUNKS_PER_AG) {
            Ok(c) => c,
            Err(e) => {
                d.problems.push(format!("AG {agno}: {e}"));
                continue;
            }
        };
        if report.stopped {
            d.problems
                .push(format!("AG {agno}: the inode btree walk stopped early"));
        }
        for c in &chunks {
            for (agino, slot) in c.slots() {
                if slot != InodeSlot::Used {
                    continue;
                }
                let agino = u64::from(agino);
                let ino = u64::from(agno).checked_shl(agshift).unwrap_or(0) | agino;
                match fs.inode(Ino(ino)) {
                    Ok(inode) => {
                        d.inodes = d.inodes.saturating_add(1);
                        if !inode.verify.crc_ok {
                            d.crc_mismatch = d.crc_mismatch.saturating_add(1);
                        }
                        let fo = inode.core.forkoff;
                        if fo != 0 {
                            d.with_attr_fork = d.with_attr_fork.saturating_add(1);
                        }
                        let t = inode.file_type().short_name();
                        let r = inode.layout.tag();
                        bump(&mut d.by_value, fo);
                        bump(d.by_type.entry(t).or_default(), fo);
                        bump(&mut d.by_reading, r);
                        bump(d.by_type_reading.entry(t).or_default(), r);
                        let ex = d.examples.entry(r).or_default();
                        if ex.len() < 8 {
                            ex.push(ino);
                        }
                        if d.inodes % 4096 == 0 {
                            progress(d.inodes);
                        }
                    }
                    Err(e) => {
                        d.unreadable_count = d.unreadable_count.saturating_add(1);
                        if d.unreadable.len() < 100 {
                            d.unreadable.push(Unreadable {
                                ino,
                                error: e.to_string(),
                            });
                        }
                    }
                }
            }
        }
    }
    progress(d.inodes);
    d
}
