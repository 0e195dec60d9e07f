//! The AGI: inode bookkeeping of one AG, parsed and described field by field.

use super::*;

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
