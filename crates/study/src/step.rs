//! One `[[steps]]` table checked against the study's declarations: its name, events,
//! workload and targets, its schedule and steady state, its bounds and repetitions, and its
//! swept parameters; the result is a [`sweep::Step`] ready to be counted and expanded.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use toml::Spanned;

use super::clients::Client;
use super::declare::{Targets, Workloads};
use super::{RawStep, RawStudy, Source, StudyError, events, list, schedule, steady, sweep};
use storlab_model::units::Dur;
use storlab_workload::Workload;

/// What every step is checked against: the study's valid declarations and defaults.
pub(super) struct Declared<'a> {
    pub src: &'a Source<'a>,
    pub raw: &'a RawStudy,
    pub targets: &'a Targets,
    pub clients: &'a BTreeMap<String, Client>,
    pub workloads: &'a Workloads,
    /// The study's `repetitions`.
    pub repetitions: Option<u32>,
    /// The study's sampling interval.
    pub interval: Duration,
}

/// What the steps share as they are read one after another.
#[derive(Default)]
pub(super) struct StepsSoFar {
    /// Step names seen so far (two steps named alike is an error).
    pub names: HashSet<String>,
    /// Processes that events keep running from one step to the next.
    pub kept: events::KeptProcesses,
}

type Sweep<'a> = Vec<(&'a str, &'a Spanned<Vec<Spanned<toml::Value>>>)>;

impl<'a> Declared<'a> {
    /// Step `si` (0-based) checked; None when its workload is not a valid one (nothing else
    /// of it can be checked).
    pub fn step(
        &self,
        si: usize,
        step: &'a Spanned<RawStep>,
        so_far: &mut StepsSoFar,
        errors: &mut Vec<StudyError>,
    ) -> Option<sweep::Step<'a>> {
        let src = self.src;
        let step_span = step.span();
        let s = step.get_ref();
        let step_key = format!("steps[{}]", si + 1);
        let step_name = s
            .name
            .as_ref()
            .map(|n| n.get_ref().clone())
            .unwrap_or_else(|| s.workload.get_ref().clone());
        if !so_far.names.insert(step_name.clone()) && s.name.is_some() {
            errors.push(src.error(
                s.name.as_ref().map(|n| n.span()),
                format!("{step_key}.name"),
                format!("two steps are named `{step_name}`"),
            ));
        }
        let step_events = events::parse_events(
            src,
            &step_key,
            &s.events,
            s.duration.as_ref().map(|d| *d.get_ref()),
            &mut so_far.kept,
            errors,
        );
        let (wtable, wspan) = self.workload(s, &step_key, errors)?;
        let step_targets = self.step_targets(s, &step_key, errors);
        let target_workloads = sweep::target_workloads(
            src,
            s,
            &step_key,
            self.workloads,
            &self.raw.workloads,
            errors,
        );
        let schedule = s.schedule.as_ref().and_then(|raw| {
            let facts =
                schedule::StepFacts::of(src, step, &step_key, self.interval, (wtable, wspan));
            schedule::parse(src, raw, &facts, errors)
        });
        let steady_state = steady::parse_step(
            src,
            &step_key,
            steady::RawSteady {
                criterion: s.steady_state.as_ref(),
                seconds: s.steady_state_seconds.as_ref(),
                ramp_seconds: s.steady_state_ramp_seconds.as_ref(),
                duration: s.duration.as_ref(),
                step_span: step_span.clone(),
            },
            self.interval,
            errors,
        );
        // YCSB's operation count, a training workload's epochs, a checkpoint workload's
        // checkpoints.
        let bounded_by_workload = matches!(
            wtable.get("type").and_then(|t| t.as_str()),
            Some("ycsb" | "training" | "checkpoint")
        );
        check_bounds(src, step, &step_key, bounded_by_workload, errors);
        let reps = self.repetitions(s, &step_key, errors);
        let sweep = swept_parameters(src, s, &step_key, wtable, &target_workloads, errors);
        Some(sweep::Step {
            number: si + 1,
            key: step_key,
            span: step_span,
            name: step_name,
            workload_name: s.workload.get_ref().clone(),
            workload_table: wtable,
            workload_span: wspan.clone(),
            target_workloads,
            sweep,
            targets: step_targets,
            together: s.together,
            distinct_seeds: s.distinct_seeds,
            warmup: s
                .warmup
                .as_ref()
                .map(|w| *w.get_ref())
                .unwrap_or(Dur(Duration::ZERO)),
            duration: s.duration.as_ref().map(|d| *d.get_ref()),
            quick_duration: s.quick_duration.as_ref().map(|d| *d.get_ref()),
            ops: s.ops.as_ref().map(|o| *o.get_ref()),
            repetitions: reps.max(1),
            stop_on_error: s.stop_on_error,
            drop_caches: s.drop_caches,
            stonewall: s.stonewall,
            events: step_events,
            schedule,
            steady_state,
        })
    }

    /// The step's workload, when it is a valid one; a name the study does not define is an
    /// error (one defined but invalid already has its own).
    fn workload(
        &self,
        s: &RawStep,
        step_key: &str,
        errors: &mut Vec<StudyError>,
    ) -> Option<&'a (toml::Table, std::ops::Range<usize>)> {
        let found = self.workloads.get(s.workload.get_ref());
        if found.is_none() && !self.raw.workloads.contains_key(s.workload.get_ref()) {
            let names: Vec<&String> = self.raw.workloads.keys().collect();
            errors.push(self.src.error(
                Some(s.workload.span()),
                format!("{step_key}.workload"),
                format!(
                    "no workload named `{}` (defined: {})",
                    s.workload.get_ref(),
                    list(&names)
                ),
            ));
        }
        found
    }

    /// The step's valid targets, each with its client's namespace and pinning.
    fn step_targets(
        &self,
        s: &RawStep,
        step_key: &str,
        errors: &mut Vec<StudyError>,
    ) -> Vec<sweep::StepTarget> {
        let mut step_targets = Vec::new();
        if s.targets.get_ref().is_empty() {
            errors.push(self.src.error(
                Some(s.targets.span()),
                format!("{step_key}.targets"),
                "list at least one target",
            ));
        }
        for t in s.targets.get_ref() {
            match self.targets.get(t.get_ref()) {
                Some((config, client, span)) => step_targets.push(sweep::StepTarget {
                    name: t.get_ref().clone(),
                    config: config.clone(),
                    client: client.clone(),
                    netns: self.clients.get(client).and_then(|c| c.netns.clone()),
                    pin: self
                        .clients
                        .get(client)
                        .map(|c| c.pin.clone())
                        .unwrap_or_default(),
                    span: span.clone(),
                }),
                None if self.raw.targets.contains_key(t.get_ref()) => {}
                None => {
                    let names: Vec<&String> = self.raw.targets.keys().collect();
                    errors.push(self.src.error(
                        Some(t.span()),
                        format!("{step_key}.targets"),
                        format!(
                            "no target named `{}` (defined: {})",
                            t.get_ref(),
                            list(&names)
                        ),
                    ));
                }
            }
        }
        step_targets
    }

    /// The step's repetitions (its own, else the study's, else one), checked.
    fn repetitions(&self, s: &RawStep, step_key: &str, errors: &mut Vec<StudyError>) -> u32 {
        let reps = s
            .repetitions
            .as_ref()
            .map(|r| *r.get_ref())
            .or(self.repetitions)
            .unwrap_or(1);
        if let Some(r) = &s.repetitions
            && *r.get_ref() == 0
        {
            errors.push(self.src.error(
                Some(r.span()),
                format!("{step_key}.repetitions"),
                "repetitions must be at least 1",
            ));
        }
        reps
    }
}

/// A step is bounded by `duration`, `ops` or its workload (YCSB's operation count, training's
/// epochs, a checkpoint workload's checkpoints), and each
/// bound it sets is above 0.
fn check_bounds(
    src: &Source,
    step: &Spanned<RawStep>,
    step_key: &str,
    bounded_by_workload: bool,
    errors: &mut Vec<StudyError>,
) {
    let s = step.get_ref();
    if s.duration.is_none() && s.ops.is_none() && !bounded_by_workload {
        errors.push(src.error(Some(step.span()), step_key.to_string(), "a step needs a bound: `duration` (e.g. \"30s\"), `ops` (measured operations per target), or both"));
    }
    if let Some(d) = &s.duration
        && d.get_ref().0.is_zero()
    {
        errors.push(src.error(
            Some(d.span()),
            format!("{step_key}.duration"),
            "duration must be above 0",
        ));
    }
    if let Some(q) = &s.quick_duration {
        let within = s.duration.as_ref().map(|d| *d.get_ref());
        if q.get_ref().0.is_zero() || within.is_none_or(|d| q.get_ref().0 > d.0) {
            errors.push(src.error(
                Some(q.span()),
                format!("{step_key}.quick-duration"),
                "quick-duration is the step's measurement under --quick: above 0 and at most its `duration`",
            ));
        }
    }
    if let Some(o) = &s.ops
        && *o.get_ref() == 0
    {
        errors.push(src.error(
            Some(o.span()),
            format!("{step_key}.ops"),
            "ops must be above 0",
        ));
    }
}

/// Swept parameters, in file order: checked one by one here; their points are multiplied
/// out only once the whole study is known to be of a size that can be expanded.
fn swept_parameters<'a>(
    src: &Source,
    s: &'a RawStep,
    step_key: &str,
    wtable: &toml::Table,
    target_workloads: &[(String, String, &toml::Table, std::ops::Range<usize>)],
    errors: &mut Vec<StudyError>,
) -> Sweep<'a> {
    let mut sweep: Sweep<'a> = s.sweep.iter().map(|(k, v)| (k.as_str(), v)).collect();
    sweep.sort_by_key(|(_, v)| v.span().start);
    let sweepable = Workload::sweepable(wtable);
    sweep.retain(|(param, values)| {
        if let Some((_, w, _, _)) = target_workloads
            .iter()
            .find(|(_, _, t, _)| !Workload::sweepable(t).contains(param))
        {
            errors.push(src.error(Some(values.span()), format!("{step_key}.sweep.{param}"), format!("`{param}` cannot be swept: workload `{w}` (in target-workloads) has no such parameter")));
            return false;
        }
        if !sweepable.contains(param) {
            errors.push(src.error(Some(values.span()), format!("{step_key}.sweep.{param}"), format!("`{param}` is not a workload parameter that can be swept; expected one of {}", sweepable.join(", "))));
            return false;
        }
        if values.get_ref().is_empty() {
            errors.push(src.error(
                Some(values.span()),
                format!("{step_key}.sweep.{param}"),
                "a sweep needs at least one value",
            ));
            return false;
        }
        true
    });
    sweep
}
