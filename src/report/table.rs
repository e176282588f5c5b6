//! The terminal table of one run: per target and operation kind, and the total.

use crate::results::summary::{KindResult, RunSummary};
use crate::units::format_ns;

const HEADER: [&str; 12] = [
    "target", "op", "ops", "ops/s", "MB/s", "mean", "p50", "p95", "p99", "p99.9", "max", "errors",
];

fn row(target: &str, op: &str, k: &KindResult) -> Vec<String> {
    let l = &k.service_latency;
    vec![
        target.to_string(),
        op.to_string(),
        k.ops.to_string(),
        format!("{:.0}", k.rate_ops),
        format!("{:.1}", k.rate_bytes / 1e6),
        format_ns(l.mean_ns),
        format_ns(l.p50_ns as f64),
        format_ns(l.p95_ns as f64),
        format_ns(l.p99_ns as f64),
        format_ns(l.p99_9_ns as f64),
        format_ns(l.max_ns as f64),
        k.errors.to_string(),
    ]
}

/// Rows of a summary: one per target and kind, one per target (all kinds) when it has several
/// kinds, and the total when there are several targets.
pub fn rows(s: &RunSummary) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for t in &s.targets {
        for (op, k) in &t.kinds {
            rows.push(row(&t.name, op, k));
            if let Some(il) = &k.intended_latency {
                let mut r = row(&t.name, &format!("{op} (from intended start)"), k);
                r[5] = format_ns(il.mean_ns);
                r[6] = format_ns(il.p50_ns as f64);
                r[7] = format_ns(il.p95_ns as f64);
                r[8] = format_ns(il.p99_ns as f64);
                r[9] = format_ns(il.p99_9_ns as f64);
                r[10] = format_ns(il.max_ns as f64);
                rows.push(r);
            }
        }
        if t.kinds.len() > 1 {
            rows.push(row(&t.name, "all", &as_kind(t)));
        }
    }
    if s.targets.len() > 1 {
        rows.push(row("total", "all", &as_kind(&s.total)));
    }
    // Background workers (readwhilewriting's writer), apart from the targets' figures.
    for b in &s.background {
        for (op, k) in &b.kinds {
            rows.push(row(&format!("{} (background)", b.name), op, k));
        }
    }
    rows
}

/// Key-value reads that found nothing, per target: `(target, found, total)` for kinds with
/// misses or reads (db_bench's "N of M found").
pub fn found_lines(s: &RunSummary) -> Vec<String> {
    let mut out = Vec::new();
    for t in &s.targets {
        for (op, k) in &t.kinds {
            if t.block_bytes == 0 && (op == "read" || op == "read-modify-write") {
                out.push(format!(
                    "{} {op}: {} of {} found",
                    t.name,
                    k.ops - k.misses,
                    k.ops
                ));
            }
        }
    }
    out
}

/// The YCSB brief's figures for a run phase, per target: run time (the measured time),
/// throughput (every finished operation over it, as YCSB counts), and the average read and
/// update latency (service time).
pub fn ycsb_lines(s: &RunSummary) -> Vec<String> {
    let mut out = Vec::new();
    for t in &s.targets {
        if t.workload_type != "ycsb-run" {
            continue;
        }
        let all = t.ops + t.errors;
        let mut line = format!(
            "{} ycsb: run time {:.3} s, throughput {:.2} ops/s",
            t.name,
            s.measured_seconds,
            all as f64 / s.measured_seconds.max(1e-9)
        );
        for op in ["read", "update", "insert", "scan", "read-modify-write"] {
            if let Some(k) = t.kinds.get(op) {
                line.push_str(&format!(
                    ", average {op} latency {}",
                    format_ns(k.service_latency.mean_ns)
                ));
            }
        }
        out.push(line);
    }
    out
}

fn as_kind(t: &crate::results::summary::TargetResult) -> KindResult {
    KindResult {
        ops: t.ops,
        bytes: t.bytes,
        misses: t.kinds.values().map(|k| k.misses).sum(),
        rate_ops: t.rate_ops,
        rate_bytes: t.rate_bytes,
        errors: t.errors,
        errors_by_kind: Default::default(),
        service_latency: t.service_latency.clone(),
        intended_latency: t.intended_latency.clone(),
    }
}

/// Renders aligned text columns.
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let pad = widths[i] - c.chars().count();
                if i < 2 {
                    format!("{c}{}", " ".repeat(pad))
                } else {
                    format!("{}{c}", " ".repeat(pad))
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = line(header.to_vec());
    out.push('\n');
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}

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
    out.push_str(&format!(
        "client: {:.2} CPU-s, {:.2} of {} CPUs busy, busiest worker {:.0}% on CPU\n",
        s.client.cpu_seconds,
        s.client.cpu_cores_used,
        s.client.logical_cpus,
        s.client.worker_busy_max * 100.0
    ));
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
