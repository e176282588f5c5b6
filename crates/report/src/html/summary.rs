//! The top of the HTML report: what was tested, one sentence per target
//! ([`crate::tested`]), then the headline table in the shape of the study
//! ([`crate::headline`]), beside an earlier result's figures when compared; and the
//! appendix listing each step's workload with all its parameters.

use std::fmt::Write;

use crate::headline::{self, Headline};
use crate::html::tables::table_html;
use crate::html::{config_text, defining_text, workload_text};
use crate::model::Group;
use crate::svg::esc;
use storlab_results::stored::StoredRun;

/// What was tested and the headline table; returns the headline (the published figures,
/// [`published`], are set beside it after the study's own tables).
pub fn top(h: &mut String, runs: &[StoredRun], previous: Option<&Headline>) -> Headline {
    h.push_str("<h3>What was tested</h3><ul class=\"tested\">\n");
    for (name, s) in crate::tested::sentences(runs) {
        let _ = writeln!(h, "<li><b>{}</b>: {}</li>", esc(&name), esc(&s));
    }
    h.push_str("</ul>\n");
    let mut hl = headline::of_runs(runs);
    if let Some(p) = previous {
        let what = p.compared_with.clone().unwrap_or_default();
        hl = hl.with_previous(p, &what);
    }
    if !hl.is_empty() {
        headline_tables(h, &hl);
    }
    hl
}

/// The headline's tables and their note.
fn headline_tables(h: &mut String, hl: &Headline) {
    h.push_str("<h3 id=\"headline\">Headline</h3>\n");
    if let Some(w) = &hl.compared_with {
        let _ = writeln!(
            h,
            "<p class=\"meta\">Beside each figure: the same test on the same target in {} (<i>before</i>) and the change from it.</p>",
            esc(w)
        );
    }
    for (title, t) in hl.tables() {
        let _ = writeln!(h, "<h4>{}</h4>", esc(title));
        h.push_str(&table_html(&t, "headline"));
    }
    let file_server = hl.sections.iter().any(|s| s.title == headline::FILE_SERVER);
    h.push_str("<p class=\"meta\">IOPS, ops/s: operations per second of measured time (repetitions combined); MB/s: 10<sup>6</sup> bytes per second; ");
    if file_server {
        h.push_str("MiB/s: 2<sup>20</sup> bytes per second (IOmeter 2006's MBps); ");
    }
    h.push_str("p99 and mean: service latency. ");
    if file_server {
        h.push_str("A file server's figures are the total of its shares (IOPS and bytes per second added, the mean over all their operations). ");
    }
    if hl.sections.iter().any(|s| s.title == headline::TRAINING) {
        h.push_str("Training: per model, the most accelerators whose run met the AU rule (0: none did) and that run's mean AU, samples/s and MB/s (DLIO-compatible, not an MLPerf Storage result; see Training). ");
    }
    h.push_str("The full tables per workload are in the appendix.</p>\n");
}

/// The brief's published figures beside the measured ones, when the study names a baseline
/// or one is given (a study with no headline figure, a rate schedule's, may still name one).
pub fn published(
    h: &mut String,
    runs: &[StoredRun],
    hl: &Headline,
    given: Option<&storlab_model::baseline::Baseline>,
) {
    use crate::baseline;
    match baseline::chosen(runs, given) {
        Ok(None) => {}
        Ok(Some(b)) => {
            let s = baseline::beside(&b, runs, hl);
            let _ = writeln!(h, "<h3 id=\"published\">{}</h3>", esc(&s.heading));
            for n in &s.notes {
                let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(n));
            }
            h.push_str(&table_html(&s.table, "published"));
        }
        Err(e) => {
            let _ = writeln!(
                h,
                "<p class=\"warning\">Published figures not shown: {}</p>",
                esc(&e)
            );
        }
    }
}

/// The appendix's list of steps: the workload's defining parameters, the sweep and the
/// targets by name and type, every parameter one click away.
pub fn steps_appendix(h: &mut String, groups: &[Group], runs: &[StoredRun]) {
    // One line per step: the workload's defining parameters, the sweep and the targets by
    // name and type; every parameter one click away (and in the appendix).
    h.push_str("<section id=\"steps\"><h2>Appendix: what each step ran</h2><ul>\n");
    for g in groups {
        let run = &runs[g.runs[0]];
        let mut targets: Vec<(String, String, String)> = Vec::new();
        for &ri in &g.runs {
            for (i, t) in runs[ri].summary.targets.iter().enumerate() {
                if targets.iter().any(|(n, _, _)| n == &t.name) {
                    continue;
                }
                let cfg = runs[ri].target_config_json(i);
                let kind = cfg
                    .as_ref()
                    .and_then(|c| c.get("type").and_then(|v| v.as_str()).map(str::to_string))
                    .unwrap_or_else(|| t.target_type.clone());
                targets.push((
                    t.name.clone(),
                    kind,
                    cfg.map(config_text).unwrap_or_default(),
                ));
            }
        }
        let workload_json = run.workload_json(0);
        let workload = workload_json.map(workload_text).unwrap_or_default();
        let defining = workload_json.map(defining_text).unwrap_or_default();
        let sweep = match &g.x_param {
            Some(p) => format!("; swept {p}: {}", g.x_values.join(", ")),
            None => String::new(),
        };
        let short_targets: Vec<String> = targets
            .iter()
            .map(|(n, kind, _)| format!("<b>{}</b> ({})", esc(n), esc(kind)))
            .collect();
        let all_targets: Vec<String> = targets
            .iter()
            .map(|(n, _, cfg)| format!("<b>{}</b>: {}", esc(n), esc(cfg)))
            .collect();
        let _ = writeln!(
            h,
            "<li><b>{}</b> ({} run{}): workload <i>{}</i>{}{} on {}<details><summary>all parameters</summary>workload: {}<br>{}</details></li>",
            esc(&g.step),
            g.runs.len(),
            if g.runs.len() == 1 { "" } else { "s" },
            esc(&run
                .summary
                .targets
                .first()
                .map(|t| t.workload.clone())
                .unwrap_or_default()),
            if defining.is_empty() {
                String::new()
            } else {
                format!(" ({})", esc(&defining))
            },
            esc(&sweep),
            short_targets.join(", "),
            esc(&workload),
            all_targets.join("<br>")
        );
    }
    h.push_str("</ul></section>\n");
}
