//! The results as CSV: one row per run, target and operation kind (and `all` for a target with
//! several kinds), with the stored values unrounded (latencies in ns, rates per second), for
//! spreadsheets and scripts. Credentials are redacted.

use crate::table::result_rows;
use storlab_results::comparison::parameters_text;
use storlab_results::stored::StoredRun;

pub const HEADER: &str = "study,step,run_id,run_index,repetition,parameters,target,op,status,saturated,measured_seconds,ops,bytes,rate_ops,rate_bytes,errors,mean_ns,p50_ns,p90_ns,p95_ns,p99_ns,p99_9_ns,p99_99_ns,max_ns";

/// Quotes a field when it holds a comma, quote or line break.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The CSV text, header first: the rows of the results table, values unrounded.
pub fn report_csv(runs: &[StoredRun]) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for r in runs {
        let s = &r.summary;
        for row in result_rows(s) {
            let l = row.latency;
            let cells = [
                field(&s.study),
                field(&s.step),
                field(&s.run_id),
                s.run_index.to_string(),
                s.repetition.to_string(),
                field(&parameters_text(&s.parameters)),
                field(&row.target.name),
                field(row.op),
                s.status.name().to_string(),
                s.client.saturated.to_string(),
                row.target
                    .measured_seconds
                    .unwrap_or(s.measured_seconds)
                    .to_string(),
                row.ops.to_string(),
                row.bytes.to_string(),
                row.rate_ops.to_string(),
                row.rate_bytes.to_string(),
                row.errors.to_string(),
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
    storlab_results::redact(&out)
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
