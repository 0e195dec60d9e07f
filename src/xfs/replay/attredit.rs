//! Attribute intents (ATTRI) finished as the kernel finishes them at mount
//! (`xfs_attr_recover_work` -> `xfs_attr_set_iter`), for attr forks held
//! in the inode (shortform):
//!
//! ```text
//!  set, replace  no attr fork (di_forkoff 0): nothing (the fork would have
//!                been added before the intent was logged)
//!                an empty fork (extents format, no extents): a shortform
//!                header is made first
//!                an entry with the same name and namespace is taken out,
//!                then the new one goes at the end; di_forkoff becomes
//!                xfs_attr_shortform_bytesfit of the new size (it moves down
//!                when the list outgrows the fork); the change time is set
//!                to the time of the recovery
//!  remove        no attribute or no such name: nothing
//!                the entry is taken out; the fork goes (di_forkoff 0) when
//!                it was the last, unless the data fork is a btree;
//!                otherwise di_forkoff is bytesfit of what is left (it
//!                stays, as the list still fits)
//! ```
//!
//! Parent pointers (PPTR_SET, PPTR_REMOVE, PPTR_REPLACE; a filesystem with
//! the PARENT feature) take the same path: an entry of the parent
//! namespace whose name is the directory entry's and whose value is the
//! parent's inode and generation, matched by name and value; a replace
//! takes the old pointer out and adds the new one. The intent's inode
//! generation must be the inode's. On such a filesystem a removal never
//! takes the fork away.
//!
//! Order and change counts: one for each transaction that logs the inode.
//! A removal, and a set into a fork that holds nothing, are done in the
//! intent's own recovery transaction (one; a removal that finds nothing
//! logs nothing). A set into a fork that already holds attributes starts
//! with the kernel's replace state: the old entry goes in that transaction
//! (one, even when there is none, as the captured work holds the inode),
//! and the add (with the change time) comes from the captured work, after
//! every intent's own transaction, in a transaction of its own after a
//! roll (two more). So a removal logged after a set of the same entry
//! finds nothing, and the entry is there at the end.
//!
//! Attr forks in one leaf block (`attrleaf.rs` edits the block): the
//! removal state takes the entry out of the block, the add puts it in by
//! its hash; only the block is logged there (the inode by the roll of a
//! set's captured add). A set whose list no longer fits the inode moves
//! it into a new leaf block (`xfs_attr_shortform_to_leaf`): the fork offset
//! moves up to the default if below it, a block is allocated near the
//! inode, the entries go into it in list order, its reverse mapping is
//! deferred work, and the entry is added in a transaction of its own
//! after that; the change time is not set then (only a shortform add sets
//! it at recovery).
//!
//! A leaf removal whose rest fits the inode moves it back to a shortform
//! list in the same transaction (`xfs_attr3_leaf_to_shortform`): the block
//! leaves the fork (invalidated, never written), its reverse mapping and
//! free deferred; with nothing left the fork goes, unless a set's add
//! follows (which then comes before the deferred work).
//!
//! A remote value: its entry goes into the leaf incomplete; then, in
//! transactions of their own, its place is the first hole of the attr fork
//! that holds all its blocks (`xfs_bmap_first_unused`), and each
//! transaction maps one extent there: all the blocks still needed, in one
//! piece, allocated near the block `xfs_bmap_adjacent` picks from the
//! extents around the hole (the mapping merged with a contiguous
//! neighbour); the last also writes the value with its headers (not
//! logged: their LSNs stay null) and completes the entry.
//!
//! A fork whose block 0 is a leaf with value blocks after it is not "a
//! leaf" to the kernel (`xfs_attr_is_leaf`) and takes the node path: the
//! removal state marks the old entry incomplete (a remote value's block
//! and length cleared) in the intent's own transaction; its value blocks
//! are unmapped one extent per transaction (reverse mapping and free
//! deferred), then the entry leaves the block in a transaction of its
//! own, where a fork that is one leaf block again goes back to a
//! shortform list if the rest fits; a set's add comes after that.
//!
//! A set into an empty fork whose entry does not fit a shortform list
//! makes the empty list and moves it to a new leaf block in the intent's
//! own transaction; the add into the block follows in the chain, before
//! the block's reverse mapping and what the allocation let go of.
//!
//! Attr forks in node form (a da node at attr block 0): the same node
//! path, the leaf found through the nodes (`xfs_da3_node_lookup_int`: in
//! each node the first entry whose hash is not below the name's), and
//! after an add or a removal the leaf's last hash carried up the nodes as
//! far as it changes (`xfs_da3_fixhashpath`).
//!
//! A leaf with no room for an add (after a compaction, if it had holes):
//! a lone leaf is copied to a new attr block and attr block 0 becomes a
//! node over it (`xfs_attr3_leaf_to_node`), the add going on through the
//! node after a roll; a leaf under a node splits (`xfs_da3_split`): a new
//! leaf in a new attr block (the first unused, allocated near its
//! neighbours as `xfs_da_grow_inode` does), the entries balanced between
//! the two (`xfs_attr3_leaf_rebalance`), the new leaf linked in as a
//! sibling, the entry added where it falls, and the node given an entry
//! for the new leaf.
//!
//! The add state a set chose when its removal step ended is kept, as the
//! kernel keeps it: every intent's first step runs before any intent's
//! chain, so an earlier intent may change the fork's form under a later
//! one's add; the kernel then reads a block of the wrong kind and fails
//! the mount, and so is it refused here.
//!
//! A removal that leaves a leaf at most half full merges it with a sibling
//! as `xfs_da3_join` does (see [`ForkEditor::join_leaf`]): the sibling in
//! the same node, or one under the node before or after (the path shifted
//! to it); a node left at most half full then joins a sibling node the
//! same way, up the tree, and a root left with one child takes its bytes.
//! A name not found in a leaf that ends with its hash is looked for in the
//! next leaf (`xfs_da3_path_shift`), and so on.
//!
//! A split whose entry fits neither half splits the half it is due in
//! again, as `xfs_da3_split` does with its extra block; the node above
//! takes both new entries, splitting if it must.
//!
//! Refused, with the reason: an allocation the AG's longest free extent
//! cannot hold in one piece, intents the kernel's own checks reject (it
//! then fails the mount).

use super::agedit::{refuse, EditResult};
use super::attrleaf::{entsize_local, entsize_remote, Leaf};
use super::bmapedit::{extent_count, ForkEditor, Rec};
use super::defer::{Rmap, Work};
use super::{put_be16, put_be32, put_be64, RecoveryTime};
use crate::xfs::dahash::{da_hashname, parent_hashname};
use crate::xfs::format::attr::{
    XFS_ATTR3_RMT_MAGIC, XFS_ATTR_INCOMPLETE, XFS_ATTR_NSP_ONDISK_MASK, XFS_ATTR_PARENT,
    XFS_XATTR_SIZE_MAX,
};
use crate::xfs::format::da::{XFS_DA3_NODE_MAGIC, XFS_DA_NODE_MAGIC};
use crate::xfs::format::dinode::{
    XFS_DIFLAG2_BIGTIME, XFS_DINODE_FMT_BTREE, XFS_DINODE_FMT_DEV, XFS_DINODE_FMT_EXTENTS,
    XFS_DINODE_FMT_LOCAL,
};
use crate::xfs::format::dinode::{XFS_DIFLAG2_NREXT64, XFS_MAX_BMBT_EXTLEN};
use crate::xfs::format::sb::XFS_SB_FEAT_INCOMPAT_PARENT;
use crate::xfs::fs::{be16, be32, be64};
use crate::xfs::inode::Timestamp;
use crate::xfs::log::items::AttriItem;
use crate::xfs::read::ReadAt;

/// A parent pointer's value (`struct xfs_parent_rec`: inode, generation).
const PARENT_REC: u32 = 12;
/// Bits an ATTRI's filter may carry (`XFS_ATTRI_FILTER_MASK`).
const FILTER_MASK: u8 = XFS_ATTR_NSP_ONDISK_MASK | XFS_ATTR_INCOMPLETE;
/// `XFS_ATTR_SF_ENTSIZE_MAX`: names and values at least this long never
/// go into a shortform list.
const SF_ENTSIZE_MAX: usize = 255;
/// Size of a bmbt root in the inode with `n` records (`XFS_BMDR_SPACE_CALC`).
const fn bmdr(n: usize) -> usize {
    n.saturating_mul(16).saturating_add(4)
}

/// One shortform entry: where it starts in the list and how long it is.
struct SfEntry {
    at: usize,
    len: usize,
}

/// The shortform list's entries (after the 4-byte header), checked to lie
/// inside `totsize`.
fn sf_entries(sf: &[u8], ino: u64) -> EditResult<Vec<SfEntry>> {
    let total = usize::from(be16(sf, 0).unwrap_or(0));
    let count = usize::from(sf.get(2).copied().unwrap_or(0));
    if total < 4 || total > sf.len() {
        return refuse(format!(
            "inode {ino}: shortform attr list of {total} bytes in a fork of {}",
            sf.len()
        ));
    }
    let mut out = Vec::with_capacity(count);
    let mut at = 4usize;
    for i in 0..count {
        let nl = usize::from(sf.get(at).copied().unwrap_or(0));
        let vl = usize::from(sf.get(at.saturating_add(1)).copied().unwrap_or(0));
        let len = 3usize.saturating_add(nl).saturating_add(vl);
        if at.saturating_add(len) > total {
            return refuse(format!(
                "inode {ino}: shortform attr entry {i} runs past the list's {total} bytes"
            ));
        }
        out.push(SfEntry { at, len });
        at = at.saturating_add(len);
    }
    Ok(out)
}

/// What the inode holds that `bytesfit` looks at.
struct Shape {
    literal: usize,
    forkoff: usize,
    dformat: u8,
    /// Bytes the data fork uses in memory (`if_bytes`, or the broot's
    /// space for a btree).
    dbytes: usize,
    attr2: bool,
    default_off: usize,
}

/// `xfs_attr_shortform_bytesfit`: the fork offset (8-byte units) that
/// makes room for `bytes` of shortform list, 0 if none does.
fn bytesfit(s: &Shape, bytes: usize) -> usize {
    if bytes > s.literal {
        return 0;
    }
    let offset = s.literal.saturating_sub(bytes) >> 3;
    if s.dformat == XFS_DINODE_FMT_DEV {
        let min = 1;
        return if offset >= min { min } else { 0 };
    }
    let fork_size = if s.forkoff == 0 {
        0
    } else {
        s.literal.saturating_sub(s.forkoff.saturating_mul(8))
    };
    if bytes <= fork_size {
        return s.forkoff;
    }
    if !s.attr2 {
        return 0;
    }
    let mut dsize = s.dbytes;
    match s.dformat {
        XFS_DINODE_FMT_EXTENTS if s.forkoff == 0 && s.dbytes > s.default_off => dsize = bmdr(3),
        XFS_DINODE_FMT_BTREE if s.forkoff != 0 => {
            return if offset < s.forkoff { 0 } else { s.forkoff };
        }
        _ => {}
    }
    let minforkoff = dsize.max(bmdr(3)).div_ceil(8);
    let maxforkoff = s.literal.saturating_sub(bmdr(2)) >> 3;
    if offset >= maxforkoff {
        maxforkoff
    } else if offset >= minforkoff {
        offset
    } else {
        0
    }
}

/// What an ATTRI asks for, checked: the entry to take out (`old`, by name,
/// or for a parent pointer by name and value) and the one to add.
struct Request<'r> {
    old: (&'r [u8], &'r [u8]),
    new: Option<(&'r [u8], &'r [u8])>,
    parent: bool,
}

/// A region of `len` bytes (padded to 4), checked.
fn region<'r>(regions: &'r [Vec<u8>], i: usize, len: usize, what: &str) -> EditResult<&'r [u8]> {
    let r = regions.get(i).map(Vec::as_slice).unwrap_or(&[]);
    if r.len() != len.div_ceil(4).saturating_mul(4) {
        return refuse(format!(
            "{what} region of {} bytes for {len} bytes: the kernel fails the mount",
            r.len()
        ));
    }
    Ok(r.get(..len).unwrap_or(&[]))
}

/// Does an ATTRI pass the kernel's checks (`xfs_attri_validate`, the
/// region lengths, `xfs_attr_namecheck`, for parent pointers
/// `xfs_parent_namecheck` and `xfs_parent_valuecheck`)?
fn checked<'r>(a: &AttriItem, regions: &'r [Vec<u8>], parent_fs: bool) -> EditResult<Request<'r>> {
    let op = a.op_flags & 0xff;
    if a.op_flags & !0xff != 0 || a.attr_filter & !u32::from(FILTER_MASK) != 0 {
        return refuse(format!(
            "flags {:#x} / filter {:#x} are invalid: the kernel fails the mount",
            a.op_flags, a.attr_filter
        ));
    }
    let parent = matches!(op, 4..=6);
    if !matches!(op, 1..=6) {
        return refuse(format!(
            "operation {op} is invalid: the kernel fails the mount"
        ));
    }
    if (a.attr_filter & u32::from(XFS_ATTR_NSP_ONDISK_MASK)).count_ones() > 1 {
        return refuse(format!(
            "filter {:#x} names more than one namespace: the kernel fails the mount",
            a.attr_filter
        ));
    }
    if parent {
        if !parent_fs {
            return refuse(
                "a parent-pointer intent on a filesystem without parent pointers: the kernel fails the mount"
                    .into(),
            );
        }
        if a.attr_filter != u32::from(XFS_ATTR_PARENT) || a.value_len != PARENT_REC {
            return refuse(format!(
                "a parent-pointer intent with filter {:#x} and a value of {} bytes: the kernel fails the mount",
                a.attr_filter, a.value_len
            ));
        }
    } else if a.attr_filter & u32::from(XFS_ATTR_PARENT | XFS_ATTR_INCOMPLETE) != 0 {
        return refuse(format!(
            "filter {:#x} (parent or incomplete) on an xattr intent is not done by this tool",
            a.attr_filter
        ));
    }
    let nl = usize::try_from(a.name_len).unwrap_or(usize::MAX);
    let vl = usize::try_from(a.value_len).unwrap_or(usize::MAX);
    let new_nl = usize::try_from(a.new_name_len.unwrap_or(0)).unwrap_or(usize::MAX);
    let name_ok = |n: usize| n > 0 && n <= 255;
    if !name_ok(nl) || (op == 6 && !name_ok(new_nl)) || a.value_len > XFS_XATTR_SIZE_MAX {
        return refuse(format!(
            "name of {nl} bytes, value of {vl}: the kernel fails the mount"
        ));
    }
    // A set logs a value region, an xattr removal none.
    if !parent && (op == 2) != (a.value_len == 0) {
        let what = if op == 2 { "removal" } else { "set" };
        return refuse(format!(
            "a {what} with a value of {vl} bytes: the kernel fails the mount"
        ));
    }
    let name = region(regions, 0, nl, "name")?;
    let (new_name, vi) = if op == 6 {
        (Some(region(regions, 1, new_nl, "new name")?), 2)
    } else {
        (None, 1)
    };
    let value = if vl == 0 {
        &[][..]
    } else {
        region(regions, vi, vl, "value")?
    };
    let new_value = if op == 6 {
        Some(region(regions, vi.saturating_add(1), vl, "new value")?)
    } else {
        None
    };
    let bad_name = |n: &[u8]| n.contains(&0) || (parent && n.contains(&b'/'));
    if bad_name(name) || new_name.is_some_and(bad_name) {
        return refuse(
            "a name with a NUL byte (or a '/' in a parent pointer): the kernel fails the mount"
                .into(),
        );
    }
    Ok(match op {
        2 | 5 => Request {
            old: (name, value),
            new: None,
            parent,
        },
        6 => Request {
            old: (name, value),
            new: new_name.zip(new_value),
            parent,
        },
        _ => Request {
            old: (name, value),
            new: Some((name, value)),
            parent,
        },
    })
}

/// A remote value block's header (`xfs_attr3_rmt_hdr`) and magic.
const RMT_HDR: usize = 56;

/// The attr fork's first extent record in inode `b` (core size `core`):
/// its byte offset, its two words and the block it maps.
fn attr_rec0(b: &[u8], core: usize) -> (usize, u64, u64, u64) {
    let at = core.saturating_add(usize::from(b.get(82).copied().unwrap_or(0)).saturating_mul(8));
    let l0 = be64(b, at).unwrap_or(0);
    let l1 = be64(b, at.saturating_add(8)).unwrap_or(0);
    (at, l0, l1, ((l0 & 0x1ff) << 43) | (l1 >> 21))
}

/// Set an inode's attr extent count (where the large-count layout keeps
/// it when the inode has one).
fn set_anextents(b: &mut [u8], n: u32) {
    let nrext64 = b.get(4) == Some(&3) && be64(b, 120).unwrap_or(0) & XFS_DIFLAG2_NREXT64 != 0;
    if nrext64 {
        put_be32(b, 76, n);
    } else {
        put_be16(b, 80, u16::try_from(n).unwrap_or(u16::MAX));
    }
}

/// di_nblocks moved by `delta`.
fn add_nblocks(b: &mut [u8], delta: i64) {
    let nb = be64(b, 64).unwrap_or(0).saturating_add_signed(delta);
    put_be64(b, 64, nb);
}

/// The add of a set whose first transaction took the old entry out: done
/// from the captured work, after every intent's first transaction.
#[derive(Clone, Debug)]
pub struct PendingAdd {
    ino: u64,
    name: Vec<u8>,
    value: Vec<u8>,
    ns: u8,
    /// The add state the kernel chose when the removal before it ended
    /// (`xfs_attr_init_add_state`), which it keeps even when another
    /// intent changes the fork's form in between.
    state: AddState,
}

/// An add state: into a shortform list, into the leaf at attr block 0,
/// or through the node path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddState {
    Short,
    Leaf,
    Node,
}

/// Where a remote value's allocation stands: its first attr block, the
/// next one to map and how many are left.
#[derive(Clone, Copy, Debug)]
pub struct RemoteAt {
    first: u64,
    next: u64,
    left: u64,
}

/// An old entry marked incomplete, to be taken out.
#[derive(Clone, Debug)]
pub struct Removal {
    ino: u64,
    ns: u8,
    name: Vec<u8>,
    value: Vec<u8>,
    parent: bool,
    /// A set's add follows (the fork is kept for it).
    set: bool,
    /// That add.
    then: Option<PendingAdd>,
}

/// Free space for the attribute editor: blocks allocated near a hint
/// (their reverse mapping left to the caller) and the free-list blocks an
/// allocation let go of, as deferred work.
pub trait AttrSpace {
    /// `len` blocks in AG `agno` near `hint`: the first, or `None`.
    fn near(&mut self, agno: u32, hint: u32, len: u32) -> EditResult<Option<u32>>;
    /// One block for the attr fork's bmbt in AG `agno` near `hint`, its
    /// reverse mapping added (`xfs_bmbt_alloc_block`), or `None`.
    fn bmbt_block(
        &mut self,
        agno: u32,
        hint: u32,
        owner: super::alloc::RmapOwner,
    ) -> EditResult<Option<u32>>;
    /// What allocations in AG `agno` deferred.
    fn let_go(&mut self, agno: u32) -> EditResult<Vec<Work>>;
}

impl Removal {
    /// The set's add that follows, in the add state the fork is in now.
    pub fn then_add<R: ReadAt>(&self, ed: &ForkEditor<'_, R>) -> EditResult<Option<PendingAdd>> {
        let Some(p) = &self.then else {
            return Ok(None);
        };
        Ok(Some(PendingAdd {
            state: ed.add_state(self.ino)?,
            ..p.clone()
        }))
    }
}

/// An attr fork as this editor finds it.
enum AttrFork {
    Short(SfFork),
    Leaf(LeafFork),
    /// Block 0 is a node: the leaves lie under it.
    Node,
}

/// A da node block's layout: header size, where its entry count and its
/// level lie (`xfs_da3_node_hdr`, `xfs_da_node_hdr`); entries (hash,
/// block) follow the header.
fn node_layout(v5: bool) -> (usize, usize, usize) {
    if v5 {
        (64, 56, 58)
    } else {
        (16, 12, 14)
    }
}

/// A node block on the way down to a leaf: where it is, its bytes and the
/// entry taken (`xfs_da_state_blk`).
/// Where a leaf's join sibling is: at an index of the same node, or under
/// the node after (`true`) or before, with its block number when known.
enum Sib {
    Same(usize),
    Across(bool, Option<u32>),
}

#[derive(Clone)]
struct NodeStep {
    boff: u64,
    b: Vec<u8>,
    index: usize,
}

/// An attr fork whose block 0 is a leaf (at byte `boff`): the whole fork
/// (`single`, `xfs_attr_is_leaf`), or with remote value blocks after it,
/// which the kernel takes the node path for.
struct LeafFork {
    boff: u64,
    leaf: Leaf,
    single: bool,
}

/// Work an attribute intent's recovery transaction leaves to the captured
/// chain, in order.
#[derive(Clone, Debug)]
pub enum AttrTask {
    /// A set's add, in the add state it holds (`XFS_DAS_SF_ADD`,
    /// `XFS_DAS_LEAF_ADD`, `XFS_DAS_NODE_ADD`).
    Add(PendingAdd),
    /// A remote value's blocks allocated (one extent per transaction) and
    /// written, its entry completed; `at`: where the allocation stands
    /// (none before the first).
    RemoteSet(PendingAdd, Option<RemoteAt>),
    /// One extent of an old remote value (attr blocks `blk` on, `count`)
    /// unmapped (`XFS_DAS_NODE_REMOVE_RMT`); again while any is left.
    RemoveRmt { ino: u64, blk: u64, count: u64 },
    /// The incomplete old entry taken out of the leaf, and the fork back
    /// to a shortform list if it is one leaf block again and the rest fits
    /// (`XFS_DAS_NODE_REMOVE_ATTR`, `xfs_attr_leaf_shrink`).
    RemoveAttr(Removal),
    /// The deferred work one transaction left (reverse mappings, frees),
    /// in order.
    Group(Vec<Work>),
}

/// What a set's add leaves to do.
pub enum AddOutcome {
    /// Done.
    Done,
    /// A remote value's entry went into the leaf, INCOMPLETE: its blocks
    /// are allocated and written, and the entry completed, in transactions
    /// of their own afterwards ([`ForkEditor::attr_remote_step`]).
    Remote(PendingAdd),
    /// The fork changed form first: a shortform list moved to a new leaf
    /// block (`xfs_attr_shortform_to_leaf`), or a lone leaf with no room
    /// became a node over a copy of it (`xfs_attr3_leaf_to_node`). The add
    /// goes on, in a transaction of its own, in the state it now holds.
    Again(PendingAdd),
}

/// An inode's shortform attr list as the kernel holds it in memory.
struct SfFork {
    ioff: u64,
    b: Vec<u8>,
    core: usize,
    forkoff: usize,
    dformat: u8,
    /// The fork exists but holds nothing (extents format, no extents).
    empty: bool,
    sf: Vec<u8>,
}

impl<R: ReadAt> ForkEditor<'_, R> {
    /// The attr fork of `ino`: `None` when it has none.
    fn attr_fork(&self, ino: u64) -> EditResult<Option<AttrFork>> {
        let (ioff, b) = self.inode(ino)?;
        if be16(&b, 2) == Some(0) {
            return refuse(format!("inode {ino} is free: the kernel fails the mount"));
        }
        let core = if b.get(4) == Some(&3) { 176 } else { 100 };
        let literal = b.len().saturating_sub(core);
        let forkoff = usize::from(b.get(82).copied().unwrap_or(0));
        let aformat = b.get(83).copied().unwrap_or(0);
        let dformat = b.get(5).copied().unwrap_or(0);
        if forkoff.saturating_mul(8) >= literal {
            return refuse(format!(
                "inode {ino}: fork offset {forkoff} beyond the inode"
            ));
        }
        if forkoff == 0 {
            return Ok(None);
        }
        let anext = extent_count(&b, true);
        let empty = aformat == XFS_DINODE_FMT_EXTENTS && anext == 0;
        let fork_at = core.saturating_add(forkoff.saturating_mul(8));
        if (aformat == XFS_DINODE_FMT_EXTENTS && anext > 0) || aformat == XFS_DINODE_FMT_BTREE {
            let recs = self.attr_extents(ino)?;
            if recs.iter().any(|r| r.unwritten) {
                return refuse(format!("inode {ino}: an unwritten attr fork extent"));
            }
            // xfs_attr_is_leaf: one extent, one block, at file block 0.
            let single = matches!(recs.as_slice(), [r] if r.off == 0 && r.len == 1);
            let Some(r0) = recs.iter().find(|r| r.off == 0) else {
                return refuse(format!("inode {ino}: the attr fork has no block 0"));
            };
            let fs = self.fs();
            let boff = self
                .block_off("attr block", r0.start)
                .map_err(|e| e.within(|| format!("inode {ino}")))?;
            let bs = usize::try_from(fs.geo.blocksize).unwrap_or(0);
            let what = "attr leaf block";
            let bytes = self.read(what, boff, bs)?;
            if matches!(
                be16(&bytes, 8),
                Some(XFS_DA_NODE_MAGIC | XFS_DA3_NODE_MAGIC)
            ) {
                return Ok(Some(AttrFork::Node));
            }
            let leaf = Leaf::parse(bytes, fs.geo.v5, what)
                .map_err(|e| e.within(|| format!("inode {ino}")))?;
            return Ok(Some(AttrFork::Leaf(LeafFork { boff, leaf, single })));
        }
        if aformat != XFS_DINODE_FMT_LOCAL && !empty {
            return refuse(format!("inode {ino}: an attr fork of format {aformat}"));
        }
        let sf = if empty {
            vec![0, 4, 0, 0]
        } else {
            let fork = b.get(fork_at..).unwrap_or(&[]);
            let total = usize::from(be16(fork, 0).unwrap_or(0));
            sf_entries(fork, ino)?;
            fork.get(..total).unwrap_or(&[]).to_vec()
        };
        Ok(Some(AttrFork::Short(SfFork {
            ioff,
            b,
            core,
            forkoff,
            dformat,
            empty,
            sf,
        })))
    }

    /// The hash an attr leaf orders entry `name` by (`xfs_attr_hashval`).
    fn attr_hash(&self, ns: u8, name: &[u8], value: &[u8]) -> EditResult<u32> {
        if ns & XFS_ATTR_PARENT == 0 {
            return Ok(da_hashname(name));
        }
        let ascii_ci = self.fs().sb.versionnum & 0x4000 != 0;
        let p_ino = be64(value, 0).unwrap_or(0);
        Ok(parent_hashname(name, p_ino, ascii_ci))
    }

    /// What `bytesfit` needs of the inode in `f`, the fork at `forkoff`.
    fn shape(&self, f: &SfFork, ino: u64, forkoff: usize) -> EditResult<Shape> {
        let b = &f.b;
        let isize = b.len();
        let literal = isize.saturating_sub(f.core);
        let dbytes = match f.dformat {
            XFS_DINODE_FMT_DEV => 0,
            XFS_DINODE_FMT_LOCAL => usize::try_from(be64(b, 56).unwrap_or(0)).unwrap_or(usize::MAX),
            XFS_DINODE_FMT_EXTENTS => {
                usize::try_from(extent_count(b, false).saturating_mul(16)).unwrap_or(usize::MAX)
            }
            XFS_DINODE_FMT_BTREE => {
                bmdr(usize::from(be16(b, f.core.saturating_add(2)).unwrap_or(0)))
            }
            d => return refuse(format!("inode {ino}: data fork format {d}")),
        };
        let fs = self.fs();
        Ok(Shape {
            literal,
            forkoff,
            dformat: f.dformat,
            dbytes,
            attr2: fs.geo.v5 || fs.sb.features2 & 0x08 != 0,
            default_off: if isize == 256 {
                literal.saturating_sub(bmdr(2))
            } else {
                bmdr(12)
            },
        })
    }

    /// Write `f` back with its list at `forkoff` (0: no fork), the change
    /// count raised by `bumps`.
    fn put_sf(&mut self, ino: u64, mut f: SfFork, forkoff: usize, bumps: u64) -> EditResult<()> {
        let (fo, af) = if forkoff == 0 {
            (0, XFS_DINODE_FMT_EXTENTS)
        } else {
            (u8::try_from(forkoff).unwrap_or(0), XFS_DINODE_FMT_LOCAL)
        };
        if let Some(d) = f.b.get_mut(82..84) {
            d.copy_from_slice(&[fo, af]);
        }
        if forkoff != 0 {
            let at = f.core.saturating_add(forkoff.saturating_mul(8));
            match f.b.get_mut(at..at.saturating_add(f.sf.len())) {
                Some(d) => d.copy_from_slice(&f.sf),
                None => return refuse(format!("inode {ino}: the attr list overruns the inode")),
            }
        }
        self.log_inode(ino, f.ioff, f.b, bumps);
        Ok(())
    }

    /// Finish one ATTRI's first transaction (`regions`: its name and value
    /// regions): a removal whole; a set's removal of the old entry, its add
    /// returned when it waits for the captured work (the fork already held
    /// attributes), else done too.
    pub fn attr(
        &mut self,
        a: &AttriItem,
        regions: &[Vec<u8>],
        now: RecoveryTime,
        space: &mut dyn AttrSpace,
    ) -> EditResult<Vec<AttrTask>> {
        let mut tasks = self.attr_first(a, regions, now, space)?;
        if tasks.iter().any(|t| matches!(t, AttrTask::Add(_))) {
            let state = self.add_state(a.ino)?;
            for t in &mut tasks {
                if let AttrTask::Add(p) = t {
                    p.state = state;
                }
            }
        }
        Ok(tasks)
    }

    /// `xfs_attr_init_add_state` for `ino`'s attr fork as it is now.
    pub fn add_state(&self, ino: u64) -> EditResult<AddState> {
        Ok(match self.attr_fork(ino)? {
            None | Some(AttrFork::Short(_)) => AddState::Short,
            Some(AttrFork::Leaf(LeafFork { single: true, .. })) => AddState::Leaf,
            Some(AttrFork::Leaf(_) | AttrFork::Node) => AddState::Node,
        })
    }

    /// [`Self::attr`] before the add states are filled in.
    fn attr_first(
        &mut self,
        a: &AttriItem,
        regions: &[Vec<u8>],
        now: RecoveryTime,
        space: &mut dyn AttrSpace,
    ) -> EditResult<Vec<AttrTask>> {
        let parent_fs = self.fs().sb.features_incompat & XFS_SB_FEAT_INCOMPAT_PARENT != 0;
        let req = checked(a, regions, parent_fs)?;
        let ino = a.ino;
        let (_, ib) = self.inode(ino)?;
        // A parent pointer names its inode by generation too
        // (xlog_recover_iget_handle).
        if req.parent && be16(&ib, 2) != Some(0) && be32(&ib, 92) != Some(a.igen) {
            return refuse(format!(
                "inode {ino} has generation {}, the intent {}: the kernel fails the mount",
                be32(&ib, 92).unwrap_or(0),
                a.igen
            ));
        }
        self.done = self.done.saturating_add(1);
        let Some(fork) = self.attr_fork(ino)? else {
            if req.parent {
                return refuse(format!(
                    "inode {ino} has no attr fork for a parent-pointer intent: not done by this tool"
                ));
            }
            // No attr fork: nothing (the inode is not logged).
            return Ok(Vec::new());
        };
        let ns = u8::try_from(a.attr_filter & u32::from(XFS_ATTR_NSP_ONDISK_MASK)).unwrap_or(0);
        let pending = req.new.map(|(n, v)| PendingAdd {
            ino,
            name: n.to_vec(),
            value: v.to_vec(),
            ns,
            state: AddState::Short,
        });
        let set = pending.is_some();
        let (name, value) = req.old;
        let mut f = match fork {
            AttrFork::Node | AttrFork::Leaf(LeafFork { single: false, .. }) => {
                // The node path (a node, or a leaf with remote value
                // blocks): the old entry is marked incomplete here; its
                // value blocks, then the entry, go in transactions of
                // their own.
                let hash = self.attr_hash(ns, name, value)?;
                let parent = req.parent;
                let (mut lf, _, found) = self.leaf_lookup(ino, hash, |fl, n, v| {
                    n == name && fl & XFS_ATTR_NSP_ONDISK_MASK == ns && (!parent || v == value)
                })?;
                let mut tasks = Vec::new();
                if let Ok(i) = found {
                    let rmt = lf.leaf.remote(i);
                    lf.leaf.set_incomplete(i);
                    self.put_attr_block(lf.boff, lf.leaf.b);
                    if let Some((blk, len)) = rmt.filter(|r| r.0 > 0) {
                        tasks.push(AttrTask::RemoveRmt {
                            ino,
                            blk: u64::from(blk),
                            count: self.rmt_blocks(len),
                        });
                    }
                    tasks.push(AttrTask::RemoveAttr(Removal {
                        ino,
                        ns,
                        name: name.to_vec(),
                        value: value.to_vec(),
                        parent,
                        set,
                        then: pending,
                    }));
                } else {
                    tasks.extend(pending.map(AttrTask::Add));
                }
                if !tasks.is_empty() {
                    // The capture holds the inode: logged once more.
                    self.log_inode_core(ino, 1)?;
                }
                return Ok(tasks);
            }
            AttrFork::Leaf(mut lf) => {
                // The leaf removal state: the old entry leaves the block;
                // only the block is logged, and the inode when the captured
                // add holds it.
                let hash = self.attr_hash(ns, name, value)?;
                let parent = req.parent;
                let found = lf.leaf.lookup(hash, |fl, n, v| {
                    n == name && fl & XFS_ATTR_NSP_ONDISK_MASK == ns && (!parent || v == value)
                });
                let mut tasks: Vec<AttrTask> = pending.into_iter().map(AttrTask::Add).collect();
                if let Ok(i) = found {
                    lf.leaf.remove(i);
                    let (_, ib) = self.inode(ino)?;
                    let fit = match lf.leaf.shortform_bytes() {
                        Some(bytes) => self.leaf_allfit(&ib, ino, bytes)?,
                        None => None,
                    };
                    if let Some(forkoff) = fit {
                        // Back to a shortform list in this transaction; the
                        // block's reverse mapping and free are deferred,
                        // after a set's add.
                        let work = self.leaf_to_sf(ino, lf, forkoff, set)?;
                        tasks.push(AttrTask::Group(work));
                        return Ok(tasks);
                    }
                    self.put_attr_block(lf.boff, lf.leaf.b);
                }
                if set {
                    // The capture holds the inode: logged once more.
                    self.log_inode_core(ino, 1)?;
                }
                return Ok(tasks);
            }
            AttrFork::Short(f) => f,
        };
        let hasattr = !f.empty;
        if !set && !hasattr {
            if req.parent {
                return refuse(format!(
                    "inode {ino} has no attributes for a parent-pointer removal: not done by this tool"
                ));
            }
            return Ok(Vec::new());
        }
        if set && !hasattr {
            // The add state straight away, in this transaction.
            if let Some(p) = pending {
                if !self.sf_fits(&f, &p)? {
                    // An empty list made (xfs_attr_shortform_create) and
                    // moved to a new leaf block here; the add into the
                    // block goes on, before what the move deferred.
                    let (then, work) = self.sf_to_leaf(f, &p, space)?;
                    return Ok(vec![AttrTask::Add(then), AttrTask::Group(work)]);
                }
                self.sf_add(f, &p, now, 1)?;
            }
            return Ok(Vec::new());
        }
        // The removal state: the old entry (by name and namespace; for a
        // parent pointer, its value too) leaves the list.
        let ents = sf_entries(&f.sf, ino)?;
        let sf = &f.sf;
        let found = ents.iter().find(|e| {
            let nl = usize::from(sf.get(e.at).copied().unwrap_or(0));
            let vl = usize::from(sf.get(e.at.saturating_add(1)).copied().unwrap_or(0));
            let fl = sf.get(e.at.saturating_add(2)).copied().unwrap_or(0);
            let n_at = e.at.saturating_add(3);
            let v_at = n_at.saturating_add(nl);
            nl == name.len()
                && sf.get(n_at..v_at) == Some(name)
                && fl & XFS_ATTR_NSP_ONDISK_MASK == ns
                && (!req.parent || sf.get(v_at..v_at.saturating_add(vl)) == Some(value))
        });
        let Some(e) = found else {
            if set {
                // Nothing logged but the capture holding the inode: one
                // change count; the add comes later.
                let forkoff = f.forkoff;
                self.put_sf(ino, f, forkoff, 1)?;
            }
            return Ok(pending.into_iter().map(AttrTask::Add).collect());
        };
        let end = e.at.saturating_add(e.len).min(f.sf.len());
        f.sf.drain(e.at.min(end)..end);
        if let Some(c) = f.sf.get_mut(2) {
            *c = c.saturating_sub(1);
        }
        let total = u16::try_from(f.sf.len()).unwrap_or(u16::MAX);
        put_be16(&mut f.sf, 0, total);
        // The last entry of a removal takes the fork with it, unless the
        // data fork is a btree or the filesystem has parent pointers.
        let last = f.sf.len() == 4 && !set && f.dformat != XFS_DINODE_FMT_BTREE;
        let forkoff = if last && !parent_fs {
            0
        } else {
            let fo = bytesfit(&self.shape(&f, ino, f.forkoff)?, f.sf.len());
            if fo == 0 {
                return refuse(format!("inode {ino}: no fork offset fits the attr list"));
            }
            fo
        };
        self.put_sf(ino, f, forkoff, 1)?;
        Ok(pending.into_iter().map(AttrTask::Add).collect())
    }

    /// `xfs_attr_shortform_allfit` for a leaf whose entries make a list of
    /// `bytes`: `Some(Some(forkoff))` it fits there, `Some(None)` nothing is
    /// left (the fork may go), `None` it does not fit.
    fn leaf_allfit(&self, ib: &[u8], ino: u64, bytes: usize) -> EditResult<Option<Option<usize>>> {
        let core = if ib.get(4) == Some(&3) { 176 } else { 100 };
        let f = SfFork {
            ioff: 0,
            b: ib.to_vec(),
            core,
            forkoff: usize::from(ib.get(82).copied().unwrap_or(0)),
            dformat: ib.get(5).copied().unwrap_or(0),
            empty: false,
            sf: Vec::new(),
        };
        let attr2 = self.fs().geo.v5 || self.fs().sb.features2 & 0x08 != 0;
        if attr2 && bytes == 4 && f.dformat != XFS_DINODE_FMT_BTREE {
            return Ok(Some(None));
        }
        let fo = bytesfit(&self.shape(&f, ino, f.forkoff)?, bytes);
        Ok((fo != 0).then_some(Some(fo)))
    }

    /// `xfs_exchmaps_attr_to_sf`, after an attr-fork exchange: when inode
    /// `ino`'s attr fork is one leaf block at block 0 (`xfs_attr_is_leaf`)
    /// whose entries all fit a shortform list, the list replaces it.
    /// Returns the deferred work, or `None` when the fork stays as it is.
    pub(super) fn exchanged_attr_to_sf(&mut self, ino: u64) -> EditResult<Option<Vec<Work>>> {
        let (_, ib) = self.inode(ino)?;
        let is_leaf = ib.get(83) == Some(&XFS_DINODE_FMT_EXTENTS)
            && extent_count(&ib, true) == 1
            && matches!(self.attr_extents(ino)?.as_slice(), [r] if r.off == 0 && r.len == 1);
        if !is_leaf {
            return Ok(None);
        }
        let Some(AttrFork::Leaf(lf)) = self.attr_fork(ino)? else {
            return Ok(None);
        };
        // The leaf is read for this inode: a v5 block must name it as its
        // owner (xfs_attr3_leaf_header_check).
        let owner = be64(&lf.leaf.b, 48).unwrap_or(0);
        if self.fs().geo.v5 && owner != ino {
            return refuse(format!(
                "inode {ino}: its attr leaf names inode {owner} as owner: the kernel fails the mount"
            ));
        }
        let fit = match lf.leaf.shortform_bytes() {
            Some(bytes) => self.leaf_allfit(&ib, ino, bytes)?,
            None => None,
        };
        match fit {
            Some(forkoff) => self.leaf_to_sf(ino, lf, forkoff, false).map(Some),
            None => Ok(None),
        }
    }

    /// `xfs_attr3_leaf_to_shortform`: the leaf block leaves the fork (its
    /// buffer invalidated: nothing of it is written; di_nblocks - 1), and
    /// its entries, in the block's order, make a shortform list at
    /// `forkoff`; with nothing left the fork goes, unless a set's add
    /// follows. Returns the deferred reverse-mapping removal and free.
    fn leaf_to_sf(
        &mut self,
        ino: u64,
        lf: LeafFork,
        forkoff: Option<usize>,
        set: bool,
    ) -> EditResult<Vec<Work>> {
        let (ioff, mut b) = self.inode(ino)?;
        let core: usize = if b.get(4) == Some(&3) { 176 } else { 100 };
        let fs = self.fs();
        let g = fs.geo;
        let (_, _, _, fsb) = attr_rec0(&b, core);
        let (agno, agbno) = g.split_fsb(crate::xfs::types::FsBlock(fsb));
        self.drop_attr_block(lf.boff);
        set_anextents(&mut b, 0);
        add_nblocks(&mut b, -1);
        match forkoff {
            None if !set => {
                if let Some(d) = b.get_mut(82..84) {
                    d.copy_from_slice(&[0, XFS_DINODE_FMT_EXTENTS]);
                }
            }
            None => {
                // The fork stays, empty, for the add that follows.
                if let Some(d) = b.get_mut(83) {
                    *d = XFS_DINODE_FMT_EXTENTS;
                }
            }
            Some(fo) => {
                let mut sf = vec![0u8, 4, 0, 0];
                for i in 0..lf.leaf.hdr.count {
                    let (flags, name, value) = lf.leaf.local(i);
                    if flags & 0x80 != 0 {
                        continue;
                    }
                    sf.push(u8::try_from(name.len()).unwrap_or(0));
                    sf.push(u8::try_from(value.len()).unwrap_or(0));
                    sf.push(flags & XFS_ATTR_NSP_ONDISK_MASK);
                    sf.extend_from_slice(name);
                    sf.extend_from_slice(value);
                    if let Some(c) = sf.get_mut(2) {
                        *c = c.saturating_add(1);
                    }
                }
                let total = u16::try_from(sf.len()).unwrap_or(u16::MAX);
                put_be16(&mut sf, 0, total);
                if let Some(d) = b.get_mut(82..84) {
                    d.copy_from_slice(&[u8::try_from(fo).unwrap_or(0), XFS_DINODE_FMT_LOCAL]);
                }
                let at = core.saturating_add(fo.saturating_mul(8));
                match b.get_mut(at..at.saturating_add(sf.len())) {
                    Some(d) => d.copy_from_slice(&sf),
                    None => {
                        return refuse(format!("inode {ino}: the attr list overruns the inode"))
                    }
                }
            }
        }
        self.log_inode(ino, ioff, b, 1);
        let m = Rmap {
            start: agbno.0,
            len: 1,
            owner: ino,
            offset: 0,
            attr: true,
            bmbt: false,
            unwritten: false,
        };
        Ok(Work::unmap_and_free(agno.0, m).to_vec())
    }

    /// The inode's core logged `bumps` times more (its change count).
    fn log_inode_core(&mut self, ino: u64, bumps: u64) -> EditResult<()> {
        let (ioff, b) = self.inode(ino)?;
        self.log_inode(ino, ioff, b, bumps);
        Ok(())
    }

    /// Would `p` go into `f`'s shortform list?
    fn sf_fits(&self, f: &SfFork, p: &PendingAdd) -> EditResult<bool> {
        if p.name.len() >= SF_ENTSIZE_MAX || p.value.len() >= SF_ENTSIZE_MAX {
            return Ok(false);
        }
        let newsize =
            f.sf.len()
                .saturating_add(3)
                .saturating_add(p.name.len())
                .saturating_add(p.value.len());
        Ok(bytesfit(&self.shape(f, p.ino, f.forkoff)?, newsize) != 0)
    }

    /// A set's add from the captured work (the roll before it is the
    /// caller's), and whether it logged the inode. Into a shortform list:
    /// its transaction logs the inode. A
    /// list that cannot take it moves to a new leaf block first (its
    /// reverse mapping and the add itself then follow, see [`AddOutcome`]).
    /// Into a leaf block: the inode is not logged.
    pub fn attr_add(
        &mut self,
        p: &PendingAdd,
        now: RecoveryTime,
        space: &mut dyn AttrSpace,
    ) -> EditResult<(AddOutcome, bool, Vec<Work>)> {
        let ino = p.ino;
        let f = match (p.state, self.attr_fork(ino)?) {
            (_, None) => return refuse(format!("inode {ino}: the attr fork is gone")),
            (AddState::Short, Some(AttrFork::Short(f))) => f,
            (AddState::Short, Some(_)) => {
                return refuse(format!(
                    "inode {ino}: the kernel adds this attribute as into a shortform list, which another intent turned into blocks: not done by this tool"
                ))
            }
            (_, Some(AttrFork::Short(_))) | (AddState::Leaf, Some(AttrFork::Node)) => {
                return refuse(format!(
                    "inode {ino}: another intent changed the attr fork's form after the kernel chose how to add this attribute; it reads a block that is no longer a leaf or node and fails the mount"
                ))
            }
            (_, Some(AttrFork::Leaf(_) | AttrFork::Node)) => {
                let (out, work) = self.attr_leaf_add(p, space)?;
                let grew = !work.is_empty();
                return Ok((out, grew, work));
            }
        };
        if self.sf_fits(&f, p)? {
            self.sf_add(f, p, now, 1)?;
            return Ok((AddOutcome::Done, true, Vec::new()));
        }
        let (then, work) = self.sf_to_leaf(f, p, space)?;
        Ok((AddOutcome::Again(then), true, work))
    }

    /// `xfs_attr_shortform_to_leaf`: the list leaves the inode (the fork
    /// offset moved up to the default if below it), a block is allocated
    /// near the inode for a new leaf, and the entries go into it in list
    /// order. The inode is logged in this transaction.
    fn sf_to_leaf(
        &mut self,
        mut f: SfFork,
        p: &PendingAdd,
        space: &mut dyn AttrSpace,
    ) -> EditResult<(PendingAdd, Vec<Work>)> {
        let ino = p.ino;
        let fs = self.fs();
        let g = fs.geo;
        // xfs_bmap_forkoff_reset.
        let mut forkoff = f.forkoff;
        if f.dformat != XFS_DINODE_FMT_DEV && f.dformat != XFS_DINODE_FMT_BTREE {
            let dfl = self.shape(&f, ino, forkoff)?.default_off >> 3;
            forkoff = forkoff.max(dfl);
        }
        let ioff = f.ioff;
        let (agno, agbno) = {
            let bs = u64::from(g.blocksize).max(1);
            let agbytes = u64::from(g.agblocks).saturating_mul(bs).max(1);
            let agno = ioff.checked_div(agbytes).unwrap_or(0);
            let agbno = ioff
                .checked_rem(agbytes)
                .unwrap_or(0)
                .checked_div(bs)
                .unwrap_or(0);
            (
                u32::try_from(agno).unwrap_or(u32::MAX),
                u32::try_from(agbno).unwrap_or(u32::MAX),
            )
        };
        let Some(bno) = space.near(agno, agbno, 1)? else {
            return refuse(format!(
                "inode {ino}: no block for an attr leaf in AG {agno}"
            ));
        };
        let fsb = (u64::from(agno) << g.agblklog) | u64::from(bno);
        let boff = self
            .block_off("attr block", fsb)
            .map_err(|e| e.within(|| format!("inode {ino}")))?;
        let bs = usize::try_from(g.blocksize).unwrap_or(0);
        let mut leaf = Leaf::create(bs, g.v5, boff / 512, ino, &fs.meta_uuid());
        for e in sf_entries(&f.sf, ino)? {
            let nl = usize::from(f.sf.get(e.at).copied().unwrap_or(0));
            let vl = usize::from(f.sf.get(e.at.saturating_add(1)).copied().unwrap_or(0));
            let fl = f.sf.get(e.at.saturating_add(2)).copied().unwrap_or(0);
            let n_at = e.at.saturating_add(3);
            let name =
                f.sf.get(n_at..n_at.saturating_add(nl))
                    .unwrap_or(&[])
                    .to_vec();
            let value =
                f.sf.get(n_at.saturating_add(nl)..n_at.saturating_add(nl).saturating_add(vl))
                    .unwrap_or(&[])
                    .to_vec();
            let ns = fl & XFS_ATTR_NSP_ONDISK_MASK;
            let hash = self.attr_hash(ns, &name, &value)?;
            let Err(i) = leaf.lookup(hash, |fl2, n, v| {
                n == name.as_slice()
                    && fl2 & XFS_ATTR_NSP_ONDISK_MASK == ns
                    && (ns & XFS_ATTR_PARENT == 0 || v == value.as_slice())
            }) else {
                return refuse(format!(
                    "inode {ino}: the shortform list names an attribute twice"
                ));
            };
            if !leaf.add(i, hash, ns, &name, &value)? {
                return refuse(format!(
                    "inode {ino}: the shortform list does not fit a leaf block"
                ));
            }
        }
        self.put_attr_block(boff, leaf.b);
        // The fork: one extent (file block 0 -> the new block), nblocks + 1.
        if let Some(d) = f.b.get_mut(82..84) {
            d.copy_from_slice(&[u8::try_from(forkoff).unwrap_or(0), XFS_DINODE_FMT_EXTENTS]);
        }
        let at = f.core.saturating_add(forkoff.saturating_mul(8));
        put_be64(&mut f.b, at, fsb >> 43);
        put_be64(
            &mut f.b,
            at.saturating_add(8),
            ((fsb & ((1 << 43) - 1)) << 21) | 1,
        );
        set_anextents(&mut f.b, 1);
        add_nblocks(&mut f.b, 1);
        self.log_inode(ino, ioff, f.b, 1);
        let rmap = Work::RmapMap {
            agno,
            m: Rmap {
                start: bno,
                len: 1,
                owner: ino,
                offset: 0,
                attr: true,
                bmbt: false,
                unwritten: false,
            },
            shared: false,
        };
        // What the allocation let go of, then the block's reverse mapping.
        let mut work = space.let_go(agno)?;
        work.push(rmap);
        Ok((
            PendingAdd {
                state: AddState::Leaf,
                ..p.clone()
            },
            work,
        ))
    }

    /// Bytes of value one remote block holds (v5: less its header).
    fn rmt_space(&self) -> usize {
        let g = self.fs().geo;
        let bs = usize::try_from(g.blocksize).unwrap_or(0);
        if g.v5 {
            bs.saturating_sub(RMT_HDR)
        } else {
            bs
        }
    }

    /// `xfs_attr_leaf_addname` / `xfs_attr_node_addname`: the entry goes
    /// into its leaf by its hash (the node blocks' hashes following it); the
    /// inode is not logged here. A remote value's entry goes in
    /// INCOMPLETE, its value to follow. A leaf with no room (after a
    /// compaction, if it had holes) is split (`xfs_da3_split`) when under a
    /// node, or, alone, becomes a node over a copy of itself and the add
    /// goes on after a roll. Returns what is left and the work the
    /// transaction deferred (a new block's reverse mapping and what its
    /// allocation let go of), which runs first.
    pub fn attr_leaf_add(
        &mut self,
        p: &PendingAdd,
        space: &mut dyn AttrSpace,
    ) -> EditResult<(AddOutcome, Vec<Work>)> {
        let ino = p.ino;
        let hash = self.attr_hash(p.ns, &p.name, &p.value)?;
        let parent = p.ns & XFS_ATTR_PARENT != 0;
        let (mut lf, mut path, found) = self.leaf_lookup(ino, hash, |fl, n, v| {
            n == p.name.as_slice()
                && fl & XFS_ATTR_NSP_ONDISK_MASK == p.ns
                && (!parent || v == p.value.as_slice())
        })?;
        let i = match found {
            Ok(_) => {
                return refuse(format!(
                    "inode {ino}: the attribute is already in the leaf: the kernel fails the mount"
                ))
            }
            Err(i) => i,
        };
        let bs = usize::try_from(self.fs().geo.blocksize).unwrap_or(0);
        let remote = entsize_local(p.name.len(), p.value.len()) >= bs.saturating_mul(3) / 4;
        let done = if remote {
            AddOutcome::Remote(p.clone())
        } else {
            AddOutcome::Done
        };
        if Self::leaf_add_entry(&mut lf.leaf, i, hash, p, remote)? {
            self.fix_hash_path(&mut path, &lf.leaf);
            self.put_attr_block(lf.boff, lf.leaf.b);
            return Ok((done, Vec::new()));
        }
        if path.is_empty() {
            let work = self.leaf_to_node(ino, lf, space)?;
            return Ok((
                AddOutcome::Again(PendingAdd {
                    state: AddState::Node,
                    ..p.clone()
                }),
                work,
            ));
        }
        let work = self.split_attr_leaf(ino, lf, path, i, p, remote, space)?;
        Ok((done, work))
    }

    /// The entry of `p` into `leaf` at `i` (a remote value's, incomplete):
    /// whether it fitted.
    fn leaf_add_entry(
        leaf: &mut Leaf,
        i: usize,
        hash: u32,
        p: &PendingAdd,
        remote: bool,
    ) -> EditResult<bool> {
        if remote {
            leaf.add_remote(i, hash, p.ns, &p.name)
        } else {
            leaf.add(i, hash, p.ns, &p.name, &p.value)
        }
    }

    /// `xfs_bmap_first_unused` in an attr fork's extents `recs`: the first
    /// hole of at least `count` blocks, or the end of the last extent.
    fn first_unused(recs: &[Rec], count: u64) -> u64 {
        let mut max = 0u64;
        for r in recs {
            if r.off >= count && r.off.saturating_sub(max) >= count {
                break;
            }
            max = max.max(r.end());
        }
        max
    }

    /// One `xfs_bmapi_write` into the attr fork hole at `off`: `length`
    /// blocks (fewer if the next extent comes sooner) allocated in one
    /// piece near the block `xfs_bmap_adjacent` picks, mapped there (merged
    /// with contiguous neighbours; the inode logged). Returns the AG, the
    /// blocks mapped and the deferred reverse mapping.
    fn attr_alloc_map(
        &mut self,
        ino: u64,
        off: u64,
        length: u64,
        space: &mut dyn AttrSpace,
    ) -> EditResult<(u32, u64, Work)> {
        let recs = self.attr_extents(ino)?;
        let got = recs.iter().find(|r| r.end() > off).copied();
        if got.is_some_and(|r| r.off <= off) {
            return refuse(format!("inode {ino}: attr block {off} is already mapped"));
        }
        let mut length = length.min(XFS_MAX_BMBT_EXTLEN);
        if let Some(r) = got {
            length = length.min(r.off.saturating_sub(off));
        }
        let prev = recs.iter().rev().find(|r| r.end() <= off).copied();
        let target = self.adjacent(ino, prev, got, off, length);
        let g = self.fs().geo;
        let (agno, agbno) = g.split_fsb(crate::xfs::types::FsBlock(target));
        let len32 = u32::try_from(length).unwrap_or(u32::MAX);
        let Some(bno) = space.near(agno.0, agbno.0, len32)? else {
            return refuse(format!(
                "inode {ino}: no {length} free blocks for the attr fork in AG {}",
                agno.0
            ));
        };
        let fsb = u64::from(agno.0)
            .checked_shl(u32::from(g.agblklog))
            .unwrap_or(0)
            | u64::from(bno);
        let mut bmbt = |a: u32, h: u32, o| space.bmbt_block(a, h, o);
        self.attr_map(
            ino,
            Rec {
                off,
                start: fsb,
                len: length,
                unwritten: false,
            },
            &mut bmbt,
        )?;
        let rmap = Work::RmapMap {
            agno: agno.0,
            m: Rmap {
                start: bno,
                len: len32,
                owner: ino,
                offset: off,
                attr: true,
                bmbt: false,
                unwritten: false,
            },
            shared: false,
        };
        Ok((agno.0, length, rmap))
    }

    /// `xfs_da_grow_inode` for one attr block: the first unused attr block
    /// (`xfs_bmap_first_unused`), mapped to a block allocated near the one
    /// `xfs_bmap_adjacent` picks (the inode logged). Returns the attr
    /// block, its byte offset and the work deferred: what the allocation
    /// let go of, then the block's reverse mapping.
    fn da_grow(
        &mut self,
        ino: u64,
        space: &mut dyn AttrSpace,
    ) -> EditResult<(u64, u64, Vec<Work>)> {
        let dablk = Self::first_unused(&self.attr_extents(ino)?, 1);
        let (agno, _, rmap) = self.attr_alloc_map(ino, dablk, 1, space)?;
        let mut work = space.let_go(agno)?;
        work.push(rmap);
        let boff = self.attr_block_off(ino, dablk)?;
        Ok((dablk, boff, work))
    }

    /// `xfs_attr3_leaf_to_node`: the lone leaf copied to a new attr block
    /// (its own address stamped in), and attr block 0 made a level-1 node
    /// over the bytes the leaf leaves there (the header rewritten, one
    /// entry: the leaf's last hash and the copy's block).
    fn leaf_to_node(
        &mut self,
        ino: u64,
        lf: LeafFork,
        space: &mut dyn AttrSpace,
    ) -> EditResult<Vec<Work>> {
        let (dablk, nboff, work) = self.da_grow(ino, space)?;
        let fs = self.fs();
        let v5 = fs.geo.v5;
        let last = lf.leaf.lasthash().unwrap_or(0);
        let mut copy = lf.leaf.b.clone();
        if v5 {
            put_be64(&mut copy, 16, nboff / 512);
        }
        self.put_attr_block(nboff, copy);
        let mut node = lf.leaf.b;
        let (hdr, count_at, level_at) = node_layout(v5);
        if v5 {
            if let Some(h) = node.get_mut(..hdr) {
                h.fill(0);
            }
            put_be64(&mut node, 16, lf.boff / 512);
            if let Some(u) = node.get_mut(32..48) {
                u.copy_from_slice(&fs.meta_uuid());
            }
            put_be64(&mut node, 48, ino);
        } else {
            put_be32(&mut node, 0, 0);
            put_be32(&mut node, 4, 0);
        }
        put_be16(
            &mut node,
            8,
            if v5 {
                XFS_DA3_NODE_MAGIC
            } else {
                XFS_DA_NODE_MAGIC
            },
        );
        put_be16(&mut node, count_at, 1);
        put_be16(&mut node, level_at, 1);
        put_be32(&mut node, hdr, last);
        put_be32(
            &mut node,
            hdr.saturating_add(4),
            u32::try_from(dablk).unwrap_or(0),
        );
        self.put_attr_block(lf.boff, node);
        Ok(work)
    }

    /// `xfs_da3_split` of a leaf under a node: a new leaf made in a new
    /// attr block, the entries balanced across the two
    /// (`xfs_attr3_leaf_rebalance`), the new leaf linked in after the old
    /// one (before it, if its hashes are lower), the entry added to the
    /// one it falls in, the old leaf's last hash carried up, and an entry
    /// for the new leaf added to the node after the old one's. Refused: a
    /// node with no room (the kernel splits it too) or an entry that fits
    /// neither half (a second split).
    /// The second split of `xfs_da3_split` (`state->extravalid`): the half
    /// the entry was due in (`due`: in the old leaf, and where) splits into
    /// an extra leaf allocated after the new one, linked beside it
    /// (`xfs_da3_blk_link`); the entry goes where that split puts it; the
    /// node above takes the new leaf's entry after the old one's and the
    /// extra leaf's before or after it (`extraafter`), splitting when both
    /// do not fit, and the hashes go up.
    #[allow(clippy::too_many_arguments)]
    fn split_attr_leaf_again(
        &mut self,
        ino: u64,
        (old, old_dablk): (&mut Leaf, u32),
        (new, new_dablk): (&mut Leaf, u32),
        (inleaf, idx): (bool, usize),
        path: &mut [NodeStep],
        (hash, p, remote, entsize): (u32, &PendingAdd, bool, usize),
        space: &mut dyn AttrSpace,
    ) -> EditResult<Vec<Work>> {
        let fs = self.fs();
        let g = fs.geo;
        let bs = usize::try_from(g.blocksize).unwrap_or(0);
        let (xdablk, xboff, mut work) = self.da_grow(ino, space)?;
        let xdablk = u32::try_from(xdablk).unwrap_or(0);
        let mut extra = Leaf::create(bs, g.v5, xboff / 512, ino, &fs.meta_uuid());
        let src_dablk = if inleaf { old_dablk } else { new_dablk };
        let (neighbour, set_forw) = {
            let src: &mut Leaf = if inleaf { &mut *old } else { &mut *new };
            let (inleaf2, idx2) = src.split_into(&mut extra, idx, entsize);
            // xfs_da3_blk_link of the extra leaf beside the one it split
            // from.
            let (forw, back) = src.siblings();
            let before = src.hdr.count > 0
                && extra.hdr.count > 0
                && (extra.first_hash() < src.first_hash() || extra.lasthash() < src.lasthash());
            let link = if before {
                extra.set_siblings(src_dablk, back);
                src.set_siblings(forw, xdablk);
                (back, true)
            } else {
                extra.set_siblings(forw, src_dablk);
                src.set_siblings(xdablk, back);
                (forw, false)
            };
            let target = if inleaf2 { src } else { &mut extra };
            if !Self::leaf_add_entry(target, idx2, hash, p, remote)? {
                return refuse(format!(
                    "inode {ino}: the entry fits no leaf of a second split: the kernel fails the mount"
                ));
            }
            link
        };
        // The neighbour now on the extra leaf's other side: the old or the
        // new leaf in hand, or a leaf on disk.
        let point = |l: &mut Leaf| {
            let (f, b) = l.siblings();
            if set_forw {
                l.set_siblings(xdablk, b);
            } else {
                l.set_siblings(f, xdablk);
            }
        };
        if neighbour == old_dablk {
            point(old);
        } else if neighbour == new_dablk {
            point(new);
        } else if neighbour != 0 {
            let off = self.attr_block_off(ino, u64::from(neighbour))?;
            let mut b = self.read("attr block", off, bs)?;
            put_be32(&mut b, if set_forw { 0 } else { 4 }, xdablk);
            self.put_attr_block(off, b);
        }
        // The old leaf's hash up the path, then xfs_da3_node_add twice: the
        // new leaf after the old one's entry, the extra one before it
        // (split from the old leaf) or after it (`extraafter`), the node
        // splitting when both do not fit.
        self.fix_hash_path(path, old);
        let lh = |l: &Leaf| l.lasthash().unwrap_or(0);
        let (n, x) = ((lh(new), new_dablk), (lh(&extra), xdablk));
        let adds = if inleaf { [x, n] } else { [n, x] };
        self.put_attr_block(xboff, extra.b);
        work.extend(self.da_add_up(ino, path, &adds, space)?);
        Ok(work)
    }

    #[allow(clippy::too_many_arguments)]
    fn split_attr_leaf(
        &mut self,
        ino: u64,
        mut lf: LeafFork,
        mut path: Vec<NodeStep>,
        index: usize,
        p: &PendingAdd,
        remote: bool,
        space: &mut dyn AttrSpace,
    ) -> EditResult<Vec<Work>> {
        let fs = self.fs();
        let g = fs.geo;
        let bs = usize::try_from(g.blocksize).unwrap_or(0);
        let (hdr, _, _) = node_layout(g.v5);
        let cc0 = be64(&self.inode(ino)?.1, 104).unwrap_or(0);
        let Some(bottom) = path.last() else {
            return refuse(format!("inode {ino}: a leaf split with no node above"));
        };
        let old_dablk = be32(
            &bottom.b,
            hdr.saturating_add(bottom.index.saturating_mul(8))
                .saturating_add(4),
        )
        .unwrap_or(0);
        let (dablk, nboff, work) = self.da_grow(ino, space)?;
        let new_dablk = u32::try_from(dablk).unwrap_or(0);
        let mut new = Leaf::create(bs, g.v5, nboff / 512, ino, &fs.meta_uuid());
        let entsize = if remote {
            entsize_remote(p.name.len())
        } else {
            entsize_local(p.name.len(), p.value.len())
        };
        let (inleaf, idx) = lf.leaf.split_into(&mut new, index, entsize);
        // xfs_da3_blk_link.
        let (forw, back) = lf.leaf.siblings();
        let first = |l: &Leaf| l.first_hash();
        let before = lf.leaf.hdr.count > 0
            && new.hdr.count > 0
            && (first(&new) < first(&lf.leaf) || new.lasthash() < lf.leaf.lasthash());
        let relink = |ed: &mut Self, sib: u32, set_forw: bool| -> EditResult<()> {
            let off = ed.attr_block_off(ino, u64::from(sib))?;
            let mut b = ed.read("attr block", off, bs)?;
            put_be32(&mut b, if set_forw { 0 } else { 4 }, new_dablk);
            ed.put_attr_block(off, b);
            Ok(())
        };
        if before {
            new.set_siblings(old_dablk, back);
            if back != 0 {
                relink(self, back, true)?;
            }
            lf.leaf.set_siblings(forw, new_dablk);
        } else {
            new.set_siblings(forw, old_dablk);
            if forw != 0 {
                relink(self, forw, false)?;
            }
            lf.leaf.set_siblings(new_dablk, back);
        }
        let hash = self.attr_hash(p.ns, &p.name, &p.value)?;
        let target = if inleaf { &mut lf.leaf } else { &mut new };
        let mut work = work;
        if !Self::leaf_add_entry(target, idx, hash, p, remote)? {
            // The entry fits neither half: the half it was due in splits
            // again (xfs_da3_split with an extra block), and the node takes
            // two new entries.
            work.extend(self.split_attr_leaf_again(
                ino,
                (&mut lf.leaf, old_dablk),
                (&mut new, new_dablk),
                (inleaf, idx),
                &mut path,
                (hash, p, remote, entsize),
                space,
            )?);
            self.set_change_count(ino, cc0.wrapping_add(1))?;
            self.put_attr_block(lf.boff, lf.leaf.b);
            self.put_attr_block(nboff, new.b);
            return Ok(work);
        }
        self.fix_hash_path(&mut path, &lf.leaf);
        // xfs_da3_node_add: the new leaf after the old one's entry, the
        // nodes splitting on the way up when full.
        let new_last = new.lasthash().unwrap_or(0);
        work.extend(self.da_add_up(ino, &mut path, &[(new_last, new_dablk)], space)?);
        // One transaction, however many blocks it added: the change count
        // rose once.
        self.set_change_count(ino, cc0.wrapping_add(1))?;
        self.put_attr_block(lf.boff, lf.leaf.b);
        self.put_attr_block(nboff, new.b);
        Ok(work)
    }

    /// The entries (hash, block) of a da node's bytes.
    fn da_entries(b: &[u8], v5: bool) -> Vec<(u32, u32)> {
        let (hdr, count_at, _) = node_layout(v5);
        let n = usize::from(be16(b, count_at).unwrap_or(0));
        (0..n)
            .map_while(|k| {
                let at = hdr.saturating_add(k.saturating_mul(8));
                Some((be32(b, at)?, be32(b, at.saturating_add(4))?))
            })
            .collect()
    }

    /// A da node's count and entries written into `b` (what lay past them
    /// stays).
    fn put_node_entries(b: &mut [u8], v5: bool, entries: &[(u32, u32)]) {
        let (hdr, count_at, _) = node_layout(v5);
        put_be16(b, count_at, u16::try_from(entries.len()).unwrap_or(0));
        for (k, (h, blk)) in entries.iter().enumerate() {
            let at = hdr.saturating_add(k.saturating_mul(8));
            put_be32(b, at, *h);
            put_be32(b, at.saturating_add(4), *blk);
        }
    }

    /// A da node header for attr block `dablk` at byte `boff` of `ino`
    /// (`xfs_da3_node_create`) written over `b`'s first bytes: no
    /// siblings, `level`, no entries yet.
    fn node_header(&self, b: &mut [u8], boff: u64, ino: u64, level: u16) {
        let fs = self.fs();
        let v5 = fs.geo.v5;
        let (hdr, count_at, level_at) = node_layout(v5);
        if let Some(h) = b.get_mut(..hdr) {
            h.fill(0);
        }
        if v5 {
            put_be64(b, 16, boff / 512);
            if let Some(u) = b.get_mut(32..48) {
                u.copy_from_slice(&fs.meta_uuid());
            }
            put_be64(b, 48, ino);
        }
        put_be16(
            b,
            8,
            if v5 {
                XFS_DA3_NODE_MAGIC
            } else {
                XFS_DA_NODE_MAGIC
            },
        );
        put_be16(b, count_at, 0);
        put_be16(b, level_at, level);
    }

    /// The rest of `xfs_da3_split` once a leaf has split: the entry `add`
    /// (the new leaf's last hash and block) goes into the node above,
    /// after the old leaf's. A node with no room splits first
    /// (`xfs_da3_node_split`: a new node in a new attr block, the upper
    /// half of the entries moved there, the two linked, the entry added to
    /// the half its place is in, the old node's last hash carried up), and
    /// the new node's entry goes one level up in turn; a root that splits
    /// moves (`xfs_da3_root_split`: its header and entries copied to a new
    /// attr block, block 0 made a node one level higher over the copy and
    /// the new node). Returns the work the new blocks' allocations
    /// deferred.
    fn da_add_up(
        &mut self,
        ino: u64,
        path: &mut [NodeStep],
        adds: &[(u32, u32)],
        space: &mut dyn AttrSpace,
    ) -> EditResult<Vec<Work>> {
        let fs = self.fs();
        let v5 = fs.geo.v5;
        let bs = usize::try_from(fs.geo.blocksize).unwrap_or(0);
        let (hdr, _, level_at) = node_layout(v5);
        let node_ents = bs.saturating_sub(hdr) / 8;
        let mut work = Vec::new();
        let mut adds: Vec<(u32, u32)> = adds.to_vec();
        let mut add = adds.last().copied().unwrap_or((0, 0));
        let mut i = path.len();
        while let Some(at) = i.checked_sub(1) {
            i = at;
            let my_dablk = match at.checked_sub(1).and_then(|p| path.get(p)) {
                Some(parent) => Self::da_entries(&parent.b, v5)
                    .get(parent.index)
                    .map_or(0, |e| e.1),
                None => 0,
            };
            let Some(step) = path.get_mut(at) else {
                break;
            };
            let mut entries = Self::da_entries(&step.b, v5);
            let idx = step.index;
            if idx >= entries.len() {
                return refuse(format!(
                    "inode {ino}: attr node entry {idx} of {}",
                    entries.len()
                ));
            }
            let at1 = idx.saturating_add(1);
            if entries.len().saturating_add(adds.len()) <= node_ents {
                entries.splice(at1..at1, adds.iter().copied());
                Self::put_node_entries(&mut step.b, v5, &entries);
                let (boff, b) = (step.boff, step.b.clone());
                self.put_attr_block(boff, b);
                let last = entries.last().map_or(0, |e| e.0);
                self.fix_hash_up(path.get_mut(..at).unwrap_or(&mut []), last);
                return Ok(work);
            }
            // xfs_da3_node_split.
            let level = be16(&step.b, level_at).unwrap_or(1);
            let (boff, mut b) = (step.boff, step.b.clone());
            let (ndablk, nboff, w) = self.da_grow(ino, space)?;
            work.extend(w);
            let ndablk = u32::try_from(ndablk).unwrap_or(0);
            let keep = entries.len().saturating_sub(entries.len() / 2);
            let mut moved = entries.split_off(keep);
            if idx >= keep {
                let at = idx.saturating_sub(keep).saturating_add(1).min(moved.len());
                moved.splice(at..at, adds.iter().copied());
            } else {
                entries.splice(at1..at1, adds.iter().copied());
            }
            let mut nb = vec![0u8; bs];
            self.node_header(&mut nb, nboff, ino, level);
            Self::put_node_entries(&mut nb, v5, &moved);
            // xfs_da3_blk_link: the new node after the old one.
            let forw = be32(&b, 0).unwrap_or(0);
            put_be32(&mut nb, 0, forw);
            put_be32(&mut nb, 4, my_dablk);
            if forw != 0 {
                let off = self.attr_block_off(ino, u64::from(forw))?;
                let mut fb = self.read("attr node block", off, bs)?;
                put_be32(&mut fb, 4, ndablk);
                self.put_attr_block(off, fb);
            }
            put_be32(&mut b, 0, ndablk);
            Self::put_node_entries(&mut b, v5, &entries);
            self.put_attr_block(nboff, nb);
            self.put_attr_block(boff, b.clone());
            if let Some(step) = path.get_mut(at) {
                step.b = b;
            }
            let last = entries.last().map_or(0, |e| e.0);
            self.fix_hash_up(path.get_mut(..at).unwrap_or(&mut []), last);
            add = (moved.last().map_or(0, |e| e.0), ndablk);
            adds = vec![add];
        }
        // xfs_da3_root_split: the root split above; it moves.
        let Some(root) = path.first() else {
            return refuse(format!("inode {ino}: a leaf split with no node above"));
        };
        let (rboff, rb) = (root.boff, root.b.clone());
        let entries = Self::da_entries(&rb, v5);
        let level = be16(&rb, level_at).unwrap_or(1);
        let (cdablk, cboff, w) = self.da_grow(ino, space)?;
        work.extend(w);
        let cdablk = u32::try_from(cdablk).unwrap_or(0);
        let size = hdr.saturating_add(entries.len().saturating_mul(8)).min(bs);
        let mut copy = vec![0u8; bs];
        if let (Some(d), Some(src)) = (copy.get_mut(..size), rb.get(..size)) {
            d.copy_from_slice(src);
        }
        if v5 {
            put_be64(&mut copy, 16, cboff / 512);
        }
        let forw = be32(&copy, 0).unwrap_or(0);
        if forw != 0 {
            let off = self.attr_block_off(ino, u64::from(forw))?;
            let mut fb = self.read("attr node block", off, bs)?;
            put_be32(&mut fb, 4, cdablk);
            self.put_attr_block(off, fb);
        }
        self.put_attr_block(cboff, copy);
        let mut nr = rb;
        self.node_header(&mut nr, rboff, ino, level.saturating_add(1));
        let last = entries.last().map_or(0, |e| e.0);
        Self::put_node_entries(&mut nr, v5, &[(last, cdablk), add]);
        self.put_attr_block(rboff, nr);
        Ok(work)
    }

    /// The attr block at file block `dablk` of `ino`'s attr fork: its
    /// byte offset.
    fn attr_block_off(&self, ino: u64, dablk: u64) -> EditResult<u64> {
        let recs = self.attr_extents(ino)?;
        let Some(r) = recs.iter().find(|r| r.off <= dablk && r.end() > dablk) else {
            return refuse(format!("inode {ino}: attr block {dablk} is not mapped"));
        };
        self.block_off(
            "attr block",
            r.start.saturating_add(dablk.saturating_sub(r.off)),
        )
        .map_err(|e| e.within(|| format!("inode {ino}")))
    }

    /// `xfs_da3_node_lookup_int`: the leaf where an entry of hash `hash`
    /// is or would go, and the node blocks above it (none for a fork whose
    /// block 0 is the leaf). In each node the first entry whose hash is
    /// not below `hash` (else the last) leads down.
    fn leaf_for(&self, ino: u64, hash: u32) -> EditResult<(LeafFork, Vec<NodeStep>)> {
        let fs = self.fs();
        let g = fs.geo;
        let bs = usize::try_from(g.blocksize).unwrap_or(0);
        let (hdr, count_at, level_at) = node_layout(g.v5);
        let mut path = Vec::new();
        let mut dablk = 0u64;
        let mut want_level: Option<u16> = None;
        loop {
            let boff = self.attr_block_off(ino, dablk)?;
            let b = self.read("attr block", boff, bs)?;
            let magic = be16(&b, 8);
            if !matches!(magic, Some(XFS_DA_NODE_MAGIC | XFS_DA3_NODE_MAGIC)) {
                if want_level.is_some_and(|l| l != 0) {
                    return refuse(format!(
                        "inode {ino}: attr block {dablk} is a leaf where a node was due"
                    ));
                }
                let leaf = Leaf::parse(b, g.v5, "attr leaf block")
                    .map_err(|e| e.within(|| format!("inode {ino}, attr block {dablk}")))?;
                let single = dablk == 0
                    && matches!(self.attr_extents(ino)?.as_slice(), [r] if r.off == 0 && r.len == 1);
                return Ok((LeafFork { boff, leaf, single }, path));
            }
            let count = usize::from(be16(&b, count_at).unwrap_or(0));
            let level = be16(&b, level_at).unwrap_or(0);
            let entries = bs.saturating_sub(hdr) / 8;
            if count == 0 || count > entries || level == 0 || level >= 5 {
                return refuse(format!(
                    "inode {ino}: attr node block {dablk} with {count} entries at level {level}"
                ));
            }
            if want_level.is_some_and(|l| l != level) {
                return refuse(format!(
                    "inode {ino}: attr node block {dablk} at level {level}, not the one due"
                ));
            }
            want_level = Some(level.saturating_sub(1));
            let ent = |i: usize| {
                let at = hdr.saturating_add(i.saturating_mul(8));
                (
                    be32(&b, at).unwrap_or(0),
                    be32(&b, at.saturating_add(4)).unwrap_or(0),
                )
            };
            let index = (0..count)
                .find(|&i| ent(i).0 >= hash)
                .unwrap_or(count.saturating_sub(1));
            let next = u64::from(ent(index).1);
            if next == 0 || path.len() >= 5 {
                return refuse(format!(
                    "inode {ino}: attr node block {dablk} points back at the root"
                ));
            }
            path.push(NodeStep { boff, b, index });
            dablk = next;
        }
    }

    /// `xfs_da3_node_lookup_int` on an attr fork in node form: the leaf
    /// `hash` leads to, searched for an entry `matches` accepts; when it is
    /// not there and the leaf ends with `hash`, the next leaf is searched
    /// (`xfs_da3_path_shift`), and so on. Returns the leaf the search ended
    /// in, the path to it and the entry's index (or where one would go).
    fn leaf_lookup(
        &self,
        ino: u64,
        hash: u32,
        matches: impl Fn(u8, &[u8], &[u8]) -> bool,
    ) -> EditResult<(LeafFork, Vec<NodeStep>, Result<usize, usize>)> {
        let (mut lf, mut path) = self.leaf_for(ino, hash)?;
        let mut seen = std::collections::BTreeSet::new();
        loop {
            let found = lf.leaf.lookup(hash, &matches);
            if found.is_ok() || path.is_empty() || lf.leaf.lasthash() != Some(hash) {
                return Ok((lf, path, found));
            }
            if !seen.insert(lf.boff) {
                return refuse(format!(
                    "inode {ino}: the attr tree leads back to a leaf it has searched"
                ));
            }
            match self.shift_leaf(ino, &mut path, true)? {
                Some(next) => lf = next,
                None => return Ok((lf, path, found)),
            }
        }
    }

    /// `xfs_da3_path_shift` at a node: the path, which ends at a node, moved
    /// to that node's sibling after (`forward`) or before it at the same
    /// level; `false`, the path unchanged, at the edge of the tree.
    fn shift_node(&self, ino: u64, path: &mut Vec<NodeStep>, forward: bool) -> EditResult<bool> {
        let depth = path.len();
        let search = depth.saturating_sub(1);
        Ok(self.shift_path(ino, path, forward, search)?.is_some())
    }

    /// `xfs_da3_path_shift`: the path moved to the leaf after (`forward`)
    /// or before the one it ends at; `None`, the path unchanged, at the end
    /// of the tree.
    fn shift_leaf(
        &self,
        ino: u64,
        path: &mut Vec<NodeStep>,
        forward: bool,
    ) -> EditResult<Option<LeafFork>> {
        let search = path.len();
        let Some(dablk) = self.shift_path(ino, path, forward, search)? else {
            return Ok(None);
        };
        let g = self.fs().geo;
        let bs = usize::try_from(g.blocksize).unwrap_or(0);
        let boff = self.attr_block_off(ino, dablk)?;
        let leaf = Leaf::parse(self.read("attr block", boff, bs)?, g.v5, "attr leaf block")
            .map_err(|e| e.within(|| format!("inode {ino}, attr block {dablk}")))?;
        Ok(Some(LeafFork {
            boff,
            leaf,
            single: false,
        }))
    }

    /// The walk of `xfs_da3_path_shift` over a path of nodes: up to the
    /// deepest of its first `search` nodes not at its last (`forward`) or
    /// first entry, one entry on, then down the first or last entries until
    /// the path is as long as it was, each node checked to be at its
    /// level. Returns the block below the path's last node, or `None`, the
    /// path unchanged, at the edge of the tree.
    fn shift_path(
        &self,
        ino: u64,
        path: &mut Vec<NodeStep>,
        forward: bool,
        search: usize,
    ) -> EditResult<Option<u64>> {
        let g = self.fs().geo;
        let (hdr, count_at, level_at) = node_layout(g.v5);
        let count_of = |b: &[u8]| usize::from(be16(b, count_at).unwrap_or(0));
        let entry = |b: &[u8], i: usize| {
            u64::from(
                be32(b, hdr.saturating_add(i.saturating_mul(8)).saturating_add(4)).unwrap_or(0),
            )
        };
        let Some(up) = path.get(..search).and_then(|p| {
            p.iter().rposition(|s| {
                if forward {
                    s.index.saturating_add(1) < count_of(&s.b)
                } else {
                    s.index > 0
                }
            })
        }) else {
            return Ok(None);
        };
        let depth = path.len();
        // The level of the path's last node; the others are above it.
        let base = path.last().map_or(1, |s| be16(&s.b, level_at).unwrap_or(1));
        path.truncate(up.saturating_add(1));
        let mut dablk = match path.last_mut() {
            Some(s) => {
                s.index = if forward {
                    s.index.saturating_add(1)
                } else {
                    s.index.saturating_sub(1)
                };
                entry(&s.b, s.index)
            }
            None => return Ok(None),
        };
        let bs = usize::try_from(g.blocksize).unwrap_or(0);
        while path.len() < depth {
            if dablk == 0 {
                return refuse(format!(
                    "inode {ino}: an attr node entry points back at the root"
                ));
            }
            let boff = self.attr_block_off(ino, dablk)?;
            let b = self.read("attr node block", boff, bs)?;
            let above = depth.saturating_sub(1).saturating_sub(path.len());
            let want = base.saturating_add(u16::try_from(above).unwrap_or(u16::MAX));
            if !matches!(be16(&b, 8), Some(XFS_DA_NODE_MAGIC | XFS_DA3_NODE_MAGIC))
                || be16(&b, level_at).unwrap_or(0) != want
                || count_of(&b) == 0
            {
                return refuse(format!(
                    "inode {ino}: attr block {dablk} is not the node at level {want} the tree leads to"
                ));
            }
            let index = if forward {
                0
            } else {
                count_of(&b).saturating_sub(1)
            };
            dablk = entry(&b, index);
            path.push(NodeStep { boff, b, index });
        }
        if dablk == 0 {
            return refuse(format!(
                "inode {ino}: an attr node entry points back at the root"
            ));
        }
        Ok(Some(dablk))
    }

    /// `xfs_da3_fixhashpath`: the hashes on the way down to `leaf` made its
    /// last hash again, as far up as they change; the changed node blocks
    /// are kept.
    fn fix_hash_path(&mut self, path: &mut [NodeStep], leaf: &Leaf) {
        if let Some(last) = leaf.lasthash() {
            self.fix_hash_up(path, last);
        }
    }

    /// The hashes of `path`, from its bottom up, made `last` (the last hash
    /// of what lies below) as far as they change.
    fn fix_hash_up(&mut self, path: &mut [NodeStep], mut last: u32) {
        let (hdr, count_at, _) = node_layout(self.fs().geo.v5);
        for step in path.iter_mut().rev() {
            let at = hdr.saturating_add(step.index.saturating_mul(8));
            if be32(&step.b, at) == Some(last) {
                break;
            }
            put_be32(&mut step.b, at, last);
            self.put_attr_block(step.boff, step.b.clone());
            let count = usize::from(be16(&step.b, count_at).unwrap_or(0));
            let last_at = hdr.saturating_add(count.saturating_sub(1).saturating_mul(8));
            last = be32(&step.b, last_at).unwrap_or(0);
        }
    }

    /// `xfs_da3_join` after a removal left `lf`, a leaf under a node, below
    /// 37% full: `xfs_attr3_leaf_toosmall` picks a sibling to merge with
    /// (the next one in the node if the leaf is empty; else the lower
    /// numbered of the siblings, tried first, or the other, whose entries
    /// and the leaf's fit one block with a quarter to spare), and keeps
    /// the lower numbered block of the two. The other's entries move into
    /// it (`xfs_attr3_leaf_unbalance`: appended or put first by their
    /// hashes; through a fresh block when the kept one has holes), its
    /// last hash goes into the node, the dropped leaf leaves the sibling
    /// chain and the fork (its block unmapped and freed, never written),
    /// and its entry leaves the node. A root node left with one entry
    /// takes its child's bytes (`xfs_da3_root_join`), the child's block
    /// going the same way; a node below the root carries its new last
    /// hash up. Returns the deferred reverse mappings and frees. Refused:
    /// a node left too small that the kernel would join with a sibling
    /// node.
    #[allow(clippy::too_many_lines)]
    fn join_leaf(&mut self, ino: u64, lf: LeafFork, path: Vec<NodeStep>) -> EditResult<Vec<Work>> {
        let fs = self.fs();
        let v5 = fs.geo.v5;
        let bs = usize::try_from(fs.geo.blocksize).unwrap_or(0);
        let (hdr, count_at, _) = node_layout(v5);
        let keep = |ed: &mut Self, lf: LeafFork| {
            ed.put_attr_block(lf.boff, lf.leaf.b);
            Ok(Vec::new())
        };
        let Some(root) = path.last() else {
            return keep(self, lf);
        };
        let idx = root.index;
        let count = usize::from(be16(&root.b, count_at).unwrap_or(0));
        let before_of = |b: &[u8], i: usize| {
            be32(b, hdr.saturating_add(i.saturating_mul(8)).saturating_add(4)).unwrap_or(0)
        };
        let cur = before_of(&root.b, idx);
        let (forw, back) = lf.leaf.siblings();
        let sib_index = |forward: bool| {
            if forward {
                (idx.saturating_add(1) < count).then(|| idx.saturating_add(1))
            } else {
                idx.checked_sub(1)
            }
        };
        // (the sibling: its index in the node, or the direction to it when
        // it sits under another node; whether the sibling is dropped)
        let pick = if lf.leaf.hdr.count == 0 {
            let forward = forw != 0;
            Some(match sib_index(forward) {
                Some(si) => (Sib::Same(si), false),
                None => (Sib::Across(forward, None), false),
            })
        } else {
            let first = forw < back;
            let mut chosen = None;
            for forward in [first, !first] {
                let blkno = if forward { forw } else { back };
                if blkno == 0 {
                    continue;
                }
                let off = self.attr_block_off(ino, u64::from(blkno))?;
                let other = Leaf::parse(self.read("attr block", off, bs)?, v5, "attr leaf block")
                    .map_err(|e| e.within(|| format!("inode {ino}, attr block {blkno}")))?;
                let need = lf
                    .leaf
                    .hdr
                    .usedbytes
                    .saturating_add(other.hdr.usedbytes)
                    .saturating_add(
                        lf.leaf
                            .hdr
                            .count
                            .saturating_add(other.hdr.count)
                            .saturating_mul(8),
                    )
                    .saturating_add(lf.leaf.hdr_size());
                if need <= bs.saturating_sub(bs >> 2) {
                    chosen = Some((forward, blkno));
                    break;
                }
            }
            chosen.map(|(forward, blkno)| {
                match sib_index(forward).filter(|&si| before_of(&root.b, si) == blkno) {
                    Some(si) => (Sib::Same(si), blkno >= cur),
                    None => (Sib::Across(forward, Some(blkno)), blkno >= cur),
                }
            })
        };
        let Some((where_, drop_sibling)) = pick else {
            return keep(self, lf);
        };
        // The sibling, and the path to it: in the same node, or
        // (xfs_da3_path_shift) under the node before or after.
        let (sibling, sib, sib_path) = match where_ {
            Sib::Same(si) => {
                let sib = before_of(&root.b, si);
                let sib_off = self.attr_block_off(ino, u64::from(sib))?;
                let sib_leaf =
                    Leaf::parse(self.read("attr block", sib_off, bs)?, v5, "attr leaf block")
                        .map_err(|e| e.within(|| format!("inode {ino}, attr block {sib}")))?;
                let mut sib_path = path.clone();
                if let Some(last) = sib_path.last_mut() {
                    last.index = si;
                }
                let lf = LeafFork {
                    boff: sib_off,
                    leaf: sib_leaf,
                    single: false,
                };
                (lf, sib, sib_path)
            }
            Sib::Across(forward, blkno) => {
                let mut sib_path = path.clone();
                let Some(sibling) = self.shift_leaf(ino, &mut sib_path, forward)? else {
                    return keep(self, lf);
                };
                let sib = sib_path.last().map_or(0, |s| before_of(&s.b, s.index));
                if blkno.is_some_and(|b| b != sib) {
                    return refuse(format!(
                        "inode {ino}: attr leaf {cur} names leaf {} as its sibling, the nodes lead to {sib}",
                        blkno.unwrap_or(0)
                    ));
                }
                (sibling, sib, sib_path)
            }
        };
        let same_node = matches!(where_, Sib::Same(_));
        let (mut drop, drop_blk, drop_path, mut save, save_blk, mut save_path) = if drop_sibling {
            (sibling, sib, sib_path, lf, cur, path)
        } else {
            (lf, cur, path, sibling, sib, sib_path)
        };
        // xfs_attr3_leaf_unbalance.
        let dc = drop.leaf.hdr.count;
        let sc = save.leaf.hdr.count;
        let order = save.leaf.goes_after(&drop.leaf);
        if !save.leaf.hdr.holes {
            let at = if order { 0 } else { sc };
            drop.leaf.move_to(&mut save.leaf, 0, at, dc);
        } else {
            let mut tmp = save.leaf.emptied();
            if order {
                drop.leaf.move_to(&mut tmp, 0, 0, dc);
                let n = tmp.hdr.count;
                save.leaf.move_to(&mut tmp, 0, n, sc);
            } else {
                save.leaf.move_to(&mut tmp, 0, 0, sc);
                let n = tmp.hdr.count;
                drop.leaf.move_to(&mut tmp, 0, n, dc);
            }
            save.leaf = tmp;
        }
        // The kept leaf's last hash into its node, and up the path to it
        // as far as it changes (xfs_da3_fixhashpath on the other path);
        // in the node both leaves share, the node is written below.
        let mut path = drop_path;
        if let Some(last) = save.leaf.lasthash() {
            if same_node {
                if let Some(root) = path.last_mut() {
                    let at = save_path.last().map_or(0, |s| s.index);
                    put_be32(&mut root.b, hdr.saturating_add(at.saturating_mul(8)), last);
                }
            } else {
                self.fix_hash_up(&mut save_path, last);
                // The dropped leaf's path sees those blocks as they are now.
                for step in path.iter_mut() {
                    step.b = self.read("attr node block", step.boff, bs)?;
                }
            }
        }
        // xfs_da3_blk_unlink.
        let (sforw, sback) = save.leaf.siblings();
        let (dforw, dback) = drop.leaf.siblings();
        let relink = |ed: &mut Self, blk: u32, forw: bool| -> EditResult<()> {
            let off = ed.attr_block_off(ino, u64::from(blk))?;
            let mut b = ed.read("attr block", off, bs)?;
            put_be32(&mut b, if forw { 0 } else { 4 }, save_blk);
            ed.put_attr_block(off, b);
            Ok(())
        };
        if sback == drop_blk {
            save.leaf.set_siblings(sforw, dback);
            if dback != 0 {
                relink(self, dback, true)?;
            }
        } else {
            save.leaf.set_siblings(dforw, sback);
            if dforw != 0 {
                relink(self, dforw, false)?;
            }
        }
        self.put_attr_block(save.boff, save.leaf.b);
        // xfs_da_shrink_inode: the dropped leaf unmapped, never written.
        let (mut work, _, _) = self.attr_unmap_blocks(ino, u64::from(drop_blk), 1)?;
        self.drop_attr_block(drop.boff);
        // Up the tree (xfs_da3_join): the dropped block's entry leaves its
        // node; a node below the root left at most half full joins a
        // sibling node when both fit three quarters of a block, and so on
        // up; a root left with one child takes that child's bytes.
        let node_ents = bs.saturating_sub(hdr) / 8;
        // The block number of the node a path ends at: its parent's entry.
        let dablk_of = |p: &[NodeStep]| -> u32 {
            p.len()
                .checked_sub(2)
                .and_then(|i| p.get(i))
                .map_or(0, |s| before_of(&s.b, s.index))
        };
        loop {
            let depth = path.len();
            let Some(node) = path.last_mut() else {
                return Ok(work);
            };
            // xfs_da3_node_remove.
            let count = usize::from(be16(&node.b, count_at).unwrap_or(0));
            let at = hdr.saturating_add(node.index.saturating_mul(8));
            let end = hdr.saturating_add(count.saturating_mul(8));
            if at.saturating_add(8) < end {
                node.b.copy_within(at.saturating_add(8)..end, at);
            }
            if let Some(d) = node.b.get_mut(end.saturating_sub(8)..end) {
                d.fill(0);
            }
            let left = count.saturating_sub(1);
            put_be16(&mut node.b, count_at, u16::try_from(left).unwrap_or(0));
            self.put_attr_block(node.boff, node.b.clone());
            if depth == 1 {
                break;
            }
            // xfs_da3_fixhashpath (nothing to carry from an empty node).
            if left > 0 {
                let last_at = hdr.saturating_add(left.saturating_sub(1).saturating_mul(8));
                let last = be32(&node.b, last_at).unwrap_or(0);
                let above = depth.saturating_sub(1);
                self.fix_hash_up(path.get_mut(..above).unwrap_or(&mut []), last);
            }
            // xfs_da3_node_toosmall.
            if left > node_ents >> 1 {
                return Ok(work);
            }
            let Some(node) = path.last() else {
                return Ok(work);
            };
            let (nforw, nback) = (be32(&node.b, 0).unwrap_or(0), be32(&node.b, 4).unwrap_or(0));
            let cur = dablk_of(&path);
            let choice = if left == 0 {
                Some((nforw != 0, None))
            } else {
                let room = node_ents
                    .saturating_sub(node_ents >> 2)
                    .saturating_sub(left);
                let first = nforw < nback;
                let mut chosen = None;
                for forward in [first, !first] {
                    let blkno = if forward { nforw } else { nback };
                    if blkno == 0 {
                        continue;
                    }
                    let off = self.attr_block_off(ino, u64::from(blkno))?;
                    let sb = self.read("attr node block", off, bs)?;
                    if usize::from(be16(&sb, count_at).unwrap_or(0)) <= room {
                        chosen = Some((forward, Some(blkno)));
                        break;
                    }
                }
                chosen
            };
            let Some((forward, blkno)) = choice else {
                return Ok(work);
            };
            let mut alt = path.clone();
            if !self.shift_node(ino, &mut alt, forward)? {
                return Ok(work);
            }
            let sib = dablk_of(&alt);
            if blkno.is_some_and(|b| b != sib) {
                return refuse(format!(
                    "inode {ino}: attr node {cur} names node {} as its sibling, the tree leads to {sib}",
                    blkno.unwrap_or(0)
                ));
            }
            // The higher-numbered node goes; an empty one always does.
            let drop_sibling = blkno.is_some() && sib > cur;
            let (mut dpath, mut spath) = if drop_sibling {
                (alt, path)
            } else {
                (path, alt)
            };
            let (Some(d), Some(sv)) = (dpath.last(), spath.last()) else {
                return Ok(work);
            };
            // xfs_da3_node_unbalance: the dropped node's entries before or
            // after the kept one's.
            let dcount = usize::from(be16(&d.b, count_at).unwrap_or(0));
            let scount = usize::from(be16(&sv.b, count_at).unwrap_or(0));
            let dents = Self::da_entries(&d.b, v5);
            let sents = Self::da_entries(&sv.b, v5);
            let lower = match (dents.first(), sents.first(), dents.last(), sents.last()) {
                (Some(df), Some(sf), Some(dl), Some(sl)) => df.0 < sf.0 || dl.0 < sl.0,
                _ => false,
            };
            let merged: Vec<(u32, u32)> = if lower {
                dents.iter().chain(sents.iter()).copied().collect()
            } else {
                sents.iter().chain(dents.iter()).copied().collect()
            };
            if merged.len() != dcount.saturating_add(scount) || merged.len() > node_ents {
                return refuse(format!(
                    "inode {ino}: attr nodes {cur} and {sib} do not fit one block"
                ));
            }
            let (save_boff, drop_boff) = (sv.boff, d.boff);
            let (dforw, dback) = (be32(&d.b, 0).unwrap_or(0), be32(&d.b, 4).unwrap_or(0));
            let mut sb = sv.b.clone();
            Self::put_node_entries(&mut sb, v5, &merged);
            // xfs_da3_blk_unlink: the kept node takes the dropped one's
            // place in the sibling chain.
            let (save_blk, drop_blk) = (dablk_of(&spath), dablk_of(&dpath));
            let (sforw, sback) = (be32(&sb, 0).unwrap_or(0), be32(&sb, 4).unwrap_or(0));
            let relink = |ed: &mut Self, blk: u32, forw: bool| -> EditResult<()> {
                let off = ed.attr_block_off(ino, u64::from(blk))?;
                let mut b = ed.read("attr block", off, bs)?;
                put_be32(&mut b, if forw { 0 } else { 4 }, save_blk);
                ed.put_attr_block(off, b);
                Ok(())
            };
            if sback == drop_blk {
                put_be32(&mut sb, 4, dback);
                if dback != 0 {
                    relink(self, dback, true)?;
                }
            } else if sforw == drop_blk {
                put_be32(&mut sb, 0, dforw);
                if dforw != 0 {
                    relink(self, dforw, false)?;
                }
            }
            self.put_attr_block(save_boff, sb.clone());
            if let Some(last) = spath.last_mut() {
                last.b = sb.clone();
            }
            // xfs_da3_fixhashpath on the kept node's path.
            if let Some(&(last, _)) = merged.last() {
                let above = spath.len().saturating_sub(1);
                self.fix_hash_up(spath.get_mut(..above).unwrap_or(&mut []), last);
            }
            // xfs_da_shrink_inode: the dropped node unmapped, never written.
            let (more, _, _) = self.attr_unmap_blocks(ino, u64::from(drop_blk), 1)?;
            work.extend(more);
            self.drop_attr_block(drop_boff);
            // One level up, along the dropped node's path, as it is now.
            dpath.pop();
            for step in dpath.iter_mut() {
                step.b = self.read("attr node block", step.boff, bs)?;
            }
            path = dpath;
        }
        let Some(root) = path.last() else {
            return Ok(work);
        };
        if be16(&root.b, count_at).unwrap_or(0) != 1 {
            return Ok(work);
        }
        // xfs_da3_root_join: the only child's bytes into attr block 0.
        let child = before_of(&root.b, 0);
        let child_off = self.attr_block_off(ino, u64::from(child))?;
        let mut bytes = self.read("attr block", child_off, bs)?;
        if v5 {
            put_be64(&mut bytes, 16, root.boff / 512);
        }
        let root_off = root.boff;
        self.put_attr_block(root_off, bytes);
        let (more, _, _) = self.attr_unmap_blocks(ino, u64::from(child), 1)?;
        work.extend(more);
        self.drop_attr_block(child_off);
        Ok(work)
    }

    /// Blocks a remote value of `len` bytes takes (`xfs_attr3_rmt_blocks`).
    fn rmt_blocks(&self, len: u32) -> u64 {
        let space = u64::try_from(self.rmt_space()).unwrap_or(0).max(1);
        u64::from(len).div_ceil(space)
    }

    /// `xfs_bmap_adjacent` for a mapping at attr block `off` of `length`
    /// blocks, between `prev` and `got` (`None`: no extent after, `eof`):
    /// the block to allocate near; else the inode's own.
    fn adjacent(
        &self,
        ino: u64,
        prev: Option<Rec>,
        got: Option<Rec>,
        off: u64,
        length: u64,
    ) -> u64 {
        let g = self.fs().geo;
        let bits = u32::from(g.agblklog);
        let agno_of = |x: u64| x.checked_shr(bits).unwrap_or(0);
        let mask = 1u64
            .checked_shl(bits)
            .map_or(u64::MAX, |m| m.saturating_sub(1));
        let valid = |x: Option<u64>, y: u64| {
            x.is_some_and(|x| {
                agno_of(x) == agno_of(y)
                    && agno_of(x) < u64::from(g.agcount)
                    && (x & mask) < u64::from(g.agblocks)
            })
        };
        let ino_fsb = ino.checked_shr(u32::from(g.inopblog)).unwrap_or(0);
        let prev_end = prev.map(|p| (p, p.start.saturating_add(p.len)));
        if got.is_none() {
            return match prev_end {
                Some((p, pe)) if valid(Some(pe), p.start) => {
                    let adjust = off.saturating_sub(p.end());
                    if adjust != 0 && valid(pe.checked_add(adjust), p.start) {
                        pe.saturating_add(adjust)
                    } else {
                        pe
                    }
                }
                _ => ino_fsb,
            };
        }
        let gap = length.saturating_mul(4);
        let before = match prev_end {
            Some((p, pe)) if pe != 0 && valid(Some(pe), p.start) => {
                let adjust = off.saturating_sub(p.end());
                if adjust <= gap && valid(pe.checked_add(adjust), p.start) {
                    Some((pe.saturating_add(adjust), adjust))
                } else {
                    Some((pe, adjust.saturating_mul(2)))
                }
            }
            _ => None,
        };
        let after = got.map(|r| {
            let adjust = r.off.saturating_sub(off);
            if adjust <= gap && valid(r.start.checked_sub(adjust), r.start) {
                (r.start.saturating_sub(adjust), adjust)
            } else if valid(r.start.checked_sub(length), r.start) {
                (
                    r.start.saturating_sub(length),
                    adjust.saturating_add(adjust).saturating_sub(length),
                )
            } else {
                (r.start, adjust.saturating_mul(2))
            }
        });
        match (before, after) {
            (Some((pb, pd)), Some((gb, gd))) => {
                if pd <= gd {
                    pb
                } else {
                    gb
                }
            }
            (Some((pb, _)), None) => pb,
            (None, Some((gb, _))) => gb,
            (None, None) => ino_fsb,
        }
    }

    /// One transaction of `XFS_DAS_{LEAF,NODE}_SET_RMT` and `_ALLOC_RMT`:
    /// the first time, the value's place is the first hole of the attr
    /// fork that holds it (`xfs_bmap_first_unused`); each time, one extent
    /// is allocated near the blocks `xfs_bmap_adjacent` picks (all the
    /// blocks still needed, in one piece) and mapped there (merged with
    /// contiguous neighbours; di_nblocks grows; the inode logged). When
    /// nothing is left, the value is written to its blocks with their
    /// headers (not logged: their LSNs stay null) and the entry completed.
    /// Returns the AG, the deferred reverse mapping and, when more is
    /// left, where the allocation stands.
    pub fn attr_remote_step(
        &mut self,
        p: &PendingAdd,
        at: Option<RemoteAt>,
        space: &mut dyn AttrSpace,
    ) -> EditResult<(u32, Work, Option<RemoteAt>)> {
        let ino = p.ino;
        let valuelen = u32::try_from(p.value.len()).unwrap_or(u32::MAX);
        let at = match at {
            Some(a) => a,
            None => {
                let count = self.rmt_blocks(valuelen);
                let first = Self::first_unused(&self.attr_extents(ino)?, count);
                RemoteAt {
                    first,
                    next: first,
                    left: count,
                }
            }
        };
        let (agno, length, rmap) = self.attr_alloc_map(ino, at.next, at.left, space)?;
        let now = RemoteAt {
            first: at.first,
            next: at.next.saturating_add(length),
            left: at.left.saturating_sub(length),
        };
        if now.left > 0 {
            return Ok((agno, rmap, Some(now)));
        }
        self.write_remote_value(ino, at.first, &p.value)?;
        // The entry completed (`xfs_attr3_leaf_clearflag`).
        let hash = self.attr_hash(p.ns, &p.name, &p.value)?;
        let (mut lf, _, found) = self.leaf_lookup(ino, hash, |fl, n, _| {
            n == p.name.as_slice()
                && fl & (XFS_ATTR_NSP_ONDISK_MASK | XFS_ATTR_INCOMPLETE)
                    == p.ns | XFS_ATTR_INCOMPLETE
        })?;
        let Ok(i) = found else {
            return refuse(format!("inode {ino}: the remote value's entry is gone"));
        };
        lf.leaf
            .clear_incomplete(i, u32::try_from(at.first).unwrap_or(0), valuelen);
        self.put_attr_block(lf.boff, lf.leaf.b);
        Ok((agno, rmap, None))
    }

    /// `xfs_attr_rmtval_set_value`: `value` written to the attr blocks
    /// from `first`, each with its header on v5 (owner, offset of its part
    /// of the value, bytes, own address, a null LSN), the rest zeroed.
    fn write_remote_value(&mut self, ino: u64, first: u64, value: &[u8]) -> EditResult<()> {
        let fs = self.fs();
        let g = fs.geo;
        let bs = usize::try_from(g.blocksize).unwrap_or(0);
        let space = self.rmt_space().max(1);
        let recs = self.attr_extents(ino)?;
        for (i, part) in value.chunks(space).enumerate() {
            let lblk = first.saturating_add(u64::try_from(i).unwrap_or(u64::MAX));
            let Some(r) = recs.iter().find(|r| r.off <= lblk && r.end() > lblk) else {
                return refuse(format!(
                    "inode {ino}: attr block {lblk} of a remote value is not mapped"
                ));
            };
            let fsb = r.start.saturating_add(lblk.saturating_sub(r.off));
            let boff = self
                .block_off("remote attr block", fsb)
                .map_err(|e| e.within(|| format!("inode {ino}")))?;
            let mut v = vec![0u8; bs];
            let data_at = if g.v5 {
                put_be32(&mut v, 0, XFS_ATTR3_RMT_MAGIC);
                let off = i.saturating_mul(space);
                put_be32(&mut v, 4, u32::try_from(off).unwrap_or(0));
                put_be32(&mut v, 8, u32::try_from(part.len()).unwrap_or(0));
                if let Some(d) = v.get_mut(16..32) {
                    d.copy_from_slice(&fs.meta_uuid());
                }
                put_be64(&mut v, 32, ino);
                put_be64(&mut v, 40, boff / 512);
                put_be64(&mut v, 48, u64::MAX);
                RMT_HDR
            } else {
                0
            };
            if let Some(d) = v.get_mut(data_at..data_at.saturating_add(part.len())) {
                d.copy_from_slice(part);
            }
            if g.v5 {
                super::put_crc(&mut v, 12);
            }
            self.put_raw_block(boff, v);
        }
        Ok(())
    }

    /// `xfs_bunmapi` of one extent of the attr blocks `[blk, blk + count)`
    /// (an old remote value's, one per transaction of
    /// `XFS_DAS_NODE_REMOVE_RMT`; a dropped da block's, in
    /// `xfs_da_shrink_inode`): the last extent in the range unmapped, its
    /// reverse mapping and free deferred. Returns that work, whether more
    /// of the range is mapped, and whether the inode was logged (not when
    /// nothing was mapped).
    pub fn attr_unmap_blocks(
        &mut self,
        ino: u64,
        blk: u64,
        count: u64,
    ) -> EditResult<(Vec<Work>, bool, bool)> {
        let Some((piece, more)) = self.attr_unmap_last(ino, blk, blk.saturating_add(count))? else {
            return Ok((Vec::new(), false, false));
        };
        let g = self.fs().geo;
        let (agno, agbno) = g.split_fsb(crate::xfs::types::FsBlock(piece.start));
        let len = u32::try_from(piece.len).unwrap_or(u32::MAX);
        let m = Rmap {
            start: agbno.0,
            len,
            owner: ino,
            offset: piece.off,
            attr: true,
            bmbt: false,
            unwritten: false,
        };
        // Joined bmbt leaves go first (the btree delete), a leaf given up
        // for a list last (the end of the call).
        let (mut work, after) = self.take_let_go();
        work.extend(Work::unmap_and_free(agno.0, m));
        work.extend(after);
        Ok((work, more, true))
    }

    /// `XFS_DAS_NODE_REMOVE_ATTR`: the old entry, marked incomplete, leaves
    /// the leaf; then `xfs_attr_leaf_shrink`: a fork that is one leaf block
    /// again goes back to a shortform list if the rest fits (kept for a
    /// set's add). Returns the deferred work and whether the inode was
    /// logged.
    pub fn attr_remove_incomplete(&mut self, r: &Removal) -> EditResult<(Vec<Work>, bool)> {
        let ino = r.ino;
        let hash = self.attr_hash(r.ns, &r.name, &r.value)?;
        let (mut lf, mut path, found) = self.leaf_lookup(ino, hash, |fl, n, v| {
            n == r.name.as_slice()
                && fl & (XFS_ATTR_NSP_ONDISK_MASK | XFS_ATTR_INCOMPLETE)
                    == r.ns | XFS_ATTR_INCOMPLETE
                && (!r.parent || v == r.value.as_slice())
        })?;
        let Ok(i) = found else {
            return refuse(format!(
                "inode {ino}: the entry marked incomplete for removal is gone"
            ));
        };
        let cc0 = be64(&self.inode(ino)?.1, 104).unwrap_or(0);
        self.begin_transaction();
        lf.leaf.remove(i);
        self.fix_hash_path(&mut path, &lf.leaf);
        let bs = usize::try_from(self.fs().geo.blocksize).unwrap_or(0);
        let used = lf
            .leaf
            .hdr_size()
            .saturating_add(lf.leaf.hdr.count.saturating_mul(8))
            .saturating_add(lf.leaf.hdr.usedbytes);
        let mut work = if !path.is_empty() && used < bs.saturating_mul(37) / 100 {
            self.join_leaf(ino, lf, path)?
        } else {
            self.put_attr_block(lf.boff, lf.leaf.b);
            Vec::new()
        };
        let mut logged = !work.is_empty();
        // xfs_attr_leaf_shrink: a fork that is one leaf block again goes
        // back to a list if the rest fits.
        if let Some(AttrFork::Leaf(l0)) = self.attr_fork(ino)? {
            if l0.single {
                let (_, ib) = self.inode(ino)?;
                let fit = match l0.leaf.shortform_bytes() {
                    Some(bytes) => self.leaf_allfit(&ib, ino, bytes)?,
                    None => None,
                };
                if let Some(forkoff) = fit {
                    work.extend(self.leaf_to_sf(ino, l0, forkoff, r.set)?);
                    logged = true;
                }
            }
        }
        if logged {
            // One transaction: its change count rose once, however many
            // times it logged the inode, or not at all when it first
            // logged only the root of the fork's bmbt.
            let bumps = u64::from(!self.root_logged_first(ino));
            self.set_change_count(ino, cc0.wrapping_add(bumps))?;
        }
        Ok((work, logged))
    }

    /// The entry goes at the end of the list, di_forkoff from bytesfit, the
    /// change time set.
    fn sf_add(
        &mut self,
        mut f: SfFork,
        p: &PendingAdd,
        now: RecoveryTime,
        bumps: u64,
    ) -> EditResult<()> {
        let ino = p.ino;
        let (name, value) = (&p.name, &p.value);
        if name.len() >= SF_ENTSIZE_MAX || value.len() >= SF_ENTSIZE_MAX {
            return refuse(format!(
                "inode {ino}: a name of {} or value of {} bytes moves the list to a leaf block, which this tool does not do",
                name.len(),
                value.len()
            ));
        }
        let newsize =
            f.sf.len()
                .saturating_add(3)
                .saturating_add(name.len())
                .saturating_add(value.len());
        let forkoff = bytesfit(&self.shape(&f, ino, f.forkoff)?, newsize);
        if forkoff == 0 {
            return refuse(format!(
                "inode {ino}: {newsize} bytes of attributes no longer fit the inode; the kernel moves them to a leaf block, which this tool does not do"
            ));
        }
        f.sf.push(u8::try_from(name.len()).unwrap_or(0));
        f.sf.push(u8::try_from(value.len()).unwrap_or(0));
        f.sf.push(p.ns);
        f.sf.extend_from_slice(name);
        f.sf.extend_from_slice(value);
        if let Some(c) = f.sf.get_mut(2) {
            *c = c.saturating_add(1);
        }
        let total = u16::try_from(f.sf.len()).unwrap_or(u16::MAX);
        put_be16(&mut f.sf, 0, total);
        let v3 = f.b.get(4) == Some(&3);
        let big = v3 && be64(&f.b, 120).unwrap_or(0) & XFS_DIFLAG2_BIGTIME != 0;
        put_be64(&mut f.b, 48, Timestamp::encode(now.sec, now.nsec, big));
        self.put_sf(ino, f, forkoff, bumps)
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    fn shape(forkoff: usize, dformat: u8, dbytes: usize) -> Shape {
        Shape {
            literal: 336,
            forkoff,
            dformat,
            dbytes,
            attr2: true,
            default_off: bmdr(12),
        }
    }

    #[test]
    fn fork_offsets_follow_the_kernels_policy() {
        // The values the kernel chose in the spec's experiments (§3.8):
        // a small first attr on an inode with no fork: the maximum, 37.
        assert_eq!(
            bytesfit(&shape(0, XFS_DINODE_FMT_LOCAL, 12), 4 + 3 + 1 + 1),
            37
        );
        // 150-byte value on a one-extent symlink: (336 - 160) >> 3 = 22.
        assert_eq!(
            bytesfit(&shape(0, XFS_DINODE_FMT_EXTENTS, 16), 4 + 3 + 3 + 150),
            22
        );
        // The default fork (24) of a 6-extent file whose list grows to 215
        // bytes (replay-attri's "extents", as the kernel recovered it): 15.
        assert_eq!(bytesfit(&shape(24, XFS_DINODE_FMT_EXTENTS, 96), 215), 15);
        // A list that fits keeps the offset; a device inode keeps 1.
        assert_eq!(bytesfit(&shape(24, XFS_DINODE_FMT_EXTENTS, 16), 100), 24);
        assert_eq!(bytesfit(&shape(1, XFS_DINODE_FMT_DEV, 0), 14), 1);
        // A bmbt data fork with a fork already: keep it or give up.
        assert_eq!(bytesfit(&shape(24, XFS_DINODE_FMT_BTREE, bmdr(2)), 200), 0);
        // Too big for any offset.
        assert_eq!(bytesfit(&shape(24, XFS_DINODE_FMT_EXTENTS, 300), 300), 0);
        assert_eq!(bytesfit(&shape(24, XFS_DINODE_FMT_EXTENTS, 0), 400), 0);
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects
)]
mod fixture_tests {
    use super::super::agedit::EditError;
    use super::*;
    use crate::xfs::image::Overlay;
    use crate::xfs::testutil::fixture_fs;

    /// No free space: every allocation refused.
    struct NoSpace;
    impl AttrSpace for NoSpace {
        fn near(&mut self, _: u32, _: u32, _: u32) -> EditResult<Option<u32>> {
            refuse("no space in this test".into())
        }
        fn bmbt_block(
            &mut self,
            _: u32,
            _: u32,
            _: crate::xfs::replay::alloc::RmapOwner,
        ) -> EditResult<Option<u32>> {
            refuse("no space in this test".into())
        }
        fn let_go(&mut self, _: u32) -> EditResult<Vec<Work>> {
            Ok(Vec::new())
        }
    }

    fn item(ino: u64, op_flags: u32, filter: u32, name: &[u8], value_len: u32) -> AttriItem {
        AttriItem {
            id: 1,
            ino,
            igen: 0,
            op_flags,
            op: "test",
            name_len: u32::try_from(name.len()).unwrap(),
            new_name_len: None,
            value_len,
            attr_filter: filter,
            name: None,
            link: None,
        }
    }

    /// The first step of a user-namespace attribute intent (`op` 1 set, 2
    /// remove) on `ino`, the recovery time zero: the tasks left.
    fn start<R: ReadAt>(
        ed: &mut ForkEditor<'_, R>,
        ino: u64,
        op: u32,
        name: &[u8],
        value: &[u8],
        space: &mut dyn AttrSpace,
    ) -> EditResult<Vec<AttrTask>> {
        let regions = if op == 2 {
            vec![pad(name)]
        } else {
            vec![pad(name), pad(value)]
        };
        let a = item(ino, op, 0, name, u32::try_from(value.len()).unwrap());
        ed.attr(&a, &regions, RecoveryTime::default(), space)
    }

    /// An intent's later steps run in order as the chain runs them (what
    /// a step queues goes first; deferred work is skipped), up to the
    /// first refusal.
    fn run_tasks<R: ReadAt>(
        ed: &mut ForkEditor<'_, R>,
        tasks: Vec<AttrTask>,
        space: &mut dyn AttrSpace,
    ) -> EditResult<()> {
        let now = RecoveryTime::default();
        let mut queue: std::collections::VecDeque<AttrTask> = tasks.into();
        let mut steps = 0;
        while let Some(t) = queue.pop_front() {
            steps += 1;
            assert!(steps < 100, "the steps do not end");
            match t {
                AttrTask::Add(p) => match ed.attr_add(&p, now, space)?.0 {
                    AddOutcome::Remote(p) => queue.push_front(AttrTask::RemoteSet(p, None)),
                    AddOutcome::Again(p) => queue.push_front(AttrTask::Add(p)),
                    AddOutcome::Done => {}
                },
                AttrTask::RemoteSet(p, at) => {
                    if let (_, _, Some(at)) = ed.attr_remote_step(&p, at, space)? {
                        queue.push_front(AttrTask::RemoteSet(p, Some(at)));
                    }
                }
                AttrTask::RemoveRmt { ino, blk, count } => {
                    if ed.attr_unmap_blocks(ino, blk, count)?.1 {
                        queue.push_front(AttrTask::RemoveRmt { ino, blk, count });
                    }
                }
                AttrTask::RemoveAttr(rm) => {
                    ed.attr_remove_incomplete(&rm)?;
                }
                AttrTask::Group(_) => {}
            }
        }
        Ok(())
    }

    fn pad(b: &[u8]) -> Vec<u8> {
        let mut v = b.to_vec();
        v.resize(b.len().div_ceil(4) * 4, 0);
        v
    }

    /// Hostile or impossible attribute intents on a real filesystem are
    /// refused with a reason; nothing panics and nothing is changed.
    #[test]
    fn impossible_attribute_intents_are_refused_with_a_reason() {
        let fs = fixture_fs("v5-formats");
        let ov = Overlay::default();
        let ino = |p: &str| fs.lookup_path(p.as_bytes()).unwrap().ino.0;
        let small = ino("/xattrs/fork-later-small");
        let mut ed = ForkEditor::new(&fs, &ov);
        // A free inode in an allocated chunk (mode 0).
        let free = (small + 1..small + 64)
            .find(|&i| ed.inode(i).is_ok_and(|(_, b)| be16(&b, 2) == Some(0)))
            .unwrap();
        let now = RecoveryTime::default();
        let mut why =
            |a: AttriItem, regions: Vec<Vec<u8>>| match ed.attr(&a, &regions, now, &mut NoSpace) {
                Err(EditError::Unsupported(u)) => u.0,
                other => panic!("not refused: {other:?}"),
            };
        let nv = |n: &[u8], v: &[u8]| vec![pad(n), pad(v)];
        let cases: Vec<(AttriItem, Vec<Vec<u8>>, &str)> = vec![
            // The kernel's own checks: flag bits, namespaces, lengths, NULs.
            (item(small, 0x101, 0, b"a", 1), nv(b"a", b"1"), "invalid"),
            (
                item(small, 1, 0x06, b"a", 1),
                nv(b"a", b"1"),
                "more than one namespace",
            ),
            (item(small, 1, 0x100, b"a", 1), nv(b"a", b"1"), "invalid"),
            (item(small, 9, 0, b"a", 1), nv(b"a", b"1"), "operation 9"),
            (item(small, 1, 0, b"", 1), nv(b"", b"1"), "name of 0 bytes"),
            (
                item(small, 1, 0, b"a", 70000),
                nv(b"a", b"1"),
                "value of 70000",
            ),
            (item(small, 1, 0, b"a\0b", 1), nv(b"a\0b", b"1"), "NUL"),
            (
                item(small, 1, 0, b"a", 0),
                vec![pad(b"a")],
                "value of 0 bytes",
            ),
            (
                item(small, 2, 0, b"a", 1),
                nv(b"a", b"1"),
                "removal with a value",
            ),
            // Regions that do not match the lengths the intent declares.
            (
                item(small, 1, 0, b"abcde", 1),
                nv(b"abc", b"1"),
                "name region of 4 bytes",
            ),
            (
                item(small, 1, 0, b"a", 9),
                nv(b"a", b"1"),
                "value region of 4 bytes",
            ),
            (
                item(small, 1, 0, b"a", 9),
                vec![pad(b"a")],
                "value region of 0 bytes",
            ),
            // A parent pointer where the filesystem has none.
            (
                item(small, 4, 0x08, b"a", 12),
                nv(b"a", &[0; 12]),
                "without parent pointers",
            ),
            // What this tool does not do: incomplete entries.
            (item(small, 1, 0x80, b"a", 1), nv(b"a", b"1"), "incomplete"),
            // No such inode, or a free one.
            (item(1 << 40, 1, 0, b"a", 1), nv(b"a", b"1"), "owner"),
            (item(free, 1, 0, b"a", 1), nv(b"a", b"1"), "free"),
        ];
        for (a, regions, want) in cases {
            let m = why(a, regions);
            assert!(m.contains(want), "{want}: {m}");
        }
        assert!(
            ed.inodes_changed() == 0,
            "a refused intent changed an inode"
        );
    }

    /// The search into the next leaf (`xfs_da3_path_shift`) over damaged
    /// nodes and leaves: a name of the shared hash removed from a later
    /// leaf, one added after the run (replay-attri-hash.mkfs.txt: hmid is
    /// inode 132, its fork the same as every file's there).
    #[test]
    fn damaged_leaves_of_one_hash_are_refused_without_panics() {
        let ops: [(u32, &[u8], &[u8]); 2] = [(2, b"ccMUWn8Y", b""), (1, b"ch8EWngp", b"new")];
        let (finished, refused) =
            damage_rounds("replay-attri-hash", 132, 0xa77e_0003, (300, 4, 128), &ops);
        assert!(finished > 0 && refused > 0, "{finished} {refused}");
    }

    /// Hostile attr blocks: replay-attri-node's nodeadd (a node over three
    /// leaves) with bytes of its node or a leaf changed at random (the
    /// header most often). Sets and removals through the node path, and
    /// their later steps, finish or are refused with a reason; none
    /// panics.
    #[test]
    fn damaged_attr_nodes_and_leaves_are_refused_without_panics() {
        let value = vec![b'q'; 40];
        let ops: [(u32, &[u8], &[u8]); 3] =
            [(1, b"zz", &value), (2, b"n05", b""), (2, b"n17", b"")];
        let (finished, refused) =
            damage_rounds("replay-attri-node", 131, 0xa77e_0001, (400, 6, 96), &ops);
        assert!(finished > 0 && refused > 0, "{finished} {refused}");
    }

    /// Rounds of random damage to `ino`'s attr blocks in fixture `name`
    /// (`rounds`; a block a round in turn, up to `flips` bytes, two in
    /// three among its first `header` bytes), each followed by `ops` (1
    /// set, 2 remove) and their later steps: how many steps finished and
    /// how many were refused. A panic fails the caller.
    #[allow(clippy::as_conversions, clippy::cast_possible_truncation)]
    fn damage_rounds(
        name: &str,
        ino: u64,
        seed: u64,
        (rounds, flips, header): (usize, usize, u64),
        ops: &[(u32, &[u8], &[u8])],
    ) -> (usize, usize) {
        use crate::xfs::testutil::Rng;
        let fs = fixture_fs(name);
        let clean = Overlay::default();
        let base = ForkEditor::new(&fs, &clean);
        let offs: Vec<u64> = base
            .attr_extents(ino)
            .unwrap()
            .iter()
            .flat_map(|rec| (0..rec.len).map(move |i| rec.start + i))
            .map(|fsb| base.block_off("attr block", fsb).unwrap())
            .collect();
        assert!(offs.len() >= 4, "{offs:?}");
        let bs = usize::try_from(fs.geo.blocksize).unwrap();
        let mut r = Rng(seed);
        let now = RecoveryTime::default();
        let (mut finished, mut refused) = (0, 0);
        for round in 0..rounds {
            let off = offs[round % offs.len()];
            let mut b = base.read("attr block", off, bs).unwrap();
            for _ in 0..1 + round % flips {
                let at = if r.next() % 3 == 0 {
                    (r.next() % bs as u64) as usize
                } else {
                    (r.next() % header) as usize
                };
                b[at] = r.next() as u8;
            }
            let mut ov = Overlay::default();
            ov.put(off / 512, &b);
            let mut ed = ForkEditor::new(&fs, &ov);
            for &(op, name, v) in ops {
                let Ok(tasks) = start(&mut ed, ino, op, name, v, &mut NoSpace) else {
                    refused += 1;
                    continue;
                };
                for t in tasks {
                    let step = match t {
                        AttrTask::Add(p) => ed.attr_add(&p, now, &mut NoSpace).map(|_| ()),
                        AttrTask::RemoveAttr(rm) => ed.attr_remove_incomplete(&rm).map(|_| ()),
                        _ => Ok(()),
                    };
                    if step.is_ok() {
                        finished += 1;
                    } else {
                        refused += 1;
                    }
                }
            }
        }
        (finished, refused)
    }

    /// Space for tests: every request gets the next of a run of blocks.
    struct SomeSpace(u32);
    impl AttrSpace for SomeSpace {
        fn near(&mut self, _: u32, _: u32, len: u32) -> EditResult<Option<u32>> {
            self.0 = self.0.saturating_add(len);
            Ok(Some(self.0))
        }
        fn bmbt_block(
            &mut self,
            _: u32,
            _: u32,
            _: crate::xfs::replay::alloc::RmapOwner,
        ) -> EditResult<Option<u32>> {
            self.0 = self.0.saturating_add(1);
            Ok(Some(self.0))
        }
        fn let_go(&mut self, _: u32) -> EditResult<Vec<Work>> {
            Ok(Vec::new())
        }
    }

    /// Hostile attr-fork bmbts: replay-attri-bmbt's btset and btrm (a
    /// bmbt leaf under the root in the inode) with bytes of the leaf, or
    /// of the inode's fork, changed at random. Sets of remote values
    /// (mapped into the bmbt) and removals (unmapped from it) and their
    /// later steps finish or are refused with a reason; none panics.
    #[test]
    #[allow(clippy::as_conversions, clippy::cast_possible_truncation)]
    fn damaged_attr_fork_bmbts_are_refused_without_panics() {
        use crate::xfs::bmap::Fork;
        use crate::xfs::testutil::Rng;
        use crate::xfs::types::Ino;
        let fs = fixture_fs("replay-attri-bmbt");
        let bs = usize::try_from(fs.geo.blocksize).unwrap();
        let isize = u64::from(fs.geo.inodesize);
        let mut targets = Vec::new();
        for ino in [131u64, 132] {
            let inode = fs.inode(Ino(ino)).unwrap();
            let Some(Fork::Btree { blocks, .. }) = &inode.attr else {
                panic!("inode {ino}: no attr bmbt");
            };
            for b in blocks {
                let off = fs.geo.fsb_to_daddr(*b).unwrap().byte_offset().unwrap();
                targets.push((ino, off, bs));
            }
            targets.push((ino, fs.inode_offset(Ino(ino)).unwrap(), isize as usize));
        }
        // A leaf whose right sibling is itself: refused, not walked for
        // ever.
        {
            let (_, off, len) = targets[0];
            let mut b = fs.img.read_disk("block", off, len as u64).unwrap();
            let Some(Fork::Btree { blocks, .. }) = &fs.inode(Ino(131)).unwrap().attr else {
                panic!("inode 131: no attr bmbt");
            };
            b[16..24].copy_from_slice(&blocks[0].0.to_be_bytes());
            let mut ov = Overlay::default();
            ov.put(off / 512, &b);
            let ed = ForkEditor::new(&fs, &ov);
            match ed.attr_extents(131) {
                Err(EditError::Unsupported(u)) => assert!(u.0.contains("loop"), "{}", u.0),
                other => panic!("not refused: {other:?}"),
            }
        }
        let mut r = Rng(0xab7b_0001);
        let (mut finished, mut refused) = (0, 0);
        for round in 0..300 {
            let (ino, off, len) = targets[round % targets.len()];
            let mut b = fs.img.read_disk("block", off, len as u64).unwrap();
            for _ in 0..1 + round % 4 {
                // The block header or records; the inode's attr fork (its
                // last 144 bytes) or its counters.
                let at = if len == bs {
                    (r.next() % 120) as usize
                } else if r.next() % 2 == 0 {
                    len - 1 - (r.next() % 144) as usize
                } else {
                    76 + (r.next() % 8) as usize
                };
                b[at] = r.next() as u8;
            }
            let mut ov = Overlay::default();
            ov.put(off / 512, &b);
            let mut ed = ForkEditor::new(&fs, &ov);
            let mut space = SomeSpace(3000);
            let value = vec![b'q'; 3000];
            let (op, name, v): (u32, &[u8], &[u8]) = if ino == 131 {
                (1, b"new", &value)
            } else {
                (2, b"r10", b"")
            };
            let Ok(tasks) = start(&mut ed, ino, op, name, v, &mut space) else {
                refused += 1;
                continue;
            };
            if run_tasks(&mut ed, tasks, &mut space).is_ok() {
                finished += 1;
            } else {
                refused += 1;
            }
        }
        assert!(finished > 0 && refused > 0, "{finished} {refused}");
    }

    /// Hostile da nodes under a split: replay-attri-rootsplit's full root
    /// node (or the leaf the set lands in) with bytes changed at random
    /// (its header and first entries most often). The set that splits the
    /// leaf, the node and the root finishes or is refused with a reason;
    /// none panics.
    #[test]
    #[allow(clippy::as_conversions, clippy::cast_possible_truncation)]
    fn damaged_full_nodes_under_a_split_are_refused_without_panics() {
        use crate::xfs::testutil::Rng;
        let fs = fixture_fs("replay-attri-rootsplit");
        let ino = 67;
        let bs = usize::try_from(fs.geo.blocksize).unwrap();
        let clean = Overlay::default();
        let base = ForkEditor::new(&fs, &clean);
        let recs = base.attr_extents(ino).unwrap();
        let at_blk = |blk: u64| {
            let r = recs.iter().find(|r| r.off <= blk && r.end() > blk).unwrap();
            base.block_off("attr block", r.start + (blk - r.off))
                .unwrap()
        };
        let root = at_blk(0);
        let mut r = Rng(0xda5b_0001);
        let (mut finished, mut refused) = (0, 0);
        for round in 0..200 {
            let off = if round % 3 == 0 {
                at_blk(1 + r.next() % 120)
            } else {
                root
            };
            let mut b = base.read("attr block", off, bs).unwrap();
            for _ in 0..1 + round % 3 {
                let at = (r.next() % 160) as usize;
                b[at] = r.next() as u8;
            }
            let mut ov = Overlay::default();
            ov.put(off / 512, &b);
            let mut ed = ForkEditor::new(&fs, &ov);
            let mut space = SomeSpace(3000);
            let value = vec![b'q'; 460];
            let done = start(&mut ed, ino, 1, b"z00000", &value, &mut space)
                .and_then(|tasks| run_tasks(&mut ed, tasks, &mut space));
            if done.is_ok() {
                finished += 1;
            } else {
                refused += 1;
            }
        }
        assert!(finished > 0 && refused > 0, "{finished} {refused}");
    }

    /// The 12 names replay-attri-deepjoin's log removes from inode 67 (its
    /// mkfs.txt).
    fn deepjoin_names() -> Vec<String> {
        let mkfs = std::fs::read_to_string(
            crate::xfs::testutil::fixtures_dir().join("replay-attri-deepjoin.mkfs.txt"),
        )
        .unwrap();
        let names: Vec<String> = mkfs
            .lines()
            .filter_map(|l| l.trim().strip_prefix("attri:remove:67:user:"))
            .map(str::to_string)
            .collect();
        assert_eq!(names.len(), 12);
        names
    }

    /// replay-attri-deepjoin's tree of inode 67, read from `base`: the root
    /// node's two entries (hash, attr block) and the byte offsets of the
    /// root and of the two nodes under it.
    fn deepjoin_tree(
        base: &ForkEditor<'_, crate::xfs::read::FileReader>,
        bs: usize,
    ) -> (Vec<(u32, u32)>, [u64; 3]) {
        let ino = 67;
        let root = base.attr_block_off(ino, 0).unwrap();
        let entries = ForkEditor::<crate::xfs::read::FileReader>::da_entries(
            &base.read("attr block", root, bs).unwrap(),
            true,
        );
        assert_eq!(entries.len(), 2);
        let node = |i: usize| base.attr_block_off(ino, u64::from(entries[i].1)).unwrap();
        let offs = [root, node(0), node(1)];
        (entries, offs)
    }

    /// Nodes that join (the case below) with their blocks damaged at
    /// random: each removal finishes or is refused, never a panic.
    #[test]
    #[allow(clippy::as_conversions, clippy::cast_possible_truncation)]
    fn damaged_nodes_that_join_are_refused_without_panics() {
        use crate::xfs::testutil::Rng;
        let fs = fixture_fs("replay-attri-deepjoin");
        let ino = 67;
        let names = deepjoin_names();
        let bs = usize::try_from(fs.geo.blocksize).unwrap();
        let clean = Overlay::default();
        let base = ForkEditor::new(&fs, &clean);
        let (_, nodes) = deepjoin_tree(&base, bs);
        let mut r = Rng(0xa77e_0004);
        let (mut finished, mut refused) = (0, 0);
        for round in 0..200 {
            let mut ov = Overlay::default();
            // The second node shrunk to one entry, so that the nodes join.
            let mut sib = base.read("attr block", nodes[2], bs).unwrap();
            sib[56..58].copy_from_slice(&1u16.to_be_bytes());
            let target = nodes[round % 3];
            let mut b = if target == nodes[2] {
                sib.clone()
            } else {
                base.read("attr block", target, bs).unwrap()
            };
            for _ in 0..1 + round % 3 {
                let at = (r.next() % 96) as usize;
                b[at] = r.next() as u8;
            }
            if target != nodes[2] {
                ov.put(nodes[2] / 512, &sib);
            }
            ov.put(target / 512, &b);
            let mut ed = ForkEditor::new(&fs, &ov);
            for name in &names {
                let Ok(tasks) = start(&mut ed, ino, 2, name.as_bytes(), b"", &mut NoSpace) else {
                    refused += 1;
                    break;
                };
                let mut ok = true;
                for t in tasks {
                    if let AttrTask::RemoveAttr(rm) = t {
                        ok &= ed.attr_remove_incomplete(&rm).is_ok();
                    }
                }
                if ok {
                    finished += 1;
                } else {
                    refused += 1;
                    break;
                }
            }
        }
        assert!(finished > 0 && refused > 0, "{finished} {refused}");
    }

    /// A leaf of replay-attri-deepjoin's three-level tree emptied until it
    /// joins a sibling, with the sibling node made nearly empty first: the
    /// node left with one entry less then joins that sibling node.
    #[test]
    fn a_node_that_falls_small_joins_its_sibling_node_and_the_root_takes_it() {
        let fs = fixture_fs("replay-attri-deepjoin");
        let ino = 67;
        let names = deepjoin_names();
        let bs = usize::try_from(fs.geo.blocksize).unwrap();
        let clean = Overlay::default();
        let base = ForkEditor::new(&fs, &clean);
        let (entries, [root, _, sib]) = deepjoin_tree(&base, bs);
        let mut b = base.read("attr block", sib, bs).unwrap();
        b[56..58].copy_from_slice(&1u16.to_be_bytes());
        let mut ov = Overlay::default();
        ov.put(sib / 512, &b);
        let mut ed = ForkEditor::new(&fs, &ov);
        for name in &names {
            let tasks = start(&mut ed, ino, 2, name.as_bytes(), b"", &mut NoSpace).unwrap();
            for t in tasks {
                if let AttrTask::RemoveAttr(rm) = t {
                    ed.attr_remove_incomplete(&rm).unwrap();
                }
            }
        }
        // The leaf join left the first node small enough to join the
        // shrunk sibling node: one node holds the entries of both, in hash
        // order, and with one child left the root took its bytes (a node
        // at level 1 in attr block 0); the dropped node is unmapped.
        let b0 = ed.read("attr block", root, bs).unwrap();
        assert_eq!(be16(&b0, 8), Some(XFS_DA3_NODE_MAGIC));
        let (_, _, level_at) = node_layout(true);
        assert_eq!(be16(&b0, level_at), Some(1));
        let after = ForkEditor::<crate::xfs::read::FileReader>::da_entries(&b0, true);
        assert!(after.windows(2).all(|w| w[0].0 <= w[1].0), "{after:?}");
        let sib_first = ForkEditor::<crate::xfs::read::FileReader>::da_entries(&b, true)[0];
        assert_eq!(after.last(), Some(&sib_first));
        let blocks: Vec<u64> = ed
            .attr_extents(ino)
            .unwrap()
            .iter()
            .flat_map(|r| r.off..r.end())
            .collect();
        assert!(
            !blocks.contains(&u64::from(entries[0].1))
                || !blocks.contains(&u64::from(entries[1].1))
        );
    }

    /// Set, replace and remove on one real inode: back where it started,
    /// but for the change count and time the kernel's rules move.
    #[test]
    fn set_then_remove_restores_a_shortform_list() {
        let fs = fixture_fs("v5-formats");
        let ov = Overlay::default();
        // Created with a fork (forkoff 24): room for what is added here.
        let small = fs
            .lookup_path(b"/xattrs/fork-at-create-small")
            .unwrap()
            .ino
            .0;
        let mut ed = ForkEditor::new(&fs, &ov);
        let (ioff, before) = ed.inode(small).unwrap();
        assert_eq!(before[82], 24);
        let now = RecoveryTime {
            sec: 1_800_000_000,
            nsec: 5,
        };
        let nv = |n: &[u8], v: &[u8]| vec![pad(n), pad(v)];
        // Each set's add as its captured work does it: a roll that logs
        // the inode, then the add.
        let mut set = |a: AttriItem, r: Vec<Vec<u8>>| {
            let tasks = ed.attr(&a, &r, now, &mut NoSpace).unwrap();
            let [AttrTask::Add(add)] = tasks.as_slice() else {
                panic!("an add waits: {tasks:?}");
            };
            ed.bump_change_count(small, 1).unwrap();
            let (out, logged, work) = ed.attr_add(add, now, &mut NoSpace).unwrap();
            assert!(matches!(out, AddOutcome::Done) && logged && work.is_empty());
        };
        set(item(small, 1, 0, b"new", 3), nv(b"new", b"abc"));
        set(item(small, 3, 0, b"new", 5), nv(b"new", b"abcde"));
        let (_, mid) = ed.inode(small).unwrap();
        let core = 176;
        let at = core + usize::from(mid[82]) * 8;
        let total = usize::from(be16(&mid, at).unwrap());
        assert_eq!(&mid[at + total - 11..at + total], b"\x03\x05\x00newabcde");
        assert!(ed
            .attr(
                &item(small, 2, 0, b"new", 0),
                &[pad(b"new")],
                now,
                &mut NoSpace,
            )
            .unwrap()
            .is_empty());
        let (off2, after) = ed.inode(small).unwrap();
        assert_eq!(off2, ioff);
        // Set into a fork with attributes: 3 each; the removal: 1.
        let cc = |b: &[u8]| be64(b, 104).unwrap();
        assert_eq!(cc(&after), cc(&before) + 7);
        let big = be64(&after, 120).unwrap() & XFS_DIFLAG2_BIGTIME != 0;
        let ctime = Timestamp::decode(be64(&after, 48).unwrap(), big);
        assert_eq!((ctime.sec, ctime.nsec), (now.sec, now.nsec));
        // Everything else in the inode as it was, the list included.
        let mut a = after.clone();
        a[48..56].copy_from_slice(&before[48..56]);
        a[104..112].copy_from_slice(&before[104..112]);
        let b_at = core + usize::from(before[82]) * 8;
        let b_total = usize::from(be16(&before, b_at).unwrap());
        assert_eq!(a[..b_at + b_total], before[..b_at + b_total]);
    }
}
