//! The worker loop: one per worker thread, generic over the target's session type.
//!
//! Closed loop: every free slot is filled at once, so `queue-depth` operations stay in flight
//! and a completion issues the next. Open loop: operations start on a schedule of intended
//! start times laid out by the worker's [`Pacer`](crate::pacer::Pacer) (a constant gap, or a rate that changes at
//! the phases of a step's rate schedule); an operation that starts late, because all slots
//! were busy or the worker was stalled, carries its lateness in the latency from intended start.
//!
//! An IOmeter burst's delay (see [`storlab_workload::block::access_spec`]) holds the operation that
//! begins the burst until the delay has passed: meanwhile nothing is issued and what is in
//! flight completes and is recorded, as IOmeter's workers do. A start delay (fio's
//! `startdelay`) holds the worker's first operation the same way, and moves its measured
//! window after it (decided once per worker, in `Issuer::new`).
//!
//! The loop reads the clock once per operation (right before its submit; once per batch for
//! operations that all start in the session's `complete`) and once per batch of completions, and touches no shared state per operation: stop flags are polled every few
//! milliseconds, and figures go to the recorder, whose intervals rotate on time boundaries.
//! The loop itself is one value, `op_loop::OpLoop`, its steps the methods; this file holds
//! what the rest of the engine hands a worker and gets back.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

pub use clock::Clock;
use op_loop::OpLoop;
use storlab_model::latency_target::{LatencySearchResult, LatencyTarget};
use storlab_model::rate::RateChange;
use storlab_model::{OpError, OpKind};
use storlab_record::{EndReason, Recorder};
use storlab_targets::{Overlap, Session, SessionUser};
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
    /// fio's flow control: the worker's place among the workers of its flow id.
    pub flow: Option<flow::FlowGate>,
}

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

/// Waits until `target_ns`: sleeps most of the way, then spins the last microseconds.
/// Returns the time spent spinning, ns: CPU time that is waiting, not work.
fn wait_until(clock: &Clock, target_ns: u64) -> u64 {
    let now = clock.now_ns();
    if target_ns > now + 60_000 {
        std::thread::sleep(std::time::Duration::from_nanos(target_ns - now - 50_000));
    }
    spin_until(clock, target_ns)
}

/// Spins until `target_ns` (also fio's `usec_spin`); returns the time spent spinning, ns.
fn spin_until(clock: &Clock, target_ns: u64) -> u64 {
    let start = clock.now_ns();
    let mut t = start;
    while t < target_ns {
        std::hint::spin_loop();
        t = clock.now_ns();
    }
    t - start
}

/// The loop itself (see `op_loop`), picked once per worker: the plain loop for a worker
/// that needs none of its rarer features, compiled without their checks
/// (`op_loop::is_plain`), else the whole one. `start_ns` is when the run (warm-up first)
/// begins on the run clock.
pub fn run_loop<S: Session>(s: S, w: Worker<'_>, start_ns: u64) -> WorkerOutcome {
    if op_loop::is_plain(&w) {
        OpLoop::<S, true>::new(s, w, start_ns).run()
    } else {
        OpLoop::<S, false>::new(s, w, start_ns).run()
    }
}

mod clock;
pub mod flow;
mod issuer;
mod latency;
mod op_loop;

#[cfg(test)]
mod burst_tests;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod latency_tests;

#[cfg(test)]
mod think_tests;
