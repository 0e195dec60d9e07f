//! One line of text per log item, as `log` prints it.

use super::{buf_type_name, Item, ItemBody};

impl Item {
    /// What the item says, in one line for people (the kind and region
    /// count are not repeated): a buffer's address, type and runs, an
    /// inode's number and logged fields, an intent's id and extents and
    /// whether it was finished.
    pub fn describe(&self) -> String {
        use std::fmt::Write as _;
        let mut line = String::new();
        match &self.body {
            ItemBody::Buf(b) => {
                let _ = write!(
                    line,
                    "blkno {} len {} {}{} map {}",
                    b.blkno,
                    b.len,
                    buf_type_name(b.buf_type),
                    if b.cancel() { " CANCEL" } else { "" },
                    b.map_size
                );
                let r: Vec<String> = b
                    .runs()
                    .iter()
                    .map(|r| format!("{}+{}", r.first, r.count))
                    .collect();
                let _ = write!(line, "  runs [{}]", r.join(" "));
            }
            ItemBody::Inode(n) => {
                let _ = write!(
                    line,
                    "  ino {} fields {:#x} dsize {} asize {}",
                    n.ino, n.fields, n.dsize, n.asize
                );
                if let Some(c) = &n.core {
                    let _ = write!(
                        line,
                        "  mode {:o} nlink {} size {} nblocks {}",
                        c.mode, c.nlink, c.size, c.nblocks
                    );
                }
            }
            ItemBody::Icreate(c) => {
                let _ = write!(
                    line,
                    "  ag {} agbno {} count {} isize {} length {}",
                    c.ag, c.agbno, c.count, c.isize, c.length
                );
            }
            ItemBody::ExtentFree(e) => {
                let x: Vec<String> = e
                    .extents
                    .iter()
                    .map(|x| format!("{}+{}", x.start, x.len))
                    .collect();
                let _ = write!(line, "  id {:#x} extents [{}]", e.id, x.join(" "));
            }
            ItemBody::MapIntent(e) => {
                let x: Vec<String> = e
                    .extents
                    .iter()
                    .map(|x| {
                        format!(
                            "{} owner {} block {} off {} len {}",
                            x.op, x.owner, x.startblock, x.startoff, x.len
                        )
                    })
                    .collect();
                let _ = write!(line, "  id {:#x} [{}]", e.id, x.join("; "));
            }
            ItemBody::RefcountIntent(e) => {
                let x: Vec<String> = e
                    .extents
                    .iter()
                    .map(|x| format!("{} {}+{}", x.op, x.startblock, x.len))
                    .collect();
                let _ = write!(line, "  id {:#x} [{}]", e.id, x.join("; "));
            }
            ItemBody::Done(dn) => {
                let _ = write!(line, "  id {:#x}", dn.id);
            }
            ItemBody::Attri(a) => {
                let _ = write!(
                    line,
                    "  id {:#x} {} ino {} name {:?} value {} bytes",
                    a.id,
                    a.op,
                    a.ino,
                    a.name.as_deref().unwrap_or(""),
                    a.value_len
                );
            }
            ItemBody::Xmi(x) => {
                let _ = write!(
                    line,
                    "  id {:#x} inodes {} and {} blocks {}",
                    x.id, x.inode1, x.inode2, x.blockcount
                );
            }
            ItemBody::Dquot(q) => {
                let _ = write!(
                    line,
                    "  id {} blkno {} boffset {}",
                    q.id, q.blkno, q.boffset
                );
            }
            ItemBody::Quotaoff(q) => {
                let _ = write!(line, "  flags {:#x}", q.flags);
            }
            ItemBody::Unknown => {
                let _ = write!(line, "  type {:#06x}", self.kind.0);
            }
            ItemBody::Corrupt(m) => {
                let _ = write!(line, "  CORRUPT: {m}");
            }
        }
        if self.kind.is_intent() {
            match self.link() {
                Some(l) => {
                    let _ = write!(line, "  (done in #{} item {})", l.transaction, l.item);
                }
                None => line.push_str("  (UNFINISHED)"),
            }
        }
        line.trim_start().to_string()
    }
}
