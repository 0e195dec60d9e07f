//! What the log says each inode, directory and attribute fork looked like
//! after every checkpoint, starting from the disk: the state the operation
//! inference compares.
//!
//! Only what a checkpoint logs is followed: the inode cores of logged
//! inodes (with `di_changecount`, which every transaction that logs a core
//! raises once), shortform directories and attribute lists in logged
//! inode forks, and directory data blocks and attribute leaf blocks kept
//! as shadows (their disk bytes the first time they are logged, each
//! logged run laid over them). A block or inode whose disk copy is newer
//! than the checkpoint that first logs it (written back after it) has no
//! known "before".

use crate::xfs::attr::{AttrGeometry, AttrValue};
use crate::xfs::dabtree::DaBuf;
use crate::xfs::dir::{DirGeometry, ForkAt};
use crate::xfs::format::attr::XFS_ATTR3_LEAF_MAGIC;
use crate::xfs::format::da::{XfsDa3Blkinfo, XFS_DA3_NODE_MAGIC};
use crate::xfs::format::dinode::{S_IFDIR, S_IFMT, XFS_DINODE_FMT_LOCAL};
use crate::xfs::format::dir2::{XfsDir3BlkHdr, XFS_DIR3_BLOCK_MAGIC, XFS_DIR3_DATA_MAGIC};
use crate::xfs::format::log::{
    XFS_BLFT_ATTR_LEAF_BUF, XFS_BLFT_DA_NODE_BUF, XFS_BLFT_DIR_BLOCK_BUF, XFS_BLFT_DIR_DATA_BUF,
    XFS_BLFT_UNKNOWN_BUF, XFS_ILOG_ADATA, XFS_ILOG_AFORK, XFS_ILOG_CORE, XFS_ILOG_DFORK,
};
use crate::xfs::fs::Fs;
use crate::xfs::inode::InodeCore;
use crate::xfs::log::items::{BufItem, InodeItem, LogDinodeCore, Segment};
use crate::xfs::read::ReadAt;
use crate::xfs::replay::walk::RItem;
use crate::xfs::types::{Daddr, Ino};
use core::mem::offset_of;
use std::collections::{BTreeMap, HashMap};
use zerocopy::FromBytes;

/// The inode fields the inference looks at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InoState {
    pub mode: u16,
    pub nlink: u32,
    pub gen: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub nblocks: u64,
    pub nextents: u64,
    pub anextents: u32,
    pub forkoff: u8,
    pub aformat: u8,
    pub format: u8,
    pub atime: u64,
    pub mtime: u64,
    pub ctime: u64,
    /// v3 only.
    pub crtime: Option<u64>,
    pub changecount: Option<u64>,
}

impl InoState {
    pub fn is_dir(&self) -> bool {
        self.mode & S_IFMT == S_IFDIR
    }

    pub fn allocated(&self) -> bool {
        self.mode != 0
    }

    fn of_log(c: &LogDinodeCore) -> InoState {
        InoState {
            mode: c.mode,
            nlink: c.nlink,
            gen: c.gen,
            uid: c.uid,
            gid: c.gid,
            size: c.size,
            nblocks: c.nblocks,
            nextents: c.nextents,
            anextents: c.anextents,
            forkoff: c.forkoff,
            aformat: c.aformat,
            format: c.format,
            atime: c.atime,
            mtime: c.mtime,
            ctime: c.ctime,
            crtime: c.crtime,
            changecount: c.changecount,
        }
    }

    fn of_disk(c: &InodeCore) -> InoState {
        InoState {
            mode: c.mode,
            nlink: c.nlink,
            gen: c.gen,
            uid: c.uid,
            gid: c.gid,
            size: c.size,
            nblocks: c.nblocks,
            nextents: c.nextents,
            anextents: c.anextents,
            forkoff: c.forkoff,
            aformat: c.aformat,
            format: c.format,
            atime: c.atime.raw,
            mtime: c.mtime.raw,
            ctime: c.ctime.raw,
            crtime: c.crtime.map(|t| t.raw),
            changecount: c.changecount,
        }
    }
}

/// An inode's state before a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Before {
    /// Read from the disk or an earlier checkpoint.
    Known(InoState),
    /// Free, never written (an inode chunk this log initialises), or not an
    /// inode at all on disk (a chunk over reused blocks).
    Free,
    /// The disk copy was written after this checkpoint: the state before
    /// it is not in the image.
    Unknown,
}

/// Directory entries by name, or attribute names with a digest of the
/// value, of one source (a shortform fork or one block).
pub type Names = BTreeMap<Vec<u8>, u64>;

/// One checkpoint's view of one inode.
#[derive(Clone, Debug)]
pub struct InodeChange {
    pub ino: u64,
    pub before: Before,
    /// The logged core (`None`: the item logged no core).
    pub after: Option<InoState>,
}

/// Names before and after a checkpoint, of every source it logged, per
/// owning inode.
#[derive(Clone, Debug, Default)]
pub struct NameChanges {
    pub before: BTreeMap<u64, Names>,
    pub after: BTreeMap<u64, Names>,
    /// Owners whose "before" is unknown (a source's disk copy was newer).
    pub unknown: Vec<u64>,
    /// The part of `before` read from blocks (a block freed and reused
    /// without being logged in between still holds its old names: they
    /// count only if the owner's fork had blocks before).
    pub block_before: BTreeMap<u64, Names>,
}

/// One checkpoint's changes, ready for the inference.
#[derive(Clone, Debug, Default)]
pub struct Changes {
    pub inodes: Vec<InodeChange>,
    pub dirs: NameChanges,
    pub attrs: NameChanges,
    /// `(first inode, count)` of inode chunks initialised (icreate items).
    pub chunks: Vec<(u64, u32)>,
    /// `(daddr, sectors)` of buffers logged as cancelled (freed).
    pub cancelled: Vec<(u64, u64)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Dir,
    Attr,
}

/// A shadow copy of a logged directory or attribute block.
struct Shadow {
    bytes: Vec<u8>,
    /// The disk copy was newer than the first checkpoint that logged it.
    stale: bool,
    /// The names `bytes` hold, parsed when they last changed.
    names: Option<BlockNames>,
}

/// Names in a parsed block, with its owner.
struct BlockNames {
    kind: BlockKind,
    owner: u64,
    names: Names,
}

/// Follows inode, directory and attribute state through the checkpoints.
pub struct Tracker<'f, R: ReadAt> {
    fs: &'f Fs<R>,
    geo: crate::xfs::replay::Geo,
    inodes: HashMap<u64, InoState>,
    /// Inodes of chunks this log initialised, not yet logged.
    fresh: HashMap<u64, ()>,
    sf_dirs: HashMap<u64, Names>,
    sf_attrs: HashMap<u64, Names>,
    blocks: HashMap<i64, Shadow>,
    /// Owners of da node blocks seen in the log (forks in node form).
    node_owners: std::collections::HashSet<u64>,
    pub notes: Vec<String>,
}

/// The top bit of a value digest: the value is remote (in blocks of its
/// own).
pub const REMOTE_VALUE: u64 = 1 << 63;

/// A digest of an attribute value (FNV-1a, 63 bits), to tell a replaced
/// value from an unchanged one, with [`REMOTE_VALUE`] set for remote
/// values.
fn digest(flags: u8, v: &AttrValue) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: u8| {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    };
    // The namespace only: shortform entries have no LOCAL bit.
    eat(flags & crate::xfs::format::attr::XFS_ATTR_NSP_ONDISK_MASK);
    match v {
        AttrValue::Inline { bytes } => bytes.iter().for_each(|b| eat(*b)),
        AttrValue::Remote { blk, len } => {
            blk.to_be_bytes().iter().for_each(|b| eat(*b));
            len.to_be_bytes().iter().for_each(|b| eat(*b));
        }
    }
    match v {
        AttrValue::Inline { .. } => h & !REMOTE_VALUE,
        AttrValue::Remote { .. } => h | REMOTE_VALUE,
    }
}

/// The key of an attribute: its namespace flags, then its name.
fn attr_key(flags: u8, name: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(name.len().saturating_add(1));
    k.push(flags & crate::xfs::format::attr::XFS_ATTR_NSP_ONDISK_MASK);
    k.extend_from_slice(name);
    k
}

impl<'f, R: ReadAt> Tracker<'f, R> {
    pub fn new(fs: &'f Fs<R>) -> Self {
        Tracker {
            fs,
            geo: crate::xfs::replay::Geo::of(fs),
            inodes: HashMap::new(),
            fresh: HashMap::new(),
            sf_dirs: HashMap::new(),
            sf_attrs: HashMap::new(),
            blocks: HashMap::new(),
            node_owners: std::collections::HashSet::new(),
            notes: Vec::new(),
        }
    }

    fn note(&mut self, s: String) {
        if self.notes.len() < 50 {
            self.notes.push(s);
        }
    }

    /// Whether a da node block of `ino`'s was logged (and not freed since):
    /// its attribute fork is in node form.
    pub fn node_form(&self, ino: u64) -> bool {
        self.node_owners.contains(&ino)
    }

    /// The filesystem block size.
    pub fn block_size(&self) -> u32 {
        self.fs.geo.blocksize
    }

    /// Whether the filesystem has reverse-mapping btrees.
    pub fn rmapbt(&self) -> bool {
        self.fs.sb.features_ro_compat & (1 << 1) != 0
    }

    /// The sector inode `ino` lives in.
    pub fn inode_daddr(&self, ino: u64) -> Option<u64> {
        self.fs.inode_location(Ino(ino)).ok().map(|l| l.daddr.0)
    }

    /// The first inode of the chunk at `agbno` of AG `ag`.
    pub fn chunk_first_ino(&self, ag: u32, agbno: u32) -> Option<u64> {
        let g = &self.fs.geo;
        let agino = u64::from(agbno).checked_shl(u32::from(g.inopblog))?;
        let shift = u32::from(g.agblklog).checked_add(u32::from(g.inopblog))?;
        Some(u64::from(ag).checked_shl(shift)? | agino)
    }

    /// Mark the inodes of an initialised chunk as fresh.
    pub fn chunk(&mut self, first: u64, count: u32, changes: &mut Changes) {
        for i in 0..u64::from(count.min(4096)) {
            let ino = first.saturating_add(i);
            if !self.inodes.contains_key(&ino) {
                self.fresh.insert(ino, ());
            }
        }
        changes.chunks.push((first, count));
    }

    /// The state of `ino` before checkpoint `lsn`, with its shortform
    /// directory and attribute names, read from the disk the first time.
    fn before(&mut self, ino: u64, lsn: u64) -> Before {
        if let Some(s) = self.inodes.get(&ino) {
            return Before::Known(s.clone());
        }
        if self.fresh.contains_key(&ino) {
            return Before::Free;
        }
        let Ok(bytes) = self.fs.inode_bytes(Ino(ino)) else {
            return Before::Free;
        };
        let Ok(core) = InodeCore::parse(&bytes) else {
            return Before::Free;
        };
        if core.is_v3() {
            let crc = crate::xfs::sb::crc_with_hole(
                &bytes,
                crate::xfs::format::dinode::XFS_DINODE_CRC_OFF,
            );
            if core.crc != Some(crc) || core.ino != Some(ino) {
                return Before::Free;
            }
            if core.lsn.is_some_and(|l| l >= lsn) {
                return Before::Unknown;
            }
        }
        let st = InoState::of_disk(&core);
        if !st.allocated() {
            return Before::Free;
        }
        // Inline forks as the disk holds them.
        let lit = bytes.get(usize::try_from(core.core_bytes()).unwrap_or(usize::MAX)..);
        if let Some(lit) = lit {
            let split = if core.forkoff == 0 {
                lit.len()
            } else {
                usize::from(core.forkoff).saturating_mul(8).min(lit.len())
            };
            let (data, attr) = lit.split_at(split);
            if st.is_dir() && core.format == XFS_DINODE_FMT_LOCAL {
                let n = usize::try_from(core.size)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                if let Some(names) = self.sf_dir_names(ino, data.get(..n).unwrap_or(data)) {
                    self.sf_dirs.insert(ino, names);
                }
            }
            if core.forkoff != 0 && core.aformat == XFS_DINODE_FMT_LOCAL {
                if let Some(names) = self.sf_attr_names(ino, attr) {
                    self.sf_attrs.insert(ino, names);
                }
            }
        }
        Before::Known(st)
    }

    fn sf_dir_names(&self, ino: u64, bytes: &[u8]) -> Option<Names> {
        let dg = DirGeometry::new(&self.fs.geo, &self.fs.sb, Ino(ino));
        let at = ForkAt {
            daddr: Daddr(0),
            byte: 0,
        };
        let sf = crate::xfs::dir::parse_shortform(bytes, &dg, at).ok()?;
        Some(sf.entries.into_iter().map(|e| (e.name, e.ino.0)).collect())
    }

    fn sf_attr_names(&self, ino: u64, bytes: &[u8]) -> Option<Names> {
        let ag = AttrGeometry::new(&self.fs.geo, &self.fs.sb, Ino(ino));
        let at = ForkAt {
            daddr: Daddr(0),
            byte: 0,
        };
        let l = crate::xfs::attr::parse_shortform(bytes, &ag, at).ok()?;
        Some(
            l.entries
                .iter()
                .map(|e| (attr_key(e.flags, &e.name), digest(e.flags, &e.value)))
                .collect(),
        )
    }

    /// A logged inode: its state before and after, and its inline forks.
    pub fn inode(&mut self, it: &RItem, item: &InodeItem, lsn: u64, changes: &mut Changes) {
        let ino = item.ino;
        let before = self.before(ino, lsn);
        let after = if item.fields & XFS_ILOG_CORE != 0 {
            item.core.as_deref().map(InoState::of_log)
        } else {
            None
        };
        if let Some(a) = &after {
            self.inodes.insert(ino, a.clone());
            self.fresh.remove(&ino);
        }
        let state = after.clone().or_else(|| match &before {
            Before::Known(s) => Some(s.clone()),
            _ => None,
        });
        // Regions: format, core, then the data fork, then the attr fork.
        let mut next = 2usize;
        let data_region = if item.fields & XFS_ILOG_DFORK != 0 {
            let r = it.regions.get(next);
            next = next.saturating_add(1);
            r
        } else {
            None
        };
        let attr_region = if item.fields & XFS_ILOG_AFORK != 0 {
            it.regions.get(next)
        } else {
            None
        };
        if let Some(st) = &state {
            // Shortform directories: the whole fork is logged with DDATA.
            if st.is_dir() {
                let was = self.sf_dirs.get(&ino).cloned();
                let now = if st.format == XFS_DINODE_FMT_LOCAL {
                    match data_region {
                        Some(d) => self.sf_dir_names(ino, d),
                        None => was.clone(),
                    }
                } else {
                    None
                };
                if was.is_some() || now.is_some() {
                    let unknown = matches!(before, Before::Unknown);
                    add_names(&mut changes.dirs, ino, was.as_ref(), now.as_ref(), unknown);
                }
                match now {
                    Some(n) => self.sf_dirs.insert(ino, n),
                    None => self.sf_dirs.remove(&ino),
                };
            }
            let was = self.sf_attrs.get(&ino).cloned();
            let now = if st.forkoff != 0 && st.aformat == XFS_DINODE_FMT_LOCAL {
                match attr_region {
                    Some(a) if item.fields & XFS_ILOG_ADATA != 0 => self.sf_attr_names(ino, a),
                    _ => was.clone(),
                }
            } else {
                None
            };
            if was != now {
                let unknown = matches!(before, Before::Unknown);
                add_names(&mut changes.attrs, ino, was.as_ref(), now.as_ref(), unknown);
            }
            match now {
                Some(n) => self.sf_attrs.insert(ino, n),
                None => self.sf_attrs.remove(&ino),
            };
        }
        changes.inodes.push(InodeChange { ino, before, after });
    }

    /// A logged buffer: directory data and attribute leaf blocks are kept
    /// as shadows and their names compared.
    /// Returns the block's owner when it is one.
    pub fn buffer(
        &mut self,
        it: &RItem,
        b: &BufItem,
        lsn: u64,
        changes: &mut Changes,
    ) -> Option<u64> {
        if b.segment != Segment::Whole || b.blkno < 0 {
            return None;
        }
        if b.cancel() && changes.cancelled.len() < 65_536 {
            changes
                .cancelled
                .push((u64::try_from(b.blkno).unwrap_or(0), u64::from(b.len)));
        }
        // Only directory data, attribute leaf and da node blocks are
        // followed (v5 buffers say their type; v4 ones are all looked at).
        // A block logged as something else now holds no names.
        let followed = matches!(
            b.buf_type,
            XFS_BLFT_UNKNOWN_BUF
                | XFS_BLFT_DIR_BLOCK_BUF
                | XFS_BLFT_DIR_DATA_BUF
                | XFS_BLFT_DA_NODE_BUF
                | XFS_BLFT_ATTR_LEAF_BUF
        );
        let cancels_followed = b.cancel() && self.blocks.contains_key(&b.blkno);
        if !followed && !cancels_followed {
            self.blocks.remove(&b.blkno);
            return None;
        }
        let len = u64::from(b.len).saturating_mul(512);
        if len == 0 || len > (1 << 16) {
            return None;
        }
        let blkno = b.blkno;
        let daddr = u64::try_from(blkno).unwrap_or(0);
        let before_names;
        let stale_before;
        if let Some(sh) = self.blocks.get_mut(&blkno) {
            stale_before = sh.stale;
            let cached = sh.names.take();
            before_names = if sh.stale { None } else { cached };
        } else {
            let Ok(bytes) = self.fs.read_daddr("logged block", Daddr(daddr), len) else {
                return None;
            };
            let names = self.block_names(&bytes, daddr);
            let disk_lsn = crate::xfs::replay::buf::block_lsn(&bytes, &self.geo);
            let stale = disk_lsn.is_some_and(|l| l >= lsn) && names.is_some();
            self.blocks.insert(
                blkno,
                Shadow {
                    bytes,
                    stale,
                    names: None,
                },
            );
            stale_before = stale;
            before_names = if stale { None } else { names };
        }
        let sh = self.blocks.get_mut(&blkno)?;
        // da node blocks (`xfs_da3_blkinfo` magic at byte 8, owner at 48):
        // their owners' forks are in node form.
        let node_owner = |bytes: &[u8]| {
            XfsDa3Blkinfo::ref_from_prefix(bytes)
                .ok()
                .filter(|(h, _)| h.hdr.magic.get() == XFS_DA3_NODE_MAGIC)
                .map(|(h, _)| h.owner.get())
        };
        if let Some(o) = node_owner(&sh.bytes) {
            self.node_owners.remove(&o);
        }
        let after_names = if b.cancel() {
            sh.stale = false;
            None
        } else {
            if crate::xfs::replay::buf::reg_buffer(&mut sh.bytes, it, b, daddr).is_err() {
                return None;
            }
            sh.stale = false;
            if let Some(o) = node_owner(&sh.bytes) {
                self.node_owners.insert(o);
            }
            let bytes = std::mem::take(&mut sh.bytes);
            let n = self.block_names(&bytes, daddr);
            if let Some(sh) = self.blocks.get_mut(&blkno) {
                sh.bytes = bytes;
            }
            n
        };
        // Names only count for blocks that are (or were) a directory or
        // attribute block.
        let (kind, owner) = match (&before_names, &after_names) {
            (_, Some(a)) => (a.kind, a.owner),
            (Some(bn), None) => (bn.kind, bn.owner),
            (None, None) => return None,
        };
        fn pick(n: &Option<BlockNames>, kind: BlockKind, owner: u64) -> Option<&Names> {
            n.as_ref()
                .filter(|n| n.kind == kind && n.owner == owner)
                .map(|n| &n.names)
        }
        let empty = Names::new();
        let was = pick(&before_names, kind, owner).unwrap_or(&empty);
        let now = pick(&after_names, kind, owner).unwrap_or(&empty);
        let target = match kind {
            BlockKind::Dir => &mut changes.dirs,
            BlockKind::Attr => &mut changes.attrs,
        };
        // Only what changed: the inference compares names, and a block
        // holds hundreds.
        let gone: Names = was
            .iter()
            .filter(|(k, v)| now.get(*k) != Some(*v))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        let new: Names = now
            .iter()
            .filter(|(k, v)| was.get(*k) != Some(*v))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        add_names(target, owner, Some(&gone), Some(&new), stale_before);
        target.block_before.entry(owner).or_default().extend(gone);
        if let Some(sh) = self.blocks.get_mut(&blkno) {
            sh.names = after_names;
        }
        Some(owner)
    }

    /// The names in a directory data block or attribute leaf block, found
    /// by its magic (v5 blocks name their owner).
    fn block_names(&self, bytes: &[u8], daddr: u64) -> Option<BlockNames> {
        let dir_hdr = XfsDir3BlkHdr::ref_from_prefix(bytes).ok()?.0;
        let da_hdr = XfsDa3Blkinfo::ref_from_prefix(bytes).ok()?.0;
        let magic32 = dir_hdr.magic.get();
        // Logged copies carry no CRC (the kernel sets it when it writes
        // the block): parse a copy with one.
        let mut buf = DaBuf {
            dablk: 0,
            daddr: Daddr(daddr),
            bytes: bytes.to_vec(),
        };
        if magic32 == XFS_DIR3_BLOCK_MAGIC || magic32 == XFS_DIR3_DATA_MAGIC {
            let owner = dir_hdr.owner.get();
            crate::xfs::replay::put_crc(&mut buf.bytes, offset_of!(XfsDir3BlkHdr, crc));
            let dg = DirGeometry::new(&self.fs.geo, &self.fs.sb, Ino(owner));
            if dg.blksize() != bytes.len() {
                return None;
            }
            let blk = crate::xfs::dir::parse_data_block(&buf, &dg, magic32 == XFS_DIR3_BLOCK_MAGIC)
                .ok()?;
            let names = blk
                .entries
                .into_iter()
                .filter(|(_, e)| e.name != b"." && e.name != b"..")
                .map(|(_, e)| (e.name, e.ino.0))
                .collect();
            return Some(BlockNames {
                kind: BlockKind::Dir,
                owner,
                names,
            });
        }
        if da_hdr.hdr.magic.get() == XFS_ATTR3_LEAF_MAGIC {
            let owner = da_hdr.owner.get();
            crate::xfs::replay::put_crc(&mut buf.bytes, offset_of!(XfsDa3Blkinfo, crc));
            let ag = AttrGeometry::new(&self.fs.geo, &self.fs.sb, Ino(owner));
            let leaf = crate::xfs::attr::parse_leaf(&buf, &ag).ok()?;
            let names = leaf
                .entries
                .iter()
                .filter(|(_, e)| e.flags & crate::xfs::format::attr::XFS_ATTR_INCOMPLETE == 0)
                .map(|(_, e)| (attr_key(e.flags, &e.name), digest(e.flags, &e.value)))
                .collect();
            return Some(BlockNames {
                kind: BlockKind::Attr,
                owner,
                names,
            });
        }
        None
    }

    /// How many inodes, blocks and forks are followed (for memory notes).
    pub fn followed(&self) -> (usize, usize) {
        (self.inodes.len(), self.blocks.len())
    }

    /// Add a finding about the walk.
    pub fn warn(&mut self, s: String) {
        self.note(s);
    }
}

/// Merge one source's names into a checkpoint's per-owner names.
fn add_names(
    nc: &mut NameChanges,
    owner: u64,
    was: Option<&Names>,
    now: Option<&Names>,
    unknown: bool,
) {
    let b = nc.before.entry(owner).or_default();
    if let Some(w) = was {
        b.extend(w.iter().map(|(k, v)| (k.clone(), *v)));
    }
    let a = nc.after.entry(owner).or_default();
    if let Some(n) = now {
        a.extend(n.iter().map(|(k, v)| (k.clone(), *v)));
    }
    if unknown && !nc.unknown.contains(&owner) {
        nc.unknown.push(owner);
    }
}
