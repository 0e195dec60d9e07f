//! Little helpers to take fixed-width integers out of a header's bytes
//! without indexing: a field outside the buffer reads as zero (the callers
//! always read buffers at least as long as the header they parse).

fn take<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    at.checked_add(N)
        .and_then(|end| b.get(at..end))
        .and_then(|s| <[u8; N]>::try_from(s).ok())
        .unwrap_or([0u8; N])
}

pub fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(take(b, at))
}

pub fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(take(b, at))
}

pub fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(take(b, at))
}

pub fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(take(b, at))
}

pub fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(take(b, at))
}

pub fn be64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(take(b, at))
}

pub fn byte(b: &[u8], at: usize) -> u8 {
    b.get(at).copied().unwrap_or(0)
}

/// A GUID as GPT stores it (the first three fields little-endian), in the
/// usual upper-case text form.
pub fn guid(b: &[u8], at: usize) -> String {
    let raw: [u8; 16] = take(b, at);
    let d1 = le32(&raw, 0);
    let d2 = le16(&raw, 4);
    let d3 = le16(&raw, 6);
    let mut s = format!("{d1:08X}-{d2:04X}-{d3:04X}-");
    for (i, v) in raw.iter().enumerate().skip(8) {
        if i == 10 {
            s.push('-');
        }
        s.push_str(&format!("{v:02X}"));
    }
    s
}

/// `a * b`, or None on overflow.
pub fn mul(a: u64, b: u64) -> Option<u64> {
    a.checked_mul(b)
}

pub fn to_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
