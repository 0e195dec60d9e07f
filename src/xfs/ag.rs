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
//!
//! | file | what |
//! |---|---|
//! | `ag.rs` | the AG's features and geometry (`HeaderCtx`), the field checker, reading the headers |
//! | `ag/agf.rs` | the AGF (`xfs_agf`) |
//! | `ag/agi.rs` | the AGI (`xfs_agi`) |
//! | `ag/agfl.rs` | the AGFL (`xfs_agfl`) and its free list |
//! | `ag/summary.rs` | every tree walked, and the cross-checks against the headers |
//! | `ag/btree.rs` | the AG btrees' blocks, records and keys |

mod agf;
mod agfl;
mod agi;
pub mod btree;
mod summary;

pub use agf::*;
pub use agfl::*;
pub use agi::*;
pub use summary::*;

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
