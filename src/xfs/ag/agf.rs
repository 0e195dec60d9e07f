//! The AGF: free-space bookkeeping of one AG, parsed and described field by field.

use super::*;

/// The AGF: free-space and reverse-mapping bookkeeping of one AG. Fields
/// keep the `xfs_db` names without the `agf_` prefix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Agf {
    pub agno: AgNumber,
    pub daddr: Daddr,
    pub v5: bool,
    pub magicnum: u32,
    pub versionnum: u32,
    pub seqno: u32,
    pub length: u32,
    pub bnoroot: u32,
    pub cntroot: u32,
    pub rmaproot: u32,
    pub bnolevel: u32,
    pub cntlevel: u32,
    pub rmaplevel: u32,
    pub flfirst: u32,
    pub fllast: u32,
    pub flcount: u32,
    pub freeblks: u32,
    pub longest: u32,
    pub btreeblks: u32,
    pub uuid: [u8; 16],
    pub rmapblocks: u32,
    pub refcntblocks: u32,
    pub refcntroot: u32,
    pub refcntlevel: u32,
    pub lsn: u64,
    /// As stored (the on-disk field is little-endian).
    pub crc: u32,
    pub computed_crc: Option<u32>,
    pub problems: Vec<Problem>,
}

impl Agf {
    /// Parse the AGF from its sector (`sb_sectsize` bytes, so the CRC can
    /// be checked).
    pub fn parse(sector: &[u8], daddr: Daddr, ctx: &HeaderCtx) -> Result<Agf> {
        let (d, _) = XfsAgf::ref_from_prefix(sector)
            .map_err(|_| short_sector("AGF", daddr, sector.len(), XFS_AGF_SIZE))?;
        let mut a = Agf {
            agno: ctx.agno,
            daddr,
            v5: ctx.features.v5,
            magicnum: d.agf_magicnum.get(),
            versionnum: d.agf_versionnum.get(),
            seqno: d.agf_seqno.get(),
            length: d.agf_length.get(),
            bnoroot: d.agf_bno_root.get(),
            cntroot: d.agf_cnt_root.get(),
            rmaproot: d.agf_rmap_root.get(),
            bnolevel: d.agf_bno_level.get(),
            cntlevel: d.agf_cnt_level.get(),
            rmaplevel: d.agf_rmap_level.get(),
            flfirst: d.agf_flfirst.get(),
            fllast: d.agf_fllast.get(),
            flcount: d.agf_flcount.get(),
            freeblks: d.agf_freeblks.get(),
            longest: d.agf_longest.get(),
            btreeblks: d.agf_btreeblks.get(),
            uuid: d.agf_uuid,
            rmapblocks: d.agf_rmap_blocks.get(),
            refcntblocks: d.agf_refcount_blocks.get(),
            refcntroot: d.agf_refcount_root.get(),
            refcntlevel: d.agf_refcount_level.get(),
            lsn: d.agf_lsn.get(),
            crc: d.agf_crc.get(),
            computed_crc: None,
            problems: Vec::new(),
        };
        let mut c = Checker { p: Vec::new() };
        c.common(
            ctx,
            (a.magicnum, XFS_AGF_MAGIC),
            Some((a.versionnum, XFS_AGF_VERSION)),
            a.seqno,
            Some(a.length),
        );
        a.computed_crc = c.v5(ctx, sector, daddr, XFS_AGF_CRC_OFF, XFS_AGF_UUID_OFF, a.lsn);
        c.root(ctx, "bnoroot", a.bnoroot);
        c.root(ctx, "cntroot", a.cntroot);
        c.level("bnolevel", a.bnolevel);
        c.level("cntlevel", a.cntlevel);
        if ctx.features.rmapbt {
            c.root(ctx, "rmaproot", a.rmaproot);
            c.level("rmaplevel", a.rmaplevel);
        }
        if ctx.features.reflink {
            c.root(ctx, "refcntroot", a.refcntroot);
            c.level("refcntlevel", a.refcntlevel);
        }
        let size = ctx.agfl_size();
        if a.flfirst >= size {
            c.warn(
                "flfirst",
                format!("{} is not an AGFL slot (0..{size})", a.flfirst),
            );
        }
        if a.fllast >= size {
            c.warn(
                "fllast",
                format!("{} is not an AGFL slot (0..{size})", a.fllast),
            );
        }
        if a.flcount > size {
            c.warn(
                "flcount",
                format!("{} exceeds the {size} AGFL slots", a.flcount),
            );
        }
        if a.freeblks > a.length {
            c.warn(
                "freeblks",
                format!("{} exceeds the AG length {}", a.freeblks, a.length),
            );
        }
        if a.longest > a.freeblks {
            c.warn(
                "longest",
                format!("{} exceeds freeblks {}", a.longest, a.freeblks),
            );
        }
        for (field, v) in [
            ("btreeblks", a.btreeblks),
            ("rmapblocks", a.rmapblocks),
            ("refcntblocks", a.refcntblocks),
        ] {
            if v > a.length {
                c.warn(field, format!("{v} exceeds the AG length {}", a.length));
            }
        }
        a.problems = c.p;
        Ok(a)
    }

    pub fn crc_ok(&self) -> Option<bool> {
        self.computed_crc.map(|c| c == self.crc)
    }

    /// Whether the roots can be used (no fatal problem).
    pub fn usable(&self) -> bool {
        !self.problems.iter().any(|p| p.severity == Severity::Fatal)
    }

    /// Every field in on-disk order with its meaning. `uuid`, `lsn` and
    /// `crc` appear on v5 filesystems only.
    pub fn fields(&self) -> Vec<Field> {
        let mut f = Fields(Vec::with_capacity(24));
        let v = |x: u32| u64::from(x);
        f.num(
            "magicnum",
            0,
            4,
            v(self.magicnum),
            "magic number, \"XAGF\"",
            Some(btree::magic_text(self.magicnum)),
        );
        f.num(
            "versionnum",
            4,
            4,
            v(self.versionnum),
            "AGF format version (1)",
            None,
        );
        f.num(
            "seqno",
            8,
            4,
            v(self.seqno),
            "number of the AG this header describes",
            None,
        );
        f.num("length", 12, 4, v(self.length), "blocks in this AG", None);
        f.num(
            "bnoroot",
            16,
            4,
            v(self.bnoroot),
            "root block of the free-space-by-block btree (agf_bno_root)",
            null_note(self.bnoroot),
        );
        f.num(
            "cntroot",
            20,
            4,
            v(self.cntroot),
            "root block of the free-space-by-size btree (agf_cnt_root)",
            null_note(self.cntroot),
        );
        f.num(
            "rmaproot",
            24,
            4,
            v(self.rmaproot),
            "root block of the reverse-mapping btree (agf_rmap_root, RMAPBT)",
            null_note(self.rmaproot),
        );
        f.num(
            "bnolevel",
            28,
            4,
            v(self.bnolevel),
            "height of the bnobt, 1 = the root is a leaf (agf_bno_level)",
            None,
        );
        f.num(
            "cntlevel",
            32,
            4,
            v(self.cntlevel),
            "height of the cntbt (agf_cnt_level)",
            None,
        );
        f.num(
            "rmaplevel",
            36,
            4,
            v(self.rmaplevel),
            "height of the rmapbt (agf_rmap_level)",
            None,
        );
        f.num(
            "flfirst",
            40,
            4,
            v(self.flfirst),
            "first AGFL slot in use",
            None,
        );
        f.num(
            "fllast",
            44,
            4,
            v(self.fllast),
            "last AGFL slot in use",
            None,
        );
        f.num(
            "flcount",
            48,
            4,
            v(self.flcount),
            "AGFL slots in use (blocks on the free list)",
            None,
        );
        f.num(
            "freeblks",
            52,
            4,
            v(self.freeblks),
            "free blocks recorded in the free-space btrees",
            None,
        );
        f.num(
            "longest",
            56,
            4,
            v(self.longest),
            "longest free extent in blocks",
            None,
        );
        f.num(
            "btreeblks",
            60,
            4,
            v(self.btreeblks),
            "blocks the bno/cnt/rmap btrees use besides their roots",
            None,
        );
        if self.v5 {
            f.text(
                "uuid",
                64,
                16,
                uuid_text(&self.uuid),
                "filesystem UUID stamped in metadata",
                None,
            );
        }
        f.num(
            "rmapblocks",
            80,
            4,
            v(self.rmapblocks),
            "blocks of the rmapbt (agf_rmap_blocks)",
            None,
        );
        f.num(
            "refcntblocks",
            84,
            4,
            v(self.refcntblocks),
            "blocks of the refcount btree (agf_refcount_blocks)",
            None,
        );
        f.num(
            "refcntroot",
            88,
            4,
            v(self.refcntroot),
            "root block of the refcount btree (agf_refcount_root, REFLINK)",
            null_note(self.refcntroot),
        );
        f.num(
            "refcntlevel",
            92,
            4,
            v(self.refcntlevel),
            "height of the refcount btree (agf_refcount_level)",
            None,
        );
        if self.v5 {
            f.num(
                "lsn",
                208,
                8,
                self.lsn,
                "log sequence number of the last logged write",
                Some(Lsn::from_raw(self.lsn).to_string()),
            );
            f.num(
                "crc",
                216,
                4,
                v(self.crc),
                "CRC32c of the AGF sector",
                Some(crc_note(self.crc, self.computed_crc)),
            );
        }
        f.0
    }

    /// Where tree `tree` starts (bno, cnt, rmap, refcount), or `None` for an
    /// inode tree or an unusable header.
    pub fn tree_root(&self, tree: AgTree, ctx: &HeaderCtx) -> Option<TreeRoot> {
        if !self.usable() {
            return None;
        }
        let (root, levels) = match tree {
            AgTree::Bno => (self.bnoroot, self.bnolevel),
            AgTree::Cnt => (self.cntroot, self.cntlevel),
            AgTree::Rmap => (self.rmaproot, self.rmaplevel),
            AgTree::Refcount => (self.refcntroot, self.refcntlevel),
            AgTree::Ino | AgTree::Fino => return None,
        };
        Some(tree_root(tree, ctx, root, levels))
    }
}

pub(super) fn tree_root(tree: AgTree, ctx: &HeaderCtx, root: u32, levels: u32) -> TreeRoot {
    TreeRoot {
        tree,
        agno: ctx.agno,
        root: AgBlock(root),
        levels,
        ag_length: ctx.expected_length,
        first_block: ctx.first_block,
    }
}
