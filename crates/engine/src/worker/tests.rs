//! Tests of the worker loop: timing of operations run one at a time or overlapped, and the
//! latency limit's skipped starts.

use std::sync::mpsc::sync_channel;
use std::time::Duration;

use super::*;
use storlab_model::Op;
use storlab_record::Interval;
use storlab_record::totals::KindTotals;
use storlab_targets::{Completion, Completions, Submitted};
use storlab_workload::Workload;

/// Takes 1 ms per operation. `at_submit`: executes each in `submit` and says so (what
/// the contract asks of a target that runs one at a time). Otherwise queues them and runs
/// them one after another in `complete`, as the Redis and MongoDB sessions once did.
struct Slow {
    at_submit: bool,
    queued: Vec<u32>,
}

impl Session for Slow {
    fn submit(&mut self, slot: u32, _op: Op) -> Result<Submitted, OpError> {
        if self.at_submit {
            std::thread::sleep(Duration::from_millis(1));
            return Ok(Submitted::Done {
                result: Ok(0),
                found: true,
            });
        }
        self.queued.push(slot);
        Ok(Submitted::Queued)
    }

    fn complete(&mut self, _min: u32, out: &mut Completions) -> Result<(), OpError> {
        for slot in self.queued.drain(..) {
            std::thread::sleep(Duration::from_millis(1));
            out.push(succeeded(slot));
        }
        Ok(())
    }
}

/// The completion of the operation in `slot`: done, found.
fn succeeded(slot: u32) -> Completion {
    Completion {
        slot,
        result: Ok(0),
        found: true,
    }
}

/// Queues every operation and completes the oldest, 1 ms later, on each `complete`: a
/// device with 8 in flight that finishes one at a time.
#[derive(Default)]
struct OneAtATime {
    queued: std::collections::VecDeque<u32>,
}

impl Session for OneAtATime {
    fn submit(&mut self, slot: u32, _op: Op) -> Result<Submitted, OpError> {
        self.queued.push_back(slot);
        Ok(Submitted::Queued)
    }

    fn complete(&mut self, _min: u32, out: &mut Completions) -> Result<(), OpError> {
        if let Some(slot) = self.queued.pop_front() {
            std::thread::sleep(Duration::from_millis(1));
            out.push(succeeded(slot));
        }
        Ok(())
    }
}

/// A worker's configuration at queue depth 8 with intervals of `interval_ns`, run for
/// `ops` operations or for `duration_ns`.
pub(super) fn config(
    overlap: Overlap,
    interval_ns: u64,
    ops: Option<u64>,
    duration_ns: Option<u64>,
) -> WorkerConfig {
    WorkerConfig {
        worker: 0,
        queue_depth: 8,
        overlap,
        interval_ns,
        warmup_ns: 0,
        duration_ns,
        start_delay_ns: 0,
        max_ops: ops,
        rate_ops: None,
        skip_late_ns: None,
        starts_paused: false,
        poisson_seed: None,
        stop_on_error: false,
        latency_target: None,
    }
}

/// A worker of reads at queue depth 8 under `config`, and where its intervals go.
fn reads_worker<'a>(
    config: WorkerConfig,
    control: &'a Control,
    gate: &'a StartGate,
) -> (Worker<'a>, std::sync::mpsc::Receiver<Box<Interval>>) {
    let workload = Workload::from_table(
        toml::from_str("read-share = 1.0\nqueue-depth = 8").expect("workload"),
    )
    .expect("workload");
    let kinds = workload.kinds();
    let (tx, rx) = sync_channel::<Box<Interval>>(64);
    let (spare_tx, spare_rx) = sync_channel(64);
    for _ in 0..4 {
        spare_tx
            .send(Interval::new(0, 0, &kinds, false))
            .expect("spare");
    }
    // No collector hands these back: once they run out, the recorder makes new ones.
    drop(spare_tx);
    let recorder = Recorder::new(Interval::new(0, 0, &kinds, false), tx, spare_rx);
    let w = Worker {
        config,
        clock: Clock::new(),
        control,
        gate,
        rate_changes: Box::new([]),
        flow: None,
        source: workload.source(
            storlab_model::Region {
                offset_bytes: 0,
                size_bytes: 1 << 30,
            },
            0,
            1,
        ),
        recorder,
    };
    (w, rx)
}

/// Runs `session` with reads at queue depth 8 under `config`: how it ended, and every
/// interval it handed over.
fn run_reads(session: impl Session, config: WorkerConfig) -> (WorkerOutcome, Vec<Interval>) {
    let control = Control::new(std::sync::Arc::new(AtomicBool::new(false)));
    let gate = StartGate::new(0);
    let (w, rx) = reads_worker(config, &control, &gate);
    let outcome = run_loop(session, w, 0);
    (outcome, rx.try_iter().map(|iv| *iv).collect())
}

/// The plain loop is picked for a closed loop of reads on a target that queues every kind,
/// and never once a feature it is compiled without is asked for.
#[test]
fn the_plain_loop_is_picked_only_without_the_rarer_features() {
    let control = Control::new(std::sync::Arc::new(AtomicBool::new(false)));
    let gate = StartGate::new(0);
    let concurrent = Overlap::Concurrent { max_queue_depth: 8 };
    let plain = |change: &dyn Fn(&mut WorkerConfig)| {
        let mut c = config(concurrent, 1_000_000, Some(10), None);
        change(&mut c);
        op_loop::is_plain(&reads_worker(c, &control, &gate).0)
    };
    assert!(plain(&|_| {}));
    assert!(!plain(&|c| c.rate_ops = Some(1000.0)));
    assert!(!plain(&|c| c.start_delay_ns = 1));
    assert!(!plain(&|c| c.starts_paused = true));
    assert!(!plain(&|c| c.overlap = Overlap::None));
    assert!(!plain(&|c| {
        c.overlap = Overlap::Batched {
            kinds: &[OpKind::Insert],
            max_queue_depth: 8,
        }
    }));
    assert!(!plain(&|c| {
        c.latency_target = Some(storlab_model::latency_target::LatencyTarget {
            target: storlab_model::units::Dur(Duration::from_millis(1)),
            window: storlab_model::units::Dur(Duration::from_millis(100)),
            percentile: 99.0,
            keep_adjusting: false,
        })
    }));
}

/// Runs `session` at queue depth 8 for `ops` operations; the reads' merged totals.
fn measure(session: impl Session, overlap: Overlap, ops: u64) -> KindTotals {
    let (outcome, intervals) = run_reads(session, config(overlap, 1_000_000_000, Some(ops), None));
    assert_eq!(outcome.measured_ops, ops);
    let mut reads = KindTotals::new(false);
    for iv in intervals {
        if let Some(k) = &iv.kinds[OpKind::Read as usize] {
            reads.add(k);
        }
    }
    reads
}

/// A duration of five 20 ms intervals, ended on a boundary with 8 operations of 1 ms in
/// flight: their completions (the drain, about 8 ms) go into the fifth interval, which says
/// it lasted longer, not into a sixth of a few milliseconds whose 8 completions would be
/// drawn as a rate many times the run's.
#[test]
fn the_drain_after_the_duration_is_the_last_intervals() {
    const INTERVAL_NS: u64 = 20_000_000;
    let (outcome, intervals) = run_reads(
        OneAtATime::default(),
        config(
            Overlap::Concurrent { max_queue_depth: 8 },
            INTERVAL_NS,
            None,
            Some(5 * INTERVAL_NS),
        ),
    );
    let measured: Vec<&Interval> = intervals.iter().filter(|iv| iv.index >= 0).collect();
    let last = measured.last().expect("measured intervals");
    assert_eq!(
        last.index,
        4,
        "{:?}",
        measured.iter().map(|iv| iv.index).collect::<Vec<_>>()
    );
    assert!(last.last);
    let span = last.end_ns - last.start_ns;
    assert!(
        span > INTERVAL_NS,
        "the drain is in the fifth interval: {span} ns"
    );
    let ops: u64 = measured
        .iter()
        .filter_map(|iv| iv.kinds[OpKind::Read as usize].as_ref())
        .map(|k| k.ops)
        .sum();
    assert_eq!(ops, outcome.measured_ops);
}

/// Takes 1 ms in each `submit` (as if it started the operation there) and completes all it
/// queued at the next `complete`; says whether its operations start in `complete`.
struct SlowSubmit {
    starts_in_complete: bool,
    queued: Vec<u32>,
}

impl Session for SlowSubmit {
    fn starts_in_complete(&self) -> bool {
        self.starts_in_complete
    }

    fn submit(&mut self, slot: u32, _op: Op) -> Result<Submitted, OpError> {
        std::thread::sleep(Duration::from_millis(1));
        self.queued.push(slot);
        Ok(Submitted::Queued)
    }

    fn complete(&mut self, _min: u32, out: &mut Completions) -> Result<(), OpError> {
        for slot in self.queued.drain(..) {
            out.push(succeeded(slot));
        }
        Ok(())
    }
}

/// Issue 41 part 1: a session whose queued operations start in `complete` times all it
/// queues between two calls from one reading, before the first `submit`: each of a batch
/// of 8 then includes the 8 submits. One that may start an operation in `submit` gets a
/// reading before each: the last of a batch is timed from its own (one submit, 1 ms).
#[test]
fn one_reading_serves_a_batch_only_when_it_starts_in_complete() {
    let overlap = Overlap::Concurrent { max_queue_depth: 8 };
    for (starts_in_complete, shortest) in [(true, 8_000_000..u64::MAX), (false, 0..4_000_000)] {
        let session = SlowSubmit {
            starts_in_complete,
            queued: Vec::new(),
        };
        let reads = measure(session, overlap, 80);
        let min = reads.service.min();
        assert!(
            shortest.contains(&min),
            "starts in complete: {starts_in_complete}; the shortest {min} ns"
        );
    }
}

/// Answers at once, but its 100th operation stalls for 300 ms (a failover).
struct Stall {
    n: u32,
}

impl Session for Stall {
    fn submit(&mut self, _slot: u32, _op: Op) -> Result<Submitted, OpError> {
        self.n += 1;
        if self.n == 100 {
            std::thread::sleep(Duration::from_millis(300));
        }
        Ok(Submitted::Done {
            result: Ok(0),
            found: true,
        })
    }

    fn complete(&mut self, _min: u32, _out: &mut Completions) -> Result<(), OpError> {
        Ok(())
    }
}

/// Open loop at 1,000 ops/s for 1 s through a 300 ms stall, with and without a 50 ms
/// latency limit: every intended start is either sent or skipped; with the limit, the
/// starts more than 50 ms behind when the stall ends (about 250) are skipped, not sent as
/// a burst.
#[test]
fn a_latency_limit_skips_the_starts_a_stall_left_too_late() {
    let run = |skip_late_ns: Option<u64>| {
        let workload = Workload::from_table(toml::from_str("read-share = 1.0").expect("workload"))
            .expect("workload");
        let kinds = workload.kinds();
        let (tx, _rx) = sync_channel::<Box<Interval>>(64);
        let (spare_tx, spare_rx) = sync_channel(64);
        for _ in 0..8 {
            spare_tx
                .send(Interval::new(0, 0, &kinds, true))
                .expect("spare");
        }
        // No collector hands these back: once they run out, the recorder makes new ones.
        drop(spare_tx);
        let recorder = Recorder::new(Interval::new(0, 0, &kinds, true), tx, spare_rx);
        let control = Control::new(std::sync::Arc::new(AtomicBool::new(false)));
        let gate = StartGate::new(0);
        let w = Worker {
            config: WorkerConfig {
                worker: 0,
                queue_depth: 1,
                overlap: Overlap::None,
                interval_ns: 100_000_000,
                warmup_ns: 0,
                duration_ns: Some(1_000_000_000),
                start_delay_ns: 0,
                max_ops: None,
                rate_ops: Some(1000.0),
                skip_late_ns,
                starts_paused: false,
                poisson_seed: None,
                stop_on_error: false,
                latency_target: None,
            },
            clock: Clock::new(),
            control: &control,
            gate: &gate,
            rate_changes: Box::new([]),
            flow: None,
            source: workload.source(
                storlab_model::Region {
                    offset_bytes: 0,
                    size_bytes: 1 << 30,
                },
                0,
                1,
            ),
            recorder,
        };
        let o = run_loop(Stall { n: 0 }, w, 0);
        (o.measured_ops, o.skipped_starts)
    };
    let (sent, skipped) = run(None);
    assert_eq!(skipped, 0);
    assert!((990..=1001).contains(&sent), "{sent}: the backlog is sent");
    let (sent, skipped) = run(Some(50_000_000));
    assert!(
        (200..=400).contains(&skipped),
        "{skipped} skipped, {sent} sent"
    );
    assert!(
        (990..=1001).contains(&(sent + skipped)),
        "every start sent or skipped: {sent} + {skipped}"
    );
}

/// Issue "every number honest" 1.1: operations that run one after another are timed
/// each from its own start. At queue depth 8, a 1 ms operation run one at a time is
/// 1 ms, not the 4.5 ms that stamping all eight with the batch's start gave.
#[test]
fn operations_run_one_at_a_time_are_timed_alone() {
    let one_at_a_time = Slow {
        at_submit: true,
        queued: Vec::new(),
    };
    let reads = measure(one_at_a_time, Overlap::None, 80);
    assert_eq!(reads.ops, 80);
    let p50 = reads.service.value_at_quantile(0.5);
    assert!(
        (900_000..2_500_000).contains(&p50),
        "p50 {p50} ns: should be near 1 ms"
    );

    // The same operations queued and run in turn inside `complete` (a batch that is not
    // a real overlap): each is timed to its batch's end, so the k-th includes the k-1
    // before it. This is what the contract's `Done` answer exists to avoid.
    let serial_batch = Slow {
        at_submit: false,
        queued: Vec::new(),
    };
    let reads = measure(serial_batch, Overlap::Concurrent { max_queue_depth: 8 }, 80);
    let p50 = reads.service.value_at_quantile(0.5);
    assert!(p50 > 3_500_000, "p50 {p50} ns: a batch of 8 x 1 ms");
}

/// Issue 27 part 1: operations run alone back to back are each timed from the end of the
/// one before (one clock reading per operation), so their times add up to the worker's time
/// from the first to the last: none of it is left out between two operations, and none is
/// counted twice. Before, each was timed around its `submit` alone, and for operations
/// answered at once the worker's time between them (its draw, its recording, the loop's
/// checks) was in no operation: the sum was a small part of the span.
#[test]
fn operations_run_alone_back_to_back_add_up_to_the_workers_time() {
    let mut session = Instant0 {
        since: std::time::Instant::now(),
        first_ns: None,
        last_ns: 0,
        n: 0,
    };
    let ops = 20_000;
    let reads = measure(&mut session, Overlap::None, ops);
    assert_eq!(reads.ops, ops);
    let span_ns = (session.last_ns - session.first_ns.expect("submitted")) as f64;
    let sum_ns = reads.service.mean() * reads.ops as f64;
    let share = sum_ns / span_ns;
    // Between the first submit's start and the last one's end: the first operation's time
    // starts a little before its submit (its own reading), the last ends a little after.
    assert!(
        (0.9..1.02).contains(&share),
        "the operations' times sum to {sum_ns:.0} ns over a span of {span_ns:.0} ns"
    );
}

/// Answers every operation at once, in `submit`; notes when the first call began, when the
/// last returned, and how many there were.
struct Instant0 {
    since: std::time::Instant,
    first_ns: Option<u64>,
    last_ns: u64,
    n: u64,
}

impl Session for &mut Instant0 {
    fn submit(&mut self, _slot: u32, _op: Op) -> Result<Submitted, OpError> {
        self.first_ns
            .get_or_insert(self.since.elapsed().as_nanos() as u64);
        self.n += 1;
        self.last_ns = self.since.elapsed().as_nanos() as u64;
        Ok(Submitted::Done {
            result: Ok(0),
            found: true,
        })
    }

    fn complete(&mut self, _min: u32, _out: &mut Completions) -> Result<(), OpError> {
        Ok(())
    }
}

/// Issue 29 (fio's `startdelay`): a worker whose workload starts 300 ms late issues nothing
/// before, then runs its whole 200 ms duration: its measured window is 300..500 ms (its last
/// I/O, answered at once, completes just before 500 ms), not cut at the run's 200 ms.
/// Without a delay the window is 0..200 ms, as before.
#[test]
fn a_start_delay_moves_the_workers_measured_window_after_it() {
    let run = |delay: &str| {
        let workload = Workload::from_table(
            toml::from_str(&format!("read-share = 1.0\nstart-delay = \"{delay}\""))
                .expect("workload"),
        )
        .expect("workload");
        let kinds = workload.kinds();
        let (tx, _rx) = sync_channel::<Box<Interval>>(64);
        let (spare_tx, spare_rx) = sync_channel(64);
        drop(spare_tx);
        let recorder = Recorder::new(Interval::new(0, 0, &kinds, false), tx, spare_rx);
        let control = Control::new(std::sync::Arc::new(AtomicBool::new(false)));
        let gate = StartGate::new(0);
        let clock = Clock::new();
        let w = Worker {
            config: WorkerConfig {
                queue_depth: 1,
                start_delay_ns: workload.start_delay().as_nanos() as u64,
                ..config(Overlap::None, 100_000_000, None, Some(200_000_000))
            },
            clock: clock.clone(),
            control: &control,
            gate: &gate,
            rate_changes: Box::new([]),
            flow: None,
            source: workload.source(
                storlab_model::Region {
                    offset_bytes: 0,
                    size_bytes: 1 << 30,
                },
                0,
                1,
            ),
            recorder,
        };
        let mut session = Instant0 {
            since: std::time::Instant::now(),
            first_ns: None,
            last_ns: 0,
            n: 0,
        };
        let start_ns = clock.now_ns();
        let o = run_loop(&mut session, w, start_ns);
        let first_ns = session.first_ns.expect("an operation was issued");
        assert_eq!(o.end_reason, EndReason::Duration);
        assert_eq!(o.measured_ops, session.n);
        (first_ns, o.last_completion_ns - start_ns)
    };
    let ms = 1_000_000;
    let (first, last) = run("300ms");
    assert!(
        (300 * ms..400 * ms).contains(&first),
        "first I/O at {first} ns"
    );
    assert!(
        (490 * ms..600 * ms).contains(&last),
        "last completion at {last} ns"
    );
    let (first, last) = run("0s");
    assert!(first < 100 * ms, "first I/O at {first} ns");
    assert!(
        (190 * ms..300 * ms).contains(&last),
        "last completion at {last} ns"
    );
}
