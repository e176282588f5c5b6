//! The text a run shows when it ends and `storlab results show` prints: the results table,
//! then what else the run found (YCSB figures, verification, the client's CPU, events,
//! schedule phases, steady state, warnings and error samples). It composes the tables of
//! [`crate::table`], [`crate::events`] and [`crate::schedule`], which know nothing of it.

use crate::events::event_lines;
use crate::schedule::schedule_lines;
use crate::table::{HEADER, found_lines, render, rows, ycsb_lines};
use storlab_results::summary::RunSummary;

/// The full text shown when a run ends and by `storlab results show`.
pub fn run_table(s: &RunSummary) -> String {
    let params: Vec<String> = s
        .parameters
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let mut out = format!(
        "run {}/{} {}{} {}: {:.2} s measured (latency: service time, submit to completion)\n",
        s.run_index,
        s.run_count,
        s.step,
        if params.is_empty() {
            String::new()
        } else {
            format!(" [{}]", params.join(" "))
        },
        s.status.name(),
        s.measured_seconds
    );
    out.push_str(&render(&HEADER, &rows(s)));
    for l in found_lines(s) {
        out.push_str(&l);
        out.push('\n');
    }
    for l in ycsb_lines(s) {
        out.push_str(&l);
        out.push('\n');
    }
    out.push_str(&crate::training::text_lines(s));
    out.push_str(&crate::checkpoint::text_lines(s));
    for v in s.targets.iter().filter_map(|t| t.verify.as_ref()) {
        out.push_str(&v.text_table());
    }
    out.push_str(&format!(
        "client: {:.2} CPU-s, {:.2} of {} CPUs busy, busiest worker {:.0}% on CPU\n",
        s.client.cpu_seconds,
        s.client.cpu_cores_used,
        s.client.logical_cpus,
        s.client.worker_busy_max * 100.0
    ));
    out.push_str(&event_lines(s));
    if let Some(t) = crate::samples::samples_table([s]) {
        out.push_str("samples (the values printed during measurement):\n");
        out.push_str(&t.text_of_one_run());
    }
    out.push_str(&schedule_lines(s));
    if let Some(ss) = &s.steady_state {
        out.push_str(&format!("{}\n", ss.sentence()));
    }
    for w in &s.warnings {
        out.push_str(&format!("WARNING: {w}\n"));
    }
    for e in s.error_samples.iter().take(3) {
        out.push_str(&format!(
            "error sample: {} {}: {}\n",
            e.target, e.op, e.message
        ));
    }
    out
}
