//! A scheduled run's phases as a table: per phase and tenant group, the share of the total and
//! the rate the schedule asked beside what was measured, and each phase's total against its
//! target; and the moving averages of the total throughput with their largest deviation from
//! the reported throughput. Built from the stored summary (`results::schedule`); the terminal,
//! Markdown and HTML reports show them.

use crate::table::{Cell, Table, TableRow, render};
use storlab_results::summary::RunSummary;

const COLUMNS: [(&str, bool); 10] = [
    ("run", true),
    ("phase", true),
    ("group", false),
    ("share asked %", true),
    ("share measured %", true),
    ("ops/s asked", true),
    ("workers asked", true),
    ("ops/s measured", true),
    ("ops", true),
    ("errors", true),
];

/// A number, or "-" when there is none.
fn opt(v: Option<f64>, digits: usize) -> Cell {
    match v {
        Some(v) => num(v, digits),
        None => text("-"),
    }
}

fn num(v: f64, digits: usize) -> Cell {
    Cell {
        shown: format!("{v:.digits$}"),
        value: Some(v),
    }
}

fn text(s: impl Into<String>) -> Cell {
    Cell {
        shown: s.into(),
        value: None,
    }
}

/// The schedule phases of `runs`, or None when none had a schedule. The column of what was
/// asked is the rate (open loop) or the active workers (closed loop), both when `runs` mix
/// the two.
pub fn schedule_table<'a>(runs: impl IntoIterator<Item = &'a RunSummary>) -> Option<Table> {
    let mut rows = Vec::new();
    let (mut open, mut closed) = (false, false);
    for s in runs {
        let Some(r) = &s.schedule else { continue };
        open |= r.total_rate_ops.is_some();
        closed |= r.total_workers.is_some();
        for p in &r.phases {
            let keys = |group: &str| {
                vec![
                    ("run", s.run_index.to_string()),
                    ("phase", p.phase.to_string()),
                    ("group", group.to_string()),
                ]
            };
            for g in &p.groups {
                rows.push(TableRow {
                    keys: keys(&g.group),
                    cells: vec![
                        text(s.run_index.to_string()),
                        text(p.phase.to_string()),
                        text(g.group.clone()),
                        num(g.scheduled_share * 100.0, 1),
                        num(g.share * 100.0, 1),
                        opt(g.scheduled_rate_ops, 0),
                        opt(g.scheduled_workers.map(f64::from), 0),
                        num(g.rate_ops, 0),
                        num(g.ops as f64, 0),
                        num(g.errors as f64, 0),
                    ],
                });
            }
            let errors: u64 = p.groups.iter().map(|g| g.errors).sum();
            rows.push(TableRow {
                keys: keys("total"),
                cells: vec![
                    text(s.run_index.to_string()),
                    text(p.phase.to_string()),
                    text(match p.rate_of_target {
                        Some(of) => format!("total ({:.1}% of target)", of * 100.0),
                        None => "total".to_string(),
                    }),
                    num(100.0, 1),
                    num(if p.ops > 0 { 100.0 } else { 0.0 }, 1),
                    opt(r.total_rate_ops, 0),
                    opt(r.total_workers.map(f64::from), 0),
                    num(p.rate_ops, 0),
                    num(p.ops as f64, 0),
                    num(errors as f64, 0),
                ],
            });
        }
    }
    // Leave out the column of the loop no run used.
    let unused =
        |name: &str| (name == "ops/s asked" && !open) || (name == "workers asked" && !closed);
    let keep: Vec<bool> = COLUMNS.iter().map(|(n, _)| !unused(n)).collect();
    for row in &mut rows {
        let mut k = keep.iter();
        row.cells.retain(|_| *k.next().unwrap_or(&true));
    }
    (!rows.is_empty()).then(|| Table {
        columns: COLUMNS
            .iter()
            .filter(|(n, _)| !unused(n))
            .map(|(n, numeric)| (n.to_string(), *numeric))
            .collect(),
        rows,
    })
}

const AVERAGE_COLUMNS: [(&str, bool); 8] = [
    ("run", true),
    ("window phases", true),
    ("window s", true),
    ("windows", true),
    ("reported ops/s", true),
    ("largest deviation %", true),
    ("at s", true),
    ("average there ops/s", true),
];

/// The moving averages of `runs`' schedules, or None when none had one.
pub fn moving_average_table<'a>(runs: impl IntoIterator<Item = &'a RunSummary>) -> Option<Table> {
    let mut rows = Vec::new();
    for s in runs {
        let Some(r) = &s.schedule else { continue };
        for m in &r.moving_averages {
            rows.push(TableRow {
                keys: vec![
                    ("run", s.run_index.to_string()),
                    ("window", m.window_phases.to_string()),
                ],
                cells: vec![
                    text(s.run_index.to_string()),
                    num(f64::from(m.window_phases), 0),
                    num(m.window_seconds, 1),
                    num(m.windows as f64, 0),
                    num(r.reported_rate_ops, 1),
                    opt(m.max_deviation.map(|d| d * 100.0), 2),
                    opt(m.max_deviation_at_seconds, 1),
                    opt(m.max_deviation_rate_ops, 1),
                ],
            });
        }
    }
    (!rows.is_empty()).then(|| Table {
        columns: AVERAGE_COLUMNS
            .iter()
            .map(|(n, numeric)| (n.to_string(), *numeric))
            .collect(),
        rows,
    })
}

/// What the moving-average figures mean.
pub const MOVING_AVERAGE_NOTE: &str = "Moving averages of the total throughput: a window of whole phases slid one timeline interval at a time over the measured intervals (the last, cut interval left out; an interval with no operation counts as 0); largest deviation = the largest |window's average - reported| / reported over every position; reported = every group's successful operations over the measured time. windows = positions that fit (0: the run is shorter than the window, no figure).";

/// One line per moving average of a run, for the terminal.
pub fn moving_average_lines(s: &RunSummary) -> Vec<String> {
    let Some(r) = &s.schedule else {
        return Vec::new();
    };
    let asked = match (r.total_rate_ops, r.total_workers) {
        (Some(rate), _) => format!("the schedule's total: {rate} ops/s"),
        (None, Some(w)) => format!("closed loop: {w} workers active in every phase"),
        (None, None) => "no total in the schedule".to_string(),
    };
    let mut out = vec![format!(
        "reported throughput {:.1} ops/s ({asked}){}",
        r.reported_rate_ops,
        r.shape
            .as_ref()
            .map(|sh| format!(", shares from the shape `{sh}`"))
            .unwrap_or_default()
    )];
    for m in &r.moving_averages {
        let window = format!(
            "moving average over {} phase{} ({} s)",
            m.window_phases,
            if m.window_phases == 1 { "" } else { "s" },
            m.window_seconds
        );
        out.push(
            match (
                m.max_deviation,
                m.max_deviation_at_seconds,
                m.max_deviation_rate_ops,
            ) {
                (Some(d), Some(at), Some(avg)) => format!(
                    "{window}: largest deviation from the reported throughput {:.2}% (the window ending at {at:.1} s: {avg:.1} ops/s), over {} positions",
                    d * 100.0,
                    m.windows
                ),
                _ => format!("{window}: the run is shorter than the window, no deviation"),
            },
        );
    }
    out
}

/// What the schedule figures mean, under their table.
pub const SCHEDULE_NOTE: &str = "Rate schedule, from the stored timeline: each phase is made of the timeline intervals inside it (the last cut at the end of measurement); ops/s measured = a group's successful operations in the phase over its length; share measured = the group's part of the phase's successful operations. Asked = what the schedule set (open loop, latency from the intended start).";

/// The schedule table of one run, as text for the terminal (empty when it had none).
pub fn schedule_lines(s: &RunSummary) -> String {
    let Some(t) = schedule_table([s]) else {
        return String::new();
    };
    let header: Vec<&str> = t.columns.iter().skip(1).map(|(n, _)| n.as_str()).collect();
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| r.cells.iter().skip(1).map(|c| c.shown.clone()).collect())
        .collect();
    let phase_s = s.schedule.as_ref().map_or(0.0, |r| r.phase_seconds);
    let mut out = format!(
        "rate schedule (phases of {phase_s} s, from the timeline):\n{}",
        render(&header, &rows)
    );
    for l in moving_average_lines(s) {
        out.push_str(&l);
        out.push('\n');
    }
    out
}
