//! A pass over the log's records from tail to head, as recovery makes one
//! (`xlog_do_recovery_pass`): each record header read and checked, its ops
//! fed to the assembler, in a pipeline that reads the next records while the
//! last ones are assembled; complete transactions handed to a sink or
//! collected.

use super::{Assembler, RawItems, Transaction};
use crate::xfs::error::{Error, Result};
use crate::xfs::format::log::*;
use crate::xfs::log::find::{HeadTail, TailMove};
use crate::xfs::log::items::Linker;
use crate::xfs::log::record::{btobb, RecordHeader, RecordReader};
use crate::xfs::log::{is_header, CrcMismatch, ItemContext, LogDev, Problem};
use crate::xfs::read::ReadAt;
use crate::xfs::types::Lsn;
use serde::Serialize;

/// One record read between tail and head.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RecordInfo {
    pub lsn: Lsn,
    /// Log block of its header.
    pub block: u32,
    /// `h_len`: bytes of data.
    pub len: u32,
    pub num_logops: u32,
    /// Header sectors.
    pub hblks: u32,
    pub tail_lsn: Lsn,
    pub crc: crate::xfs::log::CrcCheck,
}

/// What walking the live log produced.
pub struct WalkOutput {
    pub head_tail: HeadTail,
    pub records: u64,
    pub record_list: Vec<RecordInfo>,
    pub records_crc_ok: u64,
    pub records_no_crc: u64,
    pub crc_mismatches: Vec<CrcMismatch>,
    pub transactions: Vec<Transaction>,
    pub incomplete: Vec<Transaction>,
    pub problems: Vec<Problem>,
    pub skipped_ops: u64,
    pub unmount_records: u64,
    pub stats: crate::xfs::log::stats::LogStats,
}

/// Keep at most 10,000 problems for the whole log.
pub(super) fn push_problem(problems: &mut Vec<Problem>, p: Problem) {
    if problems.len() < 10_000 {
        problems.push(p);
    }
}

/// The first record header after `pos` (not at it) before `head`.
pub(super) fn next_header<R: ReadAt>(
    dev: &LogDev<'_, R>,
    pos: u32,
    head: u32,
) -> Result<Option<u32>> {
    let start = dev.wrap(pos, 1);
    let n = dev.distance(start, head);
    let first = n.min(dev.len_bbs().saturating_sub(start));
    if let Some(b) = dev.scan_forward(start, first, |i, b| {
        is_header(b)
            && crate::xfs::log::record::RecordHeader::parse(b, i, dev.is_v2(), dev.len_bbs())
                .is_ok()
    })? {
        return Ok(Some(b));
    }
    let rest = n.saturating_sub(first);
    if rest > 0 {
        return dev.scan_forward(0, rest, |i, b| {
            is_header(b)
                && crate::xfs::log::record::RecordHeader::parse(b, i, dev.is_v2(), dev.len_bbs())
                    .is_ok()
        });
    }
    Ok(None)
}

/// Receives the committed transactions of a streamed walk ([`walk_streaming`]).
pub trait TransactionSink: Send {
    /// Called once, before the first transaction, with the head and tail
    /// as the walk settled them (a tail found overwritten has moved).
    fn begin(&mut self, ht: &HeadTail);
    /// The next committed transaction, in commit order, its intents and
    /// done items linked as [`crate::xfs::log::items::pair_intents`] links them.
    fn transaction(&mut self, t: Transaction);
}

/// Receives the committed transactions of a streamed walk whose items are
/// left raw ([`walk_streaming_raw`]): decoding them ([`super::decode_raw`])
/// and linking their intents ([`Linker`]) is the sink's work, so that it
/// can be done on another thread.
pub trait RawSink: Send {
    /// As [`TransactionSink::begin`].
    fn begin(&mut self, ht: &HeadTail);
    /// The next committed transaction, in commit order, its `items` empty
    /// and its items in `raw`. Raw items the sink is done with may be
    /// given back, for reuse.
    fn transaction(&mut self, t: Transaction, raw: RawItems) -> Option<RawItems>;
}

/// Whom a streamed walk hands its transactions to.
pub(super) enum Target<'s> {
    Linked(&'s mut dyn TransactionSink),
    Raw(&'s mut dyn RawSink),
}

impl Target<'_> {
    fn begin(&mut self, ht: &HeadTail) {
        match self {
            Target::Linked(s) => s.begin(ht),
            Target::Raw(s) => s.begin(ht),
        }
    }
}

/// A [`Target`] while the walk runs: linked transactions go through the
/// walk's own [`Linker`].
enum Stream<'s> {
    Linked(Linker, &'s mut dyn TransactionSink),
    Raw(&'s mut dyn RawSink),
}

impl<'s> Stream<'s> {
    fn of(t: Target<'s>) -> Stream<'s> {
        match t {
            Target::Linked(s) => Stream::Linked(Linker::new(), s),
            Target::Raw(s) => Stream::Raw(s),
        }
    }
    fn target(self) -> Target<'s> {
        match self {
            Stream::Linked(_, s) => Target::Linked(s),
            Stream::Raw(s) => Target::Raw(s),
        }
    }
}

/// Where the walk sends the records it has read and checked: straight into
/// a [`Consumer`], or through a queue to a second thread that assembles
/// while this one reads.
pub(super) trait Feed {
    /// The record just read by `reader` (its data: [`RecordReader::data`]).
    fn record(&mut self, h: &RecordHeader, reader: &mut RecordReader);
    fn gap(&mut self, from: u32, to: u32);
    /// No later record can move the tail: `ht` is final.
    fn settled(&mut self, ht: &HeadTail);
}

/// The assembling side: an [`Assembler`], and for a streamed walk the
/// intent linker and the sink that takes each transaction.
pub(super) struct Consumer<'s> {
    asm: Assembler,
    stream: Option<Stream<'s>>,
    /// The sink has had its `begin`.
    begun: bool,
}

impl Consumer<'_> {
    /// Hand the transactions committed so far to the sink, if streaming
    /// and the tail is settled.
    fn pass_on(&mut self) {
        if !self.begun {
            return;
        }
        match &mut self.stream {
            Some(Stream::Linked(linker, sink)) => {
                for t in self.asm.done.drain(..) {
                    linker.push(t, &mut |t| sink.transaction(t));
                }
            }
            Some(Stream::Raw(sink)) => {
                let mut done = std::mem::take(&mut self.asm.done);
                let mut raws = std::mem::take(&mut self.asm.done_raw);
                for (t, r) in done.drain(..).zip(raws.drain(..)) {
                    if let Some(spare) = sink.transaction(t, r) {
                        self.asm.give_raw(spare);
                    }
                }
                // The emptied lists go back, for their room.
                self.asm.done = done;
                self.asm.done_raw = raws;
            }
            None => {}
        }
    }
    fn begin(&mut self, ht: &HeadTail) {
        if self.begun {
            return;
        }
        self.begun = true;
        match &mut self.stream {
            Some(Stream::Linked(_, sink)) => sink.begin(ht),
            Some(Stream::Raw(sink)) => sink.begin(ht),
            None => {}
        }
        self.pass_on();
    }
}

impl Feed for Consumer<'_> {
    fn record(&mut self, h: &RecordHeader, reader: &mut RecordReader) {
        self.asm.push_record(h, reader.data());
        self.pass_on();
    }
    fn gap(&mut self, from: u32, to: u32) {
        self.asm.gap(from, to);
    }
    fn settled(&mut self, ht: &HeadTail) {
        self.begin(ht);
    }
}

/// One thing for the assembling thread.
pub(super) enum Entry {
    /// The head and tail are final (first entry of the first batch).
    Begin(Box<HeadTail>),
    /// A record, its data at a range of the batch's bytes.
    Record(RecordHeader, usize, usize),
    Gap(u32, u32),
}

/// A window of the log as the reader left it (records unpacked in place)
/// and what to do with it, in order.
#[derive(Default)]
pub(super) struct Batch {
    data: Vec<u8>,
    entries: Vec<Entry>,
}

impl Batch {
    fn feed(&self, c: &mut Consumer<'_>) {
        for e in &self.entries {
            match e {
                Entry::Begin(ht) => c.begin(ht),
                Entry::Record(h, a, b) => {
                    c.asm.push_record(h, self.data.get(*a..*b).unwrap_or(&[]))
                }
                Entry::Gap(from, to) => c.asm.gap(*from, *to),
            }
        }
        c.pass_on();
    }
}

/// The reading side of a two-thread walk. The reader hands over each
/// window it has moved past (no copy); the window goes out through a short
/// queue with the entries of the records in it and comes back for reuse.
/// Nothing is sent before the tail is settled, so a walk that starts again
/// sends nothing twice.
pub(super) struct Piped {
    tx: std::sync::mpsc::SyncSender<Batch>,
    back: std::sync::mpsc::Receiver<Batch>,
    /// Entries of the records in the reader's current window.
    entries: Vec<Entry>,
    /// Batches kept until the tail is settled.
    held: Vec<Batch>,
    settled: bool,
}

impl Piped {
    fn push(&mut self, b: Batch) {
        if self.settled {
            // A closed queue means the other side is gone; the join
            // reports it.
            let _ = self.tx.send(b);
        } else {
            self.held.push(b);
        }
    }

    /// Send the windows the reader has moved past, with their entries.
    fn flush_retired(&mut self, reader: &mut RecordReader) {
        while let Ok(b) = self.back.try_recv() {
            reader.give_spare(b.data);
        }
        for data in reader.take_retired() {
            let entries = std::mem::take(&mut self.entries);
            self.push(Batch { data, entries });
        }
    }

    /// Reading is over: send the last window.
    fn finish(&mut self, reader: &mut RecordReader) {
        self.flush_retired(reader);
        let data = reader.take_window();
        let entries = std::mem::take(&mut self.entries);
        self.push(Batch { data, entries });
    }
}

impl Feed for Piped {
    fn record(&mut self, h: &RecordHeader, reader: &mut RecordReader) {
        self.flush_retired(reader);
        match reader.data_range() {
            Some((a, b)) => self.entries.push(Entry::Record(h.clone(), a, b)),
            None => {
                // A record put together from both ends of the log, in a
                // buffer of its own (its window was handed over before).
                let data = reader.data().to_vec();
                let len = data.len();
                let mut entries = std::mem::take(&mut self.entries);
                entries.push(Entry::Record(h.clone(), 0, len));
                self.push(Batch { data, entries });
            }
        }
    }
    fn gap(&mut self, from: u32, to: u32) {
        self.entries.push(Entry::Gap(from, to));
    }
    fn settled(&mut self, ht: &HeadTail) {
        if !self.settled {
            self.settled = true;
            self.push(Batch {
                data: Vec::new(),
                entries: vec![Entry::Begin(Box::new(ht.clone()))],
            });
            for b in std::mem::take(&mut self.held) {
                self.push(b);
            }
        }
    }
}

/// How one pass over the records ended.
pub(super) enum Step {
    Done(Box<WalkOutput>),
    /// The tail was found overwritten and has moved; `empty` when nothing
    /// is left between the new tail and the head.
    Restart {
        empty: bool,
    },
}

pub(super) fn empty_output(ht: HeadTail) -> WalkOutput {
    WalkOutput {
        head_tail: ht,
        records: 0,
        record_list: Vec::new(),
        records_crc_ok: 0,
        records_no_crc: 0,
        crc_mismatches: Vec::new(),
        transactions: Vec::new(),
        incomplete: Vec::new(),
        problems: Vec::new(),
        skipped_ops: 0,
        unmount_records: 0,
        stats: crate::xfs::log::stats::LogStats::default(),
    }
}

/// Read every record from tail to head, check its CRC, and reassemble the
/// transactions. A bad record within 8 log buffers ahead of the head is a
/// tail overwritten by a partial write: the tail moves past it, as the
/// kernel does. Other bad records are reported and walked past.
///
/// Where threads exist, a second thread assembles the transactions while
/// this one reads and checks the records (the result is the same).
pub fn walk<R: ReadAt>(dev: &LogDev<'_, R>, ht: &HeadTail, ctx: ItemContext) -> Result<WalkOutput> {
    walk_with(dev, ht, ctx, true)
}

/// [`walk`], on one thread only when `two_threads` is false.
pub fn walk_with<R: ReadAt>(
    dev: &LogDev<'_, R>,
    ht: &HeadTail,
    ctx: ItemContext,
    two_threads: bool,
) -> Result<WalkOutput> {
    Ok(walk_inner(dev, ht, ctx, two_threads, None)?.0)
}

/// What a streamed walk leaves: the walk's output without transactions,
/// the intents left without a done item and the orphaned done items.
pub type Streamed = (WalkOutput, Vec<crate::xfs::log::items::IntentRef>, u64);

/// [`walk`], handing each committed transaction to `sink` as soon as
/// nothing later can change it instead of keeping them: memory stays
/// bounded by the transactions open at once (and those between an intent
/// and its done item). `sink` is called from the assembling thread. The
/// committed transactions are not counted into the output's `stats`: the
/// sink sees them all and counts them if it wants (with
/// [`crate::xfs::log::stats::LogStats::add`]), off the reading thread.
pub fn walk_streaming<R: ReadAt>(
    dev: &LogDev<'_, R>,
    ht: &HeadTail,
    ctx: ItemContext,
    two_threads: bool,
    sink: &mut dyn TransactionSink,
) -> Result<Streamed> {
    let (out, linked) = walk_inner(dev, ht, ctx, two_threads, Some(Target::Linked(sink)))?;
    let (unfinished, orphans) = linked.unwrap_or_default();
    Ok((out, unfinished, orphans))
}

/// [`walk_streaming`] with the items of each committed transaction left
/// raw, for `sink` to decode and link (on another thread, say: decoding
/// the items is a good part of a walk's work). Transactions never
/// committed come back decoded in the output's `incomplete`.
pub fn walk_streaming_raw<R: ReadAt>(
    dev: &LogDev<'_, R>,
    ht: &HeadTail,
    ctx: ItemContext,
    sink: &mut dyn RawSink,
) -> Result<WalkOutput> {
    Ok(walk_inner(dev, ht, ctx, false, Some(Target::Raw(sink)))?.0)
}

pub(super) type Linked = Option<(Vec<crate::xfs::log::items::IntentRef>, u64)>;

pub(super) fn walk_inner<R: ReadAt>(
    dev: &LogDev<'_, R>,
    ht: &HeadTail,
    ctx: ItemContext,
    two_threads: bool,
    mut sink: Option<Target<'_>>,
) -> Result<(WalkOutput, Linked)> {
    let mut ht = ht.clone();
    let mut reader = RecordReader::new();
    let mut restarts = 0u32;
    // Where threads cannot start (the browser), one thread does it all.
    let threads = two_threads && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    loop {
        if ht.clean || ht.head.block == ht.tail.block {
            if let Some(mut s) = sink {
                s.begin(&ht);
                let linked = matches!(s, Target::Linked(_)).then(|| (Vec::new(), 0));
                return Ok((empty_output(ht), linked));
            }
            return Ok((empty_output(ht), None));
        }
        let stream = sink.take().map(Stream::of);
        let streaming = stream.is_some();
        let raw = matches!(stream, Some(Stream::Raw(_)));
        let mut consumer = Consumer {
            asm: Assembler::new(ctx).counting(!streaming).deferring(raw),
            stream,
            begun: false,
        };
        let (step, mut consumer) = std::thread::scope(|s| -> Result<(Step, Consumer<'_>)> {
            if threads {
                let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(3);
                let (back_tx, back) = std::sync::mpsc::sync_channel::<Batch>(4);
                let mut theirs = Consumer {
                    asm: Assembler::new(ctx).counting(!streaming).deferring(raw),
                    stream: consumer.stream.take(),
                    begun: false,
                };
                let spawned = std::thread::Builder::new().spawn_scoped(s, move || {
                    for b in rx {
                        b.feed(&mut theirs);
                        let _ = back_tx.try_send(b);
                    }
                    theirs
                });
                match spawned {
                    Ok(handle) => {
                        let mut feed = Piped {
                            tx,
                            back,
                            entries: Vec::new(),
                            held: Vec::new(),
                            settled: false,
                        };
                        reader.set_handover(true);
                        let step =
                            read_records(dev, &mut ht, &mut reader, &mut restarts, &mut feed);
                        if matches!(step, Ok(Step::Done(_))) {
                            feed.finish(&mut reader);
                            feed.settled(&ht);
                        }
                        drop(feed);
                        let theirs = handle.join().map_err(|_| {
                            Error::corrupt(
                                "log",
                                dev.location(0),
                                "the thread assembling transactions stopped",
                            )
                        })?;
                        return Ok((step?, theirs));
                    }
                    Err(e) => {
                        return Err(Error::corrupt(
                            "log",
                            dev.location(0),
                            format!("could not start the thread assembling transactions: {e}"),
                        ));
                    }
                }
            }
            reader.set_handover(false);
            let step = read_records(dev, &mut ht, &mut reader, &mut restarts, &mut consumer);
            if matches!(step, Ok(Step::Done(_))) {
                consumer.settled(&ht);
            }
            Ok((step?, consumer))
        })?;
        match step {
            Step::Restart { empty } => {
                // With `empty` the new tail is the head: the next pass
                // returns at once.
                debug_assert!(!empty || ht.head.block == ht.tail.block);
                // The sink saw nothing (nothing is passed on before the
                // tail is settled); take it back for the next pass.
                sink = consumer.stream.take().map(Stream::target);
                continue;
            }
            Step::Done(out) => {
                let mut out = *out;
                consumer.pass_on();
                let Consumer { asm, stream, .. } = consumer;
                let mut asm = asm;
                out.stats = std::mem::take(&mut asm.stats);
                // Left raw and not passed on (none: passed on above).
                let raws = std::mem::take(&mut asm.done_raw);
                let raw_done = if raws.is_empty() {
                    Vec::new()
                } else {
                    std::mem::take(&mut asm.done)
                };
                let (done, incomplete, problems, skipped, unmounts) = asm.finish();
                let linked = match stream {
                    Some(Stream::Raw(sink)) => {
                        for (t, r) in raw_done.into_iter().zip(raws) {
                            sink.transaction(t, r);
                        }
                        None
                    }
                    Some(Stream::Linked(linker, sink)) => {
                        // Transactions committed after the last record
                        // was read cannot exist; `done` is empty here.
                        let mut l = linker;
                        for t in done {
                            l.push(t, &mut |t| sink.transaction(t));
                        }
                        Some(l.finish(&mut |t| sink.transaction(t)))
                    }
                    None => {
                        out.transactions = done;
                        None
                    }
                };
                out.incomplete = incomplete;
                out.problems.extend(problems);
                out.skipped_ops = skipped;
                out.unmount_records = unmounts;
                out.head_tail = ht;
                return Ok((out, linked));
            }
        }
    }
}

/// One pass from the tail to the head: read and check each record and hand
/// it to `feed`.
pub(super) fn read_records<R: ReadAt, F: Feed>(
    dev: &LogDev<'_, R>,
    ht: &mut HeadTail,
    reader: &mut RecordReader,
    restarts: &mut u32,
    feed: &mut F,
) -> Result<Step> {
    let overwrite_window = btobb(
        XLOG_MAX_ICLOGS.saturating_mul(
            ht.last_h_size
                .clamp(XLOG_HEADER_CYCLE_SIZE, XLOG_MAX_RECORD_BSIZE),
        ),
    );
    let head = ht.head.block;
    let mut out = empty_output(ht.clone());
    let mut pos = ht.tail.block;
    let mut left = dev.distance(pos, head);
    let mut settled = false;
    while left > 0 {
        if !settled && dev.distance(head, pos) > overwrite_window {
            // Past the blocks where an overwritten tail can lie: the tail
            // cannot move any more.
            feed.settled(ht);
            settled = true;
        }
        let rec = reader.read(dev, pos);
        let bad = match &rec {
            Ok(r) => r.crc.is_bad(),
            Err(Error::Corrupt { .. }) => true,
            Err(_) => false,
        };
        if bad && dev.distance(head, pos) <= overwrite_window && *restarts < 64 {
            // The tail was overwritten: start again after this record.
            let to = next_header(dev, pos, head)?.unwrap_or(head);
            let cycle = dev.cycle(to)?;
            let from = ht.tail.block;
            ht.tail = Lsn { cycle, block: to };
            ht.tail_moved = Some(TailMove {
                from,
                to,
                reason: format!(
                    "the record at log block {pos} failed its check and lies within {overwrite_window} blocks ahead of the head: an overwritten tail"
                ),
            });
            *restarts = restarts.saturating_add(1);
            return Ok(Step::Restart { empty: to == head });
        }
        match rec {
            Ok(r) => {
                out.records = out.records.saturating_add(1);
                out.record_list.push(RecordInfo {
                    lsn: r.header.lsn,
                    block: pos,
                    len: r.header.len,
                    num_logops: r.header.num_logops,
                    hblks: r.header.hblks,
                    tail_lsn: r.header.tail_lsn,
                    crc: r.crc,
                });
                match r.crc {
                    crate::xfs::log::CrcCheck::Ok | crate::xfs::log::CrcCheck::OkShortHeader => {
                        out.records_crc_ok = out.records_crc_ok.saturating_add(1)
                    }
                    crate::xfs::log::CrcCheck::NotChecksummed => {
                        out.records_no_crc = out.records_no_crc.saturating_add(1)
                    }
                    crate::xfs::log::CrcCheck::Bad { stored, computed } => {
                        out.crc_mismatches.push(CrcMismatch {
                            lsn: r.header.lsn,
                            block: pos,
                            stored,
                            computed,
                        });
                        push_problem(&mut out.problems, Problem {
                            block: Some(pos),
                            message: format!(
                                "record {} at log block {pos}: CRC stored {stored:#010x}, computed {computed:#010x} (decoded anyway)",
                                r.header.lsn
                            ),
                        });
                    }
                }
                if r.header.lsn.block != pos {
                    push_problem(
                        &mut out.problems,
                        Problem {
                            block: Some(pos),
                            message: format!(
                                "record at log block {pos} says its LSN is {}",
                                r.header.lsn
                            ),
                        },
                    );
                }
                feed.record(&r.header, reader);
                let n = r.header.total_bbs().max(1);
                if n > left {
                    push_problem(
                        &mut out.problems,
                        Problem {
                            block: Some(pos),
                            message: format!(
                            "record at log block {pos} ({n} blocks) runs {} blocks past the head",
                            n.saturating_sub(left)
                        ),
                        },
                    );
                    break;
                }
                left = left.saturating_sub(n);
                pos = dev.wrap(pos, n);
            }
            Err(e @ Error::Corrupt { .. }) => {
                push_problem(
                    &mut out.problems,
                    Problem {
                        block: Some(pos),
                        message: e.to_string(),
                    },
                );
                match next_header(dev, pos, head)? {
                    Some(next) => {
                        feed.gap(pos, next);
                        left = left.saturating_sub(dev.distance(pos, next));
                        pos = next;
                    }
                    None => {
                        feed.gap(pos, head);
                        break;
                    }
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Step::Done(Box::new(out)))
}

/// Decode only the records from log block `from` through the record that
/// starts at log block `last` (around the ring), and return the
/// transactions that start and commit among them. For looking at one
/// transaction again in detail without walking the whole log.
pub fn walk_range<R: ReadAt>(
    dev: &LogDev<'_, R>,
    from: u32,
    last: u32,
    ctx: ItemContext,
) -> Result<Vec<Transaction>> {
    let mut reader = RecordReader::new();
    let mut asm = Assembler::new(ctx);
    let mut pos = from;
    // The last record is included: walk until its start has been read.
    let mut left = dev.distance(from, last).saturating_add(1);
    while left > 0 {
        let r = reader.read(dev, pos)?;
        asm.push_record(&r.header, reader.data());
        if pos == last {
            break;
        }
        let n = r.header.total_bbs().max(1);
        left = left.saturating_sub(n);
        pos = dev.wrap(pos, n);
    }
    let (done, _, _, _, _) = asm.finish();
    Ok(done)
}
