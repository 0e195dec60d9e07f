//! The Linux view of the attributes: xattr names with their namespace
//! prefix, and ACLs in the form Linux gives them (kernel: `xfs_xattr.c`,
//! `xfs_acl.c`).

use serde::Serialize;

use super::{AttrEntry, AttrListing, AttrNamespace};
use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::attr::*;
use crate::xfs::fs::{be16, be32, Fs};
use crate::xfs::inode::Inode;
use crate::xfs::read::ReadAt;

/// `SGI_ACL_FILE`: the trusted attribute holding the access ACL.
pub const SGI_ACL_FILE: &[u8] = b"SGI_ACL_FILE";
/// `SGI_ACL_DEFAULT`: the trusted attribute holding a directory's default ACL.
pub const SGI_ACL_DEFAULT: &[u8] = b"SGI_ACL_DEFAULT";

/// How a Linux xattr's value comes out of the attribute it is made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinuxValue {
    /// The attribute's value as stored.
    Raw,
    /// An XFS ACL turned into the Linux `system.posix_acl_*` format.
    PosixAcl,
}

/// One name as `listxattr` on a mounted filesystem shows it (as root).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LinuxXattr {
    pub name: Vec<u8>,
    /// The attribute it comes from.
    pub entry: AttrEntry,
    pub kind: LinuxValue,
}

/// The Linux xattr names of a listing, sorted bytewise: every user,
/// trusted and security attribute, plus `system.posix_acl_access` /
/// `system.posix_acl_default` for the trusted ACL attributes (listed
/// under both names, as the kernel does). Parent pointers are not Linux
/// xattrs.
pub fn linux_xattrs(listing: &AttrListing) -> Vec<LinuxXattr> {
    let mut out = Vec::new();
    for e in &listing.entries {
        if e.namespace == AttrNamespace::Trusted {
            let acl = if e.name == SGI_ACL_FILE {
                Some(&b"system.posix_acl_access"[..])
            } else if e.name == SGI_ACL_DEFAULT {
                Some(&b"system.posix_acl_default"[..])
            } else {
                None
            };
            if let Some(n) = acl {
                out.push(LinuxXattr {
                    name: n.to_vec(),
                    entry: e.clone(),
                    kind: LinuxValue::PosixAcl,
                });
            }
        }
        if let Some(name) = e.linux_name() {
            out.push(LinuxXattr {
                name,
                entry: e.clone(),
                kind: LinuxValue::Raw,
            });
        }
    }
    crate::xfs::sort::by(&mut out, |a, b| a.name.cmp(&b.name));
    out
}

/// Turn an on-disk XFS ACL (`acl_cnt` be32, then {tag be32, id be32,
/// perm be16, pad} entries) into the Linux xattr form (version 2 le32, then
/// {tag le16, perm le16, id le32}; ids only for named users and groups).
pub fn xfs_acl_to_linux(v: &[u8]) -> std::result::Result<Vec<u8>, String> {
    const ACL_USER: u32 = 0x02;
    const ACL_GROUP: u32 = 0x08;
    const KNOWN: [u32; 6] = [0x01, ACL_USER, 0x04, ACL_GROUP, 0x10, 0x20];
    let count = be32(v, 0).ok_or("ACL shorter than its count")?;
    if count > XFS_ACL_MAX_ENTRIES {
        return Err(format!("ACL count {count} (at most {XFS_ACL_MAX_ENTRIES})"));
    }
    let n = usize::try_from(count).map_err(|_| "ACL count too large")?;
    let want = n.saturating_mul(12).saturating_add(4);
    if v.len() != want {
        return Err(format!(
            "ACL of {} bytes, but {count} entries take {want}",
            v.len()
        ));
    }
    let mut out = Vec::with_capacity(n.saturating_mul(8).saturating_add(4));
    out.extend_from_slice(&2u32.to_le_bytes());
    for i in 0..n {
        let o = i.saturating_mul(12).saturating_add(4);
        let tag = be32(v, o).unwrap_or(0);
        let id = be32(v, o.saturating_add(4)).unwrap_or(0);
        let perm = be16(v, o.saturating_add(8)).unwrap_or(0);
        if !KNOWN.contains(&tag) {
            return Err(format!("ACL entry {i}: unknown tag {tag:#x}"));
        }
        out.extend_from_slice(&u16::try_from(tag).unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&perm.to_le_bytes());
        let id = if tag == ACL_USER || tag == ACL_GROUP {
            id
        } else {
            u32::MAX
        };
        out.extend_from_slice(&id.to_le_bytes());
    }
    Ok(out)
}

impl<R: ReadAt> Fs<R> {
    /// The value `getxattr` would return for one Linux xattr.
    pub fn linux_xattr_value(&self, inode: &Inode, x: &LinuxXattr) -> Result<Vec<u8>> {
        let raw = self.attr_value(inode, &x.entry)?;
        match x.kind {
            LinuxValue::Raw => Ok(raw),
            LinuxValue::PosixAcl => xfs_acl_to_linux(&raw).map_err(|d| {
                Error::corrupt(
                    "ACL",
                    Location::Daddr {
                        daddr: inode.location.daddr.0,
                    },
                    format!("inode {}: {d}", inode.ino.0),
                )
            }),
        }
    }
}
