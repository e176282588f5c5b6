//! `storlab compare A B [C...]`: the same workloads across stored results side by side, with
//! ratios and percent differences against the first (A), in the terminal and as HTML. Runs are
//! matched by step, sweep point and target (or by position when they differ); a pair is comparable only when its resolved workloads (from the
//! stored plans) are equal, and the report says plainly what differs when they are not.

use std::fmt::Write;

use crate::report::html::thousands;
use crate::report::load::StoredRun;
use crate::report::svg::{self, esc};
use crate::results::redact;
use crate::units::format_ns;

/// One side of a comparison: what the user named and the runs it holds.
pub struct Side {
    pub label: String,
    pub runs: Vec<StoredRun>,
}

/// The figures compared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metrics {
    pub rate_ops: f64,
    pub rate_bytes: f64,
    pub mean_ns: f64,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub p99_9_ns: f64,
    pub max_ns: f64,
    pub errors: f64,
}

/// Metric names, whether higher is better, and how they are shown.
pub const METRICS: [(&str, bool); 8] = [
    ("ops/s", true),
    ("MB/s", true),
    ("mean", false),
    ("p50", false),
    ("p99", false),
    ("p99.9", false),
    ("max", false),
    ("errors", false),
];

impl Metrics {
    pub fn values(&self) -> [f64; 8] {
        [
            self.rate_ops,
            self.rate_bytes / 1e6,
            self.mean_ns,
            self.p50_ns,
            self.p99_ns,
            self.p99_9_ns,
            self.max_ns,
            self.errors,
        ]
    }
}

fn show(metric: usize, v: f64) -> String {
    match metric {
        0 => thousands(v),
        1 => format!("{v:.1}"),
        7 => format!("{v:.0}"),
        _ => format_ns(v),
    }
}

/// One target of one run.
#[derive(Debug, Clone)]
struct Entry {
    step: String,
    params: String,
    target_pos: usize,
    target: String,
    workload: Option<serde_json::Value>,
    config: Option<serde_json::Value>,
    metrics: Metrics,
}

fn entries(side: &Side) -> Vec<Entry> {
    let mut out = Vec::new();
    for r in &side.runs {
        let s = &r.summary;
        let params: Vec<String> = s
            .parameters
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        for (i, t) in s.targets.iter().enumerate() {
            let l = &t.service_latency;
            out.push(Entry {
                step: s.step.clone(),
                params: params.join(" "),
                target_pos: i,
                target: t.name.clone(),
                workload: r.workload_json(i).cloned().or_else(|| {
                    Some(serde_json::json!({
                        "workload": t.workload, "threads": t.threads,
                        "queue-depth": t.queue_depth, "block-bytes": t.block_bytes
                    }))
                }),
                config: r.target_config_json(i).cloned(),
                metrics: Metrics {
                    rate_ops: t.rate_ops,
                    rate_bytes: t.rate_bytes,
                    mean_ns: l.mean_ns,
                    p50_ns: l.p50_ns as f64,
                    p99_ns: l.p99_ns as f64,
                    p99_9_ns: l.p99_9_ns as f64,
                    max_ns: l.max_ns as f64,
                    errors: t.errors as f64,
                },
            });
        }
    }
    out
}

/// Field-by-field differences of two JSON objects: `block-size: 4096 vs 65536`.
pub fn json_differences(a: &serde_json::Value, b: &serde_json::Value) -> Vec<String> {
    let (Some(ao), Some(bo)) = (a.as_object(), b.as_object()) else {
        return if a == b {
            vec![]
        } else {
            vec![format!("{a} vs {b}")]
        };
    };
    let mut keys: Vec<&String> = ao.keys().chain(bo.keys()).collect();
    keys.sort();
    keys.dedup();
    let text = |v: Option<&serde_json::Value>| match v {
        None | Some(serde_json::Value::Null) => "unset".to_string(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    };
    keys.into_iter()
        .filter(|k| ao.get(*k) != bo.get(*k))
        .map(|k| format!("{k}: {} vs {}", text(ao.get(k)), text(bo.get(k))))
        .collect()
}

/// One compared target and sweep point across the sides.
#[derive(Debug, Clone)]
pub struct Row {
    pub step: String,
    pub params: String,
    /// Target name per side (`None`: missing on that side).
    pub targets: Vec<Option<String>>,
    pub metrics: Vec<Option<Metrics>>,
    /// Per side after the first: workload differences from A (empty: comparable).
    pub workload_differences: Vec<Vec<String>>,
    /// Per side after the first: other differences worth knowing (target configuration, step).
    pub notes: Vec<Vec<String>>,
}

impl Row {
    /// Comparable with A on side `i` (>= 1).
    pub fn comparable(&self, i: usize) -> bool {
        self.metrics[0].is_some()
            && self.metrics[i].is_some()
            && self.workload_differences[i - 1].is_empty()
    }
}

/// The comparison of several sides against the first.
pub struct Comparison {
    pub labels: Vec<String>,
    pub rows: Vec<Row>,
}

impl Comparison {
    /// Whether anything at all can be compared.
    pub fn any_comparable(&self) -> bool {
        self.rows
            .iter()
            .any(|r| (1..self.labels.len()).any(|i| r.comparable(i)))
    }
}

/// Matches the sides' runs against the first side's.
pub fn compare(sides: &[Side]) -> Comparison {
    let all: Vec<Vec<Entry>> = sides.iter().map(entries).collect();
    let base = &all[0];
    let mut rows = Vec::new();
    let mut used: Vec<Vec<bool>> = all.iter().map(|e| vec![false; e.len()]).collect();
    for (bi, b) in base.iter().enumerate() {
        used[0][bi] = true;
        let mut row = Row {
            step: b.step.clone(),
            params: b.params.clone(),
            targets: vec![Some(b.target.clone())],
            metrics: vec![Some(b.metrics)],
            workload_differences: Vec::new(),
            notes: Vec::new(),
        };
        for (si, other) in all.iter().enumerate().skip(1) {
            // By step, sweep point and target name; else by step, sweep point and the
            // target's position in its run (a target renamed); else by position on the side.
            let free = |i: usize| !used[si][i];
            let found = (0..other.len())
                .find(|&i| {
                    let o = &other[i];
                    free(i) && o.step == b.step && o.params == b.params && o.target == b.target
                })
                .or_else(|| {
                    (0..other.len()).find(|&i| {
                        let o = &other[i];
                        free(i)
                            && o.step == b.step
                            && o.params == b.params
                            && o.target_pos == b.target_pos
                    })
                })
                .or_else(|| (bi < other.len() && free(bi)).then_some(bi));
            match found {
                Some(oi) => {
                    used[si][oi] = true;
                    let o = &other[oi];
                    let wd = match (&b.workload, &o.workload) {
                        (Some(x), Some(y)) => json_differences(x, y),
                        _ => vec![],
                    };
                    let mut wd = wd;
                    if o.params != b.params {
                        wd.insert(
                            0,
                            format!(
                                "sweep point: {} vs {}",
                                or_dash(&b.params),
                                or_dash(&o.params)
                            ),
                        );
                    }
                    let mut notes = Vec::new();
                    if o.step != b.step {
                        notes.push(format!("step: {} vs {}", b.step, o.step));
                    }
                    if let (Some(x), Some(y)) = (&b.config, &o.config) {
                        notes.extend(
                            json_differences(x, y)
                                .into_iter()
                                .map(|d| format!("target {d}")),
                        );
                    }
                    row.targets.push(Some(o.target.clone()));
                    row.metrics.push(Some(o.metrics));
                    row.workload_differences.push(wd);
                    row.notes.push(notes);
                }
                None => {
                    row.targets.push(None);
                    row.metrics.push(None);
                    row.workload_differences.push(vec![format!(
                        "no run of step {} [{}] target {} in {}",
                        b.step,
                        or_dash(&b.params),
                        b.target,
                        sides[si].label
                    )]);
                    row.notes.push(vec![]);
                }
            }
        }
        rows.push(row);
    }
    Comparison {
        labels: sides.iter().map(|s| s.label.clone()).collect(),
        rows,
    }
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

/// Ratio and percent difference of `v` against base `a`: (`1.05x`, `+5.3%`).
pub fn ratio_and_diff(a: f64, v: f64) -> (String, String) {
    if a == 0.0 {
        return ("-".into(), if v == 0.0 { "0%".into() } else { "-".into() });
    }
    let r = v / a;
    (format!("{r:.2}x"), format!("{:+.1}%", (r - 1.0) * 100.0))
}

const LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";

fn letter(i: usize) -> String {
    LETTERS
        .chars()
        .nth(i)
        .map(String::from)
        .unwrap_or_else(|| format!("#{}", i + 1))
}

/// The terminal text.
pub fn render_text(c: &Comparison) -> String {
    let mut out = String::new();
    for (i, l) in c.labels.iter().enumerate() {
        let _ = writeln!(out, "{} = {}", letter(i), l);
    }
    let n = c.labels.len();
    let mut header: Vec<String> = vec![
        "step".into(),
        "point".into(),
        "target".into(),
        "metric".into(),
        "A".into(),
    ];
    for i in 1..n {
        let l = letter(i);
        header.push(l.clone());
        header.push(format!("{l}/A"));
        header.push(format!("{l} vs A"));
    }
    let mut table: Vec<Vec<String>> = Vec::new();
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    for row in &c.rows {
        for i in 1..n {
            if !row.comparable(i) {
                problems.push(format!(
                    "{} [{}] {}: {} is NOT comparable with A: {}",
                    row.step,
                    or_dash(&row.params),
                    row.targets[0].clone().unwrap_or_default(),
                    letter(i),
                    row.workload_differences[i - 1].join("; ")
                ));
            } else if !row.notes[i - 1].is_empty() {
                notes.push(format!(
                    "{} [{}]: {} differs from A in {}",
                    row.step,
                    or_dash(&row.params),
                    letter(i),
                    row.notes[i - 1].join("; ")
                ));
            }
        }
        if !(1..n).any(|i| row.comparable(i)) {
            continue;
        }
        let Some(a) = row.metrics[0] else { continue };
        for (mi, (name, _)) in METRICS.iter().enumerate() {
            let av = a.values()[mi];
            let target = match row
                .targets
                .iter()
                .skip(1)
                .flatten()
                .find(|t| Some(*t) != row.targets[0].as_ref())
            {
                Some(other) => format!("{} / {other}", row.targets[0].clone().unwrap_or_default()),
                None => row.targets[0].clone().unwrap_or_default(),
            };
            let mut cells = vec![
                row.step.clone(),
                or_dash(&row.params).to_string(),
                target,
                name.to_string(),
                show(mi, av),
            ];
            for i in 1..n {
                match row.metrics[i].filter(|_| row.comparable(i)) {
                    Some(m) => {
                        let v = m.values()[mi];
                        let (r, d) = ratio_and_diff(av, v);
                        cells.extend([show(mi, v), r, d]);
                    }
                    None => cells.extend(["n/c".into(), "".into(), "".into()]),
                }
            }
            table.push(cells);
        }
    }
    let hdr: Vec<&str> = header.iter().map(String::as_str).collect();
    if !table.is_empty() {
        out.push_str(&crate::report::table::render(&hdr, &table));
    }
    if !c.any_comparable() {
        out.push_str("NOT COMPARABLE: these results ran different workloads, so their figures cannot be set side by side.\n");
    }
    for p in problems {
        let _ = writeln!(out, "not comparable: {p}");
    }
    for n in notes {
        let _ = writeln!(out, "note: {n}");
    }
    redact(&out)
}

/// The HTML page.
pub fn render_html(c: &Comparison) -> String {
    let mut h = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>storlab compare</title><style>{}</style></head><body><h1>storlab compare</h1><ul>",
        crate::report::html::STYLE
    );
    for (i, l) in c.labels.iter().enumerate() {
        let _ = write!(h, "<li><b>{}</b> = {}</li>", letter(i), esc(l));
    }
    h.push_str("</ul>\n");
    if !c.any_comparable() {
        h.push_str("<div class=\"warning\"><b>NOT COMPARABLE:</b> these results ran different workloads, so their figures cannot be set side by side.</div>\n");
    }
    let n = c.labels.len();
    let mut problems = Vec::new();
    h.push_str("<table class=\"compare\"><thead><tr><th>step</th><th>point</th><th>target</th><th>metric</th><th>A</th>");
    for i in 1..n {
        let l = letter(i);
        let _ = write!(h, "<th>{l}</th><th>{l}/A</th><th>{l} vs A</th>");
    }
    h.push_str("</tr></thead><tbody>\n");
    let mut x_values = Vec::new();
    let mut bars: Vec<(String, usize, f64)> = Vec::new();
    for row in &c.rows {
        for i in 1..n {
            if !row.comparable(i) {
                problems.push(format!(
                    "{} [{}]: {} is not comparable with A: {}",
                    row.step,
                    or_dash(&row.params),
                    letter(i),
                    row.workload_differences[i - 1].join("; ")
                ));
            } else if !row.notes[i - 1].is_empty() {
                problems.push(format!(
                    "{} [{}]: {} differs from A (comparable) in {}",
                    row.step,
                    or_dash(&row.params),
                    letter(i),
                    row.notes[i - 1].join("; ")
                ));
            }
        }
        let Some(a) = row.metrics[0] else { continue };
        if !(1..n).any(|i| row.comparable(i)) {
            continue;
        }
        let x = format!(
            "{} {} {}",
            row.step,
            or_dash(&row.params),
            row.targets[0].clone().unwrap_or_default()
        );
        x_values.push(x.clone());
        bars.push((x.clone(), 0, a.rate_ops));
        for (mi, (name, higher)) in METRICS.iter().enumerate() {
            let av = a.values()[mi];
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td>",
                esc(&row.step),
                esc(or_dash(&row.params)),
                esc(&row.targets[0].clone().unwrap_or_default()),
                name,
                esc(&show(mi, av))
            );
            for i in 1..n {
                match row.metrics[i].filter(|_| row.comparable(i)) {
                    Some(m) => {
                        let v = m.values()[mi];
                        if mi == 0 {
                            bars.push((x.clone(), i, v));
                        }
                        let (r, d) = ratio_and_diff(av, v);
                        let better = if *higher { v > av } else { v < av };
                        let color = if v == av {
                            ""
                        } else if better {
                            " style=\"color:#007a3d\""
                        } else {
                            " style=\"color:#b00\""
                        };
                        let _ = write!(
                            h,
                            "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\"{color}>{}</td>",
                            esc(&show(mi, v)),
                            r,
                            d
                        );
                    }
                    None => h.push_str("<td>n/c</td><td></td><td></td>"),
                }
            }
            h.push_str("</tr>\n");
        }
    }
    h.push_str("</tbody></table>\n");
    if !x_values.is_empty() {
        let series: Vec<String> = (0..n).map(letter).collect();
        h.push_str(&svg::bar_chart(
            "compare-bars",
            "ops/s side by side",
            "workload, point, target",
            "operations per second",
            &x_values,
            &series,
            |x, s| {
                let i = LETTERS.find(s)?;
                bars.iter().find(|b| b.0 == x && b.1 == i).map(|b| b.2)
            },
            None,
        ));
    }
    if !problems.is_empty() {
        h.push_str("<h2>Differences</h2><ul>");
        for p in problems {
            let _ = write!(h, "<li>{}</li>", esc(&p));
        }
        h.push_str("</ul>");
    }
    h.push_str("</body></html>\n");
    redact(&h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_differences_name_fields() {
        let a = serde_json::json!({"block-size": "4KiB", "threads": 1, "rate-ops": null});
        let b = serde_json::json!({"block-size": "64KiB", "threads": 1, "rate-ops": 5.0});
        assert_eq!(
            json_differences(&a, &b),
            ["block-size: 4KiB vs 64KiB", "rate-ops: unset vs 5.0"]
        );
        assert!(json_differences(&a, &a).is_empty());
    }

    #[test]
    fn ratios() {
        assert_eq!(
            ratio_and_diff(100.0, 159.0),
            ("1.59x".into(), "+59.0%".into())
        );
        assert_eq!(ratio_and_diff(0.52, 0.24).1, "-53.8%");
        assert_eq!(ratio_and_diff(0.0, 1.0).0, "-");
    }
}
