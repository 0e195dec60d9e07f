//! Extended attributes: listing names (cheap, no value blocks read) and
//! reading values on demand.
//!
//! The attr fork is shortform (inline in the inode), or a da btree in the
//! fork's logical block space whose block 0 is either a single leaf block
//! (leaf form) or the root node (node form). Values live inline (shortform,
//! or "local" in a leaf block) or in "remote" blocks of the attr fork:
//!
//! ```text
//! leaf block: header | entries (hash, nameidx, flags) -> | free | <- names/values
//! remote value, v5: [XARM hdr | payload] [XARM hdr | payload] ...  (per fs block)
//! remote value, v4: payload payload ...
//! ```
//!
//! The namespace is a flag, not part of the stored name: none = `user.`,
//! ROOT = `trusted.`, SECURE = `security.`; PARENT entries are parent
//! pointers (incompat PARENT), not Linux xattrs. INCOMPLETE entries are
//! half-made or half-removed and are skipped.
//!
//! | file           | holds                                                      | kernel                                |
//! |----------------|------------------------------------------------------------|---------------------------------------|
//! | `mod.rs`       | namespaces, entries, values, the attr geometry, the fork of an inode | `xfs_attr.c`, `xfs_da_format.h` |
//! | `shortform.rs` | inline (shortform) attribute lists                         | `xfs_attr_leaf.c` (shortform part)    |
//! | `leaf.rs`      | attr leaf blocks                                           | `xfs_attr_leaf.c`                     |
//! | `list.rs`      | every attribute of an inode, in each fork form             | `xfs_attr_list.c`                     |
//! | `remote.rs`    | values in blocks of their own                              | `xfs_attr_remote.c`                   |
//! | `linux.rs`     | xattr names and ACLs as Linux shows them                   | `xfs_xattr.c`, `xfs_acl.c`            |
//!
//! The da btree of node-form forks (node blocks, hash walk) is
//! `crate::xfs::dabtree` (`xfs_da_btree.c`).

use serde::Serialize;

use crate::xfs::bmap::{Fork, WhichFork};
use crate::xfs::dabtree::{DaGeometry, InodeFork, Problems};
use crate::xfs::dahash::{da_hashname, parent_hashname};
use crate::xfs::dir::ForkAt;
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::attr::*;
use crate::xfs::fs::{be32, be64, Fs};
use crate::xfs::inode::Inode;
use crate::xfs::read::ReadAt;
use crate::xfs::sb::Geometry;
use crate::xfs::types::Ino;

mod leaf;
mod linux;
mod list;
mod remote;
mod shortform;

pub use leaf::{parse_leaf, AttrLeaf};
pub use linux::{
    linux_xattrs, xfs_acl_to_linux, LinuxValue, LinuxXattr, SGI_ACL_DEFAULT, SGI_ACL_FILE,
};
pub use list::read_attrs;
pub use remote::{read_remote_value, read_value, remote_payload};
pub use shortform::parse_shortform;

/// The most attributes one listing holds.
pub const MAX_ATTRS: usize = 1 << 20;

/// Which namespace an attribute is in, from its flag bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttrNamespace {
    User,
    Trusted,
    Secure,
    /// A parent pointer (not a Linux xattr).
    Parent,
    /// A combination of namespace bits that names no namespace.
    Unknown(u8),
}

impl AttrNamespace {
    pub fn from_flags(flags: u8) -> AttrNamespace {
        match flags & XFS_ATTR_NSP_ONDISK_MASK {
            0 => AttrNamespace::User,
            XFS_ATTR_ROOT => AttrNamespace::Trusted,
            XFS_ATTR_SECURE => AttrNamespace::Secure,
            XFS_ATTR_PARENT => AttrNamespace::Parent,
            other => AttrNamespace::Unknown(other),
        }
    }

    /// The Linux xattr prefix, for namespaces Linux lists.
    pub fn linux_prefix(self) -> Option<&'static str> {
        match self {
            AttrNamespace::User => Some("user."),
            AttrNamespace::Trusted => Some("trusted."),
            AttrNamespace::Secure => Some("security."),
            AttrNamespace::Parent | AttrNamespace::Unknown(_) => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AttrNamespace::User => "user",
            AttrNamespace::Trusted => "trusted",
            AttrNamespace::Secure => "security",
            AttrNamespace::Parent => "parent",
            AttrNamespace::Unknown(_) => "unknown",
        }
    }
}

/// Where a value is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AttrValue {
    /// Stored with the name.
    Inline { bytes: Vec<u8> },
    /// In blocks of the attr fork from `blk`.
    Remote { blk: u32, len: u32 },
}

impl AttrValue {
    pub fn len(&self) -> u64 {
        match self {
            AttrValue::Inline { bytes } => u64::try_from(bytes.len()).unwrap_or(u64::MAX),
            AttrValue::Remote { len, .. } => u64::from(*len),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One attribute.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AttrEntry {
    /// On-disk flag bits (namespace, LOCAL, INCOMPLETE).
    pub flags: u8,
    pub namespace: AttrNamespace,
    /// The stored name, without a namespace prefix.
    pub name: Vec<u8>,
    pub value: AttrValue,
}

impl AttrEntry {
    /// The name as Linux lists it (`user.foo`), or `None` for parent
    /// pointers and unknown namespaces.
    pub fn linux_name(&self) -> Option<Vec<u8>> {
        let p = self.namespace.linux_prefix()?;
        let mut n = p.as_bytes().to_vec();
        n.extend_from_slice(&self.name);
        Some(n)
    }

    /// A parent pointer's parent directory and generation (from an inline
    /// 12-byte value).
    pub fn parent_pointer(&self) -> Option<(Ino, u32)> {
        if self.namespace != AttrNamespace::Parent {
            return None;
        }
        match &self.value {
            AttrValue::Inline { bytes } if bytes.len() == 12 => {
                Some((Ino(be64(bytes, 0)?), be32(bytes, 8)?))
            }
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttrFormat {
    /// No attr fork.
    Absent,
    Shortform,
    Leaf,
    Node,
}

impl AttrFormat {
    pub fn name(self) -> &'static str {
        match self {
            AttrFormat::Absent => "absent",
            AttrFormat::Shortform => "shortform",
            AttrFormat::Leaf => "leaf",
            AttrFormat::Node => "node",
        }
    }
}

/// Every attribute of an inode.
#[derive(Clone, Debug)]
pub struct AttrListing {
    pub format: AttrFormat,
    /// In on-disk order (hash order for leaf and node forms); INCOMPLETE
    /// entries are left out.
    pub entries: Vec<AttrEntry>,
    /// How many INCOMPLETE entries were skipped.
    pub incomplete: usize,
    pub problems: Problems,
}

/// What the attribute code needs to know about the filesystem.
#[derive(Clone, Copy, Debug)]
pub struct AttrGeometry {
    /// Attr da blocks are one fs block.
    pub da: DaGeometry,
    /// Incompat PARENT: parent pointers may exist.
    pub parent: bool,
    /// ASCII-CI: parent pointer hashes fold case.
    pub ascii_ci: bool,
}

impl AttrGeometry {
    pub fn new(geo: &Geometry, sb: &crate::xfs::sb::Superblock, owner: Ino) -> AttrGeometry {
        let uuid = if sb.features_incompat & (1 << 2) != 0 {
            sb.meta_uuid
        } else {
            sb.uuid
        };
        AttrGeometry {
            da: DaGeometry {
                fsb_size: geo.blocksize,
                fsb_count: 1,
                v5: geo.v5,
                uuid,
                owner,
            },
            parent: geo.v5 && sb.features_incompat & (1 << 7) != 0,
            ascii_ci: sb.versionnum & 0x4000 != 0,
        }
    }

    fn leaf_magic(&self) -> u16 {
        if self.da.v5 {
            XFS_ATTR3_LEAF_MAGIC
        } else {
            XFS_ATTR_LEAF_MAGIC
        }
    }

    /// The hash a leaf entry must carry.
    fn hash(&self, flags: u8, name: &[u8], value: &AttrValue) -> Option<u32> {
        if flags & XFS_ATTR_PARENT != 0 {
            match value {
                AttrValue::Inline { bytes } => {
                    be64(bytes, 0).map(|p| parent_hashname(name, p, self.ascii_ci))
                }
                AttrValue::Remote { .. } => None,
            }
        } else {
            Some(da_hashname(name))
        }
    }
}

/// An inode's attr fork as it holds it.
pub enum AttrFork<'a> {
    /// Shortform: the inline list.
    Local { bytes: &'a [u8], at: ForkAt },
    /// Leaf or node form: blocks through the fork source.
    Blocks,
}

const SF: &str = "shortform attributes";
const LEAF: &str = "attr leaf block";
const RMT: &str = "remote attr value block";

fn check_flags(ag: &AttrGeometry, flags: u8) -> Option<String> {
    let ns = AttrNamespace::from_flags(flags);
    if let AttrNamespace::Unknown(b) = ns {
        return Some(format!("namespace bits {b:#04x} name no namespace"));
    }
    if ns == AttrNamespace::Parent && !ag.parent {
        return Some("a parent pointer on a filesystem without parent pointers".into());
    }
    None
}

// ---------------------------------------------------------------------------
// On an opened filesystem

impl<R: ReadAt> Fs<R> {
    /// The attribute geometry for inode `owner`.
    pub fn attr_geometry(&self, owner: Ino) -> AttrGeometry {
        AttrGeometry::new(&self.geo, &self.sb, owner)
    }

    /// Every attribute of an inode (names and inline values; remote values
    /// are read by [`Fs::attr_value`]).
    pub fn read_attrs(&self, inode: &Inode) -> Result<AttrListing> {
        let Some(fork) = &inode.attr else {
            return Ok(AttrListing {
                format: AttrFormat::Absent,
                entries: Vec::new(),
                incomplete: 0,
                problems: Vec::new(),
            });
        };
        let ag = self.attr_geometry(inode.ino);
        let src = InodeFork {
            fs: self,
            inode,
            which: WhichFork::Attr,
        };
        match fork {
            Fork::Local { bytes } => {
                let at = ForkAt {
                    daddr: inode.location.daddr,
                    byte: (inode.location.byte_offset % 512)
                        .saturating_add(u64::from(inode.layout.attr_fork_offset.unwrap_or(0))),
                };
                read_attrs(&src, &self.geo, &ag, AttrFork::Local { bytes, at })
            }
            Fork::Extents { .. } | Fork::Btree { .. } => {
                read_attrs(&src, &self.geo, &ag, AttrFork::Blocks)
            }
            Fork::Corrupt { error, .. } => Err(error.clone()),
            f => Err(Error::corrupt(
                "attr fork",
                Location::Daddr {
                    daddr: inode.location.daddr.0,
                },
                format!(
                    "inode {}: attr fork has format {} ({})",
                    inode.ino.0,
                    f.format(),
                    crate::xfs::inode::format_name(f.format())
                ),
            )),
        }
    }

    /// The value of one attribute of `inode` (remote blocks read now).
    pub fn attr_value(&self, inode: &Inode, e: &AttrEntry) -> Result<Vec<u8>> {
        let src = InodeFork {
            fs: self,
            inode,
            which: WhichFork::Attr,
        };
        read_value(&src, &self.geo, &self.attr_geometry(inode.ino), e)
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::cast_possible_truncation
)]
mod tests {
    use super::*;
    use crate::xfs::dabtree::{read_da_block, ForkSource};
    use crate::xfs::read::FileReader;
    use crate::xfs::testutil::*;
    use crate::xfs::types::Daddr;
    use std::collections::HashMap;

    const FIXTURES: &[&str] = &[
        "v5-formats",
        "v5-64kdir",
        "v5-1k-rmap",
        "v5-64kblock",
        "v5-sect4k",
        "v5-dirattr",
        "v4-dirs",
    ];

    struct Opened<'a> {
        fork: TestFork<'a>,
        ag: AttrGeometry,
        local: Option<(Vec<u8>, ForkAt)>,
    }

    impl Opened<'_> {
        fn attr_fork(&self) -> AttrFork<'_> {
            match &self.local {
                Some((b, at)) => AttrFork::Local { bytes: b, at: *at },
                None => AttrFork::Blocks,
            }
        }
    }

    fn open<'a>(fs: &'a Fs<FileReader>, s: &Section) -> Opened<'a> {
        let ino: u64 = s.head[0].strip_prefix("inode ").unwrap().parse().unwrap();
        let lines: Vec<&str> = s.head.iter().map(String::as_str).collect();
        let fork = TestFork::from_bmap(fs, &lines);
        let ag = AttrGeometry::new(&fs.geo, &fs.sb, Ino(ino));
        let local = (head_value(s, "core.aformat") == Some("1")).then(|| {
            let forkoff: u64 = head_value(s, "core.forkoff").unwrap().parse().unwrap();
            let core = if fs.geo.v5 { 176 } else { 100 };
            let off = fs.inode_offset(Ino(ino)).unwrap() + core + forkoff * 8;
            let head = fs.img.read("test", off, 2).unwrap();
            let tot = u64::from(u16::from_be_bytes([head[0], head[1]]));
            (
                fs.img.read("test", off, tot).unwrap(),
                ForkAt {
                    daddr: Daddr(off / 512),
                    byte: off % 512,
                },
            )
        });
        Opened { fork, ag, local }
    }

    /// `key = value` lines of an xfs_db print, by key.
    fn print_map(s: &Section) -> HashMap<String, String> {
        s.body
            .iter()
            .filter_map(|l| l.split_once(" = "))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect()
    }

    /// An xfs_db quoted string: octal (`\\000`) and C (`\\b`) escapes.
    fn unquote(v: &str) -> Vec<u8> {
        let b = v.strip_prefix('"').unwrap_or(v).as_bytes();
        let b = b.strip_suffix(b"\"").unwrap_or(b);
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] != b'\\' || i + 1 >= b.len() {
                out.push(b[i]);
                i += 1;
                continue;
            }
            if i + 4 <= b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
                let o = std::str::from_utf8(&b[i + 1..i + 4]).unwrap();
                out.push(u8::from_str_radix(o, 8).unwrap());
                i += 4;
                continue;
            }
            out.push(match b[i + 1] {
                b'a' => 7,
                b'b' => 8,
                b't' => 9,
                b'n' => 10,
                b'v' => 11,
                b'f' => 12,
                b'r' => 13,
                c => c,
            });
            i += 2;
        }
        out
    }

    /// Every attribute fork in the oracles reads as `xfs_db print` shows it:
    /// shortform lists, leaf block 0 (entries and names/values) and the
    /// root node of node forms; listings have no problems.
    #[test]
    fn attrs_equal_xfs_db_print() {
        let mut formats = std::collections::BTreeSet::new();
        for name in FIXTURES {
            let fs = fixture_fs(name);
            for s in dirattr_oracle(name).iter().filter(|s| s.kind == "attr") {
                let o = open(&fs, s);
                let what = format!("{name} {}", s.path);
                let l = read_attrs(&o.fork, &fs.geo, &o.ag, o.attr_fork())
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert!(l.problems.is_empty(), "{what}: {:?}", l.problems);
                formats.insert(l.format.name());
                let m = print_map(s);
                if o.local.is_some() {
                    let count: usize = m["a.sfattr.hdr.count"].parse().unwrap();
                    assert_eq!(l.entries.len(), count, "{what}");
                    for (i, e) in l.entries.iter().enumerate() {
                        let k = |f: &str| m[&format!("a.sfattr.list[{i}].{f}")].clone();
                        assert_eq!(e.name, unquote(&k("name")), "{what}");
                        let want_v = m
                            .get(&format!("a.sfattr.list[{i}].value"))
                            .map_or(Vec::new(), |v| unquote(v));
                        assert_eq!(read_value(&o.fork, &fs.geo, &o.ag, e).unwrap(), want_v);
                        assert_eq!(e.namespace == AttrNamespace::Trusted, k("root") == "1");
                        assert_eq!(e.namespace == AttrNamespace::Secure, k("secure") == "1");
                    }
                    continue;
                }
                let buf = read_da_block(&o.fork, &fs.geo, &o.ag.da, "test", 0).unwrap();
                let magic = m
                    .get("hdr.info.hdr.magic")
                    .or(m.get("hdr.info.magic"))
                    .unwrap()
                    .clone();
                if magic == "0x3ebe" || magic == "0xfebe" {
                    let node = crate::xfs::dabtree::parse_node(&buf, &o.ag.da).unwrap();
                    assert_eq!(node.entries.len().to_string(), m["hdr.count"], "{what}");
                    assert_eq!(node.level.to_string(), m["hdr.level"], "{what}");
                    assert!(l.entries.len() > node.entries.len());
                    continue;
                }
                let leaf = parse_leaf(&buf, &o.ag).unwrap();
                assert_eq!(leaf.entries.len().to_string(), m["hdr.count"], "{what}");
                // entries[i] = [hashval,nameidx,incomplete,root,secure,local]
                let rows: Vec<&String> = s
                    .body
                    .iter()
                    .filter(|l| l.contains(":[0x") && l.matches(',').count() == 5)
                    .collect();
                assert_eq!(rows.len(), leaf.entries.len(), "{what}");
                for (i, ((hash, e), row)) in leaf.entries.iter().zip(rows).enumerate() {
                    let f: Vec<&str> = row
                        .split_once(":[")
                        .unwrap()
                        .1
                        .trim()
                        .trim_end_matches(']')
                        .split(',')
                        .collect();
                    assert_eq!(format!("{hash:#x}"), f[0], "{what} {i}");
                    assert_eq!(e.namespace == AttrNamespace::Trusted, f[3] == "1");
                    assert_eq!(e.namespace == AttrNamespace::Secure, f[4] == "1");
                    assert_eq!(
                        matches!(e.value, AttrValue::Inline { .. }),
                        f[5] == "1",
                        "{what} {i} {row}"
                    );
                    assert_eq!(e.name, unquote(&m[&format!("nvlist[{i}].name")]), "{what}");
                    assert_eq!(
                        e.value.len().to_string(),
                        m[&format!("nvlist[{i}].valuelen")]
                    );
                    match &e.value {
                        AttrValue::Inline { bytes } => {
                            if let Some(v) = m.get(&format!("nvlist[{i}].value")) {
                                assert_eq!(*bytes, unquote(v), "{what} {i}");
                            }
                        }
                        AttrValue::Remote { blk, len } => {
                            let want = u32::from_str_radix(
                                m[&format!("nvlist[{i}].valueblk")].trim_start_matches("0x"),
                                16,
                            )
                            .unwrap();
                            assert_eq!(*blk, want);
                            let v = read_remote_value(&o.fork, &fs.geo, &o.ag, *blk, *len).unwrap();
                            assert_eq!(v.len() as u32, *len);
                        }
                    }
                }
            }
        }
        assert_eq!(
            formats.into_iter().collect::<Vec<_>>(),
            ["leaf", "node", "shortform"]
        );
    }

    fn section(name: &str, path: &str) -> Section {
        dirattr_oracle(name)
            .into_iter()
            .find(|s| s.kind == "attr" && s.path == path)
            .unwrap()
    }

    fn err_text<T: std::fmt::Debug>(r: Result<T>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn damaged_remote_value_blocks_give_clear_errors() {
        let fs = fixture_fs("v5-formats");
        let s = section("v5-formats", "/xattrs/remote");
        let o = open(&fs, &s);
        let l = read_attrs(&o.fork, &fs.geo, &o.ag, o.attr_fork()).unwrap();
        let e = l.entries.iter().find(|e| e.name == b"remote5000").unwrap();
        let AttrValue::Remote { blk, len } = e.value else {
            panic!()
        };
        assert_eq!(read_value(&o.fork, &fs.geo, &o.ag, e).unwrap().len(), 5000);
        let orig = o.fork.read(u64::from(blk) + 1, 1).unwrap();
        let value_err = |edit: &dyn Fn(&mut Vec<u8>), crc: bool| {
            let mut b = orig.clone();
            edit(&mut b);
            if crc {
                fix_crc(&mut b, XFS_ATTR3_RMT_CRC_OFF);
            }
            let p = Patched {
                inner: &o.fork,
                patches: [(u64::from(blk) + 1, b)].into_iter().collect(),
            };
            err_text(read_remote_value(&p, &fs.geo, &o.ag, blk, len))
        };
        let e = value_err(&|b| b[0] = b'Y', true);
        assert!(e.contains("magic 0x5941524d, expected 0x5841524d"), "{e}");
        let e = value_err(&|b| b[100] ^= 1, false);
        assert!(e.contains("CRC stored"), "{e}");
        let e = value_err(&|b| b[4..8].copy_from_slice(&0u32.to_be_bytes()), true);
        assert!(
            e.contains("holds bytes 0..+960 of the value, expected 4040..+960"),
            "{e}"
        );
        let e = value_err(&|b| b[32..40].copy_from_slice(&7u64.to_be_bytes()), true);
        assert!(e.contains("owner inode 7"), "{e}");
        let e = value_err(&|b| b[40..48].copy_from_slice(&7u64.to_be_bytes()), true);
        assert!(e.contains("blkno 7"), "{e}");
        let e = err_text(read_remote_value(&o.fork, &fs.geo, &o.ag, blk, 70_000));
        assert!(e.contains("at most 65536"), "{e}");
    }

    #[test]
    fn damaged_leaf_blocks_give_clear_errors() {
        let fs = fixture_fs("v5-formats");
        let s = section("v5-formats", "/xattrs/leaf");
        let o = open(&fs, &s);
        let buf = read_da_block(&o.fork, &fs.geo, &o.ag.da, "test", 0).unwrap();
        let good = parse_leaf(&buf, &o.ag).unwrap();
        assert!(good.problems.is_empty());
        let edit = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut b = buf.clone();
            f(&mut b.bytes);
            fix_crc(&mut b.bytes, 12);
            parse_leaf(&b, &o.ag)
        };
        let e = err_text(edit(&|b| {
            b[56..58].copy_from_slice(&0xffffu16.to_be_bytes())
        }));
        assert!(e.contains("count 65535"), "{e}");
        let e = err_text(edit(&|b| {
            b[8..10].copy_from_slice(&0x3ebeu16.to_be_bytes())
        }));
        assert!(e.contains("magic 0x3ebe, expected 0x3bee"), "{e}");
        // Entry 0: name index outside the name area; wrong hash; unknown
        // namespace bits.
        let l = edit(&|b| b[80 + 4..80 + 6].copy_from_slice(&8u16.to_be_bytes())).unwrap();
        assert!(l.problems[0].to_string().contains("outside the name area"));
        assert_eq!(l.entries.len(), good.entries.len() - 1);
        let l = edit(&|b| b[80] ^= 0x10).unwrap();
        assert!(
            l.problems[0].to_string().contains("hashes to"),
            "{:?}",
            l.problems
        );
        let l = edit(&|b| b[80 + 6] |= XFS_ATTR_ROOT | XFS_ATTR_SECURE).unwrap();
        assert!(l
            .problems
            .iter()
            .any(|p| p.to_string().contains("namespace bits 0x06")));
        assert_eq!(l.entries[0].1.namespace, AttrNamespace::Unknown(6));
        assert_eq!(l.entries[0].1.linux_name(), None);
        // A remote entry whose value starts at the leaf itself.
        let l = edit(&|b| {
            b[80 + 6] &= !XFS_ATTR_LOCAL;
        });
        assert!(l.is_ok());
    }

    #[test]
    fn damaged_shortform_lists_give_clear_errors() {
        let fs = fixture_fs("v5-formats");
        let s = section("v5-formats", "/xattrs/shortform");
        let o = open(&fs, &s);
        let (bytes, at) = o.local.clone().unwrap();
        let good = parse_shortform(&bytes, &o.ag, at).unwrap();
        assert_eq!(good.entries.len(), 4);
        let mut b = bytes.clone();
        b[0..2].copy_from_slice(&500u16.to_be_bytes());
        assert!(err_text(parse_shortform(&b, &o.ag, at)).contains("totsize 500"));
        let mut b = bytes.clone();
        b[4] = 200;
        assert!(err_text(parse_shortform(&b, &o.ag, at)).contains("entry 0 ends at byte"));
        let mut b = bytes.clone();
        b[2] = 9;
        assert!(
            err_text(parse_shortform(&b, &o.ag, at)).contains("entry 4 of 9 starts past totsize")
        );
        let mut b = bytes.clone();
        b[4] = 0;
        assert!(err_text(parse_shortform(&b, &o.ag, at)).contains("empty name"));
    }

    /// Parent pointers and INCOMPLETE entries, in a shortform list built
    /// here (no fixture has parent pointers: mkfs.xfs 6.1 cannot make them).
    #[test]
    fn parent_pointers_are_not_linux_xattrs_and_incomplete_entries_are_skipped() {
        let fs = fixture_fs("v5-formats");
        let mut ag = AttrGeometry::new(&fs.geo, &fs.sb, Ino(131));
        let mut list = vec![0u8, 0, 3, 0];
        let mut entry = |name: &[u8], value: &[u8], flags: u8| {
            list.extend([name.len() as u8, value.len() as u8, flags]);
            list.extend(name);
            list.extend(value);
        };
        let mut rec = 128u64.to_be_bytes().to_vec();
        rec.extend(7u32.to_be_bytes());
        entry(b"child", &rec, XFS_ATTR_PARENT);
        entry(b"half", b"x", XFS_ATTR_INCOMPLETE);
        entry(b"k", b"v", 0);
        let n = list.len() as u16;
        list[0..2].copy_from_slice(&n.to_be_bytes());
        let at = ForkAt {
            daddr: Daddr(0),
            byte: 0,
        };
        ag.parent = true;
        let l = parse_shortform(&list, &ag, at).unwrap();
        assert!(l.problems.is_empty());
        assert_eq!(l.incomplete, 1);
        assert_eq!(l.entries.len(), 2);
        assert_eq!(l.entries[0].namespace, AttrNamespace::Parent);
        assert_eq!(l.entries[0].parent_pointer(), Some((Ino(128), 7)));
        let names: Vec<Vec<u8>> = linux_xattrs(&l).into_iter().map(|x| x.name).collect();
        assert_eq!(names, [b"user.k".to_vec()]);
        ag.parent = false;
        let l = parse_shortform(&list, &ag, at).unwrap();
        assert!(l.problems[0]
            .to_string()
            .contains("without parent pointers"));
        // The hash a parent pointer's leaf entry must carry.
        ag.parent = true;
        let v = AttrValue::Inline { bytes: rec };
        assert_eq!(
            ag.hash(XFS_ATTR_PARENT, b"child", &v),
            Some(crate::xfs::dahash::da_hashname(b"child") ^ 128)
        );
    }

    #[test]
    fn malformed_acls_are_errors() {
        assert!(xfs_acl_to_linux(&[0, 0]).is_err());
        let mut a = 1u32.to_be_bytes().to_vec();
        a.extend([0, 0, 0, 0x40, 0, 0, 0, 0, 0, 7, 0, 0]);
        assert!(xfs_acl_to_linux(&a)
            .unwrap_err()
            .contains("unknown tag 0x40"));
        a.pop();
        assert!(xfs_acl_to_linux(&a)
            .unwrap_err()
            .contains("but 1 entries take 16"));
    }

    #[test]
    fn random_damage_never_panics() {
        let fs = fixture_fs("v5-formats");
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for path in ["/xattrs/leaf", "/xattrs/node", "/xattrs/remote"] {
            let s = section("v5-formats", path);
            let o = open(&fs, &s);
            for blk in [0u64, 1, 2] {
                let Ok(orig) = o.fork.read(blk, 1) else {
                    continue;
                };
                for _ in 0..200 {
                    let mut b = orig.clone();
                    for _ in 0..1 + rng.below(6) {
                        let i = rng.below(b.len().min(256))
                            + if rng.below(3) == 0 { b.len() - 256 } else { 0 };
                        b[i] = rng.next() as u8;
                    }
                    fix_crc(&mut b, 12);
                    let p = Patched {
                        inner: &o.fork,
                        patches: [(blk, b)].into_iter().collect(),
                    };
                    if let Ok(l) = read_attrs(&p, &fs.geo, &o.ag, AttrFork::Blocks) {
                        for e in l.entries.iter().take(5) {
                            let _ = read_value(&p, &fs.geo, &o.ag, e);
                        }
                    }
                }
            }
        }
        let s = section("v5-formats", "/xattrs/shortform");
        let o = open(&fs, &s);
        let (bytes, at) = o.local.clone().unwrap();
        for _ in 0..2000 {
            let mut b = bytes.clone();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(b.len());
                b[i] = rng.next() as u8;
            }
            let _ = parse_shortform(&b, &o.ag, at);
        }
    }
}
