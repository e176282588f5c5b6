//! Quick mode (`--quick`): a plan shrunk for checking a study end to end, not for figures:
//! short warm-up and measurement (with room kept for timed events and waits), a rate
//! schedule's phases at their quick length, capped operation counts, key spaces and files.

use super::events;
use super::plan::{Plan, RunPlan};
use storlab_model::units::Dur;
use storlab_workload::Workload;

impl Plan {
    /// Quick mode, for checking a study end to end (not for figures): warm-up at most 0.2 s
    /// (a rate schedule's shrinks with its phases), measurement at most 1 s (3 s with timed
    /// events, 6 s with a timed `wait-for`, the step's `quick-duration` when it has one; a
    /// rate schedule's phases at `quick-phase` each) and 20,000 operations, files at most
    /// 64 MiB, a block workload's `start-delay` shrunk with the measurement and at most the
    /// quick measurement (so a step with a delayed workload lasts at most twice it).
    pub fn make_quick(&mut self) {
        for r in &mut self.runs {
            // A rate schedule's warm-up (the brief's ramp-up) shrinks with its phases instead.
            if r.schedule.is_none() {
                r.warmup = Dur(r.warmup.0.min(std::time::Duration::from_millis(200)));
            }
            // A run with events keeps room around them: at most QUICK_EVENTS_SECONDS, its
            // events' times and recovery windows shrunk by the same factor, and intervals
            // short enough to show them.
            let timed_events = r.events.iter().any(|e| e.trigger.in_measurement());
            // What a timed `wait-for` waits for (a rebuild, a failover) does not shrink with
            // the run: such a run keeps more time.
            let timed_wait = r.events.iter().any(|e| {
                e.trigger.in_measurement() && matches!(e.action, events::Action::WaitFor { .. })
            });
            let quick_cap = if let Some(q) = r.quick_duration {
                q.0
            } else if timed_wait {
                std::time::Duration::from_secs(QUICK_WAIT_SECONDS)
            } else if timed_events {
                std::time::Duration::from_secs(QUICK_EVENTS_SECONDS)
            } else {
                std::time::Duration::from_secs(1)
            };
            let quick_duration = r
                .duration
                .map(|d| d.0)
                .unwrap_or(std::time::Duration::from_secs(1))
                .min(quick_cap);
            // A start delay shrinks as the measurement does, so that a delayed job starts at
            // the same point of its group's quick run as of its full one.
            let full_duration = r.duration.map(|d| d.0);
            if let (Some(ss), Some(d)) = (&mut r.steady_state, r.duration) {
                // The window and ramp shrink with the run, judged on short intervals.
                r.interval = Dur(r.interval.0.min(std::time::Duration::from_millis(100)));
                let factor = quick_duration.as_secs_f64() / d.0.as_secs_f64().max(1e-9);
                ss.scale(factor.min(1.0), r.interval);
            }
            if r.schedule.is_some() {
                // Every phase of the schedule shrunk to its quick length, events with them.
                quick_schedule(r);
            } else {
                if let Some(d) = r.duration.filter(|d| !d.0.is_zero() && timed_events) {
                    let factor = quick_duration.as_secs_f64() / d.0.as_secs_f64();
                    events::scale_events(&mut r.events, factor);
                    r.interval = Dur(r.interval.0.min(std::time::Duration::from_millis(100)));
                }
                r.duration = Some(Dur(quick_duration));
            }
            r.ops = r.ops.map(|o| o.min(20_000));
            let mut ycsb = false;
            let mut training_unbounded = false;
            for t in &mut r.targets {
                if let Workload::DbBench(w) = &mut t.workload {
                    w.num = w.num.min(QUICK_KEYS);
                }
                if let Workload::Pgbench(w) = &mut t.workload {
                    w.make_quick();
                }
                if let Workload::Training(w) = &mut t.workload {
                    // A smaller dataset and fewer epochs: the epochs bound the step.
                    w.make_quick();
                    training_unbounded |= full_duration.is_none();
                }
                if let Workload::Checkpoint(w) = &mut t.workload {
                    // A small model, 2 ranks, 2 checkpoints each way: they bound the step.
                    w.make_quick();
                    training_unbounded |= full_duration.is_none();
                }
                if let Workload::Block(w) = &mut t.workload {
                    w.make_quick();
                    // A start delay (fio's startdelay) moves its workers' whole window, so
                    // they run however long it is; shrunk with the measurement and capped
                    // at it to keep the quick step short.
                    w.start_delay = w
                        .start_delay
                        .map(|s| Dur(quick_delay(s.0, full_duration, quick_duration)));
                }
                if let Workload::Ycsb(w) = &mut t.workload {
                    // Counts are capped in the workload: a load must insert every record.
                    w.make_quick();
                    ycsb = true;
                }
            }
            // A fill bounded by its operation count loads the (capped) key space once.
            if r.ops.is_some() && r.targets.iter().all(|t| t.workload.fresh()) {
                r.duration = None;
                let threads = r
                    .targets
                    .iter()
                    .map(|t| t.workload.threads())
                    .max()
                    .unwrap_or(1);
                r.ops = r.ops.map(|o| o.min(QUICK_KEYS * threads as u64));
            }
            for t in &mut r.targets {
                t.config.make_quick();
            }
            if training_unbounded {
                r.duration = None;
            }
            if ycsb {
                r.ops = None;
                if !timed_events && r.schedule.is_none() {
                    r.duration = None;
                }
            }
        }
        // The array's load follows the members' quick load.
        self.equalize_raid_load();
    }
}

/// A start delay of `delay` in a run measured `full` (None: bounded by operations) that quick
/// mode measures `quick`: shrunk by the same factor, at most `quick`.
fn quick_delay(
    delay: std::time::Duration,
    full: Option<std::time::Duration>,
    quick: std::time::Duration,
) -> std::time::Duration {
    let shrunk = match full {
        Some(full) if full > quick => {
            let ns = delay.as_nanos() * quick.as_nanos() / full.as_nanos();
            std::time::Duration::from_nanos(ns.min(u64::MAX as u128) as u64)
        }
        _ => delay,
    };
    shrunk.min(quick)
}

/// The longest a run with timed events lasts in quick mode, seconds.
pub const QUICK_EVENTS_SECONDS: u64 = 3;

/// The longest a run with a timed `wait-for` event lasts in quick mode, seconds.
pub const QUICK_WAIT_SECONDS: u64 = 6;

/// Keys of a db-bench workload in quick mode.
pub const QUICK_KEYS: u64 = 10_000;

/// Quick mode for a scheduled run: every phase lasts `quick-phase` (if shorter than `phase`),
/// the measurement and the timed events shrink by the same factor so that the run goes
/// through the same phases, the timeline interval is a tenth of a phase and the warm-up (the
/// brief's ramp-up, drawn before the measurement interval) shrinks by the same factor: a
/// 12-minute ramp before 12-minute phases stays one phase long.
fn quick_schedule(run: &mut RunPlan) {
    let Some(s) = &mut run.schedule else { return };
    let factor = (s.quick_phase.0.as_secs_f64() / s.phase.0.as_secs_f64()).min(1.0);
    s.phase = Dur(s.phase.0.mul_f64(factor));
    let interval = s.phase.0 / 10;
    run.duration = run.duration.map(|d| Dur(d.0.mul_f64(factor)));
    events::scale_events(&mut run.events, factor);
    run.interval = Dur(run.interval.0.min(interval));
    if !s
        .phase
        .0
        .as_nanos()
        .is_multiple_of(run.interval.0.as_nanos())
    {
        run.interval = Dur(interval);
    }
    run.warmup = Dur(run.warmup.0.mul_f64(factor));
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    /// The quick run of a step of `duration` whose workload starts `delay` late: its
    /// duration and its workload's start delay.
    fn quick(duration: &str, delay: &str) -> (Duration, Duration) {
        let text = format!(
            "name = \"t\"\n\n[targets.n]\ntype = \"null\"\n\n[workloads.w]\nblock-size = \"4KiB\"\nstart-delay = \"{delay}\"\n\n[[steps]]\nworkload = \"w\"\ntargets = [\"n\"]\nduration = \"{duration}\"\n"
        );
        let mut plan = crate::parse("t.toml", &text).unwrap();
        plan.make_quick();
        let r = &plan.runs[0];
        (r.duration.unwrap().0, r.targets[0].workload.start_delay())
    }

    /// A start delay shrinks with the measurement (a job that joins halfway still joins
    /// halfway), at most the quick measurement; one within a 1 s run is kept.
    #[test]
    fn quick_mode_shrinks_a_start_delay_with_the_measurement() {
        let ms = Duration::from_millis;
        assert_eq!(quick("300s", "6s"), (ms(1000), ms(20)));
        assert_eq!(quick("5s", "10s"), (ms(1000), ms(1000)));
        assert_eq!(quick("1s", "1s"), (ms(1000), ms(1000)));
        assert_eq!(quick("1s", "500ms"), (ms(1000), ms(500)));
    }

    /// A step's `quick-duration` is its quick measurement, its events' times and recovery
    /// windows shrunk by the same factor; past its `duration` it is an error.
    #[test]
    fn quick_duration_sets_the_quick_measurement() {
        let text = |q: &str| {
            format!(
                "name = \"t\"\n\n[targets.n]\ntype = \"null\"\n\n[workloads.w]\nblock-size = \"4KiB\"\n\n[[steps]]\nworkload = \"w\"\ntargets = [\"n\"]\nduration = \"60s\"\nquick-duration = \"{q}\"\n\n[[steps.events]]\nname = \"e\"\naction = \"exec\"\nat = \"40s\"\nbaseline = \"20s\"\ncommand = [\"true\"]\n"
            )
        };
        let mut plan = crate::parse("t.toml", &text("30s")).unwrap();
        plan.make_quick();
        let r = &plan.runs[0];
        assert_eq!(r.duration.unwrap().0, Duration::from_secs(30));
        let e = &r.events[0];
        assert_eq!(
            e.trigger,
            crate::events::Trigger::At(storlab_model::units::Dur(Duration::from_secs(20)))
        );
        assert_eq!(e.recovery.unwrap().baseline.0, Duration::from_secs(10));
        let err = crate::parse("t.toml", &text("90s")).unwrap_err();
        assert!(format!("{err:?}").contains("quick-duration"), "{err:?}");
    }
}
