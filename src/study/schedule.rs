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

use std::ops::Range;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::{Source, StudyError};
use crate::run::pacer::RateChange;
use crate::units::Dur;

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
    /// Operations per second of every group together.
    pub total_rate_ops: f64,
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
        let g = self.group_of(target)?;
        let per_worker = |phase: usize| {
            self.total_rate_ops * self.share(g, phase)
                / g.targets.len() as f64
                / f64::from(threads.max(1))
        };
        let changes = (1..self.phases_in(duration_ns))
            .map(|p| RateChange {
                at_ns: p as u64 * self.phase_ns(),
                rate_ops: per_worker(p),
            })
            .collect();
        Some((per_worker(0), changes))
    }

    /// A phase's shares as text: `tenant-1 10% (200 ops/s), tenant-2 90% (1800 ops/s)`.
    pub fn describe_phase(&self, phase: usize) -> String {
        let parts: Vec<String> = self
            .groups
            .iter()
            .map(|g| {
                let s = self.share(g, phase);
                format!(
                    "{} {}% ({} ops/s)",
                    g.name,
                    round(s * 100.0),
                    round(s * self.total_rate_ops)
                )
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

/// Quick mode for a scheduled run: every phase lasts `quick-phase` (if shorter than `phase`),
/// the measurement and the timed events shrink by the same factor so that the run goes
/// through the same phases, the timeline interval is a tenth of a phase and the warm-up at
/// most 0.2 s.
pub fn make_quick(run: &mut super::plan::RunPlan) {
    let Some(s) = &mut run.schedule else { return };
    let factor = (s.quick_phase.0.as_secs_f64() / s.phase.0.as_secs_f64()).min(1.0);
    s.phase = Dur(s.phase.0.mul_f64(factor));
    let interval = s.phase.0 / 10;
    run.duration = run.duration.map(|d| Dur(d.0.mul_f64(factor)));
    super::events::scale_events(&mut run.events, factor);
    run.interval = Dur(run.interval.0.min(interval));
    if !s
        .phase
        .0
        .as_nanos()
        .is_multiple_of(run.interval.0.as_nanos())
    {
        run.interval = Dur(interval);
    }
    run.warmup = Dur(run.warmup.0.min(Duration::from_millis(200)));
}

/// The table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawSchedule {
    total_rate_ops: Spanned<f64>,
    phase: Spanned<Dur>,
    quick_phase: Option<Spanned<Dur>>,
    shape: Option<Spanned<String>>,
    moving_average_phases: Option<Spanned<Vec<Spanned<u32>>>>,
    latency_limit: Option<Spanned<Dur>>,
    #[serde(default)]
    groups: Vec<Spanned<RawGroup>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawGroup {
    name: Spanned<String>,
    targets: Spanned<Vec<Spanned<String>>>,
    shares: Option<Spanned<Vec<Spanned<f64>>>>,
}

/// What the schedule is checked against: the step's own keys.
pub(super) struct StepFacts<'a> {
    /// `steps[N]`.
    pub key: &'a str,
    /// The step's table.
    pub span: Range<usize>,
    /// The step's targets, as written.
    pub targets: Vec<&'a str>,
    pub together: bool,
    pub duration: Option<Dur>,
    /// The study's timeline interval.
    pub interval: Duration,
    /// Where the workload sets its own rate (`rate-ops` or `rate-per-thread-ops`), if it does:
    /// the full key and its place.
    pub workload_rate: Option<(String, Option<Range<usize>>)>,
}

impl<'a> StepFacts<'a> {
    /// The facts of step `step` (`key`), whose workload is `workload` (its validated table and
    /// where it is written).
    pub(super) fn of(
        src: &Source,
        step: &'a Spanned<super::RawStep>,
        key: &'a str,
        interval: Duration,
        workload: (&toml::Table, &Range<usize>),
    ) -> StepFacts<'a> {
        let s = step.get_ref();
        let name = s.workload.get_ref();
        let workload_rate = ["rate-ops", "rate-per-thread-ops"].iter().find_map(|k| {
            if let Some(values) = s.sweep.get(*k) {
                return Some((format!("{key}.sweep.{k}"), Some(values.span())));
            }
            workload.0.contains_key(*k).then(|| {
                (
                    format!("workloads.{name}.{k}"),
                    src.locate_in(workload.1, k),
                )
            })
        });
        StepFacts {
            key,
            span: step.span(),
            targets: s
                .targets
                .get_ref()
                .iter()
                .map(|t| t.get_ref().as_str())
                .collect(),
            together: s.together,
            duration: s.duration.as_ref().map(|d| *d.get_ref()),
            interval,
            workload_rate,
        }
    }
}

/// Validates `[steps.schedule]`; None (with the problems in `errors`) when it is not valid.
pub(super) fn parse(
    src: &Source,
    raw: &Spanned<RawSchedule>,
    step: &StepFacts<'_>,
    errors: &mut Vec<StudyError>,
) -> Option<Schedule> {
    let key = format!("{}.schedule", step.key);
    let span = raw.span();
    let raw = raw.get_ref();
    let before = errors.len();
    if let Some((wkey, at)) = &step.workload_rate {
        errors.push(src.error(
            at.clone(),
            wkey.clone(),
            format!(
                "the step `{}` has a rate schedule ([{key}]), which sets every target's rate: remove this rate from the workload",
                step.key
            ),
        ));
    }
    // Problems found below (the closure holds `errors`).
    let found = std::cell::Cell::new(errors.len() - before);
    let mut err = |at: Option<Range<usize>>, k: &str, message: String| {
        found.set(found.get() + 1);
        let full = if k.is_empty() {
            key.clone()
        } else {
            format!("{key}.{k}")
        };
        errors.push(src.error(at, full, message));
    };
    let total = *raw.total_rate_ops.get_ref();
    if !(total.is_finite() && total > 0.0) {
        err(
            Some(raw.total_rate_ops.span()),
            "total-rate-ops",
            "total-rate-ops is the operations per second of all groups together: above 0".into(),
        );
    }
    let phase = raw.phase.get_ref().0;
    if phase.is_zero() {
        err(
            Some(raw.phase.span()),
            "phase",
            "a phase lasts more than 0s".into(),
        );
    } else if !phase
        .as_nanos()
        .is_multiple_of(step.interval.as_nanos().max(1))
    {
        err(
            Some(raw.phase.span()),
            "phase",
            format!(
                "a phase is a whole number of timeline intervals (the study's `interval`, {}), so that each phase's figures come from its own intervals",
                crate::units::format_duration(step.interval)
            ),
        );
    }
    let quick_phase = raw
        .quick_phase
        .as_ref()
        .map_or(Duration::from_secs(1), |q| q.get_ref().0);
    if let Some(q) = &raw.quick_phase
        && q.get_ref().0 < MIN_QUICK_PHASE
    {
        err(
            Some(q.span()),
            "quick-phase",
            "quick-phase is at least 100ms (ten timeline intervals of 10ms)".into(),
        );
    }
    if !step.together {
        err(
            Some(span.clone()),
            "",
            "a schedule's groups run at the same time: set `together = true` on the step".into(),
        );
    }
    if raw.groups.is_empty() {
        err(
            Some(span.clone()),
            "groups",
            "list at least one group ([[steps.schedule.groups]] with name, targets, shares)".into(),
        );
    }
    // A named shape gives every group's shares.
    let shape_table: Option<&[[f64; 10]]> = match &raw.shape {
        None => None,
        Some(sh) if sh.get_ref() == "hci-elastic" => {
            if raw.groups.len() != HCI_ELASTIC.len() {
                err(
                    Some(sh.span()),
                    "shape",
                    format!(
                        "the shape `hci-elastic` is a table for {} groups (10, 20, 30 and 40% on average); the schedule lists {}",
                        HCI_ELASTIC.len(),
                        raw.groups.len()
                    ),
                );
            }
            Some(&HCI_ELASTIC[..])
        }
        Some(sh) => {
            err(
                Some(sh.span()),
                "shape",
                format!(
                    "unknown shape `{}`: the named shapes are {} (or give each group its `shares`)",
                    sh.get_ref(),
                    SHAPES.join(", ")
                ),
            );
            None
        }
    };
    let moving_average_phases: Vec<u32> = match &raw.moving_average_phases {
        None => MOVING_AVERAGE_PHASES.to_vec(),
        Some(m) => {
            if m.get_ref().is_empty() {
                err(
                    Some(m.span()),
                    "moving-average-phases",
                    "list at least one window, in phases (the default is [1, 5])".into(),
                );
            }
            for w in m.get_ref() {
                if *w.get_ref() == 0 {
                    err(
                        Some(w.span()),
                        "moving-average-phases",
                        "a moving average's window is at least 1 phase".into(),
                    );
                }
            }
            m.get_ref().iter().map(|w| *w.get_ref()).collect()
        }
    };
    if let Some(l) = &raw.latency_limit
        && l.get_ref().0.is_zero()
    {
        err(
            Some(l.span()),
            "latency-limit",
            "latency-limit is how late an intended start may be and still be sent: above 0s (leave it out to send every start)".into(),
        );
    }
    let mut groups: Vec<Group> = Vec::new();
    let phases = match shape_table {
        Some(t) => t[0].len(),
        None => raw
            .groups
            .first()
            .and_then(|g| g.get_ref().shares.as_ref())
            .map_or(0, |s| s.get_ref().len()),
    };
    for (gi, g) in raw.groups.iter().enumerate() {
        let gk = format!("groups[{}]", gi + 1);
        let g = g.get_ref();
        let name = g.name.get_ref().clone();
        if groups.iter().any(|o| o.name == name) {
            err(
                Some(g.name.span()),
                &format!("{gk}.name"),
                format!("two groups are named `{name}`"),
            );
        }
        let mut targets: Vec<String> = Vec::new();
        for t in g.targets.get_ref() {
            let t_name = t.get_ref();
            if !step.targets.contains(&t_name.as_str()) {
                err(
                    Some(t.span()),
                    &format!("{gk}.targets"),
                    format!(
                        "`{t_name}` is not one of the step's targets ({})",
                        step.targets.join(", ")
                    ),
                );
            } else if let Some(other) = groups.iter().find(|o| o.targets.contains(t_name)) {
                err(
                    Some(t.span()),
                    &format!("{gk}.targets"),
                    format!(
                        "`{t_name}` is in two groups (`{}` and `{name}`): a target belongs to one group",
                        other.name
                    ),
                );
            } else if targets.contains(t_name) {
                err(
                    Some(t.span()),
                    &format!("{gk}.targets"),
                    format!("`{t_name}` is listed twice"),
                );
            }
            targets.push(t_name.clone());
        }
        if targets.is_empty() {
            err(
                Some(g.targets.span()),
                &format!("{gk}.targets"),
                "a group needs at least one target".into(),
            );
        }
        let shares: Vec<f64> = match (&g.shares, &raw.shape) {
            (Some(given), Some(_)) => {
                err(
                    Some(given.span()),
                    &format!("{gk}.shares"),
                    "the schedule's `shape` gives every group's shares: give either the shape or each group's `shares`, not both".into(),
                );
                Vec::new()
            }
            (None, Some(_)) => shape_table
                .and_then(|t| t.get(gi))
                .map(|row| row.to_vec())
                .unwrap_or_default(),
            (None, None) => {
                err(
                    Some(g.targets.span()),
                    &format!("{gk}.shares"),
                    "give the group's share of the total in each phase (`shares`), or a `shape` for the schedule".into(),
                );
                Vec::new()
            }
            (Some(given), None) => {
                let given_shares = given.get_ref();
                for s in given_shares {
                    if !(0.0..=1.0).contains(s.get_ref()) {
                        err(
                            Some(s.span()),
                            &format!("{gk}.shares"),
                            format!(
                                "{} is not a share: a fraction of the total, from 0 to 1 (0.25 for 25%)",
                                s.get_ref()
                            ),
                        );
                    }
                }
                let shares: Vec<f64> = given_shares.iter().map(|s| *s.get_ref()).collect();
                if shares.is_empty() {
                    err(
                        Some(given.span()),
                        &format!("{gk}.shares"),
                        "give the group's share of the total in each phase".into(),
                    );
                } else if shares.len() != phases {
                    err(
                        Some(given.span()),
                        &format!("{gk}.shares"),
                        format!(
                            "{} phases here, {phases} in the first group: every group gives one share per phase",
                            shares.len()
                        ),
                    );
                }
                shares
            }
        };
        groups.push(Group {
            name,
            targets,
            shares,
        });
    }
    for t in &step.targets {
        if !groups.iter().any(|g| g.targets.iter().any(|n| n == t)) {
            err(
                Some(span.clone()),
                "groups",
                format!(
                    "the step's target `{t}` is in no group: each of the step's targets belongs to one group"
                ),
            );
        }
    }
    if found.get() == 0 && shape_table.is_none() {
        for p in 0..phases {
            let sum: f64 = groups.iter().map(|g| g.shares[p]).sum();
            if (sum - 1.0).abs() > SHARE_TOLERANCE {
                let listed: Vec<String> = groups
                    .iter()
                    .map(|g| format!("{} {}", g.name, g.shares[p]))
                    .collect();
                err(
                    raw.groups[0]
                        .get_ref()
                        .shares
                        .as_ref()
                        .map(|s| s.get_ref()[p].span()),
                    "groups[1].shares",
                    format!(
                        "phase {}'s shares add up to {} ({}), not 1 (100%)",
                        p + 1,
                        round(sum),
                        listed.join(" + ")
                    ),
                );
            }
        }
    }
    match step.duration {
        Some(d) if !phase.is_zero() => {
            let table = phase * phases as u32;
            if table > d.0 {
                err(
                    Some(raw.phase.span()),
                    "phase",
                    format!(
                        "the phase table ({phases} phases of {}) lasts {}, longer than the step's duration ({}): shorten the phases or the table, or lengthen the step",
                        crate::units::format_duration(phase),
                        crate::units::format_duration(table),
                        crate::units::format_duration(d.0)
                    ),
                );
            }
        }
        Some(_) => {}
        None => err(
            Some(step.span.clone()),
            "",
            "a scheduled step needs a `duration` (its phases are laid out over it)".into(),
        ),
    }
    (errors.len() == before).then_some(Schedule {
        total_rate_ops: total,
        phase: Dur(phase),
        quick_phase: Dur(quick_phase),
        groups,
        shape: raw.shape.as_ref().map(|s| s.get_ref().clone()),
        moving_average_phases,
        latency_limit: raw.latency_limit.as_ref().map(|l| *l.get_ref()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule() -> Schedule {
        Schedule {
            total_rate_ops: 1000.0,
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
}
