//! The AGFL: the AG's free list of blocks kept for btree splits.

use super::*;

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
