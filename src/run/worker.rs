//! The worker loop: one per worker thread, generic over the target's session type.
//!
//! Closed loop: every free slot is filled at once, so `queue-depth` operations stay in flight
//! and a completion issues the next. Open loop: operations start on a schedule of intended
//! start times (a constant gap per worker); an operation that starts late, because all slots
//! were busy or the worker was stalled, carries its lateness in the latency from intended start.
//!
//! The loop reads the clock once per batch of completions, not per operation, and touches no
//! shared state per operation: stop flags are polled every few milliseconds, and figures go to
//! the recorder, whose intervals rotate on time boundaries.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use crate::record::{OpError, OpKind, Recorder, thread_cpu_ns};
use crate::targets::{Completions, Session, SessionUser};
use crate::workload::Source;

/// The run's monotonic clock: nanoseconds since a base instant shared by all workers.
///
/// Read through `quanta` (the CPU's invariant time-stamp counter, calibrated against the
/// OS's monotonic clock, with that clock as the fallback where the counter is not reliable):
/// about 11 ns a reading here against 32 ns for `Instant::now().duration_since`, and the
/// worker reads the clock twice per operation.
#[derive(Debug, Clone)]
pub struct Clock {
    clock: quanta::Clock,
    base_raw: u64,
}

impl Clock {
    pub fn new() -> Clock {
        let clock = quanta::Clock::new();
        let base_raw = clock.raw();
        Clock { clock, base_raw }
    }

    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.clock.delta_as_nanos(self.base_raw, self.clock.raw())
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

/// Flags the workers poll.
#[derive(Debug, Default)]
pub struct Control {
    /// Stop issuing, finish what is in flight (Ctrl-C, another worker's fatal error).
    pub stop: AtomicBool,
    /// Set by the signal handler: the user interrupted.
    pub interrupted: Arc<AtomicBool>,
}

impl Control {
    pub fn new(interrupted: Arc<AtomicBool>) -> Control {
        Control {
            stop: AtomicBool::new(false),
            interrupted,
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
        self.opened.wait();
        let ok = !self.failed.load(Ordering::Acquire);
        if ok {
            self.start_ns.store(start(), Ordering::Release);
        }
        self.go.wait();
        ok
    }
}

/// Timing and bounds of one worker, relative to the run's start.
#[derive(Debug, Clone, Copy)]
pub struct WorkerConfig {
    pub worker: u32,
    pub queue_depth: u32,
    /// Length of a timeline interval, ns.
    pub interval_ns: u64,
    /// Warm-up before measurement, ns: runs, not recorded.
    pub warmup_ns: u64,
    /// Measurement bound by time, ns.
    pub duration_ns: Option<u64>,
    /// Measurement bound by operations this worker issues.
    pub max_ops: Option<u64>,
    /// Open loop: operations per second of this worker.
    pub rate_ops: Option<f64>,
    pub stop_on_error: bool,
}

/// Why a worker stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndReason {
    Duration,
    Ops,
    Interrupted,
    Error,
    /// The run was called off before it started.
    NotStarted,
}

/// What a worker reports when it stops.
#[derive(Debug, Clone, Copy)]
pub struct WorkerOutcome {
    pub worker: u32,
    pub end_reason: EndReason,
    /// Measured operations issued.
    pub measured_ops: u64,
    /// When measurement started (run clock, ns).
    pub measure_start_ns: u64,
    /// Completion time of the last measured operation (run clock, ns).
    pub last_completion_ns: u64,
    /// Intervals the recorder had to allocate (0 in a healthy run).
    pub spare_misses: u64,
    pub fatal: Option<(OpKind, OpError)>,
}

/// Everything a worker needs besides its session.
pub struct Worker<'a> {
    pub config: WorkerConfig,
    pub clock: Clock,
    pub control: &'a Control,
    pub gate: &'a StartGate,
    pub source: Source,
    pub recorder: Recorder,
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
                spare_misses: 0,
                fatal: None,
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

/// The loop itself. `start_ns` is when the run (warm-up first) begins on the run clock.
pub fn run_loop<S: Session>(mut s: S, w: Worker<'_>, start_ns: u64) -> WorkerOutcome {
    let Worker {
        config: cfg,
        clock,
        control,
        mut source,
        mut recorder,
        ..
    } = w;
    if cfg.rate_ops.is_some() {
        tight_timer_slack();
    }
    let qd = cfg.queue_depth as usize;
    let interval = cfg.interval_ns.max(1);
    let measure_start = start_ns + cfg.warmup_ns;
    let measure_end = cfg.duration_ns.map(|d| measure_start + d);
    let max_ops = cfg.max_ops.unwrap_or(u64::MAX);
    let gap_ns = cfg.rate_ops.map(|r| 1e9 / r);

    let mut free: Vec<u32> = (0..qd as u32).rev().collect();
    let mut slots = vec![SlotInfo::default(); qd];
    let mut done = Completions::with_capacity(qd);

    // Interval k covers [measure_start + k*interval, measure_start + (k+1)*interval).
    let index_at = |t: u64| -> i64 {
        if t >= measure_start {
            ((t - measure_start) / interval) as i64
        } else {
            -(((measure_start - t).div_ceil(interval)) as i64)
        }
    };
    let boundary_after = |k: i64| -> u64 {
        let b = measure_start as i128 + (k as i128 + 1) * interval as i128;
        b.max(0) as u64
    };

    // Workers are released a little before the start: wait for it, so that the clock never
    // reads earlier than the start (operations would otherwise count as warm-up, or their
    // times go negative).
    wait_until(&clock, start_ns);
    let mut now = clock.now_ns().max(start_ns);
    let mut index = index_at(now);
    let mut next_boundary = boundary_after(index);
    let mut next_poll = now + POLL_NS;
    let mut cpu_mark = thread_cpu_ns();
    // Time spent spinning while waiting for the next intended start (not work).
    let mut spin_ns = 0u64;
    let mut next_intended = start_ns as f64;
    let mut issuing = true;
    let mut end_reason = EndReason::Duration;
    let mut measured_ops = 0u64;
    let mut outstanding = 0usize;
    let mut last_completion = measure_start;
    let mut fatal = None;

    loop {
        if now >= next_boundary {
            let cpu = thread_cpu_ns();
            let next = index_at(now);
            let busy = (cpu - cpu_mark).saturating_sub(spin_ns);
            spin_ns = 0;
            if !recorder.rotate(index, now, busy, false, next) {
                issuing = false;
                end_reason = EndReason::Interrupted;
            }
            cpu_mark = cpu;
            index = next;
            next_boundary = boundary_after(index);
        }
        if now >= next_poll {
            next_poll = now + POLL_NS;
            if issuing
                && (control.stop.load(Ordering::Relaxed)
                    || control.interrupted.load(Ordering::Relaxed))
            {
                issuing = false;
                end_reason = if fatal.is_some() {
                    EndReason::Error
                } else {
                    EndReason::Interrupted
                };
            }
        }
        if issuing && measure_end.is_some_and(|end| now >= end) {
            issuing = false;
            end_reason = EndReason::Duration;
        }

        if issuing {
            while let Some(&slot) = free.last() {
                let measured = now >= measure_start;
                if measured && measured_ops >= max_ops {
                    issuing = false;
                    end_reason = EndReason::Ops;
                    break;
                }
                let intended = match gap_ns {
                    Some(gap) => {
                        if next_intended > now as f64 {
                            break;
                        }
                        let t = next_intended as u64;
                        next_intended += gap;
                        t
                    }
                    None => now,
                };
                let Some(op) = source.next_op() else {
                    // The source is done (a YCSB load thread's share of the records).
                    issuing = false;
                    end_reason = EndReason::Ops;
                    break;
                };
                if measured {
                    measured_ops += 1;
                }
                match s.submit(slot, op) {
                    Ok(()) => {
                        free.pop();
                        slots[slot as usize] = SlotInfo {
                            start_ns: now,
                            intended_ns: intended,
                            insert_key: op.inserted_key().unwrap_or(u64::MAX),
                            kind_index: op.kind() as u8,
                            measured,
                        };
                        outstanding += 1;
                    }
                    Err(e) => {
                        if let Some(k) = op.inserted_key()
                            && let Err(ack) = source.acknowledge_insert(k)
                        {
                            // YCSB's insert window overflowed: counted, and the run stops.
                            recorder.record_error(OpKind::Insert, ack);
                            fatal = fatal.or(Some((OpKind::Insert, ack)));
                            control.stop.store(true, Ordering::Relaxed);
                            issuing = false;
                            end_reason = EndReason::Error;
                        }
                        if measured {
                            recorder.record_error(op.kind(), e);
                        }
                        if cfg.stop_on_error {
                            fatal = Some((op.kind(), e));
                            control.stop.store(true, Ordering::Relaxed);
                            issuing = false;
                            end_reason = EndReason::Error;
                        }
                        break;
                    }
                }
            }
        }

        if outstanding == 0 {
            if !issuing {
                break;
            }
            if gap_ns.is_some() {
                let mut until = (next_intended as u64).min(next_boundary).min(next_poll);
                if let Some(end) = measure_end {
                    until = until.min(end);
                }
                spin_ns += wait_until(&clock, until);
            }
            now = clock.now_ns();
            continue;
        }

        // Open loop with a free slot and the next start not yet due: do not block.
        let waiting_to_issue = issuing && gap_ns.is_some() && !free.is_empty();
        let min = if waiting_to_issue { 0 } else { 1 };
        if let Err(e) = s.complete(min, &mut done) {
            // The session itself failed: what was in flight is lost; count it once and stop.
            let kind_index = slots
                .iter()
                .find(|i| i.measured)
                .map_or(0, |i| i.kind_index);
            let kind = OpKind::ALL[kind_index as usize];
            recorder.record_error(kind, e);
            fatal = Some((kind, e));
            control.stop.store(true, Ordering::Relaxed);
            end_reason = EndReason::Error;
            break;
        }
        now = clock.now_ns();
        let reaped = done.len();
        for c in done.drain() {
            let info = slots[c.slot as usize];
            free.push(c.slot);
            outstanding -= 1;
            if info.insert_key != u64::MAX
                && let Err(ack) = source.acknowledge_insert(info.insert_key)
            {
                // YCSB's insert window overflowed: counted, and the run stops.
                recorder.record_error(OpKind::Insert, ack);
                fatal = fatal.or(Some((OpKind::Insert, ack)));
                control.stop.store(true, Ordering::Relaxed);
                issuing = false;
                end_reason = EndReason::Error;
            }
            if !info.measured {
                continue;
            }
            let kind = OpKind::ALL[info.kind_index as usize];
            last_completion = now;
            match c.result {
                Ok(bytes) => recorder.record_ok(
                    kind,
                    now - info.start_ns,
                    now.saturating_sub(info.intended_ns),
                    bytes as u64,
                    c.found,
                ),
                Err(e) => {
                    recorder.record_error(kind, e);
                    if cfg.stop_on_error && fatal.is_none() {
                        fatal = Some((kind, e));
                        control.stop.store(true, Ordering::Relaxed);
                        issuing = false;
                        end_reason = EndReason::Error;
                    }
                }
            }
        }
        if reaped == 0 && waiting_to_issue {
            let mut until = (next_intended as u64).min(next_boundary).min(next_poll);
            if let Some(end) = measure_end {
                until = until.min(end);
            }
            // Poll completions at least every 20 µs while waiting for the next start.
            spin_ns += wait_until(&clock, until.min(now + 20_000));
            now = clock.now_ns();
        }
    }

    let cpu = thread_cpu_ns();
    recorder.rotate(
        index,
        now,
        (cpu - cpu_mark).saturating_sub(spin_ns),
        true,
        index + 1,
    );
    WorkerOutcome {
        worker: cfg.worker,
        end_reason,
        measured_ops,
        measure_start_ns: measure_start,
        last_completion_ns: last_completion,
        spare_misses: recorder.spare_misses,
        fatal,
    }
}
