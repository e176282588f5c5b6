//! Validation of `[steps.schedule]` as written: every problem with file, line and key, checked
//! against the step's own keys (its targets, duration, the study's interval and whether its
//! workload sets a rate itself).

use std::ops::Range;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::{
    Group, HCI_ELASTIC, MIN_QUICK_PHASE, MOVING_AVERAGE_PHASES, SHAPES, SHARE_TOLERANCE, Schedule,
    round,
};
use crate::{Source, StudyError};
use storlab_model::units::Dur;

/// The table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct RawSchedule {
    total_rate_ops: Option<Spanned<f64>>,
    total_workers: Option<Spanned<u32>>,
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
pub(crate) struct StepFacts<'a> {
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
    /// Where the workload sets its threads (`threads`, or a sweep of it), if it does.
    pub workload_threads: Option<(String, Option<Range<usize>>)>,
}

impl<'a> StepFacts<'a> {
    /// The facts of step `step` (`key`), whose workload is `workload` (its validated table and
    /// where it is written).
    pub(crate) fn of(
        src: &Source,
        step: &'a Spanned<crate::RawStep>,
        key: &'a str,
        interval: Duration,
        workload: (&toml::Table, &Range<usize>),
    ) -> StepFacts<'a> {
        let s = step.get_ref();
        let name = s.workload.get_ref();
        let set_by_workload = |k: &str| {
            if let Some(values) = s.sweep.get(k) {
                return Some((format!("{key}.sweep.{k}"), Some(values.span())));
            }
            workload.0.contains_key(k).then(|| {
                (
                    format!("workloads.{name}.{k}"),
                    src.locate_in(workload.1, k),
                )
            })
        };
        let workload_rate = ["rate-ops", "rate-per-thread-ops"]
            .iter()
            .find_map(|k| set_by_workload(k));
        let workload_threads = set_by_workload("threads");
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
            workload_threads,
        }
    }
}

/// Where a schedule's problems go: `errors`, under the schedule's key, counted.
struct Problems<'e> {
    src: &'e Source<'e>,
    /// `steps[N].schedule`.
    key: String,
    errors: &'e mut Vec<StudyError>,
    /// Problems found so far.
    found: usize,
}

impl Problems<'_> {
    /// A problem with `k` (a key under the schedule's; empty for the schedule itself).
    fn err(&mut self, at: Option<Range<usize>>, k: &str, message: String) {
        self.found += 1;
        let full = if k.is_empty() {
            self.key.clone()
        } else {
            format!("{}.{k}", self.key)
        };
        self.errors.push(self.src.error(at, full, message));
    }
}

/// A named shape's table of every group's shares.
type ShapeTable = &'static [[f64; 10]];

/// Validates `[steps.schedule]`; None (with the problems in `errors`) when it is not valid.
pub(crate) fn parse(
    src: &Source,
    raw: &Spanned<RawSchedule>,
    step: &StepFacts<'_>,
    errors: &mut Vec<StudyError>,
) -> Option<Schedule> {
    let key = format!("{}.schedule", step.key);
    let span = raw.span();
    let raw = raw.get_ref();
    let before = errors.len();
    let closed = raw.total_workers.is_some();
    workload_conflicts(src, &key, step, closed, errors);
    let found = errors.len() - before;
    let mut p = Problems {
        src,
        key,
        errors,
        found,
    };
    check_totals(&mut p, raw, &span, closed);
    let (phase, quick_phase) = phases(&mut p, raw, step);
    if !step.together {
        p.err(
            Some(span.clone()),
            "",
            "a schedule's groups run at the same time: set `together = true` on the step".into(),
        );
    }
    if raw.groups.is_empty() {
        p.err(
            Some(span.clone()),
            "groups",
            "list at least one group ([[steps.schedule.groups]] with name, targets, shares)".into(),
        );
    }
    let shape_table = shape_table(&mut p, raw);
    let moving_average_phases = moving_average_phases(&mut p, raw);
    if let Some(l) = &raw.latency_limit
        && l.get_ref().0.is_zero()
    {
        p.err(
            Some(l.span()),
            "latency-limit",
            "latency-limit is how late an intended start may be and still be sent: above 0s (leave it out to send every start)".into(),
        );
    }
    let phase_count = match shape_table {
        Some(t) => t[0].len(),
        None => raw
            .groups
            .first()
            .and_then(|g| g.get_ref().shares.as_ref())
            .map_or(0, |s| s.get_ref().len()),
    };
    let groups = groups(&mut p, raw, step, shape_table, phase_count);
    check_every_target_grouped(&mut p, step, &groups, &span);
    if p.found == 0 && shape_table.is_none() {
        check_share_sums(&mut p, raw, &groups, phase_count);
    }
    check_table_fits(&mut p, raw, step, phase, phase_count);
    (p.errors.len() == before).then_some(Schedule {
        total_rate_ops: raw.total_rate_ops.as_ref().map(|r| *r.get_ref()),
        total_workers: raw.total_workers.as_ref().map(|w| *w.get_ref()),
        phase: Dur(phase),
        quick_phase: Dur(quick_phase),
        groups,
        shape: raw.shape.as_ref().map(|s| s.get_ref().clone()),
        moving_average_phases,
        latency_limit: raw.latency_limit.as_ref().map(|l| *l.get_ref()),
    })
}

/// The workload's own rate, or its threads under a closed loop, clash with the schedule:
/// the errors are the workload's keys.
fn workload_conflicts(
    src: &Source,
    key: &str,
    step: &StepFacts<'_>,
    closed: bool,
    errors: &mut Vec<StudyError>,
) {
    if let Some((wkey, at)) = &step.workload_rate {
        errors.push(src.error(
            at.clone(),
            wkey.clone(),
            if closed {
                format!(
                    "the step `{}` has a closed-loop schedule ([{key}] with total-workers): its workers run back to back, so remove this rate from the workload",
                    step.key
                )
            } else {
                format!(
                    "the step `{}` has a rate schedule ([{key}]), which sets every target's rate: remove this rate from the workload",
                    step.key
                )
            },
        ));
    }
    if closed && let Some((wkey, at)) = &step.workload_threads {
        errors.push(src.error(
            at.clone(),
            wkey.clone(),
            format!(
                "the step `{}` has a closed-loop schedule ([{key}] with total-workers), which sets every target's threads per phase: remove `threads` from the workload",
                step.key
            ),
        ));
    }
}

/// One of total-rate-ops (open loop) and total-workers (closed loop), valid; no
/// latency-limit under a closed loop.
fn check_totals(p: &mut Problems, raw: &RawSchedule, span: &Range<usize>, closed: bool) {
    match (&raw.total_rate_ops, &raw.total_workers) {
        (Some(r), Some(_)) => p.err(
            Some(r.span()),
            "total-rate-ops",
            "give either total-rate-ops (open loop: operations per second of all groups together) or total-workers (closed loop: workers active in every phase), not both".into(),
        ),
        (None, None) => p.err(
            Some(span.clone()),
            "total-rate-ops",
            "give total-rate-ops (open loop: operations per second of all groups together) or total-workers (closed loop: workers active in every phase)".into(),
        ),
        (Some(r), None) => {
            let total = *r.get_ref();
            if !(total.is_finite() && total > 0.0) {
                p.err(
                    Some(r.span()),
                    "total-rate-ops",
                    "total-rate-ops is the operations per second of all groups together: above 0"
                        .into(),
                );
            }
        }
        (None, Some(w)) => {
            if *w.get_ref() == 0 {
                p.err(
                    Some(w.span()),
                    "total-workers",
                    "total-workers is the workers active in every phase, all groups together: at least 1".into(),
                );
            }
        }
    }
    if closed && let Some(l) = &raw.latency_limit {
        p.err(
            Some(l.span()),
            "latency-limit",
            "latency-limit skips an open loop's late intended starts; a closed-loop schedule (total-workers) has none: remove it".into(),
        );
    }
}

/// `phase` (a whole number of timeline intervals) and `quick-phase` (one second unless
/// given), checked.
fn phases(p: &mut Problems, raw: &RawSchedule, step: &StepFacts<'_>) -> (Duration, Duration) {
    let phase = raw.phase.get_ref().0;
    if phase.is_zero() {
        p.err(
            Some(raw.phase.span()),
            "phase",
            "a phase lasts more than 0s".into(),
        );
    } else if !phase
        .as_nanos()
        .is_multiple_of(step.interval.as_nanos().max(1))
    {
        p.err(
            Some(raw.phase.span()),
            "phase",
            format!(
                "a phase is a whole number of timeline intervals (the study's `interval`, {}), so that each phase's figures come from its own intervals",
                storlab_model::units::format_duration(step.interval)
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
        p.err(
            Some(q.span()),
            "quick-phase",
            "quick-phase is at least 100ms (ten timeline intervals of 10ms)".into(),
        );
    }
    (phase, quick_phase)
}

/// The table of a named `shape`, which gives every group's shares.
fn shape_table(p: &mut Problems, raw: &RawSchedule) -> Option<ShapeTable> {
    match &raw.shape {
        None => None,
        Some(sh) if sh.get_ref() == "hci-elastic" => {
            if raw.groups.len() != HCI_ELASTIC.len() {
                p.err(
                    Some(sh.span()),
                    "shape",
                    format!(
                        "the shape `hci-elastic` is a table for {} groups (10, 20, 30 and 40% on average); the schedule lists {}",
                        HCI_ELASTIC.len(),
                        raw.groups.len()
                    ),
                );
            }
            let table: &'static [[f64; 10]; 4] = &HCI_ELASTIC;
            Some(table)
        }
        Some(sh) => {
            p.err(
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
    }
}

/// `moving-average-phases`: windows of at least one phase; [1, 5] unless given.
fn moving_average_phases(p: &mut Problems, raw: &RawSchedule) -> Vec<u32> {
    match &raw.moving_average_phases {
        None => MOVING_AVERAGE_PHASES.to_vec(),
        Some(m) => {
            if m.get_ref().is_empty() {
                p.err(
                    Some(m.span()),
                    "moving-average-phases",
                    "list at least one window, in phases (the default is [1, 5])".into(),
                );
            }
            for w in m.get_ref() {
                if *w.get_ref() == 0 {
                    p.err(
                        Some(w.span()),
                        "moving-average-phases",
                        "a moving average's window is at least 1 phase".into(),
                    );
                }
            }
            m.get_ref().iter().map(|w| *w.get_ref()).collect()
        }
    }
}

/// The groups, each named once, with its targets (the step's, each in one group) and its
/// shares (its own or the shape's, one per phase).
fn groups(
    p: &mut Problems,
    raw: &RawSchedule,
    step: &StepFacts<'_>,
    shape_table: Option<ShapeTable>,
    phases: usize,
) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for (gi, g) in raw.groups.iter().enumerate() {
        let gk = format!("groups[{}]", gi + 1);
        let g = g.get_ref();
        let name = g.name.get_ref().clone();
        if groups.iter().any(|o| o.name == name) {
            p.err(
                Some(g.name.span()),
                &format!("{gk}.name"),
                format!("two groups are named `{name}`"),
            );
        }
        let targets = group_targets(p, &gk, g, &name, &groups, step);
        let shares = match (&g.shares, &raw.shape) {
            (Some(given), Some(_)) => {
                p.err(
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
                p.err(
                    Some(g.targets.span()),
                    &format!("{gk}.shares"),
                    "give the group's share of the total in each phase (`shares`), or a `shape` for the schedule".into(),
                );
                Vec::new()
            }
            (Some(given), None) => given_shares(p, &gk, given, phases),
        };
        groups.push(Group {
            name,
            targets,
            shares,
        });
    }
    groups
}

/// A group's targets: each one of the step's, in no earlier group, listed once.
fn group_targets(
    p: &mut Problems,
    gk: &str,
    g: &RawGroup,
    name: &str,
    groups: &[Group],
    step: &StepFacts<'_>,
) -> Vec<String> {
    let mut targets: Vec<String> = Vec::new();
    for t in g.targets.get_ref() {
        let t_name = t.get_ref();
        if !step.targets.contains(&t_name.as_str()) {
            p.err(
                Some(t.span()),
                &format!("{gk}.targets"),
                format!(
                    "`{t_name}` is not one of the step's targets ({})",
                    step.targets.join(", ")
                ),
            );
        } else if let Some(other) = groups.iter().find(|o| o.targets.contains(t_name)) {
            p.err(
                Some(t.span()),
                &format!("{gk}.targets"),
                format!(
                    "`{t_name}` is in two groups (`{}` and `{name}`): a target belongs to one group",
                    other.name
                ),
            );
        } else if targets.contains(t_name) {
            p.err(
                Some(t.span()),
                &format!("{gk}.targets"),
                format!("`{t_name}` is listed twice"),
            );
        }
        targets.push(t_name.clone());
    }
    if targets.is_empty() {
        p.err(
            Some(g.targets.span()),
            &format!("{gk}.targets"),
            "a group needs at least one target".into(),
        );
    }
    targets
}

/// A group's own `shares`: fractions from 0 to 1, one per phase of the first group.
fn given_shares(
    p: &mut Problems,
    gk: &str,
    given: &Spanned<Vec<Spanned<f64>>>,
    phases: usize,
) -> Vec<f64> {
    let given_shares = given.get_ref();
    for s in given_shares {
        if !(0.0..=1.0).contains(s.get_ref()) {
            p.err(
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
        p.err(
            Some(given.span()),
            &format!("{gk}.shares"),
            "give the group's share of the total in each phase".into(),
        );
    } else if shares.len() != phases {
        p.err(
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

/// Each of the step's targets belongs to a group.
fn check_every_target_grouped(
    p: &mut Problems,
    step: &StepFacts<'_>,
    groups: &[Group],
    span: &Range<usize>,
) {
    for t in &step.targets {
        if !groups.iter().any(|g| g.targets.iter().any(|n| n == t)) {
            p.err(
                Some(span.clone()),
                "groups",
                format!(
                    "the step's target `{t}` is in no group: each of the step's targets belongs to one group"
                ),
            );
        }
    }
}

/// Each phase's shares add up to 1 (checked only when the groups are otherwise valid).
fn check_share_sums(p: &mut Problems, raw: &RawSchedule, groups: &[Group], phases: usize) {
    for ph in 0..phases {
        let sum: f64 = groups.iter().map(|g| g.shares[ph]).sum();
        if (sum - 1.0).abs() > SHARE_TOLERANCE {
            let listed: Vec<String> = groups
                .iter()
                .map(|g| format!("{} {}", g.name, g.shares[ph]))
                .collect();
            p.err(
                raw.groups[0]
                    .get_ref()
                    .shares
                    .as_ref()
                    .map(|s| s.get_ref()[ph].span()),
                "groups[1].shares",
                format!(
                    "phase {}'s shares add up to {} ({}), not 1 (100%)",
                    ph + 1,
                    round(sum),
                    listed.join(" + ")
                ),
            );
        }
    }
}

/// The phase table fits in the step's `duration`, which a scheduled step must give.
fn check_table_fits(
    p: &mut Problems,
    raw: &RawSchedule,
    step: &StepFacts<'_>,
    phase: Duration,
    phases: usize,
) {
    match step.duration {
        Some(d) if !phase.is_zero() => {
            let table = phase * phases as u32;
            if table > d.0 {
                p.err(
                    Some(raw.phase.span()),
                    "phase",
                    format!(
                        "the phase table ({phases} phases of {}) lasts {}, longer than the step's duration ({}): shorten the phases or the table, or lengthen the step",
                        storlab_model::units::format_duration(phase),
                        storlab_model::units::format_duration(table),
                        storlab_model::units::format_duration(d.0)
                    ),
                );
            }
        }
        Some(_) => {}
        None => p.err(
            Some(step.span.clone()),
            "",
            "a scheduled step needs a `duration` (its phases are laid out over it)".into(),
        ),
    }
}
