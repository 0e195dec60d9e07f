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
//! The add state a set chose when its removal step ended is kept, as the
//! kernel keeps it: every intent's first step runs before any intent's
//! chain, so an earlier intent may change the fork's form under a later
//! one's add; the kernel then reads a block of the wrong kind and fails
//! the mount, and so is it refused here.
//!
//! Refused, with the reason: an allocation the AG's longest free extent
//! cannot hold in one piece, intents the kernel's own checks reject (it
//! then fails the mount).
//!
//! The files follow the kernel's:
//!
//! | file | kernel | what |
//! |---|---|---|
//! | `mod.rs` | `xfs_attr_item.c`, `xfs_attr.c` | the intent checked, its steps (`xfs_attr_set_iter`), removal of an incomplete entry |
//! | `shortform.rs` | `xfs_attr_leaf.c` (shortform) | the list in the inode, `bytesfit`, to and from a leaf block |
//! | `leaf.rs` | `xfs_attr_leaf.c` (leaf) | an add into a leaf, a leaf split, a leaf made a node |
//! | `leaf_block.rs` | `xfs_attr_leaf.c` (block) | one leaf block's entries and names edited in place |
//! | `remote.rs` | `xfs_attr_remote.c` | value blocks mapped, written and unmapped |
//! | `da_btree.rs` | `xfs_da_btree.c` | node lookup, split, join, path shift, hash fix-up |
//! | `alloc.rs` | `xfs_bmap.c`, `xfs_da_btree.c` (`xfs_da_grow_inode`) | attr fork blocks: the first unused, allocation near the neighbours |

mod alloc;
mod da_btree;
mod leaf;
mod leaf_block;
mod remote;
mod shortform;

use super::ag::EditResult;
use super::bmap::{extent_count, ForkEditor, Rec};
use super::defer::{Rmap, Work};
use super::{set_be16, set_be32, set_be64, RecoveryTime, WritePastEnd};
use crate::xfs::dahash::{da_hashname, parent_hashname};
use crate::xfs::error::Location;
use crate::xfs::format::attr::XfsAttrSfHdr;
use crate::xfs::format::attr::{
    XFS_ATTR3_RMT_MAGIC, XFS_ATTR_INCOMPLETE, XFS_ATTR_NSP_ONDISK_MASK, XFS_ATTR_PARENT,
    XFS_XATTR_SIZE_MAX,
};
use crate::xfs::format::da::XfsDaBlkinfo;
use crate::xfs::format::da::{XFS_DA3_NODE_MAGIC, XFS_DA_NODE_MAGIC};
use crate::xfs::format::dinode::XfsDinode;
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
use crate::xfs::replay::ag::{damaged, fails_mount, not_done};
use crate::xfs::replay::block_len;
use core::mem::offset_of;
use leaf_block::{entsize_local, entsize_remote, Leaf};
use shortform::{bytesfit, sf_entries};

/// A parent pointer's value (`struct xfs_parent_rec`: inode, generation).
const PARENT_REC: u32 = 12;
/// Bits an ATTRI's filter may carry (`XFS_ATTRI_FILTER_MASK`).
const FILTER_MASK: u8 = XFS_ATTR_NSP_ONDISK_MASK | XFS_ATTR_INCOMPLETE;
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
        return fails_mount(format!(
            "{what} region of {} bytes for {len} bytes",
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
        return fails_mount(format!(
            "flags {:#x} / filter {:#x} are invalid",
            a.op_flags, a.attr_filter
        ));
    }
    let parent = matches!(op, 4..=6);
    if !matches!(op, 1..=6) {
        return fails_mount(format!("operation {op} is invalid"));
    }
    if (a.attr_filter & u32::from(XFS_ATTR_NSP_ONDISK_MASK)).count_ones() > 1 {
        return fails_mount(format!(
            "filter {:#x} names more than one namespace",
            a.attr_filter
        ));
    }
    if parent {
        if !parent_fs {
            return fails_mount("a parent-pointer intent on a filesystem without parent pointers");
        }
        if a.attr_filter != u32::from(XFS_ATTR_PARENT) || a.value_len != PARENT_REC {
            return fails_mount(format!(
                "a parent-pointer intent with filter {:#x} and a value of {} bytes",
                a.attr_filter, a.value_len
            ));
        }
    } else if a.attr_filter & u32::from(XFS_ATTR_PARENT | XFS_ATTR_INCOMPLETE) != 0 {
        return not_done(format!(
            "filter {:#x} (parent or incomplete) on an xattr intent",
            a.attr_filter
        ));
    }
    let nl = usize::try_from(a.name_len).unwrap_or(usize::MAX);
    let vl = usize::try_from(a.value_len).unwrap_or(usize::MAX);
    let new_nl = usize::try_from(a.new_name_len.unwrap_or(0)).unwrap_or(usize::MAX);
    let name_ok = |n: usize| n > 0 && n <= 255;
    if !name_ok(nl) || (op == 6 && !name_ok(new_nl)) || a.value_len > XFS_XATTR_SIZE_MAX {
        return fails_mount(format!("name of {nl} bytes, value of {vl}"));
    }
    // A set logs a value region, an xattr removal none.
    if !parent && (op == 2) != (a.value_len == 0) {
        let what = if op == 2 { "removal" } else { "set" };
        return fails_mount(format!("a {what} with a value of {vl} bytes"));
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
        return fails_mount("a name with a NUL byte (or a '/' in a parent pointer)");
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
fn set_anextents(b: &mut [u8], n: u32) -> Result<(), WritePastEnd> {
    let nrext64 = b.get(4) == Some(&3)
        && be64(b, offset_of!(XfsDinode, di_flags2)).unwrap_or(0) & XFS_DIFLAG2_NREXT64 != 0;
    if nrext64 {
        set_be32(b, offset_of!(XfsDinode, di_nextents), n)?;
    } else {
        set_be16(
            b,
            offset_of!(XfsDinode, di_anextents),
            u16::try_from(n).unwrap_or(u16::MAX),
        )?;
    }
    Ok(())
}

/// di_nblocks moved by `delta`.
fn add_nblocks(b: &mut [u8], delta: i64) -> Result<(), WritePastEnd> {
    let nb = be64(b, offset_of!(XfsDinode, di_nblocks))
        .unwrap_or(0)
        .saturating_add_signed(delta);
    set_be64(b, offset_of!(XfsDinode, di_nblocks), nb)?;
    Ok(())
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

/// Where a leaf's join sibling is: at an index of the same node, or under
/// the node after (`true`) or before, with its block number when known.
enum Sib {
    Same(usize),
    Across(bool, Option<u32>),
}

/// A node block on the way down to a leaf: where it is, its bytes and the
/// entry taken (`xfs_da_state_blk`).
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
        if be16(&b, offset_of!(XfsDinode, di_mode)) == Some(0) {
            return fails_mount(format!("inode {ino} is free"));
        }
        let core = if b.get(4) == Some(&3) { 176 } else { 100 };
        let literal = b.len().saturating_sub(core);
        let forkoff = usize::from(b.get(82).copied().unwrap_or(0));
        let aformat = b.get(83).copied().unwrap_or(0);
        let dformat = b.get(5).copied().unwrap_or(0);
        if forkoff.saturating_mul(8) >= literal {
            return damaged(
                "attr fork",
                Some(Location::Inode { ino }),
                format!("fork offset {forkoff} beyond the inode"),
            );
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
                return damaged(
                    "attr fork",
                    Some(Location::Inode { ino }),
                    "an unwritten attr fork extent",
                );
            }
            // xfs_attr_is_leaf: one extent, one block, at file block 0.
            let single = matches!(recs.as_slice(), [r] if r.off == 0 && r.len == 1);
            let Some(r0) = recs.iter().find(|r| r.off == 0) else {
                return damaged(
                    "attr fork",
                    Some(Location::Inode { ino }),
                    "the attr fork has no block 0",
                );
            };
            let fs = self.fs();
            let boff = self
                .block_off("attr block", r0.start)
                .map_err(|e| e.within(|| format!("inode {ino}")))?;
            let bs = block_len(&fs.geo);
            let what = "attr leaf block";
            let bytes = self.read(what, boff, bs)?;
            if matches!(
                be16(&bytes, offset_of!(XfsDaBlkinfo, magic)),
                Some(XFS_DA_NODE_MAGIC | XFS_DA3_NODE_MAGIC)
            ) {
                return Ok(Some(AttrFork::Node));
            }
            let leaf = Leaf::parse(bytes, fs.geo.v5, what)
                .map_err(|e| e.within(|| format!("inode {ino}")))?;
            return Ok(Some(AttrFork::Leaf(LeafFork { boff, leaf, single })));
        }
        if aformat != XFS_DINODE_FMT_LOCAL && !empty {
            return damaged(
                "attr fork",
                Some(Location::Inode { ino }),
                format!("an attr fork of format {aformat}"),
            );
        }
        let sf = if empty {
            vec![0, 4, 0, 0]
        } else {
            let fork = b.get(fork_at..).unwrap_or(&[]);
            let total = usize::from(be16(fork, offset_of!(XfsAttrSfHdr, totsize)).unwrap_or(0));
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
        if req.parent
            && be16(&ib, offset_of!(XfsDinode, di_mode)) != Some(0)
            && be32(&ib, offset_of!(XfsDinode, di_gen)) != Some(a.igen)
        {
            return fails_mount(format!(
                "inode {ino} has generation {}, the intent {}",
                be32(&ib, offset_of!(XfsDinode, di_gen)).unwrap_or(0),
                a.igen
            ));
        }
        self.done = self.done.saturating_add(1);
        let Some(fork) = self.attr_fork(ino)? else {
            if req.parent {
                return not_done(format!(
                    "inode {ino} has no attr fork for a parent-pointer intent"
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
                    lf.leaf.set_incomplete(i)?;
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
                    lf.leaf.remove(i)?;
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
                return not_done(format!(
                    "inode {ino} has no attributes for a parent-pointer removal"
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
        set_be16(&mut f.sf, offset_of!(XfsAttrSfHdr, totsize), total)?;
        // The last entry of a removal takes the fork with it, unless the
        // data fork is a btree or the filesystem has parent pointers.
        let last = f.sf.len() == 4 && !set && f.dformat != XFS_DINODE_FMT_BTREE;
        let forkoff = if last && !parent_fs {
            0
        } else {
            let fo = bytesfit(&self.shape(&f, ino, f.forkoff)?, f.sf.len());
            if fo == 0 {
                return damaged(
                    "attr fork",
                    Some(Location::Inode { ino }),
                    "no fork offset fits the attr list",
                );
            }
            fo
        };
        self.put_sf(ino, f, forkoff, 1)?;
        Ok(pending.into_iter().map(AttrTask::Add).collect())
    }

    /// The inode's core logged `bumps` times more (its change count).
    fn log_inode_core(&mut self, ino: u64, bumps: u64) -> EditResult<()> {
        let (ioff, b) = self.inode(ino)?;
        self.log_inode(ino, ioff, b, bumps)?;
        Ok(())
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
            (_, None) => return damaged("attr fork", Some(Location::Inode { ino }), "the attr fork is gone"),
            (AddState::Short, Some(AttrFork::Short(f))) => f,
            (AddState::Short, Some(_)) => {
                return not_done(format!("inode {ino}: the kernel adds this attribute as into a shortform list, which another intent turned into blocks"))
            }
            (_, Some(AttrFork::Short(_))) | (AddState::Leaf, Some(AttrFork::Node)) => {
                return fails_mount(format!(
                    "inode {ino}: another intent changed the attr fork's form after the kernel chose how to add this attribute; it reads a block that is no longer a leaf or node"
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
            return damaged(
                "attr fork",
                Some(Location::Inode { ino }),
                "the entry marked incomplete for removal is gone",
            );
        };
        let cc0 = be64(&self.inode(ino)?.1, offset_of!(XfsDinode, di_changecount)).unwrap_or(0);
        self.begin_transaction();
        lf.leaf.remove(i)?;
        self.fix_hash_path(&mut path, &lf.leaf)?;
        let bs = block_len(&self.fs().geo);
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
    use super::super::ag::EditError;
    use super::*;
    use crate::xfs::image::Overlay;
    use crate::xfs::testutil::fixture_fs;

    /// No free space: every allocation refused.
    struct NoSpace;
    impl AttrSpace for NoSpace {
        fn near(&mut self, _: u32, _: u32, _: u32) -> EditResult<Option<u32>> {
            not_done("space in this test")
        }
        fn bmbt_block(
            &mut self,
            _: u32,
            _: u32,
            _: crate::xfs::replay::alloc::RmapOwner,
        ) -> EditResult<Option<u32>> {
            not_done("space in this test")
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
                Err(e) if !matches!(e, EditError::Read(_)) => e.to_string(),
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
                Err(e) if !matches!(e, EditError::Read(_)) => {
                    assert!(e.to_string().contains("loop"), "{e}")
                }
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
