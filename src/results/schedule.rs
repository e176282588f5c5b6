//! What a run with a rate schedule achieved, phase by phase and group by group: the measured
//! operations per second of each tenant group and its share of the total, beside what the
//! schedule asked, from the stored timeline (never from live state). A phase is made of the
//! timeline intervals that start inside it (the study checks that a phase is a whole number of
//! intervals, so none straddles two); the last one is cut at the end of measurement. Also the
//! phase changes as marks on the run's timeline.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::results::summary::Event;
use crate::results::timeline::Timeline;
use crate::study::schedule::Schedule;

/// A scheduled run's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ScheduleResult {
    /// What the schedule asked of all groups together, operations per second.
    pub total_rate_ops: f64,
    pub phase_seconds: f64,
    pub phases: Vec<SchedulePhase>,
}

/// One phase of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SchedulePhase {
    /// 1-based, counting on past the table.
    pub phase: usize,
    /// Its row of the table (1-based): the table repeats.
    pub table_phase: usize,
    /// Seconds from the start of measurement: where its intervals start and end.
    pub from_seconds: f64,
    pub to_seconds: f64,
    /// Successful operations of every group, and per second over the phase's measured length.
    pub ops: u64,
    pub rate_ops: f64,
    /// Measured rate over the scheduled total (1 = on target).
    pub rate_of_target: f64,
    pub groups: Vec<GroupPhase>,
}

/// One group in one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct GroupPhase {
    pub group: String,
    /// What the schedule asked: its share of the total and its rate.
    pub scheduled_share: f64,
    pub scheduled_rate_ops: f64,
    /// Successful operations of its targets in the phase, per second, and its share of the
    /// phase's measured total.
    pub ops: u64,
    pub rate_ops: f64,
    pub share: f64,
    /// Failed operations of its targets in the phase.
    pub errors: u64,
}

/// Per timeline interval: its start and length (seconds), and per target its successful and
/// failed operations.
type IntervalOps = BTreeMap<i64, (f64, f64, BTreeMap<String, (u64, u64)>)>;

/// The figures of a stored scheduled run, from its timeline, up to `measured` seconds (the
/// run's measured length: the sliver after it is the workers noticing the end).
pub fn for_run(
    schedule: &Schedule,
    measured: f64,
    timeline: &Timeline,
    interval_s: f64,
) -> ScheduleResult {
    let nominal = if interval_s > 0.0 { interval_s } else { 1.0 };
    let phase_s = schedule.phase.0.as_secs_f64();
    let mut intervals: IntervalOps = BTreeMap::new();
    for r in timeline.rows.iter().filter(|r| r.measured) {
        let start = r.second as f64 * nominal;
        let e = intervals
            .entry(r.second)
            .or_insert_with(|| (start, nominal, BTreeMap::new()));
        if let Some(len) = r.interval_s {
            e.1 = len;
        }
        let t = e.2.entry(r.target.clone()).or_default();
        t.0 += r.ops;
        t.1 += r.errors;
    }
    let mut phases: Vec<SchedulePhase> = Vec::new();
    let mut lengths: Vec<f64> = Vec::new();
    for (start, len, targets) in intervals.values() {
        if *start >= measured - 1e-9 {
            continue;
        }
        let len = (start + len).min(measured) - start;
        // The small epsilon keeps an interval that starts on a phase edge in the new phase.
        let p = ((start + 1e-9) / phase_s).floor() as usize;
        while phases.len() <= p {
            let n = phases.len();
            phases.push(SchedulePhase {
                phase: n + 1,
                table_phase: n % schedule.table_phases().max(1) + 1,
                from_seconds: n as f64 * phase_s,
                to_seconds: n as f64 * phase_s,
                ops: 0,
                rate_ops: 0.0,
                rate_of_target: 0.0,
                groups: schedule
                    .groups
                    .iter()
                    .map(|g| GroupPhase {
                        group: g.name.clone(),
                        scheduled_share: schedule.share(g, n),
                        scheduled_rate_ops: schedule.share(g, n) * schedule.total_rate_ops,
                        ops: 0,
                        rate_ops: 0.0,
                        share: 0.0,
                        errors: 0,
                    })
                    .collect(),
            });
            lengths.push(0.0);
        }
        let phase = &mut phases[p];
        phase.to_seconds = phase.to_seconds.max(start + len);
        lengths[p] += len;
        for (gi, g) in schedule.groups.iter().enumerate() {
            for t in &g.targets {
                if let Some((ops, errors)) = targets.get(t) {
                    phase.groups[gi].ops += ops;
                    phase.groups[gi].errors += errors;
                    phase.ops += ops;
                }
            }
        }
    }
    for (phase, length) in phases.iter_mut().zip(lengths) {
        if length <= 0.0 {
            continue;
        }
        phase.rate_ops = phase.ops as f64 / length;
        phase.rate_of_target = phase.rate_ops / schedule.total_rate_ops;
        let total = phase.ops;
        for g in &mut phase.groups {
            g.rate_ops = g.ops as f64 / length;
            g.share = if total > 0 {
                g.ops as f64 / total as f64
            } else {
                0.0
            };
        }
    }
    // Phases with no measured interval (a run cut short) are left out.
    phases.retain(|p| p.to_seconds > p.from_seconds);
    ScheduleResult {
        total_rate_ops: schedule.total_rate_ops,
        phase_seconds: phase_s,
        phases,
    }
}

/// The schedule's phase changes up to `measured_seconds`, as timeline marks (kind
/// `schedule-phase`): the pacing changes every worker's rate exactly there.
pub fn phase_marks(schedule: &Schedule, measured_seconds: f64) -> Vec<Event> {
    let phase_s = schedule.phase.0.as_secs_f64();
    (0..)
        .map(|p| (p, p as f64 * phase_s))
        .take_while(|(_, t)| *t < measured_seconds - 1e-9)
        .map(|(p, t)| {
            Event::mark(
                t,
                "schedule-phase",
                format!("phase {}: {}", p + 1, schedule.describe_phase(p)),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::timeline::parse_timeline;
    use crate::study::schedule::Group;
    use crate::units::Dur;
    use std::time::Duration;

    #[test]
    fn each_phase_counts_its_own_intervals_per_group() {
        let schedule = Schedule {
            total_rate_ops: 100.0,
            phase: Dur(Duration::from_secs(2)),
            quick_phase: Dur(Duration::from_secs(1)),
            groups: vec![
                Group {
                    name: "g1".into(),
                    targets: vec!["a".into()],
                    shares: vec![0.25, 0.75],
                },
                Group {
                    name: "g2".into(),
                    targets: vec!["b".into(), "c".into()],
                    shares: vec![0.75, 0.25],
                },
            ],
        };
        let mut csv = String::from("second,phase,target,op,ops,errors,interval_s\n");
        // Four 1 s intervals; a 25/75 then 75/25; c fails 2 operations in the last one.
        for (k, a, b, c) in [
            (0, 25, 40, 35),
            (1, 25, 35, 40),
            (2, 75, 12, 13),
            (3, 75, 13, 12),
        ] {
            csv.push_str(&format!("{k},measure,a,read,{a},0,1\n"));
            csv.push_str(&format!("{k},measure,b,read,{b},0,1\n"));
            let errors = if k == 3 { 2 } else { 0 };
            csv.push_str(&format!("{k},measure,c,read,{c},{errors},1\n"));
        }
        csv.push_str("-1,warmup,a,read,999,0,1\n");
        let timeline = parse_timeline(&csv);
        let r = for_run(&schedule, 4.0, &timeline, 1.0);
        assert_eq!(r.phases.len(), 2);
        let p1 = &r.phases[0];
        assert_eq!((p1.from_seconds, p1.to_seconds), (0.0, 2.0));
        assert_eq!(p1.ops, 200);
        assert_eq!(p1.rate_ops, 100.0);
        assert_eq!(p1.groups[0].share, 0.25);
        assert_eq!(p1.groups[1].rate_ops, 75.0);
        let p2 = &r.phases[1];
        assert_eq!(p2.table_phase, 2);
        assert_eq!(p2.groups[0].share, 0.75);
        assert_eq!(p2.groups[1].errors, 2);
        assert_eq!(phase_marks(&schedule, 4.0).len(), 2);
        assert_eq!(
            phase_marks(&schedule, 4.0)[1].detail,
            "phase 2: g1 75% (75 ops/s), g2 25% (25 ops/s)"
        );
    }
}
