//! What a person types to go somewhere: a path, an inode number, an AG
//! block (`agno/agbno`), a daddr or a filesystem block, resolved with the
//! filesystem's geometry the way `xfs_db convert` does it.
//!
//! Accepted forms (case does not matter, spaces are optional):
//! - `/a/b`: a path;
//! - `123`, `i123`, `ino 123`, `inode 123`: an inode;
//! - `1/15`, `agbno 1/15`: block 15 of AG 1;
//! - `d64`, `daddr 64`: a 512-byte sector address;
//! - `b100`, `fsb 100`, `fsblock 100`: a filesystem block (AG number in the
//!   high bits, `sb_agblklog` of them for the AG block);
//! - `ag 2`: the map of AG 2.
//!
//! Numbers may be hex with `0x`.

use serde::{Deserialize, Serialize};

/// The geometry the forms need (from the superblock).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddrGeometry {
    pub blocksize: u32,
    pub agblocks: u32,
    pub agblklog: u8,
    pub agcount: u32,
    pub dblocks: u64,
}

/// Where a query leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Path(String),
    Inode(u64),
    /// A daddr on the data device.
    Daddr(u64),
    Ag(u32),
}

fn num(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

impl AddrGeometry {
    fn bbs_per_block(&self) -> u64 {
        u64::from(self.blocksize / 512).max(1)
    }

    /// The daddr of AG block `agbno` of AG `agno`, if both exist.
    pub fn agb_to_daddr(&self, agno: u64, agbno: u64) -> Result<u64, String> {
        if agno >= u64::from(self.agcount) {
            return Err(format!("there is no AG {agno} ({} AGs)", self.agcount));
        }
        if agbno >= u64::from(self.agblocks) {
            return Err(format!(
                "AG block {agbno} is past the AG's end ({} blocks per AG)",
                self.agblocks
            ));
        }
        Ok(agno
            .saturating_mul(u64::from(self.agblocks))
            .saturating_add(agbno)
            .saturating_mul(self.bbs_per_block()))
    }

    /// The daddr of filesystem block `fsb`.
    pub fn fsb_to_daddr(&self, fsb: u64) -> Result<u64, String> {
        let shift = u32::from(self.agblklog);
        let agno = fsb.checked_shr(shift).unwrap_or(0);
        let agbno = fsb
            & 1u64
                .checked_shl(shift)
                .map_or(u64::MAX, |m| m.saturating_sub(1));
        self.agb_to_daddr(agno, agbno)
    }

    /// Resolve what was typed.
    pub fn resolve(&self, query: &str) -> Result<Target, String> {
        let q = query.trim();
        if q.is_empty() {
            return Err("type a path, an inode number, agno/agbno, d<daddr> or b<fsblock>".into());
        }
        if q.starts_with('/') {
            return Ok(Target::Path(q.to_string()));
        }
        let lower = q.to_ascii_lowercase();
        let word_end = lower
            .find(|c: char| c.is_ascii_digit() || c == ' ')
            .unwrap_or(lower.len());
        let (word, rest) = lower.split_at(word_end);
        let rest = rest.trim();
        let bad = || {
            format!("cannot read {q:?}: type a path, an inode number, agno/agbno, d<daddr> or b<fsblock>")
        };
        match word {
            "" | "i" | "ino" | "inode" if !rest.contains('/') => {
                num(rest).map(Target::Inode).ok_or_else(bad)
            }
            "" | "agbno" | "agb" => {
                let (a, b) = rest.split_once('/').ok_or_else(bad)?;
                let (a, b) = (num(a).ok_or_else(bad)?, num(b).ok_or_else(bad)?);
                self.agb_to_daddr(a, b).map(Target::Daddr)
            }
            "d" | "daddr" => {
                let d = num(rest).ok_or_else(bad)?;
                let end = self.dblocks.saturating_mul(self.bbs_per_block());
                if d >= end {
                    return Err(format!(
                        "daddr {d} is past the filesystem's end ({end} sectors)"
                    ));
                }
                Ok(Target::Daddr(d))
            }
            "b" | "fsb" | "fsblock" => self
                .fsb_to_daddr(num(rest).ok_or_else(bad)?)
                .map(Target::Daddr),
            "ag" | "agno" => {
                let a = num(rest).ok_or_else(bad)?;
                if a >= u64::from(self.agcount) {
                    return Err(format!("there is no AG {a} ({} AGs)", self.agcount));
                }
                Ok(Target::Ag(u32::try_from(a).map_err(|_| bad())?))
            }
            _ => Err(bad()),
        }
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// v5-1k-rmap's geometry (tests/fixtures/v5-1k-rmap.sb.txt).
    fn geo() -> AddrGeometry {
        let sb = std::fs::read_to_string("tests/fixtures/v5-1k-rmap.sb.txt").unwrap();
        let f = |k: &str| -> u64 {
            sb.lines()
                .find_map(|l| l.strip_prefix(&format!("{k} = ")))
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        };
        AddrGeometry {
            blocksize: u32::try_from(f("blocksize")).unwrap(),
            agblocks: u32::try_from(f("agblocks")).unwrap(),
            agblklog: u8::try_from(f("agblklog")).unwrap(),
            agcount: u32::try_from(f("agcount")).unwrap(),
            dblocks: f("dblocks"),
        }
    }

    /// Each line of the oracle is `xfs_db convert` on that image.
    #[test]
    fn forms_resolve_as_xfs_db_convert_does() {
        let g = geo();
        let oracle = std::fs::read_to_string("tests/fixtures/v5-1k-rmap.convert.txt").unwrap();
        let mut checked = 0;
        for line in oracle.lines().filter(|l| !l.starts_with('#')) {
            // "agno 1 agbno 5 daddr => 0x800a (32778)"
            let (q, ans) = line.split_once(" => ").unwrap();
            let want: u64 = ans
                .rsplit_once('(')
                .unwrap()
                .1
                .trim_end_matches(')')
                .parse()
                .unwrap();
            let w: Vec<&str> = q.split_whitespace().collect();
            let typed = match w.as_slice() {
                ["agno", a, "agbno", b, "daddr"] => format!("{a}/{b}"),
                ["fsblock", b, "daddr"] => format!("fsb {b}"),
                _ => continue,
            };
            assert_eq!(g.resolve(&typed).unwrap(), Target::Daddr(want), "{typed}");
            checked += 1;
        }
        assert!(checked >= 4, "{checked}");
        assert_eq!(g.resolve("131").unwrap(), Target::Inode(131));
        assert_eq!(g.resolve("ino 0x83").unwrap(), Target::Inode(131));
        assert_eq!(g.resolve("d 64").unwrap(), Target::Daddr(64));
        assert_eq!(g.resolve("/a b/c").unwrap(), Target::Path("/a b/c".into()));
        assert_eq!(g.resolve("ag 3").unwrap(), Target::Ag(3));
        assert!(g.resolve("ag 4").is_err());
        assert!(g.resolve("4/1").is_err());
        assert!(g.resolve("hello").is_err());
        assert!(g.resolve("d 999999999999").is_err());
    }
}
