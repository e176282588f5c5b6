//! Results made up in memory for tests, here and in the crates above (their dev-dependency
//! turns on the `fixtures` feature): a run summary with chosen targets and figures, the figures
//! of summaries without histograms, and a hand-written timeline. Not built otherwise.

use crate::comparison::RunFigures;
use crate::summary::{RunSummary, TargetResult};

/// The header of a timeline with its interval column (`interval_s`).
pub const NEW_HEADER: &str = "second,phase,interval_s,target,op,ops,rate_ops,bytes,rate_bytes,errors,p50_ns,p99_ns,max_ns,intended_p99_ns,intended_max_ns,client_cpu_cores";

/// A summary with one target per (name, ops/s, p99 ns), measured for one second.
pub fn summary(
    index: usize,
    step: &str,
    params: &[(&str, &str)],
    targets: &[(&str, f64, u64)],
) -> RunSummary {
    let mut s: RunSummary = serde_json::from_value(serde_json::json!({
        "run-id": format!("s-r{index:03}"), "study": "s", "step": step,
        "run-index": index, "run-count": 1, "repetition": 1, "parameters": {},
        "status": "complete", "end-reason": "duration", "started-at": "", "ended-at": "",
        "warmup-seconds": 0.0, "measured-seconds": 1.0, "targets": [],
        "total": TargetResult::default(),
        "client": crate::summary::ClientUsage::default(), "warnings": [], "events": [],
        "error-samples": []
    }))
    .expect("summary");
    s.parameters = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    s.targets = targets
        .iter()
        .map(|(n, rate, p99)| {
            let mut t = TargetResult {
                name: n.to_string(),
                ops: *rate as u64,
                rate_ops: *rate,
                bytes: (*rate * 4096.0) as u64,
                rate_bytes: rate * 4096.0,
                ..Default::default()
            };
            t.service_latency.p99_ns = *p99;
            t.service_latency.mean_ns = *p99 as f64 / 2.0;
            t
        })
        .collect();
    s
}

/// Figures from summaries alone (no histograms stored).
pub fn figures(runs: &[RunSummary]) -> Vec<RunFigures<'_>> {
    runs.iter()
        .map(|s| RunFigures {
            summary: s,
            histograms: Err("not stored".into()),
            plan: None,
            batches: Default::default(),
        })
        .collect()
}

/// A hand-written new-style timeline: two warm-up seconds with real operations, two whole
/// measured seconds and a last interval of 0.25 s.
pub fn new_style() -> String {
    let mut t = format!("{NEW_HEADER}\n");
    for (second, phase, len, ops) in [
        (-2, "warmup", 1.0, 400u64),
        (-1, "warmup", 1.0, 900),
        (0, "measure", 1.0, 1000),
        (1, "measure", 1.0, 1000),
        (2, "measure", 0.25, 250),
    ] {
        // Two kinds per second, half the operations each.
        for op in ["read", "write"] {
            let n = ops / 2;
            t.push_str(&format!(
                "{second},{phase},{len},a,{op},{n},{:.1},0,0.0,0,1,2,3,,,0.1\n",
                n as f64 / len
            ));
        }
    }
    t
}
