//! The HTML report's charts: per workload the grouped ops/s bars and p99 against ops/s
//! (figures from the one comparison: repetitions merged), the HDR percentile curves of each
//! kind of workload overlaid on a log latency axis, and per run the
//! timeline of ops/s per interval with its moving average, the warm-up marked and the events.

use std::fmt::Write;

use crate::html::params_text;
use crate::html::samples::UnitCharts;
use crate::model::{self, Group};
use crate::svg::{self, Highlight, Mark, Series, Shade, XAxis, YAxis, esc};
use storlab_model::op::ResultKind;
use storlab_results::comparison::CalloutKind;
use storlab_results::events::{EventStatus, REPORTED_KIND};
use storlab_results::histograms::hlog_tag;
use storlab_results::stored::StoredRun;
use storlab_results::summary::RunSummary;

/// Intervals in a timeline's moving average.
pub const MOVING_AVERAGE_INTERVALS: usize = 5;

/// The bar chart and the latency against throughput chart of a group, side by side (each in a
/// `div.fig` of the caller's `div.figs` grid). A group with a single point (one run of one
/// target, nothing swept) gets neither: one value is a table row, not a chart. `targets`:
/// every target name in report order (a target keeps its colour).
pub fn workload_charts(h: &mut String, gi: usize, g: &Group, targets: &[String]) {
    if g.points.len() >= 2 {
        comparison_charts(h, gi, g, targets);
    }
}

/// Ops/s bars and p99 against ops/s, over the swept values or the targets.
fn comparison_charts(h: &mut String, gi: usize, g: &Group, targets: &[String]) {
    let colors: Vec<usize> = g
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| svg::target_color(targets, s).unwrap_or(i))
        .collect();
    let x_label = g.x_param.clone().unwrap_or_else(|| "target".into());
    let rep_note = if g.has_repetitions() {
        " (repetitions merged)"
    } else {
        ""
    };
    let hl = model::callout(g, CalloutKind::Throughput).map(|c| Highlight {
        x: g.x_of(c),
        text: if c.value >= 2.0 {
            format!("{:.1}x higher", c.value)
        } else {
            format!("{:.0}% higher", (c.value - 1.0) * 100.0)
        },
    });
    h.push_str("<div class=\"fig\">");
    let title = format!("{}: ops/s by {}{rep_note}", g.step, x_label);
    let chart = svg::BarChart {
        labels: svg::Labels {
            id: &format!("bars-{gi}"),
            title: &title,
            x: &x_label,
            y: "operations per second",
        },
        width: svg::HALF_WIDTH,
        x_values: &g.x_values,
        series: &g.series,
        highlight: hl.as_ref(),
        colors: &colors,
    };
    h.push_str(&chart.svg(|x, s| g.point(x, s).map(|p| p.figures.rate_ops)));
    h.push_str("</div>\n");
    // Latency against throughput.
    let max_p99 = g
        .points
        .iter()
        .map(|p| p.figures.p99_latency_ns as f64)
        .fold(0.0, f64::max);
    let (div, unit) = svg::latency_unit(max_p99);
    let series: Vec<Series> = g
        .series
        .iter()
        .enumerate()
        .map(|(si, s)| Series {
            name: s.clone(),
            points: g
                .x_values
                .iter()
                .filter_map(|x| g.point(x, s))
                .map(|p| {
                    (
                        p.figures.rate_ops,
                        p.figures.p99_latency_ns as f64,
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
            warmup: vec![],
            color: Some(colors[si]),
            bands: Vec::new(),
        })
        .collect();
    h.push_str("<div class=\"fig\">");
    h.push_str(
        &svg::LineChart {
            labels: svg::Labels {
                id: &format!("latency-{gi}"),
                title: &format!("{}: p99 latency against ops/s{rep_note}", g.step),
                x: "operations per second",
                y: &format!("p99 latency ({unit})"),
            },
            width: svg::HALF_WIDTH,
            y_div: div,
            series: &series,
            x_axis: XAxis::Linear,
            y_axis: YAxis::Linear,
            marks: &[],
            shades: &[],
            x_min: None,
            x_max: None,
        }
        .svg(),
    );
    if let Some(c) = model::callout(g, CalloutKind::P99) {
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
    h.push_str("</div>\n");
}

/// The HDR latency percentile curves of a group's runs, one per run and target: (target,
/// curve); problems reading the interval logs are returned beside.
fn percentile_curves(g: &Group, runs: &[StoredRun]) -> (Vec<(String, Series)>, Vec<String>) {
    let mut series = Vec::new();
    let mut problems = Vec::new();
    for &ri in &g.runs {
        let r = &runs[ri];
        let hists = match r.latency_histograms() {
            Ok(h) => h,
            Err(e) => {
                problems.push(e);
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
            let label = match &g.x_param {
                Some(p) => format!(
                    "{} {p}={}",
                    t.name,
                    r.summary.parameters.get(p).cloned().unwrap_or_default()
                ),
                None => format!("{} run {}", t.name, r.summary.run_index),
            };
            // Repetitions of a point: one curve each, told apart by their run.
            let label = if g.has_repetitions() && g.x_param.is_some() {
                format!("{label} run {}", r.summary.run_index)
            } else {
                label
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
            series.push((
                t.name.clone(),
                Series {
                    name: label,
                    points: pts,
                    markers: false,
                    dashed: vec![],
                    warmup: vec![],
                    color: None,
                    bands: Vec::new(),
                },
            ));
        }
    }
    (series, problems)
}

/// The kind of a group's workload for overlaying percentile curves: the workload type, and
/// for block workloads the access (sequential reads and writes share a chart).
fn curve_kind(g: &Group, runs: &[StoredRun]) -> String {
    let r = &runs[g.runs[0]];
    let t = r.summary.targets.first();
    let wt = t.map(|t| t.workload_type).unwrap_or_default();
    let access = r
        .workload_json(0)
        .and_then(|w| w.get("access"))
        .and_then(|v| v.as_str())
        .unwrap_or("");
    if wt == ResultKind::Block {
        format!("{access} block I/O")
    } else {
        wt.name().to_string()
    }
}

/// HDR latency percentile curves on a logarithmic latency axis, the workloads of one kind
/// overlaid on one chart (each curve named by its step when the chart holds several). A
/// target's curves keep its colour when it has one curve on the chart.
pub fn percentile_section(
    h: &mut String,
    groups: &[Group],
    runs: &[StoredRun],
    targets: &[String],
) {
    let mut kinds: Vec<(String, Vec<&Group>)> = Vec::new();
    for g in groups {
        if g.runs.iter().any(|&i| runs[i].summary.schedule.is_some()) {
            continue;
        }
        let k = curve_kind(g, runs);
        match kinds.iter_mut().find(|(x, _)| *x == k) {
            Some((_, v)) => v.push(g),
            None => kinds.push((k, vec![g])),
        }
    }
    if kinds.is_empty() {
        return;
    }
    h.push_str("<section id=\"percentiles\"><h2>Latency percentiles</h2><p class=\"meta\">Service latency by percentile from the HDR histograms of the measured intervals, on a logarithmic latency axis; workloads of one kind on one chart.</p>\n");
    // Two charts side by side; one alone has the page's width.
    let (width, fig) = if kinds.len() == 1 {
        (svg::FULL_WIDTH, "<div class=\"fig wide\">")
    } else {
        (svg::HALF_WIDTH, "<div class=\"fig\">")
    };
    let mut figs = String::new();
    for (ki, (kind, gs)) in kinds.iter().enumerate() {
        let mut curves: Vec<(String, Series)> = Vec::new();
        for g in gs {
            let (c, problems) = percentile_curves(g, runs);
            if c.is_empty() {
                let _ = writeln!(
                    h,
                    "<p class=\"warning\">{}: no latency percentile curves: {}</p>",
                    esc(&g.step),
                    esc(&if problems.is_empty() {
                        "no measured intervals in the interval logs".to_string()
                    } else {
                        problems.join("; ")
                    })
                );
            }
            for (t, mut s) in c {
                if gs.len() > 1 {
                    s.name = format!("{}: {}", g.step, s.name);
                }
                curves.push((t, s));
            }
        }
        if curves.is_empty() {
            continue;
        }
        let one_each = curves
            .iter()
            .all(|(t, _)| curves.iter().filter(|(x, _)| x == t).count() == 1);
        let series: Vec<Series> = curves
            .into_iter()
            .map(|(t, mut s)| {
                if one_each {
                    s.color = targets.iter().position(|n| *n == t);
                }
                s
            })
            .collect();
        let max_ns = series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .fold(0.0, f64::max);
        let (div, unit) = svg::latency_unit(max_ns);
        let steps: Vec<&str> = gs.iter().map(|g| g.step.as_str()).collect();
        figs.push_str(fig);
        figs.push_str(
            &svg::LineChart {
                labels: svg::Labels {
                    id: &format!("percentiles-{ki}"),
                    title: &format!("{kind}: latency by percentile ({})", steps.join(", ")),
                    x: "percentile",
                    y: &format!("latency ({unit})"),
                },
                width,
                y_div: div,
                series: &series,
                x_axis: XAxis::Nines,
                y_axis: YAxis::Log,
                marks: &[],
                shades: &[],
                x_min: Some(0.0),
                x_max: None,
            }
            .svg(),
        );
        figs.push_str("</div>\n");
    }
    let _ = writeln!(h, "<div class=\"figs\">{figs}</div></section>");
}

/// The run's events as vertical marks: a study event with its name, action and status (one
/// that did not run: no mark), a span a `sample` event's command reported with its duration,
/// other marks with their kind and detail; a `sample` event's own row, which spans the step,
/// is none. `phases`: also the rate schedule's phase changes.
pub fn event_marks(s: &RunSummary, phases: bool) -> Vec<Mark> {
    s.events
        .iter()
        .filter(|e| e.kind != "warmup-start" || s.warmup_seconds > 0.0)
        .filter(|e| e.kind != "process-stopped" && !e.is_sample())
        .filter(|e| phases || e.kind != "schedule-phase")
        .filter_map(|e| match &e.outcome {
            Some(o) if matches!(o.status, EventStatus::NotReached | EventStatus::Skipped) => None,
            Some(o) if e.kind == REPORTED_KIND => Some(Mark {
                x: e.time_seconds,
                label: format!("{} ({}, {:.1} s)", o.name, e.kind, o.duration_seconds),
            }),
            Some(o) => Some(Mark {
                x: e.time_seconds,
                label: if o.status == EventStatus::Ok {
                    format!("{} ({})", o.name, e.kind)
                } else {
                    format!("{} ({}, {})", o.name, e.kind, o.status.name())
                },
            }),
            None => Some(Mark {
                x: e.time_seconds,
                label: if e.detail.is_empty() {
                    e.kind.clone()
                } else {
                    format!("{} ({})", e.kind, e.detail)
                },
            }),
        })
        .collect()
}

/// The warm-up and each recovery (from the event until throughput was back, or to the end:
/// never) as shaded ranges.
pub fn run_shades(s: &RunSummary) -> Vec<Shade> {
    let mut shades = Vec::new();
    if s.warmup_seconds > 0.0 {
        shades.push(Shade {
            from: -s.warmup_seconds,
            to: 0.0,
            label: "warm-up".into(),
            class: "shade",
            fill: "#eeeeee",
        });
    }
    for r in &s.recovery {
        let (to, label) = match r.recovered_at_seconds {
            Some(at) => (at, format!("recovery after {}", r.event)),
            None => (
                s.measured_seconds,
                format!("not recovered after {}", r.event),
            ),
        };
        shades.push(Shade {
            from: r.event_seconds,
            to: to.max(r.event_seconds),
            label,
            class: "recovery",
            fill: "#fde2cf",
        });
    }
    shades
}

/// `colors`: every target name in report order, so a target keeps its colour.
///
/// Each interval is drawn at its end, its rate its operations over its real length (the last,
/// partial interval too). Warm-up intervals the run recorded are drawn dotted over the shaded
/// warm-up, apart from the measured curve; the moving average starts where measurement starts.
pub fn timeline_chart(h: &mut String, r: &StoredRun, colors: &[String]) {
    let s = &r.summary;
    let series = timeline_series(r, colors);
    let id = format!("timeline-{}", s.run_index);
    let title = format!(
        "run {}: {} [{}] ops/s per interval",
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
    let marks = event_marks(s, true);
    let shades = run_shades(s);
    let mut chart = svg::LineChart {
        labels: svg::Labels {
            id: &id,
            title: &title,
            x: "seconds from the start of measurement",
            y: "operations per second",
        },
        width: svg::FULL_WIDTH,
        y_div: 1.0,
        series: &series,
        x_axis: XAxis::Linear,
        y_axis: YAxis::Linear,
        marks: &marks,
        shades: &shades,
        x_min: None,
        x_max: None,
    };
    // What the run's sample events read, under it on the same time axis.
    let samples = UnitCharts::of(r);
    let axis = samples.shared_axis(chart.x_extent());
    if let Some((from, to)) = axis {
        (chart.x_min, chart.x_max) = (Some(from), Some(to));
    }
    h.push_str(&chart.svg());
    if let Some(axis) = axis {
        // The schedule's phases unlabelled there: their long labels would cover the curves
        // (the throughput chart above names them).
        let marks = event_marks(s, false);
        samples.draw(h, r, (&marks, &shades), (axis, "samples"));
    }
}

/// A run's timeline curves, one per target: each interval's ops/s at its end (measured, and
/// the warm-up apart), the moving average from the start of measurement. Empty when the run
/// stored no timeline. `colors`: every target name in report order.
pub fn timeline_series(r: &StoredRun, colors: &[String]) -> Vec<Series> {
    let s = &r.summary;
    let interval_s = r.interval_seconds();
    let mut series = Vec::new();
    for t in &s.targets {
        let pts = r
            .timeline
            .target_points(&t.name, interval_s, s.measured_seconds);
        let measured: Vec<(f64, f64)> = pts
            .iter()
            .filter(|p| !p.warmup)
            .map(|p| (p.end_s, p.rate_ops))
            .collect();
        let warmup: Vec<(f64, f64)> = pts
            .iter()
            .filter(|p| p.warmup)
            .map(|p| (p.end_s, p.rate_ops))
            .collect();
        if measured.is_empty() && warmup.is_empty() {
            continue;
        }
        let dashed = svg::moving_average(&measured, MOVING_AVERAGE_INTERVALS);
        // A run shorter than one interval has one point: draw it as a dot, not an empty line.
        let markers = measured.len() == 1;
        series.push(Series {
            name: t.name.clone(),
            points: measured
                .into_iter()
                .map(|(x, y)| (x, y, String::new()))
                .collect(),
            markers,
            dashed,
            warmup,
            color: colors.iter().position(|n| *n == t.name),
            bands: Vec::new(),
        });
    }
    series
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_results::{fixtures::new_style, timeline::parse_timeline};

    /// The `d` of the first path with `class`, as (x, y) pairs.
    fn path_points(svg: &str, class: &str) -> Vec<(f64, f64)> {
        let el = svg
            .split("<path")
            .find(|p| p.contains(&format!("class=\"{class}\"")))
            .unwrap_or_else(|| panic!("no path {class}"));
        let d = el.split("d=\"").nth(1).unwrap().split('"').next().unwrap();
        d.split(['M', 'L'])
            .filter(|p| !p.trim().is_empty())
            .map(|p| {
                let (x, y) = p.trim().split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect()
    }

    /// A hand-written timeline with two warm-up seconds (400 and 900 ops) and a last interval
    /// of 0.25 s holding 250 operations: a steady 1000 ops/s must draw flat to the end, with
    /// the warm-up apart and the moving average from the start of measurement.
    #[test]
    fn timeline_marks_warmup_and_divides_the_last_interval_by_its_length() {
        let mut s = storlab_results::fixtures::summary(4, "w", &[], &[("a", 1000.0, 5)]);
        s.warmup_seconds = 2.0;
        s.measured_seconds = 2.25;
        let mut run = StoredRun::of_summary(s);
        run.timeline = parse_timeline(&new_style());
        let mut h = String::new();
        timeline_chart(&mut h, &run, &["a".to_string()]);
        let measured = path_points(&h, "series");
        assert_eq!(measured.len(), 3, "the measured intervals only");
        assert!(
            measured.iter().all(|p| (p.1 - measured[0].1).abs() < 1e-6),
            "no false dip at the end: {measured:?}"
        );
        let average = path_points(&h, "average");
        assert_eq!(average.len(), 3);
        assert!(
            average.iter().all(|p| (p.1 - measured[0].1).abs() < 1e-6),
            "the moving average starts at measurement, not from the warm-up: {average:?}"
        );
        assert!(
            average[2].0 > average[1].0
                && average[2].0 - average[1].0 < average[1].0 - average[0].0
        );
        assert_eq!(path_points(&h, "warmup").len(), 2);
        for (x, y) in [("-1", "400"), ("0", "900")] {
            assert!(
                h.contains(&format!(
                    "class=\"warmup-pt\" data-x=\"{x}\" data-y=\"{y}\""
                )),
                "warm-up point {x},{y} drawn: {h}"
            );
        }
        assert!(h.contains("warm-up (in no figure)"), "a legend entry");
        assert!(h.contains("class=\"shade\""));
    }
}
