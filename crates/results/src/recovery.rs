//! Recovery metrics around a fault event, computed from a run's stored timeline (never from
//! live state): the baseline throughput before the event, the dip after it, the outage (the
//! longest span without a successful operation), the time to the first success and the time
//! until throughput is back near the baseline and stays there, and the errors by kind meanwhile.
//!
//! The timeline holds one row per interval, so every figure here has the interval's
//! resolution: an outage is a run of whole intervals in which no operation succeeded (the
//! interval holding the event counts from the event on), and recovery is dated to the start of
//! the first interval from which throughput stays back. A shorter `interval` in the study
//! gives a finer resolution.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::events::{EventOutcome, EventStatus, RunOutline};
use crate::timeline::Timeline;
use storlab_study::events::{EventPlan, RecoveryPlan};

/// How throughput fell and came back around one event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Recovery {
    /// The event's name.
    pub event: String,
    /// When the event started, seconds from the start of measurement.
    pub event_seconds: f64,
    /// The timeline's interval: the resolution of every time below.
    pub interval_seconds: f64,
    /// The baseline window asked for, and the part of it that measurement covered.
    pub baseline_window_seconds: f64,
    pub baseline_covered_seconds: f64,
    /// Successful operations per second over the baseline window (None: no measured
    /// interval ended before the event).
    pub baseline_rate_ops: Option<f64>,
    /// Lowest and mean ops/s from the event's interval until recovered (or the end).
    pub dip_min_rate_ops: Option<f64>,
    pub dip_mean_rate_ops: Option<f64>,
    /// The longest span after the event without a successful operation, seconds (0: none).
    pub outage_seconds: f64,
    /// Where that span starts and ends, seconds from the start of measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage_start_seconds: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage_end_seconds: Option<f64>,
    /// From the event to the end of the first span without success (0 when operations never
    /// stopped succeeding); None when none succeeded after the event.
    pub time_to_first_success_seconds: Option<f64>,
    /// Throughput came back to at least (1 - recovered-within) x the baseline and stayed there
    /// for `settle`.
    pub recovered: bool,
    /// From the event to the start of the interval from which it stayed back.
    pub time_to_recover_seconds: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered_at_seconds: Option<f64>,
    pub recovered_within: f64,
    pub settle_seconds: f64,
    /// Errors by kind in the intervals of the outage, and from the event until recovered.
    pub errors_during_outage: BTreeMap<String, u64>,
    pub errors_until_recovered: BTreeMap<String, u64>,
    /// Why a figure is missing (no baseline, never recovered), for readers.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// What recovery is measured against, for one event.
#[derive(Debug, Clone, Copy)]
pub struct RecoveryAsk {
    pub event_seconds: f64,
    pub baseline_seconds: f64,
    pub recovered_within: f64,
    pub settle_seconds: f64,
}

/// One measured interval over the run's targets.
#[derive(Debug, Clone, Default)]
pub(crate) struct Slot {
    pub(crate) start_s: f64,
    pub(crate) end_s: f64,
    pub(crate) ops: u64,
    pub(crate) errors: BTreeMap<String, u64>,
}

impl Slot {
    fn length(&self) -> f64 {
        (self.end_s - self.start_s).max(1e-9)
    }

    fn rate(&self) -> f64 {
        self.ops as f64 / self.length()
    }
}

/// The measured intervals of `targets` (all their operation kinds added), in time order, up
/// to `measured_seconds` (the sliver after the last completion, while the workers noticed the
/// end, is no outage).
pub(crate) fn slots(
    timeline: &Timeline,
    targets: &[String],
    interval_s: f64,
    measured_seconds: f64,
) -> Vec<Slot> {
    let nominal = if interval_s > 0.0 { interval_s } else { 1.0 };
    let mut by_second: BTreeMap<i64, Slot> = BTreeMap::new();
    for r in timeline
        .rows
        .iter()
        .filter(|r| r.measured && targets.contains(&r.target))
    {
        let start_s = r.second as f64 * nominal;
        let slot = by_second.entry(r.second).or_insert_with(|| Slot {
            start_s,
            end_s: start_s + nominal,
            ..Slot::default()
        });
        if let Some(len) = r.interval_s {
            slot.end_s = start_s + len;
        }
        slot.ops += r.ops;
        if r.error_kinds.is_empty() && r.errors > 0 {
            *slot.errors.entry("unknown".into()).or_default() += r.errors;
        }
        for (k, n) in &r.error_kinds {
            *slot.errors.entry(k.clone()).or_default() += n;
        }
    }
    by_second
        .into_values()
        .filter(|s| s.start_s < measured_seconds - 1e-9)
        .map(|mut s| {
            s.end_s = s.end_s.min(measured_seconds);
            s
        })
        .collect()
}

fn add_errors(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (k, n) in from {
        *into.entry(k.clone()).or_default() += n;
    }
}

/// Recovery around the event named `event`, over the measured intervals of `targets` (the
/// run's targets, background workers left out) up to `measured_seconds`.
pub fn recovery(
    timeline: &Timeline,
    targets: &[String],
    interval_s: f64,
    measured_seconds: f64,
    event: &str,
    ask: RecoveryAsk,
) -> Recovery {
    let slots = slots(timeline, targets, interval_s, measured_seconds);
    let t_e = ask.event_seconds;
    let mut r = unjudged(event, interval_s, &ask);
    let mut notes: Vec<String> = Vec::new();
    baseline(&mut r, &slots, &ask, &mut notes);

    // From the interval holding the event on.
    let after: Vec<&Slot> = slots.iter().filter(|s| s.end_s > t_e + 1e-9).collect();
    if after.is_empty() {
        notes.push("no measured interval after the event".into());
        r.note = notes.join("; ");
        return r;
    }
    outage(&mut r, &after, t_e, &mut notes);
    let recovered_at = recovered_at(&mut r, &after, &ask, &mut notes);

    // The dip: from the event's interval until recovered (or the end); at least the first.
    let dip_end = recovered_at.unwrap_or(after.len()).max(1);
    let dip = &after[..dip_end];
    r.dip_min_rate_ops = dip.iter().map(|s| s.rate()).min_by(|a, b| a.total_cmp(b));
    let (ops, secs) = dip
        .iter()
        .fold((0u64, 0.0), |(o, t), s| (o + s.ops, t + s.length()));
    r.dip_mean_rate_ops = Some(ops as f64 / secs.max(1e-9));
    for s in dip {
        add_errors(&mut r.errors_until_recovered, &s.errors);
    }
    r.note = notes.join("; ");
    r
}

/// The recovery asked for, nothing judged yet.
fn unjudged(event: &str, interval_s: f64, ask: &RecoveryAsk) -> Recovery {
    Recovery {
        event: event.to_string(),
        event_seconds: ask.event_seconds,
        interval_seconds: interval_s,
        baseline_window_seconds: ask.baseline_seconds,
        baseline_covered_seconds: 0.0,
        baseline_rate_ops: None,
        dip_min_rate_ops: None,
        dip_mean_rate_ops: None,
        outage_seconds: 0.0,
        outage_start_seconds: None,
        outage_end_seconds: None,
        time_to_first_success_seconds: None,
        recovered: false,
        time_to_recover_seconds: None,
        recovered_at_seconds: None,
        recovered_within: ask.recovered_within,
        settle_seconds: ask.settle_seconds,
        errors_during_outage: BTreeMap::new(),
        errors_until_recovered: BTreeMap::new(),
        note: String::new(),
    }
}

/// Baseline: whole intervals ending by the event, within the window before it.
fn baseline(r: &mut Recovery, slots: &[Slot], ask: &RecoveryAsk, notes: &mut Vec<String>) {
    let t_e = ask.event_seconds;
    let window_start = t_e - ask.baseline_seconds;
    let before: Vec<&Slot> = slots
        .iter()
        .filter(|s| s.end_s <= t_e + 1e-9 && s.start_s >= window_start - 1e-9)
        .collect();
    let covered: f64 = before.iter().map(|s| s.length()).sum();
    if covered > 0.0 {
        let ops: u64 = before.iter().map(|s| s.ops).sum();
        r.baseline_covered_seconds = covered;
        r.baseline_rate_ops = Some(ops as f64 / covered);
    } else {
        notes.push(
            "no baseline: no whole measured interval ended before the event, so recovery cannot be judged"
                .into(),
        );
    }
}

/// The time to the first success after the event (at `t_e`) and the longest outage, from
/// the intervals `after` it.
fn outage(r: &mut Recovery, after: &[&Slot], t_e: f64, notes: &mut Vec<String>) {
    // Spans without a success: runs of consecutive empty intervals, the first clipped to
    // start at the event.
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut open: Option<usize> = None;
    for (i, s) in after.iter().enumerate() {
        match (s.ops == 0, open) {
            (true, None) => open = Some(i),
            (false, Some(a)) => {
                spans.push((a, i));
                open = None;
            }
            _ => {}
        }
    }
    if let Some(a) = open {
        spans.push((a, after.len()));
    }
    let span_bounds =
        |(a, b): (usize, usize)| -> (f64, f64) { (after[a].start_s.max(t_e), after[b - 1].end_s) };
    if let Some(&first) = spans.first() {
        let (_, end) = span_bounds(first);
        r.time_to_first_success_seconds = (first.1 < after.len()).then_some(end - t_e);
        if first.1 >= after.len() {
            notes.push("no operation succeeded after the event".into());
        }
    } else {
        r.time_to_first_success_seconds = Some(0.0);
    }
    if let Some(&longest) = spans.iter().max_by(|x, y| {
        let (xa, xb) = span_bounds(**x);
        let (ya, yb) = span_bounds(**y);
        (xb - xa).total_cmp(&(yb - ya))
    }) {
        let (a, b) = span_bounds(longest);
        r.outage_seconds = b - a;
        r.outage_start_seconds = Some(a);
        r.outage_end_seconds = Some(b);
        for s in &after[longest.0..longest.1] {
            add_errors(&mut r.errors_during_outage, &s.errors);
        }
    }
}

/// Recovered: the first interval from which every interval over `settle` is back within
/// `recovered-within` of the baseline. Returns its index in `after`.
fn recovered_at(
    r: &mut Recovery,
    after: &[&Slot],
    ask: &RecoveryAsk,
    notes: &mut Vec<String>,
) -> Option<usize> {
    let t_e = ask.event_seconds;
    let base = r.baseline_rate_ops?;
    let mut recovered_at: Option<usize> = None;
    let floor = (1.0 - ask.recovered_within) * base;
    let run_end = after.last().map_or(t_e, |s| s.end_s);
    for i in 0..after.len() {
        let from = after[i].start_s;
        if from + ask.settle_seconds > run_end + 1e-9 {
            break;
        }
        let holds = after[i..]
            .iter()
            .take_while(|s| s.start_s < from + ask.settle_seconds.max(1e-9))
            .all(|s| s.rate() >= floor);
        if holds {
            recovered_at = Some(i);
            break;
        }
    }
    match recovered_at {
        Some(i) => {
            let at = after[i].start_s.max(t_e);
            r.recovered = true;
            r.recovered_at_seconds = Some(at);
            r.time_to_recover_seconds = Some(at - t_e);
        }
        None => notes.push(format!(
            "never recovered: throughput did not stay at {:.0}% of the baseline or more for {} s before the run ended",
            (1.0 - ask.recovered_within) * 100.0,
            ask.settle_seconds
        )),
    }
    recovered_at
}

/// Recovery around every event of a stored run that ran and asked for it (`recovery`),
/// over the run's targets; `interval_s` is the run's timeline interval. Each is judged up to
/// the next such event (a failover's outage is not its failback's), or the end.
pub fn for_run(
    run: &RunOutline,
    timeline: &Timeline,
    interval_s: f64,
    plans: &[EventPlan],
) -> Vec<Recovery> {
    let targets = &run.target_names;
    let asked: Vec<(&EventOutcome, RecoveryPlan)> = run
        .events
        .iter()
        .filter_map(|e| {
            let o = e.outcome.as_ref()?;
            let ran = !matches!(o.status, EventStatus::NotReached | EventStatus::Skipped);
            let plan = plans.iter().find(|p| p.name == o.name)?.recovery?;
            (o.recovery && ran).then_some((o, plan))
        })
        .collect();
    asked
        .iter()
        .map(|&(o, plan)| {
            let until = asked
                .iter()
                .map(|(next, _)| next.start_ns as f64 / 1e9)
                .filter(|&t| t > o.start_ns as f64 / 1e9)
                .fold(run.measured_seconds, f64::min);
            recovery(
                timeline,
                targets,
                interval_s,
                until,
                &o.name,
                RecoveryAsk {
                    event_seconds: o.start_ns as f64 / 1e9,
                    baseline_seconds: plan.baseline.0.as_secs_f64(),
                    recovered_within: plan.recovered_within,
                    settle_seconds: plan.settle.0.as_secs_f64(),
                },
            )
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::timeline::parse_timeline;

    /// A timeline of 100 ms intervals for target `a`: (ops, connection errors) per interval.
    fn timeline(per_interval: &[(u64, u64)]) -> Timeline {
        timeline_with(per_interval, "connection")
    }

    /// A timeline of 100 ms intervals for target `a`: (ops, errors of `kind`) per interval.
    pub(crate) fn timeline_with(per_interval: &[(u64, u64)], kind: &str) -> Timeline {
        let mut t = String::from(
            "second,phase,target,op,ops,rate_ops,bytes,rate_bytes,errors,p50_ns,p99_ns,max_ns,intended_p99_ns,intended_max_ns,client_cpu_cores,interval_s,error_kinds\n",
        );
        for (i, (ops, errors)) in per_interval.iter().enumerate() {
            let kinds = if *errors > 0 {
                format!("{kind}:{errors}")
            } else {
                String::new()
            };
            t.push_str(&format!(
                "{i},measure,a,read,{ops},0,0,0,{errors},1,2,3,,,0.1,0.1,{kinds}\n"
            ));
        }
        parse_timeline(&t)
    }

    fn ask(event_seconds: f64) -> RecoveryAsk {
        RecoveryAsk {
            event_seconds,
            baseline_seconds: 1.0,
            recovered_within: 0.05,
            settle_seconds: 0.3,
        }
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-6)
    }

    #[test]
    fn a_clean_dip_gives_baseline_outage_and_recovery() {
        // 1,000 ops/s (100 per 100 ms) for 1 s; the event at 1.0 s; 0.3 s with nothing but
        // errors; 0.1 s at half speed; then back for 1 s.
        let mut iv = vec![(100, 0); 10];
        iv.extend([(0, 40), (0, 50), (0, 45), (50, 3)]);
        iv.extend(vec![(100, 0); 10]);
        let r = recovery(&timeline(&iv), &["a".into()], 0.1, 1e9, "kill", ask(1.0));
        assert!(close(r.baseline_rate_ops, 1000.0), "{r:?}");
        assert!((r.baseline_covered_seconds - 1.0).abs() < 1e-9);
        assert!((r.outage_seconds - 0.3).abs() < 1e-9, "{r:?}");
        assert!(close(r.outage_start_seconds, 1.0) && close(r.outage_end_seconds, 1.3));
        assert!(close(r.time_to_first_success_seconds, 0.3), "{r:?}");
        assert!(r.recovered);
        assert!(close(r.time_to_recover_seconds, 0.4), "{r:?}");
        assert!(close(r.dip_min_rate_ops, 0.0));
        // 50 operations over the 0.4 s of the dip.
        assert!(close(r.dip_mean_rate_ops, 125.0), "{r:?}");
        assert_eq!(r.errors_during_outage.get("connection"), Some(&135));
        assert_eq!(r.errors_until_recovered.get("connection"), Some(&138));
        assert!(r.note.is_empty(), "{}", r.note);
    }

    #[test]
    fn never_recovered_says_so_without_a_number() {
        // Back at 80% only: below 95% of the baseline for good.
        let mut iv = vec![(100, 0); 10];
        iv.extend([(0, 10), (0, 10)]);
        iv.extend(vec![(80, 0); 10]);
        let r = recovery(&timeline(&iv), &["a".into()], 0.1, 1e9, "kill", ask(1.0));
        assert!(!r.recovered);
        assert_eq!(r.time_to_recover_seconds, None);
        assert_eq!(r.recovered_at_seconds, None);
        assert!(r.note.contains("never recovered"), "{}", r.note);
        assert!((r.outage_seconds - 0.2).abs() < 1e-9);
        assert!(close(r.time_to_first_success_seconds, 0.2));
        // The dip runs to the end: 800 operations over 1.2 s.
        assert!(close(r.dip_mean_rate_ops, 800.0 / 1.2), "{r:?}");
    }

    #[test]
    fn a_recovery_too_short_to_settle_is_not_a_recovery() {
        // Back for 0.2 s only, with settle = 0.3 s, and then the run ends.
        let mut iv = vec![(100, 0); 10];
        iv.extend([(0, 10), (100, 0), (100, 0)]);
        let r = recovery(&timeline(&iv), &["a".into()], 0.1, 1e9, "kill", ask(1.0));
        assert!(!r.recovered, "{r:?}");
    }

    #[test]
    fn no_baseline_when_the_event_comes_first() {
        let iv = vec![(0, 5), (0, 5), (100, 0), (100, 0), (100, 0), (100, 0)];
        let r = recovery(&timeline(&iv), &["a".into()], 0.1, 1e9, "kill", ask(0.0));
        assert_eq!(r.baseline_rate_ops, None);
        assert!(!r.recovered);
        assert_eq!(r.time_to_recover_seconds, None);
        assert!(r.note.contains("no baseline"), "{}", r.note);
        // The outage is still measured.
        assert!((r.outage_seconds - 0.2).abs() < 1e-9);
        assert_eq!(r.errors_during_outage.get("connection"), Some(&10));
    }

    #[test]
    fn the_baseline_window_is_clamped_to_measurement_and_mid_interval_events_clip() {
        // Event at 0.55 s with a 10 s window: 5 whole intervals before it.
        let mut iv = vec![(100, 0); 5];
        iv.extend([(0, 1), (0, 1), (100, 0), (100, 0), (100, 0), (100, 0)]);
        let mut a = ask(0.55);
        a.baseline_seconds = 10.0;
        let r = recovery(&timeline(&iv), &["a".into()], 0.1, 1e9, "x", a);
        assert!((r.baseline_covered_seconds - 0.5).abs() < 1e-9);
        assert!(close(r.baseline_rate_ops, 1000.0));
        // The outage counts from the event, not from its interval's start.
        assert!((r.outage_seconds - 0.15).abs() < 1e-9, "{r:?}");
        assert!(close(r.time_to_recover_seconds, 0.15), "{r:?}");
    }

    #[test]
    fn the_sliver_after_the_last_completion_is_no_outage() {
        // Measured for 1.0 s; the timeline's last row covers 1.0 to 1.1 s with nothing in it.
        let mut iv = vec![(100, 0); 10];
        iv.push((0, 0));
        let r = recovery(&timeline(&iv), &["a".into()], 0.1, 1.0, "x", ask(0.5));
        assert_eq!(r.outage_seconds, 0.0, "{r:?}");
        assert!(close(r.time_to_first_success_seconds, 0.0), "{r:?}");
        assert!(r.recovered, "{r:?}");
    }

    #[test]
    fn other_targets_rows_are_left_out() {
        let mut t = timeline(&[(100, 0), (100, 0), (0, 1), (100, 0), (100, 0), (100, 0)]);
        let mut other = t.rows[2].clone();
        other.target = "a:writer".into();
        other.ops = 1000;
        t.rows.push(other);
        let r = recovery(&t, &["a".into()], 0.1, 1e9, "x", ask(0.2));
        assert!((r.outage_seconds - 0.1).abs() < 1e-9, "{r:?}");
    }

    /// Two faults in one run (a failover, then a failback): each one's outage and recovery
    /// are judged up to the next, the first's never taken from the second's longer outage.
    #[test]
    fn each_event_is_judged_up_to_the_next() {
        use crate::phases::tests::event;
        use storlab_study::events::{Action, EventPlan, OnFailure, RecoveryPlan, Trigger};
        // 1 s up, 0.2 s out, 1 s up, 0.5 s out, 1 s up.
        let mut iv = vec![(100, 0); 10];
        iv.extend(vec![(0, 1); 2]);
        iv.extend(vec![(100, 0); 10]);
        iv.extend(vec![(0, 1); 5]);
        iv.extend(vec![(100, 0); 10]);
        let mut events = vec![
            event("failover", 1.0, 1.0, EventStatus::Ok),
            event("failback", 2.2, 2.2, EventStatus::Ok),
        ];
        let plan = |name: &str| EventPlan {
            name: name.into(),
            trigger: Trigger::At(storlab_model::units::Dur(std::time::Duration::ZERO)),
            action: Action::Exec {
                command: vec!["true".into()],
                timeout: storlab_model::units::Dur(std::time::Duration::ZERO),
            },
            on_failure: OnFailure::StopStep,
            recovery: Some(RecoveryPlan {
                baseline: storlab_model::units::Dur(std::time::Duration::from_millis(500)),
                recovered_within: 0.05,
                settle: storlab_model::units::Dur(std::time::Duration::from_millis(300)),
            }),
        };
        for e in &mut events {
            e.outcome.as_mut().unwrap().recovery = true;
        }
        let run = RunOutline {
            events: &events,
            target_names: vec!["a".into()],
            measured_seconds: 3.7,
        };
        let r = for_run(
            &run,
            &timeline(&iv),
            0.1,
            &[plan("failover"), plan("failback")],
        );
        assert_eq!(r.len(), 2, "{r:?}");
        assert!((r[0].outage_seconds - 0.2).abs() < 1e-9, "{r:?}");
        assert!(
            r[0].recovered && close(r[0].time_to_recover_seconds, 0.2),
            "{r:?}"
        );
        assert!((r[1].outage_seconds - 0.5).abs() < 1e-9, "{r:?}");
        assert!(
            r[1].recovered && close(r[1].time_to_first_success_seconds, 0.5),
            "{r:?}"
        );
    }
}
