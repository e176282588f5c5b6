//! A scheduled run's phases as a table: per phase and tenant group, the share of the total and
//! the rate the schedule asked beside what was measured, and each phase's total against its
//! target. Built from the stored summary (`results::schedule`); the terminal and Markdown
//! reports show it.

use crate::report::table::{Cell, Table, TableRow, render};
use crate::results::summary::RunSummary;

const COLUMNS: [(&str, bool); 9] = [
    ("run", true),
    ("phase", true),
    ("group", false),
    ("share asked %", true),
    ("share measured %", true),
    ("ops/s asked", true),
    ("ops/s measured", true),
    ("ops", true),
    ("errors", true),
];

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

/// The schedule phases of `runs`, or None when none had a schedule.
pub fn schedule_table<'a>(runs: impl IntoIterator<Item = &'a RunSummary>) -> Option<Table> {
    let mut rows = Vec::new();
    for s in runs {
        let Some(r) = &s.schedule else { continue };
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
                        num(g.scheduled_rate_ops, 0),
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
                    text(format!(
                        "total ({:.1}% of target)",
                        p.rate_of_target * 100.0
                    )),
                    num(100.0, 1),
                    num(if p.ops > 0 { 100.0 } else { 0.0 }, 1),
                    num(r.total_rate_ops, 0),
                    num(p.rate_ops, 0),
                    num(p.ops as f64, 0),
                    num(errors as f64, 0),
                ],
            });
        }
    }
    (!rows.is_empty()).then(|| Table {
        columns: COLUMNS
            .iter()
            .map(|(n, numeric)| (n.to_string(), *numeric))
            .collect(),
        rows,
    })
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
    format!(
        "rate schedule (phases of {phase_s} s, from the timeline):\n{}",
        render(&header, &rows)
    )
}
