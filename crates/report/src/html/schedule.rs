//! The HTML report's rate-schedule section, the cluster brief's figures: per scheduled run the
//! reported throughput and the moving averages' largest deviations, the total throughput over
//! the measurement with the moving averages, the events marked (a node lost) and the recovery
//! shaded, the tenant groups' throughput stacked (the elasticity), and the phase table. All
//! from the stored summary and timeline.

use std::fmt::Write;

use crate::html::charts::{event_marks, run_shades};
use crate::html::samples::UnitCharts;
use crate::html::tables::table_html;
use crate::schedule::{
    MOVING_AVERAGE_NOTE, SCHEDULE_NOTE, moving_average_lines, moving_average_table, schedule_table,
};
use crate::svg::{self, Band, Mark, Series, Shade, XAxis, YAxis, esc};
use storlab_results::schedule::{PerInterval, ScheduleResult, per_interval, warmup_points};
use storlab_results::stored::StoredRun;
use storlab_results::summary::RunSummary;

/// The section, when any run had a rate schedule.
pub fn schedule_section(h: &mut String, runs: &[StoredRun]) {
    let scheduled: Vec<&StoredRun> = runs
        .iter()
        .filter(|r| r.summary.schedule.is_some())
        .collect();
    if scheduled.is_empty() {
        return;
    }
    h.push_str("<section id=\"schedule\"><h2>Rate schedule and elasticity</h2>\n");
    for r in scheduled {
        run_figures(h, r);
    }
    h.push_str("</section>\n");
}

/// One scheduled run: its headline, the total and stacked charts, the tables.
fn run_figures(h: &mut String, r: &StoredRun) {
    let s = &r.summary;
    let Some(sched) = &s.schedule else { return };
    headline(h, s);
    let interval_s = r.interval_seconds();
    // Older results lack the schedule's own length: the run's.
    let covered_s = if sched.measured_seconds > 0.0 {
        sched.measured_seconds
    } else {
        s.measured_seconds
    };
    let per = per_interval(&sched.groups, covered_s, &r.timeline, interval_s);
    let (marks, shades) = marks_and_shades(s);
    // What the run's sample events read (each node's use, the brief's per-node view), under
    // the total chart on its time axis.
    let samples = UnitCharts::of(r);
    let axis = samples.shared_axis((-s.warmup_seconds.max(0.0), covered_s));
    total_chart(h, r, sched, &per, (covered_s, axis.map(|a| a.1)));
    if let Some(axis) = axis {
        samples.draw(h, r, (&marks, &shades), (axis, "schedule-samples"));
    }
    // Each group's throughput, stacked.
    let xs: Vec<f64> = (0..per.end_s.len())
        .filter(|i| per.length_s[*i] > 0.0)
        .map(|i| per.end_s[i])
        .collect();
    let bands: Vec<Band> = sched
        .groups
        .iter()
        .enumerate()
        .map(|(g, group)| Band {
            name: group.name.clone(),
            values: per.rate_points(Some(g)).into_iter().map(|p| p.1).collect(),
        })
        .collect();
    h.push_str(
        &svg::StackedChart {
            labels: svg::Labels {
                id: &format!("schedule-groups-{}", s.run_index),
                title: &format!("run {}: each group's throughput, stacked", s.run_index),
                x: "seconds from the start of measurement",
                y: "operations per second",
            },
            xs: &xs,
            bands: &bands,
            marks: &marks,
            shades: &shades,
        }
        .svg(),
    );
    tables(h, s, sched);
}

/// The total throughput chart, as the brief's Figure 4 draws it: the ramp-up (the warm-up,
/// shaded, its throughput dotted), then the measurement interval from the mark at 0, with
/// the moving averages, the reported throughput, the events and the recoveries; its axis up
/// to `x_max` when the sample charts under it reach further.
fn total_chart(
    h: &mut String,
    r: &StoredRun,
    sched: &ScheduleResult,
    per: &PerInterval,
    (covered_s, x_max): (f64, Option<f64>),
) {
    let s = &r.summary;
    let interval_s = r.interval_seconds();
    let ramp_up = warmup_points(&sched.groups, &r.timeline, interval_s);
    let (mut total_marks, mut total_shades) = marks_and_shades(s);
    let from = if s.warmup_seconds > 0.0 {
        total_shades.insert(
            0,
            Shade {
                from: -s.warmup_seconds,
                to: 0.0,
                label: format!("ramp-up ({} s, in no figure)", s.warmup_seconds),
                class: "shade",
                fill: "#eeeeee",
            },
        );
        total_marks.insert(
            0,
            Mark {
                x: 0.0,
                label: format!("measurement interval ({covered_s} s)"),
            },
        );
        -s.warmup_seconds
    } else {
        0.0
    };
    h.push_str(&svg::LineChart { labels: svg::Labels { id: &format!("schedule-total-{}", s.run_index), title: &format!(
            "run {}: throughput during the ramp-up and the measurement interval, all groups",
            s.run_index
        ), x: "seconds from the start of measurement", y: "operations per second" }, width: svg::FULL_WIDTH, y_div: 1.0, series: &total_series(sched, per, interval_s, covered_s, ramp_up), x_axis: XAxis::Linear, y_axis: YAxis::Linear, marks: &total_marks, shades: &total_shades, x_min: Some(from), x_max }.svg());
}

/// The study's events (a node lost), not the start and end of measurement (the x axis is
/// the measurement), and the recoveries shaded.
fn marks_and_shades(s: &RunSummary) -> (Vec<Mark>, Vec<Shade>) {
    let marks = event_marks(s, false)
        .into_iter()
        .filter(|m| !m.label.starts_with("measure-") && !m.label.starts_with("warmup-"))
        .collect();
    let shades = run_shades(s)
        .into_iter()
        .filter(|sh| sh.class == "recovery")
        .collect();
    (marks, shades)
}

/// The run's heading and headline: the moving averages' deviations, each recovery, each
/// wait-for's outcome.
fn headline(h: &mut String, s: &RunSummary) {
    let _ = writeln!(
        h,
        "<h3>run {}: {}</h3><ul class=\"headline\">",
        s.run_index,
        esc(&s.step)
    );
    for l in moving_average_lines(s) {
        let _ = writeln!(h, "<li>{}</li>", esc(&l));
    }
    for rec in &s.recovery {
        let _ = writeln!(
            h,
            "<li>{}: {}</li>",
            esc(&rec.event),
            esc(&crate::events::recovery_summary(rec))
        );
    }
    for e in &s.events {
        if let Some(o) = &e.outcome
            && e.kind == "wait-for"
        {
            let _ = writeln!(
                h,
                "<li>{} (wait-for): {} after {:.3} s</li>",
                esc(&o.name),
                esc(o.status.name()),
                o.duration_seconds
            );
        }
    }
    h.push_str("</ul>\n");
}

/// The total with its moving averages and the reported throughput.
fn total_series(
    sched: &ScheduleResult,
    per: &PerInterval,
    interval_s: f64,
    covered_s: f64,
    ramp_up: Vec<(f64, f64)>,
) -> Vec<Series> {
    let total: Vec<(f64, f64, String)> = per
        .rate_points(None)
        .into_iter()
        .map(|(x, y)| (x, y, String::new()))
        .collect();
    let mut series = vec![Series {
        name: "all groups, per interval".into(),
        points: total,
        markers: false,
        dashed: Vec::new(),
        warmup: ramp_up,
        color: Some(0),
        bands: Vec::new(),
    }];
    for (i, m) in sched.moving_averages.iter().enumerate() {
        let k = (m.window_seconds / interval_s).round().max(1.0) as usize;
        let points = per.moving_average(k, interval_s);
        if points.is_empty() {
            continue;
        }
        series.push(Series {
            name: format!(
                "moving average, {} phase{} ({} s)",
                m.window_phases,
                if m.window_phases == 1 { "" } else { "s" },
                m.window_seconds
            ),
            points: points
                .into_iter()
                .map(|(x, y)| (x, y, String::new()))
                .collect(),
            markers: false,
            dashed: Vec::new(),
            warmup: Vec::new(),
            color: Some(1 + i),
            bands: Vec::new(),
        });
    }
    series.push(Series {
        name: format!("reported {:.1} ops/s", sched.reported_rate_ops),
        points: vec![
            (0.0, sched.reported_rate_ops, String::new()),
            (covered_s, sched.reported_rate_ops, String::new()),
        ],
        markers: false,
        dashed: Vec::new(),
        warmup: Vec::new(),
        color: Some(7),
        bands: Vec::new(),
    });
    series
}

/// The charts' note, the moving averages' table and the phase table.
fn tables(h: &mut String, s: &RunSummary, sched: &ScheduleResult) {
    let _ = write!(
        h,
        "<p class=\"meta\">Per timeline interval, each interval's operations over its length. Vertical marks: the study's events; shaded (outlined on the stacked chart): from a fault until throughput was back. Phases of {} s.</p>",
        sched.phase_seconds
    );
    if let Some(t) = moving_average_table([s]) {
        h.push_str(&table_html(&t, "moving-averages"));
        let _ = write!(h, "<p class=\"meta\">{}</p>", esc(MOVING_AVERAGE_NOTE));
    }
    if let Some(t) = schedule_table([s]) {
        h.push_str("<details><summary>phase by phase, group by group</summary>");
        h.push_str(&table_html(&t, "schedule"));
        let _ = write!(h, "<p class=\"meta\">{}</p></details>", esc(SCHEDULE_NOTE));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_results::schedule::ScheduleGroup;
    use storlab_results::{fixtures::new_style, timeline::parse_timeline};

    /// Two warm-up seconds (400 and 900 ops/s) then 2.25 s measured at 1000 ops/s: the total
    /// chart draws the ramp-up before the measurement interval, as the brief's Figure 4 does:
    /// shaded, its throughput dotted, and a mark where measurement starts.
    #[test]
    fn the_total_chart_draws_the_ramp_up_then_the_measurement_interval() {
        let mut s = storlab_results::fixtures::summary(1, "w", &[], &[("a", 1000.0, 5)]);
        s.warmup_seconds = 2.0;
        s.measured_seconds = 2.25;
        s.schedule = Some(ScheduleResult {
            total_rate_ops: None,
            total_workers: Some(1),
            phase_seconds: 1.0,
            measured_seconds: 2.25,
            phases: Vec::new(),
            groups: vec![ScheduleGroup {
                name: "g".into(),
                targets: vec!["a".into()],
            }],
            shape: None,
            reported_rate_ops: 1000.0,
            moving_averages: Vec::new(),
        });
        let mut run = StoredRun::of_summary(s);
        run.timeline = parse_timeline(&new_style());
        let mut h = String::new();
        schedule_section(&mut h, &[run]);
        let total = h
            .split("id=\"schedule-total-1\"")
            .nth(1)
            .expect("the total chart")
            .split("</svg>")
            .next()
            .unwrap();
        for (x, y) in [("-1", "400"), ("0", "900")] {
            assert!(
                total.contains(&format!(
                    "class=\"warmup-pt\" data-x=\"{x}\" data-y=\"{y}\""
                )),
                "ramp-up point {x},{y}: {total}"
            );
        }
        assert!(total.contains("ramp-up (2 s, in no figure)"), "{total}");
        assert!(total.contains("class=\"shade\""), "{total}");
        assert!(total.contains("measurement interval (2.25 s)"), "{total}");
        assert!(
            total.contains("data-xmin=\"-2\""),
            "the axis from the ramp-up: {total}"
        );
    }
}
