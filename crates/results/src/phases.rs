//! A run's throughput phase by phase, split at its study events: before a member fails, while
//! the array runs degraded, while it rebuilds, after. Computed from the stored timeline (never
//! from live state), like the recovery metrics.
//!
//! Boundaries are the start of every event that ran during measurement and, for an event that
//! lasted at least one interval (a `wait-for` rebuild, a long `exec`, a resync a `sample`
//! event's command reported), its end too; a `sample` event's own row, which spans the whole
//! step, is none. Each
//! boundary is moved to the nearest interval edge, so that a phase is made of whole timeline
//! intervals and its operation count is the count the intervals hold: every figure here has
//! the interval's resolution. Boundaries on the same edge are merged; empty phases are left
//! out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::events::{EventStatus, RunOutline};
use crate::recovery::slots;
use crate::timeline::Timeline;

/// One phase of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Phase {
    /// What starts it and what ends it: `start`, `end`, or events (`` `fail-member` ``,
    /// `` `rebuild` began ``, `` `rebuild` done ``).
    pub from: String,
    pub to: String,
    /// Seconds from the start of measurement, on interval edges.
    pub from_seconds: f64,
    pub to_seconds: f64,
    /// Successful operations of the run's targets in the phase's intervals, and per second.
    pub ops: u64,
    pub rate_ops: f64,
    /// Failed operations, and by kind.
    pub errors: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors_by_kind: BTreeMap<String, u64>,
}

/// The phases of a stored run, or none when no event ran during measurement.
pub fn for_run(run: &RunOutline, timeline: &Timeline, interval_s: f64) -> Vec<Phase> {
    let targets = &run.target_names;
    let slots = slots(timeline, targets, interval_s, run.measured_seconds);
    let Some(last) = slots.last() else {
        return Vec::new();
    };
    let end_s = last.end_s;
    let mut edges: Vec<f64> = slots.iter().map(|s| s.start_s).collect();
    edges.push(end_s);
    let snap = |t: f64| {
        edges
            .iter()
            .copied()
            .min_by(|a, b| (a - t).abs().total_cmp(&(b - t).abs()))
            .unwrap_or(t)
    };

    // (edge, the event's own time, name): sorted by edge, then by when the event came.
    let mut marks: Vec<(f64, f64, String)> = Vec::new();
    for e in run.events.iter().filter(|e| !e.is_sample()) {
        let Some(o) = &e.outcome else { continue };
        if matches!(o.status, EventStatus::NotReached | EventStatus::Skipped) || o.start_ns < 0 {
            continue;
        }
        let start_s = o.start_ns as f64 / 1e9;
        let end_ev_s = o.end_ns as f64 / 1e9;
        if end_ev_s - start_s >= interval_s.max(1e-9) {
            marks.push((snap(start_s), start_s, format!("`{}` began", o.name)));
            marks.push((snap(end_ev_s), end_ev_s, format!("`{}` done", o.name)));
        } else {
            marks.push((snap(start_s), start_s, format!("`{}`", o.name)));
        }
    }
    if marks.is_empty() {
        return Vec::new();
    }
    marks.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    // Boundaries on one edge become one, named by all its events.
    let mut bounds: Vec<(f64, String)> = vec![(edges[0], "start".into())];
    for (t, _, name) in marks {
        match bounds.last_mut() {
            Some(last) if (last.0 - t).abs() < 1e-9 => {
                if last.1 == "start" {
                    last.1 = name;
                } else {
                    last.1 = format!("{}, {name}", last.1);
                }
            }
            _ => bounds.push((t, name)),
        }
    }
    match bounds.last_mut() {
        Some(last) if (last.0 - end_s).abs() < 1e-9 => {
            last.1 = format!("{} (end)", last.1);
        }
        _ => bounds.push((end_s, "end".into())),
    }

    bounds
        .windows(2)
        .filter(|w| w[1].0 - w[0].0 > 1e-9)
        .map(|w| {
            let (from_s, to_s) = (w[0].0, w[1].0);
            let mut p = Phase {
                from: w[0].1.clone(),
                to: w[1].1.clone(),
                from_seconds: from_s,
                to_seconds: to_s,
                ops: 0,
                rate_ops: 0.0,
                errors: 0,
                errors_by_kind: BTreeMap::new(),
            };
            let mut length = 0.0;
            for s in slots
                .iter()
                .filter(|s| s.start_s >= from_s - 1e-9 && s.end_s <= to_s + 1e-9)
            {
                p.ops += s.ops;
                length += s.end_s - s.start_s;
                for (k, n) in &s.errors {
                    p.errors += n;
                    *p.errors_by_kind.entry(k.clone()).or_default() += n;
                }
            }
            if length > 0.0 {
                p.rate_ops = p.ops as f64 / length;
            }
            p
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::events::{Event, EventOutcome};
    use crate::summary::RunSummary;

    /// A timeline of 100 ms intervals for target `a`: (ops, io errors) per interval.
    fn timeline(per_interval: &[(u64, u64)]) -> Timeline {
        crate::recovery::tests::timeline_with(per_interval, "io")
    }

    /// A study event (`exec`) that ran from `start_s` to `end_s`.
    pub(crate) fn event(name: &str, start_s: f64, end_s: f64, status: EventStatus) -> Event {
        Event {
            time_seconds: start_s,
            kind: "exec".into(),
            detail: String::new(),
            outcome: Some(EventOutcome {
                exit_code: Some(0),
                ..EventOutcome::ran(name, status, ((start_s * 1e9) as i64, (end_s * 1e9) as i64))
            }),
        }
    }

    fn summary(measured_seconds: f64, events: Vec<Event>) -> RunSummary {
        let mut s = crate::fixtures::summary(1, "s", &[], &[("a", 100.0, 1000)]);
        s.measured_seconds = measured_seconds;
        s.events = events;
        s
    }

    #[test]
    fn phases_split_at_events_on_interval_edges() {
        // 1 s: 100 ops per interval, failure at 0.3 s (a short exec), rebuild 0.52 s to
        // 0.78 s (snapped to 0.5 and 0.8).
        let mut per = vec![(100, 0); 10];
        per[3] = (60, 2);
        per[5] = (50, 0);
        per[6] = (50, 0);
        per[7] = (50, 0);
        let s = summary(
            1.0,
            vec![
                Event::mark(-0.2, "warmup-start", ""),
                event("fail", 0.3, 0.31, EventStatus::Ok),
                event("rebuild", 0.52, 0.78, EventStatus::Ok),
                event("never", 1.0, 1.0, EventStatus::NotReached),
            ],
        );
        let p = for_run(&s.outline(), &timeline(&per), 0.1);
        let names: Vec<(&str, &str)> = p.iter().map(|p| (&*p.from, &*p.to)).collect();
        assert_eq!(
            names,
            [
                ("start", "`fail`"),
                ("`fail`", "`rebuild` began"),
                ("`rebuild` began", "`rebuild` done"),
                ("`rebuild` done", "end")
            ]
        );
        let ops: Vec<u64> = p.iter().map(|p| p.ops).collect();
        assert_eq!(ops, [300, 160, 150, 200]);
        assert!((p[0].rate_ops - 1000.0).abs() < 1e-6, "{}", p[0].rate_ops);
        assert!((p[2].rate_ops - 500.0).abs() < 1e-6, "{}", p[2].rate_ops);
        assert_eq!(p[1].errors, 2);
        assert_eq!(p[1].errors_by_kind.get("io"), Some(&2));
        assert_eq!(p[0].errors + p[2].errors + p[3].errors, 0);
    }

    #[test]
    fn no_events_no_phases_and_shared_edges_merge() {
        let per = vec![(10, 0); 5];
        assert!(for_run(&summary(0.5, vec![]).outline(), &timeline(&per), 0.1).is_empty());
        let s = summary(
            0.5,
            vec![
                event("a", 0.21, 0.21, EventStatus::Ok),
                event("b", 0.19, 0.19, EventStatus::Ok),
            ],
        );
        let p = for_run(&s.outline(), &timeline(&per), 0.1);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].to, "`b`, `a`");
        assert_eq!((p[1].from_seconds, p[1].to_seconds), (0.2, 0.5));
        assert_eq!(p[1].ops, 30);
    }
}
