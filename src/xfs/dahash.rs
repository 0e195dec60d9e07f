//! The name hash of directories and extended attributes
//! (`xfs_da_hashname`): leaf entries and da btree keys are ordered by it.
//!
//! The kernel folds four bytes at a time with shifts of 21/14/7/0 and a
//! rotation by 28; since every byte is below 2^8 no bits wrap, which makes it
//! the same as folding one byte at a time: `h = c ^ rol32(h, 7)`.

/// Hash of a name, byte by byte.
pub fn da_hashname(name: &[u8]) -> u32 {
    name.iter()
        .fold(0u32, |h, &c| u32::from(c) ^ h.rotate_left(7))
}

/// Hash of a directory name on an ASCII case-insensitive filesystem
/// (versionnum BORG bit): Latin-1 upper case letters are folded first.
pub fn ascii_ci_hashname(name: &[u8]) -> u32 {
    name.iter()
        .fold(0u32, |h, &c| u32::from(ascii_ci_fold(c)) ^ h.rotate_left(7))
}

/// The case folding of ASCII-CI directories (`xfs_ascii_ci_xfrm`).
pub fn ascii_ci_fold(c: u8) -> u8 {
    match c {
        0x41..=0x5a | 0xc0..=0xd6 | 0xd8..=0xde => c.wrapping_add(0x20),
        _ => c,
    }
}

/// Hash of a directory entry name.
pub fn dir_hashname(name: &[u8], ascii_ci: bool) -> u32 {
    if ascii_ci {
        ascii_ci_hashname(name)
    } else {
        da_hashname(name)
    }
}

/// Hash of a parent-pointer attribute: the entry name's directory hash mixed
/// with the parent's inode number.
pub fn parent_hashname(name: &[u8], parent_ino: u64, ascii_ci: bool) -> u32 {
    let hi = u32::try_from(parent_ino >> 32).unwrap_or(u32::MAX);
    let lo = u32::try_from(parent_ino & 0xffff_ffff).unwrap_or(u32::MAX);
    dir_hashname(name, ascii_ci) ^ hi ^ lo
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    /// The kernel's four-bytes-at-a-time form, written out, to show that the
    /// byte-at-a-time form above is the same function.
    fn four_at_a_time(name: &[u8]) -> u32 {
        let mut h = 0u32;
        let mut chunks = name.chunks_exact(4);
        for c in chunks.by_ref() {
            let [b0, b1, b2, b3] = [c[0], c[1], c[2], c[3]].map(u32::from);
            h = (b0 << 21) ^ (b1 << 14) ^ (b2 << 7) ^ b3 ^ h.rotate_left(28);
        }
        match *chunks.remainder() {
            [a, b, c] => {
                (u32::from(a) << 14) ^ (u32::from(b) << 7) ^ u32::from(c) ^ h.rotate_left(21)
            }
            [a, b] => (u32::from(a) << 7) ^ u32::from(b) ^ h.rotate_left(14),
            [a] => u32::from(a) ^ h.rotate_left(7),
            _ => h,
        }
    }

    #[test]
    fn byte_form_equals_the_kernel_form() {
        let mut x = 0x1234_5678u32;
        for len in 0..300usize {
            let name: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x.to_le_bytes()[0]
                })
                .collect();
            assert_eq!(da_hashname(&name), four_at_a_time(&name), "{name:?}");
        }
    }

    /// `xfs_db -r -c "hash NAME"` for the names in `tests/fixtures/dahash.txt`
    /// (made by `make/oracles.sh dahash`).
    #[test]
    fn equals_xfs_db() {
        let oracle = include_bytes!("../../tests/fixtures/dahash.txt");
        let mut n = 0;
        for line in oracle.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let tab = line.iter().position(|&b| b == b'\t').unwrap_or(0);
            let (name, hash) = line.split_at(tab);
            let hash = std::str::from_utf8(hash).unwrap_or("").trim();
            let want = u32::from_str_radix(hash.trim_start_matches("0x"), 16).unwrap_or(0);
            assert_eq!(da_hashname(name), want, "{}", String::from_utf8_lossy(name));
            n += 1;
        }
        assert!(n >= 20, "oracle too short");
    }

    #[test]
    fn ascii_ci_folds_latin1_upper_case_only() {
        assert_eq!(ascii_ci_hashname(b"Lost+Found"), da_hashname(b"lost+found"));
        assert_eq!(ascii_ci_fold(0xd7), 0xd7);
        assert_eq!(ascii_ci_fold(0xc0), 0xe0);
        assert_ne!(ascii_ci_hashname(b"\xd7"), da_hashname(b"\xf7"));
    }

    #[test]
    fn parent_hash_mixes_both_halves_of_the_inode_number() {
        let h = da_hashname(b"name");
        assert_eq!(parent_hashname(b"name", 0x1_0000_0002, false), h ^ 1 ^ 2);
    }
}
