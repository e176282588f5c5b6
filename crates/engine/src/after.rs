//! What a run's summary gets once its threads have ended: the marks of what happened during
//! it (events, steady state, schedule phases, processes stopped), the recovery around each
//! fault and the phases, from the stored timeline, and the events' warnings.

use super::RunError;
use super::events::{self, Failure, Processes, Recorded};
use super::steady::Detector;
use storlab_results::RunFolder;
use storlab_results::events::Event;
use storlab_results::summary::RunSummary;
use storlab_study::plan::RunPlan;

/// What the marks of a run are made of.
pub struct Marks<'a> {
    /// The step's events, before and during the run.
    pub recorded: &'a [Recorded],
    /// The start of measurement on the run clock, ns.
    pub measure_start_ns: u64,
    /// When the step ended, seconds from the start of measurement.
    pub stopped_at: f64,
    /// The steady-state detector, as the run left it.
    pub steady: Option<&'a Detector>,
}

impl Marks<'_> {
    /// Adds the events, steady state, the schedule's phases and the processes stopped at the
    /// step's end (stopping them) to the summary's marks, in time order.
    pub fn add(&self, run: &RunPlan, summary: &mut RunSummary, processes: &mut Processes) {
        summary.events.extend(events::to_summary(
            self.recorded,
            self.measure_start_ns,
            summary.measured_seconds,
        ));
        if let Some(d) = self.steady {
            let mut r = d.result(run.duration.map(|d| d.0.as_secs_f64()));
            r.cut_short =
                !r.reached && summary.status != storlab_results::summary::RunStatus::Complete;
            if let Some(t) = r.reached_after_seconds {
                summary
                    .events
                    .push(Event::mark(t, "steady-state", r.sentence()));
            }
            summary.steady_state = Some(r);
        }
        if let Some(s) = &run.schedule {
            let marks = storlab_results::schedule::phase_marks(s, summary.measured_seconds);
            summary.events.extend(marks);
        }
        for p in processes.stop(false) {
            summary.events.push(Event::mark(
                self.stopped_at,
                "process-stopped",
                format!(
                    "`{}` (pid {}) at the end of the step: {}",
                    p.name, p.pid, p.how
                ),
            ));
        }
        summary
            .events
            .sort_by(|a, b| a.time_seconds.total_cmp(&b.time_seconds));
    }
}

/// With events or a schedule: the recovery around each fault, the phases and the schedule's
/// figures, from the run's stored timeline.
pub fn add_recovery(
    run: &RunPlan,
    summary: &mut RunSummary,
    folder: &RunFolder,
) -> Result<(), RunError> {
    if run.events.is_empty() && run.schedule.is_none() {
        return Ok(());
    }
    let timeline = std::fs::read_to_string(folder.path.join("timeline.csv"))
        .map(|t| storlab_results::timeline::parse_timeline(&t))
        .map_err(|source| RunError::Results {
            path: folder.path.join("timeline.csv"),
            source,
        })?;
    let interval_s = run.interval.0.as_secs_f64();
    // The figures end with the step's duration: the sliver after it is the workers noticing
    // the end (a session stuck in a transaction then), not an outage nor a phase.
    let scheduled_s = run
        .duration
        .map_or(summary.measured_seconds, |d| d.0.as_secs_f64())
        .min(summary.measured_seconds);
    if !run.events.is_empty() {
        let mut outline = summary.outline();
        outline.measured_seconds = scheduled_s;
        let recovery =
            storlab_results::recovery::for_run(&outline, &timeline, interval_s, &run.events);
        let phases = storlab_results::phases::for_run(&outline, &timeline, interval_s);
        (summary.recovery, summary.phases) = (recovery, phases);
    }
    summary.schedule = run
        .schedule
        .as_ref()
        .map(|s| storlab_results::schedule::for_run(s, scheduled_s, &timeline, interval_s));
    Ok(())
}

/// A warning per event that did not go as planned; a failing event that stopped the step
/// makes the run partial.
pub fn event_warnings(summary: &mut RunSummary, recorded: &[Recorded], failure: Option<&Failure>) {
    for r in recorded {
        if r.status != storlab_results::events::EventStatus::Ok {
            summary.warnings.push(format!(
                "event `{}` ({}) {}: {}",
                r.name,
                r.action,
                r.status.name(),
                r.detail
            ));
        }
    }
    if let Some(f) = failure {
        for w in &mut summary.warnings {
            if w.starts_with("partial run:") {
                *w = w.replace(
                    "(interrupted)",
                    &format!("(stopped by event `{}`)", f.event),
                );
            }
        }
        summary.end_reason = storlab_record::EndReason::Error;
        summary.status = storlab_results::summary::RunStatus::Partial;
        summary.warnings.push(format!(
            "the step was stopped by its failing event `{}` (on-failure = \"{}\")",
            f.event,
            f.scope.name()
        ));
    }
}
