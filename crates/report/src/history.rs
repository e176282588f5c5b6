//! A target's history in the terminal (`storlab results history`): each run's ops/s and p99
//! with its interval, and the change points ([`storlab_results::comparison::history`]).

use std::fmt::Write;

use crate::table::{render, thousands};
use storlab_model::units::format_ns;
use storlab_results::comparison::history::HistoryRun;
use storlab_results::comparison::uncertainty::Interval;

/// The table, then how to read it.
pub fn history_text(runs: &[HistoryRun], confidence: f64) -> String {
    let c = format!("{:.0}% CI", confidence * 100.0);
    let header = [
        "run",
        "started (UTC)",
        "step",
        "point",
        "ops/s",
        &format!("ops/s {c}"),
        "p99",
        &format!("p99 {c}"),
        "change",
    ];
    let range = |i: Option<Interval>, show: &dyn Fn(f64) -> String| {
        i.map_or("-".to_string(), |i| {
            format!("{}-{}", show(i.low), show(i.high))
        })
    };
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let change: Vec<String> = [(r.rate_ops_change, "ops/s"), (r.p99_change, "p99")]
                .iter()
                .filter_map(|(c, what)| c.map(|c| format!("{what} {}", c.name())))
                .collect();
            vec![
                r.run_id.clone(),
                r.started_at.clone(),
                r.step.clone(),
                if r.parameters.is_empty() {
                    "-".into()
                } else {
                    r.parameters.clone()
                },
                thousands(r.rate_ops),
                range(r.rate_ops_interval, &|v| thousands(v)),
                format_ns(r.p99_ns as f64),
                range(r.p99_interval, &|v| format_ns(v)),
                change.join(", "),
            ]
        })
        .collect();
    let mut out = render(&header, &rows);
    let _ = writeln!(
        out,
        "intervals: each run's own (the noise within it); change: outside the {:.0}% prediction \
         interval of the runs of its step and point before it (docs/metrics.md)",
        confidence * 100.0
    );
    out
}
