//! Intent and done items (`xfs_extfree_item.c`, `xfs_rmap_item.c`,
//! `xfs_refcount_item.c`, `xfs_bmap_item.c`, `xfs_attr_item.c`,
//! `xfs_exchmaps_item.c`): their extents and operations, and each intent
//! linked to the done item that finishes it.

use super::{read, Item, ItemKind, ItemRef};
use crate::xfs::format::log::*;
use serde::Serialize;
use std::collections::HashMap;
use zerocopy::byteorder::ByteOrder;
use zerocopy::FromBytes;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FreeExtent {
    /// AG-packed start block (rt block for the RT variants).
    pub start: u64,
    pub len: u32,
}

/// EFI or EFD (and their RT variants).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ExtentFreeItem {
    /// EFI: its id; EFD: the id of the EFI it completes.
    pub id: u64,
    pub nextents: u32,
    /// 64 or 32: which extent layout the region holds.
    pub extent_bits: u32,
    pub extents: Box<[FreeExtent]>,
    #[serde(skip)]
    pub link: Option<ItemRef>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct MapExtent {
    pub owner: u64,
    pub startblock: u64,
    pub startoff: u64,
    pub len: u32,
    pub flags: u32,
    /// The operation (low byte of the flags) in words.
    pub op: &'static str,
}

/// RUI or BUI.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MapIntentItem {
    pub id: u64,
    pub nextents: u32,
    pub extents: Box<[MapExtent]>,
    #[serde(skip)]
    pub link: Option<ItemRef>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PhysExtent {
    pub startblock: u64,
    pub len: u32,
    pub flags: u32,
    pub op: &'static str,
}

/// CUI.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RefcountIntentItem {
    pub id: u64,
    pub nextents: u32,
    pub extents: Box<[PhysExtent]>,
    #[serde(skip)]
    pub link: Option<ItemRef>,
}

/// RUD, CUD, BUD, ATTRD, XMD: the id of the intent they complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct DoneItem {
    pub id: u64,
    #[serde(skip)]
    pub link: Option<ItemRef>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AttriItem {
    pub id: u64,
    pub ino: u64,
    pub igen: u32,
    pub op_flags: u32,
    pub op: &'static str,
    pub name_len: u32,
    /// PPTR_REPLACE only.
    pub new_name_len: Option<u32>,
    pub value_len: u32,
    pub attr_filter: u32,
    /// The name, lossily as text, cut at 256 bytes.
    pub name: Option<String>,
    #[serde(skip)]
    pub link: Option<ItemRef>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct XmiItem {
    pub id: u64,
    pub inode1: u64,
    pub inode2: u64,
    pub igen1: u32,
    pub igen2: u32,
    pub startoff1: u64,
    pub startoff2: u64,
    pub blockcount: u64,
    pub flags: u64,
    pub isize1: i64,
    pub isize2: i64,
    #[serde(skip)]
    pub link: Option<ItemRef>,
}

pub(super) fn rmap_op(flags: u32) -> &'static str {
    match flags & XFS_RMAP_EXTENT_TYPE_MASK {
        1 => "map",
        2 => "map_shared",
        3 => "unmap",
        4 => "unmap_shared",
        5 => "convert",
        6 => "convert_shared",
        7 => "alloc",
        8 => "free",
        _ => "unknown",
    }
}

pub(super) fn bmap_op(flags: u32) -> &'static str {
    match flags & 0xff {
        1 => "map",
        2 => "unmap",
        _ => "unknown",
    }
}

pub(super) fn refcount_op(flags: u32) -> &'static str {
    match flags & 0xff {
        1 => "increase",
        2 => "decrease",
        3 => "alloc_cow",
        4 => "free_cow",
        _ => "unknown",
    }
}

pub(super) fn attri_op(flags: u32) -> &'static str {
    match flags & 0xff {
        1 => "set",
        2 => "remove",
        3 => "replace",
        4 => "pptr_set",
        5 => "pptr_remove",
        6 => "pptr_replace",
        _ => "unknown",
    }
}

pub(super) fn decode_extent_free<O: ByteOrder>(r0: &[u8]) -> Result<ExtentFreeItem, String> {
    let h: &XfsEfiLogFormat<O> = read(r0, "efi/efd")?;
    let n = h.efi_nextents.get();
    let nu = usize::try_from(n).unwrap_or(usize::MAX);
    let rest = r0.get(16..).unwrap_or(&[]);
    let (bits, size) = if rest.len() == nu.saturating_mul(16) {
        (64, 16)
    } else if rest.len() == nu.saturating_mul(12) {
        (32, 12)
    } else {
        return Err(format!(
            "extent-free item of {n} extents is {} bytes: neither 16 + 16·n nor 16 + 12·n",
            r0.len()
        ));
    };
    let extents = rest
        .chunks_exact(size)
        .filter_map(|c| {
            XfsExtent32::<O>::ref_from_prefix(c)
                .ok()
                .map(|(e, _)| FreeExtent {
                    start: e.ext_start.get(),
                    len: e.ext_len.get(),
                })
        })
        .collect();
    Ok(ExtentFreeItem {
        id: h.efi_id.get(),
        nextents: n,
        extent_bits: bits,
        extents,
        link: None,
    })
}

pub(super) fn decode_attri<O: ByteOrder>(
    r0: &[u8],
    r1: Option<&[u8]>,
) -> Result<AttriItem, String> {
    let a: &XfsAttriLogFormat<O> = read(r0, "attri")?;
    let op_flags = a.alfi_op_flags.get();
    let op = attri_op(op_flags);
    let raw_len = a.alfi_name_len.get();
    let (name_len, new_name_len) = if op_flags & 0xff == 6 {
        // Two u16s in host order at @28 and @30.
        let o = r0.get(28..32).unwrap_or(&[0; 4]);
        let lo = zerocopy::byteorder::U16::<O>::ref_from_bytes(o.get(..2).unwrap_or(&[0; 2]))
            .map(|v| v.get())
            .unwrap_or(0);
        let hi = zerocopy::byteorder::U16::<O>::ref_from_bytes(o.get(2..).unwrap_or(&[0; 2]))
            .map(|v| v.get())
            .unwrap_or(0);
        (u32::from(lo), Some(u32::from(hi)))
    } else {
        (raw_len, None)
    };
    let name = r1.map(|n| {
        let k = usize::try_from(name_len).unwrap_or(0).min(n.len()).min(256);
        String::from_utf8_lossy(n.get(..k).unwrap_or(&[])).into_owned()
    });
    Ok(AttriItem {
        id: a.alfi_id.get(),
        ino: a.alfi_ino.get(),
        igen: a.alfi_igen.get(),
        op_flags,
        op,
        name_len,
        new_name_len,
        value_len: a.alfi_value_len.get(),
        attr_filter: a.alfi_attr_filter.get(),
        name,
        link: None,
    })
}

/// An intent, where it is, and what it promised.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IntentRef {
    pub kind: ItemKind,
    pub id: u64,
    pub tid: u32,
    #[serde(flatten)]
    pub at: ItemRef,
}

/// Link every done item to the latest earlier unfinished intent of its
/// type with its id (ids are kernel addresses and are reused). Returns the
/// intents left without a done item and the number of done items whose
/// intent lies before the tail.
pub fn pair_intents(ts: &mut [crate::xfs::log::Transaction]) -> (Vec<IntentRef>, u64) {
    let mut open: HashMap<(u16, u64), Vec<ItemRef>> = HashMap::new();
    let mut pairs: Vec<(ItemRef, ItemRef)> = Vec::new();
    let mut orphans = 0u64;
    for (ti, t) in ts.iter().enumerate() {
        let ti = u32::try_from(ti).unwrap_or(u32::MAX);
        for (ii, item) in t.items.iter().enumerate() {
            let at = ItemRef {
                transaction: ti,
                item: u32::try_from(ii).unwrap_or(u32::MAX),
            };
            let Some(id) = item.intent_id() else { continue };
            if item.kind.is_intent() {
                open.entry((item.kind.0, id)).or_default().push(at);
            } else if let Some(ik) = item.kind.intent_of_done() {
                match open.get_mut(&(ik.0, id)).and_then(Vec::pop) {
                    Some(intent) => pairs.push((intent, at)),
                    None => orphans = orphans.saturating_add(1),
                }
            }
        }
    }
    fn get(ts: &mut [crate::xfs::log::Transaction], r: ItemRef) -> Option<&mut Item> {
        ts.get_mut(usize::try_from(r.transaction).ok()?)?
            .items
            .get_mut(usize::try_from(r.item).ok()?)
    }
    for (intent, done) in pairs {
        if let Some(i) = get(ts, intent) {
            i.set_link(done);
        }
        if let Some(d) = get(ts, done) {
            d.set_link(intent);
        }
    }
    let mut left: Vec<IntentRef> = open
        .into_iter()
        .flat_map(|((k, id), refs)| refs.into_iter().map(move |r| (k, id, r)))
        .map(|(k, id, r)| IntentRef {
            kind: ItemKind(k),
            id,
            tid: ts
                .get(usize::try_from(r.transaction).unwrap_or(usize::MAX))
                .map(|t| t.tid)
                .unwrap_or(0),
            at: r,
        })
        .collect();
    crate::xfs::sort::by_key(&mut left, |i| {
        crate::xfs::sort::pair(u64::from(i.at.transaction), u64::from(i.at.item))
    });
    (left, orphans)
}

/// [`pair_intents`] for transactions that arrive one at a time, in commit
/// order: each transaction is held until every intent in it has met its
/// done item (or the log ends), then handed on with its links set, so a
/// consumer sees exactly what [`pair_intents`] would have made of the
/// whole list while only the transactions between an intent and its done
/// item are kept.
///
/// Kernel logs finish an intent within a transaction or two, or leave it
/// unfinished at the head. A log that keeps an intent open across more
/// than [`MAX_HELD_ITEMS`] items is not one the kernel writes: the oldest
/// held transaction is then handed on without its intents' links (a
/// problem on it says so), so that memory stays bounded.
pub struct Linker {
    /// Sequence number (index among committed transactions) of `held[0]`.
    base: u32,
    /// Transactions not handed on yet, with their count of open intents.
    held: std::collections::VecDeque<(crate::xfs::log::Transaction, u32)>,
    /// Items in `held`.
    held_items: usize,
    /// Items held at most.
    limit: usize,
    open: HashMap<(u16, u64), Vec<(ItemRef, u32)>>,
    orphans: u64,
}

/// Items a [`Linker`] holds at most behind an open intent.
pub const MAX_HELD_ITEMS: usize = 1 << 20;

impl Default for Linker {
    fn default() -> Linker {
        Linker::with_limit(MAX_HELD_ITEMS)
    }
}

impl Linker {
    pub fn new() -> Linker {
        Linker::default()
    }

    /// A linker that holds at most `limit` items.
    pub fn with_limit(limit: usize) -> Linker {
        Linker {
            base: 0,
            held: std::collections::VecDeque::new(),
            held_items: 0,
            limit,
            open: HashMap::new(),
            orphans: 0,
        }
    }

    fn held_mut(&mut self, seq: u32) -> Option<&mut (crate::xfs::log::Transaction, u32)> {
        let i = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        self.held.get_mut(i)
    }

    /// Take the next committed transaction; hand on to `out` every held
    /// transaction that nothing later can change any more.
    pub fn push(
        &mut self,
        mut t: crate::xfs::log::Transaction,
        out: &mut dyn FnMut(crate::xfs::log::Transaction),
    ) {
        let len = u32::try_from(self.held.len()).unwrap_or(u32::MAX);
        let seq = self.base.saturating_add(len);
        let mut open_here = 0u32;
        for ii in 0..t.items.len() {
            let at = ItemRef {
                transaction: seq,
                item: u32::try_from(ii).unwrap_or(u32::MAX),
            };
            let Some(item) = t.items.get(ii) else { break };
            let Some(id) = item.intent_id() else { continue };
            if item.kind.is_intent() {
                self.open
                    .entry((item.kind.0, id))
                    .or_default()
                    .push((at, t.tid));
                open_here = open_here.saturating_add(1);
            } else if let Some(ik) = item.kind.intent_of_done() {
                match self.open.get_mut(&(ik.0, id)).and_then(Vec::pop) {
                    Some((intent, _)) => {
                        if let Some(d) = t.items.get_mut(ii) {
                            d.set_link(intent);
                        }
                        let slot = usize::try_from(intent.item).unwrap_or(usize::MAX);
                        if intent.transaction == seq {
                            if let Some(i) = t.items.get_mut(slot) {
                                i.set_link(at);
                            }
                            open_here = open_here.saturating_sub(1);
                        } else if let Some((ht, n)) = self.held_mut(intent.transaction) {
                            if let Some(i) = ht.items.get_mut(slot) {
                                i.set_link(at);
                            }
                            *n = n.saturating_sub(1);
                        }
                    }
                    None => self.orphans = self.orphans.saturating_add(1),
                }
            }
        }
        self.held_items = self.held_items.saturating_add(t.items.len());
        self.held.push_back((t, open_here));
        loop {
            let over = self.held_items > self.limit && self.held.len() > 1;
            if !over && self.held.front().is_none_or(|(_, n)| *n != 0) {
                break;
            }
            let Some((mut t, n)) = self.held.pop_front() else {
                break;
            };
            if n > 0 {
                t.problems.push(format!(
                    "handed on before the done items of {n} of its intents: more than {} items were held behind it; those intents' links are not shown",
                    self.limit
                ));
            }
            self.held_items = self.held_items.saturating_sub(t.items.len());
            self.base = self.base.saturating_add(1);
            out(t);
        }
    }

    /// The log has ended: hand on what is held; return the intents left
    /// without a done item (in log order) and the number of done items
    /// whose intent lies before the tail.
    pub fn finish(
        mut self,
        out: &mut dyn FnMut(crate::xfs::log::Transaction),
    ) -> (Vec<IntentRef>, u64) {
        while let Some((t, _)) = self.held.pop_front() {
            out(t);
        }
        let mut left: Vec<IntentRef> = self
            .open
            .into_iter()
            .flat_map(|((k, id), refs)| refs.into_iter().map(move |(r, tid)| (k, id, r, tid)))
            .map(|(k, id, at, tid)| IntentRef {
                kind: ItemKind(k),
                id,
                tid,
                at,
            })
            .collect();
        crate::xfs::sort::by_key(&mut left, |i| {
            crate::xfs::sort::pair(u64::from(i.at.transaction), u64::from(i.at.item))
        });
        (left, self.orphans)
    }
}
