//! Decimal text for the fractional numbers the page draws and times (SVG
//! coordinates, milliseconds, MiB), written through integers. The
//! standard library's float formatting (Grisu with a Dragon fallback, and
//! their tables) was the only reason the page's wasm carried it: about 14
//! KB before `wasm-opt` (BENCHMARKS.md, "One wasm for the page and the
//! light worker").

use std::fmt::Write as _;

/// The largest magnitude written exactly: beyond it (never reached by what
/// the page shows) the digits saturate.
const LIMIT: f64 = 9.0e15;

/// `x` with `places` decimals (at most 6), rounded half away from zero:
/// what `format!("{x:.places$}")` writes, but for values exactly halfway
/// between two results, which the standard library rounds to even.
/// Negative values that round to zero are written without a sign.
pub fn fixed(x: f64, places: u32) -> String {
    if x.is_nan() {
        return "NaN".to_string();
    }
    let places = places.min(6);
    let scale = 10u64.pow(places);
    let scaled = (x.abs() * to_f64(scale) + 0.5).floor().min(LIMIT);
    let n = to_u64(scaled);
    let mut s = String::new();
    if x < 0.0 && n != 0 {
        s.push('-');
    }
    let whole = n.checked_div(scale).unwrap_or(0);
    let _ = write!(s, "{whole}");
    if places > 0 {
        let frac = n.checked_rem(scale).unwrap_or(0);
        let _ = write!(s, ".{frac:0width$}", width = usize::try_from(places).unwrap_or(0));
    }
    s
}

/// `x` to at most two decimals, without trailing zeros: SVG coordinates
/// and lengths ("12", "12.5", "12.25").
pub fn coord(x: f64) -> String {
    let mut s = fixed(x, 2);
    if s.contains('.') {
        let kept = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(kept);
    }
    if s == "-0" {
        s = "0".to_string();
    }
    s
}

#[allow(clippy::as_conversions, clippy::cast_precision_loss)]
fn to_f64(n: u64) -> f64 {
    n as f64
}

/// `v` is finite, at least 0 and at most [`LIMIT`] here.
#[allow(
    clippy::as_conversions,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
fn to_u64(v: f64) -> u64 {
    v as u64
}

#[cfg(test)]
mod tests {
    use super::{coord, fixed};

    /// Values away from exact halves: the standard formatter is the oracle.
    #[test]
    fn fixed_writes_what_the_standard_formatter_writes() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut checked = 0;
        for i in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mag = 10f64.powi(i32::try_from(i % 12).unwrap() - 3);
            let v = (x >> 11) as f64 / (1u64 << 53) as f64 * mag * if i % 3 == 0 { -1.0 } else { 1.0 };
            for places in 0..=4u32 {
                let p = places as usize;
                let scaled = v.abs() * 10f64.powi(places as i32);
                // Skip values within rounding noise of a half.
                if (scaled - scaled.floor() - 0.5).abs() < 1e-6 {
                    continue;
                }
                let want = format!("{v:.p$}");
                let want = if want.starts_with('-') && want.trim_start_matches(['-', '0', '.']).is_empty() {
                    want.trim_start_matches('-').to_string()
                } else {
                    want
                };
                assert_eq!(fixed(v, places), want, "{v} to {places} places");
                checked += 1;
            }
        }
        assert!(checked > 90_000);
    }

    #[test]
    fn fixed_at_the_edges() {
        assert_eq!(fixed(0.0, 1), "0.0");
        assert_eq!(fixed(-0.04, 1), "0.0");
        assert_eq!(fixed(-0.06, 1), "-0.1");
        assert_eq!(fixed(2.5, 0), "3");
        assert_eq!(fixed(1_048_575.96, 1), "1048576.0");
        assert_eq!(fixed(0.00005, 4), "0.0001");
        assert_eq!(fixed(123.456, 9), "123.456000");
        assert_eq!(fixed(f64::NAN, 2), "NaN");
        assert_eq!(fixed(f64::INFINITY, 0), "9000000000000000");
    }

    #[test]
    fn coordinates_drop_trailing_zeros() {
        assert_eq!(coord(12.0), "12");
        assert_eq!(coord(12.5), "12.5");
        assert_eq!(coord(12.254), "12.25");
        assert_eq!(coord(100.0), "100");
        assert_eq!(coord(-0.001), "0");
        assert_eq!(coord(-3.1), "-3.1");
        assert_eq!(coord(0.999), "1");
    }
}
