//! Recording what workers measure: per operation kind, HDR histograms of service time and of
//! time from the intended start, operation, byte and error counts, gathered per interval.
//!
//! Each worker owns a [`Recorder`]. At every interval boundary it hands its full [`Interval`]
//! to the collector through a bounded channel and takes an already-allocated, cleared spare
//! back, so recording never allocates, locks or formats. A worker owns a fixed number of
//! intervals for its whole run (its current one and `SPARES_PER_WORKER` spares): when the
//! collector has not yet handed one back, the worker waits for it (counted, with the time
//! waited) rather than allocate another, so memory stays the same however long the run is.
//! Histograms merge by adding counts, so workers, targets, hosts and runs combine exactly.

pub mod summary;
pub mod totals;

use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, TrySendError};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use storlab_model::{ErrorKind, OpError, OpKind};

/// Lowest latency recorded, in nanoseconds.
pub const LOWEST_NS: u64 = 1;
/// Highest latency recorded without saturating: one hour, in nanoseconds.
pub const HIGHEST_NS: u64 = 3_600_000_000_000;
/// Significant decimal digits kept by every histogram (relative error below 0.1%).
pub const SIGFIG: u8 = 3;

/// Creates an empty histogram with storlab's range and precision.
pub fn new_histogram<T: hdrhistogram::Counter>() -> Histogram<T> {
    Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGFIG)
        .expect("constant histogram bounds are valid")
}

/// One operation kind's figures over one interval.
pub struct KindStats {
    /// Time from submission to observed completion, ns.
    pub service: Histogram<u32>,
    /// Time from the intended start (open loop schedule) to completion, ns. Closed loop: none.
    pub intended: Option<Histogram<u32>>,
    pub ops: u64,
    pub bytes: u64,
    /// Successful operations that found nothing (a get of a missing key); counted in `ops`.
    pub misses: u64,
    pub errors: [u64; ErrorKind::COUNT],
    /// Sum of the service times recorded in `service`, ns (exact, not bucket values): a
    /// worker's mean without its histogram.
    pub service_sum_ns: u64,
}

impl KindStats {
    /// Empty figures (`open_loop`: with a histogram of the time from the intended start).
    pub fn new(open_loop: bool) -> KindStats {
        KindStats {
            service: new_histogram(),
            intended: open_loop.then(new_histogram),
            ops: 0,
            bytes: 0,
            misses: 0,
            errors: [0; ErrorKind::COUNT],
            service_sum_ns: 0,
        }
    }

    /// Adds another interval's figures of the same kind (same histogram shape: counts are
    /// added index by index, without looking values up).
    pub fn add(&mut self, other: &KindStats) {
        add_counts(&mut self.service, &other.service);
        if let (Some(dst), Some(src)) = (&mut self.intended, &other.intended) {
            add_counts(dst, src);
        }
        self.ops += other.ops;
        self.bytes += other.bytes;
        self.misses += other.misses;
        for (d, s) in self.errors.iter_mut().zip(other.errors.iter()) {
            *d += s;
        }
        self.service_sum_ns = self.service_sum_ns.saturating_add(other.service_sum_ns);
    }

    pub fn error_count(&self) -> u64 {
        self.errors.iter().sum()
    }

    fn clear(&mut self) {
        // An empty histogram is already clear: skip writing its whole counts array.
        if !self.service.is_empty() {
            self.service.reset();
        }
        if let Some(h) = self.intended.as_mut().filter(|h| !h.is_empty()) {
            h.reset();
        }
        self.ops = 0;
        self.bytes = 0;
        self.misses = 0;
        self.errors = [0; ErrorKind::COUNT];
        self.service_sum_ns = 0;
    }
}

/// Adds `src`'s counts into `dst` (storlab's bounds and precision on both: the fast path of
/// hdrhistogram's `add`; a histogram of other bounds is merged value by value).
fn add_counts(dst: &mut Histogram<u32>, src: &Histogram<u32>) {
    if dst.add(src).is_err() {
        totals::merge(dst, src);
    }
}

/// Why a worker stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndReason {
    Duration,
    Ops,
    Interrupted,
    Error,
    /// Steady state was reached (`steady-state`): a complete run, shorter than its duration.
    SteadyState,
    /// The run was called off before it started.
    NotStarted,
}

/// How many error samples an interval keeps for the report.
pub const ERROR_SAMPLES: usize = 4;

/// A worker's figures for one interval of the timeline.
pub struct Interval {
    /// Index of the worker in the run (across all targets).
    pub worker: u32,
    /// Index of the target in the run.
    pub target: u32,
    /// Interval number: 0 is the first measured second; warm-up intervals are negative.
    pub index: i64,
    /// When the interval started for this worker (run clock, ns): its boundary, or the run's
    /// start for the first one.
    pub start_ns: u64,
    /// When it ended (run clock, ns): its boundary, or when the worker stopped for its last.
    pub end_ns: u64,
    /// CPU time the worker thread spent working during the interval (not spinning while
    /// waiting for an open-loop start), ns.
    pub cpu_ns: u64,
    /// The worker's last interval: it has stopped.
    pub last: bool,
    pub kinds: [Option<KindStats>; OpKind::COUNT],
    pub error_samples: [Option<(OpKind, OpError)>; ERROR_SAMPLES],
}

impl Interval {
    /// An empty interval holding histograms for the given kinds only.
    pub fn new(worker: u32, target: u32, kinds: &[OpKind], open_loop: bool) -> Box<Interval> {
        let mut iv = Box::new(Interval {
            worker,
            target,
            index: 0,
            start_ns: 0,
            end_ns: 0,
            cpu_ns: 0,
            last: false,
            kinds: std::array::from_fn(|_| None),
            error_samples: [None; ERROR_SAMPLES],
        });
        for k in kinds {
            iv.kinds[*k as usize] = Some(KindStats::new(open_loop));
        }
        iv
    }

    /// Clears all figures, keeping the allocations.
    pub fn clear(&mut self) {
        for k in self.kinds.iter_mut().flatten() {
            k.clear();
        }
        self.error_samples = [None; ERROR_SAMPLES];
        self.cpu_ns = 0;
        self.last = false;
    }

    fn shape_like(&self) -> Box<Interval> {
        let kinds: Vec<OpKind> = OpKind::ALL
            .into_iter()
            .filter(|k| self.kinds[*k as usize].is_some())
            .collect();
        let open = self.kinds.iter().flatten().any(|k| k.intended.is_some());
        Interval::new(self.worker, self.target, &kinds, open)
    }
}

/// Successful operations of one kind with the same service time and time from the intended
/// start: recorded at once, as many operations.
#[derive(Debug, Clone, Copy)]
struct Run {
    kind: OpKind,
    service_ns: u64,
    intended_ns: u64,
    ops: u32,
    misses: u32,
    bytes: u64,
}

impl Run {
    const EMPTY: Run = Run {
        kind: OpKind::Read,
        service_ns: 0,
        intended_ns: 0,
        ops: 0,
        misses: 0,
        bytes: 0,
    };

    /// Whether an operation with these figures can join the run.
    #[inline(always)]
    fn holds(&self, kind: OpKind, service_ns: u64, intended_ns: u64) -> bool {
        self.ops != 0
            && self.ops != u32::MAX
            && self.kind == kind
            && self.service_ns == service_ns
            && self.intended_ns == intended_ns
    }

    #[inline(always)]
    fn push(&mut self, kind: OpKind, service_ns: u64, intended_ns: u64, bytes: u64, found: bool) {
        self.kind = kind;
        self.service_ns = service_ns;
        self.intended_ns = intended_ns;
        self.ops += 1;
        self.misses += u32::from(!found);
        self.bytes += bytes;
    }
}

/// Successful operations gathered to be recorded at once ([`Recorder::record_runs`]), in two
/// runs of equal figures (a mixed workload's two kinds, or one kind's two latencies). The
/// operations that one reap of a queue saw complete, started by one submission, share both
/// clock readings, so their times are equal: recording them one by one would look the same
/// bucket up again for each. Recording a run of n is recording each of its n operations: the
/// same counts, sums and bytes, in the same interval.
#[derive(Debug, Clone, Copy)]
pub struct OkRuns {
    first: Run,
    second: Run,
}

impl Default for OkRuns {
    fn default() -> OkRuns {
        OkRuns {
            first: Run::EMPTY,
            second: Run::EMPTY,
        }
    }
}

impl OkRuns {
    /// Adds one successful operation (`found`: false for a key that was not there). One that
    /// joins neither run takes the first if it is empty, else the second, whose operations
    /// are recorded first.
    #[inline(always)]
    pub fn add(
        &mut self,
        recorder: &mut Recorder,
        kind: OpKind,
        service_ns: u64,
        intended_ns: u64,
        bytes: u64,
        found: bool,
    ) {
        let run = if self.first.holds(kind, service_ns, intended_ns) {
            &mut self.first
        } else if self.second.holds(kind, service_ns, intended_ns) {
            &mut self.second
        } else if self.first.ops == 0 {
            &mut self.first
        } else {
            recorder.record_run(&mut self.second);
            &mut self.second
        };
        run.push(kind, service_ns, intended_ns, bytes, found);
    }
}

/// A worker's recorder: records into the current interval and rotates intervals.
pub struct Recorder {
    current: Box<Interval>,
    to_collector: SyncSender<Box<Interval>>,
    spares: Receiver<Box<Interval>>,
    /// Rotations that found no spare back from the collector and waited for one.
    pub spare_waits: u64,
    /// Time spent in those waits, ns.
    pub spare_wait_ns: u64,
}

impl Recorder {
    /// `first` is the worker's first interval; `spares` returns cleared intervals from the
    /// collector (pre-fill it with a few so that rotation never waits or allocates).
    pub fn new(
        first: Box<Interval>,
        to_collector: SyncSender<Box<Interval>>,
        spares: Receiver<Box<Interval>>,
    ) -> Recorder {
        Recorder {
            current: first,
            to_collector,
            spares,
            spare_waits: 0,
            spare_wait_ns: 0,
        }
    }

    /// Records a successful operation (`found`: false for a key that was not there): the
    /// one-by-one reference that the worker's runs ([`OkRuns`]) are tested against.
    #[cfg(test)]
    fn record_ok(
        &mut self,
        kind: OpKind,
        service_ns: u64,
        intended_ns: u64,
        bytes: u64,
        found: bool,
    ) {
        if let Some(k) = &mut self.current.kinds[kind as usize] {
            k.service.saturating_record(service_ns.max(LOWEST_NS));
            if let Some(h) = &mut k.intended {
                h.saturating_record(intended_ns.max(LOWEST_NS));
            }
            k.ops += 1;
            k.bytes += bytes;
            k.misses += u64::from(!found);
            k.service_sum_ns = k.service_sum_ns.saturating_add(service_ns);
        }
    }

    /// Records the gathered operations and empties `runs`.
    #[inline(always)]
    pub fn record_runs(&mut self, runs: &mut OkRuns) {
        self.record_run(&mut runs.first);
        self.record_run(&mut runs.second);
    }

    /// Records `run`'s operations at once and empties it.
    #[inline(always)]
    fn record_run(&mut self, run: &mut Run) {
        if run.ops == 0 {
            return;
        }
        if let Some(k) = &mut self.current.kinds[run.kind as usize] {
            k.service
                .saturating_record_n(run.service_ns.max(LOWEST_NS), run.ops);
            if let Some(h) = &mut k.intended {
                h.saturating_record_n(run.intended_ns.max(LOWEST_NS), run.ops);
            }
            k.ops += u64::from(run.ops);
            k.bytes += run.bytes;
            k.misses += u64::from(run.misses);
            k.service_sum_ns = k
                .service_sum_ns
                .saturating_add(run.service_ns.saturating_mul(u64::from(run.ops)));
        }
        *run = Run::EMPTY;
    }

    /// Counts a failed operation.
    #[inline]
    pub fn record_error(&mut self, kind: OpKind, err: OpError) {
        if let Some(k) = &mut self.current.kinds[kind as usize] {
            k.errors[err.kind as usize] += 1;
        }
        if let Some(slot) = self.current.error_samples.iter_mut().find(|s| s.is_none()) {
            *slot = Some((kind, err));
        }
    }

    /// Closes the current interval and starts the next one. Returns false if the collector
    /// has gone away (the run is being torn down).
    pub fn rotate(
        &mut self,
        index: i64,
        start_ns: u64,
        end_ns: u64,
        cpu_ns: u64,
        last: bool,
        next_index: i64,
    ) -> bool {
        // Spares come back from the collector already cleared.
        let next = match self.spares.try_recv() {
            Ok(iv) => iv,
            Err(TryRecvError::Empty) => self.wait_for_spare(),
            // The collector has gone (the run is being torn down): record on into a new one.
            Err(TryRecvError::Disconnected) => self.current.shape_like(),
        };
        let mut full = std::mem::replace(&mut self.current, next);
        full.index = index;
        full.start_ns = start_ns;
        full.end_ns = end_ns;
        full.cpu_ns = cpu_ns;
        full.last = last;
        self.current.index = next_index;
        match self.to_collector.try_send(full) {
            Ok(()) => true,
            Err(TrySendError::Full(iv)) => self.to_collector.send(iv).is_ok(),
            Err(TrySendError::Disconnected(_)) => false,
        }
    }
}

impl Recorder {
    /// Waits for the collector to hand a spare back (it falls behind: a worker owns a fixed
    /// number of intervals, so that memory does not grow with the run's length).
    #[cold]
    fn wait_for_spare(&mut self) -> Box<Interval> {
        let waited_from = std::time::Instant::now();
        let next = self
            .spares
            .recv()
            .unwrap_or_else(|_| self.current.shape_like());
        self.spare_waits += 1;
        self.spare_wait_ns = self
            .spare_wait_ns
            .saturating_add(waited_from.elapsed().as_nanos() as u64);
        next
    }
}

/// CPU time used so far by the calling thread, ns.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time (user + system) used so far by the whole process, ns.
pub fn process_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;

    #[test]
    fn recorder_rotates_into_spares_and_counts() {
        let (tx, rx) = sync_channel(4);
        let (spare_tx, spare_rx) = sync_channel(4);
        spare_tx
            .send(Interval::new(0, 0, &[OpKind::Read], false))
            .unwrap();
        let mut r = Recorder::new(Interval::new(0, 0, &[OpKind::Read], false), tx, spare_rx);
        r.record_ok(OpKind::Read, 1000, 1000, 4096, true);
        r.record_ok(OpKind::Read, 3000, 3000, 4096, false);
        r.record_ok(OpKind::Write, 3000, 3000, 4096, true); // kind not in use: ignored
        r.record_error(OpKind::Read, OpError::errno(libc::EIO));
        assert!(r.rotate(0, 0, 1_000_000_000, 5, false, 1));
        let iv = rx.recv().unwrap();
        let k = iv.kinds[OpKind::Read as usize].as_ref().unwrap();
        assert_eq!(k.ops, 2);
        assert_eq!(k.bytes, 8192);
        assert_eq!(k.misses, 1);
        assert_eq!(k.service.len(), 2);
        assert_eq!(k.errors[ErrorKind::Io as usize], 1);
        assert!(iv.kinds[OpKind::Write as usize].is_none());
        assert_eq!(r.spare_waits, 0);
        // No spare left: the next rotation waits for the collector to hand one back, and
        // says so; it allocates nothing.
        drop(iv);
        let collector = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            spare_tx
                .send(Interval::new(0, 0, &[OpKind::Read], false))
                .unwrap();
        });
        assert!(r.rotate(1, 1_000_000_000, 2_000_000_000, 5, true, 2));
        collector.join().unwrap();
        assert_eq!(r.spare_waits, 1);
        assert!(r.spare_wait_ns >= 40_000_000, "{}", r.spare_wait_ns);
        assert!(rx.recv().unwrap().last);
    }

    /// Operations gathered into runs land in the interval exactly as recorded one by one:
    /// the same histograms, counts, bytes, misses and latency sums, whatever their order.
    #[test]
    fn runs_record_what_single_operations_do() {
        let kinds = [OpKind::Read, OpKind::Write];
        let ops: [(OpKind, u64, u64, bool); 9] = [
            (OpKind::Read, 40, 90, true),
            (OpKind::Read, 40, 90, true),
            (OpKind::Read, 40, 90, false),
            (OpKind::Write, 40, 90, true),
            (OpKind::Read, 40, 90, true),
            (OpKind::Read, 50, 90, true),
            (OpKind::Read, 50, 95, true),
            (OpKind::Write, 7_000_000, 7_000_000, true),
            (OpKind::Write, 7_000_000, 7_000_000, true),
        ];
        let interval = |gather: bool| {
            let (tx, rx) = sync_channel(2);
            let (spare_tx, spare_rx) = sync_channel(2);
            spare_tx.send(Interval::new(0, 0, &kinds, true)).unwrap();
            let mut r = Recorder::new(Interval::new(0, 0, &kinds, true), tx, spare_rx);
            let mut runs = OkRuns::default();
            for (i, &(kind, service, intended, found)) in ops.iter().enumerate() {
                let bytes = 4096 * (i as u64 + 1);
                if gather {
                    runs.add(&mut r, kind, service, intended, bytes, found);
                } else {
                    r.record_ok(kind, service, intended, bytes, found);
                }
            }
            r.record_runs(&mut runs);
            r.record_runs(&mut runs); // empty now: records nothing
            assert!(r.rotate(0, 0, 1_000_000_000, 5, false, 1));
            rx.recv().unwrap()
        };
        let (one_by_one, gathered) = (interval(false), interval(true));
        for kind in kinds {
            let (a, b) = (
                one_by_one.kinds[kind as usize].as_ref().unwrap(),
                gathered.kinds[kind as usize].as_ref().unwrap(),
            );
            assert_eq!(a.service, b.service);
            assert_eq!(a.intended, b.intended);
            assert_eq!(
                (a.ops, a.bytes, a.misses, a.service_sum_ns),
                (b.ops, b.bytes, b.misses, b.service_sum_ns)
            );
        }
        let reads = gathered.kinds[OpKind::Read as usize].as_ref().unwrap();
        assert_eq!((reads.ops, reads.misses), (6, 1));
        assert_eq!(reads.service_sum_ns, 4 * 40 + 2 * 50);
    }

    #[test]
    fn interval_figures_add_by_counts() {
        let mut a = KindStats::new(true);
        let mut b = KindStats::new(true);
        for v in [100, 2_000, 30_000] {
            a.service.record(v).unwrap();
            b.service.record(v * 2).unwrap();
            b.intended.as_mut().unwrap().record(v * 3).unwrap();
        }
        a.ops = 3;
        b.ops = 3;
        b.errors[ErrorKind::Io as usize] = 2;
        b.service_sum_ns = 64_200;
        a.add(&b);
        assert_eq!(a.ops, 6);
        assert_eq!(a.service.len(), 6);
        assert_eq!(a.service.max(), b.service.max());
        assert_eq!(a.service.count_at(4_000), 1);
        assert_eq!(a.intended.as_ref().unwrap().len(), 3);
        assert_eq!(a.error_count(), 2);
        assert_eq!(a.service_sum_ns, 64_200);
        a.clear();
        assert!(a.service.is_empty() && a.intended.as_ref().unwrap().is_empty());
        assert_eq!(a.service.max(), 0);
    }

    #[test]
    fn errno_classes() {
        assert_eq!(ErrorKind::from_errno(libc::EIO), ErrorKind::Io);
        assert_eq!(ErrorKind::from_errno(libc::ENOSPC), ErrorKind::NoSpace);
        assert_eq!(ErrorKind::from_errno(libc::EPERM), ErrorKind::Other);
    }
}
