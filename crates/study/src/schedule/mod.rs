//! A step's rate schedule (`[steps.schedule]`): tenant groups, each with its own targets, share
//! a constant total rate, and each group's share changes from phase to phase (TPCx-HCI's
//! elasticity: the load of one group may change 16x while the total stays the same). The step
//! runs open loop: a target's rate in a phase is its group's share of the total, split evenly
//! among the group's targets, and each target's threads split that. After the listed phases
//! the table starts again. This file validates the table into the plan's [`Schedule`], every
//! problem with file, line and key, and lays out each worker's rate changes before a run;
//! `run::pacer` follows them, `results::schedule` measures what came of them.
//!
//! ```toml
//! [steps.schedule]
//! total-rate-ops = 2000         # operations (transactions) per second, all groups together
//! phase = "12m"                 # each phase's length (a whole number of timeline intervals)
//! quick-phase = "1s"            # each phase's length in --quick (the default)
//! [[steps.schedule.groups]]
//! name = "tenant-1"
//! targets = ["db-1", "db-2"]
//! shares = [0.10, 0.40, 0.20]   # of the total, per phase
//! ```
//!
//! Instead of the groups' `shares`, `shape = "hci-elastic"` gives four groups the table
//! modelled on the TPCx-HCI brief ([`HCI_ELASTIC`]). `moving-average-phases` (default
//! `[1, 5]`: the brief's 12 minutes and one hour) sets the windows of the moving averages
//! whose largest deviation from the reported throughput the results give. `latency-limit`
//! (pgbench's `--latency-limit` with `--rate`) skips intended starts already later than it
//! when their turn comes, counting them (`skipped-starts`), so that after an outage the
//! groups go on at their rates instead of sending the backlog at once.
//!
//! The closed-loop variant gives `total-workers` instead of `total-rate-ops`: in each phase a
//! group has its share of the workers active (rounded so that the groups' add up to the
//! total), split evenly among its targets; each worker runs back to back while active and is
//! paused otherwise. The schedule sets each target's threads (the most it has active in any
//! phase), as the open loop sets their rates.

use std::time::Duration;

use serde::Serialize;

use storlab_model::rate::RateChange;
use storlab_model::units::Dur;

mod parse;
pub(super) use parse::{RawSchedule, StepFacts, parse};

/// How far a phase's shares may add up away from 1.
const SHARE_TOLERANCE: f64 = 1e-6;

/// The shortest phase in quick mode: ten timeline intervals of the shortest allowed (10 ms).
const MIN_QUICK_PHASE: Duration = Duration::from_millis(100);

/// The named shape `hci-elastic`: ten phases (two hours of the brief's 12-minute phases) for
/// four groups, per group its share of the total in each phase. Modelled on the TPCx-HCI
/// brief, whose own table is not published with it: the groups carry 10, 20, 30 and 40% of
/// the total on average, every phase adds up to 100%, and the first group's load changes 16x
/// (2.5% to 40%); the others 4x, 5x and 6.75x.
pub const HCI_ELASTIC: [[f64; 10]; 4] = [
    [
        0.025, 0.05, 0.10, 0.20, 0.40, 0.10, 0.05, 0.025, 0.025, 0.025,
    ],
    [0.40, 0.10, 0.20, 0.30, 0.10, 0.20, 0.30, 0.10, 0.15, 0.15],
    [0.20, 0.45, 0.30, 0.10, 0.40, 0.50, 0.25, 0.45, 0.20, 0.15],
    [
        0.375, 0.40, 0.40, 0.40, 0.10, 0.20, 0.40, 0.425, 0.625, 0.675,
    ],
];

/// The named shapes, for messages.
const SHAPES: [&str; 1] = ["hci-elastic"];

/// The default moving-average windows, in phases: the brief's 12 minutes and one hour.
const MOVING_AVERAGE_PHASES: [u32; 2] = [1, 5];

/// A validated schedule.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Schedule {
    /// Open loop: operations per second of every group together.
    pub total_rate_ops: Option<f64>,
    /// Closed loop: active workers of every group together, in every phase.
    pub total_workers: Option<u32>,
    /// Length of each phase.
    pub phase: Dur,
    /// Length of each phase in quick mode.
    pub quick_phase: Dur,
    pub groups: Vec<Group>,
    /// The named shape the shares come from, if any.
    pub shape: Option<String>,
    /// Windows of the moving averages of the total throughput, in phases.
    pub moving_average_phases: Vec<u32>,
    /// An intended start already further behind than this when its turn comes is skipped, not
    /// sent (pgbench's `--latency-limit` with `--rate`): after an outage the groups go on at
    /// their rates rather than sending the backlog at once. None: every start is sent.
    pub latency_limit: Option<Dur>,
}

/// A tenant group.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Group {
    pub name: String,
    pub targets: Vec<String>,
    /// Its share of the total in each phase of the table (0 to 1).
    pub shares: Vec<f64>,
}

impl Schedule {
    /// Phases in the table (it repeats after them).
    pub fn table_phases(&self) -> usize {
        self.groups.first().map_or(0, |g| g.shares.len())
    }

    /// A group's share of the total in phase `phase` (0-based, counting on past the table).
    pub fn share(&self, group: &Group, phase: usize) -> f64 {
        group.shares[phase % group.shares.len().max(1)]
    }

    /// The group a target belongs to.
    pub fn group_of(&self, target: &str) -> Option<&Group> {
        self.groups
            .iter()
            .find(|g| g.targets.iter().any(|t| t == target))
    }

    /// Phase length, ns.
    pub fn phase_ns(&self) -> u64 {
        (self.phase.0.as_nanos() as u64).max(1)
    }

    /// Phases in a measurement of `duration_ns` (the last one may be cut short).
    pub fn phases_in(&self, duration_ns: u64) -> usize {
        duration_ns.div_ceil(self.phase_ns()) as usize
    }

    /// One worker's pacing: its rate in the first phase (which also covers the warm-up) and
    /// its rate changes, ns from the start of measurement, up to `duration_ns`. `threads` is
    /// the number of the target's threads that split its rate. None when `target` is in no
    /// group.
    pub fn worker_rates(
        &self,
        target: &str,
        threads: u32,
        duration_ns: u64,
    ) -> Option<(f64, Vec<RateChange>)> {
        let total = self.total_rate_ops?;
        let g = self.group_of(target)?;
        let per_worker = |phase: usize| {
            total * self.share(g, phase) / g.targets.len() as f64 / f64::from(threads.max(1))
        };
        let changes = (1..self.phases_in(duration_ns))
            .map(|p| RateChange {
                at_ns: p as u64 * self.phase_ns(),
                rate_ops: per_worker(p),
            })
            .collect();
        Some((per_worker(0), changes))
    }

    /// Closed loop: each group's active workers in phase `phase`, in the schedule's order:
    /// its share of `total-workers`, the leftover workers going to the largest remainders
    /// (the first group on a tie), so that they add up to the total.
    pub fn group_workers(&self, phase: usize) -> Option<Vec<u32>> {
        let total = self.total_workers?;
        let exact: Vec<f64> = self
            .groups
            .iter()
            .map(|g| self.share(g, phase) * f64::from(total))
            .collect();
        let mut workers: Vec<u32> = exact.iter().map(|x| (x + 1e-9).floor() as u32).collect();
        let mut left = total.saturating_sub(workers.iter().sum());
        let mut order: Vec<usize> = (0..exact.len()).collect();
        order.sort_by(|a, b| {
            let (ra, rb) = (exact[*a] - exact[*a].floor(), exact[*b] - exact[*b].floor());
            rb.total_cmp(&ra).then(a.cmp(b))
        });
        for gi in order {
            if left == 0 {
                break;
            }
            workers[gi] += 1;
            left -= 1;
        }
        Some(workers)
    }

    /// Closed loop: `target`'s active workers in phase `phase`: its group's split evenly over
    /// the group's targets, the first targets taking one more while any are left.
    pub fn target_workers(&self, target: &str, phase: usize) -> Option<u32> {
        let gi = self
            .groups
            .iter()
            .position(|g| g.targets.iter().any(|t| t == target))?;
        let g = &self.groups[gi];
        let n = self.group_workers(phase)?[gi];
        let count = g.targets.len() as u32;
        let ti = g.targets.iter().position(|t| t == target)? as u32;
        Some(n / count + u32::from(ti < n % count))
    }

    /// Closed loop: the threads `target` runs: the most it has active in any phase of the
    /// table, at least one.
    pub fn target_threads(&self, target: &str) -> Option<u32> {
        (0..self.table_phases().max(1))
            .map(|p| self.target_workers(target, p))
            .try_fold(1u32, |most, n| Some(most.max(n?)))
    }

    /// Closed loop: when thread `thread` of `target` runs: whether it runs in the first phase
    /// (which also covers the warm-up), and its changes (an infinite rate: it runs; 0: it is
    /// paused), ns from the start of measurement, up to `duration_ns`. Thread k runs in a
    /// phase where its target has more than k workers active.
    pub fn worker_activity(
        &self,
        target: &str,
        thread: u32,
        duration_ns: u64,
    ) -> Option<(bool, Vec<RateChange>)> {
        let runs = |phase: usize| Some(thread < self.target_workers(target, phase)?);
        let first = runs(0)?;
        let mut was = first;
        let mut changes = Vec::new();
        for p in 1..self.phases_in(duration_ns) {
            let now = runs(p)?;
            if now != was {
                changes.push(RateChange {
                    at_ns: p as u64 * self.phase_ns(),
                    rate_ops: if now { f64::INFINITY } else { 0.0 },
                });
                was = now;
            }
        }
        Some((first, changes))
    }

    /// A phase's shares as text: `tenant-1 10% (200 ops/s), tenant-2 90% (1800 ops/s)`, or in
    /// a closed loop `tenant-1 10% (2 workers), ...`.
    pub fn describe_phase(&self, phase: usize) -> String {
        let workers = self.group_workers(phase);
        let parts: Vec<String> = self
            .groups
            .iter()
            .enumerate()
            .map(|(gi, g)| {
                let s = self.share(g, phase);
                let load = match (&workers, self.total_rate_ops) {
                    (Some(w), _) => {
                        format!("{} worker{}", w[gi], if w[gi] == 1 { "" } else { "s" })
                    }
                    (None, Some(total)) => format!("{} ops/s", round(s * total)),
                    (None, None) => String::new(),
                };
                format!("{} {}% ({load})", g.name, round(s * 100.0))
            })
            .collect();
        parts.join(", ")
    }
}

/// A number with at most 2 decimals, without trailing zeros.
fn round(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule() -> Schedule {
        Schedule {
            total_rate_ops: Some(1000.0),
            total_workers: None,
            phase: Dur(Duration::from_secs(10)),
            quick_phase: Dur(Duration::from_secs(1)),
            groups: vec![
                Group {
                    name: "a".into(),
                    targets: vec!["x".into(), "y".into()],
                    shares: vec![0.2, 0.6],
                },
                Group {
                    name: "b".into(),
                    targets: vec!["z".into()],
                    shares: vec![0.8, 0.4],
                },
            ],
            shape: None,
            moving_average_phases: vec![1, 5],
            latency_limit: None,
        }
    }

    /// The brief's 12-minute ramp-up before ten 12-minute phases: in quick mode one 6 s phase
    /// of ramp-up, then the ten phases (it was cut to 0.2 s, too short to draw).
    #[test]
    fn quick_mode_keeps_the_ramp_up_one_phase_long() {
        let mut study = String::from(
            "name = \"ramp\"\n[workloads.w]\nblock-size = \"4KiB\"\n[[steps]]\nworkload = \"w\"\ntargets = [\"a\", \"b\", \"c\", \"d\"]\ntogether = true\nwarmup = \"12m\"\nduration = \"2h\"\n[steps.schedule]\ntotal-workers = 40\nphase = \"12m\"\nquick-phase = \"6s\"\nshape = \"hci-elastic\"\n",
        );
        for t in ["a", "b", "c", "d"] {
            study.push_str(&format!(
                "[[steps.schedule.groups]]\nname = \"{t}\"\ntargets = [\"{t}\"]\n"
            ));
        }
        for t in ["a", "b", "c", "d"] {
            study.push_str(&format!("[targets.{t}]\ntype = \"null\"\n"));
        }
        let mut plan = crate::parse("ramp.toml", &study).expect("the study");
        plan.make_quick();
        let r = &plan.runs[0];
        assert_eq!(r.warmup.0, Duration::from_secs(6));
        assert_eq!(r.duration.map(|d| d.0), Some(Duration::from_secs(60)));
        assert_eq!(r.interval.0, Duration::from_millis(600));
    }

    #[test]
    fn the_hci_elastic_shape_adds_up_per_phase_and_averages_10_20_30_40() {
        for p in 0..10 {
            let sum: f64 = HCI_ELASTIC.iter().map(|g| g[p]).sum();
            assert!((sum - 1.0).abs() < 1e-9, "phase {p}: {sum}");
        }
        for (g, want) in HCI_ELASTIC.iter().zip([0.1, 0.2, 0.3, 0.4]) {
            let mean = g.iter().sum::<f64>() / g.len() as f64;
            assert!((mean - want).abs() < 1e-9, "{g:?}: {mean}");
        }
        let g1 = HCI_ELASTIC[0];
        let (lo, hi) = g1
            .iter()
            .fold((f64::MAX, 0.0f64), |(l, h), v| (l.min(*v), h.max(*v)));
        assert_eq!(hi / lo, 16.0, "the brief's largest change, 16x");
    }

    #[test]
    fn a_workers_rate_is_its_share_split_over_targets_and_threads_and_the_table_repeats() {
        let s = schedule();
        // 25 s: phases 0, 1, 2 (the table's first again).
        let (first, changes) = s.worker_rates("x", 2, 25_000_000_000).unwrap();
        assert_eq!(first, 1000.0 * 0.2 / 2.0 / 2.0);
        assert_eq!(
            changes,
            vec![
                RateChange {
                    at_ns: 10_000_000_000,
                    rate_ops: 1000.0 * 0.6 / 4.0
                },
                RateChange {
                    at_ns: 20_000_000_000,
                    rate_ops: 1000.0 * 0.2 / 4.0
                },
            ]
        );
        let (z, _) = s.worker_rates("z", 1, 10_000_000_000).unwrap();
        assert_eq!(z, 800.0);
        assert!(s.worker_rates("nowhere", 1, 1).is_none());
        assert_eq!(s.describe_phase(3), "a 60% (600 ops/s), b 40% (400 ops/s)");
    }

    #[test]
    fn closed_loop_workers_follow_the_shares_and_add_up_to_the_total() {
        let mut s = schedule();
        s.total_rate_ops = None;
        s.total_workers = Some(5);
        // Phase 1: a 0.2 x 5 = 1, b 4; phase 2: a 3, b 2.
        assert_eq!(s.group_workers(0), Some(vec![1, 4]));
        assert_eq!(s.group_workers(1), Some(vec![3, 2]));
        // a's workers split over x and y, the first taking the odd one.
        assert_eq!(s.target_workers("x", 0), Some(1));
        assert_eq!(s.target_workers("y", 0), Some(0));
        assert_eq!(s.target_workers("x", 1), Some(2));
        assert_eq!(s.target_workers("y", 1), Some(1));
        assert_eq!(s.target_threads("x"), Some(2));
        assert_eq!(s.target_threads("y"), Some(1));
        assert_eq!(s.target_threads("z"), Some(4));
        // y's only thread: paused in phase 1, running in 2, paused in 3 (the table again).
        let (first, changes) = s.worker_activity("y", 0, 30_000_000_000).unwrap();
        assert!(!first);
        assert_eq!(
            changes,
            vec![
                RateChange {
                    at_ns: 10_000_000_000,
                    rate_ops: f64::INFINITY
                },
                RateChange {
                    at_ns: 20_000_000_000,
                    rate_ops: 0.0
                },
            ]
        );
        // Largest remainders: 3 workers at 0.5/0.3/0.2 (1.5, 0.9, 0.6): 1, 0, 0 and the two left
        // to b (0.9) and c (0.6).
        s.groups[0].shares = vec![0.5];
        s.groups[1].shares = vec![0.3];
        s.groups.push(Group {
            name: "c".into(),
            targets: vec!["w".into()],
            shares: vec![0.2],
        });
        s.total_workers = Some(3);
        assert_eq!(s.group_workers(0), Some(vec![1, 1, 1]));
        s.total_workers = Some(4);
        // 2.0, 1.2, 0.8: 2, 1, 1.
        assert_eq!(s.group_workers(0), Some(vec![2, 1, 1]));
        assert_eq!(
            s.describe_phase(0),
            "a 50% (2 workers), b 30% (1 worker), c 20% (1 worker)"
        );
        assert!(
            s.worker_rates("x", 1, 1).is_none(),
            "no rates in a closed loop"
        );
    }
}
