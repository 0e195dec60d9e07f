//! Synthetic logs built byte by byte, for the cases the kernel rarely
//! leaves behind on demand: torn writes at the head, a bad CRC in the
//! middle, a transaction header split across records, records wrapping the
//! physical end, extended headers, an overwritten tail; and a byte-flip
//! loop over a real log.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::as_conversions,
    clippy::cast_possible_truncation
)]

use super::find::find_head_tail;
use super::record::record_crc;
use super::*;
use crate::xfs::format::log::*;
use crate::xfs::image::Image;

const UUID: [u8; 16] = [7; 16];

/// One op of a record.
#[derive(Clone)]
struct Op {
    tid: u32,
    client: u8,
    flags: u8,
    payload: Vec<u8>,
    /// Length to claim in `oh_len` (default: the payload's).
    claim: Option<u32>,
}

fn op(tid: u32, flags: u8, payload: Vec<u8>) -> Op {
    Op {
        tid,
        client: XFS_TRANSACTION,
        flags,
        payload,
        claim: None,
    }
}

/// Writes records into a ring of `len` blocks the way the kernel does.
struct LogBuilder {
    ring: Vec<u8>,
    len: u32,
    pos: u32,
    cycle: u32,
    tail: Lsn,
    prev: u32,
    h_size: u32,
}

impl LogBuilder {
    fn new(len: u32) -> Self {
        LogBuilder {
            ring: vec![0; len as usize * 512],
            len,
            pos: 0,
            cycle: 1,
            tail: Lsn { cycle: 1, block: 0 },
            prev: u32::MAX,
            h_size: 32768,
        }
    }

    fn put_block(&mut self, blk: u32, bytes: &[u8]) {
        let at = (blk % self.len) as usize * 512;
        self.ring[at..at + 512].copy_from_slice(bytes);
    }

    /// Write one record holding `ops`; returns its block.
    fn record(&mut self, ops: &[Op]) -> u32 {
        let mut data = Vec::new();
        for o in ops {
            data.extend_from_slice(&o.tid.to_be_bytes());
            let claim = o.claim.unwrap_or(o.payload.len() as u32);
            data.extend_from_slice(&claim.to_be_bytes());
            data.push(o.client);
            data.push(o.flags);
            data.extend_from_slice(&[0, 0]);
            data.extend_from_slice(&o.payload);
        }
        let h_len = data.len().div_ceil(512).max(1) * 512;
        data.resize(h_len, 0);
        let hblks = record::hblks_of(true, 2, self.h_size);
        let mut header = vec![0u8; hblks as usize * 512];
        let blk = self.pos;
        let w =
            |h: &mut Vec<u8>, off: usize, v: u32| h[off..off + 4].copy_from_slice(&v.to_be_bytes());
        w(&mut header, 0, XLOG_HEADER_MAGIC_NUM);
        w(&mut header, 4, self.cycle);
        w(&mut header, 8, 2);
        w(&mut header, 12, h_len as u32);
        header[16..24].copy_from_slice(
            &Lsn {
                cycle: self.cycle,
                block: blk,
            }
            .raw()
            .to_be_bytes(),
        );
        header[24..32].copy_from_slice(&self.tail.raw().to_be_bytes());
        w(&mut header, 36, self.prev);
        w(&mut header, 40, ops.len() as u32);
        w(&mut header, 300, XLOG_FMT_LINUX_LE);
        header[304..320].copy_from_slice(&UUID);
        w(&mut header, 320, self.h_size);
        for j in 1..hblks as usize {
            w(&mut header, j * 512, self.cycle);
        }
        // Stamp the cycle into every data block, saving the first words;
        // blocks past the physical end carry the next cycle, stamped before
        // the CRC is computed (as the kernel's xlog_split_iclog does).
        for (i, b) in data.chunks_mut(512).enumerate() {
            let off = if i < 64 {
                44 + i * 4
            } else {
                (i / 64) * 512 + 4 + (i % 64) * 4
            };
            header[off..off + 4].copy_from_slice(&b[0..4]);
            let wrapped = blk as usize + hblks as usize + i >= self.len as usize;
            let c = if wrapped { self.cycle + 1 } else { self.cycle };
            b[0..4].copy_from_slice(&c.to_be_bytes());
        }
        for j in 1..hblks as usize {
            if blk as usize + j >= self.len as usize {
                w(&mut header, j * 512, self.cycle + 1);
            }
        }
        let crc = record_crc(&header, &data, h_len as u32, XLOG_REC_SIZE);
        header[32..36].copy_from_slice(&crc.to_le_bytes());
        let mut b = blk;
        for chunk in header.chunks(512).chain(data.chunks(512)) {
            if b == self.len {
                b = 0;
                self.cycle += 1;
            }
            let c = chunk.to_vec();
            self.put_block(b, &c);
            b += 1;
        }
        if b == self.len {
            b = 0;
            self.cycle += 1;
        }
        self.prev = blk;
        self.pos = b;
        blk
    }

    /// Flip a byte of record data at `blk` (so its CRC fails).
    fn damage(&mut self, blk: u32, byte: usize) {
        let at = ((blk + 1) % self.len) as usize * 512 + byte;
        self.ring[at] ^= 0x5a;
    }

    fn image(&self) -> Image<Vec<u8>> {
        Image::new(self.ring.clone())
    }
}

fn trans_header(tid: u32, num_items: u32) -> Vec<u8> {
    let mut h = Vec::new();
    for v in [XFS_TRANS_HEADER_MAGIC, XFS_TRANS_CHECKPOINT, tid, num_items] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    h
}

/// A buffer item: format region plus one region per run of `map`.
fn buf_item(blkno: i64, map: u32) -> Vec<Vec<u8>> {
    let nruns = bitmap::runs(&[map]);
    let mut f = Vec::new();
    f.extend_from_slice(&XFS_LI_BUF.to_le_bytes());
    f.extend_from_slice(&(1 + nruns.len() as u16).to_le_bytes());
    f.extend_from_slice(&(u16::from(XFS_BLFT_AGF_BUF) << 11).to_le_bytes());
    f.extend_from_slice(&8u16.to_le_bytes());
    f.extend_from_slice(&blkno.to_le_bytes());
    f.extend_from_slice(&1u32.to_le_bytes());
    f.extend_from_slice(&map.to_le_bytes());
    let mut out = vec![f];
    for r in nruns {
        out.push(vec![0xab; r.count as usize * 128]);
    }
    out
}

fn efi_item(kind: u16, id: u64) -> Vec<Vec<u8>> {
    let mut r = Vec::new();
    r.extend_from_slice(&kind.to_le_bytes());
    r.extend_from_slice(&1u16.to_le_bytes());
    r.extend_from_slice(&1u32.to_le_bytes());
    r.extend_from_slice(&id.to_le_bytes());
    r.extend_from_slice(&4096u64.to_le_bytes());
    r.extend_from_slice(&8u32.to_le_bytes());
    r.extend_from_slice(&0u32.to_le_bytes());
    vec![r]
}

/// START, header, every region, COMMIT.
fn whole_trans(tid: u32, items: &[Vec<Vec<u8>>]) -> Vec<Op> {
    let n: usize = items.iter().map(Vec::len).sum();
    let mut ops = vec![
        op(tid, XLOG_START_TRANS, vec![]),
        op(tid, 0, trans_header(tid, n as u32)),
    ];
    for it in items {
        for r in it {
            ops.push(op(tid, 0, r.clone()));
        }
    }
    ops.push(op(tid, XLOG_COMMIT_TRANS, vec![]));
    ops
}

fn unmount_op() -> Op {
    Op {
        tid: 0xb0c0d0d0,
        client: XFS_LOG,
        flags: XLOG_UNMOUNT_TRANS,
        payload: vec![0x6e, 0x55, 0, 0, 0, 0, 0, 0],
        claim: Some(0),
    }
}

fn ctx() -> ItemContext {
    crate::xfs::testutil::log_ctx(false)
}

fn decode_ring(b: &LogBuilder) -> Result<LogDecode> {
    let img = b.image();
    let dev = LogDev::new(&img, Daddr(0), b.len, true)?.with_uuid(UUID);
    let loc = LogLocation {
        start_daddr: Daddr(0),
        len_bbs: b.len,
        sect_bbs: 1,
        v2: true,
        external: false,
    };
    let d = decode_dev(&dev, loc, ctx())?;
    modes_agree(&dev, &d);
    Ok(d)
}

/// Collects a streamed walk's transactions.
#[derive(Default)]
struct Collect {
    began: Option<HeadTail>,
    ts: Vec<Transaction>,
}

impl trans::TransactionSink for Collect {
    fn begin(&mut self, ht: &HeadTail) {
        assert!(self.began.is_none(), "begin twice");
        assert!(self.ts.is_empty());
        self.began = Some(ht.clone());
    }
    fn transaction(&mut self, t: Transaction) {
        assert!(self.began.is_some(), "a transaction before begin");
        self.ts.push(t);
    }
}

/// Collects a streamed walk's transactions with their items left raw.
#[derive(Default)]
struct RawCollect {
    began: Option<HeadTail>,
    ts: Vec<(Transaction, trans::RawItems)>,
}

impl trans::RawSink for RawCollect {
    fn begin(&mut self, ht: &HeadTail) {
        assert!(self.began.is_none(), "begin twice");
        self.began = Some(ht.clone());
    }
    fn transaction(&mut self, t: Transaction, raw: trans::RawItems) -> Option<trans::RawItems> {
        assert!(self.began.is_some(), "a transaction before begin");
        assert!(t.items.is_empty(), "items decoded though left raw");
        self.ts.push((t, raw));
        None
    }
}

/// Every way of walking the log gives `d`: one thread or two, kept or
/// streamed, items decoded as read or left raw for the taker (intents
/// linked the same way, the same counts when the streamed transactions are
/// counted by their taker).
fn modes_agree<R: crate::xfs::read::ReadAt>(dev: &LogDev<'_, R>, d: &LogDecode) {
    let ht = find_head_tail(dev).unwrap();
    let json = |ts: &[Transaction]| serde_json::to_string(&TransactionsJson(ts, None)).unwrap();
    let want = json(&d.transactions);
    // What a streamed walk leaves, and the transactions it handed on.
    let streamed_agrees =
        |w: &trans::WalkOutput, ts: &[Transaction], unfinished: &[items::IntentRef], orphans| {
            assert_eq!(w.head_tail, d.head_tail);
            assert_eq!(w.records, d.records);
            assert_eq!(w.problems.len(), d.problems.len());
            assert_eq!(unfinished, d.unfinished_intents);
            assert_eq!(orphans, d.orphan_dones);
            assert_eq!(w.stats, stats::LogStats::default());
            assert_eq!(stats::LogStats::of(ts), d.stats);
        };
    for two in [false, true] {
        let w = trans::walk_with(dev, &ht, ctx(), two).unwrap();
        let mut ts = w.transactions;
        let (unfinished, orphans) = items::pair_intents(&mut ts);
        assert_eq!(json(&ts), want, "walk, two threads: {two}");
        assert_eq!(w.head_tail, d.head_tail);
        assert_eq!(w.records, d.records);
        assert_eq!(unfinished, d.unfinished_intents);
        assert_eq!(orphans, d.orphan_dones);
        assert_eq!(w.stats, d.stats);

        let mut c = Collect::default();
        let (w, unfinished, orphans) = trans::walk_streaming(dev, &ht, ctx(), two, &mut c).unwrap();
        assert_eq!(
            c.began.as_ref(),
            Some(&d.head_tail),
            "streamed begin, two threads: {two}"
        );
        assert_eq!(json(&c.ts), want, "streamed, two threads: {two}");
        streamed_agrees(&w, &c.ts, &unfinished, orphans);
    }
    let mut rc = RawCollect::default();
    let w = trans::walk_streaming_raw(dev, &ht, ctx(), &mut rc).unwrap();
    assert_eq!(rc.began.as_ref(), Some(&d.head_tail), "raw begin");
    let mut linker = items::Linker::new();
    let mut ts = Vec::new();
    for (mut t, raw) in rc.ts {
        trans::decode_raw(&mut t, &raw, &ctx());
        linker.push(t, &mut |t| ts.push(t));
    }
    let (unfinished, orphans) = linker.finish(&mut |t| ts.push(t));
    assert_eq!(json(&ts), want, "streamed raw");
    assert_eq!(json(&w.incomplete), json(&d.incomplete), "raw: incomplete");
    streamed_agrees(&w, &ts, &unfinished, orphans);
}

/// mkfs's unmount record, then some transactions.
fn dirty_log(len: u32, n: u32) -> LogBuilder {
    let mut b = LogBuilder::new(len);
    b.record(&[unmount_op()]);
    b.tail = Lsn {
        cycle: 1,
        block: b.pos,
    };
    for t in 0..n {
        let tid = 0x100 + t;
        b.record(&whole_trans(
            tid,
            &[
                buf_item(64, 0b1011),
                efi_item(XFS_LI_EFI, 0x1000 + u64::from(t)),
            ],
        ));
    }
    b
}

#[test]
fn never_written_log_is_clean_and_empty() {
    let b = LogBuilder::new(1024);
    let d = decode_ring(&b).unwrap();
    assert!(d.head_tail.clean && d.head_tail.zeroed);
    assert_eq!(d.head_tail.head.block, 0);
    assert!(d.transactions.is_empty());
}

#[test]
fn unmount_record_at_the_head_is_clean() {
    let mut b = dirty_log(1024, 2);
    b.record(&[unmount_op()]);
    let d = decode_ring(&b).unwrap();
    assert!(d.head_tail.clean);
    assert_eq!(d.head_tail.head, d.head_tail.tail);
    assert_eq!(d.head_tail.head.block, b.pos);
    assert!(d.transactions.is_empty());
}

#[test]
fn dirty_log_decodes_every_transaction() {
    let b = dirty_log(1024, 3);
    let d = decode_ring(&b).unwrap();
    assert!(!d.head_tail.clean);
    assert_eq!(
        d.head_tail.head,
        Lsn {
            cycle: 1,
            block: b.pos
        }
    );
    assert_eq!(d.head_tail.tail, Lsn { cycle: 1, block: 2 });
    assert_eq!(d.records, 3);
    assert_eq!(d.records_crc_ok, 3);
    assert_eq!(d.transactions.len(), 3);
    let t = &d.transactions[1];
    assert_eq!(t.tid, 0x101);
    assert_eq!(t.header.unwrap().num_items, 4);
    let kinds: Vec<&str> = t.items.iter().map(|i| i.kind.name()).collect();
    assert_eq!(kinds, ["buf", "efi"]);
    assert_eq!(t.items[0].regions, 3);
    // Three EFIs, none done.
    assert_eq!(d.unfinished_intents.len(), 3);
    assert!(d.problems.is_empty(), "{:?}", d.problems);
}

#[test]
fn torn_write_at_the_head_moves_the_head_back() {
    let mut b = dirty_log(1024, 4);
    let last = b.prev;
    b.damage(last, 100);
    let d = decode_ring(&b).unwrap();
    let torn = d.head_tail.torn_write.clone().expect("torn write found");
    assert_eq!(torn.first_bad, last);
    assert_eq!(torn.old_head, b.pos);
    assert_eq!(d.head_tail.head.block, last);
    // The torn record's transaction is gone; the others remain.
    assert_eq!(d.transactions.len(), 3);
    assert!(d.crc_mismatches.is_empty());
}

#[test]
fn bad_crc_in_the_middle_is_reported_with_its_lsn() {
    let mut b = dirty_log(4096, 12);
    // Record 2 of 12: more than 8 records before the head.
    let victim = 2 + (b.pos - 2) / 12 * 2;
    let victim = {
        // Find the header at or after the guess.
        let mut v = victim;
        while crate::xfs::fs::be32(&b.ring[v as usize * 512..], 0) != Some(XLOG_HEADER_MAGIC_NUM) {
            v += 1;
        }
        v
    };
    b.damage(victim, 200);
    let d = decode_ring(&b).unwrap();
    assert!(d.head_tail.torn_write.is_none());
    assert_eq!(d.crc_mismatches.len(), 1);
    let m = &d.crc_mismatches[0];
    assert_eq!(
        m.lsn,
        Lsn {
            cycle: 1,
            block: victim
        }
    );
    assert_ne!(m.stored, m.computed);
    assert!(d
        .problems
        .iter()
        .any(|p| p.message.contains(&format!("1:{victim}"))));
    assert_eq!(d.transactions.len(), 12);
}

#[test]
fn split_transaction_header_and_continued_regions_reassemble() {
    let mut b = LogBuilder::new(1024);
    b.record(&[unmount_op()]);
    b.tail = Lsn {
        cycle: 1,
        block: b.pos,
    };
    let tid = 0x77;
    let hdr = trans_header(tid, 3);
    let item = buf_item(128, 0x3); // format + one 256-byte region
                                   // Record 1: START, the first 8 header bytes (CONTINUE).
    b.record(&[
        op(tid, XLOG_START_TRANS, vec![]),
        op(tid, XLOG_CONTINUE_TRANS, hdr[..8].to_vec()),
    ]);
    // Record 2: the header's rest, the format region, the data region's
    // first 100 bytes.
    b.record(&[
        op(tid, XLOG_WAS_CONT_TRANS | XLOG_END_TRANS, hdr[8..].to_vec()),
        op(tid, 0, item[0].clone()),
        op(tid, XLOG_CONTINUE_TRANS, item[1][..100].to_vec()),
    ]);
    // Record 3: a middle piece, the last piece, an EFD, the commit.
    b.record(&[
        op(
            tid,
            XLOG_WAS_CONT_TRANS | XLOG_CONTINUE_TRANS,
            item[1][100..200].to_vec(),
        ),
        op(
            tid,
            XLOG_WAS_CONT_TRANS | XLOG_END_TRANS,
            item[1][200..].to_vec(),
        ),
        op(tid, 0, efi_item(XFS_LI_EFD, 9)[0].clone()),
        op(tid, XLOG_COMMIT_TRANS, vec![]),
    ]);
    let d = decode_ring(&b).unwrap();
    assert_eq!(d.transactions.len(), 1, "{:?}", d.problems);
    let t = &d.transactions[0];
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(t.header.unwrap().num_items, 3);
    assert_eq!(t.start_lsn.block, 2);
    assert_eq!(t.items.len(), 2);
    assert_eq!(&*t.items[0].region_lens.view(), &[24, 256]);
    assert_eq!(t.items[0].problem(), None);
    assert_eq!(t.items[1].kind.name(), "efd");
    assert_eq!(d.orphan_dones, 1);
    assert_eq!(t.ops, 9);
}

#[test]
fn records_wrapping_the_physical_end() {
    // A 300-block ring: the records of cycle 1 run off the end.
    let mut b = LogBuilder::new(300);
    b.record(&[unmount_op()]);
    b.tail = Lsn { cycle: 1, block: 2 };
    let big = |tid: u32| whole_trans(tid, &[buf_item(64, 0xffff_ffff), buf_item(72, 0xffff_ffff)]);
    let mut n = 0;
    while b.cycle == 1 {
        if b.pos > 150 {
            b.tail = Lsn {
                cycle: 1,
                block: b.prev,
            };
        }
        b.record(&big(0x200 + n));
        n += 1;
    }
    b.record(&big(0x200 + n));
    n += 1;
    let d = decode_ring(&b).unwrap();
    assert_eq!(
        d.head_tail.head,
        Lsn {
            cycle: 2,
            block: b.pos
        }
    );
    assert_eq!(d.head_tail.tail, b.tail);
    assert!(d.head_tail.tail.block > d.head_tail.head.block);
    assert!(d.problems.is_empty(), "{:?}", d.problems);
    let live = d.transactions.len() as u32;
    assert!(live >= 2 && live < n, "{live} of {n}");
    for t in &d.transactions {
        assert_eq!(t.items.len(), 2);
        assert!(t.items.iter().all(|i| i.problem().is_none()));
    }
}

#[test]
fn records_with_extended_headers() {
    let mut b = LogBuilder::new(2048);
    b.h_size = 65536;
    b.record(&[unmount_op()]);
    b.tail = Lsn {
        cycle: 1,
        block: b.pos,
    };
    // One record of ~50 KiB of data: 2 header sectors, data blocks past 64.
    let items: Vec<Vec<Vec<u8>>> = (0..13).map(|i| buf_item(64 + i * 8, 0xffff_ffff)).collect();
    b.record(&whole_trans(0x300, &items));
    let d = decode_ring(&b).unwrap();
    assert_eq!(d.record_list[0].hblks, 2);
    assert!(d.record_list[0].len > 32768);
    assert_eq!(d.records_crc_ok, 1);
    assert_eq!(d.transactions.len(), 1);
    assert_eq!(d.transactions[0].items.len(), 13);
    assert!(d.transactions[0]
        .items
        .iter()
        .all(|i| i.problem().is_none()));
}

#[test]
fn overwritten_tail_moves_forward() {
    // Fill cycle 1, then write cycle 2 up to just before the tail.
    let mut b = LogBuilder::new(1200);
    b.record(&[unmount_op()]);
    let tx = |tid: u32| whole_trans(tid, &[buf_item(64, 0xff), buf_item(80, 0xff)]);
    let mut blocks = Vec::new();
    let mut n = 0;
    while b.cycle == 1 {
        blocks.push(b.record(&tx(n)));
        n += 1;
    }
    // Cycle 2 records; their tail is an old cycle-1 record just ahead.
    while b.pos < 900 {
        let t = *blocks.iter().find(|x| **x > b.pos + 20).unwrap();
        b.tail = Lsn { cycle: 1, block: t };
        b.record(&tx(n));
        n += 1;
    }
    let tail = b.tail.block;
    b.damage(tail, 300);
    let d = decode_ring(&b).unwrap();
    let moved = d.head_tail.tail_moved.clone().expect("tail moved");
    assert_eq!(moved.from, tail);
    assert!(moved.to > tail);
    assert_eq!(d.head_tail.tail.block, moved.to);
    assert!(d.crc_mismatches.is_empty());
    assert!(!d.transactions.is_empty());
}

#[test]
fn op_lengths_past_the_record_are_reported_not_followed() {
    let mut b = LogBuilder::new(1024);
    b.record(&[unmount_op()]);
    b.tail = Lsn {
        cycle: 1,
        block: b.pos,
    };
    let mut ops = whole_trans(0x400, &[buf_item(64, 1)]);
    ops[2].claim = Some(1 << 30);
    b.record(&ops);
    let d = decode_ring(&b).unwrap();
    assert!(
        d.problems.iter().any(|p| p.message.contains("claims")),
        "{:?}",
        d.problems
    );
    assert!(d.transactions.is_empty());
    assert_eq!(d.incomplete.len(), 1);
}

#[test]
fn head_tail_of_the_real_fixtures_match_the_kernel_facts() {
    // From xfs_logprint -t on the committed images (tests/fixtures/*.logt.txt).
    for (name, tail, head, clean) in [
        ("v5-4k-dirty", 2, 748, false),
        ("v5-1k-dirty", 2, 707, false),
        ("v5-sect4k", 688, 688, true),
    ] {
        let fs = crate::xfs::testutil::fixture_fs(name);
        let dev = LogDev::of_fs(&fs).unwrap();
        let ht = find_head_tail(&dev).unwrap();
        assert_eq!(
            (ht.tail.block, ht.head.block, ht.clean),
            (tail, head, clean),
            "{name}"
        );
    }
}

#[test]
fn every_walk_of_the_real_logs_agrees() {
    // Kept or streamed, on one thread or two: the same transactions, links
    // and counts (the intents fixture has intents with and without done
    // items; the wrapped and across-the-end logs have records put together
    // from both ends).
    for name in [
        "log-intents",
        "log-wrapped",
        "log-acrossend",
        "log-1k-rmap",
        "log-64kdir",
        "v5-formats",
    ] {
        let fs = crate::xfs::testutil::fixture_fs(name);
        let dev = LogDev::of_fs(&fs).unwrap();
        let d = decode(&fs, DecodeOptions::default()).unwrap();
        modes_agree(&dev, &d);
    }
}

/// Flip bytes of a real log's live records: every decode ends, with an
/// answer or an error, and never panics.
#[test]
fn byte_flips_in_a_real_log_never_panic() {
    let fs = crate::xfs::testutil::fixture_fs("v5-4k-dirty");
    let loc = LogLocation::of(&fs).unwrap();
    let start = loc.start_daddr.0 as usize * 512;
    let bytes = fs
        .img
        .read("log", start as u64, u64::from(loc.len_bbs) * 512)
        .unwrap();
    // The live part is blocks 2..748; flip within it, favouring headers and
    // the first bytes of blocks (op headers, format structures).
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut errors = 0;
    for round in 0..120 {
        let mut ring = bytes.clone();
        for _ in 0..(1 + round % 4) {
            let blk = 2 + (next() % 746) as usize;
            let off = if round % 2 == 0 {
                (next() % 64) as usize
            } else {
                (next() % 512) as usize
            };
            ring[blk * 512 + off] ^= (next() % 255 + 1) as u8;
        }
        let img = Image::new(ring);
        let dev = LogDev::new(&img, Daddr(0), loc.len_bbs, true).unwrap();
        match decode_dev(&dev, loc, ctx()) {
            Ok(d) => {
                let _ = serde_json::to_string(&LogJson {
                    d: &d,
                    ctx: Some(&ctx()),
                })
                .unwrap();
            }
            Err(e) => {
                errors += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    assert!(errors < 120);
}

#[test]
fn partly_written_last_record_is_not_live() {
    let mut b = dirty_log(1024, 3);
    let last = b.prev;
    let end = b.pos;
    // The last record's final blocks never reached the disk.
    for blk in end - 2..end {
        let at = blk as usize * 512;
        b.ring[at..at + 512].fill(0);
    }
    let d = decode_ring(&b).unwrap();
    assert_eq!(d.head_tail.head.block, last);
    assert!(d.head_tail.torn_write.is_none());
    assert_eq!(d.transactions.len(), 2);
}

#[test]
fn big_endian_writer_is_decoded_in_its_byte_order() {
    let mut b = LogBuilder::new(1024);
    b.record(&[unmount_op()]);
    b.tail = Lsn {
        cycle: 1,
        block: b.pos,
    };
    let tid = 0x55;
    let mut hdr = Vec::new();
    for v in [XFS_TRANS_HEADER_MAGIC, XFS_TRANS_CHECKPOINT, tid, 2] {
        hdr.extend_from_slice(&v.to_be_bytes());
    }
    let mut f = Vec::new();
    f.extend_from_slice(&XFS_LI_BUF.to_be_bytes());
    f.extend_from_slice(&2u16.to_be_bytes());
    f.extend_from_slice(&(u16::from(XFS_BLFT_AGI_BUF) << 11).to_be_bytes());
    f.extend_from_slice(&1u16.to_be_bytes());
    f.extend_from_slice(&2i64.to_be_bytes());
    f.extend_from_slice(&1u32.to_be_bytes());
    f.extend_from_slice(&0b110u32.to_be_bytes());
    let blk = b.record(&[
        op(tid, XLOG_START_TRANS, vec![]),
        op(tid, 0, hdr),
        op(tid, 0, f),
        op(tid, 0, vec![0; 256]),
        op(tid, XLOG_COMMIT_TRANS, vec![]),
    ]);
    // h_fmt: big-endian Linux.
    let at = blk as usize * 512;
    b.ring[at + 300..at + 304].copy_from_slice(&XLOG_FMT_LINUX_BE.to_be_bytes());
    // Recompute the CRC over the changed header.
    b.ring[at + 32..at + 36].fill(0);
    let hdr_bytes = b.ring[at..at + 512].to_vec();
    let data = b.ring[at + 512..at + 1024].to_vec();
    let crc = record_crc(&hdr_bytes, &data, 512, XLOG_REC_SIZE);
    b.ring[at + 32..at + 36].copy_from_slice(&crc.to_le_bytes());
    let d = decode_ring(&b).unwrap();
    assert_eq!(d.transactions.len(), 1, "{:?}", d.problems);
    let t = &d.transactions[0];
    assert_eq!(t.order, items::Order::Big);
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert_eq!(t.header.unwrap().num_items, 2);
    let ItemBody::Buf(buf) = &t.items[0].body else {
        panic!("{:?}", t.items[0].body)
    };
    assert_eq!((buf.blkno, buf.buf_type), (2, XFS_BLFT_AGI_BUF));
    assert_eq!(buf.runs(), vec![bitmap::Run { first: 1, count: 2 }]);
}

/// A real record (v5-4k-dirty, log block 2) and targeted corruptions.
#[test]
fn real_record_and_corruptions() {
    let fs = crate::xfs::testutil::fixture_fs("v5-4k-dirty");
    let loc = LogLocation::of(&fs).unwrap();
    let dev = LogDev::of_fs(&fs).unwrap();
    let mut r = record::RecordReader::new();
    let rec = r.read(&dev, 2).unwrap();
    assert_eq!(rec.crc, CrcCheck::Ok);
    assert_eq!(rec.header.lsn, Lsn { cycle: 1, block: 2 });
    assert_eq!((rec.header.len, rec.header.num_logops), (32256, 72));
    // The first op is the START of the first checkpoint (xfs_logprint: tid
    // 0x29c9bd0f).
    assert_eq!(crate::xfs::fs::be32(r.data(), 0), Some(0x29c9_bd0f));
    assert_eq!(r.data().get(9), Some(&XLOG_START_TRANS));

    let start = loc.start_daddr.0 * 512;
    let bytes = fs
        .img
        .read("log", start, u64::from(loc.len_bbs) * 512)
        .unwrap();
    let check = |at: usize, v: u8| {
        let mut ring = bytes.clone();
        ring[at] = v;
        let img = Image::new(ring);
        let dev = LogDev::new(&img, Daddr(0), loc.len_bbs, true).unwrap();
        record::RecordReader::new().read(&dev, 2)
    };
    // A data byte: the CRC says so, with both values.
    match check(2 * 512 + 512 + 100, 0x42).unwrap().crc {
        CrcCheck::Bad { stored, computed } => assert_ne!(stored, computed),
        c => panic!("{c:?}"),
    }
    // h_len beyond the buffer size, and a bad version: refused, named.
    let e = check(2 * 512 + 12, 0x7f).unwrap_err().to_string();
    assert!(e.contains("h_len") && e.contains("daddr"), "{e}");
    let e = check(2 * 512 + 11, 9).unwrap_err().to_string();
    assert!(e.contains("h_version 9"), "{e}");
}

#[test]
fn one_transaction_decodes_again_with_details() {
    let fs = crate::xfs::testutil::fixture_fs("log-wrapped");
    let d = decode(&fs, DecodeOptions::default()).unwrap();
    let t = &d.transactions[1];
    let again = decode_transaction(&fs, t, DecodeOptions::DETAIL)
        .unwrap()
        .expect("found");
    assert_eq!(again.tid, t.tid);
    assert_eq!(again.items.len(), t.items.len());
    for (a, b) in again.items.iter().zip(&t.items) {
        assert_eq!((a.kind, a.regions), (b.kind, b.regions));
        assert_eq!(&*a.region_lens.view(), &*b.region_lens.view());
    }
    // Details: inode cores and directory entry names are there now.
    assert!(again
        .items
        .iter()
        .any(|i| matches!(&i.body, ItemBody::Inode(n) if n.core.is_some())));
    let names = d
        .transactions
        .iter()
        .take(20)
        .filter_map(|t| decode_transaction(&fs, t, DecodeOptions::DETAIL).unwrap())
        .flat_map(|t| t.items)
        .filter_map(|i| match i.body {
            ItemBody::Buf(b) => b.dir_entries,
            _ => None,
        })
        .map(|e| e.iter().filter(|x| x.name.is_some()).count())
        .sum::<usize>();
    assert!(names > 10, "{names}");
}

/// A 64 KiB directory block made of sixteen 4 KiB extents is logged as
/// sixteen buffer items in order (xfs_logprint -t on log-64kdir-frag): they
/// are placed at 0, 4096, ... in the block, and the entries found in each
/// carry tags inside that segment.
#[test]
fn discontiguous_directory_blocks_are_placed_by_segment() {
    let fs = crate::xfs::testutil::fixture_fs("log-64kdir-frag");
    let d = decode(&fs, DecodeOptions::DETAIL).unwrap();
    let t = &d.transactions[1];
    let segs: Vec<(i64, items::Segment)> = t
        .items
        .iter()
        .filter_map(|i| match &i.body {
            ItemBody::Buf(b) if b.len == 8 && b.buf_type == XFS_BLFT_DIR_DATA_BUF => {
                Some((b.blkno, b.segment))
            }
            _ => None,
        })
        .collect();
    assert_eq!(segs.len(), 16);
    for (k, (_, s)) in segs.iter().enumerate() {
        assert_eq!(*s, items::Segment::Part(k as u32 * 4096));
    }
    let mut entries = 0;
    for i in &t.items {
        if let ItemBody::Buf(b) = &i.body {
            if let (items::Segment::Part(o), Some(es)) = (b.segment, &b.dir_entries) {
                for e in es.iter() {
                    assert!(
                        e.offset >= o && e.offset < o + 4096,
                        "{e:?} in segment at {o}"
                    );
                    entries += 1;
                }
            }
        }
    }
    assert!(entries > 500, "{entries}");
    // Fields of a later segment are named by block offset, not as a header.
    let ItemBody::Buf(b) = &t
        .items
        .iter()
        .find(|i| matches!(&i.body, ItemBody::Buf(b) if b.segment == items::Segment::Part(4096)))
        .unwrap()
        .body
    else {
        unreachable!()
    };
    let f = crate::xfs::log::run_fields::describe_run(
        b,
        bitmap::Run {
            first: 0,
            count: 32,
        },
        &ItemContext::of(&fs, DecodeOptions::DETAIL),
    );
    assert!(!f.iter().any(|s| s.contains("header")), "{f:?}");
    assert!(f.iter().any(|s| s.starts_with("entry \"")), "{f:?}");
}

#[test]
fn segments_that_do_not_make_a_block_are_unknown() {
    let mk = |len: u16, t: u8| Item {
        kind: items::ItemKind(XFS_LI_BUF),
        regions: 1,
        declared: 1,
        region_lens: items::RegionLens::from_slice(&[24]),
        body: ItemBody::Buf(items::BufItem {
            blkno: 0,
            len,
            flags: u16::from(t) << 11,
            buf_type: t,
            map_size: 1,
            map: items::SmallU32s::from_slice(&[1]),
            dir_entries: None,
            segment: items::Segment::Whole,
            head: None,
        }),
    };
    let d = XFS_BLFT_DIR_DATA_BUF;
    let its = vec![
        mk(8, d),
        mk(8, d),
        mk(8, XFS_BLFT_AGF_BUF),
        mk(8, d),
        mk(16, d),
        mk(8, d),
    ];
    let s = items::segments(&its, 16384);
    use items::Segment::*;
    assert_eq!(
        s,
        vec![Unknown, Unknown, Whole, Part(0), Part(4096), Part(12288)]
    );
}

/// The unlinked committed transactions of `b`'s log, in commit order.
fn unlinked(b: &LogBuilder) -> Vec<Transaction> {
    let img = b.image();
    let dev = LogDev::new(&img, Daddr(0), b.len, true)
        .unwrap()
        .with_uuid(UUID);
    let ht = find_head_tail(&dev).unwrap();
    trans::walk_with(&dev, &ht, ctx(), false)
        .unwrap()
        .transactions
}

/// Every transaction of a log whose intents are never finished waits
/// behind the first one; past its limit a linker hands on the oldest
/// anyway, in order, each saying so, and finds the same unfinished
/// intents as the pairing of the whole list.
#[test]
fn a_linker_past_its_limit_hands_on_the_oldest() {
    let b = dirty_log(4096, 40);
    let d = decode_ring(&b).unwrap();
    assert_eq!(d.transactions.len(), 40);
    assert_eq!(d.unfinished_intents.len(), 40);
    for (limit, early) in [(items::MAX_HELD_ITEMS, 0), (10, 35)] {
        let mut l = items::Linker::with_limit(limit);
        let mut out = Vec::new();
        for t in unlinked(&b) {
            // Two items each: a buffer and an intent left open.
            assert_eq!(t.items.len(), 2);
            l.push(t, &mut |t| out.push(t));
        }
        assert_eq!(out.len(), early, "limit {limit}");
        let (unfinished, orphans) = l.finish(&mut |t| out.push(t));
        let tids = |ts: &[Transaction]| ts.iter().map(|t| t.tid).collect::<Vec<_>>();
        assert_eq!(tids(&out), tids(&d.transactions));
        assert_eq!(unfinished, d.unfinished_intents);
        assert_eq!(orphans, d.orphan_dones);
        for (i, t) in out.iter().enumerate() {
            let said = t.problems.iter().any(|p| p.contains("handed on before"));
            assert_eq!(said, i < early, "limit {limit}, transaction {i}");
        }
    }
}

/// A done item whose intent was handed on early still names its intent;
/// the intent is no longer left unfinished.
#[test]
fn a_done_item_after_its_intent_was_handed_on() {
    let mut b = dirty_log(4096, 0);
    b.record(&whole_trans(0x100, &[efi_item(XFS_LI_EFI, 0x9000)]));
    for t in 1..20u32 {
        b.record(&whole_trans(0x100 + t, &[buf_item(64 + i64::from(t), 1)]));
    }
    b.record(&whole_trans(0x200, &[efi_item(XFS_LI_EFD, 0x9000)]));
    let d = decode_ring(&b).unwrap();
    assert!(d.unfinished_intents.is_empty());
    let done_link = d.transactions[20].items[0].link();
    assert_eq!(
        done_link,
        Some(items::ItemRef {
            transaction: 0,
            item: 0
        })
    );
    let mut l = items::Linker::with_limit(4);
    let mut out = Vec::new();
    for t in unlinked(&b) {
        l.push(t, &mut |t| out.push(t));
    }
    let (unfinished, orphans) = l.finish(&mut |t| out.push(t));
    assert!(unfinished.is_empty());
    assert_eq!(orphans, 0);
    assert_eq!(out.len(), 21);
    assert_eq!(out[20].items[0].link(), done_link);
    assert_eq!(out[0].items[0].link(), None);
    assert!(
        out[0].problems[0].contains("1 of its intents"),
        "{:?}",
        out[0].problems
    );
    assert!(out[1..].iter().all(|t| t.problems.is_empty()));
}
