//! The RAID brief's resilience part: runs on the array whose events ran during measurement
//! (a member failed, a rebuild started and was waited for), with what the array did phase by
//! phase (degraded, rebuilding, after), how long each event took, and what the verify pass
//! found afterwards. Read from the stored run summaries, never from live state.

use serde::{Deserialize, Serialize};

use crate::results::phases::Phase;
use crate::results::summary::RunSummary;

/// One event of a failure run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct FailureEvent {
    pub name: String,
    /// `exec`, `kill`, `wait-for`...
    pub action: String,
    pub status: String,
    /// Seconds from the start of measurement.
    pub start_seconds: f64,
    /// How long it took (for `wait-for`: until its command succeeded, e.g. a rebuild).
    pub duration_seconds: f64,
}

/// What the verify pass after the run found on the array, block counts by class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct VerifyCounts {
    pub checked: u64,
    pub intact: u64,
    pub lost: u64,
    pub torn: u64,
    pub misplaced: u64,
    pub foreign: u64,
    pub unreadable: u64,
    /// Blocks whose last write failed (an error the array returned): their content is
    /// unknown, they are not checked.
    pub not_checked_failed_writes: u64,
}

/// A run on the array with events during measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct FailureRun {
    pub step: String,
    pub run_index: usize,
    /// The array target's workload, its whole-run rate and its failed operations.
    pub workload: String,
    pub rate_ops: f64,
    pub errors: u64,
    pub events: Vec<FailureEvent>,
    pub phases: Vec<Phase>,
    /// None: the workload did not verify its writes.
    pub verify: Option<VerifyCounts>,
}

/// The failure runs of `array` among `summaries`, in run order.
pub fn failures(array: &str, summaries: &[RunSummary]) -> Vec<FailureRun> {
    summaries
        .iter()
        .filter_map(|s| {
            let target = s.targets.iter().find(|t| t.name == array)?;
            let events: Vec<FailureEvent> = s
                .events
                .iter()
                .filter_map(|e| {
                    let o = e.outcome.as_ref()?;
                    (o.start_ns >= 0).then(|| FailureEvent {
                        name: o.name.clone(),
                        action: e.kind.clone(),
                        status: o.status.name().to_string(),
                        start_seconds: o.start_ns as f64 / 1e9,
                        duration_seconds: o.duration_seconds,
                    })
                })
                .collect();
            if events.is_empty() {
                return None;
            }
            let verify = match target.verify.as_ref() {
                Some(crate::verify::Verified::Block(v)) => Some(v),
                _ => None,
            }
            .map(|v| VerifyCounts {
                checked: v.blocks_checked,
                intact: v.intact.blocks,
                lost: v.lost.blocks,
                torn: v.torn.blocks,
                misplaced: v.misplaced.blocks,
                foreign: v.foreign.blocks,
                unreadable: v.unreadable.blocks,
                not_checked_failed_writes: v.skipped_failed_writes,
            });
            Some(FailureRun {
                step: s.step.clone(),
                run_index: s.run_index,
                workload: target.workload.clone(),
                rate_ops: target.rate_ops,
                errors: target.errors,
                events,
                phases: s.phases.clone(),
                verify,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::phases::tests::event;
    use crate::results::summary::{Event, EventStatus};

    #[test]
    fn only_array_runs_with_events_during_measurement() {
        let cmp = |i, target: &str| {
            crate::results::comparison::tests::summary(i, "s", &[], &[(target, 100.0, 1000)])
        };
        // Run 1: the array, made by a before-step event only. Run 2: a member failed and a
        // rebuild was waited for. Run 3: another target with events.
        let mut before = cmp(1, "array");
        before
            .events
            .push(event("make-array", -3.0, -2.0, EventStatus::Ok));
        let mut failed = cmp(2, "array");
        failed.events.push(Event::mark(0.0, "measure-start", ""));
        failed
            .events
            .push(event("fail-member", 1.0, 1.01, EventStatus::Ok));
        let mut rebuild = event("rebuild", 2.0, 4.5, EventStatus::Ok);
        rebuild.kind = "wait-for".into();
        failed.events.push(rebuild);
        let mut other = cmp(3, "m0");
        other.events = failed.events.clone();
        let f = failures("array", &[before, failed, other]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].run_index, 2);
        let names: Vec<(&str, &str, f64)> = f[0]
            .events
            .iter()
            .map(|e| {
                (
                    &*e.name,
                    &*e.action,
                    (e.duration_seconds * 1e6).round() / 1e6,
                )
            })
            .collect();
        assert_eq!(
            names,
            [("fail-member", "exec", 0.01), ("rebuild", "wait-for", 2.5)]
        );
        assert_eq!(f[0].verify, None);
    }
}
