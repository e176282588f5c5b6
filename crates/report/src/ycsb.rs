//! YCSB-style result lines from stored summaries, for users comparing against YCSB:
//! `[OVERALL], RunTime(ms), N`, `[OVERALL], Throughput(ops/sec), X`, then per operation
//! `[READ], Operations, N`, `AverageLatency(us)`, `MinLatency(us)`, `MaxLatency(us)`,
//! `95thPercentileLatency(us)`, `99thPercentileLatency(us)` and the return codes
//! (`Return=OK`, `Return=NOT_FOUND` for reads that found nothing, `Return=ERROR`), and for
//! open-loop runs the same latency lines from the intended start as `[INTENDED-READ]`.
//! With `dataintegrity`, `[VERIFY]` counts the records checked and the mismatches
//! (`Return=UNEXPECTED_STATE`), as YCSB does.
//!
//! The figures are storlab's measurements with YCSB's definitions: RunTime is the measured
//! time, Throughput all operations finished (successful or not) over it, latencies from
//! storlab's HDR histograms in microseconds.

use storlab_record::summary::LatencySummary;
use storlab_results::summary::{KindResult, RunSummary};

/// Operation kinds in YCSB's names, in the order printed.
const KINDS: &[(&str, &str)] = &[
    ("read", "READ"),
    ("update", "UPDATE"),
    ("insert", "INSERT"),
    ("scan", "SCAN"),
    ("read-modify-write", "READ-MODIFY-WRITE"),
];

fn latency_lines(out: &mut Vec<String>, name: &str, operations: u64, l: &LatencySummary) {
    let us = |ns: u64| (ns as f64 / 1000.0).round() as u64;
    out.push(format!("[{name}], Operations, {operations}"));
    out.push(format!(
        "[{name}], AverageLatency(us), {}",
        l.mean_ns / 1000.0
    ));
    out.push(format!("[{name}], MinLatency(us), {}", us(l.min_ns)));
    out.push(format!("[{name}], MaxLatency(us), {}", us(l.max_ns)));
    out.push(format!(
        "[{name}], 95thPercentileLatency(us), {}",
        us(l.p95_ns)
    ));
    out.push(format!(
        "[{name}], 99thPercentileLatency(us), {}",
        us(l.p99_ns)
    ));
}

fn integrity(k: &KindResult) -> u64 {
    k.errors_by_kind.get("integrity").copied().unwrap_or(0)
}

/// The lines YCSB prints at the end of a phase. `verify`: `dataintegrity` was on.
pub fn lines(s: &RunSummary, verify: bool) -> Vec<String> {
    let mut out = Vec::new();
    let Some(t) = s.targets.first() else {
        out.push(format!("[OVERALL], no result ({})", s.status.name()));
        return out;
    };
    let secs = s.measured_seconds.max(1e-9);
    let all = t.ops + t.errors;
    out.push(format!(
        "[OVERALL], RunTime(ms), {}",
        (secs * 1000.0).round() as u64
    ));
    out.push(format!(
        "[OVERALL], Throughput(ops/sec), {}",
        all as f64 / secs
    ));
    let mut checked = 0u64;
    let mut mismatched = 0u64;
    for (key, name) in KINDS {
        let Some(k) = t.kinds.get(*key) else {
            continue;
        };
        let operations = k.ops + k.errors;
        latency_lines(&mut out, name, operations, &k.service_latency);
        let bad = integrity(k);
        out.push(format!("[{name}], Return=OK, {}", k.ops - k.misses));
        if k.misses > 0 {
            out.push(format!("[{name}], Return=NOT_FOUND, {}", k.misses));
        }
        if bad > 0 {
            out.push(format!("[{name}], Return=UNEXPECTED_STATE, {bad}"));
        }
        if k.errors > bad {
            out.push(format!("[{name}], Return=ERROR, {}", k.errors - bad));
        }
        if matches!(*key, "read" | "scan" | "read-modify-write") {
            checked += k.ops - k.misses + bad;
            mismatched += bad;
        }
    }
    for (key, name) in KINDS {
        if let Some(l) = t.kinds.get(*key).and_then(|k| k.intended_latency.as_ref()) {
            latency_lines(&mut out, &format!("INTENDED-{name}"), l.count, l);
        }
    }
    if verify && checked > 0 {
        out.push(format!("[VERIFY], Return=OK, {}", checked - mismatched));
        if mismatched > 0 {
            out.push(format!("[VERIFY], Return=UNEXPECTED_STATE, {mismatched}"));
        }
    }
    for (kind, n) in t
        .kinds
        .values()
        .flat_map(|k| k.errors_by_kind.iter())
        .filter(|(k, _)| k.as_str() != "integrity")
    {
        out.push(format!("[ERRORS], {kind}, {n}"));
    }
    out
}
