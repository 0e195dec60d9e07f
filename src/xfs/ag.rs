//! Allocation groups: the AGF (free space), AGI (inodes) and AGFL (free
//! list) headers, parsed completely and described field by field, and a
//! per-AG summary that walks every btree of the AG and cross-checks what
//! the trees hold against what the headers claim.
//!
//! ```text
//! AG start: | sb copy | AGF | AGI | AGFL |  (one sector each)  ...btree blocks...
//!             sector 0   1     2     3
//! ```
//! Parsing a header fails only when its sector cannot be read; everything
//! wrong in it is listed as a [`Problem`]. A bad magic or version is fatal
//! (the roots it holds are not used); anything else is a warning and the
//! trees are still walked. Field names are the ones `xfs_db` prints.

pub mod btree;

use crate::xfs::error::{Error, Location, Result};
use crate::xfs::format::ag::*;
use crate::xfs::fs::{verify_v5, Fs, V5Check};
use crate::xfs::read::ReadAt;
use crate::xfs::sb::{uuid_text, Field, FieldValue, Problem, Severity, Superblock};
use crate::xfs::types::{AgBlock, AgNumber, Daddr, Lsn};
use btree::{AgTree, BlockContent, Record, TreeRoot, MAX_AG_BTREE_LEVELS};
use serde::Serialize;
use std::ops::ControlFlow;
use zerocopy::FromBytes;

/// The features that decide which AG trees exist and how they look.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AgFeatures {
    pub v5: bool,
    pub finobt: bool,
    pub rmapbt: bool,
    pub reflink: bool,
    pub inobtcount: bool,
    pub sparse_inodes: bool,
    pub lazysbcount: bool,
}

impl AgFeatures {
    pub fn from_sb(sb: &Superblock) -> Self {
        let v5 = sb.is_v5();
        let ro = if v5 { sb.features_ro_compat } else { 0 };
        let inc = if v5 { sb.features_incompat } else { 0 };
        let f2 = if v5 || sb.versionnum & 0x8000 != 0 {
            sb.features2
        } else {
            0
        };
        AgFeatures {
            v5,
            finobt: ro & (1 << 0) != 0,
            rmapbt: ro & (1 << 1) != 0,
            reflink: ro & (1 << 2) != 0,
            inobtcount: ro & (1 << 3) != 0,
            sparse_inodes: inc & (1 << 1) != 0,
            lazysbcount: v5 || f2 & 0x0002 != 0,
        }
    }

    /// The trees this filesystem has in every AG.
    pub fn trees(&self) -> Vec<AgTree> {
        AgTree::ALL
            .into_iter()
            .filter(|t| match t {
                AgTree::Bno | AgTree::Cnt | AgTree::Ino => true,
                AgTree::Fino => self.finobt,
                AgTree::Rmap => self.rmapbt,
                AgTree::Refcount => self.reflink,
            })
            .collect()
    }
}

/// What checking an AG header needs to know about the filesystem.
#[derive(Clone, Copy, Debug)]
pub struct HeaderCtx {
    pub agno: AgNumber,
    pub features: AgFeatures,
    pub meta_uuid: [u8; 16],
    pub sectsize: u16,
    pub blocksize: u32,
    /// Blocks this AG has according to the superblock (the last AG may be
    /// shorter than `agblocks`).
    pub expected_length: u32,
    /// The first AG block after the four header sectors.
    pub first_block: u32,
    /// `sb_inopblog`, to turn AG inode numbers into AG blocks.
    pub inopblog: u8,
    /// Length of the internal log in 512-byte blocks (bounds LSN blocks).
    pub log_bbs: u64,
}

impl HeaderCtx {
    pub fn new<R: ReadAt>(fs: &Fs<R>, agno: AgNumber) -> Result<Self> {
        let g = &fs.geo;
        if agno.0 >= g.agcount {
            return Err(Error::corrupt(
                "allocation group",
                Location::Ag { agno: agno.0 },
                format!("AG {} does not exist ({} AGs)", agno.0, g.agcount),
            ));
        }
        let start = u64::from(agno.0).saturating_mul(u64::from(g.agblocks));
        let expected_length =
            u32::try_from(g.dblocks.saturating_sub(start).min(u64::from(g.agblocks)))
                .unwrap_or(g.agblocks);
        // The block holding the AGFL sector is the last header block.
        let agfl_end = u64::from(g.sectsize).saturating_mul(AGFL_SECTOR.saturating_add(1));
        let first_block =
            u32::try_from(agfl_end.div_ceil(u64::from(g.blocksize).max(1))).unwrap_or(u32::MAX);
        Ok(HeaderCtx {
            agno,
            features: AgFeatures::from_sb(&fs.sb),
            meta_uuid: fs.meta_uuid(),
            sectsize: g.sectsize,
            blocksize: g.blocksize,
            expected_length,
            first_block,
            inopblog: g.inopblog,
            log_bbs: u64::from(g.logblocks)
                .checked_shl(u32::from(g.blocklog).saturating_sub(9))
                .unwrap_or(u64::MAX),
        })
    }

    /// Entries of the AGFL (`xfs_agfl_size`): the sector minus the v5
    /// header, in 4-byte block numbers.
    pub fn agfl_size(&self) -> u32 {
        let hdr = if self.features.v5 {
            XFS_AGFL_HDR_SIZE
        } else {
            0
        };
        u32::try_from(usize::from(self.sectsize).saturating_sub(hdr) / 4).unwrap_or(0)
    }

    fn valid_agbno(&self, b: u32) -> bool {
        b >= self.first_block && b < self.expected_length
    }
}

fn short_sector(structure: &'static str, daddr: Daddr, len: usize, need: usize) -> Error {
    Error::corrupt(
        structure,
        Location::Daddr { daddr: daddr.0 },
        format!("{len} bytes read, the structure needs {need}"),
    )
}

/// Collects problems of one header.
struct Checker {
    p: Vec<Problem>,
}

impl Checker {
    fn fatal(&mut self, field: &'static str, message: String) {
        self.p.push(Problem {
            severity: Severity::Fatal,
            field,
            message,
        });
    }
    fn warn(&mut self, field: &'static str, message: String) {
        self.p.push(Problem {
            severity: Severity::Warning,
            field,
            message,
        });
    }

    fn common(
        &mut self,
        ctx: &HeaderCtx,
        magic: (u32, u32),
        version: Option<(u32, u32)>,
        seqno: u32,
        length: Option<u32>,
    ) {
        if magic.0 != magic.1 {
            self.fatal(
                "magicnum",
                format!(
                    "{} is not {}",
                    btree::magic_text(magic.0),
                    btree::magic_text(magic.1)
                ),
            );
        }
        if let Some((v, want)) = version {
            if v != want {
                self.fatal("versionnum", format!("{v} is not {want}"));
            }
        }
        if seqno != ctx.agno.0 {
            self.warn(
                "seqno",
                format!("{seqno} but the header sits in AG {}", ctx.agno.0),
            );
        }
        if let Some(len) = length {
            if len != ctx.expected_length {
                self.warn(
                    "length",
                    format!(
                        "{len} blocks but the superblock gives this AG {}",
                        ctx.expected_length
                    ),
                );
            }
        }
    }

    fn v5(
        &mut self,
        ctx: &HeaderCtx,
        sector: &[u8],
        daddr: Daddr,
        crc_off: usize,
        uuid_off: usize,
        lsn: u64,
    ) -> Option<u32> {
        if !ctx.features.v5 {
            return None;
        }
        let v = verify_v5(
            sector,
            &V5Check {
                structure: "AG header",
                daddr,
                crc_off,
                uuid: &ctx.meta_uuid,
                uuid_off,
                blkno_off: None,
                owner: None,
            },
        );
        if !v.crc_ok {
            let stored = crate::xfs::fs::be32(sector, crc_off).map(u32::swap_bytes);
            self.warn(
                "crc",
                format!(
                    "stored {}, computed {:#010x}",
                    stored.map_or("?".into(), |s| format!("{s:#010x}")),
                    crate::xfs::sb::crc_with_hole(sector, crc_off)
                ),
            );
        }
        for p in v.problems.into_iter().filter(|p| p.starts_with("uuid")) {
            self.warn("uuid", p);
        }
        self.lsn(ctx, lsn);
        Some(crate::xfs::sb::crc_with_hole(sector, crc_off))
    }

    fn lsn(&mut self, ctx: &HeaderCtx, lsn: u64) {
        if lsn == 0 {
            return;
        }
        let l = Lsn::from_raw(lsn);
        if l.cycle == 0 || u64::from(l.block) >= ctx.log_bbs {
            self.warn(
                "lsn",
                format!(
                    "{l} does not name a place in the log ({} sectors)",
                    ctx.log_bbs
                ),
            );
        }
    }

    fn root(&mut self, ctx: &HeaderCtx, field: &'static str, root: u32) {
        if !ctx.valid_agbno(root) {
            self.warn(
                field,
                format!(
                    "{} is not a block of this AG after its headers ({}..{})",
                    null_or(root),
                    ctx.first_block,
                    ctx.expected_length
                ),
            );
        }
    }

    fn level(&mut self, field: &'static str, level: u32) {
        if !(1..=MAX_AG_BTREE_LEVELS).contains(&level) {
            self.warn(field, format!("{level} is not 1 to {MAX_AG_BTREE_LEVELS}"));
        }
    }
}

fn null_or(v: u32) -> String {
    if v == u32::MAX {
        "null".into()
    } else {
        v.to_string()
    }
}

fn crc_note(crc: u32, computed: Option<u32>) -> String {
    match computed {
        Some(c) if c == crc => format!("{crc:#010x}, correct"),
        Some(c) => format!("{crc:#010x}, BAD: computed {c:#010x}"),
        None => format!("{crc:#010x}, not checked"),
    }
}

/// Builds a field list.
struct Fields(Vec<Field>);

impl Fields {
    fn num(
        &mut self,
        name: &'static str,
        offset: u16,
        size: u16,
        v: u64,
        meaning: &'static str,
        note: Option<String>,
    ) {
        self.0.push(Field {
            name,
            value: FieldValue::Num(v),
            offset,
            size,
            meaning,
            note,
        });
    }
    fn text(
        &mut self,
        name: &'static str,
        offset: u16,
        size: u16,
        v: String,
        meaning: &'static str,
        note: Option<String>,
    ) {
        self.0.push(Field {
            name,
            value: FieldValue::Text(v),
            offset,
            size,
            meaning,
            note,
        });
    }
}

fn null_note(v: u32) -> Option<String> {
    (v == u32::MAX).then(|| "null".to_string())
}

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

fn tree_root(tree: AgTree, ctx: &HeaderCtx, root: u32, levels: u32) -> TreeRoot {
    TreeRoot {
        tree,
        agno: ctx.agno,
        root: AgBlock(root),
        levels,
        ag_length: ctx.expected_length,
        first_block: ctx.first_block,
    }
}

/// The AGI: inode bookkeeping of one AG.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Agi {
    pub agno: AgNumber,
    pub daddr: Daddr,
    pub v5: bool,
    pub magicnum: u32,
    pub versionnum: u32,
    pub seqno: u32,
    pub length: u32,
    pub count: u32,
    pub root: u32,
    pub level: u32,
    pub freecount: u32,
    pub newino: u32,
    pub dirino: u32,
    pub unlinked: Vec<u32>,
    pub uuid: [u8; 16],
    pub crc: u32,
    pub lsn: u64,
    pub free_root: u32,
    pub free_level: u32,
    /// `agi_iblocks`.
    pub ino_blocks: u32,
    /// `agi_fblocks`.
    pub fino_blocks: u32,
    pub computed_crc: Option<u32>,
    pub problems: Vec<Problem>,
}

impl Agi {
    pub fn parse(sector: &[u8], daddr: Daddr, ctx: &HeaderCtx) -> Result<Agi> {
        let (d, _) = XfsAgi::ref_from_prefix(sector)
            .map_err(|_| short_sector("AGI", daddr, sector.len(), XFS_AGI_SIZE))?;
        let mut a = Agi {
            agno: ctx.agno,
            daddr,
            v5: ctx.features.v5,
            magicnum: d.agi_magicnum.get(),
            versionnum: d.agi_versionnum.get(),
            seqno: d.agi_seqno.get(),
            length: d.agi_length.get(),
            count: d.agi_count.get(),
            root: d.agi_root.get(),
            level: d.agi_level.get(),
            freecount: d.agi_freecount.get(),
            newino: d.agi_newino.get(),
            dirino: d.agi_dirino.get(),
            unlinked: d.agi_unlinked.iter().map(|u| u.get()).collect(),
            uuid: d.agi_uuid,
            crc: d.agi_crc.get(),
            lsn: d.agi_lsn.get(),
            free_root: d.agi_free_root.get(),
            free_level: d.agi_free_level.get(),
            ino_blocks: d.agi_iblocks.get(),
            fino_blocks: d.agi_fblocks.get(),
            computed_crc: None,
            problems: Vec::new(),
        };
        let mut c = Checker { p: Vec::new() };
        c.common(
            ctx,
            (a.magicnum, XFS_AGI_MAGIC),
            Some((a.versionnum, XFS_AGI_VERSION)),
            a.seqno,
            Some(a.length),
        );
        a.computed_crc = c.v5(ctx, sector, daddr, XFS_AGI_CRC_OFF, XFS_AGI_UUID_OFF, a.lsn);
        c.root(ctx, "root", a.root);
        c.level("level", a.level);
        if ctx.features.finobt {
            c.root(ctx, "free_root", a.free_root);
            c.level("free_level", a.free_level);
        }
        if a.freecount > a.count {
            c.warn(
                "freecount",
                format!("{} exceeds count {}", a.freecount, a.count),
            );
        }
        let agino_ok = |ino: u32| {
            let block = ino.checked_shr(u32::from(ctx.inopblog)).unwrap_or(u32::MAX);
            ino != 0 && block >= ctx.first_block && block < ctx.expected_length
        };
        if a.newino != NULLAGINO && !agino_ok(a.newino) {
            c.warn("newino", format!("{} is not an inode of this AG", a.newino));
        }
        for (bucket, &head) in a.unlinked.iter().enumerate() {
            if head == NULLAGINO {
                continue;
            }
            if !agino_ok(head) {
                c.warn(
                    "unlinked",
                    format!("bucket {bucket}: {head} is not an inode of this AG"),
                );
            } else if usize::try_from(head % 64).ok() != Some(bucket) {
                c.warn(
                    "unlinked",
                    format!(
                        "bucket {bucket} holds inode {head}, which hashes to bucket {}",
                        head % 64
                    ),
                );
            }
        }
        if ctx.features.inobtcount {
            for (field, v) in [("ino_blocks", a.ino_blocks), ("fino_blocks", a.fino_blocks)] {
                if v > a.length {
                    c.warn(field, format!("{v} exceeds the AG length {}", a.length));
                }
            }
        }
        a.problems = c.p;
        Ok(a)
    }

    pub fn crc_ok(&self) -> Option<bool> {
        self.computed_crc.map(|c| c == self.crc)
    }

    pub fn usable(&self) -> bool {
        !self.problems.iter().any(|p| p.severity == Severity::Fatal)
    }

    /// The non-empty unlinked buckets as (bucket, first AG inode).
    pub fn unlinked_heads(&self) -> Vec<(usize, u32)> {
        self.unlinked
            .iter()
            .enumerate()
            .filter(|(_, &h)| h != NULLAGINO)
            .map(|(i, &h)| (i, h))
            .collect()
    }

    pub fn fields(&self) -> Vec<Field> {
        let mut f = Fields(Vec::with_capacity(20));
        let v = |x: u32| u64::from(x);
        f.num(
            "magicnum",
            0,
            4,
            v(self.magicnum),
            "magic number, \"XAGI\"",
            Some(btree::magic_text(self.magicnum)),
        );
        f.num(
            "versionnum",
            4,
            4,
            v(self.versionnum),
            "AGI format version (1)",
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
            "count",
            16,
            4,
            v(self.count),
            "inodes allocated in chunks (used and free)",
            None,
        );
        f.num(
            "root",
            20,
            4,
            v(self.root),
            "root block of the inode btree",
            null_note(self.root),
        );
        f.num(
            "level",
            24,
            4,
            v(self.level),
            "height of the inode btree, 1 = the root is a leaf",
            None,
        );
        f.num(
            "freecount",
            28,
            4,
            v(self.freecount),
            "free inodes in allocated chunks",
            None,
        );
        f.num(
            "newino",
            32,
            4,
            v(self.newino),
            "first inode of the most recently allocated chunk",
            null_note(self.newino),
        );
        f.num(
            "dirino",
            36,
            4,
            v(self.dirino),
            "unused (null)",
            null_note(self.dirino),
        );
        let heads = self.unlinked_heads();
        let text = if heads.is_empty() {
            "none".to_string()
        } else {
            heads
                .iter()
                .map(|(b, h)| format!("{b}:{h}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        f.text(
            "unlinked",
            40,
            256,
            text,
            "heads of the 64 unlinked-inode lists (bucket:agino; bucket = agino % 64)",
            Some(format!("{} of 64 lists in use", heads.len())),
        );
        if self.v5 {
            f.text(
                "uuid",
                296,
                16,
                uuid_text(&self.uuid),
                "filesystem UUID stamped in metadata",
                None,
            );
            f.num(
                "crc",
                312,
                4,
                v(self.crc),
                "CRC32c of the AGI sector",
                Some(crc_note(self.crc, self.computed_crc)),
            );
            f.num(
                "lsn",
                320,
                8,
                self.lsn,
                "log sequence number of the last logged write",
                Some(Lsn::from_raw(self.lsn).to_string()),
            );
        }
        f.num(
            "free_root",
            328,
            4,
            v(self.free_root),
            "root block of the free inode btree (FINOBT)",
            null_note(self.free_root),
        );
        f.num(
            "free_level",
            332,
            4,
            v(self.free_level),
            "height of the free inode btree",
            None,
        );
        f.num(
            "ino_blocks",
            336,
            4,
            v(self.ino_blocks),
            "blocks of the inode btree (agi_iblocks, INOBTCNT)",
            None,
        );
        f.num(
            "fino_blocks",
            340,
            4,
            v(self.fino_blocks),
            "blocks of the free inode btree (agi_fblocks, INOBTCNT)",
            None,
        );
        f.0
    }

    /// Where the inode btree (`Ino`) or free inode btree (`Fino`) starts.
    pub fn tree_root(&self, tree: AgTree, ctx: &HeaderCtx) -> Option<TreeRoot> {
        if !self.usable() {
            return None;
        }
        let (root, levels) = match tree {
            AgTree::Ino => (self.root, self.level),
            AgTree::Fino => (self.free_root, self.free_level),
            _ => return None,
        };
        Some(tree_root(tree, ctx, root, levels))
    }
}

/// The AG free list: blocks set aside to refill the free-space and rmap
/// btrees. v5 has a header; v4 is only the array.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Agfl {
    pub agno: AgNumber,
    pub daddr: Daddr,
    pub v5: bool,
    /// v5 header fields (zero on v4, which has no header).
    pub magicnum: u32,
    pub seqno: u32,
    pub uuid: [u8; 16],
    pub lsn: u64,
    pub crc: u32,
    pub computed_crc: Option<u32>,
    /// Every slot (`agfl_bno[]`), in use or not.
    pub bno: Vec<u32>,
    pub problems: Vec<Problem>,
}

/// The blocks on the free list, from `flfirst` to `fllast`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FreeList {
    pub blocks: Vec<u32>,
    /// Why the list (or some entry) cannot be trusted.
    pub problems: Vec<String>,
}

impl Agfl {
    pub fn parse(sector: &[u8], daddr: Daddr, ctx: &HeaderCtx) -> Result<Agfl> {
        let hdr = if ctx.features.v5 {
            XFS_AGFL_HDR_SIZE
        } else {
            0
        };
        let need = usize::from(ctx.sectsize);
        if sector.len() < need || need < hdr {
            return Err(short_sector("AGFL", daddr, sector.len(), need));
        }
        let slots = sector.get(hdr..need).unwrap_or(&[]);
        let bno: Vec<u32> = slots
            .chunks_exact(4)
            .filter_map(|c| <[u8; 4]>::try_from(c).ok())
            .map(u32::from_be_bytes)
            .collect();
        let mut a = Agfl {
            agno: ctx.agno,
            daddr,
            v5: ctx.features.v5,
            magicnum: 0,
            seqno: 0,
            uuid: [0; 16],
            lsn: 0,
            crc: 0,
            computed_crc: None,
            bno,
            problems: Vec::new(),
        };
        if ctx.features.v5 {
            let (d, _) = XfsAgfl::ref_from_prefix(sector)
                .map_err(|_| short_sector("AGFL", daddr, sector.len(), XFS_AGFL_HDR_SIZE))?;
            a.magicnum = d.agfl_magicnum.get();
            a.seqno = d.agfl_seqno.get();
            a.uuid = d.agfl_uuid;
            a.lsn = d.agfl_lsn.get();
            a.crc = d.agfl_crc.get();
            let mut c = Checker { p: Vec::new() };
            c.common(ctx, (a.magicnum, XFS_AGFL_MAGIC), None, a.seqno, None);
            a.computed_crc = c.v5(
                ctx,
                sector.get(..need).unwrap_or(sector),
                daddr,
                XFS_AGFL_CRC_OFF,
                XFS_AGFL_UUID_OFF,
                a.lsn,
            );
            a.problems = c.p;
        }
        Ok(a)
    }

    pub fn crc_ok(&self) -> Option<bool> {
        self.computed_crc.map(|c| c == self.crc)
    }

    /// The blocks on the free list according to the AGF's `flfirst`,
    /// `fllast` and `flcount`, wrapping around the end of the array. When
    /// the three do not agree the way the kernel requires
    /// (`xfs_agfl_needs_reset`), the list is empty and the reason is given.
    pub fn free_list(&self, agf: &Agf, ctx: &HeaderCtx) -> FreeList {
        let size = u32::try_from(self.bno.len()).unwrap_or(u32::MAX);
        let (f, l, c) = (agf.flfirst, agf.fllast, agf.flcount);
        let mut problems = Vec::new();
        if f >= size || l >= size || c > size {
            problems.push(format!(
                "flfirst {f}, fllast {l}, flcount {c} do not fit the {size} AGFL slots"
            ));
            return FreeList {
                blocks: Vec::new(),
                problems,
            };
        }
        let active = if c == 0 {
            0
        } else if l >= f {
            l.saturating_sub(f).saturating_add(1)
        } else {
            size.saturating_sub(f).saturating_add(l).saturating_add(1)
        };
        if active != c {
            problems.push(format!(
                "flfirst {f} to fllast {l} spans {active} slots but flcount is {c}; the kernel would reset this list"
            ));
            return FreeList {
                blocks: Vec::new(),
                problems,
            };
        }
        let mut blocks = Vec::with_capacity(usize::try_from(c).unwrap_or(0));
        let mut i = f;
        for _ in 0..c {
            let b = self
                .bno
                .get(usize::try_from(i).unwrap_or(usize::MAX))
                .copied()
                .unwrap_or(NULLAGBLOCK);
            if !ctx.valid_agbno(b) {
                problems.push(format!(
                    "slot {i}: {} is not a usable block of this AG",
                    null_or(b)
                ));
            }
            blocks.push(b);
            i = i.saturating_add(1);
            if i >= size {
                i = 0;
            }
        }
        FreeList { blocks, problems }
    }

    /// Header fields (v5) and the slot array, with meanings.
    pub fn fields(&self) -> Vec<Field> {
        let mut f = Fields(Vec::with_capacity(6));
        let mut off: u16 = 0;
        if self.v5 {
            f.num(
                "magicnum",
                0,
                4,
                self.magicnum.into(),
                "magic number, \"XAFL\"",
                Some(btree::magic_text(self.magicnum)),
            );
            f.num(
                "seqno",
                4,
                4,
                self.seqno.into(),
                "number of the AG this list belongs to",
                None,
            );
            f.text(
                "uuid",
                8,
                16,
                uuid_text(&self.uuid),
                "filesystem UUID stamped in metadata",
                None,
            );
            f.num(
                "lsn",
                24,
                8,
                self.lsn,
                "log sequence number of the last logged write",
                Some(Lsn::from_raw(self.lsn).to_string()),
            );
            f.num(
                "crc",
                32,
                4,
                self.crc.into(),
                "CRC32c of the AGFL sector",
                Some(crc_note(self.crc, self.computed_crc)),
            );
            off = 36;
        }
        let used: Vec<String> = self
            .bno
            .iter()
            .enumerate()
            .filter(|(_, &b)| b != NULLAGBLOCK)
            .map(|(i, b)| format!("{i}:{b}"))
            .collect();
        let size = u16::try_from(self.bno.len().saturating_mul(4)).unwrap_or(u16::MAX);
        f.text(
            "bno",
            off,
            size,
            if used.is_empty() {
                "all null".into()
            } else {
                used.join(" ")
            },
            "free-list slots (slot:block; unused slots are null)",
            Some(format!("{} slots", self.bno.len())),
        );
        f.0
    }
}

/// Read and parse the AGF of AG `agno`.
pub fn read_agf<R: ReadAt>(fs: &Fs<R>, ctx: &HeaderCtx) -> Result<Agf> {
    let (daddr, bytes) = fs.read_ag_header("AGF", ctx.agno, AGF_SECTOR)?;
    Agf::parse(&bytes, daddr, ctx)
}

/// Read and parse the AGI of AG `agno`.
pub fn read_agi<R: ReadAt>(fs: &Fs<R>, ctx: &HeaderCtx) -> Result<Agi> {
    let (daddr, bytes) = fs.read_ag_header("AGI", ctx.agno, AGI_SECTOR)?;
    Agi::parse(&bytes, daddr, ctx)
}

/// Read and parse the AGFL of AG `agno`.
pub fn read_agfl<R: ReadAt>(fs: &Fs<R>, ctx: &HeaderCtx) -> Result<Agfl> {
    let (daddr, bytes) = fs.read_ag_header("AGFL", ctx.agno, AGFL_SECTOR)?;
    Agfl::parse(&bytes, daddr, ctx)
}

/// What a tree holds, by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum TreeStats {
    /// bnobt and cntbt.
    Free { free_blocks: u64, longest: u32 },
    /// inobt and finobt.
    Inodes {
        chunks: u64,
        sparse_chunks: u64,
        inodes: u64,
        free: u64,
    },
    /// rmapbt.
    Rmap { mapped_blocks: u64 },
    /// refcountbt.
    Refcount {
        shared_extents: u64,
        shared_blocks: u64,
        cow_extents: u64,
        cow_blocks: u64,
    },
}

impl TreeStats {
    fn empty(tree: AgTree) -> Self {
        match tree {
            AgTree::Bno | AgTree::Cnt => TreeStats::Free {
                free_blocks: 0,
                longest: 0,
            },
            AgTree::Ino | AgTree::Fino => TreeStats::Inodes {
                chunks: 0,
                sparse_chunks: 0,
                inodes: 0,
                free: 0,
            },
            AgTree::Rmap => TreeStats::Rmap { mapped_blocks: 0 },
            AgTree::Refcount => TreeStats::Refcount {
                shared_extents: 0,
                shared_blocks: 0,
                cow_extents: 0,
                cow_blocks: 0,
            },
        }
    }

    fn add(&mut self, r: &Record) {
        let add = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        match (self, r) {
            (
                TreeStats::Free {
                    free_blocks,
                    longest,
                },
                Record::Alloc(a),
            ) => {
                add(free_blocks, a.blockcount.into());
                *longest = (*longest).max(a.blockcount);
            }
            (
                TreeStats::Inodes {
                    chunks,
                    sparse_chunks,
                    inodes,
                    free,
                },
                Record::Inobt(c),
            ) => {
                add(chunks, 1);
                if c.holemask != 0 {
                    add(sparse_chunks, 1);
                }
                add(inodes, c.count.into());
                add(free, c.freecount.into());
            }
            (TreeStats::Rmap { mapped_blocks }, Record::Rmap(m)) => {
                add(mapped_blocks, m.blockcount.into());
            }
            (
                TreeStats::Refcount {
                    shared_extents,
                    shared_blocks,
                    cow_extents,
                    cow_blocks,
                },
                Record::Refcount(c),
            ) => {
                if c.cow {
                    add(cow_extents, 1);
                    add(cow_blocks, c.blockcount.into());
                } else {
                    add(shared_extents, 1);
                    add(shared_blocks, c.blockcount.into());
                }
            }
            _ => {}
        }
    }
}

/// One tree of an AG, walked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TreeSummary {
    pub tree: AgTree,
    pub root: u32,
    /// The height the header claims.
    pub levels: u32,
    pub blocks: u64,
    pub blocks_per_level: Vec<u64>,
    pub records: u64,
    pub keys: u64,
    pub stats: TreeStats,
    /// For the inobt: chunks that have free inodes (the finobt's records).
    pub chunks_with_free: u64,
    pub problems: Vec<String>,
}

/// Walk one tree and count what it holds.
pub fn summarize_tree<R: ReadAt>(fs: &Fs<R>, root: &TreeRoot) -> TreeSummary {
    let mut stats = TreeStats::empty(root.tree);
    let mut with_free = 0u64;
    let report = btree::walk(fs, root, &mut |b| {
        if let BlockContent::Leaf(recs) = &b.content {
            for r in recs {
                stats.add(r);
                if let Record::Inobt(c) = r {
                    if c.freecount > 0 {
                        with_free = with_free.saturating_add(1);
                    }
                }
            }
        }
        ControlFlow::Continue(())
    });
    TreeSummary {
        tree: root.tree,
        root: root.root.0,
        levels: root.levels,
        blocks: report.blocks,
        blocks_per_level: report.blocks_per_level,
        records: report.records,
        keys: report.keys,
        stats,
        chunks_with_free: with_free,
        problems: report.problems,
    }
}

/// Everything about one AG: its headers, the free list, a summary of each
/// btree, and what disagrees.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AgSummary {
    pub agno: AgNumber,
    pub agf: Option<Agf>,
    pub agf_error: Option<String>,
    pub agi: Option<Agi>,
    pub agi_error: Option<String>,
    pub agfl: Option<Agfl>,
    pub agfl_error: Option<String>,
    pub free_list: Option<FreeList>,
    pub trees: Vec<TreeSummary>,
    /// Cross-checks between headers and trees that failed.
    pub problems: Vec<String>,
}

impl AgSummary {
    pub fn tree(&self, t: AgTree) -> Option<&TreeSummary> {
        self.trees.iter().find(|s| s.tree == t)
    }

    /// Every problem of the AG: header problems, tree problems and
    /// cross-check failures, as text.
    pub fn all_problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for e in [&self.agf_error, &self.agi_error, &self.agfl_error]
            .into_iter()
            .flatten()
        {
            out.push(e.clone());
        }
        let hdr = |name: &str, ps: &[Problem], out: &mut Vec<String>| {
            for p in ps {
                out.push(format!("{name} {}: {}", p.field, p.message));
            }
        };
        if let Some(a) = &self.agf {
            hdr("AGF", &a.problems, &mut out);
        }
        if let Some(a) = &self.agi {
            hdr("AGI", &a.problems, &mut out);
        }
        if let Some(a) = &self.agfl {
            hdr("AGFL", &a.problems, &mut out);
        }
        if let Some(fl) = &self.free_list {
            out.extend(fl.problems.iter().map(|p| format!("AGFL: {p}")));
        }
        for t in &self.trees {
            out.extend(t.problems.iter().cloned());
        }
        out.extend(self.problems.iter().cloned());
        out
    }
}

/// The inode chunks of AG `agno` from its inobt, in order, at most `cap`
/// of them (`report.stopped` says whether there were more). Each record
/// says which of its 64 inodes exist (sparse chunks) and which are free:
/// see [`btree::InobtRec::slots`].
pub fn inode_chunks<R: ReadAt>(
    fs: &Fs<R>,
    agno: AgNumber,
    cap: usize,
) -> Result<(Vec<btree::InobtRec>, btree::WalkReport)> {
    let ctx = HeaderCtx::new(fs, agno)?;
    let agi = read_agi(fs, &ctx)?;
    let root = agi.tree_root(AgTree::Ino, &ctx).ok_or_else(|| {
        Error::corrupt(
            "AGI",
            Location::Daddr { daddr: agi.daddr.0 },
            format!(
                "AG {}: the AGI is unusable, its inobt root is not read",
                agno.0
            ),
        )
    })?;
    let (recs, report) = btree::records(fs, &root, cap);
    let chunks = recs
        .into_iter()
        .filter_map(|r| match r {
            Record::Inobt(c) => Some(c),
            _ => None,
        })
        .collect();
    Ok((chunks, report))
}

fn split<T>(r: Result<T>) -> (Option<T>, Option<String>) {
    match r {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e.to_string())),
    }
}

/// Read the headers of AG `agno`, walk each of its btrees, and cross-check.
pub fn summarize<R: ReadAt>(fs: &Fs<R>, agno: AgNumber) -> Result<AgSummary> {
    let ctx = HeaderCtx::new(fs, agno)?;
    let (agf, agf_error) = split(read_agf(fs, &ctx));
    let (agi, agi_error) = split(read_agi(fs, &ctx));
    let (agfl, agfl_error) = split(read_agfl(fs, &ctx));
    let free_list = match (&agf, &agfl) {
        (Some(f), Some(l)) if f.usable() => Some(l.free_list(f, &ctx)),
        _ => None,
    };
    let mut trees = Vec::new();
    for t in ctx.features.trees() {
        let root = match t {
            AgTree::Ino | AgTree::Fino => agi.as_ref().and_then(|a| a.tree_root(t, &ctx)),
            _ => agf.as_ref().and_then(|a| a.tree_root(t, &ctx)),
        };
        if let Some(root) = root {
            trees.push(summarize_tree(fs, &root));
        }
    }
    let mut s = AgSummary {
        agno,
        agf,
        agf_error,
        agi,
        agi_error,
        agfl,
        agfl_error,
        free_list,
        trees,
        problems: Vec::new(),
    };
    s.problems = cross_check(&s, &ctx);
    Ok(s)
}

fn cross_check(s: &AgSummary, ctx: &HeaderCtx) -> Vec<String> {
    let mut p = Vec::new();
    let free = |t: AgTree| match s.tree(t).map(|x| x.stats) {
        Some(TreeStats::Free {
            free_blocks,
            longest,
        }) => Some((free_blocks, longest)),
        _ => None,
    };
    let inodes = |t: AgTree| match s.tree(t).map(|x| x.stats) {
        Some(TreeStats::Inodes {
            chunks,
            inodes,
            free,
            ..
        }) => Some((chunks, inodes, free)),
        _ => None,
    };
    if let Some(agf) = &s.agf {
        let bno = free(AgTree::Bno);
        let cnt = free(AgTree::Cnt);
        if let (Some((bf, _)), Some((cf, cl))) = (bno, cnt) {
            if bf != cf {
                p.push(format!("bnobt holds {bf} free blocks but cntbt holds {cf}"));
            }
            let (br, cr) = (
                s.tree(AgTree::Bno).map_or(0, |t| t.records),
                s.tree(AgTree::Cnt).map_or(0, |t| t.records),
            );
            if br != cr {
                p.push(format!("bnobt has {br} free extents but cntbt has {cr}"));
            }
            if bf != u64::from(agf.freeblks) {
                p.push(format!(
                    "the free-space btrees hold {bf} free blocks but AGF freeblks is {}",
                    agf.freeblks
                ));
            }
            if cl != agf.longest {
                p.push(format!(
                    "the longest free extent is {cl} blocks but AGF longest is {}",
                    agf.longest
                ));
            }
        }
        let blocks = |t: AgTree| s.tree(t).map(|x| x.blocks);
        if ctx.features.rmapbt {
            if let Some(b) = blocks(AgTree::Rmap) {
                if b != u64::from(agf.rmapblocks) {
                    p.push(format!(
                        "rmapbt has {b} blocks but AGF rmapblocks is {}",
                        agf.rmapblocks
                    ));
                }
            }
        }
        if ctx.features.reflink {
            if let Some(b) = blocks(AgTree::Refcount) {
                if b != u64::from(agf.refcntblocks) {
                    p.push(format!(
                        "refcountbt has {b} blocks but AGF refcntblocks is {}",
                        agf.refcntblocks
                    ));
                }
            }
        }
        if ctx.features.lazysbcount {
            let mut trees = vec![AgTree::Bno, AgTree::Cnt];
            if ctx.features.rmapbt {
                trees.push(AgTree::Rmap);
            }
            let clean = trees
                .iter()
                .all(|t| s.tree(*t).is_some_and(|x| x.problems.is_empty()));
            if clean {
                let extra: u64 = trees
                    .iter()
                    .filter_map(|t| blocks(*t))
                    .map(|b| b.saturating_sub(1))
                    .sum();
                if extra != u64::from(agf.btreeblks) {
                    p.push(format!(
                        "the bno/cnt{} btrees have {extra} blocks besides their roots but AGF btreeblks is {}",
                        if ctx.features.rmapbt { "/rmap" } else { "" },
                        agf.btreeblks
                    ));
                }
            }
        }
        if let Some(fl) = &s.free_list {
            if fl.problems.is_empty()
                && u64::try_from(fl.blocks.len()).ok() != Some(u64::from(agf.flcount))
            {
                p.push(format!(
                    "the free list holds {} blocks but AGF flcount is {}",
                    fl.blocks.len(),
                    agf.flcount
                ));
            }
        }
    }
    if let Some(agi) = &s.agi {
        if let Some((chunks, n, f)) = inodes(AgTree::Ino) {
            if n != u64::from(agi.count) {
                p.push(format!(
                    "the inobt holds {n} inodes in {chunks} chunks but AGI count is {}",
                    agi.count
                ));
            }
            if f != u64::from(agi.freecount) {
                p.push(format!(
                    "the inobt has {f} free inodes but AGI freecount is {}",
                    agi.freecount
                ));
            }
            if let Some((fchunks, _, ff)) = inodes(AgTree::Fino) {
                if ff != f {
                    p.push(format!(
                        "the finobt has {ff} free inodes but the inobt has {f}"
                    ));
                }
                let want = s.tree(AgTree::Ino).map_or(0, |t| t.chunks_with_free);
                if fchunks != want {
                    p.push(format!(
                        "the finobt has {fchunks} chunks but {want} inobt chunks have free inodes"
                    ));
                }
            }
        }
        if ctx.features.inobtcount {
            for (t, want, name) in [
                (AgTree::Ino, agi.ino_blocks, "ino_blocks"),
                (AgTree::Fino, agi.fino_blocks, "fino_blocks"),
            ] {
                if let Some(x) = s.tree(t) {
                    if x.blocks != u64::from(want) {
                        p.push(format!(
                            "the {} has {} blocks but AGI {name} is {want}",
                            t.btree_name(),
                            x.blocks
                        ));
                    }
                }
            }
        }
    }
    p
}

/// Daddr of the first sector of an AG block, for display.
pub fn agblock_daddr<R: ReadAt>(fs: &Fs<R>, agno: AgNumber, agbno: u32) -> Option<Daddr> {
    fs.geo.agb_to_daddr(agno, AgBlock(agbno))
}

/// Real bytes from the committed fixtures, for the unit tests.
#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]
pub(crate) mod testing {
    use crate::xfs::fs::Fs;
    use crate::xfs::image::Image;
    use std::io::Read;

    /// The first `len` bytes of fixture `name` (tests/fixtures/NAME.img.zst).
    pub fn fixture_head(name: &str, len: u64) -> Vec<u8> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(format!("{name}.img.zst"));
        let f = std::fs::File::open(&p).unwrap();
        let dec = ruzstd::decoding::StreamingDecoder::new(std::io::BufReader::new(f)).unwrap();
        let mut out = Vec::new();
        dec.take(len).read_to_end(&mut out).unwrap();
        out
    }

    pub fn fixture_fs(bytes: Vec<u8>) -> Fs<Vec<u8>> {
        Fs::open(Image::new(bytes)).unwrap()
    }

    /// Recompute the little-endian CRC at `crc_off` over all of `buf`.
    pub fn fix_crc(buf: &mut [u8], crc_off: usize) {
        let c = crate::xfs::sb::crc_with_hole(buf, crc_off);
        buf[crc_off..crc_off + 4].copy_from_slice(&c.to_le_bytes());
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects,
    clippy::as_conversions
)]
mod tests {
    use super::testing::{fix_crc, fixture_fs, fixture_head};
    use super::*;

    /// `v5-1k-rmap`: 512-byte sectors, 1 KiB blocks, AGF/AGI/AGFL of AG 0
    /// at daddr 1, 2, 3.
    fn v5() -> Vec<u8> {
        fixture_head("v5-1k-rmap", 256 << 10)
    }
    fn v4() -> Vec<u8> {
        fixture_head("v4", 256 << 10)
    }

    fn sector(img: &[u8], n: usize) -> &[u8] {
        &img[n * 512..(n + 1) * 512]
    }

    fn ctx_of(img: &[u8]) -> HeaderCtx {
        let fs = fixture_fs(img.to_vec());
        HeaderCtx::new(&fs, AgNumber(0)).unwrap()
    }

    fn agf_of(img: &[u8]) -> Agf {
        Agf::parse(sector(img, 1), Daddr(1), &ctx_of(img)).unwrap()
    }

    fn put32(img: &mut [u8], off: usize, v: u32) {
        img[off..off + 4].copy_from_slice(&v.to_be_bytes());
    }

    fn resum_sector(img: &mut [u8], n: usize, crc_off: usize) {
        fix_crc(&mut img[n * 512..(n + 1) * 512], crc_off);
    }

    #[test]
    fn real_v5_headers_parse_clean() {
        let img = v5();
        let ctx = ctx_of(&img);
        assert_eq!(ctx.first_block, 2);
        assert_eq!(ctx.agfl_size(), 119);
        let agf = agf_of(&img);
        assert!(agf.problems.is_empty(), "{:?}", agf.problems);
        assert_eq!(agf.crc_ok(), Some(true));
        let names: Vec<&str> = agf.fields().iter().map(|f| f.name).collect();
        assert_eq!(
            names,
            [
                "magicnum",
                "versionnum",
                "seqno",
                "length",
                "bnoroot",
                "cntroot",
                "rmaproot",
                "bnolevel",
                "cntlevel",
                "rmaplevel",
                "flfirst",
                "fllast",
                "flcount",
                "freeblks",
                "longest",
                "btreeblks",
                "uuid",
                "rmapblocks",
                "refcntblocks",
                "refcntroot",
                "refcntlevel",
                "lsn",
                "crc"
            ]
        );
        let agi = Agi::parse(sector(&img, 2), Daddr(2), &ctx).unwrap();
        assert!(agi.problems.is_empty(), "{:?}", agi.problems);
        assert_eq!(agi.crc_ok(), Some(true));
        assert_eq!(agi.unlinked.len(), 64);
        assert!(agi.fields().iter().any(|f| f.name == "fino_blocks"));
        let agfl = Agfl::parse(sector(&img, 3), Daddr(3), &ctx).unwrap();
        assert!(agfl.problems.is_empty(), "{:?}", agfl.problems);
        assert_eq!(agfl.crc_ok(), Some(true));
        assert_eq!(agfl.bno.len(), 119);
        let fl = agfl.free_list(&agf, &ctx);
        assert!(fl.problems.is_empty(), "{:?}", fl.problems);
        assert_eq!(fl.blocks.len(), agf.flcount as usize);
    }

    #[test]
    fn v4_headers_have_no_crc_and_a_headerless_agfl() {
        let img = v4();
        let ctx = ctx_of(&img);
        assert_eq!(ctx.agfl_size(), 128);
        let agf = agf_of(&img);
        assert!(agf.problems.is_empty(), "{:?}", agf.problems);
        assert_eq!(agf.crc_ok(), None);
        assert!(!agf
            .fields()
            .iter()
            .any(|f| ["uuid", "lsn", "crc"].contains(&f.name)));
        let agfl = Agfl::parse(sector(&img, 3), Daddr(3), &ctx).unwrap();
        assert_eq!(agfl.bno.len(), 128);
        assert_eq!(agfl.fields().len(), 1);
        assert_eq!(
            agfl.free_list(&agf, &ctx).blocks.len(),
            agf.flcount as usize
        );
    }

    #[test]
    fn bad_magic_makes_the_agf_unusable() {
        let mut img = v5();
        img[512..516].copy_from_slice(b"XXXX");
        let agf = agf_of(&img);
        assert!(!agf.usable());
        assert!(agf
            .problems
            .iter()
            .any(|p| p.field == "magicnum" && p.severity == Severity::Fatal));
        assert!(agf.tree_root(AgTree::Bno, &ctx_of(&img)).is_none());
        let s = summarize(&fixture_fs(img), AgNumber(0)).unwrap();
        assert!(s.tree(AgTree::Bno).is_none());
        assert!(s.tree(AgTree::Ino).is_some());
        assert!(s
            .all_problems()
            .iter()
            .any(|p| p.starts_with("AGF magicnum: 0x58585858 (XXXX) is not 0x58414746 (XAGF)")));
    }

    #[test]
    fn a_bad_crc_is_a_warning() {
        let mut img = v5();
        img[512 + 300] ^= 1;
        let agf = agf_of(&img);
        assert!(agf.usable());
        assert_eq!(agf.crc_ok(), Some(false));
        assert!(agf.problems.iter().any(|p| p.field == "crc"));
    }

    #[test]
    fn wrong_seqno_length_uuid_and_levels_are_named() {
        let mut img = v5();
        put32(&mut img, 512 + 8, 7); // seqno
        put32(&mut img, 512 + 12, 99); // length
        img[512 + 64] ^= 0xff; // uuid
        put32(&mut img, 512 + 28, 0); // bnolevel
        put32(&mut img, 512 + 32, 12); // cntlevel
        put32(&mut img, 512 + 16, 1); // bnoroot inside the headers
        resum_sector(&mut img, 1, XFS_AGF_CRC_OFF);
        let agf = agf_of(&img);
        let fields: Vec<&str> = agf.problems.iter().map(|p| p.field).collect();
        for f in ["seqno", "length", "uuid", "bnolevel", "cntlevel", "bnoroot"] {
            assert!(fields.contains(&f), "{f} missing from {:?}", agf.problems);
        }
        assert!(agf.usable());
        let s = summarize(&fixture_fs(img), AgNumber(0)).unwrap();
        let bno = s.tree(AgTree::Bno).unwrap();
        assert!(bno.problems[0].contains("height 0"), "{:?}", bno.problems);
        let cnt = s.tree(AgTree::Cnt).unwrap();
        assert!(cnt.problems[0].contains("height 12"), "{:?}", cnt.problems);
    }

    #[test]
    fn the_free_list_wraps_around_the_end() {
        let img = v5();
        let ctx = ctx_of(&img);
        let mut agf = agf_of(&img);
        let mut agfl = Agfl::parse(sector(&img, 3), Daddr(3), &ctx).unwrap();
        agfl.bno = (0..119).map(|i| 100 + i).collect();
        (agf.flfirst, agf.fllast, agf.flcount) = (117, 1, 4);
        let fl = agfl.free_list(&agf, &ctx);
        assert_eq!(fl.blocks, vec![217, 218, 100, 101]);
        assert!(fl.problems.is_empty());
        // flcount disagreeing with the range: the kernel resets the list.
        agf.flcount = 5;
        let fl = agfl.free_list(&agf, &ctx);
        assert!(fl.blocks.is_empty());
        assert!(fl.problems[0].contains("spans 4 slots but flcount is 5"));
        // Out of range.
        (agf.flfirst, agf.fllast, agf.flcount) = (119, 0, 1);
        assert!(agfl.free_list(&agf, &ctx).problems[0].contains("do not fit the 119"));
        // Empty list with flfirst one past fllast is fine.
        (agf.flfirst, agf.fllast, agf.flcount) = (3, 2, 0);
        let fl = agfl.free_list(&agf, &ctx);
        assert!(fl.blocks.is_empty() && fl.problems.is_empty());
        // A null slot inside the used range is named.
        (agf.flfirst, agf.fllast, agf.flcount) = (0, 1, 2);
        agfl.bno[1] = NULLAGBLOCK;
        assert!(agfl.free_list(&agf, &ctx).problems[0].contains("slot 1: null"));
    }

    #[test]
    fn counters_that_disagree_with_the_trees_are_reported() {
        let mut img = v5();
        put32(&mut img, 512 + 52, 16000); // agf_freeblks
        put32(&mut img, 512 + 60, 0); // agf_btreeblks (2 in AG 0)
        resum_sector(&mut img, 1, XFS_AGF_CRC_OFF);
        put32(&mut img, 1024 + 16, 65); // agi_count
        put32(&mut img, 1024 + 336, 9); // agi_iblocks
        resum_sector(&mut img, 2, XFS_AGI_CRC_OFF);
        let s = summarize(&fixture_fs(img), AgNumber(0)).unwrap();
        let all = s.problems.join("\n");
        assert!(all.contains("but AGF freeblks is 16000"), "{all}");
        assert!(all.contains("but AGF btreeblks is 0"), "{all}");
        assert!(
            all.contains("64 inodes in 1 chunks but AGI count is 65"),
            "{all}"
        );
        assert!(
            all.contains("the inobt has 1 blocks but AGI ino_blocks is 9"),
            "{all}"
        );
    }

    #[test]
    fn inode_chunks_list_every_slot() {
        let fs = fixture_fs(v5());
        let (chunks, rep) = inode_chunks(&fs, AgNumber(0), 100).unwrap();
        assert!(rep.problems.is_empty() && !rep.stopped);
        // xfs_db: recs[1] = 1:[64,0,64,13,0xfff8000000000000]
        assert_eq!(chunks.len(), 1);
        let c = chunks[0];
        assert_eq!((c.startino, c.count, c.freecount), (64, 64, 13));
        let free: Vec<u32> = c
            .slots()
            .filter(|(_, s)| *s == btree::InodeSlot::Free)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(free, (115..128).collect::<Vec<_>>());
    }

    #[test]
    fn a_clean_ag_summary_has_no_problems() {
        let s = summarize(&fixture_fs(v5()), AgNumber(0)).unwrap();
        assert_eq!(s.all_problems(), Vec::<String>::new());
        let trees: Vec<AgTree> = s.trees.iter().map(|t| t.tree).collect();
        assert_eq!(trees, AgTree::ALL);
        assert!(summarize(&fixture_fs(v5()), AgNumber(4)).is_err());
    }

    #[test]
    fn every_byte_flip_of_the_headers_parses_without_panic() {
        let img = v5();
        let ctx = ctx_of(&img);
        let agf0 = agf_of(&img);
        for n in 1..=3usize {
            for i in 0..512 {
                for bit in [0x01u8, 0x80, 0xff] {
                    let mut s = sector(&img, n).to_vec();
                    s[i] ^= bit;
                    match n {
                        1 => {
                            let a = Agf::parse(&s, Daddr(1), &ctx).unwrap();
                            let _ = a.fields();
                            let _ = a.tree_root(AgTree::Rmap, &ctx);
                        }
                        2 => {
                            let a = Agi::parse(&s, Daddr(2), &ctx).unwrap();
                            let _ = a.fields();
                        }
                        _ => {
                            let a = Agfl::parse(&s, Daddr(3), &ctx).unwrap();
                            let _ = a.fields();
                            let _ = a.free_list(&agf0, &ctx);
                        }
                    }
                }
            }
        }
        assert!(Agf::parse(&[0u8; 100], Daddr(1), &ctx).is_err());
        assert!(Agi::parse(&[0u8; 300], Daddr(2), &ctx).is_err());
        assert!(Agfl::parse(&[0u8; 300], Daddr(3), &ctx).is_err());
    }
}
