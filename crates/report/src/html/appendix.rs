//! The brief's appendix, after every figure: one `<details>`, collapsed on screen and opened
//! for printing (the print styles show its content; a `beforeprint` handler opens it too), so
//! that the body reads short and the printout ends with the detail. It holds, in order: per
//! workload the full tables (results per run, target and kind; repetitions combined;
//! efficiency), each run's timeline full size (on screen only: the printout has them as the
//! small multiples in the body), what each step ran, and the full disclosure.

use std::fmt::Write;

use crate::html::{charts, disclosure, summary, tables};
use crate::model::Group;
use crate::svg::esc;
use crate::table::{points_table, results_table};
use storlab_results::stored::StoredRun;

/// The heading the appendix opens with (its `<summary>`): the body ends before it.
pub const APPENDIX_TITLE: &str =
    "Appendix: tables per workload, each step's parameters, full disclosure";

/// The whole appendix. `names`: every target name in report order.
pub fn appendix(h: &mut String, groups: &[Group], runs: &[StoredRun], names: &[String]) {
    let _ = writeln!(
        h,
        "<details class=\"appendix\" id=\"appendix\"><summary><h2>{}</h2> <span class=\"noprint meta\">(click to open)</span></summary>",
        esc(APPENDIX_TITLE)
    );
    detail_tables(h, groups, runs);
    full_timelines(h, runs, names);
    summary::steps_appendix(h, groups, runs);
    disclosure::disclosure(h, runs);
    h.push_str("</details>\n");
}

/// Per workload: the results per run, target and kind, YCSB's own lines, the repetitions
/// combined, the efficiency tables.
fn detail_tables(h: &mut String, groups: &[Group], runs: &[StoredRun]) {
    h.push_str("<section id=\"results-tables\"><h2>Appendix: results per workload</h2>\n");
    h.push_str("<p class=\"meta\">ops/s: successful operations per second of measured time; MB/s: 10<sup>6</sup> bytes per second; latency: service time (submission to completion), HDR histograms, 3 significant digits.</p>\n");
    for (gi, g) in groups.iter().enumerate() {
        let in_group: Vec<&StoredRun> = g.runs.iter().map(|i| &runs[*i]).collect();
        let _ = writeln!(
            h,
            "<section class=\"detail\" id=\"detail-{gi}\"><h3>{}</h3>",
            esc(&g.step)
        );
        h.push_str(&tables::table_html(
            &results_table(in_group.iter().map(|r| &r.summary), false),
            "results",
        ));
        for r in &in_group {
            for l in crate::table::ycsb_lines(&r.summary) {
                let _ = write!(
                    h,
                    "<p class=\"ycsb\">run {}: {}</p>",
                    r.summary.run_index,
                    esc(&l)
                );
            }
        }
        if let Some(t) = points_table(g) {
            h.push_str("<h4>Repetitions combined</h4><p class=\"meta\">Each point: its repetitions' histograms added (ops/s: all operations over all measured time); min and max: the repetitions' own figures, never averaged into the point's.</p>");
            h.push_str(&tables::table_html(&t, "points"));
        }
        tables::efficiency_table(h, g, runs);
        h.push_str("</section>\n");
    }
    h.push_str("</section>\n");
}

/// Each run's timeline full size, on screen only (`noprint`): printed, the small multiples in
/// the body show them.
fn full_timelines(h: &mut String, runs: &[StoredRun], names: &[String]) {
    let _ = writeln!(
        h,
        "<section id=\"timelines\" class=\"noprint\"><h2>Appendix: each run's timeline full size</h2><p>Operations per second, interval by interval, per target (all operation kinds), each interval's operations over its real length (the last, partial one too); dashed: moving average over {} intervals, from the start of measurement; shaded: warm-up, its intervals dotted when the run recorded them (they enter no figure); vertical marks: events. On screen only: printed, they are the small multiples beside each workload's charts.</p>",
        charts::MOVING_AVERAGE_INTERVALS
    );
    for r in runs {
        charts::timeline_chart(h, r, names);
    }
    h.push_str("</section>\n");
}
