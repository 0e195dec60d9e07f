//! The superblock described field by field: the kernel's name, the value,
//! what it means and what it says about the filesystem.

use super::*;

impl Superblock {
    /// Every field with its value and meaning, in on-disk order. v5-only
    /// fields appear on v5 superblocks; the metadata-directory and zoned
    /// fields only when those features are on.
    pub fn fields(&self) -> Vec<Field> {
        let mut v: Vec<Field> = Vec::with_capacity(64);
        let mut f = |name, offset, size, value: FieldValue, meaning, note: Option<String>| {
            v.push(Field {
                name,
                value,
                offset,
                size,
                meaning,
                note,
            })
        };
        let n = |x: u64| FieldValue::Num(x);
        let hex = |x: u64| Some(format!("{x:#x}"));
        let bytes = |x: u64| Some(human_bytes(x));
        let ino_note = |x: u64| {
            if x == NULLFSINO {
                Some("null (none)".to_string())
            } else {
                None
            }
        };
        let bs = u64::from(self.blocksize);
        f(
            "magicnum",
            0,
            4,
            n(self.magicnum.into()),
            "magic number, \"XFSB\"",
            hex(self.magicnum.into()),
        );
        f(
            "blocksize",
            4,
            4,
            n(bs),
            "filesystem block size in bytes",
            None,
        );
        f(
            "dblocks",
            8,
            8,
            n(self.dblocks),
            "blocks in the data device",
            bytes(self.dblocks.saturating_mul(bs)),
        );
        f(
            "rblocks",
            16,
            8,
            n(self.rblocks),
            "blocks in the realtime device",
            None,
        );
        f(
            "rextents",
            24,
            8,
            n(self.rextents),
            "extents in the realtime device",
            None,
        );
        f(
            "uuid",
            32,
            16,
            FieldValue::Text(uuid_text(&self.uuid)),
            "filesystem UUID",
            None,
        );
        f(
            "logstart",
            48,
            8,
            n(self.logstart),
            "first block of the internal log (AG-packed; 0: external log)",
            self.logstart_note(),
        );
        f(
            "rootino",
            56,
            8,
            n(self.rootino),
            "inode number of the root directory",
            None,
        );
        f(
            "rbmino",
            64,
            8,
            n(self.rbmino),
            "realtime bitmap inode",
            ino_note(self.rbmino),
        );
        f(
            "rsumino",
            72,
            8,
            n(self.rsumino),
            "realtime summary inode",
            ino_note(self.rsumino),
        );
        f(
            "rextsize",
            80,
            4,
            n(self.rextsize.into()),
            "realtime extent size in blocks",
            None,
        );
        f(
            "agblocks",
            84,
            4,
            n(self.agblocks.into()),
            "blocks per allocation group (the last may be shorter)",
            None,
        );
        f(
            "agcount",
            88,
            4,
            n(self.agcount.into()),
            "number of allocation groups",
            None,
        );
        f(
            "rbmblocks",
            92,
            4,
            n(self.rbmblocks.into()),
            "blocks of the realtime bitmap",
            None,
        );
        f(
            "logblocks",
            96,
            4,
            n(self.logblocks.into()),
            "blocks in the log",
            bytes(u64::from(self.logblocks).saturating_mul(bs)),
        );
        f(
            "versionnum",
            100,
            2,
            n(self.versionnum.into()),
            "version (low 4 bits) and legacy feature bits",
            Some(format!(
                "{:#06x}: version {}",
                self.versionnum,
                self.version()
            )),
        );
        f(
            "sectsize",
            102,
            2,
            n(self.sectsize.into()),
            "sector size in bytes",
            None,
        );
        f(
            "inodesize",
            104,
            2,
            n(self.inodesize.into()),
            "inode size in bytes",
            None,
        );
        f(
            "inopblock",
            106,
            2,
            n(self.inopblock.into()),
            "inodes per block",
            None,
        );
        f(
            "fname",
            108,
            12,
            FieldValue::Text(label_text(&self.fname)),
            "filesystem label",
            None,
        );
        f(
            "blocklog",
            120,
            1,
            n(self.blocklog.into()),
            "log2 of the block size",
            None,
        );
        f(
            "sectlog",
            121,
            1,
            n(self.sectlog.into()),
            "log2 of the sector size",
            None,
        );
        f(
            "inodelog",
            122,
            1,
            n(self.inodelog.into()),
            "log2 of the inode size",
            None,
        );
        f(
            "inopblog",
            123,
            1,
            n(self.inopblog.into()),
            "log2 of inodes per block",
            None,
        );
        f(
            "agblklog",
            124,
            1,
            n(self.agblklog.into()),
            "bits of the AG block number in packed numbers: ceil(log2(agblocks))",
            None,
        );
        f(
            "rextslog",
            125,
            1,
            n(self.rextslog.into()),
            "log2 of the realtime extent count",
            None,
        );
        f(
            "inprogress",
            126,
            1,
            n(self.inprogress.into()),
            "non-zero while mkfs runs",
            None,
        );
        f(
            "imax_pct",
            127,
            1,
            n(self.imax_pct.into()),
            "most space inodes may take, in percent",
            None,
        );
        f(
            "icount",
            128,
            8,
            n(self.icount),
            "allocated inodes (updated lazily on v5)",
            None,
        );
        f(
            "ifree",
            136,
            8,
            n(self.ifree),
            "free inodes (updated lazily on v5)",
            None,
        );
        f(
            "fdblocks",
            144,
            8,
            n(self.fdblocks),
            "free data blocks (updated lazily on v5)",
            bytes(self.fdblocks.saturating_mul(bs)),
        );
        f(
            "frextents",
            152,
            8,
            n(self.frextents),
            "free realtime extents",
            None,
        );
        f(
            "uquotino",
            160,
            8,
            n(self.uquotino),
            "user quota inode",
            ino_note(self.uquotino),
        );
        f(
            "gquotino",
            168,
            8,
            n(self.gquotino),
            "group quota inode",
            ino_note(self.gquotino),
        );
        f(
            "qflags",
            176,
            2,
            n(self.qflags.into()),
            "quota flags",
            hex(self.qflags.into()),
        );
        f(
            "flags",
            178,
            1,
            n(self.flags.into()),
            "miscellaneous flags (1: read-only)",
            None,
        );
        f(
            "shared_vn",
            179,
            1,
            n(self.shared_vn.into()),
            "shared version number, must be 0",
            None,
        );
        f(
            "inoalignmt",
            180,
            4,
            n(self.inoalignmt.into()),
            "inode chunk alignment in blocks",
            None,
        );
        f(
            "unit",
            184,
            4,
            n(self.unit.into()),
            "stripe unit in blocks",
            None,
        );
        f(
            "width",
            188,
            4,
            n(self.width.into()),
            "stripe width in blocks",
            None,
        );
        f(
            "dirblklog",
            192,
            1,
            n(self.dirblklog.into()),
            "log2 of directory block size in filesystem blocks",
            Some(format!(
                "directory blocks of {}",
                human_bytes(bs.checked_shl(self.dirblklog.into()).unwrap_or(0))
            )),
        );
        f(
            "logsectlog",
            193,
            1,
            n(self.logsectlog.into()),
            "log2 of the log sector size (0: 512 bytes)",
            None,
        );
        f(
            "logsectsize",
            194,
            2,
            n(self.logsectsize.into()),
            "log sector size in bytes (0: 512)",
            None,
        );
        f(
            "logsunit",
            196,
            4,
            n(self.logsunit.into()),
            "log stripe unit in bytes",
            None,
        );
        f(
            "features2",
            200,
            4,
            n(self.features2.into()),
            "more legacy feature bits",
            Some(names_note(self.features2, FEATURES2_BITS, "FEATURES2")),
        );
        f(
            "bad_features2",
            204,
            4,
            n(self.bad_features2.into()),
            "copy of features2 (historic alignment bug)",
            hex(self.bad_features2.into()),
        );
        if self.is_v5() {
            f(
                "features_compat",
                208,
                4,
                n(self.features_compat.into()),
                "compatible feature bits",
                Some(names_note(self.features_compat, COMPAT_BITS, "COMPAT")),
            );
            f(
                "features_ro_compat",
                212,
                4,
                n(self.features_ro_compat.into()),
                "features an older kernel may mount read-only",
                Some(names_note(
                    self.features_ro_compat,
                    RO_COMPAT_BITS,
                    "RO_COMPAT",
                )),
            );
            f(
                "features_incompat",
                216,
                4,
                n(self.features_incompat.into()),
                "features an older kernel must not mount",
                Some(names_note(
                    self.features_incompat,
                    INCOMPAT_BITS,
                    "INCOMPAT",
                )),
            );
            f(
                "features_log_incompat",
                220,
                4,
                n(self.features_log_incompat.into()),
                "features of the log that an older kernel must not replay",
                Some(names_note(
                    self.features_log_incompat,
                    LOG_INCOMPAT_BITS,
                    "LOG_INCOMPAT",
                )),
            );
            f(
                "crc",
                224,
                4,
                n(self.crc.into()),
                "CRC32c of the superblock sector",
                Some(self.crc_note()),
            );
            f(
                "spino_align",
                228,
                4,
                n(self.spino_align.into()),
                "sparse inode chunk alignment in blocks",
                None,
            );
            f(
                "pquotino",
                232,
                8,
                n(self.pquotino),
                "project quota inode",
                ino_note(self.pquotino),
            );
            f(
                "lsn",
                240,
                8,
                n(self.lsn),
                "log sequence number of the last superblock write",
                Some(Lsn::from_raw(self.lsn).to_string()),
            );
            f(
                "meta_uuid",
                248,
                16,
                FieldValue::Text(uuid_text(&self.meta_uuid)),
                "UUID stamped in metadata (used when META_UUID is set)",
                None,
            );
        }
        if self.has_metadir_fields() {
            f(
                "metadirino",
                264,
                8,
                n(self.metadirino),
                "root of the metadata directory tree",
                None,
            );
            f(
                "rgcount",
                272,
                4,
                n(self.rgcount.into()),
                "number of realtime groups",
                None,
            );
            f(
                "rgextents",
                276,
                4,
                n(self.rgextents.into()),
                "realtime extents per realtime group",
                None,
            );
            f(
                "rgblklog",
                280,
                1,
                n(self.rgblklog.into()),
                "bits of the block number in a realtime group",
                None,
            );
            f(
                "rtstart",
                288,
                8,
                n(self.rtstart),
                "start of the internal realtime section in blocks",
                None,
            );
            f(
                "rtreserved",
                296,
                8,
                n(self.rtreserved),
                "realtime blocks reserved",
                None,
            );
        }
        v
    }

    fn logstart_note(&self) -> Option<String> {
        if self.logstart == 0 {
            return Some("external log".into());
        }
        let agno = self.logstart.checked_shr(u32::from(self.agblklog))?;
        let mask = 1u64.checked_shl(u32::from(self.agblklog))?.checked_sub(1)?;
        Some(format!("AG {agno}, block {}", self.logstart & mask))
    }

    fn crc_note(&self) -> String {
        match self.computed_crc {
            Some(c) if c == self.crc => format!("{:#010x}, correct", self.crc),
            Some(c) => format!("{:#010x}, BAD: computed {c:#010x}", self.crc),
            None => format!("{:#010x}, not checked", self.crc),
        }
    }
}

fn names_note(word: u32, table: &[FeatureBit], word_name: &str) -> String {
    let names = bit_names(word, table, word_name);
    if names.is_empty() {
        format!("{word:#x}")
    } else {
        format!("{word:#x}: {}", names.join(", "))
    }
}
