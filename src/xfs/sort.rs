//! Stable sorts by an integer key, all through one sort of `(key, index)`
//! pairs, and by a comparison, all through one sort of indices. The
//! standard library's sort is generated anew for every element type and
//! every key; the web workers carried a dozen copies of it (BENCHMARKS.md,
//! "Optimising the workers for size").

use std::cmp::Ordering;

/// Sort `v` by `key`, stably: elements with equal keys keep their order.
pub fn by_key<T>(v: &mut [T], key: impl Fn(&T) -> u128) {
    let mut order: Vec<(u128, usize)> = v.iter().map(key).zip(0..).collect();
    sort_pairs(&mut order);
    permute(v, &order);
}

/// Sort `v` by `cmp`, stably: elements that compare equal keep their order.
pub fn by<T>(v: &mut [T], cmp: impl Fn(&T, &T) -> Ordering) {
    let order = sort_indices(v.len(), &|i, j| match (v.get(i), v.get(j)) {
        (Some(a), Some(b)) => cmp(a, b),
        _ => Ordering::Equal,
    });
    permute(v, &order);
}

/// The other sort: indices `0..n` by `cmp`, the index breaking ties (so
/// stable), as `(0, index)` pairs for [`permute`].
#[inline(never)]
fn sort_indices(n: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<(u128, usize)> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by(|&a, &b| cmp(a, b).then(a.cmp(&b)));
    order.into_iter().map(|i| (0, i)).collect()
}

/// Sort `v` by `key`, largest key first; equal keys keep their order.
pub fn by_key_descending<T>(v: &mut [T], key: impl Fn(&T) -> u128) {
    by_key(v, |x| u128::MAX.saturating_sub(key(x)));
}

/// The one sort: the index breaks ties, so an unstable sort is stable here.
#[inline(never)]
fn sort_pairs(order: &mut [(u128, usize)]) {
    order.sort_unstable();
}

/// Put into place `j` the element that was at `order[j].1`, following
/// each cycle of the permutation with swaps.
fn permute<T>(v: &mut [T], order: &[(u128, usize)]) {
    let mut placed = vec![false; v.len()];
    for start in 0..v.len() {
        if placed.get(start).copied().unwrap_or(true) {
            continue;
        }
        let mut j = start;
        loop {
            if let Some(p) = placed.get_mut(j) {
                *p = true;
            }
            let Some(&(_, from)) = order.get(j) else {
                break;
            };
            if from == start || from >= v.len() {
                break;
            }
            // The element for place `j` is at `from`: the elements of this
            // cycle placed so far were swapped out of the way behind it.
            v.swap(j, from);
            j = from;
        }
    }
}

/// Two keys as one: `hi` first, then `lo`.
pub fn pair(hi: u64, lo: u64) -> u128 {
    (u128::from(hi) << 64) | u128::from(lo)
}

/// A `usize` as a key.
pub fn size(x: usize) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::as_conversions
)]
mod tests {
    use super::*;

    /// Every ordering of a few elements with repeated keys comes out as
    /// the standard library's stable sort leaves it.
    #[test]
    fn same_as_the_standard_stable_sort() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for len in 0..200usize {
            for _ in 0..20 {
                let v: Vec<(u64, usize)> = (0..len)
                    .map(|i| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        (seed % (len as u64 / 3 + 1), i)
                    })
                    .collect();
                let mut ours = v.clone();
                by_key(&mut ours, |e| u128::from(e.0));
                let mut std = v.clone();
                std.sort_by_key(|e| e.0);
                assert_eq!(ours, std);
                let mut ours = v.clone();
                by_key_descending(&mut ours, |e| u128::from(e.0));
                let mut std = v;
                std.sort_by_key(|e| std::cmp::Reverse(e.0));
                assert_eq!(ours, std);
            }
        }
    }

    /// Sorting by a comparison leaves what the standard stable sort does,
    /// on strings with repeats and on records compared by one field.
    #[test]
    fn by_comparison_same_as_the_standard_stable_sort() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..150usize {
            let v: Vec<(String, usize)> = (0..len)
                .map(|i| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let n = seed % (len as u64 / 2 + 1);
                    ("x".repeat((n % 4) as usize) + &n.to_string(), i)
                })
                .collect();
            let mut ours = v.clone();
            by(&mut ours, |a, b| a.0.cmp(&b.0));
            let mut std = v.clone();
            std.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(ours, std);
            let mut ours: Vec<String> = v.iter().map(|e| e.0.clone()).collect();
            by(&mut ours, Ord::cmp);
            let mut std: Vec<String> = v.iter().map(|e| e.0.clone()).collect();
            std.sort();
            assert_eq!(ours, std);
        }
    }

    #[test]
    fn pairs_order_by_the_first_then_the_second() {
        let mut v = vec![(2u64, 1u64), (1, 9), (2, 0), (1, 3), (0, u64::MAX)];
        by_key(&mut v, |e| pair(e.0, e.1));
        assert_eq!(v, [(0, u64::MAX), (1, 3), (1, 9), (2, 0), (2, 1)]);
    }
}
