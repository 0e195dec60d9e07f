//! Listing an inode's attributes in every fork form: the shortform list,
//! one leaf block, or the leaves of the da btree (kernel:
//! `xfs_attr_list.c`).

use super::leaf::{parse_leaf, AttrLeaf};
use super::shortform::parse_shortform;
use super::{AttrFork, AttrFormat, AttrGeometry, AttrListing, LEAF, MAX_ATTRS};
use crate::xfs::dabtree::{node_magic, read_da_block, walk_leaves, ForkSource};
use crate::xfs::error::Result;
use crate::xfs::format::attr::*;
use crate::xfs::sb::Geometry;

/// List the attributes of an inode (names and inline values; remote values
/// are not read).
pub fn read_attrs<S: ForkSource + ?Sized>(
    src: &S,
    geo: &Geometry,
    ag: &AttrGeometry,
    fork: AttrFork<'_>,
) -> Result<AttrListing> {
    let owner = ag.da.owner.0;
    match fork {
        AttrFork::Local { bytes, at } => parse_shortform(bytes, ag, at),
        AttrFork::Blocks => {
            if src.runs().is_empty() {
                // An attr fork with no blocks: nothing stored (yet).
                return Ok(AttrListing {
                    format: AttrFormat::Leaf,
                    entries: Vec::new(),
                    incomplete: 0,
                    problems: Vec::new(),
                });
            }
            let root = read_da_block(src, geo, &ag.da, LEAF, 0)?;
            let magic = root.da_magic().unwrap_or(0);
            let mut out = AttrListing {
                format: AttrFormat::Leaf,
                entries: Vec::new(),
                incomplete: 0,
                problems: Vec::new(),
            };
            let take = |leaf: AttrLeaf, out: &mut AttrListing| {
                out.problems.extend(leaf.problems);
                for (_, e) in leaf.entries {
                    if e.flags & XFS_ATTR_INCOMPLETE != 0 {
                        out.incomplete = out.incomplete.saturating_add(1);
                    } else if out.entries.len() < MAX_ATTRS {
                        out.entries.push(e);
                    }
                }
            };
            if magic == ag.leaf_magic() {
                let leaf = parse_leaf(&root, ag)?;
                if leaf.forw != 0 || leaf.back != 0 {
                    out.problems.push(root.bad(
                        LEAF,
                        0,
                        format!(
                            "inode {owner}: the only leaf has sibling links {} / {}",
                            leaf.forw, leaf.back
                        ),
                    ));
                }
                take(leaf, &mut out);
                return Ok(out);
            }
            if magic != node_magic(ag.da.v5) {
                return Err(root.bad(
                    LEAF,
                    8,
                    format!(
                        "inode {owner}: attr block 0 has magic {magic:#06x}, neither a leaf nor a node"
                    ),
                ));
            }
            out.format = AttrFormat::Node;
            let leaf_magic = ag.leaf_magic();
            let mut leaves = Vec::new();
            let walk = walk_leaves(src, geo, &ag.da, 0, &|m| m == leaf_magic, &mut |buf| {
                leaves.push(parse_leaf(&buf, ag)?);
                Ok(())
            });
            out.problems.extend(walk);
            for l in leaves {
                take(l, &mut out);
            }
            Ok(out)
        }
    }
}
