//! The worker loop's edges, apart from its per-operation path: what it sets up before the
//! first operation, what it does every interval or every few milliseconds (rotating the
//! recorder's interval, polling the stop flags), and its end.

use std::sync::atomic::Ordering;

use super::{Control, EndReason, Flight, SlotInfo, Tally, WorkerConfig, WorkerOutcome};
use storlab_record::{Recorder, thread_cpu_ns};
use storlab_targets::{Completions, Session};

/// Adds the measured operations completed since the last call to the run's count: those
/// issued in measurement less those still in flight.
#[inline]
pub(super) fn publish_completed(
    control: &Control,
    published: &mut u64,
    issued: u64,
    in_flight: usize,
) {
    let completed = issued.saturating_sub(in_flight as u64);
    if completed > *published {
        control
            .completed_ops
            .fetch_add(completed - *published, Ordering::Relaxed);
        *published = completed;
    }
}

/// Where a worker's intervals fall: interval k covers
/// [measure_start + k*interval, measure_start + (k+1)*interval); the warm-up's are negative.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timing {
    /// When the run (warm-up first) begins on the run clock.
    pub(super) start_ns: u64,
    pub(super) measure_start: u64,
    pub(super) interval: u64,
}

impl Timing {
    /// The interval holding `t`.
    #[inline]
    pub(super) fn index_at(self, t: u64) -> i64 {
        if t >= self.measure_start {
            ((t - self.measure_start) / self.interval) as i64
        } else {
            -(((self.measure_start - t).div_ceil(self.interval)) as i64)
        }
    }

    /// Where interval k ends.
    #[inline]
    pub(super) fn boundary_after(self, k: i64) -> u64 {
        let b = self.measure_start as i128 + (k as i128 + 1) * self.interval as i128;
        b.clamp(0, u64::MAX as i128) as u64
    }

    /// Where interval k starts for this worker: its boundary, or the run's start.
    #[inline]
    pub(super) fn start_of(self, k: i64) -> u64 {
        let b = self.measure_start as i128 + k as i128 * self.interval as i128;
        b.clamp(self.start_ns as i128, u64::MAX as i128) as u64
    }
}

impl Flight {
    /// `qd` free slots, nothing in flight.
    #[cold]
    pub(super) fn new(qd: usize) -> Flight {
        Flight {
            slots: vec![SlotInfo::default(); qd],
            free: (0..qd as u32).rev().collect(),
            outstanding: 0,
            done: Completions::with_capacity(qd),
        }
    }
}

/// At an interval boundary: hands interval `index` to the recorder (with the thread's CPU
/// time since `cpu_mark` less `spin_ns` spent waiting) and opens the one `now` is in.
/// Returns the new interval, its end, the new CPU mark, and false if the recorder says stop.
#[cold]
pub(super) fn next_interval(
    recorder: &mut Recorder,
    index: i64,
    timing: Timing,
    now: u64,
    next_boundary: u64,
    (cpu_mark, spin_ns): (u64, u64),
) -> (i64, u64, u64, bool) {
    let cpu = thread_cpu_ns();
    let next = timing.index_at(now);
    let busy = (cpu - cpu_mark).saturating_sub(spin_ns);
    let (from, to) = (timing.start_of(index), next_boundary);
    let ok = recorder.rotate(index, from, to, busy, false, next);
    (next, timing.boundary_after(next), cpu, ok)
}

/// Every few milliseconds: publishes the measured operations completed (adding to
/// `published_ops`) and, while `issuing`, says why to stop: the stonewall, steady state, a
/// stop (an error when `fatal`) or an interruption.
#[cold]
pub(super) fn poll(
    control: &Control,
    published_ops: &mut u64,
    (measured_ops, in_flight): (u64, usize),
    issuing: bool,
    fatal: bool,
) -> Option<EndReason> {
    publish_completed(control, published_ops, measured_ops, in_flight);
    if !issuing {
        None
    } else if control.stonewall.load(Ordering::Relaxed) {
        Some(EndReason::Ops)
    } else if control.steady_state.load(Ordering::Relaxed) {
        Some(EndReason::SteadyState)
    } else if control.stop.load(Ordering::Relaxed) || control.interrupted.load(Ordering::Relaxed) {
        Some(if fatal {
            EndReason::Error
        } else {
            EndReason::Interrupted
        })
    } else {
        None
    }
}

/// What the loop counted, for its outcome.
pub(super) struct Counts {
    pub(super) measured_ops: u64,
    pub(super) skipped_starts: u64,
    pub(super) published_ops: u64,
    pub(super) cpu_mark: u64,
    pub(super) spin_ns: u64,
}

/// The end of the loop: publishes the last completions, hands the last interval to the
/// recorder, and reports how the worker ended.
#[cold]
pub(super) fn finish<S: Session>(
    s: S,
    t: Tally<'_>,
    cfg: &WorkerConfig,
    timing: Timing,
    now: u64,
    counts: Counts,
    in_flight: usize,
) -> WorkerOutcome {
    let Counts {
        measured_ops,
        skipped_starts,
        mut published_ops,
        cpu_mark,
        spin_ns,
    } = counts;
    publish_completed(t.control, &mut published_ops, measured_ops, in_flight);
    let mut t = t;
    let cpu = thread_cpu_ns();
    let index = t.index;
    t.recorder.rotate(
        index,
        timing.start_of(index).min(now),
        now,
        (cpu - cpu_mark).saturating_sub(spin_ns),
        true,
        index + 1,
    );
    WorkerOutcome {
        worker: cfg.worker,
        end_reason: t.end_reason,
        measured_ops,
        measure_start_ns: timing.measure_start,
        last_completion_ns: t.last_completion,
        spare_waits: t.recorder.spare_waits,
        spare_wait_ns: t.recorder.spare_wait_ns,
        skipped_starts,
        fatal: t.fatal,
        used: s.used(),
        latency_search: t.search.as_ref().map(|l| l.result(cfg.worker)),
        pinned_cpus: None,
    }
}
