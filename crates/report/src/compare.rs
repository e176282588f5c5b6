//! Comparisons rendered: the study's targets side by side (the terminal table at the end of
//! `storlab run`, from the same comparison as `comparison.json`), and `storlab compare A B
//! [C...]` in the terminal and as HTML, with ratios and percent differences against the first
//! (A). The figures and the matching are [`storlab_results::comparison`]'s; only the showing is
//! here.

use std::fmt::Write;

use crate::svg::{self, esc};
use crate::table::{render, thousands};
use storlab_model::units::format_ns;
use storlab_results::comparison::sides::{
    METRICS, Metrics, Row, SidesComparison as Comparison, or_dash, ratio_and_diff,
};
use storlab_results::comparison::uncertainty::{Figure, RatioVerdict, Verdict};
use storlab_results::comparison::{Comparison as StudyComparison, parameters_text};
use storlab_results::redact;

fn show(metric: usize, v: f64) -> String {
    match metric {
        0 => thousands(v),
        1 => format!("{v:.1}"),
        7 => format!("{v:.0}"),
        _ => format_ns(v),
    }
}

/// Terminal text of a study's comparison: per step, a table of targets by point (with the
/// spread between repetitions when a point has several), then the call-outs.
pub fn comparison_text(c: &StudyComparison) -> String {
    let mut out = String::new();
    for s in &c.steps {
        let mut names: Vec<&str> = Vec::new();
        for p in &s.points {
            for t in &p.targets {
                if !names.contains(&t.target.as_str()) {
                    names.push(&t.target);
                }
            }
        }
        let reps = s
            .points
            .iter()
            .flat_map(|p| &p.targets)
            .any(|t| t.repetitions > 1);
        let mut header = vec!["point".to_string()];
        for n in &names {
            header.push(format!("{n} ops/s"));
            if reps {
                header.push(format!("{n} ops/s min..max"));
            }
            header.push(format!("{n} mean"));
            header.push(format!("{n} p99"));
            if reps {
                header.push(format!("{n} p99 min..max"));
            }
        }
        let rows: Vec<Vec<String>> = s
            .points
            .iter()
            .map(|p| {
                let label = parameters_text(&p.parameters);
                let mut row = vec![or_dash(&label).to_string()];
                for n in &names {
                    match p.targets.iter().find(|t| t.target == *n) {
                        Some(t) => {
                            row.push(format!("{:.0}", t.rate_ops));
                            let spread = t.spread.as_ref();
                            if reps {
                                row.push(spread.map_or("-".into(), |x| {
                                    format!("{:.0}..{:.0}", x.rate_ops_min, x.rate_ops_max)
                                }));
                            }
                            row.push(format_ns(t.mean_latency_ns));
                            row.push(format_ns(t.p99_latency_ns as f64));
                            if reps {
                                row.push(spread.map_or("-".into(), |x| {
                                    format!(
                                        "{}..{}",
                                        format_ns(x.p99_latency_ns_min as f64),
                                        format_ns(x.p99_latency_ns_max as f64)
                                    )
                                }));
                            }
                        }
                        None => row.extend((0..if reps { 5 } else { 3 }).map(|_| "-".into())),
                    }
                }
                row
            })
            .collect();
        let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
        let _ = writeln!(out, "step {}", s.step);
        out.push_str(&render(&header_refs, &rows));
        if let Some(c) = &s.largest_ops_ratio {
            let _ = writeln!(
                out,
                "  call-out: {}: {}: {:.0} vs {:.0} ops/s",
                s.step, c.text, c.best_value, c.worst_value
            );
        }
        if let Some(c) = &s.largest_p99_improvement {
            let _ = writeln!(
                out,
                "  call-out: {}: {}: {} vs {}",
                s.step,
                c.text,
                format_ns(c.best_value),
                format_ns(c.worst_value)
            );
        }
        for t in s.points.iter().flat_map(|p| &p.targets) {
            if let Some(note) = &t.latency_note {
                let _ = writeln!(
                    out,
                    "  note: {} latency from {:?}, not merged histograms: {note}",
                    t.target, t.latency_from
                );
            }
        }
    }
    out
}

const LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";

fn letter(i: usize) -> String {
    LETTERS
        .chars()
        .nth(i)
        .map(String::from)
        .unwrap_or_else(|| format!("#{}", i + 1))
}

/// The figure of a row of [`METRICS`] that carries an interval.
fn figure_of(metric: usize) -> Option<Figure> {
    Figure::ALL
        .into_iter()
        .find(|f| f.name() == METRICS.get(metric).map_or("", |m| m.0))
}

/// The verdict cell of a side's figure: `0.91-0.96x worse`, or `-` without an interval.
fn verdict_cell(verdicts: &[RatioVerdict], metric: usize) -> String {
    let Some(figure) = figure_of(metric) else {
        return String::new();
    };
    match verdicts.iter().find(|v| v.figure == figure) {
        Some(v) => format!(
            "{:.3}-{:.3}x {}",
            v.ratio.low,
            v.ratio.high,
            match v.verdict {
                Verdict::NoDifference => "no difference",
                other => other.text(),
            }
        ),
        None => "-".into(),
    }
}

/// Each side's verdicts against A at `confidence` (none for A itself).
fn side_verdicts(row: &Row, n: usize, confidence: f64) -> Vec<Vec<RatioVerdict>> {
    (0..n)
        .map(|i| {
            if i == 0 {
                Vec::new()
            } else {
                row.verdicts(i, confidence)
            }
        })
        .collect()
}

/// Where each side's intervals come from (`A: from 10 batches of one run...`), each once,
/// and what a side measured once leaves out.
fn interval_sources(c: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in c.labels.iter().enumerate() {
        let mut seen: Vec<String> = Vec::new();
        for u in c.rows.iter().filter_map(|r| r.uncertainty.get(i)) {
            let text = u
                .as_ref()
                .map_or("no interval (no histograms, or one group)".into(), |u| {
                    u.from.describe(u.groups)
                });
            if !seen.contains(&text) {
                seen.push(text);
            }
        }
        if !seen.is_empty() {
            out.push(format!("{}: {}", letter(i), seen.join("; ")));
        }
    }
    out
}

/// The terminal text: each figure of A and of each side, the ratio to A, and the ratio's
/// interval at `confidence` with the verdict.
pub fn render_text(c: &Comparison, confidence: f64) -> String {
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
        header.push(format!("{l}/A {:.0}% CI, verdict", confidence * 100.0));
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
        let verdicts = side_verdicts(row, n, confidence);
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
            for (i, side) in verdicts.iter().enumerate().skip(1) {
                match row.metrics[i].filter(|_| row.comparable(i)) {
                    Some(m) => {
                        let v = m.values()[mi];
                        let (r, d) = ratio_and_diff(av, v);
                        cells.extend([show(mi, v), r, d, verdict_cell(side, mi)]);
                    }
                    None => cells.extend(["n/c".into(), "".into(), "".into(), "".into()]),
                }
            }
            table.push(cells);
        }
    }
    let hdr: Vec<&str> = header.iter().map(String::as_str).collect();
    if !table.is_empty() {
        out.push_str(&render(&hdr, &table));
        for line in interval_sources(c) {
            let _ = writeln!(out, "intervals: {line}");
        }
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

/// The HTML page: as the text, a side's difference coloured only where it is beyond the
/// noise at `confidence`.
pub fn render_html(c: &Comparison, confidence: f64) -> String {
    let mut h = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>storlab compare</title><style>{}</style></head><body><h1>storlab compare</h1><ul>",
        crate::html::STYLE
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
        let _ = write!(
            h,
            "<th>{l}</th><th>{l}/A</th><th>{l} vs A</th><th>{l}/A {:.0}% CI, verdict</th>",
            confidence * 100.0
        );
    }
    h.push_str("</tr></thead><tbody>\n");
    let mut x_values = Vec::new();
    let mut bars: Vec<(String, usize, f64)> = Vec::new();
    for row in &c.rows {
        row_problems(row, n, &mut problems);
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
        metric_rows(&mut h, row, &a, (n, confidence), &x, &mut bars);
    }
    h.push_str("</tbody></table>\n");
    for line in interval_sources(c) {
        let _ = write!(h, "<p class=\"note\">intervals: {}</p>", esc(&line));
    }
    if !x_values.is_empty() {
        let series: Vec<String> = (0..n).map(letter).collect();
        let chart = svg::BarChart {
            labels: svg::Labels {
                id: "compare-bars",
                title: "ops/s side by side",
                x: "workload, point, target",
                y: "operations per second",
            },
            width: svg::FULL_WIDTH,
            x_values: &x_values,
            series: &series,
            highlight: None,
            colors: &[],
        };
        h.push_str(&chart.svg(|x, s| {
            let i = LETTERS.find(s)?;
            bars.iter().find(|b| b.0 == x && b.1 == i).map(|b| b.2)
        }));
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

/// How each side of `row` after A differs from A: not comparable, or comparable with notes.
fn row_problems(row: &Row, n: usize, problems: &mut Vec<String>) {
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
}

/// One table row per metric of `row`: A's figure, then each side's with its ratio,
/// difference to A and the ratio's interval (green when better beyond the noise at the
/// confidence, red when worse; a figure without an interval, green or red as it goes, as
/// before intervals); each side's ops/s goes to `bars` under `x`.
fn metric_rows(
    h: &mut String,
    row: &Row,
    a: &Metrics,
    (n, confidence): (usize, f64),
    x: &str,
    bars: &mut Vec<(String, usize, f64)>,
) {
    let verdicts = side_verdicts(row, n, confidence);
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
        for (i, side) in verdicts.iter().enumerate().skip(1) {
            match row.metrics[i].filter(|_| row.comparable(i)) {
                Some(m) => {
                    let v = m.values()[mi];
                    if mi == 0 {
                        bars.push((x.to_string(), i, v));
                    }
                    let (r, d) = ratio_and_diff(av, v);
                    let verdict = figure_of(mi)
                        .and_then(|f| side.iter().find(|x| x.figure == f))
                        .map(|x| x.verdict);
                    let better = match verdict {
                        Some(Verdict::Better) => Some(true),
                        Some(Verdict::Worse) => Some(false),
                        Some(Verdict::NoDifference) => None,
                        None if v == av => None,
                        None => Some(if *higher { v > av } else { v < av }),
                    };
                    let color = match better {
                        None => "",
                        Some(true) => " style=\"color:#007a3d\"",
                        Some(false) => " style=\"color:#b00\"",
                    };
                    let _ = write!(
                        h,
                        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\"{color}>{}</td><td class=\"n\">{}</td>",
                        esc(&show(mi, v)),
                        r,
                        d,
                        esc(&verdict_cell(side, mi))
                    );
                }
                None => h.push_str("<td>n/c</td><td></td><td></td><td></td>"),
            }
        }
        h.push_str("</tr>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_results::comparison::compare;
    use storlab_results::fixtures::{figures, summary};

    #[test]
    fn study_comparison_text_shows_points_and_callouts() {
        let runs = [
            summary(
                1,
                "rr",
                &[("threads", "64")],
                &[("micron", 616_344.0, 240_000)],
            ),
            summary(2, "rr", &[("threads", "64")], &[("a", 388_751.0, 520_000)]),
        ];
        let text = comparison_text(&compare("s", &figures(&runs)));
        assert!(text.contains("616344"), "{text}");
        assert!(
            text.contains(
                "call-out: rr: micron: 59% more ops/s than a at threads=64 (no interval: too little measured to tell how sure): 616344 vs 388751 ops/s"
            ),
            "{text}"
        );
        assert!(
            text.contains("note: micron latency from RunSummary"),
            "{text}"
        );
    }
}
