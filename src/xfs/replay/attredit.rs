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
//! Change counts: one for each transaction that logs the inode. A removal
//! and a set into an empty fork take one. A set into a fork that already
//! holds attributes takes three: with logged xattrs the kernel's replace
//! state starts by removing the old entry (one transaction, even when
//! there is none), the rest is captured and rolled (two), and the add (and
//! the change time) comes in the third. A removal that finds nothing logs
//! nothing.
//!
//! Refused, with the reason: attr forks in blocks (leaf or node), a set
//! that no longer fits the inode (the kernel moves the list to a leaf
//! block), parent-pointer operations, intents the kernel's own checks
//! reject (it then fails the mount).

use super::agedit::{refuse, EditResult};
use super::bmapedit::{extent_count, ForkEditor};
use super::{put_be16, put_be64, RecoveryTime};
use crate::xfs::format::dinode::{
    XFS_DIFLAG2_BIGTIME, XFS_DINODE_FMT_BTREE, XFS_DINODE_FMT_DEV, XFS_DINODE_FMT_EXTENTS,
    XFS_DINODE_FMT_LOCAL,
};
use crate::xfs::fs::{be16, be64};
use crate::xfs::inode::Timestamp;
use crate::xfs::log::items::AttriItem;
use crate::xfs::read::ReadAt;

/// Namespace bits kept in a shortform entry's flags (ROOT, SECURE, PARENT).
const NSP_ONDISK: u32 = 0x0e;
const ATTR_PARENT: u32 = 0x08;
const ATTR_INCOMPLETE: u32 = 0x80;
/// Bits an ATTRI's filter may carry (`XFS_ATTRI_FILTER_MASK`).
const FILTER_MASK: u32 = NSP_ONDISK | ATTR_INCOMPLETE;
/// `XFS_ATTR_SF_ENTSIZE_MAX`: names and values at least this long never
/// go into a shortform list.
const SF_ENTSIZE_MAX: usize = 255;
/// Largest xattr value (`XATTR_SIZE_MAX`).
const XATTR_SIZE_MAX: u32 = 65536;
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

/// What logging an inode's core changes besides the fields logged
/// (`xfs_inode_item_precommit`): on a bigtime filesystem, an inode not yet
/// in the bigtime encoding moves to it (its four timestamps re-encoded).
pub(super) fn upgrade_logged_core<R: ReadAt>(fs: &crate::xfs::fs::Fs<R>, b: &mut [u8]) {
    const INCOMPAT_BIGTIME: u32 = 1 << 3;
    if b.get(4) != Some(&3) || fs.sb.features_incompat & INCOMPAT_BIGTIME == 0 {
        return;
    }
    let flags2 = be64(b, 120).unwrap_or(0);
    if flags2 & XFS_DIFLAG2_BIGTIME != 0 {
        return;
    }
    for at in [32usize, 40, 48, 144] {
        let t = Timestamp::decode(be64(b, at).unwrap_or(0), false);
        put_be64(b, at, Timestamp::encode(t.sec, t.nsec, true));
    }
    put_be64(b, 120, flags2 | XFS_DIFLAG2_BIGTIME);
}

/// Does an ATTRI pass the kernel's checks (`xfs_attri_validate`, the
/// region lengths, `xfs_attr_namecheck`)? Returns its name and value.
fn checked<'r>(a: &AttriItem, regions: &'r [Vec<u8>]) -> EditResult<(&'r [u8], &'r [u8])> {
    let op = a.op_flags & 0xff;
    if a.op_flags & !0xff != 0 || a.attr_filter & !FILTER_MASK != 0 {
        return refuse(format!(
            "flags {:#x} / filter {:#x} are invalid: the kernel fails the mount",
            a.op_flags, a.attr_filter
        ));
    }
    match op {
        1..=3 => {}
        4..=6 => {
            return refuse("parent-pointer attribute intents are not done by this tool".into())
        }
        _ => {
            return refuse(format!(
                "operation {op} is invalid: the kernel fails the mount"
            ))
        }
    }
    if (a.attr_filter & NSP_ONDISK).count_ones() > 1 {
        return refuse(format!(
            "filter {:#x} names more than one namespace: the kernel fails the mount",
            a.attr_filter
        ));
    }
    if a.attr_filter & (ATTR_PARENT | ATTR_INCOMPLETE) != 0 {
        return refuse(format!(
            "filter {:#x} (parent or incomplete) is not done by this tool",
            a.attr_filter
        ));
    }
    let nl = usize::try_from(a.name_len).unwrap_or(usize::MAX);
    let vl = usize::try_from(a.value_len).unwrap_or(usize::MAX);
    if nl == 0 || nl > 255 || a.value_len > XATTR_SIZE_MAX {
        return refuse(format!(
            "name of {nl} bytes, value of {vl}: the kernel fails the mount"
        ));
    }
    // A set logs a value region, a removal none.
    if (op == 2) != (a.value_len == 0) {
        let what = if op == 2 { "removal" } else { "set" };
        return refuse(format!(
            "a {what} with a value of {vl} bytes: the kernel fails the mount"
        ));
    }
    let name_r = regions.first().map(Vec::as_slice).unwrap_or(&[]);
    if name_r.len() != nl.div_ceil(4).saturating_mul(4) {
        return refuse(format!(
            "name region of {} bytes for a {nl}-byte name: the kernel fails the mount",
            name_r.len()
        ));
    }
    let name = name_r.get(..nl).unwrap_or(&[]);
    if name.contains(&0) {
        return refuse("a name with a NUL byte: the kernel fails the mount".into());
    }
    let value = if vl == 0 {
        &[][..]
    } else {
        let v = regions.get(1).map(Vec::as_slice).unwrap_or(&[]);
        if v.len() != vl.div_ceil(4).saturating_mul(4) {
            return refuse(format!(
                "value region of {} bytes for a {vl}-byte value: the kernel fails the mount",
                v.len()
            ));
        }
        v.get(..vl).unwrap_or(&[])
    };
    Ok((name, value))
}

impl<R: ReadAt> ForkEditor<'_, R> {
    /// Finish one ATTRI (`regions`: its name and value regions).
    pub fn attr(
        &mut self,
        a: &AttriItem,
        regions: &[Vec<u8>],
        now: RecoveryTime,
    ) -> EditResult<()> {
        let (name, value) = checked(a, regions)?;
        let op = a.op_flags & 0xff;
        let ino = a.ino;
        let (ioff, mut b) = self.inode(ino)?;
        if be16(&b, 2) == Some(0) {
            return refuse(format!("inode {ino} is free: the kernel fails the mount"));
        }
        let v3 = b.get(4) == Some(&3);
        let core = if v3 { 176 } else { 100 };
        let isize = b.len();
        let literal = isize.saturating_sub(core);
        let forkoff = usize::from(b.get(82).copied().unwrap_or(0));
        let aformat = b.get(83).copied().unwrap_or(0);
        let dformat = b.get(5).copied().unwrap_or(0);
        let flags2 = if v3 { be64(&b, 120).unwrap_or(0) } else { 0 };
        let anextents = extent_count(&b, true);
        if forkoff.saturating_mul(8) >= literal {
            return refuse(format!(
                "inode {ino}: fork offset {forkoff} beyond the inode"
            ));
        }
        let has_fork = forkoff != 0;
        let empty = aformat == XFS_DINODE_FMT_EXTENTS && anextents == 0;
        let hasattr = has_fork && !empty;
        let set = op != 2;
        if !has_fork || (!set && !hasattr) {
            // Nothing to do; the inode is not logged.
            self.done = self.done.saturating_add(1);
            return Ok(());
        }
        if aformat != XFS_DINODE_FMT_LOCAL && !empty {
            return refuse(format!(
                "inode {ino}: attributes in blocks (leaf or node) are not done by this tool"
            ));
        }
        let fs = self.fs();
        let sb = &fs.sb;
        let shape = |forkoff: usize| -> EditResult<Shape> {
            let nextents = extent_count(&b, false);
            let dbytes = match dformat {
                XFS_DINODE_FMT_DEV => 0,
                XFS_DINODE_FMT_LOCAL => {
                    usize::try_from(be64(&b, 56).unwrap_or(0)).unwrap_or(usize::MAX)
                }
                XFS_DINODE_FMT_EXTENTS => {
                    usize::try_from(nextents.saturating_mul(16)).unwrap_or(usize::MAX)
                }
                XFS_DINODE_FMT_BTREE => {
                    bmdr(usize::from(be16(&b, core.saturating_add(2)).unwrap_or(0)))
                }
                f => return refuse(format!("inode {ino}: data fork format {f}")),
            };
            Ok(Shape {
                literal,
                forkoff,
                dformat,
                dbytes,
                attr2: fs.geo.v5 || sb.features2 & 0x08 != 0,
                default_off: if isize == 256 {
                    literal.saturating_sub(bmdr(2))
                } else {
                    bmdr(12)
                },
            })
        };
        // The list as the kernel holds it in memory.
        let mut sf: Vec<u8> = if empty {
            vec![0, 4, 0, 0]
        } else {
            let fork = b
                .get(core.saturating_add(forkoff.saturating_mul(8))..)
                .unwrap_or(&[]);
            let total = usize::from(be16(fork, 0).unwrap_or(0));
            sf_entries(fork, ino)?;
            fork.get(..total).unwrap_or(&[]).to_vec()
        };
        let ents = sf_entries(&sf, ino)?;
        let ns = u8::try_from(a.attr_filter & NSP_ONDISK).unwrap_or(0);
        let found = ents.iter().find(|e| {
            let nl = usize::from(sf.get(e.at).copied().unwrap_or(0));
            let fl = sf.get(e.at.saturating_add(2)).copied().unwrap_or(0);
            nl == name.len()
                && sf.get(e.at.saturating_add(3)..e.at.saturating_add(3).saturating_add(nl))
                    == Some(name)
                && u32::from(fl) & NSP_ONDISK == u32::from(ns)
        });
        let mut new_forkoff = forkoff;
        let bumps: u64;
        if let Some(e) = found {
            let end = e.at.saturating_add(e.len).min(sf.len());
            sf.drain(e.at.min(end)..end);
            if let Some(c) = sf.get_mut(2) {
                *c = c.saturating_sub(1);
            }
            let total = u16::try_from(sf.len()).unwrap_or(u16::MAX);
            put_be16(&mut sf, 0, total);
            let last = sf.len() == 4 && !set && dformat != XFS_DINODE_FMT_BTREE;
            let parent_fs = sb.features_incompat & (1 << 7) != 0;
            if last && !parent_fs {
                new_forkoff = 0;
            } else {
                new_forkoff = bytesfit(&shape(forkoff)?, sf.len());
                if new_forkoff == 0 {
                    return refuse(format!("inode {ino}: no fork offset fits the attr list"));
                }
            }
        } else if !set {
            // No such name: nothing is logged.
            self.done = self.done.saturating_add(1);
            return Ok(());
        }
        if set {
            if name.len() >= SF_ENTSIZE_MAX || value.len() >= SF_ENTSIZE_MAX {
                return refuse(format!(
                    "inode {ino}: a name of {} or value of {} bytes moves the list to a leaf block, which this tool does not do",
                    name.len(),
                    value.len()
                ));
            }
            let newsize = sf
                .len()
                .saturating_add(3)
                .saturating_add(name.len())
                .saturating_add(value.len());
            new_forkoff = bytesfit(&shape(new_forkoff)?, newsize);
            if new_forkoff == 0 {
                return refuse(format!(
                    "inode {ino}: {newsize} bytes of attributes no longer fit the inode; the kernel moves them to a leaf block, which this tool does not do"
                ));
            }
            sf.push(u8::try_from(name.len()).unwrap_or(0));
            sf.push(u8::try_from(value.len()).unwrap_or(0));
            sf.push(ns);
            sf.extend_from_slice(name);
            sf.extend_from_slice(value);
            if let Some(c) = sf.get_mut(2) {
                *c = c.saturating_add(1);
            }
            let total = u16::try_from(sf.len()).unwrap_or(u16::MAX);
            put_be16(&mut sf, 0, total);
            let big = flags2 & XFS_DIFLAG2_BIGTIME != 0;
            put_be64(&mut b, 48, Timestamp::encode(now.sec, now.nsec, big));
            bumps = if hasattr { 3 } else { 1 };
        } else {
            bumps = 1;
        }
        let (fo, af) = if new_forkoff == 0 {
            (0, XFS_DINODE_FMT_EXTENTS)
        } else {
            (u8::try_from(new_forkoff).unwrap_or(0), XFS_DINODE_FMT_LOCAL)
        };
        if let Some(d) = b.get_mut(82..84) {
            d.copy_from_slice(&[fo, af]);
        }
        if new_forkoff != 0 {
            let at = core.saturating_add(new_forkoff.saturating_mul(8));
            match b.get_mut(at..at.saturating_add(sf.len())) {
                Some(d) => d.copy_from_slice(&sf),
                None => return refuse(format!("inode {ino}: the attr list overruns the inode")),
            }
        }
        if v3 {
            let cc = be64(&b, 104).unwrap_or(0).wrapping_add(bumps);
            put_be64(&mut b, 104, cc);
        }
        upgrade_logged_core(fs, &mut b);
        self.put_inode(ioff, b);
        self.note_bumped(ino);
        self.done = self.done.saturating_add(1);
        Ok(())
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
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects
)]
mod fixture_tests {
    use super::super::agedit::EditError;
    use super::*;
    use crate::xfs::image::Overlay;
    use crate::xfs::testutil::fixture_fs;

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
        let leaf = ino("/xattrs/fork-later-leaf");
        let mut ed = ForkEditor::new(&fs, &ov);
        // A free inode in an allocated chunk (mode 0).
        let free = (small + 1..small + 64)
            .find(|&i| ed.inode(i).is_ok_and(|(_, b)| be16(&b, 2) == Some(0)))
            .unwrap();
        let now = RecoveryTime::default();
        let mut why = |a: AttriItem, regions: Vec<Vec<u8>>| match ed.attr(&a, &regions, now) {
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
            // What this tool does not do: parent pointers, leaf forks, a list
            // that no longer fits the inode.
            (
                item(small, 4, 0x08, b"a", 12),
                nv(b"a", &[0; 12]),
                "parent-pointer",
            ),
            (item(small, 1, 0x80, b"a", 1), nv(b"a", b"1"), "incomplete"),
            (item(leaf, 1, 0, b"a", 1), nv(b"a", b"1"), "leaf or node"),
            (
                item(small, 1, 0, b"a", 300),
                nv(b"a", &[b'v'; 300]),
                "leaf block",
            ),
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
        ed.attr(&item(small, 1, 0, b"new", 3), &nv(b"new", b"abc"), now)
            .unwrap();
        ed.attr(&item(small, 3, 0, b"new", 5), &nv(b"new", b"abcde"), now)
            .unwrap();
        let (_, mid) = ed.inode(small).unwrap();
        let core = 176;
        let at = core + usize::from(mid[82]) * 8;
        let total = usize::from(be16(&mid, at).unwrap());
        assert_eq!(&mid[at + total - 11..at + total], b"\x03\x05\x00newabcde");
        ed.attr(&item(small, 2, 0, b"new", 0), &[pad(b"new")], now)
            .unwrap();
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
