//! Mutation runs over kernel-made fixtures: each fixture is damaged in
//! memory (bit flips, byte runs, words set to extremes, zeroed blocks,
//! btree/directory/attr cycles, huge counts and lengths, truncation, log
//! records damaged with their CRC made good again so the damage is
//! decoded), then every reading command of the command line runs on it
//! through the library (`common/exercise.rs`). Each image must finish
//! without a panic, within a time bound, under a memory bound, and a
//! command that fails must name the structure and the place.
//!
//! The quick form runs with the other tests. The long form is
//! `scripts/mutation-run` (`MUTATION_IMAGES=N cargo test --release --test
//! mutation -- --ignored --nocapture`); it prints its figures and writes
//! them to `MUTATION_RESULTS` when that is set. `MUTATION_ONLY=FIXTURE:INDEX`
//! replays one mutated image of a run (same seed) and prints what it was.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

mod common;
#[path = "common/exercise.rs"]
mod exercise;
#[path = "common/sites.rs"]
mod sites;

use exercise::Mutated;
use sites::{be16, be32, be64, fix_crc, fix_record_crc, Fixture, Kind, Site};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------
// Memory: every allocation is counted, so each image's peak is known, and
// a hard cap turns a runaway allocation into a failed test instead of a
// machine out of memory.

struct Counting;
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Allocations beyond this many bytes in all fail (the process aborts).
static HARD_CAP: AtomicUsize = AtomicUsize::new(3 << 30);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        if now > HARD_CAP.load(Ordering::Relaxed) {
            CURRENT.fetch_sub(l.size(), Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        PEAK.fetch_max(now, Ordering::Relaxed);
        let p = System.alloc(l);
        if p.is_null() {
            CURRENT.fetch_sub(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        if now > HARD_CAP.load(Ordering::Relaxed) {
            CURRENT.fetch_sub(l.size(), Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        PEAK.fetch_max(now, Ordering::Relaxed);
        let p = System.alloc_zeroed(l);
        if p.is_null() {
            CURRENT.fetch_sub(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        CURRENT.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() {
            let grow = new - l.size();
            let now = CURRENT.fetch_add(grow, Ordering::Relaxed) + grow;
            if now > HARD_CAP.load(Ordering::Relaxed) {
                CURRENT.fetch_sub(grow, Ordering::Relaxed);
                return std::ptr::null_mut();
            }
            PEAK.fetch_max(now, Ordering::Relaxed);
            let q = System.realloc(p, l, new);
            if q.is_null() {
                CURRENT.fetch_sub(grow, Ordering::Relaxed);
            }
            q
        } else {
            let q = System.realloc(p, l, new);
            if !q.is_null() {
                CURRENT.fetch_sub(l.size() - new, Ordering::Relaxed);
            }
            q
        }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

// ---------------------------------------------------------------------------
// A small deterministic generator (SplitMix64): a run is reproduced from
// its seed and an image's index.

struct Rng(u64);
impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    fn idx(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn load(name: &str) -> Fixture {
    Fixture::from_bytes(std::fs::read(common::image(name)).unwrap())
}

fn site<'a>(fx: &'a Fixture, rng: &mut Rng) -> &'a Site {
    let (_, v) = &fx.by_kind[rng.idx(fx.by_kind.len())];
    &fx.sites[v[rng.idx(v.len())]]
}

// ---------------------------------------------------------------------------
// Mutations.

const EXTREMES: [u64; 8] = [
    0,
    u64::MAX,
    0x7fff_ffff,
    0x8000_0000,
    0x7fff_ffff_ffff_ffff,
    1,
    0xffff_fffe,
    0x0001_0000,
];

fn put(b: &mut [u8], off: usize, width: usize, v: u64) {
    if off + width <= b.len() {
        let bytes = v.to_be_bytes();
        b[off..off + width].copy_from_slice(&bytes[8 - width..]);
    }
}

fn set_word(rng: &mut Rng, b: &mut [u8], off: usize) -> String {
    let width = [2usize, 4, 4, 8][rng.idx(4)];
    let off = off & !(width - 1);
    let v = EXTREMES[rng.idx(EXTREMES.len())];
    put(b, off, width, v);
    format!("{width}-byte word at +{off} set to {v:#x}")
}

/// Damage a structure's bytes; returns what was done.
fn damage(fx: &Fixture, s: &Site, rng: &mut Rng, b: &mut [u8]) -> String {
    let len = b.len();
    // Headers and inode cores are where the interesting fields are.
    let near = |rng: &mut Rng| {
        if rng.chance(60) {
            rng.idx(len.min(256))
        } else {
            rng.idx(len)
        }
    };
    match rng.below(100) {
        0..=29 => {
            let n = 1 + rng.idx(8);
            let mut at = Vec::new();
            for _ in 0..n {
                let o = near(rng);
                let bit = rng.idx(8);
                b[o] ^= 1 << bit;
                at.push(format!("+{o}.{bit}"));
            }
            format!("bits flipped at {}", at.join(","))
        }
        30..=47 => {
            let o = near(rng);
            let n = (1 + rng.idx(32)).min(len - o);
            let fill = rng.below(3);
            for x in &mut b[o..o + n] {
                *x = match fill {
                    0 => rng.next() as u8,
                    1 => 0xff,
                    _ => 0,
                };
            }
            format!(
                "{n} bytes at +{o} overwritten ({})",
                ["random", "0xff", "zero"][fill as usize]
            )
        }
        48..=67 => {
            let o = near(rng);
            set_word(rng, b, o)
        }
        68..=71 => {
            b.fill(0);
            "zeroed".into()
        }
        72..=85 => cycle(fx, s, rng, b),
        _ => huge(s, rng, b),
    }
}

/// Point a sibling or child pointer back at the block itself or its tree's
/// root.
fn cycle(fx: &Fixture, s: &Site, rng: &mut Rng, b: &mut [u8]) -> String {
    match s.kind {
        Kind::ShortBtree if b.len() >= 56 => {
            let own = fx.own_agbno(s, b, 16);
            let level = be16(b, 4);
            let hdr = if s.crc_off.is_some() || &b[0..4] == b"AB3B" {
                56
            } else {
                16
            };
            match rng.below(3) {
                0 => {
                    put(b, 12, 4, own);
                    format!("short btree rightsib -> itself ({own})")
                }
                1 => {
                    put(b, 8, 4, own);
                    format!("short btree leftsib -> itself ({own})")
                }
                _ if level > 0 => {
                    // The first child pointer: after the keys of a full node.
                    let numrecs = usize::from(be16(b, 6)).max(1);
                    let keylen = match &b[0..4] {
                        b"RMB3" => 20,
                        b"IAB3" | b"FIB3" | b"IABT" | b"FIBT" | b"R3FC" => 4,
                        _ => 8,
                    };
                    let maxrecs = (b.len() - hdr) / (keylen + 4);
                    let ptr = hdr + maxrecs * keylen;
                    let k = rng.idx(numrecs);
                    put(b, ptr + k * 4, 4, own);
                    format!("short btree node child {k} -> itself ({own})")
                }
                _ => {
                    put(b, 12, 4, own);
                    format!("short btree rightsib -> itself ({own})")
                }
            }
        }
        Kind::LongBtree if b.len() >= 72 => {
            let own_ag = fx.own_agbno(s, b, 24);
            let daddr = if be64(b, 24) != 0 {
                be64(b, 24)
            } else {
                s.off / 512
            };
            let agno = (daddr * 512 / fx.blocksize) / fx.agblocks;
            let own = (agno << fx.agblklog) | own_ag;
            if rng.chance(50) {
                put(b, 16, 8, own);
                format!("bmbt rightsib -> itself ({own})")
            } else {
                put(b, 8, 8, own);
                format!("bmbt leftsib -> itself ({own})")
            }
        }
        Kind::DaBlock if b.len() >= 64 => {
            let v5 = s.crc_off.is_some();
            let magic = be16(b, 8);
            let is_node = magic == 0x3ebe || magic == 0xfebe;
            // The dablk of a directory's first leaf, or 0 (an attr root).
            let root = if rng.chance(50) {
                0
            } else {
                (32u64 << 30) / fx.blocksize
            };
            match rng.below(3) {
                0 => {
                    put(b, 0, 4, root);
                    format!("da forw -> {root}")
                }
                1 => {
                    put(b, 4, 4, root);
                    format!("da back -> {root}")
                }
                _ if is_node => {
                    let hdr = if v5 { 64 } else { 16 };
                    let count = usize::from(be16(b, if v5 { 56 } else { 12 })).max(1);
                    let k = rng.idx(count);
                    put(b, hdr + k * 8 + 4, 4, root);
                    format!("da node entry {k} before -> {root}")
                }
                _ => {
                    put(b, 0, 4, root);
                    format!("da forw -> {root}")
                }
            }
        }
        _ => {
            let o = rng.idx(b.len().min(128));
            set_word(rng, b, o)
        }
    }
}

/// Counts and lengths set huge.
fn huge(s: &Site, rng: &mut Rng, b: &mut [u8]) -> String {
    let v = [0xffffu64, 0x8000, 0x7fff, 0xfffe][rng.idx(4)];
    let v32 = [0xffff_ffffu64, 0x7fff_ffff, 0x10_0000, 0xffff][rng.idx(4)];
    let v64 = [u64::MAX, 0x7fff_ffff_ffff_ffff, 1 << 40, 1 << 62][rng.idx(4)];
    let (what, off, width, val) = match s.kind {
        Kind::ShortBtree | Kind::LongBtree => ("numrecs", 6, 2, v),
        Kind::Inode => match rng.below(7) {
            0 => ("di_size", 56, 8, v64),
            1 => ("di_nblocks", 64, 8, v64),
            2 => ("di_nextents", 76, 4, v32),
            3 => ("di_anextents", 80, 2, v),
            4 => ("di_forkoff", 82, 1, 0xff),
            5 => ("di_big_nextents", 24, 8, v64),
            _ => ("di_nlink", 16, 4, v32),
        },
        Kind::DaBlock => {
            if s.crc_off.is_some() {
                ("count", 56, 2, v)
            } else {
                ("count", 12, 2, v)
            }
        }
        Kind::DirData => (
            "bestfree length",
            if s.crc_off.is_some() { 50 } else { 6 },
            2,
            v,
        ),
        Kind::Remote => ("rm_bytes/sl_bytes", 8, 4, v32),
        Kind::AgHeader => match &b[0..4] {
            b"XAGF" => ["agf_length", "agf_flcount", "agf_freeblks", "agf_longest"]
                .iter()
                .zip([12usize, 36, 52, 56])
                .nth(rng.idx(4))
                .map(|(w, o)| (*w, o, 4, v32))
                .unwrap(),
            b"XAGI" => ["agi_length", "agi_count", "agi_freecount", "agi_level"]
                .iter()
                .zip([12usize, 16, 32, 28])
                .nth(rng.idx(4))
                .map(|(w, o)| (*w, o, 4, v32))
                .unwrap(),
            _ => ("agfl_seqno", 4, 4, v32),
        },
        Kind::Superblock => [
            "sb_agcount",
            "sb_agblocks",
            "sb_logblocks",
            "sb_icount",
            "sb_dblocks",
        ]
        .iter()
        .zip([(88usize, 4usize), (84, 4), (96, 4), (128, 8), (8, 8)])
        .nth(rng.idx(5))
        .map(|(w, (o, wd))| (*w, o, wd, if wd == 8 { v64 } else { v32 }))
        .unwrap(),
        Kind::LogRecord => ("h_num_logops", 40, 4, v32),
    };
    put(b, off, width, val);
    format!("{what} set to {val:#x}")
}

/// Damage a log record (header fields or its data, never the cycle
/// words the header keeps) and make its CRC good again.
fn damage_record(fx: &Fixture, s: &Site, rng: &mut Rng) -> Option<(String, u64, Vec<u8>)> {
    let hb = &fx.base[s.off as usize..];
    let version = be32(hb, 8);
    let h_len = be32(hb, 12);
    let size = be32(hb, 320);
    let hblks = if version & 2 != 0 && size > 32768 {
        size.div_ceil(32768)
    } else {
        1
    } as usize;
    let data_bbs = h_len.div_ceil(512) as usize;
    let total = (hblks + data_bbs) * 512;
    if h_len == 0 || h_len > 256 << 10 || total > hb.len() {
        return None;
    }
    let mut rec = hb[..total].to_vec();
    let had_crc = u32::from_le_bytes(rec[32..36].try_into().unwrap()) != 0;
    let hdr_len = hblks * 512;
    let what = if rng.chance(30) {
        let (name, off, width) = [
            ("h_len", 12, 4),
            ("h_num_logops", 40, 4),
            ("h_lsn", 16, 8),
            ("h_tail_lsn", 24, 8),
            ("h_prev_block", 36, 4),
            ("h_cycle", 4, 4),
            ("h_size", 320, 4),
            ("h_fmt", 300, 4),
            ("h_cycle_data[0]", 44, 4),
        ][rng.idx(9)];
        let v = if rng.chance(50) {
            EXTREMES[rng.idx(EXTREMES.len())]
        } else {
            let old = if width == 8 {
                be64(&rec, off)
            } else {
                u64::from(be32(&rec, off))
            };
            old.wrapping_add(rng.below(9)).wrapping_sub(4)
        };
        put(&mut rec, off, width, v);
        format!("record header {name} set to {v:#x}")
    } else {
        let n = 1 + rng.idx(4);
        let mut at = Vec::new();
        let data_len = (h_len as usize).min(total - hdr_len);
        for _ in 0..n {
            // Often near the start of an op header or item format.
            let mut o = if rng.chance(50) {
                rng.idx(data_len.min(256))
            } else {
                rng.idx(data_len)
            };
            if o % 512 < 4 {
                o += 4;
            }
            let o = hdr_len + o.min(data_len.saturating_sub(1));
            if o % 512 < 4 {
                continue;
            }
            match rng.below(3) {
                0 => {
                    let bit = rng.idx(8);
                    rec[o] ^= 1 << bit;
                    at.push(format!("bit +{}.{bit}", o - hdr_len));
                }
                1 => {
                    let w = o & !3;
                    let w = if w % 512 < 4 { w + 4 } else { w };
                    let v = EXTREMES[rng.idx(EXTREMES.len())] as u32;
                    put(&mut rec, w, 4, u64::from(v));
                    at.push(format!("word +{} = {v:#x}", w - hdr_len));
                }
                _ => {
                    rec[o] = rng.next() as u8;
                    at.push(format!("byte +{}", o - hdr_len));
                }
            }
        }
        format!("record data: {}", at.join(", "))
    };
    if had_crc {
        fix_record_crc(&mut rec);
    }
    Some((format!("{what} (CRC made good)"), s.off, rec))
}

/// One mutated image of a fixture, and what was done to it.
fn mutate(fx: &Fixture, rng: &mut Rng) -> (String, Mutated) {
    let mut m = Mutated::new(fx.base.clone());
    let mut patches = Vec::new();
    let mut what = Vec::new();
    let rounds = if rng.chance(8) { 2 + rng.idx(3) } else { 1 };
    for _ in 0..rounds {
        if rng.chance(3) || fx.sites.is_empty() {
            let len = m.len;
            let cut = if rng.chance(50) || fx.sites.is_empty() {
                rng.below(len)
            } else {
                let s = site(fx, rng);
                (s.off + rng.below(s.len as u64)).min(len)
            };
            m.len = cut;
            what.push(format!("truncated to {cut} bytes"));
            continue;
        }
        let s = site(fx, rng).clone();
        if s.kind == Kind::LogRecord
            || (rng.chance(10) && fx.by_kind.iter().any(|k| k.0 == Kind::LogRecord))
        {
            let r = if s.kind == Kind::LogRecord {
                s.clone()
            } else {
                let v = &fx
                    .by_kind
                    .iter()
                    .find(|k| k.0 == Kind::LogRecord)
                    .unwrap()
                    .1;
                fx.sites[v[rng.idx(v.len())]].clone()
            };
            if let Some((w, off, bytes)) = damage_record(fx, &r, rng) {
                what.push(format!("log record at byte {off}: {w}"));
                patches.push((off, bytes));
                continue;
            }
        }
        let mut b = fx.bytes(&s);
        if b.is_empty() {
            continue;
        }
        let w = damage(fx, &s, rng, &mut b);
        let fixed = match s.crc_off {
            Some(c) if rng.chance(75) && c + 4 <= b.len() => {
                fix_crc(&mut b, c);
                " (CRC made good)"
            }
            _ => "",
        };
        what.push(format!("{} at byte {}: {w}{fixed}", s.what, s.off));
        patches.push((s.off, b));
    }
    m.patches = Arc::new(patches);
    (what.join("; "), m)
}

// ---------------------------------------------------------------------------
// The runner: a worker thread runs every command on an image; the caller
// waits for it with a time bound.

#[derive(Default)]
struct Figures {
    images: u64,
    runs: u64,
    failed_runs: u64,
    panics: Vec<String>,
    hangs: Vec<String>,
    unplaced: Vec<String>,
    over_memory: Vec<String>,
    peak_bytes: usize,
    peak_what: String,
    slowest: Duration,
    slowest_what: String,
    by_fixture: Vec<(String, u64)>,
    errors_sample: Vec<String>,
    seconds_by_command: std::collections::BTreeMap<&'static str, f64>,
}

type Job = (String, Mutated);
type Done = (
    String,
    Result<Vec<exercise::Outcome>, String>,
    Duration,
    usize,
);

static PANIC_MSG: Mutex<Option<String>> = Mutex::new(None);

fn worker() -> (mpsc::Sender<Job>, mpsc::Receiver<Done>) {
    let (jtx, jrx) = mpsc::channel::<Job>();
    let (dtx, drx) = mpsc::channel::<Done>();
    let spawned = std::thread::Builder::new()
        .name("mutation-worker".into())
        .spawn(move || {
            for (what, m) in jrx {
                let base = CURRENT.load(Ordering::Relaxed);
                PEAK.store(base, Ordering::Relaxed);
                let t = Instant::now();
                let r =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| exercise::all(&m)));
                let took = t.elapsed();
                let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
                drop(m);
                let r = r.map_err(|_| {
                    PANIC_MSG
                        .lock()
                        .unwrap()
                        .take()
                        .unwrap_or_else(|| "panic".into())
                });
                if dtx.send((what, r, took, peak)).is_err() {
                    break;
                }
            }
        });
    spawned.unwrap();
    (jtx, drx)
}

struct Limits {
    per_image: Duration,
    memory: usize,
}

fn run(fixtures: &[&str], images: u64, seed: u64, limits: &Limits, f: &mut Figures) {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() == Some("mutation-worker") {
            *PANIC_MSG.lock().unwrap() = Some(info.to_string());
        } else {
            default(info);
        }
    }));
    let only = std::env::var("MUTATION_ONLY").ok();
    let want: Option<(String, u64)> = only.as_ref().and_then(|o| {
        let (n, i) = o.split_once(':')?;
        Some((n.to_string(), i.parse().ok()?))
    });
    // Every fixture is loaded once; images go round them in turn, so a
    // run cut short by its time budget has damaged each about as often.
    let fxs: Vec<(u64, &str, Fixture)> = fixtures
        .iter()
        .enumerate()
        .filter(|(_, n)| want.as_ref().is_none_or(|w| w.0 == **n))
        .map(|(fi, name)| {
            let fx = load(name);
            eprintln!(
                "{name}: {} structures found ({})",
                fx.sites.len(),
                fx.by_kind
                    .iter()
                    .map(|(k, v)| format!("{k:?} {}", v.len()))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            (fi as u64, *name, fx)
        })
        .collect();
    let budget = std::env::var("MUTATION_SECONDS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_secs);
    let started = Instant::now();
    let mut counts = vec![0u64; fxs.len()];
    let (mut jtx, mut drx) = worker();
    let mut i = 0u64;
    'rounds: loop {
        if let Some(w) = &want {
            if i > w.1 {
                break;
            }
        }
        for (k, (fi, name, fx)) in fxs.iter().enumerate() {
            if f.images >= images || budget.is_some_and(|b| started.elapsed() >= b) {
                break 'rounds;
            }
            let mut rng = Rng::new(seed ^ (fi << 40) ^ i.wrapping_mul(0x1000_0001));
            let (what, m) = mutate(fx, &mut rng);
            let what = format!("{name}:{i}: {what}");
            if let Some(w) = &want {
                if w.1 != i {
                    continue;
                }
                eprintln!("{what}");
                if let Ok(p) = std::env::var("MUTATION_SAVE") {
                    std::fs::write(&p, m.to_vec()).unwrap();
                    eprintln!("saved to {p}");
                }
            }
            counts[k] += 1;
            f.images += 1;
            jtx.send((what.clone(), m)).unwrap();
            let Ok((what, r, took, peak)) = drx.recv_timeout(limits.per_image) else {
                eprintln!("HANG (over {:?}): {what}", limits.per_image);
                f.hangs.push(what);
                // The stuck thread cannot be stopped: a new worker goes on.
                (jtx, drx) = worker();
                continue;
            };
            if took > f.slowest {
                f.slowest = took;
                f.slowest_what = what.clone();
            }
            if peak > f.peak_bytes {
                f.peak_bytes = peak;
                f.peak_what = what.clone();
            }
            if peak > limits.memory {
                f.over_memory.push(format!("{what}: {peak} bytes"));
            }
            match r {
                Err(p) => {
                    eprintln!("PANIC: {what}: {p}");
                    f.panics.push(format!("{what}: {p}"));
                }
                Ok(outs) => {
                    for o in &outs {
                        let e = f.seconds_by_command.entry(o.command).or_insert(0.0);
                        *e += o.seconds;
                    }
                    for o in outs {
                        f.runs += 1;
                        if let Some(e) = &o.error {
                            f.failed_runs += 1;
                            if only.is_some() {
                                eprintln!("  {}: {e}", o.command);
                            }
                            // One message of each shape (numbers left out).
                            let shape = |e: &str| -> String {
                                e.split_whitespace()
                                    .map(|w| {
                                        if w.contains(|c: char| c.is_ascii_digit()) {
                                            "#"
                                        } else {
                                            w
                                        }
                                    })
                                    .collect::<Vec<_>>()
                                    .join(" ")
                                    .chars()
                                    .take(70)
                                    .collect()
                            };
                            let sh = shape(e);
                            if f.errors_sample.len() < 400
                                && !f
                                    .errors_sample
                                    .iter()
                                    .any(|x| shape(x.split_once(": ").map_or("", |p| p.1)) == sh)
                            {
                                f.errors_sample.push(format!("{}: {e}", o.command));
                            }
                        } else if only.is_some() {
                            eprintln!("  {}: ok ({} problems)", o.command, o.problems);
                        }
                        for u in o.unplaced {
                            f.unplaced.push(format!("{what}: {}: {u}", o.command));
                        }
                    }
                }
            }
        }
        i += 1;
    }
    for ((_, name, _), c) in fxs.iter().zip(counts) {
        f.by_fixture.push((name.to_string(), c));
    }
}

fn mib(b: usize) -> String {
    format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
}

fn summary(f: &Figures, seed: u64, secs: f64) -> String {
    let mut t = String::new();
    t.push_str(&format!(
        "seed {seed:#x}: {} images, {} runs ({} ended in an error), {} panics, {} hangs, {} errors without a place, {} over the memory bound; peak memory of one image {} ({}); slowest image {:.3} s ({}); {secs:.0} s in all\n",
        f.images,
        f.runs,
        f.failed_runs,
        f.panics.len(),
        f.hangs.len(),
        f.unplaced.len(),
        f.over_memory.len(),
        mib(f.peak_bytes),
        f.peak_what,
        f.slowest.as_secs_f64(),
        f.slowest_what,
    ));
    t.push_str("  seconds by command:");
    for (c, s) in &f.seconds_by_command {
        t.push_str(&format!(" {c} {s:.1};"));
    }
    t.push('\n');
    if let Some(hwm) = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(str::to_string)
        })
    {
        t.push_str(&format!(
            "  the process's peak resident memory ({}, every fixture loaded): {}\n",
            "VmHWM",
            hwm.trim_start_matches("VmHWM:").trim()
        ));
    }
    for (n, c) in &f.by_fixture {
        t.push_str(&format!("  {n}: {c} images\n"));
    }
    t
}

fn check(f: &Figures) {
    let show = |v: &[String]| v.iter().take(10).cloned().collect::<Vec<_>>().join("\n");
    assert!(f.panics.is_empty(), "panics:\n{}", show(&f.panics));
    assert!(f.hangs.is_empty(), "hangs:\n{}", show(&f.hangs));
    assert!(
        f.over_memory.is_empty(),
        "over the memory bound:\n{}",
        show(&f.over_memory)
    );
    assert!(
        f.unplaced.is_empty(),
        "errors without a place:\n{}",
        show(&f.unplaced)
    );
}

/// Fixtures that between them hold every structure: dirty logs (rmap,
/// reflink, intents, 1 KiB blocks, 64 KiB directory blocks), directories
/// and attr forks of every format, bmbts, v4, and a metadump and a qcow2
/// disk (the containers read the damage too).
const FIXTURES: &[&str] = &[
    "v5-4k-dirty",
    "v5-dirattr",
    "log-intents",
    "v4-dirs",
    "v5-1k-dirty",
    "replay-attri-node",
    "replay-bui-btree",
    "log-64kdir",
    "ops-each-cp",
    "md-dirty-v1",
    "qcow2-v3-gpt",
    "log-xattrs",
];

/// The quick form: a few hundred images, in the test command.
#[test]
fn quick_mutation_run() {
    let seed = 0x5eed_0017;
    let images: u64 = std::env::var("MUTATION_IMAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(144);
    let limits = Limits {
        per_image: Duration::from_secs(60),
        memory: 512 << 20,
    };
    let t = Instant::now();
    let mut f = Figures::default();
    run(FIXTURES, images, seed, &limits, &mut f);
    eprintln!("{}", summary(&f, seed, t.elapsed().as_secs_f64()));
    check(&f);
    assert!(f.images >= images.min(100) || std::env::var("MUTATION_ONLY").is_ok());
}

/// The long form (`scripts/mutation-run`).
#[test]
#[ignore]
fn long_mutation_run() {
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let images = env("MUTATION_IMAGES", 100_000);
    let seed = env("MUTATION_SEED", 0x1005_0017);
    let limits = Limits {
        per_image: Duration::from_secs(env("MUTATION_TIMEOUT_SECS", 20)),
        memory: 512 << 20,
    };
    let t = Instant::now();
    let mut f = Figures::default();
    run(FIXTURES, images, seed, &limits, &mut f);
    let s = summary(&f, seed, t.elapsed().as_secs_f64());
    eprintln!("{s}");
    if let Ok(p) = std::env::var("MUTATION_RESULTS") {
        let mut t = s.clone();
        t.push_str("\nA sample of the errors the failed runs gave:\n");
        for e in &f.errors_sample {
            t.push_str(&format!("  {e}\n"));
        }
        for (k, v) in [
            ("panic", &f.panics),
            ("hang", &f.hangs),
            ("unplaced", &f.unplaced),
        ] {
            for x in v {
                t.push_str(&format!("{k}: {x}\n"));
            }
        }
        std::fs::write(p, t).unwrap();
    }
    check(&f);
}
