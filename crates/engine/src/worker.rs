//! The worker loop: one per worker thread, generic over the target's session type.
//!
//! Closed loop: every free slot is filled at once, so `queue-depth` operations stay in flight
//! and a completion issues the next. Open loop: operations start on a schedule of intended
//! start times laid out by the worker's [`Pacer`] (a constant gap, or a rate that changes at
//! the phases of a step's rate schedule); an operation that starts late, because all slots
//! were busy or the worker was stalled, carries its lateness in the latency from intended start.
//!
//! An IOmeter burst's delay (see [`storlab_workload::access_spec`]) holds the operation that
//! begins the burst until the delay has passed: meanwhile nothing is issued and what is in
//! flight completes and is recorded, as IOmeter's workers do. A start delay (fio's
//! `startdelay`) holds the worker's first operation the same way, and moves its measured
//! window after it (decided once per worker, in [`edges`]).
//!
//! The loop reads the clock once per operation (right before its submit) and once per batch
//! of completions, and touches no shared state per operation: stop flags are polled every few milliseconds, and figures go to
//! the recorder, whose intervals rotate on time boundaries.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use super::pacer::RateChange;
pub use clock::Clock;
use edges::{Counts, Timing, finish, next_interval, poll};
use issuer::{Issuer, NO_CHAIN};
use storlab_model::latency_target::{LatencySearchResult, LatencyTarget};
use storlab_record::EndReason;
use storlab_record::{Recorder, thread_cpu_ns};
use storlab_model::{OpError, OpKind};
use storlab_targets::{Completions, Overlap, Session, SessionUser, Submitted};
use storlab_workload::Source;

/// Flags the workers poll.
#[derive(Debug, Default)]
pub struct Control {
    /// Stop issuing, finish what is in flight (Ctrl-C, another worker's fatal error).
    pub stop: AtomicBool,
    /// Set by the signal handler: the user interrupted.
    pub interrupted: Arc<AtomicBool>,
    /// Measured operations the workers have completed, added by each worker when it polls the
    /// flags (every few milliseconds, never per operation): what `after-ops` events wait for.
    pub completed_ops: AtomicU64,
    /// A distributed run's stonewall: another rank finished its operations, so this one
    /// stops issuing too; its workers end as an operation-bounded run ends.
    pub stonewall: AtomicBool,
    /// Steady state was reached (`steady-state`, judged by the collector): stop issuing,
    /// finish what is in flight; the run is complete.
    pub steady_state: AtomicBool,
}

impl Control {
    pub fn new(interrupted: Arc<AtomicBool>) -> Control {
        Control {
            stop: AtomicBool::new(false),
            interrupted,
            completed_ops: AtomicU64::new(0),
            stonewall: AtomicBool::new(false),
            steady_state: AtomicBool::new(false),
        }
    }
}

/// Starts all workers of a run together, after every session has opened.
pub struct StartGate {
    opened: Barrier,
    go: Barrier,
    start_ns: AtomicU64,
    failed: AtomicBool,
}

impl StartGate {
    /// A gate for `workers` workers plus the runner.
    pub fn new(workers: usize) -> StartGate {
        StartGate {
            opened: Barrier::new(workers + 1),
            go: Barrier::new(workers + 1),
            start_ns: AtomicU64::new(0),
            failed: AtomicBool::new(false),
        }
    }

    /// Worker side: wait for the start; None if the run was called off.
    pub fn wait(&self) -> Option<u64> {
        self.opened.wait();
        self.go.wait();
        if self.failed.load(Ordering::Acquire) {
            None
        } else {
            Some(self.start_ns.load(Ordering::Acquire))
        }
    }

    /// Worker side: its session could not open; the run is called off.
    pub fn fail(&self) {
        self.failed.store(true, Ordering::Release);
        self.opened.wait();
        self.go.wait();
    }

    /// Runner side: wait until every worker has opened, then start them at `start_ns`
    /// (computed by `start`). Returns false if a worker failed to open.
    pub fn release(&self, start: impl FnOnce() -> u64) -> bool {
        self.release_agreed(|ok| ok.then(start))
    }

    /// Runner side, when others must agree (the ranks of a distributed run): once every
    /// worker has opened, `agree` gets whether they all opened here and returns the start
    /// (run clock, ns), or None to call the run off.
    pub fn release_agreed(&self, agree: impl FnOnce(bool) -> Option<u64>) -> bool {
        self.opened.wait();
        let start = agree(!self.failed.load(Ordering::Acquire));
        if let Some(start_ns) = start {
            self.start_ns.store(start_ns, Ordering::Release);
        } else {
            self.failed.store(true, Ordering::Release);
        }
        self.go.wait();
        start.is_some()
    }
}

/// Timing and bounds of one worker, relative to the run's start.
#[derive(Debug, Clone, Copy)]
pub struct WorkerConfig {
    pub worker: u32,
    pub queue_depth: u32,
    /// How the target's sessions overlap operations: which kinds may stay queued.
    pub overlap: Overlap,
    /// Length of a timeline interval, ns.
    pub interval_ns: u64,
    /// Warm-up before measurement, ns: runs and goes on the timeline as warm-up, never into
    /// a summary.
    pub warmup_ns: u64,
    /// Measurement bound by time, ns: the worker's own measured window lasts this long.
    pub duration_ns: Option<u64>,
    /// The worker starts this long after the run (its workload's `start-delay`, fio's
    /// `startdelay`), ns: nothing is issued before; its warm-up, measured window (and its
    /// open loop's intended starts) come after it, so with `duration_ns` it measures from
    /// the run's start of measurement plus this delay to that plus the duration. Intervals
    /// stay on the run's time. 0: none.
    pub start_delay_ns: u64,
    /// Measurement bound by operations this worker issues.
    pub max_ops: Option<u64>,
    /// Open loop: operations per second of this worker (from the start of the run; a rate
    /// schedule changes it at [`Worker::rate_changes`]).
    pub rate_ops: Option<f64>,
    /// Open loop: an intended start already further behind than this when its turn comes is
    /// not sent but counted as skipped (pgbench's `--latency-limit` with `--rate`), ns.
    pub skip_late_ns: Option<u64>,
    /// Closed loop with a rate schedule: the worker is paused in the first phase (and the
    /// warm-up), until a change of [`Worker::rate_changes`] sets it running.
    pub starts_paused: bool,
    /// Open loop as a Poisson process (`rate-process = "poisson"`): the seed of its
    /// exponential gaps (derived from the run's seed, so recorded with it); None: even gaps.
    pub poisson_seed: Option<u64>,
    pub stop_on_error: bool,
    /// The latency-target search (fio's `latency_target`): the depth it finds, up to
    /// `queue_depth`, limits what is in flight.
    pub latency_target: Option<LatencyTarget>,
}

/// What a worker reports when it stops.
#[derive(Debug, Clone)]
pub struct WorkerOutcome {
    pub worker: u32,
    pub end_reason: EndReason,
    /// Measured operations issued.
    pub measured_ops: u64,
    /// When measurement started (run clock, ns).
    pub measure_start_ns: u64,
    /// Completion time of the last measured operation (run clock, ns).
    pub last_completion_ns: u64,
    /// Rotations that waited for the collector to hand an interval back (0 in a healthy
    /// run), and the time they waited, ns.
    pub spare_waits: u64,
    pub spare_wait_ns: u64,
    /// Measured intended starts skipped for being too late (see `WorkerConfig::skip_late_ns`).
    pub skipped_starts: u64,
    pub fatal: Option<(OpKind, OpError)>,
    /// What the session actually used (see [`Session::used`]).
    pub used: Vec<(&'static str, String)>,
    /// The latency-target search's answer and windows.
    pub latency_search: Option<LatencySearchResult>,
    /// The CPUs its thread was pinned to, as the kernel reported them once pinned.
    pub pinned_cpus: Option<storlab_model::cpus::CpuList>,
}

/// Everything a worker needs besides its session.
pub struct Worker<'a> {
    pub config: WorkerConfig,
    pub clock: Clock,
    pub control: &'a Control,
    pub gate: &'a StartGate,
    pub source: Source,
    pub recorder: Recorder,
    /// With a rate schedule, from the start of measurement: open loop, where this worker's
    /// rate changes (empty: `rate_ops` throughout); closed loop, where it starts running
    /// (an infinite rate) or pauses (0) as its group's active workers change.
    pub rate_changes: Box<[RateChange]>,
}

#[derive(Debug, Clone, Copy, Default)]
struct SlotInfo {
    start_ns: u64,
    intended_ns: u64,
    /// A YCSB insert's key number, acknowledged when it completes (u64::MAX: none).
    insert_key: u64,
    kind_index: u8,
    measured: bool,
}

const POLL_NS: u64 = 10_000_000;

impl SessionUser for Worker<'_> {
    type Output = WorkerOutcome;

    fn run<S: Session>(self, session: S) -> WorkerOutcome {
        match self.gate.wait() {
            Some(start_ns) => run_loop(session, self, start_ns),
            None => WorkerOutcome {
                worker: self.config.worker,
                end_reason: EndReason::NotStarted,
                measured_ops: 0,
                measure_start_ns: 0,
                last_completion_ns: 0,
                spare_waits: 0,
                spare_wait_ns: 0,
                skipped_starts: 0,
                fatal: None,
                used: Vec::new(),
                latency_search: None,
                pinned_cpus: None,
            },
        }
    }
}

/// Sets this thread's timer slack to 1 ns so that open-loop sleeps end on time.
fn tight_timer_slack() {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Waits until `target_ns`: sleeps most of the way, then spins the last microseconds.
/// Returns the time spent spinning, ns: CPU time that is waiting, not work.
fn wait_until(clock: &Clock, target_ns: u64) -> u64 {
    let now = clock.now_ns();
    if target_ns > now + 60_000 {
        std::thread::sleep(std::time::Duration::from_nanos(target_ns - now - 50_000));
    }
    let spin_start = clock.now_ns();
    let mut t = spin_start;
    while t < target_ns {
        std::hint::spin_loop();
        t = clock.now_ns();
    }
    t - spin_start
}

/// Operations in flight: their slots' start stamps, the free slots, the completions buffer.
struct Flight {
    slots: Vec<SlotInfo>,
    free: Vec<u32>,
    outstanding: usize,
    done: Completions,
}

/// What the loop records and how it stops, apart from the session.
struct Tally<'a> {
    recorder: Recorder,
    source: Source,
    control: &'a Control,
    stop_on_error: bool,
    /// The current interval (negative: warm-up).
    index: i64,
    issuing: bool,
    end_reason: EndReason,
    last_completion: u64,
    fatal: Option<(OpKind, OpError)>,
    search: Option<latency::LatencyRun>,
}

impl Tally<'_> {
    /// Issues no more operations (what is in flight still completes), for `why`.
    #[inline]
    fn stop(&mut self, why: EndReason) {
        self.issuing = false;
        self.end_reason = why;
    }

    /// Records one finished operation, started at `info.start_ns` and seen finished at
    /// `end_ns`. A warm-up operation goes into its warm-up interval (the timeline shows it,
    /// no summary counts it); one that finishes after measurement started is not recorded.
    #[inline(always)]
    fn settle(&mut self, info: &SlotInfo, end_ns: u64, result: Result<u32, OpError>, found: bool) {
        if info.insert_key != u64::MAX {
            self.acknowledge(info.insert_key);
        }
        if !info.measured && self.index >= 0 {
            return;
        }
        let kind = OpKind::ALL[info.kind_index as usize];
        if info.measured {
            self.last_completion = end_ns;
        }
        match result {
            Ok(bytes) => {
                self.recorder.record_ok(
                    kind,
                    end_ns - info.start_ns,
                    end_ns.saturating_sub(info.intended_ns),
                    bytes as u64,
                    found,
                );
                if info.measured && self.search.is_some() {
                    self.feed_search(kind, end_ns, end_ns - info.start_ns);
                }
            }
            Err(e) => {
                self.recorder.record_error(kind, e);
                if info.measured && self.stop_on_error && self.fatal.is_none() {
                    self.fail(kind, e);
                }
            }
        }
    }

    /// Tells the source that an insert finished. YCSB's acknowledgement window overflowing
    /// is counted as an insert error and stops the run, whatever `stop-on-error` says (YCSB
    /// throws there).
    #[inline]
    fn acknowledge(&mut self, key: u64) {
        if let Err(e) = self.source.acknowledge_insert(key) {
            self.recorder.record_error(OpKind::Insert, e);
            let first = self.fatal.unwrap_or((OpKind::Insert, e));
            self.fail(first.0, first.1);
        }
    }

    fn fail(&mut self, kind: OpKind, e: OpError) {
        self.fatal = Some((kind, e));
        self.control.stop.store(true, Ordering::Relaxed);
        self.stop(EndReason::Error);
    }
}

/// Hands queued operations to the session and records those that completed, waiting for at
/// least `min`. Returns the clock reading taken when they were seen, or the session's own
/// failure (what was in flight is lost; it is counted once).
#[inline(always)]
fn reap<S: Session>(
    s: &mut S,
    f: &mut Flight,
    t: &mut Tally<'_>,
    clock: &Clock,
    min: u32,
) -> Result<u64, ()> {
    if let Err(e) = s.complete(min, &mut f.done) {
        let kind_index = f
            .slots
            .iter()
            .find(|i| i.measured)
            .map_or(0, |i| i.kind_index);
        let kind = OpKind::ALL[kind_index as usize];
        t.recorder.record_error(kind, e);
        t.fail(kind, e);
        return Err(());
    }
    let now = clock.now_ns();
    for c in f.done.drain() {
        let info = f.slots[c.slot as usize];
        f.free.push(c.slot);
        f.outstanding -= 1;
        t.settle(&info, now, c.result, c.found);
    }
    Ok(now)
}

/// The per-operation loop: while a slot is free and an operation is due, takes the next one
/// and submits it, timed from a clock reading right before its `submit` (or from the end of
/// the operation run alone just before it, see [`Issuer::chain_ns`]). Returns Err when the
/// session failed (the loop ends).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn issue<S: Session>(
    s: &mut S,
    f: &mut Flight,
    t: &mut Tally<'_>,
    is: &mut Issuer,
    clock: &Clock,
    cfg: &WorkerConfig,
    now: &mut u64,
) -> Result<(), ()> {
    let limit = t.search.as_ref().map_or(usize::MAX, |l| l.limit());
    // Only the first operation of the call can start on the reading that ended the one before:
    // every other follows a queued one, or a reap (see [`Issuer::chain_ns`]).
    let mut chained = is.chain_ns == *now;
    is.chain_ns = NO_CHAIN;
    while let Some(&slot) = f.free.last() {
        if f.outstanding >= limit {
            break;
        }
        let measured = *now >= is.measure_start;
        if measured && is.measured_ops >= is.max_ops {
            t.stop(EndReason::Ops);
            break;
        }
        if *now < is.hold_until {
            break;
        }
        // A closed-loop schedule's paused worker waits for its next phase as running (what
        // is in flight completes meanwhile).
        if let Some(until) = is.activity.paused_until(*now) {
            is.hold_until = until;
            break;
        }
        let Some(intended) = is.next_start(*now) else {
            break;
        };
        let op = match is.held.take() {
            Some(op) => op,
            None => {
                let Some(op) = t.source.next_op() else {
                    // The source is done (a YCSB load thread's share of the records).
                    t.stop(EndReason::Ops);
                    break;
                };
                let delay_ns = think::take_delay(is, t);
                if delay_ns > 0 {
                    is.held = Some(op);
                    think::start_delay(s, f, t, is, clock, now, delay_ns)?;
                    break;
                }
                op
            }
        };
        let kind = op.kind();
        if f.outstanding > 0 && !cfg.overlap.queues(kind) {
            let all = f.outstanding as u32;
            *now = reap(s, f, t, clock, all)?;
            chained = false;
        }
        if measured {
            is.measured_ops += 1;
        }
        let insert_key = op.inserted_key().unwrap_or(u64::MAX);
        // The slot's figures are written in place once the operation is queued: built on
        // the stack with the clock reading stored last and copied over, they cost a
        // store-to-load forwarding stall per operation (perf: a fifth of the loop's time).
        let info = |start_ns| SlotInfo {
            start_ns,
            intended_ns: intended,
            insert_key,
            kind_index: kind as u8,
            measured,
        };
        let start_ns = if chained { *now } else { clock.now_ns() };
        chained = false;
        match s.submit(slot, op) {
            Ok(Submitted::Queued) => {
                f.free.pop();
                f.slots[slot as usize] = info(start_ns);
                f.outstanding += 1;
            }
            Ok(Submitted::Done { result, found }) => {
                *now = clock.now_ns();
                is.chain_ns = *now;
                t.settle(&info(start_ns), *now, result, found);
                // Back to the top: interval boundaries, stop flags and the end are checked
                // between operations run one at a time.
                break;
            }
            Err(e) => {
                if let Some(k) = op.inserted_key() {
                    t.acknowledge(k);
                }
                if measured || t.index < 0 {
                    t.recorder.record_error(kind, e);
                }
                if cfg.stop_on_error {
                    t.fail(kind, e);
                }
                break;
            }
        }
    }
    Ok(())
}

/// The loop itself. `start_ns` is when the run (warm-up first) begins on the run clock.
///
/// Each operation is timed from a clock reading taken right before its own `submit`: one the
/// session executes on the spot ([`Submitted::Done`]) is timed alone, to a reading right
/// after; a queued one, to the reading taken when its completion is reaped. Operations run
/// alone back to back share the reading between them: the one that ends an operation starts
/// the next (whose time then also holds its own draw and the loop's checks), so each is
/// still timed from after the one before it ended, with one reading per operation. Before an
/// operation that the target runs alone while others are queued (a read on a target that
/// batches only inserts), what is queued is reaped first, so neither waits for the other.
pub fn run_loop<S: Session>(mut s: S, w: Worker<'_>, start_ns: u64) -> WorkerOutcome {
    let Worker {
        config: cfg,
        clock,
        control,
        source,
        recorder,
        rate_changes,
        ..
    } = w;
    if cfg.rate_ops.is_some() {
        tight_timer_slack();
    }
    let measure_start = start_ns.saturating_add(cfg.warmup_ns);
    let timing = Timing {
        start_ns,
        measure_start,
        interval: cfg.interval_ns.max(1),
    };
    // Its bounds, after a start delay if any, are set once here (see `Issuer::new`).
    let mut is = Issuer::new(&cfg, timing, rate_changes, source.may_delay());
    let (open, measure_end) = (is.pacer.is_some(), is.measure_end);
    let mut f = Flight::new(cfg.queue_depth.max(1) as usize);

    // Workers are released a little before the start: wait for it, so that the clock never
    // reads earlier than the start (operations would otherwise count as warm-up, or their
    // times go negative).
    wait_until(&clock, start_ns);
    let mut now = clock.now_ns().max(start_ns);
    let mut t = Tally {
        recorder,
        source,
        control,
        stop_on_error: cfg.stop_on_error,
        index: timing.index_at(now),
        issuing: true,
        end_reason: EndReason::Duration,
        last_completion: measure_start,
        fatal: None,
        search: latency::LatencyRun::for_config(&cfg, is.measure_start),
    };
    let mut next_boundary = timing.boundary_after(t.index);
    let mut next_poll = now + POLL_NS;
    let mut cpu_mark = thread_cpu_ns();
    // Time spent spinning while waiting for the next intended start (not work).
    let mut spin_ns = 0u64;
    let mut published_ops = 0u64;

    loop {
        if now >= next_boundary {
            let spent = (cpu_mark, spin_ns);
            let ok;
            (t.index, next_boundary, cpu_mark, ok) =
                next_interval(&mut t.recorder, t.index, timing, now, next_boundary, spent);
            if !ok {
                t.stop(EndReason::Interrupted);
            }
            spin_ns = 0;
            // The rotation's cost is nobody's service time.
            now = clock.now_ns();
        }
        if now >= next_poll {
            next_poll = now + POLL_NS;
            let counts = (is.measured_ops, f.outstanding);
            let fatal = t.fatal.is_some();
            if let Some(end) = poll(control, &mut published_ops, counts, t.issuing, fatal) {
                t.stop(end);
            }
        }
        if t.issuing && measure_end.is_some_and(|end| now >= end) {
            t.stop(EndReason::Duration);
        }
        t.check_search(now, f.outstanding);
        if t.issuing && issue(&mut s, &mut f, &mut t, &mut is, &clock, &cfg, &mut now).is_err() {
            break;
        }

        if f.outstanding == 0 {
            if !t.issuing {
                break;
            }
            let holding = t.issuing && now < is.hold_until;
            if open || holding {
                let until = is.wake_at(holding, next_boundary, next_poll);
                spin_ns += think::wait(&clock, &is, now, until);
                now = clock.now_ns();
            } else if is.chain_ns != now {
                now = clock.now_ns();
            }
            continue;
        }

        // Open loop, or a burst's delay, with a free slot and the next start not yet due: do
        // not block.
        let holding = now < is.hold_until;
        let waiting_to_issue = t.issuing && (open || holding) && !f.free.is_empty();
        let min = if waiting_to_issue { 0 } else { 1 };
        let before = f.outstanding;
        match reap(&mut s, &mut f, &mut t, &clock, min) {
            Ok(at) => now = at,
            Err(()) => break,
        }
        if before == f.outstanding && waiting_to_issue {
            let until = is.wake_at(holding, next_boundary, next_poll);
            // Poll completions at least every 20 µs while waiting for the next start.
            spin_ns += wait_until(&clock, until.min(now + 20_000));
            now = clock.now_ns();
        }
    }

    let counts = Counts {
        measured_ops: is.measured_ops,
        skipped_starts: is.skipped_starts,
        published_ops,
        cpu_mark,
        spin_ns,
    };
    finish(s, t, &cfg, timing, now, counts, f.outstanding)
}

mod clock;
mod edges;
mod issuer;
mod latency;
mod think;

#[cfg(test)]
mod burst_tests;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod latency_tests;
