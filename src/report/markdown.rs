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
    out.push_str("| run | step | parameters | target | op | ops/s | MB/s | mean | p50 | p95 | p99 | p99.9 | max | errors | status |\n");
    out.push_str("|---:|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
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
                    "| {} | {} | {} | {} | {} | {:.0} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                    s.run_index,
                    s.step,
                    params,
                    t.name,
                    op,
                    k.rate_ops,
                    k.rate_bytes / 1e6,
                    format_ns(l.mean_ns),
                    format_ns(l.p50_ns as f64),
                    format_ns(l.p95_ns as f64),
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

/// The report of stored runs as Markdown: summary, call-outs, warnings, one table per workload
/// (the same figures as the HTML report) and the disclosure. Credentials are redacted.
pub fn report_markdown(runs: &[crate::report::load::StoredRun]) -> String {
    use crate::report::html::thousands;
    use crate::report::model;
    let summaries: Vec<RunSummary> = runs.iter().map(|r| r.summary.clone()).collect();
    let groups = model::group_runs(&summaries);
    let mut studies: Vec<&str> = Vec::new();
    for s in &summaries {
        if !studies.contains(&s.study.as_str()) {
            studies.push(&s.study);
        }
    }
    let mut out = format!("# storlab brief: {}\n\n", studies.join(", "));
    out.push_str(&format!(
        "{} run{}; report from stored results only.\n\n## Summary\n\n",
        runs.len(),
        if runs.len() == 1 { "" } else { "s" }
    ));
    for g in &groups {
        for (series, p) in model::peaks(g) {
            out.push_str(&format!(
                "- {}, **{}**: peak **{} ops/s** ({:.1} MB/s){}, p99 {}\n",
                g.step,
                series,
                thousands(p.rate_ops),
                p.rate_bytes / 1e6,
                g.at(&p.x),
                format_ns(p.p99_latency_ns)
            ));
        }
    }
    let callouts: Vec<String> = groups
        .iter()
        .flat_map(|g| {
            model::callouts(g)
                .into_iter()
                .map(move |c| format!("- {}: {}", g.step, c.text))
        })
        .collect();
    if !callouts.is_empty() {
        out.push_str("\n### Call-outs\n\n");
        out.push_str(&callouts.join("\n"));
        out.push('\n');
    }
    let warnings = model::warnings(&summaries);
    if !warnings.is_empty() {
        out.push_str("\n### Warnings\n\n");
        for w in warnings {
            out.push_str(&format!("- **WARNING** {w}\n"));
        }
    }
    for g in &groups {
        out.push_str(&format!("\n## Workload: {}\n\n", g.step));
        out.push_str("| run | parameters | target | op | ops | ops/s | MB/s | mean | p50 | p95 | p99 | p99.9 | max | errors | status |\n");
        out.push_str("|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
        for &ri in &g.runs {
            let s = &runs[ri].summary;
            let params = if s.parameters.is_empty() {
                "-".to_string()
            } else {
                s.parameters
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            for t in &s.targets {
                let mut rows: Vec<(
                    String,
                    u64,
                    f64,
                    f64,
                    &crate::record::summary::LatencySummary,
                    u64,
                )> = t
                    .kinds
                    .iter()
                    .map(|(op, k)| {
                        (
                            op.clone(),
                            k.ops,
                            k.rate_ops,
                            k.rate_bytes,
                            &k.service_latency,
                            k.errors,
                        )
                    })
                    .collect();
                if t.kinds.len() > 1 {
                    rows.push((
                        "all".into(),
                        t.ops,
                        t.rate_ops,
                        t.rate_bytes,
                        &t.service_latency,
                        t.errors,
                    ));
                }
                for (op, ops, rate, bytes, l, errors) in rows {
                    out.push_str(&format!(
                        "| {} | {} | {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                        s.run_index,
                        params,
                        t.name,
                        op,
                        ops,
                        thousands(rate),
                        bytes / 1e6,
                        format_ns(l.mean_ns),
                        format_ns(l.p50_ns as f64),
                        format_ns(l.p95_ns as f64),
                        format_ns(l.p99_ns as f64),
                        format_ns(l.p99_9_ns as f64),
                        format_ns(l.max_ns as f64),
                        errors,
                        s.status.name()
                    ));
                }
            }
        }
        for &ri in &g.runs {
            for l in crate::report::table::ycsb_lines(&runs[ri].summary) {
                out.push_str(&format!("\n- run {}: {l}", runs[ri].summary.run_index));
            }
        }
        out.push('\n');
    }
    out.push_str(
        "\n## Method\n\n\
         - ops/s and MB/s: successful operations (bytes) completed during measurement, divided by the \
         time from the start of measurement to the last measured completion. MB = 10^6 bytes.\n\
         - Latency is service time: from submission to observed completion, recorded in HDR \
         histograms with 3 significant digits (1 ns to 1 h). Warm-up operations are not recorded.\n",
    );
    out.push_str("\n## Appendix: full disclosure\n");
    let mut shown = Vec::new();
    for r in runs {
        if let Some(sys) = &r.system {
            let key = (
                sys.hostname.clone(),
                sys.targets
                    .iter()
                    .map(|t| t.path.clone())
                    .collect::<Vec<_>>(),
            );
            if shown.contains(&key) {
                continue;
            }
            shown.push(key);
            out.push_str(&format!(
                "\n### System (captured at run {})\n\n",
                r.summary.run_index
            ));
            out.push_str(&crate::results::system::to_markdown(sys));
        }
    }
    let mut texts: Vec<&str> = Vec::new();
    for r in runs {
        if let Some(t) = r.study_text.as_deref().filter(|t| !texts.contains(t)) {
            texts.push(t);
        }
    }
    for t in texts {
        out.push_str(&format!(
            "\n### Study file as run\n\n```toml\n{}\n```\n",
            t.trim_end()
        ));
    }
    crate::results::redact(&out)
}
