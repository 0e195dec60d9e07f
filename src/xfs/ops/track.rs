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
use crate::xfs::dir::{DirGeometry, ForkAt};
use crate::xfs::format::attr::XFS_ATTR3_LEAF_MAGIC;
use crate::xfs::format::da::{XfsDa3Blkinfo, XFS_DA3_NODE_MAGIC};
use crate::xfs::format::dinode::{S_IFDIR, S_IFMT, XFS_DINODE_FMT_LOCAL};
use crate::xfs::format::dir2::{
    XfsDir3BlkHdr, XfsDir3DataHdr, XFS_DIR2_DATA_FREE_TAG, XFS_DIR3_BLOCK_MAGIC,
    XFS_DIR3_DATA_MAGIC,
};
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
    /// The block holds no names whatever its bytes say (it was freed, or
    /// a logged copy could not be laid over it).
    cleared: bool,
}

/// What a name in a block maps to: a directory entry's inode, or an
/// attribute's value where it lies.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum SlotValue<'a> {
    Ino(u64),
    Inline(&'a [u8]),
    Remote { blk: u32, len: u32 },
}

/// One name of a directory data block or attribute leaf block, read in
/// place: where its bytes start (entries keep their place while others
/// come and go), its namespace (attributes) and its value.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Slot<'a> {
    pos: usize,
    ns: u8,
    name: &'a [u8],
    value: SlotValue<'a>,
}

impl Slot<'_> {
    /// The same name with the same value (wherever it lies).
    fn same(&self, o: &Slot<'_>) -> bool {
        self.ns == o.ns && self.name == o.name && self.value == o.value
    }

    fn key_order(&self, o: &Slot<'_>) -> core::cmp::Ordering {
        (self.ns, self.name, self.value).cmp(&(o.ns, o.name, o.value))
    }
}

/// The names of a directory data block or attribute leaf block.
struct BlockSlots<'a> {
    kind: BlockKind,
    owner: u64,
    slots: Vec<Slot<'a>>,
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
    /// A block's bytes before a logged copy is laid over its shadow.
    scratch: Vec<u8>,
    entries_before: EntriesBefore,
    seen_entries: usize,
    /// What every directory block's header is checked against.
    dir_blksize: usize,
    meta_uuid: [u8; 16],
    ftype: bool,
    pub notes: Vec<String>,
}

/// Inode -> the `(directory, name)` entries that named it before the log
/// changed them.
pub type EntriesBefore = HashMap<u64, Vec<(u64, Vec<u8>)>>;

/// At most this many entries seen before the log are kept, and this many
/// per inode.
const MAX_SEEN_ENTRIES: usize = 1 << 20;
const MAX_SEEN_PER_INODE: usize = 16;

/// The top bit of a value digest: the value is remote (in blocks of its
/// own).
pub const REMOTE_VALUE: u64 = 1 << 63;

/// A digest of an attribute value (FNV-1a, 63 bits), to tell a replaced
/// value from an unchanged one, with [`REMOTE_VALUE`] set for remote
/// values.
fn digest(flags: u8, v: &AttrValue) -> u64 {
    match v {
        AttrValue::Inline { bytes } => digest_of(flags, SlotValue::Inline(bytes)),
        AttrValue::Remote { blk, len } => digest_of(
            flags,
            SlotValue::Remote {
                blk: *blk,
                len: *len,
            },
        ),
    }
}

/// [`digest`] of a value read in place.
fn digest_of(flags: u8, v: SlotValue<'_>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: u8| {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    };
    // The namespace only: shortform entries have no LOCAL bit.
    eat(flags & crate::xfs::format::attr::XFS_ATTR_NSP_ONDISK_MASK);
    match v {
        SlotValue::Inline(bytes) => bytes.iter().for_each(|b| eat(*b)),
        SlotValue::Remote { blk, len } => {
            blk.to_be_bytes().iter().for_each(|b| eat(*b));
            len.to_be_bytes().iter().for_each(|b| eat(*b));
        }
        SlotValue::Ino(_) => {}
    }
    match v {
        SlotValue::Remote { .. } => h | REMOTE_VALUE,
        _ => h & !REMOTE_VALUE,
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
        let dg = DirGeometry::new(&fs.geo, &fs.sb, Ino(0));
        Tracker {
            scratch: Vec::new(),
            entries_before: HashMap::new(),
            seen_entries: 0,
            dir_blksize: dg.blksize(),
            meta_uuid: dg.da.uuid,
            ftype: dg.ftype,
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

    /// Whether directories keep parent pointers (each entry also an
    /// attribute of its inode).
    pub fn parent_pointers(&self) -> bool {
        self.fs.sb.features_incompat & crate::xfs::format::sb::XFS_SB_FEAT_INCOMPAT_PARENT != 0
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
                    for (name, child) in &names {
                        saw_entry(
                            &mut self.entries_before,
                            &mut self.seen_entries,
                            *child,
                            ino,
                            name,
                        );
                    }
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
            // Shortform directories: the whole fork is logged with DDATA;
            // a fork still local and not logged keeps its names.
            if st.is_dir() && (st.format != XFS_DINODE_FMT_LOCAL || data_region.is_some()) {
                let was = self.sf_dirs.remove(&ino);
                let now = if st.format == XFS_DINODE_FMT_LOCAL {
                    data_region.and_then(|d| self.sf_dir_names(ino, d))
                } else {
                    None
                };
                if was.is_some() || now.is_some() {
                    let unknown = matches!(before, Before::Unknown);
                    add_names(&mut changes.dirs, ino, was.as_ref(), now.as_ref(), unknown);
                }
                if let Some(n) = now {
                    self.sf_dirs.insert(ino, n);
                }
            }
            let attr_local = st.forkoff != 0 && st.aformat == XFS_DINODE_FMT_LOCAL;
            let adata = attr_region.filter(|_| item.fields & XFS_ILOG_ADATA != 0);
            if !attr_local || adata.is_some() {
                let was = self.sf_attrs.remove(&ino);
                let now = if attr_local {
                    adata.and_then(|a| self.sf_attr_names(ino, a))
                } else {
                    None
                };
                if was != now {
                    let unknown = matches!(before, Before::Unknown);
                    add_names(&mut changes.attrs, ino, was.as_ref(), now.as_ref(), unknown);
                }
                if let Some(n) = now {
                    self.sf_attrs.insert(ino, n);
                }
            }
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
        // The block's bytes before this checkpoint go to `scratch`, the
        // shadow takes the logged copy.
        let mut old = std::mem::take(&mut self.scratch);
        old.clear();
        // At a block's first logging, the entries it held before are
        // noted (for paths); where its disk copy does not show them (newer
        // than the log, or never written), those it holds after.
        let mut note_after = false;
        let (stale_before, cleared_before) = if let Some(sh) = self.blocks.get(&blkno) {
            old.extend_from_slice(&sh.bytes);
            (sh.stale, sh.cleared)
        } else {
            // Read once, wherever it is: past the cache.
            let read = Daddr(daddr)
                .byte_offset()
                .and_then(|off| self.fs.img.read_uncached("logged block", off, len).ok());
            let Some(bytes) = read else {
                self.scratch = old;
                return None;
            };
            let disk_lsn = crate::xfs::replay::buf::block_lsn(&bytes, &self.geo);
            let stale =
                disk_lsn.is_some_and(|l| l >= lsn) && self.block_slots(&bytes, daddr).is_some();
            old.extend_from_slice(&bytes);
            note_after = stale || !self.saw_block(&bytes, daddr);
            self.blocks.insert(
                blkno,
                Shadow {
                    bytes,
                    stale,
                    cleared: false,
                },
            );
            (stale, false)
        };
        let Some(mut sh) = self.blocks.remove(&blkno) else {
            self.scratch = old;
            return None;
        };
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
        sh.stale = false;
        let applied = if b.cancel() {
            sh.cleared = true;
            false
        } else if crate::xfs::replay::buf::reg_buffer(&mut sh.bytes, it, b, daddr).is_err() {
            sh.cleared = true;
            self.blocks.insert(blkno, sh);
            self.scratch = old;
            return None;
        } else {
            sh.cleared = false;
            if let Some(o) = node_owner(&sh.bytes) {
                self.node_owners.insert(o);
            }
            true
        };
        let owner = {
            let before = if stale_before || cleared_before {
                None
            } else {
                self.block_slots(&old, daddr)
            };
            let after = if applied {
                self.block_slots(&sh.bytes, daddr)
            } else {
                None
            };
            if note_after {
                if let Some(a) = after.as_ref().filter(|a| a.kind == BlockKind::Dir) {
                    for sl in &a.slots {
                        if let SlotValue::Ino(child) = sl.value {
                            saw_entry(
                                &mut self.entries_before,
                                &mut self.seen_entries,
                                child,
                                a.owner,
                                sl.name,
                            );
                        }
                    }
                }
            }
            // Names only count for blocks that are (or were) a directory
            // or attribute block.
            let (kind, owner) = match (&before, &after) {
                (_, Some(a)) => (a.kind, a.owner),
                (Some(bn), None) => (bn.kind, bn.owner),
                (None, None) => {
                    self.blocks.insert(blkno, sh);
                    self.scratch = old;
                    return None;
                }
            };
            fn pick(n: Option<BlockSlots<'_>>, kind: BlockKind, owner: u64) -> Vec<Slot<'_>> {
                n.filter(|n| n.kind == kind && n.owner == owner)
                    .map(|n| n.slots)
                    .unwrap_or_default()
            }
            let (gone, new) = diff_slots(kind, pick(before, kind, owner), pick(after, kind, owner));
            let target = match kind {
                BlockKind::Dir => &mut changes.dirs,
                BlockKind::Attr => &mut changes.attrs,
            };
            add_names(target, owner, Some(&gone), Some(&new), stale_before);
            target.block_before.entry(owner).or_default().extend(gone);
            owner
        };
        self.blocks.insert(blkno, sh);
        self.scratch = old;
        Some(owner)
    }

    /// The names in a directory data block or attribute leaf block, found
    /// by its magic (v5 blocks name their owner), read in place. Logged
    /// copies carry no CRC (the kernel sets it when it writes the block),
    /// so none is checked; the rest of the v5 header is (the block's own
    /// address, the filesystem's UUID).
    fn block_slots<'b>(&self, bytes: &'b [u8], daddr: u64) -> Option<BlockSlots<'b>> {
        let dir_hdr = XfsDir3BlkHdr::ref_from_prefix(bytes).ok()?.0;
        let da_hdr = XfsDa3Blkinfo::ref_from_prefix(bytes).ok()?.0;
        let magic32 = dir_hdr.magic.get();
        if magic32 == XFS_DIR3_BLOCK_MAGIC || magic32 == XFS_DIR3_DATA_MAGIC {
            if dir_hdr.blkno.get() != daddr || dir_hdr.uuid != self.meta_uuid {
                return None;
            }
            if self.dir_blksize != bytes.len() {
                return None;
            }
            let slots = dir_slots(bytes, magic32 == XFS_DIR3_BLOCK_MAGIC, self.ftype)?;
            return Some(BlockSlots {
                kind: BlockKind::Dir,
                owner: dir_hdr.owner.get(),
                slots,
            });
        }
        if da_hdr.hdr.magic.get() == XFS_ATTR3_LEAF_MAGIC {
            if da_hdr.blkno.get() != daddr || da_hdr.uuid != self.meta_uuid {
                return None;
            }
            let slots = attr_slots(bytes)?;
            return Some(BlockSlots {
                kind: BlockKind::Attr,
                owner: da_hdr.owner.get(),
                slots,
            });
        }
        None
    }

    /// The entries a directory block held before the log changed it (its
    /// disk copy, read the first time the log logs it); false if it holds
    /// none that can be read.
    fn saw_block(&mut self, bytes: &[u8], daddr: u64) -> bool {
        let Some(b) = self.block_slots(bytes, daddr) else {
            return false;
        };
        if b.kind != BlockKind::Dir {
            return true;
        }
        for sl in &b.slots {
            if let SlotValue::Ino(child) = sl.value {
                saw_entry(
                    &mut self.entries_before,
                    &mut self.seen_entries,
                    child,
                    b.owner,
                    sl.name,
                );
            }
        }
        true
    }

    /// Every inode's entries as directories held them before the log
    /// changed them, where the log shows them (the directory blocks and
    /// shortform directories it logged, as the disk held them before).
    pub fn take_entries_before(&mut self) -> EntriesBefore {
        std::mem::take(&mut self.entries_before)
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

/// The entries of a v5 directory data block (`block_form`: a single-block
/// directory, its leaf at the end), in the order they lie, read in place
/// as `xfs_dir2_data_entry`s and unused regions tile the block. A tiling
/// that breaks stops the walk (the entries before it stay); a header or
/// leaf tail that does not fit gives nothing.
fn dir_slots(b: &[u8], block_form: bool, ftype: bool) -> Option<Vec<Slot<'_>>> {
    use crate::xfs::fs::{be16, be32, be64};
    let hdr = core::mem::size_of::<XfsDir3DataHdr>();
    let mut end = b.len();
    if block_form {
        let tail_off = b.len().checked_sub(8)?;
        let count = usize::try_from(be32(b, tail_off)?).ok()?;
        let stale = be32(b, tail_off.checked_add(4)?)?;
        let room = tail_off.checked_sub(hdr)? / 8;
        if count > room || u64::from(stale) > u64::try_from(count).ok()? {
            return None;
        }
        end = tail_off.checked_sub(count.checked_mul(8)?)?;
    }
    let mut out = Vec::new();
    let mut off = hdr;
    while off < end {
        if be16(b, off) == Some(XFS_DIR2_DATA_FREE_TAG) {
            let len = usize::from(be16(b, off.saturating_add(2)).unwrap_or(0));
            if len < 8 || len % 8 != 0 || off.saturating_add(len) > end {
                break;
            }
            let tag = be16(b, off.saturating_add(len).saturating_sub(2)).unwrap_or(0);
            if usize::from(tag) != off {
                break;
            }
            off = off.saturating_add(len);
            continue;
        }
        let Some(ino) = be64(b, off) else { break };
        let namelen = usize::from(b.get(off.saturating_add(8)).copied().unwrap_or(0));
        if namelen == 0 {
            break;
        }
        let raw = 11usize
            .saturating_add(namelen)
            .saturating_add(usize::from(ftype));
        let size = raw.saturating_add(7) & !7;
        if off.saturating_add(size) > end {
            break;
        }
        let tag = be16(b, off.saturating_add(size).saturating_sub(2)).unwrap_or(0);
        if usize::from(tag) != off {
            break;
        }
        let name_off = off.saturating_add(9);
        let Some(name) = b.get(name_off..name_off.saturating_add(namelen)) else {
            break;
        };
        if name != b"." && name != b".." {
            out.push(Slot {
                pos: off,
                ns: 0,
                name,
                value: SlotValue::Ino(ino),
            });
        }
        off = off.saturating_add(size);
    }
    Some(out)
}

/// The complete entries of a v5 attribute leaf block, read in place, by
/// where their names lie (`nameidx`). Entries whose name or value does
/// not fit the block are left out; a header that does not fit gives
/// nothing.
fn attr_slots(b: &[u8]) -> Option<Vec<Slot<'_>>> {
    use crate::xfs::format::attr::{
        XfsAttr3LeafHdr, XFS_ATTR_INCOMPLETE, XFS_ATTR_LOCAL, XFS_ATTR_NSP_ONDISK_MASK,
    };
    use crate::xfs::fs::{be16, be32};
    let bs = b.len();
    let bi = core::mem::size_of::<XfsDa3Blkinfo>();
    let count = usize::from(be16(b, bi)?);
    let mut firstused = usize::from(be16(b, bi.checked_add(4)?)?);
    if firstused == 0 {
        // 0 stands for 65536, which does not fit in 16 bits.
        firstused = bs;
    }
    let hdr = core::mem::size_of::<XfsAttr3LeafHdr>();
    let table_end = hdr.checked_add(count.checked_mul(8)?)?;
    if table_end > bs || table_end > firstused || firstused > bs {
        return None;
    }
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let eo = hdr.saturating_add(i.saturating_mul(8));
        let nameidx = usize::from(be16(b, eo.saturating_add(4)).unwrap_or(0));
        let flags = b.get(eo.saturating_add(6)).copied().unwrap_or(0);
        if flags & XFS_ATTR_INCOMPLETE != 0 || nameidx < firstused || nameidx >= bs {
            continue;
        }
        let (name, value) = if flags & XFS_ATTR_LOCAL != 0 {
            let valuelen = usize::from(be16(b, nameidx).unwrap_or(0));
            let namelen = usize::from(b.get(nameidx.saturating_add(2)).copied().unwrap_or(0));
            let n0 = nameidx.saturating_add(3);
            let v0 = n0.saturating_add(namelen);
            let (Some(name), Some(value)) = (b.get(n0..v0), b.get(v0..v0.saturating_add(valuelen)))
            else {
                continue;
            };
            (name, SlotValue::Inline(value))
        } else {
            let blk = be32(b, nameidx).unwrap_or(0);
            let len = be32(b, nameidx.saturating_add(4)).unwrap_or(0);
            let namelen = usize::from(b.get(nameidx.saturating_add(8)).copied().unwrap_or(0));
            let n0 = nameidx.saturating_add(9);
            let Some(name) = b.get(n0..n0.saturating_add(namelen)) else {
                continue;
            };
            (name, SlotValue::Remote { blk, len })
        };
        out.push(Slot {
            pos: nameidx,
            ns: flags & XFS_ATTR_NSP_ONDISK_MASK,
            name,
            value,
        });
    }
    out.sort_unstable_by_key(|s| s.pos);
    Some(out)
}

/// The names a block lost and gained between two readings, each ordered
/// by where they lie: a name at the same place with the same value is
/// unchanged; of the rest, a name that left one place and arrived at
/// another with the same value (the block compacted) is unchanged too.
fn diff_slots(kind: BlockKind, was: Vec<Slot<'_>>, now: Vec<Slot<'_>>) -> (Names, Names) {
    let mut lost: Vec<Slot<'_>> = Vec::new();
    let mut got: Vec<Slot<'_>> = Vec::new();
    let (mut i, mut j) = (0usize, 0usize);
    loop {
        match (was.get(i), now.get(j)) {
            (Some(a), Some(b)) if a.pos == b.pos => {
                if !a.same(b) {
                    lost.push(*a);
                    got.push(*b);
                }
                i = i.saturating_add(1);
                j = j.saturating_add(1);
            }
            (Some(a), Some(b)) if a.pos < b.pos => {
                lost.push(*a);
                i = i.saturating_add(1);
            }
            (_, Some(b)) => {
                got.push(*b);
                j = j.saturating_add(1);
            }
            (Some(a), None) => {
                lost.push(*a);
                i = i.saturating_add(1);
            }
            (None, None) => break,
        }
    }
    lost.sort_unstable_by(|a, b| a.key_order(b));
    got.sort_unstable_by(|a, b| a.key_order(b));
    let (mut gone, mut new) = (Names::new(), Names::new());
    let key_value = |s: &Slot<'_>| match kind {
        BlockKind::Dir => (
            s.name.to_vec(),
            match s.value {
                SlotValue::Ino(i) => i,
                _ => 0,
            },
        ),
        BlockKind::Attr => (attr_key(s.ns, s.name), digest_of(s.ns, s.value)),
    };
    let (mut i, mut j) = (0usize, 0usize);
    loop {
        match (lost.get(i), got.get(j)) {
            (Some(a), Some(b)) if a.same(b) => {
                i = i.saturating_add(1);
                j = j.saturating_add(1);
            }
            (Some(a), Some(b)) if a.key_order(b) == core::cmp::Ordering::Less => {
                let (k, v) = key_value(a);
                gone.insert(k, v);
                i = i.saturating_add(1);
            }
            (_, Some(b)) => {
                let (k, v) = key_value(b);
                new.insert(k, v);
                j = j.saturating_add(1);
            }
            (Some(a), None) => {
                let (k, v) = key_value(a);
                gone.insert(k, v);
                i = i.saturating_add(1);
            }
            (None, None) => break,
        }
    }
    (gone, new)
}

/// Directory `dir` held entry `name` for `ino` before the log changed it.
fn saw_entry(seen: &mut EntriesBefore, count: &mut usize, ino: u64, dir: u64, name: &[u8]) {
    if *count >= MAX_SEEN_ENTRIES {
        return;
    }
    let v = seen.entry(ino).or_default();
    if v.len() < MAX_SEEN_PER_INODE && !v.iter().any(|(d, n)| *d == dir && n == name) {
        v.push((dir, name.to_vec()));
        *count = count.saturating_add(1);
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn dir(pos: usize, name: &'static [u8], ino: u64) -> Slot<'static> {
        Slot {
            pos,
            ns: 0,
            name,
            value: SlotValue::Ino(ino),
        }
    }

    #[test]
    fn diff_keeps_only_names_that_changed() {
        let was = vec![dir(64, b"a", 10), dir(80, b"b", 11), dir(96, b"c", 12)];
        // b removed; c's entry now names another inode; d added in b's
        // place; a untouched.
        let now = vec![dir(64, b"a", 10), dir(80, b"d", 13), dir(96, b"c", 14)];
        let (gone, new) = diff_slots(BlockKind::Dir, was, now);
        assert_eq!(
            gone.into_iter().collect::<Vec<_>>(),
            vec![(b"b".to_vec(), 11), (b"c".to_vec(), 12)]
        );
        assert_eq!(
            new.into_iter().collect::<Vec<_>>(),
            vec![(b"c".to_vec(), 14), (b"d".to_vec(), 13)]
        );
    }

    #[test]
    fn an_entry_that_moved_within_the_block_is_no_change() {
        let was = vec![dir(64, b"a", 10), dir(200, b"b", 11)];
        let now = vec![dir(64, b"a", 10), dir(120, b"b", 11)];
        let (gone, new) = diff_slots(BlockKind::Dir, was, now);
        assert!(gone.is_empty() && new.is_empty());
    }

    #[test]
    fn attribute_values_are_compared_by_digest_with_their_namespace() {
        let a = |pos, ns, v: &'static [u8]| Slot {
            pos,
            ns,
            name: b"k",
            value: SlotValue::Inline(v),
        };
        let (gone, new) = diff_slots(
            BlockKind::Attr,
            vec![
                a(3000, 0, b"1"),
                a(3100, crate::xfs::format::attr::XFS_ATTR_ROOT, b"1"),
            ],
            vec![
                a(3000, 0, b"2"),
                a(3100, crate::xfs::format::attr::XFS_ATTR_ROOT, b"1"),
            ],
        );
        assert_eq!(gone.len(), 1);
        assert_eq!(new.len(), 1);
        let key = attr_key(0, b"k");
        assert_eq!(
            gone[&key],
            digest(
                0,
                &AttrValue::Inline {
                    bytes: b"1".to_vec()
                }
            )
        );
        assert_eq!(
            new[&key],
            digest(
                0,
                &AttrValue::Inline {
                    bytes: b"2".to_vec()
                }
            )
        );
        // A remote value's digest says so.
        let r = digest_of(0, SlotValue::Remote { blk: 1, len: 3000 });
        assert_ne!(r & REMOTE_VALUE, 0);
    }

    #[test]
    fn damaged_blocks_give_what_fits_and_never_read_past_the_end() {
        // A data block whose first entry runs past the end: nothing.
        let mut b = vec![0u8; 4096];
        let hdr = core::mem::size_of::<XfsDir3DataHdr>();
        b[hdr..hdr + 8].copy_from_slice(&42u64.to_be_bytes());
        b[hdr + 8] = 255;
        assert!(dir_slots(&b[..hdr + 64], false, true).unwrap().is_empty());
        // A single-block directory whose leaf count does not fit.
        let n = b.len();
        b[n - 8..n - 4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(dir_slots(&b, true, true).is_none());
        // An attribute leaf whose count does not fit.
        let mut l = vec![0u8; 4096];
        let bi = core::mem::size_of::<XfsDa3Blkinfo>();
        l[bi..bi + 2].copy_from_slice(&u16::MAX.to_be_bytes());
        assert!(attr_slots(&l).is_none());
        assert!(attr_slots(&l[..10]).is_none());
    }
}
