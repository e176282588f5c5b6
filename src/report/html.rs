//! The self-contained HTML brief: a summary on top (what was tested, headline figures,
//! call-outs computed from the data), warnings wherever storlab was saturated or a run was
//! partial, per workload a table and inline SVG charts (grouped ops/s bars, latency against
//! throughput, HDR percentile curves, efficiency), the per-second timelines with moving
//! averages and marked events, and the disclosure appendix. Styles and charts are inline: no
//! network access is needed to view or print it. A small inline script checks on load that
//! every chart drew something and marks the page (`data-charts`) for the browser test.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::report::load::{StoredRun, hlog_tag};
use crate::report::model::{self, Group};
use crate::report::svg::{self, Highlight, Mark, Series, XAxis, esc};
use crate::results::redact;
use crate::results::system::SystemInfo;
use crate::units::format_ns;

pub const STYLE: &str = r#"
body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;max-width:1100px;margin:24px auto;padding:0 16px;color:#222;line-height:1.4}
h1{font-size:26px;margin-bottom:4px}h2{border-bottom:2px solid #0072B2;padding-bottom:3px;margin-top:36px}
h3{margin-top:24px}.meta{color:#666;font-size:13px}
table{border-collapse:collapse;margin:10px 0;font-size:12.5px}
th,td{border:1px solid #ccc;padding:3px 7px;vertical-align:top}th{background:#f0f4f8;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.callouts li{font-weight:bold;color:#8a3a00}
.warning{background:#fff4e5;border:2px solid #D55E00;padding:8px 14px;margin:12px 0}
.warning b{color:#b00}
svg.chart{max-width:100%;height:auto;display:block;margin:12px 0;page-break-inside:avoid}
pre{background:#f6f6f6;border:1px solid #ddd;padding:8px;font-size:12px;overflow-x:auto;white-space:pre-wrap}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px;font-size:13px}dt{font-weight:bold}dd{margin:0}
@media print{body{max-width:none;margin:0}h2{page-break-before:auto}section{page-break-inside:auto}.noprint{display:none}}
"#;

/// Checks every chart drew at least one non-empty mark (a bar or point with an area, a line
/// with a length); marks the page with `data-charts` and reports empty charts on the console.
pub const SCRIPT: &str = r#"
(function(){
  var charts=document.querySelectorAll('svg.chart');var empty=[];
  charts.forEach(function(c){
    var marks=c.querySelectorAll('rect.bar,circle.pt,path.series');var ok=false;
    marks.forEach(function(m){var b=m.getBBox();
      var drawn=m.tagName==='path'?(b.width>0||b.height>0):(b.width>0&&b.height>0);
      if(drawn){ok=true;}});
    if(!ok){empty.push(c.id);}
  });
  document.body.setAttribute('data-charts',empty.length?('EMPTY:'+empty.join(',')):('OK:'+charts.length));
  if(empty.length){console.error('storlab report: empty charts: '+empty.join(', '));}
})();
"#;

/// Thousands separators: `616,344`.
pub fn thousands(v: f64) -> String {
    let s = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 && s != "0" {
        format!("-{out}")
    } else {
        out
    }
}

fn params_text(p: &BTreeMap<String, String>) -> String {
    if p.is_empty() {
        return "-".into();
    }
    p.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A numeric cell carrying the stored value (`data-value`) and showing it formatted.
fn num_cell(shown: &str, value: f64) -> String {
    format!(
        r#"<td class="n" data-value="{}">{}</td>"#,
        svg::num_attr(value),
        esc(shown)
    )
}

fn latency_cells(l: &crate::record::summary::LatencySummary) -> String {
    [
        ("mean", l.mean_ns),
        ("p50", l.p50_ns as f64),
        ("p95", l.p95_ns as f64),
        ("p99", l.p99_ns as f64),
        ("p99.9", l.p99_9_ns as f64),
        ("max", l.max_ns as f64),
    ]
    .iter()
    .map(|(_, v)| num_cell(&format_ns(*v), *v))
    .collect()
}

/// A short description of a workload from the stored plan.
fn workload_text(w: &serde_json::Value) -> String {
    let Some(o) = w.as_object() else {
        return String::new();
    };
    let mut parts = Vec::new();
    for (k, v) in o {
        if v.is_null() || k == "seed" || k == "write-pattern" {
            continue;
        }
        let v = match v {
            serde_json::Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        parts.push(format!("{k} {v}"));
    }
    parts.join(", ")
}

fn config_text(c: &serde_json::Value) -> String {
    let Some(o) = c.as_object() else {
        return String::new();
    };
    o.iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k} {s}"),
            v => format!("{k} {v}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The whole report.
pub fn report_html(runs: &[StoredRun]) -> String {
    let summaries: Vec<_> = runs.iter().map(|r| r.summary.clone()).collect();
    let groups = model::group_runs(&summaries);
    let mut studies: Vec<&str> = Vec::new();
    for s in &summaries {
        if !studies.contains(&s.study.as_str()) {
            studies.push(&s.study);
        }
    }
    let title = format!("storlab brief: {}", studies.join(", "));
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>{STYLE}</style></head><body>\n",
        esc(&title)
    );
    let first = runs.first();
    let _ = writeln!(
        h,
        "<h1>{}</h1><p class=\"meta\">{} run{} from {} to {}; report by storlab {} from stored results only.</p>",
        esc(&title),
        runs.len(),
        if runs.len() == 1 { "" } else { "s" },
        esc(summaries
            .iter()
            .map(|s| s.started_at.as_str())
            .min()
            .unwrap_or("")),
        esc(summaries
            .iter()
            .map(|s| s.ended_at.as_str())
            .max()
            .unwrap_or("")),
        env!("CARGO_PKG_VERSION"),
    );

    // Summary.
    h.push_str("<section id=\"summary\"><h2>Summary</h2>\n");
    if let Some(d) = first
        .and_then(|r| r.study_text.as_deref())
        .and_then(study_description)
    {
        let _ = write!(h, "<p>{}</p>", esc(&d));
    }
    h.push_str("<h3>What was tested</h3><ul>\n");
    for g in &groups {
        let run = &runs[g.runs[0]];
        let mut targets = Vec::new();
        for (i, t) in run.summary.targets.iter().enumerate() {
            let cfg = run
                .target_config_json(i)
                .map(config_text)
                .unwrap_or_default();
            targets.push(format!("<b>{}</b> ({})", esc(&t.name), esc(&cfg)));
        }
        // Targets from other runs of the group (targets in separate runs).
        for &ri in &g.runs[1..] {
            for (i, t) in runs[ri].summary.targets.iter().enumerate() {
                let shown = format!("<b>{}</b> (", esc(&t.name));
                if !targets.iter().any(|x| x.starts_with(&shown)) {
                    let cfg = runs[ri]
                        .target_config_json(i)
                        .map(config_text)
                        .unwrap_or_default();
                    targets.push(format!("{shown}{})", esc(&cfg)));
                }
            }
        }
        let workload = run.workload_json(0).map(workload_text).unwrap_or_default();
        let sweep = match &g.x_param {
            Some(p) => format!("; swept {p}: {}", g.x_values.join(", ")),
            None => String::new(),
        };
        let _ = writeln!(
            h,
            "<li><b>{}</b> ({} run{}): workload <i>{}</i> ({}){} on {}</li>",
            esc(&g.step),
            g.runs.len(),
            if g.runs.len() == 1 { "" } else { "s" },
            esc(&run
                .summary
                .targets
                .first()
                .map(|t| t.workload.clone())
                .unwrap_or_default()),
            esc(&workload),
            esc(&sweep),
            targets.join(", ")
        );
    }
    h.push_str("</ul><h3>Headline figures</h3><ul>\n");
    for g in &groups {
        for (series, p) in model::peaks(g) {
            let _ = writeln!(
                h,
                "<li>{}, <b>{}</b>: peak <b>{} ops/s</b> ({:.1} MB/s){}, p99 {}</li>",
                esc(&g.step),
                esc(series),
                thousands(p.rate_ops),
                p.rate_bytes / 1e6,
                esc(&g.at(&p.x)),
                esc(&format_ns(p.p99_latency_ns))
            );
        }
    }
    h.push_str("</ul>\n");
    let all_callouts: Vec<(String, model::Callout)> = groups
        .iter()
        .flat_map(|g| model::callouts(g).into_iter().map(|c| (g.step.clone(), c)))
        .collect();
    if !all_callouts.is_empty() {
        h.push_str("<h3>Call-outs</h3><ul class=\"callouts\">\n");
        for (step, c) in &all_callouts {
            let _ = writeln!(h, "<li>{}: {}</li>", esc(step), esc(&c.text));
        }
        h.push_str("</ul>\n");
    }
    let warnings = model::warnings(&summaries);
    if !warnings.is_empty() {
        h.push_str("<div class=\"warning\" id=\"warnings\"><b>Warnings: read these before the figures.</b><ul>\n");
        for w in &warnings {
            let _ = writeln!(h, "<li>{}</li>", esc(w));
        }
        h.push_str("</ul></div>\n");
    }
    h.push_str("</section>\n");

    // Per workload.
    for (gi, g) in groups.iter().enumerate() {
        workload_section(&mut h, gi, g, runs);
    }

    // Timelines.
    h.push_str("<section id=\"timelines\"><h2>Timelines</h2><p>Operations per second, second by second, per target (all operation kinds); dashed: 5-second moving average; shaded: warm-up (not recorded); vertical marks: events.</p>\n");
    let mut names: Vec<String> = Vec::new();
    for t in runs.iter().flat_map(|r| &r.summary.targets) {
        if !names.contains(&t.name) {
            names.push(t.name.clone());
        }
    }
    for r in runs {
        timeline_chart(&mut h, r, &names);
    }
    h.push_str("</section>\n");

    // Disclosure.
    disclosure(&mut h, runs);

    let _ = write!(h, "<script>{SCRIPT}</script>\n</body></html>\n");
    redact(&h)
}

/// The `description = "..."` line of a study file.
fn study_description(text: &str) -> Option<String> {
    let v: toml::Value = toml::from_str(text).ok()?;
    v.get("description")?.as_str().map(str::to_string)
}

fn workload_section(h: &mut String, gi: usize, g: &Group, runs: &[StoredRun]) {
    let _ = writeln!(
        h,
        "<section class=\"workload\" id=\"workload-{gi}\"><h2>Workload: {}</h2>",
        esc(&g.step)
    );
    let in_group: Vec<&StoredRun> = g.runs.iter().map(|i| &runs[*i]).collect();
    if let Some(warn) = group_warnings(&in_group) {
        h.push_str(&warn);
    }
    // Table.
    h.push_str("<table class=\"results\"><thead><tr><th>run</th><th>parameters</th><th>target</th><th>op</th><th>ops</th><th>ops/s</th><th>MB/s</th><th>mean</th><th>p50</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th><th>errors</th><th>status</th></tr></thead><tbody>\n");
    for r in &in_group {
        let s = &r.summary;
        let params = params_text(&s.parameters);
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
            for (op, ops, rate, bytes, lat, errors) in rows {
                let _ = writeln!(
                    h,
                    "<tr data-run=\"{}\" data-target=\"{}\" data-op=\"{}\"><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td>{}{}{}{}{}<td>{}</td></tr>",
                    s.run_index,
                    esc(&t.name),
                    esc(&op),
                    s.run_index,
                    esc(&params),
                    esc(&t.name),
                    esc(&op),
                    num_cell(&ops.to_string(), ops as f64),
                    num_cell(&thousands(rate), rate),
                    num_cell(&format!("{:.1}", bytes / 1e6), bytes / 1e6),
                    latency_cells(lat),
                    num_cell(&errors.to_string(), errors as f64),
                    s.status.name()
                );
            }
        }
    }
    h.push_str("</tbody></table>");
    for r in &in_group {
        for l in crate::report::table::ycsb_lines(&r.summary) {
            h.push_str(&format!(
                "<p class=\"ycsb\">run {}: {}</p>",
                r.summary.run_index,
                esc(&l)
            ));
        }
    }
    h.push_str("<p class=\"meta\">ops/s: successful operations per second of measured time; MB/s: 10<sup>6</sup> bytes per second; latency: service time (submission to completion), HDR histograms, 3 significant digits.</p>\n");

    let x_label = g
        .x_param
        .clone()
        .unwrap_or_else(|| "(no swept parameter)".into());
    let reps = g.points.iter().any(|p| p.run_indexes.len() > 1);
    let rep_note = if reps { " (mean of repetitions)" } else { "" };
    let callouts = model::callouts(g);
    let rate_callout = callouts
        .iter()
        .find(|c| c.kind == model::CalloutKind::Throughput);
    let hl = rate_callout.map(|c| Highlight {
        x: c.x.clone(),
        text: if c.ratio >= 2.0 {
            format!("{:.1}x higher", c.ratio)
        } else {
            format!("{:.0}% higher", (c.ratio - 1.0) * 100.0)
        },
    });
    h.push_str(&svg::bar_chart(
        &format!("bars-{gi}"),
        &format!("{}: ops/s by {}{rep_note}", g.step, x_label),
        &x_label,
        "operations per second",
        &g.x_values,
        &g.series,
        |x, s| g.point(x, s).map(|p| p.rate_ops),
        hl.as_ref(),
    ));
    // Latency against throughput.
    let max_p99 = g
        .points
        .iter()
        .map(|p| p.p99_latency_ns)
        .fold(0.0, f64::max);
    let (div, unit) = svg::latency_unit(max_p99);
    let series: Vec<Series> = g
        .series
        .iter()
        .map(|s| Series {
            name: s.clone(),
            points: g
                .x_values
                .iter()
                .filter_map(|x| g.point(x, s))
                .map(|p| {
                    (
                        p.rate_ops,
                        p.p99_latency_ns,
                        if g.x_param.is_some() {
                            p.x.clone()
                        } else {
                            String::new()
                        },
                    )
                })
                .collect(),
            markers: true,
            dashed: vec![],
            color: None,
        })
        .collect();
    h.push_str(&svg::line_chart(
        &format!("latency-{gi}"),
        &format!("{}: p99 latency against ops/s{rep_note}", g.step),
        "operations per second",
        &format!("p99 latency ({unit})"),
        div,
        &series,
        XAxis::Linear,
        &[],
        None,
        None,
    ));
    if let Some(c) = callouts.iter().find(|c| c.kind == model::CalloutKind::P99) {
        let _ = writeln!(
            h,
            "<p class=\"meta\">Lower and farther right is better. {}</p>",
            esc(&c.text)
        );
    } else {
        h.push_str(
            "<p class=\"meta\">Lower and farther right is better; labels: the swept value.</p>\n",
        );
    }
    percentile_chart(h, gi, g, runs);
    efficiency_table(h, g, runs);
    h.push_str("</section>\n");
}

fn group_warnings(runs: &[&StoredRun]) -> Option<String> {
    let summaries: Vec<_> = runs.iter().map(|r| r.summary.clone()).collect();
    let w = model::warnings(&summaries);
    if w.is_empty() {
        return None;
    }
    let mut s = String::from("<div class=\"warning\"><b>Warning for these results:</b><ul>");
    for x in w {
        let _ = write!(s, "<li>{}</li>", esc(&x));
    }
    s.push_str("</ul></div>\n");
    Some(s)
}

/// HDR percentile curves: per run and target, all measured intervals of all kinds added.
fn percentile_chart(h: &mut String, gi: usize, g: &Group, runs: &[StoredRun]) {
    let mut series = Vec::new();
    let mut problems = Vec::new();
    let mut max_ns = 0.0f64;
    for &ri in &g.runs {
        let r = &runs[ri];
        let hists = match r.latency_histograms() {
            Ok(h) => h,
            Err(e) => {
                problems.push(e.to_string());
                continue;
            }
        };
        for t in &r.summary.targets {
            let mut sum: Option<hdrhistogram::Histogram<u64>> = None;
            for op in t.kinds.keys() {
                if let Some(x) = hists.get(&hlog_tag(&t.name, op)) {
                    match &mut sum {
                        Some(s) => {
                            let _ = s.add(x);
                        }
                        None => sum = Some(x.clone()),
                    }
                }
            }
            let Some(hist) = sum.filter(|s| !s.is_empty()) else {
                continue;
            };
            let mut pts = Vec::new();
            for i in 0..=50 {
                // 0 to 5 nines in steps of a tenth of a nine, then the maximum.
                let nines = i as f64 / 10.0;
                let pct = 100.0 * (1.0 - 10f64.powf(-nines));
                let v = hist.value_at_percentile(pct) as f64;
                pts.push((nines, v, String::new()));
                if 1.0 / (1.0 - pct / 100.0) > hist.len() as f64 {
                    break;
                }
            }
            max_ns = max_ns.max(pts.iter().map(|p| p.1).fold(0.0, f64::max));
            let label = match &g.x_param {
                Some(p) => format!(
                    "{} {p}={}",
                    t.name,
                    r.summary.parameters.get(p).cloned().unwrap_or_default()
                ),
                None => format!("{} run {}", t.name, r.summary.run_index),
            };
            let others: Vec<String> = r
                .summary
                .parameters
                .iter()
                .filter(|(k, _)| {
                    Some(*k) != g.x_param.as_ref()
                        && g.series.iter().any(|s| s.contains(&format!("{k}=")))
                })
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let label = if others.is_empty() {
                label
            } else {
                format!("{label} {}", others.join(" "))
            };
            series.push(Series {
                name: label,
                points: pts,
                markers: false,
                dashed: vec![],
                color: None,
            });
        }
    }
    if series.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"warning\">No latency percentile curves: {}</p>",
            esc(&if problems.is_empty() {
                "no measured intervals in the interval logs".to_string()
            } else {
                problems.join("; ")
            })
        );
        return;
    }
    let (div, unit) = svg::latency_unit(max_ns);
    h.push_str(&svg::line_chart(
        &format!("percentiles-{gi}"),
        &format!(
            "{}: latency by percentile (HDR, measured intervals)",
            g.step
        ),
        "percentile",
        &format!("latency ({unit})"),
        div,
        &series,
        XAxis::Nines,
        &[],
        None,
        Some(0.0),
    ));
}

/// Client efficiency per run, and each series' ops/s as a share of the best at each point.
fn efficiency_table(h: &mut String, g: &Group, runs: &[StoredRun]) {
    h.push_str("<h3>Efficiency</h3><table class=\"efficiency\"><thead><tr><th>run</th><th>parameters</th><th>ops/s (all targets)</th><th>client CPUs busy</th><th>ops/s per client CPU</th><th>busiest worker on CPU</th></tr></thead><tbody>\n");
    for &ri in &g.runs {
        let s = &runs[ri].summary;
        let per_cpu = if s.client.cpu_cores_used > 0.0 {
            s.total.rate_ops / s.client.cpu_cores_used
        } else {
            0.0
        };
        let _ = writeln!(
            h,
            "<tr><td class=\"n\">{}</td><td>{}</td>{}{}{}{}</tr>",
            s.run_index,
            esc(&params_text(&s.parameters)),
            num_cell(&thousands(s.total.rate_ops), s.total.rate_ops),
            num_cell(
                &format!(
                    "{:.2} of {}",
                    s.client.cpu_cores_used, s.client.logical_cpus
                ),
                s.client.cpu_cores_used
            ),
            num_cell(&thousands(per_cpu), per_cpu),
            num_cell(
                &format!("{:.0}%", s.client.worker_busy_max * 100.0),
                s.client.worker_busy_max
            ),
        );
    }
    h.push_str("</tbody></table>\n");
    if g.series.len() > 1 {
        h.push_str("<table class=\"relative\"><thead><tr><th>");
        h.push_str(&esc(g.x_param.as_deref().unwrap_or("point")));
        h.push_str("</th>");
        for s in &g.series {
            let _ = write!(h, "<th>{} (% of best)</th>", esc(s));
        }
        h.push_str("</tr></thead><tbody>\n");
        for x in &g.x_values {
            let best = g
                .series
                .iter()
                .filter_map(|s| g.point(x, s))
                .map(|p| p.rate_ops)
                .fold(0.0, f64::max);
            let _ = write!(h, "<tr><td>{}</td>", esc(x));
            for s in &g.series {
                match g.point(x, s) {
                    Some(p) if best > 0.0 => {
                        let share = p.rate_ops / best * 100.0;
                        h.push_str(&num_cell(&format!("{share:.0}%"), share));
                    }
                    _ => h.push_str("<td>-</td>"),
                }
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</tbody></table>\n");
    }
}

/// `colors`: every target name in report order, so a target keeps its colour.
fn timeline_chart(h: &mut String, r: &StoredRun, colors: &[String]) {
    let s = &r.summary;
    let mut series = Vec::new();
    for t in &s.targets {
        let mut per_second: BTreeMap<i64, f64> = BTreeMap::new();
        for row in r.timeline.iter().filter(|x| x.target == t.name) {
            *per_second.entry(row.second).or_default() += row.rate_ops;
        }
        // Seconds are interval starts; plot at the interval's end (the second just measured).
        let pts: Vec<(f64, f64)> = per_second
            .iter()
            .map(|(k, v)| (*k as f64 + 1.0, *v))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let dashed = svg::moving_average(&pts, 5);
        // A run shorter than one interval has one point: draw it as a dot, not an empty line.
        let markers = pts.len() == 1;
        series.push(Series {
            name: t.name.clone(),
            points: pts
                .into_iter()
                .map(|(x, y)| (x, y, String::new()))
                .collect(),
            markers,
            dashed,
            color: colors.iter().position(|n| *n == t.name),
        });
    }
    let id = format!("timeline-{}", s.run_index);
    let title = format!(
        "run {}: {} [{}] ops/s per second",
        s.run_index,
        s.step,
        params_text(&s.parameters)
    );
    if series.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"warning\">{}: no timeline stored.</p>",
            esc(&title)
        );
        return;
    }
    let marks: Vec<Mark> = s
        .events
        .iter()
        .filter(|e| e.kind != "warmup-start" || s.warmup_seconds > 0.0)
        .map(|e| Mark {
            x: e.time_seconds,
            label: if e.detail.is_empty() {
                e.kind.clone()
            } else {
                format!("{} ({})", e.kind, e.detail)
            },
        })
        .collect();
    let shade = (s.warmup_seconds > 0.0).then_some((-s.warmup_seconds, 0.0));
    h.push_str(&svg::line_chart(
        &id,
        &title,
        "seconds from the start of measurement",
        "operations per second",
        1.0,
        &series,
        XAxis::Linear,
        &marks,
        shade,
        None,
    ));
}

fn dl(h: &mut String, items: &[(&str, Option<String>)]) {
    h.push_str("<dl>");
    for (k, v) in items {
        if let Some(v) = v {
            let _ = write!(h, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
        }
    }
    h.push_str("</dl>\n");
}

fn human_bytes(b: u64) -> String {
    format!(
        "{} ({} bytes)",
        crate::units::format_bytes(b),
        thousands(b as f64)
    )
}

fn system_section(h: &mut String, sys: &SystemInfo) {
    let c = &sys.cpu;
    let kernel = sys
        .kernel_release
        .clone()
        .map(|r| match &sys.kernel_version {
            Some(v) => format!("{r} ({v})"),
            None => r,
        });
    let storlab = Some(format!(
        "{}{}",
        sys.storlab_version,
        sys.storlab_git_commit
            .as_ref()
            .map(|c| format!(", commit {c}"))
            .unwrap_or_else(|| ", commit not recorded".into())
    ));
    dl(
        h,
        &[
            ("Captured", Some(sys.captured_at_utc.clone())),
            ("Host", sys.hostname.clone()),
            ("OS", sys.os.clone()),
            ("Kernel", kernel),
            ("Architecture", sys.architecture.clone()),
            ("CPU model", c.model_name.clone()),
            ("Sockets", c.sockets.map(|x| x.to_string())),
            ("Physical cores", c.physical_cores.map(|x| x.to_string())),
            ("Logical CPUs", c.logical_cpus.map(|x| x.to_string())),
            (
                "SMT",
                Some(c.smt_active.map_or("not readable".into(), |a| {
                    if a {
                        "on".to_string()
                    } else {
                        "off".to_string()
                    }
                })),
            ),
            (
                "Frequency governor",
                Some(
                    c.frequency_governor
                        .clone()
                        .unwrap_or_else(|| "not readable (no cpufreq)".into()),
                ),
            ),
            (
                "Max frequency",
                c.max_frequency_mhz.map(|m| format!("{m} MHz")),
            ),
            ("Memory", sys.memory_total_bytes.map(human_bytes)),
            (
                "Memory available at start",
                sys.memory_available_bytes.map(human_bytes),
            ),
            ("Swap", sys.swap_total_bytes.map(human_bytes)),
            ("storlab", storlab),
            ("Command line", sys.command_line.clone()),
        ],
    );
    if !sys.target_software.is_empty() {
        h.push_str("<table><thead><tr><th>target</th><th>type</th><th>software</th><th>version</th></tr></thead><tbody>");
        for t in &sys.target_software {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&t.target),
                esc(&t.target_type),
                esc(&t.software),
                esc(&t.version)
            );
        }
        h.push_str("</tbody></table>\n");
    }
    for t in &sys.targets {
        let _ = writeln!(h, "<h4>Storage under <code>{}</code></h4>", esc(&t.path));
        let mut items: Vec<(&str, Option<String>)> = vec![
            ("Canonical path", t.canonical_path.clone()),
            ("Not created yet; inspected", t.existing_ancestor.clone()),
            (
                "Raw block device",
                t.is_block_device.then(|| "yes".to_string()),
            ),
        ];
        if let Some(f) = &t.filesystem {
            items.push(("Filesystem", Some(f.fs_type.clone())));
            items.push(("Mounted from", Some(f.mount_source.clone())));
            items.push(("Mount point", Some(f.mount_point.clone())));
            items.push(("Mount options", Some(f.mount_options.clone())));
            items.push(("Superblock options", Some(f.super_options.clone())));
            items.push(("Size", f.total_bytes.map(human_bytes)));
            items.push(("Available", f.available_bytes.map(human_bytes)));
        }
        dl(h, &items);
        if !t.block_devices.is_empty() {
            h.push_str("<table><thead><tr><th>device</th><th>model</th><th>vendor</th><th>firmware</th><th>size</th><th>rotational</th><th>scheduler</th><th>queue depth (nr_requests)</th><th>hw queues</th><th>block sizes (logical/physical)</th><th>other</th></tr></thead><tbody>");
            for d in &t.block_devices {
                let o = |x: &Option<String>| x.clone().unwrap_or_else(|| "-".into());
                let mut other = Vec::new();
                if let Some(w) = &d.whole_disk {
                    other.push(format!("partition of {w}"));
                }
                if let Some(n) = &d.dm_name {
                    other.push(format!("dm {n}"));
                }
                if let Some(b) = &d.loop_backing_file {
                    other.push(format!("loop on {b}"));
                }
                if let Some(s) = &d.serial {
                    other.push(format!("serial {s}"));
                }
                let _ = write!(
                    h,
                    "<tr><td>{} ({})</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td><td>{}</td></tr>",
                    esc(&d.name),
                    esc(&d.device_number),
                    esc(&o(&d.model)),
                    esc(&o(&d.vendor)),
                    esc(&o(&d.firmware_rev)),
                    esc(&d.size_bytes.map(human_bytes).unwrap_or_else(|| "-".into())),
                    d.rotational.map_or("-", |r| if r { "yes" } else { "no" }),
                    esc(&o(&d.scheduler)),
                    d.nr_requests.map_or("-".into(), |n| n.to_string()),
                    d.hw_queues.map_or("-".into(), |n| n.to_string()),
                    d.logical_block_size_bytes
                        .map_or("-".into(), |n| n.to_string()),
                    d.physical_block_size_bytes
                        .map_or("-".into(), |n| n.to_string()),
                    esc(&other.join(", "))
                );
            }
            h.push_str("</tbody></table>\n");
        }
    }
}

fn disclosure(h: &mut String, runs: &[StoredRun]) {
    h.push_str("<section id=\"disclosure\"><h2>Appendix: full disclosure</h2>\n");
    h.push_str("<h3>Method</h3><ul><li>Closed loop: each thread keeps queue-depth operations in flight; open loop (rate-ops): operations start on a schedule and the latency from the intended start is reported too.</li><li>Warm-up operations run but are not recorded. ops/s = successful operations completed in measurement / time from the start of measurement to the last measured completion; MB = 10<sup>6</sup> bytes. Errors are counted, not included in ops/s.</li><li>Latency: service time from submission to observed completion, HDR histograms with 3 significant digits (1 ns to 1 h), merged by adding counts, never by averaging percentiles.</li><li>storlab records its own CPU use: when its busiest worker was on the CPU over 90% of the time, or the process used over 90% of the machine, the run is marked saturated (the figures then measure the client).</li></ul>\n");
    // Systems: one section per distinct capture (host, kernel, CPU, targets' storage).
    let mut shown: Vec<String> = Vec::new();
    h.push_str("<h3>System under test</h3>\n");
    for r in runs {
        let Some(sys) = &r.system else { continue };
        let key = serde_json::to_string(&(
            &sys.hostname,
            &sys.kernel_release,
            &sys.cpu.model_name,
            &sys.targets.iter().map(|t| &t.path).collect::<Vec<_>>(),
        ))
        .unwrap_or_default();
        if shown.contains(&key) {
            continue;
        }
        shown.push(key);
        let same: Vec<String> = runs
            .iter()
            .filter(|x| {
                x.system.as_ref().is_some_and(|s| {
                    s.hostname == sys.hostname
                        && s.targets
                            .iter()
                            .map(|t| &t.path)
                            .eq(sys.targets.iter().map(|t| &t.path))
                })
            })
            .map(|x| x.summary.run_index.to_string())
            .collect();
        let _ = writeln!(
            h,
            "<p class=\"meta\">As captured at the start of run {} (applies to runs {}).</p>",
            r.summary.run_index,
            same.join(", ")
        );
        system_section(h, sys);
    }
    if shown.is_empty() {
        h.push_str("<p class=\"warning\">No system capture was stored with these runs.</p>\n");
    }
    h.push_str("<h3>Runs</h3><table><thead><tr><th>run</th><th>run id</th><th>step</th><th>parameters</th><th>repetition</th><th>targets and workload</th><th>warm-up</th><th>measured</th><th>ended by</th><th>started</th><th>folder</th></tr></thead><tbody>\n");
    for r in runs {
        let s = &r.summary;
        let tw: Vec<String> = s
            .targets
            .iter()
            .enumerate()
            .map(|(i, t)| {
                format!(
                    "{}: {}",
                    t.name,
                    r.workload_json(i).map(workload_text).unwrap_or_default()
                )
            })
            .collect();
        let _ = writeln!(
            h,
            "<tr><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{:.1} s</td><td class=\"n\">{:.2} s</td><td>{:?}</td><td>{}</td><td><code>{}</code></td></tr>",
            s.run_index,
            esc(&s.run_id),
            esc(&s.step),
            esc(&params_text(&s.parameters)),
            s.repetition,
            esc(&tw.join("; ")),
            s.warmup_seconds,
            s.measured_seconds,
            s.end_reason,
            esc(&s.started_at),
            esc(&r.folder.display().to_string())
        );
    }
    h.push_str("</tbody></table>\n");
    let mut texts: Vec<&str> = Vec::new();
    for r in runs {
        if let Some(t) = r.study_text.as_deref().filter(|t| !texts.contains(t)) {
            texts.push(t);
        }
    }
    for t in texts {
        let _ = writeln!(
            h,
            "<h3>Study file as run</h3><pre class=\"study\">{}</pre>",
            esc(t)
        );
    }
    h.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(616_344.0), "616,344");
        assert_eq!(thousands(999.4), "999");
        assert_eq!(thousands(1_000.0), "1,000");
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(-1234.0), "-1,234");
    }

    #[test]
    fn description_from_study_text() {
        assert_eq!(
            study_description("name = \"x\"\ndescription = \"A & B\"\n").as_deref(),
            Some("A & B")
        );
        assert_eq!(study_description("name = 1 = 2"), None);
    }
}
