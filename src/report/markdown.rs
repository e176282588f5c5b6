//! Markdown summary of a study's runs: what was tested, one table row per run and target, the
//! warnings, and the methodology in two lines. `storlab brief` writes it as `brief.md`.

use crate::results::summary::RunSummary;
use crate::results::system::SystemInfo;
use crate::units::format_ns;

/// A Markdown report of the given runs.
pub fn study_markdown(
    title: &str,
    description: Option<&str>,
    runs: &[RunSummary],
    system: Option<&SystemInfo>,
) -> String {
    let mut out = format!("# {title}\n\n");
    if let Some(d) = description {
        out.push_str(&format!("{d}\n\n"));
    }
    out.push_str("| run | step | parameters | target | op | ops/s | MB/s | mean | p50 | p99 | p99.9 | max | errors | status |\n");
    out.push_str("|---:|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for s in runs {
        let params = s
            .parameters
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        for t in &s.targets {
            for (op, k) in &t.kinds {
                let l = &k.service_latency;
                out.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {:.0} | {:.1} | {} | {} | {} | {} | {} | {} | {} |\n",
                    s.run_index,
                    s.step,
                    params,
                    t.name,
                    op,
                    k.rate_ops,
                    k.rate_bytes / 1e6,
                    format_ns(l.mean_ns),
                    format_ns(l.p50_ns as f64),
                    format_ns(l.p99_ns as f64),
                    format_ns(l.p99_9_ns as f64),
                    format_ns(l.max_ns as f64),
                    k.errors,
                    s.status.name()
                ));
            }
        }
    }
    let warnings: Vec<String> = runs
        .iter()
        .flat_map(|s| {
            s.warnings
                .iter()
                .map(move |w| format!("- run {}: {w}", s.run_index))
        })
        .collect();
    if !warnings.is_empty() {
        out.push_str("\n## Warnings\n\n");
        out.push_str(&warnings.join("\n"));
        out.push('\n');
    }
    out.push_str(
        "\n## Method\n\n\
         - ops/s and MB/s: successful operations (bytes) completed during measurement, divided by the \
         time from the start of measurement to the last measured completion. MB = 10^6 bytes.\n\
         - Latency is service time: from submission to observed completion, recorded in HDR \
         histograms with 3 significant digits (1 ns to 1 h). Warm-up operations are not recorded.\n",
    );
    if let Some(sys) = system {
        out.push_str("\n## System\n\n");
        out.push_str(&crate::results::system::to_markdown(sys));
    }
    out
}
