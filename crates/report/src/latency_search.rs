//! The latency-target search (see [`storlab_model::latency_target`]) in the reports: a table
//! of every window each worker judged (its depth, completions, latency at the percentile from
//! the window's HDR histogram, pass or fail) and the answer; and, for `storlab fio`, fio's
//! `latency   :` line and JSON fields.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::table::{Cell, Table, TableRow};
use storlab_model::latency_target::LatencySearchResult;
use storlab_results::summary::RunSummary;

/// What the table's figures are.
pub const SEARCH_NOTE: &str = "The latency-target search as fio 3.33 runs it (latency_target, latency_window, latency_percentile): each worker starts at queue depth 1; a window passes when at least the percentile of its completions took no longer than the target, and then the depth doubles (until a window has failed, then it goes halfway to the lowest failing depth); a failure drains what is in flight and goes halfway down to the last passing depth. When a pass leaves the depth unchanged, one final window at it ends the run. Latency at the percentile: each window's own HDR histogram; end: seconds from the start of measurement.";

const COLUMNS: [(&str, bool); 10] = [
    ("run", true),
    ("target", false),
    ("worker", true),
    ("window end s", true),
    ("queue depth", true),
    ("completions", true),
    ("over target", true),
    ("latency at percentile us", true),
    ("passed", false),
    ("final", false),
];

/// Every window of every run's searches, or None when no run searched.
pub fn search_table<'a>(runs: impl IntoIterator<Item = &'a RunSummary>) -> Option<Table> {
    let mut rows = Vec::new();
    for s in runs {
        for r in &s.latency_search {
            for w in &r.steps {
                rows.push(TableRow {
                    keys: vec![("run", s.run_index.to_string())],
                    cells: vec![
                        Cell::num(s.run_index as f64, 0),
                        Cell::text(r.target.clone()),
                        Cell::num(r.worker as f64, 0),
                        Cell::num(w.end_ns as f64 / 1e9, 3),
                        Cell::num(w.queue_depth as f64, 0),
                        Cell::num(w.ops as f64, 0),
                        Cell::num(w.ops_over_target as f64, 0),
                        Cell::num(w.percentile_latency_ns as f64 / 1e3, 1),
                        Cell::text(if w.passed { "yes" } else { "no" }),
                        Cell::text(if w.final_window { "yes" } else { "" }),
                    ],
                });
            }
        }
    }
    (!rows.is_empty()).then(|| Table {
        columns: COLUMNS.iter().map(|(n, r)| (n.to_string(), *r)).collect(),
        rows,
    })
}

/// One sentence per search: its settings and answer.
pub fn sentence(r: &LatencySearchResult) -> String {
    format!(
        "{} worker {}: target {:.1} us at the {}th percentile, windows of {:.3} s: queue depth {}{}",
        r.target,
        r.worker,
        r.target_latency_ns as f64 / 1e3,
        r.percentile,
        r.window_ns as f64 / 1e9,
        r.queue_depth,
        if r.found {
            " (confirmed by a final window)"
        } else {
            " (the run ended before a final window confirmed it)"
        }
    )
}

/// The Markdown section, when a run searched.
pub fn markdown(summaries: &[RunSummary]) -> String {
    let Some(t) = search_table(summaries) else {
        return String::new();
    };
    let mut out = format!(
        "\n## Latency-target search\n\n{}\n{SEARCH_NOTE}\n\n",
        t.markdown()
    );
    for s in summaries {
        for r in &s.latency_search {
            let _ = writeln!(out, "- run {}: {}", s.run_index, sentence(r));
        }
    }
    out
}

/// fio's line (stat.c): `latency   : target=NS, window=US, percentile=P%, depth=N`, then
/// storlab's windows, one line each.
pub fn fio_lines(out: &mut String, r: &LatencySearchResult) {
    let _ = writeln!(
        out,
        "     latency   : target={}, window={}, percentile={:.2}%, depth={}",
        r.target_latency_ns,
        r.window_ns / 1000,
        r.percentile,
        r.queue_depth
    );
    for w in &r.steps {
        let _ = writeln!(
            out,
            "     latency search: depth={}, ios={}, over target={}, {:.2}th={}us: {}{}",
            w.queue_depth,
            w.ops,
            w.ops_over_target,
            r.percentile,
            w.percentile_latency_ns / 1000,
            if w.passed { "pass" } else { "fail" },
            if w.final_window { " (final)" } else { "" }
        );
    }
}

/// fio's JSON fields of a job entry (stat.c): `latency_depth`, `latency_target` (ns),
/// `latency_percentile`, `latency_window` (µs).
pub fn fio_json_fields(m: &mut Map<String, Value>, r: &LatencySearchResult) {
    m.insert("latency_depth".into(), json!(r.queue_depth));
    m.insert("latency_target".into(), json!(r.target_latency_ns));
    m.insert("latency_percentile".into(), json!(r.percentile));
    m.insert("latency_window".into(), json!(r.window_ns / 1000));
}

/// The windows of a job's search, for the JSON's `storlab` object.
pub fn steps_json(job: &str, r: &LatencySearchResult) -> Value {
    json!({"job": job, "target": r.target, "queue-depth": r.queue_depth, "found": r.found,
        "steps": serde_json::to_value(&r.steps).unwrap_or(Value::Null)})
}
