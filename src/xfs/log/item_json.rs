//! An item in the form serde writes it (the JSON of `log --json` and the
//! page's log views): its fields, its bitmap runs and, given a context,
//! what each run covers.

use super::bitmap::fit_regions;
use super::items::{buf_type_name, Item, ItemBody, Segment};
use super::run_fields::describe_run;
use super::ItemContext;
use crate::xfs::format::log::*;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// An item as JSON, with its bitmap runs (and, given a context, the fields
/// each run covers).
pub struct ItemJson<'a> {
    pub item: &'a Item,
    pub ctx: Option<&'a ItemContext>,
}

impl Serialize for ItemJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let it = self.item;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("kind", &it.kind)?;
        m.serialize_entry("regions", &it.regions)?;
        if it.declared != it.regions {
            m.serialize_entry("declared_regions", &it.declared)?;
        }
        m.serialize_entry("region_lens", &it.region_lens)?;
        match &it.body {
            ItemBody::Buf(b) => {
                m.serialize_entry("blkno", &b.blkno)?;
                m.serialize_entry("len", &b.len)?;
                m.serialize_entry("flags", &b.flags)?;
                m.serialize_entry("buf_type", buf_type_name(b.buf_type))?;
                m.serialize_entry("cancel", &b.cancel())?;
                if b.flags & XFS_BLF_INODE_BUF != 0 {
                    m.serialize_entry("inode_buf", &true)?;
                }
                let dq = b.flags & (XFS_BLF_UDQUOT_BUF | XFS_BLF_PDQUOT_BUF | XFS_BLF_GDQUOT_BUF);
                if dq != 0 {
                    m.serialize_entry("dquot_flags", &dq)?;
                }
                m.serialize_entry("map_size", &b.map_size)?;
                match b.segment {
                    Segment::Whole => {}
                    Segment::Part(o) => m.serialize_entry("segment_offset", &o)?,
                    Segment::Unknown => m.serialize_entry("segment_offset", &None::<u32>)?,
                }
                let runs = b.runs();
                m.serialize_entry("runs", &runs)?;
                let lens = it.region_lens.view();
                let fit = fit_regions(&b.map, lens.get(1..).unwrap_or(&[]));
                if fit.straddles > 0 {
                    m.serialize_entry("straddles", &fit.straddles)?;
                }
                if let Some(p) = &fit.problem {
                    m.serialize_entry("problem", p)?;
                }
                if let Some(ctx) = self.ctx {
                    let fields: Vec<Vec<String>> =
                        runs.iter().map(|r| describe_run(b, *r, ctx)).collect();
                    m.serialize_entry("run_fields", &fields)?;
                    if let Some(h) = &b.head {
                        m.serialize_entry("head", h)?;
                    }
                }
            }
            ItemBody::Inode(i) => {
                m.serialize_entry("ino", &i.ino)?;
                m.serialize_entry("fields", &i.fields)?;
                m.serialize_entry("dsize", &i.dsize)?;
                m.serialize_entry("asize", &i.asize)?;
                m.serialize_entry("blkno", &i.blkno)?;
                m.serialize_entry("cluster_len", &i.cluster_len)?;
                m.serialize_entry("boffset", &i.boffset)?;
                if let Some(r) = i.rdev {
                    m.serialize_entry("rdev", &r)?;
                }
                if i.format_len != 56 {
                    m.serialize_entry("format_len", &i.format_len)?;
                }
                if let Some(c) = &i.core {
                    m.serialize_entry("core", c)?;
                }
            }
            ItemBody::Icreate(c) => {
                m.serialize_entry("ag", &c.ag)?;
                m.serialize_entry("agbno", &c.agbno)?;
                m.serialize_entry("count", &c.count)?;
                m.serialize_entry("isize", &c.isize)?;
                m.serialize_entry("length", &c.length)?;
                m.serialize_entry("gen", &c.gen)?;
            }
            ItemBody::ExtentFree(e) => {
                m.serialize_entry("id", &e.id)?;
                m.serialize_entry("nextents", &e.nextents)?;
                if e.extent_bits != 64 {
                    m.serialize_entry("extent_bits", &e.extent_bits)?;
                }
                m.serialize_entry("extents", &e.extents)?;
            }
            ItemBody::MapIntent(e) => {
                m.serialize_entry("id", &e.id)?;
                m.serialize_entry("nextents", &e.nextents)?;
                m.serialize_entry("extents", &e.extents)?;
            }
            ItemBody::RefcountIntent(e) => {
                m.serialize_entry("id", &e.id)?;
                m.serialize_entry("nextents", &e.nextents)?;
                m.serialize_entry("extents", &e.extents)?;
            }
            ItemBody::Done(d) => m.serialize_entry("id", &d.id)?,
            ItemBody::Attri(a) => {
                m.serialize_entry("id", &a.id)?;
                m.serialize_entry("ino", &a.ino)?;
                m.serialize_entry("igen", &a.igen)?;
                m.serialize_entry("op", a.op)?;
                m.serialize_entry("op_flags", &a.op_flags)?;
                m.serialize_entry("name_len", &a.name_len)?;
                if let Some(n) = a.new_name_len {
                    m.serialize_entry("new_name_len", &n)?;
                }
                m.serialize_entry("value_len", &a.value_len)?;
                m.serialize_entry("attr_filter", &a.attr_filter)?;
                if let Some(n) = &a.name {
                    m.serialize_entry("name", n)?;
                }
            }
            ItemBody::Xmi(x) => {
                m.serialize_entry("id", &x.id)?;
                m.serialize_entry("inode1", &x.inode1)?;
                m.serialize_entry("inode2", &x.inode2)?;
                m.serialize_entry("igen1", &x.igen1)?;
                m.serialize_entry("igen2", &x.igen2)?;
                m.serialize_entry("startoff1", &x.startoff1)?;
                m.serialize_entry("startoff2", &x.startoff2)?;
                m.serialize_entry("blockcount", &x.blockcount)?;
                m.serialize_entry("flags", &x.flags)?;
                m.serialize_entry("isize1", &x.isize1)?;
                m.serialize_entry("isize2", &x.isize2)?;
            }
            ItemBody::Dquot(q) => {
                m.serialize_entry("id", &q.id)?;
                m.serialize_entry("blkno", &q.blkno)?;
                m.serialize_entry("len", &q.len)?;
                m.serialize_entry("boffset", &q.boffset)?;
                if let Some(t) = q.dq_type {
                    m.serialize_entry("dq_type", &t)?;
                }
            }
            ItemBody::Quotaoff(q) => m.serialize_entry("qflags", &q.flags)?,
            ItemBody::Unknown => m.serialize_entry("type_code", &it.kind.0)?,
            ItemBody::Corrupt(msg) => {
                m.serialize_entry("type_code", &it.kind.0)?;
                m.serialize_entry("problem", msg)?;
            }
        }
        if it.regions != it.declared {
            m.serialize_entry(
                "problem",
                &format!("{} of {} regions present", it.regions, it.declared),
            )?;
        }
        if it.kind.is_intent() {
            m.serialize_entry("done", &it.link())?;
        } else if let Some(l) = &it.link() {
            m.serialize_entry("intent", l)?;
        }
        m.end()
    }
}
