//! db_bench-style result lines from stored summaries, for users comparing against db_bench:
//! `readrandom : 12.345 micros/op 81004 ops/sec 10.000 seconds 810040 operations; 316.4 MB/s
//! (502731 of 810040 found)`.
//!
//! The figures are storlab's own measurements with db_bench's definitions: ops/sec is the
//! foreground threads' operations over the measured wall time (readwhilewriting's writer is
//! excluded, as in db_bench); micros/op is thread-seconds per operation (threads x seconds /
//! operations, which db_bench computes as the sum of each thread's elapsed time over all
//! operations); MB/s is key and value bytes moved per second, in MiB.

use storlab_results::summary::RunSummary;

/// The result line of one benchmark run.
pub fn result_line(benchmark: &str, s: &RunSummary) -> String {
    let Some(t) = s.targets.first() else {
        return format!("{benchmark:<12} : no result ({})", s.status.name());
    };
    let secs = s.measured_seconds.max(1e-9);
    let ops = t.ops.max(1);
    let micros_per_op = t.threads as f64 * secs * 1e6 / ops as f64;
    let mut extra = String::new();
    if t.bytes > 0 {
        extra.push_str(&format!("{:6.1} MB/s", t.bytes as f64 / 1048576.0 / secs));
    }
    let msg = match benchmark {
        "readrandom" | "readwhilewriting" | "readseq" => t
            .kinds
            .get("read")
            .map(|k| format!("({} of {} found)", k.ops - k.misses, k.ops)),
        "updaterandom" => t
            .kinds
            .get("read-modify-write")
            .map(|k| format!("( updates:{} found:{})", k.ops, k.ops - k.misses)),
        _ => None,
    };
    if let Some(m) = msg {
        if !extra.is_empty() {
            extra.push(' ');
        }
        extra.push_str(&m);
    }
    format!(
        "{:<12} : {:11.3} micros/op {} ops/sec {:.3} seconds {} operations;{}{}",
        benchmark,
        micros_per_op,
        (t.ops as f64 / secs) as u64,
        secs,
        t.ops,
        if extra.is_empty() { "" } else { " " },
        extra
    )
}

/// db_bench's `--histogram` summary, in microseconds, from the stored latency summary.
pub fn histogram_lines(s: &RunSummary) -> Vec<String> {
    let mut out = Vec::new();
    for t in &s.targets {
        for (op, k) in &t.kinds {
            let l = &k.service_latency;
            let us = |ns: u64| ns as f64 / 1000.0;
            out.push(format!("Microseconds per {op}:"));
            out.push(format!(
                "Count: {} Average: {:.4}  Min: {:.2}  Max: {:.2}",
                l.count,
                l.mean_ns / 1000.0,
                us(l.min_ns),
                us(l.max_ns)
            ));
            out.push(format!(
                "Percentiles: P50: {:.2} P90: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}",
                us(l.p50_ns),
                us(l.p90_ns),
                us(l.p99_ns),
                us(l.p99_9_ns),
                us(l.p99_99_ns)
            ));
        }
    }
    for b in &s.background {
        if let Some(k) = b.kinds.get("write") {
            out.push(format!(
                "background writer: {} puts, {:.0} puts/s, {:.1} MB/s, p99 {:.2} us (excluded from the figures above)",
                k.ops,
                k.rate_ops,
                k.rate_bytes / 1048576.0,
                k.service_latency.p99_ns as f64 / 1000.0
            ));
        }
    }
    out
}
