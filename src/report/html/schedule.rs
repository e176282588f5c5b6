//! The HTML report's rate-schedule section, the cluster brief's figures: per scheduled run the
//! reported throughput and the moving averages' largest deviations, the total throughput over
//! the measurement with the moving averages, the events marked (a node lost) and the recovery
//! shaded, the tenant groups' throughput stacked (the elasticity), and the phase table. All
//! from the stored summary and timeline.

use std::fmt::Write;

use crate::report::html::charts::{event_marks, run_shades};
use crate::report::html::tables::table_html;
use crate::report::schedule::{
    MOVING_AVERAGE_NOTE, SCHEDULE_NOTE, moving_average_lines, moving_average_table, schedule_table,
};
use crate::report::svg::{self, Band, Series, XAxis, YAxis, esc};
use crate::results::schedule::{PerInterval, ScheduleResult, per_interval};
use crate::results::stored::StoredRun;
use crate::results::summary::RunSummary;

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
    // The study's events (a node lost), not the start and end of measurement: the x axis is
    // the measurement.
    let marks: Vec<_> = event_marks(s, false)
        .into_iter()
        .filter(|m| !m.label.starts_with("measure-") && !m.label.starts_with("warmup-"))
        .collect();
    let shades: Vec<_> = run_shades(s)
        .into_iter()
        .filter(|sh| sh.class == "recovery")
        .collect();
    h.push_str(&svg::line_chart(
        &format!("schedule-total-{}", s.run_index),
        &format!(
            "run {}: throughput over the measurement, all groups",
            s.run_index
        ),
        "seconds from the start of measurement",
        "operations per second",
        1.0,
        &total_series(sched, &per, interval_s, covered_s),
        XAxis::Linear,
        YAxis::Linear,
        &marks,
        &shades,
        Some(0.0),
    ));
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
    h.push_str(&svg::stacked_chart(
        &format!("schedule-groups-{}", s.run_index),
        &format!("run {}: each group's throughput, stacked", s.run_index),
        "seconds from the start of measurement",
        "operations per second",
        &xs,
        &bands,
        &marks,
        &shades,
    ));
    tables(h, s, sched);
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
            esc(&crate::report::events::recovery_summary(rec))
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
        warmup: Vec::new(),
        color: Some(0),
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
