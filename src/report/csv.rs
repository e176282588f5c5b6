//! The results as CSV: one row per run, target and operation kind (and `all` for a target with
//! several kinds), with the stored values unrounded (latencies in ns, rates per second), for
//! spreadsheets and scripts. Credentials are redacted.

use crate::report::load::StoredRun;

pub const HEADER: &str = "study,step,run_id,run_index,repetition,parameters,target,op,status,saturated,measured_seconds,ops,bytes,rate_ops,rate_bytes,errors,mean_ns,p50_ns,p90_ns,p95_ns,p99_ns,p99_9_ns,p99_99_ns,max_ns";

/// Quotes a field when it holds a comma, quote or line break.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The CSV text, header first.
pub fn report_csv(runs: &[StoredRun]) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for r in runs {
        let s = &r.summary;
        let params: Vec<String> = s
            .parameters
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        for t in &s.targets {
            let mut rows: Vec<(
                &str,
                u64,
                u64,
                f64,
                f64,
                u64,
                &crate::record::summary::LatencySummary,
            )> = t
                .kinds
                .iter()
                .map(|(op, k)| {
                    (
                        op.as_str(),
                        k.ops,
                        k.bytes,
                        k.rate_ops,
                        k.rate_bytes,
                        k.errors,
                        &k.service_latency,
                    )
                })
                .collect();
            if t.kinds.len() > 1 {
                rows.push((
                    "all",
                    t.ops,
                    t.bytes,
                    t.rate_ops,
                    t.rate_bytes,
                    t.errors,
                    &t.service_latency,
                ));
            }
            for (op, ops, bytes, rate_ops, rate_bytes, errors, l) in rows {
                let cells = [
                    field(&s.study),
                    field(&s.step),
                    field(&s.run_id),
                    s.run_index.to_string(),
                    s.repetition.to_string(),
                    field(&params.join(" ")),
                    field(&t.name),
                    field(op),
                    s.status.name().to_string(),
                    s.client.saturated.to_string(),
                    s.measured_seconds.to_string(),
                    ops.to_string(),
                    bytes.to_string(),
                    rate_ops.to_string(),
                    rate_bytes.to_string(),
                    errors.to_string(),
                    l.mean_ns.to_string(),
                    l.p50_ns.to_string(),
                    l.p90_ns.to_string(),
                    l.p95_ns.to_string(),
                    l.p99_ns.to_string(),
                    l.p99_9_ns.to_string(),
                    l.p99_99_ns.to_string(),
                    l.max_ns.to_string(),
                ];
                out.push_str(&cells.join(","));
                out.push('\n');
            }
        }
    }
    crate::results::redact(&out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields_are_quoted_when_needed() {
        assert_eq!(super::field("a,b"), "\"a,b\"");
        assert_eq!(super::field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(super::field("plain"), "plain");
    }
}
