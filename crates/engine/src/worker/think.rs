//! A delay the source asked for before its next operation: an IOmeter burst's delay (held at
//! once, while what is in flight completes), or fio's think time
//! ([`storlab_workload::pattern`]): what is in flight completes first (fio's `io_u_quiesce`),
//! then the worker waits, spinning its first `thinktime_spin`; with `rate_ignore_thinktime`
//! an open loop's starts that fall in the wait are dropped, not caught up. Reached only when
//! a source gives a delay: a workload without one never comes here. (fio's `startdelay` is
//! no source's delay: the worker's bounds start after it, see `Issuer::new`.)

use super::{Flight, Issuer, Tally, reap};
use crate::worker::Clock;
use storlab_targets::Session;

/// The delay the source gives before the operation it just gave, ns: asked only of a
/// source that may give one (decided once per worker), 0 for the others at the cost of one
/// predictable branch.
#[inline(always)]
pub(super) fn take_delay(is: &Issuer, t: &mut Tally<'_>) -> u64 {
    if is.source_delays {
        t.source.take_delay_ns()
    } else {
        0
    }
}

/// Holds the next operation for `delay_ns` (see the module's text); Err when the session
/// failed while draining.
// Inlined: passing the loop's state (`now`, the issuer) to a function out of line makes it
// live in memory for the whole loop (cachegrind: 13 instructions per operation more).
#[inline(always)]
pub(super) fn start_delay<S: Session>(
    s: &mut S,
    f: &mut Flight,
    t: &mut Tally<'_>,
    is: &mut Issuer,
    clock: &Clock,
    now: &mut u64,
    delay_ns: u64,
) -> Result<(), ()> {
    let rule = t.source.delay_rule();
    if rule.drain && f.outstanding > 0 {
        let all = f.outstanding as u32;
        *now = reap(s, f, t, clock, all)?;
    }
    is.hold_until = now.saturating_add(delay_ns);
    is.spin_until = now.saturating_add(rule.spin_ns.min(delay_ns));
    if rule.skip_rate
        && let Some(p) = &mut is.pacer
    {
        skip_starts(p, is.hold_until);
    }
    Ok(())
}

/// Drops the intended starts before `until_ns` (fio's `rate_ignore_thinktime`).
#[cold]
#[inline(never)]
fn skip_starts(p: &mut crate::pacer::Pacer, until_ns: u64) {
    let until = until_ns as f64;
    while p.next_ns() < until {
        p.take();
    }
}

/// Waits from `now_ns` until `until_ns` with nothing to do (see [`super::wait_until`]),
/// spinning instead while a think time's spin lasts; returns the time spent spinning, ns.
#[inline(always)]
pub(super) fn wait(clock: &Clock, is: &Issuer, now_ns: u64, until_ns: u64) -> u64 {
    if now_ns < is.spin_until {
        spin_until(clock, until_ns.min(is.spin_until))
    } else {
        super::wait_until(clock, until_ns)
    }
}

/// Spins until `target_ns` (fio's `usec_spin`); returns the time spent spinning, ns.
fn spin_until(clock: &Clock, target_ns: u64) -> u64 {
    let start = clock.now_ns();
    let mut t = start;
    while t < target_ns {
        std::hint::spin_loop();
        t = clock.now_ns();
    }
    t - start
}

#[cfg(test)]
#[path = "think_tests.rs"]
mod tests;
