//! Steady state as a table, for the HTML and Markdown reports: per run with `steady-state`,
//! the criterion and window judged, whether it was reached and after how long, and the last
//! window's mean with its largest deviation (or its slope), from the stored summary
//! (`results::steady`).

use crate::table::{Cell, Table, TableRow};
use storlab_results::summary::RunSummary;

/// What the table's figures are.
pub const STEADY_NOTE: &str = "Judged as fio does (ss, ss_dur, ss_ramp), on every target's successful operations (or bytes) per timeline interval, each over its real length; seconds from the start of measurement. Deviation: the largest distance of an interval from the window's mean; slope: the window's least-squares slope per second, as a share of its mean.";

const COLUMNS: [(&str, bool); 9] = [
    ("run", true),
    ("step", false),
    ("criterion", false),
    ("window s", true),
    ("ramp s", true),
    ("reached", false),
    ("after s", true),
    ("last window mean", true),
    ("deviation or slope %", true),
];

fn text(s: impl Into<String>) -> Cell {
    Cell {
        shown: s.into(),
        value: None,
    }
}

fn num(v: Option<f64>, digits: usize) -> Cell {
    match v {
        Some(v) => Cell {
            shown: format!("{v:.digits$}"),
            value: Some(v),
        },
        None => text("-"),
    }
}

/// The steady-state outcome of each run that asked for it, or None when none did.
pub fn steady_table<'a>(runs: impl IntoIterator<Item = &'a RunSummary>) -> Option<Table> {
    let rows: Vec<TableRow> = runs
        .into_iter()
        .filter_map(|s| {
            let ss = s.steady_state.as_ref()?;
            let reached = if ss.reached {
                "yes"
            } else if ss.cut_short {
                "no: stopped before its limit"
            } else {
                "no: ran to its limit"
            };
            let mean = match ss.window_mean {
                Some(m) => Cell {
                    shown: format!("{m:.1} {}", ss.unit),
                    value: Some(m),
                },
                None => text("-"),
            };
            Some(TableRow {
                keys: vec![("run", s.run_index.to_string())],
                cells: vec![
                    num(Some(s.run_index as f64), 0),
                    text(s.step.clone()),
                    text(ss.criterion.clone()),
                    num(Some(ss.window_seconds), 1),
                    num(Some(ss.ramp_seconds), 1),
                    text(reached),
                    num(ss.reached_after_seconds, 2),
                    mean,
                    num(ss.deviation_percent.or(ss.slope_percent), 2),
                ],
            })
        })
        .collect();
    (!rows.is_empty()).then(|| Table {
        columns: COLUMNS.iter().map(|(n, r)| (n.to_string(), *r)).collect(),
        rows,
    })
}
