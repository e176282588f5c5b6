//! fio's `rate_min` / `rate_iops_min` checked on the measured timeline after the run: every
//! `rate_cycle` window after fio's 2-second settle, each direction the job does and bounds
//! must have kept its least rate; a window below it fails the job with fio's message
//! (`NAME: rate_min=NB/s not met, got MB/s`, `NAME: rate_iops_min=N not met, got M IOPS`).
//! fio stops the job at that window; storlab has measured the run to its end and then fails.
//! Clones sharing one file are one storlab target: each is held to the target's rate over
//! the clones (their mean).

use storlab_results::stored::StoredRun;
use storlab_study::fio::{FioPlan, rates};

/// fio's settle before the first check (backend.c `__check_min_rate`), seconds.
const SETTLE_S: f64 = 2.0;

/// One direction's measured rate per interval of a target, bytes/s or I/Os per second, from
/// interval 0 to `intervals` (an interval without a row did nothing).
fn series(run: &StoredRun, target: &str, op: &str, iops: bool, intervals: usize) -> Vec<f64> {
    let mut v = vec![0.0; intervals];
    for r in run
        .timeline
        .rows
        .iter()
        .filter(|r| r.measured && r.target == target && r.op == op && r.second >= 0)
    {
        if let Some(x) = v.get_mut(r.second as usize) {
            *x = if iops { r.rate_ops } else { r.rate_bytes };
        }
    }
    v
}

/// The intervals of `series` in which `target` ran: from its own start (after a
/// `startdelay`) to its own end when it ended before its group did. fio's settle and cycles
/// count from the job's own start.
fn own_intervals<'a>(run: &StoredRun, target: &str, series: &'a [f64]) -> &'a [f64] {
    let Some(t) = run.summary.targets.iter().find(|t| t.name == target) else {
        return series;
    };
    let own = t.own_intervals(run.summary.measured_seconds, run.interval_seconds());
    let end = usize::try_from(own.end)
        .unwrap_or(usize::MAX)
        .min(series.len());
    let first = usize::try_from(own.start).unwrap_or(0).min(end);
    &series[first..end]
}

/// The first span below `least` (per clone), if any: (its mean rate, per clone). fio checks
/// as an I/O completes, over the time since its last check once that is a whole rate cycle
/// (backend.c `check_min_rate`): a cycle in which nothing completed (the machine busy, a
/// paced job catching up) is judged together with the cycles after it, up to one in which
/// I/O completed. A trailing span shorter than a cycle is not judged, as fio never reaches
/// its check.
fn first_below(
    rates: &[f64],
    per_window: usize,
    skip: usize,
    clones: f64,
    least: f64,
) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for &r in rates.get(skip..)? {
        sum += r;
        n += 1;
        if n >= per_window && r > 0.0 {
            let got = sum / n as f64 / clones;
            if got < least {
                return Some(got);
            }
            (sum, n) = (0.0, 0);
        }
    }
    None
}

/// fio's messages of every job that fell below its least rate (empty: all kept it).
pub(super) fn failures(plan: &FioPlan, runs: &[StoredRun]) -> Vec<String> {
    let mut out = Vec::new();
    for (g, run) in plan.groups.iter().zip(runs) {
        let interval_s = run.interval_seconds();
        // Whole intervals only: the run's last one is cut short where measurement ended,
        // and a rate over it would count a part of an interval as a whole.
        let intervals = (run.summary.measured_seconds / interval_s + 0.01).floor() as usize;
        let skip = (SETTLE_S / interval_s).ceil() as usize;
        for &ji in &g.jobs {
            let job = &plan.jobs[ji];
            let r = &job.rates;
            if !r.has_min() {
                continue;
            }
            let per_window = ((r.cycle.as_secs_f64() / interval_s).ceil() as usize).max(1);
            let share = rates::shares(job);
            let clones = if job.filename.is_some() {
                f64::from(job.numjobs)
            } else {
                1.0
            };
            for target in &plan.targets[ji].names {
                for (d, op) in ["read", "write"].into_iter().enumerate() {
                    if share[d] <= 0.0 {
                        continue;
                    }
                    let check = match (r.min_bytes[d], r.min_iops[d]) {
                        (Some(b), _) => Some((false, b)),
                        (None, Some(n)) => Some((true, n)),
                        (None, None) => None,
                    };
                    let Some((iops, least)) = check else { continue };
                    let v = series(run, target, op, iops, intervals);
                    let v = own_intervals(run, target, &v);
                    let Some(got) = first_below(v, per_window, skip, clones, least as f64) else {
                        continue;
                    };
                    out.push(if iops {
                        format!(
                            "{}: rate_iops_min={least} not met, got {} IOPS",
                            job.name, got as u64
                        )
                    } else {
                        format!(
                            "{}: rate_min={least}B/s not met, got {}B/s",
                            job.name, got as u64
                        )
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cycle_without_io_is_judged_with_the_next() {
        // Half-second intervals, cycles of 1: a stalled interval and the catch-up after it
        // average to the rate; two stalled intervals then a slow one do not.
        let rates = [0.0, 0.0, 100.0, 0.0, 200.0, 100.0, 0.0, 0.0, 60.0, 100.0];
        assert_eq!(first_below(&rates[..6], 1, 2, 1.0, 90.0), None);
        assert_eq!(first_below(&rates, 1, 2, 1.0, 90.0), Some(20.0));
        // Nothing completed to the end: never judged (fio's check runs on a completion).
        assert_eq!(
            first_below(&[0.0, 0.0, 100.0, 0.0, 0.0], 1, 2, 1.0, 90.0),
            None
        );
    }

    #[test]
    fn a_window_below_the_least_rate_is_found_after_the_settle() {
        // 1 s intervals, windows of 2: the first two intervals (the settle) are not judged.
        let rates = [0.0, 0.0, 100.0, 100.0, 100.0, 40.0, 100.0];
        assert_eq!(first_below(&rates, 2, 2, 1.0, 80.0), Some(70.0));
        assert_eq!(first_below(&rates, 2, 2, 1.0, 60.0), None);
        // A partial window at the end is not judged (fio waits a whole cycle).
        assert_eq!(first_below(&rates[..6], 1, 2, 1.0, 50.0), Some(40.0));
        assert_eq!(first_below(&rates[..5], 2, 2, 1.0, 99.0), None);
        // Clones on one target: each held to the mean.
        assert_eq!(first_below(&rates, 1, 2, 2.0, 60.0), Some(50.0));
        // A run shorter than the settle has nothing to judge.
        assert_eq!(first_below(&rates[..1], 1, 2, 1.0, 1e9), None);
    }
}
