//! The RAID brief's resilience part: runs on the array whose events ran during measurement
//! (a member failed, a rebuild started and was waited for), with what the array did phase by
//! phase (degraded, rebuilding, after), how long each event took, and what the verify pass
//! found afterwards; and runs on one of the array's exports (`[raid] exports`: its filesystem
//! served over NFS by the node that owns it) with events: a node failover, with the outage
//! and recovery its clients saw. Read from the stored run summaries, never from live state.

use serde::{Deserialize, Serialize};

use crate::phases::Phase;
use crate::summary::RunSummary;
use storlab_model::raid::Geometry;

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
    /// What its command printed (the first bytes kept with the event): a cluster's fencing
    /// log, the seconds a failback took.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output: String,
}

/// What the verify pass after the run found on the array, block counts by class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct VerifyCounts {
    pub checked: u64,
    pub intact: u64,
    /// Acknowledged writes not found: the three below together.
    pub lost: u64,
    /// Of `lost`: writes that were synced (or written synchronously) before any crash: a
    /// promise the storage broke.
    #[serde(default)]
    pub lost_durable: u64,
    /// Of `lost`: writes acknowledged but not yet synced when a power-off or SIGKILL came
    /// (POSIX lets a crash lose them).
    #[serde(default)]
    pub lost_unsynced: u64,
    /// Of `lost`: writes not yet synced, lost with no crash before the pass.
    #[serde(default)]
    pub lost_while_up: u64,
    pub torn: u64,
    pub misplaced: u64,
    pub foreign: u64,
    pub unreadable: u64,
    /// Blocks whose last write failed (an error the array returned): their content is
    /// unknown, they are not checked.
    pub not_checked_failed_writes: u64,
}

/// What failed: decided by the run's target, the array itself or one of its exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    /// A run on the array: its events fail a member, rebuild it.
    #[default]
    MemberFailure,
    /// A run on an export of the array: its events take the serving node down and serve the
    /// array from another.
    NodeFailover,
}

impl FailureKind {
    pub fn title(self) -> &'static str {
        match self {
            FailureKind::MemberFailure => "Member failure and rebuild",
            FailureKind::NodeFailover => "Node failover",
        }
    }
}

/// A run on the array (or an export of it) with events during measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct FailureRun {
    /// Stored before node failovers were told apart: a member failure.
    #[serde(default)]
    pub kind: FailureKind,
    pub step: String,
    pub run_index: usize,
    /// The target the run drove: the array, or the export.
    #[serde(default)]
    pub target: String,
    /// The array target's workload, its whole-run rate and its failed operations.
    pub workload: String,
    pub rate_ops: f64,
    pub errors: u64,
    pub events: Vec<FailureEvent>,
    pub phases: Vec<Phase>,
    /// The outage and recovery around each event with `recovery` on (a node lost: how long
    /// no operation succeeded, when they succeeded again, when throughput was back).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recovery: Vec<crate::recovery::Recovery>,
    /// None: the workload did not verify its writes.
    pub verify: Option<VerifyCounts>,
}

/// The failure runs of the array (and of its exports) among `summaries`, in run order.
pub fn failures(geometry: &Geometry, summaries: &[RunSummary]) -> Vec<FailureRun> {
    summaries
        .iter()
        .filter_map(|s| {
            let (target, kind) = s.targets.iter().find_map(|t| {
                if t.name == geometry.array {
                    Some((t, FailureKind::MemberFailure))
                } else if geometry.exports.contains(&t.name) {
                    Some((t, FailureKind::NodeFailover))
                } else {
                    None
                }
            })?;
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
                        output: o.stdout.trim_end().to_string(),
                    })
                })
                .collect();
            if events.is_empty() {
                return None;
            }
            let verify = match target.verify.as_ref() {
                Some(storlab_verify::Verified::Block(v)) => Some(v),
                _ => None,
            }
            .map(|v| VerifyCounts {
                checked: v.blocks_checked,
                intact: v.intact.blocks,
                lost: v.lost.blocks,
                lost_durable: v.lost_durable.blocks,
                lost_unsynced: v.lost_unsynced.blocks,
                lost_while_up: v.lost_while_up.blocks,
                torn: v.torn.blocks,
                misplaced: v.misplaced.blocks,
                foreign: v.foreign.blocks,
                unreadable: v.unreadable.blocks,
                not_checked_failed_writes: v.skipped_failed_writes,
            });
            Some(FailureRun {
                kind,
                step: s.step.clone(),
                run_index: s.run_index,
                target: target.name.clone(),
                workload: target.workload.clone(),
                rate_ops: target.rate_ops,
                errors: target.errors,
                events,
                phases: s.phases.clone(),
                recovery: s.recovery.clone(),
                verify,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Event, EventStatus};
    use crate::phases::tests::event;

    fn geometry() -> Geometry {
        Geometry {
            level: storlab_model::raid::Level::Raid6,
            members: vec!["m0".into(), "m1".into(), "m2".into(), "m3".into()],
            array: "array".into(),
            strip_bytes: None,
            array_load: Default::default(),
            exports: vec!["array-nfs".into()],
        }
    }

    #[test]
    fn only_array_runs_with_events_during_measurement() {
        let cmp = |i, target: &str| crate::fixtures::summary(i, "s", &[], &[(target, 100.0, 1000)]);
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
        let f = failures(&geometry(), &[before, failed, other]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].run_index, 2);
        assert_eq!(f[0].kind, FailureKind::MemberFailure);
        assert_eq!(f[0].target, "array");
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

    #[test]
    fn a_run_on_an_export_with_events_is_a_node_failover_with_its_recovery() {
        let mut s = crate::fixtures::summary(1, "s", &[], &[("array-nfs", 100.0, 1000)]);
        s.events
            .push(event("node-a-power-off", 1.0, 1.01, EventStatus::Ok));
        s.events
            .push(event("node-b-takeover", 1.01, 1.4, EventStatus::Ok));
        // 100 ops per 100 ms, none from 1.0 s to 1.5 s, then back.
        let mut iv = vec![(100, 0); 10];
        iv.extend([(0, 3); 5]);
        iv.extend([(100, 0); 10]);
        let timeline = crate::recovery::tests::timeline_with(&iv, "connection");
        s.recovery.push(crate::recovery::recovery(
            &timeline,
            &["a".to_string()],
            0.1,
            2.5,
            "node-a-power-off",
            crate::recovery::RecoveryAsk {
                event_seconds: 1.0,
                baseline_seconds: 1.0,
                recovered_within: 0.05,
                settle_seconds: 0.3,
            },
        ));
        let f = failures(&geometry(), &[s]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].kind, FailureKind::NodeFailover);
        assert_eq!(f[0].target, "array-nfs");
        assert_eq!(f[0].recovery.len(), 1, "{f:?}");
        assert!(
            (f[0].recovery[0].outage_seconds - 0.5).abs() < 1e-9,
            "{f:?}"
        );
        // Stored before the kind existed: a member failure.
        let mut old = serde_json::to_value(&f[0]).unwrap();
        old.as_object_mut().unwrap().remove("kind");
        let old: FailureRun = serde_json::from_value(old).unwrap();
        assert_eq!(old.kind, FailureKind::MemberFailure);
    }
}
