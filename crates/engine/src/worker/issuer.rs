//! What decides when the worker's next operation starts and which it is: the bounds of
//! measurement (after a start delay, if any), the open loop's intended starts, a closed-loop
//! schedule's pauses, a burst's delay, and the clock reading an operation run alone hands to
//! the next.

use super::WorkerConfig;
use crate::pacer::{Activity, Pacer};
use storlab_model::rate::RateChange;
use storlab_workload::block::pattern::DelayRule;

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

/// What decides when the next operation starts and which it is: the bounds of measurement,
/// the open loop's intended starts, a closed-loop schedule's pauses and a burst's delay.
pub(super) struct Issuer {
    pub(super) pacer: Option<Pacer>,
    pub(super) activity: Activity,
    /// This worker's measured window (after its start delay, if any), run clock, ns.
    pub(super) measure_start: u64,
    pub(super) measure_end: Option<u64>,
    pub(super) max_ops: u64,
    /// Open loop: an intended start further behind than this is skipped, ns.
    pub(super) skip_late: Option<f64>,
    /// An operation held back by its burst's delay, and until when.
    pub(super) held: Option<storlab_model::Op>,
    pub(super) hold_until: u64,
    /// fio's `thinktime_spin`: waits before this spin instead of sleeping.
    pub(super) spin_until: u64,
    /// The source may give delays: decided once, the others are never asked.
    pub(super) source_delays: bool,
    pub(super) measured_ops: u64,
    pub(super) skipped_starts: u64,
    /// The clock reading that ended the last operation run alone
    /// ([`Submitted::Done`](storlab_targets::Submitted::Done)), or [`NO_CHAIN`]. While the loop's `now` is still that reading (nothing has read the clock
    /// since: no wait, reap or interval rotation), it starts the next operation: operations
    /// run one after another are each timed from the end of the one before, with one
    /// reading each, and their times add up to the worker's.
    pub(super) chain_ns: u64,
    /// fio's flow control: the worker's place in its flow.
    pub(super) flow: Option<super::flow::FlowGate>,
}

/// No reading to chain from: the next operation reads its own start.
pub(super) const NO_CHAIN: u64 = u64::MAX;

impl Issuer {
    /// Open loop: the intended starts, laid out without a clock reading or an allocation;
    /// closed loop with a schedule: when the worker runs and when it is paused.
    #[cold]
    pub(super) fn new(
        cfg: &WorkerConfig,
        timing: Timing,
        rate_changes: Box<[RateChange]>,
        source_delays: bool,
        flow: Option<super::flow::FlowGate>,
    ) -> Issuer {
        let (start_ns, measure_start) = (timing.start_ns, timing.measure_start);
        // A start delay moves the worker's own start, warm-up and measured window after it
        // (a rate schedule's phases stay on the run's time).
        let delay = cfg.start_delay_ns;
        let own_measure_start = measure_start.saturating_add(delay);
        let (pacer, activity) = match cfg.rate_ops {
            Some(r) => (
                Some({
                    let p = Pacer::new(
                        start_ns.saturating_add(delay),
                        r,
                        rate_changes,
                        measure_start,
                    );
                    match cfg.poisson_seed {
                        Some(seed) => p.poisson(seed),
                        None => p,
                    }
                }),
                Activity::always(),
            ),
            None if cfg.starts_paused || !rate_changes.is_empty() => (
                None,
                Activity::new(!cfg.starts_paused, rate_changes, measure_start),
            ),
            None => (None, Activity::always()),
        };
        Issuer {
            pacer,
            activity,
            measure_start: own_measure_start,
            measure_end: cfg.duration_ns.map(|d| own_measure_start.saturating_add(d)),
            max_ops: cfg.max_ops.unwrap_or(u64::MAX),
            skip_late: cfg.skip_late_ns.map(|n| n as f64),
            held: None,
            // The delay holds the first operation, as a burst's delay does.
            hold_until: if delay > 0 {
                start_ns.saturating_add(delay)
            } else {
                0
            },
            spin_until: 0,
            source_delays,
            measured_ops: 0,
            skipped_starts: 0,
            chain_ns: NO_CHAIN,
            flow,
        }
    }

    /// The intended start of the next operation if it is due at `now`: `now` itself in a
    /// closed loop, the open loop's next start otherwise (None: not yet due).
    #[inline(always)]
    pub(super) fn next_start(&mut self, now: u64) -> Option<u64> {
        let Some(p) = &mut self.pacer else {
            return Some(now);
        };
        if p.next_ns() > now as f64 {
            return None;
        }
        // Starts already further behind than the latency limit are skipped (pgbench's
        // --latency-limit): after a stall the open loop resumes at its rate instead of
        // sending the backlog at once.
        if let Some(limit) = self.skip_late {
            while now as f64 - p.next_ns() > limit {
                let at = p.take();
                if at >= self.measure_start && self.measure_end.is_none_or(|e| at < e) {
                    self.skipped_starts += 1;
                }
            }
            if p.next_ns() > now as f64 {
                return None;
            }
        }
        Some(p.take())
    }

    /// Holds the next operation from `now` for `delay_ns` under `rule`: spinning its first
    /// part, and in an open loop dropping the starts that fall in it if the rule says so
    /// (fio's `rate_ignore_thinktime`).
    #[inline]
    pub(super) fn hold(&mut self, now: u64, delay_ns: u64, rule: DelayRule) {
        self.hold_until = now.saturating_add(delay_ns);
        self.spin_until = now.saturating_add(rule.spin_ns.min(delay_ns));
        if rule.skip_rate
            && let Some(p) = &mut self.pacer
        {
            skip_starts(p, self.hold_until);
        }
    }

    /// When to wake while waiting to issue: at the end of a burst's delay (`holding`) or the
    /// next intended start, no later than the interval's end, the next poll or the end of
    /// measurement.
    #[inline]
    pub(super) fn wake_at(&self, holding: bool, next_boundary: u64, next_poll: u64) -> u64 {
        let next_start = if holding {
            self.hold_until
        } else {
            self.pacer.as_ref().map_or(u64::MAX, |p| p.next_ns() as u64)
        };
        let mut until = next_start.min(next_boundary).min(next_poll);
        if let Some(end) = self.measure_end {
            until = until.min(end);
        }
        until
    }
}

/// Drops the intended starts before `until_ns` (fio's `rate_ignore_thinktime`).
#[cold]
#[inline(never)]
fn skip_starts(p: &mut Pacer, until_ns: u64) {
    let until = until_ns as f64;
    while p.next_ns() < until {
        p.take();
    }
}
