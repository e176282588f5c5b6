//! Sweep expansion: a validated step times its sweep points (the cartesian product of every
//! swept parameter's values), its target groups and its repetitions, into the plan's runs,
//! each point's workload checked against each target. Runs are counted before anything is
//! expanded, so a study whose sweeps multiply to millions of runs is refused at once, with the
//! count and the time it would take, instead of hanging `check`.

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

use toml::Spanned;

use super::plan::{RunPlan, RunTarget};
use super::{Source, StudyError, capability_problem, checks, value_text};
use storlab_model::OptionError;
use storlab_model::units::Dur;
use storlab_targets::TargetConfig;
use storlab_workload::Workload;

/// The most runs a study may expand to unless `--allow-large-plan` is given: at a few seconds
/// per run, already a day of measuring.
pub const MAX_RUNS: u64 = 10_000;

/// One of a step's targets, with where the study defines it.
pub(super) struct StepTarget {
    pub name: String,
    pub config: TargetConfig,
    /// The client host whose connections the target uses (`client`).
    pub client: String,
    /// The network namespace of its client (`[clients.NAME] netns`).
    pub netns: Option<std::path::PathBuf>,
    /// The ranks its workers run on in a distributed run (`[clients.NAME] rank`, `host`).
    pub pin: super::clients::Pin,
    /// The target's table in the study text.
    pub span: Range<usize>,
}

/// A step whose own keys are valid, ready to be counted and expanded.
pub(super) struct Step<'a> {
    /// 1-based position among the study's steps.
    pub number: usize,
    /// `steps[N]`, for error keys.
    pub key: String,
    pub span: Range<usize>,
    pub name: String,
    pub workload_name: String,
    pub workload_table: &'a toml::Table,
    pub workload_span: Range<usize>,
    /// `target-workloads`: targets that run another workload than `workload` in this step
    /// (fio's jobs of one group that do different I/O): target, workload name, its table and
    /// span.
    pub target_workloads: Vec<(String, String, &'a toml::Table, Range<usize>)>,
    /// Swept parameters that the workload type can sweep, each with at least one value, in
    /// file order.
    pub sweep: Vec<(&'a str, &'a Spanned<Vec<Spanned<toml::Value>>>)>,
    pub targets: Vec<StepTarget>,
    pub together: bool,
    /// `distinct-seeds`: each target after the step's first draws its own sequence (the
    /// run's seed mixed with the target's place in the step); else they all draw the same,
    /// so that they are compared on equal terms.
    pub distinct_seeds: bool,
    pub warmup: Dur,
    pub duration: Option<Dur>,
    /// `quick-duration`: the measurement under `--quick`.
    pub quick_duration: Option<Dur>,
    pub ops: Option<u64>,
    pub repetitions: u32,
    pub stop_on_error: bool,
    pub drop_caches: bool,
    pub stonewall: bool,
    pub events: Vec<super::events::EventPlan>,
    pub schedule: Option<super::schedule::Schedule>,
    pub steady_state: Option<super::steady::SteadyPlan>,
}

impl Step<'_> {
    /// Sweep points: the product of the swept parameters' value counts (saturating).
    fn points(&self) -> u64 {
        self.sweep.iter().fold(1u64, |n, (_, values)| {
            n.saturating_mul(values.get_ref().len() as u64)
        })
    }

    /// Runs per sweep point and repetition: one for the targets together, else one each.
    fn groups(&self) -> u64 {
        if self.together {
            1
        } else {
            self.targets.len() as u64
        }
    }

    /// The runs this step expands to (saturating), counted without expanding anything.
    pub fn run_count(&self) -> u64 {
        self.points()
            .saturating_mul(self.groups())
            .saturating_mul(u64::from(self.repetitions))
    }

    /// How the run count comes about, e.g. `4 queue-depth x 3 threads values x 2 targets x 3
    /// repetitions`.
    fn run_count_terms(&self) -> String {
        let mut terms: Vec<String> = self
            .sweep
            .iter()
            .map(|(param, values)| format!("{} {param} values", values.get_ref().len()))
            .collect();
        if !self.together {
            terms.push(plural(self.targets.len() as u64, "target"));
        }
        terms.push(plural(u64::from(self.repetitions), "repetition"));
        terms.join(" x ")
    }
}

/// The error refusing a study whose steps expand to more than `max_runs` runs, located at the
/// step with the most runs; None when the study is within the limit.
pub(super) fn refuse_large(src: &Source, steps: &[Step], max_runs: u64) -> Option<StudyError> {
    let total = steps
        .iter()
        .fold(0u64, |n, s| n.saturating_add(s.run_count()));
    if total <= max_runs {
        return None;
    }
    let biggest = steps.iter().max_by_key(|s| s.run_count())?;
    let mut timed_ns: u128 = 0;
    let mut untimed_runs: u64 = 0;
    for s in steps {
        match s.duration {
            Some(d) => {
                let per_run = (s.warmup.0 + d.0).as_nanos();
                timed_ns = timed_ns.saturating_add(per_run.saturating_mul(s.run_count() as u128));
            }
            None => untimed_runs = untimed_runs.saturating_add(s.run_count()),
        }
    }
    let estimate = if untimed_runs == total {
        "estimated duration: unbounded (every run is bounded by operations, not by time)"
            .to_string()
    } else if untimed_runs > 0 {
        format!(
            "estimated duration: {} (warm-up + duration of each timed run), plus {} bounded by operations, whose length is not known before they run",
            long_duration(timed_ns),
            plural(untimed_runs, "run")
        )
    } else {
        format!(
            "estimated duration: {} (warm-up + duration of each run)",
            long_duration(timed_ns)
        )
    };
    Some(src.error(
        Some(biggest.span.clone()),
        biggest.key.clone(),
        format!(
            "the study expands to {} runs, above the limit of {}: this step alone is {} runs ({}); {estimate}. Nothing was expanded: narrow the sweeps, or pass --allow-large-plan to go on",
            thousands(total),
            thousands(max_runs),
            thousands(biggest.run_count()),
            biggest.run_count_terms()
        ),
    ))
}

/// `target-workloads` of a step, checked: each target is one of the step's, each workload
/// one the study defines. A workload that failed its own checks is left out without a second
/// error.
pub(super) fn target_workloads<'a>(
    src: &Source,
    s: &super::RawStep,
    step_key: &str,
    workloads: &'a BTreeMap<String, (toml::Table, Range<usize>)>,
    defined: &BTreeMap<String, Spanned<toml::Table>>,
    errors: &mut Vec<StudyError>,
) -> Vec<(String, String, &'a toml::Table, Range<usize>)> {
    let mut out = Vec::new();
    for (target, workload) in &s.target_workloads {
        let key = format!("{step_key}.target-workloads.{target}");
        if !s.targets.get_ref().iter().any(|t| t.get_ref() == target) {
            let names: Vec<&str> = s
                .targets
                .get_ref()
                .iter()
                .map(|t| t.get_ref().as_str())
                .collect();
            errors.push(src.error(
                Some(workload.span()),
                key,
                format!(
                    "`{target}` is not one of this step's targets ({}): list it in `targets` first",
                    names.join(", ")
                ),
            ));
            continue;
        }
        match workloads.get(workload.get_ref()) {
            Some((table, span)) => out.push((
                target.clone(),
                workload.get_ref().clone(),
                table,
                span.clone(),
            )),
            None if defined.contains_key(workload.get_ref()) => {}
            None => {
                let names: Vec<&String> = defined.keys().collect();
                errors.push(src.error(
                    Some(workload.span()),
                    key,
                    format!(
                        "no workload named `{}` (defined: {})",
                        workload.get_ref(),
                        super::list(&names)
                    ),
                ))
            }
        }
    }
    out
}

/// One sweep point: a value for each swept parameter.
type Point<'a> = Vec<(&'a str, &'a Spanned<toml::Value>)>;

/// A workload of a step: its name, its table and where it is written.
type Named<'a> = (&'a str, &'a toml::Table, &'a Range<usize>);

/// A sweep point that expands: its number (from 1), its parameters as text and the
/// workloads (by name) at that point.
type PointRuns<'a> = (usize, BTreeMap<String, String>, Vec<(&'a str, Workload)>);

/// Expands `step` into runs appended to `runs` (numbered on from its length); every problem
/// of a sweep point's workload, or of a target with it, goes to `errors` once.
pub(super) fn expand(
    src: &Source,
    step: &Step,
    interval: Dur,
    runs: &mut Vec<RunPlan>,
    errors: &mut Vec<StudyError>,
) {
    let named = step.named_workloads();
    let mut point_runs = Vec::new();
    for (point_index, point) in step.points_of_sweep().iter().enumerate() {
        let Some(workloads) = point_workloads(src, step, &named, point, errors) else {
            continue;
        };
        check_targets(src, step, &named, point, &workloads, errors);
        let parameters: BTreeMap<String, String> = point
            .iter()
            .map(|(p, v)| ((*p).to_string(), value_text(v.get_ref())))
            .collect();
        point_runs.push((point_index + 1, parameters, workloads));
    }
    push_runs(step, interval, &point_runs, runs);
}

fn push_once(errors: &mut Vec<StudyError>, err: StudyError) {
    if !errors.contains(&err) {
        errors.push(err);
    }
}

impl<'a> Step<'a> {
    /// Sweep points: the cartesian product of every swept parameter's values.
    fn points_of_sweep(&self) -> Vec<Point<'a>> {
        let mut points: Vec<Point<'a>> = vec![Vec::new()];
        for (param, values) in &self.sweep {
            points = points
                .into_iter()
                .flat_map(|p| {
                    values.get_ref().iter().map(move |v| {
                        let mut p = p.clone();
                        p.push((*param, v));
                        p
                    })
                })
                .collect();
        }
        points
    }

    /// The workloads of the step: its own, then each other one a target runs.
    fn named_workloads(&self) -> Vec<Named<'_>> {
        let mut named: Vec<Named<'_>> = vec![(
            &self.workload_name,
            self.workload_table,
            &self.workload_span,
        )];
        for (_, name, table, span) in &self.target_workloads {
            if !named.iter().any(|(n, _, _)| n == name) {
                named.push((name, table, span));
            }
        }
        named
    }

    /// The name of the workload `target` runs.
    fn workload_of(&self, target: &str) -> &str {
        self.target_workloads
            .iter()
            .find(|(t, ..)| t == target)
            .map(|(_, w, ..)| w.as_str())
            .unwrap_or(&self.workload_name)
    }
}

/// Each named workload with the point's values; None (with the error) when one is not valid.
fn point_workloads<'n>(
    src: &Source,
    step: &Step,
    named: &[Named<'n>],
    point: &Point,
    errors: &mut Vec<StudyError>,
) -> Option<Vec<(&'n str, Workload)>> {
    let mut workloads: Vec<(&str, Workload)> = Vec::new();
    for (name, wtable, wspan) in named {
        let mut table = (*wtable).clone();
        for (param, value) in point {
            table.insert((*param).to_string(), value.get_ref().clone());
        }
        match Workload::from_table(table) {
            Ok(w) => workloads.push((name, w)),
            Err(OptionError { key, message }) => {
                // Blame the swept value if the bad key is swept, else the workload.
                let at = point.iter().find(|(p, _)| *p == key).map(|(_, v)| v.span());
                let err = match at {
                    Some(span) => {
                        src.error(Some(span), format!("{}.sweep.{key}", step.key), message)
                    }
                    None => src.error(
                        src.locate_workload_key(wspan, name, &key),
                        format!("workloads.{name}.{key}"),
                        message,
                    ),
                };
                push_once(errors, err);
                return None;
            }
        }
    }
    Some(workloads)
}

/// Checks each target's workload at a point against what the target can do and the room it
/// has.
fn check_targets(
    src: &Source,
    step: &Step,
    named: &[Named],
    point: &Point,
    workloads: &[(&str, Workload)],
    errors: &mut Vec<StudyError>,
) {
    for t in &step.targets {
        let name = step.workload_of(&t.name);
        let Some((_, workload)) = workloads.iter().find(|(n, _)| *n == name) else {
            continue;
        };
        let (_, _, wspan) = named.iter().find(|(n, ..)| *n == name).unwrap_or(&named[0]);
        if let Some((key, message)) = capability_problem(&t.config, workload) {
            let at = point.iter().find(|(p, _)| *p == key).map(|(_, v)| v.span());
            let err = src.error(
                at.or_else(|| src.locate_in(wspan, key)),
                format!("targets.{}", t.name),
                message,
            );
            push_once(errors, err);
        }
        if let Some((key, message)) = checks::region_problem(&t.config, workload, name) {
            let err = src.error(
                src.locate_in(&t.span, key),
                format!("targets.{}.{key}", t.name),
                message,
            );
            push_once(errors, err);
        }
    }
}

/// The runs of the step: each repetition of each point, for the targets together or one
/// by one.
fn push_runs(step: &Step, interval: Dur, point_runs: &[PointRuns], runs: &mut Vec<RunPlan>) {
    for repetition in 1..=step.repetitions.max(1) {
        for (point_number, parameters, workloads) in point_runs {
            let groups: Vec<Vec<&StepTarget>> = if step.together {
                vec![step.targets.iter().collect()]
            } else {
                step.targets.iter().map(|t| vec![t]).collect()
            };
            for group in groups {
                runs.push(RunPlan {
                    index: runs.len() + 1,
                    step: step.name.clone(),
                    repetition,
                    parameters: parameters.clone(),
                    warmup: step.warmup,
                    duration: step.duration,
                    quick_duration: step.quick_duration,
                    ops: step.ops,
                    stop_on_error: step.stop_on_error,
                    drop_caches: step.drop_caches,
                    stonewall: step.stonewall,
                    events: step.events.clone(),
                    interval,
                    schedule: step.schedule.clone(),
                    steady_state: step.steady_state,
                    reference_target: None,
                    targets: group
                        .into_iter()
                        .map(|t| run_target(step, t, workloads, *point_number, repetition))
                        .collect(),
                });
            }
        }
    }
}

/// Target `t` in a run of point `point_number`, repetition `repetition`.
fn run_target(
    step: &Step,
    t: &StepTarget,
    workloads: &[(&str, Workload)],
    point_number: usize,
    repetition: u32,
) -> RunTarget {
    let workload_name = step.workload_of(&t.name);
    let workload = workloads
        .iter()
        .find(|(n, _)| *n == workload_name)
        .map(|(_, w)| w)
        .unwrap_or(&workloads[0].1);
    RunTarget {
        name: t.name.clone(),
        config: t.config.clone(),
        client: t.client.clone(),
        netns: t.netns.clone(),
        pin: t.pin.clone(),
        workload_name: workload_name.to_string(),
        // A closed-loop schedule sets the threads: the most the target has active in a
        // phase.
        workload: match step
            .schedule
            .as_ref()
            .and_then(|s| s.total_workers.and(s.target_threads(&t.name)))
        {
            Some(threads) => workload.with_threads(threads),
            None => workload.clone(),
        },
        seed: target_seed(
            step,
            t,
            workload.run_seed(step.number, point_number, repetition),
        ),
    }
}

/// The run's seed for target `t`: the workload's run seed, mixed with the target's place in
/// the step after the first when the step has `distinct-seeds`.
fn target_seed(step: &Step, t: &StepTarget, run_seed: u64) -> u64 {
    match step.targets.iter().position(|x| x.name == t.name) {
        Some(place) if step.distinct_seeds && place > 0 => {
            storlab_model::seed::mix_seed(run_seed, &[0xd157_1ac7, place as u64])
        }
        _ => run_seed,
    }
}

fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{} {what}s", thousands(n))
    }
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration of any length, rounded to what matters: `3h25m0s`, `41 days 16 hours`, `12,345
/// years`.
fn long_duration(ns: u128) -> String {
    let s = u64::try_from(ns / 1_000_000_000).unwrap_or(u64::MAX);
    const DAY: u64 = 86_400;
    const YEAR: u64 = 365 * DAY;
    if s >= 10 * YEAR {
        format!("{} years", thousands(s / YEAR))
    } else if s >= 2 * DAY {
        format!("{} days {} hours", s / DAY, (s % DAY) / 3600)
    } else {
        storlab_model::units::format_duration(Duration::from_secs(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_durations_read_well() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_010_000), "1,010,000");
        assert_eq!(long_duration(90 * 1_000_000_000), "1m30s");
        assert_eq!(
            long_duration(1_000_000u128 * 31 * 1_000_000_000),
            "358 days 19 hours"
        );
        assert_eq!(long_duration(u128::MAX), "584,942,417,355 years");
    }

    const FILL_THEN_READ: &str = r#"
[targets.a]
type = "null"
[targets.b]
type = "null"

[workloads.fill]
type = "db-bench"
benchmark = "fillrandom"
[workloads.read]
type = "db-bench"
benchmark = "readrandom"

[[steps]]
workload = "fill"
targets = ["a", "b"]
ops = 10
[[steps]]
workload = "read"
targets = ["a", "b"]
ops = 10
repetitions = 2
sweep.threads = [1, 2]
"#;

    #[test]
    fn each_run_has_its_own_seed_and_the_same_study_the_same_seeds() {
        let plan = crate::parse("s.toml", FILL_THEN_READ).unwrap();
        let seeds: Vec<u64> = plan.runs.iter().map(|r| r.targets[0].seed).collect();
        // fill on a, fill on b; read x 2 points x 2 repetitions, on a then b.
        assert_eq!(seeds.len(), 10);
        let again: Vec<u64> = crate::parse("s.toml", FILL_THEN_READ)
            .unwrap()
            .runs
            .iter()
            .map(|r| r.targets[0].seed)
            .collect();
        assert_eq!(seeds, again);
        // The targets of one step, point and repetition share a seed; nothing else does.
        let mut distinct: Vec<u64> = seeds.chunks(2).map(|pair| pair[0]).collect();
        assert!(seeds.chunks(2).all(|pair| pair[0] == pair[1]), "{seeds:?}");
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 5, "{seeds:?}");
        // The study's seed moves them all; the workload's seed stays as written.
        let seeded = crate::parse("s.toml", &format!("seed = 7\n{FILL_THEN_READ}")).unwrap();
        assert!(
            seeded
                .runs
                .iter()
                .zip(&seeds)
                .all(|(r, s)| r.targets[0].seed != *s)
        );
        match &seeded.runs[0].targets[0].workload {
            Workload::DbBench(w) => assert_eq!(w.seed, 7),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn distinct_seeds_give_each_target_after_the_first_its_own_sequence() {
        let together = FILL_THEN_READ.replace(
            "ops = 10\n[[steps]]",
            "ops = 10\ntogether = true\n[[steps]]",
        );
        let seeds = |text: &str| -> Vec<u64> {
            let plan = crate::parse("s.toml", text).unwrap();
            plan.runs[0].targets.iter().map(|t| t.seed).collect()
        };
        let same = seeds(&together);
        assert_eq!(same.len(), 2);
        assert_eq!(same[0], same[1]);
        let own =
            seeds(&together.replace("together = true", "together = true\ndistinct-seeds = true"));
        // The first target keeps the step's seed; the second draws its own.
        assert_eq!(own[0], same[0]);
        assert_ne!(own[1], same[1]);
    }
}
