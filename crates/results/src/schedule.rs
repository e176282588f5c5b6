//! What a run with a rate schedule achieved, phase by phase and group by group: the measured
//! operations per second of each tenant group and its share of the total, beside what the
//! schedule asked, from the stored timeline (never from live state). A phase is made of the
//! timeline intervals that start inside it (the study checks that a phase is a whole number of
//! intervals, so none straddles two); the last one is cut at the end of measurement. Also the
//! phase changes as marks on the run's timeline.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::events::Event;
use crate::timeline::Timeline;
use storlab_study::schedule::Schedule;

/// A scheduled run's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ScheduleResult {
    /// Open loop: what the schedule asked of all groups together, operations per second.
    #[serde(default)]
    pub total_rate_ops: Option<f64>,
    /// Closed loop: the workers the schedule kept active, all groups together.
    #[serde(default)]
    pub total_workers: Option<u32>,
    pub phase_seconds: f64,
    /// The measured seconds the figures cover: up to the step's duration.
    #[serde(default)]
    pub measured_seconds: f64,
    pub phases: Vec<SchedulePhase>,
    /// The groups and their targets (the per-group charts sum their targets' timelines).
    #[serde(default)]
    pub groups: Vec<ScheduleGroup>,
    /// The named shape the shares came from, if any.
    #[serde(default)]
    pub shape: Option<String>,
    /// Successful operations of every group over the measured time, per second: the
    /// throughput the run reports (the brief's tpsHCI over its measurement interval).
    #[serde(default)]
    pub reported_rate_ops: f64,
    /// Moving averages of the total throughput and their largest deviation from the reported
    /// throughput (the brief: 7.5% over 12 minutes, 1.2% over one hour).
    #[serde(default)]
    pub moving_averages: Vec<MovingAverage>,
}

/// A tenant group and its targets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ScheduleGroup {
    pub name: String,
    pub targets: Vec<String>,
}

/// A trailing moving average of the total throughput over a window of whole phases, slid one
/// timeline interval at a time over the measured intervals, and how far it strays from the
/// reported throughput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct MovingAverage {
    pub window_phases: u32,
    pub window_seconds: f64,
    /// Positions of the window that lie wholly inside measurement (0: the run is shorter
    /// than the window, and there is no deviation to give).
    pub windows: usize,
    /// The largest |window's average - reported| / reported, as a fraction.
    pub max_deviation: Option<f64>,
    /// Where the window with that deviation ends (seconds from the start of measurement),
    /// and its average, operations per second.
    pub max_deviation_at_seconds: Option<f64>,
    pub max_deviation_rate_ops: Option<f64>,
}

/// The schedule's groups interval by interval over the measured time: what the throughput
/// charts draw and the moving averages are taken over. Intervals with no timeline row count
/// as intervals with no operation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PerInterval {
    /// Each interval's end and length, seconds (the last may be cut at the end of measurement).
    pub end_s: Vec<f64>,
    pub length_s: Vec<f64>,
    /// Per group (in the schedule's order), its successful operations in each interval.
    pub group_ops: Vec<Vec<u64>>,
}

impl PerInterval {
    /// Every group's operations in interval `i`.
    pub fn total_ops(&self, i: usize) -> u64 {
        self.group_ops.iter().map(|g| g[i]).sum()
    }

    /// A group's (or with None, all groups') operations per second, at each interval's end.
    pub fn rate_points(&self, group: Option<usize>) -> Vec<(f64, f64)> {
        (0..self.end_s.len())
            .filter(|i| self.length_s[*i] > 0.0)
            .map(|i| {
                let ops = match group {
                    Some(g) => self.group_ops[g][i],
                    None => self.total_ops(i),
                };
                (self.end_s[i], ops as f64 / self.length_s[i])
            })
            .collect()
    }

    /// The trailing moving average of the total over `window` whole intervals, at the end of
    /// each interval where a whole window fits (the last, cut interval is left out).
    pub fn moving_average(&self, window: usize, nominal_s: f64) -> Vec<(f64, f64)> {
        let whole: Vec<usize> = (0..self.end_s.len())
            .filter(|i| self.length_s[*i] >= nominal_s - 1e-9)
            .collect();
        let w = window.max(1);
        if whole.len() < w {
            return Vec::new();
        }
        let (mut ops, mut len) = (0u64, 0.0f64);
        let mut out = Vec::with_capacity(whole.len() + 1 - w);
        for (k, i) in whole.iter().enumerate() {
            ops += self.total_ops(*i);
            len += self.length_s[*i];
            if k >= w {
                let gone = whole[k - w];
                ops -= self.total_ops(gone);
                len -= self.length_s[gone];
            }
            if k + 1 >= w && len > 0.0 {
                out.push((self.end_s[*i], ops as f64 / len));
            }
        }
        out
    }
}

/// The groups' operations interval by interval, from the timeline, up to `measured` seconds.
pub fn per_interval(
    groups: &[ScheduleGroup],
    measured: f64,
    timeline: &Timeline,
    interval_s: f64,
) -> PerInterval {
    let nominal = if interval_s > 0.0 { interval_s } else { 1.0 };
    let count = (measured / nominal - 1e-9).ceil().max(0.0) as usize;
    let mut p = PerInterval {
        end_s: Vec::with_capacity(count),
        length_s: Vec::with_capacity(count),
        group_ops: vec![vec![0; count]; groups.len()],
    };
    for i in 0..count {
        let start = i as f64 * nominal;
        let end = (start + nominal).min(measured);
        p.end_s.push(end);
        p.length_s.push(end - start);
    }
    for r in timeline.rows.iter().filter(|r| r.measured) {
        let Ok(i) = usize::try_from(r.second) else {
            continue;
        };
        if i >= count {
            continue;
        }
        if let Some(g) = groups.iter().position(|g| g.targets.contains(&r.target)) {
            p.group_ops[g][i] += r.ops;
        }
    }
    p
}

/// The ramp-up (warm-up) of the schedule's groups together, interval by interval: each
/// interval's end (0 or less: seconds from the start of measurement) and its operations per
/// second over its real length. Empty when the timeline did not record what the warm-up did
/// (older files say 0 operations there whatever ran).
pub fn warmup_points(
    groups: &[ScheduleGroup],
    timeline: &Timeline,
    interval_s: f64,
) -> Vec<(f64, f64)> {
    let mut by_end: BTreeMap<i64, (f64, f64, u64)> = BTreeMap::new();
    for t in groups.iter().flat_map(|g| &g.targets) {
        for p in timeline
            .target_points(t, interval_s, 0.0)
            .into_iter()
            .filter(|p| p.warmup)
        {
            // Keyed by the end in ns: the same interval of every target adds up.
            let e = by_end
                .entry((p.end_s * 1e9).round() as i64)
                .or_insert((p.end_s, p.length_s, 0));
            e.2 += p.ops;
        }
    }
    by_end
        .into_values()
        .filter(|(_, len, _)| *len > 0.0)
        .map(|(end, len, ops)| (end, ops as f64 / len))
        .collect()
}

/// The moving averages over `window_phases` of `phase_s`, against the reported throughput.
fn moving_averages(
    p: &PerInterval,
    window_phases: &[u32],
    phase_s: f64,
    nominal_s: f64,
    reported: f64,
) -> Vec<MovingAverage> {
    window_phases
        .iter()
        .map(|w| {
            let window_seconds = f64::from(*w) * phase_s;
            let k = (window_seconds / nominal_s).round().max(1.0) as usize;
            let points = p.moving_average(k, nominal_s);
            let worst = points
                .iter()
                .map(|(at, avg)| (at, avg, (avg - reported).abs() / reported))
                .filter(|d| d.2.is_finite())
                .max_by(|a, b| a.2.total_cmp(&b.2));
            MovingAverage {
                window_phases: *w,
                window_seconds,
                windows: points.len(),
                max_deviation: worst.map(|d| d.2),
                max_deviation_at_seconds: worst.map(|d| *d.0),
                max_deviation_rate_ops: worst.map(|d| *d.1),
            }
        })
        .collect()
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
    /// Open loop: measured rate over the scheduled total (1 = on target).
    #[serde(default)]
    pub rate_of_target: Option<f64>,
    pub groups: Vec<GroupPhase>,
}

/// One group in one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct GroupPhase {
    pub group: String,
    /// What the schedule asked: its share of the total, and its rate (open loop) or its
    /// active workers (closed loop).
    pub scheduled_share: f64,
    #[serde(default)]
    pub scheduled_rate_ops: Option<f64>,
    #[serde(default)]
    pub scheduled_workers: Option<u32>,
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
/// run's measured length or its step's duration, whichever is shorter: the sliver after the
/// duration is the workers noticing the end).
pub fn for_run(
    schedule: &Schedule,
    measured: f64,
    timeline: &Timeline,
    interval_s: f64,
) -> ScheduleResult {
    let nominal = if interval_s > 0.0 { interval_s } else { 1.0 };
    let phase_s = schedule.phase.0.as_secs_f64();
    let intervals = interval_ops(timeline, nominal);
    let mut phases = phase_figures(schedule, &intervals, measured, phase_s);
    // Phases with no measured interval (a run cut short) are left out.
    phases.retain(|p| p.to_seconds > p.from_seconds);
    let groups: Vec<ScheduleGroup> = schedule
        .groups
        .iter()
        .map(|g| ScheduleGroup {
            name: g.name.clone(),
            targets: g.targets.clone(),
        })
        .collect();
    let all_ops: u64 = phases.iter().map(|p| p.ops).sum();
    let reported_rate_ops = if measured > 0.0 {
        all_ops as f64 / measured
    } else {
        0.0
    };
    let per = per_interval(&groups, measured, timeline, nominal);
    let moving_averages = if reported_rate_ops > 0.0 {
        moving_averages(
            &per,
            &schedule.moving_average_phases,
            phase_s,
            nominal,
            reported_rate_ops,
        )
    } else {
        Vec::new()
    };
    ScheduleResult {
        total_rate_ops: schedule.total_rate_ops,
        total_workers: schedule.total_workers,
        phase_seconds: phase_s,
        measured_seconds: measured,
        phases,
        groups,
        shape: schedule.shape.clone(),
        reported_rate_ops,
        moving_averages,
    }
}

/// The measured intervals of the timeline (`nominal`: the run's interval, seconds).
fn interval_ops(timeline: &Timeline, nominal: f64) -> IntervalOps {
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
    intervals
}

/// Phase `n` of the schedule, as scheduled, nothing measured yet.
fn scheduled_phase(schedule: &Schedule, n: usize, phase_s: f64) -> SchedulePhase {
    SchedulePhase {
        phase: n + 1,
        table_phase: n % schedule.table_phases().max(1) + 1,
        from_seconds: n as f64 * phase_s,
        to_seconds: n as f64 * phase_s,
        ops: 0,
        rate_ops: 0.0,
        rate_of_target: None,
        groups: schedule
            .groups
            .iter()
            .enumerate()
            .map(|(gi, g)| GroupPhase {
                group: g.name.clone(),
                scheduled_share: schedule.share(g, n),
                scheduled_rate_ops: schedule.total_rate_ops.map(|t| schedule.share(g, n) * t),
                scheduled_workers: schedule.group_workers(n).map(|w| w[gi]),
                ops: 0,
                rate_ops: 0.0,
                share: 0.0,
                errors: 0,
            })
            .collect(),
    }
}

/// Per phase of `phase_s` seconds: the operations of each group over the measured intervals
/// up to `measured` seconds, and their rates and shares.
fn phase_figures(
    schedule: &Schedule,
    intervals: &IntervalOps,
    measured: f64,
    phase_s: f64,
) -> Vec<SchedulePhase> {
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
            phases.push(scheduled_phase(schedule, phases.len(), phase_s));
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
        phase.rate_of_target = schedule.total_rate_ops.map(|t| phase.rate_ops / t);
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
    phases
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
    use crate::timeline::parse_timeline;
    use std::time::Duration;
    use storlab_model::units::Dur;
    use storlab_study::schedule::Group;

    #[test]
    fn each_phase_counts_its_own_intervals_per_group() {
        let schedule = Schedule {
            total_rate_ops: Some(100.0),
            total_workers: None,
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
            shape: None,
            moving_average_phases: vec![1, 2],
            latency_limit: None,
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
        assert_eq!(r.reported_rate_ops, 100.0);
        assert_eq!(r.groups[1].targets, vec!["b".to_string(), "c".to_string()]);
        assert_eq!(phase_marks(&schedule, 4.0).len(), 2);
        assert_eq!(
            phase_marks(&schedule, 4.0)[1].detail,
            "phase 2: g1 75% (75 ops/s), g2 25% (25 ops/s)"
        );
    }

    /// Totals of 100, 100, 60 and 140 operations in four 1 s intervals and 50 in a last one cut
    /// to 0.5 s: 100 ops/s reported; 2 s windows (one phase) at 100, 80 and 100, so the
    /// largest deviation is 20%, in the window ending at 3 s; the 4 s window (two phases) is
    /// on the reported figure; a window longer than the run has no position.
    #[test]
    fn moving_averages_slide_over_whole_intervals_and_give_the_largest_deviation() {
        let schedule = Schedule {
            total_rate_ops: Some(100.0),
            total_workers: None,
            phase: Dur(Duration::from_secs(2)),
            quick_phase: Dur(Duration::from_secs(1)),
            groups: vec![Group {
                name: "g".into(),
                targets: vec!["a".into()],
                shares: vec![1.0],
            }],
            shape: None,
            moving_average_phases: vec![1, 2, 3],
            latency_limit: None,
        };
        let mut csv = String::from("second,phase,target,op,ops,errors,interval_s\n");
        for (k, ops, len) in [
            (0, 100, 1.0),
            (1, 100, 1.0),
            (2, 60, 1.0),
            (3, 140, 1.0),
            (4, 50, 0.5),
        ] {
            csv.push_str(&format!("{k},measure,a,read,{ops},0,{len}\n"));
        }
        let timeline = parse_timeline(&csv);
        let r = for_run(&schedule, 4.5, &timeline, 1.0);
        assert_eq!(r.reported_rate_ops, 100.0);
        let one = &r.moving_averages[0];
        assert_eq!((one.window_phases, one.window_seconds), (1, 2.0));
        assert_eq!(one.windows, 3, "windows ending at 2, 3 and 4 s");
        assert_eq!(one.max_deviation_rate_ops, Some(80.0));
        assert_eq!(one.max_deviation_at_seconds, Some(3.0));
        assert!((one.max_deviation.unwrap() - 0.2).abs() < 1e-12);
        let two = &r.moving_averages[1];
        assert_eq!(two.windows, 1);
        assert_eq!(two.max_deviation, Some(0.0));
        let three = &r.moving_averages[2];
        assert_eq!((three.windows, three.max_deviation), (0, None));
        let per = per_interval(&r.groups, 4.5, &timeline, 1.0);
        assert_eq!(per.rate_points(None).last(), Some(&(4.5, 100.0)));
        assert_eq!(per.rate_points(Some(0))[2], (3.0, 60.0));
    }
}
