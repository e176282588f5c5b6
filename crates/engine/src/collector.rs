//! The collector: receives the workers' intervals off the hot path, merges them by adding
//! histogram counts into per-second timeline rows and run totals, streams the timeline CSV
//! and the HDR interval log to disk as each second completes (so a killed run keeps what it
//! measured), reports progress, and hands cleared intervals back to the workers. Once per
//! completed interval it also feeds what it merged to the run's live consumers ([`Live`]):
//! steady-state detection (`run::steady`) and the metrics endpoint (`run::metrics`).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};

use storlab_model::{OpError, OpKind};
use storlab_record::totals::{KindTotals, WorkerKindTotals, merge};
use storlab_record::{Interval, KindStats, new_histogram};
use storlab_results::write::{HDR_LOG_FILE, TIMELINE_FILE, WriteError};

/// Per-target layout the collector needs.
pub struct TargetShape {
    pub name: String,
    pub kinds: Vec<OpKind>,
    pub open_loop: bool,
    /// A background worker (readwhilewriting's writer): on the timeline, not in progress.
    pub background: bool,
}

/// One second (interval) of one target's timeline, finalized.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub index: i64,
    pub rate_ops: f64,
    pub rate_bytes: f64,
    pub p99_ns: u64,
    pub errors: u64,
    /// The interval's length, ns (the last one of a run may be shorter).
    pub span_ns: u64,
    /// The interval's completed operations and bytes per op kind (indexed by
    /// `OpKind as usize`), over every foreground target.
    pub kind_ops: [u64; OpKind::COUNT],
    pub kind_bytes: [u64; OpKind::COUNT],
}

/// What the collector gathered over a run.
pub struct Collected {
    /// Per target, per op kind (indexed by `OpKind as usize`): measured totals.
    pub totals: Vec<Vec<Option<KindTotals>>>,
    /// Per worker: CPU time spent in measured intervals, ns.
    pub worker_cpu_ns: Vec<u64>,
    /// Per worker: the wall time of those intervals (the span its CPU time was read over), ns.
    pub worker_wall_ns: Vec<u64>,
    /// Per worker, per op kind (indexed by `OpKind as usize`): measured counts and latency
    /// sum and maximum.
    pub worker_totals: Vec<[Option<WorkerKindTotals>; OpKind::COUNT]>,
    /// Per worker: the shape (target, then background worker) its figures went to.
    pub worker_shape: Vec<u32>,
    pub error_samples: Vec<(u32, OpKind, OpError)>,
    pub io_error: Option<storlab_results::write::WriteError>,
    /// Per group of workers (a distributed run's ranks, see `collect`'s `worker_group`), per
    /// target, per op kind: measured totals.
    pub group_totals: Vec<Vec<Vec<Option<KindTotals>>>>,
    /// CPU time of the collector thread, ns.
    pub cpu_ns: u64,
    /// The steady-state detector, as the run left it.
    pub steady: Option<super::steady::Detector>,
}

/// What the collector feeds once per completed interval, besides the timeline.
#[derive(Default)]
pub struct Live<'a> {
    /// Steady-state detection, and the flag that stops the workers when it is reached.
    pub steady: Option<(super::steady::Detector, &'a AtomicBool)>,
    /// The metrics endpoint (`--metrics`).
    pub metrics: Option<&'a super::metrics::Exporter>,
}

/// One shape's and op kind's last completed interval, for the live metrics.
#[derive(Debug, Clone, Copy, Default)]
struct LastInterval {
    rate_ops: f64,
    rate_bytes: f64,
    /// Service-time quantiles (the metrics' [`super::metrics::QUANTILES`]), ns.
    quantiles_ns: Option<[u64; 4]>,
}

/// Publishes the run's metrics: the measured totals so far and each shape's last interval
/// (`last[shape][kind]`).
fn publish_metrics(
    m: &super::metrics::Exporter,
    targets: &[TargetShape],
    out: &Collected,
    last: &[Vec<LastInterval>],
) {
    let mut rows = Vec::new();
    for (t, shape) in targets.iter().enumerate() {
        for k in &shape.kinds {
            let Some(totals) = &out.totals[t][*k as usize] else {
                continue;
            };
            let service_sum_ns = out
                .worker_shape
                .iter()
                .zip(&out.worker_totals)
                .filter(|(s, _)| **s as usize == t)
                .filter_map(|(_, w)| w[*k as usize].as_ref())
                .map(|w| w.service_sum_ns)
                .sum();
            let l = last[t][*k as usize];
            rows.push(super::metrics::Row {
                target: &shape.name,
                operation: k.name(),
                totals,
                service_sum_ns,
                rate_ops: l.rate_ops,
                rate_bytes: l.rate_bytes,
                interval_quantiles_ns: l.quantiles_ns,
            });
        }
    }
    m.publish(&rows);
}

struct Pending {
    reported: usize,
    /// The interval's real span over the workers that reported it (run clock, ns): the
    /// first is shorter when the warm-up is not a whole number of intervals, the last when
    /// the run ends between two boundaries, or longer by the drain of what was in flight.
    start_ns: u64,
    end_ns: u64,
    /// Per target, per op kind: the workers' figures added up, in histograms of the
    /// workers' own shape (so that adding one is a pass over its counts). A completed
    /// measured second is added to the run's totals once, not every worker's interval.
    per_target: Vec<Vec<Option<KindStats>>>,
    cpu_ns: Vec<u64>,
}

impl Pending {
    /// Its span, ns: at most two intervals, as long as a worker's last one can be (its
    /// drain folded in, up to the end of the next interval).
    fn span_ns(&self, interval_ns: u64) -> u64 {
        self.end_ns
            .saturating_sub(self.start_ns)
            .min(interval_ns.saturating_mul(2))
    }
}

/// Where the collector writes.
pub struct Sinks<W1: Write, W2: Write> {
    pub timeline: W1,
    pub hdr_log: W2,
    /// Wall-clock time of the start of measurement (for the interval log's base time).
    pub measure_start_wall: SystemTime,
}

/// The columns of `timeline.csv`. Rates are per second of the interval's real length,
/// `interval_s` (shorter than an interval for the first warm-up; the last measured one
/// holds the drain of what was in flight when issuing stopped, so it may be longer). Rows of
/// the warm-up have `phase` = `warmup` and negative seconds: they show what ran then, and
/// no summary counts them. `error_kinds` splits `errors` by kind: `connection:12;timeout:3`
/// (empty when there were none).
pub const TIMELINE_HEADER: &str = "second,phase,target,op,ops,rate_ops,bytes,rate_bytes,errors,p50_ns,p99_ns,max_ns,intended_p99_ns,intended_max_ns,client_cpu_cores,interval_s,error_kinds";

/// `errors` by kind as the timeline's `error_kinds` column holds them.
fn error_kinds_text(errors: &[u64; storlab_model::ErrorKind::COUNT]) -> String {
    storlab_model::ErrorKind::ALL
        .iter()
        .zip(errors)
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{}:{n}", k.name()))
        .collect::<Vec<_>>()
        .join(";")
}

/// What the collector is fed from a run's workers: the channel their intervals come on, the
/// senders that hand each worker's spares back, the target each worker drives, the targets'
/// shapes, and where the timeline and the interval log go.
pub struct Feed<W1: Write, W2: Write> {
    pub rx: Receiver<Box<Interval>>,
    pub spare_senders: Vec<SyncSender<Box<Interval>>>,
    pub worker_target: Vec<u32>,
    pub shapes: Vec<TargetShape>,
    pub sinks: Sinks<W1, W2>,
}

/// Runs until every worker has sent its last interval. `worker_group` (empty, or one entry
/// per worker) puts workers in groups whose measured totals are kept apart as well (a
/// distributed run's ranks).
pub fn collect<W1: Write, W2: Write>(
    feed: Feed<W1, W2>,
    worker_group: &[u32],
    interval_ns: u64,
    mut progress: impl FnMut(Progress),
    live: Live<'_>,
) -> Collected {
    let Feed {
        rx,
        spare_senders: spares,
        worker_target,
        shapes: targets,
        mut sinks,
    } = feed;
    let cpu_at_start = storlab_record::thread_cpu_ns();
    let n_workers = worker_target.len();
    let mut m = Merger::new(targets, worker_target, worker_group);
    let Live {
        mut steady,
        metrics,
    } = live;
    // Each completed interval: progress, then steady state (the workers stop at their next
    // poll once it is reached).
    let mut on_second = |p: Progress| {
        progress(p);
        if let Some((d, stop)) = &mut steady
            && d.push(p.index, p.rate_ops, p.rate_bytes)
        {
            stop.store(true, Ordering::Relaxed);
        }
    };
    keep_first(
        writeln!(sinks.timeline, "{TIMELINE_HEADER}"),
        &mut m.out.io_error,
        TIMELINE_FILE,
    );
    let measure_start_wall = sinks.measure_start_wall;
    let mut measuring = false;
    let mut serializer = V2DeflateSerializer::new();
    let mut log = begin_log(
        &mut sinks.hdr_log,
        &mut serializer,
        sinks.measure_start_wall,
        &mut m.out.io_error,
    );
    // A complete second: its timeline row and log entry, its rates for the live metrics, and
    // (while the run goes on) a metrics snapshot.
    let mut finish_second = |m: &mut Merger, index: i64, p: Pending, snapshot: bool| {
        m.add_to_totals(index, &p);
        let r = write_second(
            index,
            &p,
            &m.targets,
            interval_ns,
            &mut sinks.timeline,
            log.as_mut(),
            &mut on_second,
        );
        if let Err(e) = r {
            m.out.io_error.get_or_insert(e);
        }
        if let Some(metrics) = metrics {
            // Measurement has begun once its first interval is complete.
            if index >= 0 && !measuring {
                measuring = true;
                metrics.mark("measure-start", "", measure_start_wall);
            }
            last_rates(&p, interval_ns, &mut m.rates);
            if snapshot {
                publish_metrics(metrics, &m.targets, &m.out, &m.rates);
            }
        }
    };
    while m.finished < n_workers {
        let Ok(mut iv) = rx.recv() else { break };
        m.add(&iv);
        let w = iv.worker as usize;
        iv.clear();
        // A worker that has stopped no longer takes spares; dropping the interval is fine.
        let _ = spares[w].try_send(iv);
        // Finalize every second that all workers have moved past (or reported, if last).
        while let Some((index, p)) = m.next_complete() {
            finish_second(&mut m, index, p, true);
        }
    }
    while let Some((index, p)) = m.pending.pop_first() {
        finish_second(&mut m, index, p, false);
    }
    // The last snapshot holds the run's final totals: what its summary counts.
    if let Some(metrics) = metrics {
        publish_metrics(metrics, &m.targets, &m.out, &m.rates);
    }
    let mut out = m.out;
    out.steady = steady.map(|(d, _)| d);
    keep_first(sinks.timeline.flush(), &mut out.io_error, TIMELINE_FILE);
    drop(log);
    keep_first(sinks.hdr_log.flush(), &mut out.io_error, HDR_LOG_FILE);
    out.cpu_ns = storlab_record::thread_cpu_ns().saturating_sub(cpu_at_start);
    out
}

/// Keeps the first error of the collector's writes.
fn keep_first(r: std::io::Result<()>, slot: &mut Option<WriteError>, file: &str) {
    if let Err(e) = r {
        slot.get_or_insert(WriteError::new(Path::new(file), e));
    }
}

/// The interval log writer's error as the I/O error it is (or says it is not).
fn log_error(
    e: hdrhistogram::serialization::interval_log::IntervalLogWriterError<
        hdrhistogram::serialization::V2DeflateSerializeError,
    >,
) -> WriteError {
    use hdrhistogram::serialization::interval_log::IntervalLogWriterError as E;
    let source = match e {
        E::IoError(e) => e,
        E::SerializeError(e) => std::io::Error::other(format!("serializing a histogram: {e:?}")),
    };
    WriteError::new(Path::new(HDR_LOG_FILE), source)
}

type HdrLog<'a, W> =
    hdrhistogram::serialization::interval_log::IntervalLogWriter<'a, 'a, W, V2DeflateSerializer>;

/// Starts the HDR interval log, its times from the start of measurement (`wall`).
fn begin_log<'a, W: Write>(
    hdr_log: &'a mut W,
    serializer: &'a mut V2DeflateSerializer,
    wall: SystemTime,
    io_error: &mut Option<WriteError>,
) -> Option<HdrLog<'a, W>> {
    let mut log_builder = IntervalLogWriterBuilder::new();
    log_builder
        .add_comment("storlab HDR interval log: latency in ns; tags are target.op[.intended]")
        .with_base_time(wall)
        .with_start_time(wall);
    match log_builder.begin_log_with(hdr_log, serializer) {
        Ok(l) => Some(l),
        Err(e) => {
            io_error.get_or_insert(WriteError::new(Path::new(HDR_LOG_FILE), e));
            None
        }
    }
}

/// Per target, per op kind (indexed by `OpKind as usize`): empty totals for the kinds it runs.
fn new_kind_table(targets: &[TargetShape]) -> Vec<Vec<Option<KindTotals>>> {
    targets
        .iter()
        .map(|t| {
            let mut v: Vec<Option<KindTotals>> = (0..OpKind::COUNT).map(|_| None).collect();
            for k in &t.kinds {
                v[*k as usize] = Some(KindTotals::new(t.open_loop));
            }
            v
        })
        .collect()
}

/// Per target, per op kind (indexed by `OpKind as usize`): an empty second for the kinds it
/// runs.
fn new_second_table(targets: &[TargetShape]) -> Vec<Vec<Option<KindStats>>> {
    targets
        .iter()
        .map(|t| {
            let mut v: Vec<Option<KindStats>> = (0..OpKind::COUNT).map(|_| None).collect();
            for k in &t.kinds {
                v[*k as usize] = Some(KindStats::new(t.open_loop));
            }
            v
        })
        .collect()
}

/// What the collector has merged so far: the run's totals, the seconds not yet complete,
/// and how far each worker has reported.
struct Merger<'a> {
    targets: Vec<TargetShape>,
    worker_group: &'a [u32],
    out: Collected,
    pending: BTreeMap<i64, Pending>,
    /// Per worker: the index of the last interval it sent (i64::MAX once its last).
    progress_of: Vec<i64>,
    /// Workers that have sent their last interval.
    finished: usize,
    /// Per shape, per kind: the last interval's rates, for the metrics.
    rates: Vec<Vec<LastInterval>>,
}

impl<'a> Merger<'a> {
    fn new(targets: Vec<TargetShape>, worker_target: Vec<u32>, worker_group: &'a [u32]) -> Self {
        let n_workers = worker_target.len();
        let groups = worker_group
            .iter()
            .map(|g| *g as usize + 1)
            .max()
            .unwrap_or(0);
        let out = Collected {
            totals: new_kind_table(&targets),
            worker_cpu_ns: vec![0; n_workers],
            worker_wall_ns: vec![0; n_workers],
            worker_totals: vec![[None; OpKind::COUNT]; n_workers],
            worker_shape: worker_target,
            error_samples: Vec::new(),
            io_error: None,
            group_totals: (0..groups).map(|_| new_kind_table(&targets)).collect(),
            cpu_ns: 0,
            steady: None,
        };
        Merger {
            rates: vec![vec![LastInterval::default(); OpKind::COUNT]; targets.len()],
            targets,
            worker_group,
            out,
            pending: BTreeMap::new(),
            progress_of: vec![i64::MIN; n_workers],
            finished: 0,
        }
    }

    /// Adds one worker's interval to its second and, measured, to the run's totals.
    fn add(&mut self, iv: &Interval) {
        let w = iv.worker as usize;
        let t = iv.target as usize;
        let out = &mut self.out;
        let targets = &self.targets;
        let entry = self.pending.entry(iv.index).or_insert_with(|| Pending {
            reported: 0,
            start_ns: u64::MAX,
            end_ns: 0,
            per_target: new_second_table(targets),
            cpu_ns: vec![0; targets.len()],
        });
        entry.reported += 1;
        entry.start_ns = entry.start_ns.min(iv.start_ns);
        entry.end_ns = entry.end_ns.max(iv.end_ns);
        entry.cpu_ns[t] += iv.cpu_ns;
        for (k, stats) in iv.kinds.iter().enumerate() {
            let Some(stats) = stats else { continue };
            if let Some(dst) = &mut entry.per_target[t][k] {
                dst.add(stats);
            }
            if iv.index >= 0 {
                out.worker_totals[w][k]
                    .get_or_insert_with(WorkerKindTotals::default)
                    .add(stats);
                if let Some(dst) = self
                    .worker_group
                    .get(w)
                    .and_then(|g| out.group_totals[*g as usize][t][k].as_mut())
                {
                    dst.add(stats);
                }
            }
        }
        if iv.index >= 0 {
            out.worker_cpu_ns[w] += iv.cpu_ns;
            out.worker_wall_ns[w] += iv.end_ns.saturating_sub(iv.start_ns);
        }
        for (kind, e) in iv.error_samples.iter().flatten() {
            if out.error_samples.len() < 16 {
                out.error_samples.push((iv.target, *kind, *e));
            }
        }
        if iv.last {
            self.finished += 1;
            self.progress_of[w] = i64::MAX;
        } else {
            self.progress_of[w] = iv.index;
        }
    }

    /// A completed second's figures into the run's totals (measured seconds only).
    fn add_to_totals(&mut self, index: i64, p: &Pending) {
        if index < 0 {
            return;
        }
        for (totals, second) in self.out.totals.iter_mut().zip(&p.per_target) {
            for (dst, src) in totals.iter_mut().zip(second) {
                if let (Some(dst), Some(src)) = (dst, src) {
                    dst.add(src);
                }
            }
        }
    }

    /// The first pending second, once every worker has moved past it (or reported it).
    fn next_complete(&mut self) -> Option<(i64, Pending)> {
        let done_upto = self.progress_of.iter().copied().min().unwrap_or(i64::MAX);
        let (&index, p) = self.pending.first_key_value()?;
        let complete = index <= done_upto || p.reported >= self.progress_of.len();
        if !complete {
            return None;
        }
        self.pending.pop_first()
    }
}

/// A histogram's percentile `pct` (0 when it is empty).
fn percentile<C: hdrhistogram::Counter>(h: &Histogram<C>, pct: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_percentile(pct)
    }
}

/// Each shape's and kind's rates over the interval `p`, into `rates` (an interval too short
/// to show, as `write_second` skips it, leaves them as they were).
fn last_rates(p: &Pending, interval_ns: u64, last: &mut [Vec<LastInterval>]) {
    let span_ns = p.span_ns(interval_ns);
    if span_ns < interval_ns / 100 {
        return;
    }
    let secs = span_ns as f64 / 1e9;
    for (t, kinds) in p.per_target.iter().enumerate() {
        for (k, kt) in kinds.iter().enumerate() {
            if let Some(kt) = kt {
                let quantiles_ns = (!kt.service.is_empty()).then(|| {
                    super::metrics::QUANTILES.map(|(_, pct)| kt.service.value_at_percentile(pct))
                });
                last[t][k] = LastInterval {
                    rate_ops: kt.ops as f64 / secs,
                    rate_bytes: kt.bytes as f64 / secs,
                    quantiles_ns,
                };
            }
        }
    }
}

fn write_second<W: Write, L: Write>(
    index: i64,
    p: &Pending,
    targets: &[TargetShape],
    interval_ns: u64,
    csv: &mut W,
    log: Option<
        &mut hdrhistogram::serialization::interval_log::IntervalLogWriter<
            '_,
            '_,
            L,
            V2DeflateSerializer,
        >,
    >,
    progress: &mut impl FnMut(Progress),
) -> Result<(), WriteError> {
    let csv_error = |e| WriteError::new(Path::new(TIMELINE_FILE), e);
    let span_ns = p.span_ns(interval_ns);
    let reported = p
        .per_target
        .iter()
        .flatten()
        .flatten()
        .any(|k| k.ops > 0 || k.error_count() > 0);
    // A run that stops right at a boundary leaves an empty sliver of an interval: nothing
    // to show.
    if !reported && span_ns < interval_ns / 100 {
        return Ok(());
    }
    let secs = span_ns.max(1) as f64 / 1e9;
    let phase = if index < 0 { "warmup" } else { "measure" };
    let mut all = new_histogram::<u64>();
    let (mut ops, mut bytes, mut errors) = (0u64, 0u64, 0u64);
    let (mut kind_ops, mut kind_bytes) = ([0u64; OpKind::COUNT], [0u64; OpKind::COUNT]);
    let mut log = log;
    for (t, shape) in targets.iter().enumerate() {
        let cpu_cores = p.cpu_ns[t] as f64 / span_ns.max(1) as f64;
        for k in &shape.kinds {
            let Some(kt) = &p.per_target[t][*k as usize] else {
                continue;
            };
            let (ip99, imax) = match &kt.intended {
                Some(h) => (percentile(h, 99.0).to_string(), h.max().to_string()),
                None => (String::new(), String::new()),
            };
            writeln!(
                csv,
                "{},{},{},{},{},{:.1},{},{:.1},{},{},{},{},{},{},{:.3},{:.6},{}",
                index,
                phase,
                shape.name,
                k.name(),
                kt.ops,
                kt.ops as f64 / secs,
                kt.bytes,
                kt.bytes as f64 / secs,
                kt.error_count(),
                percentile(&kt.service, 50.0),
                percentile(&kt.service, 99.0),
                kt.service.max(),
                ip99,
                imax,
                cpu_cores,
                secs,
                error_kinds_text(&kt.errors)
            )
            .map_err(csv_error)?;
            // The interval log holds measured intervals only (the warm-up's are in the
            // timeline), so that a reader merging it gets the measurement alone.
            if let Some(log) = log.as_deref_mut().filter(|_| index >= 0) {
                let start = Duration::from_nanos((index as u64).saturating_mul(interval_ns));
                let len = Duration::from_nanos(span_ns);
                let tag = format!("{}.{}", shape.name.replace([' ', ',', '='], "_"), k.name());
                log.write_histogram(&kt.service, start, len, Tag::new(&tag))
                    .map_err(log_error)?;
                if let Some(h) = &kt.intended {
                    let tag = format!("{tag}.intended");
                    log.write_histogram(h, start, len, Tag::new(&tag))
                        .map_err(log_error)?;
                }
            }
            if shape.background {
                continue;
            }
            merge(&mut all, &kt.service);
            ops += kt.ops;
            bytes += kt.bytes;
            kind_ops[*k as usize] += kt.ops;
            kind_bytes[*k as usize] += kt.bytes;
            errors += kt.error_count();
        }
    }
    csv.flush().map_err(csv_error)?;
    progress(Progress {
        index,
        rate_ops: ops as f64 / secs,
        rate_bytes: bytes as f64 / secs,
        p99_ns: percentile(&all, 99.0),
        errors,
        span_ns,
        kind_ops,
        kind_bytes,
    });
    Ok(())
}
