//! One line of text per log item, as `log` prints it.

use super::{buf_type_name, Item, ItemBody};

impl Item {
    /// What the item says, in one line for people (the kind and region
    /// count are not repeated): a buffer's address, type and runs, an
    /// inode's number and logged fields, an intent's id and extents and
    /// whether it was finished.
    pub fn describe(&self) -> String {
        let mut line = String::new();
        let _ = self.describe_to(&mut line);
        line
    }

    /// [`Item::describe`], written to `out` (no allocation per item).
    pub fn describe_to(&self, out: &mut impl std::fmt::Write) -> std::fmt::Result {
        /// `items` written with `each`, `sep` between them.
        fn list<W: std::fmt::Write, T>(
            out: &mut W,
            items: &[T],
            sep: &str,
            mut each: impl FnMut(&mut W, &T) -> std::fmt::Result,
        ) -> std::fmt::Result {
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.write_str(sep)?;
                }
                each(out, x)?;
            }
            Ok(())
        }
        match &self.body {
            ItemBody::Buf(b) => {
                write!(
                    out,
                    "blkno {} len {} {}{} map {}  runs [",
                    b.blkno,
                    b.len,
                    buf_type_name(b.buf_type),
                    if b.cancel() { " CANCEL" } else { "" },
                    b.map_size
                )?;
                list(out, &b.runs(), " ", |o, r| {
                    write!(o, "{}+{}", r.first, r.count)
                })?;
                out.write_str("]")?;
            }
            ItemBody::Inode(n) => {
                write!(
                    out,
                    "ino {} fields {:#x} dsize {} asize {}",
                    n.ino, n.fields, n.dsize, n.asize
                )?;
                if let Some(c) = &n.core {
                    write!(
                        out,
                        "  mode {:o} nlink {} size {} nblocks {}",
                        c.mode, c.nlink, c.size, c.nblocks
                    )?;
                }
            }
            ItemBody::Icreate(c) => {
                write!(
                    out,
                    "ag {} agbno {} count {} isize {} length {}",
                    c.ag, c.agbno, c.count, c.isize, c.length
                )?;
            }
            ItemBody::ExtentFree(e) => {
                write!(out, "id {:#x} extents [", e.id)?;
                list(out, &e.extents, " ", |o, x| {
                    write!(o, "{}+{}", x.start, x.len)
                })?;
                out.write_str("]")?;
            }
            ItemBody::MapIntent(e) => {
                write!(out, "id {:#x} [", e.id)?;
                list(out, &e.extents, "; ", |o, x| {
                    write!(
                        o,
                        "{} owner {} block {} off {} len {}",
                        x.op, x.owner, x.startblock, x.startoff, x.len
                    )
                })?;
                out.write_str("]")?;
            }
            ItemBody::RefcountIntent(e) => {
                write!(out, "id {:#x} [", e.id)?;
                list(out, &e.extents, "; ", |o, x| {
                    write!(o, "{} {}+{}", x.op, x.startblock, x.len)
                })?;
                out.write_str("]")?;
            }
            ItemBody::Done(dn) => write!(out, "id {:#x}", dn.id)?,
            ItemBody::Attri(a) => {
                write!(
                    out,
                    "id {:#x} {} ino {} name {:?} value {} bytes",
                    a.id,
                    a.op,
                    a.ino,
                    a.name.as_deref().unwrap_or(""),
                    a.value_len
                )?;
            }
            ItemBody::Xmi(x) => {
                write!(
                    out,
                    "id {:#x} inodes {} and {} blocks {}",
                    x.id, x.inode1, x.inode2, x.blockcount
                )?;
            }
            ItemBody::Dquot(q) => {
                write!(out, "id {} blkno {} boffset {}", q.id, q.blkno, q.boffset)?;
            }
            ItemBody::Quotaoff(q) => write!(out, "flags {:#x}", q.flags)?,
            ItemBody::Unknown => write!(out, "type {:#06x}", self.kind.0)?,
            ItemBody::Corrupt(m) => write!(out, "CORRUPT: {m}")?,
        }
        if self.kind.is_intent() {
            match self.link() {
                Some(l) => write!(out, "  (done in #{} item {})", l.transaction, l.item)?,
                None => out.write_str("  (UNFINISHED)")?,
            }
        }
        Ok(())
    }
}
