//! Intents met in pass 2 and the done items that finish them.
//!
//! An intent (EFI, RUI, CUI, BUI, ATTRI, XMI) promises work; its done item
//! says the work reached the log. The kernel keeps each intent in LSN
//! order and lets a done item release the oldest pending intent of its
//! type with its id. What is left describes work committed but not
//! finished: the kernel finishes it at mount. This module lists it;
//! `recover.rs` does it.

use super::walk::RTrans;
use crate::xfs::log::items::{Item, ItemBody, ItemKind};
use crate::xfs::types::Lsn;
use serde::Serialize;

/// One intent still pending after pass 2.
#[derive(Clone, Debug, Serialize)]
pub struct Unfinished {
    pub kind: ItemKind,
    pub id: u64,
    /// Start LSN of the transaction that logged it.
    pub lsn: Lsn,
    pub tid: u32,
    /// What it asks for, in words.
    pub work: Vec<String>,
    /// The filesystem blocks (AG-packed) it names.
    pub fsblocks: Vec<u64>,
    /// EFI: the extents to free (AG-packed start, length).
    #[serde(skip)]
    pub extents: Vec<(u64, u32)>,
    /// The intent as decoded (for finishing it).
    #[serde(skip)]
    pub body: Option<ItemBody>,
    /// ATTRI: the regions after the format (name, value), as logged.
    #[serde(skip)]
    pub payload: Vec<Vec<u8>>,
}

#[derive(Default, Debug)]
pub struct Pending {
    list: Vec<Unfinished>,
}

fn describe(item: &Item) -> Vec<String> {
    match &item.body {
        ItemBody::ExtentFree(e) => e
            .extents
            .iter()
            .map(|x| format!("free {} blocks at fsblock {}", x.len, x.start))
            .collect(),
        ItemBody::MapIntent(m) => m
            .extents
            .iter()
            .map(|x| {
                format!(
                    "{} owner {} fsblock {} offset {} length {} flags {:#x}",
                    x.op, x.owner, x.startblock, x.startoff, x.len, x.flags
                )
            })
            .collect(),
        ItemBody::RefcountIntent(r) => r
            .extents
            .iter()
            .map(|x| format!("{} fsblock {} length {}", x.op, x.startblock, x.len))
            .collect(),
        ItemBody::Attri(a) => vec![format!(
            "{} inode {} name {:?} ({} bytes, value {} bytes)",
            a.op,
            a.ino,
            a.name.clone().unwrap_or_default(),
            a.name_len,
            a.value_len
        )],
        ItemBody::Xmi(x) => vec![format!(
            "exchange {} blocks: inode {} offset {} <-> inode {} offset {}",
            x.blockcount, x.inode1, x.startoff1, x.inode2, x.startoff2
        )],
        _ => Vec::new(),
    }
}

fn blocks(item: &Item) -> Vec<u64> {
    match &item.body {
        ItemBody::ExtentFree(e) => e.extents.iter().map(|x| x.start).collect(),
        ItemBody::MapIntent(m) => m.extents.iter().map(|x| x.startblock).collect(),
        ItemBody::RefcountIntent(r) => r.extents.iter().map(|x| x.startblock).collect(),
        _ => Vec::new(),
    }
}

impl Pending {
    pub fn add(&mut self, item: &Item, regions: &[Vec<u8>], t: &RTrans) {
        let Some(id) = item.intent_id() else { return };
        self.list.push(Unfinished {
            kind: item.kind,
            id,
            lsn: t.lsn,
            tid: t.tid,
            work: describe(item),
            fsblocks: blocks(item),
            extents: match &item.body {
                ItemBody::ExtentFree(e) => e.extents.iter().map(|x| (x.start, x.len)).collect(),
                _ => Vec::new(),
            },
            body: Some(item.body.clone()),
            payload: match &item.body {
                ItemBody::Attri(_) => regions.iter().skip(1).cloned().collect(),
                _ => Vec::new(),
            },
        });
    }

    /// A done item: release the oldest pending intent of `kind` with `id`.
    pub fn release(&mut self, kind: ItemKind, id: u64) -> bool {
        match self.list.iter().position(|u| u.kind == kind && u.id == id) {
            Some(i) => {
                self.list.remove(i);
                true
            }
            None => false,
        }
    }

    pub fn unfinished(&self) -> Vec<Unfinished> {
        self.list.clone()
    }
}
