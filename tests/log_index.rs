//! The log's compact index (what the page keeps of a decoded log) and the
//! transactions it decodes again one at a time, against `xfs_logprint -t`
//! of every kernel-made fixture that has it (ticket, region count, item
//! kinds with their region counts and lengths), and against the decode of
//! the whole log (the same transactions, intents linked alike, the same
//! counts, every buffer item found by its block).
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;
use common::*;
use std::collections::BTreeMap;
use xfs_explorer::xfs::fs::Fs;
use xfs_explorer::xfs::image::Image;
use xfs_explorer::xfs::log::index::{decode_indexed, BufRef};
use xfs_explorer::xfs::log::{self, DecodeOptions, ItemBody};
use xfs_explorer::xfs::read::FileReader;

const OPTS: DecodeOptions = DecodeOptions {
    dir_names: true,
    inode_cores: false,
};

#[test]
fn transactions_decoded_again_from_the_index_equal_xfs_logprint_and_the_whole_decode() {
    let mut fixtures = 0;
    let mut checked = 0;
    let mut linked = 0;
    let mut copies = 0;
    for name in fixtures_with("logt.txt") {
        let lp = parse_logprint(&oracle(&name, "logt.txt")).trans;
        let fs = Fs::open(Image::new(FileReader::open(&image(&name)).unwrap())).unwrap();
        let whole = log::decode(&fs, OPTS).unwrap();
        let (d, index) = decode_indexed(&fs, OPTS).unwrap();
        assert!(
            d.transactions.is_empty(),
            "{name}: the index's decode keeps none"
        );
        assert_eq!(index.len(), lp.len(), "{name}: transactions");
        assert_eq!(index.len(), whole.transactions.len(), "{name}");
        assert_eq!(d.stats, whole.stats, "{name}: counts");
        assert_eq!(d.unfinished_intents, whole.unfinished_intents, "{name}");
        fixtures += 1;
        // Rows first, as the page asks for them; then each transaction.
        for (i, (s, l)) in index.summaries().iter().zip(&lp).enumerate() {
            let at = format!("{name}: transaction {i} (tid {:#x})", l.tid);
            assert_eq!(u64::from(s.tid), l.tid, "{at}: tid");
            assert_eq!(s.regions, l.num_items, "{at}: regions (num_items)");
            assert_eq!(u64::from(s.items), l.items.len() as u64, "{at}: items");
            let mut want: BTreeMap<String, u32> = BTreeMap::new();
            for it in &l.items {
                *want.entry(it.kind.clone()).or_default() += 1;
            }
            let got: BTreeMap<String, u32> = index
                .kinds(s)
                .map(|(k, n)| {
                    let k = if NEWER_KINDS.contains(&k) && want.contains_key("?") {
                        "?"
                    } else {
                        k
                    };
                    (k.to_string(), n)
                })
                .collect();
            assert_eq!(got, want, "{at}: item kinds and counts");
        }
        for (i, l) in lp.iter().enumerate() {
            let at = format!("{name}: transaction {i} (tid {:#x})", l.tid);
            let ix = u32::try_from(i).unwrap();
            let t = index
                .transaction(&fs, ix, OPTS)
                .unwrap()
                .unwrap_or_else(|| panic!("{at}: not decoded again"));
            assert_eq!(u64::from(t.tid), l.tid, "{at}: tid");
            assert_eq!(
                t.header.map(|h| u64::from(h.num_items)),
                Some(l.num_items),
                "{at}: num_items"
            );
            let ours: Vec<(&str, u64, Vec<u64>)> = t
                .items
                .iter()
                .zip(&l.items)
                .map(|(it, li)| {
                    let kind = it.kind.name();
                    let kind = if li.kind == "?" && NEWER_KINDS.contains(&kind) {
                        "?"
                    } else {
                        kind
                    };
                    let lens = it
                        .region_lens
                        .view()
                        .iter()
                        .map(|x| u64::from(*x))
                        .collect();
                    (kind, u64::from(it.regions), lens)
                })
                .collect();
            let theirs: Vec<(&str, u64, Vec<u64>)> = l
                .items
                .iter()
                .map(|li| (li.kind.as_str(), li.cnt, li.lens.clone()))
                .collect();
            assert_eq!(t.items.len(), l.items.len(), "{at}: items");
            assert_eq!(ours, theirs, "{at}: items, regions, region lengths");
            // Everything else, intent links and their descriptions included,
            // as the decode of the whole log has it.
            let w = &whole.transactions[i];
            assert_eq!(format!("{t:?}"), format!("{w:?}"), "{at}: as decoded whole");
            let texts =
                |x: &log::Transaction| x.items.iter().map(|i| i.describe()).collect::<Vec<_>>();
            assert_eq!(texts(&t), texts(w), "{at}");
            linked += t.items.iter().filter(|i| i.link().is_some()).count();
            checked += 1;
        }
        assert!(index
            .transaction(&fs, u32::try_from(lp.len()).unwrap(), OPTS)
            .unwrap()
            .is_none());
        // Every buffer item is found by its block, in log order.
        let mut want: Vec<BufRef> = Vec::new();
        for (ti, t) in whole.transactions.iter().enumerate() {
            for (ii, it) in t.items.iter().enumerate() {
                if let ItemBody::Buf(b) = &it.body {
                    want.push(BufRef {
                        daddr: u64::try_from(b.blkno).unwrap(),
                        transaction: ti as u32,
                        item: ii as u32,
                    });
                }
            }
        }
        want.sort();
        assert_eq!(index.buffers(), &want[..], "{name}: buffer index");
        for w in &want {
            let at = index.buffers_at(w.daddr);
            assert!(
                at.contains(w) && at.iter().all(|b| b.daddr == w.daddr),
                "{name}"
            );
            assert!(at
                .windows(2)
                .all(|p| (p[0].transaction, p[0].item) < (p[1].transaction, p[1].item)));
            copies += 1;
        }
        assert!(index.buffers_at(u64::MAX).is_empty());
    }
    assert!(fixtures >= 5, "{fixtures} fixtures");
    assert!(checked > 50, "{checked} transactions");
    assert!(linked > 0, "no intent links checked");
    assert!(copies > 100, "{copies} buffer items");
}
