//! The study events of stored runs and the recovery around them, as tables: one row per
//! event (action, status, start and end from the start of measurement, duration, exit code,
//! what it did) and one per recovery (baseline, dip, outage, time to first success and to
//! recover, errors during the outage), and the run's throughput phase by phase between its
//! events. The terminal, Markdown and HTML reports show them.

use crate::table::{Cell, Table, TableRow};
use storlab_results::phases::Phase;
use storlab_results::recovery::Recovery;
use storlab_results::summary::RunSummary;

fn text(s: impl Into<String>) -> Cell {
    Cell {
        shown: s.into(),
        value: None,
    }
}

fn seconds(v: f64) -> Cell {
    Cell {
        shown: format!("{v:.3}"),
        value: Some(v),
    }
}

fn maybe(v: Option<f64>, digits: usize, none: &str) -> Cell {
    match v {
        Some(v) => Cell {
            shown: format!("{v:.digits$}"),
            value: Some(v),
        },
        None => text(none),
    }
}

const EVENT_COLUMNS: [(&str, bool); 9] = [
    ("run", true),
    ("event", false),
    ("action", false),
    ("status", false),
    ("start s", true),
    ("end s", true),
    ("duration s", true),
    ("exit code", true),
    ("what it did", false),
];

/// An event's detail, with the bytes a reported span moved and their rate.
fn what_it_did(detail: &str, o: &storlab_results::events::EventOutcome) -> String {
    let Some(bytes) = o.bytes else {
        return detail.to_string();
    };
    let moved = match o.rate_bytes {
        Some(r) => format!("{bytes} bytes, {:.1} MB/s", r / 1e6),
        None => format!("{bytes} bytes"),
    };
    if detail.is_empty() {
        moved
    } else {
        format!("{detail} ({moved})")
    }
}

/// The study events of `runs`, or None when they had none; a span a `sample` event's command
/// reported is one (`reported`), with the bytes it moved.
pub fn events_table<'a>(runs: impl IntoIterator<Item = &'a RunSummary>) -> Option<Table> {
    let mut rows = Vec::new();
    for s in runs {
        for e in &s.events {
            let Some(o) = &e.outcome else { continue };
            rows.push(TableRow {
                keys: vec![("run", s.run_index.to_string()), ("event", o.name.clone())],
                cells: vec![
                    text(s.run_index.to_string()),
                    text(o.name.clone()),
                    text(e.kind.clone()),
                    text(o.status.name()),
                    seconds(o.start_ns as f64 / 1e9),
                    seconds(o.end_ns as f64 / 1e9),
                    seconds(o.duration_seconds),
                    o.exit_code
                        .map_or_else(|| text("-"), |c| text(c.to_string())),
                    text(what_it_did(&e.detail, o)),
                ],
            });
        }
    }
    (!rows.is_empty()).then(|| Table {
        columns: EVENT_COLUMNS
            .iter()
            .map(|(n, num)| (n.to_string(), *num))
            .collect(),
        rows,
    })
}

const RECOVERY_COLUMNS: [(&str, bool); 10] = [
    ("run", true),
    ("event", false),
    ("at s", true),
    ("baseline ops/s", true),
    ("dip min ops/s", true),
    ("dip mean ops/s", true),
    ("outage s", true),
    ("first success after s", true),
    ("recovered after s", true),
    ("errors during outage", false),
];

fn errors_text(r: &Recovery) -> String {
    if r.errors_during_outage.is_empty() {
        return "none".into();
    }
    r.errors_during_outage
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The recovery metrics of `runs`, or None when they had none.
pub fn recovery_table<'a>(runs: impl IntoIterator<Item = &'a RunSummary>) -> Option<Table> {
    let mut rows = Vec::new();
    for s in runs {
        for r in &s.recovery {
            rows.push(TableRow {
                keys: vec![("run", s.run_index.to_string()), ("event", r.event.clone())],
                cells: vec![
                    text(s.run_index.to_string()),
                    text(r.event.clone()),
                    seconds(r.event_seconds),
                    maybe(r.baseline_rate_ops, 0, "no baseline"),
                    maybe(r.dip_min_rate_ops, 0, "-"),
                    maybe(r.dip_mean_rate_ops, 0, "-"),
                    seconds(r.outage_seconds),
                    maybe(r.time_to_first_success_seconds, 3, "none after it"),
                    maybe(
                        r.time_to_recover_seconds,
                        3,
                        if r.baseline_rate_ops.is_some() {
                            "never recovered"
                        } else {
                            "no baseline"
                        },
                    ),
                    text(errors_text(r)),
                ],
            });
        }
    }
    (!rows.is_empty()).then(|| Table {
        columns: RECOVERY_COLUMNS
            .iter()
            .map(|(n, num)| (n.to_string(), *num))
            .collect(),
        rows,
    })
}

/// One recovery in a sentence: when, the outage, the first success, the return to the baseline.
pub fn recovery_summary(r: &storlab_results::recovery::Recovery) -> String {
    let back = match (r.time_to_recover_seconds, r.baseline_rate_ops) {
        (Some(t), Some(b)) => format!(
            "throughput back within {:.0}% of the {:.0} ops/s before it after {t:.3} s",
            r.recovered_within * 100.0,
            b
        ),
        (None, Some(_)) => "throughput never back to the level before it".into(),
        (_, None) => "no baseline before it".into(),
    };
    let first = match r.time_to_first_success_seconds {
        Some(t) => format!("first success after {t:.3} s"),
        None => "no success after it".into(),
    };
    format!(
        "at {:.3} s: outage {:.3} s, {first}, {back}; errors: {}",
        r.event_seconds,
        r.outage_seconds,
        errors_text(r)
    )
}

/// What recovery figures mean, under their table.
pub const RECOVERY_NOTE: &str = "Recovery, from the stored timeline: baseline = mean ops/s over the window before the event; dip = lowest and mean ops/s from the event until recovered; outage = the longest span after the event in which no operation succeeded; recovered = throughput back to at least (1 - recovered-within) x the baseline and staying there for `settle`. Every time has the timeline interval's resolution.";

const PHASE_COLUMNS: [(&str, bool); 8] = [
    ("run", true),
    ("from", false),
    ("to", false),
    ("from s", true),
    ("to s", true),
    ("ops/s", true),
    ("ops", true),
    ("errors", false),
];

fn phase_errors(p: &Phase) -> String {
    if p.errors == 0 {
        return "0".into();
    }
    let kinds: Vec<String> = p
        .errors_by_kind
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    format!("{} ({})", p.errors, kinds.join(", "))
}

/// Throughput between the events of `runs` (see `results::phases`), or None when none had
/// events during measurement.
pub fn phases_table<'a>(runs: impl IntoIterator<Item = &'a RunSummary>) -> Option<Table> {
    let mut rows = Vec::new();
    for s in runs {
        for p in &s.phases {
            rows.push(phase_row(s.run_index, p));
        }
    }
    (!rows.is_empty()).then(|| Table {
        columns: PHASE_COLUMNS
            .iter()
            .map(|(n, num)| (n.to_string(), *num))
            .collect(),
        rows,
    })
}

fn phase_row(run_index: usize, p: &Phase) -> TableRow {
    TableRow {
        keys: vec![
            ("run", run_index.to_string()),
            ("from", format!("{:.3}", p.from_seconds)),
        ],
        cells: vec![
            text(run_index.to_string()),
            text(p.from.clone()),
            text(p.to.clone()),
            seconds(p.from_seconds),
            seconds(p.to_seconds),
            Cell {
                shown: format!("{:.0}", p.rate_ops),
                value: Some(p.rate_ops),
            },
            Cell {
                shown: p.ops.to_string(),
                value: Some(p.ops as f64),
            },
            text(phase_errors(p)),
        ],
    }
}

/// What the phase figures mean, under their table.
pub const PHASES_NOTE: &str = "Phases, from the stored timeline: the run split at the start of every event that ran during measurement (and at the end of one that lasted an interval or more), each boundary moved to the nearest interval edge; ops/s = successful operations of the phase's intervals over their length.";

/// The events and recovery of one run, as text for the terminal (empty when it had none).
pub fn event_lines(s: &RunSummary) -> String {
    let mut out = String::new();
    let table_text = Table::text_of_one_run;
    if let Some(t) = events_table([s]) {
        out.push_str("events (seconds from the start of measurement):\n");
        out.push_str(&table_text(&t));
    }
    if let Some(t) = recovery_table([s]) {
        out.push_str(&format!(
            "recovery (resolution: the {} s timeline interval):\n",
            s.recovery.first().map_or(0.0, |r| r.interval_seconds)
        ));
        out.push_str(&table_text(&t));
        for r in s.recovery.iter().filter(|r| !r.note.is_empty()) {
            out.push_str(&format!("recovery after `{}`: {}\n", r.event, r.note));
        }
    }
    if let Some(t) = phases_table([s]) {
        out.push_str("phases (split at the events, on interval edges):\n");
        out.push_str(&table_text(&t));
    }
    out
}
