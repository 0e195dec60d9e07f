//! The superblock's checks: every field against the kernel's limits and
//! the others it depends on, each problem fatal when reading on would go
//! wrong.

use super::*;

impl Superblock {
    /// The checks of the kernel's superblock verifier, as problems.
    pub(super) fn check(&self) -> Vec<Problem> {
        let mut p = Vec::new();
        let mut fatal = |field: &'static str, message: String| {
            p.push(Problem {
                severity: Severity::Fatal,
                field,
                message,
            })
        };
        let version = self.version();
        if version != 4 && version != 5 {
            fatal(
                "versionnum",
                format!("version {version} is not 4 or 5 (versions 1 to 3 are no longer read)"),
            );
        }
        let ss = self.sectsize;
        if !ss.is_power_of_two() || !(MIN_SECTSIZE..=MAX_SECTSIZE).contains(&ss) {
            fatal(
                "sectsize",
                format!("{ss} is not a power of two from 512 to 32768"),
            );
        } else if u32::from(self.sectlog) != ss.trailing_zeros() {
            fatal(
                "sectlog",
                format!("{} does not match sectsize {ss}", self.sectlog),
            );
        }
        let bs = self.blocksize;
        if !bs.is_power_of_two() || !(512..=65536).contains(&bs) {
            fatal(
                "blocksize",
                format!("{bs} is not a power of two from 512 to 65536"),
            );
        } else {
            if u32::from(self.blocklog) != bs.trailing_zeros() {
                fatal(
                    "blocklog",
                    format!("{} does not match blocksize {bs}", self.blocklog),
                );
            }
            if bs < u32::from(ss) {
                fatal(
                    "blocksize",
                    format!("{bs} is smaller than the sector size {ss}"),
                );
            }
        }
        let is = self.inodesize;
        if !is.is_power_of_two() || !(256..=2048).contains(&is) {
            fatal(
                "inodesize",
                format!("{is} is not a power of two from 256 to 2048"),
            );
        } else {
            if u32::from(self.inodelog) != is.trailing_zeros() {
                fatal(
                    "inodelog",
                    format!("{} does not match inodesize {is}", self.inodelog),
                );
            }
            if bs.is_power_of_two() && u32::from(is) > bs {
                fatal(
                    "inodesize",
                    format!("{is} is larger than the block size {bs}"),
                );
            }
            if bs.is_power_of_two() && u32::from(is) <= bs {
                let want = bs.checked_div(u32::from(is)).unwrap_or(0);
                if u32::from(self.inopblock) != want {
                    fatal(
                        "inopblock",
                        format!("{} is not blocksize/inodesize = {want}", self.inopblock),
                    );
                } else if u32::from(self.inopblog) != want.trailing_zeros() {
                    fatal(
                        "inopblog",
                        format!("{} does not match inopblock {want}", self.inopblog),
                    );
                }
            }
        }
        if self.agcount == 0 {
            fatal("agcount", "no allocation groups".into());
        }
        if self.agblocks < MIN_AG_BLOCKS {
            fatal(
                "agblocks",
                format!(
                    "{} is below the minimum of {MIN_AG_BLOCKS} blocks",
                    self.agblocks
                ),
            );
        } else if u32::from(self.agblklog) != log2_roundup(self.agblocks) {
            fatal(
                "agblklog",
                format!(
                    "{} is not ceil(log2(agblocks {})) = {}",
                    self.agblklog,
                    self.agblocks,
                    log2_roundup(self.agblocks)
                ),
            );
        }
        let full = u64::from(self.agcount).saturating_mul(u64::from(self.agblocks));
        let least = u64::from(self.agcount.saturating_sub(1))
            .saturating_mul(u64::from(self.agblocks))
            .saturating_add(u64::from(MIN_AG_BLOCKS));
        if self.agcount > 0 && (self.dblocks > full || self.dblocks < least) {
            fatal(
                "dblocks",
                format!(
                    "{} does not fit {} allocation groups of {} blocks (expected {least}..={full})",
                    self.dblocks, self.agcount, self.agblocks
                ),
            );
        }
        if bs.is_power_of_two() {
            let dir = u64::from(bs).checked_shl(u32::from(self.dirblklog));
            if dir.is_none_or(|d| d > MAX_DIR_BLOCKSIZE) {
                fatal(
                    "dirblklog",
                    format!(
                        "directory blocks of blocksize << {} exceed 64 KiB",
                        self.dirblklog
                    ),
                );
            }
        }
        if self.logstart != 0 && bs.is_power_of_two() && self.agblocks >= MIN_AG_BLOCKS {
            let agno = self
                .logstart
                .checked_shr(u32::from(self.agblklog))
                .unwrap_or(u64::MAX);
            let mask = 1u64
                .checked_shl(u32::from(self.agblklog))
                .unwrap_or(0)
                .saturating_sub(1);
            let agbno = self.logstart & mask;
            if agno >= u64::from(self.agcount)
                || agbno.saturating_add(u64::from(self.logblocks)) > u64::from(self.agblocks)
            {
                fatal(
                    "logstart",
                    format!(
                        "internal log at AG {agno} block {agbno}, {} blocks, lies outside the AGs",
                        self.logblocks
                    ),
                );
            }
        }

        let mut warn = |field: &'static str, message: String| {
            p.push(Problem {
                severity: Severity::Warning,
                field,
                message,
            })
        };
        if let Some(computed) = self.computed_crc {
            if computed != self.crc {
                warn(
                    "crc",
                    format!("stored {:#010x}, computed {computed:#010x}", self.crc),
                );
            }
        } else if self.is_v5() {
            warn(
                "crc",
                "the superblock sector could not be read whole; CRC not checked".into(),
            );
        }
        if self.inprogress != 0 {
            warn(
                "inprogress",
                "mkfs did not finish: the kernel refuses to mount".into(),
            );
        }
        if self.features2 != self.bad_features2 {
            warn(
                "bad_features2",
                format!(
                    "{:#x} differs from features2 {:#x} (the kernel uses both ORed)",
                    self.bad_features2, self.features2
                ),
            );
        }
        if self.shared_vn != 0 {
            warn("shared_vn", format!("{} is not 0", self.shared_vn));
        }
        if self.is_v5() {
            for (word, table, name, field) in [
                (
                    self.features_compat,
                    COMPAT_BITS,
                    "compat",
                    "features_compat",
                ),
                (
                    self.features_ro_compat,
                    RO_COMPAT_BITS,
                    "ro_compat",
                    "features_ro_compat",
                ),
                (
                    self.features_incompat,
                    INCOMPAT_BITS,
                    "incompat",
                    "features_incompat",
                ),
                (
                    self.features_log_incompat,
                    LOG_INCOMPAT_BITS,
                    "log_incompat",
                    "features_log_incompat",
                ),
            ] {
                let known = table.iter().fold(0u32, |a, b| a | b.mask);
                let unknown = word & !known;
                if unknown != 0 {
                    warn(field, format!("unknown {name} feature bits {unknown:#x}"));
                }
            }
        }
        p
    }
}
