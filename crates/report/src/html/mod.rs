//! The self-contained HTML brief, its page shell: a summary on top (what was tested, a
//! sentence per target, and the headline table in the shape of the study: [`summary`]; the
//! RAID table, call-outs, warnings wherever storlab was saturated, a run was partial or a
//! latency could not come from merged histograms), then per workload a table and charts
//! ([`tables`], [`charts`]), the latency percentiles of each kind of workload overlaid, the
//! per-interval timelines, and the appendix (each step's parameters, the disclosure:
//! [`disclosure`]). Styles and charts are inline: no network access is needed to view or print
//! it; print styles keep charts and tables whole on A4 or Letter. A small inline script checks
//! on load that every chart drew something and marks the page (`data-charts`) for the browser
//! test.

pub mod appendix;
pub mod charts;
pub mod disclosure;
pub mod multiples;
pub mod samples;
pub mod schedule;
pub mod summary;
pub mod tables;

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::headline::Headline;
use crate::model::{self, Group};
use crate::svg::esc;
use storlab_model::baseline::Baseline;
use storlab_results::comparison::RunFigures;
use storlab_results::redact;
use storlab_results::stored::StoredRun;
use storlab_results::summary::RunSummary;

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
svg.chart{max-width:100%;height:auto;display:block;margin:12px 0;break-inside:avoid;page-break-inside:avoid}
table.headline td:first-child{white-space:nowrap}h4{margin:14px 0 4px}
pre{background:#f6f6f6;border:1px solid #ddd;padding:8px;font-size:12px;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px;font-size:13px}dt{font-weight:bold}dd{margin:0;overflow-wrap:anywhere}
.figs{display:grid;grid-template-columns:1fr 1fr;gap:0 18px;align-items:start}.figs>.wide{grid-column:1/-1}
.workloads{display:grid;grid-template-columns:1fr 1fr;gap:0 18px}.workloads>section{grid-column:1/-1}.workloads>section[data-half]{grid-column:auto}
section[data-half] .figs{grid-template-columns:1fr}.fig p.meta{font-size:12px}
.fig svg.chart{margin:6px 0}.fig p.meta{margin:0 0 6px}section.workload h2{margin-top:22px}.warned{margin:4px 0;font-size:13px}
details.appendix>summary{cursor:pointer}details.appendix>summary>h2{display:inline-block;margin:28px 0 6px}
@page{size:A4;margin:12mm}
@media print{body{max-width:none;margin:0;padding:0;font-size:11px}h2{break-after:avoid;page-break-after:avoid}h3,h4{break-after:avoid}
h2{font-size:16px;margin-top:16px}section.workload h2{margin-top:12px}p{margin:4px 0}
section{page-break-inside:auto}.noprint{display:none}
table,tr,svg.chart,.warning,.fig{break-inside:avoid;page-break-inside:avoid}
table{font-size:9px;max-width:100%}th,td{padding:2px 4px}td{overflow-wrap:anywhere}th{word-break:keep-all;overflow-wrap:normal}td.n{white-space:normal}
svg.chart{width:100%;max-width:100%;height:auto}.fig svg.chart{margin:2px 0}
details.appendix{break-before:page}details.appendix table{break-inside:auto}details.appendix>summary>h2{margin-top:0}
details.appendix>summary{list-style:none}details.appendix>summary::-webkit-details-marker{display:none}
details.appendix::details-content{content-visibility:visible;display:contents}
details.appendix dl,details.appendix pre{font-size:8.5px}details.appendix table{font-size:8px}
details>*{display:block}details{display:block}}
"#;

/// Checks every chart drew at least one non-empty mark (a bar or point with an area, a line
/// with a length); marks the page with `data-charts` and reports empty charts on the console.
pub const SCRIPT: &str = r#"
(function(){
  // The appendix is collapsed on screen: opened for printing, closed after; opened while its
  // charts are checked (a closed one draws nothing).
  var appendix=document.querySelectorAll('details.appendix');
  function setOpen(open){appendix.forEach(function(d){if(open){if(!d.open){d.open=true;d.dataset.printOpened='1';}}else if(d.dataset.printOpened){d.open=false;delete d.dataset.printOpened;}});}
  window.addEventListener('beforeprint',function(){setOpen(true);});
  window.addEventListener('afterprint',function(){setOpen(false);});
  setOpen(true);
  var charts=document.querySelectorAll('svg.chart');var empty=[];
  charts.forEach(function(c){
    var marks=c.querySelectorAll('rect.bar,circle.pt,path.series');var ok=false;
    marks.forEach(function(m){var b=m.getBBox();
      var drawn=m.tagName==='path'?(b.width>0||b.height>0):(b.width>0&&b.height>0);
      if(drawn){ok=true;}});
    if(!ok){empty.push(c.id);}
  });
  setOpen(false);
  document.body.setAttribute('data-charts',empty.length?('EMPTY:'+empty.join(',')):('OK:'+charts.length));
  if(empty.length){console.error('storlab report: empty charts: '+empty.join(', '));}
})();
"#;

pub fn params_text(p: &BTreeMap<String, String>) -> String {
    if p.is_empty() {
        return "-".into();
    }
    p.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A short description of a workload from the stored plan.
pub fn workload_text(w: &serde_json::Value) -> String {
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

/// A warning's kind: for `run N (step): KIND: text`, `KIND`; else the whole text.
fn warning_kind(w: &str) -> String {
    let rest = w
        .strip_prefix("run ")
        .and_then(|r| r.split_once("): ").map(|(_, rest)| rest))
        .unwrap_or(w);
    match rest.split_once(": ") {
        Some((kind, _)) if kind.len() <= 40 => kind.to_string(),
        _ => rest.to_string(),
    }
}

/// The parameters that say what a workload is, in this order, when it has them: its type,
/// db_bench benchmark or YCSB phase, access pattern, block size, read share, queue depth.
pub(crate) fn defining_text(w: &serde_json::Value) -> String {
    const DEFINING: [&str; 8] = [
        "type",
        "benchmark",
        "phase",
        "access",
        "block-size",
        "read-share",
        "queue-depth",
        "value-size",
    ];
    DEFINING
        .iter()
        .filter_map(|k| {
            let v = w.get(*k)?;
            let v = match v {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Null => return None,
                v => v.to_string(),
            };
            Some(format!("{k} {v}"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn config_text(c: &serde_json::Value) -> String {
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
    report_html_compared(runs, None, None)
}

/// The whole report, its headline beside an earlier result's figures when `previous` is given
/// (see [`crate::headline::Headline::with_previous`]).
/// `baseline`: published figures to put beside (by default, those the study named).
pub fn report_html_compared(
    runs: &[StoredRun],
    previous: Option<&Headline>,
    baseline: Option<&Baseline>,
) -> String {
    let summaries: Vec<_> = runs.iter().map(|r| r.summary.clone()).collect();
    let figures: Vec<RunFigures> = runs.iter().map(RunFigures::of_stored).collect();
    let groups = model::group_runs(&figures);
    let mut h = String::new();
    page_head(&mut h, runs, &summaries);
    summary_section(&mut h, runs, &summaries, &groups, (previous, baseline));

    // A rate schedule's figures (the cluster brief): right after the summary.
    schedule::schedule_section(&mut h, runs);

    let mut names: Vec<String> = Vec::new();
    for t in runs.iter().flat_map(|r| &r.summary.targets) {
        if !names.contains(&t.name) {
            names.push(t.name.clone());
        }
    }
    // Per workload its charts and its runs' timelines, then the latency percentiles of the
    // workloads of each kind together.
    if !groups.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"meta\" id=\"figures-note\">Per workload: ops/s by the swept value or target and p99 latency against ops/s (when there is more than one point), and each run's operations per second interval by interval, per target, as small plots on the same axes (each interval's operations over its real length; dashed: moving average over {} intervals from the start of measurement; the warm-up shaded, its intervals dotted, in no figure; vertical lines: events). Every table is in the appendix.</p>",
            charts::MOVING_AVERAGE_INTERVALS
        );
    }
    h.push_str("<div class=\"workloads\">\n");
    for (gi, g) in groups.iter().enumerate() {
        workload_section(&mut h, gi, g, runs, &names);
    }
    h.push_str("</div>\n");
    charts::percentile_section(&mut h, &groups, runs, &names);
    steady_section(&mut h, &summaries);
    latency_search_section(&mut h, &summaries);
    training_section(&mut h, &summaries);
    checkpoint_section(&mut h, &summaries);
    events_section(&mut h, &summaries);
    crate::verify::html_section(&mut h, &summaries.iter().collect::<Vec<_>>());

    // Appendix, collapsed on screen and printed last: the tables, what each step ran, the
    // disclosure.
    appendix::appendix(&mut h, &groups, runs, &names);

    let _ = write!(h, "<script>{SCRIPT}</script>\n</body></html>\n");
    redact(&h)
}

/// The page's head and title: the studies, how many runs, from when to when.
fn page_head(h: &mut String, runs: &[StoredRun], summaries: &[RunSummary]) {
    let mut studies: Vec<&str> = Vec::new();
    for s in summaries {
        if !studies.contains(&s.study.as_str()) {
            studies.push(&s.study);
        }
    }
    let title = format!("storlab brief: {}", studies.join(", "));
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>{STYLE}</style></head><body>\n",
        esc(&title)
    );
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
}

/// The summary: the study's description, the headline, RAID tables, call-outs and warnings.
fn summary_section(
    h: &mut String,
    runs: &[StoredRun],
    summaries: &[RunSummary],
    groups: &[Group],
    (previous, baseline): (Option<&Headline>, Option<&Baseline>),
) {
    h.push_str("<section id=\"summary\"><h2>Summary</h2>\n");
    if let Some(d) = runs
        .first()
        .and_then(|r| r.study_text.as_deref())
        .and_then(study_description)
    {
        let _ = write!(h, "<p>{}</p>", esc(&d));
    }
    let hl = summary::top(h, runs, previous);
    raid_tables(h, runs);
    // The study's own tables first, the brief's published figures after them.
    summary::published(h, runs, &hl, baseline);
    let all_callouts: Vec<(&str, &str)> = groups
        .iter()
        .flat_map(|g| {
            model::callouts(g)
                .iter()
                .map(|c| (g.step.as_str(), c.text.as_str()))
        })
        .collect();
    if !all_callouts.is_empty() {
        h.push_str("<h3>Call-outs</h3><ul class=\"callouts\">\n");
        for (step, text) in &all_callouts {
            let _ = writeln!(h, "<li>{}: {}</li>", esc(step), esc(text));
        }
        h.push_str("</ul>\n");
    }
    let warnings: Vec<String> = model::warnings(summaries)
        .into_iter()
        .chain(model::latency_fallbacks(groups))
        .collect();
    if !warnings.is_empty() {
        warnings_box(h, &warnings);
    }
    h.push_str("</section>\n");
}

/// The RAID efficiency tables of the runs' arrays, each with its failure phases.
fn raid_tables(h: &mut String, runs: &[StoredRun]) {
    for t in storlab_results::raid::tables(runs) {
        h.push_str("<h3>RAID efficiency</h3>\n");
        match t {
            Ok(t) => {
                h.push_str(&tables::table_html(&crate::raid::table(&t), "raid"));
                for line in crate::raid::caption(&t).lines() {
                    let _ = write!(h, "<p class=\"note\">{}</p>", esc(line));
                }
                for f in crate::raid::failure_sections(&t) {
                    let _ = write!(h, "<h3>{}</h3>", esc(&f.title));
                    h.push_str(&tables::table_html(&f.phases, "raid-failure"));
                    for line in f.caption.lines() {
                        let _ = write!(h, "<p class=\"note\">{}</p>", esc(line));
                    }
                }
            }
            Err(e) => {
                let _ = write!(h, "<p class=\"warning\">{}</p>", esc(&e.to_string()));
            }
        }
    }
}

/// The warnings box. Warnings of one kind (`run N (step): KIND: ...`): the first few shown,
/// the others one click away, so that a study of many runs does not open on a wall of them.
fn warnings_box(h: &mut String, warnings: &[String]) {
    h.push_str("<div class=\"warning\" id=\"warnings\"><b>Warnings: read these before the figures.</b><ul>\n");
    const SHOWN_PER_KIND: usize = 3;
    let mut kinds: Vec<(String, Vec<&String>)> = Vec::new();
    let mut seen: Vec<&String> = Vec::new();
    for w in warnings {
        // A warning is said once.
        if seen.contains(&w) {
            continue;
        }
        seen.push(w);
        let kind = warning_kind(w);
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, list)) => list.push(w),
            None => kinds.push((kind, vec![w])),
        }
    }
    for (kind, list) in &kinds {
        for w in list.iter().take(SHOWN_PER_KIND) {
            let _ = writeln!(h, "<li>{}</li>", esc(w));
        }
        if list.len() > SHOWN_PER_KIND {
            let _ = writeln!(
                h,
                "<li><details><summary>{} more {}</summary><ul>",
                list.len() - SHOWN_PER_KIND,
                esc(kind)
            );
            for w in &list[SHOWN_PER_KIND..] {
                let _ = writeln!(h, "<li>{}</li>", esc(w));
            }
            h.push_str("</ul></details></li>\n");
        }
    }
    h.push_str("</ul></div>\n");
}

/// The steady-state table and each run's sentence, when a run judged steady state.
fn steady_section(h: &mut String, summaries: &[RunSummary]) {
    let Some(t) = crate::steady::steady_table(summaries) else {
        return;
    };
    let _ = write!(
        h,
        "<section id=\"steady-state\"><h2>Steady state</h2>{}<p class=\"meta\">{}</p>",
        tables::table_html(&t, "steady-state"),
        esc(crate::steady::STEADY_NOTE)
    );
    for s in summaries {
        if let Some(ss) = &s.steady_state {
            let _ = write!(
                h,
                "<p class=\"steady\">run {} ({}): {}</p>",
                s.run_index,
                esc(&s.step),
                esc(&ss.sentence())
            );
        }
    }
    h.push_str("</section>\n");
}

/// The latency-target search's windows and answers, when a run searched.
fn latency_search_section(h: &mut String, summaries: &[RunSummary]) {
    let Some(t) = crate::latency_search::search_table(summaries) else {
        return;
    };
    let _ = write!(
        h,
        "<section id=\"latency-search\"><h2>Latency-target search</h2>{}<p class=\"meta\">{}</p>",
        tables::table_html(&t, "latency-search"),
        esc(crate::latency_search::SEARCH_NOTE)
    );
    for s in summaries {
        for r in &s.latency_search {
            let _ = write!(
                h,
                "<p class=\"steady\">run {}: {}</p>",
                s.run_index,
                esc(&crate::latency_search::sentence(r))
            );
        }
    }
    h.push_str("</section>\n");
}

/// A training workload's table, AU against accelerators, the search's answers and the note.
fn training_section(h: &mut String, summaries: &[RunSummary]) {
    let Some(t) = crate::training::training_table(summaries) else {
        return;
    };
    let _ = write!(
        h,
        "<section id=\"training\"><h2>Training</h2>{}",
        tables::table_html(&t, "training")
    );
    if let Some(chart) = crate::training::au_chart(summaries) {
        let _ = write!(h, "<div class=\"fig\">{chart}</div>");
    }
    let memory = crate::training::memory_rule_lines(summaries);
    for l in crate::training::search_lines(summaries)
        .iter()
        .chain(&memory)
    {
        let _ = write!(h, "<p class=\"steady\">{}</p>", esc(l));
    }
    let _ = writeln!(
        h,
        "<p class=\"meta\">{}</p></section>",
        esc(crate::training::TRAINING_NOTE)
    );
}

/// A checkpoint workload's table and what its figures are.
fn checkpoint_section(h: &mut String, summaries: &[RunSummary]) {
    let Some(t) = crate::checkpoint::checkpoint_table(summaries) else {
        return;
    };
    let _ = writeln!(
        h,
        "<section id=\"checkpoint\"><h2>Checkpointing</h2>{}<p class=\"meta\">{}</p></section>",
        tables::table_html(&t, "checkpoint"),
        esc(crate::checkpoint::CHECKPOINT_NOTE)
    );
}

/// Study events and the recovery around them, and a schedule's phases.
fn events_section(h: &mut String, summaries: &[RunSummary]) {
    let events = crate::events::events_table(summaries);
    let recovery = crate::events::recovery_table(summaries);
    if events.is_none() && recovery.is_none() {
        return;
    }
    h.push_str("<section id=\"events\"><h2>Events and recovery</h2>\n");
    if let Some(t) = &events {
        h.push_str("<p class=\"meta\">The study's events: times in seconds from the start of measurement; each is marked on its run's timeline.</p>");
        h.push_str(&tables::table_html(t, "events"));
    }
    if let Some(t) = crate::samples::samples_table(summaries) {
        h.push_str(&tables::table_html(&t, "samples"));
        let _ = write!(
            h,
            "<p class=\"meta\">{} Drawn under each run's timeline in the appendix.</p>",
            esc(crate::samples::SAMPLES_NOTE)
        );
    }
    if let Some(t) = &recovery {
        h.push_str(&tables::table_html(t, "recovery"));
        let _ = write!(
            h,
            "<p class=\"meta\">{} Shaded on the timeline: from the event until recovered.</p>",
            esc(crate::events::RECOVERY_NOTE)
        );
        for s in summaries {
            for r in s.recovery.iter().filter(|r| !r.note.is_empty()) {
                let _ = write!(
                    h,
                    "<p class=\"warning\">run {}, {}: {}</p>",
                    s.run_index,
                    esc(&r.event),
                    esc(&r.note)
                );
            }
        }
    }
    if let Some(t) = crate::events::phases_table(summaries) {
        h.push_str(&tables::table_html(&t, "phases"));
        let _ = write!(
            h,
            "<p class=\"meta\">{}</p>",
            esc(crate::events::PHASES_NOTE)
        );
    }
    h.push_str("</section>\n");
}

/// The `description = "..."` line of a study file.
fn study_description(text: &str) -> Option<String> {
    let v: toml::Value = toml::from_str(text).ok()?;
    v.get("description")?.as_str().map(str::to_string)
}

/// A workload's body: its charts side by side and its runs' timelines as small multiples;
/// when a run of it has a warning, a pointer to the summary's warnings (said once, there).
/// Its tables are in the appendix.
fn workload_section(h: &mut String, gi: usize, g: &Group, runs: &[StoredRun], names: &[String]) {
    // A workload of one run and no chart (its one small plot) takes half the page's width,
    // beside the next one like it.
    let half = g.points.len() < 2 && g.runs.len() == 1;
    let _ = writeln!(
        h,
        "<section class=\"workload\"{} id=\"workload-{gi}\"><h2>Workload: {}</h2>",
        if half { " data-half" } else { "" },
        esc(&g.step)
    );
    let with_warning: Vec<String> = g
        .runs
        .iter()
        .map(|&i| &runs[i].summary)
        .filter(|s| !model::warnings(std::slice::from_ref(*s)).is_empty())
        .map(|s| s.run_index.to_string())
        .collect();
    if !with_warning.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"warned\"><a href=\"#warnings\">See the warnings</a> for run{} {}.</p>",
            if with_warning.len() == 1 { "" } else { "s" },
            with_warning.join(", ")
        );
    }
    h.push_str("<div class=\"figs\">");
    charts::workload_charts(h, gi, g, names);
    multiples::timeline_multiples(h, gi, g, runs, names);
    let _ = writeln!(
        h,
        "</div><p class=\"meta noprint\"><a href=\"#detail-{gi}\">Tables of {}</a> in the appendix.</p></section>",
        esc(&g.step)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_group_by_their_kind() {
        assert_eq!(
            warning_kind(
                "run 4 (readrandom): CPU-bound: the busiest worker thread was on the CPU 26%"
            ),
            "CPU-bound"
        );
        assert_eq!(
            warning_kind("run 12 (x): CPU-bound: 3%"),
            warning_kind("run 4 (y): CPU-bound: 90%")
        );
        assert_eq!(warning_kind("no run prefix"), "no run prefix");
    }

    /// The warning of run 2 is said once, in the summary's box; its workload points there.
    /// The tables and the full-size timelines are in the appendix, after the small multiples.
    #[test]
    fn a_warning_is_said_once_and_the_tables_are_in_the_appendix() {
        let mut runs = multiples::tests::two_runs();
        runs[1]
            .summary
            .warnings
            .push("CPU-bound: a test warning".into());
        let h = report_html(&runs);
        assert_eq!(h.matches("CPU-bound: a test warning").count(), 1, "{h}");
        assert!(h.contains("See the warnings</a> for run 2."));
        let appendix = h.find("<details class=\"appendix\"").expect("an appendix");
        let at = |s: &str| h.find(s).unwrap_or_else(|| panic!("{s} missing"));
        assert!(at("id=\"warnings\"") < at("id=\"timelines-0\""));
        assert!(at("id=\"timelines-0\"") < appendix);
        for in_appendix in [
            "<table class=\"results\"",
            "<table class=\"efficiency\"",
            "id=\"timeline-1\"",
            "Appendix: what each step ran",
            "Appendix: full disclosure",
        ] {
            assert!(
                at(in_appendix) > appendix,
                "{in_appendix} before the appendix"
            );
        }
        // Printed last: nothing but the script after it.
        let end = h.rfind("</details>").expect("the appendix's end");
        assert!(end > at("Appendix: full disclosure"));
        assert!(!h[end..].contains("<section") && !h[end..].contains("<svg"));
    }

    #[test]
    fn identical_warnings_are_listed_once() {
        let w = "run 1 (x): CPU-bound: 96%".to_string();
        let mut h = String::new();
        warnings_box(&mut h, &[w.clone(), w.clone(), "run 2 (x): other".into()]);
        assert_eq!(h.matches(&w).count(), 1, "{h}");
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
